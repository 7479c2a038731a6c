/* Rank order (issue 20): a gang's members laid out so that consecutive ranks
 * sit on the same node, then in the same NVLink domain, rack, block, ...
 * and nodes are taken in topology order, so that a ring or a pipeline
 * crosses the fewest boundaries.
 *
 * It is an assignment, not a search: placement chooses the slots as it
 * always does (so rank order never makes a feasible gang unschedulable);
 * then, within each pod set (members of one shape, interchangeable), the
 * ranked members take the set's slots in topology order, lowest rank first.
 * For a gang of one shape every level is then crossed the fewest times
 * the chosen slots allow: the number of its domains used, less one.
 *
 * A member's rank is decoded with the pod (model/workload.h, p->rank).
 * Topology order: domains outermost first, each level's domains and a
 * domain's nodes in the order the tree made them (the order the nodes were
 * first seen). No configuration: a gang whose members carry no rank is
 * left as placed. */
#ifndef TG_SCHEDULER_RANK_H
#define TG_SCHEDULER_RANK_H

#include <stdint.h>

#include "config/policy.h"
#include "model/cluster.h"
#include "util/arena.h"

/* Sorts mem (indices into pods) by rank, unranked members after the ranked
 * ones, ties by index. Scratch from a (none when mem is already sorted).
 * Returns 0 or TG_ENOMEM (mem unchanged). */
int tg_rank_sort(struct tg_pod *const *pods, uint32_t *mem, uint32_t n, struct tg_arena *a);

/* One pod set: mem holds its members sorted by tg_rank_sort; slot[m] the
 * node slot placement assumed pods[m] on, or TG_NONE. The ranked placed
 * members take the same slots in topology order, lowest rank first; the
 * cluster's assumed records move with them (none is ever over-committed:
 * the moved ones are hidden, moved, shown). Allocates before it moves
 * anything: returns 0, or TG_ENOMEM with nothing changed. */
int tg_rank_layout(struct tg_cluster *c, struct tg_pod *const *pods, const uint32_t *mem,
                   uint32_t n, uint32_t *slot, struct tg_arena *a);

/* The same for members in a given order: who[0..n-1] (indices into pods,
 * those placed on a node of the tree) take their own slots in topology
 * order, who[0] the first. For members of several sub-groups
 * (scheduler/place.c): who lists each sub-group's members together, so that
 * each run of slots stays inside its sub-group's domain when those domains
 * hold equal shares. Returns 0, or TG_ENOMEM with nothing changed. */
int tg_rank_layout_as(struct tg_cluster *c, struct tg_pod *const *pods, const uint32_t *who,
                      uint32_t n, uint32_t *slot, struct tg_arena *a);

/* Topology order of two tree domains: <0 when a comes first, >0 when b
 * does, 0 when they are one or one holds the other. */
int tg_rank_domain_cmp(const struct tg_tree *t, uint32_t a, uint32_t b);

/* Consecutive-rank pairs of a placement and the boundaries they cross. */
struct tg_rank_report {
    uint32_t pairs;                     /* pairs of members consecutive in rank order */
    uint32_t nlevels;                   /* the tree's configured levels */
    uint32_t cross[TG_MAX_LEVELS + 1];  /* [l-1]: pairs in two domains of tree level l
                                           (1..nlevels), or on two nodes lacking its
                                           label; [nlevels]: pairs on two nodes */
};

/* The report over pods[i] with slot[i] != TG_NONE that carry a rank; when
 * ord is not NULL, ord[i] receives pods[i]'s position in rank order among
 * them (UINT32_MAX for the others). Returns 0 or TG_ENOMEM. */
int tg_rank_report(const struct tg_cluster *c, struct tg_pod *const *pods, const uint32_t *slot,
                   uint32_t n, struct tg_rank_report *out, uint32_t *ord);

/* The report by level name, as simulate and the metrics show it: the
 * policy's levels outermost first, then "node" (pairs on two nodes) unless
 * a level has that name. names and counts take TG_MAX_LEVELS + 1 entries;
 * returns how many were written. */
uint32_t tg_rank_by_level(const struct tg_policy *p, const struct tg_rank_report *r,
                          const char **names, uint32_t *counts);

#endif
