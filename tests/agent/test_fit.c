/* The NUMA/NVLink fit model: alignment of GPU pods to one domain, counting,
 * best fit, CPU/memory of the NUMA node, RDMA pairs, and policies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "model/fit.h"
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
