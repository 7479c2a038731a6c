/* One Pod object decoded from two trees (the lean parse's and cJSON's, of
 * the same text): what fuzz/fuzz_jsonlean.c and tests/unit/test_jsonlean.c
 * check. */
#ifndef TG_FUZZ_PODSAME_H
#define TG_FUZZ_PODSAME_H

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "model/objects.h"
#include "util/err.h"
#include "util/strbuf.h"

static void podsame_record(void *ud, int is_error, const cJSON *at, const char *what,
                           const char *field, const char *msg)
{
    (void)at;
    tg_sb_printf(ud, "%c %s %s %s\n", is_error ? 'E' : 'W', what, field, msg);
}

/* Decodes a and b with flags: NULL when the results, the diagnostics and the
 * pods (tg_pod_dump) are the same (or memory ran out), else what differs
 * (the caller frees it). */
static inline char *podsame_diff(const cJSON *a, const cJSON *b, unsigned flags)
{
    struct tg_sb ma = {0}, mb = {0}, out = {0};
    struct tg_diag da = {.report = podsame_record, .ud = &ma};
    struct tg_diag db = {.report = podsame_record, .ud = &mb};
    struct tg_pod *pa = NULL, *pb = NULL;
    int ra = tg_pod_decode(a, flags, &da, &pa), rb = tg_pod_decode(b, flags, &db, &pb);
    char *xa = pa ? tg_pod_dump(pa) : NULL, *xb = pb ? tg_pod_dump(pb) : NULL;
    if (ra == TG_ENOMEM || rb == TG_ENOMEM || ma.oom || mb.oom || (pa && !xa) || (pb && !xb))
        ; /* out of memory: nothing to compare */
    else if (ra != rb)
        tg_sb_printf(&out, "decode: %s against %s", tg_err_name(ra), tg_err_name(rb));
    else if (strcmp(tg_sb_str(&ma), tg_sb_str(&mb)))
        tg_sb_printf(&out, "diagnostics:\n%s\nagainst:\n%s", tg_sb_str(&ma), tg_sb_str(&mb));
    else if (xa && strcmp(xa, xb))
        tg_sb_printf(&out, "pods:\n%s\nagainst:\n%s", xa, xb);
    free(xa);
    free(xb);
    tg_pod_free(&pa);
    tg_pod_free(&pb);
    tg_sb_free(&ma);
    tg_sb_free(&mb);
    if (!out.len) {
        tg_sb_free(&out);
        return NULL;
    }
    return out.s;
}

#endif
