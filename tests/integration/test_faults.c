/* Integration: malformed and truncated watch streams from a fault-injecting
 * proxy in front of the real kube-apiserver. The proxy (threads, plain HTTP
 * to the client, libcurl + TLS to the apiserver, adding the bearer token)
 * passes LISTs through; on the first watch it inserts a garbage line after
 * three events, on the second it cuts the stream inside an event. The
 * reflector must count both, restart the watch from its last
 * resourceVersion, and end equal to the server's LIST; nothing crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "cluster.h"
#include "informer_check.h"
#include "informer/kinds.h"

static struct tgc cl;

struct proxy {
    int lfd, port;
    pthread_t th;
    volatile int stop;
    pthread_mutex_t mu;
    int watches;               /* watch requests seen */
    int injected, truncated;
};

struct conn {
    struct proxy *px;
    int fd;
    int is_watch, mode;        /* mode 1: garbage after 3 lines, 2: cut after 2 lines */
    int lines, sent_head, cut;
    CURL *e;
};

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static size_t up_write(char *p, size_t sz, size_t n, void *ud)
{
    struct conn *k = ud;
    size_t len = sz * n;
    if (!k->sent_head) {
        long st = 0;
        char head[128];
        curl_easy_getinfo(k->e, CURLINFO_RESPONSE_CODE, &st);
        snprintf(head, sizeof head, "HTTP/1.1 %ld X\r\nContent-Type: application/json\r\n"
                 "Connection: close\r\n\r\n", st);
        if (send_all(k->fd, head, strlen(head)))
            return 0;
        k->sent_head = 1;
    }
    if (!k->is_watch || !k->mode)
        return send_all(k->fd, p, len) ? 0 : len;
    size_t from = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != '\n')
            continue;
        if (send_all(k->fd, p + from, i + 1 - from))
            return 0;
        from = i + 1;
        k->lines++;
        if (k->mode == 1 && k->lines == 3) {
            static const char bad[] = "{\"type\":\"MODIFIED\",\"object\":{oops\n";
            send_all(k->fd, bad, sizeof bad - 1);
            pthread_mutex_lock(&k->px->mu);
            k->px->injected++;
            pthread_mutex_unlock(&k->px->mu);
        }
        if (k->mode == 2 && k->lines == 2) {
            static const char cut[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"cut";
            send_all(k->fd, cut, sizeof cut - 1);
            pthread_mutex_lock(&k->px->mu);
            k->px->truncated++;
            pthread_mutex_unlock(&k->px->mu);
            k->cut = 1;
            return 0;              /* abort upstream; the client sees the cut */
        }
    }
    return send_all(k->fd, p + from, len - from) ? 0 : len;
}

static void *serve_conn(void *arg)
{
    struct conn *k = arg;
    char req[8192];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof req - 1 && (r = recv(k->fd, req + n, sizeof req - 1 - n, 0)) > 0) {
        n += (size_t)r;
        req[n] = 0;
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    req[n] = 0;
    char method[16] = "", path[4096] = "";
    if (sscanf(req, "%15s %4095s", method, path) == 2 && strcmp(method, "GET") == 0) {
        char url[4300], auth[256];
        snprintf(url, sizeof url, "%s%s", cl.server, path);
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", cl.token);
        k->is_watch = strstr(path, "watch=1") != NULL;
        if (k->is_watch) {
            pthread_mutex_lock(&k->px->mu);
            k->mode = ++k->px->watches;       /* 1, 2, then pass-through */
            pthread_mutex_unlock(&k->px->mu);
            if (k->mode > 2)
                k->mode = 0;
        }
        char cafile[512];
        snprintf(cafile, sizeof cafile, "%s/ca.crt", cl.dir);
        struct curl_slist *h = curl_slist_append(NULL, auth);
        k->e = curl_easy_init();
        curl_easy_setopt(k->e, CURLOPT_URL, url);
        curl_easy_setopt(k->e, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(k->e, CURLOPT_CAINFO, cafile);
        curl_easy_setopt(k->e, CURLOPT_WRITEFUNCTION, up_write);
        curl_easy_setopt(k->e, CURLOPT_WRITEDATA, k);
        curl_easy_setopt(k->e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_perform(k->e);
        curl_easy_cleanup(k->e);
        curl_slist_free_all(h);
    }
    close(k->fd);
    free(k);
    return NULL;
}

static void *serve(void *arg)
{
    struct proxy *px = arg;
    while (!px->stop) {
        int fd = accept(px->lfd, NULL, NULL);
        if (fd < 0)
            break;
        struct conn *k = calloc(1, sizeof *k);
        k->px = px;
        k->fd = fd;
        pthread_t t;
        pthread_create(&t, NULL, serve_conn, k);
        pthread_detach(t);
    }
    return NULL;
}

static void proxy_start(struct proxy *px)
{
    memset(px, 0, sizeof *px);
    pthread_mutex_init(&px->mu, NULL);
    px->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(px->lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    getsockname(px->lfd, (struct sockaddr *)&a, &al);
    px->port = ntohs(a.sin_port);
    listen(px->lfd, 16);
    pthread_create(&px->th, NULL, serve, px);
}

struct ctx {
    struct tg_client *direct;
    struct tg_reflector *r;
    struct proxy *px;
    struct driver *d;
    uv_loop_t *loop;
    int next;
    char why[512];
};

/* Keeps writes coming (so the watch has events to carry) until both faults
 * happened and the cache equals the server's LIST. */
static int done(void *ud)
{
    struct ctx *x = ud;
    const struct tg_reflector_stats *st = tg_reflector_stats(x->r);
    pthread_mutex_lock(&x->px->mu);
    int faults = x->px->injected >= 1 && x->px->truncated >= 1;
    pthread_mutex_unlock(&x->px->mu);
    if (!faults || st->parse_errors < 2) {
        if (x->d->done == x->d->n && x->next < 400) {
            drv_reset(x->d);
            for (int i = 0; i < 5; i++, x->next++) {
                char b[512];
                snprintf(b, sizeof b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                         "\"f-%04d\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}", x->next);
                drv_add(x->d, "POST", NULL, b, "/api/v1/namespaces/faults/pods");
            }
            drv_fill(x->d);
        }
        return 0;
    }
    if (x->d->done != x->d->n)
        return 0;
    return cache_equals_list(x->direct, tg_reflector_store(x->r), "/api/v1/namespaces/faults/pods", 1,
                             x->why, sizeof x->why);
}

static void malformed_and_truncated_streams(void **s)
{
    (void)s;
    assert_int_equal(tgc_up(&cl, NULL), 0);
    assert_int_equal(tgc_kubectl(&cl, "create namespace faults >/dev/null"), 0);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct proxy px;
    proxy_start(&px);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct tg_client *direct = tgc_client(&cl, &loop, NULL);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", px.port);
    struct tg_kconf conf = {.server = url};
    struct tg_client *viaproxy;
    assert_int_equal(tg_client_new(&loop, &conf, NULL, &viaproxy), 0);
    struct shadow sh = {0};
    struct tg_reflector_opts o = {.kind = &tg_kind_pod, .path = "/api/v1/namespaces/faults/pods",
                                  .backoff_min_ms = 50, .backoff_max_ms = 500,
                                  .h = sh_handlers(&sh, &tg_kind_pod)};
    struct tg_reflector *r;
    assert_int_equal(tg_reflector_new(viaproxy, &o, &r), 0);
    tg_reflector_start(r);
    struct driver d = {.c = direct};
    drv_reset(&d);
    struct ctx x = {.direct = direct, .r = r, .px = &px, .d = &d, .loop = &loop};
    int ok = tgc_run_until(&loop, done, &x, 90000);
    const struct tg_reflector_stats *st = tg_reflector_stats(r);
    printf("# proxy: watches=%d injected=%d truncated=%d | reflector: parse_errors=%llu "
           "errors=%llu watches=%llu relists=%llu objects=%u pods created=%d (%s)\n",
           px.watches, px.injected, px.truncated, (unsigned long long)st->parse_errors,
           (unsigned long long)st->errors, (unsigned long long)st->watches,
           (unsigned long long)st->relists, tg_store_len(tg_reflector_store(r)), x.next, x.why);
    assert_true(ok);
    assert_true(st->parse_errors >= 2);
    assert_true(st->watches >= 3);
    assert_int_equal(st->relists, 0);        /* resumed from the last resourceVersion */
    assert_true(sh_consistent(&sh, tg_reflector_store(r)));
    assert_null(tg_store_get(tg_reflector_store(r), "faults/cut"));

    tg_reflector_free(&r);
    tg_client_free(&viaproxy);
    tg_client_free(&direct);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    sh_free(&sh);
    drv_reset(&d);
    px.stop = 1;
    shutdown(px.lfd, SHUT_RDWR);
    close(px.lfd);
    pthread_join(px.th, NULL);
    tgc_down(&cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(malformed_and_truncated_streams),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tgc_down(&cl);
    return rc;
}
