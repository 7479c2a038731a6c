/* The lean JSON parse (util/jsonlean.h) against cJSON in full (issue 21):
 * - real Pod watch events (tests/fixtures/pods: kube-apiserver's, with
 *   managedFields, kubelet status, init and sidecar containers, a Job's
 *   pods) give the tree cJSON gives less the Pod's unread paths, and
 *   decode to the same pod (tg_pod_dump), with and without TG_DECODE_SPEC,
 *   with the same diagnostics;
 * - the same streams through the reflector both ways leave the same store
 *   and call the same handlers in the same order;
 * - texts that are not strict JSON go to cJSON, whose verdict stands; strict
 *   ones with every escape and number form give cJSON's tree;
 * - tg_sb_json_str's output reads back as the string given. */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "informer/kinds.h"
#include "informer/reflector.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/jsonlean.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/yamljson.h"
#include "fuzz/podsame.h"

static char *slurp(const char *rel)
{
    const char *src = getenv("TOPOGANG_SRC");
    char path[4096], *text = NULL;
    size_t len;
    struct tg_sb err = {0};
    snprintf(path, sizeof path, "%s/%s", src ? src : ".", rel);
    if (tg_read_file(path, &text, &len, &err))
        fail_msg("%s", tg_sb_str(&err));
    return text;
}

/* Decodes obj both ways; the results, messages and pods must be equal. */
static void same_pod(const cJSON *lean_obj, const cJSON *full_obj, unsigned flags)
{
    char *d = podsame_diff(lean_obj, full_obj, flags);
    if (d)
        fail_msg("lean against full: %s", d);
}

static void fixture_events_decode_the_same(void **state)
{
    (void)state;
    static const char *const files[] = {"tests/fixtures/pods/pending.jsonl",
                                        "tests/fixtures/pods/bound.jsonl"};
    struct tg_jlean j;
    assert_int_equal(tg_jlean_init(&j, "object", tg_pod_unread), 0);
    int events = 0, left_out = 0, with_status = 0;
    for (int fi = 0; fi < 2; fi++) {
        char *text = slurp(files[fi]);
        for (char *l = text, *e; (e = strchr(l, '\n')); l = e + 1) {
            size_t n = (size_t)(e - l);
            cJSON *full = cJSON_ParseWithLength(l, n);
            assert_non_null(full);
            const cJSON *lean;
            uint64_t was = j.lean;
            assert_int_equal(tg_jlean_parse(&j, l, n, &lean), 0);
            assert_int_equal(j.lean, was + 1); /* the lean path, not the fallback */
            char where[512];
            int rc = tg_jlean_compare(&j, lean, full, where, sizeof where);
            if (rc < 0)
                fail_msg("%s line %d: trees differ at %s", files[fi], events + 1, where);
            left_out += rc;
            const cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(full, "object"), "status");
            with_status += cJSON_GetObjectItem(st, "containerStatuses") != NULL;
            same_pod(cJSON_GetObjectItem(lean, "object"), cJSON_GetObjectItem(full, "object"), 0);
            same_pod(cJSON_GetObjectItem(lean, "object"), cJSON_GetObjectItem(full, "object"),
                     TG_DECODE_SPEC);
            cJSON_Delete(full);
            events++;
        }
        free(text);
    }
    assert_int_equal(events, 63);   /* the fixture's: 26 pending, 37 bound */
    assert_true(with_status >= 10); /* kubelet status, left out in part */
    assert_true(left_out >= 63);    /* every event has its managedFields left out */
    assert_int_equal(j.fallbacks, 0);
    tg_jlean_free(&j);
}

/* ---- the reflector both ways ------------------------------------------------ */

struct calls {
    struct tg_sb log;
};

static void c_add(void *ud, const void *o)
{
    char *d = tg_pod_dump(o);
    tg_sb_printf(&((struct calls *)ud)->log, "add %s", d);
    free(d);
}
static void c_upd(void *ud, const void *old, const void *o)
{
    char *d = tg_pod_dump(o);
    tg_sb_printf(&((struct calls *)ud)->log, "update %s from %s\n%s",
                 ((const struct tg_pod *)old)->key, ((const struct tg_pod *)old)->rv, d);
    free(d);
}
static void c_del(void *ud, const void *o)
{
    tg_sb_printf(&((struct calls *)ud)->log, "delete %s\n", ((const struct tg_pod *)o)->key);
}

static void feed(const struct tg_kind *kind, int full, const char *text, struct calls *c,
                 struct tg_reflector_stats *st)
{
    struct tg_reflector_opts o = {.kind = kind, .path = "/api/v1/pods", .full_json = full,
                                  .h = {.on_add = c_add, .on_update = c_upd, .on_delete = c_del,
                                        .ud = c}};
    struct tg_reflector *r = NULL;
    assert_int_equal(tg__reflector_new_offline(&o, &r), 0);
    assert_int_equal(tg__reflector_feed_watch(r, text, strlen(text)), 0);
    *st = *tg_reflector_stats(r);
    tg_sb_printf(&c->log, "store %u rv %s\n", tg_reflector_store(r)->len, tg_reflector_rv(r));
    tg__reflector_free_offline(&r);
}

static void reflector_same_both_ways(void **state)
{
    (void)state;
    static const char *const files[] = {"tests/fixtures/pods/pending.jsonl",
                                        "tests/fixtures/pods/bound.jsonl"};
    const struct tg_kind *kinds[] = {&tg_kind_pod_spec, &tg_kind_pod};
    for (int fi = 0; fi < 2; fi++) {
        char *text = slurp(files[fi]);
        struct calls lean = {{0}}, full = {{0}};
        struct tg_reflector_stats sl, sf;
        feed(kinds[fi], 0, text, &lean, &sl);
        feed(kinds[fi], 1, text, &full, &sf);
        if (strcmp(tg_sb_str(&lean.log), tg_sb_str(&full.log))) {
            const char *a = tg_sb_str(&lean.log), *b = tg_sb_str(&full.log);
            size_t i = 0;
            while (a[i] == b[i])
                i++;
            fail_msg("%s: handler calls differ at byte %zu:\nlean: %.300s\nfull: %.300s",
                     files[fi], i, a + (i > 100 ? i - 100 : 0), b + (i > 100 ? i - 100 : 0));
        }
        assert_true(sl.adds > 0 && sl.deletes > 0);
        assert_int_equal(sl.adds, sf.adds);
        assert_int_equal(sl.updates, sf.updates);
        assert_int_equal(sl.deletes, sf.deletes);
        assert_int_equal(sl.lean_fallbacks, 0);
        tg_sb_free(&lean.log);
        tg_sb_free(&full.log);
        free(text);
    }
}

/* ---- strict texts and the others ------------------------------------------------ */

/* text parsed both ways: the same verdict and tree; lean_expected: the lean
 * scan takes it (else the fallback does). */
static void both(const char *text, size_t len, int lean_expected)
{
    static const char *const none[] = {NULL};
    struct tg_jlean j;
    assert_int_equal(tg_jlean_init(&j, "", none), 0);
    cJSON *full = cJSON_ParseWithLength(text, len);
    const cJSON *lean;
    int rc = tg_jlean_parse(&j, text, len, &lean);
    if (!full) {
        assert_int_equal(rc, TG_EPARSE);
        assert_null(lean);
    } else {
        char where[512];
        assert_int_equal(rc, 0);
        if (tg_jlean_compare(&j, lean, full, where, sizeof where) != 0)
            fail_msg("%s: trees differ at %s", text, where);
    }
    if ((int)j.lean != lean_expected)
        fail_msg("%s: lean %llu, expected %d", text, (unsigned long long)j.lean, lean_expected);
    cJSON_Delete(full);
    tg_jlean_free(&j);
}

static void strict_texts_as_cjson(void **state)
{
    (void)state;
    static const char *const strict[] = {
        "{\"a\":\"caf\\u00e9 \\ud83d\\ude00 \\u20ac \\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t\"}",
        "[0, -0, 1.5, -2.25e-3, 1E+2, 3e2, 12345678901234567890, 1e400, -1e400, 2147483647, "
        "2147483648, -2147483649]",
        "{\"\":{}, \"x\":[], \"y\":[[],{}], \"t\":true, \"f\":false, \"n\":null}",
        " \t\r\n{\"k\" : [ 1 , \"two\" , { \"three\" : 3 } ] } \n",
        "\"just a string\"", "42", "{\"dup\":1,\"dup\":2}", "{\"raw\":\"\xc3\xa9\xff\x7f\"}",
    };
    for (size_t i = 0; i < sizeof strict / sizeof *strict; i++)
        both(strict[i], strlen(strict[i]), 1);
    static const char *const other[] = {
        "{\"a\":01}", "{\"a\":+1}", "{\"a\":.5}", "{\"a\":1.}", "{\"a\":1e}", "{\"a\":-}",
        "{\"a\":1}garbage", "{\"a\":\"\\u0000\"}", "{\"a\":\"\\u12G4\"}", "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\udc00\"}", "{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\t\"}",
        "{\"a\":nul}", "{\"a\":tru}", "{\"a\":True}", "{\"a\":[1,]}", "{\"a\":1,}", "{,}",
        "\xef\xbb\xbf{\"bom\":1}", "{\"a\":1\x01}", "{'a':1}", "{\"a\" 1}", "", " ", "{",
        "{\"a\":\"unterminated", "[1 2]", "{\"a\":NaN}", "{\"a\":Infinity}",
        "{\"a\":1234567890123456789012345678901234567890123456789012345678901234}",
    };
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        both(other[i], strlen(other[i]), 0);
    /* a NUL inside, and nesting past the lean scan's 256 levels (cJSON takes 1000) */
    both("{\"a\":\"x\0y\"}", 11, 0);
    char deep[2 * 300 + 1];
    memset(deep, '[', 300);
    memset(deep + 300, ']', 300);
    deep[600] = 0;
    both(deep, 600, 0);
    memset(deep, '[', 256);
    memset(deep + 256, ']', 256);
    both(deep, 512, 1);
}

static void unread_paths_left_out(void **state)
{
    (void)state;
    static const char *const paths[] = {"a.skip", "list.*.drop", "b", NULL};
    struct tg_jlean j;
    assert_int_equal(tg_jlean_init(&j, "object", paths), 0);
    const char *t = "{\"type\":\"ADDED\",\"b\":1,\"object\":{\"a\":{\"skip\":{\"deep\":[1,2]},\"keep\":\"k\"},"
                    "\"b\":[true],\"list\":[{\"drop\":1,\"x\":2},{\"x\":3,\"drop\":{}}],"
                    "\"a\":{\"skip\":0}}}";
    const cJSON *root;
    assert_int_equal(tg_jlean_parse(&j, t, strlen(t), &root), 0);
    assert_int_equal(j.lean, 1);
    char *out = cJSON_PrintUnformatted(root);
    assert_string_equal(out, "{\"type\":\"ADDED\",\"b\":1,\"object\":{\"a\":{\"keep\":\"k\"},"
                             "\"list\":[{\"x\":2},{\"x\":3}],\"a\":{}}}");
    cJSON_free(out);
    /* left out, but still checked: a text not strict there goes to cJSON,
     * which refuses this one and takes the other (in full) */
    const char *bad = "{\"object\":{\"b\":[1 2]}}", *lax = "{\"object\":{\"b\":[01]}}";
    assert_int_equal(tg_jlean_parse(&j, bad, strlen(bad), &root), TG_EPARSE);
    assert_null(root);
    assert_int_equal(tg_jlean_parse(&j, lax, strlen(lax), &root), 0);
    assert_int_equal(j.fallbacks, 2);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "object"), "b"));
    tg_jlean_free(&j);
    static const char *const empty[] = {"", NULL};
    assert_int_equal(tg_jlean_init(&j, "", empty), TG_EINVAL);
}

/* tg_sb_json_str (util/strbuf.c, the writer of every request body's
 * strings) copies runs that need no escape at once: every byte 1-255 alone,
 * in runs and beside each escape, read back by cJSON, is the string given. */
static void json_str_round_trip(void **s)
{
    (void)s;
    char in[600];
    for (int i = 1; i < 256; i++) {
        for (int form = 0; form < 4; form++) {
            size_t n = 0;
            const char *around[] = {"", "abc", "a\"b\\c\n", "\x01x\x1fy\t"};
            n += (size_t)snprintf(in + n, sizeof in - n, "%s", around[form]);
            for (int k = 0; k < 1 + form; k++)
                in[n++] = (char)i;
            n += (size_t)snprintf(in + n, sizeof in - n, "%s", around[3 - form]);
            in[n] = 0;
            struct tg_sb b = {0};
            tg_sb_json_str(&b, in);
            cJSON *j = cJSON_Parse(tg_sb_str(&b));
            if (!j || !cJSON_IsString(j) || strcmp(j->valuestring, in) != 0)
                fail_msg("byte %d, form %d: %s does not read back", i, form, tg_sb_str(&b));
            cJSON_Delete(j);
            tg_sb_free(&b);
        }
    }
}

int main(void)
{
    tg_log_set_level(TG_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixture_events_decode_the_same),
        cmocka_unit_test(reflector_same_both_ways),
        cmocka_unit_test(strict_texts_as_cjson),
        cmocka_unit_test(unread_paths_left_out),
        cmocka_unit_test(json_str_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
