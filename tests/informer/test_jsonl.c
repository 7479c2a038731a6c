/* Unit tests for the newline-delimited JSON splitter (informer/jsonl.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "informer/jsonl.h"
#include "util/err.h"

struct got {
    char *lines[64];
    size_t lens[64];
    int n;
    int stop_at;
};

static int collect(void *ud, const char *line, size_t len)
{
    struct got *g = ud;
    assert_true(g->n < 64);
    g->lines[g->n] = malloc(len + 1);
    memcpy(g->lines[g->n], line, len);
    g->lines[g->n][len] = 0;
    g->lens[g->n] = len;
    g->n++;
    return g->stop_at && g->n == g->stop_at ? 7 : 0;
}

static void got_free(struct got *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->lines[i]);
}

static void several_lines_in_one_read(void **s)
{
    (void)s;
    struct tg_jsonl j = {0};
    struct got g = {0};
    const char *d = "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n";
    assert_int_equal(tg_jsonl_feed(&j, d, strlen(d), collect, &g), 0);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.lines[0], "{\"a\":1}");
    assert_string_equal(g.lines[1], "{\"b\":2}");
    assert_string_equal(g.lines[2], "{\"c\":3}");
    assert_int_equal(j.len, 0);
    got_free(&g);
    tg_jsonl_free(&j);
}

static void line_split_across_reads(void **s)
{
    (void)s;
    struct tg_jsonl j = {0};
    struct got g = {0};
    const char *d = "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"DELETED\"}\n";
    /* every split point, byte by byte */
    for (size_t i = 0; i < strlen(d); i++)
        assert_int_equal(tg_jsonl_feed(&j, d + i, 1, collect, &g), 0);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.lines[0], "{\"type\":\"ADDED\",\"object\":{}}");
    assert_string_equal(g.lines[1], "{\"type\":\"DELETED\"}");
    got_free(&g);
    /* a tail, then a chunk finishing it and holding another line and a tail */
    struct got g2 = {0};
    assert_int_equal(tg_jsonl_feed(&j, "{\"x\":", 5, collect, &g2), 0);
    assert_int_equal(g2.n, 0);
    const char *rest = "1}\n{\"y\":2}\n{\"z\"";
    assert_int_equal(tg_jsonl_feed(&j, rest, strlen(rest), collect, &g2), 0);
    assert_int_equal(g2.n, 2);
    assert_string_equal(g2.lines[0], "{\"x\":1}");
    assert_string_equal(g2.lines[1], "{\"y\":2}");
    assert_int_equal(j.len, 4);
    tg_jsonl_reset(&j);
    assert_int_equal(j.len, 0);
    got_free(&g2);
    tg_jsonl_free(&j);
}

static void very_large_object(void **s)
{
    (void)s;
    size_t n = 32u << 20;     /* 32 MiB line in 16 KiB reads */
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\n';
    struct tg_jsonl j = {0};
    struct got g = {0};
    for (size_t off = 0; off < n + 1; off += 16384) {
        size_t len = n + 1 - off < 16384 ? n + 1 - off : 16384;
        assert_int_equal(tg_jsonl_feed(&j, big + off, len, collect, &g), 0);
    }
    assert_int_equal(g.n, 1);
    assert_int_equal(g.lens[0], n);
    assert_memory_equal(g.lines[0], big, n);
    got_free(&g);
    tg_jsonl_free(&j);
    free(big);
}

static void line_limit_and_stop(void **s)
{
    (void)s;
    struct tg_jsonl j = {.max_line = 8};
    struct got g = {0};
    assert_int_equal(tg_jsonl_feed(&j, "0123456789", 10, collect, &g), TG_ERANGE);
    tg_jsonl_free(&j);
    struct tg_jsonl k = {0};
    struct got h = {.stop_at = 2};
    assert_int_equal(tg_jsonl_feed(&k, "a\nb\nc\n", 6, collect, &h), 7);
    assert_int_equal(h.n, 2);
    got_free(&h);
    got_free(&g);
    tg_jsonl_free(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(several_lines_in_one_read),
        cmocka_unit_test(line_split_across_reads),
        cmocka_unit_test(very_large_object),
        cmocka_unit_test(line_limit_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
