/* Starts the scheduler's reflectors (after discovering the optional
 * collections, when any is wanted) and reports when all have synced (see
 * informer.h). */
#include "informer/informer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/queues.h"
#include "model/workload.h"
#include "util/err.h"
#include "util/log.h"

static void one_synced(void *ud)
{
    struct tg_informer *inf = ud;
    if (inf->synced || inf->disc)
        return;
    for (int i = 0; i < TG_INF_N; i++)
        if (inf->r[i] && !tg_reflector_synced(inf->r[i]))
            return;
    inf->synced = 1;
    if (inf->on_synced)
        inf->on_synced(inf->ud);
}

/* What each collection is, for discovery and paths. */
static void apiref(int k, struct tg_apiref *a)
{
    *a = (struct tg_apiref){NULL, NULL, NULL};
    if (k == TG_INF_PODGROUPS) {
        *a = (struct tg_apiref){"topogang.io", "v1alpha1", "podgroups"};
    } else if (k >= TG_INF_PG_UPSTREAM && k <= TG_INF_PG_KAI) {
        const struct tg_pg_apiinfo *p = &tg_pg_apis[k - TG_INF_PG_UPSTREAM + 1];
        *a = (struct tg_apiref){p->group, p->version, "podgroups"};
    } else if (k >= TG_INF_JOBS && k <= TG_INF_TRAINJOBS) {
        const struct tg_wl_kindinfo *w = &tg_wl_kinds[k - TG_INF_JOBS + 1];
        *a = (struct tg_apiref){w->group, w->version, w->resource};
    } else if (k >= TG_INF_QUEUES_TG && k <= TG_INF_QUEUES_VOLCANO) {
        const struct tg_queue_apiinfo *q = &tg_queue_apis[k - TG_INF_QUEUES_TG];
        *a = (struct tg_apiref){q->group, q->version, "queues"};
    } else if (k == TG_INF_SCS) {
        *a = (struct tg_apiref){"storage.k8s.io", "v1", "storageclasses"};
    } else if (k == TG_INF_RCLAIMS) {
        *a = (struct tg_apiref){"resource.k8s.io", "v1", "resourceclaims"};
    }
}

/* Core collections (always served) are not asked of discovery. */
static const char *const core_paths[TG_INF_N] = {
    [TG_INF_NAMESPACES] = "/api/v1/namespaces",
    [TG_INF_PVS] = "/api/v1/persistentvolumes",
    [TG_INF_PVCS] = "/api/v1/persistentvolumeclaims",
};

const struct tg_kind *tg_informer_kind(enum tg_inf_kind k)
{
    switch (k) {
    case TG_INF_NODES: return &tg_kind_node;
    case TG_INF_PODS: return &tg_kind_pod_any;
    case TG_INF_PODGROUPS: return &tg_kind_podgroup;
    case TG_INF_CONFIG: return &tg_kind_configmap;
    case TG_INF_PRIOCLASSES: return &tg_kind_prioclass;
    case TG_INF_PDBS: return &tg_kind_pdb;
    case TG_INF_NAMESPACES: return &tg_kind_namespace;
    case TG_INF_PVS: return &tg_kind_pv;
    case TG_INF_PVCS: return &tg_kind_pvc;
    case TG_INF_SCS: return &tg_kind_sc;
    case TG_INF_RCLAIMS: return &tg_kind_rclaim;
    case TG_INF_QUEUES_TG:
    case TG_INF_QUEUES_KAI:
    case TG_INF_QUEUES_VOLCANO: return &tg_kind_queue[k - TG_INF_QUEUES_TG];
    case TG_INF_N: return NULL;
    default: return k <= TG_INF_PG_KAI ? &tg_kind_pg_peer[k - TG_INF_PG_UPSTREAM + 1] : &tg_kind_workload;
    }
}

const char *tg_informer_path(enum tg_inf_kind k, char *buf, size_t n)
{
    struct tg_apiref a;
    apiref((int)k, &a);
    if (core_paths[k])
        snprintf(buf, n, "%s", core_paths[k]);
    else if (a.group)
        snprintf(buf, n, "/apis/%s/%s/%s", a.group, a.version, a.resource);
    else
        snprintf(buf, n, "%s", "");
    return buf;
}

static int start_all(struct tg_informer *inf)
{
    int rc;
    for (int i = 0; i < TG_INF_N; i++) {
        if (!(inf->watched & TG_INF_BIT(i)))
            continue;
        if ((rc = tg_reflector_new(inf->client, &inf->ro[i], &inf->r[i])))
            return rc;
    }
    /* Each reflector's first sync checks whether all are in. */
    for (int i = 0; i < TG_INF_N; i++)
        if (inf->r[i])
            tg__reflector_set_synced_hook(inf->r[i], one_synced, inf);
    for (int i = 0; i < TG_INF_N; i++)
        if (inf->r[i] && (rc = tg_reflector_start(inf->r[i])))
            return rc;
    return 0;
}

/* The collections asked about, in discovery order. */
static void ask_list(struct tg_informer *inf)
{
    inf->nwant = 0;
    for (int i = 0; i < TG_INF_N; i++) {
        if (!(inf->watched & TG_INF_BIT(i)) || (i != TG_INF_PODGROUPS && i < TG_INF_PG_UPSTREAM) ||
            core_paths[i])
            continue;
        apiref(i, &inf->want[inf->nwant]);
        inf->want_kind[inf->nwant++] = i;
    }
}

/* What may start after the first discovery: every optional collection but
 * the workload kinds (which owners form gangs is settled at start). */
#define LATE_KINDS (TG_INF_OPTIONAL_ALL & ~(((1u << (TG_INF_TRAINJOBS + 1)) - 1) & \
                                           ~((1u << TG_INF_JOBS) - 1)))

static void arm_late(struct tg_informer *inf);

static void late_discovered(void *ud, const uint8_t *served)
{
    struct tg_informer *inf = ud;
    unsigned found = 0;
    tg_discovery_free(&inf->late_disc);
    for (int j = 0; j < inf->nlate; j++) {
        int k = inf->late_kind[j];
        if (!served[j] || inf->r[k])
            continue;
        int rc = tg_reflector_new(inf->client, &inf->ro[k], &inf->r[k]);
        if (!rc && (rc = tg_reflector_start(inf->r[k])))
            tg_reflector_free(&inf->r[k]);
        if (rc) {
            tg_error("informer", "starting the reflector of %s: %s", inf->ro[k].path, tg_strerror(rc));
            continue;                   /* asked again next round */
        }
        tg_info("informer", "%s is served now: watched from now on", inf->ro[k].path);
        inf->watched |= TG_INF_BIT(k);
        inf->missing &= ~TG_INF_BIT(k);
        found |= TG_INF_BIT(k);
    }
    if (found && inf->on_discovered)
        inf->on_discovered(inf->ud, inf->watched);
    arm_late(inf);
}

static void on_late_timer(uv_timer_t *t)
{
    struct tg_informer *inf = t->data;
    if (inf->late_disc || !inf->missing)
        return;
    inf->nlate = 0;
    for (int i = 0; i < TG_INF_N; i++) {
        if (!(inf->missing & TG_INF_BIT(i)))
            continue;
        apiref(i, &inf->late_want[inf->nlate]);
        inf->late_kind[inf->nlate++] = i;
    }
    int rc = tg_discovery_start(inf->client, inf->late_want, inf->nlate, late_discovered, inf,
                                &inf->late_disc);
    if (rc) {
        tg_warn("informer", "asking discovery again: %s", tg_strerror(rc));
        arm_late(inf);
    }
}

/* The next round of discovery for the collections still missing. */
static void arm_late(struct tg_informer *inf)
{
    if (!inf->missing || !inf->rediscover_ms)
        return;
    if (!inf->late_timer) {
        if (!(inf->late_timer = malloc(sizeof *inf->late_timer))) {
            tg_warn("informer", "%s", "out of memory: collections not served at start stay unread");
            return;
        }
        uv_timer_init(tg_client_loop(inf->client), inf->late_timer);
        inf->late_timer->data = inf;
    }
    uv_timer_start(inf->late_timer, on_late_timer, inf->rediscover_ms, 0);
}

static void discovered(void *ud, const uint8_t *served)
{
    struct tg_informer *inf = ud;
    for (int j = 0; j < inf->nwant; j++)
        if (!served[j]) {
            inf->watched &= ~TG_INF_BIT(inf->want_kind[j]);
            inf->missing |= TG_INF_BIT(inf->want_kind[j]) & LATE_KINDS;
        }
    tg_discovery_free(&inf->disc);
    if (inf->on_discovered)
        inf->on_discovered(inf->ud, inf->watched);
    int rc = start_all(inf);
    if (rc)
        tg_error("informer", "starting the reflectors: %s", tg_strerror(rc));
    arm_late(inf);
}

int tg_informer_start(struct tg_client *c, const struct tg_informer_opts *o,
                      struct tg_informer **out)
{
    *out = NULL;
    struct tg_informer *inf = calloc(1, sizeof *inf);
    if (!inf)
        return TG_ENOMEM;
    inf->on_synced = o->on_synced;
    inf->ud = o->ud;
    inf->client = c;
    inf->on_discovered = o->on_discovered;
    inf->rediscover_ms = o->rediscover_ms;
    const char *sched = o->scheduler_name ? o->scheduler_name : "topogang";
    snprintf(inf->sched, sizeof inf->sched, "%s", sched);
    struct tg_reflector_opts *ro = inf->ro;
    for (int i = 0; i < TG_INF_N; i++)
        ro[i].kind = tg_informer_kind((enum tg_inf_kind)i);
    ro[TG_INF_NODES].path = "/api/v1/nodes";
    ro[TG_INF_PODS].path = "/api/v1/pods";
    ro[TG_INF_PODS].field_selector = "status.phase!=Succeeded,status.phase!=Failed";
    ro[TG_INF_PODS].keep = tg_pod_keep;
    ro[TG_INF_PODS].keep_ud = inf->sched;
    ro[TG_INF_PODGROUPS].path = "/apis/topogang.io/v1alpha1/podgroups";
    ro[TG_INF_PRIOCLASSES].path = "/apis/scheduling.k8s.io/v1/priorityclasses";
    ro[TG_INF_PDBS].path = "/apis/policy/v1/poddisruptionbudgets";
    for (int i = TG_INF_PG_UPSTREAM; i < TG_INF_N; i++)
        ro[i].path = tg_informer_path((enum tg_inf_kind)i, inf->paths[i], sizeof inf->paths[i]);
    if (o->config_name) {
        snprintf(inf->cm_path, sizeof inf->cm_path, "/api/v1/namespaces/%s/configmaps",
                 o->config_ns ? o->config_ns : "kube-system");
        snprintf(inf->cm_sel, sizeof inf->cm_sel, "metadata.name=%s", o->config_name);
        ro[TG_INF_CONFIG].path = inf->cm_path;
        ro[TG_INF_CONFIG].field_selector = inf->cm_sel;
    }
    for (int i = 0; i < TG_INF_N; i++) {
        if (!ro[i].path || (i == TG_INF_PODGROUPS && o->no_podgroups) ||
            ((i == TG_INF_PRIOCLASSES || i == TG_INF_PDBS) && o->no_preemption_kinds) ||
            (i >= TG_INF_PG_UPSTREAM && !(o->optional & TG_INF_BIT(i))))
            continue;
        inf->watched |= TG_INF_BIT(i);
        ro[i].h = o->h[i];
        ro[i].h.on_synced = NULL;
        ro[i].page_size = o->page_size;
    }
    int rc;
    if (o->optional & TG_INF_OPTIONAL_ALL) {
        ask_list(inf);
        rc = tg_discovery_start(c, inf->want, inf->nwant, discovered, inf, &inf->disc);
    } else {
        rc = start_all(inf);
    }
    if (rc) {
        tg_informer_free(&inf);
        return rc;
    }
    *out = inf;
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    free(h);
}

void tg_informer_free(struct tg_informer **pinf)
{
    struct tg_informer *inf = *pinf;
    if (!inf)
        return;
    *pinf = NULL;
    tg_discovery_free(&inf->disc);
    tg_discovery_free(&inf->late_disc);
    if (inf->late_timer) {
        uv_timer_stop(inf->late_timer);
        uv_close((uv_handle_t *)inf->late_timer, on_timer_closed);
    }
    for (int i = 0; i < TG_INF_N; i++)
        tg_reflector_free(&inf->r[i]);
    free(inf);
}

int tg_informer_synced(const struct tg_informer *inf)
{
    return inf->synced;
}

const struct tg_store *tg_informer_store(const struct tg_informer *inf, enum tg_inf_kind k)
{
    return inf->r[k] ? tg_reflector_store(inf->r[k]) : NULL;
}
