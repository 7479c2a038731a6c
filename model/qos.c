/* QoS class and exclusive CPUs of a pod (see model/qos.h). */
#include "model/qos.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "model/quantity.h"

/* A quantity field of a resource map: 1 and *v when present and valid, 0
 * absent, -1 malformed. */
static int qty(const cJSON *map, const char *name, int milli, int64_t *v)
{
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(map, name);
    if (!q)
        return 0;
    if (!cJSON_IsString(q) || !q->valuestring)
        return -1;
    return tg_quantity_parse(q->valuestring, strlen(q->valuestring), milli, v) ? -1 : 1;
}

/* One container: 1 when Guaranteed-shaped, with its whole CPUs (0 when its
 * cpu is fractional) in *cpus; 0 otherwise. */
static int container(const cJSON *c, int64_t *cpus)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(res, "limits");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(res, "requests");
    int64_t lc, lm, rc, rm;
    if (!cJSON_IsObject(lim) || qty(lim, "cpu", 1, &lc) != 1 || qty(lim, "memory", 0, &lm) != 1 ||
        lc == 0 || lm == 0)
        return 0;
    int hc = qty(req, "cpu", 1, &rc), hm = qty(req, "memory", 0, &rm);
    if (hc < 0 || hm < 0 || (hc && rc != lc) || (hm && rm != lm))
        return 0;
    *cpus = lc % 1000 == 0 ? lc / 1000 : 0;
    return 1;
}

void tg_pod_qos(const cJSON *spec, uint8_t *guaranteed, uint16_t *excl_cpus)
{
    int64_t sum = 0, sidecars = 0, initmax = 0, cpus;
    int any = 0;
    *guaranteed = 0;
    *excl_cpus = 0;
    if (!cJSON_IsObject(spec) || cJSON_GetObjectItemCaseSensitive(spec, "resources"))
        return;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "initContainers")) {
        if (!container(c, &cpus))
            return;
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(c, "restartPolicy");
        if (cJSON_IsString(rp) && rp->valuestring && !strcmp(rp->valuestring, "Always"))
            sidecars += cpus;
        else if (sidecars + cpus > initmax)
            initmax = sidecars + cpus;
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers")) {
        if (!container(c, &cpus))
            return;
        sum += cpus;
        any = 1;
    }
    if (!any)
        return;
    sum += sidecars;
    if (initmax > sum)
        sum = initmax;
    *guaranteed = 1;
    *excl_cpus = sum > UINT16_MAX ? UINT16_MAX : (uint16_t)sum;
}
