/* Constraints a pod states about other pods, its ports, volumes and
 * claims, through `simulate`'s JSON: inter-pod affinity and anti-affinity
 * (against bound pods, the symmetric rule, and between members of one
 * gang), topology spread, host ports, PV node affinity and unbound claims,
 * DRA claims, nodeName; the reasons in numbers; the engine's API for
 * PVs, PVCs, StorageClasses, ResourceClaims and Namespaces; the decoders. */
#include "testutil.h"
#include "model/objects.h"
#include "model/objstore.h"
#include "scheduler/engine.h"
#include "scheduler/internal.h" /* the tests embed an engine and look inside */
#include "util/err.h"
#include "util/intern.h"
#include "util/yamljson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
    "placement: {strategy: pack, defaultPreferred: rack}\n";

/* A node with gpus GPUs, zone and rack labels ("" omits one) and extra
 * labels ("k: v, k2: v2" or ""). */
static void node(char **y, const char *name, const char *zone, const char *rack, int gpus,
                 const char *labels, const char *spec)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels: {kubernetes.io/hostname: %s",
           name, name);
    if (*zone)
        tu_cat(y, ", topology.kubernetes.io/zone: %s", zone);
    if (*rack)
        tu_cat(y, ", topogang.io/rack: %s", rack);
    if (labels && *labels)
        tu_cat(y, ", %s", labels);
    tu_cat(y, "}\nspec: {%s}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
              "nvidia.com/gpu: \"%d\"}\n", spec ? spec : "", gpus);
}

static void group(char **y, const char *name, int min, const char *topology)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: ml}\n"
              "spec: {minMember: %d%s%s}\n", name, min, topology ? ", topology: " : "",
           topology ? topology : "");
}

/* A pending topogang pod in ns ml: labels "k: v, ..." (the group label
 * added when grp), spec lines indented by two, requests "nvidia.com/gpu: 1". */
static void pod(char **y, const char *name, const char *grp, const char *labels, const char *req,
                const char *spec)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n  labels: {", name);
    if (grp)
        tu_cat(y, "topogang.io/pod-group: %s%s", grp, labels && *labels ? ", " : "");
    tu_cat(y, "%s}\nspec:\n  schedulerName: topogang\n%s  containers:\n  - name: c\n"
              "    resources: {requests: {%s}}\n", labels ? labels : "", spec ? spec : "", req);
}

/* n members name-0.. of group grp with the same labels and spec. */
static void members(char **y, const char *prefix, const char *grp, int n, const char *labels,
                    const char *req, const char *spec)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        pod(y, name, grp, labels, req, spec);
    }
}

/* A pod bound to node (any scheduler's), in namespace ns. */
static void bound(char **y, const char *name, const char *ns, const char *nodename, const char *labels,
                  const char *spec)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s, labels: {%s}}\n"
              "spec:\n  nodeName: %s\n%s  containers:\n  - name: c\n    resources: {requests: {cpu: \"1\"}}\n"
              "status: {phase: Running}\n", name, ns, labels ? labels : "", nodename, spec ? spec : "");
}

static const char *status(const cJSON *res, const char *gang)
{
    const cJSON *g = tu_gang(res, gang);
    assert_non_null(g);
    return tu_str(g, "status");
}

static const char *reason(const cJSON *res, const char *gang)
{
    return tu_str(tu_gang(res, gang), "reason");
}

static void expect_reason(const cJSON *res, const char *gang, const char *part)
{
    const char *r = reason(res, gang);
    if (!r || !strstr(r, part)) {
        print_error("reason of %s: \"%s\"\nexpected to contain: \"%s\"\n", gang, r ? r : "(none)", part);
        fail();
    }
}

/* Nodes of pods prefix-0..n-1 (ns ml) into out; returns how many distinct. */
static int distinct_nodes(const cJSON *res, const char *prefix, int n, const char **out)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        char key[80];
        snprintf(key, sizeof key, "ml/%s-%d", prefix, i);
        out[i] = tu_node_of(res, key);
        assert_non_null(out[i]);
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= !strcmp(out[j], out[i]);
        k += !seen;
    }
    return k;
}

static const char *ANTI_SELF_HOST =
    "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
    "      - labelSelector: {matchLabels: {app: serve}}\n        topologyKey: kubernetes.io/hostname\n";

/* ---- inter-pod anti-affinity ---------------------------------------------------------- */

static void test_anti_one_per_node(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 4; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", i < 2 ? "r1" : "r2", 8, NULL, NULL);
    }
    group(&y, "serve", 4, NULL);
    members(&y, "serve", "serve", 4, "app: serve", "nvidia.com/gpu: 1", ANTI_SELF_HOST);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/serve"), "Scheduled");
    const char *at[4];
    assert_int_equal(distinct_nodes(res, "serve", 4, at), 4); /* without the term: all on one node */
    cJSON_Delete(res);

    /* a fifth member has no node left */
    char *y5 = strdup(y);
    char *p = strstr(y5, "minMember: 4");
    p[11] = '5';
    pod(&y5, "serve-4", "serve", "app: serve", "nvidia.com/gpu: 1", ANTI_SELF_HOST);
    res = tu_simulate(POLICY, y5);
    assert_string_equal(status(res, "ml/serve"), "Unschedulable");
    expect_reason(res, "ml/serve", "holds 4");
    expect_reason(res, "ml/serve", "limited by pod anti-affinity with ml/serve (its own gang) on kubernetes.io/hostname");
    cJSON_Delete(res);
    free(y5);
    free(y);
}

static void test_anti_bound_pods(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    bound(&y, "db-0", "ml", "n0", "app: db", NULL);
    bound(&y, "db-1", "ml", "n1", "app: db", NULL);
    bound(&y, "db-other", "other", "n2", "app: db", NULL); /* another namespace: not selected */
    const char *spec = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                       "      - labelSelector: {matchLabels: {app: db}}\n        topologyKey: kubernetes.io/hostname\n";
    pod(&y, "web", NULL, "app: web", "nvidia.com/gpu: 1", spec);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_node_of(res, "ml/web"), "n2");
    cJSON_Delete(res);

    /* a db pod of ml on every node: nowhere, with the reason in numbers */
    bound(&y, "db-2", "ml", "n2", "app: db", NULL);
    res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/web"), "Unschedulable");
    expect_reason(res, "ml/web", "3 nodes pod anti-affinity with ml/app=db on kubernetes.io/hostname");
    cJSON_Delete(res);
    free(y);
}

static void test_anti_zone_within_gang(void **state)
{
    (void)state;
    /* one member per zone: a term on a topology level above the node */
    char *y = NULL;
    const char *zones[3] = {"z1", "z2", "z3"};
    for (int z = 0; z < 3; z++)
        for (int i = 0; i < 3; i++) {
            char n[16];
            snprintf(n, sizeof n, "%s-n%d", zones[z], i);
            node(&y, n, zones[z], z == 0 ? "r1" : z == 1 ? "r2" : "r3", 8, NULL, NULL);
        }
    const char *spec = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                       "      - labelSelector: {matchLabels: {app: quorum}}\n        topologyKey: topology.kubernetes.io/zone\n";
    group(&y, "q", 3, NULL);
    members(&y, "q", "q", 3, "app: quorum", "nvidia.com/gpu: 1", spec);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/q"), "Scheduled");
    const char *at[3];
    distinct_nodes(res, "q", 3, at);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < i; j++)
            assert_false(at[i][1] == at[j][1]); /* "z1-n0": zone digit */
    cJSON_Delete(res);

    /* four members, three zones; and a zone-required gang of two can never */
    char *y2 = NULL;
    tu_cat(&y2, "%s", y);
    char *p = strstr(y2, "minMember: 3");
    p[11] = '4';
    pod(&y2, "q-3", "q", "app: quorum", "nvidia.com/gpu: 1", spec);
    group(&y2, "pair", 2, "{required: zone}");
    members(&y2, "pair", "pair", 2, "app: pair", "nvidia.com/gpu: 1",
            "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "      - labelSelector: {matchLabels: {app: pair}}\n        topologyKey: topology.kubernetes.io/zone\n");
    res = tu_simulate(POLICY, y2);
    assert_string_equal(status(res, "ml/q"), "Unschedulable");
    expect_reason(res, "ml/q", "limited by pod anti-affinity with ml/q (its own gang) on topology.kubernetes.io/zone");
    assert_string_equal(status(res, "ml/pair"), "Unschedulable");
    cJSON_Delete(res);
    free(y2);
    free(y);
}

static void test_anti_other_key(void **state)
{
    (void)state;
    /* a topologyKey that is no level of the policy: power domains across racks */
    char *y = NULL;
    for (int i = 0; i < 6; i++) {
        char n[8], l[48];
        snprintf(n, sizeof n, "n%d", i);
        snprintf(l, sizeof l, "example.com/power: p%d", i % 3);
        node(&y, n, "z1", i < 3 ? "r1" : "r2", 8, l, NULL);
    }
    const char *spec = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                       "      - labelSelector: {matchLabels: {app: x}}\n        topologyKey: example.com/power\n";
    group(&y, "x", 3, NULL);
    members(&y, "x", "x", 3, "app: x", "nvidia.com/gpu: 1", spec);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/x"), "Scheduled");
    const char *at[3];
    distinct_nodes(res, "x", 3, at);
    int power[3] = {0};
    for (int i = 0; i < 3; i++)
        power[(at[i][1] - '0') % 3]++;
    assert_int_equal(power[0] * power[1] * power[2], 1);
    cJSON_Delete(res);
    free(y);
}

static void test_anti_symmetric(void **state)
{
    (void)state;
    /* a bound pod's anti-affinity keeps the pods it selects away */
    char *y = NULL;
    for (int i = 0; i < 2; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    bound(&y, "loner", "ml", "n0", "app: loner",
          "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
          "      - labelSelector: {matchLabels: {app: web}}\n        topologyKey: kubernetes.io/hostname\n");
    group(&y, "web", 2, "{required: node}");
    members(&y, "web", "web", 2, "app: web", "nvidia.com/gpu: 1", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_node_of(res, "ml/web-0"), "n1");
    assert_string_equal(tu_node_of(res, "ml/web-1"), "n1");
    cJSON_Delete(res);

    /* the same term on n1 too: nowhere */
    bound(&y, "loner2", "ml", "n1", "app: loner",
          "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
          "      - labelSelector: {matchLabels: {app: web}}\n        topologyKey: kubernetes.io/hostname\n");
    res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/web"), "Unschedulable");
    expect_reason(res, "ml/web", "2 nodes pod anti-affinity of ml/loner on kubernetes.io/hostname");
    cJSON_Delete(res);
    free(y);
}

static void test_anti_between_pod_sets(void **state)
{
    (void)state;
    /* a launcher that wants no worker beside it, workers with no term: the
     * symmetric rule between two pod sets of one gang, either placed first */
    for (int big = 0; big < 2; big++) {
        char *y = NULL;
        for (int i = 0; i < 3; i++) {
            char n[8];
            snprintf(n, sizeof n, "n%d", i);
            node(&y, n, "z1", "r1", 8, NULL, NULL);
        }
        group(&y, "job", 5, NULL);
        pod(&y, "launcher", "job", "role: launcher", big ? "nvidia.com/gpu: 8" : "cpu: \"1\"",
            "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "      - labelSelector: {matchLabels: {role: worker}}\n        topologyKey: kubernetes.io/hostname\n");
        members(&y, "w", "job", 4, "role: worker", "nvidia.com/gpu: 2", NULL);
        cJSON *res = tu_simulate(POLICY, y);
        assert_string_equal(status(res, "ml/job"), "Scheduled");
        const char *l = tu_node_of(res, "ml/launcher");
        for (int i = 0; i < 4; i++) {
            char k[32];
            snprintf(k, sizeof k, "ml/w-%d", i);
            assert_string_not_equal(tu_node_of(res, k), l);
        }
        cJSON_Delete(res);
        free(y);
    }
}

static void test_anti_label_keys(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    /* matchLabelKeys: only pods of the same version repel */
    bound(&y, "v1", "ml", "n0", "app: x, version: \"1\"", NULL);
    bound(&y, "v2", "ml", "n1", "app: x, version: \"2\"", NULL);
    bound(&y, "t-a", "ml", "n1", "tenant: a", NULL);
    bound(&y, "t-b", "ml", "n2", "tenant: b", NULL);
    pod(&y, "new-v1", NULL, "app: x, version: \"1\"", "nvidia.com/gpu: 1",
        "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "      - labelSelector: {matchLabels: {app: x}}\n        matchLabelKeys: [version]\n"
        "        topologyKey: kubernetes.io/hostname\n");
    /* mismatchLabelKeys: keep away from other tenants */
    pod(&y, "new-a", NULL, "tenant: a", "nvidia.com/gpu: 8",
        "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "      - labelSelector: {matchExpressions: [{key: tenant, operator: Exists}]}\n"
        "        mismatchLabelKeys: [tenant]\n        topologyKey: kubernetes.io/hostname\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_not_equal(tu_node_of(res, "ml/new-v1"), "n0");
    assert_string_not_equal(tu_node_of(res, "ml/new-a"), "n2"); /* tenant b there */
    cJSON_Delete(res);
    free(y);
}

static void test_anti_namespaces(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    tu_cat(&y, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: prod, labels: {tier: prod}}\n");
    tu_cat(&y, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: dev, labels: {tier: dev}}\n");
    bound(&y, "p", "prod", "n0", "app: db", NULL);
    bound(&y, "d", "dev", "n1", "app: db", NULL);
    bound(&y, "o", "other", "n2", "app: db", NULL);
    pod(&y, "by-selector", NULL, "", "nvidia.com/gpu: 1",
        "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "      - labelSelector: {matchLabels: {app: db}}\n        namespaceSelector: {matchLabels: {tier: prod}}\n"
        "        topologyKey: kubernetes.io/hostname\n"
        "      - labelSelector: {matchLabels: {app: db}}\n        namespaces: [other]\n"
        "        topologyKey: kubernetes.io/hostname\n");
    pod(&y, "everywhere", NULL, "", "nvidia.com/gpu: 1",
        "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "      - labelSelector: {matchLabels: {app: db}}\n        namespaceSelector: {}\n"
        "        topologyKey: kubernetes.io/hostname\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_node_of(res, "ml/by-selector"), "n1");
    assert_string_equal(status(res, "ml/everywhere"), "Unschedulable");
    expect_reason(res, "ml/everywhere", "pod anti-affinity with */app=db on kubernetes.io/hostname");
    cJSON_Delete(res);
    free(y);
}

/* ---- inter-pod affinity ----------------------------------------------------------------- */

static void test_affinity(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "a0", "z1", "r1", 8, NULL, NULL);
    node(&y, "a1", "z1", "r1", 8, NULL, NULL);
    node(&y, "b0", "z2", "r2", 8, NULL, NULL);
    node(&y, "b1", "z2", "r2", 8, NULL, NULL);
    node(&y, "nolabel", "", "r3", 8, NULL, NULL);
    const char *to_cache = "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                           "      - labelSelector: {matchLabels: {app: cache}}\n"
                           "        topologyKey: topology.kubernetes.io/zone\n";
    pod(&y, "lonely", NULL, "app: web", "nvidia.com/gpu: 1", to_cache);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/lonely"), "Unschedulable");
    expect_reason(res, "ml/lonely", "pod affinity: no ml/app=cache pod in its topology.kubernetes.io/zone");
    expect_reason(res, "ml/lonely", "1 node no topology.kubernetes.io/zone label");
    cJSON_Delete(res);

    bound(&y, "cache", "ml", "b1", "app: cache", NULL);
    group(&y, "web", 2, NULL);
    members(&y, "web", "web", 2, "app: web", "nvidia.com/gpu: 4", to_cache);
    res = tu_simulate(POLICY, y);
    const char *at[2];
    distinct_nodes(res, "web", 2, at);
    for (int i = 0; i < 2; i++)
        assert_int_equal(at[i][0], 'b'); /* zone z2, where the cache is */
    cJSON_Delete(res);
    free(y);
}

static void test_affinity_first_pod(void **state)
{
    (void)state;
    /* a series that matches its own term: the first member may go anywhere,
     * the others follow it into its zone */
    char *y = NULL;
    node(&y, "a0", "z1", "r1", 8, NULL, NULL);
    node(&y, "a1", "z1", "r2", 8, NULL, NULL);
    node(&y, "b0", "z2", "r3", 8, NULL, NULL);
    const char *self = "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                       "      - labelSelector: {matchLabels: {app: ring}}\n"
                       "        topologyKey: topology.kubernetes.io/zone\n";
    group(&y, "ring", 2, NULL);
    members(&y, "ring", "ring", 2, "app: ring", "nvidia.com/gpu: 8", self);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/ring"), "Scheduled");
    const char *at[2];
    distinct_nodes(res, "ring", 2, at);
    assert_int_equal(at[0][0], 'a');
    assert_int_equal(at[1][0], 'a');
    cJSON_Delete(res);

    /* three members: two zones would hold them, one zone not */
    char *p = strstr(y, "minMember: 2");
    p[11] = '3';
    pod(&y, "ring-2", "ring", "app: ring", "nvidia.com/gpu: 8", self);
    res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/ring"), "Unschedulable");
    cJSON_Delete(res);
    free(y);
}

static void test_affinity_between_pod_sets(void **state)
{
    (void)state;
    /* web members want the gang's own cache beside them (hostname): the
     * cache is placed first, then the web pods follow it */
    char *y = NULL;
    for (int i = 0; i < 4; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", i < 2 ? "r1" : "r2", 8, NULL, NULL);
    }
    group(&y, "svc", 3, NULL);
    pod(&y, "cache", "svc", "app: cache", "cpu: \"1\"", NULL);
    members(&y, "web", "svc", 2, "app: web", "nvidia.com/gpu: 4",
            "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "      - labelSelector: {matchLabels: {app: cache}}\n        topologyKey: kubernetes.io/hostname\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/svc"), "Scheduled");
    const char *c = tu_node_of(res, "ml/cache");
    assert_string_equal(tu_node_of(res, "ml/web-0"), c);
    assert_string_equal(tu_node_of(res, "ml/web-1"), c);
    cJSON_Delete(res);
    free(y);
}

static void test_preferred(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0", "z1", "r1", 8, NULL, NULL);
    node(&y, "n1", "z1", "r1", 8, NULL, NULL);
    node(&y, "n2", "z1", "r1", 8, NULL, NULL);
    bound(&y, "db", "ml", "n0", "app: db", NULL);
    bound(&y, "noisy", "ml", "n1", "app: noisy", NULL);
    pod(&y, "near-db", NULL, "", "nvidia.com/gpu: 1",
        "  affinity:\n    podAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
        "      - weight: 80\n        podAffinityTerm:\n          labelSelector: {matchLabels: {app: db}}\n"
        "          topologyKey: kubernetes.io/hostname\n");
    pod(&y, "quiet", NULL, "", "nvidia.com/gpu: 1",
        "  affinity:\n    podAntiAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
        "      - weight: 100\n        podAffinityTerm:\n          labelSelector: {matchExpressions: [{key: app, operator: Exists}]}\n"
        "          topologyKey: kubernetes.io/hostname\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_node_of(res, "ml/near-db"), "n0");
    assert_string_equal(tu_node_of(res, "ml/quiet"), "n2");
    cJSON_Delete(res);
    free(y);
}

/* ---- topology spread ------------------------------------------------------------------------ */

static int zone_count(const char *const *at, int n, char z)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += at[i][1] == z;
    return k;
}

static void spread_cluster(char **y, int zones, int nodes_per_zone)
{
    for (int z = 0; z < zones; z++)
        for (int i = 0; i < nodes_per_zone; i++) {
            char n[16], zn[8], r[8];
            snprintf(n, sizeof n, "z%d-n%d", z + 1, i);
            snprintf(zn, sizeof zn, "z%d", z + 1);
            snprintf(r, sizeof r, "r%d", z + 1);
            node(y, n, zn, r, 8, NULL, NULL);
        }
}

static const char *SPREAD_ZONE =
    "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n"
    "    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: s}}\n";

static void test_spread_zone(void **state)
{
    (void)state;
    char *y = NULL;
    spread_cluster(&y, 2, 2);
    group(&y, "s", 4, NULL);
    members(&y, "s", "s", 4, "app: s", "nvidia.com/gpu: 1", SPREAD_ZONE);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/s"), "Scheduled");
    const char *at[4];
    distinct_nodes(res, "s", 4, at);
    assert_int_equal(zone_count(at, 4, '1'), 2); /* pack alone would put all four on one node */
    assert_int_equal(zone_count(at, 4, '2'), 2);
    cJSON_Delete(res);

    /* a zone-required gang cannot spread: after one member per zone, no more */
    char *y2 = NULL;
    spread_cluster(&y2, 2, 2);
    group(&y2, "s", 2, "{required: zone}");
    members(&y2, "s", "s", 2, "app: s", "nvidia.com/gpu: 1", SPREAD_ZONE);
    res = tu_simulate(POLICY, y2);
    assert_string_equal(status(res, "ml/s"), "Unschedulable");
    expect_reason(res, "ml/s", "topology spread maxSkew 1 on topology.kubernetes.io/zone");
    cJSON_Delete(res);
    free(y2);
    free(y);
}

static void test_spread_existing_skew(void **state)
{
    (void)state;
    char *y = NULL;
    spread_cluster(&y, 2, 2);
    bound(&y, "old-0", "ml", "z1-n0", "app: s", NULL);
    bound(&y, "old-1", "ml", "z1-n1", "app: s", NULL);
    group(&y, "s", 3, NULL);
    members(&y, "s", "s", 3, "app: s", "nvidia.com/gpu: 1", SPREAD_ZONE);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/s"), "Scheduled");
    const char *at[3];
    distinct_nodes(res, "s", 3, at);
    /* final counts 2 + z1 members, 0 + z2 members: skew at most 1 */
    int z1 = 2 + zone_count(at, 3, '1'), z2 = zone_count(at, 3, '2');
    assert_true(abs(z1 - z2) <= 1);
    assert_true(zone_count(at, 3, '2') >= 2);
    cJSON_Delete(res);
    free(y);
}

static void test_spread_hostname(void **state)
{
    (void)state;
    char *y = NULL;
    spread_cluster(&y, 1, 4);
    group(&y, "s", 6, NULL);
    members(&y, "s", "s", 6, "app: s", "nvidia.com/gpu: 1",
            "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: kubernetes.io/hostname\n"
            "    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: s}}\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/s"), "Scheduled");
    const char *at[6];
    distinct_nodes(res, "s", 6, at);
    int per[4] = {0};
    for (int i = 0; i < 6; i++)
        per[at[i][4] - '0']++;
    for (int i = 0; i < 4; i++)
        assert_true(per[i] == 1 || per[i] == 2);
    cJSON_Delete(res);
    free(y);
}

static void test_spread_min_domains(void **state)
{
    (void)state;
    const char *spec = "  topologySpreadConstraints:\n  - maxSkew: 1\n    minDomains: 3\n"
                       "    topologyKey: topology.kubernetes.io/zone\n"
                       "    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: s}}\n";
    for (int n = 2; n <= 3; n++) {
        char *y = NULL;
        spread_cluster(&y, 2, 2);
        group(&y, "s", n, NULL);
        members(&y, "s", "s", n, "app: s", "nvidia.com/gpu: 1", spec);
        cJSON *res = tu_simulate(POLICY, y);
        /* two zones < minDomains 3: the minimum counts as 0, one per zone */
        assert_string_equal(status(res, "ml/s"), n == 2 ? "Scheduled" : "Unschedulable");
        cJSON_Delete(res);
        free(y);
    }
}

static void test_spread_policies(void **state)
{
    (void)state;
    /* zone z3 cannot take the pods (nodeSelector / taint): with Honor it is
     * no domain, with Ignore its 0 pins the minimum */
    const char *zsel = "  nodeSelector: {pool: gpu}\n";
    for (int ignore = 0; ignore < 2; ignore++) {
        char *y = NULL;
        node(&y, "z1-n0", "z1", "r1", 8, "pool: gpu", NULL);
        node(&y, "z2-n0", "z2", "r2", 8, "pool: gpu", NULL);
        node(&y, "z3-n0", "z3", "r3", 8, "pool: cpu", NULL);
        group(&y, "s", 4, NULL);
        char spec[512];
        snprintf(spec, sizeof spec,
                 "%s  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n"
                 "    whenUnsatisfiable: DoNotSchedule\n    nodeAffinityPolicy: %s\n"
                 "    labelSelector: {matchLabels: {app: s}}\n", zsel, ignore ? "Ignore" : "Honor");
        members(&y, "s", "s", 4, "app: s", "nvidia.com/gpu: 1", spec);
        cJSON *res = tu_simulate(POLICY, y);
        assert_string_equal(status(res, "ml/s"), ignore ? "Unschedulable" : "Scheduled");
        cJSON_Delete(res);
        free(y);
    }
    for (int honor = 0; honor < 2; honor++) {
        char *y = NULL;
        node(&y, "z1-n0", "z1", "r1", 8, NULL, NULL);
        node(&y, "z2-n0", "z2", "r2", 8, NULL, NULL);
        node(&y, "z3-n0", "z3", "r3", 8, NULL, "taints: [{key: bad, effect: NoSchedule}]");
        group(&y, "s", 4, NULL);
        char spec[512];
        snprintf(spec, sizeof spec,
                 "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n"
                 "    whenUnsatisfiable: DoNotSchedule\n    nodeTaintsPolicy: %s\n"
                 "    labelSelector: {matchLabels: {app: s}}\n", honor ? "Honor" : "Ignore");
        members(&y, "s", "s", 4, "app: s", "nvidia.com/gpu: 1", spec);
        cJSON *res = tu_simulate(POLICY, y);
        assert_string_equal(status(res, "ml/s"), honor ? "Scheduled" : "Unschedulable");
        cJSON_Delete(res);
        free(y);
    }
}

static void test_spread_other_key_and_soft(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 4; i++) {
        char n[8], l[48];
        snprintf(n, sizeof n, "n%d", i);
        snprintf(l, sizeof l, "example.com/power: p%d", i % 2);
        node(&y, n, "z1", "r1", 8, l, NULL);
    }
    group(&y, "s", 4, NULL);
    members(&y, "s", "s", 4, "app: s", "nvidia.com/gpu: 1",
            "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: example.com/power\n"
            "    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: s}}\n");
    /* ScheduleAnyway: a score; the single pod goes where fewer match */
    bound(&y, "busy", "ml", "n0", "app: soft", NULL);
    bound(&y, "busy2", "ml", "n1", "app: soft", NULL);
    pod(&y, "soft", NULL, "app: soft", "nvidia.com/gpu: 1",
        "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: kubernetes.io/hostname\n"
        "    whenUnsatisfiable: ScheduleAnyway\n    labelSelector: {matchLabels: {app: soft}}\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/s"), "Scheduled");
    const char *at[4];
    distinct_nodes(res, "s", 4, at);
    int p0 = 0;
    for (int i = 0; i < 4; i++)
        p0 += (at[i][1] - '0') % 2 == 0;
    assert_int_equal(p0, 2);
    const char *soft = tu_node_of(res, "ml/soft");
    assert_true(!strcmp(soft, "n2") || !strcmp(soft, "n3"));
    cJSON_Delete(res);
    free(y);
}

static void test_spread_missing_label(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "nolabel", "", "r1", 8, NULL, NULL);
    pod(&y, "p", NULL, "app: s", "nvidia.com/gpu: 1", SPREAD_ZONE);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/p"), "Unschedulable");
    expect_reason(res, "ml/p", "1 node no topology.kubernetes.io/zone label");
    cJSON_Delete(res);
    free(y);
}

/* ---- host ports --------------------------------------------------------------------------------- */

static void test_host_ports(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    /* a hostNetwork agent on n1 holds 29500 on every address */
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: nccl-agent, namespace: kube-system}\n"
               "spec:\n  nodeName: n1\n  hostNetwork: true\n  containers:\n  - name: c\n"
               "    ports: [{containerPort: 29500}]\nstatus: {phase: Running}\n");
    group(&y, "nccl", 2, NULL);
    for (int i = 0; i < 2; i++)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: nccl-%d, namespace: ml, labels: "
                   "{topogang.io/pod-group: nccl}}\nspec:\n  schedulerName: topogang\n  hostNetwork: true\n"
                   "  containers:\n  - name: c\n    ports: [{containerPort: 29500}, {containerPort: 53, protocol: UDP}]\n"
                   "    resources: {requests: {nvidia.com/gpu: 1}}\n", i);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/nccl"), "Scheduled");
    const char *a = tu_node_of(res, "ml/nccl-0"), *b = tu_node_of(res, "ml/nccl-1");
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, "n1");
    assert_string_not_equal(b, "n1");
    cJSON_Delete(res);

    /* a third member: no node left; the reason names the port */
    char *q = strstr(y, "minMember: 2");
    q[11] = '3';
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: nccl-2, namespace: ml, labels: "
               "{topogang.io/pod-group: nccl}}\nspec:\n  schedulerName: topogang\n  hostNetwork: true\n"
               "  containers:\n  - name: c\n    ports: [{containerPort: 29500}, {containerPort: 53, protocol: UDP}]\n"
               "    resources: {requests: {nvidia.com/gpu: 1}}\n");
    /* other protocols and addresses do not collide */
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: udp, namespace: ml}\n"
               "spec:\n  schedulerName: topogang\n  nodeSelector: {kubernetes.io/hostname: n1}\n  containers:\n"
               "  - name: c\n    ports: [{containerPort: 1, hostPort: 29500, protocol: UDP}]\n"
               "    resources: {requests: {nvidia.com/gpu: 1}}\n"
               "---\napiVersion: v1\nkind: Pod\nmetadata: {name: ip, namespace: ml}\n"
               "spec:\n  schedulerName: topogang\n  nodeSelector: {kubernetes.io/hostname: n1}\n  containers:\n"
               "  - name: c\n    ports: [{containerPort: 1, hostPort: 29500, hostIP: 10.0.0.1}]\n"
               "    resources: {requests: {nvidia.com/gpu: 1}}\n");
    res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/nccl"), "Unschedulable");
    expect_reason(res, "ml/nccl", "host port TCP/29500 in use");
    assert_string_equal(tu_node_of(res, "ml/udp"), "n1");
    assert_string_equal(status(res, "ml/ip"), "Unschedulable"); /* 0.0.0.0 on n1 covers 10.0.0.1 */
    expect_reason(res, "ml/ip", "host port TCP 10.0.0.1:29500 in use");
    cJSON_Delete(res);
    free(y);
}

/* ---- volumes and claims ------------------------------------------------------------------------- */

static void storage(char **y)
{
    tu_cat(y, "---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\n"
              "provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n"
              "---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\n"
              "provisioner: x\nvolumeBindingMode: Immediate\n"
              "---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-n2}\n"
              "spec:\n  capacity: {storage: 1Ti}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n"
              "  claimRef: {namespace: ml, name: data-0}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n"
              "      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n2]}]\n"
              "---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-any}\n"
              "spec:\n  capacity: {storage: 1Ti}\n  accessModes: [ReadWriteMany]\n"
              "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data-0, namespace: ml}\n"
              "spec: {storageClassName: local, volumeName: pv-n2}\nstatus: {phase: Bound}\n"
              "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: shared, namespace: ml}\n"
              "spec: {volumeName: pv-any}\nstatus: {phase: Bound}\n"
              "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: later, namespace: ml}\n"
              "spec: {storageClassName: local}\nstatus: {phase: Pending}\n"
              "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: soon, namespace: ml}\n"
              "spec: {storageClassName: fast}\nstatus: {phase: Pending}\n");
}

static void claim_pod(char **y, const char *name, const char *grp, const char *claim)
{
    char spec[256];
    snprintf(spec, sizeof spec, "  volumes:\n  - name: v\n    persistentVolumeClaim: {claimName: %s}\n"
                                "  - name: s\n    persistentVolumeClaim: {claimName: shared}\n", claim);
    pod(y, name, grp, "", "nvidia.com/gpu: 1", spec);
}

static void test_volumes(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    storage(&y);
    claim_pod(&y, "bound", NULL, "data-0");
    claim_pod(&y, "wffc", NULL, "later");
    claim_pod(&y, "immediate", NULL, "soon");
    claim_pod(&y, "missing", NULL, "nope");
    pod(&y, "ephemeral", NULL, "", "nvidia.com/gpu: 1",
        "  volumes:\n  - name: scratch\n    ephemeral: {volumeClaimTemplate: {spec: {storageClassName: local}}}\n");
    tu_cat(&y, "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: ephemeral-scratch, namespace: ml}\n"
               "spec: {storageClassName: local}\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_node_of(res, "ml/bound"), "n2");
    assert_string_equal(status(res, "ml/wffc"), "Unschedulable");
    expect_reason(res, "ml/wffc", "PVC ml/later waits for its first consumer (StorageClass local, "
                                  "WaitForFirstConsumer): binding volumes is not supported by topogang yet");
    expect_reason(res, "ml/immediate", "PVC ml/soon is not bound yet (StorageClass fast binds Immediate");
    expect_reason(res, "ml/missing", "PersistentVolumeClaim ml/nope not found");
    expect_reason(res, "ml/ephemeral", "PVC ml/ephemeral-scratch waits for its first consumer");
    cJSON_Delete(res);

    /* the volume's node is full: the reason names the volume */
    char *y2 = NULL;
    tu_cat(&y2, "%s", y);
    tu_cat(&y2, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: hog, namespace: x}\nspec:\n  nodeName: n2\n"
                "  containers:\n  - name: c\n    resources: {requests: {nvidia.com/gpu: 8}}\n");
    res = tu_simulate(POLICY, y2);
    assert_string_equal(status(res, "ml/bound"), "Unschedulable");
    expect_reason(res, "ml/bound", "2 nodes volume node affinity of PV pv-n2 (PVC ml/data-0)");
    cJSON_Delete(res);
    free(y2);
    free(y);
}

static void test_volumes_in_gang(void **state)
{
    (void)state;
    /* one member with a claim that cannot be bound keeps the whole gang out */
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    storage(&y);
    group(&y, "g", 2, NULL);
    claim_pod(&y, "g-0", "g", "data-0");
    claim_pod(&y, "g-1", "g", "later");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(status(res, "ml/g"), "Unschedulable");
    assert_null(tu_node_of(res, "ml/g-0"));
    expect_reason(res, "ml/g", "not supported by topogang yet");
    cJSON_Delete(res);
    free(y);
}

static void test_dra(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    tu_cat(&y, "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: gpu-a, namespace: ml}\n"
               "spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu}}]}}\n"
               "status:\n  allocation:\n    devices: {results: []}\n    nodeSelector:\n      nodeSelectorTerms:\n"
               "      - matchFields: [{key: metadata.name, operator: In, values: [n1]}]\n"
               "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: gpu-b, namespace: ml}\n"
               "spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu}}]}}\n"
               "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: tmpl-pod-gpu-x1, namespace: ml}\n"
               "status: {allocation: {devices: {results: []}}}\n");
    pod(&y, "allocated", NULL, "", "cpu: \"1\"", "  resourceClaims:\n  - {name: g, resourceClaimName: gpu-a}\n");
    pod(&y, "unallocated", NULL, "", "cpu: \"1\"", "  resourceClaims:\n  - {name: g, resourceClaimName: gpu-b}\n");
    pod(&y, "absent", NULL, "", "cpu: \"1\"", "  resourceClaims:\n  - {name: g, resourceClaimName: nope}\n");
    pod(&y, "uncreated", NULL, "", "cpu: \"1\"", "  resourceClaims:\n  - {name: g, resourceClaimTemplateName: t}\n");
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: tmpl-pod, namespace: ml}\n"
               "spec:\n  schedulerName: topogang\n  resourceClaims:\n  - {name: gpu, resourceClaimTemplateName: t}\n"
               "  containers:\n  - name: c\n    resources: {requests: {cpu: \"1\"}}\n"
               "status: {resourceClaimStatuses: [{name: gpu, resourceClaimName: tmpl-pod-gpu-x1}]}\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_node_of(res, "ml/allocated"), "n1");
    assert_string_equal(status(res, "ml/unallocated"), "Unschedulable");
    expect_reason(res, "ml/unallocated", "ResourceClaim ml/gpu-b is not allocated: DRA allocation is not "
                                         "supported by topogang yet");
    expect_reason(res, "ml/absent", "ResourceClaim ml/nope not found");
    expect_reason(res, "ml/uncreated", "is not created yet");
    assert_non_null(tu_node_of(res, "ml/tmpl-pod"));
    cJSON_Delete(res);
    free(y);
}

/* ---- nodeName and matchFields ------------------------------------------------------------------------ */

static void test_node_name(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
    }
    /* spec.nodeName set by the user: the pod is usage, never placed again */
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: pinned, namespace: ml}\n"
               "spec:\n  schedulerName: topogang\n  nodeName: n1\n  containers:\n  - name: c\n"
               "    resources: {requests: {nvidia.com/gpu: 6}}\n");
    pod(&y, "by-field", NULL, "", "nvidia.com/gpu: 4",
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        nodeSelectorTerms:\n        - matchFields: [{key: metadata.name, operator: In, values: [n1, n2]}]\n");
    cJSON *res = tu_simulate(POLICY, y);
    assert_null(tu_gang(res, "ml/pinned"));
    assert_string_equal(tu_node_of(res, "ml/by-field"), "n2"); /* n1 has 2 GPUs left */
    cJSON_Delete(res);
    free(y);
}

/* ---- the engine's API for volumes and claims --------------------------------------------------------- */

static int64_t now_ms = 1000;

static int64_t clock0(void *ud)
{
    (void)ud;
    return now_ms;
}

/* The next decision, a few minutes on (backoffs over). */
static void next(struct tg_engine *e, struct tg_decision *d)
{
    now_ms += 300000;
    assert_int_equal(tg_engine_next(e, d), 0);
}

static int grab(void *ud, cJSON *root, const struct tg_yaml_lines *l)
{
    (void)l;
    *(cJSON **)ud = root;
    return 0;
}

/* The one document of a YAML text (cJSON_Delete it). */
static cJSON *yaml1(const char *text)
{
    struct tg_sb err = {0};
    cJSON *out = NULL;
    assert_int_equal(tg_yaml_parse(text, strlen(text), "t", grab, &out, &err), 0);
    tg_sb_free(&err);
    return out;
}

static void test_engine_api(void **state)
{
    (void)state;
    struct tg_policy pol;
    struct tg_sb err = {0};
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "p", &pol, &err), 0);
    struct tg_engine e;
    struct tg_clock clk = {clock0, NULL};
    assert_int_equal(tg_engine_init(&e, &pol, &clk), 0);
    for (int i = 0; i < 2; i++) {
        char *y = NULL;
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        node(&y, n, "z1", "r1", 8, NULL, NULL);
        cJSON *j = yaml1(y);
        struct tg_node_obj *o;
        assert_int_equal(tg_node_decode(j, NULL, &o), 0);
        assert_int_equal(tg_engine_node_set(&e, o), 0);
        cJSON_Delete(j);
        free(y);
    }
    char *y = NULL;
    pod(&y, "p", NULL, "", "nvidia.com/gpu: 1",
        "  volumes:\n  - name: v\n    persistentVolumeClaim: {claimName: data}\n"
        "  resourceClaims:\n  - {name: g, resourceClaimName: gpu}\n");
    cJSON *j = yaml1(y);
    struct tg_pod *p;
    assert_int_equal(tg_pod_decode(j, TG_DECODE_SPEC, NULL, &p), 0);
    cJSON_Delete(j);
    free(y);
    assert_int_equal(tg_engine_pending_set(&e, p), 0);

    struct tg_decision d;
    next(&e, &d);
    assert_int_equal(d.kind, TG_D_UNSCHEDULABLE);
    assert_non_null(strstr(d.reason, "PersistentVolumeClaim ml/data not found"));
    tg_decision_free(&d);

    /* the PVC waits for its first consumer */
    struct tg_pvc *c;
    j = yaml1("kind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ml}\nspec: {storageClassName: local}\n");
    assert_int_equal(tg_pvc_decode(j, NULL, &c), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_pvc_set(&e, c), 0);
    struct tg_storageclass *sc;
    j = yaml1("kind: StorageClass\nmetadata: {name: local}\nvolumeBindingMode: WaitForFirstConsumer\n");
    assert_int_equal(tg_sc_decode(j, NULL, &sc), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_sc_set(&e, sc), 0);
    next(&e, &d);
    assert_int_equal(d.kind, TG_D_UNSCHEDULABLE);
    assert_non_null(strstr(d.reason, "binding volumes is not supported by topogang yet"));
    tg_decision_free(&d);

    /* bound to a PV on n1; the claim is not allocated */
    j = yaml1("kind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ml}\n"
              "spec: {storageClassName: local, volumeName: pv1}\nstatus: {phase: Bound}\n");
    assert_int_equal(tg_pvc_decode(j, NULL, &c), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_pvc_set(&e, c), 0);
    struct tg_pv *v;
    j = yaml1("kind: PersistentVolume\nmetadata: {name: pv1}\nspec:\n  nodeAffinity:\n    required:\n"
              "      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]}]\n");
    assert_int_equal(tg_pv_decode(j, NULL, &v), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_pv_set(&e, v), 0);
    struct tg_rclaim *rc;
    j = yaml1("kind: ResourceClaim\nmetadata: {name: gpu, namespace: ml}\n");
    assert_int_equal(tg_rclaim_decode(j, NULL, &rc), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_claim_set(&e, rc), 0);
    next(&e, &d);
    assert_int_equal(d.kind, TG_D_UNSCHEDULABLE);
    assert_non_null(strstr(d.reason, "DRA allocation is not supported by topogang yet"));
    tg_decision_free(&d);

    /* allocated: placed where the PV is */
    j = yaml1("kind: ResourceClaim\nmetadata: {name: gpu, namespace: ml}\nstatus: {allocation: {}}\n");
    assert_int_equal(tg_rclaim_decode(j, NULL, &rc), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_claim_set(&e, rc), 0);
    next(&e, &d);
    assert_int_equal(d.kind, TG_D_PLACE);
    assert_string_equal(tg_str(e.sched.cluster.nodes[d.result.slot[0]].name), "n1");
    tg_engine_bind_done(&e, d.gang, 1, 0);
    tg_decision_free(&d);

    tg_engine_pvc_delete(&e, tg_intern("ml"), tg_intern("data"));
    tg_engine_pv_delete(&e, tg_intern("pv1"));
    tg_engine_sc_delete(&e, tg_intern("local"));
    tg_engine_claim_delete(&e, tg_intern("ml"), tg_intern("gpu"));
    assert_null(tg_objstore_pvc(&e.sched.store, tg_intern("ml"), tg_intern("data")));
    struct tg_namespace *ns;
    j = yaml1("kind: Namespace\nmetadata: {name: ml, labels: {team: a}}\n");
    assert_int_equal(tg_namespace_decode(j, NULL, &ns), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_namespace_set(&e, ns), 0);
    struct tg_labelsel sel = {0};
    struct tg_selreq r = {.key = tg_intern("kubernetes.io/metadata.name"), .op = TG_SEL_IN, .nvals = 1,
                          .vals = (uint32_t[]){tg_intern("ml")}};
    sel.nreq = 1;
    sel.reqs = &r;
    assert_true(tg_objstore_ns_match(&e.sched.store, tg_intern("ml"), &sel));
    tg_engine_namespace_delete(&e, tg_intern("ml"));
    assert_true(tg_objstore_ns_match(&e.sched.store, tg_intern("ml"), &sel)); /* synthesised */

    tg_engine_free(&e);
    tg_pod_free(&p);
    tg_sb_free(&err);
}

static struct tg_pod *decode_yaml_pod(const char *yaml, unsigned flags)
{
    cJSON *j = yaml1(yaml);
    struct tg_pod *p;
    assert_int_equal(tg_pod_decode(j, flags, NULL, &p), 0);
    cJSON_Delete(j);
    return p;
}

/* A bound pod relabelled in place: the index follows (record_changing): a
 * pod of app=cache becomes app=db after the label key was first watched. */
static void test_relabel(void **state)
{
    (void)state;
    struct tg_policy pol;
    struct tg_sb err = {0};
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "p", &pol, &err), 0);
    struct tg_engine e;
    struct tg_clock clk = {clock0, NULL};
    assert_int_equal(tg_engine_init(&e, &pol, &clk), 0);
    char *y = NULL;
    node(&y, "n0", "z1", "r1", 8, NULL, NULL);
    cJSON *j = yaml1(y);
    free(y);
    struct tg_node_obj *o;
    assert_int_equal(tg_node_decode(j, NULL, &o), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_node_set(&e, o), 0);
    struct tg_pod *cache = decode_yaml_pod("kind: Pod\nmetadata: {name: db, namespace: ml, labels: {app: cache}}\n"
                                           "spec: {nodeName: n0, containers: [{name: c}]}\n", 0);
    assert_int_equal(tg_engine_bound_set(&e, cache), 0);
    static const char *const pend =
        "kind: Pod\nmetadata: {name: %s, namespace: ml}\nspec:\n  schedulerName: topogang\n"
        "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        "[{labelSelector: {matchLabels: {app: db}}, topologyKey: kubernetes.io/hostname}]}}\n"
        "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}}}]\n";
    char buf[512];
    snprintf(buf, sizeof buf, pend, "p1");
    struct tg_pod *p1 = decode_yaml_pod(buf, TG_DECODE_SPEC);
    assert_int_equal(tg_engine_pending_set(&e, p1), 0);
    struct tg_decision d;
    next(&e, &d);
    assert_int_equal(d.kind, TG_D_PLACE); /* no db yet; the key app is watched from now on */
    tg_engine_bind_done(&e, d.gang, 1, 0);
    tg_decision_free(&d);

    struct tg_pod *db = decode_yaml_pod("kind: Pod\nmetadata: {name: db, namespace: ml, labels: {app: db}}\n"
                                        "spec: {nodeName: n0, containers: [{name: c}]}\n", 0);
    assert_int_equal(tg_engine_bound_set(&e, db), 0);
    snprintf(buf, sizeof buf, pend, "p2");
    struct tg_pod *p2 = decode_yaml_pod(buf, TG_DECODE_SPEC);
    assert_int_equal(tg_engine_pending_set(&e, p2), 0);
    next(&e, &d);
    assert_int_equal(d.kind, TG_D_UNSCHEDULABLE);
    assert_non_null(strstr(d.reason, "1 node pod anti-affinity with ml/app=db on kubernetes.io/hostname"));
    tg_decision_free(&d);
    tg_engine_free(&e);
    tg_pod_free(&cache);
    tg_pod_free(&db);
    tg_pod_free(&p1);
    tg_pod_free(&p2);
    tg_sb_free(&err);
}

/* ---- decoders ---------------------------------------------------------------------------------------------- */

static int decode_pod(const char *yaml, struct tg_pod **p)
{
    cJSON *j = yaml1(yaml);
    struct tg_diag d = {0};
    int rc = tg_pod_decode(j, TG_DECODE_SPEC, &d, p);
    cJSON_Delete(j);
    return rc;
}

static void test_decode(void **state)
{
    (void)state;
    struct tg_pod *p;
    assert_int_equal(decode_pod("kind: Pod\nmetadata: {name: a, namespace: ml, labels: {app: x, v: \"2\"}}\n"
                                "spec:\n  hostNetwork: true\n  containers:\n  - {name: c, ports: [{containerPort: 80}, "
                                "{containerPort: 90, hostPort: 9090, protocol: UDP}]}\n"
                                "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                                "      - {labelSelector: {matchLabels: {app: x}}, matchLabelKeys: [v, absent], "
                                "mismatchLabelKeys: [app], topologyKey: zone}\n"
                                "  topologySpreadConstraints:\n  - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: "
                                "ScheduleAnyway, labelSelector: {}, matchLabelKeys: [v]}\n", &p), 0);
    assert_non_null(p->cons);
    assert_int_equal(p->cons->nanti, 1);
    assert_int_equal(p->cons->anti[0].sel.nreq, 3); /* app=x, v In (2), app NotIn (x) */
    assert_int_equal(p->cons->anti[0].sel.reqs[2].op, TG_SEL_NOTIN);
    assert_int_equal(p->cons->nports, 2);
    assert_int_equal(p->cons->ports[0].port, 80);
    assert_int_equal(p->cons->ports[1].port, 9090);
    assert_int_equal(p->cons->ports[1].proto, TG_PROTO_UDP);
    assert_int_equal(p->spec->nspread, 1);
    assert_false(p->spec->spread[0].hard);
    assert_int_equal(p->spec->spread[0].sel.nreq, 1);
    struct tg_podcons *copy = tg_podcons_clone(p->cons);
    assert_true(tg_podcons_equal(copy, p->cons));
    tg_podcons_free(&copy);
    tg_pod_free(&p);

    /* without TG_DECODE_SPEC the terms and ports stay (a bound pod's count) */
    cJSON *j = yaml1("kind: Pod\nmetadata: {name: a, namespace: ml}\nspec:\n  nodeName: n\n"
                     "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                     "[{labelSelector: {}, topologyKey: h}]}}\n  containers: [{name: c}]\n");
    assert_int_equal(tg_pod_decode(j, 0, NULL, &p), 0);
    cJSON_Delete(j);
    assert_non_null(p->cons);
    assert_null(p->spec);
    tg_pod_free(&p);

    static const char *const bad[] = {
        "spec: {affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {}}]}}}",
        "spec: {affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, podAffinityTerm: {topologyKey: h}}]}}}",
        "spec: {affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: h, matchLabelKeys: [a]}]}}}",
        "spec: {topologySpreadConstraints: [{maxSkew: 0, topologyKey: z, whenUnsatisfiable: DoNotSchedule}]}",
        "spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: z, whenUnsatisfiable: Sometimes}]}",
        "spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: z, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}]}",
        "spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: z, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Maybe}]}",
        "spec: {containers: [{name: c, ports: [{containerPort: 1, hostPort: 70000}]}]}",
        "spec: {containers: [{name: c, ports: [{containerPort: 1, hostPort: 80, protocol: HTTP}]}]}",
        "spec: {volumes: [{name: v, persistentVolumeClaim: {}}]}",
        "spec: {resourceClaims: [{name: g}]}",
        "spec: {resourceClaims: [{name: g, resourceClaimName: a, resourceClaimTemplateName: b}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char buf[512];
        snprintf(buf, sizeof buf, "kind: Pod\nmetadata: {name: a, namespace: ml}\n%s\n", bad[i]);
        p = NULL;
        if (decode_pod(buf, &p) != TG_EPARSE) {
            print_error("accepted: %s\n", bad[i]);
            fail();
        }
    }

    struct tg_pv *v;
    j = yaml1("kind: PersistentVolume\nmetadata: {name: v}\nspec: {nodeAffinity: {required: {nodeSelectorTerms: []}}}\n");
    assert_int_equal(tg_pv_decode(j, NULL, &v), TG_EPARSE);
    cJSON_Delete(j);
    struct tg_storageclass *sc;
    j = yaml1("kind: StorageClass\nmetadata: {name: s, annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}}\n"
              "volumeBindingMode: Later\n");
    assert_int_equal(tg_sc_decode(j, NULL, &sc), TG_EPARSE);
    cJSON_Delete(j);
    j = yaml1("kind: StorageClass\nmetadata: {name: s, annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}}\n");
    assert_int_equal(tg_sc_decode(j, NULL, &sc), 0);
    cJSON_Delete(j);
    assert_true(sc->is_default);
    assert_false(sc->wffc);
    struct tg_objstore st = {0};
    assert_int_equal(tg_objstore_sc_set(&st, sc), 0);
    assert_ptr_equal(tg_objstore_default_sc(&st), sc);
    tg_objstore_sc_delete(&st, tg_intern("s"));
    assert_null(tg_objstore_default_sc(&st));
    tg_objstore_free(&st);
    struct tg_rclaim *rc;
    j = yaml1("kind: ResourceClaim\nmetadata: {name: c, namespace: ml}\nstatus: {allocation: {nodeSelector: {nodeSelectorTerms: "
              "[{matchExpressions: [{key: k, operator: Gt, values: [\"3\"]}]}]}}}\n");
    assert_int_equal(tg_rclaim_decode(j, NULL, &rc), 0);
    cJSON_Delete(j);
    assert_true(rc->allocated);
    assert_int_equal(rc->nterms, 1);
    tg_rclaim_free(&rc);
}

/* Default PVC storage class: a PVC without storageClassName takes the
 * default one; WaitForFirstConsumer there waits too. */
static void test_default_class(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0", "z1", "r1", 8, NULL, NULL);
    tu_cat(&y, "---\nkind: StorageClass\napiVersion: storage.k8s.io/v1\nmetadata: {name: std, annotations: "
               "{storageclass.kubernetes.io/is-default-class: \"true\"}}\nvolumeBindingMode: WaitForFirstConsumer\n"
               "---\nkind: PersistentVolumeClaim\napiVersion: v1\nmetadata: {name: d, namespace: ml}\nspec: {}\n");
    pod(&y, "p", NULL, "", "nvidia.com/gpu: 1", "  volumes:\n  - name: v\n    persistentVolumeClaim: {claimName: d}\n");
    cJSON *res = tu_simulate(POLICY, y);
    expect_reason(res, "ml/p", "StorageClass std, WaitForFirstConsumer");
    cJSON_Delete(res);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anti_one_per_node),
        cmocka_unit_test(test_anti_bound_pods),
        cmocka_unit_test(test_anti_zone_within_gang),
        cmocka_unit_test(test_anti_other_key),
        cmocka_unit_test(test_anti_symmetric),
        cmocka_unit_test(test_anti_between_pod_sets),
        cmocka_unit_test(test_anti_label_keys),
        cmocka_unit_test(test_anti_namespaces),
        cmocka_unit_test(test_affinity),
        cmocka_unit_test(test_affinity_first_pod),
        cmocka_unit_test(test_affinity_between_pod_sets),
        cmocka_unit_test(test_preferred),
        cmocka_unit_test(test_spread_zone),
        cmocka_unit_test(test_spread_existing_skew),
        cmocka_unit_test(test_spread_hostname),
        cmocka_unit_test(test_spread_min_domains),
        cmocka_unit_test(test_spread_policies),
        cmocka_unit_test(test_spread_other_key_and_soft),
        cmocka_unit_test(test_spread_missing_label),
        cmocka_unit_test(test_host_ports),
        cmocka_unit_test(test_volumes),
        cmocka_unit_test(test_volumes_in_gang),
        cmocka_unit_test(test_dra),
        cmocka_unit_test(test_node_name),
        cmocka_unit_test(test_engine_api),
        cmocka_unit_test(test_relabel),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_default_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
