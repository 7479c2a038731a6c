/* The binder: every placed member of a gang is bound concurrently through
 * the Binding subresource, within api.bindConcurrency requests in flight over
 * all gangs (the client's qps/burst limiter applies too). A failed bind is
 * retried (gang.bindRetries) unless the pod is gone or taken. When the gang
 * cannot reach minMember, the members bound in this attempt are deleted
 * (their controller recreates them), assumptions are dropped, an Event says
 * so, and the gang goes back to the queue with backoff.
 *
 * An assumed pod counts as placed from the cycle until the informer sees it
 * bound; if it never does (deleted right after binding), the assumption
 * expires after a minute (tg__assumed_sweep), as kube-scheduler's cache TTL. */
#include "scheduler/daemon/daemon.h"
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C "binder"

enum { B_WAIT, B_INFLIGHT, B_OK, B_FAILED };
enum { ASSUME_TTL_MS = 60000 };

struct bindpod {
    struct tg_bindop *op;
    char *key, *ns, *name, *uid, *node;
    uint8_t state, tries;
    uint64_t t0;
    long status;
    char msg[160];
};

struct tg_bindop {
    struct tg_daemon *d;
    struct tg_dgang *g;
    struct bindpod *p;
    uint32_t n, ok, failed, must, inflight;
    uint32_t base;                      /* members bound before this attempt */
    int queued;
};

struct assumed {
    char *key;
    int64_t expiry;
};

void tg__assumed_set(struct tg_daemon *d, const char *key, int64_t expiry, int keep)
{
    uint64_t v;
    if (tg_hmap_get(&d->assumed, key, strlen(key), &v)) {
        struct assumed *a = (struct assumed *)(uintptr_t)v;
        if (!keep || expiry < a->expiry)
            a->expiry = expiry;
        return;
    }
    struct assumed *a = malloc(sizeof *a);
    if (!a || !(a->key = strdup(key))) {
        free(a);
        return;
    }
    a->expiry = expiry;
    if (tg_hmap_put(&d->assumed, a->key, strlen(a->key), (uint64_t)(uintptr_t)a)) {
        free(a->key);
        free(a);
    }
}

void tg__assumed_del(struct tg_daemon *d, const char *key)
{
    uint64_t v;
    if (!tg_hmap_get(&d->assumed, key, strlen(key), &v))
        return;
    struct assumed *a = (struct assumed *)(uintptr_t)v;
    tg_hmap_del(&d->assumed, key, strlen(key));
    free(a->key);
    free(a);
}

void tg__assumed_clear(struct tg_daemon *d)
{
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&d->assumed, &pos))) {
        struct assumed *a = (struct assumed *)(uintptr_t)s->val;
        free(a->key);
        free(a);
    }
    tg_hmap_free(&d->assumed);
}

void tg__assumed_sweep(struct tg_daemon *d)
{
    int64_t now = (int64_t)uv_now(d->loop);
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&d->assumed, &pos))) {
        struct assumed *a = (struct assumed *)(uintptr_t)s->val;
        if (a->expiry > now)
            continue;
        struct tg_usage *u = tg_cluster_usage(&d->sched.cluster, a->key);
        if (u && u->assumed) {
            tg_debug(C, "assumption of %s expired: never seen bound", a->key);
            tg_cluster_pod_delete(&d->sched.cluster, a->key);
        }
        tg_hmap_del(&d->assumed, a->key, strlen(a->key));
        free(a->key);
        free(a);
    }
}

static void op_free(struct tg_bindop *op)
{
    for (uint32_t i = 0; i < op->n; i++) {
        free(op->p[i].key);
        free(op->p[i].ns);
        free(op->p[i].uid);
        free(op->p[i].node);
    }
    free(op->p);
    free(op);
}

static void on_deleted(void *ud, const struct tg_resp *r)
{
    (void)ud;
    if (r->err && r->status != 404)
        tg_warn(C, "rollback delete failed: %s (HTTP %ld)", r->msg ? r->msg : tg_strerror(r->err),
                r->status);
}

static void dequeue(struct tg_daemon *d, struct tg_bindop *op)
{
    for (uint32_t i = 0; op->queued && i < d->nbindq; i++)
        if (d->bindq[i] == op) {
            memmove(d->bindq + i, d->bindq + i + 1, (d->nbindq - i - 1) * sizeof *d->bindq);
            d->nbindq--;
            op->queued = 0;
        }
}

static void complete(struct tg_bindop *op)
{
    struct tg_daemon *d = op->d;
    struct tg_dgang *g = op->g;
    dequeue(d, op); /* it may still be queued when its last bind filled the limit */
    g->op = NULL;
    if (op->ok >= op->must && op->ok > 0) {
        for (uint32_t i = 0; i < op->n; i++)
            if (op->p[i].state == B_FAILED)
                tg_cluster_pod_delete(&d->sched.cluster, op->p[i].key);
        double e2e = (double)(tg__wall_ms() - g->first_seen_ms) / 1e3;
        tg_metrics_observe(TG_H_GANG_E2E, e2e);
        for (uint32_t i = 0; i < op->ok; i++)
            tg_metrics_observe(TG_H_POD_E2E, e2e);
        if (op->failed)
            snprintf(g->reason, sizeof g->reason, "bound %u of %u (%u failed and wait for another try)",
                     op->ok, op->n, op->failed);
        else
            snprintf(g->reason, sizeof g->reason, "bound %u pod(s) in %s %s", op->ok, g->level,
                     g->domain[0] ? g->domain : "(cluster)");
        g->phase = op->failed ? TG_PG_PENDING : TG_PG_SCHEDULED;
        g->nbound_known = op->base + op->ok;
        tg_info(C, "gang %s: %s", g->key, g->reason);
        tg__gang_report(d, g, "Normal", "Scheduled");
        g->reason[0] = 0;
        if (op->failed)
            tg__gang_backoff(d, g);
    } else {
        uint32_t deleted = 0;
        for (uint32_t i = 0; i < op->n; i++) {
            struct bindpod *b = &op->p[i];
            tg_cluster_pod_delete(&d->sched.cluster, b->key);
            tg__assumed_del(d, b->key);
            if (b->state == B_OK) {
                tg_api_delete_pod(d->client, b->ns, b->name, 0, b->uid, on_deleted, NULL);
                deleted++;
            }
        }
        const struct bindpod *f = NULL;
        for (uint32_t i = 0; i < op->n && !f; i++)
            if (op->p[i].state == B_FAILED)
                f = &op->p[i];
        snprintf(g->reason, sizeof g->reason,
                 "bound %u of %u, needed %u: rolled back, deleted %u bound member(s); first "
                 "failure %s: %s (HTTP %ld)", op->ok, op->n, op->must, deleted,
                 f ? f->key : "-", f ? f->msg : "-", f ? f->status : 0L);
        tg_warn(C, "gang %s: %s", g->key, g->reason);
        tg_metrics_inc(TG_M_ROLLBACKS, 1);
        tg_metrics_inc(TG_M_PODS_DELETED, deleted);
        g->phase = TG_PG_PENDING;
        tg__gang_report(d, g, "Warning", "RolledBack");
        tg__gang_backoff(d, g);
    }
    op_free(op);
    tg__kick(d);
}

static void enqueue(struct tg_daemon *d, struct tg_bindop *op)
{
    if (op->queued)
        return;
    if (d->nbindq == d->capbindq) {
        uint32_t nc = d->capbindq ? d->capbindq * 2 : 16;
        struct tg_bindop **nq = realloc(d->bindq, nc * sizeof *nq);
        if (!nq)
            return;
        d->bindq = nq;
        d->capbindq = nc;
    }
    d->bindq[d->nbindq++] = op;
    op->queued = 1;
}

static void on_bound(void *ud, const struct tg_resp *r)
{
    struct bindpod *b = ud;
    struct tg_bindop *op = b->op;
    struct tg_daemon *d = op->d;
    d->inflight_binds--;
    op->inflight--;
    tg_metrics_set(TG_G_INFLIGHT_BINDS, d->inflight_binds);
    tg_metrics_observe(TG_H_BIND, (double)(uv_hrtime() - b->t0) / 1e9);
    if (!r->err) {
        b->state = B_OK;
        op->ok++;
        tg_metrics_inc(TG_M_BINDS_OK, 1);
        tg__assumed_set(d, b->key, (int64_t)uv_now(d->loop) + ASSUME_TTL_MS, 0);
    } else {
        b->status = r->status;
        snprintf(b->msg, sizeof b->msg, "%s", r->msg ? r->msg : tg_strerror(r->err));
        /* gone (404), or taken/changed (409): retrying cannot help */
        int final = r->status == 404 || r->status == 409 || r->status == 422 || r->status == 403;
        if (!final && b->tries < d->sched.policy.bind_retries && !d->stopping) {
            b->state = B_WAIT;
            tg_metrics_inc(TG_M_BIND_RETRIES, 1);
            enqueue(d, op);
        } else {
            b->state = B_FAILED;
            op->failed++;
            tg_metrics_inc(TG_M_BINDS_FAILED, 1);
            tg_warn(C, "bind %s -> %s failed: %s (HTTP %ld)", b->key, b->node, b->msg, b->status);
        }
    }
    if (op->ok + op->failed == op->n)
        complete(op);
    else
        tg__binder_pump(d);
}

void tg__binder_pump(struct tg_daemon *d)
{
    uint32_t limit = (uint32_t)d->sched.policy.bind_concurrency;
    while (d->nbindq && d->inflight_binds < limit) {
        struct tg_bindop *op = d->bindq[0];
        struct bindpod *b = NULL;
        for (uint32_t i = 0; i < op->n && !b; i++)
            if (op->p[i].state == B_WAIT)
                b = &op->p[i];
        if (!b) {
            dequeue(d, op);
            continue;
        }
        b->state = B_INFLIGHT;
        b->tries++;
        if (!op->g->op_start_ms)
            op->g->op_start_ms = (int64_t)uv_now(d->loop);
        b->t0 = uv_hrtime();
        int rc = tg_api_bind(d->client, b->ns, b->name, b->uid, b->node, on_bound, b);
        if (rc) {
            struct tg_resp fake = {.err = rc, .msg = tg_strerror(rc)};
            d->inflight_binds++;
            op->inflight++;
            on_bound(b, &fake);
            continue;
        }
        d->inflight_binds++;
        op->inflight++;
    }
    tg_metrics_set(TG_G_INFLIGHT_BINDS, d->inflight_binds);
}

int tg__bind_gang(struct tg_daemon *d, struct tg_dgang *g, struct tg_pod **pods,
                  const uint32_t *slot, uint32_t n, uint32_t must)
{
    struct tg_bindop *op = calloc(1, sizeof *op);
    if (!op || !(op->p = calloc(n + 1, sizeof *op->p))) {
        free(op);
        return TG_ENOMEM;
    }
    op->d = d;
    op->g = g;
    op->must = must;
    for (uint32_t i = 0; i < n; i++) {
        if (slot[i] == TG_NONE)
            continue;
        struct bindpod *b = &op->p[op->n++];
        b->op = op;
        b->key = strdup(pods[i]->key);
        b->ns = strdup(tg_str(pods[i]->ns));
        b->uid = pods[i]->uid && *pods[i]->uid ? strdup(pods[i]->uid) : NULL;
        b->node = strdup(tg_str(d->sched.cluster.nodes[slot[i]].name));
        if (!b->key || !b->ns || !b->node) {
            op_free(op);
            return TG_ENOMEM;
        }
        b->name = b->key + (strlen(b->ns) + 1);
    }
    if (op->n == 0) {
        op_free(op);
        return 0;
    }
    g->op = op;
    g->phase = TG_PG_SCHEDULING;
    g->op_start_ms = 0; /* set when its first bind is sent (queueing is not binding) */
    op->base = g->nbound;
    snprintf(g->reason, sizeof g->reason, "binding %u pod(s) in %s %s", op->n, g->level,
             g->domain[0] ? g->domain : "(cluster)");
    /* no status write yet: most gangs bind within milliseconds, and the
     * scheduling tick writes Scheduling only if the binds take over a second */
    enqueue(d, op);
    tg__binder_pump(d);
    return 0;
}
