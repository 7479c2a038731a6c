/* Integration: the informer against a real kube-apiserver.
 * - churn: thousands of creates, updates, binds, status changes and deletes
 *   of Nodes, Pods and PodGroups while watching; every cache must then equal
 *   the server's LIST with the same field selectors, and the handlers must
 *   have seen no duplicated add and no delete of an unknown object.
 * - restart: kube-apiserver SIGKILLed in the middle of a churn and started
 *   again; the caches converge to the server's state the same way.
 * - one_pod_watch: pods come from one watch: a bind is one event (an update
 *   from unbound to bound), another scheduler's unbound pod is never kept,
 *   a pod deleted or finished leaves the cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster.h"
#include "informer_check.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/strbuf.h"

static struct tgc cl;
static uv_loop_t loop;
static struct tg_client *client;
static struct tg_informer *inf;
/* the collections every informer watches (the optional ones, peers' PodGroups
 * and workloads, are not asked for here) */
#define NK TG_INF_PG_UPSTREAM
static struct shadow shadows[NK];
static struct driver drv;

/* What each cache must equal: the server's LISTs (the pods: this
 * scheduler's unbound ones and everyone's bound, non-terminal ones) */
static const char *const list_paths[NK][2] = {
    [TG_INF_NODES] = {"/api/v1/nodes"},
    [TG_INF_PODS] = {"/api/v1/pods?fieldSelector=spec.schedulerName%3Dtopogang%2Cspec.nodeName%3D"
                     "%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed",
                     "/api/v1/pods?fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded"
                     "%2Cstatus.phase%21%3DFailed"},
    [TG_INF_PODGROUPS] = {"/apis/topogang.io/v1alpha1/podgroups"},
    [TG_INF_CONFIG] = {"/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dtopogang-config"},
    [TG_INF_PRIOCLASSES] = {"/apis/scheduling.k8s.io/v1/priorityclasses"},
    [TG_INF_PDBS] = {"/apis/policy/v1/poddisruptionbudgets"},
};

/* Every handler call on a pod of the namespace onewatch, in order: "add
 * ns/name node", "update ns/name oldnode->node", "delete ns/name node"
 * (node "-": unbound), one per line; the shadow is told too. */
static struct tg_sb podlog;

static const char *node_of(const void *o)
{
    const struct tg_pod *p = o;
    return p->node ? tg_str(p->node) : "-";
}
static int logged(const void *o)
{
    return !strncmp(((const struct tg_pod *)o)->key, "onewatch/", 9);
}
static void pod_add(void *ud, const void *o)
{
    if (logged(o))
        tg_sb_printf(&podlog, "add %s %s\n", ((const struct tg_pod *)o)->key, node_of(o));
    sh_add(ud, o);
}
static void pod_update(void *ud, const void *old, const void *o)
{
    if (logged(o))
        tg_sb_printf(&podlog, "update %s %s->%s\n", ((const struct tg_pod *)o)->key, node_of(old),
                     node_of(o));
    sh_update(ud, old, o);
}
static void pod_delete(void *ud, const void *o)
{
    if (logged(o))
        tg_sb_printf(&podlog, "delete %s %s\n", ((const struct tg_pod *)o)->key, node_of(o));
    sh_delete(ud, o);
}

static int namespaced(int kind)
{
    return kind != TG_INF_NODES && kind != TG_INF_PRIOCLASSES;
}

static int synced(void *ud)
{
    (void)ud;
    return tg_informer_synced(inf);
}

static int setup(void **s)
{
    (void)s;
    if (tgc_up(&cl, NULL) != 0)
        return -1;
    char crd[4096];
    snprintf(crd, sizeof crd, "apply -f '%s/tests/integration/fixtures/podgroup-crd.yaml' >/dev/null"
             " && '%s/kubectl' --kubeconfig '%s' wait --for condition=established --timeout=60s "
             "crd/podgroups.topogang.io >/dev/null", cl.src, cl.bin, cl.kubeconfig);
    if (tgc_kubectl(&cl, "%s", crd) != 0 ||
        tgc_kubectl(&cl, "create namespace churn >/dev/null") != 0 ||
        tgc_kubectl(&cl, "create namespace restart >/dev/null") != 0 ||
        tgc_kubectl(&cl, "create namespace onewatch >/dev/null") != 0)
        return -1;
    uv_loop_init(&loop);
    client = tgc_client(&cl, &loop, NULL);
    if (!client)
        return -1;
    struct tg_informer_opts o = {.config_ns = "kube-system", .config_name = "topogang-config",
                                 .page_size = 250};
    static const struct tg_kind *kinds[NK] = {&tg_kind_node, &tg_kind_pod_any, &tg_kind_podgroup,
                                              &tg_kind_configmap, &tg_kind_prioclass, &tg_kind_pdb};
    for (int i = 0; i < NK; i++)
        o.h[i] = sh_handlers(&shadows[i], kinds[i]);
    o.h[TG_INF_PODS].on_add = pod_add;
    o.h[TG_INF_PODS].on_update = pod_update;
    o.h[TG_INF_PODS].on_delete = pod_delete;
    if (tg_informer_start(client, &o, &inf) != 0)
        return -1;
    if (!tgc_run_until(&loop, synced, NULL, 30000))
        return -1;
    drv.c = client;
    drv_reset(&drv);
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    drv_reset(&drv);
    tg_informer_free(&inf);
    tg_client_free(&client);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    for (int i = 0; i < NK; i++)
        sh_free(&shadows[i]);
    tg_sb_free(&podlog);
    tgc_down(&cl);
    return 0;
}

struct conv {
    char why[512];
    uint64_t next_check;
};

static int converged(void *ud)
{
    struct conv *cv = ud;
    uv_update_time(&loop);
    if (uv_now(&loop) < cv->next_check)
        return 0;
    cv->next_check = uv_now(&loop) + 500;
    for (int i = 0; i < NK; i++) {
        const struct tg_store *st = tg_informer_store(inf, (enum tg_inf_kind)i);
        if (!cache_equals_lists(client, st, list_paths[i], list_paths[i][1] ? 2 : 1, namespaced(i),
                                cv->why, sizeof cv->why))
            return 0;
    }
    return 1;
}

static void assert_converged(void)
{
    struct conv cv = {0};
    int ok = tgc_run_until(&loop, converged, &cv, 90000);
    if (!ok)
        printf("# not converged: %s\n", cv.why);
    assert_true(ok);
    for (int i = 0; i < NK; i++) {
        const struct tg_store *st = tg_informer_store(inf, (enum tg_inf_kind)i);
        const struct tg_reflector_stats *rs = tg_reflector_stats(inf->r[i]);
        printf("# %-14s objects=%-5u adds=%d updates=%d deletes=%d | watches=%llu relists=%llu "
               "gone=%llu errors=%llu events=%llu bookmarks=%llu\n",
               tg_store_len(st) ? st->kind->name : st->kind->name, tg_store_len(st), shadows[i].adds,
               shadows[i].updates, shadows[i].deletes, (unsigned long long)rs->watches,
               (unsigned long long)rs->relists, (unsigned long long)rs->gone,
               (unsigned long long)rs->errors, (unsigned long long)rs->events,
               (unsigned long long)rs->bookmarks);
        assert_int_equal(shadows[i].dup_adds, 0);
        assert_int_equal(shadows[i].bad_updates, 0);
        assert_int_equal(shadows[i].bad_deletes, 0);
        assert_true(sh_consistent(&shadows[i], st));
        assert_int_equal(rs->parse_errors, 0);
        assert_int_equal(rs->decode_errors, 0);
    }
}

static char *pod_json(const char *name, const char *sched, const char *node)
{
    char *b = NULL;
    if (asprintf(&b,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                 "\"labels\":{\"topogang.io/pod-group\":\"g%d\"}},\"spec\":{\"schedulerName\":\"%s\",%s%s%s"
                 "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":"
                 "{\"cpu\":\"500m\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"},\"limits\":"
                 "{\"nvidia.com/gpu\":\"1\"}}}]}}",
                 name, (int)(strlen(name) % 7), sched, node ? "\"nodeName\":\"" : "", node ? node : "",
                 node ? "\"," : "") < 0)
        return NULL;
    return b;
}

static void add_pod(const char *ns, const char *name, const char *sched, const char *node)
{
    char *b = pod_json(name, sched, node);
    drv_add(&drv, "POST", NULL, b, "/api/v1/namespaces/%s/pods", ns);
    free(b);
}

static void churn(void **s)
{
    (void)s;
    char name[64], node[64], body[512];
    /* nodes */
    for (int i = 0; i < 100; i++) {
        snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                 "\"node-%03d\",\"labels\":{\"topogang.io/rack\":\"r%d\"}}}", i, i / 10);
        drv_add(&drv, "POST", NULL, body, "/api/v1/nodes");
    }
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    /* 2000 pods: even ones pending for topogang, odd ones bound; 100 of another scheduler */
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "p-%04d", i);
        snprintf(node, sizeof node, "node-%03d", i % 100);
        add_pod("churn", name, i % 2 ? "default-scheduler" : "topogang", i % 2 ? node : NULL);
    }
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "other-%03d", i);
        add_pod("churn", name, "other-scheduler", NULL);
    }
    for (int i = 0; i < 50; i++) {
        snprintf(body, sizeof body, "{\"apiVersion\":\"topogang.io/v1alpha1\",\"kind\":\"PodGroup\","
                 "\"metadata\":{\"name\":\"g%d\"},\"spec\":{\"minMember\":%d}}", i, 1 + i % 8);
        drv_add(&drv, "POST", NULL, body, "/apis/topogang.io/v1alpha1/namespaces/churn/podgroups");
    }
    drv_add(&drv, "POST", NULL, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
            "\"topogang-config\"},\"data\":{\"config.yaml\":\"schedulerName: topogang\\n\"}}",
            "/api/v1/namespaces/kube-system/configmaps");
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    /* updates: labels on 1000 pods, status of 50 podgroups, the ConfigMap, 30 nodes */
    for (int i = 0; i < 1000; i++) {
        snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"round\":\"%d\"}}}", i % 3);
        drv_add(&drv, "PATCH", "application/merge-patch+json", body, "/api/v1/namespaces/churn/pods/p-%04d", i);
    }
    for (int i = 0; i < 50; i++)
        drv_add(&drv, "PATCH", "application/merge-patch+json", "{\"status\":{\"phase\":\"Scheduling\"}}",
                "/apis/topogang.io/v1alpha1/namespaces/churn/podgroups/g%d/status", i);
    for (int i = 0; i < 30; i++)
        drv_add(&drv, "PATCH", "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"drained\":\"yes\"}}}",
                "/api/v1/nodes/node-%03d", i);
    drv_add(&drv, "PATCH", "application/merge-patch+json", "{\"data\":{\"config.yaml\":\"schedulerName: topogang\\n# v2\\n\"}}",
            "/api/v1/namespaces/kube-system/configmaps/topogang-config");
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    /* bind 500 pending pods (they move caches), finish 200 bound pods (leave the bound cache) */
    for (int i = 0; i < 1000; i += 2) {
        snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
                 "\"p-%04d\"},\"target\":{\"kind\":\"Node\",\"name\":\"node-%03d\"}}", i, i % 100);
        drv_add(&drv, "POST", NULL, body, "/api/v1/namespaces/churn/pods/p-%04d/binding", i);
    }
    for (int i = 1601; i < 2000; i += 2)
        drv_add(&drv, "PATCH", "application/merge-patch+json", "{\"status\":{\"phase\":\"Succeeded\"}}",
                "/api/v1/namespaces/churn/pods/p-%04d/status", i);
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    /* deletes: 700 pods (both kinds), 20 nodes, 20 podgroups */
    for (int i = 1000; i < 1700; i++)
        drv_add(&drv, "DELETE", NULL, "{\"gracePeriodSeconds\":0}", "/api/v1/namespaces/churn/pods/p-%04d", i);
    for (int i = 80; i < 100; i++)
        drv_add(&drv, "DELETE", NULL, NULL, "/api/v1/nodes/node-%03d", i);
    for (int i = 30; i < 50; i++)
        drv_add(&drv, "DELETE", NULL, NULL, "/apis/topogang.io/v1alpha1/namespaces/churn/podgroups/g%d", i);
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    assert_converged();
    /* spot checks of the decoded contents */
    const struct tg_store *pods = tg_informer_store(inf, TG_INF_PODS);
    const struct tg_pod *p0 = tg_store_get(pods, "churn/p-0000");
    assert_true(p0 && p0->node);                             /* bound by the Binding */
    const struct tg_pod *p1998 = tg_store_get(pods, "churn/p-1998");
    assert_true(p1998 && !p1998->node);                      /* still pending */
    assert_null(tg_store_get(pods, "churn/p-1601"));         /* Succeeded */
    assert_null(tg_store_get(pods, "churn/other-000"));      /* another scheduler's */
    uint32_t npending = 0;
    for (uint32_t i = 0; i < tg_store_len(pods); i++)
        npending += !((const struct tg_pod *)tg_store_at(pods, i))->node;
    assert_int_equal(npending, 150);                         /* 1000..1998 even, minus 1000..1698 */
    const struct tg_configmap *cm = tg_store_get(tg_informer_store(inf, TG_INF_CONFIG), "kube-system/topogang-config");
    assert_non_null(cm);
    assert_non_null(strstr(tg_configmap_get(cm, "config.yaml"), "# v2"));
    assert_int_equal(tg_store_len(tg_informer_store(inf, TG_INF_NODES)), 80);
    assert_int_equal(tg_store_len(tg_informer_store(inf, TG_INF_PODGROUPS)), 30);
}

static int reached(void *ud)
{
    return drv.done >= *(int *)ud;
}

static void restart(void **s)
{
    (void)s;
    char name[64];
    uint64_t errs0[NK];
    for (int i = 0; i < NK; i++)
        errs0[i] = tg_reflector_stats(inf->r[i])->errors + tg_reflector_stats(inf->r[i])->gone;
    for (int i = 0; i < 1500; i++) {
        snprintf(name, sizeof name, "r-%04d", i);
        add_pod("restart", name, i % 3 ? "topogang" : "default-scheduler", i % 3 ? NULL : "node-001");
    }
    drv.window = 16;
    drv.expect_ok = 0;       /* writes in flight when the server dies fail */
    drv_fill(&drv);
    int third = 500;
    assert_true(tgc_run_until(&loop, reached, &third, 60000));
    tgc_apiserver_kill(&cl);
    printf("# kube-apiserver killed after %d of %d writes\n", drv.done, drv.n);
    /* let the client notice while the server is down */
    uint64_t end = uv_now(&loop) + 1500;
    while (uv_now(&loop) < end) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(10000);
        uv_update_time(&loop);
    }
    assert_int_equal(tgc_apiserver_start(&cl), 0);
    assert_true(tgc_run_until(&loop, drv_finished, &drv, 120000));
    printf("# writes: %d failed while the server was down\n", drv.failed);
    drv_reset(&drv);
    /* after the restart: deletes and updates of what made it */
    for (int i = 0; i < 1500; i += 5)
        drv_add(&drv, "DELETE", NULL, "{\"gracePeriodSeconds\":0}", "/api/v1/namespaces/restart/pods/r-%04d", i);
    drv.expect_ok = 0;       /* some pods were never created */
    drv_run(&drv, &loop);
    drv_reset(&drv);
    assert_converged();
    for (int i = 0; i < NK; i++) {
        const struct tg_reflector_stats *rs = tg_reflector_stats(inf->r[i]);
        assert_true(rs->errors + rs->gone > errs0[i]);     /* every watch saw the crash */
    }
}

static int has_line(void *ud)
{
    return podlog.len && strstr(tg_sb_str(&podlog), (const char *)ud) != NULL;
}

/* Runs the loop until the pod log holds line; asserts it does. */
static void wait_line(const char *line)
{
    int ok = tgc_run_until(&loop, has_line, (void *)line, 30000);
    if (!ok)
        printf("# waited for \"%s\"; the pod log:\n%s", line, podlog.len ? tg_sb_str(&podlog) : "");
    assert_true(ok);
}

static void one_pod_watch(void **s)
{
    (void)s;
    const struct tg_store *pods = tg_informer_store(inf, TG_INF_PODS);
    const struct tg_reflector_stats *rs = tg_reflector_stats(inf->r[TG_INF_PODS]);
    uint64_t skipped0 = rs->skipped, decode0 = rs->decode_errors;
    tg_sb_free(&podlog);
    /* another scheduler's pod, then ours: in one stream, so once ours is in,
     * theirs has been seen and left out */
    add_pod("onewatch", "theirs", "other-scheduler", NULL);
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    add_pod("onewatch", "ours", "topogang", NULL);
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    wait_line("add onewatch/ours -\n");
    assert_null(tg_store_get(pods, "onewatch/theirs"));
    assert_true(rs->skipped > skipped0);
    assert_null(strstr(tg_sb_str(&podlog), "theirs"));
    /* our bind: one event, an update from unbound to bound; no delete, no add */
    drv_add(&drv, "POST", NULL, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
            "\"ours\"},\"target\":{\"kind\":\"Node\",\"name\":\"node-001\"}}",
            "/api/v1/namespaces/onewatch/pods/ours/binding");
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    wait_line("update onewatch/ours -->node-001\n");
    assert_string_equal(tg_sb_str(&podlog), "add onewatch/ours -\n"
                                            "update onewatch/ours -->node-001\n");
    const struct tg_pod *p = tg_store_get(pods, "onewatch/ours");
    assert_true(p && p->node && !p->spec);      /* bound: requests only */
    /* theirs bound by the other scheduler: kept from now on, an add */
    drv_add(&drv, "POST", NULL, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
            "\"theirs\"},\"target\":{\"kind\":\"Node\",\"name\":\"node-002\"}}",
            "/api/v1/namespaces/onewatch/pods/theirs/binding");
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    wait_line("add onewatch/theirs node-002\n");
    /* ours finishes, theirs is deleted, a pending one of ours is deleted: all leave */
    add_pod("onewatch", "short", "topogang", NULL);
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    wait_line("add onewatch/short -\n");
    drv_add(&drv, "PATCH", "application/merge-patch+json", "{\"status\":{\"phase\":\"Succeeded\"}}",
            "/api/v1/namespaces/onewatch/pods/ours/status");
    drv_add(&drv, "DELETE", NULL, "{\"gracePeriodSeconds\":0}", "/api/v1/namespaces/onewatch/pods/theirs");
    drv_add(&drv, "DELETE", NULL, "{\"gracePeriodSeconds\":0}", "/api/v1/namespaces/onewatch/pods/short");
    assert_int_equal(drv_run(&drv, &loop), 0);
    drv_reset(&drv);
    wait_line("delete onewatch/ours node-001\n");
    wait_line("delete onewatch/theirs node-002\n");
    wait_line("delete onewatch/short -\n");
    assert_null(tg_store_get(pods, "onewatch/ours"));
    assert_null(tg_store_get(pods, "onewatch/theirs"));
    assert_null(tg_store_get(pods, "onewatch/short"));
    assert_int_equal(rs->decode_errors, decode0);
    printf("# pod log:\n%s", tg_sb_str(&podlog));
    assert_converged();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(churn),
        cmocka_unit_test(restart),
        cmocka_unit_test(one_pod_watch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
