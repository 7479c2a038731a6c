/* The topology tree; see tree.h. */
#include "model/tree.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/intern.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static int push(uint32_t **v, uint32_t *n, uint32_t *cap, uint32_t x)
{
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 4;
        uint32_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return TG_ENOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static uint32_t new_domain(struct tg_tree *t, uint32_t parent, uint32_t name, uint8_t level)
{
    if (t->ndom == t->domcap) {
        uint32_t nc = t->domcap ? t->domcap * 2 : 64;
        struct tg_domain *nd = realloc(t->dom, nc * sizeof *nd);
        if (!nd)
            return NONE;
        t->dom = nd;
        t->domcap = nc;
    }
    uint32_t id = t->ndom;
    if (push(&t->bylevel[level], &t->nbylevel[level], &t->capbylevel[level], id))
        return NONE;
    t->dom[id] = (struct tg_domain){.parent = parent, .name = name, .level = level};
    t->ndom++;
    if (name) {
        uint64_t seen, k = (uint64_t)level << 32 | name;
        if (tg_imap_get(&t->names, k, &seen))
            t->ndup[level]++;
        else if (tg_imap_put(&t->names, k, 1))
            t->ndup[level]++; /* out of memory: say "not unique", the safe answer */
    }
    if (parent != NONE) {
        struct tg_domain *p = &t->dom[parent];
        if (push(&p->child, &p->nchild, &p->cap, id) ||
            tg_imap_put(&t->index, (uint64_t)parent << 32 | name, id)) {
            t->ndom--;
            t->nbylevel[level]--;
            return NONE;
        }
    }
    return id;
}

int tg_tree_init(struct tg_tree *t, const uint32_t *labels, uint32_t nlevels)
{
    memset(t, 0, sizeof *t);
    if (nlevels > TG_MAX_LEVELS)
        return TG_EINVAL;
    t->nlevels = nlevels;
    memcpy(t->label, labels, nlevels * sizeof *labels);
    return new_domain(t, NONE, 0, 0) == NONE ? TG_ENOMEM : 0;
}

void tg_tree_free(struct tg_tree *t)
{
    for (uint32_t i = 0; i < t->ndom; i++)
        free(t->dom[i].child);
    free(t->dom);
    for (uint32_t l = 0; l <= TG_MAX_LEVELS; l++)
        free(t->bylevel[l]);
    tg_imap_free(&t->index);
    tg_imap_free(&t->names);
    free(t->leaf);
    free(t->pos);
    memset(t, 0, sizeof *t);
}

static int grow_slots(struct tg_tree *t, uint32_t slot)
{
    if (slot < t->nslots)
        return 0;
    uint32_t nn = t->nslots ? t->nslots : 64;
    while (nn <= slot)
        nn *= 2;
    uint32_t *nl = realloc(t->leaf, nn * sizeof *nl);
    if (!nl)
        return TG_ENOMEM;
    t->leaf = nl;
    uint32_t *np = realloc(t->pos, nn * sizeof *np);
    if (!np)
        return TG_ENOMEM;
    t->pos = np;
    for (uint32_t i = t->nslots; i < nn; i++)
        t->leaf[i] = t->pos[i] = NONE;
    t->nslots = nn;
    return 0;
}

void tg_tree_remove(struct tg_tree *t, uint32_t slot)
{
    if (slot >= t->nslots || t->leaf[slot] == NONE)
        return;
    uint32_t d = t->leaf[slot];
    struct tg_domain *leaf = &t->dom[d];
    uint32_t p = t->pos[slot];
    uint32_t last = leaf->child[--leaf->nchild];
    leaf->child[p] = last;
    t->pos[last] = p;
    for (; d != NONE; d = t->dom[d].parent)
        t->dom[d].nnodes--;
    t->leaf[slot] = t->pos[slot] = NONE;
}

int tg_tree_insert(struct tg_tree *t, uint32_t slot, const struct tg_label *labels, uint32_t n)
{
    if (grow_slots(t, slot))
        return TG_ENOMEM;
    uint32_t d = 0;
    for (uint32_t l = 0; l < t->nlevels; l++) {
        uint32_t v = tg_labels_get(labels, n, t->label[l]);
        if (v == TG_STR_NONE)
            v = 0;
        uint64_t found;
        if (tg_imap_get(&t->index, (uint64_t)d << 32 | v, &found))
            d = (uint32_t)found;
        else if ((d = new_domain(t, d, v, (uint8_t)(l + 1))) == NONE)
            return TG_ENOMEM;
    }
    if (t->leaf[slot] == d)
        return 0;
    tg_tree_remove(t, slot);
    struct tg_domain *leaf = &t->dom[d];
    if (push(&leaf->child, &leaf->nchild, &leaf->cap, slot))
        return TG_ENOMEM;
    t->leaf[slot] = d;
    t->pos[slot] = leaf->nchild - 1;
    for (uint32_t a = d; a != NONE; a = t->dom[a].parent)
        t->dom[a].nnodes++;
    return 0;
}

int tg_tree_labelled(const struct tg_tree *t, uint32_t d, uint32_t lvl)
{
    if (lvl == 0)
        return 1;
    d = tg_tree_ancestor(t, d, lvl);
    return d != NONE && t->dom[d].level == lvl && t->dom[d].name != 0;
}

uint32_t tg_tree_named(const struct tg_tree *t, uint32_t d)
{
    while (d != NONE && t->dom[d].level > 0 && !t->dom[d].name)
        d = t->dom[d].parent;
    return d == NONE ? 0 : d;
}

const char *tg_tree_path(const struct tg_tree *t, uint32_t d, char *buf, size_t n)
{
    uint32_t chain[TG_MAX_LEVELS + 1];
    int k = 0;
    for (; d != NONE && t->dom[d].level > 0; d = t->dom[d].parent)
        chain[k++] = d;
    size_t len = 0;
    buf[0] = 0;
    while (k-- > 0 && len + 1 < n) {
        const char *s = tg_str(t->dom[chain[k]].name);
        if (!*s)
            continue; /* a level whose label these nodes lack */
        size_t sl = strlen(s);
        if (len + sl + 2 > n)
            break;
        if (len)
            buf[len++] = '/';
        memcpy(buf + len, s, sl);
        len += sl;
        buf[len] = 0;
    }
    return buf;
}

static uint32_t slots_rec(const struct tg_tree *t, uint32_t d, uint32_t *out, uint32_t n)
{
    const struct tg_domain *dd = &t->dom[d];
    for (uint32_t i = 0; i < dd->nchild; i++) {
        if (dd->level == t->nlevels)
            out[n++] = dd->child[i];
        else
            n = slots_rec(t, dd->child[i], out, n);
    }
    return n;
}

uint32_t tg_tree_slots_under(const struct tg_tree *t, uint32_t d, uint32_t *out)
{
    return d < t->ndom ? slots_rec(t, d, out, 0) : 0;
}
