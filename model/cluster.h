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

struct tg_node {
    struct tg_node_obj *obj;            /* NULL: no Node object (yet) */
    uint32_t name;                      /* interned */
    uint32_t npods;                     /* usage records on this node */
    void *inner;                        /* per-node state of the numa plugin, owned by it */
};

/* What one placed pod holds on a node; key is the pod's "ns/name". */
struct tg_usage {
    char *key;                          /* owned */
    uint32_t slot;
    uint8_t assumed;                    /* placed by us, not yet seen bound */
    uint8_t inner;                      /* inner domain (NUMA/GPU) chosen by a plugin, 0xff none */
    uint8_t nreq;
    struct tg_rq req[];
};

struct tg_cluster_hooks {
    /* A Node object was set (obj != NULL) or removed (obj == NULL) on slot. */
    void (*node_changed)(void *ud, struct tg_cluster *c, uint32_t slot);
    /* A usage record was added (sign +1) or is about to be removed (-1). */
    void (*usage_changed)(void *ud, struct tg_cluster *c, struct tg_usage *u, int sign);
    void *ud;
};

struct tg_cluster {
    struct tg_node *nodes;
    uint32_t nslots, cap;
    uint32_t nready;                    /* slots with a Node object */
    struct tg_imap by_name;             /* interned name -> slot */
    int64_t *alloc, *used;              /* [slot * stride + res] */
    uint32_t stride;
    struct tg_hmap usage;               /* pod key -> struct tg_usage * */
    struct tg_tree tree;
    struct tg_cluster_hooks hooks;
    uint64_t generation;                /* bumped by every change that frees room */
};

/* levels/nlevels: node label key ids, outermost first (see config/policy.h).
 * Returns 0 or TG_ENOMEM. Free with tg_cluster_free. */
int tg_cluster_init(struct tg_cluster *c, const uint32_t *level_labels, uint32_t nlevels);
void tg_cluster_free(struct tg_cluster *c);
/* Rebuilds the tree for new levels (a policy reload). */
int tg_cluster_set_levels(struct tg_cluster *c, const uint32_t *level_labels, uint32_t nlevels);

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
/* Places a pod by decision of this scheduler (assumed until seen bound). */
int tg_cluster_assume(struct tg_cluster *c, const struct tg_pod *p, uint32_t slot);
struct tg_usage *tg_cluster_usage(const struct tg_cluster *c, const char *key);

static inline int64_t tg_alloc(const struct tg_cluster *c, uint32_t slot, uint32_t res)
{
    return res < c->stride ? c->alloc[(uint64_t)slot * c->stride + res] : 0;
}
static inline int64_t tg_used(const struct tg_cluster *c, uint32_t slot, uint32_t res)
{
    return res < c->stride ? c->used[(uint64_t)slot * c->stride + res] : 0;
}

#endif
