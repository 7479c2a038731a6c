/* The gang queue (scheduler/queue.h) on a clock the test moves: order,
 * backoff, wake-ups, the unschedulable flush, deadlines, the head, waiting
 * (nominated) entries and reservations. No apiserver, no model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "scheduler/internal.h" /* the queue's layout: the tests embed one */
#include "scheduler/queue.h"

static int64_t now;
static int64_t clock_now(void *ud)
{
    (void)ud;
    return now;
}
static const struct tg_clock clk = {clock_now, NULL};

static struct tg_qent ent[8];
static char keys[8][16];

static struct tg_qent *mk(int i, int32_t prio, int64_t created)
{
    snprintf(keys[i], sizeof keys[i], "ns/g%d", i);
    tg_qent_init(&ent[i], keys[i]);
    ent[i].prio = prio;
    ent[i].created_ms = created;
    return &ent[i];
}

static void order_priority_then_age(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 1000;
    tg_queue_init(&q, &clk);
    assert_int_equal(tg_queue_add(&q, mk(0, 0, 10)), 0);
    assert_int_equal(tg_queue_add(&q, mk(1, 100, 50)), 0);
    assert_int_equal(tg_queue_add(&q, mk(2, 100, 20)), 0);
    assert_int_equal(tg_queue_add(&q, mk(3, 0, 5)), 0);
    assert_int_equal(tg_queue_len(&q), 4);
    assert_ptr_equal(tg_queue_head(&q), &ent[2]);
    assert_ptr_equal(tg_queue_pop(&q), &ent[2]);
    assert_int_equal(ent[2].state, TG_Q_INFLIGHT);
    assert_ptr_equal(tg_queue_pop(&q), &ent[1]);
    assert_ptr_equal(tg_queue_pop(&q), &ent[3]);
    /* a priority raised while queued re-sorts it */
    tg_queue_update(&q, &ent[0], 7, 10);
    assert_ptr_equal(tg_queue_pop(&q), &ent[0]);
    assert_null(tg_queue_pop(&q));
    tg_queue_free(&q);
}

static void backoff_doubles_and_wake_waits_for_it(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 0;
    tg_queue_init(&q, &clk);
    q.flush_ms = 600000; /* the flush is tested on its own */
    struct tg_qent *e = mk(0, 0, 0);
    tg_queue_add(&q, e);
    int64_t expect[] = {1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000};
    for (int i = 0; i < 8; i++) {
        assert_ptr_equal(tg_queue_pop(&q), e);
        tg_queue_done(&q, e, TG_QDONE_UNSCHEDULABLE);
        assert_int_equal(e->state, TG_Q_UNSCHED);
        assert_int_equal(e->ready_ms - now, expect[i]);
        /* nothing comes back without a wake before the flush */
        now += expect[i];
        assert_null(tg_queue_pop(&q));
        tg_queue_wake(&q);
        assert_int_equal(e->state, TG_Q_ACTIVE);
    }
    /* a wake inside the backoff puts it in backoff, due when the backoff ends */
    assert_ptr_equal(tg_queue_pop(&q), e);
    tg_queue_done(&q, e, TG_QDONE_UNSCHEDULABLE);
    now += 10;
    tg_queue_wake(&q);
    assert_int_equal(e->state, TG_Q_BACKOFF);
    assert_int_equal(tg_queue_next_due(&q), e->ready_ms);
    assert_null(tg_queue_pop(&q));
    now = e->ready_ms;
    assert_ptr_equal(tg_queue_pop(&q), e);
    /* placed: the backoff starts over */
    tg_queue_done(&q, e, TG_QDONE_PLACED);
    assert_int_equal(e->state, TG_Q_OUT);
    assert_int_equal(tg_queue_len(&q), 0);
    tg_queue_add(&q, e);
    assert_ptr_equal(tg_queue_pop(&q), e);
    tg_queue_done(&q, e, TG_QDONE_UNSCHEDULABLE);
    assert_int_equal(e->ready_ms - now, 1000);
    tg_queue_free(&q);
}

static void unschedulable_flushed_after_a_minute(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 0;
    tg_queue_init(&q, &clk);
    struct tg_qent *e = mk(0, 0, 0);
    tg_queue_add(&q, e);
    tg_queue_pop(&q);
    tg_queue_done(&q, e, TG_QDONE_UNSCHEDULABLE);
    assert_int_equal(tg_queue_next_due(&q), 60000);
    now = 59999;
    assert_null(tg_queue_pop(&q));
    now = 60000;
    assert_ptr_equal(tg_queue_pop(&q), e);
    tg_queue_free(&q);
}

static void wake_during_attempt_is_not_lost(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 0;
    tg_queue_init(&q, &clk);
    struct tg_qent *e = mk(0, 0, 0);
    tg_queue_add(&q, e);
    tg_queue_pop(&q);
    tg_queue_wake(&q); /* a pod went away while e was being tried */
    tg_queue_done(&q, e, TG_QDONE_UNSCHEDULABLE);
    assert_int_equal(e->state, TG_Q_BACKOFF);
    now = 1000;
    assert_ptr_equal(tg_queue_pop(&q), e);
    tg_queue_free(&q);
}

static void deadline_brings_it_back_once(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 0;
    tg_queue_init(&q, &clk);
    struct tg_qent *e = mk(0, 0, 0), *f = mk(1, 0, 1);
    tg_queue_add(&q, e);
    tg_queue_add(&q, f);
    assert_int_equal(tg_queue_set_deadline(&q, e, 5000), 0);
    assert_int_equal(tg_queue_set_deadline(&q, f, 7000), 0);
    tg_queue_set_deadline(&q, f, INT64_MAX); /* cleared */
    tg_queue_pop(&q);
    tg_queue_pop(&q);
    tg_queue_done(&q, e, TG_QDONE_UNSCHEDULABLE);
    tg_queue_done(&q, f, TG_QDONE_UNSCHEDULABLE);
    assert_int_equal(tg_queue_next_due(&q), 5000);
    now = 5000;
    assert_ptr_equal(tg_queue_pop(&q), e);
    assert_int_equal(e->deadline_ms, INT64_MAX);
    assert_null(tg_queue_pop(&q));
    tg_queue_done(&q, e, TG_QDONE_UNSCHEDULABLE);
    assert_int_equal(tg_queue_next_due(&q), 60000);
    tg_queue_free(&q);
}

static void head_and_remove(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 0;
    tg_queue_init(&q, &clk);
    for (int i = 0; i < 6; i++)
        tg_queue_add(&q, mk(i, i % 3, 100 - i));
    /* head: priority 2 (i = 2, 5), older first: i = 5 (created 95) */
    assert_ptr_equal(tg_queue_head(&q), &ent[5]);
    tg_queue_pop(&q);
    tg_queue_done(&q, &ent[5], TG_QDONE_UNSCHEDULABLE);
    assert_ptr_equal(tg_queue_head(&q), &ent[5]); /* unschedulable, still the head */
    tg_queue_remove(&q, &ent[5]);
    assert_ptr_equal(tg_queue_head(&q), &ent[2]);
    assert_int_equal(tg_queue_len(&q), 5);
    assert_int_equal(q.count[TG_Q_ACTIVE], 5);
    assert_int_equal(q.count[TG_Q_UNSCHED], 0);
    tg_queue_free(&q);
}

static void waiting_woken_without_backoff(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 0;
    tg_queue_init(&q, &clk);
    struct tg_qent *e = mk(0, 9, 0);
    tg_queue_add(&q, e);
    tg_queue_pop(&q);
    tg_queue_done(&q, e, TG_QDONE_WAITING);
    assert_int_equal(e->state, TG_Q_WAITING);
    assert_null(tg_queue_pop(&q));
    tg_queue_wake(&q);
    assert_ptr_equal(tg_queue_pop(&q), e);
    tg_queue_done(&q, e, TG_QDONE_WAITING);
    now = 60000; /* and at the latest after the flush */
    assert_ptr_equal(tg_queue_pop(&q), e);
    tg_queue_free(&q);
}

static void reservations(void **state)
{
    (void)state;
    struct tg_queue q;
    now = 10;
    tg_queue_init(&q, &clk);
    struct tg_qent *e = mk(0, 5, 0), *f = mk(1, 6, 0);
    tg_queue_add(&q, e);
    assert_int_equal(tg_queue_reserve(&q, e, 42), 0);
    assert_int_equal(tg_queue_reservation(&q, e)->domain, 42);
    assert_int_equal(tg_queue_reservation(&q, e)->since_ms, 10);
    now = 20;
    assert_int_equal(tg_queue_reserve(&q, e, 42), 0); /* same domain: the time stays */
    assert_int_equal(tg_queue_reservation(&q, e)->since_ms, 10);
    assert_null(tg_queue_reservation(&q, f));
    for (int i = 2; i < 2 + TG_MAX_RESERVATIONS - 1; i++)
        assert_int_equal(tg_queue_reserve(&q, mk(i, 0, 0), (uint32_t)i), 0);
    assert_int_not_equal(tg_queue_reserve(&q, f, 1), 0); /* full */
    tg_queue_remove(&q, e); /* its reservation ends with it */
    assert_null(tg_queue_reservation(&q, e));
    assert_int_equal(tg_queue_reserve(&q, f, 1), 0);
    tg_queue_free(&q);
}

/* Many entries and random operations: the heads of the heaps stay right. */
static void random_operations_keep_order(void **state)
{
    (void)state;
    enum { N = 200 };
    static struct tg_qent e[N];
    static char k[N][16];
    struct tg_queue q;
    now = 0;
    tg_queue_init(&q, &clk);
    unsigned seed = 7;
    for (int i = 0; i < N; i++) {
        snprintf(k[i], sizeof k[i], "g%03d", i);
        tg_qent_init(&e[i], k[i]);
        e[i].prio = (int32_t)(rand_r(&seed) % 5);
        e[i].created_ms = rand_r(&seed) % 1000;
        tg_queue_add(&q, &e[i]);
    }
    for (int round = 0; round < 2000; round++) {
        now += rand_r(&seed) % 3000;
        int op = (int)(rand_r(&seed) % 4);
        int i = (int)(rand_r(&seed) % N);
        if (op == 0)
            tg_queue_wake(&q);
        else if (op == 1)
            tg_queue_update(&q, &e[i], (int32_t)(rand_r(&seed) % 5), e[i].created_ms);
        else if (op == 2 && e[i].state != TG_Q_INFLIGHT)
            tg_queue_add(&q, &e[i]);
        struct tg_qent *p = tg_queue_pop(&q);
        if (!p)
            continue;
        /* nothing active may come before what was popped */
        for (int j = 0; j < N; j++)
            if (e[j].state == TG_Q_ACTIVE)
                assert_true(tg_qent_cmp(p, &e[j]) < 0);
        tg_queue_done(&q, p, rand_r(&seed) % 3 ? TG_QDONE_UNSCHEDULABLE : TG_QDONE_PLACED);
        struct tg_qent *h = tg_queue_head(&q);
        for (int j = 0; j < N; j++)
            if (e[j].state != TG_Q_OUT)
                assert_true(h == &e[j] || tg_qent_cmp(h, &e[j]) < 0);
    }
    uint32_t total = 0;
    for (int s = TG_Q_ACTIVE; s < TG_Q__N; s++)
        total += q.count[s];
    assert_int_equal(total, tg_queue_len(&q));
    tg_queue_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_priority_then_age),
        cmocka_unit_test(backoff_doubles_and_wake_waits_for_it),
        cmocka_unit_test(unschedulable_flushed_after_a_minute),
        cmocka_unit_test(wake_during_attempt_is_not_lost),
        cmocka_unit_test(deadline_brings_it_back_once),
        cmocka_unit_test(head_and_remove),
        cmocka_unit_test(waiting_woken_without_backoff),
        cmocka_unit_test(reservations),
        cmocka_unit_test(random_operations_keep_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
