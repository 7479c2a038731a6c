/* Elastic gangs: the desired size, growth and the extras preemption takes
 * first; see elastic.h. No config key: a PodGroup's spec.maxMember (or the
 * workload's elastic policy) drives it. */
#include "scheduler/elastic.h"
#include "scheduler/subgroup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t tg_elastic_max(const struct tg_grec *g)
{
    return g->pg && g->pg->max_member > 0 ? (uint32_t)g->pg->max_member : 0;
}

int tg_elastic_growing(const struct tg_grec *g)
{
    return g->nmembers >= tg_grec_min(g) && tg_grec_unplaced(g) > 0;
}

/* Lowest rank first, unranked after, then by key: who is kept at the cap. */
static int rank_first(const void *pa, const void *pb)
{
    const struct tg_pod *a = *(struct tg_pod *const *)pa, *b = *(struct tg_pod *const *)pb;
    uint64_t ra = a->rank ? a->rank : UINT64_MAX, rb = b->rank ? b->rank : UINT64_MAX;
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* Sub-group of pending pod p, -1 none (or not one to count). */
static int64_t sub_of_pod(const struct tg_podgroup *pg, const struct tg_pod *p)
{
    char why[8];
    int64_t k = tg_subgroup_of(pg, p, why, sizeof why);
    return k >= 0 && k < TG_MAX_SUBGROUPS ? k : -1;
}

/* The cap for a gang with sub-groups: v->pods (rank order) reordered so
 * that the first `room` keep every sub-group they start whole. First the
 * sub-groups below their minMember, by lowest pending rank, each taking the
 * members it lacks when room holds them all (else none: it waits whole);
 * then the lowest ranks left of the sub-groups that are whole and of no
 * sub-group. Returns how many are kept, or UINT32_MAX when out of memory
 * (the plain cap applies). */
static uint32_t cap_subgroups(const struct tg_grec *g, struct tg_gang *v, uint32_t room)
{
    const struct tg_podgroup *pg = g->pg;
    uint32_t nsg = pg->sub_size > 0 ? TG_MAX_SUBGROUPS : pg->nsubs, kept = 0;
    uint32_t *have = calloc(nsg + 1, sizeof *have), *pend = calloc(nsg + 1, sizeof *pend);
    uint8_t *state = calloc(nsg + 1, 1); /* 0 unseen, 1 whole, 2 left out */
    int64_t *of = malloc((v->npods + 1) * sizeof *of);
    struct tg_pod **out = malloc((v->npods + 1) * sizeof *out);
    uint8_t *take = calloc(v->npods + 1, 1);
    if (!have || !pend || !state || !of || !out || !take) {
        kept = UINT32_MAX;
        goto done;
    }
    for (uint32_t i = 0; i < g->nmembers; i++) {
        int64_t k = tg_subgroup_of_usage(pg, g->members[i]);
        if (k >= 0 && k < nsg)
            have[k]++;
    }
    for (uint32_t i = 0; i < v->npods; i++)
        if ((of[i] = sub_of_pod(pg, v->pods[i])) >= nsg)
            of[i] = -1;
    for (uint32_t i = 0; i < v->npods; i++)
        pend[of[i] < 0 ? nsg : of[i]]++;
    /* have[k] becomes what sub-group k lacks; in order of its lowest rank */
    for (uint32_t i = 0; i < v->npods; i++) {
        int64_t k = of[i];
        if (k < 0 || state[k])
            continue;
        uint32_t min = tg_subgroup_min(pg, (uint32_t)k);
        have[k] = have[k] < min ? min - have[k] : 0;
        state[k] = have[k] && (have[k] > pend[k] || have[k] > room - kept) ? 2 : 1;
        kept += state[k] == 1 ? have[k] : 0;
    }
    for (uint32_t i = 0; i < v->npods; i++)
        if (of[i] >= 0 && state[of[i]] == 1 && have[of[i]]) {
            take[i] = 1;
            have[of[i]]--;
        }
    for (uint32_t i = 0; i < v->npods && kept < room; i++)
        if (!take[i] && (of[i] < 0 || state[of[i]] == 1)) {
            take[i] = 1;
            kept++;
        }
    uint32_t n = 0;
    for (int pass = 1; pass >= 0; pass--)
        for (uint32_t i = 0; i < v->npods; i++)
            if (take[i] == pass)
                out[n++] = v->pods[i];
    memcpy(v->pods, out, v->npods * sizeof *out);
done:
    free(have), free(pend), free(state), free(of), free(out), free(take);
    return kept;
}

uint32_t tg_elastic_cap(const struct tg_grec *g, struct tg_gang *v)
{
    uint32_t max = tg_elastic_max(g);
    if (!max)
        return 0;
    uint32_t room = max > v->nbound ? max - v->nbound : 0;
    if (v->npods <= room)
        return 0;
    qsort(v->pods, v->npods, sizeof *v->pods, rank_first);
    uint32_t keep = tg_podgroup_has_subs(g->pg) ? cap_subgroups(g, v, room) : UINT32_MAX;
    keep = keep < room ? keep : room;
    uint32_t left = v->npods - keep;
    v->npods = keep;
    return left;
}

int tg_elastic_fallback(const struct tg_grec *g, struct tg_gang *v)
{
    uint32_t min = tg_grec_min(g);
    if (!tg_elastic_max(g) || !tg_podgroup_has_subs(g->pg) || g->nmembers || v->nbound ||
        v->npods <= min)
        return 0;
    qsort(v->pods, v->npods, sizeof *v->pods, rank_first);
    uint32_t keep = cap_subgroups(g, v, min);
    if (keep == UINT32_MAX || keep < min)
        return 0;
    v->npods = keep;
    return 1;
}

void tg_elastic_explain(const struct tg_grec *g, const char *why, char *buf, size_t n)
{
    uint32_t placed = g->nmembers, min = tg_grec_min(g), max = tg_elastic_max(g);
    uint32_t unplaced = tg_grec_unplaced(g);
    uint32_t room = max ? (max > placed ? max - placed : 0) : unplaced;
    uint32_t wait = room < unplaced ? room : unplaced, beyond = unplaced - wait;
    if (!why) {
        snprintf(buf, n, "elastic: %u placed of maxMember %u; %u member(s) beyond it wait", placed,
                 max, unplaced);
        return;
    }
    char more[96] = "";
    if (beyond)
        snprintf(more, sizeof more, "; %u beyond maxMember %u wait", beyond, max);
    snprintf(buf, n, "elastic: %u placed (minMember %u, desired %u)%s; %u wait for room in its "
                     "domain (growth does not preempt): %s",
             placed, min, max ? max : placed + unplaced, more, wait, why);
}

uint32_t tg_elastic_spare(const struct tg_grec *g)
{
    uint32_t min = tg_grec_min(g);
    return g->nmembers > min ? g->nmembers - min : 0;
}
