/* Prometheus metrics and the /healthz, /readyz, /metrics endpoints.
 *
 * The loop thread updates plain counters and histograms through these
 * functions; libmicrohttpd serves them from its own thread, so every value is
 * an atomic and text is rendered from a snapshot. The HTTP server comes from
 * libmicrohttpd rather than hand-written socket code: request parsing, keep-
 * alive and limits are its job. Config: --metrics-bind-address and
 * --health-bind-address (or --listen for both on one address).
 *
 * Up to two listeners: /metrics on one, /healthz and /readyz on the other,
 * so that clients scraping (or holding connections to) /metrics never take
 * the connections the kubelet's probes need; each listener caps its
 * connections in total and per client address (TG_HTTP_MAX_PER_CLIENT), and
 * drops a connection idle for 10 s. */
#ifndef TG_DAEMON_METRICS_H
#define TG_DAEMON_METRICS_H

#include <stdint.h>

enum tg_counter {
    TG_M_ATTEMPT_SCHEDULED, TG_M_ATTEMPT_UNSCHEDULABLE, TG_M_ATTEMPT_ERROR,
    TG_M_BINDS_OK, TG_M_BINDS_FAILED, TG_M_BIND_RETRIES, TG_M_ROLLBACKS, TG_M_PODS_DELETED,
    TG_M_CONFIG_OK, TG_M_CONFIG_REJECTED, TG_M_TIMEOUTS, TG_M_EVENTS, TG_M_STATUS_PATCHES,
    TG_M_LEADER_TRANSITIONS, TG_M_PREEMPTIONS, TG_M_VICTIM_GANGS, TG_M_VICTIM_PODS,
    TG_M_PREEMPTED_PODS, TG_M_EVICTION_ERRORS,
    /* objects the decoder refused, by kind (informer/reflector.h) */
    TG_M_DECODE_FAIL_NODE, TG_M_DECODE_FAIL_POD, TG_M_DECODE_FAIL_PODGROUP, TG_M_DECODE_FAIL_OTHER,
    /* Events tried again after a failure, and given up on (the client's stats) */
    TG_M_EVENT_RETRIES, TG_M_EVENTS_DROPPED,
    /* writes answered 429 or 503 (API Priority and Fairness; the client's stats) */
    TG_M_API_THROTTLED,
    /* the client's direct HTTP/2 path for writes (informer/h2.h): requests answered,
     * connections up, connections failed or broken (the client's stats) */
    TG_M_API_DIRECT_REQUESTS, TG_M_API_DIRECT_CONNECTS, TG_M_API_DIRECT_FAILURES,
    TG_M__COUNTERS
};

enum tg_gauge {
    /* the queue's own counts (queue.h), by state */
    TG_G_QUEUE_ACTIVE, TG_G_QUEUE_BACKOFF, TG_G_QUEUE_UNSCHED, TG_G_QUEUE_WAITING,
    TG_G_QUEUE_PODS, TG_G_RESERVATIONS, TG_G_NOMINATIONS,
    TG_G_NODES, TG_G_BOUND_PODS, TG_G_ASSUMED_PODS,
    TG_G_LEADER, TG_G_SYNCED, TG_G_RELISTS, TG_G_WATCH_RESTARTS, TG_G_DECODE_ERRORS,
    TG_G_FENCED_WRITES,
    TG_G_INFLIGHT_BINDS,
    /* the client's congestion windows (informer/client.h) */
    TG_G_WRITE_WINDOW, TG_G_EVENT_WINDOW,
    TG_G_BAD_TOPOLOGY, TG_G_LOOP_HEARTBEAT_MS,
    TG_G__GAUGES
};

enum tg_histo { TG_H_GANG_E2E, TG_H_POD_E2E, TG_H_BIND, TG_H_CYCLE, TG_H__HISTOS };

void tg_metrics_inc(enum tg_counter c, uint64_t n);
void tg_metrics_set(enum tg_gauge g, int64_t v);
int64_t tg_metrics_get(enum tg_gauge g);
uint64_t tg_metrics_counter(enum tg_counter c);
/* Observes a duration in seconds. */
void tg_metrics_observe(enum tg_histo h, double seconds);
/* Rank order (scheduler/rank.h): one placement's consecutive-rank pairs and,
 * per level name, the pairs that crossed it; counted into
 * topogang_rank_pairs_total and topogang_rank_crossings_total{level}. Up to
 * TG_METRICS_RANK_LEVELS level names over the process's life (a policy
 * reload may rename levels); further names are not counted. */
enum { TG_METRICS_RANK_LEVELS = 16 };
void tg_metrics_rank(uint64_t pairs, const char *const *level, const uint32_t *cross, uint32_t n);
/* The tenant queues' gauges (issue 19), as exposition text the scheduler's
 * loop builds (topogang_queue_{allocated,fair_share,quota,limit}{queue,
 * resource}); taken (freed here), NULL: none. Rendered as they are. */
void tg_metrics_queues(char *text);

/* Appends the Prometheus text exposition (version 0.0.4) to a malloc'ed
 * string the caller frees. */
char *tg_metrics_render(void);

enum { TG_HTTP_METRICS = 1, TG_HTTP_HEALTH = 2 };
enum { TG_HTTP_MAX_CONNS = 64, TG_HTTP_MAX_PER_CLIENT = 8 };

/* Starts a listener on addr serving what (TG_HTTP_METRICS: /metrics,
 * TG_HTTP_HEALTH: /healthz /readyz, or both): "127.0.0.1:8080", "[::1]:8080",
 * "[::]:8080" (IPv4 and IPv6), ":8080" (the same; IPv4 only on a host
 * without IPv6). /metrics listeners take TG_HTTP_MAX_CONNS connections,
 * health-only ones half that; any listener at most TG_HTTP_MAX_PER_CLIENT
 * from one client address (more are closed at once). Returns 0, or
 * TG_EINVAL (bad address: an IPv6 address needs brackets), TG_EIO (cannot
 * listen), TG_EEXIST (two listeners already), TG_ENOTSUP (built without
 * libmicrohttpd). The port actually bound is stored in *port (for port 0). */
int tg_http_listen(const char *addr, unsigned what, int *port);
/* Stops every listener. */
void tg_http_stop(void);

#endif
