/* Bounded memory under hostile objects (issue 18), through the daemon's own
 * path: each object is decoded by the informer's kind (informer/kinds.c, what
 * the reflector calls), handed to the daemon's handlers
 * (scheduler/daemon/handlers.c, wired as the informer wires them) and freed
 * after its delete handler returns, as the reflector's store does.
 *
 * - churn: 100,000 pods with unique labels and made-up extended resources
 *   come pending, get bound and go; the interner, the resource registry and
 *   the process's RSS stay flat (RSS within 10% from after warm-up to the end;
 *   measured in the optimised build only: ASan's quarantine keeps freed memory
 *   resident by design), and a Node update that brings a new resource name
 *   still decodes, with every capacity in the model.
 * - a pod decoded before the Node that offers its resource is resolved when
 *   the handlers see it again (the resync a new name asks for).
 * - a usage record keeps its own references to the label strings it copied.
 * - simulate resolves pods read before their Node, and names a made-up
 *   resource in the reason. */
#include "testutil.h"
#include "config/policy.h"
#include "informer/kinds.h"
#include "scheduler/daemon/internal.h"
#include "scheduler/engine.h"
#include "scheduler/internal.h" /* the tests embed an engine and look inside */
#include "util/err.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static int64_t clock_ms = 1000000;
static int64_t test_clock(void *ud)
{
    (void)ud;
    return clock_ms;
}

struct world {
    struct tg_engine e;
    struct tg__handlers h;
    struct tg_informer_opts io;
};

static void world_init(struct world *w)
{
    memset(w, 0, sizeof *w);
    struct tg_policy pol;
    tg_policy_default(&pol);
    struct tg_clock clk = {test_clock, NULL};
    assert_int_equal(tg_engine_init(&w->e, &pol, &clk), 0);
    w->h.engine = &w->e;
    w->h.scheduler_name = "topogang";
    tg__handlers_wire(&w->h, &w->io);
}

static void *decode(const struct tg_kind *k, const char *json)
{
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    void *o = NULL;
    int rc = k->decode(j, &o);
    cJSON_Delete(j);
    if (rc)
        printf("# %s did not decode (%s): %s\n", k->name, tg_strerror(rc), json);
    assert_int_equal(rc, 0);
    return o;
}

static const char *node_json(char *buf, size_t n, int i, const char *extra)
{
    snprintf(buf, n,
             "{\"metadata\":{\"name\":\"n%d\",\"resourceVersion\":\"1\",\"labels\":"
             "{\"topogang.io/rack\":\"r%d\"}},\"status\":{\"allocatable\":{\"cpu\":\"64\","
             "\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"%s}}}",
             i, i / 2, extra);
    return buf;
}

/* Pod i: labels of its own, a made-up extended resource of a made-up tenant,
 * pending (node NULL) or bound to node. */
static const char *pod_json(char *buf, size_t n, int i, const char *node, unsigned r)
{
    snprintf(buf, n,
             "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"churn\",\"uid\":\"u%d\","
             "\"resourceVersion\":\"%d\",\"labels\":{\"run-%d\":\"x%d\",\"app\":\"a%u\","
             "\"pod-template-hash\":\"%08x\"}},"
             "\"spec\":{\"schedulerName\":\"topogang\"%s%s%s,\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"tenant%u.example/r%u\":\"1\"%s}}}]},"
             "\"status\":{\"phase\":\"%s\"}}",
             i, i, node ? 2 : 1, i, i, r % 1000, r, node ? ",\"nodeName\":\"" : "",
             node ? node : "", node ? "\"" : "", r % 7, r, r % 3 ? "" : ",\"nvidia.com/gpu\":\"1\"",
             node ? "Running" : "Pending");
    return buf;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%ld %ld", &size, &res), 2);
    fclose(f);
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

#define NPODS 100000
#define WARM 10000
#define WINDOW 64

static void churn_keeps_memory_flat(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    const struct tg_handlers *hn = &w.io.h[TG_INF_NODES];
    const struct tg_handlers *hp = &w.io.h[TG_INF_PODS];
    char buf[1024];
    struct tg_node_obj *nodes[4];
    for (int i = 0; i < 4; i++) {
        nodes[i] = decode(&tg_kind_node, node_json(buf, sizeof buf, i, ""));
        hn->on_add(hn->ud, nodes[i]);
    }
    uint32_t nres = tg_res_count();
    struct tg_pod *live[WINDOW] = {0};
    uint32_t strings_warm = 0;
    size_t bytes_warm = 0;
    long rss_warm = 0;
    unsigned seed = 18;
    for (int i = 0; i < NPODS; i++) {
        unsigned r = (unsigned)rand_r(&seed) % 1000000;
        char node[16];
        snprintf(node, sizeof node, "n%d", i % 4);
        struct tg_pod *pend = decode(&tg_kind_pod_any, pod_json(buf, sizeof buf, i, NULL, r));
        assert_int_equal(pend->nunoffered, 1);
        hp->on_add(hp->ud, pend);
        struct tg_pod *bound = decode(&tg_kind_pod_any, pod_json(buf, sizeof buf, i, node, r));
        hp->on_update(hp->ud, pend, bound);      /* the bind: one event */
        tg_kind_pod_any.free(pend);
        struct tg_pod **slot = &live[i % WINDOW]; /* bound pods go WINDOW pods later */
        if (*slot) {
            hp->on_delete(hp->ud, *slot);
            tg_kind_pod_any.free(*slot);
        }
        *slot = bound;
        if (i + 1 == WARM) {
            strings_warm = tg_intern_count();
            bytes_warm = tg_intern_bytes();
            rss_warm = rss_kb();
        }
    }
    uint32_t strings_end = tg_intern_count();
    size_t bytes_end = tg_intern_bytes();
    long rss_end = rss_kb();
    printf("# %d pods: interned strings %u -> %u, interner bytes %zu -> %zu, RSS %ld -> %ld kB "
           "(%+.1f%%), resource names %u -> %u%s\n",
           NPODS, strings_warm, strings_end, bytes_warm, bytes_end, rss_warm, rss_end,
           100.0 * (double)(rss_end - rss_warm) / (double)rss_warm, nres, tg_res_count(),
           UNDER_ASAN ? " (ASan build: RSS not asserted)" : "");
    assert_int_equal(tg_res_count(), nres);            /* no pod took a registry slot */
    assert_true(strings_end <= strings_warm);          /* the same number of live pods */
    assert_true(bytes_end <= bytes_warm + bytes_warm / 10);
    if (!UNDER_ASAN)
        assert_true(rss_end <= rss_warm + rss_warm / 10);
    assert_int_equal(w.e.sched.cluster.usage.len, WINDOW);

    /* Node updates still decode, a new resource name included, and the model
     * keeps every capacity */
    for (int i = 0; i < 4; i++) {
        struct tg_node_obj *n = decode(&tg_kind_node,
                                       node_json(buf, sizeof buf, i, ",\"vendor.example/accel\":\"4\""));
        hn->on_update(hn->ud, nodes[i], n);
        tg_kind_node.free(nodes[i]);
        nodes[i] = n;
    }
    int accel = tg_res_lookup("vendor.example/accel", 20);
    int gpu = tg_res_lookup("nvidia.com/gpu", 14);
    assert_true(accel >= TG_RES_NFIXED && gpu >= TG_RES_NFIXED);
    struct tg_cluster *c = &w.e.sched.cluster;
    char node[16];
    for (int i = 0; i < 4; i++) {
        snprintf(node, sizeof node, "n%d", i);
        uint32_t s = tg_cluster_slot(c, tg_intern_lookup(node, strlen(node)), 0);
        assert_true(s != TG_NONE);
        assert_int_equal(tg_alloc(c, s, (uint32_t)accel), 4);
        assert_int_equal(tg_alloc(c, s, (uint32_t)gpu), 8);
        assert_int_equal(tg_alloc(c, s, TG_RES_CPU), 64000);
    }
    for (int i = 0; i < WINDOW; i++) {
        hp->on_delete(hp->ud, live[i]);
        tg_kind_pod_any.free(live[i]);
    }
    assert_int_equal(c->usage.len, 0);
    assert_int_equal(w.e.gangs.pidx.len, 0);
    tg_engine_free(&w.e);
    for (int i = 0; i < 4; i++)
        tg_kind_node.free(nodes[i]);
}

/* A pod decoded before any Node offers its resource: unsatisfiable, no slot;
 * the Node that brings the name asks for a resync (h.lost), and the pod
 * handed over again (what the resync does) has the request by id. */
static void late_node_resolves_pod(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    const struct tg_handlers *hn = &w.io.h[TG_INF_NODES];
    const struct tg_handlers *hp = &w.io.h[TG_INF_PODS];
    char buf[1024];
    struct tg_pod *p = decode(&tg_kind_pod_any,
        "{\"metadata\":{\"name\":\"early\",\"namespace\":\"ml\",\"uid\":\"u1\",\"resourceVersion\":\"1\"},"
        "\"spec\":{\"schedulerName\":\"topogang\",\"containers\":[{\"name\":\"c\",\"resources\":"
        "{\"limits\":{\"late.example/npu\":\"2\"}}}]},\"status\":{\"phase\":\"Pending\"}}");
    assert_int_equal(p->nunoffered, 1);
    hp->on_add(hp->ud, p);
    assert_int_equal(w.h.lost, 0);
    struct tg_node_obj *n = decode(&tg_kind_node, node_json(buf, sizeof buf, 9, ",\"late.example/npu\":\"4\""));
    hn->on_add(hn->ud, n);
    assert_true(w.h.lost > 0);                   /* no decision before the resync */
    assert_int_equal(p->nunoffered, 1);
    hp->on_update(hp->ud, p, p);                 /* the resync hands it over again */
    int id = tg_res_lookup("late.example/npu", 16);
    assert_true(id >= TG_RES_NFIXED);
    assert_int_equal(p->nunoffered, 0);
    assert_int_equal(tg_rq_get(p->req, p->nreq, (uint32_t)id), 2);
    assert_int_equal(tg_rq_get(p->req, p->nreq, TG_RES_UNOFFERED), 0);
    hp->on_delete(hp->ud, p);
    tg_kind_pod_any.free(p);
    tg_engine_free(&w.e);
    tg_kind_node.free(n);
}

/* The cached object of a bound pod goes (replaced or deleted) while the model's
 * record of it stays: the record's labels hold their own references. */
static void usage_record_keeps_its_labels(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    const struct tg_handlers *hb = &w.io.h[TG_INF_PODS];
    struct tg_pod *p = decode(&tg_kind_pod_any,
        "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\",\"uid\":\"u2\",\"resourceVersion\":\"1\","
        "\"labels\":{\"only-here-key\":\"only-here-value\"}},\"spec\":{\"nodeName\":\"n0\","
        "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\"}}");
    hb->on_add(hb->ud, p);
    tg_kind_pod_any.free(p);                     /* the object goes, the record stays */
    const struct tg_usage *u = tg_cluster_usage(&w.e.sched.cluster, "ml/b");
    assert_non_null(u);
    assert_int_equal(u->nlabels, 1);
    assert_string_equal(tg_str(u->labels[0].key), "only-here-key");
    assert_string_equal(tg_str(u->labels[0].val), "only-here-value");
    /* new strings do not take the record's ids */
    uint32_t fresh = tg_intern_ref("fresh-string", 12);
    assert_true(fresh != u->labels[0].key && fresh != u->labels[0].val);
    tg_intern_unref(fresh);
    tg_engine_bound_gone(&w.e, "ml/b");
    assert_int_equal(tg_intern_lookup("only-here-value", 15), TG_STR_NONE);
    tg_engine_free(&w.e);
}

/* simulate reads pods before the Node that offers their resource (file
 * order): the pod is placed once the Node is read; a made-up name leaves its
 * pod unschedulable with the name in the reason. */
static void simulate_resolves_and_names_unoffered(void **state)
{
    (void)state;
    cJSON *res = tu_simulate(NULL,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: early, namespace: ml}\n"
        "spec: {schedulerName: topogang, containers: [{name: c, resources: {limits: {sim.example/npu: 2}}}]}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: bogus, namespace: ml}\n"
        "spec: {schedulerName: topogang, containers: [{name: c, resources: {limits: {made.up/thing: 1}}}]}\n"
        "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {kubernetes.io/hostname: n1}}\n"
        "status: {allocatable: {cpu: '8', memory: 8Gi, pods: '110', sim.example/npu: '4'}}\n");
    assert_string_equal(tu_node_of(res, "ml/early"), "n1");
    const cJSON *g = tu_gang(res, "ml/bogus");
    assert_non_null(g);
    const char *why = tu_str(g, "reason");
    assert_non_null(strstr(why, "needs 1 x made.up/thing=1"));
    assert_non_null(strstr(why, "insufficient (a resource no node offers)"));
    cJSON_Delete(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(churn_keeps_memory_flat),
        cmocka_unit_test(late_node_resolves_pod),
        cmocka_unit_test(usage_record_keeps_its_labels),
        cmocka_unit_test(simulate_resolves_and_names_unoffered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
