/* `topogang simulate`: read Kubernetes YAML (load.h), run the engine on a
 * fixed clock until nothing is due, print a table or JSON. See simulate.h. */
#include "scheduler/sim/simulate.h"
#include "scheduler/rank.h"
#include "scheduler/subgroup.h"
#include "scheduler/elastic.h"
#include "scheduler/engine.h"
#include "scheduler/fairshare.h"
#include "model/quantity.h"
#include "scheduler/sim/load.h"
#include "scheduler/sim/replay.h"
#include "util/err.h"
#include "util/hmap.h"
#include "util/intern.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A victim unit as the output shows it. */
struct preempted {
    char *group;                        /* "ns/name", or NULL for a pod of no gang */
    char **pods;
    uint32_t npods;
};

/* What became of one gang. */
struct outcome {
    char *key;
    int grouped;
    int32_t priority;
    int64_t created_ms;
    uint32_t min;
    uint32_t max;                       /* elastic: its desired size (maxMember), 0 none */
    uint8_t status;                     /* enum tg_gang_status */
    char level[64];
    char *domain;
    char *reason;
    const struct tg_pod **pods;         /* pending members, input order */
    uint32_t *node;                     /* interned node per pod, 0 none */
    uint32_t *rank;                     /* per pod: position in rank order, UINT32_MAX none */
    uint32_t queue;                     /* interned tenant queue (issue 19), 0 none */
    uint32_t npods;
    struct tg_rank_report ranks;        /* crossings of consecutive ranks (scheduler/rank.h) */
    struct preempted *pre;
    uint32_t npre;
    char *pre_reason;                   /* its last preemption's or reclaim's reason */
    struct subout *subs;                /* a placed gang's sub-groups, nsubs of them */
    uint32_t nsubs;
    struct subout *outs;                /* ... their outer groups (KAI's parents with a
                                           topologyConstraint, a whole LWS's groups), nouts */
    uint32_t nouts;
    int32_t *subof;                     /* per pod: its index in subs, -1 none */
};

/* Where one sub-group went (scheduler/subgroup.h). */
struct subout {
    char *name;
    char level[64];
    char *domain;                       /* NULL: an outer group without leaves */
    uint32_t npods;
    int32_t outer;                      /* a sub-group's outer group (index in outs), -1 none */
};

struct tg_sim {
    struct tg_simdata data;
    struct tg_policy policy;
    struct tg_engine *engine;
    int engine_up;
    int64_t now;                        /* the fixed clock */
    struct outcome *out;
    uint32_t nout;
    struct tg_hmap out_idx;             /* gang key -> index */
    struct tg_sim_summary sum;
};

static int64_t fixed_clock(void *ud)
{
    return ((const struct tg_sim *)ud)->now;
}

struct tg_sim *tg_sim_new(const struct tg_policy *p)
{
    struct tg_sim *sim = calloc(1, sizeof *sim);
    if (!sim)
        return NULL;
    tg_simdata_init(&sim->data);
    sim->policy = *p;
    return sim;
}

void tg_sim_quiet(struct tg_sim *sim, int quiet) { sim->data.quiet = quiet; }
const struct tg_sim_summary *tg_sim_summary(const struct tg_sim *sim) { return &sim->sum; }

static void outcome_free(struct outcome *o)
{
    for (uint32_t i = 0; i < o->npre; i++) {
        for (uint32_t k = 0; k < o->pre[i].npods; k++)
            free(o->pre[i].pods[k]);
        free(o->pre[i].pods);
        free(o->pre[i].group);
    }
    free(o->pre);
    free(o->pre_reason);
    for (uint32_t i = 0; i < o->nsubs; i++) {
        free(o->subs[i].name);
        free(o->subs[i].domain);
    }
    free(o->subs);
    for (uint32_t i = 0; i < o->nouts; i++) {
        free(o->outs[i].name);
        free(o->outs[i].domain);
    }
    free(o->outs);
    free(o->subof);
    free(o->pods);
    free(o->node);
    free(o->rank);
    free(o->domain);
    free(o->reason);
    free(o->key);
}

void tg_sim_free(struct tg_sim **psim)
{
    struct tg_sim *sim = *psim;
    if (!sim)
        return;
    if (sim->engine_up)
        tg_engine_delete(sim->engine);
    for (uint32_t i = 0; i < sim->nout; i++)
        outcome_free(&sim->out[i]);
    free(sim->out);
    tg_hmap_free(&sim->out_idx);
    tg_simdata_free(&sim->data);
    free(sim);
    *psim = NULL;
}

int tg_sim_load_file(struct tg_sim *sim, const char *path, struct tg_sb *err)
{
    return tg_simdata_load_path(&sim->data, path, err);
}

int tg_sim_load_string(struct tg_sim *sim, const char *yaml, size_t n, const char *origin,
                       struct tg_sb *err)
{
    return tg_simdata_load_string(&sim->data, yaml, n, origin, err);
}

/* ---- run ----------------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int set_text(char **dst, const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        return TG_ENOMEM;
    free(*dst);
    *dst = d;
    return 0;
}

/* Feeds every object to the engine: classes, groups, budgets, nodes, bound
 * pods, then the pending pods of this scheduler. */
static int feed(struct tg_sim *sim)
{
    struct tg_simdata *d = &sim->data;
    struct tg_engine *e = sim->engine;
    uint32_t ours = tg_intern(sim->policy.scheduler_name);
    int rc = 0;
    tg_engine_set_owner_kinds(e, d->wl_kinds); /* the owners the input holds form gangs */
    for (uint32_t i = 0; i < d->npcs && !rc; i++)
        rc = tg_engine_pclass_set(e, d->pcs[i].name, &d->pcs[i].pc);
    if (d->nqueues && !rc) /* tenant Queues (issue 19): none, queues off */
        rc = tg_engine_queues_set(e, (const struct tg_queue_obj *const *)d->queues, d->nqueues);
    for (uint32_t i = 0; i < d->npgs; i++)
        tg_engine_podgroup_set(e, d->pgs[i]);
    for (uint32_t i = 0; i < d->nwls && !rc; i++)
        rc = tg_engine_workload_set(e, d->wls[i]);
    for (uint32_t i = 0; i < d->npdbs && !rc; i++)
        rc = tg_engine_pdb_set(e, d->pdbs[i]);
    for (uint32_t i = 0; i < d->nnodes && !rc; i++) {
        struct tg_node_obj *n = tg_node_clone(d->nodes[i]);
        rc = n ? tg_engine_node_set(e, n) : TG_ENOMEM;
    }
    for (uint32_t i = 0; i < d->npods && !rc; i++) {
        const struct tg_pod *p = d->pods[i].pod;
        if (p->node) {
            rc = tg_engine_bound_set(e, p);
            sim->sum.bound_pods += !tg_pod_terminal(p);
        }
    }
    for (uint32_t i = 0; i < d->npods && !rc; i++) {
        struct tg_pod *p = d->pods[i].pod;
        if (!p->node && p->sched == ours && !tg_pod_terminal(p) && !p->deleting)
            rc = tg_engine_pending_set(e, p);
    }
    return rc;
}

/* One outcome per gang with pending members, pods in input order. */
static int make_outcomes(struct tg_sim *sim)
{
    struct tg_simdata *d = &sim->data;
    uint32_t ours = tg_intern(sim->policy.scheduler_name);
    sim->out = calloc(d->npods + 1, sizeof *sim->out);
    if (!sim->out)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < d->npods; i++) {
        const struct tg_pod *p = d->pods[i].pod;
        if (p->node || p->sched != ours || tg_pod_terminal(p) || p->deleting)
            continue;
        char key[512];
        tg_engine_gang_key(sim->engine, p, key, sizeof key);
        struct tg_grec *g = tg_engine_gang(sim->engine, key);
        uint64_t k;
        struct outcome *o;
        if (tg_hmap_get(&sim->out_idx, key, strlen(key), &k)) {
            o = &sim->out[k];
        } else {
            o = &sim->out[sim->nout];
            if (!(o->key = strdup(key)) ||
                tg_hmap_put(&sim->out_idx, o->key, strlen(o->key), sim->nout))
                return TG_ENOMEM;
            sim->nout++;
            o->grouped = strcmp(key, p->key) != 0; /* a group, or its owner's gang */
            o->status = TG_GANG_UNSCHEDULABLE;
            o->priority = g ? g->priority : p->priority;
            o->created_ms = g ? g->created_ms : p->created_ms;
            o->min = g ? tg_grec_min(g) : 1;
            o->max = g ? tg_elastic_max(g) : 0;
            o->queue = g ? g->queue : 0;
            o->pods = calloc(g ? g->npending + 1 : d->npods + 1, sizeof *o->pods);
            o->node = calloc(g ? g->npending + 1 : d->npods + 1, sizeof *o->node);
            o->rank = calloc(g ? g->npending + 1 : d->npods + 1, sizeof *o->rank);
            if (!o->pods || !o->node || !o->rank)
                return TG_ENOMEM;
        }
        o->pods[o->npods++] = p;
    }
    return 0;
}

static struct outcome *outcome_of(struct tg_sim *sim, const char *key)
{
    uint64_t k;
    return tg_hmap_get(&sim->out_idx, key, strlen(key), &k) ? &sim->out[k] : NULL;
}

/* Carries out a preemption at once: the victims are gone. */
static int evict(struct tg_sim *sim, struct outcome *o, const struct tg_preemption *pl)
{
    struct preempted *np = realloc(o->pre, (o->npre + pl->nvictims + 1) * sizeof *np);
    if (!np)
        return TG_ENOMEM;
    o->pre = np;
    for (uint32_t i = 0; i < pl->nvictims; i++) {
        const struct tg_victim *v = &pl->victims[i];
        struct preempted *x = &o->pre[o->npre++];
        memset(x, 0, sizeof *x);
        uint32_t n = v->gang ? v->gang->nmembers : 1;
        if ((v->gang && !(x->group = strdup(v->gang->key))) ||
            !(x->pods = calloc(n + 1, sizeof *x->pods)))
            return TG_ENOMEM;
        for (uint32_t k = 0; k < n; k++)
            if (!(x->pods[x->npods++] = strdup(v->gang ? v->gang->members[k]->key : v->pod->key)))
                return TG_ENOMEM;
        sim->sum.victim_pods += n;
    }
    sim->sum.preemptions++;
    sim->sum.reclaims += pl->reclaim;
    free(o->pre_reason);
    if (!(o->pre_reason = strdup(pl->reason)))
        return TG_ENOMEM;
    /* remove them after the names are taken: a gang record may go with its last pod */
    for (uint32_t i = o->npre - pl->nvictims; i < o->npre; i++)
        for (uint32_t k = 0; k < o->pre[i].npods; k++)
            tg_engine_bound_gone(sim->engine, o->pre[i].pods[k]);
    return 0;
}

/* Tree level of an outer group's level (interned name or node label key; 0
 * none or unknown: the whole cluster). */
static uint32_t outer_lvl(const struct tg_policy *p, uint32_t id)
{
    int l = id ? tg_policy_level_any(p, id) : 0;
    return l > 0 ? (uint32_t)l : 0;
}

/* Outer group j of pg as placed: the domain of its level holding its leaves'
 * domains (its preferred level when they all lie inside one such domain, else
 * its required one), the pods placed in them; its leaves' outer index. */
static int record_outer(const struct tg_policy *p, const struct tg_tree *t,
                        const struct tg_podgroup *pg, const struct tg_decision *dc,
                        struct outcome *o, uint32_t j)
{
    struct subout *u = &o->outs[j];
    uint32_t req = outer_lvl(p, pg->outer[j].required), pref = outer_lvl(p, pg->outer[j].preferred);
    uint32_t at = UINT32_MAX, at_pref = UINT32_MAX;
    int one_pref = pref > req;
    for (uint32_t k = 0; k < o->nsubs; k++) {
        if (k >= pg->nsubs || pg->subs[k].outer != j + 1)
            continue;
        const struct tg_subplace *sp = &dc->result.sub[k];
        o->subs[k].outer = (int32_t)j;
        u->npods += sp->npods;
        uint32_t d = tg_tree_ancestor(t, sp->domain, req);
        uint32_t e = tg_tree_ancestor(t, sp->domain, pref);
        at = at == UINT32_MAX ? d : at;
        one_pref &= at_pref == UINT32_MAX || at_pref == e;
        at_pref = e;
    }
    uint32_t lvl = req;
    if (one_pref && at_pref != UINT32_MAX) {
        lvl = pref;
        at = at_pref;
    }
    char name[128], path[512];
    snprintf(u->level, sizeof u->level, "%s", lvl ? p->levels[lvl - 1].name : "cluster");
    snprintf(name, sizeof name, "%s", tg_str(pg->outer[j].name));
    u->outer = -1;
    if (!(u->name = strdup(name)) ||
        (at != UINT32_MAX && !(u->domain = strdup(tg_tree_path(t, at, path, sizeof path)))))
        return TG_ENOMEM;
    return 0;
}

/* A placed gang's sub-groups: each one's level and domain, each pod's; their
 * outer groups' too. */
static int record_subs(struct tg_sim *sim, struct outcome *o, const struct tg_decision *dc)
{
    const struct tg_podgroup *pg = dc->gang->pg;
    const struct tg_tree *t = &tg_engine_cluster(sim->engine)->tree;
    const struct tg_policy *p = tg_engine_policy(sim->engine);
    if (!pg || o->subs)
        return 0;
    if (!(o->subs = calloc(dc->result.nsub, sizeof *o->subs)) ||
        !(o->subof = malloc((o->npods + 1) * sizeof *o->subof)))
        return TG_ENOMEM;
    o->nsubs = dc->result.nsub;
    for (uint32_t k = 0; k < o->nsubs; k++) {
        const struct tg_subplace *sp = &dc->result.sub[k];
        char name[128], path[512];
        snprintf(o->subs[k].level, sizeof o->subs[k].level, "%s",
                 sp->level ? p->levels[sp->level - 1].name : "cluster");
        o->subs[k].npods = sp->npods;
        o->subs[k].outer = -1;
        if (!(o->subs[k].name = strdup(tg_subgroup_name(pg, k, name, sizeof name))) ||
            !(o->subs[k].domain = strdup(tg_tree_path(t, sp->domain, path, sizeof path))))
            return TG_ENOMEM;
    }
    for (uint32_t k = 0; k < o->npods; k++) {
        char why[8];
        int64_t sg = tg_subgroup_of(pg, o->pods[k], why, sizeof why);
        o->subof[k] = sg >= 0 && sg < o->nsubs ? (int32_t)sg : -1;
    }
    if (!pg->nouter)
        return 0;
    if (!(o->outs = calloc(pg->nouter, sizeof *o->outs)))
        return TG_ENOMEM;
    o->nouts = pg->nouter;
    for (uint32_t j = 0; j < o->nouts; j++) {
        int rc = record_outer(p, t, pg, dc, o, j);
        if (rc)
            return rc;
    }
    return 0;
}

static int record(struct tg_sim *sim, const struct tg_decision *dc)
{
    struct outcome *o = outcome_of(sim, dc->gang->key);
    if (!o)
        return 0;
    const struct tg_cluster *c = tg_engine_cluster(sim->engine);
    if (dc->kind == TG_D_PREEMPT && evict(sim, o, &dc->preemption))
        return TG_ENOMEM;
    if (dc->kind != TG_D_PLACE)
        return set_text(&o->reason, dc->reason);
    o->status = TG_GANG_SCHEDULED;
    const struct tg_policy *p = tg_engine_policy(sim->engine);
    snprintf(o->level, sizeof o->level, "%s",
             dc->result.level ? p->levels[dc->result.level - 1].name : "cluster");
    char path[512];
    tg_tree_path(&c->tree, dc->result.domain, path, sizeof path);
    if (set_text(&o->domain, path) || set_text(&o->reason, ""))
        return TG_ENOMEM;
    uint32_t *ord = malloc((dc->view.npods + 1) * sizeof *ord);
    if (!ord || tg_rank_report(c, dc->view.pods, dc->result.slot, dc->view.npods, &o->ranks, ord)) {
        free(ord);
        return TG_ENOMEM;
    }
    for (uint32_t i = 0; i < dc->view.npods; i++) {
        if (dc->result.slot[i] == TG_NONE)
            continue;
        for (uint32_t k = 0; k < o->npods; k++)
            if (o->pods[k] == dc->view.pods[i]) {
                o->node[k] = c->nodes[dc->result.slot[i]].name;
                o->rank[k] = ord[i];
            }
    }
    free(ord);
    return dc->result.nsub ? record_subs(sim, o, dc) : 0;
}

static int outcome_cmp(const void *a, const void *b)
{
    const struct outcome *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->created_ms != y->created_ms)
        return x->created_ms < y->created_ms ? -1 : 1;
    return strcmp(x->key, y->key);
}

int tg_sim_run(struct tg_sim *sim)
{
    double t0 = now_ms();
    struct tg_simdata *d = &sim->data;
    for (uint32_t i = 0; i < d->npods; i++)
        if (d->pods[i].pod->created_ms > sim->now)
            sim->now = d->pods[i].pod->created_ms;
    sim->now += 1000;
    struct tg_clock clk = {fixed_clock, sim};
    int rc = tg_engine_new(&sim->engine, &sim->policy, &clk);
    if (rc)
        return rc;
    sim->engine_up = 1;
    if ((rc = feed(sim)) || (rc = make_outcomes(sim)))
        return rc;
    /* every gang once in queue order; a preemptor again when its victims are gone */
    uint64_t budget = 4ull * sim->nout + 64;
    while (budget--) {
        struct tg_decision dc;
        if ((rc = tg_engine_next(sim->engine, &dc))) {
            tg_decision_free(&dc);
            return rc;
        }
        if (dc.kind == TG_D_NONE) {
            tg_decision_free(&dc);
            break;
        }
        rc = record(sim, &dc);
        if (!rc && dc.kind == TG_D_PLACE)
            tg_engine_bind_done(sim->engine, dc.gang, 1, 0);
        tg_decision_free(&dc);
        if (rc)
            return rc;
    }
    struct tg_sim_summary *s = &sim->sum;
    s->nodes = tg_engine_cluster(sim->engine)->nready;
    s->gangs = sim->nout;
    for (uint32_t i = 0; i < sim->nout; i++) {
        struct outcome *o = &sim->out[i];
        uint32_t placed = 0;
        for (uint32_t k = 0; k < o->npods; k++)
            placed += o->node[k] != 0;
        s->scheduled += o->status == TG_GANG_SCHEDULED;
        s->unschedulable += o->status != TG_GANG_SCHEDULED;
        s->pods_placed += placed;
        s->pods_pending += o->npods - placed;
    }
    s->warnings = d->warnings;
    s->errors = d->errors;
    s->load_ms = d->load_ms;
    qsort(sim->out, sim->nout, sizeof *sim->out, outcome_cmp);
    s->schedule_ms = now_ms() - t0;
    return 0;
}

/* ---- output ------------------------------------------------------------------------- */

static const char *status_name(uint8_t st)
{
    return st == TG_GANG_SCHEDULED ? "Scheduled" : "Unschedulable";
}

static void json_str_or_null(struct tg_sb *o, const char *s)
{
    if (s)
        tg_sb_json_str(o, s);
    else
        tg_sb_puts(o, "null");
}

/* {"pairs": n, "<level>": n, ..., "node": n} for a placed gang whose members
 * carry ranks, else null. "node" is left out when a level has that name. */
static void rank_json(const struct tg_sim *sim, const struct outcome *g, struct tg_sb *o)
{
    if (g->status != TG_GANG_SCHEDULED || !g->ranks.pairs) {
        tg_sb_puts(o, "null");
        return;
    }
    const char *names[TG_MAX_LEVELS + 1];
    uint32_t counts[TG_MAX_LEVELS + 1];
    uint32_t n = tg_rank_by_level(tg_engine_policy(sim->engine), &g->ranks, names, counts);
    tg_sb_printf(o, "{\"pairs\":%u", g->ranks.pairs);
    for (uint32_t l = 0; l < n; l++) {
        tg_sb_putc(o, ',');
        tg_sb_json_str(o, names[l]);
        tg_sb_printf(o, ":%u", counts[l]);
    }
    tg_sb_putc(o, '}');
}

/* ---- tenant queues (issue 19) ------------------------------------------------ */

/* Gangs of queue name that were not placed. */
static uint32_t queue_waiting(const struct tg_sim *sim, uint32_t name)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < sim->nout; i++)
        n += sim->out[i].queue == name && sim->out[i].status != TG_GANG_SCHEDULED;
    return n;
}

/* One amount (tg_res_amount): GPUs and other units as numbers, cpu and
 * memory as Kubernetes quantities (strings in JSON). */
static void amount(struct tg_sb *o, uint32_t res, double v, int json)
{
    char buf[64];
    int number = tg_res_amount(res, v, 0, buf, sizeof buf);
    tg_sb_printf(o, json && !number ? "\"%s\"" : "%s", buf);
}

enum { QV_QUOTA, QV_LIMIT, QV_SHARE, QV_ALLOC, QV_N };

static double qval(const struct tg_fairshare *fs, uint32_t q, uint32_t r, int what)
{
    switch (what) {
    case QV_QUOTA: return tg_fairshare_quota(fs, q, r);
    case QV_LIMIT: return tg_fairshare_limit(fs, q, r);
    case QV_SHARE: return tg_fairshare_share(fs, q, r);
    default: return tg_fairshare_allocated(fs, q, r);
    }
}

/* {"nvidia.com/gpu": 8, "cpu": "16"}: an unlimited limit is left out. */
static void qmap_json(const struct tg_fairshare *fs, uint32_t q, int what, struct tg_sb *o)
{
    int first = 1;
    tg_sb_putc(o, '{');
    for (uint32_t r = 0; r < tg_res_count(); r++) {
        double v = qval(fs, q, r, what);
        if (!tg_fairshare_shown(fs, q, r) || (what == QV_LIMIT && v < 0))
            continue;
        tg_sb_puts(o, first ? "" : ",");
        first = 0;
        tg_sb_json_str(o, tg_res_name(r));
        tg_sb_putc(o, ':');
        amount(o, r, v, 1);
    }
    tg_sb_putc(o, '}');
}

/* ,"queues":[...] when the input holds Queues: every queue, parents too. */
static void queues_json(const struct tg_sim *sim, struct tg_sb *o)
{
    const struct tg_fairshare *fs = tg_engine_fairshare(sim->engine);
    if (!fs)
        return;
    static const char *const key[QV_N] = {"quota", "limit", "fairShare", "allocated"};
    tg_sb_puts(o, ",\"queues\":[");
    for (uint32_t q = 0; q < tg_fairshare_count(fs); q++) {
        tg_sb_puts(o, q ? ",\n{\"name\":" : "\n{\"name\":");
        tg_sb_json_str(o, tg_str(tg_fairshare_name(fs, q)));
        int parent = tg_fairshare_parent(fs, q);
        tg_sb_puts(o, ",\"parent\":");
        json_str_or_null(o, parent >= 0 ? tg_str(tg_fairshare_name(fs, (uint32_t)parent)) : NULL);
        for (int w = 0; w < QV_N; w++) {
            tg_sb_printf(o, ",\"%s\":", key[w]);
            qmap_json(fs, q, w, o);
        }
        tg_sb_printf(o, ",\"waitingGangs\":%u", queue_waiting(sim, tg_fairshare_name(fs, q)));
        const char *why = tg_fairshare_problem(fs, q);
        tg_sb_puts(o, ",\"problem\":");
        json_str_or_null(o, why && *why ? why : NULL);
        tg_sb_putc(o, '}');
    }
    tg_sb_puts(o, "\n]");
}

/* The table's queue section: per queue and resource, allocated / fair share
 * / quota / limit. */
static void queues_table(const struct tg_sim *sim, struct tg_sb *o)
{
    const struct tg_fairshare *fs = tg_engine_fairshare(sim->engine);
    if (!fs)
        return;
    tg_sb_printf(o, "\n%-24s  %-24s  %-16s  %-10s  %-10s  %-10s  %s\n", "QUEUE", "PARENT",
                 "RESOURCE", "ALLOCATED", "FAIRSHARE", "QUOTA", "LIMIT");
    for (uint32_t q = 0; q < tg_fairshare_count(fs); q++) {
        int parent = tg_fairshare_parent(fs, q), any = 0;
        const char *pname = parent >= 0 ? tg_str(tg_fairshare_name(fs, (uint32_t)parent)) : "-";
        for (uint32_t r = 0; r < tg_res_count(); r++) {
            if (!tg_fairshare_shown(fs, q, r))
                continue;
            tg_sb_printf(o, "%-24s  %-24s  %-16s  ", any ? "" : tg_str(tg_fairshare_name(fs, q)),
                         any ? "" : pname, tg_res_name(r));
            static const int cols[] = {QV_ALLOC, QV_SHARE, QV_QUOTA, QV_LIMIT};
            for (int k = 0; k < 4; k++) {
                struct tg_sb b = {0};
                double v = qval(fs, q, r, cols[k]);
                if (cols[k] == QV_LIMIT && v < 0)
                    tg_sb_puts(&b, "none");
                else
                    amount(&b, r, v, 0);
                tg_sb_printf(o, k < 3 ? "%-10s  " : "%s\n", tg_sb_str(&b));
                tg_sb_free(&b);
            }
            any = 1;
        }
        if (!any)
            tg_sb_printf(o, "%-24s  %-24s  %-16s\n", tg_str(tg_fairshare_name(fs, q)), pname, "-");
        const char *why = tg_fairshare_problem(fs, q);
        if (why && *why)
            tg_sb_printf(o, "    problem: %s\n", why);
        if (queue_waiting(sim, tg_fairshare_name(fs, q)))
            tg_sb_printf(o, "    %u gang(s) waiting\n", queue_waiting(sim, tg_fairshare_name(fs, q)));
    }
}

/* Entry i of a gang's "subGroups" or "outerGroups": name, level, domain
 * (null: none), the outer group it is inside (NULL: none, not printed), pods. */
static void subout_json(struct tg_sb *o, uint32_t i, const struct subout *u, const char *outer)
{
    tg_sb_puts(o, i ? ",{\"name\":" : "{\"name\":");
    tg_sb_json_str(o, u->name);
    tg_sb_puts(o, ",\"level\":");
    tg_sb_json_str(o, u->level);
    tg_sb_puts(o, ",\"domain\":");
    json_str_or_null(o, u->domain);
    if (outer) {
        tg_sb_puts(o, ",\"outerGroup\":");
        tg_sb_json_str(o, outer);
    }
    tg_sb_printf(o, ",\"pods\":%u}", u->npods);
}

void tg_sim_json(const struct tg_sim *sim, struct tg_sb *o)
{
    tg_sb_puts(o, "{\"gangs\":[");
    for (uint32_t i = 0; i < sim->nout; i++) {
        const struct outcome *g = &sim->out[i];
        int ok = g->status == TG_GANG_SCHEDULED;
        tg_sb_puts(o, i ? ",\n{\"podGroup\":" : "\n{\"podGroup\":");
        json_str_or_null(o, g->grouped ? g->key : NULL);
        tg_sb_puts(o, ",\"status\":");
        tg_sb_json_str(o, status_name(g->status));
        tg_sb_printf(o, ",\"priority\":%d,\"minMember\":%u,\"maxMember\":", g->priority, g->min);
        if (g->max)
            tg_sb_printf(o, "%u", g->max);
        else
            tg_sb_puts(o, "null");
        tg_sb_puts(o, ",\"level\":");
        json_str_or_null(o, ok ? g->level : NULL);
        tg_sb_puts(o, ",\"domain\":");
        json_str_or_null(o, ok ? g->domain : NULL);
        tg_sb_puts(o, ",\"reason\":");
        tg_sb_json_str(o, g->reason ? g->reason : "");
        tg_sb_puts(o, ",\"pods\":[");
        for (uint32_t k = 0; k < g->npods; k++) {
            tg_sb_puts(o, k ? ",{\"pod\":" : "{\"pod\":");
            tg_sb_json_str(o, g->pods[k]->key);
            tg_sb_puts(o, ",\"node\":");
            json_str_or_null(o, ok && g->node[k] ? tg_str(g->node[k]) : NULL);
            if (ok && g->node[k] && g->rank[k] != UINT32_MAX)
                tg_sb_printf(o, ",\"rank\":%u", g->rank[k]);
            if (ok && g->subof && g->subof[k] >= 0) {
                tg_sb_puts(o, ",\"subGroup\":");
                tg_sb_json_str(o, g->subs[g->subof[k]].name);
            }
            tg_sb_putc(o, '}');
        }
        if (ok && g->nsubs) {
            tg_sb_puts(o, "],\"subGroups\":[");
            for (uint32_t k = 0; k < g->nsubs; k++) {
                int32_t j = g->subs[k].outer;
                subout_json(o, k, &g->subs[k], j >= 0 ? g->outs[j].name : NULL);
            }
        }
        if (ok && g->nouts) {
            tg_sb_puts(o, "],\"outerGroups\":[");
            for (uint32_t j = 0; j < g->nouts; j++)
                subout_json(o, j, &g->outs[j], NULL);
        }
        tg_sb_puts(o, "],\"rankCrossings\":");
        rank_json(sim, g, o);
        tg_sb_puts(o, ",\"preempts\":[");
        for (uint32_t k = 0; k < g->npre; k++) {
            tg_sb_puts(o, k ? ",{\"podGroup\":" : "{\"podGroup\":");
            json_str_or_null(o, g->pre[k].group);
            tg_sb_puts(o, ",\"pods\":[");
            for (uint32_t j = 0; j < g->pre[k].npods; j++) {
                if (j)
                    tg_sb_putc(o, ',');
                tg_sb_json_str(o, g->pre[k].pods[j]);
            }
            tg_sb_puts(o, "]}");
        }
        tg_sb_puts(o, "]");
        if (g->pre_reason) {
            tg_sb_puts(o, ",\"preemptReason\":");
            tg_sb_json_str(o, g->pre_reason);
        }
        tg_sb_puts(o, "}");
    }
    tg_sb_puts(o, "\n]");
    queues_json(sim, o);
    const struct tg_sim_summary *s = &sim->sum;
    tg_sb_printf(o, ",\"summary\":{\"nodes\":%u,\"boundPods\":%u,\"gangs\":%u,\"scheduled\":%u,"
                    "\"unschedulable\":%u,\"podsPlaced\":%u,\"podsPending\":%u,"
                    "\"preemptions\":%u,\"reclaims\":%u,\"victimPods\":%u,"
                    "\"skippedObjects\":%u,\"loadMs\":%.1f,\"scheduleMs\":%.1f}}\n",
                 s->nodes, s->bound_pods, s->gangs, s->scheduled, s->unschedulable,
                 s->pods_placed, s->pods_pending, s->preemptions, s->reclaims, s->victim_pods,
                 s->warnings,
                 s->load_ms, s->schedule_ms);
}

void tg_sim_table(const struct tg_sim *sim, int show_pods, struct tg_sb *o)
{
    int wname = 5, wdom = 6;
    for (uint32_t i = 0; i < sim->nout; i++) {
        const struct outcome *g = &sim->out[i];
        int l = (int)strlen(g->key) + (g->grouped ? 0 : 2);
        if (l > wname)
            wname = l;
        if (g->status == TG_GANG_SCHEDULED && g->domain && (l = (int)strlen(g->domain)) > wdom)
            wdom = l;
    }
    if (wname > 48)
        wname = 48;
    if (wdom > 40)
        wdom = 40;
    tg_sb_printf(o, "%-*s  %-8s  %-13s  %-13s  %-*s  %s\n", wname, "GANG", "PLACED", "STATUS",
                 "LEVEL", wdom, "DOMAIN", "REASON");
    for (uint32_t i = 0; i < sim->nout; i++) {
        const struct outcome *g = &sim->out[i];
        int ok = g->status == TG_GANG_SCHEDULED;
        char name[600], placed[32];
        snprintf(name, sizeof name, g->grouped ? "%s" : "(%s)", g->key);
        uint32_t np = 0;
        for (uint32_t k = 0; ok && k < g->npods; k++)
            np += g->node[k] != 0;
        snprintf(placed, sizeof placed, "%u/%u", np, g->npods);
        const char *dom = ok && g->domain ? g->domain : "-";
        tg_sb_printf(o, "%-*s  %-8s  %-13s  %-13s  %-*s  %s\n", wname, name, placed,
                     status_name(g->status), ok ? g->level : "-", wdom, *dom ? dom : "(all)",
                     g->reason && g->reason[0] ? g->reason : "-");
        if (g->npre && g->pre_reason)
            tg_sb_printf(o, "    %s\n", g->pre_reason);
        for (uint32_t k = 0; k < g->npre; k++) {
            const struct preempted *x = &g->pre[k];
            tg_sb_printf(o, "    preempts %s%s%s (%u pod%s)", x->group ? "" : "pod ",
                         x->group ? x->group : x->pods[0], x->group ? "" : "", x->npods,
                         x->npods == 1 ? "" : "s");
            for (uint32_t j = 0; x->group && j < x->npods && j < 4; j++)
                tg_sb_printf(o, "%s%s", j ? ", " : ": ", x->pods[j]);
            tg_sb_puts(o, x->group && x->npods > 4 ? ", ...\n" : "\n");
        }
        for (uint32_t k = 0; show_pods && k < g->npods; k++)
            tg_sb_printf(o, "    %-40s -> %s\n", g->pods[k]->key,
                         ok && g->node[k] ? tg_str(g->node[k]) : "(pending)");
    }
    queues_table(sim, o);
    const struct tg_sim_summary *s = &sim->sum;
    tg_sb_printf(o, "\n%u gangs: %u scheduled, %u unschedulable; %u pods placed, %u pending; "
                    "%u nodes, %u bound pods; ",
                 s->gangs, s->scheduled, s->unschedulable, s->pods_placed, s->pods_pending,
                 s->nodes, s->bound_pods);
    if (s->preemptions)
        tg_sb_printf(o, "%u preemption(s) (%u reclaim(s)) evicting %u pod(s); ", s->preemptions,
                     s->reclaims, s->victim_pods);
    tg_sb_printf(o, "%u objects skipped\n", s->warnings);
}

/* ---- the command -------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: topogang simulate -f FILE [-f FILE...] [--config POLICY] [-o table|json]\n"
        "       topogang simulate --replay -f FILE [-f FILE...] [--config POLICY] [-o table|json]\n"
        "                [--until DURATION] [--bind-latency DURATION] [--compare POLICY2]\n"
        "                [--plot FILE.svg]\n"
        "\n"
        "Places pending pods (spec.schedulerName: topogang) from Kubernetes YAML, offline,\n"
        "with the same scheduling code as the daemon. Input: multi-document YAML or\n"
        "kind: List of Nodes, Pods, PodGroups (topogang.io/v1alpha1), PriorityClasses.\n"
        "Pods with spec.nodeName count as usage; pending pods are placed in queue order\n"
        "(priority, then creation time), gang by gang, all or nothing.\n"
        "\n"
        "--replay plays the pods through virtual time instead: each pending pod arrives at\n"
        "its creationTimestamp and runs for its annotation simulate.topogang.io/duration\n"
        "(seconds or 2h30m; absent: forever) once bound, with the daemon's queue, backoff,\n"
        "preemption, reservations and timeouts; preempted gangs start again from scratch.\n"
        "\n"
        "options:\n"
        "  -f, --filename FILE   input file or directory of *.yaml (repeatable; - is stdin)\n"
        "  -c, --config POLICY   policy YAML (the ConfigMap's config.yaml); default policy otherwise\n"
        "  -o, --output FORMAT   table (default) or json\n"
        "      --show-pods       table: list each pod and its node under its gang\n"
        "      --print-config    print the effective policy and exit\n"
        "  -q, --quiet           do not print warnings about skipped objects\n"
        "  -h, --help            this text\n"
        "replay:\n"
        "      --replay          play the trace through time (see above)\n"
        "      --until DURATION  stop at this time after the trace start\n"
        "      --bind-latency DURATION  each bind takes this long (api.bindConcurrency at a\n"
        "                        time); default instant\n"
        "      --compare POLICY2 the same trace under a second policy, side by side\n"
        "      --plot FILE.svg   draw utilization, queue length and waiting GPUs over time\n"
        "                        (and, with Queues, each queue's share of the GPUs)\n"
        "\n"
        "exit status: 0 when every file was read (unschedulable gangs included), 1 when a\n"
        "file or the policy cannot be read, 2 on a usage error.\n");
}

/* The replay's flags, gathered while simulate reads its own. */
struct replay_flags {
    int on;
    const char *until, *latency, *compare, *plot;
};

static int duration_flag(const char *flag, const char *v, int64_t *ms)
{
    if (!v)
        return 0;
    if (tg_parse_duration_ms(v, ms)) {
        fprintf(stderr, "topogang simulate: %s: malformed duration \"%s\" (seconds, or a Go "
                        "duration such as 2h30m)\n", flag, v);
        return 2;
    }
    return 0;
}

/* Runs --replay; returns the exit code. */
static int replay(const struct replay_flags *rf, const char **files, int nfiles,
                  const struct tg_policy *pol, const char *config, const char *output, int quiet)
{
    struct tg_replay_cmd c = {.files = files, .nfiles = nfiles, .policy = pol,
                              .name = config ? config : "default policy", .output = output,
                              .plot = rf->plot, .quiet = quiet};
    c.opts.until_ms = -1;
    if (duration_flag("--until", rf->until, &c.opts.until_ms) ||
        duration_flag("--bind-latency", rf->latency, &c.opts.bind_latency_ms))
        return 2;
    struct tg_policy pol2;
    struct tg_sb err = {0};
    if (rf->compare) {
        tg_policy_default(&pol2);
        if (tg_policy_load_file(rf->compare, &pol2, &err)) {
            fprintf(stderr, "topogang simulate: invalid policy:\n%s", tg_sb_str(&err));
            tg_sb_free(&err);
            return 1;
        }
        c.policy2 = &pol2;
        c.name2 = rf->compare;
    }
    tg_sb_free(&err);
    return tg_replay_cmd(&c);
}

/* Flags that do not go together; returns 0 or the usage exit code. */
static int check_flags(const struct replay_flags *rf, int show_pods, const char *output)
{
    if (!rf->on && (rf->until || rf->latency || rf->compare || rf->plot)) {
        fprintf(stderr, "topogang simulate: --until, --bind-latency, --compare and --plot go "
                        "with --replay\n");
        return 2;
    }
    if (rf->on && show_pods) {
        fprintf(stderr, "topogang simulate: --show-pods is for the snapshot (without --replay)\n");
        return 2;
    }
    if (strcmp(output, "table") && strcmp(output, "json")) {
        fprintf(stderr, "topogang simulate: -o must be table or json, not '%s'\n", output);
        return 2;
    }
    return 0;
}

/* The snapshot: load, place once, print. Returns the exit code. */
static int snapshot(const char **files, int nfiles, const struct tg_policy *pol,
                    const char *output, int show_pods, int quiet)
{
    struct tg_sb err = {0}, out = {0};
    struct tg_sim *sim = tg_sim_new(pol);
    int rc = 1;
    if (!sim)
        goto done;
    tg_sim_quiet(sim, quiet);
    for (int i = 0; i < nfiles; i++) {
        int lrc = tg_sim_load_file(sim, files[i], &err);
        if (lrc) {
            fprintf(stderr, "topogang simulate: %s\n",
                    err.len ? tg_sb_str(&err) : tg_strerror(lrc));
            goto done;
        }
    }
    if (tg_sim_run(sim)) {
        fprintf(stderr, "topogang simulate: out of memory\n");
        goto done;
    }
    if (!strcmp(output, "json"))
        tg_sim_json(sim, &out);
    else
        tg_sim_table(sim, show_pods, &out);
    fwrite(tg_sb_str(&out), 1, out.len, stdout);
    rc = 0;
done:
    tg_sim_free(&sim);
    tg_sb_free(&err);
    tg_sb_free(&out);
    return rc;
}

int tg_cmd_simulate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"filename", required_argument, NULL, 'f'}, {"config", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},   {"show-pods", no_argument, NULL, 'P'},
        {"print-config", no_argument, NULL, 'C'},   {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},           {"replay", no_argument, NULL, 'R'},
        {"until", required_argument, NULL, 'U'},    {"bind-latency", required_argument, NULL, 'L'},
        {"compare", required_argument, NULL, 'M'},  {"plot", required_argument, NULL, 'G'},
        {NULL, 0, NULL, 0},
    };
    struct replay_flags rf = {0};
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    const char *config = NULL, *output = "table";
    int nfiles = 0, show_pods = 0, print_config = 0, quiet = 0, opt, rc = 2;
    if (!files)
        return 1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "f:c:o:qh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f': files[nfiles++] = optarg; break;
        case 'c': config = optarg; break;
        case 'o': output = optarg; break;
        case 'P': show_pods = 1; break;
        case 'C': print_config = 1; break;
        case 'q': quiet = 1; break;
        case 'R': rf.on = 1; break;
        case 'U': rf.until = optarg; break;
        case 'L': rf.latency = optarg; break;
        case 'M': rf.compare = optarg; break;
        case 'G': rf.plot = optarg; break;
        case 'h': usage(stdout); free(files); return 0;
        default: usage(stderr); free(files); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "topogang simulate: unexpected argument '%s' (input files go after -f)\n",
                argv[optind]);
        free(files);
        return 2;
    }
    if ((rc = check_flags(&rf, show_pods, output))) {
        free(files);
        return rc;
    }
    struct tg_policy pol;
    struct tg_sb err = {0}, out = {0};
    tg_policy_default(&pol);
    if (config && tg_policy_load_file(config, &pol, &err)) {
        fprintf(stderr, "topogang simulate: invalid policy:\n%s", tg_sb_str(&err));
        rc = 1;
    } else if (print_config) {
        tg_policy_dump(&pol, &out);
        fputs(tg_sb_str(&out), stdout);
    } else if (nfiles == 0) {
        fprintf(stderr, "topogang simulate: no input; give -f FILE (see --help)\n");
        rc = 2;
    } else if (rf.on) {
        rc = replay(&rf, files, nfiles, &pol, config, output, quiet);
    } else {
        rc = snapshot(files, nfiles, &pol, output, show_pods, quiet);
    }
    tg_sb_free(&err);
    tg_sb_free(&out);
    free(files);
    return rc;
}
