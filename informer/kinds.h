/* The object kinds the scheduler caches, as struct tg_kind descriptors over
 * the compact structs of model/objects.h, plus small structs of its own for
 * the policy ConfigMap. */
#ifndef TG_INFORMER_KINDS_H
#define TG_INFORMER_KINDS_H

#include <stdint.h>

#include "informer/store.h"
#include "model/objects.h"

/* A ConfigMap reduced to its string data. */
struct tg_configmap {
    char *key;               /* "namespace/name", owned */
    char *uid, *rv;          /* owned, may be NULL */
    uint32_t ndata;
    char **keys, **vals;     /* data entries, owned */
};

/* Value of data[k], or NULL. */
const char *tg_configmap_get(const struct tg_configmap *cm, const char *k);

/* struct tg_prioclass (a PriorityClass) is model/objects.h's. */

extern const struct tg_kind tg_kind_node;        /* struct tg_node_obj, key = name */
extern const struct tg_kind tg_kind_pod;         /* struct tg_pod, requests only */
extern const struct tg_kind tg_kind_pod_spec;    /* struct tg_pod with TG_DECODE_SPEC */
/* struct tg_pod of the one pod watch: with TG_DECODE_SPEC while unbound
 * (spec.nodeName empty), requests only once bound. */
extern const struct tg_kind tg_kind_pod_any;
/* The pods the one pod watch keeps (a reflector opts.keep, sched: the
 * scheduler's name, a char *): 1 for a Pod object (cJSON tree) that is
 * bound (spec.nodeName set) or whose spec.schedulerName is sched; 0 for
 * another scheduler's unbound pod, which is then never decoded. */
int tg_pod_keep(void *sched, const struct cJSON *pod);
extern const struct tg_kind tg_kind_podgroup;    /* struct tg_podgroup */
extern const struct tg_kind tg_kind_configmap;   /* struct tg_configmap */
extern const struct tg_kind tg_kind_prioclass;   /* struct tg_prioclass, key = name */
extern const struct tg_kind tg_kind_pdb;         /* struct tg_pdb (model/objects.h) */
/* struct tg_podgroup of each API (enum tg_pg_api, model/workload.h) */
extern const struct tg_kind tg_kind_pg_peer[];
/* struct tg_queue_obj of each API (enum tg_queue_api, model/queues.h), key = name */
extern const struct tg_kind tg_kind_queue[];
/* struct tg_workload: Job, JobSet, LeaderWorkerSet, PyTorchJob, MPIJob, TrainJob */
extern const struct tg_kind tg_kind_workload;

/* An object the scheduling engine keeps itself (model/objstore.h): a
 * Namespace, PersistentVolume, PersistentVolumeClaim, StorageClass or
 * ResourceClaim. The store keeps only its identity; the decoded object
 * (model/objects.h) is handed over once, by the handler, with
 * tg_handover_take: one decode, one owner. */
struct tg_handover {
    char *key, *uid, *rv;    /* "name" or "namespace/name"; owned, uid/rv may be NULL */
    void *obj;               /* until taken; freed with the record otherwise */
    void (*free_obj)(void *);
};

/* The decoded object of a stored record (struct tg_namespace, tg_pv, tg_pvc,
 * tg_storageclass or tg_rclaim, by kind); NULL once taken. The caller owns it. */
void *tg_handover_take(const void *stored);

extern const struct tg_kind tg_kind_namespace;   /* struct tg_handover of a tg_namespace */
extern const struct tg_kind tg_kind_pv;          /* ... of a tg_pv */
extern const struct tg_kind tg_kind_pvc;         /* ... of a tg_pvc */
extern const struct tg_kind tg_kind_sc;          /* ... of a tg_storageclass */
extern const struct tg_kind tg_kind_rclaim;      /* ... of a tg_rclaim (resource.k8s.io/v1) */

#endif
