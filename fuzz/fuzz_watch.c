/* The watch-event stream: the newline-delimited JSON splitter
 * (informer/jsonl.h) and, per line, what the reflector does with an event
 * (informer/reflector.c on_line): parse {"type","object"}, decode the object
 * with the kind its "kind" names (Node, Pod with spec, PodGroup, ConfigMap;
 * Pod otherwise) and apply ADDED/MODIFIED/DELETED to that kind's store;
 * BOOKMARK passes, ERROR and anything else end the stream.
 *
 * The input is fed twice, whole and in pieces of 1 to 64 bytes: the lines
 * delivered and the stores left behind must be the same, and every stored
 * object must be found by its key. */
#include "fuzz/fuzz.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "informer/jsonl.h"
#include "informer/kinds.h"
#include "informer/store.h"
#include "util/err.h"
#include "util/log.h"

enum { NKINDS = 4 };
static const struct tg_kind *const kinds[NKINDS] = {&tg_kind_pod_spec, &tg_kind_node,
                                                    &tg_kind_podgroup, &tg_kind_configmap};

struct run {
    struct tg_jsonl jl;
    struct tg_store st[NKINDS];
    uint64_t hash;
    size_t lines, events;
};

static const struct tg_kind *kind_of(const cJSON *obj, struct run *r, struct tg_store **st)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    int i = 0;
    for (int j = 1; j < NKINDS && cJSON_IsString(k); j++)
        if (!strcmp(k->valuestring, kinds[j]->name))
            i = j;
    *st = &r->st[i];
    return kinds[i];
}

static int apply(struct tg_store *st, const struct tg_kind *kind, const char *type, void *o)
{
    if (type[0] == 'D') {
        void *old = tg_store_take(st, kind->key(o));
        kind->free(old);
        kind->free(o);
        return 0;
    }
    void *old;
    int rc = tg_store_put(st, o, &old);
    if (rc) {
        kind->free(o);
        return rc;
    }
    kind->free(old);
    return 0;
}

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
    } else if (!strcmp(type->valuestring, "ADDED") || !strcmp(type->valuestring, "MODIFIED") ||
               !strcmp(type->valuestring, "DELETED")) {
        struct tg_store *st;
        const struct tg_kind *kind = kind_of(obj, r, &st);
        void *o;
        int drc = kind->decode(obj, &o);
        fz_check(drc == 0 || drc == TG_EPARSE || drc == TG_ENOMEM, "%s decode returned %d",
                 kind->name, drc);
        if (drc == 0)
            rc = apply(st, kind, type->valuestring, o);
        r->events++;
    } else if (strcmp(type->valuestring, "BOOKMARK") != 0) {
        rc = TG_EAGAIN;                 /* ERROR, unknown: the watch ends */
    }
    cJSON_Delete(ev);
    return rc;
}

static void check_store(const struct tg_store *st)
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

static void run_free(struct run *r)
{
    tg_jsonl_free(&r->jl);
    for (int i = 0; i < NKINDS; i++) {
        check_store(&r->st[i]);
        tg_store_free(&r->st[i]);
    }
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
    const char *d = (const char *)data;
    struct run whole = {0}, cut = {0};
    for (int i = 0; i < NKINDS; i++) {
        tg_store_init(&whole.st[i], kinds[i]);
        tg_store_init(&cut.st[i], kinds[i]);
    }
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
    for (int i = 0; i < NKINDS; i++)
        fz_check(tg_store_len(&whole.st[i]) == tg_store_len(&cut.st[i]), "%s store differs",
                 kinds[i]->name);
    run_free(&whole);
    run_free(&cut);
    return 0;
}
