/* The Queue decoder (model/queues.h) on JSON as the API server would send
 * it, under each API and by apiVersion. Checks the contracts the scheduler
 * relies on: errors are TG_EPARSE, TG_ENOMEM or TG_EINVAL (an API out of
 * range, never asked here), every diagnostic names an object and a field, a
 * kept queue has a name, resources sorted and unique by name, amounts
 * finite, quota 0 or more (or -1, KAI's unlimited), a limit of -1 or at
 * least the quota, a weight 0 or more, and `problem` set whenever a
 * warning was reported. */
#include "fuzz/fuzz.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "model/queues.h"
#include "util/err.h"
#include "util/intern.h"

static int nwarn;

static void report(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                   const char *msg)
{
    (void)ud;
    (void)at;
    fz_check(what && field && msg && *what && *field && *msg, "diagnostic without a name or field");
    fz_check(!strncmp(what, "Queue", 5), "diagnostic names \"%s\", not a Queue", what);
    nwarn += !is_error;
}

static void check(int rc, struct tg_queue_obj *q, int api)
{
    fz_check(rc == 0 || rc == TG_EPARSE || rc == TG_ENOMEM, "decode returned %d (%s)", rc,
             tg_err_name(rc));
    if (rc) {
        fz_check(!q, "an object returned with an error");
        return;
    }
    fz_check(q->name && *tg_str(q->name), "a kept queue without a name");
    fz_check(api < 0 || q->api == api, "api %d, asked %d", q->api, api);
    fz_check(q->parent != q->name, "its own parent");
    fz_check(!nwarn == !q->problem, "%d warnings, problem %s", nwarn, q->problem ? q->problem : "NULL");
    for (uint32_t i = 0; i < q->nres; i++) {
        const struct tg_queue_res *r = &q->res[i];
        fz_check(i == 0 || q->res[i - 1].name < r->name, "resources not sorted/unique at %u", i);
        fz_check(tg_queue_obj_res(q, r->name) == r, "resource %u not found", i);
        fz_check(isfinite(r->quota) && isfinite(r->limit) && isfinite(r->weight) &&
                     isfinite(r->guarantee), "an amount is not finite");
        fz_check(r->quota >= 0 || r->quota == -1, "quota %g", r->quota);
        fz_check(r->limit == TG_QUEUE_UNLIMITED || (r->limit >= 0 && r->limit >= r->quota),
                 "limit %g, quota %g", r->limit, r->quota);
        fz_check(r->weight >= 0 && r->guarantee >= 0, "weight %g, guarantee %g", r->weight,
                 r->guarantee);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fz_strdup(data, size);
    cJSON *j = cJSON_Parse(s);
    free(s);
    if (!j)
        return 0;
    struct tg_diag d = {.report = report};
    struct tg_queue_obj *q = NULL;
    nwarn = 0;
    int rc = tg_queue_obj_decode(j, &d, &q);
    check(rc, q, -1);
    tg_queue_obj_free(&q);
    for (int api = 0; api < TG_QAPI_N; api++) {
        nwarn = 0;
        rc = tg_queue_obj_decode_api(j, api, &d, &q);
        check(rc, q, api);
        tg_queue_obj_free(&q);
    }
    cJSON_Delete(j);
    return 0;
}
