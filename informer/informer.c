/* Starts the scheduler's reflectors and reports when all have synced
 * (see informer.h). */
#include "informer/informer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

static void one_synced(void *ud)
{
    struct tg_informer *inf = ud;
    if (inf->synced)
        return;
    for (int i = 0; i < TG_INF_N; i++)
        if (inf->r[i] && !tg_reflector_synced(inf->r[i]))
            return;
    inf->synced = 1;
    if (inf->on_synced)
        inf->on_synced(inf->ud);
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
    const char *sched = o->scheduler_name ? o->scheduler_name : "topogang";
    char pending_sel[512], cm_path[512], cm_sel[300];
    snprintf(pending_sel, sizeof pending_sel, "spec.schedulerName=%s,spec.nodeName=", sched);
    struct tg_reflector_opts ro[TG_INF_N] = {
        [TG_INF_NODES] = {.kind = &tg_kind_node, .path = "/api/v1/nodes"},
        [TG_INF_PODS_PENDING] = {.kind = &tg_kind_pod_spec, .path = "/api/v1/pods",
                                 .field_selector = pending_sel},
        [TG_INF_PODS_BOUND] = {.kind = &tg_kind_pod, .path = "/api/v1/pods",
                               .field_selector = "spec.nodeName!=,status.phase!=Succeeded,"
                                                 "status.phase!=Failed"},
        [TG_INF_PODGROUPS] = {.kind = &tg_kind_podgroup,
                              .path = "/apis/topogang.io/v1alpha1/podgroups"},
        [TG_INF_CONFIG] = {.kind = &tg_kind_configmap},
        [TG_INF_PRIOCLASSES] = {.kind = &tg_kind_prioclass,
                                .path = "/apis/scheduling.k8s.io/v1/priorityclasses"},
        [TG_INF_PDBS] = {.kind = &tg_kind_pdb, .path = "/apis/policy/v1/poddisruptionbudgets"},
    };
    if (o->config_name) {
        snprintf(cm_path, sizeof cm_path, "/api/v1/namespaces/%s/configmaps",
                 o->config_ns ? o->config_ns : "kube-system");
        snprintf(cm_sel, sizeof cm_sel, "metadata.name=%s", o->config_name);
        ro[TG_INF_CONFIG].path = cm_path;
        ro[TG_INF_CONFIG].field_selector = cm_sel;
    }
    int rc = 0;
    for (int i = 0; i < TG_INF_N; i++) {
        if (!ro[i].path || (i == TG_INF_PODGROUPS && o->no_podgroups) ||
            ((i == TG_INF_PRIOCLASSES || i == TG_INF_PDBS) && o->no_preemption_kinds))
            continue;
        ro[i].h = o->h[i];
        ro[i].h.on_synced = NULL;
        ro[i].page_size = o->page_size;
        if ((rc = tg_reflector_new(c, &ro[i], &inf->r[i])))
            goto fail;
    }
    /* Each reflector's first sync checks whether all are in. */
    for (int i = 0; i < TG_INF_N; i++)
        if (inf->r[i])
            tg__reflector_set_synced_hook(inf->r[i], one_synced, inf);
    for (int i = 0; i < TG_INF_N; i++)
        if (inf->r[i])
            tg_reflector_start(inf->r[i]);
    *out = inf;
    return 0;
fail:
    tg_informer_free(&inf);
    return rc;
}

void tg_informer_free(struct tg_informer **pinf)
{
    struct tg_informer *inf = *pinf;
    if (!inf)
        return;
    *pinf = NULL;
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
