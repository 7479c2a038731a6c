/* `topogang scheduler`: the daemon. It wires the informer (API server ->
 * caches) to the cluster model and the gang cycle, binds every member of a
 * placed gang concurrently, rolls back what cannot be completed, and reports
 * through PodGroup status, Events, logs and metrics.
 *
 * Pieces: daemon.c (options, informer handlers, the gang queue, status and
 * events), binder.c (concurrent Binding requests, retries, rollback),
 * leader.c (coordination.k8s.io Lease election), metrics.c (/metrics,
 * /healthz, /readyz). All of it runs on one libuv loop, except the HTTP
 * server's thread, which only reads atomics. */
#ifndef TG_DAEMON_DAEMON_H
#define TG_DAEMON_DAEMON_H

#include <stdint.h>
#include <uv.h>

#include "informer/api.h"
#include "informer/informer.h"
#include "scheduler/cycle.h"
#include "util/hmap.h"

struct tg_daemon;

/* `topogang scheduler ...`: returns the exit code (0 ok, 1 failure, 2 usage). */
int tg_cmd_scheduler(int argc, char **argv);
struct tg_bindop;

/* One gang as the daemon tracks it: keyed "ns/group", or the pod key for a
 * pod without a group. Pending members are pod keys (owned strings). */
struct tg_dgang {
    char *key;
    uint32_t ns;                        /* interned namespace */
    uint8_t grouped;
    uint8_t phase;                      /* last phase written, enum tg_pg_phase */
    uint8_t timed_out;
    uint8_t reconciled;                 /* startup check of a half-bound gang done */
    char **pending;
    uint32_t npending, cap;
    uint32_t nbound;                    /* bound members seen by the informer */
    uint32_t anchor_node;               /* interned node of a bound member, 0 when none:
                                           the rest of the gang joins its domain */
    uint32_t nbound_known;              /* bound members we know of: those seen before the
                                           last bind attempt plus its successful binds */
    int64_t op_start_ms;                /* loop ms when the binds in flight started */
    int64_t first_seen_ms;              /* wall clock, for e2e latency and the timeout */
    int64_t next_try_ms;                /* backoff: not before this (loop time) */
    int64_t last_try_ms;
    int64_t backoff_ms;
    uint64_t tried_generation;          /* cluster generation at the last failed try */
    uint32_t attempts;
    struct tg_bindop *op;               /* binding in flight */
    char reason[1024];                  /* why it waits, "" when placed */
    char level[64], domain[512];        /* placement */
    char *status_sig;                   /* last status wanted (without times) */
    char *status_want;                  /* status body waiting for the one in flight */
    uint8_t patch_inflight;             /* one status patch at a time: patches sent
                                           together may be applied out of order */
    char event_sig[96];                 /* last event reason + hash, for de-duplication */
    int64_t event_ms;
};

enum tg_pg_phase { TG_PG_NONE, TG_PG_PENDING, TG_PG_SCHEDULING, TG_PG_SCHEDULED,
                   TG_PG_UNSCHEDULABLE, TG_PG_FAILED };

struct tg_daemon {
    uv_loop_t *loop;
    struct tg_client *client;
    struct tg_informer *inf;
    struct tg_sched sched;
    char scheduler_name[128];
    char config_ns[128], config_name[128];
    struct tg_hmap gangs;               /* key -> struct tg_dgang * */
    uv_timer_t tick;                    /* scheduling and housekeeping */
    uv_signal_t sigterm, sigint;
    int synced, leader, stopping, leader_elect;
    uint32_t inflight_binds;
    int64_t shutdown_deadline;
    /* binder state */
    struct tg_bindop **bindq;           /* ops with binds waiting for a slot */
    uint32_t nbindq, capbindq;
    struct tg_hmap assumed;             /* pod key -> expiry (loop ms) after bind */
    /* leader election */
    struct tg__leader *le;
    char identity[256];
};

int64_t tg__wall_ms(void);
/* Finds or creates the gang record for a key. */
struct tg_dgang *tg__gang(struct tg_daemon *d, const char *key, uint32_t ns, int grouped);
/* Writes status (when it changed) and an Event (de-duplicated) for a gang. */
void tg__gang_report(struct tg_daemon *d, struct tg_dgang *g, const char *event_type,
                     const char *event_reason);
void tg__gang_backoff(struct tg_daemon *d, struct tg_dgang *g);
/* Wakes the scheduling tick soon. */
void tg__kick(struct tg_daemon *d);

/* binder.c: binds every placed member of gang g; slot[i] for pods[i]. Takes
 * the gang off the queue until the binds complete. */
int tg__bind_gang(struct tg_daemon *d, struct tg_dgang *g, struct tg_pod **pods,
                  const uint32_t *slot, uint32_t n, uint32_t must);
void tg__binder_pump(struct tg_daemon *d);
/* Drops assumptions whose pod was never seen bound (expired), and those of
 * pods that disappeared. */
void tg__assumed_sweep(struct tg_daemon *d);
/* Records that key's assumption expires at `expiry` (loop ms); keep != 0
 * leaves an existing, earlier entry alone. */
void tg__assumed_set(struct tg_daemon *d, const char *key, int64_t expiry, int keep);
void tg__assumed_del(struct tg_daemon *d, const char *key);
void tg__assumed_clear(struct tg_daemon *d);

/* leader.c */
int tg__leader_start(struct tg_daemon *d, const char *ns, const char *name, int duration_s);
void tg__leader_stop(struct tg_daemon *d, void (*done)(struct tg_daemon *));

#endif
