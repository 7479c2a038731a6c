/* `simulate --replay` (scheduler/sim/replay.h) and the engine under it on a
 * virtual clock:
 *   - the core: a Terminating member is not a placed member of its gang
 *     (its recreated copies are placed as a whole gang, not anchored next
 *     to the pods that are leaving);
 */
#include "testutil.h"
#include "config/policy.h"
#include "scheduler/engine.h"
#include "scheduler/sim/load.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t clock_ms;
static int64_t test_clock(void *ud)
{
    (void)ud;
    return clock_ms;
}

static const char *RACKS =
    "topology:\n  levels:\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
    "placement: {defaultPreferred: rack}\n";

static void policy_of(const char *yaml, struct tg_policy *p)
{
    struct tg_sb err = {0};
    tg_policy_default(p);
    if (yaml && tg_policy_parse(yaml, strlen(yaml), "policy", p, &err)) {
        fprintf(stderr, "policy: %s\n", tg_sb_str(&err));
        fail();
    }
    tg_sb_free(&err);
}

static struct tg_pod *pod_of(struct tg_simdata *d, const char *key)
{
    for (uint32_t i = 0; i < d->npods; i++)
        if (!strcmp(d->pods[i].pod->key, key))
            return d->pods[i].pod;
    fail_msg("no pod %s", key);
    return NULL;
}

/* Gang ml/v (2 x 8 GPUs) runs on rack r0; it is preempted: its pods are
 * Terminating (they still hold r0) and its controller has created new pods
 * at once. The new pods form the whole gang again: both are placed, in rack
 * r1, never anchored to the leaving ones. */
static void terminating_members_are_not_placed(void **state)
{
    (void)state;
    char *y = NULL;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 2; i++) {
            char n[16], rk[8];
            snprintf(n, sizeof n, "r%d-n%d", r, i);
            snprintf(rk, sizeof rk, "r%d", r);
            tu_node(&y, n, "", rk, 8, NULL);
        }
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
               "metadata: {name: v, namespace: ml}\nspec: {minMember: 2, topology: {required: rack}}\n");
    for (int i = 0; i < 2; i++) {
        char name[32], spec[64];
        snprintf(name, sizeof name, "v-%d", i);
        snprintf(spec, sizeof spec, "  nodeName: r0-n%d\n", i);
        tu_pod(&y, name, "v", "nvidia.com/gpu: 8", spec);
        snprintf(name, sizeof name, "v-%d-r1", i);
        tu_pod(&y, name, "v", "nvidia.com/gpu: 8", NULL);
    }
    struct tg_simdata d;
    struct tg_sb err = {0};
    tg_simdata_init(&d);
    d.quiet = 1;
    assert_int_equal(tg_simdata_load_string(&d, y, strlen(y), "t.yaml", &err), 0);
    struct tg_policy pol;
    policy_of(RACKS, &pol);
    struct tg_engine e;
    struct tg_clock clk = {test_clock, NULL};
    clock_ms = 1000000;
    assert_int_equal(tg_engine_init(&e, &pol, &clk), 0);
    for (uint32_t i = 0; i < d.nnodes; i++)
        assert_int_equal(tg_engine_node_set(&e, tg_node_clone(d.nodes[i])), 0);
    tg_engine_podgroup_set(&e, d.pgs[0]);
    struct tg_pod *old[2] = {pod_of(&d, "ml/v-0"), pod_of(&d, "ml/v-1")};
    for (int i = 0; i < 2; i++)
        assert_int_equal(tg_engine_bound_set(&e, old[i]), 0);
    struct tg_grec *g = tg_gangs_get(&e.gangs, "ml/v");
    assert_non_null(g);
    assert_int_equal(g->nmembers, 2);
    /* preempted: Terminating, and recreated */
    for (int i = 0; i < 2; i++) {
        old[i]->deleting = 1;
        assert_int_equal(tg_engine_bound_set(&e, old[i]), 0);
    }
    assert_non_null(tg_cluster_usage(&e.sched.cluster, "ml/v-0")); /* still holds r0 */
    assert_int_equal(tg_engine_pending_set(&e, pod_of(&d, "ml/v-0-r1")), 0);
    assert_int_equal(tg_engine_pending_set(&e, pod_of(&d, "ml/v-1-r1")), 0);
    g = tg_gangs_get(&e.gangs, "ml/v");
    assert_int_equal(g->nmembers, 0);
    struct tg_decision dc;
    assert_int_equal(tg_engine_next(&e, &dc), 0);
    assert_int_equal(dc.kind, TG_D_PLACE);
    assert_int_equal(dc.view.nbound, 0);
    assert_int_equal(dc.must, 2);
    assert_int_equal(dc.result.nplaced, 2);
    for (uint32_t i = 0; i < dc.view.npods; i++) {
        const char *node = tg_str(e.sched.cluster.nodes[dc.result.slot[i]].name);
        assert_true(!strncmp(node, "r1-", 3));
    }
    tg_decision_free(&dc);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    tg_sb_free(&err);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(terminating_members_are_not_placed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
