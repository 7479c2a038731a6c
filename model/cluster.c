/* The cluster model: node slots, allocatable and usage matrices, usage
 * records per placed pod, and the topology tree; see cluster.h. */
#include "model/cluster.h"
#include "util/err.h"
#include "util/intern.h"

#include <stdlib.h>
#include <string.h>

enum { DEFAULT_MAX_PODS = 110 };   /* kubelet's default when a Node lists no "pods" */

int tg_cluster_init(struct tg_cluster *c, const uint32_t *level_labels, uint32_t nlevels)
{
    memset(c, 0, sizeof *c);
    c->stride = 8;
    return tg_tree_init(&c->tree, level_labels, nlevels);
}

#define EACH_HOOK(c, h) for (const struct tg_cluster_hooks *h = (c)->hooks; h < (c)->hooks + (c)->nhooks; h++)

int tg_cluster_listen(struct tg_cluster *c, const struct tg_cluster_hooks *h)
{
    if (c->nhooks == TG_CLUSTER_MAX_HOOKS)
        return TG_ENOMEM;
    c->hooks[c->nhooks++] = *h;
    return 0;
}

/* Notes a change to slot's room or Node (see struct tg_cluster). */
static void slot_changed(struct tg_cluster *c, uint32_t slot)
{
    c->nchanges++;
    c->changed_at[slot] = c->nchanges;
    c->clog[c->nchanges % TG_CLUSTER_CLOG] = slot;
}

uint32_t tg_cluster_changed(const struct tg_cluster *c, uint64_t since, uint32_t *out)
{
    uint32_t n = 0;
    if (c->nchanges - since > TG_CLUSTER_CLOG) {
        for (uint32_t s = 0; s < c->nslots; s++)
            if (c->changed_at[s] > since)
                out[n++] = s;
        return n;
    }
    for (uint64_t k = since + 1; k <= c->nchanges; k++) {
        uint32_t s = c->clog[k % TG_CLUSTER_CLOG];
        if (c->changed_at[s] == k) /* its last change: listed once */
            out[n++] = s;
    }
    return n;
}

static void node_changed(struct tg_cluster *c, uint32_t slot)
{
    slot_changed(c, slot);
    EACH_HOOK(c, h)
        if (h->node_changed)
            h->node_changed(h->ud, c, slot);
}

static void usage_changed(struct tg_cluster *c, struct tg_usage *u, int sign)
{
    slot_changed(c, u->slot);
    EACH_HOOK(c, h)
        if (h->usage_changed)
            h->usage_changed(h->ud, c, u, sign);
}

/* A record's copy of its pod's labels holds its own interner references. */
static void labels_drop(struct tg_usage *u)
{
    tg_labels_unref(u->labels, u->nlabels);
    free(u->labels);
    u->labels = NULL;
    u->nlabels = 0;
}

static void usage_free_all(struct tg_cluster *c)
{
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&c->usage, &pos))) {
        struct tg_usage *u = (struct tg_usage *)(uintptr_t)s->val;
        labels_drop(u);
        tg_podcons_free(&u->cons);
        free(u->key);
        free(u);
    }
    tg_hmap_free(&c->usage);
}

void tg_cluster_free(struct tg_cluster *c)
{
    if (c->ext_free)
        c->ext_free(c);
    for (uint32_t i = 0; i < c->nslots; i++) {
        if (c->nodes[i].obj) {
            tg_node_free(&c->nodes[i].obj);
            node_changed(c, i);
        }
    }
    usage_free_all(c);
    tg_tree_free(&c->tree);
    free(c->nodes);
    free(c->alloc);
    free(c->used);
    free(c->changed_at);
    tg_imap_free(&c->by_name);
    memset(c, 0, sizeof *c);
}

/* Makes room for resource ids < need in every row. */
static int ensure_stride(struct tg_cluster *c, uint32_t need)
{
    if (need <= c->stride)
        return 0;
    uint32_t ns = c->stride;
    while (ns < need)
        ns *= 2;
    int64_t *na = calloc((size_t)c->cap * ns + 1, sizeof *na);
    int64_t *nu = calloc((size_t)c->cap * ns + 1, sizeof *nu);
    if (!na || !nu) {
        free(na);
        free(nu);
        return TG_ENOMEM;
    }
    for (uint32_t i = 0; i < c->nslots; i++) {
        memcpy(na + (size_t)i * ns, c->alloc + (size_t)i * c->stride, c->stride * sizeof *na);
        memcpy(nu + (size_t)i * ns, c->used + (size_t)i * c->stride, c->stride * sizeof *nu);
    }
    free(c->alloc);
    free(c->used);
    c->alloc = na;
    c->used = nu;
    c->stride = ns;
    return 0;
}

uint32_t tg_cluster_slot(struct tg_cluster *c, uint32_t name, int create)
{
    uint64_t v;
    if (tg_imap_get(&c->by_name, name, &v))
        return (uint32_t)v;
    if (!create)
        return TG_NONE;
    if (c->nslots == c->cap) {
        uint32_t nc = c->cap ? c->cap * 2 : 256;
        struct tg_node *nn = realloc(c->nodes, nc * sizeof *nn);
        if (!nn)
            return TG_NONE;
        c->nodes = nn;
        int64_t *na = realloc(c->alloc, ((size_t)nc * c->stride + 1) * sizeof *na);
        if (!na)
            return TG_NONE;
        c->alloc = na;
        int64_t *nu = realloc(c->used, ((size_t)nc * c->stride + 1) * sizeof *nu);
        if (!nu)
            return TG_NONE;
        c->used = nu;
        uint64_t *ca = realloc(c->changed_at, nc * sizeof *ca);
        if (!ca)
            return TG_NONE;
        c->changed_at = ca;
        c->cap = nc;
    }
    uint32_t s = c->nslots;
    if (tg_imap_put(&c->by_name, name, s))
        return TG_NONE;
    c->nodes[s] = (struct tg_node){.name = name};
    memset(c->alloc + (size_t)s * c->stride, 0, c->stride * sizeof *c->alloc);
    memset(c->used + (size_t)s * c->stride, 0, c->stride * sizeof *c->used);
    c->nslots++;
    slot_changed(c, s);
    return s;
}

int tg_cluster_node_set(struct tg_cluster *c, struct tg_node_obj *obj)
{
    int rc = TG_ENOMEM;
    uint32_t maxres = TG_RES_NFIXED;
    for (uint8_t i = 0; i < obj->nalloc; i++)
        if (obj->alloc[i].res + 1 > maxres)
            maxres = obj->alloc[i].res + 1;
    if (ensure_stride(c, maxres))
        goto fail;
    uint32_t s = tg_cluster_slot(c, obj->name, 1);
    if (s == TG_NONE)
        goto fail;
    struct tg_node *n = &c->nodes[s];
    if (!n->obj)
        c->nready++;
    tg_node_free(&n->obj);
    n->obj = obj;
    int64_t *row = c->alloc + (size_t)s * c->stride;
    memset(row, 0, c->stride * sizeof *row);
    row[TG_RES_PODS] = DEFAULT_MAX_PODS;
    for (uint8_t i = 0; i < obj->nalloc; i++)
        row[obj->alloc[i].res] = obj->alloc[i].val;
    if ((rc = tg_tree_insert(&c->tree, s, obj->labels, obj->nlabels)))
        return rc;
    c->generation++;
    node_changed(c, s);
    return 0;
fail:
    tg_node_free(&obj);
    return rc;
}

void tg_cluster_node_remove(struct tg_cluster *c, uint32_t name)
{
    uint32_t s = tg_cluster_slot(c, name, 0);
    if (s == TG_NONE || !c->nodes[s].obj)
        return;
    tg_node_free(&c->nodes[s].obj);
    c->nready--;
    memset(c->alloc + (size_t)s * c->stride, 0, c->stride * sizeof *c->alloc);
    tg_tree_remove(&c->tree, s);
    c->generation++;
    node_changed(c, s);
}

struct tg_usage *tg_cluster_usage(const struct tg_cluster *c, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&c->usage, key, strlen(key), &v) ? (struct tg_usage *)(uintptr_t)v : NULL;
}

static void usage_apply(struct tg_cluster *c, const struct tg_usage *u, int sign)
{
    int64_t *row = c->used + (size_t)u->slot * c->stride;
    for (uint8_t i = 0; i < u->nreq; i++)
        row[u->req[i].res] += sign * u->req[i].val;
    row[TG_RES_PODS] += sign;
    c->nodes[u->slot].npods += (uint32_t)sign;
}

/* A record into / out of its node's list (struct tg_node.pods). */
static void node_link(struct tg_cluster *c, struct tg_usage *u, uint32_t slot)
{
    struct tg_node *n = &c->nodes[slot];
    u->slot = slot;
    u->nnext = n->pods;
    if (n->pods)
        n->pods->nprev = u;
    n->pods = u;
}

static void node_unlink(struct tg_cluster *c, struct tg_usage *u)
{
    struct tg_node *n = &c->nodes[u->slot];
    if (u->nprev)
        u->nprev->nnext = u->nnext;
    else
        n->pods = u->nnext;
    if (u->nnext)
        u->nnext->nprev = u->nprev;
}

static void usage_remove(struct tg_cluster *c, struct tg_usage *u)
{
    EACH_HOOK(c, h)
        if (h->record_removed && !(u->quiet && h->skip_quiet))
            h->record_removed(h->ud, c, u);
    if (!u->hidden) {
        usage_changed(c, u, -1);
        usage_apply(c, u, -1);
    }
    node_unlink(c, u);
    tg_hmap_del(&c->usage, u->key, strlen(u->key));
    labels_drop(u);
    tg_podcons_free(&u->cons);
    free(u->key);
    free(u);
    c->generation++;
}

void tg_cluster_pod_delete(struct tg_cluster *c, const char *key)
{
    struct tg_usage *u = tg_cluster_usage(c, key);
    if (u)
        usage_remove(c, u);
}

void tg_cluster_usage_hide(struct tg_cluster *c, struct tg_usage *u, int hide)
{
    if (!!hide == u->hidden)
        return;
    if (hide) {
        usage_changed(c, u, -1);
        usage_apply(c, u, -1);
        u->hidden = 1;
    } else {
        u->hidden = 0;
        usage_apply(c, u, +1);
        usage_changed(c, u, +1);
    }
}

int tg_cluster_usage_move(struct tg_cluster *c, struct tg_usage *u, uint32_t slot)
{
    if (!u->hidden || slot >= c->nslots)
        return TG_EINVAL;
    node_unlink(c, u);
    u->nprev = NULL;
    node_link(c, u, slot);
    return 0;
}

static int same_req(const struct tg_usage *u, const struct tg_pod *p, uint32_t slot)
{
    if (u->slot != slot || u->nreq != p->nreq)
        return 0;
    for (uint8_t i = 0; i < p->nreq; i++)
        if (u->req[i].res != p->req[i].res || u->req[i].val != p->req[i].val)
            return 0;
    return 1;
}

static void record_changing(struct tg_cluster *c, struct tg_usage *u, int done)
{
    EACH_HOOK(c, h)
        if (h->record_changing && !(u->quiet && h->skip_quiet))
            h->record_changing(h->ud, c, u, done);
}

/* The pod's identity as preemption weighs it; labels and inter-pod terms
 * copied (owned). live: u is a record listeners know (they hear of a change
 * to its labels or terms). */
static int usage_meta(struct tg_cluster *c, struct tg_usage *u, const struct tg_pod *p, int live)
{
    int same = u->nlabels == p->nlabels &&
               (!p->nlabels || !memcmp(u->labels, p->labels, p->nlabels * sizeof *p->labels)) &&
               tg_podcons_equal(u->cons, p->cons);
    int relabel = live && !same;
    if (!same) {
        struct tg_label *l = NULL;
        struct tg_podcons *pc = NULL;
        if ((p->nlabels && !(l = malloc(p->nlabels * sizeof *l))) ||
            (p->cons && !(pc = tg_podcons_clone(p->cons)))) {
            free(l);
            return TG_ENOMEM;
        }
        if (p->nlabels)
            memcpy(l, p->labels, p->nlabels * sizeof *l);
        tg_labels_retain(l, p->nlabels);
        if (relabel)
            record_changing(c, u, 0);
        labels_drop(u);
        tg_podcons_free(&u->cons);
        u->labels = l;
        u->cons = pc;
        u->nlabels = p->nlabels;
    }
    u->ns = p->ns;
    u->group = p->group;
    u->sched = p->sched;
    u->derived = p->derived;
    u->queue = p->queue;
    u->rank = p->rank;
    u->prio_class = p->prio_class;
    u->owner_kind = p->owner_kind;
    u->owner_name = p->owner_name;
    u->priority = p->priority;
    u->has_priority = p->has_priority;
    u->grace_s = p->grace_s;
    u->created_ms = p->created_ms;
    if (p->start_ms)
        u->start_ms = p->start_ms;
    u->guaranteed = p->guaranteed;
    u->excl_cpus = p->excl_cpus;
    u->deleting = p->deleting;
    if (relabel)
        record_changing(c, u, 1);
    return 0;
}

/* A record of kind k for p on slot; an existing record of the same pod is
 * kept when only its kind would weaken (bound > assumed > nominated). */
static int usage_add(struct tg_cluster *c, const struct tg_pod *p, uint32_t slot, uint8_t kind)
{
    struct tg_usage *old = tg_cluster_usage(c, p->key);
    /* a phantom becoming real (or the reverse), or a pod starting to
     * terminate, is a new record for listeners */
    if (old && same_req(old, p, slot) && old->deleting == p->deleting &&
        (old->kind == TG_USAGE_NOMINATED) == (kind == TG_USAGE_NOMINATED)) {
        if (kind < old->kind)
            old->kind = kind;
        old->assumed = old->kind == TG_USAGE_ASSUMED;
        c->nmeta++;
        if (kind == TG_USAGE_BOUND || !old->nlabels)
            return usage_meta(c, old, p, 1);
        return 0;
    }
    if (old && kind > old->kind)
        return 0; /* a phantom never displaces a real placement */
    if (old)
        usage_remove(c, old);
    uint32_t maxres = 0;
    for (uint8_t i = 0; i < p->nreq; i++)
        if (p->req[i].res + 1 > maxres)
            maxres = p->req[i].res + 1;
    if (ensure_stride(c, maxres))
        return TG_ENOMEM;
    struct tg_usage *u = calloc(1, sizeof *u + p->nreq * sizeof u->req[0]);
    char *key = strdup(p->key);
    if (!u || !key || usage_meta(c, u, p, 0) ||
        tg_hmap_put(&c->usage, key, strlen(key), (uint64_t)(uintptr_t)u)) {
        if (u) {
            labels_drop(u);
            tg_podcons_free(&u->cons);
        }
        free(u);
        free(key);
        return TG_ENOMEM;
    }
    u->key = key;
    u->slot = slot;
    u->kind = kind;
    u->assumed = kind == TG_USAGE_ASSUMED;
    u->inner = 0xff;
    u->nreq = p->nreq;
    if (p->nreq)
        memcpy(u->req, p->req, p->nreq * sizeof u->req[0]);
    u->quiet = c->quiet;
    if (u->quiet)
        u->gpos = UINT32_MAX; /* no gang's member: the gang layer does not hear of it */
    node_link(c, u, slot);
    usage_apply(c, u, +1);
    usage_changed(c, u, +1);
    EACH_HOOK(c, h)
        if (h->record_added && !(u->quiet && h->skip_quiet))
            h->record_added(h->ud, c, u);
    return 0;
}

void tg_cluster_quiet(struct tg_cluster *c, int on)
{
    c->quiet = (uint8_t)!!on;
}

int tg_cluster_pod_update(struct tg_cluster *c, const struct tg_pod *p)
{
    if (!p->node || tg_pod_terminal(p)) {
        struct tg_usage *u = tg_cluster_usage(c, p->key);
        /* An assumed or nominated pod stays until the bind is seen or fails. */
        if (u && !(u->kind != TG_USAGE_BOUND && !p->node && !tg_pod_terminal(p)))
            usage_remove(c, u);
        return 0;
    }
    uint32_t slot = tg_cluster_slot(c, p->node, 1);
    if (slot == TG_NONE)
        return TG_ENOMEM;
    return usage_add(c, p, slot, TG_USAGE_BOUND);
}

int tg_cluster_assume(struct tg_cluster *c, const struct tg_pod *p, uint32_t slot)
{
    return usage_add(c, p, slot, TG_USAGE_ASSUMED);
}

int tg_cluster_nominate(struct tg_cluster *c, const struct tg_pod *p, uint32_t slot)
{
    return usage_add(c, p, slot, TG_USAGE_NOMINATED);
}

int tg_cluster_set_levels(struct tg_cluster *c, const uint32_t *level_labels, uint32_t nlevels)
{
    struct tg_tree t;
    int rc = tg_tree_init(&t, level_labels, nlevels);
    if (rc)
        return rc;
    for (uint32_t s = 0; s < c->nslots; s++) {
        const struct tg_node_obj *o = c->nodes[s].obj;
        if (o && (rc = tg_tree_insert(&t, s, o->labels, o->nlabels))) {
            tg_tree_free(&t);
            return rc;
        }
    }
    tg_tree_free(&c->tree);
    c->tree = t;
    c->generation++;
    c->epoch++;
    return 0;
}
