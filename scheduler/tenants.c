/* Tenant queues in the engine (issue 19): which queue each gang belongs to,
 * each queue's demand and allocation kept as pods come and go, the fair
 * shares (scheduler/fairshare.h) recomputed only when dirty, admission
 * against the queues' limits, and the order between queues.
 *
 * Queues are off while the engine holds no Queue object: every gang is then
 * placed as before. Once one exists, every gang belongs to a queue
 * (tg_queue_resolve: its PodGroup's, its pods', its namespace's default, else
 * the policy's queues.defaultQueue); a gang whose queue does not exist waits,
 * except one that names none while the default Queue does not exist: it is
 * scheduled as without queues (one tenant's Queue does not stop the rest).
 *
 * Accounting, O(depth x resources) per pod event:
 *   - a pending pod of this scheduler adds its requests to its gang's queue's
 *     demand (tg__tenants_pending);
 *   - a bound or assumed record of a pod of this scheduler (cluster listener,
 *     after the gang layer's) adds to allocation and demand; its removal
 *     takes them back (a pod still pending keeps its demand);
 *   - a gang moving to another queue moves its members' entries (only then:
 *     O(gang size)).
 * Each entry remembers the queue it was counted in, so a removal always
 * takes back what was added. Capacity is the sum of the Nodes' allocatable,
 * kept per resource as Nodes change; the division reads it when dirty.
 *
 * The order between queues (DRF) is a rank per queue (tg_fairshare_cmp);
 * the pending queue orders by rank first, then priority and age. Ranks are
 * recomputed before each decision in O(queues log queues), and the pending
 * heaps rebuilt (O(gangs)) only when the order between queues changed. */
#include "scheduler/internal.h"
#include "scheduler/cycle.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/vec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qacct {
    char *key;                          /* owned: the map key, the pod's "ns/name" */
    uint32_t queue;                     /* interned: the queue it is counted in */
    uint8_t placed;                     /* 1: allocation and demand; 0: demand only */
    uint8_t nreq;
    struct tg_rq req[];
};

static void apply(struct tg_engine *e, const struct qacct *a, int sign)
{
    struct tg_fairshare *fs = e->tenants.fs;
    int q = fs && a->queue ? tg_fairshare_find(fs, a->queue) : -1;
    if (q < 0)
        return;
    tg_fairshare_demand_add(fs, (uint32_t)q, a->req, a->nreq, sign);
    if (a->placed)
        tg_fairshare_alloc_add(fs, (uint32_t)q, a->req, a->nreq, sign);
}

static struct qacct *acct_get(const struct tg_engine *e, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&e->tenants.acct, key, strlen(key), &v) ? (struct qacct *)(uintptr_t)v : NULL;
}

static void acct_drop(struct tg_engine *e, struct qacct *a)
{
    apply(e, a, -1);
    tg_hmap_del(&e->tenants.acct, a->key, strlen(a->key));
    free(a->key);
    free(a);
}

/* Counts key's requests in queue (replacing what it counted before). */
static void acct_set(struct tg_engine *e, const char *key, uint32_t queue, const struct tg_rq *req,
                     uint8_t nreq, int placed)
{
    struct qacct *old = acct_get(e, key);
    if (old && old->nreq == nreq) { /* the same pod counted anew (assumed, bound): in place */
        apply(e, old, -1);
        old->queue = queue;
        old->placed = (uint8_t)placed;
        if (nreq)
            memcpy(old->req, req, nreq * sizeof *req);
        apply(e, old, 1);
        return;
    }
    if (old)
        acct_drop(e, old);
    struct qacct *a = malloc(sizeof *a + nreq * sizeof *a->req);
    if (!a || !(a->key = strdup(key))) {
        free(a);
        e->stats.nomem++;
        return;
    }
    a->queue = queue;
    a->placed = (uint8_t)placed;
    a->nreq = nreq;
    if (nreq)
        memcpy(a->req, req, nreq * sizeof *req);
    if (tg_hmap_put(&e->tenants.acct, a->key, strlen(a->key), (uint64_t)(uintptr_t)a)) {
        free(a->key);
        free(a);
        e->stats.nomem++;
        return;
    }
    apply(e, a, 1);
}

static void acct_move(struct tg_engine *e, const char *key, uint32_t queue)
{
    struct qacct *a = acct_get(e, key);
    if (!a || a->queue == queue)
        return;
    apply(e, a, -1);
    a->queue = queue;
    apply(e, a, 1);
}

static uint32_t rank_of(const struct tg_engine *e, uint32_t queue)
{
    const struct tg_tenants *t = &e->tenants;
    int q = t->fs && queue ? tg_fairshare_find(t->fs, queue) : -1;
    return q < 0 || (uint32_t)q >= t->nrank ? UINT32_MAX : t->rank[q];
}

uint32_t tg__tenants_resolve(struct tg_engine *e, struct tg_grec *g)
{
    /* the namespace from the store placement reads (simulate's own, carried
     * by its pods' specs, as the plugins do), else the engine's */
    const struct tg_pod *p0 = g->npending ? g->pending[0] : NULL;
    const struct tg_objstore *st = p0 && p0->spec && p0->spec->store ? p0->spec->store
                                                                      : &e->sched.store;
    const struct tg_namespace *ns = tg_objstore_namespace(st, g->ns);
    struct tg_queue_pick pk = tg_queue_resolve(g->pg, (const struct tg_pod *const *)g->pending,
                                               g->npending, ns, tg_intern(e->sched.policy.default_queue));
    if (pk.src >= TG_QSRC_NAMESPACE) /* no pending member names one: a placed member may */
        for (uint32_t i = 0; i < g->nmembers; i++)
            if (g->members[i]->queue) {
                pk.queue = g->members[i]->queue;
                pk.src = TG_QSRC_POD;
                break;
            }
    g->queue_src = pk.src;
    if (pk.queue == g->queue)
        return g->queue;
    g->queue = pk.queue;
    tg__gen_bump(e, TG__GEN_GANGS); /* a placed gang's queue: who reclaim may take */
    for (uint32_t i = 0; i < g->npending; i++)
        acct_move(e, g->pending[i]->key, g->queue);
    for (uint32_t i = 0; i < g->nmembers; i++)
        acct_move(e, g->members[i]->key, g->queue);
    tg_queue_set_rank(&e->queue, &g->q, rank_of(e, g->queue));
    return g->queue;
}

void tg__tenants_pending(struct tg_engine *e, struct tg_grec *g, const struct tg_pod *p, int gone)
{
    struct qacct *a = acct_get(e, p->key);
    if (gone) {
        if (a && !a->placed)
            acct_drop(e, a);
        return;
    }
    if (a && a->placed)
        return; /* its record counts it */
    if (!g)
        return;
    if (!g->queue || (p->queue && p->queue != g->queue))
        tg__tenants_resolve(e, g);
    acct_set(e, p->key, g->queue, p->req, p->nreq, 0);
}

static int is_pending(const struct tg_engine *e, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&e->gangs.pidx, key, strlen(key), &v);
}

static void on_record_added(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    (void)c;
    struct tg_engine *e = ud;
    if (u->kind == TG_USAGE_NOMINATED || u->deleting || u->sched != e->gangs.sched)
        return;
    struct tg_grec *g = tg_gangs_of_usage(&e->gangs, u); /* the gang layer listens first */
    uint32_t queue;
    if (g) {
        queue = g->queue ? g->queue : tg__tenants_resolve(e, g);
    } else { /* a pod on its own: its label, its namespace's default, the default */
        const struct tg_namespace *ns = tg_objstore_namespace(&e->sched.store, u->ns);
        queue = u->queue ? u->queue
                : ns && ns->queue ? ns->queue : tg_intern(e->sched.policy.default_queue);
    }
    acct_set(e, u->key, queue, u->req, u->nreq, 1);
}

static void on_record_removed(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    (void)c;
    struct tg_engine *e = ud;
    if (u->kind == TG_USAGE_NOMINATED)
        return;
    struct qacct *a = acct_get(e, u->key);
    if (!a || !a->placed)
        return;
    if (!is_pending(e, u->key)) {
        acct_drop(e, a);
        return;
    }
    /* an assumption forgotten: still pending, it still asks */
    apply(e, a, -1);
    a->placed = 0;
    apply(e, a, 1);
}

/* The Nodes' allocatable to the division, a column for every resource a
 * Node has offered (also at 0 now): a column made only later would miss
 * the allocations counted before it. */
static void apply_capacity(struct tg_tenants *t)
{
    struct tg_rq cap[TG_FS_MAX_RES];
    uint32_t n = 0;
    for (uint32_t r = 0; r < tg_res_count() && r < TG_RES_MAX && n < TG_FS_MAX_RES; r++)
        if (r != TG_RES_PODS && r != TG_RES_EPHEMERAL && r != TG_RES_UNOFFERED)
            cap[n++] = (struct tg_rq){r, t->cap[r] > 0 ? t->cap[r] : 0};
    tg_fairshare_set_capacity(t->fs, cap, n);
    t->cap_dirty = 0;
}

static void held_free(struct tg_queue_obj **held, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        tg_queue_obj_free(&held[i]);
    free(held);
}

int tg__tenants_init(struct tg_engine *e)
{
    struct tg_cluster_hooks h = {.record_added = on_record_added,
                                 .record_removed = on_record_removed, .ud = e,
                                 .skip_quiet = 1}; /* a what-if allocates nothing */
    return tg_cluster_listen(&e->sched.cluster, &h);
}

void tg__tenants_free(struct tg_engine *e)
{
    struct tg_tenants *t = &e->tenants;
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&t->acct, &pos))) {
        struct qacct *a = (struct qacct *)(uintptr_t)s->val;
        free(a->key);
        free(a);
    }
    tg_hmap_free(&t->acct);
    held_free(t->held, t->nheld);
    tg_imap_free(&t->reclaims_by);
    free(t->seeds);
    tg_fairshare_free(&t->fs);
    free(t->rank);
    free(t->order);
    memset(t, 0, sizeof *t);
}

void tg__tenants_node(struct tg_engine *e, const struct tg_node_obj *n, int sign)
{
    struct tg_tenants *t = &e->tenants;
    if (!n)
        return;
    for (uint8_t i = 0; i < n->nalloc; i++)
        if (n->alloc[i].res < TG_RES_MAX && n->alloc[i].val) {
            t->cap[n->alloc[i].res] += sign * n->alloc[i].val;
            t->cap_dirty = 1;
        }
    /* a resource offered for the first time: the division built again, so
     * that a Queue's quota and limit of it, ignored until now, take effect
     * and its column counts every allocation (rare: once per new name) */
    if (t->fs && tg_res_count() != t->res_seen) {
        t->res_seen = tg_res_count();
        if (tg__tenants_replace(e, (const struct tg_queue_obj *const *)t->held, t->nheld))
            e->stats.nomem++;
        else
            t->rebuilds++;
    }
}

/* Owned copies of qs[0..n) (what the division reads: not uid/rv), or NULL. */
static struct tg_queue_obj **held_copy(const struct tg_queue_obj *const *qs, uint32_t n)
{
    struct tg_queue_obj **h = calloc(n ? n : 1, sizeof *h);
    for (uint32_t i = 0; h && i < n; i++) {
        struct tg_queue_obj *c = h[i] = malloc(sizeof *c);
        if (!c) {
            held_free(h, i);
            return NULL;
        }
        *c = *qs[i];
        c->uid = c->rv = NULL;
        c->res = qs[i]->nres ? malloc(qs[i]->nres * sizeof *c->res) : NULL;
        c->problem = qs[i]->problem ? strdup(qs[i]->problem) : NULL;
        if ((qs[i]->nres && !c->res) || (qs[i]->problem && !c->problem)) {
            held_free(h, i + 1);
            return NULL;
        }
        if (qs[i]->nres)
            memcpy(c->res, qs[i]->res, qs[i]->nres * sizeof *c->res);
    }
    return h;
}

int tg__tenants_same(const struct tg_engine *e, const struct tg_queue_obj *const *qs, uint32_t n)
{
    const struct tg_tenants *t = &e->tenants;
    if (n != t->nheld || (n && !t->fs))
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (!tg_queue_obj_same_spec(t->held[i], qs[i]))
            return 0;
    return 1;
}

/* ---- time fairness across a restart --------------------------------------------------- */

enum { MAX_SEEDS = 4096 };

/* The saved usage of each queue that takes part now becomes its usage
 * (decayed from when it was given to now); the rest stays for later. */
static void apply_seeds(struct tg_engine *e)
{
    struct tg_tenants *t = &e->tenants;
    double h = (double)e->sched.policy.usage_half_life_s;
    if (!t->fs || !t->nseeds)
        return;
    int64_t now = tg_engine_now(e);
    tg_fairshare_tick(t->fs, now); /* what was used up to now first, at the old values */
    uint32_t k = 0;
    for (uint32_t i = 0; i < t->nseeds; i++) {
        const struct tg_useed *s = &t->seeds[i];
        int q = tg_fairshare_find(t->fs, s->queue);
        if (q < 0 || h <= 0) {
            t->seeds[k++] = *s;
            continue;
        }
        double dt = now > s->at_ms ? (double)(now - s->at_ms) / 1000.0 : 0;
        tg_fairshare_set_usage(t->fs, (uint32_t)q, s->res, s->v * exp2(-dt / h));
    }
    t->nseeds = k;
}

int tg_engine_queue_usage_seed(struct tg_engine *e, uint32_t queue, uint32_t res,
                               double resource_seconds, int64_t age_ms)
{
    struct tg_tenants *t = &e->tenants;
    double h = (double)e->sched.policy.usage_half_life_s;
    if (!(resource_seconds >= 0) || !isfinite(resource_seconds))
        return TG_EINVAL;
    if (h <= 0 || res >= TG_RES_MAX || t->nseeds >= MAX_SEEDS)
        return 0;
    if (tg_grow((void **)&t->seeds, &t->capseeds, t->nseeds, sizeof *t->seeds))
        return TG_ENOMEM;
    double age = age_ms > 0 ? (double)age_ms / 1000.0 : 0;
    t->seeds[t->nseeds++] =
        (struct tg_useed){queue, res, resource_seconds * exp2(-age / h), tg_engine_now(e)};
    apply_seeds(e);
    return 0;
}

void tg_engine_queues_tick(struct tg_engine *e)
{
    if (e->tenants.fs)
        tg_fairshare_tick(e->tenants.fs, tg_engine_now(e));
}

/* A new division from the Queue objects qs (copied: built again when a Node
 * first offers a resource a Queue names, which the division ignores until
 * then: the daemon may hear of its Queues before its Nodes); every entry
 * counted again (a Queue change is an administrator's act: O(pods) then is
 * fine). n == 0: queues off. */
int tg__tenants_replace(struct tg_engine *e, const struct tg_queue_obj *const *qs, uint32_t n)
{
    struct tg_tenants *t = &e->tenants;
    struct tg_fairshare *fs = NULL;
    struct tg_queue_obj **held = NULL;
    if (n) {
        struct tg_fairshare_opts o = {e->sched.policy.usage_half_life_s, 1.0};
        int rc = tg_fairshare_build(qs, n, &o, NULL, &fs);
        if (!rc && !(held = held_copy(qs, n))) {
            tg_fairshare_free(&fs);
            rc = TG_ENOMEM;
        }
        if (rc)
            return rc; /* the division held stays */
    }
    t->res_seen = tg_res_count();
    t->builds++;
    held_free(t->held, t->nheld); /* qs may be t->held: read above, freed last */
    t->held = held;
    t->nheld = n;
    struct tg_fairshare *old = t->fs;
    t->fs = fs;
    if (fs) { /* every column before the allocations are counted again */
        apply_capacity(t);
        if (old) /* time fairness: what each queue used goes on counting */
            tg_fairshare_carry_usage(fs, old);
    } else { /* queues off: no order between queues */
        uint32_t gp = 0;
        const struct tg_hslot *gs;
        while ((gs = tg_hmap_next(&e->gangs.by_key, &gp)))
            ((struct tg_grec *)(uintptr_t)gs->val)->q.rank = 0;
        tg_queue_reorder(&e->queue);
    }
    tg_fairshare_free(&old);
    t->nrank = 0; /* every rank recomputed by the next order */
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&t->acct, &pos)))
        apply(e, (const struct qacct *)(uintptr_t)s->val, 1);
    apply_seeds(e); /* a queue saved by an earlier run that takes part now */
    return 0;
}

uint32_t tg__rq_add(struct tg_rq *out, uint32_t n, const struct tg_rq *req, uint32_t nreq)
{
    for (uint32_t j = 0; j < nreq; j++) {
        uint32_t k = 0;
        while (k < n && out[k].res != req[j].res)
            k++;
        if (k == n) {
            if (n == TG__MAXREQ)
                continue;
            out[n++] = (struct tg_rq){req[j].res, 0};
        }
        out[k].val += req[j].val;
    }
    return n;
}

uint32_t tg__tenants_request(const struct tg_gang *v, struct tg_rq *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < v->npods; i++)
        n = tg__rq_add(out, n, v->pods[i]->req, v->pods[i]->nreq);
    return n;
}

int tg__tenants_gate(struct tg_engine *e, struct tg_grec *g, char *reason, size_t len)
{
    struct tg_fairshare *fs = e->tenants.fs;
    if (!fs)
        return 0;
    uint32_t queue = tg__tenants_resolve(e, g);
    int q = queue ? tg_fairshare_find(fs, queue) : -1;
    if (q < 0 && g->queue_src == TG_QSRC_DEFAULT)
        return TG_TENANT_OK; /* names no queue and no default Queue exists: as without queues */
    if (q < 0) {
        snprintf(reason, len, "queue %s does not exist (named by its %s; it waits for the Queue)",
                 queue ? tg_str(queue) : "(none)", tg_queue_src_name[g->queue_src]);
        return TG_TENANT_MISSING;
    }
    return TG_TENANT_OK;
}

int tg__tenants_cap(const struct tg_engine *e, const struct tg_grec *g, struct tg_gang *v,
                    char *reason, size_t len)
{
    const struct tg_fairshare *fs = e->tenants.fs;
    int q = fs && g->queue ? tg_fairshare_find(fs, g->queue) : -1;
    if (q < 0 || !v->npods)
        return TG_TENANT_OK; /* queues off, or a gang placed as without them (the gate's) */
    uint32_t must = tg_gang_must(v), n = 0, k = 0;
    struct tg_rq req[TG__MAXREQ], next[TG__MAXREQ];
    /* the whole gang within the limits: so is every prefix (requests only
     * add), one check instead of one per member */
    n = tg__tenants_request(v, req);
    if (tg_fairshare_admit(fs, (uint32_t)q, req, n, NULL, 0))
        return TG_TENANT_OK;
    n = 0;
    for (; k < v->npods; k++) { /* the longest prefix within the limits */
        memcpy(next, req, n * sizeof *req);
        uint32_t m = tg__rq_add(next, n, v->pods[k]->req, v->pods[k]->nreq);
        if (!tg_fairshare_admit(fs, (uint32_t)q, next, m, NULL, 0))
            break;
        memcpy(req, next, m * sizeof *req);
        n = m;
    }
    if (k >= must) {
        v->npods = k;
        return TG_TENANT_OK;
    }
    n = 0; /* the reason in the numbers of what it must place now */
    for (uint32_t i = 0; i < must; i++)
        n = tg__rq_add(req, n, v->pods[i]->req, v->pods[i]->nreq);
    tg_fairshare_admit(fs, (uint32_t)q, req, n, reason, len);
    return TG_TENANT_LIMIT;
}

static int cmp_queue(const void *a, const void *b, void *ud)
{
    return tg_fairshare_cmp(ud, *(const uint32_t *)a, *(const uint32_t *)b);
}

void tg__tenants_order(struct tg_engine *e)
{
    struct tg_tenants *t = &e->tenants;
    if (!t->fs)
        return;
    if (t->cap_dirty)
        apply_capacity(t);
    tg_fairshare_tick(t->fs, tg_engine_now(e)); /* a no-op without time fairness */
    tg_fairshare_update(t->fs);
    uint32_t nq = tg_fairshare_count(t->fs);
    if (nq > t->caprank) {
        uint32_t *r = realloc(t->rank, nq * sizeof *r), *o;
        if (r)
            t->rank = r;
        if (!r || !(o = realloc(t->order, nq * sizeof *o))) {
            e->stats.nomem++;
            return;
        }
        t->order = o;
        t->caprank = nq;
    }
    for (uint32_t i = 0; i < nq; i++)
        t->order[i] = i;
    qsort_r(t->order, nq, sizeof *t->order, cmp_queue, t->fs);
    int changed = t->nrank != nq;
    for (uint32_t i = 0; i < nq; i++) {
        changed |= t->nrank == nq && t->rank[t->order[i]] != i;
        t->rank[t->order[i]] = i;
    }
    t->nrank = nq;
    if (!changed)
        return;
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&e->gangs.by_key, &pos))) {
        struct tg_grec *g = (struct tg_grec *)(uintptr_t)s->val;
        g->q.rank = rank_of(e, g->queue);
    }
    tg_queue_reorder(&e->queue);
    t->reorders++;
}

/* Gangs per queue, for the Queue status and /metrics (issue 19). */
int tg_engine_queue_gangs(const struct tg_engine *e, uint32_t *waiting, uint32_t *running, uint32_t n)
{
    const struct tg_fairshare *fs = e->tenants.fs;
    if (!fs || n < tg_fairshare_count(fs))
        return TG_EINVAL;
    memset(waiting, 0, n * sizeof *waiting);
    memset(running, 0, n * sizeof *running);
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&e->gangs.by_key, &pos))) {
        const struct tg_grec *g = (const struct tg_grec *)(uintptr_t)s->val;
        int q = g->queue ? tg_fairshare_find(fs, g->queue) : -1;
        if (q < 0)
            continue;
        if (g->nmembers)
            running[q]++;
        else if (g->npending > g->npending_placed)
            waiting[q]++;
    }
    return 0;
}
