/* The congestion window of the API client's write lanes (util/aimd.h): what
 * a 429 does to the requests in flight, and how the window grows back. */
#include "testutil.h"
#include "util/aimd.h"

/* A fresh window is max; a 429 halves the flight it was part of, once per
 * window: the other 429s of requests sent before the cut do not cut again. */
static void test_halves_once_per_window(void **s)
{
    (void)s;
    struct tg_aimd w;
    tg_aimd_init(&w, 1024);
    assert_int_equal(tg_aimd_window(&w), 1024);
    uint64_t seq[64];
    for (int i = 0; i < 64; i++)
        seq[i] = tg_aimd_send(&w);
    /* 64 in flight, not 1024: the cut halves what was really sent */
    assert_int_equal(tg_aimd_throttled(&w, seq[10], 64, 1000), 1);
    assert_int_equal(tg_aimd_window(&w), 32);
    for (int i = 11; i < 40; i++)
        assert_int_equal(tg_aimd_throttled(&w, seq[i], 53, 1000), 0);
    assert_int_equal(tg_aimd_window(&w), 32);
    /* one sent after the cut is news: halves again, down to 1 at most */
    uint64_t late = tg_aimd_send(&w);
    assert_int_equal(tg_aimd_throttled(&w, late, 32, 1001), 1);
    assert_int_equal(tg_aimd_window(&w), 16);
    for (int i = 0; i < 10; i++)
        tg_aimd_throttled(&w, tg_aimd_send(&w), 1, 1002);
    assert_int_equal(tg_aimd_window(&w), 1);
    assert_int_equal(w.cuts, 12);
}

/* Past a cut it grows by one per window of successes (additive); after
 * TG_AIMD_CALM_MS without a cut, by one per success again up to max. */
static void test_grows_back(void **s)
{
    (void)s;
    struct tg_aimd w;
    tg_aimd_init(&w, 64);
    tg_aimd_throttled(&w, tg_aimd_send(&w), 8, 0);
    assert_int_equal(tg_aimd_window(&w), 4);
    for (int i = 0; i < 4; i++)
        tg_aimd_ok(&w, 100);
    assert_int_equal(tg_aimd_window(&w), 5);
    for (int i = 0; i < 5; i++)
        tg_aimd_ok(&w, 200);
    assert_int_equal(tg_aimd_window(&w), 6);
    tg_aimd_ok(&w, TG_AIMD_CALM_MS);
    assert_int_equal(tg_aimd_window(&w), 7);
    for (int i = 0; i < 100; i++)
        tg_aimd_ok(&w, TG_AIMD_CALM_MS + 1);
    assert_int_equal(tg_aimd_window(&w), 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_halves_once_per_window),
        cmocka_unit_test(test_grows_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
