/* Shared helpers for the agent tests: test data paths from
 * $TOPOGANG_TESTDATA (set by tests/meson.build), never absolute paths. */
#ifndef TG_TESTS_AGENT_HELPERS_H
#define TG_TESTS_AGENT_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
