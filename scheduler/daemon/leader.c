/* Leader election with a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection; the decisions are informer/election.h's, judged on this
 * process's monotonic clock (never by comparing renewTime with the local wall
 * clock: a standby whose clock runs fast must not take over a healthy
 * leader).
 *
 * Every retry period (a quarter of the renew deadline) each replica reads
 * the Lease and writes it when it is free, its own, or has been seen
 * unchanged for the lease duration. Writes carry the resourceVersion read,
 * so two candidates cannot both win. The Lease's requests take the client's
 * urgent lane: a renewal never waits behind bulk writes.
 *
 * The leader leads until the renew deadline (--renew-deadline, default 2/3
 * of --lease-duration) after it sent its last successful renewal. The client
 * fences leader-only writes (Bindings, deletes, status patches) at that same
 * moment (tg_client_fence), and a timer says so to the daemon
 * (on_leader(ud, 0)): the binder abandons its binds, nothing is decided or
 * written any more. A standby takes over no sooner than a lease duration
 * after it last saw the record change, so the old leader's last write is
 * lease - renew_deadline older than the new leader's first.
 *
 * On shutdown the leader clears holderIdentity so a standby takes over
 * without waiting for expiry. Config: --leader-elect, --lease,
 * --lease-duration, --renew-deadline, --identity. */
#include "informer/election.h"
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C "leader"

struct tg__leader {
    struct tg_client *client;
    uv_loop_t *loop;
    char identity[256], ns[128], name[128];
    int dur_s;
    struct tg_election el;
    uv_timer_t timer;                   /* every retry period: read the Lease */
    uv_timer_t deadline;                /* at the renew deadline: stand down unless renewed */
    int64_t sent_ms;                    /* monotonic ms the write in flight was sent */
    int leader, busy, stopping, nclosed;
    void (*on_leader)(void *ud, int is_leader);
    void *ud;
    void (*done)(void *ud);             /* stopping: called once the Lease is released */
    void *done_ud;
};

static void set_leader(struct tg__leader *l, int on)
{
    if (l->leader == on)
        return;
    l->leader = on;
    tg_metrics_set(TG_G_LEADER, on);
    tg_metrics_inc(TG_M_LEADER_TRANSITIONS, 1);
    if (on)
        tg_info(C, "%s is now the leader (Lease %s/%s)", l->identity, l->ns, l->name);
    else
        tg_warn(C, "%s stood down: no longer the leader (last renewal sent %lld ms ago, renew "
                "deadline %lld ms): binding, evicting and status writes stop", l->identity,
                (long long)(tg_clock_mono_ms() - l->el.sent_ms), (long long)l->el.deadline_ms);
    if (l->on_leader)
        l->on_leader(l->ud, on);
}

static void on_deadline(uv_timer_t *t);

/* Leading or not as the election says now: the client's fence, the
 * deadline timer and the daemon follow. */
static void sync_leader(struct tg__leader *l)
{
    int64_t now = tg_clock_mono_ms();
    int on = tg_election_leading(&l->el, now);
    int64_t until = on ? tg_election_deadline(&l->el) : 0;
    tg_client_fence(l->client, until);
    if (on)
        uv_timer_start(&l->deadline, on_deadline, (uint64_t)(until - now), 0);
    else
        uv_timer_stop(&l->deadline);
    set_leader(l, on);
}

static void on_deadline(uv_timer_t *t)
{
    sync_leader(t->data);
}

static void on_written(void *ud, const struct tg_resp *r);

static void write_lease(struct tg__leader *l, const struct tg_lease *cur, int create)
{
    int64_t now = tg_clock_wall_ms(); /* a timestamp for people: nobody judges by it */
    struct tg_lease nl = {.holder = l->stopping ? "" : l->identity, .duration_s = l->dur_s,
                          .renew_ms = now, .acquire_ms = now, .rv = cur ? cur->rv : NULL};
    if (cur) {
        int mine = cur->holder && !strcmp(cur->holder, l->identity);
        nl.transitions = cur->transitions + (mine ? 0 : 1);
        if (mine && cur->acquire_ms)
            nl.acquire_ms = cur->acquire_ms;
    }
    l->busy = 1;
    l->sent_ms = tg_clock_mono_ms(); /* queued now, sent at once: never later than this */
    int rc = create ? tg_api_lease_create(l->client, l->ns, l->name, &nl, on_written, l)
                    : tg_api_lease_update(l->client, l->ns, l->name, &nl, on_written, l);
    if (rc)
        l->busy = 0;
}

static void on_closed(uv_handle_t *h)
{
    struct tg__leader *l = h->data;
    if (++l->nclosed < 2)
        return;
    void (*done)(void *) = l->done;
    void *ud = l->done_ud;
    free(l);
    if (done)
        done(ud);
}

/* Ends the election: the timers close, then l is freed and done runs. */
static void finish_stop(struct tg__leader *l)
{
    tg_election_lost(&l->el);
    sync_leader(l);
    uv_timer_stop(&l->timer);
    uv_close((uv_handle_t *)&l->timer, on_closed);
    uv_close((uv_handle_t *)&l->deadline, on_closed);
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
        finish_stop(l);
        return;
    }
    if (r->err) {
        tg_debug(C, "lease write: %s (HTTP %ld)", r->msg ? r->msg : tg_strerror(r->err), r->status);
        if (r->status == 409)
            tg_election_lost(&l->el); /* someone else wrote it: we are not the holder */
    } else {
        tg_election_written(&l->el, l->sent_ms, tg_clock_mono_ms());
    }
    sync_leader(l);
}

/* Stopping: clear the holder if it is still us, else just end. */
static void release(struct tg__leader *l, const struct tg_resp *r)
{
    struct tg_lease cur = {0};
    if (!r->err && tg_lease_decode(r->body, r->len, &cur) == 0 && cur.holder &&
        !strcmp(cur.holder, l->identity))
        write_lease(l, &cur, 0); /* holder "" now: on_written finishes */
    tg_lease_free(&cur);
    if (!l->busy)
        finish_stop(l);
}

static void on_read(void *ud, const struct tg_resp *r)
{
    struct tg__leader *l = ud;
    l->busy = 0;
    if (l->stopping) {
        release(l, r);
        return;
    }
    if (r->status == 404) {
        write_lease(l, NULL, 1);
        return;
    }
    if (r->err) {
        tg_warn(C, "cannot read Lease %s/%s: %s", l->ns, l->name, r->msg ? r->msg : tg_strerror(r->err));
        sync_leader(l);
        return;
    }
    struct tg_lease cur = {0};
    if (tg_lease_decode(r->body, r->len, &cur)) {
        tg_warn(C, "Lease %s/%s is unreadable; waiting for a valid one", l->ns, l->name);
        tg_lease_free(&cur);
        sync_leader(l);
        return;
    }
    if (tg_election_observe(&l->el, &cur, l->identity, tg_clock_mono_ms()) == TG_ELECT_WRITE)
        write_lease(l, &cur, 0);
    else
        sync_leader(l);
    tg_lease_free(&cur);
}

static void on_timer(uv_timer_t *t)
{
    struct tg__leader *l = t->data;
    if (l->busy || l->stopping)
        return;
    l->busy = 1;
    if (tg_api_lease_get(l->client, l->ns, l->name, on_read, l))
        l->busy = 0;
}

int tg__leader_start(uv_loop_t *loop, struct tg_client *c, const struct tg__leader_opts *o,
                     void (*on_leader)(void *ud, int is_leader), void *ud,
                     struct tg__leader **out)
{
    struct tg__leader *l = calloc(1, sizeof *l);
    *out = l;
    if (!l)
        return TG_ENOMEM;
    int64_t lease_ms = o->duration_s * 1000LL;
    int64_t deadline_ms = o->renew_deadline_ms ? o->renew_deadline_ms : lease_ms * 2 / 3;
    if (tg_election_init(&l->el, lease_ms, deadline_ms)) {
        free(l);
        *out = NULL;
        return TG_EINVAL;
    }
    l->client = c;
    l->loop = loop;
    snprintf(l->identity, sizeof l->identity, "%s", o->identity);
    snprintf(l->ns, sizeof l->ns, "%s", o->ns);
    snprintf(l->name, sizeof l->name, "%s", o->name);
    l->dur_s = o->duration_s;
    l->on_leader = on_leader;
    l->ud = ud;
    tg_client_fence(c, 0); /* nothing leader-only goes out before the Lease is ours */
    uv_timer_init(loop, &l->timer);
    uv_timer_init(loop, &l->deadline);
    l->timer.data = l->deadline.data = l;
    uint64_t period = (uint64_t)deadline_ms / 4;
    uv_timer_start(&l->timer, on_timer, 0, period < 100 ? 100 : period);
    tg_info(C, "%s campaigning for Lease %s/%s (duration %d s, renew deadline %lld ms, retry "
            "every %llu ms)", l->identity, l->ns, l->name, o->duration_s, (long long)deadline_ms,
            (unsigned long long)(period < 100 ? 100 : period));
    return 0;
}

void tg__leader_stop(struct tg__leader **pl, void (*done)(void *ud), void *ud)
{
    struct tg__leader *l = *pl;
    *pl = NULL;
    if (!l) {
        done(ud);
        return;
    }
    l->stopping = 1;
    l->done = done;
    l->done_ud = ud;
    uv_timer_stop(&l->timer);
    if (l->leader && !l->busy) {
        /* release: read the current version, then clear the holder (on_read) */
        l->busy = 1;
        if (tg_api_lease_get(l->client, l->ns, l->name, on_read, l) == 0)
            return;
        l->busy = 0;
    }
    if (!l->busy)
        finish_stop(l);
    /* else a write or read in flight finishes the stop from its callback */
}
