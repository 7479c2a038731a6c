/* The index of placed pods for inter-pod constraints; see podindex.h.
 *
 * Postings: for each label key some selector has asked about ("watched",
 * from then on), the records having the key and, per value, the records
 * having key=value; a query starts from its most selective In or Exists
 * requirement instead of every record. A selector without one (only NotIn
 * or DoesNotExist, or empty) scans every record once at start.
 *
 * Groups: records by the anti-affinity terms they carry (per namespace and
 * term), so that a pending pod meets "the placed pods whose anti-affinity
 * keeps me away" by checking each distinct term once; the groups are found
 * through the pod's own labels (each group is filed under one In or Exists
 * requirement of its selector), not by walking every group.
 *
 * Live queries: while a gang is placed, every record that starts or stops
 * counting (usage_changed) updates the counts of each live query; there
 * are a few per gang, none between cycles. */
#include "plugins/podindex.h"
#include "model/objstore.h"
#include "util/err.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pointer sets -------------------------------------------------------------- */

static uint32_t phash(uintptr_t p)
{
    uint64_t x = p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x;
}

static int pset_grow(struct tg__pset *s)
{
    uint32_t nc = s->cap ? (s->len * 2 + 2 > s->cap ? s->cap * 2 : s->cap) : 8;
    uintptr_t *nv = calloc(nc, sizeof *nv);
    if (!nv)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->v[i] > 1) {
            uint32_t j = phash(s->v[i]) & (nc - 1);
            while (nv[j])
                j = (j + 1) & (nc - 1);
            nv[j] = s->v[i];
        }
    free(s->v);
    s->v = nv;
    s->cap = nc;
    s->used = s->len;
    return 0;
}

static int pset_add(struct tg__pset *s, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    if ((s->used + 1) * 10 > s->cap * 7 && pset_grow(s))
        return TG_ENOMEM;
    uint32_t j = phash(p) & (s->cap - 1), tomb = UINT32_MAX;
    while (s->v[j]) {
        if (s->v[j] == p)
            return 0;
        if (s->v[j] == 1 && tomb == UINT32_MAX)
            tomb = j;
        j = (j + 1) & (s->cap - 1);
    }
    if (tomb != UINT32_MAX)
        j = tomb;
    else
        s->used++;
    s->v[j] = p;
    s->len++;
    return 0;
}

static void pset_del(struct tg__pset *s, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    if (!s->cap)
        return;
    for (uint32_t j = phash(p) & (s->cap - 1); s->v[j]; j = (j + 1) & (s->cap - 1))
        if (s->v[j] == p) {
            s->v[j] = 1;
            s->len--;
            return;
        }
}

static void pset_free(struct tg__pset *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

#define PSET_EACH(s, i, u)                                                   \
    for (uint32_t i = 0; i < (s)->cap; i++)                                   \
        if ((s)->v[i] > 1 && ((u) = (struct tg_usage *)(s)->v[i], 1))

/* ---- the index ------------------------------------------------------------------ */

struct kpost {
    struct tg__pset all;                /* records with the key */
    struct tg_imap vals;                /* value -> struct tg__pset * */
};

struct group {
    struct group *next;                 /* same hash */
    uint64_t hash;
    uint32_t ns;
    uint32_t desc;                      /* interned "ml/x on key" */
    struct tg_podterm term;             /* owned copy */
    struct tg__pset members;
};

/* Groups filed under one label (key=value for In, key=NONE for Exists). */
struct gfile {
    struct group **v;
    uint32_t n, cap;
};

#define NO_VAL 0xffffffffu

struct pidx {
    struct tg_imap keys;                /* watched key -> struct kpost * */
    struct tg_imap groups;              /* hash -> struct group * (chained) */
    struct tg_imap files;               /* key << 32 | value -> struct gfile * */
    struct gfile loose;                 /* groups without an In or Exists requirement */
    struct tg_imap gkeys;               /* label key -> groups whose selector names it */
    uint32_t ngroups;
    struct tg__pq *live;
};

static struct pidx *ix_of(const struct tg_cluster *c)
{
    return c->ext;
}

static void each_imap(struct tg_imap *m, void (*fn)(void *))
{
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->state[i] == 1)
            fn((void *)(uintptr_t)m->slots[i].val);
}

static void pset_fr(void *p)
{
    pset_free(p);
    free(p);
}

static void kpost_fr(void *p)
{
    struct kpost *k = p;
    pset_free(&k->all);
    each_imap(&k->vals, pset_fr);
    tg_imap_free(&k->vals);
    free(k);
}

static void group_fr(void *p)
{
    for (struct group *g = p, *nx; g; g = nx) {
        nx = g->next;
        tg_podterm_free(&g->term);
        pset_free(&g->members);
        free(g);
    }
}

static void gfile_fr(void *p)
{
    struct gfile *f = p;
    free(f->v);
    free(f);
}

static void ix_free(struct tg_cluster *c)
{
    struct pidx *ix = ix_of(c);
    if (!ix)
        return;
    each_imap(&ix->keys, kpost_fr);
    tg_imap_free(&ix->keys);
    each_imap(&ix->groups, group_fr);
    tg_imap_free(&ix->groups);
    each_imap(&ix->files, gfile_fr);
    tg_imap_free(&ix->files);
    free(ix->loose.v);
    tg_imap_free(&ix->gkeys);
    /* live queries belong to their callers: they are cut loose, not freed */
    for (struct tg__pq *q = ix->live; q; q = q->next)
        q->prev = NULL;
    free(ix);
    c->ext = NULL;
    c->ext_free = NULL;
}

int tg__pidx_attach(struct tg_cluster *c)
{
    if (c->ext)
        return 0;
    struct pidx *ix = calloc(1, sizeof *ix);
    if (!ix)
        return TG_ENOMEM;
    c->ext = ix;
    c->ext_free = ix_free;
    return 0;
}

uint32_t tg__kval(const struct tg_cluster *c, uint32_t slot, uint32_t key)
{
    const struct tg_node_obj *o = slot < c->nslots ? c->nodes[slot].obj : NULL;
    if (!o)
        return TG_STR_NONE;
    /* a topology level's label: the name of the node's domain there (the
     * hostname: its own), without a search; "" may be a missing label */
    const struct tg_tree *t = &c->tree;
    if (slot < t->nslots && t->leaf[slot] != TG_NONE)
        for (uint32_t l = t->nlevels; l >= 1; l--)
            if (t->label[l - 1] == key) {
                uint32_t name = t->dom[tg_tree_ancestor(t, t->leaf[slot], l)].name;
                if (name)
                    return name;
                break;
            }
    return tg_labels_get(o->labels, o->nlabels, key);
}

/* ---- postings --------------------------------------------------------------------- */

static struct kpost *kpost_get(struct pidx *ix, uint32_t key)
{
    uint64_t v;
    return tg_imap_get(&ix->keys, key, &v) ? (struct kpost *)(uintptr_t)v : NULL;
}

static struct tg__pset *kpost_val(struct kpost *k, uint32_t val, int create)
{
    uint64_t v;
    if (tg_imap_get(&k->vals, val, &v))
        return (struct tg__pset *)(uintptr_t)v;
    if (!create)
        return NULL;
    struct tg__pset *s = calloc(1, sizeof *s);
    if (!s || tg_imap_put(&k->vals, val, (uint64_t)(uintptr_t)s)) {
        free(s);
        return NULL;
    }
    return s;
}

static int post_add(struct kpost *k, struct tg_usage *u, uint32_t val)
{
    struct tg__pset *s = kpost_val(k, val, 1);
    if (!s || pset_add(s, u) || pset_add(&k->all, u))
        return TG_ENOMEM;
    return 0;
}

static void post_del(struct kpost *k, struct tg_usage *u, uint32_t val)
{
    struct tg__pset *s = kpost_val(k, val, 0);
    if (s) {
        pset_del(s, u);
        if (!s->len) {
            tg_imap_del(&k->vals, val);
            pset_fr(s);
        }
    }
    pset_del(&k->all, u);
}

/* Watches key: from now on its records are posted. A new key is filled
 * from every record once. */
static struct kpost *watch(struct tg_cluster *c, uint32_t key)
{
    struct pidx *ix = ix_of(c);
    struct kpost *k = kpost_get(ix, key);
    if (k)
        return k;
    if (!(k = calloc(1, sizeof *k)))
        return NULL;
    if (tg_imap_put(&ix->keys, key, (uint64_t)(uintptr_t)k)) {
        free(k);
        return NULL;
    }
    uint32_t pos = 0;
    const struct tg_hslot *hs;
    while ((hs = tg_hmap_next(&c->usage, &pos))) {
        struct tg_usage *u = (struct tg_usage *)(uintptr_t)hs->val;
        uint32_t v = tg_labels_get(u->labels, u->nlabels, key);
        if (v != TG_STR_NONE && post_add(k, u, v)) {
            /* half a posting would hide records: give the key up */
            tg_imap_del(&ix->keys, key);
            kpost_fr(k);
            return NULL;
        }
    }
    return k;
}

/* ---- groups ------------------------------------------------------------------------- */

static struct group *group_find(struct pidx *ix, uint64_t h, uint32_t ns, const struct tg_podterm *t)
{
    uint64_t v;
    if (!tg_imap_get(&ix->groups, h, &v))
        return NULL;
    for (struct group *g = (struct group *)(uintptr_t)v; g; g = g->next)
        if (g->ns == ns && tg_podterm_equal(&g->term, t))
            return g;
    return NULL;
}

/* Where group g is filed: its first In requirement (one entry per value)
 * or Exists; *n 0: loose. Fills up to 8 keys. */
static uint32_t file_keys(const struct group *g, uint64_t *out)
{
    const struct tg_labelsel *s = &g->term.sel;
    for (uint16_t i = 0; i < s->nreq; i++) {
        const struct tg_selreq *r = &s->reqs[i];
        if (r->op == TG_SEL_IN && r->nvals <= 8) {
            for (uint16_t j = 0; j < r->nvals; j++)
                out[j] = (uint64_t)r->key << 32 | r->vals[j];
            return r->nvals;
        }
    }
    for (uint16_t i = 0; i < s->nreq; i++)
        if (s->reqs[i].op == TG_SEL_EXISTS) {
            out[0] = (uint64_t)s->reqs[i].key << 32 | NO_VAL;
            return 1;
        }
    return 0;
}

static struct gfile *gfile_get(struct pidx *ix, uint64_t k, int create)
{
    uint64_t v;
    if (tg_imap_get(&ix->files, k, &v))
        return (struct gfile *)(uintptr_t)v;
    struct gfile *f = create ? calloc(1, sizeof *f) : NULL;
    if (f && tg_imap_put(&ix->files, k, (uint64_t)(uintptr_t)f)) {
        free(f);
        f = NULL;
    }
    return f;
}

static int gfile_add(struct gfile *f, struct group *g)
{
    if (f->n == f->cap) {
        uint32_t nc = f->cap ? f->cap * 2 : 4;
        struct group **nv = realloc(f->v, nc * sizeof *nv);
        if (!nv)
            return TG_ENOMEM;
        f->v = nv;
        f->cap = nc;
    }
    f->v[f->n++] = g;
    return 0;
}

static void gfile_del(struct gfile *f, const struct group *g)
{
    for (uint32_t i = 0; f && i < f->n; i++)
        if (f->v[i] == g) {
            f->v[i] = f->v[--f->n];
            return;
        }
}

/* Files g (or unfiles it, add 0) and counts the keys its selector names. */
static int group_file(struct pidx *ix, struct group *g, int add)
{
    uint64_t k[8];
    uint32_t n = file_keys(g, k);
    int rc = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct gfile *f = gfile_get(ix, k[i], add);
        if (add)
            rc |= !f || gfile_add(f, g);
        else
            gfile_del(f, g);
    }
    if (!n) {
        if (add)
            rc |= gfile_add(&ix->loose, g);
        else
            gfile_del(&ix->loose, g);
    }
    for (uint16_t i = 0; i < g->term.sel.nreq; i++) {
        uint32_t key = g->term.sel.reqs[i].key;
        uint64_t c = 0;
        tg_imap_get(&ix->gkeys, key, &c);
        if (add)
            rc |= tg_imap_put(&ix->gkeys, key, c + 1) != 0;
        else if (c > 1)
            tg_imap_put(&ix->gkeys, key, c - 1);
        else
            tg_imap_del(&ix->gkeys, key);
    }
    return rc ? TG_ENOMEM : 0;
}

/* "ml/llama-3" for a record: its gang, else its controller, else itself. */
static void who(const struct tg_usage *u, char *buf, size_t n)
{
    if (u->group)
        snprintf(buf, n, "%s/%s", tg_str(u->ns), tg_str(u->group));
    else if (u->owner_name)
        snprintf(buf, n, "%s/%s", tg_str(u->ns), tg_str(u->owner_name));
    else
        snprintf(buf, n, "%s", u->key);
}

static int group_join(struct pidx *ix, struct tg_usage *u, const struct tg_podterm *t)
{
    uint64_t h = tg_podterm_hash(t, u->ns);
    struct group *g = group_find(ix, h, u->ns, t);
    if (!g) {
        if (!(g = calloc(1, sizeof *g)))
            return TG_ENOMEM;
        if (tg_podterm_copy(&g->term, t)) {
            free(g);
            return TG_ENOMEM;
        }
        char w[400], d[600];
        who(u, w, sizeof w);
        snprintf(d, sizeof d, "%s on %s", w, tg_str(t->key));
        g->hash = h;
        g->ns = u->ns;
        g->desc = tg_intern(d);
        uint64_t v;
        g->next = tg_imap_get(&ix->groups, h, &v) ? (struct group *)(uintptr_t)v : NULL;
        if (tg_imap_put(&ix->groups, h, (uint64_t)(uintptr_t)g)) {
            g->next = NULL;
            group_fr(g);
            return TG_ENOMEM;
        }
        ix->ngroups++;
        group_file(ix, g, 1); /* out of memory: pods it selects may not meet it */
    }
    return pset_add(&g->members, u);
}

static void group_leave(struct pidx *ix, struct tg_usage *u, const struct tg_podterm *t)
{
    uint64_t h = tg_podterm_hash(t, u->ns), v;
    if (!tg_imap_get(&ix->groups, h, &v))
        return;
    struct group *head = (struct group *)(uintptr_t)v, *prev = NULL;
    for (struct group *g = head; g; prev = g, g = g->next) {
        if (g->ns != u->ns || !tg_podterm_equal(&g->term, t))
            continue;
        pset_del(&g->members, u);
        if (g->members.len)
            return;
        if (prev)
            prev->next = g->next;
        else if (g->next)
            tg_imap_put(&ix->groups, h, (uint64_t)(uintptr_t)g->next); /* replaces: no growth */
        else
            tg_imap_del(&ix->groups, h);
        g->next = NULL;
        group_file(ix, g, 0);
        group_fr(g);
        ix->ngroups--;
        return;
    }
}

/* ---- records in and out ----------------------------------------------------------------- */

void tg__pidx_added(struct tg_cluster *c, struct tg_usage *u)
{
    struct pidx *ix = ix_of(c);
    if (!ix)
        return;
    if (ix->keys.len)
        for (uint16_t i = 0; i < u->nlabels; i++) {
            struct kpost *k = kpost_get(ix, u->labels[i].key);
            if (k)
                post_add(k, u, u->labels[i].val); /* out of memory: the record is not found */
        }
    for (uint16_t i = 0; u->cons && i < u->cons->nanti; i++)
        group_join(ix, u, &u->cons->anti[i]);
}

void tg__pidx_removed(struct tg_cluster *c, struct tg_usage *u)
{
    struct pidx *ix = ix_of(c);
    if (!ix)
        return;
    if (ix->keys.len)
        for (uint16_t i = 0; i < u->nlabels; i++) {
            struct kpost *k = kpost_get(ix, u->labels[i].key);
            if (k)
                post_del(k, u, u->labels[i].val);
        }
    for (uint16_t i = 0; u->cons && i < u->cons->nanti; i++)
        group_leave(ix, u, &u->cons->anti[i]);
}

void tg__pidx_changing(struct tg_cluster *c, struct tg_usage *u, int done)
{
    if (!done) {
        if (!u->hidden)
            tg__pidx_usage(c, u, -1);
        tg__pidx_removed(c, u);
    } else {
        tg__pidx_added(c, u);
        if (!u->hidden)
            tg__pidx_usage(c, u, +1);
    }
}

/* ---- live queries ------------------------------------------------------------------------ */

int tg__term_selects(const struct tg_podterm *t, uint32_t owner_ns, const struct tg_objstore *st,
                     uint32_t ns, const struct tg_label *labels, uint32_t nlabels)
{
    if (!t->has_sel)
        return 0;
    int in = 0;
    if (!t->nns && !t->has_nssel)
        in = ns == owner_ns;
    for (uint16_t i = 0; !in && i < t->nns; i++)
        in = t->nss[i] == ns;
    if (!in && t->has_nssel)
        in = tg_objstore_ns_match(st, ns, &t->nssel);
    return in && tg_labelsel_match(&t->sel, labels, nlabels);
}

static int ns_ok(struct tg__pq *q, uint32_t ns)
{
    const struct tg_podterm *t = q->nsterm;
    if (!t || (!t->nns && !t->has_nssel))
        return ns == q->ns;
    for (uint16_t i = 0; i < t->nns; i++)
        if (t->nss[i] == ns)
            return 1;
    if (!t->has_nssel)
        return 0;
    uint64_t v;
    if (tg_imap_get(&q->nscache, ns, &v))
        return v == 1;
    int m = tg_objstore_ns_match(q->store, ns, &t->nssel);
    tg_imap_put(&q->nscache, ns, m ? 1 : 2); /* a cache: failing to keep it costs time only */
    return m;
}

static int q_selects(struct tg__pq *q, const struct tg_usage *u)
{
    if (q->kind == TG__Q_GROUP) {
        if (!u->cons || u->ns != q->ns)
            return 0;
        for (uint16_t i = 0; i < u->cons->nanti; i++)
            if (tg_podterm_hash(&u->cons->anti[i], u->ns) == q->ghash &&
                tg_podterm_equal(&u->cons->anti[i], q->gterm))
                return 1;
        return 0;
    }
    return q->sel && ns_ok(q, u->ns) && tg_labelsel_match(q->sel, u->labels, u->nlabels);
}

static int hist_grow(struct tg__pq *q, uint32_t need)
{
    if (need < q->nhist)
        return 0;
    uint32_t n = q->nhist ? q->nhist : 8;
    while (n <= need)
        n *= 2;
    uint32_t *h = realloc(q->hist, n * sizeof *h);
    if (!h)
        return TG_ENOMEM;
    memset(h + q->nhist, 0, (n - q->nhist) * sizeof *h);
    q->hist = h;
    q->nhist = n;
    return 0;
}

static void minima(struct tg__pq *q)
{
    uint32_t i = 0;
    while (i < q->nhist && !q->hist[i])
        i++;
    if (i == q->nhist) {
        q->min = q->min2 = UINT32_MAX;
        return;
    }
    q->min = i;
    if (q->hist[i] > 1) {
        q->min2 = i;
        return;
    }
    for (i++; i < q->nhist && !q->hist[i]; i++)
        ;
    q->min2 = i < q->nhist ? i : UINT32_MAX;
}

/* One record more (sign +1) or less in the domain of value val. */
static void q_apply(struct tg__pq *q, uint32_t val, int sign)
{
    uint64_t c = 0;
    int have = tg_imap_get(&q->cnt, val, &c);
    if (sign < 0 && !c)
        return;
    uint64_t nc = sign > 0 ? c + 1 : c - 1;
    if ((nc || q->bump == TG__B_MIN) ? tg_imap_put(&q->cnt, val, nc) : (tg_imap_del(&q->cnt, val), 0)) {
        q->oom = 1;
        return;
    }
    uint64_t before = q->total;
    q->total = sign > 0 ? q->total + 1 : q->total - 1;
    if (q->bump == TG__B_TOTAL && (!before || !q->total) && q->gen)
        (*q->gen)++;
    if (q->bump == TG__B_DOMAIN && (!c || !nc || (before <= q->mark) != (q->total <= q->mark)) && q->gen)
        (*q->gen)++;
    if (q->bump != TG__B_MIN)
        return;
    if (!have)
        q->ndom++; /* only when elig is not given: every value seen is a domain */
    if (hist_grow(q, (uint32_t)nc + 1)) {
        q->oom = 1;
        return;
    }
    if (have)
        q->hist[c]--;
    q->hist[nc]++;
    uint32_t m = q->min, m2 = q->min2;
    minima(q);
    if ((m != q->min || m2 != q->min2) && q->gen)
        (*q->gen)++;
}

static void q_record(struct tg_cluster *c, struct tg__pq *q, const struct tg_usage *u, int sign)
{
    if (q->elig && !q->elig[u->slot])
        return;
    uint32_t v = tg__kval(c, u->slot, q->key);
    if (v != TG_STR_NONE && q_selects(q, u))
        q_apply(q, v, sign);
}

/* Nominated records count like placed pods: the preemptor's members are
 * going there (kube-scheduler filters with nominated pods too). */
void tg__pidx_usage(struct tg_cluster *c, struct tg_usage *u, int sign)
{
    struct pidx *ix = ix_of(c);
    if (!ix)
        return;
    for (struct tg__pq *q = ix->live; q; q = q->next)
        q_record(c, q, u, sign);
}

/* The smallest posting that holds every record sel can match, or NULL
 * (no In or Exists requirement: every record). *vals/nv say which values
 * of k to walk (In), or nv 0 for all of k's records (Exists). */
static struct kpost *best_post(struct tg_cluster *c, const struct tg_labelsel *sel,
                               const struct tg_selreq **req)
{
    struct kpost *best = NULL;
    uint64_t bestn = UINT64_MAX;
    *req = NULL;
    for (uint16_t i = 0; i < sel->nreq; i++) {
        const struct tg_selreq *r = &sel->reqs[i];
        if (r->op != TG_SEL_IN && r->op != TG_SEL_EXISTS)
            continue;
        struct kpost *k = watch(c, r->key);
        if (!k)
            continue;
        uint64_t n = 0;
        if (r->op == TG_SEL_EXISTS) {
            n = k->all.len;
        } else {
            for (uint16_t j = 0; j < r->nvals; j++) {
                struct tg__pset *s = kpost_val(k, r->vals[j], 0);
                n += s ? s->len : 0;
            }
        }
        if (n < bestn) {
            best = k;
            bestn = n;
            *req = r;
        }
    }
    return best;
}

static void count_set(struct tg_cluster *c, struct tg__pq *q, struct tg__pset *s)
{
    struct tg_usage *u;
    PSET_EACH(s, i, u)
        if (!u->hidden)
            q_record(c, q, u, +1);
}

static int init_domains(struct tg_cluster *c, struct tg__pq *q)
{
    for (uint32_t slot = 0; slot < c->nslots; slot++) {
        if (!q->elig[slot])
            continue;
        uint32_t v = tg__kval(c, slot, q->key);
        uint64_t x;
        if (v == TG_STR_NONE || tg_imap_get(&q->cnt, v, &x))
            continue;
        if (tg_imap_put(&q->cnt, v, 0))
            return TG_ENOMEM;
        q->ndom++;
    }
    if (hist_grow(q, 1))
        return TG_ENOMEM;
    q->hist[0] = q->ndom;
    minima(q);
    return 0;
}

int tg__pq_start(struct tg_cluster *c, struct tg__pq *q)
{
    struct pidx *ix = ix_of(c);
    q->total = 0;
    q->ndom = 0;
    q->min = q->min2 = UINT32_MAX;
    q->next = q->prev = NULL;
    if (q->bump == TG__B_MIN && q->elig && init_domains(c, q)) {
        tg__pq_stop(c, q);
        return TG_ENOMEM;
    }
    if (q->kind == TG__Q_GROUP) {
        struct group *g = ix ? group_find(ix, q->ghash, q->ns, q->gterm) : NULL;
        if (g)
            count_set(c, q, &g->members);
    } else if (q->sel) {
        const struct tg_selreq *r;
        struct kpost *k = best_post(c, q->sel, &r);
        if (k && r->op == TG_SEL_EXISTS) {
            count_set(c, q, &k->all);
        } else if (k) {
            for (uint16_t j = 0; j < r->nvals; j++) {
                struct tg__pset *s = kpost_val(k, r->vals[j], 0);
                if (s)
                    count_set(c, q, s);
            }
        } else {
            uint32_t pos = 0;
            const struct tg_hslot *hs;
            while ((hs = tg_hmap_next(&c->usage, &pos))) {
                struct tg_usage *u = (struct tg_usage *)(uintptr_t)hs->val;
                if (!u->hidden)
                    q_record(c, q, u, +1);
            }
        }
    }
    if (q->oom) {
        tg__pq_stop(c, q);
        return TG_ENOMEM;
    }
    if (ix) {
        q->prev = NULL;
        q->next = ix->live;
        if (ix->live)
            ix->live->prev = q;
        ix->live = q;
    }
    return 0;
}

void tg__pq_stop(struct tg_cluster *c, struct tg__pq *q)
{
    struct pidx *ix = ix_of(c);
    if (ix && (q->prev || ix->live == q)) {
        if (q->prev)
            q->prev->next = q->next;
        else
            ix->live = q->next;
        if (q->next)
            q->next->prev = q->prev;
    }
    q->next = q->prev = NULL;
    tg_imap_free(&q->cnt);
    tg_imap_free(&q->nscache);
    free(q->hist);
    q->hist = NULL;
    q->nhist = 0;
}

uint64_t tg__pq_count(const struct tg__pq *q, uint32_t val)
{
    uint64_t v = 0;
    if (val != TG_STR_NONE)
        tg_imap_get(&q->cnt, val, &v);
    return v;
}

uint32_t tg__pq_min_others(const struct tg__pq *q, uint32_t val)
{
    uint64_t c;
    if (val != TG_STR_NONE && tg_imap_get(&q->cnt, val, &c) && c == q->min)
        return q->min2; /* val holds the minimum: the others' is the next one */
    return q->min;
}

/* ---- what a pending pod meets --------------------------------------------------------------- */

static int visit(const struct gfile *f, const struct tg_objstore *st, const struct tg_pod *p,
                 int (*fn)(void *, const struct tg_podterm *, uint32_t, uint64_t, uint32_t), void *ud)
{
    for (uint32_t i = 0; f && i < f->n; i++) {
        const struct group *g = f->v[i];
        if (!tg__term_selects(&g->term, g->ns, st, p->ns, p->labels, p->nlabels))
            continue;
        int rc = fn(ud, &g->term, g->ns, g->hash, g->desc);
        if (rc)
            return rc;
    }
    return 0;
}

int tg__pidx_groups(struct tg_cluster *c, const struct tg_objstore *st, const struct tg_pod *p,
                    int (*fn)(void *ud, const struct tg_podterm *t, uint32_t ns, uint64_t hash,
                              uint32_t desc),
                    void *ud)
{
    struct pidx *ix = ix_of(c);
    if (!ix || !ix->ngroups)
        return 0;
    int rc = visit(&ix->loose, st, p, fn, ud);
    for (uint16_t i = 0; !rc && i < p->nlabels; i++) {
        uint64_t k = (uint64_t)p->labels[i].key << 32;
        rc = visit(gfile_get(ix, k | p->labels[i].val, 0), st, p, fn, ud);
        if (!rc)
            rc = visit(gfile_get(ix, k | NO_VAL, 0), st, p, fn, ud);
    }
    return rc;
}

static uint32_t add_key(uint32_t *out, uint32_t n, uint32_t cap, uint32_t key)
{
    for (uint32_t i = 0; i < n && i < cap; i++)
        if (out[i] == key)
            return n;
    if (n < cap)
        out[n] = key;
    return n + 1;
}

static uint32_t sel_keys(const struct tg_labelsel *s, uint32_t *out, uint32_t n, uint32_t cap)
{
    for (uint16_t i = 0; i < s->nreq; i++)
        n = add_key(out, n, cap, s->reqs[i].key);
    return n;
}

uint32_t tg__pidx_group_keys(struct tg_cluster *c, uint32_t *out, uint32_t n, uint32_t cap)
{
    struct pidx *ix = ix_of(c);
    if (!ix || !ix->ngroups)
        return n;
    for (uint32_t i = 0; i < ix->gkeys.cap; i++)
        if (ix->gkeys.state[i] == 1)
            n = add_key(out, n, cap, (uint32_t)ix->gkeys.slots[i].key);
    return n;
}

uint32_t tg_plugins_label_keys(struct tg_cluster *c, struct tg_pod *const *pods, uint32_t np,
                               uint32_t *out, uint32_t cap)
{
    uint32_t n = tg__pidx_group_keys(c, out, 0, cap);
    for (uint32_t k = 0; k < np; k++) {
        const struct tg_podcons *pc = pods[k]->cons;
        const struct tg_podspec *ps = pods[k]->spec;
        if (pc) {
            const struct tg_podterm *lists[4] = {pc->aff, pc->anti, pc->paff, pc->panti};
            const uint16_t ns[4] = {pc->naff, pc->nanti, pc->npaff, pc->npanti};
            for (int l = 0; l < 4; l++)
                for (uint16_t i = 0; i < ns[l]; i++)
                    n = sel_keys(&lists[l][i].sel, out, n, cap);
        }
        for (uint16_t i = 0; ps && i < ps->nspread; i++)
            n = sel_keys(&ps->spread[i].sel, out, n, cap);
    }
    return n;
}

/* ---- descriptions -------------------------------------------------------------------------- */

static void sel_text(const struct tg_labelsel *s, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (uint16_t i = 0; i < s->nreq && k < n; i++) {
        const struct tg_selreq *r = &s->reqs[i];
        const char *sep = i ? "," : "";
        const char *key = tg_str(r->key);
        if ((r->op == TG_SEL_IN || r->op == TG_SEL_NOTIN) && r->nvals == 1) {
            k += (size_t)snprintf(buf + k, n - k, "%s%s%s%s", sep, key,
                                  r->op == TG_SEL_IN ? "=" : "!=", tg_str(r->vals[0]));
        } else if (r->op == TG_SEL_IN || r->op == TG_SEL_NOTIN) {
            k += (size_t)snprintf(buf + k, n - k, "%s%s %s (", sep, key, r->op == TG_SEL_IN ? "in" : "notin");
            for (uint16_t j = 0; j < r->nvals && k < n; j++)
                k += (size_t)snprintf(buf + k, n - k, "%s%s", j ? "," : "", tg_str(r->vals[j]));
            if (k < n)
                k += (size_t)snprintf(buf + k, n - k, ")");
        } else {
            k += (size_t)snprintf(buf + k, n - k, "%s%s%s", sep, r->op == TG_SEL_DOESNOTEXIST ? "!" : "", key);
        }
    }
}

void tg__describe_term(const struct tg_podterm *t, uint32_t ns, char *buf, size_t n)
{
    char sel[300], nss[200] = "";
    sel_text(&t->sel, sel, sizeof sel);
    if (!t->nns && !t->has_nssel) {
        snprintf(nss, sizeof nss, "%s", tg_str(ns));
    } else if (t->has_nssel && !t->nssel.nreq) {
        snprintf(nss, sizeof nss, "*");
    } else {
        size_t k = 0;
        for (uint16_t i = 0; i < t->nns && k < sizeof nss; i++)
            k += (size_t)snprintf(nss + k, sizeof nss - k, "%s%s", i ? "," : "", tg_str(t->nss[i]));
        if (t->has_nssel && k < sizeof nss) {
            char ss[160];
            sel_text(&t->nssel, ss, sizeof ss);
            snprintf(nss + k, sizeof nss - k, "%s{%s}", k ? "," : "", ss);
        }
    }
    snprintf(buf, n, "%s/%s", nss, t->has_sel ? (sel[0] ? sel : "*") : "(nothing)");
}
