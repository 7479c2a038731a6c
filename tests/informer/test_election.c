/* Leader election's decisions (informer/election.h), on a monotonic clock
 * passed in: expiry is how long this process has seen the Lease record
 * unchanged, never renewTime against the local wall clock; the leader leads
 * only until the renew deadline after its last successful renewal was sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "informer/election.h"
#include "util/clock.h"
#include "util/err.h"

enum { LEASE = 15000, DEADLINE = 10000 };
static const int64_t WALL = 1700000000000LL; /* renewTime values: a wall clock, any */

static struct tg_lease rec(const char *holder, const char *rv, int64_t renew_ms, int dur_s)
{
    return (struct tg_lease){.holder = (char *)holder, .rv = (char *)rv, .renew_ms = renew_ms,
                             .duration_s = dur_s};
}

static void test_init(void **state)
{
    (void)state;
    struct tg_election e;
    assert_int_equal(tg_election_init(&e, LEASE, DEADLINE), 0);
    assert_int_equal(tg_election_init(&e, LEASE, LEASE), TG_EINVAL);
    assert_int_equal(tg_election_init(&e, LEASE, 0), TG_EINVAL);
    assert_int_equal(tg_election_init(&e, 0, 0), TG_EINVAL);
}

/* Another's record expires once this process has seen it unchanged for the
 * lease duration; any change (a renewal) starts the wait again. */
static void test_unchanged_for_lease_duration(void **state)
{
    (void)state;
    struct tg_election e;
    tg_election_init(&e, LEASE, DEADLINE);
    struct tg_lease a1 = rec("a", "100", WALL, 15), a2 = rec("a", "101", WALL + 2000, 15);
    int64_t t0 = 5000000; /* monotonic ms: any origin */
    assert_int_equal(tg_election_observe(&e, &a1, "b", t0), TG_ELECT_WAIT);
    assert_int_equal(tg_election_observe(&e, &a1, "b", t0 + LEASE - 1), TG_ELECT_WAIT);
    assert_int_equal(tg_election_observe(&e, &a1, "b", t0 + LEASE), TG_ELECT_WRITE);
    /* renewed meanwhile: the wait starts when the new record was first seen */
    tg_election_init(&e, LEASE, DEADLINE);
    assert_int_equal(tg_election_observe(&e, &a1, "b", t0), TG_ELECT_WAIT);
    assert_int_equal(tg_election_observe(&e, &a2, "b", t0 + 10000), TG_ELECT_WAIT);
    assert_int_equal(tg_election_observe(&e, &a2, "b", t0 + 10000 + LEASE - 1), TG_ELECT_WAIT);
    assert_int_equal(tg_election_observe(&e, &a2, "b", t0 + 10000 + LEASE), TG_ELECT_WRITE);
    /* only the resourceVersion changed (a write with the same renewTime): a change too */
    struct tg_lease a3 = rec("a", "102", WALL + 2000, 15);
    assert_int_equal(tg_election_observe(&e, &a3, "b", t0 + 30000), TG_ELECT_WAIT);
    /* the record's own leaseDurationSeconds, not ours, says how long */
    struct tg_lease s4 = rec("c", "200", WALL, 4);
    assert_int_equal(tg_election_observe(&e, &s4, "b", t0 + 40000), TG_ELECT_WAIT);
    assert_int_equal(tg_election_observe(&e, &s4, "b", t0 + 43999), TG_ELECT_WAIT);
    assert_int_equal(tg_election_observe(&e, &s4, "b", t0 + 44000), TG_ELECT_WRITE);
    /* free, or ours: write at once */
    struct tg_lease none = rec("", "300", WALL, 15), mine = rec("b", "301", WALL, 15);
    struct tg_lease unset = rec(NULL, "302", 0, 0);
    tg_election_init(&e, LEASE, DEADLINE);
    assert_int_equal(tg_election_observe(&e, &none, "b", t0), TG_ELECT_WRITE);
    assert_int_equal(tg_election_observe(&e, &mine, "b", t0), TG_ELECT_WRITE);
    assert_int_equal(tg_election_observe(&e, &unset, "b", t0), TG_ELECT_WRITE);
}

/* The verdicts do not depend on renewTime against any wall clock: a record
 * whose renewTime is 30 s ahead of, 30 s behind or a year away from "now"
 * is judged the same, at the same monotonic times. (The old judgement,
 * renewTime + duration < local wall clock, took over a healthy leader whose
 * clock ran 30 s slow the moment it saw its record.) */
static void test_clock_offset_independent(void **state)
{
    (void)state;
    const int64_t offsets[] = {0, 30000, -30000, 365LL * 86400000, -365LL * 86400000};
    int want[8] = {0};
    for (unsigned k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
        struct tg_election e;
        tg_election_init(&e, LEASE, DEADLINE);
        int got[8], n = 0;
        /* a healthy leader renewing every 2 s, watched by a standby for a minute */
        for (int64_t t = 0; t <= 60000; t += 2000) {
            char rv[16];
            snprintf(rv, sizeof rv, "%lld", (long long)(1000 + t / 2000));
            struct tg_lease l = rec("leader", rv, WALL + offsets[k] + t, 15);
            int v = tg_election_observe(&e, &l, "standby", 7000000 + t);
            assert_int_equal(v, TG_ELECT_WAIT); /* never takes over while it renews */
            assert_false(tg_election_leading(&e, 7000000 + t));
        }
        /* then the leader stops renewing: expiry exactly a lease later */
        struct tg_lease last = rec("leader", "9999", WALL + offsets[k], 15);
        for (int64_t t = 62000; t <= 62000 + LEASE + 1000; t += 500) {
            int v = tg_election_observe(&e, &last, "standby", 7000000 + t);
            assert_int_equal(v, t - 62000 >= LEASE ? TG_ELECT_WRITE : TG_ELECT_WAIT);
            if (n < 8 && (t - 62000) % 2500 == 0)
                got[n++] = v;
        }
        if (k == 0)
            memcpy(want, got, sizeof want);
        assert_memory_equal(got, want, sizeof want);
    }
}

/* The leader leads until renew_deadline after it sent its last renewal that
 * succeeded; a late answer does not extend it. */
static void test_renew_deadline(void **state)
{
    (void)state;
    struct tg_election e;
    tg_election_init(&e, LEASE, DEADLINE);
    int64_t t0 = 1000;
    assert_false(tg_election_leading(&e, t0));
    assert_int_equal(tg_election_deadline(&e), 0);
    tg_election_written(&e, t0, t0 + 5);
    assert_true(tg_election_leading(&e, t0 + 5));
    assert_true(tg_election_leading(&e, t0 + DEADLINE - 1));
    assert_false(tg_election_leading(&e, t0 + DEADLINE)); /* renewal overdue: stand down */
    assert_true(tg_election_deadline(&e) == t0 + DEADLINE);
    /* renewed: the deadline moves with the sending time */
    tg_election_written(&e, t0 + 3000, t0 + 3100);
    assert_true(tg_election_leading(&e, t0 + 3000 + DEADLINE - 1));
    assert_false(tg_election_leading(&e, t0 + 3000 + DEADLINE));
    /* an answer that comes back after the deadline of its sending (a SIGSTOP
     * between the two): not leading, though the write succeeded */
    tg_election_written(&e, t0 + 20000, t0 + 20000 + DEADLINE + 1);
    assert_false(tg_election_leading(&e, t0 + 20000 + DEADLINE + 1));
    assert_int_equal(tg_election_deadline(&e), 0);
    /* another holds it (409, or read so): not leading */
    tg_election_written(&e, t0 + 40000, t0 + 40001);
    assert_true(tg_election_leading(&e, t0 + 40001));
    tg_election_lost(&e);
    assert_false(tg_election_leading(&e, t0 + 40002));
    tg_election_written(&e, t0 + 50000, t0 + 50001);
    struct tg_lease other = rec("x", "5", WALL, 15);
    assert_int_equal(tg_election_observe(&e, &other, "me", t0 + 50002), TG_ELECT_WAIT);
    assert_false(tg_election_leading(&e, t0 + 50002));
    /* the margin: a standby that first saw our last record when we sent it
     * (the earliest it can) may take over only after we stopped leading */
    tg_election_init(&e, LEASE, DEADLINE);
    struct tg_election sb;
    tg_election_init(&sb, LEASE, DEADLINE);
    struct tg_lease ours = rec("me", "77", WALL, 15);
    tg_election_written(&e, t0, t0 + 1);
    for (int64_t t = t0; t < t0 + 2 * LEASE; t += 100)
        if (tg_election_observe(&sb, &ours, "sb", t) == TG_ELECT_WRITE)
            assert_true(t - (t0 + DEADLINE) >= LEASE - DEADLINE && !tg_election_leading(&e, t));
}

static void test_offset_parse(void **state)
{
    (void)state;
    int64_t ms = 7;
    assert_int_equal(tg_clock_parse_offset("+30s", &ms), 0);
    assert_true(ms == 30000);
    assert_int_equal(tg_clock_parse_offset("-30s", &ms), 0);
    assert_true(ms == -30000);
    assert_int_equal(tg_clock_parse_offset("1500ms", &ms), 0);
    assert_true(ms == 1500);
    assert_int_equal(tg_clock_parse_offset("-2m", &ms), 0);
    assert_true(ms == -120000);
    assert_int_equal(tg_clock_parse_offset("12", &ms), 0);
    assert_true(ms == 12000);
    ms = 7;
    assert_int_equal(tg_clock_parse_offset("", &ms), TG_EINVAL);
    assert_int_equal(tg_clock_parse_offset("30x", &ms), TG_EINVAL);
    assert_int_equal(tg_clock_parse_offset("s", &ms), TG_EINVAL);
    assert_int_equal(tg_clock_parse_offset(" 5s", &ms), TG_EINVAL);
    assert_int_equal(tg_clock_parse_offset("99999999999999999999s", &ms), TG_EINVAL);
    assert_int_equal(tg_clock_parse_offset("400000h", &ms), TG_EINVAL);
    assert_true(ms == 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_unchanged_for_lease_duration),
        cmocka_unit_test(test_clock_offset_independent),
        cmocka_unit_test(test_renew_deadline),
        cmocka_unit_test(test_offset_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
