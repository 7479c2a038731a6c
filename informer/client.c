/* Kubernetes API HTTP client on libcurl multi + libuv (see client.h).
 *
 * Request life: tg_client_request() queues it (q_urgent for the Lease,
 * q_reads, q_writes, or q_bg for background writes) and arms the zero-delay
 * `kick` timer; run_queue() builds the easy handle (fresh token) and adds it
 * to the multi handle, urgent ones first (URGENT_INFLIGHT at most), writes only
 * while the token bucket has tokens (else the `limiter` timer fires when one
 * is due), background writes only after every queued write and while fewer
 * of them run than bg_cap() allows; leader-only writes past the fence are
 * finished with TG_EFENCED instead (fence_check). curl reports
 * sockets and timeouts through on_socket/on_curl_timer; finished transfers
 * are reaped in check_done(), which calls on_done and frees the request.
 * Canceled running requests stay in the running list until run_queue() or
 * check_done() removes them, so no curl call happens inside a curl callback. */
#include "informer/client.h"
#include "informer/h2.h"
#include "informer/trace.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "util/aimd.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/strbuf.h"

enum req_state { RQ_QUEUED, RQ_RUNNING, RQ_FINISHING, RQ_WAITING /* in q_retry */ };

/* Idle easy handles kept for the next request: a handle set up once (TLS
 * material, keepalive, user agent) costs a fraction of curl_easy_init, the
 * setopts and curl_easy_cleanup per request (docs/bench-sched.md). */
#define POOL_MAX 128

/* A request header list shared by the requests that send the same headers
 * (built once per bearer token, not per request). */
struct hdrs {
    int refs;
    struct curl_slist *l;
};

struct tg_req {
    struct tg_client *c;
    TAILQ_ENTRY(tg_req) link;       /* in one of the client's lists */
    CURL *easy;
    struct curl_slist *hdrs;        /* this request's own list (a custom Content-Type) */
    struct hdrs *shared;            /* or a shared one */
    char *method, *path, *body, *ctype;
    size_t body_len;
    long timeout_ms;
    tg_chunk_fn on_chunk;
    tg_done_fn on_done;
    void *ud;
    struct tg_sb resp;
    long status;
    long retry_after_s;     /* the answer's Retry-After, 0 none */
    int state, canceled, is_write, background, urgent, leader_only, abort_err;
    int retry, tries;       /* a retried write (tg_req_opts.retry); tries made so far */
    int throttles;          /* of its tries, those answered 429 (not counted in tries) */
    uint64_t born_ms;       /* uv_now when it was queued */
    uint64_t seq;           /* its lane's window's sequence number when sent (tg_aimd_send) */
    uint64_t due_ms;        /* RQ_WAITING: when it goes back to its queue (uv_now) */
    uint64_t started_ms;    /* uv_now when it started (its timeout on the direct path) */
    uint64_t rx_ms;         /* on the direct path: uv_now when it last received something */
    int32_t sid;            /* > 0: running on the direct HTTP/2 path (h2.c), no easy handle */
    char errbuf[CURL_ERROR_SIZE];
};

TAILQ_HEAD(rlist, tg_req);

struct sock {
    uv_poll_t poll;
    struct tg_client *c;
    curl_socket_t fd;
    int corked;                     /* TCP_CORK set (see uncork) */
    LIST_ENTRY(sock) link;          /* on the client's socks */
};

struct tg_client {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t curl_timer, kick, limiter, sweep;
    int open_handles, closing;
    struct tg_kconf conf;
    char *ua;
    char *token;
    struct timespec tok_mtime;
    off_t tok_size;
    ino_t tok_ino;
    double qps, tokens;
    int burst;
    uint64_t refill_ms;
    struct rlist q_urgent, q_reads, q_writes, q_bg, running;
    struct rlist q_retry;           /* retried writes waiting out their backoff, by due_ms */
    uv_timer_t retry_timer;         /* fires at q_retry's head's due_ms */
    uint32_t retry_held;            /* retried writes held: queued, running or waiting */
    uint32_t retry_waiting;         /* in q_retry */
    int bg_running;                 /* background writes running */
    int w_running;                  /* other writes running */
    int u_running;                  /* urgent requests running */
    uint32_t lo_queued, lo_running; /* leader-only writes queued, running */
    int64_t fence_ms;               /* leader-only writes go while mono ms < this */
    uint32_t bg_queued;             /* in q_bg */
    struct tg_aimd w_win;           /* the writes' congestion window (WRITE_WINDOW_MAX) */
    struct tg_aimd bg_win;          /* the background writes' (BG_INFLIGHT_MAX) */
    LIST_HEAD(, sock) socks;
    curl_socket_t orphans[16];      /* sockets that could not be watched (out of memory): */
    int norphans;                   /* the sweep drives them until they can be */
    struct tg_client_stats stats;
    int verbose;                    /* TOPOGANG_CURL_VERBOSE=1: libcurl traces on stderr */
    int in_sweep;
    CURL *pool[POOL_MAX];           /* idle easy handles, set up (see easy_common) */
    int npool;
    struct tg_client_opts tune;     /* the HTTP tuning (user_agent not kept) */
    struct hdrs *h_get, *h_json;    /* shared header lists for the current token */
    uint64_t tok_gen, h_gen;        /* token changes; the one they were built with */
    struct tg__h2 *h2;              /* the direct HTTP/2 path for POST writes and GETs, or NULL */
    uint64_t h2_checked_ms;         /* its timeouts were last checked (uv_now) */
};

#define COMP "client"
/* Background writes (Events) in flight at most while other writes run or
 * wait: a few Events queue behind the writes that decide placement
 * (Bindings, status) instead of taking the apiserver's time from them. With
 * no other write about, or past BG_BACKLOG queued, they go up to
 * BG_INFLIGHT_MAX at a time: the backlog stays short, so Events keep pace
 * with the Bindings. The apiserver takes longer over an Event than over a
 * Binding, so at the Bindings' 64 in flight Events fall behind: with 64 at
 * most (and 128 queued) 150-960 of a 5,000-pod burst's Events were still
 * unwritten at its last Binding, the last 0.8-2.0 s after it; with 256 (and
 * 32) 36-102, the last 0.1-0.5 s after it (docs/bench-sched.md). */
#define BG_INFLIGHT 4
#define BG_INFLIGHT_MAX 256
#define BG_BACKLOG 32
/* Congestion windows (util/aimd.h), one per lane: writes (Bindings, status,
 * deletes) and background writes (Events). A 429 or 503 answer (API Priority
 * and Fairness: this client's priority level is full) halves its lane's
 * window, once per window; a success grows it again. Only the refused
 * request waits (its caller's Retry-After, or the retried write's backoff):
 * the rest of the lane keeps going at the reduced window. While the writes'
 * window is cut and writes run or wait, Events take at most half of it
 * (at least one): they never starve the Bindings, and still all go. */
#define WRITE_WINDOW_MAX 1024
/* Retried writes (tg_req_opts.retry: Events). A try that fails with 429,
 * 5xx, a broken or refused connection or a timeout is made again after
 * RETRY_BASE_MS, doubling up to RETRY_MAX_MS (or the answer's Retry-After
 * when longer, at most RETRY_AFTER_MAX_MS), RETRY_TRIES tries in all (24 s of
 * backoff: within client-go's event sink's 12 tries 10 s apart); past
 * RETRY_HELD_MAX held at once a new one is refused: both counted in
 * stats.dropped and logged. */
#define RETRY_TRIES 8
#define RETRY_BASE_MS 250
#define RETRY_MAX_MS 8000
#define RETRY_AFTER_MAX_MS 30000
#define RETRY_HELD_MAX 20000
/* A 429 is not a failed try (the server is up, asking to come back later):
 * a retried write answered 429 keeps trying, at its Retry-After (else the
 * doubling backoff) plus 0-20% jitter, for up to RETRY_THROTTLED_MAX_MS
 * from when it was queued before its tries count again. */
#define RETRY_THROTTLED_MAX_MS 600000
/* Urgent requests (the Lease) running at once: the elector has one at a
 * time; the bound keeps a misuse from opening connections without end. */
#define URGENT_INFLIGHT 4

static void check_done(struct tg_client *c);
static void kick(struct tg_client *c);

/* ---- lists ------------------------------------------------------------ */

static void rl_push(struct rlist *l, struct tg_req *r)
{
    TAILQ_INSERT_TAIL(l, r, link);
}

static void rl_remove(struct rlist *l, struct tg_req *r)
{
    TAILQ_REMOVE(l, r, link);
}

/* How many background writes may run now. */
static int bg_cap(const struct tg_client *c)
{
    int busy = c->w_running || TAILQ_FIRST(&c->q_writes);
    int cap = c->bg_queued > BG_BACKLOG || !busy ? BG_INFLIGHT_MAX : BG_INFLIGHT;
    int win = (int)tg_aimd_window(&c->bg_win);
    uint32_t w = tg_aimd_window(&c->w_win);
    if (busy && w < WRITE_WINDOW_MAX && win > (int)(w / 2 ? w / 2 : 1))
        win = (int)(w / 2 ? w / 2 : 1); /* writes throttled: Events take half their window */
    return win < cap ? win : cap;
}

/* The congestion window of r's lane, NULL for reads and the Lease. */
static struct tg_aimd *lane_window(struct tg_client *c, const struct tg_req *r)
{
    if (!r->is_write || r->urgent)
        return NULL;
    return r->background ? &c->bg_win : &c->w_win;
}

/* Whether another write of the writes lane may start (its window). */
static int writes_open(const struct tg_client *c)
{
    return (uint32_t)c->w_running < tg_aimd_window(&c->w_win);
}

/* r leaves the running list (finished or canceled). */
static void running_remove(struct tg_client *c, struct tg_req *r)
{
    rl_remove(&c->running, r);
    c->bg_running -= r->background;
    c->w_running -= r->is_write && !r->background && !r->urgent;
    c->u_running -= r->urgent;
    c->lo_running -= r->leader_only;
    if (r->urgent && TAILQ_FIRST(&c->q_urgent) && !c->closing)
        kick(c);
    if (r->is_write && c->bg_running < bg_cap(c) && TAILQ_FIRST(&c->q_bg) && !c->closing)
        kick(c);
    if (r->is_write && TAILQ_FIRST(&c->q_writes) && writes_open(c) && !c->closing)
        kick(c);
}

/* r's handle back to the pool (it left the multi handle before), or freed. */
static void easy_release(struct tg_req *r)
{
    struct tg_client *c = r->c;
    if (c && !r->urgent && !c->closing && c->npool < POOL_MAX) {
        /* nothing of r stays referenced by the idle handle */
        curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(r->easy, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(r->easy, CURLOPT_PRIVATE, NULL);
        curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, NULL);
        curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, NULL);
        c->pool[c->npool++] = r->easy;
    } else {
        curl_easy_cleanup(r->easy);
    }
    r->easy = NULL;
}

static void hdrs_unref(struct hdrs *h)
{
    if (h && --h->refs == 0) {
        curl_slist_free_all(h->l);
        free(h);
    }
}

static void req_free(struct tg_req *r)
{
    if (r->c)
        r->c->retry_held -= r->retry;
    if (r->easy)
        easy_release(r);
    curl_slist_free_all(r->hdrs);
    hdrs_unref(r->shared);
    free(r->method);
    free(r->path);
    free(r->body);
    free(r->ctype);
    tg_sb_free(&r->resp);
    free(r);
}

/* ---- handles and close callbacks ------------------------------------- */

static void maybe_free_client(struct tg_client *c)
{
    if (c->closing && c->open_handles == 0) {
        hdrs_unref(c->h_get);
        hdrs_unref(c->h_json);
        tg_kconf_free(&c->conf);
        free(c->ua);
        free(c->token);
        free(c);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    struct tg_client *c = h->data;
    c->open_handles--;
    maybe_free_client(c);
}

static void on_sock_closed(uv_handle_t *h)
{
    struct sock *k = h->data;
    struct tg_client *c = k->c;
    free(k);
    c->open_handles--;
    maybe_free_client(c);
}

static void sock_close(struct sock *k)
{
    uv_poll_stop(&k->poll);
    LIST_REMOVE(k, link);
    uv_close((uv_handle_t *)&k->poll, on_sock_closed);
}

/* ---- curl <-> uv glue -------------------------------------------------- */

static void fence_check(struct tg_client *c);
static void h2_timeouts(struct tg_client *c);

static void set_cork(curl_socket_t fd, int on)
{
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
}

/* Shared connections are corked (TCP_CORK) and uncorked after each pass of
 * libcurl: libcurl 7.88 with nghttp2 writes each HTTP/2 frame of each stream
 * with its own SSL_write and send, and on loopback every send runs the
 * receiver's TCP path too; corked, one pass's frames leave together, in as
 * few segments as they fill. The latency is unchanged (nothing waits past
 * the pass that wrote it); CPU per request -12% (`bench_informer http`,
 * docs/bench-sched.md). The Lease's own connections are never corked.
 * TOPOGANG_CURL_CORK=0 turns it off (diagnostics). */
static void uncork(struct tg_client *c)
{
    if (c->tune.cork < 0)
        return;
    struct sock *k;
    LIST_FOREACH(k, &c->socks, link)
        if (k->corked) {
            set_cork(k->fd, 0);
            set_cork(k->fd, 1);
        }
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct sock *k = h->data;
    struct tg_client *c = k->c;
    int flags = 0, running;
    curl_socket_t fd = k->fd;
    fence_check(c); /* may close k (a transfer removed): only fd is used after */
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    curl_multi_socket_action(c->multi, fd, flags, &running);
    check_done(c);
    uncork(c);
}

/* A socket libcurl uses but the loop cannot watch (add != 0), or one that
 * is watched or gone now (add == 0). */
static void orphan(struct tg_client *c, curl_socket_t fd, int add)
{
    int i = 0;
    while (i < c->norphans && c->orphans[i] != fd)
        i++;
    if (add && i == c->norphans && c->norphans < (int)(sizeof c->orphans / sizeof c->orphans[0]))
        c->orphans[c->norphans++] = fd;
    else if (!add && i < c->norphans)
        c->orphans[i] = c->orphans[--c->norphans];
}

/* Never returns -1: libcurl would mark the whole multi handle dead and
 * refuse every later request. A socket that cannot be watched (out of
 * memory) is driven by the sweep instead, and adopted at the next call. */
static int on_socket(CURL *e, curl_socket_t fd, int action, void *userp, void *socketp)
{
    struct tg_client *c = userp;
    struct sock *k = socketp;
    if (action == CURL_POLL_REMOVE) {
        orphan(c, fd, 0);
        if (k) {
            curl_multi_assign(c->multi, fd, NULL);
            sock_close(k);
        }
        return 0;
    }
    if (!k) {
        k = calloc(1, sizeof *k);
        if (k && uv_poll_init_socket(c->loop, &k->poll, fd) != 0) {
            free(k);
            k = NULL;
        }
        orphan(c, fd, !k);
        if (!k) {
            tg_warn(COMP, "socket %d cannot be watched (out of memory): polled every 200 ms", (int)fd);
            return 0;
        }
        k->c = c;
        k->fd = fd;
        struct tg_req *r = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
        if (c->tune.cork >= 0 && r && !r->urgent) {
            set_cork(fd, 1);
            k->corked = 1;
            c->stats.corked++;
        }
        k->poll.data = k;
        c->open_handles++;
        LIST_INSERT_HEAD(&c->socks, k, link);
        curl_multi_assign(c->multi, fd, k);
    }
    int ev = 0;
    if (action & CURL_POLL_IN)
        ev |= UV_READABLE;
    if (action & CURL_POLL_OUT)
        ev |= UV_WRITABLE;
    uv_poll_start(&k->poll, ev, on_poll);
    return 0;
}

/* Every 200 ms while transfers run: drive every transfer on every socket,
 * not only those libcurl associated with the socket that fired. With libcurl
 * 7.88 and several HTTP/2 streams on one connection, a stream whose
 * connection broke was sometimes never reported (seen when kube-apiserver is
 * SIGKILLed: the idle watch waited forever, tests/integration/test_gone.c);
 * the sweep completes it. Under load a few ordinary responses (about 1 in
 * 8,000 PATCHes in bench/informer) also complete only here, so the period
 * bounds that extra latency. stats.unstalled counts these. */
enum { STALL_S = 30 };  /* the default of tg_client_opts.stall_s */

static long stall_s(const struct tg_client *c)
{
    return c->tune.stall_s > 0 ? c->tune.stall_s : STALL_S;
}

static void on_sweep(uv_timer_t *t)
{
    struct tg_client *c = t->data;
    curl_socket_t fds[64];
    int n = 0, running;
    fence_check(c);
    h2_timeouts(c);
    if (!TAILQ_FIRST(&c->running))
        return;
    /* Acting as if each socket were readable runs every transfer on it; a
     * read finding nothing just gets EAGAIN. The list can change during the
     * calls, so the descriptors are copied first. */
    struct sock *k;
    LIST_FOREACH(k, &c->socks, link)
        if (n < 64)
            fds[n++] = k->fd;
    int watched = n;
    for (int i = 0; i < c->norphans && n < 64; i++)
        fds[n++] = c->orphans[i];
    for (int i = 0; i < n; i++)
        curl_multi_socket_action(c->multi, fds[i],
                                 CURL_CSELECT_IN | (i >= watched ? CURL_CSELECT_OUT : 0), &running);
    uint64_t before = c->stats.completed;
    c->in_sweep = 1;
    check_done(c);
    c->in_sweep = 0;
    uncork(c);
    c->stats.unstalled += c->stats.completed - before;
}

static void on_curl_timeout(uv_timer_t *t)
{
    struct tg_client *c = t->data;
    int running;
    fence_check(c);
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
    uncork(c);
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    struct tg_client *c = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&c->curl_timer);
    else
        uv_timer_start(&c->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

/* ---- token ------------------------------------------------------------ */

/* Re-reads the token file when it changed on disk; keeps the old token when
 * the file cannot be read (a rotation in progress). */
static void refresh_token(struct tg_client *c)
{
    if (!c->conf.token_file)
        return;
    struct stat st;
    if (stat(c->conf.token_file, &st) != 0)
        return;
    if (c->token && st.st_mtim.tv_sec == c->tok_mtime.tv_sec &&
        st.st_mtim.tv_nsec == c->tok_mtime.tv_nsec && st.st_size == c->tok_size &&
        st.st_ino == c->tok_ino)
        return;
    FILE *f = fopen(c->conf.token_file, "rb");
    if (!f)
        return;
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = 0;
    if (!n)
        return;
    char *t = strdup(buf);
    if (!t)
        return;
    free(c->token);
    c->token = t;
    c->tok_mtime = st.st_mtim;
    c->tok_size = st.st_size;
    c->tok_ino = st.st_ino;
    c->stats.token_reloads++;
    c->tok_gen++;
    tg_debug(COMP, "read bearer token from %s", c->conf.token_file);
}

/* ---- requests ---------------------------------------------------------- */

static size_t on_write(char *p, size_t sz, size_t n, void *ud)
{
    struct tg_req *r = ud;
    size_t len = sz * n;
    r->c->stats.bytes_in += len;
    if (r->canceled)
        return 0;
    if (!r->status)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->on_chunk && r->status >= 200 && r->status < 300) {
        int rc = r->on_chunk(r->ud, p, len);
        if (rc || r->canceled) {
            r->abort_err = rc < 0 ? rc : TG_ECANCELED;
            return 0;
        }
        return len;
    }
    tg_sb_putn(&r->resp, p, len);
    if (r->resp.oom) {
        r->abort_err = TG_ENOMEM;
        return 0;
    }
    return len;
}

/* libcurl 7.88 sets SSL_MODE_RELEASE_BUFFERS: OpenSSL then frees a
 * connection's 17 KiB read buffer whenever it is drained and allocates it
 * again on the next SSL_read, and each such allocation of a large chunk
 * makes glibc consolidate every small free chunk (cJSON's): 7.7% of the
 * scheduler's CPU in (a) of bench/sched/run under malloc_consolidate below
 * SSL_read (docs/bench-sched.md). The buffers are kept instead (a few
 * connections: tens of KiB). */
static CURLcode keep_ssl_buffers(CURL *e, void *ssl_ctx, void *ud)
{
    (void)e;
    (void)ud;
    SSL_CTX_clear_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    return CURLE_OK;
}

/* What every request of c sets alike, once per handle. */
static void easy_common(struct tg_client *c, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->ua);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, keep_ssl_buffers);
    const struct tg_client_opts *tu = &c->tune;
    if (tu->nodelay_off)
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 0L);
    if (tu->buffer_size)
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE, tu->buffer_size);
    if (tu->upload_buffer_size)
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, tu->upload_buffer_size);
    if (tu->no_sessionid_cache)
        curl_easy_setopt(e, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    if (c->verbose) {               /* the trace without the bearer token */
        curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, tg_trace_curl);
        curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
    }
    const struct tg_kconf *k = &c->conf;
    if (k->ca_data) {
        struct curl_blob b = {k->ca_data, k->ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    } else if (k->ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, k->ca_file);
    }
    if (k->cert_data) {
        struct curl_blob b = {k->cert_data, k->cert_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &b);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (k->cert_file) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, k->cert_file);
    }
    if (k->key_data) {
        struct curl_blob b = {k->key_data, k->key_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &b);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (k->key_file) {
        curl_easy_setopt(e, CURLOPT_SSLKEY, k->key_file);
    }
    if (k->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

/* Accept, the bearer token (when there is one) and Content-Type (when ctype
 * is not NULL); NULL when out of memory. */
static struct curl_slist *hdrs_build(const char *tok, const char *ctype)
{
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json"), *t;
    char *a = NULL;
    if (h && tok) {
        if (asprintf(&a, "Authorization: Bearer %s", tok) < 0)
            goto nomem;
        if (!(t = curl_slist_append(h, a)))
            goto nomem;
        h = t;
        free(a);
        a = NULL;
    }
    if (h && ctype) {
        if (asprintf(&a, "Content-Type: %s", ctype) < 0)
            goto nomem;
        if (!(t = curl_slist_append(h, a)))
            goto nomem;
        h = t;
        free(a);
    }
    return h;
nomem:
    free(a);
    curl_slist_free_all(h);
    return NULL;
}

static int req_setup(struct tg_client *c, struct tg_req *r)
{
    refresh_token(c);
    CURL *e = !r->urgent && c->npool ? c->pool[--c->npool] : NULL;
    if (!e) {
        if (!(e = curl_easy_init()))
            return TG_ENOMEM;
        easy_common(c, e);
        c->stats.handles++;
    }
    r->easy = e;
    struct tg_sb url = {0};
    tg_sb_puts(&url, c->conf.server);
    tg_sb_puts(&url, r->path);
    if (url.oom) {
        tg_sb_free(&url);
        return TG_ENOMEM;
    }
    curl_easy_setopt(e, CURLOPT_URL, url.s);
    tg_sb_free(&url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    /* urgent: a connection of its own, never a stream queued behind bulk
     * ones (and its handle is never pooled) */
    int h1 = r->is_write && c->tune.writes_http == 1;
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     h1 ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, r->urgent || h1 ? 0L : 1L);
    if (r->urgent) {
        curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    }
    /* A request (not a watch, which may idle) that receives nothing for
     * STALL_S seconds fails with TG_ETIMEOUT and its caller retries: with
     * libcurl 7.88 an HTTP/2 stream can stop mid-body on a shared
     * connection, and a 10-minute LIST would otherwise blind the caches.
     * 0: none (a pooled handle may carry the last request's). */
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms > 0 ? r->timeout_ms : 0L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, r->timeout_ms > 0 ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, r->timeout_ms > 0 ? stall_s(c) : 0L);
    /* the method from a clean GET: a pooled handle may carry a body */
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
    const struct tg_kconf *k = &c->conf;
    const char *tok = c->token ? c->token : k->token;
    const char *ctype = r->ctype ? r->ctype : "application/json";
    int json = strcmp(ctype, "application/json") == 0;
    struct curl_slist *h;
    if (c->tune.headers_per_request || (r->body && !json)) {
        if (!(h = r->hdrs = hdrs_build(tok, r->body ? ctype : NULL)))
            return TG_ENOMEM;
    } else {
        if (c->h_gen != c->tok_gen) {   /* a new token: new lists (running requests keep theirs) */
            hdrs_unref(c->h_get);
            hdrs_unref(c->h_json);
            c->h_get = c->h_json = NULL;
            c->h_gen = c->tok_gen;
        }
        struct hdrs **slot = r->body ? &c->h_json : &c->h_get;
        if (!*slot) {
            struct hdrs *n = calloc(1, sizeof *n);
            if (!n || !(n->l = hdrs_build(tok, r->body ? ctype : NULL))) {
                free(n);
                return TG_ENOMEM;
            }
            n->refs = 1;
            *slot = n;
        }
        r->shared = *slot;
        r->shared->refs++;
        h = r->shared->l;
    }
    if (r->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "POST") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    else if (strcmp(r->method, "POST") == 0 && !r->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    }
    return 0;
}

static void finish(struct tg_client *c, struct tg_req *r, int err, const char *msg)
{
    r->state = RQ_FINISHING;
    c->stats.completed++;
    if (c->in_sweep)
        tg_debug(COMP, "%s %s finished only when swept (err %s)", r->method, r->path,
                err ? tg_err_name(err) : "none");
    if (!r->canceled && r->on_done) {
        struct tg_resp resp = {.err = err, .status = r->status, .body = tg_sb_str(&r->resp),
                               .len = r->resp.len, .msg = msg, .retry_after_s = r->retry_after_s};
        r->on_done(r->ud, &resp);
    }
    req_free(r);
}

/* The Status message of an error body ("reason: message"), into buf. */
static int status_reason(const struct tg_req *r, char *buf, size_t len)
{
    int is_exists = 0;
    buf[0] = 0;
    cJSON *j = r->resp.len ? cJSON_ParseWithLength(r->resp.s, r->resp.len) : NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "reason");
    if (cJSON_IsString(rs) && strcmp(rs->valuestring, "AlreadyExists") == 0)
        is_exists = 1;
    snprintf(buf, len, "HTTP %ld%s%s%s%s", r->status, cJSON_IsString(rs) ? " " : "",
             cJSON_IsString(rs) ? rs->valuestring : "", cJSON_IsString(m) ? ": " : "",
             cJSON_IsString(m) ? m->valuestring : "");
    cJSON_Delete(j);
    return is_exists;
}

/* ---- retried writes ----------------------------------------------------- */

/* Whether a failed try of a retried write is worth another: the server was
 * busy or failing (429, 5xx), or the answer never came (connection refused or
 * reset, timeout). A 4xx is the server's verdict on the write itself. */
static int retryable(int err, long status)
{
    return err == TG_EAGAIN || err == TG_ETIMEOUT || err == TG_EIO ||
           (err == TG_EHTTP && status >= 500);
}

/* Wait before the next try: the doubling backoff over the tries and 429s so
 * far, or the server's Retry-After when longer; plus 0-20% jitter, so writes
 * refused together do not come back together. */
static uint64_t retry_delay_ms(const struct tg_req *r)
{
    uint64_t ms = RETRY_BASE_MS;
    for (int i = 1; i < r->tries + r->throttles && ms < RETRY_MAX_MS; i++)
        ms *= 2;
    if (ms > RETRY_MAX_MS)
        ms = RETRY_MAX_MS;
    uint64_t ra = (uint64_t)r->retry_after_s * 1000;
    if (ra > ms)
        ms = ra < RETRY_AFTER_MAX_MS ? ra : RETRY_AFTER_MAX_MS;
    return ms + ms * (uint64_t)(rand() % 21) / 100;
}

static void on_retry_timer(uv_timer_t *t);

/* The retry timer at q_retry's head's due time. */
static void arm_retry(struct tg_client *c)
{
    if (!TAILQ_FIRST(&c->q_retry) || c->closing)
        return;
    uint64_t now = uv_now(c->loop), due = TAILQ_FIRST(&c->q_retry)->due_ms;
    uv_timer_start(&c->retry_timer, on_retry_timer, due > now ? due - now : 0, 0);
}

/* Due retries go back to the tail of their queue. */
static void on_retry_timer(uv_timer_t *t)
{
    struct tg_client *c = t->data;
    uint64_t now = uv_now(c->loop);
    struct tg_req *r;
    while ((r = TAILQ_FIRST(&c->q_retry)) && r->due_ms <= now) {
        rl_remove(&c->q_retry, r);
        c->retry_waiting--;
        r->state = RQ_QUEUED;
        rl_push(r->background ? &c->q_bg : &c->q_writes, r);
        c->bg_queued += r->background;
        c->lo_queued += r->leader_only;
        kick(c);
    }
    arm_retry(c);
}

/* Takes r (a try just failed with err) out of libcurl's hands into q_retry,
 * sorted by due time (a walk from the tail: a later try is almost always
 * due last). */
static void retry_later(struct tg_client *c, struct tg_req *r, int err, const char *msg)
{
    uint64_t delay = retry_delay_ms(r);
    c->stats.retries++;
    tg_debug(COMP, "%s %s: try %d failed (%s: %s); again in %llu ms", r->method, r->path,
             r->tries, tg_err_name(err), msg, (unsigned long long)delay);
    if (r->easy)
        easy_release(r);
    curl_slist_free_all(r->hdrs);
    r->hdrs = NULL;
    hdrs_unref(r->shared);
    r->shared = NULL;
    tg_sb_free(&r->resp);
    r->status = 0;
    r->retry_after_s = 0;
    r->abort_err = 0;
    r->errbuf[0] = 0;
    r->state = RQ_WAITING;
    r->due_ms = uv_now(c->loop) + delay;
    struct tg_req *at = TAILQ_LAST(&c->q_retry, rlist);
    while (at && at->due_ms > r->due_ms)
        at = TAILQ_PREV(at, rlist, link);
    if (at)
        TAILQ_INSERT_AFTER(&c->q_retry, at, r, link);
    else
        TAILQ_INSERT_HEAD(&c->q_retry, r, link);
    c->retry_waiting++;
    if (TAILQ_FIRST(&c->q_retry) == r)
        arm_retry(c);
}

/* Logs a retried write given up on, the first 10 and then every 1,000th
 * (a failing server drops them by the thousand). */
static void log_dropped(const struct tg_client *c, const char *method, const char *path,
                        const char *why)
{
    if (c->stats.dropped <= 10 || c->stats.dropped % 1000 == 0)
        tg_warn(COMP, "%s %s dropped: %s; %llu retried write(s) (Events) dropped so far", method,
                path, why, (unsigned long long)c->stats.dropped);
}

/* A retried write given up on: its tries ran out, or a 4xx refused it (the
 * caller's callback tells that one; it is counted all the same). */
static void retry_dropped(struct tg_client *c, const struct tg_req *r, int err, const char *msg)
{
    c->stats.dropped++;
    if (!retryable(err, r->status))
        return;
    char why[900];
    snprintf(why, sizeof why, "%d tries failed, the last: %s", r->tries,
             msg && *msg ? msg : tg_strerror(err));
    log_dropped(c, r->method, r->path, why);
}

/* The outcome of an answered request from its status (0 for 2xx), msg the
 * server's reason for another. */
static int answer_err(const struct tg_req *r, char *msg, size_t len)
{
    msg[0] = 0;
    if (r->status >= 200 && r->status < 300)
        return 0;
    int exists = status_reason(r, msg, len);
    switch (r->status) {
    case 404: return TG_ENOENT;
    case 409: return exists ? TG_EEXIST : TG_ECONFLICT;
    case 410: return TG_EGONE;
    case 429: case 503: case 504: return TG_EAGAIN;
    default: return TG_EHTTP;
    }
}

static void settle(struct tg_client *c, struct tg_req *r, int err, const char *msg);

/* A handshake cut off at the server's end (the connection reset or closed,
 * as when kube-apiserver restarts under load) is a transport failure, retried
 * as any other; the handshake's own verdicts (an alert, a protocol version, a
 * certificate) stay TLS errors, which are not. */
static int tls_cut_off(CURL *easy, const char *errbuf)
{
    long oe = 0;
    if (curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &oe) == CURLE_OK &&
        (oe == ECONNRESET || oe == EPIPE || oe == ECONNABORTED))
        return 1;
    return strstr(errbuf, "Recv failure") || strstr(errbuf, "Send failure") ||
           strstr(errbuf, "reset by peer") || strstr(errbuf, "Broken pipe") ||
           strstr(errbuf, "SSL_ERROR_SYSCALL") || strstr(errbuf, "unexpected eof");
}

static void complete(struct tg_client *c, struct tg_req *r, CURLcode cc)
{
    char msg[768];
    int err = 0;
    const struct tg_kconf *k = &c->conf;
    if (!r->status)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    long ver = 0, nconn = 0;
    curl_off_t retry_after = 0;
    if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0)
        r->retry_after_s = retry_after > 3600 ? 3600 : (long)retry_after;
    curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &ver);
    curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &nconn);
    c->stats.http2 += ver == CURL_HTTP_VERSION_2_0;
    c->stats.connects += (uint64_t)nconn;
    /* Go's HTTP/2 server answers an error (401, 403...) before reading a
     * request body and then resets the stream; libcurl 7.88 may report that
     * as a partial transfer. The status line is the server's verdict. */
    if ((cc == CURLE_PARTIAL_FILE || cc == CURLE_HTTP2_STREAM || cc == CURLE_HTTP2) &&
        r->status >= 400)
        cc = CURLE_OK;
    if (cc == CURLE_OK) {
        err = answer_err(r, msg, sizeof msg);
    } else if (cc == CURLE_WRITE_ERROR && r->abort_err) {
        err = r->abort_err;
        snprintf(msg, sizeof msg, "%s", tg_strerror(err));
    } else {
        if (cc == CURLE_SSL_CONNECT_ERROR && tls_cut_off(r->easy, r->errbuf))
            cc = CURLE_RECV_ERROR;
        switch (cc) {
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_ISSUER_ERROR:
            err = TG_ETLS;
            snprintf(msg, sizeof msg, "TLS handshake with %s failed: %s (CA: %s)", k->server,
                     r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc),
                     k->ca_data ? "certificate-authority-data" : k->ca_file ? k->ca_file
                                                                           : "system store");
            break;
        case CURLE_OPERATION_TIMEDOUT:
            err = TG_ETIMEOUT;
            snprintf(msg, sizeof msg, "%s%s: %s", k->server, r->path,
                     r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc));
            break;
        default:
            err = TG_EIO;
            snprintf(msg, sizeof msg, "%s%s: %s", k->server, r->path,
                     r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc));
            break;
        }
    }
    settle(c, r, err, msg);
}

/* A finished try's outcome: its lane's window, a retry, or the caller's
 * callback. */
static void settle(struct tg_client *c, struct tg_req *r, int err, const char *msg)
{
    struct tg_aimd *win = lane_window(c, r);
    if (win && (r->status == 429 || r->status == 503)) {
        int flight = (r->background ? c->bg_running : c->w_running) + 1;
        c->stats.throttled++;
        if (tg_aimd_throttled(win, r->seq, (uint32_t)flight, (int64_t)uv_now(c->loop)))
            tg_debug(COMP, "%s %s: HTTP %ld; %s window now %u", r->method, r->path, r->status,
                     r->background ? "background writes'" : "writes'", tg_aimd_window(win));
    } else if (win && r->status) {
        tg_aimd_ok(win, (int64_t)uv_now(c->loop));
    }
    c->stats.write_window = tg_aimd_window(&c->w_win);
    c->stats.bg_window = tg_aimd_window(&c->bg_win);
    if (r->retry && r->status == 429 && uv_now(c->loop) - r->born_ms < RETRY_THROTTLED_MAX_MS &&
        !r->canceled && !c->closing) {
        r->throttles++; /* not a failed try: the server asks to come back later */
        c->stats.failed++;
        retry_later(c, r, err, msg);
        return;
    }
    if (r->retry) {
        r->tries++;
        if (err == TG_EEXIST && r->tries > 1)
            err = 0;    /* an earlier try landed, its answer did not come back */
        else if (err && retryable(err, r->status) && r->tries < RETRY_TRIES && !r->canceled &&
                 !c->closing) {
            c->stats.failed++;
            retry_later(c, r, err, msg);
            return;
        } else if (err && !r->canceled) {
            retry_dropped(c, r, err, msg);
        }
    }
    if (err)
        c->stats.failed++;
    finish(c, r, err, msg);
}

static void check_done(struct tg_client *c)
{
    CURLMsg *m;
    int left;
    while (c->multi && (m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct tg_req *r = NULL;
        CURLcode cc = m->data.result;
        CURL *e = m->easy_handle;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
        curl_multi_remove_handle(c->multi, e);
        running_remove(c, r);
        complete(c, r, cc);
    }
}

/* ---- the direct HTTP/2 path (h2.c) --------------------------------------- */

static void h2_wake(void *ud)
{
    fence_check(ud);
}

static void h2_head(void *ud, void *sud, long status, long retry_after_s)
{
    struct tg_client *c = ud;
    struct tg_req *r = sud;
    r->status = status;
    r->retry_after_s = retry_after_s;
    r->rx_ms = uv_now(c->loop);
}

/* As on_write: a 2xx body of a streamed request to its on_chunk, the rest
 * buffered. */
static int h2_data(void *ud, void *sud, const char *p, size_t n)
{
    struct tg_client *c = ud;
    struct tg_req *r = sud;
    c->stats.bytes_in += n;
    r->rx_ms = uv_now(c->loop);
    if (r->canceled)
        return 0;
    if (r->on_chunk && r->status >= 200 && r->status < 300) {
        int rc = r->on_chunk(r->ud, p, n);
        if (rc || r->canceled) {
            r->abort_err = rc < 0 ? rc : TG_ECANCELED;
            return 1;
        }
        return 0;
    }
    tg_sb_putn(&r->resp, p, n);
    if (r->resp.oom) {
        r->abort_err = TG_ENOMEM;
        return 1;
    }
    return 0;
}

/* The direct connection came up or went: the GETs held for it go. */
static void h2_changed(void *ud)
{
    kick(ud);
}

/* The direct path's connection counts into the client's stats. */
static void h2_count(struct tg_client *c)
{
    const struct tg__h2_stats *hs = tg__h2_stats(c->h2);
    c->stats.h2_connects = hs->connects;
    c->stats.h2_failures = hs->failures;
    c->stats.h2_pings = hs->pings;
}

/* A stream ended: the same outcome libcurl's path gives (complete). */
static void h2_done(void *ud, void *sud, int err, const char *why)
{
    struct tg_client *c = ud;
    struct tg_req *r = sud;
    char msg[768];
    running_remove(c, r);
    r->sid = 0;
    if (err == 0) {
        c->stats.http2++;
        c->stats.h2_direct++;
        h2_count(c);
        err = answer_err(r, msg, sizeof msg);
    } else {
        if (r->abort_err)
            err = r->abort_err;
        r->status = 0;
        snprintf(msg, sizeof msg, "%s%s: %s", c->conf.server, r->path,
                 r->abort_err ? tg_strerror(err) : why);
    }
    settle(c, r, err, msg);
}

/* Direct-path requests running past their timeout end with TG_ETIMEOUT (as
 * libcurl's CURLOPT_TIMEOUT_MS), so do those with a timeout that received
 * nothing for STALL_S (as CURLOPT_LOW_SPEED_TIME: a LIST stopped mid-body);
 * a connection silent for STALL_S with streams open is dropped (watches,
 * which have no timeout, keep it alive by the PINGs of tg__h2_check); once a
 * second. */
static void h2_timeouts(struct tg_client *c)
{
    uint64_t now = uv_now(c->loop);
    if (!c->h2)
        return;
    h2_count(c);    /* a connection that failed ran no stream to count it */
    if (now - c->h2_checked_ms < 1000)
        return;
    c->h2_checked_ms = now;
    tg__h2_check(c->h2, (uint64_t)stall_s(c) * 1000);
    for (struct tg_req *r = TAILQ_FIRST(&c->running), *nx; r; r = nx) {
        nx = TAILQ_NEXT(r, link);
        if (r->sid <= 0 || r->canceled || r->timeout_ms <= 0)
            continue;
        uint64_t heard = r->rx_ms > r->started_ms ? r->rx_ms : r->started_ms;
        int late = now - r->started_ms >= (uint64_t)r->timeout_ms;
        if (!late && now - heard < (uint64_t)stall_s(c) * 1000)
            continue;
        tg__h2_reset(c->h2, r->sid);
        running_remove(c, r);
        r->sid = 0;
        r->status = 0;
        char msg[768];
        if (late)
            snprintf(msg, sizeof msg, "%s%s: no answer in %ld ms", c->conf.server, r->path, r->timeout_ms);
        else
            snprintf(msg, sizeof msg, "%s%s: nothing received for %ld s", c->conf.server, r->path,
                     stall_s(c));
        settle(c, r, TG_ETIMEOUT, msg);
    }
    tg__h2_flush(c->h2);
}

static int is_get(const struct tg_req *r)
{
    return !r->body && strcmp(r->method, "GET") == 0;
}

/* POST writes (Bindings, Events, evictions) and GETs (lists, watches) go the
 * direct way when it is up; the rest (the Lease's urgent requests on
 * connections of their own, PUT, PATCH, DELETE), and everything while it is
 * not, through libcurl. */
static int h2_takes(struct tg_client *c, const struct tg_req *r)
{
    if (!c->h2 || r->urgent)
        return 0;
    int post = r->is_write && !r->on_chunk && r->body && strcmp(r->method, "POST") == 0;
    return (post || is_get(r)) && tg__h2_ready(c->h2);
}

/* A GET waits while the direct connection is being opened (a few ms; on_up
 * or on_down kicks the queue): a watch started meanwhile would stay on
 * libcurl for its whole life (minutes). */
static int h2_holds(struct tg_client *c, const struct tg_req *r)
{
    return c->h2 && !r->urgent && is_get(r) && !tg__h2_ready(c->h2) && tg__h2_coming(c->h2);
}

/* Submits r on the direct path; nonzero when it would not take it. */
static int h2_start(struct tg_client *c, struct tg_req *r)
{
    refresh_token(c);
    const char *tok = c->token ? c->token : c->conf.token;
    int32_t sid = tg__h2_submit(c->h2, r->method, r->path, r->ctype, tok, r->body, r->body_len, r);
    if (sid <= 0)
        return sid ? sid : TG_EIO;
    r->sid = sid;
    r->rx_ms = 0;
    c->stats.h2_streams++;
    return 0;
}

static void start(struct tg_client *c, struct tg_req *r)
{
    int rc = 0;
    r->started_ms = uv_now(c->loop);
    if (!h2_takes(c, r) || h2_start(c, r) != 0) {
        rc = req_setup(c, r);
        if (rc == 0 && curl_multi_add_handle(c->multi, r->easy) != CURLM_OK)
            rc = TG_EIO;
    }
    if (rc) {
        c->stats.failed++;
        finish(c, r, rc, tg_strerror(rc));
        return;
    }
    r->state = RQ_RUNNING;
    rl_push(&c->running, r);
    c->bg_running += r->background;
    c->w_running += r->is_write && !r->background && !r->urgent;
    c->u_running += r->urgent;
    c->lo_running += r->leader_only;
    c->stats.requests++;
    struct tg_aimd *win = lane_window(c, r);
    if (win)
        r->seq = tg_aimd_send(win);
}

/* r's transfer stops: its easy handle leaves libcurl, or its stream is reset. */
static void transfer_remove(struct tg_client *c, struct tg_req *r)
{
    if (r->sid > 0) {
        tg__h2_reset(c->h2, r->sid);
        r->sid = 0;
    } else {
        curl_multi_remove_handle(c->multi, r->easy);
    }
}

static void refill(struct tg_client *c)
{
    uint64_t now = uv_now(c->loop);
    if (c->qps > 0) {
        c->tokens += (double)(now - c->refill_ms) * c->qps / 1000.0;
        if (c->tokens > c->burst)
            c->tokens = c->burst;
    }
    c->refill_ms = now;
}

int tg_client_fenced(const struct tg_client *c)
{
    return c->fence_ms != INT64_MAX && tg_clock_mono_ms() >= c->fence_ms;
}

/* Past the fence: every leader-only write queued or running finishes with
 * TG_EFENCED (running ones leave libcurl first). Never from inside a curl
 * callback: callers run it before they call into libcurl. */
static void fence_check(struct tg_client *c)
{
    if ((!c->lo_queued && !c->lo_running) || !tg_client_fenced(c))
        return;
    for (struct tg_req *r = TAILQ_FIRST(&c->q_writes), *nx; r && c->lo_queued; r = nx) {
        nx = TAILQ_NEXT(r, link);
        if (!r->leader_only)
            continue;
        rl_remove(&c->q_writes, r);
        c->lo_queued--;
        c->stats.fenced++;
        finish(c, r, TG_EFENCED, "not sent: this replica's lease was not renewed in time");
    }
    int removed = 0;
    for (struct tg_req *r = TAILQ_FIRST(&c->running), *nx; r && c->lo_running; r = nx) {
        nx = TAILQ_NEXT(r, link);
        if (!r->leader_only || r->canceled)
            continue;
        transfer_remove(c, r);
        running_remove(c, r);
        r->status = 0;
        c->stats.fenced++;
        finish(c, r, TG_EFENCED, "aborted: this replica's lease was not renewed in time");
        removed = 1;
    }
    if (removed)
        uncork(c);  /* what removing them wrote (RST_STREAM) */
}

static void run_queue(uv_timer_t *t)
{
    struct tg_client *c = t->data;
    fence_check(c);
    /* Drop canceled transfers first (never from inside a curl callback). */
    int removed = 0;
    for (struct tg_req *r = TAILQ_FIRST(&c->running), *nx; r; r = nx) {
        nx = TAILQ_NEXT(r, link);
        if (r->canceled) {
            transfer_remove(c, r);
            running_remove(c, r);
            req_free(r);
            removed = 1;
        }
    }
    if (removed)
        uncork(c);  /* what removing them wrote (RST_STREAM) */
    struct tg_req *r;
    while ((r = TAILQ_FIRST(&c->q_urgent)) && c->u_running < URGENT_INFLIGHT) {
        rl_remove(&c->q_urgent, r);
        start(c, r);
    }
    while ((r = TAILQ_FIRST(&c->q_reads)) && !h2_holds(c, r)) {
        rl_remove(&c->q_reads, r);
        start(c, r);
    }
    refill(c);
    while ((r = TAILQ_FIRST(&c->q_writes)) && writes_open(c) && (c->qps <= 0 || c->tokens >= 1.0)) {
        if (c->qps > 0)
            c->tokens -= 1.0;
        rl_remove(&c->q_writes, r);
        c->lo_queued -= r->leader_only;
        start(c, r);
    }
    while ((!TAILQ_FIRST(&c->q_writes) || !writes_open(c)) && (r = TAILQ_FIRST(&c->q_bg)) &&
           c->bg_running < bg_cap(c) && (c->qps <= 0 || c->tokens >= 1.0)) {
        if (c->qps > 0)
            c->tokens -= 1.0;
        rl_remove(&c->q_bg, r);
        c->bg_queued--;
        start(c, r);
    }
    /* waiting for a token only (a full window is reopened by running_remove) */
    if (c->qps > 0 && c->tokens < 1.0 &&
        ((TAILQ_FIRST(&c->q_writes) && writes_open(c)) ||
         ((!TAILQ_FIRST(&c->q_writes) || !writes_open(c)) && TAILQ_FIRST(&c->q_bg) && c->bg_running < bg_cap(c))) &&
        !uv_is_active((uv_handle_t *)&c->limiter)) {
        double wait = (1.0 - c->tokens) * 1000.0 / c->qps;
        uv_timer_start(&c->limiter, run_queue, (uint64_t)(wait < 1 ? 1 : wait + 0.999), 0);
    }
    tg__h2_flush(c->h2);    /* this pass's streams and resets: one SSL_write, one send */
}

static void kick(struct tg_client *c)
{
    if (!uv_is_active((uv_handle_t *)&c->kick))
        uv_timer_start(&c->kick, run_queue, 0, 0);
}

/* ---- public API --------------------------------------------------------- */

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int conf_copy(struct tg_kconf *d, const struct tg_kconf *s)
{
    memset(d, 0, sizeof *d);
    d->insecure = s->insecure;
    d->ca_len = s->ca_len;
    d->cert_len = s->cert_len;
    d->key_len = s->key_len;
#define CP(f, n) do { if (s->f && !(d->f = dupn(s->f, (n)))) goto fail; } while (0)
    CP(server, strlen(s->server));
    CP(ca_file, strlen(s->ca_file));
    CP(ca_data, s->ca_len);
    CP(cert_file, strlen(s->cert_file));
    CP(key_file, strlen(s->key_file));
    CP(cert_data, s->cert_len);
    CP(key_data, s->key_len);
    CP(token, strlen(s->token));
    CP(token_file, strlen(s->token_file));
    CP(ns, strlen(s->ns));
    CP(context, strlen(s->context));
#undef CP
    return 0;
fail:
    tg_kconf_free(d);
    return TG_ENOMEM;
}

int tg_client_new(uv_loop_t *loop, const struct tg_kconf *conf,
                  const struct tg_client_opts *opts, struct tg_client **out)
{
    static int curl_ready;
    *out = NULL;
    if (!conf->server || !*conf->server)
        return TG_EINVAL;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return TG_EIO;
        curl_ready = 1;
    }
    struct tg_client *c = calloc(1, sizeof *c);
    if (!c)
        return TG_ENOMEM;
    c->loop = loop;
    TAILQ_INIT(&c->q_urgent);
    TAILQ_INIT(&c->q_reads);
    TAILQ_INIT(&c->q_writes);
    TAILQ_INIT(&c->q_bg);
    TAILQ_INIT(&c->running);
    TAILQ_INIT(&c->q_retry);
    LIST_INIT(&c->socks);
    const char *v = getenv("TOPOGANG_CURL_VERBOSE");
    c->verbose = v && *v == '1';
    if (conf_copy(&c->conf, conf) != 0)
        goto nomem;
    c->ua = strdup(opts && opts->user_agent ? opts->user_agent : "topogang/0.1");
    if (!c->ua)
        goto nomem;
    c->multi = curl_multi_init();
    if (!c->multi) {
        tg_kconf_free(&c->conf);
        free(c->ua);
        free(c);
        return TG_EIO;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    if (opts)
        c->tune = *opts;
    c->tune.user_agent = NULL;
    const char *ck = getenv("TOPOGANG_CURL_CORK");
    if (ck && *ck == '0')
        c->tune.cork = -1;
    curl_multi_setopt(c->multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
                      c->tune.max_streams > 0 ? c->tune.max_streams : 1000L);
    uv_timer_init(loop, &c->curl_timer);
    uv_timer_init(loop, &c->kick);
    uv_timer_init(loop, &c->limiter);
    uv_timer_init(loop, &c->sweep);
    uv_timer_init(loop, &c->retry_timer);
    c->curl_timer.data = c->kick.data = c->limiter.data = c->sweep.data = c;
    c->retry_timer.data = c;
    c->open_handles = 5;
    const char *sw = getenv("TOPOGANG_CURL_SWEEP_MS");   /* 0 disables (diagnostics) */
    uint64_t sweep_ms = sw ? strtoull(sw, NULL, 10) : 200;
    if (sweep_ms)
        uv_timer_start(&c->sweep, on_sweep, sweep_ms, sweep_ms);
    uv_unref((uv_handle_t *)&c->sweep);     /* never keeps the loop alive by itself */
    c->fence_ms = INT64_MAX;
    tg_client_set_rate(c, opts ? opts->qps : 0, opts ? opts->burst : 0);
    c->tokens = c->burst;
    c->refill_ms = uv_now(loop);
    tg_aimd_init(&c->w_win, WRITE_WINDOW_MAX);
    tg_aimd_init(&c->bg_win, BG_INFLIGHT_MAX);
    c->stats.write_window = tg_aimd_window(&c->w_win);
    c->stats.bg_window = tg_aimd_window(&c->bg_win);
    refresh_token(c);
    static const struct tg__h2_hooks hooks = {.on_wake = h2_wake, .on_head = h2_head,
                                              .on_data = h2_data, .on_done = h2_done,
                                              .on_up = h2_changed, .on_down = h2_changed};
    struct tg__h2_hooks hk = hooks;
    hk.ud = c;
    if (c->tune.h2_direct >= 0 && c->tune.writes_http != 1 &&
        tg__h2_new(loop, &c->conf, c->ua, &hk, &c->h2) != 0)
        tg_warn(COMP, "no direct HTTP/2 path (out of memory): writes go through libcurl");
    *out = c;
    return 0;
nomem:
    tg_kconf_free(&c->conf);
    free(c->ua);
    free(c);
    return TG_ENOMEM;
}

void tg_client_set_rate(struct tg_client *c, double qps, int burst)
{
    c->qps = qps > 0 ? qps : 0;
    c->burst = burst >= 1 ? burst : 1;
    if (c->tokens > c->burst)
        c->tokens = c->burst;
}

void tg_client_free(struct tg_client **pc)
{
    struct tg_client *c = *pc;
    if (!c)
        return;
    *pc = NULL;
    struct tg_req *r;
    while ((r = TAILQ_FIRST(&c->q_urgent))) {
        rl_remove(&c->q_urgent, r);
        req_free(r);
    }
    while ((r = TAILQ_FIRST(&c->q_reads))) {
        rl_remove(&c->q_reads, r);
        req_free(r);
    }
    while ((r = TAILQ_FIRST(&c->q_writes))) {
        rl_remove(&c->q_writes, r);
        req_free(r);
    }
    while ((r = TAILQ_FIRST(&c->q_bg))) {
        rl_remove(&c->q_bg, r);
        req_free(r);
    }
    while ((r = TAILQ_FIRST(&c->q_retry))) {
        rl_remove(&c->q_retry, r);
        req_free(r);
    }
    while ((r = TAILQ_FIRST(&c->running))) {
        if (r->easy)
            curl_multi_remove_handle(c->multi, r->easy);
        rl_remove(&c->running, r);
        req_free(r);
    }
    tg__h2_free(&c->h2);    /* calls nothing back */
    c->closing = 1;
    curl_multi_cleanup(c->multi);
    c->multi = NULL;
    while (c->npool)
        curl_easy_cleanup(c->pool[--c->npool]);
    while (!LIST_EMPTY(&c->socks))
        sock_close(LIST_FIRST(&c->socks));
    uv_close((uv_handle_t *)&c->curl_timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->kick, on_handle_closed);
    uv_close((uv_handle_t *)&c->limiter, on_handle_closed);
    uv_close((uv_handle_t *)&c->sweep, on_handle_closed);
    uv_close((uv_handle_t *)&c->retry_timer, on_handle_closed);
}

static struct rlist *queue_of(struct tg_client *c, const struct tg_req *r)
{
    return r->urgent ? &c->q_urgent : r->background ? &c->q_bg
           : r->is_write ? &c->q_writes : &c->q_reads;
}

int tg_client_request(struct tg_client *c, const struct tg_req_opts *o, struct tg_req **out)
{
    if (out)
        *out = NULL;
    if (!o->path || o->path[0] != '/' || c->closing)
        return TG_EINVAL;
    if (o->retry && c->retry_held >= RETRY_HELD_MAX) {
        c->stats.dropped++;
        char why[96];
        snprintf(why, sizeof why, "%u retried writes held already (the cap)", c->retry_held);
        log_dropped(c, o->method ? o->method : "GET", o->path, why);
        return TG_EAGAIN;
    }
    struct tg_req *r = calloc(1, sizeof *r);
    if (!r)
        return TG_ENOMEM;
    r->c = c;
    r->method = strdup(o->method ? o->method : "GET");
    r->path = strdup(o->path);
    if (o->body) {
        r->body_len = o->body_len ? o->body_len : strlen(o->body);
        r->body = dupn(o->body, r->body_len);
        if (!r->body)
            goto nomem;
    }
    if (o->content_type && !(r->ctype = strdup(o->content_type)))
        goto nomem;
    if (!r->method || !r->path)
        goto nomem;
    r->timeout_ms = o->timeout_ms == 0 ? 60000 : o->timeout_ms;
    r->on_chunk = o->on_chunk;
    r->on_done = o->on_done;
    r->ud = o->ud;
    r->urgent = o->urgent;
    r->is_write = o->is_write || o->background || (o->leader_only && !o->urgent);
    r->background = o->background && !o->urgent;
    r->leader_only = o->leader_only && r->is_write && !r->background && !r->urgent;
    r->state = RQ_QUEUED;
    r->born_ms = uv_now(c->loop);
    if (r->is_write && !r->urgent && c->qps > 0) {
        refill(c);
        if (TAILQ_FIRST(&c->q_writes) || c->tokens < 1.0)
            c->stats.writes_delayed++;
    }
    rl_push(queue_of(c, r), r);
    c->bg_queued += r->background;
    c->lo_queued += r->leader_only;
    r->retry = o->retry != 0;
    c->retry_held += r->retry;
    kick(c);
    if (out)
        *out = r;
    return 0;
nomem:
    req_free(r);
    return TG_ENOMEM;
}

void tg_client_cancel(struct tg_req *r)
{
    if (!r)
        return;
    struct tg_client *c = r->c;
    if (r->state == RQ_WAITING) {
        rl_remove(&c->q_retry, r);
        c->retry_waiting--;
        req_free(r);
        arm_retry(c);
        return;
    }
    if (r->state == RQ_QUEUED) {
        rl_remove(queue_of(c, r), r);
        c->bg_queued -= r->background;
        c->lo_queued -= r->leader_only;
        req_free(r);
        return;
    }
    r->canceled = 1;
    if (r->state == RQ_RUNNING)
        kick(c);
}

struct do_ctx {
    int done;
    struct tg_resp *r;
    char **body;
    char msg[768];
};

static void do_done(void *ud, const struct tg_resp *r)
{
    struct do_ctx *d = ud;
    d->done = 1;
    *d->r = *r;
    snprintf(d->msg, sizeof d->msg, "%s", r->msg ? r->msg : "");
    d->r->msg = d->msg;
    d->r->body = NULL;
    if (d->body) {
        *d->body = dupn(r->body ? r->body : "", r->len);
        d->r->body = *d->body;
    }
}

int tg_client_do(struct tg_client *c, const struct tg_req_opts *o, struct tg_resp *r,
                 char **body)
{
    static char msgbuf[768];
    struct do_ctx d = {.r = r, .body = body};
    struct tg_req_opts oo = *o;
    oo.on_done = do_done;
    oo.ud = &d;
    oo.on_chunk = NULL;
    if (body)
        *body = NULL;
    memset(r, 0, sizeof *r);
    int rc = tg_client_request(c, &oo, NULL);
    if (rc) {
        r->err = rc;
        r->msg = tg_strerror(rc);
        return rc;
    }
    while (!d.done)
        uv_run(c->loop, UV_RUN_ONCE);
    /* The message must outlive d: copy it to a static buffer (tools/tests only). */
    snprintf(msgbuf, sizeof msgbuf, "%s", d.msg);
    r->msg = msgbuf;
    return r->err;
}

void tg_client_fence(struct tg_client *c, int64_t until_ms)
{
    int64_t was = c->fence_ms;
    c->fence_ms = until_ms;
    if (until_ms < was && (c->lo_queued || c->lo_running) && !c->closing)
        kick(c);
}

uint32_t tg_client_writes_pending(const struct tg_client *c)
{
    uint32_t n = 0;
    const struct tg_req *r;
    TAILQ_FOREACH(r, &c->q_writes, link)
        n++;
    n += c->bg_queued + c->retry_waiting;
    TAILQ_FOREACH(r, &c->running, link)
        n += r->is_write && !r->canceled;
    return n;
}

const struct tg_client_stats *tg_client_stats(const struct tg_client *c)
{
    return &c->stats;
}

const struct tg_kconf *tg_client_conf(const struct tg_client *c)
{
    return &c->conf;
}

uv_loop_t *tg_client_loop(const struct tg_client *c)
{
    return c->loop;
}

char *tg_url_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *o = malloc(n * 3 + 1), *p = o;
    if (!o)
        return NULL;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            *p++ = (char)ch;
        } else {
            *p++ = '%';
            *p++ = hex[ch >> 4];
            *p++ = hex[ch & 15];
        }
    }
    *p = 0;
    return o;
}
