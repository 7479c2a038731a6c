/* The simulate loader (scheduler/sim/simulate.h) on any bytes as a YAML file:
 * load (bad objects are skipped quietly), place every gang, print the table
 * and the JSON. Checks the JSON parses and agrees with itself: every pending
 * pod appears once, the placed and pending counts match the pods listed, the
 * gang counts match the statuses. */
#include "fuzz/fuzz.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "config/policy.h"
#include "scheduler/sim/simulate.h"
#include "util/err.h"
#include "util/hmap.h"
#include "util/log.h"

static struct tg_policy policy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_log_set_level(TG_LOG_ERROR);
    tg_policy_default(&policy);
    return 0;
}

static int num(const cJSON *o, const char *k)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    fz_check(cJSON_IsNumber(j), "summary.%s missing", k);
    return j->valueint;
}

static void check_json(const char *text)
{
    cJSON *res = cJSON_Parse(text);
    fz_check(res != NULL, "simulate JSON does not parse:\n%s", text);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(res, "summary"), *g, *p;
    struct tg_hmap seen = {0};
    int gangs = 0, scheduled = 0, placed = 0, pending = 0;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(res, "gangs"))
    {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(g, "status");
        fz_check(cJSON_IsString(st), "gang without status");
        gangs++;
        scheduled += strcmp(st->valuestring, "Scheduled") == 0;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pods"))
        {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "pod");
            const cJSON *node = cJSON_GetObjectItemCaseSensitive(p, "node");
            fz_check(cJSON_IsString(name), "pod without name");
            uint64_t v;
            fz_check(!tg_hmap_get(&seen, name->valuestring, strlen(name->valuestring), &v),
                     "pod %s listed twice", name->valuestring);
            fz_check(tg_hmap_put(&seen, name->valuestring, strlen(name->valuestring), 1) == 0,
                     "out of memory");
            placed += cJSON_IsString(node);
            pending += cJSON_IsNull(node);
        }
    }
    fz_check(gangs == num(sum, "gangs") && scheduled == num(sum, "scheduled") &&
             gangs - scheduled == num(sum, "unschedulable"),
             "gang counts: %d gangs, %d scheduled vs summary", gangs, scheduled);
    fz_check(placed == num(sum, "podsPlaced") && pending == num(sum, "podsPending"),
             "pod counts: %d placed, %d pending vs summary %d, %d", placed, pending,
             num(sum, "podsPlaced"), num(sum, "podsPending"));
    tg_hmap_free(&seen);
    cJSON_Delete(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tg_sim *sim = tg_sim_new(&policy);
    fz_check(sim != NULL, "tg_sim_new failed");
    tg_sim_quiet(sim, 1);
    struct tg_sb err = {0}, out = {0};
    int rc = tg_sim_load_string(sim, (const char *)data, size, "fuzz.yaml", &err);
    fz_check(rc == 0 || rc == TG_EPARSE, "tg_sim_load_string returned %d", rc);
    if (rc == 0) {
        fz_check(tg_sim_run(sim) == 0, "tg_sim_run failed");
        tg_sim_table(sim, 1, &out);
        tg_sb_reset(&out);
        tg_sim_json(sim, &out);
        check_json(tg_sb_str(&out));
    }
    tg_sb_free(&err);
    tg_sb_free(&out);
    tg_sim_free(&sim);
    return 0;
}
