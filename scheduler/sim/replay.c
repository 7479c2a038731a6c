/* The replay: virtual time and the engine's embedder; see replay.h.
 *
 * Events (arrivals, binds finishing, completions, Terminating pods gone) sit
 * in a heap by time, then by the order they were made. The loop takes the
 * earlier of the next event and the engine's next due time, moves the
 * clock there, handles every event due, then asks the engine for decisions
 * until it has none and carries each out as the daemon would. The replay
 * stops at --until, or once no event is left and the engine has stayed
 * quiet long enough that nothing more can happen (past every pending
 * timeout, the no-thrash window and the unschedulable flush). */
#include "scheduler/sim/replay_int.h"
#include "util/err.h"
#include "util/intern.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NONE TG__RP_NONE

enum { EV_ARRIVE, EV_BIND, EV_COMPLETE, EV_GONE };

/* After the last change the engine can still act on its own for a while:
 * an unschedulable flush (60 s), a backoff (up to 60 s), the end of the
 * no-thrash window (10 min), a reservation (gang.reserveAfterSeconds). */
enum { DEFAULT_SAMPLE_MS = 60000, QUIET_MS = 15 * 60000 };

struct tg__event {
    int64_t t;                          /* absolute clock */
    uint64_t seq;
    uint8_t kind;
    uint32_t pod, inc;
    char *key;                          /* EV_GONE: the Terminating incarnation's key (owned) */
};

static int64_t virtual_clock(void *ud)
{
    return ((const struct tg_replay *)ud)->now;
}

static struct tg__rpod *rpod_of_live(const struct tg_pod *p)
{
    return (struct tg__rpod *)((char *)p - offsetof(struct tg__rpod, live));
}

static int grow(void **v, uint32_t *cap, uint32_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    uint32_t nc = *cap ? *cap * 2 : 16;
    void *nv = realloc(*v, nc * sz);
    if (!nv)
        return TG_ENOMEM;
    *v = nv;
    *cap = nc;
    return 0;
}

static int set_text(char **dst, const char *s)
{
    if (*dst && !strcmp(*dst, s))
        return 0;
    char *d = strdup(s);
    if (!d)
        return TG_ENOMEM;
    free(*dst);
    *dst = d;
    return 0;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- the event heap ------------------------------------------------------------- */

static int ev_less(const struct tg__event *a, const struct tg__event *b)
{
    return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

/* Adds an event (key is taken, also on failure). */
static int ev_push(struct tg_replay *r, int64_t t, uint8_t kind, uint32_t pod, uint32_t inc,
                   char *key)
{
    if (grow((void **)&r->ev, &r->capev, r->nev, sizeof *r->ev)) {
        free(key);
        return TG_ENOMEM;
    }
    struct tg__event e = {t, r->seq++, kind, pod, inc, key};
    uint32_t i = r->nev++;
    while (i > 0 && ev_less(&e, &r->ev[(i - 1) / 2])) {
        r->ev[i] = r->ev[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->ev[i] = e;
    return 0;
}

static struct tg__event ev_pop(struct tg_replay *r)
{
    struct tg__event top = r->ev[0], last = r->ev[--r->nev];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= r->nev)
            break;
        if (c + 1 < r->nev && ev_less(&r->ev[c + 1], &r->ev[c]))
            c++;
        if (!ev_less(&r->ev[c], &last))
            break;
        r->ev[i] = r->ev[c];
        i = c;
    }
    if (r->nev)
        r->ev[i] = last;
    return top;
}

/* ---- accounting ------------------------------------------------------------------ */

/* Resource use integrated up to `upto` (absolute). */
static void integrate(struct tg_replay *r, int64_t upto)
{
    int64_t dt = upto - r->integ_at;
    if (dt <= 0)
        return;
    uint32_t nres = tg_res_count() < TG_RES_MAX ? tg_res_count() : TG_RES_MAX;
    for (uint32_t k = 0; k < nres; k++)
        if (r->used[k])
            r->used_ms[k] += (double)r->used[k] * (double)dt;
    r->integ_at = upto;
}

/* A pod starts (sign +1) or stops (-1) holding its extended resources. */
static void use(struct tg_replay *r, const struct tg__rpod *rp, int sign)
{
    const struct tg_pod *p = rp->sp->pod;
    integrate(r, r->now);
    for (uint8_t i = 0; i < p->nreq; i++)
        if (p->req[i].res < TG_RES_MAX)
            r->used[p->req[i].res] += sign * p->req[i].val;
    r->last_change = r->now;
}

static void gang_state(struct tg_replay *r, struct tg__rgang *g, uint8_t st)
{
    if (g->state == TG__RG_WAITING) {
        r->queue--;
        r->waiting -= g->main;
    }
    if (st == TG__RG_WAITING) {
        r->queue++;
        r->waiting += g->main;
    }
    g->state = st;
}

/* Free nodes (Ready and not cordoned, nothing of the main resource in use;
 * assumed and nominated room counts as taken) and wholly free domains per
 * tree level. */
static int sample_take(struct tg_replay *r, int64_t t)
{
    if (grow((void **)&r->samples, &r->capsamples, r->nsamples, sizeof *r->samples))
        return TG_ENOMEM;
    struct tg__sample *s = &r->samples[r->nsamples];
    if (r->nsamples && r->sampled_change == r->changes) {
        *s = r->samples[r->nsamples - 1]; /* nothing changed: the same picture */
        s->t = t;
        if (tg__rq_sample(r, r->nsamples))
            return TG_ENOMEM;
        r->nsamples++;
        return 0;
    }
    memset(s, 0, sizeof *s);
    s->t = t;
    s->used = r->used[r->main_res];
    s->queue = r->queue;
    s->waiting = r->waiting;
    const struct tg_cluster *c = tg_engine_cluster(r->engine);
    const struct tg_tree *tr = &c->tree;
    if (tr->ndom > r->capdom) {
        uint32_t *a = realloc(r->dom_free, tr->ndom * sizeof *a), *b;
        if (!a)
            return TG_ENOMEM;
        r->dom_free = a;
        if (!(b = realloc(r->dom_all, tr->ndom * sizeof *b)))
            return TG_ENOMEM;
        r->dom_all = b;
        r->capdom = tr->ndom;
    }
    uint32_t *nfree = r->dom_free, *nall = r->dom_all;
    memset(nfree, 0, tr->ndom * sizeof *nfree);
    memset(nall, 0, tr->ndom * sizeof *nall);
    for (uint32_t slot = 0; slot < c->nslots; slot++) {
        const struct tg_node *n = &c->nodes[slot];
        if (!n->obj || !n->obj->ready || n->obj->unschedulable || slot >= tr->nslots ||
            tr->leaf[slot] == UINT32_MAX ||
            tg_alloc(c, slot, r->main_res) <= 0)
            continue;
        int fr = tg_used(c, slot, r->main_res) == 0;
        s->free_nodes += (uint32_t)fr;
        for (uint32_t d = tr->leaf[slot]; d != UINT32_MAX && d < tr->ndom; d = tr->dom[d].parent) {
            nall[d]++;
            nfree[d] += (uint32_t)fr;
        }
    }
    for (uint32_t d = 0; d < tr->ndom; d++)
        if (nall[d] && nfree[d] == nall[d] && (tr->dom[d].level == 0 || tr->dom[d].name))
            s->free_dom[tr->dom[d].level]++; /* a "" domain is none: its nodes lack the label */
    r->sampled_change = r->changes;
    if (tg__rq_sample(r, r->nsamples))
        return TG_ENOMEM;
    r->nsamples++;
    return 0;
}

/* Moves the clock to t (absolute), sampling the state it leaves behind. */
static int advance(struct tg_replay *r, int64_t t)
{
    int rc = 0;
    while (!rc && r->t0 + r->next_sample < t) {
        rc = sample_take(r, r->next_sample);
        r->next_sample += r->opts.sample_ms;
    }
    if (t > r->now) {
        tg__rq_integrate(r, t); /* the queues held what the last drain left until t */
        r->now = t;
    }
    return rc;
}

/* ---- gangs and pods ------------------------------------------------------------------ */

const char *tg__replay_status(const struct tg__rgang *g)
{
    switch (g->state) {
    case TG__RG_DONE: return "Completed";
    case TG__RG_RUNNING: return "Running";
    case TG__RG_WAITING: return g->invalid ? "Invalid" : g->overdue ? "Unschedulable" : "Pending";
    default: return "NotArrived";
    }
}

static struct tg__rgang *gang_of(struct tg_replay *r, struct tg_grec *g)
{
    if (g->user)
        return g->user;
    uint64_t v;
    if (tg_hmap_get(&r->gang_idx, g->key, strlen(g->key), &v)) {
        struct tg__rgang *rg = &r->gangs[v];
        if (rg->grouped && !rg->pg) /* a peer's or a derived gang: its PodGroup is made there */
            rg->min = tg_grec_min(g);
        return g->user = rg;
    }
    if (!g->group && tg_hmap_get(&r->live_idx, g->key, strlen(g->key), &v) &&
        r->pods[v].gang != NONE)
        return g->user = &r->gangs[r->pods[v].gang];
    return NULL;
}

/* The engine's record of rp's gang now (NULL: none). */
static struct tg_grec *grec_of(struct tg_replay *r, const struct tg__rpod *rp)
{
    char key[512];
    return tg_engine_gang(r->engine, tg_engine_gang_key(r->engine, &rp->live, key, sizeof key));
}

static struct tg__run *open_run(struct tg__rgang *g)
{
    struct tg__run *run = g->nruns ? &g->runs[g->nruns - 1] : NULL;
    return run && run->end < 0 ? run : NULL;
}

static struct tg__run *run_new(struct tg__rgang *g, int level, const char *domain)
{
    if (grow((void **)&g->runs, &g->capruns, g->nruns, sizeof *g->runs))
        return NULL;
    struct tg__run *run = &g->runs[g->nruns];
    memset(run, 0, sizeof *run);
    run->start = run->end = -1;
    run->level = level;
    run->by = NONE;
    if (domain && !(run->domain = strdup(domain)))
        return NULL;
    g->nruns++;
    return run;
}

static int run_add(struct tg_replay *r, struct tg__rgang *g, struct tg__run *run,
                   struct tg__rpod *rp)
{
    if (run->npods == run->cap) {
        uint32_t nc = run->cap ? run->cap * 2 : 4;
        uint32_t *np = realloc(run->pods, nc * sizeof *np), *nn;
        if (!np)
            return TG_ENOMEM;
        run->pods = np;
        if (!(nn = realloc(run->nodes, nc * sizeof *nn)))
            return TG_ENOMEM;
        run->nodes = nn;
        run->cap = nc;
    }
    run->pods[run->npods] = (uint32_t)(rp - r->pods);
    run->nodes[run->npods] = rp->node;
    run->npods++;
    rp->run = (uint32_t)(run - g->runs);
    return 0;
}

static int key_taken(const struct tg_replay *r, const char *k)
{
    uint64_t v;
    return tg_hmap_get(&r->data->pod_idx, k, strlen(k), &v) ||
           tg_hmap_get(&r->live_idx, k, strlen(k), &v);
}

/* Names rp's incarnation (the input name first, then <name>-r<inc>, never
 * another pod's name) and indexes it. */
static int live_key(struct tg_replay *r, struct tg__rpod *rp)
{
    const char *base = rp->sp->pod->key;
    char *k = NULL;
    if (!rp->inc) {
        k = strdup(base);
    } else {
        for (uint32_t x = 0; !k || key_taken(r, k); x++) {
            free(k);
            int n = x ? asprintf(&k, "%s-r%u-%u", base, rp->inc, x)
                      : asprintf(&k, "%s-r%u", base, rp->inc);
            if (n < 0) {
                k = NULL;
                break;
            }
        }
    }
    if (!k)
        return TG_ENOMEM;
    rp->live.key = k;
    return tg_hmap_put(&r->live_idx, k, strlen(k), (uint64_t)(rp - r->pods));
}

/* The key of rp's incarnation leaves the index; returns it (the caller's). */
static char *live_key_take(struct tg_replay *r, struct tg__rpod *rp)
{
    char *k = rp->live.key;
    if (k)
        tg_hmap_del(&r->live_idx, k, strlen(k));
    rp->live.key = NULL;
    return k;
}

/* ---- carrying decisions out ------------------------------------------------------------ */

/* When a bind started now finishes: at once, or after --bind-latency on
 * the first of api.bindConcurrency workers to be free. */
static int64_t bind_at(struct tg_replay *r)
{
    if (r->opts.bind_latency_ms <= 0)
        return r->now;
    uint32_t w = 0;
    for (uint32_t i = 1; i < r->nworkers; i++)
        if (r->bind_free[i] < r->bind_free[w])
            w = i;
    int64_t start = r->bind_free[w] > r->now ? r->bind_free[w] : r->now;
    return r->bind_free[w] = start + r->opts.bind_latency_ms;
}

/* The engine's gang of rp is bound when its last bind is: bind_done. */
static void binds_over(struct tg_replay *r, struct tg__rgang *g, const struct tg__rpod *rp)
{
    struct tg__run *run = open_run(g);
    if (run && run->start < 0)
        run->start = r->now - r->t0;
    struct tg_grec *gr = grec_of(r, rp);
    if (gr)
        tg_engine_bind_done(r->engine, gr, 1, 0);
}

/* rp's bind succeeded: bound (the pending stream loses it), running. */
static int bind_pod(struct tg_replay *r, struct tg__rpod *rp)
{
    struct tg__rgang *g = &r->gangs[rp->gang];
    rp->live.node = rp->node;
    int rc = tg_engine_bound_set(r->engine, &rp->live);
    tg_engine_pending_gone(r->engine, &rp->live);
    if (rc)
        return rc;
    rp->state = TG__RP_RUNNING;
    rp->bound_ms = r->now;
    use(r, rp, +1);
    if (rp->sp->duration_ms >= 0 &&
        (rc = ev_push(r, r->now + rp->sp->duration_ms, EV_COMPLETE, (uint32_t)(rp - r->pods),
                      rp->inc, NULL)))
        return rc;
    if (g->binding && !--g->binding)
        binds_over(r, g, rp);
    return 0;
}

static int place(struct tg_replay *r, struct tg__rgang *g, const struct tg_decision *d)
{
    const struct tg_cluster *c = tg_engine_cluster(r->engine);
    struct tg__run *run = open_run(g);
    if (!run) {
        char path[512];
        tg_tree_path(&c->tree, d->result.domain, path, sizeof path);
        if (!(run = run_new(g, d->result.level, path)))
            return TG_ENOMEM;
    }
    uint32_t first = run->npods;
    for (uint32_t i = 0; i < d->view.npods; i++) {
        if (d->result.slot[i] == TG_NONE)
            continue;
        struct tg__rpod *rp = rpod_of_live(d->view.pods[i]);
        rp->node = c->nodes[d->result.slot[i]].name;
        rp->state = TG__RP_BINDING;
        if (run_add(r, g, run, rp))
            return TG_ENOMEM;
    }
    struct tg_rank_report rep; /* rank order: what the placement's ring crosses */
    if (!tg_rank_report(c, d->view.pods, d->result.slot, d->view.npods, &rep, NULL) && rep.pairs) {
        r->sum.rank.pairs += rep.pairs;
        r->sum.rank.nlevels = rep.nlevels;
        for (uint32_t l = 0; l <= rep.nlevels; l++)
            r->sum.rank.cross[l] += rep.cross[l];
    }
    g->invalid = g->overdue = 0;
    gang_state(r, g, TG__RG_RUNNING);
    g->binding += run->npods - first;
    if (run->npods == first) { /* nothing to bind (cannot happen): do not leave it out */
        struct tg_grec *gr = d->gang;
        tg_engine_bind_done(r->engine, gr, 1, 0);
        return 0;
    }
    for (uint32_t i = first; i < run->npods; i++) {
        struct tg__rpod *rp = &r->pods[run->pods[i]];
        int64_t t = bind_at(r);
        int rc = t <= r->now ? bind_pod(r, rp)
                             : ev_push(r, t, EV_BIND, run->pods[i], rp->inc, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

/* rp is evicted: Terminating (it holds its node until its grace period
 * ends, or its work ends, whichever is first), then gone. */
static int evict_pod(struct tg_replay *r, struct tg__rpod *rp)
{
    r->sum.work_lost += (double)rp->main * (double)(r->now - rp->bound_ms) / 1000.0;
    r->sum.victim_pods++;
    rp->live.deleting = 1;
    int rc = tg_engine_bound_set(r->engine, &rp->live);
    int64_t gone = r->now + (int64_t)rp->live.grace_s * 1000, dur = rp->sp->duration_ms;
    if (dur >= 0 && rp->bound_ms + dur < gone)
        gone = rp->bound_ms + dur > r->now ? rp->bound_ms + dur : r->now;
    rp->state = TG__RP_GONE;
    int rc2 = ev_push(r, gone, EV_GONE, (uint32_t)(rp - r->pods), rp->inc, live_key_take(r, rp));
    return rc ? rc : rc2;
}

/* rp's controller creates it again: a new pending pod, created now. */
static int reincarnate(struct tg_replay *r, struct tg__rpod *rp)
{
    free(live_key_take(r, rp));
    rp->inc++;
    rp->live = *rp->sp->pod;
    rp->live.key = NULL;
    rp->live.node = 0;
    rp->live.deleting = 0;
    rp->live.phase = TG_PHASE_PENDING;
    rp->live.created_ms = r->now;
    rp->node = 0;
    rp->run = NONE;
    rp->state = TG__RP_PENDING;
    int rc = live_key(r, rp);
    return rc ? rc : tg_engine_pending_set(r->engine, &rp->live);
}

/* g's run was preempted by gang `by`: it ends, and every pod of it comes
 * back pending to run its whole duration again. */
static int rerun(struct tg_replay *r, struct tg__rgang *g, uint32_t by)
{
    struct tg__run *run = open_run(g);
    if (!run)
        return 0;
    run->end = r->now - r->t0;
    run->why = TG__RUN_PREEMPTED;
    run->by = by;
    if (run->start < 0)
        run->start = run->end;
    gang_state(r, g, TG__RG_WAITING);
    int rc = 0;
    for (uint32_t i = 0; i < run->npods && !rc; i++) {
        struct tg__rpod *rp = &r->pods[run->pods[i]];
        if (rp->state == TG__RP_RUNNING)
            rc = evict_pod(r, rp); /* not among the victims: cannot happen, whole gangs go */
        if (!rc && (rp->state == TG__RP_GONE || rp->state == TG__RP_DONE))
            rc = reincarnate(r, rp);
    }
    return rc;
}

/* Notes one victim unit on the preemptor; appends its pods' indices to vp. */
static int note_victim(struct tg_replay *r, struct tg__rgang *g, const struct tg_victim *v,
                       uint32_t *vp, uint32_t *nvp)
{
    struct tg__pre *x = &g->pre[g->npre++];
    uint32_t n = v->gang ? v->gang->nmembers : 1;
    memset(x, 0, sizeof *x);
    x->at = r->now - r->t0;
    if ((v->gang && v->gang->group && !(x->group = strdup(v->gang->key))) ||
        !(x->pods = calloc(n + 1, sizeof *x->pods)))
        return TG_ENOMEM;
    for (uint32_t k = 0; k < n; k++) {
        const char *key = v->gang ? v->gang->members[k]->key : v->pod->key;
        uint64_t idx;
        if (!tg_hmap_get(&r->live_idx, key, strlen(key), &idx))
            continue;
        vp[(*nvp)++] = (uint32_t)idx;
        if (!(x->pods[x->npods++] = strdup(r->pods[idx].sp->pod->key)))
            return TG_ENOMEM;
    }
    return 0;
}

static void run_done(struct tg_replay *r, struct tg__rgang *g, struct tg__rpod *rp);

/* An evicted elastic extra leaves its run, its work lost (evict_pod counted
 * it): the run ends when the rest completes. It is not created again. */
static void leave_run(struct tg_replay *r, struct tg__rpod *rp)
{
    if (rp->run != NONE)
        run_done(r, &r->gangs[rp->gang], rp);
}

static int preempt(struct tg_replay *r, struct tg__rgang *g, const struct tg_decision *d)
{
    const struct tg_preemption *pl = &d->preemption;
    uint32_t total = 0, nvp = 0;
    for (uint32_t i = 0; i < pl->nvictims; i++)
        total += pl->victims[i].gang ? pl->victims[i].gang->nmembers : 1;
    uint32_t *vp = malloc((total + 1) * sizeof *vp);
    uint8_t *alone = calloc(total + 1, 1); /* per vp: evicted alone from a gang of several */
    struct tg__pre *np = realloc(g->pre, (g->npre + pl->nvictims + 1) * sizeof *np);
    if (np)
        g->pre = np;
    if (!vp || !alone || !np) {
        free(vp);
        free(alone);
        return TG_ENOMEM;
    }
    /* names first: evicting may free the victims' gang records */
    int rc = 0;
    for (uint32_t i = 0; i < pl->nvictims && !rc; i++) {
        uint32_t before = nvp;
        rc = note_victim(r, g, &pl->victims[i], vp, &nvp);
        for (uint32_t k = before; k < nvp && !pl->victims[i].gang; k++) /* an elastic extra */
            alone[k] = r->pods[vp[k]].gang != NONE && r->gangs[r->pods[vp[k]].gang].npods > 1;
    }
    r->sum.preemptions++;
    r->sum.reclaims += pl->reclaim;
    r->sum.victim_gangs += pl->nvictims;
    for (uint32_t i = 0; i < nvp && !rc; i++)
        rc = evict_pod(r, &r->pods[vp[i]]);
    for (uint32_t i = 0; i < nvp && !rc; i++) {
        struct tg__rpod *rp = &r->pods[vp[i]];
        if (rp->gang == NONE)
            continue;
        if (alone[i])
            leave_run(r, rp); /* its gang runs on without it */
        else
            rc = rerun(r, &r->gangs[rp->gang], (uint32_t)(g - r->gangs));
    }
    free(vp);
    free(alone);
    return rc;
}

static int reserved(struct tg_replay *r, struct tg__rgang *g, const struct tg_decision *d)
{
    const struct tg_reservation *rv = tg_engine_reservation(r->engine, d->gang);
    r->sum.reservations++;
    if (!rv || g->resv_at >= 0)
        return 0;
    char path[512];
    tg_tree_path(&tg_engine_cluster(r->engine)->tree, rv->domain, path, sizeof path);
    g->resv_at = r->now - r->t0;
    return set_text(&g->resv_domain, path);
}

static int carry_out(struct tg_replay *r, const struct tg_decision *d)
{
    struct tg__rgang *g = gang_of(r, d->gang);
    if (!g)
        return 0;
    int rc = 0;
    r->changes++;
    g->priority = d->gang->priority;
    g->queue = d->gang->queue;
    if (d->timed_out) {
        r->sum.timed_out += !g->timed_out;
        g->timed_out = g->overdue = 1;
        r->quiet_from = r->now;
    }
    switch (d->kind) {
    case TG_D_PLACE:
        r->quiet_from = r->last_change = r->now;
        if ((rc = set_text(&g->reason, "")))
            return rc;
        return place(r, g, d);
    case TG_D_PREEMPT:
        r->quiet_from = r->last_change = r->now;
        rc = preempt(r, g, d);
        break;
    case TG_D_INVALID:
        g->invalid = 1;
        break;
    case TG_D_UNSCHEDULABLE:
        if (d->reservation_new) {
            r->quiet_from = r->now;
            rc = reserved(r, g, d);
        }
        break;
    default:
        break;
    }
    return rc ? rc : set_text(&g->reason, d->reason);
}

/* Decisions until the engine has none due now. */
static int drain(struct tg_replay *r)
{
    struct tg_engine_counts n;
    tg_engine_counts(r->engine, &n);
    uint64_t budget = 1024 + 16ull * (n.queued + n.nominations);
    r->cut = 0;
    while (budget--) {
        struct tg_decision d;
        int rc = tg_engine_next(r->engine, &d);
        if (!rc && d.kind == TG_D_NONE) {
            tg_decision_free(&d);
            return 0;
        }
        if (!rc)
            rc = carry_out(r, &d);
        tg_decision_free(&d);
        if (rc)
            return rc;
    }
    r->cut = 1; /* goes on a millisecond later rather than spin */
    return 0;
}

/* ---- events ------------------------------------------------------------------------- */

static int on_arrive(struct tg_replay *r, struct tg__rpod *rp)
{
    struct tg__rgang *g = &r->gangs[rp->gang];
    rp->state = TG__RP_PENDING;
    if (g->arrival < 0)
        g->arrival = r->now - r->t0;
    if (g->state != TG__RG_RUNNING)
        gang_state(r, g, TG__RG_WAITING);
    r->last_change = r->now;
    return tg_engine_pending_set(r->engine, &rp->live);
}

/* g's run is over when its last pod is: members still pending are not
 * needed any more. */
static void run_done(struct tg_replay *r, struct tg__rgang *g, struct tg__rpod *rp)
{
    struct tg__run *run = &g->runs[rp->run];
    if (++run->done < run->npods || run->end >= 0)
        return;
    run->end = r->now - r->t0;
    run->why = TG__RUN_COMPLETED;
    for (uint32_t i = 0; i < g->npods; i++) {
        struct tg__rpod *p = &r->pods[g->pods[i]];
        if (p->state == TG__RP_PENDING) {
            tg_engine_pending_gone(r->engine, &p->live);
            p->state = TG__RP_DONE;
        }
    }
    if (!g->binding)
        gang_state(r, g, TG__RG_DONE);
}

static int on_complete(struct tg_replay *r, struct tg__rpod *rp)
{
    rp->live.phase = TG_PHASE_SUCCEEDED;
    int rc = tg_engine_bound_set(r->engine, &rp->live);
    use(r, rp, -1);
    rp->state = TG__RP_DONE;
    if (rp->gang != NONE && rp->run != NONE)
        run_done(r, &r->gangs[rp->gang], rp);
    return rc;
}

static int handle(struct tg_replay *r, const struct tg__event *ev)
{
    struct tg__rpod *rp = &r->pods[ev->pod];
    int current = rp->inc == ev->inc;
    switch (ev->kind) {
    case EV_ARRIVE:
        return on_arrive(r, rp);
    case EV_BIND:
        return current && rp->state == TG__RP_BINDING ? bind_pod(r, rp) : 0;
    case EV_COMPLETE:
        return current && rp->state == TG__RP_RUNNING ? on_complete(r, rp) : 0;
    case EV_GONE:
        tg_engine_bound_gone(r->engine, ev->key);
        use(r, rp, -1);
        return 0;
    }
    return 0;
}

static int handle_due(struct tg_replay *r)
{
    int rc = 0;
    while (!rc && r->nev && r->ev[0].t <= r->now) {
        struct tg__event ev = ev_pop(r);
        rc = handle(r, &ev);
        free(ev.key);
        r->sum.events++;
        r->changes++;
        r->quiet_from = r->now;
    }
    return rc;
}

/* ---- setting up ------------------------------------------------------------------------ */

/* The trace starts at the earliest creationTimestamp of a pending pod of
 * this scheduler (else of any pod; else 0). */
static int64_t trace_start(const struct tg_replay *r)
{
    const struct tg_simdata *d = r->data;
    int64_t t0 = INT64_MAX, any = INT64_MAX;
    for (uint32_t i = 0; i < d->npods; i++) {
        const struct tg_pod *p = d->pods[i].pod;
        if (!p->created_ms)
            continue;
        if (p->created_ms < any)
            any = p->created_ms;
        if (!p->node && p->sched == r->ours && !tg_pod_terminal(p) && !p->deleting &&
            p->created_ms < t0)
            t0 = p->created_ms;
    }
    return t0 != INT64_MAX ? t0 : any != INT64_MAX ? any : 0;
}

/* Allocatable of Ready nodes; the main extended resource: a "gpu" one
 * first, the most plentiful next (cpu when there is none). */
static void resources(struct tg_replay *r)
{
    const struct tg_simdata *d = r->data;
    for (uint32_t i = 0; i < d->nnodes; i++) {
        const struct tg_node_obj *n = d->nodes[i];
        for (uint8_t k = 0; n->ready && k < n->nalloc; k++)
            if (n->alloc[k].res < TG_RES_MAX)
                r->alloc[n->alloc[k].res] += n->alloc[k].val;
    }
    r->main_res = TG_RES_CPU;
    int best_gpu = 0;
    for (uint32_t k = TG_RES_NFIXED; k < TG_RES_MAX && k < tg_res_count(); k++) {
        if (r->alloc[k] <= 0)
            continue;
        int gpu = strstr(tg_res_name(k), "gpu") != NULL;
        if (r->main_res == TG_RES_CPU || gpu > best_gpu ||
            (gpu == best_gpu && r->alloc[k] > r->alloc[r->main_res])) {
            r->main_res = k;
            best_gpu = gpu;
        }
    }
}

static struct tg__rgang *gang_make(struct tg_replay *r, const struct tg__rpod *rp)
{
    char key[512];
    tg_engine_gang_key(r->engine, rp->sp->pod, key, sizeof key);
    uint64_t v;
    struct tg__rgang *g;
    if (tg_hmap_get(&r->gang_idx, key, strlen(key), &v)) {
        g = &r->gangs[v];
    } else {
        g = &r->gangs[r->ngangs];
        if (!(g->key = strdup(key)) || tg_hmap_put(&r->gang_idx, g->key, strlen(g->key), r->ngangs))
            return NULL;
        r->ngangs++;
        g->grouped = strcmp(key, rp->sp->pod->key) != 0; /* a group, or its owner's gang */
        if (g->grouped && tg_hmap_get(&r->data->pg_idx, key, strlen(key), &v))
            g->pg = r->data->pgs[v];
        g->min = g->pg ? (uint32_t)g->pg->min_member : 1;
        g->arrival = g->resv_at = -1;
    }
    if (grow((void **)&g->pods, &g->cappods, g->npods, sizeof *g->pods))
        return NULL;
    g->pods[g->npods++] = (uint32_t)(rp - r->pods);
    g->main += rp->main;
    return g;
}

/* One record per input pod; gangs for this scheduler's pods. */
static int build(struct tg_replay *r)
{
    const struct tg_simdata *d = r->data;
    if (!(r->pods = calloc(d->npods + 1, sizeof *r->pods)) ||
        !(r->gangs = calloc(d->npods + 1, sizeof *r->gangs)))
        return TG_ENOMEM;
    r->npods = d->npods;
    for (uint32_t i = 0; i < d->npods; i++) {
        struct tg__rpod *rp = &r->pods[i];
        const struct tg_pod *p = d->pods[i].pod;
        rp->sp = &d->pods[i];
        rp->live = *p;
        rp->live.key = NULL;
        rp->gang = rp->run = NONE;
        rp->main = tg_rq_get(p->req, p->nreq, r->main_res);
        rp->state = TG__RP_GONE;
        if (tg_pod_terminal(p) || (!p->node && (p->sched != r->ours || p->deleting)))
            continue; /* never placed here */
        rp->state = TG__RP_FUTURE;
        if (live_key(r, rp))
            return TG_ENOMEM;
        struct tg__rgang *g;
        if (p->sched == r->ours && !p->deleting) {
            if (!(g = gang_make(r, rp)))
                return TG_ENOMEM;
            rp->gang = (uint32_t)(g - r->gangs);
        }
    }
    return 0;
}

/* A pod bound in the input: running from the start (Terminating: leaving). */
static int start_bound(struct tg_replay *r, struct tg__rpod *rp)
{
    int rc = tg_engine_bound_set(r->engine, &rp->live);
    if (rc)
        return rc;
    rp->node = rp->live.node;
    rp->bound_ms = r->now;
    rp->state = TG__RP_RUNNING;
    use(r, rp, +1);
    uint32_t idx = (uint32_t)(rp - r->pods);
    if (rp->live.deleting) {
        rp->state = TG__RP_GONE;
        int64_t dur = rp->sp->duration_ms, gone = r->now + (int64_t)rp->live.grace_s * 1000;
        if (dur >= 0 && r->now + dur < gone)
            gone = r->now + dur;
        return ev_push(r, gone, EV_GONE, idx, rp->inc, live_key_take(r, rp));
    }
    if (rp->sp->duration_ms >= 0 &&
        (rc = ev_push(r, r->now + rp->sp->duration_ms, EV_COMPLETE, idx, rp->inc, NULL)))
        return rc;
    if (rp->gang == NONE)
        return 0;
    struct tg__rgang *g = &r->gangs[rp->gang];
    struct tg__run *run = open_run(g);
    if (!run) {
        if (!(run = run_new(g, -1, NULL)))
            return TG_ENOMEM;
        run->start = 0;
        g->initial = 1;
        g->arrival = 0;
        gang_state(r, g, TG__RG_RUNNING);
    }
    return run_add(r, g, run, rp);
}

/* Objects to the engine (PriorityClasses, PodGroups, budgets, nodes, pods
 * running at the start); arrivals into the event heap. */
static int feed(struct tg_replay *r)
{
    const struct tg_simdata *d = r->data;
    struct tg_engine *e = r->engine;
    int rc = 0;
    for (uint32_t i = 0; i < d->npcs && !rc; i++)
        rc = tg_engine_pclass_set(e, d->pcs[i].name, &d->pcs[i].pc);
    if (d->nqueues && !rc) /* tenant Queues (issue 19): none, queues off */
        rc = tg_engine_queues_set(e, (const struct tg_queue_obj *const *)d->queues, d->nqueues);
    for (uint32_t i = 0; i < d->npgs; i++)
        tg_engine_podgroup_set(e, d->pgs[i]);
    for (uint32_t i = 0; i < d->nwls && !rc; i++)
        rc = tg_engine_workload_set(e, d->wls[i]);
    for (uint32_t i = 0; i < d->npdbs && !rc; i++)
        rc = tg_engine_pdb_set(e, d->pdbs[i]);
    for (uint32_t i = 0; i < d->nnodes && !rc; i++) {
        struct tg_node_obj *n = tg_node_clone(d->nodes[i]);
        rc = n ? tg_engine_node_set(e, n) : TG_ENOMEM;
    }
    for (uint32_t i = 0; i < r->npods && !rc; i++)
        if (r->pods[i].state == TG__RP_FUTURE && r->pods[i].live.node)
            rc = start_bound(r, &r->pods[i]);
    for (uint32_t i = 0; i < r->npods && !rc; i++) {
        const struct tg__rpod *rp = &r->pods[i];
        if (rp->state == TG__RP_FUTURE && rp->gang != NONE) {
            int64_t t = rp->live.created_ms > r->t0 ? rp->live.created_ms : r->t0;
            rc = ev_push(r, t, EV_ARRIVE, i, 0, NULL);
        }
    }
    return rc;
}

static int setup(struct tg_replay *r)
{
    r->ours = tg_intern(r->policy.scheduler_name);
    r->t0 = r->now = r->integ_at = r->last_change = r->quiet_from = trace_start(r);
    if (r->opts.sample_ms <= 0)
        r->opts.sample_ms = DEFAULT_SAMPLE_MS;
    r->nworkers = r->policy.bind_concurrency > 0 ? (uint32_t)r->policy.bind_concurrency : 1;
    if (!(r->bind_free = calloc(r->nworkers, sizeof *r->bind_free)))
        return TG_ENOMEM;
    resources(r);
    struct tg_clock clk = {virtual_clock, r};
    int rc = tg_engine_new(&r->engine, &r->policy, &clk);
    if (rc)
        return rc;
    r->engine_up = 1;
    tg_engine_set_owner_kinds(r->engine, r->data->wl_kinds); /* the owners the input holds form gangs */
    return build(r) || feed(r) || tg__rq_init(r) ? TG_ENOMEM : 0;
}

/* ---- the run ------------------------------------------------------------------------------ */

/* The next time anything can happen; INT64_MAX: the replay is over. */
static int64_t next_time(const struct tg_replay *r)
{
    int64_t due = tg_engine_next_due(r->engine);
    if (r->cut && due <= r->now)
        due = r->now + 1;
    if (r->nev)
        return r->ev[0].t < due ? r->ev[0].t : due;
    if (due == INT64_MAX)
        return due;
    /* only the engine's own timers are left: past a quiet spell and every
     * timeout, nothing can change any more */
    int64_t horizon = r->quiet_from + QUIET_MS + r->policy.reserve_after_s * 1000;
    int64_t last = tg_engine_latest_deadline(r->engine);
    if (last > horizon)
        horizon = last;
    return due > horizon ? INT64_MAX : due;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct(const int64_t *v, uint32_t n, double p)
{
    if (!n)
        return -1;
    uint32_t k = (uint32_t)(p / 100.0 * n + 0.999999);
    return (double)v[(k ? k : 1) - 1] / 1000.0;
}

/* Counts and waits of the gangs that arrived. */
static int summarize(struct tg_replay *r)
{
    struct tg_replay_summary *s = &r->sum;
    int64_t *w = malloc((r->ngangs + 1) * sizeof *w);
    uint32_t nw = 0;
    if (!w)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < r->ngangs; i++) {
        const struct tg__rgang *g = &r->gangs[i];
        if (g->arrival < 0)
            continue;
        s->gangs++;
        s->pods += g->npods;
        const char *st = tg__replay_status(g);
        s->completed += !strcmp(st, "Completed");
        s->running += !strcmp(st, "Running");
        s->pending += !strcmp(st, "Pending");
        s->unschedulable += !strcmp(st, "Unschedulable");
        s->invalid += !strcmp(st, "Invalid");
        if (!g->nruns || g->runs[0].start < 0)
            s->never_started++;
        else if (!g->initial)
            w[nw++] = g->runs[0].start - g->arrival;
    }
    qsort(w, nw, sizeof *w, cmp_i64);
    s->wait_p50 = pct(w, nw, 50);
    s->wait_p90 = pct(w, nw, 90);
    s->wait_p99 = pct(w, nw, 99);
    free(w);
    s->attempts = tg_engine_stats(r->engine)->attempts;
    s->end_s = (double)r->end / 1000.0;
    return 0;
}

static int finish(struct tg_replay *r, int until_hit)
{
    r->end = until_hit ? r->opts.until_ms : r->last_change - r->t0;
    if (r->end < 0)
        r->end = 0;
    integrate(r, r->t0 + r->end);
    tg__rq_finish(r, until_hit);
    while (r->nsamples && r->samples[r->nsamples - 1].t > r->end)
        r->nsamples--;
    int rc = 0;
    while (!rc && r->next_sample <= r->end) {
        rc = sample_take(r, r->next_sample);
        r->next_sample += r->opts.sample_ms;
    }
    return rc ? rc : summarize(r);
}

int tg_replay_run(struct tg_replay *r)
{
    double w0 = wall_ms();
    int rc = setup(r), until_hit = 0;
    while (!rc) {
        int64_t t = next_time(r);
        if (t == INT64_MAX)
            break;
        if (r->opts.until_ms >= 0 && t > r->t0 + r->opts.until_ms) {
            until_hit = 1;
            break;
        }
        if (!(rc = advance(r, t)) && !(rc = handle_due(r)))
            rc = drain(r);
        tg__rq_checkpoint(r);
    }
    if (!rc)
        rc = finish(r, until_hit);
    r->sum.run_ms = wall_ms() - w0;
    return rc;
}

/* ---- life cycle ----------------------------------------------------------------------------- */

struct tg_replay *tg_replay_new(const struct tg_simdata *data, const struct tg_policy *p,
                                const struct tg_replay_opts *o)
{
    struct tg_replay *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->data = data;
    r->policy = *p;
    if (o)
        r->opts = *o;
    else
        r->opts.until_ms = -1;
    return r;
}

const struct tg_replay_summary *tg_replay_summary(const struct tg_replay *r)
{
    return &r->sum;
}

static void gang_free(struct tg__rgang *g)
{
    for (uint32_t k = 0; k < g->nruns; k++) {
        free(g->runs[k].domain);
        free(g->runs[k].pods);
        free(g->runs[k].nodes);
    }
    for (uint32_t k = 0; k < g->npre; k++) {
        for (uint32_t j = 0; j < g->pre[k].npods; j++)
            free(g->pre[k].pods[j]);
        free(g->pre[k].pods);
        free(g->pre[k].group);
    }
    free(g->runs);
    free(g->pre);
    free(g->pods);
    free(g->key);
    free(g->resv_domain);
    free(g->reason);
}

void tg_replay_free(struct tg_replay **pr)
{
    struct tg_replay *r = *pr;
    if (!r)
        return;
    if (r->engine_up)
        tg_engine_delete(r->engine); /* first: it points at the pods */
    for (uint32_t i = 0; r->pods && i < r->npods; i++)
        free(r->pods[i].live.key);
    for (uint32_t i = 0; r->gangs && i < r->ngangs; i++)
        gang_free(&r->gangs[i]);
    for (uint32_t i = 0; i < r->nev; i++)
        free(r->ev[i].key);
    free(r->ev);
    free(r->pods);
    free(r->gangs);
    free(r->samples);
    free(r->bind_free);
    free(r->dom_free);
    free(r->dom_all);
    tg__rq_free(r);
    tg_hmap_free(&r->gang_idx);
    tg_hmap_free(&r->live_idx);
    free(r);
    *pr = NULL;
}
