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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
