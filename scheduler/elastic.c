/* Elastic gangs: the desired size, growth and the extras preemption takes
 * first; see elastic.h. No config key: a PodGroup's spec.maxMember (or the
 * workload's elastic policy) drives it. */
#include "scheduler/elastic.h"

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

uint32_t tg_elastic_cap(const struct tg_grec *g, struct tg_gang *v)
{
    uint32_t max = tg_elastic_max(g);
    if (!max)
        return 0;
    uint32_t room = max > v->nbound ? max - v->nbound : 0;
    if (v->npods <= room)
        return 0;
    qsort(v->pods, v->npods, sizeof *v->pods, rank_first);
    uint32_t left = v->npods - room;
    v->npods = room;
    return left;
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
