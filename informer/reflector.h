/* A reflector keeps a tg_store equal to one API collection: LIST (paginated
 * with limit/continue), then WATCH from the list's resourceVersion with
 * allowWatchBookmarks=true, as client-go's Reflector does.
 *
 * - The watch ends normally (server timeoutSeconds): watch again from the
 *   last resourceVersion seen (events or bookmarks).
 * - 410 Gone (HTTP status or an ERROR event): relist; the new list is
 *   reconciled against the cache, so objects deleted while away are delivered
 *   as deletions, changed ones as updates, and unchanged ones not at all.
 * - A broken stream, a refused connection, a malformed or truncated line:
 *   counted, then the watch restarts from the last resourceVersion after a
 *   jittered exponential backoff (backoff_min_ms doubling to backoff_max_ms,
 *   each wait drawn uniformly from [d/2, d]).
 * Handlers run on the loop; the objects they get are owned by the store and
 * stay valid until the handler call that replaces them (on_update, as `old`)
 * or deletes them (on_delete) returns, so a handler may keep pointers to them
 * (the scheduling engine keeps pending pods, PodGroups and budgets so). An
 * object relisted with the same resourceVersion is not replaced.
 *
 * An object that does not decode (the decoder logs the object and field) is
 * never kept in its old form: a listed one is left out of the list (so the
 * reconcile deletes a cached copy), an ADDED or MODIFIED one deletes the
 * cached copy (on_delete; it comes back when a later version decodes), a
 * DELETED one deletes the copy found by metadata.uid or name; a DELETED
 * event whose object names nothing relists. Each is counted
 * (stats.decode_errors, h.on_decode_failed).
 *
 * Watch events and listed objects of a kind that names unread paths (Pods)
 * are parsed by util/jsonlean.h: a tree without those paths, in an arena
 * the reflector keeps (no malloc per node); text that is not strict JSON
 * goes to cJSON in full (stats.lean_fallbacks). Other kinds: cJSON. */
#ifndef TG_INFORMER_REFLECTOR_H
#define TG_INFORMER_REFLECTOR_H

#include <stdint.h>

#include "informer/client.h"
#include "informer/store.h"

struct tg_handlers {
    void (*on_add)(void *ud, const void *obj);
    void (*on_update)(void *ud, const void *old, const void *obj);
    void (*on_delete)(void *ud, const void *obj);
    void (*on_synced)(void *ud);         /* once, after the first complete list */
    void *ud;
    /* An object (listed, or in a watch event) the kind's decoder refused;
     * kind is struct tg_kind's name. May be NULL. */
    void (*on_decode_failed)(void *ud, const char *kind);
};

struct tg_reflector_opts {
    const struct tg_kind *kind;
    const char *path;                    /* collection, e.g. "/api/v1/pods" */
    const char *field_selector;          /* NULL: none */
    const char *label_selector;          /* NULL: none */
    int page_size;                       /* LIST limit; 0: 500 */
    int watch_timeout_s;                 /* 0: random in [300, 600) per watch */
    uint32_t backoff_min_ms;             /* 0: 200 */
    uint32_t backoff_max_ms;             /* 0: 30000 */
    int full_json;                       /* 1: parse with cJSON in full even where the kind
                                            names unread paths (tests, benchmarks) */
    /* Which objects of the collection are kept, where a field selector
     * cannot say it (one pod watch for pending and bound pods keeps only
     * this scheduler's pending ones); NULL keeps all. It reads the parsed
     * object before any decode. An object not kept is treated as one outside
     * the collection and is never decoded: a listed one is left out (the
     * reconcile deletes a cached copy); an ADDED or MODIFIED one deletes the
     * cached copy (on_delete) and is otherwise ignored; a DELETED one
     * deletes the cached copy as always. Counted (stats.skipped). */
    int (*keep)(void *ud, const struct cJSON *obj);
    void *keep_ud;
    struct tg_handlers h;
};

struct tg_reflector_stats {
    uint64_t lists;          /* complete lists (first one included) */
    uint64_t relists;        /* lists after the first (410, or list errors) */
    uint64_t pages, watches, events, bookmarks;
    uint64_t gone;           /* 410s seen */
    uint64_t errors;         /* failed requests and broken streams */
    uint64_t parse_errors;   /* malformed/truncated watch lines or list bodies */
    uint64_t decode_errors;  /* objects the decoder rejected (skipped) */
    uint64_t decode_drops;   /* cached objects deleted because their new version did not decode */
    uint64_t adds, updates, deletes;
    uint64_t deletes_undecoded; /* DELETED events of cached objects: removed by name, not decoded */
    uint64_t lean_fallbacks;    /* events and items of a lean kind parsed by cJSON (not strict JSON) */
    uint64_t skipped;           /* listed objects and events opts.keep refused (not decoded) */
};

struct tg_reflector;

/* Creates a stopped reflector (opts strings are copied); *out is released
 * with tg_reflector_free. Errors: TG_ENOMEM, TG_EINVAL. */
int tg_reflector_new(struct tg_client *c, const struct tg_reflector_opts *o,
                     struct tg_reflector **out);
/* Starts listing. Returns 0 or TG_ENOMEM. */
int tg_reflector_start(struct tg_reflector *r);
/* Stops requests and timers; frees the store (no handler is called) and the
 * reflector once the loop has closed its timer. *r is NULL'ed. */
void tg_reflector_free(struct tg_reflector **r);

int tg_reflector_synced(const struct tg_reflector *r);
const struct tg_store *tg_reflector_store(const struct tg_reflector *r);
const char *tg_reflector_rv(const struct tg_reflector *r);   /* last seen, or "" */
const struct tg_reflector_stats *tg_reflector_stats(const struct tg_reflector *r);
/* Drops the running watch as if the connection broke (tests, debugging). */
void tg_reflector_break(struct tg_reflector *r);

/* Internal (informer.c): a second on_synced callback, run after h.on_synced. */
void tg__reflector_set_synced_hook(struct tg_reflector *r, void (*fn)(void *), void *ud);

/* For fuzz targets: a reflector with no client and no loop, fed a watch
 * stream's bytes by tg__reflector_feed_watch through the same event handling
 * as a live watch (its store, stats and handlers as then). The feed returns
 * what a live watch would act on: 0, TG_EPARSE (a malformed or unknown
 * event), TG_EAGAIN (an ERROR event, or a DELETED naming nothing: the watch
 * ends), TG_ENOMEM. Free with tg__reflector_free_offline only. */
int tg__reflector_new_offline(const struct tg_reflector_opts *o, struct tg_reflector **out);
int tg__reflector_feed_watch(struct tg_reflector *r, const char *data, size_t len);
void tg__reflector_free_offline(struct tg_reflector **r);

#endif
