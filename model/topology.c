/* The topology annotation: encoder, hardened decoder, selector labels, and
 * the Node merge patch the agent sends. See model/topology.h for the format.
 *
 * The decoder reads input written by any process that can patch a Node, so it
 * trusts nothing: sizes are capped before parsing, every field is type- and
 * range-checked, and a failure leaves the output zeroed. */
#include "model/topology.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"
#include "util/strbuf.h"

static const char *const policy_names[] = {"none", "single-numa-node", "restricted"};

int tg_topo_policy_parse(const char *s, uint8_t *out)
{
    for (uint8_t i = 0; i < sizeof policy_names / sizeof policy_names[0]; i++)
        if (s && !strcmp(s, policy_names[i])) {
            *out = i;
            return 0;
        }
    return TG_EINVAL;
}

const char *tg_topo_policy_name(uint8_t policy)
{
    return policy < sizeof policy_names / sizeof policy_names[0] ? policy_names[policy] : "none";
}

int tg_topo_numa_index(const struct tg_topology *t, int32_t id)
{
    for (uint32_t i = 0; i < t->nnuma; i++)
        if (t->numa[i].id == id)
            return (int)i;
    return -1;
}

/* ---- encoder ------------------------------------------------------------ */

static int check_caps(const struct tg_topology *t)
{
    if (t->nnuma > TG_TOPO_MAX_NUMA || t->ndomains > TG_TOPO_MAX_DOMAINS)
        return TG_EINVAL;
    for (uint32_t i = 0; i < t->ndomains; i++) {
        const struct tg_topo_domain *d = &t->domains[i];
        if (d->nroots > TG_TOPO_MAX_ROOTS || d->nnics > TG_TOPO_MAX_NICS ||
            d->gpus > TG_TOPO_MAX_GPUS || d->rdma_gpus > d->gpus)
            return TG_EINVAL;
    }
    return 0;
}

static void encode(const struct tg_topology *t, struct tg_sb *b, int lists)
{
    tg_sb_printf(b, "{\"v\":%d,\"policy\":\"%s\",\"numa\":[", TG_TOPO_VERSION,
                 tg_topo_policy_name(t->policy));
    for (uint32_t i = 0; i < t->nnuma; i++)
        tg_sb_printf(b, "%s{\"id\":%d,\"cpus\":%u,\"mem\":%llu}", i ? "," : "", t->numa[i].id,
                     t->numa[i].cpus, (unsigned long long)t->numa[i].mem);
    tg_sb_puts(b, "],\"domains\":[");
    for (uint32_t i = 0; i < t->ndomains; i++) {
        const struct tg_topo_domain *d = &t->domains[i];
        tg_sb_printf(b, "%s{\"id\":%u,\"numa\":%d,\"gpus\":%u,\"nvlink\":%d,\"roots\":[",
                     i ? "," : "", d->id, d->numa, d->gpus, d->nvlink);
        for (uint32_t r = 0; lists && r < d->nroots; r++) {
            if (r)
                tg_sb_putc(b, ',');
            tg_sb_json_str(b, d->roots[r]);
        }
        tg_sb_puts(b, "],\"nics\":[");
        for (uint32_t k = 0; lists && k < d->nnics; k++) {
            tg_sb_puts(b, k ? ",{\"name\":" : "{\"name\":");
            tg_sb_json_str(b, d->nics[k].name);
            tg_sb_printf(b, ",\"rdma\":%s,\"root\":", d->nics[k].rdma ? "true" : "false");
            tg_sb_json_str(b, d->nics[k].root);
            tg_sb_putc(b, '}');
        }
        tg_sb_printf(b, "],\"rdma_gpus\":%u}", d->rdma_gpus);
    }
    tg_sb_puts(b, "]}");
}

int tg_topo_encode(const struct tg_topology *t, struct tg_sb *b)
{
    int err = check_caps(t);
    if (err)
        return err;
    size_t start = b->len;
    encode(t, b, 1);
    if (!b->oom && b->len - start > TG_TOPO_MAX_JSON) {
        /* Too big for the decoder: publish the counts without the lists. */
        b->len = start;
        if (b->s)
            b->s[start] = 0;
        encode(t, b, 0);
    }
    return b->oom ? TG_ENOMEM : 0;
}

/* ---- decoder ------------------------------------------------------------ */

struct dec {
    const char *why;
};

static int fail(struct dec *dc, const char *why)
{
    if (!dc->why)
        dc->why = why;
    return TG_EPARSE;
}

/* An integer field in [lo, hi]; absent or wrong type or out of range fails. */
static int get_int(struct dec *dc, const cJSON *o, const char *key, double lo, double hi,
                   double *out, const char *why)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < lo || v->valuedouble > hi)
        return fail(dc, why);
    *out = v->valuedouble;
    return 0;
}

static int get_name(struct dec *dc, const cJSON *v, char out[TG_TOPO_NAME], const char *why)
{
    if (!cJSON_IsString(v) || !v->valuestring)
        return fail(dc, why);
    size_t n = strlen(v->valuestring);
    if (n >= TG_TOPO_NAME)
        return fail(dc, why);
    memcpy(out, v->valuestring, n + 1);
    return 0;
}

static int dec_numa(struct dec *dc, const cJSON *arr, struct tg_topology *t)
{
    double v;
    if (!cJSON_IsArray(arr))
        return fail(dc, "\"numa\" is not an array");
    if (cJSON_GetArraySize(arr) > TG_TOPO_MAX_NUMA)
        return fail(dc, "too many NUMA nodes");
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        struct tg_topo_numa *n = &t->numa[t->nnuma];
        if (!cJSON_IsObject(e))
            return fail(dc, "NUMA entry is not an object");
        if (get_int(dc, e, "id", 0, 4095, &v, "NUMA id missing or out of range"))
            return TG_EPARSE;
        n->id = (int32_t)v;
        if (get_int(dc, e, "cpus", 0, 1 << 20, &v, "NUMA cpus missing or out of range"))
            return TG_EPARSE;
        n->cpus = (uint32_t)v;
        if (get_int(dc, e, "mem", 0, 9007199254740992.0, &v, "NUMA mem missing or out of range"))
            return TG_EPARSE;
        n->mem = (uint64_t)v;
        if (tg_topo_numa_index(t, n->id) >= 0)
            return fail(dc, "duplicate NUMA id");
        t->nnuma++;
    }
    return 0;
}

static int dec_nics(struct dec *dc, const cJSON *arr, struct tg_topo_domain *d)
{
    if (!cJSON_IsArray(arr))
        return fail(dc, "domain \"nics\" is not an array");
    if (cJSON_GetArraySize(arr) > TG_TOPO_MAX_NICS)
        return fail(dc, "too many NICs in a domain");
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        struct tg_topo_nic *k = &d->nics[d->nnics];
        if (!cJSON_IsObject(e))
            return fail(dc, "NIC entry is not an object");
        if (get_name(dc, cJSON_GetObjectItemCaseSensitive(e, "name"), k->name, "bad NIC name") ||
            get_name(dc, cJSON_GetObjectItemCaseSensitive(e, "root"), k->root, "bad NIC root"))
            return TG_EPARSE;
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "rdma");
        if (!cJSON_IsBool(r))
            return fail(dc, "NIC rdma is not a boolean");
        k->rdma = cJSON_IsTrue(r) ? 1 : 0;
        d->nnics++;
    }
    return 0;
}

static int dec_domain(struct dec *dc, const cJSON *e, struct tg_topology *t)
{
    struct tg_topo_domain *d = &t->domains[t->ndomains];
    double v;
    if (!cJSON_IsObject(e))
        return fail(dc, "domain entry is not an object");
    if (get_int(dc, e, "id", 0, TG_TOPO_MAX_DOMAINS - 1, &v, "domain id missing or out of range"))
        return TG_EPARSE;
    d->id = (uint32_t)v;
    for (uint32_t i = 0; i < t->ndomains; i++)
        if (t->domains[i].id == d->id)
            return fail(dc, "duplicate domain id");
    if (get_int(dc, e, "numa", -1, 4095, &v, "domain numa missing or out of range"))
        return TG_EPARSE;
    d->numa = (int32_t)v;
    if (d->numa >= 0 && tg_topo_numa_index(t, d->numa) < 0)
        return fail(dc, "domain names an unlisted NUMA node");
    if (get_int(dc, e, "gpus", 0, TG_TOPO_MAX_GPUS, &v, "domain gpus missing or out of range"))
        return TG_EPARSE;
    d->gpus = (uint32_t)v;
    if (get_int(dc, e, "nvlink", -1, 4095, &v, "domain nvlink missing or out of range"))
        return TG_EPARSE;
    d->nvlink = (int32_t)v;
    if (get_int(dc, e, "rdma_gpus", 0, d->gpus, &v, "domain rdma_gpus missing or out of range"))
        return TG_EPARSE;
    d->rdma_gpus = (uint32_t)v;
    const cJSON *roots = cJSON_GetObjectItemCaseSensitive(e, "roots"), *r;
    if (!cJSON_IsArray(roots))
        return fail(dc, "domain \"roots\" is not an array");
    if (cJSON_GetArraySize(roots) > TG_TOPO_MAX_ROOTS)
        return fail(dc, "too many PCIe roots in a domain");
    cJSON_ArrayForEach(r, roots) {
        if (get_name(dc, r, d->roots[d->nroots], "bad PCIe root"))
            return TG_EPARSE;
        d->nroots++;
    }
    if (dec_nics(dc, cJSON_GetObjectItemCaseSensitive(e, "nics"), d))
        return TG_EPARSE;
    t->ndomains++;
    return 0;
}

static int dec_root(struct dec *dc, const cJSON *root, struct tg_topology *t)
{
    double v;
    if (!cJSON_IsObject(root))
        return fail(dc, "not a JSON object");
    if (get_int(dc, root, "v", TG_TOPO_VERSION, TG_TOPO_VERSION, &v, "unsupported or missing version"))
        return TG_EPARSE;
    t->version = (uint32_t)v;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "policy");
    if (!cJSON_IsString(p) || tg_topo_policy_parse(p->valuestring, &t->policy))
        return fail(dc, "unknown or missing policy");
    if (dec_numa(dc, cJSON_GetObjectItemCaseSensitive(root, "numa"), t))
        return TG_EPARSE;
    const cJSON *doms = cJSON_GetObjectItemCaseSensitive(root, "domains"), *e;
    if (!cJSON_IsArray(doms))
        return fail(dc, "\"domains\" is not an array");
    if (cJSON_GetArraySize(doms) > TG_TOPO_MAX_DOMAINS)
        return fail(dc, "too many GPU domains");
    cJSON_ArrayForEach(e, doms)
        if (dec_domain(dc, e, t))
            return TG_EPARSE;
    return 0;
}

int tg_topo_decode(const char *json, size_t n, struct tg_topology *t, const char **why)
{
    struct dec dc = {0};
    cJSON *root = NULL;
    int err;

    memset(t, 0, sizeof *t);
    if (!json || n == 0) {
        err = fail(&dc, "empty annotation");
        goto fail;
    }
    if (n > TG_TOPO_MAX_JSON) {
        err = TG_ERANGE;
        dc.why = "annotation larger than 64 KiB";
        goto fail;
    }
    root = cJSON_ParseWithLength(json, n);
    if (!root) {
        err = fail(&dc, "invalid or truncated JSON");
        goto fail;
    }
    err = dec_root(&dc, root, t);
    if (err)
        goto fail;
    cJSON_Delete(root);
    return 0;
fail:
    cJSON_Delete(root);
    memset(t, 0, sizeof *t);
    if (why)
        *why = dc.why ? dc.why : tg_strerror(err);
    return err;
}

/* ---- labels and patch --------------------------------------------------- */

void tg_topo_labels(const struct tg_topology *t, char numa[16], char domains[16],
                    char per_domain[16])
{
    uint32_t ndom = 0, min = 0;
    for (uint32_t i = 0; i < t->ndomains; i++) {
        if (!t->domains[i].gpus)
            continue;
        if (!ndom || t->domains[i].gpus < min)
            min = t->domains[i].gpus;
        ndom++;
    }
    snprintf(numa, 16, "%u", t->nnuma);
    snprintf(domains, 16, "%u", ndom);
    snprintf(per_domain, 16, "%u", min);
}

int tg_topo_patch_body(const struct tg_topology *t, const char *annot, struct tg_sb *b)
{
    char numa[16], doms[16], per[16];
    tg_topo_labels(t, numa, doms, per);
    tg_sb_puts(b, "{\"metadata\":{\"annotations\":{\"" "topogang.io/topology" "\":");
    tg_sb_json_str(b, annot);
    tg_sb_printf(b, "},\"labels\":{\"%s\":\"%s\",\"%s\":\"%s\",\"%s\":\"%s\"}}}",
                 TG_LABEL_NUMA_NODES, numa, TG_LABEL_GPU_DOMAINS, doms,
                 TG_LABEL_GPUS_PER_DOMAIN, per);
    return b->oom ? TG_ENOMEM : 0;
}

static int differs(const char *cur, const char *want)
{
    return !cur || strcmp(cur, want) != 0;
}

int tg_topo_needs_patch(const struct tg_topology *t, const char *cur_annot,
                        const char *cur_numa, const char *cur_domains,
                        const char *cur_per_domain)
{
    char numa[16], doms[16], per[16];
    struct tg_sb want = {0};
    int r = 1;

    tg_topo_labels(t, numa, doms, per);
    if (differs(cur_numa, numa) || differs(cur_domains, doms) || differs(cur_per_domain, per))
        return 1;
    if (tg_topo_encode(t, &want) == 0)
        r = differs(cur_annot, tg_sb_str(&want));
    tg_sb_free(&want);
    return r;
}
