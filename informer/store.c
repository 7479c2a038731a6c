/* Object cache with key and uid indexes over a dense array (see store.h). */
#include "informer/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "util/err.h"

void tg_store_init(struct tg_store *s, const struct tg_kind *kind)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
}

void tg_store_free(struct tg_store *s)
{
    for (uint32_t i = 0; i < s->len; i++)
        s->kind->free(s->items[i]);
    free(s->items);
    tg_hmap_free(&s->by_key);
    tg_hmap_free(&s->by_uid);
    const struct tg_kind *k = s->kind;
    memset(s, 0, sizeof *s);
    s->kind = k;
}

static const char *uid_of(const struct tg_store *s, const void *o)
{
    const char *u = s->kind->uid ? s->kind->uid(o) : NULL;
    return u && *u ? u : NULL;
}

void *tg_store_get(const struct tg_store *s, const char *key)
{
    uint64_t i;
    if (!tg_hmap_get(&s->by_key, key, strlen(key), &i))
        return NULL;
    return s->items[i];
}

void *tg_store_get_uid(const struct tg_store *s, const char *uid)
{
    uint64_t i;
    if (!tg_hmap_get(&s->by_uid, uid, strlen(uid), &i))
        return NULL;
    return s->items[i];
}

static int index_at(struct tg_store *s, uint32_t i)
{
    const char *k = s->kind->key(s->items[i]);
    int rc = tg_hmap_put(&s->by_key, k, strlen(k), i);
    const char *u = uid_of(s, s->items[i]);
    if (!rc && u)
        rc = tg_hmap_put(&s->by_uid, u, strlen(u), i);
    return rc;
}

int tg_store_put(struct tg_store *s, void *obj, void **old)
{
    const char *k = s->kind->key(obj);
    uint64_t i;
    *old = NULL;
    if (tg_hmap_get(&s->by_key, k, strlen(k), &i)) {
        void *prev = s->items[i];
        const char *pu = uid_of(s, prev);
        if (pu)
            tg_hmap_del(&s->by_uid, pu, strlen(pu));
        s->items[i] = obj;
        if (index_at(s, (uint32_t)i) != 0) {
            s->items[i] = prev;       /* the key slot still fits prev's key */
            index_at(s, (uint32_t)i);
            return TG_ENOMEM;
        }
        *old = prev;
        return 0;
    }
    if (s->len == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 64;
        void **it = realloc(s->items, cap * sizeof *it);
        if (!it)
            return TG_ENOMEM;
        s->items = it;
        s->cap = cap;
    }
    s->items[s->len] = obj;
    if (index_at(s, s->len) != 0) {
        tg_hmap_del(&s->by_key, k, strlen(k));
        return TG_ENOMEM;
    }
    s->len++;
    return 0;
}

void *tg_store_take(struct tg_store *s, const char *key)
{
    uint64_t i;
    size_t kl = strlen(key);
    if (!tg_hmap_get(&s->by_key, key, kl, &i))
        return NULL;
    void *obj = s->items[i];
    const char *k = s->kind->key(obj);
    tg_hmap_del(&s->by_key, k, strlen(k));
    const char *u = uid_of(s, obj);
    if (u)
        tg_hmap_del(&s->by_uid, u, strlen(u));
    uint32_t last = s->len - 1;
    if (i != last) {
        s->items[i] = s->items[last];
        index_at(s, (uint32_t)i);     /* replaces existing slots: no allocation */
    }
    s->len--;
    return obj;
}

void *tg_store_named(const struct tg_store *s, const cJSON *obj, int *named)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(md, "uid");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    int has_uid = cJSON_IsString(uid) && *uid->valuestring;
    int has_name = cJSON_IsString(name) && *name->valuestring;
    *named = has_uid || has_name;
    void *o = has_uid ? tg_store_get_uid(s, uid->valuestring) : NULL;
    if (o || !has_name)
        return o;
    char key[512];
    if (cJSON_IsString(ns) && *ns->valuestring)
        snprintf(key, sizeof key, "%s/%s", ns->valuestring, name->valuestring);
    else
        snprintf(key, sizeof key, "%s", name->valuestring);
    return tg_store_get(s, key);
}
