/* The plugin interface: filter, count, score, and the hooks that keep a
 * plugin's per-node state in step with the cluster model.
 *
 * Plugins are registered in one static table (plugins/registry.c), built in,
 * no dlopen. For each distinct pod shape in a gang the cycle asks every
 * plugin's filter (may this shape go on this node at all?) and count (how many
 * pods of the shape fit now?), keeps the smallest count, and places the gang
 * with the topology placement over those counts (plugins/topology.c).
 *
 * A verdict is not an error: struct tg_status separates "does not fit, a
 * change could help" (UNSCHEDULABLE) from "never fits" (UNRESOLVABLE). To keep
 * a 10,000-node pass cheap, a rejection is a reason code plus one interned or
 * numeric argument; the cycle aggregates them per (reason, arg) and formats
 * the text once ("3 nodes tainted maintenance"). */
#ifndef TG_PLUGINS_PLUGIN_H
#define TG_PLUGINS_PLUGIN_H

#include <stdint.h>

#include "model/cluster.h"

struct tg_policy;

enum tg_code { TG_SUCCESS, TG_UNSCHEDULABLE, TG_UNRESOLVABLE, TG_SKIP, TG_ERROR };

#define TG_REASON_MAP(X)                                                        \
    X(NONE,          "")                                                        \
    X(NO_NODE,       "no Node object")                                          \
    X(NOT_READY,     "not Ready")                                               \
    X(CORDONED,      "cordoned (spec.unschedulable)")                           \
    X(TAINT,         "tainted %s")               /* arg: taint key id */        \
    X(SELECTOR,      "nodeSelector %s mismatch") /* arg: label key id */        \
    X(AFFINITY,      "required node affinity mismatch")                         \
    X(INSUFFICIENT,  "insufficient %s")          /* arg: resource id */        \
    X(TOO_MANY_PODS, "too many pods")                                           \
    X(NUMA,          "no single NUMA/NVLink domain holds %s") /* arg: res id */ \
    X(NUMA_KUBELET,  "can pin at most %s on one NUMA node (kubelet)") /* tg_numa_kubelet_arg */ \
    X(BAD_TOPOLOGY,  "unreadable topology annotation")                          \
    X(NOT_IN_TREE,   "outside the topology")                                    \
    X(RESERVED,      "reserved for %s")          /* arg: interned gang key */

enum tg_reason {
#define TG__REASON_ENUM(name, text) TG_R_##name,
    TG_REASON_MAP(TG__REASON_ENUM)
#undef TG__REASON_ENUM
    TG_R__COUNT
};

struct tg_status {
    uint8_t code;                       /* enum tg_code */
    uint8_t reason;                     /* enum tg_reason */
    uint32_t arg;                       /* interned string or resource id */
};

/* A distinct pod shape within a gang: requests + selectors + tolerations. */
struct tg_shape {
    const struct tg_pod *pod;           /* representative member */
    uint32_t npods;                     /* members of this shape still to place */
    uint32_t *count;                    /* per slot: pods of this shape that fit (cycle scratch) */
};

/* What a plugin hook sees. */
struct tg_cycle_ctx {
    struct tg_cluster *cluster;
    const struct tg_policy *policy;
};

struct tg_plugin {
    const char *name;
    /* 1 when the shape may go on the slot, else 0 with st filled. */
    int (*filter)(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                  struct tg_status *st);
    /* Pods of the shape that fit on the slot now (UINT32_MAX: this plugin sets
     * no limit); 0 fills st. */
    uint32_t (*count)(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                      struct tg_status *st);
    /* Preference 0..100 among nodes that fit (higher is better). */
    int (*score)(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot);
    /* Keep per-node state (struct tg_node.inner) in step; see tg_cluster_hooks. */
    void (*node_changed)(struct tg_cluster *c, uint32_t slot);
    void (*usage_changed)(struct tg_cluster *c, struct tg_usage *u, int sign);
};

/* The built-in plugins, in the order they run, NULL-terminated. */
extern const struct tg_plugin *const tg_plugins[];

/* Formats a status reason for people ("tainted maintenance"). */
const char *tg_reason_text(uint8_t reason, uint32_t arg, char *buf, unsigned n);
const char *tg_reason_name(uint8_t reason);

/* Adds the cluster listener that fans out to every plugin's
 * node_changed/usage_changed. Returns 0 or TG_ENOMEM. */
int tg_plugins_attach(struct tg_cluster *c);

#endif
