/* The store of Namespaces, PVs, PVCs, StorageClasses and ResourceClaims;
 * see store.h. Each kind is an id map to the owned object. */
#include "model/objstore.h"
#include "util/err.h"
#include "util/intern.h"

#include <stdlib.h>
#include <string.h>

void tg_objstore_init(struct tg_objstore *s)
{
    memset(s, 0, sizeof *s);
}

/* Every live value of m, freed with fr. */
static void free_all(struct tg_imap *m, void (*fr)(void *))
{
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->state[i] == 1)
            fr((void *)(uintptr_t)m->slots[i].val);
    tg_imap_free(m);
}

static void ns_fr(void *o) { struct tg_namespace *n = o; tg_namespace_free(&n); }
static void pv_fr(void *o) { struct tg_pv *v = o; tg_pv_free(&v); }
static void sc_fr(void *o) { struct tg_storageclass *c = o; tg_sc_free(&c); }
static void pvc_fr(void *o) { struct tg_pvc *c = o; tg_pvc_free(&c); }
static void claim_fr(void *o) { struct tg_rclaim *c = o; tg_rclaim_free(&c); }

void tg_objstore_free(struct tg_objstore *s)
{
    free_all(&s->ns, ns_fr);
    free_all(&s->pv, pv_fr);
    free_all(&s->sc, sc_fr);
    free_all(&s->pvc, pvc_fr);
    free_all(&s->claim, claim_fr);
    memset(s, 0, sizeof *s);
}

static void *get(const struct tg_imap *m, uint64_t k)
{
    uint64_t v;
    return m && tg_imap_get(m, k, &v) ? (void *)(uintptr_t)v : NULL;
}

/* Puts obj under k, freeing the one it replaces; frees obj on failure. */
static int put(struct tg_objstore *s, struct tg_imap *m, uint64_t k, void *obj, void (*fr)(void *))
{
    void *old = get(m, k);
    if (tg_imap_put(m, k, (uint64_t)(uintptr_t)obj)) {
        fr(obj);
        return TG_ENOMEM;
    }
    if (old)
        fr(old);
    s->generation++;
    return 0;
}

static void del(struct tg_objstore *s, struct tg_imap *m, uint64_t k, void (*fr)(void *))
{
    void *old = get(m, k);
    if (!old)
        return;
    tg_imap_del(m, k);
    fr(old);
    s->generation++;
}

static uint64_t nskey(uint32_t ns, uint32_t name)
{
    return (uint64_t)ns << 32 | name;
}

int tg_objstore_namespace_set(struct tg_objstore *s, struct tg_namespace *n)
{
    return put(s, &s->ns, n->name, n, ns_fr);
}

void tg_objstore_namespace_delete(struct tg_objstore *s, uint32_t name)
{
    del(s, &s->ns, name, ns_fr);
}

int tg_objstore_pv_set(struct tg_objstore *s, struct tg_pv *v)
{
    return put(s, &s->pv, v->name, v, pv_fr);
}

void tg_objstore_pv_delete(struct tg_objstore *s, uint32_t name)
{
    del(s, &s->pv, name, pv_fr);
}

int tg_objstore_pvc_set(struct tg_objstore *s, struct tg_pvc *c)
{
    return put(s, &s->pvc, nskey(c->ns, c->name), c, pvc_fr);
}

void tg_objstore_pvc_delete(struct tg_objstore *s, uint32_t ns, uint32_t name)
{
    del(s, &s->pvc, nskey(ns, name), pvc_fr);
}

int tg_objstore_sc_set(struct tg_objstore *s, struct tg_storageclass *c)
{
    const struct tg_storageclass *old = get(&s->sc, c->name);
    int was = old && old->is_default, is = c->is_default;
    int rc = put(s, &s->sc, c->name, c, sc_fr);
    if (!rc)
        s->ndefault = s->ndefault - (uint32_t)was + (uint32_t)is;
    return rc;
}

void tg_objstore_sc_delete(struct tg_objstore *s, uint32_t name)
{
    const struct tg_storageclass *old = get(&s->sc, name);
    if (old && old->is_default)
        s->ndefault--;
    del(s, &s->sc, name, sc_fr);
}

int tg_objstore_claim_set(struct tg_objstore *s, struct tg_rclaim *c)
{
    return put(s, &s->claim, nskey(c->ns, c->name), c, claim_fr);
}

void tg_objstore_claim_delete(struct tg_objstore *s, uint32_t ns, uint32_t name)
{
    del(s, &s->claim, nskey(ns, name), claim_fr);
}

const struct tg_namespace *tg_objstore_namespace(const struct tg_objstore *s, uint32_t name)
{
    return s ? get(&s->ns, name) : NULL;
}

const struct tg_pv *tg_objstore_pv(const struct tg_objstore *s, uint32_t name)
{
    return s ? get(&s->pv, name) : NULL;
}

const struct tg_pvc *tg_objstore_pvc(const struct tg_objstore *s, uint32_t ns, uint32_t name)
{
    return s ? get(&s->pvc, nskey(ns, name)) : NULL;
}

const struct tg_storageclass *tg_objstore_sc(const struct tg_objstore *s, uint32_t name)
{
    return s ? get(&s->sc, name) : NULL;
}

const struct tg_storageclass *tg_objstore_default_sc(const struct tg_objstore *s)
{
    if (!s || !s->ndefault)
        return NULL;
    for (uint32_t i = 0; i < s->sc.cap; i++)
        if (s->sc.state[i] == 1) {
            const struct tg_storageclass *c = (const void *)(uintptr_t)s->sc.slots[i].val;
            if (c->is_default)
                return c;
        }
    return NULL;
}

const struct tg_rclaim *tg_objstore_claim(const struct tg_objstore *s, uint32_t ns, uint32_t name)
{
    return s ? get(&s->claim, nskey(ns, name)) : NULL;
}

int tg_objstore_ns_match(const struct tg_objstore *s, uint32_t ns, const struct tg_labelsel *sel)
{
    const struct tg_namespace *n = tg_objstore_namespace(s, ns);
    if (n)
        return tg_labelsel_match(sel, n->labels, n->nlabels);
    struct tg_label l = {tg_intern("kubernetes.io/metadata.name"), ns};
    return tg_labelsel_match(sel, &l, 1);
}
