/* Gangs that ran complete and lost members (scheduler/loss.h has the rules):
 * the daemon's side. Only the leader acts; a standby watches nothing, and a
 * new leader finds every short gang again from the API (tg__loss_tick's
 * first scan), its grace counted from the MemberLoss condition's time.
 *
 *   a member goes (on_members), a decision for the gang's replacements, the
 *   first tick as leader -> tg__loss_check: half-bound (the caller rolls it
 *   back), or short: watched from now on; still short 2 s later (a gang
 *   preempted or deleted whole loses its members in a burst): Event
 *   MemberLoss (Warning), condition MemberLoss True, reason
 *   WaitingForReplacements
 *   each housekeeping tick -> tg__loss_tick, over the watched gangs only:
 *     replacements bound (minMember again)  Event MembersReplaced, condition gone
 *     no member left                        watch ends, condition gone
 *     grace over, gang.onMemberLoss keep    Event MemberLossKept, reason KeptRunning
 *   its replacements fit nowhere in its domain (an UNSCHEDULABLE decision
 *   -> tg__loss_no_room), gang.onNoReplacement requeue, once announced:
 *                                           Event MemberLossRequeued, reason Evicted,
 *                                           every bound member deleted as below; the
 *                                           gang is placed anew whole when its
 *                                           controller recreates them (wait: nothing
 *                                           more; the decision's reason is its Event)
 *     grace over, evict                     Event MemberLossEvicted, reason Evicted,
 *                                           then every bound member deleted with its
 *                                           own terminationGracePeriodSeconds (again
 *                                           every 30 s while any is left)
 * The replacements are the engine's to place: its placement of a gang with
 * bound members stays around them (the anchor: their domain at each level,
 * tightest first), so they land inside the gang's domain when it has room.
 * Config: gang.memberLossGraceSeconds, gang.onMemberLoss, gang.onNoReplacement
 * (read at use). */
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
#include "scheduler/loss.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C "loss"

enum { REDELETE_MS = 30000, SETTLE_MS = 2000 };

/* A short gang being watched. */
struct lost {
    char *key;                          /* owned; the hmap's key */
    int64_t since_ms;                   /* wall ms its loss began */
    int64_t deleted_ms;                 /* EVICTED: wall ms of the last deletes sent */
    int64_t seen_ms;                    /* wall ms this process saw it */
    uint8_t state;                      /* enum tg_pg_loss */
    uint8_t announced;                  /* its MemberLoss Event and condition went */
};

struct tg__loss {
    struct tg_engine *e;
    struct tg_client *c;
    struct tg__report *r;
    struct tg_hmap lost;                /* gang key -> struct lost * */
    uint8_t leading;                    /* the last tick ran as leader */
};

int tg__loss_new(struct tg_engine *e, struct tg_client *c, struct tg__report *r,
                 struct tg__loss **out)
{
    struct tg__loss *l = calloc(1, sizeof *l);
    *out = l;
    if (!l)
        return TG_ENOMEM;
    l->e = e;
    l->c = c;
    l->r = r;
    return 0;
}

static void lost_drop(struct tg__loss *l, struct lost *x)
{
    tg_hmap_del(&l->lost, x->key, strlen(x->key));
    free(x->key);
    free(x);
}

static void forget_all(struct tg__loss *l)
{
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&l->lost, &pos)))
        lost_drop(l, (struct lost *)(uintptr_t)s->val);
}

void tg__loss_free(struct tg__loss **pl)
{
    struct tg__loss *l = *pl;
    if (!l)
        return;
    *pl = NULL;
    forget_all(l);
    tg_hmap_free(&l->lost);
    free(l);
}

/* ---- facts ------------------------------------------------------------------------------- */

int tg__loss_life(const struct tg_grec *g, const struct tg_store *bound)
{
    struct tg_life_facts f = {.bound = g->nmembers, .min = tg_grec_min(g),
                              .status_ours = (uint8_t)tg__report_status_ours(g),
                              .complete = (uint8_t)tg__report_complete(g)};
    /* one that ran is enough: on a cluster with kubelets the first one is */
    for (uint32_t i = 0; !f.status_ours && !f.started && i < g->nmembers; i++) {
        const struct tg_pod *p = tg__bound_pod(bound, g->members[i]->key);
        f.started += p && p->started;
    }
    return tg_life_classify(&f);
}

/* ---- acting ------------------------------------------------------------------------------ */

static void on_deleted(void *ud, const struct tg_resp *r)
{
    (void)ud;
    if (r->err && r->status != 404)
        tg_warn(C, "member-loss eviction delete failed: %s (HTTP %ld)",
                r->msg ? r->msg : tg_strerror(r->err), r->status);
}

/* Every bound member of g deleted with its own grace period (never 0). */
static uint32_t evict_members(struct tg__loss *l, const struct tg_grec *g,
                              const struct tg_store *bound)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->nmembers; i++) {
        const struct tg_usage *u = g->members[i];
        const struct tg_pod *p = tg__bound_pod(bound, u->key);
        if (u->kind != TG_USAGE_BOUND || !p || p->deleting)
            continue;
        if (!tg_api_delete_pod(l->c, tg_str(p->ns), tg_pod_name(p), -1, p->uid, on_deleted, NULL))
            n++;
    }
    tg_metrics_inc(TG_M_PODS_DELETED, n);
    return n;
}

/* The condition and Event of state for g. */
static void tell(struct tg__loss *l, struct tg_grec *g, const struct lost *x, const char *type,
                 const char *reason, const char *what)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%u of %u member(s) bound (minMember %u) after the gang ran "
             "complete; %s", g->nmembers, tg_grec_min(g), tg_grec_min(g), what);
    tg_warn(C, "gang %s: %s", g->key, msg);
    tg__report_loss(l->r, g, x ? x->state : TG_PGLOSS_NONE, x ? x->since_ms : 0, msg, type,
                    reason);
}

/* The grace of x is over or its state came from the API: what it says. */
static void act(struct tg__loss *l, struct tg_grec *g, struct lost *x, const struct tg_store *bound,
                int64_t now)
{
    const struct tg_policy *p = tg_engine_policy(l->e);
    char what[256];
    int64_t due;
    if (x->state == TG_PGLOSS_WAITING && !x->announced) {
        if (now - x->seen_ms < SETTLE_MS)
            return;
        x->announced = 1;
        snprintf(what, sizeof what, "waiting up to %lld s for replacements, then "
                 "gang.onMemberLoss %s%s", (long long)p->member_loss_grace_s,
                 p->on_member_loss == TG_LOSS_EVICT ? "evict" : "keep",
                 p->on_no_replacement == TG_NOROOM_REQUEUE
                     ? "; requeued whole as soon as no replacement fits (gang.onNoReplacement)"
                     : "");
        tell(l, g, x, "Warning", "MemberLoss", what);
    }
    if (x->state == TG_PGLOSS_WAITING) {
        enum tg_loss_step st = tg_loss_step(p, x->since_ms, now, &due);
        if (st == TG_LOSS_STEP_WAIT)
            return;
        x->state = st == TG_LOSS_STEP_EVICT ? TG_PGLOSS_EVICTED : TG_PGLOSS_KEPT;
        if (st == TG_LOSS_STEP_KEEP)
            snprintf(what, sizeof what, "no replacement bound in %lld s: kept running with "
                     "fewer members (gang.onMemberLoss keep)", (long long)p->member_loss_grace_s);
        else
            snprintf(what, sizeof what, "no replacement bound in %lld s: evicting the gang, "
                     "each member with its own grace period (gang.onMemberLoss evict)",
                     (long long)p->member_loss_grace_s);
        tell(l, g, x, "Warning", st == TG_LOSS_STEP_KEEP ? "MemberLossKept" : "MemberLossEvicted",
             what);
        if (st == TG_LOSS_STEP_EVICT) {
            x->deleted_ms = now;
            evict_members(l, g, bound);
        }
        return;
    }
    if (x->state == TG_PGLOSS_EVICTED && now - x->deleted_ms >= REDELETE_MS) {
        x->deleted_ms = now; /* deletes that did not go or did not land */
        evict_members(l, g, bound);
    }
}

/* Starts watching g, a short gang; its state and grace from the API when
 * its PodGroup records them. */
static void watch(struct tg__loss *l, struct tg_grec *g, const struct tg_store *bound, int64_t now)
{
    struct lost *x = calloc(1, sizeof *x);
    if (!x || !(x->key = strdup(g->key)) ||
        tg_hmap_put(&l->lost, x->key, strlen(x->key), (uint64_t)(uintptr_t)x)) {
        if (x)
            free(x->key);
        free(x);
        return; /* out of memory: the next check tries again; nothing is deleted meanwhile */
    }
    const struct tg_podgroup *pg = tg__report_status_ours(g) ? g->pg : NULL;
    x->seen_ms = now;
    x->announced = pg && pg->loss;
    x->state = pg && pg->loss ? pg->loss : TG_PGLOSS_WAITING;
    x->since_ms = pg && pg->loss && pg->loss_since_ms ? pg->loss_since_ms : now / 1000 * 1000;
    if (pg && pg->loss) {
        /* recorded by an earlier leader: on from there (the same grace, the
         * same decision), no new Event */
        tg__report_loss(l->r, g, x->state, x->since_ms, NULL, NULL, NULL);
        x->deleted_ms = now - REDELETE_MS;
        act(l, g, x, bound, now);
        return;
    }
    /* announced by act() once it has stayed short SETTLE_MS: a gang going
     * whole (preempted, deleted by its owner) loses its members in a burst */
}

void tg__loss_no_room(struct tg__loss *l, struct tg_grec *g, const struct tg_store *bound,
                      const char *reason)
{
    uint64_t v;
    if (!tg_hmap_get(&l->lost, g->key, strlen(g->key), &v))
        return;
    struct lost *x = (struct lost *)(uintptr_t)v;
    if (x->state != TG_PGLOSS_WAITING ||
        tg_loss_no_room(tg_engine_policy(l->e), x->announced) != TG_NOROOM_STEP_REQUEUE)
        return; /* wait: the decision's reason (in numbers) goes out as its Event */
    char what[768];
    snprintf(what, sizeof what, "requeued whole (gang.onNoReplacement requeue), each member "
             "evicted with its own grace period: %s", reason);
    x->state = TG_PGLOSS_EVICTED;
    x->deleted_ms = tg__wall_ms();
    tell(l, g, x, "Warning", "MemberLossRequeued", what);
    evict_members(l, g, bound);
}

int tg__loss_check(struct tg__loss *l, struct tg_grec *g, const struct tg_store *bound)
{
    enum tg_life life = tg__loss_life(g, bound);
    uint64_t v;
    if (life == TG_LIFE_SHORT && !tg_hmap_get(&l->lost, g->key, strlen(g->key), &v))
        watch(l, g, bound, tg__wall_ms());
    return life;
}

/* x's gang is whole again (its condition goes), or has no member left (the
 * condition stays as the record of what happened until the gang's next
 * placement starts a new life). */
static void resolved(struct tg__loss *l, struct tg_grec *g, struct lost *x)
{
    if (g && g->nmembers && x->announced)
        tell(l, g, NULL, "Normal", "MembersReplaced", "replacements bound: whole again");
    lost_drop(l, x);
}

void tg__loss_tick(struct tg__loss *l, const struct tg_store *bound, int leading)
{
    if (!leading) {
        if (l->leading)
            forget_all(l); /* a new leader reads it all again from the API */
        l->leading = 0;
        return;
    }
    int64_t now = tg__wall_ms();
    if (!l->leading) { /* just became the leader (or synced): every gang once */
        l->leading = 1;
        uint32_t pos = 0;
        struct tg_grec *g;
        while ((g = tg_engine_gang_next(l->e, &pos)))
            tg__loss_check(l, g, bound);
    }
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&l->lost, &pos))) {
        struct lost *x = (struct lost *)(uintptr_t)s->val;
        struct tg_grec *g = tg_engine_gang(l->e, x->key);
        if (!g || !g->nmembers || g->nmembers >= tg_grec_min(g))
            resolved(l, g, x);
        else
            act(l, g, x, bound, now);
    }
}
