/* Gangs as they come (issue 9): the decoders of the peers' PodGroups, of the
 * workloads that form gangs without one and of a pod's gang fields
 * (model/workload.h), and every derivation rule of the gang layer through
 * `simulate` on YAML (tests/fixtures/workloads/). */
#include "testutil.h"
#include "config/policy.h"
#include "model/workload.h"
#include "scheduler/engine.h"
#include "scheduler/internal.h" /* the tests embed an engine and look inside */
#include "util/intern.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static int nwarn;
static char lastwarn[1024];

static void diag(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                 const char *msg)
{
    (void)ud;
    (void)at;
    (void)is_error;
    nwarn++;
    snprintf(lastwarn, sizeof lastwarn, "%s: %s: %s", what, field, msg);
}

static struct tg_diag D = {.report = diag};

static cJSON *json(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    return j;
}

static struct tg_podgroup *pg(const char *text)
{
    cJSON *j = json(text);
    struct tg_podgroup *g = NULL;
    nwarn = 0;
    assert_int_equal(tg_podgroup_decode_any(j, &D, &g), 0);
    cJSON_Delete(j);
    return g;
}

static struct tg_workload *wl(const char *text)
{
    cJSON *j = json(text);
    struct tg_workload *w = NULL;
    assert_int_equal(tg_workload_decode(j, &D, &w), 0);
    cJSON_Delete(j);
    return w;
}

static struct tg_pod *pod(const char *text)
{
    cJSON *j = json(text);
    struct tg_pod *p = NULL;
    nwarn = 0;
    assert_int_equal(tg_pod_decode(j, TG_DECODE_SPEC, &D, &p), 0);
    cJSON_Delete(j);
    return p;
}

static char *slurp(const char *rel)
{
    const char *src = getenv("TOPOGANG_SRC");
    assert_non_null(src);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/workloads/%s", src, rel);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 2);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\n';
    buf[n + 1] = 0;
    fclose(f);
    return buf;
}

/* The example cluster (8 nodes, 2 racks of 4, cliques of 2) plus files. */
static cJSON *sim(const char *policy, const char *file, const char *more)
{
    char *y = NULL;
    char *c = slurp("cluster.yaml");
    tu_cat(&y, "%s", c);
    free(c);
    if (file) {
        char *f = slurp(file);
        tu_cat(&y, "%s", f);
        free(f);
    }
    if (more)
        tu_cat(&y, "%s", more);
    cJSON *res = tu_simulate(policy, y);
    free(y);
    return res;
}

static const char *status_of(const cJSON *res, const char *gang)
{
    const cJSON *g = tu_gang(res, gang);
    assert_non_null(g);
    return tu_str(g, "status");
}

static int placed(const cJSON *res, const char *gang)
{
    const cJSON *g = tu_gang(res, gang), *p;
    int n = 0;
    assert_non_null(g);
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(g, "pods"))
        n += tu_str(p, "node") != NULL;
    return n;
}

/* Node number (gpu-0000N) of a pod; rack = N / 4, clique = N / 2. */
static int node_no(const cJSON *res, const char *pod_key)
{
    const char *n = tu_node_of(res, pod_key);
    assert_non_null(n);
    return atoi(n + 4);
}

/* ---- the peers' PodGroups ------------------------------------------------------------------ */

static void test_upstream_podgroup(void **state)
{
    (void)state;
    struct tg_podgroup *g = pg(
        "{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"PodGroup\","
        "\"metadata\":{\"name\":\"up\",\"namespace\":\"ml\",\"uid\":\"u1\",\"generation\":3},"
        "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":4}},\"priorityClassName\":\"high\","
        "\"priority\":1000,\"disruptionMode\":\"Pod\","
        "\"schedulingConstraints\":{\"topology\":[{\"key\":\"topogang.io/rack\"}]}},"
        "\"status\":{\"conditions\":[{\"type\":\"PodGroupScheduled\",\"status\":\"True\"}]}}");
    assert_int_equal(g->api, TG_PG_UPSTREAM);
    assert_string_equal(g->key, "ml/up@scheduling.k8s.io");
    assert_string_equal(tg_str(g->name), "up");
    assert_int_equal(g->min_member, 4);
    assert_string_equal(tg_str(g->prio_class), "high");
    assert_true(g->has_priority);
    assert_int_equal(g->priority, 1000);
    assert_string_equal(tg_str(g->topo_req), "topogang.io/rack");
    assert_string_equal(g->topo_req_field, "spec.schedulingConstraints.topology[0].key");
    assert_int_equal(g->required, 0); /* resolved by the gang layer */
    assert_true(g->sched_true);
    assert_int_equal(g->generation, 3);
    assert_null(g->problem);
    tg_podgroup_free(&g);
    /* basic: no gang, minMember 1; neither: a problem naming the field */
    g = pg("{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"b\"},\"spec\":{\"schedulingPolicy\":{\"basic\":{}}}}");
    assert_int_equal(g->min_member, 1);
    assert_null(g->problem);
    assert_string_equal(g->key, "default/b@scheduling.k8s.io");
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"n\"},\"spec\":{\"schedulingPolicy\":{}}}");
    assert_non_null(g->problem);
    assert_non_null(strstr(g->problem, "spec.schedulingPolicy: needs gang"));
    assert_int_equal(nwarn, 1);
    tg_podgroup_free(&g);
}

static void test_scheduler_plugins_podgroup(void **state)
{
    (void)state;
    struct tg_podgroup *g = pg("{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
                               "\"metadata\":{\"name\":\"sp\",\"namespace\":\"ml\"},"
                               "\"spec\":{\"minMember\":3,\"scheduleTimeoutSeconds\":60,"
                               "\"minResources\":{\"cpu\":\"3\"}}}");
    assert_int_equal(g->api, TG_PG_XK8S);
    assert_string_equal(g->key, "ml/sp@scheduling.x-k8s.io");
    assert_int_equal(g->min_member, 3);
    assert_int_equal(g->timeout_s, 60);
    assert_null(g->problem);
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
           "\"metadata\":{\"name\":\"t\"},\"spec\":{\"minMembers\":3}}");
    assert_string_equal(g->problem, "spec.minMembers: unknown field");
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
           "\"metadata\":{\"name\":\"t\"},\"spec\":{\"minMember\":\"three\"}}");
    assert_string_equal(g->problem, "spec.minMember: must be a whole number");
    tg_podgroup_free(&g);
}

static void test_volcano_podgroup(void **state)
{
    (void)state;
    struct tg_podgroup *g = pg("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                               "\"metadata\":{\"name\":\"vc\",\"namespace\":\"ml\"},"
                               "\"spec\":{\"minMember\":2,\"queue\":\"q\",\"priorityClassName\":\"p\","
                               "\"networkTopology\":{\"mode\":\"hard\",\"highestTierAllowed\":2}}}");
    assert_int_equal(g->api, TG_PG_VOLCANO);
    assert_int_equal(g->min_member, 2);
    assert_int_equal(g->tier, 2);
    assert_true(g->tier_hard);
    assert_string_equal(tg_str(g->prio_class), "p");
    tg_podgroup_free(&g);
    /* soft without a tier: tier 1, preferred; mode defaults to hard */
    g = pg("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"s\"},\"spec\":{\"minMember\":1,\"networkTopology\":{\"mode\":\"soft\"}}}");
    assert_int_equal(g->tier, 1);
    assert_false(g->tier_hard);
    assert_null(g->problem);
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"n\"},\"spec\":{\"minMember\":1,\"networkTopology\":{\"highestTierName\":\"rack\"}}}");
    assert_true(g->tier_hard);
    assert_int_equal(g->tier, -1);
    assert_string_equal(tg_str(g->topo_req), "rack");
    assert_string_equal(g->topo_req_field, "spec.networkTopology.highestTierName");
    tg_podgroup_free(&g);
    /* problems: hard with no tier, a bad mode, both tier fields, minMember 0 taken as 1 */
    g = pg("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"h\"},\"spec\":{\"minMember\":0,\"networkTopology\":{\"mode\":\"hard\"}}}");
    assert_int_equal(g->min_member, 1);
    assert_non_null(strstr(g->problem, "spec.networkTopology.highestTierAllowed: is required"));
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"m\"},\"spec\":{\"minMember\":1,\"networkTopology\":{\"mode\":\"medium\"}}}");
    assert_string_equal(g->problem, "spec.networkTopology.mode: must be hard or soft, not \"medium\"");
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"b\"},\"spec\":{\"minMember\":1,\"networkTopology\":{\"highestTierAllowed\":1,"
           "\"highestTierName\":\"rack\"}}}");
    assert_non_null(strstr(g->problem, "exclude each other"));
    tg_podgroup_free(&g);
}

/* A Volcano PodGroup with spec.subGroupPolicy = pol (JSON list). */
static struct tg_podgroup *vc_sgp(const char *pol)
{
    char text[4096];
    snprintf(text, sizeof text, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
             "\"PodGroup\",\"metadata\":{\"name\":\"v\",\"namespace\":\"ml\"},\"spec\":"
             "{\"minMember\":8,\"subGroupPolicy\":%s}}", pol);
    return pg(text);
}

/* Volcano's spec.subGroupPolicy as Volcano users write it: labelSelector,
 * matchLabelKeys, subGroupSize, networkTopology (mode, tier or tier name),
 * minSubGroups; fields left out take Volcano's defaults; bad values are a
 * problem naming the field (the PodGroup stays, its gang is not placed). */
static void test_volcano_subgroup_policy(void **state)
{
    (void)state;
    struct tg_podgroup *g = vc_sgp(
        "[{\"name\":\"tp\",\"subGroupSize\":4,\"minSubGroups\":2,"
        "\"labelSelector\":{\"matchLabels\":{\"role\":\"worker\"},\"matchExpressions\":"
        "[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"cpu\"]}]},"
        "\"matchLabelKeys\":[\"volcano.sh/partition\",\"zone\"],"
        "\"networkTopology\":{\"mode\":\"hard\",\"highestTierAllowed\":1}},"
        "{\"name\":\"rest\",\"networkTopology\":{\"mode\":\"soft\",\"highestTierName\":\"rack\"}},"
        "{}]");
    assert_null(g->problem);
    assert_int_equal(g->nsgpol, 3);
    const struct tg_sgpolicy *a = &g->sgpol[0], *b = &g->sgpol[1], *c = &g->sgpol[2];
    assert_string_equal(tg_str(a->name), "tp");
    assert_int_equal(a->size, 4);
    assert_int_equal(a->sel.nreq, 2);
    assert_int_equal(a->nkeys, 2);
    assert_string_equal(tg_str(a->keys[0]), "volcano.sh/partition");
    assert_true(a->tier_hard);
    assert_int_equal(a->tier, 1);
    assert_int_equal(a->min_subs, 2);
    /* defaults: size 1, no selector (every member), soft with a tier name,
     * no minSubGroups (-1: every sub-group with members is needed) */
    assert_int_equal(b->size, 1);
    assert_int_equal(b->min_subs, -1);
    assert_int_equal(b->sel.nreq, 0);
    assert_false(b->tier_hard);
    assert_int_equal(b->tier, -1);
    assert_string_equal(tg_str(b->tier_name), "rack");
    /* an entry with nothing: named by its index, no topology */
    assert_string_equal(tg_str(c->name), "2");
    assert_int_equal(c->tier, -1);
    assert_int_equal(c->tier_name, 0);
    tg_podgroup_free(&g);

    /* hostile and missing values: each a problem naming the field */
    static const struct { const char *pol, *problem; } bad[] = {
        {"{\"a\":1}", "spec.subGroupPolicy: must be a list"},
        {"[7]", "spec.subGroupPolicy[0]: must be a map"},
        {"[{\"name\":\"x\",\"subGroupSize\":0}]",
         "spec.subGroupPolicy[0].subGroupSize: must be 1..1000000, not 0"},
        {"[{\"name\":\"x\",\"subGroupSize\":1e300}]",
         "spec.subGroupPolicy[0].subGroupSize: must be 1..1000000, not "},
        {"[{\"name\":\"x\",\"subGroupSize\":\"4\"}]",
         "spec.subGroupPolicy[0].subGroupSize: must be a whole number"},
        {"[{\"name\":\"x\",\"minSubGroups\":-1}]",
         "spec.subGroupPolicy[0].minSubGroups: must be 0..1000000, not -1"},
        {"[{\"name\":\"x\",\"labelSelector\":\"role=worker\"}]",
         "spec.subGroupPolicy[0].labelSelector: must be a map, not a string"},
        {"[{\"name\":\"x\",\"labelSelector\":{\"matchExpressions\":[{\"key\":\"k\",\"operator\":"
         "\"Gt\",\"values\":[\"1\"]}]}}]",
         "spec.subGroupPolicy[0].labelSelector.matchExpressions[0]: a label selector takes In"},
        {"[{\"name\":\"x\",\"labelSelector\":{\"matchExpressions\":[{\"key\":\"k\",\"operator\":"
         "\"In\"}]}}]",
         "spec.subGroupPolicy[0].labelSelector.matchExpressions[0]: operator In needs values"},
        {"[{\"name\":\"x\",\"labelSelector\":{\"matchLabels\":{\"k\":3}}}]",
         "spec.subGroupPolicy[0].labelSelector.matchLabels.k: must be a string, not a number"},
        {"[{\"name\":\"x\",\"matchLabelKeys\":\"zone\"}]",
         "spec.subGroupPolicy[0].matchLabelKeys: must be a list of label keys"},
        {"[{\"name\":\"x\",\"matchLabelKeys\":[\"zone\",\"\"]}]",
         "spec.subGroupPolicy[0].matchLabelKeys[1]: must be a label key (a non-empty string)"},
        {"[{\"name\":\"x\",\"matchLabelKeys\":[null]}]",
         "spec.subGroupPolicy[0].matchLabelKeys[0]: must be a label key"},
        {"[{\"name\":\"x\",\"networkTopology\":{\"mode\":\"hard\"}}]",
         "spec.subGroupPolicy[0].networkTopology.highestTierAllowed: is required with mode hard"},
        {"[{\"name\":\"x\",\"networkTopology\":{\"mode\":\"strict\",\"highestTierAllowed\":1}}]",
         "spec.subGroupPolicy[0].networkTopology.mode: must be hard or soft, not \"strict\""},
        {"[{\"name\":\"x\",\"networkTopology\":{\"highestTierAllowed\":1,\"highestTierName\":\"r\"}}]",
         "spec.subGroupPolicy[0].networkTopology: highestTierAllowed and highestTierName exclude"},
        {"[{\"name\":\"x\",\"networkTopology\":{\"highestTierAllowed\":99}}]",
         "spec.subGroupPolicy[0].networkTopology.highestTierAllowed: must be 0..64, not 99"},
        {"[{\"name\":\"x\",\"networkTopology\":[1]}]",
         "spec.subGroupPolicy[0].networkTopology: must be a map"},
        {"[{\"name\":\"x\",\"subGroupSize\":2,\"topology\":{}}]",
         "spec.subGroupPolicy[0].topology: unknown field"},
        {"[{\"name\":\"x\"},{\"name\":\"x\"}]",
         "spec.subGroupPolicy[1].name: \"x\" is the name of spec.subGroupPolicy[0] too"},
        {"[{\"name\":7}]", "spec.subGroupPolicy[0].name: must be a string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        g = vc_sgp(bad[i].pol);
        if (!g->problem || strncmp(g->problem, bad[i].problem, strlen(bad[i].problem))) {
            fprintf(stderr, "case %zu: expected \"%s\", got \"%s\"\n", i, bad[i].problem,
                    g->problem ? g->problem : "(none)");
            fail();
        }
        assert_true(nwarn >= 1);
        assert_non_null(strstr(lastwarn, "PodGroup ml/v (scheduling.volcano.sh/v1beta1)"));
        tg_podgroup_free(&g);
    }
    /* too many entries, too many keys */
    char many[4096] = "[";
    for (int i = 0; i <= TG_MAX_SGPOLICIES; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s{\"name\":\"p%d\"}",
                 i ? "," : "", i);
    strcat(many, "]");
    g = vc_sgp(many);
    assert_non_null(strstr(g->problem, "spec.subGroupPolicy: has more than 64 entries"));
    tg_podgroup_free(&g);
    char keys[1024] = "[{\"name\":\"x\",\"matchLabelKeys\":[";
    for (int i = 0; i <= TG_MAX_SGKEYS; i++)
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s\"k%d\"", i ? "," : "", i);
    strcat(keys, "]}]");
    g = vc_sgp(keys);
    assert_non_null(strstr(g->problem, "spec.subGroupPolicy[0].matchLabelKeys: has more than 16 keys"));
    tg_podgroup_free(&g);
}

/* KAI's nested sub-groups (spec.subGroups[].parent): the leaves are the
 * sub-groups, each with its own constraint; a parent with a
 * topologyConstraint of its own is kept (pg->outer) and its leaves point at
 * it; constraints nested more than one level are refused naming the field. */
static void test_kai_nested_subgroups(void **state)
{
    (void)state;
    struct tg_podgroup *g = pg(
        "{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":"
        "{\"name\":\"k\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":4,\"subGroups\":["
        "{\"name\":\"decode\"},"
        "{\"name\":\"d0\",\"parent\":\"decode\",\"minMember\":2,\"topologyConstraint\":"
        "{\"requiredTopologyLevel\":\"nvidia.com/gpu.clique\"}},"
        "{\"name\":\"d1\",\"parent\":\"decode\",\"minMember\":2}]}}");
    assert_null(g->problem);
    assert_int_equal(g->nsubs, 2);
    assert_string_equal(tg_str(g->subs[0].name), "d0");
    assert_string_equal(tg_str(g->subs[0].required), "nvidia.com/gpu.clique");
    assert_string_equal(tg_str(g->subs[1].name), "d1");
    assert_int_equal(g->subs[1].required, 0);
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"k\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":4,\"subGroups\":["
           "{\"name\":\"decode\",\"topologyConstraint\":{\"requiredTopologyLevel\":\"topogang.io/rack\"}},"
           "{\"name\":\"d0\",\"parent\":\"decode\",\"minMember\":2}]}}");
    assert_null(g->problem);
    assert_int_equal(g->nsubs, 1);
    assert_int_equal(g->nouter, 1);
    assert_string_equal(tg_str(g->outer[0].name), "decode");
    assert_string_equal(tg_str(g->outer[0].required), "topogang.io/rack");
    assert_string_equal(tg_str(g->subs[0].name), "d0");
    assert_int_equal(g->subs[0].outer, 1);
    tg_podgroup_free(&g);
    /* a constrained parent of a parent: refused, naming the field */
    g = pg("{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"k\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":4,\"subGroups\":["
           "{\"name\":\"all\",\"topologyConstraint\":{\"requiredTopologyLevel\":\"topogang.io/block\"}},"
           "{\"name\":\"decode\",\"parent\":\"all\"},"
           "{\"name\":\"d0\",\"parent\":\"decode\",\"minMember\":2}]}}");
    assert_non_null(g->problem);
    assert_non_null(strstr(g->problem, "spec.subGroups[0].topologyConstraint: a constraint over "
                                       "sub-groups nested more than one level (its child decode "
                                       "has children) is not supported"));
    assert_true(nwarn >= 1);
    tg_podgroup_free(&g);
}

static void test_kai_podgroup(void **state)
{
    (void)state;
    struct tg_podgroup *g = pg("{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\","
                               "\"metadata\":{\"name\":\"k\",\"namespace\":\"ml\",\"uid\":\"u\"},"
                               "\"spec\":{\"minMember\":4,\"queue\":\"q\",\"priorityClassName\":\"train\","
                               "\"topologyConstraint\":{\"topology\":\"default\","
                               "\"requiredTopologyLevel\":\"topogang.io/rack\","
                               "\"preferredTopologyLevel\":\"nvidia.com/gpu.clique\"}}}");
    assert_int_equal(g->api, TG_PG_KAI);
    assert_string_equal(g->key, "ml/k@scheduling.run.ai");
    assert_int_equal(g->min_member, 4);
    assert_string_equal(tg_str(g->topo_req), "topogang.io/rack");
    assert_string_equal(tg_str(g->topo_pref), "nvidia.com/gpu.clique");
    assert_string_equal(g->topo_pref_field, "spec.topologyConstraint.preferredTopologyLevel");
    assert_null(g->problem);
    tg_podgroup_free(&g);
    g = pg("{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":"
           "{\"name\":\"k\"},\"spec\":{\"queue\":\"q\"}}");
    assert_non_null(strstr(g->problem, "spec.minMember: is required"));
    tg_podgroup_free(&g);
    /* not a PodGroup API at all: skipped with an error */
    cJSON *j = json("{\"apiVersion\":\"example.com/v1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"x\"}}");
    assert_int_equal(tg_podgroup_decode_any(j, &D, &g), TG_EPARSE);
    assert_null(g);
    cJSON_Delete(j);
    /* the topogang.io one goes to its own decoder */
    g = pg("{\"apiVersion\":\"topogang.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"t\"},"
           "\"spec\":{\"minMember\":2,\"topology\":{\"required\":\"rack\"}}}");
    assert_int_equal(g->api, TG_PG_TOPOGANG);
    assert_string_equal(g->key, "default/t");
    assert_string_equal(tg_str(g->required), "rack");
    tg_podgroup_free(&g);
    assert_int_equal(tg_pg_api_of("scheduling.run.ai/v2alpha1"), TG_PG_KAI);
    assert_int_equal(tg_pg_api_of("scheduling.run.aix/v2"), -1);
}

/* ---- workloads ------------------------------------------------------------------------------ */

static void test_job_size(void **state)
{
    (void)state;
    struct tg_workload *w = wl("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
                               "\"namespace\":\"ml\",\"uid\":\"u\"},\"spec\":{\"parallelism\":4,\"completions\":8}}");
    assert_int_equal(w->kind, TG_WL_JOB);
    assert_string_equal(w->key, "ml/Job/j");
    assert_int_equal(w->size, 4);
    tg_workload_free(&w);
    /* completions left smaller than parallelism */
    w = wl("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":4,\"completions\":6},"
           "\"status\":{\"succeeded\":3}}");
    assert_int_equal(w->size, 3);
    tg_workload_free(&w);
    w = wl("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},\"spec\":{\"completions\":2,\"parallelism\":5}}");
    assert_int_equal(w->size, 2);
    tg_workload_free(&w);
    /* defaults: parallelism 1; suspend; the controller owner */
    w = wl("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"ownerReferences\":[{\"kind\":\"CronJob\","
           "\"name\":\"c\",\"controller\":true}]},\"spec\":{\"suspend\":true}}");
    assert_int_equal(w->size, 1);
    assert_true(w->suspended);
    assert_string_equal(tg_str(w->owner_kind), "CronJob");
    tg_workload_free(&w);
}

static void test_jobset_lws_kubeflow_size(void **state)
{
    (void)state;
    struct tg_workload *w = wl(
        "{\"kind\":\"JobSet\",\"metadata\":{\"name\":\"js\",\"namespace\":\"ml\",\"ownerReferences\":"
        "[{\"kind\":\"TrainJob\",\"name\":\"js\",\"controller\":true}]},\"spec\":{\"replicatedJobs\":["
        "{\"name\":\"leader\",\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":1}}},"
        "{\"name\":\"workers\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":4,\"completions\":3}}}]}}");
    assert_int_equal(w->kind, TG_WL_JOBSET);
    assert_int_equal(w->size, 1 + 2 * 3);
    assert_int_equal(w->npsets, 2);
    assert_string_equal(tg_str(w->owner_kind), "TrainJob");
    assert_string_equal(tg_str(w->rjobs[1].name), "workers");
    assert_int_equal(w->rjobs[1].replicas, 2);
    assert_int_equal(w->rjobs[1].size, 3);
    assert_int_equal(w->rjobs[1].excl, 0);
    tg_workload_free(&w);
    /* exclusive-topology: a replicated job's template before the JobSet's */
    w = wl("{\"kind\":\"JobSet\",\"metadata\":{\"name\":\"js\",\"annotations\":"
           "{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":\"topogang.io/rack\"}},\"spec\":"
           "{\"replicatedJobs\":[{\"name\":\"a\"},{\"name\":\"b\",\"template\":{\"metadata\":"
           "{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":\"nvidia.com/gpu.clique\"}}}}]}}");
    assert_string_equal(tg_str(w->rjobs[0].excl), "topogang.io/rack");
    assert_string_equal(tg_str(w->rjobs[1].excl), "nvidia.com/gpu.clique");
    assert_null(w->problem);
    tg_workload_free(&w);
    w = wl("{\"kind\":\"LeaderWorkerSet\",\"metadata\":{\"name\":\"l\",\"annotations\":"
           "{\"leaderworkerset.sigs.k8s.io/exclusive-topology\":\"nvidia.com/gpu.clique\"}},\"spec\":"
           "{\"replicas\":3,\"leaderWorkerTemplate\":{\"size\":4}}}");
    assert_int_equal(w->size, 4);
    assert_int_equal(w->replicas, 3);
    assert_string_equal(tg_str(w->excl), "nvidia.com/gpu.clique");
    assert_null(w->problem);
    tg_workload_free(&w);
    w = wl("{\"kind\":\"LeaderWorkerSet\",\"metadata\":{\"name\":\"l\"},\"spec\":{\"startupPolicy\":"
           "\"LeaderReady\",\"leaderWorkerTemplate\":{\"size\":4}}}");
    assert_non_null(strstr(w->problem, "spec.startupPolicy: LeaderReady"));
    tg_workload_free(&w);
    w = wl("{\"kind\":\"PyTorchJob\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"pytorchReplicaSpecs\":"
           "{\"Master\":{\"replicas\":1},\"Worker\":{\"replicas\":7}}}}");
    assert_int_equal(w->size, 8);
    assert_int_equal(w->npsets, 2);
    tg_workload_free(&w);
    w = wl("{\"kind\":\"MPIJob\",\"metadata\":{\"name\":\"m\"},\"spec\":{\"mpiReplicaSpecs\":"
           "{\"Launcher\":{},\"Worker\":{\"replicas\":2}}}}");
    assert_int_equal(w->size, 3);
    tg_workload_free(&w);
    w = wl("{\"kind\":\"MPIJob\",\"metadata\":{\"name\":\"m\"},\"spec\":{}}");
    assert_string_equal(w->problem, "spec.mpiReplicaSpecs: is required");
    tg_workload_free(&w);
    w = wl("{\"kind\":\"TrainJob\",\"metadata\":{\"name\":\"t\"},\"spec\":{\"trainer\":{\"numNodes\":3}}}");
    assert_int_equal(w->size, 3);
    tg_workload_free(&w);
    w = wl("{\"kind\":\"TrainJob\",\"metadata\":{\"name\":\"t\"},\"spec\":{\"runtimeRef\":{\"name\":\"r\"}}}");
    assert_non_null(strstr(w->problem, "spec.trainer.numNodes"));
    tg_workload_free(&w);
    cJSON *j = json("{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"}}");
    assert_int_equal(tg_workload_decode(j, &D, &w), TG_EPARSE);
    cJSON_Delete(j);
}

/* A count far past int64 (fuzz_liststream, regress-jobset-replicas-1e76):
 * it was converted to int64 before its range check, undefined (on x86 the
 * problem read "not -9223372036854775808"); now the range is checked first
 * and the problem names the value. metadata.generation had the same
 * conversion (read now as 0 when past int64). */
static void test_count_past_int64(void **state)
{
    (void)state;
    struct tg_workload *w = wl(
        "{\"kind\":\"JobSet\",\"metadata\":{\"name\":\"js\",\"namespace\":\"ml\"},\"spec\":"
        "{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":1e76,\"template\":{\"spec\":"
        "{\"parallelism\":4}}}]}}");
    assert_non_null(w->problem);
    assert_non_null(strstr(w->problem, "must be 0..100000, not 1000000000000000"));
    tg_workload_free(&w);
    w = wl("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":-1e300}}");
    assert_non_null(w->problem);
    assert_non_null(strstr(w->problem, "spec.parallelism: must be 0..1000000, not -1000000"));
    tg_workload_free(&w);
    w = wl("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":2.5}}");
    assert_string_equal(w->problem, "spec.parallelism: must be a whole number");
    tg_workload_free(&w);
    /* metadata.generation the same way (read as 0, the generation of nothing) */
    struct tg_podgroup *g = pg(
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":"
        "{\"name\":\"g\",\"namespace\":\"ml\",\"generation\":1e300},\"spec\":{\"minMember\":2}}");
    assert_int_equal(g->generation, 0);
    tg_podgroup_free(&g);
}

/* ---- a pod's gang fields --------------------------------------------------------------------- */

#define POD(meta, spec) \
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"" meta "},\"spec\":{\"containers\":[]" spec "}}"

static void test_pod_group_sources(void **state)
{
    (void)state;
    struct tg_pod *p = pod(POD(",\"labels\":{\"topogang.io/pod-group\":\"a\",\"scheduling.x-k8s.io/pod-group\":\"b\"},"
                               "\"annotations\":{\"pod-group-name\":\"c\"}", ",\"schedulingGroup\":{\"podGroupName\":\"d\"}"));
    assert_string_equal(tg_str(p->group), "a");
    assert_int_equal(p->group_api, TG_PG_TOPOGANG);
    tg_pod_free(&p);
    p = pod(POD(",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"b\"}", ",\"schedulingGroup\":{\"podGroupName\":\"d\"}"));
    assert_string_equal(tg_str(p->group), "b");
    assert_int_equal(p->group_api, TG_PG_XK8S);
    tg_pod_free(&p);
    p = pod(POD(",\"annotations\":{\"scheduling.k8s.io/group-name\":\"v\",\"pod-group-name\":\"k\"}",
                ",\"schedulingGroup\":{\"podGroupName\":\"d\"}"));
    assert_string_equal(tg_str(p->group), "d");
    assert_int_equal(p->group_api, TG_PG_UPSTREAM);
    tg_pod_free(&p);
    p = pod(POD(",\"annotations\":{\"scheduling.k8s.io/group-name\":\"v\",\"pod-group-name\":\"k\"}", ""));
    assert_string_equal(tg_str(p->group), "v");
    assert_int_equal(p->group_api, TG_PG_VOLCANO);
    tg_pod_free(&p);
    p = pod(POD(",\"annotations\":{\"pod-group-name\":\"k\"},\"ownerReferences\":[{\"kind\":\"Job\","
                "\"name\":\"j\",\"controller\":true}]", ""));
    assert_string_equal(tg_str(p->group), "k");
    assert_int_equal(p->group_api, TG_PG_KAI);
    assert_int_equal(p->derived, 0); /* an explicit group wins over the owner */
    tg_pod_free(&p);
}

static void test_pod_derived(void **state)
{
    (void)state;
    static const struct {
        const char *meta, *want;
    } cases[] = {
        {",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"train\",\"controller\":true}]", "Job/train"},
        {",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"js-w-0\",\"controller\":true}],"
         "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"js\"}", "JobSet/js"},
        {",\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"vllm-1\",\"controller\":true}],"
         "\"labels\":{\"leaderworkerset.sigs.k8s.io/name\":\"vllm\",\"leaderworkerset.sigs.k8s.io/group-index\":\"1\"}",
         "LeaderWorkerSet/vllm/1"},
        {",\"ownerReferences\":[{\"kind\":\"PyTorchJob\",\"name\":\"pt\",\"controller\":true}]", "PyTorchJob/pt"},
        {",\"ownerReferences\":[{\"kind\":\"MPIJob\",\"name\":\"m\",\"controller\":true}]", "MPIJob/m"},
        /* no known owner: none */
        {",\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"db\",\"controller\":true}]", NULL},
        {",\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web\",\"controller\":true}]", NULL},
        {",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"j\"}]", NULL}, /* not the controller */
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, POD("%s", ""), cases[i].meta);
        struct tg_pod *p = pod(text);
        if (cases[i].want) {
            assert_string_equal(tg_str(p->derived), cases[i].want);
            char key[256], want[256];
            snprintf(want, sizeof want, "ml/%s", cases[i].want);
            if (i == 2)
                strcpy(want, "ml/LeaderWorkerSet/vllm"); /* a group's workload: the LWS */
            assert_string_equal(tg_derived_owner_key(p->ns, p->derived, key, sizeof key), want);
        } else {
            assert_int_equal(p->derived, 0);
        }
        tg_pod_free(&p);
    }
    assert_int_equal(tg_derived_kind(tg_intern("LeaderWorkerSet/vllm/1")), TG_WL_LWS);
    assert_int_equal(tg_derived_kind(tg_intern("Jobs/x")), TG_WL_NONE);
}

/* topogang.io/gang-scope: lws puts an LWS group's pod in the whole LWS's
 * gang; another value is a warning naming the pod and the annotation, and
 * the pod stays in its group's gang. */
static void test_pod_gang_scope(void **state)
{
    (void)state;
    static const char *const meta =
        ",\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"vllm-1\",\"controller\":true}],"
        "\"labels\":{\"leaderworkerset.sigs.k8s.io/name\":\"vllm\",\"leaderworkerset.sigs.k8s.io/group-index\":\"1\"},"
        "\"annotations\":{\"topogang.io/gang-scope\":\"%s\"}";
    static const char *const scope[] = {"lws", "group", "set"};
    static const char *const want[] = {"LeaderWorkerSet/vllm", "LeaderWorkerSet/vllm/1",
                                       "LeaderWorkerSet/vllm/1"};
    for (int i = 0; i < 3; i++) {
        char m[512], text[1024];
        snprintf(m, sizeof m, meta, scope[i]);
        snprintf(text, sizeof text, POD("%s", ""), m);
        struct tg_pod *p = pod(text);
        assert_string_equal(tg_str(p->derived), want[i]);
        assert_int_equal(nwarn, i == 2);
        if (i == 2)
            assert_non_null(strstr(lastwarn, "Pod ml/p: metadata.annotations[topogang.io/gang-scope]: "
                                             "must be lws or group, not \"set\""));
        char key[256];
        assert_string_equal(tg_derived_owner_key(p->ns, p->derived, key, sizeof key),
                            "ml/LeaderWorkerSet/vllm");
        tg_pod_free(&p);
    }
}

static void test_pod_hints(void **state)
{
    (void)state;
    struct tg_pod *p = pod(POD(",\"annotations\":{\"topogang.io/topology-required\":\"rack\","
                               "\"kueue.x-k8s.io/podset-required-topology\":\"topology.kubernetes.io/zone\","
                               "\"kai.scheduler/topology-preferred-placement\":\"nvidia.com/gpu.clique\","
                               "\"topogang.io/min-member\":\"6\"}", ""));
    assert_non_null(p->hints);
    assert_string_equal(tg_str(p->hints->req), "rack");
    assert_int_equal(p->hints->req_src, TG_HINT_TOPOGANG); /* topogang's spelling first */
    assert_string_equal(tg_str(p->hints->pref), "nvidia.com/gpu.clique");
    assert_int_equal(p->hints->pref_src, TG_HINT_KAI);
    assert_int_equal(p->hints->min, 6);
    tg_pod_free(&p);
    p = pod(POD(",\"annotations\":{\"kueue.x-k8s.io/podset-preferred-topology\":\"topogang.io/rack\"}", ""));
    assert_int_equal(p->hints->pref_src, TG_HINT_KUEUE);
    assert_int_equal(p->hints->req, 0);
    tg_pod_free(&p);
    p = pod(POD(",\"annotations\":{\"topogang.io/min-member\":\"lots\"}", ""));
    assert_int_equal(p->hints->min, -1);
    assert_int_equal(nwarn, 1);
    assert_non_null(strstr(lastwarn, "metadata.annotations[topogang.io/min-member]"));
    tg_pod_free(&p);
    p = pod(POD(",\"annotations\":{\"other\":\"x\"}", ""));
    assert_null(p->hints);
    tg_pod_free(&p);
}

/* ---- derivation, through simulate --------------------------------------------------------------- */

/* Every owner kind forms its gang; each is placed all at once inside the
 * topology its members' annotations ask; a missing pod or owner waits. */
static void test_owner_gangs(void **state)
{
    (void)state;
    cJSON *res = sim(NULL, "owners.yaml", NULL);
    static const char *const sched[] = {"ml/Job/train", "ml/JobSet/js", "ml/LeaderWorkerSet/vllm/0",
                                        "ml/LeaderWorkerSet/vllm/1", "ml/PyTorchJob/pt",
                                        "ml/MPIJob/mpi", "ml/JobSet/tj"};
    static const int size[] = {4, 3, 2, 2, 4, 3, 2};
    for (int i = 0; i < 7; i++) {
        assert_string_equal(status_of(res, sched[i]), "Scheduled");
        assert_int_equal(placed(res, sched[i]), size[i]);
        assert_int_equal(cJSON_GetObjectItem(tu_gang(res, sched[i]), "minMember")->valueint, size[i]);
    }
    /* topology from the annotations: rack (a level name), Kueue's node label key, KAI's clique */
    int r = node_no(res, "ml/train-0-x0") / 4;
    for (int i = 1; i < 4; i++) {
        char k[64];
        snprintf(k, sizeof k, "ml/train-%d-x%d", i, i);
        assert_int_equal(node_no(res, k) / 4, r);
    }
    assert_string_equal(tu_str(tu_gang(res, "ml/Job/train"), "level"), "rack");
    r = node_no(res, "ml/js-leader-0-0-x") / 4;
    assert_int_equal(node_no(res, "ml/js-workers-0-0-x") / 4, r);
    assert_int_equal(node_no(res, "ml/js-workers-0-1-x") / 4, r);
    assert_int_equal(node_no(res, "ml/vllm-0") / 2, node_no(res, "ml/vllm-0-1") / 2);
    assert_int_equal(node_no(res, "ml/vllm-1") / 2, node_no(res, "ml/vllm-1-1") / 2);
    assert_string_equal(tu_str(tu_gang(res, "ml/LeaderWorkerSet/vllm/1"), "level"), "nvlink-domain");
    /* preferred only: the NVLink domain first */
    assert_string_equal(tu_str(tu_gang(res, "ml/PyTorchJob/pt"), "level"), "nvlink-domain");
    /* fewer pods than the Job runs at once; an owner not in the input */
    assert_string_equal(status_of(res, "ml/Job/partial"), "Unschedulable");
    assert_int_equal(placed(res, "ml/Job/partial"), 0);
    assert_non_null(strstr(tu_str(tu_gang(res, "ml/Job/partial"), "reason"), "2 pending + 0 bound < minMember 3"));
    assert_non_null(strstr(tu_str(tu_gang(res, "ml/Job/ghost"), "reason"), "waiting for Job ml/ghost"));
    /* no known owner: a gang of one */
    const cJSON *web = tu_gang(res, "ml/web-abc12");
    assert_non_null(web);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(web, "podGroup")));
    assert_string_equal(tu_str(web, "status"), "Scheduled");
    cJSON_Delete(res);
}

/* The kinds of owner the input holds no object of: their pods are gangs of
 * one, as before (a trace with Job owner references only). */
static void test_owner_kind_absent(void **state)
{
    (void)state;
    const char *y =
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ml, ownerReferences: "
        "[{apiVersion: batch/v1, kind: Job, name: j, uid: u, controller: true}]}\n"
        "spec: {schedulerName: topogang, containers: [{name: c, image: x}]}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ml, ownerReferences: "
        "[{apiVersion: batch/v1, kind: Job, name: j, uid: u, controller: true}]}\n"
        "spec: {schedulerName: topogang, containers: [{name: c, image: x}]}\n";
    cJSON *res = sim(NULL, NULL, y);
    assert_string_equal(status_of(res, "ml/a"), "Scheduled");
    assert_string_equal(status_of(res, "ml/b"), "Scheduled");
    assert_null(tu_gang(res, "ml/Job/j"));
    cJSON_Delete(res);
}

/* min-member overrides the owner's count; a bound member of this scheduler
 * counts, a bound pod of the same Job but another scheduler does not join. */
static cJSON *job_with_bound(const char *min)
{
    char *y = NULL;
    tu_cat(&y, "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml}\n"
               "spec: {parallelism: 8}\n");
    for (int i = 0; i < 4; i++)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: j-%d, namespace: ml, "
                   "annotations: {topogang.io/min-member: \"%s\"}, ownerReferences: [{apiVersion: batch/v1, "
                   "kind: Job, name: j, uid: u, controller: true}]}\nspec: {schedulerName: topogang%s, "
                   "containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]}\n",
               i, min, i == 3 ? ", nodeName: gpu-00004" : "");
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: j-x, namespace: ml, ownerReferences: "
               "[{apiVersion: batch/v1, kind: Job, name: j, uid: u, controller: true}]}\n"
               "spec: {nodeName: gpu-00005, containers: [{name: c, image: x, resources: {limits: "
               "{nvidia.com/gpu: 8}}}]}\n");
    cJSON *res = sim(NULL, NULL, y);
    free(y);
    return res;
}

static void test_min_member_and_bound(void **state)
{
    (void)state;
    /* 3 pending + 1 bound of ours = 4 */
    cJSON *res = job_with_bound("4");
    const cJSON *g = tu_gang(res, "ml/Job/j");
    assert_non_null(g);
    assert_int_equal(cJSON_GetObjectItem(g, "minMember")->valueint, 4);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(res, "ml/Job/j"), 3);
    cJSON_Delete(res);
    res = job_with_bound("5");
    g = tu_gang(res, "ml/Job/j");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_non_null(strstr(tu_str(g, "reason"), "3 pending + 1 bound < minMember 5"));
    cJSON_Delete(res);
}

/* The peers' PodGroups, each placed in the topology it asks. */
static void test_peer_gangs(void **state)
{
    (void)state;
    cJSON *res = sim(NULL, "peers.yaml", NULL);
    assert_string_equal(status_of(res, "peers/up"), "Scheduled");
    assert_int_equal(node_no(res, "peers/up-0") / 4, node_no(res, "peers/up-1") / 4);
    assert_string_equal(status_of(res, "peers/sp"), "Scheduled");
    assert_int_equal(cJSON_GetObjectItem(tu_gang(res, "peers/sp"), "minMember")->valueint, 3);
    assert_string_equal(status_of(res, "peers/vc"), "Scheduled");
    assert_string_equal(tu_str(tu_gang(res, "peers/vc"), "level"), "nvlink-domain");
    assert_int_equal(node_no(res, "peers/vc-0") / 2, node_no(res, "peers/vc-1") / 2);
    assert_string_equal(status_of(res, "peers/kai"), "Scheduled");
    int r = node_no(res, "peers/kai-0") / 4;
    for (int i = 1; i < 4; i++) {
        char k[32];
        snprintf(k, sizeof k, "peers/kai-%d", i);
        assert_int_equal(node_no(res, k) / 4, r);
    }
    cJSON_Delete(res);
}

/* Each bad PodGroup: its gang refused with the object and the field; the
 * rest is placed. */
static void test_bad_peers(void **state)
{
    (void)state;
    cJSON *res = sim(NULL, "bad.yaml", NULL);
    static const struct {
        const char *gang, *text;
    } want[] = {
        {"bad/vc-high", "PodGroup bad/vc-high (scheduling.volcano.sh/v1beta1): spec.networkTopology."
                        "highestTierAllowed: tier 7 does not exist"},
        {"bad/kai-nomin", "PodGroup bad/kai-nomin (scheduling.run.ai/v2alpha2): spec.minMember: is required"},
        {"bad/kai-level", "spec.topologyConstraint.requiredTopologyLevel: \"example.com/no-such-label\" "
                          "is neither a level"},
        {"bad/sp-typo", "PodGroup bad/sp-typo (scheduling.x-k8s.io/v1alpha1): spec.minMembers: unknown field"},
        {"bad/up-key", "spec.schedulingConstraints.topology[0].key: \"topology.kubernetes.io/region\""},
        {"bad/up-missing", "PodGroup bad/up-missing does not exist (pods name it by "
                           "spec.schedulingGroup.podGroupName"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cJSON *g = tu_gang(res, want[i].gang);
        assert_non_null(g);
        assert_string_equal(tu_str(g, "status"), "Unschedulable");
        if (!strstr(tu_str(g, "reason"), want[i].text))
            fail_msg("%s: %s", want[i].gang, tu_str(g, "reason"));
    }
    assert_string_equal(status_of(res, "bad/fine-0"), "Scheduled");
    cJSON_Delete(res);
}

/* Topology resolves against the policy in force: a level renamed keeps a
 * node label key working; tiers count from the nodes up (no hostname level:
 * tier 1 is the innermost level). */
static void test_policy_levels(void **state)
{
    (void)state;
    const char *pol = "topology:\n  levels:\n"
                      "    - {name: row, nodeLabel: topogang.io/rack}\n"
                      "    - {name: island, nodeLabel: nvidia.com/gpu.clique}\n"
                      "placement: {defaultPreferred: island}\n";
    cJSON *res = sim(pol, "peers.yaml", NULL);
    /* the key topogang.io/rack is the level "row"; the policy prefers an island inside it */
    assert_string_equal(status_of(res, "peers/up"), "Scheduled");
    assert_int_equal(node_no(res, "peers/up-0") / 4, node_no(res, "peers/up-1") / 4);
    /* Volcano tier 1: island (the clique) */
    assert_string_equal(tu_str(tu_gang(res, "peers/vc"), "level"), "island");
    assert_int_equal(node_no(res, "peers/vc-0") / 2, node_no(res, "peers/vc-1") / 2);
    cJSON_Delete(res);
    const char *y = "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                    "metadata: {name: t2, namespace: v}\nspec: {minMember: 1, networkTopology: "
                    "{mode: soft, highestTierAllowed: 2}}\n"
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: t2-0, namespace: v, annotations: "
                    "{scheduling.k8s.io/group-name: t2}}\nspec: {schedulerName: topogang, containers: "
                    "[{name: c, image: x}]}\n";
    res = sim(pol, NULL, y);
    assert_string_equal(status_of(res, "v/t2"), "Scheduled");
    cJSON_Delete(res);
    /* tier 3 with two levels: does not exist */
    char *y3 = strdup(y);
    y3[strstr(y3, "highestTierAllowed: 2") - y3 + 20] = '3';
    res = sim(pol, NULL, y3);
    assert_non_null(strstr(tu_str(tu_gang(res, "v/t2"), "reason"), "tier 3 does not exist"));
    free(y3);
    cJSON_Delete(res);
}

/* A member's annotation naming no level refuses the derived gang, naming the
 * pod and the annotation; members' annotations: the tightest required. */
static void test_derived_hints(void **state)
{
    (void)state;
    char *y = NULL;
    tu_cat(&y, "---\napiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p, namespace: h}\n"
               "spec: {pytorchReplicaSpecs: {Master: {replicas: 1}, Worker: {replicas: 1}}}\n");
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p-master-0, namespace: h, annotations: "
               "{topogang.io/topology-required: block}, ownerReferences: [{kind: PyTorchJob, name: p, "
               "controller: true}]}\nspec: {schedulerName: topogang, containers: [{name: c, image: x}]}\n");
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p-worker-0, namespace: h, annotations: "
               "{kueue.x-k8s.io/podset-required-topology: nvidia.com/gpu.clique}, ownerReferences: "
               "[{kind: PyTorchJob, name: p, controller: true}]}\nspec: {schedulerName: topogang, "
               "containers: [{name: c, image: x}]}\n");
    tu_cat(&y, "---\napiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: m, namespace: h}\n"
               "spec: {mpiReplicaSpecs: {Worker: {replicas: 1}}}\n");
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: m-worker-0, namespace: h, annotations: "
               "{kai.scheduler/topology-required-placement: example.com/pod}, ownerReferences: "
               "[{kind: MPIJob, name: m, controller: true}]}\nspec: {schedulerName: topogang, "
               "containers: [{name: c, image: x}]}\n");
    cJSON *res = sim(NULL, NULL, y);
    assert_string_equal(status_of(res, "h/PyTorchJob/p"), "Scheduled");
    assert_int_equal(node_no(res, "h/p-master-0") / 2, node_no(res, "h/p-worker-0") / 2);
    assert_string_equal(status_of(res, "h/MPIJob/m"), "Unschedulable");
    assert_non_null(strstr(tu_str(tu_gang(res, "h/MPIJob/m"), "reason"),
                           "MPIJob h/m: Pod h/m-worker-0: metadata.annotations["
                           "kai.scheduler/topology-required-placement]: \"example.com/pod\""));
    free(y);
    cJSON_Delete(res);
}

/* ---- a pod whose gang changes under an update ------------------------------------------- */

static int64_t now_ms = 1000000;
static int64_t clock_fn(void *ud)
{
    (void)ud;
    return now_ms;
}

static struct tg_pod *job_pod(const char *name, int owned, const char *node)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"%s},"
             "\"spec\":{\"schedulerName\":\"topogang\"%s%s%s,\"containers\":[{\"name\":\"c\","
             "\"image\":\"x\"}]}}",
             name, owned ? ",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"j\",\"controller\":true}]" : "",
             node ? ",\"nodeName\":\"" : "", node ? node : "", node ? "\"" : "");
    return pod(text);
}

/* The Job is deleted with its pods orphaned: the garbage collector takes the
 * owner reference off each pod, so an update moves a pending pod out of the
 * Job's gang (a gang of one now) and a bound one's record no longer names
 * it; neither may leave a pointer behind in the Job's gang (ASan says). */
static void test_pod_leaves_its_gang(void **state)
{
    (void)state;
    struct tg_policy pol;
    tg_policy_default(&pol);
    struct tg_engine e;
    struct tg_clock clk = {clock_fn, NULL};
    assert_int_equal(tg_engine_init(&e, &pol, &clk), 0);
    e.gangs.owner_kinds = TG_WL_ALL;
    struct tg_workload *w = wl("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"namespace\":\"ml\"},"
                               "\"spec\":{\"parallelism\":3}}");
    assert_int_equal(tg_engine_workload_set(&e, w), 0);
    struct tg_pod *a = job_pod("a", 1, NULL), *b = job_pod("b", 1, NULL), *c = job_pod("c", 1, "n1");
    assert_int_equal(tg_engine_pending_set(&e, a), 0);
    assert_int_equal(tg_engine_pending_set(&e, b), 0);
    assert_int_equal(tg_engine_bound_set(&e, c), 0);
    struct tg_grec *g = tg_gangs_get(&e.gangs, "ml/Job/j");
    assert_non_null(g);
    assert_int_equal(g->npending, 2);
    assert_int_equal(g->nmembers, 1);
    assert_int_equal(tg_grec_min(g), 3);
    /* orphaned: a moves to a gang of one, b stays; the old objects go */
    struct tg_pod *a2 = job_pod("a", 0, NULL), *c2 = job_pod("c", 0, "n1");
    assert_int_equal(tg_engine_pending_set(&e, a2), 0);
    tg_pod_free(&a);
    assert_int_equal(tg_engine_bound_set(&e, c2), 0); /* the record changes in place */
    tg_pod_free(&c);
    g = tg_gangs_get(&e.gangs, "ml/Job/j");
    assert_non_null(g);
    assert_int_equal(g->npending, 1);
    assert_ptr_equal(g->pending[0], b);
    assert_non_null(tg_gangs_get(&e.gangs, "ml/a"));
    /* the bound pod goes: it leaves the gang it joined */
    tg_engine_bound_gone(&e, "ml/c");
    g = tg_gangs_get(&e.gangs, "ml/Job/j");
    assert_int_equal(g->nmembers, 0);
    /* decisions read only live pods */
    for (int i = 0; i < 10; i++) {
        struct tg_decision d;
        assert_int_equal(tg_engine_next(&e, &d), 0);
        int none = d.kind == TG_D_NONE;
        tg_decision_free(&d);
        if (none)
            break;
    }
    tg_engine_pending_gone(&e, b);
    tg_engine_pending_gone(&e, a2);
    tg_engine_free(&e);
    tg_pod_free(&a2);
    tg_pod_free(&b);
    tg_pod_free(&c2);
    tg_workload_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upstream_podgroup),
        cmocka_unit_test(test_scheduler_plugins_podgroup),
        cmocka_unit_test(test_volcano_podgroup),
        cmocka_unit_test(test_volcano_subgroup_policy),
        cmocka_unit_test(test_kai_nested_subgroups),
        cmocka_unit_test(test_kai_podgroup),
        cmocka_unit_test(test_job_size),
        cmocka_unit_test(test_jobset_lws_kubeflow_size),
        cmocka_unit_test(test_count_past_int64),
        cmocka_unit_test(test_pod_group_sources),
        cmocka_unit_test(test_pod_derived),
        cmocka_unit_test(test_pod_gang_scope),
        cmocka_unit_test(test_pod_hints),
        cmocka_unit_test(test_owner_gangs),
        cmocka_unit_test(test_owner_kind_absent),
        cmocka_unit_test(test_min_member_and_bound),
        cmocka_unit_test(test_peer_gangs),
        cmocka_unit_test(test_bad_peers),
        cmocka_unit_test(test_policy_levels),
        cmocka_unit_test(test_derived_hints),
        cmocka_unit_test(test_pod_leaves_its_gang),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
