/* Per-node counts kept between placement tries (core-private).
 *
 * A try counts each pod set on every node: how many members fit there, and
 * the sums per topology domain. For a set whose count on a node depends only
 * on that node's room and Node object, the pod's requests, selector and
 * tolerations, and the policy (the plugins NodeResourcesFit,
 * TaintToleration, NodeAffinity, NodeState, NUMA; no inter-pod terms, host
 * ports, volumes, claims or required node-affinity terms), the counts are
 * the same from try to try except on the nodes that changed since: an entry
 * per such shape keeps them, and a try recounts only the nodes the model
 * lists as changed (tg_cluster_changed) and moves the domain sums by the
 * difference. Reservations (blocks) and a gang's own state (replacements'
 * home, within) are applied by the caller on top, or the set is counted in
 * full as before. Entries: the 32 shapes used last; a policy reload or a
 * rebuilt tree drops them. */
#ifndef TG_SCHEDULER_COUNTS_H
#define TG_SCHEDULER_COUNTS_H

#include <stdint.h>

#include "model/cluster.h"
#include "plugins/plugin.h"

struct tg__counts;

/* Rejected slots with one reason: what a try's reason histogram counts. */
struct tg__chist {
    uint8_t why;
    uint32_t arg;
    uint32_t n;                         /* slots; 0: a free entry */
};

/* One shape's counts as the full count makes them (blocks left out). */
struct tg__centry {
    uint32_t nslots, ndom;
    uint32_t *count;                    /* per slot */
    uint32_t *dcount, *delig;           /* per domain: sum of counts, nodes with count > 0 */
    uint32_t *leaf;                     /* per slot: its deepest domain when counted */
    uint8_t *rej;                       /* per slot: count 0 with a reason (why, arg) */
    uint8_t *why;
    uint32_t *arg;
    struct tg__chist *hist;             /* per distinct (why, arg) of rejected slots, kept as
                                           slots are recounted: the try's histogram without
                                           a walk over every slot (place.c hist_ready);
                                           entries with n 0 are free */
    uint32_t nhist, caphist;            /* nhist UINT32_MAX: lost to out of memory (walk
                                           the slots instead) */
};

/* Count of a set on slot (0 for a slot without Node or domain); on a
 * rejection *has = 1 and *why says why. */
typedef uint32_t (*tg__count_fn)(void *ud, uint32_t slot, struct tg_status *why, int *has);

/* Whether a pod's count depends only on what an entry keys (see above);
 * plugins: the active plugins (tg_plugins[] indices as bits) must all be
 * ones that read only the node. */
int tg__counts_cacheable(const struct tg_pod *p, uint64_t plugins);

/* The entry of p's shape under the plugins, brought up to date with c:
 * made by counting every slot, or by recounting the slots changed since
 * its last use (fn, ud). *k is created on first use. NULL: out of memory
 * (count without it). Valid until the next call or tg__counts_flush. */
const struct tg__centry *tg__counts_get(struct tg__counts **k, const struct tg_cluster *c,
                                        const struct tg_pod *p, uint64_t plugins, tg__count_fn fn,
                                        void *ud);

/* Drops every entry (a policy reload). NULL-safe. */
void tg__counts_flush(struct tg__counts *k);
/* Slots counted through fn since *k was made (for tests and benches). */
uint64_t tg__counts_evals(const struct tg__counts *k);
/* Frees *k and sets it NULL. */
void tg__counts_free(struct tg__counts **k);

#endif
