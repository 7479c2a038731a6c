/* The client's direct HTTP/2 path (see h2.h): nghttp2 over OpenSSL memory
 * BIOs on a libuv TCP handle.
 *
 * A connection (struct conn) lives from the address lookup to the close
 * callback of its TCP handle; the path (struct tg__h2) holds at most one, and
 * opens the next on demand after a pause (RECONNECT_MS) when one failed or
 * broke. Bytes read go through SSL_read into nghttp2_session_mem_recv; the
 * frames nghttp2 has to send are gathered into one buffer, encrypted by one
 * SSL_write and written by one uv_try_write (the rest, if the socket is
 * full, by uv_write). Streams that end while nghttp2 runs are put on a list
 * and reported after it returns, so the client's callbacks never run inside
 * nghttp2.
 *
 * Credentials are the kubeconfig's, as client.c gives them to libcurl: the
 * CA (file or data; the system store when none), the client certificate and
 * key (file or data), insecure-skip-tls-verify, and a bearer token per
 * request (the client's, re-read when the file rotates). */
#include "informer/h2.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "util/err.h"
#include "util/log.h"
#include "util/strbuf.h"

#define COMP "client"
#define CONNECT_TIMEOUT_MS 10000
#define RECONNECT_MS 1000
#define READ_BUF 65536

enum { C_RESOLVING, C_CONNECTING, C_HANDSHAKE, C_UP, C_DEAD };

struct stream {
    LIST_ENTRY(stream) olink;       /* on the connection's open streams */
    STAILQ_ENTRY(stream) dlink;     /* or on its done list */
    struct conn *k;
    void *sud;                      /* NULL once reset by the client */
    int32_t id;
    char *body;                     /* a copy, in the same allocation */
    size_t len, off;
    long status, retry_after_s;
    uint32_t error_code;            /* RST_STREAM / GOAWAY code it closed with */
    int aborted;                    /* on_data refused the body */
};

struct conn {
    struct tg__h2 *h;               /* NULL once detached (the path dropped it) */
    int state, goaway, busy, tcp_open, gai_pending;
    uv_getaddrinfo_t gai;
    uv_connect_t creq;
    uv_tcp_t tcp;
    SSL *ssl;
    BIO *rbio, *wbio;               /* owned by ssl */
    nghttp2_session *ng;
    LIST_HEAD(, stream) open;
    STAILQ_HEAD(, stream) done;     /* set up by conn_up, which starts the streams */
    uint32_t nopen;
    uint64_t last_rx_ms;
    uint64_t ping_ms;               /* a keepalive PING was last sent (uv_now) */
    struct tg_sb plain;             /* frames gathered for one SSL_write */
    char *wire;                     /* what OpenSSL made of them, for one send */
    size_t wire_cap;
    char rbuf[READ_BUF];
};

struct tg__h2 {
    uv_loop_t *loop;
    struct tg__h2_hooks hooks;
    SSL_CTX *ctx;
    char *host, *port, *authority, *prefix, *ua;
    int ip;                         /* host is an address: verified as one, no SNI */
    int off;                        /* no h2 by ALPN: never again */
    struct conn *k;
    uint64_t retry_ms;              /* no new connection before this (uv_now) */
    uv_timer_t timer;               /* the connect deadline */
    struct tg__h2_stats stats;
};

static void conn_drop(struct conn *k, int err, const char *msg);
static void conn_recv(struct conn *k);

/* ---- streams reported outside nghttp2 ------------------------------------ */

static void stream_unlink(struct conn *k, struct stream *s)
{
    LIST_REMOVE(s, olink);
    k->nopen--;
}

static void stream_free(struct stream *s)
{
    free(s);
}

/* Reports the streams that ended (each once) and frees them. */
static void deliver(struct conn *k)
{
    struct stream *s;
    while ((s = STAILQ_FIRST(&k->done))) {
        STAILQ_REMOVE_HEAD(&k->done, dlink);
        struct tg__h2 *h = k->h;
        if (s->sud && h) {
            char msg[128];
            if (s->aborted) {
                h->hooks.on_done(h->hooks.ud, s->sud, TG_ECANCELED, "canceled");
            } else if (s->status >= 200 && (s->error_code == 0 || s->status >= 400)) {
                /* an answer; Go's server may reset the stream after an error
                 * status without reading the body: the status is its verdict */
                h->hooks.on_done(h->hooks.ud, s->sud, 0, NULL);
            } else {
                snprintf(msg, sizeof msg, "HTTP/2 stream %d %s (%s)", s->id,
                         s->error_code == NGHTTP2_REFUSED_STREAM ? "refused by the server"
                                                                 : "reset by the server",
                         nghttp2_http2_strerror(s->error_code));
                h->hooks.on_done(h->hooks.ud, s->sud, TG_EIO, msg);
            }
        }
        stream_free(s);
    }
}

/* ---- nghttp2 callbacks ---------------------------------------------------- */

static long parse_retry_after(const uint8_t *v, size_t n)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return 0;
    memcpy(buf, v, n);
    buf[n] = 0;
    char *end;
    long s = strtol(buf, &end, 10);
    if (end != buf && *end == 0)
        return s < 0 ? 0 : s > 3600 ? 3600 : s;
    time_t t = curl_getdate(buf, NULL);     /* an HTTP date: until then */
    long d = t > 0 ? (long)(t - time(NULL)) : 0;
    return d < 0 ? 0 : d > 3600 ? 3600 : d;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud)
{
    (void)flags;
    (void)ud;
    if (f->hd.type != NGHTTP2_HEADERS)
        return 0;
    struct stream *s = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!s)
        return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        long st = 0;
        for (size_t i = 0; i < valuelen && value[i] >= '0' && value[i] <= '9'; i++)
            st = st * 10 + (value[i] - '0');
        s->status = st;
    } else if (namelen == 11 && memcmp(name, "retry-after", 11) == 0) {
        s->retry_after_s = parse_retry_after(value, valuelen);
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct conn *k = ud;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        k->goaway = 1;  /* no new streams; those past its last id are refused */
        return 0;
    }
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_RESPONSE)
        return 0;
    struct stream *s = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (s && s->sud && k->h && s->status >= 200)
        k->h->hooks.on_head(k->h->hooks.ud, s->sud, s->status, s->retry_after_s);
    return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t sid, const uint8_t *data,
                         size_t len, void *ud)
{
    (void)flags;
    struct conn *k = ud;
    struct stream *s = nghttp2_session_get_stream_user_data(ng, sid);
    if (!s || !s->sud || s->aborted || !k->h)
        return 0;
    if (k->h->hooks.on_data(k->h->hooks.ud, s->sud, (const char *)data, len)) {
        s->aborted = 1;
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t sid, uint32_t code, void *ud)
{
    struct conn *k = ud;
    struct stream *s = nghttp2_session_get_stream_user_data(ng, sid);
    if (!s)
        return 0;
    nghttp2_session_set_stream_user_data(ng, sid, NULL);
    stream_unlink(k, s);
    s->error_code = code;
    STAILQ_INSERT_TAIL(&k->done, s, dlink);
    return 0;
}

static ssize_t read_body(nghttp2_session *ng, int32_t sid, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    (void)ng;
    (void)sid;
    (void)ud;
    struct stream *s = src->ptr;
    size_t n = s->len - s->off;
    if (n > len)
        n = len;
    memcpy(buf, s->body + s->off, n);
    s->off += n;
    if (s->off == s->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* ---- the connection ------------------------------------------------------- */

static void on_conn_closed(uv_handle_t *hd)
{
    struct conn *k = hd->data;
    k->tcp_open = 0;
    if (!k->gai_pending)
        free(k);
}

static void on_write_done(uv_write_t *w, int status)
{
    struct conn *k = w->data;
    free(w);
    if (status < 0 && k->h && k->state != C_DEAD)
        conn_drop(k, TG_EIO, uv_strerror(status));
}

/* What OpenSSL wrote into the memory BIO goes to the socket: one send when
 * it takes it all (the usual case), the rest queued behind. */
static int conn_send(struct conn *k)
{
    int n = BIO_pending(k->wbio);
    if (n <= 0)
        return 0;
    /* a buffer kept for the connection: no large allocation per send */
    if (k->wire_cap < (size_t)n) {
        char *nb = realloc(k->wire, (size_t)n);
        if (!nb)
            return TG_ENOMEM;
        k->wire = nb;
        k->wire_cap = (size_t)n;
    }
    char *buf = k->wire;
    BIO_read(k->wbio, buf, n);
    if (k->h) {
        k->h->stats.flushes++;
        k->h->stats.writes_bytes += (uint64_t)n;
    }
    uv_buf_t b = uv_buf_init(buf, (unsigned)n);
    int sent = uv_try_write((uv_stream_t *)&k->tcp, &b, 1);
    if (sent == n)
        return 0;
    if (sent < 0 && sent != UV_EAGAIN)
        return TG_EIO;
    if (sent < 0)
        sent = 0;
    /* the socket is full: the rest waits in a copy of its own */
    uv_write_t *w = malloc(sizeof *w + (size_t)(n - sent));
    if (!w)
        return TG_ENOMEM;
    memcpy(w + 1, buf + sent, (size_t)(n - sent));
    b = uv_buf_init((char *)(w + 1), (unsigned)(n - sent));
    w->data = k;
    if (uv_write(w, (uv_stream_t *)&k->tcp, &b, 1, on_write_done) != 0) {
        free(w);
        return TG_EIO;
    }
    return 0;
}

/* nghttp2's pending frames, one SSL_write, one send. */
static void conn_flush(struct conn *k)
{
    if (k->state == C_UP) {
        for (;;) {
            const uint8_t *d;
            ssize_t n = nghttp2_session_mem_send(k->ng, &d);
            if (n < 0) {
                conn_drop(k, TG_EIO, nghttp2_strerror((int)n));
                return;
            }
            if (n == 0)
                break;
            tg_sb_putn(&k->plain, (const char *)d, (size_t)n);
        }
        if (k->plain.oom) {
            conn_drop(k, TG_ENOMEM, "out of memory");
            return;
        }
        if (k->plain.len && SSL_write(k->ssl, k->plain.s, (int)k->plain.len) <= 0) {
            conn_drop(k, TG_EIO, "SSL_write failed");
            return;
        }
        tg_sb_reset(&k->plain);
        deliver(k);     /* streams closed by what was sent (a reset, a body after the answer) */
        if (!k->h || k->state == C_DEAD)
            return;
    }
    if (conn_send(k) != 0)
        conn_drop(k, TG_EIO, "write to the socket failed");
}

/* The TLS session is up: h2 by ALPN, or the path is off. */
static int conn_up(struct conn *k)
{
    struct tg__h2 *h = k->h;
    const unsigned char *alpn = NULL;
    unsigned alen = 0;
    SSL_get0_alpn_selected(k->ssl, &alpn, &alen);
    if (alen != 2 || memcmp(alpn, "h2", 2) != 0) {
        tg_info(COMP, "%s did not negotiate HTTP/2 (ALPN): every request goes through libcurl",
                h->authority);
        h->off = 1;
        return TG_ENOTSUP;
    }
    LIST_INIT(&k->open);
    STAILQ_INIT(&k->done);
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return TG_ENOMEM;
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    int rv = nghttp2_session_client_new(&k->ng, cb, k);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0)
        return TG_ENOMEM;
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                   {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    if (nghttp2_submit_settings(k->ng, NGHTTP2_FLAG_NONE, iv, 2) != 0 ||
        nghttp2_session_set_local_window_size(k->ng, NGHTTP2_FLAG_NONE, 0, 1 << 24) != 0)
        return TG_ENOMEM;
    k->state = C_UP;
    uv_timer_stop(&h->timer);
    h->stats.connects++;
    tg_info(COMP, "writes (Bindings, Events) and reads (lists, watches) on a direct HTTP/2 "
            "connection to %s (%llu so far)",
            h->authority, (unsigned long long)h->stats.connects);
    return 0;
}

static void ssl_error(struct conn *k, int err, const char *what)
{
    char msg[512];
    unsigned long e = ERR_get_error();
    long v = SSL_get_verify_result(k->ssl);
    if (v != X509_V_OK)
        snprintf(msg, sizeof msg, "%s: %s", what, X509_verify_cert_error_string(v));
    else
        snprintf(msg, sizeof msg, "%s: %s", what, e ? ERR_reason_error_string(e) : "connection closed");
    ERR_clear_error();
    conn_drop(k, err, msg);
}

static void handshake(struct conn *k)
{
    int rc = SSL_do_handshake(k->ssl);
    if (rc == 1) {
        int err = conn_up(k);
        if (err) {
            conn_drop(k, err, "no HTTP/2");
            return;
        }
        conn_recv(k);   /* what came with the handshake's last flight */
        if (k->state == C_UP)
            deliver(k);
        if (k->h && k->state == C_UP && k->h->hooks.on_up)
            k->h->hooks.on_up(k->h->hooks.ud);
        if (k->h && k->state == C_UP)
            conn_flush(k);
        return;
    }
    int e = SSL_get_error(k->ssl, rc);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        ssl_error(k, TG_ETLS, "TLS handshake failed");
        return;
    }
    if (conn_send(k) != 0)
        conn_drop(k, TG_EIO, "write to the socket failed");
}

/* Plaintext out of OpenSSL into nghttp2, until OpenSSL has no more. */
static void conn_recv(struct conn *k)
{
    char buf[16384];
    for (;;) {
        int n = SSL_read(k->ssl, buf, sizeof buf);
        if (n <= 0) {
            int e = SSL_get_error(k->ssl, n);
            if (e == SSL_ERROR_WANT_READ)
                return;
            if (e == SSL_ERROR_ZERO_RETURN)
                conn_drop(k, TG_EIO, "connection closed by the server (TLS close_notify)");
            else
                ssl_error(k, TG_EIO, "TLS read failed");
            return;
        }
        ssize_t rv = nghttp2_session_mem_recv(k->ng, (const uint8_t *)buf, (size_t)n);
        if (rv < 0) {
            conn_drop(k, TG_EIO, nghttp2_strerror((int)rv));
            return;
        }
    }
}

static void on_alloc(uv_handle_t *hd, size_t hint, uv_buf_t *b)
{
    (void)hint;
    struct conn *k = hd->data;
    *b = uv_buf_init(k->rbuf, sizeof k->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct conn *k = st->data;
    if (n == 0 || !k->h || k->state == C_DEAD)
        return;
    if (n < 0) {
        conn_drop(k, TG_EIO, n == UV_EOF ? "connection closed by the server" : uv_strerror((int)n));
        return;
    }
    struct tg__h2 *h = k->h;
    k->last_rx_ms = uv_now(h->loop);
    BIO_write(k->rbio, b->base, (int)n);
    if (k->state == C_HANDSHAKE) {
        handshake(k);
        return;
    }
    if (h->hooks.on_wake)
        h->hooks.on_wake(h->hooks.ud);
    if (k->state != C_UP)
        return;
    k->busy++;
    conn_recv(k);
    k->busy--;
    if (k->state == C_DEAD || !k->h)
        return;
    deliver(k);
    if (!k->h || k->state == C_DEAD)
        return;
    conn_flush(k);
    if (k->h && k->state == C_UP && !nghttp2_session_want_read(k->ng) &&
        !nghttp2_session_want_write(k->ng))
        conn_drop(k, TG_EIO, "connection ended by the server (GOAWAY)");
}

static void on_connect(uv_connect_t *req, int status)
{
    struct conn *k = req->data;
    if (!k->h || k->state == C_DEAD)
        return;
    if (status < 0) {
        conn_drop(k, TG_EIO, uv_strerror(status));
        return;
    }
    struct tg__h2 *h = k->h;
    k->ssl = SSL_new(h->ctx);
    k->rbio = BIO_new(BIO_s_mem());
    k->wbio = BIO_new(BIO_s_mem());
    if (!k->ssl || !k->rbio || !k->wbio) {
        BIO_free(k->rbio);
        BIO_free(k->wbio);
        conn_drop(k, TG_ENOMEM, "out of memory");
        return;
    }
    SSL_set_bio(k->ssl, k->rbio, k->wbio);
    if (h->ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(k->ssl), h->host);
    } else {
        SSL_set_tlsext_host_name(k->ssl, h->host);
        SSL_set1_host(k->ssl, h->host);
    }
    SSL_set_connect_state(k->ssl);
    k->state = C_HANDSHAKE;
    if (uv_read_start((uv_stream_t *)&k->tcp, on_alloc, on_read) != 0) {
        conn_drop(k, TG_EIO, "cannot read the socket");
        return;
    }
    handshake(k);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai)
{
    struct conn *k = req->data;
    k->gai_pending = 0;
    if (!k->h || k->state == C_DEAD) {
        uv_freeaddrinfo(ai);
        if (!k->tcp_open)
            free(k);
        return;
    }
    if (status < 0 || !ai) {
        uv_freeaddrinfo(ai);
        conn_drop(k, TG_EIO, status < 0 ? uv_strerror(status) : "no address");
        return;
    }
    struct tg__h2 *h = k->h;
    int rc = uv_tcp_init(h->loop, &k->tcp);
    if (rc == 0) {
        k->tcp_open = 1;
        k->tcp.data = k;
        uv_tcp_nodelay(&k->tcp, 1);
        uv_tcp_keepalive(&k->tcp, 1, 30);
        k->creq.data = k;
        k->state = C_CONNECTING;
        rc = uv_tcp_connect(&k->creq, &k->tcp, ai->ai_addr, on_connect);
    }
    uv_freeaddrinfo(ai);
    if (rc != 0)
        conn_drop(k, TG_EIO, uv_strerror(rc));
}

static void on_timer(uv_timer_t *t)
{
    struct tg__h2 *h = t->data;
    if (h->k && h->k->state != C_UP)
        conn_drop(h->k, TG_ETIMEOUT, "HTTP/2 connection not up in 10 s");
}

/* Ends k: its open streams and those not yet reported end with err (the
 * client sends them again or fails them), the handles close, and the path
 * waits RECONNECT_MS before the next. */
static void conn_drop(struct conn *k, int err, const char *msg)
{
    struct tg__h2 *h = k->h;
    if (k->state == C_DEAD)
        return;
    k->state = C_DEAD;
    if (h) {
        h->k = NULL;
        h->retry_ms = uv_now(h->loop) + RECONNECT_MS;
        h->stats.failures++;
        uv_timer_stop(&h->timer);
        if (k->nopen)
            tg_info(COMP, "HTTP/2 connection to %s ended: %s (%u stream(s) open)", h->authority,
                    msg, k->nopen);
        else
            tg_debug(COMP, "HTTP/2 connection to %s failed: %s (libcurl takes the writes)",
                     h->authority, msg);
    }
    /* streams nghttp2 reported closed are answered; the rest fail with err */
    deliver(k);
    struct stream *s;
    while ((s = LIST_FIRST(&k->open))) {
        stream_unlink(k, s);
        if (s->sud && k->h)
            k->h->hooks.on_done(k->h->hooks.ud, s->sud, err, msg);
        stream_free(s);
    }
    k->h = NULL;
    if (h && h->hooks.on_down)
        h->hooks.on_down(h->hooks.ud);
    nghttp2_session_del(k->ng);     /* its stream data are gone already */
    k->ng = NULL;
    SSL_free(k->ssl);
    k->ssl = NULL;
    tg_sb_free(&k->plain);
    free(k->wire);
    k->wire = NULL;
    if (k->gai_pending)
        uv_cancel((uv_req_t *)&k->gai);     /* freed by on_resolved */
    if (k->tcp_open)
        uv_close((uv_handle_t *)&k->tcp, on_conn_closed);
    else if (!k->gai_pending)
        free(k);
}

static void conn_start(struct tg__h2 *h)
{
    struct conn *k = calloc(1, sizeof *k);
    if (!k) {
        h->retry_ms = uv_now(h->loop) + RECONNECT_MS;
        return;
    }
    k->h = h;
    k->state = C_RESOLVING;
    k->gai.data = k;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    h->k = k;
    k->gai_pending = 1;
    int rc = uv_getaddrinfo(h->loop, &k->gai, on_resolved, h->host, h->port, &hints);
    if (rc != 0) {
        k->gai_pending = 0;
        conn_drop(k, TG_EIO, uv_strerror(rc));
        return;
    }
    uv_timer_start(&h->timer, on_timer, CONNECT_TIMEOUT_MS, 0);
}

/* ---- TLS material ---------------------------------------------------------- */

static int load_pem_certs(SSL_CTX *ctx, const char *data, size_t len, int chain)
{
    BIO *b = BIO_new_mem_buf(data, (int)len);
    X509 *x;
    int n = 0, rc = 0;
    while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        if (!chain)
            rc = X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), x) == 1 ? 0 : -1;
        else if (n == 0)
            rc = SSL_CTX_use_certificate(ctx, x) == 1 ? 0 : -1;
        else
            rc = SSL_CTX_add1_chain_cert(ctx, x) == 1 ? 0 : -1;
        X509_free(x);
        n++;
        if (rc)
            break;
    }
    ERR_clear_error();  /* the end of the PEM data */
    BIO_free(b);
    return rc || n == 0 ? -1 : 0;
}

static SSL_CTX *make_ctx(const struct tg_kconf *k)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, k->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    int ok = SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x02h2", 3) == 0;
    if (k->ca_data)
        ok = ok && load_pem_certs(ctx, k->ca_data, k->ca_len, 0) == 0;
    else if (k->ca_file)
        ok = ok && SSL_CTX_load_verify_locations(ctx, k->ca_file, NULL) == 1;
    else
        ok = ok && SSL_CTX_set_default_verify_paths(ctx) == 1;
    if (k->cert_data)
        ok = ok && load_pem_certs(ctx, k->cert_data, k->cert_len, 1) == 0;
    else if (k->cert_file)
        ok = ok && SSL_CTX_use_certificate_chain_file(ctx, k->cert_file) == 1;
    if (k->key_data) {
        BIO *b = BIO_new_mem_buf(k->key_data, (int)k->key_len);
        EVP_PKEY *pk = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
        ok = ok && pk && SSL_CTX_use_PrivateKey(ctx, pk) == 1;
        EVP_PKEY_free(pk);
        BIO_free(b);
    } else if (k->key_file) {
        ok = ok && SSL_CTX_use_PrivateKey_file(ctx, k->key_file, SSL_FILETYPE_PEM) == 1;
    }
    ERR_clear_error();
    if (!ok) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* ---- the path ------------------------------------------------------------- */

static int proxied(void)
{
    static const char *const vars[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return 1;
    }
    return 0;
}

/* "https://host[:port][/prefix]" into h's host, port, authority, prefix. */
static int parse_server(struct tg__h2 *h, const char *url)
{
    if (strncmp(url, "https://", 8) != 0)
        return TG_EINVAL;
    const char *p = url + 8, *end = p + strcspn(p, "/"), *hs = p, *he, *colon;
    if (*p == '[') {
        hs = p + 1;
        he = memchr(p, ']', (size_t)(end - p));
        if (!he)
            return TG_EINVAL;
        colon = he + 1 < end && he[1] == ':' ? he + 1 : NULL;
        h->ip = 1;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        he = colon ? colon : end;
    }
    if (he == hs)
        return TG_EINVAL;
    h->host = strndup(hs, (size_t)(he - hs));
    h->port = colon ? strndup(colon + 1, (size_t)(end - colon - 1)) : strdup("443");
    h->authority = strndup(p, (size_t)(end - p));
    h->prefix = strdup(end);
    if (!h->host || !h->port || !h->authority || !h->prefix)
        return TG_ENOMEM;
    unsigned char a[16];
    if (!h->ip)
        h->ip = inet_pton(AF_INET, h->host, a) == 1;
    return 0;
}

static void h2_release(struct tg__h2 *h)
{
    SSL_CTX_free(h->ctx);
    free(h->host);
    free(h->port);
    free(h->authority);
    free(h->prefix);
    free(h->ua);
    free(h);
}

static void on_h2_closed(uv_handle_t *hd)
{
    h2_release(hd->data);
}

int tg__h2_new(uv_loop_t *loop, const struct tg_kconf *conf, const char *user_agent,
               const struct tg__h2_hooks *hooks, struct tg__h2 **out)
{
    *out = NULL;
    const char *env = getenv("TOPOGANG_H2_DIRECT");
    if ((env && *env == '0') || !conf->server || strncmp(conf->server, "https://", 8) != 0 ||
        proxied())
        return 0;
    struct tg__h2 *h = calloc(1, sizeof *h);
    if (!h)
        return TG_ENOMEM;
    h->loop = loop;
    h->hooks = *hooks;
    int rc = parse_server(h, conf->server);
    if (rc == 0 && !(h->ua = strdup(user_agent)))
        rc = TG_ENOMEM;
    if (rc == 0 && !(h->ctx = make_ctx(conf))) {
        tg_debug(COMP, "no direct HTTP/2 path: OpenSSL refused the kubeconfig's TLS material");
        rc = TG_EINVAL;
    }
    if (rc) {
        h2_release(h);
        return rc == TG_ENOMEM ? rc : 0;
    }
    uv_timer_init(loop, &h->timer);
    h->timer.data = h;
    *out = h;
    return 0;
}

void tg__h2_free(struct tg__h2 **ph)
{
    struct tg__h2 *h = *ph;
    if (!h)
        return;
    *ph = NULL;
    if (h->k) {
        struct conn *k = h->k;
        k->h = NULL;    /* no callbacks: the client frees its requests */
        conn_drop(k, TG_ECANCELED, "client closed");
    }
    uv_close((uv_handle_t *)&h->timer, on_h2_closed);
}

int tg__h2_ready(struct tg__h2 *h)
{
    if (!h || h->off)
        return 0;
    if (h->k)
        return h->k->state == C_UP && !h->k->goaway;
    if (uv_now(h->loop) >= h->retry_ms)
        conn_start(h);
    return 0;
}

/* a then b in buf when they fit, else in a malloc'ed string (NULL: out of
 * memory); the caller frees what is not buf. */
static char *concat(char *buf, size_t n, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = la + lb < n ? buf : malloc(la + lb + 1);
    if (p) {
        memcpy(p, a, la);
        memcpy(p + la, b, lb + 1);
    }
    return p;
}

int32_t tg__h2_submit(struct tg__h2 *h, const char *method, const char *path,
                      const char *ctype, const char *token, const char *body, size_t len,
                      void *sud)
{
    if (!tg__h2_ready(h))
        return TG_EAGAIN;
    struct conn *k = h->k;
    /* the stream and its body in one allocation; the path and the token's
     * header on the stack unless long (nghttp2 copies both) */
    struct stream *s = calloc(1, sizeof *s + len);
    char pbuf[512], abuf[2048], clen[24];
    char *fullpath = concat(pbuf, sizeof pbuf, h->prefix, path);
    char *auth = token ? concat(abuf, sizeof abuf, "Bearer ", token) : NULL;
    if (!s || !fullpath || (token && !auth))
        goto nomem;
    s->body = (char *)(s + 1);
    if (len)
        memcpy(s->body, body, len);
    s->len = len;
    s->sud = sud;
    s->k = k;
    snprintf(clen, sizeof clen, "%zu", len);
#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv nv[9] = {
        NV(":method", method), NV(":scheme", "https"), NV(":authority", h->authority),
        NV(":path", fullpath), NV("user-agent", h->ua), NV("accept", "application/json"),
    };
    size_t nnv = 6;
    if (body) {     /* a GET has neither */
        nv[nnv++] = (nghttp2_nv)NV("content-type", ctype ? ctype : "application/json");
        nv[nnv++] = (nghttp2_nv)NV("content-length", clen);
    }
    if (auth)
        nv[nnv++] = (nghttp2_nv)NV("authorization", auth);
#undef NV
    nghttp2_data_provider dp = {.source.ptr = s, .read_callback = read_body};
    int32_t sid = nghttp2_submit_request(k->ng, NULL, nv, nnv, body ? &dp : NULL, s);
    if (fullpath != pbuf)
        free(fullpath);
    if (auth != abuf)
        free(auth);
    if (sid < 0) {
        stream_free(s);
        return TG_EAGAIN;
    }
    s->id = sid;
    LIST_INSERT_HEAD(&k->open, s, olink);
    k->nopen++;
    if (k->nopen == 1)
        k->last_rx_ms = uv_now(h->loop);  /* the stall clock starts with the first stream */
    return sid;
nomem:
    if (fullpath != pbuf)
        free(fullpath);
    if (auth != abuf)
        free(auth);
    if (s)
        stream_free(s);
    return TG_ENOMEM;
}

void tg__h2_reset(struct tg__h2 *h, int32_t sid)
{
    struct conn *k = h ? h->k : NULL;
    if (!k || k->state != C_UP)
        return;
    struct stream *s = nghttp2_session_get_stream_user_data(k->ng, sid);
    if (!s)
        return;
    s->sud = NULL;
    nghttp2_submit_rst_stream(k->ng, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL);
}

void tg__h2_flush(struct tg__h2 *h)
{
    if (h && h->k && h->k->state == C_UP && !h->k->busy)
        conn_flush(h->k);
}

void tg__h2_check(struct tg__h2 *h, uint64_t stall_ms)
{
    struct conn *k = h ? h->k : NULL;
    if (!k || k->state != C_UP || !k->nopen)
        return;
    uint64_t now = uv_now(h->loop), idle = now - k->last_rx_ms;
    if (idle > stall_ms) {
        char msg[96];
        snprintf(msg, sizeof msg, "no answer on the HTTP/2 connection for %llu s",
                 (unsigned long long)(stall_ms / 1000));
        conn_drop(k, TG_ETIMEOUT, msg);
    } else if (idle > stall_ms / 3 && k->ping_ms <= k->last_rx_ms &&
               nghttp2_submit_ping(k->ng, NGHTTP2_FLAG_NONE, NULL) == 0) {
        /* a watch may idle for minutes: a PING the server answers (its ACK
         * is something received) tells a live connection from a dead one;
         * it leaves at the client's next tg__h2_flush */
        k->ping_ms = now;
        h->stats.pings++;
    }
}

int tg__h2_coming(struct tg__h2 *h)
{
    return h && !h->off && h->k && h->k->state != C_UP && h->k->state != C_DEAD;
}

const struct tg__h2_stats *tg__h2_stats(const struct tg__h2 *h)
{
    return &h->stats;
}
