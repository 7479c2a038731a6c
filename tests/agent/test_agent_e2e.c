/* End to end against a real kube-apiserver: `topogang agent` publishes two
 * nodes' topologies (a-split: JUWELS Cluster GPU node, 2+2 GPUs on two NUMA
 * nodes; b-whole: AWS g4dn.metal, 4+4), then `topogang scheduler` binds a
 * 4-GPU pod to b-whole — the only node with one NUMA domain holding 4 GPUs —
 * although binpacking alone prefers the fuller a-split (checked: without the
 * plugin the pod lands on a-split). Suite 'e2e'.
 * Exits 77 (SKIP) while tg_plugin_numa is not registered, or when the
 * control-plane binaries cannot be built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../integration/cluster.h"
#include "helpers.h"
#include "plugins/plugin.h"
#include "util/strbuf.h"

static struct tgc C;
static pid_t sched = -1;

static void capture(struct tg_sb *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void capture(struct tg_sb *out, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    tg_sb_reset(out);
    (void)td_run(cmd, out); /* status not checked, as before */
}

static int create_node(const char *name, int gpus, int cpus)
{
    return tgc_sh("printf '%%s' '{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
                  "\"labels\":{\"kubernetes.io/hostname\":\"%s\",\"topogang.io/rack\":\"r1\"}},"
                  "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"%d\",\"memory\":\"512Gi\","
                  "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},\"capacity\":{\"cpu\":\"%d\","
                  "\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
                  "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
                  "\"message\":\"ok\",\"lastHeartbeatTime\":\"2026-01-01T00:00:00Z\","
                  "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}' > '%s/%s.json' && "
                  "'%s/kubectl' --kubeconfig '%s' create -f '%s/%s.json' >/dev/null",
                  name, name, cpus, gpus, cpus, gpus, C.dir, name, C.bin, C.kubeconfig, C.dir, name);
}

static int agent(const char *node, const char *xml)
{
    char path[1024], sub[512];
    snprintf(sub, sizeof sub, "hwloc/%s", xml);
    return tgc_sh("ASAN_OPTIONS=detect_leaks=0 '%s' agent --once --node-name %s --kubeconfig '%s' "
                  "--topology-xml '%s' --topology-policy single-numa-node",
                  getenv("TOPOGANG_BIN"), node, C.kubeconfig, td_path(sub, path, sizeof path));
}

static int setup(void **state)
{
    (void)state;
    if (tgc_up(&C, NULL))
        return -1;
    if (tgc_kubectl(&C, "apply -f '%s/tests/integration/fixtures/podgroup-crd.yaml' >/dev/null",
                    C.src) ||
        tgc_kubectl(&C, "create namespace ml >/dev/null"))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (sched > 0) {
        kill(sched, SIGTERM);
        waitpid(sched, NULL, 0);
        sched = -1;
    }
    tgc_down(&C);
    return 0;
}

static void test_four_gpu_pod_goes_to_one_domain(void **state)
{
    (void)state;
    struct tg_sb out = {0};
    assert_int_equal(create_node("a-split", 4, 64), 0);
    /* b-whole offers 4 GPUs (the first NUMA domain's worth) and more CPU, so
     * that without the NUMA plugin binpacking picks a-split. */
    assert_int_equal(create_node("b-whole", 4, 128), 0);
    assert_int_equal(agent("a-split", "juwels-cluster-gpu_2s-xeon6148_4xV100_2xmlx5.xml"), 0);
    assert_int_equal(agent("b-whole", "aws-g4dn-metal_2s-cascadelake_8xT4_efa.xml"), 0);
    capture(&out, "'%s/kubectl' --kubeconfig '%s' get node a-split -o "
            "jsonpath='{.metadata.labels.topogang\\.io/gpus-per-domain}'", C.bin, C.kubeconfig);
    assert_string_equal(tg_sb_str(&out), "2");

    sched = fork();
    assert_true(sched >= 0);
    if (sched == 0) {
        setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
        execl(getenv("TOPOGANG_BIN"), "topogang", "scheduler", "--kubeconfig", C.kubeconfig,
              "--listen", "", (char *)NULL);
        _exit(127);
    }
    assert_int_equal(tgc_sh("printf '%%s' '{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
                            "{\"name\":\"train-0\",\"namespace\":\"ml\"},\"spec\":{\"schedulerName\":"
                            "\"topogang\",\"containers\":[{\"name\":\"main\",\"image\":\"x\","
                            "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\",\"cpu\":\"8\"},"
                            "\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}' > '%s/pod.json' && "
                            "'%s/kubectl' --kubeconfig '%s' create -f '%s/pod.json' >/dev/null",
                            C.dir, C.bin, C.kubeconfig, C.dir), 0);
    for (int i = 0; i < 300; i++) {             /* up to 30 s */
        capture(&out, "'%s/kubectl' --kubeconfig '%s' -n ml get pod train-0 -o "
                "jsonpath='{.spec.nodeName}'", C.bin, C.kubeconfig);
        if (out.len)
            break;
        usleep(100000);
    }
    if (strcmp(tg_sb_str(&out), "b-whole"))
        fail_msg("train-0 bound to '%s', want b-whole", tg_sb_str(&out));
    tg_sb_free(&out);
}

int main(void)
{
    int registered = 0;
    for (const struct tg_plugin *const *p = tg_plugins; *p; p++)
        registered |= !strcmp((*p)->name, "NUMA");
    if (!registered) {
        fprintf(stderr, "SKIP: tg_plugin_numa is not registered in plugins/registry.c\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_gpu_pod_goes_to_one_domain),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
