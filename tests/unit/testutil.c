/* Test helpers; see testutil.h. */
#include "testutil.h"
#include "config/policy.h"
#include "scheduler/sim/load.h"
#include "scheduler/sim/simulate.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *tu_simulate(const char *policy_yaml, const char *yaml)
{
    struct tg_policy pol;
    struct tg_sb err = {0}, out = {0};
    tg_policy_default(&pol);
    if (policy_yaml && tg_policy_parse(policy_yaml, strlen(policy_yaml), "policy", &pol, &err)) {
        fprintf(stderr, "policy: %s\n", tg_sb_str(&err));
        fail();
    }
    struct tg_sim *sim = tg_sim_new(&pol);
    assert_non_null(sim);
    tg_sim_quiet(sim, 1);
    int rc = tg_sim_load_string(sim, yaml, strlen(yaml), "test.yaml", &err);
    if (rc)
        fprintf(stderr, "load: %s\n", tg_sb_str(&err));
    assert_int_equal(rc, 0);
    assert_int_equal(tg_sim_run(sim), 0);
    tg_sim_json(sim, &out);
    cJSON *res = cJSON_Parse(tg_sb_str(&out));
    assert_non_null(res);
    tg_sim_free(&sim);
    tg_sb_free(&err);
    tg_sb_free(&out);
    return res;
}

const char *tu_str(const cJSON *obj, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

const cJSON *tu_gang(const cJSON *res, const char *key)
{
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(res, "gangs"))
    {
        const char *pg = tu_str(g, "podGroup");
        if (pg && !strcmp(pg, key))
            return g;
        const cJSON *pods = cJSON_GetObjectItemCaseSensitive(g, "pods");
        if (!pg && cJSON_GetArraySize(pods) == 1 &&
            !strcmp(tu_str(cJSON_GetArrayItem(pods, 0), "pod"), key))
            return g;
    }
    return NULL;
}

const char *tu_node_of(const cJSON *res, const char *pod)
{
    const cJSON *g, *p;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(res, "gangs"))
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods"))
            if (!strcmp(tu_str(p, "pod"), pod))
                return tu_str(p, "node");
    return NULL;
}

void tu_cat(char **buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *add = NULL;
    assert_true(vasprintf(&add, fmt, ap) >= 0);
    va_end(ap);
    size_t a = *buf ? strlen(*buf) : 0, b = strlen(add);
    *buf = realloc(*buf, a + b + 1);
    memcpy(*buf + a, add, b + 1);
    free(add);
}

void tu_node(char **buf, const char *name, const char *zone, const char *rack, int gpus,
             const char *extra_spec)
{
    tu_cat(buf, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n"
                "    kubernetes.io/hostname: %s\n", name, name);
    if (*zone)
        tu_cat(buf, "    topology.kubernetes.io/zone: %s\n", zone);
    if (*rack)
        tu_cat(buf, "    topogang.io/rack: %s\n", rack);
    tu_cat(buf, "spec: {%s}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
                "nvidia.com/gpu: \"%d\"}\n", extra_spec ? extra_spec : "", gpus);
}

void tu_node_labels(char **buf, const char *name, const char *labels, int gpus)
{
    tu_cat(buf, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels: {%s}\n"
                "status:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
                "nvidia.com/gpu: \"%d\"}\n", name, labels, gpus);
}

void tu_pod(char **buf, const char *name, const char *group, const char *requests,
            const char *extra_spec)
{
    tu_cat(buf, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n", name);
    if (group)
        tu_cat(buf, "  labels: {topogang.io/pod-group: %s}\n", group);
    tu_cat(buf, "spec:\n  schedulerName: topogang\n%s  containers:\n  - name: c\n"
                "    resources: {requests: {%s}}\n",
           extra_spec ? extra_spec : "", requests);
}

int tu_tmpdir_make(char *dir, size_t n, const char *prefix)
{
    snprintf(dir, n, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(dir) ? 0 : -1;
}

int tu_tmpdir_remove(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

void tu_load(struct tg_simdata *d, const char *yaml)
{
    struct tg_sb err = {0};
    tg_simdata_init(d);
    d->quiet = 1;
    int rc = tg_simdata_load_string(d, yaml, strlen(yaml), "t.yaml", &err);
    if (rc)
        fprintf(stderr, "load: %s\n", tg_sb_str(&err));
    assert_int_equal(rc, 0);
    tg_sb_free(&err);
}
