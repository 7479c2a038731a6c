/* Gang placement through `simulate`'s JSON: all or nothing, required and
 * preferred levels, pack fill order and best fit, spread, heterogeneous gangs,
 * minMember, every filter inside the chosen domain, queue order, reasons. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
    "placement: {strategy: pack, defaultPreferred: rack}\n";

static void group(char **y, const char *name, int min, const char *topology)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: ml}\n"
              "spec: {minMember: %d%s%s}\n", name, min, topology ? ", topology: " : "",
           topology ? topology : "");
}

static void pods(char **y, const char *prefix, const char *grp, int n, const char *req, const char *extra)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        tu_pod(y, name, grp, req, extra);
    }
}

static int count_on(const cJSON *res, const char *prefix, int n, const char *node)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        char name[80];
        snprintf(name, sizeof name, "ml/%s-%d", prefix, i);
        const char *got = tu_node_of(res, name);
        k += got && node && !strcmp(got, node);
        k += !got && !node;
    }
    return k;
}

static void test_fill_order(void **state)
{
    (void)state;
    /* Kueue's case: room for 3, 3, 2, 1 pods and a 7-pod gang takes 3, 3, 1. */
    char *y = NULL;
    tu_node(&y, "a", "z1", "r1", 3, NULL);
    tu_node(&y, "b", "z1", "r1", 3, NULL);
    tu_node(&y, "c", "z1", "r1", 2, NULL);
    tu_node(&y, "d", "z1", "r1", 1, NULL);
    group(&y, "g", 7, "{required: rack}");
    pods(&y, "w", "g", 7, "nvidia.com/gpu: 1", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/g"), "status"), "Scheduled");
    assert_int_equal(count_on(res, "w", 7, "a"), 3);
    assert_int_equal(count_on(res, "w", 7, "b"), 3);
    assert_int_equal(count_on(res, "w", 7, "c"), 0);
    assert_int_equal(count_on(res, "w", 7, "d"), 1);
    cJSON_Delete(res);
    free(y);
}

static void test_levels_and_no_topology(void **state)
{
    (void)state;
    char *y = NULL;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 2; i++) {
            char n[16], rack[8];
            snprintf(n, sizeof n, "n%d%d", r, i);
            snprintf(rack, sizeof rack, "r%d", r);
            tu_node(&y, n, "z1", rack, 8, NULL);
        }
    group(&y, "same", 2, "{required: rack, preferred: rack}");
    pods(&y, "same", "same", 2, "nvidia.com/gpu: 8", NULL);
    group(&y, "none", 2, NULL);
    pods(&y, "none", "none", 2, "nvidia.com/gpu: 8", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/same");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "level"), "rack");
    g = tu_gang(res, "ml/none");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "level"), "rack"); /* the policy's defaultPreferred */
    /* each gang got a whole rack: members share the rack */
    const char *a = tu_node_of(res, "ml/same-0"), *b = tu_node_of(res, "ml/same-1");
    assert_int_equal(a[1], b[1]);
    cJSON_Delete(res);
    free(y);
}

static void test_no_requests(void **state)
{
    (void)state;
    char *y = NULL;
    tu_cat(&y, "---\nkind: Node\nmetadata: {name: small, labels: {topogang.io/rack: r1}}\n"
               "status: {allocatable: {pods: '2'}}\n");
    tu_cat(&y, "---\nkind: Node\nmetadata: {name: small2, labels: {topogang.io/rack: r1}}\n"
               "status: {allocatable: {pods: '2'}}\n");
    group(&y, "g", 3, "{required: rack}");
    for (int i = 0; i < 3; i++)
        tu_cat(&y, "---\nkind: Pod\nmetadata: {name: e-%d, namespace: ml, labels: {topogang.io/pod-group: g}}\n"
                   "spec: {schedulerName: topogang, containers: [{name: c}]}\n", i);
    group(&y, "h", 2, "{required: rack}");
    for (int i = 0; i < 2; i++)
        tu_cat(&y, "---\nkind: Pod\nmetadata: {name: f-%d, namespace: ml, labels: {topogang.io/pod-group: h}}\n"
                   "spec: {schedulerName: topogang}\n", i);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/g"), "status"), "Scheduled");
    /* 4 pod slots, 3 taken: a second gang of 2 cannot fit and takes nothing */
    const cJSON *h = tu_gang(res, "ml/h");
    assert_string_equal(tu_str(h, "status"), "Unschedulable");
    assert_non_null(strstr(tu_str(h, "reason"), "too many pods"));
    assert_int_equal(count_on(res, "f", 2, NULL), 2);
    cJSON_Delete(res);
    free(y);
}

static void test_filters_inside_domain(void **state)
{
    (void)state;
    char *y = NULL;
    /* rack r1: 4 nodes but 2 tainted, 1 cordoned; r2: 4 clean nodes, only 3 H100 */
    tu_node(&y, "r1a", "z1", "r1", 8, "taints: [{key: maint, value: 'x', effect: NoSchedule}]");
    tu_node(&y, "r1b", "z1", "r1", 8, "taints: [{key: maint, value: 'x', effect: NoExecute}]");
    tu_node(&y, "r1c", "z1", "r1", 8, "unschedulable: true");
    tu_node(&y, "r1d", "z1", "r1", 8, NULL);
    for (int i = 0; i < 4; i++) {
        char n[8];
        snprintf(n, sizeof n, "r2%c", 'a' + i);
        tu_node(&y, n, "z1", "r2", 8, NULL);
    }
    group(&y, "g", 4, "{required: rack}");
    pods(&y, "w", "g", 4, "nvidia.com/gpu: 8", NULL);
    /* nodeSelector on a hostname set that is only partly free */
    group(&y, "sel", 1, "{required: rack}");
    pods(&y, "sel", "sel", 1, "nvidia.com/gpu: 8",
         "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms:"
         " [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [r1a, r1d]}]}]}}}\n");
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "domain"), "z1/r2");
    /* the affinity allows r1a (tainted) and r1d: only r1d */
    assert_string_equal(tu_node_of(res, "ml/sel-0"), "r1d");
    cJSON_Delete(res);
    free(y);

    /* taints tolerated, and a gang that must avoid tainted nodes has a reason */
    y = NULL;
    tu_node(&y, "t1", "z1", "r1", 8, "taints: [{key: maint, value: 'x', effect: NoSchedule}]");
    tu_node(&y, "t2", "z1", "r1", 8, "taints: [{key: maint, value: 'x', effect: NoSchedule}]");
    tu_node(&y, "t3", "z1", "r1", 8, NULL);
    group(&y, "tol", 2, "{required: rack}");
    pods(&y, "tol", "tol", 2, "nvidia.com/gpu: 8",
         "  tolerations: [{key: maint, operator: Equal, value: 'x', effect: NoSchedule}]\n");
    group(&y, "big", 2, "{required: rack}");
    pods(&y, "big", "big", 2, "nvidia.com/gpu: 8", NULL);
    res = tu_simulate(POLICY, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/tol"), "status"), "Scheduled");
    const cJSON *big = tu_gang(res, "ml/big");
    assert_string_equal(tu_str(big, "status"), "Unschedulable");
    const char *why = tu_str(big, "reason");
    assert_non_null(strstr(why, "needs 2 x nvidia.com/gpu=8 in one rack; best rack z1/r1 holds "));
    cJSON_Delete(res);
    free(y);
}

static void test_two_half_gangs(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 4; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        tu_node(&y, n, "z1", "r1", 8, NULL);
    }
    /* A and B each need 3 of 4 nodes: one runs whole, the other holds nothing */
    group(&y, "a", 3, "{required: rack}");
    pods(&y, "a", "a", 3, "nvidia.com/gpu: 8", NULL);
    group(&y, "b", 3, "{required: rack}");
    pods(&y, "b", "b", 3, "nvidia.com/gpu: 8", NULL);
    /* a gang bigger than the cluster reserves nothing; the small one after it fits */
    group(&y, "huge", 6, NULL);
    pods(&y, "huge", "huge", 6, "nvidia.com/gpu: 8", NULL);
    group(&y, "small", 1, NULL);
    pods(&y, "small", "small", 1, "nvidia.com/gpu: 8", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    const char *sa = tu_str(tu_gang(res, "ml/a"), "status"), *sb = tu_str(tu_gang(res, "ml/b"), "status");
    assert_true(!strcmp(sa, "Scheduled") != !strcmp(sb, "Scheduled"));
    const char *loser = !strcmp(sa, "Scheduled") ? "b" : "a";
    assert_int_equal(count_on(res, loser, 3, NULL), 3);
    assert_string_equal(tu_str(tu_gang(res, "ml/huge"), "status"), "Unschedulable");
    assert_int_equal(count_on(res, "huge", 6, NULL), 6);
    assert_string_equal(tu_str(tu_gang(res, "ml/small"), "status"), "Scheduled");
    cJSON_Delete(res);
    free(y);
}

static void test_heterogeneous(void **state)
{
    (void)state;
    char *y = NULL;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++) {
            char n[16], rack[8];
            snprintf(n, sizeof n, "n%d%d", r, i);
            snprintf(rack, sizeof rack, "r%d", r);
            tu_node(&y, n, "z1", rack, r == 0 ? 4 : 8, NULL);
        }
    group(&y, "job", 4, "{required: rack}");
    pods(&y, "launcher", "job", 1, "cpu: '2'", NULL);
    pods(&y, "worker", "job", 3, "nvidia.com/gpu: 8, cpu: '8'", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/job");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "domain"), "z1/r1");
    /* the launcher shares the workers' rack */
    assert_int_equal(strncmp(tu_node_of(res, "ml/launcher-0"), "n1", 2), 0);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "ml/worker-%d", i);
        assert_int_equal(strncmp(tu_node_of(res, name), "n1", 2), 0);
    }
    cJSON_Delete(res);
    free(y);
}

static void test_min_member(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 6; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        tu_node(&y, n, "z1", "r1", 8, NULL);
    }
    group(&y, "el", 5, "{required: rack}");
    pods(&y, "el", "el", 8, "nvidia.com/gpu: 8", NULL);
    group(&y, "short", 4, NULL);
    pods(&y, "short", "short", 3, "nvidia.com/gpu: 1", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(count_on(res, "el", 8, NULL), 2); /* 6 placed, 2 wait */
    g = tu_gang(res, "ml/short");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_non_null(strstr(tu_str(g, "reason"), "3 pending + 0 bound < minMember 4"));
    cJSON_Delete(res);
    free(y);
}

static void test_spread_and_pack(void **state)
{
    (void)state;
    char *y = NULL;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++) {
            char n[16], rack[8];
            snprintf(n, sizeof n, "n%d%d", r, i);
            snprintf(rack, sizeof rack, "r%d", r);
            tu_node(&y, n, "z1", rack, 8, NULL);
        }
    group(&y, "sp", 4, "{required: zone, strategy: spread}");
    pods(&y, "sp", "sp", 4, "nvidia.com/gpu: 1", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    int per_rack[2] = {0, 0};
    char seen[8][8] = {{0}};
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "ml/sp-%d", i);
        const char *n = tu_node_of(res, name);
        per_rack[n[1] - '0']++;
        for (int k = 0; k < i; k++)
            assert_string_not_equal(seen[k], n); /* one per node */
        snprintf(seen[i], sizeof seen[i], "%s", n);
    }
    assert_int_equal(per_rack[0], 2);
    assert_int_equal(per_rack[1], 2);
    cJSON_Delete(res);
    free(y);

    /* pack: best fit rack (3 free, not 5 free) and fewest nodes */
    y = NULL;
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "a%d", i);
        tu_node(&y, n, "z1", "small", 8, NULL);
    }
    for (int i = 0; i < 5; i++) {
        char n[8];
        snprintf(n, sizeof n, "b%d", i);
        tu_node(&y, n, "z1", "large", 8, NULL);
    }
    group(&y, "pk", 3, "{required: rack}");
    pods(&y, "pk", "pk", 3, "nvidia.com/gpu: 8", NULL);
    group(&y, "zone2", 2, "{required: rack}");
    pods(&y, "zone2", "zone2", 2, "nvidia.com/gpu: 4", NULL);
    res = tu_simulate(POLICY, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/pk"), "domain"), "z1/small");
    /* two half-node pods share one node */
    assert_string_equal(tu_node_of(res, "ml/zone2-0"), tu_node_of(res, "ml/zone2-1"));
    cJSON_Delete(res);
    free(y);
}

static void test_preferred_keeps_gang_whole(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node(&y, "a0", "z1", "r1", 8, NULL);
    tu_node(&y, "a1", "z1", "r1", 8, "unschedulable: true");
    tu_node(&y, "b0", "z1", "r2", 8, NULL);
    tu_node(&y, "b1", "z1", "r2", 8, NULL);
    group(&y, "g", 2, "{required: zone, preferred: rack}");
    pods(&y, "g", "g", 2, "nvidia.com/gpu: 8", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "level"), "rack");
    assert_string_equal(tu_str(g, "domain"), "z1/r2");
    cJSON_Delete(res);
    free(y);
}

/* ---- nodes lacking a level's label ------------------------------------------------
 * A gang that requires a level uses only nodes that carry that level's label;
 * a preferred level takes each node lacking it as a domain of its own; no
 * placement is named after a missing label ("-" or an empty segment). */

/* The default policy's zone and block labels, then the hostname. */
#define ZB(host) "topology.kubernetes.io/zone: z, cloud.google.com/gce-topology-block: b, " \
                 "kubernetes.io/hostname: " host
#define RACK(r)   ", topogang.io/rack: " r
#define CLIQUE(c) ", nvidia.com/gpu.clique: " c

/* One gang of npods x gpus on 8-GPU nodes, and what simulate says of it. */
struct lcase {
    int zrn;                            /* 1: POLICY (zone, rack, node); 0: the default one */
    const char *node[7][2];             /* name, labels; up to a NULL name */
    const char *topology;
    int npods, gpus;
    const char *status, *level, *domain, *reason; /* NULL: not checked */
};

static const struct lcase LCASES[] = {
    /* the issue: four GPU nodes of one rack without an NVLink clique share no NVLink */
    {0, {{"n0", ZB("n0") RACK("r")}, {"n1", ZB("n1") RACK("r")}, {"n2", ZB("n2") RACK("r")},
            {"n3", ZB("n3") RACK("r")}},
     "{required: nvlink-domain}", 4, 8, "Unschedulable", NULL, NULL,
     "no nvlink-domain in the cluster; 4 nodes lacking label nvidia.com/gpu.clique"},
    /* even a gang that fits one such node cannot use it */
    {0, {{"n0", ZB("n0") RACK("r")}}, "{required: nvlink-domain}", 1, 2, "Unschedulable",
     NULL, NULL, "1 node lacking label nvidia.com/gpu.clique"},
    /* beside them, two nodes of clique c1 take a 2-pod gang */
    {0, {{"n0", ZB("n0") RACK("r")}, {"n1", ZB("n1") RACK("r")}, {"n2", ZB("n2") RACK("r")},
            {"n3", ZB("n3") RACK("r")}, {"c0", ZB("c0") RACK("r2") CLIQUE("c1")},
            {"c1", ZB("c1") RACK("r2") CLIQUE("c1")}},
     "{required: nvlink-domain}", 2, 8, "Scheduled", "nvlink-domain", "z/b/r2/c1", NULL},
    /* two nodes without kubernetes.io/hostname are not one node */
    {1, {{"a", "topology.kubernetes.io/zone: z1, topogang.io/rack: r1"},
              {"b", "topology.kubernetes.io/zone: z1, topogang.io/rack: r1"}},
     "{required: node}", 2, 8, "Unschedulable", NULL, NULL,
     "2 nodes lacking label kubernetes.io/hostname"},
    /* nodes without the rack label are not a rack */
    {1, {{"n0", "kubernetes.io/hostname: n0, topology.kubernetes.io/zone: z1, topogang.io/rack: r1"},
              {"n1", "kubernetes.io/hostname: n1, topology.kubernetes.io/zone: z1"},
              {"n2", "kubernetes.io/hostname: n2, topology.kubernetes.io/zone: z1"}},
     "{required: rack}", 2, 8, "Unschedulable", NULL, NULL,
     "best rack z1/r1 holds 1; 2 nodes lacking label topogang.io/rack"},
    /* no zone label: the racks still hold gangs, named without a zone */
    {1, {{"a", "kubernetes.io/hostname: a, topogang.io/rack: r1"},
              {"b", "kubernetes.io/hostname: b, topogang.io/rack: r1"}},
     "{required: rack}", 2, 8, "Scheduled", "rack", "r1", NULL},
    /* no rack label but a clique: the clique still holds a gang requiring it */
    {0, {{"a", ZB("a") CLIQUE("c1")}, {"b", ZB("b") CLIQUE("c1")}},
     "{required: nvlink-domain}", 2, 8, "Scheduled", "nvlink-domain", "z/b/c1", NULL},
};

static void test_level_labels(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof LCASES / sizeof LCASES[0]; k++) {
        const struct lcase *c = &LCASES[k];
        char *y = NULL, req[32];
        for (int i = 0; i < 7 && c->node[i][0]; i++)
            tu_node_labels(&y, c->node[i][0], c->node[i][1], 8);
        group(&y, "g", c->npods, c->topology);
        snprintf(req, sizeof req, "nvidia.com/gpu: %d", c->gpus);
        pods(&y, "g", "g", c->npods, req, NULL);
        cJSON *res = tu_simulate(c->zrn ? POLICY : NULL, y);
        const cJSON *g = tu_gang(res, "ml/g");
        print_message("case %zu: %s %s %s %s\n", k, tu_str(g, "status"), tu_str(g, "level"),
                      tu_str(g, "domain"), tu_str(g, "reason"));
        assert_string_equal(tu_str(g, "status"), c->status);
        int scheduled = !strcmp(c->status, "Scheduled");
        assert_int_equal(count_on(res, "g", c->npods, NULL), scheduled ? 0 : c->npods);
        if (c->level)
            assert_string_equal(tu_str(g, "level"), c->level);
        if (c->domain)
            assert_string_equal(tu_str(g, "domain"), c->domain);
        if (c->reason)
            assert_non_null(strstr(tu_str(g, "reason"), c->reason));
        cJSON_Delete(res);
        free(y);
    }
}

/* n 8-GPU nodes n0.. of zone z, block b, rack r, none with an NVLink clique. */
static void rack_without_cliques(char **y, int n)
{
    for (int i = 0; i < n; i++) {
        char name[8], l[160];
        snprintf(name, sizeof name, "n%d", i);
        snprintf(l, sizeof l, ZB("%s") RACK("r"), name);
        tu_node_labels(y, name, l, 8);
    }
}

/* Five nodes of rack r without a clique; two gangs prefer an NVLink domain. */
static void test_preferred_level_lacking_label(void **state)
{
    (void)state;
    char *y = NULL;
    rack_without_cliques(&y, 5);
    group(&y, "wide", 4, "{required: rack, preferred: nvlink-domain}");
    pods(&y, "wide", "wide", 4, "nvidia.com/gpu: 8", NULL);
    group(&y, "narrow", 2, "{required: rack, preferred: nvlink-domain}");
    pods(&y, "narrow", "narrow", 2, "nvidia.com/gpu: 2", NULL);
    cJSON *res = tu_simulate(NULL, y);
    /* four nodes sharing no NVLink are one rack, not one NVLink domain */
    const cJSON *g = tu_gang(res, "ml/wide");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "level"), "rack");
    assert_string_equal(tu_str(g, "domain"), "z/b/r");
    /* a gang that fits one node takes one node, its own domain there */
    g = tu_gang(res, "ml/narrow");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    const char *n0 = tu_node_of(res, "ml/narrow-0"), *n1 = tu_node_of(res, "ml/narrow-1");
    assert_non_null(n0);
    assert_non_null(n1);
    assert_string_equal(n0, n1);
    assert_string_equal(tu_str(g, "level"), "node");
    char want[64];
    snprintf(want, sizeof want, "z/b/r/%s", n0);
    assert_string_equal(tu_str(g, "domain"), want);
    cJSON_Delete(res);
    free(y);
}

/* Preemption and reservations plan only in domains of the required level:
 * a pod of lower priority on a node lacking the label is never evicted
 * for a gang that cannot use that node. */
static void test_no_preemption_without_the_label(void **state)
{
    (void)state;
    char *y = NULL;
    rack_without_cliques(&y, 4);
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: low\n  namespace: ml\n"
               "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: u1, controller: true}]\n"
               "spec:\n  nodeName: n0\n  priority: 0\n"
               "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: 8}}}]\n"
               "status: {phase: Running}\n");
    tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
               "metadata: {name: training}\nvalue: 100\n");
    group(&y, "g", 4, "{required: nvlink-domain}, priorityClassName: training");
    pods(&y, "g", "g", 4, "nvidia.com/gpu: 8", NULL);
    cJSON *res = tu_simulate(NULL, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "preempts")), 0);
    const char *why = tu_str(g, "reason");
    assert_non_null(strstr(why, "3 nodes lacking label nvidia.com/gpu.clique"));
    assert_non_null(strstr(why, "preemption cannot help: no nvlink-domain in the cluster"));
    cJSON_Delete(res);
    free(y);
}

static void test_queue_order_and_bad_refs(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node(&y, "only", "z1", "r1", 8, NULL);
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
               "metadata: {name: low, namespace: ml, creationTimestamp: '2026-01-01T00:00:00Z'}\nspec: {minMember: 1}\n");
    pods(&y, "low", "low", 1, "nvidia.com/gpu: 8", NULL);
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
               "metadata: {name: high, namespace: ml, creationTimestamp: '2026-06-01T00:00:00Z'}\n"
               "spec: {minMember: 1, priorityClassName: urgent}\n");
    tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: 1000\n");
    pods(&y, "high", "high", 1, "nvidia.com/gpu: 8", NULL);
    group(&y, "typo", 1, "{required: rackk}");
    pods(&y, "typo", "typo", 1, "cpu: '1'", NULL);
    pods(&y, "lost", "nosuch", 1, "cpu: '1'", NULL);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/high"), "status"), "Scheduled");
    assert_string_equal(tu_str(tu_gang(res, "ml/low"), "status"), "Unschedulable");
    const cJSON *t = tu_gang(res, "ml/typo");
    assert_string_equal(tu_str(t, "status"), "Unschedulable");
    assert_non_null(strstr(tu_str(t, "reason"), "spec.topology.required: unknown level \"rackk\" (levels: zone rack node)"));
    assert_non_null(strstr(tu_str(tu_gang(res, "ml/nosuch"), "reason"), "PodGroup ml/nosuch does not exist"));
    /* the first gang in the output is the highest priority */
    assert_string_equal(tu_str(cJSON_GetArrayItem(cJSON_GetObjectItem(res, "gangs"), 0), "podGroup"), "ml/high");
    cJSON_Delete(res);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_order),
        cmocka_unit_test(test_levels_and_no_topology),
        cmocka_unit_test(test_no_requests),
        cmocka_unit_test(test_filters_inside_domain),
        cmocka_unit_test(test_two_half_gangs),
        cmocka_unit_test(test_heterogeneous),
        cmocka_unit_test(test_min_member),
        cmocka_unit_test(test_spread_and_pack),
        cmocka_unit_test(test_preferred_keeps_gang_whole),
        cmocka_unit_test(test_queue_order_and_bad_refs),
        cmocka_unit_test(test_level_labels),
        cmocka_unit_test(test_preferred_level_lacking_label),
        cmocka_unit_test(test_no_preemption_without_the_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
