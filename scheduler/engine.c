/* The scheduling flow; see engine.h. */
#include "scheduler/internal.h"
#include "scheduler/elastic.h"
#include "scheduler/subgroup.h"
#include "model/quantity.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/strbuf.h"
#include "util/vec.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE TG_NONE
enum { NO_THRASH_MS = 600000, RESERVE_DOMAINS = 32, RESERVE_MAX_FINISH = 512 };

struct evicted {
    char *victim;                       /* owned: the map key */
    char *by;                           /* preemptor gang key, owned */
    int64_t until_ms;
};

static struct tg_grec *grec_of(struct tg_qent *q)
{
    return (struct tg_grec *)((char *)q - offsetof(struct tg_grec, q));
}

int64_t tg_engine_now(const struct tg_engine *e)
{
    return e->clock.now_ms(e->clock.ud);
}

/* ---- nominations -------------------------------------------------------------------- */

static void noms_remove(struct tg_engine *e, struct tg_grec *g)
{
    for (uint32_t i = 0; i < e->nnoms; i++)
        if (e->noms[i] == g) {
            e->noms[i] = e->noms[--e->nnoms];
            return;
        }
}

/* Deletes g's room-holding records (its nomination stays unless drop). */
static void phantoms_remove(struct tg_engine *e, struct tg_grec *g)
{
    const struct tg_nomination *n = g->q.nom;
    for (uint32_t i = 0; n && i < n->npods; i++) {
        struct tg_usage *u = tg_cluster_usage(&e->sched.cluster, n->pods[i]);
        if (u && u->kind == TG_USAGE_NOMINATED)
            tg_cluster_pod_delete(&e->sched.cluster, n->pods[i]);
    }
}

/* Holds room again for g's unplaced members on the slots of its nomination. */
static void phantoms_restore(struct tg_engine *e, struct tg_grec *g)
{
    const struct tg_nomination *n = g->q.nom;
    if (!n)
        return;
    struct tg_hmap at = {0};
    for (uint32_t i = 0; i < n->npods; i++)
        if (tg_hmap_put(&at, n->pods[i], strlen(n->pods[i]), n->slots[i]))
            break;
    for (uint32_t i = 0; i < g->npending; i++) {
        struct tg_pod *p = g->pending[i];
        uint64_t slot;
        if (!p->node && !tg_cluster_usage(&e->sched.cluster, p->key) &&
            tg_hmap_get(&at, p->key, strlen(p->key), &slot))
            tg_cluster_nominate(&e->sched.cluster, p, (uint32_t)slot);
    }
    tg_hmap_free(&at);
}

/* Ends g's nomination and frees the room it held; wake != 0 when that room
 * goes back to everyone (not to g itself or to a gang taking it). */
static void nomination_drop(struct tg_engine *e, struct tg_grec *g, int wake)
{
    if (!g->q.nom)
        return;
    phantoms_remove(e, g);
    tg_queue_nomination_clear(&g->q);
    noms_remove(e, g);
    if (wake)
        tg_queue_wake(&e->queue);
}

/* Ends g's reservation, if any: the domain opens to the gangs it kept out. */
static void reservation_end(struct tg_engine *e, struct tg_grec *g)
{
    if (!tg_queue_reservation(&e->queue, &g->q))
        return;
    tg_queue_unreserve(&e->queue, &g->q);
    tg_queue_wake(&e->queue);
}

/* 1 when g may take the room n's nomination holds: g's priority is higher
 * and, with tenant queues on, both are of one queue. Between queues
 * priority decides nothing (issue 19): room a reclaim freed stays its
 * reclaimer's, or the victims' higher-priority gangs would take it back at
 * once and be reclaimed again (a loop that evicts the same gang). */
static int outranks(const struct tg_engine *e, const struct tg_grec *g, const struct tg_grec *n)
{
    return n != g && n->priority < g->priority && (!e->tenants.fs || n->queue == g->queue);
}

/* Hides (hide != 0) or shows the room held by nominations g outranks. */
static void lower_noms_hide(struct tg_engine *e, const struct tg_grec *self, int hide)
{
    for (uint32_t i = 0; i < e->nnoms; i++) {
        struct tg_grec *n = e->noms[i];
        if (!outranks(e, self, n) || !n->q.nom)
            continue;
        for (uint32_t k = 0; k < n->q.nom->npods; k++) {
            struct tg_usage *u = tg_cluster_usage(&e->sched.cluster, n->q.nom->pods[k]);
            if (u && u->kind == TG_USAGE_NOMINATED)
                tg_cluster_usage_hide(&e->sched.cluster, u, hide);
        }
    }
}

static int overlap(const struct tg_tree *t, uint32_t a, uint32_t b)
{
    if (a >= t->ndom || b >= t->ndom)
        return 0;
    uint32_t la = t->dom[a].level, lb = t->dom[b].level;
    return la <= lb ? tg_tree_ancestor(t, b, la) == a : tg_tree_ancestor(t, a, lb) == b;
}

/* g took domain d: nominations g outranks there lose their room and plan
 * again. */
static void lower_noms_displaced(struct tg_engine *e, const struct tg_grec *g, uint32_t d)
{
    for (uint32_t i = 0; i < e->nnoms;) {
        struct tg_grec *n = e->noms[i];
        if (outranks(e, g, n) && n->q.nom &&
            overlap(&e->sched.cluster.tree, n->q.nom->domain, d)) {
            nomination_drop(e, n, 0); /* removes n from noms: do not advance */
            e->stats.nominations_dropped++;
            tg_queue_add(&e->queue, &n->q);
            continue;
        }
        i++;
    }
}

/* ---- membership and the queue ---------------------------------------------------- */

static void on_gang_freed(void *ud, struct tg_grec *g)
{
    struct tg_engine *e = ud;
    /* out of the queue, also its deadline (a parked gang keeps one) */
    tg_queue_remove(&e->queue, &g->q);
    noms_remove(e, g);
    if (e->gang_freed)
        e->gang_freed(e->ud, g);
}

static int64_t timeout_ms(const struct tg_engine *e, const struct tg_grec *g)
{
    int64_t s = g->pg && g->pg->timeout_s ? g->pg->timeout_s : e->sched.policy.gang_timeout_s;
    return s * 1000;
}

/* Puts g where its members say: queued when it has members to place. */
static void requeue(struct tg_engine *e, struct tg_grec *g)
{
    tg_queue_update(&e->queue, &g->q, g->priority, g->created_ms);
    if (g->q.state == TG_Q_INFLIGHT)
        return;
    if (tg_grec_unplaced(g) == 0 && !g->q.nom) {
        reservation_end(e, g);
        tg_queue_remove(&e->queue, &g->q);
        tg_gangs_release(&e->gangs, g);
        return;
    }
    if (!g->timed_out && g->q.deadline_ms == INT64_MAX && g->q.state == TG_Q_OUT &&
        tg_queue_set_deadline(&e->queue, &g->q, g->first_seen_ms + timeout_ms(e, g)))
        e->stats.nomem++;
    if (tg_queue_add(&e->queue, &g->q))
        e->stats.nomem++;
}

/* A pending pod moved to another gang (its group label or owner changed). */
static void on_pending_left(void *ud, struct tg_grec *g)
{
    requeue(ud, g);
}

int tg_engine_init(struct tg_engine *e, const struct tg_policy *p, const struct tg_clock *clock)
{
    memset(e, 0, sizeof *e);
    e->clock = *clock;
    e->memo_end = UINT64_MAX;
    int rc = tg_sched_init(&e->sched, p);
    if (rc)
        return rc;
    if ((rc = tg_gangs_init(&e->gangs, &e->sched.cluster))) {
        tg_sched_free(&e->sched);
        return rc;
    }
    e->gangs.freed = on_gang_freed;
    e->gangs.pending_left = on_pending_left;
    e->gangs.ud = e;
    if ((rc = tg__tenants_init(e))) { /* listens after the gang layer */
        tg_gangs_free(&e->gangs);
        tg_sched_free(&e->sched);
        return rc;
    }
    tg_gangs_set_policy(&e->gangs, &e->sched.policy);
    tg_queue_init(&e->queue, &e->clock);
    return 0;
}

void tg_engine_free(struct tg_engine *e)
{
    /* gang records first: their queue entries point into the queue's heaps */
    tg_gangs_free(&e->gangs);
    tg_queue_free(&e->queue);
    tg__tenants_free(e);
    tg_sched_free(&e->sched);
    free(e->noms);
    free(e->pdbs);
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&e->evicted_by, &pos))) {
        struct evicted *v = (struct evicted *)(uintptr_t)s->val;
        free(v->victim);
        free(v->by);
        free(v);
    }
    tg_hmap_free(&e->evicted_by);
    tg_pmemo_free(&e->pmemo);
    memset(e, 0, sizeof *e);
}

void tg_engine_wake(struct tg_engine *e)
{
    tg_queue_wake(&e->queue);
}

/* Every gang's queue order, after priorities were resolved again. */
static void requeue_all(struct tg_engine *e)
{
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&e->gangs.by_key, &pos))) {
        struct tg_grec *g = (struct tg_grec *)(uintptr_t)s->val;
        tg_queue_update(&e->queue, &g->q, g->priority, g->created_ms);
    }
}

int tg_engine_set_policy(struct tg_engine *e, const struct tg_policy *p)
{
    tg__gen_bump(e, TG__GEN_POLICY);
    /* nominated domains are tree ids: a new tree makes them meaningless */
    int same = p->nlevels == e->sched.policy.nlevels;
    for (uint32_t i = 0; same && i < p->nlevels; i++)
        same = p->levels[i].label_id == e->sched.policy.levels[i].label_id;
    if (!same) {
        while (e->nnoms) {
            struct tg_grec *g = e->noms[0];
            nomination_drop(e, g, 0); /* the wake below covers it */
            tg_queue_add(&e->queue, &g->q);
        }
        while (e->queue.nresv)
            tg_queue_unreserve(&e->queue, e->queue.resv[0].owner);
    }
    int rc = tg_sched_set_policy(&e->sched, p);
    tg_gangs_set_policy(&e->gangs, &e->sched.policy); /* peers' levels resolve again */
    requeue_all(e); /* priority.allowPodGroupPriority may have changed priorities */
    tg_queue_wake(&e->queue);
    return rc;
}

/* ---- objects in --------------------------------------------------------------------- */

/* Field by field: struct tg_rq and struct tg_taint have padding, whose bytes
 * the decoder leaves as malloc gave them (a memcmp saw a heartbeat as a
 * change, and woke every waiting gang, depending on the heap). */
static int same_rq(const struct tg_rq *a, uint32_t na, const struct tg_rq *b, uint32_t nb)
{
    if (na != nb)
        return 0;
    for (uint32_t i = 0; i < na; i++)
        if (a[i].res != b[i].res || a[i].val != b[i].val)
            return 0;
    return 1;
}

static int same_taints(const struct tg_taint *a, uint32_t na, const struct tg_taint *b, uint32_t nb)
{
    if (na != nb)
        return 0;
    for (uint32_t i = 0; i < na; i++)
        if (a[i].key != b[i].key || a[i].val != b[i].val || a[i].effect != b[i].effect)
            return 0;
    return 1;
}

/* Can the change from old to n make room or open a node? */
static int node_helps(const struct tg_node_obj *old, const struct tg_node_obj *n)
{
    if (!old)
        return 1;
    if (n->ready != old->ready || n->unschedulable != old->unschedulable)
        return n->ready > old->ready || n->unschedulable < old->unschedulable;
    if (!same_rq(old->alloc, old->nalloc, n->alloc, n->nalloc))
        return 1;
    if (!same_taints(old->taints, old->ntaints, n->taints, n->ntaints))
        return 1;
    if (old->nlabels != n->nlabels ||
        (n->nlabels && memcmp(old->labels, n->labels, n->nlabels * sizeof *n->labels)))
        return 1;
    if ((old->topology == NULL) != (n->topology == NULL) ||
        (n->topology && strcmp(old->topology, n->topology)))
        return 1;
    return 0;
}

int tg_engine_node_set(struct tg_engine *e, struct tg_node_obj *obj)
{
    struct tg_cluster *c = &e->sched.cluster;
    uint32_t name = obj->name, slot = tg_cluster_slot(c, name, 0);
    int helps = node_helps(slot != NONE ? c->nodes[slot].obj : NULL, obj);
    tg__tenants_node(e, slot != NONE ? c->nodes[slot].obj : NULL, -1);
    int rc = tg_cluster_node_set(c, obj);
    slot = tg_cluster_slot(c, name, 0);
    tg__tenants_node(e, slot != NONE ? c->nodes[slot].obj : NULL, 1);
    if (!rc && helps)
        tg_queue_wake(&e->queue);
    return rc;
}

void tg_engine_node_remove(struct tg_engine *e, uint32_t name)
{
    uint32_t slot = tg_cluster_slot(&e->sched.cluster, name, 0);
    tg__tenants_node(e, slot != NONE ? e->sched.cluster.nodes[slot].obj : NULL, -1);
    tg_cluster_node_remove(&e->sched.cluster, name);
}

int tg_engine_pending_set(struct tg_engine *e, struct tg_pod *p)
{
    tg__gen_bump(e, TG__GEN_PENDING);
    if (p->node || tg_pod_terminal(p) || p->deleting) {
        tg_engine_pending_gone(e, p);
        return 0;
    }
    struct tg_grec *g;
    uint32_t before = 0;
    char key[512];
    struct tg_grec *old = tg_gangs_get(&e->gangs, tg_gang_key_of(&e->gangs, p, key, sizeof key));
    if (old)
        before = old->npending;
    int rc = tg_gangs_pending_set(&e->gangs, p, tg_engine_now(e), &g);
    if (rc)
        return rc;
    tg__tenants_pending(e, g, p, 0);
    if (g->npending != before || g->q.state == TG_Q_OUT)
        requeue(e, g);
    else
        tg_queue_update(&e->queue, &g->q, g->priority, g->created_ms);
    return 0;
}

void tg_engine_pending_gone(struct tg_engine *e, const struct tg_pod *p)
{
    tg__gen_bump(e, TG__GEN_PENDING);
    struct tg_grec *g = tg_gangs_pending_delete(&e->gangs, p);
    tg__tenants_pending(e, g, p, 1);
    if (g)
        requeue(e, g);
}

/* ---- wake-ups ------------------------------------------------------------------------ */

struct freed {
    const struct tg_engine *e;
    uint32_t slot;
    const struct tg_usage **pods;       /* the node's placed pods, and their unit's priority */
    int32_t *prio;
    uint32_t npods;
};

static int64_t req_of(const struct tg_usage *u, uint32_t res)
{
    for (uint8_t i = 0; i < u->nreq; i++)
        if (u->req[i].res == res)
            return u->req[i].val;
    return 0;
}

/* Room freed on one node may help a waiting gang only if it now has, for
 * every resource all its unplaced members ask, at least the least of them
 * (a necessary condition for one member to fit: never misses a gang that
 * could use it) -- counting, for a gang that may preempt, what pods of lower
 * priority hold there. Nominated gangs always look again. */
static int freed_may_help(void *ud, const struct tg_qent *q)
{
    const struct freed *f = ud;
    const struct tg_cluster *c = &f->e->sched.cluster;
    const struct tg_grec *g = (const struct tg_grec *)((const char *)q - offsetof(struct tg_grec, q));
    if (q->state == TG_Q_WAITING || !g->nhint)
        return 1;
    int preempt = f->e->sched.policy.preemption && !g->preempt_never;
    for (uint8_t i = 0; i < g->nhint; i++) {
        uint32_t r = g->hint[i].res;
        int64_t room = tg_alloc(c, f->slot, r) - tg_used(c, f->slot, r);
        for (uint32_t k = 0; preempt && room < g->hint[i].val && k < f->npods; k++)
            if (f->prio[k] < g->priority)
                room += req_of(f->pods[k], r);
        if (room < g->hint[i].val)
            return 0;
    }
    return 1;
}

static void room_freed(struct tg_engine *e, uint32_t slot)
{
    const struct tg_cluster *c = &e->sched.cluster;
    if (slot == NONE || slot >= c->nslots || !c->nodes[slot].obj)
        return;
    struct freed f = {e, slot, NULL, NULL, 0};
    uint32_t n = c->nodes[slot].npods + 1;
    f.pods = malloc(n * sizeof *f.pods);
    f.prio = malloc(n * sizeof *f.prio);
    if (!f.pods || !f.prio) {
        free(f.pods);
        free(f.prio);
        tg_queue_wake(&e->queue); /* no memory to be choosy: everyone looks */
        return;
    }
    for (const struct tg_usage *u = c->nodes[slot].pods; u && f.npods < n; u = u->nnext) {
        if (u->kind != TG_USAGE_BOUND || u->deleting || u->hidden)
            continue;
        const struct tg_grec *g = tg_gangs_of_usage(&e->gangs, u);
        f.pods[f.npods] = u;
        f.prio[f.npods++] = g && u->gpos != UINT32_MAX ? g->priority
                                                        : tg_gangs_usage_priority(&e->gangs, u);
    }
    tg_queue_wake_some(&e->queue, freed_may_help, &f);
    free(f.pods);
    free(f.prio);
}

/* The elementwise least request of the gang's unplaced members, over the
 * resources every one of them asks. */
static void set_hint(struct tg_grec *g, const struct tg_gang *v)
{
    g->nhint = 0;
    if (!v->npods)
        return;
    const struct tg_pod *p0 = v->pods[0];
    for (uint8_t i = 0; i < p0->nreq && g->nhint < TG_GANG_HINT; i++) {
        struct tg_rq least = p0->req[i];
        int all = 1;
        for (uint32_t k = 1; k < v->npods && all; k++) {
            const struct tg_pod *p = v->pods[k];
            int64_t val = -1;
            for (uint8_t j = 0; j < p->nreq; j++)
                if (p->req[j].res == least.res)
                    val = p->req[j].val;
            if (val < 0)
                all = 0;
            else if (val < least.val)
                least.val = val;
        }
        if (all && least.val > 0)
            g->hint[g->nhint++] = least;
    }
    if (!g->nhint) { /* asks nothing in common: any room may help, mark known */
        g->hint[0] = (struct tg_rq){TG_RES_PODS, 0};
        g->nhint = 1;
    }
}

int tg_engine_bound_set(struct tg_engine *e, const struct tg_pod *p)
{
    tg__gen_bump(e, TG__GEN_PLACED);
    struct tg_cluster *c = &e->sched.cluster;
    struct tg_usage *u = tg_cluster_usage(c, p->key);
    int held = u && u->kind != TG_USAGE_NOMINATED;
    uint32_t slot = held ? u->slot : NONE;
    int rc = tg_cluster_pod_update(c, p);
    u = tg_cluster_usage(c, p->key);
    if (u && u->kind == TG_USAGE_BOUND && !u->start_ms)
        u->start_ms = tg_engine_now(e); /* no startTime (yet): running from now, as seen here */
    if (held && !(u && u->kind != TG_USAGE_NOMINATED))
        room_freed(e, slot); /* finished: its room is free */
    return rc;
}

void tg_engine_bound_gone(struct tg_engine *e, const char *key)
{
    tg__gen_bump(e, TG__GEN_PLACED);
    struct tg_usage *u = tg_cluster_usage(&e->sched.cluster, key);
    if (!u || u->kind == TG_USAGE_NOMINATED)
        return;
    uint32_t slot = u->slot;
    tg_cluster_pod_delete(&e->sched.cluster, key);
    room_freed(e, slot);
}

void tg_engine_forget(struct tg_engine *e, const char *key)
{
    tg__gen_bump(e, TG__GEN_PLACED);
    struct tg_usage *u = tg_cluster_usage(&e->sched.cluster, key);
    if (u && u->kind == TG_USAGE_ASSUMED) {
        uint32_t slot = u->slot;
        tg_cluster_pod_delete(&e->sched.cluster, key);
        room_freed(e, slot);
    }
}

/* The fields of a PodGroup that placement and the queue read, and its whole
 * spec through metadata.generation, which the API server moves on every
 * spec edit (a peer's sub-group policy or networkTopology, our own
 * spec.subGroups / subGroupSize / subGroupTopology) and never on a status
 * write (the PodGroup CRDs have the status subresource). An object without
 * one (simulate's files) wakes only through the fields listed. */
static int pg_same_spec(const struct tg_podgroup *a, const struct tg_podgroup *b)
{
    return a->generation == b->generation &&
           a->min_member == b->min_member && a->max_member == b->max_member &&
           a->timeout_s == b->timeout_s &&
           a->priority == b->priority && a->has_priority == b->has_priority &&
           a->prio_class == b->prio_class && a->strategy == b->strategy &&
           a->required == b->required && a->preferred == b->preferred &&
           a->created_ms == b->created_ms && a->queue == b->queue;
}

void tg_engine_podgroup_set(struct tg_engine *e, const struct tg_podgroup *pg)
{
    tg__gen_bump(e, TG__GEN_GANGS);
    /* a status-only update (the daemon's own status patches come back so)
     * changes nothing the gang is waiting for: keep the pointer, no wake */
    const struct tg_podgroup *old = tg_gangs_podgroup(&e->gangs, pg->key);
    int same = old && pg_same_spec(old, pg);
    struct tg_grec *g = tg_gangs_podgroup_set(&e->gangs, pg);
    if (g && !same) {
        if (e->tenants.fs)
            tg__tenants_resolve(e, g);
        requeue(e, g);
    }
}

void tg_engine_podgroup_delete(struct tg_engine *e, const char *key)
{
    tg__gen_bump(e, TG__GEN_GANGS);
    struct tg_grec *g = tg_gangs_podgroup_delete(&e->gangs, key);
    if (g && e->tenants.fs)
        tg__tenants_resolve(e, g);
    if (g)
        requeue(e, g);
}

int tg_engine_pclass_set(struct tg_engine *e, uint32_t name, const struct tg_pclass *pc)
{
    tg__gen_bump(e, TG__GEN_GANGS);
    int rc = tg_gangs_pclass_set(&e->gangs, name, pc);
    requeue_all(e);
    /* the gangs parked for want of this class (tg_grec_unresolved) */
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&e->gangs.by_key, &pos))) {
        struct tg_grec *g = (struct tg_grec *)(uintptr_t)s->val;
        if (g->q.state == TG_Q_OUT && tg_grec_unplaced(g) && g->pg && g->pg->prio_class == name &&
            tg_queue_add(&e->queue, &g->q))
            e->stats.nomem++;
    }
    return rc;
}

void tg_engine_pclass_delete(struct tg_engine *e, uint32_t name)
{
    tg__gen_bump(e, TG__GEN_GANGS);
    tg_gangs_pclass_delete(&e->gangs, name);
    requeue_all(e);
}

int tg_engine_pdb_set(struct tg_engine *e, const struct tg_pdb *pdb)
{
    tg__gen_bump(e, TG__GEN_PDBS);
    for (uint32_t i = 0; i < e->npdbs; i++)
        if (!strcmp(e->pdbs[i]->key, pdb->key)) {
            e->pdbs[i] = pdb;
            return 0;
        }
    if (tg_grow((void **)&e->pdbs, &e->cappdbs, e->npdbs, sizeof *e->pdbs))
        return TG_ENOMEM;
    e->pdbs[e->npdbs++] = pdb;
    return 0;
}

void tg_engine_pdb_delete(struct tg_engine *e, const char *key)
{
    tg__gen_bump(e, TG__GEN_PDBS);
    for (uint32_t i = 0; i < e->npdbs; i++)
        if (!strcmp(e->pdbs[i]->key, key)) {
            e->pdbs[i] = e->pdbs[--e->npdbs];
            return;
        }
}

/* ---- namespaces, volumes, claims ------------------------------------------------------ */

static int woke(struct tg_engine *e, int rc)
{
    tg_queue_wake(&e->queue);
    return rc;
}

int tg_engine_namespace_set(struct tg_engine *e, struct tg_namespace *n)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    return woke(e, tg_objstore_namespace_set(&e->sched.store, n));
}

void tg_engine_namespace_delete(struct tg_engine *e, uint32_t name)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    tg_objstore_namespace_delete(&e->sched.store, name);
    woke(e, 0);
}

int tg_engine_pv_set(struct tg_engine *e, struct tg_pv *v)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    return woke(e, tg_objstore_pv_set(&e->sched.store, v));
}

void tg_engine_pv_delete(struct tg_engine *e, uint32_t name)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    tg_objstore_pv_delete(&e->sched.store, name);
    woke(e, 0);
}

int tg_engine_pvc_set(struct tg_engine *e, struct tg_pvc *c)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    return woke(e, tg_objstore_pvc_set(&e->sched.store, c));
}

void tg_engine_pvc_delete(struct tg_engine *e, uint32_t ns, uint32_t name)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    tg_objstore_pvc_delete(&e->sched.store, ns, name);
    woke(e, 0);
}

int tg_engine_sc_set(struct tg_engine *e, struct tg_storageclass *c)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    return woke(e, tg_objstore_sc_set(&e->sched.store, c));
}

void tg_engine_sc_delete(struct tg_engine *e, uint32_t name)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    tg_objstore_sc_delete(&e->sched.store, name);
    woke(e, 0);
}

int tg_engine_claim_set(struct tg_engine *e, struct tg_rclaim *c)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    return woke(e, tg_objstore_claim_set(&e->sched.store, c));
}

void tg_engine_claim_delete(struct tg_engine *e, uint32_t ns, uint32_t name)
{
    tg__gen_bump(e, TG__GEN_OBJECTS);
    tg_objstore_claim_delete(&e->sched.store, ns, name);
    woke(e, 0);
}

/* ---- no thrash -------------------------------------------------------------------------- */

static const char *evicted_by(struct tg_engine *e, const char *key)
{
    uint64_t v;
    if (!tg_hmap_get(&e->evicted_by, key, strlen(key), &v))
        return NULL;
    struct evicted *x = (struct evicted *)(uintptr_t)v;
    if (x->until_ms > tg_engine_now(e))
        return x->by;
    tg_hmap_del(&e->evicted_by, x->victim, strlen(x->victim));
    free(x->victim);
    free(x->by);
    free(x);
    return NULL;
}

static void note_evicted(struct tg_engine *e, const char *victim, const char *by)
{
    uint64_t v;
    struct evicted *x;
    if (tg_hmap_get(&e->evicted_by, victim, strlen(victim), &v)) {
        x = (struct evicted *)(uintptr_t)v;
        char *nb = strdup(by);
        if (!nb)
            return;
        free(x->by);
        x->by = nb;
    } else {
        if (!(x = calloc(1, sizeof *x)) || !(x->victim = strdup(victim)) || !(x->by = strdup(by)) ||
            tg_hmap_put(&e->evicted_by, x->victim, strlen(x->victim), (uint64_t)(uintptr_t)x)) {
            if (x) {
                free(x->victim);
                free(x->by);
            }
            free(x);
            return;
        }
    }
    x->until_ms = tg_engine_now(e) + NO_THRASH_MS;
}

/* ---- reservations -------------------------------------------------------------------------- */

/* Blocks for g: domains reserved for other gangs g does not outrank. */
static void set_blocks(struct tg_engine *e, const struct tg_grec *g)
{
    struct tg_sched *s = &e->sched;
    s->nblocks = 0;
    for (uint32_t i = 0; i < e->queue.nresv && s->nblocks < TG_MAX_BLOCKS; i++) {
        const struct tg_reservation *r = &e->queue.resv[i];
        if (r->owner == &g->q || outranks(e, g, grec_of(r->owner)))
            continue;
        s->blocks[s->nblocks++] = (struct tg_block){r->domain, tg_intern(r->owner->key)};
    }
}

/* The first extended resource g asks for (else cpu): what "free" counts. */
static uint32_t main_resource(const struct tg_gang *v)
{
    const struct tg_pod *p = v->npods ? v->pods[0] : NULL;
    for (uint8_t i = 0; p && i < p->nreq; i++)
        if (p->req[i].res >= TG_RES_NFIXED)
            return p->req[i].res;
    return TG_RES_CPU;
}

static int domain_room(const struct tg_cluster *c, uint32_t d, uint32_t res, int64_t *freev,
                       int64_t *total, uint32_t *pods)
{
    *freev = *total = 0;
    *pods = 0;
    uint32_t *slots = malloc((c->tree.nslots + 1) * sizeof *slots);
    if (!slots)
        return TG_ENOMEM;
    uint32_t n = tg_tree_slots_under(&c->tree, d, slots);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = slots[i];
        if (!c->nodes[slot].obj)
            continue;
        int64_t a = tg_alloc(c, slot, res), u = tg_used(c, slot, res);
        *total += a;
        *freev += a > u ? a - u : 0;
        *pods += c->nodes[slot].npods;
    }
    free(slots);
    return 0;
}

/* Where g misses the least among the domains that would hold it empty. */
static int choose_reserve(struct tg_engine *e, const struct tg_gang *v, uint32_t *dom, uint32_t *finish)
{
    struct tg_cluster *c = &e->sched.cluster;
    int required, preferred;
    char err[256];
    *dom = NONE;
    *finish = 0;
    if (tg_gang_levels(&e->sched.policy, v->pg, &required, &preferred, err, sizeof err))
        return 0;
    struct tg_whatif *w;
    int rc = tg_whatif_begin(&e->sched, v, &w);
    if (rc)
        return rc;
    struct tg_usage **all = malloc((c->usage.len + 1) * sizeof *all);
    uint32_t nall = 0, doms[RESERVE_DOMAINS], nd = 0;
    if (!all) {
        tg_whatif_end(&w);
        return TG_ENOMEM;
    }
    uint32_t pos = 0;
    const struct tg_hslot *hs;
    while ((hs = tg_hmap_next(&c->usage, &pos))) {
        struct tg_usage *u = (struct tg_usage *)(uintptr_t)hs->val;
        if (!u->hidden) {
            all[nall++] = u;
            tg_whatif_hide(w, u, 1);
        }
    }
    for (int lvl = preferred; lvl >= required && !nd; lvl--)
        nd = tg_whatif_domains(w, (uint32_t)lvl, doms, RESERVE_DOMAINS);
    for (uint32_t i = 0; i < nall; i++)
        tg_whatif_hide(w, all[i], 0);
    uint64_t besth = 0;
    for (uint32_t i = 0; i < nd; i++) {
        uint64_t h = tg_whatif_holds(w, doms[i]);
        if (*dom == NONE || h > besth) {
            *dom = doms[i];
            besth = h;
        }
    }
    if (*dom != NONE) {
        /* pods that must finish: the biggest holders first, until it fits */
        uint32_t nin = 0;
        int ok = 0;
        for (uint32_t i = 0; i < nall; i++)
            if (overlap(&c->tree, c->tree.leaf[all[i]->slot], *dom))
                all[nin++] = all[i];
        for (uint32_t i = 1; i < nin; i++) { /* insertion sort by requests, biggest first */
            struct tg_usage *x = all[i];
            int64_t kx = 0;
            for (uint8_t r = 0; r < x->nreq; r++)
                kx += x->req[r].res >= TG_RES_NFIXED ? x->req[r].val << 20 : x->req[r].val >> 10;
            uint32_t j = i;
            for (; j > 0; j--) {
                int64_t ky = 0;
                for (uint8_t r = 0; r < all[j - 1]->nreq; r++)
                    ky += all[j - 1]->req[r].res >= TG_RES_NFIXED ? all[j - 1]->req[r].val << 20
                                                                 : all[j - 1]->req[r].val >> 10;
                if (ky >= kx)
                    break;
                all[j] = all[j - 1];
            }
            all[j] = x;
        }
        uint32_t k = 0;
        while (!rc && k < nin && k < RESERVE_MAX_FINISH) {
            if ((rc = tg_whatif_fits(w, *dom, &ok, NULL)) || ok)
                break;
            tg_whatif_hide(w, all[k++], 1);
        }
        for (uint32_t i = 0; i < k; i++)
            tg_whatif_hide(w, all[i], 0);
        *finish = k;
    }
    free(all);
    tg_whatif_end(&w);
    return rc;
}

/* Reserves a domain for g if it is the starving head; fills d->reason. */
static int maybe_reserve(struct tg_engine *e, struct tg_grec *g, const struct tg_gang *v,
                         struct tg_decision *d)
{
    const struct tg_policy *p = &e->sched.policy;
    int64_t now = tg_engine_now(e);
    if (!p->reserve_after_s || now - g->first_seen_ms < p->reserve_after_s * 1000 ||
        g->timed_out || tg_queue_head(&e->queue) != &g->q)
        return 0;
    const struct tg_reservation *r = tg_queue_reservation(&e->queue, &g->q);
    uint32_t dom = r ? r->domain : NONE, finish = 0;
    int rc;
    if (!r) {
        if ((rc = choose_reserve(e, v, &dom, &finish)) || dom == NONE)
            return rc;
        if (tg_queue_reserve(&e->queue, &g->q, dom))
            return 0; /* full: the earlier reservations stand */
        e->stats.reservations++;
        d->reservation_new = 1;
    }
    d->reserved = 1;
    uint32_t res = main_resource(v), pods;
    int64_t fr, total;
    if ((rc = domain_room(&e->sched.cluster, dom, res, &fr, &total, &pods)))
        return rc;
    char path[512], q1[32], q2[32];
    tg_tree_path(&e->sched.cluster.tree, dom, path, sizeof path);
    size_t l = strlen(d->reason);
    snprintf(d->reason + l, sizeof d->reason - l,
             "; reserving %s for %s: %s of %s %s free, waiting for %s%u pod(s) to finish",
             path, g->key, tg_quantity_format(fr, tg_res_is_milli(res), q1, sizeof q1),
             tg_quantity_format(total, tg_res_is_milli(res), q2, sizeof q2), tg_res_name(res),
             finish >= RESERVE_MAX_FINISH ? "more than " : "", r ? pods : finish);
    return 0;
}

/* ---- the flow ------------------------------------------------------------------------------ */

void tg_decision_free(struct tg_decision *d)
{
    free(d->view.pods);
    tg_result_free(&d->result);
    tg_preemption_free(&d->preemption);
    memset(d, 0, sizeof *d);
}

int64_t tg_engine_next_due(const struct tg_engine *e)
{
    return tg_queue_next_due(&e->queue);
}

const struct tg_reservation *tg_engine_reservation(const struct tg_engine *e,
                                                   const struct tg_grec *g)
{
    return tg_queue_reservation(&e->queue, &g->q);
}

static int victims_remaining(struct tg_engine *e, const struct tg_nomination *n)
{
    for (uint32_t i = 0; i < n->nvictims; i++)
        if (tg_cluster_usage(&e->sched.cluster, n->victims[i]))
            return 1;
    return 0;
}

/* Records the preemption in g's nomination and holds its room. */
static int nominate(struct tg_engine *e, struct tg_grec *g, const struct tg_gang *v,
                    const struct tg_preemption *pl)
{
    struct tg_nomination *n = calloc(1, sizeof *n);
    uint32_t nvp = 0;
    for (uint32_t i = 0; i < pl->nvictims; i++)
        nvp += pl->victims[i].npods;
    if (!n || !(n->pods = calloc(v->npods + 1, sizeof *n->pods)) ||
        !(n->slots = calloc(v->npods + 1, sizeof *n->slots)) ||
        !(n->victims = calloc(nvp + pl->nleaving + 1, sizeof *n->victims)))
        goto fail;
    n->domain = pl->domain;
    n->since_ms = tg_engine_now(e);
    for (uint32_t i = 0; i < v->npods; i++) {
        if (pl->slots[i] == NONE)
            continue;
        if (!(n->pods[n->npods] = strdup(v->pods[i]->key)))
            goto fail;
        n->slots[n->npods++] = pl->slots[i];
    }
    for (uint32_t i = 0; i < pl->nvictims; i++) {
        const struct tg_victim *vi = &pl->victims[i];
        uint32_t k = vi->gang ? vi->gang->nmembers : 1;
        for (uint32_t j = 0; j < k; j++) {
            const struct tg_usage *u = vi->gang ? vi->gang->members[j] : vi->pod;
            if (!(n->victims[n->nvictims] = strdup(u->key)))
                goto fail;
            n->nvictims++;
        }
        if (vi->gang)
            note_evicted(e, vi->gang->key, g->key);
    }
    for (uint32_t i = 0; i < pl->nleaving; i++) /* Terminating: waited for like victims */
        if (!(n->victims[n->nvictims++] = strdup(pl->leaving[i]->key)))
            goto fail;
    if (!g->q.nom) {
        if (tg_grow((void **)&e->noms, &e->capnoms, e->nnoms, sizeof *e->noms))
            goto fail;
        e->noms[e->nnoms++] = g;
    }
    tg_queue_nominate(&e->queue, &g->q, n);
    for (uint32_t i = 0; i < v->npods; i++)
        if (pl->slots[i] != NONE)
            tg_cluster_nominate(&e->sched.cluster, v->pods[i], pl->slots[i]);
    return 0;
fail:
    tg_nomination_free(&n);
    return TG_ENOMEM;
}

/* Builds the placement view of g into d. */
static int view(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d)
{
    free(d->view.pods);
    struct tg_pod **pods = malloc((g->npending + 1) * sizeof *pods);
    if (!pods)
        return TG_ENOMEM;
    tg_grec_view(g, &e->sched.cluster, pods, &d->view);
    return 0;
}

/* One placement attempt of g (within its nomination's domain when it has
 * one). Leaves d->result; 1 when placed. */
static int attempt(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d, int *placed)
{
    *placed = 0;
    tg_result_free(&d->result);
    if (g->q.nom)
        d->view.within = g->q.nom->domain;
    int rc = tg_sched_gang(&e->sched, &d->view, &d->result);
    if (!rc && d->result.status == TG_GANG_SCHEDULED)
        *placed = 1;
    return rc;
}

/* An unschedulable gang is tried again on a wake that may help, and in any
 * case after the unschedulable flush (60 s). Two moments of its own must not
 * wait for either: its timeout, and, for the queue's head, the point it may
 * reserve room (reserveAfterSeconds after it was first seen: a starving gang
 * is one that the room freed around it never helps, so no wake comes for
 * it). Its queue deadline (which brings it back once) is the earlier of the
 * two still ahead; set only to an earlier time than it holds. */
static void arm_deadline(struct tg_engine *e, struct tg_grec *g)
{
    const struct tg_policy *p = &e->sched.policy;
    int64_t now = tg_engine_now(e), at = INT64_MAX;
    if (g->timed_out)
        return;
    /* only the head may reserve (maybe_reserve): a try at that point is
     * wasted on any other gang */
    if (p->reserve_after_s && tg_queue_head(&e->queue) == &g->q &&
        !tg_queue_reservation(&e->queue, &g->q)) {
        int64_t r = g->first_seen_ms + p->reserve_after_s * 1000;
        if (r > now)
            at = r;
    }
    int64_t t = g->first_seen_ms + timeout_ms(e, g);
    if (t > now && t < at)
        at = t;
    if (at < g->q.deadline_ms && tg_queue_set_deadline(&e->queue, &g->q, at))
        e->stats.nomem++;
}

/* g was placed (d->result): it leaves the queue for its binds. */
static int place_done(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d)
{
    struct tg_queue *q = &e->queue;
    d->kind = TG_D_PLACE;
    d->must = tg_gang_must(&d->view);
    lower_noms_displaced(e, g, d->result.domain);
    nomination_drop(e, g, 0);
    reservation_end(e, g);
    tg_queue_set_deadline(q, &g->q, INT64_MAX);
    g->timed_out = 0;
    e->stats.placed++;
    return tg_queue_done(q, &g->q, TG_QDONE_PLACED);
}

/* ---- a decision: gate, place, reclaim/preempt, reserve ------------------------------
 *
 * decide() runs the steps in order on one popped gang. Each step either
 * decides (sets d->kind, and returns what tg_queue_done or its planning
 * returned) or leaves d->kind TG_D_NONE for the next step; a step returns
 * TG_ENOMEM when it could not finish (the gang is requeued with backoff).
 * gate runs before the model is touched; place, preempt and reserve run with
 * g's own held room removed and lower nominations hidden (decide puts both
 * back). */

/* g has been waiting past its timeout with fewer than minMember placed:
 * note it once (the daemon rolls it back), and keep its deadline armed. */
static void gate_timeout(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d, int64_t now)
{
    uint32_t min = tg_grec_min(g);
    if (!g->timed_out && g->nmembers < min && now - g->first_seen_ms >= timeout_ms(e, g)) {
        g->timed_out = 1;
        d->timed_out = 1;
        e->stats.timeouts++;
        reservation_end(e, g);
    }
    /* brought back by the point it may reserve room: its timeout is ahead */
    if (g->q.deadline_ms == INT64_MAX && g->nmembers < min)
        arm_deadline(e, g);
}

/* Whether g may be tried at all: its definition resolves, its PodGroup
 * exists and names known levels, enough members are here. Decides INVALID
 * or WAITING when not. */
static int gate(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d, int64_t now)
{
    struct tg_queue *q = &e->queue;
    gate_timeout(e, g, d, now);
    int bad;
    if (tg_grec_unresolved(g, &bad, d->reason, sizeof d->reason)) { /* issue 9: gang.h */
        d->kind = bad ? TG_D_INVALID : TG_D_WAITING;
        return tg_queue_done(q, &g->q, bad ? TG_QDONE_UNSCHEDULABLE : TG_QDONE_PARKED);
    }
    if (g->group && !g->pg) {
        d->kind = TG_D_INVALID;
        snprintf(d->reason, sizeof d->reason, "PodGroup %s does not exist (pods labelled %s=%s wait for it)",
                 g->key, TG_LABEL_POD_GROUP, tg_str(g->group));
        /* its PodGroup's arrival requeues it: no backoff to wait out then (the
         * pods and the PodGroup come on two watches, in either order). With
         * members bound it stays queued, for its timeout. */
        return tg_queue_done(q, &g->q, g->nmembers ? TG_QDONE_UNSCHEDULABLE : TG_QDONE_PARKED);
    }
    int rq, pf;
    char err[512];
    if (tg_gang_levels(&e->sched.policy, g->pg, &rq, &pf, err, sizeof err)) {
        d->kind = TG_D_INVALID;
        snprintf(d->reason, sizeof d->reason, "PodGroup %s: %s", g->key, err);
        return tg_queue_done(q, &g->q, TG_QDONE_UNSCHEDULABLE);
    }
    uint32_t unplaced = tg_grec_unplaced(g), min = tg_grec_min(g);
    if (unplaced + g->nmembers < min) {
        d->kind = TG_D_WAITING;
        snprintf(d->reason, sizeof d->reason,
                 "waiting for members: %u pending + %u bound < minMember %u", unplaced,
                 g->nmembers, min);
        /* with members bound it stays queued: its timeout must come (the
         * daemon then deletes them) */
        return tg_queue_done(q, &g->q, g->nmembers ? TG_QDONE_UNSCHEDULABLE : TG_QDONE_PARKED);
    }
    /* its queue exists (issue 19, scheduler/tenants.c); the limits are
     * place()'s: they count what this decision may place */
    switch (tg__tenants_gate(e, g, d->reason, sizeof d->reason)) {
    case TG_TENANT_MISSING: /* as a missing PodGroup: the Queue's arrival requeues it */
        d->kind = TG_D_INVALID;
        return tg_queue_done(q, &g->q, g->nmembers ? TG_QDONE_UNSCHEDULABLE : TG_QDONE_PARKED);
    default:
        return 0;
    }
}

/* An elastic gang with minMember placed that did not grow now (elastic.h):
 * UNSCHEDULABLE until room frees (why: the placement's reason; NULL: it is at
 * its desired size); it neither preempts nor reserves for its extras. */
static int grow_wait(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d, const char *why)
{
    char r[sizeof d->reason];
    tg_elastic_explain(g, why, r, sizeof r);
    memcpy(d->reason, r, sizeof r);
    d->kind = TG_D_UNSCHEDULABLE;
    return tg_queue_done(&e->queue, &g->q, TG_QDONE_UNSCHEDULABLE);
}

/* Its queue's limit (or an ancestor's) holds g back now (tenants.c, the
 * reason in d->reason): UNSCHEDULABLE; any room freed may be its queue's:
 * every freed room wakes it. */
static int limit_wait(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d)
{
    phantoms_restore(e, g);
    g->nhint = 0;
    d->kind = TG_D_UNSCHEDULABLE;
    e->stats.unschedulable++;
    return tg_queue_done(&e->queue, &g->q, TG_QDONE_UNSCHEDULABLE);
}

/* Places g (inside its nomination's domain when it holds one). Decides
 * PLACE, or NOMINATED while its victims are still leaving (then the model is
 * already put back: decide returns at once); else leaves the placement's
 * reason in d->reason. */
static int place(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d)
{
    int rc, placed = 0;
    if ((rc = view(e, g, d)))
        return rc;
    tg_elastic_cap(g, &d->view); /* at most its desired size (elastic.h) */
    /* minSubGroups: short sub-groups wait (subgroup.h) */
    tg_subgroup_min_cut(&d->view, 0, NULL, 0);
    if (!d->view.npods && tg_elastic_growing(g))
        return grow_wait(e, g, d, NULL);
    /* queue admission: what its queue's limits allow of it (issue 19) */
    if (tg__tenants_cap(e, g, &d->view, d->reason, sizeof d->reason))
        return limit_wait(e, g, d);
    set_hint(g, &d->view);
    if ((rc = attempt(e, g, d, &placed)))
        return rc;
    /* an elastic gang with sub-groups that does not fit at its desired
     * size starts at minMember where that fits (elastic.h); the view stays
     * cut for what follows (a nomination's domain, preemption) */
    if (!placed && tg_elastic_fallback(g, &d->view) && (rc = attempt(e, g, d, &placed)))
        return rc;
    /* with minSubGroups, the whole sub-groups beyond it are extras: those
     * the placement found room for start (by name when it found none) */
    if (!placed &&
        tg_subgroup_min_cut(&d->view, 1, d->result.sgkeep, d->result.nsgkeep) &&
        (rc = attempt(e, g, d, &placed)))
        return rc;
    if (!placed && g->q.nom) {
        if (victims_remaining(e, g->q.nom)) {
            d->kind = TG_D_NOMINATED;
            snprintf(d->reason, sizeof d->reason, "waiting for %u preempted pod(s) to leave; %s",
                     g->q.nom->nvictims, d->result.reason);
            lower_noms_hide(e, g, 0);
            phantoms_restore(e, g);
            e->sched.nblocks = 0;
            return tg_queue_done(&e->queue, &g->q, TG_QDONE_WAITING);
        }
        /* the victims are gone and it still does not fit there: from scratch */
        nomination_drop(e, g, 1);
        d->view.within = NONE;
        if ((rc = attempt(e, g, d, &placed)))
            return rc;
    }
    if (placed)
        return place_done(e, g, d);
    snprintf(d->reason, sizeof d->reason, "%s", d->result.reason);
    return 0;
}

/* The preemption g's plan made: it holds the domain's room (nominated) and
 * its victims are evicted (PREEMPT), or it waits for pods already leaving. */
static int preempt_nominate(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d)
{
    int rc;
    lower_noms_displaced(e, g, d->preemption.domain);
    if ((rc = nominate(e, g, &d->view, &d->preemption)))
        return rc;
    d->kind = d->preemption.nvictims ? TG_D_PREEMPT : TG_D_NOMINATED;
    snprintf(d->reason, sizeof d->reason, "%s%s",
             d->preemption.reclaim ? "reclaiming: "
             : d->preemption.nvictims ? "preempting in " : "waiting in ",
             d->preemption.reason);
    if (d->preemption.nvictims) {
        e->stats.preemptions++;
        for (uint32_t i = 0; i < d->preemption.nvictims; i++) {
            e->stats.victim_gangs += d->preemption.victims[i].gang != NULL;
            e->stats.victim_pods += d->preemption.victims[i].npods;
        }
    }
    return tg_queue_done(&e->queue, &g->q, TG_QDONE_WAITING);
}

void tg__pmemo_key(struct tg_engine *e, const struct tg_preempt_in *in, int reclaim, uint32_t dom,
                   struct tg_pmemo_key *k)
{
    const struct tg_cluster *c = &e->sched.cluster;
    memset(k, 0, sizeof *k);
    _Static_assert(TG__GEN_N + 5 <= TG_PMEMO_NGEN, "the memo key holds every generation");
    memcpy(k->gen, e->gen, sizeof e->gen);
    k->gen[TG__GEN_N] = e->memo_base; /* the model as the decision found it (memo_begin) */
    k->gen[TG__GEN_N + 1] = c->nmeta;
    k->gen[TG__GEN_N + 2] = c->epoch;
    k->gen[TG__GEN_N + 3] = e->tenants.fs ? tg_fairshare_gen(e->tenants.fs) : 0;
    k->gen[TG__GEN_N + 4] = e->tenants.builds; /* a new tree's own generation starts over */
    k->reclaim = (uint8_t)!!reclaim;
    k->priority = in->priority;
    k->queue = in->queue;
    k->dom = dom;
    k->exclude = in->exclude;
    k->now_ms = in->now_ms;
    k->view = in->gang;
    k->blocks = e->sched.blocks;
    k->nblocks = e->sched.nblocks;
    k->cluster = &e->sched.cluster;
}

/* Preemption by priority for in->gang, or the reason an equal plan gave
 * when it found nothing (pmemo.h); a plan that finds nothing is remembered. */
static int priority_plan(struct tg_engine *e, const struct tg_preempt_in *in,
                         struct tg_preemption *out)
{
    struct tg_pmemo_key k;
    tg__pmemo_key(e, in, 0, 0, &k);
    int usable = e->memo_live && tg_pmemo_usable(&e->pmemo, &k);
    const char *hit = usable ? tg_pmemo_find(&e->pmemo, &k) : NULL;
#ifdef TG_PMEMO_VERIFY /* a check build plans anyway and compares (pmemo.h) */
    if (hit) {
        char was[sizeof out->reason];
        snprintf(was, sizeof was, "%s", hit);
        int rc = tg_preempt_plan(&e->sched, &e->gangs, in, out);
        tg_pmemo_verify(rc, out->domain == NONE, out->reason, was);
        return rc;
    }
#endif
    if (hit) {
        memset(out, 0, sizeof *out);
        out->domain = NONE;
        snprintf(out->reason, sizeof out->reason, "%s", hit);
        return 0;
    }
    int rc = tg_preempt_plan(&e->sched, &e->gangs, in, out);
    if (!rc && usable && out->domain == NONE) {
        tg_pmemo_put(&e->pmemo, &k, out->timed, out->reason);
    }
    return rc;
}

/* Makes room for g by reclaim from queues above their fair share
 * (reclaim.c), else by preempting pods of lower priority (preempt.h), when
 * the policy and g allow it. Decides PLACE (room found without victims),
 * PREEMPT or NOMINATED; else adds the planner's reason to d->reason. */
static int preempt(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d, int64_t now)
{
    const struct tg_policy *p = &e->sched.policy;
    if (!p->preemption || g->preempt_never)
        return 0;
    int rc, placed = 0;
    struct tg_pdbs pdbs = {e->pdbs, e->npdbs};
    struct tg_preempt_in in = {.gang = &d->view, .priority = g->priority,
                               .exclude = evicted_by(e, g->key), .pdbs = &pdbs,
                               .now_ms = now, .evict_bare = p->evict_bare_pods,
                               .queue = e->tenants.fs ? g->queue : 0};
    /* reclaim first (issue 19, scheduler/reclaim.c): a gang of a queue below
     * its fair share takes back room lent to queues above theirs */
    char why[512];
    if ((rc = tg__reclaim_plan(e, g, &in, &d->preemption, why, sizeof why)))
        return rc;
    if (d->preemption.domain != NONE)
        return preempt_nominate(e, g, d);
    if (why[0]) {
        size_t l = strlen(d->reason);
        snprintf(d->reason + l, sizeof d->reason - l, "; %s", why);
    }
    if ((rc = priority_plan(e, &in, &d->preemption)))
        return rc;
    if (d->preemption.domain != NONE && !d->preemption.nvictims && !d->preemption.nleaving) {
        /* room there already (a domain the placement's short list skipped) */
        d->view.within = d->preemption.domain;
        if ((rc = attempt(e, g, d, &placed)))
            return rc;
        if (placed)
            return place_done(e, g, d);
        d->preemption.domain = NONE;
    }
    if (d->preemption.domain != NONE)
        return preempt_nominate(e, g, d);
    if (d->preemption.reason[0]) {
        size_t l = strlen(d->reason);
        snprintf(d->reason + l, sizeof d->reason - l, "; %s", d->preemption.reason);
    }
    return 0;
}

/* Nothing helped: UNSCHEDULABLE, and a reservation when g is a starving
 * head (maybe_reserve); its deadline is armed. */
static int reserve(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d)
{
    int rc;
    d->kind = TG_D_UNSCHEDULABLE;
    e->stats.unschedulable++;
    char note[1024];
    if (*tg_grec_priority_note(&e->gangs, g, note, sizeof note)) {
        size_t l = strlen(d->reason);
        snprintf(d->reason + l, sizeof d->reason - l, "; %s", note);
    }
    if ((rc = maybe_reserve(e, g, &d->view, d)))
        return rc;
    rc = tg_queue_done(&e->queue, &g->q, TG_QDONE_UNSCHEDULABLE);
    arm_deadline(e, g);
    return rc;
}

/* The memo of failed plans (pmemo.h) keys on the model as the decision
 * found it, e->memo_base: what a decision does to the model before it plans
 * (its lower nominations hidden, a placement that failed) follows from that
 * and the key (the gang's priority, queue, view, blocks). A decision that
 * ends unschedulable, with no nomination at either end, has put the cluster
 * back as it found it (every hide shown again, nothing assumed) and only
 * moved its change counter: a decision that finds the counter there starts
 * on the same model, the same base. A gang holding a nomination at the
 * start (its phantoms removed, maybe dropped) is never memoed. */
struct memo_mark {
    uint64_t nmeta, epoch;
    uint8_t nom;
};

static void memo_begin(struct tg_engine *e, const struct tg_grec *g, struct memo_mark *m)
{
    const struct tg_cluster *c = &e->sched.cluster;
    e->memo_base = c->nchanges == e->memo_end ? e->memo_base : c->nchanges;
    e->memo_end = UINT64_MAX;
    e->memo_live = !g->q.nom;
    *m = (struct memo_mark){c->nmeta, c->epoch, g->q.nom != NULL};
}

static void memo_end(struct tg_engine *e, const struct tg_grec *g, const struct tg_decision *d,
                     int rc, const struct memo_mark *m)
{
    const struct tg_cluster *c = &e->sched.cluster;
    if (!rc && d->kind == TG_D_UNSCHEDULABLE && !m->nom && !g->q.nom && c->nmeta == m->nmeta &&
        c->epoch == m->epoch)
        e->memo_end = c->nchanges;
    e->memo_live = 0;
}

/* Decides for one popped gang: the steps above, in order. */
/* noinline: tests/faults/test_oom.py injects allocation failures inside a
 * scheduling cycle by this function's address range (nm); since the split
 * into steps it is small enough for the compiler to fold into its caller. */
__attribute__((noinline))
static int decide(struct tg_engine *e, struct tg_grec *g, struct tg_decision *d)
{
    int64_t now = tg_engine_now(e);
    d->gang = g;
    e->stats.attempts++;
    int rc = gate(e, g, d, now);
    if (rc || d->kind != TG_D_NONE)
        return rc;
    struct memo_mark mm;
    memo_begin(e, g, &mm);
    phantoms_remove(e, g);
    set_blocks(e, g);
    lower_noms_hide(e, g, 1);
    rc = place(e, g, d);
    if (d->kind == TG_D_NOMINATED) /* waiting for its victims: place put the model back */
        return rc;
    if (!rc && d->kind == TG_D_NONE && tg_elastic_growing(g))
        rc = grow_wait(e, g, d, d->result.reason);
    if (!rc && d->kind == TG_D_NONE)
        rc = preempt(e, g, d, now);
    if (!rc && d->kind == TG_D_NONE)
        rc = reserve(e, g, d);
    lower_noms_hide(e, g, 0);
    e->sched.nblocks = 0;
    memo_end(e, g, d, rc, &mm);
    if (rc && g->q.state == TG_Q_INFLIGHT) {
        /* not a verdict (out of memory): tried again when its backoff ends,
         * not only once the cluster changes */
        tg_queue_done(&e->queue, &g->q, TG_QDONE_UNSCHEDULABLE);
        if (tg_queue_add(&e->queue, &g->q))
            e->stats.nomem++;
    }
    return rc;
}

int tg_engine_next(struct tg_engine *e, struct tg_decision *d)
{
    memset(d, 0, sizeof *d);
    d->result.domain = NONE;
    d->preemption.domain = NONE;
    tg__tenants_order(e);
    for (;;) {
        struct tg_qent *qe = tg_queue_pop(&e->queue);
        if (!qe)
            return 0;
        struct tg_grec *g = grec_of(qe);
        if (tg_grec_unplaced(g) == 0) {
            /* nothing left to place: it leaves the queue (and may go) */
            nomination_drop(e, g, 1);
            reservation_end(e, g);
            tg_queue_done(&e->queue, qe, TG_QDONE_PLACED);
            tg_queue_set_deadline(&e->queue, qe, INT64_MAX);
            tg_gangs_release(&e->gangs, g);
            continue;
        }
        return decide(e, g, d);
    }
}

void tg_engine_bind_done(struct tg_engine *e, struct tg_grec *g, int ok, int some_failed)
{
    tg__gen_bump(e, TG__GEN_PLACED);
    if (ok && !some_failed) {
        if (tg_grec_unplaced(g))
            requeue(e, g); /* members beyond minMember that did not fit yet */
        else
            tg_gangs_release(&e->gangs, g);
        return;
    }
    /* a backoff, as for an unschedulable attempt; its timeout (cleared when
     * it was placed) runs again, so that a gang left short of minMember is
     * decided when it passes */
    if (tg_grec_unplaced(g)) {
        int64_t deadline = g->first_seen_ms + timeout_ms(e, g);
        if (!g->timed_out && deadline > tg_engine_now(e) &&
            tg_queue_set_deadline(&e->queue, &g->q, deadline))
            e->stats.nomem++;
        if (tg_queue_backoff(&e->queue, &g->q))
            e->stats.nomem++;
    } else
        tg_gangs_release(&e->gangs, g);
}

/* ---- tenant queues (issue 19) ----------------------------------------------------- */

/* Every gang parked or waiting may now have its queue (or room under a new
 * limit): looked at again. */
static void queues_changed(struct tg_engine *e)
{
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&e->gangs.by_key, &pos))) {
        struct tg_grec *g = (struct tg_grec *)(uintptr_t)s->val;
        if (g->q.state == TG_Q_OUT && tg_grec_unplaced(g))
            requeue(e, g);
    }
    tg_queue_wake(&e->queue);
}

int tg_engine_queues_set(struct tg_engine *e, const struct tg_queue_obj *const *qs, uint32_t n)
{
    tg__gen_bump(e, TG__GEN_QUEUES);
    /* a status-only update (the leader writes Queue status every second):
     * the division, its counts and the queue stay (a resource a Queue names
     * that no Node offered yet still rebuilds it once offered: tenants.c) */
    if (tg__tenants_same(e, qs, n))
        return 0;
    int rc = tg__tenants_replace(e, qs, n);
    queues_changed(e);
    return rc;
}

const struct tg_fairshare *tg_engine_fairshare(const struct tg_engine *e)
{
    return e->tenants.fs;
}

uint64_t tg_engine_reclaims(const struct tg_engine *e)
{
    return e->tenants.reclaims;
}

uint64_t tg_engine_queue_reclaims(const struct tg_engine *e, uint32_t queue)
{
    uint64_t n = 0;
    tg_imap_get(&e->tenants.reclaims_by, queue, &n);
    return n;
}

/* ---- workloads (issue 9) ---------------------------------------------------------- */

static void workload_requeue(void *ud, struct tg_grec *g)
{
    requeue(ud, g);
}

int tg_engine_workload_set(struct tg_engine *e, const struct tg_workload *w)
{
    tg__gen_bump(e, TG__GEN_GANGS);
    return tg_gangs_workload_set(&e->gangs, w, workload_requeue, e);
}

void tg_engine_workload_delete(struct tg_engine *e, const char *key)
{
    tg__gen_bump(e, TG__GEN_GANGS);
    tg_gangs_workload_delete(&e->gangs, key, workload_requeue, e);
}

/* ---- the embedders' contract (engine.h) ------------------------------------------------ */

int tg_engine_new(struct tg_engine **out, const struct tg_policy *p, const struct tg_clock *clock)
{
    struct tg_engine *e = malloc(sizeof *e);
    if (!e)
        return TG_ENOMEM;
    int rc = tg_engine_init(e, p, clock);
    if (rc) {
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

void tg_engine_delete(struct tg_engine *e)
{
    if (!e)
        return;
    tg_engine_free(e);
    free(e);
}

const struct tg_cluster *tg_engine_cluster(const struct tg_engine *e)
{
    return &e->sched.cluster;
}

const struct tg_policy *tg_engine_policy(const struct tg_engine *e)
{
    return &e->sched.policy;
}

struct tg_grec *tg_engine_gang(const struct tg_engine *e, const char *key)
{
    return tg_gangs_get(&e->gangs, key);
}

const char *tg_engine_gang_key(const struct tg_engine *e, const struct tg_pod *p, char *buf,
                               size_t n)
{
    return tg_gang_key_of(&e->gangs, p, buf, n);
}

struct tg_grec *tg_engine_gang_next(const struct tg_engine *e, uint32_t *pos)
{
    const struct tg_hslot *s = tg_hmap_next(&e->gangs.by_key, pos);
    return s ? (struct tg_grec *)(uintptr_t)s->val : NULL;
}

const struct tg_podgroup *tg_engine_podgroup(const struct tg_engine *e, const char *key)
{
    return tg_gangs_podgroup(&e->gangs, key);
}

const struct tg_engine_stats *tg_engine_stats(const struct tg_engine *e)
{
    return &e->stats;
}

void tg_engine_counts(const struct tg_engine *e, struct tg_engine_counts *out)
{
    memcpy(out->state, e->queue.count, sizeof out->state);
    out->queued = tg_queue_len(&e->queue);
    out->pending_pods = e->gangs.pidx.len;
    out->reservations = e->queue.nresv;
    out->nominations = e->nnoms;
}

int64_t tg_engine_latest_deadline(const struct tg_engine *e)
{
    return tg_queue_latest_deadline(&e->queue);
}

void tg_engine_set_owner_kinds(struct tg_engine *e, unsigned kinds)
{
    tg__gen_bump(e, TG__GEN_GANGS);
    e->gangs.owner_kinds = kinds;
}

void tg_engine_on_gang_freed(struct tg_engine *e, void (*fn)(void *ud, struct tg_grec *g), void *ud)
{
    e->gang_freed = fn;
    e->ud = ud;
}
