/* The writes the scheduler makes, as plain functions over tg_client:
 * Binding (pods/NAME/binding), PodGroup status merge patch, pod status
 * strategic merge patch (preemption: the DisruptionTarget condition, the
 * preemptor's nominatedNodeName), Event (events.k8s.io/v1), Lease
 * get/create/update (coordination.k8s.io/v1), pod delete. Each queues one
 * request (writes go through the client's qps/burst limiter; the Lease's
 * requests take the client's urgent lane instead; Bindings, deletes and
 * status patches are leader-only: past the client's fence they finish with
 * TG_EFENCED, see client.h) and reports through cb exactly once; see struct tg_resp for the
 * error mapping (TG_ECONFLICT on a stale Lease resourceVersion, TG_EEXIST when
 * creating what exists, TG_ENOENT for a missing pod). They return 0, or
 * TG_ENOMEM/TG_EINVAL without calling cb. */
#ifndef TG_INFORMER_API_H
#define TG_INFORMER_API_H

#include <stddef.h>
#include <stdint.h>

#include "informer/client.h"

/* Binds ns/name to node. uid (may be NULL) makes the bind fail if the pod was
 * replaced by another of the same name. */
int tg_api_bind(struct tg_client *c, const char *ns, const char *name, const char *uid,
                const char *node, tg_done_fn cb, void *ud);

/* Merge-patches the /status subresource of a PodGroup with {"status": status_json}.
 * status_json is a JSON object text, e.g. {"phase":"Scheduled","scheduled":16}. */
int tg_api_patch_podgroup_status(struct tg_client *c, const char *ns, const char *name,
                                 const char *status_json, tg_done_fn cb, void *ud);

/* Patches the /status subresource of an object of any API group
 * ("scheduling.k8s.io/v1alpha2", "podgroups"; ns NULL: a cluster-scoped one)
 * with {"status": status_json}:
 * a strategic merge patch (built-in types: lists merge by key, e.g.
 * conditions by type) or a JSON merge patch. */
int tg_api_patch_status_of(struct tg_client *c, const char *group_version, const char *resource,
                           const char *ns, const char *name, const char *status_json,
                           int strategic, tg_done_fn cb, void *ud);

/* Server-side-applies {"status": status_json} to the /status subresource of
 * an object of a custom API (kind "Queue"; ns NULL: cluster-scoped) as field
 * manager `manager`, forcing conflicts. Lists the CRD declares
 * x-kubernetes-list-type: map (conditions keyed by type) merge by key: the
 * entries this manager does not name stay, which a merge patch (it replaces
 * the whole list) would drop. The manager owns what it applies: apply the
 * same keys each time. */
int tg_api_apply_status_of(struct tg_client *c, const char *group_version, const char *kind,
                           const char *resource, const char *ns, const char *name,
                           const char *manager, const char *status_json, tg_done_fn cb, void *ud);

/* GETs the ConfigMap ns/name (HTTP 404 when there is none). */
int tg_api_configmap_get(struct tg_client *c, const char *ns, const char *name, tg_done_fn cb,
                         void *ud);
/* Server-side-applies the ConfigMap ns/name with data data_json (a JSON
 * object of strings) as field manager `manager`, forcing conflicts: created
 * when absent, the keys this manager wrote replaced. A lease holder's write
 * (fenced like status). */
int tg_api_configmap_apply(struct tg_client *c, const char *ns, const char *name,
                           const char *manager, const char *data_json, tg_done_fn cb, void *ud);

/* Strategic-merge-patches the /status subresource of a pod with
 * {"status": status_json}: conditions merge by type (others stay), scalar
 * fields replace. E.g. {"nominatedNodeName":"n1"}, or
 * {"conditions":[{"type":"DisruptionTarget","status":"True",...}]}. */
int tg_api_patch_pod_status(struct tg_client *c, const char *ns, const char *name,
                            const char *status_json, tg_done_fn cb, void *ud);

struct tg_event_spec {
    const char *ns;                      /* the event's namespace (the regarding object's) */
    const char *kind, *api_version;      /* regarding: "Pod", "v1" */
    const char *name, *uid;              /* regarding name, uid (may be NULL) */
    const char *type;                    /* "Normal" or "Warning" */
    const char *reason;                  /* CamelCase: "FailedScheduling" */
    const char *action;                  /* "Scheduling", "Binding" */
    const char *note;                    /* human text; cut to TG_EVENT_NOTE_MAX bytes */
    const char *controller;              /* default "topogang.io/scheduler" */
    const char *instance;                /* default the host name */
    int cluster_scoped;                  /* the regarding object has no namespace (a Queue):
                                          * the Event lives in ns, regarding names none */
    int background;                      /* a background write (client.h), behind Bindings
                                          * and status: for Events as many as the pods
                                          * bound (Scheduled), not the rare ones a crash
                                          * must not lose (RolledBack, Preempted) */
};

/* The API server refuses an Event whose note is longer (events.k8s.io/v1
 * validation: "note: Too long: may not be more than 1024 bytes"). */
#define TG_EVENT_NOTE_MAX 1024

/* Creates an events.k8s.io/v1 Event. A note over TG_EVENT_NOTE_MAX bytes is
 * cut on a UTF-8 boundary and ends with "..." (callers that list things
 * shorten their lists first: "and N more"). The Event's name is fixed here, so
 * the client retries it after 429, 5xx, a broken connection or a timeout
 * (client.h, "Retried writes"); cb hears the last try. TG_EAGAIN (not cb):
 * too many Events held already, this one dropped (counted). */
int tg_api_create_event(struct tg_client *c, const struct tg_event_spec *e, tg_done_fn cb,
                        void *ud);

struct tg_lease {
    char *holder;                        /* spec.holderIdentity, or NULL */
    int32_t duration_s;                  /* spec.leaseDurationSeconds */
    int32_t transitions;                 /* spec.leaseTransitions */
    int64_t acquire_ms, renew_ms;        /* spec.acquireTime/renewTime, 0 when unset */
    char *rv;                            /* metadata.resourceVersion */
};

/* Decodes a Lease JSON body into *l (caller frees with tg_lease_free).
 * Returns 0, TG_EPARSE or TG_ENOMEM. */
int tg_lease_decode(const char *body, size_t len, struct tg_lease *l);
void tg_lease_free(struct tg_lease *l);

int tg_api_lease_get(struct tg_client *c, const char *ns, const char *name, tg_done_fn cb,
                     void *ud);
int tg_api_lease_create(struct tg_client *c, const char *ns, const char *name,
                        const struct tg_lease *l, tg_done_fn cb, void *ud);
/* PUT with l->rv as the precondition: TG_ECONFLICT when someone else wrote. */
int tg_api_lease_update(struct tg_client *c, const char *ns, const char *name,
                        const struct tg_lease *l, tg_done_fn cb, void *ud);

/* Deletes a pod. grace_s < 0: the pod's own grace period; 0: immediately
 * (the only way a bound pod goes away without a kubelet). uid (may be NULL)
 * is a precondition. */
int tg_api_delete_pod(struct tg_client *c, const char *ns, const char *name, int64_t grace_s,
                      const char *uid, tg_done_fn cb, void *ud);

/* Formats ms since the epoch as a MicroTime ("2026-11-22T01:30:00.123000Z"). */
void tg_format_microtime(int64_t ms, char *buf, size_t len);

#endif
