/* Rank order: members of one shape laid out on the slots placement chose,
 * and the crossings of consecutive ranks reported. See rank.h. */
#include "scheduler/rank.h"
#include "util/err.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define NONE TG_NONE

struct keyed {
    uint64_t key;                       /* rank order key, UINT64_MAX: no rank */
    uint32_t i;                         /* index into pods / slots */
    uint32_t slot;
};

static uint64_t key_of(const struct tg_pod *p)
{
    return p->rank ? p->rank - 1 : UINT64_MAX;
}

static int keyed_cmp(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Ranks 0..n-1 or near (an indexed Job, a JobSet's pods, topogang.io/rank),
 * each once: placed by value in one pass. Returns 0 when they are not. */
static int sort_dense(struct tg_pod *const *pods, uint32_t *mem, uint32_t n, struct tg_arena *a)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = key_of(pods[mem[i]]);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (hi == UINT64_MAX || hi - lo >= 2ull * n)
        return 0;
    uint32_t span = (uint32_t)(hi - lo) + 1, *at = tg_arena_alloc(a, span * sizeof *at);
    if (!at)
        return 0;
    memset(at, 0xff, span * sizeof *at);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t *x = &at[key_of(pods[mem[i]]) - lo];
        if (*x != NONE)
            return 0; /* a rank twice: the general sort orders them by index */
        *x = mem[i];
    }
    for (uint32_t i = 0, k = 0; i < span; i++)
        if (at[i] != NONE)
            mem[k++] = at[i];
    return 1;
}

int tg_rank_sort(struct tg_pod *const *pods, uint32_t *mem, uint32_t n, struct tg_arena *a)
{
    uint32_t i = 1;
    while (i < n && (key_of(pods[mem[i - 1]]) < key_of(pods[mem[i]]) ||
                     (key_of(pods[mem[i - 1]]) == key_of(pods[mem[i]]) && mem[i - 1] < mem[i])))
        i++;
    if (i >= n || sort_dense(pods, mem, n, a))
        return 0;
    struct keyed *k = tg_arena_alloc(a, n * sizeof *k);
    if (!k)
        return TG_ENOMEM;
    for (i = 0; i < n; i++)
        k[i] = (struct keyed){key_of(pods[mem[i]]), mem[i], NONE};
    qsort(k, n, sizeof *k, keyed_cmp);
    for (i = 0; i < n; i++)
        mem[i] = k[i].i;
    return 0;
}

/* Topology order of two node slots: by their domains outermost first
 * (domain ids: the order the tree made them), then by slot. Every node's
 * deepest domain is at the tree's deepest level (tree.h), so the two walk
 * up in step until they share a parent. */
static int topo_cmp(const struct tg_tree *t, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    uint32_t da = t->leaf[a], db = t->leaf[b];
    assert(t->dom[da].level == t->dom[db].level);
    if (da == db)
        return a < b ? -1 : 1;
    while (t->dom[da].parent != t->dom[db].parent) {
        da = t->dom[da].parent;
        db = t->dom[db].parent;
    }
    return da < db ? -1 : 1;
}

static int slot_cmp(const void *a, const void *b, void *t)
{
    return topo_cmp(t, *(const uint32_t *)a, *(const uint32_t *)b);
}

int tg_rank_domain_cmp(const struct tg_tree *t, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    while (t->dom[a].level > t->dom[b].level)
        a = t->dom[a].parent;
    while (t->dom[b].level > t->dom[a].level)
        b = t->dom[b].parent;
    if (a == b)
        return 0; /* one holds the other */
    while (t->dom[a].parent != t->dom[b].parent) {
        a = t->dom[a].parent;
        b = t->dom[b].parent;
    }
    return a < b ? -1 : 1;
}

/* who[0..k-1] take want[0..k-1] (their own slots, to be sorted in topology
 * order) in that order; see tg_rank_layout_as. */
static int assign(struct tg_cluster *c, struct tg_pod *const *pods, uint32_t *who, uint32_t *want,
                  uint32_t k, uint32_t *slot, struct tg_arena *a)
{
    const struct tg_tree *t = &c->tree;
    int sorted = 1;
    for (uint32_t i = 1; i < k && sorted; i++)
        sorted = topo_cmp(t, want[i - 1], want[i]) <= 0;
    if (sorted)
        return 0;
    struct tg_usage **rec = tg_arena_alloc(a, k * sizeof *rec);
    if (!rec)
        return TG_ENOMEM;
    qsort_r(want, k, sizeof *want, slot_cmp, (void *)t);
    /* those not already where they belong: find every record first, so
     * that nothing moves unless all of them can */
    uint32_t nmove = 0;
    for (uint32_t i = 0; i < k; i++) {
        if (slot[who[i]] == want[i])
            continue;
        struct tg_usage *u = tg_cluster_usage(c, pods[who[i]]->key);
        if (!u || u->slot != slot[who[i]] || u->hidden || u->kind != TG_USAGE_ASSUMED)
            return 0; /* not placement's own record: leave the gang as placed */
        who[nmove] = who[i];
        want[nmove] = want[i];
        rec[nmove++] = u;
    }
    for (uint32_t i = 0; i < nmove; i++)
        tg_cluster_usage_hide(c, rec[i], 1);
    for (uint32_t i = 0; i < nmove; i++) {
        tg_cluster_usage_move(c, rec[i], want[i]);
        slot[who[i]] = want[i];
    }
    for (uint32_t i = 0; i < nmove; i++)
        tg_cluster_usage_hide(c, rec[i], 0);
    return 0;
}

/* The members of mem[0..n-1] placed on a node of the tree (and, with
 * ranked, carrying a rank: a prefix of a rank-sorted mem), in mem's order,
 * onto their slots in topology order. */
static int layout(struct tg_cluster *c, struct tg_pod *const *pods, const uint32_t *mem,
                  uint32_t n, uint32_t *slot, struct tg_arena *a, int ranked)
{
    const struct tg_tree *t = &c->tree;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && (!ranked || pods[mem[i]]->rank); i++) {
        uint32_t s = slot[mem[i]];
        k += s != NONE && s < t->nslots && t->leaf[s] != NONE;
    }
    if (k < 2)
        return 0;
    struct tg_arena_mark mk = tg_arena_mark(a);
    uint32_t *want = tg_arena_alloc(a, k * sizeof *want);
    uint32_t *who = tg_arena_alloc(a, k * sizeof *who);
    int rc = TG_ENOMEM;
    if (want && who) {
        k = 0;
        for (uint32_t i = 0; i < n && (!ranked || pods[mem[i]]->rank); i++) {
            uint32_t s = slot[mem[i]];
            if (s == NONE || s >= t->nslots || t->leaf[s] == NONE)
                continue;
            who[k] = mem[i];
            want[k++] = s;
        }
        rc = assign(c, pods, who, want, k, slot, a);
    }
    tg_arena_release(a, mk);
    return rc;
}

int tg_rank_layout(struct tg_cluster *c, struct tg_pod *const *pods, const uint32_t *mem,
                   uint32_t n, uint32_t *slot, struct tg_arena *a)
{
    return layout(c, pods, mem, n, slot, a, 1);
}

int tg_rank_layout_as(struct tg_cluster *c, struct tg_pod *const *pods, const uint32_t *who,
                      uint32_t n, uint32_t *slot, struct tg_arena *a)
{
    return layout(c, pods, who, n, slot, a, 0);
}

/* 1 when nodes a and b (a != b) are in two domains of tree level l, or in
 * a place there whose label they lack (each its own domain). */
static int crosses(const struct tg_tree *t, uint32_t a, uint32_t b, uint32_t l)
{
    uint32_t da = tg_tree_ancestor(t, t->leaf[a], l), db = tg_tree_ancestor(t, t->leaf[b], l);
    return da != db || !tg_tree_labelled(t, da, l);
}

int tg_rank_report(const struct tg_cluster *c, struct tg_pod *const *pods, const uint32_t *slot,
                   uint32_t n, struct tg_rank_report *out, uint32_t *ord)
{
    const struct tg_tree *t = &c->tree;
    memset(out, 0, sizeof *out);
    out->nlevels = t->nlevels;
    struct keyed *k = malloc((n + 1) * sizeof *k);
    if (!k)
        return TG_ENOMEM;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ord)
            ord[i] = UINT32_MAX;
        uint32_t s = slot[i];
        if (pods[i]->rank && s != NONE && s < t->nslots && t->leaf[s] != NONE)
            k[m++] = (struct keyed){key_of(pods[i]), i, s};
    }
    qsort(k, m, sizeof *k, keyed_cmp);
    for (uint32_t i = 0; i < m; i++) {
        if (ord)
            ord[k[i].i] = i;
        if (!i)
            continue;
        out->pairs++;
        uint32_t a = k[i - 1].slot, b = k[i].slot;
        if (a == b)
            continue;
        for (uint32_t l = 1; l <= t->nlevels; l++)
            out->cross[l - 1] += (uint32_t)crosses(t, a, b, l);
        out->cross[t->nlevels]++;
    }
    free(k);
    return 0;
}

uint32_t tg_rank_by_level(const struct tg_policy *p, const struct tg_rank_report *r,
                          const char **names, uint32_t *counts)
{
    uint32_t n = 0;
    int named_node = 0;
    for (; n < r->nlevels && n < p->nlevels; n++) {
        names[n] = p->levels[n].name;
        counts[n] = r->cross[n];
        named_node |= !strcmp(names[n], "node");
    }
    if (!named_node) {
        names[n] = "node";
        counts[n++] = r->cross[r->nlevels];
    }
    return n;
}
