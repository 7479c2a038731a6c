/* Elastic gangs: minMember <= placed <= desired (issue 20).
 *
 * A gang's desired size is its PodGroup's spec.maxMember (a derived gang's:
 * a PyTorchJob's spec.elasticPolicy.maxReplicas plus its other replicas,
 * model/workload.h); none means every member is wanted. All or nothing holds
 * for minMember; the members beyond it are extras:
 *   - placement takes at most desired - placed members in one cycle (the rest
 *     wait: "beyond maxMember"); once minMember are placed, the gang grows
 *     only inside the domains holding its members (place.c's home, up to its
 *     required level) and only as room frees (a cluster change wakes it, as
 *     any gang waiting in the unschedulable pool): growth never preempts and
 *     never reserves;
 *   - preemption (preempt.c) takes an elastic gang's members one by one, each
 *     a unit of its own, cheaper than any whole unit: a victim set that
 *     leaves every gang at its minMember or above beats every set that
 *     evicts a whole gang or a pod of no gang. Which members: those inside
 *     the domain being freed, youngest first (the reprieve keeps the older);
 *     a set taking more than the spare members evicts the gang whole.
 * One copy: the daemon and `simulate` reach this through the engine. */
#ifndef TG_SCHEDULER_ELASTIC_H
#define TG_SCHEDULER_ELASTIC_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler/gang.h"

/* g's desired size: its PodGroup's maxMember; 0 when it has none. */
uint32_t tg_elastic_max(const struct tg_grec *g);
/* 1 when g has minMember placed and members left to place: they are extras,
 * placed as room frees (never by preemption). */
int tg_elastic_growing(const struct tg_grec *g);
/* Cuts the placement view v of g to the desired size (v->npods at most
 * desired - placed), keeping the lowest ranks (model/workload.h), unranked
 * members after them, ties by name; v->pods is reordered then. With
 * sub-groups, a sub-group is never started below its own minMember: those
 * lacking members take what they lack first (lowest-ranked sub-group
 * first) or wait whole, then the lowest ranks of whole sub-groups fill the
 * rest. Returns how many pending members it left out. */
uint32_t tg_elastic_cap(const struct tg_grec *g, struct tg_gang *v);
/* An elastic gang with sub-groups is placed whole at its desired size or
 * not at all (each sub-group it starts is required); when that does not
 * fit, it starts at minMember instead: cuts v (nothing of g placed, more
 * than minMember in it) to minMember as tg_elastic_cap cuts to the desired
 * size (sub-groups whole, lowest ranks first). 1 when cut (then try v
 * again), 0 when not (no such gang, or whole sub-groups cannot make
 * minMember). */
int tg_elastic_fallback(const struct tg_grec *g, struct tg_gang *v);
/* The reason of a growing gang that did not grow now, into buf:
 * "elastic: 6 placed (minMember 4, desired 8); 2 wait for room: <why>", or
 * "elastic: 8 placed = maxMember 8; 2 member(s) beyond it wait". why: the
 * placement's reason (NULL: the gang is at its desired size). */
void tg_elastic_explain(const struct tg_grec *g, const char *why, char *buf, size_t n);
/* How many of g's placed members preemption may take one by one (elastic:
 * those above its minMember); 0 for a gang at or below minMember. */
uint32_t tg_elastic_spare(const struct tg_grec *g);

#endif
