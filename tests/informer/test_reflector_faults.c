/* Reflector behaviour on faults a real API server will not produce on demand,
 * served by a tiny scripted HTTP server on 127.0.0.1 (a thread): a malformed
 * watch line, a stream cut inside an event, a 410 ERROR event, an HTTP 500
 * on LIST, a LIST split in pages. Asserts the cache, the handlers and the
 * resourceVersions each request resumed from. Also checks the client's write
 * rate limiter (qps/burst) against the same server, and its background
 * writes (Events) against a server that holds every request a while, the
 * Lease's urgent lane past a full write queue, and the fence that stops
 * leader-only writes (queued: never sent; running: aborted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "informer/api.h"
#include "informer/client.h"
#include "informer/kinds.h"
#include "informer/reflector.h"
#include "model/objects.h"
#include "util/clock.h"
#include "util/err.h"

/* ---- scripted server ---------------------------------------------------- */

struct step {
    const char *expect;        /* substring the request line must contain */
    const char *resp;          /* full HTTP response; NULL: hold the connection */
};

struct server {
    int lfd, port;
    pthread_t th;
    const struct step *steps;
    int nsteps, at;
    char paths[32][512];
    int has_ctype[32];         /* the request carried a Content-Type (a body) */
    int mismatch;
    volatile int stop;
    pthread_mutex_t mu;
};

#define POD(name, rv)                                                                         \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"uid\":\"u-" name "\","       \
    "\"resourceVersion\":\"" rv "\"},\"spec\":{\"schedulerName\":\"topogang\",\"containers\":" \
    "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"                         \
    "\"status\":{\"phase\":\"Pending\"}}"
#define HDR "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
#define LIST(rv, cont, items)                                                                 \
    HDR "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"" rv "\",\"continue\":\""   \
        cont "\"},\"items\":[" items "]}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"

static void *serve(void *arg)
{
    struct server *sv = arg;
    while (!sv->stop) {
        int fd = accept(sv->lfd, NULL, NULL);
        if (fd < 0)
            break;
        char req[4096];
        size_t n = 0;
        ssize_t k;
        while (n < sizeof req - 1 && (k = read(fd, req + n, sizeof req - 1 - n)) > 0) {
            n += (size_t)k;
            req[n] = 0;
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        req[n] = 0;
        pthread_mutex_lock(&sv->mu);
        int i = sv->at++;
        if (i < 32) {
            snprintf(sv->paths[i], sizeof sv->paths[i], "%.*s", (int)strcspn(req, "\r\n"), req);
            sv->has_ctype[i] = strstr(req, "Content-Type:") != NULL;
        }
        const struct step *st = i < sv->nsteps ? &sv->steps[i] : NULL;
        if (!st || !strstr(req, st->expect))
            sv->mismatch = i + 1;
        pthread_mutex_unlock(&sv->mu);
        if (st && st->resp) {
            size_t len = strlen(st->resp), off = 0;
            /* dribble in small writes so lines split across reads */
            while (off < len) {
                size_t w = len - off < 37 ? len - off : 37;
                if (write(fd, st->resp + off, w) < 0)
                    break;
                off += w;
            }
        } else {
            while (!sv->stop)
                usleep(10000);
        }
        close(fd);
    }
    return NULL;
}

static void server_start(struct server *sv, const struct step *steps, int n)
{
    memset(sv, 0, sizeof *sv);
    pthread_mutex_init(&sv->mu, NULL);
    sv->steps = steps;
    sv->nsteps = n;
    sv->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(sv->lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    getsockname(sv->lfd, (struct sockaddr *)&a, &al);
    sv->port = ntohs(a.sin_port);
    listen(sv->lfd, 16);
    pthread_create(&sv->th, NULL, serve, sv);
}

static void server_stop(struct server *sv)
{
    sv->stop = 1;
    shutdown(sv->lfd, SHUT_RDWR);
    close(sv->lfd);
    pthread_join(sv->th, NULL);
}

/* ---- test harness -------------------------------------------------------- */

struct seen {
    int adds, updates, deletes;
    char deleted[8][64];
    const void *p1, *p3;                /* the objects last handed over for these keys */
};

static void keep(struct seen *s, const void *o)
{
    const char *k = ((const struct tg_pod *)o)->key;
    if (!strcmp(k, "ns/p1"))
        s->p1 = o;
    if (!strcmp(k, "ns/p3"))
        s->p3 = o;
}
static void h_add(void *ud, const void *o)
{
    ((struct seen *)ud)->adds++;
    keep(ud, o);
}
static void h_update(void *ud, const void *old, const void *o)
{
    (void)old;
    ((struct seen *)ud)->updates++;
    keep(ud, o);
}
static void h_delete(void *ud, const void *o)
{
    struct seen *s = ud;
    if (s->deletes < 8)
        snprintf(s->deleted[s->deletes], 64, "%s", ((const struct tg_pod *)o)->key);
    s->deletes++;
}

struct waiter {
    struct server *sv;
    int until_step;
    uv_timer_t t;
    int ticks;
};

static void on_tick(uv_timer_t *t)
{
    struct waiter *w = t->data;
    pthread_mutex_lock(&w->sv->mu);
    int at = w->sv->at;
    pthread_mutex_unlock(&w->sv->mu);
    if (at >= w->until_step || ++w->ticks > 1000)
        uv_stop(t->loop);
}

/* Runs the loop until the server has received `step` requests (max 10 s),
 * then 100 ms more so the last response is processed. */
static void run_until(uv_loop_t *loop, struct server *sv, int step)
{
    struct waiter w = {.sv = sv, .until_step = step};
    uv_timer_init(loop, &w.t);
    w.t.data = &w;
    uv_timer_start(&w.t, on_tick, 10, 10);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_timer_stop(&w.t);
    uv_close((uv_handle_t *)&w.t, NULL);
    uint64_t end = uv_now(loop) + 100;
    while (uv_now(loop) < end) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(2000);
        uv_update_time(loop);
    }
}

static void close_all(uv_loop_t *loop, struct tg_client **c, struct tg_reflector **r)
{
    tg_reflector_free(r);
    tg_client_free(c);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

static const struct step script[] = {
    /* 0: first page (a continue token), 1: second page */
    {"GET /api/v1/pods?limit=2&resourceVersion=0 ", LIST("10", "tok1", POD("p1", "5") "," POD("p2", "6"))},
    {"continue=tok1", LIST("10", "", POD("p0", "7"))},
    /* 2: watch from 10: an event, then garbage */
    {"watch=1&allowWatchBookmarks=true&resourceVersion=10&",
     HDR EV("ADDED", POD("p3", "11")) "{\"type\":\"MODIFIED\",\"object\":{oops\n" EV("ADDED", POD("px", "99"))},
    /* 3: resumes from 11; an update, a bookmark, then a cut inside an event */
    {"resourceVersion=11&",
     HDR EV("MODIFIED", POD("p1", "12")) "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"14\"}}}\n"
         "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p9"},
    /* 4: resumes from the bookmark; 410 */
    {"resourceVersion=14&",
     HDR "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
         "\"message\":\"too old resource version: 14 (20)\"}}\n"},
    /* 5: relist fails once (server error), 6: relist: p2 and p0 went away, p4 came */
    {"GET /api/v1/pods?limit=2 ", "HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n"
                                  "Content-Length: 2\r\n\r\n{}"},
    {"GET /api/v1/pods?limit=2 ", LIST("20", "", POD("p1", "12") "," POD("p3", "11") "," POD("p4", "19"))},
    /* 7: watch from the new list; stays open */
    {"resourceVersion=20&", NULL},
};

static void faults_restart_and_relist(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, script, (int)(sizeof script / sizeof script[0]));
    uv_loop_t loop;
    uv_loop_init(&loop);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", sv.port);
    struct tg_kconf conf = {.server = url};
    struct tg_client *c;
    assert_int_equal(tg_client_new(&loop, &conf, NULL, &c), 0);
    struct seen seen = {0};
    struct tg_reflector_opts o = {.kind = &tg_kind_pod, .path = "/api/v1/pods", .page_size = 2,
                                  .backoff_min_ms = 10, .backoff_max_ms = 50,
                                  .h = {h_add, h_update, h_delete, NULL, &seen}};
    struct tg_reflector *r;
    assert_int_equal(tg_reflector_new(c, &o, &r), 0);
    assert_int_equal(tg_reflector_start(r), 0);
    run_until(&loop, &sv, 8);

    for (int i = 0; i < sv.at && i < 32; i++)
        printf("# request %d: %s\n", i, sv.paths[i]);
    assert_int_equal(sv.mismatch, 0);      /* every request resumed where it should */
    assert_int_equal(sv.at, 8);
    assert_true(tg_reflector_synced(r));
    const struct tg_reflector_stats *st = tg_reflector_stats(r);
    assert_int_equal(st->parse_errors, 2); /* the garbage line and the cut event */
    assert_int_equal(st->gone, 1);
    assert_int_equal(st->relists, 1);
    assert_int_equal(st->pages, 3);
    assert_int_equal(st->bookmarks, 1);
    const struct tg_store *store = tg_reflector_store(r);
    assert_int_equal(tg_store_len(store), 3);
    assert_non_null(tg_store_get(store, "ns/p1"));
    assert_non_null(tg_store_get(store, "ns/p3"));
    assert_non_null(tg_store_get(store, "ns/p4"));
    assert_null(tg_store_get(store, "ns/px"));  /* after the garbage: never applied */
    assert_non_null(tg_store_get_uid(store, "u-p4"));
    assert_string_equal(((const struct tg_pod *)tg_store_get(store, "ns/p1"))->rv, "12");
    /* relisted unchanged: the objects the handlers were given are still the stored ones */
    assert_ptr_equal(tg_store_get(store, "ns/p1"), seen.p1);
    assert_ptr_equal(tg_store_get(store, "ns/p3"), seen.p3);
    /* p0,p1,p2 listed, p3 watched, p4 relisted; p1 modified once; p0, p2 deleted */
    assert_int_equal(seen.adds, 5);
    assert_int_equal(seen.updates, 1);
    assert_int_equal(seen.deletes, 2);
    assert_true((!strcmp(seen.deleted[0], "ns/p0") && !strcmp(seen.deleted[1], "ns/p2")) ||
                (!strcmp(seen.deleted[0], "ns/p2") && !strcmp(seen.deleted[1], "ns/p0")));
    assert_string_equal(tg_reflector_rv(r), "20");
    server_stop(&sv);
    close_all(&loop, &c, &r);
}

/* ---- write limiter -------------------------------------------------------- */

/* A client of sv on loop (initialised first when init). */
static struct tg_client *client_on(uv_loop_t *loop, const struct server *sv,
                                   const struct tg_client_opts *co, int init)
{
    if (init)
        uv_loop_init(loop);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", sv->port);
    struct tg_kconf conf = {.server = url};
    struct tg_client *c;
    assert_int_equal(tg_client_new(loop, &conf, co, &c), 0);
    return c;
}

/* ---- events whose object does not decode ------------------------------------ */

/* A pod whose cpu request is not a quantity: tg_pod_decode refuses it. */
#define BADPOD(name, rv)                                                                      \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"uid\":\"u-" name "\","       \
    "\"resourceVersion\":\"" rv "\"},\"spec\":{\"schedulerName\":\"topogang\",\"containers\":" \
    "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]},"                      \
    "\"status\":{\"phase\":\"Pending\"}}"

static int decode_failures;
static void h_decode_failed(void *ud, const char *kind)
{
    (void)ud;
    assert_string_equal(kind, "Pod");
    decode_failures++;
}

static const struct step undecodable_script[] = {
    {"GET /api/v1/pods?limit=500&resourceVersion=0 ",
     LIST("10", "", POD("p1", "5") "," POD("p2", "6") "," POD("p3", "7"))},
    /* p1 modified into something that does not decode; p2 deleted, undecodable
     * but named; then a DELETED object that names nothing: relist */
    {"watch=1&allowWatchBookmarks=true&resourceVersion=10&",
     HDR EV("MODIFIED", BADPOD("p1", "11")) EV("DELETED", BADPOD("p2", "12"))
         EV("DELETED", "{\"metadata\":{\"resourceVersion\":\"13\"},\"spec\":{}}")},
    {"GET /api/v1/pods?limit=500 ", LIST("20", "", POD("p3", "7"))},
    {"resourceVersion=20&", NULL},
};

/* A pod reflector against the scripted server sv (its n steps), its
 * deletes and decode failures counted in *seen and decode_failures, run
 * until sv served them. */
static struct tg_reflector *pod_reflector_run(struct server *sv, const struct step *steps, int n,
                                              uv_loop_t *loop, struct tg_client **c,
                                              struct seen *seen)
{
    server_start(sv, steps, n);
    *c = client_on(loop, sv, NULL, 1);
    decode_failures = 0;
    struct tg_reflector_opts o = {.kind = &tg_kind_pod, .path = "/api/v1/pods",
                                  .backoff_min_ms = 10, .backoff_max_ms = 50,
                                  .h = {h_add, h_update, h_delete, NULL, seen, h_decode_failed}};
    struct tg_reflector *r;
    assert_int_equal(tg_reflector_new(*c, &o, &r), 0);
    assert_int_equal(tg_reflector_start(r), 0);
    run_until(loop, sv, n);
    return r;
}

/* Issue 18: an event that fails to decode must not leave the old object in
 * the cache (a modified pod's old requests would stay counted, a deleted pod
 * would linger); a DELETED object that names nothing relists. */
static void undecodable_events_drop_the_cached_object(void **s)
{
    (void)s;
    struct server sv;
    uv_loop_t loop;
    struct tg_client *c;
    struct seen seen = {0};
    struct tg_reflector *r = pod_reflector_run(&sv, undecodable_script, 4, &loop, &c, &seen);
    for (int i = 0; i < sv.at && i < 32; i++)
        printf("# request %d: %s\n", i, sv.paths[i]);
    assert_int_equal(sv.mismatch, 0);
    assert_int_equal(sv.at, 4);           /* the nameless DELETED relisted */
    const struct tg_reflector_stats *st = tg_reflector_stats(r);
    /* p1's MODIFIED and the nameless DELETED; p2's DELETED names a cached
     * pod, which goes by its name without its object being decoded */
    assert_int_equal(st->decode_errors, 2);
    assert_int_equal(st->decode_drops, 1);
    assert_int_equal(st->deletes_undecoded, 1);
    assert_int_equal(st->relists, 1);
    assert_int_equal(decode_failures, 2);
    const struct tg_store *store = tg_reflector_store(r);
    assert_null(tg_store_get(store, "ns/p1"));  /* MODIFIED, undecodable: old version gone */
    assert_null(tg_store_get(store, "ns/p2"));  /* DELETED, undecodable: gone by its name */
    assert_non_null(tg_store_get(store, "ns/p3"));
    assert_int_equal(tg_store_len(store), 1);
    assert_int_equal(seen.deletes, 2);
    assert_string_equal(seen.deleted[0], "ns/p1");
    assert_string_equal(seen.deleted[1], "ns/p2");
    assert_string_equal(tg_reflector_rv(r), "20");
    server_stop(&sv);
    close_all(&loop, &c, &r);
}

static const struct step deleted_script[] = {
    {"GET /api/v1/pods?limit=500&resourceVersion=0 ",
     LIST("10", "", POD("p1", "5") "," POD("p2", "6"))},
    /* p1's DELETED object would not decode and names it by uid; p2's has no
     * spec; p9 is not cached: decoded as before, removes nothing */
    {"watch=1&allowWatchBookmarks=true&resourceVersion=10&",
     HDR EV("DELETED", BADPOD("p1", "11"))
         EV("DELETED", "{\"metadata\":{\"name\":\"p2\",\"namespace\":\"ns\",\"uid\":\"u-p2\","
                       "\"resourceVersion\":\"12\"}}")
         EV("DELETED", POD("p9", "13"))},
    {"resourceVersion=13&", NULL},
};

/* Issue 21: a DELETED event of a cached object removes it by the name (or
 * uid) the event gives, without decoding the object: the handlers get the
 * cached version; an object the decoder would refuse is no decode error. */
static void deleted_events_are_not_decoded(void **s)
{
    (void)s;
    struct server sv;
    uv_loop_t loop;
    struct tg_client *c;
    struct seen seen = {0};
    struct tg_reflector *r = pod_reflector_run(&sv, deleted_script, 3, &loop, &c, &seen);
    assert_int_equal(sv.mismatch, 0);
    const struct tg_reflector_stats *st = tg_reflector_stats(r);
    assert_int_equal(st->decode_errors, 0);
    assert_int_equal(decode_failures, 0);
    assert_int_equal(st->deletes_undecoded, 2);
    assert_int_equal(st->deletes, 2);
    assert_int_equal(st->relists, 0);
    assert_int_equal(seen.deletes, 2);
    assert_string_equal(seen.deleted[0], "ns/p1");
    assert_string_equal(seen.deleted[1], "ns/p2");
    assert_int_equal(tg_store_len(tg_reflector_store(r)), 0);
    assert_string_equal(tg_reflector_rv(r), "13");
    server_stop(&sv);
    close_all(&loop, &c, &r);
}

#define OK201 "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"

static const struct step writes[] = {
    {"POST /w", OK201}, {"POST /w", OK201}, {"POST /w", OK201}, {"POST /w", OK201},
    {"POST /w", OK201}, {"POST /w", OK201}, {"POST /w", OK201}, {"POST /w", OK201},
};

struct wdone {
    int n;
    uint64_t at[8];
    uv_loop_t *loop;
};

static void on_wdone(void *ud, const struct tg_resp *r)
{
    struct wdone *d = ud;
    assert_int_equal(r->err, 0);
    assert_int_equal(r->status, 201);
    uv_update_time(d->loop);
    d->at[d->n++] = uv_now(d->loop);
}

static void write_rate_limit(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, writes, 8);
    uv_loop_t loop;
    struct tg_client_opts co = {.qps = 10, .burst = 3};
    struct tg_client *c = client_on(&loop, &sv, &co, 1);
    struct wdone d = {.loop = &loop};
    uv_update_time(&loop);
    uint64_t t0 = uv_now(&loop);
    for (int i = 0; i < 8; i++) {
        struct tg_req_opts o = {.method = "POST", .path = "/w", .body = "{}", .is_write = 1,
                                .on_done = on_wdone, .ud = &d};
        assert_int_equal(tg_client_request(c, &o, NULL), 0);
    }
    while (d.n < 8)
        uv_run(&loop, UV_RUN_ONCE);
    /* burst 3 at once, then 5 more at 10/s: the 8th no earlier than ~500 ms */
    printf("# 8 writes at qps 10 burst 3 took %llu ms\n", (unsigned long long)(d.at[7] - t0));
    assert_true(d.at[2] - t0 < 200);
    assert_true(d.at[7] - t0 >= 450);
    assert_true(d.at[7] - t0 < 2000);
    assert_true(tg_client_stats(c)->writes_delayed >= 5);
    server_stop(&sv);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- background writes ----------------------------------------------------- */

/* the second part's order is libcurl's: any of its 11 requests may come first */
static const struct step bg_steps[] = {
    {"POST /w", OK201}, {"POST /w", OK201}, {"POST /w", OK201}, {"POST /ev", OK201},
    {"POST /ev", OK201}, {"POST /", OK201}, {"POST /", OK201}, {"POST /", OK201},
    {"POST /", OK201},  {"POST /", OK201},  {"POST /", OK201},  {"POST /", OK201},
    {"POST /", OK201},  {"POST /", OK201},  {"POST /", OK201},  {"POST /", OK201},
};

struct bgdone {
    int n;
};

static void on_bg_done(void *ud, const struct tg_resp *r)
{
    struct bgdone *d = ud;
    assert_int_equal(r->err, 0);
    d->n++;
}

static void bg_queue(struct tg_client *c, struct bgdone *d, const char *path, int background)
{
    struct tg_req_opts o = {.method = "POST", .path = path, .body = "{}", .is_write = !background,
                            .background = background, .on_done = on_bg_done, .ud = d};
    assert_int_equal(tg_client_request(c, &o, NULL), 0);
}

/* Events (background writes) queued before three writes still go after
 * them; while a write runs at most 4 of them run; none is lost; a clean
 * shutdown counts them as pending until they are written. */
static void background_writes_wait(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, bg_steps, 16);
    uv_loop_t loop;
    /* order: burst 3, then a token every 200 ms; 2 Events queued first */
    struct tg_client_opts co = {.qps = 5, .burst = 3};
    struct tg_client *c = client_on(&loop, &sv, &co, 1);
    struct bgdone d = {0};
    bg_queue(c, &d, "/ev", 1);
    bg_queue(c, &d, "/ev", 1);
    for (int i = 0; i < 3; i++)
        bg_queue(c, &d, "/w", 0);
    assert_int_equal(tg_client_writes_pending(c), 5);
    while (!tg_client_stats(c)->requests)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(tg_client_stats(c)->requests, 3); /* the writes took the burst */
    while (d.n < 5)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(tg_client_writes_pending(c), 0);
    tg_client_free(&c);
    /* without a limiter: 4 Events beside a write, then the rest at once */
    c = client_on(&loop, &sv, NULL, 0);
    struct bgdone d2 = {0};
    for (int i = 0; i < 10; i++)
        bg_queue(c, &d2, "/ev", 1);
    bg_queue(c, &d2, "/w", 0);
    while (!tg_client_stats(c)->requests)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(tg_client_stats(c)->requests, 5);
    assert_int_equal(tg_client_writes_pending(c), 11);
    while (d2.n < 11)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(tg_client_stats(c)->requests, 11);
    server_stop(&sv);
    for (int i = 0; i < 16; i++)
        printf("# request %d: %s\n", i, sv.paths[i]);
    assert_int_equal(sv.mismatch, 0); /* the 3 writes came first */
    assert_int_equal(sv.at, 16);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- the Lease's lane and the leader-only fence ---------------------------- */

struct lane {
    int n, err[64];
    long status[64];
    const char *what[64];
    uint64_t at[64];
    uv_loop_t *loop;
};

struct lane_req {
    struct lane *l;
    const char *what;
};

static void on_lane_done(void *ud, const struct tg_resp *r)
{
    struct lane_req *q = ud;
    struct lane *l = q->l;
    uv_update_time(l->loop);
    l->what[l->n] = q->what;
    l->err[l->n] = r->err;
    l->status[l->n] = r->status;
    l->at[l->n++] = uv_now(l->loop);
}

static void lane_queue(struct tg_client *c, struct lane_req *q, const char *method, const char *path,
                       int urgent, int leader_only)
{
    struct tg_req_opts o = {.method = method, .path = path, .body = "{}", .is_write = 1,
                            .urgent = urgent, .leader_only = leader_only, .on_done = on_lane_done,
                            .ud = q};
    assert_int_equal(tg_client_request(c, &o, NULL), 0);
}

static const struct step lane_steps[] = {
    {"POST /", OK201}, {"POST /", OK201}, {"POST /", OK201}, {"POST /", OK201},
    {"POST /", OK201}, {"POST /", OK201}, {"POST /", OK201},
};

/* The Lease's requests (urgent) do not wait behind queued writes and the
 * token bucket: with 6 writes queued at qps 2 (2.5 s of queue), the renewal
 * is answered at once. */
static void lease_lane_skips_the_queue(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, lane_steps, 7);
    uv_loop_t loop;
    struct tg_client_opts co = {.qps = 2, .burst = 1};
    struct tg_client *c = client_on(&loop, &sv, &co, 1);
    struct lane l = {.loop = &loop};
    struct lane_req w = {&l, "write"}, u = {&l, "lease"};
    uv_update_time(&loop);
    uint64_t t0 = uv_now(&loop);
    for (int i = 0; i < 6; i++)
        lane_queue(c, &w, "POST", "/w", 0, 0);
    lane_queue(c, &u, "POST", "/lease", 1, 0);
    while (l.n < 7)
        uv_run(&loop, UV_RUN_ONCE);
    int at = -1;
    for (int i = 0; i < 7; i++) {
        assert_int_equal(l.err[i], 0);
        if (!strcmp(l.what[i], "lease"))
            at = i;
    }
    printf("# the renewal was answered after %llu ms, %d write(s) before it; the writes took %llu ms\n",
           (unsigned long long)(l.at[at] - t0), at, (unsigned long long)(l.at[6] - t0));
    assert_true(at >= 0 && at <= 1);          /* at most the one write of the burst first */
    assert_true(l.at[at] - t0 < 400);
    assert_true(l.at[6] - t0 >= 2000);        /* the writes still paced by the bucket */
    server_stop(&sv);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static const struct step fence_steps[] = {
    {"POST /plain", OK201}, {"POST /lease", OK201}, {"POST /bind", NULL},
};

/* Past the fence, leader-only writes queued are never sent and one running is
 * aborted; both finish TG_EFENCED with status 0. Other writes and the Lease's
 * requests go on. */
static void fence_drops_leader_writes(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, fence_steps, 3);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    struct lane l = {.loop = &loop};
    struct lane_req b = {&l, "bind"}, w = {&l, "plain"}, u = {&l, "lease"};
    assert_false(tg_client_fenced(c));
    tg_client_fence(c, 0);
    assert_true(tg_client_fenced(c));
    for (int i = 0; i < 3; i++)
        lane_queue(c, &b, "POST", "/bind", 0, 1);
    lane_queue(c, &w, "POST", "/plain", 0, 0);
    while (l.n < 4)
        uv_run(&loop, UV_RUN_ONCE);
    lane_queue(c, &u, "POST", "/lease", 1, 0);
    while (l.n < 5)
        uv_run(&loop, UV_RUN_ONCE);
    int fenced = 0;
    for (int i = 0; i < 5; i++) {
        if (!strcmp(l.what[i], "bind")) {
            assert_int_equal(l.err[i], TG_EFENCED);
            assert_int_equal(l.status[i], 0);
            fenced++;
        } else {
            assert_int_equal(l.err[i], 0);
        }
    }
    assert_int_equal(fenced, 3);
    assert_int_equal(sv.at, 2); /* no Binding reached the server */
    /* the fence lifted, a bind runs (the server holds it); lowered again: aborted */
    tg_client_fence(c, tg_clock_mono_ms() + 3600000);
    assert_false(tg_client_fenced(c));
    lane_queue(c, &b, "POST", "/bind", 0, 1);
    while (sv.at < 3)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(l.n, 5);
    assert_int_equal(tg_client_writes_pending(c), 1);
    tg_client_fence(c, tg_clock_mono_ms());
    while (l.n < 6)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(l.err[5], TG_EFENCED);
    assert_int_equal(l.status[5], 0);
    assert_int_equal(tg_client_writes_pending(c), 0);
    assert_true(tg_client_stats(c)->fenced == 4);
    assert_int_equal(sv.mismatch, 0);
    server_stop(&sv);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- the libcurl trace ------------------------------------------------------ */

static const struct step one_get[] = {
    {"GET /api/v1/nodes ", HDR "{\"kind\":\"NodeList\",\"items\":[]}"},
};

/* TOPOGANG_CURL_VERBOSE=1 traces requests on stderr, without the token. */
static void verbose_trace_redacts_token(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, one_get, 1);
    char url[64], path[] = "/tmp/tg-trace-XXXXXX", log[16384];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", sv.port);
    struct tg_kconf conf = {.server = url, .token = "s3cr3t-bearer-t0ken"};
    uv_loop_t loop;
    uv_loop_init(&loop);
    setenv("TOPOGANG_CURL_VERBOSE", "1", 1);
    struct tg_client *c;
    assert_int_equal(tg_client_new(&loop, &conf, NULL, &c), 0);
    unsetenv("TOPOGANG_CURL_VERBOSE");
    int fd = mkstemp(path), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    struct tg_req_opts q = {.path = "/api/v1/nodes", .timeout_ms = 10000};
    struct tg_resp r;
    char *body = NULL;
    int rc = tg_client_do(c, &q, &r, &body);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, log, sizeof log - 1, 0);
    log[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    assert_int_equal(rc, 0);
    free(body);
    printf("# trace:\n%s", log);
    assert_non_null(strstr(log, "> GET /api/v1/nodes"));       /* it is a trace */
    assert_non_null(strstr(log, "> Authorization: Bearer [redacted]"));
    assert_null(strstr(log, "s3cr3t-bearer-t0ken"));
    assert_non_null(strstr(log, "< HTTP/1.1 200 OK"));
    server_stop(&sv);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Past 32 Events queued they no longer wait behind a write: those past
 * 32 go beside it (256 at most in flight), so a burst's Events keep pace
 * with its Bindings (docs/bench-sched.md). 200 queued: the 168 past 32 start
 * at once (64 when at most 64 went); 40 queued: the 8 past 32 (4 at a
 * backlog of 128). */
static void background_backlog_keeps_pace_at(int nev, int started)
{
    enum { NEV = 200 };
    static struct step steps[NEV + 1];
    for (int i = 0; i <= NEV; i++)
        steps[i] = (struct step){"POST /", OK201};
    struct server sv;
    server_start(&sv, steps, NEV + 1);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    struct bgdone d = {0};
    for (int i = 0; i < nev; i++)
        bg_queue(c, &d, "/ev", 1);
    bg_queue(c, &d, "/w", 0);
    while (!tg_client_stats(c)->requests)
        uv_run(&loop, UV_RUN_ONCE);
    printf("# %llu of %d Events and a write started at once\n",
           (unsigned long long)tg_client_stats(c)->requests - 1, nev);
    assert_int_equal(tg_client_stats(c)->requests, 1 + started);
    while (d.n < nev + 1)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(tg_client_writes_pending(c), 0);
    server_stop(&sv);
    assert_int_equal(sv.mismatch, 0);
    assert_int_equal(sv.at, nev + 1);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void background_backlog_keeps_pace(void **s)
{
    (void)s;
    background_backlog_keeps_pace_at(200, 168);
    background_backlog_keeps_pace_at(40, 8);
}

/* ---- pooled handles ---------------------------------------------------------- */

#define OK200 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"

static const struct step reuse_steps[] = {
    {"POST /a HTTP", OK201}, {"GET /b HTTP", OK200},   {"DELETE /c HTTP", OK200},
    {"PATCH /d HTTP", OK200}, {"GET /e HTTP", OK200},  {"POST /f HTTP", OK201},
};

/* One after the other, requests reuse one libcurl handle (the scheduler's
 * CPU per bind, docs/bench-sched.md), and a reused handle carries nothing
 * of the request before: a GET or DELETE after a POST has no body, each
 * method is its own. */
static void handles_are_reused(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, reuse_steps, 6);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    static const char *const method[] = {"POST", "GET", "DELETE", "PATCH", "GET", "POST"};
    static const char *const path[] = {"/a", "/b", "/c", "/d", "/e", "/f"};
    static const char *const body[] = {"{}", NULL, NULL, "{}", NULL, NULL};
    struct lane l = {.loop = &loop};
    struct lane_req q[6];
    for (int i = 0; i < 6; i++) {
        q[i] = (struct lane_req){&l, path[i]};
        struct tg_req_opts o = {.method = method[i], .path = path[i], .body = body[i],
                                .is_write = strcmp(method[i], "GET") != 0, .on_done = on_lane_done,
                                .ud = &q[i]};
        assert_int_equal(tg_client_request(c, &o, NULL), 0);
        while (l.n <= i)
            uv_run(&loop, UV_RUN_ONCE);
        assert_int_equal(l.err[i], 0);
    }
    server_stop(&sv);
    for (int i = 0; i < 6; i++)
        printf("# request %d: %s (Content-Type %d)\n", i, sv.paths[i], sv.has_ctype[i]);
    assert_int_equal(sv.mismatch, 0);
    assert_int_equal(sv.at, 6);
    for (int i = 0; i < 5; i++) /* (libcurl gives a POST without a body one of its own) */
        assert_int_equal(sv.has_ctype[i], body[i] != NULL);
    assert_int_equal(tg_client_stats(c)->requests, 6);
    assert_int_equal(tg_client_stats(c)->handles, 1);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- corked connections ------------------------------------------------------ */

#define NCORK 12
static const struct step cork_steps[] = {
    {"PUT /lease HTTP", OK200}, {"POST /k HTTP", OK201}, {"POST /k HTTP", OK201},
    {"POST /k HTTP", OK201},    {"POST /k HTTP", OK201}, {"POST /k HTTP", OK201},
    {"POST /k HTTP", OK201},    {"POST /k HTTP", OK201}, {"POST /k HTTP", OK201},
    {"POST /k HTTP", OK201},    {"POST /k HTTP", OK201}, {"POST /k HTTP", OK201},
    {"POST /k HTTP", OK201},
};

/* Shared connections are corked (TCP_CORK: one pass of libcurl's frames leave
 * together) and uncorked after every pass, so nothing waits for the kernel's
 * 200 ms cork timer: NCORK requests one after the other, each on a new
 * connection here (Connection: close), take well under NCORK x 200 ms. The
 * Lease's own connection is not corked. */
static void corked_connections_do_not_wait(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, cork_steps, NCORK + 1);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    struct lane l = {.loop = &loop};
    struct lane_req q[NCORK + 1];
    q[0] = (struct lane_req){&l, "/lease"};
    lane_queue(c, &q[0], "PUT", "/lease", 1, 0);
    while (l.n < 1)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(l.err[0], 0);
    assert_int_equal(tg_client_stats(c)->corked, 0);
    int64_t t0 = tg_clock_mono_ms();
    for (int i = 1; i <= NCORK; i++) {
        q[i] = (struct lane_req){&l, "/k"};
        struct tg_req_opts o = {.method = "POST", .path = "/k", .body = "{}", .is_write = 1,
                                .on_done = on_lane_done, .ud = &q[i]};
        assert_int_equal(tg_client_request(c, &o, NULL), 0);
        while (l.n <= i)
            uv_run(&loop, UV_RUN_ONCE);
        assert_int_equal(l.err[i], 0);
    }
    int64_t dt = tg_clock_mono_ms() - t0;
    printf("# %d requests on corked connections in %lld ms\n", NCORK, (long long)dt);
    server_stop(&sv);
    assert_int_equal(sv.mismatch, 0);
    assert_int_equal(sv.at, NCORK + 1);
    assert_int_equal(tg_client_stats(c)->corked, NCORK);
    assert_true(dt < NCORK * 200 / 2);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- Events retried --------------------------------------------------------- */

#define EVPOST "POST /apis/events.k8s.io/v1/namespaces/ns/events"
#define ST503 "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
#define ST400                                                                                 \
    "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 43\r\n"    \
    "Connection: close\r\n\r\n{\"reason\":\"BadRequest\",\"message\":\"bad note\"}"
#define ST409                                                                                 \
    "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 49\r\n"       \
    "Connection: close\r\n\r\n{\"reason\":\"AlreadyExists\",\"message\":\"exists\"}"

struct evdone {
    int n, err;
    long status;
    uint64_t at;
    uv_loop_t *loop;
};

static void on_ev_done(void *ud, const struct tg_resp *r)
{
    struct evdone *d = ud;
    d->n++;
    d->err = r->err;
    d->status = r->status;
    uv_update_time(d->loop);
    d->at = uv_now(d->loop);
}

static void post_event(struct tg_client *c, struct evdone *d, int background)
{
    struct tg_event_spec e = {.ns = "ns", .kind = "Pod", .name = "p0", .type = "Normal",
                              .reason = "Scheduled", .note = "bound", .background = background};
    assert_int_equal(tg_api_create_event(c, &e, on_ev_done, d), 0);
}

/* An Event the server refuses with 503, then whose connection it closes
 * without an answer, is tried again after 250 ms and 500 ms and lands on
 * the third try; the caller hears once, of the landing; while it waits it
 * is a pending write (what SIGTERM waits for). */
static const struct step ev_retry_steps[] = {{EVPOST, ST503}, {EVPOST, ""}, {EVPOST, OK201}};

static void event_refused_with_503_is_retried(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, ev_retry_steps, 3);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    struct evdone d = {.loop = &loop};
    uv_update_time(&loop);
    uint64_t t0 = uv_now(&loop);
    post_event(c, &d, 1);
    while (tg_client_stats(c)->retries < 1 && !d.n)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(d.n, 0); /* not told of the 503: it waits for another try */
    assert_int_equal(tg_client_writes_pending(c), 1);
    while (!d.n)
        uv_run(&loop, UV_RUN_ONCE);
    printf("# landed on try %d after %llu ms\n", sv.at, (unsigned long long)(d.at - t0));
    assert_int_equal(d.err, 0);
    assert_int_equal(d.status, 201);
    assert_int_equal(sv.at, 3);
    assert_int_equal(sv.mismatch, 0);
    assert_true(d.at - t0 >= 750);
    assert_int_equal(tg_client_stats(c)->retries, 2);
    assert_int_equal(tg_client_stats(c)->dropped, 0);
    assert_int_equal(tg_client_writes_pending(c), 0);
    server_stop(&sv);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A 400 is the server's verdict on the Event: not tried again, counted as
 * dropped. A 409 AlreadyExists after a 503 means an earlier try landed:
 * success. */
static const struct step ev_4xx_steps[] = {{EVPOST, ST400}, {EVPOST, ST503}, {EVPOST, ST409}};

static void event_not_retried_after_4xx(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, ev_4xx_steps, 3);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    struct evdone d = {.loop = &loop};
    post_event(c, &d, 0);
    while (!d.n)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(d.err, TG_EHTTP);
    assert_int_equal(d.status, 400);
    assert_int_equal(tg_client_stats(c)->dropped, 1);
    assert_int_equal(tg_client_stats(c)->retries, 0);
    assert_int_equal(tg_client_writes_pending(c), 0);
    struct evdone d2 = {.loop = &loop};
    post_event(c, &d2, 0);
    while (!d2.n)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(d2.err, 0);
    assert_int_equal(tg_client_stats(c)->retries, 1);
    assert_int_equal(tg_client_stats(c)->dropped, 1);
    server_stop(&sv);
    assert_int_equal(sv.at, 3);
    assert_int_equal(sv.mismatch, 0);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Events held are capped: past 20,000 a new one is refused with TG_EAGAIN
 * and counted as dropped; one that leaves makes room again. */
static void events_held_are_capped(void **s)
{
    (void)s;
    struct server sv;
    server_start(&sv, NULL, 0);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    enum { CAP = 20000 };
    static struct evdone d[CAP + 1];
    static struct tg_req *rq[2];
    for (int i = 0; i < CAP; i++) {
        struct tg_req_opts o = {.method = "POST", .path = "/ev", .body = "{}", .background = 1,
                                .retry = 1, .on_done = on_ev_done, .ud = &d[i]};
        assert_int_equal(tg_client_request(c, &o, i < 2 ? &rq[i] : NULL), 0);
    }
    struct tg_event_spec e = {.ns = "ns", .kind = "Pod", .name = "p0", .type = "Normal",
                              .reason = "Scheduled", .note = "bound", .background = 1};
    assert_int_equal(tg_api_create_event(c, &e, on_ev_done, &d[CAP]), TG_EAGAIN);
    assert_int_equal(tg_client_stats(c)->dropped, 1);
    tg_client_cancel(rq[0]);
    assert_int_equal(tg_api_create_event(c, &e, on_ev_done, &d[CAP]), 0);
    assert_int_equal(tg_client_stats(c)->dropped, 1);
    assert_int_equal(tg_client_writes_pending(c), CAP);
    server_stop(&sv);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* After a 429 (the server's priority level is full) to a lone write, the
 * writes' window is 1 and Events take half of it, at least 1, beside a
 * write however many wait (68 of 100 otherwise, 4 when a 429 held them to
 * BG_INFLIGHT for the Retry-After); all are written. */
#define ST429 "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n" \
              "Connection: close\r\n\r\n{}"

static void throttled_events_hold_back(void **s)
{
    (void)s;
    enum { NEV = 100 };
    static struct step steps[2 * NEV + 4];
    steps[0] = (struct step){"POST /w0", ST429};
    for (int i = 1; i < 2 * NEV + 4; i++)
        steps[i] = (struct step){"POST /", OK201};
    struct server sv;
    server_start(&sv, steps, 2 * NEV + 4);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    struct evdone w = {.loop = &loop};
    struct tg_req_opts o = {.method = "POST", .path = "/w0", .body = "{}", .is_write = 1,
                            .on_done = on_ev_done, .ud = &w};
    assert_int_equal(tg_client_request(c, &o, NULL), 0);
    while (!w.n)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(w.status, 429);
    struct bgdone d = {0};
    for (int i = 0; i < NEV; i++)
        bg_queue(c, &d, "/ev", 1);
    bg_queue(c, &d, "/w", 0);
    uint64_t r0 = tg_client_stats(c)->requests;
    while (tg_client_stats(c)->requests == r0)
        uv_run(&loop, UV_RUN_ONCE);
    printf("# throttled: %llu of %d Events and a write started at once\n",
           (unsigned long long)(tg_client_stats(c)->requests - r0 - 1), NEV);
    assert_int_equal(tg_client_stats(c)->requests - r0, 1 + 1);
    assert_int_equal(tg_client_stats(c)->throttled, 1);
    while (d.n < NEV + 1)
        uv_run(&loop, UV_RUN_ONCE);
    server_stop(&sv);
    assert_int_equal(sv.mismatch, 0);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A wave of 16 writes in flight, the first two answered 429: the writes'
 * window halves once (to 8: the second 429 was sent before the cut), the 14
 * others are answered at once (no write waits for the Retry-After), and
 * grow it back by one (9: one per window of successes past the cut). The
 * next wave goes 9 at a time, not 20. */
static void throttled_write_halves_the_window_once(void **s)
{
    (void)s;
    enum { N1 = 16, N2 = 20 };
    static struct step steps[N1 + N2];
    for (int i = 0; i < N1 + N2; i++)
        steps[i] = (struct step){"POST /", i < 2 ? ST429 : OK201};
    struct server sv;
    server_start(&sv, steps, N1 + N2);
    uv_loop_t loop;
    struct tg_client *c = client_on(&loop, &sv, NULL, 1);
    struct lane l = {.loop = &loop};
    struct lane_req q[N1 + N2];
    assert_int_equal(tg_client_stats(c)->write_window, 1024);
    for (int i = 0; i < N1; i++) {
        q[i] = (struct lane_req){&l, "/w"};
        lane_queue(c, &q[i], "POST", "/w", 0, 1);
    }
    while (!tg_client_stats(c)->requests)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(tg_client_stats(c)->requests, N1);
    while (l.n < N1)
        uv_run(&loop, UV_RUN_ONCE);
    int refused = 0;
    for (int i = 0; i < N1; i++) {
        refused += l.status[i] == 429;
        assert_true(l.status[i] == 429 || l.status[i] == 201);
        assert_true(l.at[i] - l.at[0] < 900); /* none waited for the Retry-After (1 s) */
    }
    assert_int_equal(refused, 2);
    assert_int_equal(tg_client_stats(c)->throttled, 2);
    printf("# window after the wave: %u\n", tg_client_stats(c)->write_window);
    assert_int_equal(tg_client_stats(c)->write_window, 9);
    uint64_t r0 = tg_client_stats(c)->requests;
    for (int i = N1; i < N1 + N2; i++) {
        q[i] = (struct lane_req){&l, "/w"};
        lane_queue(c, &q[i], "POST", "/w", 0, 1);
    }
    while (tg_client_stats(c)->requests == r0)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(tg_client_stats(c)->requests - r0, 9);
    while (l.n < N1 + N2)
        uv_run(&loop, UV_RUN_ONCE);
    server_stop(&sv);
    assert_int_equal(sv.mismatch, 0);
    assert_int_equal(sv.at, N1 + N2);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    /* the scripted server may still be writing when the client, as it
     * should, closes a watch it found malformed: an EPIPE for that write,
     * not a signal that ends the test (libcurl and libmicrohttpd send with
     * MSG_NOSIGNAL for the same reason) */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(faults_restart_and_relist),
        cmocka_unit_test(undecodable_events_drop_the_cached_object),
        cmocka_unit_test(deleted_events_are_not_decoded),
        cmocka_unit_test(write_rate_limit),
        cmocka_unit_test(background_writes_wait),
        cmocka_unit_test(lease_lane_skips_the_queue),
        cmocka_unit_test(fence_drops_leader_writes),
        cmocka_unit_test(verbose_trace_redacts_token),
        cmocka_unit_test(handles_are_reused),
        cmocka_unit_test(background_backlog_keeps_pace),
        cmocka_unit_test(throttled_events_hold_back),
        cmocka_unit_test(throttled_write_halves_the_window_once),
        cmocka_unit_test(corked_connections_do_not_wait),
        cmocka_unit_test(event_refused_with_503_is_retried),
        cmocka_unit_test(event_not_retried_after_4xx),
        cmocka_unit_test(events_held_are_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
