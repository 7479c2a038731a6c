/* The kubelet's pod-resources API: a unary gRPC client on libcurl (HTTP/2
 * with prior knowledge over the unix socket), a protobuf reader for the few
 * fields used, and the per-NUMA arithmetic. See agent/podres.h. */
#include "agent/podres.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/err.h"

#define MAX_RESPONSE (16u << 20)        /* a List of every pod on a big node fits easily */

/* ---- protobuf reader ---------------------------------------------------------- */

struct pb {
    const uint8_t *p, *end;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            return TG_EPARSE;
        uint8_t c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return TG_EPARSE;
}

/* Next field: its number and wire type. 1 when there is one, 0 at the end,
 * TG_EPARSE on a bad key. */
static int pb_next(struct pb *b, uint32_t *field, uint32_t *wt)
{
    uint64_t key;
    if (b->p == b->end)
        return 0;
    if (pb_varint(b, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
        return TG_EPARSE;
    *field = (uint32_t)(key >> 3);
    *wt = (uint32_t)(key & 7);
    return 1;
}

/* A length-delimited field's bytes as a sub-reader. */
static int pb_sub(struct pb *b, struct pb *sub)
{
    uint64_t n;
    if (pb_varint(b, &n) || n > (uint64_t)(b->end - b->p))
        return TG_EPARSE;
    sub->p = b->p;
    sub->end = b->p + n;
    b->p += n;
    return 0;
}

static int pb_skip(struct pb *b, uint32_t wt)
{
    uint64_t v;
    struct pb sub;
    switch (wt) {
    case 0: return pb_varint(b, &v);
    case 1: if (b->end - b->p < 8) return TG_EPARSE; b->p += 8; return 0;
    case 2: return pb_sub(b, &sub);
    case 5: if (b->end - b->p < 4) return TG_EPARSE; b->p += 4; return 0;
    default: return TG_EPARSE;
    }
}

/* A repeated int64 field, packed (wt 2) or not (wt 0): calls fn per value. */
static int pb_int64s(struct pb *b, uint32_t wt, void (*fn)(void *, int64_t), void *ud)
{
    uint64_t v;
    if (wt == 0) {
        if (pb_varint(b, &v))
            return TG_EPARSE;
        fn(ud, (int64_t)v);
        return 0;
    }
    struct pb sub;
    if (wt != 2 || pb_sub(b, &sub))
        return TG_EPARSE;
    while (sub.p < sub.end) {
        if (pb_varint(&sub, &v))
            return TG_EPARSE;
        fn(ud, (int64_t)v);
    }
    return 0;
}

/* ---- messages ------------------------------------------------------------------- */

static void set_bit(uint8_t *bits, int64_t cpu)
{
    if (cpu >= 0 && cpu < TG_PODRES_MAX_CPUS)
        bits[cpu / 8] |= (uint8_t)(1u << (cpu % 8));
}

static int has_bit(const uint8_t *bits, int64_t cpu)
{
    return cpu >= 0 && cpu < TG_PODRES_MAX_CPUS && (bits[cpu / 8] >> (cpu % 8)) & 1;
}

static void add_alloc_cpu(void *ud, int64_t cpu)
{
    struct tg_podres *p = ud;
    if (!has_bit(p->cpu_alloc, cpu) && cpu >= 0 && cpu < TG_PODRES_MAX_CPUS)
        p->nalloc_cpus++;
    set_bit(p->cpu_alloc, cpu);
}

struct cpus_seen {
    struct tg_podres *p;
    int any;
};

static void add_used_cpu(void *ud, int64_t cpu)
{
    struct cpus_seen *s = ud;
    set_bit(s->p->cpu_used, cpu);
    s->any = 1;
}

static struct tg_podres_numa *numa_slot(struct tg_podres *p, int64_t id)
{
    for (uint32_t i = 0; i < p->nnuma; i++)
        if (p->numa[i].id == id)
            return &p->numa[i];
    if (p->nnuma == TG_PODRES_MAX_NUMA || id < 0 || id > 4095)
        return NULL;
    p->numa[p->nnuma] = (struct tg_podres_numa){.id = (int32_t)id};
    return &p->numa[p->nnuma++];
}

/* TopologyInfo: its NUMA ids (at most max). */
static int parse_topology(struct pb *b, int64_t *ids, uint32_t max, uint32_t *n)
{
    uint32_t f, wt;
    int r;
    *n = 0;
    while ((r = pb_next(b, &f, &wt)) == 1) {
        struct pb node;
        if (f != 1 || wt != 2) {
            if (pb_skip(b, wt))
                return TG_EPARSE;
            continue;
        }
        if (pb_sub(b, &node))
            return TG_EPARSE;
        uint32_t nf, nwt;
        int64_t id = 0;                 /* proto3: an ID of 0 is not written */
        int rr;
        while ((rr = pb_next(&node, &nf, &nwt)) == 1) {
            uint64_t v;
            if (nf == 1 && nwt == 0) {
                if (pb_varint(&node, &v))
                    return TG_EPARSE;
                id = (int64_t)v;
            } else if (pb_skip(&node, nwt)) {
                return TG_EPARSE;
            }
        }
        if (rr < 0)
            return TG_EPARSE;
        if (id >= 0 && *n < max)
            ids[(*n)++] = id;
    }
    return r < 0 ? TG_EPARSE : 0;
}

/* ContainerMemory: type "memory" only (hugepages are another resource).
 * used != 0: pinned by a container (added to each of its NUMA nodes);
 * else allocatable. *pinned set when it counted. */
static int parse_memory(struct pb *b, struct tg_podres *p, int used, int *pinned)
{
    uint32_t f, wt;
    int r;
    uint64_t size = 0;
    int is_memory = 0;
    int64_t ids[TG_PODRES_MAX_NUMA];
    uint32_t nids = 0;
    while ((r = pb_next(b, &f, &wt)) == 1) {
        struct pb sub;
        if (f == 1 && wt == 2) {
            if (pb_sub(b, &sub))
                return TG_EPARSE;
            is_memory = (size_t)(sub.end - sub.p) == 6 && !memcmp(sub.p, "memory", 6);
        } else if (f == 2 && wt == 0) {
            if (pb_varint(b, &size))
                return TG_EPARSE;
        } else if (f == 3 && wt == 2) {
            if (pb_sub(b, &sub) || parse_topology(&sub, ids, TG_PODRES_MAX_NUMA, &nids))
                return TG_EPARSE;
        } else if (pb_skip(b, wt)) {
            return TG_EPARSE;
        }
    }
    if (r < 0)
        return TG_EPARSE;
    if (!is_memory || !size)
        return 0;
    for (uint32_t i = 0; i < nids; i++) {
        struct tg_podres_numa *s = numa_slot(p, ids[i]);
        if (!s)
            continue;
        uint64_t *sum = used ? &s->used : &s->alloc;
        *sum = *sum > UINT64_MAX - size ? UINT64_MAX : *sum + size;
    }
    if (pinned && nids)
        *pinned = 1;
    return 0;
}

int tg_podres_parse_allocatable(const uint8_t *msg, size_t n, struct tg_podres *p)
{
    struct pb b = {msg, msg + n};
    uint32_t f, wt;
    int r;
    while ((r = pb_next(&b, &f, &wt)) == 1) {
        struct pb sub;
        if (f == 2) {
            if (pb_int64s(&b, wt, add_alloc_cpu, p))
                return TG_EPARSE;
        } else if (f == 3 && wt == 2) {
            if (pb_sub(&b, &sub) || parse_memory(&sub, p, 0, NULL))
                return TG_EPARSE;
        } else if (pb_skip(&b, wt)) {
            return TG_EPARSE;
        }
    }
    return r < 0 ? TG_EPARSE : 0;
}

/* ContainerResources: exclusive CPUs (3) and pinned memory (4). */
static int parse_container(struct pb *b, struct tg_podres *p, int *holds)
{
    uint32_t f, wt;
    int r;
    struct cpus_seen seen = {p, 0};
    while ((r = pb_next(b, &f, &wt)) == 1) {
        struct pb sub;
        if (f == 3) {
            if (pb_int64s(b, wt, add_used_cpu, &seen))
                return TG_EPARSE;
        } else if (f == 4 && wt == 2) {
            if (pb_sub(b, &sub) || parse_memory(&sub, p, 1, holds))
                return TG_EPARSE;
        } else if (pb_skip(b, wt)) {
            return TG_EPARSE;
        }
    }
    if (seen.any)
        *holds = 1;
    return r < 0 ? TG_EPARSE : 0;
}

static void add_pod(struct tg_podres *p, const struct pb *ns, const struct pb *name)
{
    size_t a = (size_t)(ns->end - ns->p), c = (size_t)(name->end - name->p);
    if (!a || !c || a + 1 + c >= TG_TOPO_POD_KEY || p->pods_len + a + c + 2 > sizeof p->pods ||
        memchr(ns->p, 0, a) || memchr(name->p, 0, c) || memchr(ns->p, '/', a) ||
        memchr(name->p, '/', c))
        return;                         /* left out: the scheduler then counts it again; no
                                           pod's namespace or name holds a '/', and with one
                                           "a/b" + "c" and "a" + "b/c" would be one key */
    char *d = p->pods + p->pods_len;
    memcpy(d, ns->p, a);
    d[a] = '/';
    memcpy(d + a + 1, name->p, c);
    d[a + 1 + c] = 0;
    p->pods_len += (uint32_t)(a + c + 2);
    p->npods++;
}

static int parse_pod(struct pb *b, struct tg_podres *p)
{
    uint32_t f, wt;
    int r, holds = 0;
    struct pb name = {0}, ns = {0};
    while ((r = pb_next(b, &f, &wt)) == 1) {
        struct pb sub;
        if (f == 1 && wt == 2) {
            if (pb_sub(b, &name))
                return TG_EPARSE;
        } else if (f == 2 && wt == 2) {
            if (pb_sub(b, &ns))
                return TG_EPARSE;
        } else if (f == 3 && wt == 2) {
            if (pb_sub(b, &sub) || parse_container(&sub, p, &holds))
                return TG_EPARSE;
        } else if (pb_skip(b, wt)) {
            return TG_EPARSE;
        }
    }
    if (r < 0)
        return TG_EPARSE;
    if (holds && name.p && ns.p)
        add_pod(p, &ns, &name);
    return 0;
}

int tg_podres_parse_list(const uint8_t *msg, size_t n, struct tg_podres *p)
{
    struct pb b = {msg, msg + n};
    uint32_t f, wt;
    int r;
    while ((r = pb_next(&b, &f, &wt)) == 1) {
        struct pb sub;
        if (f == 1 && wt == 2) {
            if (pb_sub(&b, &sub) || parse_pod(&sub, p))
                return TG_EPARSE;
        } else if (pb_skip(&b, wt)) {
            return TG_EPARSE;
        }
    }
    return r < 0 ? TG_EPARSE : 0;
}

/* ---- gRPC over HTTP/2 on the unix socket ----------------------------------------- */

struct call {
    uint8_t *buf;
    size_t len, cap;
    int grpc_status;                    /* -1 until seen (header or trailer) */
    char grpc_message[128];
};

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct call *c = ud;
    size_t len = size * n;
    if (c->len + len > MAX_RESPONSE)
        return 0;                       /* aborts the transfer */
    if (c->len + len > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + len)
            cap *= 2;
        uint8_t *nb = realloc(c->buf, cap);
        if (!nb)
            return 0;
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, len);
    c->len += len;
    return len;
}

/* Headers and trailers alike: grpc-status and grpc-message. */
static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    struct call *c = ud;
    size_t len = size * n;
    if (len > 12 && !strncasecmp(data, "grpc-status:", 12)) {
        c->grpc_status = atoi(data + 12);
    } else if (len > 13 && !strncasecmp(data, "grpc-message:", 13)) {
        size_t m = len - 13;
        while (m && (data[13 + m - 1] == '\r' || data[13 + m - 1] == '\n'))
            m--;
        snprintf(c->grpc_message, sizeof c->grpc_message, "%.*s", (int)m, data + 13);
    }
    return len;
}

int tg_podres_unframe(const uint8_t *body, size_t len, size_t *n, const char **why)
{
    *n = 0;
    if (len < 5 || body[0] != 0) {
        *why = "no uncompressed gRPC message in the response";
        return TG_EPARSE;
    }
    uint32_t m = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 |
                 body[4];
    if (m > len - 5) {
        *why = "truncated gRPC message";
        return TG_EPARSE;
    }
    *n = m;
    return 0;
}

/* One unary call with an empty request; the response message in *msg, *n bytes
 * (malloc'd, the caller frees). */
static int grpc_call(const char *sock, const char *method, uint8_t **msg, size_t *n,
                     char *err, size_t errlen)
{
    static const char empty[5] = {0, 0, 0, 0, 0};
    struct call c = {.grpc_status = -1};
    struct curl_slist *h = NULL;
    char url[128], cerr[CURL_ERROR_SIZE] = "";
    const char *why;
    long status = 0;
    int rc = TG_EIO;
    CURL *e = curl_easy_init();
    *msg = NULL;
    *n = 0;
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return TG_ENOMEM;
    }
    snprintf(url, sizeof url, "http://localhost/v1.PodResourcesLister/%s", method);
    h = curl_slist_append(h, "content-type: application/grpc");
    h = curl_slist_append(h, "te: trailers");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, sock);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, empty);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 5L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &c);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
    CURLcode cc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s %s: %s", sock, method, cerr[0] ? cerr : curl_easy_strerror(cc));
    } else if (status != 200) {
        snprintf(err, errlen, "%s %s: HTTP status %ld", sock, method, status);
    } else if (c.grpc_status != 0) {
        snprintf(err, errlen, "%s %s: gRPC status %d %s", sock, method, c.grpc_status,
                 c.grpc_message);
    } else if ((rc = tg_podres_unframe(c.buf, c.len, n, &why)) != 0) {
        snprintf(err, errlen, "%s %s: %s", sock, method, why);
    } else {
        memmove(c.buf, c.buf + 5, *n);
        *msg = c.buf;
        c.buf = NULL;
    }
    free(c.buf);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    return rc;
}

int tg_podres_query(const char *sock, struct tg_podres *p, char *err, size_t errlen)
{
    struct stat st;
    uint8_t *msg = NULL;
    size_t n;
    memset(p, 0, sizeof *p);
    if (stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s: no kubelet pod-resources socket", sock);
        return TG_ENOENT;
    }
    int rc = grpc_call(sock, "GetAllocatableResources", &msg, &n, err, errlen);
    if (!rc && (rc = tg_podres_parse_allocatable(msg, n, p)))
        snprintf(err, errlen, "%s: malformed AllocatableResourcesResponse", sock);
    free(msg);
    msg = NULL;
    if (!rc && !(rc = grpc_call(sock, "List", &msg, &n, err, errlen)) &&
        (rc = tg_podres_parse_list(msg, n, p)))
        snprintf(err, errlen, "%s: malformed ListPodResourcesResponse", sock);
    free(msg);
    return rc;
}

/* ---- per NUMA node ------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void tg_podres_apply(const struct tg_podres *p, const struct tg_hw *hw, struct tg_topology *t)
{
    for (uint32_t i = 0; i < t->nnuma; i++) {
        struct tg_topo_numa *x = &t->numa[i];
        x->known = 0;
        x->kcpus = 0;
        x->kmem = 0;
        if (p->nalloc_cpus) {
            uint32_t free = 0;
            for (uint32_t cpu = 0; cpu < TG_PODRES_MAX_CPUS && cpu < TG_HW_MAX_PUS; cpu++)
                if (hw->pu_home[cpu] == x->id && has_bit(p->cpu_alloc, cpu) &&
                    !has_bit(p->cpu_used, cpu))
                    free++;
            x->kcpus = free > x->cpus ? x->cpus : free;
            x->known |= TG_TOPO_KCPUS;
        }
    }
    for (uint32_t k = 0; k < p->nnuma; k++) {
        const struct tg_podres_numa *s = &p->numa[k];
        uint64_t free = s->alloc > s->used ? s->alloc - s->used : 0;
        if (free > TG_TOPO_MAX_BYTES)
            free = TG_TOPO_MAX_BYTES;   /* what the annotation carries (fuzz_podres) */
        int i = tg_topo_numa_index(t, s->id);
        if (i >= 0) {
            t->numa[i].kmem = free;
            t->numa[i].known |= TG_TOPO_KMEM;
            continue;
        }
        for (uint32_t m = 0; m < t->nmem; m++)
            if (t->mem[m].id == s->id) {
                t->mem[m].kmem = free;
                t->mem[m].known |= TG_TOPO_KMEM;
            }
    }
    /* Sorted, so the same pods always give the same annotation. */
    const char *keys[TG_TOPO_KPODS_BYTES / 4];
    uint32_t n = 0;
    for (const char *k = p->pods; k < p->pods + p->pods_len && n < p->npods; k += strlen(k) + 1)
        keys[n++] = k;
    qsort(keys, n, sizeof keys[0], cmp_str);
    t->nkpods = t->kpods_len = 0;
    for (uint32_t i = 0; i < n; i++)
        tg_topo_add_kpod(t, keys[i]);
}
