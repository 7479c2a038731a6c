/* Leader election with a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection: every retry period (a third of the lease duration) the
 * leader renews; a candidate reads the Lease and takes it when it is free,
 * expired (renewTime + leaseDurationSeconds in the past) or already its own.
 * Writes carry the resourceVersion read, so two candidates cannot both win.
 * A leader that cannot renew within the lease duration steps down at once.
 * On shutdown the leader clears holderIdentity so a standby takes over
 * without waiting for expiry. The daemon learns of each change through
 * on_leader(ud, is_leader). Config: --leader-elect, --lease,
 * --lease-duration, --identity. */
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
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
    uv_timer_t timer;
    int64_t renewed;                    /* loop ms of the last successful renew */
    int leader, busy, stopping;
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
        tg_warn(C, "%s is no longer the leader: scheduling stops", l->identity);
    if (l->on_leader)
        l->on_leader(l->ud, on);
}

/* Too long without a renew: not the leader any more. */
static int renew_overdue(const struct tg__leader *l)
{
    return (int64_t)uv_now(l->loop) - l->renewed > l->dur_s * 1000LL;
}

static void on_written(void *ud, const struct tg_resp *r);

static void write_lease(struct tg__leader *l, const struct tg_lease *cur, int create)
{
    int64_t now = tg__wall_ms();
    struct tg_lease nl = {.holder = l->stopping ? "" : l->identity, .duration_s = l->dur_s,
                          .renew_ms = now, .acquire_ms = now, .rv = cur ? cur->rv : NULL};
    if (cur) {
        int mine = cur->holder && !strcmp(cur->holder, l->identity);
        nl.transitions = cur->transitions + (mine ? 0 : 1);
        if (mine && cur->acquire_ms)
            nl.acquire_ms = cur->acquire_ms;
    }
    l->busy = 1;
    int rc = create ? tg_api_lease_create(l->client, l->ns, l->name, &nl, on_written, l)
                    : tg_api_lease_update(l->client, l->ns, l->name, &nl, on_written, l);
    if (rc)
        l->busy = 0;
}

static void on_closed(uv_handle_t *h)
{
    struct tg__leader *l = h->data;
    void (*done)(void *) = l->done;
    void *ud = l->done_ud;
    free(l);
    if (done)
        done(ud);
}

/* Ends the election: the timer closes, then l is freed and done runs. */
static void finish_stop(struct tg__leader *l)
{
    set_leader(l, 0);
    uv_timer_stop(&l->timer);
    uv_close((uv_handle_t *)&l->timer, on_closed);
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
        if ((l->leader && renew_overdue(l)) || r->status == 409)
            set_leader(l, 0); /* 409: someone else wrote it, we are not the holder */
        return;
    }
    l->renewed = (int64_t)uv_now(l->loop);
    set_leader(l, 1);
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
        if (l->leader && renew_overdue(l))
            set_leader(l, 0);
        return;
    }
    struct tg_lease cur = {0};
    if (tg_lease_decode(r->body, r->len, &cur)) {
        tg_warn(C, "Lease %s/%s is unreadable; trying to take it over", l->ns, l->name);
        tg_lease_free(&cur);
        return;
    }
    int mine = cur.holder && !strcmp(cur.holder, l->identity);
    int vacant = !cur.holder || !cur.holder[0];
    int dur = cur.duration_s > 0 ? cur.duration_s : l->dur_s;
    int expired = cur.renew_ms + dur * 1000LL < tg__wall_ms();
    if (mine || vacant || expired)
        write_lease(l, &cur, 0);
    else
        set_leader(l, 0);
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

int tg__leader_start(uv_loop_t *loop, struct tg_client *c, const char *identity, const char *ns,
                     const char *name, int duration_s, void (*on_leader)(void *ud, int is_leader),
                     void *ud, struct tg__leader **out)
{
    struct tg__leader *l = calloc(1, sizeof *l);
    *out = l;
    if (!l)
        return TG_ENOMEM;
    l->client = c;
    l->loop = loop;
    snprintf(l->identity, sizeof l->identity, "%s", identity);
    snprintf(l->ns, sizeof l->ns, "%s", ns);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->dur_s = duration_s;
    l->on_leader = on_leader;
    l->ud = ud;
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    uint64_t period = (uint64_t)duration_s * 1000 / 3;
    uv_timer_start(&l->timer, on_timer, 0, period < 500 ? 500 : period);
    tg_info(C, "%s campaigning for Lease %s/%s (duration %ds)", identity, ns, name, duration_s);
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
