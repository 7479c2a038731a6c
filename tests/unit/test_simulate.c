/* `topogang simulate` as a user runs it: the bundled examples in table and
 * JSON form, and bad input files: clear messages, exit codes, no crash. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 20];

/* Runs the topogang binary with args through sh; returns the exit code and
 * leaves stdout+stderr in out. */
static int run(const char *args)
{
    const char *bin = getenv("TOPOGANG_BIN"), *src = getenv("TOPOGANG_SRC");
    assert_non_null(bin);
    assert_non_null(src);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", src, bin, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char tmpdir[64];

static const char *write_tmp(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_examples_json(void **state)
{
    (void)state;
    assert_int_equal(run("simulate -f examples/ -o json -q"), 0);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    /* every pending topogang pod of the examples appears exactly once */
    const char *src = getenv("TOPOGANG_SRC");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "grep -c 'schedulerName: topogang' '%s/examples/workloads.yaml'", src);
    FILE *f = popen(cmd, "r");
    int want = 0;
    assert_int_equal(fscanf(f, "%d", &want), 1);
    pclose(f);
    int seen = 0;
    const cJSON *g, *p;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(res, "gangs"))
    {
        const cJSON *pods = cJSON_GetObjectItem(g, "pods");
        seen += cJSON_GetArraySize(pods);
        cJSON_ArrayForEach(p, pods)
        {
            int again = 0;
            const cJSON *g2, *p2;
            cJSON_ArrayForEach(g2, cJSON_GetObjectItem(res, "gangs"))
                cJSON_ArrayForEach(p2, cJSON_GetObjectItem(g2, "pods"))
                    again += !strcmp(tu_str(p2, "pod"), tu_str(p, "pod"));
            assert_int_equal(again, 1);
        }
        const char *st = tu_str(g, "status");
        assert_true(!strcmp(st, "Scheduled") || !strcmp(st, "Unschedulable"));
        assert_non_null(cJSON_GetObjectItem(g, "podGroup"));
        assert_non_null(cJSON_GetObjectItem(g, "reason"));
    }
    assert_int_equal(seen, want);
    const cJSON *llama = tu_gang(res, "ml/llama-pretrain");
    assert_string_equal(tu_str(llama, "status"), "Scheduled");
    assert_string_equal(tu_str(llama, "level"), "block");
    const cJSON *giant = tu_gang(res, "ml/giant-run");
    assert_string_equal(tu_str(giant, "status"), "Unschedulable");
    assert_non_null(strstr(tu_str(giant, "reason"), "needs 40 x nvidia.com/gpu=8 in one block; best block"));
    /* the heterogeneous inference gang sits in one NVLink domain */
    const cJSON *serve = tu_gang(res, "inference/llm-serve");
    assert_string_equal(tu_str(serve, "level"), "nvlink-domain");
    /* ungrouped pods have podGroup null */
    const cJSON *nb = tu_gang(res, "research/notebook-alice");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(nb, "podGroup")));
    assert_string_equal(tu_str(nb, "status"), "Scheduled");
    /* the pod that tolerates maintenance and selects its node lands there */
    assert_string_equal(tu_node_of(res, "ops/firmware-check"), "gpu-a00-02");
    const cJSON *sum = cJSON_GetObjectItem(res, "summary");
    assert_int_equal(cJSON_GetObjectItem(sum, "nodes")->valueint, 64);
    cJSON_Delete(res);
}

static void test_examples_table(void **state)
{
    (void)state;
    assert_int_equal(run("simulate -f examples/cluster.yaml -f examples/workloads.yaml"), 0);
    assert_non_null(strstr(out, "GANG"));
    assert_non_null(strstr(out, "REASON"));
    assert_non_null(strstr(out, "ml/llama-pretrain"));
    assert_non_null(strstr(out, "12/12"));
    assert_non_null(strstr(out, "(research/notebook-alice)"));
    assert_non_null(strstr(out, "10 gangs: 8 scheduled, 2 unschedulable"));
}

static void test_bad_input(void **state)
{
    (void)state;
    /* malformed YAML: the file cannot be read as a whole */
    const char *p = write_tmp("broken.yaml", "kind: Node\nmetadata: {name: a\nstatus: {}\n");
    char args[512];
    snprintf(args, sizeof args, "simulate -f %s", p);
    assert_int_equal(run(args), 1);
    assert_non_null(strstr(out, "broken.yaml:"));

    /* bad objects are skipped with file:line and the object's name; the rest is placed */
    p = write_tmp("mixed.yaml",
                  "kind: Node\nmetadata: {name: good}\nstatus: {allocatable: {cpu: '4'}}\n---\n"
                  "kind: Node\nmetadata: {name: bad}\nstatus:\n  allocatable:\n    cpu: four\n---\n"
                  "kind: Gadget\nmetadata: {name: g}\n---\n"
                  "kind: Pod\nmetadata: {name: p}\nspec: {schedulerName: topogang, containers: [{resources: {requests: {cpu: '1'}}}]}\n---\n"
                  "kind: Pod\nmetadata: {name: q}\nspec: {schedulerName: topogang, tolerations: 5}\n---\n"
                  "apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: -3}\n");
    snprintf(args, sizeof args, "simulate -f %s -o json", p);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "mixed.yaml:9: error: Node bad: status.allocatable.cpu: malformed quantity \"four\" (object skipped)"));
    assert_non_null(strstr(out, "malformed quantity \"four\""));
    assert_non_null(strstr(out, "mixed.yaml:11: warning: unknown kind \"Gadget\""));
    assert_non_null(strstr(out, "Pod default/q: spec.tolerations:"));
    assert_non_null(strstr(out, "PodGroup default/pg: spec.minMember:"));
    assert_non_null(strstr(out, "\"pod\":\"default/p\",\"node\":\"good\""));

    /* a broken policy is refused with line and key */
    p = write_tmp("policy.yaml", "placement:\n  strategy: sideways\n");
    snprintf(args, sizeof args, "simulate -f examples/ --config %s", p);
    assert_int_equal(run(args), 1);
    assert_non_null(strstr(out, "policy.yaml:2: placement.strategy: must be one of pack, spread"));

    assert_int_equal(run("simulate -f /nonexistent.yaml"), 1);
    assert_non_null(strstr(out, "/nonexistent.yaml: No such file or directory"));
    assert_int_equal(run("simulate -o yaml -f examples/"), 2);
    assert_int_equal(run("simulate"), 2);
    assert_int_equal(run("simulate --help"), 0);
    assert_non_null(strstr(out, "usage: topogang simulate"));
    assert_int_equal(run("frobnicate"), 2);
    assert_int_equal(run("--help"), 0);
}

/* PriorityClasses as `simulate` reads them (issue 19): a null
 * preemptionPolicy is the default, PreemptLowerPriority, as in the daemon (it
 * was refused here: "preemptionPolicy must be PreemptLowerPriority or
 * Never"); a PodGroup naming a class that does not exist waits, saying so. */
static void test_priority_classes(void **state)
{
    (void)state;
    const char *nodes = "kind: Node\nmetadata: {name: n0}\nstatus: {allocatable: {cpu: '4', nvidia.com/gpu: '8'}}\n"
                        "---\nkind: Pod\nmetadata:\n  name: low\n  namespace: a\n"
                        "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: low, uid: u1, controller: true}]\n"
                        "spec: {nodeName: n0, priority: 1, containers: [{resources: {requests: {nvidia.com/gpu: '8'}}}]}\n"
                        "status: {phase: Running}\n";
    char text[4096];
    snprintf(text, sizeof text, "%s---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
             "metadata: {name: high}\nvalue: 1000\npreemptionPolicy: null\nglobalDefault: null\n"
             "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: a}\n"
             "spec: {minMember: 1, priorityClassName: high}\n"
             "---\nkind: Pod\nmetadata: {name: g-0, namespace: a, labels: {topogang.io/pod-group: g}}\n"
             "spec: {schedulerName: topogang, containers: [{resources: {requests: {nvidia.com/gpu: '8'}}}]}\n",
             nodes);
    const char *p = write_tmp("nullpolicy.yaml", text);
    char args[512];
    snprintf(args, sizeof args, "simulate -f %s -o json", p);
    assert_int_equal(run(args), 0);
    assert_null(strstr(out, "error"));
    assert_null(strstr(out, "warning"));
    assert_non_null(strstr(out, "\"skippedObjects\":0"));
    assert_non_null(strstr(out, "\"podGroup\":\"a/g\",\"status\":\"Scheduled\",\"priority\":1000"));
    assert_non_null(strstr(out, "\"pod\":\"a/g-0\",\"node\":\"n0\""));

    /* a class that does not exist: the gang waits with the object and the field */
    snprintf(text, sizeof text, "%s---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
             "metadata: {name: g, namespace: a}\nspec: {minMember: 1, priorityClassName: nope, priority: 5}\n"
             "---\nkind: Pod\nmetadata: {name: g-0, namespace: a, labels: {topogang.io/pod-group: g}}\n"
             "spec: {schedulerName: topogang, containers: [{resources: {requests: {nvidia.com/gpu: '1'}}}]}\n",
             nodes);
    p = write_tmp("missingclass.yaml", text);
    snprintf(args, sizeof args, "simulate -f %s -o json", p);
    assert_int_equal(run(args), 0);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "gangs"), 0);
    assert_string_equal(cJSON_GetObjectItem(g, "podGroup")->valuestring, "a/g");
    assert_string_not_equal(cJSON_GetObjectItem(g, "status")->valuestring, "Scheduled");
    assert_string_equal(cJSON_GetObjectItem(g, "reason")->valuestring,
                        "PodGroup a/g: spec.priorityClassName: PriorityClass \"nope\" does not exist "
                        "(waiting for it; the apiserver refuses a pod that names a missing class)");
    assert_null(strstr(out, "\"node\":\"n0\""));
    cJSON_Delete(res);
}

static void test_kind_list_and_stdin(void **state)
{
    (void)state;
    const char *p = write_tmp("list.json",
                              "{\"kind\":\"List\",\"items\":[{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"},"
                              "\"status\":{\"allocatable\":{\"cpu\":\"2\"}}},{\"kind\":\"Pod\",\"metadata\":"
                              "{\"name\":\"x\",\"namespace\":\"a\"},\"spec\":{\"schedulerName\":\"topogang\"}}]}\n");
    char args[512];
    snprintf(args, sizeof args, "simulate -o json -f - < %s", p);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "\"pod\":\"a/x\",\"node\":\"n\""));
}

/* The case as a user runs it: four GPU nodes without an NVLink
 * clique label are no NVLink domain, in the table and in JSON. */
static void test_missing_label_output(void **state)
{
    (void)state;
    char *y = NULL;
    for (int i = 0; i < 4; i++) {
        char name[8], labels[160];
        snprintf(name, sizeof name, "n%d", i);
        snprintf(labels, sizeof labels, "topology.kubernetes.io/zone: z, cloud.google.com/gce-topology-block: b, "
                 "topogang.io/rack: r, kubernetes.io/hostname: %s", name);
        tu_node_labels(&y, name, labels, 8);
    }
    const char *groups[][2] = {{"nvl", "{required: nvlink-domain}"},
                               {"wide", "{required: rack, preferred: nvlink-domain}"}};
    for (int k = 0; k < 2; k++) {
        tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: ml}\n"
                   "spec: {minMember: 4, topology: %s}\n", groups[k][0], groups[k][1]);
        for (int i = 0; i < 4; i++) {
            char name[32];
            snprintf(name, sizeof name, "%s-%d", groups[k][0], i);
            tu_pod(&y, name, groups[k][0], "nvidia.com/gpu: 8", NULL);
        }
    }
    const char *p = write_tmp("nolabel.yaml", y);
    free(y);
    char args[512];
    snprintf(args, sizeof args, "simulate -f %s", p);
    assert_int_equal(run(args), 0);
    assert_null(strstr(out, "/-"));
    const char *wide = strstr(out, "ml/wide");
    assert_non_null(wide);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(wide, "\n"), wide);
    assert_non_null(strstr(line, "Scheduled"));
    assert_non_null(strstr(line, " rack "));
    assert_non_null(strstr(line, " z/b/r "));
    snprintf(args, sizeof args, "simulate -o json -f %s", p);
    assert_int_equal(run(args), 0);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    const cJSON *g = tu_gang(res, "ml/nvl");
    assert_string_equal(tu_str(g, "status"), "Unschedulable");
    assert_non_null(strstr(tu_str(g, "reason"), "4 nodes lacking label nvidia.com/gpu.clique"));
    g = tu_gang(res, "ml/wide");
    assert_string_equal(tu_str(g, "domain"), "z/b/r");
    assert_string_equal(tu_str(g, "level"), "rack");
    cJSON_Delete(res);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(tmpdir, sizeof tmpdir, "tg-sim");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples_json),
        cmocka_unit_test(test_examples_table),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_kind_list_and_stdin),
        cmocka_unit_test(test_priority_classes),
        cmocka_unit_test(test_missing_label_output),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
