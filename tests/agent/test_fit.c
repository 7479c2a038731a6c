/* The NUMA/NVLink fit model: alignment of GPU pods to one domain, counting,
 * best fit, CPU/memory of the NUMA node, RDMA pairs, and policies; what the
 * kubelet can still pin per NUMA node (exclusive CPUs, memory, memory-only
 * NUMA nodes, pods already counted); a pod's QoS class and exclusive CPUs as
 * the kubelet reads them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "model/fit.h"
#include "model/objects.h"
#include "model/qos.h"
#include "model/topology.h"

#define GiB (1024LL * 1024 * 1024)

static struct tg_topology topo;

/* A node with one domain per entry of gpus[], each on its own NUMA node of
 * 32 CPUs and 256 GiB; rdma[i] GPUs paired with an RDMA NIC (NULL: none). */
static struct tg_fit_node *mk(uint8_t policy, const uint32_t *gpus, uint32_t n,
                              const uint32_t *rdma, int numa_unknown)
{
    struct tg_topology *t = &topo;
    struct tg_fit_node *f;
    memset(t, 0, sizeof *t);
    t->version = TG_TOPO_VERSION;
    t->policy = policy;
    t->nnuma = n;
    t->ndomains = n;
    for (uint32_t i = 0; i < n; i++) {
        t->numa[i] = (struct tg_topo_numa){.id = (int32_t)i, .cpus = 32, .mem = 256 * GiB};
        t->domains[i].id = i;
        t->domains[i].numa = (int32_t)i;
        t->domains[i].nvlink = -1;
        t->domains[i].gpus = gpus[i];
        t->domains[i].rdma_gpus = rdma ? rdma[i] : 0;
        if (numa_unknown)
            t->domains[i].numa = -1;
    }
    assert_int_equal(tg_fit_node_new(t, &f), 0);
    return f;
}

/* The case: a 4-GPU pod fits a node with one domain of 4 free GPUs,
 * not one with 2+2 (same 4 GPUs in total). */
static void test_four_gpu_pod(void **state)
{
    (void)state;
    const struct tg_fit_req r = {.gpus = 4, .cpu_milli = 8000, .mem = 64 * GiB};
    struct tg_fit_node *one = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4}, 1, NULL, 0);
    struct tg_fit_node *split = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){2, 2}, 2, NULL, 0);
    assert_int_equal(tg_fit_count(one, &r, 100), 1);
    assert_int_equal(tg_fit_count(split, &r, 100), 0);
    assert_int_equal(tg_fit_choose(split, &r), -1);
    assert_true(tg_fit_score(one, &r) > tg_fit_score(split, &r));
    /* 2-GPU pods fit both, twice */
    const struct tg_fit_req r2 = {.gpus = 2};
    assert_int_equal(tg_fit_count(split, &r2, 100), 2);
    assert_int_equal(tg_fit_count(one, &r2, 100), 2);
    /* counting leaves the model unchanged */
    assert_int_equal(tg_fit_free_gpus(one, 0), 4);
    assert_int_equal(one->numa[0].cpu_used, 0);
    tg_fit_node_free(&one);
    tg_fit_node_free(&split);
    assert_null(one);
}

/* Pods already placed hold their domain: 8-GPU node as 4+4 with 3 used in
 * domain 0 and 2 in domain 1 holds no 4-GPU pod, though 3 GPUs are free. */
static void test_usage_blocks(void **state)
{
    (void)state;
    struct tg_fit_node *n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4, 4}, 2, NULL, 0);
    const struct tg_fit_req three = {.gpus = 3}, two = {.gpus = 2}, four = {.gpus = 4};
    tg_fit_apply(n, 0, &three, +1);
    tg_fit_apply(n, 1, &two, +1);
    assert_int_equal(tg_fit_free_gpus(n, 0), 1);
    assert_int_equal(tg_fit_free_gpus(n, 1), 2);
    assert_int_equal(tg_fit_count(n, &four, 100), 0);
    assert_int_equal(tg_fit_count(n, &two, 100), 1);
    /* removing restores */
    tg_fit_apply(n, 0, &three, -1);
    assert_int_equal(tg_fit_count(n, &four, 100), 1);
    assert_int_equal(tg_fit_count(n, &two, 100), 3);
    assert_int_equal(tg_fit_count(n, &two, 2), 2);          /* the limit caps */
    tg_fit_reset(n);
    assert_int_equal(tg_fit_count(n, &four, 100), 2);
    tg_fit_node_free(&n);
}

/* Best fit: a 2-GPU pod goes to the domain it fills, keeping the larger hole. */
static void test_best_fit(void **state)
{
    (void)state;
    struct tg_fit_node *n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){8, 2, 4}, 3, NULL, 0);
    const struct tg_fit_req two = {.gpus = 2}, three = {.gpus = 3};
    assert_int_equal(tg_fit_choose(n, &two), 1);
    assert_int_equal(tg_fit_choose(n, &three), 2);
    tg_fit_apply(n, 2, &two, +1);
    assert_int_equal(tg_fit_choose(n, &three), 0);
    tg_fit_node_free(&n);
    /* equal leftovers: the lower id */
    n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4, 4}, 2, NULL, 0);
    assert_int_equal(tg_fit_choose(n, &two), 0);
    tg_fit_node_free(&n);
}

/* The domain's NUMA node must also hold the pod's CPU and memory. */
static void test_numa_cpu_memory(void **state)
{
    (void)state;
    struct tg_fit_node *n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4, 4}, 2, NULL, 0);
    const struct tg_fit_req big_cpu = {.gpus = 1, .cpu_milli = 33000};
    const struct tg_fit_req big_mem = {.gpus = 1, .mem = 300 * GiB};
    const struct tg_fit_req half = {.gpus = 1, .cpu_milli = 16000, .mem = 100 * GiB};
    assert_int_equal(tg_fit_count(n, &big_cpu, 100), 0);
    assert_int_equal(tg_fit_count(n, &big_mem, 100), 0);
    assert_int_equal(tg_fit_count(n, &half, 100), 4);       /* 2 per NUMA node by CPU */
    tg_fit_apply(n, 0, &half, +1);
    tg_fit_apply(n, 0, &half, +1);
    assert_int_equal(tg_fit_choose(n, &half), 1);           /* NUMA 0 CPUs are taken */
    assert_int_equal(tg_fit_free_gpus(n, 0), 2);
    tg_fit_node_free(&n);
}

/* With an RDMA request, a domain with a GPU+NIC pair wins over best fit. */
static void test_rdma_preference(void **state)
{
    (void)state;
    struct tg_fit_node *n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){2, 4}, 2,
                               (const uint32_t[]){0, 1}, 0);
    const struct tg_fit_req plain = {.gpus = 2}, rdma = {.gpus = 2, .rdma = 1};
    assert_int_equal(tg_fit_choose(n, &plain), 0);
    assert_int_equal(tg_fit_choose(n, &rdma), 1);
    assert_int_equal(tg_fit_score(n, &rdma), 100);
    assert_int_equal(tg_fit_score(n, &plain), 100);
    tg_fit_node_free(&n);
    n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){2, 4}, 2, NULL, 0);
    assert_int_equal(tg_fit_score(n, &rdma), 80);
    tg_fit_node_free(&n);
}

static void test_policies(void **state)
{
    (void)state;
    const struct tg_fit_req four = {.gpus = 4}, eight = {.gpus = 8}, cpu = {.cpu_milli = 1000};
    struct tg_fit_node *n = mk(TG_TOPO_POLICY_NONE, (const uint32_t[]){2, 2}, 2, NULL, 0);
    assert_int_equal(tg_fit_count(n, &four, 100), UINT32_MAX);
    tg_fit_node_free(&n);
    n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){2, 2}, 2, NULL, 0);
    assert_int_equal(tg_fit_count(n, &cpu, 100), UINT32_MAX); /* no GPUs: no limit */
    assert_int_equal(tg_fit_score(n, &cpu), 100);
    tg_fit_node_free(&n);
    /* restricted: wider than every domain may span; within a domain must align */
    n = mk(TG_TOPO_POLICY_RESTRICTED, (const uint32_t[]){4, 4}, 2, NULL, 0);
    assert_int_equal(tg_fit_count(n, &eight, 100), 1);
    const struct tg_fit_req three = {.gpus = 3};
    tg_fit_apply(n, 0, &three, +1);
    tg_fit_apply(n, 1, &three, +1);
    assert_int_equal(tg_fit_count(n, &eight, 100), 0);
    assert_int_equal(tg_fit_count(n, &four, 100), 0);
    /* a spanning pod's GPUs are counted against the node */
    tg_fit_reset(n);
    tg_fit_apply(n, -1, &four, +1);
    assert_int_equal(tg_fit_count(n, &eight, 100), 0);
    tg_fit_apply(n, -1, &four, -1);
    assert_int_equal(tg_fit_count(n, &eight, 100), 1);
    tg_fit_node_free(&n);
}

/* A domain whose NUMA node is unknown (-1) is limited by GPUs only. */
static void test_unknown_numa(void **state)
{
    (void)state;
    struct tg_fit_node *n = mk(TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4}, 1, NULL, 1);
    const struct tg_fit_req r = {.gpus = 2, .cpu_milli = 1000000};
    assert_int_equal(tg_fit_count(n, &r, 100), 2);
    tg_fit_node_free(&n);
}

/* ---- the kubelet's figures ----------------------------------------------------- */

/* The node of the node tier: NUMA 0 with 2 CPUs (1 exclusive left) and
 * 10.7 GiB the memory manager can pin, NUMA 1 without CPUs and 11.8 GiB;
 * policy single-numa-node. kpods names the pods already in the figures. */
static struct tg_fit_node *mk_kubelet(int64_t kcpus, int64_t kmem0, int64_t kmem1,
                                      const char *kpod)
{
    struct tg_topology *t = &topo;
    struct tg_fit_node *f;
    memset(t, 0, sizeof *t);
    t->version = TG_TOPO_VERSION;
    t->policy = TG_TOPO_POLICY_SINGLE_NUMA;
    t->nnuma = 1;
    t->numa[0] = (struct tg_topo_numa){.id = 0, .cpus = 2, .mem = 12 * GiB,
                                       .known = TG_TOPO_KCPUS | TG_TOPO_KMEM,
                                       .kcpus = (uint32_t)kcpus, .kmem = (uint64_t)kmem0};
    t->nmem = 1;
    t->mem[0] = (struct tg_topo_memnode){.id = 1, .numa = 0, .mem = 12 * GiB,
                                         .known = TG_TOPO_KMEM, .kmem = (uint64_t)kmem1};
    if (kpod)
        assert_int_equal(tg_topo_add_kpod(t, kpod), 0);
    assert_int_equal(tg_fit_node_new(t, &f), 0);
    return f;
}

/* The contrast of the node tier: a Guaranteed pod with more memory than any
 * one NUMA node can pin fits nowhere (the kubelet would say
 * TopologyAffinityError), with the most it can give named; a smaller one fits
 * NUMA 0 (lowest id first); a Burstable pod is not limited at all. */
static void test_kubelet_memory(void **state)
{
    (void)state;
    struct tg_fit_node *n = mk_kubelet(1, 10 * GiB + GiB / 2, 11 * GiB + GiB * 8 / 10, NULL);
    struct tg_fit_req big = {.cpu_milli = 200, .mem = 12 * GiB, .guaranteed = 1};
    struct tg_fit_req small = {.cpu_milli = 200, .mem = GiB, .guaranteed = 1};
    struct tg_fit_req burst = {.cpu_milli = 200, .mem = 12 * GiB};
    char what = 0;
    int64_t most = 0;

    assert_true(tg_fit_pinned(n, &big));
    assert_int_equal(tg_fit_choose(n, &big), -1);
    assert_int_equal(tg_fit_count(n, &big, 100), 0);
    assert_int_equal(tg_fit_score(n, &big), 0);
    assert_int_equal(tg_fit_short(n, &big, &what, &most), 0);
    assert_int_equal(what, 'm');
    assert_int_equal(most, 11 * GiB + GiB * 8 / 10);   /* NUMA 1's memory: no CPUs needed */

    assert_int_equal(tg_fit_choose(n, &small), TG_FIT_NUMA + 0);
    assert_int_equal(tg_fit_count(n, &small, 100), 10 + 11);   /* both NUMA nodes */
    assert_int_equal(tg_fit_short(n, &small, &what, &most), -1);
    assert_int_equal(tg_fit_count(n, &burst, 100), UINT32_MAX);
    assert_int_equal(tg_fit_choose(n, &burst), -1);

    /* 11 GiB: only NUMA 1 holds it, which has no CPUs: fine without
     * exclusive CPUs, impossible with one */
    struct tg_fit_req eleven = {.cpu_milli = 1000, .mem = 11 * GiB, .guaranteed = 1};
    assert_int_equal(tg_fit_choose(n, &eleven), TG_FIT_MEM + 0);
    eleven.excl_cpus = 1;
    assert_int_equal(tg_fit_choose(n, &eleven), -1);
    assert_int_equal(tg_fit_short(n, &eleven, &what, &most), 0);
    assert_int_equal(what, 'm');
    assert_int_equal(most, 10 * GiB + GiB / 2);       /* NUMA 0, where the CPU is */
    tg_fit_node_free(&n);
}

/* Exclusive CPUs: one left on NUMA 0; a placed pod takes it, taking it back
 * frees it; a pod already in the kubelet's figures is not charged again. */
static void test_kubelet_cpus(void **state)
{
    (void)state;
    struct tg_fit_node *n = mk_kubelet(1, 10 * GiB, 11 * GiB, "ml/running");
    struct tg_fit_req one = {.cpu_milli = 1000, .mem = GiB, .guaranteed = 1, .excl_cpus = 1};
    struct tg_fit_req two = {.cpu_milli = 2000, .mem = GiB, .guaranteed = 1, .excl_cpus = 2};
    char what = 0;
    int64_t most = -1;
    assert_int_equal(tg_fit_count(n, &one, 100), 1);
    assert_int_equal(tg_fit_count(n, &two, 100), 0);
    assert_int_equal(tg_fit_short(n, &two, &what, &most), 0);
    assert_int_equal(what, 'c');
    assert_int_equal(most, 1);

    int at = tg_fit_choose(n, &one);
    assert_int_equal(at, TG_FIT_NUMA + 0);
    tg_fit_apply(n, at, &one, +1);
    assert_int_equal(tg_fit_count(n, &one, 100), 0);
    assert_int_equal(tg_fit_short(n, &one, &what, &most), 0);
    assert_int_equal(what, 'c');
    assert_int_equal(most, 0);
    /* without exclusive CPUs it still fits (memory on NUMA 0 or 1) */
    struct tg_fit_req frac = {.cpu_milli = 500, .mem = GiB, .guaranteed = 1};
    assert_int_equal(tg_fit_choose(n, &frac), TG_FIT_NUMA + 0);
    tg_fit_apply(n, at, &one, -1);
    assert_int_equal(tg_fit_count(n, &one, 100), 1);

    /* counted: the kubelet's figures include it already */
    assert_true(tg_fit_counted(n, "ml/running"));
    assert_false(tg_fit_counted(n, "ml/other"));
    struct tg_fit_req running = one;
    running.counted = 1;
    assert_false(tg_fit_pinned(n, &running));
    tg_fit_apply(n, TG_FIT_NUMA + 0, &running, +1);
    assert_int_equal(tg_fit_count(n, &one, 100), 1);
    tg_fit_node_free(&n);

    /* a node without the kubelet's figures limits nothing */
    uint32_t g[] = {0};
    n = mk(TG_TOPO_POLICY_SINGLE_NUMA, g, 1, NULL, 0);
    assert_false(tg_fit_pinned(n, &two));
    assert_int_equal(tg_fit_count(n, &two, 100), UINT32_MAX);
    tg_fit_node_free(&n);
}

/* A Guaranteed GPU pod needs its domain's NUMA node to have the exclusive
 * CPUs and memory left too. */
static void test_kubelet_gpu_pod(void **state)
{
    (void)state;
    struct tg_topology *t = &topo;
    struct tg_fit_node *n;
    memset(t, 0, sizeof *t);
    t->version = TG_TOPO_VERSION;
    t->policy = TG_TOPO_POLICY_SINGLE_NUMA;
    t->nnuma = 2;
    t->ndomains = 2;
    for (uint32_t i = 0; i < 2; i++) {
        t->numa[i] = (struct tg_topo_numa){.id = (int32_t)i, .cpus = 32, .mem = 256 * GiB,
                                           .known = TG_TOPO_KCPUS, .kcpus = i ? 16 : 2};
        t->domains[i] = (struct tg_topo_domain){.id = i, .numa = (int32_t)i, .nvlink = -1,
                                                .gpus = 4};
    }
    assert_int_equal(tg_fit_node_new(t, &n), 0);
    struct tg_fit_req r = {.gpus = 4, .cpu_milli = 8000, .mem = 64 * GiB, .guaranteed = 1,
                           .excl_cpus = 8};
    assert_int_equal(tg_fit_choose(n, &r), 1);        /* domain 0's NUMA node has 2 CPUs left */
    assert_int_equal(tg_fit_count(n, &r, 10), 1);
    r.guaranteed = 0;                                 /* Burstable: the shared pool */
    assert_int_equal(tg_fit_count(n, &r, 10), 2);
    tg_fit_node_free(&n);
}

/* QoS as the kubelet reads it, through the pod decoder. */
static struct tg_pod *decode_pod(const char *spec)
{
    char j[2048];
    snprintf(j, sizeof j, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},"
                          "\"spec\":%s}", spec);
    cJSON *o = cJSON_Parse(j);
    assert_non_null(o);
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(o, 0, NULL, &p), 0);
    cJSON_Delete(o);
    return p;
}

static void test_qos(void **state)
{
    (void)state;
    static const struct { const char *spec; int guaranteed, cpus; } cases[] = {
        /* limits only: requests default to them */
        {"{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}}]}", 1, 2},
        /* fractional CPU: Guaranteed, shared pool */
        {"{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"1500m\",\"memory\":\"1Gi\"}}}]}", 1, 0},
        {"{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"1000m\",\"memory\":\"1Gi\"},"
         "\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}", 1, 1},
        /* requests below limits: Burstable */
        {"{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"},"
         "\"requests\":{\"cpu\":\"1\"}}}]}", 0, 0},
        /* no memory limit; no limits at all */
        {"{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"2\"}}}]}", 0, 0},
        {"{\"containers\":[{\"name\":\"c\"}]}", 0, 0},
        /* one container of two is not Guaranteed */
        {"{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}},"
         "{\"name\":\"b\"}]}", 0, 0},
        /* two integer containers, one fractional: 3 exclusive CPUs */
        {"{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}},"
         "{\"name\":\"b\",\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}},"
         "{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}}]}", 1, 3},
        /* an init container of 4 CPUs, reused: 4; a sidecar of 1 adds: 1 + 2 */
        {"{\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"4\",\"memory\":\"1Gi\"}}}],"
         "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}}]}", 1, 4},
        {"{\"initContainers\":[{\"name\":\"s\",\"restartPolicy\":\"Always\",\"resources\":{\"limits\":"
         "{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}],"
         "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}}]}", 1, 3},
        /* an init container without limits makes the pod Burstable */
        {"{\"initContainers\":[{\"name\":\"i\"}],"
         "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}}]}", 0, 0},
        /* pod-level resources: not pinned */
        {"{\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}},"
         "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}}]}", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tg_pod *p = decode_pod(cases[i].spec);
        if (p->guaranteed != cases[i].guaranteed || p->excl_cpus != cases[i].cpus)
            fail_msg("case %zu: guaranteed %d cpus %d, want %d %d", i, p->guaranteed,
                     p->excl_cpus, cases[i].guaranteed, cases[i].cpus);
        tg_pod_free(&p);
    }
    /* the same requests with another QoS are another shape */
    struct tg_pod *g = decode_pod(cases[0].spec);
    struct tg_pod *b = decode_pod("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
                                  "{\"cpu\":\"2\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"2\","
                                  "\"memory\":\"1Gi\",\"ephemeral-storage\":\"0\"}}}]}");
    assert_true(b->guaranteed);
    uint8_t q;
    uint16_t c;
    tg_pod_qos(NULL, &q, &c);
    assert_int_equal(q, 0);
    g->guaranteed = 0;
    assert_false(tg_pod_same_shape(g, b));
    tg_pod_free(&g);
    tg_pod_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_gpu_pod),
        cmocka_unit_test(test_usage_blocks),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_numa_cpu_memory),
        cmocka_unit_test(test_rdma_preference),
        cmocka_unit_test(test_policies),
        cmocka_unit_test(test_unknown_numa),
        cmocka_unit_test(test_kubelet_memory),
        cmocka_unit_test(test_kubelet_cpus),
        cmocka_unit_test(test_kubelet_gpu_pod),
        cmocka_unit_test(test_qos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
