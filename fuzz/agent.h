/* What fuzz_nvsmi and fuzz_podres share: the agent publishes the annotation
 * of the topology it built (agent/publish.c), and the scheduler reads it
 * back with tg_topo_decode. */
#ifndef TG_FUZZ_AGENT_H
#define TG_FUZZ_AGENT_H

#include <string.h>

#include "fuzz/fuzz.h"
#include "model/topology.h"
#include "util/err.h"
#include "util/strbuf.h"

/* t's annotation is refused by the encoder (the agent then publishes
 * nothing) or decoded by the scheduler and re-encoded to the same text. */
static inline void fz_check_published(const struct tg_topology *t)
{
    static struct tg_topology back;     /* large: kept off the stack */
    struct tg_sb a = {0}, b = {0};
    const char *why = NULL;
    int rc = tg_topo_encode(t, &a);
    fz_check(rc == 0 || rc == TG_EINVAL || rc == TG_ENOMEM, "tg_topo_encode returned %d", rc);
    if (rc == 0) {
        rc = tg_topo_decode(a.s, a.len, &back, &why);
        fz_check(rc == 0, "the scheduler refuses the agent's annotation (%s): %s", why,
                 tg_sb_str(&a));
        fz_check(tg_topo_encode(&back, &b) == 0 && a.len == b.len && !memcmp(a.s, b.s, a.len),
                 "annotation not stable:\n%s\n%s", tg_sb_str(&a), tg_sb_str(&b));
    }
    tg_sb_free(&a);
    tg_sb_free(&b);
}

#endif
