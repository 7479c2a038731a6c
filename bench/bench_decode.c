/* CPU per Pod watch event, the way the daemon receives them (issue 21):
 *
 *   bench_decode [--pods N] [--rounds R] [--dir tests/fixtures/pods] [--path lean|full]
 *
 * Events are the real ones in DIR (tests/fixtures/pods/README.md: captured
 * from kube-apiserver, managedFields and status as served). Two streams:
 *   sched: what bench/sched/run's (a) gives per bound pod, N pods: the
 *          pending pod (its ADDED line; the daemon lists it), its DELETED
 *          from the pending watch, its ADDED to the bound watch; bench-0's
 *          events renamed per pod;
 *   mixed: every captured event of both watches (bench pods, training
 *          workers with init and sidecar containers, a Job's pods; ADDED,
 *          MODIFIED with kubelet status, DELETED), N / 10 times over.
 * Each goes through the reflector's own event handling (informer/reflector.c
 * offline: splitter, parse, decode, store, handlers), pending events with
 * the daemon's pending-pod kind (TG_DECODE_SPEC), bound ones with its bound
 * kind, once parsed by cJSON in full (full_json: the path before issue 21's
 * lean parse) and once lean, the two interleaved in each round. Also timed
 * alone: the parse of every line (cJSON_ParseWithLength + cJSON_Delete, or
 * tg_jlean_parse) and the decode of the sched stream's objects from a parsed
 * tree. And per bound pod, lean, the sched stream as two pod watches gave
 * it (3 events: pending ADDED, pending DELETED, bound ADDED) against the one
 * pod watch the daemon holds since 2026-11-27 (2 events: pending ADDED, the
 * bind as one MODIFIED; tg_kind_pod_any with tg_pod_keep), each first in
 * half the rounds (run_two_watches / run_one_watch, not inlined, for
 * `valgrind --tool=callgrind --toggle-collect=`). Prints CPU-us per event
 * (process CPU time), the median over the rounds, one line per figure.
 * --path runs one path only (for perf). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "informer/kinds.h"
#include "informer/reflector.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/jsonlean.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/yamljson.h"

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static char *slurp(const char *path, size_t *len)
{
    char *text = NULL;
    struct tg_sb err = {0};
    if (tg_read_file(path, &text, len, &err)) {
        fprintf(stderr, "bench_decode: %s\n", tg_sb_str(&err));
        exit(1);
    }
    return text;
}

/* The first line of text holding all of `need` (NUL-terminated copy). */
static char *line_with(const char *text, const char *need1, const char *need2)
{
    for (const char *l = text; *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char *c = strndup(l, n);
        if (strstr(c, need1) && strstr(c, need2))
            return c;
        free(c);
        l += n + (e != NULL);
    }
    fprintf(stderr, "bench_decode: no event with %s %s\n", need1, need2);
    exit(1);
}

/* line with every "bench-0" renamed b<6 digits> and the uid's last 8 hex
 * digits made i's, appended to b with its newline. */
static void put_renamed(struct tg_sb *b, const char *line, const char *uid, int i)
{
    char name[16], u[64];
    snprintf(name, sizeof name, "\"b%06d\"", i);
    snprintf(u, sizeof u, "%.*s%08x", (int)strlen(uid) - 8, uid, (unsigned)i);
    for (const char *p = line; *p;) {
        const char *n = strstr(p, "\"bench-0\""), *d = strstr(p, uid);
        const char *at = n && (!d || n < d) ? n : d;
        if (!at) {
            tg_sb_puts(b, p);
            break;
        }
        tg_sb_putn(b, p, (size_t)(at - p));
        tg_sb_puts(b, at == n ? name : u);
        p = at + (at == n ? 9 : strlen(uid));
    }
    tg_sb_putc(b, '\n');
}

static uint64_t handled;
static void on_any(void *ud, const void *o)
{
    (void)ud;
    (void)o;
    handled++;
}
static void on_upd(void *ud, const void *a, const void *o)
{
    (void)ud;
    (void)a;
    (void)o;
    handled++;
}

/* Both watches' streams through two offline reflectors; CPU-us. */
static double run_reflectors(const struct tg_sb *pending, const struct tg_sb *bound, int full,
                             uint64_t *fallbacks)
{
    struct tg_reflector_opts o = {.path = "/api/v1/pods", .full_json = full,
                                  .h = {.on_add = on_any, .on_update = on_upd, .on_delete = on_any}};
    struct tg_reflector *rp = NULL, *rb = NULL;
    o.kind = &tg_kind_pod_spec;
    int rc = tg__reflector_new_offline(&o, &rp);
    o.kind = &tg_kind_pod;
    rc = rc ? rc : tg__reflector_new_offline(&o, &rb);
    if (rc) {
        fprintf(stderr, "bench_decode: reflector: %s\n", tg_err_name(rc));
        exit(1);
    }
    double t0 = cpu_us();
    int a = tg__reflector_feed_watch(rp, pending->s, pending->len);
    int b = tg__reflector_feed_watch(rb, bound->s, bound->len);
    double t = cpu_us() - t0;
    if (a || b) {
        fprintf(stderr, "bench_decode: feed: %s %s\n", tg_err_name(a), tg_err_name(b));
        exit(1);
    }
    *fallbacks = tg_reflector_stats(rp)->lean_fallbacks + tg_reflector_stats(rb)->lean_fallbacks;
    tg__reflector_free_offline(&rp);
    tg__reflector_free_offline(&rb);
    return t;
}

/* The sched stream as the one pod watch gives it (per pod its pending
 * ADDED, then its bind as one MODIFIED) through one offline reflector with
 * the daemon's kind and keep; CPU-us. */
__attribute__((noinline)) static double run_one_watch(const struct tg_sb *one)
{
    struct tg_reflector_opts o = {.path = "/api/v1/pods", .kind = &tg_kind_pod_any,
                                  .keep = tg_pod_keep, .keep_ud = (void *)"topogang",
                                  .h = {.on_add = on_any, .on_update = on_upd, .on_delete = on_any}};
    struct tg_reflector *r = NULL;
    if (tg__reflector_new_offline(&o, &r)) {
        fprintf(stderr, "bench_decode: reflector\n");
        exit(1);
    }
    double t0 = cpu_us();
    int rc = tg__reflector_feed_watch(r, one->s, one->len);
    double t = cpu_us() - t0;
    if (rc || tg_reflector_stats(r)->updates != tg_reflector_stats(r)->adds) {
        fprintf(stderr, "bench_decode: one watch: %s, %llu adds, %llu updates\n", tg_err_name(rc),
                (unsigned long long)tg_reflector_stats(r)->adds,
                (unsigned long long)tg_reflector_stats(r)->updates);
        exit(1);
    }
    tg__reflector_free_offline(&r);
    return t;
}

/* The sched stream as two watches give it (the daemon before 2026-11-27). */
__attribute__((noinline)) static double run_two_watches(const struct tg_sb *pending, const struct tg_sb *bound)
{
    uint64_t fb;
    return run_reflectors(pending, bound, 0, &fb);
}

/* Every line of s parsed (and the tree dropped); CPU-us. */
static double run_parse(const struct tg_sb *s, int full, struct tg_jlean *j)
{
    double t0 = cpu_us();
    for (const char *l = s->s, *end = s->s + s->len; l < end;) {
        const char *e = memchr(l, '\n', (size_t)(end - l));
        size_t n = (size_t)(e - l);
        if (full) {
            cJSON_Delete(cJSON_ParseWithLength(l, n));
        } else {
            const cJSON *root;
            if (tg_jlean_parse(j, l, n, &root))
                exit(1);
        }
        l = e + 1;
    }
    return cpu_us() - t0;
}

/* The decode alone: each object of the sched stream's pending and bound
 * ADDED lines from parsed trees; CPU-us. */
static double run_decode(cJSON **trees, const unsigned *flags, int n)
{
    double t0 = cpu_us();
    for (int i = 0; i < n; i++) {
        struct tg_pod *p = NULL;
        if (tg_pod_decode(cJSON_GetObjectItemCaseSensitive(trees[i], "object"), flags[i], NULL, &p))
            exit(1);
        tg_pod_free(&p);
    }
    return cpu_us() - t0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static size_t count_lines(const struct tg_sb *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->len; i++)
        n += s->s[i] == '\n';
    return n;
}

int main(int argc, char **argv)
{
    int pods = 2000, rounds = 9, only = -1; /* only: 0 lean, 1 full */
    const char *dir = "tests/fixtures/pods";
    static const struct option lo[] = {{"pods", 1, 0, 'p'}, {"rounds", 1, 0, 'r'},
                                       {"dir", 1, 0, 'd'}, {"path", 1, 0, 'P'}, {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
        if (c == 'p') pods = atoi(optarg);
        else if (c == 'r') rounds = atoi(optarg);
        else if (c == 'd') dir = optarg;
        else if (c == 'P') only = !strcmp(optarg, "full");
        else return 2;
    }
    if (pods < 10 || rounds < 1)
        return 2;
    tg_log_set_level(TG_LOG_ERROR);
    char path[4096];
    size_t plen, blen;
    snprintf(path, sizeof path, "%s/pending.jsonl", dir);
    char *ptext = slurp(path, &plen);
    snprintf(path, sizeof path, "%s/bound.jsonl", dir);
    char *btext = slurp(path, &blen);

    /* sched: per pod its pending object, its DELETED there, its ADDED bound */
    char *p_add = line_with(ptext, "\"type\":\"ADDED\"", "\"name\":\"bench-0\"");
    char *p_del = line_with(ptext, "\"type\":\"DELETED\"", "\"name\":\"bench-0\"");
    char *b_add = line_with(btext, "\"type\":\"ADDED\"", "\"name\":\"bench-0\"");
    const char *u0 = strstr(p_add, "\"uid\":\"") + 7;
    char *uid = strndup(u0, (size_t)(strchr(u0, '"') - u0));
    struct tg_sb sp = {0}, sb = {0}, all = {0}, ow = {0};
    struct tg_sb mod = {0}; /* the bound object's line as a MODIFIED */
    const char *added = strstr(b_add, "\"ADDED\"");
    tg_sb_printf(&mod, "%.*s\"MODIFIED\"%s", (int)(added - b_add), b_add, added + 7);
    const char *b_mod = tg_sb_str(&mod);
    for (int i = 0; i < pods; i++) {
        put_renamed(&sp, p_add, uid, i);
        put_renamed(&sp, p_del, uid, i);
        put_renamed(&sb, b_add, uid, i);
        put_renamed(&ow, p_add, uid, i);
        put_renamed(&ow, b_mod, uid, i);
    }
    /* mixed: the captured streams as they are, pods / 10 times */
    struct tg_sb mp = {0}, mb = {0};
    for (int i = 0; i < pods / 10; i++) {
        tg_sb_putn(&mp, ptext, plen);
        tg_sb_putn(&mb, btext, blen);
    }
    tg_sb_putn(&all, sp.s, sp.len);
    tg_sb_putn(&all, sb.s, sb.len);
    size_t ev_sched = count_lines(&sp) + count_lines(&sb), ev_mixed = count_lines(&mp) + count_lines(&mb);

    /* decode alone: the sched stream's decoded objects, parsed once by cJSON */
    int ndec = 2 * pods;
    cJSON **trees = calloc((size_t)ndec, sizeof *trees);
    unsigned *flags = calloc((size_t)ndec, sizeof *flags);
    for (int i = 0; i < pods; i++) {
        struct tg_sb one = {0};
        put_renamed(&one, p_add, uid, i);
        trees[2 * i] = cJSON_ParseWithLength(one.s, one.len);
        flags[2 * i] = TG_DECODE_SPEC;
        tg_sb_reset(&one);
        put_renamed(&one, b_add, uid, i);
        trees[2 * i + 1] = cJSON_ParseWithLength(one.s, one.len);
        tg_sb_free(&one);
    }

    enum { SCHED_FULL, SCHED_LEAN, MIXED_FULL, MIXED_LEAN, PARSE_FULL, PARSE_LEAN, DECODE, TWO_POD,
           ONE_POD, NFIG };
    static const char *const names[NFIG] = {
        "sched stream, reflector, cJSON in full", "sched stream, reflector, lean",
        "mixed stream, reflector, cJSON in full", "mixed stream, reflector, lean",
        "sched stream, parse only, cJSON", "sched stream, parse only, lean",
        "sched stream, decode only (per decoded event)",
        "two pod watches, lean, per bound pod (3 events)",
        "one pod watch, lean, per bound pod (2 events)"};
    double *fig[NFIG], v[NFIG] = {0};
    for (int f = 0; f < NFIG; f++)
        fig[f] = calloc((size_t)rounds, sizeof(double));
    struct tg_jlean j;
    tg_jlean_init(&j, "object", tg_pod_unread);
    uint64_t fb[4] = {0};
    for (int r = -1; r < rounds; r++) { /* round -1 warms up, not counted */
        int lean_first = r % 2; /* interleaved: each path first in half the rounds */
        for (int k = 0; k < 2; k++) {
            int full = k != lean_first;
            if (only >= 0 && full != only)
                continue;
            v[full ? SCHED_FULL : SCHED_LEAN] = run_reflectors(&sp, &sb, full, &fb[!full]) / (double)ev_sched;
            v[full ? MIXED_FULL : MIXED_LEAN] = run_reflectors(&mp, &mb, full, &fb[2 + !full]) / (double)ev_mixed;
            v[full ? PARSE_FULL : PARSE_LEAN] = run_parse(&all, full, &j) / (double)ev_sched;
        }
        v[DECODE] = only >= 0 ? 0 : run_decode(trees, flags, ndec) / ndec;
        if (only != 1) { /* the pod watches: two then one, or one then two, by round */
            for (int k = 0; k < 2; k++) {
                if (k == (r & 1))
                    v[ONE_POD] = run_one_watch(&ow) / pods;
                else
                    v[TWO_POD] = run_two_watches(&sp, &sb) / pods;
            }
        }
        if (r >= 0)
            for (int f = 0; f < NFIG; f++)
                fig[f][r] = v[f];
    }
    printf("bench_decode: %d pods, %zu sched events, %zu mixed events, %d rounds (median), "
           "CPU-us per event\n", pods, ev_sched, ev_mixed, rounds);
    for (int f = 0; f < NFIG; f++)
        printf("  %-48s %8.2f\n", names[f], median(fig[f], rounds));
    printf("  lean fallbacks to cJSON (last round): sched %llu, mixed %llu; events handled %llu\n",
           (unsigned long long)fb[1], (unsigned long long)fb[3], (unsigned long long)handled);
    for (int i = 0; i < ndec; i++)
        cJSON_Delete(trees[i]);
    return 0;
}
