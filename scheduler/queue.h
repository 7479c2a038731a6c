/* The gang queue: which gang to try next, and when.
 *
 * The shape is kube-scheduler's SchedulingQueue, per gang instead of per pod:
 *   active     ready to try: a heap in queue order (higher priority first,
 *              then older, then by key);
 *   backoff    tried and not placed: waits out its backoff (initial 1 s,
 *              doubling per failed attempt up to 60 s) in a heap by expiry;
 *   unsched    not placed and its backoff is over: waits for a cluster event
 *              that may help (tg_queue_wake: a pod gone, a node added or
 *              freed, the policy changed), and in any case no longer than
 *              flush_ms (60 s) -- kube-scheduler's unschedulable pool;
 *   waiting    nominated: victims of its preemption are terminating; woken
 *              like unsched, without backoff;
 *   inflight   popped: being tried or bound; the engine says how it ended;
 *   out        not queued (not enough members, or all placed).
 * A deadline per entry (its scheduleTimeoutSeconds, or the moment it may
 * reserve room) brings a waiting gang back to active once, when it passes,
 * so that it is tried on time; such a try leaves its backoff as it was (no
 * cluster change prompted it, so failing it says nothing new).
 *
 * The queue also holds what preemption and starvation control decided: at
 * most one nomination per gang (the domain its victims are leaving, the
 * victims, the room held) and reservations (a domain kept for a starving
 * head gang). It stores them; the engine applies them to placement.
 *
 * The clock is passed in: wall time in the daemon, virtual time in
 * `simulate --replay`. Nothing here does I/O or reads the time itself. */
#ifndef TG_SCHEDULER_QUEUE_H
#define TG_SCHEDULER_QUEUE_H

#include <stdint.h>

struct tg_clock {
    int64_t (*now_ms)(void *ud);
    void *ud;
};

enum tg_qstate { TG_Q_OUT, TG_Q_ACTIVE, TG_Q_BACKOFF, TG_Q_UNSCHED, TG_Q_WAITING, TG_Q_INFLIGHT,
                 TG_Q__N };

/* A nomination: the preemptor's members hold room (nominated records in the
 * model, one per pod key) in `domain` while the victims terminate. */
struct tg_nomination {
    uint32_t domain;                    /* tree domain chosen */
    uint32_t npods;
    char **pods;                        /* preemptor pod keys holding room (owned) */
    uint32_t *slots;                    /* their node slots */
    uint32_t nvictims;
    char **victims;                     /* victim pod keys (owned) */
    int64_t since_ms;
};

/* Queue state of one gang, embedded in its record (gang.h). */
struct tg_qent {
    const char *key;                    /* the gang's key (owned by the record) */
    uint32_t rank;                      /* its tenant queue's place in the order between
                                           queues (issue 19), lower first; 0 without queues */
    int32_t prio;
    int64_t created_ms;
    uint8_t state;                      /* enum tg_qstate */
    uint32_t hidx;                      /* index in the active or backoff heap */
    uint32_t widx;                      /* index in the head heap (every queued entry) */
    uint32_t didx;                      /* index in the deadline heap, UINT32_MAX none */
    struct tg_qent *next, *prev;        /* unsched / waiting list */
    int64_t backoff_ms;                 /* next backoff length */
    int64_t ready_ms;                   /* end of the running backoff */
    int64_t flush_at_ms;                /* unsched / waiting: tried again at the latest then */
    int64_t deadline_ms;                /* timeout, INT64_MAX none */
    uint32_t attempts;
    uint64_t wakes_at_pop;              /* tg_queue.wakes when popped */
    uint8_t by_deadline;                /* brought back by its deadline, not yet done */
    struct tg_nomination *nom;          /* NULL: not nominated */
};


struct tg_reservation {
    struct tg_qent *owner;
    int32_t prio;
    uint32_t domain;                    /* tree domain kept for the owner */
    int64_t since_ms;
};


/* The queue itself is the core's (its layout in scheduler/internal.h). */
struct tg_queue;

/* A fresh entry for a gang with this key (kept by reference). */
void tg_qent_init(struct tg_qent *e, const char *key);

/* Empty queue on a clock (kept by reference). */
void tg_queue_init(struct tg_queue *q, const struct tg_clock *clock);
/* Frees the heaps; entries belong to their records (nominations are freed
 * with tg_queue_nomination_clear by whoever removes the entry). */
void tg_queue_free(struct tg_queue *q);
int64_t tg_queue_now(const struct tg_queue *q);

/* Makes e ready to try (from out, unsched or waiting): active, or backoff
 * while a backoff from an earlier failure is still running. An inflight
 * entry is left alone (the engine requeues it). Returns 0 or TG_ENOMEM. */
int tg_queue_add(struct tg_queue *q, struct tg_qent *e);
/* e's order key (prio, created) changed: re-sorts it. */
void tg_queue_update(struct tg_queue *q, struct tg_qent *e, int32_t prio, int64_t created_ms);
/* The entry's tenant queue rank changed (its gang moved to another queue):
 * its heaps are fixed. O(log n). */
void tg_queue_set_rank(struct tg_queue *q, struct tg_qent *e, uint32_t rank);
/* The ranks of many entries changed at once (the order between tenant
 * queues changed): every heap is rebuilt. O(entries); the engine calls it
 * only when the order between queues changes, not per decision. */
void tg_queue_reorder(struct tg_queue *q);
/* Takes e out of the queue (state out); its reservation ends. */
void tg_queue_remove(struct tg_queue *q, struct tg_qent *e);
/* Sets or clears (INT64_MAX) e's timeout deadline. */
int tg_queue_set_deadline(struct tg_queue *q, struct tg_qent *e, int64_t deadline_ms);

/* Moves due backoff entries, flushed unsched entries and entries past their
 * deadline to active, then pops the first active entry (state inflight), or
 * returns NULL. */
struct tg_qent *tg_queue_pop(struct tg_queue *q);
/* The clock time at which something will be due (a backoff or flush expiry,
 * a deadline); INT64_MAX when nothing is pending; now or earlier when an
 * entry is active. */
int64_t tg_queue_next_due(const struct tg_queue *q);

/* How an inflight entry's attempt ended. */
enum tg_qdone {
    TG_QDONE_PLACED,                    /* out of the queue (binding, or all placed) */
    TG_QDONE_UNSCHEDULABLE,             /* backoff, then unsched until a wake */
    TG_QDONE_WAITING,                   /* nominated: waits for its victims, no backoff */
    TG_QDONE_PARKED,                    /* out until tg_queue_add (members missing) */
    TG_QDONE_RETRY,                     /* active again at once (more members to place) */
};
int tg_queue_done(struct tg_queue *q, struct tg_qent *e, enum tg_qdone how);

/* An entry that is out (its binds failed) goes back with a backoff, as
 * after an unschedulable attempt. */
int tg_queue_backoff(struct tg_queue *q, struct tg_qent *e);

/* A cluster event that may help: every unsched and waiting entry goes to
 * active (or backoff while its backoff runs). An entry inflight when the
 * wake comes and then found unschedulable goes to backoff, not unsched, so
 * the event is not lost. */
void tg_queue_wake(struct tg_queue *q);

/* A targeted wake (kube-scheduler's queueing hints): only the unsched and
 * waiting entries for which may_help(ud, e) says the event may help go to
 * active (or backoff). */
void tg_queue_wake_some(struct tg_queue *q, int (*may_help)(void *ud, const struct tg_qent *e),
                        void *ud);

/* The first entry in queue order among every queued (not out) entry,
 * inflight included: the head gang. NULL when empty. */
struct tg_qent *tg_queue_head(const struct tg_queue *q);
uint32_t tg_queue_len(const struct tg_queue *q);

/* Nominations. Set takes ownership of nom (freeing an earlier one). */
void tg_queue_nominate(struct tg_queue *q, struct tg_qent *e, struct tg_nomination *nom);
/* Frees e's nomination, if any (the caller removes its room from the model). */
void tg_queue_nomination_clear(struct tg_qent *e);
void tg_nomination_free(struct tg_nomination **nom);

/* Reservations: at most TG_MAX_RESERVATIONS, one per owner. Returns 0, or
 * TG_ENOMEM when full. */
int tg_queue_reserve(struct tg_queue *q, struct tg_qent *owner, uint32_t domain);
void tg_queue_unreserve(struct tg_queue *q, const struct tg_qent *owner);
const struct tg_reservation *tg_queue_reservation(const struct tg_queue *q,
                                                  const struct tg_qent *owner);

/* Queue order: <0 when a goes first. */
int tg_qent_cmp(const struct tg_qent *a, const struct tg_qent *b);

#endif
