/* Time fairness across a restart (issue 19): with queues.usageHalfLifeSeconds
 * set, each tenant queue's decayed usage (resource-seconds, scheduler/
 * fairshare.h) is what orders the queues and lowers a heavy user's
 * over-quota weight. It lives in the leader's memory; without this a restart
 * or a new leader would start every queue from zero, and the team that used
 * most last week would go first again.
 *
 * The leader saves it in the ConfigMap <lease namespace>/<lease name>-usage
 * (default topogang-system/topogang-scheduler-usage), key usage.json:
 *
 *   {"savedAt":"2026-11-27T06:00:00.000Z","savedAtMs":1795...,
 *    "halfLifeSeconds":86400,
 *    "queues":{"team-a":{"nvidia.com/gpu":123456.7,"cpu":...}, ...}}
 *
 * amounts in the model's units times seconds (cpu in millicore-seconds,
 * memory in byte-seconds, the rest in unit-seconds), every queue of the
 * division including parents. Written by server-side apply (field manager
 * topogang-usage) every USAGE_SAVE_MS while leading, and once more on
 * SIGTERM (the shutdown waits for it as for any write); a SIGKILL loses at
 * most the last USAGE_SAVE_MS.
 *
 * On becoming leader, once the caches are synced (the policy and the Queues
 * read), it is read back before any decision (tg__usage_ready): each amount
 * decays by the half-life over its age (now - savedAt, wall clock) and
 * becomes that queue's usage (tg_engine_queue_usage_seed; a queue not
 * defined yet gets it when it appears). Usage accrued while no scheduler
 * ran is not counted: only the decay. No ConfigMap (404) or time fairness
 * off: nothing to read. A ConfigMap that cannot be read (malformed, a
 * field of the wrong type) is named in a warning with the field and
 * ignored; any other failure to read it is logged and scheduling goes on
 * without it, never waits for it past one answer. */
#include "scheduler/daemon/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "informer/api.h"
#include "model/objects.h"
#include "model/resources.h"
#include "scheduler/engine.h"
#include "scheduler/fairshare.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/strbuf.h"

#define C "usage"

struct tg__usage {
    struct tg_client *client;
    struct tg_engine *engine;
    char ns[128], name[300];
    uint8_t leading, synced;
    uint8_t state;                      /* enum state */
    uint8_t saving;                     /* an apply in flight */
    uint8_t unread;                     /* ready without reading (time fairness was off) */
    uint8_t again;                      /* the final save, due once the one in flight ends */
    int64_t saved_ms;                   /* loop ms of the last save started */
    void (*ready)(void *ud);
    void *ud;
};

enum state { IDLE, READING, READY };

int tg__usage_new(struct tg_client *c, struct tg_engine *e, const char *lease_ns,
                  const char *lease_name, struct tg__usage **out)
{
    struct tg__usage *u = calloc(1, sizeof *u);
    if (!u)
        return TG_ENOMEM;
    u->client = c;
    u->engine = e;
    snprintf(u->ns, sizeof u->ns, "%s", lease_ns);
    snprintf(u->name, sizeof u->name, "%s-usage", lease_name);
    *out = u;
    return 0;
}

void tg__usage_free(struct tg__usage **u)
{
    free(*u);
    *u = NULL;
}

static int time_fair(const struct tg__usage *u)
{
    return tg_engine_policy(u->engine)->usage_half_life_s > 0;
}

/* ---- reading back ------------------------------------------------------------------------ */

/* Seeds the engine from usage.json's text; 0, or -1 with the field in why. */
static int seed_from(struct tg__usage *u, const char *text, char *why, size_t n)
{
    cJSON *j = cJSON_Parse(text);
    int rc = -1;
    if (!j) {
        snprintf(why, n, "data.usage.json: not JSON");
        return -1;
    }
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(j, "savedAtMs");
    const cJSON *qs = cJSON_GetObjectItemCaseSensitive(j, "queues");
    if (!cJSON_IsNumber(at) || !isfinite(at->valuedouble)) {
        snprintf(why, n, "data.usage.json: savedAtMs: not a number");
        goto out;
    }
    if (!cJSON_IsObject(qs)) {
        snprintf(why, n, "data.usage.json: queues: not an object");
        goto out;
    }
    int64_t age = tg__wall_ms() - (int64_t)at->valuedouble;
    uint32_t seeded = 0;
    const cJSON *q, *r;
    cJSON_ArrayForEach(q, qs) {
        if (!cJSON_IsObject(q)) {
            snprintf(why, n, "data.usage.json: queues.%s: not an object", q->string);
            goto out;
        }
        cJSON_ArrayForEach(r, q) {
            int res = tg_res_lookup(r->string, strlen(r->string));
            if (res < 0)
                continue; /* a resource no node offers now: nothing of it to divide */
            if (!cJSON_IsNumber(r) ||
                tg_engine_queue_usage_seed(u->engine, tg_intern(q->string), (uint32_t)res,
                                           r->valuedouble, age) == TG_EINVAL) {
                snprintf(why, n, "data.usage.json: queues.%s.%s: not a non-negative number",
                         q->string, r->string);
                goto out;
            }
            seeded++;
        }
    }
    tg_info(C, "ConfigMap %s/%s: decayed usage of %d queue(s) read back (%u amount(s), saved "
               "%lld s ago)", u->ns, u->name, cJSON_GetArraySize(qs), seeded,
            (long long)(age > 0 ? age / 1000 : 0));
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}

static void ready(struct tg__usage *u)
{
    u->state = READY;
    if (u->ready)
        u->ready(u->ud);
}

static void on_read(void *ud, const struct tg_resp *resp)
{
    struct tg__usage *u = ud;
    if (u->state != READING)
        return;
    char why[400] = "";
    if (resp->status == 404) {
        tg_info(C, "ConfigMap %s/%s: none (no usage saved yet)", u->ns, u->name);
    } else if (resp->err || resp->status != 200) {
        tg_warn(C, "ConfigMap %s/%s: cannot read the saved usage: %s (HTTP %ld); queues start "
                   "from no usage", u->ns, u->name, resp->msg ? resp->msg : tg_strerror(resp->err),
                resp->status);
    } else {
        cJSON *cm = cJSON_ParseWithLength(resp->body, resp->len);
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(cm, "data");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(data, "usage.json");
        if (!cJSON_IsString(text))
            snprintf(why, sizeof why, "data.usage.json: missing or not a string");
        else
            seed_from(u, text->valuestring, why, sizeof why);
        cJSON_Delete(cm);
        if (why[0])
            tg_warn(C, "ConfigMap %s/%s: %s; the saved usage is ignored (queues start from no "
                       "usage; it is written anew)", u->ns, u->name, why);
    }
    ready(u);
}

/* Reads the saved usage once leading with the caches synced; ready at once
 * with time fairness off. */
static void maybe_read(struct tg__usage *u)
{
    if (!u->leading || !u->synced || u->state != IDLE)
        return;
    if (!time_fair(u)) {
        u->unread = 1;
        ready(u);
        return;
    }
    u->unread = 0;
    u->state = READING;
    if (tg_api_configmap_get(u->client, u->ns, u->name, on_read, u)) {
        tg_warn(C, "ConfigMap %s/%s: cannot ask for the saved usage; queues start from no usage",
                u->ns, u->name);
        ready(u);
    }
}

void tg__usage_synced(struct tg__usage *u)
{
    u->synced = 1;
    maybe_read(u);
}

void tg__usage_leading(struct tg__usage *u, int leading)
{
    u->leading = (uint8_t)leading;
    if (!leading)
        u->state = IDLE; /* read again when it leads again: the next leader wrote since */
    maybe_read(u);
}

void tg__usage_on_ready(struct tg__usage *u, void (*fn)(void *ud), void *ud)
{
    u->ready = fn;
    u->ud = ud;
}

int tg__usage_ready(const struct tg__usage *u)
{
    return u->state == READY;
}

/* ---- saving ------------------------------------------------------------------------------ */

static void save(struct tg__usage *u, int64_t loop_ms);

static void on_saved(void *ud, const struct tg_resp *resp)
{
    struct tg__usage *u = ud;
    u->saving = 0;
    if (resp->err)
        tg_warn(C, "ConfigMap %s/%s: saving the queues' usage failed: %s (HTTP %ld)", u->ns,
                u->name, resp->msg ? resp->msg : tg_strerror(resp->err), resp->status);
    if (u->again) { /* SIGTERM came while it was in flight: what was used since, too */
        u->again = 0;
        save(u, u->saved_ms);
    }
}

/* usage.json's text (free()), the engine's queues ticked to now first; NULL
 * while queues are off or out of memory. */
static char *usage_json(struct tg_engine *e, int64_t wall_ms)
{
    tg_engine_queues_tick(e);
    const struct tg_fairshare *fs = tg_engine_fairshare(e);
    if (!fs)
        return NULL;
    char when[40];
    tg_format_microtime(wall_ms, when, sizeof when);
    cJSON *j = cJSON_CreateObject(), *qs = NULL;
    if (!j || !cJSON_AddStringToObject(j, "savedAt", when) ||
        !cJSON_AddNumberToObject(j, "savedAtMs", (double)wall_ms) ||
        !cJSON_AddNumberToObject(j, "halfLifeSeconds",
                                 (double)tg_engine_policy(e)->usage_half_life_s) ||
        !(qs = cJSON_AddObjectToObject(j, "queues"))) {
        cJSON_Delete(j);
        return NULL;
    }
    for (uint32_t q = 0; q < tg_fairshare_count(fs); q++) {
        cJSON *o = cJSON_AddObjectToObject(qs, tg_str(tg_fairshare_name(fs, q)));
        for (uint32_t r = 0; o && r < tg_res_count(); r++) {
            double v = tg_fairshare_usage(fs, q, r);
            if (v > 0 && !cJSON_AddNumberToObject(o, tg_res_name(r), v))
                o = NULL;
        }
        if (!o) {
            cJSON_Delete(j);
            return NULL;
        }
    }
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

static void save(struct tg__usage *u, int64_t loop_ms)
{
    u->saved_ms = loop_ms;
    char *text = usage_json(u->engine, tg__wall_ms());
    if (!text)
        return;
    struct tg_sb data = {0};
    tg_sb_puts(&data, "{\"usage.json\":");
    tg_sb_json_str(&data, text);
    tg_sb_putc(&data, '}');
    free(text);
    if (!data.oom && tg_api_configmap_apply(u->client, u->ns, u->name, "topogang-usage",
                                            tg_sb_str(&data), on_saved, u) == 0)
        u->saving = 1;
    tg_sb_free(&data);
}

void tg__usage_tick(struct tg__usage *u, int64_t loop_ms, int final)
{
    if (u->unread && u->state == READY && time_fair(u) && !final) {
        u->state = IDLE; /* turned on by a policy reload: what was saved is read first */
        maybe_read(u);
    }
    /* only what was read back (or found absent) is ever overwritten */
    if (!u->leading || u->state != READY || !time_fair(u) || !tg_engine_fairshare(u->engine))
        return;
    if (u->saving) {
        u->again |= (uint8_t)final;
        return;
    }
    if (final || !u->saved_ms || loop_ms - u->saved_ms >= TG_USAGE_SAVE_MS)
        save(u, loop_ms);
}
