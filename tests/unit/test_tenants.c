/* Tenant queues in the engine (issue 19; scheduler/tenants.c), through
 * `simulate` on YAML: a queue's limit holds (its reason in numbers), a gang
 * of a queue that does not exist waits with that reason, a namespace's
 * default queue applies, the queue furthest below its fair share goes first
 * (against age), and without Queues nothing changes; `-o json` lists every
 * queue, parents too, with quota, limit, fair share and allocation; the
 * replay's gangs name their queue. */
#include "testutil.h"
#include "cjson/cJSON.h"
#include "config/policy.h"
#include "scheduler/sim/simulate.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A node of 8 GPUs. */
static void node(char **y, const char *name)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n"
              "  labels: {kubernetes.io/hostname: %s, topology.kubernetes.io/zone: z}\n"
              "status:\n  allocatable: {cpu: \"64\", memory: 512Gi, nvidia.com/gpu: \"8\", "
              "pods: \"110\"}\n", name, name);
}

/* A Queue of ours with a GPU quota and limit ("" leaves one out) and parent. */
static void queue(char **y, const char *name, const char *parent, const char *quota,
                  const char *limit)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: %s}\nspec:\n",
           name);
    if (*parent)
        tu_cat(y, "  parent: %s\n", parent);
    tu_cat(y, "  resources:\n    nvidia.com/gpu: {");
    if (*quota)
        tu_cat(y, "quota: \"%s\"%s", quota, *limit ? ", " : "");
    if (*limit)
        tu_cat(y, "limit: \"%s\"", limit);
    tu_cat(y, "}\n");
}

/* A one-pod gang of `gpus` GPUs in namespace ns, labelled with queue q ("":
 * none), created at second `t`; bound to `on` when not NULL. */
static void pod(char **y, const char *name, const char *ns, const char *q, int gpus, int t,
                const char *on)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\n"
              "  creationTimestamp: \"2026-01-01T00:00:%02dZ\"\n", name, ns, t);
    if (*q)
        tu_cat(y, "  labels: {topogang.io/queue: %s}\n", q);
    tu_cat(y, "spec:\n  schedulerName: topogang\n");
    if (on)
        tu_cat(y, "  nodeName: %s\n", on);
    tu_cat(y, "  containers:\n  - name: c\n    resources: {requests: {nvidia.com/gpu: \"%d\"}}\n",
           gpus);
    if (on)
        tu_cat(y, "status: {phase: Running}\n");
}

static const char *status_of(const cJSON *res, const char *key)
{
    const cJSON *g = tu_gang(res, key);
    if (!g)
        fail_msg("no gang %s", key);
    return tu_str(g, "status");
}

static const char *reason_of(const cJSON *res, const char *key)
{
    const cJSON *g = tu_gang(res, key);
    return g ? tu_str(g, "reason") : "";
}

static const cJSON *queue_of(const cJSON *res, const char *name)
{
    const cJSON *q;
    cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(res, "queues"))
        if (!strcmp(tu_str(q, "name"), name))
            return q;
    fail_msg("no queue %s in the output", name);
    return NULL;
}

static double gpus(const cJSON *q, const char *what)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(q, what);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "nvidia.com/gpu");
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Two nodes (16 GPUs); team-a may use 8: its second 8-GPU gang waits with
 * the numbers though the room is there; a gang naming no Queue that exists
 * waits for it. */
static void test_limit_and_missing(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n1");
    node(&y, "n2");
    queue(&y, "team-a", "", "4", "8");
    queue(&y, "team-b", "", "8", "");
    pod(&y, "a1", "ns-a", "team-a", 8, 0, NULL);
    pod(&y, "a2", "ns-a", "team-a", 8, 1, NULL);
    pod(&y, "x1", "ns-x", "nope", 1, 2, NULL);
    cJSON *res = tu_simulate(NULL, y);
    assert_string_equal(status_of(res, "ns-a/a1"), "Scheduled");
    assert_string_equal(status_of(res, "ns-a/a2"), "Unschedulable");
    if (!strstr(reason_of(res, "ns-a/a2"), "queue team-a at its limit: 8/8 nvidia.com/gpu"))
        fail_msg("a2's reason: %s", reason_of(res, "ns-a/a2"));
    assert_string_equal(status_of(res, "ns-x/x1"), "Unschedulable");
    if (!strstr(reason_of(res, "ns-x/x1"), "queue nope does not exist"))
        fail_msg("x1's reason: %s", reason_of(res, "ns-x/x1"));
    const cJSON *a = queue_of(res, "team-a");
    assert_true(gpus(a, "allocated") == 8);
    assert_true(gpus(a, "limit") == 8);
    assert_true(gpus(a, "quota") == 4);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(a, "waitingGangs")->valueint, 1);
    cJSON_Delete(res);
    free(y);
}

/* An elastic gang (minMember 2, maxMember 4, four 2-GPU pods: 8 GPUs) of
 * team-a, whose limit is 4 GPUs, on 16 free GPUs: what is admitted at once
 * is what the limit allows (two members, 4 GPUs), not all four members
 * (8 > 4 refused the whole gang for ever); the other two wait, with the
 * limit in numbers. */
static void test_limit_counts_admitted_part(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n1");
    node(&y, "n2");
    queue(&y, "team-a", "", "4", "4");
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata:\n  name: el\n"
               "  namespace: ml\n  labels: {topogang.io/queue: team-a}\n"
               "spec: {minMember: 2, maxMember: 4}\n");
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "el-%d", i);
        tu_pod(&y, name, "el", "nvidia.com/gpu: 2", NULL);
    }
    cJSON *res = tu_simulate(NULL, y);
    const cJSON *g = tu_gang(res, "ml/el");
    assert_non_null(g);
    int placed = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods")) placed += tu_str(p, "node") != NULL;
    assert_int_equal(placed, 2);
    assert_string_equal(tu_str(g, "status"), "Scheduled");
    if (!strstr(reason_of(res, "ml/el"), "queue team-a at its limit: 4/4 nvidia.com/gpu"))
        fail_msg("el's reason: %s", reason_of(res, "ml/el"));
    const cJSON *a = queue_of(res, "team-a");
    assert_true(gpus(a, "allocated") == 4);
    cJSON_Delete(res);
    free(y);
}

/* Only the resources some Queue divides are shown: team-a names only GPUs;
 * its running pod also holds 4 cpu and 8Gi. The queue table has a
 * nvidia.com/gpu row and no cpu or memory row; `-o json` has no cpu or
 * memory in allocated or fairShare. (Before: cpu and memory showed for
 * every queue that held any.) */
static void test_only_divided_resources_shown(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n1");
    queue(&y, "team-a", "", "4", "8");
    tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: r\n  namespace: ns-a\n"
               "  labels: {topogang.io/queue: team-a}\n"
               "spec:\n  schedulerName: topogang\n  nodeName: n1\n  containers:\n  - name: c\n"
               "    resources: {requests: {nvidia.com/gpu: \"4\", cpu: \"4\", memory: 8Gi}}\n"
               "status: {phase: Running}\n");
    struct tg_policy pol;
    tg_policy_default(&pol);
    struct tg_sim *sim = tg_sim_new(&pol);
    assert_non_null(sim);
    tg_sim_quiet(sim, 1);
    struct tg_sb err = {0}, table = {0}, json = {0};
    assert_int_equal(tg_sim_load_string(sim, y, strlen(y), "t.yaml", &err), 0);
    assert_int_equal(tg_sim_run(sim), 0);
    tg_sim_table(sim, 0, &table);
    tg_sim_json(sim, &json);
    const char *t = tg_sb_str(&table);
    const char *q = strstr(t, "\nQUEUE ");
    if (!q || !strstr(q, "team-a") || !strstr(q, "nvidia.com/gpu") || strstr(q, "cpu") ||
        strstr(q, "memory"))
        fail_msg("the queue table:\n%s", q ? q : t);
    cJSON *res = cJSON_Parse(tg_sb_str(&json));
    assert_non_null(res);
    const cJSON *a = queue_of(res, "team-a");
    assert_true(gpus(a, "allocated") == 4);
    for (int i = 0; i < 2; i++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(a, i ? "fairShare" : "allocated");
        assert_null(cJSON_GetObjectItemCaseSensitive(m, "cpu"));
        assert_null(cJSON_GetObjectItemCaseSensitive(m, "memory"));
    }
    cJSON_Delete(res);
    tg_sb_free(&err);
    tg_sb_free(&table);
    tg_sb_free(&json);
    tg_sim_free(&sim);
    free(y);
}

/* The same input without Queues: queues are off, both gangs placed, no
 * "queues" in the output. */
static void test_no_queues_no_change(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n1");
    node(&y, "n2");
    pod(&y, "a1", "ns-a", "team-a", 8, 0, NULL);
    pod(&y, "a2", "ns-a", "team-a", 8, 1, NULL);
    cJSON *res = tu_simulate(NULL, y);
    assert_string_equal(status_of(res, "ns-a/a1"), "Scheduled");
    assert_string_equal(status_of(res, "ns-a/a2"), "Scheduled");
    assert_null(cJSON_GetObjectItemCaseSensitive(res, "queues"));
    cJSON_Delete(res);
    free(y);
}

/* One node of 8 GPUs, 4 held by team-a's running pod. team-a's waiting gang
 * is older than team-b's; both ask 4. team-b is furthest below its fair
 * share (0 allocated): it goes first and takes the room; without Queues the
 * older gang would. */
static void test_order_between_queues(void **state)
{
    (void)state;
    for (int with = 0; with < 2; with++) {
        char *y = NULL;
        node(&y, "n1");
        if (with) {
            queue(&y, "team-a", "", "4", "");
            queue(&y, "team-b", "", "4", "");
        }
        pod(&y, "run", "ns-a", "team-a", 4, 0, "n1");
        pod(&y, "a", "ns-a", "team-a", 4, 1, NULL);
        pod(&y, "b", "ns-b", "team-b", 4, 2, NULL);
        cJSON *res = tu_simulate(NULL, y);
        assert_string_equal(status_of(res, "ns-a/a"), with ? "Unschedulable" : "Scheduled");
        assert_string_equal(status_of(res, "ns-b/b"), with ? "Scheduled" : "Unschedulable");
        cJSON_Delete(res);
        free(y);
    }
}

/* A namespace's default queue (its label) takes a pod that names none; a
 * parent is listed with its children, each naming it. */
static void test_namespace_default_and_parents(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n1");
    queue(&y, "org", "", "8", "");
    queue(&y, "team-a", "org", "2", "2");
    queue(&y, "team-b", "org", "6", "");
    tu_cat(&y, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-a\n"
               "  labels: {topogang.io/queue: team-a}\n");
    pod(&y, "a1", "ns-a", "", 2, 0, NULL);
    pod(&y, "a2", "ns-a", "", 1, 1, NULL);
    cJSON *res = tu_simulate(NULL, y);
    assert_string_equal(status_of(res, "ns-a/a1"), "Scheduled");
    assert_string_equal(status_of(res, "ns-a/a2"), "Unschedulable");
    if (!strstr(reason_of(res, "ns-a/a2"), "queue team-a at its limit: 2/2 nvidia.com/gpu"))
        fail_msg("a2's reason: %s", reason_of(res, "ns-a/a2"));
    const cJSON *org = queue_of(res, "org"), *a = queue_of(res, "team-a");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(org, "parent")));
    assert_string_equal(tu_str(a, "parent"), "org");
    assert_true(gpus(org, "allocated") == 2); /* a child's allocation is its parent's too */
    assert_true(gpus(a, "allocated") == 2);
    cJSON_Delete(res);
    free(y);
}

/* The replay's gangs name their queue (`simulate --replay -o json`). */
static void test_replay_names_queue(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n1");
    queue(&y, "team-a", "", "4", "8");
    pod(&y, "a1", "ns-a", "team-a", 8, 0, NULL);
    char path[] = "/tmp/tg-tenants-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, y, strlen(y)), (ssize_t)strlen(y));
    close(fd);
    const char *bin = getenv("TOPOGANG_BIN");
    assert_non_null(bin);
    char cmd[1024], out[65536];
    snprintf(cmd, sizeof cmd, "%s simulate --replay -f %s -o json", bin, path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    assert_int_equal(pclose(f), 0);
    unlink(path);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "gangs"), 0);
    assert_non_null(g);
    assert_string_equal(tu_str(g, "queue"), "team-a");
    cJSON_Delete(res);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_and_missing),
        cmocka_unit_test(test_limit_counts_admitted_part),
        cmocka_unit_test(test_only_divided_resources_shown),
        cmocka_unit_test(test_no_queues_no_change),
        cmocka_unit_test(test_order_between_queues),
        cmocka_unit_test(test_namespace_default_and_parents),
        cmocka_unit_test(test_replay_names_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
