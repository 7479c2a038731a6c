/* The LIST stream (informer/liststream.h) and what the reflector does with
 * each part (informer/reflector.c on_list_item, on_list_meta): every item is
 * parsed and decoded by each cached kind (Pod with spec, Node, PodGroup,
 * ConfigMap) into that kind's store; the metadata's resourceVersion and
 * continue token are read.
 *
 * The body is fed twice, whole and in pieces of 1 to 64 bytes: the items and
 * metadata handed over, the verdicts of feed and finish, and the stores must
 * be the same; every part handed over starts with '{' and ends with a
 * closing bracket (the splitter counts brackets; JSON is cJSON's to check). */
#include "fuzz/fuzz.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "informer/kinds.h"
#include "informer/liststream.h"
#include "informer/store.h"
#include "util/err.h"
#include "util/log.h"

enum { NKINDS = 4 };
static const struct tg_kind *const kinds[NKINDS] = {&tg_kind_pod_spec, &tg_kind_node,
                                                    &tg_kind_podgroup, &tg_kind_configmap};

struct run {
    struct tg_liststream ls;
    struct tg_store st[NKINDS];
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
    for (int i = 0; i < NKINDS; i++) {
        void *o, *old;
        int rc = kinds[i]->decode(it, &o);
        fz_check(rc == 0 || rc == TG_EPARSE || rc == TG_ENOMEM, "%s decode returned %d",
                 kinds[i]->name, rc);
        if (rc)
            continue;
        if (tg_store_put(&r->st[i], o, &old)) {
            kinds[i]->free(o);
            continue;
        }
        kinds[i]->free(old);
        fz_check(tg_store_get(&r->st[i], kinds[i]->key(o)) == o, "stored %s not found",
                 kinds[i]->name);
    }
    cJSON_Delete(it);
    return 0;
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

static void run_init(struct run *r)
{
    memset(r, 0, sizeof *r);
    tg_liststream_reset(&r->ls, on_item, on_meta, r);
    for (int i = 0; i < NKINDS; i++)
        tg_store_init(&r->st[i], kinds[i]);
}

static void run_free(struct run *r)
{
    tg_liststream_free(&r->ls);
    for (int i = 0; i < NKINDS; i++)
        tg_store_free(&r->st[i]);
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
    struct run whole, cut;
    run_init(&whole);
    run_init(&cut);
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
    for (int i = 0; i < NKINDS; i++)
        fz_check(tg_store_len(&whole.st[i]) == tg_store_len(&cut.st[i]), "%s store differs",
                 kinds[i]->name);
    run_free(&whole);
    run_free(&cut);
    return 0;
}
