/* Reclaim between tenant queues (issue 19; docs/queues.md "Reclaim").
 *
 * A gang of queue Q that did not fit takes room back from gangs of other
 * queues when
 *   - queues are on, preemption is on (policy preemption.enabled) and the
 *     gang may preempt (preemptionPolicy is not Never);
 *   - Q is below its fair share for the gang's dominant resource (the one it
 *     asks most of as a fraction of the cluster's capacity), the gang
 *     included: allocated + asked <= fair share. After a reclaim Q is still
 *     at or below its share, so the victims' queue cannot take it back
 *     (no ping-pong);
 *   - the victims are whole gangs of other queues (neither Q nor an ancestor
 *     or descendant of it), whatever their priority: that makes it reclaim,
 *     not preemption. Each set is the preemption planner's (preempt.h:
 *     cheapest set inside one domain of the gang's required/preferred
 *     level), the queue furthest above its fair share giving first, and is
 *     refused when it would take any victim queue below its fair share
 *     (tg_fairshare_may_reclaim on its per-queue totals). A pod at or above
 *     system-cluster-critical is never a victim of a gang below that. With
 *     preemption.reclaimMinRuntimeSeconds, a gang that has not run that long
 *     since its last member started is no victim (KAI's reclaimMinRuntime).
 * When reclaim finds no set, preemption by priority is tried as before.
 *
 * Cost: an O(queues) check first (the other queues' excess over their
 * shares plus the free room cannot cover the ask: no plan at all); then the
 * planner walks the victims index as preemption does, making units only for
 * gangs of queues that may give. */
#include "scheduler/internal.h"
#include "scheduler/preempt.h"
#include "util/intern.h"
#include "util/strbuf.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-9

struct rctx {
    struct tg_engine *e;
    struct tg_fairshare *fs;
    int rq;                             /* the reclaimer's queue */
    uint32_t dom;                       /* its gang's dominant resource */
    int64_t now_ms, min_run_ms;         /* the clock; preemption.reclaimMinRuntimeSeconds */
    const struct tg_grec *refused;      /* the last victim refused, NULL: none; its text
                                           (its queue's share, its runtime) is made only when
                                           a reason needs it (refusal_text): the planner asks
                                           about every placed gang on every try */
    int refused_vq;                     /* its queue; -1: refused for its runtime */
    uint32_t qname[8];                  /* victim_queue's answers by queue name (interned), */
    int qvq[8];                         /* a gang's walk of the tree asked once per queue */
    uint32_t nq;
};

/* 1 when a is b or one of b's ancestors. */
static int above_or_same(const struct tg_fairshare *fs, int a, int b)
{
    for (int p = b; p >= 0; p = tg_fairshare_parent(fs, (uint32_t)p))
        if (p == a)
            return 1;
    return 0;
}

/* The queue named name, or -1 when its gangs cannot be victims for rq. */
static int queue_of_name(const struct rctx *c, uint32_t name)
{
    int vq = name ? tg_fairshare_find(c->fs, name) : -1;
    if (vq < 0 || above_or_same(c->fs, vq, c->rq) || above_or_same(c->fs, c->rq, vq))
        return -1;
    return vq;
}

/* The queue of a victim gang, or -1 when it cannot be one for rq; the
 * answers for the first queues met are kept for the plan. */
static int victim_queue(struct rctx *c, const struct tg_grec *g)
{
    for (uint32_t i = 0; i < c->nq; i++)
        if (c->qname[i] == g->queue)
            return c->qvq[i];
    int vq = queue_of_name(c, g->queue);
    if (c->nq < sizeof c->qname / sizeof c->qname[0]) {
        c->qname[c->nq] = g->queue;
        c->qvq[c->nq++] = vq;
    }
    return vq;
}

/* What g's placed members hold, added per resource to out's n totals. */
static uint32_t held_into(const struct tg_grec *g, struct tg_rq *out, uint32_t n)
{
    for (uint32_t i = 0; i < g->nmembers; i++)
        n = tg__rq_add(out, n, g->members[i]->req, g->members[i]->nreq);
    return n;
}

/* When g's last member started (status.startTime, else when first seen
 * bound: now). */
static int64_t last_start(const struct rctx *c, const struct tg_grec *g)
{
    int64_t last = 0;
    for (uint32_t i = 0; i < g->nmembers; i++) {
        int64_t s = g->members[i]->start_ms ? g->members[i]->start_ms : c->now_ms;
        last = s > last ? s : last;
    }
    return last;
}

/* 1 when g has run at least the policy's minimum since its last member
 * started; else 0. */
static int ran_long_enough(const struct rctx *c, const struct tg_grec *g)
{
    return c->min_run_ms <= 0 || c->now_ms - last_start(c, g) >= c->min_run_ms;
}

static int victim(void *ud, const struct tg_grec *g, double *over)
{
    struct rctx *c = ud;
    int vq = victim_queue(c, g);
    if (vq < 0 || tg_fairshare_allocated(c->fs, (uint32_t)vq, c->dom) <=
                      tg_fairshare_share(c->fs, (uint32_t)vq, c->dom) + EPS)
        return 0; /* its queue is not above its share in what the reclaimer needs */
    if (!ran_long_enough(c, g)) {
        c->refused = g;
        c->refused_vq = -1;
        return 0;
    }
    struct tg_rq sum[TG__MAXREQ];
    uint32_t n;
    const struct tg_rq *take = tg_grec_held(g, &n); /* kept by the gang layer, O(1) */
    if (!take)
        n = held_into(g, sum, 0), take = sum;
    if (!tg_fairshare_may_reclaim(c->fs, c->rq, (uint32_t)vq, take, n, NULL, 0)) {
        c->refused = g; /* even alone it would take its queue below its share */
        c->refused_vq = vq;
        return 0;
    }
    *over = tg_fairshare_order_key(c->fs, (uint32_t)vq);
    return 1;
}

/* Why the last victim was refused, into buf (empty: none was): "gang ml/a
 * has run 10 s < preemption.reclaimMinRuntimeSeconds 60", or the victim
 * queue's share as tg_fairshare_may_reclaim words it. The planner's dry
 * runs put the queues' allocations back as they found them, so the verdict
 * made during the plan is made again here, with its text. */
static void refusal_text(const struct rctx *c, char *buf, size_t len)
{
    buf[0] = 0;
    const struct tg_grec *g = c->refused;
    if (!g)
        return;
    if (c->refused_vq < 0) {
        snprintf(buf, len, "gang %s has run %lld s < preemption.reclaimMinRuntimeSeconds %lld", g->key,
                 (long long)((c->now_ms - last_start(c, g)) / 1000), (long long)(c->min_run_ms / 1000));
        return;
    }
    struct tg_rq take[TG__MAXREQ];
    uint32_t n = held_into(g, take, 0);
    int ok = tg_fairshare_may_reclaim(c->fs, c->rq, (uint32_t)c->refused_vq, take, n, buf, len);
    assert(!ok); /* the same verdict as in victim() */
    (void)ok;
}

/* What a victim set takes from one queue. */
struct vqsum {
    int vq;
    uint32_t nt;
    struct tg_rq take[TG__MAXREQ];
};

/* Sums the n gangs' held resources per victim queue into out (cap entries,
 * in order of first appearance); gang(ud, i) is the i-th gang or NULL (a
 * pod of no gang: not counted). One pass, O(victims x queues). */
static uint32_t per_queue(struct rctx *c, const struct tg_grec *(*gang)(const void *, uint32_t),
                          const void *ud, uint32_t n, struct vqsum *out, uint32_t cap)
{
    uint32_t nq = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct tg_grec *g = gang(ud, i);
        int vq = g ? victim_queue(c, g) : -1;
        if (vq < 0)
            continue;
        uint32_t k = 0;
        while (k < nq && out[k].vq != vq)
            k++;
        if (k == nq) {
            if (nq == cap)
                continue; /* cannot happen: cap >= min(queues, gangs) */
            out[nq].vq = vq;
            out[nq++].nt = 0;
        }
        out[k].nt = held_into(g, out[k].take, out[k].nt);
    }
    return nq;
}

static const struct tg_grec *gang_at(const void *ud, uint32_t i)
{
    return ((struct tg_grec *const *)ud)[i];
}

static const struct tg_grec *victim_at(const void *ud, uint32_t i)
{
    return ((const struct tg_victim *)ud)[i].gang;
}

/* The victims' totals per queue, each checked. */
static int set_ok(void *ud, struct tg_grec *const *gs, uint32_t n, char *buf, size_t len)
{
    struct rctx *c = ud;
    uint32_t cap = tg_fairshare_count(c->fs) < n ? tg_fairshare_count(c->fs) : n;
    struct vqsum *q = malloc((cap ? cap : 1) * sizeof *q);
    if (!q) {
        snprintf(buf, len, "out of memory checking a reclaim");
        return 0;
    }
    uint32_t nq = per_queue(c, gang_at, gs, n, q, cap);
    int ok = 1;
    for (uint32_t i = 0; i < nq && ok; i++)
        ok = tg_fairshare_may_reclaim(c->fs, c->rq, (uint32_t)q[i].vq, q[i].take, q[i].nt, buf, len);
    free(q);
    return ok;
}

/* The dominant resource of req (largest fraction of capacity); 1 when q is
 * below its fair share in it with req added. */
static int below_share(const struct tg_engine *e, uint32_t q, const struct tg_rq *req, uint32_t n,
                       uint32_t *dom, double *ask)
{
    const struct tg_fairshare *fs = e->tenants.fs;
    double best = -1;
    *ask = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t cap = req[i].res < TG_RES_MAX ? e->tenants.cap[req[i].res] : 0;
        if (cap <= 0 || req[i].res == TG_RES_PODS || req[i].res == TG_RES_EPHEMERAL)
            continue;
        double f = (double)req[i].val / (double)cap;
        if (f > best) {
            best = f;
            *dom = req[i].res;
            *ask = (double)req[i].val;
        }
    }
    return best > 0 &&
           tg_fairshare_allocated(fs, q, *dom) + *ask <= tg_fairshare_share(fs, q, *dom) + EPS;
}

/* Whether queues outside rq's line hold enough above their shares in dom
 * for the ask: each victim queue keeps its share, so at most the sum of
 * their excesses can be freed, besides the room free already (at most the
 * capacity less the top-level queues' allocations). A necessary condition,
 * O(queues): most tries of a balanced cluster stop here, unplanned. */
static int enough_above(const struct rctx *c, double ask)
{
    double excess = 0, held = 0;
    for (uint32_t q = 0; q < tg_fairshare_count(c->fs); q++) {
        double a = tg_fairshare_allocated(c->fs, q, c->dom);
        if (tg_fairshare_parent(c->fs, q) < 0)
            held += a;
        if ((int)q != c->rq && !above_or_same(c->fs, (int)q, c->rq) &&
            !above_or_same(c->fs, c->rq, (int)q) && a > tg_fairshare_share(c->fs, q, c->dom) + EPS)
            excess += a - tg_fairshare_share(c->fs, q, c->dom);
    }
    double room = (double)c->e->tenants.cap[c->dom] - held;
    return excess > EPS && excess + (room > 0 ? room : 0) + EPS >= ask;
}

/* "reclaimed 16 nvidia.com/gpu from queue research (fair share 24,
 * allocated 40) for queue team-a (fair share 24, allocated 8): <plan>". */
static void describe(struct rctx *c, struct tg_preemption *pl)
{
    struct tg_sb b = {0};
    char x[48], y[48], z[48];
    const char *rn = tg_res_name(c->dom);
    uint32_t cap = tg_fairshare_count(c->fs) < pl->nvictims ? tg_fairshare_count(c->fs) : pl->nvictims;
    struct vqsum *q = malloc((cap ? cap : 1) * sizeof *q);
    uint32_t nq = q ? per_queue(c, victim_at, pl->victims, pl->nvictims, q, cap) : 0;
    for (uint32_t i = 0; i < nq; i++) {
        double took = 0;
        for (uint32_t k = 0; k < q[i].nt; k++)
            took += q[i].take[k].res == c->dom ? (double)q[i].take[k].val : 0;
        uint32_t vq = (uint32_t)q[i].vq;
        tg_sb_printf(&b, "%s%s %s from queue %s (fair share %s, allocated %s)",
                     b.len ? "; " : "reclaimed ", tg_fairshare_amount(c->dom, took, x, sizeof x),
                     rn, tg_str(tg_fairshare_name(c->fs, vq)),
                     tg_fairshare_amount(c->dom, tg_fairshare_share(c->fs, vq, c->dom), y, sizeof y),
                     tg_fairshare_amount(c->dom, tg_fairshare_allocated(c->fs, vq, c->dom), z, sizeof z));
    }
    free(q);
    uint32_t rq = (uint32_t)c->rq;
    tg_sb_printf(&b, " for queue %s (fair share %s, allocated %s): %s", tg_str(tg_fairshare_name(c->fs, rq)),
                 tg_fairshare_amount(c->dom, tg_fairshare_share(c->fs, rq, c->dom), x, sizeof x),
                 tg_fairshare_amount(c->dom, tg_fairshare_allocated(c->fs, rq, c->dom), y, sizeof y),
                 pl->reason);
    if (!b.oom)
        snprintf(pl->reason, sizeof pl->reason, "%s", tg_sb_str(&b));
    tg_sb_free(&b);
}

int tg__reclaim_plan(struct tg_engine *e, struct tg_grec *g, const struct tg_preempt_in *base,
                     struct tg_preemption *out, char *why, size_t len)
{
    struct tg_fairshare *fs = e->tenants.fs;
    why[0] = 0;
    out->domain = TG_NONE;
    int rq = fs && g->queue ? tg_fairshare_find(fs, g->queue) : -1;
    if (rq < 0 || !tg_fairshare_usable(fs, (uint32_t)rq))
        return 0;
    struct tg_rq req[TG__MAXREQ];
    uint32_t n = tg__tenants_request(base->gang, req); /* as its queue's limit trimmed it */
    struct rctx c = {e, fs, rq, 0, base->now_ms, e->sched.policy.reclaim_min_runtime_s * 1000, NULL, -1,
                     {0}, {0}, 0};
    double ask;
    char x[48], y[48], z[48];
    if (!below_share(e, (uint32_t)rq, req, n, &c.dom, &ask)) {
        if (ask > 0) /* "no reclaim: queue research would pass its fair share: 8 + 8 > 8 nvidia.com/gpu" */
            snprintf(why, len, "no reclaim: queue %s would pass its fair share: %s + %s > %s %s",
                     tg_str(g->queue),
                     tg_fairshare_amount(c.dom, tg_fairshare_allocated(fs, (uint32_t)rq, c.dom), x, sizeof x),
                     tg_fairshare_amount(c.dom, ask, y, sizeof y),
                     tg_fairshare_amount(c.dom, tg_fairshare_share(fs, (uint32_t)rq, c.dom), z, sizeof z),
                     tg_res_name(c.dom));
        return 0;
    }
    if (!enough_above(&c, ask))
        return 0;
    /* the same search made on the same state found nothing (pmemo.h) */
    struct tg_pmemo_key mk;
    tg__pmemo_key(e, base, 1, c.dom, &mk);
    int memo = e->memo_live && tg_pmemo_usable(&e->pmemo, &mk);
    const char *hit = memo ? tg_pmemo_find(&e->pmemo, &mk) : NULL;
#ifdef TG_PMEMO_VERIFY /* a check build plans anyway and compares (pmemo.h) */
    char was[512];
    int verify = hit != NULL;
    if (hit)
        snprintf(was, sizeof was, "%s", hit), hit = NULL, memo = 0;
#endif
    if (hit) {
        snprintf(why, len, "%s", hit);
        return 0;
    }
    struct tg_reclaim_rule rule = {victim, set_ok, &c};
    struct tg_preempt_in in = *base;
    in.reclaim = &rule;
    int rc = tg_preempt_plan(&e->sched, &e->gangs, &in, out);
    if (rc || out->domain == TG_NONE || !out->nvictims) {
        char refused[256];
        if (strstr(out->reason, "below its fair share"))
            snprintf(why, len, "reclaim: %s", out->reason);
        else if (refusal_text(&c, refused, sizeof refused), refused[0])
            snprintf(why, len, "reclaim: %s", refused);
#ifdef TG_PMEMO_VERIFY
        if (verify)
            tg_pmemo_verify(rc, 1, why, was);
#endif
        if (!rc && memo) /* a minimum runtime reads the clock for every victim */
            tg_pmemo_put(&e->pmemo, &mk, out->timed || c.min_run_ms > 0, why);
        tg_preemption_free(out);
        out->domain = TG_NONE;
        return rc;
    }
#ifdef TG_PMEMO_VERIFY
    if (verify)
        tg_pmemo_verify(rc, 0, why, was);
#endif
    describe(&c, out);
    e->tenants.reclaims++;
    uint64_t k = 0;
    tg_imap_get(&e->tenants.reclaims_by, g->queue, &k);
    if (tg_imap_put(&e->tenants.reclaims_by, g->queue, k + 1))
        e->stats.nomem++;
    return 0;
}
