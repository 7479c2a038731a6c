/* The Lease decoder the leader elector reads the API server's replies with:
 * fields, what is required, and numbers outside int32 (read as unset, never
 * converted: found by fuzz/fuzz_lease). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "informer/api.h"
#include "util/err.h"

static int decode(const char *body, struct tg_lease *l)
{
    return tg_lease_decode(body, strlen(body), l);
}

static void test_fields(void **state)
{
    (void)state;
    struct tg_lease l;
    assert_int_equal(decode("{\"metadata\":{\"resourceVersion\":\"7\"},\"spec\":{\"holderIdentity\":"
                            "\"a\",\"leaseDurationSeconds\":15,\"leaseTransitions\":2,"
                            "\"renewTime\":\"2023-11-14T22:13:20.500000Z\"}}", &l), 0);
    assert_string_equal(l.rv, "7");
    assert_string_equal(l.holder, "a");
    assert_int_equal(l.duration_s, 15);
    assert_int_equal(l.transitions, 2);
    assert_true(l.renew_ms == 1700000000500LL);
    tg_lease_free(&l);
    assert_int_equal(decode("{\"metadata\":{},\"spec\":{}}", &l), TG_EPARSE);
    assert_int_equal(decode("{\"metadata\":{\"resourceVersion\":\"7\"}}", &l), TG_EPARSE);
    assert_int_equal(decode("[", &l), TG_EPARSE);
    assert_null(l.rv);
}

static void test_numbers_out_of_range(void **state)
{
    (void)state;
    struct tg_lease l;
    assert_int_equal(decode("{\"metadata\":{\"resourceVersion\":\"7\"},\"spec\":{"
                            "\"leaseDurationSeconds\":1e300,\"leaseTransitions\":-1e300}}", &l), 0);
    assert_int_equal(l.duration_s, 0);
    assert_int_equal(l.transitions, 0);
    tg_lease_free(&l);
    assert_int_equal(decode("{\"metadata\":{\"resourceVersion\":\"7\"},\"spec\":{"
                            "\"leaseDurationSeconds\":2147483648}}", &l), 0);
    assert_int_equal(l.duration_s, 0);
    tg_lease_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_numbers_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
