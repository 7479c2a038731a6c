/* Gang assembly: which pods form which gang, with what priority, minMember
 * and PodGroup, and whether a gang has the members to be tried. One copy,
 * used by the daemon and by `simulate` (snapshot and replay) through the
 * engine (engine.h).
 *
 * Membership. A pod belongs to the gang its group names in its namespace
 * ("ns/group": the pod-group label, else spec.schedulingGroup.podGroupName,
 * else the Volcano or KAI annotation, see model/workload.h); a pod without a
 * group whose controller is a workload of a kind the embedder reads
 * (owner_kinds) belongs to the gang that workload forms ("ns/Kind/name", an
 * LWS "ns/LeaderWorkerSet/name/group", or "ns/LeaderWorkerSet/name" for a pod
 * annotated topogang.io/gang-scope: lws); any other pod is a gang of one
 * ("ns/pod"). A bound pod joins such a derived gang only when it is of this
 * scheduler (its schedulerName, `sched`).
 * A gang record holds
 *   - its pending members: pods waiting to be placed, as pointers the caller
 *     owns and keeps current (every add, update and delete of a pending pod
 *     goes through tg_gangs_pending_set / tg_gangs_pending_delete);
 *   - its placed members: the cluster model's usage records of kind bound or
 *     assumed (nominated phantoms are not members, nor Terminating pods:
 *     they are leaving, and their controller may already have created the
 *     gang's new pods), followed through a cluster listener, so that bound
 *     pods of any scheduler form gangs too (they are the units preemption
 *     may evict);
 *   - its PodGroup, by key, when one exists: topogang's own object as is; a
 *     peer's (when no topogang.io PodGroup has that name: upstream, then
 *     scheduler-plugins, Volcano, KAI) as a copy made here, its topology
 *     (node label keys, Volcano tiers counted from the nodes up) resolved
 *     against the policy's levels; a derived gang's is made here from its
 *     workload (minMember: the workload's size) and its pending members'
 *     annotations (topology-required/-preferred as a level name or node label
 *     key, the tightest of the members; min-member, the largest) and its
 *     sub-groups (a JobSet's child Jobs, a whole LWS's groups, at their
 *     exclusive-topology levels: derived_subs in gang.c). What
 *     cannot be resolved makes the gang invalid with the object and the field
 *     named (tg_grec_unresolved); a derived gang whose workload is not seen
 *     yet waits for it.
 * A record lives while it has a pending or placed member.
 *
 * Priority comes from PriorityClasses, as kube-scheduler's does (issue 19):
 * a gang's priority is the value of its PodGroup's priorityClassName, else
 * the highest of its members' (spec.priority, which the apiserver's Priority
 * admission fills from their priorityClassName, else the value of that
 * class, else the global default PriorityClass, else 0). Whoever may create
 * a PodGroup does not outrank the cluster's own components:
 *   - a PodGroup's numeric spec.priority counts only with the policy's
 *     priority.allowPodGroupPriority, and never above the highest non-system
 *     PriorityClass (when there is none, 1,000,000,000: the highest a
 *     user-defined class may have; system components stay above either);
 *   - a system class (tg_prioclass_is_system) named by a PodGroup counts only
 *     up to its members' own priority: pods are admitted with a class (and
 *     ResourceQuota scopes guard it), PodGroups are not;
 *   - a PodGroup naming a PriorityClass that does not exist waits for it
 *     (tg_grec_unresolved), as the apiserver would refuse such a pod.
 * A gang may not preempt when its PriorityClass (or any pending member's
 * spec.preemptionPolicy) says Never. */
#ifndef TG_SCHEDULER_GANG_H
#define TG_SCHEDULER_GANG_H

#include <stddef.h>
#include <stdint.h>

#include "model/cluster.h"
#include "model/workload.h"
#include "scheduler/cycle.h"
#include "scheduler/queue.h"
#include "util/hmap.h"

#define TG_GANG_HINT 6

enum { TG_GREC_HELD = 4, TG_GREC_HELD_LOST = 0xff };

struct tg_grec {
    char *key;                          /* "ns/group" or "ns/pod", owned */
    uint32_t ns, group;                 /* interned; group 0: a gang of one */
    const struct tg_podgroup *pg;       /* NULL: none (yet), or a gang of one */
    struct tg_pod **pending;            /* pending members (caller's pointers) */
    uint32_t npending, cappending;
    struct tg_usage **members;          /* placed members: bound or assumed records */
    uint32_t nmembers, capmembers;
    struct tg_rq held[TG_GREC_HELD];    /* what the members ask, summed per resource (kept
                                           as they come and go; an entry may be 0) */
    uint8_t nheld;                      /* TG_GREC_HELD_LOST: more resources than held has
                                           room for since the gang last had no member: sum
                                           the members instead (tg_grec_held) */
    uint32_t npending_placed;           /* pending members that already have a member record
                                           (assumed, or bound before the pending stream said so) */
    uint32_t npending_rec;              /* pending members with any record but a nomination
                                           (a member's, a Terminating or loose one; not a
                                           what-if's quiet one): 0 lets tg_grec_view skip
                                           the lookup of each member's record */
    int32_t priority;                   /* resolved, see above */
    uint8_t preempt_never;
    uint8_t pclass_missing;             /* its PodGroup names a PriorityClass not seen */
    uint8_t timed_out;                  /* waited past its scheduleTimeoutSeconds */
    int64_t created_ms;                 /* PodGroup's creation, else the oldest member's */
    int64_t first_seen_ms;              /* clock time it last went from no pending member to some */
    uint32_t anchor_node;               /* interned node of a placed member, 0 none */
    struct tg_qent q;                   /* queue state, owned by the queue */
    struct tg_rq hint[TG_GANG_HINT];    /* the least every unplaced member asks, per
                                           resource asked by all: room freed below it on
                                           a node cannot help this gang (engine wake-ups) */
    uint8_t nhint;                      /* 0: unknown (any room may help) */
    void *user;                         /* the embedder's per-gang state (daemon: report) */
    uint8_t derived;                    /* group is a derived name: a workload's gang */
    uint8_t owner_missing;              /* derived: its workload is not seen (yet) */
    struct tg_podgroup *eff;            /* owned: pg when made here (a peer's, a derived
                                           gang's); its strings are borrowed */
    char *eff_problem;                  /* owned: eff's problem when found here */
    uint32_t *sgpol_lv;                 /* owned: a Volcano PodGroup's spec.subGroupPolicy
                                           levels, required and preferred per entry (level
                                           names, 0 none); its sub-groups in eff->subs
                                           (owned, room for capsubs) */
    uint32_t capsubs;
    const struct tg_workload *wl;       /* derived: its workload, NULL none */
    struct tg_ganghints seen;           /* derived: the last member hints resolved */
    uint32_t queue;                     /* interned tenant queue it belongs to, 0: not resolved
                                           (the engine's, scheduler/tenants.c) */
    uint8_t queue_src;                  /* enum tg_queue_src: where queue came from */
    /* the placed-gang index (tg_gangs_placed_next), kept by gang.c */
    struct tg_grec *pnext, *pprev;      /* its bucket's list */
    int32_t filed_prio;                 /* the priority it is filed under */
    uint8_t filed;                      /* in the index: nmembers > 0 */
};

/* One bucket of the placed-gang index: the gangs with placed members of one
 * key. The key is the priority today; a tenant queue's id goes in front of
 * it (sorted by queue, then priority) when preemption inside a queue and
 * reclaim between queues need it. */
struct tg_pbucket {
    int32_t prio;
    struct tg_grec *head;
};

struct tg_pclass {
    int32_t value;
    uint8_t never;                      /* preemptionPolicy: Never */
    uint8_t global_default;
    uint8_t system;                     /* set by tg_gangs_pclass_set: tg_prioclass_is_system */
};


/* The gang table is the core's (its layout in scheduler/internal.h). */
struct tg_gangs;

/* Listens to c's records. Returns 0 or TG_ENOMEM. Free with tg_gangs_free. */
int tg_gangs_init(struct tg_gangs *gs, struct tg_cluster *c);
void tg_gangs_free(struct tg_gangs *gs);

/* The gang key of a pod ("ns/group", "ns/Kind/name[/group]" or "ns/pod")
 * into buf; returns buf. */
const char *tg_gang_key_of(const struct tg_gangs *gs, const struct tg_pod *p, char *buf, size_t n);
/* The policy whose levels the peers' topology and members' annotations
 * resolve to (kept by pointer; call again after it changed) and the
 * scheduler name; every made PodGroup is resolved again. */
void tg_gangs_set_policy(struct tg_gangs *gs, const struct tg_policy *p);

/* Workloads (kept by pointer until replaced or deleted). each() is called
 * for every gang whose PodGroup changed with it. Set returns 0 or TG_ENOMEM. */
typedef void (*tg_grec_fn)(void *ud, struct tg_grec *g);
int tg_gangs_workload_set(struct tg_gangs *gs, const struct tg_workload *w, tg_grec_fn each,
                          void *ud);
void tg_gangs_workload_delete(struct tg_gangs *gs, const char *key, tg_grec_fn each, void *ud);
const struct tg_workload *tg_gangs_workload(const struct tg_gangs *gs, const char *key);
/* Whether g cannot be tried for a reason of its definition: 1 with
 * *invalid = 1 (its PodGroup or workload is unusable; reason names the
 * object and the field) or *invalid = 0 (a derived gang whose workload is
 * not seen yet); 0 when it can. */
int tg_grec_unresolved(const struct tg_grec *g, int *invalid, char *reason, size_t n);
/* What g's PodGroup is, for people: "PodGroup ml/x (scheduling.volcano.sh/v1beta1)",
 * "Job ml/train"; into buf. */
const char *tg_grec_describe(const struct tg_grec *g, char *buf, size_t n);
struct tg_grec *tg_gangs_get(const struct tg_gangs *gs, const char *key);
/* The gang a usage record belongs to (NULL for a pod of no gang). */
struct tg_grec *tg_gangs_of_usage(const struct tg_gangs *gs, const struct tg_usage *u);

/* A pending pod was added or changed (p replaces any earlier pointer for the
 * same key). *out: its gang. Returns 0 or TG_ENOMEM. now: the clock. */
int tg_gangs_pending_set(struct tg_gangs *gs, struct tg_pod *p, int64_t now, struct tg_grec **out);
/* A pending pod is gone (deleted, bound, terminal). Returns its gang, or NULL
 * when it had none or the record was freed. */
struct tg_grec *tg_gangs_pending_delete(struct tg_gangs *gs, const struct tg_pod *p);
/* pg stays the caller's until replaced or deleted. Returns the gang record
 * of that key, if any. */
struct tg_grec *tg_gangs_podgroup_set(struct tg_gangs *gs, const struct tg_podgroup *pg);
struct tg_grec *tg_gangs_podgroup_delete(struct tg_gangs *gs, const char *key);
const struct tg_podgroup *tg_gangs_podgroup(const struct tg_gangs *gs, const char *key);
/* A PriorityClass was set or deleted; every gang's priority is resolved
 * again. Returns 0 or TG_ENOMEM. */
int tg_gangs_pclass_set(struct tg_gangs *gs, uint32_t name, const struct tg_pclass *pc);
void tg_gangs_pclass_delete(struct tg_gangs *gs, uint32_t name);
/* Why g's PodGroup does not set g's priority as it asks (its spec.priority
 * not honoured or capped, its system class held to the members'), for the
 * reason of a gang that does not fit; "" when it does. Into buf. */
const char *tg_grec_priority_note(const struct tg_gangs *gs, const struct tg_grec *g, char *buf,
                                  size_t n);
/* The value of a PriorityClass; 0 when unknown (*found = 0). */
int32_t tg_gangs_pclass_value(const struct tg_gangs *gs, uint32_t name, int *found);
/* Resolves g's priority, preempt_never and created_ms again; 1 if the
 * priority or creation changed. */
int tg_grec_resolve(struct tg_gangs *gs, struct tg_grec *g);
/* The priority of a usage record's pod on its own (its gang's is
 * tg_gangs_of_usage()->priority). */
int32_t tg_gangs_usage_priority(const struct tg_gangs *gs, const struct tg_usage *u);

/* The victims index. Gangs with a placed member and priority < below,
 * lowest priority first: start with *it = (struct tg_placed_it){0}; NULL
 * at the end. The index must not change during the walk. */
struct tg_placed_it {
    uint32_t b;
    struct tg_grec *g;
};
struct tg_grec *tg_gangs_placed_next(const struct tg_gangs *gs, int32_t below,
                                     struct tg_placed_it *it);
/* Placed records that are no gang's member (not nominated phantoms): pods
 * on their own and Terminating pods. Start with *pos = 0; NULL at the end. */
struct tg_usage *tg_gangs_loose_next(const struct tg_gangs *gs, uint32_t *pos);
/* 1 when the index ran out of memory once and is incomplete: preemption
 * then scans the model instead. */
int tg_gangs_index_lost(const struct tg_gangs *gs);

/* What g's placed members ask, summed per resource: g->held (n entries,
 * some may be 0) returned, or NULL when it was lost (more resources than it
 * holds): sum g->members then. O(1). */
static inline const struct tg_rq *tg_grec_held(const struct tg_grec *g, uint32_t *n)
{
    *n = g->nheld == TG_GREC_HELD_LOST ? 0 : g->nheld;
    return g->nheld == TG_GREC_HELD_LOST ? NULL : g->held;
}

/* Frees g if it has no pending or placed member and is out of the queue. */
void tg_gangs_release(struct tg_gangs *gs, struct tg_grec *g);

/* minMember of the gang (its PodGroup's; 1 without one). */
uint32_t tg_grec_min(const struct tg_grec *g);
/* Pending members not placed yet (no bound or assumed record). O(1). */
static inline uint32_t tg_grec_unplaced(const struct tg_grec *g)
{
    return g->npending - g->npending_placed;
}
/* Enough members to be tried: unplaced + placed >= minMember. */
static inline int tg_grec_ready(const struct tg_grec *g)
{
    return g->npending > g->npending_placed &&
           tg_grec_unplaced(g) + g->nmembers >= (g->pg ? (uint32_t)g->pg->min_member : 1);
}
/* The placement input: pods = pending members with no bound or assumed
 * record (into pods[], room for g->npending), nbound, anchor; within none. */
void tg_grec_view(const struct tg_grec *g, const struct tg_cluster *c, struct tg_pod **pods,
                  struct tg_gang *out);

#endif
