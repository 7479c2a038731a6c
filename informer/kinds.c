/* struct tg_kind descriptors for Nodes, Pods, PodGroups (topogang's and the
 * peers': model/workload.h), the workloads that form gangs without one,
 * ConfigMaps, PriorityClasses and PodDisruptionBudgets: each
 * decodes straight from the cJSON tree into the compact struct (the caller
 * frees the tree) and names it for the store's indexes. Namespaces,
 * PersistentVolumes, PersistentVolumeClaims, StorageClasses and
 * ResourceClaims are decoded the same way into a record whose object the
 * engine takes over (struct tg_handover). Decoder diagnostics
 * are logged at debug level; the object is then skipped (counted by the
 * reflector as a decode error). */
#include "informer/kinds.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/objects.h"
#include "model/queues.h"
#include "model/workload.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"

static void diag_log(void *ud, int is_error, const cJSON *at, const char *what,
                     const char *field, const char *msg)
{
    (void)ud;
    (void)at;
    if (is_error)
        tg_warn("informer", "%s: %s: %s (object skipped)", what, field, msg);
    else
        tg_debug("informer", "%s: %s: %s", what, field, msg);
}

static struct tg_diag diag = {.report = diag_log};

/* ---- Node ---- */
static int node_decode(const cJSON *o, void **out)
{
    return tg_node_decode(o, &diag, (struct tg_node_obj **)out);
}
static void node_free(void *o)
{
    struct tg_node_obj *n = o;
    tg_node_free(&n);
}
static const char *node_key(const void *o)
{
    return tg_str(((const struct tg_node_obj *)o)->name);
}
static const char *node_rv(const void *o)
{
    return ((const struct tg_node_obj *)o)->rv;
}
const struct tg_kind tg_kind_node = {"Node", node_decode, node_free, node_key, NULL, node_rv};

/* ---- Pod ---- */
static int pod_decode(const cJSON *o, void **out)
{
    return tg_pod_decode(o, 0, &diag, (struct tg_pod **)out);
}
static int pod_decode_spec(const cJSON *o, void **out)
{
    return tg_pod_decode(o, TG_DECODE_SPEC, &diag, (struct tg_pod **)out);
}
/* A Pod object bound to a node: spec.nodeName set. */
static int pod_json_bound(const cJSON *o)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
    const cJSON *node = cJSON_GetObjectItemCaseSensitive(spec, "nodeName");
    return cJSON_IsString(node) && node->valuestring[0];
}
/* The one pod watch's objects: the spec (selector, tolerations, affinity)
 * only while unbound, when placement reads it. */
static int pod_decode_any(const cJSON *o, void **out)
{
    return tg_pod_decode(o, pod_json_bound(o) ? 0 : TG_DECODE_SPEC, &diag, (struct tg_pod **)out);
}
static void pod_free(void *o)
{
    struct tg_pod *p = o;
    tg_pod_free(&p);
}
static const char *pod_key(const void *o)
{
    return ((const struct tg_pod *)o)->key;
}
static const char *pod_uid(const void *o)
{
    return ((const struct tg_pod *)o)->uid;
}
static const char *pod_rv(const void *o)
{
    return ((const struct tg_pod *)o)->rv;
}
const struct tg_kind tg_kind_pod = {"Pod", pod_decode, pod_free, pod_key, pod_uid, pod_rv,
                                    tg_pod_unread};
const struct tg_kind tg_kind_pod_spec = {"Pod", pod_decode_spec, pod_free, pod_key, pod_uid,
                                         pod_rv, tg_pod_unread};
const struct tg_kind tg_kind_pod_any = {"Pod", pod_decode_any, pod_free, pod_key, pod_uid,
                                        pod_rv, tg_pod_unread};

int tg_pod_keep(void *sched, const cJSON *o)
{
    if (pod_json_bound(o))
        return 1;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(spec, "schedulerName");
    return cJSON_IsString(name) && !strcmp(name->valuestring, (const char *)sched);
}

/* ---- PodGroup ---- */
static int pg_decode(const cJSON *o, void **out)
{
    return tg_podgroup_decode(o, &diag, (struct tg_podgroup **)out);
}
static void pg_free(void *o)
{
    struct tg_podgroup *g = o;
    tg_podgroup_free(&g);
}
static const char *pg_key(const void *o)
{
    return ((const struct tg_podgroup *)o)->key;
}
static const char *pg_uid(const void *o)
{
    return ((const struct tg_podgroup *)o)->uid;
}
static const char *pg_rv(const void *o)
{
    return ((const struct tg_podgroup *)o)->rv;
}
const struct tg_kind tg_kind_podgroup = {"PodGroup", pg_decode, pg_free, pg_key, pg_uid, pg_rv};

/* ---- ConfigMap ---- */
static void cm_free(void *o)
{
    struct tg_configmap *cm = o;
    if (!cm)
        return;
    for (uint32_t i = 0; i < cm->ndata; i++) {
        free(cm->keys[i]);
        free(cm->vals[i]);
    }
    free(cm->keys);
    free(cm->vals);
    free(cm->key);
    free(cm->uid);
    free(cm->rv);
    free(cm);
}

static char *jstr_dup(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

static int cm_decode(const cJSON *o, void **out)
{
    *out = NULL;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    if (!cJSON_IsString(name) || !cJSON_IsString(ns))
        return TG_EPARSE;
    struct tg_configmap *cm = calloc(1, sizeof *cm);
    if (!cm)
        return TG_ENOMEM;
    size_t kl = strlen(ns->valuestring) + strlen(name->valuestring) + 2;
    if (!(cm->key = malloc(kl)))
        goto nomem;
    snprintf(cm->key, kl, "%s/%s", ns->valuestring, name->valuestring);
    cm->uid = jstr_dup(md, "uid");
    cm->rv = jstr_dup(md, "resourceVersion");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data"), *e;
    int n = cJSON_IsObject(data) ? cJSON_GetArraySize(data) : 0;
    if (n) {
        cm->keys = calloc((size_t)n, sizeof *cm->keys);
        cm->vals = calloc((size_t)n, sizeof *cm->vals);
        if (!cm->keys || !cm->vals)
            goto nomem;
        cJSON_ArrayForEach(e, data) {
            if (!cJSON_IsString(e))
                continue;
            cm->keys[cm->ndata] = strdup(e->string);
            cm->vals[cm->ndata] = strdup(e->valuestring);
            if (!cm->keys[cm->ndata] || !cm->vals[cm->ndata]) {
                cm->ndata++;
                goto nomem;
            }
            cm->ndata++;
        }
    }
    *out = cm;
    return 0;
nomem:
    cm_free(cm);
    return TG_ENOMEM;
}

const char *tg_configmap_get(const struct tg_configmap *cm, const char *k)
{
    for (uint32_t i = 0; cm && i < cm->ndata; i++)
        if (strcmp(cm->keys[i], k) == 0)
            return cm->vals[i];
    return NULL;
}

static const char *cm_key(const void *o)
{
    return ((const struct tg_configmap *)o)->key;
}
static const char *cm_uid(const void *o)
{
    return ((const struct tg_configmap *)o)->uid;
}
static const char *cm_rv(const void *o)
{
    return ((const struct tg_configmap *)o)->rv;
}
const struct tg_kind tg_kind_configmap = {"ConfigMap", cm_decode, cm_free, cm_key, cm_uid, cm_rv};

/* ---- PriorityClass ---- */
static void pc_free(void *o)
{
    struct tg_prioclass *pc = o;
    tg_prioclass_free(&pc);
}

static int pc_decode(const cJSON *o, void **out)
{
    return tg_prioclass_decode(o, &diag, (struct tg_prioclass **)out);
}

static const char *pc_key(const void *o)
{
    return ((const struct tg_prioclass *)o)->name;
}
static const char *pc_uid(const void *o)
{
    return ((const struct tg_prioclass *)o)->uid;
}
static const char *pc_rv(const void *o)
{
    return ((const struct tg_prioclass *)o)->rv;
}
const struct tg_kind tg_kind_prioclass = {"PriorityClass", pc_decode, pc_free, pc_key, pc_uid,
                                          pc_rv};

/* ---- PodDisruptionBudget ---- */
static int pdb_decode(const cJSON *o, void **out)
{
    return tg_pdb_decode(o, &diag, (struct tg_pdb **)out);
}
static void pdb_free(void *o)
{
    struct tg_pdb *p = o;
    tg_pdb_free(&p);
}
static const char *pdb_key(const void *o)
{
    return ((const struct tg_pdb *)o)->key;
}
static const char *pdb_uid(const void *o)
{
    return ((const struct tg_pdb *)o)->uid;
}
static const char *pdb_rv(const void *o)
{
    return ((const struct tg_pdb *)o)->rv;
}
const struct tg_kind tg_kind_pdb = {"PodDisruptionBudget", pdb_decode, pdb_free, pdb_key, pdb_uid,
                                    pdb_rv};

/* ---- the peers' PodGroups (key "ns/name@group") ---- */
#define PEER_PG(api, fn)                                                                        \
    static int fn(const cJSON *o, void **out)                                                   \
    {                                                                                          \
        return tg_podgroup_decode_api(o, api, &diag, (struct tg_podgroup **)out);               \
    }
PEER_PG(TG_PG_UPSTREAM, pg_up_decode)
PEER_PG(TG_PG_XK8S, pg_xk8s_decode)
PEER_PG(TG_PG_VOLCANO, pg_vc_decode)
PEER_PG(TG_PG_KAI, pg_kai_decode)
const struct tg_kind tg_kind_pg_peer[TG_PG_NAPI] = {
    [TG_PG_TOPOGANG] = {"PodGroup", pg_decode, pg_free, pg_key, pg_uid, pg_rv},
    [TG_PG_UPSTREAM] = {"PodGroup", pg_up_decode, pg_free, pg_key, pg_uid, pg_rv},
    [TG_PG_XK8S] = {"PodGroup", pg_xk8s_decode, pg_free, pg_key, pg_uid, pg_rv},
    [TG_PG_VOLCANO] = {"PodGroup", pg_vc_decode, pg_free, pg_key, pg_uid, pg_rv},
    [TG_PG_KAI] = {"PodGroup", pg_kai_decode, pg_free, pg_key, pg_uid, pg_rv},
};

/* ---- tenant Queues (cluster-scoped, key = name; one collection per API) ---- */
static int queue_decode(const cJSON *o, int api, void **out)
{
    return tg_queue_obj_decode_api(o, api, &diag, (struct tg_queue_obj **)out);
}
#define QUEUE_KIND(api, fn)                                                                     \
    static int fn(const cJSON *o, void **out)                                                   \
    {                                                                                          \
        return queue_decode(o, api, out);                                                      \
    }
QUEUE_KIND(TG_QAPI_TOPOGANG, queue_tg_decode)
QUEUE_KIND(TG_QAPI_KAI, queue_kai_decode)
QUEUE_KIND(TG_QAPI_VOLCANO, queue_vc_decode)
static void queue_free(void *o)
{
    struct tg_queue_obj *q = o;
    tg_queue_obj_free(&q);
}
static const char *queue_key(const void *o)
{
    return tg_str(((const struct tg_queue_obj *)o)->name);
}
static const char *queue_uid(const void *o)
{
    const char *u = ((const struct tg_queue_obj *)o)->uid;
    return u ? u : "";
}
static const char *queue_rv(const void *o)
{
    return ((const struct tg_queue_obj *)o)->rv;
}
const struct tg_kind tg_kind_queue[TG_QAPI_N] = {
    [TG_QAPI_TOPOGANG] = {"Queue", queue_tg_decode, queue_free, queue_key, queue_uid, queue_rv},
    [TG_QAPI_KAI] = {"Queue", queue_kai_decode, queue_free, queue_key, queue_uid, queue_rv},
    [TG_QAPI_VOLCANO] = {"Queue", queue_vc_decode, queue_free, queue_key, queue_uid, queue_rv},
};

/* ---- workloads (key "ns/Kind/name") ---- */
static int wl_decode(const cJSON *o, void **out)
{
    return tg_workload_decode(o, &diag, (struct tg_workload **)out);
}
static void wl_free(void *o)
{
    struct tg_workload *w = o;
    tg_workload_free(&w);
}
static const char *wl_key(const void *o)
{
    return ((const struct tg_workload *)o)->key;
}
static const char *wl_uid(const void *o)
{
    return ((const struct tg_workload *)o)->uid;
}
static const char *wl_rv(const void *o)
{
    return ((const struct tg_workload *)o)->rv;
}
const struct tg_kind tg_kind_workload = {"Workload", wl_decode, wl_free, wl_key, wl_uid, wl_rv};

/* ---- what the engine keeps itself: Namespace, PV, PVC, StorageClass, ResourceClaim ---- */

static char *meta_str(const cJSON *md, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, k);
    return cJSON_IsString(v) && v->valuestring[0] ? strdup(v->valuestring) : NULL;
}

static void ho_free(void *o)
{
    struct tg_handover *h = o;
    if (!h)
        return;
    if (h->obj)
        h->free_obj(h->obj);
    free(h->key);
    free(h->uid);
    free(h->rv);
    free(h);
}

/* The record around obj (which it takes), named from the object's metadata. */
static int ho_make(const cJSON *o, void *obj, void (*free_obj)(void *), void **out)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    struct tg_handover *h = calloc(1, sizeof *h);
    if (!h) {
        free_obj(obj);
        return TG_ENOMEM;
    }
    h->obj = obj;
    h->free_obj = free_obj;
    /* the model's decoder has checked the name (and the namespace where it needs one) */
    int r = cJSON_IsString(ns) && ns->valuestring[0]
                ? asprintf(&h->key, "%s/%s", ns->valuestring, name->valuestring)
                : asprintf(&h->key, "%s", name->valuestring);
    if (r < 0)
        h->key = NULL;
    h->uid = meta_str(md, "uid");
    h->rv = meta_str(md, "resourceVersion");
    if (!h->key) {
        ho_free(h);
        return TG_ENOMEM;
    }
    *out = h;
    return 0;
}

void *tg_handover_take(const void *stored)
{
    struct tg_handover *h = (struct tg_handover *)stored; /* the store's record: only obj moves */
    void *obj = h->obj;
    h->obj = NULL;
    return obj;
}

static const char *ho_key(const void *o)
{
    return ((const struct tg_handover *)o)->key;
}
static const char *ho_uid(const void *o)
{
    const char *u = ((const struct tg_handover *)o)->uid;
    return u ? u : "";
}
static const char *ho_rv(const void *o)
{
    return ((const struct tg_handover *)o)->rv;
}

#define HANDOVER_KIND(var, kindname, type, decode, freefn)                                     \
    static void var##_free_obj(void *p)                                                         \
    {                                                                                          \
        type *x = p;                                                                           \
        freefn(&x);                                                                            \
    }                                                                                          \
    static int var##_decode(const cJSON *o, void **out)                                         \
    {                                                                                          \
        type *x;                                                                               \
        int rc = decode(o, &diag, &x);                                                         \
        return rc ? rc : ho_make(o, x, var##_free_obj, out);                                   \
    }                                                                                          \
    const struct tg_kind var = {kindname, var##_decode, ho_free, ho_key, ho_uid, ho_rv};

HANDOVER_KIND(tg_kind_namespace, "Namespace", struct tg_namespace, tg_namespace_decode,
              tg_namespace_free)
HANDOVER_KIND(tg_kind_pv, "PersistentVolume", struct tg_pv, tg_pv_decode, tg_pv_free)
HANDOVER_KIND(tg_kind_pvc, "PersistentVolumeClaim", struct tg_pvc, tg_pvc_decode, tg_pvc_free)
HANDOVER_KIND(tg_kind_sc, "StorageClass", struct tg_storageclass, tg_sc_decode, tg_sc_free)
HANDOVER_KIND(tg_kind_rclaim, "ResourceClaim", struct tg_rclaim, tg_rclaim_decode,
              tg_rclaim_free)
