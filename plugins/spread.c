/* Topology spread constraints, as kube-scheduler's PodTopologySpread:
 * the domains of a constraint are the values of its topologyKey on the
 * nodes that have every key of the pod's constraints of that kind and pass
 * its nodeAffinityPolicy (Honor: the pod's nodeSelector and required node
 * affinity) and nodeTaintsPolicy (Honor: taints tolerated); pods matching
 * its labelSelector in the pod's namespace are counted per domain.
 *  - DoNotSchedule: a node qualifies when count(its domain) + (1 if the pod
 *    matches itself) - min(count over domains) <= maxSkew, the minimum
 *    taken as 0 while fewer than minDomains domains exist; a node lacking a
 *    key does not qualify. Members placed earlier in the cycle count.
 *  - ScheduleAnyway: a score, higher where the domain is less loaded.
 * Each DoNotSchedule constraint is a rising domain constraint (tg_dcons):
 * placing members in one domain raises the minimum and lets the others
 * take more, so counting leaves the skew out (placement caps domains with
 * cap(), or asks for an exact count, cx->exact, before it places a pod). */
#include "plugins/builtin.h"
#include "plugins/podindex.h"
#include "util/arena.h"
#include "util/err.h"
#include "util/intern.h"

#include <string.h>

struct spdc {
    struct tg_dcons pub;                /* first */
    struct tg__pq q;
    const struct tg_spread *c;
    uint8_t self;
    uint8_t started;
};

struct spstate {
    struct spdc *dc;                    /* hard constraints, then soft ones */
    uint32_t nhard, n;
    const struct tg_dcons **pubs;
    uint64_t gen;
};

static uint32_t cap(const struct tg_dcons *pub, uint32_t val)
{
    const struct spdc *d = (const struct spdc *)pub;
    if (val == TG_STR_NONE)
        return 0;
    uint64_t cnt = tg__pq_count(&d->q, val);
    uint64_t m = (uint64_t)d->c->max_skew;
    int few = d->q.ndom < (uint32_t)d->c->min_domains;
    if (!d->self) {
        uint64_t min = few || d->q.min == UINT32_MAX ? 0 : d->q.min;
        return cnt <= min + m ? UINT32_MAX : 0;
    }
    uint32_t mo = few ? 0 : tg__pq_min_others(&d->q, val);
    if (mo == UINT32_MAX)
        return UINT32_MAX; /* the only domain: nothing to be skewed against */
    uint64_t lim = mo + m;
    return lim > cnt ? (uint32_t)(lim - cnt > UINT32_MAX - 1 ? UINT32_MAX - 1 : lim - cnt) : 0;
}

/* Nodes that are domains of constraints of this kind (hard or soft). */
static uint8_t *eligible(const struct tg_cycle_ctx *cx, const struct tg_pod *p,
                         const struct tg_spread *c, int hard)
{
    const struct tg_cluster *cl = cx->cluster;
    const struct tg_podspec *ps = p->spec;
    uint8_t *e = tg_arena_calloc(cx->arena, cl->nslots + 1, 1);
    if (!e)
        return NULL;
    for (uint32_t slot = 0; slot < cl->nslots; slot++) {
        const struct tg_node_obj *o = cl->nodes[slot].obj;
        if (!o)
            continue;
        int ok = 1;
        for (uint16_t i = 0; ok && i < ps->nspread; i++)
            if (ps->spread[i].hard == hard)
                ok = tg_labels_get(o->labels, o->nlabels, ps->spread[i].key) != TG_STR_NONE;
        uint32_t bad;
        if (ok && !c->affinity_ignore)
            ok = tg__node_affinity_match(ps, o, &bad);
        if (ok && c->taints_honor)
            ok = tg__taints_tolerated(ps, o);
        e[slot] = (uint8_t)ok;
    }
    return e;
}

static void release(const struct tg_cycle_ctx *cx, struct tg_shape *s)
{
    struct spstate *ss = s->state[TG_PS_SPREAD];
    for (uint32_t i = 0; ss && i < ss->n; i++)
        if (ss->dc[i].started)
            tg__pq_stop(cx->cluster, &ss->dc[i].q);
    s->state[TG_PS_SPREAD] = NULL;
}

static int setup(const struct tg_cycle_ctx *cx, const struct tg_pod *p, struct spstate *ss)
{
    const struct tg_podspec *ps = p->spec;
    for (int hard = 1; hard >= 0; hard--)
        for (uint16_t i = 0; i < ps->nspread; i++) {
            const struct tg_spread *c = &ps->spread[i];
            if (c->hard != hard)
                continue;
            struct spdc *d = &ss->dc[ss->n++];
            ss->nhard += (uint32_t)hard;
            d->c = c;
            d->self = c->has_sel && tg_labelsel_match(&c->sel, p->labels, p->nlabels);
            d->pub = (struct tg_dcons){.key = c->key, .rising = 1, .limits = d->self, .reason = TG_R_SPREAD,
                                       .arg = tg__istr("maxSkew %d on %s", c->max_skew, tg_str(c->key)),
                                       .gen = &ss->gen, .cap = cap};
            d->q = (struct tg__pq){.kind = TG__Q_MATCH, .bump = TG__B_MIN, .key = c->key, .ns = p->ns,
                                   .sel = c->has_sel ? &c->sel : NULL, .gen = hard ? &ss->gen : NULL};
            if (!(d->q.elig = eligible(cx, p, c, hard)))
                return TG_ENOMEM;
            if (tg__pq_start(cx->cluster, &d->q))
                return TG_ENOMEM;
            d->started = 1;
        }
    if (!(ss->pubs = tg_arena_alloc(cx->arena, (ss->nhard + 1) * sizeof *ss->pubs)))
        return TG_ENOMEM;
    for (uint32_t i = 0; i < ss->nhard; i++)
        ss->pubs[i] = &ss->dc[i].pub;
    return 0;
}

static int prefilter(const struct tg_cycle_ctx *cx, struct tg_shape *s, struct tg_status *st)
{
    const struct tg_podspec *ps = s->pod->spec;
    st->code = TG_SKIP;
    if (!ps || !ps->nspread)
        return 0;
    struct spstate *ss = tg_arena_calloc(cx->arena, 1, sizeof *ss);
    if (!ss || !(ss->dc = tg_arena_calloc(cx->arena, ps->nspread, sizeof *ss->dc)))
        return TG_ENOMEM;
    s->state[TG_PS_SPREAD] = ss;
    int rc = setup(cx, s->pod, ss);
    if (rc) {
        release(cx, s);
        return rc;
    }
    s->soft |= ss->n > ss->nhard;
    st->code = TG_SUCCESS;
    return 0;
}

static uint32_t count(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                      struct tg_status *st)
{
    const struct spstate *ss = s->state[TG_PS_SPREAD];
    uint32_t n = UINT32_MAX;
    for (uint32_t i = 0; ss && i < ss->nhard && n; i++) {
        const struct spdc *d = &ss->dc[i];
        uint32_t v = tg__kval(cx->cluster, slot, d->pub.key);
        if (v == TG_STR_NONE) {
            *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_NO_LABEL, d->pub.key};
            return 0;
        }
        if (!cx->exact)
            continue; /* counting: placement caps the domain */
        uint32_t k = cap(&d->pub, v);
        if (k < n)
            n = k;
        if (!k)
            *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_SPREAD, d->pub.arg};
    }
    return n;
}

static int score(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot)
{
    const struct spstate *ss = s->state[TG_PS_SPREAD];
    if (!ss || ss->n == ss->nhard)
        return 50;
    int sum = 0;
    for (uint32_t i = ss->nhard; i < ss->n; i++) {
        const struct spdc *d = &ss->dc[i];
        uint32_t v = tg__kval(cx->cluster, slot, d->pub.key);
        if (v == TG_STR_NONE)
            continue;
        uint64_t cnt = tg__pq_count(&d->q, v), min = d->q.min == UINT32_MAX ? 0 : d->q.min;
        sum += (int)(100 / (1 + (cnt > min ? cnt - min : 0)));
    }
    return sum / (int)(ss->n - ss->nhard);
}

static uint32_t dcons(const struct tg_cycle_ctx *cx, const struct tg_shape *s,
                      const struct tg_dcons *const **out)
{
    (void)cx;
    const struct spstate *ss = s->state[TG_PS_SPREAD];
    *out = ss ? ss->pubs : NULL;
    return ss ? ss->nhard : 0;
}

const struct tg_plugin tg_plugin_spread = {
    .name = "PodTopologySpread",
    .prefilter = prefilter,
    .count = count,
    .score = score,
    .dcons = dcons,
    .release = release,
    .prefers = 1,
};
