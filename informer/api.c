/* Scheduler writes to the API server (see api.h). Bodies are written with
 * tg_sb and its JSON string escaping; responses are left to the caller. */
#include "informer/api.h"

#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/objects.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/strbuf.h"

/* How api_send's request goes (client.h): a read; an Event (a retried write);
 * an Event as a background write (behind Bindings and status); a write only the
 * lease holder may make (Bindings, deletes, status: fenced); the Lease's own
 * requests (the urgent lane). */
enum { READ, EVENT, EVENT_BG, LEADER, URGENT };

static int api_send(struct tg_client *c, const char *method, struct tg_sb *path, struct tg_sb *body,
                const char *ctype, int how, tg_done_fn cb, void *ud)
{
    int rc = TG_ENOMEM;
    if (!path->oom && !(body && body->oom)) {
        struct tg_req_opts o = {.method = method, .path = tg_sb_str(path),
                                .body = body ? tg_sb_str(body) : NULL,
                                .body_len = body ? body->len : 0, .content_type = ctype,
                                .is_write = how != READ && how != URGENT,
                                .background = how == EVENT_BG, .leader_only = how == LEADER,
                                .retry = how == EVENT || how == EVENT_BG,
                                .urgent = how == URGENT,
                                .on_done = cb, .ud = ud};
        rc = tg_client_request(c, &o, NULL);
    }
    tg_sb_free(path);
    if (body)
        tg_sb_free(body);
    return rc;
}

/* Names go into URL paths: reject what would change the path. */
static int bad_name(const char *s)
{
    return !s || !*s || strchr(s, '/') || strchr(s, '?') || strchr(s, '%') || strchr(s, '#');
}

int tg_api_bind(struct tg_client *c, const char *ns, const char *name, const char *uid,
                const char *node, tg_done_fn cb, void *ud)
{
    if (bad_name(ns) || bad_name(name) || !node || !*node)
        return TG_EINVAL;
    struct tg_sb p = {0}, b = {0};
    tg_sb_printf(&p, "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
    tg_sb_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":");
    tg_sb_json_str(&b, name);
    tg_sb_puts(&b, ",\"namespace\":");
    tg_sb_json_str(&b, ns);
    if (uid && *uid) {
        tg_sb_puts(&b, ",\"uid\":");
        tg_sb_json_str(&b, uid);
    }
    tg_sb_puts(&b, "},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":");
    tg_sb_json_str(&b, node);
    tg_sb_puts(&b, "}}");
    return api_send(c, "POST", &p, &b, NULL, LEADER, cb, ud);
}

int tg_api_patch_podgroup_status(struct tg_client *c, const char *ns, const char *name,
                                 const char *status_json, tg_done_fn cb, void *ud)
{
    if (bad_name(ns) || bad_name(name) || !status_json)
        return TG_EINVAL;
    struct tg_sb p = {0}, b = {0};
    tg_sb_printf(&p, "/apis/topogang.io/v1alpha1/namespaces/%s/podgroups/%s/status", ns, name);
    tg_sb_printf(&b, "{\"status\":%s}", status_json);
    return api_send(c, "PATCH", &p, &b, "application/merge-patch+json", LEADER, cb, ud);
}

/* The status subresource of a custom object (ns NULL: cluster-scoped). */
static void status_path(struct tg_sb *p, const char *group_version, const char *resource,
                        const char *ns, const char *name)
{
    if (ns)
        tg_sb_printf(p, "/apis/%s/namespaces/%s/%s/%s/status", group_version, ns, resource, name);
    else
        tg_sb_printf(p, "/apis/%s/%s/%s/status", group_version, resource, name);
}

int tg_api_patch_status_of(struct tg_client *c, const char *group_version, const char *resource,
                           const char *ns, const char *name, const char *status_json,
                           int strategic, tg_done_fn cb, void *ud)
{
    if ((ns && bad_name(ns)) || bad_name(name) || !status_json || !group_version || !resource ||
        strchr(group_version, '?') || strchr(resource, '/'))
        return TG_EINVAL;
    struct tg_sb p = {0}, b = {0};
    status_path(&p, group_version, resource, ns, name);
    tg_sb_printf(&b, "{\"status\":%s}", status_json);
    return api_send(c, "PATCH", &p, &b,
                    strategic ? "application/strategic-merge-patch+json" : "application/merge-patch+json",
                    LEADER, cb, ud);
}

/* Server-side-applies {apiVersion, kind, metadata: {name, namespace}, field:
 * json} to path (taken) as field manager `manager`, forcing conflicts: a lease
 * holder's write. ns NULL: cluster-scoped. */
static int apply_send(struct tg_client *c, struct tg_sb *path, const char *manager,
                      const char *group_version, const char *kind, const char *ns,
                      const char *name, const char *field, const char *json, tg_done_fn cb,
                      void *ud)
{
    struct tg_sb b = {0};
    tg_sb_printf(path, "?fieldManager=%s&force=true", manager);
    tg_sb_puts(&b, "{\"apiVersion\":");
    tg_sb_json_str(&b, group_version);
    tg_sb_puts(&b, ",\"kind\":");
    tg_sb_json_str(&b, kind);
    tg_sb_puts(&b, ",\"metadata\":{\"name\":");
    tg_sb_json_str(&b, name);
    if (ns) {
        tg_sb_puts(&b, ",\"namespace\":");
        tg_sb_json_str(&b, ns);
    }
    tg_sb_printf(&b, "},\"%s\":%s}", field, json);
    return api_send(c, "PATCH", path, &b, "application/apply-patch+yaml", LEADER, cb, ud);
}

int tg_api_apply_status_of(struct tg_client *c, const char *group_version, const char *kind,
                           const char *resource, const char *ns, const char *name,
                           const char *manager, const char *status_json, tg_done_fn cb, void *ud)
{
    if ((ns && bad_name(ns)) || bad_name(name) || bad_name(manager) || !status_json ||
        !group_version || !kind || !resource || strchr(group_version, '?') ||
        strchr(resource, '/') || strchr(manager, '&'))
        return TG_EINVAL;
    struct tg_sb p = {0};
    status_path(&p, group_version, resource, ns, name);
    return apply_send(c, &p, manager, group_version, kind, ns, name, "status", status_json, cb, ud);
}

int tg_api_configmap_get(struct tg_client *c, const char *ns, const char *name, tg_done_fn cb,
                         void *ud)
{
    if (bad_name(ns) || bad_name(name))
        return TG_EINVAL;
    struct tg_sb p = {0};
    tg_sb_printf(&p, "/api/v1/namespaces/%s/configmaps/%s", ns, name);
    return api_send(c, "GET", &p, NULL, NULL, READ, cb, ud);
}

int tg_api_configmap_apply(struct tg_client *c, const char *ns, const char *name,
                           const char *manager, const char *data_json, tg_done_fn cb, void *ud)
{
    if (bad_name(ns) || bad_name(name) || bad_name(manager) || strchr(manager, '&') || !data_json)
        return TG_EINVAL;
    struct tg_sb p = {0};
    tg_sb_printf(&p, "/api/v1/namespaces/%s/configmaps/%s", ns, name);
    return apply_send(c, &p, manager, "v1", "ConfigMap", ns, name, "data", data_json, cb, ud);
}

int tg_api_patch_pod_status(struct tg_client *c, const char *ns, const char *name,
                            const char *status_json, tg_done_fn cb, void *ud)
{
    if (bad_name(ns) || bad_name(name) || !status_json)
        return TG_EINVAL;
    struct tg_sb p = {0}, b = {0};
    tg_sb_printf(&p, "/api/v1/namespaces/%s/pods/%s/status", ns, name);
    tg_sb_printf(&b, "{\"status\":%s}", status_json);
    return api_send(c, "PATCH", &p, &b, "application/strategic-merge-patch+json", LEADER, cb, ud);
}

void tg_format_microtime(int64_t ms, char *buf, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char d[32];
    strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06dZ", d, (int)(ms % 1000) * 1000);
}

int tg_api_create_event(struct tg_client *c, const struct tg_event_spec *e, tg_done_fn cb,
                        void *ud)
{
    if (bad_name(e->ns) || !e->kind || !e->name || !e->reason || !e->type)
        return TG_EINVAL;
    char host[128] = "topogang", ts[40];
    gethostname(host, sizeof host - 1);
    int64_t now = tg_clock_wall_ms();
    tg_format_microtime(now, ts, sizeof ts);
    static unsigned seq;
    struct tg_sb p = {0}, b = {0};
    tg_sb_printf(&p, "/apis/events.k8s.io/v1/namespaces/%s/events", e->ns);
    tg_sb_puts(&b, "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":");
    char nm[400];
    snprintf(nm, sizeof nm, "%.200s.%llx%04x", e->name, (unsigned long long)now, seq++ & 0xffff);
    tg_sb_json_str(&b, nm);
    tg_sb_puts(&b, ",\"namespace\":");
    tg_sb_json_str(&b, e->ns);
    tg_sb_puts(&b, "},\"eventTime\":");
    tg_sb_json_str(&b, ts);
    tg_sb_puts(&b, ",\"reportingController\":");
    tg_sb_json_str(&b, e->controller ? e->controller : "topogang.io/scheduler");
    tg_sb_puts(&b, ",\"reportingInstance\":");
    tg_sb_json_str(&b, e->instance ? e->instance : host);
    tg_sb_puts(&b, ",\"action\":");
    tg_sb_json_str(&b, e->action ? e->action : "Scheduling");
    tg_sb_puts(&b, ",\"reason\":");
    tg_sb_json_str(&b, e->reason);
    tg_sb_puts(&b, ",\"type\":");
    tg_sb_json_str(&b, e->type);
    char note[TG_EVENT_NOTE_MAX + 1];
    tg_utf8_clip(e->note ? e->note : "", note, sizeof note, "...");
    tg_sb_puts(&b, ",\"note\":");
    tg_sb_json_str(&b, note);
    tg_sb_puts(&b, ",\"regarding\":{\"kind\":");
    tg_sb_json_str(&b, e->kind);
    tg_sb_puts(&b, ",\"apiVersion\":");
    tg_sb_json_str(&b, e->api_version ? e->api_version : "v1");
    if (!e->cluster_scoped) {
        tg_sb_puts(&b, ",\"namespace\":");
        tg_sb_json_str(&b, e->ns);
    }
    tg_sb_puts(&b, ",\"name\":");
    tg_sb_json_str(&b, e->name);
    if (e->uid && *e->uid) {
        tg_sb_puts(&b, ",\"uid\":");
        tg_sb_json_str(&b, e->uid);
    }
    tg_sb_puts(&b, "}}");
    return api_send(c, "POST", &p, &b, NULL, e->background ? EVENT_BG : EVENT, cb, ud);
}

/* ---- Lease --------------------------------------------------------------- */

static void lease_body(struct tg_sb *b, const char *ns, const char *name,
                       const struct tg_lease *l)
{
    char ts[40];
    tg_sb_puts(b, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":");
    tg_sb_json_str(b, name);
    tg_sb_puts(b, ",\"namespace\":");
    tg_sb_json_str(b, ns);
    if (l->rv) {
        tg_sb_puts(b, ",\"resourceVersion\":");
        tg_sb_json_str(b, l->rv);
    }
    tg_sb_puts(b, "},\"spec\":{");
    tg_sb_printf(b, "\"leaseDurationSeconds\":%d,\"leaseTransitions\":%d", (int)l->duration_s,
                 (int)l->transitions);
    if (l->holder) {
        tg_sb_puts(b, ",\"holderIdentity\":");
        tg_sb_json_str(b, l->holder);
    }
    if (l->acquire_ms) {
        tg_format_microtime(l->acquire_ms, ts, sizeof ts);
        tg_sb_printf(b, ",\"acquireTime\":\"%s\"", ts);
    }
    if (l->renew_ms) {
        tg_format_microtime(l->renew_ms, ts, sizeof ts);
        tg_sb_printf(b, ",\"renewTime\":\"%s\"", ts);
    }
    tg_sb_puts(b, "}}");
}

int tg_api_lease_get(struct tg_client *c, const char *ns, const char *name, tg_done_fn cb,
                     void *ud)
{
    if (bad_name(ns) || bad_name(name))
        return TG_EINVAL;
    struct tg_sb p = {0};
    tg_sb_printf(&p, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns, name);
    return api_send(c, "GET", &p, NULL, NULL, URGENT, cb, ud);
}

int tg_api_lease_create(struct tg_client *c, const char *ns, const char *name,
                        const struct tg_lease *l, tg_done_fn cb, void *ud)
{
    if (bad_name(ns) || bad_name(name))
        return TG_EINVAL;
    struct tg_sb p = {0}, b = {0};
    struct tg_lease nl = *l;
    nl.rv = NULL;
    tg_sb_printf(&p, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns);
    lease_body(&b, ns, name, &nl);
    return api_send(c, "POST", &p, &b, NULL, URGENT, cb, ud);
}

int tg_api_lease_update(struct tg_client *c, const char *ns, const char *name,
                        const struct tg_lease *l, tg_done_fn cb, void *ud)
{
    if (bad_name(ns) || bad_name(name) || !l->rv)
        return TG_EINVAL;
    struct tg_sb p = {0}, b = {0};
    tg_sb_printf(&p, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns, name);
    lease_body(&b, ns, name, l);
    return api_send(c, "PUT", &p, &b, NULL, URGENT, cb, ud);
}

/* A number within int32, else 0: converting 1e300 to int32_t is undefined. */
static int32_t int32_or_zero(const cJSON *v)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= INT32_MIN && v->valuedouble <= INT32_MAX))
        return 0;
    return (int32_t)v->valuedouble;
}

int tg_lease_decode(const char *body, size_t len, struct tg_lease *l)
{
    memset(l, 0, sizeof *l);
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "spec");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    if (!cJSON_IsObject(sp) || !cJSON_IsString(rv)) {
        cJSON_Delete(j);
        return TG_EPARSE;
    }
    const cJSON *v;
    int rc = 0;
    if (!(l->rv = strdup(rv->valuestring)))
        rc = TG_ENOMEM;
    v = cJSON_GetObjectItemCaseSensitive(sp, "holderIdentity");
    if (!rc && cJSON_IsString(v) && !(l->holder = strdup(v->valuestring)))
        rc = TG_ENOMEM;
    v = cJSON_GetObjectItemCaseSensitive(sp, "leaseDurationSeconds");
    l->duration_s = int32_or_zero(v);
    v = cJSON_GetObjectItemCaseSensitive(sp, "leaseTransitions");
    l->transitions = int32_or_zero(v);
    v = cJSON_GetObjectItemCaseSensitive(sp, "acquireTime");
    if (cJSON_IsString(v))
        tg_parse_time(v->valuestring, &l->acquire_ms);
    v = cJSON_GetObjectItemCaseSensitive(sp, "renewTime");
    if (cJSON_IsString(v))
        tg_parse_time(v->valuestring, &l->renew_ms);
    cJSON_Delete(j);
    if (rc)
        tg_lease_free(l);
    return rc;
}

void tg_lease_free(struct tg_lease *l)
{
    free(l->holder);
    free(l->rv);
    memset(l, 0, sizeof *l);
}

int tg_api_delete_pod(struct tg_client *c, const char *ns, const char *name, int64_t grace_s,
                      const char *uid, tg_done_fn cb, void *ud)
{
    if (bad_name(ns) || bad_name(name))
        return TG_EINVAL;
    struct tg_sb p = {0}, b = {0};
    tg_sb_printf(&p, "/api/v1/namespaces/%s/pods/%s", ns, name);
    tg_sb_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\"");
    if (grace_s >= 0)
        tg_sb_printf(&b, ",\"gracePeriodSeconds\":%lld", (long long)grace_s);
    if (uid && *uid) {
        tg_sb_puts(&b, ",\"preconditions\":{\"uid\":");
        tg_sb_json_str(&b, uid);
        tg_sb_puts(&b, "}");
    }
    tg_sb_puts(&b, "}");
    return api_send(c, "DELETE", &p, &b, NULL, LEADER, cb, ud);
}
