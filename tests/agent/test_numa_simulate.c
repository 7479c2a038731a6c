/* End to end through `topogang simulate` (the scheduler's own cycle): with
 * the agent's annotation on Nodes whose policy is single-numa-node, a 4-GPU
 * pod goes to the node with one domain of 4 free GPUs, not to the fuller node
 * with 2+2 that binpacking alone would choose; with no such domain left, the
 * reason names the NUMA/NVLink domain. Fixtures: tests/agent/fixtures.
 * Exits 77 (SKIP) while tg_plugin_numa is not in plugins/registry.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "helpers.h"
#include "plugins/plugin.h"
#include "util/strbuf.h"

static int simulate(const char *files, struct tg_sb *out)
{
    const char *bin = getenv("TOPOGANG_BIN"), *src = getenv("TOPOGANG_SRC");
    assert_non_null(bin);
    assert_non_null(src);
    char cmd[4096], f[8][512];
    int nf = 0;
    struct tg_sb args = {0};
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", files);
    for (char *tok = strtok(copy, " "); tok && nf < 8; tok = strtok(NULL, " "), nf++) {
        snprintf(f[nf], sizeof f[nf], "%s/tests/agent/fixtures/%s", src, tok);
        tg_sb_printf(&args, " -f '%s'", f[nf]);
    }
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 '%s' simulate -q -o json%s", bin,
             tg_sb_str(&args));
    tg_sb_free(&args);
    return td_run(cmd, out);
}

static void test_four_gpus_go_to_one_domain(void **state)
{
    (void)state;
    struct tg_sb out = {0};
    simulate("numa-two-nodes.yaml", &out);
    if (!strstr(tg_sb_str(&out), "\"pod\":\"ml/train-0\",\"node\":\"b-whole\""))
        fail_msg("train-0 not on b-whole:\n%s", tg_sb_str(&out));
    tg_sb_free(&out);
}

static void test_no_domain_left(void **state)
{
    (void)state;
    struct tg_sb out = {0};
    simulate("numa-two-nodes.yaml numa-bound-2gpu.yaml", &out);
    const char *s = tg_sb_str(&out);
    if (!strstr(s, "\"status\":\"Unschedulable\"") ||
        !strstr(s, "no single NUMA/NVLink domain holds nvidia.com/gpu"))
        fail_msg("expected Unschedulable for want of a NUMA domain:\n%s", s);
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
        cmocka_unit_test(test_four_gpus_go_to_one_domain),
        cmocka_unit_test(test_no_domain_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
