/* What a replay shows: per gang JSON and table lines, the summary (waits by
 * gang size, utilization, preemptions, fragmentation), two replays
 * compared, and `topogang simulate --replay` itself. See replay.h and the
 * README section "simulate --replay" for the shapes. */
#include "scheduler/sim/replay_int.h"
#include "util/err.h"
#include "util/intern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE TG__RP_NONE

/* Gang size classes by the main extended resource (GPUs). */
static const char *const SIZE_CLASS[] = {"0", "1", "2-8", "9-64", "65+"};
enum { NCLASS = 5 };

static int size_class(int64_t gpus)
{
    return gpus <= 0 ? 0 : gpus == 1 ? 1 : gpus <= 8 ? 2 : gpus <= 64 ? 3 : 4;
}

const char *tg__replay_level_name(const struct tg_replay *r, int level)
{
    if (level <= 0 || (uint32_t)level > r->policy.nlevels)
        return "cluster";
    return r->policy.levels[level - 1].name;
}

void tg__replay_secs(struct tg_sb *o, int64_t ms)
{
    if (ms % 1000 == 0)
        tg_sb_printf(o, "%lld", (long long)(ms / 1000));
    else
        tg_sb_printf(o, "%.3f", (double)ms / 1000.0);
}

/* "1:02:03" (days: "2d 01:02:03"), a time since the trace start. */
static const char *clock_text(int64_t ms, char *buf, size_t n)
{
    if (ms < 0) {
        snprintf(buf, n, "-");
        return buf;
    }
    long long s = (long long)(ms / 1000), d = s / 86400;
    s %= 86400;
    if (d)
        snprintf(buf, n, "%lldd %02lld:%02lld:%02lld", d, s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, n, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    return buf;
}

/* "45s", "3m20s", "2h05m", "1d03h": a length of time ("-": none). */
static const char *span_text(double secs, char *buf, size_t n)
{
    long long s = llround(secs);
    if (secs < 0)
        snprintf(buf, n, "-");
    else if (s < 60)
        snprintf(buf, n, "%llds", s);
    else if (s < 3600)
        snprintf(buf, n, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, n, "%lldh%02lldm", s / 3600, s / 60 % 60);
    else
        snprintf(buf, n, "%lldd%02lldh", s / 86400, s / 3600 % 24);
    return buf;
}

static void json_str_or_null(struct tg_sb *o, const char *s)
{
    if (s)
        tg_sb_json_str(o, s);
    else
        tg_sb_puts(o, "null");
}

static void json_num(struct tg_sb *o, double v)
{
    if (v < 0 || !isfinite(v))
        tg_sb_puts(o, "null");
    else if (v == floor(v) && v < 1e15)
        tg_sb_printf(o, "%.0f", v);
    else
        tg_sb_printf(o, "%.3f", v);
}

static int gang_order(const void *a, const void *b, void *ctx)
{
    const struct tg_replay *r = ctx;
    const struct tg__rgang *x = &r->gangs[*(const uint32_t *)a];
    const struct tg__rgang *y = &r->gangs[*(const uint32_t *)b];
    if (x->arrival != y->arrival)
        return x->arrival < y->arrival ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Gangs that arrived, by arrival then key: indices into r->gangs, *n of
 * them (the caller frees; NULL when out of memory). */
static uint32_t *arrived(const struct tg_replay *r, uint32_t *n)
{
    uint32_t *v = malloc((r->ngangs + 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < r->ngangs; i++)
        if (r->gangs[i].arrival >= 0)
            v[(*n)++] = i;
    qsort_r(v, *n, sizeof *v, gang_order, (void *)r);
    return v;
}

/* The wait before the first start; -1 when it never started (or was
 * running at the trace start). */
static int64_t wait_of(const struct tg__rgang *g)
{
    if (g->initial || !g->nruns || g->runs[0].start < 0)
        return -1;
    return g->runs[0].start - g->arrival;
}

/* The last run that started (NULL: none). */
static const struct tg__run *last_run(const struct tg__rgang *g)
{
    for (uint32_t i = g->nruns; i > 0; i--)
        if (g->runs[i - 1].start >= 0)
            return &g->runs[i - 1];
    return NULL;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static const char *run_reason(const struct tg__run *run)
{
    return run->why == TG__RUN_COMPLETED ? "completed"
           : run->why == TG__RUN_PREEMPTED ? "preempted" : "running";
}

static void run_json(const struct tg_replay *r, const struct tg__run *run, struct tg_sb *o)
{
    tg_sb_puts(o, "{\"start\":");
    if (run->start >= 0)
        tg__replay_secs(o, run->start);
    else
        tg_sb_puts(o, "null");
    tg_sb_puts(o, ",\"end\":");
    if (run->end >= 0)
        tg__replay_secs(o, run->end);
    else
        tg_sb_puts(o, "null");
    tg_sb_puts(o, ",\"reason\":");
    tg_sb_json_str(o, run_reason(run));
    tg_sb_puts(o, ",\"level\":");
    json_str_or_null(o, run->level >= 0 ? tg__replay_level_name(r, run->level) : NULL);
    tg_sb_puts(o, ",\"domain\":");
    json_str_or_null(o, run->domain);
    tg_sb_puts(o, ",\"preemptedBy\":");
    json_str_or_null(o, run->by != NONE ? r->gangs[run->by].key : NULL);
    tg_sb_puts(o, ",\"pods\":[");
    for (uint32_t k = 0; k < run->npods; k++) {
        tg_sb_puts(o, k ? ",{\"pod\":" : "{\"pod\":");
        tg_sb_json_str(o, r->pods[run->pods[k]].sp->pod->key);
        tg_sb_puts(o, ",\"node\":");
        json_str_or_null(o, run->nodes[k] ? tg_str(run->nodes[k]) : NULL);
        tg_sb_putc(o, '}');
    }
    tg_sb_puts(o, "]}");
}

static void preempts_json(const struct tg__rgang *g, struct tg_sb *o)
{
    tg_sb_puts(o, ",\"preempts\":[");
    for (uint32_t k = 0; k < g->npre; k++) {
        const struct tg__pre *x = &g->pre[k];
        tg_sb_puts(o, k ? ",{\"at\":" : "{\"at\":");
        tg__replay_secs(o, x->at);
        tg_sb_puts(o, ",\"podGroup\":");
        json_str_or_null(o, x->group);
        tg_sb_puts(o, ",\"pods\":[");
        for (uint32_t j = 0; j < x->npods; j++) {
            if (j)
                tg_sb_putc(o, ',');
            tg_sb_json_str(o, x->pods[j]);
        }
        tg_sb_puts(o, "]}");
    }
    tg_sb_putc(o, ']');
}

static void gang_json(const struct tg_replay *r, const struct tg__rgang *g, struct tg_sb *o)
{
    tg_sb_puts(o, "{\"podGroup\":");
    json_str_or_null(o, g->grouped ? g->key : NULL);
    tg_sb_puts(o, ",\"pods\":[");
    for (uint32_t k = 0; k < g->npods; k++) {
        tg_sb_puts(o, k ? ",{\"pod\":" : "{\"pod\":");
        tg_sb_json_str(o, r->pods[g->pods[k]].sp->pod->key);
        tg_sb_putc(o, '}');
    }
    tg_sb_puts(o, "],\"arrival\":");
    tg__replay_secs(o, g->arrival);
    tg_sb_puts(o, ",\"queue\":");
    json_str_or_null(o, g->queue ? tg_str(g->queue) : NULL);
    tg_sb_printf(o, ",\"minMember\":%u,\"priority\":%d,\"gpus\":%lld,\"wait\":", g->min,
                 g->priority, (long long)g->main);
    int64_t w = wait_of(g);
    if (w >= 0)
        tg__replay_secs(o, w);
    else
        tg_sb_puts(o, "null");
    tg_sb_puts(o, ",\"runs\":[");
    for (uint32_t k = 0; k < g->nruns; k++) {
        if (k)
            tg_sb_putc(o, ',');
        run_json(r, &g->runs[k], o);
    }
    tg_sb_puts(o, "],\"status\":");
    tg_sb_json_str(o, tg__replay_status(g));
    tg_sb_printf(o, ",\"timedOut\":%s", g->timed_out ? "true" : "false");
    preempts_json(g, o);
    tg_sb_puts(o, ",\"reservation\":");
    if (g->resv_at >= 0) {
        tg_sb_puts(o, "{\"at\":");
        tg__replay_secs(o, g->resv_at);
        tg_sb_puts(o, ",\"domain\":");
        json_str_or_null(o, g->resv_domain);
        tg_sb_putc(o, '}');
    } else {
        tg_sb_puts(o, "null");
    }
    tg_sb_puts(o, ",\"reason\":");
    tg_sb_json_str(o, g->state == TG__RG_WAITING && g->reason ? g->reason : "");
    tg_sb_putc(o, '}');
}

/* Waits (seconds) of the started gangs of one size class (-1: all). */
static uint32_t waits(const struct tg_replay *r, int cls, double *v)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->ngangs; i++) {
        const struct tg__rgang *g = &r->gangs[i];
        int64_t w = g->arrival >= 0 ? wait_of(g) : -1;
        if (w >= 0 && (cls < 0 || size_class(g->main) == cls))
            v[n++] = (double)w / 1000.0;
    }
    return n;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *v, uint32_t n, double p)
{
    if (!n)
        return -1;
    uint32_t k = (uint32_t)ceil(p / 100.0 * n);
    return v[(k ? k : 1) - 1];
}

struct wstats {
    uint32_t n;
    double p50, p90, p99, max;
};

static struct wstats wait_stats(const struct tg_replay *r, int cls, double *scratch)
{
    struct wstats s = {0};
    s.n = waits(r, cls, scratch);
    qsort(scratch, s.n, sizeof *scratch, cmp_dbl);
    s.p50 = pct(scratch, s.n, 50);
    s.p90 = pct(scratch, s.n, 90);
    s.p99 = pct(scratch, s.n, 99);
    s.max = s.n ? scratch[s.n - 1] : -1;
    return s;
}

static void wstats_json(struct tg_sb *o, const struct wstats *s)
{
    tg_sb_printf(o, "{\"gangs\":%u,\"p50\":", s->n);
    json_num(o, s->p50);
    tg_sb_puts(o, ",\"p90\":");
    json_num(o, s->p90);
    tg_sb_puts(o, ",\"p99\":");
    json_num(o, s->p99);
    tg_sb_puts(o, ",\"max\":");
    json_num(o, s->max);
    tg_sb_putc(o, '}');
}

struct fstat {
    double mean;
    uint32_t min, max;
};

/* Fragmentation over the samples: level 0 is "free nodes", otherwise the
 * tree level. */
static struct fstat frag(const struct tg_replay *r, uint32_t level)
{
    struct fstat f = {0, UINT32_MAX, 0};
    double sum = 0;
    for (uint32_t i = 0; i < r->nsamples; i++) {
        uint32_t v = level ? r->samples[i].free_dom[level] : r->samples[i].free_nodes;
        sum += v;
        f.min = v < f.min ? v : f.min;
        f.max = v > f.max ? v : f.max;
    }
    if (!r->nsamples)
        f.min = 0;
    f.mean = r->nsamples ? sum / r->nsamples : 0;
    return f;
}

static void fstat_json(struct tg_sb *o, struct fstat f)
{
    tg_sb_printf(o, "{\"mean\":%.2f,\"min\":%u,\"max\":%u}", f.mean, f.min, f.max);
}

/* Extended resources with capacity (cpu when there is none). */
static int reported(const struct tg_replay *r, uint32_t k)
{
    return r->alloc[k] > 0 && (k >= TG_RES_NFIXED || k == r->main_res);
}

static void utilization_json(const struct tg_replay *r, struct tg_sb *o)
{
    tg_sb_puts(o, "\"utilization\":{");
    int first = 1;
    for (uint32_t k = 0; k < TG_RES_MAX && k < tg_res_count(); k++) {
        if (!reported(r, k))
            continue;
        double div = tg_res_is_milli(k) ? 1000.0 : 1.0;
        double used = r->used_ms[k] / 1000.0 / div;
        double avail = (double)r->alloc[k] * (double)r->end / 1000.0 / div;
        tg_sb_puts(o, first ? "" : ",");
        first = 0;
        tg_sb_json_str(o, tg_res_name(k));
        tg_sb_puts(o, ":{\"used\":");
        json_num(o, used);
        tg_sb_puts(o, ",\"available\":");
        json_num(o, avail);
        tg_sb_printf(o, ",\"ratio\":%.4f}", avail > 0 ? used / avail : 0.0);
    }
    tg_sb_putc(o, '}');
}

static void waits_json(const struct tg_replay *r, struct tg_sb *o, double *scratch)
{
    struct wstats all = wait_stats(r, -1, scratch);
    tg_sb_puts(o, ",\"wait\":");
    wstats_json(o, &all);
    o->len--; /* reopen the object for bySize */
    tg_sb_puts(o, ",\"bySize\":{");
    int first = 1;
    for (int c = 0; c < NCLASS; c++) {
        struct wstats s = wait_stats(r, c, scratch);
        if (c == 0 && !s.n)
            continue; /* gangs of no GPU: only when there are some */
        tg_sb_printf(o, "%s\"%s\":", first ? "" : ",", SIZE_CLASS[c]);
        first = 0;
        wstats_json(o, &s);
    }
    tg_sb_puts(o, "}}");
}

/* Rank order (scheduler/rank.h), only when members carried ranks:
 * "rankCrossings":{"pairs":N,"<level>":n,...,"node":n}. */
static void rank_json(const struct tg_replay *r, struct tg_sb *o)
{
    const char *names[TG_MAX_LEVELS + 1];
    uint32_t counts[TG_MAX_LEVELS + 1];
    if (!r->sum.rank.pairs)
        return;
    uint32_t n = tg_rank_by_level(&r->policy, &r->sum.rank, names, counts);
    tg_sb_printf(o, ",\"rankCrossings\":{\"pairs\":%u", r->sum.rank.pairs);
    for (uint32_t i = 0; i < n; i++) {
        tg_sb_putc(o, ',');
        tg_sb_json_str(o, names[i]);
        tg_sb_printf(o, ":%u", counts[i]);
    }
    tg_sb_putc(o, '}');
}

/* "rank order: 120 consecutive-rank pairs placed; crossing zone 0, block 2, ..." */
static void rank_line(const struct tg_replay *r, struct tg_sb *o)
{
    const char *names[TG_MAX_LEVELS + 1];
    uint32_t counts[TG_MAX_LEVELS + 1];
    if (!r->sum.rank.pairs)
        return;
    uint32_t n = tg_rank_by_level(&r->policy, &r->sum.rank, names, counts);
    tg_sb_printf(o, "rank order: %u consecutive-rank pairs placed; crossing", r->sum.rank.pairs);
    for (uint32_t i = 0; i < n; i++)
        tg_sb_printf(o, "%s %s %u", i ? "," : "", names[i], counts[i]);
    tg_sb_putc(o, '\n');
}

static void frag_json(const struct tg_replay *r, struct tg_sb *o)
{
    tg_sb_puts(o, ",\"fragmentation\":{\"resource\":");
    tg_sb_json_str(o, tg_res_name(r->main_res));
    tg_sb_printf(o, ",\"samples\":%u,\"periodSeconds\":", r->nsamples);
    tg__replay_secs(o, r->opts.sample_ms);
    tg_sb_puts(o, ",\"freeNodes\":");
    fstat_json(o, frag(r, 0));
    tg_sb_puts(o, ",\"freeDomains\":{");
    for (uint32_t l = 1; l <= r->policy.nlevels; l++) {
        tg_sb_printf(o, "%s", l > 1 ? "," : "");
        tg_sb_json_str(o, r->policy.levels[l - 1].name);
        tg_sb_putc(o, ':');
        fstat_json(o, frag(r, l));
    }
    tg_sb_puts(o, "}}");
}

/* ,"queues":[{"name","parent","usedSeconds":{res:n},"fairShareSeconds":{res:n}}]
 * when the input holds Queues: every queue, parents too. */
static void queues_json(const struct tg_replay *r, struct tg_sb *o)
{
    const struct tg__rqueues *qs = &r->qs;
    const struct tg_fairshare *fs = tg_engine_fairshare(r->engine);
    if (!qs->nq || !fs)
        return;
    tg_sb_puts(o, ",\"queues\":[");
    for (uint32_t q = 0; q < qs->nq; q++) {
        int parent = tg_fairshare_parent(fs, q);
        tg_sb_puts(o, q ? "," : "");
        tg_sb_puts(o, "{\"name\":");
        tg_sb_json_str(o, tg_str(tg_fairshare_name(fs, q)));
        tg_sb_puts(o, ",\"parent\":");
        json_str_or_null(o, parent >= 0 ? tg_str(tg_fairshare_name(fs, (uint32_t)parent)) : NULL);
        for (int w = 0; w < 2; w++) {
            tg_sb_puts(o, w ? "},\"fairShareSeconds\":{" : ",\"usedSeconds\":{");
            for (uint32_t k = 0; k < qs->nres; k++) {
                tg_sb_puts(o, k ? "," : "");
                tg_sb_json_str(o, tg_res_name(qs->res[k]));
                tg_sb_putc(o, ':');
                json_num(o, w ? tg__rq_share_s(r, q, k) : tg__rq_used_s(r, q, k));
            }
        }
        tg_sb_puts(o, "}}");
    }
    tg_sb_putc(o, ']');
}

/* Per queue and integrated resource: resource-seconds held and fair-share
 * seconds, their ratio, and both as averages over the replay. */
static void queues_text(const struct tg_replay *r, struct tg_sb *o)
{
    const struct tg__rqueues *qs = &r->qs;
    const struct tg_fairshare *fs = tg_engine_fairshare(r->engine);
    if (!qs->nq || !fs)
        return;
    double end = (double)r->end / 1000.0;
    tg_sb_printf(o, "queues (resource-seconds held against fair share; averages over the %.0f s):\n",
                 end);
    tg_sb_printf(o, "    %-20s  %-16s  %14s  %18s  %6s  %9s  %10s\n", "QUEUE", "RESOURCE",
                 "USED-SECONDS", "FAIRSHARE-SECONDS", "RATIO", "AVG-HELD", "AVG-SHARE");
    for (uint32_t q = 0; q < qs->nq; q++)
        for (uint32_t k = 0; k < qs->nres; k++) {
            double u = tg__rq_used_s(r, q, k), f = tg__rq_share_s(r, q, k);
            char ratio[16];
            if (f > 0)
                snprintf(ratio, sizeof ratio, "%.2f", u / f);
            else
                snprintf(ratio, sizeof ratio, "-");
            tg_sb_printf(o, "    %-20s  %-16s  %14.0f  %18.0f  %6s  %9.4g  %10.4g\n",
                         k ? "" : tg_str(tg_fairshare_name(fs, q)), tg_res_name(qs->res[k]), u, f,
                         ratio, end > 0 ? u / end : 0.0, end > 0 ? f / end : 0.0);
        }
}

/* The time the last gang completed; the end when some gang did not. */
static int64_t makespan(const struct tg_replay *r)
{
    int64_t m = 0;
    for (uint32_t i = 0; i < r->ngangs; i++) {
        const struct tg__rgang *g = &r->gangs[i];
        if (g->arrival < 0)
            continue;
        if (g->state != TG__RG_DONE)
            return r->end;
        for (uint32_t k = 0; k < g->nruns; k++)
            if (g->runs[k].end > m)
                m = g->runs[k].end;
    }
    return m;
}

static void summary_json(const struct tg_replay *r, struct tg_sb *o)
{
    const struct tg_replay_summary *s = &r->sum;
    double *scratch = malloc((r->ngangs + 1) * sizeof *scratch);
    if (!scratch) {
        o->oom = 1;
        return;
    }
    tg_sb_printf(o, "{\"nodes\":%u,\"gangs\":%u,\"pods\":%u,\"completed\":%u,\"running\":%u,"
                    "\"pending\":%u,\"unschedulable\":%u,\"invalid\":%u,\"neverStarted\":%u,"
                    "\"makespan\":",
                 tg_engine_cluster(r->engine)->nready, s->gangs, s->pods, s->completed, s->running,
                 s->pending, s->unschedulable, s->invalid, s->never_started);
    tg__replay_secs(o, makespan(r));
    tg_sb_puts(o, ",\"end\":");
    tg__replay_secs(o, r->end);
    tg_sb_putc(o, ',');
    utilization_json(r, o);
    waits_json(r, o, scratch);
    tg_sb_printf(o, ",\"timedOut\":%u,\"preemptions\":{\"count\":%u,\"reclaims\":%u,"
                    "\"victimGangs\":%u,\"victimPods\":%u,\"workLost\":",
                 s->timed_out, s->preemptions, s->reclaims, s->victim_gangs, s->victim_pods);
    json_num(o, s->work_lost);
    tg_sb_puts(o, ",\"workLostResource\":");
    tg_sb_json_str(o, tg_res_name(r->main_res));
    tg_sb_printf(o, "},\"reservations\":%u", s->reservations);
    frag_json(r, o);
    rank_json(r, o);
    queues_json(r, o);
    tg_sb_printf(o, ",\"attempts\":%llu,\"events\":%llu,\"replayMs\":%.1f}",
                 (unsigned long long)s->attempts, (unsigned long long)s->events, s->run_ms);
    free(scratch);
}

void tg_replay_json(const struct tg_replay *r, struct tg_sb *o)
{
    uint32_t n, *order = arrived(r, &n);
    if (!order) {
        o->oom = 1;
        return;
    }
    tg_sb_puts(o, "{\"gangs\":[");
    for (uint32_t i = 0; i < n; i++) {
        tg_sb_puts(o, i ? ",\n" : "\n");
        gang_json(r, &r->gangs[order[i]], o);
    }
    tg_sb_puts(o, "\n],\"summary\":");
    summary_json(r, o);
    tg_sb_puts(o, "}\n");
    free(order);
}

/* ---- the table ---------------------------------------------------------------------- */

static void sep(struct tg_sb *o, size_t l0)
{
    if (o->len > l0)
        tg_sb_puts(o, "; ");
}

/* The preemptions g suffered: each, or how many and the first and last. */
static void preempted_notes(const struct tg_replay *r, const struct tg__rgang *g, struct tg_sb *o,
                            size_t l0)
{
    char t[48];
    uint32_t n = 0, first = NONE, last = NONE;
    for (uint32_t k = 0; k < g->nruns; k++)
        if (g->runs[k].why == TG__RUN_PREEMPTED) {
            n++;
            first = first == NONE ? k : first;
            last = k;
        }
    for (uint32_t k = 0; n && k < g->nruns; k++) {
        const struct tg__run *run = &g->runs[k];
        if (run->why != TG__RUN_PREEMPTED || (n > 2 && k != first && k != last))
            continue;
        sep(o, l0);
        if (n > 2)
            tg_sb_printf(o, k == first ? "preempted %u times: first by " : "last by ", n);
        else
            tg_sb_puts(o, "preempted by ");
        tg_sb_printf(o, "%s at %s", r->gangs[run->by].key, clock_text(run->end, t, sizeof t));
    }
}

/* The preemptions g made: one note per decision (its victims share the
 * time), three victims named. */
static void preempts_notes(const struct tg__rgang *g, struct tg_sb *o, size_t l0)
{
    char t[48];
    for (uint32_t k = 0; k < g->npre;) {
        uint32_t end = k, pods = 0;
        while (end < g->npre && g->pre[end].at == g->pre[k].at)
            pods += g->pre[end++].npods;
        sep(o, l0);
        tg_sb_puts(o, "preempts ");
        for (uint32_t j = k; j < end && j < k + 3; j++) {
            const struct tg__pre *x = &g->pre[j];
            tg_sb_printf(o, "%s%s%s", j > k ? ", " : "", x->group ? "" : "pod ",
                         x->group ? x->group : x->npods ? x->pods[0] : "?");
        }
        if (end - k > 3)
            tg_sb_printf(o, " and %u more", end - k - 3);
        tg_sb_printf(o, " (%u pod%s) at %s", pods, pods == 1 ? "" : "s",
                     clock_text(g->pre[k].at, t, sizeof t));
        k = end;
    }
}

/* Preemptions suffered and made, the reservation, the timeout, and why it
 * still waits. */
static void notes(const struct tg_replay *r, const struct tg__rgang *g, struct tg_sb *o)
{
    size_t l0 = o->len;
    char t[48];
    preempted_notes(r, g, o, l0);
    preempts_notes(g, o, l0);
    if (g->resv_at >= 0) {
        sep(o, l0);
        tg_sb_printf(o, "reserved %s at %s", g->resv_domain ? g->resv_domain : "?",
                     clock_text(g->resv_at, t, sizeof t));
    }
    if (g->timed_out) {
        sep(o, l0);
        tg_sb_puts(o, "timed out");
    }
    if (g->state == TG__RG_WAITING && g->reason && g->reason[0]) {
        sep(o, l0);
        tg_sb_printf(o, "waits: %.160s%s", g->reason, strlen(g->reason) > 160 ? "..." : "");
    }
    if (o->len == l0)
        tg_sb_putc(o, '-');
}

static void gang_line(const struct tg_replay *r, const struct tg__rgang *g, int wname, int wdom,
                      struct tg_sb *o)
{
    char name[600], a[48], s[48], w[48];
    const struct tg__run *run = last_run(g);
    snprintf(name, sizeof name, g->grouped ? "%s" : "(%s)", g->key);
    const char *level = run && run->level >= 0 ? tg__replay_level_name(r, run->level) : "-";
    const char *dom = run && run->domain ? (run->domain[0] ? run->domain : "(all)") : "-";
    tg_sb_printf(o, "%-*s  %5lld  %-11s  %-11s  %-7s  %4u  %-13s  %-*s  %-13s  ", wname, name,
                 (long long)g->main, clock_text(g->arrival, a, sizeof a),
                 clock_text(g->nruns && !g->initial ? g->runs[0].start : -1, s, sizeof s),
                 span_text(wait_of(g) >= 0 ? (double)wait_of(g) / 1000.0 : -1, w, sizeof w),
                 g->nruns, level, wdom, dom, tg__replay_status(g));
    notes(r, g, o);
    tg_sb_putc(o, '\n');
}

static void waits_line(const struct tg_replay *r, struct tg_sb *o, double *scratch)
{
    char a[32], b[32], c[32];
    struct wstats all = wait_stats(r, -1, scratch);
    tg_sb_printf(o, "wait before the first start (%u gangs started): p50 %s, p90 %s, p99 %s", all.n,
                 span_text(all.p50, a, sizeof a), span_text(all.p90, b, sizeof b),
                 span_text(all.p99, c, sizeof c));
    for (int k = 0; k < NCLASS; k++) {
        struct wstats s = wait_stats(r, k, scratch);
        if (!s.n)
            continue;
        tg_sb_printf(o, "\n    %s %s (%u gangs): p50 %s, p90 %s, p99 %s", SIZE_CLASS[k],
                     tg_res_name(r->main_res), s.n, span_text(s.p50, a, sizeof a),
                     span_text(s.p90, b, sizeof b), span_text(s.p99, c, sizeof c));
    }
    tg_sb_putc(o, '\n');
}

static void summary_text(const struct tg_replay *r, struct tg_sb *o)
{
    const struct tg_replay_summary *s = &r->sum;
    char a[48], b[48];
    double *scratch = malloc((r->ngangs + 1) * sizeof *scratch);
    if (!scratch) {
        o->oom = 1;
        return;
    }
    tg_sb_printf(o, "%u gangs (%u pods) on %u nodes over %s: %u completed, %u running, %u pending, "
                    "%u unschedulable, %u invalid; makespan %s\n",
                 s->gangs, s->pods, tg_engine_cluster(r->engine)->nready, clock_text(r->end, a, sizeof a),
                 s->completed, s->running, s->pending, s->unschedulable, s->invalid,
                 clock_text(makespan(r), b, sizeof b));
    tg_sb_puts(o, "utilization:");
    for (uint32_t k = 0; k < TG_RES_MAX && k < tg_res_count(); k++)
        if (reported(r, k)) {
            double av = (double)r->alloc[k] * (double)r->end;
            tg_sb_printf(o, " %s %.1f%%", tg_res_name(k), av > 0 ? 100.0 * r->used_ms[k] / av : 0.0);
        }
    tg_sb_putc(o, '\n');
    waits_line(r, o, scratch);
    tg_sb_printf(o, "timed out: %u gang(s); reservations: %u\n", s->timed_out, s->reservations);
    rank_line(r, o);
    tg_sb_printf(o, "preemptions: %u (%u reclaim(s)), evicting %u gang(s) (%u pods); work lost "
                    "%.0f %s-seconds (%.1f %s-hours)\n",
                 s->preemptions, s->reclaims, s->victim_gangs, s->victim_pods, s->work_lost,
                 tg_res_name(r->main_res), s->work_lost / 3600.0, tg_res_name(r->main_res));
    struct fstat f = frag(r, 0);
    tg_sb_printf(o, "fragmentation (mean [min-max] of %u samples every %s): free nodes %.1f [%u-%u]",
                 r->nsamples, span_text((double)r->opts.sample_ms / 1000.0, a, sizeof a), f.mean,
                 f.min, f.max);
    for (uint32_t l = 1; l <= r->policy.nlevels; l++) {
        f = frag(r, l);
        tg_sb_printf(o, "%s %s %.1f [%u-%u]", l == 1 ? "; wholly free" : ",",
                     r->policy.levels[l - 1].name, f.mean, f.min, f.max);
    }
    tg_sb_putc(o, '\n');
    queues_text(r, o);
    free(scratch);
}

static void widths(const struct tg_replay *r, int *wname, int *wdom)
{
    *wname = 4;
    *wdom = 6;
    for (uint32_t i = 0; i < r->ngangs; i++) {
        const struct tg__rgang *g = &r->gangs[i];
        const struct tg__run *run = last_run(g);
        int l = (int)strlen(g->key) + (g->grouped ? 0 : 2);
        *wname = l > *wname ? l : *wname;
        if (run && run->domain && (l = (int)strlen(run->domain)) > *wdom)
            *wdom = l;
    }
    *wname = *wname > 40 ? 40 : *wname;
    *wdom = *wdom > 40 ? 40 : *wdom;
}

void tg_replay_table(const struct tg_replay *r, struct tg_sb *o)
{
    uint32_t n, *order = arrived(r, &n);
    if (!order) {
        o->oom = 1;
        return;
    }
    int wname, wdom;
    widths(r, &wname, &wdom);
    tg_sb_printf(o, "%-*s  %5s  %-11s  %-11s  %-7s  %4s  %-13s  %-*s  %-13s  %s\n", wname, "GANG",
                 "GPUS", "ARRIVAL", "START", "WAIT", "RUNS", "LEVEL", wdom, "DOMAIN", "STATUS",
                 "NOTES");
    for (uint32_t i = 0; i < n; i++)
        gang_line(r, &r->gangs[order[i]], wname, wdom, o);
    tg_sb_putc(o, '\n');
    summary_text(r, o);
    free(order);
}

/* ---- two policies ------------------------------------------------------------------------ */

static const struct tg__rgang *same_gang(const struct tg_replay *r, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&r->gang_idx, key, strlen(key), &v) ? &r->gangs[v] : NULL;
}

enum { D_START = 1, D_DOMAIN = 2, D_STATUS = 4, D_RUNS = 8 };

static unsigned differs(const struct tg__rgang *x, const struct tg__rgang *y)
{
    const struct tg__run *rx = x ? last_run(x) : NULL, *ry = y ? last_run(y) : NULL;
    int64_t sx = x && x->nruns ? x->runs[0].start : -1, sy = y && y->nruns ? y->runs[0].start : -1;
    unsigned m = 0;
    if (sx != sy)
        m |= D_START;
    if ((rx && rx->domain) != (ry && ry->domain) ||
        (rx && rx->domain && ry && ry->domain && strcmp(rx->domain, ry->domain)))
        m |= D_DOMAIN;
    if (!x || !y || strcmp(tg__replay_status(x), tg__replay_status(y)))
        m |= D_STATUS;
    if (!x || !y || x->nruns != y->nruns)
        m |= D_RUNS;
    return m;
}

static void side_json(const struct tg_replay *r, const struct tg__rgang *g, struct tg_sb *o)
{
    if (!g) {
        tg_sb_puts(o, "null");
        return;
    }
    const struct tg__run *run = last_run(g);
    tg_sb_puts(o, "{\"start\":");
    if (g->nruns && g->runs[0].start >= 0)
        tg__replay_secs(o, g->runs[0].start);
    else
        tg_sb_puts(o, "null");
    tg_sb_puts(o, ",\"wait\":");
    if (wait_of(g) >= 0)
        tg__replay_secs(o, wait_of(g));
    else
        tg_sb_puts(o, "null");
    tg_sb_puts(o, ",\"level\":");
    json_str_or_null(o, run && run->level >= 0 ? tg__replay_level_name(r, run->level) : NULL);
    tg_sb_puts(o, ",\"domain\":");
    json_str_or_null(o, run ? run->domain : NULL);
    uint32_t pre = 0;
    for (uint32_t k = 0; k < g->nruns; k++)
        pre += g->runs[k].why == TG__RUN_PREEMPTED;
    tg_sb_printf(o, ",\"runs\":%u,\"preempted\":%u,\"status\":", g->nruns, pre);
    tg_sb_json_str(o, tg__replay_status(g));
    tg_sb_putc(o, '}');
}

void tg_replay_compare_json(const struct tg_replay *a, const struct tg_replay *b,
                            const char *name_a, const char *name_b, struct tg_sb *o)
{
    static const char *const what[] = {"start", "domain", "status", "runs"};
    uint32_t n, *order = arrived(a, &n), ndiff = 0;
    if (!order) {
        o->oom = 1;
        return;
    }
    tg_sb_puts(o, "{\"policies\":[{\"name\":");
    tg_sb_json_str(o, name_a);
    tg_sb_puts(o, ",\"summary\":");
    summary_json(a, o);
    tg_sb_puts(o, "},\n{\"name\":");
    tg_sb_json_str(o, name_b);
    tg_sb_puts(o, ",\"summary\":");
    summary_json(b, o);
    tg_sb_puts(o, "}],\n\"gangs\":[");
    for (uint32_t i = 0; i < n; i++) {
        const struct tg__rgang *x = &a->gangs[order[i]], *y = same_gang(b, x->key);
        unsigned m = differs(x, y);
        ndiff += m != 0;
        tg_sb_puts(o, i ? ",\n{\"podGroup\":" : "\n{\"podGroup\":");
        json_str_or_null(o, x->grouped ? x->key : NULL);
        tg_sb_puts(o, ",\"gang\":");
        tg_sb_json_str(o, x->key);
        tg_sb_puts(o, ",\"a\":");
        side_json(a, x, o);
        tg_sb_puts(o, ",\"b\":");
        side_json(b, y, o);
        tg_sb_puts(o, ",\"differs\":[");
        for (unsigned k = 0, first = 1; k < 4; k++)
            if (m & (1u << k)) {
                tg_sb_printf(o, "%s\"%s\"", first ? "" : ",", what[k]);
                first = 0;
            }
        tg_sb_puts(o, "]}");
    }
    tg_sb_printf(o, "\n],\"differences\":%u}\n", ndiff);
    free(order);
}

static void cmp_row(struct tg_sb *o, const char *what, const char *x, const char *y)
{
    tg_sb_printf(o, "  %-40s  %-22s  %s\n", what, x, y);
}

static void compare_summary(const struct tg_replay *a, const struct tg_replay *b, struct tg_sb *o)
{
    const struct tg_replay *v[2] = {a, b};
    char t[2][64], u[2][32];
    const struct tg_replay_summary *s[2] = {&a->sum, &b->sum};
#define ROW(label, ...)                                                  \
    do {                                                                 \
        for (int i = 0; i < 2; i++)                                      \
            snprintf(t[i], sizeof t[i], __VA_ARGS__);                    \
        cmp_row(o, label, t[0], t[1]);                                   \
    } while (0)
    ROW("makespan", "%s", clock_text(makespan(v[i]), u[i], sizeof u[i]));
    ROW("completed / running / waiting", "%u / %u / %u", s[i]->completed, s[i]->running,
        s[i]->pending + s[i]->unschedulable + s[i]->invalid);
    for (uint32_t k = 0; k < TG_RES_MAX && k < tg_res_count(); k++) {
        if (!reported(a, k))
            continue;
        char label[80];
        snprintf(label, sizeof label, "utilization %s", tg_res_name(k));
        ROW(label, "%.1f%%", v[i]->end > 0 && v[i]->alloc[k] > 0
                                 ? 100.0 * v[i]->used_ms[k] / ((double)v[i]->alloc[k] * (double)v[i]->end)
                                 : 0.0);
    }
    ROW("wait p50", "%s", span_text(s[i]->wait_p50, u[i], sizeof u[i]));
    ROW("wait p90", "%s", span_text(s[i]->wait_p90, u[i], sizeof u[i]));
    ROW("wait p99", "%s", span_text(s[i]->wait_p99, u[i], sizeof u[i]));
    ROW("timed out", "%u", s[i]->timed_out);
    ROW("preemptions (victim gangs, pods)", "%u (%u, %u)", s[i]->preemptions, s[i]->victim_gangs,
        s[i]->victim_pods);
    ROW("reclaims (of the preemptions)", "%u", s[i]->reclaims);
    ROW("work lost (resource-hours)", "%.1f", s[i]->work_lost / 3600.0);
    ROW("reservations", "%u", s[i]->reservations);
    ROW("free nodes (mean)", "%.1f", frag(v[i], 0).mean);
    for (uint32_t l = 1; l <= a->policy.nlevels && l <= b->policy.nlevels; l++) {
        char label[96];
        snprintf(label, sizeof label, "wholly free %s (mean)", a->policy.levels[l - 1].name);
        ROW(label, "%.1f", frag(v[i], l).mean);
    }
#undef ROW
}

void tg_replay_compare_table(const struct tg_replay *a, const struct tg_replay *b,
                             const char *name_a, const char *name_b, struct tg_sb *o)
{
    uint32_t n, *order = arrived(a, &n), ndiff = 0;
    if (!order) {
        o->oom = 1;
        return;
    }
    int wname, wdom, w2, d2;
    widths(a, &wname, &wdom);
    widths(b, &w2, &d2);
    wdom = d2 > wdom ? d2 : wdom;
    tg_sb_printf(o, "A: %s\nB: %s\n\n", name_a, name_b);
    tg_sb_printf(o, "%-*s  %-11s  %-11s  %-*s  %-*s  %-13s  %s\n", wname, "GANG", "START A",
                 "START B", wdom, "DOMAIN A", wdom, "DOMAIN B", "STATUS A", "STATUS B");
    for (uint32_t i = 0; i < n; i++) {
        const struct tg__rgang *x = &a->gangs[order[i]], *y = same_gang(b, x->key);
        if (!differs(x, y))
            continue;
        ndiff++;
        const struct tg__run *rx = last_run(x), *ry = y ? last_run(y) : NULL;
        char name[600], s1[48], s2[48];
        snprintf(name, sizeof name, x->grouped ? "%s" : "(%s)", x->key);
        tg_sb_printf(o, "%-*s  %-11s  %-11s  %-*s  %-*s  %-13s  %s\n", wname, name,
                     clock_text(x->nruns ? x->runs[0].start : -1, s1, sizeof s1),
                     clock_text(y && y->nruns ? y->runs[0].start : -1, s2, sizeof s2), wdom,
                     rx && rx->domain ? rx->domain : "-", wdom, ry && ry->domain ? ry->domain : "-",
                     tg__replay_status(x), y ? tg__replay_status(y) : "-");
    }
    tg_sb_printf(o, "\n%u of %u gangs differ (first start, last domain, state or number of runs)\n\n",
                 ndiff, n);
    cmp_row(o, "", "A", "B");
    compare_summary(a, b, o);
    free(order);
}

/* ---- the command ------------------------------------------------------------------------- */

static int write_file(const char *path, const struct tg_sb *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return TG_EIO;
    size_t n = fwrite(tg_sb_str(s), 1, s->len, f);
    return fclose(f) == 0 && n == s->len ? 0 : TG_EIO;
}

static struct tg_replay *play(const struct tg_simdata *d, const struct tg_policy *p,
                              const struct tg_replay_opts *o)
{
    struct tg_replay *r = tg_replay_new(d, p, o);
    if (r && tg_replay_run(r))
        tg_replay_free(&r);
    if (!r)
        fprintf(stderr, "topogang simulate: out of memory\n");
    return r;
}

int tg_replay_cmd(const struct tg_replay_cmd *c)
{
    struct tg_simdata data;
    struct tg_sb err = {0}, out = {0}, svg = {0};
    struct tg_replay *a = NULL, *b = NULL;
    int rc = 1;
    tg_simdata_init(&data);
    data.quiet = c->quiet;
    for (int i = 0; i < c->nfiles; i++) {
        int lrc = tg_simdata_load_path(&data, c->files[i], &err);
        if (lrc) {
            fprintf(stderr, "topogang simulate: %s\n", err.len ? tg_sb_str(&err) : tg_strerror(lrc));
            goto done;
        }
    }
    if (!(a = play(&data, c->policy, &c->opts)) ||
        (c->policy2 && !(b = play(&data, c->policy2, &c->opts))))
        goto done;
    if (b && !strcmp(c->output, "json"))
        tg_replay_compare_json(a, b, c->name, c->name2, &out);
    else if (b)
        tg_replay_compare_table(a, b, c->name, c->name2, &out);
    else if (!strcmp(c->output, "json"))
        tg_replay_json(a, &out);
    else
        tg_replay_table(a, &out);
    if (c->plot) {
        tg_replay_svg(a, b, c->name, c->name2, &svg);
        if (svg.oom || write_file(c->plot, &svg)) {
            fprintf(stderr, "topogang simulate: cannot write %s\n", c->plot);
            goto done;
        }
    }
    if (out.oom) {
        fprintf(stderr, "topogang simulate: out of memory\n");
        goto done;
    }
    fwrite(tg_sb_str(&out), 1, out.len, stdout);
    rc = 0;
done:
    tg_replay_free(&b);
    tg_replay_free(&a);
    tg_simdata_free(&data);
    tg_sb_free(&err);
    tg_sb_free(&out);
    tg_sb_free(&svg);
    return rc;
}
