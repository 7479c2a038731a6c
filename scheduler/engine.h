/* The scheduling flow, one copy for the daemon and for `simulate` (snapshot
 * and replay):
 *
 *   object events -> model (cluster, tree) + gang assembly (gang.h)
 *                 -> queue (queue.h): which gang next
 *                 -> a decision in steps (engine.c): gate (may it be tried;
 *                    queue admission will go there), place (cycle.h), else
 *                    preempt (preempt.h; reclaim will go there), else
 *                    reserve -> a decision for the embedder to carry out.
 *
 * The layouts (engine, gang table, queue) are the core's, in
 * scheduler/internal.h; embedders hold a struct tg_engine * and use the
 * accessors at the end of this file (scripts/check-layers enforces it).
 *
 * The engine does no I/O and reads no clock of its own: the daemon feeds it
 * informer events and runs it on wall time, binding what it decides through
 * the API; the simulator feeds it YAML objects (and, in a replay, arrivals
 * and completions on a virtual clock) and carries decisions out at once.
 *
 * Nominations: a gang that preempts holds its room (nominated records in the
 * model) while its victims terminate; gangs of lower priority see that room
 * as taken, gangs of higher priority may take it (the nomination is then
 * dropped and the preemptor plans again). When the victims are gone it is
 * placed inside the domain it chose; if it no longer fits there, it starts
 * over from scratch, never binding part of itself.
 *
 * Reservations: the head gang (first in queue order) that has waited
 * gang.reserveAfterSeconds and can neither be placed nor preempt gets a
 * domain where it misses the least; no gang of lower or equal priority is
 * placed into it while the reservation lasts (it ends when the gang is
 * placed, goes away or times out), so the domain drains while others
 * backfill elsewhere. */
#ifndef TG_SCHEDULER_ENGINE_H
#define TG_SCHEDULER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler/cycle.h"
#include "scheduler/gang.h"
#include "scheduler/preempt.h"
#include "scheduler/queue.h"

enum tg_dkind {
    TG_D_NONE,                          /* nothing due now (see tg_engine_next_due) */
    TG_D_PLACE,                         /* bind view.pods[i] to result.slot[i] (assumed now) */
    TG_D_PREEMPT,                       /* evict preemption.victims; the gang holds its room */
    TG_D_NOMINATED,                     /* still waiting for its victims to leave */
    TG_D_UNSCHEDULABLE,                 /* no room, and preemption cannot help */
    TG_D_WAITING,                       /* fewer members than minMember so far */
    TG_D_INVALID,                       /* its PodGroup is missing or names no level */
};

struct tg_decision {
    uint8_t kind;                       /* enum tg_dkind */
    uint8_t timed_out;                  /* passed its scheduleTimeoutSeconds just now */
    uint8_t reserved;                   /* UNSCHEDULABLE: holds a reservation (reason says) */
    uint8_t reservation_new;            /* ... made in this decision */
    struct tg_grec *gang;
    struct tg_gang view;                /* PLACE: the members placed (view.pods) */
    struct tg_result result;            /* PLACE: slots, level, domain */
    uint32_t must;                      /* PLACE: binds needed to reach minMember */
    struct tg_preemption preemption;    /* PREEMPT (and NOMINATED: the domain) */
    char reason[2048];                  /* for people: status, Events, simulate */
};

struct tg_engine;                       /* opaque: see tg_engine_new */

struct tg_engine_stats {
    uint64_t attempts, placed, unschedulable, preemptions, victim_gangs, victim_pods,
             reservations, nominations_dropped, timeouts;
    uint64_t nomem;                     /* queue operations that failed for lack of memory: a
                                           gang may have been left out of the queue until its
                                           objects are handed over again */
};


/* The engine is opaque to its embedders (its layout is the core's, in
 * scheduler/internal.h). *out: a new engine with a policy (copied) on a clock
 * (copied). Returns 0 or TG_ENOMEM; free with tg_engine_delete (NULL: no-op). */
int tg_engine_new(struct tg_engine **out, const struct tg_policy *p, const struct tg_clock *clock);
void tg_engine_delete(struct tg_engine *e);
/* A new policy: levels rebuilt when they changed, every waiting gang woken. */
int tg_engine_set_policy(struct tg_engine *e, const struct tg_policy *p);
int64_t tg_engine_now(const struct tg_engine *e);

/* ---- objects in ------------------------------------------------------------- */

/* A Node object (taken, also on failure). Wakes waiting gangs when the node
 * is new or changed in a way that can make room (not for a heartbeat). */
int tg_engine_node_set(struct tg_engine *e, struct tg_node_obj *obj);
void tg_engine_node_remove(struct tg_engine *e, uint32_t name);
/* A pending pod of this scheduler was added or changed (p stays the
 * caller's; pass every update). A bound, terminal or deleting pod is taken
 * as gone from the pending set. */
int tg_engine_pending_set(struct tg_engine *e, struct tg_pod *p);
/* A pod left the pending set (bound, deleted, terminal); its usage, if any,
 * is the bound stream's business. */
void tg_engine_pending_gone(struct tg_engine *e, const struct tg_pod *p);
/* A bound pod of any scheduler was added or changed / deleted. */
int tg_engine_bound_set(struct tg_engine *e, const struct tg_pod *p);
void tg_engine_bound_gone(struct tg_engine *e, const char *key);
/* PodGroups (kept by pointer until replaced or deleted). An update that
 * leaves the spec as it was (a status write) replaces the pointer and wakes
 * nothing. */
void tg_engine_podgroup_set(struct tg_engine *e, const struct tg_podgroup *pg);
void tg_engine_podgroup_delete(struct tg_engine *e, const char *key);
/* Workloads whose pods form gangs with no PodGroup (model/workload.h: Job,
 * JobSet, LeaderWorkerSet, PyTorchJob, MPIJob, TrainJob), kept by pointer
 * until replaced or deleted; the gangs they define are woken. Which kinds
 * count is set by tg_engine_set_owner_kinds (the embedder calls it before any pod).
 * Set returns 0 or TG_ENOMEM. */
int tg_engine_workload_set(struct tg_engine *e, const struct tg_workload *w);
void tg_engine_workload_delete(struct tg_engine *e, const char *key);
/* PriorityClasses by interned name. */
int tg_engine_pclass_set(struct tg_engine *e, uint32_t name, const struct tg_pclass *pc);
void tg_engine_pclass_delete(struct tg_engine *e, uint32_t name);
/* PodDisruptionBudgets (kept by pointer until replaced or deleted). */
int tg_engine_pdb_set(struct tg_engine *e, const struct tg_pdb *pdb);
void tg_engine_pdb_delete(struct tg_engine *e, const char *key);

/* Namespaces (labels, for inter-pod namespaceSelectors), PersistentVolumes,
 * PersistentVolumeClaims, StorageClasses and ResourceClaims, decoded by
 * model/objects.h (each set takes the object, also on failure). Every
 * change wakes the waiting gangs: a claim bound or allocated, a volume or
 * a namespace label may let one in. Returns 0 or TG_ENOMEM. */
int tg_engine_namespace_set(struct tg_engine *e, struct tg_namespace *n);
void tg_engine_namespace_delete(struct tg_engine *e, uint32_t name);
int tg_engine_pv_set(struct tg_engine *e, struct tg_pv *v);
void tg_engine_pv_delete(struct tg_engine *e, uint32_t name);
int tg_engine_pvc_set(struct tg_engine *e, struct tg_pvc *c);
void tg_engine_pvc_delete(struct tg_engine *e, uint32_t ns, uint32_t name);
int tg_engine_sc_set(struct tg_engine *e, struct tg_storageclass *c);
void tg_engine_sc_delete(struct tg_engine *e, uint32_t name);
int tg_engine_claim_set(struct tg_engine *e, struct tg_rclaim *c);
void tg_engine_claim_delete(struct tg_engine *e, uint32_t ns, uint32_t name);

/* Tenant Queues (model/queues.h; issue 19): the whole current set (n == 0:
 * none), not kept (the division copies what it needs), replacing the set
 * held; 0, or TG_ENOMEM with the set held unchanged. While none is held
 * queues are off; once one is, every gang belongs to a queue
 * (its PodGroup's, its pods', its namespace's default, else the policy's
 * queues.defaultQueue), waits while that queue does not exist, is placed
 * only within the limits of its queue and every ancestor, and the queue
 * furthest below its fair share goes first (scheduler/tenants.c). Every
 * gang parked for its queue is looked at again. A set that differs from
 * the one held only in status or metadata (tg_queue_obj_same_spec) changes
 * nothing: no new division, nothing woken. */
struct tg_queue_obj;
int tg_engine_queues_set(struct tg_engine *e, const struct tg_queue_obj *const *qs, uint32_t n);

/* ---- the flow ------------------------------------------------------------------ */

/* Tries the next due gang and says what to do. d->kind is TG_D_NONE when
 * nothing is due. Returns 0 or TG_ENOMEM (the gang is requeued with backoff).
 * Free d with tg_decision_free before the next call. */
int tg_engine_next(struct tg_engine *e, struct tg_decision *d);
void tg_decision_free(struct tg_decision *d);
/* The clock time at which tg_engine_next may have work (INT64_MAX: none). */
int64_t tg_engine_next_due(const struct tg_engine *e);

/* A bind of an assumed pod failed, or an assumption expired: forget it. */
void tg_engine_forget(struct tg_engine *e, const char *key);
/* The binds of a PLACE decision for g are over: ok != 0 when minMember was
 * reached (members still unplaced are tried again after a backoff when some
 * failed); ok == 0 when the gang was rolled back (backoff). */
void tg_engine_bind_done(struct tg_engine *e, struct tg_grec *g, int ok, int some_failed);
/* Every gang waiting for a cluster change is tried again (the embedder
 * calls this for changes the engine cannot see). */
void tg_engine_wake(struct tg_engine *e);

/* The reservation g holds (NULL: none), and the domain's path. */
const struct tg_reservation *tg_engine_reservation(const struct tg_engine *e,
                                                   const struct tg_grec *g);

/* ---- the embedders' contract: a few reads and two settings ---------------------------
 *
 * This is all the daemon and `simulate` see of the engine's state; nothing
 * returned may be written, and pointers stay valid until the next call that
 * changes the engine. Add to this list rather than reach into the layouts. */

/* The model (nodes, usage, tree) and the policy in force. */
const struct tg_cluster *tg_engine_cluster(const struct tg_engine *e);
const struct tg_policy *tg_engine_policy(const struct tg_engine *e);
/* The gang record of a key (NULL: none); the gang key of a pod, into buf
 * (returns buf); the next gang in no particular order (start with *pos = 0;
 * NULL at the end; the engine must not change meanwhile). The records are
 * the engine's: the embedder writes only g->user. */
struct tg_grec *tg_engine_gang(const struct tg_engine *e, const char *key);
const char *tg_engine_gang_key(const struct tg_engine *e, const struct tg_pod *p, char *buf,
                               size_t n);
struct tg_grec *tg_engine_gang_next(const struct tg_engine *e, uint32_t *pos);
/* The PodGroup the engine holds under a key (NULL: none). */
const struct tg_podgroup *tg_engine_podgroup(const struct tg_engine *e, const char *key);

/* What the engine has done and holds, for metrics and reports. */
const struct tg_engine_stats *tg_engine_stats(const struct tg_engine *e);
struct tg_engine_counts {
    uint32_t state[TG_Q__N];            /* gangs per queue state (enum tg_qstate) */
    uint32_t queued;                    /* gangs in the queue (not out) */
    uint32_t pending_pods;              /* pending pods of this scheduler */
    uint32_t reservations, nominations;
};
void tg_engine_counts(const struct tg_engine *e, struct tg_engine_counts *out);
/* The latest finite timeout or reserve deadline of a queued gang; INT64_MIN
 * when none (the replay's end: past it no timer can change anything). */
int64_t tg_engine_latest_deadline(const struct tg_engine *e);

/* The division among tenant queues as of the last decision (fairshare.h:
 * allocated, fair share, quota, limit per queue); NULL while queues are off.
 * A gang's queue is g->queue. Reclaims: preemptions that took room from
 * another queue. */
struct tg_fairshare;
const struct tg_fairshare *tg_engine_fairshare(const struct tg_engine *e);
uint64_t tg_engine_reclaims(const struct tg_engine *e);
/* Gangs per tenant queue, indexed as tg_engine_fairshare's queues (n >= its
 * count entries in each array): running[q] counts the queue's own gangs
 * (not its children's) with a placed member, waiting[q] those with only
 * pending members. One pass over the gangs (O(gangs)): for a periodic
 * reader (status, /metrics), not per decision. Returns 0, or TG_EINVAL
 * while queues are off or n is short. */
int tg_engine_queue_gangs(const struct tg_engine *e, uint32_t *waiting, uint32_t *running, uint32_t n);
/* Reclaims started by gangs of the queue named `queue` (interned). */
uint64_t tg_engine_queue_reclaims(const struct tg_engine *e, uint32_t queue);
/* Time fairness across a restart (queues.usageHalfLifeSeconds): the decayed
 * usage of resource res (model id) of the queue named `queue` (interned), as
 * saved age_ms ago, decays by the half-life over age_ms and becomes that
 * queue's usage: now, or when a Queue of that name first takes part (kept
 * until then; at most 4096 kept). Nothing with time fairness off. Returns 0,
 * TG_EINVAL (a negative or non-finite amount) or TG_ENOMEM. */
int tg_engine_queue_usage_seed(struct tg_engine *e, uint32_t queue, uint32_t res,
                               double resource_seconds, int64_t age_ms);
/* Brings the queues' decayed usage up to the engine's clock (a reader that
 * saves it; decisions do this themselves). */
void tg_engine_queues_tick(struct tg_engine *e);

/* Settings: which workload owner kinds form gangs (bit per enum tg_wl_kind;
 * set before any pod), and the hook called before a gang record is freed
 * (the embedder frees g->user there). */
void tg_engine_set_owner_kinds(struct tg_engine *e, unsigned kinds);
void tg_engine_on_gang_freed(struct tg_engine *e, void (*fn)(void *ud, struct tg_grec *g),
                             void *ud);

#endif
