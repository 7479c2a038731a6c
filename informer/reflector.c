/* List-then-watch reflector feeding a tg_store (see reflector.h).
 *
 * States: LIST (pages in flight), WATCH (stream open), WAIT (retry timer
 * armed). As client-go, the first list asks for resourceVersion=0 (served
 * from the apiserver's watch cache, no etcd read); a relist after 410 leaves
 * it unset, a consistent read, so the cache never goes back in time. During a list, every item is upserted at once and its key recorded
 * in `seen`; when the last page arrives, cached objects not seen are deleted
 * (the reconcile of a relist). One request is in flight at a time. */
#include "informer/reflector.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "informer/jsonl.h"
#include "informer/liststream.h"
#include "util/err.h"
#include "util/jsonlean.h"
#include "util/log.h"
#include "util/strbuf.h"

#define COMP "reflector"

struct tg_reflector {
    struct tg_client *c;
    struct tg_reflector_opts o;        /* strings owned */
    struct tg_store store;
    uv_timer_t retry;
    struct tg_req *req;
    char *rv;                          /* last resourceVersion, owned */
    char *cont;                        /* list continue token, owned */
    struct tg_hmap seen;               /* keys of this list's items (store's key bytes) */
    struct tg_jsonl jl;
    struct tg_jlean lean_ev, lean_item; /* watch events, listed objects: parsed trees */
    struct tg_liststream ls;           /* the LIST page being received */
    char *page_rv, *page_cont;         /* from the page's metadata, owned */
    uint32_t backoff_ms;
    int synced, listing, gone, closing, watch_got_event;
    int consistent;                    /* next list: resourceVersion unset (from etcd) */
    uint64_t watch_started;            /* uv_now() when the watch was sent */
    void (*hook)(void *);
    void *hook_ud;
    struct tg_reflector_stats st;
};

static void list_page(struct tg_reflector *r);
static void watch_start(struct tg_reflector *r);

static void set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? strdup(s) : NULL;
}

/* ---- retry timer ------------------------------------------------------- */

static void on_retry(uv_timer_t *t)
{
    struct tg_reflector *r = t->data;
    if (r->listing)
        list_page(r);
    else
        watch_start(r);
}

/* Arms the retry timer: delay 0 for an immediate restart, else the next
 * jittered backoff step. */
static void retry(struct tg_reflector *r, int backoff)
{
    uint64_t delay = 0;
    if (backoff) {
        uint32_t d = r->backoff_ms;
        delay = d / 2 + (uint64_t)(rand() % (int)(d / 2 + 1));
        r->backoff_ms = d * 2 > r->o.backoff_max_ms ? r->o.backoff_max_ms : d * 2;
    }
    uv_timer_start(&r->retry, on_retry, delay, 0);
}

static void backoff_reset(struct tg_reflector *r)
{
    r->backoff_ms = r->o.backoff_min_ms;
}

/* ---- applying objects ---------------------------------------------------- */

static int rv_equal(const struct tg_reflector *r, const void *a, const void *b)
{
    const char *x = r->o.kind->rv(a), *y = r->o.kind->rv(b);
    return x && y && strcmp(x, y) == 0;
}

/* Upserts obj (owned by the call) and delivers add/update. An object whose
 * resourceVersion is unchanged (a relist) is dropped and the stored one kept:
 * handlers may hold on to the objects they were given (see reflector.h). */
static int upsert(struct tg_reflector *r, void *obj, void **stored)
{
    void *old = tg_store_get(&r->store, r->o.kind->key(obj));
    if (old && rv_equal(r, old, obj)) {
        r->o.kind->free(obj);
        if (stored)
            *stored = old;
        return 0;
    }
    int rc = tg_store_put(&r->store, obj, &old);
    if (rc) {
        r->o.kind->free(obj);
        return rc;
    }
    if (stored)
        *stored = obj;
    if (!old) {
        r->st.adds++;
        if (r->o.h.on_add)
            r->o.h.on_add(r->o.h.ud, obj);
    } else {
        r->st.updates++;
        if (r->o.h.on_update)
            r->o.h.on_update(r->o.h.ud, old, obj);
    }
    r->o.kind->free(old);
    return 0;
}

static void remove_key(struct tg_reflector *r, const char *key)
{
    void *old = tg_store_take(&r->store, key);
    if (!old)
        return;
    r->st.deletes++;
    if (r->o.h.on_delete)
        r->o.h.on_delete(r->o.h.ud, old);
    r->o.kind->free(old);
}

static void decode_failed(struct tg_reflector *r)
{
    r->st.decode_errors++;
    if (r->o.h.on_decode_failed)
        r->o.h.on_decode_failed(r->o.h.ud, r->o.kind->name);
}

/* A watch event whose object the decoder refused (it logged why): the
 * cached version goes (it no longer says what the cluster holds: a pod's
 * resources would stay counted, a deleted pod would linger); a DELETED
 * object that names nothing relists. Returns 0 or TG_EAGAIN (relist). */
static int undecodable(struct tg_reflector *r, const char *type, const cJSON *obj)
{
    decode_failed(r);
    int named;
    void *old = tg_store_named(&r->store, obj, &named);
    if (!named && type[0] == 'D') {
        tg_warn(COMP, "%s watch %s: a DELETED object without uid or name: relisting",
                r->o.kind->name, r->o.path);
        r->gone = 1;
        return TG_EAGAIN;
    }
    if (!old)
        return 0;
    char *key = strdup(r->o.kind->key(old));
    if (!key)
        return TG_ENOMEM;
    tg_warn(COMP, "%s %s: %s event does not decode: dropped from the cache%s", r->o.kind->name,
            key, type, type[0] == 'D' ? "" : " until a version that decodes comes");
    r->st.decode_drops++;
    remove_key(r, key);
    free(key);
    return 0;
}

/* ---- LIST ------------------------------------------------------------------ */

static void append_selectors(struct tg_reflector *r, struct tg_sb *b)
{
    if (r->o.field_selector) {
        char *e = tg_url_escape(r->o.field_selector);
        tg_sb_printf(b, "&fieldSelector=%s", e ? e : "");
        free(e);
    }
    if (r->o.label_selector) {
        char *e = tg_url_escape(r->o.label_selector);
        tg_sb_printf(b, "&labelSelector=%s", e ? e : "");
        free(e);
    }
}

static void list_finish(struct tg_reflector *r, const char *rv)
{
    /* Reconcile: what the cache holds but this list did not have is gone. */
    for (uint32_t i = 0; i < r->store.len;) {
        const char *k = r->o.kind->key(r->store.items[i]);
        uint64_t v;
        if (tg_hmap_get(&r->seen, k, strlen(k), &v)) {
            i++;
            continue;
        }
        char *kc = strdup(k);
        if (!kc) {
            i++;
            continue;
        }
        remove_key(r, kc);            /* swaps the last item into i */
        free(kc);
    }
    tg_hmap_free(&r->seen);
    set_str(&r->rv, rv);
    r->listing = 0;
    r->consistent = 0;
    if (r->st.lists++)
        r->st.relists++;
    tg_debug(COMP, "%s %s: listed %u objects at rv %s", r->o.kind->name, r->o.path,
             r->store.len, rv);
    watch_start(r);
    if (!r->synced) {
        r->synced = 1;
        if (r->o.h.on_synced)
            r->o.h.on_synced(r->o.h.ud);
        if (r->hook)
            r->hook(r->hook_ud);
    }
}

/* Parses text with j: 0 and the tree in *root (valid until tg_jlean_clear),
 * TG_EPARSE, TG_ENOMEM. */
static int parse(struct tg_reflector *r, struct tg_jlean *j, const char *text, size_t len,
                 const cJSON **root)
{
    uint64_t fb = j->fallbacks;
    int rc = tg_jlean_parse(j, text, len, root);
    r->st.lean_fallbacks += j->fallbacks - fb;
    return rc;
}

static int list_item(struct tg_reflector *r, const cJSON *it);

/* One item of a LIST page, decoded and applied while the page downloads. */
static int on_list_item(void *ud, const char *json, size_t len)
{
    struct tg_reflector *r = ud;
    const cJSON *it;
    int rc = parse(r, &r->lean_item, json, len, &it);
    if (rc == TG_EPARSE)
        r->st.parse_errors++;
    if (!rc)
        rc = list_item(r, it);
    tg_jlean_clear(&r->lean_item); /* the tree goes now: its object is decoded */
    return rc;
}

/* opts.keep's verdict on an object (1: kept); a refusal is counted. */
static int kept(struct tg_reflector *r, const cJSON *obj)
{
    if (!r->o.keep || r->o.keep(r->o.keep_ud, obj))
        return 1;
    r->st.skipped++;
    return 0;
}

static int list_item(struct tg_reflector *r, const cJSON *it)
{
    void *obj;
    if (!kept(r, it))
        return 0;                     /* not in `seen`: the reconcile deletes a cached copy */
    int rc = r->o.kind->decode(it, &obj);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        decode_failed(r);
        return 0;
    }
    void *sobj = NULL;
    if ((rc = upsert(r, obj, &sobj)) != 0)
        return rc;
    /* The stored object's key bytes stay put until the next list ends. */
    const char *sk = sobj ? r->o.kind->key(sobj) : NULL;
    if (sk && tg_hmap_put(&r->seen, sk, strlen(sk), 1) != 0)
        return TG_ENOMEM;
    return 0;
}

static int on_list_meta(void *ud, const char *json, size_t len)
{
    struct tg_reflector *r = ud;
    cJSON *md = cJSON_ParseWithLength(json, len);
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    const cJSON *cont = cJSON_GetObjectItemCaseSensitive(md, "continue");
    set_str(&r->page_rv, cJSON_IsString(rv) ? rv->valuestring : NULL);
    set_str(&r->page_cont, cJSON_IsString(cont) && cont->valuestring[0] ? cont->valuestring : NULL);
    cJSON_Delete(md);
    return 0;
}

static int on_list_chunk(void *ud, const char *data, size_t len)
{
    struct tg_reflector *r = ud;
    return tg_liststream_feed(&r->ls, data, len);
}

static void list_failed(struct tg_reflector *r, int backoff)
{
    set_str(&r->cont, NULL);
    tg_hmap_free(&r->seen);
    retry(r, backoff);
}

static void on_list_done(void *ud, const struct tg_resp *resp)
{
    struct tg_reflector *r = ud;
    r->req = NULL;
    if (resp->err == 0 && (tg_liststream_finish(&r->ls) != 0 || !r->page_rv)) {
        r->st.parse_errors++;
        r->st.errors++;
        tg_warn(COMP, "%s list %s: malformed or truncated response", r->o.kind->name, r->o.path);
        list_failed(r, 1);
        return;
    }
    if (resp->err) {
        r->st.errors++;
        if (resp->err == TG_EGONE && r->cont) {
            /* The continue token expired: start the list over, consistently. */
            r->st.gone++;
            r->consistent = 1;
            list_failed(r, 0);
            return;
        }
        tg_warn(COMP, "%s list %s failed: %s", r->o.kind->name, r->o.path, resp->msg);
        list_failed(r, 1);
        return;
    }
    r->st.pages++;
    set_str(&r->cont, r->page_cont);
    backoff_reset(r);
    if (r->cont) {
        list_page(r);
    } else {
        char *rv = r->page_rv;
        r->page_rv = NULL;
        list_finish(r, rv ? rv : "");
        free(rv);
    }
}

static void list_page(struct tg_reflector *r)
{
    struct tg_sb p = {0};
    r->listing = 1;
    tg_sb_printf(&p, "%s?limit=%d", r->o.path, r->o.page_size);
    if (!r->cont && !r->consistent)
        tg_sb_puts(&p, "&resourceVersion=0");
    if (r->cont) {
        char *e = tg_url_escape(r->cont);
        tg_sb_printf(&p, "&continue=%s", e ? e : "");
        free(e);
    }
    append_selectors(r, &p);
    tg_liststream_reset(&r->ls, on_list_item, on_list_meta, r);
    set_str(&r->page_rv, NULL);
    set_str(&r->page_cont, NULL);
    struct tg_req_opts q = {.path = tg_sb_str(&p), .timeout_ms = 600000,
                            .on_chunk = on_list_chunk, .on_done = on_list_done, .ud = r};
    if (p.oom || tg_client_request(r->c, &q, &r->req) != 0) {
        r->st.errors++;
        retry(r, 1);
    }
    tg_sb_free(&p);
}

/* ---- WATCH ----------------------------------------------------------------- */

static int watch_event(struct tg_reflector *r, const cJSON *ev, size_t len);

static int on_line(void *ud, const char *line, size_t len)
{
    struct tg_reflector *r = ud;
    const cJSON *ev;
    int rc = parse(r, &r->lean_ev, line, len, &ev);
    if (rc != TG_ENOMEM)
        rc = watch_event(r, ev, len); /* ev NULL (not JSON): a malformed event */
    tg_jlean_clear(&r->lean_ev);
    return rc;
}

/* One watch event (ev: its tree, NULL when it did not parse). */
static int watch_event(struct tg_reflector *r, const cJSON *ev, size_t len)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    if (!cJSON_IsString(type) || !cJSON_IsObject(obj)) {
        r->st.parse_errors++;
        tg_warn(COMP, "%s watch %s: malformed event (%zu bytes): restarting the watch",
                r->o.kind->name, r->o.path, len);
        return TG_EPARSE;
    }
    const char *t = type->valuestring;
    void *cached;
    int named;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    int rc = 0;
    r->st.events++;
    if (!r->watch_got_event) {
        r->watch_got_event = 1;
        backoff_reset(r);
    }
    if (strcmp(t, "ERROR") == 0) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(obj, "message");
        if (cJSON_IsNumber(code) && code->valueint == 410) {
            r->gone = 1;
        } else {
            tg_warn(COMP, "%s watch %s: error event: %s", r->o.kind->name, r->o.path,
                    cJSON_IsString(msg) ? msg->valuestring : "?");
        }
        return TG_EAGAIN;
    }
    if (strcmp(t, "BOOKMARK") == 0) {
        r->st.bookmarks++;
    } else if (!strcmp(t, "DELETED") && (cached = tg_store_named(&r->store, obj, &named))) {
        /* the cached object goes by the name the event gives: its object is
         * not decoded (the handlers get the cached one: a pod deleted, or
         * finished and so out of the pod watch's field selector) */
        r->st.deletes_undecoded++;
        remove_key(r, r->o.kind->key(cached));
    } else if ((!strcmp(t, "ADDED") || !strcmp(t, "MODIFIED") || !strcmp(t, "DELETED")) &&
               !kept(r, obj)) {
        /* outside what is kept: as if it left the collection (a DELETED one
         * reaches here only when not cached) */
        if (t[0] != 'D' && (cached = tg_store_named(&r->store, obj, &named)))
            remove_key(r, r->o.kind->key(cached));
    } else if (!strcmp(t, "ADDED") || !strcmp(t, "MODIFIED") || !strcmp(t, "DELETED")) {
        void *o;
        int drc = r->o.kind->decode(obj, &o);
        if (drc == TG_ENOMEM) {
            rc = TG_ENOMEM;
        } else if (drc) {
            rc = undecodable(r, t, obj);
        } else if (t[0] == 'D') {
            remove_key(r, r->o.kind->key(o));
            r->o.kind->free(o);
        } else {
            rc = upsert(r, o, NULL);
        }
    } else {
        r->st.parse_errors++;
        rc = TG_EPARSE;
    }
    if (!rc && cJSON_IsString(rv))
        set_str(&r->rv, rv->valuestring);
    return rc;
}

static int on_watch_chunk(void *ud, const char *data, size_t len)
{
    struct tg_reflector *r = ud;
    return tg_jsonl_feed(&r->jl, data, len, on_line, r);
}

static void relist(struct tg_reflector *r)
{
    r->st.gone++;
    r->listing = 1;
    r->consistent = 1;
    set_str(&r->cont, NULL);
    tg_hmap_free(&r->seen);
    tg_info(COMP, "%s watch %s: resourceVersion %s is gone (410): relisting", r->o.kind->name,
            r->o.path, r->rv ? r->rv : "");
    retry(r, 0);
}

static void on_watch_done(void *ud, const struct tg_resp *resp)
{
    struct tg_reflector *r = ud;
    r->req = NULL;
    int partial = r->jl.len > 0;
    tg_jsonl_reset(&r->jl);
    if (r->gone || resp->err == TG_EGONE) {
        r->gone = 0;
        relist(r);
        return;
    }
    if (resp->err == 0 && !partial) {
        /* Server timeout: watch on at once; but a server that ends every
         * watch at once, empty, gets the backoff rather than a busy loop. */
        uv_update_time(tg_client_loop(r->c));
        int empty_fast = !r->watch_got_event &&
                         uv_now(tg_client_loop(r->c)) - r->watch_started < 1000;
        retry(r, empty_fast);
        return;
    }
    r->st.errors++;
    if (partial && resp->err == 0) {
        r->st.parse_errors++;
        tg_warn(COMP, "%s watch %s: stream ended inside an event: restarting", r->o.kind->name,
                r->o.path);
    } else if (resp->err != TG_EPARSE && resp->err != TG_EAGAIN) {
        tg_warn(COMP, "%s watch %s broke: %s", r->o.kind->name, r->o.path, resp->msg);
    } else {
        tg_debug(COMP, "%s watch %s: %s: again in %u ms", r->o.kind->name, r->o.path, resp->msg,
                 r->backoff_ms);
    }
    retry(r, 1);
}

static void watch_start(struct tg_reflector *r)
{
    struct tg_sb p = {0};
    int to = r->o.watch_timeout_s ? r->o.watch_timeout_s : 300 + rand() % 300;
    char *rv = tg_url_escape(r->rv ? r->rv : "");
    tg_sb_printf(&p, "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d",
                 r->o.path, rv ? rv : "", to);
    free(rv);
    append_selectors(r, &p);
    r->watch_got_event = 0;
    r->gone = 0;
    r->watch_started = uv_now(tg_client_loop(r->c));
    tg_jsonl_reset(&r->jl);
    struct tg_req_opts q = {.path = tg_sb_str(&p), .timeout_ms = -1,
                            .on_chunk = on_watch_chunk, .on_done = on_watch_done, .ud = r};
    r->st.watches++;
    if (p.oom || tg_client_request(r->c, &q, &r->req) != 0) {
        r->st.errors++;
        retry(r, 1);
    }
    tg_sb_free(&p);
}

/* ---- lifecycle ---------------------------------------------------------- */

static char *dup_opt(const char *s, int *bad)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *bad = 1;
    return d;
}

/* The reflector's state for o, without its client and retry timer. */
static int reflector_alloc(const struct tg_reflector_opts *o, struct tg_reflector **out)
{
    *out = NULL;
    if (!o->kind || !o->path)
        return TG_EINVAL;
    struct tg_reflector *r = calloc(1, sizeof *r);
    if (!r)
        return TG_ENOMEM;
    int bad = 0;
    r->o = *o;
    r->o.path = dup_opt(o->path, &bad);
    r->o.field_selector = dup_opt(o->field_selector, &bad);
    r->o.label_selector = dup_opt(o->label_selector, &bad);
    if (bad) {
        free((char *)r->o.path);
        free((char *)r->o.field_selector);
        free((char *)r->o.label_selector);
        free(r);
        return TG_ENOMEM;
    }
    if (r->o.page_size <= 0)
        r->o.page_size = 500;
    if (!r->o.backoff_min_ms)
        r->o.backoff_min_ms = 200;
    if (!r->o.backoff_max_ms)
        r->o.backoff_max_ms = 30000;
    r->backoff_ms = r->o.backoff_min_ms;
    tg_store_init(&r->store, o->kind);
    const char *const *unread = o->full_json ? NULL : o->kind->unread;
    int rc = tg_jlean_init(&r->lean_ev, "object", unread);
    if (!rc && (rc = tg_jlean_init(&r->lean_item, "", unread)))
        tg_jlean_free(&r->lean_ev);
    if (rc) {
        tg_store_free(&r->store);
        free((char *)r->o.path);
        free((char *)r->o.field_selector);
        free((char *)r->o.label_selector);
        free(r);
        *out = NULL;
        return rc;
    }
    r->lean_ev.cjson_only = r->lean_item.cjson_only = !unread;
    r->retry.data = r;
    *out = r;
    return 0;
}

int tg_reflector_new(struct tg_client *c, const struct tg_reflector_opts *o,
                     struct tg_reflector **out)
{
    int rc = reflector_alloc(o, out);
    if (rc)
        return rc;
    (*out)->c = c;
    uv_timer_init(tg_client_loop(c), &(*out)->retry);
    return 0;
}

int tg_reflector_start(struct tg_reflector *r)
{
    r->listing = 1;
    list_page(r);
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    struct tg_reflector *r = h->data;
    tg_store_free(&r->store);
    tg_hmap_free(&r->seen);
    tg_jsonl_free(&r->jl);
    tg_jlean_free(&r->lean_ev);
    tg_jlean_free(&r->lean_item);
    tg_liststream_free(&r->ls);
    free(r->page_rv);
    free(r->page_cont);
    free(r->rv);
    free(r->cont);
    free((char *)r->o.path);
    free((char *)r->o.field_selector);
    free((char *)r->o.label_selector);
    free(r);
}

int tg__reflector_new_offline(const struct tg_reflector_opts *o, struct tg_reflector **out)
{
    return reflector_alloc(o, out);
}

int tg__reflector_feed_watch(struct tg_reflector *r, const char *data, size_t len)
{
    return on_watch_chunk(r, data, len);
}

void tg__reflector_free_offline(struct tg_reflector **pr)
{
    if (*pr)
        on_closed((uv_handle_t *)&(*pr)->retry);
    *pr = NULL;
}

void tg_reflector_free(struct tg_reflector **pr)
{
    struct tg_reflector *r = *pr;
    if (!r)
        return;
    *pr = NULL;
    r->closing = 1;
    tg_client_cancel(r->req);
    r->req = NULL;
    uv_timer_stop(&r->retry);
    uv_close((uv_handle_t *)&r->retry, on_closed);
}

void tg_reflector_break(struct tg_reflector *r)
{
    if (r->req && !r->listing) {
        tg_client_cancel(r->req);
        r->req = NULL;
        r->st.errors++;
        retry(r, 1);
    }
}

int tg_reflector_synced(const struct tg_reflector *r)
{
    return r->synced;
}

const struct tg_store *tg_reflector_store(const struct tg_reflector *r)
{
    return &r->store;
}

const char *tg_reflector_rv(const struct tg_reflector *r)
{
    return r->rv ? r->rv : "";
}

const struct tg_reflector_stats *tg_reflector_stats(const struct tg_reflector *r)
{
    return &r->st;
}

void tg__reflector_set_synced_hook(struct tg_reflector *r, void (*fn)(void *), void *ud)
{
    r->hook = fn;
    r->hook_ud = ud;
}
