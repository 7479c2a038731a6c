/* NUMA/NVLink fit model (see agent/fit.h). Domains are few (<= 64), so every
 * question is a scan of the domains; counting replays greedy placements on a
 * copy of the state, at most one per free GPU. */
#include "agent/fit.h"

#include <string.h>

int64_t tg_fit_free_gpus(const struct tg_topology *t, const struct tg_fit_state *s, uint32_t d)
{
    int64_t f = (int64_t)t->domains[d].gpus - s->gpu_used[d];
    return f > 0 ? f : 0;
}

/* Whether the NUMA node of domain d still holds r's CPU and memory. Unknown
 * NUMA nodes and unknown sizes (0) do not limit. */
static int numa_holds(const struct tg_topology *t, const struct tg_fit_state *s, uint32_t d,
                      const struct tg_fit_req *r)
{
    int ni = tg_topo_numa_index(t, t->domains[d].numa);
    if (ni < 0)
        return 1;
    const struct tg_topo_numa *n = &t->numa[ni];
    if (n->cpus && r->cpu_milli > (int64_t)n->cpus * 1000 - s->cpu_used[ni])
        return 0;
    if (n->mem && r->mem > (int64_t)n->mem - s->mem_used[ni])
        return 0;
    return 1;
}

/* Best-fit comparator: 1 when domain a is a better home than b for r. */
static int better(const struct tg_topology *t, const struct tg_fit_state *s,
                  const struct tg_fit_req *r, uint32_t a, uint32_t b)
{
    if (r->rdma) {
        int pa = t->domains[a].rdma_gpus > 0, pb = t->domains[b].rdma_gpus > 0;
        if (pa != pb)
            return pa > pb;
    }
    int64_t la = tg_fit_free_gpus(t, s, a) - r->gpus, lb = tg_fit_free_gpus(t, s, b) - r->gpus;
    if (la != lb)
        return la < lb;
    return t->domains[a].id < t->domains[b].id;
}

int tg_fit_choose(const struct tg_topology *t, const struct tg_fit_state *s,
                  const struct tg_fit_req *r)
{
    int best = -1;
    if (r->gpus <= 0)
        return -1;
    for (uint32_t d = 0; d < t->ndomains; d++) {
        if (tg_fit_free_gpus(t, s, d) < r->gpus || !numa_holds(t, s, d, r))
            continue;
        if (best < 0 || better(t, s, r, d, (uint32_t)best))
            best = (int)d;
    }
    return best;
}

void tg_fit_apply(const struct tg_topology *t, struct tg_fit_state *s, int dom,
                  const struct tg_fit_req *r, int sign)
{
    if (dom < 0 || (uint32_t)dom >= t->ndomains) {
        s->spread_gpus += sign * r->gpus;
        return;
    }
    s->gpu_used[dom] += sign * r->gpus;
    int ni = tg_topo_numa_index(t, t->domains[dom].numa);
    if (ni >= 0) {
        s->cpu_used[ni] += sign * r->cpu_milli;
        s->mem_used[ni] += sign * r->mem;
    }
}

static int64_t max_domain(const struct tg_topology *t)
{
    int64_t m = 0;
    for (uint32_t d = 0; d < t->ndomains; d++)
        if ((int64_t)t->domains[d].gpus > m)
            m = t->domains[d].gpus;
    return m;
}

/* Restricted policy, pod wider than any domain: spans domains; only the
 * node's free GPU total limits it. */
static uint32_t count_spanning(const struct tg_topology *t, const struct tg_fit_state *s,
                               const struct tg_fit_req *r, uint32_t limit)
{
    int64_t free = -s->spread_gpus;
    for (uint32_t d = 0; d < t->ndomains; d++)
        free += tg_fit_free_gpus(t, s, d);
    int64_t n = free > 0 ? free / r->gpus : 0;
    return n > limit ? limit : (uint32_t)n;
}

uint32_t tg_fit_count(const struct tg_topology *t, const struct tg_fit_state *s,
                      const struct tg_fit_req *r, uint32_t limit)
{
    if (r->gpus <= 0 || t->policy == TG_TOPO_POLICY_NONE)
        return UINT32_MAX;
    if (t->policy == TG_TOPO_POLICY_RESTRICTED && r->gpus > max_domain(t))
        return count_spanning(t, s, r, limit);
    struct tg_fit_state tmp;
    memcpy(&tmp, s, sizeof tmp);
    uint32_t n = 0;
    while (n < limit) {
        int d = tg_fit_choose(t, &tmp, r);
        if (d < 0)
            break;
        tg_fit_apply(t, &tmp, d, r, +1);
        n++;
    }
    return n;
}

int tg_fit_score(const struct tg_topology *t, const struct tg_fit_state *s,
                 const struct tg_fit_req *r)
{
    if (r->gpus <= 0)
        return 100;
    int d = tg_fit_choose(t, s, r);
    if (d < 0)
        return 0;
    if (r->rdma && t->domains[d].rdma_gpus == 0)
        return 80;
    return 100;
}
