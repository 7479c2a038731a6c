/* The topology annotation decoder (model/topology.h: tg_topo_decode) on any
 * bytes. A refused annotation leaves the struct zeroed and says why. An
 * accepted one must round-trip: its encoding decodes again and encodes to the
 * same text, and a node already carrying that annotation and its labels
 * needs no patch. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "model/topology.h"
#include "util/err.h"
#include "util/strbuf.h"

static struct tg_topology t, back;     /* large: kept off the stack */
static const struct tg_topology zero;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *why = NULL;
    memset(&t, 0xa5, sizeof t);         /* garbage the decoder must overwrite */
    int rc = tg_topo_decode((const char *)data, size, &t, &why);
    if (rc) {
        fz_check(rc == TG_EPARSE || rc == TG_ERANGE, "tg_topo_decode returned %d", rc);
        fz_check(why && *why, "refused without a reason");
        fz_check(!memcmp(&t, &zero, sizeof t), "refused but not zeroed (%s)", why);
        return 0;
    }
    struct tg_sb a = {0}, b = {0}, patch = {0};
    fz_check(tg_topo_encode(&t, &a) == 0, "an accepted topology does not encode");
    rc = tg_topo_decode(a.s, a.len, &back, &why);
    fz_check(rc == 0, "own encoding refused (%s): %s", why, tg_sb_str(&a));
    fz_check(tg_topo_encode(&back, &b) == 0, "re-encoding failed");
    fz_check(a.len == b.len && !memcmp(a.s, b.s, a.len), "encoding not stable:\n%s\n%s",
             tg_sb_str(&a), tg_sb_str(&b));
    char val[TG_TOPO_NLABELS][16];
    const char *cur[TG_TOPO_NLABELS];
    tg_topo_labels(&t, val);
    for (int i = 0; i < TG_TOPO_NLABELS; i++)
        cur[i] = val[i];
    fz_check(!tg_topo_needs_patch(&t, tg_sb_str(&a), cur), "needs a patch to what it already is");
    fz_check(tg_topo_patch_body(&t, tg_sb_str(&a), &patch) == 0, "patch body failed");
    for (uint32_t i = 0; i < t.nnuma; i++)
        fz_check(tg_topo_numa_index(&t, t.numa[i].id) == (int)i, "NUMA id %d not at %u",
                 t.numa[i].id, i);
    tg_sb_free(&a);
    tg_sb_free(&b);
    tg_sb_free(&patch);
    return 0;
}
