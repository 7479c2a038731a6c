/* Property tests: random small clusters, placements checked against a
 * brute-force model kept by the test itself (not the scheduler's):
 *  - no node is over-committed;
 *  - all or nothing: a gang is placed whole or not at all;
 *  - every member sits in one domain of the required level;
 *  - an Unschedulable single-shape gang has no domain of its required level
 *    that could hold it, and a schedulable one is never refused;
 *  - pack keeps the gang inside one preferred-level domain whenever one can
 *    hold it. Seeded, so a failure replays. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n";

enum { MAXN = 24 };

struct mnode {
    int zone, rack, gpus, used, tainted;
    char name[16];
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int rnd(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

/* domain id of node i at level (1 zone, 2 rack, 3 node; 0 the cluster) */
static int dom(const struct mnode *m, int i, int level)
{
    return level == 0 ? 0 : level == 1 ? m[i].zone : level == 2 ? m[i].zone * 10 + m[i].rack : 1000 + i;
}

static int capacity(const struct mnode *m, int nn, int level, int d, int g)
{
    int c = 0;
    for (int i = 0; i < nn; i++)
        if (dom(m, i, level) == d && !m[i].tainted)
            c += (m[i].gpus - m[i].used) / g;
    return c;
}

static int any_domain_holds(const struct mnode *m, int nn, int level, int n, int g)
{
    for (int i = 0; i < nn; i++)
        if (capacity(m, nn, level, dom(m, i, level), g) >= n)
            return 1;
    return 0;
}

static int node_index(const struct mnode *m, int nn, const char *name)
{
    for (int i = 0; i < nn; i++)
        if (!strcmp(m[i].name, name))
            return i;
    return -1;
}

static void trial(int t, int ngangs)
{
    struct mnode m[MAXN];
    int nn = 0;
    char *y = NULL;
    int nz = 1 + rnd(2);
    for (int z = 0; z < nz; z++) {
        int nr = 1 + rnd(3);
        for (int r = 0; r < nr; r++) {
            int k = 1 + rnd(4);
            for (int i = 0; i < k && nn < MAXN; i++) {
                struct mnode *x = &m[nn];
                x->zone = z;
                x->rack = r;
                x->gpus = (int[]){0, 2, 4, 8, 8}[rnd(5)];
                x->used = x->gpus ? rnd(x->gpus + 1) : 0;
                x->tainted = rnd(8) == 0;
                snprintf(x->name, sizeof x->name, "n%d", nn);
                char zone[8], rack[8];
                snprintf(zone, sizeof zone, "z%d", z);
                snprintf(rack, sizeof rack, "r%d", r);
                tu_node(&y, x->name, zone, rack, x->gpus,
                        x->tainted ? "taints: [{key: bad, effect: NoSchedule}]" : NULL);
                if (x->used)
                    tu_cat(&y, "---\nkind: Pod\nmetadata: {name: used-%d, namespace: other}\n"
                               "spec: {nodeName: %s, containers: [{resources: {requests: {nvidia.com/gpu: %d}}}]}\n",
                           nn, x->name, x->used);
                nn++;
            }
        }
    }
    static const char *const lvname[] = {NULL, "zone", "rack", "node"};
    int gn[4], gg[4], greq[4], gpref[4];
    for (int k = 0; k < ngangs; k++) {
        gn[k] = 1 + rnd(8);
        gg[k] = (int[]){1, 2, 4, 8}[rnd(4)];
        greq[k] = rnd(3);                       /* cluster, zone, rack */
        gpref[k] = greq[k] + rnd(4 - greq[k]);  /* up to node */
        char topo[96] = "";
        if (greq[k])
            snprintf(topo, sizeof topo, ", topology: {required: %s, preferred: %s}", lvname[greq[k]],
                     lvname[gpref[k] ? gpref[k] : 1]);
        else if (gpref[k])
            snprintf(topo, sizeof topo, ", topology: {preferred: %s}", lvname[gpref[k]]);
        else
            gpref[k] = 2; /* policy default: rack */
        if (greq[k] && !gpref[k])
            gpref[k] = 1;
        /* creation order fixes the queue order: gang 0 first */
        tu_cat(&y, "---\nkind: PodGroup\napiVersion: topogang.io/v1alpha1\n"
                   "metadata: {name: g%d, namespace: ml, creationTimestamp: '2026-01-0%dT00:00:00Z'}\n"
                   "spec: {minMember: %d%s}\n", k, k + 1, gn[k], topo);
        for (int i = 0; i < gn[k]; i++) {
            char name[32], grp[8], req[48];
            snprintf(name, sizeof name, "g%d-%d", k, i);
            snprintf(grp, sizeof grp, "g%d", k);
            snprintf(req, sizeof req, "nvidia.com/gpu: %d", gg[k]);
            tu_pod(&y, name, grp, req, NULL);
        }
    }
    cJSON *res = tu_simulate(POLICY, y);
    for (int k = 0; k < ngangs; k++) {
        char key[16];
        snprintf(key, sizeof key, "ml/g%d", k);
        const cJSON *g = tu_gang(res, key);
        assert_non_null(g);
        int scheduled = !strcmp(tu_str(g, "status"), "Scheduled");
        /* brute force on the state this gang saw (earlier gangs applied below) */
        int feasible = any_domain_holds(m, nn, greq[k], gn[k], gg[k]);
        int pref_ok = any_domain_holds(m, nn, gpref[k], gn[k], gg[k]);
        if (scheduled != feasible)
            print_error("trial %d gang %d: scheduled=%d but brute force says feasible=%d\n%s\n", t,
                        k, scheduled, feasible, y);
        assert_int_equal(scheduled, feasible);
        int placed = 0, first = -1, same_req = 1, same_pref = 1;
        for (int i = 0; i < gn[k]; i++) {
            char pod[32];
            snprintf(pod, sizeof pod, "ml/g%d-%d", k, i);
            const char *node = tu_node_of(res, pod);
            if (!node)
                continue;
            int idx = node_index(m, nn, node);
            assert_true(idx >= 0);
            placed++;
            m[idx].used += gg[k];
            assert_true(m[idx].used <= m[idx].gpus); /* never over-committed */
            assert_false(m[idx].tainted);
            if (first < 0)
                first = idx;
            same_req &= dom(m, idx, greq[k]) == dom(m, first, greq[k]);
            same_pref &= dom(m, idx, gpref[k]) == dom(m, first, gpref[k]);
        }
        assert_int_equal(placed, scheduled ? gn[k] : 0); /* all or nothing */
        if (scheduled) {
            assert_true(same_req);
            if (pref_ok && !same_pref)
                print_error("trial %d gang %d: a %s could hold it but it was split\n%s\n", t, k,
                            lvname[gpref[k]], y);
            if (pref_ok)
                assert_true(same_pref);
        }
    }
    cJSON_Delete(res);
    free(y);
}

/* ---- heterogeneous gangs ---------------------------------------------------------
 * 2-4 pod sets that differ in where they may go (a nodeSelector on a node
 * kind, a toleration of the GPU taint: nested and crossing eligibilities)
 * and, in half the trials, in how many GPUs each member asks. The checker
 * decides by backtracking whether every member fits inside one domain. */

struct hnode {
    int zone, rack, gpus, used, kind, tainted;
};

struct hset {
    int n, gpus, kind, tolerates; /* kind -1: any */
};

static int eligible(const struct hnode *m, const struct hset *s)
{
    return (s->kind < 0 || m->kind == s->kind) && (!m->tainted || s->tolerates);
}

/* Members of sets [si..] from member mi on, each set's members on
 * non-decreasing node positions (they are interchangeable). */
static int assign(struct hnode *m, const int *nodes, int nn, const struct hset *s, int ns, int si,
                  int mi, int from)
{
    if (si == ns)
        return 1;
    if (mi == s[si].n)
        return assign(m, nodes, nn, s, ns, si + 1, 0, 0);
    for (int k = from; k < nn; k++) {
        struct hnode *x = &m[nodes[k]];
        if (!eligible(x, &s[si]) || x->gpus - x->used < s[si].gpus)
            continue;
        x->used += s[si].gpus;
        int ok = assign(m, nodes, nn, s, ns, si, mi + 1, k);
        x->used -= s[si].gpus;
        if (ok)
            return 1;
    }
    return 0;
}

static int hdom(const struct hnode *m, int i, int level)
{
    return level == 0 ? 0 : level == 1 ? m[i].zone : level == 2 ? m[i].zone * 10 + m[i].rack : 1000 + i;
}

static int hfeasible(struct hnode *m, int nn, int level, const struct hset *s, int ns)
{
    for (int i = 0; i < nn; i++) {
        int nodes[MAXN], k = 0, d = hdom(m, i, level);
        int first = 1;
        for (int j = 0; j < i; j++)
            if (hdom(m, j, level) == d)
                first = 0;
        if (!first)
            continue;
        for (int j = 0; j < nn; j++)
            if (hdom(m, j, level) == d)
                nodes[k++] = j;
        if (assign(m, nodes, k, s, ns, 0, 0, 0))
            return 1;
    }
    return 0;
}

static int hetero_wrong;

static void hetero_trial(int t)
{
    struct hnode m[MAXN];
    int nn = 0;
    char *y = NULL;
    int nz = 1 + rnd(2);
    for (int z = 0; z < nz; z++) {
        int nr = 1 + rnd(2);
        for (int r = 0; r < nr; r++) {
            int k = 1 + rnd(6);
            for (int i = 0; i < k && nn < 12; i++) {
                struct hnode *x = &m[nn];
                x->zone = z;
                x->rack = r;
                x->gpus = (int[]){2, 4, 8, 8}[rnd(4)];
                x->used = rnd(3) == 0 ? rnd(x->gpus + 1) : 0;
                x->kind = rnd(2);
                x->tainted = rnd(3) == 0;
                char name[16], zone[8], rack[8], extra[160];
                snprintf(name, sizeof name, "n%d", nn);
                snprintf(zone, sizeof zone, "z%d", z);
                snprintf(rack, sizeof rack, "r%d", r);
                tu_cat(&y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n"
                           "    kubernetes.io/hostname: %s\n    topology.kubernetes.io/zone: %s\n"
                           "    topogang.io/rack: %s\n    kind: k%d\n", name, name, zone, rack, x->kind);
                snprintf(extra, sizeof extra, "%s", x->tainted ? "taints: [{key: nvidia.com/gpu, effect: NoSchedule}]" : "");
                tu_cat(&y, "spec: {%s}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
                           "nvidia.com/gpu: \"%d\"}\n", extra, x->gpus);
                if (x->used)
                    tu_cat(&y, "---\nkind: Pod\nmetadata: {name: used-%d, namespace: other}\n"
                               "spec: {nodeName: %s, containers: [{resources: {requests: {nvidia.com/gpu: %d}}}]}\n",
                           nn, name, x->used);
                nn++;
            }
        }
    }
    struct hset s[4];
    int ns = 2 + rnd(3), equal = rnd(2), total = 0, g0 = (int[]){2, 4, 8, 8}[rnd(4)];
    int dominant = rnd(2); /* a big set that may go anywhere, beside constrained ones */
    for (int i = 0; i < ns; i++) {
        s[i].n = 1 + rnd(dominant && i == 0 ? 7 : 4);
        s[i].gpus = equal ? g0 : (int[]){2, 4, 8, 8}[rnd(4)];
        s[i].kind = dominant && i == 0 ? -1 : rnd(3) - 1;
        s[i].tolerates = dominant && i == 0 ? 1 : rnd(2);
        total += s[i].n;
    }
    int req = rnd(3), pref = req + rnd(4 - req);
    static const char *const lvname[] = {NULL, "zone", "rack", "node"};
    char topo[96] = "";
    if (req)
        snprintf(topo, sizeof topo, ", topology: {required: %s, preferred: %s}", lvname[req],
                 lvname[pref ? pref : 1]);
    else if (pref)
        snprintf(topo, sizeof topo, ", topology: {preferred: %s}", lvname[pref]);
    if (!req && !pref)
        pref = 2; /* the policy's defaultPreferred: rack */
    tu_cat(&y, "---\nkind: PodGroup\napiVersion: topogang.io/v1alpha1\n"
               "metadata: {name: h, namespace: ml}\nspec: {minMember: %d%s}\n", total, topo);
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < s[i].n; j++) {
            char name[16], req2[48], spec[256] = "";
            snprintf(name, sizeof name, "h-%d-%d", i, j);
            snprintf(req2, sizeof req2, "nvidia.com/gpu: %d", s[i].gpus);
            if (s[i].kind >= 0)
                snprintf(spec, sizeof spec, "  nodeSelector: {kind: k%d}\n", s[i].kind);
            if (s[i].tolerates)
                snprintf(spec + strlen(spec), sizeof spec - strlen(spec),
                         "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n");
            tu_pod(&y, name, "h", req2, spec);
        }
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/h");
    int scheduled = !strcmp(tu_str(g, "status"), "Scheduled");
    int feasible = hfeasible(m, nn, req, s, ns);
    int pref_ok = hfeasible(m, nn, pref, s, ns);
    if (scheduled != feasible) {
        hetero_wrong++;
        print_error("hetero trial %d: scheduled=%d, brute force feasible=%d (%s)\n%s\n", t,
                    scheduled, feasible, tu_str(g, "reason"), y);
    }
    if (scheduled != feasible) {
        cJSON_Delete(res);
        free(y);
        return;
    }
    if (scheduled) {
        int first = -1, same_req = 1, same_pref = 1;
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < s[i].n; j++) {
                char pod[32];
                snprintf(pod, sizeof pod, "ml/h-%d-%d", i, j);
                const char *node = tu_node_of(res, pod);
                assert_non_null(node);
                int idx = atoi(node + 1);
                assert_true(eligible(&m[idx], &s[i]));
                m[idx].used += s[i].gpus;
                assert_true(m[idx].used <= m[idx].gpus);
                if (first < 0)
                    first = idx;
                same_req &= hdom(m, idx, req) == hdom(m, first, req);
                same_pref &= hdom(m, idx, pref) == hdom(m, first, pref);
            }
        assert_true(same_req);
        if (pref_ok && !same_pref)
            print_error("hetero trial %d: a %s could hold it but it was split\n%s\n", t,
                        lvname[pref], y);
        if (pref_ok)
            assert_true(same_pref);
    }
    cJSON_Delete(res);
    free(y);
}

static void test_heterogeneous(void **state)
{
    (void)state;
    for (int t = 0; t < 3000; t++)
        hetero_trial(t);
    assert_int_equal(hetero_wrong, 0);
}

static void test_single_gang(void **state)
{
    (void)state;
    for (int t = 0; t < 300; t++)
        trial(t, 1);
}

static void test_gang_sequences(void **state)
{
    (void)state;
    for (int t = 0; t < 200; t++)
        trial(t, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_gang),
        cmocka_unit_test(test_gang_sequences),
        cmocka_unit_test(test_heterogeneous),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
