/* Topology-first gang preemption; see preempt.h.
 *
 * 1. Units: from the gang layer's victims index (gang.h: gangs with placed
 *    members filed by priority, and the placed records of no gang), only
 *    the gangs of lower priority (an elastic gang: each of its members,
 *    see split_members) and the pods of no gang, never every
 *    placed pod; each unit is judged eligible or not once. Only with
 *    PodDisruptionBudgets is every placed pod walked (their healthy pods
 *    are counted cluster-wide), and when the index lost an allocation.
 * 2. Candidate domains: in one what-if session on the preemptor, every
 *    eligible unit (and every Terminating pod) is hidden; the domains whose
 *    counts then hold the gang are the candidates (a packed domain is not
 *    filtered out before its victims are searched: KAI #1591).
 * 3. Per candidate domain: the units with a pod inside it are hidden, the
 *    placement dry run must succeed (else the domain is skipped with its
 *    numbers), then units are reprieved most important first while the
 *    gang still fits; with few units, branch and bound then proves the
 *    cheapest set or finds it. Each step hides or shows one unit, so only
 *    that unit's nodes are recounted.
 * 4. The cheapest (domain, set) wins. */
#include "scheduler/preempt.h"
#include "scheduler/elastic.h"
#include "scheduler/subgroup.h"
#include "model/quantity.h"
#include "util/arena.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/strbuf.h"
#include "util/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE TG_NONE
enum { MAX_DOMAINS = 32, EXACT_MAX_UNITS = 12, EXACT_BUDGET = 1000, EXACT_DOMAINS = 2,
       MAX_SKIPS = 3 };

/* One sub-group of an elastic gang whose members are units (split_members). */
struct subtally {
    uint32_t spare;                     /* members above the sub-group's own minMember */
    uint32_t n;                         /* scratch: its members in the set being weighed */
};

struct unit {
    uint64_t id;                        /* the gang or pod pointer: the map key */
    struct tg_grec *gang;
    struct tg_usage *pod;
    struct tg_usage **recs;             /* records to hide */
    uint32_t nrecs;
    uint32_t npods;                     /* pods evicted with it */
    uint8_t extra;                      /* one member of an elastic gang (more members than
                                           its minMember: elastic.h), a unit of its own:
                                           gang is its gang, pod the member */
    struct unit *whole;                 /* extra: its gang as one unit (never a candidate),
                                           what a set evicting more than spare of them costs */
    uint32_t spare;                     /* extra: members its gang may lose one by one */
    struct subtally *sub;               /* extra: its sub-group (subgroup.h), NULL none */
    uint32_t subspare;                  /* extra: members its sub-group may lose (above the
                                           sub-group's own minMember), UINT32_MAX: no sub-group */
    int32_t prio;
    int64_t ext, age_s;
    double over;                        /* reclaim: its queue above its share (evicted first) */
    uint32_t *pdbhits;                  /* per PDB: this unit's pods it selects (NULL: none) */
    uint8_t eligible;
    uint8_t hidden;
    uint32_t stamp;                     /* domain being collected */
};

struct plan {
    struct tg_sched *s;
    struct tg_gangs *gs;
    const struct tg_preempt_in *in;
    struct tg_arena a;
    struct tg_hmap byid;                /* unit id (8 bytes) -> struct unit * */
    struct unit **units;                /* eligible units */
    uint32_t nunits, capunits;
    struct tg_usage **leaving;          /* Terminating records */
    uint32_t nleaving, capleaving;
    int32_t *allowed;                   /* per PDB */
    uint32_t *healthy;
    struct tg_whatif *w;
    uint32_t nsystem;                   /* lower-priority units kept: a system-critical pod */
    const struct tg_grec *judged;       /* reclaim: the gang rule->victim just accepted, and
                                           its *over: make_unit asks no second time */
    double judged_over;
    uint32_t stamp;
    uint32_t checks;
    uint8_t timed;                      /* a domain got to its reprieve (ages order it) */
    /* best so far */
    struct unit **best;
    uint32_t nbest;
    struct tg_pcost bestcost;
    uint32_t bestdom;
    int bestlevel;
    uint8_t bestexact;
    struct tg_sb skips;
    uint32_t nskips;
};

int tg_pcost_cmp(const struct tg_pcost *a, const struct tg_pcost *b)
{
#define CMP(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
    CMP(pdb);
    CMP(whole);
    CMP(maxprio);
    CMP(ext);
    CMP(pods);
    CMP(age_s);
#undef CMP
    return 0;
}

static int64_t ext_of(const struct tg_usage *u)
{
    int64_t e = 0;
    for (uint8_t i = 0; i < u->nreq; i++)
        if (u->req[i].res >= TG_RES_NFIXED)
            e += u->req[i].val;
    return e;
}

/* ---- 1. units ------------------------------------------------------------------- */

static int pdb_index_hits(struct plan *x, const struct tg_usage *u, uint32_t *hits)
{
    const struct tg_pdbs *p = x->in->pdbs;
    int any = 0;
    for (uint32_t j = 0; p && j < p->n; j++) {
        const struct tg_pdb *b = p->v[j];
        if (b->ns == u->ns && b->has_selector && tg_labelsel_match(&b->sel, u->labels, u->nlabels)) {
            if (hits)
                hits[j]++;
            any = 1;
        }
    }
    return any;
}

/* Adds what evicting r costs (extended resources, age, PDB hits) to un.
 * Returns 0 or TG_ENOMEM. */
static int weigh(struct plan *x, struct unit *un, const struct tg_usage *r)
{
    const struct tg_preempt_in *in = x->in;
    uint32_t npdb = in->pdbs ? in->pdbs->n : 0;
    un->ext += ext_of(r);
    if (r->created_ms && r->created_ms < in->now_ms)
        un->age_s += (in->now_ms - r->created_ms) / 1000;
    if (npdb && pdb_index_hits(x, r, NULL)) {
        if (!un->pdbhits && !(un->pdbhits = tg_arena_calloc(&x->a, npdb, sizeof *un->pdbhits)))
            return TG_ENOMEM;
        pdb_index_hits(x, r, un->pdbhits);
    }
    return 0;
}

static int add_unit(struct plan *x, struct unit *un)
{
    if (tg_hmap_put(&x->byid, (const char *)&un->id, sizeof un->id, (uint64_t)(uintptr_t)un))
        return TG_ENOMEM;
    if (!un->eligible)
        return 0;
    if (tg_grow((void **)&x->units, &x->capunits, x->nunits, sizeof *x->units))
        return TG_ENOMEM;
    x->units[x->nunits++] = un;
    return 0;
}

/* An eligible elastic gang (elastic.h) is not a candidate as a whole: each
 * of its members is a unit of its own; a set taking more than
 * tg_elastic_spare of them costs (and evicts) the whole gang, `whole`.
 * Returns 0 or TG_ENOMEM. */
static int split_members(struct plan *x, struct unit *whole)
{
    struct tg_grec *g = whole->gang;
    int32_t *sub = NULL;
    struct subtally *tal = NULL;
    uint32_t nt = 0;
    if (tg_podgroup_has_subs(g->pg)) { /* a sub-group never goes below its own minMember */
        sub = tg_arena_alloc(&x->a, (g->nmembers + 1) * sizeof *sub);
        nt = g->pg->sub_size > 0 ? TG_MAX_SUBGROUPS : g->pg->nsubs;
        tal = tg_arena_calloc(&x->a, nt + 1, sizeof *tal);
        if (!sub || !tal)
            return TG_ENOMEM;
        for (uint32_t i = 0; i < g->nmembers; i++)
            if ((sub[i] = (int32_t)tg_subgroup_of_usage(g->pg, g->members[i])) >= (int32_t)nt)
                sub[i] = -1;
            else if (sub[i] >= 0)
                tal[sub[i]].n++;
        for (uint32_t k = 0; k < nt; k++) {
            uint32_t min = tg_subgroup_min(g->pg, k);
            tal[k].spare = tal[k].n > min ? tal[k].n - min : 0;
        }
    }
    for (uint32_t i = 0; i < g->nmembers; i++) {
        struct subtally *k = sub && sub[i] >= 0 ? &tal[sub[i]] : NULL;
        struct unit *xu = tg_arena_calloc(&x->a, 1, sizeof *xu);
        if (!xu)
            return TG_ENOMEM;
        *xu = (struct unit){.id = (uint64_t)(uintptr_t)g->members[i], .gang = g,
                            .pod = g->members[i], .nrecs = 1, .npods = 1, .extra = 1,
                            .whole = whole, .spare = tg_elastic_spare(g), .prio = whole->prio,
                            .sub = k, .subspare = k ? k->spare : UINT32_MAX,
                            .eligible = 1};
        xu->recs = &xu->pod;
        if (weigh(x, xu, xu->pod) || add_unit(x, xu))
            return TG_ENOMEM;
    }
    return 0;
}

/* Preemption by priority with tenant queues on takes only pods of no gang and
 * gangs of the preemptor's own queue (issue 19: between queues, reclaim). */
static int own_queue(const struct tg_preempt_in *in, const struct tg_grec *g)
{
    return !in->queue || !g || g->queue == in->queue;
}

/* Builds the unit of a gang or a lone pod (an elastic gang's: its members'). */
static struct unit *make_unit(struct plan *x, struct tg_grec *g, struct tg_usage *u)
{
    struct unit *un = tg_arena_calloc(&x->a, 1, sizeof *un);
    if (!un)
        return NULL;
    un->gang = g;
    un->pod = g ? NULL : u;
    un->id = g ? (uint64_t)(uintptr_t)g : (uint64_t)(uintptr_t)u;
    un->recs = g ? g->members : &un->pod;
    un->nrecs = un->npods = g ? g->nmembers : 1;
    un->prio = g ? g->priority : tg_gangs_usage_priority(x->gs, u);
    const struct tg_preempt_in *in = x->in;
    int judged = g && g == x->judged;
    if (judged)
        un->over = x->judged_over;
    int ok = (in->reclaim ? g && (judged || in->reclaim->victim(in->reclaim->ud, g, &un->over))
                          : un->prio < in->priority && own_queue(in, g)) &&
             !(g && in->exclude && !strcmp(g->key, in->exclude));
    for (uint32_t i = 0; i < un->nrecs; i++) {
        const struct tg_usage *r = un->recs[i];
        if (r->kind != TG_USAGE_BOUND)
            ok = 0; /* a gang being bound is not a victim */
        if (in->priority < TG_PRIO_SYSTEM_CRITICAL && ok &&
            tg_gangs_usage_priority(x->gs, r) >= TG_PRIO_SYSTEM_CRITICAL) {
            ok = 0; /* issue 19: the cluster's own components stay */
            x->nsystem++;
        }
        if (!r->owner_kind && !in->evict_bare)
            ok = 0;
        if (weigh(x, un, r))
            return NULL;
    }
    int split = ok && g && tg_elastic_spare(g) > 0;
    un->eligible = (uint8_t)(ok && !split);
    if (add_unit(x, un) || (split && split_members(x, un)))
        return NULL;
    return un;
}

/* The unit a placed record belongs to, NULL when none was made yet; *gp:
 * its gang (NULL: a pod on its own). */
static struct unit *find_unit(struct plan *x, struct tg_usage *u, struct tg_grec **gp)
{
    struct tg_grec *g = tg_gangs_of_usage(x->gs, u);
    if (g && u->gpos == UINT32_MAX)
        g = NULL; /* not a member (out of memory when it came): on its own */
    *gp = g;
    uint64_t id = (uint64_t)(uintptr_t)u, v; /* a pod on its own, or an elastic gang's member */
    if (tg_hmap_get(&x->byid, (const char *)&id, sizeof id, &v))
        return (struct unit *)(uintptr_t)v;
    id = (uint64_t)(uintptr_t)g;
    if (g && tg_hmap_get(&x->byid, (const char *)&id, sizeof id, &v))
        return (struct unit *)(uintptr_t)v;
    return NULL;
}

/* Makes the unit of u (its gang's, its own) unless made already. Returns 0
 * or TG_ENOMEM. */
static int unit_of(struct plan *x, struct tg_usage *u)
{
    struct tg_grec *g;
    return find_unit(x, u, &g) || make_unit(x, g, u) ? 0 : TG_ENOMEM;
}

static int leave(struct plan *x, struct tg_usage *u)
{
    if (tg_grow((void **)&x->leaving, &x->capleaving, x->nleaving, sizeof *x->leaving))
        return TG_ENOMEM;
    x->leaving[x->nleaving++] = u;
    return 0;
}

/* Walks every placed record: PodDisruptionBudgets' healthy pods, and with
 * units != 0 (the victims index was lost to a failed allocation) the units
 * and the Terminating records too. */
static int scan_model(struct plan *x, int units)
{
    const struct tg_cluster *c = &x->s->cluster;
    uint32_t pos = 0;
    const struct tg_hslot *hs;
    while ((hs = tg_hmap_next(&c->usage, &pos))) {
        struct tg_usage *u = (struct tg_usage *)(uintptr_t)hs->val;
        if (u->kind == TG_USAGE_NOMINATED || u->hidden)
            continue;
        if (u->deleting) {
            if (units && leave(x, u))
                return TG_ENOMEM;
            continue;
        }
        if (x->healthy && u->kind == TG_USAGE_BOUND)
            pdb_index_hits(x, u, x->healthy);
        if (units && unit_of(x, u))
            return TG_ENOMEM;
    }
    return 0;
}

/* Units from the victims index (gang.h): only gangs of lower priority (with
 * tenant queues, of the preemptor's queue) and the records of no gang, never
 * every placed pod. A unit is what the scan would make: a gang counts when
 * one of its members is visible. */
static int collect_indexed(struct plan *x)
{
    struct tg_placed_it it = {0};
    struct tg_grec *g;
    const struct tg_reclaim_rule *r = x->in->reclaim;
    int32_t below = r ? INT32_MAX : x->in->priority; /* reclaim: any priority */
    while ((g = tg_gangs_placed_next(x->gs, below, &it))) {
        double over;
        if (r && !r->victim(r->ud, g, &over))
            continue; /* reclaim: no unit for a gang its rule refuses (units_in skips it) */
        if (!r && !own_queue(x->in, g))
            continue; /* nor for another queue's gang (make_unit would refuse it) */
        uint32_t i = 0;
        while (i < g->nmembers && g->members[i]->hidden)
            i++;
        x->judged = r ? g : NULL;
        x->judged_over = r ? over : 0;
        /* no unit of g exists yet (the walk meets a gang once, before any
         * other unit is made): made at once, without unit_of's lookups */
        int rc = i < g->nmembers && !make_unit(x, g, g->members[i]) ? TG_ENOMEM : 0;
        x->judged = NULL;
        if (rc)
            return rc;
    }
    uint32_t pos = 0;
    struct tg_usage *u;
    while ((u = tg_gangs_loose_next(x->gs, &pos))) {
        if (u->hidden)
            continue;
        if (u->deleting ? leave(x, u) : unit_of(x, u))
            return TG_ENOMEM;
    }
    return 0;
}

static int collect_units(struct plan *x)
{
    uint32_t npdb = x->in->pdbs ? x->in->pdbs->n : 0;
    int lost = tg_gangs_index_lost(x->gs), rc;
    if (npdb && (!(x->healthy = tg_arena_calloc(&x->a, npdb, sizeof *x->healthy)) ||
                 !(x->allowed = tg_arena_calloc(&x->a, npdb, sizeof *x->allowed))))
        return TG_ENOMEM;
    if ((npdb || lost) && (rc = scan_model(x, lost)))
        return rc;
    if (!lost && (rc = collect_indexed(x)))
        return rc;
    for (uint32_t j = 0; j < npdb; j++)
        x->allowed[j] = tg_pdb_allowed(x->in->pdbs->v[j], x->healthy[j]);
    return 0;
}

static void hide_unit(struct plan *x, struct unit *un, int hide)
{
    if (un->hidden == !!hide)
        return;
    un->hidden = (uint8_t)!!hide;
    for (uint32_t i = 0; i < un->nrecs; i++)
        if (!un->recs[i]->deleting) /* Terminating ones are hidden throughout */
            tg_whatif_hide(x->w, un->recs[i], hide);
}

static void hide_leaving(struct plan *x, int hide)
{
    for (uint32_t i = 0; i < x->nleaving; i++)
        tg_whatif_hide(x->w, x->leaving[i], hide);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* What the gang's `must` smallest requests of resource r add up to (vals:
 * room for g->npods). */
static int64_t need_of(const struct tg_gang *g, uint32_t r, uint32_t must, int64_t *vals)
{
    for (uint32_t j = 0; j < g->npods; j++)
        vals[j] = tg_rq_get(g->pods[j]->req, g->pods[j]->nreq, r);
    qsort(vals, g->npods, sizeof *vals, cmp_i64);
    int64_t need = 0;
    for (uint32_t n = 0; n < must; n++)
        need += vals[n];
    return need;
}

/* Per domain of tree level lvl, the most of each resource res[0..nr) it
 * could offer: its nodes' free room (each at least 0) plus what the units
 * and Terminating pods there hold (a Terminating member counts once, as
 * leaving). room: nr rows of t->ndom + 1 entries, row k for res[k]. One
 * walk over the nodes and the units' records for all the resources. */
static void room_of(const struct plan *x, uint32_t lvl, const uint32_t *res, uint32_t nr,
                    uint32_t nslots, int64_t *room)
{
    const struct tg_cluster *c = &x->s->cluster;
    const struct tg_tree *t = &c->tree;
    uint32_t row = t->ndom + 1;
    memset(room, 0, nr * row * sizeof *room);
    for (uint32_t slot = 0; slot < nslots; slot++) {
        if (t->leaf[slot] == NONE)
            continue;
        uint32_t d = tg_tree_ancestor(t, t->leaf[slot], lvl);
        for (uint32_t k = 0; k < nr; k++) {
            int64_t f = tg_alloc(c, slot, res[k]) - tg_used(c, slot, res[k]);
            if (f > 0)
                room[k * row + d] += f;
        }
    }
    for (uint32_t u = 0; u <= x->nunits; u++) {
        struct tg_usage *const *recs = u < x->nunits ? x->units[u]->recs : x->leaving;
        uint32_t n = u < x->nunits ? x->units[u]->nrecs : x->nleaving;
        for (uint32_t j = 0; j < n; j++) {
            const struct tg_usage *rec = recs[j];
            if ((u < x->nunits && rec->deleting) || rec->hidden || rec->slot >= nslots ||
                t->leaf[rec->slot] == NONE)
                continue;
            uint32_t d = tg_tree_ancestor(t, t->leaf[rec->slot], lvl);
            for (uint32_t k = 0; k < nr; k++)
                room[k * row + d] += tg_rq_get(rec->req, rec->nreq, res[k]);
        }
    }
}

/* Reclaim: 1 when no domain at tree level lvl can hold the gang even with
 * every eligible unit and every Terminating pod gone, by resources alone.
 * For each resource the gang asks, its `must` smallest requests need that
 * much room inside one domain (NodeResourcesFit counts no member where it
 * does not fit), and a domain has at most room_of. A necessary condition,
 * O(nodes + units' pods) for all the resources together, settled before
 * the what-if session and its counts (most reclaims that cannot help stop
 * here). Returns 0 or 1; 0 as well on out of memory (the session decides). */
static int room_short(struct plan *x, uint32_t lvl)
{
    const struct tg_gang *g = x->in->gang;
    const struct tg_cluster *c = &x->s->cluster;
    const struct tg_tree *t = &c->tree;
    uint32_t must = tg_gang_must(g), nslots = c->nslots < t->nslots ? c->nslots : t->nslots;
    if (!must || must > g->npods || !t->ndom)
        return 0;
    struct tg_arena_mark m = tg_arena_mark(&x->a);
    int64_t *vals = tg_arena_alloc(&x->a, (g->npods + 1) * sizeof *vals);
    uint8_t seen[TG_RES_MAX] = {0}; /* each resource once: at its first pod */
    uint32_t res[TG_RES_MAX];
    int64_t need[TG_RES_MAX];
    uint32_t nr = 0;
    for (uint32_t i = 0; vals && i < g->npods; i++)
        for (uint8_t k = 0; k < g->pods[i]->nreq; k++) {
            uint32_t r = g->pods[i]->req[k].res;
            if (r >= TG_RES_MAX || seen[r] || r == TG_RES_PODS)
                continue;
            seen[r] = 1;
            int64_t n = need_of(g, r, must, vals);
            if (n > 0) {
                res[nr] = r;
                need[nr++] = n;
            }
        }
    int64_t *room = nr ? tg_arena_alloc(&x->a, nr * (t->ndom + 1) * sizeof *room) : NULL;
    int short_any = 0;
    if (room) {
        room_of(x, lvl, res, nr, nslots, room);
        for (uint32_t k = 0; k < nr && !short_any; k++) {
            const int64_t *rk = room + k * (t->ndom + 1);
            short_any = 1;
            for (uint32_t d = 0; d < t->ndom && short_any; d++)
                short_any = rk[d] < need[k];
        }
    }
    tg_arena_release(&x->a, m);
    return short_any;
}

/* ---- cost -------------------------------------------------------------------------- */

/* What set[i] evicts: itself; for an elastic gang's member, when set takes
 * more than its spare members, its whole gang (at the first of them; NULL
 * for the others). */
static struct unit *evicts(struct unit *const *set, uint32_t n, uint32_t i)
{
    struct unit *u = set[i];
    if (!u->extra)
        return u;
    uint32_t k = 0, first = i;
    int over = 0; /* a sub-group of its gang would go below its own minMember */
    for (uint32_t j = 0; j < n; j++)
        if (set[j]->extra && set[j]->gang == u->gang && set[j]->sub)
            set[j]->sub->n = 0;
    for (uint32_t j = 0; j < n; j++)
        if (set[j]->extra && set[j]->gang == u->gang) {
            k++;
            over |= set[j]->sub && ++set[j]->sub->n > set[j]->sub->spare;
            if (j < first)
                first = j;
        }
    if (k <= u->spare && !over)
        return u;
    return first == i ? u->whole : NULL;
}

static void cost_of(const struct plan *x, struct unit *const *set, uint32_t n, struct tg_pcost *c)
{
    memset(c, 0, sizeof *c);
    c->maxprio = INT32_MIN;
    uint32_t npdb = x->in->pdbs ? x->in->pdbs->n : 0;
    for (uint32_t j = 0; j < npdb; j++) {
        int64_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            const struct unit *u = evicts(set, n, i);
            m += u && u->pdbhits ? u->pdbhits[j] : 0;
        }
        if (m > x->allowed[j])
            c->pdb += (uint32_t)(m - x->allowed[j]);
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct unit *u = evicts(set, n, i);
        if (!u)
            continue; /* it goes with its whole gang */
        c->whole |= !u->extra;
        if (u->prio > c->maxprio)
            c->maxprio = u->prio;
        c->ext += u->ext;
        c->pods += u->npods;
        c->age_s += u->age_s;
    }
}

/* Most important to keep first: the reprieve order. */
static int keep_first(const void *pa, const void *pb)
{
    const struct unit *a = *(struct unit *const *)pa, *b = *(struct unit *const *)pb;
    int va = a->pdbhits != NULL, vb = b->pdbhits != NULL;
    if (va != vb)
        return va ? -1 : 1;
    if (a->extra != b->extra) /* elastic extras are evicted first */
        return a->extra ? 1 : -1;
    if (a->extra && a->subspare != b->subspare) /* those a sub-group can spare before */
        return a->subspare < b->subspare ? -1 : 1;
    if (a->over != b->over) /* reclaim: the queue furthest above its share gives first */
        return a->over < b->over ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->ext != b->ext)
        return a->ext > b->ext ? -1 : 1;
    if (a->nrecs != b->nrecs)
        return a->nrecs > b->nrecs ? -1 : 1;
    if (a->age_s != b->age_s)
        return a->age_s > b->age_s ? -1 : 1;
    /* by name, never by address: the same cluster gives the same victims
     * whatever order its objects came in */
    int c = strcmp(a->gang && !a->extra ? a->gang->key : a->pod->key,
                   b->gang && !b->extra ? b->gang->key : b->pod->key);
    if (c)
        return c;
    return (a->id > b->id) - (a->id < b->id);
}

/* ---- 3. one domain -------------------------------------------------------------------- */

static int fits(struct plan *x, uint32_t d, int *ok)
{
    x->checks++;
    return tg_whatif_fits(x->w, d, ok, NULL);
}

/* Eligible units with a pod under d, into *out (arena). */
static int units_in(struct plan *x, uint32_t d, struct unit ***out, uint32_t *n)
{
    const struct tg_cluster *c = &x->s->cluster;
    uint32_t cap = 64, k = 0;
    struct unit **v = tg_arena_alloc(&x->a, cap * sizeof *v);
    uint32_t *slots = tg_arena_alloc(&x->a, (c->tree.nslots + 1) * sizeof *slots);
    if (!v || !slots)
        return TG_ENOMEM;
    x->stamp++;
    uint32_t ns = tg_tree_slots_under(&c->tree, d, slots);
    for (uint32_t i = 0; i < ns; i++)
        for (struct tg_usage *u = c->nodes[slots[i]].pods; u; u = u->nnext) {
            if (u->kind == TG_USAGE_NOMINATED || u->deleting)
                continue;
            struct tg_grec *g;
            struct unit *un = find_unit(x, u, &g);
            if (!un || !un->eligible || un->stamp == x->stamp)
                continue;
            un->stamp = x->stamp;
            if (k == cap) {
                struct unit **nv = tg_arena_alloc(&x->a, 2 * cap * sizeof *nv);
                if (!nv)
                    return TG_ENOMEM;
                memcpy(nv, v, k * sizeof *v);
                v = nv;
                cap *= 2;
            }
            v[k++] = un;
        }
    *out = v;
    *n = k;
    return 0;
}

/* Reclaim: whether the rule accepts the victim set (its gangs' per-queue
 * totals); *ok 1 without a rule. */
static int set_ok(struct plan *x, struct unit *const *set, uint32_t n, int *ok, char *buf,
                  size_t len)
{
    const struct tg_reclaim_rule *r = x->in->reclaim;
    *ok = 1;
    if (!r || !n)
        return 0;
    struct tg_grec **gs = malloc(n * sizeof *gs);
    if (!gs)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        gs[i] = set[i]->gang;
    *ok = r->set_ok(r->ud, gs, n, buf, len);
    free(gs);
    return 0;
}

struct bb {
    struct plan *x;
    uint32_t d;
    struct unit **cand;
    uint32_t ncand;
    struct unit **inc;                  /* included (victims) */
    uint32_t ninc;
    struct unit **best;
    uint32_t nbest;
    struct tg_pcost bestcost;
    uint32_t budget;
    int rc;
};

/* Invariant on entry: hidden = inc u cand[i..]. */
static void bb_search(struct bb *b, uint32_t i)
{
    if (b->rc || !b->budget)
        return;
    struct tg_pcost c;
    cost_of(b->x, b->inc, b->ninc, &c);
    if (tg_pcost_cmp(&c, &b->bestcost) >= 0)
        return;
    int ok;
    b->budget--;
    if ((b->rc = fits(b->x, b->d, &ok)) || !ok)
        return;
    if (i == b->ncand) {
        char why[256];
        if ((b->rc = set_ok(b->x, b->inc, b->ninc, &ok, why, sizeof why)) || !ok)
            return; /* reclaim: it would take a queue below its share */
        memcpy(b->best, b->inc, b->ninc * sizeof *b->inc);
        b->nbest = b->ninc;
        b->bestcost = c;
        return;
    }
    struct unit *u = b->cand[i];
    hide_unit(b->x, u, 0); /* keep it */
    bb_search(b, i + 1);
    hide_unit(b->x, u, 1); /* evict it */
    b->inc[b->ninc++] = u;
    bb_search(b, i + 1);
    b->ninc--;
}

/* The greedy result of one domain. */
struct dres {
    uint32_t d;
    int lvl;
    struct unit **vict;                 /* malloc'ed */
    uint32_t nv;
    struct tg_pcost cost;
    uint8_t exact;
};

static int dres_cmp(const struct dres *a, const struct dres *b)
{
    int k = tg_pcost_cmp(&a->cost, &b->cost);
    if (k)
        return k;
    return (a->lvl < b->lvl) - (a->lvl > b->lvl); /* tighter first */
}

static int dres_qsort(const void *a, const void *b)
{
    return dres_cmp(a, b);
}

/* Greedy victims in domain d at level lvl (kube-scheduler's reprieve, most
 * important unit first) into *r; r->d stays NONE when even all of them do
 * not make room (the skip is described). */
static int greedy_domain(struct plan *x, uint32_t d, int lvl, struct dres *r)
{
    struct tg_arena_mark m = tg_arena_mark(&x->a);
    struct unit **cand;
    uint32_t n;
    int rc = units_in(x, d, &cand, &n), ok = 0;
    r->d = NONE;
    if (rc)
        return rc;
    for (uint32_t i = 0; i < n; i++)
        hide_unit(x, cand[i], 1);
    if ((rc = fits(x, d, &ok)))
        goto out;
    if (!ok) {
        if (x->nskips++ < MAX_SKIPS) {
            char path[512];
            const struct tg_policy *p = &x->s->policy;
            tg_sb_printf(&x->skips, "; %s %s holds %llu of %u even with its %u lower-priority unit(s) gone",
                         lvl ? p->levels[lvl - 1].name : "cluster",
                         tg_tree_path(&x->s->cluster.tree, d, path, sizeof path),
                         (unsigned long long)tg_whatif_holds(x->w, d), tg_gang_must(x->in->gang), n);
        }
        goto out;
    }
    x->timed = 1; /* the reprieve's order reads the victims' ages */
    qsort(cand, n, sizeof *cand, keep_first);
    uint32_t nv = 0;
    for (uint32_t i = 0; i < n; i++) {
        hide_unit(x, cand[i], 0);
        if ((rc = fits(x, d, &ok)))
            goto out;
        if (!ok) {
            hide_unit(x, cand[i], 1);
            cand[nv++] = cand[i]; /* victims collect at the front */
        }
    }
    for (uint32_t i = 0; i < n; i++)
        hide_unit(x, cand[i], 0);
    char why[256];
    if ((rc = set_ok(x, cand, nv, &ok, why, sizeof why)))
        goto out;
    if (!ok) {
        if (x->nskips++ < MAX_SKIPS) {
            char path[512];
            const struct tg_policy *p = &x->s->policy;
            tg_sb_printf(&x->skips, "; %s %s: %s", lvl ? p->levels[lvl - 1].name : "cluster",
                         tg_tree_path(&x->s->cluster.tree, d, path, sizeof path), why);
        }
        goto out;
    }
    struct unit **vict = malloc((nv + 1) * sizeof *vict);
    if (!vict) {
        rc = TG_ENOMEM;
        goto out;
    }
    memcpy(vict, cand, nv * sizeof *vict);
    *r = (struct dres){d, lvl, vict, nv, {0}, nv == 0};
    cost_of(x, vict, nv, &r->cost);
    tg_arena_release(&x->a, m);
    return 0;
out:
    for (uint32_t i = 0; i < n; i++)
        hide_unit(x, cand[i], 0);
    tg_arena_release(&x->a, m);
    return rc;
}

/* Branch and bound over the units of r's domain, heaviest first, seeded
 * with the greedy cost: r improves or is proven cheapest (r->exact). */
static int exact_domain(struct plan *x, struct dres *r)
{
    struct tg_arena_mark m = tg_arena_mark(&x->a);
    struct unit **cand;
    uint32_t n;
    int rc = units_in(x, r->d, &cand, &n);
    if (rc || !r->nv || n > EXACT_MAX_UNITS) {
        tg_arena_release(&x->a, m);
        return rc;
    }
    struct bb b = {.x = x, .d = r->d, .cand = cand, .ncand = n, .bestcost = r->cost,
                   .budget = EXACT_BUDGET};
    b.inc = tg_arena_alloc(&x->a, (n + 1) * sizeof *b.inc);
    b.best = tg_arena_alloc(&x->a, (n + 1) * sizeof *b.best);
    if (!b.inc || !b.best) {
        tg_arena_release(&x->a, m);
        return TG_ENOMEM;
    }
    qsort(cand, n, sizeof *cand, keep_first);
    for (uint32_t i = 0; i < n; i++)
        hide_unit(x, cand[i], 1);
    bb_search(&b, 0);
    for (uint32_t i = 0; i < n; i++)
        hide_unit(x, cand[i], 0);
    if (!b.rc && b.nbest && tg_pcost_cmp(&b.bestcost, &r->cost) < 0) {
        struct unit **v = malloc((b.nbest + 1) * sizeof *v);
        if (!v) {
            tg_arena_release(&x->a, m);
            return TG_ENOMEM;
        }
        memcpy(v, b.best, b.nbest * sizeof *v);
        free(r->vict);
        r->vict = v;
        r->nv = b.nbest;
        r->cost = b.bestcost;
    }
    r->exact = !b.rc && b.budget > 0;
    tg_arena_release(&x->a, m);
    return b.rc;
}

/* ---- the plan ---------------------------------------------------------------------------- */

static void plan_free(struct plan *x)
{
    tg_whatif_end(&x->w);
    tg_hmap_free(&x->byid);
    free(x->units);
    free(x->leaving);
    free(x->best);
    tg_sb_free(&x->skips);
    tg_arena_free(&x->a);
}

/* The slots of the gang with the chosen victims gone, and the victim list. */
static int finish(struct plan *x, struct tg_preemption *out)
{
    const struct tg_gang *g = x->in->gang;
    out->domain = x->bestdom;
    out->level = x->bestlevel;
    out->cost = x->bestcost;
    out->exact = x->bestexact;
    out->slots = malloc((g->npods + 1) * sizeof *out->slots);
    out->victims = calloc(x->nbest + 1, sizeof *out->victims);
    if (!out->slots || !out->victims)
        return TG_ENOMEM;
    hide_leaving(x, 1);
    for (uint32_t i = 0; i < x->nbest; i++)
        hide_unit(x, x->best[i], 1);
    int ok = 0;
    int rc = tg_whatif_fits(x->w, x->bestdom, &ok, out->slots);
    for (uint32_t i = 0; i < x->nbest; i++)
        hide_unit(x, x->best[i], 0);
    hide_leaving(x, 0);
    if (rc)
        return rc;
    if (!ok) { /* cannot happen: the search checked this set */
        snprintf(out->reason, sizeof out->reason, "preemption: the chosen set no longer fits");
        out->domain = NONE;
        return 0;
    }
    uint32_t nextra = 0;
    for (uint32_t i = 0; i < x->nbest; i++) {
        struct unit *u = evicts(x->best, x->nbest, i);
        if (!u)
            continue; /* evicted with its whole gang */
        nextra += u->extra;
        out->victims[out->nvictims++] = (struct tg_victim){u->extra ? NULL : u->gang, u->pod,
                                                           u->prio, u->npods, u->ext};
    }
    out->reclaim = x->in->reclaim != NULL;
    const struct tg_tree *t = &x->s->cluster.tree;
    if (!(out->leaving = calloc(x->nleaving + 1, sizeof *out->leaving)))
        return TG_ENOMEM;
    for (uint32_t i = 0; i < x->nleaving; i++) {
        uint32_t leaf = t->leaf[x->leaving[i]->slot];
        if (leaf != NONE && tg_tree_ancestor(t, leaf, t->dom[x->bestdom].level) == x->bestdom)
            out->leaving[out->nleaving++] = x->leaving[i];
    }
    char path[512], note[96] = "";
    const struct tg_policy *p = &x->s->policy;
    tg_tree_path(t, x->bestdom, path, sizeof path);
    if (nextra)
        snprintf(note, sizeof note, "; %u of them member(s) above an elastic gang's minMember%s",
                 nextra, nextra == out->nvictims ? " (no whole gang)" : "");
    const char *lv = x->bestlevel ? p->levels[x->bestlevel - 1].name : "cluster";
    if (!x->nbest)
        snprintf(out->reason, sizeof out->reason, "%s %s: %u Terminating pod(s) leaving", lv, path,
                 out->nleaving);
    else
        snprintf(out->reason, sizeof out->reason,
                 "%s %s: evicting %u unit(s) of priority <= %d (%u pods, %lld extended resources)%s%s",
                 lv, path, out->nvictims, x->bestcost.maxprio, x->bestcost.pods,
                 (long long)x->bestcost.ext, x->bestcost.pdb ? "; violates a PodDisruptionBudget" : "",
                 note);
    return 0;
}

int tg_preempt_plan(struct tg_sched *s, struct tg_gangs *gs, const struct tg_preempt_in *in,
                    struct tg_preemption *out)
{
    memset(out, 0, sizeof *out);
    out->domain = NONE;
    struct plan x = {.s = s, .gs = gs, .in = in, .bestdom = NONE};
    struct dres res[2 * MAX_DOMAINS];
    uint32_t nres = 0;
    const struct tg_gang *g = in->gang;
    int required, preferred, rc;
    char err[256];
    if (tg_gang_levels(&s->policy, g->pg, &required, &preferred, err, sizeof err)) {
        snprintf(out->reason, sizeof out->reason, "%s", err);
        return 0;
    }
    if ((rc = collect_units(&x)))
        goto done;
    if (!x.nunits && !x.nleaving) {
        snprintf(out->reason, sizeof out->reason,
                 "preemption cannot help: no gang or pod of lower priority to evict");
        if (x.nsystem)
            snprintf(out->reason + strlen(out->reason), sizeof out->reason - strlen(out->reason),
                     " (%u unit(s) hold pods of system-critical priority >= %d, never preempted by "
                     "a gang below it)", x.nsystem, TG_PRIO_SYSTEM_CRITICAL);
        goto done;
    }
    if (in->reclaim && room_short(&x, (uint32_t)required)) {
        snprintf(out->reason, sizeof out->reason,
                 "reclaim cannot help: no %s has room for the gang even with all %u unit(s) it "
                 "may take gone", required ? s->policy.levels[required - 1].name : "cluster",
                 x.nunits);
        goto done;
    }
    if ((rc = tg_whatif_begin(s, g, &x.w)))
        goto done;
    /* 2. candidate domains: counts with every eligible unit gone */
    hide_leaving(&x, 1);
    for (uint32_t i = 0; i < x.nunits; i++)
        hide_unit(&x, x.units[i], 1);
    uint32_t doms[2][MAX_DOMAINS], ndoms[2] = {0, 0};
    int lv[2] = {required, preferred > required ? preferred : -1};
    for (int k = 0; k < 2; k++)
        if (lv[k] >= 0)
            ndoms[k] = tg_whatif_domains(x.w, (uint32_t)lv[k], doms[k], MAX_DOMAINS);
    if (!ndoms[0] && !x.nunits) {
        snprintf(out->reason, sizeof out->reason,
                 "preemption cannot help: no gang or pod of lower priority to evict");
    } else if (!ndoms[0]) {
        uint64_t h;
        char path[512];
        const struct tg_policy *p = &s->policy;
        uint32_t best = tg_whatif_best(x.w, (uint32_t)required, &h);
        if (required && best == NONE) /* no node has the level's label */
            snprintf(out->reason, sizeof out->reason, "preemption cannot help: no %s in the cluster",
                     p->levels[required - 1].name);
        else
            snprintf(out->reason, sizeof out->reason,
                     "preemption cannot help: even with all %u lower-priority unit(s) gone, the best "
                     "%s%s%s holds %llu of %u", x.nunits,
                     required ? p->levels[required - 1].name : "cluster", required ? " " : "",
                     required ? tg_tree_path(&s->cluster.tree, best, path, sizeof path) : "",
                     (unsigned long long)h, tg_gang_must(g));
    }
    for (uint32_t i = 0; i < x.nunits; i++)
        hide_unit(&x, x.units[i], 0);
    if (!ndoms[0])
        goto done_leaving;
    /* 3. greedy per domain, then exact on the cheapest few */
    for (int k = 1; k >= 0; k--)
        for (uint32_t i = 0; i < ndoms[k] && !rc; i++) {
            if (lv[k] == 0 && nres)
                break; /* the whole cluster only when no tighter domain can be freed */
            out->domains_tried++;
            if (!(rc = greedy_domain(&x, doms[k][i], lv[k], &res[nres])) && res[nres].d != NONE)
                nres++;
        }
    if (rc)
        goto done_leaving;
    qsort(res, nres, sizeof *res, dres_qsort);
    for (uint32_t i = 0; i < nres && i < EXACT_DOMAINS && !rc; i++)
        rc = exact_domain(&x, &res[i]);
    if (rc)
        goto done_leaving;
    hide_leaving(&x, 0);
    if (!nres) {
        snprintf(out->reason, sizeof out->reason, "preemption cannot help%s",
                 x.skips.len ? tg_sb_str(&x.skips) : "");
        goto done;
    }
    qsort(res, nres < EXACT_DOMAINS ? nres : EXACT_DOMAINS, sizeof *res, dres_qsort);
    x.best = malloc((res[0].nv + 1) * sizeof *x.best);
    if (!x.best) {
        rc = TG_ENOMEM;
        goto done;
    }
    memcpy(x.best, res[0].vict, res[0].nv * sizeof *x.best);
    x.nbest = res[0].nv;
    x.bestcost = res[0].cost;
    x.bestdom = res[0].d;
    x.bestlevel = res[0].lvl;
    x.bestexact = res[0].exact;
    rc = finish(&x, out);
    goto done;
done_leaving:
    hide_leaving(&x, 0);
done:
    out->timed = x.timed;
    out->fit_checks = x.checks;
    out->fit_runs = x.w ? (uint32_t)tg_whatif_runs(x.w) : 0;
    for (uint32_t i = 0; i < nres; i++)
        free(res[i].vict);
    plan_free(&x);
    return rc;
}

void tg_preemption_free(struct tg_preemption *p)
{
    free(p->victims);
    free(p->slots);
    free(p->leaving);
    p->victims = NULL;
    p->slots = NULL;
    p->leaving = NULL;
    p->nvictims = p->nleaving = 0;
}

void tg_preemption_describe(const struct tg_preemption *p, char *buf, size_t n)
{
    struct tg_sb b = {0};
    char more[32] = "";
    for (uint32_t i = 0; i < p->nvictims; i++) {
        const struct tg_victim *v = &p->victims[i];
        size_t before = b.len;
        if (v->gang)
            tg_sb_printf(&b, "%s%s (%u pod%s)", i ? ", " : "", v->gang->key, v->npods,
                         v->npods == 1 ? "" : "s");
        else
            tg_sb_printf(&b, "%s%s", i ? ", " : "", v->pod->key);
        /* whole victims only; the last needs no room for the count */
        snprintf(more, sizeof more, " and %u more", p->nvictims - i - 1);
        if (b.len + (i + 1 < p->nvictims ? strlen(more) : 0) >= n) {
            b.len = before;
            snprintf(more, sizeof more, " and %u more", p->nvictims - i);
            tg_sb_puts(&b, more);
            break;
        }
    }
    if (b.len >= n || b.oom)    /* not even one victim and the count fit */
        snprintf(buf, n, "%u victims", p->nvictims);
    else
        snprintf(buf, n, "%s", tg_sb_str(&b));
    tg_sb_free(&b);
}
