/* The core's private layouts: the engine, the gang table and the queue.
 *
 * Included only by the core (the .c files in scheduler/) and by the unit tests that check
 * its insides. The daemon (scheduler/daemon) and `simulate` (scheduler/sim)
 * see the engine through engine.h's accessors only; scripts/check-layers
 * refuses this header anywhere else, so the layouts can change (queues,
 * reclaim) without reaching into the embedders. */
#ifndef TG_SCHEDULER_INTERNAL_H
#define TG_SCHEDULER_INTERNAL_H

#include <stdint.h>

#include "scheduler/engine.h"
#include "model/queues.h"
#include "model/resources.h"
#include "scheduler/fairshare.h"
#include "scheduler/pmemo.h"
#include "util/hmap.h"

/* ---- the pending queue (queue.h) ----------------------------------------------------- */

struct tg_qheap {
    struct tg_qent **v;
    uint32_t n, cap;
};

#define TG_MAX_RESERVATIONS 4

struct tg_queue {
    const struct tg_clock *clock;
    struct tg_qheap active, backoff, head, deadline;
    struct tg_qent unsched;             /* list heads (sentinels) */
    struct tg_qent waiting;
    uint32_t count[TG_Q__N];
    int64_t backoff_initial_ms, backoff_max_ms, flush_ms;
    uint64_t wakes;                     /* tg_queue_wake calls */
    struct tg_reservation resv[TG_MAX_RESERVATIONS];
    uint32_t nresv;
};

/* The latest finite deadline of a queued entry; INT64_MIN when none. */
int64_t tg_queue_latest_deadline(const struct tg_queue *q);

/* ---- the gang table (gang.h) --------------------------------------------------------- */

struct tg_gangs {
    struct tg_cluster *cluster;
    struct tg_hmap by_key;              /* key -> struct tg_grec * */
    struct tg_imap by_group;            /* ns << 32 | group (interned) -> the gang of that
                                           PodGroup: tg_gangs_of_usage builds no key */
    struct tg_hmap pgs;                 /* PodGroup key -> const struct tg_podgroup * */
    struct tg_hmap pidx;                /* pending pod key (owned) -> its place in its gang */
    struct tg_imap pclass;              /* interned name -> struct tg_pclass * */
    uint32_t default_class;             /* interned name of the globalDefault class, 0 none */
    int32_t user_max;                   /* highest non-system class value (none:
                                           TG_PRIO_USER_MAX) */
    uint32_t user_max_name;             /* interned name of that class, 0 none */
    /* Called before a record is freed (the embedder frees g->user; the queue
     * entry is already out of the queue). */
    void (*freed)(void *ud, struct tg_grec *g);
    /* Called when a placed member goes away (room freed). */
    void (*member_gone)(void *ud, struct tg_grec *g, const struct tg_usage *u);
    /* Called when a pending member moved to another gang (its group label or
     * its owner changed): g may have nothing left (NULL: g is freed if so). */
    void (*pending_left)(void *ud, struct tg_grec *g);
    void *ud;
    struct tg_hmap umem;                /* placed member's pod key -> the gang it joined */
    struct tg_hmap wls;                 /* workload key -> const struct tg_workload * */
    const struct tg_policy *policy;     /* the levels peers' topology resolves to; NULL none */
    uint32_t sched;                     /* interned schedulerName: its bound pods join
                                           derived gangs */
    unsigned owner_kinds;               /* bit per enum tg_wl_kind whose pods form derived
                                           gangs (the embedder reads those workloads);
                                           0 at init: none */
    /* Victims index (preemption): every gang with a placed member, filed
     * by priority, updated on each member added or removed and each
     * priority change, O(log buckets); and the placed records that are no
     * gang's member (pods on their own, Terminating pods), by address. */
    struct tg_pbucket *pb;              /* sorted by prio, ascending; no empty bucket */
    uint32_t npb, cappb;
    struct tg_imap loose;               /* struct tg_usage * -> itself */
    uint8_t index_lost;                 /* out of memory once: the index is incomplete
                                           (preemption then scans the model) */
};

/* ---- tenant queues (scheduler/tenants.c) -------------------------------------------- */

struct tg_fairshare;
struct tg_gang;

struct tg_tenants {
    struct tg_fairshare *fs;            /* NULL while no Queue exists: queues off */
    struct tg_hmap acct;                /* pod key -> what it counts in which queue (owned) */
    int64_t cap[TG_RES_MAX];            /* the Nodes' allocatable, summed */
    uint8_t cap_dirty;
    uint32_t *rank, *order;             /* per queue index: its rank; queues by rank */
    uint32_t nrank, caprank;
    uint64_t reorders;                  /* pending heaps rebuilt for a new order between queues */
    /* the Queue objects the division was built from (owned copies), built
     * again when a Node first offers a resource one of them names */
    struct tg_queue_obj **held;
    uint32_t nheld;
    uint32_t res_seen;                  /* tg_res_count() at that build */
    uint64_t rebuilds;                  /* divisions built again for a newly offered resource */
    uint64_t builds;                    /* divisions built (a new set of Queues, or a rebuild) */
    uint64_t reclaims;                  /* preemptions that took room from another queue */
    struct tg_imap reclaims_by;         /* interned reclaimer queue -> its reclaims */
    struct tg_useed *seeds;             /* saved usage of queues not (yet) taking part */
    uint32_t nseeds, capseeds;
};

/* A queue's usage saved by an earlier run (tg_engine_queue_usage_seed),
 * already decayed to the engine's clock at `at_ms`. */
struct tg_useed {
    uint32_t queue, res;
    double v;
    int64_t at_ms;
};

enum { TG_TENANT_OK, TG_TENANT_MISSING, TG_TENANT_LIMIT };

int tg__tenants_init(struct tg_engine *e);
void tg__tenants_free(struct tg_engine *e);
/* The whole set of Queue objects (not kept), replacing the one held. */
int tg__tenants_replace(struct tg_engine *e, const struct tg_queue_obj *const *qs, uint32_t n);
/* 1 when qs[0..n) is, in order, the set the division was built from as
 * the division reads it (tg_queue_obj_same_spec): a Queue's status or other
 * metadata changed, nothing to build again. */
int tg__tenants_same(const struct tg_engine *e, const struct tg_queue_obj *const *qs, uint32_t n);
/* A Node's allocatable counted (sign +1) or no more (-1). */
void tg__tenants_node(struct tg_engine *e, const struct tg_node_obj *n, int sign);
/* A pending pod of g added or changed (gone 0), or gone (gone 1; g may be NULL). */
void tg__tenants_pending(struct tg_engine *e, struct tg_grec *g, const struct tg_pod *p, int gone);
/* g's queue resolved again (its counted pods move with it); returns it. */
uint32_t tg__tenants_resolve(struct tg_engine *e, struct tg_grec *g);
/* May g be tried: TG_TENANT_OK, or MISSING (its queue does not exist) with
 * the reason in buf. */
int tg__tenants_gate(struct tg_engine *e, struct tg_grec *g, char *reason, size_t len);
/* Admission against the limits of g's queue and its ancestors: cuts the
 * placement view v to its longest prefix within them (what this decision
 * may place: an elastic gang's extras beyond the limit wait). TG_TENANT_OK,
 * or LIMIT when even the members it must place now (tg_gang_must) would go
 * past a limit, with the reason in buf in their numbers. */
int tg__tenants_cap(const struct tg_engine *e, const struct tg_grec *g, struct tg_gang *v,
                    char *reason, size_t len);
/* Before a decision: capacity, fair shares and the order between queues. */
void tg__tenants_order(struct tg_engine *e);
/* Requests summed per resource, at most TG__MAXREQ resources. */
#define TG__MAXREQ 32
/* req[0..nreq) added into out[0..n) (same resource summed); the new n. */
uint32_t tg__rq_add(struct tg_rq *out, uint32_t n, const struct tg_rq *req, uint32_t nreq);
/* What the gang view v (its members not placed yet, as its queue's limits
 * and its elastic size trimmed them) asks for, summed, into out (TG__MAXREQ). */
uint32_t tg__tenants_request(const struct tg_gang *v, struct tg_rq *out);

/* ---- reclaim between queues (scheduler/reclaim.c) ------------------------------------ */

struct tg_preempt_in;
struct tg_preemption;
/* A reclaim for g (base: its preemption input): 0 with out->domain set and
 * victims when one was planned (out->reason in numbers, reclaims counted),
 * else out->domain TG_NONE and why, when not empty, the reason a victim
 * queue's share stopped it. TG_ENOMEM. */
int tg__reclaim_plan(struct tg_engine *e, struct tg_grec *g, const struct tg_preempt_in *base,
                     struct tg_preemption *out, char *why, size_t len);

/* ---- the engine (engine.h) ----------------------------------------------------------- */

/* What preemption and reclaim plans read besides the cluster's room (its
 * nchanges, nmeta, epoch) and the fair shares (tg_fairshare_gen), one
 * generation per kind of change, bumped by tg__gen_bump where the engine
 * hears of it: a memo of failed plans (pmemo.h) is exact while none moves. */
enum tg__gen {
    TG__GEN_GANGS,                      /* PodGroups, PriorityClasses, workloads, the kinds
                                           that form gangs, a gang's queue */
    TG__GEN_PLACED,                     /* bound pods seen, gone, forgotten; binds done */
    TG__GEN_PENDING,                    /* pending pods set or gone */
    TG__GEN_QUEUES,                     /* the Queue objects */
    TG__GEN_PDBS,
    TG__GEN_OBJECTS,                    /* Namespaces, PVs, PVCs, StorageClasses, claims */
    TG__GEN_POLICY,
    TG__GEN_N
};

struct tg_engine {
    struct tg_sched sched;              /* the model and the policy */
    struct tg_gangs gangs;
    struct tg_queue queue;
    struct tg_clock clock;
    struct tg_engine_stats stats;
    struct tg_grec **noms;              /* gangs holding a nomination */
    uint32_t nnoms, capnoms;
    const struct tg_pdb **pdbs;         /* the caller's objects */
    uint32_t npdbs, cappdbs;
    struct tg_hmap evicted_by;          /* victim gang key -> struct tg__evicted (no thrash) */
    struct tg_tenants tenants;          /* tenant queues (issue 19) */
    uint64_t gen[TG__GEN_N];            /* enum tg__gen */
    struct tg_pmemo pmemo;              /* failed plans (pmemo.h), owned */
    uint64_t memo_base;                 /* the model as this decision found it: its
                                           cluster's nchanges, or the base of the decision
                                           that left it so (engine.c memo_begin) */
    uint64_t memo_end;                  /* nchanges after the last decision that put the
                                           cluster back as it found it; UINT64_MAX none */
    uint8_t memo_live;                  /* in a decision whose plans may be memoed */
    /* The embedder's hooks: a gang record is about to be freed. */
    void (*gang_freed)(void *ud, struct tg_grec *g);
    void *ud;
};

static inline void tg__gen_bump(struct tg_engine *e, enum tg__gen k)
{
    e->gen[k]++;
}
/* The memo key of a plan for view (in engine.c: the generations now, the
 * blocks set for this try); reclaim: 1 with its dominant resource dom. */
void tg__pmemo_key(struct tg_engine *e, const struct tg_preempt_in *in, int reclaim, uint32_t dom,
                   struct tg_pmemo_key *k);

/* In place (the unit tests embed an engine): as tg_engine_new/_delete. */
int tg_engine_init(struct tg_engine *e, const struct tg_policy *p, const struct tg_clock *clock);
void tg_engine_free(struct tg_engine *e);

#endif
