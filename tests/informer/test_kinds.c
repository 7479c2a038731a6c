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
#include "model/workload.h"
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
