/* Rank order (issue 20, scheduler/rank.h):
 *  - each rank source decoded from a Pod (topogang.io/rank, Job completion
 *    index as label or annotation, JobSet job index + completion index, LWS
 *    worker index, Kubeflow replica type + index), and a bad value warned
 *    about with the pod and the field;
 *  - layout on a small tree: ranks given in shuffled order land four per
 *    node, nodes in topology order, and `simulate -o json` reports each
 *    pod's rank and the crossings per level;
 *  - property (seeded, replays): on random clusters with labels missing at
 *    random, a homogeneous gang's crossings at every level equal the lower
 *    bound for the nodes chosen (its domains there, less one), packed or
 *    spread (spread deals members out round-robin: the layout regroups them), and rank
 *    order never changes whether or where a gang fits: the same gang without
 *    ranks is placed on the same nodes, heterogeneous gangs included;
 *  - sub-groups: alike sub-groups take their domains in topology order,
 *    lowest-ranked first, and ranks inside each in topology order (a ring of
 *    four rack-sized sub-groups over two zones crosses zones once, not
 *    three times), and dealt out grouped by the levels between (two
 *    node-sized sub-groups in a zone share a rack); property (seeded): for homogeneous sub-groups
 *    (spec.subGroupSize) the crossings at every level equal the lower bound
 *    for the nodes chosen, every sub-group stays inside one domain of its
 *    level, and the nodes chosen are those of the same gang whose
 *    sub-groups are given by label without ranks. */
#include "testutil.h"
#include "model/objects.h"
#include "model/workload.h"
#include "scheduler/cycle.h"
#include "scheduler/rank.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding ------------------------------------------------------------- */

static int nwarn;
static char lastfield[256];
static void on_diag(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                    const char *msg)
{
    (void)ud, (void)is_error, (void)at, (void)what, (void)msg;
    nwarn++;
    snprintf(lastfield, sizeof lastfield, "%s", field);
}

/* The pod's rank key (major << 32 | minor), or -1 for none. */
static long long rank_of(const char *labels, const char *annotations)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\","
             "\"labels\":{%s},\"annotations\":{%s}},\"spec\":{\"schedulerName\":\"topogang\","
             "\"containers\":[{\"name\":\"c\"}]}}",
             labels, annotations);
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    struct tg_diag d = {.report = on_diag};
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(o, 0, &d, &p), 0);
    long long r = p->rank ? (long long)(p->rank - 1) : -1;
    tg_pod_free(&p);
    cJSON_Delete(o);
    return r;
}

#define KEY(major, minor) ((long long)(major) << 32 | (minor))

static void test_decode_sources(void **st)
{
    (void)st;
    nwarn = 0;
    assert_int_equal(rank_of("\"topogang.io/rank\":\"5\"", ""), 5);
    assert_int_equal(rank_of("", "\"batch.kubernetes.io/job-completion-index\":\"3\""), 3);
    assert_int_equal(rank_of("\"batch.kubernetes.io/job-completion-index\":\"7\"", ""), 7);
    /* ours first */
    assert_int_equal(rank_of("\"topogang.io/rank\":\"1\",\"batch.kubernetes.io/job-completion-index\":\"7\"", ""), 1);
    /* JobSet: the job's global index, then the completion index */
    assert_int_equal(rank_of("\"jobset.sigs.k8s.io/job-global-index\":\"2\",\"jobset.sigs.k8s.io/job-index\":\"0\","
                             "\"batch.kubernetes.io/job-completion-index\":\"1\"", ""), KEY(2, 1));
    assert_int_equal(rank_of("\"jobset.sigs.k8s.io/job-index\":\"4\"",
                             "\"batch.kubernetes.io/job-completion-index\":\"6\""), KEY(4, 6));
    /* LWS: the worker index (the leader is 0) */
    assert_int_equal(rank_of("\"leaderworkerset.sigs.k8s.io/worker-index\":\"3\","
                             "\"leaderworkerset.sigs.k8s.io/group-index\":\"1\"", ""), 3);
    /* Kubeflow: master/launcher before workers; a parameter server has none */
    assert_int_equal(rank_of("\"training.kubeflow.org/replica-type\":\"master\","
                             "\"training.kubeflow.org/replica-index\":\"0\"", ""), KEY(0, 0));
    assert_int_equal(rank_of("\"training.kubeflow.org/replica-type\":\"worker\","
                             "\"training.kubeflow.org/replica-index\":\"2\"", ""), KEY(1, 2));
    assert_int_equal(rank_of("\"training.kubeflow.org/replica-type\":\"Worker\","
                             "\"training.kubeflow.org/replica-index\":\"0\"", ""), KEY(1, 0));
    assert_int_equal(rank_of("\"training.kubeflow.org/replica-type\":\"launcher\","
                             "\"training.kubeflow.org/replica-index\":\"0\"", ""), KEY(0, 0));
    assert_int_equal(rank_of("\"training.kubeflow.org/replica-type\":\"ps\","
                             "\"training.kubeflow.org/replica-index\":\"0\"", ""), -1);
    assert_int_equal(rank_of("\"app\":\"x\"", ""), -1);
    assert_int_equal(nwarn, 0);
}

static void test_decode_bad(void **st)
{
    (void)st;
    static const char *const bad[] = {"x", "-1", "2147483648", "1.5", " 3", "+3", "07x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char l[128];
        snprintf(l, sizeof l, "\"topogang.io/rank\":\"%s\"", bad[i]);
        nwarn = 0;
        assert_int_equal(rank_of(l, ""), -1);
        if (nwarn != 1)
            fail_msg("rank \"%s\": %d warnings", bad[i], nwarn);
        assert_string_equal(lastfield, "metadata.labels[topogang.io/rank]");
    }
    nwarn = 0;
    assert_int_equal(rank_of("", "\"batch.kubernetes.io/job-completion-index\":\"two\""), -1);
    assert_int_equal(nwarn, 1);
    assert_string_equal(lastfield, "metadata.annotations[batch.kubernetes.io/job-completion-index]");
    assert_int_equal(rank_of("\"topogang.io/rank\":\"2147483647\"", ""), 2147483647);
}

/* ---- layout on a small tree ---------------------------------------------- */

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n";

static void pod_ranked(char **y, const char *name, const char *group, int gpus, const char *rank_labels)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
              "  labels: {topogang.io/pod-group: %s%s%s}\nspec:\n  schedulerName: topogang\n"
              "  containers:\n  - name: c\n    resources: {requests: {nvidia.com/gpu: \"%d\"}}\n",
           name, group, rank_labels && *rank_labels ? ", " : "", rank_labels ? rank_labels : "",
           gpus);
}

static void podgroup_as(char **y, const char *name, int min, const char *required, int spread)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: ml}\n"
              "spec:\n  minMember: %d\n  topology: {strategy: %s%s%s}\n", name, min,
           spread ? "spread" : "pack", required ? ", required: " : "", required ? required : "");
}

static void podgroup(char **y, const char *name, int min, const char *required)
{
    podgroup_as(y, name, min, required, 0);
}

static int json_int(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsNumber(v));
    return v->valueint;
}

static void test_layout_small_tree(void **st)
{
    (void)st;
    char *y = NULL;
    /* two racks of two 8-GPU nodes; 16 ranks x 2 GPUs fill them all */
    tu_node(&y, "n1", "z1", "ra", 8, NULL);
    tu_node(&y, "n2", "z1", "rb", 8, NULL);
    tu_node(&y, "n3", "z1", "ra", 8, NULL);
    tu_node(&y, "n4", "z1", "rb", 8, NULL);
    podgroup(&y, "job", 16, NULL);
    static const int order[16] = {9, 3, 14, 0, 7, 12, 5, 1, 15, 10, 2, 8, 13, 6, 11, 4};
    for (int i = 0; i < 16; i++) {
        char name[16], l[64];
        snprintf(name, sizeof name, "w-%c", 'a' + i);
        snprintf(l, sizeof l, "topogang.io/rank: \"%d\"", order[i]);
        pod_ranked(&y, name, "job", 2, l);
    }
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/job");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    /* rank r on the (r / 4)th node in topology order: n1 n3 (rack ra) then n2 n4 */
    static const char *const want[4] = {"n1", "n3", "n2", "n4"};
    const cJSON *p;
    int seen = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods")) {
        const char *name = tu_str(p, "pod");
        int r = order[name[strlen(name) - 1] - 'a'];
        assert_int_equal(json_int(p, "rank"), r);
        assert_string_equal(tu_str(p, "node"), want[r / 4]);
        seen++;
    }
    assert_int_equal(seen, 16);
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(g, "rankCrossings");
    assert_int_equal(json_int(rc, "pairs"), 15);
    assert_int_equal(json_int(rc, "zone"), 0);
    assert_int_equal(json_int(rc, "rack"), 1);
    assert_int_equal(json_int(rc, "node"), 3);
    assert_null(cJSON_GetObjectItemCaseSensitive(rc, "cluster"));
    cJSON_Delete(res);
    free(y);
}

/* The layout itself, on the model: eight ranked members that placement
 * assumed round-robin over two racks of two nodes move, records and all,
 * to two per node in topology order (n1 n3 in rack ra, then n2 n4). */
static void test_layout_model(void **st)
{
    (void)st;
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "test", &pol, NULL), 0);
    struct tg_sched s;
    assert_int_equal(tg_sched_init(&s, &pol), 0);
    static const char *const names[4] = {"n1", "n2", "n3", "n4"}, *const racks[4] = {"ra", "rb", "ra", "rb"};
    uint32_t slot_of[4];
    for (int i = 0; i < 4; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":\"%s\","
                 "\"topology.kubernetes.io/zone\":\"z1\",\"topogang.io/rack\":\"%s\"}},\"status\":{\"allocatable\":"
                 "{\"cpu\":\"64\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"}}}",
                 names[i], names[i], racks[i]);
        cJSON *o = cJSON_Parse(json);
        struct tg_node_obj *n;
        assert_int_equal(tg_node_decode(o, NULL, &n), 0);
        assert_int_equal(tg_cluster_node_set(&s.cluster, n), 0);
        cJSON_Delete(o);
        slot_of[i] = tg_cluster_slot(&s.cluster, tg_intern(names[i]), 0);
    }
    struct tg_pod *pods[8];
    uint32_t mem[8], slot[8];
    static const int rr[8] = {1, 0, 3, 2, 0, 1, 2, 3}; /* as placed: n2 n1 n4 n3 n1 n2 n3 n4 */
    for (int i = 0; i < 8; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"w%d\",\"namespace\":\"ml\",\"labels\":"
                 "{\"topogang.io/rank\":\"%d\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
                 "{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}]}}", i, i);
        cJSON *o = cJSON_Parse(json);
        assert_int_equal(tg_pod_decode(o, 0, NULL, &pods[i]), 0);
        cJSON_Delete(o);
        mem[i] = (uint32_t)i;
        slot[i] = slot_of[rr[i]];
        assert_int_equal(tg_cluster_assume(&s.cluster, pods[i], slot[i]), 0);
    }
    struct tg_rank_report rep;
    assert_int_equal(tg_rank_report(&s.cluster, pods, slot, 8, &rep, NULL), 0);
    assert_int_equal(rep.cross[1], 6);  /* rack: all but n3-n1, as placed */
    assert_int_equal(tg_rank_sort(pods, mem, 8, &s.scratch), 0);
    assert_int_equal(tg_rank_layout(&s.cluster, pods, mem, 8, slot, &s.scratch), 0);
    static const int want[8] = {0, 0, 2, 2, 1, 1, 3, 3};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(slot[i], slot_of[want[i]]);
        const struct tg_usage *u = tg_cluster_usage(&s.cluster, pods[i]->key);
        assert_non_null(u);
        assert_int_equal(u->slot, slot[i]);
        assert_false(u->hidden);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s.cluster.nodes[slot_of[i]].npods, 2);
        int n = 0;
        for (const struct tg_usage *u = s.cluster.nodes[slot_of[i]].pods; u; u = u->nnext)
            n++;
        assert_int_equal(n, 2);
    }
    assert_int_equal(tg_rank_report(&s.cluster, pods, slot, 8, &rep, NULL), 0);
    assert_int_equal(rep.pairs, 7);
    assert_int_equal(rep.nlevels, 3);
    assert_int_equal(rep.cross[0], 0); /* zone */
    assert_int_equal(rep.cross[1], 1); /* rack */
    assert_int_equal(rep.cross[2], 3); /* node (the hostname level) */
    assert_int_equal(rep.cross[3], 3); /* two nodes */
    for (int i = 0; i < 8; i++)
        tg_pod_free(&pods[i]);
    tg_sched_free(&s);
}

/* A gang without ranks reports none; one with a rank on some members only
 * counts theirs. */
static void test_no_rank(void **st)
{
    (void)st;
    char *y = NULL;
    tu_node(&y, "n1", "z1", "ra", 8, NULL);
    podgroup(&y, "job", 2, NULL);
    pod_ranked(&y, "a", "job", 1, NULL);
    pod_ranked(&y, "b", "job", 1, NULL);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/job");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(g, "rankCrossings")));
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods"))
        assert_null(cJSON_GetObjectItemCaseSensitive(p, "rank"));
    cJSON_Delete(res);
    free(y);
}

/* An indexed Job's pods (completion index as the Job controller writes
 * it), created in reverse: index i on the (i / 2)th node. */
static void test_indexed_job(void **st)
{
    (void)st;
    char *y = NULL;
    for (int n = 1; n <= 4; n++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", n);
        tu_node(&y, name, "z1", n <= 2 ? "ra" : "rb", 8, NULL);
    }
    podgroup(&y, "train", 8, NULL);
    for (int i = 7; i >= 0; i--) {
        char name[16], l[96];
        snprintf(name, sizeof name, "train-%d", i);
        snprintf(l, sizeof l, "batch.kubernetes.io/job-completion-index: \"%d\"", i);
        pod_ranked(&y, name, "train", 4, l);
    }
    cJSON *res = tu_simulate(POLICY, y);
    for (int i = 0; i < 8; i++) {
        char name[16], want[8];
        snprintf(name, sizeof name, "ml/train-%d", i);
        snprintf(want, sizeof want, "n%d", i / 2 + 1);
        assert_string_equal(tu_node_of(res, name), want);
    }
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(tu_gang(res, "ml/train"), "rankCrossings");
    assert_int_equal(json_int(rc, "rack"), 1);
    assert_int_equal(json_int(rc, "node"), 3);
    cJSON_Delete(res);
    free(y);
}

/* ---- property --------------------------------------------------------------- */

static uint64_t rng = 0xD1B54A32D192ED03ull;
static int rnd(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

enum { MAXN = 16, MAXP = 40 };

struct mnode {
    char name[8];
    int zone, rack, has_zone, has_rack, free;
};

/* Node index of a pod's node in the result, -1 unplaced. */
static int node_idx(const struct mnode *m, int nn, const char *node)
{
    for (int i = 0; node && i < nn; i++)
        if (!strcmp(m[i].name, node))
            return i;
    return -1;
}

/* The lower bound at level 1 zone, 2 rack, 3 node: the domains the nodes
 * used form (a node lacking the level's label is one of its own), less one. */
static int bound(const struct mnode *m, const int *used, int nn, int level)
{
    int dom[MAXN], nd = 0;
    for (int i = 0; i < nn; i++) {
        if (!used[i])
            continue;
        int d = level == 3 ? 1000 + i
              : level == 1 ? (m[i].has_zone ? m[i].zone : 1000 + i)
              : (m[i].has_rack ? (m[i].has_zone ? m[i].zone : 9) * 100 + m[i].rack : 1000 + i);
        int k = 0;
        while (k < nd && dom[k] != d)
            k++;
        if (k == nd)
            dom[nd++] = d;
    }
    return nd ? nd - 1 : 0;
}

static void cluster_yaml(char **y, const struct mnode *m, int nn)
{
    for (int i = 0; i < nn; i++) {
        char z[8] = "", r[8] = "";
        if (m[i].has_zone)
            snprintf(z, sizeof z, "z%d", m[i].zone);
        if (m[i].has_rack)
            snprintf(r, sizeof r, "r%d", m[i].rack);
        tu_node(y, m[i].name, z, r, m[i].free, NULL);
    }
}

/* One gang of np pods (gpus[i] each) with ranks perm[i] (or none); returns
 * the result; nodes[i] receives pod i's node index or -1. */
static cJSON *run_gang(const struct mnode *m, int nn, int np, const int *gpus, const int *perm,
                       const char *required, int spread, int *nodes)
{
    char *y = NULL;
    cluster_yaml(&y, m, nn);
    podgroup_as(&y, "g", np, required, spread);
    for (int i = 0; i < np; i++) {
        char name[16], l[64];
        snprintf(name, sizeof name, "p%02d", i);
        /* sparse ranks (every 1000th) take the general sort, dense ones the direct one */
        snprintf(l, sizeof l, "topogang.io/rank: \"%d\"", perm ? perm[i] * (np % 2 ? 1000 : 1) : 0);
        pod_ranked(&y, name, "g", gpus[i], perm ? l : NULL);
    }
    cJSON *res = tu_simulate(POLICY, y);
    for (int i = 0; i < np; i++) {
        char name[16];
        snprintf(name, sizeof name, "ml/p%02d", i);
        nodes[i] = node_idx(m, nn, tu_node_of(res, name));
    }
    free(y);
    return res;
}

static int int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static void test_property(void **st)
{
    (void)st;
    static const char *const req[] = {NULL, "zone", "rack"};
    int checked = 0, homogeneous = 0;
    for (int round = 0; round < 150; round++) {
        struct mnode m[MAXN];
        int nn = 3 + rnd(MAXN - 2);
        for (int i = 0; i < nn; i++) {
            snprintf(m[i].name, sizeof m[i].name, "n%02d", i);
            m[i].zone = rnd(2);
            m[i].rack = rnd(3);
            m[i].has_zone = rnd(8) != 0;
            m[i].has_rack = rnd(6) != 0;
            m[i].free = rnd(9);
        }
        int np = 2 + rnd(MAXP - 1), hetero = rnd(3) == 0;
        int gpus[MAXP], perm[MAXP];
        for (int i = 0; i < np; i++) {
            gpus[i] = hetero && rnd(2) ? 3 : 1 + (round % 2);
            perm[i] = i;
        }
        for (int i = np - 1; i > 0; i--) {
            int j = rnd(i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        const char *required = req[rnd(3)];
        int with[MAXP], without[MAXP], spread = rnd(2);
        cJSON *a = run_gang(m, nn, np, gpus, perm, required, spread, with);
        cJSON *b = run_gang(m, nn, np, gpus, NULL, required, spread, without);
        const cJSON *ga = tu_gang(a, "ml/g"), *gb = tu_gang(b, "ml/g");
        /* feasibility and the nodes chosen: as without ranks */
        assert_string_equal(tu_str(ga, "status"), tu_str(gb, "status"));
        int sa[MAXP], sb[MAXP];
        for (int i = 0; i < np; i++)
            sa[i] = with[i] * 16 + gpus[i], sb[i] = without[i] * 16 + gpus[i];
        qsort(sa, np, sizeof *sa, int_cmp);
        qsort(sb, np, sizeof *sb, int_cmp);
        assert_memory_equal(sa, sb, np * sizeof *sa);
        if (strcmp(tu_str(ga, "status"), "Scheduled")) {
            cJSON_Delete(a), cJSON_Delete(b);
            continue;
        }
        /* nothing over-committed */
        int load[MAXN] = {0}, used[MAXN] = {0};
        for (int i = 0; i < np; i++) {
            assert_true(with[i] >= 0);
            load[with[i]] += gpus[i];
            used[with[i]] = 1;
        }
        for (int i = 0; i < nn; i++)
            assert_true(load[i] <= m[i].free);
        checked++;
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(ga, "rankCrossings");
        assert_int_equal(json_int(rc, "pairs"), np - 1);
        if (!hetero) {
            homogeneous++;
            static const char *const lv[] = {NULL, "zone", "rack", "node"};
            for (int l = 1; l <= 3; l++) {
                if (json_int(rc, lv[l]) != bound(m, used, nn, l))
                    fail_msg("round %d: %s crossings %d, lower bound %d", round, lv[l],
                             json_int(rc, lv[l]), bound(m, used, nn, l));
            }
            /* and each pod's reported rank is its label */
            const cJSON *p;
            cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(ga, "pods")) {
                const char *name = tu_str(p, "pod");
                assert_int_equal(json_int(p, "rank"), perm[atoi(name + 4)]);
            }
        }
        cJSON_Delete(a), cJSON_Delete(b);
    }
    /* the random clusters did exercise it */
    assert_true(checked >= 40);
    assert_true(homogeneous >= 25);
}

/* ---- sub-groups ------------------------------------------------------------ */

/* Ranked pods of gang g with 2 GPUs each, ranks perm[0..n-1]; with label_size,
 * no rank but the label topogang.io/sub-group: "s<rank / label_size>". */
static void sg_ranked(char **y, const char *g, int n, const int *perm, int gpus, int label_size)
{
    for (int i = 0; i < n; i++) {
        char name[16], l[96];
        snprintf(name, sizeof name, "p%02d", i);
        if (label_size)
            snprintf(l, sizeof l, "topogang.io/sub-group: s%d", perm[i] / label_size);
        else
            snprintf(l, sizeof l, "topogang.io/rank: \"%d\"", perm[i]);
        pod_ranked(y, name, g, gpus, l);
    }
}

/* Four rack-sized sub-groups (subGroupSize 8 x 2 GPUs, required rack) on two
 * zones of two racks of two 8-GPU nodes, the nodes listed zone by zone in
 * turn: the solver's domains, best fit with ties by the order racks were
 * seen (ra, rc, rb, rd), would put ranks 0-7 in z1, 8-15 in z2, 16-23 in z1
 * again. Laid out by rank: z1's racks take ranks 0-15, then z2's, one zone
 * crossing, and within each sub-group four consecutive ranks per node. */
static void test_subgroups_in_rank_order(void **st)
{
    (void)st;
    char *y = NULL;
    static const char *const zr[4][2] = {{"z1", "ra"}, {"z2", "rc"}, {"z1", "rb"}, {"z2", "rd"}};
    for (int i = 0; i < 8; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i + 1);
        tu_node(&y, name, zr[i % 4][0], zr[i % 4][1], 8, NULL);
    }
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
               "spec:\n  minMember: 32\n  subGroupSize: 8\n  subGroupTopology: {required: rack}\n");
    int perm[32];
    for (int i = 0; i < 32; i++)
        perm[i] = (i * 13 + 5) % 32; /* shuffled: 13 is prime to 32 */
    sg_ranked(&y, "g", 32, perm, 2, 0);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(g, "rankCrossings");
    assert_int_equal(json_int(rc, "pairs"), 31);
    assert_int_equal(json_int(rc, "zone"), 1);
    assert_int_equal(json_int(rc, "rack"), 3);
    assert_int_equal(json_int(rc, "node"), 7);
    /* ranks 0-15 in z1 (ra then rb), 16-31 in z2; each sub-group in one rack */
    const cJSON *p;
    const char *rack_of[4] = {0};
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods")) {
        int r = perm[atoi(tu_str(p, "pod") + 4)], n = atoi(tu_str(p, "node") + 1) - 1;
        assert_string_equal(zr[n % 4][0], r < 16 ? "z1" : "z2");
        if (!rack_of[r / 8])
            rack_of[r / 8] = zr[n % 4][1];
        assert_string_equal(rack_of[r / 8], zr[n % 4][1]);
        char want[2] = {(char)('0' + r / 8), 0};
        assert_string_equal(tu_str(p, "subGroup"), want);
    }
    /* the sub-groups report the racks they hold */
    const cJSON *sg = cJSON_GetObjectItemCaseSensitive(g, "subGroups");
    assert_int_equal(cJSON_GetArraySize(sg), 4);
    for (int k = 0; k < 4; k++) {
        const char *d = tu_str(cJSON_GetArrayItem(sg, k), "domain");
        assert_non_null(strstr(d, rack_of[k]));
    }
    cJSON_Delete(res);
    free(y);
}

/* Alike sub-groups are dealt out grouped by the levels between the gang's
 * and theirs: a gang held to zone z1 with two node-sized sub-groups, on four
 * empty nodes of z1 listed rack by rack in turn (n1 ra, n2 rb, n3 ra, n4
 * rb). Best fit alone, ties by the order seen, takes n1 and n2: two racks.
 * Grouped, both go to one rack: no rack crossing. */
static void test_subgroups_share_a_rack(void **st)
{
    (void)st;
    char *y = NULL;
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i + 1);
        tu_node(&y, name, "z1", i % 2 ? "rb" : "ra", 8, NULL);
    }
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
               "spec:\n  minMember: 8\n  topology: {required: zone, preferred: zone}\n"
               "  subGroupSize: 4\n  subGroupTopology: {required: node}\n");
    int perm[8];
    for (int i = 0; i < 8; i++)
        perm[i] = i;
    sg_ranked(&y, "g", 8, perm, 2, 0);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(g, "rankCrossings");
    assert_int_equal(json_int(rc, "rack"), 0);
    assert_int_equal(json_int(rc, "node"), 1);
    cJSON_Delete(res);
    free(y);
}

/* Domain of node i at level 1 zone, 2 rack (as bound() numbers them). */
static int dom_at(const struct mnode *m, int i, int level)
{
    return level == 1 ? (m[i].has_zone ? m[i].zone : 1000 + i)
                      : (m[i].has_rack ? (m[i].has_zone ? m[i].zone : 9) * 100 + m[i].rack : 1000 + i);
}

static cJSON *run_sg(const struct mnode *m, int nn, int np, int size, const int *perm, int gpus,
                     const char *sglevel, const char *required, int by_label, int *nodes)
{
    char *y = NULL;
    cluster_yaml(&y, m, nn);
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
               "spec:\n  minMember: %d\n", np);
    if (required)
        tu_cat(&y, "  topology: {required: %s}\n", required);
    if (by_label) {
        tu_cat(&y, "  subGroups:\n");
        for (int k = 0; k < np / size; k++)
            tu_cat(&y, "  - {name: s%d, minMember: %d, topology: {required: %s}}\n", k, size, sglevel);
    } else {
        tu_cat(&y, "  subGroupSize: %d\n  subGroupTopology: {required: %s}\n", size, sglevel);
    }
    sg_ranked(&y, "g", np, perm, gpus, by_label ? size : 0);
    cJSON *res = tu_simulate(POLICY, y);
    for (int i = 0; i < np; i++) {
        char name[16];
        snprintf(name, sizeof name, "ml/p%02d", i);
        nodes[i] = node_idx(m, nn, tu_node_of(res, name));
    }
    free(y);
    return res;
}

static void test_subgroup_property(void **st)
{
    (void)st;
    static const char *const req[] = {NULL, "zone"};
    static const char *const lv[] = {NULL, "zone", "rack", "node"};
    int checked = 0;
    for (int round = 0; round < 150; round++) {
        struct mnode m[MAXN];
        int nn = 3 + rnd(MAXN - 2);
        for (int i = 0; i < nn; i++) {
            snprintf(m[i].name, sizeof m[i].name, "n%02d", i);
            m[i].zone = rnd(2);
            m[i].rack = rnd(3);
            m[i].has_zone = rnd(8) != 0;
            m[i].has_rack = rnd(6) != 0;
            m[i].free = rnd(9);
        }
        int size = 2 + rnd(4), nsg = 1 + rnd(MAXP / size), np = size * nsg, gpus = 1 + round % 2;
        int sglevel = 1 + rnd(2), perm[MAXP];
        for (int i = 0; i < np; i++)
            perm[i] = i;
        for (int i = np - 1; i > 0; i--) {
            int j = rnd(i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        const char *required = sglevel == 2 ? req[rnd(2)] : NULL;
        int with[MAXP], without[MAXP];
        cJSON *a = run_sg(m, nn, np, size, perm, gpus, lv[sglevel], required, 0, with);
        cJSON *b = run_sg(m, nn, np, size, perm, gpus, lv[sglevel], required, 1, without);
        const cJSON *ga = tu_gang(a, "ml/g"), *gb = tu_gang(b, "ml/g");
        /* feasibility and the nodes chosen: as the same sub-groups without ranks */
        assert_string_equal(tu_str(ga, "status"), tu_str(gb, "status"));
        if (strcmp(tu_str(ga, "status"), "Scheduled")) {
            cJSON_Delete(a), cJSON_Delete(b);
            continue;
        }
        int sa[MAXP], sb[MAXP], used[MAXN] = {0}, load[MAXN] = {0};
        for (int i = 0; i < np; i++) {
            sa[i] = with[i], sb[i] = without[i];
            assert_true(with[i] >= 0);
            used[with[i]] = 1;
            load[with[i]] += gpus;
        }
        qsort(sa, np, sizeof *sa, int_cmp);
        qsort(sb, np, sizeof *sb, int_cmp);
        assert_memory_equal(sa, sb, np * sizeof *sa);
        for (int i = 0; i < nn; i++)
            assert_true(load[i] <= m[i].free);
        /* every sub-group inside one domain of its level */
        for (int i = 0; i < np; i++)
            for (int j = 0; j < np; j++)
                if (perm[i] / size == perm[j] / size)
                    assert_int_equal(dom_at(m, with[i], sglevel), dom_at(m, with[j], sglevel));
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(ga, "rankCrossings");
        assert_int_equal(json_int(rc, "pairs"), np - 1);
        for (int l = 1; l <= 3; l++)
            if (json_int(rc, lv[l]) != bound(m, used, nn, l))
                fail_msg("round %d: %d sub-groups of %d at %s: %s crossings %d, lower bound %d",
                         round, nsg, size, lv[sglevel], lv[l], json_int(rc, lv[l]),
                         bound(m, used, nn, l));
        checked++;
        cJSON_Delete(a), cJSON_Delete(b);
    }
    assert_true(checked >= 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_sources),
        cmocka_unit_test(test_decode_bad),
        cmocka_unit_test(test_layout_small_tree),
        cmocka_unit_test(test_layout_model),
        cmocka_unit_test(test_no_rank),
        cmocka_unit_test(test_indexed_job),
        cmocka_unit_test(test_property),
        cmocka_unit_test(test_subgroups_in_rank_order),
        cmocka_unit_test(test_subgroups_share_a_rack),
        cmocka_unit_test(test_subgroup_property),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
