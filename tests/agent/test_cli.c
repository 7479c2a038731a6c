/* `topogang agent` as a command ($TOPOGANG_BIN): --once --print on this
 * machine and on every hwloc export, with nvidia-smi files, and usage errors.
 * The printed annotation must decode with the scheduler's decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "model/topology.h"
#include "helpers.h"
#include "util/strbuf.h"

/* Runs the binary with args (a shell fragment); captures stdout; returns the
 * exit status. Leak checking is off for the child: hwloc's live discovery
 * keeps a few allocations of its PCI backend until exit. */
static int run(const char *args, struct tg_sb *out)
{
    const char *bin = getenv("TOPOGANG_BIN");
    assert_non_null(bin);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 '%s' agent %s 2>/dev/null", bin, args);
    return td_run(cmd, out);
}

/* The line after "annotation topogang.io/topology:" decoded. */
static void decode_printed(const struct tg_sb *out, struct tg_topology *t)
{
    const char *a = strstr(tg_sb_str(out), "annotation topogang.io/topology:\n");
    assert_non_null(a);
    a = strchr(a, '\n') + 1;
    const char *end = strchr(a, '\n');
    assert_non_null(end);
    const char *why = NULL;
    int rc = tg_topo_decode(a, (size_t)(end - a), t, &why);
    if (rc)
        fail_msg("printed annotation does not decode: %s", why);
}

static void test_this_machine(void **state)
{
    (void)state;
    struct tg_sb out = {0};
    struct tg_topology t;
    assert_int_equal(run("--once --print", &out), 0);
    assert_non_null(strstr(out.s, "machine:"));
    assert_non_null(strstr(out.s, "topogang.io/numa-nodes="));
    decode_printed(&out, &t);
    assert_true(t.nnuma >= 1);
    tg_sb_free(&out);
}

static void test_every_export(void **state)
{
    (void)state;
    static const struct { const char *file; uint32_t ndomains; const char *per; } exports[] = {
        {"aws-g4dn-metal_2s-cascadelake_8xT4_efa.xml", 2, "4"},
        {"nvidia-dgx2_2s-skylake_16xV100_12xNVSwitch.xml", 2, "8"},
        {"juwels-booster_2s-epyc7402-nps4_4xA100_4xmlx5.xml", 4, "1"},
        {"juwels-cluster-gpu_2s-xeon6148_4xV100_2xmlx5.xml", 2, "2"},
        {"llnl-lassen_2s-power9_4xV100_4xmlx5.xml", 2, "2"},
        {"llnl-tioga_1s-epyc7a53-4numa_8xMI250X-gcd_4xslingshot.xml", 4, "2"},
        {"chimera_1s-threadripper2990wx-2numa_nvidia+amd-gpu.xml", 2, "1"},
        {"llnl-pascal_2s-broadwell_2xP100_1xmlx5-asymmetric.xml", 1, "2"},
    };
    for (size_t i = 0; i < sizeof exports / sizeof exports[0]; i++) {
        char path[1024], sub[512], args[2048], want[64];
        struct tg_sb out = {0};
        struct tg_topology t;
        snprintf(sub, sizeof sub, "hwloc/%s", exports[i].file);
        snprintf(args, sizeof args, "--once --print --topology-policy single-numa-node "
                 "--topology-xml '%s'", td_path(sub, path, sizeof path));
        if (run(args, &out) != 0)
            fail_msg("%s: nonzero exit", exports[i].file);
        decode_printed(&out, &t);
        assert_int_equal(t.ndomains, exports[i].ndomains);
        assert_int_equal(t.policy, TG_TOPO_POLICY_SINGLE_NUMA);
        snprintf(want, sizeof want, "topogang.io/gpus-per-domain=%s\n", exports[i].per);
        assert_non_null(strstr(out.s, want));
        tg_sb_free(&out);
    }
}

static void test_nvsmi_file(void **state)
{
    (void)state;
    char path[1024], args[2048];
    struct tg_sb out = {0};
    struct tg_topology t;
    snprintf(args, sizeof args, "--once --print --nvidia-smi-topo '%s'",
             td_path("nvidia-smi-topo/hgx-8xH200-nvswitch_8xmlx5-vf_2s-xeon8592.txt", path,
                     sizeof path));
    assert_int_equal(run(args, &out), 0);
    decode_printed(&out, &t);
    assert_int_equal(t.ndomains, 2);
    assert_int_equal(t.domains[0].gpus, 4);
    assert_int_equal(t.domains[0].rdma_gpus, 4);
    assert_non_null(strstr(out.s, "source: nvidia-smi"));
    tg_sb_free(&out);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char path[1024], args[2048];
    struct tg_sb out = {0};
    assert_int_equal(run("--help", &out), 0);
    assert_non_null(strstr(out.s, "--topology-xml"));
    tg_sb_reset(&out);
    assert_int_equal(run("--topology-policy sometimes --print", &out), 2);
    assert_int_equal(run("--bogus", &out), 2);
    assert_int_equal(run("--print extra", &out), 2);
    snprintf(args, sizeof args, "--print --topology-xml '%s'", td_path("README.md", path, sizeof path));
    assert_int_equal(run(args, &out), 1);
    /* daemon mode without a node name is a usage error */
    snprintf(args, sizeof args, "--once --node-name '' --topology-xml '%s'",
             td_path("hwloc/llnl-pascal_2s-broadwell_2xP100_1xmlx5-asymmetric.xml", path, sizeof path));
    assert_int_equal(run(args, &out), 2);
    tg_sb_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_this_machine),
        cmocka_unit_test(test_every_export),
        cmocka_unit_test(test_nvsmi_file),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
