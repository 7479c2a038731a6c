/* Gang definitions beyond topogang's own PodGroup (issue 9), decoded like
 * every other object (objects.h: straight from the cJSON tree, bad input
 * reported with the object and the field):
 *
 *  - the peers' PodGroups, into struct tg_podgroup with `api` set:
 *      upstream         scheduling.k8s.io/v1alpha2   spec.schedulingPolicy.gang.minCount,
 *                                                    spec.schedulingConstraints.topology[0].key
 *      scheduler-plugins scheduling.x-k8s.io/v1alpha1 spec.minMember, scheduleTimeoutSeconds
 *      Volcano          scheduling.volcano.sh/v1beta1 spec.minMember, networkTopology
 *                                                    {mode hard|soft, highestTierAllowed |
 *                                                    highestTierName}
 *      KAI              scheduling.run.ai/v2alpha2   spec.minMember, topologyConstraint
 *                                                    {requiredTopologyLevel, preferredTopologyLevel}
 *    Their topology names node label keys (or tiers counted from the nodes
 *    up): the gang layer resolves them against the policy's levels when the
 *    gang is tried (gang.h). A problem in the spec (a missing minMember, an
 *    unknown field, a bad mode) does not drop the object: it is kept with
 *    `problem` set ("spec.minMember: is required"), so the scheduler can say
 *    so in an Event on it while the rest keeps scheduling.
 *  - the workloads whose pods form a gang with no PodGroup at all, into
 *    struct tg_workload: batch/v1 Job, JobSet, LeaderWorkerSet, Kubeflow
 *    PyTorchJob and MPIJob (kubeflow.org/v1), TrainJob (whose pods run
 *    under the JobSet Kubeflow Trainer makes for it, of the same name).
 *  - what a pod says about its gang (tg_pod_gang_decode, called by the pod
 *    decoder): the group named by a peer (spec.schedulingGroup.podGroupName,
 *    the annotations scheduling.k8s.io/group-name and pod-group-name), the
 *    gang its owner would form (`derived`, from the controller reference and
 *    the labels the controllers set), and the annotations that give such a
 *    gang its size and topology (struct tg_ganghints).
 *
 * The rules, one table in the README ("Workloads as they come"). */
#ifndef TG_MODEL_WORKLOAD_H
#define TG_MODEL_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "model/objects.h"

struct cJSON;

/* ---- the PodGroup APIs ---------------------------------------------------- */

/* In order of precedence: when two APIs define a PodGroup of the same
 * namespace and name, the earlier one is the gang's. */
enum tg_pg_api { TG_PG_TOPOGANG, TG_PG_UPSTREAM, TG_PG_XK8S, TG_PG_VOLCANO, TG_PG_KAI,
                 TG_PG_NAPI };

struct tg_pg_apiinfo {
    const char *group, *version;        /* "scheduling.volcano.sh", "v1beta1" */
    const char *api_version;            /* "scheduling.volcano.sh/v1beta1" */
    const char *name;                   /* for people: "Volcano" */
    const char *flag;                   /* for --gang-sources: "volcano" */
};

extern const struct tg_pg_apiinfo tg_pg_apis[TG_PG_NAPI];

/* The API of an apiVersion ("scheduling.run.ai/v2alpha2", any version of
 * the group), or -1. */
int tg_pg_api_of(const char *api_version);

/* Decodes a PodGroup of any of the APIs (chosen by its apiVersion; the
 * topogang.io one goes to tg_podgroup_decode). A peer's key is
 * "ns/name@group" so that PodGroups of two APIs never share a key; its
 * gang is still "ns/name". Errors: TG_EPARSE (no name, or an apiVersion of
 * none of them: skipped), TG_ENOMEM; spec problems of a peer set g->problem
 * instead. Free with tg_podgroup_free. */
int tg_podgroup_decode_any(const struct cJSON *obj, struct tg_diag *d, struct tg_podgroup **out);
/* The same for one API (the informer's kinds). */
int tg_podgroup_decode_api(const struct cJSON *obj, int api, struct tg_diag *d,
                           struct tg_podgroup **out);

/* ---- workloads -------------------------------------------------------------- */

enum tg_wl_kind { TG_WL_NONE, TG_WL_JOB, TG_WL_JOBSET, TG_WL_LWS, TG_WL_PYTORCHJOB,
                  TG_WL_MPIJOB, TG_WL_TRAINJOB, TG_WL_N };

#define TG_WL_ALL (((1u << TG_WL_N) - 1) & ~1u)

struct tg_wl_kindinfo {
    const char *kind;                   /* "LeaderWorkerSet" */
    const char *group, *version, *resource; /* what the daemon watches */
    const char *flag;                   /* for --gang-sources: "lws" */
};

extern const struct tg_wl_kindinfo tg_wl_kinds[TG_WL_N];

/* enum tg_wl_kind of a kind name ("Job"), else TG_WL_NONE. */
int tg_wl_kind_of(const char *kind);

/* A JobSet's replicated job (issue 20: each of its child Jobs one sub-group
 * of the JobSet's gang when it has a level). */
struct tg_wl_rjob {
    uint32_t name;                      /* interned spec.replicatedJobs[i].name */
    int32_t replicas;                   /* child Jobs, named "<jobset>-<name>-<index>" */
    int32_t size;                       /* pods of each child Job (a Job's size) */
    uint32_t excl;                      /* interned node label key of its exclusive-topology
                                           (its template's annotation, else the JobSet's), 0 */
    uint8_t excl_own;                   /* excl is its template's */
};

#define TG_ANN_JOBSET_EXCLUSIVE "alpha.jobset.sigs.k8s.io/exclusive-topology"
#define TG_ANN_LWS_EXCLUSIVE    "leaderworkerset.sigs.k8s.io/exclusive-topology"
#define TG_ANN_GANG_SCOPE       "topogang.io/gang-scope"
#define TG_LABEL_LWS_GROUP      "leaderworkerset.sigs.k8s.io/group-index"
#define TG_ANN_LWS_SUB_EXCLUSIVE "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
#define TG_LABEL_LWS_SUBGROUP   "leaderworkerset.sigs.k8s.io/subgroup-index"

/* An owner whose pods form one gang (an LWS: one gang per group, or one for
 * the whole LWS when its pods carry topogang.io/gang-scope: lws). */
struct tg_workload {
    char *key;                          /* "ns/Kind/name", owned */
    uint8_t kind;                       /* enum tg_wl_kind */
    uint8_t suspended;                  /* Job/JobSet spec.suspend: runs no pods */
    uint32_t ns, name;                  /* interned */
    int32_t size;                       /* pods its gang needs at once (per group for an
                                           LWS): see tg_workload_decode */
    int32_t min_size, max_size;         /* elastic (Kubeflow runPolicy.schedulingPolicy.
                                           minAvailable, PyTorchJob spec.elasticPolicy): the
                                           gang's minMember and maxMember; 0: none */
    uint16_t npsets;                    /* pod sets (JobSet: replicated jobs; Kubeflow:
                                           replica types; LWS: leader and workers) */
    uint32_t owner_kind, owner_name;    /* its own controller (a JobSet's TrainJob), 0 none */
    int64_t created_ms;
    char *uid, *rv;                     /* owned, may be NULL */
    char *problem;                      /* owned: why size could not be read, or NULL */
    /* Sub-groups (issue 20): a JobSet's replicated jobs (owned, npsets of them;
     * NULL for other kinds); an LWS's spec.replicas and its exclusive-topology
     * annotation (interned node label key, 0 none). */
    struct tg_wl_rjob *rjobs;
    int32_t replicas;
    uint32_t excl;
    /* An LWS's spec.leaderWorkerTemplate.subGroupPolicy: subGroupSize (0
     * none), subGroupPolicyType LeaderExcluded (the leader in no subgroup),
     * and its subgroup-exclusive-topology annotation (interned node label
     * key, 0 none). */
    int32_t sub_size;
    uint8_t sub_leader_excluded;
    uint32_t sub_excl;
};

/* Decodes a Job, JobSet, LeaderWorkerSet, PyTorchJob, MPIJob or TrainJob
 * (by kind). size:
 *   Job             parallelism (default 1), or completions - status.succeeded when
 *                   smaller (completions set)
 *   JobSet          sum over spec.replicatedJobs of replicas (default 1) x its Job's
 *                   size as above (rjobs: each one's name, replicas, size and
 *                   alpha.jobset.sigs.k8s.io/exclusive-topology, from its
 *                   template's annotations, else the JobSet's)
 *   LeaderWorkerSet spec.leaderWorkerTemplate.size (default 1): leader + size-1 workers
 *                   (replicas: spec.replicas, default 1; excl: the annotation
 *                   leaderworkerset.sigs.k8s.io/exclusive-topology)
 *   PyTorchJob      sum of spec.pytorchReplicaSpecs[*].replicas (default 1)
 *                   (with spec.elasticPolicy: min_size/max_size are size with the
 *                   Worker replicas replaced by minReplicas/maxReplicas)
 *                   PyTorchJob and MPIJob: min_size also from
 *                   spec.runPolicy.schedulingPolicy.minAvailable
 *   MPIJob          sum of spec.mpiReplicaSpecs[*].replicas (default 1)
 *   TrainJob        spec.trainer.numNodes (default 1; its pods are its JobSet's)
 * Errors: TG_EPARSE (not a known kind, no name), TG_ENOMEM; a spec it
 * cannot read sets problem. Free with tg_workload_free. */
int tg_workload_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_workload **out);
void tg_workload_free(struct tg_workload **w);

/* ---- what a pod says about its gang ---------------------------------------- */

enum tg_hint_src { TG_HINT_NONE, TG_HINT_TOPOGANG, TG_HINT_KUEUE, TG_HINT_KAI };

#define TG_ANN_TOPO_REQUIRED  "topogang.io/topology-required"
#define TG_ANN_TOPO_PREFERRED "topogang.io/topology-preferred"
#define TG_ANN_MIN_MEMBER     "topogang.io/min-member"
#define TG_ANN_KUEUE_REQUIRED "kueue.x-k8s.io/podset-required-topology"
#define TG_ANN_KUEUE_PREFERRED "kueue.x-k8s.io/podset-preferred-topology"
#define TG_ANN_KAI_REQUIRED   "kai.scheduler/topology-required-placement"
#define TG_ANN_KAI_PREFERRED  "kai.scheduler/topology-preferred-placement"
#define TG_ANN_VOLCANO_GROUP  "scheduling.k8s.io/group-name"
#define TG_ANN_KAI_GROUP      "pod-group-name"

/* A pod's annotations for a derived gang: topology as a level name or a node
 * label key (interned, 0 none; topogang.io's before Kueue's before KAI's) and
 * minMember. */
struct tg_ganghints {
    uint32_t req, pref;
    uint8_t req_src, pref_src;          /* enum tg_hint_src */
    int32_t min;                        /* topogang.io/min-member; 0 none, -1 malformed */
};

/* The annotation a hint came from ("topogang.io/topology-required"). */
const char *tg_hint_annotation(int src, int required);

/* ---- a member's rank (issue 20) ---------------------------------------------
 * The first of these a pod carries gives its rank, as an order key (major,
 * minor) kept in p->rank as 1 + (major << 32 | minor), 0 none:
 *   topogang.io/rank label                                  (0, value)
 *   leaderworkerset.sigs.k8s.io/worker-index label (LWS)    (0, value)
 *   training.kubeflow.org/replica-type + replica-index      master/chief/launcher (0, i),
 *     (PyTorchJob, MPIJob, TFJob...)                        worker (1, i); other types none
 *   jobset.sigs.k8s.io/job-global-index (else job-index)    (job, completion index)
 *     with batch.kubernetes.io/job-completion-index (JobSet, TrainJob)
 *   batch.kubernetes.io/job-completion-index label or annotation (Job)  (0, value)
 * Values are whole numbers 0..2^31-1; another value is a warning naming the
 * pod and the field, and the pod has no rank. */
#define TG_LABEL_RANK          "topogang.io/rank"
#define TG_LABEL_COMPLETION    "batch.kubernetes.io/job-completion-index"
#define TG_LABEL_LWS_WORKER    "leaderworkerset.sigs.k8s.io/worker-index"
#define TG_LABEL_KF_TYPE       "training.kubeflow.org/replica-type"
#define TG_LABEL_KF_INDEX      "training.kubeflow.org/replica-index"
#define TG_LABEL_JOBSET_GLOBAL "jobset.sigs.k8s.io/job-global-index"
#define TG_LABEL_JOBSET_INDEX  "jobset.sigs.k8s.io/job-index"

static inline int tg_pod_has_rank(const struct tg_pod *p) { return p->rank != 0; }

/* Called by tg_pod_decode: p->group from a peer when no label named one
 * (spec.schedulingGroup.podGroupName, then scheduling.k8s.io/group-name,
 * then pod-group-name; p->group_api says which), p->derived, p->hints
 * and p->rank.
 * Returns 0 or TG_ENOMEM (a malformed value is a warning through d). */
int tg_pod_gang_decode(const struct cJSON *obj, struct tg_diag *d, struct tg_pod *p);
/* The workload kind of p->derived ("JobSet/x" -> TG_WL_JOBSET), TG_WL_NONE. */
int tg_derived_kind(uint32_t derived);
/* The key of the workload a derived name belongs to ("ns/LeaderWorkerSet/x"
 * for "LeaderWorkerSet/x/3") into buf; returns buf. */
const char *tg_derived_owner_key(uint32_t ns, uint32_t derived, char *buf, size_t n);

#endif
