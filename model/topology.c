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
static const char *const memkind_names[TG_TOPO_MEM_NKINDS] = {
    "memory", "gpu", "hbm", "nvm", "cxl", "spm", "dram"};

const char *const tg_topo_label_keys[TG_TOPO_NLABELS] = {
    TG_LABEL_NUMA_NODES, TG_LABEL_MEMORY_NUMA_NODES, TG_LABEL_GPU_DOMAINS,
    TG_LABEL_GPUS_PER_DOMAIN};

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

const char *tg_topo_memkind_name(uint8_t kind)
{
    return kind < TG_TOPO_MEM_NKINDS ? memkind_names[kind] : "memory";
}

int tg_topo_memkind_parse(const char *s, uint8_t *out)
{
    for (uint8_t i = 0; i < TG_TOPO_MEM_NKINDS; i++)
        if (s && !strcmp(s, memkind_names[i])) {
            *out = i;
            return 0;
        }
    return TG_EINVAL;
}

int tg_topo_add_kpod(struct tg_topology *t, const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n >= TG_TOPO_POD_KEY || t->kpods_len + n + 1 > TG_TOPO_KPODS_BYTES)
        return TG_ERANGE;
    memcpy(t->kpods + t->kpods_len, key, n + 1);
    t->kpods_len += (uint32_t)n + 1;
    t->nkpods++;
    return 0;
}

/* Whether id names a NUMA node or a memory node already in t. */
static int id_taken(const struct tg_topology *t, int32_t id)
{
    if (tg_topo_numa_index(t, id) >= 0)
        return 1;
    for (uint32_t i = 0; i < t->nmem; i++)
        if (t->mem[i].id == id)
            return 1;
    return 0;
}

/* ---- encoder ------------------------------------------------------------ */

static int check_caps(const struct tg_topology *t)
{
    if (t->nnuma > TG_TOPO_MAX_NUMA || t->ndomains > TG_TOPO_MAX_DOMAINS ||
        t->nmem > TG_TOPO_MAX_MEMNODES || t->kpods_len > TG_TOPO_KPODS_BYTES)
        return TG_EINVAL;
    for (uint32_t i = 0; i < t->nnuma; i++)
        if ((t->numa[i].known & TG_TOPO_KCPUS) && t->numa[i].kcpus > t->numa[i].cpus)
            return TG_EINVAL;
    for (uint32_t i = 0; i < t->nmem; i++)
        if (t->mem[i].kind >= TG_TOPO_MEM_NKINDS ||
            (t->mem[i].numa >= 0 && tg_topo_numa_index(t, t->mem[i].numa) < 0))
            return TG_EINVAL;
    for (uint32_t i = 0; i < t->ndomains; i++) {
        const struct tg_topo_domain *d = &t->domains[i];
        if (d->nroots > TG_TOPO_MAX_ROOTS || d->nnics > TG_TOPO_MAX_NICS ||
            d->gpus > TG_TOPO_MAX_GPUS || d->rdma_gpus > d->gpus)
            return TG_EINVAL;
    }
    return 0;
}

static void encode_numa(const struct tg_topo_numa *n, struct tg_sb *b)
{
    tg_sb_printf(b, "{\"id\":%d,\"cpus\":%u,\"mem\":%llu", n->id, n->cpus,
                 (unsigned long long)n->mem);
    if (n->known & TG_TOPO_KCPUS)
        tg_sb_printf(b, ",\"kcpus\":%u", n->kcpus);
    if (n->known & TG_TOPO_KMEM)
        tg_sb_printf(b, ",\"kmem\":%llu", (unsigned long long)n->kmem);
    tg_sb_putc(b, '}');
}

/* The optional tail: "memnodes" and "kpods", each only when not empty. */
static void encode_tail(const struct tg_topology *t, struct tg_sb *b)
{
    if (t->nmem) {
        tg_sb_puts(b, ",\"memnodes\":[");
        for (uint32_t i = 0; i < t->nmem; i++) {
            const struct tg_topo_memnode *m = &t->mem[i];
            tg_sb_printf(b, "%s{\"id\":%d,\"mem\":%llu,\"kind\":\"%s\",\"numa\":%d,\"gpu\":",
                         i ? "," : "", m->id, (unsigned long long)m->mem,
                         tg_topo_memkind_name(m->kind), m->numa);
            tg_sb_json_str(b, m->gpu);
            if (m->known & TG_TOPO_KMEM)
                tg_sb_printf(b, ",\"kmem\":%llu", (unsigned long long)m->kmem);
            tg_sb_putc(b, '}');
        }
        tg_sb_putc(b, ']');
    }
    if (t->nkpods) {
        tg_sb_puts(b, ",\"kpods\":[");
        const char *k = t->kpods;
        for (uint32_t i = 0; i < t->nkpods && k < t->kpods + t->kpods_len; i++) {
            if (i)
                tg_sb_putc(b, ',');
            tg_sb_json_str(b, k);
            k += strlen(k) + 1;
        }
        tg_sb_putc(b, ']');
    }
}

static void encode(const struct tg_topology *t, struct tg_sb *b, int lists)
{
    tg_sb_printf(b, "{\"v\":%d,\"policy\":\"%s\",\"numa\":[", TG_TOPO_VERSION,
                 tg_topo_policy_name(t->policy));
    for (uint32_t i = 0; i < t->nnuma; i++) {
        if (i)
            tg_sb_putc(b, ',');
        encode_numa(&t->numa[i], b);
    }
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
    tg_sb_putc(b, ']');
    encode_tail(t, b);
    tg_sb_putc(b, '}');
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
        if (get_int(dc, e, "mem", 0, (double)TG_TOPO_MAX_BYTES, &v, "NUMA mem missing or out of range"))
            return TG_EPARSE;
        n->mem = (uint64_t)v;
        if (cJSON_GetObjectItemCaseSensitive(e, "kcpus")) {
            if (get_int(dc, e, "kcpus", 0, n->cpus, &v, "NUMA kcpus out of range (0..cpus)"))
                return TG_EPARSE;
            n->kcpus = (uint32_t)v;
            n->known |= TG_TOPO_KCPUS;
        }
        if (cJSON_GetObjectItemCaseSensitive(e, "kmem")) {
            if (get_int(dc, e, "kmem", 0, (double)TG_TOPO_MAX_BYTES, &v, "NUMA kmem out of range"))
                return TG_EPARSE;
            n->kmem = (uint64_t)v;
            n->known |= TG_TOPO_KMEM;
        }
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

static int dec_memnodes(struct dec *dc, const cJSON *arr, struct tg_topology *t)
{
    double v;
    if (!arr)
        return 0;                       /* optional */
    if (!cJSON_IsArray(arr))
        return fail(dc, "\"memnodes\" is not an array");
    if (cJSON_GetArraySize(arr) > TG_TOPO_MAX_MEMNODES)
        return fail(dc, "too many memory-only NUMA nodes");
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        struct tg_topo_memnode *m = &t->mem[t->nmem];
        if (!cJSON_IsObject(e))
            return fail(dc, "memory node entry is not an object");
        if (get_int(dc, e, "id", 0, 4095, &v, "memory node id missing or out of range"))
            return TG_EPARSE;
        m->id = (int32_t)v;
        if (id_taken(t, m->id))
            return fail(dc, "duplicate NUMA id");
        if (get_int(dc, e, "mem", 0, (double)TG_TOPO_MAX_BYTES, &v, "memory node mem missing or out of range"))
            return TG_EPARSE;
        m->mem = (uint64_t)v;
        if (get_int(dc, e, "numa", -1, 4095, &v, "memory node numa missing or out of range"))
            return TG_EPARSE;
        m->numa = (int32_t)v;
        if (m->numa >= 0 && tg_topo_numa_index(t, m->numa) < 0)
            return fail(dc, "memory node attached to an unlisted NUMA node");
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "kind");
        if (!cJSON_IsString(k) || tg_topo_memkind_parse(k->valuestring, &m->kind))
            return fail(dc, "memory node kind unknown or missing");
        if (get_name(dc, cJSON_GetObjectItemCaseSensitive(e, "gpu"), m->gpu, "bad memory node gpu"))
            return TG_EPARSE;
        if (cJSON_GetObjectItemCaseSensitive(e, "kmem")) {
            if (get_int(dc, e, "kmem", 0, (double)TG_TOPO_MAX_BYTES, &v, "memory node kmem out of range"))
                return TG_EPARSE;
            m->kmem = (uint64_t)v;
            m->known |= TG_TOPO_KMEM;
        }
        t->nmem++;
    }
    return 0;
}

static int dec_kpods(struct dec *dc, const cJSON *arr, struct tg_topology *t)
{
    if (!arr)
        return 0;                       /* optional */
    if (!cJSON_IsArray(arr))
        return fail(dc, "\"kpods\" is not an array");
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        if (!cJSON_IsString(e) || !e->valuestring || !strchr(e->valuestring, '/'))
            return fail(dc, "kpods entry is not a \"namespace/name\" string");
        if (tg_topo_add_kpod(t, e->valuestring))
            return fail(dc, "kpods too long");
    }
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
    if (dec_memnodes(dc, cJSON_GetObjectItemCaseSensitive(root, "memnodes"), t) ||
        dec_kpods(dc, cJSON_GetObjectItemCaseSensitive(root, "kpods"), t))
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

void tg_topo_labels(const struct tg_topology *t, char val[TG_TOPO_NLABELS][16])
{
    uint32_t ndom = 0, min = 0;
    for (uint32_t i = 0; i < t->ndomains; i++) {
        if (!t->domains[i].gpus)
            continue;
        if (!ndom || t->domains[i].gpus < min)
            min = t->domains[i].gpus;
        ndom++;
    }
    snprintf(val[0], 16, "%u", t->nnuma);
    snprintf(val[1], 16, "%u", t->nmem);
    snprintf(val[2], 16, "%u", ndom);
    snprintf(val[3], 16, "%u", min);
}

int tg_topo_patch_body(const struct tg_topology *t, const char *annot, struct tg_sb *b)
{
    char val[TG_TOPO_NLABELS][16];
    tg_topo_labels(t, val);
    tg_sb_puts(b, "{\"metadata\":{\"annotations\":{\"" "topogang.io/topology" "\":");
    tg_sb_json_str(b, annot);
    tg_sb_puts(b, "},\"labels\":{");
    for (int i = 0; i < TG_TOPO_NLABELS; i++)
        tg_sb_printf(b, "%s\"%s\":\"%s\"", i ? "," : "", tg_topo_label_keys[i], val[i]);
    tg_sb_puts(b, "}}}");
    return b->oom ? TG_ENOMEM : 0;
}

static int differs(const char *cur, const char *want)
{
    return !cur || strcmp(cur, want) != 0;
}

int tg_topo_needs_patch(const struct tg_topology *t, const char *cur_annot,
                        const char *const cur[TG_TOPO_NLABELS])
{
    char val[TG_TOPO_NLABELS][16];
    struct tg_sb want = {0};
    int r = 1;

    tg_topo_labels(t, val);
    for (int i = 0; i < TG_TOPO_NLABELS; i++)
        if (differs(cur[i], val[i]))
            return 1;
    if (tg_topo_encode(t, &want) == 0)
        r = differs(cur_annot, tg_sb_str(&want));
    tg_sb_free(&want);
    return r;
}
