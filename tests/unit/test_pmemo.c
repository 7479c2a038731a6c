/* The memo of failed preemption and reclaim plans (scheduler/pmemo.h),
 * through an engine the test drives:
 *   - a second gang of the same shape, priority and queue on an unchanged
 *     model gets the first one's verdict from the memo, with the same reason;
 *   - each kind of change a plan reads moves a generation, and the next plan
 *     is made again and finds the victims the change made: a PriorityClass's
 *     value (a placed gang's priority), a placed pod seen bound in place
 *     (assumed -> bound: the cluster's nmeta), the policy
 *     (preemption.evictBarePods), the Queue objects (reclaim's fair shares);
 *   - the memo keys on the model as a decision found it: a decision that put
 *     the cluster back passes it on, one that placed a gang does not;
 *   - the fair shares' generation moves with capacity, demand, allocation,
 *     usage and each recomputation; the engine's with pending pods, PDBs,
 *     namespaces and the rest;
 *   - the memo holds at most TG_PMEMO_CAP entries, the oldest going first,
 *     and drops those of older generations. */
#include "testutil.h"
#include "config/policy.h"
#include "scheduler/engine.h"
#include "scheduler/fairshare.h"
#include "scheduler/internal.h" /* the tests embed an engine and look inside */
#include "scheduler/pmemo.h"
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

static void pclasses(char **y)
{
    tu_cat(y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: hi}\nvalue: 1000\n"
              "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: mid}\nvalue: 100\n"
              "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: lo}\nvalue: 10\n");
}

/* A pod of class pclass asking 8 GPUs: bound to node (NULL: pending), a
 * Job's (owned != 0) or bare, in gang group (NULL: a gang of one), with the
 * queue label q (NULL: none). */
static void pod(char **y, const char *name, const char *group, const char *node, const char *pclass,
                int owned, const char *q)
{
    tu_cat(y, "---\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
              "  creationTimestamp: '2026-01-01T00:00:00Z'\n", name);
    if (group || q)
        tu_cat(y, "  labels: {%s%s%s%s%s}\n", group ? "topogang.io/pod-group: " : "", group ? group : "",
               group && q ? ", " : "", q ? "topogang.io/queue: " : "", q ? q : "");
    if (owned)
        tu_cat(y, "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j-%s, uid: u-%s, "
                  "controller: true}]\n", name, name);
    tu_cat(y, "spec:\n%s%s%s  schedulerName: topogang\n  priorityClassName: %s\n  containers:\n"
              "  - name: c\n    resources: {requests: {nvidia.com/gpu: 8}}\n%s",
           node ? "  nodeName: " : "", node ? node : "", node ? "\n" : "", pclass,
           node ? "status: {phase: Running}\n" : "");
}

/* A PodGroup of minMember min in rack (required), class pclass, queue q. */
static void group(char **y, const char *name, int min, const char *pclass, const char *q)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
              "metadata: {name: %s, namespace: ml, creationTimestamp: '2026-01-01T00:00:00Z'%s%s%s}\n"
              "spec: {minMember: %d, priorityClassName: %s, topology: {required: rack}}\n",
           name, q ? ", labels: {topogang.io/queue: " : "", q ? q : "", q ? "}" : "", min, pclass);
}

/* Two pending gangs ml/a and ml/b of the same shape: 2 pods of 8 GPUs in
 * one rack, class mid, queue q. */
static void two_gangs(char **y, const char *q)
{
    const char *g[2] = {"a", "b"};
    for (int k = 0; k < 2; k++) {
        group(y, g[k], 2, "mid", q);
        for (int i = 0; i < 2; i++) {
            char n[16];
            snprintf(n, sizeof n, "%s-%d", g[k], i);
            pod(y, n, g[k], NULL, "mid", 1, q);
        }
    }
}

static const struct tg_policy *policy(int evict_bare)
{
    static struct tg_policy pol;
    tg_policy_default(&pol);
    pol.evict_bare_pods = evict_bare;
    return &pol;
}

/* An engine holding d: nodes, classes, Queues, PodGroups, bound pods, then
 * the pending pods whose names start with pending_prefix ("" all, NULL none). */
static void engine(struct tg_engine *e, const struct tg_simdata *d, int evict_bare,
                   const char *pending_prefix)
{
    struct tg_clock clk = {test_clock, NULL};
    clock_ms = 1000000;
    assert_int_equal(tg_engine_init(e, policy(evict_bare), &clk), 0);
    for (uint32_t i = 0; i < d->nnodes; i++)
        assert_int_equal(tg_engine_node_set(e, tg_node_clone(d->nodes[i])), 0);
    for (uint32_t i = 0; i < d->npcs; i++)
        assert_int_equal(tg_engine_pclass_set(e, d->pcs[i].name, &d->pcs[i].pc), 0);
    if (d->nqueues)
        assert_int_equal(tg_engine_queues_set(e, (const struct tg_queue_obj *const *)d->queues,
                                              d->nqueues), 0);
    for (uint32_t i = 0; i < d->npgs; i++)
        tg_engine_podgroup_set(e, d->pgs[i]);
    for (uint32_t i = 0; i < d->npods; i++)
        if (d->pods[i].pod->node)
            assert_int_equal(tg_engine_bound_set(e, d->pods[i].pod), 0);
    for (uint32_t i = 0; pending_prefix && i < d->npods; i++)
        if (!d->pods[i].pod->node && !strncmp(d->pods[i].pod->key + 3, pending_prefix, strlen(pending_prefix)))
            assert_int_equal(tg_engine_pending_set(e, d->pods[i].pod), 0);
}

/* The next decision's kind; its reason into why (may be NULL). */
static int next(struct tg_engine *e, char *why, size_t n, char *gang, size_t gn)
    __attribute__((noinline));
static int next(struct tg_engine *e, char *why, size_t n, char *gang, size_t gn)
{
    struct tg_decision dc;
    assert_int_equal(tg_engine_next(e, &dc), 0);
    int k = dc.kind;
    if (why)
        snprintf(why, n, "%s", dc.reason);
    if (gang)
        snprintf(gang, gn, "%s", dc.gang ? dc.gang->key : "");
    tg_decision_free(&dc);
    return k;
}

/* What follows "; preemption" or "; reclaim" in a reason: the planners' part. */
static const char *planned(const char *why)
{
    const char *p = strstr(why, "; reclaim");
    if (!p)
        p = strstr(why, "; preemption");
    assert_non_null(p);
    return p;
}

/* a and b fail in turn on an unchanged model: b's plan comes from the memo
 * (one hit per planner asked), with a's reason. */
static void both_fail(struct tg_engine *e, uint64_t hits)
{
    char wa[4096], wb[4096], ga[600], gb[600];
    uint64_t h0 = e->pmemo.hits;
    assert_int_equal(next(e, wa, sizeof wa, ga, sizeof ga), TG_D_UNSCHEDULABLE);
    assert_int_equal(e->pmemo.hits, h0);
    assert_int_equal(next(e, wb, sizeof wb, gb, sizeof gb), TG_D_UNSCHEDULABLE);
    assert_string_not_equal(ga, gb);
    assert_int_equal(e->pmemo.hits, h0 + hits);
    assert_string_equal(planned(wa), planned(wb));
}

/* After a change: the next gang tried plans again (no hit) and preempts. */
static void plans_again(struct tg_engine *e)
{
    uint64_t h = e->pmemo.hits, m = e->pmemo.misses;
    clock_ms += 600000; /* past any backoff */
    tg_engine_wake(e);
    char why[4096];
    assert_int_equal(next(e, why, sizeof why, NULL, 0), TG_D_PREEMPT);
    assert_int_equal(e->pmemo.hits, h);
    assert_true(e->pmemo.misses > m);
}

/* Rack r0 of two 8-GPU nodes: ml/blk (class hi) on n1, ml/vic (lo) on n0;
 * a and b (mid) need both nodes: even with vic gone, no. Then class hi
 * drops to 50: blk's priority moves (a placed gang's, by a PriorityClass:
 * no node changed), and the plan finds both victims. */
static void pclass_change_plans_again(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node(&y, "r0-n0", "", "r0", 8, NULL);
    tu_node(&y, "r0-n1", "", "r0", 8, NULL);
    pclasses(&y);
    pod(&y, "blk", NULL, "r0-n1", "hi", 1, NULL);
    pod(&y, "vic", NULL, "r0-n0", "lo", 1, NULL);
    two_gangs(&y, NULL);
    struct tg_simdata d;
    tu_load(&d, y);
    struct tg_engine e;
    engine(&e, &d, 0, "");
    both_fail(&e, 1);
    uint64_t gen = e.gen[TG__GEN_GANGS];
    struct tg_pclass lower = {.value = 50};
    assert_int_equal(tg_engine_pclass_set(&e, tg_intern("hi"), &lower), 0);
    plans_again(&e);
    assert_true(e.gen[TG__GEN_GANGS] > gen);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    free(y);
}

/* The memo keys on the model as a decision found it: a decision that put
 * the cluster back passes its base on (b's plan hits although a's what-ifs
 * moved the change counter), one that changed it does not. ml/small (lo)
 * is placed in rack r1 after a and b failed in r0: a's next plan is made
 * again (a new base), b's then comes from the memo of that one. */
static void placed_gang_starts_a_new_base(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node(&y, "r0-n0", "", "r0", 8, NULL);
    tu_node(&y, "r0-n1", "", "r0", 8, NULL);
    tu_node(&y, "r1-n0", "", "r1", 8, NULL);
    pclasses(&y);
    pod(&y, "blk", NULL, "r0-n1", "hi", 1, NULL);
    pod(&y, "vic", NULL, "r0-n0", "lo", 1, NULL);
    two_gangs(&y, NULL);
    pod(&y, "small", NULL, NULL, "lo", 1, NULL);
    struct tg_simdata d;
    tu_load(&d, y);
    struct tg_engine e;
    engine(&e, &d, 0, "");
    uint64_t n0 = e.sched.cluster.nchanges;
    both_fail(&e, 1);
    assert_true(e.sched.cluster.nchanges > n0); /* the what-ifs moved the counter */
    assert_int_equal(e.memo_end, e.sched.cluster.nchanges);
    uint64_t base = e.memo_base;
    char g[64];
    assert_int_equal(next(&e, NULL, 0, g, sizeof g), TG_D_PLACE);
    assert_string_equal(g, "ml/small");
    assert_int_equal(e.memo_end, UINT64_MAX);
    clock_ms += 600000;
    tg_engine_wake(&e);
    uint64_t h = e.pmemo.hits, m = e.pmemo.misses;
    assert_int_equal(next(&e, NULL, 0, NULL, 0), TG_D_UNSCHEDULABLE);
    assert_true(e.memo_base != base);
    assert_int_equal(e.pmemo.hits, h);
    assert_int_equal(e.pmemo.misses, m + 1);
    assert_int_equal(next(&e, NULL, 0, NULL, 0), TG_D_UNSCHEDULABLE);
    assert_int_equal(e.pmemo.hits, h + 1);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    free(y);
}

/* vic (lo) is placed by the engine on one of rack r0's two nodes and not
 * yet seen bound (assumed: in the middle of its binds, no victim); a and b
 * need both nodes. Its bind is seen: the
 * record turns bound in place (no room changed: the cluster's nmeta moves),
 * and the plan evicts it. */
static void bind_seen_plans_again(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node(&y, "r0-n0", "", "r0", 8, NULL);
    tu_node(&y, "r0-n1", "", "r0", 8, NULL);
    pclasses(&y);
    pod(&y, "vic", NULL, NULL, "lo", 1, NULL);
    two_gangs(&y, NULL);
    struct tg_simdata d;
    tu_load(&d, y);
    struct tg_engine e;
    engine(&e, &d, 0, "vic");
    assert_int_equal(next(&e, NULL, 0, NULL, 0), TG_D_PLACE); /* vic, on r0-n0 (best fit) */
    struct tg_usage *u = tg_cluster_usage(&e.sched.cluster, "ml/vic");
    assert_non_null(u);
    assert_int_equal(u->kind, TG_USAGE_ASSUMED);
    for (uint32_t i = 0; i < d.npods; i++)
        if (!strncmp(d.pods[i].pod->key, "ml/a", 4) || !strncmp(d.pods[i].pod->key, "ml/b", 4))
            assert_int_equal(tg_engine_pending_set(&e, d.pods[i].pod), 0);
    both_fail(&e, 1);
    /* vic is seen bound where it was assumed */
    const struct tg_pod *vp = NULL;
    for (uint32_t i = 0; i < d.npods; i++)
        if (!strcmp(d.pods[i].pod->key, "ml/vic"))
            vp = d.pods[i].pod;
    assert_non_null(vp);
    struct tg_pod live = *vp;
    live.node = u->slot == tg_cluster_slot(&e.sched.cluster, tg_intern("r0-n0"), 0) ? tg_intern("r0-n0")
                                                                                    : tg_intern("r0-n1");
    live.phase = TG_PHASE_RUNNING;
    uint64_t nmeta = e.sched.cluster.nmeta, nchanges = e.sched.cluster.nchanges;
    assert_int_equal(tg_engine_bound_set(&e, &live), 0);
    assert_int_equal(u->kind, TG_USAGE_BOUND);
    assert_int_equal(e.sched.cluster.nchanges, nchanges); /* its room did not move */
    plans_again(&e);
    assert_true(e.sched.cluster.nmeta > nmeta);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    free(y);
}

/* vic is a bare pod (no controller): no victim without
 * preemption.evictBarePods; the policy turns it on and the plan takes it. */
static void policy_change_plans_again(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node(&y, "r0-n0", "", "r0", 8, NULL);
    tu_node(&y, "r0-n1", "", "r0", 8, NULL);
    pclasses(&y);
    pod(&y, "blk", NULL, "r0-n1", "lo", 1, NULL); /* a victim, but not enough alone */
    pod(&y, "vic", NULL, "r0-n0", "lo", 0, NULL);
    two_gangs(&y, NULL);
    struct tg_simdata d;
    tu_load(&d, y);
    struct tg_engine e;
    engine(&e, &d, 0, "");
    both_fail(&e, 1);
    uint64_t gen = e.gen[TG__GEN_POLICY];
    assert_int_equal(tg_engine_set_policy(&e, policy(1)), 0);
    plans_again(&e);
    assert_true(e.gen[TG__GEN_POLICY] > gen);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    free(y);
}

static void queues(char **y, int qa, int qb)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
              "spec: {resources: {nvidia.com/gpu: {quota: \"%d\"}}}\n"
              "---\napiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
              "spec: {resources: {nvidia.com/gpu: {quota: \"%d\"}}}\n", qa, qb);
}

/* Reclaim: team-b (quota 16 of the rack's 16 GPUs) runs ml/bb on both
 * nodes; team-a's a and b (quota 0... then 16) cannot take it while that
 * would take team-b below its share. The Queues change (team-a 16, team-b
 * 0): the shares move with no node or gang changed, and the next plan
 * reclaims. */
static void queue_change_plans_again(void **state)
{
    (void)state;
    char *y = NULL, *y2 = NULL;
    tu_node(&y, "r0-n0", "", "r0", 8, NULL);
    tu_node(&y, "r0-n1", "", "r0", 8, NULL);
    pclasses(&y);
    queues(&y, 8, 8);
    group(&y, "bb", 2, "hi", "team-b");
    pod(&y, "bb-0", "bb", "r0-n0", "hi", 1, "team-b");
    pod(&y, "bb-1", "bb", "r0-n1", "hi", 1, "team-b");
    const char *g[2] = {"a", "b"};
    for (int k = 0; k < 2; k++) { /* one pod of 8 each: within team-a's share of 8 */
        group(&y, g[k], 1, "mid", "team-a");
        char n[16];
        snprintf(n, sizeof n, "%s-0", g[k]);
        pod(&y, n, g[k], NULL, "mid", 1, "team-a");
    }
    struct tg_simdata d, d2;
    tu_load(&d, y);
    queues(&y2, 16, 0);
    tu_load(&d2, y2);
    struct tg_engine e;
    engine(&e, &d, 0, "");
    both_fail(&e, 2); /* reclaim's plan and priority's, both from the memo */
    uint64_t gen = e.gen[TG__GEN_QUEUES];
    assert_int_equal(tg_engine_queues_set(&e, (const struct tg_queue_obj *const *)d2.queues, d2.nqueues), 0);
    plans_again(&e);
    assert_true(e.gen[TG__GEN_QUEUES] > gen);
    assert_int_equal(e.tenants.reclaims, 1);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    tg_simdata_free(&d2);
    free(y);
    free(y2);
}

/* Every mutator of the fair shares a reader may see moves their generation. */
static void fairshare_gen_moves(void **state)
{
    (void)state;
    char *y = NULL;
    queues(&y, 8, 8);
    struct tg_simdata d;
    tu_load(&d, y);
    struct tg_fairshare_opts o = {.usage_half_life_s = 3600, .k_value = 1};
    struct tg_fairshare *fs = NULL;
    assert_int_equal(tg_fairshare_build((const struct tg_queue_obj *const *)d.queues, d.nqueues, &o,
                                        NULL, &fs), 0);
    uint32_t gpu = (uint32_t)tg_res_id("nvidia.com/gpu", strlen("nvidia.com/gpu"));
    struct tg_rq cap = {gpu, 16}, req = {gpu, 8};
    uint64_t g = tg_fairshare_gen(fs);
#define MOVES(call)                                                                          \
    do {                                                                                     \
        call;                                                                                \
        assert_true(tg_fairshare_gen(fs) > g);                                               \
        g = tg_fairshare_gen(fs);                                                            \
    } while (0)
    MOVES(tg_fairshare_set_capacity(fs, &cap, 1));
    MOVES(tg_fairshare_demand_add(fs, 0, &req, 1, 1));
    MOVES(tg_fairshare_update(fs));
    MOVES(tg_fairshare_alloc_add(fs, 0, &req, 1, 1));
    tg_fairshare_tick(fs, 1000); /* the first tick only starts the clock */
    MOVES(tg_fairshare_tick(fs, 61000));
    MOVES(tg_fairshare_set_usage(fs, 1, gpu, 5));
#undef MOVES
    /* nothing changed: nothing moves */
    tg_fairshare_update(fs);
    g = tg_fairshare_gen(fs);
    assert_int_equal(tg_fairshare_update(fs), 0);
    tg_fairshare_set_capacity(fs, &cap, 1);
    assert_int_equal(tg_fairshare_gen(fs), g);
    tg_fairshare_free(&fs);
    tg_simdata_free(&d);
    free(y);
}

/* The engine's generations move at its entry points, each kind its own. */
static void engine_gens_move(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node(&y, "r0-n0", "", "r0", 8, NULL);
    pclasses(&y);
    pod(&y, "p", NULL, NULL, "lo", 1, NULL);
    tu_cat(&y, "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb, namespace: ml}\n"
               "spec: {minAvailable: 1, selector: {matchLabels: {app: x}}}\n");
    tu_cat(&y, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n");
    struct tg_simdata d;
    tu_load(&d, y);
    assert_int_equal(d.npdbs, 1);
    struct tg_engine e;
    engine(&e, &d, 0, NULL);
    uint64_t g[TG__GEN_N];
    memcpy(g, e.gen, sizeof g);
#define ONLY(k, call)                                                                        \
    do {                                                                                     \
        call;                                                                                \
        for (int i = 0; i < TG__GEN_N; i++)                                                  \
            if (i == (k))                                                                    \
                assert_true(e.gen[i] > g[i]);                                                \
            else                                                                             \
                assert_int_equal(e.gen[i], g[i]);                                            \
        memcpy(g, e.gen, sizeof g);                                                          \
    } while (0)
    /* a new gang's pending pod: its queue is resolved too (GANGS moves) */
    assert_int_equal(tg_engine_pending_set(&e, d.pods[0].pod), 0);
    assert_true(e.gen[TG__GEN_PENDING] > g[TG__GEN_PENDING]);
    memcpy(g, e.gen, sizeof g);
    ONLY(TG__GEN_PENDING, assert_int_equal(tg_engine_pending_set(&e, d.pods[0].pod), 0));
    ONLY(TG__GEN_PDBS, assert_int_equal(tg_engine_pdb_set(&e, d.pdbs[0]), 0));
    ONLY(TG__GEN_PDBS, tg_engine_pdb_delete(&e, d.pdbs[0]->key));
    ONLY(TG__GEN_GANGS, tg_engine_pclass_delete(&e, tg_intern("hi")));
    ONLY(TG__GEN_PLACED, tg_engine_forget(&e, "ml/none"));
    ONLY(TG__GEN_POLICY, assert_int_equal(tg_engine_set_policy(&e, policy(0)), 0));
    ONLY(TG__GEN_OBJECTS, tg_engine_namespace_delete(&e, tg_intern("ml")));
    ONLY(TG__GEN_PENDING, tg_engine_pending_gone(&e, d.pods[0].pod));
#undef ONLY
    tg_engine_free(&e);
    tg_simdata_free(&d);
    free(y);
}

/* The memo's bound: TG_PMEMO_CAP entries of one generation, the oldest
 * replaced first; a put of a new generation drops every older entry. */
static void memo_bound(void **state)
{
    (void)state;
    enum { N = TG_PMEMO_CAP + 4 };
    char *y = NULL;
    for (int i = 0; i < N; i++) {
        char n[16], req[32];
        snprintf(n, sizeof n, "p%d", i);
        snprintf(req, sizeof req, "nvidia.com/gpu: %d", i + 1); /* each its own shape */
        tu_pod(&y, n, NULL, req, NULL);
    }
    struct tg_simdata d;
    tu_load(&d, y);
    struct tg_sched s;
    assert_int_equal(tg_sched_init(&s, policy(0)), 0);
    struct tg_cluster *c = &s.cluster;
    struct tg_pmemo m = {0};
    struct tg_pod *pods[N];
    struct tg_gang v[N];
    struct tg_pmemo_key k[N];
    for (int i = 0; i < N; i++) {
        pods[i] = d.pods[i].pod;
        v[i] = (struct tg_gang){.name = pods[i]->key, .pods = &pods[i], .npods = 1, .anchor = TG_NONE,
                                .within = TG_NONE};
        k[i] = (struct tg_pmemo_key){.priority = 1, .view = &v[i], .cluster = c};
        assert_true(tg_pmemo_usable(&m, &k[i]));
        assert_null(tg_pmemo_find(&m, &k[i]));
        char why[32];
        snprintf(why, sizeof why, "no %d", i);
        tg_pmemo_put(&m, &k[i], 0, why);
        assert_true(m.n <= TG_PMEMO_CAP);
    }
    assert_int_equal(m.n, TG_PMEMO_CAP);
    for (int i = 0; i < N - TG_PMEMO_CAP; i++) /* the oldest went */
        assert_null(tg_pmemo_find(&m, &k[i]));
    for (int i = N - TG_PMEMO_CAP; i < N; i++) {
        char why[32];
        snprintf(why, sizeof why, "no %d", i);
        assert_string_equal(tg_pmemo_find(&m, &k[i]), why);
    }
    /* another priority, another clock when timed, another generation: misses */
    struct tg_pmemo_key o = k[N - 1];
    o.priority = 2;
    assert_null(tg_pmemo_find(&m, &o));
    o = k[N - 1];
    o.gen[3] = 1;
    assert_null(tg_pmemo_find(&m, &o));
    tg_pmemo_put(&m, &o, 1, "timed");
    assert_int_equal(m.n, 1); /* the older generation's entries are gone */
    assert_string_equal(tg_pmemo_find(&m, &o), "timed");
    o.now_ms = 5;
    assert_null(tg_pmemo_find(&m, &o));
    tg_pmemo_free(&m);
    tg_sched_free(&s);
    tg_simdata_free(&d);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pclass_change_plans_again),
        cmocka_unit_test(bind_seen_plans_again),
        cmocka_unit_test(placed_gang_starts_a_new_base),
        cmocka_unit_test(policy_change_plans_again),
        cmocka_unit_test(queue_change_plans_again),
        cmocka_unit_test(fairshare_gen_moves),
        cmocka_unit_test(engine_gens_move),
        cmocka_unit_test(memo_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
