/* Carrying out a PREEMPT decision, as kube-scheduler evicts:
 *   1. every victim pod gets the condition DisruptionTarget (status True,
 *      reason PreemptionByScheduler, a message naming the preemptor) by a
 *      strategic merge patch of pods/status, then
 *   2. is DELETEd with its own grace period (a uid precondition: never a
 *      namesake). A kubelet finalises it; meanwhile the informer shows it
 *      Terminating (it still holds its node), then gone, and the engine wakes
 *      the nominated gang itself.
 *   3. Events: Preempted (Warning) on every victim pod and on each victim
 *      gang's PodGroup, naming the preemptor and why; Preempting (Normal) on
 *      the preemptor's PodGroup (its pod for a gang of one) listing the
 *      victims and the domain. A reclaim between tenant queues (issue 19)
 *      writes Reclaimed and Reclaiming instead, the reason naming both
 *      queues with their fair shares and allocations.
 *   4. status.nominatedNodeName on each preemptor member: where it will go.
 * A condition patch that fails for another reason than the pod being gone
 * does not stop the delete: the room matters more than the condition.
 * Metrics: topogang_preemptions_total, topogang_preemption_victims_total
 * {kind="gang"|"pod"}, topogang_preempted_pods_total. */
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C "preempt"

/* One victim pod between its condition patch and its delete. */
struct victim {
    struct tg__evictor *ev;
    struct victim *next, *prev;
    char *ns, *name, *uid;              /* owned */
};

struct tg__evictor {
    struct tg_engine *e;
    struct tg_client *c;
    struct victim live;                 /* sentinel: victims with a request in flight */
};

int tg__evict_new(struct tg_engine *e, struct tg_client *c, struct tg__evictor **out)
{
    struct tg__evictor *ev = calloc(1, sizeof *ev);
    *out = ev;
    if (!ev)
        return TG_ENOMEM;
    ev->e = e;
    ev->c = c;
    ev->live.next = ev->live.prev = &ev->live;
    return 0;
}

static void victim_free(struct victim *v)
{
    v->prev->next = v->next;
    v->next->prev = v->prev;
    free(v->ns);
    free(v->name);
    free(v->uid);
    free(v);
}

void tg__evict_free(struct tg__evictor **pev)
{
    struct tg__evictor *ev = *pev;
    if (!ev)
        return;
    *pev = NULL;
    while (ev->live.next != &ev->live)
        victim_free(ev->live.next);
    free(ev);
}

/* ---- one victim pod ------------------------------------------------------------------------- */

static void on_written(void *ud, const struct tg_resp *r)
{
    if (r->err && r->status != 404)
        tg_warn(C, "%s failed: %s (HTTP %ld)", (const char *)ud,
                r->msg ? r->msg : tg_strerror(r->err), r->status);
}

static void on_deleted(void *ud, const struct tg_resp *r)
{
    struct victim *v = ud;
    if (r->err && r->status != 404) {
        tg_metrics_inc(TG_M_EVICTION_ERRORS, 1);
        tg_warn(C, "delete of victim %s/%s failed: %s (HTTP %ld)", v->ns, v->name,
                r->msg ? r->msg : tg_strerror(r->err), r->status);
    }
    victim_free(v);
}

static void on_condition(void *ud, const struct tg_resp *r)
{
    struct victim *v = ud;
    if (r->status == 404 || r->err == TG_EFENCED) {
        victim_free(v); /* gone already, or this process stood down: no delete */
        return;
    }
    if (r->err)
        tg_warn(C, "DisruptionTarget on %s/%s failed: %s (HTTP %ld); deleting anyway", v->ns,
                v->name, r->msg ? r->msg : tg_strerror(r->err), r->status);
    if (tg_api_delete_pod(v->ev->c, v->ns, v->name, -1, v->uid, on_deleted, v)) {
        tg_metrics_inc(TG_M_EVICTION_ERRORS, 1);
        victim_free(v);
    }
}

static void event(struct tg__evictor *ev, struct tg_event_spec *e)
{
    if (!e->action)
        e->action = "Preempting";
    if (tg_api_create_event(ev->c, e, on_written, "Event") == 0)
        tg_metrics_inc(TG_M_EVENTS, 1);
}

/* Condition, then delete, of the bound pod key; an Event on the pod. */
static int evict_pod(struct tg__evictor *ev, const struct tg_store *bound, const char *key,
                     const char *cond, const char *note, int reclaim)
{
    const struct tg_pod *p = tg__bound_pod(bound, key);
    if (!p)
        return 0; /* gone already */
    struct victim *v = calloc(1, sizeof *v);
    if (!v || !(v->ns = strdup(tg_str(p->ns))) || !(v->name = strdup(tg_pod_name(p))) ||
        (p->uid && *p->uid && !(v->uid = strdup(p->uid)))) {
        if (v) {
            free(v->ns);
            free(v->name);
        }
        free(v);
        return TG_ENOMEM;
    }
    v->ev = ev;
    v->prev = ev->live.prev;
    v->next = &ev->live;
    ev->live.prev->next = v;
    ev->live.prev = v;
    if (tg_api_patch_pod_status(ev->c, v->ns, v->name, cond, on_condition, v))
        on_condition(v, &(struct tg_resp){.err = TG_ENOMEM, .msg = "cannot send the patch"});
    struct tg_event_spec e = {.ns = v->ns, .kind = "Pod", .api_version = "v1", .name = v->name,
                              .uid = v->uid, .type = "Warning",
                              .reason = reclaim ? "Reclaimed" : "Preempted", .note = note,
                              .action = reclaim ? "Reclaiming" : NULL};
    event(ev, &e);
    return 0;
}

/* ---- a decision ----------------------------------------------------------------------------- */

static void condition_body(struct tg_sb *b, const struct tg_engine *e, const struct tg_grec *g,
                           int reclaim)
{
    char when[40], msg[700];
    tg_format_microtime(tg__wall_ms() / 1000 * 1000, when, sizeof when);
    strcpy(strchr(when, '.'), "Z");
    if (reclaim)
        snprintf(msg, sizeof msg, "%s: reclaimed for gang %s of queue %s, below its fair share",
                 tg_engine_policy(e)->scheduler_name, g->key, tg_str(g->queue));
    else
        snprintf(msg, sizeof msg,
                 "%s: preempting to accommodate a higher priority gang %s (priority %d)",
                 tg_engine_policy(e)->scheduler_name, g->key, g->priority);
    tg_sb_puts(b, "{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\","
                  "\"reason\":\"PreemptionByScheduler\",\"message\":");
    tg_sb_json_str(b, msg);
    tg_sb_printf(b, ",\"lastTransitionTime\":\"%s\"}]}", when);
}

/* Every pod of every victim unit; a Preempted Event on each victim gang's
 * PodGroup. */
static int evict_victims(struct tg__evictor *ev, const struct tg_store *bound,
                         const struct tg_decision *d, const char *cond, const char *note)
{
    const struct tg_preemption *pl = &d->preemption;
    int rc = 0;
    for (uint32_t i = 0; i < pl->nvictims && !rc; i++) {
        const struct tg_victim *v = &pl->victims[i];
        tg_metrics_inc(v->gang ? TG_M_VICTIM_GANGS : TG_M_VICTIM_PODS, 1);
        tg_metrics_inc(TG_M_PREEMPTED_PODS, v->npods);
        uint32_t n = v->gang ? v->gang->nmembers : 1;
        for (uint32_t k = 0; k < n && !rc; k++)
            rc = evict_pod(ev, bound, v->gang ? v->gang->members[k]->key : v->pod->key, cond,
                           note, pl->reclaim);
        const struct tg_podgroup *pg = v->gang ? v->gang->pg : NULL;
        if (pg) {
            struct tg_event_spec e = {.ns = tg_str(pg->ns), .kind = "PodGroup",
                                      .api_version = "topogang.io/v1alpha1",
                                      .name = tg_str(pg->name), .uid = pg->uid, .type = "Warning",
                                      .reason = pl->reclaim ? "Reclaimed" : "Preempted",
                                      .note = note, .action = pl->reclaim ? "Reclaiming" : NULL};
            event(ev, &e);
        }
    }
    return rc;
}

/* status.nominatedNodeName on every preemptor member: the node it holds. */
static void nominate(struct tg__evictor *ev, const struct tg_decision *d)
{
    const struct tg_cluster *c = tg_engine_cluster(ev->e);
    for (uint32_t i = 0; d->preemption.slots && i < d->view.npods; i++) {
        uint32_t slot = d->preemption.slots[i];
        if (slot == TG_NONE)
            continue;
        const struct tg_pod *p = d->view.pods[i];
        struct tg_sb b = {0};
        tg_sb_puts(&b, "{\"nominatedNodeName\":");
        tg_sb_json_str(&b, tg_str(c->nodes[slot].name));
        tg_sb_putc(&b, '}');
        if (!b.oom)
            tg_api_patch_pod_status(ev->c, tg_str(p->ns), tg_pod_name(p), tg_sb_str(&b), on_written,
                                    "nominatedNodeName patch");
        tg_sb_free(&b);
    }
}

void tg__preempting_note(const struct tg_preemption *p, char *note, size_t cap)
{
    char reason[TG_EVENT_NOTE_MAX / 2], victims[TG_EVENT_NOTE_MAX];
    const char *head = p->reclaim ? "reclaiming " : "preempting ", *sep = "; ";
    size_t room = cap < sizeof victims ? cap : sizeof victims;
    tg_utf8_clip(p->reason, reason, room / 2 < sizeof reason ? room / 2 : sizeof reason, "...");
    room -= strlen(head) + strlen(sep) + strlen(reason);
    tg_preemption_describe(p, victims, room);
    snprintf(note, cap, "%s%s%s%s", head, victims, sep, reason);
}

/* Preempting on the preemptor: the victims and the domain. */
static void tell_preemptor(struct tg__evictor *ev, const struct tg_decision *d)
{
    const struct tg_grec *g = d->gang;
    char note[TG_EVENT_NOTE_MAX + 1];
    tg__preempting_note(&d->preemption, note, sizeof note);
    int rec = d->preemption.reclaim;
    struct tg_event_spec e = {.ns = tg_str(g->ns), .type = "Normal",
                              .reason = rec ? "Reclaiming" : "Preempting", .note = note,
                              .action = rec ? "Reclaiming" : NULL};
    if (g->pg) {
        e.kind = "PodGroup";
        e.api_version = "topogang.io/v1alpha1";
        e.name = tg_str(g->pg->name);
        e.uid = g->pg->uid;
    } else if (g->npending) {
        e.kind = "Pod";
        e.api_version = "v1";
        e.name = tg_pod_name(g->pending[0]);
        e.uid = g->pending[0]->uid;
    } else {
        return;
    }
    tg_info(C, "gang %s (priority %d): %s", g->key, g->priority, note);
    event(ev, &e);
}

int tg__evict(struct tg__evictor *ev, const struct tg_store *bound, const struct tg_decision *d)
{
    const struct tg_grec *g = d->gang;
    struct tg_sb cond = {0};
    char note[2048];
    condition_body(&cond, ev->e, g, d->preemption.reclaim);
    if (d->preemption.reclaim) /* the reason names both queues, with the numbers */
        snprintf(note, sizeof note, "reclaimed by %s: %s", g->key, d->preemption.reason);
    else
        snprintf(note, sizeof note, "preempted by %s (priority %d), to place it in %s", g->key,
                 g->priority, d->preemption.reason);
    tg_metrics_inc(TG_M_PREEMPTIONS, 1);
    tell_preemptor(ev, d);
    int rc = cond.oom ? TG_ENOMEM : evict_victims(ev, bound, d, tg_sb_str(&cond), note);
    nominate(ev, d);
    tg_sb_free(&cond);
    if (rc)
        tg_error(C, "gang %s: %s while evicting its victims", g->key, tg_strerror(rc));
    return rc;
}
