/* Tenant Queues of the three APIs decoded into one shape, and which queue a
 * gang belongs to; see queues.h. Like workload.c, never trusts a type or a
 * count, and a problem in the spec keeps the queue (with `problem` set: the
 * first one, "field: why") so that the scheduler can tell its owner while the
 * rest keeps working. */
#include "model/queues.h"
#include "model/decoding.h"
#include "model/quantity.h"
#include "util/err.h"
#include "util/intern.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct tg_queue_apiinfo tg_queue_apis[TG_QAPI_N] = {
    [TG_QAPI_TOPOGANG] = {"topogang.io", "v1alpha1", "topogang.io/v1alpha1", "topogang"},
    [TG_QAPI_KAI] = {"scheduling.run.ai", "v2", "scheduling.run.ai/v2", "KAI"},
    [TG_QAPI_VOLCANO] = {"scheduling.volcano.sh", "v1beta1", "scheduling.volcano.sh/v1beta1",
                         "Volcano"},
};

const char *const tg_queue_src_name[] = {"podgroup", "pod", "namespace", "default"};

int tg_queue_api_of(const char *av)
{
    for (int i = 0; av && i < TG_QAPI_N; i++) {
        size_t n = strlen(tg_queue_apis[i].group);
        if (!strncmp(av, tg_queue_apis[i].group, n) && av[n] == '/')
            return i;
    }
    return -1;
}

/* ---- a decoding pass ------------------------------------------------------------ */

struct qdec {
    struct tg__dec c;                   /* the object, its first problem (decoding.h) */
    struct tg_queue_obj *q;
};

/* A map field: the map, NULL when absent or null, NULL with a problem when
 * of another type. */
static const cJSON *want_map(struct qdec *x, const cJSON *o, const char *k, const char *field)
{
    const cJSON *j = tg__get(o, k);
    if (!j || cJSON_IsNull(j))
        return NULL;
    if (!cJSON_IsObject(j)) {
        tg__problem(&x->c, j, field, "must be a map");
        return NULL;
    }
    return j;
}

static const char *want_str(struct qdec *x, const cJSON *o, const char *k, const char *field)
{
    const cJSON *j = tg__get(o, k);
    if (!j || cJSON_IsNull(j))
        return NULL;
    if (!cJSON_IsString(j)) {
        tg__problem(&x->c, j, field, "must be a string");
        return NULL;
    }
    return j->valuestring;
}

/* A number field within [lo, hi] (whole when `whole`): 1 given, 0 absent or
 * null, -1 bad (a problem). */
static int want_num(struct qdec *x, const cJSON *o, const char *k, const char *field, double lo,
                    double hi, int whole, double *out)
{
    const cJSON *j = tg__get(o, k);
    if (!j || cJSON_IsNull(j))
        return 0;
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) ||
        (whole && j->valuedouble != floor(j->valuedouble))) {
        tg__problem(&x->c, j, field, whole ? "must be a whole number" : "must be a number");
        return -1;
    }
    if (!(j->valuedouble >= lo && j->valuedouble <= hi)) {
        tg__problem(&x->c, j, field, "must be %g..%g, not %g", lo, hi, j->valuedouble);
        return -1;
    }
    *out = j->valuedouble;
    return 1;
}

/* The resource `name` of the queue being decoded, added (all unset: quota
 * 0, unlimited, weight 1) when new; NULL when out of memory. */
static struct tg_queue_res *res_of(struct tg_queue_obj *q, uint32_t name)
{
    for (uint32_t i = 0; i < q->nres; i++)
        if (q->res[i].name == name)
            return &q->res[i];
    struct tg_queue_res *r = realloc(q->res, (q->nres + 1u) * sizeof *r);
    if (!r)
        return NULL;
    q->res = r;
    r[q->nres] = (struct tg_queue_res){.name = name, .limit = TG_QUEUE_UNLIMITED, .weight = 1};
    return &r[q->nres++];
}

static int res_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct tg_queue_res *)a)->name, y = ((const struct tg_queue_res *)b)->name;
    return x < y ? -1 : x > y;
}

/* A Kubernetes quantity (string, or a number) in the model's units for the
 * resource `name`: cpu in millicores, every other resource in units (bytes
 * for memory), fractions kept. 0 and *out, or -1 (a problem reported). */
static int quantity(struct qdec *x, const cJSON *j, const char *name, const char *field, double *out)
{
    int cpu = !strcmp(name, "cpu");
    if (cJSON_IsNumber(j)) {
        if (!isfinite(j->valuedouble) || j->valuedouble < 0 || j->valuedouble > 9.2e15) {
            tg__problem(&x->c, j, field, "must be a quantity >= 0, not %g", j->valuedouble);
            return -1;
        }
        *out = cpu ? ceil(j->valuedouble * 1000) : j->valuedouble;
        return 0;
    }
    if (!cJSON_IsString(j)) {
        tg__problem(&x->c, j, field, "must be a quantity (\"8\", \"500m\", \"64Gi\")");
        return -1;
    }
    int64_t milli;
    int rc = tg_quantity_parse(j->valuestring, strlen(j->valuestring), 1, &milli);
    if (rc) {
        tg__problem(&x->c, j, field, "\"%.40s\" is %s", j->valuestring,
                rc == TG_EINVAL ? "negative: must be >= 0"
                : rc == TG_ERANGE ? "too large" : "not a quantity (\"8\", \"500m\", \"64Gi\")");
        return -1;
    }
    *out = cpu ? (double)milli : (double)milli / 1000.0;
    return 0;
}

static int valid_res_name(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || strchr("-._/", s[i])))
            return 0;
    return 1;
}

/* A resource of the queue by its Kubernetes name, checked: NULL with a
 * problem when the name is not one. */
static struct tg_queue_res *named_res(struct qdec *x, const cJSON *at, const char *name,
                                      const char *field, int *nomem)
{
    if (!valid_res_name(name)) {
        tg__problem(&x->c, at, field, "\"%.60s\" is not a resource name", name);
        return NULL;
    }
    uint32_t id = tg_intern(name);
    struct tg_queue_res *r = id == TG_STR_NONE ? NULL : res_of(x->q, id);
    if (!r)
        *nomem = 1;
    return r;
}

/* ---- KAI: scheduling.run.ai/v2 --------------------------------------------------- */

static const char *const kai_spec[] = {"displayName", "parentQueue", "preemptMinRuntime",
                                       "priority", "reclaimMinRuntime", "resources", NULL};
static const char *const kai_res[] = {"cpu", "gpu", "memory", NULL};
static const char *const kai_one[] = {"quota", "limit", "overQuotaWeight", NULL};

/* KAI's units into the model's: GPUs stay GPUs, millicores stay
 * millicores, megabytes become bytes; -1 stays -1 (unlimited). */
static double kai_unit(double v, int memory)
{
    return v < 0 || !memory ? v : v * 1e6;
}

static int decode_kai_res(struct qdec *x, const cJSON *rs, const char *kname, const char *name)
{
    char path[80], field[120];
    snprintf(path, sizeof path, "spec.resources.%s", kname);
    const cJSON *one = want_map(x, rs, kname, path);
    if (!one)
        return 0;
    tg__known_fields(&x->c, one, path, kai_one);
    struct tg_queue_res *r = res_of(x->q, tg_intern(name));
    if (!r)
        return TG_ENOMEM;
    int mem = !strcmp(kname, "memory");
    double quota = 0, limit = -1, v;
    snprintf(field, sizeof field, "%s.quota", path);
    if (want_num(x, one, "quota", field, -1e15, 1e15, 0, &v) > 0) {
        if (v < 0 && v != -1)
            tg__problem(&x->c, tg__get(one, "quota"), field, "must be >= 0 or -1, not %g", v);
        else
            r->quota = kai_unit(quota = v, mem);
    }
    snprintf(field, sizeof field, "%s.limit", path);
    if (want_num(x, one, "limit", field, -1e15, 1e15, 0, &v) > 0) {
        if (v < 0 && v != -1)
            tg__problem(&x->c, tg__get(one, "limit"), field, "must be >= 0 or -1, not %g", v);
        else
            r->limit = kai_unit(limit = v, mem);
    }
    snprintf(field, sizeof field, "%s.overQuotaWeight", path);
    if (want_num(x, one, "overQuotaWeight", field, 0, 1e9, 0, &v) > 0)
        r->weight = v;
    if (limit >= 0 && (quota > limit || quota < 0)) {
        snprintf(field, sizeof field, "%s.limit", path);
        tg__problem(&x->c, tg__get(one, "limit"), field, "%g is below the quota %g", limit, quota);
        r->limit = r->quota;
    }
    return 0;
}

static int decode_kai(struct qdec *x, const cJSON *spec)
{
    tg__known_fields(&x->c, spec, "spec", kai_spec);
    const cJSON *rs = want_map(x, spec, "resources", "spec.resources");
    tg__known_fields(&x->c, rs, "spec.resources", kai_res);
    static const char *const names[][2] = {{"gpu", "nvidia.com/gpu"}, {"cpu", "cpu"},
                                           {"memory", "memory"}};
    for (int i = 0; i < 3; i++)
        if (decode_kai_res(x, rs, names[i][0], names[i][1]))
            return TG_ENOMEM;
    return 0;
}

/* ---- Volcano: scheduling.volcano.sh/v1beta1 ---------------------------------------- */

static const char *const volcano_spec[] = {"affinity", "capability", "dequeueStrategy", "deserved",
                                           "extendClusters", "guarantee", "parent", "priority",
                                           "reclaimable", "type", "weight", NULL};

enum { VQ_DESERVED, VQ_CAPABILITY, VQ_GUARANTEE };

/* One of Volcano's resource lists into quota, limit or guarantee. */
static int volcano_list(struct qdec *x, const cJSON *list, const char *path, int which)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        char field[400];
        snprintf(field, sizeof field, "%s.%s", path, e->string);
        int nomem = 0;
        struct tg_queue_res *r = named_res(x, e, e->string, field, &nomem);
        double v;
        if (nomem)
            return TG_ENOMEM;
        if (!r || quantity(x, e, e->string, field, &v))
            continue;
        if (which == VQ_DESERVED)
            r->quota = v;
        else if (which == VQ_CAPABILITY)
            r->limit = v;
        else
            r->guarantee = v;
    }
    return 0;
}

static int decode_volcano(struct qdec *x, const cJSON *spec)
{
    tg__known_fields(&x->c, spec, "spec", volcano_spec);
    const cJSON *dv = want_map(x, spec, "deserved", "spec.deserved");
    const cJSON *cap = want_map(x, spec, "capability", "spec.capability");
    const cJSON *g = want_map(x, spec, "guarantee", "spec.guarantee");
    const cJSON *gres = want_map(x, g, "resource", "spec.guarantee.resource");
    if (volcano_list(x, dv, "spec.deserved", VQ_DESERVED) ||
        volcano_list(x, cap, "spec.capability", VQ_CAPABILITY) ||
        volcano_list(x, gres, "spec.guarantee.resource", VQ_GUARANTEE))
        return TG_ENOMEM;
    double w = 1;
    want_num(x, spec, "weight", "spec.weight", 1, 65535, 1, &w);
    for (uint32_t i = 0; i < x->q->nres; i++) {
        struct tg_queue_res *r = &x->q->res[i];
        r->weight = w;
        if (r->limit >= 0 && r->quota > r->limit) {
            tg__problem(&x->c, tg__get(cap, tg_str(r->name)), "spec.capability", "%s %g is below "
                    "spec.deserved's %g", tg_str(r->name), r->limit, r->quota);
            r->limit = r->quota;
        }
    }
    return 0;
}

/* ---- topogang.io/v1alpha1 ----------------------------------------------------------- */

static const char *const tg_spec[] = {"parent", "priority", "resources", NULL};
static const char *const tg_one[] = {"quota", "limit", "overQuotaWeight", NULL};

static int decode_ours_res(struct qdec *x, const cJSON *e)
{
    char path[300], field[340];
    snprintf(path, sizeof path, "spec.resources.%s", e->string);
    int nomem = 0;
    struct tg_queue_res *r = named_res(x, e, e->string, path, &nomem);
    if (!r)
        return nomem ? TG_ENOMEM : 0;
    if (!cJSON_IsObject(e)) {
        tg__problem(&x->c, e, path, "must be a map of quota, limit, overQuotaWeight");
        return 0;
    }
    tg__known_fields(&x->c, e, path, tg_one);
    const cJSON *j;
    double v;
    snprintf(field, sizeof field, "%s.quota", path);
    if ((j = tg__get(e, "quota")) && !cJSON_IsNull(j) && !quantity(x, j, e->string, field, &v))
        r->quota = v;
    snprintf(field, sizeof field, "%s.limit", path);
    if ((j = tg__get(e, "limit")) && !cJSON_IsNull(j) && !quantity(x, j, e->string, field, &v))
        r->limit = v;
    snprintf(field, sizeof field, "%s.overQuotaWeight", path);
    if (want_num(x, e, "overQuotaWeight", field, 0, 1e9, 0, &v) > 0)
        r->weight = v;
    if (r->limit >= 0 && r->quota > r->limit) {
        snprintf(field, sizeof field, "%s.limit", path);
        tg__problem(&x->c, tg__get(e, "limit"), field, "is below the quota");
        r->limit = r->quota;
    }
    return 0;
}

static int decode_ours(struct qdec *x, const cJSON *spec)
{
    tg__known_fields(&x->c, spec, "spec", tg_spec);
    const cJSON *e, *rs = want_map(x, spec, "resources", "spec.resources");
    cJSON_ArrayForEach(e, rs)
        if (decode_ours_res(x, e))
            return TG_ENOMEM;
    return 0;
}

/* ---- the decoder ------------------------------------------------------------------- */

/* The parts every API shares: spec.priority (a whole number, default 100 as
 * KAI's) and the parent's name (KAI parentQueue, else parent). */
static int decode_common(struct qdec *x, const cJSON *spec, int api)
{
    double pr = 100;
    want_num(x, spec, "priority", "spec.priority", -2147483648.0, 2147483647.0, 1, &pr);
    x->q->priority = (int32_t)pr;
    const char *pf = api == TG_QAPI_KAI ? "parentQueue" : "parent";
    char field[40];
    snprintf(field, sizeof field, "spec.%s", pf);
    const char *parent = want_str(x, spec, pf, field);
    if (parent && *parent && !strcmp(parent, tg_str(x->q->name))) {
        tg__problem(&x->c, tg__get(spec, pf), field, "names the queue itself");
        parent = NULL;
    }
    if (parent && *parent && (x->q->parent = tg_intern(parent)) == TG_STR_NONE)
        return TG_ENOMEM;
    return 0;
}

int tg_queue_obj_decode(const cJSON *obj, struct tg_diag *d, struct tg_queue_obj **out)
{
    *out = NULL;
    const char *av = tg__str(obj, "apiVersion"), *name = tg__str(tg__get(obj, "metadata"), "name");
    int api = tg_queue_api_of(av);
    if (api < 0) {
        char what[400];
        snprintf(what, sizeof what, "Queue %.253s", name ? name : "(unnamed)");
        tg_diag_error(d, obj, what, "apiVersion", "\"%.100s\" is none of topogang.io, "
                      "scheduling.run.ai, scheduling.volcano.sh", av ? av : "");
        return TG_EPARSE;
    }
    return tg_queue_obj_decode_api(obj, api, d, out);
}

int tg_queue_obj_decode_api(const cJSON *obj, int api, struct tg_diag *d, struct tg_queue_obj **out)
{
    *out = NULL;
    if (api < 0 || api >= TG_QAPI_N)
        return TG_EINVAL;
    struct qdec x = {.c = {.d = d}};
    const cJSON *md = tg__get(obj, "metadata");
    const char *name = tg__str(md, "name");
    snprintf(x.c.what, sizeof x.c.what, "Queue %.253s (%s)", name ? name : "(unnamed)",
             tg_queue_apis[api].api_version);
    if (!name || !*name || strlen(name) > 253) {
        tg_diag_error(d, md ? md : obj, x.c.what, "metadata.name", "is required");
        return TG_EPARSE;
    }
    int rc = TG_ENOMEM;
    struct tg_queue_obj *q = x.q = calloc(1, sizeof *q);
    if (!q)
        return rc;
    q->api = (uint8_t)api;
    q->name = tg_intern(name);
    const char *uid = tg__str(md, "uid"), *rv = tg__str(md, "resourceVersion"), *ts;
    if (q->name == TG_STR_NONE || (uid && !(q->uid = strdup(uid))) || (rv && !(q->rv = strdup(rv))))
        goto fail;
    if ((ts = tg__str(md, "creationTimestamp")) && tg_parse_time(ts, &q->created_ms))
        q->created_ms = 0;
    const cJSON *spec = tg__get(obj, "spec");
    if (spec && !cJSON_IsNull(spec) && !cJSON_IsObject(spec)) {
        tg__problem(&x.c, spec, "spec", "must be a map");
        spec = NULL;
    }
    if (decode_common(&x, spec, api))
        goto fail;
    if ((api == TG_QAPI_KAI ? decode_kai(&x, spec)
         : api == TG_QAPI_VOLCANO ? decode_volcano(&x, spec) : decode_ours(&x, spec)))
        goto fail;
    if (q->nres > 1)
        qsort(q->res, q->nres, sizeof *q->res, res_cmp);
    if (x.c.problem[0] && !(q->problem = strdup(x.c.problem)))
        goto fail;
    *out = q;
    return 0;
fail:
    tg_queue_obj_free(&q);
    return rc;
}

void tg_queue_obj_free(struct tg_queue_obj **pq)
{
    struct tg_queue_obj *q = *pq;
    if (!q)
        return;
    free(q->res);
    free(q->problem);
    free(q->uid);
    free(q->rv);
    free(q);
    *pq = NULL;
}

const struct tg_queue_res *tg_queue_obj_res(const struct tg_queue_obj *q, uint32_t name)
{
    uint32_t lo = 0, hi = q ? q->nres : 0;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (q->res[mid].name == name)
            return &q->res[mid];
        if (q->res[mid].name < name)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- membership ------------------------------------------------------------------- */

static uint32_t named(const cJSON *map, const char *key)
{
    const char *v = tg__str(map, key);
    if (!v || !*v || strlen(v) > 253)
        return 0;
    return tg_intern(v);
}

uint32_t tg_queue_meta(const cJSON *md, int of)
{
    const cJSON *labels = tg__get(md, "labels"), *ann = tg__get(md, "annotations");
    uint32_t q = named(labels, TG_LABEL_QUEUE);
    if (of == TG_QOF_NAMESPACE)
        return q ? q : named(ann, TG_LABEL_QUEUE);
    if (!q)
        q = named(labels, TG_LABEL_KAI_QUEUE);
    return q ? q : named(ann, TG_ANN_VOLCANO_QUEUE);
}

struct tg_queue_pick tg_queue_resolve(const struct tg_podgroup *pg, const struct tg_pod *const *pods,
                                      size_t n, const struct tg_namespace *ns, uint32_t dflt)
{
    struct tg_queue_pick k = {.queue = dflt, .src = TG_QSRC_DEFAULT};
    if (pg && pg->queue) {
        k.queue = pg->queue;
        k.src = TG_QSRC_PODGROUP;
        return k;
    }
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t q = pods[i] ? pods[i]->queue : 0;
        if (!q)
            continue;
        if (!found) {
            k.queue = q, k.src = TG_QSRC_POD, found = 1;
        } else if (q != k.queue && !k.conflict) {
            k.conflict = q;
        }
    }
    if (!found && ns && ns->queue) {
        k.queue = ns->queue;
        k.src = TG_QSRC_NAMESPACE;
    }
    return k;
}

int tg_queue_obj_same_spec(const struct tg_queue_obj *a, const struct tg_queue_obj *b)
{
    if (a->name != b->name || a->parent != b->parent || a->api != b->api ||
        a->priority != b->priority || a->nres != b->nres || a->created_ms != b->created_ms ||
        strcmp(a->problem ? a->problem : "", b->problem ? b->problem : ""))
        return 0;
    for (uint32_t i = 0; i < a->nres; i++) {
        const struct tg_queue_res *x = &a->res[i], *y = &b->res[i];
        if (x->name != y->name || x->quota != y->quota || x->limit != y->limit ||
            x->weight != y->weight || x->guarantee != y->guarantee)
            return 0;
    }
    return 1;
}
