/* Kubernetes quantities parsed exactly, every suffix, and bad ones refused. */
#include "testutil.h"
#include "model/quantity.h"
#include "util/err.h"

#include <string.h>

static void check(const char *s, int milli, int64_t want)
{
    int64_t v = -1;
    int rc = tg_quantity_parse(s, strlen(s), milli, &v);
    if (rc || v != want)
        print_error("quantity \"%s\" milli=%d: rc=%d got %lld want %lld\n", s, milli, rc,
                    (long long)v, (long long)want);
    assert_int_equal(rc, 0);
    assert_true(v == want);
}

static void bad(const char *s, int want_rc)
{
    int64_t v;
    assert_int_equal(tg_quantity_parse(s, strlen(s), 0, &v), want_rc);
}

static void test_suffixes(void **state)
{
    (void)state;
    check("500m", 1, 500);
    check("2", 1, 2000);
    check("0.1", 1, 100);
    check("1.5", 1, 1500);
    check("2e3", 0, 2000);
    check("2E3", 0, 2000);
    check("1e-3", 1, 1);
    check("128974848", 0, 128974848);
    check("129M", 0, 129000000);
    check("123Mi", 0, 128974848);
    check("1.5Gi", 0, 1610612736);
    check("1Ki", 0, 1024);
    check("1Ti", 0, 1099511627776LL);
    check("1Pi", 0, 1125899906842624LL);
    check("1Ei", 0, 1152921504606846976LL);
    check("1k", 0, 1000);
    check("1G", 0, 1000000000);
    check("1T", 0, 1000000000000LL);
    check("1P", 0, 1000000000000000LL);
    check("1E", 0, 1000000000000000000LL);
    check("100n", 1, 1);      /* rounds up, as MilliValue does */
    check("1u", 0, 1);
    check("1m", 0, 1);        /* 1m of memory is one byte, rounded up */
    check("0", 0, 0);
    check("+5", 0, 5);
    check("0.5Gi", 0, 536870912);
    check(".5", 1, 500);
    check("8", 0, 8);
}

static void test_rejects(void **state)
{
    (void)state;
    bad("", TG_EPARSE);
    bad("abc", TG_EPARSE);
    bad("1Gb", TG_EPARSE);
    bad("1.2.3", TG_EPARSE);
    bad("1e", TG_EPARSE);
    bad("Gi", TG_EPARSE);
    bad("-1", TG_EINVAL);
    bad("-500m", TG_EINVAL);
    bad("10Ei", TG_ERANGE);
    bad("99999999999999999999", TG_ERANGE);
    bad("1e100", TG_ERANGE);
    /* A NUL inside s[0..n) is no suffix (strchr would find the terminator:
     * an index past the suffix table; found by fuzz/fuzz_quantity). */
    int64_t v;
    assert_int_equal(tg_quantity_parse("3\0", 2, 0, &v), TG_EPARSE);
    assert_int_equal(tg_quantity_parse("3\0", 2, 1, &v), TG_EPARSE);
    assert_int_equal(tg_quantity_parse("1\0i", 3, 0, &v), TG_EPARSE);
}

static void test_format(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(tg_quantity_format(500, 1, b, sizeof b), "500m");
    assert_string_equal(tg_quantity_format(8000, 1, b, sizeof b), "8");
    assert_string_equal(tg_quantity_format(1073741824, 0, b, sizeof b), "1Gi");
    assert_string_equal(tg_quantity_format(8, 0, b, sizeof b), "8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suffixes),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
