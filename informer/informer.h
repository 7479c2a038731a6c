/* The scheduler's view of the cluster: one reflector per watched collection,
 * the way kube-scheduler watches.
 *   nodes         all Nodes                                   (tg_kind_node)
 *   pods          non-terminal pods, one watch as kube-scheduler's: (tg_kind_pod_any)
 *                 status.phase!=Succeeded,status.phase!=Failed; kept: the
 *                 bound ones (spec.nodeName set, any scheduler's) and the
 *                 unbound ones of this scheduler (spec.schedulerName=<name>);
 *                 other schedulers' unbound pods are dropped before decoding
 *                 (reflector opts.keep) and never cached
 *   podgroups     topogang.io/v1alpha1 podgroups, all namespaces (tg_kind_podgroup)
 *   config        the policy ConfigMap <ns>/<name>            (tg_kind_configmap)
 *   prioclasses   scheduling.k8s.io/v1 PriorityClasses:       (tg_kind_prioclass)
 *                 value, preemptionPolicy, globalDefault
 *   pdbs          policy/v1 PodDisruptionBudgets, all         (tg_kind_pdb)
 *                 namespaces (preemption prefers sets that violate none)
 * and, when asked for (opts.optional) and served, what defines gangs
 * beyond topogang's PodGroups (model/workload.h), all namespaces:
 *   pg_upstream .. pg_kai   the peers' PodGroups: scheduling.k8s.io/v1alpha2,
 *                 scheduling.x-k8s.io/v1alpha1, scheduling.volcano.sh/v1beta1,
 *                 scheduling.run.ai/v2alpha2            (tg_kind_pg_peer[api])
 *   jobs .. trainjobs  batch/v1 Jobs, JobSets, LeaderWorkerSets, PyTorchJobs,
 *                 MPIJobs, TrainJobs                     (tg_kind_workload)
 *   queues_*      tenant Queues: topogang.io/v1alpha1, scheduling.run.ai/v2,
 *                 scheduling.volcano.sh/v1beta1          (tg_kind_queue[api])
 * With any optional collection asked for, the informer first discovers
 * which are served (discovery.h; topogang.io PodGroups too), says so
 * through on_discovered, and only then starts every reflector, so that a
 * handler knows what is watched before the first object comes.
 * A pod that gets bound is one MODIFIED event of the pods collection (its
 * old object unbound, its new one bound): the handler sees both in order.
 * Config keys: schedulerName, the ConfigMap's namespace/name. */
#ifndef TG_INFORMER_INFORMER_H
#define TG_INFORMER_INFORMER_H

#include "informer/client.h"
#include "informer/discovery.h"
#include "informer/kinds.h"
#include "informer/reflector.h"

enum tg_inf_kind { TG_INF_NODES, TG_INF_PODS, TG_INF_PODGROUPS,
                   TG_INF_CONFIG, TG_INF_PRIOCLASSES, TG_INF_PDBS,
                   /* optional: the peers' PodGroups in enum tg_pg_api order (1..4), then
                    * the workloads in enum tg_wl_kind order (1..6) */
                   TG_INF_PG_UPSTREAM, TG_INF_PG_XK8S, TG_INF_PG_VOLCANO, TG_INF_PG_KAI,
                   TG_INF_JOBS, TG_INF_JOBSETS, TG_INF_LWS, TG_INF_PYTORCHJOBS, TG_INF_MPIJOBS,
                   TG_INF_TRAINJOBS,
                   /* what pods' constraints read (volumes, DRA, namespaceSelector); each
                    * optional too, ResourceClaims only where resource.k8s.io/v1 is served */
                   TG_INF_NAMESPACES, TG_INF_PVS, TG_INF_PVCS, TG_INF_SCS, TG_INF_RCLAIMS,
                   /* tenant Queues (model/queues.h), cluster-scoped, in enum tg_queue_api
                    * order: topogang.io, scheduling.run.ai/v2, scheduling.volcano.sh */
                   TG_INF_QUEUES_TG, TG_INF_QUEUES_KAI, TG_INF_QUEUES_VOLCANO,
                   TG_INF_N };

/* The collection of a peer's PodGroups (api 1..4) and of a workload kind (1..6). */
#define TG_INF_OF_PG_API(api) (TG_INF_PG_UPSTREAM + (api) - 1)
#define TG_INF_OF_WL_KIND(k) (TG_INF_JOBS + (k) - 1)
#define TG_INF_OF_QUEUE_API(api) (TG_INF_QUEUES_TG + (api))
#define TG_INF_BIT(k) (1u << (k))
#define TG_INF_OPTIONAL_ALL (((1u << TG_INF_N) - 1) & ~((1u << TG_INF_PG_UPSTREAM) - 1))
/* The gang definitions among them (peers' PodGroups and workloads). */
#define TG_INF_GANG_SOURCES_ALL (((1u << TG_INF_NAMESPACES) - 1) & ~((1u << TG_INF_PG_UPSTREAM) - 1))
/* The Queues of the three APIs. */
#define TG_INF_QUEUE_KINDS (TG_INF_BIT(TG_INF_QUEUES_TG) | TG_INF_BIT(TG_INF_QUEUES_KAI) | \
                            TG_INF_BIT(TG_INF_QUEUES_VOLCANO))
/* The objects constraints read. */
#define TG_INF_CONSTRAINT_KINDS (TG_INF_OPTIONAL_ALL & ~TG_INF_GANG_SOURCES_ALL & ~TG_INF_QUEUE_KINDS)

struct tg_informer_opts {
    const char *scheduler_name;          /* default "topogang" */
    const char *config_ns, *config_name; /* NULL name: no ConfigMap watch */
    int no_podgroups;                    /* skip PodGroups (CRD not installed) */
    int no_preemption_kinds;             /* skip PriorityClasses and PodDisruptionBudgets */
    int page_size;                       /* 0: 500 */
    struct tg_handlers h[TG_INF_N];      /* per collection; on_synced unused there */
    void (*on_synced)(void *ud);         /* once, when every collection has listed */
    void *ud;
    unsigned optional;                   /* TG_INF_BIT of each optional collection wanted */
    /* After discovery and before any reflector starts: the collections
     * watched (TG_INF_BIT each). Only with optional != 0. Called again each
     * time a collection that was not served is found later (with
     * rediscover_ms), after its reflector started. */
    void (*on_discovered)(void *ud, unsigned watched);
    /* How often to ask discovery again for the optional collections not
     * served at start (a CRD installed later: its PodGroups, Queues or
     * constraint objects are then read without a restart); 0: never. The
     * workload kinds are not: which owners form gangs is fixed at start. */
    uint32_t rediscover_ms;
};

struct tg_informer {
    struct tg_reflector *r[TG_INF_N];    /* NULL when not watched */
    void (*on_synced)(void *ud);
    void *ud;
    int synced;
    /* while discovering: what the reflectors will be made of */
    struct tg_client *client;
    struct tg_discovery *disc;
    struct tg_reflector_opts ro[TG_INF_N];
    char sched[256], cm_path[512], cm_sel[300], paths[TG_INF_N][200];
    void (*on_discovered)(void *ud, unsigned watched);
    unsigned watched;                    /* TG_INF_BIT of each collection watched */
    struct tg_apiref want[TG_INF_N];     /* asked of discovery */
    int want_kind[TG_INF_N], nwant;
    /* after start: the optional collections not served yet, asked again */
    unsigned missing;                    /* TG_INF_BIT each */
    uint32_t rediscover_ms;
    uv_timer_t *late_timer;              /* NULL: none armed yet */
    struct tg_discovery *late_disc;
    struct tg_apiref late_want[TG_INF_N];
    int late_kind[TG_INF_N], nlate;
};

/* Creates and starts the reflectors on client c. *out is freed with
 * tg_informer_free (which frees the reflectors; the client stays the
 * caller's). Errors: TG_ENOMEM. */
int tg_informer_start(struct tg_client *c, const struct tg_informer_opts *o,
                      struct tg_informer **out);
void tg_informer_free(struct tg_informer **inf);
int tg_informer_synced(const struct tg_informer *inf);
/* What a collection's objects decode into (informer/kinds.h): one kind per
 * collection, the workloads' six sharing tg_kind_workload; NULL for TG_INF_N. */
const struct tg_kind *tg_informer_kind(enum tg_inf_kind k);
/* The API path of a collection ("/apis/kubeflow.org/v1/pytorchjobs"), the
 * name of its kind for people ("PyTorchJob"). */
const char *tg_informer_path(enum tg_inf_kind k, char *buf, size_t n);
/* The cache of one collection, or NULL when it is not watched. */
const struct tg_store *tg_informer_store(const struct tg_informer *inf, enum tg_inf_kind k);

/* `topogang watch ...` (watch_cmd.c): a debug command; returns the exit code. */
int tg_cmd_watch(int argc, char **argv);

#endif
