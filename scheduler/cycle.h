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
#include "util/arena.h"

struct tg_gang {
    const char *name;                   /* "ns/group", or the pod key for a gang of one */
    const struct tg_podgroup *pg;       /* NULL: a gang of one */
    struct tg_pod **pods;               /* pending members to place */
    uint32_t npods;
    uint32_t nbound;                    /* members already bound or assumed */
    uint32_t anchor;                    /* slot of a bound member, or TG_NONE */
    int32_t priority;
    int64_t created_ms;
};

enum tg_gang_status { TG_GANG_SCHEDULED, TG_GANG_UNSCHEDULABLE, TG_GANG_INVALID };

struct tg_result {
    uint8_t status;                     /* enum tg_gang_status */
    uint32_t nplaced;
    uint32_t *slot;                     /* per pods[i]: node slot or TG_NONE (malloc'ed) */
    int level;                          /* tree level of the chosen domain (0 = cluster) */
    uint32_t domain;                    /* chosen domain id */
    char reason[1024];
};

struct tg_sched {
    struct tg_cluster cluster;
    struct tg_policy policy;
    struct tg_arena scratch;
    uint64_t ncycles;
};

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

/* The gang's levels from its PodGroup and the policy: tree levels, required
 * <= preferred. Returns 0, or TG_EINVAL with the message in err. */
int tg_gang_levels(const struct tg_policy *p, const struct tg_podgroup *pg, int *required,
                   int *preferred, char *err, size_t n);
/* Queue order: higher priority first, then older, then by name. */
int tg_gang_cmp(const struct tg_gang *a, const struct tg_gang *b);

#endif
