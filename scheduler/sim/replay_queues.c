/* Tenant queues over a replay (issue 19): how much each queue held against
 * its fair share, integrated over virtual time.
 *
 * The numbers are the engine's (tg_engine_fairshare: the allocated amount
 * and fair share `simulate` prints per queue); this file only integrates
 * them. Between two event times nothing changes (the replay's loop moves
 * the clock, handles the events due, then drains the engine, whose last
 * tg_engine_next brings the fair shares up to date), so the integrals move
 * once per event time, at the amounts left by the previous one: O(queues x
 * integrated resources) per event, nothing rescanned.
 *
 * Integrated: the main resource (GPUs) and every resource some Queue divides
 * (tg_fairshare_divides), when nodes offer it. The replay ends at --until or at
 * its last cluster change; the integrals are checkpointed at each change so
 * that an engine timer firing after it (a backoff, a flush) does not count
 * past the end. No policy keys of its own. */
#include "scheduler/sim/replay_int.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

static int integrated(const struct tg_replay *r, const struct tg_fairshare *fs, uint32_t k)
{
    if (k >= TG_RES_MAX || r->alloc[k] <= 0 || k == TG_RES_PODS || k == TG_RES_EPHEMERAL ||
        k == TG_RES_UNOFFERED)
        return 0;
    return k == r->main_res || tg_fairshare_divides(fs, k);
}

int tg__rq_init(struct tg_replay *r)
{
    struct tg__rqueues *s = &r->qs;
    const struct tg_fairshare *fs = tg_engine_fairshare(r->engine);
    s->at = r->now;
    if (!fs || !tg_fairshare_count(fs))
        return 0;
    s->nq = tg_fairshare_count(fs);
    if (integrated(r, fs, r->main_res))
        s->res[s->nres++] = r->main_res;
    for (uint32_t k = 0; k < tg_res_count() && s->nres < TG_FS_MAX_RES; k++)
        if (k != r->main_res && integrated(r, fs, k))
            s->res[s->nres++] = k;
    size_t n = (size_t)s->nq * (s->nres ? s->nres : 1);
    s->used_ms = calloc(n, sizeof *s->used_ms);
    s->share_ms = calloc(n, sizeof *s->share_ms);
    s->snap_used = calloc(n, sizeof *s->snap_used);
    s->snap_share = calloc(n, sizeof *s->snap_share);
    return s->used_ms && s->share_ms && s->snap_used && s->snap_share ? 0 : TG_ENOMEM;
}

void tg__rq_integrate(struct tg_replay *r, int64_t upto)
{
    struct tg__rqueues *s = &r->qs;
    int64_t dt = upto - s->at;
    if (dt <= 0 || !s->nq)
        return;
    const struct tg_fairshare *fs = tg_engine_fairshare(r->engine);
    for (uint32_t q = 0; q < s->nq; q++)
        for (uint32_t k = 0; k < s->nres; k++) {
            size_t i = (size_t)q * s->nres + k;
            s->used_ms[i] += tg_fairshare_allocated(fs, q, s->res[k]) * (double)dt;
            s->share_ms[i] += tg_fairshare_share(fs, q, s->res[k]) * (double)dt;
        }
    s->at = upto;
}

void tg__rq_checkpoint(struct tg_replay *r)
{
    struct tg__rqueues *s = &r->qs;
    if (!s->nq || r->last_change != r->now)
        return;
    tg__rq_integrate(r, r->now);
    size_t n = (size_t)s->nq * s->nres;
    memcpy(s->snap_used, s->used_ms, n * sizeof *s->used_ms);
    memcpy(s->snap_share, s->share_ms, n * sizeof *s->share_ms);
}

void tg__rq_finish(struct tg_replay *r, int until_hit)
{
    struct tg__rqueues *s = &r->qs;
    if (!s->nq)
        return;
    if (until_hit) {
        tg__rq_integrate(r, r->t0 + r->end);
        return;
    }
    size_t n = (size_t)s->nq * s->nres; /* the end is the last change: its checkpoint */
    memcpy(s->used_ms, s->snap_used, n * sizeof *s->used_ms);
    memcpy(s->share_ms, s->snap_share, n * sizeof *s->share_ms);
    s->at = r->t0 + r->end;
}

int tg__rq_sample(struct tg_replay *r, uint32_t i)
{
    struct tg__rqueues *s = &r->qs;
    if (!s->nq)
        return 0;
    if (i >= s->capsamp) {
        uint32_t nc = s->capsamp ? s->capsamp * 2 : 64;
        while (nc <= i)
            nc *= 2;
        float *v = realloc(s->samp, (size_t)nc * 2 * s->nq * sizeof *v);
        if (!v)
            return TG_ENOMEM;
        s->samp = v;
        s->capsamp = nc;
    }
    const struct tg_fairshare *fs = tg_engine_fairshare(r->engine);
    float *row = &s->samp[(size_t)i * 2 * s->nq];
    for (uint32_t q = 0; q < s->nq; q++) {
        row[2 * q] = (float)tg_fairshare_allocated(fs, q, r->main_res);
        row[2 * q + 1] = (float)tg_fairshare_share(fs, q, r->main_res);
    }
    return 0;
}

void tg__rq_free(struct tg_replay *r)
{
    struct tg__rqueues *s = &r->qs;
    free(s->used_ms);
    free(s->share_ms);
    free(s->snap_used);
    free(s->snap_share);
    free(s->samp);
    memset(s, 0, sizeof *s);
}

/* Model units x ms -> Kubernetes units x s (cpu: millicores to cores). */
static double seconds(const struct tg_replay *r, uint32_t k, double v)
{
    return v / 1000.0 / (tg_res_is_milli(r->qs.res[k]) ? 1000.0 : 1.0);
}

double tg__rq_used_s(const struct tg_replay *r, uint32_t q, uint32_t k)
{
    return seconds(r, k, r->qs.used_ms[(size_t)q * r->qs.nres + k]);
}

double tg__rq_share_s(const struct tg_replay *r, uint32_t q, uint32_t k)
{
    return seconds(r, k, r->qs.share_ms[(size_t)q * r->qs.nres + k]);
}
