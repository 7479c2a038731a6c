/* `topogang scheduler`: options, the wiring of the pieces (internal.h), the
 * scheduling tick, shutdown.
 *
 * The tick asks the engine for decisions (tg_engine_next) until it says
 * NONE or about 100 ms are spent, hands each one to the binder (PLACE), the
 * evictor (PREEMPT) and the reporter (all), then sleeps until the engine's
 * next due time (a backoff ending, a deadline) or the next housekeeping
 * (metrics, expired assumptions, slow binds), whichever comes first; an
 * informer event that may give the engine work wakes it within a few ms.
 * Only the leader (--leader-elect) asks for decisions, and only while its
 * lease is renewed within the renew deadline (leader.c; the client fences
 * leader-only writes at that deadline); every replica keeps its model and
 * queue current. The engine runs on tg_clock_steady_wall_ms: a step of the
 * wall clock moves no timeout or backoff.
 *
 * Config: the policy ConfigMap (--config-map NS/NAME, key config.yaml,
 * reloaded live) or --config FILE; every policy key applies live through
 * the engine, api.{qps,burst} through the client. SIGTERM/SIGINT: no new
 * decisions, binds in flight finish and the writes they lead to (the gangs'
 * status, Events, rollback deletes) are sent (10 s at most), the Lease is
 * released, exit 0. */
#include "scheduler/daemon/daemon.h"
#include "informer/kubeconfig.h"
#include "plugins/numa.h"
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
#include "util/clock.h"
#include "scheduler/fairshare.h"
#include "scheduler/loss.h"
#include "scheduler/rank.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/strbuf.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define C "scheduler"

enum { BUDGET_MS = 100, HOUSEKEEPING_MS = 200, KICK_MS = 5, SHUTDOWN_MS = 10000 };

struct opts {
    const char *kubeconfig, *context, *cmap, *cfile, *listen;
    const char *metrics_addr, *health_addr;     /* --metrics/--health-bind-address */
    int allow_http;                             /* --allow-insecure-http */
    char scheduler_name[128], identity[256];
    char config_ns[128], config_name[128], lease_ns[128], lease_name[128];
    int leader_elect, lease_s;
    int64_t renew_deadline_ms;          /* --renew-deadline; 0: 2/3 of the lease */
    unsigned gang_sources;              /* --gang-sources (TG_INF_BIT each) */
    int rediscover_s;                   /* --rediscover-seconds; 0: never */
    struct tg_policy policy;            /* --config, else the defaults */
};

struct tg_daemon {
    uv_loop_t loop;
    struct opts o;
    struct tg_client *client;
    struct tg_informer *inf;
    struct tg_engine *engine;
    struct tg__handlers handlers;
    struct tg__report report;
    struct tg__binder *binder;
    struct tg__evictor *evictor;
    struct tg__loss *loss;
    struct tg__queues *queues;
    struct tg__usage *usage;
    struct tg__leader *leader;
    uv_timer_t tick;
    uv_prepare_t logflush;          /* the held log records out before the loop waits */
    uv_signal_t sigterm, sigint;
    uint8_t engine_up, handles_up, synced, is_leader, stopping;
    uint64_t nomem_seen;                /* the engine's stats.nomem when last looked at */
    int64_t housekept_ms, shutdown_deadline_ms;
};

int64_t tg__wall_ms(void)
{
    return tg_clock_wall_ms();
}

int64_t tg__now_ms(void)
{
    return tg_clock_steady_wall_ms();
}

static int64_t engine_clock(void *ud)
{
    (void)ud;
    return tg__now_ms();
}

/* ---- the tick --------------------------------------------------------------------------- */

static void on_tick(uv_timer_t *t);

static int scheduling(const struct tg_daemon *d)
{
    return d->synced && d->is_leader && !d->stopping && d->client && !tg_client_fenced(d->client) &&
           d->usage && tg__usage_ready(d->usage);
}

/* The engine may have work: tick soon. */
static void kick(void *ud)
{
    struct tg_daemon *d = ud;
    if (scheduling(d) && uv_timer_get_due_in(&d->tick) > KICK_MS)
        uv_timer_start(&d->tick, on_tick, KICK_MS, 0);
}

/* The tenant Queues changed (scheduler/daemon/queues.c): the engine gets
 * the whole current set (issue 19) and tries what waits for it. */
static void on_queues(void *ud)
{
    struct tg_daemon *d = ud;
    const struct tg_queue_obj **qs = NULL;
    int n = tg__queues_current(d->queues, &qs);
    if (n < 0 || tg_engine_queues_set(d->engine, qs, (uint32_t)n))
        tg_warn(C, "tenant queues: out of memory taking the new set; the last one stays");
    free(qs);
    kick(d);
}

/* A gang with some members bound but fewer than minMember that cannot get
 * the rest. A gang that ran complete and lost members since (its PodGroup's
 * status or its members say so: scheduler/loss.h) is never rolled back: the
 * loss module watches it (grace, then gang.onMemberLoss). A half-bound gang
 * (never complete) has its bound members deleted when this is the first
 * decision this process makes for it and its rest does not fit next to them
 * (a scheduler died mid-bind), or once it has waited past its timeout (an
 * UNSCHEDULABLE or WAITING decision: e.g. a rollback whose deletes failed
 * while the API server was down, or members gone for good). */
static int rolled_back_half_bound(struct tg_daemon *d, const struct tg_decision *dc)
{
    struct tg_grec *g = dc->gang;
    char why[sizeof dc->reason + 64];
    if (!g->nmembers || g->nmembers >= tg_grec_min(g))
        return 0;
    const struct tg_store *bound = tg_informer_store(d->inf, TG_INF_PODS);
    int life = tg__loss_check(d->loss, g, bound);
    if (life == TG_LIFE_SHORT && dc->kind == TG_D_UNSCHEDULABLE)
        tg__loss_no_room(d->loss, g, bound, dc->reason); /* gang.onNoReplacement */
    if (life != TG_LIFE_HALF_BOUND)
        return 0;
    if (!g->timed_out && (tg__report_seen(g) || dc->kind != TG_D_UNSCHEDULABLE))
        return 0;
    snprintf(why, sizeof why, "%s%s", g->timed_out ? "incomplete past its timeout: " : "",
             dc->reason);
    tg__binder_rollback(d->binder, g, bound, why);
    return 1;
}

/* topogang_rank_*: the crossings of consecutive ranks in a placement. */
static void rank_metrics(struct tg_daemon *d, const struct tg_decision *dc)
{
    struct tg_rank_report r;
    if (tg_rank_report(tg_engine_cluster(d->engine), dc->view.pods, dc->result.slot, dc->view.npods,
                       &r, NULL) || !r.pairs)
        return;
    const char *names[TG_MAX_LEVELS + 1];
    uint32_t counts[TG_MAX_LEVELS + 1];
    uint32_t n = tg_rank_by_level(tg_engine_policy(d->engine), &r, names, counts);
    tg_metrics_rank(r.pairs, names, counts, n);
}

static void dispatch(struct tg_daemon *d, const struct tg_decision *dc)
{
    if (dc->timed_out)
        tg_metrics_inc(TG_M_TIMEOUTS, 1);
    switch (dc->kind) {
    case TG_D_PLACE:
        tg_metrics_inc(TG_M_ATTEMPT_SCHEDULED, 1);
        rank_metrics(d, dc);
        tg__report_decision(&d->report, dc);
        if (tg__binder_bind(d->binder, dc)) {
            tg_metrics_inc(TG_M_ATTEMPT_ERROR, 1);
            tg__handlers_lost(&d->handlers);
        }
        return;
    case TG_D_PREEMPT:
        tg_metrics_inc(TG_M_ATTEMPT_UNSCHEDULABLE, 1);
        tg__evict(d->evictor, tg_informer_store(d->inf, TG_INF_PODS), dc);
        break;
    case TG_D_UNSCHEDULABLE:
        tg_metrics_inc(TG_M_ATTEMPT_UNSCHEDULABLE, 1);
        tg_debug(C, "gang %s unschedulable: %s", dc->gang->key, dc->reason);
        if (rolled_back_half_bound(d, dc))
            return;
        break;
    case TG_D_NOMINATED:
        tg_metrics_inc(TG_M_ATTEMPT_UNSCHEDULABLE, 1);
        break;
    case TG_D_WAITING:
        if (rolled_back_half_bound(d, dc))
            return;
        break;
    case TG_D_INVALID:
        tg_debug(C, "gang %s cannot be placed as it is: %s", dc->gang->key, dc->reason);
        break;
    default:
        break;
    }
    tg__report_decision(&d->report, dc);
}

/* Decisions until NONE or the budget is spent; 1 when work is left. */
static int schedule(struct tg_daemon *d)
{
    uint64_t t0 = uv_hrtime();
    for (;;) {
        struct tg_decision dc;
        uint64_t c0 = uv_hrtime();
        int rc = tg_engine_next(d->engine, &dc);
        tg_metrics_observe(TG_H_CYCLE, (double)(uv_hrtime() - c0) / 1e9);
        if (rc) {
            /* the gang is back in the queue with a backoff */
            tg_metrics_inc(TG_M_ATTEMPT_ERROR, 1);
            tg_error(C, "scheduling: %s", tg_strerror(rc));
            tg__handlers_lost(&d->handlers);
        } else if (dc.kind != TG_D_NONE) {
            dispatch(d, &dc);
        }
        int more = !rc && dc.kind != TG_D_NONE;
        tg_decision_free(&dc);
        if (!more)
            return 0;
        if ((uv_hrtime() - t0) / 1000000 >= BUDGET_MS)
            return 1; /* yield to the loop; go on next tick */
    }
}

/* topogang_tenant_gangs{queue,state="waiting|running"}: each tenant queue's own
 * gangs (tg_engine_queue_gangs; topogang_queue_gangs{state} is the scheduling queue's). */
static void publish_queue_gangs(struct tg_daemon *d, const struct tg_fairshare *fs, struct tg_sb *b)
{
    uint32_t n = 0;
    const uint32_t *cnt = tg__queues_gangs(d->queues, d->engine, (int64_t)uv_now(&d->loop), &n);
    if (cnt) {
        tg_sb_puts(b, "# HELP topogang_tenant_gangs A tenant queue's own gangs, waiting (no member "
                      "placed) or running (a member placed).\n# TYPE topogang_tenant_gangs gauge\n");
        for (uint32_t q = 0; q < n; q++)
            tg_sb_printf(b, "topogang_tenant_gangs{queue=\"%s\",state=\"waiting\"} %u\n"
                            "topogang_tenant_gangs{queue=\"%s\",state=\"running\"} %u\n",
                         tg_str(tg_fairshare_name(fs, q)), cnt[q], tg_str(tg_fairshare_name(fs, q)),
                         cnt[n + q]);
    }
}

/* The tenant queues' gauges for /metrics (issue 19): per queue and
 * resource, allocated, fair share, quota and limit (-1: none), in the
 * resource's Kubernetes units (cpu in cores, memory in bytes); and per
 * queue the reclaims its gangs started (a counter). */
static void publish_queues(struct tg_daemon *d)
{
    tg_engine_queues_tick(d->engine); /* the decayed usage as of now, not of the last decision */
    const struct tg_engine *e = d->engine;
    const struct tg_fairshare *fs = tg_engine_fairshare(e);
    if (!fs) {
        tg_metrics_queues(NULL);
        return;
    }
    static const struct {
        const char *name, *help;
        double (*get)(const struct tg_fairshare *, uint32_t, uint32_t);
    } fam[] = {
        {"topogang_queue_allocated", "Resources bound to a tenant queue's pods (and its children's).",
         tg_fairshare_allocated},
        {"topogang_queue_fair_share", "A tenant queue's fair share (KAI's division).",
         tg_fairshare_share},
        {"topogang_queue_quota", "A tenant queue's quota (deserved when demanded).", tg_fairshare_quota},
        {"topogang_queue_limit", "A tenant queue's limit; -1: none.", tg_fairshare_limit},
        {"topogang_queue_usage_seconds", "A tenant queue's decayed usage in resource-seconds "
         "(queues.usageHalfLifeSeconds; 0 when off).", tg_fairshare_usage},
    };
    struct tg_sb b = {0};
    for (size_t f = 0; f < sizeof fam / sizeof *fam; f++) {
        tg_sb_printf(&b, "# HELP %s %s\n# TYPE %s gauge\n", fam[f].name, fam[f].help, fam[f].name);
        for (uint32_t q = 0; q < tg_fairshare_count(fs); q++)
            for (uint32_t r = 0; r < tg_res_count(); r++) {
                if (!tg_fairshare_shown(fs, q, r))
                    continue;
                double v = fam[f].get(fs, q, r);
                if (r == TG_RES_CPU && v > 0)
                    v /= 1000;
                tg_sb_printf(&b, "%s{queue=\"%s\",resource=\"%s\"} %.17g\n", fam[f].name,
                             tg_str(tg_fairshare_name(fs, q)), tg_res_name(r), v);
            }
    }
    publish_queue_gangs(d, fs, &b);
    tg_sb_puts(&b, "# HELP topogang_reclaims_total Reclaims started by a tenant queue's gangs "
                   "(room taken back from queues above their fair share).\n"
                   "# TYPE topogang_reclaims_total counter\n");
    for (uint32_t q = 0; q < tg_fairshare_count(fs); q++)
        tg_sb_printf(&b, "topogang_reclaims_total{queue=\"%s\"} %llu\n",
                     tg_str(tg_fairshare_name(fs, q)),
                     (unsigned long long)tg_engine_queue_reclaims(e, tg_fairshare_name(fs, q)));
    const char *text = tg_sb_str(&b);
    tg_metrics_queues(text ? strdup(text) : NULL);
    tg_sb_free(&b);
}

static void housekeeping(struct tg_daemon *d)
{
    publish_queues(d);
    tg__queues_status_tick(d->queues, d->engine, (int64_t)uv_now(&d->loop));
    tg__usage_tick(d->usage, (int64_t)uv_now(&d->loop), 0);
    const struct tg_engine *e = d->engine;
    tg_metrics_set(TG_G_LOOP_HEARTBEAT_MS, (int64_t)(uv_hrtime() / 1000000));
    struct tg_engine_counts n;
    tg_engine_counts(e, &n);
    tg_metrics_set(TG_G_QUEUE_ACTIVE, n.state[TG_Q_ACTIVE]);
    tg_metrics_set(TG_G_QUEUE_BACKOFF, n.state[TG_Q_BACKOFF]);
    tg_metrics_set(TG_G_QUEUE_UNSCHED, n.state[TG_Q_UNSCHED]);
    tg_metrics_set(TG_G_QUEUE_WAITING, n.state[TG_Q_WAITING]);
    tg_metrics_set(TG_G_QUEUE_PODS, n.pending_pods);
    tg_metrics_set(TG_G_RESERVATIONS, n.reservations);
    tg_metrics_set(TG_G_NOMINATIONS, n.nominations);
    uint64_t relists = 0, restarts = 0, decode = 0;
    for (int k = 0; k < TG_INF_N; k++) {
        const struct tg_reflector_stats *st = d->inf && d->inf->r[k] ? tg_reflector_stats(d->inf->r[k]) : NULL;
        if (st) {
            relists += st->relists;
            restarts += st->errors;
            decode += st->decode_errors;
        }
    }
    tg_metrics_set(TG_G_RELISTS, (int64_t)relists);
    tg_metrics_set(TG_G_WATCH_RESTARTS, (int64_t)restarts);
    tg_metrics_set(TG_G_DECODE_ERRORS, (int64_t)decode);
    if (d->client) {
        const struct tg_client_stats *cs = tg_client_stats(d->client);
        tg_metrics_set(TG_G_FENCED_WRITES, (int64_t)cs->fenced);
        /* the client's counts since it was made: the daemon's one client */
        tg_metrics_inc(TG_M_EVENT_RETRIES, cs->retries - tg_metrics_counter(TG_M_EVENT_RETRIES));
        tg_metrics_inc(TG_M_EVENTS_DROPPED, cs->dropped - tg_metrics_counter(TG_M_EVENTS_DROPPED));
        tg_metrics_inc(TG_M_API_THROTTLED, cs->throttled - tg_metrics_counter(TG_M_API_THROTTLED));
        tg_metrics_inc(TG_M_API_DIRECT_REQUESTS,
                       cs->h2_direct - tg_metrics_counter(TG_M_API_DIRECT_REQUESTS));
        tg_metrics_inc(TG_M_API_DIRECT_CONNECTS,
                       cs->h2_connects - tg_metrics_counter(TG_M_API_DIRECT_CONNECTS));
        tg_metrics_inc(TG_M_API_DIRECT_FAILURES,
                       cs->h2_failures - tg_metrics_counter(TG_M_API_DIRECT_FAILURES));
        tg_metrics_set(TG_G_WRITE_WINDOW, cs->write_window);
        tg_metrics_set(TG_G_EVENT_WINDOW, cs->bg_window);
    }
    tg_metrics_set(TG_G_BAD_TOPOLOGY, (int64_t)tg_numa_bad_annotations());
    tg__binder_tick(d->binder);
    if (d->synced)
        tg__loss_tick(d->loss, tg_informer_store(d->inf, TG_INF_PODS), scheduling(d));
    tg__report_tick(&d->report);
    d->housekept_ms = (int64_t)uv_now(&d->loop);
}

/* Next tick: at once when work is left, else at the engine's next due time
 * or the next housekeeping. */
static void arm(struct tg_daemon *d, int more)
{
    int64_t delay = d->housekept_ms + HOUSEKEEPING_MS - (int64_t)uv_now(&d->loop);
    if (scheduling(d) && !d->handlers.lost) { /* lost: nothing is decided before the resync */
        int64_t due = tg_engine_next_due(d->engine);
        int64_t now = tg__now_ms();
        if (due != INT64_MAX && due - now < delay)
            delay = due - now;
    }
    if (delay < 1)
        delay = 1;
    uv_timer_start(&d->tick, on_tick, more ? 0 : (uint64_t)delay, 0);
}

static void on_tick(uv_timer_t *t)
{
    struct tg_daemon *d = t->data;
    if ((int64_t)uv_now(&d->loop) - d->housekept_ms >= HOUSEKEEPING_MS)
        housekeeping(d);
    /* no decision on a model that misses objects (lost to an allocation
     * failure) until the resync has handed them over; a gang the queue lost
     * comes back the same way */
    if (tg_engine_stats(d->engine)->nomem != d->nomem_seen) {
        d->nomem_seen = tg_engine_stats(d->engine)->nomem;
        tg__handlers_lost(&d->handlers);
    }
    tg__handlers_resync(&d->handlers, d->inf, (int64_t)uv_now(&d->loop));
    int more = scheduling(d) && !d->handlers.lost ? schedule(d) : 0;
    tg__binder_pump(d->binder);
    if (!d->stopping)
        arm(d, more);
}

/* ---- hooks -------------------------------------------------------------------------------- */

static void on_synced(void *ud)
{
    struct tg_daemon *d = ud;
    d->synced = 1;
    tg_metrics_set(TG_G_SYNCED, 1);
    tg__usage_synced(d->usage);
    struct tg_engine_counts n;
    tg_engine_counts(d->engine, &n);
    tg_info(C, "caches synced: %u nodes, %u bound pods, %u pending pods", tg_engine_cluster(d->engine)->nready,
            tg_engine_cluster(d->engine)->usage.len, n.pending_pods);
    kick(d);
}

static void on_leader(void *ud, int is_leader)
{
    struct tg_daemon *d = ud;
    d->is_leader = (uint8_t)is_leader;
    tg__queues_leading(d->queues, is_leader);
    tg__usage_leading(d->usage, is_leader);
    if (!is_leader)
        tg__binder_standdown(d->binder); /* nothing more is sent; the next leader decides */
    kick(d);
}

static void on_policy(void *ud, const struct tg_policy *p)
{
    struct tg_daemon *d = ud;
    tg_client_set_rate(d->client, (double)p->api_qps, (int)p->api_burst);
}

static void on_podgroup(void *ud, const char *key)
{
    struct tg_daemon *d = ud;
    tg__report_refresh(&d->report, key, 1); /* a new object: write its status again */
}

static void on_members(void *ud, const char *gang_key)
{
    struct tg_daemon *d = ud;
    struct tg_grec *g = scheduling(d) ? tg_engine_gang(d->engine, gang_key) : NULL;
    if (g && g->nmembers && g->nmembers < tg_grec_min(g)) /* a member went */
        tg__loss_check(d->loss, g, tg_informer_store(d->inf, TG_INF_PODS));
    tg__report_refresh(&d->report, gang_key, 0); /* the scheduled count may have changed */
}

static void on_note(void *ud, const char *gang_key, const struct tg__bind_note *n)
{
    struct tg_daemon *d = ud;
    tg__report_bind(&d->report, gang_key, n);
    if (n->what == TG__BIND_DONE || n->what == TG__BIND_ROLLED_BACK)
        kick(d);
}

static const struct tg_store *bound_store(void *ud)
{
    struct tg_daemon *d = ud;
    return d->inf ? tg_informer_store(d->inf, TG_INF_PODS) : NULL;
}

static void on_gang_freed(void *ud, struct tg_grec *g)
{
    struct tg_daemon *d = ud;
    tg__report_gang_freed(&d->report, g);
}

/* ---- stop ------------------------------------------------------------------------------- */

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

/* Closes the handles, the informer and the client; uv_run then returns. */
static void finish(void *ud)
{
    struct tg_daemon *d = ud;
    tg_http_stop();
    if (d->handles_up) {
        d->handles_up = 0;
        uv_close((uv_handle_t *)&d->tick, on_closed);
        uv_close((uv_handle_t *)&d->sigterm, on_closed);
        uv_close((uv_handle_t *)&d->sigint, on_closed);
        uv_close((uv_handle_t *)&d->logflush, on_closed);
    }
    tg_informer_free(&d->inf);
    tg__queues_free(&d->queues);
    tg__usage_free(&d->usage);
    tg_client_free(&d->client);
}

static void on_shutdown_tick(uv_timer_t *t)
{
    struct tg_daemon *d = t->data;
    tg__binder_pump(d->binder);
    uint32_t inflight = tg__binder_inflight(d->binder);
    uint32_t writes = tg_client_writes_pending(d->client);
    if ((inflight || writes) && (int64_t)uv_now(&d->loop) < d->shutdown_deadline_ms) {
        uv_timer_start(&d->tick, on_shutdown_tick, 50, 0);
        return;
    }
    if (inflight)
        tg_warn(C, "shutdown: %u bind(s) still in flight are abandoned; their pods stay "
                   "unbound and the next leader places them", inflight);
    else if (writes)
        tg_warn(C, "shutdown: %u write(s) (status, Events, deletes) not answered in %d s are "
                   "abandoned", writes, SHUTDOWN_MS / 1000);
    tg_info(C, "shutdown: %llu pods bound, %llu binds failed",
            (unsigned long long)tg_metrics_counter(TG_M_BINDS_OK),
            (unsigned long long)tg_metrics_counter(TG_M_BINDS_FAILED));
    tg__leader_stop(&d->leader, finish, d);
}

static void on_signal(uv_signal_t *s, int sig)
{
    struct tg_daemon *d = s->data;
    if (d->stopping)
        return;
    tg_info(C, "signal %d: no new gangs; waiting for in-flight binds (%u)", sig,
            tg__binder_inflight(d->binder));
    d->stopping = 1;
    d->shutdown_deadline_ms = (int64_t)uv_now(&d->loop) + SHUTDOWN_MS;
    tg__binder_stopping(d->binder);
    if (d->is_leader)
        tg__usage_tick(d->usage, (int64_t)uv_now(&d->loop), 1); /* the queues' usage, saved */
    uv_signal_stop(&d->sigterm);
    uv_signal_stop(&d->sigint);
    uv_timer_start(&d->tick, on_shutdown_tick, 0, 0);
}

/* ---- options ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: topogang scheduler [--kubeconfig FILE [--context NAME]] [options]\n"
        "\n"
        "Runs the gang scheduler: watches Nodes, Pods, PodGroups, PriorityClasses and\n"
        "PodDisruptionBudgets, places every gang of pods with spec.schedulerName matching\n"
        "--scheduler-name all at once or not at all (preempting whole gangs of lower\n"
        "priority when the policy allows), binds them, and reports through PodGroup status,\n"
        "Events and /metrics.\n"
        "Without --kubeconfig (and KUBECONFIG unset) it uses the in-cluster service account.\n"
        "\n"
        "options:\n"
        "      --kubeconfig FILE        kubeconfig (default $KUBECONFIG, else in-cluster)\n"
        "      --context NAME           kubeconfig context (default: current-context)\n"
        "      --config-map NS/NAME     policy ConfigMap, key config.yaml, watched and reloaded\n"
        "      --config FILE            policy file instead (read once; not with --config-map)\n"
        "      --scheduler-name NAME    pods to schedule (default: the --config file's\n"
        "                               schedulerName, else topogang)\n"
        "      --metrics-bind-address ADDR:PORT\n"
        "                               /metrics (default :8080, IPv4 and IPv6; [::1]:8080,\n"
        "                               127.0.0.1:8080 for one address; '' disables)\n"
        "      --health-bind-address ADDR:PORT\n"
        "                               /healthz /readyz, their own connections (default :8081)\n"
        "      --listen ADDR:PORT       both on one address (older form of the two above; not\n"
        "                               with them)\n"
        "      --allow-insecure-http    accept an http:// API server (tests; no TLS, the token\n"
        "                               travels in clear)\n"
        "      --leader-elect           elect a leader with a coordination.k8s.io Lease\n"
        "      --lease NS/NAME          the Lease (default <config-map namespace or\n"
        "                               topogang-system>/topogang-scheduler)\n"
        "      --lease-duration SEC     2..3600, default 15 (with --leader-elect)\n"
        "      --renew-deadline SEC     the leader stops binding, evicting and writing status\n"
        "                               when it could not renew the Lease for this long\n"
        "                               (default 2/3 of --lease-duration; must be shorter).\n"
        "                               Expiry is judged on the monotonic clock: a standby\n"
        "                               takes over once it saw the Lease unchanged for the\n"
        "                               lease duration, whatever the wall clocks say;\n"
        "                               Lease requests take a lane of their own, ahead of\n"
        "                               the writes queued behind api.qps/burst\n"
        "      --identity ID            leader identity (default $POD_NAME or hostname_pid)\n"
        "      --gang-sources LIST      gang definitions read besides topogang's PodGroups,\n"
        "                               when served: all (default), none, or a comma list of\n"
        "                               upstream, scheduler-plugins, volcano, kai (PodGroups),\n"
        "                               job, jobset, lws, pytorchjob, mpijob, trainjob (owners)\n"
        "      --rediscover-seconds SEC how often to look again for the PodGroup, Queue and\n"
        "                               constraint APIs not served at start (a CRD installed\n"
        "                               later is read without a restart): 0 never, 2..3600,\n"
        "                               default 30; the workload kinds are settled at start\n"
        "      --v LEVEL                log level: debug, info, warn, error (default info)\n"
        "  -h, --help                   this text\n");
}

static int split_nsname(const char *s, char *ns, size_t nn, char *name, size_t nm)
{
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
        return TG_EINVAL;
    snprintf(ns, nn, "%.*s", (int)(slash - s), s);
    snprintf(name, nm, "%s", slash + 1);
    return 0;
}

/* A usage error: one line, exit code 2. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "topogang scheduler: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 2;
}

/* The value of --lease-duration, or -1. */
static int seconds(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || end == s || *end || v < 2 || v > 3600 ? -1 : (int)v;
}

/* The value of --renew-deadline (seconds, fractions allowed) in ms, or -1. */
static int64_t millis(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    return errno || end == s || *end || !(v >= 0.001 && v <= 3600) ? -1 : (int64_t)(v * 1000 + 0.5);
}

/* Checks what getopt gathered and fills in the defaults; 0 or an exit code. */
static int settle_opts(struct opts *o, const char *lease, const char *sched_name, int lease_given)
{
    if (o->cmap && o->cfile)
        return bad("%s", "--config-map and --config exclude each other (the ConfigMap is the "
                         "live policy, the file a fixed one)");
    if (o->cmap && split_nsname(o->cmap, o->config_ns, sizeof o->config_ns, o->config_name,
                                sizeof o->config_name))
        return bad("--config-map must be NAMESPACE/NAME, not '%s'", o->cmap);
    snprintf(o->lease_ns, sizeof o->lease_ns, "%s", o->config_ns[0] ? o->config_ns : "topogang-system");
    snprintf(o->lease_name, sizeof o->lease_name, "topogang-scheduler");
    if (lease && split_nsname(lease, o->lease_ns, sizeof o->lease_ns, o->lease_name, sizeof o->lease_name))
        return bad("--lease must be NAMESPACE/NAME, not '%s'", lease);
    if (o->lease_s < 0)
        return bad("%s", "--lease-duration must be a whole number of seconds, 2..3600");
    if (o->renew_deadline_ms < 0 || o->renew_deadline_ms >= o->lease_s * 1000LL)
        return bad("--renew-deadline must be more than 0 and less than --lease-duration (%d s)",
                   o->lease_s);
    if (lease_given && !o->leader_elect)
        fprintf(stderr, "topogang scheduler: --lease/--lease-duration/--renew-deadline do nothing without --leader-elect\n");
    tg_policy_default(&o->policy);
    struct tg_sb perr = {0};
    if (o->cfile && tg_policy_load_file(o->cfile, &o->policy, &perr)) {
        fprintf(stderr, "topogang scheduler: invalid policy:\n%s", tg_sb_str(&perr));
        tg_sb_free(&perr);
        return 1;
    }
    tg_sb_free(&perr);
    snprintf(o->scheduler_name, sizeof o->scheduler_name, "%s",
             sched_name ? sched_name : o->policy.scheduler_name);
    if (sched_name && o->cfile && strcmp(sched_name, o->policy.scheduler_name))
        fprintf(stderr, "topogang scheduler: --scheduler-name %s overrides the policy's "
                        "schedulerName %s\n", sched_name, o->policy.scheduler_name);
    const char *pod = getenv("POD_NAME");
    if (!o->identity[0] && pod && *pod)
        snprintf(o->identity, sizeof o->identity, "%s", pod);
    if (!o->identity[0]) {
        char host[200] = "topogang";
        gethostname(host, sizeof host - 1);
        snprintf(o->identity, sizeof o->identity, "%s_%d", host, (int)getpid());
    }
    return 0;
}

/* Parses argv into o; -1 to run, else the exit code (help: 0, usage: 2). */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'}, {"context", required_argument, NULL, 'x'},
        {"config-map", required_argument, NULL, 'm'}, {"config", required_argument, NULL, 'c'},
        {"scheduler-name", required_argument, NULL, 's'}, {"listen", required_argument, NULL, 'l'},
        {"leader-elect", no_argument, NULL, 'e'},      {"lease", required_argument, NULL, 'L'},
        {"lease-duration", required_argument, NULL, 'D'},
        {"renew-deadline", required_argument, NULL, 'R'},
        {"identity", required_argument, NULL, 'i'},     {"v", required_argument, NULL, 'v'},
        {"gang-sources", required_argument, NULL, 'g'},
        {"rediscover-seconds", required_argument, NULL, 'r'},
        {"metrics-bind-address", required_argument, NULL, 'M'},
        {"health-bind-address", required_argument, NULL, 'H'},
        {"allow-insecure-http", no_argument, NULL, 'A'},
        {"help", no_argument, NULL, 'h'},               {NULL, 0, NULL, 0},
    };
    const char *lease = NULL, *sched_name = NULL;
    int opt, lease_given = 0, bind_given = 0;
    enum tg_log_level lvl;
    o->kubeconfig = getenv("KUBECONFIG");
    o->metrics_addr = ":8080";
    o->health_addr = ":8081";
    o->lease_s = 15;
    o->gang_sources = TG_INF_GANG_SOURCES_ALL;
    o->rediscover_s = 30;
    char gerr[512];
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'k': o->kubeconfig = optarg; break;
        case 'x': o->context = optarg; break;
        case 'm': o->cmap = optarg; break;
        case 'c': o->cfile = optarg; break;
        case 's': sched_name = optarg; break;
        case 'l': o->listen = optarg; break;
        case 'M': o->metrics_addr = optarg; bind_given = 1; break;
        case 'H': o->health_addr = optarg; bind_given = 1; break;
        case 'A': o->allow_http = 1; break;
        case 'e': o->leader_elect = 1; break;
        case 'L': lease = optarg; lease_given = 1; break;
        case 'D': o->lease_s = seconds(optarg); lease_given = 1; break;
        case 'R': o->renew_deadline_ms = millis(optarg); lease_given = 1; break;
        case 'i': snprintf(o->identity, sizeof o->identity, "%s", optarg); break;
        case 'v':
            if (tg_log_parse_level(optarg, &lvl))
                return bad("%s", "--v must be debug, info, warn or error");
            tg_log_set_level(lvl);
            break;
        case 'g':
            if (tg__gang_sources_parse(optarg, &o->gang_sources, gerr, sizeof gerr))
                return bad("--gang-sources: %s", gerr);
            break;
        case 'r':
            o->rediscover_s = !strcmp(optarg, "0") ? 0 : seconds(optarg);
            if (o->rediscover_s < 0)
                return bad("--rediscover-seconds: want 0 (never) or 2..3600, not '%s'", optarg);
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (o->listen && bind_given)
        return bad("%s", "--listen puts /metrics and the probes on one address: give it or "
                         "--metrics-bind-address/--health-bind-address, not both");
    if (o->listen)
        o->metrics_addr = o->health_addr = o->listen;
    int rc = settle_opts(o, lease, sched_name, lease_given);
    return rc ? rc : -1;
}

/* ---- start ------------------------------------------------------------------------------ */

static int connect_api(struct tg_daemon *d)
{
    const struct opts *o = &d->o;
    struct tg_kconf conf;
    char err[512] = "";
    int rc;
    if (!o->kubeconfig && (rc = tg_kubeconfig_incluster(NULL, &conf, err, sizeof err)) != TG_ENOENT) {
        if (rc) {
            fprintf(stderr, "topogang scheduler: %s\n", err[0] ? err : tg_strerror(rc));
            return 1;
        }
        tg_info(C, "using the in-cluster service account (%s)", conf.server);
    } else if ((rc = tg_kubeconfig_load(o->kubeconfig, o->context, &conf, err, sizeof err))) {
        fprintf(stderr, "topogang scheduler: %s\n", err[0] ? err : tg_strerror(rc));
        if (!o->kubeconfig)
            fprintf(stderr, "  (no --kubeconfig, no KUBECONFIG, and not running in a cluster: "
                            "give one of them; see --help)\n");
        return 1;
    }
    if (tg_kconf_check(&conf, o->allow_http, err, sizeof err)) {
        fprintf(stderr, "topogang scheduler: %s\n", err);
        tg_kconf_free(&conf);
        return 1;
    }
    struct tg_client_opts copts = {.qps = (double)o->policy.api_qps, .burst = (int)o->policy.api_burst};
    rc = tg_client_new(&d->loop, &conf, &copts, &d->client);
    tg_kconf_free(&conf);
    if (rc)
        fprintf(stderr, "topogang scheduler: cannot create the API client: %s\n", tg_strerror(rc));
    return rc ? 1 : 0;
}

/* The engine and the pieces around it. */
static int make_core(struct tg_daemon *d)
{
    struct tg_clock clk = {engine_clock, NULL};
    if (tg_engine_new(&d->engine, &d->o.policy, &clk))
        return TG_ENOMEM;
    d->engine_up = 1;
    tg_engine_on_gang_freed(d->engine, on_gang_freed, d);
    tg__report_init(&d->report, d->engine, d->client);
    if (tg__loss_new(d->engine, d->client, &d->report, &d->loss))
        return TG_ENOMEM;
    struct tg__binder_hooks bh = {on_note, bound_store, d};
    return tg__binder_new(d->engine, d->client, &d->loop, &bh, &d->binder);
}

static int start_informer(struct tg_daemon *d)
{
    const struct opts *o = &d->o;
    d->handlers = (struct tg__handlers){
        .engine = d->engine, .client = d->client, .scheduler_name = o->scheduler_name,
        .on_change = kick, .on_policy = on_policy, .on_podgroup = on_podgroup,
        .on_members = on_members, .on_synced = on_synced, .ud = d,
        .gang_sources = o->gang_sources};
    struct tg_informer_opts io = {
        .scheduler_name = o->scheduler_name,
        .config_ns = o->config_name[0] ? o->config_ns : NULL,
        .config_name = o->config_name[0] ? o->config_name : NULL,
        .rediscover_ms = (uint32_t)o->rediscover_s * 1000u,
    };
    tg__handlers_wire(&d->handlers, &io);
    int rc = tg__queues_new(d->client, &d->queues);
    if (rc)
        return rc;
    tg__queues_on_change(d->queues, on_queues, d);
    if ((rc = tg__usage_new(d->client, d->engine, o->lease_ns, o->lease_name, &d->usage)))
        return rc;
    tg__usage_on_ready(d->usage, kick, d);
    tg__queues_wire(d->queues, &io);
    rc = tg_informer_start(d->client, &io, &d->inf);
    tg__queues_set_informer(d->queues, d->inf);
    if (!rc)
        rc = tg__evict_new(d->engine, d->client, &d->evictor);
    return rc;
}

static void on_logflush(uv_prepare_t *p)
{
    (void)p;
    tg_log_flush();
}

static void start_handles(struct tg_daemon *d)
{
    uv_timer_init(&d->loop, &d->tick);
    d->tick.data = d;
    uv_signal_init(&d->loop, &d->sigterm);
    uv_signal_init(&d->loop, &d->sigint);
    d->sigterm.data = d->sigint.data = d;
    uv_signal_start(&d->sigterm, on_signal, SIGTERM);
    uv_signal_start(&d->sigint, on_signal, SIGINT);
    /* a log line per bound gang (one per pod for single pods) costs a write
     * each when stderr is unbuffered: the loop's records leave together, before
     * it waits (warnings and errors at once) */
    tg_log_buffer(1);
    uv_prepare_init(&d->loop, &d->logflush);
    uv_prepare_start(&d->logflush, on_logflush);
    uv_unref((uv_handle_t *)&d->logflush);
    /* a write to a connection the API server has just dropped is EPIPE, not
     * the process's end: the direct HTTP/2 path (informer/h2.c) writes with
     * libuv, which does not ask for MSG_NOSIGNAL (libcurl does) */
    signal(SIGPIPE, SIG_IGN);
    d->handles_up = 1;
}

/* The /metrics and health listeners (one when their addresses are equal);
 * 0, or 1 after saying why. */
static int serve_http(const struct opts *o)
{
    static const char *const what_name[] = {"", "/metrics", "/healthz /readyz",
                                             "/healthz /readyz /metrics"};
    struct { const char *addr; unsigned what; } l[2] = {
        {o->metrics_addr, TG_HTTP_METRICS}, {o->health_addr, TG_HTTP_HEALTH}};
    if (!strcmp(l[0].addr, l[1].addr)) {
        l[0].what |= TG_HTTP_HEALTH;
        l[1].addr = "";
    }
    for (int i = 0; i < 2; i++) {
        int rc, port = 0;
        if (!l[i].addr[0])
            continue;
        if ((rc = tg_http_listen(l[i].addr, l[i].what, &port))) {
            fprintf(stderr, "topogang scheduler: cannot serve %s on %s: %s%s\n", what_name[l[i].what],
                    l[i].addr, tg_strerror(rc),
                    rc == TG_EINVAL ? " (want IP:PORT, [IPv6]:PORT or :PORT)" : "");
            return 1;
        }
        tg_info(C, "serving %s on %s (port %d)", what_name[l[i].what], l[i].addr, port);
    }
    return 0;
}

/* Everything up and running; 0, or 1 after saying why. */
static int start(struct tg_daemon *d)
{
    const struct opts *o = &d->o;
    int rc;
    if (connect_api(d))
        return 1;
    if (make_core(d)) {
        fprintf(stderr, "topogang scheduler: out of memory\n");
        return 1;
    }
    if (serve_http(o))
        return 1;
    start_handles(d);
    if ((rc = start_informer(d))) {
        fprintf(stderr, "topogang scheduler: cannot start the informer: %s\n", tg_strerror(rc));
        return 1;
    }
    if (o->leader_elect) {
        struct tg__leader_opts lo = {.identity = o->identity, .ns = o->lease_ns,
                                     .name = o->lease_name, .duration_s = o->lease_s,
                                     .renew_deadline_ms = o->renew_deadline_ms};
        if (tg__leader_start(&d->loop, d->client, &lo, on_leader, d, &d->leader)) {
            fprintf(stderr, "topogang scheduler: cannot start leader election\n");
            return 1;
        }
    } else {
        d->is_leader = 1;
        tg__queues_leading(d->queues, 1);
        tg__usage_leading(d->usage, 1);
        tg_metrics_set(TG_G_LEADER, 1);
    }
    tg_info(C, "topogang scheduler %s starting: scheduler name %s, policy %s", o->identity,
            o->scheduler_name, o->cmap ? o->cmap : o->cfile ? o->cfile : "(defaults)");
    uv_timer_start(&d->tick, on_tick, 0, 0);
    return 0;
}

/* After the loop: what the pieces still hold (requests were canceled). */
static void teardown(struct tg_daemon *d)
{
    tg__binder_free(&d->binder);
    tg__evict_free(&d->evictor);
    tg__loss_free(&d->loss);
    if (d->engine_up)
        tg_engine_delete(d->engine); /* its gang_freed hook frees the report's state */
    tg__report_free(&d->report);
}

int tg_cmd_scheduler(int argc, char **argv)
{
    struct tg_daemon *d = calloc(1, sizeof *d);
    if (!d) {
        fprintf(stderr, "topogang scheduler: out of memory\n");
        return 1;
    }
    int rc = parse_opts(argc, argv, &d->o);
    if (rc < 0) {
        uv_loop_init(&d->loop);
        rc = start(d);
        if (rc) {
            if (d->leader)
                tg__leader_stop(&d->leader, finish, d);
            else
                finish(d);
        }
        uv_run(&d->loop, UV_RUN_DEFAULT);
        tg_log_buffer(0);   /* what is held, and every record from now on, written */
        teardown(d);
        uv_loop_close(&d->loop);
        if (!rc)
            tg_info(C, "stopped");
    }
    free(d);
    return rc;
}
