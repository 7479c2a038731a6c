/* Sub-groups of a gang (issue 20): which member belongs to which sub-group,
 * and the joint choice of one domain per sub-group inside the gang's domain.
 *
 * A PodGroup lists sub-groups (spec.subGroups: name, minMember, topology;
 * members join by the label topogang.io/sub-group) or slices the gang by rank
 * (spec.subGroupSize N with spec.subGroupTopology: ranks 0..N-1 are
 * sub-group "0", N..2N-1 "1", ...; a member's rank is its label
 * topogang.io/rank, else batch.kubernetes.io/job-completion-index); a
 * derived gang's are made by the gang layer (gang.h: a JobSet's child Jobs,
 * pods joining by their Job; a whole LWS's groups, by group-index), and so
 * are a Volcano PodGroup's (its spec.subGroupPolicy: pods join by their
 * labels, each sub-group listed when a member first shows it). Each
 * sub-group must be placed whole (at least its minMember) inside one domain
 * of its required level, inside the gang's domain; the gang stays all or
 * nothing.
 *
 * The choice is joint: tg_subgroup_solve decides, for one gang domain,
 * whether the domains below it can host every sub-group at once (a
 * bin-packing of sub-groups into domains whose capacities nest: a rack-level
 * sub-group and the NVLink-level ones inside that rack share its room). Per
 * pod set (members of one shape) a domain's capacity is its count (members
 * of that set its nodes hold, summed up the tree). With one pod set the
 * answer is exact: an arrangement fits iff, for every domain, the members
 * of the sub-groups placed inside it are at most its count (capacities on a
 * tree: filling the deepest first never strands room). Domains are taken
 * as place.c packs a gang's pods (best fit down the levels between the
 * gang's and the sub-groups'). Identical sub-groups at one level are counted
 * (how many fit per domain: exact, linear) and dealt out that way; others
 * are searched depth first, deepest level first, their domains in that
 * order, with pruning (room left at the gang domain, interchangeable
 * domains tried once) and a step bound. With
 * several pod sets the counts ignore sets competing for one node, so the
 * caller's placement verifies the arrangement. */
#ifndef TG_SCHEDULER_SUBGROUP_H
#define TG_SCHEDULER_SUBGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "model/cluster.h"
#include "model/objects.h"
#include "model/tree.h"
#include "util/arena.h"

#define TG_SUBGROUP_STEPS 200000        /* search steps per gang domain */

/* One gang domain's question. */
struct tg_sgprob {
    const struct tg_tree *t;
    uint32_t nsets;
    uint32_t *const *count;             /* per pod set: per domain id, members it holds */
    uint32_t nsg;
    const uint32_t *level;              /* per sub-group: tree level of its domain */
    const uint32_t *need;               /* nsg x nsets: members of each set to place */
    const uint32_t *rest;               /* per set: members in no sub-group; NULL: none */
    uint64_t budget;                    /* steps; 0: TG_SUBGROUP_STEPS */
    const uint32_t *fixed;              /* per sub-group: the domain its placed members hold
                                           (a running gang's replacements, an elastic gang's
                                           growth), UINT32_MAX none; NULL: none fixed. A fixed
                                           sub-group's members go there (the gang domain when
                                           that is inside it); not searched */
    /* Sub-groups inside sub-groups (KAI's parents with a topologyConstraint
     * of their own): nouter outer groups, each placed in one domain of its
     * level olevel[j] inside the gang domain, its sub-groups (outer[k] == j)
     * each inside it. Searched jointly: the outer groups' domains depth
     * first (best fit first), the sub-groups under each choice. 0: none. */
    uint32_t nouter;
    const uint32_t *outer;              /* per sub-group: its outer group, UINT32_MAX none */
    const uint32_t *olevel;             /* per outer group: tree level of its domain */
    uint32_t *odom;                     /* out, per outer group: its domain (NULL: not wanted) */
    /* Optional sub-groups (Volcano's minSubGroups, tg_subgroup_min_opt):
     * entry[k] is the entry of an optional sub-group k, NONE for a required
     * one; the search places each optional one or leaves it out (dom[k]
     * UINT32_MAX), keeping at least emin[i] of entry i's placed and their
     * members at least omust. Placing is tried first, so when all fit, all
     * are placed; the outer groups' search takes none. NULL: all required. */
    const uint32_t *entry;
    uint32_t nentry;
    const uint32_t *emin;               /* per entry */
    uint64_t omust;
};

/* Why no arrangement was found in a gang domain. */
struct tg_sgwhy {
    uint32_t sg;                        /* the sub-group that found no room, UINT32_MAX none */
    uint32_t placed;                    /* sub-groups the best partial arrangement placed */
    uint32_t most;                      /* most members of sg a domain held then */
    uint32_t ndom;                      /* domains of sg's level in the gang domain */
    uint8_t gave_up;                    /* the step bound ran out */
    uint8_t rest;                       /* the members in no sub-group did not fit */
    uint8_t unfilled;                   /* set by the caller: found, but its fill failed */
    uint32_t fixed;                     /* sg is fixed (tg_sgprob.fixed) to this domain, which
                                           has room for `most` of its members; UINT32_MAX: not */
};

/* Whether the domains under gang domain `gang` host every sub-group of p.
 * Returns 1 with dom[k] the domain of sub-group k (at p->level[k]; `gang`
 * itself when that level is not below it; a fixed one's domain, when it is
 * inside `gang`), 0 when none (also when a fixed domain and `gang` are
 * apart) (*why says which
 * sub-group was left without room), or TG_ENOMEM. Scratch from a; nothing
 * else changes. */
int tg_subgroup_solve(const struct tg_sgprob *p, uint32_t gang, struct tg_arena *a, uint32_t *dom,
                      struct tg_sgwhy *why);

/* The rank of a pod as a plain index (topogang.io/rank, an LWS worker
 * index, a completion index: the rank model/workload.c decoded); -1 when it
 * has none, or one that is not a single index (a JobSet job and completion
 * index, a Kubeflow replica type). */
int64_t tg_pod_rank(const struct tg_pod *p);

/* Sub-group of pod p in PodGroup pg: 0..n-1 (an index in pg->subs, or
 * rank / pg->sub_size); -1 when p is in none (no sub-group label: KAI's
 * kai.scheduler/subgroup-name for a KAI PodGroup); -2 when p names one pg
 * does not list, or has no rank under subGroupSize (reason written, naming
 * the pod and the field). */
int64_t tg_subgroup_of(const struct tg_podgroup *pg, const struct tg_pod *p, char *reason,
                       size_t n);
/* The same for a placed member's record (its labels, controller and rank
 * were copied from the pod): 0..TG_MAX_SUBGROUPS-1, or -1 when it is in
 * none (or names one pg does not list). */
int64_t tg_subgroup_of_usage(const struct tg_podgroup *pg, const struct tg_usage *u);
/* The sub-group a member with labels l (n of them) is in under a Volcano
 * PodGroup's spec.subGroupPolicy (struct tg_sgpolicy), listed in pg->subs
 * or not: its name into buf ("<policy>-<value>..."), and the index of the
 * entry that took it; -1 when in none (or buf is too short). */
int tg_subgroup_volcano_name(const struct tg_podgroup *pg, const struct tg_label *l, uint32_t n,
                             char *buf, size_t len);
/* The minMember of sub-group k of pg (spec.subGroupSize under a slice size). */
uint32_t tg_subgroup_min(const struct tg_podgroup *pg, uint32_t k);
/* The name of sub-group k of pg ("tp-3", or "3" under subGroupSize). */
const char *tg_subgroup_name(const struct tg_podgroup *pg, uint32_t k, char *buf, size_t n);
/* Volcano's minSubGroups (spec.subGroupPolicy[i].minSubGroups), read as
 * Volcano's scheduler reads it: the gang is ready when minMember members are
 * placed and, for each entry that gives minSubGroups m, at least m of the
 * entry's sub-groups are whole (subGroupSize members placed); each sub-group
 * is placed whole or not at all. So under such an entry a sub-group short of
 * its subGroupSize waits without holding the others back, and the whole ones
 * beyond m are extras: placed with the gang where an arrangement holds them
 * all, else the gang starts with those of an arrangement the search finds
 * with m or more (tg_sgprob.entry) and the rest join it later, each whole,
 * as room frees. An entry without minSubGroups keeps
 * topogang's stricter reading: every sub-group with members is needed.
 * 1 when pg is a Volcano PodGroup with an entry giving minSubGroups. */
int tg_subgroup_has_min(const struct tg_podgroup *pg);
/* 1 with the reason (naming the PodGroup, the entry and the numbers) when
 * an entry's minSubGroups cannot be met by its sub-groups' members, placed[k]
 * and pend[k] per sub-group k of pg->subs; 0 when every entry's can. */
int tg_subgroup_min_short(const struct tg_podgroup *pg, const uint32_t *placed,
                          const uint32_t *pend, char *reason, size_t n);
struct tg_gang;
/* Cuts the placement view v of a gang with minSubGroups (no-op for any other
 * gang): fallback 0, the pending members of sub-groups short of their
 * subGroupSize under such an entry leave the view (they wait); fallback 1
 * (after the view did not fit), only the sub-groups needed stay: started
 * ones, and the optional ones keep[k] marks (the arrangement the placement
 * found with some left out: tg_result.sgkeep, nkeep of them); keep NULL
 * (none found), unstarted whole ones by name up to each entry's
 * minSubGroups, then more, whole, until the view holds tg_gang_must(v)
 * members. Never cuts the view below tg_gang_must(v) members (the gang then
 * waits as it is). 1 when cut (v->pods compacted, v->npods lowered), 0 when
 * not. */
int tg_subgroup_min_cut(struct tg_gang *v, int fallback, const uint8_t *keep, uint32_t nkeep);
/* The sub-groups of a gang with minSubGroups that may wait (pending, none
 * placed, at their subGroupSize, under an entry giving minSubGroups):
 * opt[k] = 1; per entry i (nsgpol + 1 of them), emin[i]: how many of them it still needs whole
 * (beyond its placed and started ones); *omust: how many of their members
 * are still needed for `must` beside free_pods (members in no sub-group) and
 * the required ones' (at least 1 when those are none). placed[k], pend[k]:
 * per sub-group of pg->subs. Returns how many are optional. */
uint32_t tg_subgroup_min_opt(const struct tg_podgroup *pg, const uint32_t *placed,
                             const uint32_t *pend, uint32_t must, uint32_t free_pods,
                             uint8_t *opt, uint32_t *emin, uint32_t *omust);
/* 1 when pg declares sub-groups. */
static inline int tg_podgroup_has_subs(const struct tg_podgroup *pg)
{
    return pg && (pg->nsubs || pg->sub_size > 0);
}

#endif
