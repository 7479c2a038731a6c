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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/publish.h"
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
        {"topogang-device-h200-vm_16vcpu_1xH200.xml", 1, "1"},
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

/* A directory on PATH holding a fake nvidia-smi running script (sh). */
static void fake_nvsmi(char *dir, size_t n, const char *script)
{
    snprintf(dir, n, "/tmp/tg-fake-nvsmi-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char f[1200];
    snprintf(f, sizeof f, "%s/nvidia-smi", dir);
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/sh\n%s\n", script);
    fclose(fp);
    assert_int_equal(chmod(f, 0755), 0);
}

static void rm_dir(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* nvidia-smi found on PATH is run (8 NVIDIA GPUs without hwloc NVLink
 * distances) and its matrix read; one that hangs is killed after
 * --nvidia-smi-timeout, children included, and the agent goes on without
 * NVLink groups. */
static void test_nvsmi_hangs(void **state)
{
    (void)state;
    char dir[64], path[1024], xml[1024], args[4096], script[2048];
    struct tg_sb out = {0};
    td_path("hwloc/aws-g4dn-metal_2s-cascadelake_8xT4_efa.xml", xml, sizeof xml);
    /* a working one: its output is used */
    snprintf(script, sizeof script, "cat '%s'",
             td_path("nvidia-smi-topo/dgx1-style-8xV100-SXM2-hybrid-cube-mesh_1xmlx5.txt", path,
                     sizeof path));
    fake_nvsmi(dir, sizeof dir, script);
    snprintf(args, sizeof args, "env PATH='%s':\"$PATH\" ASAN_OPTIONS=detect_leaks=0 '%s' agent "
             "--once --print --topology-xml '%s' 2>&1", dir, getenv("TOPOGANG_BIN"), xml);
    assert_int_equal(td_run(args, &out), 0);
    assert_non_null(strstr(out.s, "source: nvidia-smi"));
    rm_dir(dir);
    /* a hung one: a child that sleeps and holds its output open */
    fake_nvsmi(dir, sizeof dir, "echo started > \"$(dirname \"$0\")/ran\"; sleep 60 & wait");
    snprintf(args, sizeof args, "env PATH='%s':\"$PATH\" ASAN_OPTIONS=detect_leaks=0 '%s' agent "
             "--once --print --topology-xml '%s' --nvidia-smi-timeout 1 2>&1", dir,
             getenv("TOPOGANG_BIN"), xml);
    tg_sb_reset(&out);
    double t0 = now_s();
    assert_int_equal(td_run(args, &out), 0);
    double took = now_s() - t0;
    printf("# with a hung nvidia-smi: %.1f s\n", took);
    assert_true(took < 15);
    snprintf(path, sizeof path, "%s/ran", dir);
    assert_int_equal(access(path, F_OK), 0);            /* it was run */
    assert_non_null(strstr(out.s, "nvidia-smi did not finish in 1000 ms (killed)"));
    assert_null(strstr(out.s, "source: nvidia-smi"));
    assert_non_null(strstr(out.s, "annotation topogang.io/topology:"));
    rm_dir(dir);
    assert_int_equal(run("--nvidia-smi-timeout 0 --print", &out), 2);
    tg_sb_free(&out);
}

/* The liveness file: --check-health says whether a round is overdue, and
 * the publish loop writes it before its first round and after each. */
static void test_health_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/tg-agent-health-XXXXXX", f[256], args[2048], kc[256];
    struct tg_sb out = {0};
    assert_non_null(mkdtemp(dir));
    snprintf(f, sizeof f, "%s/health", dir);
    snprintf(args, sizeof args, "--check-health '%s'", f);
    assert_int_equal(run(args, &out), 1);                       /* none yet */
    assert_int_equal(tg_agent_health_write(f, (long)time(NULL) + 100), 0);
    tg_sb_reset(&out);
    assert_int_equal(run(args, &out), 0);
    assert_non_null(strstr(out.s, "ok"));
    assert_int_equal(tg_agent_health_write(f, (long)time(NULL) - 5), 0);
    tg_sb_reset(&out);
    assert_int_equal(run(args, &out), 1);
    assert_non_null(strstr(out.s, "overdue"));
    FILE *fp = fopen(f, "w");
    fputs("garbage\n", fp);
    fclose(fp);
    assert_int_equal(run(args, &out), 1);
    unlink(f);
    /* the loop, against an API server that is not there: it still writes */
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    fp = fopen(kc, "w");
    fputs("apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters: [{name: c, cluster: "
          "{server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\n"
          "contexts: [{name: x, context: {cluster: c, user: u}}]\n", fp);
    fclose(fp);
    char xml[1024], cmd[4096];
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 '%s' agent --node-name n1 --kubeconfig '%s' "
             "--topology-xml '%s' --health-file '%s' 2>/dev/null & pid=$!; "
             "for i in $(seq 100); do [ -f '%s' ] && break; sleep 0.1; done; kill $pid; wait $pid; "
             "cat '%s'", getenv("TOPOGANG_BIN"), kc,
             td_path("hwloc/llnl-pascal_2s-broadwell_2xP100_1xmlx5-asymmetric.xml", xml, sizeof xml),
             f, f, f);
    tg_sb_reset(&out);
    long t = (long)time(NULL);
    td_run(cmd, &out);
    long due = 0;
    assert_int_equal(sscanf(tg_sb_str(&out), "due %ld", &due), 1);
    assert_true(due >= t + TG_AGENT_ROUND_MAX_S && due <= t + TG_AGENT_ROUND_MAX_S + 60);
    unlink(f);
    unlink(kc);
    rmdir(dir);
    tg_sb_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_this_machine),
        cmocka_unit_test(test_every_export),
        cmocka_unit_test(test_nvsmi_file),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_nvsmi_hangs),
        cmocka_unit_test(test_health_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
