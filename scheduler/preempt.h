/* Preemption, topology first: which lower-priority gangs to evict so that a
 * gang that does not fit gets one domain of its required level.
 *
 * Rules (README "Preemption"):
 *   - only units of strictly lower priority are victims; a unit is a whole
 *     gang (every placed member, wherever it is) or one pod of no gang;
 *   - never a unit with a pod of system-critical priority (>= 2,000,000,000,
 *     TG_PRIO_SYSTEM_CRITICAL) for a gang below that (issue 19);
 *   - never a unit with a pod that has no controller owner unless
 *     preemption.evictBarePods; never a gang in the middle of its binds;
 *     never the gang named `exclude` (the one that evicted the preemptor:
 *     no thrash); Terminating pods are leaving anyway and cost nothing;
 *   - for each candidate domain (the required level, and the preferred
 *     level when it differs; a domain qualifies when the gang's counts cover
 *     it with every eligible unit gone), the cheapest set of units whose
 *     eviction lets the same placement code put the gang inside it: cost in
 *     order PodDisruptionBudget violations, then the highest victim priority,
 *     then extended resources (GPUs) evicted, then pods evicted, then the
 *     work lost (sum of the victims' ages); found greedily (kube-scheduler's
 *     reprieve, most important unit first) and then exactly by branch and
 *     bound where the domain has few candidate units;
 *   - an elastic gang's members (more than its minMember placed: elastic.h)
 *     are units of their own, one pod each; a set taking at most its spare
 *     members (those above minMember) evicts just them and comes before
 *     every set that evicts a whole unit, a gang or a pod of no gang (then
 *     PDBs, priority, ... as above); a set taking more evicts it whole;
 *   - the cheapest domain wins; equal costs go to the tighter level. */
#ifndef TG_SCHEDULER_PREEMPT_H
#define TG_SCHEDULER_PREEMPT_H

#include <stdint.h>

#include "scheduler/cycle.h"
#include "scheduler/gang.h"

/* The cost of a victim set, compared field by field. */
struct tg_pcost {
    uint32_t pdb;                       /* PodDisruptionBudget violations */
    uint8_t whole;                      /* 1: evicts a whole unit (a gang, a pod of no gang);
                                           0: only elastic gangs' extras (elastic.h) */
    int32_t maxprio;                    /* highest victim priority */
    int64_t ext;                        /* extended resources evicted (GPUs ...) */
    uint32_t pods;
    int64_t age_s;                      /* sum of victims' ages, seconds */
};

int tg_pcost_cmp(const struct tg_pcost *a, const struct tg_pcost *b);

/* One unit evicted whole. */
struct tg_victim {
    struct tg_grec *gang;               /* the gang, or NULL for one pod */
    struct tg_usage *pod;               /* gang == NULL: the pod (of no gang, or an elastic
                                           gang's member above its minMember) */
    int32_t priority;
    uint32_t npods;
    int64_t ext;
};

struct tg_pdbs {
    const struct tg_pdb **v;            /* the caller's objects */
    uint32_t n;
};

/* Reclaim between tenant queues (scheduler/reclaim.c): with a rule, the
 * victims are the gangs rule->victim accepts, whatever their priority (pods
 * of no gang are none), reprieved furthest-above-share last (*over: higher
 * is evicted first); every victim set found must pass rule->set_ok (the
 * per-queue totals it takes), else the domain is skipped with its reason.
 * The system-critical rule and the others above hold as for preemption. */
struct tg_reclaim_rule {
    int (*victim)(void *ud, const struct tg_grec *g, double *over);
    int (*set_ok)(void *ud, struct tg_grec *const *gangs, uint32_t n, char *buf, size_t len);
    void *ud;
};

struct tg_preempt_in {
    const struct tg_gang *gang;         /* the preemptor's placement view */
    int32_t priority;
    const char *exclude;                /* a gang key never to evict, or NULL */
    const struct tg_pdbs *pdbs;         /* may be NULL */
    int64_t now_ms;                     /* the clock, for ages */
    int evict_bare;                     /* policy preemption.evictBarePods */
    const struct tg_reclaim_rule *reclaim; /* NULL: preemption by priority */
    uint32_t queue;                     /* the preemptor's tenant queue (interned): preemption
                                           by priority takes only gangs of that queue (between
                                           queues only reclaim takes room); 0: queues off */
};

struct tg_preemption {
    uint32_t nvictims;                  /* 0: no set found; reason says why */
    struct tg_victim *victims;          /* malloc'ed */
    uint32_t domain;                    /* tree domain freed */
    int level;
    uint32_t *slots;                    /* per gang->pods[i]: its node once the victims are gone */
    const struct tg_usage **leaving;    /* Terminating pods under the domain the plan counts
                                           as gone (the preemptor waits for them too) */
    uint32_t nleaving;
    struct tg_pcost cost;
    uint32_t domains_tried;             /* domains evaluated */
    uint32_t fit_checks;                /* placement checks asked */
    uint32_t fit_runs;                  /* dry runs made (a check the counts settle is none:
                                           tg_whatif_fits) */
    uint8_t exact;                      /* the set was proven cheapest in its domain */
    uint8_t reclaim;                    /* planned by reclaim (in->reclaim), not priority */
    uint8_t timed;                      /* the verdict read the clock (victims reprieved in
                                           order of their ages): for a memo (pmemo.h) */
    char reason[1024];
};

/* Plans a preemption for in->gang (which did not fit). The model is as
 * before on return. Returns 0 or TG_ENOMEM; free out with
 * tg_preemption_free. */
int tg_preempt_plan(struct tg_sched *s, struct tg_gangs *gs, const struct tg_preempt_in *in,
                    struct tg_preemption *out);
void tg_preemption_free(struct tg_preemption *p);
/* Pods a victim set evicts, for messages: "ml/a (8 pods), ml/b-0", in at
 * most n - 1 bytes: whole victims, then " and 12 more" when they do not all
 * fit. */
void tg_preemption_describe(const struct tg_preemption *p, char *buf, size_t n);

#endif
