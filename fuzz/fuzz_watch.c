/* The watch-event stream of one collection, through the reflector's own
 * event handling (informer/reflector.c, fed by tg__reflector_feed_watch: the
 * newline-delimited JSON splitter, then per event ADDED/MODIFIED/DELETED
 * applied to its store with the handlers called, BOOKMARK passing, ERROR or
 * a malformed event ending the stream). The first input byte picks the
 * collection (fuzz/collection.h: every kind the daemon watches), the rest is
 * the stream.
 *
 * The stream is fed twice, whole and in pieces of 1 to 64 bytes: the
 * verdicts, the counters, the handlers' calls (in order, by key) and the
 * stores left behind must be the same, and every stored object must be
 * found by its key. The splitter alone is checked too: every line it gives
 * is one line without its newline, and the same lines whole and in pieces. */
#include "fuzz/collection.h"

#include "informer/jsonl.h"
#include "informer/reflector.h"
#include "util/log.h"

struct run {
    const struct tg_kind *kind;
    struct tg_reflector *r;
    uint64_t calls;            /* hash of the handlers' calls, in order */
    struct tg_jsonl jl;        /* the splitter alone */
    uint64_t lines_hash;
    size_t lines;
};

static void call(struct run *u, char what, const void *obj)
{
    const char *k = u->kind->key(obj);
    fz_check(k && *k, "%s: handler given an object without a key", u->kind->name);
    u->calls = fz_hash(u->calls, &what, 1);
    u->calls = fz_hash(u->calls, k, strlen(k));
}

static void on_add(void *ud, const void *obj)
{
    call(ud, 'a', obj);
}

static void on_update(void *ud, const void *old, const void *obj)
{
    struct run *u = ud;
    fz_check(!strcmp(u->kind->key(old), u->kind->key(obj)), "%s %s updated as %s",
             u->kind->name, u->kind->key(old), u->kind->key(obj));
    call(ud, 'u', obj);
}

static void on_delete(void *ud, const void *obj)
{
    call(ud, 'd', obj);
}

static int on_line(void *ud, const char *line, size_t len)
{
    struct run *u = ud;
    fz_check(len > 0 && line[len - 1] != '\n' && !memchr(line, '\n', len), "bad line cut");
    u->lines++;
    u->lines_hash = fz_hash(u->lines_hash, line, len);
    return 0;
}

static void run_init(struct run *u, const struct tg_kind *kind)
{
    struct tg_reflector_opts o = {
        .kind = kind, .path = "/fuzz",
        .h = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .ud = u}};
    if (kind == &tg_kind_pod_any) { /* the daemon's one pod watch keeps what it keeps */
        o.keep = tg_pod_keep;
        o.keep_ud = (void *)"topogang";
    }
    u->kind = kind;
    fz_check(tg__reflector_new_offline(&o, &u->r) == 0, "reflector not made");
}

static void run_free(struct run *u)
{
    tg__reflector_free_offline(&u->r);
    tg_jsonl_free(&u->jl);
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
    run_init(&whole, kind);
    run_init(&cut, kind);
    int rw = tg__reflector_feed_watch(whole.r, d, size);
    tg_jsonl_feed(&whole.jl, d, size, on_line, &whole);
    int rc = 0;
    uint64_t seed = fz_hash(14695981039346656037ULL, data, size);
    for (size_t off = 0, n; off < size; off += n) {
        n = fz_chunk(&seed, size - off);
        if (rc == 0)
            rc = tg__reflector_feed_watch(cut.r, d + off, n);
        tg_jsonl_feed(&cut.jl, d + off, n, on_line, &cut);
    }
    fz_check(rw == rc, "whole feed returned %d, in pieces %d", rw, rc);
    fz_check(rw == 0 || rw == TG_EPARSE || rw == TG_EAGAIN || rw == TG_ENOMEM,
             "feed returned %d (%s)", rw, tg_err_name(rw));
    fz_check(whole.lines == cut.lines && whole.lines_hash == cut.lines_hash,
             "lines differ: %zu vs %zu", whole.lines, cut.lines);
    const struct tg_reflector_stats *a = tg_reflector_stats(whole.r), *b = tg_reflector_stats(cut.r);
    fz_check(a->events == b->events && a->bookmarks == b->bookmarks && a->adds == b->adds &&
                 a->updates == b->updates && a->deletes == b->deletes &&
                 a->deletes_undecoded == b->deletes_undecoded &&
                 a->decode_errors == b->decode_errors && a->decode_drops == b->decode_drops &&
                 a->parse_errors == b->parse_errors,
             "%s counters differ whole and in pieces (events %llu vs %llu)", kind->name,
             (unsigned long long)a->events, (unsigned long long)b->events);
    fz_check(whole.calls == cut.calls, "%s handlers called differently", kind->name);
    fz_check(a->adds + a->updates + a->deletes <= a->events, "%s: more changes than events",
             kind->name);
    const struct tg_store *sw = tg_reflector_store(whole.r), *sc = tg_reflector_store(cut.r);
    fz_check(tg_store_len(sw) == tg_store_len(sc), "%s store differs", kind->name);
    for (uint32_t i = 0; i < tg_store_len(sw); i++)
        fz_check(tg_store_get(sc, kind->key(tg_store_at(sw, i))),
                 "%s %s: stored whole, not in pieces", kind->name, kind->key(tg_store_at(sw, i)));
    fz_check_store(sw);
    fz_check_store(sc);
    run_free(&whole);
    run_free(&cut);
    return 0;
}
