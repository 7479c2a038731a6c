/* Shared by the informer integration tests: handler bookkeeping that catches
 * duplicated or lost events, a concurrent write driver, and the check that a
 * cache equals the server's LIST (same keys, same resourceVersions). */
#ifndef TG_TESTS_INTEGRATION_INFORMER_CHECK_H
#define TG_TESTS_INTEGRATION_INFORMER_CHECK_H

#include <cJSON.h>

#include "cluster.h"
#include "informer/informer.h"
#include "util/err.h"
#include "util/hmap.h"

/* ---- shadow: what the handlers said, replayed ---- */

struct shadow {
    const struct tg_kind *kind;
    struct tg_hmap keys;          /* key -> strdup'ed key (owned) */
    int adds, updates, deletes;
    int dup_adds, bad_updates, bad_deletes;
};

__attribute__((unused)) static void sh_add(void *ud, const void *o)
{
    struct shadow *s = ud;
    const char *k = s->kind->key(o);
    uint64_t v;
    s->adds++;
    if (tg_hmap_get(&s->keys, k, strlen(k), &v)) {
        s->dup_adds++;
        return;
    }
    char *d = strdup(k);
    tg_hmap_put(&s->keys, d, strlen(d), (uint64_t)(uintptr_t)d);
}

__attribute__((unused)) static void sh_update(void *ud, const void *old, const void *o)
{
    struct shadow *s = ud;
    const char *k = s->kind->key(o);
    uint64_t v;
    s->updates++;
    if (!tg_hmap_get(&s->keys, k, strlen(k), &v) || strcmp(s->kind->key(old), k) != 0)
        s->bad_updates++;
}

__attribute__((unused)) static void sh_delete(void *ud, const void *o)
{
    struct shadow *s = ud;
    const char *k = s->kind->key(o);
    uint64_t v;
    s->deletes++;
    if (!tg_hmap_get(&s->keys, k, strlen(k), &v)) {
        s->bad_deletes++;
        return;
    }
    tg_hmap_del(&s->keys, k, strlen(k));
    free((char *)(uintptr_t)v);
}

__attribute__((unused)) static void sh_free(struct shadow *s)
{
    for (uint32_t i = 0; i < s->keys.cap; i++) {
        const struct tg_hslot *sl = &s->keys.slots[i];
        if (sl->key && sl->val && (const char *)(uintptr_t)sl->val == sl->key)
            free((char *)(uintptr_t)sl->val);
    }
    tg_hmap_free(&s->keys);
}

__attribute__((unused)) static struct tg_handlers sh_handlers(struct shadow *s, const struct tg_kind *k)
{
    s->kind = k;
    return (struct tg_handlers){sh_add, sh_update, sh_delete, NULL, s};
}

/* The shadow agrees with the store: every stored key is known and counts match. */
__attribute__((unused)) static int sh_consistent(const struct shadow *s, const struct tg_store *st)
{
    if (s->dup_adds || s->bad_updates || s->bad_deletes || s->keys.len != tg_store_len(st))
        return 0;
    for (uint32_t i = 0; i < tg_store_len(st); i++) {
        const char *k = st->kind->key(tg_store_at(st, i));
        uint64_t v;
        if (!tg_hmap_get(&s->keys, k, strlen(k), &v))
            return 0;
    }
    return 1;
}

/* ---- write driver: up to `window` requests in flight ---- */

struct op {
    const char *method;
    char path[256];
    char *body;
    const char *ctype;
};

struct driver {
    struct tg_client *c;
    struct op *ops;
    int n, next, done, failed, window, inflight;
    int expect_ok;               /* count failures but do not print them */
};

__attribute__((unused)) static void drv_fill(struct driver *d);

__attribute__((unused)) static void drv_done(void *ud, const struct tg_resp *r)
{
    struct driver *d = ud;
    d->done++;
    d->inflight--;
    if (r->err) {
        d->failed++;
        if (d->expect_ok && d->failed < 5)
            fprintf(stderr, "write failed: %s %s\n", tg_strerror(r->err), r->msg);
    }
    drv_fill(d);
}

__attribute__((unused)) static void drv_fill(struct driver *d)
{
    while (d->inflight < d->window && d->next < d->n) {
        struct op *o = &d->ops[d->next++];
        struct tg_req_opts q = {.method = o->method, .path = o->path, .body = o->body,
                                .content_type = o->ctype, .is_write = 1, .on_done = drv_done,
                                .ud = d};
        d->inflight++;
        if (tg_client_request(d->c, &q, NULL) != 0) {
            d->inflight--;
            d->done++;
            d->failed++;
        }
    }
}

__attribute__((unused)) static int drv_finished(void *ud)
{
    struct driver *d = ud;
    return d->done == d->n;
}

__attribute__((unused)) static void drv_add(struct driver *d, const char *method, const char *ctype, const char *body,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
__attribute__((unused)) static void drv_add(struct driver *d, const char *method, const char *ctype, const char *body,
                    const char *fmt, ...)
{
    d->ops = realloc(d->ops, (size_t)(d->n + 1) * sizeof *d->ops);
    struct op *o = &d->ops[d->n++];
    o->method = method;
    o->ctype = ctype;
    o->body = body ? strdup(body) : NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->path, sizeof o->path, fmt, ap);
    va_end(ap);
}

__attribute__((unused)) static void drv_reset(struct driver *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->ops[i].body);
    free(d->ops);
    struct tg_client *c = d->c;
    memset(d, 0, sizeof *d);
    d->c = c;
    d->window = 64;
    d->expect_ok = 1;
}

/* Runs every queued op; returns the number that failed. */
__attribute__((unused)) static int drv_run(struct driver *d, uv_loop_t *loop)
{
    drv_fill(d);
    if (!tgc_run_until(loop, drv_finished, d, 300000))
        return -1;
    return d->failed;
}

/* ---- cache == server LIST ---- */

/* 1 when the store holds exactly the objects (keys and resourceVersions)
 * that GET paths[0..npaths) return together (the LISTs hold no object
 * twice); prints the first difference into why. */
__attribute__((unused)) static int cache_equals_lists(struct tg_client *c, const struct tg_store *st,
                                                      const char *const *paths, int npaths,
                                                      int namespaced, char *why, size_t whylen)
{
    int n = 0, ok = 1;
    why[0] = 0;
    for (int p = 0; ok && p < npaths; p++) {
        struct tg_resp r;
        char *body = NULL;
        const char *path = paths[p];
        struct tg_req_opts o = {.path = path, .timeout_ms = 120000};
        if (tg_client_do(c, &o, &r, &body) != 0) {
            snprintf(why, whylen, "LIST %s: %s", path, r.msg);
            free(body);
            return 0;
        }
        cJSON *j = cJSON_Parse(body);
        free(body);
        const cJSON *it, *items = cJSON_GetObjectItem(j, "items");
        cJSON_ArrayForEach(it, items) {
            const cJSON *md = cJSON_GetObjectItem(it, "metadata");
            const char *name = cJSON_GetObjectItem(md, "name")->valuestring;
            const char *rv = cJSON_GetObjectItem(md, "resourceVersion")->valuestring;
            char key[512];
            if (namespaced)
                snprintf(key, sizeof key, "%s/%s", cJSON_GetObjectItem(md, "namespace")->valuestring, name);
            else
                snprintf(key, sizeof key, "%s", name);
            const void *obj = tg_store_get(st, key);
            if (!obj) {
                snprintf(why, whylen, "%.200s missing from the cache", key);
                ok = 0;
                break;
            }
            const char *crv = st->kind->rv(obj);
            if (!crv || strcmp(crv, rv) != 0) {
                snprintf(why, whylen, "%.200s: cache rv %.40s, server rv %.40s", key, crv ? crv : "-", rv);
                ok = 0;
                break;
            }
            n++;
        }
        cJSON_Delete(j);
    }
    if (ok && (uint32_t)n != tg_store_len(st)) {
        snprintf(why, whylen, "cache holds %u objects, server %d", tg_store_len(st), n);
        ok = 0;
    }
    return ok;
}

/* 1 when the store holds exactly what GET path returns (cache_equals_lists). */
__attribute__((unused)) static int cache_equals_list(struct tg_client *c, const struct tg_store *st, const char *path,
                             int namespaced, char *why, size_t whylen)
{
    return cache_equals_lists(c, st, &path, 1, namespaced, why, whylen);
}

#endif
