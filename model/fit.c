/* NUMA/NVLink fit model (see model/fit.h). Domains are few (<= 64), so every
 * question is a scan of the domains; counting replays greedy placements and
 * undoes them, at most TG_FIT_MAX_SIM of them. */
#include "model/fit.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"

#define TG_FIT_MAX_SIM 4096

int tg_fit_node_new(const struct tg_topology *t, struct tg_fit_node **out)
{
    size_t sz = sizeof(struct tg_fit_node) + t->ndomains * sizeof(struct tg_fit_dom) +
                t->nnuma * sizeof(struct tg_fit_numa);
    struct tg_fit_node *n = calloc(1, sz);
    *out = NULL;
    if (!n)
        return TG_ENOMEM;
    n->policy = t->policy;
    n->ndom = t->ndomains;
    n->nnuma = t->nnuma;
    n->dom = (struct tg_fit_dom *)(n + 1);
    n->numa = (struct tg_fit_numa *)(n->dom + n->ndom);
    for (uint32_t i = 0; i < t->nnuma; i++) {
        n->numa[i].cpu_milli = (int64_t)t->numa[i].cpus * 1000;
        n->numa[i].mem = t->numa[i].mem > INT64_MAX ? INT64_MAX : (int64_t)t->numa[i].mem;
    }
    for (uint32_t i = 0; i < t->ndomains; i++) {
        n->dom[i].id = t->domains[i].id;
        n->dom[i].gpus = t->domains[i].gpus;
        n->dom[i].rdma_gpus = t->domains[i].rdma_gpus;
        n->dom[i].numa = tg_topo_numa_index(t, t->domains[i].numa);
    }
    *out = n;
    return 0;
}

void tg_fit_node_free(struct tg_fit_node **n)
{
    free(*n);
    *n = NULL;
}

void tg_fit_reset(struct tg_fit_node *n)
{
    n->spread = 0;
    for (uint32_t i = 0; i < n->ndom; i++)
        n->dom[i].used = 0;
    for (uint32_t i = 0; i < n->nnuma; i++)
        n->numa[i].cpu_used = n->numa[i].mem_used = 0;
}

int64_t tg_fit_free_gpus(const struct tg_fit_node *n, uint32_t d)
{
    int64_t f = (int64_t)n->dom[d].gpus - n->dom[d].used;
    return f > 0 ? f : 0;
}

/* Whether the NUMA node of domain d still holds r's CPU and memory. Unknown
 * NUMA nodes and unknown sizes (0) do not limit. */
static int numa_holds(const struct tg_fit_node *n, uint32_t d, const struct tg_fit_req *r)
{
    if (n->dom[d].numa < 0)
        return 1;
    const struct tg_fit_numa *m = &n->numa[n->dom[d].numa];
    if (m->cpu_milli && r->cpu_milli > m->cpu_milli - m->cpu_used)
        return 0;
    if (m->mem && r->mem > m->mem - m->mem_used)
        return 0;
    return 1;
}

/* Best-fit comparator: 1 when domain a is a better home than b for r. */
static int better(const struct tg_fit_node *n, const struct tg_fit_req *r, uint32_t a, uint32_t b)
{
    if (r->rdma) {
        int pa = n->dom[a].rdma_gpus > 0, pb = n->dom[b].rdma_gpus > 0;
        if (pa != pb)
            return pa > pb;
    }
    int64_t la = tg_fit_free_gpus(n, a), lb = tg_fit_free_gpus(n, b);
    if (la != lb)
        return la < lb;
    return n->dom[a].id < n->dom[b].id;
}

int tg_fit_choose(const struct tg_fit_node *n, const struct tg_fit_req *r)
{
    int best = -1;
    if (r->gpus <= 0)
        return -1;
    for (uint32_t d = 0; d < n->ndom; d++) {
        if (tg_fit_free_gpus(n, d) < r->gpus || !numa_holds(n, d, r))
            continue;
        if (best < 0 || better(n, r, d, (uint32_t)best))
            best = (int)d;
    }
    return best;
}

void tg_fit_apply(struct tg_fit_node *n, int dom, const struct tg_fit_req *r, int sign)
{
    if (dom < 0 || (uint32_t)dom >= n->ndom) {
        n->spread += sign * r->gpus;
        return;
    }
    n->dom[dom].used += sign * r->gpus;
    if (n->dom[dom].numa >= 0) {
        struct tg_fit_numa *m = &n->numa[n->dom[dom].numa];
        m->cpu_used += sign * r->cpu_milli;
        m->mem_used += sign * r->mem;
    }
}

static int64_t max_domain(const struct tg_fit_node *n)
{
    int64_t m = 0;
    for (uint32_t d = 0; d < n->ndom; d++)
        if ((int64_t)n->dom[d].gpus > m)
            m = n->dom[d].gpus;
    return m;
}

/* Restricted policy, pod wider than any domain: spans domains; only the
 * node's free GPU total limits it. */
static uint32_t count_spanning(const struct tg_fit_node *n, const struct tg_fit_req *r,
                               uint32_t limit)
{
    int64_t free = -n->spread;
    for (uint32_t d = 0; d < n->ndom; d++)
        free += tg_fit_free_gpus(n, d);
    int64_t k = free > 0 ? free / r->gpus : 0;
    return k > limit ? limit : (uint32_t)k;
}

uint32_t tg_fit_count(struct tg_fit_node *n, const struct tg_fit_req *r, uint32_t limit)
{
    if (r->gpus <= 0 || n->policy == TG_TOPO_POLICY_NONE)
        return UINT32_MAX;
    if (n->policy == TG_TOPO_POLICY_RESTRICTED && r->gpus > max_domain(n))
        return count_spanning(n, r, limit);
    uint8_t chosen[TG_FIT_MAX_SIM];
    uint32_t k = 0;
    while (k < limit && k < TG_FIT_MAX_SIM) {
        int d = tg_fit_choose(n, r);
        if (d < 0)
            break;
        tg_fit_apply(n, d, r, +1);
        chosen[k++] = (uint8_t)d;
    }
    for (uint32_t i = k; i-- > 0;)
        tg_fit_apply(n, chosen[i], r, -1);
    return k;
}

int tg_fit_score(const struct tg_fit_node *n, const struct tg_fit_req *r)
{
    if (r->gpus <= 0)
        return 100;
    int d = tg_fit_choose(n, r);
    if (d < 0)
        return 0;
    if (r->rdma && n->dom[d].rdma_gpus == 0)
        return 80;
    return 100;
}
