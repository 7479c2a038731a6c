/* The plugin interface: prefilter, filter, count, score, domain constraints,
 * and the hooks that keep a plugin's per-node state in step with the cluster
 * model.
 *
 * Plugins are registered in one static table (plugins/registry.c), built in,
 * no dlopen. For each distinct pod shape in a gang the cycle runs every
 * plugin's prefilter once (state for the shape, or "nothing to check": the
 * plugin is then left out for that shape), then asks the others' filter (may
 * this shape go on this node at all?) and count (how many pods of the shape
 * fit now?), keeps the smallest count, and places the gang with the topology
 * placement over those counts (scheduler/place.c). Constraints between pods
 * also give placement their limits per topology domain (struct tg_dcons).
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
    X(RESERVED,      "reserved for %s")          /* arg: interned gang key */          \
    X(POD_AFFINITY,  "pod affinity: no %s")      /* arg: "ml/app=db pod in its zone" */ \
    X(POD_ANTI,      "pod anti-affinity with %s") /* arg: "ml/x on kubernetes.io/hostname" */ \
    X(POD_ANTI_OF,   "pod anti-affinity of %s")  /* a placed pod's term, same arg */      \
    X(NO_LABEL,      "no %s label")              /* arg: label key id */                \
    X(SPREAD,        "topology spread %s")       /* arg: "maxSkew 1 on zone" */          \
    X(HOST_PORT,     "host port %s in use")      /* arg: "TCP/8080" */                   \
    X(VOLUME,        "volume node affinity of %s") /* arg: "PV pv-1 (PVC ml/data)" */     \
    X(CLAIM,         "outside the allocation of ResourceClaim %s") /* arg: "ml/gpu" */   \
    X(WAIT,          "%s")                       /* arg: an interned sentence */     \
    X(LEVEL_LABEL,   "lacking label %s")         /* arg: a required level's label key id */

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

/* Per-shape state of the plugins that keep one (set by their prefilter). */
enum { TG_PS_INTERPOD, TG_PS_SPREAD, TG_PS_PORTS, TG_PS_VOLUMES, TG_PS_DRA, TG_PS__COUNT };

/* A distinct pod shape within a gang: requests + selectors + tolerations +
 * inter-pod terms (+ the labels those terms can see). */
struct tg_shape {
    const struct tg_pod *pod;           /* representative member */
    uint32_t npods;                     /* members of this shape still to place */
    uint32_t *count;                    /* per slot: pods of this shape that fit (cycle scratch) */
    void *state[TG_PS__COUNT];          /* plugin state for this cycle, NULL until prefilter */
    uint8_t soft;                       /* a prefilter found preferences (preferred terms) */
};

struct tg_objstore;
struct tg_arena;

/* What a plugin hook sees. */
struct tg_cycle_ctx {
    struct tg_cluster *cluster;
    const struct tg_policy *policy;
    const struct tg_objstore *store;       /* Namespaces, volumes, claims; NULL: none */
    struct tg_arena *arena;             /* lives as long as the shapes (prefilter state) */
    struct tg_shape *const *gang;       /* every shape of the gang being placed */
    uint32_t ngang;
    /* 0: counting (a count leaves out rising domain constraints, see
     * tg_dcons: caps that a placement elsewhere can raise would only
     * understate what a domain can take); 1: a last look before a pod is
     * placed on the node, every constraint applied. */
    uint8_t exact;
};

/* A limit a shape's own constraints put on a topology domain (the nodes
 * sharing one value of a node label): inter-pod affinity, anti-affinity,
 * and topology spread. It depends on pods placed elsewhere, so a per-node
 * count alone cannot express it: placement asks cap() for a domain as it
 * places members, and recounts every node when *gen changes (a rising
 * constraint is not in the counts: it is applied by cap() on topology
 * levels, and by an exact look at a node otherwise). */
struct tg_dcons {
    uint32_t key;                       /* node label naming the domains */
    uint8_t rising;                     /* caps may rise as pods land in other domains */
    uint8_t limits;                     /* the shape's own pods count against it (a reason
                                           when a gang fails: a domain takes only so many) */
    uint8_t after;                      /* pods of other shapes of the gang may satisfy it:
                                           place this shape after them */
    uint8_t reason;                     /* the verdict where the cap is 0 */
    uint32_t arg;
    const uint64_t *gen;                /* changes when caps changed outside the domain a pod went to */
    /* Pods of the shape the domain of label value val (TG_STR_NONE: the
     * nodes lacking the label) may take one after another now;
     * UINT32_MAX: no limit. */
    uint32_t (*cap)(const struct tg_dcons *dc, uint32_t val);
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
    /* Once per shape before filter/count (kube-scheduler's PreFilter); may
     * keep state in s->state[] (cx->arena). Sets st->code: TG_SKIP (nothing
     * to check for this shape: filter, count and score are not called),
     * TG_SUCCESS, or TG_UNSCHEDULABLE / TG_UNRESOLVABLE when no node can
     * take the shape now (st says why). Returns 0 or TG_ENOMEM. */
    int (*prefilter)(const struct tg_cycle_ctx *cx, struct tg_shape *s, struct tg_status *st);
    /* The shape's domain constraints (valid until release); returns how many. */
    uint32_t (*dcons)(const struct tg_cycle_ctx *cx, const struct tg_shape *s,
                      const struct tg_dcons *const **out);
    /* The shape is done with: drop what prefilter registered. */
    void (*release)(const struct tg_cycle_ctx *cx, struct tg_shape *s);
    uint8_t prefers;                    /* score says what the pod itself prefers */
};

/* The built-in plugins, in the order they run, NULL-terminated. */
extern const struct tg_plugin *const tg_plugins[];

/* Formats a status reason for people ("tainted maintenance"). */
const char *tg_reason_text(uint8_t reason, uint32_t arg, char *buf, unsigned n);
const char *tg_reason_name(uint8_t reason);

/* Adds the cluster listener that fans out to every plugin's
 * node_changed/usage_changed, and the index of placed pods by label the
 * inter-pod plugins share (freed with the cluster). Returns 0 or TG_ENOMEM. */
int tg_plugins_attach(struct tg_cluster *c);

/* The label keys whose values can make the plugins treat two pods of equal
 * spec differently: those named by the selectors of placed pods'
 * anti-affinity and of these pods' own inter-pod terms and spread
 * constraints. Writes up to cap into out; returns how many there are. */
uint32_t tg_plugins_label_keys(struct tg_cluster *c, struct tg_pod *const *pods, uint32_t n,
                               uint32_t *out, uint32_t cap);

#endif
