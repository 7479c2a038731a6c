/* Dividing the cluster among tenant queues (issue 19): a pure module, no I/O,
 * no clock of its own; it depends on util and model only (core rank 0).
 *
 * The tree is built from the decoded Queue objects (model/queues.h). Each
 * queue carries, per resource, its quota (deserved when demanded), limit
 * (never exceeded), over-quota weight and its over-quota tier (priority).
 * The caller feeds it
 *   - the capacity per resource (tg_fairshare_set_capacity),
 *   - each queue's demand: what its gangs ask for, running and waiting alike
 *     (KAI's "Request"; tg_fairshare_demand_add),
 *   - each queue's allocation, per bind and unbind (tg_fairshare_alloc_add),
 * and asks for the fair shares (tg_fairshare_update recomputes them only when
 * demand or capacity changed), admission against limits, the order between
 * queues and whether a reclaim may take resources from a queue.
 *
 * The division is KAI's (NVIDIA/KAI-Scheduler, plugins/proportion/
 * resource_division), per resource and per sibling group, top-down: each
 * queue first gets min(quota, demand, limit); what is left is divided among
 * the queues that want more, highest over-quota tier first, in proportion to
 * overQuotaWeight, each round handing out whole units (floor) and capped by
 * limit and demand, rounds repeating while a capped queue left room; the
 * fractions the floors held back go one unit each to the queues with the
 * largest fraction (then the oldest, then by name). A parent's fair share is
 * what its children divide. docs/queues.md has the details and the Volcano
 * mapping.
 *
 * Amounts are doubles in the model's units (model/resources.h: cpu in
 * millicores, memory in bytes, everything else in units; GPUs may be
 * fractional). Resources are named by the model's resource ids (tg_res_id).
 * Queues are named by index (0..tg_fairshare_count-1), stable for the tree's
 * life; tg_fairshare_find maps a name to it.
 *
 * Policy keys: queues.usageHalfLifeSeconds (time fairness, 0: off) and
 * queues.usageKValue (KAI's kValue) come in through struct tg_fairshare_opts;
 * queues.defaultQueue is the gang layer's. Single-threaded, like the core. */
#ifndef TG_SCHEDULER_FAIRSHARE_H
#define TG_SCHEDULER_FAIRSHARE_H

#include <stddef.h>
#include <stdint.h>

#include "model/queues.h"
#include "model/resources.h"

/* Resources one tree divides (those the queues name plus those the capacity
 * gives); set_capacity refuses more with TG_ERANGE. */
#define TG_FS_MAX_RES 32

struct tg_fairshare;

struct tg_fairshare_opts {
    double usage_half_life_s;           /* > 0: decayed usage feeds the division (KAI's kValue
                                           term) and the order; 0: off */
    double k_value;                     /* KAI's kValue, >= 0 (default 1): how much past usage
                                           lowers a queue's over-quota weight */
};

/* Builds a tree from n queue objects (not kept: names are copied as ids).
 * A queue that cannot take part (a cycle of parents, an unknown parent, a
 * duplicate name, an ancestor that cannot take part) is kept, marked
 * unusable, with its problem; a queue with a problem it can live with (a
 * child whose quotas exceed its parent's, a resource no node offers, the
 * decoder's own problem) takes part with the valid rest. Problems read
 * "spec.parentQueue: cycle team-a -> team-b -> team-a" (tg_fairshare_problem).
 * prev, when not NULL, is the tree this one replaces: capacity, demand,
 * allocation and usage of the queues of the same name carry over (a queue
 * whose parent changed carries its own and its ancestors are recomputed).
 * opts NULL means the defaults (time fairness off, kValue 1).
 * Returns 0 with *out (free with tg_fairshare_free), or TG_ENOMEM. */
int tg_fairshare_build(const struct tg_queue_obj *const *qs, uint32_t n,
                       const struct tg_fairshare_opts *opts, const struct tg_fairshare *prev,
                       struct tg_fairshare **out);
/* Time fairness across a rebuild: the decayed usage of prev's queues of
 * the same name (in the resources fs has columns for) and prev's clock go
 * to fs, whose demand and allocation the caller counts itself. Marks the
 * shares dirty. */
void tg_fairshare_carry_usage(struct tg_fairshare *fs, const struct tg_fairshare *prev);
/* Sets queue q's decayed usage of resource res (model id) to v
 * resource-seconds (a restart's saved usage); its ancestors' are theirs to
 * set. Marks the shares dirty. Nothing for a resource the tree does not
 * divide. */
void tg_fairshare_set_usage(struct tg_fairshare *fs, uint32_t q, uint32_t res, double v);
/* Frees *fs and sets it NULL; NULL is fine. */
void tg_fairshare_free(struct tg_fairshare **fs);

uint32_t tg_fairshare_count(const struct tg_fairshare *fs);
/* A number that moves whenever anything a reader of fs may see changes
 * (capacity, demand, allocation, usage, the shares recomputed): equal
 * numbers of one tree, equal answers (a memo of plans keys on it). */
uint64_t tg_fairshare_gen(const struct tg_fairshare *fs);
/* Index of the queue named `name` (interned), or -1. */
int tg_fairshare_find(const struct tg_fairshare *fs, uint32_t name);
uint32_t tg_fairshare_name(const struct tg_fairshare *fs, uint32_t q);
/* Parent's index, or -1 for a top-level (or unusable) queue. */
int tg_fairshare_parent(const struct tg_fairshare *fs, uint32_t q);
/* 1 when the queue takes part in the division and may admit gangs. */
int tg_fairshare_usable(const struct tg_fairshare *fs, uint32_t q);
/* "field: why" for the queue's problems joined by "; ", or NULL if none. */
const char *tg_fairshare_problem(const struct tg_fairshare *fs, uint32_t q);

/* Replaces the capacity with cap[0..n) (sorted or not; resources absent are
 * 0). Marks the shares dirty when any amount changed. TG_ERANGE when the tree
 * would divide more than TG_FS_MAX_RES resources (the first ones are kept). */
int tg_fairshare_set_capacity(struct tg_fairshare *fs, const struct tg_rq *cap, uint32_t n);
/* Adds (sign > 0) or removes (sign < 0) req[0..n) to queue q's demand and
 * each ancestor's: O(depth x n). Marks the shares dirty. Resources the tree
 * does not divide are ignored. */
void tg_fairshare_demand_add(struct tg_fairshare *fs, uint32_t q, const struct tg_rq *req,
                             uint32_t n, int sign);
/* Adds or removes req[0..n) to queue q's allocation and each ancestor's, per
 * bind or unbind: O(depth x n). Does not dirty the shares (they depend on
 * demand, as KAI's do). */
void tg_fairshare_alloc_add(struct tg_fairshare *fs, uint32_t q, const struct tg_rq *req,
                            uint32_t n, int sign);
/* Advances time fairness to now_ms: each queue's usage decays by
 * 2^(-dt/halfLife) and gains allocated x dt. O(queues x resources); marks
 * the shares dirty when time fairness is on. A no-op when it is off. */
void tg_fairshare_tick(struct tg_fairshare *fs, int64_t now_ms);

/* Recomputes the fair shares if demand, capacity or usage changed since the
 * last call: O(queues x resources x rounds). Returns 1 when it recomputed,
 * 0 when nothing had changed. */
int tg_fairshare_update(struct tg_fairshare *fs);

/* Per queue and resource (model id): quota, limit (TG_QUEUE_UNLIMITED),
 * demand, allocated, fair share (as of the last update), decayed usage in
 * resource-seconds. 0 for a resource the tree does not divide. */
double tg_fairshare_quota(const struct tg_fairshare *fs, uint32_t q, uint32_t res);
double tg_fairshare_limit(const struct tg_fairshare *fs, uint32_t q, uint32_t res);
double tg_fairshare_demand(const struct tg_fairshare *fs, uint32_t q, uint32_t res);
double tg_fairshare_allocated(const struct tg_fairshare *fs, uint32_t q, uint32_t res);
double tg_fairshare_share(const struct tg_fairshare *fs, uint32_t q, uint32_t res);
double tg_fairshare_usage(const struct tg_fairshare *fs, uint32_t q, uint32_t res);

/* Admission: may queue q place a gang asking req[0..n)? 1 when q and every
 * ancestor stay within their limit after it, 0 otherwise with the reason in
 * buf ("queue team-a at its limit: 60/64 nvidia.com/gpu, the gang asks 8";
 * buf NULL: no text); an unusable queue is refused with its problem. Fairness never refuses:
 * within limit a gang is admitted. */
int tg_fairshare_admit(const struct tg_fairshare *fs, uint32_t q, const struct tg_rq *req,
                       uint32_t n, char *buf, size_t len);

/* The order between queues (DRF): the largest allocated/fair-share ratio
 * over the resources (a resource allocated with no fair share counts as
 * infinite), plus, with time fairness, the largest decayed usage over fair
 * share (both as fractions of the capacity; resources with no fair share
 * left out). Lower goes first: the queue furthest below its fair share. */
double tg_fairshare_order_key(const struct tg_fairshare *fs, uint32_t q);
/* Comparator on two queues: -1 when a goes first, 1 when b does, 0 when the
 * same queue. Ties: the order key, then the higher tier, then the older,
 * then the name. */
int tg_fairshare_cmp(const struct tg_fairshare *fs, uint32_t a, uint32_t b);

/* Reclaim: may a gang of queue `reclaimer` (-1: any) take take[0..n) from
 * queue `victim`? 1 when the victim and each of its ancestors below the
 * queues' common ancestor (whose allocation a reclaim between its children
 * does not change) stay at or above their fair share in every resource
 * taken that some Queue divides (gives a quota, limit or weight: cpu and
 * memory of queues that name only GPUs are no reason to refuse); 0 otherwise with the reason in buf ("queue research would go below
 * its fair share: 40 - 17 < 24 nvidia.com/gpu"; buf NULL: no text, the
 * verdict alone, as a planner asks it per placed gang). A reclaimer at or under
 * the victim always may: that is preemption inside the queue (by priority),
 * and the victim's allocation does not change. */
int tg_fairshare_may_reclaim(const struct tg_fairshare *fs, int reclaimer, uint32_t victim,
                             const struct tg_rq *take, uint32_t n, char *buf, size_t len);

/* 1 when some Queue divides resource res: gives a quota, limit or weight of
 * it (and a Node offered it when the tree was built). */
int tg_fairshare_divides(const struct tg_fairshare *fs, uint32_t res);
/* 1 when resource res of queue q is worth showing (the Queue status,
 * /metrics, `simulate`'s queue table and JSON): some Queue divides it (gives
 * a quota, limit or weight of it) and q has a quota, limit, fair share or
 * allocation of it. pods and ephemeral-storage never. */
int tg_fairshare_shown(const struct tg_fairshare *fs, uint32_t q, uint32_t res);

/* An amount of resource res as reasons print it (tg_res_amount): "16" GPUs,
 * "0.5" of a GPU, "500m" cpu, "4Gi" memory; into buf, returned. */
static inline const char *tg_fairshare_amount(uint32_t res, double v, char *buf, size_t n)
{
    tg_res_amount(res, v, 0, buf, n);
    return buf;
}

#endif
