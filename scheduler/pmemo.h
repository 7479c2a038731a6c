/* A memo of failed preemption and reclaim plans (issue 19's CPU target).
 *
 * On a saturated cluster most plans find no victim set, and many are made
 * again, unchanged, for the next gang of the same shape: the model has not
 * moved between them. A plan that found nothing is remembered with
 *   - the generations of everything a plan reads (the caller's: the cluster's
 *     changes to room, Nodes and records, the tree, placed gangs and their
 *     PodGroups, PriorityClasses and queues, pending pods, the fair shares,
 *     Queue objects, PDBs, namespaces and volumes, the policy), each bumped
 *     where its change is made;
 *   - the gang's planning signature: its pods one by one (equal pointers, or
 *     equal shapes, namespaces, ranks and labels where a plugin's selector
 *     looks: what placement itself treats as one pod set), its PodGroup's
 *     fields placement reads, minMember, priority, queue, the dominant
 *     resource (reclaim), the gang it may not evict and the reservations
 *     placement skips;
 *   - the clock, when the verdict read it (victims reprieved in order of
 *     age, a reclaim minimum runtime);
 * and the reason it gave. A plan asked with an equal key gets that reason
 * without planning: the same inputs, the same search, the same verdict.
 * A gang whose inputs are hard to compare exactly is never memoed
 * (tg_pmemo_usable): placed members or a nomination's domain, sub-groups,
 * a peer's PodGroup, pods with volumes, claims or inter-pod terms, more
 * than TG_PMEMO_PODS pods.
 *
 * Entries of older generations can never match again; at most TG_PMEMO_CAP
 * entries are kept, the oldest replaced first. Stored pods are pointers:
 * they are compared only while the generations are equal, i.e. while no
 * pending pod was set or deleted (TG__GEN_PENDING), so they are alive. */
#ifndef TG_SCHEDULER_PMEMO_H
#define TG_SCHEDULER_PMEMO_H

#include <stdint.h>

#include "scheduler/cycle.h"

#define TG_PMEMO_CAP 16
#define TG_PMEMO_PODS 64
#define TG_PMEMO_NGEN 12

/* What one plan is asked with. The pointers are the caller's, read during
 * the call only. */
struct tg_pmemo_key {
    uint64_t gen[TG_PMEMO_NGEN];        /* the caller's generations, compared whole */
    uint8_t reclaim;                    /* 1: reclaim between queues, 0: priority */
    int32_t priority;
    uint32_t queue;                     /* interned, 0: queues off */
    uint32_t dom;                       /* reclaim: the dominant resource */
    const char *exclude;                /* the gang it may not evict, NULL none */
    int64_t now_ms;
    const struct tg_gang *view;
    const struct tg_block *blocks;
    uint32_t nblocks;
    struct tg_cluster *cluster;         /* for the label keys plugins read */
};

struct tg_pmemo_ent;

struct tg_pmemo {
    struct tg_pmemo_ent *v[TG_PMEMO_CAP];
    uint32_t n, next;
    uint64_t hits, misses, puts, unusable;
};

/* 1 when k's gang can be memoed (see above); 0: plan it, remember nothing. */
int tg_pmemo_usable(struct tg_pmemo *m, const struct tg_pmemo_key *k);
/* The reason a failed plan with a key equal to k gave, or NULL (a miss).
 * k must be usable. */
const char *tg_pmemo_find(struct tg_pmemo *m, const struct tg_pmemo_key *k);
/* Remembers that the plan asked with k (its generations read after the plan,
 * which puts the model back as it was) found nothing, with reason. timed:
 * the verdict read k->now_ms (only an equal clock matches). Entries of
 * other generations go first; then the oldest. Out of memory: nothing kept. */
void tg_pmemo_put(struct tg_pmemo *m, const struct tg_pmemo_key *k, int timed, const char *reason);
/* Check builds (-DTG_PMEMO_VERIFY, docs/bench-replay.md "memo19"): a hit
 * is planned anyway and must have failed (failed != 0, rc 0) with the same
 * reason; else this aborts with both texts. */
void tg_pmemo_verify(int rc, int failed, const char *reason, const char *memo);
/* Forgets every entry. */
void tg_pmemo_clear(struct tg_pmemo *m);
void tg_pmemo_free(struct tg_pmemo *m);

#endif
