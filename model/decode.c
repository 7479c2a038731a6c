/* Decoding Node, Pod and PodGroup objects from cJSON into compact structs.
 * Shared by the informer (API server JSON) and `simulate` (YAML via
 * util/yamljson.c). Every problem is reported with the object and the field;
 * a decoder never trusts a type or a count. See objects.h. */
#include "model/decoding.h"
#include "model/objects.h"
#include "model/qos.h"
#include "model/quantity.h"
#include "model/queues.h"
#include "model/workload.h"
#include "util/err.h"
#include "util/hmap.h"
#include "util/intern.h"
#include "util/strbuf.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_LIST = 4096, MAX_RQ = 64 };

/* ---- diagnostics ------------------------------------------------------- */

static void diag_v(struct tg_diag *d, int is_error, const cJSON *at, const char *what,
                   const char *field, const char *fmt, va_list ap)
{
    if (!d)
        return;
    if (is_error)
        d->nerrors++;
    else
        d->nwarnings++;
    if (!d->report)
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    d->report(d->ud, is_error, at, what, field, msg);
}

void tg_diag_error(struct tg_diag *d, const cJSON *at, const char *what, const char *field,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(d, 1, at, what, field, fmt, ap);
    va_end(ap);
}

void tg_diag_warn(struct tg_diag *d, const cJSON *at, const char *what, const char *field,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(d, 0, at, what, field, fmt, ap);
    va_end(ap);
}

/* A decoding pass over one object: names it in messages. */
struct dec {
    struct tg_diag *d;
    /* the object diagnostics name ("Pod ns/name"), made only when one is
     * given (decode_meta keeps its parts: most objects have none) */
    const char *kind, *ns, *name;
    int named;              /* 0: nothing yet, 1: kind only, 2: kind and name, 3: unnamed */
    char what[320];
    int bad;
};

static const char *what_of(struct dec *x)
{
    if (x->what[0] || !x->named)
        return x->what;
    if (x->named == 1)
        snprintf(x->what, sizeof x->what, "%s", x->kind);
    else if (x->named == 2)
        snprintf(x->what, sizeof x->what, "%s %s%s%s", x->kind, x->ns ? x->ns : "",
                 x->ns ? "/" : "", x->name);
    else
        snprintf(x->what, sizeof x->what, "%s (unnamed)", x->kind);
    return x->what;
}

static const char *type_name(const cJSON *j)
{
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsArray(j)) return "a list";
    if (cJSON_IsObject(j)) return "a map";
    return "unknown";
}

static void err(struct dec *x, const cJSON *at, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void err(struct dec *x, const cJSON *at, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(x->d, 1, at, what_of(x), field, fmt, ap);
    va_end(ap);
    x->bad = 1;
}

static void warn(struct dec *x, const cJSON *at, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void warn(struct dec *x, const cJSON *at, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(x->d, 0, at, what_of(x), field, fmt, ap);
    va_end(ap);
}

/* Child of obj by key when obj is a map, else NULL. */
static const cJSON *get(const cJSON *obj, const char *key)
{
    return tg__get(obj, key);
}

/* Optional typed children: absent or null gives NULL; a wrong type is an error. */
static const cJSON *want(struct dec *x, const cJSON *obj, const char *key, const char *field,
                         int (*is)(const cJSON *), const char *tname)
{
    const cJSON *j = get(obj, key);
    if (!j || cJSON_IsNull(j))
        return NULL;
    if (!is(j)) {
        err(x, j, field, "must be %s, not %s", tname, type_name(j));
        return NULL;
    }
    return j;
}

static const cJSON *want_map(struct dec *x, const cJSON *o, const char *k, const char *f)
{
    return want(x, o, k, f, cJSON_IsObject, "a map");
}

static const cJSON *want_list(struct dec *x, const cJSON *o, const char *k, const char *f)
{
    const cJSON *j = want(x, o, k, f, cJSON_IsArray, "a list");
    if (j && cJSON_GetArraySize(j) > MAX_LIST) {
        err(x, j, f, "has %d items, more than %d", cJSON_GetArraySize(j), MAX_LIST);
        return NULL;
    }
    return j;
}

static const char *want_str(struct dec *x, const cJSON *o, const char *k, const char *f)
{
    const cJSON *j = want(x, o, k, f, cJSON_IsString, "a string");
    return j ? j->valuestring : NULL;
}

/* Integer field: a JSON number that is whole, within [lo, hi]. */
static int want_int(struct dec *x, const cJSON *o, const char *k, const char *f, int64_t lo,
                    int64_t hi, int64_t *out)
{
    const cJSON *j = want(x, o, k, f, cJSON_IsNumber, "a number");
    if (!j)
        return 0;
    double v = j->valuedouble;
    if (!(v >= (double)lo && v <= (double)hi) || v != (double)(int64_t)v) {
        err(x, j, f, "must be a whole number from %lld to %lld, not %s", (long long)lo,
            (long long)hi, j->valuestring ? j->valuestring : "that");
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

static int want_bool(struct dec *x, const cJSON *o, const char *k, const char *f)
{
    const cJSON *j = want(x, o, k, f, cJSON_IsBool, "a boolean");
    return j && cJSON_IsTrue(j);
}

static void *dup_mem(const void *p, size_t n);

/* ---- time -------------------------------------------------------------- */

int tg_parse_time(const char *s, int64_t *ms)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return TG_EPARSE;
    int64_t frac = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (digits++ < 3)
                frac = frac * 10 + (*p - '0');
        while (digits > 0 && digits < 3)
            frac *= 10, digits++;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        /* exactly "hh:mm": a shorter offset must not move p past the end */
        const char *o = p + 1;
        if (!isdigit((unsigned char)o[0]) || !isdigit((unsigned char)o[1]) || o[2] != ':' ||
            !isdigit((unsigned char)o[3]) || !isdigit((unsigned char)o[4]))
            return TG_EPARSE;
        int hh = (o[0] - '0') * 10 + (o[1] - '0'), mm = (o[3] - '0') * 10 + (o[4] - '0');
        off = (hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return TG_EPARSE;
    }
    if (*p)
        return TG_EPARSE;
    *ms = ((int64_t)timegm(&tm) - off) * 1000 + frac;
    return 0;
}

/* ---- metadata ---------------------------------------------------------- */

struct meta {
    const char *name, *ns, *uid, *rv;
    const cJSON *labels, *annotations;
    int64_t created_ms;
    int deleting;
};

static int decode_meta(struct dec *x, const cJSON *obj, const char *kind, int namespaced,
                       struct meta *m)
{
    memset(m, 0, sizeof *m);
    x->what[0] = 0;
    x->kind = kind;
    x->named = 0;
    if (!cJSON_IsObject(obj)) {
        x->named = 1;
        err(x, obj, "", "object must be a map, not %s", type_name(obj));
        return -1;
    }
    const cJSON *md = want_map(x, obj, "metadata", "metadata");
    m->name = want_str(x, md, "name", "metadata.name");
    m->ns = namespaced ? want_str(x, md, "namespace", "metadata.namespace") : NULL;
    if (namespaced && (!m->ns || !*m->ns))
        m->ns = "default";
    x->ns = namespaced ? m->ns : NULL;
    x->name = m->name;
    x->named = m->name ? 2 : 3;
    if (!m->name || !*m->name) {
        if (!x->bad)
            err(x, md ? md : obj, "metadata.name", "is required");
        return -1;
    }
    if (strlen(m->name) > 253)
        err(x, md, "metadata.name", "is longer than 253 characters");
    m->uid = want_str(x, md, "uid", "metadata.uid");
    m->rv = want_str(x, md, "resourceVersion", "metadata.resourceVersion");
    m->labels = want_map(x, md, "labels", "metadata.labels");
    m->annotations = want_map(x, md, "annotations", "metadata.annotations");
    const char *ts = want_str(x, md, "creationTimestamp", "metadata.creationTimestamp");
    if (ts && tg_parse_time(ts, &m->created_ms))
        warn(x, get(md, "creationTimestamp"), "metadata.creationTimestamp",
             "is not an RFC 3339 time: \"%s\" (ignored)", ts);
    m->deleting = want_str(x, md, "deletionTimestamp", "metadata.deletionTimestamp") != NULL;
    return x->bad ? -1 : 0;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static char *make_key(const char *ns, const char *name, uint32_t *name_off)
{
    size_t a = strlen(ns), b = strlen(name);
    char *k = malloc(a + b + 2);
    if (!k)
        return NULL;
    memcpy(k, ns, a);
    k[a] = '/';
    memcpy(k + a + 1, name, b + 1);
    if (name_off)
        *name_off = (uint32_t)(a + 1);
    return k;
}

/* A map of string -> string into interned label pairs sorted by key. ref:
 * each key and value holds a counted reference (a pod's: tg_labels_unref
 * gives them back), else they are pinned. */
static int decode_labels(struct dec *x, const cJSON *map, const char *field, struct tg_label **out,
                         uint16_t *nout, int ref)
{
    *out = NULL;
    *nout = 0;
    if (!map)
        return 0;
    int n = cJSON_GetArraySize(map);
    if (n > MAX_LIST) {
        err(x, map, field, "has %d entries, more than %d", n, MAX_LIST);
        return -1;
    }
    if (n == 0)
        return 0;
    struct tg_label *l = malloc((size_t)n * sizeof *l);
    if (!l)
        return TG_ENOMEM;
    uint16_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, map)
    {
        const char *v = cJSON_IsString(it) ? it->valuestring : NULL;
        char numbuf[64];
        if (!v && cJSON_IsNumber(it) && it->valuestring)
            v = it->valuestring; /* YAML plain number: take its text, as kubectl would not */
        if (!v && cJSON_IsBool(it))
            v = cJSON_IsTrue(it) ? "true" : "false";
        if (!v) {
            snprintf(numbuf, sizeof numbuf, "%s.%s", field, it->string);
            err(x, it, numbuf, "must be a string, not %s", type_name(it));
            continue;
        }
        uint32_t kid = ref ? tg_intern_ref(it->string, strlen(it->string)) : tg_intern(it->string);
        uint32_t vid = ref ? tg_intern_ref(v, strlen(v)) : tg_intern(v);
        if (kid == TG_STR_NONE || vid == TG_STR_NONE) {
            if (ref) {
                tg_intern_unref(kid);
                tg_intern_unref(vid);
                tg_labels_unref(l, k);
            }
            free(l);
            return TG_ENOMEM;
        }
        l[k++] = (struct tg_label){kid, vid};
    }
    /* insertion sort by key id: label maps are small */
    for (uint16_t i = 1; i < k; i++)
        for (uint16_t j = i; j > 0 && l[j - 1].key > l[j].key; j--) {
            struct tg_label t = l[j];
            l[j] = l[j - 1];
            l[j - 1] = t;
        }
    *out = l;
    *nout = k;
    return 0;
}

void tg_labels_unref(const struct tg_label *l, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        tg_intern_unref(l[i].key);
        tg_intern_unref(l[i].val);
    }
}

void tg_labels_retain(const struct tg_label *l, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        tg_intern_retain(l[i].key);
        tg_intern_retain(l[i].val);
    }
}

uint32_t tg_labels_get(const struct tg_label *l, uint32_t n, uint32_t key)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (l[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && l[lo].key == key ? l[lo].val : TG_STR_NONE;
}

int tg_pod_labels_same(const struct tg_pod *a, const struct tg_pod *b, const uint32_t *keys,
                       uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (tg_labels_get(a->labels, a->nlabels, keys[i]) != tg_labels_get(b->labels, b->nlabels, keys[i]))
            return 0;
    return 1;
}

/* ---- resources --------------------------------------------------------- */

/* A pod's resource names that no Node has registered (model/resources.h):
 * they get ids TG_RES_MAX + i for this decode only, never a registry slot, so
 * a tenant's made-up names cannot fill the registry. */
struct unoffered {
    const char *name[MAX_RQ];
    uint32_t n;
};

/* "field.name" of a resource map's item, for a message (built only then:
 * most maps have no problem). */
static const char *item_path(char *buf, size_t n, const char *field, const cJSON *it)
{
    snprintf(buf, n, "%s.%s", field, it->string);
    return buf;
}

/* The id of a resource name: a Node registers it; a Pod only looks it up
 * (un != NULL), an unknown name taking a local id in un. -1 after reporting
 * (at field.name) when the pod names more than MAX_RQ such names, or the
 * registry is full. */
static int rq_id(struct dec *x, const cJSON *it, const char *field, struct unoffered *un)
{
    size_t len = strlen(it->string);
    char path[256];
    if (!un) {
        int id = tg_res_id(it->string, len);
        if (id < 0)
            err(x, it, item_path(path, sizeof path, field, it),
                "too many distinct resource names (max %d)", TG_RES_MAX);
        return id;
    }
    int id = tg_res_lookup(it->string, len);
    if (id >= 0)
        return id;
    for (uint32_t i = 0; i < un->n; i++)
        if (!strcmp(un->name[i], it->string))
            return TG_RES_MAX + (int)i;
    if (un->n >= MAX_RQ || len == 0) {
        err(x, it, item_path(path, sizeof path, field, it),
            len ? "names more than %d resources no node offers" : "empty resource name", MAX_RQ);
        return -1;
    }
    un->name[un->n] = it->string;
    return TG_RES_MAX + (int)un->n++;
}

/* Parses a resource map (requests, limits, allocatable) into rq[] (unsorted).
 * A map of more than MAX_RQ entries is refused before any name is looked up
 * or registered. un: see rq_id. Returns the count, or -1 after reporting. */
static int decode_rqmap(struct dec *x, const cJSON *map, const char *field, struct tg_rq *rq,
                        struct unoffered *un)
{
    int n = 0;
    const cJSON *it;
    char path[256];
    if (cJSON_GetArraySize(map) > MAX_RQ) {
        err(x, map, field, "has %d resources, more than %d", cJSON_GetArraySize(map), MAX_RQ);
        return -1;
    }
    cJSON_ArrayForEach(it, map)
    {
        const char *txt = cJSON_IsString(it) ? it->valuestring
                          : cJSON_IsNumber(it) ? it->valuestring : NULL;
        char numbuf[64];
        if (!txt && cJSON_IsNumber(it)) {
            snprintf(numbuf, sizeof numbuf, "%.17g", it->valuedouble);
            txt = numbuf;
        }
        if (!txt) {
            err(x, it, item_path(path, sizeof path, field, it), "must be a quantity string, not %s",
                type_name(it));
            return -1;
        }
        int id = rq_id(x, it, field, un);
        if (id < 0)
            return -1;
        int64_t v;
        int rc = tg_quantity_parse(txt, strlen(txt), tg_res_is_milli((uint32_t)id), &v);
        if (rc) {
            err(x, it, item_path(path, sizeof path, field, it), "%s quantity \"%s\"",
                rc == TG_EINVAL ? "negative" : rc == TG_ERANGE ? "out-of-range" : "malformed", txt);
            return -1;
        }
        rq[n++] = (struct tg_rq){(uint32_t)id, v};
    }
    return n;
}

/* Dense accumulator over resource ids for effective requests: the registry's,
 * then the pod's unoffered names. */
#define ACC_N (TG_RES_MAX + MAX_RQ)
struct acc {
    int64_t v[ACC_N];
    uint8_t used[ACC_N];
};

/* One container's requests, with limits standing in for absent requests. */
static int container_requests(struct dec *x, const cJSON *c, const char *field, struct tg_rq *out,
                              struct unoffered *un)
{
    char path[240];
    int len = snprintf(path, sizeof path - 16, "%s.resources", field);
    const cJSON *res = want_map(x, c, "resources", path);
    if (!res)
        return 0;
    struct tg_rq lim[MAX_RQ];
    char *tail = path + (len < (int)sizeof path - 16 ? len : (int)sizeof path - 17);
    strcpy(tail, ".requests"); /* the suffixes fit the 16 bytes kept */
    const cJSON *rm = want_map(x, res, "requests", path);
    int n = rm ? decode_rqmap(x, rm, path, out, un) : 0;
    if (n < 0)
        return -1;
    strcpy(tail, ".limits");
    const cJSON *lm = want_map(x, res, "limits", path);
    int nl = lm ? decode_rqmap(x, lm, path, lim, un) : 0;
    if (nl < 0)
        return -1;
    for (int i = 0; i < nl; i++) {
        int have = 0;
        for (int j = 0; j < n; j++)
            have |= out[j].res == lim[i].res;
        if (!have && n < MAX_RQ)
            out[n++] = lim[i];
    }
    return n;
}

static void acc_clear(struct acc *a, uint32_t nres)
{
    memset(a->v, 0, nres * sizeof a->v[0]);
    memset(a->used, 0, nres);
    memset(a->v + TG_RES_MAX, 0, MAX_RQ * sizeof a->v[0]);
    memset(a->used + TG_RES_MAX, 0, MAX_RQ);
}

/* The pod's requests of names no node offers: kept by name (p->unoffered)
 * and stood for in p->req by TG_RES_UNOFFERED, which no node has. */
static int keep_unoffered(struct tg_pod *p, const struct unoffered *un, const struct tg_rq *out,
                          uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        k += out[i].res >= TG_RES_MAX;
    if (!k)
        return 0;
    if (!(p->unoffered = calloc(k, sizeof *p->unoffered)))
        return TG_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        if (out[i].res < TG_RES_MAX)
            continue;
        struct tg_unoffered *u = &p->unoffered[p->nunoffered];
        if (!(u->name = strdup(un->name[out[i].res - TG_RES_MAX])))
            return TG_ENOMEM;
        u->val = out[i].val;
        p->nunoffered++;
    }
    return 0;
}

static int pod_requests(struct dec *x, const cJSON *spec, struct tg_pod *p)
{
    static _Thread_local struct acc sum, initmax, sidecar;
    uint32_t nres = tg_res_count(); /* a pod registers no name */
    acc_clear(&sum, nres);
    acc_clear(&initmax, nres);
    acc_clear(&sidecar, nres);
    struct unoffered un = {.n = 0};
    struct tg_rq rq[MAX_RQ];
    char path[128];

    const cJSON *init = want_list(x, spec, "initContainers", "spec.initContainers");
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, init)
    {
        snprintf(path, sizeof path, "spec.initContainers[%d]", i++);
        int n = container_requests(x, c, path, rq, &un);
        if (n < 0)
            return -1;
        const char *rp = want_str(x, c, "restartPolicy", "restartPolicy");
        int is_sidecar = rp && !strcmp(rp, "Always");
        for (int k = 0; k < n; k++) {
            uint32_t r = rq[k].res;
            if (is_sidecar) {
                sidecar.v[r] += rq[k].val;
                sidecar.used[r] = 1;
            } else {
                int64_t v = rq[k].val + sidecar.v[r];
                if (v > initmax.v[r])
                    initmax.v[r] = v;
                initmax.used[r] = 1;
            }
        }
    }
    const cJSON *cs = want_list(x, spec, "containers", "spec.containers");
    i = 0;
    cJSON_ArrayForEach(c, cs)
    {
        snprintf(path, sizeof path, "spec.containers[%d]", i++);
        int n = container_requests(x, c, path, rq, &un);
        if (n < 0)
            return -1;
        for (int k = 0; k < n; k++) {
            sum.v[rq[k].res] += rq[k].val;
            sum.used[rq[k].res] = 1;
        }
    }
    const cJSON *ov = want_map(x, spec, "overhead", "spec.overhead");
    int nov = ov ? decode_rqmap(x, ov, "spec.overhead", rq, &un) : 0;
    if (nov < 0)
        return -1;

    struct tg_rq out[MAX_RQ + 1];
    uint32_t n = 0, ndistinct = 0;
    /* the registry's ids [0, nres), then the unoffered [TG_RES_MAX, TG_RES_MAX + un.n) */
    for (uint32_t r = 0; r < TG_RES_MAX + un.n; r = r + 1 == nres ? TG_RES_MAX : r + 1) {
        int used = sum.used[r] || initmax.used[r] || sidecar.used[r];
        for (int k = 0; k < nov && !used; k++)
            used = rq[k].res == r; /* overhead of a resource no container asked for */
        if (!used)
            continue;
        if (++ndistinct > MAX_RQ) {
            err(x, spec, "spec", "names more than %d distinct resources", MAX_RQ);
            return -1;
        }
        int64_t v = sum.v[r] + sidecar.v[r];
        if (initmax.v[r] > v)
            v = initmax.v[r];
        for (int k = 0; k < nov; k++)
            if (rq[k].res == r)
                v += rq[k].val;
        if (v > 0)
            out[n++] = (struct tg_rq){r, v};
    }
    if (keep_unoffered(p, &un, out, n))
        return TG_ENOMEM;
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++)
        if (out[k].res < TG_RES_MAX)
            out[m++] = out[k];
    if (p->nunoffered)
        out[m++] = (struct tg_rq){TG_RES_UNOFFERED, 1};
    n = tg_rq_normalize(out, m);
    if (n) {
        p->req = malloc(n * sizeof *p->req);
        if (!p->req)
            return TG_ENOMEM;
        memcpy(p->req, out, n * sizeof *out);
    }
    p->nreq = (uint8_t)n;
    return 0;
}

int tg_pod_resolve(struct tg_pod *p)
{
    uint32_t k = 0, found = 0;
    for (uint32_t i = 0; i < p->nunoffered; i++)
        found += tg_res_lookup(p->unoffered[i].name, strlen(p->unoffered[i].name)) >= 0;
    if (!found)
        return 0;
    struct tg_rq *req = malloc((p->nreq + found) * sizeof *req);
    if (!req)
        return TG_ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->nreq; i++)
        if (p->req[i].res != TG_RES_UNOFFERED)
            req[n++] = p->req[i];
    for (uint32_t i = 0; i < p->nunoffered; i++) {
        struct tg_unoffered *u = &p->unoffered[i];
        int id = tg_res_lookup(u->name, strlen(u->name));
        if (id < 0) {
            p->unoffered[k++] = *u;
            continue;
        }
        req[n++] = (struct tg_rq){(uint32_t)id, u->val};
        free(u->name);
    }
    p->nunoffered = (uint8_t)k;
    if (k)
        req[n++] = (struct tg_rq){TG_RES_UNOFFERED, 1};
    free(p->req);
    p->req = req;
    p->nreq = (uint8_t)tg_rq_normalize(req, n);
    return 1;
}

/* ---- scheduling constraints -------------------------------------------- */

static int parse_effect(const char *s, uint8_t *out)
{
    if (!s || !*s) *out = TG_EFFECT_ANY;
    else if (!strcmp(s, "NoSchedule")) *out = TG_EFFECT_NOSCHEDULE;
    else if (!strcmp(s, "PreferNoSchedule")) *out = TG_EFFECT_PREFER_NOSCHEDULE;
    else if (!strcmp(s, "NoExecute")) *out = TG_EFFECT_NOEXECUTE;
    else return -1;
    return 0;
}

static int decode_tolerations(struct dec *x, const cJSON *spec, struct tg_podspec *ps)
{
    const cJSON *tl = want_list(x, spec, "tolerations", "spec.tolerations");
    int n = tl ? cJSON_GetArraySize(tl) : 0;
    if (!n)
        return 0;
    ps->tols = calloc((size_t)n, sizeof *ps->tols);
    if (!ps->tols)
        return TG_ENOMEM;
    int i = 0;
    const cJSON *t;
    char path[64];
    cJSON_ArrayForEach(t, tl)
    {
        snprintf(path, sizeof path, "spec.tolerations[%d]", i++);
        if (!cJSON_IsObject(t)) {
            err(x, t, path, "must be a map, not %s", type_name(t));
            continue;
        }
        const char *key = want_str(x, t, "key", path);
        const char *op = want_str(x, t, "operator", path);
        const char *val = want_str(x, t, "value", path);
        const char *eff = want_str(x, t, "effect", path);
        struct tg_toleration tol = {0};
        tol.key = tg_intern(key ? key : "");
        tol.val = tg_intern(val ? val : "");
        if (!op || !strcmp(op, "Equal")) {
            tol.op = TG_TOL_EQUAL;
            if (!key || !*key) {
                err(x, t, path, "operator Equal needs a key");
                continue;
            }
        } else if (!strcmp(op, "Exists")) {
            tol.op = TG_TOL_EXISTS;
            if (val && *val) {
                err(x, t, path, "operator Exists takes no value (got \"%s\")", val);
                continue;
            }
        } else {
            err(x, get(t, "operator"), path, "unknown operator \"%s\" (Equal or Exists)", op);
            continue;
        }
        if (parse_effect(eff, &tol.effect)) {
            err(x, get(t, "effect"), path, "unknown effect \"%s\"", eff);
            continue;
        }
        ps->tols[ps->ntol++] = tol;
    }
    return 0;
}

static int decode_selreq(struct dec *x, const cJSON *e, const char *path, int is_field,
                         struct tg_selreq *r)
{
    if (!cJSON_IsObject(e)) {
        err(x, e, path, "must be a map, not %s", type_name(e));
        return -1;
    }
    const char *key = want_str(x, e, "key", path);
    const char *op = want_str(x, e, "operator", path);
    const cJSON *vals = want_list(x, e, "values", path);
    if (!key || !*key || !op) {
        err(x, e, path, "needs a key and an operator");
        return -1;
    }
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    int o = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(op, ops[i]))
            o = i;
    if (o < 0) {
        err(x, get(e, "operator"), path,
            "unknown operator \"%s\" (In, NotIn, Exists, DoesNotExist, Gt, Lt)", op);
        return -1;
    }
    r->key = tg_intern(key);
    r->op = (uint8_t)o;
    r->is_field = (uint8_t)is_field;
    int nv = vals ? cJSON_GetArraySize(vals) : 0;
    if ((o == TG_SEL_IN || o == TG_SEL_NOTIN) && nv == 0) {
        err(x, e, path, "operator %s needs values", op);
        return -1;
    }
    if ((o == TG_SEL_EXISTS || o == TG_SEL_DOESNOTEXIST) && nv != 0) {
        err(x, e, path, "operator %s takes no values", op);
        return -1;
    }
    if (o == TG_SEL_GT || o == TG_SEL_LT) {
        const cJSON *v0 = cJSON_GetArrayItem(vals, 0);
        const char *s = v0 && cJSON_IsString(v0) ? v0->valuestring
                        : v0 && cJSON_IsNumber(v0) ? v0->valuestring : NULL;
        char *end = NULL;
        long long num = s ? strtoll(s, &end, 10) : 0;
        if (nv != 1 || !s || !*s || *end) {
            err(x, e, path, "operator %s needs exactly one integer value", op);
            return -1;
        }
        r->num = num;
        return 0;
    }
    if (is_field && strcmp(key, "metadata.name") != 0) {
        err(x, e, path, "matchFields supports only metadata.name, not %s", key);
        return -1;
    }
    if (nv) {
        r->vals = malloc((size_t)nv * sizeof *r->vals);
        if (!r->vals)
            return TG_ENOMEM;
        const cJSON *v;
        cJSON_ArrayForEach(v, vals)
        {
            const char *s = cJSON_IsString(v) ? v->valuestring
                            : cJSON_IsNumber(v) ? v->valuestring : NULL;
            if (!s) {
                err(x, v, path, "values must be strings, not %s", type_name(v));
                return -1;
            }
            r->vals[r->nvals++] = tg_intern(s);
        }
    }
    return 0;
}

/* A NodeSelector (nodeSelectorTerms, ORed) at `field` of o into *terms. An
 * absent or empty list is an error when required. Returns 0, -1 after
 * reporting, or TG_ENOMEM; *terms is owned by the caller even on failure. */
static int decode_nodeterms(struct dec *x, const cJSON *o, const char *field,
                            struct tg_selterm **out, uint16_t *nout)
{
    const cJSON *terms = want_list(x, o, "nodeSelectorTerms", field);
    int n = terms ? cJSON_GetArraySize(terms) : 0;
    if (n == 0) {
        if (!x->bad)
            err(x, o, field, "nodeSelectorTerms must not be empty");
        return -1;
    }
    *out = calloc((size_t)n, sizeof **out);
    if (!*out)
        return TG_ENOMEM;
    const cJSON *t;
    int ti = 0;
    char path[256];
    cJSON_ArrayForEach(t, terms)
    {
        snprintf(path, sizeof path, "%s.nodeSelectorTerms[%d]", field, ti++);
        struct tg_selterm *term = &(*out)[(*nout)++];
        const cJSON *me = want_list(x, t, "matchExpressions", path);
        const cJSON *mf = want_list(x, t, "matchFields", path);
        int ne = (me ? cJSON_GetArraySize(me) : 0) + (mf ? cJSON_GetArraySize(mf) : 0);
        if (!ne)
            continue;
        term->reqs = calloc((size_t)ne, sizeof *term->reqs);
        if (!term->reqs)
            return TG_ENOMEM;
        for (int f = 0; f < 2; f++) {
            const cJSON *e;
            const cJSON *list = f ? mf : me;
            int ei = 0;
            cJSON_ArrayForEach(e, list)
            {
                char p2[300];
                snprintf(p2, sizeof p2, "%s.%s[%d]", path, f ? "matchFields" : "matchExpressions", ei++);
                int rc = decode_selreq(x, e, p2, f, &term->reqs[term->nreq]);
                term->nreq++; /* counted even on failure so the free path sees vals */
                if (rc == TG_ENOMEM)
                    return rc;
            }
        }
    }
    return 0;
}

static void nodeterms_free(struct tg_selterm *terms, uint16_t n)
{
    for (uint16_t i = 0; i < n; i++) {
        for (uint16_t j = 0; j < terms[i].nreq; j++)
            free(terms[i].reqs[j].vals);
        free(terms[i].reqs);
    }
    free(terms);
}

static int decode_affinity(struct dec *x, const cJSON *spec, struct tg_podspec *ps)
{
    const cJSON *aff = want_map(x, spec, "affinity", "spec.affinity");
    const cJSON *na = want_map(x, aff, "nodeAffinity", "spec.affinity.nodeAffinity");
    const char *rf = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
    const cJSON *req = want_map(x, na, "requiredDuringSchedulingIgnoredDuringExecution", rf);
    if (!req)
        return 0;
    int rc = decode_nodeterms(x, req, rf, &ps->terms, &ps->nterms);
    return rc == TG_ENOMEM ? rc : 0;
}

static int decode_labelsel(struct dec *x, const cJSON *o, const char *field, struct tg_labelsel *sel);

/* Appends `key In/NotIn (the pod's value)` to sel for each key of the list
 * the pod has (matchLabelKeys / mismatchLabelKeys); keys it lacks are
 * ignored, as the API server does. */
static int merge_label_keys(struct dec *x, const cJSON *list, const char *field, int op,
                            const struct tg_pod *p, struct tg_labelsel *sel)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, list)
    {
        if (!cJSON_IsString(k) || !*k->valuestring) {
            err(x, k, field, "must list label keys (strings)");
            return -1;
        }
        uint32_t key = tg_intern(k->valuestring);
        uint32_t v = tg_labels_get(p->labels, p->nlabels, key);
        if (v == TG_STR_NONE)
            continue;
        struct tg_selreq *r = realloc(sel->reqs, (sel->nreq + 1u) * sizeof *r);
        uint32_t *vals = malloc(sizeof *vals);
        if (!r || !vals) {
            if (r)
                sel->reqs = r;
            free(vals);
            return TG_ENOMEM;
        }
        sel->reqs = r;
        vals[0] = v;
        sel->reqs[sel->nreq++] = (struct tg_selreq){.key = key, .op = (uint8_t)op, .nvals = 1,
                                                    .vals = vals};
    }
    return 0;
}

/* One podAffinityTerm at `path` of o. Returns 0, -1 after reporting, or
 * TG_ENOMEM; t is freed by the caller in every case. */
static int decode_podterm(struct dec *x, const cJSON *o, const char *path, const struct tg_pod *p,
                          struct tg_podterm *t)
{
    if (!cJSON_IsObject(o)) {
        err(x, o, path, "must be a map, not %s", type_name(o));
        return -1;
    }
    char f[320];
    const char *key = want_str(x, o, "topologyKey", path);
    if (!key || !*key) {
        err(x, o, path, "needs a topologyKey");
        return -1;
    }
    t->key = tg_intern(key);
    const cJSON *ls = want_map(x, o, "labelSelector", path);
    int rc;
    snprintf(f, sizeof f, "%s.labelSelector", path);
    if (ls && (rc = decode_labelsel(x, ls, f, &t->sel)))
        return rc;
    t->has_sel = ls != NULL;
    snprintf(f, sizeof f, "%s.namespaceSelector", path);
    const cJSON *nss = want_map(x, o, "namespaceSelector", f);
    if (nss && (rc = decode_labelsel(x, nss, f, &t->nssel)))
        return rc;
    t->has_nssel = nss != NULL;
    snprintf(f, sizeof f, "%s.namespaces", path);
    const cJSON *nl = want_list(x, o, "namespaces", f);
    int nn = nl ? cJSON_GetArraySize(nl) : 0;
    if (nn && !(t->nss = malloc((size_t)nn * sizeof *t->nss)))
        return TG_ENOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, nl)
    {
        if (!cJSON_IsString(it)) {
            err(x, it, f, "must list namespace names (strings)");
            return -1;
        }
        t->nss[t->nns++] = tg_intern(it->valuestring);
    }
    const cJSON *mk = want_list(x, o, "matchLabelKeys", path);
    const cJSON *mm = want_list(x, o, "mismatchLabelKeys", path);
    if ((mk || mm) && !ls) {
        err(x, o, path, "matchLabelKeys and mismatchLabelKeys need a labelSelector");
        return -1;
    }
    snprintf(f, sizeof f, "%s.matchLabelKeys", path);
    if ((rc = merge_label_keys(x, mk, f, TG_SEL_IN, p, &t->sel)))
        return rc;
    snprintf(f, sizeof f, "%s.mismatchLabelKeys", path);
    return merge_label_keys(x, mm, f, TG_SEL_NOTIN, p, &t->sel);
}

/* required (a list of terms) or preferred (weighted terms) at o[k]. */
static int decode_podterms(struct dec *x, const cJSON *o, const char *k, const char *field,
                           int weighted, const struct tg_pod *p, struct tg_podterm **out,
                           uint16_t *nout)
{
    const cJSON *l = want_list(x, o, k, field);
    int n = l ? cJSON_GetArraySize(l) : 0;
    if (!n)
        return 0;
    if (!(*out = calloc((size_t)n, sizeof **out)))
        return TG_ENOMEM;
    const cJSON *it;
    int i = 0;
    char path[300];
    cJSON_ArrayForEach(it, l)
    {
        snprintf(path, sizeof path, "%s[%d]", field, i++);
        struct tg_podterm *t = &(*out)[(*nout)++];
        const cJSON *term = it;
        if (weighted) {
            int64_t w = 0;
            if (!want_int(x, it, "weight", path, 1, 100, &w)) {
                if (!x->bad)
                    err(x, it, path, "needs a weight from 1 to 100");
                return -1;
            }
            t->weight = (int32_t)w;
            term = get(it, "podAffinityTerm");
            snprintf(path + strlen(path), sizeof path - strlen(path), ".podAffinityTerm");
        }
        int rc = decode_podterm(x, term, path, p, t);
        if (rc)
            return rc;
    }
    return 0;
}

static int port_cmp(const void *a, const void *b)
{
    const struct tg_hostport *x = a, *y = b;
    if (x->port != y->port)
        return x->port < y->port ? -1 : 1;
    if (x->proto != y->proto)
        return x->proto < y->proto ? -1 : 1;
    return (x->ip > y->ip) - (x->ip < y->ip);
}

/* Host ports of one container list (hostPort, or containerPort on a
 * hostNetwork pod). */
static int decode_ports(struct dec *x, const cJSON *cs, const char *field, int hostnet,
                        int sidecars_only, struct tg_podcons *c, uint32_t *cap)
{
    const cJSON *ct;
    int ci = 0;
    cJSON_ArrayForEach(ct, cs)
    {
        char path[128];
        snprintf(path, sizeof path, "%s[%d].ports", field, ci++);
        if (sidecars_only) {
            const cJSON *rp = get(ct, "restartPolicy");
            if (!cJSON_IsString(rp) || strcmp(rp->valuestring, "Always"))
                continue;
        }
        const cJSON *ports = want_list(x, ct, "ports", path);
        const cJSON *pt;
        cJSON_ArrayForEach(pt, ports)
        {
            int64_t cport = 0, hport = 0;
            want_int(x, pt, "containerPort", path, 1, 65535, &cport);
            want_int(x, pt, "hostPort", path, 0, 65535, &hport);
            if (hostnet && !hport)
                hport = cport;
            if (!hport)
                continue;
            const char *proto = want_str(x, pt, "protocol", path);
            const char *ip = want_str(x, pt, "hostIP", path);
            uint8_t pr = TG_PROTO_TCP;
            if (proto && !strcmp(proto, "UDP"))
                pr = TG_PROTO_UDP;
            else if (proto && !strcmp(proto, "SCTP"))
                pr = TG_PROTO_SCTP;
            else if (proto && *proto && strcmp(proto, "TCP")) {
                err(x, get(pt, "protocol"), path, "unknown protocol \"%s\" (TCP, UDP, SCTP)", proto);
                return -1;
            }
            uint32_t ipid = ip && *ip && strcmp(ip, "0.0.0.0") && strcmp(ip, "::") ? tg_intern(ip) : 0;
            if (c->nports == *cap) {
                uint32_t nc = *cap ? *cap * 2 : 4;
                struct tg_hostport *np = realloc(c->ports, nc * sizeof *np);
                if (!np)
                    return TG_ENOMEM;
                c->ports = np;
                *cap = nc;
            }
            c->ports[c->nports++] = (struct tg_hostport){ipid, (uint16_t)hport, pr};
        }
    }
    return 0;
}

/* Whether spec may hold inter-pod terms or host ports (a quick look: most
 * pods have none, and their decoding stays as it was). */
static int may_have_cons(const cJSON *spec)
{
    const cJSON *aff = get(spec, "affinity");
    if (get(aff, "podAffinity") || get(aff, "podAntiAffinity") || cJSON_IsTrue(get(spec, "hostNetwork")))
        return 1;
    static const char *const lists[2] = {"containers", "initContainers"};
    for (int i = 0; i < 2; i++) {
        const cJSON *l = get(spec, lists[i]), *ct;
        if (!cJSON_IsArray(l))
            continue;
        cJSON_ArrayForEach(ct, l)
            if (get(ct, "ports"))
                return 1;
    }
    return 0;
}

/* Inter-pod affinity, anti-affinity and host ports into p->cons (left NULL
 * when the pod has none). */
static int decode_cons(struct dec *x, const cJSON *spec, struct tg_pod *p)
{
    if (!may_have_cons(spec))
        return 0;
    struct tg_podcons *c = calloc(1, sizeof *c);
    if (!c)
        return TG_ENOMEM;
    p->cons = c;
    const cJSON *aff = want_map(x, spec, "affinity", "spec.affinity");
    static const char *const kinds[2] = {"podAffinity", "podAntiAffinity"};
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        char f[64], f2[160];
        snprintf(f, sizeof f, "spec.affinity.%s", kinds[k]);
        const cJSON *pa = want_map(x, aff, kinds[k], f);
        snprintf(f2, sizeof f2, "%s.requiredDuringSchedulingIgnoredDuringExecution", f);
        rc = decode_podterms(x, pa, "requiredDuringSchedulingIgnoredDuringExecution", f2, 0, p,
                             k ? &c->anti : &c->aff, k ? &c->nanti : &c->naff);
        snprintf(f2, sizeof f2, "%s.preferredDuringSchedulingIgnoredDuringExecution", f);
        if (!rc)
            rc = decode_podterms(x, pa, "preferredDuringSchedulingIgnoredDuringExecution", f2, 1, p,
                                 k ? &c->panti : &c->paff, k ? &c->npanti : &c->npaff);
    }
    int hostnet = want_bool(x, spec, "hostNetwork", "spec.hostNetwork");
    uint32_t cap = 0;
    if (!rc)
        rc = decode_ports(x, want_list(x, spec, "containers", "spec.containers"), "spec.containers",
                          hostnet, 0, c, &cap);
    if (!rc)
        rc = decode_ports(x, want_list(x, spec, "initContainers", "spec.initContainers"),
                          "spec.initContainers", hostnet, 1, c, &cap);
    if (c->nports > 1)
        qsort(c->ports, c->nports, sizeof *c->ports, port_cmp);
    if (!c->naff && !c->nanti && !c->npaff && !c->npanti && !c->nports)
        tg_podcons_free(&p->cons);
    return rc == TG_ENOMEM ? rc : 0;
}

static int decode_spread(struct dec *x, const cJSON *spec, struct tg_pod *p, struct tg_podspec *ps)
{
    const char *field = "spec.topologySpreadConstraints";
    const cJSON *l = want_list(x, spec, "topologySpreadConstraints", field);
    int n = l ? cJSON_GetArraySize(l) : 0;
    if (!n)
        return 0;
    if (!(ps->spread = calloc((size_t)n, sizeof *ps->spread)))
        return TG_ENOMEM;
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, l)
    {
        char path[96], f[160];
        snprintf(path, sizeof path, "%s[%d]", field, i++);
        struct tg_spread *c = &ps->spread[ps->nspread++];
        int64_t v = 0;
        if (!want_int(x, it, "maxSkew", path, 1, 2147483647LL, &v)) {
            if (!x->bad)
                err(x, it, path, "needs maxSkew >= 1");
            return -1;
        }
        c->max_skew = (int32_t)v;
        const char *key = want_str(x, it, "topologyKey", path);
        const char *wu = want_str(x, it, "whenUnsatisfiable", path);
        if (!key || !*key || !wu || (strcmp(wu, "DoNotSchedule") && strcmp(wu, "ScheduleAnyway"))) {
            err(x, it, path, "needs a topologyKey and whenUnsatisfiable DoNotSchedule or ScheduleAnyway");
            return -1;
        }
        c->key = tg_intern(key);
        c->hard = !strcmp(wu, "DoNotSchedule");
        v = 1;
        if (want_int(x, it, "minDomains", path, 1, 2147483647LL, &v) && !c->hard) {
            err(x, it, path, "minDomains needs whenUnsatisfiable DoNotSchedule");
            return -1;
        }
        c->min_domains = (int32_t)v;
        const char *ap = want_str(x, it, "nodeAffinityPolicy", path);
        const char *tp = want_str(x, it, "nodeTaintsPolicy", path);
        if ((ap && strcmp(ap, "Honor") && strcmp(ap, "Ignore")) ||
            (tp && strcmp(tp, "Honor") && strcmp(tp, "Ignore"))) {
            err(x, it, path, "nodeAffinityPolicy and nodeTaintsPolicy are Honor or Ignore");
            return -1;
        }
        c->affinity_ignore = ap && !strcmp(ap, "Ignore");
        c->taints_honor = tp && !strcmp(tp, "Honor");
        const cJSON *ls = want_map(x, it, "labelSelector", path);
        snprintf(f, sizeof f, "%s.labelSelector", path);
        int rc;
        if (ls && (rc = decode_labelsel(x, ls, f, &c->sel)))
            return rc;
        c->has_sel = ls != NULL;
        snprintf(f, sizeof f, "%s.matchLabelKeys", path);
        if ((rc = merge_label_keys(x, want_list(x, it, "matchLabelKeys", f), f, TG_SEL_IN, p, &c->sel)))
            return rc;
    }
    return 0;
}

/* PersistentVolumeClaims of spec.volumes and the pod's resource claims. */
static int decode_claims(struct dec *x, const cJSON *obj, const cJSON *spec, struct tg_pod *p,
                         struct tg_podspec *ps)
{
    const cJSON *vols = want_list(x, spec, "volumes", "spec.volumes");
    int n = vols ? cJSON_GetArraySize(vols) : 0;
    if (n && !(ps->pvcs = calloc((size_t)n, sizeof *ps->pvcs)))
        return TG_ENOMEM;
    const cJSON *v;
    int i = 0;
    cJSON_ArrayForEach(v, vols)
    {
        char path[64];
        snprintf(path, sizeof path, "spec.volumes[%d]", i++);
        const cJSON *pvc = want_map(x, v, "persistentVolumeClaim", path);
        const char *cn = want_str(x, pvc, "claimName", path);
        if (pvc && (!cn || !*cn)) {
            err(x, pvc, path, "persistentVolumeClaim needs a claimName");
            return -1;
        }
        if (cn) {
            ps->pvcs[ps->npvcs++] = tg_intern(cn);
        } else if (want_map(x, v, "ephemeral", path)) {
            const char *vn = want_str(x, v, "name", path);
            char name[600];
            snprintf(name, sizeof name, "%s-%s", tg_pod_name(p), vn ? vn : "");
            ps->pvcs[ps->npvcs++] = tg_intern(name);
        }
    }
    const cJSON *rcl = want_list(x, spec, "resourceClaims", "spec.resourceClaims");
    n = rcl ? cJSON_GetArraySize(rcl) : 0;
    if (!n)
        return 0;
    if (!(ps->claims = calloc((size_t)n, sizeof *ps->claims)))
        return TG_ENOMEM;
    const cJSON *st = want_list(x, get(obj, "status"), "resourceClaimStatuses",
                                "status.resourceClaimStatuses");
    i = 0;
    cJSON_ArrayForEach(v, rcl)
    {
        char path[64];
        snprintf(path, sizeof path, "spec.resourceClaims[%d]", i++);
        const char *name = want_str(x, v, "name", path);
        const char *cn = want_str(x, v, "resourceClaimName", path);
        const char *tn = want_str(x, v, "resourceClaimTemplateName", path);
        if (!name || !*name || (!cn) == (!tn)) {
            err(x, v, path, "needs a name and one of resourceClaimName, resourceClaimTemplateName");
            return -1;
        }
        struct tg_claimref *r = &ps->claims[ps->nclaims++];
        r->name = tg_intern(name);
        r->claim = cn ? tg_intern(cn) : 0;
        r->tmpl = tn ? tg_intern(tn) : 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, st)
        {
            const cJSON *sn = get(s, "name"), *sc = get(s, "resourceClaimName");
            if (tn && cJSON_IsString(sn) && !strcmp(sn->valuestring, name) && cJSON_IsString(sc) &&
                *sc->valuestring)
                r->claim = tg_intern(sc->valuestring);
        }
    }
    return 0;
}

static int decode_podspec(struct dec *x, const cJSON *obj, const cJSON *spec, struct tg_pod *p)
{
    struct tg_podspec *ps = calloc(1, sizeof *ps);
    if (!ps)
        return TG_ENOMEM;
    p->spec = ps;
    const cJSON *sel = want_map(x, spec, "nodeSelector", "spec.nodeSelector");
    int rc = decode_labels(x, sel, "spec.nodeSelector", &ps->selector, &ps->nselector, 0);
    if (rc)
        return rc;
    if ((rc = decode_tolerations(x, spec, ps)))
        return rc;
    if ((rc = decode_affinity(x, spec, ps)))
        return rc;
    if ((rc = decode_spread(x, spec, p, ps)) == TG_ENOMEM)
        return rc;
    rc = decode_claims(x, obj, spec, p, ps);
    return rc == TG_ENOMEM ? rc : 0;
}

static void podspec_free(struct tg_podspec *ps)
{
    if (!ps)
        return;
    nodeterms_free(ps->terms, ps->nterms);
    for (uint16_t i = 0; i < ps->nspread; i++)
        tg_labelsel_free(&ps->spread[i].sel);
    free(ps->spread);
    free(ps->pvcs);
    free(ps->claims);
    free(ps->tols);
    free(ps->selector);
    free(ps);
}

/* ---- Pod ---------------------------------------------------------------- */

static uint32_t group_label(const cJSON *labels)
{
    const cJSON *g = get(labels, TG_LABEL_POD_GROUP);
    if (!cJSON_IsString(g))
        g = get(labels, TG_LABEL_POD_GROUP_XK8S);
    return cJSON_IsString(g) && *g->valuestring ? tg_intern(g->valuestring) : 0;
}

/* Labels whose values are unique per object (a Job's uid) would grow the
 * interner forever under churn; no selector a scheduler reads uses them. */
static void drop_churning_labels(struct tg_pod *p)
{
    static uint32_t keys[2];
    if (!keys[0]) {
        keys[0] = tg_intern("controller-uid");
        keys[1] = tg_intern("batch.kubernetes.io/controller-uid");
    }
    uint16_t k = 0;
    for (uint16_t i = 0; i < p->nlabels; i++) {
        if (p->labels[i].key != keys[0] && p->labels[i].key != keys[1])
            p->labels[k++] = p->labels[i];
        else
            tg_intern_unref(p->labels[i].val); /* its value's string goes at once */
    }
    p->nlabels = k;
}

/* The controller owner reference (controller: true), if any. */
static int decode_owner(struct dec *x, const cJSON *obj, struct tg_pod *p)
{
    const cJSON *md = get(obj, "metadata");
    const cJSON *refs = want_list(x, md, "ownerReferences", "metadata.ownerReferences");
    const cJSON *r;
    int i = 0;
    cJSON_ArrayForEach(r, refs)
    {
        char path[64];
        snprintf(path, sizeof path, "metadata.ownerReferences[%d]", i++);
        if (!cJSON_IsObject(r)) {
            warn(x, r, path, "must be a map (ignored)");
            continue;
        }
        if (!cJSON_IsTrue(get(r, "controller")))
            continue;
        const cJSON *kind = get(r, "kind"), *name = get(r, "name");
        if (!cJSON_IsString(kind) || !cJSON_IsString(name) || !*kind->valuestring ||
            !*name->valuestring) {
            warn(x, r, path, "a controller reference needs kind and name (ignored)");
            continue;
        }
        p->owner_kind = tg_intern(kind->valuestring);
        p->owner_name = tg_intern(name->valuestring);
        if (p->owner_kind == TG_STR_NONE || p->owner_name == TG_STR_NONE)
            return TG_ENOMEM;
        break;
    }
    return 0;
}

int tg_pod_decode(const cJSON *obj, unsigned flags, struct tg_diag *d, struct tg_pod **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "Pod", 1, &m))
        return TG_EPARSE;
    struct tg_pod *p = calloc(1, sizeof *p);
    int rc = TG_ENOMEM;
    if (!p)
        return rc;
    p->key = make_key(m.ns, m.name, &p->name_off);
    p->uid = strdup(m.uid ? m.uid : "");
    p->rv = dup_or_null(m.rv);
    if (!p->key || !p->uid || (m.rv && !p->rv))
        goto fail;
    p->ns = tg_intern(m.ns);
    p->created_ms = m.created_ms;
    p->deleting = (uint8_t)m.deleting;
    p->group = group_label(m.labels);
    if ((rc = decode_labels(&x, m.labels, "metadata.labels", &p->labels, &p->nlabels, 1)) == TG_ENOMEM)
        goto fail;
    drop_churning_labels(p);
    if ((rc = decode_owner(&x, obj, p)) == TG_ENOMEM)
        goto fail;
    if ((rc = tg_pod_gang_decode(obj, d, p)) == TG_ENOMEM) /* model/workload.h */
        goto fail;

    const cJSON *spec = want_map(&x, obj, "spec", "spec");
    const char *node = want_str(&x, spec, "nodeName", "spec.nodeName");
    p->node = node ? tg_intern(node) : 0;
    const char *sched = want_str(&x, spec, "schedulerName", "spec.schedulerName");
    p->sched = tg_intern(sched && *sched ? sched : "default-scheduler");
    const char *pc = want_str(&x, spec, "priorityClassName", "spec.priorityClassName");
    p->prio_class = pc ? tg_intern(pc) : 0;
    int64_t prio;
    if (want_int(&x, spec, "priority", "spec.priority", -2147483648LL, 2147483647LL, &prio)) {
        p->priority = (int32_t)prio;
        p->has_priority = 1;
    }
    const char *pp = want_str(&x, spec, "preemptionPolicy", "spec.preemptionPolicy");
    p->preempt_never = pp && !strcmp(pp, "Never");
    int64_t grace = 30;
    p->has_grace = (uint8_t)want_int(&x, spec, "terminationGracePeriodSeconds",
                                     "spec.terminationGracePeriodSeconds", 0, 31536000, &grace);
    p->grace_s = (int32_t)grace;
    const cJSON *status = want_map(&x, obj, "status", "status");
    const char *phase = want_str(&x, status, "phase", "status.phase");
    p->phase = !phase || !strcmp(phase, "Pending") ? TG_PHASE_PENDING
               : !strcmp(phase, "Running")         ? TG_PHASE_RUNNING
               : !strcmp(phase, "Succeeded")       ? TG_PHASE_SUCCEEDED
               : !strcmp(phase, "Failed")          ? TG_PHASE_FAILED
                                                   : TG_PHASE_UNKNOWN;
    const cJSON *st = get(status, "startTime");
    p->started = p->phase != TG_PHASE_PENDING || cJSON_IsString(st);
    if (cJSON_IsString(st) && tg_parse_time(st->valuestring, &p->start_ms))
        p->start_ms = 0; /* unreadable: as unset (the time is a hint, never a reason to refuse) */
    if ((rc = pod_requests(&x, spec, p)) == TG_ENOMEM)
        goto fail;
    tg_pod_qos(spec, &p->guaranteed, &p->excl_cpus);
    if ((flags & TG_DECODE_SPEC) && (rc = decode_podspec(&x, obj, spec, p)) == TG_ENOMEM)
        goto fail;
    if ((rc = decode_cons(&x, spec, p)) == TG_ENOMEM)
        goto fail;
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = p;
    return 0;
fail:
    tg_pod_free(&p);
    return rc ? rc : TG_EPARSE;
}

void tg_pod_free(struct tg_pod **pp)
{
    struct tg_pod *p = *pp;
    if (!p)
        return;
    free(p->key);
    free(p->uid);
    free(p->rv);
    free(p->req);
    for (uint32_t i = 0; i < p->nunoffered; i++)
        free(p->unoffered[i].name);
    free(p->unoffered);
    tg_labels_unref(p->labels, p->nlabels);
    free(p->labels);
    podspec_free(p->spec);
    tg_podcons_free(&p->cons);
    free(p->hints);
    free(p);
    *pp = NULL;
}

const char *const tg_pod_unread[] = {
    "metadata.managedFields",
    "status.conditions",
    "status.containerStatuses",
    "status.initContainerStatuses",
    "status.ephemeralContainerStatuses",
    "spec.ephemeralContainers",
#define CONTAINER_UNREAD(list)                                                                     \
    "spec." list ".*.env", "spec." list ".*.envFrom", "spec." list ".*.volumeMounts",              \
        "spec." list ".*.command", "spec." list ".*.args", "spec." list ".*.livenessProbe",         \
        "spec." list ".*.readinessProbe", "spec." list ".*.startupProbe",                           \
        "spec." list ".*.lifecycle", "spec." list ".*.securityContext"
    CONTAINER_UNREAD("containers"),
    CONTAINER_UNREAD("initContainers"),
#undef CONTAINER_UNREAD
    NULL,
};

/* ---- dump (tests compare decoding paths) ------------------------------
 * Lists keep the decoder's order except labels (sorted by id, which depends
 * on what the interner held before): by key text here. */

static const char *s_(uint32_t id)
{
    return id ? tg_str(id) : "-";
}

static void dump_sel(struct tg_sb *b, const char *f, const struct tg_selreq *r, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        tg_sb_printf(b, "%s[%u]=%s op%u field%u num%lld:", f, i, s_(r[i].key), r[i].op,
                     r[i].is_field, (long long)r[i].num);
        for (uint16_t v = 0; v < r[i].nvals; v++)
            tg_sb_printf(b, " %s", s_(r[i].vals[v]));
        tg_sb_putc(b, '\n');
    }
}

static void dump_terms(struct tg_sb *b, const char *f, const struct tg_podterm *t, uint16_t n)
{
    char g[64];
    for (uint16_t i = 0; i < n; i++) {
        tg_sb_printf(b, "%s[%u]=key %s weight %d nss%u has_sel%u has_nssel%u:", f, i, s_(t[i].key),
                     t[i].weight, t[i].nns, t[i].has_sel, t[i].has_nssel);
        for (uint16_t k = 0; k < t[i].nns; k++)
            tg_sb_printf(b, " %s", s_(t[i].nss[k]));
        tg_sb_putc(b, '\n');
        snprintf(g, sizeof g, "%s[%u].sel", f, i);
        dump_sel(b, g, t[i].sel.reqs, t[i].sel.nreq);
        snprintf(g, sizeof g, "%s[%u].nssel", f, i);
        dump_sel(b, g, t[i].nssel.reqs, t[i].nssel.nreq);
    }
}

static void dump_spec(struct tg_sb *b, const struct tg_podspec *ps)
{
    char g[64];
    for (uint16_t i = 0; i < ps->nselector; i++)
        tg_sb_printf(b, "selector %s=%s\n", s_(ps->selector[i].key), s_(ps->selector[i].val));
    for (uint16_t i = 0; i < ps->ntol; i++)
        tg_sb_printf(b, "tol %s=%s op%u effect%u\n", s_(ps->tols[i].key), s_(ps->tols[i].val),
                     ps->tols[i].op, ps->tols[i].effect);
    for (uint16_t i = 0; i < ps->nterms; i++) {
        snprintf(g, sizeof g, "term[%u]", i);
        dump_sel(b, g, ps->terms[i].reqs, ps->terms[i].nreq);
    }
    for (uint16_t i = 0; i < ps->nspread; i++) {
        const struct tg_spread *c = &ps->spread[i];
        tg_sb_printf(b, "spread[%u]=%s skew%d min%d sel%u hard%u aff_ignore%u taints_honor%u\n", i,
                     s_(c->key), c->max_skew, c->min_domains, c->has_sel, c->hard,
                     c->affinity_ignore, c->taints_honor);
        snprintf(g, sizeof g, "spread[%u].sel", i);
        dump_sel(b, g, c->sel.reqs, c->sel.nreq);
    }
    for (uint16_t i = 0; i < ps->npvcs; i++)
        tg_sb_printf(b, "pvc %s\n", s_(ps->pvcs[i]));
    for (uint16_t i = 0; i < ps->nclaims; i++)
        tg_sb_printf(b, "claim %s=%s tmpl %s\n", s_(ps->claims[i].name), s_(ps->claims[i].claim),
                     s_(ps->claims[i].tmpl));
}

char *tg_pod_dump(const struct tg_pod *p)
{
    struct tg_sb b = {0};
    tg_sb_printf(&b, "key=%s name_off=%u uid=%s rv=%s ns=%s node=%s sched=%s group=%s api=%u\n",
                 p->key, p->name_off, p->uid, p->rv ? p->rv : "(null)", s_(p->ns), s_(p->node),
                 s_(p->sched), s_(p->group), p->group_api);
    tg_sb_printf(&b, "queue=%s prio_class=%s priority=%d/%u phase=%u deleting=%u started=%u "
                     "preempt_never=%u grace=%d/%u guaranteed=%u excl_cpus=%u\n",
                 s_(p->queue), s_(p->prio_class), p->priority, p->has_priority, p->phase,
                 p->deleting, p->started, p->preempt_never, p->grace_s, p->has_grace,
                 p->guaranteed, p->excl_cpus);
    tg_sb_printf(&b, "owner=%s/%s created=%lld start=%lld derived=%s rank=%llu\n",
                 s_(p->owner_kind), s_(p->owner_name), (long long)p->created_ms,
                 (long long)p->start_ms, s_(p->derived), (unsigned long long)p->rank);
    for (uint8_t i = 0; i < p->nreq; i++)
        tg_sb_printf(&b, "req %s=%lld\n", p->req[i].res == TG_RES_UNOFFERED ? "(unoffered)"
                                                                             : tg_res_name(p->req[i].res),
                     (long long)p->req[i].val);
    for (uint8_t i = 0; i < p->nunoffered; i++)
        tg_sb_printf(&b, "unoffered %s=%lld\n", p->unoffered[i].name, (long long)p->unoffered[i].val);
    /* by key text: ids follow the interner's history (a label's are counted, and reused) */
    struct tg_label *l = p->nlabels ? malloc(p->nlabels * sizeof *l) : NULL;
    if (p->nlabels && !l)
        b.oom = 1;
    for (uint16_t i = 0; l && i < p->nlabels; i++) {
        l[i] = p->labels[i];
        for (uint16_t k = i; k > 0 && strcmp(tg_str(l[k - 1].key), tg_str(l[k].key)) > 0; k--) {
            struct tg_label t = l[k];
            l[k] = l[k - 1];
            l[k - 1] = t;
        }
    }
    for (uint16_t i = 0; l && i < p->nlabels; i++)
        tg_sb_printf(&b, "label %s=%s\n", s_(l[i].key), s_(l[i].val));
    free(l);
    if (p->hints)
        tg_sb_printf(&b, "hints req=%s/%u pref=%s/%u min=%d\n", s_(p->hints->req),
                     p->hints->req_src, s_(p->hints->pref), p->hints->pref_src, p->hints->min);
    if (p->spec)
        dump_spec(&b, p->spec);
    if (p->cons) {
        const struct tg_podcons *c = p->cons;
        dump_terms(&b, "aff", c->aff, c->naff);
        dump_terms(&b, "anti", c->anti, c->nanti);
        dump_terms(&b, "paff", c->paff, c->npaff);
        dump_terms(&b, "panti", c->panti, c->npanti);
        for (uint16_t i = 0; i < c->nports; i++)
            tg_sb_printf(&b, "port %s:%u/%u\n", s_(c->ports[i].ip), c->ports[i].port,
                         c->ports[i].proto);
    }
    if (b.oom) {
        tg_sb_free(&b);
        return NULL;
    }
    char *out = strdup(tg_sb_str(&b));
    tg_sb_free(&b);
    return out;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9ull;
}

/* Field by field: struct padding never reaches the hash. */
static uint64_t hash_selreq(uint64_t h, const struct tg_selreq *r, uint32_t i)
{
    h = h * 1099511628211ull ^ (r->key * 7 + r->op + (uint64_t)r->num * 13 + i + r->is_field * 3u);
    return h ^ tg_hash(r->vals, r->nvals * sizeof *r->vals);
}

static int same_selreq(const struct tg_selreq *r, const struct tg_selreq *s)
{
    return r->key == s->key && r->op == s->op && r->is_field == s->is_field && r->num == s->num &&
           r->nvals == s->nvals && (!r->nvals || !memcmp(r->vals, s->vals, r->nvals * sizeof *r->vals));
}

static uint64_t hash_sel(uint64_t h, const struct tg_labelsel *s)
{
    h = mix(h, s->nreq);
    for (uint16_t i = 0; i < s->nreq; i++)
        h = hash_selreq(h, &s->reqs[i], i);
    return h;
}

static int same_sel(const struct tg_labelsel *a, const struct tg_labelsel *b)
{
    if (a->nreq != b->nreq)
        return 0;
    for (uint16_t i = 0; i < a->nreq; i++)
        if (!same_selreq(&a->reqs[i], &b->reqs[i]))
            return 0;
    return 1;
}

static int labelsel_copy(struct tg_labelsel *dst, const struct tg_labelsel *src)
{
    *dst = (struct tg_labelsel){0};
    if (!src->nreq)
        return 0;
    if (!(dst->reqs = calloc(src->nreq, sizeof *dst->reqs)))
        return TG_ENOMEM;
    for (uint16_t i = 0; i < src->nreq; i++) {
        dst->reqs[i] = src->reqs[i];
        dst->reqs[i].vals = NULL;
        dst->nreq++;
        if (src->reqs[i].nvals &&
            !(dst->reqs[i].vals = dup_mem(src->reqs[i].vals, src->reqs[i].nvals * sizeof *src->reqs[i].vals)))
            return TG_ENOMEM;
    }
    return 0;
}

uint64_t tg_podterm_hash(const struct tg_podterm *t, uint32_t ns)
{
    uint64_t h = mix(mix(ns, t->key), (uint64_t)t->weight << 2 | t->has_sel << 1 | t->has_nssel);
    h = hash_sel(hash_sel(h, &t->sel), &t->nssel);
    return mix(h, tg_hash(t->nss, t->nns * sizeof *t->nss));
}

int tg_podterm_equal(const struct tg_podterm *a, const struct tg_podterm *b)
{
    return a->key == b->key && a->weight == b->weight && a->has_sel == b->has_sel &&
           a->has_nssel == b->has_nssel && a->nns == b->nns &&
           (!a->nns || !memcmp(a->nss, b->nss, a->nns * sizeof *a->nss)) && same_sel(&a->sel, &b->sel) &&
           same_sel(&a->nssel, &b->nssel);
}

void tg_podterm_free(struct tg_podterm *t)
{
    tg_labelsel_free(&t->sel);
    tg_labelsel_free(&t->nssel);
    free(t->nss);
    t->nss = NULL;
    t->nns = 0;
}

int tg_podterm_copy(struct tg_podterm *dst, const struct tg_podterm *src)
{
    *dst = *src;
    dst->sel = dst->nssel = (struct tg_labelsel){0};
    dst->nss = NULL;
    dst->nns = 0;
    if (labelsel_copy(&dst->sel, &src->sel) || labelsel_copy(&dst->nssel, &src->nssel) ||
        (src->nns && !(dst->nss = dup_mem(src->nss, src->nns * sizeof *src->nss)))) {
        tg_podterm_free(dst);
        return TG_ENOMEM;
    }
    dst->nns = src->nns;
    return 0;
}

static void podterms_free(struct tg_podterm *t, uint16_t n)
{
    for (uint16_t i = 0; i < n; i++)
        tg_podterm_free(&t[i]);
    free(t);
}

void tg_podcons_free(struct tg_podcons **pc)
{
    struct tg_podcons *c = *pc;
    if (!c)
        return;
    podterms_free(c->aff, c->naff);
    podterms_free(c->anti, c->nanti);
    podterms_free(c->paff, c->npaff);
    podterms_free(c->panti, c->npanti);
    free(c->ports);
    free(c);
    *pc = NULL;
}

static int podterms_copy(struct tg_podterm **dst, const struct tg_podterm *src, uint16_t n)
{
    *dst = NULL;
    if (!n)
        return 0;
    if (!(*dst = calloc(n, sizeof **dst)))
        return TG_ENOMEM;
    for (uint16_t i = 0; i < n; i++)
        if (tg_podterm_copy(&(*dst)[i], &src[i]))
            return TG_ENOMEM;
    return 0;
}

struct tg_podcons *tg_podcons_clone(const struct tg_podcons *c)
{
    struct tg_podcons *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    *d = *c;
    d->aff = d->anti = d->paff = d->panti = NULL;
    d->ports = NULL;
    /* counts stay: a failed copy leaves NULL arrays the free path tolerates */
    if (podterms_copy(&d->aff, c->aff, c->naff) || podterms_copy(&d->anti, c->anti, c->nanti) ||
        podterms_copy(&d->paff, c->paff, c->npaff) || podterms_copy(&d->panti, c->panti, c->npanti) ||
        (c->nports && !(d->ports = dup_mem(c->ports, c->nports * sizeof *c->ports)))) {
        if (!d->aff) d->naff = 0;
        if (!d->anti) d->nanti = 0;
        if (!d->paff) d->npaff = 0;
        if (!d->panti) d->npanti = 0;
        tg_podcons_free(&d);
    }
    return d;
}

static int same_terms(const struct tg_podterm *a, const struct tg_podterm *b, uint16_t n)
{
    for (uint16_t i = 0; i < n; i++)
        if (!tg_podterm_equal(&a[i], &b[i]))
            return 0;
    return 1;
}

static int same_ports(const struct tg_hostport *a, const struct tg_hostport *b, uint16_t n)
{
    for (uint16_t i = 0; i < n; i++) /* field by field: the struct has padding */
        if (a[i].ip != b[i].ip || a[i].port != b[i].port || a[i].proto != b[i].proto)
            return 0;
    return 1;
}

int tg_podcons_equal(const struct tg_podcons *a, const struct tg_podcons *b)
{
    if (!a || !b)
        return a == b;
    return a->naff == b->naff && a->nanti == b->nanti && a->npaff == b->npaff &&
           a->npanti == b->npanti && a->nports == b->nports && same_ports(a->ports, b->ports, a->nports) &&
           same_terms(a->aff, b->aff, a->naff) && same_terms(a->anti, b->anti, a->nanti) &&
           same_terms(a->paff, b->paff, a->npaff) && same_terms(a->panti, b->panti, a->npanti);
}

static uint64_t hash_cons(uint64_t h, const struct tg_podcons *c)
{
    if (!c)
        return h;
    const struct tg_podterm *lists[4] = {c->aff, c->anti, c->paff, c->panti};
    const uint16_t ns[4] = {c->naff, c->nanti, c->npaff, c->npanti};
    for (int k = 0; k < 4; k++)
        for (uint16_t i = 0; i < ns[k]; i++)
            h = mix(h, tg_podterm_hash(&lists[k][i], (uint32_t)k));
    for (uint16_t i = 0; i < c->nports; i++)
        h = mix(h, (uint64_t)c->ports[i].ip << 32 | (uint64_t)c->ports[i].port << 8 | c->ports[i].proto);
    return h;
}

/* Field by field: struct padding never reaches the hash. */
uint64_t tg_pod_shape_hash(const struct tg_pod *p)
{
    uint64_t h = p->nreq;
    for (uint8_t i = 0; i < p->nreq; i++)
        h = mix(mix(h, p->req[i].res), (uint64_t)p->req[i].val);
    h = mix(h, (uint64_t)p->guaranteed << 16 | p->excl_cpus);
    h = hash_cons(h, p->cons);
    const struct tg_podspec *s = p->spec;
    if (!s)
        return h;
    h ^= tg_hash(s->selector, s->nselector * sizeof *s->selector) * 31;
    for (uint16_t i = 0; i < s->ntol; i++)
        h = mix(h, (uint64_t)s->tols[i].key << 32 | s->tols[i].val) ^
            (uint64_t)(s->tols[i].op << 8 | s->tols[i].effect);
    for (uint16_t i = 0; i < s->nterms; i++)
        for (uint16_t j = 0; j < s->terms[i].nreq; j++)
            h = hash_selreq(h, &s->terms[i].reqs[j], i);
    for (uint16_t i = 0; i < s->nspread; i++) {
        const struct tg_spread *c = &s->spread[i];
        h = mix(h, (uint64_t)c->key << 32 | (uint32_t)c->max_skew);
        h = mix(h, (uint64_t)(uint32_t)c->min_domains << 8 | c->has_sel << 3 | c->hard << 2 |
                       c->affinity_ignore << 1 | c->taints_honor);
        h = hash_sel(h, &c->sel);
    }
    h = mix(h, tg_hash(s->pvcs, s->npvcs * sizeof *s->pvcs));
    for (uint16_t i = 0; i < s->nclaims; i++)
        h = mix(h, (uint64_t)s->claims[i].name << 32 | s->claims[i].claim);
    return h;
}

static int same_spread(const struct tg_podspec *x, const struct tg_podspec *y)
{
    if (x->nspread != y->nspread)
        return 0;
    for (uint16_t i = 0; i < x->nspread; i++) {
        const struct tg_spread *a = &x->spread[i], *b = &y->spread[i];
        if (a->key != b->key || a->max_skew != b->max_skew || a->min_domains != b->min_domains ||
            a->has_sel != b->has_sel || a->hard != b->hard || a->affinity_ignore != b->affinity_ignore ||
            a->taints_honor != b->taints_honor || !same_sel(&a->sel, &b->sel))
            return 0;
    }
    return 1;
}

int tg_pod_same_shape(const struct tg_pod *a, const struct tg_pod *b)
{
    if (a->nreq != b->nreq || a->guaranteed != b->guaranteed || a->excl_cpus != b->excl_cpus)
        return 0;
    for (uint8_t i = 0; i < a->nreq; i++)
        if (a->req[i].res != b->req[i].res || a->req[i].val != b->req[i].val)
            return 0;
    if (!tg_podcons_equal(a->cons, b->cons))
        return 0;
    const struct tg_podspec *x = a->spec, *y = b->spec;
    if (!x || !y)
        return x == y;
    if (x->nselector != y->nselector || x->ntol != y->ntol || x->nterms != y->nterms ||
        x->npvcs != y->npvcs || x->nclaims != y->nclaims)
        return 0;
    if (x->nselector && memcmp(x->selector, y->selector, x->nselector * sizeof *x->selector))
        return 0;
    for (uint16_t i = 0; i < x->ntol; i++)
        if (x->tols[i].key != y->tols[i].key || x->tols[i].val != y->tols[i].val ||
            x->tols[i].op != y->tols[i].op || x->tols[i].effect != y->tols[i].effect)
            return 0;
    for (uint16_t i = 0; i < x->nterms; i++) {
        if (x->terms[i].nreq != y->terms[i].nreq)
            return 0;
        for (uint16_t j = 0; j < x->terms[i].nreq; j++)
            if (!same_selreq(&x->terms[i].reqs[j], &y->terms[i].reqs[j]))
                return 0;
    }
    if (x->npvcs && memcmp(x->pvcs, y->pvcs, x->npvcs * sizeof *x->pvcs))
        return 0;
    for (uint16_t i = 0; i < x->nclaims; i++)
        if (x->claims[i].name != y->claims[i].name || x->claims[i].claim != y->claims[i].claim ||
            x->claims[i].tmpl != y->claims[i].tmpl)
            return 0;
    return same_spread(x, y);
}

/* ---- Node --------------------------------------------------------------- */

int tg_node_decode(const cJSON *obj, struct tg_diag *d, struct tg_node_obj **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "Node", 0, &m))
        return TG_EPARSE;
    struct tg_node_obj *n = calloc(1, sizeof *n);
    int rc = TG_ENOMEM;
    if (!n)
        return rc;
    n->name = tg_intern(m.name);
    n->rv = dup_or_null(m.rv);
    if ((rc = decode_labels(&x, m.labels, "metadata.labels", &n->labels, &n->nlabels, 0)))
        goto fail;
    const char *topo = want_str(&x, m.annotations, TG_ANNOTATION_TOPOLOGY,
                                "metadata.annotations." TG_ANNOTATION_TOPOLOGY);
    if (topo && !(n->topology = strdup(topo)))
        goto fail;

    const cJSON *spec = want_map(&x, obj, "spec", "spec");
    n->unschedulable = (uint8_t)want_bool(&x, spec, "unschedulable", "spec.unschedulable");
    const cJSON *taints = want_list(&x, spec, "taints", "spec.taints");
    int nt = taints ? cJSON_GetArraySize(taints) : 0;
    if (nt && !(n->taints = calloc((size_t)nt, sizeof *n->taints)))
        goto fail;
    const cJSON *t;
    int ti = 0;
    cJSON_ArrayForEach(t, taints)
    {
        char path[64];
        snprintf(path, sizeof path, "spec.taints[%d]", ti++);
        const char *key = want_str(&x, t, "key", path);
        const char *val = want_str(&x, t, "value", path);
        const char *eff = want_str(&x, t, "effect", path);
        uint8_t e;
        if (!key || !*key || parse_effect(eff, &e) || e == TG_EFFECT_ANY) {
            err(&x, t, path, "needs a key and an effect (NoSchedule, PreferNoSchedule, NoExecute)");
            continue;
        }
        n->taints[n->ntaints++] = (struct tg_taint){tg_intern(key), tg_intern(val ? val : ""), e};
    }

    const cJSON *status = want_map(&x, obj, "status", "status");
    const cJSON *alloc = want_map(&x, status, "allocatable", "status.allocatable");
    const char *afield = "status.allocatable";
    if (!alloc) {
        alloc = want_map(&x, status, "capacity", "status.capacity");
        afield = "status.capacity";
    }
    struct tg_rq rq[MAX_RQ];
    int na = alloc ? decode_rqmap(&x, alloc, afield, rq, NULL) : 0;
    if (na > 0) {
        na = (int)tg_rq_normalize(rq, (uint32_t)na);
        if (!(n->alloc = malloc((size_t)na * sizeof *rq)))
            goto fail;
        memcpy(n->alloc, rq, (size_t)na * sizeof *rq);
        n->nalloc = (uint8_t)na;
    }
    n->ready = 1;
    const cJSON *conds = want_list(&x, status, "conditions", "status.conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const char *type = want_str(&x, c, "type", "status.conditions[].type");
        const char *st = want_str(&x, c, "status", "status.conditions[].status");
        if (type && !strcmp(type, "Ready"))
            n->ready = st && !strcmp(st, "True");
    }
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = n;
    return 0;
fail:
    tg_node_free(&n);
    return rc;
}

void tg_node_free(struct tg_node_obj **pn)
{
    struct tg_node_obj *n = *pn;
    if (!n)
        return;
    free(n->labels);
    free(n->taints);
    free(n->alloc);
    free(n->topology);
    free(n->rv);
    free(n);
    *pn = NULL;
}

static void *dup_mem(const void *p, size_t n)
{
    if (!n)
        return NULL;
    void *q = malloc(n);
    if (q)
        memcpy(q, p, n);
    return q;
}

struct tg_node_obj *tg_node_clone(const struct tg_node_obj *n)
{
    struct tg_node_obj *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = *n;
    c->labels = dup_mem(n->labels, n->nlabels * sizeof *n->labels);
    c->taints = dup_mem(n->taints, n->ntaints * sizeof *n->taints);
    c->alloc = dup_mem(n->alloc, n->nalloc * sizeof *n->alloc);
    c->topology = n->topology ? strdup(n->topology) : NULL;
    c->rv = n->rv ? strdup(n->rv) : NULL;
    if ((n->nlabels && !c->labels) || (n->ntaints && !c->taints) || (n->nalloc && !c->alloc) ||
        (n->topology && !c->topology) || (n->rv && !c->rv))
        tg_node_free(&c);
    return c;
}

/* ---- PodGroup ----------------------------------------------------------- */

const char *const tg_pg_loss_reason[TG_PGLOSS_N] = {"", "WaitingForReplacements", "KeptRunning",
                                                    "Evicted"};

/* The scheduler's own conditions in status.conditions: Complete (True) and
 * MemberLoss (True: its reason and lastTransitionTime). What does not parse
 * is taken as absent: the status is ours, not the user's input. */
static void podgroup_life(const cJSON *obj, struct tg_podgroup *g)
{
    const cJSON *c, *conds = get(get(obj, "status"), "conditions");
    if (!cJSON_IsArray(conds))
        return;
    cJSON_ArrayForEach(c, conds)
    {
        const cJSON *t = get(c, "type"), *st = get(c, "status"), *r = get(c, "reason");
        const cJSON *when = get(c, "lastTransitionTime");
        if (!cJSON_IsString(t) || !cJSON_IsString(st) || strcmp(st->valuestring, "True"))
            continue;
        if (!strcmp(t->valuestring, "Complete")) {
            g->complete = 1;
            if (!cJSON_IsString(when) || tg_parse_time(when->valuestring, &g->complete_since_ms))
                g->complete_since_ms = 0;
        }
        if (strcmp(t->valuestring, "MemberLoss") || !cJSON_IsString(r))
            continue;
        for (int k = TG_PGLOSS_WAITING; k < TG_PGLOSS_N; k++)
            if (!strcmp(r->valuestring, tg_pg_loss_reason[k]))
                g->loss = (uint8_t)k;
        if (!cJSON_IsString(when) || tg_parse_time(when->valuestring, &g->loss_since_ms))
            g->loss_since_ms = 0;
    }
}

/* One sub-group's topology: {required, preferred} level names. */
static void subgroup_topo(struct dec *x, const cJSON *o, const char *path, struct tg_subgroup *s)
{
    char f[96];
    snprintf(f, sizeof f, "%s.topology", path);
    const cJSON *topo = want_map(x, o, "topology", f);
    snprintf(f, sizeof f, "%s.topology.required", path);
    const char *req = want_str(x, topo, "required", f);
    snprintf(f, sizeof f, "%s.topology.preferred", path);
    const char *pref = want_str(x, topo, "preferred", f);
    s->required = req && *req ? tg_intern(req) : 0;
    s->preferred = pref && *pref ? tg_intern(pref) : 0;
}

/* spec.subGroups (name, minMember, topology) or spec.subGroupSize with
 * spec.subGroupTopology. Errors go to x; returns 0 or TG_ENOMEM. */
static int decode_subgroups(struct dec *x, const cJSON *spec, struct tg_podgroup *g)
{
    const cJSON *list = want_list(x, spec, "subGroups", "spec.subGroups");
    int64_t size = 0;
    want_int(x, spec, "subGroupSize", "spec.subGroupSize", 1, 1000000, &size);
    if (size) {
        g->sub_size = (int32_t)size;
        g->sub_topo.min_member = (int32_t)size;
        const cJSON *t = want_map(x, spec, "subGroupTopology", "spec.subGroupTopology");
        const char *req = want_str(x, t, "required", "spec.subGroupTopology.required");
        const char *pref = want_str(x, t, "preferred", "spec.subGroupTopology.preferred");
        g->sub_topo.required = req && *req ? tg_intern(req) : 0;
        g->sub_topo.preferred = pref && *pref ? tg_intern(pref) : 0;
    }
    int n = list ? cJSON_GetArraySize(list) : 0;
    if (!n)
        return 0;
    if (size) {
        err(x, list, "spec.subGroups", "cannot be given with spec.subGroupSize");
        return 0;
    }
    if (n > TG_MAX_SUBGROUPS) {
        err(x, list, "spec.subGroups", "has %d entries, more than %d", n, TG_MAX_SUBGROUPS);
        return 0;
    }
    if (!(g->subs = calloc((size_t)n, sizeof *g->subs)))
        return TG_ENOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        char path[64];
        snprintf(path, sizeof path, "spec.subGroups[%u]", g->nsubs);
        struct tg_subgroup *s = &g->subs[g->nsubs++];
        char f[96];
        snprintf(f, sizeof f, "%s.name", path);
        const char *name = cJSON_IsObject(it) ? want_str(x, it, "name", f) : NULL;
        if (!cJSON_IsObject(it))
            err(x, it, path, "must be a map, not %s", type_name(it));
        else if (!name || !*name)
            err(x, it, f, "is required");
        s->name = name && *name ? tg_intern(name) : 0;
        for (uint32_t k = 0; s->name && k + 1 < g->nsubs; k++)
            if (g->subs[k].name == s->name)
                err(x, get(it, "name"), f, "\"%s\" is listed twice", name);
        int64_t v = 1;
        snprintf(f, sizeof f, "%s.minMember", path);
        want_int(x, it, "minMember", f, 1, 1000000, &v);
        s->min_member = (int32_t)v;
        subgroup_topo(x, it, path, s);
    }
    return 0;
}

int tg_podgroup_decode(const cJSON *obj, struct tg_diag *d, struct tg_podgroup **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "PodGroup", 1, &m))
        return TG_EPARSE;
    struct tg_podgroup *g = calloc(1, sizeof *g);
    int rc = TG_ENOMEM;
    if (!g)
        return rc;
    g->key = make_key(m.ns, m.name, NULL);
    g->uid = dup_or_null(m.uid);
    g->rv = dup_or_null(m.rv);
    if (!g->key)
        goto fail;
    g->ns = tg_intern(m.ns);
    g->name = tg_intern(m.name);
    g->created_ms = m.created_ms;
    g->generation = tg__generation(get(obj, "metadata")); /* a spec edit wakes its gang */
    const cJSON *spec = want_map(&x, obj, "spec", "spec");
    int64_t v = 1;
    if (!want_int(&x, spec, "minMember", "spec.minMember", 1, 1000000, &v) && !x.bad)
        v = 1;
    g->min_member = (int32_t)v;
    v = 0;
    if (want_int(&x, spec, "maxMember", "spec.maxMember", 1, 1000000, &v) && v < g->min_member)
        err(&x, get(spec, "maxMember"), "spec.maxMember",
            "must be at least spec.minMember (%d), not %lld", g->min_member, (long long)v);
    g->max_member = (int32_t)v;
    v = 0;
    want_int(&x, spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", 0, 31536000, &v);
    g->timeout_s = (int32_t)v;
    if (want_int(&x, spec, "priority", "spec.priority", -2147483648LL, 2147483647LL, &v)) {
        g->priority = (int32_t)v;
        g->has_priority = 1;
    }
    const char *pc = want_str(&x, spec, "priorityClassName", "spec.priorityClassName");
    g->prio_class = pc ? tg_intern(pc) : 0;
    if ((g->queue = tg_queue_meta(get(obj, "metadata"), TG_QOF_WORKLOAD)) == TG_STR_NONE)
        goto fail;
    const cJSON *topo = want_map(&x, spec, "topology", "spec.topology");
    const char *req = want_str(&x, topo, "required", "spec.topology.required");
    const char *pref = want_str(&x, topo, "preferred", "spec.topology.preferred");
    const char *strat = want_str(&x, topo, "strategy", "spec.topology.strategy");
    g->required = req ? tg_intern(req) : 0;
    g->preferred = pref ? tg_intern(pref) : 0;
    if (!strat || !*strat)
        g->strategy = TG_STRATEGY_DEFAULT;
    else if (!strcmp(strat, "pack"))
        g->strategy = TG_STRATEGY_PACK;
    else if (!strcmp(strat, "spread"))
        g->strategy = TG_STRATEGY_SPREAD;
    else
        err(&x, get(topo, "strategy"), "spec.topology.strategy",
            "must be pack or spread, not \"%s\"", strat);
    podgroup_life(obj, g);
    if (decode_subgroups(&x, spec, g)) {
        rc = TG_ENOMEM;
        goto fail;
    }
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = g;
    return 0;
fail:
    tg_podgroup_free(&g);
    return rc;
}

void tg_podgroup_free(struct tg_podgroup **pg)
{
    struct tg_podgroup *g = *pg;
    if (!g)
        return;
    free(g->key);
    free(g->uid);
    free(g->rv);
    free(g->problem);
    free(g->subs);
    free(g->outer);
    for (uint32_t i = 0; i < g->nsgpol; i++) {
        tg_labelsel_free(&g->sgpol[i].sel);
        free(g->sgpol[i].keys);
    }
    free(g->sgpol);
    free(g);
    *pg = NULL;
}

/* ---- label selectors, PodDisruptionBudget ------------------------------- */

int tg_labelsel_match(const struct tg_labelsel *s, const struct tg_label *labels, uint32_t n)
{
    for (uint16_t i = 0; i < s->nreq; i++) {
        const struct tg_selreq *r = &s->reqs[i];
        uint32_t v = tg_labels_get(labels, n, r->key);
        int in = 0;
        for (uint16_t k = 0; v != TG_STR_NONE && k < r->nvals; k++)
            in |= r->vals[k] == v;
        switch (r->op) {
        case TG_SEL_IN: if (!in) return 0; break;
        case TG_SEL_NOTIN: if (in) return 0; break;
        case TG_SEL_EXISTS: if (v == TG_STR_NONE) return 0; break;
        case TG_SEL_DOESNOTEXIST: if (v != TG_STR_NONE) return 0; break;
        default: return 0;
        }
    }
    return 1;
}

void tg_labelsel_free(struct tg_labelsel *s)
{
    for (uint16_t i = 0; i < s->nreq; i++)
        free(s->reqs[i].vals);
    free(s->reqs);
    s->reqs = NULL;
    s->nreq = 0;
}

/* A metav1.LabelSelector at `field` of o into sel. Returns 0, -1 after
 * reporting, or TG_ENOMEM. */
static int decode_labelsel(struct dec *x, const cJSON *o, const char *field, struct tg_labelsel *sel)
{
    const cJSON *ml = want_map(x, o, "matchLabels", field);
    const cJSON *me = want_list(x, o, "matchExpressions", field);
    int n = (ml ? cJSON_GetArraySize(ml) : 0) + (me ? cJSON_GetArraySize(me) : 0);
    if (!n)
        return 0;
    if (!(sel->reqs = calloc((size_t)n, sizeof *sel->reqs)))
        return TG_ENOMEM;
    char path[300];
    const cJSON *it;
    cJSON_ArrayForEach(it, ml)
    {
        snprintf(path, sizeof path, "%s.matchLabels.%s", field, it->string);
        if (!cJSON_IsString(it)) {
            err(x, it, path, "must be a string, not %s", type_name(it));
            return -1;
        }
        struct tg_selreq *r = &sel->reqs[sel->nreq++];
        if (!(r->vals = malloc(sizeof *r->vals)))
            return TG_ENOMEM;
        r->key = tg_intern(it->string);
        r->op = TG_SEL_IN;
        r->vals[0] = tg_intern(it->valuestring);
        r->nvals = 1;
    }
    int i = 0;
    cJSON_ArrayForEach(it, me)
    {
        snprintf(path, sizeof path, "%s.matchExpressions[%d]", field, i++);
        struct tg_selreq *r = &sel->reqs[sel->nreq];
        int rc = decode_selreq(x, it, path, 0, r);
        sel->nreq++;
        if (rc)
            return rc;
        if (r->op == TG_SEL_GT || r->op == TG_SEL_LT) {
            err(x, it, path, "a label selector takes In, NotIn, Exists or DoesNotExist");
            return -1;
        }
    }
    return 0;
}

/* tg__labelsel_decode's reporter: each error becomes a problem of the pass. */
static void sel_problem(void *ud, int is_error, const cJSON *at, const char *what,
                        const char *field, const char *msg)
{
    (void)is_error, (void)what;
    tg__problem(ud, at, field, "%s", msg);
}

int tg__labelsel_decode(struct tg__dec *x, const cJSON *o, const char *field,
                        struct tg_labelsel *sel)
{
    struct tg_diag d = {.report = sel_problem, .ud = x};
    struct dec dx = {.d = &d};
    if (!cJSON_IsObject(o)) {
        tg__problem(x, o, field, "must be a map, not %s", type_name(o));
        return -1;
    }
    int rc = decode_labelsel(&dx, o, field, sel);
    return rc ? rc : dx.bad ? -1 : 0;
}

/* An IntOrString budget: 3 or "30%". Returns 1 when given, 0 when absent,
 * -1 after reporting. */
static int int_or_pct(struct dec *x, const cJSON *spec, const char *k, const char *field,
                      int32_t *v, uint8_t *pct)
{
    const cJSON *j = get(spec, k);
    if (!j)
        return 0;
    if (cJSON_IsNumber(j) && j->valuedouble >= 0 && j->valuedouble <= 1e9 &&
        j->valuedouble == (double)(int32_t)j->valuedouble) {
        *v = (int32_t)j->valuedouble;
        *pct = 0;
        return 1;
    }
    char *end = NULL;
    long n = cJSON_IsString(j) ? strtol(j->valuestring, &end, 10) : -1;
    if (cJSON_IsString(j) && end != j->valuestring && end[0] == '%' && !end[1] && n >= 0 &&
        n <= 100) {
        *v = (int32_t)n;
        *pct = 1;
        return 1;
    }
    err(x, j, field, "must be a non-negative integer or a percentage such as \"50%%\"");
    return -1;
}

int tg_pdb_decode(const cJSON *obj, struct tg_diag *d, struct tg_pdb **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "PodDisruptionBudget", 1, &m))
        return TG_EPARSE;
    struct tg_pdb *p = calloc(1, sizeof *p);
    int rc = TG_ENOMEM;
    if (!p)
        return rc;
    p->key = make_key(m.ns, m.name, NULL);
    p->uid = dup_or_null(m.uid);
    p->rv = dup_or_null(m.rv);
    if (!p->key)
        goto fail;
    p->ns = tg_intern(m.ns);
    const cJSON *spec = want_map(&x, obj, "spec", "spec");
    const cJSON *sel = want_map(&x, spec, "selector", "spec.selector");
    p->has_selector = sel != NULL;
    if (sel && (rc = decode_labelsel(&x, sel, "spec.selector", &p->sel)) == TG_ENOMEM)
        goto fail;
    int a = int_or_pct(&x, spec, "minAvailable", "spec.minAvailable", &p->min_available, &p->min_pct);
    int b = int_or_pct(&x, spec, "maxUnavailable", "spec.maxUnavailable", &p->max_unavailable,
                       &p->max_pct);
    p->has_min = a > 0;
    p->has_max = b > 0;
    if (p->has_min && p->has_max)
        err(&x, spec, "spec", "minAvailable and maxUnavailable are exclusive");
    const cJSON *status = want_map(&x, obj, "status", "status");
    int64_t v = 0;
    if (want_int(&x, status, "observedGeneration", "status.observedGeneration", 0, 1000000000000000LL, &v) && v > 0) {
        p->has_status = 1;
        v = 0;
        want_int(&x, status, "disruptionsAllowed", "status.disruptionsAllowed", 0, 2147483647LL, &v);
        p->disruptions_allowed = (int32_t)v;
    }
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = p;
    return 0;
fail:
    tg_pdb_free(&p);
    return rc == TG_ENOMEM ? rc : TG_EPARSE;
}

void tg_pdb_free(struct tg_pdb **pp)
{
    struct tg_pdb *p = *pp;
    if (!p)
        return;
    tg_labelsel_free(&p->sel);
    free(p->key);
    free(p->uid);
    free(p->rv);
    free(p);
    *pp = NULL;
}

/* ---- PriorityClass ---- */

int tg_prioclass_is_system(const char *name, int32_t value)
{
    return value > TG_PRIO_USER_MAX ||
           (name && !strncmp(name, TG_PRIO_SYSTEM_PREFIX, strlen(TG_PRIO_SYSTEM_PREFIX)));
}

int tg_prioclass_decode(const cJSON *obj, struct tg_diag *d, struct tg_prioclass **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "PriorityClass", 0, &m))
        return TG_EPARSE;
    int64_t v = 0;
    if (!want_int(&x, obj, "value", "value", INT32_MIN, INT32_MAX, &v) && !x.bad)
        err(&x, obj, "value", "is required");
    const char *pol = want_str(&x, obj, "preemptionPolicy", "preemptionPolicy");
    if (pol && strcmp(pol, "Never") && strcmp(pol, "PreemptLowerPriority"))
        err(&x, get(obj, "preemptionPolicy"), "preemptionPolicy",
            "must be PreemptLowerPriority or Never, not \"%s\"", pol);
    int def = want_bool(&x, obj, "globalDefault", "globalDefault");
    if (x.bad)
        return TG_EPARSE;
    struct tg_prioclass *p = calloc(1, sizeof *p);
    if (!p || !(p->name = strdup(m.name)) || (m.uid && !(p->uid = strdup(m.uid))) ||
        (m.rv && !(p->rv = strdup(m.rv)))) {
        tg_prioclass_free(&p);
        return TG_ENOMEM;
    }
    p->value = (int32_t)v;
    p->never = pol && !strcmp(pol, "Never");
    p->global_default = (uint8_t)def;
    *out = p;
    return 0;
}

void tg_prioclass_free(struct tg_prioclass **pp)
{
    struct tg_prioclass *p = *pp;
    if (!p)
        return;
    free(p->name);
    free(p->uid);
    free(p->rv);
    free(p);
    *pp = NULL;
}

int32_t tg_pdb_allowed(const struct tg_pdb *p, uint32_t healthy)
{
    if (p->has_status)
        return p->disruptions_allowed;
    int64_t h = healthy, allowed;
    if (p->has_min)
        allowed = h - (p->min_pct ? (h * p->min_available + 99) / 100 : p->min_available);
    else if (p->has_max)
        allowed = p->max_pct ? h * p->max_unavailable / 100 : p->max_unavailable;
    else
        allowed = h; /* a budget with neither allows everything */
    return allowed < 0 ? 0 : (int32_t)(allowed > INT32_MAX ? INT32_MAX : allowed);
}

/* ---- Namespace, PV, PVC, StorageClass, ResourceClaim ---------------------- */

int tg_namespace_decode(const cJSON *obj, struct tg_diag *d, struct tg_namespace **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "Namespace", 0, &m))
        return TG_EPARSE;
    struct tg_namespace *n = calloc(1, sizeof *n);
    int rc = TG_ENOMEM;
    if (!n)
        return rc;
    n->name = tg_intern(m.name);
    n->rv = dup_or_null(m.rv);
    if ((n->queue = tg_queue_meta(get(obj, "metadata"), TG_QOF_NAMESPACE)) == TG_STR_NONE)
        goto fail;
    if ((rc = decode_labels(&x, m.labels, "metadata.labels", &n->labels, &n->nlabels, 0)) == TG_ENOMEM)
        goto fail;
    uint32_t k = tg_intern("kubernetes.io/metadata.name");
    if (tg_labels_get(n->labels, n->nlabels, k) == TG_STR_NONE) {
        /* the API server always sets it; objects written by hand may not */
        struct tg_label *l = realloc(n->labels, (n->nlabels + 1u) * sizeof *l);
        if (!l) {
            rc = TG_ENOMEM;
            goto fail;
        }
        uint16_t i = n->nlabels;
        for (; i > 0 && l[i - 1].key > k; i--)
            l[i] = l[i - 1];
        l[i] = (struct tg_label){k, n->name};
        n->labels = l;
        n->nlabels++;
    }
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = n;
    return 0;
fail:
    tg_namespace_free(&n);
    return rc ? rc : TG_EPARSE;
}

void tg_namespace_free(struct tg_namespace **pn)
{
    struct tg_namespace *n = *pn;
    if (!n)
        return;
    free(n->labels);
    free(n->rv);
    free(n);
    *pn = NULL;
}

int tg_pv_decode(const cJSON *obj, struct tg_diag *d, struct tg_pv **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "PersistentVolume", 0, &m))
        return TG_EPARSE;
    struct tg_pv *v = calloc(1, sizeof *v);
    int rc = TG_ENOMEM;
    if (!v)
        return rc;
    v->name = tg_intern(m.name);
    v->rv = dup_or_null(m.rv);
    const cJSON *spec = want_map(&x, obj, "spec", "spec");
    const char *sc = want_str(&x, spec, "storageClassName", "spec.storageClassName");
    v->sc = sc ? tg_intern(sc) : 0;
    const cJSON *cr = want_map(&x, spec, "claimRef", "spec.claimRef");
    const char *cns = want_str(&x, cr, "namespace", "spec.claimRef.namespace");
    const char *cn = want_str(&x, cr, "name", "spec.claimRef.name");
    if (cn && *cn) {
        v->claim_ns = tg_intern(cns && *cns ? cns : "default");
        v->claim_name = tg_intern(cn);
    }
    const cJSON *na = want_map(&x, spec, "nodeAffinity", "spec.nodeAffinity");
    const cJSON *req = want_map(&x, na, "required", "spec.nodeAffinity.required");
    if (req) {
        v->has_affinity = 1;
        if ((rc = decode_nodeterms(&x, req, "spec.nodeAffinity.required", &v->terms, &v->nterms)) ==
            TG_ENOMEM)
            goto fail;
    }
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = v;
    return 0;
fail:
    tg_pv_free(&v);
    return rc == TG_ENOMEM ? rc : TG_EPARSE;
}

void tg_pv_free(struct tg_pv **pp)
{
    struct tg_pv *v = *pp;
    if (!v)
        return;
    nodeterms_free(v->terms, v->nterms);
    free(v->rv);
    free(v);
    *pp = NULL;
}

int tg_pvc_decode(const cJSON *obj, struct tg_diag *d, struct tg_pvc **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "PersistentVolumeClaim", 1, &m))
        return TG_EPARSE;
    struct tg_pvc *c = calloc(1, sizeof *c);
    int rc = TG_ENOMEM;
    if (!c)
        return rc;
    c->key = make_key(m.ns, m.name, NULL);
    c->rv = dup_or_null(m.rv);
    if (!c->key)
        goto fail;
    c->ns = tg_intern(m.ns);
    c->name = tg_intern(m.name);
    const cJSON *spec = want_map(&x, obj, "spec", "spec");
    const char *vn = want_str(&x, spec, "volumeName", "spec.volumeName");
    c->volume = vn && *vn ? tg_intern(vn) : 0;
    const char *sc = want_str(&x, spec, "storageClassName", "spec.storageClassName");
    c->has_sc = sc != NULL;
    c->sc = sc ? tg_intern(sc) : 0;
    const char *phase = want_str(&x, want_map(&x, obj, "status", "status"), "phase", "status.phase");
    c->bound = phase && !strcmp(phase, "Bound");
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = c;
    return 0;
fail:
    tg_pvc_free(&c);
    return rc;
}

void tg_pvc_free(struct tg_pvc **pp)
{
    struct tg_pvc *c = *pp;
    if (!c)
        return;
    free(c->key);
    free(c->rv);
    free(c);
    *pp = NULL;
}

int tg_sc_decode(const cJSON *obj, struct tg_diag *d, struct tg_storageclass **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "StorageClass", 0, &m))
        return TG_EPARSE;
    struct tg_storageclass *c = calloc(1, sizeof *c);
    int rc = TG_ENOMEM;
    if (!c)
        return rc;
    c->name = tg_intern(m.name);
    c->rv = dup_or_null(m.rv);
    const char *mode = want_str(&x, obj, "volumeBindingMode", "volumeBindingMode");
    if (mode && strcmp(mode, "Immediate") && strcmp(mode, "WaitForFirstConsumer"))
        err(&x, get(obj, "volumeBindingMode"), "volumeBindingMode",
            "must be Immediate or WaitForFirstConsumer, not \"%s\"", mode);
    c->wffc = mode && !strcmp(mode, "WaitForFirstConsumer");
    static const char *const defs[2] = {"storageclass.kubernetes.io/is-default-class",
                                        "storageclass.beta.kubernetes.io/is-default-class"};
    for (int i = 0; i < 2; i++) {
        const cJSON *a = get(m.annotations, defs[i]);
        c->is_default |= cJSON_IsString(a) && !strcmp(a->valuestring, "true");
    }
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = c;
    return 0;
fail:
    tg_sc_free(&c);
    return rc;
}

void tg_sc_free(struct tg_storageclass **pc)
{
    struct tg_storageclass *c = *pc;
    if (!c)
        return;
    free(c->rv);
    free(c);
    *pc = NULL;
}

int tg_rclaim_decode(const cJSON *obj, struct tg_diag *d, struct tg_rclaim **out)
{
    struct dec x = {.d = d};
    struct meta m;
    *out = NULL;
    if (decode_meta(&x, obj, "ResourceClaim", 1, &m))
        return TG_EPARSE;
    struct tg_rclaim *c = calloc(1, sizeof *c);
    int rc = TG_ENOMEM;
    if (!c)
        return rc;
    c->key = make_key(m.ns, m.name, NULL);
    c->rv = dup_or_null(m.rv);
    if (!c->key)
        goto fail;
    c->ns = tg_intern(m.ns);
    c->name = tg_intern(m.name);
    const cJSON *status = want_map(&x, obj, "status", "status");
    const cJSON *alloc = want_map(&x, status, "allocation", "status.allocation");
    c->allocated = alloc != NULL;
    const cJSON *ns = want_map(&x, alloc, "nodeSelector", "status.allocation.nodeSelector");
    if (ns && (rc = decode_nodeterms(&x, ns, "status.allocation.nodeSelector", &c->terms,
                                     &c->nterms)) == TG_ENOMEM)
        goto fail;
    if (x.bad) {
        rc = TG_EPARSE;
        goto fail;
    }
    *out = c;
    return 0;
fail:
    tg_rclaim_free(&c);
    return rc == TG_ENOMEM ? rc : TG_EPARSE;
}

void tg_rclaim_free(struct tg_rclaim **pc)
{
    struct tg_rclaim *c = *pc;
    if (!c)
        return;
    nodeterms_free(c->terms, c->nterms);
    free(c->key);
    free(c->rv);
    free(c);
    *pc = NULL;
}
