/* Tenant Queues (issue 19, model/queues.h): the decoder of KAI's
 * scheduling.run.ai/v2, Volcano's scheduling.volcano.sh/v1beta1 and our
 * topogang.io/v1alpha1 Queue as their users write them (KAI's units, -1
 * unlimited, Kubernetes quantities), bad input kept with `problem` naming
 * the field, and which queue a gang belongs to (the decoders' queue fields
 * and tg_queue_resolve). */
#include "testutil.h"
#include "model/queues.h"
#include "model/workload.h"
#include "informer/kinds.h"
#include "scheduler/daemon/internal.h"
#include "scheduler/fairshare.h"
#include "scheduler/sim/load.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/yamljson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int nwarn, nerr;
static char lastmsg[1024];

static void diag(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                 const char *msg)
{
    (void)ud;
    (void)at;
    is_error ? nerr++ : nwarn++;
    snprintf(lastmsg, sizeof lastmsg, "%s: %s: %s", what, field, msg);
}

static struct tg_diag D = {.report = diag};

static int keep_doc(void *ud, cJSON *root, const struct tg_yaml_lines *lines)
{
    (void)lines;
    *(cJSON **)ud = root;
    return 0; /* kept (ours to free) */
}

static cJSON *yaml(const char *text)
{
    cJSON *root = NULL;
    assert_int_equal(tg_yaml_parse(text, strlen(text), "test", keep_doc, &root, NULL), 0);
    assert_non_null(root);
    return root;
}

/* Decodes one Queue in YAML; asserts it decodes (0). */
static struct tg_queue_obj *queue(const char *text)
{
    cJSON *j = yaml(text);
    struct tg_queue_obj *q = NULL;
    nwarn = nerr = 0;
    lastmsg[0] = 0;
    assert_int_equal(tg_queue_obj_decode(j, &D, &q), 0);
    cJSON_Delete(j);
    assert_non_null(q);
    return q;
}

static const struct tg_queue_res *res(const struct tg_queue_obj *q, const char *name)
{
    return tg_queue_obj_res(q, tg_intern(name));
}

/* KAI's quickstart queue (docs/quickstart), plus numbers in its units. */
static void test_kai(void **state)
{
    (void)state;
    struct tg_queue_obj *q = queue("apiVersion: scheduling.run.ai/v2\n"
                                   "kind: Queue\n"
                                   "metadata: {name: team-a, uid: u1, resourceVersion: '7'}\n"
                                   "spec:\n"
                                   "  parentQueue: default-parent-queue\n"
                                   "  priority: 200\n"
                                   "  displayName: Team A\n"
                                   "  resources:\n"
                                   "    gpu: {quota: 8.5, limit: -1, overQuotaWeight: 2}\n"
                                   "    cpu: {quota: 4000, limit: 16000, overQuotaWeight: 1}\n"
                                   "    memory: {quota: 1024, limit: -1, overQuotaWeight: 1}\n");
    assert_int_equal(nwarn + nerr, 0);
    assert_null(q->problem);
    assert_int_equal(q->api, TG_QAPI_KAI);
    assert_string_equal(tg_str(q->name), "team-a");
    assert_string_equal(tg_str(q->parent), "default-parent-queue");
    assert_int_equal(q->priority, 200);
    assert_string_equal(q->uid, "u1");
    assert_string_equal(q->rv, "7");
    assert_int_equal(q->nres, 3);
    for (uint32_t i = 1; i < q->nres; i++)
        assert_true(q->res[i - 1].name < q->res[i].name);
    const struct tg_queue_res *g = res(q, "nvidia.com/gpu"), *c = res(q, "cpu"), *m = res(q, "memory");
    assert_non_null(g);
    assert_true(g->quota == 8.5 && g->limit == TG_QUEUE_UNLIMITED && g->weight == 2);
    assert_true(c->quota == 4000 && c->limit == 16000 && c->weight == 1); /* millicores */
    assert_true(m->quota == 1024e6 && m->limit == TG_QUEUE_UNLIMITED);   /* megabytes */
    assert_null(res(q, "gpu"));
    tg_queue_obj_free(&q);
    assert_null(q);

    /* no priority: KAI's default 100; no parent: top level */
    q = queue("apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: root}\n"
              "spec: {resources: {gpu: {quota: -1}}}\n");
    assert_int_equal(q->priority, 100);
    assert_int_equal(q->parent, 0);
    assert_true(res(q, "nvidia.com/gpu")->quota == -1);
    assert_null(q->problem);
    tg_queue_obj_free(&q);
}

static void test_volcano(void **state)
{
    (void)state;
    struct tg_queue_obj *q = queue("apiVersion: scheduling.volcano.sh/v1beta1\n"
                                   "kind: Queue\n"
                                   "metadata: {name: research}\n"
                                   "spec:\n"
                                   "  parent: root\n"
                                   "  weight: 3\n"
                                   "  reclaimable: true\n"
                                   "  capability: {cpu: '64', memory: 512Gi, nvidia.com/gpu: 32}\n"
                                   "  deserved: {cpu: 16500m, nvidia.com/gpu: '16'}\n"
                                   "  guarantee: {resource: {nvidia.com/gpu: '4'}}\n");
    assert_int_equal(nwarn + nerr, 0);
    assert_null(q->problem);
    assert_int_equal(q->api, TG_QAPI_VOLCANO);
    assert_string_equal(tg_str(q->parent), "root");
    assert_int_equal(q->priority, 100);
    const struct tg_queue_res *g = res(q, "nvidia.com/gpu"), *c = res(q, "cpu"), *m = res(q, "memory");
    assert_true(g->quota == 16 && g->limit == 32 && g->guarantee == 4 && g->weight == 3);
    assert_true(c->quota == 16500 && c->limit == 64000 && c->weight == 3);
    assert_true(m->quota == 0 && m->limit == 512.0 * 1024 * 1024 * 1024);
    tg_queue_obj_free(&q);
}

static void test_ours(void **state)
{
    (void)state;
    struct tg_queue_obj *q = queue("apiVersion: topogang.io/v1alpha1\n"
                                   "kind: Queue\n"
                                   "metadata: {name: team-b}\n"
                                   "spec:\n"
                                   "  parent: org\n"
                                   "  priority: 5\n"
                                   "  resources:\n"
                                   "    nvidia.com/gpu: {quota: '24', limit: '48', overQuotaWeight: 2}\n"
                                   "    rdma/hca: {quota: 4}\n"
                                   "    memory: {limit: 1Ti}\n"
                                   "    cpu: {quota: 500m}\n");
    assert_int_equal(nwarn + nerr, 0);
    assert_null(q->problem);
    assert_int_equal(q->api, TG_QAPI_TOPOGANG);
    assert_int_equal(q->priority, 5);
    assert_int_equal(q->nres, 4);
    const struct tg_queue_res *g = res(q, "nvidia.com/gpu");
    assert_true(g->quota == 24 && g->limit == 48 && g->weight == 2);
    const struct tg_queue_res *r = res(q, "rdma/hca");
    assert_true(r->quota == 4 && r->limit == TG_QUEUE_UNLIMITED && r->weight == 1);
    assert_true(res(q, "memory")->limit == 1024.0 * 1024 * 1024 * 1024);
    assert_true(res(q, "cpu")->quota == 500);
    tg_queue_obj_free(&q);

    /* fractional GPUs as a quantity */
    q = queue("apiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: half}\n"
              "spec: {resources: {nvidia.com/gpu: {quota: 500m}}}\n");
    assert_true(res(q, "nvidia.com/gpu")->quota == 0.5);
    tg_queue_obj_free(&q);
}

/* One bad field: the queue is kept, `problem` and the diag name the object
 * and the field, the valid rest is decoded. */
static void bad(const char *text, const char *field, const char *why)
{
    struct tg_queue_obj *q = queue(text);
    assert_non_null(q->problem);
    if (strncmp(q->problem, field, strlen(field)) || !strstr(q->problem, why)) {
        fail_msg("problem \"%s\", wanted \"%s: ...%s...\"", q->problem, field, why);
    }
    assert_true(nwarn >= 1);
    assert_non_null(strstr(lastmsg, "Queue "));
    assert_non_null(strstr(lastmsg, field));
    tg_queue_obj_free(&q);
}

static void test_bad_input(void **state)
{
    (void)state;
    const char *kai = "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: k}\n";
    char buf[1024];
#define KAI(spec) (snprintf(buf, sizeof buf, "%sspec: %s\n", kai, spec), buf)
    bad(KAI("{resources: {gpu: {quota: -2}}}"), "spec.resources.gpu.quota", ">= 0 or -1");
    bad(KAI("{resources: {gpu: {quota: abc}}}"), "spec.resources.gpu.quota", "must be a number");
    bad(KAI("{resources: {gpu: {quota: 8, limit: 4}}}"), "spec.resources.gpu.limit", "below the quota 8");
    bad(KAI("{resources: {gpu: {quota: 1, weight: 2}}}"), "spec.resources.gpu.weight", "unknown field");
    bad(KAI("{resources: {tpu: {quota: 1}}}"), "spec.resources.tpu", "unknown field");
    bad(KAI("{resources: {gpu: [1]}}"), "spec.resources.gpu", "must be a map");
    bad(KAI("{parentQueue: 7}"), "spec.parentQueue", "must be a string");
    bad(KAI("{parentQueue: k}"), "spec.parentQueue", "names the queue itself");
    bad(KAI("{priority: high}"), "spec.priority", "whole number");
    bad(KAI("{resources: {gpu: {overQuotaWeight: -1}}}"), "spec.resources.gpu.overQuotaWeight",
        "must be 0..");
    bad(KAI("[1, 2]"), "spec", "must be a map");

    const char *vol = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: v}\n";
#define VOL(spec) (snprintf(buf, sizeof buf, "%sspec: %s\n", vol, spec), buf)
    bad(VOL("{capability: {cpu: lots}}"), "spec.capability.cpu", "not a quantity");
    bad(VOL("{deserved: {nvidia.com/gpu: '-4'}}"), "spec.deserved.nvidia.com/gpu", "negative");
    bad(VOL("{weight: 0}"), "spec.weight", "must be 1..65535");
    bad(VOL("{deserved: {cpu: '8'}, capability: {cpu: '4'}}"), "spec.capability", "below");
    bad(VOL("{guarantee: {resource: 3}}"), "spec.guarantee.resource", "must be a map");
    bad(VOL("{shares: 3}"), "spec.shares", "unknown field");

    const char *ours = "apiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: t}\n";
#define OURS(spec) (snprintf(buf, sizeof buf, "%sspec: %s\n", ours, spec), buf)
    bad(OURS("{resources: {nvidia.com/gpu: {quota: '-1'}}}"), "spec.resources.nvidia.com/gpu.quota",
        "negative");
    bad(OURS("{resources: {nvidia.com/gpu: {quota: 8Zi}}}"), "spec.resources.nvidia.com/gpu.quota",
        "not a quantity");
    bad(OURS("{resources: {nvidia.com/gpu: {quota: true}}}"), "spec.resources.nvidia.com/gpu.quota",
        "must be a quantity");
    bad(OURS("{resources: {nvidia.com/gpu: 8}}"), "spec.resources.nvidia.com/gpu", "must be a map");
    bad(OURS("{resources: {'bad name!': {quota: 1}}}"), "spec.resources.bad name!",
        "not a resource name");
    bad(OURS("{resources: {cpu: {quota: '8', limit: '4'}}}"), "spec.resources.cpu.limit", "below");
    bad(OURS("{resources: {cpu: {quota: '8', burst: '4'}}}"), "spec.resources.cpu.burst",
        "unknown field");
    bad(OURS("{parentQueue: x}"), "spec.parentQueue", "unknown field");

    /* the valid rest is kept beside the problem */
    struct tg_queue_obj *q = queue(OURS("{parent: p, resources: {cpu: {quota: '-1'}, "
                                        "nvidia.com/gpu: {quota: '8'}}}"));
    assert_non_null(q->problem);
    assert_string_equal(tg_str(q->parent), "p");
    assert_true(res(q, "nvidia.com/gpu")->quota == 8);
    assert_true(res(q, "cpu")->quota == 0);
    tg_queue_obj_free(&q);
#undef KAI
#undef VOL
#undef OURS
}

/* No name or an API of none of the three: refused (TG_EPARSE), with an
 * error naming the field. */
static void test_refused(void **state)
{
    (void)state;
    const char *texts[] = {
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {}\nspec: {}\n",
        "apiVersion: topogang.io/v1alpha1\nkind: Queue\nspec: {}\n",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\n",
        "[1]\n",
    };
    const char *fields[] = {"metadata.name", "metadata.name", "apiVersion", "apiVersion"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        cJSON *j = yaml(texts[i]);
        struct tg_queue_obj *q = (void *)1;
        nerr = 0;
        assert_int_equal(tg_queue_obj_decode(j, &D, &q), TG_EPARSE);
        assert_null(q);
        assert_int_equal(nerr, 1);
        assert_non_null(strstr(lastmsg, fields[i]));
        cJSON_Delete(j);
    }
}

/* ---- membership ---------------------------------------------------------------- */

static struct tg_pod *pod(const char *text)
{
    cJSON *j = yaml(text);
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(j, 0, &D, &p), 0);
    cJSON_Delete(j);
    return p;
}

static struct tg_podgroup *podgroup(const char *text)
{
    cJSON *j = yaml(text);
    struct tg_podgroup *g = NULL;
    assert_int_equal(tg_podgroup_decode_any(j, &D, &g), 0);
    cJSON_Delete(j);
    return g;
}

static struct tg_namespace *ns(const char *text)
{
    cJSON *j = yaml(text);
    struct tg_namespace *n = NULL;
    assert_int_equal(tg_namespace_decode(j, &D, &n), 0);
    cJSON_Delete(j);
    return n;
}

static const char *qname(uint32_t id)
{
    return id ? tg_str(id) : "";
}

#define POD "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c}]}\n"

/* The decoders read each API's spelling into the queue fields. */
static void test_decoded_membership(void **state)
{
    (void)state;
    struct {
        const char *meta, *want;
    } pods[] = {
        {"metadata: {name: a, namespace: n, labels: {kai.scheduler/queue: team-a}}\n", "team-a"},
        {"metadata: {name: a, namespace: n, labels: {topogang.io/queue: ours, "
         "kai.scheduler/queue: kai}}\n", "ours"},
        {"metadata: {name: a, namespace: n, annotations: {scheduling.volcano.sh/queue-name: vq}}\n",
         "vq"},
        {"metadata: {name: a, namespace: n, labels: {kai.scheduler/queue: ''}}\n", ""},
        {"metadata: {name: a, namespace: n, annotations: {topogang.io/queue: x}}\n", ""},
    };
    for (size_t i = 0; i < sizeof pods / sizeof *pods; i++) {
        char buf[512];
        snprintf(buf, sizeof buf, POD "%s", pods[i].meta);
        struct tg_pod *p = pod(buf);
        assert_string_equal(qname(p->queue), pods[i].want);
        tg_pod_free(&p);
    }
    struct {
        const char *text, *want;
    } pgs[] = {
        {"apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: n}\n"
         "spec: {minMember: 2, queue: kq}\n", "kq"},
        {"apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: n, "
         "labels: {kai.scheduler/queue: lq}}\nspec: {minMember: 2}\n", "lq"},
        {"apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: n}\n"
         "spec: {minMember: 2, queue: vq}\n", "vq"},
        {"apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: n, "
         "labels: {topogang.io/queue: tq}}\nspec: {minMember: 2}\n", "tq"},
        {"apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: n}\n"
         "spec: {minMember: 2}\n", ""},
        {"apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: n, "
         "labels: {kai.scheduler/queue: xq}}\nspec: {minMember: 2}\n", "xq"},
    };
    for (size_t i = 0; i < sizeof pgs / sizeof *pgs; i++) {
        struct tg_podgroup *g = podgroup(pgs[i].text);
        assert_string_equal(qname(g->queue), pgs[i].want);
        tg_podgroup_free(&g);
    }
    struct tg_namespace *n = ns("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, "
                                "labels: {topogang.io/queue: nq}}\n");
    assert_string_equal(qname(n->queue), "nq");
    tg_namespace_free(&n);
    n = ns("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, "
           "annotations: {topogang.io/queue: na}}\n");
    assert_string_equal(qname(n->queue), "na");
    tg_namespace_free(&n);
    /* KAI's pod label is no namespace default (KAI has none) */
    n = ns("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, "
           "labels: {kai.scheduler/queue: k}}\n");
    assert_int_equal(n->queue, 0);
    tg_namespace_free(&n);
}

static void test_resolve(void **state)
{
    (void)state;
    uint32_t dflt = tg_intern("default-queue");
    struct tg_podgroup g = {0};
    struct tg_pod a = {0}, b = {0}, c = {0};
    struct tg_namespace n = {0};
    const struct tg_pod *pods[] = {&a, &b, &c};

    struct tg_queue_pick k = tg_queue_resolve(NULL, NULL, 0, NULL, dflt);
    assert_int_equal(k.queue, dflt);
    assert_int_equal(k.src, TG_QSRC_DEFAULT);
    assert_string_equal(tg_queue_src_name[k.src], "default");

    n.queue = tg_intern("ns-q");
    k = tg_queue_resolve(&g, pods, 3, &n, dflt);
    assert_int_equal(k.queue, n.queue);
    assert_int_equal(k.src, TG_QSRC_NAMESPACE);

    b.queue = tg_intern("pod-q");
    c.queue = tg_intern("other-q");
    k = tg_queue_resolve(&g, pods, 3, &n, dflt);
    assert_int_equal(k.queue, b.queue);
    assert_int_equal(k.src, TG_QSRC_POD);
    assert_int_equal(k.conflict, c.queue);

    c.queue = b.queue;
    k = tg_queue_resolve(&g, pods, 3, &n, dflt);
    assert_int_equal(k.conflict, 0);

    g.queue = tg_intern("pg-q");
    k = tg_queue_resolve(&g, pods, 3, &n, dflt);
    assert_int_equal(k.queue, g.queue);
    assert_int_equal(k.src, TG_QSRC_PODGROUP);

    k = tg_queue_resolve(NULL, pods, 1, NULL, 0); /* a has none, no default */
    assert_int_equal(k.queue, 0);
}

/* The vendored CRDs' own examples decode clean: KAI's quickstart queues. */
static void test_kai_quickstart(void **state)
{
    (void)state;
    struct tg_queue_obj *q = queue("apiVersion: scheduling.run.ai/v2\nkind: Queue\n"
                                   "metadata:\n  name: default-queue\n"
                                   "spec:\n  parentQueue: default-parent-queue\n  resources:\n"
                                   "    cpu:\n      limit: -1\n      overQuotaWeight: 1\n"
                                   "      quota: 0\n"
                                   "    gpu:\n      limit: -1\n      overQuotaWeight: 1\n"
                                   "      quota: 0\n"
                                   "    memory:\n      limit: -1\n      overQuotaWeight: 1\n"
                                   "      quota: 0\n");
    assert_null(q->problem);
    assert_int_equal(q->nres, 3);
    tg_queue_obj_free(&q);
}

/* simulate reads Queues of the three APIs from its YAML with the same
 * decoder; a problem is reported with file:line, object and field, and the
 * queue kept; the fixture of the e2e test loads with exactly its two broken
 * ones reported. */
static void test_simulate_reads_queues(void **state)
{
    (void)state;
    const char *src = getenv("TOPOGANG_SRC");
    assert_non_null(src);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/queues/queues.yaml", src);
    FILE *err = tmpfile();
    assert_non_null(err);
    int saved = dup(fileno(stderr));
    fflush(stderr);
    dup2(fileno(err), fileno(stderr));
    struct tg_simdata d;
    tg_simdata_init(&d);
    struct tg_sb e = {0};
    int rc = tg_simdata_load_path(&d, path, &e);
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    assert_int_equal(rc, 0);
    assert_int_equal(d.nqueues, 5);
    int broken = 0;
    for (uint32_t i = 0; i < d.nqueues; i++)
        broken += d.queues[i]->problem != NULL;
    assert_int_equal(broken, 2);
    char out[4096] = "";
    rewind(err);
    size_t n = fread(out, 1, sizeof out - 1, err);
    out[n] = 0;
    fclose(err);
    /* kai-broken's gpu quota is on line 48 of the fixture, tg-broken's limit on 57 */
    if (!strstr(out, "queues.yaml:48:") || !strstr(out, "Queue kai-broken (scheduling.run.ai/v2)") ||
        !strstr(out, "spec.resources.gpu.quota") || !strstr(out, "queues.yaml:57:") ||
        !strstr(out, "spec.resources.nvidia.com/gpu.limit"))
        fail_msg("simulate's messages: %s", out);
    tg_sb_free(&e);
    tg_simdata_free(&d);
}

/* The set the engine gets from the daemon (tg__queues_merge, what
 * tg__queues_current reads from the informer's stores): one Queue per name,
 * topogang.io's before KAI's before Volcano's; an API not watched is no store. */
static void test_current_set(void **state)
{
    (void)state;
    struct tg_store st[TG_QAPI_N];
    for (int api = 0; api < TG_QAPI_N; api++)
        tg_store_init(&st[api], &tg_kind_queue[api]);
    static const char *const names[TG_QAPI_N][2] = {{"shared", "ours"}, {"shared", "kai"},
                                                     {"kai", "volcano"}};
    for (int api = 0; api < TG_QAPI_N; api++)
        for (int i = 0; i < 2; i++) {
            char text[200];
            snprintf(text, sizeof text, "{\"metadata\":{\"name\":\"%s\"}}", names[api][i]);
            cJSON *j = cJSON_Parse(text);
            void *o = NULL, *old = NULL;
            assert_int_equal(tg_kind_queue[api].decode(j, &o), 0);
            assert_int_equal(tg_store_put(&st[api], o, &old), 0);
            assert_null(old);
            cJSON_Delete(j);
        }
    const struct tg_store *const all[TG_QAPI_N] = {&st[0], &st[1], &st[2]};
    const struct tg_queue_obj **v = NULL;
    int n = tg__queues_merge(all, &v);
    assert_int_equal(n, 4);
    const char *want[][2] = {{"shared", "topogang"}, {"ours", "topogang"}, {"kai", "KAI"},
                             {"volcano", "Volcano"}};
    for (int i = 0; i < 4; i++) {
        int found = 0;
        for (int k = 0; k < n; k++)
            if (!strcmp(tg_str(v[k]->name), want[i][0])) {
                found++;
                assert_string_equal(tg_queue_apis[v[k]->api].name, want[i][1]);
            }
        assert_int_equal(found, 1);
    }
    free(v);
    const struct tg_store *const kai_only[TG_QAPI_N] = {NULL, &st[1], NULL};
    assert_int_equal(tg__queues_merge(kai_only, &v), 2);
    free(v);
    const struct tg_store *const none[TG_QAPI_N] = {NULL, NULL, NULL};
    assert_int_equal(tg__queues_merge(none, &v), 0);
    assert_null(v);
    for (int api = 0; api < TG_QAPI_N; api++)
        tg_store_free(&st[api]);
}


/* A tree of one topogang.io Queue "team-s" with spec.resources `res` (JSON)
 * on 16 GPUs, 64 cpu and 64Gi (nvidia.com/gpu registered first, as a Node
 * would). The Queue in *o; free both. */
static struct tg_fairshare *one_queue(const char *res, struct tg_queue_obj **o)
{
    char text[512];
    snprintf(text, sizeof text, "{\"apiVersion\":\"topogang.io/v1alpha1\",\"kind\":\"Queue\","
                                "\"metadata\":{\"name\":\"team-s\"},\"spec\":{\"resources\":%s}}", res);
    cJSON *j = cJSON_Parse(text);
    assert_int_equal(tg_queue_obj_decode(j, &D, o), 0);
    cJSON_Delete(j);
    const struct tg_queue_obj *qs[] = {*o};
    struct tg_fairshare *fs = NULL;
    uint32_t gpu = (uint32_t)tg_res_id("nvidia.com/gpu", 14);
    assert_int_equal(tg_fairshare_build(qs, 1, NULL, NULL, &fs), 0);
    struct tg_rq cap[] = {{gpu, 16}, {TG_RES_CPU, 64000}, {TG_RES_MEMORY, 64LL << 30}};
    assert_int_equal(tg_fairshare_set_capacity(fs, cap, 3), 0);
    return fs;
}

/* The status written to a topogang.io Queue (tg__queues_status_build,
 * tg__queues_status_due): whole GPUs as integers, cpu and memory as
 * quantities; written when first
 * seen, not again while unchanged, a change within a second held back
 * (then written), a resource gone from the status set null in the patch. */
static void test_status(void **state)
{
    (void)state;
    struct tg_queue_obj *o = NULL;
    struct tg_fairshare *fs = one_queue("{\"nvidia.com/gpu\":{\"quota\":\"4\"},\"cpu\":{\"quota\":\"2\"},"
                                        "\"memory\":{\"quota\":\"8Gi\"}}", &o);
    uint32_t gpu = (uint32_t)tg_res_lookup("nvidia.com/gpu", 14);
    struct tg_rq use[] = {{gpu, 3}, {TG_RES_CPU, 1500}, {TG_RES_MEMORY, 4LL << 30}};
    tg_fairshare_demand_add(fs, 0, use, 3, 1);
    tg_fairshare_alloc_add(fs, 0, use, 3, 1);
    assert_int_equal(tg_fairshare_update(fs), 1);

    cJSON *st = tg__queues_status_build(fs, 0, 2, 1);
    char *text = cJSON_PrintUnformatted(st);
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(st, "allocated");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(st, "fairShare");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(al, "nvidia.com/gpu");
    if (!cJSON_IsNumber(g) || g->valuedouble != 3)
        fail_msg("allocated GPUs: %s", text);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(al, "cpu")->valuestring, "1500m");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(al, "memory")->valuestring, "4Gi");
    g = cJSON_GetObjectItemCaseSensitive(sh, "nvidia.com/gpu");
    if (!cJSON_IsNumber(g) || g->valuedouble != 3) /* min(quota 4, demand 3) */
        fail_msg("fair share GPUs: %s", text);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "waitingGangs")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "runningGangs")->valueint, 1);
    free(text);

    struct tg__queues *q = NULL;
    assert_int_equal(tg__queues_new(NULL, &q), 0);
    char *p = tg__queues_status_due(q, "team-s", "u1", st, 10000);
    assert_non_null(p);
    assert_non_null(strstr(p, "\"runningGangs\":1"));
    free(p);
    /* unchanged, much later: nothing */
    assert_null(tg__queues_status_due(q, "team-s", "u1", tg__queues_status_build(fs, 0, 2, 1), 20000));
    /* changed 0.5 s after the last write: held back; at 1 s: written */
    assert_null(tg__queues_status_due(q, "team-s", "u1", tg__queues_status_build(fs, 0, 1, 2), 10500));
    p = tg__queues_status_due(q, "team-s", "u1", tg__queues_status_build(fs, 0, 1, 2), 11000);
    assert_non_null(p);
    assert_non_null(strstr(p, "\"waitingGangs\":1"));
    free(p);
    /* memory gone from the status set (as when its quota is removed): null */
    cJSON *st2 = tg__queues_status_build(fs, 0, 1, 2);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(st2, "allocated"),
                                            "memory");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(st2, "fairShare"), "memory");
    p = tg__queues_status_due(q, "team-s", "u1", st2, 12000);
    assert_non_null(p);
    cJSON *pj = cJSON_Parse(p);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pj, "allocated"), "memory")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pj, "fairShare"), "memory")));
    cJSON_Delete(pj);
    free(p);
    /* unchanged but the Queue deleted and made again (a new uid): written */
    p = tg__queues_status_due(q, "team-s", "u1", tg__queues_status_build(fs, 0, 1, 2), 13000);
    assert_non_null(p); /* memory back */
    free(p);
    assert_null(tg__queues_status_due(q, "team-s", "u1", tg__queues_status_build(fs, 0, 1, 2), 30000));
    p = tg__queues_status_due(q, "team-s", "u2", tg__queues_status_build(fs, 0, 1, 2), 30000);
    assert_non_null(p);
    free(p);
    /* another queue is its own: written at once */
    p = tg__queues_status_due(q, "team-t", "u9", tg__queues_status_build(fs, 0, 1, 2), 12100);
    assert_non_null(p);
    free(p);
    tg__queues_free(&q);
    assert_null(q);
    tg_fairshare_free(&fs);
    tg_queue_obj_free(&o);
}


/* The status shows only the resources some Queue divides: team-s names
 * only GPUs; the cpu its pods hold is no column of it (before: "cpu":
 * "1500m" in allocated and fairShare). A fractional GPU allocation is a
 * quantity string ("500m"), as the CRD's int-or-string admits. */
static void test_status_divided_only(void **state)
{
    (void)state;
    struct tg_queue_obj *o = NULL;
    struct tg_fairshare *fs = one_queue("{\"nvidia.com/gpu\":{\"quota\":\"4\"}}", &o);
    uint32_t gpu = (uint32_t)tg_res_lookup("nvidia.com/gpu", 14);
    struct tg_rq use[] = {{TG_RES_CPU, 1500}, {TG_RES_MEMORY, 4LL << 30}};
    tg_fairshare_demand_add(fs, 0, use, 2, 1);
    tg_fairshare_alloc_add(fs, 0, use, 2, 1);
    tg_fairshare_update(fs);
    cJSON *st = tg__queues_status_build(fs, 0, 0, 1);
    char *text = cJSON_PrintUnformatted(st);
    for (int i = 0; i < 2; i++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, i ? "fairShare" : "allocated");
        if (!cJSON_GetObjectItemCaseSensitive(m, "nvidia.com/gpu") ||
            cJSON_GetObjectItemCaseSensitive(m, "cpu") || cJSON_GetObjectItemCaseSensitive(m, "memory"))
            fail_msg("the status: %s", text);
    }
    free(text);
    cJSON_Delete(st);
    char buf[32];
    assert_int_equal(tg_res_amount(gpu, 0.5, TG_AMOUNT_QUANTITY, buf, sizeof buf), 0);
    assert_string_equal(buf, "500m");
    assert_int_equal(tg_res_amount(gpu, 0.5, 0, buf, sizeof buf), 1);
    assert_string_equal(buf, "0.5");
    assert_int_equal(tg_res_amount(gpu, 8, TG_AMOUNT_QUANTITY, buf, sizeof buf), 1);
    assert_string_equal(buf, "8");
    assert_int_equal(tg_res_amount(TG_RES_CPU, 1500, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "1500m");
    tg_fairshare_free(&fs);
    tg_queue_obj_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kai),
        cmocka_unit_test(test_volcano),
        cmocka_unit_test(test_ours),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_decoded_membership),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_kai_quickstart),
        cmocka_unit_test(test_simulate_reads_queues),
        cmocka_unit_test(test_current_set),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_status_divided_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
