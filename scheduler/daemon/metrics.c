/* Metrics registry and HTTP endpoints; see metrics.h. */
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/log.h"
#include "util/strbuf.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const counter_name[TG_M__COUNTERS][2] = {
    {"topogang_schedule_attempts_total{result=\"scheduled\"}", "Gang scheduling attempts by result."},
    {"topogang_schedule_attempts_total{result=\"unschedulable\"}", NULL},
    {"topogang_schedule_attempts_total{result=\"error\"}", NULL},
    {"topogang_binds_total{result=\"ok\"}", "Pod bindings by result."},
    {"topogang_binds_total{result=\"failed\"}", NULL},
    {"topogang_bind_retries_total", "Bindings retried after a failure."},
    {"topogang_gang_rollbacks_total", "Gangs rolled back because not every member could be bound."},
    {"topogang_rollback_pod_deletions_total", "Pods deleted by rollbacks."},
    {"topogang_config_reloads_total{result=\"ok\"}", "Policy ConfigMap reloads by result."},
    {"topogang_config_reloads_total{result=\"rejected\"}", NULL},
    {"topogang_gang_timeouts_total", "Gangs that waited past scheduleTimeoutSeconds."},
    {"topogang_events_total", "Events written."},
    {"topogang_podgroup_status_patches_total", "PodGroup status patches written."},
    {"topogang_leader_transitions_total", "Times this replica became or stopped being leader."},
    {"topogang_preemptions_total", "Preemptions started: a gang evicting lower-priority victims."},
    {"topogang_preemption_victims_total{kind=\"gang\"}",
     "Victims evicted by preemption: whole gangs, and pods of no gang."},
    {"topogang_preemption_victims_total{kind=\"pod\"}", NULL},
    {"topogang_preempted_pods_total", "Pods evicted by preemption (every member of a victim gang)."},
    {"topogang_eviction_errors_total", "Victim pods whose condition patch or delete failed."},
    {"topogang_decode_failures_total{kind=\"Node\"}",
     "Objects listed or watched that did not decode, by kind (logged with the field; a cached "
     "version is dropped)."},
    {"topogang_decode_failures_total{kind=\"Pod\"}", NULL},
    {"topogang_decode_failures_total{kind=\"PodGroup\"}", NULL},
    {"topogang_decode_failures_total{kind=\"other\"}", NULL},
    {"topogang_event_retries_total",
     "Event writes tried again after a 429, 5xx, broken connection or timeout."},
    {"topogang_events_dropped_total",
     "Events not written: refused by the API server (4xx), 8 tries failed, or 20,000 "
     "already held."},
    {"topogang_api_throttled_total",
     "Writes the API server answered 429 or 503 (API Priority and Fairness): each halved its "
     "lane's window, once per window, and only that write waited."},
    {"topogang_api_direct_requests_total",
     "Writes (Bindings, Events) answered on the client's own HTTP/2 connection rather than "
     "through libcurl."},
    {"topogang_api_direct_connects_total",
     "The direct HTTP/2 path's connections that came up (one at a time; a new one after a "
     "break)."},
    {"topogang_api_direct_failures_total",
     "The direct HTTP/2 path's connections that failed to come up or broke (writes meanwhile "
     "go through libcurl)."},
};

/* A NULL help continues the metric above with other labels; a NULL name is
 * internal (not exported). */
static const char *const gauge_name[TG_G__GAUGES][2] = {
    {"topogang_queue_gangs{state=\"active\"}",
     "Gangs in the queue by state: active (ready to try), backoff, unschedulable (waiting "
     "for a cluster change), waiting (nominated: victims terminating)."},
    {"topogang_queue_gangs{state=\"backoff\"}", NULL},
    {"topogang_queue_gangs{state=\"unschedulable\"}", NULL},
    {"topogang_queue_gangs{state=\"waiting\"}", NULL},
    {"topogang_queue_pods", "Pending pods of this scheduler."},
    {"topogang_reservations", "Domains reserved for a starving head gang."},
    {"topogang_nominations", "Gangs holding room while their preemption victims terminate."},
    {"topogang_nodes", "Nodes in the cluster model."},
    {"topogang_bound_pods", "Bound non-terminal pods counted as usage."},
    {"topogang_assumed_pods", "Pods placed by this scheduler not yet seen bound."},
    {"topogang_leader", "1 when this replica holds the lease."},
    {"topogang_informer_synced", "1 once every cache has listed."},
    {"topogang_informer_relists", "Relists after the first list (410 Gone or errors)."},
    {"topogang_informer_watch_restarts", "Watch streams restarted after errors."},
    {"topogang_informer_decode_errors", "Objects the decoder rejected."},
    {"topogang_fenced_writes", "Leader-only writes (Bindings, deletes, status patches) not sent or "
                               "aborted because this replica's renew deadline had passed."},
    {"topogang_inflight_binds", "Binding requests in flight."},
    {"topogang_api_write_window", "Writes (Bindings, status, deletes) the API client lets run at "
                                  "once: halved on a 429 or 503, grown back on success."},
    {"topogang_api_event_window", "Events the API client lets run at once (as the writes')."},
    {"topogang_bad_topology_annotations", "Node topology annotations ignored as unreadable."},
    {NULL, NULL},
};

static const char *const histo_name[TG_H__HISTOS][2] = {
    {"topogang_gang_e2e_seconds", "From a gang's first pending pod to every member bound."},
    {"topogang_pod_e2e_seconds", "From a pod seen pending to bound."},
    {"topogang_bind_seconds", "Latency of one Binding request."},
    {"topogang_cycle_seconds", "Duration of one gang scheduling cycle."},
};

static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                 0.25, 0.5, 1, 2.5, 5, 7.5, 10, 15, 20, 30, 45, 60, 120, 300};
#define NB (sizeof buckets / sizeof buckets[0])

static _Atomic uint64_t counters[TG_M__COUNTERS];
static _Atomic int64_t gauges[TG_G__GAUGES];
static struct {
    _Atomic uint64_t b[NB + 1];
    _Atomic uint64_t count;
    _Atomic uint64_t sum_us;
} histos[TG_H__HISTOS];

void tg_metrics_inc(enum tg_counter c, uint64_t n) { atomic_fetch_add(&counters[c], n); }
void tg_metrics_set(enum tg_gauge g, int64_t v) { atomic_store(&gauges[g], v); }
int64_t tg_metrics_get(enum tg_gauge g) { return atomic_load(&gauges[g]); }
uint64_t tg_metrics_counter(enum tg_counter c) { return atomic_load(&counters[c]); }

void tg_metrics_observe(enum tg_histo h, double s)
{
    size_t i = 0;
    while (i < NB && s > buckets[i])
        i++;
    atomic_fetch_add(&histos[h].b[i], 1);
    atomic_fetch_add(&histos[h].count, 1);
    atomic_fetch_add(&histos[h].sum_us, (uint64_t)(s * 1e6));
}

static _Atomic uint64_t rank_pairs;
static struct {
    char name[64];
    _Atomic uint64_t n;
} rank_cross[TG_METRICS_RANK_LEVELS];
static pthread_mutex_t rank_mu = PTHREAD_MUTEX_INITIALIZER; /* the names */

void tg_metrics_rank(uint64_t pairs, const char *const *level, const uint32_t *cross, uint32_t n)
{
    atomic_fetch_add(&rank_pairs, pairs);
    pthread_mutex_lock(&rank_mu);
    for (uint32_t i = 0; i < n; i++) {
        int k = 0;
        while (k < TG_METRICS_RANK_LEVELS && rank_cross[k].name[0] &&
               strcmp(rank_cross[k].name, level[i]))
            k++;
        if (k == TG_METRICS_RANK_LEVELS)
            continue;
        if (!rank_cross[k].name[0])
            snprintf(rank_cross[k].name, sizeof rank_cross[k].name, "%s", level[i]);
        atomic_fetch_add(&rank_cross[k].n, cross[i]);
    }
    pthread_mutex_unlock(&rank_mu);
}

static void render_rank(struct tg_sb *b)
{
    tg_sb_printf(b, "# HELP topogang_rank_pairs_total Pairs of consecutive ranks placed (members "
                    "carrying a rank).\n# TYPE topogang_rank_pairs_total counter\n"
                    "topogang_rank_pairs_total %llu\n"
                    "# HELP topogang_rank_crossings_total Pairs of consecutive ranks placed in two "
                    "domains of a level.\n# TYPE topogang_rank_crossings_total counter\n",
                 (unsigned long long)atomic_load(&rank_pairs));
    pthread_mutex_lock(&rank_mu);
    for (int k = 0; k < TG_METRICS_RANK_LEVELS && rank_cross[k].name[0]; k++)
        tg_sb_printf(b, "topogang_rank_crossings_total{level=\"%s\"} %llu\n", rank_cross[k].name,
                     (unsigned long long)atomic_load(&rank_cross[k].n));
    pthread_mutex_unlock(&rank_mu);
}

static char *queues_text;                /* the loop's, under queues_mu */
static pthread_mutex_t queues_mu = PTHREAD_MUTEX_INITIALIZER;

void tg_metrics_queues(char *text)
{
    pthread_mutex_lock(&queues_mu);
    free(queues_text);
    queues_text = text;
    pthread_mutex_unlock(&queues_mu);
}

static void render_queues(struct tg_sb *b)
{
    pthread_mutex_lock(&queues_mu);
    if (queues_text)
        tg_sb_puts(b, queues_text);
    pthread_mutex_unlock(&queues_mu);
}

/* HELP and TYPE lines of a metric, named without its labels. */
static void help(struct tg_sb *b, const char *name, const char *text, const char *type)
{
    char base[128];
    snprintf(base, sizeof base, "%s", name);
    char *brace = strchr(base, '{');
    if (brace)
        *brace = 0;
    tg_sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", base, text, base, type);
}

char *tg_metrics_render(void)
{
    struct tg_sb b = {0};
    for (int i = 0; i < TG_M__COUNTERS; i++) {
        if (counter_name[i][1])
            help(&b, counter_name[i][0], counter_name[i][1], "counter");
        tg_sb_printf(&b, "%s %llu\n", counter_name[i][0], (unsigned long long)atomic_load(&counters[i]));
    }
    for (int i = 0; i < TG_G__GAUGES; i++) {
        if (!gauge_name[i][0])
            continue;
        if (gauge_name[i][1])
            help(&b, gauge_name[i][0], gauge_name[i][1], "gauge");
        tg_sb_printf(&b, "%s %lld\n", gauge_name[i][0], (long long)atomic_load(&gauges[i]));
    }
    render_rank(&b);
    render_queues(&b);
    for (int h = 0; h < TG_H__HISTOS; h++) {
        const char *n = histo_name[h][0];
        tg_sb_printf(&b, "# HELP %s %s\n# TYPE %s histogram\n", n, histo_name[h][1], n);
        uint64_t cum = 0;
        for (size_t i = 0; i < NB; i++) {
            cum += atomic_load(&histos[h].b[i]);
            tg_sb_printf(&b, "%s_bucket{le=\"%g\"} %llu\n", n, buckets[i], (unsigned long long)cum);
        }
        cum += atomic_load(&histos[h].b[NB]);
        tg_sb_printf(&b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", n,
                     (unsigned long long)cum, n, atomic_load(&histos[h].sum_us) / 1e6, n,
                     (unsigned long long)atomic_load(&histos[h].count));
    }
    return b.s ? b.s : strdup("");
}

#ifdef TG_HAVE_MHD
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* What one listener serves (TG_HTTP_METRICS | TG_HTTP_HEALTH) and its server. */
struct listener {
    struct MHD_Daemon *mhd;
    unsigned what;
};
static struct listener listeners[2];

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, char *body, int owned,
                             const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(body), body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result health(struct MHD_Connection *c, const char *url)
{
    if (!strcmp(url, "/healthz")) {
        /* alive while the event loop keeps ticking */
        int64_t beat = tg_metrics_get(TG_G_LOOP_HEARTBEAT_MS);
        if (beat && mono_ms() - beat > 30000)
            return reply(c, 500, "event loop stalled\n", 0, "text/plain");
        return reply(c, 200, "ok\n", 0, "text/plain");
    }
    if (!tg_metrics_get(TG_G_SYNCED))
        return reply(c, 503, "caches not synced\n", 0, "text/plain");
    return reply(c, 200, tg_metrics_get(TG_G_LEADER) ? "ok: leader\n" : "ok: standby\n", 0,
                 "text/plain");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **con_cls)
{
    const struct listener *l = cls;
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)con_cls;
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(c, 405, "method not allowed\n", 0, "text/plain");
    if ((l->what & TG_HTTP_METRICS) && !strcmp(url, "/metrics"))
        return reply(c, 200, tg_metrics_render(), 1, "text/plain; version=0.0.4");
    if ((l->what & TG_HTTP_HEALTH) && (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")))
        return health(c, url);
    switch (l->what) {
    case TG_HTTP_METRICS: return reply(c, 404, "not found: /metrics\n", 0, "text/plain");
    case TG_HTTP_HEALTH: return reply(c, 404, "not found: /healthz /readyz\n", 0, "text/plain");
    default: return reply(c, 404, "not found: /healthz /readyz /metrics\n", 0, "text/plain");
    }
}

/* "[v6]:port", "v4:port", ":port" (every address, IPv4 and IPv6, as "[::]:port")
 * into *ss; *dual when the socket takes IPv4 too. 0 or TG_EINVAL. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, int *dual)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *port;
    *dual = 0;
    if (addr[0] == '[') {                       /* [v6]:port */
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':' || (size_t)(close - addr - 1) >= sizeof host)
            return TG_EINVAL;
        snprintf(host, sizeof host, "%.*s", (int)(close - addr - 1), addr + 1);
        port = close + 2;
    } else {                                    /* v4:port, :port */
        const char *colon = strchr(addr, ':');
        if (!colon || strchr(colon + 1, ':') || (size_t)(colon - addr) >= sizeof host)
            return TG_EINVAL;               /* a bare IPv6 address needs brackets */
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
        port = colon + 1;
    }
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (!*port || *end || errno || p < 0 || p > 65535)
        return TG_EINVAL;
    memset(ss, 0, sizeof *ss);
    if (!host[0] || !strcmp(host, "::")) {      /* every address, IPv4 and IPv6 */
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_any;
        s6->sin6_port = htons((uint16_t)p);
        *dual = 1;
        return 0;
    }
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    if (addr[0] == '[' && inet_pton(AF_INET6, host, &s6->sin6_addr) == 1)
        s6->sin6_family = AF_INET6;
    else if (addr[0] != '[' && inet_pton(AF_INET, host, &s4->sin_addr) == 1)
        s4->sin_family = AF_INET;
    else
        return TG_EINVAL;
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)p);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)p);
    return 0;
}

/* libmicrohttpd's messages (a connection turned away at a limit, one per
 * connection: a client could fill the log) at debug level. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (tg_log_enabled(TG_LOG_DEBUG))
        tg_logv(TG_LOG_DEBUG, "http", fmt, ap);
}

static struct MHD_Daemon *serve(struct listener *l, struct sockaddr_storage *ss, int dual)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ss->ss_family == AF_INET6)
        flags |= dual ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    unsigned total = l->what & TG_HTTP_METRICS ? TG_HTTP_MAX_CONNS : TG_HTTP_MAX_CONNS / 2;
    return MHD_start_daemon(flags, 0, NULL, NULL, handle, l, MHD_OPTION_SOCK_ADDR, ss,
                            MHD_OPTION_CONNECTION_LIMIT, total,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)TG_HTTP_MAX_PER_CLIENT,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
}

int tg_http_listen(const char *addr, unsigned what, int *port)
{
    struct sockaddr_storage ss;
    int dual;
    struct listener *l = !listeners[0].mhd ? &listeners[0] : !listeners[1].mhd ? &listeners[1] : NULL;
    if (!what || (what & ~(unsigned)(TG_HTTP_METRICS | TG_HTTP_HEALTH)) ||
        parse_addr(addr, &ss, &dual))
        return TG_EINVAL;
    if (!l)
        return TG_EEXIST;
    l->what = what;
    l->mhd = serve(l, &ss, dual);
    if (!l->mhd && dual) {                      /* no IPv6 on this host: IPv4 only */
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        uint16_t p = ((struct sockaddr_in6 *)&ss)->sin6_port;
        memset(&ss, 0, sizeof ss);
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
        s4->sin_port = p;
        l->mhd = serve(l, &ss, 0);
    }
    if (!l->mhd)
        return TG_EIO;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_BIND_PORT);
    if (port)
        *port = info ? info->port : 0;
    return 0;
}

void tg_http_stop(void)
{
    for (int i = 0; i < 2; i++) {
        if (listeners[i].mhd)
            MHD_stop_daemon(listeners[i].mhd);
        listeners[i].mhd = NULL;
    }
}
#else
int tg_http_listen(const char *addr, unsigned what, int *port)
{
    (void)addr;
    (void)what;
    (void)port;
    return TG_ENOTSUP;
}
void tg_http_stop(void) {}
#endif
