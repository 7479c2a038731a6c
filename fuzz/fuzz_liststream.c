/* The LIST body of one collection (informer/liststream.h) and what that
 * collection's reflector does with each part (informer/reflector.c
 * on_list_item, on_list_meta): every item is parsed, decoded with the
 * collection's kind and put into its store (a malformed item stops the
 * feed, an item its kind refuses is skipped); the metadata's
 * resourceVersion and continue token are read. The first input byte picks
 * the collection (fuzz/collection.h: every kind the daemon watches), the
 * rest is the body.
 *
 * The body is fed twice, whole and in pieces of 1 to 64 bytes: the items and
 * metadata handed over, the verdicts of feed and finish, and the stores must
 * be the same; every part handed over starts with '{' and ends with a
 * closing bracket (the splitter counts brackets; JSON is cJSON's to check);
 * a decoded object keeps its key, uid and resourceVersion when decoded
 * again and is found by its key once stored. */
#include "fuzz/collection.h"

#include "informer/liststream.h"
#include "util/log.h"

struct run {
    struct tg_liststream ls;
    struct tg_store st;
    uint64_t hash;
    size_t items, metas;
};

static void check_part(const char *json, size_t len)
{
    fz_check(len >= 2 && json[0] == '{' && (json[len - 1] == '}' || json[len - 1] == ']'),
             "part is not a bracketed value");
}

static int on_item(void *ud, const char *json, size_t len)
{
    struct run *r = ud;
    check_part(json, len);
    r->items++;
    r->hash = fz_hash(r->hash * 31, json, len);
    cJSON *it = cJSON_ParseWithLength(json, len);
    if (!it)
        return TG_EPARSE;
    void *o;
    int rc = fz_decode(r->st.kind, it, &o);
    cJSON_Delete(it);
    r->hash = fz_hash(r->hash, &rc, sizeof rc);
    if (rc == TG_EPARSE)
        return 0;
    return rc ? rc : fz_put(&r->st, o);
}

static int on_meta(void *ud, const char *json, size_t len)
{
    struct run *r = ud;
    check_part(json, len);
    r->metas++;
    r->hash = fz_hash(r->hash * 37, json, len);
    cJSON *md = cJSON_ParseWithLength(json, len);
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    const cJSON *cont = cJSON_GetObjectItemCaseSensitive(md, "continue");
    if (cJSON_IsString(rv))
        r->hash = fz_hash(r->hash, rv->valuestring, strlen(rv->valuestring));
    if (cJSON_IsString(cont))
        r->hash = fz_hash(r->hash, cont->valuestring, strlen(cont->valuestring));
    cJSON_Delete(md);
    return 0;
}

static void run_init(struct run *r, const struct tg_kind *kind)
{
    memset(r, 0, sizeof *r);
    tg_liststream_reset(&r->ls, on_item, on_meta, r);
    tg_store_init(&r->st, kind);
}

static void run_free(struct run *r)
{
    fz_check_store(&r->st);
    tg_liststream_free(&r->ls);
    tg_store_free(&r->st);
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
    struct run whole, cut;
    run_init(&whole, kind);
    run_init(&cut, kind);
    int rw = tg_liststream_feed(&whole.ls, d, size);
    int rc = 0;
    uint64_t seed = fz_hash(14695981039346656037ULL, data, size);
    for (size_t off = 0, n; off < size && rc == 0; off += n) {
        n = fz_chunk(&seed, size - off);
        rc = tg_liststream_feed(&cut.ls, d + off, n);
    }
    fz_check(rw == rc, "whole feed returned %d, in pieces %d", rw, rc);
    fz_check(whole.items == cut.items && whole.metas == cut.metas && whole.hash == cut.hash,
             "parts differ: %zu items, %zu metadata vs %zu, %zu", whole.items, whole.metas,
             cut.items, cut.metas);
    if (rw == 0)
        fz_check(tg_liststream_finish(&whole.ls) == tg_liststream_finish(&cut.ls),
                 "finish verdicts differ");
    fz_check(tg_store_len(&whole.st) == tg_store_len(&cut.st), "%s store differs", kind->name);
    run_free(&whole);
    run_free(&cut);
    return 0;
}
