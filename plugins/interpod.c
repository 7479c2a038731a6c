/* Inter-pod affinity and anti-affinity, as kube-scheduler's InterPodAffinity:
 *  - required affinity: a node qualifies when, in its domain of each term's
 *    topologyKey, some pod matches the term (the first pod of a series that
 *    matches its own terms may go anywhere while no pod matches any term);
 *  - required anti-affinity: no pod matching the term in the node's domain
 *    (a node lacking the key qualifies);
 *  - the symmetric rule: a placed pod's required anti-affinity term that
 *    selects the pending pod keeps it out of that pod's domain;
 *  - preferred terms score (weights added for affinity, taken off for
 *    anti-affinity, where a matching pod is in the domain).
 * Every term is a live query on the pod index (podindex.h): counts per
 * domain kept current while the gang is placed, so members placed earlier in
 * the cycle count like bound pods ("one replica per node" is a term that
 * matches its own shape: at most one per domain). Each required term is
 * also a domain constraint (tg_dcons) that placement applies to whole
 * domains. */
#include "plugins/builtin.h"
#include "plugins/podindex.h"
#include "util/arena.h"
#include "util/err.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DC_AFF, DC_ANTI, DC_XANTI };

struct ipstate;

struct ipdc {
    struct tg_dcons pub;                /* first: cap() gets &pub */
    struct tg__pq q;
    struct ipstate *ps;
    uint8_t kind;                       /* DC_* */
    uint8_t self;                       /* the shape's own pods match the term */
    uint8_t owned;                      /* q.gterm is a copy to free */
    uint8_t started;
    uint8_t gang;                       /* DC_AFF: other pod sets of the gang match the term */
    uint64_t t0;                        /* q.total when started: more means a member matched */
};

struct ippref {
    struct tg__pq q;
    int32_t weight;                     /* < 0: anti-affinity */
    uint8_t started;
};

struct ipstate {
    struct ipdc *dc;
    uint32_t ndc, capdc;
    const struct tg_dcons **pubs;
    struct ippref *pref;
    uint32_t npref;
    uint64_t gen;
    uint8_t selfaff;                    /* the pod matches every one of its affinity terms */
};

static int first_pod(const struct ipstate *ps)
{
    if (!ps->selfaff)
        return 0;
    for (uint32_t i = 0; i < ps->ndc; i++)
        if (ps->dc[i].kind == DC_AFF && ps->dc[i].q.total)
            return 0;
    return 1;
}

static uint32_t cap(const struct tg_dcons *pub, uint32_t val)
{
    const struct ipdc *d = (const struct ipdc *)pub;
    if (d->kind == DC_AFF) {
        if (val == TG_STR_NONE)
            return 0;
        /* until a member of the gang that matches the term is placed, any
         * domain may get one (the shape is placed after those members) */
        return tg__pq_count(&d->q, val) || first_pod(d->ps) || (d->gang && d->q.total <= d->t0)
                   ? UINT32_MAX
                   : 0;
    }
    if (val == TG_STR_NONE)
        return UINT32_MAX;
    if (tg__pq_count(&d->q, val))
        return 0;
    return d->kind == DC_ANTI && d->self ? 1 : UINT32_MAX;
}

static struct ipdc *dc_add(struct ipstate *ps, struct tg_arena *a, uint8_t kind, uint32_t key)
{
    if (ps->ndc == ps->capdc) {
        uint32_t nc = ps->capdc ? ps->capdc * 2 : 8;
        struct ipdc *n = tg_arena_calloc(a, nc, sizeof *n);
        if (!n)
            return NULL;
        if (ps->ndc)
            memcpy(n, ps->dc, ps->ndc * sizeof *n);
        ps->dc = n;
        ps->capdc = nc;
    }
    struct ipdc *d = &ps->dc[ps->ndc++];
    memset(d, 0, sizeof *d);
    d->ps = ps;
    d->kind = kind;
    d->pub.key = key;
    d->pub.cap = cap;
    d->pub.gen = &ps->gen;
    d->q.key = key;
    d->q.gen = &ps->gen;
    return d;
}

struct build {
    const struct tg_cycle_ctx *cx;
    const struct tg_pod *pod;
    const struct tg_objstore *store;
    struct ipstate *ps;
    int rc;
};

/* The symmetric rule: pods carrying term t (in namespace ns) keep this
 * shape out of their domains. Skips a term already added. */
static int add_xanti(void *ud, const struct tg_podterm *t, uint32_t ns, uint64_t hash, uint32_t desc)
{
    struct build *b = ud;
    for (uint32_t i = 0; i < b->ps->ndc; i++) {
        const struct ipdc *d = &b->ps->dc[i];
        if (d->kind == DC_XANTI && d->q.ghash == hash && d->q.ns == ns &&
            tg_podterm_equal(d->q.gterm, t))
            return 0;
    }
    struct ipdc *d = dc_add(b->ps, b->cx->arena, DC_XANTI, t->key);
    struct tg_podterm *copy = d ? tg_arena_calloc(b->cx->arena, 1, sizeof *copy) : NULL;
    if (!copy || tg_podterm_copy(copy, t))
        return b->rc = TG_ENOMEM;
    d->owned = 1;
    d->q.kind = TG__Q_GROUP;
    d->q.ns = ns;
    d->q.gterm = copy;
    d->q.ghash = hash;
    d->q.bump = TG__B_NONE;
    d->pub.reason = TG_R_POD_ANTI_OF;
    d->pub.arg = desc;
    return 0;
}

static void who(const struct tg_pod *p, char *buf, size_t n)
{
    if (p->group)
        snprintf(buf, n, "%s/%s", tg_str(p->ns), tg_str(p->group));
    else
        snprintf(buf, n, "%s", p->key);
}

/* Anti-affinity terms of the other pods of the gang that select this one:
 * no member carries them yet, so the index does not know them. */
static int gang_xanti(struct build *b)
{
    for (uint32_t k = 0; k < b->cx->ngang && !b->rc; k++) {
        const struct tg_pod *g = b->cx->gang[k]->pod;
        for (uint16_t i = 0; g->cons && i < g->cons->nanti && !b->rc; i++) {
            const struct tg_podterm *t = &g->cons->anti[i];
            if (!tg__term_selects(t, g->ns, b->store, b->pod->ns, b->pod->labels, b->pod->nlabels))
                continue;
            char w[400];
            who(g, w, sizeof w);
            add_xanti(b, t, g->ns, tg_podterm_hash(t, g->ns), tg__istr("%s on %s", w, tg_str(t->key)));
        }
    }
    return b->rc;
}

static void match_query(struct tg__pq *q, const struct tg_podterm *t, const struct tg_pod *p,
                        const struct tg_objstore *st)
{
    q->kind = TG__Q_MATCH;
    q->key = t->key;
    q->ns = p->ns;
    q->sel = t->has_sel ? &t->sel : NULL;
    q->nsterm = t;
    q->store = st;
}

static int own_terms(struct build *b)
{
    const struct tg_pod *p = b->pod;
    const struct tg_podcons *pc = p->cons;
    b->ps->selfaff = 1;
    for (int anti = 0; pc && anti < 2; anti++) {
        uint16_t n = anti ? pc->nanti : pc->naff;
        for (uint16_t i = 0; i < n; i++) {
            const struct tg_podterm *t = anti ? &pc->anti[i] : &pc->aff[i];
            struct ipdc *d = dc_add(b->ps, b->cx->arena, anti ? DC_ANTI : DC_AFF, t->key);
            if (!d)
                return TG_ENOMEM;
            match_query(&d->q, t, p, b->store);
            d->self = (uint8_t)tg__term_selects(t, p->ns, b->store, p->ns, p->labels, p->nlabels);
            char desc[600];
            if (anti && d->self && p->group)
                snprintf(desc, sizeof desc, "%s/%s (its own gang)", tg_str(p->ns), tg_str(p->group));
            else
                tg__describe_term(t, p->ns, desc, sizeof desc);
            if (anti) {
                d->pub.limits = d->self;
                d->pub.reason = TG_R_POD_ANTI;
                d->pub.arg = tg__istr("%s on %s", desc, tg_str(t->key));
            } else {
                /* a domain gaining its first match (a member of another pod set
                 * of the gang) opens it; the first-pod rule flips with the total */
                d->q.bump = TG__B_DOMAIN;
                for (uint32_t k = 0; k < b->cx->ngang; k++) {
                    const struct tg_pod *g = b->cx->gang[k]->pod;
                    if (g != p && tg__term_selects(t, p->ns, b->store, g->ns, g->labels, g->nlabels))
                        d->gang = 1;
                }
                d->pub.after = d->gang;
                d->pub.reason = TG_R_POD_AFFINITY;
                d->pub.arg = tg__istr("%s pod in its %s", desc, tg_str(t->key));
                b->ps->selfaff &= d->self;
            }
        }
    }
    return 0;
}

static int preferred(struct build *b)
{
    const struct tg_podcons *pc = b->pod->cons;
    uint32_t n = pc ? (uint32_t)pc->npaff + pc->npanti : 0;
    if (!n)
        return 0;
    if (!(b->ps->pref = tg_arena_calloc(b->cx->arena, n, sizeof *b->ps->pref)))
        return TG_ENOMEM;
    for (int anti = 0; anti < 2; anti++) {
        uint16_t k = anti ? pc->npanti : pc->npaff;
        for (uint16_t i = 0; i < k; i++) {
            const struct tg_podterm *t = anti ? &pc->panti[i] : &pc->paff[i];
            struct ippref *r = &b->ps->pref[b->ps->npref++];
            match_query(&r->q, t, b->pod, b->store);
            r->weight = anti ? -t->weight : t->weight;
        }
    }
    return 0;
}

static void release(const struct tg_cycle_ctx *cx, struct tg_shape *s)
{
    struct ipstate *ps = s->state[TG_PS_INTERPOD];
    if (!ps)
        return;
    for (uint32_t i = 0; i < ps->ndc; i++) {
        struct ipdc *d = &ps->dc[i];
        if (d->started)
            tg__pq_stop(cx->cluster, &d->q);
        if (d->owned)
            tg_podterm_free((struct tg_podterm *)d->q.gterm);
    }
    for (uint32_t i = 0; i < ps->npref; i++)
        if (ps->pref[i].started)
            tg__pq_stop(cx->cluster, &ps->pref[i].q);
    s->state[TG_PS_INTERPOD] = NULL;
}

static int start_all(const struct tg_cycle_ctx *cx, struct ipstate *ps)
{
    for (uint32_t i = 0; i < ps->ndc; i++) {
        if (tg__pq_start(cx->cluster, &ps->dc[i].q))
            return TG_ENOMEM;
        ps->dc[i].started = 1;
        ps->dc[i].t0 = ps->dc[i].q.mark = ps->dc[i].q.total;
    }
    for (uint32_t i = 0; i < ps->npref; i++) {
        if (tg__pq_start(cx->cluster, &ps->pref[i].q))
            return TG_ENOMEM;
        ps->pref[i].started = 1;
    }
    if (ps->ndc && !(ps->pubs = tg_arena_alloc(cx->arena, ps->ndc * sizeof *ps->pubs)))
        return TG_ENOMEM;
    for (uint32_t i = 0; i < ps->ndc; i++)
        ps->pubs[i] = &ps->dc[i].pub;
    return 0;
}

static int prefilter(const struct tg_cycle_ctx *cx, struct tg_shape *s, struct tg_status *st)
{
    const struct tg_pod *p = s->pod;
    st->code = TG_SKIP;
    struct ipstate *ps = tg_arena_calloc(cx->arena, 1, sizeof *ps);
    if (!ps)
        return TG_ENOMEM;
    s->state[TG_PS_INTERPOD] = ps; /* from here on, release undoes what is done */
    struct build b = {cx, p, p->spec && p->spec->store ? p->spec->store : cx->store, ps, 0};
    int rc = own_terms(&b);
    if (!rc)
        rc = tg__pidx_groups(cx->cluster, b.store, p, add_xanti, &b);
    if (!rc)
        rc = gang_xanti(&b);
    if (!rc)
        rc = b.rc ? b.rc : preferred(&b);
    if (!rc && (ps->ndc || ps->npref))
        rc = start_all(cx, ps);
    if (rc || (!ps->ndc && !ps->npref)) {
        release(cx, s);
        return rc;
    }
    s->soft |= ps->npref > 0;
    st->code = TG_SUCCESS;
    return 0;
}

static uint32_t count(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                      struct tg_status *st)
{
    const struct ipstate *ps = s->state[TG_PS_INTERPOD];
    uint32_t n = UINT32_MAX, key = TG_STR_NONE, v = TG_STR_NONE;
    for (uint32_t i = 0; ps && i < ps->ndc && n; i++) {
        const struct ipdc *d = &ps->dc[i];
        if (d->pub.key != key) /* terms on one key (often all) look it up once */
            v = tg__kval(cx->cluster, slot, key = d->pub.key);
        uint32_t k = cap(&d->pub, v);
        if (k < n)
            n = k;
        if (!k)
            *st = d->kind == DC_AFF && v == TG_STR_NONE
                      ? (struct tg_status){TG_UNSCHEDULABLE, TG_R_NO_LABEL, d->pub.key}
                      : (struct tg_status){TG_UNSCHEDULABLE, d->pub.reason, d->pub.arg};
    }
    return n;
}

static int score(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot)
{
    const struct ipstate *ps = s->state[TG_PS_INTERPOD];
    int64_t sum = 0, total = 0;
    for (uint32_t i = 0; ps && i < ps->npref; i++) {
        const struct ippref *r = &ps->pref[i];
        uint32_t v = tg__kval(cx->cluster, slot, r->q.key);
        total += r->weight < 0 ? -r->weight : r->weight;
        if (v != TG_STR_NONE && tg__pq_count(&r->q, v))
            sum += r->weight;
    }
    return total ? (int)(50 + 50 * sum / total) : 50;
}

static uint32_t dcons(const struct tg_cycle_ctx *cx, const struct tg_shape *s,
                      const struct tg_dcons *const **out)
{
    (void)cx;
    const struct ipstate *ps = s->state[TG_PS_INTERPOD];
    *out = ps ? ps->pubs : NULL;
    return ps ? ps->ndc : 0;
}

const struct tg_plugin tg_plugin_interpod = {
    .name = "InterPodAffinity",
    .prefilter = prefilter,
    .count = count,
    .score = score,
    .dcons = dcons,
    .release = release,
    .prefers = 1,
};
