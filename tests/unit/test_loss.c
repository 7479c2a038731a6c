/* A gang's life from the API's record (scheduler/loss.h): which gangs with
 * fewer members bound than minMember are half-bound (rolled back) and which
 * ran complete and lost members (never rolled back; a grace, then
 * gang.onMemberLoss), what the grace does, the policy keys, and the decoding
 * of the records this reads (PodGroup conditions Complete and MemberLoss, a
 * pod's status.startTime). Replacements (issue 20): placed in the tightest
 * domain around the healthy members, never on a failing node, the reason in
 * numbers when none fits, gang.onNoReplacement. No apiserver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "config/policy.h"
#include "model/objects.h"
#include "scheduler/loss.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "testutil.h"

static enum tg_life life(uint32_t bound, uint32_t min, int ours, int complete, uint32_t started)
{
    struct tg_life_facts f = {.bound = bound, .min = min, .started = started,
                              .status_ours = (uint8_t)ours, .complete = (uint8_t)complete};
    return tg_life_classify(&f);
}

static void classify_from_the_record(void **state)
{
    (void)state;
    /* nothing bound, or minMember bound: nothing to decide */
    assert_int_equal(life(0, 4, 1, 1, 0), TG_LIFE_WHOLE);
    assert_int_equal(life(4, 4, 1, 0, 0), TG_LIFE_WHOLE);
    assert_int_equal(life(5, 4, 0, 0, 0), TG_LIFE_WHOLE);
    /* our PodGroup's status says Complete: a running gang that lost a member,
     * whether its pods ran or not (no kubelet, or not yet) */
    assert_int_equal(life(3, 4, 1, 1, 0), TG_LIFE_SHORT);
    assert_int_equal(life(1, 4, 1, 1, 1), TG_LIFE_SHORT);
    /* ... never complete: half-bound, even when its bound members started
     * (a kubelet starts a pod as soon as it is bound) */
    assert_int_equal(life(3, 4, 1, 0, 0), TG_LIFE_HALF_BOUND);
    assert_int_equal(life(3, 4, 1, 0, 3), TG_LIFE_HALF_BOUND);
    /* no status of ours (a Job's gang, a peer's PodGroup): members that ran */
    assert_int_equal(life(3, 4, 0, 0, 1), TG_LIFE_SHORT);
    assert_int_equal(life(3, 4, 0, 0, 0), TG_LIFE_HALF_BOUND);
    /* a complete flag without our status is not read */
    assert_int_equal(life(3, 4, 0, 1, 0), TG_LIFE_HALF_BOUND);
}

static void grace_then_policy(void **state)
{
    (void)state;
    struct tg_policy p;
    tg_policy_default(&p);
    assert_int_equal(p.member_loss_grace_s, 300);
    assert_int_equal(p.on_member_loss, TG_LOSS_KEEP);
    int64_t due = 0;
    assert_int_equal(tg_loss_step(&p, 1000000, 1000000, &due), TG_LOSS_STEP_WAIT);
    assert_int_equal(due, 1300000);
    assert_int_equal(tg_loss_step(&p, 1000000, 1299999, &due), TG_LOSS_STEP_WAIT);
    assert_int_equal(tg_loss_step(&p, 1000000, 1300000, &due), TG_LOSS_STEP_KEEP);
    p.on_member_loss = TG_LOSS_EVICT;
    assert_int_equal(tg_loss_step(&p, 1000000, 1300000, &due), TG_LOSS_STEP_EVICT);
    /* a since in the past (read from the PodGroup by a new process): the
     * same decision at once, no new grace */
    assert_int_equal(tg_loss_step(&p, 0, 1300000, &due), TG_LOSS_STEP_EVICT);
    p.member_loss_grace_s = 0;
    assert_int_equal(tg_loss_step(&p, 5000, 5000, &due), TG_LOSS_STEP_EVICT);
}

static void policy_keys(void **state)
{
    (void)state;
    struct tg_policy p;
    struct tg_sb err = {0};
    const char *y = "gang: {memberLossGraceSeconds: 60, onMemberLoss: evict}\n";
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), 0);
    assert_int_equal(p.member_loss_grace_s, 60);
    assert_int_equal(p.on_member_loss, TG_LOSS_EVICT);
    struct tg_sb dump = {0};
    tg_policy_dump(&p, &dump);
    assert_non_null(strstr(tg_sb_str(&dump), "onMemberLoss: evict"));
    assert_non_null(strstr(tg_sb_str(&dump), "memberLossGraceSeconds: 60"));
    tg_sb_free(&dump);
    y = "gang: {onMemberLoss: restart}\n";
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), TG_EPARSE);
    assert_non_null(strstr(tg_sb_str(&err), "gang.onMemberLoss: must be one of keep, evict"));
    tg_sb_free(&err);
    y = "gang: {memberLossGraceSeconds: -1}\n";
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), TG_EPARSE);
    assert_non_null(strstr(tg_sb_str(&err), "gang.memberLossGraceSeconds"));
    tg_sb_free(&err);
}

static void quiet(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                  const char *msg)
{
    (void)ud, (void)is_error, (void)at, (void)what, (void)field, (void)msg;
}

static struct tg_podgroup *pg_of(const char *status)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"topogang.io/v1alpha1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":4},"
             "\"status\":%s}", status);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    struct tg_diag d = {quiet, NULL, 0, 0};
    struct tg_podgroup *g = NULL;
    assert_int_equal(tg_podgroup_decode(j, &d, &g), 0);
    cJSON_Delete(j);
    return g;
}

static void records_decoded(void **state)
{
    (void)state;
    struct tg_podgroup *g = pg_of("{}");
    assert_int_equal(g->complete, 0);
    assert_int_equal(g->loss, TG_PGLOSS_NONE);
    tg_podgroup_free(&g);
    g = pg_of("{\"phase\":\"Scheduled\",\"conditions\":["
              "{\"type\":\"Scheduled\",\"status\":\"True\",\"reason\":\"Scheduled\",\"message\":\"m\","
              "\"lastTransitionTime\":\"2026-11-26T10:00:00Z\"},"
              "{\"type\":\"Complete\",\"status\":\"True\",\"reason\":\"MinMemberBound\",\"message\":\"m\","
              "\"lastTransitionTime\":\"2026-11-26T10:00:00Z\"},"
              "{\"type\":\"MemberLoss\",\"status\":\"True\",\"reason\":\"WaitingForReplacements\","
              "\"message\":\"m\",\"lastTransitionTime\":\"2026-11-26T10:05:00Z\"}]}");
    assert_int_equal(g->complete, 1);
    assert_int_equal(g->loss, TG_PGLOSS_WAITING);
    assert_true(g->loss_since_ms - g->complete_since_ms == 300000);
    tg_podgroup_free(&g);
    g = pg_of("{\"conditions\":[{\"type\":\"MemberLoss\",\"status\":\"True\",\"reason\":\"KeptRunning\","
              "\"message\":\"m\",\"lastTransitionTime\":\"2026-11-26T10:05:00Z\"},"
              "{\"type\":\"Complete\",\"status\":\"False\",\"reason\":\"x\",\"message\":\"m\","
              "\"lastTransitionTime\":\"2026-11-26T10:00:00Z\"}]}");
    assert_int_equal(g->complete, 0); /* False is not complete */
    assert_int_equal(g->loss, TG_PGLOSS_KEPT);
    tg_podgroup_free(&g);
    g = pg_of("{\"conditions\":[{\"type\":\"MemberLoss\",\"status\":\"True\",\"reason\":\"Evicted\"}]}");
    assert_int_equal(g->loss, TG_PGLOSS_EVICTED);
    assert_int_equal(g->loss_since_ms, 0); /* no time: the reader's own clock */
    tg_podgroup_free(&g);
}

static struct tg_pod *pod_of(const char *status)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u\"},"
             "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\"}]},\"status\":%s}",
             status);
    cJSON *j = cJSON_Parse(text);
    struct tg_diag d = {quiet, NULL, 0, 0};
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(j, 0, &d, &p), 0);
    cJSON_Delete(j);
    return p;
}

static void pod_started(void **state)
{
    (void)state;
    struct tg_pod *p = pod_of("{\"phase\":\"Pending\"}");
    assert_int_equal(p->started, 0); /* bound, no kubelet took it yet */
    tg_pod_free(&p);
    p = pod_of("{\"phase\":\"Pending\",\"startTime\":\"2026-11-26T10:00:00Z\"}");
    assert_int_equal(p->started, 1); /* a kubelet took it (pulling images) */
    tg_pod_free(&p);
    p = pod_of("{\"phase\":\"Running\"}");
    assert_int_equal(p->started, 1);
    tg_pod_free(&p);
}


/* ---- replacements (issue 20) --------------------------------------------- */

/* A GPU node in block b1 with its rack and NVLink clique; extra: more Node
 * fields (spec taints, status conditions) as YAML lines. */
static void gpu_node(char **buf, const char *name, const char *rack, const char *clique,
                     const char *spec, const char *conditions)
{
    tu_cat(buf, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n"
                "    kubernetes.io/hostname: %s\n    topology.kubernetes.io/zone: z1\n"
                "    cloud.google.com/gce-topology-block: b1\n    topogang.io/rack: %s\n"
                "    nvidia.com/gpu.clique: %s\nspec: {%s}\nstatus:\n%s"
                "  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", nvidia.com/gpu: \"8\"}\n",
           name, name, rack, clique, spec ? spec : "", conditions ? conditions : "");
}

/* A 4-pod gang g (minMember 4, required: required) with members m0..m2
 * bound on the nodes named and m3, its replacement, pending (tolerating
 * every taint when tolerate). */
static void gang_short(char **buf, const char *required, const char *n0, const char *n1,
                       const char *n2, int tolerate)
{
    tu_cat(buf, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
                "metadata: {name: g, namespace: ml}\nspec: {minMember: 4, topology: {required: %s}}\n",
           required);
    const char *on[3] = {n0, n1, n2};
    for (int i = 0; i < 3; i++) {
        char name[8], spec[64];
        snprintf(name, sizeof name, "m%d", i);
        snprintf(spec, sizeof spec, "  nodeName: %s\n", on[i]);
        tu_pod(buf, name, "g", "nvidia.com/gpu: 8", spec);
    }
    tu_pod(buf, "m3", "g", "nvidia.com/gpu: 8", tolerate ? "  tolerations: [{operator: Exists}]\n" : NULL);
}

static void replacement_tightest_domain(void **state)
{
    (void)state;
    /* rack r1: clique c1 = a1 (m0), a2, a7 free; c2 = a3, a4 (m1, m2); c5 =
     * a5 free. rack r2: b1, b2 free. Best fit in the rack alone would take
     * a5 (a clique it fills exactly); the replacement belongs in m0's NVLink
     * domain: a2 or a7. */
    char *y = NULL;
    gpu_node(&y, "a1", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a2", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a7", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a3", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a4", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a5", "r1", "c5", NULL, NULL);
    gpu_node(&y, "b1", "r2", "c3", NULL, NULL);
    gpu_node(&y, "b2", "r2", "c3", NULL, NULL);
    gang_short(&y, "block", "a1", "a3", "a4", 0);
    cJSON *res = tu_simulate(NULL, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/g"), "status"), "Scheduled");
    const char *n = tu_node_of(res, "ml/m3");
    assert_non_null(n);
    assert_true(!strcmp(n, "a2") || !strcmp(n, "a7"));
    cJSON_Delete(res);
    free(y);

    /* the healthy members' domain, not a failing member's: m0 sits on a1,
     * tainted NoExecute (its pod not yet evicted: still a member); m1, m2
     * in c2 beside a free a6. a2 (c1, a1's clique) is free too. */
    y = NULL;
    gpu_node(&y, "a1", "r1", "c1", "taints: [{key: gpu-broken, effect: NoExecute}]", NULL);
    gpu_node(&y, "a2", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a3", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a4", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a6", "r1", "c2", NULL, NULL);
    gang_short(&y, "rack", "a1", "a3", "a4", 0);
    res = tu_simulate(NULL, y);
    assert_string_equal(tu_str(tu_gang(res, "ml/g"), "status"), "Scheduled");
    assert_string_equal(tu_node_of(res, "ml/m3"), "a6");
    cJSON_Delete(res);
    free(y);
}

static void replacement_never_on_failing_node(void **state)
{
    (void)state;
    /* rack r1: a1..a3 hold m0..m2; a4 (tainted NoExecute) and a5 (NotReady)
     * are free and the replacement tolerates every taint; r2 has room but
     * the gang requires one rack. No replacement: the reason in numbers. */
    char *y = NULL;
    gpu_node(&y, "a1", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a2", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a3", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a4", "r1", "c1", "taints: [{key: gpu-broken, effect: NoExecute}]", NULL);
    gpu_node(&y, "a5", "r1", "c1", NULL, "  conditions: [{type: Ready, status: \"False\"}]\n");
    gpu_node(&y, "b1", "r2", "c3", NULL, NULL);
    gang_short(&y, "rack", "a1", "a2", "a3", 1);
    cJSON *res = tu_simulate(NULL, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_null(tu_node_of(res, "ml/m3"));
    const char *why = tu_str(g, "reason");
    assert_non_null(strstr(why, "replacement for rack z1/b1/r1: 0 of 5 nodes in the rack have room "
                                "for 1 x nvidia.com/gpu=8 (2 not Ready or tainted NoExecute)"));
    assert_non_null(strstr(why, "1 node tainted gpu-broken"));
    assert_non_null(strstr(why, "1 node not Ready"));
    cJSON_Delete(res);
    free(y);

    /* a pod that is no replacement (no member placed) may still use a node
     * whose NoExecute taint it tolerates: only replacements avoid it */
    y = NULL;
    gpu_node(&y, "a4", "r1", "c1", "taints: [{key: gpu-broken, effect: NoExecute}]", NULL);
    tu_pod(&y, "solo", NULL, "nvidia.com/gpu: 8", "  tolerations: [{operator: Exists}]\n");
    res = tu_simulate(NULL, y);
    assert_string_equal(tu_node_of(res, "ml/solo"), "a4");
    cJSON_Delete(res);
    free(y);
}

/* A pod (8 GPUs) with metadata lines `meta`, bound to node (NULL: pending). */
static void gpu_pod(char **buf, const char *name, const char *meta, const char *node)
{
    tu_cat(buf, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n%s"
                "spec:\n  schedulerName: topogang\n%s%s%s  containers:\n  - name: c\n"
                "    resources: {requests: {nvidia.com/gpu: 8}}\n",
           name, meta, node ? "  nodeName: " : "", node ? node : "", node ? "\n" : "");
}

/* A pod of gang g in sub-group sg, bound to node (NULL: pending). */
static void sg_pod(char **buf, const char *name, const char *sg, const char *node)
{
    char meta[160];
    snprintf(meta, sizeof meta,
             "  labels: {topogang.io/pod-group: g, topogang.io/sub-group: %s}\n", sg);
    gpu_pod(buf, name, meta, node);
}

/* Gang g: minMember 4, block required, sub-groups tp0 and tp1 of two pods,
 * each required in one NVLink domain: m0 (tp0) bound on n0, m2 and m3 (tp1)
 * on n2 and n3, m1 (tp0) recreated, pending. */
static void gang_sub_short(char **buf, const char *n0, const char *n2, const char *n3)
{
    tu_cat(buf, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
                "metadata: {name: g, namespace: ml}\nspec:\n  minMember: 4\n"
                "  topology: {required: block}\n  subGroups:\n"
                "  - {name: tp0, minMember: 2, topology: {required: nvlink-domain}}\n"
                "  - {name: tp1, minMember: 2, topology: {required: nvlink-domain}}\n");
    sg_pod(buf, "m0", "tp0", n0);
    sg_pod(buf, "m1", "tp0", NULL);
    sg_pod(buf, "m2", "tp1", n2);
    sg_pod(buf, "m3", "tp1", n3);
}

/* Issue 20: a running gang's sub-group that lost a member gets its
 * replacement inside the sub-group's own NVLink domain (not the domain most
 * members hold, not another with more room); with no room there it waits,
 * the reason naming the sub-group and its domain. Before, a sub-grouped gang
 * with members bound was refused ("not supported yet"). */
static void replacement_in_its_subgroup(void **state)
{
    (void)state;
    char *y = NULL;
    gpu_node(&y, "a1", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a2", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a3", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a4", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a6", "r1", "c2", NULL, NULL);
    gpu_node(&y, "b1", "r2", "c3", NULL, NULL);
    gang_sub_short(&y, "a1", "a3", "a4");
    cJSON *res = tu_simulate(NULL, y);
    const cJSON *g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    assert_string_equal(tu_node_of(res, "ml/m1"), "a2");
    cJSON_Delete(res);
    free(y);

    /* c1's other node is tainted NoExecute: c2 and r2 have room, but tp0
     * must stay in c1: it waits, and says where */
    y = NULL;
    gpu_node(&y, "a1", "r1", "c1", NULL, NULL);
    gpu_node(&y, "a2", "r1", "c1", "taints: [{key: gpu-broken, effect: NoExecute}]", NULL);
    gpu_node(&y, "a3", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a4", "r1", "c2", NULL, NULL);
    gpu_node(&y, "a6", "r1", "c2", NULL, NULL);
    gpu_node(&y, "b1", "r2", "c3", NULL, NULL);
    gang_sub_short(&y, "a1", "a3", "a4");
    res = tu_simulate(NULL, y);
    g = tu_gang(res, "ml/g");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_null(tu_node_of(res, "ml/m1"));
    const char *why = tu_str(g, "reason");
    if (!strstr(why, "sub-group tp0: its nvlink-domain z1/b1/r1/c1 (where its members run) has "
                     "room for 0 of its 1 pods"))
        fail_msg("reason: %s", why);
    cJSON_Delete(res);
    free(y);
}

/* A pod of KAI gang g in leaf `leaf`, bound to node (NULL: pending). */
static void kai_pod(char **buf, const char *name, const char *leaf, const char *node)
{
    char meta[160];
    snprintf(meta, sizeof meta, "  annotations: {pod-group-name: g}\n"
                                "  labels: {kai.scheduler/subgroup-name: %s}\n", leaf);
    gpu_pod(buf, name, meta, node);
}

/* KAI gang g (minMember 4): parents p1 and p2, each required in one rack;
 * p1's leaves a and b (one pod each), p2's leaf c (two pods), each leaf in
 * one NVLink domain. a-0 runs on a1 (rack r1), c-0 and c-1 on b1 and b2
 * (rack r2); b-0 lost its node: its recreated pod is pending. */
static void kai_short(char **buf)
{
    tu_cat(buf, "---\napiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\n"
                "metadata: {name: g, namespace: ml}\nspec:\n  minMember: 4\n  subGroups:\n"
                "  - {name: p1, topologyConstraint: {requiredTopologyLevel: topogang.io/rack}}\n"
                "  - {name: p2, topologyConstraint: {requiredTopologyLevel: topogang.io/rack}}\n"
                "  - {name: a, parent: p1, minMember: 1, topologyConstraint: "
                "{requiredTopologyLevel: nvidia.com/gpu.clique}}\n"
                "  - {name: b, parent: p1, minMember: 1, topologyConstraint: "
                "{requiredTopologyLevel: nvidia.com/gpu.clique}}\n"
                "  - {name: c, parent: p2, minMember: 2, topologyConstraint: "
                "{requiredTopologyLevel: nvidia.com/gpu.clique}}\n");
    kai_pod(buf, "a-0", "a", "a1");
    kai_pod(buf, "b-0", "b", NULL);
    kai_pod(buf, "c-0", "c", "b1");
    kai_pod(buf, "c-1", "c", "b2");
}

/* Issue 20: a running gang under KAI parents with a topologyConstraint of
 * their own. Leaf b lost its only member: its replacement goes into an
 * NVLink domain inside its parent p1's rack (r1, where its sibling a runs:
 * c2's a2 or a3), not into the tightest free NVLink domain (c4, rack r2:
 * where it goes without the parents' constraint). With no room in r1 (a2
 * and a3 tainted NoExecute) it waits: b4 is never taken. simulate -o json
 * names each parent's rack. */
static void replacement_under_kai_parent(void **state)
{
    (void)state;
    for (int broken = 0; broken < 2; broken++) {
        char *y = NULL;
        const char *taint = broken ? "taints: [{key: gpu-broken, effect: NoExecute}]" : NULL;
        gpu_node(&y, "a1", "r1", "c1", NULL, NULL);
        gpu_node(&y, "a2", "r1", "c2", taint, NULL);
        gpu_node(&y, "a3", "r1", "c2", taint, NULL);
        gpu_node(&y, "b1", "r2", "c3", NULL, NULL);
        gpu_node(&y, "b2", "r2", "c3", NULL, NULL);
        gpu_node(&y, "b4", "r2", "c4", NULL, NULL);
        kai_short(&y);
        cJSON *res = tu_simulate(NULL, y);
        const cJSON *g = tu_gang(res, "ml/g");
        assert_non_null(g);
        const char *st = tu_str(g, "status");
        if (!broken) {
            if (strcmp(st, "Scheduled"))
                fail_msg("status %s: %s", st, tu_str(g, "reason"));
            const char *on = tu_node_of(res, "ml/b-0");
            assert_non_null(on);
            assert_int_equal(on[0], 'a'); /* rack r1 (a2 or a3), not b4 */
            const cJSON *o;
            int seen = 0;
            cJSON_ArrayForEach(o, cJSON_GetObjectItem(g, "outerGroups")) {
                const char *want = !strcmp(tu_str(o, "name"), "p1") ? "z1/b1/r1" : "z1/b1/r2";
                assert_string_equal(tu_str(o, "level"), "rack");
                assert_string_equal(tu_str(o, "domain"), want);
                seen++;
            }
            assert_int_equal(seen, 2);
        } else {
            assert_string_not_equal(st, "Scheduled");
            assert_null(tu_node_of(res, "ml/b-0"));
        }
        cJSON_Delete(res);
        free(y);
    }
}

static void no_replacement_policy(void **state)
{
    (void)state;
    struct tg_policy p;
    tg_policy_default(&p);
    assert_int_equal(p.on_no_replacement, TG_NOROOM_WAIT);
    assert_int_equal(tg_loss_no_room(&p, 1), TG_NOROOM_STEP_WAIT);
    struct tg_sb err = {0};
    const char *y = "gang: {onNoReplacement: requeue}\n";
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), 0);
    assert_int_equal(p.on_no_replacement, TG_NOROOM_REQUEUE);
    assert_int_equal(tg_loss_no_room(&p, 1), TG_NOROOM_STEP_REQUEUE);
    /* not before its loss is announced (a gang deleted whole loses its
     * members in a burst: nothing to requeue) */
    assert_int_equal(tg_loss_no_room(&p, 0), TG_NOROOM_STEP_WAIT);
    y = "gang: {onNoReplacement: later}\n";
    assert_int_not_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), 0);
    assert_non_null(strstr(tg_sb_str(&err), "gang.onNoReplacement"));
    tg_sb_free(&err);

    char buf[256];
    tg_loss_explain(buf, sizeof buf, "replacement", "rack", "z/b/r3", 0, 3, 0, "1 x nvidia.com/gpu=8");
    assert_string_equal(buf, "replacement for rack z/b/r3: 0 of 3 nodes in the rack have room for "
                             "1 x nvidia.com/gpu=8");
    tg_loss_explain(buf, sizeof buf, "replacement", "nvlink-domain", "c1", 1, 1, 1, "1 x cpu=2");
    assert_string_equal(buf, "replacement for nvlink-domain c1: 1 of 1 node in the nvlink-domain "
                             "has room for 1 x cpu=2 (1 not Ready or tainted NoExecute)");
    /* no required level: the whole cluster, no empty name */
    tg_loss_explain(buf, sizeof buf, "replacement", NULL, NULL, 2, 12, 0, "1 x cpu=2");
    assert_string_equal(buf, "replacement anywhere in the cluster: 2 of 12 nodes in the cluster "
                             "have room for 1 x cpu=2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classify_from_the_record), cmocka_unit_test(grace_then_policy),
        cmocka_unit_test(policy_keys), cmocka_unit_test(records_decoded),
        cmocka_unit_test(pod_started), cmocka_unit_test(replacement_tightest_domain),
        cmocka_unit_test(replacement_never_on_failing_node), cmocka_unit_test(no_replacement_policy),
        cmocka_unit_test(replacement_in_its_subgroup),
        cmocka_unit_test(replacement_under_kai_parent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
