/* `simulate --replay` with tenant Queues (issue 19; scheduler/sim/
 * replay_queues.c): each queue's resource-seconds held against its fair
 * share integrated over time, on a hand-made trace with exact expected
 * seconds (to the end, and cut by --until); the JSON and table shapes; the
 * --plot SVG parsed as XML (one polyline per queue held, one per fair
 * share); the day of examples/trace/ with the teams of examples/tenants/;
 * and the demo of docs/queues.md (examples/queues/): a team over its limit
 * refused with the numbers, and the reclaim case kept apart (skipped) until
 * reclaim lands. */
#include "testutil.h"
#include "config/policy.h"
#include "scheduler/sim/load.h"
#include "scheduler/sim/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[64];
static char out[1 << 22];

/* A node of 8 GPUs. */
static void node(char **y, const char *name)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels: "
              "{kubernetes.io/hostname: %s, topogang.io/rack: r0}\n"
              "status: {allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
              "nvidia.com/gpu: \"8\"}}\n", name, name);
}

static void queue(char **y, const char *name, int quota)
{
    tu_cat(y, "---\napiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: %s}\n"
              "spec: {resources: {nvidia.com/gpu: {quota: \"%d\"}}}\n", name, quota);
}

/* A pending pod of queue q (and gang `group`, NULL: none) arriving at
 * 00:MM:SS (secs < 3600), running dur seconds. */
static void qpod(char **y, const char *name, const char *group, const char *q, int secs, int dur,
                 int gpus)
{
    tu_cat(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ml\n"
              "  creationTimestamp: \"2026-01-01T00:%02d:%02dZ\"\n"
              "  labels: {topogang.io/queue: %s%s%s}\n"
              "  annotations: {simulate.topogang.io/duration: \"%d\"}\n"
              "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: %s, uid: u-%s, "
              "controller: true}]\nspec:\n  schedulerName: topogang\n"
              "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: %d}}}]\n",
           name, secs / 60, secs % 60, q, group ? ", topogang.io/pod-group: " : "",
           group ? group : "", dur, group ? group : name, group ? group : name, gpus);
}

/* 16 GPUs; queues a and b, quota 8 each.
 *   a1 (a, 8 GPUs)         0 .. 3600
 *   b1 (b, 8 GPUs)         0 .. 1800
 *   a2 (a, gang 2 x 8)   arrives 600, needs both nodes: 3600 .. 4200
 * Demand a: 8 until 600, 24 until 3600, 16 until 4200; b: 8 until 1800.
 * Fair shares: a 8 and b 8 until 1800 (each its quota, nothing left over),
 * then a 16 (b wants none). Held: a 8 x 3600 + 16 x 600 = 38400 GPU-s;
 * fair share a 8 x 1800 + 16 x 2400 = 52800; b 14400 and 14400. */
static char *two_queues(void)
{
    char *y = NULL;
    node(&y, "n0");
    node(&y, "n1");
    queue(&y, "a", 8);
    queue(&y, "b", 8);
    tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
               "metadata: {name: a2, namespace: ml, creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
               "spec: {minMember: 2}\n");
    qpod(&y, "a1", NULL, "a", 0, 3600, 8);
    qpod(&y, "b1", NULL, "b", 0, 1800, 8);
    qpod(&y, "a2-0", "a2", "a", 600, 600, 8);
    qpod(&y, "a2-1", "a2", "a", 600, 600, 8);
    return y;
}

static cJSON *replay(const char *yaml, int64_t until_ms, struct tg_sb *table)
{
    struct tg_simdata d;
    struct tg_sb err = {0}, js = {0};
    struct tg_policy pol;
    tg_policy_default(&pol);
    tg_simdata_init(&d);
    d.quiet = 1;
    assert_int_equal(tg_simdata_load_string(&d, yaml, strlen(yaml), "q.yaml", &err), 0);
    struct tg_replay_opts o = {.until_ms = until_ms};
    struct tg_replay *r = tg_replay_new(&d, &pol, &o);
    assert_non_null(r);
    assert_int_equal(tg_replay_run(r), 0);
    tg_replay_json(r, &js);
    if (table)
        tg_replay_table(r, table);
    cJSON *res = cJSON_Parse(tg_sb_str(&js));
    assert_non_null(res);
    tg_replay_free(&r);
    tg_simdata_free(&d);
    tg_sb_free(&err);
    tg_sb_free(&js);
    return res;
}

static const cJSON *queue_of(const cJSON *res, const char *name)
{
    const cJSON *q;
    cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(res, "summary"), "queues"))
    {
        if (!strcmp(tu_str(q, "name"), name))
            return q;
    }
    fail_msg("no queue %s in the summary", name);
    return NULL;
}

/* The queue's seconds of `what` (usedSeconds, fairShareSeconds) of GPUs. */
static double gpu_s(const cJSON *res, const char *name, const char *what)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(queue_of(res, name), what);
    assert_true(cJSON_IsObject(m));
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "nvidia.com/gpu");
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void seconds_integrated(void **state)
{
    (void)state;
    char *y = two_queues();
    struct tg_sb table = {0};
    cJSON *res = replay(y, -1, &table);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(res, "summary");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(s, "end")->valueint, 4200);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(tu_gang(res, "ml/a2"), "wait")->valueint, 3000);
    assert_true(gpu_s(res, "a", "usedSeconds") == 38400);
    assert_true(gpu_s(res, "a", "fairShareSeconds") == 52800);
    assert_true(gpu_s(res, "b", "usedSeconds") == 14400);
    assert_true(gpu_s(res, "b", "fairShareSeconds") == 14400);
    /* the JSON shape: every queue, parent null, the two maps and nothing else */
    const cJSON *qs = cJSON_GetObjectItemCaseSensitive(s, "queues"), *q;
    assert_int_equal(cJSON_GetArraySize(qs), 2);
    cJSON_ArrayForEach(q, qs)
    {
        assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(q, "parent")));
        assert_int_equal(cJSON_GetArraySize(q), 4);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(q, "usedSeconds")), 1);
    }
    /* the table: a line per queue and resource with both figures */
    assert_non_null(strstr(tg_sb_str(&table), "USED-SECONDS"));
    assert_non_null(strstr(tg_sb_str(&table), "nvidia.com/gpu             38400               52800"));
    cJSON_Delete(res);
    tg_sb_free(&table);
    /* cut at 2000 s: a held 8 x 2000, its share 8 x 1800 + 16 x 200 */
    res = replay(y, 2000 * 1000, NULL);
    assert_true(gpu_s(res, "a", "usedSeconds") == 16000);
    assert_true(gpu_s(res, "a", "fairShareSeconds") == 17600);
    assert_true(gpu_s(res, "b", "usedSeconds") == 14400);
    assert_true(gpu_s(res, "b", "fairShareSeconds") == 14400);
    cJSON_Delete(res);
    free(y);
}

/* No Queue in the input: no "queues" in the summary, no queue lines. */
static void no_queues_no_section(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0");
    qpod(&y, "a1", NULL, "a", 0, 60, 8);
    struct tg_sb table = {0};
    cJSON *res = replay(y, -1, &table);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "summary"),
                                                 "queues"));
    assert_null(strstr(tg_sb_str(&table), "USED-SECONDS"));
    cJSON_Delete(res);
    tg_sb_free(&table);
    free(y);
}

static int run(const char *args)
{
    const char *bin = getenv("TOPOGANG_BIN"), *src = getenv("TOPOGANG_SRC");
    assert_non_null(bin);
    assert_non_null(src);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s %s 2>&1", src, bin, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* --plot: valid XML, root svg, one 'queue' and one 'fairshare' polyline per
 * queue (named by data-queue), each with points inside the picture. */
static void plot_draws_each_queue(void **state)
{
    (void)state;
    char *y = two_queues(), path[128], svg[128], args[1024];
    snprintf(path, sizeof path, "%s/q.yaml", tmpdir);
    snprintf(svg, sizeof svg, "%s/q.svg", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(y, f);
    fclose(f);
    snprintf(args, sizeof args, "simulate --replay -f %s --plot %s -o json", path, svg);
    assert_int_equal(run(args), 0);
    snprintf(args, sizeof args,
             "python3 -c \"import sys, xml.etree.ElementTree as E\n"
             "r = E.parse(sys.argv[1]).getroot()\n"
             "assert r.tag == '{http://www.w3.org/2000/svg}svg', r.tag\n"
             "W, H = float(r.get('width')), float(r.get('height'))\n"
             "for c in ('queue', 'fairshare'):\n"
             "    ps = [p for p in r.iter('{http://www.w3.org/2000/svg}polyline') if p.get('class') == c]\n"
             "    assert sorted(p.get('data-queue') for p in ps) == ['a', 'b'], (c, len(ps))\n"
             "    for p in ps:\n"
             "        pts = [tuple(map(float, xy.split(','))) for xy in p.get('points').split()]\n"
             "        assert len(pts) >= 2 and all(0 <= x <= W and 0 <= y <= H for x, y in pts)\n"
             "print('svg ok')\" %s 2>&1",
             svg);
    f = popen(args, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        fail_msg("SVG check failed: %s", out);
    assert_non_null(strstr(out, "svg ok"));
    free(y);
}

/* The numbers of queue `name` in simulate's top-level "queues". */
static double qnum(const cJSON *res, const char *name, const char *what)
{
    const cJSON *q;
    cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(res, "queues"))
    {
        if (strcmp(tu_str(q, "name"), name))
            continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(q, what), "nvidia.com/gpu");
        assert_true(cJSON_IsNumber(v));
        return v->valuedouble;
    }
    fail_msg("no queue %s", name);
    return 0;
}

/* The demo of docs/queues.md: research over its quota (16 of 8), its third
 * job waiting (never reclaiming: research is above its share); prod at its
 * quota; interns below its fair share (its reclaim: demo_reclaims). */
static void demo_three_teams(void **state)
{
    (void)state;
    assert_int_equal(run("simulate -f examples/queues/ -o json"), 0);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    const cJSON *c = tu_gang(res, "research/train-c");
    assert_non_null(c);
    assert_string_equal(tu_str(c, "status"), "Unschedulable"); /* over its quota: no reclaim */
    assert_non_null(strstr(tu_str(c, "reason"), "no reclaim: queue research would pass its fair "
                                                "share: 8 + 8 > 8 nvidia.com/gpu"));
    assert_null(strstr(tu_str(c, "reason"), "reclaimed"));
    assert_true(qnum(res, "research", "quota") == 8);
    assert_true(qnum(res, "research", "fairShare") == 8);
    assert_true(qnum(res, "research", "limit") == 16);
    assert_true(qnum(res, "prod", "fairShare") == 16);
    assert_true(qnum(res, "interns", "fairShare") == 8);
    assert_non_null(tu_gang(res, "interns/first-job"));
    cJSON_Delete(res);
}

/* The demo's reclaim (issue 19): interns' job takes its 8 GPUs back from
 * research, which goes down to its fair share (8) and no further; prod is
 * not touched. */
enum { RECLAIM_LANDED = 1 };
static void demo_reclaims(void **state)
{
    (void)state;
    if (!RECLAIM_LANDED)
        skip();
    assert_int_equal(run("simulate -f examples/queues/ -o json"), 0);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    const cJSON *j = tu_gang(res, "interns/first-job");
    assert_string_equal(tu_str(j, "status"), "Scheduled");
    const char *node = tu_node_of(res, "interns/first-job");
    assert_true(!strcmp(node, "gpu-0") || !strcmp(node, "gpu-1")); /* research's room */
    assert_true(qnum(res, "research", "allocated") == 8);
    assert_true(qnum(res, "prod", "allocated") == 16);
    assert_true(qnum(res, "interns", "allocated") == 8);
    cJSON_Delete(res);
    assert_int_equal(run("simulate -f examples/queues/"), 0);
    assert_non_null(strstr(out, "reclaimed 8 nvidia.com/gpu from queue research (fair share 8, allocated 16)"));
}

/* The replay summary counts reclaims beside preemptions: 16 GPUs, queues a
 * and b (quota 8 each); a's two 8-GPU gangs take both nodes at 0 (b asks
 * nothing); b's gang arrives at 600 and takes its 8 back from a, now above
 * its fair share: one preemption, a reclaim, in the JSON summary
 * (preemptions.reclaims) and the table ("(1 reclaim(s))"). */
static void summary_counts_reclaims(void **state)
{
    (void)state;
    char *y = NULL;
    node(&y, "n0");
    node(&y, "n1");
    queue(&y, "a", 8);
    queue(&y, "b", 8);
    const char *groups[] = {"a1", "a2", "b1"};
    for (int i = 0; i < 3; i++)
        tu_cat(&y, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, "
                   "namespace: ml, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec: {minMember: 1}\n",
               groups[i]);
    qpod(&y, "a1-0", "a1", "a", 0, 3600, 8);
    qpod(&y, "a2-0", "a2", "a", 1, 3600, 8);
    qpod(&y, "b1-0", "b1", "b", 600, 600, 8);
    struct tg_sb table = {0};
    cJSON *res = replay(y, -1, &table);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "summary"),
                                                      "preemptions");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "count"), *rc = cJSON_GetObjectItemCaseSensitive(p, "reclaims");
    if (!cJSON_IsNumber(n) || !cJSON_IsNumber(rc) || n->valueint != 1 || rc->valueint != 1)
        fail_msg("the summary's preemptions: %s\n%s", cJSON_PrintUnformatted(p), tg_sb_str(&table));
    if (!strstr(tg_sb_str(&table), "preemptions: 1 (1 reclaim(s)), evicting 1 gang(s)"))
        fail_msg("the table:\n%s", tg_sb_str(&table));
    cJSON_Delete(res);
    tg_sb_free(&table);
    free(y);
}

/* The day of examples/trace/ shared by the three teams of examples/tenants/:
 * every gang in its namespace's queue; research never above its limit (256
 * GPUs); the queues hold no more than the cluster's GPUs in use, and their
 * fair shares add up to no more than the GPUs there are. */
static void example_tenants_day(void **state)
{
    (void)state;
    assert_int_equal(run("simulate --replay -f examples/trace/ -f examples/tenants/ -o json"), 0);
    cJSON *res = cJSON_Parse(out);
    assert_non_null(res);
    static const char *const team[][2] = {
        {"inference", "serving"}, {"ml", "training"}, {"research", "research"}};
    const cJSON *g;
    int n = 0;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(res, "gangs"))
    {
        const char *pod = tu_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g, "pods"), 0), "pod");
        int found = 0;
        for (int i = 0; i < 3; i++)
            if (!strncmp(pod, team[i][0], strlen(team[i][0])) && pod[strlen(team[i][0])] == '/') {
                assert_string_equal(tu_str(g, "queue"), team[i][1]);
                found = 1;
            }
        assert_true(found);
        n++;
    }
    assert_true(n > 400);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(res, "summary");
    double end = cJSON_GetObjectItemCaseSensitive(s, "end")->valuedouble;
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(s, "utilization"), "nvidia.com/gpu");
    double used = 0, share = 0;
    for (int i = 0; i < 3; i++) {
        double q = gpu_s(res, team[i][1], "usedSeconds");
        assert_true(q > 0);
        used += q;
        share += gpu_s(res, team[i][1], "fairShareSeconds");
    }
    assert_true(gpu_s(res, "research", "usedSeconds") <= 256 * end);
    assert_true(used <= cJSON_GetObjectItemCaseSensitive(u, "used")->valuedouble);
    assert_true(share <= 512 * end);
    cJSON_Delete(res);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(tmpdir, sizeof tmpdir, "tg-rqueues");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seconds_integrated),
        cmocka_unit_test(no_queues_no_section),
        cmocka_unit_test(plot_draws_each_queue),
        cmocka_unit_test(demo_three_teams),
        cmocka_unit_test(demo_reclaims),
        cmocka_unit_test(summary_counts_reclaims),
        cmocka_unit_test(example_tenants_day),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
