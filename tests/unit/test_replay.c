/* `simulate --replay` (scheduler/sim/replay.h) and the engine under it on a
 * virtual clock, on small hand-made traces with exact expected times:
 *   - arrivals and completions; a backoff that holds a gang past the moment
 *     room frees up, and a gang woken at once by it;
 *   - a preemption: the victims hold their nodes for their grace period,
 *     the preemptor starts when they are gone, the victim gang restarts
 *     from scratch (work lost) under new pod names, reported under its own;
 *   - a reservation letting a starving gang in, and the same trace without;
 *   - --until, --bind-latency (with api.bindConcurrency), --compare and
 *     --plot output, bad durations (file:line, the pod skipped, exit 0);
 *   - the example trace: it runs, preempts and reserves, and its JSON has
 *     the documented shape;
 *   - the core: a Terminating member is not a placed member of its gang
 *     (its recreated pods are placed as a whole gang, not anchored next to
 *     the pods that are leaving); victims of equal cost are chosen by name,
 *     not by where their records sit in memory (the same trace gives the
 *     same replay whatever the order of its objects).
 */
#include "testutil.h"
#include "config/policy.h"
#include "scheduler/engine.h"
#include "scheduler/sim/load.h"
#include "scheduler/sim/replay.h"
#include "util/intern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    struct tg_engine *e;
    struct tg_clock clk = {test_clock, NULL};
    clock_ms = 1000000;
    assert_int_equal(tg_engine_new(&e, &pol, &clk), 0);
    for (uint32_t i = 0; i < d.nnodes; i++)
        assert_int_equal(tg_engine_node_set(e, tg_node_clone(d.nodes[i])), 0);
    tg_engine_podgroup_set(e, d.pgs[0]);
    struct tg_pod *old[2] = {pod_of(&d, "ml/v-0"), pod_of(&d, "ml/v-1")};
    for (int i = 0; i < 2; i++)
        assert_int_equal(tg_engine_bound_set(e, old[i]), 0);
    struct tg_grec *g = tg_engine_gang(e, "ml/v");
    assert_non_null(g);
    assert_int_equal(g->nmembers, 2);
    /* preempted: Terminating, and recreated */
    for (int i = 0; i < 2; i++) {
        old[i]->deleting = 1;
        assert_int_equal(tg_engine_bound_set(e, old[i]), 0);
    }
    assert_non_null(tg_cluster_usage(tg_engine_cluster(e), "ml/v-0")); /* still holds r0 */
    assert_int_equal(tg_engine_pending_set(e, pod_of(&d, "ml/v-0-r1")), 0);
    assert_int_equal(tg_engine_pending_set(e, pod_of(&d, "ml/v-1-r1")), 0);
    g = tg_engine_gang(e, "ml/v");
    assert_int_equal(g->nmembers, 0);
    struct tg_decision dc;
    assert_int_equal(tg_engine_next(e, &dc), 0);
    assert_int_equal(dc.kind, TG_D_PLACE);
    assert_int_equal(dc.view.nbound, 0);
    assert_int_equal(dc.must, 2);
    assert_int_equal(dc.result.nplaced, 2);
    for (uint32_t i = 0; i < dc.view.npods; i++) {
        const char *node = tg_str(tg_engine_cluster(e)->nodes[dc.result.slot[i]].name);
        assert_true(!strncmp(node, "r1-", 3));
    }
    tg_decision_free(&dc);
    tg_engine_delete(e);
    tg_simdata_free(&d);
    tg_sb_free(&err);
    free(y);
}

/* Two single pods of equal cost (priority, GPUs, age) on one node; the
 * preemptor needs room for one. The victim is the same whichever order the
 * pods come in (it used to follow their records' addresses). */
static void equal_victims_by_name(void **state)
{
    (void)state;
    const char *victim[2];
    for (int order = 0; order < 2; order++) {
        char *y = NULL;
        tu_node(&y, "n0", "", "r0", 8, NULL);
        for (int k = 0; k < 2; k++) {
            const char *name = (k ^ order) ? "b" : "a";
            tu_cat(&y, "---\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
                       "  creationTimestamp: '2026-01-01T00:00:00Z'\n"
                       "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s, uid: u-%s, "
                       "controller: true}]\nspec:\n  nodeName: n0\n  priority: 10\n"
                       "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: 4}}}]\n"
                       "status: {phase: Running}\n", name, name, name);
        }
        tu_cat(&y, "---\nkind: Pod\nmetadata: {name: hi, namespace: ml}\nspec:\n"
                   "  schedulerName: topogang\n  priority: 1000\n"
                   "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: 4}}}]\n");
        cJSON *res = tu_simulate(RACKS, y);
        const cJSON *pre = cJSON_GetObjectItemCaseSensitive(tu_gang(res, "ml/hi"), "preempts");
        assert_int_equal(cJSON_GetArraySize(pre), 1);
        const cJSON *pods = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pre, 0), "pods");
        victim[order] = strdup(cJSON_GetArrayItem(pods, 0)->valuestring);
        cJSON_Delete(res);
        free(y);
    }
    assert_string_equal(victim[0], victim[1]);
    assert_string_equal(victim[0], "ml/b"); /* the first name is kept first */
    free((char *)victim[0]);
    free((char *)victim[1]);
}

/* ---- helpers ------------------------------------------------------------------------ */

static const char *T0 = "2026-01-01T00:00:00Z";

/* A time T0 + secs as a creationTimestamp. */
static const char *at(double secs)
{
    static char buf[8][48];
    static int k;
    char *b = buf[k++ % 8];
    long s = (long)secs;
    int ms = (int)lround((secs - (double)s) * 1000);
    snprintf(b, sizeof buf[0], "2026-01-01T%02ld:%02ld:%02ld.%03dZ", s / 3600, s / 60 % 60, s % 60, ms);
    return b;
}

/* A node of 8 GPUs in rack `rack`. */
static void node(char **y, const char *name, const char *rack)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels: "
              "{kubernetes.io/hostname: %s, topogang.io/rack: %s}\n"
              "status: {allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
              "nvidia.com/gpu: \"8\"}}\n", name, name, rack);
}

/* A pending pod of gang `group` (NULL: none) and its sub-group `sub` (NULL:
 * none), arriving at `arrive`, running `dur` (NULL: forever), with a Job as
 * its controller. */
static void rpod_sub(char **y, const char *name, const char *group, const char *sub,
                     double arrive, const char *dur, int gpus, const char *prio, int grace)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
              "  creationTimestamp: \"%s\"\n", name, at(arrive));
    if (group)
        tu_cat(y, "  labels: {topogang.io/pod-group: %s%s%s}\n", group,
               sub ? ", topogang.io/sub-group: " : "", sub ? sub : "");
    if (dur)
        tu_cat(y, "  annotations: {simulate.topogang.io/duration: \"%s\"}\n", dur);
    tu_cat(y, "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s, uid: u-%s, "
              "controller: true}]\nspec:\n  schedulerName: topogang\n", group ? group : name,
           group ? group : name);
    if (prio)
        tu_cat(y, "  priorityClassName: %s\n", prio);
    if (grace >= 0)
        tu_cat(y, "  terminationGracePeriodSeconds: %d\n", grace);
    tu_cat(y, "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: %d}}}]\n", gpus);
}

static void rpod(char **y, const char *name, const char *group, double arrive, const char *dur,
                 int gpus, const char *prio, int grace)
{
    rpod_sub(y, name, group, NULL, arrive, dur, gpus, prio, grace);
}

static void pgroup(char **y, const char *name, int min, const char *prio, const char *topo)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
              "metadata: {name: %s, namespace: ml, creationTimestamp: \"%s\"}\n"
              "spec: {minMember: %d%s%s%s%s}\n", name, T0, min, prio ? ", priorityClassName: " : "",
           prio ? prio : "", topo ? ", " : "", topo ? topo : "");
}

static void pclass(char **y, const char *name, int value)
{
    tu_cat(y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
              "metadata: {name: %s}\nvalue: %d\n", name, value);
}

/* Replays yaml under a policy (NULL: racks and nodes) and returns its JSON. */
static cJSON *replay_with(const char *policy_yaml, const char *yaml, int64_t until_ms,
                          int64_t latency_ms)
{
    struct tg_simdata d;
    struct tg_sb err = {0}, out = {0};
    struct tg_policy pol;
    policy_of(policy_yaml ? policy_yaml : RACKS, &pol);
    tg_simdata_init(&d);
    d.quiet = 1;
    assert_int_equal(tg_simdata_load_string(&d, yaml, strlen(yaml), "t.yaml", &err), 0);
    struct tg_replay_opts o = {.until_ms = until_ms, .bind_latency_ms = latency_ms};
    struct tg_replay *r = tg_replay_new(&d, &pol, &o);
    assert_non_null(r);
    assert_int_equal(tg_replay_run(r), 0);
    tg_replay_json(r, &out);
    cJSON *res = cJSON_Parse(tg_sb_str(&out));
    if (!res)
        fprintf(stderr, "%s\n", tg_sb_str(&out));
    assert_non_null(res);
    tg_replay_free(&r);
    tg_simdata_free(&d);
    tg_sb_free(&err);
    tg_sb_free(&out);
    return res;
}

static cJSON *replay(const char *yaml)
{
    return replay_with(NULL, yaml, -1, 0);
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(j))
        fail_msg("%s is not a number", key);
    return j->valuedouble;
}

static int is_null(const cJSON *o, const char *key)
{
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *run_of(const cJSON *g, int i)
{
    const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g, "runs"), i);
    assert_non_null(r);
    return r;
}

static int nruns(const cJSON *g)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "runs"));
}

static const cJSON *summary(const cJSON *res)
{
    return cJSON_GetObjectItemCaseSensitive(res, "summary");
}

/* ---- rank order ------------------------------------------------------------------------ */

/* The summary sums what each placement's consecutive ranks cross
 * (scheduler/rank.h): an 8-pod gang of 4 GPUs a pod, ranks in reverse of
 * the pods' order, on four nodes listed rack by rack in turn: 7 pairs, the
 * rack crossed once, nodes three times; a trace without ranks has no
 * rankCrossings. */
static void rank_crossings_summed(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0", "r0");
    node(&y, "n1", "r1");
    node(&y, "n2", "r0");
    node(&y, "n3", "r1");
    pgroup(&y, "g", 8, NULL, NULL);
    for (int i = 0; i < 8; i++)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: g-%d\n  namespace: ml\n"
                   "  creationTimestamp: \"%s\"\n  labels: {topogang.io/pod-group: g, "
                   "topogang.io/rank: \"%d\"}\n  annotations: {simulate.topogang.io/duration: \"1h\"}\n"
                   "spec:\n  schedulerName: topogang\n"
                   "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: 4}}}]\n",
               i, at(0), 7 - i);
    cJSON *res = replay(y);
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(summary(res), "rankCrossings");
    assert_non_null(rc);
    assert_int_equal(num(rc, "pairs"), 7);
    assert_int_equal(num(rc, "rack"), 1);
    assert_int_equal(num(rc, "node"), 3);
    cJSON_Delete(res);
    free(y);

    y = NULL;
    node(&y, "n0", "r0");
    rpod(&y, "a", NULL, 0, "1h", 8, NULL, -1);
    res = replay(y);
    assert_null(cJSON_GetObjectItemCaseSensitive(summary(res), "rankCrossings"));
    cJSON_Delete(res);
    free(y);
}

/* ---- labels ---------------------------------------------------------------------------- */

/* Nodes lacking a level's label: a gang requiring the level never uses them,
 * no run is named after a missing label, and they are no free domain. */
static void no_domain_named_after_a_missing_label(void **state)
{
    (void)state;
    char *y = NULL;
    tu_node_labels(&y, "a", "topogang.io/rack: r1", 8);
    tu_node_labels(&y, "b", "topogang.io/rack: r1", 8);
    tu_node_labels(&y, "c", "kubernetes.io/hostname: c", 8);
    pgroup(&y, "pair", 2, NULL, "topology: {required: rack}");
    rpod(&y, "pair-0", "pair", 0, "10m", 8, NULL, -1);
    rpod(&y, "pair-1", "pair", 0, "10m", 8, NULL, -1);
    rpod(&y, "solo", NULL, 0, "5m", 8, NULL, -1);
    pgroup(&y, "late", 1, NULL, "topology: {required: rack}");
    rpod(&y, "late-0", "late", 60, "1m", 8, NULL, -1);
    cJSON *res = replay(y);
    const cJSON *pair = tu_gang(res, "ml/pair"), *solo = tu_gang(res, "ml/solo");
    const cJSON *late = tu_gang(res, "ml/late");
    assert_string_equal(tu_str(run_of(pair, 0), "domain"), "r1");
    assert_string_equal(tu_str(run_of(pair, 0), "level"), "rack");
    /* the gang of one on c, which lacks the rack label: named by its own node */
    assert_string_equal(tu_str(run_of(solo, 0), "domain"), "c");
    assert_string_equal(tu_str(run_of(solo, 0), "level"), "node");
    /* c is free from 5m, but a gang requiring a rack waits for r1 (10m) */
    assert_int_equal(num(run_of(late, 0), "start"), 600);
    assert_string_equal(tu_str(run_of(late, 0), "domain"), "r1");
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(res, "gangs"))
    {
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(g, "runs"))
        {
            const char *d = tu_str(r, "domain");
            assert_non_null(d);
            assert_null(strchr(d, '-'));
            assert_null(strstr(d, "//"));
        }
    }
    /* one rack: c's missing label is no second one */
    const cJSON *fd = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(summary(res), "fragmentation"), "freeDomains");
    assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(fd, "rack"), "max"), 1);
    cJSON_Delete(res);
    free(y);
}

/* ---- time ---------------------------------------------------------------------------- */

/* Two nodes; a (1h) and b (30m) take them; c arrives at 20m and starts when
 * b completes at 40m. */
static void arrivals_and_completions(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0", "r0");
    node(&y, "n1", "r0");
    rpod(&y, "a", NULL, 0, "1h", 8, NULL, -1);
    rpod(&y, "b", NULL, 600, "30m", 8, NULL, -1);
    rpod(&y, "c", NULL, 1200, "600", 8, NULL, -1);
    cJSON *res = replay(y);
    const cJSON *a = tu_gang(res, "ml/a"), *b = tu_gang(res, "ml/b"), *c = tu_gang(res, "ml/c");
    assert_true(is_null(a, "podGroup"));
    assert_int_equal(num(a, "arrival"), 0);
    assert_int_equal(num(run_of(a, 0), "start"), 0);
    assert_int_equal(num(run_of(a, 0), "end"), 3600);
    assert_string_equal(tu_str(run_of(a, 0), "reason"), "completed");
    assert_int_equal(num(b, "arrival"), 600);
    assert_int_equal(num(run_of(b, 0), "start"), 600);
    assert_int_equal(num(run_of(b, 0), "end"), 2400);
    assert_int_equal(num(c, "arrival"), 1200);
    assert_int_equal(num(run_of(c, 0), "start"), 2400);
    assert_int_equal(num(c, "wait"), 1200);
    assert_int_equal(num(run_of(c, 0), "end"), 3000);
    assert_string_equal(tu_str(c, "status"), "Completed");
    const cJSON *s = summary(res);
    assert_int_equal(num(s, "makespan"), 3600);
    assert_int_equal(num(s, "completed"), 3);
    /* 8 x (3600 + 1800 + 600) GPU-seconds of 16 x 3600 */
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(s, "utilization"), "nvidia.com/gpu");
    assert_int_equal(num(u, "used"), 48000);
    assert_int_equal(num(u, "available"), 57600);
    cJSON_Delete(res);
    free(y);
}

/* x0 and x1 hold both nodes until 10.5 s. y1 arrives at 5 s and fails
 * (backoff 1 s, then it waits for a cluster change); y0 arrives at 10 s and
 * fails (backoff until 11 s). At 10.5 s the nodes free up: y1 starts at
 * once, y0 when its backoff ends. */
static void backoff_holds_a_gang(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0", "r0");
    node(&y, "n1", "r0");
    rpod(&y, "x0", NULL, 0, "10.5", 8, NULL, -1);
    rpod(&y, "x1", NULL, 0, "10.5", 8, NULL, -1);
    rpod(&y, "y1", NULL, 5, "60", 8, NULL, -1);
    rpod(&y, "y0", NULL, 10, "60", 8, NULL, -1);
    cJSON *res = replay(y);
    assert_true(fabs(num(run_of(tu_gang(res, "ml/y1"), 0), "start") - 10.5) < 1e-9);
    assert_int_equal(num(run_of(tu_gang(res, "ml/y0"), 0), "start"), 11);
    assert_true(fabs(num(tu_gang(res, "ml/y1"), "wait") - 5.5) < 1e-9);
    assert_int_equal(num(summary(res), "makespan"), 71);
    cJSON_Delete(res);
    free(y);
}

/* ---- preemption --------------------------------------------------------------------------- */

/* ml/low (2 x 8 GPUs, 1 h, grace 60 s) runs on both nodes; ml/hi (priority
 * high, 10 min) arrives at 30 min: low is evicted whole, its pods hold the
 * nodes until 31 min, hi runs 31-41 min, low restarts at 41 min and runs its
 * whole hour again. */
static void preemption_loses_work_and_restarts(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0", "r0");
    node(&y, "n1", "r0");
    pclass(&y, "high", 1000);
    pclass(&y, "low", 10);
    pgroup(&y, "low", 2, "low", "topology: {required: rack}");
    rpod(&y, "low-0", "low", 0, "1h", 8, "low", 60);
    rpod(&y, "low-1", "low", 0, "1h", 8, "low", 60);
    rpod(&y, "hi", NULL, 1800, "10m", 8, "high", -1);
    cJSON *res = replay(y);
    const cJSON *low = tu_gang(res, "ml/low"), *hi = tu_gang(res, "ml/hi");
    assert_string_equal(tu_str(low, "podGroup"), "ml/low");
    assert_int_equal(nruns(low), 2);
    const cJSON *r0 = run_of(low, 0), *r1 = run_of(low, 1);
    assert_int_equal(num(r0, "start"), 0);
    assert_int_equal(num(r0, "end"), 1800);
    assert_string_equal(tu_str(r0, "reason"), "preempted");
    assert_string_equal(tu_str(r0, "preemptedBy"), "ml/hi");
    assert_int_equal(num(run_of(hi, 0), "start"), 1860);
    assert_int_equal(num(hi, "wait"), 60);
    const cJSON *pre = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(hi, "preempts"), 0);
    assert_string_equal(tu_str(pre, "podGroup"), "ml/low");
    assert_int_equal(num(pre, "at"), 1800);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(pre, "pods")), 2);
    /* the restart: whole duration again, reported under the input names */
    assert_int_equal(num(r1, "start"), 2460);
    assert_int_equal(num(r1, "end"), 6060);
    assert_string_equal(tu_str(r1, "reason"), "completed");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r1, "pods"))
        assert_true(!strcmp(tu_str(p, "pod"), "ml/low-0") || !strcmp(tu_str(p, "pod"), "ml/low-1"));
    assert_string_equal(tu_str(low, "status"), "Completed");
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(summary(res), "preemptions");
    assert_int_equal(num(ps, "count"), 1);
    assert_int_equal(num(ps, "victimGangs"), 1);
    assert_int_equal(num(ps, "victimPods"), 2);
    assert_int_equal(num(ps, "workLost"), 2 * 8 * 1800);
    cJSON_Delete(res);
    free(y);
}

/* ---- reservation ---------------------------------------------------------------------------- */

/* The nodes of run 0 of gang g's pods named p0, p1 (both placed). */
static void run_nodes(const cJSON *g, const char *p0, const char *p1, const char **n0,
                      const char **n1)
{
    const cJSON *it;
    *n0 = *n1 = NULL;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(run_of(g, 0), "pods")) {
        if (!strcmp(tu_str(it, "pod"), p0))
            *n0 = tu_str(it, "node");
        if (!strcmp(tu_str(it, "pod"), p1))
            *n1 = tu_str(it, "node");
    }
    assert_non_null(*n0);
    assert_non_null(*n1);
}

/* Racks r0 and r1 of two 8-GPU nodes each (r0-n0, r0-n1, ...). */
static void two_racks(char **y)
{
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 2; i++) {
            char n[16], rk[8];
            snprintf(n, sizeof n, "r%d-n%d", r, i);
            snprintf(rk, sizeof rk, "r%d", r);
            node(y, n, rk);
        }
}

/* Two racks of two nodes. Single 8-GPU pods arrive every 150 s and run
 * 600 s: from 450 s on every node that frees up is taken again at once.
 * ml/big (2 x 8 GPUs, one rack, same priority: it cannot preempt) arrives
 * at 500 s. With gang.reserveAfterSeconds 300 it reserves a rack on its
 * first attempt past 800 s and starts when that rack has drained (within
 * one run time, 600 s, and a backoff); without, only once the stream has
 * dried up (the last pods end from 3000 s). */
static char *starving_trace(void)
{
    char *y = NULL;
    two_racks(&y);
    pgroup(&y, "big", 2, NULL, "topology: {required: rack}, scheduleTimeoutSeconds: 86400");
    rpod(&y, "big-0", "big", 500, "600", 8, NULL, -1);
    rpod(&y, "big-1", "big", 500, "600", 8, NULL, -1);
    for (int k = 0; k < 20; k++) {
        char name[16];
        snprintf(name, sizeof name, "s%02d", k);
        rpod(&y, name, NULL, 150.0 * k, "600", 8, NULL, -1);
    }
    return y;
}

/* Issue 20: reservation for a gang with sub-groups. The starving trace's
 * stream of single 8-GPU pods, and ml/big as 4 pods of 4 GPUs in one rack
 * whose sub-groups tp0 (big-0, big-2) and tp1 (big-1, big-3) each need one
 * node. It reserves a rack past 800 s, starts there within a run time of
 * the reservation, and lands with each sub-group on one node (a split by
 * count alone, two pods a node, may mix them). */
static void reservation_for_subgroups(void **state)
{
    (void)state;
    char *y = NULL;
    two_racks(&y);
    pgroup(&y, "big", 4, NULL, "topology: {required: rack}, scheduleTimeoutSeconds: 86400, "
                               "subGroups: [{name: tp0, minMember: 2, topology: {required: node}}, "
                               "{name: tp1, minMember: 2, topology: {required: node}}]");
    /* interleaved: by name alone each sub-group spans both nodes */
    rpod_sub(&y, "big-0", "big", "tp0", 500, "600", 4, NULL, -1);
    rpod_sub(&y, "big-1", "big", "tp1", 500, "600", 4, NULL, -1);
    rpod_sub(&y, "big-2", "big", "tp0", 500, "600", 4, NULL, -1);
    rpod_sub(&y, "big-3", "big", "tp1", 500, "600", 4, NULL, -1);
    for (int k = 0; k < 20; k++) {
        char name[16];
        snprintf(name, sizeof name, "s%02d", k);
        rpod(&y, name, NULL, 150.0 * k, "600", 8, NULL, -1);
    }
    static const char *with = "topology:\n  levels:\n"
                              "    - {name: rack, nodeLabel: topogang.io/rack}\n"
                              "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
                              "gang: {reserveAfterSeconds: 300}\n";
    cJSON *a = replay_with(with, y, -1, 0);
    const cJSON *ga = tu_gang(a, "ml/big");
    const cJSON *resv = cJSON_GetObjectItemCaseSensitive(ga, "reservation");
    assert_true(cJSON_IsObject(resv));
    double ra = num(resv, "at");
    assert_true(ra >= 800 && ra < 900);
    double sa = num(run_of(ga, 0), "start");
    assert_true(sa > ra && sa <= ra + 660);
    assert_string_equal(tu_str(run_of(ga, 0), "domain"), tu_str(resv, "domain"));
    const char *t0a, *t0b, *t1a, *t1b;
    run_nodes(ga, "ml/big-0", "ml/big-2", &t0a, &t0b);
    run_nodes(ga, "ml/big-1", "ml/big-3", &t1a, &t1b);
    assert_string_equal(t0a, t0b); /* tp0 on one node */
    assert_string_equal(t1a, t1b); /* tp1 on one node */
    assert_string_not_equal(t0a, t1a);
    assert_int_equal(t0a[1], tu_str(resv, "domain")[strlen(tu_str(resv, "domain")) - 1]);
    assert_int_equal(num(summary(a), "reservations"), 1);
    assert_int_equal(num(summary(a), "completed"), 21);
    cJSON_Delete(a);
    free(y);
}

static void reservation_lets_a_starving_gang_in(void **state)
{
    (void)state;
    char *y = starving_trace();
    static const char *with = "topology:\n  levels:\n"
                              "    - {name: rack, nodeLabel: topogang.io/rack}\n"
                              "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
                              "gang: {reserveAfterSeconds: 300}\n";
    static const char *without = "topology:\n  levels:\n"
                                 "    - {name: rack, nodeLabel: topogang.io/rack}\n"
                                 "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
                                 "gang: {reserveAfterSeconds: 0}\n";
    cJSON *a = replay_with(with, y, -1, 0), *b = replay_with(without, y, -1, 0);
    const cJSON *ga = tu_gang(a, "ml/big"), *gb = tu_gang(b, "ml/big");
    const cJSON *resv = cJSON_GetObjectItemCaseSensitive(ga, "reservation");
    assert_true(cJSON_IsObject(resv));
    double ra = num(resv, "at");
    assert_true(ra >= 800 && ra < 900);
    assert_non_null(tu_str(resv, "domain"));
    double sa = num(run_of(ga, 0), "start"), sb = num(run_of(gb, 0), "start");
    assert_true(sa > ra && sa <= ra + 660);
    assert_string_equal(tu_str(run_of(ga, 0), "domain"), tu_str(resv, "domain"));
    assert_true(is_null(gb, "reservation"));
    assert_true(sb >= 3000);
    assert_int_equal(num(summary(a), "reservations"), 1);
    assert_int_equal(num(summary(b), "reservations"), 0);
    /* everything ran in both */
    assert_int_equal(num(summary(a), "completed"), 21);
    assert_int_equal(num(summary(b), "completed"), 21);
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(y);
}

/* ---- options --------------------------------------------------------------------------------- */

static char *three_pods(void)
{
    char *y = NULL;
    node(&y, "n0", "r0");
    node(&y, "n1", "r0");
    rpod(&y, "a", NULL, 0, "1h", 8, NULL, -1);
    rpod(&y, "b", NULL, 600, "30m", 8, NULL, -1);
    rpod(&y, "c", NULL, 1200, "600", 8, NULL, -1);
    return y;
}

/* --until 30m: a and b still run, c waits; the summary covers 30 min. */
static void until_stops_the_clock(void **state)
{
    (void)state;
    char *y = three_pods();
    cJSON *res = replay_with(NULL, y, 1800 * 1000, 0);
    const cJSON *a = tu_gang(res, "ml/a"), *c = tu_gang(res, "ml/c");
    assert_true(is_null(run_of(a, 0), "end"));
    assert_string_equal(tu_str(run_of(a, 0), "reason"), "running");
    assert_string_equal(tu_str(a, "status"), "Running");
    assert_int_equal(nruns(c), 0);
    assert_string_equal(tu_str(c, "status"), "Unschedulable"); /* waited past 300 s */
    assert_true(is_null(c, "wait"));
    const cJSON *s = summary(res);
    assert_int_equal(num(s, "end"), 1800);
    assert_int_equal(num(s, "running"), 2);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(s, "utilization"), "nvidia.com/gpu");
    assert_int_equal(num(u, "used"), 8 * 1800 + 8 * 1200);
    assert_int_equal(num(u, "available"), 16 * 1800);
    cJSON_Delete(res);
    free(y);
}

/* --bind-latency 2s: every start moves by the binds; a 3-pod gang with
 * api.bindConcurrency 1 binds one pod at a time. */
static void bind_latency_delays_starts(void **state)
{
    (void)state;
    char *y = three_pods();
    cJSON *res = replay_with(NULL, y, -1, 2000);
    assert_int_equal(num(run_of(tu_gang(res, "ml/a"), 0), "start"), 2);
    assert_int_equal(num(run_of(tu_gang(res, "ml/a"), 0), "end"), 3602);
    assert_int_equal(num(run_of(tu_gang(res, "ml/b"), 0), "start"), 602);
    /* c is tried every 60 s (the unschedulable flush) from 1200 s on; the
     * attempt at 2400 s backs it off for 60 s, just before b ends at 2402 s */
    assert_int_equal(num(run_of(tu_gang(res, "ml/c"), 0), "start"), 2460 + 2);
    cJSON_Delete(res);
    free(y);
    y = NULL;
    node(&y, "n0", "r0");
    node(&y, "n1", "r0");
    node(&y, "n2", "r0");
    pgroup(&y, "g", 3, NULL, NULL);
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "g-%d", i);
        rpod(&y, name, "g", 0, "100", 8, NULL, -1);
    }
    char pol[512];
    snprintf(pol, sizeof pol, "%sapi: {bindConcurrency: 1}\n", RACKS);
    res = replay_with(pol, y, -1, 2000);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_int_equal(num(run_of(g, 0), "start"), 6);
    assert_int_equal(num(run_of(g, 0), "end"), 106); /* the last pod, bound at 6 s */
    cJSON_Delete(res);
    free(y);
}

/* ---- the command ------------------------------------------------------------------------------- */

static char out[1 << 22];
static char tmpdir[64];

static int run(const char *args)
{
    const char *bin = getenv("TOPOGANG_BIN"), *src = getenv("TOPOGANG_SRC");
    assert_non_null(bin);
    assert_non_null(src);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", src, bin, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char *write_tmp(const char *name, const char *text)
{
    static char path[8][256];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, sizeof path[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static void compare_output_shape(void **state)
{
    (void)state;
    char *y = three_pods(), args[1024];
    const char *trace = write_tmp("three.yaml", y);
    const char *pol = write_tmp("spread.yaml", "placement: {strategy: spread}\n");
    snprintf(args, sizeof args, "simulate --replay -f %s --compare %s -o json", trace, pol);
    assert_int_equal(run(args), 0);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    const cJSON *pols = cJSON_GetObjectItemCaseSensitive(res, "policies");
    assert_int_equal(cJSON_GetArraySize(pols), 2);
    assert_string_equal(tu_str(cJSON_GetArrayItem(pols, 0), "name"), "default policy");
    assert_string_equal(tu_str(cJSON_GetArrayItem(pols, 1), "name"), pol);
    for (int i = 0; i < 2; i++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pols, i), "summary");
        assert_int_equal(num(s, "gangs"), 3);
        assert_int_equal(num(s, "completed"), 3);
    }
    const cJSON *gangs = cJSON_GetObjectItemCaseSensitive(res, "gangs"), *g;
    assert_int_equal(cJSON_GetArraySize(gangs), 3);
    cJSON_ArrayForEach(g, gangs)
    {
        assert_non_null(tu_str(g, "gang"));
        for (int i = 0; i < 2; i++) {
            const cJSON *side = cJSON_GetObjectItemCaseSensitive(g, i ? "b" : "a");
            assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(side, "start")));
            assert_non_null(tu_str(side, "domain"));
            assert_non_null(tu_str(side, "status"));
        }
        assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(g, "differs")));
    }
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(res, "differences")));
    cJSON_Delete(res);
    /* the table: both names, the gangs that differ, both summaries */
    snprintf(args, sizeof args, "simulate --replay -f %s --compare %s", trace, pol);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "A: default policy"));
    assert_non_null(strstr(out, "B: "));
    assert_non_null(strstr(out, "gangs differ"));
    assert_non_null(strstr(out, "utilization nvidia.com/gpu"));
    free(y);
}

static void plot_is_one_svg(void **state)
{
    (void)state;
    char *y = three_pods(), args[1024], svg[300];
    const char *trace = write_tmp("three.yaml", y);
    snprintf(svg, sizeof svg, "%s/plot.svg", tmpdir);
    snprintf(args, sizeof args, "simulate --replay -f %s --plot %s -o json", trace, svg);
    assert_int_equal(run(args), 0);
    FILE *f = fopen(svg, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_true(!strncmp(text, "<svg xmlns='http://www.w3.org/2000/svg'", 39));
    assert_int_equal(strstr(text, "<polyline") != NULL, 1);
    assert_null(strstr(text, "href"));
    assert_null(strstr(text, "<script"));
    assert_non_null(strstr(text, "</svg>\n"));
    free(y);
}

/* A malformed duration: an error naming the file, line and pod; the pod is
 * skipped, the rest replayed, exit 0 as for any bad object. */
static void bad_durations(void **state)
{
    (void)state;
    char *y = three_pods(), args[1024];
    rpod(&y, "broken", NULL, 0, "ten minutes", 8, NULL, -1);
    rpod(&y, "negative", NULL, 0, "-5s", 8, NULL, -1);
    const char *trace = write_tmp("bad.yaml", y);
    snprintf(args, sizeof args, "simulate --replay -f %s -o json", trace);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "bad.yaml:"));
    assert_non_null(strstr(out, "error: Pod ml/broken: metadata.annotations[simulate.topogang.io/"
                                "duration]: malformed duration \"ten minutes\""));
    assert_non_null(strstr(out, "error: Pod ml/negative: "));
    assert_null(strstr(out, "\"pod\":\"ml/broken\""));
    assert_non_null(strstr(out, "\"pod\":\"ml/c\""));
    snprintf(args, sizeof args, "simulate --replay -f %s --until soon", trace);
    assert_int_equal(run(args), 2);
    assert_non_null(strstr(out, "--until: malformed duration \"soon\""));
    snprintf(args, sizeof args, "simulate -f %s --until 1h", trace);
    assert_int_equal(run(args), 2);
    free(y);
}

/* ---- the example trace ---------------------------------------------------------------------- */

static int one_of(const char *s, const char *const *v)
{
    for (; s && *v; v++)
        if (!strcmp(s, *v))
            return 1;
    return 0;
}

static void check_run(const cJSON *r)
{
    static const char *const reasons[] = {"completed", "preempted", "running", NULL};
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r, "start")));
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(r, "end");
    assert_true(cJSON_IsNumber(end) || cJSON_IsNull(end));
    assert_true(one_of(tu_str(r, "reason"), reasons));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(r, "level"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(r, "domain"));
    const cJSON *p;
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "pods")) > 0);
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "pods"))
    {
        assert_non_null(tu_str(p, "pod"));
        assert_non_null(tu_str(p, "node"));
    }
}

static void check_gang(const cJSON *g, int *pods)
{
    static const char *const states[] = {"Completed", "Running", "Pending", "Unschedulable",
                                         "Invalid", NULL};
    const cJSON *pg = cJSON_GetObjectItemCaseSensitive(g, "podGroup"), *x;
    assert_true(cJSON_IsString(pg) || cJSON_IsNull(pg));
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(g, "pods"))
    {
        assert_non_null(tu_str(x, "pod"));
        (*pods)++;
    }
    assert_true(num(g, "arrival") >= 0);
    assert_true(num(g, "minMember") >= 1);
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(g, "runs")));
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(g, "runs")) check_run(x);
    assert_true(one_of(tu_str(g, "status"), states));
}

static void check_summary(const cJSON *s)
{
    static const char *const classes[] = {"1", "2-8", "9-64", "65+"};
    assert_true(num(s, "makespan") > 20 * 3600);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(s, "utilization"), "nvidia.com/gpu");
    assert_true(num(u, "ratio") > 0.5 && num(u, "ratio") <= 1);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(s, "wait");
    assert_true(num(w, "p50") <= num(w, "p90") && num(w, "p90") <= num(w, "p99"));
    for (int i = 0; i < 4; i++)
        assert_non_null(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(w, "bySize"), classes[i]));
    assert_true(num(s, "timedOut") >= 0);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(s, "preemptions");
    assert_true(num(p, "count") > 0 && num(p, "victimGangs") > 0 && num(p, "victimPods") > 0 &&
                num(p, "workLost") > 0);
    assert_true(num(s, "reservations") > 0);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(s, "fragmentation");
    assert_true(num(f, "samples") > 1000);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(f, "freeNodes"));
    const cJSON *fd = cJSON_GetObjectItemCaseSensitive(f, "freeDomains");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(fd, "rack"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(fd, "nvlink-domain"));
}

static void example_trace(void **state)
{
    (void)state;
    assert_int_equal(run("simulate --replay -f examples/trace/ -o json"), 0);
    cJSON *res = cJSON_Parse(out); /* no warning on stderr: the trace is clean */
    assert_non_null(res);
    int pods = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(res, "gangs")) check_gang(g, &pods);
    const char *src = getenv("TOPOGANG_SRC");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "grep -c 'schedulerName: topogang' '%s/examples/trace/workload.yaml'",
             src);
    FILE *f = popen(cmd, "r");
    int want = 0;
    assert_int_equal(fscanf(f, "%d", &want), 1);
    pclose(f);
    assert_int_equal(pods, want); /* every pod once */
    check_summary(summary(res));
    /* the big gang gets in through a reservation */
    const cJSON *big = tu_gang(res, "ml/llama-pretrain");
    assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(big, "reservation")));
    double with = num(run_of(big, 0), "start");
    cJSON_Delete(res);
    assert_int_equal(run("simulate --replay -f examples/trace/ -o json "
                         "--config examples/trace/policies/no-reservation.yaml"), 0);
    res = cJSON_Parse(out);
    assert_non_null(res);
    big = tu_gang(res, "ml/llama-pretrain");
    assert_true(num(run_of(big, 0), "start") > with + 4 * 3600);
    cJSON_Delete(res);
    /* the table shows preemptions and the reservation */
    assert_int_equal(run("simulate --replay -f examples/trace/"), 0);
    assert_non_null(strstr(out, "preempts "));
    assert_non_null(strstr(out, "preempted by "));
    assert_non_null(strstr(out, "reserved zone-"));
    assert_non_null(strstr(out, "utilization: nvidia.com/gpu"));
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(tmpdir, sizeof tmpdir, "tg-replay");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(terminating_members_are_not_placed),
        cmocka_unit_test(equal_victims_by_name),
        cmocka_unit_test(arrivals_and_completions),
        cmocka_unit_test(backoff_holds_a_gang),
        cmocka_unit_test(preemption_loses_work_and_restarts),
        cmocka_unit_test(reservation_lets_a_starving_gang_in),
        cmocka_unit_test(reservation_for_subgroups),
        cmocka_unit_test(until_stops_the_clock),
        cmocka_unit_test(bind_latency_delays_starts),
        cmocka_unit_test(compare_output_shape),
        cmocka_unit_test(plot_is_one_svg),
        cmocka_unit_test(bad_durations),
        cmocka_unit_test(example_trace),
        cmocka_unit_test(rank_crossings_summed),
        cmocka_unit_test(no_domain_named_after_a_missing_label),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
