/* Node publishing for the agent (see agent/publish.h). The decision and the
 * patch body are plain functions (tg_agent_plan) so they are tested without
 * a server; the loop is blocking (one GET, maybe one PATCH, then sleep) on
 * the informer's client (kubeconfig or in-cluster service account, TLS
 * verified, token file re-read as it rotates). */
#include "agent/publish.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "agent/agent.h"
#include "informer/client.h"
#include "informer/kubeconfig.h"
#include "util/err.h"
#include "util/log.h"
#include "util/strbuf.h"

static const char *str_at(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int tg_agent_plan(const char *node_json, size_t n, const struct tg_topology *t,
                  struct tg_sb *patch)
{
    struct tg_sb annot = {0};
    cJSON *root = cJSON_ParseWithLength(node_json, n);
    int rc;

    if (!root || !cJSON_IsObject(root)) {
        rc = TG_EPARSE;
        goto out;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    if (!cJSON_IsObject(meta)) {
        rc = TG_EPARSE;
        goto out;
    }
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    const cJSON *lab = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    rc = tg_topo_encode(t, &annot);
    if (rc)
        goto out;
    const char *cur[TG_TOPO_NLABELS];
    for (int i = 0; i < TG_TOPO_NLABELS; i++)
        cur[i] = str_at(lab, tg_topo_label_keys[i]);
    if (!tg_topo_needs_patch(t, str_at(ann, "topogang.io/topology"), cur)) {
        rc = 0;
        goto out;
    }
    rc = tg_topo_patch_body(t, tg_sb_str(&annot), patch);
    if (!rc)
        rc = 1;
out:
    cJSON_Delete(root);
    tg_sb_free(&annot);
    return rc;
}

/* ---- the loop ----------------------------------------------------------- */

static int connect_api(const struct tg_publish_opts *po, uv_loop_t *loop, struct tg_client **out)
{
    struct tg_kconf conf;
    char err[512] = "";
    int rc;
    if (!po->kubeconfig && !getenv("KUBECONFIG") &&
        (rc = tg_kubeconfig_incluster(NULL, &conf, err, sizeof err)) != TG_ENOENT) {
        if (rc) {  /* in a pod: the service account, which must be there */
            tg_error("agent", "no API access: %s", err[0] ? err : tg_strerror(rc));
            return rc;
        }
    } else if ((rc = tg_kubeconfig_load(po->kubeconfig, NULL, &conf, err, sizeof err))) {
        tg_error("agent", "no API access: %s", err[0] ? err : tg_strerror(rc));
        return rc;
    }
    if ((rc = tg_kconf_check(&conf, po->allow_http, err, sizeof err))) {
        tg_error("agent", "no API access: %s", err);
        tg_kconf_free(&conf);
        return rc;
    }
    rc = tg_client_new(loop, &conf, NULL, out);
    tg_kconf_free(&conf);
    if (rc)
        tg_error("agent", "API client: %s", tg_strerror(rc));
    return rc;
}

/* One round: discover (full) or rebuild from the last discovery plus the
 * kubelet; unless nothing changed since *last was published, read the Node
 * and patch it when needed. *last: the annotation published (or found) last,
 * owned, replaced on success. */
static int publish_once(struct tg_client *cl, const struct tg_agent_opts *o,
                        const struct tg_publish_opts *po, struct tg_hw *hw, struct tg_topology *t,
                        int full, char **last)
{
    char err[512], path[512];
    struct tg_sb patch = {0}, now = {0};
    struct tg_resp r;
    char *body = NULL;
    int rc = 0;
    if (full) {
        rc = tg_agent_collect(o, hw, t, err, sizeof err);
        if (rc) {
            tg_error("agent", "discovery failed: %s", err);
            return rc;
        }
    } else {
        tg_agent_build(o, hw, t);
        if (tg_topo_encode(t, &now) == 0 && *last && !strcmp(tg_sb_str(&now), *last)) {
            tg_sb_free(&now);
            return 0;                   /* the kubelet's figures did not move */
        }
    }
    char *esc = tg_url_escape(po->node_name);
    if (!esc)
        return TG_ENOMEM;
    snprintf(path, sizeof path, "/api/v1/nodes/%s", esc);
    free(esc);
    struct tg_req_opts get = {.path = path, .timeout_ms = 30000};
    rc = tg_client_do(cl, &get, &r, &body);
    if (rc) {
        tg_error("agent", "GET node %s: %s: %s", po->node_name, tg_strerror(rc),
                 r.msg ? r.msg : "");
        goto out;
    }
    rc = tg_agent_plan(body, r.len, t, &patch);
    if (rc < 0) {
        tg_error("agent", "node %s: cannot plan the patch: %s", po->node_name, tg_strerror(rc));
        goto out;
    }
    tg_sb_reset(&now);
    if (tg_topo_encode(t, &now) == 0) {
        free(*last);
        *last = strdup(tg_sb_str(&now));
    }
    if (rc == 0) {
        tg_debug("agent", "node %s: topology unchanged", po->node_name);
        goto out;
    }
    struct tg_req_opts pt = {.method = "PATCH", .path = path, .body = patch.s,
                             .body_len = patch.len,
                             .content_type = "application/merge-patch+json",
                             .is_write = 1, .timeout_ms = 30000};
    free(body);
    body = NULL;
    rc = tg_client_do(cl, &pt, &r, NULL);
    if (rc) {
        tg_error("agent", "PATCH node %s: %s: %s", po->node_name, tg_strerror(rc),
                 r.msg ? r.msg : "");
        free(*last);
        *last = NULL;                   /* publish again next round */
    } else if (full) {
        tg_info("agent", "node %s: published topology (%u NUMA nodes with CPUs, %u without, "
                "%u GPU domains, %u GPUs)", po->node_name, t->nnuma, t->nmem, t->ndomains,
                hw->ngpus);
    } else {
        tg_info("agent", "node %s: published what the kubelet can still give exclusively",
                po->node_name);
    }
out:
    free(body);
    tg_sb_free(&patch);
    tg_sb_free(&now);
    return rc < 0 ? rc : 0;
}

int tg_agent_health_write(const char *path, long due_unix_s)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return TG_EIO;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return TG_EIO;
    int bad = fprintf(f, "due %ld\n", due_unix_s) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        unlink(tmp);
        return TG_EIO;
    }
    return 0;
}

int tg_agent_health_check(const char *path, FILE *out)
{
    FILE *f = fopen(path, "r");
    long due;
    if (!f) {
        fprintf(out, "%s: %s (no round written yet, or --health-file differs)\n", path,
                strerror(errno));
        return TG_EIO;
    }
    int ok = fscanf(f, "due %ld", &due) == 1;
    fclose(f);
    if (!ok) {
        fprintf(out, "%s: not a health file (want \"due <unix seconds>\")\n", path);
        return TG_EPARSE;
    }
    long now = (long)time(NULL);
    if (now > due) {
        fprintf(out, "the agent's round is overdue by %ld s (due at %ld): stuck\n", now - due, due);
        return TG_ETIMEOUT;
    }
    fprintf(out, "ok: next round due within %ld s\n", due - now);
    return 0;
}

/* Writes the liveness file, when there is one: the next round is due in
 * wait_s seconds and takes at most TG_AGENT_ROUND_MAX_S. */
static void health(const struct tg_publish_opts *po, unsigned wait_s)
{
    static int warned;
    if (!po->health_file)
        return;
    if (tg_agent_health_write(po->health_file, (long)time(NULL) + wait_s + TG_AGENT_ROUND_MAX_S) &&
        !warned) {
        warned = 1;
        tg_warn("agent", "cannot write the health file %s: %s (the liveness probe will fail)",
                po->health_file, strerror(errno));
    }
}

int tg_agent_publish(const struct tg_agent_opts *o, const struct tg_publish_opts *po)
{
    uv_loop_t loop;
    struct tg_client *cl = NULL;
    struct tg_hw *hw = malloc(sizeof *hw);
    struct tg_topology *t = malloc(sizeof *t);
    int rc = TG_ENOMEM;

    uv_loop_init(&loop);
    if (!hw || !t)
        goto out;
    if ((rc = connect_api(po, &loop, &cl)))
        goto out;
    uv_update_time(&loop);
    health(po, 0);
    uint64_t last_full = 0;
    char *last = NULL;
    for (int first = 1;; first = 0) {
        uv_update_time(&loop);
        uint64_t now = uv_now(&loop);
        int full = first || now - last_full >= (uint64_t)po->interval_s * 1000;
        rc = publish_once(cl, o, po, hw, t, full, &last);
        if (full && !rc)
            last_full = now;
        if (po->once)
            break;
        /* After a failure, retry sooner than the refresh period. */
        unsigned wait = o->podres_socket && po->kubelet_interval_s < po->interval_s
                            ? po->kubelet_interval_s : po->interval_s;
        if (rc && wait > 30)
            wait = 30;
        health(po, wait);
        sleep(wait);
    }
    free(last);
out:
    if (cl) {
        tg_client_free(&cl);
        uv_run(&loop, UV_RUN_DEFAULT);  /* close callbacks */
    }
    uv_loop_close(&loop);
    free(hw);
    free(t);
    return rc;
}
