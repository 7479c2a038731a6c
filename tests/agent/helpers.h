/* Shared helpers for the agent tests: test data paths from
 * $TOPOGANG_TESTDATA (set by tests/meson.build), never absolute paths. */
#ifndef TG_TESTS_AGENT_HELPERS_H
#define TG_TESTS_AGENT_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "util/strbuf.h"

static inline const char *td_path(const char *sub, char *buf, size_t n)
{
    const char *root = getenv("TOPOGANG_TESTDATA");
    if (!root || !*root) {
        fprintf(stderr, "TOPOGANG_TESTDATA is not set (run through meson test)\n");
        abort();
    }
    snprintf(buf, n, "%s/%s", root, sub);
    return buf;
}

/* Runs a shell command, appends its stdout to out and returns
 * its exit status, or -1 when it did not exit normally or could not start. */
static inline int td_run(const char *cmd, struct tg_sb *out)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        tg_sb_putn(out, buf, n);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
