/* A gang's life as the API server records it, and what becomes of a gang
 * that ran complete and lost members (config: gang.memberLossGraceSeconds,
 * gang.onMemberLoss). One copy of the rules; the daemon carries them out
 * (scheduler/daemon/loss.c).
 *
 * A gang with members bound but fewer than minMember is one of two things:
 *   half-bound  a placement whose binds were cut short (a scheduler killed
 *               mid-bind, binds refused): it never was complete. Its bound
 *               members are rolled back (deleted) so the gang starts over.
 *   short       it ran complete and lost members since (a node failed, a pod
 *               was evicted, or deleted and recreated by its controller). Its
 *               members are running work: they are never rolled back. It
 *               waits gang.memberLossGraceSeconds for replacements (placed
 *               next to the members that remain), then onMemberLoss says:
 *               keep (it runs on with fewer members; its controller decides)
 *               or evict (every member deleted with its own grace period).
 * Which of the two is read from the API, never from a process's memory, so
 * that a restarted scheduler or a new leader decides the same:
 *   - a PodGroup whose status this scheduler writes (topogang.io, upstream):
 *     its condition Complete (topogang.io) or PodGroupScheduled (upstream)
 *     is True: short; else half-bound;
 *   - any other gang (a derived gang, a peer's PodGroup: no status of ours):
 *     a bound member that ran (status.startTime, phase Running or later):
 *     short; else half-bound.
 * The grace counts from the MemberLoss condition's lastTransitionTime when
 * the PodGroup has one, else from when this process saw the loss. */
#ifndef TG_SCHEDULER_LOSS_H
#define TG_SCHEDULER_LOSS_H

#include <stdint.h>

#include "config/policy.h"

enum tg_life {
    TG_LIFE_WHOLE,                      /* no member bound, or minMember bound */
    TG_LIFE_HALF_BOUND,                 /* never complete: rolled back */
    TG_LIFE_SHORT,                      /* ran complete, then lost members */
};

/* What the API says of a gang (tg_life_facts in the daemon gathers them). */
struct tg_life_facts {
    uint32_t bound;                     /* members bound (or assumed) now */
    uint32_t min;                       /* minMember */
    uint32_t started;                   /* bound members that ran */
    uint8_t status_ours;                /* its PodGroup's status is written by this scheduler */
    uint8_t complete;                   /* ... and says it was complete */
};

enum tg_life tg_life_classify(const struct tg_life_facts *f);

enum tg_loss_step {
    TG_LOSS_STEP_WAIT,                  /* in its grace: wait for replacements */
    TG_LOSS_STEP_KEEP,                  /* grace over: runs on with fewer members */
    TG_LOSS_STEP_EVICT,                 /* grace over: evicted whole, gracefully */
};

/* What a short gang whose loss began at since_ms does at now_ms under p;
 * *due_ms: when its grace ends. */
enum tg_loss_step tg_loss_step(const struct tg_policy *p, int64_t since_ms, int64_t now_ms,
                               int64_t *due_ms);

#endif
