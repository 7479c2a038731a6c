/* What fuzz_watch and fuzz_liststream share: the first input byte picks one
 * of the collections the daemon watches (enum tg_inf_kind, modulo TG_INF_N),
 * whose kind (tg_informer_kind, as the informer gives its reflector) decodes
 * every object of the rest of the input into one store, as that reflector
 * does. So every kind the informer decodes is reached: Nodes, Pods (one
 * collection: the spec decoded while unbound), the PodGroups of the five APIs, the policy
 * ConfigMap, PriorityClasses, PodDisruptionBudgets, the six workload kinds,
 * Namespaces, PersistentVolumes, PersistentVolumeClaims, StorageClasses and
 * ResourceClaims. The seeds (fuzz/make-corpus) start with that byte. */
#ifndef TG_FUZZ_COLLECTION_H
#define TG_FUZZ_COLLECTION_H

#include <cjson/cJSON.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "informer/informer.h"
#include "informer/store.h"
#include "util/err.h"

/* The collection the first byte names; *data and *size then skip it. An
 * empty input is collection 0 with nothing after it. */
static inline enum tg_inf_kind fz_collection(const uint8_t **data, size_t *size)
{
    if (*size == 0)
        return (enum tg_inf_kind)0;
    enum tg_inf_kind k = (enum tg_inf_kind)(**data % TG_INF_N);
    (*data)++;
    (*size)--;
    return k;
}

static inline const char *fz_or(const char *s)
{
    return s ? s : "";
}

/* kind->decode on obj with the contracts the store and the handlers rely
 * on: 0, TG_EPARSE or TG_ENOMEM; a decoded object has a key (and keeps it,
 * uid and resourceVersion when decoded again: the store's indexes and the
 * reflector's resourceVersion depend on it). Returns what decode did. */
static inline int fz_decode(const struct tg_kind *kind, const cJSON *obj, void **out)
{
    *out = NULL;
    int rc = kind->decode(obj, out);
    fz_check(rc == 0 || rc == TG_EPARSE || rc == TG_ENOMEM, "%s decode returned %d (%s)",
             kind->name, rc, tg_err_name(rc));
    if (rc)
        return rc;
    const char *k = kind->key(*out);
    fz_check(k && *k, "%s decoded without a key", kind->name);
    void *again = NULL;
    int rc2 = kind->decode(obj, &again);
    fz_check(rc2 == 0 || rc2 == TG_ENOMEM, "%s %s: decoded once, refused the second time (%d)",
             kind->name, k, rc2);
    if (rc2 == 0) {
        fz_check(!strcmp(kind->key(again), k), "%s %s: decoded again as %s", kind->name, k,
                 kind->key(again));
        fz_check(!kind->uid || !strcmp(fz_or(kind->uid(again)), fz_or(kind->uid(*out))),
                 "%s %s: uid differs between two decodes", kind->name, k);
        fz_check(!strcmp(fz_or(kind->rv(again)), fz_or(kind->rv(*out))),
                 "%s %s: resourceVersion differs between two decodes", kind->name, k);
        kind->free(again);
    }
    return 0;
}

/* Inserts or replaces o (the store then owns it); the stored object is
 * found by its key. Returns 0 or TG_ENOMEM (o freed). */
static inline int fz_put(struct tg_store *st, void *o)
{
    void *old = NULL;
    int rc = tg_store_put(st, o, &old);
    if (rc) {
        fz_check(rc == TG_ENOMEM, "tg_store_put returned %d", rc);
        st->kind->free(o);
        return rc;
    }
    st->kind->free(old);
    fz_check(tg_store_get(st, st->kind->key(o)) == o, "stored %s %s not found by its key",
             st->kind->name, st->kind->key(o));
    return 0;
}

/* Every stored object is found by its key, and its uid finds an object of
 * that uid. */
static inline void fz_check_store(const struct tg_store *st)
{
    for (uint32_t i = 0; i < tg_store_len(st); i++) {
        void *o = tg_store_at(st, i);
        const char *k = st->kind->key(o);
        fz_check(tg_store_get(st, k) == o, "%s %s: not found by its key", st->kind->name, k);
        const char *u = st->kind->uid ? st->kind->uid(o) : NULL;
        void *by = u && *u ? tg_store_get_uid(st, u) : NULL;
        fz_check(!by || !strcmp(st->kind->uid(by), u), "%s uid %s finds another uid",
                 st->kind->name, u);
    }
}

#endif
