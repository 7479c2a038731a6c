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

#include <stddef.h>
#include <stdint.h>

#include "config/policy.h"
#include "model/cluster.h"
#include "plugins/plugin.h"

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

/* ---- replacements ---------------------------------------------------------
 * A gang with members placed (a short gang's replacements; the rest of a gang
 * being completed) is placed around them, never moving them: its candidates
 * at each level are only the domains that hold a placed member (its home),
 * tried from the tightest level (the members' nodes, then their NVLink
 * domain, rack, block) up to the gang's required level; and a failing node
 * (tg_loss_node_failed) takes no replacement, whatever its pods tolerate.
 * The members still on a failing node stay members until their pods are
 * gone or terminating (kube-controller-manager's taint eviction deletes
 * them; topogang never does for this): only then are they lost. When none
 * fits, the reason says so in numbers (tg_loss_explain), and
 * gang.onNoReplacement says what the gang does: wait, or requeue. */

/* 1 when o is failing: no Node object, not Ready (NotReady, unreachable),
 * or tainted with effect NoExecute; why (NULL-able) then receives the
 * reason (not Ready; tainted <key>). */
int tg_loss_node_failed(const struct tg_node_obj *o, struct tg_status *why);

/* Marks home[d] = 1 for every tree domain of c holding one of the n placed
 * members m on a node that is not failing (on failing nodes too when every
 * one is on such a node). home: c->tree.ndom bytes, zeroed by the caller.
 * Returns how many members marked (0: none, nothing marked). Cost: n x
 * levels. */
uint32_t tg_loss_home(const struct tg_cluster *c, struct tg_usage *const *m, uint32_t n,
                      uint8_t *home);

/* What a replacement that fits nowhere is told, into buf: "replacement for
 * rack zone-a/rack-3: 0 of 3 nodes in the rack have room for 1 x
 * nvidia.com/gpu=8 (1 not Ready or tainted NoExecute)". who: "replacement",
 * or "growth" for an elastic gang's extras (scheduler/elastic.h); what: the
 * members sought ("1 x nvidia.com/gpu=8"); failed: failing nodes in the domain.
 * path NULL or "": the gang's domain is the whole cluster (no required
 * level), and level is not read: "growth anywhere in the cluster: 0 of 8
 * nodes in the cluster have room for ...". */
void tg_loss_explain(char *buf, size_t n, const char *who, const char *level, const char *path,
                     uint32_t fit, uint32_t nodes, uint32_t failed, const char *what);

enum tg_noroom_step {
    TG_NOROOM_STEP_WAIT,                /* wait in its grace for room in its domain */
    TG_NOROOM_STEP_REQUEUE,             /* evict every member gracefully; placed anew */
};

/* What a short gang whose replacements were found no room does under p:
 * requeue only when the policy says so and its loss was announced (it
 * stayed short SETTLE: not a gang being deleted whole). */
enum tg_noroom_step tg_loss_no_room(const struct tg_policy *p, int announced);

#endif
