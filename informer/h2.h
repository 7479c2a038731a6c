/* Internal to informer/ (client.c): one HTTP/2 connection of its own, driven
 * by nghttp2 over OpenSSL memory BIOs on a libuv TCP handle, for the client's
 * hot POSTs (Bindings, Events) and its GETs (lists, the informers' watches:
 * a bind's answer and its watch event then come in one read). Every frame
 * nghttp2 produced since the last
 * flush leaves in one SSL_write and one send; a readable wakeup hands the
 * bytes to nghttp2, which calls back only for the streams that got frames
 * (libcurl 7.88 runs every transfer of the socket instead:
 * docs/bench-sched.md, "A direct HTTP/2 write path").
 *
 * The connection is opened on demand (tg__h2_ready) and again after it
 * breaks, at most once a second; a server that does not negotiate h2 by ALPN
 * turns the path off for good. While it is not up, tg__h2_ready says no and
 * the client sends through libcurl. Single-threaded, on the client's loop. */
#ifndef TG_INFORMER_H2_H
#define TG_INFORMER_H2_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "informer/kubeconfig.h"

struct tg__h2;

/* The client's side. sud is what tg__h2_submit was given. Callbacks come
 * from the loop (a read, a write's end, tg__h2_flush), never from inside
 * tg__h2_submit or tg__h2_reset. */
struct tg__h2_hooks {
    void *ud;
    /* before the connection's bytes are handed to nghttp2 (the fence check) */
    void (*on_wake)(void *ud);
    /* the response's status and Retry-After (seconds, 0 none) */
    void (*on_head)(void *ud, void *sud, long status, long retry_after_s);
    /* a piece of the body; nonzero resets the stream (it then ends with
     * on_done(TG_ECANCELED)) */
    int (*on_data)(void *ud, void *sud, const char *p, size_t n);
    /* the stream ended: err 0 (an answer came: its status was given), or
     * TG_EIO / TG_ETLS / TG_ETIMEOUT / TG_ECANCELED with msg. Exactly once per
     * stream not reset by tg__h2_reset. */
    void (*on_done)(void *ud, void *sud, int err, const char *msg);
    /* the connection is up: requests queued meanwhile may come */
    void (*on_up)(void *ud);
    /* the connection failed or ended (the path waits a second before the
     * next): requests held for it may go through libcurl */
    void (*on_down)(void *ud);
};

/* A path for conf's server, or *out NULL when there is none to have: an
 * http:// server, a proxy in the environment, TOPOGANG_H2_DIRECT=0, or TLS
 * material OpenSSL refuses (libcurl then reports it). Connects on the first
 * tg__h2_ready. Returns 0 or TG_ENOMEM. Freed with tg__h2_free. */
int tg__h2_new(uv_loop_t *loop, const struct tg_kconf *conf, const char *user_agent,
               const struct tg__h2_hooks *hooks, struct tg__h2 **out);

/* Drops the connection without calling back (the client frees its requests
 * itself); the memory goes once the loop has closed the handles. */
void tg__h2_free(struct tg__h2 **h);

/* Whether a stream can be submitted now; starts connecting when idle. */
int tg__h2_ready(struct tg__h2 *h);

/* Whether a connection is being opened (resolved, connected, handshaken):
 * on_up or on_down follows. */
int tg__h2_coming(struct tg__h2 *h);

/* Submits a request (the body is copied; body NULL: none, as a GET); the frames leave at the next
 * tg__h2_flush. Returns the stream id (> 0), or a negative TG_E* code when
 * the connection cannot take it (the caller sends it another way). */
int32_t tg__h2_submit(struct tg__h2 *h, const char *method, const char *path,
                      const char *ctype, const char *token, const char *body, size_t len,
                      void *sud);

/* Cancels stream sid (RST_STREAM at the next flush); no callback for it. */
void tg__h2_reset(struct tg__h2 *h, int32_t sid);

/* Sends what nghttp2 has ready: one SSL_write, one send. */
void tg__h2_flush(struct tg__h2 *h);

/* Once a second or so: drops a connection with streams open that has
 * received nothing for stall_ms (they end with TG_ETIMEOUT); one silent for
 * a third of that is sent a PING, whose answer counts as received (streams
 * may idle: watches). */
void tg__h2_check(struct tg__h2 *h, uint64_t stall_ms);

struct tg__h2_stats {
    uint64_t connects;      /* connections that came up */
    uint64_t failures;      /* connections that failed to come up or broke */
    uint64_t flushes, writes_bytes;
    uint64_t pings;         /* keepalive PINGs sent */
};
const struct tg__h2_stats *tg__h2_stats(const struct tg__h2 *h);

#endif
