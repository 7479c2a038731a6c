/* The NUMA/NVLink fit model: alignment of GPU pods to one domain, counting,
 * best fit, CPU/memory of the NUMA node, RDMA pairs, and policies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/fit.h"
#include "agent/topology.h"

#define GiB (1024LL * 1024 * 1024)

/* A node with one domain per entry of gpus[], each on its own NUMA node of
 * 32 CPUs and 256 GiB. */
static void node(struct tg_topology *t, uint8_t policy, const uint32_t *gpus, uint32_t n)
{
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
    }
}

/* The case: a 4-GPU pod fits a node with one domain of 4 free GPUs,
 * not one with 2+2 (same 4 GPUs in total). */
static void test_four_gpu_pod(void **state)
{
    (void)state;
    struct tg_topology one, split;
    struct tg_fit_state s = {0};
    const struct tg_fit_req r = {.gpus = 4, .cpu_milli = 8000, .mem = 64 * GiB};
    node(&one, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4}, 1);
    node(&split, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){2, 2}, 2);
    assert_int_equal(tg_fit_count(&one, &s, &r, 100), 1);
    assert_int_equal(tg_fit_count(&split, &s, &r, 100), 0);
    assert_int_equal(tg_fit_choose(&split, &s, &r), -1);
    assert_true(tg_fit_score(&one, &s, &r) > tg_fit_score(&split, &s, &r));
    /* 2-GPU pods fit both, twice on the split node */
    const struct tg_fit_req r2 = {.gpus = 2};
    assert_int_equal(tg_fit_count(&split, &s, &r2, 100), 2);
    assert_int_equal(tg_fit_count(&one, &s, &r2, 100), 2);
}

/* Pods already placed hold their domain: 8-GPU node as 4+4 with 3 used in
 * domain 0 and 2 in domain 1 holds no 4-GPU pod, but 5 free GPUs remain. */
static void test_usage_blocks(void **state)
{
    (void)state;
    struct tg_topology t;
    struct tg_fit_state s = {0};
    node(&t, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4, 4}, 2);
    const struct tg_fit_req three = {.gpus = 3}, two = {.gpus = 2}, four = {.gpus = 4};
    tg_fit_apply(&t, &s, 0, &three, +1);
    tg_fit_apply(&t, &s, 1, &two, +1);
    assert_int_equal(tg_fit_free_gpus(&t, &s, 0), 1);
    assert_int_equal(tg_fit_free_gpus(&t, &s, 1), 2);
    assert_int_equal(tg_fit_count(&t, &s, &four, 100), 0);
    assert_int_equal(tg_fit_count(&t, &s, &two, 100), 1);
    /* removing restores */
    tg_fit_apply(&t, &s, 0, &three, -1);
    assert_int_equal(tg_fit_count(&t, &s, &four, 100), 1);
    assert_int_equal(tg_fit_count(&t, &s, &two, 100), 3);
    assert_int_equal(tg_fit_count(&t, &s, &two, 2), 2);     /* the limit caps */
}

/* Best fit: a 2-GPU pod goes to the domain it fills, keeping the larger hole. */
static void test_best_fit(void **state)
{
    (void)state;
    struct tg_topology t;
    struct tg_fit_state s = {0};
    node(&t, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){8, 2, 4}, 3);
    const struct tg_fit_req two = {.gpus = 2}, three = {.gpus = 3};
    assert_int_equal(tg_fit_choose(&t, &s, &two), 1);
    assert_int_equal(tg_fit_choose(&t, &s, &three), 2);
    tg_fit_apply(&t, &s, 2, &two, +1);
    assert_int_equal(tg_fit_choose(&t, &s, &three), 0);
    /* equal leftovers: the lower id */
    struct tg_topology eq;
    node(&eq, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4, 4}, 2);
    struct tg_fit_state z = {0};
    assert_int_equal(tg_fit_choose(&eq, &z, &two), 0);
}

/* The domain's NUMA node must also hold the pod's CPU and memory. */
static void test_numa_cpu_memory(void **state)
{
    (void)state;
    struct tg_topology t;
    struct tg_fit_state s = {0};
    node(&t, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4, 4}, 2);
    const struct tg_fit_req big_cpu = {.gpus = 1, .cpu_milli = 33000};
    const struct tg_fit_req big_mem = {.gpus = 1, .mem = 300 * GiB};
    const struct tg_fit_req half = {.gpus = 1, .cpu_milli = 16000, .mem = 100 * GiB};
    assert_int_equal(tg_fit_count(&t, &s, &big_cpu, 100), 0);
    assert_int_equal(tg_fit_count(&t, &s, &big_mem, 100), 0);
    assert_int_equal(tg_fit_count(&t, &s, &half, 100), 4);   /* 2 per NUMA node by CPU */
    tg_fit_apply(&t, &s, 0, &half, +1);
    tg_fit_apply(&t, &s, 0, &half, +1);
    assert_int_equal(tg_fit_choose(&t, &s, &half), 1);       /* NUMA 0 CPUs are taken */
    assert_int_equal(tg_fit_free_gpus(&t, &s, 0), 2);
}

/* With an RDMA request, a domain with a GPU+NIC pair wins over best fit. */
static void test_rdma_preference(void **state)
{
    (void)state;
    struct tg_topology t;
    struct tg_fit_state s = {0};
    node(&t, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){2, 4}, 2);
    t.domains[1].rdma_gpus = 1;
    const struct tg_fit_req plain = {.gpus = 2}, rdma = {.gpus = 2, .rdma = 1};
    assert_int_equal(tg_fit_choose(&t, &s, &plain), 0);
    assert_int_equal(tg_fit_choose(&t, &s, &rdma), 1);
    assert_int_equal(tg_fit_score(&t, &s, &rdma), 100);
    t.domains[1].rdma_gpus = 0;
    assert_int_equal(tg_fit_score(&t, &s, &rdma), 80);
    assert_int_equal(tg_fit_score(&t, &s, &plain), 100);
}

static void test_policies(void **state)
{
    (void)state;
    struct tg_topology t;
    struct tg_fit_state s = {0};
    const struct tg_fit_req four = {.gpus = 4}, eight = {.gpus = 8}, cpu = {.cpu_milli = 1000};
    node(&t, TG_TOPO_POLICY_NONE, (const uint32_t[]){2, 2}, 2);
    assert_int_equal(tg_fit_count(&t, &s, &four, 100), UINT32_MAX);
    node(&t, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){2, 2}, 2);
    assert_int_equal(tg_fit_count(&t, &s, &cpu, 100), UINT32_MAX);  /* no GPUs: no limit */
    assert_int_equal(tg_fit_score(&t, &s, &cpu), 100);
    /* restricted: wider than every domain may span; within a domain must align */
    node(&t, TG_TOPO_POLICY_RESTRICTED, (const uint32_t[]){4, 4}, 2);
    assert_int_equal(tg_fit_count(&t, &s, &eight, 100), 1);
    const struct tg_fit_req three = {.gpus = 3};
    tg_fit_apply(&t, &s, 0, &three, +1);
    tg_fit_apply(&t, &s, 1, &three, +1);
    assert_int_equal(tg_fit_count(&t, &s, &eight, 100), 0);
    assert_int_equal(tg_fit_count(&t, &s, &four, 100), 0);
    /* a spanning pod's GPUs are counted against the node */
    struct tg_fit_state z = {0};
    tg_fit_apply(&t, &z, -1, &four, +1);
    assert_int_equal(tg_fit_count(&t, &z, &eight, 100), 0);
    tg_fit_apply(&t, &z, -1, &four, -1);
    assert_int_equal(tg_fit_count(&t, &z, &eight, 100), 1);
}

/* A domain whose NUMA node is unknown (-1) is limited by GPUs only. */
static void test_unknown_numa(void **state)
{
    (void)state;
    struct tg_topology t;
    struct tg_fit_state s = {0};
    node(&t, TG_TOPO_POLICY_SINGLE_NUMA, (const uint32_t[]){4}, 1);
    t.domains[0].numa = -1;
    const struct tg_fit_req r = {.gpus = 2, .cpu_milli = 1000000};
    assert_int_equal(tg_fit_count(&t, &s, &r, 100), 2);
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
