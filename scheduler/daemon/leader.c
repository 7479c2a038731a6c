/* Leader election with a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection: every retry period (a third of the lease duration) the
 * leader renews; a candidate reads the Lease and takes it when it is free,
 * expired (renewTime + leaseDurationSeconds in the past) or already its own.
 * Writes carry the resourceVersion read, so two candidates cannot both win.
 * A leader that cannot renew within the lease duration steps down and stops
 * scheduling at once. On shutdown the leader clears holderIdentity so a
 * standby takes over without waiting for expiry. Only the leader binds. */
#include "scheduler/daemon/daemon.h"
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

#define C "leader"

struct tg__leader {
    struct tg_daemon *d;
    char ns[128], name[128];
    int dur_s;
    uv_timer_t timer;
    int64_t renewed;                    /* loop ms of the last successful renew */
    int busy, stopping;
    void (*done)(struct tg_daemon *);
};

static void set_leader(struct tg__leader *l, int on)
{
    struct tg_daemon *d = l->d;
    if (d->leader == on)
        return;
    d->leader = on;
    tg_metrics_set(TG_G_LEADER, on);
    tg_metrics_inc(TG_M_LEADER_TRANSITIONS, 1);
    if (on) {
        tg_info(C, "%s is now the leader (Lease %s/%s)", d->identity, l->ns, l->name);
        tg__kick(d);
    } else {
        tg_warn(C, "%s is no longer the leader: scheduling stops", d->identity);
    }
}

static void on_written(void *ud, const struct tg_resp *r);

static void write_lease(struct tg__leader *l, const struct tg_lease *cur, int create)
{
    struct tg_daemon *d = l->d;
    int64_t now = tg__wall_ms();
    struct tg_lease nl = {.holder = l->stopping ? "" : d->identity, .duration_s = l->dur_s,
                          .renew_ms = now, .acquire_ms = now, .rv = cur ? cur->rv : NULL};
    if (cur) {
        int mine = cur->holder && !strcmp(cur->holder, d->identity);
        nl.transitions = cur->transitions + (mine ? 0 : 1);
        if (mine && cur->acquire_ms)
            nl.acquire_ms = cur->acquire_ms;
    }
    l->busy = 1;
    int rc = create ? tg_api_lease_create(d->client, l->ns, l->name, &nl, on_written, l)
                    : tg_api_lease_update(d->client, l->ns, l->name, &nl, on_written, l);
    if (rc)
        l->busy = 0;
}

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Ends the election and hands over to the shutdown continuation. */
static void finish_stop(struct tg__leader *l)
{
    struct tg_daemon *d = l->d;
    void (*done)(struct tg_daemon *) = l->done;
    uv_timer_stop(&l->timer);
    uv_close((uv_handle_t *)&l->timer, on_closed);
    d->le = NULL;
    if (done)
        done(d);
}

static void on_written(void *ud, const struct tg_resp *r)
{
    struct tg__leader *l = ud;
    l->busy = 0;
    if (l->stopping) {
        if (r->err)
            tg_warn(C, "could not release the Lease: %s", r->msg ? r->msg : tg_strerror(r->err));
        else
            tg_info(C, "released the Lease");
        set_leader(l, 0);
        finish_stop(l);
        return;
    }
    if (r->err) {
        tg_debug(C, "lease write: %s (HTTP %ld)", r->msg ? r->msg : tg_strerror(r->err), r->status);
        if (l->d->leader && (int64_t)uv_now(l->d->loop) - l->renewed > l->dur_s * 1000LL)
            set_leader(l, 0);
        else if (r->status == 409)
            set_leader(l, 0); /* someone else wrote it: we are not the holder */
        return;
    }
    l->renewed = (int64_t)uv_now(l->d->loop);
    set_leader(l, 1);
}

static void on_read(void *ud, const struct tg_resp *r)
{
    struct tg__leader *l = ud;
    struct tg_daemon *d = l->d;
    l->busy = 0;
    if (l->stopping) {
        struct tg_lease cur = {0};
        if (!r->err && tg_lease_decode(r->body, r->len, &cur) == 0 && cur.holder &&
            !strcmp(cur.holder, d->identity)) {
            write_lease(l, &cur, 0); /* holder "" now: on_written finishes */
            tg_lease_free(&cur);
            if (l->busy)
                return;
        }
        tg_lease_free(&cur);
        set_leader(l, 0);
        finish_stop(l);
        return;
    }
    if (r->status == 404) {
        write_lease(l, NULL, 1);
        return;
    }
    if (r->err) {
        tg_warn(C, "cannot read Lease %s/%s: %s", l->ns, l->name, r->msg ? r->msg : tg_strerror(r->err));
        if (d->leader && (int64_t)uv_now(d->loop) - l->renewed > l->dur_s * 1000LL)
            set_leader(l, 0);
        return;
    }
    struct tg_lease cur = {0};
    if (tg_lease_decode(r->body, r->len, &cur)) {
        tg_warn(C, "Lease %s/%s is unreadable; trying to take it over", l->ns, l->name);
        tg_lease_free(&cur);
        return;
    }
    int64_t now = tg__wall_ms();
    int mine = cur.holder && !strcmp(cur.holder, d->identity);
    int free_ = !cur.holder || !cur.holder[0];
    int dur = cur.duration_s > 0 ? cur.duration_s : l->dur_s;
    int expired = cur.renew_ms + dur * 1000LL < now;
    if (mine || free_ || expired)
        write_lease(l, &cur, 0);
    else if (d->leader)
        set_leader(l, 0);
    tg_lease_free(&cur);
}

static void on_timer(uv_timer_t *t)
{
    struct tg__leader *l = t->data;
    if (l->busy || l->stopping)
        return;
    l->busy = 1;
    if (tg_api_lease_get(l->d->client, l->ns, l->name, on_read, l))
        l->busy = 0;
}

int tg__leader_start(struct tg_daemon *d, const char *ns, const char *name, int duration_s)
{
    struct tg__leader *l = calloc(1, sizeof *l);
    if (!l)
        return TG_ENOMEM;
    l->d = d;
    snprintf(l->ns, sizeof l->ns, "%s", ns);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->dur_s = duration_s;
    uv_timer_init(d->loop, &l->timer);
    l->timer.data = l;
    uint64_t period = (uint64_t)duration_s * 1000 / 3;
    uv_timer_start(&l->timer, on_timer, 0, period < 500 ? 500 : period);
    d->le = l;
    tg_info(C, "%s campaigning for Lease %s/%s (duration %ds)", d->identity, ns, name, duration_s);
    return 0;
}

void tg__leader_stop(struct tg_daemon *d, void (*done)(struct tg_daemon *))
{
    struct tg__leader *l = d->le;
    if (!l) {
        done(d);
        return;
    }
    l->stopping = 1;
    l->done = done;
    uv_timer_stop(&l->timer);
    if (d->leader && !l->busy) {
        /* release: read the current version, then clear the holder (on_read) */
        l->busy = 1;
        if (tg_api_lease_get(d->client, l->ns, l->name, on_read, l) == 0)
            return;
        l->busy = 0;
    }
    if (!l->busy)
        finish_stop(l);
    /* else a write or read in flight finishes the stop from its callback */
}
