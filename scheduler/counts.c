/* Per-node counts kept between placement tries: see counts.h. No config
 * keys; a policy reload (tg_sched_set_policy) drops the entries. */
#include "scheduler/counts.h"
#include "plugins/builtin.h"
#include "plugins/numa.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

enum { NENT = 32 };

/* One shape's entry: its key (copies of what the node-local plugins read
 * of the pod) and its counts. */
struct ent {
    struct tg__centry e;
    uint64_t hash, plugins;
    uint64_t seen;                      /* c->nchanges when brought up to date */
    uint64_t epoch;                     /* c->epoch then */
    uint64_t used;                      /* tick of its last use, 0: empty */
    uint8_t nreq, guaranteed;
    uint16_t excl_cpus, nsel, ntol;
    struct tg_rq *req;                  /* owned, as sel and tols */
    struct tg_label *sel;
    struct tg_toleration *tols;
};

struct tg__counts {
    struct ent ent[NENT];
    uint64_t tick, evals;
    uint32_t *changed;                  /* scratch for tg_cluster_changed */
    uint32_t ncap;
};

/* The plugins whose answer on a node reads only that node, the policy and
 * the keyed fields of the pod. */
static uint64_t node_local(void)
{
    uint64_t m = 0;
    for (uint32_t i = 0; tg_plugins[i] && i < 64; i++) {
        const struct tg_plugin *p = tg_plugins[i];
        if (p == &tg_plugin_nodestate || p == &tg_plugin_nodeaffinity || p == &tg_plugin_taints ||
            p == &tg_plugin_resources || p == &tg_plugin_numa)
            m |= 1ull << i;
    }
    return m;
}

int tg__counts_cacheable(const struct tg_pod *p, uint64_t plugins)
{
    if (p->cons || (plugins & ~node_local()))
        return 0;
    const struct tg_podspec *s = p->spec;
    return !s || (!s->nterms && !s->nspread && !s->npvcs && !s->nclaims);
}

static int same_key(const struct ent *x, const struct tg_pod *p, uint64_t hash, uint64_t plugins)
{
    const struct tg_podspec *s = p->spec;
    uint16_t nsel = s ? s->nselector : 0, ntol = s ? s->ntol : 0;
    if (x->hash != hash || x->plugins != plugins || x->nreq != p->nreq ||
        x->guaranteed != p->guaranteed || x->excl_cpus != p->excl_cpus || x->nsel != nsel ||
        x->ntol != ntol)
        return 0;
    for (uint8_t i = 0; i < p->nreq; i++)
        if (x->req[i].res != p->req[i].res || x->req[i].val != p->req[i].val)
            return 0;
    for (uint16_t i = 0; i < nsel; i++)
        if (x->sel[i].key != s->selector[i].key || x->sel[i].val != s->selector[i].val)
            return 0;
    for (uint16_t i = 0; i < ntol; i++)
        if (x->tols[i].key != s->tols[i].key || x->tols[i].val != s->tols[i].val ||
            x->tols[i].op != s->tols[i].op || x->tols[i].effect != s->tols[i].effect)
            return 0;
    return 1;
}

static void ent_clear(struct ent *x)
{
    free(x->e.count);
    free(x->e.dcount);
    free(x->e.delig);
    free(x->e.leaf);
    free(x->e.rej);
    free(x->e.why);
    free(x->e.arg);
    free(x->e.hist);
    free(x->req);
    free(x->sel);
    free(x->tols);
    memset(x, 0, sizeof *x);
}

/* Makes x p's empty entry for c's size. Returns 0 or TG_ENOMEM (x cleared). */
static int ent_make(struct ent *x, const struct tg_cluster *c, const struct tg_pod *p,
                    uint64_t hash, uint64_t plugins)
{
    ent_clear(x);
    const struct tg_podspec *s = p->spec;
    uint32_t ns = c->nslots, nd = c->tree.ndom;
    x->hash = hash;
    x->plugins = plugins;
    x->nreq = p->nreq;
    x->guaranteed = p->guaranteed;
    x->excl_cpus = p->excl_cpus;
    x->nsel = s ? s->nselector : 0;
    x->ntol = s ? s->ntol : 0;
    x->e.nslots = ns;
    x->e.ndom = nd;
    x->e.count = calloc(ns + 1, sizeof *x->e.count);
    x->e.leaf = calloc(ns + 1, sizeof *x->e.leaf);
    x->e.arg = calloc(ns + 1, sizeof *x->e.arg);
    x->e.rej = calloc(ns + 1, 1);
    x->e.why = calloc(ns + 1, 1);
    x->e.dcount = calloc(nd + 1, sizeof *x->e.dcount);
    x->e.delig = calloc(nd + 1, sizeof *x->e.delig);
    x->req = malloc((x->nreq + 1) * sizeof *x->req);
    x->sel = malloc((x->nsel + 1) * sizeof *x->sel);
    x->tols = malloc((x->ntol + 1) * sizeof *x->tols);
    if (!x->e.count || !x->e.leaf || !x->e.arg || !x->e.rej || !x->e.why || !x->e.dcount ||
        !x->e.delig || !x->req || !x->sel || !x->tols) {
        ent_clear(x);
        return TG_ENOMEM;
    }
    if (x->nreq)
        memcpy(x->req, p->req, x->nreq * sizeof *x->req);
    if (x->nsel)
        memcpy(x->sel, s->selector, x->nsel * sizeof *x->sel);
    if (x->ntol)
        memcpy(x->tols, s->tols, x->ntol * sizeof *x->tols);
    return 0;
}

/* Moves the domain sums above leaf by n (and elig by one node). */
static void sums_add(struct ent *x, const struct tg_tree *t, uint32_t leaf, uint32_t n, int sign)
{
    if (!n)
        return;
    for (uint32_t d = leaf; d != TG_NONE; d = t->dom[d].parent) {
        x->e.dcount[d] = (uint32_t)((int64_t)x->e.dcount[d] + sign * (int64_t)n);
        x->e.delig[d] = (uint32_t)((int64_t)x->e.delig[d] + sign);
    }
}

/* Moves the rejected slots of (why, arg) by sign; a new reason takes a
 * free entry, else grows the table (out of memory: the entry is lost and
 * the histogram marked stale through nhist = UINT32_MAX). */
static void hist_move(struct ent *x, uint8_t why, uint32_t arg, int sign)
{
    struct tg__centry *e = &x->e;
    if (e->nhist == UINT32_MAX)
        return;
    uint32_t free_at = UINT32_MAX;
    for (uint32_t i = 0; i < e->nhist; i++) {
        if (e->hist[i].n && e->hist[i].why == why && e->hist[i].arg == arg) {
            e->hist[i].n = (uint32_t)((int64_t)e->hist[i].n + sign);
            return;
        }
        if (!e->hist[i].n && free_at == UINT32_MAX)
            free_at = i;
    }
    if (sign < 0) { /* cannot happen: every rejected slot was counted in */
        e->nhist = UINT32_MAX;
        return;
    }
    if (free_at == UINT32_MAX) {
        if (e->nhist == e->caphist) {
            uint32_t cap = e->caphist ? 2 * e->caphist : 8;
            struct tg__chist *h = realloc(e->hist, cap * sizeof *h);
            if (!h) {
                e->nhist = UINT32_MAX;
                return;
            }
            e->hist = h;
            e->caphist = cap;
        }
        free_at = e->nhist++;
    }
    e->hist[free_at] = (struct tg__chist){why, arg, 1};
}

/* Counts slot afresh: its old count leaves the sums, the new one enters. */
static void recount(struct tg__counts *k, struct ent *x, const struct tg_cluster *c, uint32_t slot,
                    tg__count_fn fn, void *ud)
{
    const struct tg_tree *t = &c->tree;
    sums_add(x, t, x->e.leaf[slot], x->e.count[slot], -1);
    struct tg_status why = {0};
    int has = 0;
    uint32_t n = fn(ud, slot, &why, &has);
    k->evals++;
    /* a count > 0 has a Node and a domain; a slot may have neither (tree
     * arrays not sized for it yet) */
    uint32_t leaf = n ? t->leaf[slot] : TG_NONE;
    if (x->e.rej[slot])
        hist_move(x, x->e.why[slot], x->e.arg[slot], -1);
    if (!n && has)
        hist_move(x, why.reason, why.arg, +1);
    x->e.count[slot] = n;
    x->e.leaf[slot] = leaf;
    x->e.rej[slot] = (uint8_t)(!n && has);
    x->e.why[slot] = why.reason;
    x->e.arg[slot] = why.arg;
    sums_add(x, t, leaf, n, +1);
}

/* Finds p's entry, else takes the one used least recently. */
static struct ent *lookup(struct tg__counts *k, const struct tg_pod *p, uint64_t hash,
                          uint64_t plugins, int *found)
{
    struct ent *old = &k->ent[0];
    for (uint32_t i = 0; i < NENT; i++) {
        struct ent *x = &k->ent[i];
        if (x->used && same_key(x, p, hash, plugins)) {
            *found = 1;
            return x;
        }
        if (x->used < old->used)
            old = x;
    }
    *found = 0;
    return old;
}

const struct tg__centry *tg__counts_get(struct tg__counts **pk, const struct tg_cluster *c,
                                        const struct tg_pod *p, uint64_t plugins, tg__count_fn fn,
                                        void *ud)
{
    if (!*pk && !(*pk = calloc(1, sizeof **pk)))
        return NULL;
    struct tg__counts *k = *pk;
    if (k->ncap < c->nslots + 1) {
        uint32_t *b = realloc(k->changed, (c->nslots + 1) * sizeof *b);
        if (!b)
            return NULL;
        k->changed = b;
        k->ncap = c->nslots + 1;
    }
    uint64_t hash = tg_pod_shape_hash(p) ^ plugins * 0x9e3779b97f4a7c15ull;
    int found;
    struct ent *x = lookup(k, p, hash, plugins, &found);
    if (found && x->epoch == c->epoch && x->e.nslots == c->nslots && x->e.ndom == c->tree.ndom) {
        uint32_t n = tg_cluster_changed(c, x->seen, k->changed);
        for (uint32_t i = 0; i < n; i++)
            recount(k, x, c, k->changed[i], fn, ud);
    } else {
        if (ent_make(x, c, p, hash, plugins))
            return NULL;
        for (uint32_t slot = 0; slot < c->nslots; slot++)
            recount(k, x, c, slot, fn, ud);
        x->epoch = c->epoch;
    }
    x->seen = c->nchanges;
    x->used = ++k->tick;
    return &x->e;
}

void tg__counts_flush(struct tg__counts *k)
{
    for (uint32_t i = 0; k && i < NENT; i++)
        ent_clear(&k->ent[i]);
}

uint64_t tg__counts_evals(const struct tg__counts *k)
{
    return k ? k->evals : 0;
}

void tg__counts_free(struct tg__counts **pk)
{
    if (!*pk)
        return;
    tg__counts_flush(*pk);
    free((*pk)->changed);
    free(*pk);
    *pk = NULL;
}
