/* The kinds the informer decodes (informer/kinds.h) and the collection
 * table (tg_informer_kind): every collection has a kind, and a
 * PriorityClass without a name is refused (fuzz_watch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "informer/informer.h"
#include "informer/kinds.h"
#include "informer/reflector.h"
#include "model/queues.h"
#include "model/workload.h"
#include "util/intern.h"
#include "util/err.h"
#include "util/log.h"

/* Every collection the daemon can watch decodes with a kind; the table
 * fuzz_watch and fuzz_liststream share with the informer. */
static void test_every_collection_has_a_kind(void **state)
{
    (void)state;
    for (int k = 0; k < TG_INF_N; k++) {
        const struct tg_kind *kind = tg_informer_kind((enum tg_inf_kind)k);
        assert_non_null(kind);
        assert_non_null(kind->decode);
        assert_non_null(kind->key);
    }
    assert_ptr_equal(tg_informer_kind(TG_INF_PODS), &tg_kind_pod_any);
    assert_ptr_equal(tg_informer_kind(TG_INF_PRIOCLASSES), &tg_kind_prioclass);
    assert_ptr_equal(tg_informer_kind(TG_INF_PG_KAI), &tg_kind_pg_peer[TG_PG_KAI]);
    assert_ptr_equal(tg_informer_kind(TG_INF_TRAINJOBS), &tg_kind_workload);
    assert_ptr_equal(tg_informer_kind(TG_INF_RCLAIMS), &tg_kind_rclaim);
    assert_null(tg_informer_kind(TG_INF_N));
}

/* Each Queue API is its own collection, discovered at its own path; a list
 * item (no apiVersion, as the API server lists them) decodes under the
 * collection's API, a broken one is kept with its problem, keyed by name. */
static void test_queue_collections(void **state)
{
    (void)state;
    char path[200];
    assert_ptr_equal(tg_informer_kind(TG_INF_QUEUES_KAI), &tg_kind_queue[TG_QAPI_KAI]);
    assert_string_equal(tg_informer_path(TG_INF_QUEUES_TG, path, sizeof path),
                        "/apis/topogang.io/v1alpha1/queues");
    assert_string_equal(tg_informer_path(TG_INF_QUEUES_KAI, path, sizeof path),
                        "/apis/scheduling.run.ai/v2/queues");
    assert_string_equal(tg_informer_path(TG_INF_QUEUES_VOLCANO, path, sizeof path),
                        "/apis/scheduling.volcano.sh/v1beta1/queues");
    assert_true(TG_INF_QUEUE_KINDS & TG_INF_OPTIONAL_ALL);
    assert_false(TG_INF_QUEUE_KINDS & TG_INF_CONSTRAINT_KINDS);
    assert_false(TG_INF_QUEUE_KINDS & TG_INF_GANG_SOURCES_ALL);
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"q\",\"uid\":\"u\",\"resourceVersion\":\"3\"},"
                           "\"spec\":{\"resources\":{\"gpu\":{\"quota\":-3}}}}");
    const struct tg_kind *k = tg_informer_kind(TG_INF_QUEUES_KAI);
    void *obj = NULL;
    assert_int_equal(k->decode(o, &obj), 0);
    const struct tg_queue_obj *q = obj;
    assert_int_equal(q->api, TG_QAPI_KAI);
    assert_string_equal(k->key(obj), "q");
    assert_string_equal(k->uid(obj), "u");
    assert_string_equal(k->rv(obj), "3");
    assert_non_null(q->problem);
    assert_non_null(strstr(q->problem, "spec.resources.gpu.quota"));
    k->free(obj);
    cJSON_Delete(o);
}

static int pc(const char *json, struct tg_prioclass **out)
{
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    void *o = NULL;
    int rc = tg_kind_prioclass.decode(j, &o);
    cJSON_Delete(j);
    *out = o;
    return rc;
}

/* A PriorityClass named "" (or "\u0000...", which reads as "") was taken,
 * under an empty key: its name interns to id 0, "no class", and as the
 * global default it would have unset the real one (fuzz_watch,
 * regress-prioclass-nul-name). Refused now, as without a name. */
static void test_prioclass_empty_name(void **state)
{
    (void)state;
    struct tg_prioclass *c = NULL;
    assert_int_equal(pc("{\"metadata\":{\"name\":\"\"},\"value\":5,\"globalDefault\":true}", &c),
                     TG_EPARSE);
    assert_null(c);
    assert_int_equal(pc("{\"metadata\":{\"name\":\"\\u0000x\"},\"value\":5}", &c), TG_EPARSE);
    assert_int_equal(pc("{\"metadata\":{},\"value\":5}", &c), TG_EPARSE);
    assert_int_equal(pc("{\"metadata\":{\"name\":\"high\",\"uid\":\"u1\",\"resourceVersion\":\"7\"},"
                        "\"value\":1000,\"preemptionPolicy\":\"Never\",\"globalDefault\":true}", &c),
                     0);
    assert_string_equal(tg_kind_prioclass.key(c), "high");
    assert_int_equal(c->value, 1000);
    assert_true(c->never && c->global_default);
    tg_kind_prioclass.free(c);
}

/* A pod of the one pod watch: "ns/name", nodeName (NULL: unbound), scheduler. */
static char *pod_ev(char *buf, size_t n, const char *type, const char *name, const char *node,
                    const char *sched, const char *rv, const char *cpu)
{
    snprintf(buf, n,
             "{\"type\":\"%s\",\"object\":{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\","
             "\"uid\":\"u-%s\",\"resourceVersion\":\"%s\"},\"spec\":{\"schedulerName\":\"%s\","
             "%s%s%s\"nodeSelector\":{\"zone\":\"a\"},\"containers\":[{\"name\":\"c\",\"resources\":"
             "{\"requests\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"Pending\"}}}\n",
             type, name, name, rv, sched, node ? "\"nodeName\":\"" : "", node ? node : "",
             node ? "\"," : "", cpu);
    return buf;
}

/* The one pod watch's kind keeps what placement reads while a pod is
 * unbound (its spec) and only the requests once it is bound; tg_pod_keep
 * keeps bound pods of any scheduler and this scheduler's unbound ones. */
static void test_pod_any_and_keep(void **state)
{
    (void)state;
    char buf[1024];
    const char *cases[][3] = {{NULL, "topogang", "1"}, {"n1", "topogang", "1"},
                              {"n1", "default-scheduler", "1"}, {NULL, "default-scheduler", "0"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *ev = cJSON_Parse(pod_ev(buf, sizeof buf, "ADDED", "p", cases[i][0], cases[i][1],
                                       "1", "1"));
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(ev, "object");
        assert_int_equal(tg_pod_keep((void *)"topogang", o), cases[i][2][0] - '0');
        void *obj = NULL;
        assert_int_equal(tg_kind_pod_any.decode(o, &obj), 0);
        const struct tg_pod *p = obj;
        assert_int_equal(p->node != 0, cases[i][0] != NULL);
        assert_int_equal(p->spec != NULL, cases[i][0] == NULL); /* the selector while unbound */
        tg_kind_pod_any.free(obj);
        cJSON_Delete(ev);
    }
}

struct seen {
    int adds, updates, deletes, bound_updates; /* bound_updates: unbound old, bound new */
    char last[64];
};
static void s_add(void *ud, const void *o)
{
    struct seen *s = ud;
    s->adds++;
    snprintf(s->last, sizeof s->last, "add %s", ((const struct tg_pod *)o)->key);
}
static void s_upd(void *ud, const void *old, const void *o)
{
    struct seen *s = ud;
    s->updates++;
    s->bound_updates += !((const struct tg_pod *)old)->node && ((const struct tg_pod *)o)->node;
    snprintf(s->last, sizeof s->last, "update %s", ((const struct tg_pod *)o)->key);
}
static void s_del(void *ud, const void *o)
{
    struct seen *s = ud;
    s->deletes++;
    snprintf(s->last, sizeof s->last, "delete %s", ((const struct tg_pod *)o)->key);
}

/* A reflector with opts.keep = tg_pod_keep, fed watch events: a bind is one
 * update (unbound -> bound); another scheduler's unbound pod is neither
 * kept nor decoded (its requests do not even parse), and when bound it
 * comes as an add; a deleted pod leaves the store. */
static void test_keep_routes_one_watch(void **state)
{
    (void)state;
    struct seen s = {0};
    struct tg_reflector_opts o = {.kind = &tg_kind_pod_any, .path = "/api/v1/pods",
                                  .keep = tg_pod_keep, .keep_ud = (void *)"topogang",
                                  .h = {.on_add = s_add, .on_update = s_upd, .on_delete = s_del,
                                        .ud = &s}};
    struct tg_reflector *r = NULL;
    char buf[1024];
    assert_int_equal(tg__reflector_new_offline(&o, &r), 0);
    const struct tg_store *st = tg_reflector_store(r);
#define FEED(...) (pod_ev(buf, sizeof buf, __VA_ARGS__), \
                   tg__reflector_feed_watch(r, buf, strlen(buf)))
    assert_int_equal(FEED("ADDED", "ours", NULL, "topogang", "1", "1"), 0);
    assert_int_equal(s.adds, 1);
    assert_int_equal(FEED("ADDED", "theirs", NULL, "default-scheduler", "2", "not-a-quantity"), 0);
    assert_int_equal(FEED("MODIFIED", "theirs", NULL, "default-scheduler", "3", "bad"), 0);
    assert_int_equal(tg_store_len(st), 1);
    assert_null(tg_store_get(st, "ml/theirs"));
    assert_int_equal(tg_reflector_stats(r)->skipped, 2);
    assert_int_equal(tg_reflector_stats(r)->decode_errors, 0); /* never decoded */
    assert_int_equal(s.adds, 1);
    /* our bind: one MODIFIED, one update from unbound to bound */
    assert_int_equal(FEED("MODIFIED", "ours", "n1", "topogang", "4", "1"), 0);
    assert_int_equal(s.updates, 1);
    assert_int_equal(s.bound_updates, 1);
    assert_int_equal(s.deletes, 0);
    const struct tg_pod *p = tg_store_get(st, "ml/ours");
    assert_non_null(p);
    assert_true(p->node != 0);
    assert_null(p->spec);
    /* theirs bound by the other scheduler: now kept, an add */
    assert_int_equal(FEED("MODIFIED", "theirs", "n2", "default-scheduler", "5", "1"), 0);
    assert_int_equal(s.adds, 2);
    assert_string_equal(s.last, "add ml/theirs");
    assert_int_equal(tg_store_len(st), 2);
    /* deleted (or finished: the field selector says DELETED): gone */
    assert_int_equal(FEED("DELETED", "ours", "n1", "topogang", "6", "1"), 0);
    assert_int_equal(s.deletes, 1);
    assert_null(tg_store_get(st, "ml/ours"));
    /* an unbound pod of another scheduler deleted: nothing to do, nothing decoded */
    assert_int_equal(FEED("DELETED", "gone", NULL, "default-scheduler", "7", "bad"), 0);
    assert_int_equal(s.deletes, 1);
    assert_int_equal(tg_reflector_stats(r)->decode_errors, 0);
    assert_string_equal(tg_reflector_rv(r), "7");
#undef FEED
    tg__reflector_free_offline(&r);
}

int main(void)
{
    tg_log_set_level(TG_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_collection_has_a_kind),
        cmocka_unit_test(test_prioclass_empty_name),
        cmocka_unit_test(test_queue_collections),
        cmocka_unit_test(test_pod_any_and_keep),
        cmocka_unit_test(test_keep_routes_one_watch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
