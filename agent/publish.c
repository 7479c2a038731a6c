/* Node publishing for the agent (see agent/publish.h). The decision and the
 * patch body are plain functions (tg_agent_plan) so they are tested without
 * a server. */
#include "agent/publish.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "agent/agent.h"
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
    if (!tg_topo_needs_patch(t, str_at(ann, "topogang.io/topology"),
                             str_at(lab, TG_LABEL_NUMA_NODES), str_at(lab, TG_LABEL_GPU_DOMAINS),
                             str_at(lab, TG_LABEL_GPUS_PER_DOMAIN))) {
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

int tg_agent_publish(const struct tg_agent_opts *o, const struct tg_publish_opts *po)
{
    (void)o;
    tg_error("agent", "publishing to Node %s is not available in this build: the "
             "Kubernetes client is not wired yet; use --once --print", po->node_name);
    return TG_ENOTSUP;
}
