/* NUMA/NVLink fit model (see model/fit.h). Domains are few (<= 64), so every
 * question is a scan of the domains; counting replays greedy placements and
 * undoes them, at most TG_FIT_MAX_SIM of them. */
#include "model/fit.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/hmap.h"

#define TG_FIT_MAX_SIM 4096

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t clamp64(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

int tg_fit_node_new(const struct tg_topology *t, struct tg_fit_node **out)
{
    size_t sz = sizeof(struct tg_fit_node) + t->nkpods * sizeof(uint64_t) +
                t->ndomains * sizeof(struct tg_fit_dom) + t->nnuma * sizeof(struct tg_fit_numa) +
                t->nmem * sizeof(struct tg_fit_mem);
    struct tg_fit_node *n = calloc(1, sz);
    *out = NULL;
    if (!n)
        return TG_ENOMEM;
    n->policy = t->policy;
    n->ndom = t->ndomains;
    n->nnuma = t->nnuma;
    n->nmem = t->nmem;
    n->kpods = (uint64_t *)(n + 1);     /* 8-byte members first: no padding needed */
    n->dom = (struct tg_fit_dom *)(n->kpods + t->nkpods);
    n->numa = (struct tg_fit_numa *)(n->dom + n->ndom);
    n->mem = (struct tg_fit_mem *)(n->numa + n->nnuma);
    for (uint32_t i = 0; i < t->nnuma; i++) {
        const struct tg_topo_numa *x = &t->numa[i];
        n->numa[i].cpu_milli = (int64_t)x->cpus * 1000;
        n->numa[i].mem = clamp64(x->mem);
        n->numa[i].id = x->id;
        n->numa[i].kcpus = x->known & TG_TOPO_KCPUS ? (int64_t)x->kcpus : -1;
        n->numa[i].kmem = x->known & TG_TOPO_KMEM ? clamp64(x->kmem) : -1;
        n->kubelet |= x->known != 0;
    }
    for (uint32_t i = 0; i < t->nmem; i++) {
        n->mem[i].id = t->mem[i].id;
        n->mem[i].kmem = t->mem[i].known & TG_TOPO_KMEM ? clamp64(t->mem[i].kmem) : -1;
    }
    const char *k = t->kpods;
    for (uint32_t i = 0; i < t->nkpods && k < t->kpods + t->kpods_len; i++) {
        size_t len = strlen(k);
        n->kpods[n->nkpods++] = tg_hash(k, len);
        k += len + 1;
    }
    qsort(n->kpods, n->nkpods, sizeof *n->kpods, cmp_u64);
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
        n->numa[i].cpu_used = n->numa[i].mem_used = n->numa[i].kcpus_used =
            n->numa[i].kmem_used = 0;
    for (uint32_t i = 0; i < n->nmem; i++)
        n->mem[i].kmem_used = 0;
}

int tg_fit_counted(const struct tg_fit_node *n, const char *key)
{
    uint64_t h = tg_hash(key, strlen(key));
    return n->nkpods && bsearch(&h, n->kpods, n->nkpods, sizeof h, cmp_u64) != NULL;
}

int tg_fit_pinned(const struct tg_fit_node *n, const struct tg_fit_req *r)
{
    return n->kubelet && r->guaranteed && !r->counted;
}

/* Whether the kubelet can still pin r on CPU NUMA node index i. */
static int k_holds(const struct tg_fit_node *n, uint32_t i, const struct tg_fit_req *r)
{
    const struct tg_fit_numa *m = &n->numa[i];
    if (!tg_fit_pinned(n, r))
        return 1;
    if (m->kcpus >= 0 && r->excl_cpus > m->kcpus - m->kcpus_used)
        return 0;
    if (m->kmem >= 0 && r->mem > m->kmem - m->kmem_used)
        return 0;
    return 1;
}

/* A memory-only node holds a pinned r only without exclusive CPUs and with
 * its memory known to be free there. */
static int k_holds_mem(const struct tg_fit_node *n, uint32_t j, const struct tg_fit_req *r)
{
    const struct tg_fit_mem *m = &n->mem[j];
    return r->excl_cpus == 0 && m->kmem >= 0 && r->mem <= m->kmem - m->kmem_used;
}

/* Pinned pod without GPUs: the lowest NUMA id that holds it. */
static int choose_numa(const struct tg_fit_node *n, const struct tg_fit_req *r)
{
    int best = -1;
    int32_t best_id = 0;
    for (uint32_t i = 0; i < n->nnuma; i++)
        if (k_holds(n, i, r) && (best < 0 || n->numa[i].id < best_id)) {
            best = TG_FIT_NUMA + (int)i;
            best_id = n->numa[i].id;
        }
    for (uint32_t j = 0; j < n->nmem; j++)
        if (k_holds_mem(n, j, r) && (best < 0 || n->mem[j].id < best_id)) {
            best = TG_FIT_MEM + (int)j;
            best_id = n->mem[j].id;
        }
    return best;
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
    return k_holds(n, (uint32_t)n->dom[d].numa, r);
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
        return tg_fit_pinned(n, r) ? choose_numa(n, r) : -1;
    for (uint32_t d = 0; d < n->ndom; d++) {
        if (tg_fit_free_gpus(n, d) < r->gpus || !numa_holds(n, d, r))
            continue;
        if (best < 0 || better(n, r, d, (uint32_t)best))
            best = (int)d;
    }
    return best;
}

static void k_apply(struct tg_fit_node *n, uint32_t i, const struct tg_fit_req *r, int sign)
{
    if (!tg_fit_pinned(n, r))
        return;
    n->numa[i].kcpus_used += sign * (int64_t)r->excl_cpus;
    n->numa[i].kmem_used += sign * r->mem;
}

void tg_fit_apply(struct tg_fit_node *n, int at, const struct tg_fit_req *r, int sign)
{
    if (at >= TG_FIT_MEM) {
        if ((uint32_t)(at - TG_FIT_MEM) < n->nmem && tg_fit_pinned(n, r))
            n->mem[at - TG_FIT_MEM].kmem_used += sign * r->mem;
        return;
    }
    if (at >= TG_FIT_NUMA) {
        if ((uint32_t)(at - TG_FIT_NUMA) < n->nnuma)
            k_apply(n, (uint32_t)(at - TG_FIT_NUMA), r, sign);
        return;
    }
    if (at < 0 || (uint32_t)at >= n->ndom) {
        n->spread += sign * r->gpus;
        return;
    }
    n->dom[at].used += sign * r->gpus;
    if (n->dom[at].numa >= 0) {
        struct tg_fit_numa *m = &n->numa[n->dom[at].numa];
        m->cpu_used += sign * r->cpu_milli;
        m->mem_used += sign * r->mem;
        k_apply(n, (uint32_t)n->dom[at].numa, r, sign);
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
    if (n->policy == TG_TOPO_POLICY_NONE || (r->gpus <= 0 && !tg_fit_pinned(n, r)))
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
        return !tg_fit_pinned(n, r) || choose_numa(n, r) >= 0 ? 100 : 0;
    int d = tg_fit_choose(n, r);
    if (d < 0)
        return 0;
    if (r->rdma && n->dom[d].rdma_gpus == 0)
        return 80;
    return 100;
}

int tg_fit_short(const struct tg_fit_node *n, const struct tg_fit_req *r, char *what,
                 int64_t *most)
{
    if (tg_fit_choose(n, r) >= 0 || !tg_fit_pinned(n, r))
        return -1;
    /* CPUs are short when no NUMA node has the exclusive CPUs; else memory. */
    int64_t cpus = -1, mem = -1;
    int cpu_ok = r->excl_cpus == 0;
    for (uint32_t i = 0; i < n->nnuma; i++) {
        const struct tg_fit_numa *m = &n->numa[i];
        int64_t c = m->kcpus >= 0 ? m->kcpus - m->kcpus_used : INT64_MAX;
        cpus = c > cpus ? c : cpus;
        if (c >= r->excl_cpus) {
            cpu_ok = 1;
            int64_t f = m->kmem >= 0 ? m->kmem - m->kmem_used : INT64_MAX;
            mem = f > mem ? f : mem;
        }
    }
    for (uint32_t j = 0; r->excl_cpus == 0 && j < n->nmem; j++) {
        int64_t f = n->mem[j].kmem >= 0 ? n->mem[j].kmem - n->mem[j].kmem_used : -1;
        mem = f > mem ? f : mem;
    }
    if (!cpu_ok) {
        *what = 'c';
        *most = cpus < 0 ? 0 : cpus;
    } else {
        *what = 'm';
        *most = mem < 0 ? 0 : mem;
    }
    return 0;
}
