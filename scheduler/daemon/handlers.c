/* Informer handlers: every cached object change becomes an engine event, and
 * nothing else happens here (no scheduling, no API writes but the one Event
 * that says a policy edit was refused).
 *
 *   Nodes                    -> tg_engine_node_set / node_remove
 *   Pods, one watch, routed by spec.nodeName (the informer keeps only the
 *   bound ones and this scheduler's unbound ones):
 *     unbound (ours)         -> tg_engine_pending_set / pending_gone
 *     bound (anyone's)       -> tg_engine_bound_set / bound_gone
 *   PodGroups (topogang's and the peers': model/workload.h)
 *                            -> tg_engine_podgroup_set / podgroup_delete
 *   workloads (Job, JobSet, LeaderWorkerSet, PyTorchJob, MPIJob, TrainJob)
 *                            -> tg_engine_workload_set / workload_delete
 *   PriorityClasses          -> tg_engine_pclass_set / pclass_delete
 *   PodDisruptionBudgets     -> tg_engine_pdb_set / pdb_delete
 *   Namespaces, PersistentVolumes, PersistentVolumeClaims, StorageClasses,
 *   ResourceClaims           -> tg_engine_{namespace,pv,pvc,sc,claim}_set / _delete
 *                               (the engine takes the decoded object over:
 *                               informer/kinds.h struct tg_handover)
 *   the policy ConfigMap     -> tg_engine_set_policy (or an InvalidPolicy Event)
 *
 * A pod that gets bound is one update whose old object is unbound and new
 * one bound: it leaves its gang's pending set (tg_engine_pending_gone, which
 * never touches the model's usage) and then joins the usage as bound
 * (tg_engine_bound_set, which turns the binder's assumption of our own bind
 * into the fact). A pod never goes from bound back to unbound (spec.nodeName
 * is set once); were it seen so, it would leave the usage and join the
 * pending set, in that order.
 *
 * The engine keeps pending pods, PodGroups and budgets by pointer: the
 * informer's objects stay valid until their update or delete handler returns
 * (informer/reflector.h), and every one of those reaches the engine.
 *
 * Only Nodes register resource names (model/resources.h). A pod decoded
 * before the Node that offers its resource holds the name aside
 * (tg_pod_resolve): when a Node brings a new name and such a pod was seen,
 * every cached object is handed over again (the resync, before any decision)
 * and each pod resolved on the way in. */
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "model/workload.h"

#include <stdio.h>
#include <string.h>

#define C "scheduler"

static void changed(struct tg__handlers *h)
{
    if (h->on_change)
        h->on_change(h->ud);
}

/* The engine could not take an event: said, and handed over again later
 * (tg__handlers_resync). */
static void nomem(struct tg__handlers *h, const char *what, const char *key, int rc)
{
    if (!rc)
        return;
    tg_error(C, "%s %s: %s (handed over again before the next decision)", what, key,
             tg_strerror(rc));
    h->lost++;
}

/* tg_engine_podgroup_set says nothing: the engine holds pg unless out of memory. */
static void podgroup_set(struct tg__handlers *h, const struct tg_podgroup *pg)
{
    tg_engine_podgroup_set(h->engine, pg);
    if (tg_engine_podgroup(h->engine, pg->key) != pg)
        nomem(h, "PodGroup", pg->key, TG_ENOMEM);
}

/* ---- nodes ---------------------------------------------------------------------------- */

static void node_set(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_node_obj *n = obj;
    struct tg_node_obj *copy = tg_node_clone(n);
    nomem(h, "adding node", tg_str(n->name), copy ? tg_engine_node_set(h->engine, copy) : TG_ENOMEM);
    if (tg_res_count() != h->nres) {
        h->nres = tg_res_count();
        if (h->unoffered && !h->newres) {
            h->newres = 1;
            h->lost++;
        }
    }
    tg_metrics_set(TG_G_NODES, tg_engine_cluster(h->engine)->nready);
    changed(h);
}
static void node_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    node_set(ud, obj);
}
static void node_delete(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    tg_engine_node_remove(h->engine, ((const struct tg_node_obj *)obj)->name);
    tg_metrics_set(TG_G_NODES, tg_engine_cluster(h->engine)->nready);
}

/* ---- pods ------------------------------------------------------------------------------- */

/* A pod's requests of names no Node had registered when it was decoded:
 * those a Node has registered since join its requests. */
static void resolve(struct tg__handlers *h, struct tg_pod *p)
{
    if (!p->nunoffered)
        return;
    if (tg_pod_resolve(p) == TG_ENOMEM)
        nomem(h, "pod", p->key, TG_ENOMEM);
    if (p->nunoffered) {
        h->unoffered = 1;
        tg_debug(C, "pod %s requests %s, which no node offers", p->key, p->unoffered[0].name);
    }
}

/* The store owns the pod; the engine keeps the pointer until the next event
 * of the same pod (it never writes through it). */
static void pending_set(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    struct tg_pod *p = (struct tg_pod *)(uintptr_t)obj;
    resolve(h, p);
    nomem(h, "pending pod", p->key, tg_engine_pending_set(h->engine, p));
    changed(h);
}
static void pending_delete(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    tg_engine_pending_gone(h->engine, obj);
}

static void members(struct tg__handlers *h, const struct tg_pod *p)
{
    char key[512];
    tg_engine_gang_key(h->engine, p, key, sizeof key);
    if (h->on_members && strcmp(key, p->key))
        h->on_members(h->ud, key);
}

static void bound_set(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    struct tg_pod *p = (struct tg_pod *)(uintptr_t)obj;
    resolve(h, p);
    nomem(h, "bound pod", p->key, tg_engine_bound_set(h->engine, p));
    tg_metrics_set(TG_G_BOUND_PODS, (int64_t)tg_engine_cluster(h->engine)->usage.len);
    members(h, p);
    changed(h);
}
static void bound_delete(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_pod *p = obj;
    tg_engine_bound_gone(h->engine, p->key);
    tg_metrics_set(TG_G_BOUND_PODS, (int64_t)tg_engine_cluster(h->engine)->usage.len);
    members(h, p);
    changed(h);
}

const struct tg_pod *tg__bound_pod(const struct tg_store *pods, const char *key)
{
    const struct tg_pod *p = pods ? tg_store_get(pods, key) : NULL;
    return p && p->node ? p : NULL;
}

/* The one pod watch: each object goes where its spec.nodeName says. */
static void pod_add(void *ud, const void *obj)
{
    if (((const struct tg_pod *)obj)->node)
        bound_set(ud, obj);
    else
        pending_set(ud, obj);
}
static void pod_update(void *ud, const void *old, const void *obj)
{
    const struct tg_pod *a = old, *b = obj;
    if (!a->node && !b->node) {
        pending_set(ud, obj);
        return;
    }
    if (a->node && b->node) {
        bound_set(ud, obj);
        return;
    }
    if (a->node)
        bound_delete(ud, old);
    else
        pending_delete(ud, old);
    pod_add(ud, obj);
}
static void pod_delete(void *ud, const void *obj)
{
    if (((const struct tg_pod *)obj)->node)
        bound_delete(ud, obj);
    else
        pending_delete(ud, obj);
}

/* ---- PodGroups, PriorityClasses, PodDisruptionBudgets ----------------------------------- */

static void podgroup_add(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_podgroup *pg = obj;
    podgroup_set(h, pg);
    if (h->on_podgroup)
        h->on_podgroup(h->ud, pg->key);
    changed(h);
}
static void podgroup_update(void *ud, const void *old, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_podgroup *a = old, *b = obj;
    podgroup_set(h, b); /* a status-only update wakes nothing */
    /* our own status patches come back as updates: only a spec change is news */
    if (a->min_member != b->min_member || a->required != b->required ||
        a->preferred != b->preferred || a->strategy != b->strategy || a->priority != b->priority ||
        a->prio_class != b->prio_class) {
        if (h->on_podgroup)
            h->on_podgroup(h->ud, b->key);
        changed(h);
    }
}
static void podgroup_delete(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    tg_engine_podgroup_delete(h->engine, ((const struct tg_podgroup *)obj)->key);
    changed(h);
}

/* The peers' PodGroups: keyed "ns/name@group"; their gang is "ns/name". */
static void peer_refresh(struct tg__handlers *h, const struct tg_podgroup *pg)
{
    char key[512];
    snprintf(key, sizeof key, "%s/%s", tg_str(pg->ns), tg_str(pg->name));
    if (h->on_podgroup)
        h->on_podgroup(h->ud, key);
}
static void peer_add(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    podgroup_set(h, obj);
    peer_refresh(h, obj);
    changed(h);
}
static int str_eq(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}
static void peer_update(void *ud, const void *old, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_podgroup *a = old, *b = obj;
    podgroup_set(h, b);
    /* the upstream one's status is ours: only a spec change is news */
    if (a->min_member != b->min_member || a->timeout_s != b->timeout_s || a->topo_req != b->topo_req ||
        a->topo_pref != b->topo_pref || a->tier != b->tier || a->tier_hard != b->tier_hard ||
        a->priority != b->priority || a->prio_class != b->prio_class || !str_eq(a->problem, b->problem)) {
        peer_refresh(h, b);
        changed(h);
    }
}

static void workload_set(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_workload *w = obj;
    nomem(h, "workload", w->key, tg_engine_workload_set(h->engine, w));
    changed(h);
}
static void workload_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    workload_set(ud, obj);
}
static void workload_delete(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    tg_engine_workload_delete(h->engine, ((const struct tg_workload *)obj)->key);
    changed(h);
}

static void pclass_set(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_prioclass *c = obj;
    struct tg_pclass pc = {c->value, c->never, c->global_default};
    nomem(h, "PriorityClass", c->name, tg_engine_pclass_set(h->engine, tg_intern(c->name), &pc));
    changed(h);
}
static void pclass_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    pclass_set(ud, obj);
}
static void pclass_delete(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    tg_engine_pclass_delete(h->engine, tg_intern(((const struct tg_prioclass *)obj)->name));
    changed(h);
}

static void pdb_set(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_pdb *b = obj;
    nomem(h, "PodDisruptionBudget", b->key, tg_engine_pdb_set(h->engine, b));
}
static void pdb_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    pdb_set(ud, obj);
}
static void pdb_delete(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    tg_engine_pdb_delete(h->engine, ((const struct tg_pdb *)obj)->key);
}

/* ---- what constraints read: the engine keeps these objects itself ---------------------- */

/* The object of a stored record goes to the engine (once: a resync finds it
 * taken and has nothing to hand again). The engine frees it when it cannot
 * keep it (out of memory): then it is missing until it changes, said here. */
static void handover(struct tg__handlers *h, const void *rec, int (*set)(struct tg_engine *, void *))
{
    void *obj = tg_handover_take(rec);
    if (!obj)
        return;
    int rc = set(h->engine, obj);
    if (rc)
        tg_error(C, "%s: %s: the scheduler does not know it until it changes again",
                 ((const struct tg_handover *)rec)->key, tg_strerror(rc));
}

/* "ns/name" of a record: the interned namespace and name. */
static void ns_name(const void *rec, uint32_t *ns, uint32_t *name)
{
    const char *key = ((const struct tg_handover *)rec)->key, *sl = strchr(key, '/');
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", sl ? (int)(sl - key) : 0, key);
    *ns = tg_intern(buf);
    *name = tg_intern(sl ? sl + 1 : key);
}

#define HANDOVER_HANDLERS(pfx, type, setfn)                                                    \
    static int pfx##_engine_set(struct tg_engine *e, void *o) { return setfn(e, (type *)o); }   \
    static void pfx##_set(void *ud, const void *rec) { handover(ud, rec, pfx##_engine_set); }  \
    static void pfx##_update(void *ud, const void *old, const void *rec)                      \
    {                                                                                          \
        (void)old;                                                                             \
        handover(ud, rec, pfx##_engine_set);                                                   \
    }
HANDOVER_HANDLERS(ns, struct tg_namespace, tg_engine_namespace_set)
HANDOVER_HANDLERS(pv, struct tg_pv, tg_engine_pv_set)
HANDOVER_HANDLERS(pvc, struct tg_pvc, tg_engine_pvc_set)
HANDOVER_HANDLERS(sc, struct tg_storageclass, tg_engine_sc_set)
HANDOVER_HANDLERS(claim, struct tg_rclaim, tg_engine_claim_set)

static void ns_delete(void *ud, const void *rec)
{
    struct tg__handlers *h = ud;
    tg_engine_namespace_delete(h->engine, tg_intern(((const struct tg_handover *)rec)->key));
}
static void pv_delete(void *ud, const void *rec)
{
    struct tg__handlers *h = ud;
    tg_engine_pv_delete(h->engine, tg_intern(((const struct tg_handover *)rec)->key));
}
static void sc_delete(void *ud, const void *rec)
{
    struct tg__handlers *h = ud;
    tg_engine_sc_delete(h->engine, tg_intern(((const struct tg_handover *)rec)->key));
}
static void pvc_delete(void *ud, const void *rec)
{
    struct tg__handlers *h = ud;
    uint32_t ns, name;
    ns_name(rec, &ns, &name);
    tg_engine_pvc_delete(h->engine, ns, name);
}
static void claim_delete(void *ud, const void *rec)
{
    struct tg__handlers *h = ud;
    uint32_t ns, name;
    ns_name(rec, &ns, &name);
    tg_engine_claim_delete(h->engine, ns, name);
}

/* ---- the policy ConfigMap ------------------------------------------------------------- */

static void on_event_written(void *ud, const struct tg_resp *r)
{
    (void)ud;
    if (r->err && r->status != 404)
        tg_warn(C, "Event failed: %s (HTTP %ld)", r->msg ? r->msg : tg_strerror(r->err), r->status);
}

/* A refused policy: a log line, a metric and a Warning Event on the ConfigMap. */
static void policy_refused(struct tg__handlers *h, const struct tg_configmap *cm, const char *why)
{
    tg_metrics_inc(TG_M_CONFIG_REJECTED, 1);
    tg_error(C, "policy rejected, the last good policy stays in force: %s", why);
    const char *slash = strchr(cm->key, '/');
    char ns[128];
    snprintf(ns, sizeof ns, "%.*s", slash ? (int)(slash - cm->key) : 0, cm->key);
    struct tg_event_spec e = {.ns = ns, .kind = "ConfigMap", .api_version = "v1",
                              .name = slash ? slash + 1 : cm->key, .uid = cm->uid,
                              .type = "Warning", .reason = "InvalidPolicy", .action = "Reload",
                              .note = why};
    if (tg_api_create_event(h->client, &e, on_event_written, NULL) == 0)
        tg_metrics_inc(TG_M_EVENTS, 1);
}

static void config_set(void *ud, const void *obj)
{
    struct tg__handlers *h = ud;
    const struct tg_configmap *cm = obj;
    const char *text = tg_configmap_get(cm, "config.yaml");
    struct tg_policy p;
    struct tg_sb err = {0};
    char origin[300];
    snprintf(origin, sizeof origin, "ConfigMap %s config.yaml", cm->key);
    if (!text)
        tg_sb_printf(&err, "%s: the key config.yaml is missing", origin);
    else if (!tg_policy_parse(text, strlen(text), origin, &p, &err) &&
             tg_engine_set_policy(h->engine, &p))
        tg_sb_printf(&err, "%s: out of memory applying the policy", origin);
    if (err.len) {
        policy_refused(h, cm, tg_sb_str(&err));
        tg_sb_free(&err);
        return;
    }
    if (strcmp(p.scheduler_name, h->scheduler_name))
        tg_warn(C, "policy schedulerName %s differs from --scheduler-name %s; pods are watched "
                   "for %s", p.scheduler_name, h->scheduler_name, h->scheduler_name);
    tg_metrics_inc(TG_M_CONFIG_OK, 1);
    tg_info(C, "policy reloaded from %s (%u levels, strategy %s, preemption %s, reserveAfter %llds)",
            cm->key, p.nlevels, p.strategy == TG_STRATEGY_SPREAD ? "spread" : "pack",
            p.preemption ? "on" : "off", (long long)p.reserve_after_s);
    if (h->on_policy)
        h->on_policy(h->ud, &p);
    changed(h);
}
static void config_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    config_set(ud, obj);
}

/* ---- which gang definitions are read --------------------------------------------------- */

/* The optional collection of a --gang-sources name, or -1. */
static int source_of(const char *name, size_t n)
{
    for (int api = 1; api < TG_PG_NAPI; api++)
        if (strlen(tg_pg_apis[api].flag) == n && !strncmp(name, tg_pg_apis[api].flag, n))
            return TG_INF_OF_PG_API(api);
    for (int k = 1; k < TG_WL_N; k++)
        if (strlen(tg_wl_kinds[k].flag) == n && !strncmp(name, tg_wl_kinds[k].flag, n))
            return TG_INF_OF_WL_KIND(k);
    return -1;
}

int tg__gang_sources_parse(const char *list, unsigned *mask, char *err, size_t n)
{
    *mask = 0;
    if (!strcmp(list, "none"))
        return 0;
    if (!strcmp(list, "all")) {
        *mask = TG_INF_GANG_SOURCES_ALL;
        return 0;
    }
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int k = source_of(p, len);
        if (k < 0) {
            size_t o = (size_t)snprintf(err, n, "unknown gang source '%.*s' (all, none, or a list of:",
                                        (int)len, p);
            for (int api = 1; api < TG_PG_NAPI && o < n; api++)
                o += (size_t)snprintf(err + o, n - o, " %s", tg_pg_apis[api].flag);
            for (int w = 1; w < TG_WL_N && o < n; w++)
                o += (size_t)snprintf(err + o, n - o, " %s", tg_wl_kinds[w].flag);
            if (o < n)
                snprintf(err + o, n - o, ")");
            return TG_EINVAL;
        }
        *mask |= TG_INF_BIT(k);
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Discovery is done: say what is read, and which owners form gangs. */
static void discovered(void *ud, unsigned watched)
{
    struct tg__handlers *h = ud;
    struct tg_sb yes = {0}, no = {0};
    for (int k = 0; k < TG_INF_NAMESPACES; k++) {
        if (k != TG_INF_PODGROUPS && k < TG_INF_PG_UPSTREAM)
            continue;
        if (k != TG_INF_PODGROUPS && !(h->gang_sources & TG_INF_BIT(k)))
            continue;
        char path[200];
        tg_informer_path((enum tg_inf_kind)k, path, sizeof path);
        struct tg_sb *b = watched & TG_INF_BIT(k) ? &yes : &no;
        tg_sb_printf(b, "%s%s", b->len ? ", " : "", path + 6); /* less "/apis/" */
    }
    unsigned kinds = 0;
    for (int w = 1; w < TG_WL_N; w++)
        if (watched & TG_INF_BIT(TG_INF_OF_WL_KIND(w)))
            kinds |= 1u << w;
    if (kinds & (1u << TG_WL_TRAINJOB)) /* a TrainJob's pods are its JobSet's */
        kinds |= 1u << TG_WL_JOBSET;
    tg_engine_set_owner_kinds(h->engine, kinds);
    tg_info(C, "gang definitions read from: %s; not served (not watched): %s",
            yes.len ? tg_sb_str(&yes) : "-", no.len ? tg_sb_str(&no) : "-");
    tg_sb_free(&yes);
    tg_sb_free(&no);
    for (int k = TG_INF_QUEUES_TG; k <= TG_INF_QUEUES_VOLCANO; k++) { /* tenant Queues */
        char path[200];
        tg_informer_path((enum tg_inf_kind)k, path, sizeof path);
        struct tg_sb *b = watched & TG_INF_BIT(k) ? &yes : &no;
        tg_sb_printf(b, "%s%s", b->len ? ", " : "", path + 6);
    }
    tg_info(C, "tenant Queues read from: %s; not served (not watched): %s",
            yes.len ? tg_sb_str(&yes) : "-", no.len ? tg_sb_str(&no) : "-");
    if (!(watched & TG_INF_BIT(TG_INF_RCLAIMS)))
        tg_info(C, "resource.k8s.io/v1 resourceclaims not served: pods with resource claims "
                   "wait (\"ResourceClaim ... not found\")");
    tg_sb_free(&yes);
    tg_sb_free(&no);
}

static void synced(void *ud)
{
    struct tg__handlers *h = ud;
    if (h->on_synced)
        h->on_synced(h->ud);
}

/* An object the informer could not decode (it logged which and why). */
static void decode_failed(void *ud, const char *kind)
{
    (void)ud;
    tg_metrics_inc(!strcmp(kind, "Node")       ? TG_M_DECODE_FAIL_NODE
                   : !strcmp(kind, "Pod")      ? TG_M_DECODE_FAIL_POD
                   : !strcmp(kind, "PodGroup") ? TG_M_DECODE_FAIL_PODGROUP
                                               : TG_M_DECODE_FAIL_OTHER,
                   1);
}

void tg__handlers_wire(struct tg__handlers *h, struct tg_informer_opts *io)
{
    io->h[TG_INF_NODES] = (struct tg_handlers){node_set, node_update, node_delete, NULL, h};
    io->h[TG_INF_PODS] = (struct tg_handlers){pod_add, pod_update, pod_delete, NULL, h};
    io->h[TG_INF_PODGROUPS] =
        (struct tg_handlers){podgroup_add, podgroup_update, podgroup_delete, NULL, h};
    io->h[TG_INF_PRIOCLASSES] =
        (struct tg_handlers){pclass_set, pclass_update, pclass_delete, NULL, h};
    io->h[TG_INF_PDBS] = (struct tg_handlers){pdb_set, pdb_update, pdb_delete, NULL, h};
    io->h[TG_INF_CONFIG] = (struct tg_handlers){config_set, config_update, NULL, NULL, h};
    for (int k = TG_INF_PG_UPSTREAM; k <= TG_INF_PG_KAI; k++)
        io->h[k] = (struct tg_handlers){peer_add, peer_update, podgroup_delete, NULL, h};
    for (int k = TG_INF_JOBS; k <= TG_INF_TRAINJOBS; k++)
        io->h[k] = (struct tg_handlers){workload_set, workload_update, workload_delete, NULL, h};
    io->h[TG_INF_NAMESPACES] = (struct tg_handlers){ns_set, ns_update, ns_delete, NULL, h};
    io->h[TG_INF_PVS] = (struct tg_handlers){pv_set, pv_update, pv_delete, NULL, h};
    io->h[TG_INF_PVCS] = (struct tg_handlers){pvc_set, pvc_update, pvc_delete, NULL, h};
    io->h[TG_INF_SCS] = (struct tg_handlers){sc_set, sc_update, sc_delete, NULL, h};
    io->h[TG_INF_RCLAIMS] = (struct tg_handlers){claim_set, claim_update, claim_delete, NULL, h};
    for (int k = 0; k < TG_INF_N; k++)
        io->h[k].on_decode_failed = decode_failed;
    io->optional = h->gang_sources | TG_INF_CONSTRAINT_KINDS;
    io->on_discovered = discovered;
    io->on_synced = synced;
    io->ud = h;
}

void tg__handlers_resync(struct tg__handlers *h, const struct tg_informer *inf, int64_t now_ms)
{
    /* nodes and gang definitions before the pods that need them */
    static const int order[] = {TG_INF_NODES, TG_INF_PRIOCLASSES, TG_INF_PDBS, TG_INF_PODGROUPS,
                                TG_INF_PG_UPSTREAM, TG_INF_PG_XK8S, TG_INF_PG_VOLCANO, TG_INF_PG_KAI,
                                TG_INF_JOBS, TG_INF_JOBSETS, TG_INF_LWS, TG_INF_PYTORCHJOBS,
                                TG_INF_MPIJOBS, TG_INF_TRAINJOBS, TG_INF_PODS};
    if (!h->lost || !inf || now_ms - h->resync_ms < 200)
        return;
    uint32_t lost = h->lost;
    int newres = h->newres;
    h->lost = 0;
    h->newres = 0;
    h->resync_ms = now_ms;
    struct tg_informer_opts io = {0};
    tg__handlers_wire(h, &io);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const struct tg_store *s = tg_informer_store(inf, order[i]);
        void (*update)(void *, const void *, const void *) = io.h[order[i]].on_update;
        for (uint32_t k = 0; s && update && k < tg_store_len(s); k++)
            if (order[i] != TG_INF_PODS || ((const struct tg_pod *)tg_store_at(s, k))->node)
                update(h, tg_store_at(s, k), tg_store_at(s, k));
    }
    /* the pending pods last, after the bound ones that share their gangs */
    const struct tg_store *pods = tg_informer_store(inf, TG_INF_PODS);
    for (uint32_t k = 0; pods && k < tg_store_len(pods); k++)
        if (!((const struct tg_pod *)tg_store_at(pods, k))->node)
            pending_set(h, tg_store_at(pods, k));
    tg_info(C, "resync after %u lost event(s) or decision(s)%s: every cached object handed to the "
               "engine again%s", lost - (uint32_t)newres,
            newres ? " and a resource name a Node brought that pods asked for" : "",
            h->lost ? "; some still lost: no decisions, again soon" : "");
}
