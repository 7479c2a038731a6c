/* `topogang scheduler`: options, informer handlers into the cluster model,
 * the gang queue and its scheduling tick, PodGroup status and Events, policy
 * reload, shutdown. See daemon.h for the pieces.
 *
 * Config: the policy ConfigMap (--config-map ns/name, key config.yaml) or
 * --config FILE; gang.scheduleTimeoutSeconds, gang.bindRetries,
 * api.{qps,burst,bindConcurrency} apply live. */
#include "scheduler/daemon/daemon.h"
#include "informer/kubeconfig.h"
#include "plugins/numa.h"
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/strbuf.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define C "scheduler"

enum { TICK_MS = 20, BUDGET_MS = 100, BACKOFF_MIN_MS = 1000, BACKOFF_MAX_MS = 60000,
       EVENT_REPEAT_MS = 60000 };

int64_t tg__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void on_tick(uv_timer_t *t);

void tg__kick(struct tg_daemon *d)
{
    if (!d->stopping && uv_timer_get_due_in(&d->tick) > 5)
        uv_timer_start(&d->tick, on_tick, 5, 0);
}

/* ---- gang records ------------------------------------------------------- */

struct tg_dgang *tg__gang(struct tg_daemon *d, const char *key, uint32_t ns, int grouped)
{
    uint64_t v;
    if (tg_hmap_get(&d->gangs, key, strlen(key), &v))
        return (struct tg_dgang *)(uintptr_t)v;
    struct tg_dgang *g = calloc(1, sizeof *g);
    if (!g || !(g->key = strdup(key))) {
        free(g);
        return NULL;
    }
    g->ns = ns;
    g->grouped = (uint8_t)grouped;
    g->first_seen_ms = tg__wall_ms();
    g->backoff_ms = BACKOFF_MIN_MS;
    if (tg_hmap_put(&d->gangs, g->key, strlen(g->key), (uint64_t)(uintptr_t)g)) {
        free(g->key);
        free(g);
        return NULL;
    }
    return g;
}

static void gang_free(struct tg_dgang *g)
{
    free(g->status_want);
    for (uint32_t i = 0; i < g->npending; i++)
        free(g->pending[i]);
    free(g->pending);
    free(g->status_sig);
    free(g->key);
    free(g);
}

/* A gang with nothing pending, nothing bound and nothing in flight goes (a
 * status patch still in flight finds no gang when it completes: fine). */
static void gang_maybe_drop(struct tg_daemon *d, struct tg_dgang *g)
{
    if (g->npending || g->nbound || g->op)
        return;
    tg_hmap_del(&d->gangs, g->key, strlen(g->key));
    gang_free(g);
}

static void gang_key(const struct tg_pod *p, char *buf, size_t n)
{
    if (p->group)
        snprintf(buf, n, "%s/%s", tg_str(p->ns), tg_str(p->group));
    else
        snprintf(buf, n, "%s", p->key);
}

void tg__gang_backoff(struct tg_daemon *d, struct tg_dgang *g)
{
    g->last_try_ms = (int64_t)uv_now(d->loop);
    g->next_try_ms = g->last_try_ms + g->backoff_ms;
    g->backoff_ms = g->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : g->backoff_ms * 2;
    g->tried_generation = d->sched.cluster.generation;
}

/* ---- status and events -------------------------------------------------- */

static const char *phase_name(uint8_t p)
{
    static const char *const n[] = {"", "Pending", "Scheduling", "Scheduled", "Unschedulable", "Failed"};
    return p < 6 ? n[p] : "";
}

static void on_written(void *ud, const struct tg_resp *r)
{
    const char *what = ud;
    if (r->err && r->status != 404)
        tg_warn(C, "%s failed: %s (HTTP %ld)", what, r->msg ? r->msg : tg_strerror(r->err), r->status);
}

struct patchctx {
    struct tg_daemon *d;
    char key[];
};

static void send_status(struct tg_daemon *d, struct tg_dgang *g);

static void on_status_patched(void *ud, const struct tg_resp *r)
{
    struct patchctx *pc = ud;
    on_written("PodGroup status patch", r);
    uint64_t v;
    if (tg_hmap_get(&pc->d->gangs, pc->key, strlen(pc->key), &v)) {
        struct tg_dgang *g = (struct tg_dgang *)(uintptr_t)v;
        g->patch_inflight = 0;
        send_status(pc->d, g);
    }
    free(pc);
}

/* Sends the wanted status unless a patch of this gang is in flight. */
static void send_status(struct tg_daemon *d, struct tg_dgang *g)
{
    if (g->patch_inflight || !g->status_want)
        return;
    size_t kl = strlen(g->key);
    struct patchctx *pc = malloc(sizeof *pc + kl + 1);
    if (!pc)
        return;
    pc->d = d;
    memcpy(pc->key, g->key, kl + 1);
    const char *ns = tg_str(g->ns), *name = strchr(g->key, '/') + 1;
    if (tg_api_patch_podgroup_status(d->client, ns, name, g->status_want, on_status_patched, pc)) {
        free(pc);
        return;
    }
    free(g->status_want);
    g->status_want = NULL;
    g->patch_inflight = 1;
    tg_metrics_inc(TG_M_STATUS_PATCHES, 1);
}

void tg__gang_report(struct tg_daemon *d, struct tg_dgang *g, const char *event_type,
                     const char *event_reason)
{
    const char *ns = tg_str(g->ns);
    const char *name = strchr(g->key, '/') + 1;
    const struct tg_store *pgs = tg_informer_store(d->inf, TG_INF_PODGROUPS);
    const struct tg_podgroup *pg = g->grouped && pgs ? tg_store_get(pgs, g->key) : NULL;
    if (pg) {
        struct tg_sb sig = {0};
        int ok = g->phase == TG_PG_SCHEDULED;
        /* our own binds count at once: the informer catching up changes nothing */
        uint32_t scheduled = g->nbound > g->nbound_known ? g->nbound : g->nbound_known;
        tg_sb_printf(&sig, "{\"phase\":\"%s\",\"scheduled\":%u", phase_name(g->phase), scheduled);
        if (g->level[0]) {
            tg_sb_printf(&sig, ",\"placement\":{\"level\":");
            tg_sb_json_str(&sig, g->level);
            tg_sb_puts(&sig, ",\"domain\":");
            tg_sb_json_str(&sig, g->domain);
            tg_sb_puts(&sig, "}");
        }
        tg_sb_printf(&sig, ",\"conditions\":[{\"type\":\"Scheduled\",\"status\":\"%s\",\"reason\":\"%s\","
                           "\"message\":", ok ? "True" : "False",
                     ok ? "Scheduled" : g->timed_out ? "Timeout" : g->op ? "Binding" : "Unschedulable");
        tg_sb_json_str(&sig, g->reason[0] ? g->reason : ok ? "all members bound" : "waiting");
        if (!g->status_sig || strcmp(g->status_sig, tg_sb_str(&sig))) {
            free(g->status_sig);
            g->status_sig = strdup(tg_sb_str(&sig));
            char when[40];
            tg_format_microtime(tg__wall_ms() / 1000 * 1000, when, sizeof when);
            char *dot = strchr(when, '.');
            if (dot)
                strcpy(dot, "Z"); /* metav1.Time has seconds only */
            tg_sb_printf(&sig, ",\"lastTransitionTime\":\"%s\"}]}", when);
            free(g->status_want);
            g->status_want = strdup(tg_sb_str(&sig));
            send_status(d, g);
        }
        tg_sb_free(&sig);
    }
    if (!event_reason)
        return;
    /* one Event per distinct message, repeated at most once a minute */
    char esig[96];
    /* "Waiting" counts members as they arrive: one per minute is enough */
    snprintf(esig, sizeof esig, "%s:%016llx", event_reason,
             !strcmp(event_reason, "Waiting") ? 0ull
                                              : (unsigned long long)tg_hash(g->reason, strlen(g->reason)));
    int64_t now = (int64_t)uv_now(d->loop);
    if (!strcmp(esig, g->event_sig) && now - g->event_ms < EVENT_REPEAT_MS)
        return;
    snprintf(g->event_sig, sizeof g->event_sig, "%s", esig);
    g->event_ms = now;
    struct tg_event_spec e = {
        .ns = ns, .type = event_type, .reason = event_reason,
        .action = !strcmp(event_reason, "Scheduled") ? "Binding" : "Scheduling",
        .note = g->reason[0] ? g->reason : "all members bound",
    };
    if (pg) {
        e.kind = "PodGroup";
        e.api_version = "topogang.io/v1alpha1";
        e.name = name;
        e.uid = pg->uid;
    } else if (!g->grouped) {
        const struct tg_pod *p = tg_store_get(tg_informer_store(d->inf, TG_INF_PODS_PENDING), g->key);
        e.kind = "Pod";
        e.api_version = "v1";
        e.name = name;
        e.uid = p ? p->uid : NULL;
    } else if (g->npending) {
        /* no PodGroup object: tell the first member */
        e.kind = "Pod";
        e.api_version = "v1";
        e.name = strchr(g->pending[0], '/') + 1;
    } else {
        return;
    }
    if (tg_api_create_event(d->client, &e, on_written, "Event") == 0)
        tg_metrics_inc(TG_M_EVENTS, 1);
}

/* ---- informer handlers -------------------------------------------------- */

static void node_set(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    struct tg_node_obj *copy = tg_node_clone(obj);
    if (!copy || tg_cluster_node_set(&d->sched.cluster, copy))
        tg_error(C, "out of memory adding node %s", tg_str(((const struct tg_node_obj *)obj)->name));
    tg_metrics_set(TG_G_NODES, d->sched.cluster.nready);
    tg__kick(d);
}
static void node_add(void *ud, const void *obj) { node_set(ud, obj); }
static void node_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    node_set(ud, obj);
}
static void node_delete(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    tg_cluster_node_remove(&d->sched.cluster, ((const struct tg_node_obj *)obj)->name);
    tg_metrics_set(TG_G_NODES, d->sched.cluster.nready);
}

static void pending_add(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    const struct tg_pod *p = obj;
    if (p->node || tg_pod_terminal(p) || p->deleting)
        return;
    char key[512];
    gang_key(p, key, sizeof key);
    struct tg_dgang *g = tg__gang(d, key, p->ns, p->group != 0);
    if (!g)
        return;
    for (uint32_t i = 0; i < g->npending; i++)
        if (!strcmp(g->pending[i], p->key))
            return;
    if (g->npending == g->cap) {
        uint32_t nc = g->cap ? g->cap * 2 : 4;
        char **np = realloc(g->pending, nc * sizeof *np);
        if (!np)
            return;
        g->pending = np;
        g->cap = nc;
    }
    if (!(g->pending[g->npending] = strdup(p->key)))
        return;
    if (g->npending == 0 && g->nbound == 0)
        g->first_seen_ms = tg__wall_ms();
    g->npending++;
    g->next_try_ms = 0; /* a new member may complete the gang */
    tg__kick(d);
}

static void pending_remove(struct tg_daemon *d, const struct tg_pod *p)
{
    char key[512];
    gang_key(p, key, sizeof key);
    uint64_t v;
    if (!tg_hmap_get(&d->gangs, key, strlen(key), &v))
        return;
    struct tg_dgang *g = (struct tg_dgang *)(uintptr_t)v;
    for (uint32_t i = 0; i < g->npending; i++)
        if (!strcmp(g->pending[i], p->key)) {
            free(g->pending[i]);
            g->pending[i] = g->pending[--g->npending];
            break;
        }
    gang_maybe_drop(d, g);
}

static void pending_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    const struct tg_pod *p = obj;
    if (p->node || tg_pod_terminal(p) || p->deleting)
        pending_remove(ud, p);
    else
        pending_add(ud, obj);
}

static void pending_delete(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    const struct tg_pod *p = obj;
    pending_remove(d, p);
    /* deleted while assumed and not in a bind: forget the assumption */
    struct tg_usage *u = tg_cluster_usage(&d->sched.cluster, p->key);
    if (u && u->assumed)
        tg__assumed_set(d, p->key, (int64_t)uv_now(d->loop) + 30000, 0);
}

static void bound_add(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    const struct tg_pod *p = obj;
    tg_cluster_pod_update(&d->sched.cluster, p);
    tg__assumed_del(d, p->key);
    if (p->group && !tg_pod_terminal(p)) {
        char key[512];
        gang_key(p, key, sizeof key);
        struct tg_dgang *g = tg__gang(d, key, p->ns, 1);
        if (g) {
            g->nbound++;
            if (!g->anchor_node)
                g->anchor_node = p->node;
            if (!g->op && g->phase == TG_PG_SCHEDULED)
                tg__gang_report(d, g, NULL, NULL); /* scheduled count changed */
        }
    }
    tg_metrics_set(TG_G_BOUND_PODS, (int64_t)d->sched.cluster.usage.len);
}

static void bound_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    struct tg_daemon *d = ud;
    tg_cluster_pod_update(&d->sched.cluster, obj);
}

static void bound_delete(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    const struct tg_pod *p = obj;
    tg_cluster_pod_delete(&d->sched.cluster, p->key);
    if (p->group) {
        char key[512];
        gang_key(p, key, sizeof key);
        uint64_t v;
        if (tg_hmap_get(&d->gangs, key, strlen(key), &v)) {
            struct tg_dgang *g = (struct tg_dgang *)(uintptr_t)v;
            if (g->nbound)
                g->nbound--;
            if (!g->nbound)
                g->anchor_node = 0;
            if (g->nbound_known > g->nbound)
                g->nbound_known = g->nbound;
            if (!g->op && g->phase == TG_PG_SCHEDULED)
                tg__gang_report(d, g, NULL, NULL); /* scheduled count changed */
            gang_maybe_drop(d, g);
        }
    }
    tg_metrics_set(TG_G_BOUND_PODS, (int64_t)d->sched.cluster.usage.len);
    tg__kick(d); /* room freed: waiting gangs may fit */
}

static void podgroup_change(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    const struct tg_podgroup *pg = obj;
    uint64_t v;
    if (tg_hmap_get(&d->gangs, pg->key, strlen(pg->key), &v)) {
        struct tg_dgang *g = (struct tg_dgang *)(uintptr_t)v;
        g->next_try_ms = 0;
        free(g->status_sig); /* a new object: write its status again */
        g->status_sig = NULL;
    }
    tg__kick(d);
}
static void podgroup_add(void *ud, const void *obj) { podgroup_change(ud, obj); }
static void podgroup_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    const struct tg_podgroup *a = old, *b = obj;
    /* our own status patches come back as updates: only spec changes matter */
    if (a->min_member != b->min_member || a->required != b->required ||
        a->preferred != b->preferred || a->strategy != b->strategy || a->priority != b->priority)
        podgroup_change(ud, obj);
}

static void config_change(void *ud, const void *obj)
{
    struct tg_daemon *d = ud;
    const struct tg_configmap *cm = obj;
    const char *text = tg_configmap_get(cm, "config.yaml");
    struct tg_policy p;
    struct tg_sb err = {0};
    char origin[300];
    snprintf(origin, sizeof origin, "ConfigMap %s config.yaml", cm->key);
    if (!text) {
        tg_sb_printf(&err, "%s: the key config.yaml is missing", origin);
    } else if (tg_policy_parse(text, strlen(text), origin, &p, &err) == 0) {
        if (strcmp(p.scheduler_name, d->scheduler_name))
            tg_warn(C, "policy schedulerName %s differs from --scheduler-name %s; pods are "
                       "watched for %s", p.scheduler_name, d->scheduler_name, d->scheduler_name);
        if (tg_sched_set_policy(&d->sched, &p) == 0) {
            tg_client_set_rate(d->client, (double)p.api_qps, (int)p.api_burst);
            tg_metrics_inc(TG_M_CONFIG_OK, 1);
            tg_info(C, "policy reloaded from %s (%u levels, strategy %s)", cm->key, p.nlevels,
                    p.strategy == TG_STRATEGY_SPREAD ? "spread" : "pack");
            /* every gang may fit differently now */
            uint32_t pos = 0;
            const struct tg_hslot *s;
            while ((s = tg_hmap_next(&d->gangs, &pos)))
                ((struct tg_dgang *)(uintptr_t)s->val)->next_try_ms = 0;
            tg__kick(d);
            tg_sb_free(&err);
            return;
        }
        tg_sb_printf(&err, "%s: out of memory applying the policy", origin);
    }
    tg_metrics_inc(TG_M_CONFIG_REJECTED, 1);
    tg_error(C, "policy rejected, the last good policy stays in force: %s", tg_sb_str(&err));
    const char *slash = strchr(cm->key, '/');
    char ns[128];
    snprintf(ns, sizeof ns, "%.*s", slash ? (int)(slash - cm->key) : 0, cm->key);
    struct tg_event_spec e = {.ns = ns, .kind = "ConfigMap", .api_version = "v1",
                              .name = slash ? slash + 1 : cm->key, .uid = cm->uid,
                              .type = "Warning", .reason = "InvalidPolicy", .action = "Reload",
                              .note = tg_sb_str(&err)};
    tg_api_create_event(d->client, &e, on_written, "Event");
    tg_sb_free(&err);
}
static void config_add(void *ud, const void *obj) { config_change(ud, obj); }
static void config_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    config_change(ud, obj);
}

static void on_synced(void *ud)
{
    struct tg_daemon *d = ud;
    d->synced = 1;
    tg_metrics_set(TG_G_SYNCED, 1);
    tg_info(C, "caches synced: %u nodes, %u bound pods, %u gangs waiting", d->sched.cluster.nready,
            d->sched.cluster.usage.len, d->gangs.len);
    tg__kick(d);
}

/* ---- the scheduling tick ------------------------------------------------ */

struct cand {
    struct tg_dgang *g;
    int32_t prio;
    int64_t created;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    return strcmp(x->g->key, y->g->key);
}

/* Deletes the bound members of a half-bound gang that cannot be completed. */
static void rollback_bound(struct tg_daemon *d, struct tg_dgang *g)
{
    const struct tg_store *bs = tg_informer_store(d->inf, TG_INF_PODS_BOUND);
    uint32_t n = 0;
    for (uint32_t i = 0; i < tg_store_len(bs); i++) {
        const struct tg_pod *p = tg_store_at(bs, i);
        char key[512];
        if (!p->group)
            continue;
        gang_key(p, key, sizeof key);
        if (strcmp(key, g->key))
            continue;
        char ns[256];
        snprintf(ns, sizeof ns, "%s", tg_str(p->ns));
        tg_api_delete_pod(d->client, ns, tg_pod_name(p), 0, p->uid, on_written, "rollback delete");
        n++;
    }
    tg_metrics_inc(TG_M_ROLLBACKS, 1);
    tg_metrics_inc(TG_M_PODS_DELETED, n);
    snprintf(g->reason + strlen(g->reason), sizeof g->reason - strlen(g->reason),
             "; rolled back: deleted %u bound member(s) of an incomplete gang", n);
    g->phase = TG_PG_PENDING;
    tg__gang_report(d, g, "Warning", "RolledBack");
}

static void try_gang(struct tg_daemon *d, struct tg_dgang *g, const struct tg_podgroup *pg)
{
    const struct tg_store *ps = tg_informer_store(d->inf, TG_INF_PODS_PENDING);
    struct tg_pod **pods = malloc((g->npending + 1) * sizeof *pods);
    if (!pods)
        return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->npending; i++) {
        struct tg_pod *p = tg_store_get(ps, g->pending[i]);
        if (p && !p->node && !tg_cluster_usage(&d->sched.cluster, p->key))
            pods[n++] = p;
    }
    if (n == 0) {
        /* every pending member is assumed or already bound: the two pod watches
         * are not ordered, so the pending stream has not caught up yet */
        free(pods);
        return;
    }
    uint32_t min = pg ? (uint32_t)pg->min_member : 1;
    int64_t timeout_s = pg && pg->timeout_s ? pg->timeout_s : d->sched.policy.gang_timeout_s;
    if (!g->timed_out && tg__wall_ms() - g->first_seen_ms > timeout_s * 1000 && g->nbound < min) {
        g->timed_out = 1;
        tg_metrics_inc(TG_M_TIMEOUTS, 1);
    }
    if (n + g->nbound < min) {
        snprintf(g->reason, sizeof g->reason, "waiting for members: %u pending + %u bound < minMember %u",
                 n, g->nbound, min);
        g->phase = g->timed_out ? TG_PG_UNSCHEDULABLE : TG_PG_PENDING;
        tg__gang_report(d, g, g->timed_out ? "Warning" : "Normal", g->timed_out ? "Timeout" : "Waiting");
        g->next_try_ms = (int64_t)uv_now(d->loop) + BACKOFF_MAX_MS; /* woken by new members */
        free(pods);
        return;
    }
    /* anchor: a bound member's node keeps the rest in the same domain */
    uint32_t anchor = g->nbound && g->anchor_node
                          ? tg_cluster_slot(&d->sched.cluster, g->anchor_node, 0)
                          : TG_NONE;
    struct tg_gang gg = {.name = g->key, .pg = pg, .pods = pods, .npods = n, .nbound = g->nbound,
                         .anchor = anchor};
    struct tg_result r;
    uint64_t t0 = uv_hrtime();
    int rc = tg_sched_gang(&d->sched, &gg, &r);
    tg_metrics_observe(TG_H_CYCLE, (double)(uv_hrtime() - t0) / 1e9);
    g->attempts++;
    if (rc) {
        tg_metrics_inc(TG_M_ATTEMPT_ERROR, 1);
        tg_error(C, "gang %s: %s", g->key, tg_strerror(rc));
        tg__gang_backoff(d, g);
    } else if (r.status == TG_GANG_SCHEDULED) {
        tg_metrics_inc(TG_M_ATTEMPT_SCHEDULED, 1);
        const struct tg_policy *pol = &d->sched.policy;
        snprintf(g->level, sizeof g->level, "%s", r.level ? pol->levels[r.level - 1].name : "cluster");
        tg_tree_path(&d->sched.cluster.tree, r.domain, g->domain, sizeof g->domain);
        g->reason[0] = 0;
        g->backoff_ms = BACKOFF_MIN_MS;
        uint32_t must = min > g->nbound ? min - g->nbound : 0;
        tg_info(C, "gang %s: placed %u pod(s) in %s %s", g->key, r.nplaced, g->level,
                g->domain[0] ? g->domain : "(cluster)");
        tg__bind_gang(d, g, pods, r.slot, n, must);
    } else {
        tg_metrics_inc(TG_M_ATTEMPT_UNSCHEDULABLE, 1);
        snprintf(g->reason, sizeof g->reason, "%s", r.reason);
        if (g->nbound && g->nbound < min && !g->reconciled) {
            /* found half-bound (a crash mid-bind): it cannot be completed */
            g->reconciled = 1;
            rollback_bound(d, g);
        } else {
            g->phase = g->timed_out ? TG_PG_UNSCHEDULABLE : TG_PG_PENDING;
            tg__gang_report(d, g, "Warning", g->timed_out ? "Timeout" : "FailedScheduling");
        }
        tg_debug(C, "gang %s unschedulable: %s", g->key, r.reason);
        tg__gang_backoff(d, g);
    }
    g->reconciled = 1;
    tg_result_free(&r);
    free(pods);
}

static void schedule_round(struct tg_daemon *d)
{
    int64_t now = (int64_t)uv_now(d->loop);
    uint32_t n = 0, pods = 0;
    struct cand *c = malloc((d->gangs.len + 1) * sizeof *c);
    if (!c)
        return;
    const struct tg_store *pgs = tg_informer_store(d->inf, TG_INF_PODGROUPS);
    const struct tg_store *ps = tg_informer_store(d->inf, TG_INF_PODS_PENDING);
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&d->gangs, &pos))) {
        struct tg_dgang *g = (struct tg_dgang *)(uintptr_t)s->val;
        pods += g->npending;
        if (g->op && g->phase == TG_PG_SCHEDULING && g->op_start_ms > 0 &&
            now - g->op_start_ms > 1000) {
            g->op_start_ms = -1; /* binds slower than a second: say so, once */
            tg__gang_report(d, g, NULL, NULL);
        }
        if (!g->npending || g->op)
            continue;
        /* backoff, unless the cluster changed in a way that may help */
        if (now < g->next_try_ms &&
            !(g->tried_generation != d->sched.cluster.generation && now - g->last_try_ms >= 500))
            continue;
        const struct tg_podgroup *pg = g->grouped && pgs ? tg_store_get(pgs, g->key) : NULL;
        struct cand k = {g, INT32_MIN, INT64_MAX};
        for (uint32_t i = 0; i < g->npending; i++) {
            const struct tg_pod *p = tg_store_get(ps, g->pending[i]);
            if (p && p->priority > k.prio)
                k.prio = p->priority;
            if (p && p->created_ms && p->created_ms < k.created)
                k.created = p->created_ms;
        }
        if (pg && pg->has_priority)
            k.prio = pg->priority;
        if (pg && pg->created_ms)
            k.created = pg->created_ms;
        c[n++] = k;
    }
    tg_metrics_set(TG_G_QUEUE_GANGS, d->gangs.len);
    tg_metrics_set(TG_G_QUEUE_PODS, pods);
    qsort(c, n, sizeof *c, cand_cmp);
    uint64_t t0 = uv_hrtime();
    for (uint32_t i = 0; i < n && !d->stopping && d->leader; i++) {
        struct tg_dgang *g = c[i].g;
        const struct tg_podgroup *pg = g->grouped && pgs ? tg_store_get(pgs, g->key) : NULL;
        if (g->grouped && !pg) {
            snprintf(g->reason, sizeof g->reason,
                     "PodGroup %s does not exist (pods labelled %s wait for it)", g->key,
                     TG_LABEL_POD_GROUP);
            tg__gang_report(d, g, "Warning", "PodGroupNotFound");
            tg__gang_backoff(d, g);
            continue;
        }
        if (pg) {
            char err[512];
            int rq, pf;
            if (tg_gang_levels(&d->sched.policy, pg, &rq, &pf, err, sizeof err)) {
                snprintf(g->reason, sizeof g->reason, "PodGroup %s: %s", g->key, err);
                g->phase = TG_PG_UNSCHEDULABLE;
                tg__gang_report(d, g, "Warning", "InvalidTopology");
                tg__gang_backoff(d, g);
                continue;
            }
        }
        try_gang(d, g, pg);
        if ((uv_hrtime() - t0) / 1000000 > BUDGET_MS) {
            tg__kick(d); /* yield to the loop; continue next tick */
            break;
        }
    }
    free(c);
}

static void on_tick(uv_timer_t *t)
{
    struct tg_daemon *d = t->data;
    tg_metrics_set(TG_G_LOOP_HEARTBEAT_MS, (int64_t)(uv_hrtime() / 1000000));
    tg_metrics_set(TG_G_ASSUMED_PODS, (int64_t)d->assumed.len);
    const struct tg_reflector_stats *st;
    uint64_t relists = 0, restarts = 0, decode = 0;
    for (int k = 0; k < TG_INF_N; k++)
        if (d->inf && d->inf->r[k] && (st = tg_reflector_stats(d->inf->r[k]))) {
            relists += st->relists;
            restarts += st->errors;
            decode += st->decode_errors;
        }
    tg_metrics_set(TG_G_RELISTS, (int64_t)relists);
    tg_metrics_set(TG_G_WATCH_RESTARTS, (int64_t)restarts);
    tg_metrics_set(TG_G_DECODE_ERRORS, (int64_t)decode);
    tg_metrics_set(TG_G_BAD_TOPOLOGY, (int64_t)tg_numa_bad_annotations());
    tg__assumed_sweep(d);
    if (d->synced && d->leader && !d->stopping)
        schedule_round(d);
    tg__binder_pump(d);
    uv_timer_start(&d->tick, on_tick, d->stopping ? 50 : 200, 0);
}

/* ---- start and stop ----------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: topogang scheduler [--kubeconfig FILE [--context NAME]] [options]\n"
        "\n"
        "Runs the gang scheduler: watches Nodes, Pods and PodGroups, places every gang of\n"
        "pods with spec.schedulerName matching --scheduler-name all at once or not at all,\n"
        "binds them, and reports through PodGroup status, Events and /metrics.\n"
        "Without --kubeconfig (and KUBECONFIG unset) it uses the in-cluster service account.\n"
        "\n"
        "options:\n"
        "      --kubeconfig FILE        kubeconfig (default $KUBECONFIG, else in-cluster)\n"
        "      --context NAME           kubeconfig context (default: current-context)\n"
        "      --config-map NS/NAME     policy ConfigMap, key config.yaml, watched and reloaded\n"
        "      --config FILE            policy file instead (read once)\n"
        "      --scheduler-name NAME    pods to schedule (default topogang)\n"
        "      --listen ADDR:PORT       /healthz /readyz /metrics (default :8080; '' disables)\n"
        "      --leader-elect           elect a leader with a coordination.k8s.io Lease\n"
        "      --lease NS/NAME          the Lease (default <config-map namespace or\n"
        "                               topogang-system>/topogang-scheduler)\n"
        "      --lease-duration SEC     default 15\n"
        "      --identity ID            leader identity (default $POD_NAME or hostname_pid)\n"
        "      --v LEVEL                log level: debug, info, warn, error (default info)\n"
        "  -h, --help                   this text\n");
}

static void on_close_noop(uv_handle_t *h) { (void)h; }

static void finish(struct tg_daemon *d)
{
    tg_http_stop();
    uv_close((uv_handle_t *)&d->tick, on_close_noop);
    uv_close((uv_handle_t *)&d->sigterm, on_close_noop);
    uv_close((uv_handle_t *)&d->sigint, on_close_noop);
    tg_informer_free(&d->inf);
    tg_client_free(&d->client);
}

static void on_shutdown_tick(uv_timer_t *t)
{
    struct tg_daemon *d = t->data;
    tg__binder_pump(d);
    if (d->inflight_binds && (int64_t)uv_now(d->loop) < d->shutdown_deadline) {
        uv_timer_start(&d->tick, on_shutdown_tick, 50, 0);
        return;
    }
    if (d->inflight_binds)
        tg_warn(C, "shutdown: %u bind(s) still in flight are abandoned; their pods stay "
                   "assumed nowhere and will be retried by the next leader", d->inflight_binds);
    tg_info(C, "shutdown: %llu pods bound, %llu binds failed",
            (unsigned long long)tg_metrics_counter(TG_M_BINDS_OK),
            (unsigned long long)tg_metrics_counter(TG_M_BINDS_FAILED));
    tg__leader_stop(d, finish);
}

static void on_signal(uv_signal_t *s, int sig)
{
    struct tg_daemon *d = s->data;
    if (d->stopping)
        return;
    tg_info(C, "signal %d: no new gangs; waiting for in-flight binds (%u)", sig, d->inflight_binds);
    d->stopping = 1;
    d->shutdown_deadline = (int64_t)uv_now(d->loop) + 10000;
    uv_signal_stop(&d->sigterm);
    uv_signal_stop(&d->sigint);
    uv_timer_start(&d->tick, on_shutdown_tick, 0, 0);
}

static int split_nsname(const char *s, char *ns, size_t nn, char *name, size_t nm)
{
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1])
        return TG_EINVAL;
    snprintf(ns, nn, "%.*s", (int)(slash - s), s);
    snprintf(name, nm, "%s", slash + 1);
    return 0;
}

int tg_cmd_scheduler(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'}, {"context", required_argument, NULL, 'x'},
        {"config-map", required_argument, NULL, 'm'}, {"config", required_argument, NULL, 'c'},
        {"scheduler-name", required_argument, NULL, 's'}, {"listen", required_argument, NULL, 'l'},
        {"leader-elect", no_argument, NULL, 'e'},      {"lease", required_argument, NULL, 'L'},
        {"lease-duration", required_argument, NULL, 'D'},
        {"identity", required_argument, NULL, 'i'},     {"v", required_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},               {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = getenv("KUBECONFIG"), *context = NULL, *cmap = NULL, *cfile = NULL;
    const char *listen = ":8080", *lease = NULL, *identity = getenv("POD_NAME");
    int lease_s = 15, opt;
    static struct tg_daemon dd;
    struct tg_daemon *d = &dd;
    memset(d, 0, sizeof *d);
    snprintf(d->scheduler_name, sizeof d->scheduler_name, "topogang");
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'k': kubeconfig = optarg; break;
        case 'x': context = optarg; break;
        case 'm': cmap = optarg; break;
        case 'c': cfile = optarg; break;
        case 's': snprintf(d->scheduler_name, sizeof d->scheduler_name, "%s", optarg); break;
        case 'l': listen = optarg; break;
        case 'e': d->leader_elect = 1; break;
        case 'L': lease = optarg; break;
        case 'D': lease_s = atoi(optarg); break;
        case 'i': identity = optarg; break;
        case 'v': {
            enum tg_log_level lvl;
            if (tg_log_parse_level(optarg, &lvl)) {
                fprintf(stderr, "topogang scheduler: --v must be debug, info, warn or error\n");
                return 2;
            }
            tg_log_set_level(lvl);
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "topogang scheduler: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (cmap && split_nsname(cmap, d->config_ns, sizeof d->config_ns, d->config_name,
                             sizeof d->config_name)) {
        fprintf(stderr, "topogang scheduler: --config-map must be NAMESPACE/NAME, not '%s'\n", cmap);
        return 2;
    }
    char lease_ns[128], lease_name[128];
    snprintf(lease_ns, sizeof lease_ns, "%.127s", d->config_ns[0] ? d->config_ns : "topogang-system");
    snprintf(lease_name, sizeof lease_name, "topogang-scheduler");
    if (lease && split_nsname(lease, lease_ns, sizeof lease_ns, lease_name, sizeof lease_name)) {
        fprintf(stderr, "topogang scheduler: --lease must be NAMESPACE/NAME, not '%s'\n", lease);
        return 2;
    }
    if (lease_s < 2 || lease_s > 3600) {
        fprintf(stderr, "topogang scheduler: --lease-duration must be 2..3600 seconds\n");
        return 2;
    }
    if (identity)
        snprintf(d->identity, sizeof d->identity, "%s", identity);
    else {
        char host[200] = "topogang";
        gethostname(host, sizeof host - 1);
        snprintf(d->identity, sizeof d->identity, "%s_%d", host, (int)getpid());
    }

    struct tg_policy pol;
    struct tg_sb perr = {0};
    tg_policy_default(&pol);
    if (cfile && tg_policy_load_file(cfile, &pol, &perr)) {
        fprintf(stderr, "topogang scheduler: invalid policy:\n%s", tg_sb_str(&perr));
        tg_sb_free(&perr);
        return 1;
    }
    tg_sb_free(&perr);

    struct tg_kconf conf;
    char err[512] = "";
    int rc;
    if (!kubeconfig && tg_kubeconfig_incluster(NULL, &conf) == 0) {
        tg_info(C, "using the in-cluster service account");
    } else if ((rc = tg_kubeconfig_load(kubeconfig, context, &conf, err, sizeof err))) {
        fprintf(stderr, "topogang scheduler: %s\n", err[0] ? err : tg_strerror(rc));
        if (!kubeconfig)
            fprintf(stderr, "  (no --kubeconfig, no KUBECONFIG, and not running in a cluster: "
                            "give one of them; see --help)\n");
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    d->loop = &loop;
    struct tg_client_opts copts = {.qps = (double)pol.api_qps, .burst = (int)pol.api_burst};
    if ((rc = tg_client_new(&loop, &conf, &copts, &d->client))) {
        fprintf(stderr, "topogang scheduler: cannot create the API client: %s\n", tg_strerror(rc));
        tg_kconf_free(&conf);
        return 1;
    }
    tg_kconf_free(&conf);
    if (tg_sched_init(&d->sched, &pol)) {
        fprintf(stderr, "topogang scheduler: out of memory\n");
        return 1;
    }
    if (listen[0]) {
        int port = 0;
        if ((rc = tg_http_start(listen, &port))) {
            fprintf(stderr, "topogang scheduler: cannot serve on %s: %s\n", listen, tg_strerror(rc));
            return 1;
        }
        tg_info(C, "serving /healthz /readyz /metrics on port %d", port);
    }
    uv_timer_init(&loop, &d->tick);
    d->tick.data = d;
    uv_signal_init(&loop, &d->sigterm);
    uv_signal_init(&loop, &d->sigint);
    d->sigterm.data = d->sigint.data = d;
    uv_signal_start(&d->sigterm, on_signal, SIGTERM);
    uv_signal_start(&d->sigint, on_signal, SIGINT);

    struct tg_informer_opts io = {
        .scheduler_name = d->scheduler_name,
        .config_ns = d->config_name[0] ? d->config_ns : NULL,
        .config_name = d->config_name[0] ? d->config_name : NULL,
        .on_synced = on_synced, .ud = d,
    };
    io.h[TG_INF_NODES] = (struct tg_handlers){node_add, node_update, node_delete, NULL, d};
    io.h[TG_INF_PODS_PENDING] = (struct tg_handlers){pending_add, pending_update, pending_delete, NULL, d};
    io.h[TG_INF_PODS_BOUND] = (struct tg_handlers){bound_add, bound_update, bound_delete, NULL, d};
    io.h[TG_INF_PODGROUPS] = (struct tg_handlers){podgroup_add, podgroup_update, podgroup_change, NULL, d};
    io.h[TG_INF_CONFIG] = (struct tg_handlers){config_add, config_update, NULL, NULL, d};
    if ((rc = tg_informer_start(d->client, &io, &d->inf))) {
        fprintf(stderr, "topogang scheduler: cannot start the informer: %s\n", tg_strerror(rc));
        return 1;
    }
    if (d->leader_elect) {
        if (tg__leader_start(d, lease_ns, lease_name, lease_s)) {
            fprintf(stderr, "topogang scheduler: cannot start leader election\n");
            return 1;
        }
    } else {
        d->leader = 1;
        tg_metrics_set(TG_G_LEADER, 1);
    }
    tg_info(C, "topogang scheduler %s starting: scheduler name %s, policy %s", d->identity,
            d->scheduler_name, cmap ? cmap : cfile ? cfile : "(defaults)");
    uv_timer_start(&d->tick, on_tick, 0, 0);
    uv_run(&loop, UV_RUN_DEFAULT);

    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&d->gangs, &pos)))
        gang_free((struct tg_dgang *)(uintptr_t)s->val);
    tg_hmap_free(&d->gangs);
    tg__assumed_clear(d);
    free(d->bindq);
    tg_sched_free(&d->sched);
    uv_loop_close(&loop);
    tg_info(C, "stopped");
    return 0;
}
