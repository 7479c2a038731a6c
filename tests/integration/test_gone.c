/* Integration: a real 410 Gone. kube-apiserver runs with --watch-cache=false
 * so watches are served by etcd. The reflector watches a namespace's pods;
 * kube-apiserver is killed; five pods are deleted behind its back directly
 * in etcd and etcd is compacted past the watch's resourceVersion; the
 * apiserver comes back. The reflector's watch from its old resourceVersion
 * must get 410, relist, and deliver the five deletions it missed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster.h"
#include "informer_check.h"
#include "informer/kinds.h"

static struct tgc cl;

static int synced(void *ud)
{
    return tg_reflector_synced(ud);
}

struct conv {
    struct tg_client *c;
    struct tg_reflector *r;
    struct shadow *sh;
    char why[512];
};

static int converged(void *ud)
{
    struct conv *v = ud;
    return tg_reflector_stats(v->r)->relists >= 1 &&
           cache_equals_list(v->c, tg_reflector_store(v->r), "/api/v1/namespaces/gone/pods", 1,
                             v->why, sizeof v->why);
}

static void relist_after_compaction(void **s)
{
    (void)s;
    assert_int_equal(tgc_up(&cl, "--watch-cache=false"), 0);
    assert_int_equal(tgc_kubectl(&cl, "create namespace gone >/dev/null"), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct tg_client *c = tgc_client(&cl, &loop, NULL);
    assert_non_null(c);
    struct driver d = {.c = c};
    drv_reset(&d);
    for (int i = 0; i < 20; i++) {
        char b[512];
        snprintf(b, sizeof b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"g-%03d\"},"
                 "\"spec\":{\"schedulerName\":\"topogang\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}", i);
        drv_add(&d, "POST", NULL, b, "/api/v1/namespaces/gone/pods");
    }
    assert_int_equal(drv_run(&d, &loop), 0);
    drv_reset(&d);

    struct shadow sh = {0};
    struct tg_reflector_opts o = {.kind = &tg_kind_pod, .path = "/api/v1/namespaces/gone/pods",
                                  .backoff_min_ms = 100, .backoff_max_ms = 1000,
                                  .h = sh_handlers(&sh, &tg_kind_pod)};
    struct tg_reflector *r;
    assert_int_equal(tg_reflector_new(c, &o, &r), 0);
    tg_reflector_start(r);
    assert_true(tgc_run_until(&loop, synced, r, 30000));
    assert_int_equal(tg_store_len(tg_reflector_store(r)), 20);
    for (int i = 0; i < 20; i += 4)
        drv_add(&d, "PATCH", "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"x\":\"1\"}}}",
                "/api/v1/namespaces/gone/pods/g-%03d", i);
    assert_int_equal(drv_run(&d, &loop), 0);
    drv_reset(&d);
    uint64_t end = uv_now(&loop) + 500;
    while (uv_now(&loop) < end) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(5000);
        uv_update_time(&loop);
    }
    char old_rv[64];
    snprintf(old_rv, sizeof old_rv, "%s", tg_reflector_rv(r));
    assert_int_equal(sh.updates, 5);

    tgc_apiserver_kill(&cl);
    /* behind the apiserver's back: delete five pods in etcd, then compact */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "set -e; for i in 001 003 005 007 009; do k=$(printf /registry/pods/gone/g-$i | base64 -w0); "
             "curl -fsS -X POST %s/v3/kv/deleterange -d \"{\\\"key\\\":\\\"$k\\\"}\" | grep -q '\"deleted\":\"1\"'; done; "
             "rev=$(curl -fsS -X POST %s/v3/kv/range -d '{\"key\":\"Lw==\"}' | sed 's/.*\"revision\":\"\\([0-9]*\\)\".*/\\1/'); "
             "curl -fsS -X POST %s/v3/kv/compaction -d \"{\\\"revision\\\":\\\"$rev\\\",\\\"physical\\\":true}\" >/dev/null; "
             "echo \"# etcd compacted at revision $rev\"",
             cl.etcd, cl.etcd, cl.etcd);
    assert_int_equal(tgc_sh("%s", cmd), 0);
    printf("# watch resourceVersion before the compaction: %s\n", old_rv);
    assert_int_equal(tgc_apiserver_start(&cl), 0);

    struct conv v = {.c = c, .r = r, .sh = &sh};
    int ok = tgc_run_until(&loop, converged, &v, 60000);
    const struct tg_reflector_stats *st = tg_reflector_stats(r);
    printf("# gone=%llu relists=%llu errors=%llu deletes=%d unstalled=%llu (%s)\n",
           (unsigned long long)st->gone, (unsigned long long)st->relists,
           (unsigned long long)st->errors, sh.deletes,
           (unsigned long long)tg_client_stats(c)->unstalled, v.why);
    assert_true(ok);
    assert_true(st->gone >= 1);
    assert_int_equal(st->relists, 1);
    assert_int_equal(sh.deletes, 5);         /* the deletions made while away */
    assert_int_equal(tg_store_len(tg_reflector_store(r)), 15);
    assert_null(tg_store_get(tg_reflector_store(r), "gone/g-001"));
    assert_non_null(tg_store_get(tg_reflector_store(r), "gone/g-002"));
    assert_true(sh_consistent(&sh, tg_reflector_store(r)));
    assert_int_equal(sh.dup_adds + sh.bad_deletes + sh.bad_updates, 0);

    tg_reflector_free(&r);
    tg_client_free(&c);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    sh_free(&sh);
    drv_reset(&d);
    tgc_down(&cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(relist_after_compaction),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tgc_down(&cl);
    return rc;
}
