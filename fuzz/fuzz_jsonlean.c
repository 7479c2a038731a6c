/* The lean JSON parse (util/jsonlean.h) against cJSON in full, on the same
 * bytes: a Pod watch line (the seeds are kube-apiserver's, from
 * tests/fixtures/pods). Fails on any difference:
 * - the verdict: the lean path takes a text exactly when cJSON does;
 * - the tree: the lean one is cJSON's less the Pod's unread paths
 *   (tg_jlean_compare);
 * - the Pod decoded from "object" (with and without TG_DECODE_SPEC): the
 *   same result, the same diagnostics, the same pod (tg_pod_dump);
 * - the reflector's handling of the input as a watch stream, a lean one
 *   against one with full_json: the same verdict, counters and handler
 *   calls (each with the pod's dump). */
#include "fuzz/fuzz.h"
#include "fuzz/podsame.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "informer/kinds.h"
#include "informer/reflector.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/jsonlean.h"
#include "util/log.h"
#include "util/strbuf.h"

static void same_pod(const cJSON *lean, const cJSON *full, unsigned flags)
{
    char *d = podsame_diff(lean, full, flags);
    fz_check(!d, "lean against full: %s", d);
}

/* ---- the reflector both ways ------------------------------------------------ */

static void on_add(void *ud, const void *o)
{
    char *d = tg_pod_dump(o);
    tg_sb_printf(ud, "add %s", d ? d : "?");
    free(d);
}
static void on_update(void *ud, const void *old, const void *o)
{
    char *d = tg_pod_dump(o);
    tg_sb_printf(ud, "update %s\n%s", ((const struct tg_pod *)old)->key, d ? d : "?");
    free(d);
}
static void on_delete(void *ud, const void *o)
{
    tg_sb_printf(ud, "delete %s\n", ((const struct tg_pod *)o)->key);
}

static int feed(const uint8_t *data, size_t size, int full, struct tg_sb *log,
                struct tg_reflector_stats *st)
{
    struct tg_reflector_opts o = {.kind = &tg_kind_pod_spec, .path = "/fuzz", .full_json = full,
                                  .h = {.on_add = on_add, .on_update = on_update,
                                        .on_delete = on_delete, .ud = log}};
    struct tg_reflector *r = NULL;
    fz_check(tg__reflector_new_offline(&o, &r) == 0, "reflector not made");
    int rc = tg__reflector_feed_watch(r, (const char *)data, size);
    *st = *tg_reflector_stats(r);
    tg_sb_printf(log, "store %u rv %s\n", tg_reflector_store(r)->len, tg_reflector_rv(r));
    tg__reflector_free_offline(&r);
    return rc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_log_set_level(TG_LOG_ERROR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tg_jlean j;
    fz_check(tg_jlean_init(&j, "object", tg_pod_unread) == 0, "unread paths refused");
    cJSON *full = cJSON_ParseWithLength((const char *)data, size);
    const cJSON *lean = NULL;
    int rc = tg_jlean_parse(&j, (const char *)data, size, &lean);
    fz_check(rc != TG_ENOMEM, "out of memory");
    fz_check(!full == (rc == TG_EPARSE), "verdicts differ: cJSON %s, lean %s",
             full ? "takes it" : "refuses it", tg_err_name(rc));
    if (full) {
        char where[512];
        /* a fallback's tree is cJSON's own (compared as a whole below) */
        fz_check(j.fallbacks ? lean == j.full
                             : tg_jlean_compare(&j, lean, full, where, sizeof where) >= 0,
                 "trees differ at %s", j.fallbacks ? "(fallback)" : where);
        const cJSON *lo = cJSON_GetObjectItemCaseSensitive(lean, "object");
        const cJSON *fo = cJSON_GetObjectItemCaseSensitive(full, "object");
        if (lo && fo) {
            same_pod(lo, fo, 0);
            same_pod(lo, fo, TG_DECODE_SPEC);
        }
    }
    cJSON_Delete(full);
    tg_jlean_free(&j);

    struct tg_sb ll = {0}, lf = {0};
    struct tg_reflector_stats sl, sf;
    int a = feed(data, size, 0, &ll, &sl), b = feed(data, size, 1, &lf, &sf);
    if (a != TG_ENOMEM && b != TG_ENOMEM && !ll.oom && !lf.oom) {
        fz_check(a == b, "reflector: lean %s, full %s", tg_err_name(a), tg_err_name(b));
        fz_check(!strcmp(tg_sb_str(&ll), tg_sb_str(&lf)), "handler calls differ:\nlean:\n%s\nfull:\n%s",
                 tg_sb_str(&ll), tg_sb_str(&lf));
        fz_check(sl.events == sf.events && sl.adds == sf.adds && sl.updates == sf.updates &&
                     sl.deletes == sf.deletes && sl.parse_errors == sf.parse_errors &&
                     sl.decode_errors == sf.decode_errors &&
                     sl.deletes_undecoded == sf.deletes_undecoded,
                 "reflector counters differ");
    }
    tg_sb_free(&ll);
    tg_sb_free(&lf);
    return 0;
}
