/* Sub-groups: membership (labels, ranks) and the joint arrangement of the
 * sub-groups inside one gang domain (see subgroup.h for the contract and why
 * the single-set answer is exact). No configuration key drives it: the
 * PodGroup says everything (spec.subGroups, spec.subGroupSize). */
#include "scheduler/subgroup.h"
#include "scheduler/cycle.h"
#include "model/workload.h"
#include "util/err.h"
#include "util/intern.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
enum { SYM_WINDOW = 16 };

struct solver {
    const struct tg_sgprob *p;
    uint32_t gang;
    uint32_t **used;                    /* per set: per domain, members assigned inside it */
    uint32_t *order;                    /* sub-groups searched (not fixed), deepest level
                                           first, then largest */
    uint32_t n;                         /* how many: order's length */
    uint32_t **list;                    /* per tree level: its domains under gang, best fit first */
    uint32_t *nlist;
    uint32_t *pick;                     /* per position in order: index chosen in its list */
    uint64_t *remain;                   /* per position x set: members still to place from there */
    uint64_t total;                     /* members of the sub-groups searched */
    uint64_t steps;
    uint64_t budget;
    struct tg_sgwhy *why;
    uint32_t *dom;
    uint32_t *odom;                     /* per outer group: the domain chosen (p->nouter) */
    uint32_t **oused;                   /* per set: per domain, what the outer groups chosen
                                           inside it need (their sub-groups not fixed) */
    uint32_t *oneed;                    /* per outer group x set: that need */
    uint32_t *eplaced, *eleft;          /* per entry (p->entry): optional sub-groups placed,
                                           and not yet decided */
    uint64_t oplaced, oleft;            /* their members, likewise */
    uint32_t nopt;                      /* optional sub-groups */
};

static uint32_t need_of(const struct tg_sgprob *p, uint32_t k, uint32_t s)
{
    return p->need[(size_t)k * p->nsets + s];
}

static uint64_t need_total(const struct tg_sgprob *p, uint32_t k)
{
    uint64_t n = 0;
    for (uint32_t s = 0; s < p->nsets; s++)
        n += need_of(p, k, s);
    return n;
}

/* The level a sub-group is placed at: its own, or the gang domain's when
 * that is as tight (the gang domain is then its domain). */
static uint32_t eff_level(const struct solver *v, uint32_t k)
{
    const struct tg_sgprob *p = v->p;
    uint32_t gl = p->t->dom[v->gang].level, l = p->level[k] > gl ? p->level[k] : gl;
    if (p->nouter && p->outer[k] != NONE && p->olevel[p->outer[k]] > l)
        l = p->olevel[p->outer[k]]; /* no looser than its outer group's */
    return l;
}

/* The level of outer group j's domain: its own, or the gang domain's. */
static uint32_t outer_level(const struct solver *v, uint32_t j)
{
    uint32_t gl = v->p->t->dom[v->gang].level;
    return v->p->olevel[j] > gl ? v->p->olevel[j] : gl;
}

/* Whether domain d is inside domain o (or is o). */
static int inside(const struct tg_tree *t, uint32_t d, uint32_t o)
{
    return t->dom[d].level >= t->dom[o].level && tg_tree_ancestor(t, d, t->dom[o].level) == o;
}

static int same_need(const struct solver *v, uint32_t a, uint32_t b)
{
    if (eff_level(v, a) != eff_level(v, b) ||
        (v->p->nouter && v->p->outer[a] != v->p->outer[b])) /* inside different domains */
        return 0;
    for (uint32_t s = 0; s < v->p->nsets; s++)
        if (need_of(v->p, a, s) != need_of(v->p, b, s))
            return 0;
    return 1;
}

static int order_cmp(const void *a, const void *b, void *ud)
{
    const struct solver *cmp_v = ud;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t lx = eff_level(cmp_v, x), ly = eff_level(cmp_v, y);
    if (lx != ly)
        return lx > ly ? -1 : 1;
    uint64_t nx = need_total(cmp_v->p, x), ny = need_total(cmp_v->p, y);
    if (nx != ny)
        return nx > ny ? -1 : 1;
    /* identical sub-groups next to each other (symmetry) */
    for (uint32_t s = 0; s < cmp_v->p->nsets; s++)
        if (need_of(cmp_v->p, x, s) != need_of(cmp_v->p, y, s))
            return need_of(cmp_v->p, x, s) > need_of(cmp_v->p, y, s) ? -1 : 1;
    return (x > y) - (x < y);
}

static uint64_t dom_total(const struct solver *v, uint32_t d)
{
    uint64_t n = 0;
    for (uint32_t s = 0; s < v->p->nsets; s++)
        n += v->p->count[s][d];
    return n;
}

/* The domains of one level in the order the search tries them: packed as
 * place.c's fill packs a gang's pods. Top down through the levels between
 * the gang domain's and theirs, their ancestors: those whose counts hold
 * every sub-group to place (v->total members) first, the tightest of them
 * first, then the others, the largest first; then, under one parent, the
 * tightest domain first (best fit). */
static int list_cmp(const void *a, const void *b, void *ud)
{
    const struct solver *cmp_v = ud;
    const struct tg_tree *t = cmp_v->p->t;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t lx = t->dom[x].level, gl = t->dom[cmp_v->gang].level;
    for (uint32_t l = gl + 1; l < lx && x != y; l++) {
        uint32_t ax = tg_tree_ancestor(t, x, l), ay = tg_tree_ancestor(t, y, l);
        if (ax == ay)
            continue;
        uint64_t cx = dom_total(cmp_v, ax), cy = dom_total(cmp_v, ay);
        int fx = cx >= cmp_v->total, fy = cy >= cmp_v->total;
        if (fx != fy)
            return fx ? -1 : 1;
        if (cx != cy)
            return (cx < cy) == fx ? -1 : 1;
        return ax < ay ? -1 : 1;
    }
    uint64_t cx = dom_total(cmp_v, x), cy = dom_total(cmp_v, y);
    if (cx != cy)
        return cx < cy ? -1 : 1; /* best fit: the tightest domain first */
    return (x > y) - (x < y);
}

/* The domains of tree level lvl under the gang domain whose nodes carry
 * lvl's label, in list_cmp's order; the gang domain alone when lvl is its
 * level. */
static int make_list(struct solver *v, struct tg_arena *a, uint32_t lvl)
{
    const struct tg_tree *t = v->p->t;
    uint32_t cap = t->ndom + 1, n = 0, top = 0;
    uint32_t *out = tg_arena_alloc(a, cap * sizeof *out);
    uint32_t *stack = tg_arena_alloc(a, cap * sizeof *stack);
    if (!out || !stack)
        return TG_ENOMEM;
    stack[top++] = v->gang;
    while (top) {
        uint32_t d = stack[--top];
        const struct tg_domain *dd = &t->dom[d];
        if (!dd->nnodes)
            continue;
        if (dd->level == lvl) {
            if (d == v->gang || dd->name)
                out[n++] = d;
            continue;
        }
        for (uint32_t i = 0; i < dd->nchild && dd->level < t->nlevels; i++)
            stack[top++] = dd->child[i];
    }
    qsort_r(out, n, sizeof *out, list_cmp, v);
    v->list[lvl] = out;
    v->nlist[lvl] = n;
    return 0;
}

/* Room for sub-group k in domain d given what is assigned: every domain
 * from d up to the gang domain keeps its count. */
static int fits(const struct solver *v, uint32_t k, uint32_t d)
{
    const struct tg_tree *t = v->p->t;
    for (uint32_t s = 0; s < v->p->nsets; s++) {
        uint32_t n = need_of(v->p, k, s);
        if (!n)
            continue;
        for (uint32_t a = d;; a = t->dom[a].parent) {
            if ((uint64_t)v->used[s][a] + n > v->p->count[s][a])
                return 0;
            if (a == v->gang)
                break;
        }
    }
    return 1;
}

static void apply(struct solver *v, uint32_t k, uint32_t d, int sign)
{
    const struct tg_tree *t = v->p->t;
    for (uint32_t s = 0; s < v->p->nsets; s++) {
        uint32_t n = need_of(v->p, k, s);
        for (uint32_t a = d; n; a = t->dom[a].parent) {
            v->used[s][a] = sign > 0 ? v->used[s][a] + n : v->used[s][a] - n;
            if (a == v->gang)
                break;
        }
    }
}

/* The most members of sub-group k's largest set a domain of its level
 * still holds (for the reason). */
static uint32_t most_room(const struct solver *v, uint32_t k)
{
    const struct tg_tree *t = v->p->t;
    uint32_t s0 = 0, best = 0, lvl = eff_level(v, k);
    for (uint32_t s = 1; s < v->p->nsets; s++)
        if (need_of(v->p, k, s) > need_of(v->p, k, s0))
            s0 = s;
    for (uint32_t i = 0; i < v->nlist[lvl]; i++) {
        uint32_t room = UINT32_MAX;
        for (uint32_t a = v->list[lvl][i];; a = t->dom[a].parent) {
            uint32_t r = v->p->count[s0][a] - v->used[s0][a];
            room = r < room ? r : room;
            if (a == v->gang)
                break;
        }
        best = room > best ? room : best;
    }
    return best;
}

static void dead_end(struct solver *v, uint32_t pos)
{
    if (v->why->sg != NONE && pos <= v->why->placed)
        return;
    uint32_t k = v->order[pos];
    v->why->sg = k;
    v->why->placed = pos;
    v->why->most = most_room(v, k);
    v->why->ndom = v->nlist[eff_level(v, k)];
}

/* Two domains of one level are interchangeable for what is left to place
 * (all of it at their level or above) when they share a parent and have the
 * same room left in every set. */
static int interchangeable(const struct solver *v, uint32_t d, uint32_t e)
{
    const struct tg_tree *t = v->p->t;
    if (t->dom[d].parent != t->dom[e].parent || v->p->nouter)
        return 0; /* outer groups: d may be one's domain, e not */
    for (uint32_t s = 0; s < v->p->nsets; s++)
        if (v->p->count[s][d] - v->used[s][d] != v->p->count[s][e] - v->used[s][e])
            return 0;
    return 1;
}

/* Whether the optional sub-groups placed meet each entry's minimum. */
static int opt_met(const struct solver *v)
{
    for (uint32_t e = 0; v->nopt && e < v->p->nentry; e++)
        if (v->eplaced[e] < v->p->emin[e])
            return 0;
    return !v->nopt || v->oplaced >= v->p->omust;
}

/* Where the search of position pos starts in its domain list: an identical
 * sub-group just before it took index pick (the same arrangements with the
 * two swapped are not tried again); one left out (pick NONE) beside an
 * identical optional one of the same entry: this one is left out too. */
static uint32_t search_start(const struct solver *v, uint32_t pos, uint32_t k, uint32_t e)
{
    if (!pos || !same_need(v, v->order[pos - 1], k))
        return 0;
    uint32_t pp = v->pick[pos - 1];
    if (pp != NONE)
        return pp;
    return e != NONE && v->p->entry[v->order[pos - 1]] == e ? v->nlist[eff_level(v, k)] : 0;
}

/* Depth-first over positions of v->order: 1 found, 0 none, -1 budget spent.
 * An optional sub-group (p->entry) is placed where it fits first, then left
 * out while its entry can still reach its minimum. */
static int search(struct solver *v, uint32_t pos)
{
    if (pos == v->n)
        return opt_met(v);
    const struct tg_sgprob *p = v->p;
    for (uint32_t s = 0; s < p->nsets; s++)
        if (v->remain[(size_t)pos * p->nsets + s] > p->count[s][v->gang] - v->used[s][v->gang]) {
            dead_end(v, pos);
            return 0;
        }
    uint32_t k = v->order[pos], lvl = eff_level(v, k);
    uint32_t e = v->nopt && p->entry[k] < p->nentry ? p->entry[k] : NONE;
    uint64_t nk = e != NONE ? need_total(p, k) : 0;
    if (e != NONE) {
        v->eleft[e]--;
        v->oleft -= nk;
    }
    uint32_t start = search_start(v, pos, k, e);
    uint32_t tried[SYM_WINDOW], ntried = 0;
    for (uint32_t i = start; i < v->nlist[lvl]; i++) {
        uint32_t d = v->list[lvl][i];
        if (++v->steps > v->budget)
            return -1;
        if (!fits(v, k, d) ||
            (p->nouter && p->outer[k] != NONE && !inside(p->t, d, v->odom[p->outer[k]])))
            continue;
        int twin = 0;
        for (uint32_t j = 0; j < ntried && !twin; j++)
            twin = interchangeable(v, d, tried[j]);
        if (twin)
            continue;
        tried[ntried++ % SYM_WINDOW] = d;
        ntried = ntried > SYM_WINDOW ? SYM_WINDOW : ntried;
        apply(v, k, d, +1);
        v->pick[pos] = i;
        v->dom[k] = d;
        if (e != NONE) {
            v->eplaced[e]++;
            v->oplaced += nk;
        }
        int rc = search(v, pos + 1);
        if (rc)
            return rc; /* found (the assignment stays), or out of budget */
        apply(v, k, d, -1);
        if (e != NONE) {
            v->eplaced[e]--;
            v->oplaced -= nk;
        }
    }
    if (e != NONE && v->eplaced[e] + v->eleft[e] >= p->emin[e] &&
        v->oplaced + v->oleft >= p->omust) { /* left out: it waits */
        v->pick[pos] = NONE;
        v->dom[k] = NONE;
        int rc = search(v, pos + 1);
        if (rc)
            return rc;
    }
    if (e != NONE) {
        v->eleft[e]++;
        v->oleft += nk;
    }
    dead_end(v, pos);
    return 0;
}

/* The members in no sub-group, and all the rest, fit the gang domain. */
static int fits_gang(const struct solver *v)
{
    for (uint32_t s = 0; s < v->p->nsets; s++)
        if (v->used[s][v->gang] > v->p->count[s][v->gang])
            return 0;
    return 1;
}

/* How many sub-groups like k0 domain d holds by count. */
static uint32_t alike_fit(const struct solver *v, uint32_t k0, uint32_t d)
{
    uint32_t fit = UINT32_MAX;
    for (uint32_t s = 0; s < v->p->nsets; s++) {
        uint32_t n = need_of(v->p, k0, s);
        uint32_t room = v->p->count[s][d] - (d == v->gang ? v->used[s][d] : 0);
        if (n && room / n < fit)
            fit = room / n;
    }
    return fit;
}

/* Pack in sub-groups, as place.c's fill packs pods: below domain d, the
 * child that holds all `want` left with the least to spare, else the one
 * holding the most; ties to the tighter in members (less room stranded),
 * then the lower id. */
struct alike_pack {
    struct solver *v;
    uint32_t lvl;                       /* the sub-groups' level */
    const uint32_t *agg;                /* per domain: sub-groups like them it holds */
    uint8_t *done;                      /* per domain: taken already */
    uint32_t placed;                    /* sub-groups given a domain so far */
};

static int pack_better(const struct alike_pack *q, uint32_t c, uint32_t b, uint32_t want)
{
    uint32_t ac = q->agg[c], ab = q->agg[b];
    int fc = ac >= want, fb = ab >= want;
    if (fc != fb)
        return fc;
    if (ac != ab)
        return fc ? ac < ab : ac > ab;
    uint64_t tc = dom_total(q->v, c), tb = dom_total(q->v, b);
    if (tc != tb)
        return tc < tb;
    return c < b;
}

/* Up to `want` sub-groups (in v->order from q->placed on) into domains of
 * q->lvl at or below d. Recursion depth: the levels between. */
static void pack_alike(struct alike_pack *q, uint32_t d, uint32_t want)
{
    struct solver *v = q->v;
    const struct tg_domain *dd = &v->p->t->dom[d];
    if (dd->level >= q->lvl) {
        for (uint32_t f = q->agg[d]; f && want && q->placed < v->n; f--, want--) {
            uint32_t k = v->order[q->placed++];
            v->dom[k] = d;
            apply(v, k, d, +1);
        }
        return;
    }
    while (want) {
        uint32_t best = NONE;
        for (uint32_t i = 0; i < dd->nchild; i++) {
            uint32_t c = dd->child[i];
            if (!q->done[c] && q->agg[c] && (best == NONE || pack_better(q, c, best, want)))
                best = c;
        }
        if (best == NONE)
            return;
        q->done[best] = 1;
        uint32_t before = q->placed;
        pack_alike(q, best, q->agg[best] < want ? q->agg[best] : want);
        want -= q->placed - before;
    }
}

/* Identical sub-groups at one level: how many fit in each domain. Exact
 * whatever the domains they take (counts at the levels between hold what
 * their domains hold), so they are packed as the plain path packs pods
 * (pack_alike): the gang's sub-groups in as few domains between the gang's
 * level and theirs as hold them, best fit first. Returns 1 found, 0 none, or
 * TG_ENOMEM. */
static int solve_alike(struct solver *v, struct tg_arena *a)
{
    const struct tg_tree *t = v->p->t;
    uint32_t k0 = v->order[0], lvl = eff_level(v, k0);
    uint32_t *agg = tg_arena_calloc(a, t->ndom + 1, sizeof *agg);
    uint8_t *done = tg_arena_calloc(a, t->ndom + 1, 1);
    if (!agg || !done)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < v->nlist[lvl]; i++) {
        uint32_t d = v->list[lvl][i], f = alike_fit(v, k0, d);
        agg[d] = f;
        for (uint32_t u = d; u != v->gang;) {
            u = t->dom[u].parent;
            agg[u] += f;
        }
    }
    struct alike_pack q = {v, lvl, agg, done, 0};
    pack_alike(&q, v->gang, v->n);
    uint32_t placed = q.placed;
    if (placed == v->n && fits_gang(v))
        return 1;
    v->why->sg = v->order[placed < v->n ? placed : v->n - 1];
    v->why->placed = placed;
    v->why->most = most_room(v, v->why->sg);
    v->why->ndom = v->nlist[lvl];
    v->why->rest = placed == v->n;
    return 0;
}

static int all_alike(const struct solver *v)
{
    for (uint32_t i = 1; i < v->n; i++)
        if (!same_need(v, v->order[0], v->order[i]))
            return 0;
    return 1;
}

/* Outer groups from j on, each given a domain of its level (best fit
 * first) that holds its fixed sub-groups' domains and, by count, what its
 * other sub-groups need; then the sub-groups are searched under that
 * choice. 1 found, 0 none, -1 budget spent. */
static int search_outer(struct solver *v, uint32_t j)
{
    const struct tg_sgprob *p = v->p;
    const struct tg_tree *t = p->t;
    if (j == p->nouter)
        return search(v, 0);
    uint32_t lvl = outer_level(v, j);
    const uint32_t *need = &v->oneed[(size_t)j * p->nsets];
    for (uint32_t i = 0; i < v->nlist[lvl]; i++) {
        uint32_t o = v->list[lvl][i], ok = 1;
        if (++v->steps > v->budget)
            return -1;
        for (uint32_t s = 0; s < p->nsets && ok; s++) /* room for it beside those chosen */
            for (uint32_t a = o; ok; a = t->dom[a].parent) {
                ok = (uint64_t)v->oused[s][a] + need[s] + v->used[s][a] <= p->count[s][a];
                if (a == v->gang)
                    break;
            }
        for (uint32_t k = 0; ok && p->fixed && k < p->nsg; k++)
            if (p->outer[k] == j && p->fixed[k] != NONE)
                ok = inside(t, v->dom[k], o) || inside(t, o, v->dom[k]);
        if (!ok)
            continue;
        v->odom[j] = o;
        for (int sign = 1; sign >= -1; sign -= 2) {
            for (uint32_t s = 0; s < p->nsets; s++)
                for (uint32_t a = o;; a = t->dom[a].parent) {
                    v->oused[s][a] += sign > 0 ? need[s] : -need[s];
                    if (a == v->gang)
                        break;
                }
            if (sign > 0) {
                int rc = search_outer(v, j + 1);
                if (rc > 0)
                    return rc; /* found: oused no longer matters */
                if (rc < 0)
                    return rc;
            }
        }
    }
    return 0;
}

static int solver_init(struct solver *v, const struct tg_sgprob *p, uint32_t gang,
                       struct tg_arena *a, uint32_t *dom, struct tg_sgwhy *why)
{
    const struct tg_tree *t = p->t;
    *v = (struct solver){.p = p, .gang = gang, .why = why, .dom = dom,
                         .budget = p->budget ? p->budget : TG_SUBGROUP_STEPS};
    v->used = tg_arena_alloc(a, (p->nsets + 1) * sizeof *v->used);
    v->order = tg_arena_alloc(a, (p->nsg + 1) * sizeof *v->order);
    v->pick = tg_arena_calloc(a, p->nsg + 1, sizeof *v->pick);
    v->remain = tg_arena_calloc(a, ((size_t)p->nsg + 1) * p->nsets + 1, sizeof *v->remain);
    v->list = tg_arena_calloc(a, TG_MAX_LEVELS + 1, sizeof *v->list);
    v->nlist = tg_arena_calloc(a, TG_MAX_LEVELS + 1, sizeof *v->nlist);
    if (!v->used || !v->order || !v->pick || !v->remain || !v->list || !v->nlist)
        return TG_ENOMEM;
    for (uint32_t s = 0; s < p->nsets; s++) {
        if (!(v->used[s] = tg_arena_calloc(a, t->ndom + 1, sizeof **v->used)))
            return TG_ENOMEM;
        v->used[s][gang] = p->rest ? p->rest[s] : 0;
    }
    for (uint32_t k = 0; k < p->nsg; k++)
        if (!p->fixed || p->fixed[k] == NONE)
            v->order[v->n++] = k;
    qsort_r(v->order, v->n, sizeof *v->order, order_cmp, v);
    for (uint32_t i = 0; i < v->n; i++)
        v->total += need_total(p, v->order[i]);
    if (p->entry && !p->nouter) { /* optional sub-groups: counted per entry */
        v->eplaced = tg_arena_calloc(a, p->nentry + 1, sizeof *v->eplaced);
        v->eleft = tg_arena_calloc(a, p->nentry + 1, sizeof *v->eleft);
        if (!v->eplaced || !v->eleft)
            return TG_ENOMEM;
        for (uint32_t i = 0; i < v->n; i++) {
            uint32_t e = p->entry[v->order[i]];
            if (e == NONE || e >= p->nentry)
                continue;
            v->nopt++;
            v->eleft[e]++;
            v->oleft += need_total(p, v->order[i]);
        }
    }
    /* what is still to place from each position on: the required ones */
    for (uint32_t i = v->n; i-- > 0;) {
        int req = !v->nopt || p->entry[v->order[i]] == NONE;
        for (uint32_t s = 0; s < p->nsets; s++)
            v->remain[(size_t)i * p->nsets + s] = v->remain[(size_t)(i + 1) * p->nsets + s] +
                                                  (req ? need_of(p, v->order[i], s) : 0);
    }
    for (uint32_t k = 0; k < p->nsg; k++) {
        uint32_t lvl = eff_level(v, k);
        int rc;
        if (!v->list[lvl] && (rc = make_list(v, a, lvl)))
            return rc;
    }
    if (p->nouter && (!(v->odom = tg_arena_calloc(a, p->nouter + 1, sizeof *v->odom)) ||
                      !(v->oused = tg_arena_calloc(a, p->nsets + 1, sizeof *v->oused)) ||
                      !(v->oneed = tg_arena_calloc(a, (size_t)p->nouter * p->nsets + 1,
                                                   sizeof *v->oneed))))
        return TG_ENOMEM;
    for (uint32_t s = 0; p->nouter && s < p->nsets; s++)
        if (!(v->oused[s] = tg_arena_calloc(a, t->ndom + 1, sizeof **v->oused)))
            return TG_ENOMEM;
    for (uint32_t k = 0; p->nouter && k < p->nsg; k++)
        for (uint32_t s = 0; p->outer[k] != NONE && s < p->nsets; s++)
            if (!p->fixed || p->fixed[k] == NONE)
                v->oneed[(size_t)p->outer[k] * p->nsets + s] += need_of(p, k, s);
    for (uint32_t j = 0; j < p->nouter; j++) {
        uint32_t lvl = outer_level(v, j);
        int rc;
        if (!v->list[lvl] && (rc = make_list(v, a, lvl)))
            return rc;
    }
    return 0;
}

/* The fixed sub-groups into their domains: 1 when each is inside the gang
 * domain (or holds it) and has room there, else 0 (why: which). */
static int place_fixed(struct solver *v)
{
    const struct tg_sgprob *p = v->p;
    const struct tg_tree *t = p->t;
    uint32_t gl = t->dom[v->gang].level;
    for (uint32_t k = 0; p->fixed && k < p->nsg; k++) {
        uint32_t f = p->fixed[k];
        if (f == NONE)
            continue;
        uint32_t fl = t->dom[f].level;
        uint32_t d = fl > gl ? f : v->gang;
        if (fl > gl ? tg_tree_ancestor(t, f, gl) != v->gang : tg_tree_ancestor(t, v->gang, fl) != f)
            d = NONE; /* the gang domain and the sub-group's are apart */
        if (d == NONE || !fits(v, k, d)) {
            v->why->sg = k;
            v->why->placed = 0;
            v->why->ndom = 1;
            v->why->most = 0;
            v->why->fixed = f;
            if (d != NONE) {
                uint32_t s0 = 0;
                for (uint32_t s = 1; s < p->nsets; s++)
                    s0 = need_of(p, k, s) > need_of(p, k, s0) ? s : s0;
                v->why->most = p->count[s0][d] - v->used[s0][d];
            }
            return 0;
        }
        apply(v, k, d, +1);
        v->dom[k] = d;
    }
    return 1;
}

int tg_subgroup_solve(const struct tg_sgprob *p, uint32_t gang, struct tg_arena *a, uint32_t *dom,
                      struct tg_sgwhy *why)
{
    *why = (struct tg_sgwhy){.sg = NONE, .fixed = NONE};
    struct tg_arena_mark mk = tg_arena_mark(a);
    struct solver v;
    int rc = solver_init(&v, p, gang, a, dom, why);
    if (rc)
        goto out;
    if (!fits_gang(&v)) {
        why->rest = 1;
        rc = 0;
    } else if (!place_fixed(&v)) {
        rc = 0;
    } else if (!v.n && !p->nouter) {
        rc = fits_gang(&v);
        why->rest = !rc;
        rc = 1;
    } else if (!p->nouter && !v.nopt && all_alike(&v) && v.n == p->nsg) {
        /* none fixed, none optional: counts decide */
        rc = solve_alike(&v, a);
    } else {
        rc = p->nouter ? search_outer(&v, 0) : search(&v, 0);
        if (rc < 0) {
            why->gave_up = 1;
            rc = 0;
        }
        if (rc > 0 && p->odom)
            memcpy(p->odom, v.odom, p->nouter * sizeof *v.odom);
    }
out:
    tg_arena_release(a, mk);
    return rc;
}

/* The rank key as a plain index, -1 none (see tg_pod_rank). */
static int64_t plain_rank(uint64_t rank)
{
    /* the rank decoded with the pod (model/workload.c): a plain index when
     * it came from topogang.io/rank, an LWS worker index or a completion
     * index; a JobSet's (job, index) pair or a Kubeflow replica type has no
     * single position a slice size could cut */
    if (!rank || (rank - 1) >> 32)
        return -1;
    return (int64_t)(rank - 1);
}

int64_t tg_pod_rank(const struct tg_pod *p)
{
    return plain_rank(p->rank);
}

/* What names a member's sub-group, from a pending pod or a placed record. */
struct member {
    const struct tg_label *labels;
    uint32_t nlabels;
    uint32_t owner_kind, owner_name;
    uint64_t rank;
};

/* A whole LWS's subgroup "<group>-<subgroup>" of member p (gang.c lists
 * pg->nouter groups of nsubs / nouter subgroups each, in index order): by
 * its group-index and subgroup-index labels; -1 none. */
static int64_t lws_nested_sub(const struct tg_podgroup *pg, const struct member *p)
{
    static const char *const keys[2] = {TG_LABEL_LWS_GROUP, TG_LABEL_LWS_SUBGROUP};
    unsigned long ix[2];
    for (int i = 0; i < 2; i++) {
        uint32_t key = tg_intern_lookup(keys[i], strlen(keys[i]));
        uint32_t v = key == TG_STR_NONE ? TG_STR_NONE : tg_labels_get(p->labels, p->nlabels, key);
        char *end;
        const char *txt = v && v != TG_STR_NONE ? tg_str(v) : "";
        ix[i] = strtoul(txt, &end, 10);
        if (!*txt || *end || *txt == '-')
            return -1;
    }
    uint32_t nper = pg->nouter ? pg->nsubs / pg->nouter : 0;
    if (ix[0] >= pg->nouter || ix[1] >= nper)
        return -1;
    return (int64_t)(ix[0] * nper + ix[1]);
}

/* A derived gang's sub-group (gang.c made pg->subs from the workload): the
 * pod's controller Job by name (a JobSet), its LWS group index, or its LWS
 * subgroup index; -1 when it is in none of them (a replicated job without a
 * level has no sub-groups; an LWS leader under LeaderExcluded). */
static int64_t derived_sub(const struct tg_podgroup *pg, const struct member *p)
{
    uint32_t v = 0;
    if (pg->sub_by == TG_SUB_BY_LWS_NESTED)
        return lws_nested_sub(pg, p);
    if (pg->sub_by == TG_SUB_BY_JOB) {
        v = p->owner_kind && !strcmp(tg_str(p->owner_kind), "Job") ? p->owner_name : 0;
    } else {
        const char *lk = pg->sub_by == TG_SUB_BY_LWS_SUBGROUP ? TG_LABEL_LWS_SUBGROUP : TG_LABEL_LWS_GROUP;
        uint32_t key = tg_intern_lookup(lk, strlen(lk));
        v = key == TG_STR_NONE ? TG_STR_NONE : tg_labels_get(p->labels, p->nlabels, key);
        /* groups (subgroups) are listed in index order, sub-group i named "i": no scan */
        char *end;
        unsigned long i = v && v != TG_STR_NONE ? strtoul(tg_str(v), &end, 10) : ULONG_MAX;
        if (i < pg->nsubs && pg->subs[i].name == v)
            return (int64_t)i;
    }
    for (uint32_t k = 0; v && v != TG_STR_NONE && k < pg->nsubs; k++)
        if (pg->subs[k].name == v)
            return k;
    return -1;
}

int tg_subgroup_volcano_name(const struct tg_podgroup *pg, const struct tg_label *l, uint32_t n,
                             char *buf, size_t len)
{
    for (uint32_t i = 0; i < pg->nsgpol; i++) {
        const struct tg_sgpolicy *sp = &pg->sgpol[i];
        if (!tg_labelsel_match(&sp->sel, l, n))
            continue;
        size_t at = (size_t)snprintf(buf, len, "%s", tg_str(sp->name));
        uint16_t k = 0;
        for (; k < sp->nkeys; k++) {
            uint32_t v = tg_labels_get(l, n, sp->keys[k]);
            if (v == TG_STR_NONE || !*tg_str(v))
                break;
            at += (size_t)snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, "-%s",
                                   tg_str(v));
        }
        if (k == sp->nkeys && at < len)
            return (int)i;
    }
    return -1;
}

/* A Volcano PodGroup's sub-group of member p: its index in pg->subs (the
 * gang layer lists each as a member shows it), -1 none. */
static int64_t volcano_sub(const struct tg_podgroup *pg, const struct member *p)
{
    char name[1024];
    if (tg_subgroup_volcano_name(pg, p->labels, p->nlabels, name, sizeof name) < 0)
        return -1;
    uint32_t id = tg_intern_lookup(name, strlen(name));
    for (uint32_t k = 0; id != TG_STR_NONE && k < pg->nsubs; k++)
        if (pg->subs[k].name == id)
            return k;
    return -1;
}

/* Sub-group of member p: k, -1 none, -2 no rank under subGroupSize, -3 a
 * label naming no sub-group (*label: its value). */
static int64_t sub_of(const struct tg_podgroup *pg, const struct member *p, uint32_t *label)
{
    if (pg->sub_size > 0) {
        int64_t r = plain_rank(p->rank);
        return r >= 0 ? r / pg->sub_size : -2;
    }
    if (pg->sub_by == TG_SUB_BY_VOLCANO)
        return volcano_sub(pg, p);
    if (pg->sub_by != TG_SUB_BY_LABEL) /* a derived gang's: a Job's or a group's members */
        return derived_sub(pg, p);
    const char *key = pg->api == TG_PG_KAI ? TG_LABEL_KAI_SUB_GROUP : TG_LABEL_SUB_GROUP;
    uint32_t v = tg_labels_get(p->labels, p->nlabels, tg_intern(key));
    if (v == TG_STR_NONE)
        return -1;
    for (uint32_t k = 0; k < pg->nsubs; k++)
        if (pg->subs[k].name == v)
            return k;
    *label = v;
    return -3;
}

int64_t tg_subgroup_of(const struct tg_podgroup *pg, const struct tg_pod *p, char *reason,
                       size_t n)
{
    struct member m = {p->labels, p->nlabels, p->owner_kind, p->owner_name, p->rank};
    uint32_t v = 0;
    int64_t k = sub_of(pg, &m, &v);
    if (k == -2)
        snprintf(reason, n,
                 "Pod %s: PodGroup %s sets spec.subGroupSize, but the pod has no rank (label "
                 TG_LABEL_RANK " or " TG_LABEL_JOB_INDEX ", a whole number)",
                 p->key, pg->key);
    if (k == -3)
        snprintf(reason, n,
                 "Pod %s: metadata.labels[%s]: \"%s\" is no sub-group of PodGroup %s "
                 "(spec.subGroups)", p->key,
                 pg->api == TG_PG_KAI ? TG_LABEL_KAI_SUB_GROUP : TG_LABEL_SUB_GROUP, tg_str(v),
                 pg->key);
    return k < -1 ? -2 : k;
}

int64_t tg_subgroup_of_usage(const struct tg_podgroup *pg, const struct tg_usage *u)
{
    struct member m = {u->labels, u->nlabels, u->owner_kind, u->owner_name, u->rank};
    uint32_t v = 0;
    int64_t k = sub_of(pg, &m, &v);
    return k < 0 || k >= TG_MAX_SUBGROUPS ? -1 : k;
}

uint32_t tg_subgroup_min(const struct tg_podgroup *pg, uint32_t k)
{
    if (pg->sub_size > 0)
        return (uint32_t)pg->sub_size;
    return k < pg->nsubs && pg->subs[k].min_member > 0 ? (uint32_t)pg->subs[k].min_member : 1;
}

const char *tg_subgroup_name(const struct tg_podgroup *pg, uint32_t k, char *buf, size_t n)
{
    if (pg->sub_size > 0 || k >= pg->nsubs)
        snprintf(buf, n, "%u", k);
    else
        snprintf(buf, n, "%s", tg_str(pg->subs[k].name));
    return buf;
}

/* ---- Volcano's minSubGroups ---------------------------------------------------- */

int tg_subgroup_has_min(const struct tg_podgroup *pg)
{
    if (!pg || pg->sub_by != TG_SUB_BY_VOLCANO)
        return 0;
    for (uint32_t i = 0; i < pg->nsgpol; i++)
        if (pg->sgpol[i].min_subs >= 0)
            return 1;
    return 0;
}

/* The minSubGroups of sub-group k's entry, -1 none. */
static int32_t min_subs_of(const struct tg_podgroup *pg, uint32_t k)
{
    if (k >= pg->nsubs || pg->subs[k].policy >= pg->nsgpol)
        return -1;
    return pg->sgpol[pg->subs[k].policy].min_subs;
}

int tg_subgroup_min_short(const struct tg_podgroup *pg, const uint32_t *placed,
                          const uint32_t *pend, char *reason, size_t n)
{
    for (uint32_t i = 0; i < pg->nsgpol; i++) {
        int32_t m = pg->sgpol[i].min_subs;
        if (m <= 0)
            continue;
        uint32_t whole = 0, some = 0, most = 0, short_k = NONE;
        for (uint32_t k = 0; k < pg->nsubs; k++) {
            if (pg->subs[k].policy != i)
                continue;
            uint32_t have = placed[k] + pend[k];
            some += have > 0;
            if (have >= tg_subgroup_min(pg, k)) {
                whole++;
            } else if (have > most || short_k == NONE) {
                most = have;
                short_k = k;
            }
        }
        if (whole >= (uint32_t)m)
            continue;
        char more[192] = "";
        if (short_k != NONE && most)
            snprintf(more, sizeof more, "; the fullest of the others, %s, has %u",
                     tg_str(pg->subs[short_k].name), most);
        snprintf(reason, n, "PodGroup %s: spec.subGroupPolicy[%u] (%s) has %u of its minSubGroups "
                 "%d sub-groups with their subGroupSize %d members (%u sub-group(s) have members%s)",
                 pg->key, i, tg_str(pg->sgpol[i].name), whole, m, pg->sgpol[i].size, some, more);
        return 1;
    }
    return 0;
}

/* Orders sub-groups for the fallback: by name (as the daemon and
 * `simulate` list them alike). */
static int name_cmp(const void *pa, const void *pb, void *ud)
{
    const struct tg_podgroup *pg = ud;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = strcmp(tg_str(pg->subs[a].name), tg_str(pg->subs[b].name));
    return c ? c : (a > b) - (a < b);
}

/* Per sub-group of v's PodGroup: placed members into placed[], pending
 * members of the view into pend[], each pod's sub-group into of[] (-1 none). */
static void min_tally(const struct tg_gang *v, uint32_t *placed, uint32_t *pend, int64_t *of)
{
    const struct tg_podgroup *pg = v->pg;
    for (uint32_t i = 0; v->members && i < v->nbound; i++) {
        int64_t k = tg_subgroup_of_usage(pg, v->members[i]);
        if (k >= 0 && k < pg->nsubs)
            placed[k]++;
    }
    char why[8];
    for (uint32_t i = 0; i < v->npods; i++) {
        of[i] = tg_subgroup_of(pg, v->pods[i], why, sizeof why);
        if (of[i] >= pg->nsubs)
            of[i] = -1;
        if (of[i] >= 0)
            pend[of[i]]++;
    }
}

/* Per entry: its sub-groups whole among the placed and the required
 * (keep[k]: pending, started or under no minSubGroups) into whole[]; the
 * unstarted pending ones into order[] (*n of them); their members, kept, into
 * *kept (from free_pods). */
static void min_required(const struct tg_podgroup *pg, const uint32_t *placed,
                         const uint32_t *pend, uint32_t free_pods, uint8_t *keep,
                         uint32_t *whole, uint32_t *order, uint32_t *n, uint32_t *kept)
{
    *n = 0;
    *kept = free_pods;
    for (uint32_t k = 0; k < pg->nsubs; k++) {
        if (!pend[k])
            continue;
        if (min_subs_of(pg, k) < 0 || placed[k]) {
            keep[k] = 1;
            *kept += pend[k];
        } else {
            order[(*n)++] = k;
        }
        whole[pg->subs[k].policy] += placed[k] + (keep[k] ? pend[k] : 0) >= tg_subgroup_min(pg, k);
    }
    for (uint32_t k = 0; k < pg->nsubs; k++) /* entries' whole placed sub-groups */
        if (!pend[k] && placed[k] >= tg_subgroup_min(pg, k) && pg->subs[k].policy < pg->nsgpol)
            whole[pg->subs[k].policy]++;
}

uint32_t tg_subgroup_min_opt(const struct tg_podgroup *pg, const uint32_t *placed,
                             const uint32_t *pend, uint32_t must, uint32_t free_pods,
                             uint8_t *opt, uint32_t *emin, uint32_t *omust)
{
    uint32_t n = 0, kept = 0, nopt = 0;
    uint8_t *keep = calloc(pg->nsubs + 1, 1);
    uint32_t *order = malloc((pg->nsubs + 1) * sizeof *order);
    memset(emin, 0, (pg->nsgpol + 1) * sizeof *emin);
    memset(opt, 0, pg->nsubs);
    *omust = 0;
    if (!keep || !order) {
        free(keep), free(order);
        return 0; /* none optional: the placement asks them all, as without */
    }
    min_required(pg, placed, pend, free_pods, keep, emin, order, &n, &kept);
    for (uint32_t i = 0; i < pg->nsgpol; i++) { /* whole already: still needed */
        int32_t m = pg->sgpol[i].min_subs;
        emin[i] = m > 0 && (uint32_t)m > emin[i] ? (uint32_t)m - emin[i] : 0;
    }
    for (uint32_t j = 0; j < n; j++) {
        uint32_t k = order[j];
        opt[k] = pend[k] >= tg_subgroup_min(pg, k);
        nopt += opt[k];
    }
    *omust = kept < must ? must - kept : !kept;
    free(keep), free(order);
    return nopt;
}

/* Which sub-groups the fallback keeps (keep[k] = 1) under an entry's
 * minSubGroups: per entry, the sub-groups already started, then unstarted
 * whole ones by name until minSubGroups are whole; then more, by name, until
 * the view holds `must` members (or one sub-group, when it would hold none).
 * Returns 1 when some sub-group with members in the view is left out. */
static int min_pick(const struct tg_podgroup *pg, const uint32_t *placed, const uint32_t *pend,
                    uint32_t must, uint32_t free_pods, uint8_t *keep, uint32_t *order)
{
    uint32_t n = 0, kept = 0, left = 0;
    uint32_t *whole = calloc(pg->nsgpol + 1, sizeof *whole);
    if (!whole)
        return 0;
    min_required(pg, placed, pend, free_pods, keep, whole, order, &n, &kept);
    qsort_r(order, n, sizeof *order, name_cmp, (void *)pg);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t k = order[j], i = pg->subs[k].policy;
        if (whole[i] < (uint32_t)pg->sgpol[i].min_subs) {
            keep[k] = 1;
            kept += pend[k];
            whole[i]++;
        }
    }
    for (uint32_t j = 0; j < n; j++) {
        uint32_t k = order[j];
        if (!keep[k] && (kept < must || !kept)) {
            keep[k] = 1;
            kept += pend[k];
        }
        left += !keep[k];
    }
    free(whole);
    return left > 0;
}

/* The fallback's choice when the placement found one (found[k], nfound of
 * them): the required sub-groups and those it placed. Returns 1 when some
 * sub-group with members in the view is left out. */
static int min_found(const struct tg_podgroup *pg, const uint32_t *placed, const uint32_t *pend,
                     const uint8_t *found, uint32_t nfound, uint8_t *keep)
{
    uint32_t left = 0;
    for (uint32_t k = 0; k < pg->nsubs; k++) {
        if (!pend[k])
            continue;
        keep[k] = min_subs_of(pg, k) < 0 || placed[k] || (k < nfound && found[k]);
        left += !keep[k];
    }
    return left > 0;
}

int tg_subgroup_min_cut(struct tg_gang *v, int fallback, const uint8_t *found, uint32_t nfound)
{
    const struct tg_podgroup *pg = v->pg;
    if (!tg_subgroup_has_min(pg) || !v->npods)
        return 0;
    uint32_t nsg = pg->nsubs, must = tg_gang_must(v), kept = 0, free_pods = 0;
    uint32_t *placed = calloc(nsg + 1, sizeof *placed), *pend = calloc(nsg + 1, sizeof *pend);
    uint32_t *order = malloc((nsg + 1) * sizeof *order);
    uint8_t *keep = calloc(nsg + 1, 1);
    int64_t *of = malloc((v->npods + 1) * sizeof *of);
    int cut = 0;
    if (!placed || !pend || !order || !keep || !of)
        goto done;
    min_tally(v, placed, pend, of);
    if (fallback) {
        for (uint32_t i = 0; i < v->npods; i++)
            free_pods += of[i] < 0;
        if (found ? !min_found(pg, placed, pend, found, nfound, keep)
                  : !min_pick(pg, placed, pend, must, free_pods, keep, order))
            goto done;
    } else { /* a sub-group short of its subGroupSize waits: the others go on */
        char why[8];
        if (tg_subgroup_min_short(pg, placed, pend, why, sizeof why))
            goto done; /* not ready whatever is placed: as it is (the reason names them all) */
        for (uint32_t k = 0; k < nsg; k++)
            keep[k] = min_subs_of(pg, k) < 0 || placed[k] + pend[k] >= tg_subgroup_min(pg, k);
    }
    for (uint32_t i = 0; i < v->npods; i++)
        kept += of[i] < 0 || keep[of[i]];
    if (kept == v->npods || kept < must || !kept)
        goto done; /* nothing left out, or too little left to be placed: as it is */
    uint32_t at = 0;
    for (uint32_t i = 0; i < v->npods; i++)
        if (of[i] < 0 || keep[of[i]])
            v->pods[at++] = v->pods[i];
    v->npods = at;
    cut = 1;
done:
    free(placed), free(pend), free(order), free(keep), free(of);
    return cut;
}
