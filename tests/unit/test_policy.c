/* The policy: defaults, a full valid file, and errors that name line and key. */
#include "testutil.h"
#include "config/policy.h"
#include "model/objects.h"
#include "util/err.h"

#include <string.h>

static void test_defaults(void **state)
{
    (void)state;
    struct tg_policy p;
    tg_policy_default(&p);
    assert_string_equal(p.scheduler_name, "topogang");
    assert_int_equal(p.nlevels, 5);
    assert_string_equal(p.levels[3].name, "nvlink-domain");
    assert_string_equal(p.levels[3].label, "nvidia.com/gpu.clique");
    assert_int_equal(p.strategy, TG_STRATEGY_PACK);
    assert_int_equal(tg_policy_level(&p, "rack"), 3);
    assert_int_equal(tg_policy_level(&p, "nope"), -1);
    assert_int_equal(p.gang_timeout_s, 300);
    assert_string_equal(p.default_queue, "default");
    assert_int_equal(p.usage_half_life_s, 0);
}

static void test_valid(void **state)
{
    (void)state;
    const char *y = "schedulerName: gangs\n"
                    "topology:\n  levels:\n"
                    "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
                    "    - {name: rack, nodeLabel: example.com/rack}\n"
                    "placement: {strategy: spread, defaultPreferred: zone}\n"
                    "scoring: {topology: 10, binpack: 0, numa: 5}\n"
                    "gang: {scheduleTimeoutSeconds: 60, bindRetries: 1}\n"
                    "api: {qps: 50, burst: 100, bindConcurrency: 8}\n"
                    "numa: {defaultPolicy: single-numa-node}\n"
                    "queues: {defaultQueue: research.shared, usageHalfLifeSeconds: 604800}\n"
                    "preemption: {reclaimMinRuntimeSeconds: 900}\n";
    struct tg_policy p;
    struct tg_sb err = {0};
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), 0);
    assert_string_equal(p.scheduler_name, "gangs");
    assert_int_equal(p.nlevels, 2);
    assert_string_equal(p.levels[1].label, "example.com/rack");
    assert_int_equal(p.strategy, TG_STRATEGY_SPREAD);
    assert_int_equal(p.score_binpack, 0);
    assert_int_equal(p.bind_concurrency, 8);
    assert_int_equal(p.numa_default, TG_NUMA_SINGLE_NUMA_NODE);
    struct tg_sb dump = {0};
    tg_policy_dump(&p, &dump);
    assert_non_null(strstr(tg_sb_str(&dump), "strategy: spread"));
    /* the dump is itself a valid policy that reads back the same */
    struct tg_policy q;
    assert_int_equal(tg_policy_parse(dump.s, dump.len, "dump", &q, &err), 0);
    assert_int_equal(q.nlevels, 2);
    assert_int_equal(q.api_qps, 50);
    assert_string_equal(q.default_queue, "research.shared");
    assert_int_equal(q.usage_half_life_s, 604800);
    assert_int_equal(q.reclaim_min_runtime_s, 900);
    tg_sb_free(&dump);
    tg_sb_free(&err);
}

/* Names, labels and strings YAML would read as something else (null, a bool,
 * a number, a comment, a folded line) survive the dump: --print-config output
 * loads back as the same policy (found by fuzzing). */
static void test_dump_quotes(void **state)
{
    (void)state;
    const char *y = "schedulerName: \"true\"\n"
                    "topology:\n  levels:\n"
                    "    - {name: \"a b: #c\", nodeLabel: \"~x\\ny\\\"z\"}\n"
                    "    - {name: \"12\", nodeLabel: \"null\"}\n"
                    "    - {name: plain-name, nodeLabel: example.com/rack}\n"
                    "placement: {defaultPreferred: \"12\"}\n"
                    "numa: {policyLabel: \"x\\\\y\\t\"}\n";
    struct tg_policy p, q;
    struct tg_sb err = {0}, d1 = {0}, d2 = {0};
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), 0);
    assert_string_equal(p.levels[0].label, "~x\ny\"z");
    tg_policy_dump(&p, &d1);
    assert_non_null(strstr(tg_sb_str(&d1), "{name: plain-name, nodeLabel: example.com/rack}"));
    if (tg_policy_parse(d1.s, d1.len, "dump", &q, &err))
        print_error("%s\n%s", tg_sb_str(&d1), tg_sb_str(&err));
    assert_int_equal(tg_policy_parse(d1.s, d1.len, "dump", &q, &err), 0);
    tg_policy_dump(&q, &d2);
    assert_string_equal(tg_sb_str(&d1), tg_sb_str(&d2));
    assert_string_equal(q.scheduler_name, "true");
    assert_string_equal(q.levels[0].name, "a b: #c");
    assert_string_equal(q.levels[0].label, "~x\ny\"z");
    assert_string_equal(q.levels[1].name, "12");
    assert_string_equal(q.levels[1].label, "null");
    assert_string_equal(q.numa_label, "x\\y\t");
    tg_sb_free(&d1);
    tg_sb_free(&d2);
    tg_sb_free(&err);
}

static void expect_error(const char *yaml, const char *needle)
{
    struct tg_policy p;
    struct tg_sb err = {0};
    assert_int_equal(tg_policy_parse(yaml, strlen(yaml), "cfg.yaml", &p, &err), TG_EPARSE);
    if (!strstr(tg_sb_str(&err), needle))
        print_error("want \"%s\" in:\n%s\n", needle, tg_sb_str(&err));
    assert_non_null(strstr(tg_sb_str(&err), needle));
    for (const char *l = tg_sb_str(&err); *l; l = strchr(l, '\n') + 1)
        assert_memory_equal(l, "cfg.yaml", 8); /* one line per problem, each with its origin */
    tg_sb_free(&err);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("placement:\n  strategy: packed\n",
                 "cfg.yaml:2: placement.strategy: must be one of pack, spread (got \"packed\")");
    expect_error("api:\n  qps: 10\n  burst: fast\n", "cfg.yaml:3: api.burst: must be a whole number");
    expect_error("scoring: {toplogy: 5}\n", "cfg.yaml:1: scoring.toplogy: unknown key");
    expect_error("colour: blue\n", "cfg.yaml:1: colour: unknown key");
    expect_error("topology:\n  levels:\n    - {name: rack}\n", "cfg.yaml:3: topology.levels[0]: needs a name and a nodeLabel");
    expect_error("topology:\n  levels:\n    - {name: a, nodeLabel: x}\n    - {name: a, nodeLabel: y}\n",
                 "level name \"a\" is used twice");
    expect_error("placement: {defaultPreferred: pod}\n", "placement.defaultPreferred: \"pod\" is not a level");
    expect_error("gang: {scheduleTimeoutSeconds: -1}\n", "gang.scheduleTimeoutSeconds: must be a whole number from 1");
    expect_error("a: [\n", "cfg.yaml:");
    /* topology as a list: its items have no key (strcmp(NULL) crashed; found by fuzzing) */
    expect_error("topology:\n  - {name: a, nodeLabel: x}\n", "cfg.yaml:2: topology: must be a map");
    expect_error("topology: 7\n", "cfg.yaml:1: topology: must be a map");
    /* a line break inside a key or a level name stays inside its one problem line
     * (it began lines without an origin; found by fuzzing) */
    expect_error("\"colour\\nof\\tit\": blue\n", "cfg.yaml:1: colour\\nof\\tit: unknown key");
    expect_error("topology:\n  levels: [{name: \"z\\x01\", nodeLabel: z}]\n"
                 "placement: {defaultPreferred: \"q\\nr\"}\n",
                 "cfg.yaml: placement.defaultPreferred: \"q\\nr\" is not a level (z\\x01)");
    expect_error("api: {qps: 100, burst: 10}\n", "api.burst: must be at least api.qps");
    /* beyond int64 and not a number: refused before any conversion (UB; found by fuzzing) */
    expect_error("api: {burst: 1e94}\n", "cfg.yaml:1: api.burst: must be a whole number");
    expect_error("api: {burst: .nan}\n", "cfg.yaml:1: api.burst: must be a whole number");
    expect_error("gang: {bindRetries: -1e300}\n", "gang.bindRetries: must be a whole number");
    expect_error("queues: {defaultQueue: Team_A}\n",
                 "cfg.yaml: queues.defaultQueue: \"Team_A\" is not a Queue name");
    expect_error("queues: {defaultQueue: \"\"}\n", "queues.defaultQueue: \"\" is not a Queue name");
    expect_error("queues: {usageHalfLifeSeconds: -5}\n",
                 "cfg.yaml:1: queues.usageHalfLifeSeconds: must be a whole number from 0 to 31536000");
    expect_error("preemption: {reclaimMinRuntimeSeconds: 10m}\n",
                 "cfg.yaml:1: preemption.reclaimMinRuntimeSeconds: must be a whole number from 0 to 31536000");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_dump_quotes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
