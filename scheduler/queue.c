/* The gang queue; see queue.h. Four binary heaps with the position kept in
 * the entry (so an entry is removed or re-sorted in O(log n)): active (queue
 * order), backoff (by expiry), head (every queued entry, queue order) and
 * deadline (by timeout); unsched and waiting are lists. */
#include "scheduler/queue.h"
#include "scheduler/internal.h"
#include "util/err.h"
#include "util/vec.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NOIDX UINT32_MAX

enum { BACKOFF_INITIAL_MS = 1000, BACKOFF_MAX_MS = 60000, FLUSH_MS = 60000 };

/* ---- heaps ---------------------------------------------------------------- */

struct heapdef {
    size_t idx_off;                     /* offset of the uint32_t index in struct tg_qent */
    int (*less)(const struct tg_qent *a, const struct tg_qent *b);
};

static uint32_t *idx_of(const struct heapdef *h, struct tg_qent *e)
{
    return (uint32_t *)((char *)e + h->idx_off);
}

static void hset(const struct heapdef *d, struct tg_qheap *h, uint32_t i, struct tg_qent *e)
{
    h->v[i] = e;
    *idx_of(d, e) = i;
}

static void up(const struct heapdef *d, struct tg_qheap *h, uint32_t i)
{
    struct tg_qent *e = h->v[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!d->less(e, h->v[p]))
            break;
        hset(d, h, i, h->v[p]);
        i = p;
    }
    hset(d, h, i, e);
}

static void down(const struct heapdef *d, struct tg_qheap *h, uint32_t i)
{
    struct tg_qent *e = h->v[i];
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        const struct tg_qent *best = e;
        if (l < h->n && d->less(h->v[l], best)) {
            m = l;
            best = h->v[l];
        }
        if (r < h->n && d->less(h->v[r], best))
            m = r;
        if (m == i)
            break;
        hset(d, h, i, h->v[m]);
        i = m;
    }
    hset(d, h, i, e);
}

static int hpush(const struct heapdef *d, struct tg_qheap *h, struct tg_qent *e)
{
    if (tg_grow((void **)&h->v, &h->cap, h->n, sizeof *h->v))
        return TG_ENOMEM;
    hset(d, h, h->n++, e);
    up(d, h, h->n - 1);
    return 0;
}

static void hremove(const struct heapdef *d, struct tg_qheap *h, struct tg_qent *e)
{
    uint32_t i = *idx_of(d, e);
    if (i == NOIDX || i >= h->n || h->v[i] != e)
        return;
    *idx_of(d, e) = NOIDX;
    struct tg_qent *last = h->v[--h->n];
    if (i == h->n)
        return;
    hset(d, h, i, last);
    up(d, h, i);
    down(d, h, *idx_of(d, last));
}

static void hfix(const struct heapdef *d, struct tg_qheap *h, struct tg_qent *e)
{
    uint32_t i = *idx_of(d, e);
    if (i == NOIDX || i >= h->n || h->v[i] != e)
        return;
    up(d, h, i);
    down(d, h, *idx_of(d, e));
}

int tg_qent_cmp(const struct tg_qent *a, const struct tg_qent *b)
{
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->created_ms != b->created_ms)
        return a->created_ms < b->created_ms ? -1 : 1;
    return strcmp(a->key, b->key);
}

static int less_order(const struct tg_qent *a, const struct tg_qent *b)
{
    return tg_qent_cmp(a, b) < 0;
}

static int less_ready(const struct tg_qent *a, const struct tg_qent *b)
{
    if (a->ready_ms != b->ready_ms)
        return a->ready_ms < b->ready_ms;
    return tg_qent_cmp(a, b) < 0;
}

static int less_deadline(const struct tg_qent *a, const struct tg_qent *b)
{
    if (a->deadline_ms != b->deadline_ms)
        return a->deadline_ms < b->deadline_ms;
    return tg_qent_cmp(a, b) < 0;
}

static const struct heapdef ACTIVE = {offsetof(struct tg_qent, hidx), less_order};
static const struct heapdef BACKOFF = {offsetof(struct tg_qent, hidx), less_ready};
static const struct heapdef HEAD = {offsetof(struct tg_qent, widx), less_order};
static const struct heapdef DEADLINE = {offsetof(struct tg_qent, didx), less_deadline};

/* ---- lists ------------------------------------------------------------------ */

static void list_init(struct tg_qent *s)
{
    s->next = s->prev = s;
}

static void list_add(struct tg_qent *s, struct tg_qent *e)
{
    e->prev = s->prev;
    e->next = s;
    s->prev->next = e;
    s->prev = e;
}

static void list_del(struct tg_qent *e)
{
    if (!e->next)
        return;
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->next = e->prev = NULL;
}

/* ---- states ------------------------------------------------------------------- */

void tg_queue_init(struct tg_queue *q, const struct tg_clock *clock)
{
    memset(q, 0, sizeof *q);
    q->clock = clock;
    list_init(&q->unsched);
    list_init(&q->waiting);
    q->backoff_initial_ms = BACKOFF_INITIAL_MS;
    q->backoff_max_ms = BACKOFF_MAX_MS;
    q->flush_ms = FLUSH_MS;
}

void tg_queue_free(struct tg_queue *q)
{
    free(q->active.v);
    free(q->backoff.v);
    free(q->head.v);
    free(q->deadline.v);
    memset(&q->active, 0, sizeof q->active);
    memset(&q->backoff, 0, sizeof q->backoff);
    memset(&q->head, 0, sizeof q->head);
    memset(&q->deadline, 0, sizeof q->deadline);
}

int64_t tg_queue_now(const struct tg_queue *q)
{
    return q->clock->now_ms(q->clock->ud);
}

/* Takes e out of whatever structure its state keeps it in (not head). */
static void detach(struct tg_queue *q, struct tg_qent *e)
{
    switch (e->state) {
    case TG_Q_ACTIVE: hremove(&ACTIVE, &q->active, e); break;
    case TG_Q_BACKOFF: hremove(&BACKOFF, &q->backoff, e); break;
    case TG_Q_UNSCHED:
    case TG_Q_WAITING: list_del(e); break;
    default: break;
    }
    if (e->state != TG_Q_OUT)
        q->count[e->state]--;
}

/* Puts a detached e into state st. */
static int attach(struct tg_queue *q, struct tg_qent *e, uint8_t st)
{
    int rc = 0;
    e->state = st;
    if (st != TG_Q_OUT)
        q->count[st]++;
    switch (st) {
    case TG_Q_ACTIVE: rc = hpush(&ACTIVE, &q->active, e); break;
    case TG_Q_BACKOFF: rc = hpush(&BACKOFF, &q->backoff, e); break;
    case TG_Q_UNSCHED: list_add(&q->unsched, e); break;
    case TG_Q_WAITING: list_add(&q->waiting, e); break;
    default: break;
    }
    if (rc) { /* no room in a heap: keep it findable on a list rather than lose it */
        q->count[st]--;
        e->state = TG_Q_UNSCHED;
        q->count[TG_Q_UNSCHED]++;
        e->flush_at_ms = tg_queue_now(q);
        list_add(q->unsched.next, e); /* first: the list is in flush order */
    }
    return rc;
}

static int move(struct tg_queue *q, struct tg_qent *e, uint8_t st)
{
    if (e->state == TG_Q_OUT && st != TG_Q_OUT) {
        int rc = hpush(&HEAD, &q->head, e);
        if (rc)
            return rc;
    }
    detach(q, e);
    if (st == TG_Q_OUT)
        hremove(&HEAD, &q->head, e);
    return attach(q, e, st);
}

/* Active, unless its backoff still runs. */
static int ready(struct tg_queue *q, struct tg_qent *e)
{
    return move(q, e, e->ready_ms > tg_queue_now(q) ? TG_Q_BACKOFF : TG_Q_ACTIVE);
}

void tg_qent_init(struct tg_qent *e, const char *key)
{
    memset(e, 0, sizeof *e);
    e->key = key;
    e->state = TG_Q_OUT;
    e->hidx = e->widx = e->didx = NOIDX;
    e->deadline_ms = INT64_MAX;
}

int tg_queue_add(struct tg_queue *q, struct tg_qent *e)
{
    if (!e->backoff_ms)
        e->backoff_ms = q->backoff_initial_ms;
    switch (e->state) {
    case TG_Q_OUT:
    case TG_Q_UNSCHED:
    case TG_Q_WAITING: return ready(q, e);
    default: return 0; /* active or backoff already; inflight: the engine requeues */
    }
}

/* Restores every heap e is in after one of its order keys changed. */
static void refix(struct tg_queue *q, struct tg_qent *e)
{
    if (e->state == TG_Q_OUT)
        return;
    hfix(&HEAD, &q->head, e);
    if (e->state == TG_Q_ACTIVE)
        hfix(&ACTIVE, &q->active, e);
    else if (e->state == TG_Q_BACKOFF)
        hfix(&BACKOFF, &q->backoff, e);
    if (e->didx != NOIDX)
        hfix(&DEADLINE, &q->deadline, e);
}

void tg_queue_update(struct tg_queue *q, struct tg_qent *e, int32_t prio, int64_t created_ms)
{
    if (e->prio == prio && e->created_ms == created_ms)
        return;
    e->prio = prio;
    e->created_ms = created_ms;
    refix(q, e);
}

void tg_queue_set_rank(struct tg_queue *q, struct tg_qent *e, uint32_t rank)
{
    if (e->rank == rank)
        return;
    e->rank = rank;
    refix(q, e);
}

static void heapify(const struct heapdef *d, struct tg_qheap *h)
{
    for (uint32_t i = h->n / 2; i-- > 0;)
        down(d, h, i);
}

void tg_queue_reorder(struct tg_queue *q)
{
    heapify(&HEAD, &q->head);
    heapify(&ACTIVE, &q->active);
    heapify(&BACKOFF, &q->backoff);
    heapify(&DEADLINE, &q->deadline);
}

void tg_queue_remove(struct tg_queue *q, struct tg_qent *e)
{
    tg_queue_unreserve(q, e);
    if (e->didx != NOIDX)
        hremove(&DEADLINE, &q->deadline, e);
    e->deadline_ms = INT64_MAX;
    e->by_deadline = 0;
    if (e->state != TG_Q_OUT)
        move(q, e, TG_Q_OUT);
}

int tg_queue_set_deadline(struct tg_queue *q, struct tg_qent *e, int64_t deadline_ms)
{
    if (e->didx != NOIDX)
        hremove(&DEADLINE, &q->deadline, e);
    e->deadline_ms = deadline_ms;
    if (deadline_ms == INT64_MAX)
        return 0;
    return hpush(&DEADLINE, &q->deadline, e);
}

static int flushed(const struct tg_qent *s, int64_t now)
{
    return s->next != s && s->next->flush_at_ms <= now;
}

/* Moves what has come due to active. */
static void promote(struct tg_queue *q)
{
    int64_t now = tg_queue_now(q);
    while (q->backoff.n && q->backoff.v[0]->ready_ms <= now)
        move(q, q->backoff.v[0], TG_Q_ACTIVE);
    while (flushed(&q->unsched, now))
        move(q, q->unsched.next, TG_Q_ACTIVE);
    while (flushed(&q->waiting, now))
        move(q, q->waiting.next, TG_Q_ACTIVE);
    while (q->deadline.n && q->deadline.v[0]->deadline_ms <= now) {
        struct tg_qent *e = q->deadline.v[0];
        hremove(&DEADLINE, &q->deadline, e);
        e->deadline_ms = INT64_MAX; /* once: the engine marks it timed out */
        if (e->state == TG_Q_BACKOFF || e->state == TG_Q_UNSCHED || e->state == TG_Q_WAITING) {
            e->by_deadline = 1;
            move(q, e, TG_Q_ACTIVE);
        }
    }
}

struct tg_qent *tg_queue_pop(struct tg_queue *q)
{
    promote(q);
    if (!q->active.n)
        return NULL;
    struct tg_qent *e = q->active.v[0];
    move(q, e, TG_Q_INFLIGHT);
    e->attempts++;
    e->wakes_at_pop = q->wakes;
    return e;
}

int64_t tg_queue_next_due(const struct tg_queue *q)
{
    if (q->active.n)
        return tg_queue_now(q);
    int64_t due = INT64_MAX;
    if (q->backoff.n && q->backoff.v[0]->ready_ms < due)
        due = q->backoff.v[0]->ready_ms;
    if (q->unsched.next != &q->unsched && q->unsched.next->flush_at_ms < due)
        due = q->unsched.next->flush_at_ms;
    if (q->waiting.next != &q->waiting && q->waiting.next->flush_at_ms < due)
        due = q->waiting.next->flush_at_ms;
    if (q->deadline.n && q->deadline.v[0]->deadline_ms < due)
        due = q->deadline.v[0]->deadline_ms;
    return due;
}

/* After a try its deadline brought: where its earlier backoff left it. */
static int ready_or_unsched(struct tg_queue *q, struct tg_qent *e, int64_t now)
{
    if (e->ready_ms > now)
        return move(q, e, TG_Q_BACKOFF);
    return move(q, e, q->wakes != e->wakes_at_pop ? TG_Q_ACTIVE : TG_Q_UNSCHED);
}

int tg_queue_done(struct tg_queue *q, struct tg_qent *e, enum tg_qdone how)
{
    int64_t now = tg_queue_now(q);
    int by_deadline = e->by_deadline;
    e->by_deadline = 0;
    if (!e->backoff_ms)
        e->backoff_ms = q->backoff_initial_ms;
    switch (how) {
    case TG_QDONE_PLACED:
        e->backoff_ms = q->backoff_initial_ms;
        e->ready_ms = 0;
        return move(q, e, TG_Q_OUT);
    case TG_QDONE_PARKED:
        return move(q, e, TG_Q_OUT);
    case TG_QDONE_RETRY:
        return move(q, e, TG_Q_ACTIVE);
    case TG_QDONE_WAITING:
        e->flush_at_ms = now + q->flush_ms;
        return move(q, e, TG_Q_WAITING);
    case TG_QDONE_UNSCHEDULABLE:
        break;
    }
    if (by_deadline) { /* its backoff as it was (see queue.h) */
        e->flush_at_ms = now + q->flush_ms;
        return ready_or_unsched(q, e, now);
    }
    e->ready_ms = now + e->backoff_ms;
    e->backoff_ms = e->backoff_ms * 2 > q->backoff_max_ms ? q->backoff_max_ms : e->backoff_ms * 2;
    e->flush_at_ms = now + q->flush_ms;
    /* a wake while it was being tried may be what it needs: backoff only */
    return move(q, e, q->wakes != e->wakes_at_pop ? TG_Q_BACKOFF : TG_Q_UNSCHED);
}

int tg_queue_backoff(struct tg_queue *q, struct tg_qent *e)
{
    if (e->state != TG_Q_OUT)
        return 0;
    if (!e->backoff_ms)
        e->backoff_ms = q->backoff_initial_ms;
    e->ready_ms = tg_queue_now(q) + e->backoff_ms;
    e->backoff_ms = e->backoff_ms * 2 > q->backoff_max_ms ? q->backoff_max_ms : e->backoff_ms * 2;
    return move(q, e, TG_Q_BACKOFF);
}

void tg_queue_wake(struct tg_queue *q)
{
    q->wakes++;
    while (q->unsched.next != &q->unsched)
        ready(q, q->unsched.next);
    while (q->waiting.next != &q->waiting)
        move(q, q->waiting.next, TG_Q_ACTIVE);
}

void tg_queue_wake_some(struct tg_queue *q, int (*may_help)(void *ud, const struct tg_qent *e),
                        void *ud)
{
    q->wakes++;
    struct tg_qent *lists[2] = {&q->unsched, &q->waiting};
    for (int l = 0; l < 2; l++)
        for (struct tg_qent *e = lists[l]->next, *nx; e != lists[l]; e = nx) {
            nx = e->next;
            if (may_help(ud, e))
                ready(q, e);
        }
}

struct tg_qent *tg_queue_head(const struct tg_queue *q)
{
    return q->head.n ? q->head.v[0] : NULL;
}

uint32_t tg_queue_len(const struct tg_queue *q)
{
    return q->head.n;
}

/* ---- nominations and reservations ----------------------------------------------- */

void tg_nomination_free(struct tg_nomination **pn)
{
    struct tg_nomination *n = *pn;
    if (!n)
        return;
    for (uint32_t i = 0; i < n->npods; i++)
        free(n->pods[i]);
    for (uint32_t i = 0; i < n->nvictims; i++)
        free(n->victims[i]);
    free(n->pods);
    free(n->slots);
    free(n->victims);
    free(n);
    *pn = NULL;
}

void tg_queue_nominate(struct tg_queue *q, struct tg_qent *e, struct tg_nomination *nom)
{
    (void)q;
    tg_nomination_free(&e->nom);
    e->nom = nom;
}

void tg_queue_nomination_clear(struct tg_qent *e)
{
    tg_nomination_free(&e->nom);
}

int tg_queue_reserve(struct tg_queue *q, struct tg_qent *owner, uint32_t domain)
{
    for (uint32_t i = 0; i < q->nresv; i++)
        if (q->resv[i].owner == owner) {
            if (q->resv[i].domain != domain) {
                q->resv[i].domain = domain;
                q->resv[i].since_ms = tg_queue_now(q);
            }
            q->resv[i].prio = owner->prio;
            return 0;
        }
    if (q->nresv == TG_MAX_RESERVATIONS)
        return TG_ENOMEM;
    q->resv[q->nresv++] = (struct tg_reservation){owner, owner->prio, domain, tg_queue_now(q)};
    return 0;
}

void tg_queue_unreserve(struct tg_queue *q, const struct tg_qent *owner)
{
    for (uint32_t i = 0; i < q->nresv; i++)
        if (q->resv[i].owner == owner) {
            q->resv[i] = q->resv[--q->nresv];
            return;
        }
}

const struct tg_reservation *tg_queue_reservation(const struct tg_queue *q,
                                                  const struct tg_qent *owner)
{
    for (uint32_t i = 0; i < q->nresv; i++)
        if (q->resv[i].owner == owner)
            return &q->resv[i];
    return NULL;
}

int64_t tg_queue_latest_deadline(const struct tg_queue *q)
{
    int64_t latest = INT64_MIN;
    for (uint32_t i = 0; i < q->deadline.n; i++)
        if (q->deadline.v[i]->deadline_ms > latest && q->deadline.v[i]->deadline_ms != INT64_MAX)
            latest = q->deadline.v[i]->deadline_ms;
    return latest;
}
