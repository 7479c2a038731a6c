/* Reclaim between tenant queues (issue 19; scheduler/reclaim.c), through
 * `simulate` (which carries a preemption out at once and lists its victims
 * in "preempts"):
 *   - a gang of a queue below its fair share takes a whole gang of a queue
 *     above its share, whatever the victim's priority, with the reason in
 *     numbers; reclaims are counted;
 *   - not when it would take the victim queue below its share; not when the
 *     reclaimer's queue is at or above its share;
 *   - victims inside one rack of the gang's required level, whole gangs;
 *   - inside one queue, preemption stays by priority (a higher-priority gang
 *     evicts, an equal one does not);
 *   - a system-critical pod is never a victim;
 *   - a property over random cases: no reclaim takes a queue below its share;
 *   - tg_preempt_plan itself: a reclaim stops before counting when no rack
 *     has the room; by priority with queues on, only the preemptor's own
 *     queue's gangs are victims (queues off: any). */
#include "testutil.h"
#include "config/policy.h"
#include "scheduler/counts.h"
#include "scheduler/internal.h"
#include "scheduler/preempt.h"
#include "scheduler/sim/load.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n";

static void queue(char **y, const char *name, int quota)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: %s}\n"
              "spec:\n  resources:\n    nvidia.com/gpu: {quota: \"%d\"}\n", name, quota);
}

/* A PodGroup of queue q, minMember min, priority prio (its class p<prio>). */
static void group(char **y, const char *name, const char *q, int min, int prio, const char *topo)
{
    tu_cat(y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
              "metadata: {name: p%d}\nvalue: %d\n", prio, prio);
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
              "metadata: {name: %s, namespace: ml, creationTimestamp: '2026-01-01T00:00:00Z',"
              " labels: {topogang.io/queue: %s}}\n"
              "spec: {minMember: %d, priorityClassName: p%d%s%s}\n", name, q, min, prio,
           topo ? ", " : "", topo ? topo : "");
}

/* Member i of gang g, bound to node with gpus GPUs (a Job's pod). */
static void bound(char **y, const char *g, int i, const char *node, int gpus, const char *pclass)
{
    tu_cat(y, "---\nkind: Pod\nmetadata:\n  name: %s-%d\n  namespace: ml\n"
              "  creationTimestamp: '2026-01-01T00:00:00Z'\n"
              "  labels: {topogang.io/pod-group: %s}\n"
              "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s, uid: u-%s, "
              "controller: true}]\n"
              "spec:\n  nodeName: %s\n  schedulerName: topogang\n%s%s%s  containers:\n  - name: c\n"
              "    resources: {requests: {nvidia.com/gpu: %d}}\nstatus: {phase: Running}\n",
           g, i, g, g, g, node, pclass ? "  priorityClassName: " : "", pclass ? pclass : "",
           pclass ? "\n" : "", gpus);
}

/* n pending pods of gang g asking gpus each. */
static void pending(char **y, const char *g, int n, int gpus)
{
    for (int i = 0; i < n; i++) {
        char pod[64], req[48];
        snprintf(pod, sizeof pod, "%s-%d", g, i);
        snprintf(req, sizeof req, "nvidia.com/gpu: %d", gpus);
        tu_pod(y, pod, g, req, NULL);
    }
}

/* racks x nodes of 8 GPUs, named r<r>-n<i>. */
static void nodes(char **y, int racks, int per)
{
    for (int r = 0; r < racks; r++)
        for (int i = 0; i < per; i++) {
            char n[16], rk[8];
            snprintf(n, sizeof n, "r%d-n%d", r, i);
            snprintf(rk, sizeof rk, "r%d", r);
            tu_node(y, n, "", rk, 8, NULL);
        }
}

static const char *victims(const cJSON *g, char *buf, size_t n)
{
    const char *v[64];
    int k = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "preempts"))
        if (k < 64)
            v[k++] = tu_str(p, "podGroup") ? tu_str(p, "podGroup") : "(pod)";
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

static int reclaims(const cJSON *res)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(res, "summary");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(s, "reclaims");
    return cJSON_IsNumber(r) ? r->valueint : -1;
}

/* One rack of 2 nodes (16 GPUs), quotas 8 and 8. team-b runs two 1-pod
 * gangs of 8 GPUs at priority 100 (allocated 16, fair share 8); team-a's
 * gang of 8 at priority 1 takes one of them: a reclaim, not preemption. */
static void test_reclaim_below_share(void **state)
{
    (void)state;
    char *y = NULL;
    nodes(&y, 1, 2);
    queue(&y, "team-a", 8);
    queue(&y, "team-b", 8);
    group(&y, "b1", "team-b", 1, 100, NULL);
    group(&y, "b2", "team-b", 1, 100, NULL);
    bound(&y, "b1", 0, "r0-n0", 8, NULL);
    bound(&y, "b2", 0, "r0-n1", 8, NULL);
    group(&y, "a", "team-a", 1, 1, NULL);
    pending(&y, "a", 1, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/a");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    char buf[256];
    const char *v = victims(g, buf, sizeof buf);
    if (strcmp(v, "ml/b1") && strcmp(v, "ml/b2"))
        fail_msg("victims: %s", v);
    const char *why = tu_str(g, "preemptReason");
    if (!why || !strstr(why, "reclaimed 8 nvidia.com/gpu from queue team-b (fair share 8, "
                             "allocated 16) for queue team-a (fair share 8, allocated 0)"))
        fail_msg("reason: %s", why ? why : "(none)");
    assert_int_equal(reclaims(res), 1);
    cJSON_Delete(res);
    free(y);
}

/* A reclaim is sized from what the queue's limit lets the gang place now,
 * not from all its members: one rack of 4 nodes (32 GPUs), team-a quota
 * and limit 16, team-b quota 16 holding all 32 in four 1-pod gangs. team-a's
 * gang (minMember 1) has 3 pods of 8: its limit trims it to 2 (16 GPUs),
 * within its share of 16, so it reclaims (one of team-b's gangs, for the
 * member it must place now); sized from all 3 (24 > 16) it waited with "no
 * reclaim: queue team-a would pass its fair share: 0 + 24 > 16". */
static void test_sized_by_limit(void **state)
{
    (void)state;
    char *y = NULL;
    nodes(&y, 1, 4);
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
               "spec:\n  resources:\n    nvidia.com/gpu: {quota: \"16\", limit: \"16\"}\n");
    queue(&y, "team-b", 16);
    for (int i = 0; i < 4; i++) {
        char g[8], n[16];
        snprintf(g, sizeof g, "b%d", i);
        snprintf(n, sizeof n, "r0-n%d", i);
        group(&y, g, "team-b", 1, 100, NULL);
        bound(&y, g, 0, n, 8, NULL);
    }
    group(&y, "a", "team-a", 1, 1, NULL);
    pending(&y, "a", 3, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/a");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_int_equal(reclaims(res), 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "preempts")), 1);
    const char *why = tu_str(g, "preemptReason");
    if (!why || !strstr(why, "reclaimed 8 nvidia.com/gpu from queue team-b (fair share 16, "
                             "allocated 32) for queue team-a (fair share 16, allocated 0)"))
        fail_msg("reason: %s", why ? why : "(none)");
    cJSON_Delete(res);
    free(y);
}

/* 16 GPUs; quotas a 8, b 4, c 4, all asked for: shares 8, 4, 4. team-b
 * holds 12 (8 on n0, 4 on n1), team-c 4 on n1; team-a's gang of one 8-GPU
 * pod needs a whole node. With team-b's 12 in one gang, evicting it takes
 * team-b to 0 < 4: refused, with the numbers; split in two gangs (8 and 4),
 * the 8 go and team-b keeps 4, its share: reclaimed. team-c (at its share)
 * is never a victim. */
static void test_not_below_victim_share(void **state)
{
    (void)state;
    for (int split = 0; split < 2; split++) {
        char *y = NULL;
        nodes(&y, 1, 2);
        queue(&y, "team-a", 8);
        queue(&y, "team-b", 4);
        queue(&y, "team-c", 4);
        if (split) {
            group(&y, "b0", "team-b", 1, 100, NULL);
            group(&y, "b1", "team-b", 1, 100, NULL);
            bound(&y, "b0", 0, "r0-n0", 8, NULL);
            bound(&y, "b1", 0, "r0-n1", 4, NULL);
        } else {
            group(&y, "b", "team-b", 2, 100, NULL);
            bound(&y, "b", 0, "r0-n0", 8, NULL);
            bound(&y, "b", 1, "r0-n1", 4, NULL);
        }
        group(&y, "c", "team-c", 1, 100, NULL);
        bound(&y, "c", 0, "r0-n1", 4, NULL);
        group(&y, "a", "team-a", 1, 1, NULL);
        pending(&y, "a", 1, 8);
        cJSON *res = tu_simulate(POLICY, y);
        const cJSON *g = tu_gang(res, "ml/a");
        if (!split) {
            assert_string_equal(tu_str(g, "status"), "Unschedulable");
            assert_int_equal(reclaims(res), 0);
            if (!strstr(tu_str(g, "reason"),
                        "queue team-b would go below its fair share: 12 - 12 < 4 nvidia.com/gpu"))
                fail_msg("reason: %s", tu_str(g, "reason"));
        } else {
            assert_string_equal(tu_str(g, "status"), "Scheduled");
            assert_int_equal(reclaims(res), 1);
            char buf[128];
            assert_string_equal(victims(g, buf, sizeof buf), "ml/b0");
            if (!strstr(tu_str(g, "preemptReason"),
                        "reclaimed 8 nvidia.com/gpu from queue team-b (fair share 4, allocated 12)"))
                fail_msg("reason: %s", tu_str(g, "preemptReason"));
        }
        cJSON_Delete(res);
        free(y);
    }
}

/* 24 GPUs, quotas 8 and 8, both asking 16: shares 12 and 12. team-a holds
 * 8, team-b 16 (above its share); team-a's gang of 8 would take it to 16 >
 * 12: it is not below its share, so no reclaim (and its priority is too
 * low to preempt). */
static void test_not_at_or_above_share(void **state)
{
    (void)state;
    char *y = NULL;
    nodes(&y, 1, 3);
    queue(&y, "team-a", 8);
    queue(&y, "team-b", 8);
    group(&y, "x", "team-a", 1, 1, NULL);
    bound(&y, "x", 0, "r0-n0", 8, NULL);
    group(&y, "b1", "team-b", 1, 100, NULL);
    bound(&y, "b1", 0, "r0-n1", 8, NULL);
    group(&y, "b2", "team-b", 1, 100, NULL);
    bound(&y, "b2", 0, "r0-n2", 8, NULL);
    group(&y, "a", "team-a", 1, 1, NULL);
    pending(&y, "a", 1, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/a");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_int_equal(reclaims(res), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "preempts")), 0);
    const char *why = tu_str(g, "reason"); /* the wait says why, in numbers */
    if (!why || !strstr(why, "no reclaim: queue team-a would pass its fair share: 8 + 8 > 12 "
                             "nvidia.com/gpu"))
        fail_msg("reason: %s", why ? why : "(none)");
    cJSON_Delete(res);
    free(y);
}

/* Two racks of 2 nodes (32 GPUs); quotas a 24, b 0: team-a asks 24 (a
 * rack-required gang of 2 x 8, and a lower one of 8), team-b holds all 32:
 * shares 24 and 8. The rack gang frees one rack: b-wide (one pod in each
 * rack) goes whole, both pods, with the rack's other gang; team-b keeps 8,
 * its share. */
static void test_one_domain_whole_gangs(void **state)
{
    (void)state;
    char *y = NULL;
    nodes(&y, 2, 2);
    queue(&y, "team-a", 24);
    queue(&y, "team-b", 0);
    group(&y, "wide", "team-b", 2, 100, NULL);
    bound(&y, "wide", 0, "r0-n0", 8, NULL);
    bound(&y, "wide", 1, "r1-n0", 8, NULL);
    group(&y, "b0", "team-b", 1, 100, NULL);
    bound(&y, "b0", 0, "r0-n1", 8, NULL);
    group(&y, "b1", "team-b", 1, 100, NULL);
    bound(&y, "b1", 0, "r1-n1", 8, NULL);
    group(&y, "a", "team-a", 2, 5, "topology: {required: rack}");
    pending(&y, "a", 2, 8);
    group(&y, "a2", "team-a", 1, 1, NULL);
    pending(&y, "a2", 1, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/a");
    if (strcmp(tu_str(g, "status"), "Scheduled"))
        fail_msg("a: %s", tu_str(g, "reason"));
    char buf[256];
    const char *v = victims(g, buf, sizeof buf);
    if (strcmp(v, "ml/b0,ml/wide") && strcmp(v, "ml/b1,ml/wide"))
        fail_msg("victims: %s", v);
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "preempts"))
        if (!strcmp(tu_str(p, "podGroup"), "ml/wide"))
            assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "pods")), 2);
    const char *d = tu_str(g, "domain");
    assert_true(!strcmp(d, "r0") || !strcmp(d, "r1"));
    for (int i = 0; i < 2; i++) {
        char pod[32];
        snprintf(pod, sizeof pod, "ml/a-%d", i);
        assert_non_null(strstr(tu_node_of(res, pod), d));
    }
    if (!strstr(tu_str(g, "preemptReason"),
                "reclaimed 24 nvidia.com/gpu from queue team-b (fair share 8, allocated 32)"))
        fail_msg("reason: %s", tu_str(g, "preemptReason"));
    cJSON_Delete(res);
    free(y);
}

/* Inside one queue preemption stays by priority: a gang of priority 100
 * evicts one of 10; one of 10 evicts nothing. */
static void test_inside_queue_by_priority(void **state)
{
    (void)state;
    for (int prio = 10; prio <= 100; prio += 90) {
        char *y = NULL;
        nodes(&y, 1, 1);
        queue(&y, "team-a", 8);
        group(&y, "low", "team-a", 1, 10, NULL);
        bound(&y, "low", 0, "r0-n0", 8, NULL);
        group(&y, "a", "team-a", 1, prio, NULL);
        pending(&y, "a", 1, 8);
        cJSON *res = tu_simulate(POLICY, y);
        const cJSON *g = tu_gang(res, "ml/a");
        assert_string_equal(tu_str(g, "status"), prio == 100 ? "Scheduled" : "Unschedulable");
        assert_int_equal(reclaims(res), 0);
        cJSON_Delete(res);
        free(y);
    }
}

/* A system-critical pod of an over-share queue is never reclaimed. */
static void test_system_critical_kept(void **state)
{
    (void)state;
    char *y = NULL;
    nodes(&y, 1, 2);
    queue(&y, "team-a", 8);
    queue(&y, "team-b", 8);
    tu_cat(&y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
               "metadata: {name: system-cluster-critical}\nvalue: 2000000000\n");
    group(&y, "b1", "team-b", 1, 100, NULL);
    group(&y, "b2", "team-b", 1, 100, NULL);
    bound(&y, "b1", 0, "r0-n0", 8, "system-cluster-critical");
    bound(&y, "b2", 0, "r0-n1", 8, "system-cluster-critical");
    group(&y, "a", "team-a", 1, 1, NULL);
    pending(&y, "a", 1, 8);
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/a");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_int_equal(reclaims(res), 0);
    cJSON_Delete(res);
    free(y);
}

/* Random cases: 1 rack of 4 nodes, queues a, b, c with random quotas,
 * random 1-pod gangs of b and c bound at random priorities, a pending gang
 * of a. Whenever a reclaim happens, for each victim queue the reason's
 * numbers are checked against the test's own: allocated = what its gangs
 * held, taken = what its listed victims held, and allocated - taken >= its
 * fair share (the property: never below its share). */
static void test_property_never_below_share(void **state)
{
    (void)state;
    srand(19);
    int reclaimed = 0;
    for (int it = 0; it < 60; it++) {
        char *y = NULL;
        nodes(&y, 1, 4);
        const char *qs[3] = {"a", "b", "c"};
        for (int i = 0; i < 3; i++)
            queue(&y, qs[i], rand() % 16);
        int gq[32] = {0}, gg[32] = {0}, held[3] = {0}, k = 0;
        for (int n = 0; n < 4; n++) /* every node full */
            for (int used = 0; used < 8 && k < 32; k++) {
                int gp = 1 + rand() % 8;
                if (gp > 8 - used)
                    gp = 8 - used;
                used += gp;
                char name[16], node[16];
                snprintf(name, sizeof name, "g%d", k);
                snprintf(node, sizeof node, "r0-n%d", n);
                gq[k] = 1 + rand() % 2;
                gg[k] = gp;
                held[gq[k]] += gp;
                group(&y, name, qs[gq[k]], 1, rand() % 3 * 50, NULL);
                bound(&y, name, 0, node, gp, NULL);
            }
        group(&y, "p", "a", 1, 0, NULL);
        pending(&y, "p", 1, 1 + rand() % 8);
        cJSON *res = tu_simulate(POLICY, y);
        if (reclaims(res) > 0) {
            reclaimed++;
            const cJSON *g = tu_gang(res, "ml/p");
            int taken[3] = {0};
            const cJSON *v;
            cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(g, "preempts"))
            {
                int gi = atoi(tu_str(v, "podGroup") + strlen("ml/g"));
                taken[gq[gi]] += gg[gi];
            }
            const char *why = tu_str(g, "preemptReason");
            for (int i = 1; i < 3; i++) {
                if (!taken[i])
                    continue;
                char pat[64];
                snprintf(pat, sizeof pat, "nvidia.com/gpu from queue %s (", qs[i]);
                const char *at = strstr(why, pat);
                if (!at)
                    fail_msg("case %d: queue %s lost %d but the reason does not say: %s", it,
                             qs[i], taken[i], why);
                while (at > why && at[-1] != ' ')
                    at--;
                const char *back = at - 1; /* the amount before " nvidia.com/gpu" */
                while (back > why && back[-1] != ' ')
                    back--;
                double x = 0, f = 0, al = 0;
                if (sscanf(back, "%lf", &x) != 1 ||
                    sscanf(strstr(at, "(fair share "), "(fair share %lf, allocated %lf)", &f, &al) != 2)
                    fail_msg("case %d: cannot read %s", it, why);
                assert_true(x == taken[i]);
                assert_true(al == held[i]);
                if (al - x + 1e-9 < f)
                    fail_msg("case %d: queue %s %g - %g below its share %g\n%s", it, qs[i], al, x,
                             f, y);
            }
        }
        cJSON_Delete(res);
        free(y);
    }
    assert_true(reclaimed > 0); /* the property was exercised */
}

/* Between queues only reclaim takes room: one rack of 2 nodes (16 GPUs),
 * team-a holds 8 on r0-n1 or (the other case) team-c does, team-b holds 8 on
 * r0-n0, every queue at its share (quota 8). A priority-100 gang of team-a
 * asking 8 evicts team-a's own priority-1 gang, never another queue's (that
 * queue would go below its share). (Before: priority preemption crossed
 * queues, and reclaims and preemptions undid each other all day: the
 * example day with tenants made 2,435 preemptions.) */
static void test_priority_stays_in_its_queue(void **state)
{
    (void)state;
    for (int own = 0; own < 2; own++) {
        char *y = NULL;
        nodes(&y, 1, 2);
        queue(&y, "team-a", 8);
        queue(&y, "team-b", 8);
        group(&y, "b1", "team-b", 1, 1, NULL);
        bound(&y, "b1", 0, "r0-n0", 8, NULL);
        if (own) { /* team-a's own low-priority gang: the victim */
            group(&y, "a0", "team-a", 1, 1, NULL);
            bound(&y, "a0", 0, "r0-n1", 8, NULL);
        } else { /* a third team's, at its share too */
            queue(&y, "team-c", 8);
            group(&y, "c1", "team-c", 1, 1, NULL);
            bound(&y, "c1", 0, "r0-n1", 8, NULL);
        }
        group(&y, "hi", "team-a", 1, 100, NULL);
        pending(&y, "hi", 1, 8);
        cJSON *res = tu_simulate(POLICY, y);
        const cJSON *g = tu_gang(res, "ml/hi");
        char buf[256];
        if (own) {
            assert_string_equal(tu_str(g, "status"), "Scheduled");
            assert_string_equal(victims(g, buf, sizeof buf), "ml/a0");
        } else {
            assert_string_equal(tu_str(g, "status"), "Unschedulable");
            assert_string_equal(victims(g, buf, sizeof buf), "");
        }
        assert_int_equal(reclaims(res), 0);
        cJSON_Delete(res);
        free(y);
    }
}

static int64_t fixed_clock(void *ud)
{
    (void)ud;
    return 1000000;
}

/* A rule taking any gang named ml/v*, whatever the shares. */
static int v_victim(void *ud, const struct tg_grec *g, double *over)
{
    (void)ud;
    *over = 0;
    return !strncmp(g->key, "ml/v", 4);
}

static int any_set(void *ud, struct tg_grec *const *gs, uint32_t n, char *buf, size_t len)
{
    (void)ud, (void)gs, (void)n, (void)buf, (void)len;
    return 1;
}

/* An engine on a fixed clock holding what y describes (nodes, Queues,
 * PodGroups, bound pods) into e and d (the caller frees both); gang's
 * pending pods into pend (room for 4: *np) and its PodGroup into *pg. */
static void load_engine(const char *y, const char *gang, struct tg_simdata *d, struct tg_engine *e,
                        struct tg_pod **pend, uint32_t *np, const struct tg_podgroup **pg)
{
    static struct tg_clock clk = {fixed_clock, NULL};
    struct tg_sb err = {0};
    tg_simdata_init(d);
    d->quiet = 1;
    assert_int_equal(tg_simdata_load_string(d, y, strlen(y), "t.yaml", &err), 0);
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "policy", &pol, &err), 0);
    assert_int_equal(tg_engine_init(e, &pol, &clk), 0);
    if (d->nqueues)
        assert_int_equal(tg_engine_queues_set(e, (const struct tg_queue_obj *const *)d->queues,
                                              d->nqueues), 0);
    for (uint32_t i = 0; i < d->nnodes; i++)
        assert_int_equal(tg_engine_node_set(e, tg_node_clone(d->nodes[i])), 0);
    for (uint32_t i = 0; i < d->npgs; i++)
        tg_engine_podgroup_set(e, d->pgs[i]);
    *np = 0;
    *pg = NULL;
    for (uint32_t i = 0; i < d->npgs; i++)
        if (!strcmp(d->pgs[i]->key, gang))
            *pg = d->pgs[i];
    assert_non_null(*pg);
    for (uint32_t i = 0; i < d->npods; i++) {
        struct tg_pod *p = d->pods[i].pod;
        if (p->node)
            assert_int_equal(tg_engine_bound_set(e, p), 0);
        else if (*np < 4)
            pend[(*np)++] = p;
    }
    tg_sb_free(&err);
}

/* tg_preempt_plan under a reclaim rule for ml/big (3 x 8 GPUs, one rack
 * required) on two racks of 2 nodes x 8 GPUs, every node full: r0 holds
 * ml/v (8 GPUs, takeable) and ml/k, r1 ml/k2. No rack's free room plus
 * what the rule may take covers 24 GPUs, so the plan stops before any
 * count (no node counted for the gang's shape, no dry run) with the
 * reason; with v on both of r0's nodes and a 2-member gang it takes v
 * (mode 1). Members ask 10 cpu each too; mode 2: 70 cpu each, more than
 * a rack's two nodes hold (128) for two: stopped on cpu, the second
 * resource the gang asks (room_short weighs each resource on its own). */
static void plan_direct(int mode, char *reason, size_t n)
{
    int fits = mode == 1, two_v = mode >= 1;
    char *y = NULL;
    nodes(&y, 2, 2);
    group(&y, "v", "team-b", 1, 1, NULL);
    group(&y, "k", "team-b", 1, 1, NULL);
    group(&y, "k2", "team-b", 2, 1, NULL);
    group(&y, "big", "team-a", two_v ? 2 : 3, 1, "topology: {required: rack}");
    bound(&y, "v", 0, "r0-n0", 8, NULL);
    if (two_v)
        bound(&y, "v", 1, "r0-n1", 8, NULL);
    else
        bound(&y, "k", 0, "r0-n1", 8, NULL);
    bound(&y, "k2", 0, "r1-n0", 8, NULL);
    bound(&y, "k2", 1, "r1-n1", 8, NULL);
    /* 10 cpu each fit a rack (cpu is no reason to stop: the GPUs are, in
     * mode 0), 2 x 70 do not (mode 2) */
    for (int i = 0; i < (two_v ? 2 : 3); i++) {
        char pod[32];
        snprintf(pod, sizeof pod, "big-%d", i);
        tu_pod(&y, pod, "big", mode == 2 ? "nvidia.com/gpu: 8, cpu: \"70\"" : "nvidia.com/gpu: 8, cpu: \"10\"",
               NULL);
    }
    struct tg_simdata d;
    struct tg_engine e;
    struct tg_pod *pend[4];
    uint32_t np;
    const struct tg_podgroup *pg;
    load_engine(y, "ml/big", &d, &e, pend, &np, &pg);
    struct tg_gang view = {.name = "ml/big", .pg = pg, .pods = pend, .npods = np,
                           .anchor = TG_NONE, .within = TG_NONE, .priority = 1};
    struct tg_reclaim_rule rule = {v_victim, any_set, NULL};
    struct tg_preempt_in in = {.gang = &view, .priority = 1, .now_ms = 1000000, .reclaim = &rule};
    uint64_t evals = e.sched.counts ? tg__counts_evals(e.sched.counts) : 0;
    struct tg_preemption out;
    assert_int_equal(tg_preempt_plan(&e.sched, &e.gangs, &in, &out), 0);
    snprintf(reason, n, "%s", out.reason);
    if (fits) {
        assert_int_equal(out.nvictims, 1);
        assert_string_equal(out.victims[0].gang->key, "ml/v");
        assert_true(out.fit_runs > 0);
    } else {
        assert_int_equal(out.nvictims, 0);
        assert_int_equal(out.domain, TG_NONE);
        assert_int_equal(out.fit_runs, 0);
        assert_int_equal(e.sched.counts ? tg__counts_evals(e.sched.counts) : 0, evals);
    }
    tg_preemption_free(&out);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    free(y);
}

static void test_plan_stops_on_room(void **state)
{
    (void)state;
    char reason[1024];
    plan_direct(0, reason, sizeof reason);
    assert_string_equal(reason, "reclaim cannot help: no rack has room for the gang even with all 1 "
                                "unit(s) it may take gone");
    plan_direct(1, reason, sizeof reason);
    assert_non_null(strstr(reason, "evicting 1 unit(s)"));
    plan_direct(2, reason, sizeof reason); /* v's two members: two units (elastic) */
    assert_string_equal(reason, "reclaim cannot help: no rack has room for the gang even with all 2 "
                                "unit(s) it may take gone");
}

/* tg_preempt_plan by priority (no reclaim rule) for ml/hi of team-a
 * (priority 100, one pod of 8 GPUs) on one rack of 3 full nodes: a
 * priority-1 gang of team-b on r0-n0 and r0-n1 (minMember 2: whole, it
 * costs more than a gang of one pod), team-a's own priority-1 gang
 * ml/a0 on r0-n2 (own = 1; else team-c's ml/c1 there). With tenant queues
 * (in.queue) only a0 is a victim, and with no gang of its own queue below
 * it the plan finds no unit at all; with in.queue 0 (queues off) any
 * lower-priority gang is. The planner leaves other queues' gangs out of
 * its units before making them (collect_indexed): a skip that dropped the
 * preemptor's own queue, or applied with queues off, fails here. */
static void queue_plan(int own, int queues_on, char *victim, size_t n)
{
    char *y = NULL;
    nodes(&y, 1, 3);
    queue(&y, "team-a", 8);
    queue(&y, "team-b", 8);
    queue(&y, "team-c", 8);
    group(&y, "b1", "team-b", 2, 1, NULL);
    bound(&y, "b1", 0, "r0-n0", 8, NULL);
    bound(&y, "b1", 1, "r0-n1", 8, NULL);
    group(&y, own ? "a0" : "c1", own ? "team-a" : "team-c", 1, 1, NULL);
    bound(&y, own ? "a0" : "c1", 0, "r0-n2", 8, NULL);
    group(&y, "hi", "team-a", 1, 100, NULL);
    pending(&y, "hi", 1, 8);
    struct tg_simdata d;
    struct tg_engine e;
    struct tg_pod *pend[4];
    uint32_t np;
    const struct tg_podgroup *pg;
    load_engine(y, "ml/hi", &d, &e, pend, &np, &pg);
    struct tg_gang view = {.name = "ml/hi", .pg = pg, .pods = pend, .npods = np,
                           .anchor = TG_NONE, .within = TG_NONE, .priority = 100};
    struct tg_preempt_in in = {.gang = &view, .priority = 100, .now_ms = 1000000,
                               .evict_bare = 1, .queue = queues_on ? tg_intern("team-a") : 0};
    struct tg_preemption out;
    assert_int_equal(tg_preempt_plan(&e.sched, &e.gangs, &in, &out), 0);
    snprintf(victim, n, "%s", out.nvictims == 1 && out.victims[0].gang ? out.victims[0].gang->key
                              : out.nvictims ? "(several)" : out.reason);
    tg_preemption_free(&out);
    tg_engine_free(&e);
    tg_simdata_free(&d);
    free(y);
}

static void test_plan_priority_in_queue(void **state)
{
    (void)state;
    char v[1024];
    queue_plan(1, 1, v, sizeof v);
    assert_string_equal(v, "ml/a0");
    queue_plan(0, 1, v, sizeof v);
    assert_string_equal(v, "preemption cannot help: no gang or pod of lower priority to evict");
    queue_plan(1, 0, v, sizeof v); /* queues off: by priority and cost alone */
    assert_string_equal(v, "ml/a0");
    queue_plan(0, 0, v, sizeof v);
    assert_string_equal(v, "ml/c1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reclaim_below_share),
        cmocka_unit_test(test_sized_by_limit),
        cmocka_unit_test(test_not_below_victim_share),
        cmocka_unit_test(test_not_at_or_above_share),
        cmocka_unit_test(test_one_domain_whole_gangs),
        cmocka_unit_test(test_inside_queue_by_priority),
        cmocka_unit_test(test_priority_stays_in_its_queue),
        cmocka_unit_test(test_system_critical_kept),
        cmocka_unit_test(test_property_never_below_share),
        cmocka_unit_test(test_plan_stops_on_room),
        cmocka_unit_test(test_plan_priority_in_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
