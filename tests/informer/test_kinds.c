/* The kinds the informer decodes (informer/kinds.h) and the collection
 * table (tg_informer_kind): every collection has a kind, and a
 * PriorityClass without a name is refused (fuzz_watch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "informer/informer.h"
#include "informer/kinds.h"
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
    assert_ptr_equal(tg_informer_kind(TG_INF_PODS_PENDING), &tg_kind_pod_spec);
    assert_ptr_equal(tg_informer_kind(TG_INF_PODS_BOUND), &tg_kind_pod);
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

int main(void)
{
    tg_log_set_level(TG_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_collection_has_a_kind),
        cmocka_unit_test(test_prioclass_empty_name),
        cmocka_unit_test(test_queue_collections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
