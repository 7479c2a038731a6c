/* The scheduling cycle for one gang: filter -> count -> place, all or nothing.
 *
 * struct tg_sched holds the cluster model, the policy in force and a scratch
 * arena reset every cycle. tg_sched_gang places every pending member of a
 * gang inside the tightest domain it can (preferred level first, relaxing up
 * to the required level), packed (best fit) or spread, and assumes them in the
 * cluster model; or places nothing and explains why with numbers. The daemon
 * and `simulate` call exactly this. */
#ifndef TG_SCHEDULER_CYCLE_H
#define TG_SCHEDULER_CYCLE_H

#include <stdint.h>

#include "config/policy.h"
#include "model/cluster.h"
#include "model/objstore.h"
#include "util/arena.h"

/* A gang as placement sees it (the gang layer, gang.h, assembles it). */
struct tg_gang {
    const char *name;                   /* "ns/group", or the pod key for a gang of one */
    const struct tg_podgroup *pg;       /* NULL: a gang of one */
    struct tg_pod **pods;               /* pending members to place */
    uint32_t npods;
    uint32_t nbound;                    /* members already bound or assumed */
    uint32_t anchor;                    /* slot of a bound member, or TG_NONE */
    struct tg_usage *const *members;    /* the placed members (nbound), or NULL: the rest is
                                         * placed around them, never on a failing node
                                         * (scheduler/loss.h) */
    uint32_t within;                    /* place only inside this tree domain, or TG_NONE */
    uint32_t min_member;                /* 0: from pg (1 without a PodGroup) */
    int32_t priority;
    int64_t created_ms;
};

/* Nodes under `domain` are kept for another gang (a reservation): placement
 * skips them with reason "reserved for <owner>". */
struct tg_block {
    uint32_t domain;
    uint32_t owner;                     /* interned gang key, for the reason */
};

#define TG_MAX_BLOCKS 8

enum tg_gang_status { TG_GANG_SCHEDULED, TG_GANG_UNSCHEDULABLE, TG_GANG_INVALID };

struct tg_result {
    uint8_t status;                     /* enum tg_gang_status */
    uint32_t nplaced;
    uint32_t *slot;                     /* per pods[i]: node slot or TG_NONE (malloc'ed) */
    int level;                          /* tree level of the chosen domain (0 = cluster) */
    uint32_t domain;                    /* chosen domain id: never one named "" (a label its
                                         * nodes lack); for a gang on one node lacking its
                                         * preferred level's label, the tightest real domain
                                         * holding that node (tg_tree_named) */
    char reason[1024];
    /* A gang with sub-groups (scheduler/subgroup.h), when scheduled: per
     * sub-group k, the tree level and domain it was placed in (malloc'ed,
     * nsub of them; NULL otherwise). */
    struct tg_subplace *sub;
    uint32_t nsub;
    /* A gang with minSubGroups that did not fit whole: per sub-group of its
     * PodGroup, 1 for those an arrangement found fits with some optional
     * ones left out (tg_subgroup_min_cut keeps them; malloc'ed, nsgkeep of
     * them; NULL: none found). */
    uint8_t *sgkeep;
    uint32_t nsgkeep;
};

struct tg_subplace {
    int level;                          /* tree level */
    uint32_t domain;                    /* tree domain id */
    uint32_t npods;                     /* members placed in it */
};

struct tg__counts;
struct tg__reasons;

struct tg_sched {
    struct tg_cluster cluster;
    struct tg_policy policy;
    struct tg_objstore store;           /* Namespaces, PVs, PVCs, StorageClasses, ResourceClaims */
    struct tg_arena scratch;
    uint64_t ncycles;
    /* Set by the caller for the next tg_sched_gang / what-if session only. */
    struct tg_block blocks[TG_MAX_BLOCKS];
    uint32_t nblocks;
    struct tg__counts *counts;          /* per-node counts kept between tries (counts.h), owned */
    struct tg__reasons *reasons;        /* failed tries' reason texts by their numbers
                                           (place.c), owned */
};

/* Core-private (place.c): drops the kept reason texts (a policy reload),
 * frees them and sets *m NULL, and counts the texts copied and made. */
void tg__reasons_flush(struct tg__reasons *m);
void tg__reasons_free(struct tg__reasons **m);
void tg__reasons_stats(const struct tg__reasons *m, uint64_t *hits, uint64_t *misses);

/* Copies the policy and builds an empty model. Returns 0 or TG_ENOMEM. */
int tg_sched_init(struct tg_sched *s, const struct tg_policy *p);
void tg_sched_free(struct tg_sched *s);
/* A new policy; the tree is rebuilt when the levels changed. */
int tg_sched_set_policy(struct tg_sched *s, const struct tg_policy *p);

/* Places g. On TG_GANG_SCHEDULED every pods[i] with r->slot[i] != TG_NONE is
 * assumed in the model (at least minMember - nbound of them); otherwise
 * nothing changed and r->reason says why. Returns 0 or TG_ENOMEM; free r with
 * tg_result_free. */
int tg_sched_gang(struct tg_sched *s, const struct tg_gang *g, struct tg_result *r);
void tg_result_free(struct tg_result *r);

/* minMember of g: g->min_member, else its PodGroup's, else 1. */
uint32_t tg_gang_min(const struct tg_gang *g);
/* Members that must be placed this cycle: minMember less those bound, at
 * least 1, at most npods. */
uint32_t tg_gang_must(const struct tg_gang *g);

/* ---- what-if sessions (preemption, reservation) ---------------------------
 * Counts g's pod sets on every node once; then records may be hidden and
 * shown (tg_whatif_hide), each updating only its own node's counts, and
 * questions asked: how many members a domain holds by count, and whether g
 * would really be placed inside a domain (a dry run: nothing stays assumed).
 * Nothing else may change the model while a session is open. */
struct tg_whatif;

/* Opens a session (own memory; s->scratch is untouched). Returns 0 or
 * TG_ENOMEM; *out freed with tg_whatif_end. */
int tg_whatif_begin(struct tg_sched *s, const struct tg_gang *g, struct tg_whatif **out);
void tg_whatif_end(struct tg_whatif **w);
void tg_whatif_hide(struct tg_whatif *w, struct tg_usage *u, int hide);
/* Members of g that domain d's counts hold (each pod set capped at its size). */
uint64_t tg_whatif_holds(struct tg_whatif *w, uint32_t d);
/* The node slots of the session's counts: per slot, 1 if some member of g
 * could go there now (filters pass and room for one). */
int tg_whatif_slot_fits(struct tg_whatif *w, uint32_t slot);
/* Would g be placed inside d now? *ok; when ok and slots != NULL, slots[i]
 * receives g->pods[i]'s node slot (TG_NONE for a member left out). Returns 0
 * or TG_ENOMEM. The model is as before on return. When g has no domain
 * constraints or sub-groups and d's counts hold fewer than
 * tg_gang_must(g) members, the answer is no without a dry run (counts only
 * fall as members are assumed); else a dry run assumes the members. */
int tg_whatif_fits(struct tg_whatif *w, uint32_t d, int *ok, uint32_t *slots);
/* Dry runs tg_whatif_fits made in this session (for tests and benches). */
uint64_t tg_whatif_runs(const struct tg_whatif *w);
/* Domains at tree level lvl whose counts hold at least tg_gang_must(g)
 * members, best first (pack: best fit; spread: most room); up to cap. Only
 * domains whose nodes carry the labels of lvl and of g's required level. */
uint32_t tg_whatif_domains(struct tg_whatif *w, uint32_t lvl, uint32_t *out, uint32_t cap);
/* The domain at tree level lvl whose counts hold the most members of g
 * (TG_NONE when the level has none whose nodes carry its label and the
 * required level's); *holds receives how many. */
uint32_t tg_whatif_best(struct tg_whatif *w, uint32_t lvl, uint64_t *holds);
uint32_t tg_whatif_must(const struct tg_whatif *w);
/* The reason text tg_sched_gang would give for g now ("needs 8 x ... in one
 * rack; best rack ... holds 5; ..."), into buf. */
void tg_whatif_explain(struct tg_whatif *w, char *buf, size_t n);

/* The gang's levels from its PodGroup and the policy: tree levels, required
 * <= preferred. Returns 0, or TG_EINVAL with the message in err. */
int tg_gang_levels(const struct tg_policy *p, const struct tg_podgroup *pg, int *required,
                   int *preferred, char *err, size_t n);
/* Queue order: higher priority first, then older, then by name. */
int tg_gang_cmp(const struct tg_gang *a, const struct tg_gang *b);

#endif
