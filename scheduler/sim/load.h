/* The simulator's input: Kubernetes objects read from multi-document YAML
 * (or JSON, or `kind: List`), from files, directories of *.yaml or stdin.
 *
 * Kinds read: Node, Pod, PodGroup (topogang.io, scheduling.k8s.io,
 * scheduling.x-k8s.io, scheduling.volcano.sh, scheduling.run.ai), the
 * workloads whose pods form gangs (Job, JobSet, LeaderWorkerSet, PyTorchJob,
 * MPIJob, TrainJob: model/workload.h; the pods of an owner kind of which the
 * input holds no object are gangs of one, as without this),
 * PriorityClass, PodDisruptionBudget, Namespace, PersistentVolume,
 * PersistentVolumeClaim, StorageClass, ResourceClaim, Queue (topogang.io,
 * scheduling.run.ai/v2, scheduling.volcano.sh: model/queues.h; a Queue's
 * spec problem is reported with file and line and the queue kept; a later
 * Queue of the same name, of any API, replaces the earlier), List. The last five
 * are kept in the loader's store, which every pod it decodes points at
 * (tg_podspec.store): placement looks its claims up there. A pod's annotation
 * simulate.topogang.io/duration (seconds, or a Go duration such as "2h30m")
 * is how long it runs once bound, for `simulate --replay`. A bad object is
 * skipped with a message naming the file, line, object and field; a file
 * that cannot be read as a whole is an error. Used by `simulate` (snapshot)
 * and `simulate --replay` alike. */
#ifndef TG_SIM_LOAD_H
#define TG_SIM_LOAD_H

#include <stdint.h>

#include "config/policy.h"
#include "model/objects.h"
#include "model/objstore.h"
#include "model/queues.h"
#include "model/workload.h"
#include "scheduler/gang.h"
#include "util/hmap.h"
#include "util/strbuf.h"

#define TG_SIM_DURATION_ANNOTATION "simulate.topogang.io/duration"

struct tg_simpod {
    struct tg_pod *pod;                 /* owned */
    int64_t duration_ms;                /* -1: runs until the end */
    uint32_t order;                     /* position in the input */
};

struct tg_simpclass {
    uint32_t name;                      /* interned */
    struct tg_pclass pc;
};

struct tg_simdata {
    struct tg_node_obj **nodes;         /* owned */
    uint32_t nnodes, capnodes;
    struct tg_simpod *pods;
    uint32_t npods, cappods;
    struct tg_podgroup **pgs;           /* owned */
    uint32_t npgs, cappgs;
    struct tg_simpclass *pcs;
    uint32_t npcs, cappcs;
    struct tg_pdb **pdbs;               /* owned */
    uint32_t npdbs, cappdbs;
    struct tg_objstore store;           /* Namespaces, PVs, PVCs, StorageClasses, ResourceClaims */
    struct tg_hmap pod_idx, pg_idx, pdb_idx; /* key -> index */
    struct tg_imap node_idx;            /* interned name -> index */
    uint32_t warnings, errors;          /* objects skipped, problems reported */
    double load_ms;
    int quiet;
    /* loading context */
    const char *origin;
    const void *lines;
    struct tg_diag diag;
    /* Workloads whose pods form gangs with no PodGroup (model/workload.h) */
    struct tg_workload **wls;           /* owned */
    uint32_t nwls, capwls;
    struct tg_hmap wl_idx;              /* key -> index */
    /* Tenant Queues (model/queues.h), one per name */
    struct tg_queue_obj **queues;       /* owned */
    uint32_t nqueues, capqueues;
    struct tg_hmap queue_idx;           /* name -> index */
    unsigned wl_kinds;                  /* bit per enum tg_wl_kind read: the owner kinds
                                           whose pods form derived gangs (gang.h owner_kinds) */
};

void tg_simdata_init(struct tg_simdata *d);
void tg_simdata_free(struct tg_simdata *d);
/* Reads a file, a directory of *.yaml / *.yml (sorted), or "-" (stdin).
 * Returns 0, or TG_EPARSE/TG_EIO/TG_ENOMEM with the reason in err. */
int tg_simdata_load_path(struct tg_simdata *d, const char *path, struct tg_sb *err);
int tg_simdata_load_string(struct tg_simdata *d, const char *yaml, size_t n, const char *origin,
                           struct tg_sb *err);

/* A duration: whole or fractional seconds ("90", "1.5") or a Go duration
 * ("2h30m", "45s", "1h0m0.5s", "300ms"). Returns 0 or TG_EPARSE. */
int tg_parse_duration_ms(const char *s, int64_t *ms);

#endif
