/* The watch-event stream of one collection: the newline-delimited JSON
 * splitter (informer/jsonl.h) and, per line, what that collection's
 * reflector does with an event (informer/reflector.c on_line): parse
 * {"type","object"}, decode the object with the collection's kind and apply
 * ADDED/MODIFIED/DELETED to its store; BOOKMARK passes, ERROR ends the
 * stream (TG_EAGAIN), a malformed event or an unknown type too (TG_EPARSE).
 * The first input byte picks the collection (fuzz/collection.h: every kind
 * the daemon watches), the rest is the stream.
 *
 * The stream is fed twice, whole and in pieces of 1 to 64 bytes: the lines
 * delivered, the verdicts and the stores left behind must be the same, every
 * stored object must be found by its key, and a decoded object keeps its
 * key, uid and resourceVersion when decoded again. */
#include "fuzz/collection.h"

#include "informer/jsonl.h"
#include "util/log.h"

struct run {
    struct tg_jsonl jl;
    struct tg_store st;
    uint64_t hash;
    size_t lines, events;
};

static int on_line(void *ud, const char *line, size_t len)
{
    struct run *r = ud;
    fz_check(len > 0 && line[len - 1] != '\n' && !memchr(line, '\n', len), "bad line cut");
    r->lines++;
    r->hash = fz_hash(r->hash, line, len);
    cJSON *ev = cJSON_ParseWithLength(line, len);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    int rc = 0;
    if (!cJSON_IsString(type) || !cJSON_IsObject(obj)) {
        rc = TG_EPARSE;
    } else if (!strcmp(type->valuestring, "ERROR")) {
        rc = TG_EAGAIN;
    } else if (!strcmp(type->valuestring, "ADDED") || !strcmp(type->valuestring, "MODIFIED") ||
               !strcmp(type->valuestring, "DELETED")) {
        const struct tg_kind *kind = r->st.kind;
        void *o;
        int named, drc = 1;
        /* as the reflector: a DELETED of a cached object goes undecoded */
        void *cached = type->valuestring[0] == 'D' ? tg_store_named(&r->st, obj, &named) : NULL;
        if (cached) {
            char key[1024];
            snprintf(key, sizeof key, "%s", kind->key(cached));
            kind->free(tg_store_take(&r->st, kind->key(cached)));
            fz_check(!tg_store_get(&r->st, key), "%s %s: found after its delete", kind->name, key);
        } else if ((drc = fz_decode(kind, obj, &o)) == TG_ENOMEM) {
            rc = drc;
        } else if (drc == 0 && type->valuestring[0] == 'D') {
            kind->free(tg_store_take(&r->st, kind->key(o)));
            fz_check(!tg_store_get(&r->st, kind->key(o)), "%s %s: found after its delete",
                     kind->name, kind->key(o));
            kind->free(o);
        } else if (drc == 0) {
            rc = fz_put(&r->st, o);
        }
        r->events++;
        r->hash = fz_hash(r->hash, &drc, sizeof drc);
    } else if (strcmp(type->valuestring, "BOOKMARK") != 0) {
        rc = TG_EPARSE;
    }
    cJSON_Delete(ev);
    return rc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_log_set_level(TG_LOG_ERROR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct tg_kind *kind = tg_informer_kind(fz_collection(&data, &size));
    const char *d = (const char *)data;
    struct run whole = {0}, cut = {0};
    tg_store_init(&whole.st, kind);
    tg_store_init(&cut.st, kind);
    int rw = tg_jsonl_feed(&whole.jl, d, size, on_line, &whole);
    int rc = 0;
    uint64_t seed = fz_hash(14695981039346656037ULL, data, size);
    for (size_t off = 0, n; off < size && rc == 0; off += n) {
        n = fz_chunk(&seed, size - off);
        rc = tg_jsonl_feed(&cut.jl, d + off, n, on_line, &cut);
    }
    fz_check(rw == rc, "whole feed returned %d, in pieces %d", rw, rc);
    fz_check(whole.lines == cut.lines && whole.hash == cut.hash && whole.events == cut.events,
             "lines differ: %zu vs %zu", whole.lines, cut.lines);
    fz_check(tg_store_len(&whole.st) == tg_store_len(&cut.st), "%s store differs", kind->name);
    for (uint32_t i = 0; i < tg_store_len(&whole.st); i++)
        fz_check(tg_store_get(&cut.st, kind->key(tg_store_at(&whole.st, i))),
                 "%s %s: stored whole, not in pieces", kind->name,
                 kind->key(tg_store_at(&whole.st, i)));
    fz_check_store(&whole.st);
    fz_check_store(&cut.st);
    tg_jsonl_free(&whole.jl);
    tg_jsonl_free(&cut.jl);
    tg_store_free(&whole.st);
    tg_store_free(&cut.st);
    return 0;
}
