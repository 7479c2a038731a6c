/* The scheduling policy: topology levels, placement defaults, scoring
 * weights, gang and API settings, NUMA policy. Read from YAML (the ConfigMap
 * key config.yaml, or --config for simulate) with libyaml.
 *
 * One declarative table (policy.c) drives parsing, defaults, bounds, the
 * error messages and tg_policy_dump. Every error names the origin, the line
 * and the key: "policy.yaml:7: placement.strategy: must be one of pack,
 * spread (got \"packed\")". A policy with any error is rejected whole, so the
 * caller keeps the last good one. */
#ifndef TG_CONFIG_POLICY_H
#define TG_CONFIG_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "model/tree.h"
#include "util/strbuf.h"

/* gang.onMemberLoss: what a gang that ran complete and lost members becomes
 * once gang.memberLossGraceSeconds pass without its replacements bound. */
enum tg_loss_policy { TG_LOSS_KEEP, TG_LOSS_EVICT };
/* gang.onNoReplacement: what such a gang does meanwhile when no node in its
 * domain has room for a replacement: wait (the reason says why, in numbers)
 * or requeue (every member evicted with its own grace, placed anew whole). */
enum tg_noroom_policy { TG_NOROOM_WAIT, TG_NOROOM_REQUEUE };

enum tg_numa_policy { TG_NUMA_NONE, TG_NUMA_BEST_EFFORT, TG_NUMA_RESTRICTED,
                      TG_NUMA_SINGLE_NUMA_NODE };

struct tg_level {
    char name[64];
    char label[320];
    uint32_t label_id;                  /* interned node label key */
};

struct tg_policy {
    char scheduler_name[128];
    struct tg_level levels[TG_MAX_LEVELS];
    uint32_t nlevels;
    int strategy;                       /* TG_STRATEGY_PACK or _SPREAD */
    char default_preferred[64];         /* level name or "" */
    int64_t score_topology, score_binpack, score_numa;
    int64_t gang_timeout_s, bind_retries;
    int64_t reserve_after_s;            /* head gang waits this long, then reserves a domain; 0 off */
    int64_t member_loss_grace_s;        /* a running gang short of members waits this long for
                                           replacements before on_member_loss acts */
    int on_member_loss;                 /* enum tg_loss_policy */
    int on_no_replacement;              /* enum tg_noroom_policy */
    int preemption;                     /* a gang may evict lower-priority gangs */
    int evict_bare_pods;                /* ... and pods with no controller */
    int64_t reclaim_min_runtime_s;      /* a gang runs this long before a reclaim may take it
                                           (KAI's reclaimMinRuntime); 0 off */
    int allow_pg_priority;              /* a PodGroup's numeric spec.priority counts (capped
                                           at the highest non-system PriorityClass); else
                                           only PriorityClasses give priority */
    char default_queue[254];            /* the Queue of a gang that names none (issue 19) */
    int64_t usage_half_life_s;          /* time fairness: usage decays by half in this
                                           many seconds; 0 off (scheduler/fairshare.h) */
    int64_t api_qps, api_burst, bind_concurrency;
    int numa_default;                   /* enum tg_numa_policy */
    char numa_label[320];               /* node label naming a node's policy */
    uint32_t numa_label_id;
};

/* The defaults of DESIGN.md (zone/block/rack/nvlink-domain/node levels). */
void tg_policy_default(struct tg_policy *p);
/* Parses YAML text; fields not given keep their defaults. Returns 0, or
 * TG_EPARSE with one line per problem in errs ("origin:line: key: msg"). */
int tg_policy_parse(const char *yaml, size_t n, const char *origin, struct tg_policy *out,
                    struct tg_sb *errs);
int tg_policy_load_file(const char *path, struct tg_policy *out, struct tg_sb *errs);
/* The effective policy as YAML. */
void tg_policy_dump(const struct tg_policy *p, struct tg_sb *out);
/* Tree level (1-based; 0 = the whole cluster) of a level name, or -1. */
int tg_policy_level(const struct tg_policy *p, const char *name);
/* Tree level of an interned level name or node label key (a peer's form), or -1. */
int tg_policy_level_any(const struct tg_policy *p, uint32_t id);
/* Level label ids, for tg_cluster_init. */
void tg_policy_level_labels(const struct tg_policy *p, uint32_t *out);

#endif
