/* The scheduler's state across cycles: policy, model, scratch; the gang's
 * levels and the queue order. Placement itself is in place.c. */
#include "scheduler/cycle.h"
#include "scheduler/counts.h"
#include "plugins/plugin.h"
#include "util/err.h"
#include "util/intern.h"

#include <stdio.h>
#include <string.h>

int tg_sched_init(struct tg_sched *s, const struct tg_policy *p)
{
    memset(s, 0, sizeof *s);
    s->policy = *p;
    uint32_t labels[TG_MAX_LEVELS];
    tg_policy_level_labels(p, labels);
    int rc = tg_cluster_init(&s->cluster, labels, p->nlevels);
    if (rc)
        return rc;
    return tg_plugins_attach(&s->cluster);
}

void tg_sched_free(struct tg_sched *s)
{
    tg_cluster_free(&s->cluster);
    tg_objstore_free(&s->store);
    tg_arena_free(&s->scratch);
    tg__counts_free(&s->counts);
    tg__reasons_free(&s->reasons);
}

int tg_sched_set_policy(struct tg_sched *s, const struct tg_policy *p)
{
    int same = p->nlevels == s->policy.nlevels;
    for (uint32_t i = 0; same && i < p->nlevels; i++)
        same = p->levels[i].label_id == s->policy.levels[i].label_id;
    if (!same) {
        uint32_t labels[TG_MAX_LEVELS];
        tg_policy_level_labels(p, labels);
        int rc = tg_cluster_set_levels(&s->cluster, labels, p->nlevels);
        if (rc)
            return rc;
    }
    s->policy = *p;
    tg__counts_flush(s->counts); /* counts read the policy (NUMA) */
    tg__reasons_flush(s->reasons); /* texts name its levels */
    return 0;
}

static int level_of(const struct tg_policy *p, uint32_t name, const char *field, int *out,
                    char *err, size_t n)
{
    int l = tg_policy_level(p, tg_str(name));
    if (l >= 0) {
        *out = l;
        return 0;
    }
    size_t k = (size_t)snprintf(err, n, "%s: unknown level \"%s\" (levels:", field, tg_str(name));
    for (uint32_t i = 0; i < p->nlevels && k < n; i++)
        k += (size_t)snprintf(err + k, n - k, " %s", p->levels[i].name);
    if (k < n)
        snprintf(err + k, n - k, ")");
    return TG_EINVAL;
}

int tg_gang_levels(const struct tg_policy *p, const struct tg_podgroup *pg, int *required,
                   int *preferred, char *err, size_t n)
{
    *required = 0;
    *preferred = p->default_preferred[0] ? tg_policy_level(p, p->default_preferred) : 0;
    if (!pg) {
        *preferred = (int)p->nlevels; /* a gang of one: best fit among the tightest domains */
        return 0;
    }
    if (pg->required && level_of(p, pg->required, "spec.topology.required", required, err, n))
        return TG_EINVAL;
    if (pg->preferred && level_of(p, pg->preferred, "spec.topology.preferred", preferred, err, n))
        return TG_EINVAL;
    if (*preferred < *required)
        *preferred = *required;
    if (*preferred < 0)
        *preferred = *required;
    return 0;
}

int tg_gang_cmp(const struct tg_gang *a, const struct tg_gang *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->created_ms != b->created_ms)
        return a->created_ms < b->created_ms ? -1 : 1;
    return strcmp(a->name, b->name);
}
