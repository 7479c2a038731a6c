/* Preemption in the scheduling core, through `simulate` (which carries a
 * preemption out at once and reports it in "preempts"):
 *   - cases: the cheapest rack is freed and only it; strictly lower
 *     priority; whole gangs; preemptionPolicy Never; pods without a
 *     controller; PodDisruptionBudgets preferred; no preemption when even
 *     evicting everything cannot help; a gang that outranks a nomination
 *     takes its room;
 *   - a property test on random small clusters against brute force: every
 *     subset of the eligible units is tried; the set chosen must be whole
 *     units of strictly lower priority with a pod in the chosen rack, free
 *     enough room, and cost no more than the cheapest subset of any rack. */
#include "testutil.h"
#include "scheduler/daemon/internal.h"
#include "scheduler/internal.h"
#include "util/intern.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
    "placement: {defaultPreferred: rack}\n";

/* A bound pod of gang `group` (NULL: none) with a controller unless bare. */
static void bound(char **y, const char *name, const char *group, const char *node, int gpus,
                  int bare, const char *created, const char *labels)
{
    tu_cat(y, "---\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
              "  creationTimestamp: '%s'\n", name, created ? created : "2026-01-01T00:00:00Z");
    tu_cat(y, "  labels: {%s%s%s%s}\n", group ? "topogang.io/pod-group: " : "", group ? group : "",
           group && labels ? ", " : "", labels ? labels : "");
    if (!bare)
        tu_cat(y, "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s, uid: u-%s, "
                  "controller: true}]\n", group ? group : name, name);
    tu_cat(y, "spec:\n  nodeName: %s\n  schedulerName: topogang\n  containers:\n  - name: c\n"
              "    resources: {requests: {nvidia.com/gpu: %d}}\nstatus: {phase: Running}\n",
           node, gpus);
}

/* A PodGroup whose priority is prio, from a PriorityClass "p<prio>" (given
 * again each time: `simulate` keeps the last of a name). */
static void group(char **y, const char *name, int min, int prio, const char *topo)
{
    tu_cat(y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
              "metadata: {name: p%d}\nvalue: %d\n", prio, prio);
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
              "metadata: {name: %s, namespace: ml, creationTimestamp: '2026-01-01T00:00:00Z'}\n"
              "spec: {minMember: %d, priorityClassName: p%d%s%s}\n", name, min, prio,
           topo ? ", " : "", topo ? topo : "");
}

/* n pending pods of a gang, each asking g GPUs. */
static void gang(char **y, const char *name, int n, int g)
{
    for (int i = 0; i < n; i++) {
        char pod[64], req[48];
        snprintf(pod, sizeof pod, "%s-%d", name, i);
        snprintf(req, sizeof req, "nvidia.com/gpu: %d", g);
        tu_pod(y, pod, name, req, NULL);
    }
}

/* Two racks of 4 nodes x 8 GPUs. */
static void two_racks(char **y)
{
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++) {
            char n[16], rk[8];
            snprintf(n, sizeof n, "r%d-n%d", r, i);
            snprintf(rk, sizeof rk, "r%d", r);
            tu_node(y, n, "", rk, 8, NULL);
        }
}

static const cJSON *preempts(const cJSON *g)
{
    return cJSON_GetObjectItemCaseSensitive(g, "preempts");
}

/* Names of the podGroups preempted, sorted, comma separated. */
static const char *victim_groups(const cJSON *g, char *buf, size_t n)
{
    const char *v[32];
    int k = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, preempts(g)) v[k++] = tu_str(p, "podGroup") ? tu_str(p, "podGroup") : "(pod)";
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    buf[0] = 0;
    for (int i = 0; i < k; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? "," : "", v[i]);
    return buf;
}

/* Rack r0: two low gangs (priority 10), 2 nodes each. Rack r1: a low gang
 * and a medium one (priority 50). A rack-required gang of priority 100 for
 * 4 nodes frees r0: the highest victim priority is lower there. */
static void test_cheapest_rack(void **state)
{
    (void)state;
    char *y = NULL;
    two_racks(&y);
    group(&y, "low-a", 2, 10, NULL);
    group(&y, "low-b", 2, 10, NULL);
    group(&y, "low-c", 2, 10, NULL);
    group(&y, "mid", 2, 50, NULL);
    bound(&y, "low-a-0", "low-a", "r0-n0", 8, 0, NULL, NULL);
    bound(&y, "low-a-1", "low-a", "r0-n1", 8, 0, NULL, NULL);
    bound(&y, "low-b-0", "low-b", "r0-n2", 8, 0, NULL, NULL);
    bound(&y, "low-b-1", "low-b", "r0-n3", 8, 0, NULL, NULL);
    bound(&y, "low-c-0", "low-c", "r1-n0", 8, 0, NULL, NULL);
    bound(&y, "low-c-1", "low-c", "r1-n1", 8, 0, NULL, NULL);
    bound(&y, "mid-0", "mid", "r1-n2", 8, 0, NULL, NULL);
    bound(&y, "mid-1", "mid", "r1-n3", 8, 0, NULL, NULL);
    group(&y, "big", 4, 100, "topology: {required: rack}");
    gang(&y, "big", 4, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/big");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "domain"), "r0");
    char buf[256];
    assert_string_equal(victim_groups(g, buf, sizeof buf), "ml/low-a,ml/low-b");
    /* whole gangs: both members of each listed */
    const cJSON *p;
    cJSON_ArrayForEach(p, preempts(g)) assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "pods")), 2);
    for (int i = 0; i < 4; i++) {
        char pod[32];
        snprintf(pod, sizeof pod, "ml/big-%d", i);
        assert_non_null(strstr(tu_node_of(res, pod), "r0-"));
    }
    const cJSON *sum = cJSON_GetObjectItem(res, "summary");
    assert_int_equal(cJSON_GetObjectItem(sum, "preemptions")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(sum, "victimPods")->valueint, 4);
    cJSON_Delete(res);
    free(y);
}

/* Fewer GPUs evicted wins at equal priority: r0 holds one 4-node gang that
 * uses 8 GPUs per node (32), r1 two half-gangs of 4 GPUs a node on each node
 * (gang x: 2 pods, gang y: 2 pods) with room for 4 more per node; the
 * preemptor needs 4 x 8 GPUs... r1 needs both x and y gone (32 GPUs) but
 * a preemptor of 4 x 4 GPUs needs only one of them (16 GPUs). */
static void test_fewest_gpus(void **state)
{
    (void)state;
    char *y = NULL;
    two_racks(&y);
    group(&y, "wide", 4, 10, NULL);
    for (int i = 0; i < 4; i++) {
        char n[16], node[16];
        snprintf(n, sizeof n, "wide-%d", i);
        snprintf(node, sizeof node, "r0-n%d", i);
        bound(&y, n, "wide", node, 8, 0, NULL, NULL);
    }
    group(&y, "x", 4, 10, NULL);
    group(&y, "z", 4, 10, NULL);
    for (int i = 0; i < 4; i++) {
        char n[16], node[16];
        snprintf(node, sizeof node, "r1-n%d", i);
        snprintf(n, sizeof n, "x-%d", i);
        bound(&y, n, "x", node, 4, 0, NULL, NULL);
        snprintf(n, sizeof n, "z-%d", i);
        bound(&y, n, "z", node, 4, 0, NULL, NULL);
    }
    group(&y, "hi", 4, 100, "topology: {required: rack}");
    gang(&y, "hi", 4, 4);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/hi");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "domain"), "r1");
    assert_int_equal(cJSON_GetArraySize(preempts(g)), 1);
    cJSON_Delete(res);
    free(y);
}

/* Same priority is never a victim; PriorityClass preemptionPolicy Never
 * forbids preempting; pods with no controller are safe by default. */
static void test_who_may_be_evicted(void **state)
{
    (void)state;
    for (int c = 0; c < 4; c++) {
        char *y = NULL;
        two_racks(&y);
        tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                   "metadata: {name: polite}\nvalue: 100\npreemptionPolicy: Never\n");
        int prio = c == 0 ? 100 : 10;
        group(&y, "low", 8, prio, NULL);
        for (int i = 0; i < 8; i++) {
            char n[16], node[16];
            snprintf(n, sizeof n, "low-%d", i);
            snprintf(node, sizeof node, "r%d-n%d", i / 4, i % 4);
            bound(&y, n, c == 2 ? NULL : "low", node, 8, c == 2, NULL, NULL);
        }
        if (c == 1)
            tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
                       "metadata: {name: hi, namespace: ml}\n"
                       "spec: {minMember: 2, priorityClassName: polite, topology: {required: rack}}\n");
        else
            group(&y, "hi", 2, 100, "topology: {required: rack}");
        gang(&y, "hi", 2, 8);
        const char *pol = c == 3 ? "topology:\n  levels:\n"
                                   "    - {name: rack, nodeLabel: topogang.io/rack}\n"
                                   "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
                                   "preemption: {enabled: false}\n"
                                 : POLICY;
        cJSON *res = tu_simulate(pol, y);
        const cJSON *g = tu_gang(res, "ml/hi");
        assert_string_equal(tu_str(g, "status"), "Unschedulable");
        assert_int_equal(cJSON_GetArraySize(preempts(g)), 0);
        if (c == 0)
            assert_non_null(strstr(tu_str(g, "reason"), "no gang or pod of lower priority"));
        cJSON_Delete(res);
        free(y);
    }
    /* bare pods may go when the policy says so */
    char *y = NULL;
    two_racks(&y);
    for (int i = 0; i < 8; i++) {
        char n[16], node[16];
        snprintf(n, sizeof n, "lone-%d", i);
        snprintf(node, sizeof node, "r%d-n%d", i / 4, i % 4);
        bound(&y, n, NULL, node, 8, 1, NULL, NULL);
    }
    group(&y, "hi", 2, 100, "topology: {required: rack}");
    gang(&y, "hi", 2, 8);
    cJSON *res = tu_simulate("topology:\n  levels:\n"
                             "    - {name: rack, nodeLabel: topogang.io/rack}\n"
                             "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
                             "preemption: {evictBarePods: true}\n", y);
    const cJSON *g = tu_gang(res, "ml/hi");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(cJSON_GetArraySize(preempts(g)), 2);
    const cJSON *p;
    cJSON_ArrayForEach(p, preempts(g)) assert_true(cJSON_IsNull(cJSON_GetObjectItem(p, "podGroup")));
    cJSON_Delete(res);
    free(y);
}

/* A budget that would be violated in r0 sends the preemptor to r1 although
 * r1 costs more GPUs. */
static void test_pdb_preferred(void **state)
{
    (void)state;
    char *y = NULL;
    two_racks(&y);
    group(&y, "guarded", 2, 10, NULL);
    bound(&y, "guarded-0", "guarded", "r0-n0", 4, 0, NULL, "app: db");
    bound(&y, "guarded-1", "guarded", "r0-n1", 4, 0, NULL, "app: db");
    group(&y, "open", 4, 10, NULL);
    for (int i = 0; i < 4; i++) {
        char n[16], node[16];
        snprintf(n, sizeof n, "open-%d", i);
        snprintf(node, sizeof node, "r1-n%d", i);
        bound(&y, n, "open", node, 8, 0, NULL, NULL);
    }
    tu_cat(&y, "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\n"
               "metadata: {name: db, namespace: ml}\nspec: {minAvailable: 2, selector: {matchLabels: {app: db}}}\n");
    /* r0 has 4 + 4 + 8 + 8 = 24 free: 4 x 8 GPUs does not fit without guarded */
    bound(&y, "filler-0", NULL, "r0-n2", 8, 1, NULL, NULL);
    group(&y, "hi", 2, 100, "topology: {required: rack}");
    gang(&y, "hi", 3, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/hi");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_str(g, "domain"), "r1");
    char buf[128];
    assert_string_equal(victim_groups(g, buf, sizeof buf), "ml/open");
    cJSON_Delete(res);
    free(y);
}

/* Nothing of lower priority could make room: no victims, said once. */
static void test_cannot_help(void **state)
{
    (void)state;
    char *y = NULL;
    two_racks(&y);
    group(&y, "low", 1, 10, NULL);
    bound(&y, "low-0", "low", "r0-n0", 8, 0, NULL, NULL);
    group(&y, "huge", 5, 100, "topology: {required: rack}");
    gang(&y, "huge", 5, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/huge");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_int_equal(cJSON_GetArraySize(preempts(g)), 0);
    assert_non_null(strstr(tu_str(g, "reason"), "preemption cannot help: even with all 1"));
    assert_non_null(strstr(tu_str(g, "reason"), "holds 4 of 5"));
    /* the low gang is still there: bound pods untouched */
    cJSON_Delete(res);
    free(y);
}

/* ---- priority is not a tenant's to set (issue 19) ------------------------------------ */

/* One node of 8 GPUs held by kube-system/dcgm-exporter, a DaemonSet pod of
 * system-node-critical (the class as a real cluster has it), and a tenant's
 * PodGroup team-a/grab asking spec.priority 2147483647 for one 8-GPU pod;
 * extra: more YAML (PriorityClasses). */
static char *escalation(const char *extra)
{
    char *y = NULL;
    tu_node(&y, "gpu-0", "", "r0", 8, NULL);
    tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
               "metadata: {name: system-node-critical}\nvalue: 2000001000\n"
               "---\nkind: Pod\nmetadata:\n  name: dcgm-exporter\n  namespace: kube-system\n"
               "  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: dcgm-exporter, "
               "uid: u-ds, controller: true}]\n"
               "spec:\n  nodeName: gpu-0\n  priorityClassName: system-node-critical\n"
               "  priority: 2000001000\n  containers:\n  - name: c\n"
               "    resources: {requests: {nvidia.com/gpu: 8}}\nstatus: {phase: Running}\n"
               "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
               "metadata: {name: grab, namespace: team-a}\n"
               "spec: {minMember: 1, priority: 2147483647}\n"
               "---\nkind: Pod\nmetadata:\n  name: grab-0\n  namespace: team-a\n"
               "  labels: {topogang.io/pod-group: grab}\n"
               "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
               "    resources: {requests: {nvidia.com/gpu: 8}}\n%s", extra ? extra : "");
    return y;
}

/* The scenario: the tenant's gang waits, dcgm-exporter stays, and the
 * reason says why; with the policy allowing PodGroup priorities, the value is
 * capped at the highest non-system PriorityClass (1,000,000,000 with none),
 * still below every system class. */
static void test_priority_escalation(void **state)
{
    (void)state;
    static const struct {
        const char *policy_extra, *yaml_extra;
        int prio;
        const char *note;
    } cases[] = {
        {"", NULL, 0,
         "PodGroup team-a/grab: spec.priority 2147483647 not honoured (policy "
         "priority.allowPodGroupPriority is false): priority 0 from its pods; name a PriorityClass "
         "in spec.priorityClassName"},
        {"priority: {allowPodGroupPriority: true}\n", NULL, 1000000000,
         "PodGroup team-a/grab: spec.priority 2147483647 capped at 1000000000, the highest "
         "non-system PriorityClass (none: the highest a user-defined class may have)"},
        {"priority: {allowPodGroupPriority: true}\n",
         "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: tenant-high}\n"
         "value: 5000\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
         "metadata: {name: tenant-low}\nvalue: 10\n",
         5000, "PodGroup team-a/grab: spec.priority 2147483647 capped at 5000, the highest non-system "
               "PriorityClass (tenant-high)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *y = escalation(cases[c].yaml_extra), pol[512];
        snprintf(pol, sizeof pol, "%s%s", POLICY, cases[c].policy_extra);
        cJSON *res = tu_simulate(pol, y);
        const cJSON *g = tu_gang(res, "team-a/grab");
        assert_non_null(g);
        assert_string_equal(tu_str(g, "status"), "Unschedulable");
        assert_int_equal(cJSON_GetObjectItem(g, "priority")->valueint, cases[c].prio);
        assert_int_equal(cJSON_GetArraySize(preempts(g)), 0); /* dcgm-exporter untouched */
        assert_null(tu_node_of(res, "team-a/grab-0"));
        assert_non_null(strstr(tu_str(g, "reason"), "no gang or pod of lower priority to evict"));
        assert_non_null(strstr(tu_str(g, "reason"), cases[c].note));
        cJSON_Delete(res);
        free(y);
    }
}

/* A gang's priority from PriorityClasses: its PodGroup's priorityClassName
 * (over its spec.priority), else its pods' class. A tenant's gang of a high
 * non-system class preempts a lower one; with a system class named on its
 * PodGroup only, it counts as high as its pods (0 here) and preempts nothing. */
static void test_priority_from_class(void **state)
{
    (void)state;
    for (int c = 0; c < 4; c++) {
        char *y = NULL;
        two_racks(&y);
        tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                   "metadata: {name: high}\nvalue: 1000\npreemptionPolicy: null\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                   "metadata: {name: system-cluster-critical}\nvalue: 2000000000\n");
        group(&y, "low", 8, 10, NULL);
        for (int i = 0; i < 8; i++) {
            char n[16], node[16];
            snprintf(n, sizeof n, "low-%d", i);
            snprintf(node, sizeof node, "r%d-n%d", i / 4, i % 4);
            bound(&y, n, "low", node, 8, 0, NULL, NULL);
        }
        static const char *const spec[] = {
            "spec: {minMember: 2, priorityClassName: high, topology: {required: rack}}\n",
            "spec: {minMember: 2, priorityClassName: high, priority: 5, topology: {required: rack}}\n",
            "spec: {minMember: 2, topology: {required: rack}}\n",
            "spec: {minMember: 2, priorityClassName: system-cluster-critical, topology: {required: rack}}\n"};
        tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
                   "metadata: {name: hi, namespace: ml}\n%s", spec[c]);
        for (int i = 0; i < 2; i++) {
            char n[16];
            snprintf(n, sizeof n, "hi-%d", i);
            tu_pod(&y, n, "hi", "nvidia.com/gpu: 8", c == 2 ? "  priorityClassName: high\n" : NULL);
        }
        cJSON *res = tu_simulate(POLICY, y);
        const cJSON *g = tu_gang(res, "ml/hi");
        if (c < 3) {
            assert_int_equal(cJSON_GetObjectItem(g, "priority")->valueint, 1000);
            assert_string_equal(tu_str(g, "status"), "Scheduled");
            char buf[128];
            assert_string_equal(victim_groups(g, buf, sizeof buf), "ml/low");
        } else {
            assert_int_equal(cJSON_GetObjectItem(g, "priority")->valueint, 0);
            assert_string_equal(tu_str(g, "status"), "Unschedulable");
            assert_int_equal(cJSON_GetArraySize(preempts(g)), 0);
            assert_non_null(strstr(tu_str(g, "reason"),
                                   "PodGroup ml/hi: spec.priorityClassName system-cluster-critical "
                                   "(2000000000, a system class) counts only up to its pods' own "
                                   "priority, 0"));
        }
        cJSON_Delete(res);
        free(y);
    }
}

/* A pod at or above system-cluster-critical is never a victim of a gang below
 * that, even inside a gang whose own (PodGroup) priority is low; a gang of
 * higher system priority may still take its room. */
static void test_system_critical_never_victim(void **state)
{
    (void)state;
    for (int c = 0; c < 2; c++) {
        char *y = NULL;
        tu_node(&y, "n0", "", "r0", 8, NULL);
        tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                   "metadata: {name: system-cluster-critical}\nvalue: 2000000000\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                   "metadata: {name: system-node-critical}\nvalue: 2000001000\n");
        group(&y, "sys", 1, 10, NULL);
        tu_cat(&y, "---\nkind: Pod\nmetadata:\n  name: sys-0\n  namespace: ml\n"
                   "  labels: {topogang.io/pod-group: sys}\n"
                   "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: sys, uid: u-s, "
                   "controller: true}]\n"
                   "spec:\n  nodeName: n0\n  schedulerName: topogang\n"
                   "  priorityClassName: system-cluster-critical\n  priority: 2000000000\n"
                   "  containers:\n  - name: c\n    resources: {requests: {nvidia.com/gpu: 8}}\n"
                   "status: {phase: Running}\n");
        if (c == 0) {
            group(&y, "hi", 1, 100, NULL);
        } else {
            tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
                       "metadata: {name: hi, namespace: ml}\nspec: {minMember: 1}\n");
        }
        tu_pod(&y, "hi-0", "hi", "nvidia.com/gpu: 8",
               c == 1 ? "  priorityClassName: system-node-critical\n" : NULL);
        cJSON *res = tu_simulate(POLICY, y);
        const cJSON *g = tu_gang(res, "ml/hi");
        if (c == 0) {
            assert_string_equal(tu_str(g, "status"), "Unschedulable");
            assert_int_equal(cJSON_GetArraySize(preempts(g)), 0);
            assert_non_null(strstr(tu_str(g, "reason"),
                                   "(1 unit(s) hold pods of system-critical priority >= 2000000000, "
                                   "never preempted by a gang below it)"));
        } else {
            assert_string_equal(tu_str(g, "status"), "Scheduled");
            char buf[128];
            assert_string_equal(victim_groups(g, buf, sizeof buf), "ml/sys");
        }
        cJSON_Delete(res);
        free(y);
    }
}

/* ---- property test ---------------------------------------------------------------- */

enum { MAXN = 10, MAXU = 10, MAXP = 24 };

struct mpod {
    int node, gpus, unit;
};

struct munit {
    int prio, bare, npods, in_rack[4];
    int64_t created;
};

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static int rnd(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

struct cost {
    int maxprio;
    long gpus, pods, age;
};

static int cost_cmp(const struct cost *a, const struct cost *b)
{
    if (a->maxprio != b->maxprio)
        return a->maxprio < b->maxprio ? -1 : 1;
    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    if (a->pods != b->pods)
        return a->pods < b->pods ? -1 : 1;
    if (a->age != b->age)
        return a->age < b->age ? -1 : 1;
    return 0;
}

static int trials_preempted, trials_fit_free, trials_impossible;

static void preempt_trial(int t)
{
    int nracks = 1 + rnd(3), nn = 0, rack_of[MAXN], cap[MAXN];
    char *y = NULL;
    for (int r = 0; r < nracks; r++) {
        int k = 1 + rnd(4);
        for (int i = 0; i < k && nn < MAXN; i++, nn++) {
            char n[16], rk[8];
            snprintf(n, sizeof n, "n%d", nn);
            snprintf(rk, sizeof rk, "r%d", r);
            rack_of[nn] = r;
            cap[nn] = 8;
            tu_node(&y, n, "", rk, 8, NULL);
        }
    }
    struct munit u[MAXU];
    struct mpod p[MAXP];
    int nu = 1 + rnd(MAXU), np = 0, used[MAXN] = {0};
    for (int i = 0; i < nu; i++) {
        memset(&u[i], 0, sizeof u[i]);
        u[i].prio = rnd(4) * 10;
        u[i].bare = rnd(6) == 0;
        u[i].created = 1000 + rnd(50) * 60; /* minutes apart: ages differ */
        int k = 1 + rnd(3);
        char gname[16];
        snprintf(gname, sizeof gname, "u%d", i);
        if (!u[i].bare)
            group(&y, gname, k, u[i].prio, NULL);
        for (int j = 0; j < k && np < MAXP; j++) {
            int g = (int[]){1, 2, 4, 8}[rnd(4)], node = rnd(nn);
            if (used[node] + g > cap[node])
                continue;
            used[node] += g;
            p[np] = (struct mpod){node, g, i};
            char pn[24], nodename[16], created[40];
            snprintf(pn, sizeof pn, "u%d-%d", i, j);
            snprintf(nodename, sizeof nodename, "n%d", node);
            time_t ts = (time_t)(1767225600 + u[i].created);
            strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&ts));
            if (u[i].bare) /* a lone pod with a priority of its own */
                tu_cat(&y, "---\nkind: Pod\nmetadata: {name: %s, namespace: ml, creationTimestamp: '%s'}\n"
                           "spec: {nodeName: %s, priority: %d, containers: [{resources: {requests: "
                           "{nvidia.com/gpu: %d}}}]}\n", pn, created, nodename, u[i].prio, g);
            else
                bound(&y, pn, gname, nodename, g, 0, created, NULL);
            u[i].npods++;
            u[i].in_rack[rack_of[node]]++;
            np++;
            if (u[i].bare)
                break; /* one pod each */
        }
    }
    int want = 1 + rnd(4), gg = (int[]){2, 4, 8}[rnd(3)], prio = 25;
    group(&y, "pre", want, prio, "topology: {required: rack}");
    gang(&y, "pre", want, gg);
    cJSON *res = tu_simulate(POLICY, y);
    /* the engine's clock in simulate: the newest creation + 1 s */
    int64_t newest = 0;
    for (int i = 0; i < nu; i++)
        if (u[i].npods && u[i].created > newest)
            newest = u[i].created;
    int64_t now = newest + 1;
    /* brute force: every subset of eligible units, per rack */
    int elig[MAXU], ne = 0;
    for (int i = 0; i < nu; i++)
        if (u[i].npods && u[i].prio < prio && !u[i].bare)
            elig[ne++] = i;
    struct cost best[4];
    int feasible[4] = {0};
    for (int r = 0; r < nracks; r++) {
        for (int mask = 0; mask < (1 << ne); mask++) {
            int gone[MAXU] = {0}, touches = 1;
            for (int b = 0; b < ne; b++)
                if (mask >> b & 1) {
                    gone[elig[b]] = 1;
                    touches &= u[elig[b]].in_rack[r] > 0;
                }
            if (!touches)
                continue; /* a unit with no pod in the rack never helps it */
            int fits = 0;
            for (int n = 0; n < nn; n++) {
                if (rack_of[n] != r)
                    continue;
                int free_ = cap[n];
                for (int k = 0; k < np; k++)
                    if (p[k].node == n && !gone[p[k].unit])
                        free_ -= p[k].gpus;
                fits += free_ / gg;
            }
            if (fits < want)
                continue;
            struct cost c = {mask ? 0 : -2147483647 - 1, 0, 0, 0};
            for (int k = 0; k < np; k++)
                if (gone[p[k].unit]) {
                    c.gpus += p[k].gpus;
                    c.pods++;
                    c.age += (long)(now - u[p[k].unit].created);
                }
            for (int b = 0; b < ne; b++)
                if ((mask >> b & 1) && u[elig[b]].prio > c.maxprio)
                    c.maxprio = u[elig[b]].prio;
            if (!feasible[r] || cost_cmp(&c, &best[r]) < 0)
                best[r] = c;
            feasible[r] = 1;
        }
    }
    int any = 0, cheapest = -1;
    for (int r = 0; r < nracks; r++)
        if (feasible[r]) {
            any = 1;
            if (cheapest < 0 || cost_cmp(&best[r], &best[cheapest]) < 0)
                cheapest = r;
        }
    const cJSON *g = tu_gang(res, "ml/pre");
    int scheduled = !strcmp(tu_str(g, "status"), "Scheduled");
    if (scheduled != any)
        print_error("trial %d: scheduled=%d, brute force feasible=%d\n%s\n", t, scheduled, any, y);
    assert_int_equal(scheduled, any);
    if (!scheduled) {
        trials_impossible++;
        assert_int_equal(cJSON_GetArraySize(preempts(g)), 0);
    } else {
        if (cJSON_GetArraySize(preempts(g)))
            trials_preempted++;
        else
            trials_fit_free++;
        const char *dom = tu_str(g, "domain");
        int r = dom[1] - '0';
        /* victims: whole units, strictly lower priority, with a pod in the rack */
        int gone[MAXU] = {0};
        const cJSON *v, *pod;
        cJSON_ArrayForEach(v, preempts(g))
        {
            int ui = -1, k = 0;
            cJSON_ArrayForEach(pod, cJSON_GetObjectItem(v, "pods"))
            {
                int a, b;
                assert_int_equal(sscanf(pod->valuestring, "ml/u%d-%d", &a, &b), 2);
                assert_true(ui < 0 || ui == a);
                ui = a;
                k++;
            }
            assert_true(ui >= 0);
            assert_int_equal(k, u[ui].npods);
            assert_true(u[ui].prio < prio);
            assert_false(u[ui].bare);
            assert_true(u[ui].in_rack[r] > 0);
            gone[ui] = 1;
        }
        struct cost c = {cJSON_GetArraySize(preempts(g)) ? 0 : -2147483647 - 1, 0, 0, 0};
        for (int k = 0; k < np; k++)
            if (gone[p[k].unit]) {
                c.gpus += p[k].gpus;
                c.pods++;
                c.age += (long)(now - u[p[k].unit].created);
                if (u[p[k].unit].prio > c.maxprio)
                    c.maxprio = u[p[k].unit].prio;
            }
        if (cost_cmp(&c, &best[cheapest]) != 0)
            print_error("trial %d: cost (%d,%ld,%ld,%ld) in r%d, cheapest (%d,%ld,%ld,%ld) in r%d\n%s\n",
                        t, c.maxprio, c.gpus, c.pods, c.age, r, best[cheapest].maxprio,
                        best[cheapest].gpus, best[cheapest].pods, best[cheapest].age, cheapest, y);
        assert_int_equal(cost_cmp(&c, &best[cheapest]), 0);
        /* the placement fits once the victims are gone */
        int load[MAXN];
        for (int n = 0; n < nn; n++)
            load[n] = 0;
        for (int k = 0; k < np; k++)
            if (!gone[p[k].unit])
                load[p[k].node] += p[k].gpus;
        for (int i = 0; i < want; i++) {
            char pn[24];
            snprintf(pn, sizeof pn, "ml/pre-%d", i);
            const char *node = tu_node_of(res, pn);
            assert_non_null(node);
            int n = atoi(node + 1);
            assert_int_equal(rack_of[n], r);
            load[n] += gg;
            assert_true(load[n] <= cap[n]);
        }
    }
    cJSON_Delete(res);
    free(y);
}

static void test_property_cheapest(void **state)
{
    (void)state;
    for (int t = 0; t < 400; t++)
        preempt_trial(t);
    /* the trials must exercise every branch, not only the easy one */
    print_message("%d trials preempted, %d fit without it, %d impossible\n", trials_preempted,
                  trials_fit_free, trials_impossible);
    assert_true(trials_preempted > 100);
    assert_true(trials_impossible > 10);
}

/* Every byte of s[0..n) is valid UTF-8. */
static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = s[i] < 0x80 ? 1 : (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3
                 : (s[i] & 0xf8) == 0xf0 ? 4 : 0;
        if (!k || i + k > n)
            return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
        i += k;
    }
    return 1;
}

/* A preemption of 300 gangs with long names and a long reason: the
 * Preempting Event's note stays within the API's 1 KiB, lists whole victims
 * then "and N more", and its reason is cut on a UTF-8 boundary. */
static void test_preempting_note_fits(void **state)
{
    (void)state;
    enum { NV = 300 };
    static struct tg_grec gangs[NV];
    static struct tg_victim victims[NV];
    static char keys[NV][96];
    for (int i = 0; i < NV; i++) {
        snprintf(keys[i], sizeof keys[i], "research/hyperparameter-sweep-of-the-week-%03d", i);
        gangs[i].key = keys[i];
        victims[i] = (struct tg_victim){.gang = &gangs[i], .npods = 8};
    }
    struct tg_preemption p = {.nvictims = NV, .victims = victims};
    /* the reason: 2-byte and 3-byte characters up to the limit of its buffer */
    size_t o = 0;
    while (o + 3 < sizeof p.reason) {
        const char *piece = o % 5 ? "\xc3\xa9" : "\xe2\x82\xac"; /* e-acute, euro sign */
        memcpy(p.reason + o, piece, strlen(piece));
        o += strlen(piece);
    }
    p.reason[o] = 0;

    char note[TG_EVENT_NOTE_MAX + 1];
    tg__preempting_note(&p, note, sizeof note);
    size_t len = strlen(note);
    printf("# note: %zu bytes: %.120s...\n", len, note);
    assert_true(len <= TG_EVENT_NOTE_MAX);
    assert_true(valid_utf8((const unsigned char *)note, len));
    const char *head = "preempting research/hyperparameter-sweep-of-the-week-000 (8 pods), ";
    assert_true(!strncmp(note, head, strlen(head)));
    /* whole victims, then how many are left out: listed + more == 300 */
    const char *more = strstr(note, " and ");
    assert_non_null(more);
    unsigned left = 0;
    assert_int_equal(sscanf(more, " and %u more; ", &left), 1);
    unsigned listed = 0;
    for (const char *q = note; (q = strstr(q, " (8 pods)")) && q < more; q++)
        listed++;
    assert_true(listed >= 5);
    assert_int_equal(listed + left, NV);
    assert_non_null(strstr(more, "; \xe2\x82\xac"));            /* the reason follows */
    assert_true(len >= 3 && !strcmp(note + len - 3, "..."));   /* cut, and says so */

    /* a short one is left as it was */
    p.nvictims = 2;
    snprintf(p.reason, sizeof p.reason, "to place it in rack r1");
    tg__preempting_note(&p, note, sizeof note);
    assert_string_equal(note, "preempting research/hyperparameter-sweep-of-the-week-000 (8 pods), "
                              "research/hyperparameter-sweep-of-the-week-001 (8 pods); to place "
                              "it in rack r1");
    /* a small buffer: still whole names and the count */
    char small[72];
    p.nvictims = NV;
    tg_preemption_describe(&p, small, sizeof small);
    assert_string_equal(small, "research/hyperparameter-sweep-of-the-week-000 (8 pods) and 299 more");
    tg_preemption_describe(&p, small, 40);
    assert_string_equal(small, " and 300 more");
}

/* tg_utf8_prefix never splits a character. */
/* ---- the victims index (gang.h) under churn ------------------------------------ */

enum { CH_PODS = 40, CH_STEPS = 3000 };

/* The index against the model, recomputed by brute force: every gang with
 * a placed member filed once, under its priority, lowest first, no empty
 * bucket; a walk below P yields exactly those of priority < P; the loose
 * records are exactly the placed records of no gang (not phantoms). */
/* What a gang's members ask, kept as they come and go (tg_grec_held),
 * against their sum made afresh; lost only when they ask more resources
 * than it holds. */
static void held_check(const struct tg_grec *g)
{
    int64_t sum[TG_RES_MAX] = {0};
    uint32_t n;
    for (uint32_t i = 0; i < g->nmembers; i++)
        for (uint8_t k = 0; k < g->members[i]->nreq; k++)
            sum[g->members[i]->req[k].res] += g->members[i]->req[k].val;
    const struct tg_rq *held = tg_grec_held(g, &n);
    if (!held) {
        assert_true(g->nmembers > 0); /* lost: many resources since it was empty */
        return;
    }
    int64_t seen[TG_RES_MAX] = {0};
    for (uint32_t k = 0; k < n; k++) {
        assert_true(held[k].res < TG_RES_MAX);
        seen[held[k].res] += held[k].val;
    }
    for (uint32_t r = 0; r < TG_RES_MAX; r++)
        if (seen[r] != sum[r])
            fail_msg("gang %s: resource %u held %lld, its members ask %lld", g->key, r,
                     (long long)seen[r], (long long)sum[r]);
}

static void index_check(const struct tg_gangs *gs, const struct tg_cluster *c, int32_t below)
{
    uint32_t want = 0, got = 0, nbelow = 0, wbelow = 0, pos = 0;
    const struct tg_hslot *hs;
    while ((hs = tg_hmap_next(&gs->by_key, &pos))) {
        const struct tg_grec *g = (const struct tg_grec *)(uintptr_t)hs->val;
        held_check(g);
        want += g->nmembers > 0;
        wbelow += g->nmembers > 0 && g->priority < below;
        assert_int_equal(g->filed, g->nmembers > 0);
    }
    struct tg_placed_it it = {0};
    const struct tg_grec *g;
    int32_t last = INT32_MIN;
    uint32_t distinct = 0;
    while ((g = tg_gangs_placed_next(gs, INT32_MAX, &it))) {
        assert_true(g->nmembers > 0);
        assert_int_equal(g->filed_prio, g->priority);
        assert_true(g->priority >= last);
        distinct += !got || g->priority != last;
        last = g->priority;
        got++;
        assert_true(got <= want); /* no gang twice, no cycle */
    }
    assert_int_equal(got, want);
    assert_int_equal(gs->npb, distinct);
    it = (struct tg_placed_it){0};
    while ((g = tg_gangs_placed_next(gs, below, &it))) {
        assert_true(g->priority < below);
        nbelow++;
    }
    assert_int_equal(nbelow, wbelow);
    uint32_t wloose = 0, gloose = 0;
    pos = 0;
    while ((hs = tg_hmap_next(&c->usage, &pos))) {
        const struct tg_usage *u = (const struct tg_usage *)(uintptr_t)hs->val;
        wloose += u->kind != TG_USAGE_NOMINATED && u->gpos == UINT32_MAX;
    }
    pos = 0;
    const struct tg_usage *u;
    while ((u = tg_gangs_loose_next(gs, &pos))) {
        assert_int_equal(u->gpos, UINT32_MAX);
        assert_int_not_equal(u->kind, TG_USAGE_NOMINATED);
        assert_ptr_equal(tg_cluster_usage(c, u->key), u); /* alive */
        gloose++;
    }
    assert_int_equal(gloose, wloose);
    assert_false(gs->index_lost);
}

/* Random binds, assumptions, nominations, Terminating pods, deletes and
 * PriorityClass changes (every gang's priority resolved again); the index
 * and each gang's kept sums of its members' requests are checked after
 * each step. */
static void test_victims_index_churn(void **state)
{
    (void)state;
    uint32_t levels[1] = {tg_intern("topogang.io/rack")};
    struct tg_cluster c;
    struct tg_gangs gs;
    assert_int_equal(tg_cluster_init(&c, levels, 1), 0);
    assert_int_equal(tg_gangs_init(&gs, &c), 0);
    uint32_t cls = tg_intern("churn-class"), ns = tg_intern("ml");
    struct tg_pclass pc = {.value = 5};
    assert_int_equal(tg_gangs_pclass_set(&gs, cls, &pc), 0);
    uint32_t gpu = (uint32_t)tg_res_id("nvidia.com/gpu", 14), seed = 12345;
    struct tg_pod *pods[CH_PODS];
    for (int i = 0; i < CH_PODS; i++) {
        char key[32], grp[16];
        snprintf(key, sizeof key, "ml/p%d", i);
        snprintf(grp, sizeof grp, "g%d", i % 7);
        struct tg_pod *p = pods[i] = calloc(1, sizeof *p);
        p->key = strdup(key);
        p->ns = ns;
        p->name_off = 3;
        p->group = i % 5 == 0 ? 0 : tg_intern(grp); /* every fifth: a pod of no gang */
        p->owner_kind = tg_intern("Job");
        /* one resource, two, or five (more than a gang's kept sums hold) */
        p->nreq = i % 11 == 3 ? 5 : i % 3 == 1 ? 2 : 1;
        p->req = calloc(p->nreq, sizeof *p->req);
        p->req[0] = (struct tg_rq){gpu, 1 + i % 4};
        for (uint8_t k = 1; k < p->nreq; k++) {
            char rn[32];
            snprintf(rn, sizeof rn, "example.com/r%u", k);
            p->req[k] = (struct tg_rq){(uint32_t)tg_res_id(rn, strlen(rn)), 10 * k + i};
        }
    }
    for (int step = 0; step < CH_STEPS; step++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t r = seed >> 8;
        struct tg_pod *p = pods[r % CH_PODS];
        char node[16];
        snprintf(node, sizeof node, "n%u", (r >> 6) % 4);
        uint32_t slot = tg_cluster_slot(&c, tg_intern(node), 1);
        switch ((r >> 10) % 7) {
        case 0: /* seen bound, with its own priority or its class's */
        case 1:
            p->node = tg_intern(node);
            p->phase = TG_PHASE_RUNNING;
            p->deleting = 0;
            p->has_priority = (r >> 13) % 2;
            p->priority = (int32_t)((r >> 14) % 4) * 10;
            p->prio_class = p->has_priority ? 0 : cls;
            assert_int_equal(tg_cluster_pod_update(&c, p), 0);
            break;
        case 2: /* assumed by this scheduler */
            p->node = 0;
            p->deleting = 0;
            assert_int_equal(tg_cluster_assume(&c, p, slot), 0);
            break;
        case 3: /* a phantom holding room */
            p->node = 0;
            p->deleting = 0;
            assert_int_equal(tg_cluster_nominate(&c, p, slot), 0);
            break;
        case 4: /* Terminating: leaves its gang, still holds its node */
            if (tg_cluster_usage(&c, p->key) && p->node) {
                p->deleting = 1;
                assert_int_equal(tg_cluster_pod_update(&c, p), 0);
            }
            break;
        case 5:
            tg_cluster_pod_delete(&c, p->key);
            break;
        default: /* the class moves every gang that takes its priority from it */
            pc.value = (int32_t)((r >> 13) % 5) * 10 - 5;
            assert_int_equal(tg_gangs_pclass_set(&gs, cls, &pc), 0);
            break;
        }
        index_check(&gs, &c, (int32_t)((r >> 20) % 5) * 10 - 5);
    }
    /* everything gone: an empty index */
    for (int i = 0; i < CH_PODS; i++)
        tg_cluster_pod_delete(&c, pods[i]->key);
    index_check(&gs, &c, INT32_MAX);
    assert_int_equal(gs.npb, 0);
    tg_gangs_free(&gs);
    tg_cluster_free(&c);
    for (int i = 0; i < CH_PODS; i++)
        tg_pod_free(&pods[i]);
}

/* A gang's placement view (tg_grec_view) lists exactly its pending members
 * with no record but a nomination, while pods come, go, move between gangs,
 * are assumed, nominated, bound, start terminating and are deleted: the
 * kept count of pending members with a record (npending_rec) that lets the
 * view skip the lookups goes stale nowhere. Checked after every step. */
static void view_check(const struct tg_gangs *gs, const struct tg_cluster *c, struct tg_pod **pods,
                       const uint8_t *pending)
{
    uint32_t pos = 0;
    const struct tg_hslot *hs;
    while ((hs = tg_hmap_next(&gs->by_key, &pos))) {
        const struct tg_grec *g = (const struct tg_grec *)(uintptr_t)hs->val;
        struct tg_pod *out[CH_PODS + 1];
        struct tg_gang v;
        tg_grec_view(g, c, out, &v);
        uint32_t want = 0, withrec = 0;
        for (uint32_t i = 0; i < g->npending; i++) {
            const struct tg_usage *u = tg_cluster_usage(c, g->pending[i]->key);
            withrec += u && u->kind != TG_USAGE_NOMINATED;
            if (!g->pending[i]->node && (!u || u->kind == TG_USAGE_NOMINATED))
                assert_ptr_equal(out[want++], g->pending[i]); /* in pending order */
        }
        assert_int_equal(v.npods, want);
        assert_int_equal(g->npending_rec, withrec);
    }
    uint32_t npend = 0, listed = 0;
    for (int i = 0; i < CH_PODS; i++)
        npend += pending[i];
    pos = 0;
    while ((hs = tg_hmap_next(&gs->by_key, &pos)))
        listed += ((const struct tg_grec *)(uintptr_t)hs->val)->npending;
    assert_int_equal(listed, npend);
    (void)pods;
}

static void test_view_churn(void **state)
{
    (void)state;
    uint32_t levels[1] = {tg_intern("topogang.io/rack")};
    struct tg_cluster c;
    struct tg_gangs gs;
    assert_int_equal(tg_cluster_init(&c, levels, 1), 0);
    assert_int_equal(tg_gangs_init(&gs, &c), 0);
    uint32_t gpu = (uint32_t)tg_res_id("nvidia.com/gpu", 14), ns = tg_intern("ml"), seed = 777;
    struct tg_pod *pods[CH_PODS];
    uint8_t pending[CH_PODS] = {0};
    for (int i = 0; i < CH_PODS; i++) {
        char key[32];
        snprintf(key, sizeof key, "ml/v%d", i);
        struct tg_pod *p = pods[i] = calloc(1, sizeof *p);
        p->key = strdup(key);
        p->ns = ns;
        p->name_off = 3;
        p->group = tg_intern(i % 2 ? "va" : "vb");
        p->nreq = 1;
        p->req = calloc(1, sizeof *p->req);
        p->req[0] = (struct tg_rq){gpu, 1 + i % 4};
    }
    for (int step = 0; step < CH_STEPS; step++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t r = seed >> 8;
        int i = (int)(r % CH_PODS);
        struct tg_pod *p = pods[i];
        char node[16];
        snprintf(node, sizeof node, "n%u", (r >> 6) % 4);
        uint32_t slot = tg_cluster_slot(&c, tg_intern(node), 1);
        struct tg_grec *g;
        switch ((r >> 10) % 8) {
        case 0: /* pending (again: in place), maybe in the other gang */
            if (p->node)
                break;
            if ((r >> 13) % 4 == 0)
                p->group = tg_intern(p->group == tg_intern("va") ? "vb" : "va");
            assert_int_equal(tg_gangs_pending_set(&gs, p, step, &g), 0);
            pending[i] = 1;
            break;
        case 1: /* no longer pending (bound, or gone) */
            tg_gangs_pending_delete(&gs, p);
            pending[i] = 0;
            break;
        case 2: /* assumed by this scheduler (now and then as it starts terminating:
                   a record no gang has as a member) */
            if (p->node)
                break;
            p->deleting = (r >> 13) % 3 == 0;
            assert_int_equal(tg_cluster_assume(&c, p, slot), 0);
            p->deleting = 0;
            break;
        case 3: /* a phantom holding room */
            if (!p->node)
                assert_int_equal(tg_cluster_nominate(&c, p, slot), 0);
            break;
        case 4: /* seen bound: it leaves the pending stream first */
            tg_gangs_pending_delete(&gs, p);
            pending[i] = 0;
            p->node = tg_intern(node);
            p->phase = TG_PHASE_RUNNING;
            p->deleting = 0;
            assert_int_equal(tg_cluster_pod_update(&c, p), 0);
            break;
        case 5: /* Terminating: its record becomes a loose one */
            if (tg_cluster_usage(&c, p->key) && p->node) {
                p->deleting = 1;
                assert_int_equal(tg_cluster_pod_update(&c, p), 0);
            }
            break;
        case 6: /* deleted: the record goes; the pod may come back unbound */
            tg_cluster_pod_delete(&c, p->key);
            p->node = 0;
            p->deleting = 0;
            p->phase = 0;
            break;
        default: { /* a what-if's quiet dry run: assumed and taken back */
            if (p->node || tg_cluster_usage(&c, p->key))
                break;
            tg_cluster_quiet(&c, 1);
            assert_int_equal(tg_cluster_assume(&c, p, slot), 0);
            tg_cluster_pod_delete(&c, p->key);
            tg_cluster_quiet(&c, 0);
            break;
        }
        }
        view_check(&gs, &c, pods, pending);
    }
    for (int i = 0; i < CH_PODS; i++) {
        tg_gangs_pending_delete(&gs, pods[i]);
        tg_cluster_pod_delete(&c, pods[i]->key);
    }
    tg_gangs_free(&gs);
    tg_cluster_free(&c);
    for (int i = 0; i < CH_PODS; i++)
        tg_pod_free(&pods[i]);
}

static void test_utf8_prefix(void **state)
{
    (void)state;
    const char *s = "ab\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";   /* a b e-acute euro emoji z */
    size_t n = strlen(s);
    size_t want[] = {0, 1, 2, 2, 4, 4, 4, 7, 7, 7, 7, 11, 12};
    for (size_t max = 0; max <= n; max++)
        assert_int_equal(tg_utf8_prefix(s, n, max), want[max]);
    char out[8];
    assert_int_equal(tg_utf8_clip(s, out, sizeof out, "..."), 1);
    assert_string_equal(out, "ab\xc3\xa9...");
    assert_int_equal(tg_utf8_clip("abc", out, sizeof out, "..."), 0);
    assert_string_equal(out, "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cheapest_rack),
        cmocka_unit_test(test_fewest_gpus),
        cmocka_unit_test(test_who_may_be_evicted),
        cmocka_unit_test(test_pdb_preferred),
        cmocka_unit_test(test_cannot_help),
        cmocka_unit_test(test_priority_escalation),
        cmocka_unit_test(test_priority_from_class),
        cmocka_unit_test(test_system_critical_never_victim),
        cmocka_unit_test(test_property_cheapest),
        cmocka_unit_test(test_preempting_note_fits),
        cmocka_unit_test(test_utf8_prefix),
        cmocka_unit_test(test_victims_index_churn),
        cmocka_unit_test(test_view_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
