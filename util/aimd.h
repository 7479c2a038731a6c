/* A congestion window for requests to a server that answers "too many"
 * (HTTP 429 from API Priority and Fairness, 503): additive increase,
 * multiplicative decrease, as TCP Reno's window and client-go's adaptive
 * limiters. The caller sends while fewer than tg_aimd_window() requests of
 * its lane are in flight.
 *
 * - It starts at max: a server that never throttles sees no limit.
 * - A throttled answer halves the flight it was part of (floor 1), once per
 *   window: only a request sent after the last cut can cut again, so a wave
 *   of 429s to requests sent together halves once, not to 1.
 * - Each success grows it by one up to the threshold the last cut set (slow
 *   start), past it by one per window's worth of successes; after
 *   TG_AIMD_CALM_MS without a cut the threshold is max again.
 *
 * Plain data, no allocation; the caller owns it. */
#ifndef TG_UTIL_AIMD_H
#define TG_UTIL_AIMD_H

#include <stdint.h>

#define TG_AIMD_CALM_MS 10000

struct tg_aimd {
    uint32_t cwnd, ssthresh, max;
    uint32_t acked;         /* successes since cwnd last grew past ssthresh */
    uint64_t sent;          /* requests sent (their sequence numbers) */
    uint64_t cut_seq;       /* first sequence number sent after the last cut */
    int64_t cut_ms;         /* the caller's clock at the last cut */
    uint64_t cuts;          /* how many times it was halved */
};

/* A window of max (>= 1) in flight. */
void tg_aimd_init(struct tg_aimd *w, uint32_t max);
/* Requests that may be in flight now. */
uint32_t tg_aimd_window(const struct tg_aimd *w);
/* A request goes out: returns its sequence number, for tg_aimd_throttled. */
uint64_t tg_aimd_send(struct tg_aimd *w);
/* A request was answered, not throttled, at now_ms. */
void tg_aimd_ok(struct tg_aimd *w, int64_t now_ms);
/* The request of sequence seq was throttled at now_ms, with flight requests
 * of the lane in flight when it was answered (itself included). Returns 1
 * when the window was halved, 0 when an earlier cut already covered it. */
int tg_aimd_throttled(struct tg_aimd *w, uint64_t seq, uint32_t flight, int64_t now_ms);

#endif
