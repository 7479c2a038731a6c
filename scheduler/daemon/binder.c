/* The binder: every placed member of a PLACE decision is bound concurrently
 * through the Binding subresource, within api.bindConcurrency requests in
 * flight over all gangs (the client's api.qps/burst limiter applies too). A
 * failed bind is retried (gang.bindRetries) unless the pod is gone, taken or
 * refused (404, 409, 422, 403). A bind that got no answer (connection
 * refused or broken, timed out: the API server may be down, and may have
 * bound the pod before the answer was lost) is retried once a second for up
 * to a minute instead, while the pod keeps its room. An answer 409 "already
 * assigned to node N" with N the node asked for is a success on any try: an
 * earlier try landed and its answer was lost, and the binder may not know of
 * that try (libcurl sends a request again by itself when the reused connection
 * it went on died before any answer). So a
 * restarted API server finds the binds it lost, and no room whose bind may
 * have landed is handed out again meanwhile. When the gang reaches minMember the failed
 * members are forgotten and tried again after a backoff; when it cannot, the
 * members bound in this attempt are deleted (their controller recreates
 * them; grace 0 for a pod that never ran, else its own grace period) and
 * the gang backs off. A rollback's deletes go once its RolledBack Event is
 * answered (TG__ROLLBACK_WAIT_MS at most): a scheduler killed in between
 * leaves no deletion unexplained (sent together, the apiserver could take
 * the deletes before the Event).
 *
 * Throttled (429, API Priority and Fairness) or failing server-side (5xx):
 * not a verdict on the pod. Only the refused bind waits: it is sent again
 * after the answer's Retry-After, else an exponential step of its own (250 ms
 * doubling to 32 s), plus 0-20% jitter so binds refused together do not come
 * back together. The other binds keep going: the client's congestion window
 * for writes (informer/client.h) halves what is in flight on the 429 and
 * grows back on successes, so the binder sends at the rate the server grants
 * instead of in waves. The member keeps its room meanwhile (it stays
 * assumed), and its bind fails only once the gang's timeout
 * (scheduleTimeoutSeconds, else gang.scheduleTimeoutSeconds) has passed
 * since the binds began. gang.bindRetries does not count these. The engine hears how it ended
 * (tg_engine_forget, tg_engine_bind_done), the reporter through on_note.
 *
 * Assumptions, as kube-scheduler's cache: a placed pod is assumed in the
 * model from the decision on; after a successful bind it stays assumed until
 * the informer sees it bound, or a minute passes without that (deleted right
 * after binding): then it is forgotten (tg__binder_tick).
 *
 * Only the lease holder binds: nothing is sent while the client's fence is
 * down (tg_client_fenced), and on standing down (tg__binder_standdown, or a
 * bind answered TG_EFENCED) an op is abandoned: no retry, no rollback (see
 * abandon()).
 *
 * Ops with binds never sent sit on an intrusive list, so queueing one cannot
 * fail; binds waiting for a retry on another, by due time (one binder-wide
 * list: a pump never scans a gang's members for a due one); every op is also
 * on a list of all ops, freed with the binder. */
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#define C "binder"

enum { B_WAIT, B_INFLIGHT, B_OK, B_FAILED };
enum { ASSUME_TTL_MS = 60000, SLOW_MS = 1000, UNANSWERED_RETRY_MS = 1000,
       UNANSWERED_MAX_MS = 60000, THROTTLE_MIN_MS = 250, THROTTLE_MAX_STEP = 7,
       RETRY_AFTER_MAX_MS = 60000 };

struct bindop;

struct bindpod {
    struct bindop *op;
    TAILQ_ENTRY(bindpod) rlink;         /* on the binder's retry list (B_WAIT, sent before) */
    char *key, *ns, *uid, *node;        /* owned */
    const char *name;                   /* inside key */
    uint8_t state, tries, throttles;    /* throttles: its binds answered 429 or 5xx (capped) */
    uint64_t t0;
    int64_t unanswered_ms;              /* loop ms of its first bind that got no answer, 0 none */
    int64_t retry_ms;                   /* B_WAIT: not sent before this loop ms */
    long status;
    char msg[160];
};

struct bindop {
    struct tg__binder *b;
    TAILQ_ENTRY(bindop) link;           /* every op */
    TAILQ_ENTRY(bindop) qlink;          /* ops with binds never sent (queued) */
    char *gang, *level, *domain;        /* owned */
    struct bindpod *p;
    uint32_t n, ok, failed, must;
    uint32_t fresh;                     /* p[fresh..n) never sent yet (B_WAIT, due now) */
    int64_t first_seen_ms;              /* the gang's, for the e2e metrics */
    int64_t start_ms;                   /* loop ms of its first bind sent, 0 before */
    int64_t giveup_ms;                  /* loop ms: throttled binds fail after this */
    uint8_t queued, slow_noted, abandoned;
};

/* A rollback whose deletes wait for its RolledBack Event's answer; on the
 * binder's list until that answer comes (the Event's ud), freed then or
 * with the binder. */
struct rbpod {
    char *ns, *name, *uid;              /* owned */
    int64_t grace;
};

struct rollback {
    struct tg__binder *b;
    LIST_ENTRY(rollback) link;          /* on the binder's rollbacks */
    char *gang;                         /* owned */
    int64_t due_ms;                     /* loop ms: the deletes go by then, answer or not */
    uint32_t n;
    uint8_t sent;
    struct rbpod p[];
};

struct tg__binder {
    struct tg_engine *e;
    struct tg_client *c;
    uv_loop_t *loop;
    struct tg__binder_hooks h;
    TAILQ_HEAD(, bindop) all, queue;
    TAILQ_HEAD(retryq, bindpod) retry;  /* binds waiting for a retry, by retry_ms */
    uint32_t inflight, stopping;
    struct tg_hmap assumed;             /* pod key (owned) -> expiry, loop ms */
    LIST_HEAD(, rollback) rollbacks;    /* waiting for their Event's answer, newest first */
};

static void rollbacks_due(struct tg__binder *b, int all);

/* ---- lists ------------------------------------------------------------------------------- */

static void all_add(struct tg__binder *b, struct bindop *op)
{
    TAILQ_INSERT_TAIL(&b->all, op, link);
}

static void all_del(struct bindop *op)
{
    TAILQ_REMOVE(&op->b->all, op, link);
}

static void enqueue(struct tg__binder *b, struct bindop *op)
{
    if (op->queued)
        return;
    TAILQ_INSERT_TAIL(&b->queue, op, qlink);
    op->queued = 1;
}

static void dequeue(struct bindop *op)
{
    if (!op->queued)
        return;
    TAILQ_REMOVE(&op->b->queue, op, qlink);
    op->queued = 0;
}

/* p (B_WAIT, due at p->retry_ms) onto the retry list, in due order: walked
 * from the tail, as a retry is mostly due after those already waiting. */
static void retry_push(struct tg__binder *b, struct bindpod *p)
{
    struct bindpod *at = TAILQ_LAST(&b->retry, retryq);
    while (at && at->retry_ms > p->retry_ms)
        at = TAILQ_PREV(at, retryq, rlink);
    if (at)
        TAILQ_INSERT_AFTER(&b->retry, at, p, rlink);
    else
        TAILQ_INSERT_HEAD(&b->retry, p, rlink);
}

static void retry_del(struct tg__binder *b, struct bindpod *p)
{
    TAILQ_REMOVE(&b->retry, p, rlink);
}

/* ---- assumptions ----------------------------------------------------------------------- */

struct assumed {
    char *key;
    int64_t expiry;
};

/* After a successful bind: forgotten at expiry unless seen bound before. On
 * out of memory the assumption goes at once (the bound stream brings the
 * pod back): nothing may stay assumed without an expiry. */
static void assumed_set(struct tg__binder *b, const char *key, int64_t expiry)
{
    uint64_t v;
    if (tg_hmap_get(&b->assumed, key, strlen(key), &v)) {
        ((struct assumed *)(uintptr_t)v)->expiry = expiry;
        return;
    }
    struct assumed *a = malloc(sizeof *a);
    if (!a || !(a->key = strdup(key))) {
        free(a);
        tg_engine_forget(b->e, key);
        return;
    }
    a->expiry = expiry;
    if (tg_hmap_put(&b->assumed, a->key, strlen(a->key), (uint64_t)(uintptr_t)a)) {
        free(a->key);
        free(a);
        tg_engine_forget(b->e, key);
    }
}

static void assumed_drop(struct tg__binder *b, struct assumed *a)
{
    tg_hmap_del(&b->assumed, a->key, strlen(a->key));
    free(a->key);
    free(a);
}

void tg__binder_tick(struct tg__binder *b)
{
    int64_t now = (int64_t)uv_now(b->loop);
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&b->assumed, &pos))) {
        struct assumed *a = (struct assumed *)(uintptr_t)s->val;
        const struct tg_usage *u = tg_cluster_usage(tg_engine_cluster(b->e), a->key);
        if (u && u->kind == TG_USAGE_ASSUMED && a->expiry > now)
            continue; /* not seen bound yet */
        if (u && u->kind == TG_USAGE_ASSUMED) {
            tg_debug(C, "assumption of %s expired: never seen bound", a->key);
            tg_engine_forget(b->e, a->key);
        }
        assumed_drop(b, a);
    }
    struct bindop *op;
    TAILQ_FOREACH(op, &b->all, link)
        if (op->start_ms && !op->slow_noted && now - op->start_ms > SLOW_MS) {
            op->slow_noted = 1; /* binds slower than a second: say so, once */
            struct tg__bind_note n = {.what = TG__BIND_SLOW, .pods = op->n, .must = op->must,
                                      .level = op->level, .domain = op->domain};
            if (b->h.on_note)
                b->h.on_note(b->h.ud, op->gang, &n);
        }
    tg_metrics_set(TG_G_ASSUMED_PODS, tg__binder_assumed(b));
    rollbacks_due(b, 0);
}

/* ---- ops ----------------------------------------------------------------------------------- */

static void op_free(struct bindop *op)
{
    for (uint32_t i = 0; op->p && i < op->n; i++) {
        free(op->p[i].key);
        free(op->p[i].ns);
        free(op->p[i].uid);
        free(op->p[i].node);
    }
    free(op->p);
    free(op->gang);
    free(op->level);
    free(op->domain);
    free(op);
}

static void note_of(const struct bindop *op, uint8_t what, uint32_t deleted,
                    struct tg__bind_note *n)
{
    *n = (struct tg__bind_note){.what = what, .pods = op->n, .ok = op->ok, .failed = op->failed,
                                .must = op->must, .deleted = deleted, .level = op->level,
                                .domain = op->domain};
    if (op->n) {
        n->pod_ns = op->p[0].ns;
        n->pod_name = op->p[0].name;
        n->pod_uid = op->p[0].uid;
    }
    for (uint32_t i = 0; i < op->n && !n->fail_key; i++)
        if (op->p[i].state == B_FAILED) {
            n->fail_key = op->p[i].key;
            n->fail_msg = op->p[i].msg;
            n->fail_status = op->p[i].status;
        }
}

static void note(struct bindop *op, uint8_t what, uint32_t deleted)
{
    struct tg__bind_note n;
    note_of(op, what, deleted, &n);
    if (op->b->h.on_note)
        op->b->h.on_note(op->b->h.ud, op->gang, &n);
}

static void on_deleted(void *ud, const struct tg_resp *r)
{
    if (r->err && r->status != 404)
        tg_warn(C, "%s failed: %s (HTTP %ld)", (const char *)ud,
                r->msg ? r->msg : tg_strerror(r->err), r->status);
}

/* The grace of a rollback delete: 0 for a pod that never ran (bound by this
 * scheduler a moment ago, no kubelet has started it), else -1: its own
 * terminationGracePeriodSeconds. Unknown (not in the cache yet): 0, it was
 * bound too recently to be seen running. */
static int64_t rollback_grace(const struct tg__binder *b, const char *key)
{
    const struct tg_store *bound = b->h.bound ? b->h.bound(b->h.ud) : NULL;
    const struct tg_pod *p = tg__bound_pod(bound, key);
    return p && p->started ? -1 : 0;
}

/* ---- rollbacks ------------------------------------------------------------------------------ */

static void rollback_free(struct rollback *rb)
{
    for (uint32_t i = 0; i < rb->n; i++) {
        free(rb->p[i].ns);
        free(rb->p[i].name);
        free(rb->p[i].uid);
    }
    free(rb->gang);
    free(rb);
}

/* A rollback of gang with room for n deletes, NULL out of memory (the
 * deletes then go at once, after the note). */
static struct rollback *rollback_new(struct tg__binder *b, const char *gang, uint32_t n)
{
    struct rollback *rb = n ? calloc(1, sizeof *rb + n * sizeof rb->p[0]) : NULL;
    if (rb && !(rb->gang = strdup(gang))) {
        free(rb);
        return NULL;
    }
    if (rb)
        rb->b = b;
    return rb;
}

static int send_delete(struct tg__binder *b, const char *gang, const char *ns, const char *name,
                       const char *uid, int64_t grace)
{
    if (!tg_api_delete_pod(b->c, ns, name, grace, uid, on_deleted, "rollback delete"))
        return 1;
    tg_warn(C, "gang %s: rollback delete of %s/%s could not be sent (out of memory); the "
            "gang's timeout rolls it back later", gang, ns, name);
    return 0;
}

/* One delete of rb, or at once when rb is NULL or full (out of memory). */
static void rollback_add(struct tg__binder *b, struct rollback *rb, const char *gang,
                         const char *ns, const char *name, const char *uid, int64_t grace)
{
    struct rbpod *p = rb ? &rb->p[rb->n] : NULL;
    if (p && (p->ns = strdup(ns)) && (p->name = strdup(name)) && (!uid || (p->uid = strdup(uid)))) {
        p->grace = grace;
        rb->n++;
        return;
    }
    if (p) {
        free(p->ns);
        free(p->name);
        *p = (struct rbpod){0};
    }
    if (send_delete(b, gang, ns, name, uid, grace))
        tg_metrics_inc(TG_M_PODS_DELETED, 1);
}

static void rollback_send(struct rollback *rb)
{
    if (rb->sent)
        return;
    rb->sent = 1;
    uint32_t deleted = 0;
    for (uint32_t i = 0; i < rb->n; i++)
        deleted += (uint32_t)send_delete(rb->b, rb->gang, rb->p[i].ns, rb->p[i].name, rb->p[i].uid,
                                         rb->p[i].grace);
    tg_metrics_inc(TG_M_PODS_DELETED, deleted);
}

/* The RolledBack Event of rb was answered (or not sent): its deletes go now,
 * if the wait did not already send them, and rb is done. */
static void rollback_told(void *ud, const struct tg_resp *r)
{
    struct rollback *rb = ud;
    if (r->err && r->err != TG_EEXIST && r->status != 404) /* EEXIST: the same went just now */
        tg_warn(C, "gang %s: RolledBack Event: %s (HTTP %ld); deleting %u member(s) all the same",
                rb->gang, r->msg ? r->msg : tg_strerror(r->err), r->status, rb->n);
    rollback_send(rb);
    LIST_REMOVE(rb, link);
    rollback_free(rb);
}

/* Tells the reporter of a rollback (n), rb's deletes waiting for its
 * Event; without rb (nothing to delete, out of memory) nothing waits. */
static void tell_rollback(struct tg__binder *b, const char *gang, struct tg__bind_note *n,
                          struct rollback *rb)
{
    if (rb && !rb->n) {
        rollback_free(rb);
        rb = NULL;
    }
    if (rb) {
        rb->due_ms = (int64_t)uv_now(b->loop) + TG__ROLLBACK_WAIT_MS;
        LIST_INSERT_HEAD(&b->rollbacks, rb, link);
        n->told = rollback_told;
        n->told_ud = rb;
    }
    if (b->h.on_note)
        b->h.on_note(b->h.ud, gang, n); /* may answer (free) rb at once */
    tg_metrics_inc(TG_M_ROLLBACKS, 1);
}

/* The deletes of rollbacks past their wait (all of them when all is set):
 * sent now; the records stay until their Event's answer. */
static void rollbacks_due(struct tg__binder *b, int all)
{
    int64_t now = (int64_t)uv_now(b->loop);
    struct rollback *rb;
    LIST_FOREACH(rb, &b->rollbacks, link)
        if (!rb->sent && (all || now >= rb->due_ms)) {
            if (!all)
                tg_warn(C, "gang %s: RolledBack Event not answered in %d ms; deleting %u "
                        "member(s) now", rb->gang, TG__ROLLBACK_WAIT_MS, rb->n);
            rollback_send(rb);
        }
}

/* minMember reached: failed members are forgotten and tried again later. */
static void succeeded(struct bindop *op)
{
    struct tg__binder *b = op->b;
    for (uint32_t i = 0; i < op->n; i++)
        if (op->p[i].state == B_FAILED)
            tg_engine_forget(b->e, op->p[i].key);
    double e2e = (double)(tg__now_ms() - op->first_seen_ms) / 1e3;
    tg_metrics_observe(TG_H_GANG_E2E, e2e);
    for (uint32_t i = 0; i < op->ok; i++)
        tg_metrics_observe(TG_H_POD_E2E, e2e);
    note(op, TG__BIND_DONE, 0);
}

/* minMember not reached: the members bound now are deleted; they stay
 * assumed (with their expiry) until the informer sees them go. The note (the
 * gang's status and its RolledBack Event) goes first, the deletes once the
 * Event is answered (tell_rollback), so a scheduler killed in the middle
 * leaves no deletion unexplained. */
static void rolled_back(struct bindop *op)
{
    struct tg__binder *b = op->b;
    struct rollback *rb = rollback_new(b, op->gang, op->ok);
    for (uint32_t i = 0; i < op->n; i++) {
        struct bindpod *p = &op->p[i];
        if (p->state != B_OK)
            tg_engine_forget(b->e, p->key);
        else
            rollback_add(b, rb, op->gang, p->ns, p->name, p->uid, rollback_grace(b, p->key));
    }
    struct tg__bind_note n;
    note_of(op, TG__BIND_ROLLED_BACK, op->ok, &n);
    tell_rollback(b, op->gang, &n, rb);
}

static void complete(struct bindop *op)
{
    struct tg__binder *b = op->b;
    dequeue(op); /* it may still be queued when its last bind filled the limit */
    all_del(op);
    int ok = op->ok >= op->must && op->ok > 0;
    if (ok)
        succeeded(op);
    else
        rolled_back(op);
    /* by key: the record may have gone (and come back) while the binds ran */
    struct tg_grec *g = tg_engine_gang(b->e, op->gang);
    if (g)
        tg_engine_bind_done(b->e, g, ok, op->failed > 0);
    op_free(op);
}

/* 409 "pod X is already assigned to node \"N\"" with N the node asked for:
 * an earlier try of this bind landed and its answer was lost (the uid is a
 * precondition of the Binding, so it is this pod). */
static int already_ours(const struct bindpod *p, const struct tg_resp *r)
{
    char want[300];
    snprintf(want, sizeof want, "already assigned to node \"%s\"", p->node);
    return r->status == 409 && r->msg && strstr(r->msg, want);
}

/* Throttled (429) or failing on the server's side (5xx). */
static int throttled(const struct tg_resp *r)
{
    return r->status == 429 || (r->status >= 500 && r->status < 600);
}

/* A throttled answer to p's bind at now: when p is sent again, its
 * Retry-After, else an exponential step of its own, plus jitter. */
static int64_t retry_at(struct bindpod *p, const struct tg_resp *r, int64_t now)
{
    int64_t delay;
    if (p->throttles < THROTTLE_MAX_STEP)
        p->throttles++;
    if (r->retry_after_s > 0)
        delay = r->retry_after_s * 1000 < RETRY_AFTER_MAX_MS ? r->retry_after_s * 1000
                                                              : RETRY_AFTER_MAX_MS;
    else
        delay = (int64_t)THROTTLE_MIN_MS << (p->throttles - 1);
    return now + delay + delay * (rand() % 21) / 100; /* jitter, never earlier than asked */
}

/* No HTTP answer (TG_EIO, TG_ETIMEOUT; not a local failure to even start). */
static int unanswered(const struct tg_resp *r)
{
    return r->status == 0 && (r->err == TG_EIO || r->err == TG_ETIMEOUT);
}

static void abandoned_bound(struct bindpod *p, const struct tg_resp *r);

static void on_bound(void *ud, const struct tg_resp *r)
{
    struct bindpod *p = ud;
    struct bindop *op = p->op;
    struct tg__binder *b = op->b;
    int64_t now = (int64_t)uv_now(b->loop);
    b->inflight--;
    tg_metrics_set(TG_G_INFLIGHT_BINDS, b->inflight);
    tg_metrics_observe(TG_H_BIND, (double)(uv_hrtime() - p->t0) / 1e9);
    if (op->abandoned || r->err == TG_EFENCED) {
        abandoned_bound(p, r); /* stood down: no retry, no rollback */
        return;
    }
    if (!r->err || already_ours(p, r)) {
        p->state = B_OK;
        op->ok++;
        tg_metrics_inc(TG_M_BINDS_OK, 1);
        assumed_set(b, p->key, (int64_t)uv_now(b->loop) + ASSUME_TTL_MS);
    } else {
        p->status = r->status;
        snprintf(p->msg, sizeof p->msg, "%s", r->msg ? r->msg : tg_strerror(r->err));
        /* gone (404), taken or changed (409), refused (422, 403): retrying cannot help */
        int final = r->status == 404 || r->status == 409 || r->status == 422 || r->status == 403;
        if (unanswered(r) && !p->unanswered_ms)
            p->unanswered_ms = now;
        if (throttled(r) && !b->stopping && now < op->giveup_ms) {
            p->state = B_WAIT; /* keeps its room; the other binds go on */
            p->retry_ms = retry_at(p, r, now);
            tg_metrics_inc(TG_M_BIND_RETRIES, 1);
            retry_push(b, p);
        } else if (!final && !b->stopping && p->unanswered_ms && now - p->unanswered_ms < UNANSWERED_MAX_MS) {
            p->state = B_WAIT; /* it may have landed: keep its room, ask again in a second */
            p->retry_ms = now + UNANSWERED_RETRY_MS;
            tg_metrics_inc(TG_M_BIND_RETRIES, 1);
            retry_push(b, p);
        } else if (!final && p->tries < tg_engine_policy(b->e)->bind_retries && !b->stopping) {
            p->state = B_WAIT;
            p->retry_ms = now;
            tg_metrics_inc(TG_M_BIND_RETRIES, 1);
            retry_push(b, p);
        } else {
            p->state = B_FAILED;
            op->failed++;
            tg_metrics_inc(TG_M_BINDS_FAILED, 1);
            tg_warn(C, "bind %s -> %s failed: %s (HTTP %ld)", p->key, p->node, p->msg, p->status);
        }
    }
    if (op->ok + op->failed == op->n)
        complete(op);
    else
        tg__binder_pump(b);
}

/* The bind to send next: a retry that is due, else the next one never sent
 * (ops in turn), NULL when none; off its list. A gang of N binds costs O(N). */
static struct bindpod *next_bind(struct tg__binder *b, int64_t now)
{
    struct bindpod *p = TAILQ_FIRST(&b->retry);
    if (p && p->retry_ms <= now) {
        retry_del(b, p);
        return p;
    }
    struct bindop *op = TAILQ_FIRST(&b->queue);
    if (!op)
        return NULL;
    p = &op->p[op->fresh++];
    if (op->fresh == op->n)
        dequeue(op);
    return p;
}

void tg__binder_pump(struct tg__binder *b)
{
    uint32_t limit = (uint32_t)tg_engine_policy(b->e)->bind_concurrency;
    if (tg_client_fenced(b->c))
        return; /* not the lease holder (any more): tg__binder_standdown abandons the ops */
    struct bindpod *p;
    while (b->inflight < limit && (p = next_bind(b, (int64_t)uv_now(b->loop)))) {
        struct bindop *op = p->op;
        p->state = B_INFLIGHT;
        p->tries++;
        if (!op->start_ms)
            op->start_ms = (int64_t)uv_now(b->loop);
        p->t0 = uv_hrtime();
        b->inflight++;
        int rc = tg_api_bind(b->c, p->ns, p->name, p->uid, p->node, on_bound, p);
        if (rc) {
            struct tg_resp fake = {.err = rc, .msg = tg_strerror(rc)};
            on_bound(p, &fake); /* may complete (free) op */
        }
    }
    tg_metrics_set(TG_G_INFLIGHT_BINDS, b->inflight);
}

/* ---- starting ------------------------------------------------------------------------------- */

/* Copies what the binds need out of the decision (its pods are the
 * informer's and may change before the binds end). */
static int op_fill(struct tg__binder *b, struct bindop *op, const struct tg_decision *d)
{
    const struct tg_cluster *c = tg_engine_cluster(b->e);
    const struct tg_policy *pol = tg_engine_policy(b->e);
    char path[512];
    tg_tree_path(&c->tree, d->result.domain, path, sizeof path);
    if (!(op->gang = strdup(d->gang->key)) || !(op->domain = strdup(path)) ||
        !(op->level = strdup(d->result.level ? pol->levels[d->result.level - 1].name : "cluster")) ||
        !(op->p = calloc(d->view.npods + 1, sizeof *op->p)))
        return TG_ENOMEM;
    for (uint32_t i = 0; i < d->view.npods; i++) {
        if (d->result.slot[i] == TG_NONE)
            continue;
        const struct tg_pod *pod = d->view.pods[i];
        struct bindpod *p = &op->p[op->n++];
        p->op = op;
        p->key = strdup(pod->key);
        p->ns = strdup(tg_str(pod->ns));
        p->uid = pod->uid && *pod->uid ? strdup(pod->uid) : NULL;
        p->node = strdup(tg_str(c->nodes[d->result.slot[i]].name));
        if (!p->key || !p->ns || !p->node || (pod->uid && *pod->uid && !p->uid))
            return TG_ENOMEM;
        p->name = p->key + pod->name_off;
    }
    return 0;
}

/* The binds could not start: nothing of d stays assumed, the gang backs off. */
static void undo(struct tg__binder *b, const struct tg_decision *d)
{
    for (uint32_t i = 0; i < d->view.npods; i++)
        if (d->result.slot[i] != TG_NONE)
            tg_engine_forget(b->e, d->view.pods[i]->key);
    tg_engine_bind_done(b->e, d->gang, 0, 1);
}

int tg__binder_bind(struct tg__binder *b, const struct tg_decision *d)
{
    struct bindop *op = calloc(1, sizeof *op);
    int rc = op ? op_fill(b, op, d) : TG_ENOMEM;
    if (rc) {
        if (op)
            op_free(op);
        tg_error(C, "gang %s: %s: binds not started, the gang backs off", d->gang->key,
                 tg_strerror(rc));
        undo(b, d);
        return rc;
    }
    op->b = b;
    op->must = d->must;
    const struct tg_podgroup *pg = d->gang->pg;
    int64_t timeout_s = pg && pg->timeout_s ? pg->timeout_s : tg_engine_policy(b->e)->gang_timeout_s;
    op->giveup_ms = (int64_t)uv_now(b->loop) + timeout_s * 1000;
    op->first_seen_ms = d->gang->first_seen_ms;
    if (op->n == 0) { /* cannot happen: a PLACE places someone */
        op_free(op);
        tg_engine_bind_done(b->e, d->gang, 1, 0);
        return 0;
    }
    tg_info(C, "gang %s: placed %u pod(s) in %s %s", op->gang, op->n, op->level,
            op->domain[0] ? op->domain : "(cluster)");
    all_add(b, op);
    enqueue(b, op);
    note(op, TG__BIND_STARTED, 0);
    tg__binder_pump(b);
    return 0;
}

/* ---- the rest ------------------------------------------------------------------------------ */

void tg__binder_rollback(struct tg__binder *b, const struct tg_grec *g,
                         const struct tg_store *bound, const char *why)
{
    /* as rolled_back(): the deletes go once the Event is answered */
    uint32_t todo = 0;
    for (uint32_t i = 0; i < g->nmembers; i++)
        todo += g->members[i]->kind == TG_USAGE_BOUND && tg__bound_pod(bound, g->members[i]->key);
    struct rollback *rb = rollback_new(b, g->key, todo);
    for (uint32_t i = 0; i < g->nmembers; i++) {
        const struct tg_usage *u = g->members[i];
        const struct tg_pod *p = tg__bound_pod(bound, u->key);
        if (u->kind == TG_USAGE_BOUND && p)
            rollback_add(b, rb, g->key, tg_str(p->ns), tg_pod_name(p), p->uid, p->started ? -1 : 0);
    }
    struct tg__bind_note n = {.what = TG__BIND_ROLLED_BACK, .deleted = todo, .level = "",
                              .domain = "", .why = why};
    tell_rollback(b, g->key, &n, rb);
}

int tg__binder_new(struct tg_engine *e, struct tg_client *c, uv_loop_t *loop,
                   const struct tg__binder_hooks *h, struct tg__binder **out)
{
    struct tg__binder *b = calloc(1, sizeof *b);
    *out = b;
    if (!b)
        return TG_ENOMEM;
    b->e = e;
    b->c = c;
    b->loop = loop;
    if (h)
        b->h = *h;
    TAILQ_INIT(&b->all);
    TAILQ_INIT(&b->queue);
    TAILQ_INIT(&b->retry);
    LIST_INIT(&b->rollbacks);
    return 0;
}

void tg__binder_free(struct tg__binder **pb)
{
    struct tg__binder *b = *pb;
    if (!b)
        return;
    *pb = NULL;
    struct bindop *op;
    while ((op = TAILQ_FIRST(&b->all))) {
        all_del(op);
        op_free(op);
    }
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&b->assumed, &pos))) {
        struct assumed *a = (struct assumed *)(uintptr_t)s->val;
        free(a->key);
        free(a);
    }
    tg_hmap_free(&b->assumed);
    struct rollback *rb;
    while ((rb = LIST_FIRST(&b->rollbacks))) {
        LIST_REMOVE(rb, link);
        rollback_free(rb);
    }
    free(b);
}

void tg__binder_stopping(struct tg__binder *b)
{
    b->stopping = 1;
    rollbacks_due(b, 1);
}

uint32_t tg__binder_inflight(const struct tg__binder *b)
{
    return b->inflight;
}

uint32_t tg__binder_assumed(const struct tg__binder *b)
{
    uint32_t n = b->assumed.len;
    const struct bindop *op;
    TAILQ_FOREACH(op, &b->all, link)
        n += op->n - op->ok - op->failed;
    return n;
}

/* ---- standing down ------------------------------------------------------------------------ */

/* The op ends without completing: the engine hears the binds are over, the
 * reporter that they stopped; no member is deleted, nothing is retried. */
static void abandon_end(struct bindop *op)
{
    struct tg__binder *b = op->b;
    all_del(op);
    note(op, TG__BIND_ABANDONED, 0);
    struct tg_grec *g = tg_engine_gang(b->e, op->gang);
    if (g)
        tg_engine_bind_done(b->e, g, op->ok >= op->must && op->ok > 0, 1);
    op_free(op);
}

/* This process stopped leading while op bound: its binds not sent are
 * forgotten (their pods are pending again in the model), those in flight end
 * as they come back (abandoned_bound), and then op ends. Members bound stay
 * bound: the next leader finds the gang half-bound and completes it or rolls
 * it back by its own rules (main.c rolled_back_half_bound); the old leader
 * deletes nothing, as it may not write any more. */
static void abandon(struct bindop *op)
{
    struct tg__binder *b = op->b;
    if (op->abandoned)
        return;
    op->abandoned = 1;
    dequeue(op);
    uint32_t unsent = 0;
    for (uint32_t i = 0; i < op->n; i++)
        if (op->p[i].state == B_WAIT) {
            if (i < op->fresh) /* sent before: waiting for its retry */
                retry_del(b, &op->p[i]);
            if (op->p[i].unanswered_ms) /* an earlier try may have landed: keep its room */
                assumed_set(b, op->p[i].key, (int64_t)uv_now(b->loop) + ASSUME_TTL_MS);
            else
                tg_engine_forget(b->e, op->p[i].key);
            op->p[i].state = B_FAILED;
            op->failed++;
            unsent++;
        }
    tg_warn(C, "gang %s: stood down mid-bind: %u of %u pod(s) bound, %u in flight, %u not "
            "sent; the leader completes or rolls back the gang", op->gang, op->ok, op->n,
            op->n - op->ok - op->failed, unsent);
}

/* A bind of an abandoned op came back. One that got no answer (or was
 * aborted at the fence) may have landed: its pod keeps its room until seen
 * bound or the assumption expires, as for any unanswered bind. */
static void abandoned_bound(struct bindpod *p, const struct tg_resp *r)
{
    struct bindop *op = p->op;
    struct tg__binder *b = op->b;
    abandon(op);
    if (!r->err || already_ours(p, r)) {
        p->state = B_OK;
        op->ok++;
        tg_metrics_inc(TG_M_BINDS_OK, 1);
        assumed_set(b, p->key, (int64_t)uv_now(b->loop) + ASSUME_TTL_MS);
    } else {
        p->state = B_FAILED;
        op->failed++;
        if (r->status == 0)
            assumed_set(b, p->key, (int64_t)uv_now(b->loop) + ASSUME_TTL_MS);
        else
            tg_engine_forget(b->e, p->key);
    }
    if (op->ok + op->failed == op->n)
        abandon_end(op);
}

void tg__binder_standdown(struct tg__binder *b)
{
    for (struct bindop *op = TAILQ_FIRST(&b->all), *nx; op; op = nx) {
        nx = TAILQ_NEXT(op, link);
        abandon(op);
        if (op->ok + op->failed == op->n)
            abandon_end(op);
    }
}
