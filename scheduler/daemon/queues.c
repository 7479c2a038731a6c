/* The tenant Queues the daemon reads (issue 19; model/queues.h): the three
 * APIs' collections (informer TG_INF_QUEUES_*, discovered like the peers'
 * PodGroups: an API whose CRD is not installed is simply not watched), kept
 * decoded in the informer's stores, and what is wrong with each told to its
 * owner once per change:
 *
 *   Queue spec problem  ->  Warning Event "InvalidQueue" regarding the Queue
 *                           (in namespace "default", as Kubernetes files Events
 *                           of cluster-scoped objects), note "field: why";
 *                           a topogang.io Queue also gets the status condition
 *                           Valid=False (reason InvalidSpec, the same message),
 *                           and Valid=True once a later version is clean.
 *
 * Only the leader tells (a new leader tells what it finds once more).
 * Nothing else is written, and nothing but the Queue is touched: the engine
 * learns the set through tg__queues_current and on_change (internal.h). */
#include "scheduler/daemon/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "informer/api.h"
#include "scheduler/daemon/metrics.h"
#include "util/err.h"
#include "util/hmap.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/strbuf.h"

#define C "queues"

/* What was last told about one Queue: "api/name" -> its problem and uid. */
struct qrec {
    char key[300];
    char *problem;                      /* owned; NULL: reported clean (ours only) */
    char uid[80];
};

struct tg__queues {
    struct tg_client *client;
    const struct tg_informer *inf;      /* its stores hold the decoded Queues */
    struct tg_hmap told;                /* "api/name" -> struct qrec * */
    uint64_t generation;
    int leading;                        /* only the leader tells (tg__queues_leading) */
    void (*on_change)(void *ud);
    void *ud;
};

static void forget_all(struct tg__queues *q);

int tg__queues_new(struct tg_client *c, struct tg__queues **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return TG_ENOMEM;
    (*out)->client = c;
    return 0;
}

void tg__queues_free(struct tg__queues **pq)
{
    struct tg__queues *q = *pq;
    if (!q)
        return;
    forget_all(q);
    free(q);
    *pq = NULL;
}

void tg__queues_set_informer(struct tg__queues *q, const struct tg_informer *inf)
{
    q->inf = inf;
}

void tg__queues_on_change(struct tg__queues *q, void (*fn)(void *ud), void *ud)
{
    q->on_change = fn;
    q->ud = ud;
}

uint64_t tg__queues_generation(const struct tg__queues *q)
{
    return q->generation;
}

static void on_written(void *ud, const struct tg_resp *r)
{
    const char *what = ud;
    if (r->err && r->status != 404)
        tg_warn(C, "%s failed: %s (HTTP %ld)", what, r->msg ? r->msg : tg_strerror(r->err),
                r->status);
}

/* The Valid condition of a topogang.io Queue's status. */
static void write_condition(struct tg__queues *q, const struct tg_queue_obj *o)
{
    char ts[40];
    tg_format_microtime(tg__wall_ms(), ts, sizeof ts);
    ts[19] = 'Z', ts[20] = 0; /* a metav1.Time: whole seconds */
    struct tg_sb b = {0};
    tg_sb_printf(&b, "{\"conditions\":[{\"type\":\"Valid\",\"status\":\"%s\",\"reason\":\"%s\","
                     "\"message\":", o->problem ? "False" : "True",
                 o->problem ? "InvalidSpec" : "Valid");
    tg_sb_json_str(&b, o->problem ? o->problem : "the spec is valid");
    tg_sb_printf(&b, ",\"lastTransitionTime\":\"%s\"}]}", ts);
    if (!b.len || tg_api_patch_status_of(q->client, tg_queue_apis[TG_QAPI_TOPOGANG].api_version,
                                         "queues", NULL, tg_str(o->name), tg_sb_str(&b), 0,
                                         on_written, "Queue status patch"))
        tg_warn(C, "Queue %s: cannot write its status", tg_str(o->name));
    tg_sb_free(&b);
}

static void write_event(struct tg__queues *q, const struct tg_queue_obj *o)
{
    char note[700];
    snprintf(note, sizeof note, "Queue %s (%s): %s; the rest of its spec is used", tg_str(o->name),
             tg_queue_apis[o->api].api_version, o->problem);
    struct tg_event_spec e = {.ns = "default", .kind = "Queue",
                              .api_version = tg_queue_apis[o->api].api_version,
                              .name = tg_str(o->name), .uid = o->uid, .type = "Warning",
                              .reason = "InvalidQueue", .action = "Reading", .note = note,
                              .cluster_scoped = 1};
    if (tg_api_create_event(q->client, &e, on_written, "Event") == 0)
        tg_metrics_inc(TG_M_EVENTS, 1);
}

/* Tells the Queue's owner what changed about its problem since last told. */
static void tell(struct tg__queues *q, const struct tg_queue_obj *o)
{
    if (!q->leading)
        return;
    char key[300];
    int kl = snprintf(key, sizeof key, "%d/%s", o->api, tg_str(o->name));
    kl = kl < (int)sizeof key ? kl : (int)sizeof key - 1; /* names are <= 253: never cut */
    uint64_t v = 0;
    struct qrec *r = tg_hmap_get(&q->told, key, (size_t)kl, &v) ? (struct qrec *)(uintptr_t)v : NULL;
    const char *uid = o->uid ? o->uid : "";
    int same_obj = r && !strcmp(r->uid, uid);
    if (!o->problem && (!r || (!r->problem && same_obj)))
        return; /* clean, and nothing wrong was ever said */
    if (o->problem && same_obj && r->problem && !strcmp(r->problem, o->problem))
        return; /* said already */
    if (!r) {
        if (!(r = calloc(1, sizeof *r)))
            return;
        snprintf(r->key, sizeof r->key, "%s", key);
        if (tg_hmap_put(&q->told, r->key, strlen(r->key), (uint64_t)(uintptr_t)r)) {
            free(r);
            return;
        }
    }
    free(r->problem);
    r->problem = o->problem ? strdup(o->problem) : NULL;
    snprintf(r->uid, sizeof r->uid, "%s", uid);
    if (o->problem) {
        tg_warn(C, "Queue %s (%s): %s", tg_str(o->name), tg_queue_apis[o->api].api_version,
                o->problem);
        write_event(q, o);
    }
    if (o->api == TG_QAPI_TOPOGANG && (o->problem || same_obj))
        write_condition(q, o);
}

static void forget_all(struct tg__queues *q)
{
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&q->told, &pos))) {
        struct qrec *r = (struct qrec *)(uintptr_t)s->val;
        free(r->problem);
        free(r);
    }
    tg_hmap_free(&q->told);
    memset(&q->told, 0, sizeof q->told);
}

void tg__queues_leading(struct tg__queues *q, int leading)
{
    int was = q->leading;
    q->leading = leading;
    if (!leading || was)
        return;
    forget_all(q); /* a new leader tells each problem it finds once */
    for (int api = 0; q->inf && api < TG_QAPI_N; api++) {
        const struct tg_store *s = tg_informer_store(q->inf, TG_INF_OF_QUEUE_API(api));
        for (uint32_t i = 0; s && i < tg_store_len(s); i++)
            tell(q, tg_store_at(s, i));
    }
}

static void forget(struct tg__queues *q, const struct tg_queue_obj *o)
{
    char key[300];
    int kl = snprintf(key, sizeof key, "%d/%s", o->api, tg_str(o->name));
    kl = kl < (int)sizeof key ? kl : (int)sizeof key - 1; /* names are <= 253: never cut */
    uint64_t v;
    if (tg_hmap_get(&q->told, key, (size_t)kl, &v)) {
        struct qrec *r = (struct qrec *)(uintptr_t)v;
        tg_hmap_del(&q->told, key, (size_t)kl);
        free(r->problem);
        free(r);
    }
}

static void changed(struct tg__queues *q)
{
    q->generation++;
    if (q->on_change)
        q->on_change(q->ud);
}

static void queue_set(void *ud, const void *obj)
{
    tell(ud, obj);
    changed(ud);
}

static void queue_update(void *ud, const void *old, const void *obj)
{
    (void)old;
    queue_set(ud, obj);
}

static void queue_delete(void *ud, const void *obj)
{
    forget(ud, obj);
    changed(ud);
}

void tg__queues_wire(struct tg__queues *q, struct tg_informer_opts *io)
{
    for (int api = 0; api < TG_QAPI_N; api++) {
        struct tg_handlers *h = &io->h[TG_INF_OF_QUEUE_API(api)];
        void (*failed)(void *, const char *) = h->on_decode_failed;
        *h = (struct tg_handlers){queue_set, queue_update, queue_delete, NULL, q};
        h->on_decode_failed = failed;
    }
    io->optional |= TG_INF_QUEUE_KINDS;
}

int tg__queues_current(const struct tg__queues *q, const struct tg_queue_obj ***out)
{
    const struct tg_store *st[TG_QAPI_N] = {0};
    for (int api = 0; q->inf && api < TG_QAPI_N; api++)
        st[api] = tg_informer_store(q->inf, TG_INF_OF_QUEUE_API(api));
    return tg__queues_merge(st, out);
}

int tg__queues_merge(const struct tg_store *const st[TG_QAPI_N], const struct tg_queue_obj ***out)
{
    *out = NULL;
    uint32_t n = 0, cap = 0;
    for (int api = 0; api < TG_QAPI_N; api++)
        cap += st[api] ? tg_store_len(st[api]) : 0;
    if (!cap)
        return 0;
    const struct tg_queue_obj **v = malloc(cap * sizeof *v);
    struct tg_imap seen = {0};
    if (!v)
        return TG_ENOMEM;
    for (int api = 0; api < TG_QAPI_N; api++) { /* topogang.io, KAI, Volcano: first wins */
        for (uint32_t i = 0; st[api] && i < tg_store_len(st[api]); i++) {
            const struct tg_queue_obj *o = tg_store_at(st[api], i);
            uint64_t dummy;
            if (tg_imap_get(&seen, o->name, &dummy))
                continue;
            if (tg_imap_put(&seen, o->name, 1)) {
                free(v);
                tg_imap_free(&seen);
                return TG_ENOMEM;
            }
            v[n++] = o;
        }
    }
    tg_imap_free(&seen);
    *out = v;
    return (int)n;
}
