/* Compact, decoded Kubernetes objects: Node, Pod, PodGroup, and what
 * placement reads besides (Namespace, PV, PVC, StorageClass, ResourceClaim).
 *
 * One decoder serves the daemon (JSON from the API server) and `simulate`
 * (YAML turned into the same cJSON tree by util/yamljson.c): the object is
 * decoded straight from the cJSON tree into these structs, and the tree is
 * then freed by the caller. Strings that repeat across objects (label keys and
 * values, namespaces, node names, taint keys) are interned ids (util/intern.h).
 *
 * Bad input never crashes a decoder: an error names the object and the field
 * through struct tg_diag and the decoder returns TG_EPARSE (the object is
 * skipped); a warning (an unknown toleration operator, say) keeps the object. */
#ifndef TG_MODEL_OBJECTS_H
#define TG_MODEL_OBJECTS_H

#include <stdint.h>

#include "model/resources.h"

struct cJSON;

/* ---- diagnostics ------------------------------------------------------- */

/* Receives one message per problem. `at` is the cJSON node at fault (or the
 * object), so a YAML reader can add file:line. `what` is "Pod ml/worker-0",
 * `field` a JSON path such as "spec.containers[1].resources.requests.cpu". */
struct tg_diag {
    void (*report)(void *ud, int is_error, const struct cJSON *at, const char *what,
                   const char *field, const char *msg);
    void *ud;
    int nerrors, nwarnings;
};

/* Reports through d (NULL allowed: counts only into nothing). */
void tg_diag_error(struct tg_diag *d, const struct cJSON *at, const char *what,
                   const char *field, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void tg_diag_warn(struct tg_diag *d, const struct cJSON *at, const char *what,
                  const char *field, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- shared pieces ----------------------------------------------------- */

struct tg_label {
    uint32_t key, val;                  /* interned */
};

enum tg_effect { TG_EFFECT_ANY, TG_EFFECT_NOSCHEDULE, TG_EFFECT_PREFER_NOSCHEDULE,
                 TG_EFFECT_NOEXECUTE };

struct tg_taint {
    uint32_t key, val;
    uint8_t effect;                     /* enum tg_effect, never ANY */
};

enum tg_tol_op { TG_TOL_EQUAL, TG_TOL_EXISTS };

struct tg_toleration {
    uint32_t key, val;                  /* key 0 with EXISTS: tolerates every taint */
    uint8_t op;                         /* enum tg_tol_op */
    uint8_t effect;                     /* TG_EFFECT_ANY matches every effect */
};

enum tg_sel_op { TG_SEL_IN, TG_SEL_NOTIN, TG_SEL_EXISTS, TG_SEL_DOESNOTEXIST,
                 TG_SEL_GT, TG_SEL_LT };

/* One node selector requirement: key op values. For Gt/Lt, num holds the
 * integer operand. For matchFields the key is "metadata.name". */
struct tg_selreq {
    uint32_t key;
    uint8_t op;
    uint8_t is_field;                   /* matchFields instead of matchExpressions */
    uint16_t nvals;
    uint32_t *vals;                     /* interned, owned by the pod spec */
    int64_t num;
};

/* A nodeSelectorTerm: requirements ANDed. Terms are ORed. */
struct tg_selterm {
    uint16_t nreq;
    struct tg_selreq *reqs;
};

/* ---- label selectors ------------------------------------------------------ */

/* A metav1.LabelSelector: matchLabels (as In with one value) and
 * matchExpressions (In, NotIn, Exists, DoesNotExist), ANDed. An empty
 * selector matches everything. */
struct tg_labelsel {
    uint16_t nreq;
    struct tg_selreq *reqs;             /* owned, vals owned */
};

int tg_labelsel_match(const struct tg_labelsel *s, const struct tg_label *labels, uint32_t n);
void tg_labelsel_free(struct tg_labelsel *s);

/* ---- inter-pod constraints ------------------------------------------------ */

/* A podAffinityTerm: the pods matching sel in the namespaces named (nss, or
 * those nssel matches; neither: the pod's own), counted per domain of the
 * node label `key`. matchLabelKeys and mismatchLabelKeys are merged into
 * sel when decoded (key In / NotIn the pod's own value), as the API server
 * does. */
struct tg_podterm {
    struct tg_labelsel sel;             /* labelSelector */
    struct tg_labelsel nssel;           /* namespaceSelector */
    uint32_t *nss;                      /* namespaces, interned, owned */
    uint32_t key;                       /* topologyKey, interned */
    int32_t weight;                     /* preferred: 1..100; required: 0 */
    uint16_t nns;
    uint8_t has_sel;                    /* no labelSelector: the term matches no pod */
    uint8_t has_nssel;                  /* namespaceSelector given ({}: every namespace) */
};

enum tg_proto { TG_PROTO_TCP, TG_PROTO_UDP, TG_PROTO_SCTP };

/* A port a pod holds on its node: hostPort, or a hostNetwork pod's
 * containerPort. Two pods conflict on the same port and protocol when their
 * addresses are equal or either is every address (0). */
struct tg_hostport {
    uint32_t ip;                        /* interned hostIP; 0: every address */
    uint16_t port;
    uint8_t proto;                      /* enum tg_proto */
};

/* What a pod asks of the pods around it: inter-pod affinity and
 * anti-affinity (required and preferred) and host ports. Decoded with or
 * without TG_DECODE_SPEC, because a bound pod's anti-affinity and ports keep
 * later pods away; copied into the pod's usage record. NULL when the pod has
 * none of them. */
struct tg_podcons {
    uint16_t naff, nanti, npaff, npanti, nports;
    struct tg_podterm *aff, *anti;      /* requiredDuringScheduling... */
    struct tg_podterm *paff, *panti;    /* preferredDuringScheduling... (weight set) */
    struct tg_hostport *ports;          /* sorted */
};

/* A deep copy; NULL when out of memory. */
struct tg_podcons *tg_podcons_clone(const struct tg_podcons *c);
void tg_podcons_free(struct tg_podcons **c);
int tg_podcons_equal(const struct tg_podcons *a, const struct tg_podcons *b);
/* Hash and equality of one term; ns is the namespace its defaults refer to. */
uint64_t tg_podterm_hash(const struct tg_podterm *t, uint32_t ns);
int tg_podterm_equal(const struct tg_podterm *a, const struct tg_podterm *b);
int tg_podterm_copy(struct tg_podterm *dst, const struct tg_podterm *src);
void tg_podterm_free(struct tg_podterm *t);

/* A topologySpreadConstraint; matchLabelKeys merged into sel when decoded. */
struct tg_spread {
    struct tg_labelsel sel;
    uint32_t key;                       /* topologyKey */
    int32_t max_skew;                   /* >= 1 */
    int32_t min_domains;                /* >= 1 (DoNotSchedule only) */
    uint8_t has_sel;                    /* no labelSelector: counts no pod */
    uint8_t hard;                       /* whenUnsatisfiable: DoNotSchedule */
    uint8_t affinity_ignore;            /* nodeAffinityPolicy: Ignore (default Honor) */
    uint8_t taints_honor;               /* nodeTaintsPolicy: Honor (default Ignore) */
};

/* spec.resourceClaims[i]: the ResourceClaim it names, directly or through
 * the pod's status.resourceClaimStatuses for a template. */
struct tg_claimref {
    uint32_t name;                      /* the pod's name for the claim */
    uint32_t claim;                     /* ResourceClaim name; 0: not created yet */
    uint32_t tmpl;                      /* resourceClaimTemplateName, 0 none */
};

struct tg_objstore;
struct tg_ganghints;

/* ---- Pod ---------------------------------------------------------------- */

enum tg_phase { TG_PHASE_PENDING, TG_PHASE_RUNNING, TG_PHASE_SUCCEEDED, TG_PHASE_FAILED,
                TG_PHASE_UNKNOWN };

/* What placement needs of a pending pod beyond its requests. Pods with the
 * same spec content hash to the same shape (see tg_podspec_hash). */
struct tg_podspec {
    uint16_t nselector;                 /* spec.nodeSelector */
    uint16_t ntol;
    uint16_t nterms;                    /* required node affinity terms */
    uint16_t nspread, npvcs, nclaims;
    struct tg_label *selector;
    struct tg_toleration *tols;
    struct tg_selterm *terms;
    struct tg_spread *spread;           /* topologySpreadConstraints */
    uint32_t *pvcs;                     /* PersistentVolumeClaim names, interned (an
                                           ephemeral volume's is <pod>-<volume>) */
    struct tg_claimref *claims;         /* spec.resourceClaims */
    /* Where this pod's PVCs, PVs, StorageClasses, ResourceClaims and
     * Namespaces are looked up when a loader holds them (simulate sets it);
     * NULL: the scheduler's own store. Not part of the shape. */
    const struct tg_objstore *store;
};

struct tg_pod {
    char *key;                          /* "namespace/name", owned */
    char *uid;                          /* owned, may be "" */
    uint32_t ns;                        /* interned namespace */
    uint32_t name_off;                  /* name = key + name_off */
    uint32_t node;                      /* interned spec.nodeName, 0 = unbound */
    uint32_t sched;                     /* interned spec.schedulerName */
    uint32_t group;                     /* interned pod-group label value, 0 = none */
    uint32_t queue;                     /* the queue it names (model/queues.h), pinned, 0 none */
    uint32_t prio_class;                /* interned spec.priorityClassName, 0 = none */
    int32_t priority;                   /* spec.priority (0 when unset) */
    uint8_t has_priority;
    uint8_t phase;                      /* enum tg_phase */
    uint8_t deleting;                   /* metadata.deletionTimestamp set */
    uint8_t started;                    /* it ran: status.startTime set (a kubelet took it),
                                           or phase Running/Succeeded/Failed */
    uint8_t nreq;
    uint8_t preempt_never;              /* spec.preemptionPolicy: Never */
    uint8_t has_grace;                  /* spec.terminationGracePeriodSeconds given */
    uint16_t nlabels;
    int32_t grace_s;                    /* spec.terminationGracePeriodSeconds (default 30) */
    uint8_t guaranteed;                 /* QoS Guaranteed (model/qos.h) */
    uint16_t excl_cpus;                 /* whole CPUs a static CPU manager pins (model/qos.h) */
    uint32_t owner_kind, owner_name;    /* interned kind and name of the controller owner
                                           reference (controller: true), 0 = none */
    int64_t created_ms;                 /* creationTimestamp, ms since epoch; 0 unknown */
    int64_t start_ms;                   /* status.startTime (a kubelet started it), ms since
                                           epoch; 0 unset */
    char *rv;                           /* metadata.resourceVersion, owned, may be NULL */
    struct tg_rq *req;                  /* effective requests, sorted, owned */
    struct tg_label *labels;            /* metadata.labels, sorted by key id, owned; keys
                                           and values hold counted interner references
                                           (tg_labels_unref); the uid-valued controller
                                           labels are dropped */
    struct tg_podspec *spec;            /* NULL unless decoded with TG_DECODE_SPEC */
    struct tg_podcons *cons;            /* inter-pod terms and host ports, NULL: none */
    /* Gang definitions beyond the pod-group label (model/workload.h). */
    uint8_t group_api;                  /* enum tg_pg_api that named group (0: a label) */
    uint32_t derived;                   /* interned "Kind/name[/group]": the gang its
                                           controller owner forms, 0 none */
    struct tg_ganghints *hints;         /* owned; NULL: no gang annotation */
    uint64_t rank;                      /* 1 + its rank order key (tg_pod_rank_decode), 0 none */
    /* Requests of resource names no Node had registered when the pod was
     * decoded: they stay out of the registry (a tenant's made-up names cannot
     * fill it) and p->req holds TG_RES_UNOFFERED instead, which no node has,
     * until tg_pod_resolve finds a Node that offers them. */
    struct tg_unoffered *unoffered;     /* owned, nunoffered of them */
    uint8_t nunoffered;
};

struct tg_unoffered {
    char *name;                         /* owned */
    int64_t val;                        /* whole units */
};

static inline const char *tg_pod_name(const struct tg_pod *p) { return p->key + p->name_off; }
/* Terminal pods hold no resources. */
static inline int tg_pod_terminal(const struct tg_pod *p)
{
    return p->phase == TG_PHASE_SUCCEEDED || p->phase == TG_PHASE_FAILED;
}

enum {
    TG_DECODE_SPEC = 1 << 0,            /* keep selector, tolerations, affinity */
};

/* Decodes a Pod object. Effective requests follow kube-scheduler: the sum of
 * containers' requests (limits stand in where requests are absent), the max
 * with each init container (sidecar init containers, restartPolicy Always, add
 * to the sum), plus spec.overhead. On success *out is a new pod the caller
 * frees with tg_pod_free. Errors: TG_EPARSE (reported through d), TG_ENOMEM. */
int tg_pod_decode(const struct cJSON *obj, unsigned flags, struct tg_diag *d, struct tg_pod **out);
void tg_pod_free(struct tg_pod **p);
/* The parts of a Pod that tg_pod_decode (and all it calls) never reads, as
 * util/jsonlean.h paths (NULL-terminated): a reader may leave them out of
 * the tree it hands over (the informer's Pod watches do), the pod decoded
 * the same. Whoever makes the decoder read one takes it off the list
 * (tests/unit/test_jsonlean.c decodes real pods with and without them). */
extern const char *const tg_pod_unread[];
/* Every field of p as text, one "field=value" per line, interned ids as
 * their strings: two pods decode the same when their dumps are equal
 * (tests comparing decoding paths). The caller frees the result; NULL when
 * out of memory. */
char *tg_pod_dump(const struct tg_pod *p);
/* Moves the requests of p->unoffered whose names a Node has since registered
 * into p->req (TG_RES_UNOFFERED stays while any is left). Returns 1 when
 * p->req changed, 0 when not, TG_ENOMEM (p unchanged). Whoever hands pods to
 * the model calls it when the registry has grown since the pod was decoded
 * (tg_res_count()): the daemon's handlers, simulate's loader. */
int tg_pod_resolve(struct tg_pod *p);
/* 64-bit hash of requests + spec: equal pods have equal hashes. */
uint64_t tg_pod_shape_hash(const struct tg_pod *p);
/* 1 when requests and spec are equal (hash collisions are checked with this). */
int tg_pod_same_shape(const struct tg_pod *a, const struct tg_pod *b);

/* ---- Node --------------------------------------------------------------- */

struct tg_node_obj {
    uint32_t name;                      /* interned */
    uint16_t nlabels, ntaints;
    uint8_t unschedulable;
    uint8_t ready;                      /* Ready condition True */
    uint8_t nalloc;
    struct tg_label *labels;            /* sorted by key id, owned */
    struct tg_taint *taints;            /* owned */
    struct tg_rq *alloc;                /* status.allocatable (or capacity), sorted, owned */
    char *topology;                     /* annotation topogang.io/topology, owned, or NULL */
    char *rv;                           /* resourceVersion, owned, or NULL */
};

/* Decodes a Node. A node with no Ready condition at all is treated as Ready
 * (objects written by hand for `simulate`); Ready=False/Unknown is not ready. */
int tg_node_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_node_obj **out);
void tg_node_free(struct tg_node_obj **n);
/* A deep copy (the informer's store keeps its own); NULL when out of memory. */
struct tg_node_obj *tg_node_clone(const struct tg_node_obj *n);
/* Value id of a label key on a node (labels sorted by key), or TG_STR_NONE. */
uint32_t tg_labels_get(const struct tg_label *l, uint32_t n, uint32_t key);
/* 1 when pods a and b have the same value (or none) at each of the n label
 * keys: with tg_pod_same_shape, what makes two pods one set to placement. */
int tg_pod_labels_same(const struct tg_pod *a, const struct tg_pod *b, const uint32_t *keys,
                       uint32_t n);
/* A pod's labels hold counted references to their interned keys and values
 * (util/intern.h: they churn): a copy kept past the pod retains them, and
 * gives them back when freed. */
void tg_labels_retain(const struct tg_label *l, uint32_t n);
void tg_labels_unref(const struct tg_label *l, uint32_t n);

/* ---- PodGroup ----------------------------------------------------------- */

enum tg_strategy { TG_STRATEGY_DEFAULT, TG_STRATEGY_PACK, TG_STRATEGY_SPREAD };

/* A sub-group of a gang (issue 20): its members are the gang's pods whose
 * label topogang.io/sub-group names it (spec.subGroups), or a run of
 * spec.subGroupSize consecutive ranks (named "<rank / size>"); each is placed
 * inside one domain of its level, inside the gang's domain. */
struct tg_subgroup {
    uint32_t name;                      /* interned */
    int32_t min_member;                 /* >= 1 */
    uint32_t required, preferred;       /* interned level names, 0 = none */
    uint32_t policy;                    /* a Volcano PodGroup's: its spec.subGroupPolicy entry */
    uint32_t outer;                     /* a KAI PodGroup's: 1 + the index in pg->outer of its
                                           parent with a topologyConstraint, 0 none */
};

#define TG_MAX_SUBGROUPS 4096           /* spec.subGroups entries accepted */

/* One entry of a Volcano PodGroup's spec.subGroupPolicy (model/workload.h):
 * the members its labelSelector matches (the first entry that matches a pod
 * takes it) form one sub-group per distinct tuple of values of its
 * matchLabelKeys (a member lacking one of them, or with one empty, is in
 * none of this entry's), each of subGroupSize members, named
 * "<name>-<value>[-<value>...]" ("<name>" without keys), at its
 * networkTopology (resolved against the policy's levels as the gang's is). */
struct tg_sgpolicy {
    uint32_t name;                      /* interned spec.subGroupPolicy[i].name ("<i>" none) */
    int32_t size;                       /* subGroupSize, >= 1 (default 1) */
    struct tg_labelsel sel;             /* labelSelector; empty: every member */
    uint32_t *keys;                     /* matchLabelKeys, interned, owned */
    uint16_t nkeys;
    uint8_t tier_hard;                  /* networkTopology.mode hard */
    int16_t tier;                       /* highestTierAllowed, -1 none */
    uint32_t tier_name;                 /* highestTierName (level or node label key), 0 none */
    int32_t min_subs;                   /* minSubGroups, -1 absent: the gang is ready with this
                                           many of the entry's sub-groups whole (subgroup.h) */
};

#define TG_MAX_SGPOLICIES 64            /* spec.subGroupPolicy entries accepted */
#define TG_MAX_SGKEYS 16                /* matchLabelKeys per entry */

struct tg_podgroup {
    char *key;                          /* "namespace/name", owned */
    uint32_t ns, name;                  /* interned */
    int32_t min_member;                 /* >= 1 */
    int32_t max_member;                 /* elastic: the desired size (spec.maxMember, >=
                                           min_member), 0: no bound (scheduler/elastic.h) */
    int32_t timeout_s;                  /* 0 = policy default */
    int32_t priority;
    uint8_t has_priority;
    uint8_t strategy;                   /* enum tg_strategy */
    uint32_t prio_class;                /* interned, 0 = none */
    uint32_t queue;                     /* the queue it names (model/queues.h), pinned, 0 none */
    uint32_t required, preferred;       /* interned level names, 0 = none */
    int64_t created_ms;
    char *uid, *rv;                     /* owned, may be NULL */
    /* The peers' PodGroups (model/workload.h); all zero for topogang.io. */
    uint8_t api;                        /* enum tg_pg_api */
    uint8_t sched_true;                 /* upstream: its PodGroupScheduled condition is True */
    uint8_t tier_hard;                  /* Volcano networkTopology.mode hard */
    int16_t tier;                       /* Volcano highestTierAllowed, -1 none */
    uint32_t topo_req, topo_pref;       /* interned level name or node label key, 0 none:
                                           resolved against the policy by the gang layer */
    const char *topo_req_field, *topo_pref_field; /* static: where they were read */
    char *problem;                      /* owned: "field: why" when the spec is unusable */
    int64_t generation;                 /* metadata.generation (every PodGroup, ours too) */
    /* What the scheduler recorded in a topogang.io PodGroup's status about
     * the gang's life (scheduler/loss.h): its condition Complete is True
     * (the gang reached minMember bound), and its condition MemberLoss (a
     * gang that ran complete and lost members) with its reason and
     * lastTransitionTime. */
    uint8_t complete;
    uint8_t loss;                       /* enum tg_pg_loss */
    int64_t complete_since_ms, loss_since_ms;
    /* Sub-groups (scheduler/subgroup.h): listed (owned, nsubs of them), or
     * sub_size > 0 (spec.subGroupSize: every sub_size consecutive ranks one
     * sub-group, each of sub_topo's levels); never both. */
    struct tg_subgroup *subs;
    uint32_t nsubs;
    int32_t sub_size;
    struct tg_subgroup sub_topo;        /* name 0; min_member = sub_size */
    uint8_t sub_by;                     /* enum tg_sub_by: how a pod names its sub-group */
    /* Volcano's spec.subGroupPolicy (owned, nsgpol of them): the gang layer
     * lists its sub-groups in subs as members show them (TG_SUB_BY_VOLCANO) */
    struct tg_sgpolicy *sgpol;
    uint32_t nsgpol;
    /* KAI's parent sub-groups with a topologyConstraint of their own (owned,
     * nouter of them; name and levels): each holds its leaves (subs[k].outer)
     * inside one domain of its level, inside the gang's (scheduler/subgroup.h) */
    struct tg_subgroup *outer;
    uint32_t nouter;
};

/* How a member names its sub-group in pg->subs: the label topogang.io/sub-group
 * (kai.scheduler/subgroup-name for a KAI PodGroup); a derived JobSet gang's
 * pod, by the name of its controller Job; a whole-LWS gang's pod, by its
 * label leaderworkerset.sigs.k8s.io/group-index; an LWS group's pod, by its
 * label leaderworkerset.sigs.k8s.io/subgroup-index (LWS's subGroupPolicy);
 * with a whole-LWS gang and LWS's subGroupPolicy, sub-group
 * "<group>-<subgroup>", by both labels, each group an outer group
 * (TG_SUB_BY_LWS_NESTED); a Volcano PodGroup's, by its subGroupPolicy
 * (struct tg_sgpolicy). */
enum tg_sub_by { TG_SUB_BY_LABEL, TG_SUB_BY_JOB, TG_SUB_BY_LWS_GROUP, TG_SUB_BY_LWS_SUBGROUP,
                 TG_SUB_BY_VOLCANO, TG_SUB_BY_LWS_NESTED };

/* The MemberLoss condition of a PodGroup's status: its reasons, indexed by
 * enum tg_pg_loss (TG_PGLOSS_NONE: no such condition, or not True). */
enum tg_pg_loss { TG_PGLOSS_NONE, TG_PGLOSS_WAITING, TG_PGLOSS_KEPT, TG_PGLOSS_EVICTED,
                  TG_PGLOSS_N };
extern const char *const tg_pg_loss_reason[TG_PGLOSS_N];

/* Decodes a PodGroup (topogang.io/v1alpha1; scheduling.x-k8s.io too). Level
 * names are checked against the policy later, by the scheduler. */
int tg_podgroup_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_podgroup **out);
void tg_podgroup_free(struct tg_podgroup **g);

/* ---- PodDisruptionBudgets --------------------------------------------- */

/* A policy/v1 PodDisruptionBudget. */
struct tg_pdb {
    char *key;                          /* "ns/name", owned */
    uint32_t ns;
    uint8_t has_selector;               /* spec.selector given (absent: matches nothing) */
    uint8_t has_min, min_pct;           /* spec.minAvailable: int, or percent */
    uint8_t has_max, max_pct;           /* spec.maxUnavailable */
    uint8_t has_status;                 /* status.observedGeneration set: the controller counted */
    int32_t min_available, max_unavailable;
    int32_t disruptions_allowed;        /* status.disruptionsAllowed */
    struct tg_labelsel sel;
    char *uid, *rv;                     /* owned, may be NULL */
};

int tg_pdb_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_pdb **out);
void tg_pdb_free(struct tg_pdb **p);
/* Disruptions the budget allows now: status.disruptionsAllowed when the
 * disruption controller has counted, else from the spec with `healthy`
 * matching pods running (expected taken as healthy). */
int32_t tg_pdb_allowed(const struct tg_pdb *p, uint32_t healthy);

/* ---- PriorityClasses --------------------------------------------------- */

/* Kubernetes' priority ranges (k8s.io/kubernetes pkg/apis/scheduling): a
 * user-defined PriorityClass is at most TG_PRIO_USER_MAX; above it, and any
 * class named "system-...", is a system class; system-cluster-critical is
 * TG_PRIO_SYSTEM_CRITICAL and system-node-critical 1,000 more. */
#define TG_PRIO_USER_MAX 1000000000
#define TG_PRIO_SYSTEM_CRITICAL 2000000000
#define TG_PRIO_SYSTEM_PREFIX "system-"

/* A scheduling.k8s.io/v1 PriorityClass: what queue order and preemption need
 * of it. */
struct tg_prioclass {
    char *name;                         /* metadata.name (the key), owned */
    char *uid, *rv;                     /* owned, may be NULL */
    int32_t value;
    uint8_t never;                      /* preemptionPolicy: Never (absent or null:
                                           PreemptLowerPriority, the API's default) */
    uint8_t global_default;             /* globalDefault: true */
};

/* The one PriorityClass decoder (the daemon's informer and `simulate`):
 * metadata.name and an int32 value are required; preemptionPolicy, when
 * given and not null, PreemptLowerPriority or Never; globalDefault a
 * boolean. Returns 0 (*out owned by the caller: tg_prioclass_free),
 * TG_EPARSE (reported through d, naming the object and the field) or
 * TG_ENOMEM. */
int tg_prioclass_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_prioclass **out);
void tg_prioclass_free(struct tg_prioclass **p);
/* Whether a class is a system one: its name starts with "system-" or its
 * value is above TG_PRIO_USER_MAX. */
int tg_prioclass_is_system(const char *name, int32_t value);

/* ---- what placement reads besides nodes and pods ------------------------
 * Namespaces (labels, for namespaceSelector), PersistentVolumes,
 * PersistentVolumeClaims, StorageClasses and ResourceClaims; model/objstore.h
 * keeps them. Each decoder returns 0, TG_EPARSE (reported) or TG_ENOMEM. */

struct tg_namespace {
    uint32_t name;                      /* interned */
    uint32_t queue;                     /* its default queue (model/queues.h), pinned, 0 none */
    uint16_t nlabels;
    struct tg_label *labels;            /* sorted; kubernetes.io/metadata.name always there */
    char *rv;
};

struct tg_pv {
    uint32_t name;                      /* interned */
    uint32_t sc;                        /* spec.storageClassName, 0 none */
    uint32_t claim_ns, claim_name;      /* spec.claimRef, 0 none */
    uint16_t nterms;                    /* spec.nodeAffinity.required.nodeSelectorTerms */
    uint8_t has_affinity;
    struct tg_selterm *terms;           /* ORed; owned */
    char *rv;
};

struct tg_pvc {
    char *key;                          /* "ns/name", owned */
    uint32_t ns, name;                  /* interned */
    uint32_t volume;                    /* spec.volumeName, 0: not bound */
    uint32_t sc;                        /* spec.storageClassName */
    uint8_t has_sc;                     /* given ("" too: no class, static binding only) */
    uint8_t bound;                      /* status.phase Bound */
    char *rv;
};

struct tg_storageclass {
    uint32_t name;                      /* interned */
    uint8_t wffc;                       /* volumeBindingMode: WaitForFirstConsumer */
    uint8_t is_default;                 /* storageclass.kubernetes.io/is-default-class */
    char *rv;
};

/* A resource.k8s.io ResourceClaim (v1, v1beta1, v1beta2). */
struct tg_rclaim {
    char *key;                          /* "ns/name", owned */
    uint32_t ns, name;
    uint8_t allocated;                  /* status.allocation present */
    uint16_t nterms;                    /* status.allocation.nodeSelector terms; 0: any node */
    struct tg_selterm *terms;
    char *rv;
};

int tg_namespace_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_namespace **out);
void tg_namespace_free(struct tg_namespace **n);
int tg_pv_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_pv **out);
void tg_pv_free(struct tg_pv **p);
int tg_pvc_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_pvc **out);
void tg_pvc_free(struct tg_pvc **p);
int tg_sc_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_storageclass **out);
void tg_sc_free(struct tg_storageclass **s);
int tg_rclaim_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_rclaim **out);
void tg_rclaim_free(struct tg_rclaim **c);

/* ---- helpers shared by decoders ---------------------------------------- */

/* RFC 3339 timestamp to ms since epoch; returns 0 or TG_EPARSE. */
int tg_parse_time(const char *s, int64_t *ms);

#define TG_LABEL_POD_GROUP      "topogang.io/pod-group"
#define TG_LABEL_POD_GROUP_XK8S "scheduling.x-k8s.io/pod-group"
#define TG_ANNOTATION_TOPOLOGY  "topogang.io/topology"
#define TG_LABEL_SUB_GROUP      "topogang.io/sub-group"
#define TG_LABEL_KAI_SUB_GROUP  "kai.scheduler/subgroup-name"
#define TG_LABEL_RANK           "topogang.io/rank"
#define TG_LABEL_JOB_INDEX      "batch.kubernetes.io/job-completion-index"

#endif
