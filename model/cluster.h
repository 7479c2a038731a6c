/* The cluster model: every node, what it can hold, what is placed on it, and
 * the topology tree over the nodes.
 *
 * A node slot exists for every node name seen, from a Node object or from a
 * pod bound to it, so pods and nodes can arrive in any order (the informer
 * does not order them). Usage counts every non-terminal bound pod, whoever
 * scheduled it, plus pods this scheduler has assumed. Allocatable and usage are
 * dense int64 matrices [slot * stride + resource id]; the stride grows (rarely)
 * when a new extended resource name appears. Single-threaded. */
#ifndef TG_MODEL_CLUSTER_H
#define TG_MODEL_CLUSTER_H

#include <stdint.h>

#include "model/objects.h"
#include "model/tree.h"
#include "util/hmap.h"

#define TG_NONE UINT32_MAX

struct tg_cluster;

struct tg_usage;

struct tg_node {
    struct tg_node_obj *obj;            /* NULL: no Node object (yet) */
    uint32_t name;                      /* interned */
    uint32_t npods;                     /* usage records counted on this node */
    struct tg_usage *pods;              /* every usage record on this node (hidden too) */
    void *inner;                        /* per-node state of the numa plugin, owned by it */
};

/* What one placed pod holds on a node; key is the pod's "ns/name". A record
 * is one of: seen bound (the informer or the snapshot says so), assumed
 * (placed by this scheduler, bind not yet seen) or nominated (a phantom that
 * holds room for a preemptor while its victims terminate). The pod's
 * identity fields are copied so that preemption can weigh victims without
 * the pod objects. */
enum tg_usage_kind { TG_USAGE_BOUND, TG_USAGE_ASSUMED, TG_USAGE_NOMINATED };

struct tg_usage {
    char *key;                          /* owned */
    struct tg_usage *nnext, *nprev;     /* this node's list (struct tg_node.pods) */
    uint32_t slot;
    uint32_t ns, group;                 /* interned; group 0: no pod group */
    uint32_t prio_class;                /* interned spec.priorityClassName, 0 none */
    uint32_t owner_kind, owner_name;    /* controller owner, 0 none */
    uint32_t gpos;                      /* position in its gang's member list (gang layer) */
    int32_t priority;                   /* spec.priority as decoded */
    int32_t grace_s;                    /* terminationGracePeriodSeconds */
    int64_t created_ms;
    int64_t start_ms;                   /* the pod's status.startTime, else when the engine
                                           first saw it bound (its clock); 0 not yet */
    uint8_t assumed;                    /* kind == TG_USAGE_ASSUMED (kept for readers) */
    uint8_t kind;                       /* enum tg_usage_kind */
    uint8_t hidden;                     /* not counted now: a what-if (tg_cluster_usage_hide) */
    uint8_t deleting;                   /* Terminating: still holds its node until gone */
    uint8_t has_priority;
    uint8_t inner;                      /* inner domain (NUMA/GPU) chosen by a plugin, 0xff none */
    uint8_t guaranteed;                 /* the pod's QoS is Guaranteed */
    uint8_t quiet;                      /* added while the cluster was quiet: hooks with
                                           skip_quiet hear neither of it nor of its removal */
    uint16_t excl_cpus;                 /* whole CPUs a static CPU manager pins */
    uint8_t nreq;
    uint16_t nlabels;
    struct tg_label *labels;            /* owned copy of the pod's labels */
    struct tg_podcons *cons;            /* owned copy of its inter-pod terms and host ports, or NULL */
    uint32_t sched;                     /* interned spec.schedulerName */
    uint32_t derived;                   /* the gang its owner forms (tg_pod.derived), 0 none */
    uint32_t queue;                     /* the queue the pod names (tg_pod.queue), 0 none */
    uint64_t rank;                      /* the pod's rank key (tg_pod.rank), 0 none: a placed
                                           member's sub-group under spec.subGroupSize */
    struct tg_rq req[];
};

/* Listeners of the model; every hook may be NULL. */
struct tg_cluster_hooks {
    /* A Node object was set (obj != NULL) or removed (obj == NULL) on slot. */
    void (*node_changed)(void *ud, struct tg_cluster *c, uint32_t slot);
    /* A record's requests start counting on its node (sign +1) or stop (-1):
     * added/removed, or hidden/shown by a what-if. Plugins keep per-node state. */
    void (*usage_changed)(void *ud, struct tg_cluster *c, struct tg_usage *u, int sign);
    /* A record was created, or is about to be freed (whatever its hidden state);
     * for layers that index records (gang membership). */
    void (*record_added)(void *ud, struct tg_cluster *c, struct tg_usage *u);
    void (*record_removed)(void *ud, struct tg_cluster *c, struct tg_usage *u);
    /* A live record's labels or inter-pod terms are about to change (done 0)
     * or have changed (done 1): its pod was updated in place. */
    void (*record_changing)(void *ud, struct tg_cluster *c, struct tg_usage *u, int done);
    void *ud;
    /* 1: not told of the records added while the cluster is quiet (a what-if's
     * dry run, tg_cluster_quiet), nor of their removal: for listeners whose
     * state the dry run would change and put back as it was. Plugins that read
     * records while counting must hear of them (0). */
    uint8_t skip_quiet;
};

#define TG_CLUSTER_MAX_HOOKS 4
#define TG_CLUSTER_CLOG 1024

struct tg_cluster {
    struct tg_node *nodes;
    uint32_t nslots, cap;
    uint32_t nready;                    /* slots with a Node object */
    struct tg_imap by_name;             /* interned name -> slot */
    int64_t *alloc, *used;              /* [slot * stride + res] */
    uint32_t stride;
    struct tg_hmap usage;               /* pod key -> struct tg_usage * */
    struct tg_tree tree;
    struct tg_cluster_hooks hooks[TG_CLUSTER_MAX_HOOKS];
    uint32_t nhooks;
    uint8_t quiet;                      /* records added now are quiet (tg_cluster_quiet) */
    uint64_t generation;                /* bumped by every change that frees room */
    /* Changes to a slot's room or Node (a record counted or not, hidden or
     * shown; a Node set or removed), numbered 1, 2, ...: nchanges is the
     * last one's, changed_at[slot] the slot's last one's, clog[k % TG_CLUSTER_CLOG]
     * the slot of change k (tg_cluster_changed). epoch: bumped when the
     * tree is rebuilt (domain ids renumbered). */
    uint64_t nchanges, epoch;
    /* Records changed in place without a change to their room: kind
     * (assumed -> bound) or metadata (labels, owner, start) made anew. With
     * nchanges and epoch, equal numbers mean an unchanged model. */
    uint64_t nmeta;
    uint64_t *changed_at;
    uint32_t clog[TG_CLUSTER_CLOG];
    /* State of the plugin layer over the whole cluster (plugins/registry.c),
     * freed by ext_free first thing in tg_cluster_free. */
    void *ext;
    void (*ext_free)(struct tg_cluster *c);
};

/* levels/nlevels: node label key ids, outermost first (see config/policy.h).
 * Returns 0 or TG_ENOMEM. Free with tg_cluster_free. */
int tg_cluster_init(struct tg_cluster *c, const uint32_t *level_labels, uint32_t nlevels);
void tg_cluster_free(struct tg_cluster *c);
/* Rebuilds the tree for new levels (a policy reload). */
int tg_cluster_set_levels(struct tg_cluster *c, const uint32_t *level_labels, uint32_t nlevels);

/* Adds a listener (copied). Returns 0, or TG_ENOMEM when all are taken. */
int tg_cluster_listen(struct tg_cluster *c, const struct tg_cluster_hooks *h);

/* Slot of a node name, creating an empty one when create != 0; TG_NONE if
 * absent (or out of memory). */
uint32_t tg_cluster_slot(struct tg_cluster *c, uint32_t name, int create);
/* Takes ownership of obj (also on failure) and sets it on its slot: labels,
 * taints, allocatable; moves the node in the tree when its labels changed. */
int tg_cluster_node_set(struct tg_cluster *c, struct tg_node_obj *obj);
/* Drops the Node object; usage of pods still bound there is kept. */
void tg_cluster_node_remove(struct tg_cluster *c, uint32_t name);

/* Accounts a pod: a bound non-terminal pod holds its requests on its node; an
 * unbound or terminal pod holds nothing (its record, if any, is removed).
 * Idempotent: a second call with the same pod replaces the first record. */
int tg_cluster_pod_update(struct tg_cluster *c, const struct tg_pod *p);
/* A pod deleted: its record, if any, is removed. */
void tg_cluster_pod_delete(struct tg_cluster *c, const char *key);
/* Places a pod by decision of this scheduler (assumed until seen bound). A
 * record already seen bound stays bound. */
int tg_cluster_assume(struct tg_cluster *c, const struct tg_pod *p, uint32_t slot);
/* Quiet (on 1) until called with 0: the records added meanwhile are not
 * told to hooks that set skip_quiet, nor is their removal. For a dry run
 * that removes every record it adds before the cluster is loud again (a
 * what-if, scheduler/place.c), so those listeners never see them. */
void tg_cluster_quiet(struct tg_cluster *c, int on);
/* Holds room on slot for a pending preemptor while its victims terminate: a
 * record of kind TG_USAGE_NOMINATED (never over a bound or assumed one). It
 * stays until deleted (tg_cluster_pod_delete) or replaced by a bind. */
int tg_cluster_nominate(struct tg_cluster *c, const struct tg_pod *p, uint32_t slot);
struct tg_usage *tg_cluster_usage(const struct tg_cluster *c, const char *key);
/* What-if: stops (hide != 0) or resumes counting a record's requests on its
 * node, without forgetting it. Idempotent. The generation is not bumped: a
 * what-if must be undone before anything else reads the model. */
void tg_cluster_usage_hide(struct tg_cluster *c, struct tg_usage *u, int hide);
/* Moves a hidden record to another node slot, for a layer that swaps
 * members of one shape between the nodes it chose (scheduler/rank.h: hide
 * them all, move, show them all, so that no node is ever over-committed).
 * Returns 0, or TG_EINVAL when u is not hidden or slot is not a slot. */
int tg_cluster_usage_move(struct tg_cluster *c, struct tg_usage *u, uint32_t slot);

/* The slots changed after change number since (c->nchanges when the caller
 * last looked), each once, into out (room for c->nslots); returns how
 * many. Cost: the changes since, or the slots when more than
 * TG_CLUSTER_CLOG changes happened since. */
uint32_t tg_cluster_changed(const struct tg_cluster *c, uint64_t since, uint32_t *out);

static inline int64_t tg_alloc(const struct tg_cluster *c, uint32_t slot, uint32_t res)
{
    return res < c->stride ? c->alloc[(uint64_t)slot * c->stride + res] : 0;
}
static inline int64_t tg_used(const struct tg_cluster *c, uint32_t slot, uint32_t res)
{
    return res < c->stride ? c->used[(uint64_t)slot * c->stride + res] : 0;
}

#endif
