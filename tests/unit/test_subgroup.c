/* Sub-groups (issue 20) through `simulate`: a joint arrangement found where
 * best-fit-decreasing fails, all or nothing, the gang's required level, the
 * sub-groups' minMember, bad labels, subGroupSize by rank, KAI's and Volcano's
 * forms (spec.subGroupPolicy: sub-groups by label values); and a property test
 * of tg_subgroup_solve against brute force on small random trees. */
#include "testutil.h"
#include "model/objects.h"
#include "model/tree.h"
#include "scheduler/subgroup.h"
#include "util/arena.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: block, nodeLabel: topogang.io/block}\n"
    "    - {name: nvlink-domain, nodeLabel: nvidia.com/gpu.clique}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
    "placement: {strategy: pack, defaultPreferred: block}\n";

/* A node in block b and clique c with gpus GPUs. */
static void node(char **y, const char *name, const char *b, const char *c, int gpus)
{
    char labels[256];
    snprintf(labels, sizeof labels, "kubernetes.io/hostname: %s, topogang.io/block: %s, "
             "nvidia.com/gpu.clique: %s", name, b, c);
    tu_node_labels(y, name, labels, gpus);
}

/* n nodes "<b><c>-n<i>" of gpus GPUs in block b, clique c. */
static void clique_nodes(char **y, const char *b, const char *c, int n, int gpus)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s%s-n%d", b, c, i);
        node(y, name, b, c, gpus);
    }
}

/* n one-GPU pods of gang g, labelled sub-group sg (NULL: none) or ranked from rank0. */
static void sgpods(char **y, const char *prefix, const char *g, const char *sg, int n, int rank0)
{
    for (int i = 0; i < n; i++) {
        tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%d\n  namespace: ml\n"
                  "  labels: {topogang.io/pod-group: %s", prefix, i, g);
        if (sg)
            tu_cat(y, ", topogang.io/sub-group: %s", sg);
        if (rank0 >= 0)
            tu_cat(y, ", topogang.io/rank: \"%d\"", rank0 + i);
        tu_cat(y, "}\nspec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                  "    resources: {requests: {nvidia.com/gpu: 1}}\n");
    }
}

/* The clique of the node pod ml/<prefix>-<i> went to: its node's name
 * starts with the clique name ("c1-n0"); NULL when unplaced. */
static const char *clique_of(const cJSON *res, const char *prefix, int i, char *buf)
{
    char name[64];
    snprintf(name, sizeof name, "ml/%s-%d", prefix, i);
    const char *n = tu_node_of(res, name);
    if (!n)
        return NULL;
    snprintf(buf, 16, "%.*s", (int)(strchr(n, '-') - n), n);
    return buf;
}

/* Every member of sub-group prefix (n pods) sits in one clique; returns it. */
static void assert_one_clique(const cJSON *res, const char *prefix, int n, char *out)
{
    char a[16], b[16];
    assert_non_null(clique_of(res, prefix, 0, a));
    for (int i = 1; i < n; i++) {
        assert_non_null(clique_of(res, prefix, i, b));
        assert_string_equal(a, b);
    }
    strcpy(out, a);
}

static int placed(const cJSON *res, const char *prefix, int n)
{
    int k = 0;
    char b[16];
    for (int i = 0; i < n; i++)
        k += clique_of(res, prefix, i, b) != NULL;
    return k;
}

/* Two NVLink domains of 10 GPUs (5 nodes x 2) in block b1; sub-groups of
 * 5, 4, 3, 3, 3, 2 pods (one GPU each), each required in one domain: best
 * fit decreasing puts 5 and 4 together and strands the 2; the only
 * arrangements are {5,3,2} + {4,3,3}. */
static void cluster_two_tens(char **y)
{
    for (int c = 1; c <= 2; c++)
        for (int i = 0; i < 5; i++) {
            char n[16], cl[8];
            snprintf(n, sizeof n, "c%d-n%d", c, i);
            snprintf(cl, sizeof cl, "c%d", c);
            node(y, n, "b1", cl, 2);
        }
}

static void podgroup(char **y, const char *name, int min, const char *subs)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, "
              "namespace: ml}\nspec:\n  minMember: %d\n  topology: {required: block}\n%s",
           name, min, subs);
}

static void test_joint_where_greedy_fails(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_two_tens(&y);
    static const int size[] = {5, 4, 3, 3, 3, 2};
    char subs[1024] = "  subGroups:\n";
    for (int k = 0; k < 6; k++) {
        char one[128];
        snprintf(one, sizeof one, "  - {name: s%d, minMember: %d, topology: {required: nvlink-domain}}\n",
                 k, size[k]);
        strcat(subs, one);
    }
    podgroup(&y, "g", 20, subs);
    for (int k = 0; k < 6; k++) {
        char p[8], s[8];
        snprintf(p, sizeof p, "s%d", k);
        snprintf(s, sizeof s, "s%d", k);
        sgpods(&y, p, "g", s, size[k], -1);
    }
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    char cl[6][16];
    int used[3] = {0};
    for (int k = 0; k < 6; k++) {
        char p[8];
        snprintf(p, sizeof p, "s%d", k);
        assert_one_clique(res, p, size[k], cl[k]);
        used[cl[k][1] - '0'] += size[k];
    }
    assert_int_equal(used[1], 10);
    assert_int_equal(used[2], 10);
    /* 5 and 4 cannot share a domain in the only arrangements */
    assert_string_not_equal(cl[0], cl[1]);
    cJSON_Delete(res);
    free(y);
}

static void test_all_or_nothing(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_two_tens(&y);
    /* 18 pods fit the block's 20 GPUs by count, but three 6-pod sub-groups
     * need three domains of 6: none is placed */
    podgroup(&y, "g", 18, "  subGroups:\n"
             "  - {name: a, minMember: 6, topology: {required: nvlink-domain}}\n"
             "  - {name: b, minMember: 6, topology: {required: nvlink-domain}}\n"
             "  - {name: c, minMember: 6, topology: {required: nvlink-domain}}\n");
    sgpods(&y, "a", "g", "a", 6, -1);
    sgpods(&y, "b", "g", "b", 6, -1);
    sgpods(&y, "c", "g", "c", 6, -1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_int_equal(placed(res, "a", 6) + placed(res, "b", 6) + placed(res, "c", 6), 0);
    const char *why = tu_str(g, "reason");
    assert_non_null(strstr(why, "no nvlink-domain in block b1 has room for its 6 pods (most: 4; "
                                "2 of 3 sub-groups fit"));
    cJSON_Delete(res);
    free(y);
}

/* A gang without a required level whose sub-group fits no domain: its reason
 * names the domains it tried as domains (of any level, not "cluster(s)") and
 * the whole cluster as "the cluster" (its path is empty). */
static void test_reason_without_gang_level(void **state)
{
    (void)state;
    char *y = NULL;
    for (int c = 1; c <= 2; c++)
        for (int i = 0; i < 4; i++) {
            char n[16], cl[8];
            snprintf(n, sizeof n, "c%d-n%d", c, i);
            snprintf(cl, sizeof cl, "c%d", c);
            node(&y, n, c == 1 ? "b1" : "b2", cl, 1);
        }
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, "
               "namespace: ml}\nspec:\n  minMember: 6\n  subGroups:\n"
               "  - {name: a, minMember: 6, topology: {required: nvlink-domain}}\n");
    sgpods(&y, "a", "g", "a", 6, -1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    const char *why = tu_str(g, "reason");
    assert_non_null(strstr(why, "sub-group a: no nvlink-domain in the cluster has room for its 6 "
                                "pods (most: 4;"));
    assert_non_null(strstr(why, "candidate domain(s) fit by count but not all pod sets together"));
    assert_null(strstr(why, "cluster(s)"));
    cJSON_Delete(res);
    free(y);
}

static void test_gang_level_holds(void **state)
{
    (void)state;
    char *y = NULL;
    /* b1 and b2: one 8-GPU domain each; b3: two. Two 8-pod sub-groups
     * would fit b1 + b2 but the gang requires one block: b3. */
    node(&y, "d1-n0", "b1", "d1", 8);
    node(&y, "d2-n0", "b2", "d2", 8);
    node(&y, "d3-n0", "b3", "d3", 8);
    node(&y, "d4-n0", "b3", "d4", 8);
    podgroup(&y, "g", 16, "  subGroups:\n"
             "  - {name: a, minMember: 8, topology: {required: nvlink-domain}}\n"
             "  - {name: b, minMember: 8, topology: {required: nvlink-domain}}\n");
    sgpods(&y, "a", "g", "a", 8, -1);
    sgpods(&y, "b", "g", "b", 8, -1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "domain"), "b3");
    char a[16], b[16];
    assert_one_clique(res, "a", 8, a);
    assert_one_clique(res, "b", 8, b);
    assert_string_not_equal(a, b);
    /* simulate -o json: each sub-group's level and domain, each pod's sub-group */
    const cJSON *subs = cJSON_GetObjectItem(g, "subGroups");
    assert_int_equal(cJSON_GetArraySize(subs), 2);
    const cJSON *s0 = cJSON_GetArrayItem(subs, 0);
    assert_string_equal(tu_str(s0, "name"), "a");
    assert_string_equal(tu_str(s0, "level"), "nvlink-domain");
    char want[32];
    snprintf(want, sizeof want, "b3/%s", a);
    assert_string_equal(tu_str(s0, "domain"), want);
    assert_int_equal(cJSON_GetObjectItem(s0, "pods")->valueint, 8);
    const cJSON *pod;
    int named = 0;
    cJSON_ArrayForEach(pod, cJSON_GetObjectItem(g, "pods"))
    {
        const char *sg = tu_str(pod, "subGroup");
        assert_non_null(sg);
        assert_int_equal(sg[0], tu_str(pod, "pod")[3]); /* ml/a-3 is in a */
        named++;
    }
    assert_int_equal(named, 16);
    cJSON_Delete(res);
    free(y);
}

static void test_min_member_and_bad_label(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_two_tens(&y);
    podgroup(&y, "short", 3, "  subGroups:\n"
             "  - {name: a, minMember: 4, topology: {required: nvlink-domain}}\n");
    sgpods(&y, "short", "short", "a", 3, -1);
    podgroup(&y, "bad", 2, "  subGroups:\n  - {name: a, minMember: 1}\n");
    sgpods(&y, "bad", "bad", "nope", 2, -1);
    podgroup(&y, "lvl", 2, "  subGroups:\n  - {name: a, minMember: 2, topology: {required: rack}}\n");
    sgpods(&y, "lvl", "lvl", "a", 2, -1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/short");
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "sub-group a of PodGroup ml/short has 3 of its minMember 4 pods"));
    assert_int_equal(placed(res, "short", 3), 0);
    g = tu_gang(res, "ml/bad");
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "metadata.labels[topogang.io/sub-group]: \"nope\""));
    g = tu_gang(res, "ml/lvl");
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "PodGroup ml/lvl: spec.subGroups[0].topology.required: "
                                                "\"rack\" is neither a level of the policy nor the node label of one"));
    assert_int_equal(placed(res, "lvl", 2), 0);
    cJSON_Delete(res);
    free(y);
}

static void test_size_by_rank(void **state)
{
    (void)state;
    char *y = NULL;
    /* three 2-GPU domains; 6 ranked pods in slices of 2; each slice in one */
    for (int c = 1; c <= 3; c++)
        for (int i = 0; i < 2; i++) {
            char n[16], cl[8];
            snprintf(n, sizeof n, "c%d-n%d", c, i);
            snprintf(cl, sizeof cl, "c%d", c);
            node(&y, n, "b1", cl, 1);
        }
    podgroup(&y, "g", 6, "  subGroupSize: 2\n  subGroupTopology: {required: nvlink-domain}\n");
    sgpods(&y, "r", "g", NULL, 6, 0);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/g"), "status"), "Scheduled");
    for (int s = 0; s < 3; s++) {
        char a[16], b[16];
        assert_non_null(clique_of(res, "r", 2 * s, a));
        assert_non_null(clique_of(res, "r", 2 * s + 1, b));
        assert_string_equal(a, b);
    }
    cJSON_Delete(res);
    free(y);
}

/* ---- the sub-grouped gang packs as the gang without sub-groups ----------- */

/* The gang ml/g of n ranked one-GPU pods "r-<i>" with the PodGroup's extra
 * spec lines `subs` ("" none), on the cluster y0; the node of each pod into
 * nodes[] (sorted), and the cliques used into out ("c1 c2 "). */
static void pack_run(const char *y0, int n, const char *subs, char nodes[][16], char *out)
{
    char *y = NULL;
    tu_cat(&y, "%s", y0);
    podgroup(&y, "g", n, subs);
    sgpods(&y, "r", "g", NULL, n, 0);
    cJSON *res = tu_simulate(POLICY, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/g"), "status"), "Scheduled");
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        char name[32], cl[16];
        snprintf(name, sizeof name, "ml/r-%d", i);
        assert_non_null(tu_node_of(res, name));
        snprintf(nodes[i], 16, "%s", tu_node_of(res, name));
        assert_non_null(clique_of(res, "r", i, cl));
        strcat(cl, " ");
        if (!strstr(out, cl))
            strcat(out, cl);
    }
    qsort(nodes, (size_t)n, 16, (int (*)(const void *, const void *))strcmp);
    cJSON_Delete(res);
    free(y);
}

/* Alike sub-groups take their domains as the gang's pods would: best fit at
 * the levels between the gang's and theirs. Block b1: clique c1 with four
 * empty 8-GPU nodes, c2 with two. Two node-sized sub-groups (subGroupSize
 * 8, required node) fit c2 exactly, as the 16 pods without sub-groups do;
 * dealt out by "the clique holding the most sub-groups first" they took c1
 * (stranding half of it). */
static void test_alike_pack_best_fit(void **state)
{
    (void)state;
    char *y = NULL, nodes[16][16], cl[64];
    for (int i = 0; i < 4; i++) {
        char n[16];
        snprintf(n, sizeof n, "c1-n%d", i);
        node(&y, n, "b1", "c1", 8);
    }
    node(&y, "c2-n0", "b1", "c2", 8);
    node(&y, "c2-n1", "b1", "c2", 8);
    pack_run(y, 16, "", nodes, cl);
    assert_string_equal(cl, "c2 ");
    pack_run(y, 16, "  subGroupSize: 8\n  subGroupTopology: {required: node}\n", nodes, cl);
    assert_string_equal(cl, "c2 ");
    free(y);
}

/* Sub-groups whose level is the gang's add nothing inside the gang domain:
 * the gang takes exactly the nodes it takes without them (one fill, as the
 * plain path). Cliques of one node with room 5, 4 and 3: eight pods take
 * 5 + 3 (the largest, then the best fit for the rest); two sub-groups of 4
 * filled one by one took 4 + 4 (c2, then c1 with one GPU stranded). */
static void test_gang_level_subgroups_pack_as_one(void **state)
{
    (void)state;
    char *y = NULL, plain[8][16], sub[8][16], cl[64];
    node(&y, "c1-n0", "b1", "c1", 5);
    node(&y, "c2-n0", "b1", "c2", 4);
    node(&y, "c3-n0", "b1", "c3", 3);
    pack_run(y, 8, "", plain, cl);
    assert_non_null(strstr(cl, "c1 "));
    assert_non_null(strstr(cl, "c3 "));
    assert_null(strstr(cl, "c2 "));
    pack_run(y, 8, "  subGroupSize: 4\n  subGroupTopology: {required: block}\n", sub, cl);
    for (int i = 0; i < 8; i++)
        assert_string_equal(sub[i], plain[i]);
    free(y);
}

/* Sub-groups that differ (searched depth first) try their domains in the
 * plain path's packing order too: the clique that holds the whole gang
 * with least to spare before the tightest node anywhere. Clique c1: nodes
 * of 8 and 5 GPUs (13: the best fit for 12 pods, where the gang without
 * sub-groups goes); c2: 8, 4 and 6. Sub-groups of 8 and 4 pods, each
 * required on one node: both in c1; the flat tightest-first list put the
 * 4 on c2's 4-GPU node, the gang across two cliques. */
static void test_search_packs_as_plain(void **state)
{
    (void)state;
    char *y = NULL, nodes[12][16], cl[64];
    node(&y, "c1-n0", "b1", "c1", 8);
    node(&y, "c1-n1", "b1", "c1", 5);
    node(&y, "c2-n0", "b1", "c2", 8);
    node(&y, "c2-n1", "b1", "c2", 4);
    node(&y, "c2-n2", "b1", "c2", 6);
    pack_run(y, 12, "", nodes, cl);
    assert_string_equal(cl, "c1 ");
    char *z = NULL;
    tu_cat(&z, "%s", y);
    podgroup(&z, "g", 12, "  subGroups:\n"
             "  - {name: a, minMember: 8, topology: {required: node}}\n"
             "  - {name: b, minMember: 4, topology: {required: node}}\n");
    sgpods(&z, "a", "g", "a", 8, -1);
    sgpods(&z, "b", "g", "b", 4, -1);
    cJSON *res = tu_simulate(POLICY, z);
    assert_string_equal(tu_str(tu_gang(res, "ml/g"), "status"), "Scheduled");
    char a[16], b[16];
    assert_one_clique(res, "a", 8, a);
    assert_one_clique(res, "b", 4, b);
    assert_string_equal(a, "c1");
    assert_string_equal(b, "c1");
    cJSON_Delete(res);
    free(z);
    free(y);
}

/* Preemption knows sub-groups: 16 GPUs are free in b1 (8 per domain), as
 * many as the gang asks, but its 10-pod sub-group needs one domain with 10:
 * one lower-priority gang goes, and the placement keeps each sub-group in
 * one domain. */
static void test_preemption_honours_subgroups(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_two_tens(&y);
    tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\n"
               "value: 10\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
               "metadata: {name: high}\nvalue: 100\n");
    for (int c = 1; c <= 2; c++) {
        tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: low%d, "
                   "namespace: ml}\nspec: {minMember: 2, priorityClassName: low}\n", c);
        for (int i = 0; i < 2; i++)
            tu_cat(&y, "---\nkind: Pod\nmetadata:\n  name: low%d-%d\n  namespace: ml\n"
                       "  labels: {topogang.io/pod-group: low%d}\n  ownerReferences: [{apiVersion: batch/v1, "
                       "kind: Job, name: low%d, uid: u-low%d, controller: true}]\n"
                       "spec:\n  nodeName: c%d-n0\n"
                       "  priorityClassName: low\n  schedulerName: topogang\n  containers:\n"
                       "  - name: c\n    resources: {requests: {nvidia.com/gpu: 1}}\n"
                       "status: {phase: Running}\n", c, i, c, c, c, c);
    }
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
               "spec:\n  minMember: 16\n  priorityClassName: high\n  topology: {required: block}\n"
               "  subGroups:\n  - {name: big, minMember: 10, topology: {required: nvlink-domain}}\n"
               "  - {name: small, minMember: 6, topology: {required: nvlink-domain}}\n");
    sgpods(&y, "big", "g", "big", 10, -1);
    sgpods(&y, "small", "g", "small", 6, -1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "preempts")), 1);
    char a[16], b[16];
    assert_one_clique(res, "big", 10, a);
    assert_one_clique(res, "small", 6, b);
    assert_string_not_equal(a, b);
    cJSON_Delete(res);
    free(y);
}

/* KAI's PodGroup subGroups (scheduling.run.ai/v2alpha2): leaves joined by
 * kai.scheduler/subgroup-name, levels as node label keys; a parent only
 * groups its children. Same BFD counterexample as above. */
static void test_kai_subgroups(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_two_tens(&y);
    static const int size[] = {5, 4, 3, 3, 3, 2};
    tu_cat(&y, "---\napiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: k, "
               "namespace: ml}\nspec:\n  minMember: 20\n  topologyConstraint: "
               "{requiredTopologyLevel: topogang.io/block}\n  subGroups:\n  - {name: all}\n");
    for (int k = 0; k < 6; k++)
        tu_cat(&y, "  - {name: s%d, parent: all, minMember: %d, topologyConstraint: "
                   "{requiredTopologyLevel: nvidia.com/gpu.clique}}\n", k, size[k]);
    for (int k = 0; k < 6; k++)
        for (int i = 0; i < size[k]; i++)
            tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: s%d-%d\n  namespace: ml\n"
                       "  annotations: {pod-group-name: k}\n  labels: {kai.scheduler/subgroup-name: s%d}\n"
                       "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                       "    resources: {requests: {nvidia.com/gpu: 1}}\n", k, i, k);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = NULL, *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(res, "gangs"))
        if (tu_str(it, "podGroup") && strstr(tu_str(it, "podGroup"), "ml/k"))
            g = it;
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "subGroups")), 6);
    char cl[16];
    for (int k = 0; k < 6; k++) {
        char p[8];
        snprintf(p, sizeof p, "s%d", k);
        assert_one_clique(res, p, size[k], cl);
    }
    cJSON_Delete(res);
    free(y);
}

/* A Volcano PodGroup "v" (scheduling.volcano.sh/v1beta1), gang tier 2 (the
 * block) hard, with spec.subGroupPolicy `pol` (YAML list items). */
static void vc_group(char **y, int min, const char *pol)
{
    tu_cat(y, "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: v, "
              "namespace: ml}\nspec:\n  minMember: %d\n  networkTopology: {mode: hard, "
              "highestTierAllowed: 2}\n  subGroupPolicy:\n%s", min, pol);
}

/* n one-GPU pods "<prefix>-<i>" with annotations `ann` and labels `labels`
 * (YAML flow maps' insides). */
static void gpu_pods(char **y, const char *prefix, const char *ann, const char *labels, int n,
                     int gpus)
{
    for (int i = 0; i < n; i++)
        tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%d\n  namespace: ml\n"
                  "  annotations: {%s}\n  labels: {%s}\n"
                  "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                  "    resources: {requests: {nvidia.com/gpu: %d}}\n",
               prefix, i, ann, labels, gpus);
}

static void peer_pods(char **y, const char *prefix, const char *ann, const char *labels, int n)
{
    gpu_pods(y, prefix, ann, labels, n, 1);
}

/* ... of Volcano gang v. */
static void vc_pods(char **y, const char *prefix, const char *labels, int n)
{
    peer_pods(y, prefix, "scheduling.k8s.io/group-name: v", labels, n);
}

/* The gang of a peer's PodGroup `key` ("ml/v": its podGroup names it). */
static const cJSON *gang_of_pg(const cJSON *res, const char *key)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(res, "gangs"))
        if (tu_str(it, "podGroup") && strstr(tu_str(it, "podGroup"), key))
            return it;
    return NULL;
}

static const cJSON *gang_v(const cJSON *res)
{
    return gang_of_pg(res, "ml/v");
}

/* Volcano's spec.subGroupPolicy: pods its labelSelector matches form one
 * sub-group per value of its matchLabelKeys, each subGroupSize pods inside
 * one domain of its networkTopology tier (tier 1: the NVLink domain). The
 * BFD counterexample again: partitions of 5, 4, 3, 3, 3 and 2 workers (three
 * entries: sizes 5/4, 3, 2), found jointly; a launcher no entry matches goes
 * anywhere in the block; the first entry that matches a pod takes it. */
static void test_volcano_subgroup_policy(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_two_tens(&y);
    node(&y, "l-n0", "b1", "c9", 1); /* room for the launcher only */
    vc_group(&y, 21,
             "  - name: big\n    subGroupSize: 5\n    labelSelector: {matchLabels: {size: \"5\"}}\n"
             "    matchLabelKeys: [volcano.sh/partition]\n"
             "    networkTopology: {mode: hard, highestTierAllowed: 1}\n"
             "  - name: four\n    subGroupSize: 4\n    labelSelector: {matchLabels: {size: \"4\"}}\n"
             "    matchLabelKeys: [volcano.sh/partition]\n"
             "    networkTopology: {mode: hard, highestTierName: nvidia.com/gpu.clique}\n"
             "  - name: tp\n    subGroupSize: 3\n"
             "    labelSelector: {matchExpressions: [{key: size, operator: In, values: [\"3\"]}]}\n"
             "    matchLabelKeys: [volcano.sh/partition, role]\n"
             "    networkTopology: {mode: hard, highestTierAllowed: 1}\n"
             "  - name: two\n    subGroupSize: 2\n    labelSelector: {matchLabels: {size: \"2\"}}\n"
             "    networkTopology: {highestTierAllowed: 1}\n");
    vc_pods(&y, "p5", "size: \"5\", volcano.sh/partition: a, role: w", 5);
    vc_pods(&y, "p4", "size: \"4\", volcano.sh/partition: b, role: w", 4);
    vc_pods(&y, "p3a", "size: \"3\", volcano.sh/partition: c, role: w", 3);
    vc_pods(&y, "p3b", "size: \"3\", volcano.sh/partition: d, role: w", 3);
    vc_pods(&y, "p3c", "size: \"3\", volcano.sh/partition: c, role: x", 3);
    vc_pods(&y, "p2", "size: \"2\", role: w", 2);
    vc_pods(&y, "launch", "role: launcher", 1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = gang_v(res);
    assert_non_null(g);
    if (strcmp(tu_str(g, "status"), "Scheduled"))
        fprintf(stderr, "reason: %s\n", tu_str(g, "reason"));
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    const cJSON *subs = cJSON_GetObjectItem(g, "subGroups"), *sg;
    assert_int_equal(cJSON_GetArraySize(subs), 6);
    static const char *const names[] = {"big-a", "four-b", "tp-c-w", "tp-d-w", "tp-c-x", "two"};
    for (int k = 0; k < 6; k++) {
        int found = 0;
        cJSON_ArrayForEach(sg, subs)
            if (!strcmp(tu_str(sg, "name"), names[k])) {
                found = 1;
                assert_string_equal(tu_str(sg, "level"), "nvlink-domain");
            }
        if (!found) {
            fprintf(stderr, "no sub-group %s\n", names[k]);
            fail();
        }
    }
    char cl[16], c5[16], c4[16], c2[16];
    assert_one_clique(res, "p5", 5, c5);
    assert_one_clique(res, "p4", 4, c4);
    assert_one_clique(res, "p3a", 3, cl);
    assert_one_clique(res, "p3b", 3, cl);
    assert_one_clique(res, "p3c", 3, cl);
    assert_one_clique(res, "p2", 2, c2);
    assert_string_not_equal(c5, c4); /* {5,3,2} + {4,3,3} */
    assert_string_equal(c5, c2);
    assert_string_equal(tu_node_of(res, "ml/launch-0"), "l-n0");
    cJSON_Delete(res);
    free(y);

    /* a sub-group short of its subGroupSize waits, named with the numbers;
     * a tier the policy lacks is refused naming the PodGroup and the field */
    y = NULL;
    cluster_two_tens(&y);
    vc_group(&y, 3, "  - name: tp\n    subGroupSize: 4\n    matchLabelKeys: [volcano.sh/partition]\n"
                    "    networkTopology: {mode: hard, highestTierAllowed: 1}\n");
    vc_pods(&y, "s", "volcano.sh/partition: a", 3);
    res = tu_simulate(POLICY, y);
    g = gang_v(res);
    assert_non_null(g);
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "sub-group tp-a of PodGroup ml/v"));
    assert_non_null(strstr(tu_str(g, "reason"), "has 3 of its minMember 4 pods"));
    cJSON_Delete(res);
    free(y);
    y = NULL;
    cluster_two_tens(&y);
    vc_group(&y, 2, "  - name: tp\n    subGroupSize: 2\n    matchLabelKeys: [volcano.sh/partition]\n"
                    "    networkTopology: {mode: hard, highestTierAllowed: 7}\n");
    vc_pods(&y, "s", "volcano.sh/partition: a", 2);
    res = tu_simulate(POLICY, y);
    g = gang_v(res);
    assert_non_null(g);
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "spec.subGroupPolicy[0].networkTopology."
                                                "highestTierAllowed: tier 7 does not exist"));
    cJSON_Delete(res);
    free(y);

    /* the pods before their PodGroup: the sub-groups are listed from the
     * members the gang already has when the PodGroup comes; two partitions
     * of 6 in NVLink domains of 10 (1 GPU each): one domain each */
    y = NULL;
    cluster_two_tens(&y);
    vc_pods(&y, "pa", "volcano.sh/partition: a", 6);
    vc_pods(&y, "pb", "volcano.sh/partition: b", 6);
    vc_group(&y, 12, "  - name: p\n    subGroupSize: 6\n    matchLabelKeys: [volcano.sh/partition]\n"
                     "    networkTopology: {mode: hard, highestTierAllowed: 1}\n");
    res = tu_simulate(POLICY, y);
    g = gang_v(res);
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "subGroups")), 2);
    char ca[16], cb[16];
    assert_one_clique(res, "pa", 6, ca);
    assert_one_clique(res, "pb", 6, cb);
    assert_string_not_equal(ca, cb);
    cJSON_Delete(res);
    free(y);
}

/* A KAI PodGroup "k" (no gang level) with two parents p1, p2, each with
 * a topologyConstraint `plevel` of its own (NULL: none), and leaves: p1's of
 * 6 and 2 pods, p2's of 10 and 1, each required in one NVLink domain. */
static void kai_nested(char **y, const char *plevel)
{
    static const char *const leaf[] = {"a", "b", "c", "d"}, *const par[] = {"p1", "p1", "p2", "p2"};
    static const int size[] = {6, 2, 10, 1};
    tu_cat(y, "---\napiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: k, "
              "namespace: ml}\nspec:\n  minMember: 19\n  subGroups:\n");
    for (int j = 1; j <= 2; j++) {
        tu_cat(y, "  - {name: p%d", j);
        if (plevel)
            tu_cat(y, ", topologyConstraint: {requiredTopologyLevel: %s}", plevel);
        tu_cat(y, "}\n");
    }
    for (int k = 0; k < 4; k++)
        tu_cat(y, "  - {name: %s, parent: %s, minMember: %d, topologyConstraint: "
                  "{requiredTopologyLevel: nvidia.com/gpu.clique}}\n", leaf[k], par[k], size[k]);
    for (int k = 0; k < 4; k++) {
        char label[64];
        snprintf(label, sizeof label, "kai.scheduler/subgroup-name: %s", leaf[k]);
        peer_pods(y, leaf[k], "pod-group-name: k", label, size[k]);
    }
}

/* Simulates the cluster `nodes` with kai_nested(plevel); *g: gang k. */
static cJSON *kai_try(const char *nodes, const char *plevel, const cJSON **g)
{
    char *y = strdup(nodes);
    kai_nested(&y, plevel);
    cJSON *res = tu_simulate(POLICY, y);
    free(y);
    *g = gang_of_pg(res, "ml/k");
    assert_non_null(*g);
    return res;
}

/* The block of pod ml/<prefix>-0's node ("b1-..." names carry it). */
static char block_of(const cJSON *res, const char *prefix)
{
    char name[64];
    snprintf(name, sizeof name, "ml/%s-0", prefix);
    const char *n = tu_node_of(res, name);
    return n ? n[1] : 0;
}

/* Entry `name` of gang g's array `field` ("subGroups", "outerGroups"). */
static const cJSON *named_in(const cJSON *g, const char *field, const char *name)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(g, field))
        if (tu_str(it, "name") && !strcmp(tu_str(it, "name"), name))
            return it;
    fail_msg("no %s entry %s", field, name);
    return NULL;
}

/* `simulate -o json` lists outer group `outer` with its level and domain,
 * the domains of its leaves inside it, each leaf naming it. */
static void assert_outer(const cJSON *g, const char *outer, const char *level, uint32_t pods,
                         const char *const *leaves, int nleaves)
{
    const cJSON *o = named_in(g, "outerGroups", outer);
    assert_string_equal(tu_str(o, "level"), level);
    assert_int_equal((int)cJSON_GetObjectItem(o, "pods")->valuedouble, (int)pods);
    const char *dom = tu_str(o, "domain");
    assert_non_null(dom);
    for (int i = 0; i < nleaves; i++) {
        const cJSON *l = named_in(g, "subGroups", leaves[i]);
        assert_string_equal(tu_str(l, "outerGroup"), outer);
        const char *ld = tu_str(l, "domain");
        if (strncmp(ld, dom, strlen(dom)) || ld[strlen(dom)] != '/')
            fail_msg("sub-group %s in %s, not inside %s's %s", leaves[i], ld, outer, dom);
    }
}

/* KAI's nested sub-groups whose parent has a topologyConstraint of its own:
 * each parent's leaves in one domain of the parent's level, each leaf in
 * its own NVLink domain, searched jointly. Block b1 has cliques of 10 and 2
 * GPUs (12), b2 two of 8 (16). p1 (6 + 2) fits either block and best fit
 * (the tighter block) puts it in b1, where it leaves no clique of 10 for
 * p2's leaf c: placed parent by parent, greedily, p2 finds no room; jointly,
 * p1 goes to b2 and p2 (10 + 1) to b1. Before: refused ("a constraint over
 * nested sub-groups is not supported yet"). A parent level that does not
 * exist in the policy is refused naming the parent and the field; with
 * blocks too small for any parent the gang waits with the reason. */
static void test_kai_nested_parent_topology(void **state)
{
    (void)state;
    char *y = NULL;
    clique_nodes(&y, "b1", "c1", 5, 2); /* b1: c1 = 10 GPUs, c2 = 2; b2: c3, c4 = 8 each */
    clique_nodes(&y, "b1", "c2", 1, 2);
    clique_nodes(&y, "b2", "c3", 4, 2);
    clique_nodes(&y, "b2", "c4", 4, 2);
    const cJSON *g;
    cJSON *res = kai_try(y, "topogang.io/block", &g);
    if (strcmp(tu_str(g, "status"), "Scheduled"))
        fprintf(stderr, "reason: %s\n", tu_str(g, "reason"));
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    char cl[16];
    assert_one_clique(res, "a", 6, cl);
    assert_one_clique(res, "b", 2, cl);
    assert_one_clique(res, "c", 10, cl);
    assert_string_equal(cl, "b1c1");
    assert_one_clique(res, "d", 1, cl);
    assert_int_equal(block_of(res, "a"), '2'); /* p1 in b2 */
    assert_int_equal(block_of(res, "b"), '2');
    assert_int_equal(block_of(res, "c"), '1'); /* p2 in b1 */
    assert_int_equal(block_of(res, "d"), '1');
    /* simulate -o json names each parent's block beside its leaves */
    static const char *const p1[] = {"a", "b"}, *const p2[] = {"c", "d"};
    assert_outer(g, "p1", "block", 8, p1, 2);
    assert_outer(g, "p2", "block", 11, p2, 2);
    assert_string_not_equal(tu_str(named_in(g, "outerGroups", "p1"), "domain"),
                            tu_str(named_in(g, "outerGroups", "p2"), "domain"));
    cJSON_Delete(res);

    /* a parent level the policy lacks: refused naming the parent's field */
    res = kai_try(y, "no-such-level", &g);
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "spec.subGroups[name=p1].topologyConstraint."
                                                "requiredTopologyLevel: \"no-such-level\""));
    cJSON_Delete(res);

    /* parents each in one NVLink domain: p2 (11) has none; p1 (8) would */
    res = kai_try(y, "nvidia.com/gpu.clique", &g);
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(res, "a", 6), 0);
    assert_non_null(strstr(tu_str(g, "reason"), "sub-group"));
    cJSON_Delete(res);
    free(y);
}

/* A whole LWS (gang-scope: lws) whose groups have LWS subgroups: each group
 * one sub-group of sub-groups, in one block (exclusive-topology), each of
 * its subgroups (subGroupPolicy subGroupSize 4, subgroup-exclusive-topology)
 * in one NVLink domain inside it. 2 groups of 8; block b1 has NVLink domains
 * of 6 and 2 GPUs (8: it holds a group by count but not its subgroups), b2
 * and b3 two of 4 each. Before, a whole LWS's subgroups were not placed: a
 * group took b1, its second subgroup split 2 + 2 across b1's domains. */
static void lws_as(char **y, const char *name, int groups, int size, const char *scope,
                   const char *ann, const char *sgp, int sub_size);
static void test_lws_whole_with_subgroups(void **state)
{
    (void)state;
    char *y = NULL;
    static const char *const blk_of[] = {"b1", "b1", "b2", "b2", "b3", "b3"};
    static const char *const cl[] = {"c1", "c2", "c3", "c4", "c5", "c6"};
    static const int nn[] = {3, 1, 2, 2, 2, 2};
    for (int i = 0; i < 6; i++)
        clique_nodes(&y, blk_of[i], cl[i], nn[i], 2);
    lws_as(&y, "ws", 2, 8, "lws", "leaderworkerset.sigs.k8s.io/exclusive-topology: topogang.io/block, "
           "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: nvidia.com/gpu.clique",
           "{subGroupSize: 4}", 4);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/LeaderWorkerSet/ws");
    assert_non_null(g);
    if (strcmp(tu_str(g, "status"), "Scheduled"))
        fprintf(stderr, "reason: %s\n", tu_str(g, "reason"));
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "subGroups")), 4);
    char blk[2] = {0, 0};
    for (int gi = 0; gi < 2; gi++) {
        char first[2][32];
        for (int w = 0; w < 8; w++) {
            char key[64], c[32];
            snprintf(key, sizeof key, w ? "ml/ws-%d-%d" : "ml/ws-%d", gi, w);
            const char *n = tu_node_of(res, key);
            assert_non_null(n);
            snprintf(c, sizeof c, "%.*s", (int)strcspn(n, "-"), n); /* "b2c3" */
            if (w % 4 == 0)
                strcpy(first[w / 4], c);
            assert_string_equal(c, first[w / 4]); /* each subgroup in one NVLink domain */
            assert_int_equal(c[1], first[0][1]);  /* the group in one block */
        }
        assert_string_not_equal(first[0], first[1]);
        blk[gi] = first[0][1];
        assert_int_not_equal(blk[gi], '1'); /* b1 holds a group by count only */
    }
    assert_int_not_equal(blk[0], blk[1]);
    /* simulate -o json: each group an outer group in its block, its subgroups inside */
    static const char *const g0[] = {"0-0", "0-1"}, *const g1[] = {"1-0", "1-1"};
    assert_outer(g, "0", "block", 8, g0, 2);
    assert_outer(g, "1", "block", 8, g1, 2);
    cJSON_Delete(res);
    free(y);
}

/* Simulates Volcano gang v (minMember min) on cluster_two_tens: partitions
 * a, b, c of n[0..2] one-GPU pods ("pa-<i>", ...; 0: none), one entry "p":
 * sub-groups of `size` by volcano.sh/partition, each in one NVLink domain,
 * minSubGroups msg. *g: the gang (its reason printed when not Scheduled). */
static cJSON *vc_min(int min, int size, int msg, const int *n, const cJSON **g)
{
    char *y = NULL, pol[320];
    cluster_two_tens(&y);
    for (int k = 0; k < 3; k++) {
        char prefix[4] = {'p', (char)('a' + k), 0}, label[48];
        snprintf(label, sizeof label, "volcano.sh/partition: %c", 'a' + k);
        vc_pods(&y, prefix, label, n[k]);
    }
    snprintf(pol, sizeof pol, "  - name: p\n    subGroupSize: %d\n    minSubGroups: %d\n"
             "    matchLabelKeys: [volcano.sh/partition]\n"
             "    networkTopology: {mode: hard, highestTierAllowed: 1}\n", size, msg);
    vc_group(&y, min, pol);
    cJSON *res = tu_simulate(POLICY, y);
    free(y);
    *g = gang_v(res);
    assert_non_null(*g);
    if (strcmp(tu_str(*g, "status"), "Scheduled"))
        fprintf(stderr, "reason: %s\n", tu_str(*g, "reason"));
    return res;
}

/* Volcano's minSubGroups, as Volcano's scheduler reads it: the gang is ready
 * with minMember placed and at least minSubGroups of the entry's sub-groups
 * whole; a sub-group short of its subGroupSize waits without holding the
 * others back; whole sub-groups beyond minSubGroups that find no room wait
 * while the gang starts; fewer whole sub-groups than minSubGroups: the gang
 * waits, the reason naming the PodGroup, the entry and the numbers. */
static void test_volcano_min_subgroups(void **state)
{
    (void)state;
    char ca[16], cb[16];
    const cJSON *g;
    /* p-a whole (4), p-b short (3 of 4): p-a is placed, p-b waits */
    cJSON *res = vc_min(4, 4, 1, (const int[]){4, 3, 0}, &g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_one_clique(res, "pa", 4, ca);
    assert_int_equal(placed(res, "pb", 3), 0);
    cJSON_Delete(res);

    /* three whole sub-groups of 6, two NVLink domains of 10: all three
     * never fit; minSubGroups 1 starts the gang with p-a (by name) */
    res = vc_min(6, 6, 1, (const int[]){6, 6, 6}, &g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_one_clique(res, "pa", 6, ca);
    int nb = placed(res, "pb", 6), nc = placed(res, "pc", 6);
    assert_true(nb == 0 || nb == 6); /* whole or not at all */
    assert_true(nc == 0 || nc == 6);
    assert_true(nb + nc <= 6);
    if (nb) {
        assert_one_clique(res, "pb", 6, cb);
        assert_string_not_equal(ca, cb);
    }
    cJSON_Delete(res);

    /* minMember 8 with minSubGroups 1: two whole sub-groups are needed for
     * minMember (p-c, short, waits) */
    res = vc_min(8, 4, 1, (const int[]){4, 4, 3}, &g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_one_clique(res, "pa", 4, ca);
    assert_one_clique(res, "pb", 4, cb);
    assert_int_equal(placed(res, "pc", 3), 0);
    cJSON_Delete(res);

    /* minSubGroups 2 with one whole sub-group: the gang waits, with numbers */
    res = vc_min(4, 4, 2, (const int[]){4, 3, 0}, &g);
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    const char *why = tu_str(g, "reason");
    assert_non_null(strstr(why, "PodGroup ml/v"));
    assert_non_null(strstr(why, ": spec.subGroupPolicy[0] (p) has 1 of its minSubGroups 2 "
                                "sub-groups with their subGroupSize 4 members (2 sub-group(s) have "
                                "members; the fullest of the others, p-b, has 3)"));
    assert_int_equal(placed(res, "pa", 4), 0);
    cJSON_Delete(res);
}

/* minSubGroups 2 of sub-groups p-a, p-b, p-c (6 pods each), two NVLink
 * domains of 10 GPUs: p-a's pods take 2 GPUs each (12: it fits no domain),
 * p-b's and p-c's one. The two first by name (p-a, p-b) never fit; p-b and
 * p-c do, one per domain: the search finds them and the gang starts, p-a
 * waiting (by name, the gang waited for ever). */
static void test_volcano_min_subgroups_searched(void **state)
{
    (void)state;
    char *y = NULL, cb[16], cc[16];
    cluster_two_tens(&y);
    gpu_pods(&y, "pa", "scheduling.k8s.io/group-name: v", "volcano.sh/partition: a", 6, 2);
    vc_pods(&y, "pb", "volcano.sh/partition: b", 6);
    vc_pods(&y, "pc", "volcano.sh/partition: c", 6);
    vc_group(&y, 12, "  - name: p\n    subGroupSize: 6\n    minSubGroups: 2\n"
                     "    matchLabelKeys: [volcano.sh/partition]\n"
                     "    networkTopology: {mode: hard, highestTierAllowed: 1}\n");
    cJSON *res = tu_simulate(POLICY, y);
    free(y);
    const cJSON *g = gang_v(res);
    assert_non_null(g);
    if (strcmp(tu_str(g, "status"), "Scheduled"))
        fprintf(stderr, "reason: %s\n", tu_str(g, "reason"));
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(res, "pa", 6), 0);
    assert_one_clique(res, "pb", 6, cb);
    assert_one_clique(res, "pc", 6, cc);
    assert_string_not_equal(cb, cc);
    cJSON_Delete(res);
}

/* ---- the peers' workloads: JobSet child Jobs, LWS groups ----------------------- */

/* Cliques c1..c<nc> of 3 two-GPU nodes (6 GPUs) in block b1. */
static void cluster_sixes(char **y, int nc)
{
    for (int c = 1; c <= nc; c++)
        for (int i = 0; i < 3; i++) {
            char n[16], cl[8];
            snprintf(n, sizeof n, "c%d-n%d", c, i);
            snprintf(cl, sizeof cl, "c%d", c);
            node(y, n, "b1", cl, 2);
        }
}

/* The n one-GPU pods "<js>-<rjob>-<idx>-<i>" of a JobSet's child Job, as
 * the Job controller makes them (owner: the Job; JobSet's labels). */
static void jobset_pods(char **y, const char *js, const char *rjob, int idx, int n)
{
    for (int i = 0; i < n; i++)
        tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%s-%d-%d\n  namespace: ml\n"
                  "  labels: {jobset.sigs.k8s.io/jobset-name: %s, jobset.sigs.k8s.io/replicatedjob-name: %s, "
                  "jobset.sigs.k8s.io/job-index: \"%d\", batch.kubernetes.io/job-completion-index: \"%d\"}\n"
                  "  annotations: {topogang.io/topology-required: block}\n"
                  "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s-%s-%d, uid: u-%s-%d, "
                  "controller: true}]\nspec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                  "    resources: {requests: {nvidia.com/gpu: 1}}\n",
               js, rjob, idx, i, js, rjob, idx, i, js, rjob, idx, rjob, idx);
}

/* A replicated job entry: `replicas` Jobs of `size` pods; annotation excl
 * on its template (NULL: none). */
static void rjob(char **y, const char *name, int replicas, int size, const char *excl)
{
    tu_cat(y, "  - name: %s\n    replicas: %d\n    template:\n", name, replicas);
    if (excl)
        tu_cat(y, "      metadata: {annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: %s}}\n",
               excl);
    tu_cat(y, "      spec: {parallelism: %d, completions: %d, template: {spec: {containers: "
              "[{name: c, image: x}]}}}\n", size, size);
}

/* Two child Jobs of 4 pods whose replicated job asks exclusive-topology on the
 * NVLink clique label, in cliques of 6: one Job per clique (packing the 8
 * pods would put 6 in one clique and split a Job); the driver job without a
 * level is in no sub-group. */
static void test_jobset_child_jobs(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_sixes(&y, 2);
    tu_cat(&y, "---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, "
               "namespace: ml, uid: u-js}\nspec:\n  replicatedJobs:\n");
    rjob(&y, "driver", 1, 1, NULL);
    rjob(&y, "w", 2, 4, "nvidia.com/gpu.clique");
    jobset_pods(&y, "js", "driver", 0, 1);
    jobset_pods(&y, "js", "w", 0, 4);
    jobset_pods(&y, "js", "w", 1, 4);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/JobSet/js");
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetObjectItem(g, "minMember")->valueint, 9);
    const cJSON *subs = cJSON_GetObjectItem(g, "subGroups");
    assert_int_equal(cJSON_GetArraySize(subs), 2);
    assert_string_equal(tu_str(cJSON_GetArrayItem(subs, 0), "name"), "js-w-0");
    assert_string_equal(tu_str(cJSON_GetArrayItem(subs, 1), "name"), "js-w-1");
    assert_string_equal(tu_str(cJSON_GetArrayItem(subs, 1), "level"), "nvlink-domain");
    char a[16], b[16];
    assert_one_clique(res, "js-w-0", 4, a);
    assert_one_clique(res, "js-w-1", 4, b);
    assert_string_not_equal(a, b);
    /* each placed pod names its child Job; the driver none */
    const cJSON *pod, *pods = cJSON_GetObjectItem(g, "pods");
    int named = 0;
    cJSON_ArrayForEach(pod, pods)
    {
        const char *k = tu_str(pod, "pod"), *sg = tu_str(pod, "subGroup");
        if (strstr(k, "driver"))
            assert_null(sg);
        else
            named += sg && !strncmp(k + 3, sg, strlen(sg));
    }
    assert_int_equal(named, 8);
    cJSON_Delete(res);
    free(y);
}

/* The JobSet's own annotation gives every replicated job its level; the
 * child Jobs (5, 4, 3, 3, 3, 2 pods in two cliques of 10) are arranged
 * jointly where best fit decreasing fails; a level the policy lacks makes
 * the JobSet's gang invalid with the annotation named. */
static void test_jobset_joint_and_bad_level(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_two_tens(&y);
    static const int size[] = {5, 4, 3, 3, 3, 2};
    tu_cat(&y, "---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, "
               "namespace: ml, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: "
               "nvidia.com/gpu.clique}}\nspec:\n  replicatedJobs:\n");
    for (int k = 0; k < 6; k++) {
        char n[8];
        snprintf(n, sizeof n, "s%d", k);
        rjob(&y, n, 1, size[k], NULL);
    }
    for (int k = 0; k < 6; k++) {
        char n[8];
        snprintf(n, sizeof n, "s%d", k);
        jobset_pods(&y, "js", n, 0, size[k]);
    }
    tu_cat(&y, "---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: bad, "
               "namespace: ml, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: "
               "cloud.google.com/gke-nodepool}}\nspec:\n  replicatedJobs:\n");
    rjob(&y, "w", 1, 1, NULL);
    jobset_pods(&y, "bad", "w", 0, 1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/JobSet/js");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "subGroups")), 6);
    int used[3] = {0};
    for (int k = 0; k < 6; k++) {
        char p[16], cl[16];
        snprintf(p, sizeof p, "js-s%d-0", k);
        assert_one_clique(res, p, size[k], cl);
        used[cl[1] - '0'] += size[k];
    }
    assert_int_equal(used[1], 10);
    assert_int_equal(used[2], 10);
    g = tu_gang(res, "ml/JobSet/bad");
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "JobSet ml/bad: metadata.annotations["
                                                "alpha.jobset.sigs.k8s.io/exclusive-topology]: "
                                                "\"cloud.google.com/gke-nodepool\" is neither a level"));
    cJSON_Delete(res);
    free(y);
}

/* An LWS of `groups` groups of `size` one-GPU pods (leader "<name>-<g>",
 * workers "<name>-<g>-<w>"), annotated exclusive-topology on the cliques;
 * scope: the pods' topogang.io/gang-scope (NULL: none). */
static void lws(char **y, const char *name, int groups, int size, const char *scope)
{
    lws_as(y, name, groups, size, scope, "leaderworkerset.sigs.k8s.io/exclusive-topology: "
           "nvidia.com/gpu.clique", NULL, 0);
}

/* As lws, with the LWS's annotations `ann` (a YAML flow map's inside),
 * its leaderWorkerTemplate.subGroupPolicy `sgp` (NULL: none) and, when
 * sub_size > 0, each pod labelled subgroup-index worker / sub_size (as
 * LWS's webhook labels them, LeaderWorker with size a multiple). */
static void lws_as(char **y, const char *name, int groups, int size, const char *scope,
                   const char *ann, const char *sgp, int sub_size)
{
    tu_cat(y, "---\napiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: %s, "
              "namespace: ml, annotations: {%s}}\nspec:\n  replicas: %d\n  leaderWorkerTemplate: {size: %d",
           name, ann, groups, size);
    if (sgp)
        tu_cat(y, ", subGroupPolicy: %s", sgp);
    tu_cat(y, "}\n");
    for (int g = 0; g < groups; g++)
        for (int w = 0; w < size; w++) {
            char pod[64], sts[64], sg[64] = "";
            snprintf(pod, sizeof pod, w ? "%s-%d-%d" : "%s-%d", name, g, w);
            snprintf(sts, sizeof sts, w ? "%s-%d" : "%s", name, g);
            if (sub_size > 0)
                snprintf(sg, sizeof sg, ", leaderworkerset.sigs.k8s.io/subgroup-index: \"%d\"",
                         w / sub_size);
            tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
                      "  labels: {leaderworkerset.sigs.k8s.io/name: %s, leaderworkerset.sigs.k8s.io/group-index: "
                      "\"%d\", leaderworkerset.sigs.k8s.io/worker-index: \"%d\"%s}\n", pod, name, g, w, sg);
            if (scope)
                tu_cat(y, "  annotations: {topogang.io/gang-scope: %s}\n", scope);
            tu_cat(y, "  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: %s, uid: u-%s, "
                      "controller: true}]\nspec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                      "    resources: {requests: {nvidia.com/gpu: 1}}\n", sts, sts);
        }
}

/* Every pod of LWS group g in one clique; returns it. */
static void lws_one_clique(const cJSON *res, const char *name, int g, int size, char *out)
{
    char key[64], a[16];
    for (int w = 0; w < size; w++) {
        snprintf(key, sizeof key, w ? "ml/%s-%d-%d" : "ml/%s-%d", name, g, w);
        const char *n = tu_node_of(res, key);
        assert_non_null(n);
        size_t len = strcspn(n, "-");
        assert_true(len < sizeof a);
        memcpy(a, n, len);
        a[len] = 0;
        if (w)
            assert_string_equal(a, out);
        else
            strcpy(out, a);
    }
}

/* topogang.io/gang-scope: lws makes the whole LWS one gang (2 groups of 4:
 * minMember 8), each group a sub-group at its exclusive-topology level; 3
 * groups of 4 in two cliques of 6 place nothing (all or nothing across the
 * groups), where gangs per group would place two of them. */
static void test_lws_whole_gang(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_sixes(&y, 2);
    lws(&y, "vllm", 2, 4, "lws");
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/LeaderWorkerSet/vllm");
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetObjectItem(g, "minMember")->valueint, 8);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "subGroups")), 2);
    assert_null(tu_gang(res, "ml/LeaderWorkerSet/vllm/0"));
    char a[16], b[16];
    lws_one_clique(res, "vllm", 0, 4, a);
    lws_one_clique(res, "vllm", 1, 4, b);
    assert_string_not_equal(a, b);
    cJSON_Delete(res);
    free(y);

    y = NULL;
    cluster_sixes(&y, 2);
    lws(&y, "big", 3, 4, "lws");
    res = tu_simulate(POLICY, y);
    g = tu_gang(res, "ml/LeaderWorkerSet/big");
    assert_string_not_equal(tu_str(g, "status"), "Scheduled");
    assert_non_null(strstr(tu_str(g, "reason"), "sub-group"));
    assert_null(tu_node_of(res, "ml/big-0"));
    assert_null(tu_node_of(res, "ml/big-1"));
    cJSON_Delete(res);
    free(y);
}

/* Without gang-scope each group is its own gang, held in one clique by the
 * LWS's exclusive-topology (the policy's default would pack the second group
 * across the two cliques). */
static void test_lws_group_exclusive(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_sixes(&y, 2);
    lws(&y, "vllm", 2, 4, NULL);
    cJSON *res = tu_simulate(POLICY, y);
    char a[16], b[16];
    for (int k = 0; k < 2; k++) {
        char key[64];
        snprintf(key, sizeof key, "ml/LeaderWorkerSet/vllm/%d", k);
        assert_string_equal(tu_str(tu_gang(res, key), "status"), "Scheduled");
        assert_string_equal(tu_str(tu_gang(res, key), "level"), "nvlink-domain");
    }
    lws_one_clique(res, "vllm", 0, 4, a);
    lws_one_clique(res, "vllm", 1, 4, b);
    assert_string_not_equal(a, b);
    cJSON_Delete(res);
    free(y);
}

/* An LWS of one group of `size` one-GPU pods with
 * spec.leaderWorkerTemplate.subGroupPolicy (`policy`: its YAML flow map) and
 * the annotation subgroup-exclusive-topology: `level` (NULL: none); each
 * pod labelled subgroup-index as LWS's webhook labels it (sub[w], -1:
 * none). */
static void lws_sub(char **y, const char *name, int size, const char *policy, const char *level,
                    const int *sub)
{
    tu_cat(y, "---\napiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: %s, "
              "namespace: ml", name);
    if (level)
        tu_cat(y, ", annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: %s}", level);
    tu_cat(y, "}\nspec:\n  replicas: 1\n  leaderWorkerTemplate: {size: %d, subGroupPolicy: %s}\n", size,
           policy);
    for (int w = 0; w < size; w++) {
        char pod[64], sts[64], sg[64] = "";
        snprintf(pod, sizeof pod, w ? "%s-0-%d" : "%s-0", name, w);
        snprintf(sts, sizeof sts, w ? "%s-0" : "%s", name);
        if (sub[w] >= 0)
            snprintf(sg, sizeof sg, ", leaderworkerset.sigs.k8s.io/subgroup-index: \"%d\"", sub[w]);
        tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
                  "  labels: {leaderworkerset.sigs.k8s.io/name: %s, leaderworkerset.sigs.k8s.io/group-index: "
                  "\"0\", leaderworkerset.sigs.k8s.io/worker-index: \"%d\"%s}\n"
                  "  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: %s, uid: u-%s, "
                  "controller: true}]\nspec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                  "    resources: {requests: {nvidia.com/gpu: 1}}\n", pod, name, w, sg, sts, sts);
    }
}

/* The clique of LWS pod w of group 0 (NULL: unplaced). */
static const char *lws_clique(const cJSON *res, const char *name, int w, char *buf)
{
    char key[64];
    snprintf(key, sizeof key, w ? "ml/%s-0-%d" : "ml/%s-0", name, w);
    const char *n = tu_node_of(res, key);
    if (!n)
        return NULL;
    snprintf(buf, 16, "%.*s", (int)strcspn(n, "-"), n);
    return buf;
}

/* LWS's subGroupPolicy read as sub-groups of each group's gang: size 9,
 * subGroupSize 4, LeaderWorker (size - 1 the multiple: the leader is the
 * extra member of subgroup 0: 5 and 4 pods), each subgroup in one NVLink
 * domain by subgroup-exclusive-topology. Two cliques of 6: the group packed
 * without them takes 6 + 3, splitting a subgroup. */
static void test_lws_subgroup_policy(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_sixes(&y, 2);
    static const int sub[] = {0, 0, 0, 0, 0, 1, 1, 1, 1};
    lws_sub(&y, "inf", 9, "{subGroupSize: 4}", "nvidia.com/gpu.clique", sub);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/LeaderWorkerSet/inf/0");
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    const cJSON *subs = cJSON_GetObjectItem(g, "subGroups");
    assert_int_equal(cJSON_GetArraySize(subs), 2);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(subs, 0), "pods")->valueint, 5);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(subs, 1), "pods")->valueint, 4);
    assert_string_equal(tu_str(cJSON_GetArrayItem(subs, 1), "level"), "nvlink-domain");
    char c[9][16];
    for (int w = 0; w < 9; w++)
        assert_non_null(lws_clique(res, "inf", w, c[w]));
    for (int w = 1; w < 9; w++)
        assert_string_equal(c[w], c[sub[w] ? 5 : 0]);
    assert_string_not_equal(c[0], c[5]);
    cJSON_Delete(res);
    free(y);
}

/* LeaderExcluded: the leader is in no subgroup (it goes anywhere in the
 * group's domain), the 8 workers in two subgroups of 4: a clique of 6 and
 * one of 4 hold them, the leader beside. */
static void test_lws_subgroup_leader_excluded(void **state)
{
    (void)state;
    char *y = NULL;
    cluster_sixes(&y, 1);
    node(&y, "c2-n0", "b1", "c2", 2);
    node(&y, "c2-n1", "b1", "c2", 2);
    static const int sub[] = {-1, 0, 0, 0, 0, 1, 1, 1, 1};
    lws_sub(&y, "inf", 9, "{subGroupSize: 4, subGroupPolicyType: LeaderExcluded}",
            "nvidia.com/gpu.clique", sub);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/LeaderWorkerSet/inf/0");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "subGroups")), 2);
    char c[9][16];
    for (int w = 0; w < 9; w++)
        assert_non_null(lws_clique(res, "inf", w, c[w]));
    for (int w = 2; w < 9; w++)
        assert_string_equal(c[w], c[w < 5 ? 1 : 5]);
    assert_string_not_equal(c[1], c[5]);
    const cJSON *pod;
    cJSON_ArrayForEach(pod, cJSON_GetObjectItem(g, "pods"))
        if (!strcmp(tu_str(pod, "pod"), "ml/inf-0"))
            assert_null(tu_str(pod, "subGroup"));
    cJSON_Delete(res);
    free(y);
}

/* A subGroupPolicy LWS rejects, a policy type it lacks, and a
 * subgroup-exclusive-topology naming no level: the group's gang is not
 * placed, its reason naming the field; the others are served. */
static void test_lws_subgroup_bad(void **state)
{
    (void)state;
    static const struct {
        const char *policy, *level, *want;
    } cases[] = {
        {"{subGroupSize: 5}", "nvidia.com/gpu.clique",
         "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: 5 does not divide "
         "spec.leaderWorkerTemplate.size 9 or size - 1"},
        {"{subGroupSize: 3, subGroupPolicyType: LeaderExcluded}", "nvidia.com/gpu.clique",
         "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: 3 does not divide "
         "spec.leaderWorkerTemplate.size 9 - 1 (LeaderExcluded)"},
        {"{subGroupSize: 4, subGroupPolicyType: Spread}", "nvidia.com/gpu.clique",
         "spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType: must be LeaderWorker or "
         "LeaderExcluded, not \"Spread\""},
        {"{subGroupSize: 4}", "cloud.google.com/gke-nodepool",
         "metadata.annotations[leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology]: "
         "\"cloud.google.com/gke-nodepool\" is neither a level"},
    };
    static const int sub[] = {0, 0, 0, 0, 0, 1, 1, 1, 1};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *y = NULL;
        cluster_sixes(&y, 2);
        lws_sub(&y, "bad", 9, cases[i].policy, cases[i].level, sub);
        lws(&y, "ok", 1, 2, NULL);
        cJSON *res = tu_simulate(POLICY, y);
        const cJSON *g = tu_gang(res, "ml/LeaderWorkerSet/bad/0");
        assert_string_not_equal(tu_str(g, "status"), "Scheduled");
        if (!strstr(tu_str(g, "reason"), cases[i].want))
            fail_msg("case %zu: reason \"%s\" lacks \"%s\"", i, tu_str(g, "reason"), cases[i].want);
        assert_null(tu_node_of(res, "ml/bad-0"));
        assert_string_equal(tu_str(tu_gang(res, "ml/LeaderWorkerSet/ok/0"), "status"), "Scheduled");
        cJSON_Delete(res);
        free(y);
    }
}

/* ---- property: tg_subgroup_solve against brute force ------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* Valid when every domain holds what is assigned inside it. */
static int valid(const struct tg_tree *t, const uint32_t *count, uint32_t nsg, const uint32_t *need,
                 const uint32_t *dom, uint32_t gang)
{
    uint32_t used[256] = {0};
    for (uint32_t k = 0; k < nsg; k++)
        for (uint32_t a = dom[k];; a = t->dom[a].parent) {
            used[a] += need[k];
            if (used[a] > count[a])
                return 0;
            if (a == gang)
                break;
        }
    return 1;
}

static int brute(const struct tg_tree *t, const uint32_t *count, uint32_t nsg, const uint32_t *lvl,
                 const uint32_t *need, uint32_t gang, uint32_t *dom, uint32_t k)
{
    if (k == nsg)
        return valid(t, count, nsg, need, dom, gang);
    for (uint32_t i = 0; i < t->nbylevel[lvl[k]]; i++) {
        uint32_t d = t->bylevel[lvl[k]][i];
        if (tg_tree_ancestor(t, d, 1) != gang || !t->dom[d].nnodes)
            continue;
        dom[k] = d;
        if (brute(t, count, nsg, lvl, need, gang, dom, k + 1))
            return 1;
    }
    return 0;
}

/* One block of 2-3 racks of 1-3 nodes, each node holding 0-4 members:
 * per domain, what its nodes hold into count. */
static void random_tree(struct tg_tree *t, const uint32_t *keys, uint32_t *count)
{
    assert_int_equal(tg_tree_init(t, keys, 3), 0);
    uint32_t nr = 2 + rnd(2), slot = 0, nodecnt[16];
    for (uint32_t r = 0; r < nr; r++) {
        uint32_t nn = 1 + rnd(3);
        for (uint32_t i = 0; i < nn; i++, slot++) {
            char rv[8], nv[8];
            snprintf(rv, sizeof rv, "r%u", r);
            snprintf(nv, sizeof nv, "n%u", slot);
            struct tg_label l[3] = {{keys[0], tg_intern("b1")}, {keys[1], tg_intern(rv)},
                                    {keys[2], tg_intern(nv)}};
            /* labels sorted by key id */
            for (int a = 0; a < 3; a++)
                for (int b = a + 1; b < 3; b++)
                    if (l[b].key < l[a].key) {
                        struct tg_label tmp = l[a];
                        l[a] = l[b];
                        l[b] = tmp;
                    }
            assert_int_equal(tg_tree_insert(t, slot, l, 3), 0);
            nodecnt[slot] = rnd(5);
        }
    }
    for (uint32_t s = 0; s < slot; s++)
        for (uint32_t d = t->leaf[s]; d != UINT32_MAX; d = t->dom[d].parent)
            count[d] += nodecnt[s];
}

static void test_property_vs_brute_force(void **state)
{
    (void)state;
    uint32_t keys[3] = {tg_intern("b"), tg_intern("r"), tg_intern("n")};
    int agree = 0, feasible = 0;
    for (int trial = 0; trial < 400; trial++) {
        struct tg_tree t;
        uint32_t count[256] = {0};
        random_tree(&t, keys, count);
        uint32_t gang = t.bylevel[1][0];
        uint32_t nsg = 1 + rnd(5), lvl[8], need[8], dom[8], bdom[8];
        for (uint32_t k = 0; k < nsg; k++) {
            lvl[k] = 2 + rnd(2); /* rack or node */
            need[k] = 1 + rnd(4);
        }
        uint32_t *cp[1] = {count};
        struct tg_sgprob p = {&t, 1, cp, nsg, lvl, need, NULL, 0};
        struct tg_arena a = {0};
        struct tg_sgwhy why;
        int got = tg_subgroup_solve(&p, gang, &a, dom, &why);
        int want = brute(&t, count, nsg, lvl, need, gang, bdom, 0);
        assert_int_equal(got, want);
        if (got == 1)
            assert_true(valid(&t, count, nsg, need, dom, gang));
        agree++;
        feasible += want;
        tg_arena_free(&a);
        tg_tree_free(&t);
    }
    assert_int_equal(agree, 400);
    assert_true(feasible > 50 && feasible < 350); /* both outcomes exercised */
}

/* Optional sub-groups (Volcano's minSubGroups, tg_sgprob.entry): 2-5
 * sub-groups at the rack or node level, each optional (entry 0) or required
 * at random, at least emin of the optional placed and their members at
 * least omust. Brute force: every subset of the optional ones meeting both,
 * every domain for each kept. The solver agrees, and what it returns places
 * every required one, meets both minimums and fits. */
static int brute_opt(const struct tg_tree *t, const uint32_t *count, uint32_t nsg,
                     const uint32_t *lvl, const uint32_t *need, const uint32_t *entry,
                     uint32_t emin, uint32_t omust, uint32_t gang)
{
    for (uint32_t mask = 0; mask < 1u << nsg; mask++) { /* mask: the optional left out */
        uint32_t n = 0, np = 0, members = 0, clvl[8], cneed[8], dom[8];
        int ok = 1;
        for (uint32_t k = 0; k < nsg && ok; k++) {
            if (mask >> k & 1) {
                ok = entry[k] != UINT32_MAX;
                continue;
            }
            if (entry[k] != UINT32_MAX) {
                np++;
                members += need[k];
            }
            clvl[n] = lvl[k];
            cneed[n++] = need[k];
        }
        if (ok && np >= emin && members >= omust &&
            brute(t, count, n, clvl, cneed, gang, dom, 0))
            return 1;
    }
    return 0;
}

static void test_property_optional_vs_brute_force(void **state)
{
    (void)state;
    uint32_t keys[3] = {tg_intern("b"), tg_intern("r"), tg_intern("n")};
    int feasible = 0, left_out = 0;
    for (int trial = 0; trial < 400; trial++) {
        struct tg_tree t;
        uint32_t count[256] = {0};
        random_tree(&t, keys, count);
        uint32_t gang = t.bylevel[1][0];
        uint32_t nsg = 2 + rnd(4), lvl[8], need[8], entry[8], dom[8], nopt = 0, optm = 0;
        for (uint32_t k = 0; k < nsg; k++) {
            lvl[k] = 2 + rnd(2); /* rack or node */
            need[k] = 1 + rnd(4);
            entry[k] = rnd(3) ? 0 : UINT32_MAX;
            nopt += entry[k] == 0;
            optm += entry[k] == 0 ? need[k] : 0;
        }
        uint32_t emin[1] = {rnd(nopt + 1)};
        uint64_t omust = rnd(2) ? rnd(optm + 1) : 0;
        uint32_t *cp[1] = {count};
        struct tg_sgprob p = {&t, 1, cp, nsg, lvl, need, NULL, 0};
        p.entry = entry;
        p.nentry = 1;
        p.emin = emin;
        p.omust = omust;
        struct tg_arena a = {0};
        struct tg_sgwhy why;
        int got = tg_subgroup_solve(&p, gang, &a, dom, &why);
        int want = brute_opt(&t, count, nsg, lvl, need, entry, emin[0], (uint32_t)omust, gang);
        assert_int_equal(got, want);
        if (got == 1) {
            uint32_t n = 0, np = 0, members = 0, cneed[8], cdom[8];
            for (uint32_t k = 0; k < nsg; k++) {
                if (dom[k] == UINT32_MAX) {
                    assert_int_equal(entry[k], 0); /* only an optional one is left out */
                    left_out++;
                    continue;
                }
                np += entry[k] == 0;
                members += entry[k] == 0 ? need[k] : 0;
                assert_int_equal(t.dom[dom[k]].level, lvl[k]);
                cneed[n] = need[k];
                cdom[n++] = dom[k];
            }
            assert_true(np >= emin[0] && members >= omust);
            assert_true(valid(&t, count, n, cneed, cdom, gang));
        }
        feasible += want;
        tg_arena_free(&a);
        tg_tree_free(&t);
    }
    assert_true(feasible > 50 && feasible < 350); /* both outcomes exercised */
    assert_true(left_out > 0);
}

/* Sub-groups inside outer groups (KAI's constrained parents): 1-3 outer
 * groups at the rack level, 1-4 sub-groups at the node level, each in an
 * outer group or none. Brute force: every rack for each outer group, every
 * node for each sub-group inside its outer group's rack; the solver agrees,
 * and what it returns keeps each sub-group inside its outer group's domain. */
static int brute_nested(const struct tg_tree *t, const uint32_t *count, uint32_t nsg,
                        const uint32_t *lvl, const uint32_t *need, const uint32_t *outer,
                        uint32_t nouter, uint32_t gang, uint32_t *odom, uint32_t *dom, uint32_t j)
{
    if (j < nouter) {
        for (uint32_t i = 0; i < t->nbylevel[2]; i++) {
            odom[j] = t->bylevel[2][i];
            if (t->dom[odom[j]].nnodes &&
                brute_nested(t, count, nsg, lvl, need, outer, nouter, gang, odom, dom, j + 1))
                return 1;
        }
        return 0;
    }
    uint32_t k = j - nouter;
    if (k == nsg)
        return valid(t, count, nsg, need, dom, gang);
    for (uint32_t i = 0; i < t->nbylevel[lvl[k]]; i++) {
        uint32_t d = t->bylevel[lvl[k]][i];
        if (!t->dom[d].nnodes || (outer[k] != UINT32_MAX && tg_tree_ancestor(t, d, 2) != odom[outer[k]]))
            continue;
        dom[k] = d;
        if (brute_nested(t, count, nsg, lvl, need, outer, nouter, gang, odom, dom, j + 1))
            return 1;
    }
    return 0;
}

static void test_property_nested_vs_brute_force(void **state)
{
    (void)state;
    uint32_t keys[3] = {tg_intern("b"), tg_intern("r"), tg_intern("n")};
    int feasible = 0;
    for (int trial = 0; trial < 400; trial++) {
        struct tg_tree t;
        uint32_t count[256] = {0};
        random_tree(&t, keys, count);
        uint32_t gang = t.bylevel[1][0], nouter = 1 + rnd(3), olvl[4] = {2, 2, 2, 2};
        uint32_t nsg = 1 + rnd(4), lvl[8], need[8], outer[8], dom[8], bdom[8], odom[4], bodom[4];
        for (uint32_t k = 0; k < nsg; k++) {
            lvl[k] = 3;
            need[k] = 1 + rnd(4);
            outer[k] = rnd(nouter + 1);
            outer[k] = outer[k] == nouter ? UINT32_MAX : outer[k];
        }
        uint32_t *cp[1] = {count};
        struct tg_sgprob p = {&t, 1, cp, nsg, lvl, need, NULL, 0, NULL, nouter, outer, olvl, odom};
        struct tg_arena a = {0};
        struct tg_sgwhy why;
        int got = tg_subgroup_solve(&p, gang, &a, dom, &why);
        int want = brute_nested(&t, count, nsg, lvl, need, outer, nouter, gang, bodom, bdom, 0);
        assert_int_equal(got, want);
        if (got == 1) {
            assert_true(valid(&t, count, nsg, need, dom, gang));
            for (uint32_t k = 0; k < nsg; k++)
                if (outer[k] != UINT32_MAX)
                    assert_int_equal(tg_tree_ancestor(&t, dom[k], 2), odom[outer[k]]);
        }
        feasible += want;
        tg_arena_free(&a);
        tg_tree_free(&t);
    }
    assert_true(feasible > 50 && feasible < 350); /* both outcomes exercised */
}

/* End to end through `simulate` (counting, search and fill): random cliques
 * of 1-3 nodes with 0-4 GPUs in one block, 1-4 sub-groups of 1-4 one-GPU
 * pods each required in one clique: Scheduled exactly when some assignment
 * of sub-groups to cliques fits, and then every sub-group in one clique. */
static int fits_brute(const int *cap, int ncl, const int *need, int nsg, int k, int *used)
{
    if (k == nsg)
        return 1;
    for (int c = 0; c < ncl; c++)
        if (used[c] + need[k] <= cap[c]) {
            used[c] += need[k];
            int ok = fits_brute(cap, ncl, need, nsg, k + 1, used);
            used[c] -= need[k];
            if (ok)
                return 1;
        }
    return 0;
}

static void test_property_simulate(void **state)
{
    (void)state;
    int seen[2] = {0, 0};
    for (int trial = 0; trial < 200; trial++) {
        char *y = NULL;
        int ncl = 2 + (int)rnd(2), cap[3] = {0}, nsg = 1 + (int)rnd(4), need[4], used[3] = {0};
        for (int c = 0; c < ncl; c++) {
            int nn = 1 + (int)rnd(3);
            for (int i = 0; i < nn; i++) {
                char n[16], cl[8];
                int gpus = (int)rnd(5);
                snprintf(n, sizeof n, "c%d-n%d", c, i);
                snprintf(cl, sizeof cl, "c%d", c);
                node(&y, n, "b1", cl, gpus);
                cap[c] += gpus;
            }
        }
        char subs[1024] = "  subGroups:\n";
        int total = 0;
        for (int k = 0; k < nsg; k++) {
            char one[128];
            need[k] = 1 + (int)rnd(4);
            total += need[k];
            snprintf(one, sizeof one, "  - {name: s%d, minMember: %d, topology: {required: nvlink-domain}}\n",
                     k, need[k]);
            strcat(subs, one);
        }
        podgroup(&y, "g", total, subs);
        for (int k = 0; k < nsg; k++) {
            char p[8];
            snprintf(p, sizeof p, "s%d", k);
            sgpods(&y, p, "g", p, need[k], -1);
        }
        int want = fits_brute(cap, ncl, need, nsg, 0, used);
        cJSON *res = tu_simulate(POLICY, y);
        const char *st = tu_str(tu_gang(res, "ml/g"), "status");
        assert_string_equal(st, want ? "Scheduled" : "Unschedulable");
        char cl[16];
        for (int k = 0; want && k < nsg; k++) {
            char p[8];
            snprintf(p, sizeof p, "s%d", k);
            assert_one_clique(res, p, need[k], cl);
        }
        seen[want]++;
        cJSON_Delete(res);
        free(y);
    }
    assert_true(seen[0] > 20 && seen[1] > 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joint_where_greedy_fails),
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_reason_without_gang_level),
        cmocka_unit_test(test_gang_level_holds),
        cmocka_unit_test(test_min_member_and_bad_label),
        cmocka_unit_test(test_size_by_rank),
        cmocka_unit_test(test_alike_pack_best_fit),
        cmocka_unit_test(test_gang_level_subgroups_pack_as_one),
        cmocka_unit_test(test_search_packs_as_plain),
        cmocka_unit_test(test_kai_subgroups),
        cmocka_unit_test(test_volcano_subgroup_policy),
        cmocka_unit_test(test_kai_nested_parent_topology),
        cmocka_unit_test(test_preemption_honours_subgroups),
        cmocka_unit_test(test_jobset_child_jobs),
        cmocka_unit_test(test_jobset_joint_and_bad_level),
        cmocka_unit_test(test_lws_whole_gang),
        cmocka_unit_test(test_lws_group_exclusive),
        cmocka_unit_test(test_volcano_min_subgroups),
        cmocka_unit_test(test_volcano_min_subgroups_searched),
        cmocka_unit_test(test_lws_whole_with_subgroups),
        cmocka_unit_test(test_lws_subgroup_policy),
        cmocka_unit_test(test_lws_subgroup_leader_excluded),
        cmocka_unit_test(test_lws_subgroup_bad),
        cmocka_unit_test(test_property_vs_brute_force),
        cmocka_unit_test(test_property_optional_vs_brute_force),
        cmocka_unit_test(test_property_nested_vs_brute_force),
        cmocka_unit_test(test_property_simulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
