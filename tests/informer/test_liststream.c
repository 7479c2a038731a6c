/* Unit tests for the streaming LIST splitter (informer/liststream.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "informer/liststream.h"
#include "util/err.h"

struct got {
    int nitems, nmeta;
    char items[8][128];
    char meta[128];
};

static int on_item(void *ud, const char *j, size_t n)
{
    struct got *g = ud;
    assert_true(g->nitems < 8 && n < 128);
    memcpy(g->items[g->nitems], j, n);
    g->items[g->nitems++][n] = 0;
    return 0;
}

static int on_meta(void *ud, const char *j, size_t n)
{
    struct got *g = ud;
    assert_true(n < 128);
    memcpy(g->meta, j, n);
    g->meta[n] = 0;
    g->nmeta++;
    return 0;
}

static const char body[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"42\","
    "\"continue\":\"abc\"},\"items\":[{\"metadata\":{\"name\":\"a\"},\"x\":\"}]{[\\\"\"},\n"
    " {\"metadata\":{\"name\":\"b\",\"labels\":{\"items\":\"[\"}},\"list\":[1,[2],{}]} ,"
    "{\"metadata\":{\"name\":\"c\\\\\"}}]}\n";

static void check(const struct got *g)
{
    assert_int_equal(g->nmeta, 1);
    assert_string_equal(g->meta, "{\"resourceVersion\":\"42\",\"continue\":\"abc\"}");
    assert_int_equal(g->nitems, 3);
    assert_string_equal(g->items[0], "{\"metadata\":{\"name\":\"a\"},\"x\":\"}]{[\\\"\"}");
    assert_string_equal(g->items[1], "{\"metadata\":{\"name\":\"b\",\"labels\":{\"items\":\"[\"}},\"list\":[1,[2],{}]}");
    assert_string_equal(g->items[2], "{\"metadata\":{\"name\":\"c\\\\\"}}");
}

static void whole_body(void **s)
{
    (void)s;
    struct tg_liststream ls = {0};
    struct got g = {0};
    tg_liststream_reset(&ls, on_item, on_meta, &g);
    assert_int_equal(tg_liststream_feed(&ls, body, strlen(body)), 0);
    assert_int_equal(tg_liststream_finish(&ls), 0);
    check(&g);
    tg_liststream_free(&ls);
}

static void every_split_point(void **s)
{
    (void)s;
    size_t n = strlen(body);
    struct tg_liststream ls = {0};
    for (size_t cut = 1; cut < n; cut++) {
        struct got g = {0};
        tg_liststream_reset(&ls, on_item, on_meta, &g);
        assert_int_equal(tg_liststream_feed(&ls, body, cut), 0);
        assert_int_equal(tg_liststream_feed(&ls, body + cut, n - cut), 0);
        assert_int_equal(tg_liststream_finish(&ls), 0);
        check(&g);
    }
    /* byte by byte: only the current item is held */
    struct got g = {0};
    tg_liststream_reset(&ls, on_item, on_meta, &g);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(tg_liststream_feed(&ls, body + i, 1), 0);
        assert_true(ls.len < 80);
    }
    check(&g);
    tg_liststream_free(&ls);
}

static void truncated_and_garbage(void **s)
{
    (void)s;
    struct tg_liststream ls = {0};
    struct got g = {0};
    tg_liststream_reset(&ls, on_item, on_meta, &g);
    /* nothing yet, no buffer yet (memcpy to NULL + 0 was UB; found by fuzzing) */
    assert_int_equal(tg_liststream_feed(&ls, "", 0), 0);
    assert_int_equal(tg_liststream_finish(&ls), TG_EPARSE);
    assert_int_equal(tg_liststream_feed(&ls, body, 120), 0);
    assert_int_equal(tg_liststream_finish(&ls), TG_EPARSE);
    struct got h = {0};
    tg_liststream_reset(&ls, on_item, on_meta, &h);
    assert_int_equal(tg_liststream_feed(&ls, "{\"items\":[]} x", 14), TG_EPARSE);
    tg_liststream_reset(&ls, on_item, on_meta, &h);
    assert_int_equal(tg_liststream_feed(&ls, "]", 1), TG_EPARSE);
    tg_liststream_reset(&ls, on_item, on_meta, &h);
    assert_int_equal(tg_liststream_feed(&ls, "[1]", 3), TG_EPARSE);
    tg_liststream_free(&ls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whole_body),
        cmocka_unit_test(every_split_point),
        cmocka_unit_test(truncated_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
