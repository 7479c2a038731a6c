/* The Kubernetes API HTTP client: every request, watches included, runs on
 * one libuv loop through libcurl's multi interface (CURLMOPT_SOCKETFUNCTION ->
 * uv_poll, CURLMOPT_TIMERFUNCTION -> uv_timer, as curl's multi-uv.c example).
 *
 * Requests share connections; HTTP/2 is negotiated where the server offers it
 * and requests are multiplexed on one connection. TLS is always verified
 * against the configured CA unless the kubeconfig sets
 * insecure-skip-tls-verify. A bearer token file is re-read whenever it
 * changes on disk (service-account token rotation). Writes (is_write) pass a
 * client-side token bucket (api.qps, api.burst in the policy); reads do not.
 * Background writes (Events) pass it too, but only after every queued write
 * and with a few in flight at most, so that they never hold back the writes
 * that decide placement (Bindings, status).
 *
 * Writes and background writes each have a congestion window (util/aimd.h):
 * a 429 or 503 answer (API Priority and Fairness refusing this client's
 * priority level) halves the lane's requests in flight, successes grow it
 * back; only the refused request waits (client.c, WRITE_WINDOW_MAX).
 *
 * Two more lanes serve leader election (client-go's renewDeadline):
 * - urgent requests (the Lease's GET and PUT) go ahead of every queue,
 *   outside the token bucket, each on a connection of its own (never queued
 *   behind bulk streams on a shared HTTP/2 connection), URGENT_INFLIGHT at
 *   most at once: a renewal never waits behind a rollback or a preemption of
 *   thousands of pods.
 * - leader-only writes (Bindings, evictions and deletes, status patches) are
 *   fenced by tg_client_fence: past the fence (the leader's renew deadline,
 *   on the monotonic clock) a queued one is not sent and one started but not
 *   yet finished is aborted (libcurl's transfer removed), both finishing with
 *   TG_EFENCED and status 0. The fence is checked again before libcurl runs
 *   at all (socket, timer and sweep callbacks), so a process resumed after a
 *   SIGSTOP past its deadline sends none of them. What the server already
 *   received cannot be recalled: renew deadline < lease duration covers it.
 *
 * Retried writes (tg_req_opts.retry; Events, whose name is fixed when built,
 * so a repeat of one that landed answers 409 AlreadyExists, taken as
 * success): a try that fails with 429, 5xx, a refused or reset connection or
 * a timeout waits (250 ms doubling to 8 s, or the answer's Retry-After when
 * longer, at most 30 s; plus 0-20% jitter) and goes back to the tail of its
 * queue, 8 tries in all, a 429 not counted as one for 10 minutes (the server
 * is up and asks to come back: an Event is not lost to throttling); a 4xx
 * other than 429 ends it. At most 20,000 are held (queued,
 * running, waiting) at once: past that tg_client_request refuses one with
 * TG_EAGAIN. Those given up on are counted in stats.dropped and logged. A
 * waiting one counts in tg_client_writes_pending.
 *
 * Single-threaded: every function must be called on the loop's thread. */
#ifndef TG_INFORMER_CLIENT_H
#define TG_INFORMER_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "informer/kubeconfig.h"

struct tg_client;
struct tg_req;

/* What a finished request reports. err is 0 only for a 2xx status. Otherwise:
 * TG_EGONE (410), TG_ECONFLICT (409, reason Conflict), TG_EEXIST (409,
 * AlreadyExists), TG_ENOENT (404), TG_EHTTP (other status), TG_ETLS (the
 * server's certificate is not trusted, or the TLS handshake failed; one cut
 * off by a reset or closed connection is TG_EIO), TG_ETIMEOUT, TG_EIO
 * (connection failed or broke), TG_ECANCELED (a chunk
 * callback aborted). msg is a one-line explanation (the server's Status
 * message, or libcurl's error text); body is the buffered body (not
 * NUL-terminated in general; empty for streamed requests). Both are valid only
 * during the callback. */
struct tg_resp {
    int err;
    long status;            /* HTTP status, 0 when no response */
    const char *body;
    size_t len;
    const char *msg;
    int curl_code;          /* CURLcode, 0 when the transfer itself worked */
    long retry_after_s;     /* the answer's Retry-After in seconds (a date: until then), 0 none */
};

typedef void (*tg_done_fn)(void *ud, const struct tg_resp *r);
/* Streaming: receives the body as it arrives (only for 2xx responses).
 * Return 0 to continue, nonzero to abort (the request then finishes with
 * err TG_ECANCELED, or the value returned when it is a TG_E* code). */
typedef int (*tg_chunk_fn)(void *ud, const char *data, size_t len);

struct tg_req_opts {
    const char *method;     /* "GET" (default when NULL), "POST", "PUT", "PATCH", "DELETE" */
    const char *path;       /* "/api/v1/pods?limit=500": appended to the server URL */
    const char *body;       /* copied; NULL for none */
    size_t body_len;        /* 0: strlen(body) */
    const char *content_type; /* default application/json when there is a body */
    int is_write;           /* goes through the qps/burst limiter */
    int background;         /* a write that may wait (Events): started after every
                             * queued write, a few in flight at most */
    int urgent;             /* the Lease: ahead of everything, outside the limiter */
    int leader_only;        /* a write only the lease holder may make (tg_client_fence) */
    int retry;              /* a write whose repeat is harmless (an Event of a fixed name):
                             * retried with backoff (see the top) */
    long timeout_ms;        /* whole request; 0: 60 s, -1: none (watches) */
    tg_chunk_fn on_chunk;   /* NULL: buffer the body and hand it to on_done */
    tg_done_fn on_done;     /* called exactly once unless canceled; may be NULL */
    void *ud;
};

struct tg_client_opts {
    double qps;             /* writes per second; <= 0: unlimited */
    int burst;              /* bucket size (>= 1 when qps > 0) */
    const char *user_agent; /* default "topogang/<version>" */
    /* HTTP tuning, compared by `bench_informer http` (docs/bench-sched.md);
     * zero everywhere is the default the daemon runs with. */
    int writes_http;        /* 0 default; 1: writes on HTTP/1.1 keep-alive connections; 2: on HTTP/2 */
    int cork;               /* 0, 1: TCP_CORK lifted after each libcurl pass (client.c); -1: off */
    int nodelay_off;        /* 1: TCP_NODELAY off (Nagle) */
    long buffer_size;       /* CURLOPT_BUFFERSIZE, 0: libcurl's */
    long upload_buffer_size;/* CURLOPT_UPLOAD_BUFFERSIZE, 0: libcurl's */
    int headers_per_request;/* 1: build the header list per request (reused otherwise) */
    int no_sessionid_cache; /* 1: CURLOPT_SSL_SESSIONID_CACHE off */
    long max_streams;       /* CURLMOPT_MAX_CONCURRENT_STREAMS, 0: 1000 */
    int stall_s;            /* a request with a timeout that receives nothing this long
                             * fails (TG_ETIMEOUT), as does a silent connection; 0: 30 */
    int h2_direct;          /* 0: POST writes and GETs (lists, watches) on the direct
                             * HTTP/2 path when the server negotiates h2 (h2.c); -1: all
                             * through libcurl */
};

struct tg_client_stats {
    uint64_t requests, failed, writes_delayed;
    uint64_t token_reloads;
    uint64_t bytes_in;
    uint64_t http2;          /* requests answered over HTTP/2 */
    uint64_t connects;       /* new connections opened (the rest were reused) */
    uint64_t completed;      /* requests finished (any outcome) */
    uint64_t unstalled;      /* of those, finished by the once-a-second sweep */
    uint64_t fenced;         /* leader-only writes not sent or aborted past the fence */
    uint64_t handles;        /* libcurl easy handles made (idle ones are reused) */
    uint64_t corked;         /* connections opened corked (TCP_CORK, see client.c) */
    uint64_t retries;        /* tries of retried writes made again after a failure */
    uint64_t dropped;        /* retried writes not written: refused by a 4xx, tries ran
                              * out, or refused at the cap (TG_EAGAIN) */
    uint64_t throttled;      /* writes answered 429 or 503 (their lane's window halved) */
    uint64_t h2_direct;      /* requests answered on the direct HTTP/2 path (h2.c) */
    uint64_t h2_streams;     /* requests started on it (watches are never answered) */
    uint64_t h2_pings;       /* keepalive PINGs it sent (a silent connection, see stall_s) */
    uint64_t h2_connects;    /* its connections that came up */
    uint64_t h2_failures;    /* its connections that failed to come up or broke (counted
                              * at the next answer or within 200 ms) */
    uint32_t write_window;   /* writes (Bindings, status, deletes) that may run at once now */
    uint32_t bg_window;      /* background writes (Events) that may run at once now */
};

/* Creates a client on loop for conf (copied). opts may be NULL. *out is freed
 * with tg_client_free. Errors: TG_ENOMEM, TG_EINVAL (no server), TG_EIO (curl
 * initialisation failed). */
int tg_client_new(uv_loop_t *loop, const struct tg_kconf *conf,
                  const struct tg_client_opts *opts, struct tg_client **out);

/* Cancels every request (their on_done is not called), closes the handles and
 * frees the client once the loop has run their close callbacks. *c is NULL'ed. */
void tg_client_free(struct tg_client **c);

/* Queues a request; it starts on the next loop iteration (never from inside
 * this call, so it is safe from any callback). *out (optional) is a handle for
 * tg_client_cancel, valid until on_done returns. Errors: TG_ENOMEM, TG_EINVAL,
 * TG_EAGAIN (a retried write past the cap, counted in stats.dropped). */
int tg_client_request(struct tg_client *c, const struct tg_req_opts *o, struct tg_req **out);

/* Cancels a queued or running request: on_done will not be called. Safe from
 * any callback, including the request's own on_chunk. */
void tg_client_cancel(struct tg_req *r);

/* Runs the loop until this one request finishes (for tools and tests; never
 * from a loop callback). Copies the outcome into *r and the body (NUL-terminated,
 * caller frees) into *body when body is not NULL. Returns r->err. */
int tg_client_do(struct tg_client *c, const struct tg_req_opts *o, struct tg_resp *r,
                 char **body);

/* Leader-only writes may go out while tg_clock_mono_ms() < until_ms (see the
 * top); INT64_MAX (the default) never fences, 0 fences at once. Lowering the
 * fence finishes the queued and running leader-only writes past it on the
 * next loop iteration. */
void tg_client_fence(struct tg_client *c, int64_t until_ms);
/* Whether leader-only writes are fenced now. */
int tg_client_fenced(const struct tg_client *c);

/* Changes the write limiter at run time (policy reload). */
void tg_client_set_rate(struct tg_client *c, double qps, int burst);
const struct tg_client_stats *tg_client_stats(const struct tg_client *c);
/* Writes queued or running, not canceled (what a clean shutdown waits for). */
uint32_t tg_client_writes_pending(const struct tg_client *c);
const struct tg_kconf *tg_client_conf(const struct tg_client *c);
uv_loop_t *tg_client_loop(const struct tg_client *c);

/* Percent-encodes s for a query parameter value into a new string (free()). */
char *tg_url_escape(const char *s);

#endif
