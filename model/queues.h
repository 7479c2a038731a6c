/* Tenant queues (issue 19): the Queue objects of KAI (scheduling.run.ai/v2),
 * Volcano (scheduling.volcano.sh/v1beta1) and topogang (topogang.io/v1alpha1),
 * decoded into one shape, as users of those schedulers already write them.
 * How the cluster is divided among them is scheduler/fairshare.h; which
 * queue a gang belongs to is the gang layer's business (its PodGroup's or
 * pods' queue label/field, else its namespace's default, else the default
 * queue).
 *
 *   KAI      spec.parentQueue, spec.priority (the over-quota tier),
 *            spec.resources.{gpu,cpu,memory}.{quota,limit,overQuotaWeight},
 *            in GPUs, millicores and megabytes; -1 means unlimited
 *   Volcano  spec.parent, spec.weight, spec.capability (limit),
 *            spec.deserved (quota), spec.guarantee (kept as guarantee)
 *   topogang spec.parent, spec.priority, spec.resources: a map from any
 *            resource's Kubernetes name (nvidia.com/gpu, cpu, memory,
 *            rdma/...) to {quota, limit, overQuotaWeight}, amounts as
 *            Kubernetes quantities
 *
 * Amounts are in the model's units (model/resources.h): cpu in millicores,
 * memory in bytes, every other resource in units (KAI's GPUs may be
 * fractional, hence double). A problem in the spec (a negative quota, a bad
 * quantity, an unknown field) keeps the queue with what was valid and sets
 * `problem` ("spec.resources.gpu.quota: must be >= 0 or -1"), so the
 * scheduler can put it in a condition and an Event while the rest works; a
 * queue is refused (TG_EPARSE) only when it has no name. */
#ifndef TG_MODEL_QUEUES_H
#define TG_MODEL_QUEUES_H

#include <stddef.h>
#include <stdint.h>

#include "model/objects.h"

enum tg_queue_api { TG_QAPI_TOPOGANG, TG_QAPI_KAI, TG_QAPI_VOLCANO, TG_QAPI_N };

#define TG_QUEUE_UNLIMITED (-1.0)

/* One resource of a queue. */
struct tg_queue_res {
    uint32_t name;                      /* interned Kubernetes name: "nvidia.com/gpu", "cpu" */
    double quota;                       /* deserved when demanded (KAI quota, Volcano deserved);
                                           0: none */
    double limit;                       /* never exceeded (KAI limit, Volcano capability);
                                           TG_QUEUE_UNLIMITED: no limit */
    double weight;                      /* share of the surplus (KAI overQuotaWeight, Volcano
                                           weight); default 1 */
    double guarantee;                   /* Volcano spec.guarantee; 0 elsewhere */
};

struct tg_queue_obj {
    uint32_t name;                      /* interned; Queues are cluster-scoped */
    uint32_t parent;                    /* interned parent's name; 0: top level */
    uint8_t api;                        /* enum tg_queue_api */
    int32_t priority;                   /* over-quota tier: higher tiers share the surplus
                                           first (spec.priority of all three APIs);
                                           default 100, KAI's */
    struct tg_queue_res *res;           /* owned, sorted by name (the interned id) */
    uint32_t nres;
    char *problem;                      /* owned "field: why", NULL when the spec is clean */
    char *uid, *rv;                     /* owned, may be NULL */
    int64_t created_ms;
};

/* Decodes a Queue of any of the three APIs (told apart by apiVersion) into
 * *out (the caller frees it with tg_queue_obj_free). Returns 0, or TG_EPARSE
 * with the object and the field reported through d. */
int tg_queue_obj_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_queue_obj **out);
/* The same for one API (enum tg_queue_api; the informer's collections, whose
 * list items may carry no apiVersion). TG_EINVAL for an API out of range. */
int tg_queue_obj_decode_api(const struct cJSON *obj, int api, struct tg_diag *d,
                            struct tg_queue_obj **out);
void tg_queue_obj_free(struct tg_queue_obj **q);
/* 1 when a and b decode to the same queue as the division reads it (name,
 * parent, API, priority, creation time, resources, problem): b differs from
 * a in its status or other metadata only (uid and resourceVersion are not
 * compared: the leader's own status writes come back so). */
int tg_queue_obj_same_spec(const struct tg_queue_obj *a, const struct tg_queue_obj *b);
/* The resource named `name` (interned) of q, or NULL. */
const struct tg_queue_res *tg_queue_obj_res(const struct tg_queue_obj *q, uint32_t name);

/* Each API's group, version, apiVersion and plural, indexed by enum
 * tg_queue_api (the informer's kinds and discovery read it). */
struct tg_queue_apiinfo {
    const char *group, *version, *api_version, *name;
};
extern const struct tg_queue_apiinfo tg_queue_apis[TG_QAPI_N];
/* The API of an apiVersion (any version of the group), or -1. */
int tg_queue_api_of(const char *api_version);

/* ---- membership: which queue a gang belongs to ------------------------------
 *
 *   PodGroup  spec.queue (KAI, Volcano), else its label topogang.io/queue or
 *             kai.scheduler/queue
 *   pod       label topogang.io/queue or kai.scheduler/queue, else annotation
 *             scheduling.volcano.sh/queue-name
 *   Namespace label topogang.io/queue, else annotation topogang.io/queue
 *             (KAI has no namespace default: its pod grouper reads the pod's
 *             and its owner's labels only)
 *   else the default queue the caller names.
 * The decoders put what they find into tg_pod.queue, tg_podgroup.queue and
 * tg_namespace.queue (pinned interned names, 0: none). */
#define TG_LABEL_QUEUE "topogang.io/queue"
#define TG_LABEL_KAI_QUEUE "kai.scheduler/queue"
#define TG_ANN_VOLCANO_QUEUE "scheduling.volcano.sh/queue-name"

enum tg_queue_of { TG_QOF_WORKLOAD, TG_QOF_NAMESPACE };
/* The queue an object's metadata names (labels and annotations as above,
 * `of` telling a pod or PodGroup from a Namespace): a pinned interned name,
 * 0 when none (or an empty value), TG_STR_NONE when out of memory. */
uint32_t tg_queue_meta(const struct cJSON *metadata, int of);

enum tg_queue_src { TG_QSRC_PODGROUP, TG_QSRC_POD, TG_QSRC_NAMESPACE, TG_QSRC_DEFAULT };
struct tg_queue_pick {
    uint32_t queue;                     /* interned queue name; 0 only when dflt is 0 */
    uint8_t src;                        /* enum tg_queue_src: where it came from */
    uint32_t conflict;                  /* another queue a member pod names (ignored), 0 none */
};
/* Resolves a gang's queue: its PodGroup's (pg may be NULL), else the first
 * of pods[0..n) that names one (a later pod naming another is reported in
 * `conflict`), else the namespace's default (ns may be NULL), else dflt.
 * Pure: reads only its arguments. */
struct tg_queue_pick tg_queue_resolve(const struct tg_podgroup *pg, const struct tg_pod *const *pods,
                                      size_t n, const struct tg_namespace *ns, uint32_t dflt);
extern const char *const tg_queue_src_name[];

#endif
