/* Integration-test helpers: a real etcd + kube-apiserver on loopback per test
 * program (scripts/cluster-up in a temp dir, stopped at exit or when the test
 * process dies), kubectl, and a client on a libuv loop.
 *
 * A test exits 77 (meson: SKIP) only when scripts/build-k8s cannot produce
 * the control-plane binaries (no Go toolchain, no module proxy); any other
 * failure to start the cluster fails the test. Header-only: each test
 * program includes it once. */
#ifndef TG_TESTS_INTEGRATION_CLUSTER_H
#define TG_TESTS_INTEGRATION_CLUSTER_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "informer/client.h"
#include "informer/kubeconfig.h"

struct tgc {
    char dir[256];
    char kubeconfig[512];
    char server[128], token[128], token_b[128], etcd[128], bin[512];
    char src[1024];
};

__attribute__((unused)) static int tgc_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
__attribute__((unused)) static int tgc_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

__attribute__((unused)) static void tgc_env_get(const char *envfile, const char *key, char *out, size_t len)
{
    FILE *f = fopen(envfile, "r");
    char line[2048];
    size_t kl = strlen(key);
    out[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *p = line;
        if (strncmp(p, "export ", 7) == 0)
            p += 7;
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            snprintf(out, len, "%s", p + kl + 1);
            out[strcspn(out, "\n")] = 0;
        }
    }
    if (f)
        fclose(f);
}

/* Starts a control plane; extra: kube-apiserver flags (or NULL). Exits 77
 * when the binaries cannot be built. Returns 0 or -1. */
__attribute__((unused)) static int tgc_up(struct tgc *c, const char *extra)
{
    memset(c, 0, sizeof *c);
    const char *src = getenv("TOPOGANG_SRC");
    snprintf(c->src, sizeof c->src, "%s", src ? src : ".");
    if (tgc_sh("'%s/scripts/build-k8s' > /tmp/tg-build-k8s.$$.log 2>&1 || "
               "{ cat /tmp/tg-build-k8s.$$.log >&2; rm -f /tmp/tg-build-k8s.$$.log; exit 1; }; "
               "rm -f /tmp/tg-build-k8s.$$.log", c->src) != 0) {
        fprintf(stderr, "SKIP: scripts/build-k8s could not build kube-apiserver "
                        "(needs Go and the module proxy)\n");
        exit(77);
    }
    snprintf(c->dir, sizeof c->dir, "/tmp/tg-it-XXXXXX");
    if (!mkdtemp(c->dir))
        return -1;
    char ownerenv[64];
    snprintf(ownerenv, sizeof ownerenv, "%d", (int)getpid());
    setenv("TG_CLUSTER_OWNER", ownerenv, 1);
    if (extra)
        setenv("TG_APISERVER_ARGS", extra, 1);
    else
        unsetenv("TG_APISERVER_ARGS");
    if (tgc_sh("'%s/scripts/cluster-up' '%s' >/dev/null", c->src, c->dir) != 0) {
        fprintf(stderr, "cluster-up failed (see %s)\n", c->dir);
        return -1;
    }
    char envf[512];
    snprintf(envf, sizeof envf, "%s/env", c->dir);
    tgc_env_get(envf, "KUBECONFIG", c->kubeconfig, sizeof c->kubeconfig);
    tgc_env_get(envf, "TG_SERVER", c->server, sizeof c->server);
    tgc_env_get(envf, "TG_TOKEN", c->token, sizeof c->token);
    tgc_env_get(envf, "TG_TOKEN_B", c->token_b, sizeof c->token_b);
    tgc_env_get(envf, "TG_ETCD", c->etcd, sizeof c->etcd);
    tgc_env_get(envf, "TG_K8S_BIN", c->bin, sizeof c->bin);
    setenv("KUBECONFIG", c->kubeconfig, 1);
    return c->kubeconfig[0] && c->server[0] ? 0 : -1;
}

__attribute__((unused)) static void tgc_down(struct tgc *c)
{
    if (!c->dir[0])
        return;
    tgc_sh("'%s/scripts/cluster-down' '%s' >/dev/null 2>&1; rm -rf '%s'", c->src, c->dir, c->dir);
    c->dir[0] = 0;
}

/* kubectl against the cluster; returns its exit status. */
__attribute__((unused)) static int tgc_kubectl(struct tgc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
__attribute__((unused)) static int tgc_kubectl(struct tgc *c, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return tgc_sh("'%s/kubectl' --kubeconfig '%s' %s", c->bin, c->kubeconfig, args);
}

/* SIGKILLs kube-apiserver (etcd stays). */
__attribute__((unused)) static void tgc_apiserver_kill(struct tgc *c)
{
    tgc_sh("cd '%s' && kill -9 $(cat apiserver.pid) && while kill -0 $(cat apiserver.pid) "
           "2>/dev/null; do sleep 0.05; done", c->dir);
}

/* Restarts kube-apiserver with the same flags and waits for /readyz. */
__attribute__((unused)) static int tgc_apiserver_start(struct tgc *c)
{
    return tgc_sh("cd '%s' && ./apiserver-start && for i in $(seq 1 600); do "
                  "curl -fsS --cacert ca.crt -H 'Authorization: Bearer %s' '%s/readyz' "
                  ">/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1",
                  c->dir, c->token, c->server);
}

/* A client for the cluster's kubeconfig (context NULL: current). */
__attribute__((unused)) static struct tg_client * tgc_client(struct tgc *c, uv_loop_t *loop, const char *context)
{
    struct tg_kconf k;
    char err[512];
    if (tg_kubeconfig_load(c->kubeconfig, context, &k, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    struct tg_client *cl = NULL;
    tg_client_new(loop, &k, NULL, &cl);
    tg_kconf_free(&k);
    return cl;
}

/* Runs the loop (UV_RUN_ONCE steps with a 50 ms tick) until done(ud) or
 * timeout_ms; returns 1 when done. */
__attribute__((unused)) static void tgc__tick(uv_timer_t *t)
{
    (void)t;
}

__attribute__((unused)) static int tgc_run_until(uv_loop_t *loop, int (*done)(void *), void *ud, uint64_t timeout_ms)
{
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, tgc__tick, 50, 50);
    uv_update_time(loop);
    uint64_t end = uv_now(loop) + timeout_ms;
    int ok = 0;
    while (!(ok = done(ud)) && uv_now(loop) < end) {
        uv_run(loop, UV_RUN_ONCE);
        uv_update_time(loop);
    }
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return ok;
}

#endif
