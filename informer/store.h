/* A cache of decoded API objects of one kind, indexed by key ("ns/name", or
 * "name" for cluster-scoped kinds) and by uid where the kind has one.
 *
 * Objects are the compact structs of model/objects.h (or informer/kinds.h for
 * ConfigMaps); a struct tg_kind says how to decode, free and name them. The
 * store owns its objects: an object handed to a handler stays valid until the
 * handler returns (deleted/replaced objects are freed right after). Items sit
 * in a dense array, so iteration is a plain loop and delete is O(1). */
#ifndef TG_INFORMER_STORE_H
#define TG_INFORMER_STORE_H

#include <stdint.h>

#include "util/hmap.h"

struct cJSON;

struct tg_kind {
    const char *name;                                /* "Pod" */
    /* Decodes one object; on success *out is owned by the caller. Returns 0,
     * TG_EPARSE (object skipped) or TG_ENOMEM. */
    int (*decode)(const struct cJSON *obj, void **out);
    void (*free)(void *obj);
    const char *(*key)(const void *obj);             /* stable while obj lives */
    const char *(*uid)(const void *obj);             /* NULL fn or "" result: no uid */
    const char *(*rv)(const void *obj);              /* may return NULL */
    /* Paths of the object the decoder never reads (util/jsonlean.h): the
     * reflector leaves them out of the tree it parses. NULL: none, and
     * the object is parsed by cJSON in full. */
    const char *const *unread;
};

struct tg_store {
    const struct tg_kind *kind;
    void **items;
    uint32_t len, cap;
    struct tg_hmap by_key;      /* key -> index in items */
    struct tg_hmap by_uid;      /* uid -> index in items */
};

void tg_store_init(struct tg_store *s, const struct tg_kind *kind);
/* Frees every object and the indexes. */
void tg_store_free(struct tg_store *s);

void *tg_store_get(const struct tg_store *s, const char *key);
void *tg_store_get_uid(const struct tg_store *s, const char *uid);
static inline uint32_t tg_store_len(const struct tg_store *s) { return s->len; }
static inline void *tg_store_at(const struct tg_store *s, uint32_t i) { return s->items[i]; }

/* The cached object an API object (a cJSON tree) names: by metadata.uid,
 * else by "namespace/name" or "name" (the key of every kind but the peers'
 * PodGroups, which have a uid). NULL when none; *named: the object names
 * something at all. Used for events whose object is not decoded. */
void *tg_store_named(const struct tg_store *s, const struct cJSON *obj, int *named);

/* Inserts obj (ownership passes to the store) or replaces the object with
 * the same key; *old gets the replaced object (now owned by the caller) or
 * NULL. Returns 0 or TG_ENOMEM (obj is then still the caller's). */
int tg_store_put(struct tg_store *s, void *obj, void **old);
/* Removes the object with key; returns it (owned by the caller) or NULL. */
void *tg_store_take(struct tg_store *s, const char *key);

#endif
