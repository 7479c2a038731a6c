/* What users see of a gang: its PodGroup's status and Events.
 *
 * Whose status: topogang's own PodGroup (below) and the upstream
 * scheduling.k8s.io PodGroup, whose status is meant for the scheduler: its
 * PodGroupScheduled condition (True, reason Scheduled, once the gang is
 * bound; else False, reason Unschedulable, with the reason in numbers; never
 * back to False once True, as kube-scheduler does), a strategic merge patch
 * that leaves its other conditions alone. Never a Volcano, KAI or
 * scheduler-plugins PodGroup's status (their own controllers write it), nor
 * anything of a workload whose pods form a derived gang: those get Events
 * only (the regarding object: the peer's PodGroup, the workload).
 *
 * Status (a merge patch of podgroups/status, only when it changed, at most
 * one patch in flight per gang so that two patches cannot land out of order):
 *   phase        Pending | Scheduling (binds take over a second) | Scheduled
 *                | Unschedulable (timed out, or its PodGroup is invalid)
 *   scheduled    members bound (our own binds count as soon as they succeed)
 *   placement    level and domain of the last placement
 *   nominated    {domain, victims}: preemption in progress, its victims leaving
 *   reservation  {domain, since}: a domain kept for this starving head gang
 *   the Scheduled condition: reason Scheduled, Binding, Unschedulable,
 *                Timeout, Preempting, Nominated or Reserved, and as message
 *                the reason in numbers (the text `simulate` prints).
 * Events, each distinct one at most once a minute per gang ("Waiting" counts
 * members as they arrive: once a minute whatever the count): Scheduled,
 * FailedScheduling, Waiting, Timeout, Reserved, RolledBack, InvalidTopology,
 * PodGroupNotFound. The regarding object is the PodGroup, else the pod of a
 * gang of one, else (no PodGroup object) the first pending member; how a
 * gang's binds ended is told also when its record went meanwhile (a gang of
 * one seen bound before the bind's answer): the Event regards its pod.
 * (Preempting and Preempted are evict.c's: they go to other objects too.)
 *
 * Per-gang state lives in the engine's gang record (grec->user), created on
 * the first report and freed with the record (tg__report_gang_freed). */
#include "scheduler/daemon/internal.h"
#include "scheduler/daemon/metrics.h"
#include "scheduler/elastic.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C "scheduler"

enum { EVENT_REPEAT_MS = 60000 };

enum phase { PH_NONE, PH_PENDING, PH_SCHEDULING, PH_SCHEDULED, PH_UNSCHEDULABLE };
static const char *const phase_name[] = {"", "Pending", "Scheduling", "Scheduled", "Unschedulable"};

/* One gang's report state (grec->user). */
struct rgang {
    uint8_t phase;                      /* enum phase */
    uint8_t binding;                    /* binds in flight (between the binder's notes) */
    uint8_t patch_inflight;
    const char *cond;                   /* the Scheduled condition's reason (static) */
    char *msg;                          /* its message */
    char *level, *domain;               /* placement */
    char *nom_domain;                   /* nominated: domain, NULL none */
    uint32_t nom_victims;
    char *resv_domain;                  /* reservation: domain, NULL none */
    int64_t resv_since_ms;
    char *sig;                          /* last status sent or queued, without times */
    char *want;                         /* a status body waiting for the patch in flight */
    char event_sig[96];                 /* last Event: reason + message hash */
    int64_t event_ms;
    uint8_t up_status;                  /* upstream condition written: 0 none, 1 False, 2 True */
    int64_t up_since_ms;                /* ... since (its lastTransitionTime) */
    /* The gang's life (scheduler/loss.h), as conditions Complete and
     * MemberLoss; until set here, what the PodGroup's status says is
     * written back as it is. */
    uint8_t complete_set, complete, loss_set, loss;  /* loss: enum tg_pg_loss */
    int64_t complete_ms, loss_ms;
    char *loss_msg;
};

/* A status patch in flight; found again by gang key (the record may go). */
struct tg__rpatch {
    struct tg__report *r;
    struct tg__rpatch *next, *prev;
    char key[];
};

static void set_str(char **dst, const char *s)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        return; /* out of memory: the old text stays */
    free(*dst);
    *dst = d;
}

static void rgang_free(struct rgang *rg)
{
    free(rg->msg);
    free(rg->level);
    free(rg->domain);
    free(rg->nom_domain);
    free(rg->resv_domain);
    free(rg->sig);
    free(rg->want);
    free(rg->loss_msg);
    free(rg);
}

static struct rgang *state_of(struct tg_grec *g)
{
    if (!g->user)
        g->user = calloc(1, sizeof(struct rgang));
    return g->user;
}

void tg__report_init(struct tg__report *r, struct tg_engine *e, struct tg_client *c)
{
    memset(r, 0, sizeof *r);
    r->engine = e;
    r->client = c;
}

void tg__report_free(struct tg__report *r)
{
    while (r->patches) {
        struct tg__rpatch *p = r->patches;
        r->patches = p->next;
        free(p);
    }
}

void tg__report_gang_freed(struct tg__report *r, struct tg_grec *g)
{
    (void)r;
    const struct rgang *rg = g->user;
    if (rg)
        tg_debug(C, "gang %s: record freed (phase %s, status patch in flight %u, waiting %s)",
                 g->key, phase_name[rg->phase], rg->patch_inflight, rg->want ? "yes" : "no");
    if (g->user)
        rgang_free(g->user);
    g->user = NULL;
}

int tg__report_seen(const struct tg_grec *g)
{
    return g->user != NULL;
}

/* ---- status ------------------------------------------------------------------------------- */

static void on_written(void *ud, const struct tg_resp *r)
{
    const char *what = ud;
    if (r->err && r->status != 404)
        tg_warn(C, "%s failed: %s (HTTP %ld)", what, r->msg ? r->msg : tg_strerror(r->err), r->status);
}

static void send_status(struct tg__report *r, struct tg_grec *g);

/* A status write could not be made or got no answer: what was sent is
 * forgotten, so that tg__report_tick writes the status again. */
static void status_lost(struct tg__report *r, struct rgang *rg)
{
    free(rg->sig);
    rg->sig = NULL;
    r->lost++;
}

static void on_status_patched(void *ud, const struct tg_resp *resp)
{
    struct tg__rpatch *p = ud;
    struct tg__report *r = p->r;
    on_written("PodGroup status patch", resp);
    if (p->prev)
        p->prev->next = p->next;
    else
        r->patches = p->next;
    if (p->next)
        p->next->prev = p->prev;
    struct tg_grec *g = tg_engine_gang(r->engine, p->key);
    tg_debug(C, "gang %s: status patch answered: HTTP %ld%s", p->key, resp->status,
             !g ? " (its record went)" : !g->user ? " (its record is new)" : "");
    free(p);
    if (g && g->user) {
        ((struct rgang *)g->user)->patch_inflight = 0;
        if (resp->err && (resp->status == 0 || resp->status == 429 || resp->status >= 500))
            status_lost(r, g->user);
        send_status(r, g);
    }
}

/* Whose status this scheduler writes (see the top). */
static int status_ours(const struct tg_grec *g)
{
    return g->pg && !g->derived && (g->pg->api == TG_PG_TOPOGANG || g->pg->api == TG_PG_UPSTREAM);
}

int tg__report_status_ours(const struct tg_grec *g)
{
    return status_ours(g);
}

int tg__report_complete(const struct tg_grec *g)
{
    const struct rgang *rg = g->user;
    if (rg && rg->complete_set)
        return rg->complete;
    return g->pg && (g->pg->api == TG_PG_UPSTREAM ? g->pg->sched_true : g->pg->complete);
}

/* Sends the wanted status unless a patch of this gang is in flight. */
static void send_status(struct tg__report *r, struct tg_grec *g)
{
    struct rgang *rg = g->user;
    if (rg->patch_inflight && rg->want)
        tg_debug(C, "gang %s: status held behind the patch in flight", g->key);
    if (rg->patch_inflight || !rg->want || !status_ours(g))
        return;
    if (tg_client_fenced(r->client)) {
        status_lost(r, rg); /* not the leader: written again if it leads again */
        return;
    }
    size_t kl = strlen(g->key);
    struct tg__rpatch *p = malloc(sizeof *p + kl + 1);
    if (!p) {
        status_lost(r, rg);
        return;
    }
    p->r = r;
    memcpy(p->key, g->key, kl + 1);
    const char *ns = tg_str(g->pg->ns), *name = tg_str(g->pg->name);
    int rc = g->pg->api == TG_PG_UPSTREAM
                 ? tg_api_patch_status_of(r->client, tg_pg_apis[TG_PG_UPSTREAM].api_version,
                                          "podgroups", ns, name, rg->want, 1, on_status_patched, p)
                 : tg_api_patch_podgroup_status(r->client, ns, name, rg->want, on_status_patched, p);
    if (rc) {
        free(p);
        status_lost(r, rg);
        return;
    }
    p->prev = NULL;
    p->next = r->patches;
    if (p->next)
        p->next->prev = p;
    r->patches = p;
    tg_debug(C, "gang %s: status patch sent: %s", g->key, rg->want);
    free(rg->want);
    rg->want = NULL;
    rg->patch_inflight = 1;
    tg_metrics_inc(TG_M_STATUS_PATCHES, 1);
}

/* Members bound: every member record, but while binds run only those the
 * informer has seen bound (the binder's successes count when it is done). */
static uint32_t scheduled(const struct tg_grec *g, const struct rgang *rg)
{
    if (!rg->binding)
        return g->nmembers;
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->nmembers; i++)
        n += g->members[i]->kind == TG_USAGE_BOUND;
    return n;
}

static void json_domain(struct tg_sb *b, const char *field, const char *domain)
{
    tg_sb_printf(b, ",\"%s\":{\"domain\":", field);
    tg_sb_json_str(b, domain);
}

static void condition(struct tg_sb *b, const char *type, const char *reason, int64_t since_ms,
                      const char *msg)
{
    char when[40];
    tg_format_microtime(since_ms / 1000 * 1000, when, sizeof when);
    strcpy(strchr(when, '.'), "Z");
    tg_sb_printf(b, ",{\"type\":\"%s\",\"status\":\"True\",\"reason\":\"%s\","
                    "\"lastTransitionTime\":\"%s\",\"message\":", type, reason, when);
    tg_sb_json_str(b, msg);
    tg_sb_putc(b, '}');
}

/* Complete and MemberLoss, when True (scheduler/loss.h): set here, else as
 * the PodGroup's status has them (a merge patch replaces the whole list). */
static void life_conditions(const struct tg_grec *g, const struct rgang *rg, struct tg_sb *b)
{
    int complete = rg->complete_set ? rg->complete : g->pg->complete;
    int64_t since = rg->complete_set ? rg->complete_ms : g->pg->complete_since_ms;
    if (complete)
        condition(b, "Complete", "MinMemberBound", since,
                  "the gang reached minMember bound: its members are running work, never "
                  "rolled back");
    int loss = rg->loss_set ? rg->loss : g->pg->loss;
    since = rg->loss_set ? rg->loss_ms : g->pg->loss_since_ms;
    if (loss > TG_PGLOSS_NONE && loss < TG_PGLOSS_N)
        condition(b, "MemberLoss", tg_pg_loss_reason[loss], since,
                  rg->loss_set && rg->loss_msg ? rg->loss_msg : "recorded by an earlier leader");
}

/* The status, with the Scheduled condition's time when `when` is given
 * (without it: the signature compared to decide whether to write). */
static void status_sig(const struct tg_grec *g, const struct rgang *rg, struct tg_sb *b,
                       const char *when)
{
    int ok = rg->phase == PH_SCHEDULED;
    tg_sb_printf(b, "{\"phase\":\"%s\",\"scheduled\":%u", phase_name[rg->phase], scheduled(g, rg));
    if (rg->level) {
        tg_sb_puts(b, ",\"placement\":{\"level\":");
        tg_sb_json_str(b, rg->level);
        tg_sb_puts(b, ",\"domain\":");
        tg_sb_json_str(b, rg->domain ? rg->domain : "");
        tg_sb_putc(b, '}');
    }
    if (rg->nom_domain) {
        json_domain(b, "nominated", rg->nom_domain);
        tg_sb_printf(b, ",\"victims\":%u}", rg->nom_victims);
    } else {
        tg_sb_puts(b, ",\"nominated\":null");
    }
    if (rg->resv_domain) {
        char since[40];
        tg_format_microtime(rg->resv_since_ms / 1000 * 1000, since, sizeof since);
        strcpy(strchr(since, '.'), "Z"); /* metav1.Time has seconds only */
        json_domain(b, "reservation", rg->resv_domain);
        tg_sb_printf(b, ",\"since\":\"%s\"}", since);
    } else {
        tg_sb_puts(b, ",\"reservation\":null");
    }
    tg_sb_printf(b, ",\"conditions\":[{\"type\":\"Scheduled\",\"status\":\"%s\",\"reason\":\"%s\","
                    "\"message\":", ok ? "True" : "False", rg->cond ? rg->cond : "Unschedulable");
    tg_sb_json_str(b, rg->msg && rg->msg[0] ? rg->msg : ok ? "all members bound" : "waiting");
    if (when)
        tg_sb_printf(b, ",\"lastTransitionTime\":\"%s\"", when);
    tg_sb_putc(b, '}');
    life_conditions(g, rg, b);
    tg_sb_puts(b, "]}");
}

/* The upstream PodGroup's status: its PodGroupScheduled condition. 0, or
 * -1 when nothing is to be written (binding, or False after True). */
static int upstream_status(struct tg_grec *g, struct rgang *rg, int rewrite)
{
    int ok = rg->phase == PH_SCHEDULED;
    if (rg->phase == PH_SCHEDULING || (!ok && (rg->up_status == 2 || g->pg->sched_true)))
        return -1;
    struct tg_sb b = {0};
    tg_sb_printf(&b, "{\"conditions\":[{\"type\":\"PodGroupScheduled\",\"status\":\"%s\","
                     "\"reason\":\"%s\",\"message\":", ok ? "True" : "False",
                 ok ? "Scheduled" : "Unschedulable");
    tg_sb_json_str(&b, rg->msg && rg->msg[0] ? rg->msg : ok ? "all members bound" : "waiting");
    if (!b.oom && (rewrite || !rg->sig || strcmp(rg->sig, tg_sb_str(&b)))) {
        set_str(&rg->sig, tg_sb_str(&b));
        if (rg->up_status != 1 + ok) {
            rg->up_status = (uint8_t)(1 + ok);
            rg->up_since_ms = tg__wall_ms() / 1000 * 1000;
        }
        char when[40];
        tg_format_microtime(rg->up_since_ms, when, sizeof when);
        strcpy(strchr(when, '.'), "Z");
        tg_sb_printf(&b, ",\"lastTransitionTime\":\"%s\",\"observedGeneration\":%lld}]}", when,
                     (long long)g->pg->generation);
        if (!b.oom)
            set_str(&rg->want, tg_sb_str(&b));
    }
    tg_sb_free(&b);
    return 0;
}

/* Writes g's status when it differs from the last one (always if rewrite). */
static void write_status(struct tg__report *r, struct tg_grec *g, int rewrite)
{
    struct rgang *rg = g->user;
    if (!rg || !status_ours(g) || rg->phase == PH_NONE)
        return;
    if (g->pg->api == TG_PG_UPSTREAM) {
        if (!upstream_status(g, rg, rewrite))
            send_status(r, g);
        return;
    }
    struct tg_sb b = {0}, body = {0};
    status_sig(g, rg, &b, NULL);
    if (b.oom) {
        status_lost(r, rg);
    } else if (rewrite || !rg->sig || strcmp(rg->sig, tg_sb_str(&b))) {
        set_str(&rg->sig, tg_sb_str(&b));
        char when[40];
        tg_format_microtime(tg__wall_ms() / 1000 * 1000, when, sizeof when);
        strcpy(strchr(when, '.'), "Z");
        status_sig(g, rg, &body, when);
        if (!body.oom)
            set_str(&rg->want, tg_sb_str(&body));
        if (body.oom || !rg->want || strcmp(rg->want, tg_sb_str(&body)))
            status_lost(r, rg); /* not kept: made again at the next tick */
        else
            send_status(r, g);
    }
    tg_sb_free(&b);
    tg_sb_free(&body);
}

void tg__report_tick(struct tg__report *r)
{
    if (!r->lost || tg_client_fenced(r->client))
        return;
    r->lost = 0;
    uint32_t pos = 0;
    struct tg_grec *g;
    while ((g = tg_engine_gang_next(r->engine, &pos))) {
        struct rgang *rg = g->user;
        if (rg && !rg->patch_inflight && !rg->binding && (!rg->sig || rg->want))
            write_status(r, g, 0);
    }
}

void tg__report_refresh(struct tg__report *r, const char *gang_key, int rewrite)
{
    struct tg_grec *g = tg_engine_gang(r->engine, gang_key);
    if (g && g->user && (rewrite || !((struct rgang *)g->user)->binding))
        write_status(r, g, rewrite);
}

/* ---- Events ----------------------------------------------------------------------------------- */

/* An Event's action: what the scheduler was doing when it happened. */
static const char *action_of(const char *reason)
{
    return !strcmp(reason, "Scheduled") ? "Binding" : "Scheduling";
}

/* The Event regards pod name of namespace e->ns. */
static void regard_pod(struct tg_event_spec *e, const char *name, const char *uid)
{
    e->kind = "Pod";
    e->api_version = "v1";
    e->name = name;
    e->uid = uid;
}

/* The object an Event about g regards: its PodGroup (any API's), the
 * workload of a derived gang (av: room for its apiVersion), else a pod: the
 * first pending member, or the member of the binder's note bn (a gang of one
 * whose pod the informer has already seen bound). 0, or -1 when there is none. */
static int regarding(const struct tg_grec *g, const struct tg__bind_note *bn,
                     struct tg_event_spec *e, char *av, size_t n)
{
    e->ns = tg_str(g->ns);
    if (g->derived && g->wl) {
        const struct tg_wl_kindinfo *k = &tg_wl_kinds[g->wl->kind];
        snprintf(av, n, "%s/%s", k->group, k->version);
        e->kind = k->kind;
        e->api_version = av;
        e->name = tg_str(g->wl->name);
        e->uid = g->wl->uid;
        return 0;
    }
    if (g->pg && !g->derived) {
        e->kind = "PodGroup";
        e->api_version = tg_pg_apis[g->pg->api].api_version;
        e->name = tg_str(g->pg->name);
        e->uid = g->pg->uid;
        return 0;
    }
    if (g->npending) { /* a gang of one: its pod; no PodGroup object: the first pending member */
        regard_pod(e, tg_pod_name(g->pending[0]), g->pending[0]->uid);
        return 0;
    }
    if (!bn || !bn->pod_name)
        return -1;
    regard_pod(e, bn->pod_name, bn->pod_uid);
    return 0;
}

/* Sends an Event unless the same one went out less than a minute ago (bn:
 * the binder's note it follows, or NULL). */
/* Scheduled Events, one per gang of one in a burst of single pods, wait
 * behind Bindings (client.h); the others are rare and go at once. */
static int high_volume(const char *reason)
{
    return !strcmp(reason, "Scheduled");
}

/* A rollback's note bn (its told set) hears that its Event was not sent
 * (err: why). */
static void told_unsent(const struct tg__bind_note *bn, int err)
{
    if (bn && bn->told) {
        struct tg_resp none = {.err = err, .msg = "not sent"};
        bn->told(bn->told_ud, &none);
    }
}

/* Creates Event e. A rollback's note bn (its told set) hears the Event's
 * answer, or at once when it could not be sent. */
static int send_event(struct tg__report *r, const struct tg_event_spec *e,
                      const struct tg__bind_note *bn)
{
    int told = bn && bn->told;
    int rc = tg_api_create_event(r->client, e, told ? bn->told : on_written,
                                 told ? bn->told_ud : (void *)"Event");
    if (rc)
        told_unsent(bn, rc);
    return rc;
}

static void event_of(struct tg__report *r, struct tg_grec *g, const struct tg__bind_note *bn,
                     const char *type, const char *reason, const char *note)
{
    struct rgang *rg = g->user;
    char sig[96];
    /* "Waiting" counts members as they arrive: one per minute is enough */
    snprintf(sig, sizeof sig, "%s:%016llx", reason,
             !strcmp(reason, "Waiting") ? 0ull : (unsigned long long)tg_hash(note, strlen(note)));
    int64_t now = tg__now_ms(); /* a duration: not the wall clock */
    if (!strcmp(sig, rg->event_sig) && now - rg->event_ms < EVENT_REPEAT_MS) {
        told_unsent(bn, TG_EEXIST); /* the same went a moment ago */
        return;
    }
    struct tg_event_spec e = {.type = type, .reason = reason, .note = note,
                              .action = action_of(reason), .background = high_volume(reason)};
    char av[200];
    if (regarding(g, bn, &e, av, sizeof av)) {
        told_unsent(bn, TG_ENOENT);
        return;
    }
    if (send_event(r, &e, bn) == 0) {
        /* only one that went: an Event that could not be made goes with the next report */
        snprintf(rg->event_sig, sizeof rg->event_sig, "%s", sig);
        rg->event_ms = now;
        tg_metrics_inc(TG_M_EVENTS, 1);
    }
}

static void event(struct tg__report *r, struct tg_grec *g, const char *type, const char *reason,
                  const char *note)
{
    event_of(r, g, NULL, type, reason, note);
}

/* ---- decisions ------------------------------------------------------------------------------- */

static void set_nomination(struct tg__report *r, struct tg_grec *g, const struct tg_decision *d)
{
    struct rgang *rg = g->user;
    const struct tg_nomination *n = g->q.nom;
    uint32_t dom = d->preemption.domain != TG_NONE ? d->preemption.domain : n ? n->domain : TG_NONE;
    if (dom == TG_NONE) {
        set_str(&rg->nom_domain, NULL);
        return;
    }
    char path[512];
    set_str(&rg->nom_domain, tg_tree_path(&tg_engine_cluster(r->engine)->tree, dom, path, sizeof path));
    rg->nom_victims = 0;
    for (uint32_t i = 0; n && i < n->nvictims; i++)
        rg->nom_victims += tg_cluster_usage(tg_engine_cluster(r->engine), n->victims[i]) != NULL;
}

static void set_reservation(struct tg__report *r, struct tg_grec *g)
{
    struct rgang *rg = g->user;
    const struct tg_reservation *v = tg_engine_reservation(r->engine, g);
    char path[512];
    set_str(&rg->resv_domain,
            v ? tg_tree_path(&tg_engine_cluster(r->engine)->tree, v->domain, path, sizeof path) : NULL);
    rg->resv_since_ms = v ? v->since_ms : 0;
}

static void placed(struct tg__report *r, struct tg_grec *g, const struct tg_decision *d)
{
    struct rgang *rg = g->user;
    const struct tg_policy *p = tg_engine_policy(r->engine);
    char path[512];
    set_str(&rg->level, d->result.level ? p->levels[d->result.level - 1].name : "cluster");
    set_str(&rg->domain, tg_tree_path(&tg_engine_cluster(r->engine)->tree, d->result.domain, path,
                                      sizeof path));
    set_str(&rg->nom_domain, NULL);
    set_str(&rg->resv_domain, NULL);
    /* a status held behind a patch in flight says it waits: outdated now */
    set_str(&rg->want, NULL);
    if (!d->view.nbound && status_ours(g) && g->pg->api == TG_PG_TOPOGANG &&
        (tg__report_complete(g) || g->pg->loss)) {
        /* a new life: what the last one recorded goes before its binds, so
         * that binds cut short now read as half-bound (scheduler/loss.h) */
        rg->complete_set = rg->loss_set = 1;
        rg->complete = rg->loss = 0;
        rg->phase = PH_SCHEDULING;
        rg->cond = "Binding";
        write_status(r, g, 0);
        return;
    }
    /* no write now: the binder's notes say how the binds go */
}

static void unplaced(struct tg__report *r, struct tg_grec *g, const struct tg_decision *d)
{
    struct rgang *rg = g->user;
    set_str(&rg->msg, d->reason);
    set_reservation(r, g);
    if (d->kind != TG_D_PREEMPT && d->kind != TG_D_NOMINATED)
        set_str(&rg->nom_domain, NULL);
    rg->phase = g->timed_out ? PH_UNSCHEDULABLE : PH_PENDING;
    if (d->kind == TG_D_UNSCHEDULABLE && tg_elastic_growing(g)) {
        /* elastic (scheduler/elastic.h): it runs; its extras wait for room */
        rg->phase = PH_SCHEDULED;
        rg->cond = "Scheduled";
        write_status(r, g, 0);
        event(r, g, "Normal", "Waiting", d->reason);
        return;
    }
    switch (d->kind) {
    case TG_D_WAITING:
        rg->cond = g->timed_out ? "Timeout" : "Unschedulable";
        write_status(r, g, 0);
        event(r, g, g->timed_out ? "Warning" : "Normal", g->timed_out ? "Timeout" : "Waiting", d->reason);
        return;
    case TG_D_PREEMPT:
    case TG_D_NOMINATED:
        set_nomination(r, g, d);
        rg->cond = d->kind == TG_D_PREEMPT ? "Preempting" : "Nominated";
        write_status(r, g, 0); /* the Preempting Event is evict.c's */
        return;
    default:
        break;
    }
    rg->cond = g->timed_out ? "Timeout" : d->reserved ? "Reserved" : "Unschedulable";
    write_status(r, g, 0);
    const char *reason = g->timed_out ? "Timeout" : d->reservation_new ? "Reserved" : "FailedScheduling";
    event(r, g, d->reservation_new && !g->timed_out ? "Normal" : "Warning", reason, d->reason);
}

static void invalid(struct tg__report *r, struct tg_grec *g, const struct tg_decision *d)
{
    struct rgang *rg = g->user;
    set_str(&rg->msg, d->reason);
    if (!g->pg) {
        event(r, g, "Warning", "PodGroupNotFound", d->reason);
        return;
    }
    rg->phase = PH_UNSCHEDULABLE;
    rg->cond = "Unschedulable";
    write_status(r, g, 0);
    /* a level that does not resolve, a workload that cannot run as one gang,
     * a PodGroup spec this scheduler cannot use */
    const char *why = !g->pg->problem || g->pg->problem == g->eff_problem ? "InvalidTopology"
                      : g->derived                                      ? "InvalidWorkload"
                                                                        : "InvalidPodGroup";
    event(r, g, "Warning", why, d->reason);
}

void tg__report_decision(struct tg__report *r, const struct tg_decision *d)
{
    struct tg_grec *g = d->gang;
    if (!g || !state_of(g))
        return;
    switch (d->kind) {
    case TG_D_PLACE: placed(r, g, d); break;
    case TG_D_INVALID: invalid(r, g, d); break;
    case TG_D_NONE: break;
    default: unplaced(r, g, d); break;
    }
}

/* ---- the binder's notes -------------------------------------------------------------------- */

/* The Event of a gang whose record went while its binds ran (a gang of one
 * that the informer saw bound before the bind's answer came): it regards
 * the member of the note. */
static void event_orphan(struct tg__report *r, const struct tg__bind_note *n, const char *type,
                         const char *reason, const char *note)
{
    if (!n->pod_name) {
        told_unsent(n, TG_ENOENT); /* nothing to regard */
        return;
    }
    struct tg_event_spec e = {.ns = n->pod_ns, .type = type, .reason = reason, .note = note,
                              .action = action_of(reason), .background = high_volume(reason)};
    regard_pod(&e, n->pod_name, n->pod_uid);
    if (send_event(r, &e, n) == 0)
        tg_metrics_inc(TG_M_EVENTS, 1);
}

/* g: the gang's record, or NULL when it went meanwhile. */
static void bind_done(struct tg__report *r, struct tg_grec *g, const char *key,
                      const struct tg__bind_note *n)
{
    char msg[1024];
    if (n->failed)
        snprintf(msg, sizeof msg, "bound %u of %u (%u failed and wait for another try)", n->ok,
                 n->pods, n->failed);
    else
        snprintf(msg, sizeof msg, "bound %u pod(s) in %s %s", n->ok, n->level,
                 n->domain[0] ? n->domain : "(cluster)");
    tg_info(C, "gang %s: %s", key, msg);
    if (!g) {
        event_orphan(r, n, "Normal", "Scheduled", msg);
        return;
    }
    struct rgang *rg = g->user;
    set_str(&rg->msg, msg);
    if (!tg__report_complete(g)) { /* minMember bound: running work from now on */
        rg->complete_set = rg->complete = 1;
        rg->complete_ms = tg__wall_ms();
    }
    rg->phase = n->failed ? PH_PENDING : PH_SCHEDULED;
    rg->cond = n->failed ? "Unschedulable" : "Scheduled";
    write_status(r, g, 0);
    event_of(r, g, n, "Normal", "Scheduled", msg);
}

static void rolled_back(struct tg__report *r, struct tg_grec *g, const char *key,
                        const struct tg__bind_note *n)
{
    char msg[2048];
    if (n->why)
        snprintf(msg, sizeof msg, "%s; rolled back: deleted %u bound member(s) of an incomplete gang",
                 n->why, n->deleted);
    else
        snprintf(msg, sizeof msg,
                 "bound %u of %u, needed %u: rolled back, deleted %u bound member(s); first "
                 "failure %s: %s (HTTP %ld)", n->ok, n->pods, n->must, n->deleted,
                 n->fail_key ? n->fail_key : "-", n->fail_msg ? n->fail_msg : "-", n->fail_status);
    tg_warn(C, "gang %s: %s", key, msg);
    if (!g) {
        event_orphan(r, n, "Warning", "RolledBack", msg);
        return;
    }
    struct rgang *rg = g->user;
    set_str(&rg->msg, msg);
    rg->phase = PH_PENDING;
    rg->cond = "Unschedulable";
    write_status(r, g, 0);
    event_of(r, g, n, "Warning", "RolledBack", msg);
}

void tg__report_bind(struct tg__report *r, const char *gang_key, const struct tg__bind_note *n)
{
    struct tg_grec *g = tg_engine_gang(r->engine, gang_key);
    if (!g || !state_of(g)) {
        /* the record went meanwhile: how the binds ended is still told */
        if (n->what == TG__BIND_DONE)
            bind_done(r, NULL, gang_key, n);
        else if (n->what == TG__BIND_ROLLED_BACK)
            rolled_back(r, NULL, gang_key, n);
        return;
    }
    struct rgang *rg = g->user;
    char msg[1024];
    switch (n->what) {
    case TG__BIND_STARTED:
        /* no write yet: most gangs bind within milliseconds */
        snprintf(msg, sizeof msg, "binding %u pod(s) in %s %s", n->pods, n->level,
                 n->domain[0] ? n->domain : "(cluster)");
        set_str(&rg->msg, msg);
        rg->binding = 1;
        rg->phase = PH_SCHEDULING;
        rg->cond = "Binding";
        break;
    case TG__BIND_SLOW:
        write_status(r, g, 0);
        break;
    case TG__BIND_DONE:
        rg->binding = 0;
        bind_done(r, g, gang_key, n);
        break;
    case TG__BIND_ROLLED_BACK:
        rg->binding = 0;
        rolled_back(r, g, gang_key, n);
        break;
    case TG__BIND_ABANDONED:
        rg->binding = 0; /* stood down: the leader writes the status now */
        break;
    }
}

void tg__report_loss(struct tg__report *r, struct tg_grec *g, int state, int64_t since_ms,
                     const char *msg, const char *type, const char *reason)
{
    struct rgang *rg = state_of(g);
    if (!rg)
        return;
    rg->loss_set = 1;
    rg->loss = (uint8_t)state;
    rg->loss_ms = since_ms;
    if (msg)
        set_str(&rg->loss_msg, msg);
    if (rg->phase == PH_NONE) { /* nothing decided here yet: it ran, and is short */
        rg->phase = PH_SCHEDULED;
        rg->cond = "Scheduled";
        if (msg && !rg->msg)
            set_str(&rg->msg, msg);
    }
    if (!rg->binding)
        write_status(r, g, 0);
    if (reason)
        event(r, g, type, reason, msg);
}
