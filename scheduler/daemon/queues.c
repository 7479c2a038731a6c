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
 * The condition is server-side applied (field manager topogang-queue-valid):
 * other controllers' conditions stay.
 *
 * The leader also writes each topogang.io Queue's status numbers: allocated
 * and fairShare per resource, waitingGangs and runningGangs (a merge patch
 * of those keys only, when changed, at most once per TG_QSTATUS_MIN_MS;
 * tg__queues_status_tick from housekeeping). KAI's and Volcano's Queues get
 * none: their controllers own their status.
 *
 * Only the leader tells (a new leader tells what it finds once more).
 * Nothing else is written, and nothing but the Queue is touched: the engine
 * learns the set through tg__queues_current and on_change (internal.h). */
#include "scheduler/daemon/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "informer/api.h"
#include "model/quantity.h"
#include "model/resources.h"
#include "scheduler/engine.h"
#include "scheduler/fairshare.h"
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
    struct tg_hmap written;             /* our Queues' status: name -> struct srec * */
    uint64_t status_ticks;              /* tg__queues_status_tick calls that wrote */
    int status_resync;                  /* a write failed, or a new leader: write all again */
    uint32_t *gangs;                    /* owned: waiting[ngangs], then running[ngangs] */
    uint32_t ngangs;
    int64_t gangs_ms;                   /* when counted */
    const struct tg_fairshare *gangs_fs; /* the tree counted (its indexes) */
    uint64_t gangs_gen;                 /* tg__queues_generation then */
};

static void forget_all(struct tg__queues *q);
static void forget_written(struct tg__queues *q, int all);

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
    forget_written(q, 1);
    free(q->gangs);
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

/* The Valid condition of a topogang.io Queue's status, server-side applied
 * (the CRD keys conditions by type): other controllers' conditions stay. */
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
    if (!b.len || tg_api_apply_status_of(q->client, tg_queue_apis[TG_QAPI_TOPOGANG].api_version,
                                         "Queue", "queues", NULL, tg_str(o->name),
                                         "topogang-queue-valid", tg_sb_str(&b), on_written,
                                         "Queue status patch"))
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
    q->status_resync = 1; /* ... and writes each status once */
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

/* ---- the status of topogang.io Queues -------------------------------------------------- */

/* What was last written to one Queue's status (name -> struct srec *). */
struct srec {
    char *name;                         /* owned: the map key */
    cJSON *last;                        /* owned: the status last written */
    int64_t at_ms;                      /* when */
    char uid[80];                       /* of the Queue written: a new one is written afresh */
    uint64_t seen;                      /* the tick that last found the queue */
};

/* An amount for a status map (tg_res_amount): whole units of a resource
 * other than cpu and memory as a JSON integer ("nvidia.com/gpu": 8),
 * anything else as a Kubernetes quantity string ("cpu": "1500m", "memory":
 * "64Gi", a fractional GPU "500m"): what the CRD's int-or-string admits. */
static cJSON *status_amount(uint32_t r, double v)
{
    char buf[64];
    if (tg_res_amount(r, v, TG_AMOUNT_QUANTITY, buf, sizeof buf))
        return cJSON_CreateNumber(v);
    return cJSON_CreateString(buf);
}

cJSON *tg__queues_status_build(const struct tg_fairshare *fs, uint32_t q, uint32_t waiting,
                               uint32_t running)
{
    cJSON *st = cJSON_CreateObject();
    cJSON *alloc = cJSON_AddObjectToObject(st, "allocated");
    cJSON *share = cJSON_AddObjectToObject(st, "fairShare");
    if (!alloc || !share) {
        cJSON_Delete(st);
        return NULL;
    }
    for (uint32_t r = 0; r < tg_res_count(); r++) {
        if (!tg_fairshare_shown(fs, q, r))
            continue;
        cJSON_AddItemToObject(alloc, tg_res_name(r), status_amount(r, tg_fairshare_allocated(fs, q, r)));
        cJSON_AddItemToObject(share, tg_res_name(r), status_amount(r, tg_fairshare_share(fs, q, r)));
    }
    cJSON_AddNumberToObject(st, "waitingGangs", waiting);
    cJSON_AddNumberToObject(st, "runningGangs", running);
    return st;
}

/* Into patch's map `key`: null for each resource that `last` had and `now`
 * has not (a JSON merge patch removes a key only when told null). */
static void null_dropped(cJSON *patch, const cJSON *last, const char *key)
{
    const cJSON *was = cJSON_GetObjectItemCaseSensitive(last, key);
    cJSON *now = cJSON_GetObjectItemCaseSensitive(patch, key), *it;
    cJSON_ArrayForEach(it, was)
        if (!cJSON_GetObjectItemCaseSensitive(now, it->string))
            cJSON_AddNullToObject(now, it->string);
}

static struct srec *srec_get(struct tg__queues *q, const char *name)
{
    uint64_t v;
    if (tg_hmap_get(&q->written, name, strlen(name), &v))
        return (struct srec *)(uintptr_t)v;
    struct srec *s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(name)) ||
        tg_hmap_put(&q->written, s->name, strlen(s->name), (uint64_t)(uintptr_t)s)) {
        if (s)
            free(s->name);
        free(s);
        return NULL;
    }
    return s;
}

static void srec_free(struct srec *s)
{
    cJSON_Delete(s->last);
    free(s->name);
    free(s);
}

char *tg__queues_status_due(struct tg__queues *q, const char *name, const char *uid, cJSON *st,
                            int64_t now_ms)
{
    struct srec *s = st ? srec_get(q, name) : NULL;
    if (s)
        s->seen = q->status_ticks;
    if (s && strcmp(s->uid, uid ? uid : "")) { /* deleted and made again: its status is empty */
        cJSON_Delete(s->last);
        s->last = NULL;
        snprintf(s->uid, sizeof s->uid, "%s", uid ? uid : "");
    }
    if (!s || (s->last && cJSON_Compare(s->last, st, 1)) ||
        (s->last && now_ms - s->at_ms < TG_QSTATUS_MIN_MS)) {
        cJSON_Delete(st);
        return NULL;
    }
    cJSON *patch = cJSON_Duplicate(st, 1);
    if (patch && s->last) {
        null_dropped(patch, s->last, "allocated");
        null_dropped(patch, s->last, "fairShare");
    }
    char *text = patch ? cJSON_PrintUnformatted(patch) : NULL;
    cJSON_Delete(patch);
    if (!text) {
        cJSON_Delete(st);
        return NULL;
    }
    cJSON_Delete(s->last);
    s->last = st;
    s->at_ms = now_ms;
    return text;
}

/* Forgets what was written: all of it (all != 0), else the Queues the last
 * tick did not find (deleted). */
static void forget_written(struct tg__queues *q, int all)
{
    uint32_t pos = 0;
    const struct tg_hslot *sl;
    if (all) {
        while ((sl = tg_hmap_next(&q->written, &pos)))
            srec_free((struct srec *)(uintptr_t)sl->val);
        tg_hmap_free(&q->written);
        memset(&q->written, 0, sizeof q->written);
        return;
    }
    while ((sl = tg_hmap_next(&q->written, &pos))) {
        struct srec *s = (struct srec *)(uintptr_t)sl->val;
        if (s->seen == q->status_ticks)
            continue;
        tg_hmap_del(&q->written, s->name, strlen(s->name));
        srec_free(s);
        pos = 0; /* the map moved under the walk: start again (deletions are rare) */
    }
}

static void on_status_written(void *ud, const struct tg_resp *r)
{
    struct tg__queues *q = ud;
    if (!r->err || r->status == 404)
        return;
    tg_warn(C, "Queue status patch failed: %s (HTTP %ld); every Queue's status is written again",
            r->msg ? r->msg : tg_strerror(r->err), r->status);
    q->status_resync = 1;
}

const uint32_t *tg__queues_gangs(struct tg__queues *q, const struct tg_engine *e, int64_t now_ms,
                                 uint32_t *n)
{
    const struct tg_fairshare *fs = tg_engine_fairshare(e);
    *n = 0;
    if (!fs)
        return NULL;
    uint32_t nq = tg_fairshare_count(fs);
    if (q->gangs && q->gangs_fs == fs && q->gangs_gen == q->generation && q->ngangs == nq &&
        now_ms - q->gangs_ms < TG_QSTATUS_MIN_MS) {
        *n = nq;
        return q->gangs;
    }
    uint32_t *v = realloc(q->gangs, (2 * (size_t)nq + 1) * sizeof *v);
    if (!v)
        return NULL;
    q->gangs = v;
    if (tg_engine_queue_gangs(e, v, v + nq, nq)) {
        q->ngangs = 0;
        return NULL;
    }
    q->ngangs = nq;
    q->gangs_fs = fs;
    q->gangs_gen = q->generation;
    q->gangs_ms = now_ms;
    *n = nq;
    return v;
}

void tg__queues_status_tick(struct tg__queues *q, const struct tg_engine *e, int64_t now_ms)
{
    const struct tg_fairshare *fs = tg_engine_fairshare(e);
    const struct tg_store *ours =
        q->inf ? tg_informer_store(q->inf, TG_INF_OF_QUEUE_API(TG_QAPI_TOPOGANG)) : NULL;
    if (!q->leading || !fs || !ours || !q->client)
        return;
    if (q->status_resync) {
        forget_written(q, 1);
        q->status_resync = 0;
    }
    uint32_t n;
    const uint32_t *cnt = tg__queues_gangs(q, e, now_ms, &n);
    if (!cnt)
        return;
    q->status_ticks++;
    for (uint32_t i = 0; i < n; i++) {
        const char *name = tg_str(tg_fairshare_name(fs, i));
        const struct tg_queue_obj *o = tg_store_get(ours, name);
        if (!o)
            continue; /* KAI's or Volcano's: their controllers own the status */
        char *patch = tg__queues_status_due(q, name, o->uid,
                                            tg__queues_status_build(fs, i, cnt[i], cnt[n + i]), now_ms);
        if (patch && tg_api_patch_status_of(q->client, tg_queue_apis[TG_QAPI_TOPOGANG].api_version,
                                            "queues", NULL, name, patch, 0, on_status_written, q)) {
            tg_warn(C, "Queue %s: cannot write its status", name);
            q->status_resync = 1; /* what was recorded as written was not */
        }
        free(patch);
    }
    forget_written(q, 0);
}
