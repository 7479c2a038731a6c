/* The AIMD congestion window (see aimd.h). */
#include "util/aimd.h"

void tg_aimd_init(struct tg_aimd *w, uint32_t max)
{
    *w = (struct tg_aimd){.max = max ? max : 1};
    w->cwnd = w->ssthresh = w->max;
}

uint32_t tg_aimd_window(const struct tg_aimd *w)
{
    return w->cwnd;
}

uint64_t tg_aimd_send(struct tg_aimd *w)
{
    return ++w->sent;
}

void tg_aimd_ok(struct tg_aimd *w, int64_t now_ms)
{
    if (w->cuts && w->ssthresh < w->max && now_ms - w->cut_ms >= TG_AIMD_CALM_MS)
        w->ssthresh = w->max; /* calm again: grow by one per success up to max */
    if (w->cwnd >= w->max)
        return;
    if (w->cwnd < w->ssthresh) {
        w->cwnd++;
        return;
    }
    if (++w->acked >= w->cwnd) {
        w->acked = 0;
        w->cwnd++;
    }
}

int tg_aimd_throttled(struct tg_aimd *w, uint64_t seq, uint32_t flight, int64_t now_ms)
{
    if (seq < w->cut_seq)
        return 0; /* sent before the last cut: that cut answered it */
    uint32_t base = flight && flight < w->cwnd ? flight : w->cwnd;
    w->cwnd = base / 2 ? base / 2 : 1;
    w->ssthresh = w->cwnd;
    w->acked = 0;
    w->cut_seq = w->sent + 1;
    w->cut_ms = now_ms;
    w->cuts++;
    return 1;
}
