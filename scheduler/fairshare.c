/* Dividing the cluster among tenant queues: the tree, KAI's division of each
 * resource among siblings, limits, DRF order, reclaim and decayed usage.
 * The contract is scheduler/fairshare.h; the semantics and where they come
 * from (KAI's proportion plugin) are in docs/queues.md. Config keys:
 * queues.usageHalfLifeSeconds and queues.usageKValue, passed in opts. */
#include "scheduler/fairshare.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/hmap.h"
#include "util/intern.h"
#include "util/strbuf.h"

#define R TG_FS_MAX_RES
#define EPS 1e-9

struct fsq {
    uint32_t name, parent_name;
    int32_t parent;                     /* index; -1: top level or unusable */
    int32_t child, next;                /* first child, next sibling */
    uint8_t api, usable;
    int32_t priority;
    int64_t created_ms;
    struct tg_sb problem;
    double quota[R], limit[R], weight[R];
    double own_demand[R], demand[R];    /* own: its gangs; demand: with descendants */
    double own_alloc[R], alloc[R];
    double fair[R], usage[R];
    double rem[R];                      /* scratch: the fraction a floor held back */
    uint8_t has_rem[R];
};

struct tg_fairshare {
    struct fsq *q;
    uint32_t n;
    struct tg_imap by_name;             /* name id -> index */
    int16_t dense[TG_RES_MAX];          /* model res id -> column, -1 */
    uint32_t res[R];                    /* column -> model res id */
    uint8_t named[R];                   /* some Queue gives the column a quota, limit or weight */
    uint32_t nres;
    double cap[R];
    int32_t top;                        /* first top-level queue */
    uint32_t *bfs, nbfs;                /* usable queues, parents before children */
    uint32_t *scratch;                  /* sibling group, n entries */
    struct tg_fairshare_opts opts;
    int64_t last_tick_ms;
    int dirty;
    uint64_t gen;                       /* tg_fairshare_gen: bumped by every change a reader
                                           may see (changed(), the one place) */
};

/* Something a reader may see changed: capacity, demand, allocation, usage,
 * or the shares recomputed. */
static void changed(struct tg_fairshare *fs)
{
    fs->gen++;
}

/* ---- building ---- */

static void problem(struct fsq *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct fsq *q, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (q->problem.len)
        tg_sb_puts(&q->problem, "; ");
    tg_sb_puts(&q->problem, buf);
}

/* The field of resource `name`'s `what` ("quota", "limit") as the queue's
 * API spells it: spec.resources.gpu.quota (KAI), spec.deserved.cpu
 * (Volcano), spec.resources.nvidia.com/gpu.quota (ours). */
static void field(const struct fsq *q, const char *s, const char *what, char *buf, size_t n)
{
    if (q->api == TG_QAPI_VOLCANO) {
        snprintf(buf, n, "spec.%s.%s", !strcmp(what, "quota") ? "deserved" : "capability", s);
        return;
    }
    if (q->api == TG_QAPI_KAI && !strcmp(s, "nvidia.com/gpu"))
        s = "gpu";
    snprintf(buf, n, "spec.resources.%s.%s", s, what);
}

static int column(struct tg_fairshare *fs, uint32_t res)
{
    if (res >= TG_RES_MAX)
        return -1;
    if (fs->dense[res] >= 0)
        return fs->dense[res];
    if (fs->nres == R)
        return -1;
    fs->res[fs->nres] = res;
    fs->dense[res] = (int16_t)fs->nres;
    return (int)fs->nres++;
}

static int col_of(const struct tg_fairshare *fs, uint32_t res)
{
    return res < TG_RES_MAX ? fs->dense[res] : -1;
}

static void load_queue(struct tg_fairshare *fs, struct fsq *q, const struct tg_queue_obj *o)
{
    q->name = o->name;
    q->parent_name = o->parent;
    q->api = o->api;
    q->priority = o->priority;
    q->created_ms = o->created_ms;
    q->parent = q->child = q->next = -1;
    q->usable = 1;
    for (uint32_t r = 0; r < R; r++) {
        q->limit[r] = TG_QUEUE_UNLIMITED;
        q->weight[r] = 1;
    }
    if (o->problem)
        problem(q, "%s", o->problem);
    for (uint32_t i = 0; i < o->nres; i++) {
        const struct tg_queue_res *qr = &o->res[i];
        char f[256];
        int id = tg_res_lookup(tg_str(qr->name), tg_str_len(qr->name));
        int c = id < 0 ? -1 : column(fs, (uint32_t)id);
        if (c < 0) {
            field(q, tg_str(qr->name), "quota", f, sizeof f);
            problem(q, "%s: %s %s", f, id < 0 ? "no node offers" : "too many resources at",
                    tg_str(qr->name));
            continue;
        }
        fs->named[c] = 1;
        q->quota[c] = qr->quota < 0 ? -1 : fmax(qr->quota, qr->guarantee);
        q->limit[c] = qr->limit < 0 ? TG_QUEUE_UNLIMITED : qr->limit;
        q->weight[c] = qr->weight < 0 ? 0 : qr->weight;
    }
}

/* Resolves each queue's parent: an unknown parent, a duplicate name or a
 * cycle makes the queue unusable, and so are its descendants. */
static void link_parents(struct tg_fairshare *fs)
{
    for (uint32_t i = 0; i < fs->n; i++) {
        struct fsq *q = &fs->q[i];
        uint64_t v;
        if (!q->usable || !q->parent_name)
            continue;
        if (!tg_imap_get(&fs->by_name, q->parent_name, &v)) {
            problem(q, "spec.%s: no queue %s", q->api == TG_QAPI_KAI ? "parentQueue" : "parent",
                    tg_str(q->parent_name));
            q->usable = 0;
            continue;
        }
        q->parent = (int32_t)v;
    }
    /* A cycle: following parents from i comes back to i within n steps. */
    for (uint32_t i = 0; i < fs->n; i++) {
        int32_t p = fs->q[i].parent;
        for (uint32_t steps = 0; p >= 0 && steps < fs->n && (uint32_t)p != i; steps++)
            p = fs->q[p].parent;
        if ((uint32_t)p != i || p < 0)
            continue;
        struct tg_sb path = {0};
        tg_sb_puts(&path, tg_str(fs->q[i].name));
        for (p = fs->q[i].parent; (uint32_t)p != i; p = fs->q[p].parent)
            tg_sb_printf(&path, " -> %s", tg_str(fs->q[p].name));
        tg_sb_printf(&path, " -> %s", tg_str(fs->q[i].name));
        problem(&fs->q[i], "spec.%s: cycle %s",
                fs->q[i].api == TG_QAPI_KAI ? "parentQueue" : "parent", tg_sb_str(&path));
        tg_sb_free(&path);
        fs->q[i].usable = 2;            /* in a cycle; made 0 below */
    }
    for (uint32_t i = 0; i < fs->n; i++)
        if (fs->q[i].usable == 2)
            fs->q[i].usable = 0, fs->q[i].parent = -1;
    /* Descendants of an unusable queue (no cycle is left among usable ones). */
    for (uint32_t i = 0; i < fs->n; i++) {
        struct fsq *q = &fs->q[i];
        if (!q->usable)
            continue;
        int32_t p = q->parent;
        while (p >= 0 && fs->q[p].usable)
            p = fs->q[p].parent;
        if (p >= 0) {
            problem(q, "spec.%s: ancestor %s is unusable",
                    q->api == TG_QAPI_KAI ? "parentQueue" : "parent", tg_str(fs->q[p].name));
            q->usable = 0;
        }
    }
    for (uint32_t i = 0; i < fs->n; i++)
        if (!fs->q[i].usable)
            fs->q[i].parent = -1;
}

/* Children lists and the breadth-first order of the usable queues. */
static void link_children(struct tg_fairshare *fs)
{
    fs->top = -1;
    for (uint32_t k = fs->n; k-- > 0;) {
        struct fsq *q = &fs->q[k];
        if (!q->usable)
            continue;
        int32_t *head = q->parent >= 0 ? &fs->q[q->parent].child : &fs->top;
        q->next = *head;
        *head = (int32_t)k;
    }
    fs->nbfs = 0;
    for (int32_t c = fs->top; c >= 0; c = fs->q[c].next)
        fs->bfs[fs->nbfs++] = (uint32_t)c;
    for (uint32_t k = 0; k < fs->nbfs; k++)
        for (int32_t c = fs->q[fs->bfs[k]].child; c >= 0; c = fs->q[c].next)
            fs->bfs[fs->nbfs++] = (uint32_t)c;
}

/* A child whose quota exceeds its parent's, or children whose quotas
 * together do: a problem, the queues keep working (KAI divides anyway). */
static void check_quotas(struct tg_fairshare *fs)
{
    char f[256];
    for (uint32_t k = 0; k < fs->nbfs; k++) {
        struct fsq *p = &fs->q[fs->bfs[k]];
        if (p->child < 0)
            continue;
        for (uint32_t r = 0; r < fs->nres; r++) {
            if (p->quota[r] < 0)
                continue;
            double sum = 0;
            int one = 0;
            const char *name = tg_res_name(fs->res[r]);
            for (int32_t c = p->child; c >= 0; c = fs->q[c].next) {
                struct fsq *q = &fs->q[c];
                double qq = q->quota[r] < 0 ? INFINITY : q->quota[r];
                sum += qq;
                if (qq > p->quota[r] + EPS) {
                    field(q, name, "quota", f, sizeof f);
                    problem(q, "%s: %g exceeds parent %s's quota %g", f, qq, tg_str(p->name),
                            p->quota[r]);
                    one = 1;
                }
            }
            if (!one && sum > p->quota[r] + EPS) {
                field(p, name, "quota", f, sizeof f);
                problem(p, "%s: %g is less than its children's quotas together (%g)", f,
                        p->quota[r], sum);
            }
        }
    }
}

static void path_add(struct tg_fairshare *fs, uint32_t q, size_t own_off, size_t agg_off,
                     uint32_t c, double v)
{
    double *own = (double *)((char *)&fs->q[q] + own_off);
    own[c] += v;
    for (int32_t p = (int32_t)q; p >= 0; p = fs->q[p].parent)
        ((double *)((char *)&fs->q[p] + agg_off))[c] += v;
}

void tg_fairshare_carry_usage(struct tg_fairshare *fs, const struct tg_fairshare *prev)
{
    fs->last_tick_ms = prev->last_tick_ms;
    for (uint32_t i = 0; i < prev->n; i++) {
        int k = tg_fairshare_find(fs, prev->q[i].name);
        for (uint32_t r = 0; k >= 0 && r < prev->nres; r++) {
            int c = col_of(fs, prev->res[r]);
            if (c >= 0)
                fs->q[k].usage[c] = prev->q[i].usage[r];
        }
    }
    fs->dirty = 1;
    changed(fs);
}

void tg_fairshare_set_usage(struct tg_fairshare *fs, uint32_t q, uint32_t res, double v)
{
    int c = col_of(fs, res);
    if (q >= fs->n || c < 0 || !(v >= 0))
        return;
    fs->q[q].usage[c] = v;
    fs->dirty = 1;
    changed(fs);
}

/* Capacity, demand, allocation and usage of prev's queues of the same name. */
static void carry_over(struct tg_fairshare *fs, const struct tg_fairshare *prev)
{
    for (uint32_t r = 0; r < prev->nres; r++) {
        int c = column(fs, prev->res[r]);
        if (c >= 0)
            fs->cap[c] = prev->cap[r];
    }
    for (uint32_t i = 0; i < prev->n; i++) {
        const struct fsq *o = &prev->q[i];
        int k = tg_fairshare_find(fs, o->name);
        if (k < 0)
            continue;
        for (uint32_t r = 0; r < prev->nres; r++) {
            int c = column(fs, prev->res[r]);
            if (c < 0)
                continue;
            path_add(fs, (uint32_t)k, offsetof(struct fsq, own_demand), offsetof(struct fsq, demand),
                     (uint32_t)c, o->own_demand[r]);
            path_add(fs, (uint32_t)k, offsetof(struct fsq, own_alloc), offsetof(struct fsq, alloc),
                     (uint32_t)c, o->own_alloc[r]);
        }
    }
    tg_fairshare_carry_usage(fs, prev);
}

int tg_fairshare_build(const struct tg_queue_obj *const *qs, uint32_t n,
                       const struct tg_fairshare_opts *opts, const struct tg_fairshare *prev,
                       struct tg_fairshare **out)
{
    struct tg_fairshare *fs = calloc(1, sizeof *fs);
    if (!fs)
        return TG_ENOMEM;
    fs->q = calloc(n ? n : 1, sizeof *fs->q);
    fs->bfs = calloc(n ? n : 1, sizeof *fs->bfs);
    fs->scratch = calloc(n ? n : 1, sizeof *fs->scratch);
    if (!fs->q || !fs->bfs || !fs->scratch)
        goto fail;
    fs->opts = opts ? *opts : (struct tg_fairshare_opts){0, 1};
    memset(fs->dense, -1, sizeof fs->dense);
    fs->n = n;
    for (uint32_t i = 0; i < n; i++) {
        struct fsq *q = &fs->q[i];
        uint64_t v;
        load_queue(fs, q, qs[i]);
        if (tg_imap_get(&fs->by_name, q->name, &v)) {
            problem(q, "metadata.name: a second queue named %s", tg_str(q->name));
            q->usable = 0;
            q->parent_name = 0;
        } else if (tg_imap_put(&fs->by_name, q->name, i) != 0) {
            goto fail;
        }
    }
    link_parents(fs);
    link_children(fs);
    check_quotas(fs);
    if (prev)
        carry_over(fs, prev);
    fs->dirty = 1;
    *out = fs;
    return 0;
fail:
    tg_fairshare_free(&fs);
    return TG_ENOMEM;
}

void tg_fairshare_free(struct tg_fairshare **pfs)
{
    struct tg_fairshare *fs = *pfs;
    if (!fs)
        return;
    for (uint32_t i = 0; fs->q && i < fs->n; i++)
        tg_sb_free(&fs->q[i].problem);
    free(fs->q);
    free(fs->bfs);
    free(fs->scratch);
    tg_imap_free(&fs->by_name);
    free(fs);
    *pfs = NULL;
}

/* ---- accessors ---- */

uint32_t tg_fairshare_count(const struct tg_fairshare *fs) { return fs->n; }
uint64_t tg_fairshare_gen(const struct tg_fairshare *fs) { return fs->gen; }
uint32_t tg_fairshare_name(const struct tg_fairshare *fs, uint32_t q) { return fs->q[q].name; }
int tg_fairshare_parent(const struct tg_fairshare *fs, uint32_t q) { return fs->q[q].parent; }
int tg_fairshare_usable(const struct tg_fairshare *fs, uint32_t q) { return fs->q[q].usable; }

int tg_fairshare_find(const struct tg_fairshare *fs, uint32_t name)
{
    uint64_t v;
    return tg_imap_get(&fs->by_name, name, &v) ? (int)v : -1;
}

const char *tg_fairshare_problem(const struct tg_fairshare *fs, uint32_t q)
{
    return fs->q[q].problem.len ? tg_sb_str(&fs->q[q].problem) : NULL;
}

#define ACCESSOR(fn, arr, dflt)                                                   \
    double fn(const struct tg_fairshare *fs, uint32_t q, uint32_t res)            \
    {                                                                             \
        int c = col_of(fs, res);                                                  \
        return c < 0 ? (dflt) : fs->q[q].arr[c];                                  \
    }
ACCESSOR(tg_fairshare_quota, quota, 0)
ACCESSOR(tg_fairshare_limit, limit, TG_QUEUE_UNLIMITED)
ACCESSOR(tg_fairshare_demand, demand, 0)
ACCESSOR(tg_fairshare_allocated, alloc, 0)
ACCESSOR(tg_fairshare_share, fair, 0)
ACCESSOR(tg_fairshare_usage, usage, 0)
#undef ACCESSOR

/* ---- inputs ---- */

int tg_fairshare_set_capacity(struct tg_fairshare *fs, const struct tg_rq *cap, uint32_t n)
{
    double next[R] = {0};
    int rc = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (cap[i].res == TG_RES_UNOFFERED)
            continue;
        int c = column(fs, cap[i].res);
        if (c < 0) {
            rc = TG_ERANGE;
            continue;
        }
        next[c] += (double)cap[i].val;
    }
    for (uint32_t r = 0; r < fs->nres; r++)
        if (next[r] != fs->cap[r]) {
            fs->cap[r] = next[r];
            fs->dirty = 1;
            changed(fs);
        }
    return rc;
}

void tg_fairshare_demand_add(struct tg_fairshare *fs, uint32_t q, const struct tg_rq *req,
                             uint32_t n, int sign)
{
    for (uint32_t i = 0; i < n; i++) {
        int c = col_of(fs, req[i].res);
        if (c >= 0 && req[i].val) {
            path_add(fs, q, offsetof(struct fsq, own_demand), offsetof(struct fsq, demand),
                     (uint32_t)c, sign * (double)req[i].val);
            fs->dirty = 1;
            changed(fs);
        }
    }
}

void tg_fairshare_alloc_add(struct tg_fairshare *fs, uint32_t q, const struct tg_rq *req,
                            uint32_t n, int sign)
{
    for (uint32_t i = 0; i < n; i++) {
        int c = col_of(fs, req[i].res);
        if (c >= 0 && req[i].val) {
            path_add(fs, q, offsetof(struct fsq, own_alloc), offsetof(struct fsq, alloc),
                     (uint32_t)c, sign * (double)req[i].val);
            changed(fs);
        }
    }
}

void tg_fairshare_tick(struct tg_fairshare *fs, int64_t now_ms)
{
    double h = fs->opts.usage_half_life_s;
    if (h <= 0)
        return;
    if (!fs->last_tick_ms || now_ms <= fs->last_tick_ms) {
        fs->last_tick_ms = fs->last_tick_ms ? fs->last_tick_ms : now_ms;
        return;
    }
    double dt = (double)(now_ms - fs->last_tick_ms) / 1000.0;
    double decay = exp2(-dt / h);
    /* Exact integral of alloc x 2^(-(t_now - t)/h) over the interval. */
    double gain = h / M_LN2 * (1 - decay);
    for (uint32_t i = 0; i < fs->n; i++)
        for (uint32_t r = 0; r < fs->nres; r++)
            fs->q[i].usage[r] = fs->q[i].usage[r] * decay + fs->q[i].alloc[r] * gain;
    fs->last_tick_ms = now_ms;
    fs->dirty = 1;
    changed(fs);
}

/* ---- KAI's division of one resource among one sibling group ---- */

static double requestable(const struct fsq *q, uint32_t r)
{
    return q->limit[r] < 0 ? q->demand[r] : fmin(q->limit[r], q->demand[r]);
}

static double remaining_request(const struct fsq *q, uint32_t r)
{
    double req = requestable(q, r);
    return req < q->fair[r] ? 0 : req - q->fair[r];
}

static int satisfied(const struct fsq *q, uint32_t r)
{
    return q->demand[r] <= q->fair[r] || (q->limit[r] >= 0 && q->limit[r] <= q->fair[r]);
}

/* Usage as a fraction of what the whole capacity would have accrued. */
static double norm_usage(const struct tg_fairshare *fs, const struct fsq *q, uint32_t r)
{
    double h = fs->opts.usage_half_life_s;
    if (h <= 0 || fs->cap[r] <= 0)
        return 0;
    return q->usage[r] / (fs->cap[r] * h / M_LN2);
}

/* KAI's divideUpToFairShare for the queues g[0..n) of one tier: rounds of
 * whole units in proportion to the (usage-adjusted) weights. */
static double divide_tier(const struct tg_fairshare *fs, uint32_t *g, uint32_t n, uint32_t r,
                          double total)
{
    double sw[n ? n : 1];
    for (;;) {
        double give_round = total, wsum = 0, swsum = 0;
        int again = 0;
        for (uint32_t i = 0; i < n; i++)
            if (remaining_request(&fs->q[g[i]], r) > 0)
                wsum += fs->q[g[i]].weight[r];
        if (wsum == 0)
            break;
        for (uint32_t i = 0; i < n; i++) {
            const struct fsq *q = &fs->q[g[i]];
            sw[i] = 0;
            if (satisfied(q, r))
                continue;
            double nw = q->weight[r] / wsum, k = fs->opts.k_value;
            sw[i] = fmax(0, nw + k * (nw - norm_usage(fs, q, r)));
            swsum += sw[i];
        }
        if (swsum == 0)
            break;
        for (uint32_t i = 0; i < n && total != 0; i++) {
            struct fsq *q = &fs->q[g[i]];
            if (satisfied(q, r) || q->weight[r] == 0)
                continue;
            double want = remaining_request(q, r), share = give_round * (sw[i] / swsum), give = 0;
            if (want <= share) {
                give = want;
                q->has_rem[r] = 0;
            } else {
                if (floor(share) > 0)
                    give = floor(share);
                if (share - give > 0) {
                    q->rem[r] = share - give;
                    q->has_rem[r] = 1;
                }
            }
            if (give == 0)
                continue;
            q->fair[r] += give;
            total -= give;
            again |= want < share;
        }
        if (!again || total == 0)
            break;
    }
    return total;
}

/* Largest held-back fraction first, then the older queue, then the name. */
struct sort_ctx {
    const struct tg_fairshare *fs;
    uint32_t r;
};
static int by_remainder(const void *a, const void *b, void *ud)
{
    const struct sort_ctx *k = ud;
    const struct fsq *x = &k->fs->q[*(const uint32_t *)a], *y = &k->fs->q[*(const uint32_t *)b];
    if (x->rem[k->r] != y->rem[k->r])
        return x->rem[k->r] > y->rem[k->r] ? -1 : 1;
    if (x->created_ms != y->created_ms)
        return x->created_ms < y->created_ms ? -1 : 1;
    return strcmp(tg_str(x->name), tg_str(y->name));
}

/* KAI's divideRemainingResource: one unit (or what is left, if less) to each
 * queue of the tier that a floor held back, largest fraction first. */
static double divide_remainder(struct tg_fairshare *fs, uint32_t *g, uint32_t n, uint32_t r,
                               double total)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (fs->q[g[i]].has_rem[r])
            g[m++] = g[i];
    struct sort_ctx k = {fs, r};
    qsort_r(g, m, sizeof *g, by_remainder, &k);
    for (uint32_t i = 0; i < m && total != 0; i++) {
        double give = fmin(1, total);
        fs->q[g[i]].fair[r] += give;
        total -= give;
    }
    return total;
}

static int by_tier(const void *a, const void *b, void *ud)
{
    const struct tg_fairshare *fs = ud;
    int32_t x = fs->q[*(const uint32_t *)a].priority, y = fs->q[*(const uint32_t *)b].priority;
    return x > y ? -1 : x < y;
}

/* Divides `total` of resource r among the siblings g[0..n): quotas first,
 * then the surplus tier by tier (KAI's setResourceShare). g is reordered. */
static void divide(struct tg_fairshare *fs, uint32_t *g, uint32_t n, uint32_t r, double total)
{
    double left = total;
    for (uint32_t i = 0; i < n; i++) {
        struct fsq *q = &fs->q[g[i]];
        double deserved = q->quota[r] < 0 ? total : q->quota[r];
        q->fair[r] = fmin(deserved, requestable(q, r));
        q->has_rem[r] = 0;
        left -= q->fair[r];
    }
    if (left <= 0)
        return;
    qsort_r(g, n, sizeof *g, by_tier, fs);
    uint32_t t0 = 0;
    for (uint32_t i = 1; i <= n; i++)
        if (i == n || fs->q[g[i]].priority != fs->q[g[t0]].priority) {
            left = divide_tier(fs, g + t0, i - t0, r, left);
            t0 = i;
        }
    t0 = 0;
    for (uint32_t i = 1; i <= n && left > 0; i++)
        if (i == n || fs->q[g[i]].priority != fs->q[g[t0]].priority) {
            uint32_t tier[i - t0];
            memcpy(tier, g + t0, sizeof tier);
            left = divide_remainder(fs, tier, i - t0, r, left);
            t0 = i;
        }
}

int tg_fairshare_update(struct tg_fairshare *fs)
{
    if (!fs->dirty)
        return 0;
    for (uint32_t r = 0; r < fs->nres; r++) {
        uint32_t n = 0;
        for (int32_t c = fs->top; c >= 0; c = fs->q[c].next)
            fs->scratch[n++] = (uint32_t)c;
        divide(fs, fs->scratch, n, r, fs->cap[r]);
        for (uint32_t k = 0; k < fs->nbfs; k++) {
            const struct fsq *p = &fs->q[fs->bfs[k]];
            n = 0;
            for (int32_t c = p->child; c >= 0; c = fs->q[c].next)
                fs->scratch[n++] = (uint32_t)c;
            if (n)
                divide(fs, fs->scratch, n, r, p->fair[r]);
        }
    }
    for (uint32_t i = 0; i < fs->n; i++)
        if (!fs->q[i].usable)
            memset(fs->q[i].fair, 0, sizeof fs->q[i].fair);
    fs->dirty = 0;
    changed(fs);
    return 1;
}

/* ---- admission, order, reclaim ---- */

int tg_fairshare_admit(const struct tg_fairshare *fs, uint32_t q, const struct tg_rq *req,
                       uint32_t n, char *buf, size_t len)
{
    if (!fs->q[q].usable) {
        if (buf)
            snprintf(buf, len, "queue %s is unusable: %s", tg_str(fs->q[q].name),
                     tg_sb_str(&fs->q[q].problem));
        return 0;
    }
    for (int32_t p = (int32_t)q; p >= 0; p = fs->q[p].parent) {
        const struct fsq *a = &fs->q[p];
        for (uint32_t i = 0; i < n; i++) {
            int c = col_of(fs, req[i].res);
            if (c < 0 || a->limit[c] < 0 || !req[i].val)
                continue;
            if (a->alloc[c] + (double)req[i].val <= a->limit[c] + EPS)
                continue;
            if (!buf)
                return 0;
            char x[48], y[48], z[48];
            snprintf(buf, len, "queue %s at its limit: %s/%s %s, the gang asks %s",
                     tg_str(a->name), tg_fairshare_amount(req[i].res, a->alloc[c], x, sizeof x),
                     tg_fairshare_amount(req[i].res, a->limit[c], y, sizeof y), tg_res_name(req[i].res),
                     tg_fairshare_amount(req[i].res, (double)req[i].val, z, sizeof z));
            return 0;
        }
    }
    return 1;
}

static double dominant(const struct tg_fairshare *fs, const struct fsq *q, int usage)
{
    double key = 0;
    for (uint32_t r = 0; r < fs->nres; r++) {
        double have = usage ? norm_usage(fs, q, r) : q->alloc[r];
        double share = usage ? (fs->cap[r] > 0 ? q->fair[r] / fs->cap[r] : 0) : q->fair[r];
        if (have <= 0 || (usage && share <= 0))
            continue;                   /* past usage of a resource it has no share of now:
                                           not a reason to be last for ever */
        key = fmax(key, share > 0 ? have / share : INFINITY);
    }
    return key;
}

double tg_fairshare_order_key(const struct tg_fairshare *fs, uint32_t q)
{
    double key = dominant(fs, &fs->q[q], 0);
    if (fs->opts.usage_half_life_s > 0)
        key += dominant(fs, &fs->q[q], 1);
    return key;
}

int tg_fairshare_cmp(const struct tg_fairshare *fs, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    double ka = tg_fairshare_order_key(fs, a), kb = tg_fairshare_order_key(fs, b);
    const struct fsq *x = &fs->q[a], *y = &fs->q[b];
    if (ka != kb)
        return ka < kb ? -1 : 1;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->created_ms != y->created_ms)
        return x->created_ms < y->created_ms ? -1 : 1;
    return strcmp(tg_str(x->name), tg_str(y->name)) < 0 ? -1 : 1;
}

static int is_ancestor(const struct tg_fairshare *fs, int32_t a, int32_t q)
{
    for (; q >= 0; q = fs->q[q].parent)
        if (q == a)
            return 1;
    return 0;
}

int tg_fairshare_may_reclaim(const struct tg_fairshare *fs, int reclaimer, uint32_t victim,
                             const struct tg_rq *take, uint32_t n, char *buf, size_t len)
{
    for (int32_t p = (int32_t)victim; p >= 0; p = fs->q[p].parent) {
        if (reclaimer >= 0 && is_ancestor(fs, p, reclaimer))
            break;                      /* the common ancestor: its allocation stays */
        const struct fsq *a = &fs->q[p];
        for (uint32_t i = 0; i < n; i++) {
            int c = col_of(fs, take[i].res);
            if (c < 0 || !take[i].val || !fs->named[c])
                continue; /* only what the Queues divide: cpu of queues that name none is no reason */
            double after = a->alloc[c] - (double)take[i].val;
            if (after + EPS >= a->fair[c])
                continue;
            if (!buf)
                return 0;
            char x[48], y[48], z[48];
            snprintf(buf, len, "queue %s would go below its fair share: %s - %s < %s %s",
                     tg_str(a->name), tg_fairshare_amount(take[i].res, a->alloc[c], x, sizeof x),
                     tg_fairshare_amount(take[i].res, (double)take[i].val, y, sizeof y),
                     tg_fairshare_amount(take[i].res, a->fair[c], z, sizeof z), tg_res_name(take[i].res));
            return 0;
        }
    }
    return 1;
}

int tg_fairshare_divides(const struct tg_fairshare *fs, uint32_t res)
{
    int c = col_of(fs, res);
    return c >= 0 && fs->named[c];
}

int tg_fairshare_shown(const struct tg_fairshare *fs, uint32_t q, uint32_t res)
{
    int c = col_of(fs, res);
    if (!tg_fairshare_divides(fs, res) || res == TG_RES_PODS || res == TG_RES_EPHEMERAL ||
        res == TG_RES_UNOFFERED)
        return 0;
    const struct fsq *a = &fs->q[q];
    return a->quota[c] > 0 || a->limit[c] >= 0 || a->fair[c] > 0 || a->alloc[c] > 0;
}
