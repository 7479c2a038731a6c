/* Resource fit, as kube-scheduler's NodeResourcesFit, but counting: how many
 * pods of a shape fit in what the node has left (allocatable minus every
 * placed pod's requests), the pod count included. Its score is binpacking
 * (MostAllocated on the scarcest requested resource), which pack uses to
 * break ties between nodes. */
#include "plugins/builtin.h"

static uint32_t count(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                      struct tg_status *st)
{
    const struct tg_cluster *c = cx->cluster;
    const struct tg_pod *p = s->pod;
    int64_t podsfree = tg_alloc(c, slot, TG_RES_PODS) - tg_used(c, slot, TG_RES_PODS);
    if (podsfree <= 0) {
        *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_TOO_MANY_PODS, 0};
        return 0;
    }
    int64_t n = podsfree;
    for (uint8_t i = 0; i < p->nreq; i++) {
        uint32_t r = p->req[i].res;
        if (r == TG_RES_PODS)
            continue;
        int64_t free = tg_alloc(c, slot, r) - tg_used(c, slot, r);
        int64_t k = free > 0 ? free / p->req[i].val : 0;
        if (k < n)
            n = k;
        if (n == 0) {
            int64_t cap = tg_alloc(c, slot, r);
            *st = (struct tg_status){cap < p->req[i].val ? TG_UNRESOLVABLE : TG_UNSCHEDULABLE,
                                     TG_R_INSUFFICIENT, r};
            return 0;
        }
    }
    return n > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)n;
}

static int score(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot)
{
    const struct tg_cluster *c = cx->cluster;
    const struct tg_pod *p = s->pod;
    int best = 0;
    for (uint8_t i = 0; i < p->nreq; i++) {
        uint32_t r = p->req[i].res;
        int64_t a = tg_alloc(c, slot, r);
        if (a <= 0)
            continue;
        int64_t after = tg_used(c, slot, r) + p->req[i].val;
        int sc = (int)(after * 100 / a);
        if (sc > best)
            best = sc;
    }
    return best > 100 ? 100 : best;
}

const struct tg_plugin tg_plugin_resources = {
    .name = "NodeResourcesFit",
    .count = count,
    .score = score,
};
