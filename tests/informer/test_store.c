/* Unit tests for the object store (informer/store.c) with a toy kind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "informer/store.h"
#include "util/err.h"

struct toy {
    char key[32], uid[32], rv[16];
};

static int nfreed;

static void toy_free(void *o)
{
    if (o)
        nfreed++;
    free(o);
}
static const char *toy_key(const void *o) { return ((const struct toy *)o)->key; }
static const char *toy_uid(const void *o) { return ((const struct toy *)o)->uid; }
static const char *toy_rv(const void *o) { return ((const struct toy *)o)->rv; }
static const struct tg_kind toy_kind = {"Toy", NULL, toy_free, toy_key, toy_uid, toy_rv};

static struct toy *toy(int i, int rv)
{
    struct toy *t = calloc(1, sizeof *t);
    snprintf(t->key, sizeof t->key, "ns/obj-%d", i);
    snprintf(t->uid, sizeof t->uid, "uid-%d-%d", i, rv);
    snprintf(t->rv, sizeof t->rv, "%d", rv);
    return t;
}

static void put_get_replace_take(void **s)
{
    (void)s;
    struct tg_store st;
    tg_store_init(&st, &toy_kind);
    void *old;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(tg_store_put(&st, toy(i, 1), &old), 0);
        assert_null(old);
    }
    assert_int_equal(tg_store_len(&st), 1000);
    struct toy *t = tg_store_get(&st, "ns/obj-500");
    assert_non_null(t);
    assert_string_equal(t->rv, "1");
    assert_ptr_equal(tg_store_get_uid(&st, "uid-500-1"), t);
    /* replace: same key, new uid */
    assert_int_equal(tg_store_put(&st, toy(500, 2), &old), 0);
    assert_ptr_equal(old, t);
    toy_free(old);
    assert_null(tg_store_get_uid(&st, "uid-500-1"));
    t = tg_store_get_uid(&st, "uid-500-2");
    assert_non_null(t);
    assert_string_equal(t->rv, "2");
    assert_int_equal(tg_store_len(&st), 1000);
    /* take every even one; the odd ones stay findable after the swaps */
    for (int i = 0; i < 1000; i += 2) {
        char k[32];
        snprintf(k, sizeof k, "ns/obj-%d", i);
        void *o = tg_store_take(&st, k);
        assert_non_null(o);
        toy_free(o);
        assert_null(tg_store_take(&st, k));
    }
    assert_int_equal(tg_store_len(&st), 500);
    for (int i = 1; i < 1000; i += 2) {
        char k[32], u[32];
        snprintf(k, sizeof k, "ns/obj-%d", i);
        snprintf(u, sizeof u, "uid-%d-1", i);
        t = tg_store_get(&st, k);
        assert_non_null(t);
        assert_ptr_equal(tg_store_get_uid(&st, u), t);
    }
    assert_null(tg_store_get(&st, "ns/obj-0"));
    int seen = 0;
    for (uint32_t i = 0; i < tg_store_len(&st); i++)
        seen += tg_store_at(&st, i) != NULL;
    assert_int_equal(seen, 500);
    nfreed = 0;
    tg_store_free(&st);
    assert_int_equal(nfreed, 500);
    assert_int_equal(tg_store_len(&st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_get_replace_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
