/* The NUMA plugin over the real cluster model: annotations decoded on node
 * changes, GPU pods aligned to domains as they are placed and removed, the
 * filter/count verdicts (a 4-GPU pod fits one domain of 4, not 2+2), scores,
 * and bad annotations ignored with a warning and a counter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "config/policy.h"
#include "model/cluster.h"
#include "model/objects.h"
#include "plugins/numa.h"
#include "util/intern.h"
#include "util/strbuf.h"

static void on_node(void *ud, struct tg_cluster *c, uint32_t slot)
{
    (void)ud;
    tg_plugin_numa.node_changed(c, slot);
}

static void on_usage(void *ud, struct tg_cluster *c, struct tg_usage *u, int sign)
{
    (void)ud;
    tg_plugin_numa.usage_changed(c, u, sign);
}

static struct tg_cluster C;
static struct tg_cycle_ctx cx = {.cluster = &C};

/* Annotation of a single-numa-node machine with one domain per gpus[i], each
 * on NUMA node i (32 CPUs, 256 GiB); rdma[i] paired GPUs. */
static void annot(struct tg_sb *b, const char *policy, const int *gpus, const int *rdma, int n)
{
    tg_sb_printf(b, "{\"v\":1,\"policy\":\"%s\",\"numa\":[", policy);
    for (int i = 0; i < n; i++)
        tg_sb_printf(b, "%s{\"id\":%d,\"cpus\":32,\"mem\":274877906944}", i ? "," : "", i);
    tg_sb_puts(b, "],\"domains\":[");
    for (int i = 0; i < n; i++)
        tg_sb_printf(b, "%s{\"id\":%d,\"numa\":%d,\"gpus\":%d,\"nvlink\":-1,\"roots\":[],"
                     "\"nics\":[],\"rdma_gpus\":%d}", i ? "," : "", i, i, gpus[i],
                     rdma ? rdma[i] : 0);
    tg_sb_puts(b, "]}");
}

/* Sets a Node with 64 CPUs, 512 GiB, gpus GPUs, the annotation (NULL: none)
 * and the label topogang.io/topology-policy=label_policy (NULL: none). */
static uint32_t set_node_l(const char *name, const char *annotation, int gpus,
                           const char *label_policy)
{
    struct tg_sb j = {0};
    tg_sb_printf(&j, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":"
                 "{\"kubernetes.io/hostname\":\"%s\"", name, name);
    if (label_policy)
        tg_sb_printf(&j, ",\"topogang.io/topology-policy\":\"%s\"", label_policy);
    tg_sb_putc(&j, '}');
    if (annotation) {
        tg_sb_puts(&j, ",\"annotations\":{\"topogang.io/topology\":");
        tg_sb_json_str(&j, annotation);
        tg_sb_putc(&j, '}');
    }
    tg_sb_printf(&j, "},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\","
                 "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\",\"rdma/hca_shared_devices_a\":\"8\"}}}",
                 gpus);
    cJSON *o = cJSON_Parse(j.s);
    assert_non_null(o);
    struct tg_node_obj *n = NULL;
    assert_int_equal(tg_node_decode(o, NULL, &n), 0);
    cJSON_Delete(o);
    tg_sb_free(&j);
    assert_int_equal(tg_cluster_node_set(&C, n), 0);
    uint32_t slot = tg_cluster_slot(&C, tg_intern(name), 0);
    assert_int_not_equal(slot, TG_NONE);
    return slot;
}

static uint32_t set_node(const char *name, const char *annotation, int gpus)
{
    return set_node_l(name, annotation, gpus, NULL);
}

static struct tg_pod *pod(const char *name, int gpus, int rdma)
{
    char j[1024];
    snprintf(j, sizeof j,
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"cpu\":\"8\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"%d\"%s}}}]}}",
             name, gpus, rdma ? ",\"rdma/hca_shared_devices_a\":\"1\"" : "");
    cJSON *o = cJSON_Parse(j);
    assert_non_null(o);
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(o, 0, NULL, &p), 0);
    cJSON_Delete(o);
    return p;
}

static uint32_t count(const struct tg_pod *p, uint32_t slot, struct tg_status *st)
{
    struct tg_shape sh = {.pod = p, .npods = 1};
    return tg_plugin_numa.count(&cx, &sh, slot, st);
}

static int filter(const struct tg_pod *p, uint32_t slot, struct tg_status *st)
{
    struct tg_shape sh = {.pod = p, .npods = 1};
    return tg_plugin_numa.filter(&cx, &sh, slot, st);
}

static int score(const struct tg_pod *p, uint32_t slot)
{
    struct tg_shape sh = {.pod = p, .npods = 1};
    return tg_plugin_numa.score(&cx, &sh, slot);
}

static int setup(void **state)
{
    (void)state;
    uint32_t level = tg_intern("kubernetes.io/hostname");
    if (tg_cluster_init(&C, &level, 1))
        return -1;
    struct tg_cluster_hooks h = {.node_changed = on_node, .usage_changed = on_usage};
    return tg_cluster_listen(&C, &h);
}

static int teardown(void **state)
{
    (void)state;
    tg_cluster_free(&C);                /* frees every node's model (ASan checks) */
    return 0;
}

/* The case: 4 GPUs in one domain vs 2+2. */
static void test_four_vs_two_plus_two(void **state)
{
    (void)state;
    struct tg_sb a = {0}, b = {0};
    annot(&a, "single-numa-node", (const int[]){4}, NULL, 1);
    annot(&b, "single-numa-node", (const int[]){2, 2}, NULL, 2);
    uint32_t one = set_node("one-domain", a.s, 4);
    uint32_t split = set_node("two-domains", b.s, 4);
    struct tg_pod *p4 = pod("w4", 4, 0), *p2 = pod("w2", 2, 0);
    struct tg_status st = {0};

    assert_non_null(tg_numa_node(&C, one));
    assert_int_equal(filter(p4, one, &st), 1);
    assert_int_equal(count(p4, one, &st), 1);
    assert_int_equal(filter(p4, split, &st), 0);
    assert_int_equal(st.code, TG_UNRESOLVABLE);
    assert_int_equal(st.reason, TG_R_NUMA);
    assert_string_equal(tg_res_name(st.arg), "nvidia.com/gpu");
    memset(&st, 0, sizeof st);
    assert_int_equal(count(p4, split, &st), 0);
    assert_int_equal(st.reason, TG_R_NUMA);
    assert_true(score(p4, one) > score(p4, split));

    /* a placed 2-GPU pod takes half of the one domain: no room for 4 now */
    assert_int_equal(tg_cluster_assume(&C, p2, one), 0);
    struct tg_usage *u = tg_cluster_usage(&C, "ml/w2");
    assert_non_null(u);
    assert_int_equal(u->inner, 0);
    memset(&st, 0, sizeof st);
    assert_int_equal(filter(p4, one, &st), 1);           /* could fit an empty node */
    assert_int_equal(count(p4, one, &st), 0);
    assert_int_equal(st.code, TG_UNSCHEDULABLE);
    assert_int_equal(st.reason, TG_R_NUMA);
    assert_int_equal(count(p2, one, &st), 1);
    /* removed: room again */
    tg_cluster_pod_delete(&C, "ml/w2");
    assert_int_equal(count(p4, one, &st), 1);

    /* the annotation changes under a placed pod: it is re-aligned */
    assert_int_equal(tg_cluster_assume(&C, p2, one), 0);
    set_node("one-domain", b.s, 4);
    assert_int_equal(tg_fit_free_gpus(tg_numa_node(&C, one), 0), 0);
    u = tg_cluster_usage(&C, "ml/w2");
    assert_int_equal(u->inner, 0);
    assert_int_equal(tg_fit_free_gpus(tg_numa_node(&C, one), 1), 2);
    assert_int_equal(count(p2, one, &st), 1);
    /* the node loses its annotation: no limit, usage unaligned */
    set_node("one-domain", NULL, 4);
    assert_null(tg_numa_node(&C, one));
    assert_int_equal(count(p4, one, &st), UINT32_MAX);
    tg_cluster_pod_delete(&C, "ml/w2");

    tg_pod_free(&p4);
    tg_pod_free(&p2);
    tg_sb_free(&a);
    tg_sb_free(&b);
}

/* Pods that arrive before their node's annotation (an informer relist
 * delivers them in any order) are aligned once the model exists. */
static void test_pods_before_nodes(void **state)
{
    (void)state;
    struct tg_sb a = {0};
    annot(&a, "single-numa-node", (const int[]){4, 4}, NULL, 2);
    struct tg_pod *p3 = pod("early-3", 3, 0), *q3 = pod("early-q", 3, 0), *p4 = pod("x4", 4, 0);
    /* a slot without a Node object yet, holding two 3-GPU pods */
    uint32_t s = tg_cluster_slot(&C, tg_intern("late"), 1);
    assert_int_equal(tg_cluster_assume(&C, p3, s), 0);
    assert_int_equal(tg_cluster_assume(&C, q3, s), 0);
    assert_int_equal(tg_cluster_usage(&C, "ml/early-3")->inner, 0xff);
    set_node("late", a.s, 8);
    struct tg_status st;
    assert_int_equal(count(p4, s, &st), 0);             /* 3+3 used of 4+4: no 4 left */
    assert_int_not_equal(tg_cluster_usage(&C, "ml/early-3")->inner,
                         tg_cluster_usage(&C, "ml/early-q")->inner);
    tg_cluster_pod_delete(&C, "ml/early-3");
    assert_int_equal(count(p4, s, &st), 1);
    tg_cluster_pod_delete(&C, "ml/early-q");
    assert_int_equal(count(p4, s, &st), 2);
    tg_pod_free(&p3);
    tg_pod_free(&q3);
    tg_pod_free(&p4);
    tg_sb_free(&a);
}

/* Policy none publishes the domains but sets no limit. */
static void test_policy_none(void **state)
{
    (void)state;
    struct tg_sb a = {0};
    annot(&a, "none", (const int[]){2, 2}, NULL, 2);
    uint32_t s = set_node("lenient", a.s, 4);
    struct tg_pod *p4 = pod("n4", 4, 0);
    struct tg_status st = {0};
    assert_int_equal(filter(p4, s, &st), 1);
    assert_int_equal(count(p4, s, &st), UINT32_MAX);
    assert_int_equal(score(p4, s), 0);                   /* still: fits no domain */
    tg_pod_free(&p4);
    tg_sb_free(&a);
}

/* GPU + RDMA request: the domain with a GPU+NIC pair wins and scores higher. */
static void test_rdma_pair(void **state)
{
    (void)state;
    struct tg_sb a = {0}, b = {0};
    annot(&a, "single-numa-node", (const int[]){2, 4}, (const int[]){0, 2}, 2);
    annot(&b, "single-numa-node", (const int[]){2, 4}, NULL, 2);
    uint32_t paired = set_node("paired", a.s, 6), unpaired = set_node("unpaired", b.s, 6);
    struct tg_pod *p = pod("r2", 2, 1);
    assert_true(score(p, paired) > score(p, unpaired));
    assert_int_equal(tg_cluster_assume(&C, p, paired), 0);
    assert_int_equal(tg_cluster_usage(&C, "ml/r2")->inner, 1);   /* not the tighter domain 0 */
    tg_cluster_pod_delete(&C, "ml/r2");
    struct tg_pod *q = pod("q2", 2, 0);
    assert_int_equal(tg_cluster_assume(&C, q, paired), 0);
    assert_int_equal(tg_cluster_usage(&C, "ml/q2")->inner, 0);   /* best fit without RDMA */
    tg_cluster_pod_delete(&C, "ml/q2");
    tg_pod_free(&p);
    tg_pod_free(&q);
    tg_sb_free(&a);
    tg_sb_free(&b);
}

/* Bad annotations: no model, no limit, one warning and one count per
 * distinct annotation; no annotation at all is not "bad". */
static void test_bad_annotations(void **state)
{
    (void)state;
    uint64_t before = tg_numa_bad_annotations();
    struct tg_pod *p4 = pod("b4", 4, 0);
    struct tg_status st = {0};
    uint32_t s = set_node("hostile", "{\"v\":1,\"policy\":\"single-numa-node\",\"numa\":[],"
                          "\"domains\":[{\"id\":0,\"numa\":0,\"gpus\":99999999}]}", 4);
    assert_null(tg_numa_node(&C, s));
    assert_int_equal(tg_numa_bad_annotations(), before + 1);
    assert_int_equal(filter(p4, s, &st), 1);
    assert_int_equal(count(p4, s, &st), UINT32_MAX);
    assert_int_equal(score(p4, s), 50);
    /* the same annotation again (a label change, say): no new warning */
    set_node("hostile", "{\"v\":1,\"policy\":\"single-numa-node\",\"numa\":[],"
             "\"domains\":[{\"id\":0,\"numa\":0,\"gpus\":99999999}]}", 4);
    assert_int_equal(tg_numa_bad_annotations(), before + 1);
    set_node("hostile", "{\"v\":1,\"pol", 4);           /* truncated */
    assert_int_equal(tg_numa_bad_annotations(), before + 2);
    /* a pod placed on a node without a model is not aligned */
    assert_int_equal(tg_cluster_assume(&C, p4, s), 0);
    assert_int_equal(tg_cluster_usage(&C, "ml/b4")->inner, 0xff);
    tg_cluster_pod_delete(&C, "ml/b4");
    uint32_t plain = set_node("plain", NULL, 4);
    assert_int_equal(tg_numa_bad_annotations(), before + 2);
    assert_int_equal(count(p4, plain, &st), UINT32_MAX);
    tg_pod_free(&p4);
}

/* Where a node's policy comes from: the numa.policyLabel label, else the
 * agent's annotation unless none, else numa.defaultPolicy. */
static void test_policy_sources(void **state)
{
    (void)state;
    static struct tg_policy pol;
    tg_policy_default(&pol);
    cx.policy = &pol;
    struct tg_sb none = {0}, single = {0};
    annot(&none, "none", (const int[]){2, 2}, NULL, 2);
    annot(&single, "single-numa-node", (const int[]){2, 2}, NULL, 2);
    struct tg_pod *p4 = pod("p4", 4, 0);
    struct tg_status st;

    /* default policy none, agent none: no limit */
    uint32_t a = set_node_l("agent-none", none.s, 4, NULL);
    assert_int_equal(count(p4, a, &st), UINT32_MAX);
    /* the label says single-numa-node: limited */
    uint32_t b = set_node_l("label-single", none.s, 4, "single-numa-node");
    assert_int_equal(count(p4, b, &st), 0);
    assert_int_equal(filter(p4, b, &st), 0);
    /* the label says none (or best-effort) over the agent's single-numa-node */
    uint32_t c = set_node_l("label-none", single.s, 4, "none");
    assert_int_equal(count(p4, c, &st), UINT32_MAX);
    uint32_t d = set_node_l("label-best-effort", single.s, 4, "best-effort");
    assert_int_equal(count(p4, d, &st), UINT32_MAX);
    /* an unknown label value is ignored: the agent's policy holds */
    uint32_t e = set_node_l("label-junk", single.s, 4, "sometimes");
    assert_int_equal(count(p4, e, &st), 0);
    /* numa.defaultPolicy applies where label and agent are silent */
    pol.numa_default = TG_NUMA_SINGLE_NUMA_NODE;
    assert_int_equal(count(p4, a, &st), 0);
    assert_int_equal(count(p4, c, &st), UINT32_MAX);     /* the label still wins */
    /* a node without an annotation has no model: no limit whatever the policy */
    uint32_t f = set_node_l("no-annotation", NULL, 4, "single-numa-node");
    assert_int_equal(count(p4, f, &st), UINT32_MAX);

    cx.policy = NULL;
    tg_pod_free(&p4);
    tg_sb_free(&none);
    tg_sb_free(&single);
}

/* Requests: GPUs, CPU, memory and RDMA picked out of a sorted request list. */
static void test_req(void **state)
{
    (void)state;
    struct tg_pod *p = pod("req", 3, 1);
    struct tg_fit_req r;
    tg_numa_req(p->req, p->nreq, &r);
    assert_int_equal(r.gpus, 3);
    assert_int_equal(r.cpu_milli, 8000);
    assert_int_equal(r.mem, 64LL << 30);
    assert_int_equal(r.rdma, 1);
    tg_pod_free(&p);
}

/* A Guaranteed pod (limits only) of cpu/memory, pending or bound to node. */
static struct tg_pod *gpod(const char *name, const char *cpu, const char *mem, const char *node)
{
    char j[1024];
    snprintf(j, sizeof j,
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},"
             "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
             "{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]}}",
             name, node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"," : "", cpu, mem);
    cJSON *o = cJSON_Parse(j);
    assert_non_null(o);
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(o, 0, NULL, &p), 0);
    cJSON_Delete(o);
    return p;
}

/* The kubelet's figures (what the agent read from the pod-resources API):
 * a Guaranteed pod bigger than what one NUMA node can still pin is counted 0
 * with the reason in numbers; a bound pinned pod not yet in the figures is
 * charged, and no longer once the figures name it. */
static void test_kubelet_figures(void **state)
{
    (void)state;
#define FIG "{\"v\":1,\"policy\":\"single-numa-node\"," \
        "\"numa\":[{\"id\":0,\"cpus\":2,\"mem\":12638251008,\"kcpus\":1,\"kmem\":11484817408}]," \
        "\"domains\":[],\"memnodes\":[{\"id\":1,\"mem\":12638251008,\"kind\":\"memory\"," \
        "\"numa\":0,\"gpu\":\"\",\"kmem\":12638251008}]"
    const char *a = FIG "}", *b = FIG ",\"kpods\":[\"ml/held\"]}";
#undef FIG
    uint32_t s = set_node("tm", a, 0);
    struct tg_pod *big = gpod("big", "200m", "12Gi", NULL);
    struct tg_pod *one = gpod("one", "1", "1Gi", NULL);
    struct tg_pod *held = gpod("held", "1", "1Gi", "tm");
    struct tg_pod *plain = pod("plain", 0, 0);         /* Burstable, no GPUs */
    struct tg_status st = {0};
    char txt[200];

    assert_int_equal(filter(big, s, &st), 1);
    assert_int_equal(count(big, s, &st), 0);
    assert_int_equal(st.code, TG_UNSCHEDULABLE);
    assert_int_equal(st.reason, TG_R_NUMA_KUBELET);
    assert_string_equal(tg_reason_text(st.reason, st.arg, txt, sizeof txt),
                        "can pin at most 11.8 GiB of memory on one NUMA node (kubelet)");
    assert_int_equal(score(big, s), 0);
    assert_int_equal(count(plain, s, &st), UINT32_MAX);
    assert_int_equal(count(one, s, &st), 1);

    /* bound, not in the figures yet: it holds the one exclusive CPU */
    assert_int_equal(tg_cluster_pod_update(&C, held), 0);
    struct tg_usage *u = tg_cluster_usage(&C, "ml/held");
    assert_non_null(u);
    assert_true(u->guaranteed);
    assert_int_equal(u->excl_cpus, 1);
    assert_int_equal(u->inner, TG_FIT_NUMA + 0);
    memset(&st, 0, sizeof st);
    assert_int_equal(count(one, s, &st), 0);
    assert_int_equal(st.reason, TG_R_NUMA_KUBELET);
    assert_string_equal(tg_reason_text(st.reason, st.arg, txt, sizeof txt),
                        "can pin at most 0 exclusive CPUs on one NUMA node (kubelet)");
    /* the agent now reports it (kcpus still 1 here: the figure is what counts) */
    set_node("tm", b, 0);
    assert_int_equal(count(one, s, &st), 1);
    u = tg_cluster_usage(&C, "ml/held");
    assert_int_equal(u->inner, 0xff);                 /* in the figures: nothing to charge */
    tg_cluster_pod_delete(&C, "ml/held");
    assert_int_equal(count(one, s, &st), 1);
    /* the agent says policy none: the kubelet's Topology Manager refuses nothing */
    set_node("tm", "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":2,\"mem\":1,"
                   "\"kcpus\":0,\"kmem\":0}],\"domains\":[]}", 0);
    assert_int_equal(count(big, s, &st), UINT32_MAX);

    tg_pod_free(&big);
    tg_pod_free(&one);
    tg_pod_free(&held);
    tg_pod_free(&plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_four_vs_two_plus_two, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pods_before_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdma_pair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_annotations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_req, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kubelet_figures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
