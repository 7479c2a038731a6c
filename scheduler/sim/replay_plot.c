/* The replay's picture: one self-contained SVG (no scripts, fonts or other
 * files) with three panels over the replay's time: utilization of the main
 * extended resource, gangs waiting in the queue, and the resource those
 * gangs wait for. A second replay (--compare) is drawn dashed over the
 * first. With tenant Queues a fourth panel shows each queue's share of the
 * main resource (of the first replay): what it held, a solid polyline of
 * class 'queue', and its fair share, a dotted one of class 'fairshare', both
 * in the queue's colour and named by data-queue. Written by hand: a few
 * hundred bytes of markup per panel plus one polyline per series. */
#include "scheduler/sim/replay_int.h"
#include "util/intern.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { W = 960, PH = 170, LEFT = 78, RIGHT = 24, TOP = 64, GAP = 46, MAX_POINTS = 2400 };

static const char *const COLOR[2] = {"#1f77b4", "#e4572e"};
static const char *const QCOLOR[] = {"#1f77b4", "#e4572e", "#2ca02c", "#9467bd", "#ff7f0e",
                                     "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
enum { NQCOLOR = sizeof QCOLOR / sizeof QCOLOR[0] };

struct panel {
    const char *title;
    int kind;                           /* 0 utilization %, 1 queue, 2 waiting */
    double ymax;
};

static void esc(struct tg_sb *o, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': tg_sb_puts(o, "&amp;"); break;
        case '<': tg_sb_puts(o, "&lt;"); break;
        case '>': tg_sb_puts(o, "&gt;"); break;
        case '"': tg_sb_puts(o, "&quot;"); break;
        default: tg_sb_putc(o, *s);
        }
    }
}

static double value(const struct tg_replay *r, const struct tg__sample *s, int kind)
{
    if (kind == 0)
        return r->alloc[r->main_res] > 0 ? 100.0 * (double)s->used / (double)r->alloc[r->main_res] : 0;
    return kind == 1 ? (double)s->queue : (double)s->waiting;
}

/* 1, 2, 5 x 10^k at or above v (at least 1). */
static double nice(double v)
{
    if (v <= 1)
        return 1;
    double p = pow(10, floor(log10(v))), m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static double x_of(double t_ms, double end_ms)
{
    return LEFT + (W - LEFT - RIGHT) * (end_ms > 0 ? t_ms / end_ms : 0);
}

static void time_label(char *buf, size_t n, int64_t ms)
{
    long long s = (long long)(ms / 1000);
    if (s % 86400 == 0 && s)
        snprintf(buf, n, "%lldd", s / 86400);
    else
        snprintf(buf, n, "%lld:%02lld", s / 3600, s / 60 % 60);
}

static void x_axis(struct tg_sb *o, int y0, double end)
{
    static const int64_t steps[] = {60000, 300000, 900000, 1800000, 3600000, 7200000, 10800000,
                                    21600000, 43200000, 86400000, 172800000, 604800000};
    int64_t step = steps[sizeof steps / sizeof steps[0] - 1];
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (end / (double)steps[i] <= 12) {
            step = steps[i];
            break;
        }
    for (int64_t t = 0; (double)t <= end; t += step) {
        char lab[32];
        double x = x_of((double)t, end);
        time_label(lab, sizeof lab, t);
        tg_sb_printf(o, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ccc'/>"
                        "<text x='%.1f' y='%d' text-anchor='middle'>%s</text>\n",
                     x, y0 - PH, x, y0 + 4, x, y0 + 18, lab);
    }
}

static void series(struct tg_sb *o, const struct tg_replay *r, int kind, int y0, double ymax,
                   double end, int which)
{
    if (!r->nsamples)
        return;
    uint32_t stride = r->nsamples > MAX_POINTS ? (r->nsamples + MAX_POINTS - 1) / MAX_POINTS : 1;
    tg_sb_printf(o, "<polyline fill='none' stroke='%s' stroke-width='1.6'%s points='", COLOR[which],
                 which ? " stroke-dasharray='6 3'" : "");
    double prev_y = -1;
    for (uint32_t i = 0; i < r->nsamples; i += stride) {
        const struct tg__sample *s = &r->samples[i];
        double y = y0 - PH * (value(r, s, kind) / ymax), x = x_of((double)s->t, end);
        if (prev_y >= 0)
            tg_sb_printf(o, "%.1f,%.1f ", x, prev_y); /* a step: level until the change */
        tg_sb_printf(o, "%.1f,%.1f ", x, y);
        prev_y = y;
    }
    tg_sb_printf(o, "%.1f,%.1f'/>\n", x_of(end, end), prev_y);
}

static void panel(struct tg_sb *o, const struct panel *p, const struct tg_replay *const *r, int n,
                  int y0, double end)
{
    tg_sb_printf(o, "<text x='%d' y='%d' font-weight='bold'>", LEFT, y0 - PH - 8);
    esc(o, p->title);
    tg_sb_puts(o, "</text>\n");
    tg_sb_printf(o, "<rect x='%d' y='%d' width='%d' height='%d' fill='#fafafa' stroke='#999'/>\n",
                 LEFT, y0 - PH, W - LEFT - RIGHT, PH);
    for (int k = 0; k <= 2; k++) {
        double v = p->ymax * k / 2, y = y0 - PH * k / 2.0;
        tg_sb_printf(o, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/>"
                        "<text x='%d' y='%.1f' text-anchor='end'>%g%s</text>\n",
                     LEFT, y, W - RIGHT, y, LEFT - 6, y + 4, v, p->kind == 0 ? "%" : "");
    }
    x_axis(o, y0, end);
    for (int i = 0; i < n; i++)
        series(o, r[i], p->kind, y0, p->ymax, end, i);
}

static double peak(const struct tg_replay *const *r, int n, int kind)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        for (uint32_t k = 0; k < r[i]->nsamples; k++) {
            double v = value(r[i], &r[i]->samples[k], kind);
            m = v > m ? v : m;
        }
    return nice(m);
}

/* Queue q's allocated (share 0) or fair share (1) of the main resource
 * over time, as % of the cluster's. */
static void queue_series(struct tg_sb *o, const struct tg_replay *r, uint32_t q, int share, int y0,
                         double end)
{
    const struct tg__rqueues *qs = &r->qs;
    double cap = (double)r->alloc[r->main_res];
    uint32_t stride = r->nsamples > MAX_POINTS ? (r->nsamples + MAX_POINTS - 1) / MAX_POINTS : 1;
    tg_sb_printf(o, "<polyline class='%s' data-queue='", share ? "fairshare" : "queue");
    esc(o, tg_str(tg_fairshare_name(tg_engine_fairshare(r->engine), q)));
    tg_sb_printf(o, "' fill='none' stroke='%s' stroke-width='%s'%s points='", QCOLOR[q % NQCOLOR],
                 share ? "1.2" : "1.8", share ? " stroke-dasharray='2 3'" : "");
    double prev_y = y0;
    for (uint32_t i = 0; i < r->nsamples; i += stride) {
        double v = qs->samp[(size_t)i * 2 * qs->nq + 2 * q + (uint32_t)share];
        double y = y0 - PH * (cap > 0 ? v / cap : 0), x = x_of((double)r->samples[i].t, end);
        if (i)
            tg_sb_printf(o, "%.1f,%.1f ", x, prev_y);
        tg_sb_printf(o, "%.1f,%.1f ", x, y);
        prev_y = y;
    }
    tg_sb_printf(o, "%.1f,%.1f'/>\n", x_of(end, end), prev_y);
}

/* The fourth panel: each queue's share of the main resource over time. */
static void queues_panel(struct tg_sb *o, const struct tg_replay *r, int y0, double end)
{
    const struct tg_fairshare *fs = tg_engine_fairshare(r->engine);
    char title[128];
    snprintf(title, sizeof title, "%s per queue (%% of %lld): held (solid), fair share (dotted)",
             tg_res_name(r->main_res), (long long)r->alloc[r->main_res]);
    struct panel p = {title, 0, 100};
    panel(o, &p, NULL, 0, y0, end);
    for (uint32_t q = 0; q < r->qs.nq; q++) {
        int x = LEFT + (int)(q % 6) * 140, y = y0 + 34 + (int)(q / 6) * 16;
        tg_sb_printf(o, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' stroke-width='2'/>"
                        "<text x='%d' y='%d'>", x, y - 4, x + 22, y - 4, QCOLOR[q % NQCOLOR],
                     x + 28, y);
        esc(o, tg_str(tg_fairshare_name(fs, q)));
        tg_sb_puts(o, "</text>\n");
    }
    if (!r->nsamples)
        return;
    for (uint32_t q = 0; q < r->qs.nq; q++) {
        queue_series(o, r, q, 0, y0, end);
        queue_series(o, r, q, 1, y0, end);
    }
}

static void legend(struct tg_sb *o, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        int x = LEFT + i * 420;
        tg_sb_printf(o, "<line x1='%d' y1='44' x2='%d' y2='44' stroke='%s' stroke-width='2'%s/>"
                        "<text x='%d' y='48'>", x, x + 28, COLOR[i],
                     i ? " stroke-dasharray='6 3'" : "", x + 34);
        esc(o, names[i]);
        tg_sb_puts(o, "</text>\n");
    }
}

void tg_replay_svg(const struct tg_replay *a, const struct tg_replay *b, const char *name_a,
                   const char *name_b, struct tg_sb *o)
{
    const struct tg_replay *r[2] = {a, b};
    const char *names[2] = {name_a ? name_a : "policy", name_b ? name_b : "policy 2"};
    int n = b ? 2 : 1;
    double end = (double)(b && b->end > a->end ? b->end : a->end);
    if (end <= 0)
        end = 1;
    char t0[96], t1[96], t2[96];
    snprintf(t0, sizeof t0, "%s utilization (%% of %lld)", tg_res_name(a->main_res),
             (long long)a->alloc[a->main_res]);
    snprintf(t1, sizeof t1, "gangs waiting in the queue");
    snprintf(t2, sizeof t2, "%s requested by the gangs waiting", tg_res_name(a->main_res));
    struct panel p[3] = {{t0, 0, 100}, {t1, 1, peak(r, n, 1)}, {t2, 2, peak(r, n, 2)}};
    int npanels = a->qs.nq ? 4 : 3;
    int height = TOP + npanels * (PH + GAP) + 10 + (a->qs.nq ? 24 + 16 * (int)((a->qs.nq - 1) / 6) : 0);
    tg_sb_printf(o, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
                    "viewBox='0 0 %d %d' font-family='sans-serif' font-size='12'>\n"
                    "<rect width='100%%' height='100%%' fill='white'/>\n"
                    "<text x='%d' y='22' font-size='15' font-weight='bold'>topogang simulate "
                    "--replay: time since the trace start (h:mm)</text>\n",
                 W, height, W, height, LEFT);
    legend(o, names, n);
    for (int i = 0; i < 3; i++)
        panel(o, &p[i], r, n, TOP + (i + 1) * (PH + GAP) - GAP + 20, end);
    if (a->qs.nq)
        queues_panel(o, a, TOP + 4 * (PH + GAP) - GAP + 20, end);
    tg_sb_puts(o, "</svg>\n");
}
