/* Gang placement: filter -> count -> place, all or nothing.
 *
 * 1. Shapes: members with equal requests and constraints form one pod set;
 *    the largest set is placed first.
 * 2. Count: for each shape, every plugin's filter and count per node slot;
 *    the counts are summed up the topology tree (cost: nodes x levels).
 *    A set whose count reads only the node takes them from the counts kept
 *    between tries (counts.h: only the nodes changed since are recounted),
 *    blocks applied on top (count_cached).
 * 3. Place: from the preferred level up to the required level, the domains
 *    whose counts cover the gang are candidates. pack takes the best fit
 *    (least room left over); spread the one with the most room. Inside it,
 *    fill() descends: pack repeatedly takes the child that holds what is left
 *    with the least to spare, else the largest child (Kueue's fill order:
 *    room for 3,3,2,1 and 7 pods gives 3,3,1); spread water-fills children
 *    evenly. Each pod is assumed in the model as it is placed, and counts are
 *    refreshed on the nodes it touched, so pod sets of other shapes see it.
 * 4. A candidate that cannot take every set is rolled back and the next one
 *    tried; a gang with no candidate reserves nothing and gets a reason.
 *
 * Nodes lacking a level's label sit in a domain named "" there (tree.h),
 * which is no domain of that level: a gang that requires the level never
 * uses them (the reason counts them: "4 nodes lacking label ..."), and at a
 * preferred level each of them is a domain of its own (a loose node: the
 * gang fits it whole or not). A placement is named by the tightest real
 * domain that holds it, never by a missing label.
 *
 * Constraints between pods (inter-pod affinity and anti-affinity, topology
 * spread) are plugins too: a prefilter per shape starts live counts per
 * topology domain and the per-node count applies them (members placed
 * earlier count like bound pods: "one replica per node" is a count of 1),
 * except rising ones (spread: placing elsewhere raises the minimum), which
 * counting leaves out. Each is also a domain constraint (struct tg_dcons):
 * where its key is a topology level, fill() and holds() cap that level's
 * domains as members land (per domain, not per node); on another key, a
 * node is checked afresh before a member goes there. When a cap changes
 * beyond the domain a member went to (the first pod of a series, a domain
 * gaining its first match), the set's counts are redone. Shapes without
 * such terms skip those plugins (prefilter) and keep the plain path. */
#include "scheduler/cycle.h"
#include "scheduler/counts.h"
#include "scheduler/rank.h"
#include "scheduler/subgroup.h"
#include "scheduler/loss.h"
#include "plugins/plugin.h"
#include "model/quantity.h"
#include "util/err.h"
#include "util/intern.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE TG_NONE
enum { MAX_TRIES = 8, MAX_HIST = 32, MAX_PLUGINS = 16 };

struct hist {
    uint8_t reason[MAX_HIST];
    uint32_t arg[MAX_HIST];
    uint32_t n[MAX_HIST];
    uint32_t len;
};

/* A domain constraint of a set and where placement applies it. */
struct sdc {
    const struct tg_dcons *dc;
    uint32_t lvl;                       /* tree level whose domains are its domains, 0: none */
    uint64_t gen;                       /* *dc->gen when the counts were last made */
};

struct set {
    struct tg_shape sh;
    uint32_t *mem;                      /* indices into gang->pods */
    uint32_t nmem;
    uint32_t next;                      /* next member to place */
    uint32_t *dcount;                   /* per domain */
    uint32_t *delig;                    /* per domain: nodes with room for one member */
    int32_t *score;                     /* per slot, -1 unknown */
    uint64_t weight;
    struct hist hist;
    const struct tg_plugin **act;       /* plugins that filter/count/score it (not skipped) */
    uint32_t nact, nfilt, ncnt;
    int (**filt)(const struct tg_cycle_ctx *, const struct tg_shape *, uint32_t, struct tg_status *);
    uint32_t (**cnt)(const struct tg_cycle_ctx *, const struct tg_shape *, uint32_t, struct tg_status *);
    struct tg_status blocked;           /* code != TG_SUCCESS: a prefilter says no node takes it */
    struct sdc *dcs;
    uint32_t ndcs;
    uint8_t aligned;                    /* has a constraint on a topology level: clamp() */
    uint8_t verify;                     /* has one on another key: a node is checked afresh */
    uint8_t rising;                     /* has one whose caps rise: skipped children retried */
    uint8_t exact;                      /* a rising one on another key: an exact look first */
    uint8_t wide;                       /* has one a per-node count holds for wider domains */
    uint8_t stale;                      /* every node's count is to be redone */
    uint8_t after;                      /* members of other sets may satisfy its affinity */
    uint8_t soft;                       /* a score states the pod's own preferences */
    uint8_t hist_due;                   /* hist is still to be made from crej (hist_ready) */
    uint64_t plugins;                   /* act as bits of tg_plugins[] indices */
    uint8_t *crej, *cwhy;               /* per slot, counted from the cache (count_cached): */
    uint32_t *carg;                     /* a rejection, its reason and argument */
    struct tg__chist *chist;            /* count_cached: the rejections per reason (counts.h),
                                           blocks applied; n 0: none left */
    uint32_t nchist;                    /* UINT32_MAX: not kept (hist_ready walks the slots) */
};

struct pc {
    struct tg_sched *s;
    struct tg_arena *a;                 /* s->scratch for a cycle, the session's for a what-if */
    const struct tg_gang *g;
    struct tg_result *r;
    struct tg_cycle_ctx cx;
    struct set *sets;
    uint32_t nsets;
    int strategy;
    uint32_t *touched;                  /* slots with pods assumed this attempt */
    uint32_t ntouched;
    uint8_t *is_touched;
    int64_t weight[MAX_PLUGINS];        /* score weight per tg_plugins[] entry */
    struct tg_shape **shapes;           /* the sets' shapes, for the plugins (cx.gang) */
    uint32_t *cslots, ncslots;          /* the slots counted when g->within is set, else NULL */
    uint8_t any_dcons, released;
    struct sgplan *sg;                  /* the gang's sub-groups, NULL: none (see sg_plan) */
    uint8_t *home;                      /* per domain: holds a placed member (loss.h), or NULL */
};

/* Adds n nodes to the (reason, arg) entry; max: keeps the larger instead. */
static void hist_put(struct hist *h, uint8_t reason, uint32_t arg, uint32_t n, int max)
{
    for (uint32_t i = 0; i < h->len; i++)
        if (h->reason[i] == reason && h->arg[i] == arg) {
            h->n[i] = max ? (n > h->n[i] ? n : h->n[i]) : h->n[i] + n;
            return;
        }
    if (h->len < MAX_HIST) {
        h->reason[h->len] = reason;
        h->arg[h->len] = arg;
        h->n[h->len++] = n;
    }
}

static void hist_add(struct hist *h, uint8_t reason, uint32_t arg)
{
    for (uint32_t i = 0; i < h->len; i++)
        if (h->reason[i] == reason && h->arg[i] == arg) {
            h->n[i]++;
            return;
        }
    if (h->len < MAX_HIST) {
        h->reason[h->len] = reason;
        h->arg[h->len] = arg;
        h->n[h->len++] = 1;
    }
}

/* Filter + count of one shape on one slot by its plugins alone; on a
 * rejection *has = 1 and *status says why. */
static uint32_t eval_plugins(struct pc *x, struct set *st, uint32_t slot, struct tg_status *status,
                             int *has)
{
    for (uint32_t i = 0; i < st->nfilt; i++)
        if (!st->filt[i](&x->cx, &st->sh, slot, status)) {
            *has = 1;
            return 0;
        }
    uint32_t n = UINT32_MAX;
    for (uint32_t i = 0; i < st->ncnt && n; i++) {
        uint32_t k = st->cnt[i](&x->cx, &st->sh, slot, status);
        if (k < n)
            n = k;
        if (n == 0)
            *has = 1;
    }
    return n == UINT32_MAX ? 1u << 20 : n;
}

/* The first block over slot (s->blocks), NULL: none. */
static const struct tg_block *blocked_by(const struct pc *x, uint32_t slot)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    for (uint32_t b = 0; b < x->s->nblocks; b++) {
        const struct tg_block *bl = &x->s->blocks[b];
        if (tg_tree_ancestor(t, t->leaf[slot], t->dom[bl->domain].level) == bl->domain)
            return bl;
    }
    return NULL;
}

/* Filter + count of one shape on one slot; records a rejection in hist. */
static uint32_t eval_slot(struct pc *x, struct set *st, uint32_t slot, struct hist *h)
{
    const struct tg_cluster *c = &x->s->cluster;
    if (!c->nodes[slot].obj || c->tree.leaf[slot] == NONE)
        return 0;
    struct tg_status status = {0};
    if (x->home && tg_loss_node_failed(c->nodes[slot].obj, &status)) {
        if (h)
            hist_add(h, status.reason, status.arg);
        return 0; /* a replacement never goes to a failing node */
    }
    const struct tg_block *bl = blocked_by(x, slot);
    if (bl) {
        if (h)
            hist_add(h, TG_R_RESERVED, bl->owner);
        return 0;
    }
    int has = 0;
    uint32_t n = eval_plugins(x, st, slot, &status, &has);
    if (!n && has && h)
        hist_add(h, status.reason, status.arg);
    return n;
}

static void propagate(struct pc *x, struct set *st, uint32_t slot, int64_t delta)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    for (uint32_t d = t->leaf[slot]; d != NONE; d = t->dom[d].parent)
        st->dcount[d] = (uint32_t)((int64_t)st->dcount[d] + delta);
}

static void propagate_elig(struct pc *x, struct set *st, uint32_t slot, int delta)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    for (uint32_t d = t->leaf[slot]; d != NONE; d = t->dom[d].parent)
        st->delig[d] = (uint32_t)((int64_t)st->delig[d] + delta);
}

static void count_slot(struct pc *x, struct set *st, uint32_t slot)
{
    uint32_t n = eval_slot(x, st, slot, &st->hist);
    st->sh.count[slot] = n;
    if (n) {
        propagate(x, st, slot, n);
        propagate_elig(x, st, slot, +1);
    }
}

/* The slots a gang is counted on: every one, or those under g->within
 * (kept in x->cslots). */
static int counted_slots(struct pc *x)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    if (x->g->within == NONE || x->g->within == 0 || x->g->within >= t->ndom)
        return 0;
    x->cslots = tg_arena_alloc(x->a, (t->nslots + 1) * sizeof *x->cslots);
    if (!x->cslots)
        return TG_ENOMEM;
    x->ncslots = tg_tree_slots_under(t, x->g->within, x->cslots);
    return 0;
}

/* Zeroes st's counts (make_sets leaves them to the count). */
static void counts_zero(struct pc *x, struct set *st)
{
    uint32_t nslots = x->s->cluster.nslots, ndom = x->s->cluster.tree.ndom;
    memset(st->sh.count, 0, (nslots + 1) * sizeof *st->sh.count);
    memset(st->dcount, 0, (ndom + 1) * sizeof *st->dcount);
    memset(st->delig, 0, (ndom + 1) * sizeof *st->delig);
}

/* Counts the set on every node, or only on those under g->within. */
static void count_all(struct pc *x, struct set *st)
{
    if (st->blocked.code != TG_SUCCESS)
        return;
    if (!x->cslots) {
        for (uint32_t slot = 0; slot < x->s->cluster.nslots; slot++)
            count_slot(x, st, slot);
        return;
    }
    for (uint32_t i = 0; i < x->ncslots; i++)
        count_slot(x, st, x->cslots[i]);
}

/* tg__count_fn over a set (count_cached): a slot without Node or domain
 * counts 0, as in eval_slot. */
struct cnt_ud {
    struct pc *x;
    struct set *st;
};

static uint32_t count_fn(void *ud, uint32_t slot, struct tg_status *why, int *has)
{
    struct cnt_ud *u = ud;
    const struct tg_cluster *c = &u->x->s->cluster;
    if (!c->nodes[slot].obj || c->tree.leaf[slot] == NONE)
        return 0;
    return eval_plugins(u->x, u->st, slot, why, has);
}

/* Moves st's kept rejections of (why, arg) by sign (cached_blocks); room
 * for one entry per block was made by count_cached. */
static void chist_move(struct set *st, uint8_t why, uint32_t arg, int sign)
{
    if (st->nchist == UINT32_MAX)
        return;
    uint32_t i = 0;
    while (i < st->nchist && !(st->chist[i].why == why && st->chist[i].arg == arg))
        i++;
    if (i == st->nchist)
        st->chist[st->nchist++] = (struct tg__chist){why, arg, 0};
    st->chist[i].n = (uint32_t)((int64_t)st->chist[i].n + sign);
}

/* Zeroes st's counts on the nodes under blocks, as eval_slot does, and
 * notes the block as their reason (the first block over a node wins). */
static int cached_blocks(struct pc *x, struct set *st)
{
    const struct tg_cluster *c = &x->s->cluster;
    uint32_t *slots = tg_arena_alloc(x->a, (c->nslots + 1) * sizeof *slots);
    if (!slots)
        return TG_ENOMEM;
    for (uint32_t b = x->s->nblocks; b-- > 0;) {
        const struct tg_block *bl = &x->s->blocks[b];
        uint32_t n = tg_tree_slots_under(&c->tree, bl->domain, slots);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t slot = slots[i];
            if (!c->nodes[slot].obj)
                continue;
            if (st->sh.count[slot]) {
                propagate(x, st, slot, -(int64_t)st->sh.count[slot]);
                propagate_elig(x, st, slot, -1);
                st->sh.count[slot] = 0;
            }
            if (st->crej[slot])
                chist_move(st, st->cwhy[slot], st->carg[slot], -1);
            chist_move(st, TG_R_RESERVED, bl->owner, +1);
            st->crej[slot] = 1;
            st->cwhy[slot] = TG_R_RESERVED;
            st->carg[slot] = bl->owner;
        }
    }
    return 0;
}

/* Counts st from the counts kept between tries (counts.h) when they hold
 * for it: no home, within, domain constraints or plugins that read beyond
 * the node. Its rejection histogram is made when first read (hist_ready).
 * Returns 1 when counted so, 0: count it in full, or TG_ENOMEM. */
static int count_cached(struct pc *x, struct set *st)
{
    if (x->home || x->cslots || st->ndcs || st->blocked.code != TG_SUCCESS ||
        !tg__counts_cacheable(st->sh.pod, st->plugins))
        return 0;
    struct cnt_ud u = {x, st};
    const struct tg__centry *e =
        tg__counts_get(&x->s->counts, &x->s->cluster, st->sh.pod, st->plugins, count_fn, &u);
    if (!e)
        return 0;
    uint32_t ns = e->nslots;
    st->crej = tg_arena_alloc(x->a, ns + 1);
    st->cwhy = tg_arena_alloc(x->a, ns + 1);
    st->carg = tg_arena_alloc(x->a, (ns + 1) * sizeof *st->carg);
    if (!st->crej || !st->cwhy || !st->carg)
        return TG_ENOMEM;
    memcpy(st->sh.count, e->count, ns * sizeof *e->count);
    memcpy(st->dcount, e->dcount, e->ndom * sizeof *e->dcount);
    memcpy(st->delig, e->delig, e->ndom * sizeof *e->delig);
    st->sh.count[ns] = st->dcount[e->ndom] = st->delig[e->ndom] = 0; /* the spare entry */
    memcpy(st->crej, e->rej, ns);
    memcpy(st->cwhy, e->why, ns);
    memcpy(st->carg, e->arg, ns * sizeof *e->arg);
    st->nchist = UINT32_MAX;
    if (e->nhist != UINT32_MAX) {
        st->chist = tg_arena_alloc(x->a, (e->nhist + x->s->nblocks + 1) * sizeof *st->chist);
        if (!st->chist)
            return TG_ENOMEM;
        st->nchist = 0;
        for (uint32_t i = 0; i < e->nhist; i++)
            if (e->hist[i].n)
                st->chist[st->nchist++] = e->hist[i];
    }
    st->hist_due = 1;
    int rc = x->s->nblocks ? cached_blocks(x, st) : 0;
    return rc ? rc : 1;
}

/* Makes st->hist from the reasons count_cached copied, as the full count
 * records them: entries in the order of their first slot, at most
 * MAX_HIST. With the kept totals (st->chist) the walk stops once every
 * reason has been met (in a full cluster, within the first nodes); else
 * every slot is added. */
static void hist_ready(struct pc *x, struct set *st)
{
    if (!st->hist_due)
        return;
    st->hist_due = 0;
    uint32_t nslots = x->s->cluster.nslots;
    if (st->nchist == UINT32_MAX || st->hist.len) {
        for (uint32_t slot = 0; slot < nslots; slot++)
            if (st->crej[slot])
                hist_add(&st->hist, st->cwhy[slot], st->carg[slot]);
        return;
    }
    uint32_t left = 0, last = 0;
    for (uint32_t i = 0; i < st->nchist; i++)
        left += st->chist[i].n > 0;
    for (uint32_t slot = 0; slot < nslots && left && st->hist.len < MAX_HIST; slot++) {
        if (!st->crej[slot])
            continue;
        uint8_t why = st->cwhy[slot];
        uint32_t arg = st->carg[slot];
        if (st->hist.len && st->hist.reason[last] == why && st->hist.arg[last] == arg)
            continue;
        uint32_t k = 0;
        while (k < st->hist.len && !(st->hist.reason[k] == why && st->hist.arg[k] == arg))
            k++;
        if (k == st->hist.len) {
            uint32_t j = 0;
            while (j < st->nchist && !(st->chist[j].why == why && st->chist[j].arg == arg))
                j++;
            assert(j < st->nchist && st->chist[j].n); /* the kept totals hold every rejection */
            hist_put(&st->hist, why, arg, j < st->nchist ? st->chist[j].n : 1, 0);
            left--;
        }
        last = k;
    }
}

/* The set's count on slot afresh. */
static void recount_one(struct pc *x, struct set *st, uint32_t slot)
{
    uint32_t n = st->blocked.code == TG_SUCCESS ? eval_slot(x, st, slot, NULL) : 0;
    if (n != st->sh.count[slot]) {
        propagate(x, st, slot, (int64_t)n - st->sh.count[slot]);
        if (!n != !st->sh.count[slot])
            propagate_elig(x, st, slot, n ? +1 : -1);
        st->sh.count[slot] = n;
    }
    st->score[slot] = -1;
}

static void recount(struct pc *x, uint32_t slot)
{
    for (uint32_t i = 0; i < x->nsets; i++)
        recount_one(x, &x->sets[i], slot);
}

/* Redoes the counts of sets marked stale, on every counted node. */
static void flush(struct pc *x)
{
    for (uint32_t i = 0; x->any_dcons && i < x->nsets; i++) {
        struct set *st = &x->sets[i];
        if (!st->stale)
            continue;
        st->stale = 0;
        if (!x->cslots) {
            for (uint32_t slot = 0; slot < x->s->cluster.nslots; slot++)
                recount_one(x, st, slot);
        } else {
            for (uint32_t k = 0; k < x->ncslots; k++)
                recount_one(x, st, x->cslots[k]);
        }
    }
}

/* Marks sets whose domain constraints moved beyond the node that changed:
 * a cap rose or fell elsewhere (gen), or, in a what-if, a hidden or shown
 * record opens or closes a domain wider than its node. */
static void mark_stale(struct pc *x, int whatif)
{
    for (uint32_t i = 0; x->any_dcons && i < x->nsets; i++) {
        struct set *st = &x->sets[i];
        for (uint32_t k = 0; k < st->ndcs; k++) {
            struct sdc *d = &st->dcs[k];
            if (*d->dc->gen == d->gen)
                continue;
            d->gen = *d->dc->gen;
            if (!d->dc->rising)
                st->stale = 1; /* per-node counts hold it (a rising one is read live) */
        }
        if (whatif && st->wide)
            st->stale = 1;
    }
}

/* After the model changed on slot in a placement (a member assumed or
 * removed): counts there, and wherever a constraint moved. */
static void after_change(struct pc *x, uint32_t slot)
{
    recount(x, slot);
    if (x->any_dcons) {
        mark_stale(x, 0);
        flush(x);
    }
}

/* Members of st that domain d may still take by its constraints on
 * topology levels at or above d's (UINT32_MAX: no limit); *why receives
 * the constraint that limits most. */
static uint32_t clamp(const struct pc *x, const struct set *st, uint32_t d, const struct tg_dcons **why)
{
    uint32_t c = UINT32_MAX;
    if (!st->aligned)
        return c;
    const struct tg_tree *t = &x->s->cluster.tree;
    uint32_t dl = t->dom[d].level;
    for (uint32_t k = 0; k < st->ndcs; k++) {
        const struct sdc *sd = &st->dcs[k];
        if (!sd->lvl || sd->lvl > dl)
            continue;
        uint32_t name = t->dom[tg_tree_ancestor(t, d, sd->lvl)].name;
        uint32_t v = sd->dc->cap(sd->dc, name ? name : TG_STR_NONE);
        if (v < c) {
            c = v;
            if (why)
                *why = sd->dc;
        }
    }
    return c;
}

/* 1 when a member of st may go on slot now: room there, its domains'
 * caps, and (constraints on keys that are not levels) a fresh look, every
 * constraint applied. */
static int room_for_one(struct pc *x, struct set *st, uint32_t slot)
{
    if (!st->sh.count[slot])
        return 0;
    if (st->aligned && !clamp(x, st, x->s->cluster.tree.leaf[slot], NULL))
        return 0;
    if (st->verify)
        recount_one(x, st, slot);
    if (!st->sh.count[slot] || !st->exact)
        return st->sh.count[slot] > 0;
    x->cx.exact = 1;
    uint32_t n = eval_slot(x, st, slot, NULL);
    x->cx.exact = 0;
    return n > 0;
}

static int32_t slot_score(struct pc *x, struct set *st, uint32_t slot)
{
    if (st->score[slot] >= 0)
        return st->score[slot];
    int64_t sum = 0;
    for (int i = 0; tg_plugins[i] && i < MAX_PLUGINS; i++)
        if (tg_plugins[i]->score)
            sum += x->weight[i] * tg_plugins[i]->score(&x->cx, &st->sh, slot);
    st->score[slot] = (int32_t)(sum > INT32_MAX ? INT32_MAX : sum);
    return st->score[slot];
}

/* Assumes the set's next member on slot. Returns 0 or TG_ENOMEM. */
static int assume_one(struct pc *x, struct set *st, uint32_t slot)
{
    uint32_t m = st->mem[st->next];
    int rc = tg_cluster_assume(&x->s->cluster, x->g->pods[m], slot);
    if (rc)
        return rc;
    x->r->slot[m] = slot;
    x->r->nplaced++;
    st->next++;
    if (!x->is_touched[slot]) {
        x->is_touched[slot] = 1;
        x->touched[x->ntouched++] = slot;
    }
    after_change(x, slot);
    return 0;
}

static uint32_t child_count(struct pc *x, struct set *st, const struct tg_domain *d, uint32_t i)
{
    int leaf = d->level == x->s->cluster.tree.nlevels;
    uint32_t c = leaf ? st->sh.count[d->child[i]] : st->dcount[d->child[i]];
    if (c && st->aligned) {
        uint32_t k = clamp(x, st, leaf ? (uint32_t)(d - x->s->cluster.tree.dom) : d->child[i], NULL);
        if (k < c)
            c = k;
    }
    return c;
}

/* pack's choice among the children of d: the one holding `need` with least to
 * spare, else the largest; ties by node score (at the node level) then order.
 * Returns the child index or -1. */
static int pick_pack(struct pc *x, struct set *st, const struct tg_domain *d, uint32_t need,
                     const uint8_t *skip)
{
    int fit = -1, big = -1;
    uint32_t fitc = UINT32_MAX, bigc = 0;
    int leaf = d->level == x->s->cluster.tree.nlevels;
    for (uint32_t i = 0; i < d->nchild; i++) {
        if (skip[i])
            continue;
        uint32_t c = child_count(x, st, d, i);
        if (!c)
            continue;
        if (c >= need && (c < fitc || (c == fitc && leaf &&
                                       slot_score(x, st, d->child[i]) > slot_score(x, st, d->child[fit])))) {
            fit = (int)i;
            fitc = c;
        }
        if (c > bigc || (c == bigc && leaf && big >= 0 &&
                         slot_score(x, st, d->child[i]) > slot_score(x, st, d->child[big]))) {
            big = (int)i;
            bigc = c;
        }
    }
    return fit >= 0 ? fit : big;
}

static int fill(struct pc *x, struct set *st, uint32_t dom, uint32_t want, uint32_t *placed);

/* Places up to `want` more members of st on node slot; *got receives how
 * many went there. */
static int fill_slot(struct pc *x, struct set *st, uint32_t slot, uint32_t want, uint32_t *got)
{
    *got = 0;
    while (*got < want && st->next < st->nmem && room_for_one(x, st, slot)) {
        int rc = assume_one(x, st, slot);
        if (rc)
            return rc;
        (*got)++;
    }
    return 0;
}

/* Places into child i of d; *got receives how many went there. */
static int fill_child(struct pc *x, struct set *st, const struct tg_domain *d, uint32_t i,
                      uint32_t want, uint32_t *got)
{
    if (d->level != x->s->cluster.tree.nlevels) {
        *got = 0;
        return fill(x, st, d->child[i], want, got);
    }
    return fill_slot(x, st, d->child[i], want, got);
}

/* Spread: water level so that sum(min(c_i, L)) >= want, then even shares. */
static int fill_spread(struct pc *x, struct set *st, const struct tg_domain *d, uint32_t want,
                       uint32_t *placed)
{
    uint32_t lo = 0, hi = want;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t sum = 0;
        for (uint32_t i = 0; i < d->nchild; i++) {
            uint32_t c = child_count(x, st, d, i);
            sum += c < mid ? c : mid;
        }
        if (sum >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t level = lo, left = want;
    /* Children at the water line take one less until the total is exact. */
    uint64_t total = 0;
    for (uint32_t i = 0; i < d->nchild; i++) {
        uint32_t c = child_count(x, st, d, i);
        total += c < level ? c : level;
    }
    uint64_t extra = total > want ? total - want : 0;
    uint32_t *share = tg_arena_alloc(x->a, (d->nchild + 1) * sizeof *share);
    if (!share)
        return TG_ENOMEM;
    for (uint32_t i = d->nchild; i-- > 0;) {
        uint32_t c = child_count(x, st, d, i);
        share[i] = c < level ? c : level;
        if (extra && share[i] == level && level > 0) {
            share[i]--;
            extra--;
        }
    }
    for (uint32_t i = 0; i < d->nchild && left; i++) {
        if (!share[i])
            continue;
        uint32_t got;
        int rc = fill_child(x, st, d, i, share[i] < left ? share[i] : left, &got);
        if (rc)
            return rc;
        left -= got;
    }
    *placed += want - left;
    return 0;
}

/* Places up to `want` more members of st inside domain dom; adds the number
 * placed to *placed. */
static int fill(struct pc *x, struct set *st, uint32_t dom, uint32_t want, uint32_t *placed)
{
    const struct tg_domain *d = &x->s->cluster.tree.dom[dom];
    uint32_t before = *placed;
    if (st->aligned) {
        const struct tg_dcons *why = NULL;
        uint32_t k = clamp(x, st, dom, &why);
        if (k < want) {
            if (!k && why) {
                hist_ready(x, st);
                hist_put(&st->hist, why->reason, why->arg, st->delig[dom], 1);
            }
            want = k;
        }
        if (!want)
            return 0;
    }
    if (x->strategy == TG_STRATEGY_SPREAD && d->nchild > 1) {
        int rc = fill_spread(x, st, d, want, placed);
        if (rc)
            return rc;
    }
    uint32_t left = want - (*placed - before);
    if (!left)
        return 0;
    uint8_t *skip = tg_arena_calloc(x->a, d->nchild + 1, 1);
    if (!skip)
        return TG_ENOMEM;
    int progress = 0;
    while (left) {
        int i = pick_pack(x, st, d, left, skip);
        if (i < 0 && st->rising && progress) {
            /* a spread minimum rose: children refused before may take more */
            memset(skip, 0, d->nchild);
            progress = 0;
            continue;
        }
        if (i < 0)
            break;
        uint32_t c = child_count(x, st, d, (uint32_t)i);
        uint32_t got;
        int rc = fill_child(x, st, d, (uint32_t)i, c < left ? c : left, &got);
        if (rc)
            return rc;
        if (got == 0)
            skip[i] = 1;
        progress |= got > 0;
        left -= got;
        *placed += got;
    }
    return 0;
}

static void rollback(struct pc *x)
{
    for (uint32_t i = 0; i < x->g->npods; i++)
        if (x->r->slot[i] != NONE) {
            tg_cluster_pod_delete(&x->s->cluster, x->g->pods[i]->key);
            x->r->slot[i] = NONE;
        }
    x->r->nplaced = 0;
    for (uint32_t i = 0; i < x->nsets; i++)
        x->sets[i].next = 0;
    for (uint32_t i = 0; i < x->ntouched; i++) {
        recount(x, x->touched[i]);
        x->is_touched[x->touched[i]] = 0;
    }
    x->ntouched = 0;
    if (x->any_dcons) {
        mark_stale(x, 0);
        flush(x);
    }
}

/* Members domain d can take, or node slot alone when it is not NONE (d
 * its deepest domain), summed over sets, each capped at its need and by its
 * domain constraints. */
static uint64_t holds_in(const struct pc *x, uint32_t d, uint32_t slot)
{
    uint64_t h = 0;
    for (uint32_t i = 0; i < x->nsets; i++) {
        const struct set *st = &x->sets[i];
        uint32_t c = slot == NONE ? st->dcount[d] : st->sh.count[slot];
        if (c && st->aligned) {
            uint32_t k = clamp(x, st, d, NULL);
            c = k < c ? k : c;
        }
        h += c < st->nmem ? c : st->nmem;
    }
    return h;
}

static uint64_t holds(const struct pc *x, uint32_t d)
{
    return holds_in(x, d, NONE);
}

/* 1 when a set has a domain constraint on a topology level (holds clamps
 * it per domain: a domain may then hold more than its parent). */
static int any_aligned(const struct pc *x)
{
    for (uint32_t i = 0; i < x->nsets; i++)
        if (x->sets[i].aligned)
            return 1;
    return 0;
}

/* a before b in set_order? Sets whose pod affinity members of other sets
 * may satisfy go last, and so do sets with no node in d (a member placed
 * first may open one); then the most constrained (fewest nodes with room
 * for one), then the largest. */
static int set_before(const struct set *a, const struct set *b, uint32_t d)
{
    if (a->after != b->after)
        return b->after;
    if (!a->delig[d] != !b->delig[d])
        return a->delig[d] != 0;
    return a->delig[d] < b->delig[d] || (a->delig[d] == b->delig[d] && a->weight >= b->weight);
}

/* The order in which sets are placed inside d (see set_before). */
static uint32_t *set_order(struct pc *x, uint32_t d)
{
    uint32_t *o = tg_arena_alloc(x->a, (x->nsets + 1) * sizeof *o);
    if (!o)
        return NULL;
    for (uint32_t i = 0; i < x->nsets; i++) {
        uint32_t j = i;
        for (; j > 0; j--) {
            if (set_before(&x->sets[o[j - 1]], &x->sets[i], d))
                break;
            o[j] = o[j - 1];
        }
        o[j] = i;
    }
    return o;
}

static int exact(struct pc *x, uint32_t d, uint32_t must, int *ok);

static int exact_in(struct pc *x, uint32_t d, const uint32_t *slots, uint32_t m, uint32_t must,
                    int *ok);

/* Tries to place everything (at least `must`) inside domain d, or, when
 * slot is not NONE, on that node alone (a loose node; d its deepest
 * domain): the greedy fill first; when it fails although the counts say it
 * might hold the gang (pod sets competing for the same nodes), an exact
 * decision. */
static int sg_try_in(struct pc *x, uint32_t d, uint32_t slot, int *ok);

static int try_in(struct pc *x, uint32_t d, uint32_t slot, uint32_t must, int *ok)
{
    *ok = 0;
    if (x->sg)
        return sg_try_in(x, d, slot, ok);
    uint32_t *order = set_order(x, d);
    if (!order)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < x->nsets; i++) {
        struct set *st = &x->sets[order[i]];
        uint32_t placed = 0, want = st->nmem - st->next;
        int rc = slot == NONE ? fill(x, st, d, want, &placed) : fill_slot(x, st, slot, want, &placed);
        if (rc)
            return rc;
    }
    if (x->r->nplaced >= must && x->r->nplaced > 0) {
        *ok = 1;
        return 0;
    }
    rollback(x);
    if (x->nsets > 1 && holds_in(x, d, slot) >= must)
        return slot == NONE ? exact(x, d, must, ok) : exact_in(x, d, &slot, 1, must, ok);
    return 0;
}

/* ---- exact placement of competing pod sets ---------------------------------------
 * Sets with equal requests differ only in where they may go: a transportation
 * problem, decided by max-flow (source -> set, capacity its size; set ->
 * node, the set's count there; node -> sink, the node's count). Sets with
 * unequal requests: a depth-first search over members and nodes with the
 * model itself as the state, bounded by EXACT_STEPS assumptions. */
enum { EXACT_STEPS = 20000 };

static int same_requests(const struct pc *x)
{
    const struct tg_pod *a = x->sets[0].sh.pod;
    for (uint32_t i = 1; i < x->nsets; i++) {
        const struct tg_pod *b = x->sets[i].sh.pod;
        if (a->nreq != b->nreq)
            return 0;
        for (uint8_t k = 0; k < a->nreq; k++) /* field by field: struct tg_rq has padding */
            if (a->req[k].res != b->req[k].res || a->req[k].val != b->req[k].val)
                return 0;
    }
    return 1;
}

/* Slots under d where some set could put a member, into *out (arena). */
static int slots_under(struct pc *x, uint32_t d, uint32_t **out, uint32_t *n)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    uint32_t *v = tg_arena_alloc(x->a, (t->nslots + 1) * sizeof *v), k = 0;
    if (!v)
        return TG_ENOMEM;
    uint32_t all = tg_tree_slots_under(t, d, v);
    for (uint32_t i = 0; i < all; i++)
        for (uint32_t s2 = 0; s2 < x->nsets; s2++)
            if (x->sets[s2].sh.count[v[i]]) {
                v[k++] = v[i];
                break;
            }
    *out = v;
    *n = k;
    return 0;
}

struct flow {
    uint32_t nv, ne;
    uint32_t *head, *next, *to, *level, *it, *queue;
    int64_t *cap;
};

static int flow_edge(struct flow *f, uint32_t a, uint32_t b, int64_t c)
{
    f->to[f->ne] = b; f->cap[f->ne] = c; f->next[f->ne] = f->head[a]; f->head[a] = f->ne++;
    f->to[f->ne] = a; f->cap[f->ne] = 0; f->next[f->ne] = f->head[b]; f->head[b] = f->ne++;
    return (int)(f->ne - 2);
}

static int flow_bfs(struct flow *f, uint32_t s, uint32_t t)
{
    for (uint32_t i = 0; i < f->nv; i++)
        f->level[i] = UINT32_MAX;
    uint32_t qh = 0, qt = 0;
    f->level[s] = 0;
    f->queue[qt++] = s;
    while (qh < qt) {
        uint32_t u = f->queue[qh++];
        for (uint32_t e = f->head[u]; e != NONE; e = f->next[e])
            if (f->cap[e] > 0 && f->level[f->to[e]] == UINT32_MAX) {
                f->level[f->to[e]] = f->level[u] + 1;
                f->queue[qt++] = f->to[e];
            }
    }
    return f->level[t] != UINT32_MAX;
}

/* Blocking-flow augment along level edges, iteratively (no recursion):
 * walks from s to t over f->it, then pushes the path's bottleneck. */
static int64_t flow_augment(struct flow *f, uint32_t s, uint32_t t)
{
    int64_t total = 0;
    uint32_t *path = f->queue; /* edges; the BFS queue is free now */
    for (;;) {
        uint32_t u = s, depth = 0;
        while (u != t) {
            uint32_t e = f->it[u];
            while (e != NONE && !(f->cap[e] > 0 && f->level[f->to[e]] == f->level[u] + 1))
                e = f->next[e];
            f->it[u] = e;
            if (e == NONE) { /* dead end: retreat */
                if (u == s)
                    return total;
                f->level[u] = UINT32_MAX;
                uint32_t back = path[--depth];
                u = f->to[back ^ 1];
                continue;
            }
            path[depth++] = e;
            u = f->to[e];
        }
        int64_t b = INT64_MAX;
        for (uint32_t i = 0; i < depth; i++)
            if (f->cap[path[i]] < b)
                b = f->cap[path[i]];
        for (uint32_t i = 0; i < depth; i++) {
            f->cap[path[i]] -= b;
            f->cap[path[i] ^ 1] += b;
        }
        total += b;
    }
}

static int exact_flow(struct pc *x, const uint32_t *slots, uint32_t m, uint32_t must, int *ok)
{
    uint32_t S = x->nsets + m, T = S + 1, nv = T + 1;
    uint32_t maxe = 2 * (x->nsets + x->nsets * m + m) + 2;
    struct flow f = {.nv = nv};
    f.head = tg_arena_alloc(x->a, nv * sizeof *f.head);
    f.level = tg_arena_alloc(x->a, nv * sizeof *f.level);
    f.it = tg_arena_alloc(x->a, nv * sizeof *f.it);
    f.queue = tg_arena_alloc(x->a, (nv + maxe) * sizeof *f.queue);
    f.next = tg_arena_alloc(x->a, maxe * sizeof *f.next);
    f.to = tg_arena_alloc(x->a, maxe * sizeof *f.to);
    f.cap = tg_arena_alloc(x->a, maxe * sizeof *f.cap);
    int *edge = tg_arena_alloc(x->a, ((size_t)x->nsets * m + 1) * sizeof *edge);
    if (!f.head || !f.level || !f.it || !f.queue || !f.next || !f.to || !f.cap || !edge)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < nv; i++)
        f.head[i] = NONE;
    for (uint32_t k = 0; k < x->nsets; k++)
        flow_edge(&f, S, k, x->sets[k].nmem);
    for (uint32_t j = 0; j < m; j++) {
        int64_t cap = 0;
        for (uint32_t k = 0; k < x->nsets; k++) {
            int64_t c = x->sets[k].sh.count[slots[j]];
            edge[(size_t)k * m + j] = c ? flow_edge(&f, k, x->nsets + j, c) : -1;
            if (c > cap)
                cap = c;
        }
        flow_edge(&f, x->nsets + j, T, cap);
    }
    int64_t total = 0;
    while (flow_bfs(&f, S, T)) {
        memcpy(f.it, f.head, nv * sizeof *f.it);
        total += flow_augment(&f, S, T);
    }
    if (total < must)
        return 0;
    for (uint32_t k = 0; k < x->nsets; k++)
        for (uint32_t j = 0; j < m; j++) {
            int e = edge[(size_t)k * m + j];
            int64_t fl = e >= 0 ? f.cap[e ^ 1] : 0; /* the reverse edge holds the flow */
            for (int64_t i = 0; i < fl && x->sets[k].next < x->sets[k].nmem; i++)
                if (x->sets[k].sh.count[slots[j]]) {
                    int rc = assume_one(x, &x->sets[k], slots[j]);
                    if (rc)
                        return rc;
                }
        }
    if (x->r->nplaced >= must) {
        *ok = 1;
        return 0;
    }
    rollback(x);
    return 0;
}

/* Undoes the last member placed of st. */
static void unassume_one(struct pc *x, struct set *st)
{
    uint32_t m = st->mem[--st->next];
    uint32_t slot = x->r->slot[m];
    tg_cluster_pod_delete(&x->s->cluster, x->g->pods[m]->key);
    x->r->slot[m] = NONE;
    x->r->nplaced--;
    after_change(x, slot);
}

struct search {
    struct pc *x;
    const uint32_t *slots, *order;
    uint32_t m, must, total, skipped;
    uint32_t steps;
    int rc;
};

/* Places the remaining members of the sets in order, each on some node, or
 * leaves one out while `must` can still be met. 1 when done. */
static int search(struct search *q, uint32_t oi)
{
    struct pc *x = q->x;
    while (oi < x->nsets && x->sets[q->order[oi]].next == x->sets[q->order[oi]].nmem)
        oi++;
    if (oi == x->nsets)
        return x->r->nplaced >= q->must;
    struct set *st = &x->sets[q->order[oi]];
    for (uint32_t j = 0; j < q->m; j++) {
        if (!room_for_one(x, st, q->slots[j]))
            continue;
        if (++q->steps > EXACT_STEPS)
            return 0;
        if ((q->rc = assume_one(x, st, q->slots[j])))
            return 0;
        if (search(q, oi))
            return 1;
        unassume_one(x, st);
        if (q->rc || q->steps > EXACT_STEPS)
            return 0;
    }
    /* leave the rest of this set out, if minMember allows it */
    uint32_t keep = st->nmem, rest = st->nmem - st->next;
    if (q->total - q->skipped - rest >= q->must) {
        q->skipped += rest;
        st->nmem = st->next; /* pretend the set ends here */
        int done = search(q, oi + 1);
        st->nmem = keep;
        q->skipped -= rest;
        return done;
    }
    return 0;
}

/* The exact decision on the m slots given (all under d, whose counts order
 * the sets). */
static int exact_in(struct pc *x, uint32_t d, const uint32_t *slots, uint32_t m, uint32_t must,
                    int *ok)
{
    if (same_requests(x) && !x->any_dcons)
        return exact_flow(x, slots, m, must, ok);
    uint32_t total = 0;
    for (uint32_t k = 0; k < x->nsets; k++)
        total += x->sets[k].nmem;
    struct search q = {.x = x, .slots = slots, .order = set_order(x, d), .m = m, .must = must,
                       .total = total};
    if (!q.order)
        return TG_ENOMEM;
    if (search(&q, 0) && !q.rc) {
        *ok = 1;
        return 0;
    }
    rollback(x);
    return q.rc;
}

static int exact(struct pc *x, uint32_t d, uint32_t must, int *ok)
{
    uint32_t *slots, m;
    int rc = slots_under(x, d, &slots, &m);
    if (rc || !m)
        return rc;
    return exact_in(x, d, slots, m, must, ok);
}

struct cand {
    uint32_t d;                         /* a domain of the level, or the "" one holding slot */
    uint64_t holds;
    uint64_t spare;
    int64_t pref;                       /* the pod's own preferences (soft scores), nodes only */
    uint32_t slot;                      /* a loose node (lacking the level's label), or NONE */
};

static int cand_cmp_pack(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    /* More members first (all of them when possible), then what the pod
     * prefers, then best fit, then id. */
    if (x->holds != y->holds)
        return x->holds > y->holds ? -1 : 1;
    if (x->pref != y->pref)
        return x->pref > y->pref ? -1 : 1;
    if (x->spare != y->spare)
        return x->spare < y->spare ? -1 : 1;
    if (x->d != y->d)
        return (x->d > y->d) - (x->d < y->d);
    return (x->slot > y->slot) - (x->slot < y->slot);
}

static int cand_cmp_spread(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->holds != y->holds)
        return x->holds > y->holds ? -1 : 1;
    if (x->pref != y->pref)
        return x->pref > y->pref ? -1 : 1;
    if (x->spare != y->spare)
        return x->spare > y->spare ? -1 : 1;
    if (x->d != y->d)
        return (x->d > y->d) - (x->d < y->d);
    return (x->slot > y->slot) - (x->slot < y->slot);
}

/* What the pod prefers on slot: the weighted scores of the plugins that
 * state its own preferences (preferred inter-pod terms, ScheduleAnyway). */
static int64_t soft_score(struct pc *x, struct set *st, uint32_t slot)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < st->nact; i++)
        if (st->act[i]->prefers && st->act[i]->score)
            sum += st->act[i]->score(&x->cx, &st->sh, slot);
    return sum;
}

static int (*cand_cmp(const struct pc *x))(const void *, const void *)
{
    return x->strategy == TG_STRATEGY_SPREAD ? cand_cmp_spread : cand_cmp_pack;
}

/* Adds c to the n best of out (room for cap). */
static void cand_keep(const struct pc *x, struct cand *out, uint32_t *n, uint32_t cap,
                      const struct cand *c)
{
    if (*n < cap) {
        out[(*n)++] = *c;
        return;
    }
    /* keep the best `cap`: replace the worst if c is better */
    int (*cmp)(const void *, const void *) = cand_cmp(x);
    uint32_t worst = 0;
    for (uint32_t i = 1; i < *n; i++)
        if (cmp(&out[i], &out[worst]) > 0)
            worst = i;
    if (cmp(c, &out[worst]) < 0)
        out[worst] = *c;
}

/* The nodes under d (a "" domain: they lack its level's label) that hold
 * `must` each, as candidates of their own; only the anchor's node when the
 * gang has one. Returns 0 or TG_ENOMEM. */
static int loose_nodes(struct pc *x, uint32_t d, uint32_t must, struct cand *out, uint32_t *n,
                       uint32_t cap)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    struct tg_arena_mark mk = tg_arena_mark(x->a);
    uint32_t *slots = tg_arena_alloc(x->a, (t->nslots + 1) * sizeof *slots);
    if (!slots)
        return TG_ENOMEM;
    uint32_t m = tg_tree_slots_under(t, d, slots), anchor = x->g->anchor;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t slot = slots[i];
        if (anchor != NONE && anchor < t->nslots && t->leaf[anchor] != NONE && slot != anchor)
            continue;
        uint64_t h = holds_in(x, t->leaf[slot], slot);
        if (h < must || h == 0)
            continue;
        uint64_t prim = x->sets[0].sh.count[slot];
        struct cand c = {d, h, prim - (prim < x->sets[0].nmem ? prim : x->sets[0].nmem), 0, slot};
        if (x->sets[0].soft)
            c.pref = soft_score(x, &x->sets[0], slot);
        cand_keep(x, out, n, cap, &c);
    }
    tg_arena_release(x->a, mk);
    return 0;
}

/* Candidates at tree level lvl for a gang that requires level `required`,
 * best first: the domains of lvl whose nodes carry the labels of lvl and
 * `required`; with `loose` (lvl a preferred level, tighter than required), also
 * the nodes lacking lvl's label, each on its own. Returns how many, up to
 * cap (0 when out of memory: no candidate). */
static uint32_t candidates(struct pc *x, uint32_t lvl, int required, int loose, uint32_t must,
                           struct cand *out, uint32_t cap)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    uint32_t n = 0;
    uint32_t only = NONE, within = x->g->within;
    if (!x->home && x->g->anchor != NONE && x->g->anchor < t->nslots && t->leaf[x->g->anchor] != NONE)
        only = tg_tree_ancestor(t, t->leaf[x->g->anchor], lvl);
    if (within != NONE && within < t->ndom) {
        if (t->dom[within].level > lvl)
            return 0; /* a domain at lvl would reach outside `within` */
        if (t->dom[within].level == lvl && only != NONE && only != within)
            return 0;
        if (t->dom[within].level == lvl)
            only = within;
    }
    for (uint32_t k = 0; k < t->nbylevel[lvl]; k++) {
        uint32_t d = t->bylevel[lvl][k];
        if (!t->dom[d].nnodes || (only != NONE && d != only) || (x->home && !x->home[d]))
            continue;
        if (within != NONE && within < t->ndom &&
            tg_tree_ancestor(t, d, t->dom[within].level) != within)
            continue;
        uint64_t h = holds(x, d);
        if (h < must || h == 0)
            continue;
        if ((uint32_t)required < lvl && !tg_tree_labelled(t, d, (uint32_t)required))
            continue; /* its nodes lack the required level's label */
        if (lvl && !t->dom[d].name) { /* its nodes lack lvl's label */
            if (loose && (int)lvl > required && loose_nodes(x, d, must, out, &n, cap))
                return 0;
            continue;
        }
        uint64_t prim = x->sets[0].dcount[d];
        struct cand c = {d, h, prim - (prim < x->sets[0].nmem ? prim : x->sets[0].nmem), 0, NONE};
        if (x->sets[0].soft && lvl == t->nlevels && t->dom[d].nchild)
            c.pref = soft_score(x, &x->sets[0], t->dom[d].child[0]);
        cand_keep(x, out, &n, cap, &c);
    }
    qsort(out, n, sizeof *out, cand_cmp(x));
    return n;
}

/* "16 x nvidia.com/gpu=8" for a set: the extended resources, else cpu/memory. */
static void describe_set(const struct set *st, struct tg_sb *b)
{
    const struct tg_pod *p = st->sh.pod;
    tg_sb_printf(b, "%u x ", st->nmem);
    int any = 0;
    char q[32];
    for (int pass = 0; pass < 2 && !any; pass++) {
        for (uint8_t i = 0; i < p->nreq; i++) {
            uint32_t r = p->req[i].res;
            if ((pass == 0) != (r >= TG_RES_NFIXED))
                continue;
            if (pass == 1 && r != TG_RES_CPU && r != TG_RES_MEMORY)
                continue;
            tg_sb_printf(b, "%s%s=%s", any ? "," : "", tg_res_name(r),
                         tg_quantity_format(p->req[i].val, tg_res_is_milli(r), q, sizeof q));
            any = 1;
        }
        for (uint8_t i = 0; pass == 0 && i < p->nunoffered; i++, any = 1) /* no node offers */
            tg_sb_printf(b, "%s%s=%lld", any ? "," : "", p->unoffered[i].name,
                         (long long)p->unoffered[i].val);
    }
    if (!any)
        tg_sb_puts(b, "pod (no requests)");
}

/* What keeps pod sets off every node (a prefilter's verdict), once each. */
static void explain_blocked(const struct pc *x, struct tg_sb *b)
{
    for (uint32_t i = 0; i < x->nsets; i++) {
        const struct tg_status *v = &x->sets[i].blocked;
        int seen = v->code == TG_SUCCESS;
        for (uint32_t k = 0; k < i && !seen; k++)
            seen = x->sets[k].blocked.reason == v->reason && x->sets[k].blocked.arg == v->arg;
        if (!seen) {
            char txt[700];
            tg_sb_printf(b, "; %s", tg_reason_text(v->reason, v->arg, txt, sizeof txt));
        }
    }
}

/* The domain constraints members count against themselves ("limited by
 * pod anti-affinity with ml/serve (its own gang) on ..."), once each. */
static void explain_limits(const struct pc *x, struct tg_sb *b)
{
    for (uint32_t i = 0; i < x->nsets; i++)
        for (uint32_t k = 0; k < x->sets[i].ndcs; k++) {
            const struct tg_dcons *dc = x->sets[i].dcs[k].dc;
            int seen = !dc->limits;
            for (uint32_t j = 0; j <= i && !seen; j++)
                for (uint32_t l = 0; l < (j < i ? x->sets[j].ndcs : k) && !seen; l++)
                    seen = x->sets[j].dcs[l].dc->reason == dc->reason && x->sets[j].dcs[l].dc->arg == dc->arg;
            if (!seen) {
                char txt[700];
                tg_sb_printf(b, "; limited by %s", tg_reason_text(dc->reason, dc->arg, txt, sizeof txt));
            }
        }
}

/* Nodes with room for a member that lack the label of tree level lvl (the
 * most of any pod set); 0 for the cluster. */
static uint32_t lacking(const struct pc *x, uint32_t lvl)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    uint32_t most = 0;
    for (uint32_t i = 0; lvl && i < x->nsets; i++) {
        uint32_t n = 0;
        for (uint32_t k = 0; k < t->nbylevel[lvl]; k++) {
            uint32_t d = t->bylevel[lvl][k];
            if (!t->dom[d].name)
                n += x->sets[i].delig[d];
        }
        most = n > most ? n : most;
    }
    return most;
}

/* ---- failed tries' reason texts by their numbers ---------------------------------
 *
 * explain()'s text is a function of numbers a try has at hand (the sets'
 * sizes and requests, the level, verdicts, the best domain and what it
 * holds, the merged reason histogram): they are written into a key, and the
 * text made for an equal key is copied instead of formatted again. Failed
 * tries repeat texts (most match one of the last eight in a saturated
 * replay: gangs of one shape tried while nothing changed). The texts depend
 * on the policy's level names and the tree's paths too: a policy reload
 * (tg_sched_set_policy) drops the entries, and the tree's epoch is keyed. */
enum { XM_ENTRIES = 8, XM_KEY = 256 };

struct xm_entry {
    uint64_t hash;
    uint32_t nkey;                      /* 0: empty */
    uint32_t key[XM_KEY];
    char text[sizeof(((struct tg_result *)0)->reason)];
};

struct tg__reasons {
    struct xm_entry ent[XM_ENTRIES];
    uint32_t next;                      /* the entry replaced next (round robin) */
    uint64_t hits, misses;
};

void tg__reasons_flush(struct tg__reasons *m)
{
    if (m)
        memset(m, 0, sizeof *m);
}

void tg__reasons_free(struct tg__reasons **pm)
{
    free(*pm);
    *pm = NULL;
}

void tg__reasons_stats(const struct tg__reasons *m, uint64_t *hits, uint64_t *misses)
{
    *hits = m ? m->hits : 0;
    *misses = m ? m->misses : 0;
}

struct xkey {
    uint32_t v[XM_KEY];
    uint32_t n;                         /* UINT32_MAX: too long, or not keyable */
};

static void xk_put(struct xkey *k, uint32_t v)
{
    if (k->n < XM_KEY)
        k->v[k->n++] = v;
    else
        k->n = UINT32_MAX;
}

static void xk_put64(struct xkey *k, uint64_t v)
{
    xk_put(k, (uint32_t)v);
    xk_put(k, (uint32_t)(v >> 32));
}

/* The entry with key k, NULL: none (or no memo). */
static const struct xm_entry *xm_find(const struct tg__reasons *m, const struct xkey *k, uint64_t h)
{
    for (uint32_t i = 0; m && i < XM_ENTRIES; i++) {
        const struct xm_entry *e = &m->ent[i];
        if (e->nkey == k->n && e->hash == h && !memcmp(e->key, k->v, k->n * sizeof *k->v))
            return e;
    }
    return NULL;
}

static void xm_store(struct tg_sched *s, const struct xkey *k, uint64_t h, const char *text)
{
    if (!s->reasons && !(s->reasons = calloc(1, sizeof *s->reasons)))
        return; /* out of memory: texts are made each time */
    struct tg__reasons *m = s->reasons;
    struct xm_entry *e = &m->ent[m->next];
    m->next = (m->next + 1) % XM_ENTRIES;
    e->hash = h;
    e->nkey = k->n;
    memcpy(e->key, k->v, k->n * sizeof *k->v);
    snprintf(e->text, sizeof e->text, "%s", text);
}

/* The sets' rejection histograms merged (each reason's most nodes over the
 * sets), in the order of their first appearance. */
static void merge_hists(struct pc *x, struct hist *all)
{
    for (uint32_t i = 0; i < x->nsets; i++) {
        hist_ready(x, &x->sets[i]);
        for (uint32_t k = 0; k < x->sets[i].hist.len; k++) {
            const struct hist *h = &x->sets[i].hist;
            uint32_t j = 0;
            while (j < all->len && !(all->reason[j] == h->reason[k] && all->arg[j] == h->arg[k]))
                j++;
            if (j == all->len && all->len < MAX_HIST) {
                all->reason[j] = h->reason[k];
                all->arg[j] = h->arg[k];
                all->n[j] = 0;
                all->len++;
            }
            if (j < all->len && h->n[k] > all->n[j])
                all->n[j] = h->n[k];
        }
    }
}

/* Everything explain's text is made of, as numbers (see above): the sets
 * (sizes, requests, verdicts, domain constraints), must, the level, the
 * best domain and what it holds, tried, the merged histogram (the node
 * lacking the level's label included). A set asking for a resource no node
 * offers (its name is text) is not keyed. */
static void explain_key(const struct pc *x, struct xkey *k, uint32_t must, int required, int tried,
                        uint32_t best, uint64_t besth, const struct hist *all)
{
    k->n = 0;
    xk_put64(k, x->s->cluster.epoch);
    xk_put(k, must);
    xk_put(k, (uint32_t)required);
    xk_put(k, (uint32_t)tried);
    xk_put(k, best);
    xk_put64(k, besth);
    xk_put(k, x->nsets);
    for (uint32_t i = 0; i < x->nsets; i++) {
        const struct set *st = &x->sets[i];
        const struct tg_pod *p = st->sh.pod;
        if (p->nunoffered) {
            k->n = UINT32_MAX;
            return;
        }
        xk_put(k, st->nmem);
        xk_put(k, p->nreq);
        for (uint8_t r = 0; r < p->nreq; r++) {
            xk_put(k, p->req[r].res);
            xk_put64(k, (uint64_t)p->req[r].val);
        }
        xk_put(k, (uint32_t)st->blocked.code << 8 | st->blocked.reason);
        xk_put(k, st->blocked.arg);
        xk_put(k, st->ndcs);
        for (uint32_t d = 0; d < st->ndcs; d++) {
            xk_put(k, (uint32_t)st->dcs[d].dc->limits << 8 | st->dcs[d].dc->reason);
            xk_put(k, st->dcs[d].dc->arg);
        }
    }
    xk_put(k, all->len);
    for (uint32_t j = 0; j < all->len; j++) {
        xk_put(k, all->reason[j]);
        xk_put(k, all->arg[j]);
        xk_put(k, all->n[j]);
    }
}

/* The domain of level `required` that holds the most members (the first of
 * equals; NONE: none), and *most what it holds. */
static uint32_t best_domain(const struct pc *x, int required, uint64_t *most)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    uint32_t best = NONE;
    *most = 0;
    for (uint32_t k = 0; k < t->nbylevel[required]; k++) {
        uint32_t d = t->bylevel[required][k];
        if (required && !t->dom[d].name)
            continue; /* no domain: its nodes lack the level's label */
        uint64_t h = holds(x, d);
        if (best == NONE || h > *most) {
            best = d;
            *most = h;
        }
    }
    return best;
}

static void explain(struct pc *x, uint32_t must, int required, int tried)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    const struct tg_policy *pol = &x->s->policy;
    uint64_t besth;
    uint32_t best = best_domain(x, required, &besth);
    /* merge the rejection histograms of all sets, most frequent first */
    struct hist all = {0};
    merge_hists(x, &all);
    uint32_t lack = lacking(x, (uint32_t)required);
    if (lack && all.len < MAX_HIST) {
        all.reason[all.len] = TG_R_LEVEL_LABEL;
        all.arg[all.len] = t->label[required - 1];
        all.n[all.len++] = lack;
    }
    struct xkey key;
    explain_key(x, &key, must, required, tried, best, besth, &all);
    uint64_t kh = key.n == UINT32_MAX ? 0 : tg_hash(key.v, key.n * sizeof *key.v);
    const struct xm_entry *hit = key.n == UINT32_MAX ? NULL : xm_find(x->s->reasons, &key, kh);
    if (hit) {
        x->s->reasons->hits++;
        memcpy(x->r->reason, hit->text, sizeof x->r->reason);
        return;
    }
    struct tg_sb b = {0};
    uint32_t total = 0;
    for (uint32_t i = 0; i < x->nsets; i++)
        total += x->sets[i].nmem;
    tg_sb_puts(&b, "needs ");
    if (must < total)
        tg_sb_printf(&b, "at least %u of ", must);
    for (uint32_t i = 0; i < x->nsets; i++) {
        if (i)
            tg_sb_puts(&b, " + ");
        describe_set(&x->sets[i], &b);
    }
    const char *lname = required ? pol->levels[required - 1].name : "cluster";
    if (required)
        tg_sb_printf(&b, " in one %s", lname);
    else
        tg_sb_puts(&b, " in the cluster");
    explain_blocked(x, &b);
    char path[512];
    if (best != NONE && required)
        tg_sb_printf(&b, "; best %s %s holds %llu", lname, tg_tree_path(t, best, path, sizeof path),
                     (unsigned long long)besth);
    else if (required)
        tg_sb_printf(&b, "; no %s in the cluster", lname); /* no node has its label */
    else
        tg_sb_printf(&b, "; the cluster holds %llu", (unsigned long long)besth);
    if (tried)
        tg_sb_printf(&b, "; %d candidate %s(s) fit by count but not all pod sets together", tried,
                     required ? lname : "domain"); /* without one: domains of any level */
    explain_limits(x, &b);
    for (uint32_t shown = 0; shown < 5 && all.len; shown++) {
        uint32_t m = 0;
        for (uint32_t j = 1; j < all.len; j++)
            if (all.n[j] > all.n[m])
                m = j;
        char txt[200];
        tg_sb_printf(&b, "; %u node%s %s", all.n[m], all.n[m] == 1 ? "" : "s",
                     tg_reason_text(all.reason[m], all.arg[m], txt, sizeof txt));
        all.reason[m] = all.reason[all.len - 1];
        all.arg[m] = all.arg[all.len - 1];
        all.n[m] = all.n[all.len - 1];
        all.len--;
    }
    snprintf(x->r->reason, sizeof x->r->reason, "%s", tg_sb_str(&b));
    tg_sb_free(&b);
    if (key.n != UINT32_MAX) {
        xm_store(x->s, &key, kh, x->r->reason);
        if (x->s->reasons)
            x->s->reasons->misses++;
    }
}

/* Replacements that fit nowhere: the gang's own domain at the required level
 * in numbers (tg_loss_explain), before the rest of the reason; an elastic
 * gang's growth (minMember placed: scheduler/elastic.h) goes nowhere else,
 * so its own domain is the whole reason. */
static void explain_home(struct pc *x, int required)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    uint32_t best = NONE, failed = 0;
    for (uint32_t k = 0; k < t->nbylevel[required]; k++) {
        uint32_t d = t->bylevel[required][k];
        if (x->home[d] && (best == NONE || x->sets[0].delig[d] > x->sets[0].delig[best]))
            best = d;
    }
    uint32_t *slots = best != NONE ? tg_arena_alloc(x->a, (t->nslots + 1) * sizeof *slots) : NULL;
    if (!slots)
        return;
    uint32_t m = tg_tree_slots_under(t, best, slots);
    for (uint32_t i = 0; i < m; i++)
        failed += tg_loss_node_failed(x->s->cluster.nodes[slots[i]].obj, NULL);
    struct tg_sb what = {0};
    describe_set(&x->sets[0], &what);
    char path[512], head[1024];
    int growth = x->g->nbound >= tg_gang_min(x->g);
    tg_loss_explain(head, sizeof head, growth ? "growth" : "replacement",
                    required ? x->s->policy.levels[required - 1].name : NULL,
                    required ? tg_tree_path(t, best, path, sizeof path) : NULL, x->sets[0].delig[best],
                    t->dom[best].nnodes, failed, tg_sb_str(&what));
    tg_sb_free(&what);
    struct tg_sb b = {0};
    if (growth)
        tg_sb_puts(&b, head);
    else
        tg_sb_printf(&b, "%s; %s", head, x->r->reason);
    snprintf(x->r->reason, sizeof x->r->reason, "%s", tg_sb_str(&b));
    tg_sb_free(&b);
}

static uint64_t set_weight(const struct set *st)
{
    const struct tg_pod *p = st->sh.pod;
    uint64_t ext = 0, cpu = 0;
    for (uint8_t i = 0; i < p->nreq; i++) {
        if (p->req[i].res >= TG_RES_NFIXED)
            ext += (uint64_t)p->req[i].val;
        else if (p->req[i].res == TG_RES_CPU)
            cpu += (uint64_t)p->req[i].val;
    }
    return ((ext * st->nmem) << 32) + cpu * st->nmem / 1000;
}

static int set_cmp(const void *a, const void *b)
{
    const struct set *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return (x->mem[0] > y->mem[0]) - (x->mem[0] < y->mem[0]);
}

/* Groups the gang's pods into sets of one shape, largest first. Pods of
 * equal spec whose labels differ where some selector looks (a placed pod's
 * anti-affinity, a member's own terms or spread) are different shapes. */
static int make_sets(struct pc *x)
{
    const struct tg_gang *g = x->g;
    struct tg_arena *a = x->a;
    uint32_t nslots = x->s->cluster.nslots, ndom = x->s->cluster.tree.ndom;
    uint64_t *hash = tg_arena_alloc(a, g->npods * sizeof *hash);
    uint32_t *setof = tg_arena_alloc(a, g->npods * sizeof *setof);
    uint32_t *rep = tg_arena_alloc(a, g->npods * sizeof *rep); /* per set: its first member */
    uint32_t *nmem = tg_arena_alloc(a, g->npods * sizeof *nmem);
    if (!hash || !setof || !rep || !nmem)
        return TG_ENOMEM;
    uint32_t nkeys = tg_plugins_label_keys(&x->s->cluster, g->pods, g->npods, NULL, 0);
    uint32_t *keys = nkeys ? tg_arena_alloc(a, nkeys * sizeof *keys) : NULL;
    if (nkeys && !keys)
        return TG_ENOMEM;
    if (nkeys) /* the first count was an upper bound: duplicates collapse now */
        nkeys = tg_plugins_label_keys(&x->s->cluster, g->pods, g->npods, keys, nkeys);
    uint32_t nsets = 0, last = 0;
    for (uint32_t i = 0; i < g->npods; i++) {
        const struct tg_pod *p = g->pods[i];
        /* equal shape and labels is an equivalence, so a pod is of at most
         * one set: the previous pod's set is checked first, without a hash
         * (members of one shape come in runs); the sets' first members
         * always have theirs */
        uint32_t k = last;
        if (!nsets || !tg_pod_same_shape(g->pods[rep[k]], p) ||
            !tg_pod_labels_same(g->pods[rep[k]], p, keys, nkeys)) {
            hash[i] = tg_pod_shape_hash(p);
            for (uint32_t j = 0; j < nkeys; j++)
                hash[i] = (hash[i] ^ tg_labels_get(p->labels, p->nlabels, keys[j])) * 0x100000001b3ull;
            k = 0;
            while (k < nsets && !(hash[rep[k]] == hash[i] && tg_pod_same_shape(g->pods[rep[k]], p) &&
                                  tg_pod_labels_same(g->pods[rep[k]], p, keys, nkeys)))
                k++;
        }
        if (k == nsets) {
            rep[k] = i;
            nmem[k] = 0;
            nsets++;
        }
        setof[i] = last = k;
        nmem[k]++;
    }
    x->sets = tg_arena_calloc(a, nsets, sizeof *x->sets);
    if (!x->sets)
        return TG_ENOMEM;
    x->nsets = nsets;
    for (uint32_t k = 0; k < x->nsets; k++) {
        struct set *st = &x->sets[k];
        st->sh.pod = g->pods[rep[k]];
        st->nmem = nmem[k];
        st->mem = tg_arena_alloc(a, st->nmem * sizeof *st->mem);
        /* counts: zeroed by counts_zero or filled whole by count_cached */
        st->sh.count = tg_arena_alloc(a, (nslots + 1) * sizeof *st->sh.count);
        st->score = tg_arena_alloc(a, (nslots + 1) * sizeof *st->score);
        st->dcount = tg_arena_alloc(a, (ndom + 1) * sizeof *st->dcount);
        st->delig = tg_arena_alloc(a, (ndom + 1) * sizeof *st->delig);
        if (!st->mem || !st->sh.count || !st->score || !st->dcount || !st->delig)
            return TG_ENOMEM;
        memset(st->score, 0xff, (nslots + 1) * sizeof *st->score);
        st->nmem = 0;
    }
    for (uint32_t i = 0; i < g->npods; i++) {
        struct set *st = &x->sets[setof[i]];
        st->mem[st->nmem++] = i;
    }
    for (uint32_t k = 0; k < x->nsets; k++) {
        x->sets[k].sh.npods = x->sets[k].nmem;
        x->sets[k].weight = set_weight(&x->sets[k]);
    }
    qsort(x->sets, x->nsets, sizeof *x->sets, set_cmp);
    for (uint32_t k = 0; k < x->nsets; k++) /* lowest rank first: placed in rank order */
        if (tg_rank_sort(g->pods, x->sets[k].mem, x->sets[k].nmem, a))
            return TG_ENOMEM;
    return 0;
}

uint32_t tg_gang_min(const struct tg_gang *g)
{
    if (g->min_member)
        return g->min_member;
    return g->pg ? (uint32_t)g->pg->min_member : 1;
}

uint32_t tg_gang_must(const struct tg_gang *g)
{
    uint32_t min = tg_gang_min(g);
    uint32_t must = min > g->nbound ? min - g->nbound : 1;
    return must > g->npods ? g->npods : must; /* not enough members: the queue waits for them */
}

static void set_weights(struct pc *x)
{
    for (int i = 0; tg_plugins[i] && i < MAX_PLUGINS; i++) {
        const char *n = tg_plugins[i]->name;
        x->weight[i] = !strcmp(n, "NodeResourcesFit") ? x->s->policy.score_binpack
                       : !strcmp(n, "NUMA")           ? x->s->policy.score_numa
                                                      : 10;
    }
}

/* Runs every plugin's prefilter on st: which plugins check it, whether
 * one says no node takes it now, its domain constraints. */
static int prefilter(struct pc *x, struct set *st)
{
    uint32_t np = 0, nd = 0;
    while (tg_plugins[np])
        np++;
    st->act = tg_arena_alloc(x->a, (np + 1) * sizeof *st->act);
    st->filt = tg_arena_alloc(x->a, (np + 1) * sizeof *st->filt);
    st->cnt = tg_arena_alloc(x->a, (np + 1) * sizeof *st->cnt);
    const struct tg_dcons *const **lists = tg_arena_alloc(x->a, (np + 1) * sizeof *lists);
    uint32_t *nl = tg_arena_alloc(x->a, (np + 1) * sizeof *nl);
    if (!st->act || !st->filt || !st->cnt || !lists || !nl)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < np; i++) {
        const struct tg_plugin *p = tg_plugins[i];
        nl[i] = 0;
        if (p->prefilter) {
            struct tg_status v = {TG_SUCCESS, 0, 0};
            int rc = p->prefilter(&x->cx, &st->sh, &v);
            if (rc)
                return rc;
            if (v.code == TG_SKIP)
                continue;
            if (v.code != TG_SUCCESS && st->blocked.code == TG_SUCCESS)
                st->blocked = v;
        }
        st->act[st->nact++] = p;
        st->plugins |= 1ull << i;
        if (p->filter)
            st->filt[st->nfilt++] = p->filter;
        if (p->count)
            st->cnt[st->ncnt++] = p->count;
        if (p->dcons)
            nd += nl[i] = p->dcons(&x->cx, &st->sh, &lists[i]);
    }
    st->soft = st->sh.soft;
    if (!nd)
        return 0;
    if (!(st->dcs = tg_arena_calloc(x->a, nd, sizeof *st->dcs)))
        return TG_ENOMEM;
    for (uint32_t i = 0; i < np; i++)
        for (uint32_t k = 0; k < nl[i]; k++)
            st->dcs[st->ndcs++].dc = lists[i][k];
    x->any_dcons = 1;
    return 0;
}

/* Tree level whose domains are the values of node label key: the level
 * of that label, when its domains' names are unique (a rack named r1 in
 * two zones is one domain for a topologyKey, two in the tree); 0 none.
 * *single: the deepest level, a node per domain. */
static uint32_t level_of_key(struct pc *x, uint32_t key, int *single)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    *single = 0;
    for (uint32_t l = 1; l <= t->nlevels; l++)
        if (t->label[l - 1] == key) {
            *single = l == t->nlevels;
            return t->ndup[l] ? 0 : l;
        }
    return 0;
}

/* Where each set's domain constraints apply (see struct set). */
static void classify(struct pc *x)
{
    for (uint32_t i = 0; i < x->nsets; i++) {
        struct set *st = &x->sets[i];
        for (uint32_t k = 0; k < st->ndcs; k++) {
            struct sdc *d = &st->dcs[k];
            int single;
            d->lvl = level_of_key(x, d->dc->key, &single);
            st->aligned |= d->lvl != 0;
            st->verify |= d->lvl == 0;
            st->rising |= d->dc->rising;
            st->exact |= d->dc->rising && !d->lvl;
            st->after |= d->dc->after;
            st->wide |= !single && !d->dc->rising;
        }
    }
}

/* Rising constraints are left out of per-node counts: note the nodes of
 * the domains they close now, for the reason. */
static void note_caps(struct pc *x, struct set *st)
{
    const struct tg_cluster *c = &x->s->cluster;
    const struct tg_tree *t = &c->tree;
    for (uint32_t k = 0; k < st->ndcs; k++) {
        const struct sdc *d = &st->dcs[k];
        if (!d->dc->rising)
            continue;
        if (!d->lvl) {
            for (uint32_t slot = 0; slot < c->nslots; slot++) {
                const struct tg_node_obj *o = c->nodes[slot].obj;
                if (st->sh.count[slot] && o &&
                    !d->dc->cap(d->dc, tg_labels_get(o->labels, o->nlabels, d->dc->key)))
                    hist_put(&st->hist, d->dc->reason, d->dc->arg, 1, 0);
            }
            continue;
        }
        for (uint32_t j = 0; j < t->nbylevel[d->lvl]; j++) {
            uint32_t dom = t->bylevel[d->lvl][j];
            uint32_t name = t->dom[dom].name;
            if (st->delig[dom] && !d->dc->cap(d->dc, name ? name : TG_STR_NONE))
                hist_put(&st->hist, d->dc->reason, d->dc->arg, st->delig[dom], 0);
        }
    }
}

/* Drops what the plugins registered for the sets (live queries). */
static int sg_plan(struct pc *x);

static void pc_release(struct pc *x)
{
    if (x->released)
        return;
    x->released = 1;
    for (uint32_t i = 0; x->sets && i < x->nsets; i++) {
        struct set *st = &x->sets[i];
        for (uint32_t k = 0; k < st->nact; k++)
            if (st->act[k]->release)
                st->act[k]->release(&x->cx, &st->sh);
    }
}

/* Sets up x for g: sets, counts on every node (under g->within). r->slot
 * must hold g->npods entries. Returns 0 or TG_ENOMEM (pc_release still
 * due). */
static int pc_init(struct pc *x, struct tg_sched *s, struct tg_arena *a, const struct tg_gang *g,
                   struct tg_result *r)
{
    struct tg_cluster *c = &s->cluster;
    *x = (struct pc){.s = s, .a = a, .g = g, .r = r, .cx = {c, &s->policy, &s->store, a, NULL, 0, 0}};
    x->strategy = g->pg && g->pg->strategy ? g->pg->strategy : s->policy.strategy;
    x->touched = tg_arena_alloc(a, (c->nslots + 1) * sizeof *x->touched);
    x->is_touched = tg_arena_calloc(a, c->nslots + 1, 1);
    int rc = TG_ENOMEM;
    if (!x->touched || !x->is_touched || (rc = make_sets(x)) || (rc = counted_slots(x)) ||
        (rc = sg_plan(x)))
        return rc;
    if (g->members && g->nbound) { /* the rest goes around the placed members (loss.h) */
        if (!(x->home = tg_arena_calloc(a, c->tree.ndom + 1, 1)))
            return TG_ENOMEM;
        if (!tg_loss_home(c, g->members, g->nbound, x->home))
            x->home = NULL;
    }
    if (!(x->shapes = tg_arena_alloc(a, (x->nsets + 1) * sizeof *x->shapes)))
        return TG_ENOMEM;
    for (uint32_t i = 0; i < x->nsets; i++)
        x->shapes[i] = &x->sets[i].sh;
    x->cx.gang = x->shapes;
    x->cx.ngang = x->nsets;
    for (uint32_t i = 0; i < x->nsets; i++)
        if ((rc = prefilter(x, &x->sets[i])))
            return rc;
    if (x->any_dcons)
        classify(x);
    for (uint32_t i = 0; i < x->nsets; i++) {
        struct set *st = &x->sets[i];
        if ((rc = count_cached(x, st)) < 0)
            return rc;
        if (!rc) {
            counts_zero(x, st);
            count_all(x, st);
        }
        for (uint32_t k = 0; k < st->ndcs; k++)
            st->dcs[k].gen = *st->dcs[k].dc->gen;
        if (st->rising)
            note_caps(x, st);
    }
    set_weights(x);
    return 0;
}

/* Each set's members onto its slots in rank order (scheduler/rank.h). */
static int rank_sets(struct pc *x)
{
    for (uint32_t i = 0; i < x->nsets; i++) {
        int rc = tg_rank_layout(&x->s->cluster, x->g->pods, x->sets[i].mem, x->sets[i].nmem,
                                x->r->slot, x->a);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- sub-groups (scheduler/subgroup.h) --------------------------------------
 * A gang with sub-groups is placed by domain as any gang, but each candidate
 * domain is decided by tg_subgroup_solve (one domain per sub-group, chosen
 * jointly), at the sub-groups' preferred levels first, then their required
 * ones; then each sub-group is filled into its domain, deepest level first,
 * the members in no sub-group last, anywhere in the gang's domain. */
struct sgplan {
    uint8_t bad;                        /* 1 invalid, 2 cannot be tried now: x->r->reason */
    uint32_t nsg;
    int32_t *of;                        /* per pod: its sub-group, -1 none */
    uint32_t *req, *pref;               /* per sub-group: tree levels (0: the gang's) */
    uint32_t *need;                     /* nsg x nsets */
    uint32_t *rest;                     /* per set: members in no sub-group */
    uint32_t *dom, *lvl;                /* per sub-group: where it went, at which level */
    struct tg_sgwhy why;                /* why the first gang domain tried failed */
    uint32_t why_dom, *why_lvl;
    uint32_t *placed;                   /* per sub-group: members placed already */
    uint8_t *opt;                       /* per sub-group: at its minMember already, what it
                                           has pending are extras: placed as room allows
                                           (elastic growth), not needed for the rest */
    uint32_t *sneed;                    /* need, with the optional sub-groups' rows zero: what
                                           the arrangement must hold */
    uint32_t *fixed[2];                 /* per sub-group: the domain its placed members hold at
                                           its preferred [0] and required [1] level, NONE none
                                           (sg_fixed); NULL: nothing placed */
    uint32_t *outer;                    /* per sub-group: its outer group (KAI's parent with a
                                           topologyConstraint), NONE none; NULL: no outer */
    uint32_t *oreq, *opref;             /* per outer group: tree levels */
    uint32_t *entry, *emin;             /* minSubGroups: per sub-group, its entry when it may
                                           wait (tg_subgroup_min_opt), else NONE; per entry,
                                           how many must start; NULL: none may wait */
    uint32_t omust;                     /* their members needed for minMember */
};

static int sg_bad(struct pc *x, int bad, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sg_bad(struct pc *x, int bad, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->r->reason, sizeof x->r->reason, fmt, ap);
    va_end(ap);
    x->sg->bad = (uint8_t)bad;
    return 0;
}

/* Tree level of a sub-group's level name or node label key into *out (0:
 * none given); -1 with the gang made invalid when it names no level. */
static int sg_level(struct pc *x, uint32_t name, const char *field, uint32_t *out)
{
    *out = 0;
    if (!name)
        return 0;
    int l = tg_policy_level_any(&x->s->policy, name);
    if (l < 0) {
        sg_bad(x, 1, "PodGroup %s: %s: \"%s\" is neither a level of the policy nor the node "
               "label of one", x->g->pg->key, field, tg_str(name));
        return -1;
    }
    *out = (uint32_t)l;
    return 0;
}

/* The outer groups of a KAI PodGroup (its parents with a topologyConstraint,
 * subgroup.h): each sub-group's, and their levels. */
static int sg_outer_levels(struct pc *x)
{
    const struct tg_podgroup *pg = x->g->pg;
    struct sgplan *p = x->sg;
    if (!pg->nouter || pg->sub_size > 0)
        return 0;
    p->outer = tg_arena_alloc(x->a, (p->nsg + 1) * sizeof *p->outer);
    p->oreq = tg_arena_calloc(x->a, pg->nouter + 1, sizeof *p->oreq);
    p->opref = tg_arena_calloc(x->a, pg->nouter + 1, sizeof *p->opref);
    if (!p->outer || !p->oreq || !p->opref)
        return TG_ENOMEM;
    for (uint32_t k = 0; k < p->nsg; k++)
        p->outer[k] = k < pg->nsubs && pg->subs[k].outer && pg->subs[k].outer <= pg->nouter
                          ? pg->subs[k].outer - 1 : NONE;
    for (uint32_t j = 0; j < pg->nouter; j++) {
        char f[300];
        snprintf(f, sizeof f, "spec.subGroups[name=%s].topologyConstraint.requiredTopologyLevel",
                 tg_str(pg->outer[j].name));
        if (sg_level(x, pg->outer[j].required, f, &p->oreq[j]))
            return 0;
        snprintf(f, sizeof f, "spec.subGroups[name=%s].topologyConstraint.preferredTopologyLevel",
                 tg_str(pg->outer[j].name));
        if (sg_level(x, pg->outer[j].preferred, f, &p->opref[j]))
            return 0;
        p->opref[j] = p->opref[j] < p->oreq[j] ? p->oreq[j] : p->opref[j];
    }
    return 0;
}

/* Which member is in which sub-group, what each needs per pod set, and the
 * levels; a gang that cannot be tried gets x->sg->bad and its reason. */
static int sg_levels(struct pc *x)
{
    const struct tg_podgroup *pg = x->g->pg;
    struct sgplan *p = x->sg;
    for (uint32_t k = 0; k < p->nsg; k++) {
        const struct tg_subgroup *sub = pg->sub_size > 0 ? &pg->sub_topo : &pg->subs[k];
        char base[48], f[80];
        if (pg->sub_size > 0)
            snprintf(base, sizeof base, "spec.subGroupTopology");
        else
            snprintf(base, sizeof base, "spec.subGroups[%u].topology", k);
        snprintf(f, sizeof f, "%s.required", base);
        if (sg_level(x, sub->required, f, &p->req[k]))
            return 0;
        snprintf(f, sizeof f, "%s.preferred", base);
        if (sg_level(x, sub->preferred, f, &p->pref[k]))
            return 0;
        if (p->pref[k] < p->req[k])
            p->pref[k] = p->req[k];
    }
    return sg_outer_levels(x);
}

/* A gang with members placed (a running gang's replacements, an elastic
 * gang's growth): each sub-group holding placed members takes the rest of
 * its members in the domain of its required level they hold (loss.h's rule,
 * per sub-group); the others are searched as usual. */
static int sg_fixed(struct pc *x)
{
    const struct tg_gang *g = x->g;
    struct sgplan *p = x->sg;
    const struct tg_tree *t = &x->s->cluster.tree;
    if (!g->members || !g->nbound)
        return 0;
    for (int pass = 0; pass < 2; pass++) {
        if (!(p->fixed[pass] = tg_arena_alloc(x->a, (p->nsg + 1) * sizeof **p->fixed)))
            return TG_ENOMEM;
        memset(p->fixed[pass], 0xff, (p->nsg + 1) * sizeof **p->fixed);
    }
    /* the tightest domain at a level holding all its placed members: at the
     * preferred level they may be apart (placed at the required one) */
    for (uint32_t i = 0; i < g->nbound; i++) {
        const struct tg_usage *u = g->members[i];
        int64_t k = tg_subgroup_of_usage(g->pg, u);
        if (k < 0 || k >= (int64_t)p->nsg || u->slot >= t->nslots || t->leaf[u->slot] == NONE)
            continue;
        for (int pass = 0; pass < 2; pass++) {
            uint32_t *f = &p->fixed[pass][k];
            uint32_t d = tg_tree_ancestor(t, t->leaf[u->slot], pass ? p->req[k] : p->pref[k]);
            if (*f != NONE) { /* apart at that level: their common domain */
                while (t->dom[d].level > t->dom[*f].level)
                    d = t->dom[d].parent;
                while (*f != d) {
                    *f = t->dom[*f].parent;
                    d = t->dom[d].parent;
                }
            }
            *f = d;
        }
    }
    return 0;
}

/* Under minSubGroups, the sub-groups that may wait (tg_subgroup_min_opt):
 * when the gang does not fit whole, the search may leave them out
 * (sg_try_in). pend[k]: members of sub-group k in the view. */
static int sg_optional(struct pc *x, const uint32_t *pend)
{
    const struct tg_podgroup *pg = x->g->pg;
    struct sgplan *p = x->sg;
    if (pg->nouter || pg->sub_size > 0 || p->nsg != pg->nsubs)
        return 0;
    uint8_t *opt = tg_arena_calloc(x->a, p->nsg + 1, 1);
    p->emin = tg_arena_calloc(x->a, pg->nsgpol + 1, sizeof *p->emin);
    p->entry = tg_arena_alloc(x->a, (p->nsg + 1) * sizeof *p->entry);
    if (!opt || !p->emin || !p->entry)
        return TG_ENOMEM;
    uint32_t rest = 0;
    for (uint32_t s = 0; s < x->nsets; s++)
        rest += p->rest[s];
    if (!tg_subgroup_min_opt(pg, p->placed, pend, tg_gang_must(x->g), rest, opt, p->emin,
                             &p->omust)) {
        p->entry = NULL;
        return 0;
    }
    for (uint32_t k = 0; k < p->nsg; k++)
        p->entry[k] = opt[k] ? pg->subs[k].policy : NONE;
    return 0;
}

/* The arrangement the search found with some sub-groups left out (p->dom[k]
 * NONE): which start, into x->r->sgkeep for the engine's fallback
 * (tg_subgroup_min_cut); the first found is kept (candidates come best
 * first). */
static int sg_keep(struct pc *x)
{
    struct sgplan *p = x->sg;
    if (x->r->sgkeep)
        return 0;
    if (!(x->r->sgkeep = calloc(p->nsg + 1, 1)))
        return TG_ENOMEM;
    x->r->nsgkeep = p->nsg;
    for (uint32_t k = 0; k < p->nsg; k++)
        x->r->sgkeep[k] = p->entry[k] == NONE || p->dom[k] != NONE;
    return 0;
}

static int sg_plan(struct pc *x)
{
    const struct tg_gang *g = x->g;
    const struct tg_podgroup *pg = g->pg;
    if (!tg_podgroup_has_subs(pg))
        return 0;
    struct sgplan *p = x->sg = tg_arena_calloc(x->a, 1, sizeof *p);
    if (!p || !(p->of = tg_arena_alloc(x->a, (g->npods + 1) * sizeof *p->of)))
        return TG_ENOMEM;
    p->why_dom = NONE;
    int64_t most = -1;
    char why[512];
    for (uint32_t i = 0; i < g->npods; i++) {
        int64_t k = tg_subgroup_of(pg, g->pods[i], why, sizeof why);
        if (k == -2)
            return sg_bad(x, 1, "%s", why);
        if (k >= TG_MAX_SUBGROUPS)
            return sg_bad(x, 1, "Pod %s: rank %lld with spec.subGroupSize %d of PodGroup %s makes "
                          "more than %d sub-groups", g->pods[i]->key, (long long)tg_pod_rank(g->pods[i]),
                          pg->sub_size, pg->key, TG_MAX_SUBGROUPS);
        p->of[i] = (int32_t)k;
        most = k > most ? k : most;
    }
    p->nsg = pg->sub_size > 0 ? (uint32_t)(most + 1) : pg->nsubs;
    for (uint32_t i = 0; g->members && i < g->nbound; i++) {
        int64_t k = tg_subgroup_of_usage(pg, g->members[i]);
        if (pg->sub_size > 0 && k >= (int64_t)p->nsg)
            p->nsg = (uint32_t)k + 1;
    }
    uint32_t n = p->nsg + 1, ns = x->nsets;
    p->req = tg_arena_calloc(x->a, n, sizeof *p->req);
    p->pref = tg_arena_calloc(x->a, n, sizeof *p->pref);
    p->need = tg_arena_calloc(x->a, (size_t)n * ns, sizeof *p->need);
    p->rest = tg_arena_calloc(x->a, ns + 1, sizeof *p->rest);
    p->dom = tg_arena_calloc(x->a, n, sizeof *p->dom);
    p->lvl = tg_arena_calloc(x->a, n, sizeof *p->lvl);
    p->why_lvl = tg_arena_calloc(x->a, n, sizeof *p->why_lvl);
    p->placed = tg_arena_calloc(x->a, n, sizeof *p->placed);
    p->opt = tg_arena_calloc(x->a, n, 1);
    p->sneed = tg_arena_calloc(x->a, (size_t)n * ns, sizeof *p->sneed);
    if (!p->req || !p->pref || !p->need || !p->rest || !p->dom || !p->lvl || !p->why_lvl ||
        !p->placed || !p->opt || !p->sneed)
        return TG_ENOMEM;
    for (uint32_t s = 0; s < ns; s++)
        for (uint32_t m = 0; m < x->sets[s].nmem; m++) {
            int32_t k = p->of[x->sets[s].mem[m]];
            if (k < 0)
                p->rest[s]++;
            else
                p->need[(size_t)k * ns + s]++;
        }
    for (uint32_t i = 0; g->members && i < g->nbound; i++) {
        int64_t k = tg_subgroup_of_usage(pg, g->members[i]);
        if (k >= 0 && k < (int64_t)p->nsg)
            p->placed[k]++;
    }
    if (tg_subgroup_has_min(pg)) { /* Volcano's minSubGroups: enough whole sub-groups */
        uint32_t *pend = tg_arena_calloc(x->a, n, sizeof *pend);
        if (!pend)
            return TG_ENOMEM;
        for (uint32_t k = 0; k < p->nsg; k++)
            for (uint32_t s = 0; s < ns; s++)
                pend[k] += p->need[(size_t)k * ns + s];
        if (tg_subgroup_min_short(pg, p->placed, pend, why, sizeof why))
            return sg_bad(x, 2, "%s", why);
        int rc = sg_optional(x, pend);
        if (rc)
            return rc;
    }
    for (uint32_t k = 0; k < p->nsg; k++) {
        uint32_t pend = 0, min = tg_subgroup_min(pg, k);
        for (uint32_t s = 0; s < ns; s++)
            pend += p->need[(size_t)k * ns + s];
        /* a sub-group with nothing to place waits for nothing once the gang
         * runs or is elastic (its members beyond maxMember wait whole); a
         * Volcano one whose members all left is none */
        if (!pend && (g->nbound || pg->max_member > 0 ||
                      (pg->sub_by == TG_SUB_BY_VOLCANO && !p->placed[k])))
            continue;
        char name[128];
        p->opt[k] = g->nbound && p->placed[k] >= min;
        if (!p->opt[k])
            memcpy(&p->sneed[(size_t)k * ns], &p->need[(size_t)k * ns], ns * sizeof *p->sneed);
        if (pend + p->placed[k] < min)
            return sg_bad(x, 2, "sub-group %s of PodGroup %s has %u of its minMember %u pods",
                          tg_subgroup_name(pg, k, name, sizeof name), pg->key,
                          pend + p->placed[k], min);
    }
    int rc = sg_levels(x);
    return rc || p->bad ? rc : sg_fixed(x);
}

/* Whether sub-group k is filled with the members in no sub-group: its
 * domain is the gang domain d (its level not below the gang's), so it
 * holds no more than they do, and the whole run is packed as one, as the
 * plain path packs a gang (filled one by one, each would take the child
 * that best fits its own few members: sub-groups of 4 in a rack of
 * NVLink domains of 5 would take 4 + 4 where the gang takes 5 + 3).
 * Extras (opt) stay apart: placed as room allows, last. */
static int sg_with_rest(const struct sgplan *p, uint32_t k, uint32_t d)
{
    return p->dom[k] == d && !p->opt[k];
}

/* Members of each set in the order they are filled: the sub-groups placed
 * below the gang domain d, deepest level first (lvl), then by index; then
 * in one run those filled with the members in no sub-group (sg_with_rest)
 * and those members; the extras last. A counting sort: O(members +
 * sub-groups). Returns 0 or TG_ENOMEM. */
static int sg_order(struct pc *x, uint32_t d, const uint32_t *lvl)
{
    struct sgplan *p = x->sg;
    uint32_t n = p->nsg, maxl = 0;
    uint32_t *pos = tg_arena_calloc(x->a, n + 2, sizeof *pos);
    uint32_t *start = tg_arena_calloc(x->a, n + 3, sizeof *start);
    uint32_t *bylvl = tg_arena_calloc(x->a, TG_MAX_LEVELS + 2, sizeof *bylvl);
    uint32_t *tmp = tg_arena_alloc(x->a, (x->g->npods + 1) * sizeof *tmp);
    if (!pos || !start || !bylvl || !tmp)
        return TG_ENOMEM;
    uint32_t nopt = 0, nrest = 0;
    for (uint32_t k = 0; k < n; k++) {
        nopt += p->opt[k];
        nrest += sg_with_rest(p, k, d);
        bylvl[lvl[k]] += !p->opt[k] && !sg_with_rest(p, k, d);
        maxl = lvl[k] > maxl ? lvl[k] : maxl;
    }
    uint32_t at = 0;
    for (uint32_t l = maxl + 1; l-- > 0;) {
        uint32_t c = bylvl[l];
        bylvl[l] = at;
        at += c;
    }
    /* buckets: [below d, by level][with the rest][the rest: rest][extras] */
    uint32_t w = at, rest = at + nrest, o = rest + 1;
    for (uint32_t k = 0; k < n; k++)
        pos[k] = p->opt[k] ? o++ : sg_with_rest(p, k, d) ? w++ : bylvl[lvl[k]]++;
    for (uint32_t s = 0; s < x->nsets; s++) {
        struct set *st = &x->sets[s];
        memset(start, 0, (n + 3) * sizeof *start);
        for (uint32_t i = 0; i < st->nmem; i++) {
            int32_t k = p->of[st->mem[i]];
            start[(k < 0 ? rest : pos[k]) + 1]++;
        }
        for (uint32_t i = 1; i <= n + 2; i++)
            start[i] += start[i - 1];
        for (uint32_t i = 0; i < st->nmem; i++) {
            int32_t k = p->of[st->mem[i]];
            tmp[start[k < 0 ? rest : pos[k]]++] = st->mem[i];
        }
        memcpy(st->mem, tmp, st->nmem * sizeof *tmp);
    }
    return 0;
}

/* Fills each sub-group into p->dom[k], then the rest (with the sub-groups
 * whose domain is d) into d; *ok when every member went where it should
 * (else rolled back). */
static int sg_fill(struct pc *x, uint32_t d, const uint32_t *lvl, int *ok)
{
    struct sgplan *p = x->sg;
    *ok = 0;
    int rc = sg_order(x, d, lvl);
    if (rc)
        return rc;
    for (uint32_t s = 0; s < x->nsets; s++) {
        struct set *st = &x->sets[s];
        uint32_t together = p->rest[s];
        for (uint32_t k = 0; k < p->nsg; k++)
            together += sg_with_rest(p, k, d) ? p->need[(size_t)k * x->nsets + s] : 0;
        while (st->next < st->nmem) {
            int32_t k = p->of[st->mem[st->next]];
            int with = k < 0 || sg_with_rest(p, (uint32_t)k, d);
            uint32_t want = with ? together : p->need[(size_t)k * x->nsets + s];
            uint32_t placed = 0;
            rc = fill(x, st, with ? d : p->dom[k], want, &placed);
            if (rc)
                return rc;
            if (placed < want && !with && p->opt[k]) {
                st->next += want - placed; /* extras: as many as room allows */
                continue;
            }
            if (placed < want) {
                rollback(x);
                return 0;
            }
        }
    }
    if (!x->r->nplaced) { /* only extras, and no room for any */
        rollback(x);
        return 0;
    }
    *ok = 1;
    memcpy(p->lvl, lvl, p->nsg * sizeof *lvl);
    return 0;
}

/* ---- rank order across sub-groups (scheduler/rank.h) ----------------------
 * Sub-groups alike (the same members per pod set, the same level) are
 * interchangeable in an arrangement: their domains are dealt out in topology
 * order, lowest-ranked sub-group first (sg_rank_domains, before the fill);
 * then each pod set's members of alike sub-groups take those sub-groups'
 * slots in topology order, sub-group by sub-group, rank by rank within one
 * (sg_rank_layout, after it): each sub-group's run of slots stays inside its
 * own domain, and for a gang whose sub-groups hold consecutive ranks
 * (spec.subGroupSize, a JobSet's jobs) the whole gang is laid out as rank
 * order lays out a gang without sub-groups. Members in no sub-group are laid
 * out among themselves. Neither step changes what is placed where by count:
 * feasibility is the arrangement's. */
struct sgrank {
    const struct sgplan *p;
    const uint32_t *lvl;
    uint32_t nsets;
    const uint64_t *lo;                 /* per sub-group: its lowest rank key, UINT64_MAX none */
};

static int sg_alike_cmp(const struct sgrank *r, uint32_t a, uint32_t b)
{
    if (r->lvl[a] != r->lvl[b])
        return r->lvl[a] < r->lvl[b] ? -1 : 1;
    if (r->p->outer && r->p->outer[a] != r->p->outer[b]) /* each inside its own outer group's */
        return r->p->outer[a] < r->p->outer[b] ? -1 : 1;
    for (uint32_t s = 0; s < r->nsets; s++) {
        uint32_t na = r->p->need[(size_t)a * r->nsets + s], nb = r->p->need[(size_t)b * r->nsets + s];
        if (na != nb)
            return na < nb ? -1 : 1;
    }
    return 0;
}

static int sg_rank_cmp(const void *pa, const void *pb, void *ud)
{
    const struct sgrank *r = ud;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = sg_alike_cmp(r, a, b);
    if (c)
        return c;
    if (r->lo[a] != r->lo[b])
        return r->lo[a] < r->lo[b] ? -1 : 1;
    return (a > b) - (a < b);
}

static int dom_topo_cmp(const void *pa, const void *pb, void *t)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = tg_rank_domain_cmp(t, a, b);
    return c ? c : (a > b) - (a < b);
}

/* The sub-groups in rank order within runs of alike ones into *order
 * (p->nsg of them), NULL when no member has a rank. */
static int sg_rank_order(struct pc *x, const uint32_t *lvl, uint32_t **order)
{
    struct sgplan *p = x->sg;
    *order = NULL;
    uint64_t *lo = tg_arena_alloc(x->a, (p->nsg + 1) * sizeof *lo);
    uint32_t *ord = tg_arena_alloc(x->a, (p->nsg + 1) * sizeof *ord);
    if (!lo || !ord)
        return TG_ENOMEM;
    memset(lo, 0xff, (p->nsg + 1) * sizeof *lo);
    int any = 0;
    for (uint32_t i = 0; i < x->g->npods; i++) {
        uint64_t r = x->g->pods[i]->rank;
        if (p->of[i] >= 0 && r && r - 1 < lo[p->of[i]])
            lo[p->of[i]] = r - 1;
        any |= r != 0;
    }
    if (!any)
        return 0;
    for (uint32_t k = 0; k < p->nsg; k++)
        ord[k] = k;
    struct sgrank r = {p, lvl, x->nsets, lo};
    qsort_r(ord, p->nsg, sizeof *ord, sg_rank_cmp, &r);
    *order = ord;
    return 0;
}

/* Before the fill: alike sub-groups' domains dealt out in topology order,
 * lowest-ranked sub-group first. */
static int sg_rank_domains(struct pc *x, const uint32_t *lvl)
{
    struct sgplan *p = x->sg;
    const struct tg_tree *t = &x->s->cluster.tree;
    uint32_t *ord, *doms = tg_arena_alloc(x->a, (p->nsg + 1) * sizeof *doms);
    if (p->fixed[0])
        return 0; /* members placed: each sub-group stays where they are */
    int rc = sg_rank_order(x, lvl, &ord);
    if (rc || !ord)
        return rc;
    if (!doms)
        return TG_ENOMEM;
    struct sgrank r = {p, lvl, x->nsets, NULL};
    for (uint32_t i = 0, j; i < p->nsg; i = j) {
        for (j = i + 1; j < p->nsg && !sg_alike_cmp(&r, ord[i], ord[j]); j++)
            ;
        for (uint32_t k = i; k < j; k++)
            doms[k - i] = p->dom[ord[k]];
        qsort_r(doms, j - i, sizeof *doms, dom_topo_cmp, (void *)t);
        for (uint32_t k = i; k < j; k++)
            p->dom[ord[k]] = doms[k - i];
    }
    return 0;
}

/* After the fill: each set's members of alike sub-groups onto their slots
 * in topology order, sub-group by sub-group in rank order; members in no
 * sub-group among themselves. st->mem holds each sub-group's members
 * together, in rank order (sg_order keeps make_sets' order). */
static int sg_rank_layout(struct pc *x)
{
    struct sgplan *p = x->sg;
    uint32_t *ord, n = p->nsg;
    int rc = sg_rank_order(x, p->lvl, &ord);
    if (rc || !ord)
        return rc;
    uint32_t *at = tg_arena_alloc(x->a, (n + 1) * sizeof *at);
    uint32_t *cnt = tg_arena_alloc(x->a, (n + 1) * sizeof *cnt);
    uint32_t *who = tg_arena_alloc(x->a, (x->g->npods + 1) * sizeof *who);
    if (!at || !cnt || !who)
        return TG_ENOMEM;
    struct sgrank r = {p, p->lvl, x->nsets, NULL};
    for (uint32_t s = 0; s < x->nsets; s++) {
        const struct set *st = &x->sets[s];
        uint32_t nrest = 0;
        memset(cnt, 0, (n + 1) * sizeof *cnt);
        for (uint32_t i = 0; i < st->nmem; i++) {
            int32_t k = p->of[st->mem[i]];
            if (k < 0) {
                who[nrest++] = st->mem[i];
                continue;
            }
            if (!cnt[k]++)
                at[k] = i;
        }
        if ((rc = tg_rank_layout(&x->s->cluster, x->g->pods, who, nrest, x->r->slot, x->a)))
            return rc;
        for (uint32_t i = 0, j; i < n; i = j) {
            uint32_t m = 0;
            for (j = i; j < n && (j == i || (!p->fixed[0] && !sg_alike_cmp(&r, ord[i], ord[j])));
                 j++)
                for (uint32_t q = 0; q < cnt[ord[j]]; q++)
                    who[m++] = st->mem[at[ord[j]] + q];
            rc = tg_rank_layout_as(&x->s->cluster, x->g->pods, who, m, x->r->slot, x->a);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int sg_try_in(struct pc *x, uint32_t d, uint32_t slot, int *ok)
{
    struct sgplan *p = x->sg;
    *ok = 0;
    if (slot != NONE || p->bad)
        return 0;
    uint32_t **count = tg_arena_alloc(x->a, (x->nsets + 1) * sizeof *count);
    if (!count)
        return TG_ENOMEM;
    for (uint32_t s = 0; s < x->nsets; s++)
        count[s] = x->sets[s].dcount;
    int differ = memcmp(p->pref, p->req, p->nsg * sizeof *p->req) != 0 ||
                 (p->outer && memcmp(p->opref, p->oreq, x->g->pg->nouter * sizeof *p->oreq));
    for (int pass = differ ? 0 : 1; pass < 2; pass++) {
        const uint32_t *lvl = pass ? p->req : p->pref;
        struct tg_sgprob prob = {&x->s->cluster.tree, x->nsets, count, p->nsg, lvl, p->sneed,
                                 p->rest, 0, p->fixed[pass]};
        if (p->outer) { /* KAI's parents with a constraint (subgroup.h) */
            prob.nouter = x->g->pg->nouter;
            prob.outer = p->outer;
            prob.olevel = pass ? p->oreq : p->opref;
        }
        struct tg_sgwhy why, why2;
        int found = tg_subgroup_solve(&prob, d, x->a, p->dom, &why);
        if (found < 0)
            return found;
        if (!found && p->entry) { /* minSubGroups: which may start, some waiting */
            prob.entry = p->entry;
            prob.nentry = x->g->pg->nsgpol + 1;
            prob.emin = p->emin;
            prob.omust = p->omust;
            int some = tg_subgroup_solve(&prob, d, x->a, p->dom, &why2);
            if (some < 0 || (some && (some = sg_keep(x))))
                return some;
        }
        if (found) {
            int rc = sg_rank_domains(x, lvl);
            if (!rc)
                rc = sg_fill(x, d, lvl, ok);
            if (rc || *ok)
                return rc;
            why.unfilled = 1; /* the counts held it; pod shapes competing for nodes did not */
        }
        /* the first gang domain's; with members placed, the widest tried
         * (candidates only hold them, tightest first: it is the answer) */
        if (pass == 1 && (p->why_dom == NONE ||
                          (p->fixed[1] && x->s->cluster.tree.dom[d].level <=
                                              x->s->cluster.tree.dom[p->why_dom].level))) {
            p->why = why;
            p->why_dom = d;
            memcpy(p->why_lvl, lvl, p->nsg * sizeof *lvl);
        }
    }
    return 0;
}

/* The sub-groups' levels and domains into x->r (none when out of memory:
 * the placement stands). */
static int sg_result(struct pc *x)
{
    struct sgplan *p = x->sg;
    const struct tg_tree *t = &x->s->cluster.tree;
    if (!(x->r->sub = calloc(p->nsg + 1, sizeof *x->r->sub)))
        return 0;
    x->r->nsub = p->nsg;
    for (uint32_t k = 0; k < p->nsg; k++) {
        struct tg_subplace *sp = &x->r->sub[k];
        sp->domain = p->dom[k] == x->r->domain || t->dom[p->dom[k]].level <= x->r->level
                         ? x->r->domain : p->dom[k];
        sp->level = sp->domain == x->r->domain ? x->r->level : (int)p->lvl[k];
        for (uint32_t s = 0; s < x->nsets; s++)
            sp->npods += p->need[(size_t)k * x->nsets + s];
    }
    return 0;
}

/* The reason of a gang whose sub-groups found no arrangement: which
 * sub-group, in which gang domain, with numbers; then the gang's own. */
static void sg_explain(struct pc *x)
{
    struct sgplan *p = x->sg;
    const struct tg_tree *t = &x->s->cluster.tree;
    const struct tg_policy *pol = &x->s->policy;
    char gpath[256], name[128], *old = strdup(x->r->reason);
    uint32_t gl = t->dom[p->why_dom].level;
    /* "rack z1/b1/r1", or the whole cluster (no path to print) */
    const char *glname = gl ? pol->levels[gl - 1].name : "the";
    if (gl)
        tg_tree_path(t, p->why_dom, gpath, sizeof gpath);
    else
        snprintf(gpath, sizeof gpath, "cluster");
    struct tg_sb b = {0};
    if (p->why.unfilled)
        tg_sb_printf(&b, "sub-groups: an arrangement in %s %s fits by count, but its pod sets "
                         "compete for the same nodes", glname, gpath);
    else if (p->why.gave_up)
        tg_sb_printf(&b, "sub-groups: the search for an arrangement in %s %s gave up after %u steps",
                     glname, gpath, TG_SUBGROUP_STEPS);
    else if (p->why.fixed != NONE && p->why.sg != NONE) {
        uint32_t k = p->why.sg, fl = t->dom[p->why.fixed].level, n = 0;
        char fpath[256];
        for (uint32_t s = 0; s < x->nsets; s++)
            n += p->need[(size_t)k * x->nsets + s];
        if (fl)
            tg_tree_path(t, p->why.fixed, fpath, sizeof fpath);
        else
            snprintf(fpath, sizeof fpath, "cluster");
        tg_sb_printf(&b, "sub-group %s: its %s %s (where its members run) has room for %u of its "
                         "%u pods", tg_subgroup_name(x->g->pg, k, name, sizeof name),
                     fl ? pol->levels[fl - 1].name : "domain, the", fpath, p->why.most, n);
    } else if (p->why.rest || p->why.sg == NONE)
        tg_sb_printf(&b, "sub-groups: the members in no sub-group do not fit beside the sub-groups "
                         "in %s %s", glname, gpath);
    else {
        uint32_t k = p->why.sg, lv = p->why_lvl[k] > gl ? p->why_lvl[k] : gl, n = 0;
        for (uint32_t s = 0; s < x->nsets; s++)
            n += p->need[(size_t)k * x->nsets + s];
        tg_sb_printf(&b, "sub-group %s: no %s in %s %s has room for its %u pods (most: %u; %u of %u "
                         "sub-groups fit, %u %s%s there)",
                     tg_subgroup_name(x->g->pg, k, name, sizeof name),
                     lv ? pol->levels[lv - 1].name : "cluster", glname, gpath, n, p->why.most,
                     p->why.placed, p->nsg, p->why.ndom, lv ? pol->levels[lv - 1].name : "cluster",
                     p->why.ndom == 1 ? "" : "s");
    }
    if (old)
        tg_sb_printf(&b, "; %s", old);
    snprintf(x->r->reason, sizeof x->r->reason, "%s", tg_sb_str(&b));
    tg_sb_free(&b);
    free(old);
}

/* Tries the domains of each level from `preferred` to `required`, best
 * first, each asked to hold at least `want` members: 1 placed (x->r says
 * where), 0 none (*tried counts the domains tried, when not NULL), or a
 * negative TG_E* code (the caller rolls back). */
static int try_levels(struct pc *x, int preferred, int required, uint32_t want,
                      struct cand *cands, uint32_t ncap, int *tried)
{
    const struct tg_tree *t = &x->s->cluster.tree;
    struct tg_result *r = x->r;
    /* no domain holds more than the cluster does (without domain caps a
     * domain's counts are its children's sums): when the cluster cannot
     * hold `want` members, no level has a candidate */
    if (t->ndom && !any_aligned(x) && holds(x, 0) < want)
        return 0;
    for (int lvl = preferred; lvl >= required; lvl--) {
        uint32_t n = candidates(x, (uint32_t)lvl, required, !x->sg, want, cands, ncap);
        for (uint32_t i = 0; i < n; i++) {
            int ok, rc;
            uint32_t slot = cands[i].slot;
            rc = try_in(x, slot == NONE ? cands[i].d : t->leaf[slot], slot, want, &ok);
            if (!rc && ok)
                rc = x->sg ? sg_rank_layout(x) : rank_sets(x);
            if (rc)
                return rc;
            if (ok) {
                r->status = TG_GANG_SCHEDULED;
                /* a loose node: named by the tightest real domain holding it */
                r->domain = slot == NONE ? cands[i].d : tg_tree_named(t, t->leaf[slot]);
                r->level = slot == NONE ? lvl : t->dom[r->domain].level;
                return 1;
            }
            if (tried)
                (*tried)++;
        }
    }
    return 0;
}

/* How many members the first pass over the domains asks of one: an elastic
 * gang (spec.maxMember) placing its first members (none placed), without
 * sub-groups, asks every member it takes now (its view is already cut to
 * the desired size, elastic.h); any other gang `must`. */
static uint32_t elastic_want(const struct tg_gang *g, int subgroups, uint32_t must)
{
    if (subgroups || g->nbound || !g->pg || g->pg->max_member <= 0 || g->npods <= must)
        return must;
    return g->npods;
}

int tg_sched_gang(struct tg_sched *s, const struct tg_gang *g, struct tg_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = TG_GANG_UNSCHEDULABLE;
    r->domain = NONE;
    r->slot = malloc((g->npods + 1) * sizeof *r->slot);
    if (!r->slot)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < g->npods; i++)
        r->slot[i] = NONE;
    s->ncycles++;
    if (g->npods == 0) {
        r->status = TG_GANG_SCHEDULED;
        return 0;
    }
    int required, preferred;
    if (tg_gang_levels(&s->policy, g->pg, &required, &preferred, r->reason, sizeof r->reason)) {
        r->status = TG_GANG_INVALID;
        return 0;
    }
    tg_arena_reset(&s->scratch);
    struct pc x;
    int rc = pc_init(&x, s, &s->scratch, g, r);
    if (rc) {
        pc_release(&x);
        return rc;
    }
    uint32_t must = tg_gang_must(g);
    if (x.sg && x.sg->bad) {
        r->status = x.sg->bad == 1 ? TG_GANG_INVALID : TG_GANG_UNSCHEDULABLE;
        pc_release(&x);
        return 0;
    }
    if (x.strategy == TG_STRATEGY_SPREAD)
        preferred = required;
    else if (x.home)
        preferred = (int)s->cluster.tree.nlevels; /* replacements: tightest first */
    int tried = 0;
    const struct tg_tree *t = &s->cluster.tree;
    /* sub-groups: every domain is a candidate (counts cover the gang but
     * the arrangement may not), each decided by tg_subgroup_solve */
    uint32_t ncap = x.sg ? t->ndom + 1 : MAX_TRIES;
    struct cand *cands = tg_arena_alloc(&s->scratch, ncap * sizeof *cands);
    if (!cands) {
        pc_release(&x);
        return TG_ENOMEM;
    }
    /* an elastic gang's first placement: the tightest domain that holds its
     * desired size (every member it takes now) before one that holds only
     * minMember (where it might never grow); that second pass as before */
    uint32_t want = elastic_want(g, x.sg != NULL, must);
    rc = want != must ? try_levels(&x, preferred, required, want, cands, ncap, NULL) : 0;
    if (!rc)
        rc = try_levels(&x, preferred, required, must, cands, ncap, &tried);
    if (rc < 0)
        goto fail;
    if (rc > 0) {
        pc_release(&x);
        return x.sg ? sg_result(&x) : 0;
    }
    explain(&x, must, required, tried);
    if (x.sg && x.sg->why_dom != NONE)
        sg_explain(&x);
    if (x.home)
        explain_home(&x, required);
    pc_release(&x);
    return 0;
fail:
    rollback(&x);
    pc_release(&x);
    return rc;
}

void tg_result_free(struct tg_result *r)
{
    free(r->slot);
    r->slot = NULL;
    free(r->sub);
    r->sub = NULL;
    r->nsub = 0;
    free(r->sgkeep);
    r->sgkeep = NULL;
    r->nsgkeep = 0;
}

/* ---- what-if sessions ------------------------------------------------------ */

struct tg_whatif {
    struct pc x;
    struct tg_arena arena;
    struct tg_result r;
    uint32_t must;
    int required;
    uint64_t runs;                      /* dry runs made (tg_whatif_runs) */
};

int tg_whatif_begin(struct tg_sched *s, const struct tg_gang *g, struct tg_whatif **out)
{
    *out = NULL;
    struct tg_whatif *w = calloc(1, sizeof *w);
    if (!w)
        return TG_ENOMEM;
    w->r.domain = NONE;
    w->r.slot = malloc((g->npods + 1) * sizeof *w->r.slot);
    int rc = TG_ENOMEM;
    if (!w->r.slot)
        goto fail;
    for (uint32_t i = 0; i < g->npods; i++)
        w->r.slot[i] = NONE;
    int preferred;
    if (tg_gang_levels(&s->policy, g->pg, &w->required, &preferred, w->r.reason, sizeof w->r.reason))
        w->required = 0; /* an invalid gang never gets here: the engine checks first */
    if ((rc = pc_init(&w->x, s, &w->arena, g, &w->r)))
        goto fail;
    w->must = tg_gang_must(g);
    *out = w;
    return 0;
fail:
    tg_whatif_end(&w);
    return rc;
}

void tg_whatif_end(struct tg_whatif **pw)
{
    struct tg_whatif *w = *pw;
    if (!w)
        return;
    if (w->x.s)
        pc_release(&w->x);
    tg_result_free(&w->r);
    tg_arena_free(&w->arena);
    free(w);
    *pw = NULL;
}

void tg_whatif_hide(struct tg_whatif *w, struct tg_usage *u, int hide)
{
    if (!!hide == u->hidden)
        return;
    tg_cluster_usage_hide(&w->x.s->cluster, u, hide);
    recount(&w->x, u->slot);
    if (w->x.any_dcons)
        mark_stale(&w->x, 1); /* redone lazily: a preemption plan hides many at once */
}

uint64_t tg_whatif_holds(struct tg_whatif *w, uint32_t d)
{
    flush(&w->x);
    return holds(&w->x, d);
}

int tg_whatif_slot_fits(struct tg_whatif *w, uint32_t slot)
{
    flush(&w->x);
    for (uint32_t i = 0; i < w->x.nsets; i++)
        if (w->x.sets[i].sh.count[slot])
            return 1;
    return 0;
}

int tg_whatif_fits(struct tg_whatif *w, uint32_t d, int *ok, uint32_t *slots)
{
    flush(&w->x);
    *ok = 0;
    /* Without domain constraints or sub-groups a set's counts only fall as
     * members are assumed, so no fill places more than d's counts hold:
     * below `must` the dry run cannot succeed (try_in's exact step needs
     * holds >= must too). Preemption's reprieve fails most tries here. */
    if (!w->x.any_dcons && !w->x.sg && holds(&w->x, d) < w->must)
        return 0;
    w->runs++;
    struct tg_arena_mark m = tg_arena_mark(&w->arena);
    /* the dry run's members are taken back before it returns: quiet, the
     * gang and queue layers never hear of them (tg_cluster_quiet). Not for
     * a gang with placed members: which node anchors it follows its
     * members' comings and goings, the dry run's too (gang.c) */
    struct tg_cluster *c = &w->x.s->cluster;
    int quiet = !w->x.g->nbound;
    tg_cluster_quiet(c, quiet);
    int rc = try_in(&w->x, d, NONE, w->must, ok);
    if (!rc && *ok && slots)
        memcpy(slots, w->r.slot, w->x.g->npods * sizeof *slots);
    if (*ok || rc)
        rollback(&w->x);
    tg_cluster_quiet(c, 0);
    tg_arena_release(&w->arena, m);
    return rc;
}

uint32_t tg_whatif_domains(struct tg_whatif *w, uint32_t lvl, uint32_t *out, uint32_t cap)
{
    flush(&w->x);
    if (w->x.s->cluster.tree.ndom && !any_aligned(&w->x) && holds(&w->x, 0) < w->must)
        return 0; /* the cluster does not hold it: no domain does (as tg_sched_gang) */
    struct tg_arena_mark m = tg_arena_mark(&w->arena);
    struct cand *c = tg_arena_alloc(&w->arena, (cap + 1) * sizeof *c);
    uint32_t n = c ? candidates(&w->x, lvl, w->required, 0, w->must, c, cap) : 0;
    for (uint32_t i = 0; i < n; i++)
        out[i] = c[i].d;
    tg_arena_release(&w->arena, m);
    return n;
}

void tg_whatif_explain(struct tg_whatif *w, char *buf, size_t n)
{
    flush(&w->x);
    explain(&w->x, w->must, w->required, 0);
    snprintf(buf, n, "%s", w->r.reason);
}

uint32_t tg_whatif_best(struct tg_whatif *w, uint32_t lvl, uint64_t *most)
{
    flush(&w->x);
    const struct tg_tree *t = &w->x.s->cluster.tree;
    uint32_t best = NONE;
    *most = 0;
    for (uint32_t k = 0; lvl <= t->nlevels && k < t->nbylevel[lvl]; k++) {
        uint32_t d = t->bylevel[lvl][k];
        if (!tg_tree_labelled(t, d, lvl) ||
            ((uint32_t)w->required <= lvl && !tg_tree_labelled(t, d, (uint32_t)w->required)))
            continue; /* no domain: its nodes lack a label */
        uint64_t h = holds(&w->x, d);
        if (t->dom[d].nnodes && (best == NONE || h > *most)) {
            best = d;
            *most = h;
        }
    }
    return best;
}

uint32_t tg_whatif_must(const struct tg_whatif *w)
{
    return w->must;
}

uint64_t tg_whatif_runs(const struct tg_whatif *w)
{
    return w->runs;
}
