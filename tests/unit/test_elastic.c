/* Elastic gangs (scheduler/elastic.h; issue 20): minMember <= placed <= desired.
 *   - growth past minMember stays inside the rack the gang's members hold
 *     when it requires a rack, even with room elsewhere, and says so (with
 *     no required level: "anywhere in the cluster");
 *   - spec.maxMember bounds what is placed (the lowest ranks), the rest waits
 *     with the reason;
 *   - `simulate`: minMember 4, maxMember 8 with room for 6: 6 placed, 2 wait;
 *   - a bad maxMember (below minMember) is refused naming the field;
 *   - PyTorchJob spec.elasticPolicy: minReplicas..maxReplicas workers; a
 *     Kubeflow job's runPolicy.schedulingPolicy.minAvailable (an MPIJob);
 *   - preemption takes members above minMember first (those where the room
 *     is, youngest first) before any whole gang (even one of lower
 *     priority); when they are not enough the elastic gang goes whole, never
 *     below its minMember;
 *   - growth is woken when room frees (an engine on a test clock) and never
 *     preempts for its extras;
 *   - `simulate --replay`: a preempted extra leaves its gang's run, which
 *     goes on (no rerun of the whole gang);
 *   - with sub-groups: the cap never starts a sub-group below its own
 *     minMember (it waits whole), preemption takes extras only from
 *     sub-groups above their own minMember, and growth puts each sub-group's
 *     new members inside the domain its running members hold. */
#include "testutil.h"
#include "config/policy.h"
#include "scheduler/elastic.h"
#include "scheduler/engine.h"
#include "scheduler/internal.h" /* the engine test embeds an engine */
#include "scheduler/sim/load.h"
#include "scheduler/sim/replay.h"
#include "scheduler/sim/simulate.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/yamljson.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
    "placement: {defaultPreferred: rack}\n";

/* n nodes "<rack>-n<i>" of 8 GPUs in rack `rack`. */
static void rack(char **y, const char *rk, int n)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s-n%d", rk, i);
        tu_node(y, name, "", rk, 8, NULL);
    }
}

/* A PodGroup of priority prio (PriorityClass p<prio>); max 0: no maxMember. */
static void group(char **y, const char *name, int min, int max, int prio, const char *topo)
{
    tu_cat(y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
              "metadata: {name: p%d}\nvalue: %d\n", prio, prio);
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
              "metadata: {name: %s, namespace: ml, creationTimestamp: '2026-01-01T00:00:00Z'}\n"
              "spec: {minMember: %d, priorityClassName: p%d", name, min, prio);
    if (max)
        tu_cat(y, ", maxMember: %d", max);
    tu_cat(y, "%s%s}\n", topo ? ", " : "", topo ? topo : "");
}

/* A running pod of `grp` (NULL: none) on node, created at `created`, owned by a Job. */
static void bound(char **y, const char *name, const char *grp, const char *node,
                  const char *created)
{
    tu_cat(y, "---\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n  creationTimestamp: '%s'\n",
           name, created);
    if (grp)
        tu_cat(y, "  labels: {topogang.io/pod-group: %s}\n", grp);
    tu_cat(y, "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s, uid: u-%s, "
              "controller: true}]\n", grp ? grp : name, name);
    tu_cat(y, "spec:\n  nodeName: %s\n  schedulerName: topogang\n  containers:\n  - name: c\n"
              "    resources: {requests: {nvidia.com/gpu: 8}}\nstatus: {phase: Running}\n", node);
}

/* n pending pods "<grp>-<first + i>" of 8 GPUs. */
static void pending(char **y, const char *grp, int first, int n)
{
    for (int i = first; i < first + n; i++) {
        char pod[64];
        snprintf(pod, sizeof pod, "%s-%d", grp, i);
        tu_pod(y, pod, grp, "nvidia.com/gpu: 8", NULL);
    }
}

static int placed(const cJSON *g)
{
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods")) n += tu_str(p, "node") != NULL;
    return n;
}

static void has(const char *s, const char *part)
{
    if (!s || !strstr(s, part)) {
        fprintf(stderr, "expected \"%s\" in: %s\n", part, s ? s : "(null)");
        fail();
    }
}

/* el (minMember 2, rack required): el-0, el-1 run in r0, whose third node
 * is free; r1 has two free nodes. el-2 and el-3 grow into r0 only: one
 * placed on r0-n2, one waits, with the numbers. */
static void grows_inside_its_domain(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 3);
    rack(&y, "r1", 2);
    group(&y, "el", 2, 0, 10, "topology: {required: rack}");
    bound(&y, "el-0", "el", "r0-n0", "2026-01-01T00:00:00Z");
    bound(&y, "el-1", "el", "r0-n1", "2026-01-01T00:00:00Z");
    pending(&y, "el", 2, 2);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_non_null(g);
    assert_int_equal(placed(g), 1);
    const char *n2 = tu_node_of(res, "ml/el-2"), *n3 = tu_node_of(res, "ml/el-3");
    const char *on = n2 ? n2 : n3;
    assert_non_null(on);
    assert_string_equal(on, "r0-n2");
    has(tu_str(g, "reason"), "elastic: 3 placed (minMember 2, desired 4); 1 wait for room");
    /* its own rack in numbers, not the other rack it may not use */
    has(tu_str(g, "reason"), "growth for rack r0: 0 of 3 nodes in the rack have room for 1 x "
                             "nvidia.com/gpu=8");
    assert_null(strstr(tu_str(g, "reason"), "r1"));
    cJSON_Delete(res);
    free(y);
}

/* An elastic gang with no required level: its domain is the whole cluster,
 * and the reason says so (not "growth for cluster :", the empty name it
 * printed). el (minMember 2) runs on both nodes of r0, the only rack;
 * el-2 waits for room anywhere. */
static void growth_anywhere_named(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 2);
    group(&y, "el", 2, 0, 10, NULL);
    bound(&y, "el-0", "el", "r0-n0", "2026-01-01T00:00:00Z");
    bound(&y, "el-1", "el", "r0-n1", "2026-01-01T00:00:00Z");
    pending(&y, "el", 2, 1);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_non_null(g);
    assert_int_equal(placed(g), 0);
    const char *why = tu_str(g, "reason");
    assert_non_null(why);
    assert_string_equal(why, "elastic: 2 placed (minMember 2, desired 3); 1 wait for room in its "
                             "domain (growth does not preempt): growth anywhere in the cluster: 0 "
                             "of 2 nodes in the cluster have room for 1 x nvidia.com/gpu=8");
    cJSON_Delete(res);
    free(y);
}

/* Nodes "<rk>-<cl>-n<i>" of 8 GPUs in rack rk, NVLink domain cl. */
static void clique(char **y, const char *rk, const char *cl, int n)
{
    for (int i = 0; i < n; i++) {
        char name[48], labels[200];
        snprintf(name, sizeof name, "%s-%s-n%d", rk, cl, i);
        snprintf(labels, sizeof labels, "topogang.io/rack: %s, nvidia.com/gpu.clique: %s, "
                 "kubernetes.io/hostname: %s", rk, cl, name);
        tu_node_labels(y, name, labels, 8);
    }
}

/* Placed members of gang g whose node name starts with prefix. */
static int placed_in(const cJSON *g, const char *prefix)
{
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods"))
    {
        const char *node = tu_str(p, "node");
        n += node && !strncmp(node, prefix, strlen(prefix));
    }
    return n;
}

/* An elastic gang's first domain is chosen for its desired size: minMember
 * 4, maxMember 8, required rack, preferred NVLink domain. Rack r0 is one
 * NVLink domain of 4 free nodes (it holds minMember at the preferred level,
 * but the gang could never grow there); rack r1 holds all 8 in NVLink
 * domains of 3, 3 and 2. All 8 go to r1. With r1 too small for 8 (two
 * domains of 3) no domain holds the desired size: the gang still starts,
 * with minMember at least (never made to wait). */
static void domain_for_desired_size(void **state)
{
    (void)state;
    static const char *pol =
        "topology:\n  levels:\n"
        "    - {name: rack, nodeLabel: topogang.io/rack}\n"
        "    - {name: nvlink-domain, nodeLabel: nvidia.com/gpu.clique}\n"
        "    - {name: node, nodeLabel: kubernetes.io/hostname}\n";
    for (int small = 0; small < 2; small++) {
        char *y = NULL;
        clique(&y, "r0", "c0", 4);
        clique(&y, "r1", "c1", 3);
        clique(&y, "r1", "c2", 3);
        if (!small)
            clique(&y, "r1", "c3", 2);
        group(&y, "el", 4, 8, 10, "topology: {required: rack, preferred: nvlink-domain}");
        pending(&y, "el", 0, 8);
        cJSON *res = tu_simulate(pol, y);
        const cJSON *g = tu_gang(res, "ml/el");
        assert_non_null(g);
        assert_string_equal(tu_str(g, "status"), "Scheduled");
        if (!small) {
            assert_int_equal(placed(g), 8);
            assert_int_equal(placed_in(g, "r1-"), 8);
        } else {
            assert_true(placed(g) >= 4);
        }
        cJSON_Delete(res);
        free(y);
    }
}

/* minMember 2, maxMember 3, five pods, room for all: three placed. */
static void desired_bound(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 8);
    group(&y, "el", 2, 3, 10, NULL);
    pending(&y, "el", 0, 5);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(g), 3);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(g, "maxMember")->valueint, 3);
    has(tu_str(g, "reason"), "elastic: 3 placed of maxMember 3; 2 member(s) beyond it wait");
    cJSON_Delete(res);
    free(y);
}

/* At the cap the lowest ranks are placed: five ranked pods listed from
 * rank 4 down, maxMember 3: ranks 0, 1, 2 placed. */
static void cap_keeps_lowest_ranks(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 8);
    group(&y, "el", 2, 3, 10, NULL);
    for (int r = 4; r >= 0; r--)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: el-%d\n  namespace: ml\n"
                   "  labels: {topogang.io/pod-group: el, topogang.io/rank: \"%d\"}\n"
                   "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                   "    resources: {requests: {nvidia.com/gpu: 8}}\n", r, r);
    cJSON *res = tu_simulate(POLICY, y);
    for (int r = 0; r < 5; r++) {
        char pod[16];
        snprintf(pod, sizeof pod, "ml/el-%d", r);
        if (r < 3)
            assert_non_null(tu_node_of(res, pod));
        else
            assert_null(tu_node_of(res, pod));
    }
    cJSON_Delete(res);
    free(y);
}

/* The case: minMember 4, maxMember 8, eight pods; the rack has room
 * for 6. Six placed, the status says two wait. */
static void six_of_eight(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 6);
    group(&y, "el", 4, 8, 10, "topology: {required: rack}");
    pending(&y, "el", 0, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(g), 6);
    has(tu_str(g, "reason"), "elastic: 6 placed (minMember 4, desired 8); 2 wait for room");
    cJSON_Delete(res);
    free(y);
}

static char msgs[2048];
static void capture(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                    const char *msg)
{
    (void)ud;
    (void)at;
    size_t n = strlen(msgs);
    snprintf(msgs + n, sizeof msgs - n, "%s %s %s: %s\n", is_error ? "E" : "W", what, field, msg);
}

static int take(void *ud, cJSON *root, const struct tg_yaml_lines *lines)
{
    (void)lines;
    *(cJSON **)ud = root;
    return 1;
}

/* maxMember is decoded; one below minMember is refused naming the object
 * and the field, and `simulate` still places the other gang. */
static void bad_max_member(void **state)
{
    (void)state;
    char buf[256];
    struct tg_diag d = {capture, NULL, 0, 0};
    struct tg_sb err = {0};
    struct tg_podgroup *pg = NULL;
    for (int max = 5; max >= 2; max -= 3) {
        cJSON *j = NULL;
        snprintf(buf, sizeof buf, "kind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
                                  "spec: {minMember: 3, maxMember: %d}\n", max);
        assert_int_equal(tg_yaml_parse(buf, strlen(buf), "t", take, &j, &err), 0);
        msgs[0] = 0;
        int rc = tg_podgroup_decode(j, &d, &pg);
        cJSON_Delete(j);
        if (max == 5) {
            assert_int_equal(rc, 0);
            assert_int_equal(pg->max_member, 5);
            tg_podgroup_free(&pg);
        } else {
            assert_int_equal(rc, TG_EPARSE);
            has(msgs, "PodGroup ml/g spec.maxMember: must be at least spec.minMember (3), not 2");
        }
    }
    char *y = NULL;
    rack(&y, "r0", 2);
    group(&y, "bad", 3, 2, 10, NULL);
    pending(&y, "bad", 0, 3);
    group(&y, "ok", 1, 0, 10, NULL);
    pending(&y, "ok", 0, 1);
    cJSON *res = tu_simulate(POLICY, y);
    assert_int_equal(placed(tu_gang(res, "ml/ok")), 1);
    assert_int_equal(placed(tu_gang(res, "ml/bad")), 0);
    cJSON_Delete(res);
    tg_sb_free(&err);
    free(y);
}

/* A PyTorchJob of 1 Master + 4 Workers with elasticPolicy 2..4: minMember
 * 3 (the master and two workers), maxMember 5; a rack of 3 nodes places 3. */
static void pytorchjob_elastic_policy(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 3);
    tu_cat(&y, "---\napiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
               "metadata: {name: pt, namespace: ml, uid: uid-pt}\n"
               "spec:\n  elasticPolicy: {minReplicas: 2, maxReplicas: 4}\n"
               "  pytorchReplicaSpecs:\n    Master: {replicas: 1}\n    Worker: {replicas: 4}\n");
    for (int i = 0; i < 5; i++)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pt-%d\n  namespace: ml\n"
                   "  ownerReferences: [{apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: pt, "
                   "uid: uid-pt, controller: true}]\n"
                   "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                   "    resources: {requests: {nvidia.com/gpu: 8}}\n", i);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/PyTorchJob/pt");
    assert_non_null(g);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(g, "minMember")->valueint, 3);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(g, "maxMember")->valueint, 5);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(g), 3);
    has(tu_str(g, "reason"), "elastic: 3 placed (minMember 3, desired 5); 2 wait for room");
    cJSON_Delete(res);
    free(y);
}

/* An MPIJob (kubeflow.org/v1) of 1 Launcher + 4 Workers with
 * runPolicy.schedulingPolicy.minAvailable 3 (elastic Horovod): minMember 3,
 * no maxMember; a rack of 3 nodes places 3, the other 2 wait. */
static void mpijob_min_available(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 3);
    tu_cat(&y, "---\napiVersion: kubeflow.org/v1\nkind: MPIJob\n"
               "metadata: {name: hv, namespace: ml, uid: uid-hv}\n"
               "spec:\n  runPolicy: {schedulingPolicy: {minAvailable: 3}}\n"
               "  mpiReplicaSpecs:\n    Launcher: {replicas: 1}\n    Worker: {replicas: 4}\n");
    for (int i = 0; i < 5; i++)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: hv-%d\n  namespace: ml\n"
                   "  ownerReferences: [{apiVersion: kubeflow.org/v1, kind: MPIJob, name: hv, "
                   "uid: uid-hv, controller: true}]\n"
                   "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                   "    resources: {requests: {nvidia.com/gpu: 8}}\n", i);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/MPIJob/hv");
    assert_non_null(g);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(g, "minMember")->valueint, 3);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(g, "maxMember")));
    assert_int_equal(placed(g), 3);
    has(tu_str(g, "reason"), "elastic: 3 placed (minMember 3, desired 5); 2 wait for room");
    cJSON_Delete(res);
    free(y);
}

/* The pods a gang preempted, sorted, "group:pod,pod|..." into buf. */
static const char *victims(const cJSON *g, char *buf, size_t n)
{
    buf[0] = 0;
    const cJSON *p, *q;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "preempts"))
    {
        const char *grp = tu_str(p, "podGroup");
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s:", buf[0] ? "|" : "", grp ? grp : "-");
        int k = 0;
        cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(p, "pods"))
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", k++ ? "," : "",
                     cJSON_IsString(q) ? q->valuestring : tu_str(q, "pod"));
    }
    return buf;
}

/* Adds hi's `want` pending pods to *y, simulates, and checks hi is placed
 * whole after evicting `expect` (victims()'s form); frees *y. */
static void hi_takes(char **y, int want, const char *expect)
{
    pending(y, "hi", 0, want);
    cJSON *res = tu_simulate(POLICY, *y);
    const cJSON *g = tu_gang(res, "ml/hi");
    assert_non_null(g);
    char buf[512];
    assert_string_equal(victims(g, buf, sizeof buf), expect);
    assert_int_equal(placed(g), want);
    cJSON_Delete(res);
    free(*y);
    *y = NULL;
}

/* el's four running members el-0..el-3 on nodes[i], created at[i]. */
static void el_members(char **y, const char *const nodes[4], const char *const at[4])
{
    for (int i = 0; i < 4; i++) {
        char pod[16];
        snprintf(pod, sizeof pod, "el-%d", i);
        bound(y, pod, "el", nodes[i], at[i]);
    }
}

/* r0: elastic el (priority 20, minMember 2) runs 4 members, el-2 and el-3
 * the youngest; r1: whole gang w (priority 10, minMember 4). A gang of
 * priority 100 needing 2 nodes in a rack takes el's two youngest extras,
 * not w (whose priority is lower, but which would go whole). */
static void extras_preempted_first(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 4);
    rack(&y, "r1", 4);
    group(&y, "el", 2, 0, 20, NULL);
    group(&y, "w", 4, 0, 10, NULL);
    group(&y, "hi", 2, 0, 100, "topology: {required: rack}");
    el_members(&y, (const char *const[]){"r0-n0", "r0-n1", "r0-n2", "r0-n3"},
               (const char *const[]){"2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z",
                                     "2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"});
    for (int i = 0; i < 4; i++) {
        char pod[16], node[16];
        snprintf(pod, sizeof pod, "w-%d", i);
        snprintf(node, sizeof node, "r1-n%d", i);
        bound(&y, pod, "w", node, "2026-01-01T00:00:00Z");
    }
    hi_takes(&y, 2, "-:ml/el-2|-:ml/el-3");
}

/* el (minMember 2, priority 20) spans two racks of 3: its older el-0, el-1
 * in r0 (whose third node is free), its younger el-2, el-3 in r1, whose
 * third node runs a gang of priority 1000. A gang of priority 100 needing 3
 * nodes of a rack takes el-0 and el-1 (the spare members where the room is),
 * not el's youngest (freeing nothing useful) nor el whole. */
static void spare_members_where_the_room_is(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 3);
    rack(&y, "r1", 3);
    group(&y, "el", 2, 0, 20, NULL);
    group(&y, "vip", 1, 0, 1000, NULL);
    group(&y, "hi", 3, 0, 100, "topology: {required: rack}");
    el_members(&y, (const char *const[]){"r0-n0", "r0-n1", "r1-n0", "r1-n1"},
               (const char *const[]){"2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z",
                                     "2026-01-01T01:00:00Z", "2026-01-01T01:00:00Z"});
    bound(&y, "vip-0", "vip", "r1-n2", "2026-01-01T00:00:00Z");
    hi_takes(&y, 3, "-:ml/el-0|-:ml/el-1");
}

/* Only rack r0 (4 nodes), all el's (minMember 2). A gang needing 3 nodes:
 * el's two extras are not enough and el never runs below its minMember,
 * so el goes whole (all four members), as a gang without extras would. */
static void core_goes_whole(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 4);
    group(&y, "el", 2, 0, 20, NULL);
    group(&y, "hi", 3, 0, 100, "topology: {required: rack}");
    for (int i = 0; i < 4; i++) {
        char pod[16], node[16];
        snprintf(pod, sizeof pod, "el-%d", i);
        snprintf(node, sizeof node, "r0-n%d", i);
        bound(&y, pod, "el", node, "2026-01-01T00:00:00Z");
    }
    hi_takes(&y, 3, "ml/el:ml/el-0,ml/el-1,ml/el-2,ml/el-3");
}

/* ---- a property test on random racks ------------------------------------------------- */

enum { PNODES = 12, PGANGS = 5 };

static unsigned seed_;
static int rnd(int n)
{
    seed_ = seed_ * 1103515245u + 12345u;
    return (int)((seed_ >> 16) % (unsigned)n);
}

/* Random racks of 8-GPU nodes, each node running one 8-GPU member of a
 * random gang (minMember 1..members, so most have spare members; priority
 * 0-40), and a gang of priority 25 needing `want` nodes of one rack.
 * Whatever simulate decides:
 *   - no gang runs below its minMember: its members evicted one by one are
 *     at most its spare (members - minMember), and a gang evicted whole
 *     has none evicted one by one; all victims are of priority < 25;
 *   - when a whole gang is evicted, no rack could have been freed by
 *     evicting spare members only (brute force over every subset of the
 *     eligible members taking at most the spare of each gang). */
static void property_extras_first(void **state)
{
    (void)state;
    for (unsigned run = 0; run < 100; run++) {
        seed_ = 7919u * run + 17u;
        int nracks = 2 + rnd(2), nn = 0, rack_of[PNODES], owner[PNODES];
        char *y = NULL;
        for (int r = 0; r < nracks; r++)
            for (int i = 0, k = 2 + rnd(3); i < k && nn < PNODES; i++, nn++) {
                char n[16], rk[8];
                snprintf(n, sizeof n, "n%02d", nn);
                snprintf(rk, sizeof rk, "r%d", r);
                rack_of[nn] = r;
                owner[nn] = -1;
                tu_node(&y, n, "", rk, 8, NULL);
            }
        int ng = 1 + rnd(PGANGS), prio[PGANGS], min[PGANGS], members[PGANGS] = {0};
        for (int i = 0; i < nn; i++)
            if (rnd(5)) /* most nodes busy */
                owner[i] = rnd(ng);
        for (int i = 0; i < nn; i++)
            if (owner[i] >= 0)
                members[owner[i]]++;
        int nextra = 0, extra_node[PNODES], extra_gang[PNODES];
        for (int g = 0; g < ng; g++) {
            prio[g] = rnd(5) * 10;
            min[g] = members[g] ? 1 + rnd(members[g]) : 1;
            char gname[8];
            snprintf(gname, sizeof gname, "g%d", g);
            group(&y, gname, min[g], 0, prio[g], NULL);
            /* members created a minute apart in node order: ages differ */
            for (int i = 0, k = 0; i < nn; i++) {
                if (owner[i] != g)
                    continue;
                char pod[16], node[16], at[40];
                snprintf(pod, sizeof pod, "g%d-%d", g, k);
                snprintf(node, sizeof node, "n%02d", i);
                snprintf(at, sizeof at, "2026-01-01T00:%02d:00Z", i);
                bound(&y, pod, gname, node, at);
                k++;
            }
            for (int i = 0; i < nn && prio[g] < 25 && members[g] > min[g]; i++)
                if (owner[i] == g) {
                    extra_gang[nextra] = g;
                    extra_node[nextra++] = i;
                }
        }
        int want = 1 + rnd(3);
        group(&y, "pre", want, 0, 25, "topology: {required: rack}");
        pending(&y, "pre", 0, want);
        cJSON *res = tu_simulate(POLICY, y);
        const cJSON *pre = tu_gang(res, "ml/pre"), *v, *q;
        assert_non_null(pre);
        int alone[PGANGS] = {0}, whole[PGANGS] = {0}, any_whole = 0;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(pre, "preempts"))
        {
            const char *grp = tu_str(v, "podGroup");
            cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(v, "pods"))
            {
                int g = -1, k = -1;
                assert_int_equal(sscanf(cJSON_IsString(q) ? q->valuestring : tu_str(q, "pod"),
                                        "ml/g%d-%d", &g, &k), 2);
                assert_true(g >= 0 && g < ng);
                assert_true(prio[g] < 25);
                if (grp) {
                    whole[g] = 1;
                    any_whole = 1;
                } else {
                    alone[g]++;
                    assert_true(k < members[g]);
                }
            }
        }
        for (int g = 0; g < ng; g++) {
            assert_true(alone[g] <= (members[g] > min[g] ? members[g] - min[g] : 0));
            assert_false(whole[g] && alone[g]);
        }
        if (any_whole) { /* no subset of extras alone frees `want` nodes of a rack */
            for (int mask = 0; mask < (1 << nextra); mask++) {
                int took[PGANGS] = {0}, ok = 1;
                for (int b = 0; b < nextra; b++)
                    took[extra_gang[b]] += mask >> b & 1;
                for (int g = 0; g < ng; g++)
                    ok &= took[g] <= members[g] - min[g];
                for (int r = 0; r < nracks && ok; r++) {
                    int free_ = 0;
                    for (int i = 0; i < nn; i++) {
                        int gone = owner[i] < 0;
                        for (int b = 0; b < nextra && !gone; b++)
                            gone = (mask >> b & 1) && extra_node[b] == i;
                        free_ += rack_of[i] == r && gone;
                    }
                    if (free_ >= want)
                        fail_msg("run %u: a whole gang evicted, but evicting spare members frees "
                                 "rack r%d", run, r);
                }
            }
        }
        cJSON_Delete(res);
        free(y);
    }
}

/* ---- the engine: growth woken by room freed, never by preemption --------------------- */

static int64_t clock_ms;
static int64_t test_clock(void *ud)
{
    (void)ud;
    return clock_ms;
}

/* Rack r0 of 3 nodes; r0-n2 holds a pod of lower priority (evictable).
 * el (minMember 2, priority 50) places 2; its third member waits, without
 * preempting the pod. The pod's end wakes it: the third is placed on r0-n2. */
static void growth_woken_by_room(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 3);
    group(&y, "el", 2, 0, 50, "topology: {required: rack}");
    bound(&y, "lone", NULL, "r0-n2", "2026-01-01T00:00:00Z");
    pending(&y, "el", 0, 3);
    struct tg_simdata d;
    struct tg_sb err = {0};
    tg_simdata_init(&d);
    d.quiet = 1;
    assert_int_equal(tg_simdata_load_string(&d, y, strlen(y), "t.yaml", &err), 0);
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "policy", &pol, &err), 0);
    struct tg_engine e;
    struct tg_clock clk = {test_clock, NULL};
    clock_ms = 1000000;
    assert_int_equal(tg_engine_init(&e, &pol, &clk), 0);
    for (uint32_t i = 0; i < d.nnodes; i++)
        assert_int_equal(tg_engine_node_set(&e, tg_node_clone(d.nodes[i])), 0);
    for (uint32_t i = 0; i < d.npcs; i++)
        assert_int_equal(tg_engine_pclass_set(&e, d.pcs[i].name, &d.pcs[i].pc), 0);
    tg_engine_podgroup_set(&e, d.pgs[0]);
    for (uint32_t i = 0; i < d.npods; i++) {
        struct tg_pod *p = d.pods[i].pod;
        assert_int_equal(p->node ? tg_engine_bound_set(&e, p) : tg_engine_pending_set(&e, p), 0);
    }
    struct tg_decision dc;
    assert_int_equal(tg_engine_next(&e, &dc), 0);
    assert_int_equal(dc.kind, TG_D_PLACE);
    assert_int_equal(dc.result.nplaced, 2);
    struct tg_grec *g = dc.gang;
    tg_decision_free(&dc);
    tg_engine_bind_done(&e, g, 1, 0);
    assert_int_equal(g->nmembers, 2);
    assert_int_equal(tg_engine_next(&e, &dc), 0);
    assert_int_equal(dc.kind, TG_D_UNSCHEDULABLE); /* not PREEMPT: growth waits */
    has(dc.reason, "elastic: 2 placed (minMember 2, desired 3); 1 wait for room");
    tg_decision_free(&dc);
    clock_ms += 5000; /* past its backoff: nothing due until room frees */
    assert_int_equal(tg_engine_next(&e, &dc), 0);
    assert_int_equal(dc.kind, TG_D_NONE);
    tg_decision_free(&dc);
    tg_engine_bound_gone(&e, "ml/lone");
    assert_int_equal(tg_engine_next(&e, &dc), 0);
    assert_int_equal(dc.kind, TG_D_PLACE);
    assert_int_equal(dc.view.npods, 1);
    assert_string_equal(tg_str(tg_engine_cluster(&e)->nodes[dc.result.slot[0]].name), "r0-n2");
    tg_decision_free(&dc);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    tg_sb_free(&err);
    free(y);
}

/* ---- the replay: an extra preempted leaves its run, the gang runs on ---------------- */

/* Rack r0 of 3 nodes. el (minMember 2, priority 10: el-0 and el-1 from 0 s,
 * el-2 from 60 s, each for 1 h, grace 60 s) runs; hi (one pod, priority
 * 1000) arrives at 1800 s. It evicts el-2 alone (a member above minMember,
 * the youngest: the least work lost), starts when el-2 is gone, and el's
 * one run goes on to complete at 3600 s: no rerun of the gang. */
static void replay_extra_leaves_its_run(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 3);
    tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
               "metadata: {name: low}\nvalue: 10\n---\napiVersion: scheduling.k8s.io/v1\n"
               "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
               "metadata: {name: el, namespace: ml, creationTimestamp: '2026-01-01T00:00:00Z'}\n"
               "spec: {minMember: 2, priorityClassName: low}\n");
    const char *names[] = {"el-0", "el-1", "el-2", "hi"};
    for (int i = 0; i < 4; i++)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
                   "  creationTimestamp: '2026-01-01T00:%s:00Z'\n%s"
                   "  annotations: {simulate.topogang.io/duration: \"%s\"}\n"
                   "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s, uid: u-%s, "
                   "controller: true}]\nspec:\n  schedulerName: topogang\n  priorityClassName: %s\n"
                   "  terminationGracePeriodSeconds: 60\n"
                   "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: 8}}}]\n",
               names[i], i < 2 ? "00" : i == 2 ? "01" : "30", i < 3 ? "  labels: {topogang.io/pod-group: el}\n" : "",
               i < 3 ? "1h" : "10m", i < 3 ? "el" : "hi", i < 3 ? "el" : "hi", i < 3 ? "low" : "high");
    struct tg_simdata d;
    struct tg_sb err = {0}, out = {0};
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "policy", &pol, &err), 0);
    tg_simdata_init(&d);
    d.quiet = 1;
    assert_int_equal(tg_simdata_load_string(&d, y, strlen(y), "t.yaml", &err), 0);
    struct tg_replay_opts o = {.until_ms = -1};
    struct tg_replay *r = tg_replay_new(&d, &pol, &o);
    assert_non_null(r);
    assert_int_equal(tg_replay_run(r), 0);
    tg_replay_json(r, &out);
    cJSON *res = cJSON_Parse(tg_sb_str(&out));
    assert_non_null(res);
    const cJSON *el = tu_gang(res, "ml/el"), *hi = tu_gang(res, "ml/hi");
    assert_non_null(el);
    assert_non_null(hi);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(el, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), 1);
    const cJSON *r0 = cJSON_GetArrayItem(runs, 0);
    assert_string_equal(tu_str(r0, "reason"), "completed");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(r0, "end")->valueint, 3600);
    const cJSON *pre = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(hi, "preempts"), 0);
    assert_non_null(pre);
    const cJSON *pods = cJSON_GetObjectItemCaseSensitive(pre, "pods");
    assert_int_equal(cJSON_GetArraySize(pods), 1);
    assert_string_equal(cJSON_GetArrayItem(pods, 0)->valuestring, "ml/el-2");
    const cJSON *hr = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(hi, "runs"), 0);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(hr, "start")->valueint, 1860);
    cJSON_Delete(res);
    tg_replay_free(&r);
    tg_simdata_free(&d);
    tg_sb_free(&out);
    tg_sb_free(&err);
    free(y);
}

/* ---- sub-groups ------------------------------------------------------------------ */

/* A pod of el in sub-group sg: running on node (created at `created`), or
 * pending (node NULL). */
static void sg_member(char **y, const char *name, const char *sg, const char *node,
                      const char *created)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
              "  creationTimestamp: '%s'\n  labels: {topogang.io/pod-group: el, topogang.io/sub-group: %s}\n"
              "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: el, uid: u-%s, controller: true}]\n"
              "spec:\n%s%s%s  schedulerName: topogang\n  containers:\n  - name: c\n"
              "    resources: {requests: {nvidia.com/gpu: 8}}\n%s",
           name, created ? created : "2026-01-01T00:00:00Z", sg, name, node ? "  nodeName: " : "",
           node ? node : "", node ? "\n" : "", node ? "status: {phase: Running}\n" : "");
}

/* Of ml/el-0..n-1 (sub-groups of 4 consecutive ranks), ranks 0-7 are
 * placed, each sub-group in one rack (its first two letters of node name,
 * into rk[0], rk[1]), and the rest are not. */
static void ranks_0_7_by_rack(const cJSON *res, int n, char rk[2][8])
{
    rk[0][0] = rk[1][0] = 0;
    for (int r = 0; r < n; r++) {
        char pod[16];
        snprintf(pod, sizeof pod, "ml/el-%d", r);
        const char *node = tu_node_of(res, pod);
        if (r >= 8) {
            assert_null(node);
            continue;
        }
        assert_non_null(node);
        if (!rk[r / 4][0])
            snprintf(rk[r / 4], sizeof rk[0], "%.2s", node);
        assert_memory_equal(rk[r / 4], node, 2); /* each sub-group in one rack */
    }
}

/* minMember 8, maxMember 9, sub-groups of 4 consecutive ranks (each in one
 * rack), twelve pods, room for all: ranks 0-7 placed (two whole
 * sub-groups); rank 8 alone would start sub-group 2 below its minMember, so
 * it waits whole. Before, the cap kept ranks 0-8 and the gang waited:
 * "sub-group 2 ... has 1 of its minMember 4 pods". */
static void cap_keeps_subgroups_whole(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 4);
    rack(&y, "r1", 4);
    rack(&y, "r2", 4);
    group(&y, "el", 8, 9, 10, "subGroupSize: 4, subGroupTopology: {required: rack}");
    for (int r = 11; r >= 0; r--)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: el-%d\n  namespace: ml\n"
                   "  labels: {topogang.io/pod-group: el, topogang.io/rank: \"%d\"}\n"
                   "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                   "    resources: {requests: {nvidia.com/gpu: 8}}\n", r, r);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(g), 8);
    char rk[2][8];
    ranks_0_7_by_rack(res, 12, rk);
    cJSON_Delete(res);
    free(y);
}

/* minMember 8, maxMember 16, sub-groups of 4 consecutive ranks (each in
 * one rack), sixteen pods, room for two sub-groups only (racks r0, r1 of 4
 * nodes, r2 of 3): not whole at its desired size, it starts at minMember
 * (ranks 0-7, two whole sub-groups, each in one rack) instead of waiting.
 * Before, every sub-group it started was required: "sub-group 2: no rack
 * ... has room" and nothing placed. */
static void subgroups_start_at_min(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 4);
    rack(&y, "r1", 4);
    rack(&y, "r2", 3);
    group(&y, "el", 8, 16, 10, "subGroupSize: 4, subGroupTopology: {required: rack}");
    for (int r = 0; r < 16; r++)
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: el-%d\n  namespace: ml\n"
                   "  labels: {topogang.io/pod-group: el, topogang.io/rank: \"%d\"}\n"
                   "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                   "    resources: {requests: {nvidia.com/gpu: 8}}\n", r, r);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_non_null(g);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(placed(g), 8);
    char rk[2][8];
    ranks_0_7_by_rack(res, 16, rk);
    assert_string_not_equal(rk[0], "r2");
    assert_string_not_equal(rk[1], "r2");
    cJSON_Delete(res);
    free(y);
}

/* el (minMember 3; sub-groups a: minMember 2, b: minMember 1) runs a0, a1
 * (the youngest) and b0, b1 in r0, b2 in r1 beside a gang of priority 1000.
 * A gang of priority 100 needing two nodes of a rack takes b0 and b1 (b can
 * spare two), never a0 and a1 (a would go below its minMember), nor el
 * whole. Before, the youngest extras went: a0 and a1. */
static void extras_respect_subgroup_min(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 4);
    rack(&y, "r1", 2);
    group(&y, "el", 3, 0, 20, "subGroups: [{name: a, minMember: 2}, {name: b, minMember: 1}]");
    group(&y, "vip", 1, 0, 1000, NULL);
    group(&y, "hi", 2, 0, 100, "topology: {required: rack}");
    sg_member(&y, "el-a0", "a", "r0-n0", "2026-01-01T02:00:00Z");
    sg_member(&y, "el-a1", "a", "r0-n1", "2026-01-01T02:00:00Z");
    sg_member(&y, "el-b0", "b", "r0-n2", "2026-01-01T00:00:00Z");
    sg_member(&y, "el-b1", "b", "r0-n3", "2026-01-01T00:00:00Z");
    sg_member(&y, "el-b2", "b", "r1-n0", "2026-01-01T00:00:00Z");
    bound(&y, "vip-0", "vip", "r1-n1", "2026-01-01T00:00:00Z");
    hi_takes(&y, 2, "-:ml/el-b0|-:ml/el-b1");
}

/* el (minMember 4, maxMember 6; sub-groups a and b of minMember 2, each in
 * one rack) runs a0, a1 in r0 and b0, b1 in r1; a2 and b2 are pending. Each
 * grows into its own sub-group's rack (r0-n2, r1-n2), not the empty r2.
 * Before, a gang with sub-groups and members bound was refused. */
static void growth_inside_subgroup_domains(void **state)
{
    (void)state;
    char *y = NULL;
    rack(&y, "r0", 3);
    rack(&y, "r1", 3);
    rack(&y, "r2", 3);
    group(&y, "el", 4, 6, 10, "subGroups: [{name: a, minMember: 2, topology: {required: rack}}, "
                              "{name: b, minMember: 2, topology: {required: rack}}]");
    sg_member(&y, "el-a0", "a", "r0-n0", NULL);
    sg_member(&y, "el-a1", "a", "r0-n1", NULL);
    sg_member(&y, "el-b0", "b", "r1-n0", NULL);
    sg_member(&y, "el-b1", "b", "r1-n1", NULL);
    sg_member(&y, "el-a2", "a", NULL, NULL);
    sg_member(&y, "el-b2", "b", NULL, NULL);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_non_null(g);
    const char *a2 = tu_node_of(res, "ml/el-a2"), *b2 = tu_node_of(res, "ml/el-b2");
    if (!a2 || !b2)
        fail_msg("not grown: %s", tu_str(g, "reason"));
    assert_string_equal(a2, "r0-n2");
    assert_string_equal(b2, "r1-n2");
    cJSON_Delete(res);
    free(y);

    /* r0 full (another gang on r0-n2): a2 waits (it may not leave r0), b2
     * grows all the same (extras: each sub-group as room allows) */
    y = NULL;
    rack(&y, "r0", 3);
    rack(&y, "r1", 3);
    rack(&y, "r2", 3);
    group(&y, "el", 4, 6, 10, "subGroups: [{name: a, minMember: 2, topology: {required: rack}}, "
                              "{name: b, minMember: 2, topology: {required: rack}}]");
    group(&y, "o", 1, 0, 10, NULL);
    bound(&y, "o-0", "o", "r0-n2", "2026-01-01T00:00:00Z");
    sg_member(&y, "el-a0", "a", "r0-n0", NULL);
    sg_member(&y, "el-a1", "a", "r0-n1", NULL);
    sg_member(&y, "el-b0", "b", "r1-n0", NULL);
    sg_member(&y, "el-b1", "b", "r1-n1", NULL);
    sg_member(&y, "el-a2", "a", NULL, NULL);
    sg_member(&y, "el-b2", "b", NULL, NULL);
    res = tu_simulate(POLICY, y);
    assert_null(tu_node_of(res, "ml/el-a2"));
    assert_string_equal(tu_node_of(res, "ml/el-b2"), "r1-n2");
    cJSON_Delete(res);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grows_inside_its_domain),
        cmocka_unit_test(growth_anywhere_named),
        cmocka_unit_test(domain_for_desired_size),
        cmocka_unit_test(desired_bound),
        cmocka_unit_test(cap_keeps_lowest_ranks),
        cmocka_unit_test(six_of_eight),
        cmocka_unit_test(bad_max_member),
        cmocka_unit_test(pytorchjob_elastic_policy),
        cmocka_unit_test(mpijob_min_available),
        cmocka_unit_test(extras_preempted_first),
        cmocka_unit_test(core_goes_whole),
        cmocka_unit_test(spare_members_where_the_room_is),
        cmocka_unit_test(property_extras_first),
        cmocka_unit_test(growth_woken_by_room),
        cmocka_unit_test(replay_extra_leaves_its_run),
        cmocka_unit_test(cap_keeps_subgroups_whole),
        cmocka_unit_test(subgroups_start_at_min),
        cmocka_unit_test(extras_respect_subgroup_min),
        cmocka_unit_test(growth_inside_subgroup_domains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
