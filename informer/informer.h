/* The scheduler's view of the cluster: one reflector per watched collection,
 * the way kube-scheduler watches.
 *   nodes         all Nodes                                   (tg_kind_node)
 *   pods_pending  unbound pods of this scheduler:             (tg_kind_pod_spec)
 *                 spec.schedulerName=<name>,spec.nodeName=
 *   pods_bound    bound, non-terminal pods of any scheduler:  (tg_kind_pod)
 *                 spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed
 *   podgroups     topogang.io/v1alpha1 podgroups, all namespaces (tg_kind_podgroup)
 *   config        the policy ConfigMap <ns>/<name>            (tg_kind_configmap)
 *   prioclasses   scheduling.k8s.io/v1 PriorityClasses:       (tg_kind_prioclass)
 *                 value, preemptionPolicy, globalDefault
 *   pdbs          policy/v1 PodDisruptionBudgets, all         (tg_kind_pdb)
 *                 namespaces (preemption prefers sets that violate none)
 * A pod moving from pending to bound is deleted from pods_pending and added
 * to pods_bound (the two streams are not ordered with each other).
 * Config keys: schedulerName, the ConfigMap's namespace/name. */
#ifndef TG_INFORMER_INFORMER_H
#define TG_INFORMER_INFORMER_H

#include "informer/client.h"
#include "informer/kinds.h"
#include "informer/reflector.h"

enum tg_inf_kind { TG_INF_NODES, TG_INF_PODS_PENDING, TG_INF_PODS_BOUND, TG_INF_PODGROUPS,
                   TG_INF_CONFIG, TG_INF_PRIOCLASSES, TG_INF_PDBS, TG_INF_N };

struct tg_informer_opts {
    const char *scheduler_name;          /* default "topogang" */
    const char *config_ns, *config_name; /* NULL name: no ConfigMap watch */
    int no_podgroups;                    /* skip PodGroups (CRD not installed) */
    int no_preemption_kinds;             /* skip PriorityClasses and PodDisruptionBudgets */
    int page_size;                       /* 0: 500 */
    struct tg_handlers h[TG_INF_N];      /* per collection; on_synced unused there */
    void (*on_synced)(void *ud);         /* once, when every collection has listed */
    void *ud;
};

struct tg_informer {
    struct tg_reflector *r[TG_INF_N];    /* NULL when not watched */
    void (*on_synced)(void *ud);
    void *ud;
    int synced;
};

/* Creates and starts the reflectors on client c. *out is freed with
 * tg_informer_free (which frees the reflectors; the client stays the
 * caller's). Errors: TG_ENOMEM. */
int tg_informer_start(struct tg_client *c, const struct tg_informer_opts *o,
                      struct tg_informer **out);
void tg_informer_free(struct tg_informer **inf);
int tg_informer_synced(const struct tg_informer *inf);
/* The cache of one collection, or NULL when it is not watched. */
const struct tg_store *tg_informer_store(const struct tg_informer *inf, enum tg_inf_kind k);

/* `topogang watch ...` (watch_cmd.c): a debug command; returns the exit code. */
int tg_cmd_watch(int argc, char **argv);

#endif
