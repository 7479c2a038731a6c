/* The clocks topogang reads, in milliseconds.
 *
 * The wall clock is for timestamps written to the API (renewTime, Event
 * times, conditions) and for logs; nothing is decided by comparing it with
 * another machine's. Decisions about how long something took or how long to
 * wait (lease expiry, renew deadline, backoffs, timeouts) use the monotonic
 * clock, which an NTP step or a wrong time on this machine cannot move.
 *
 * Tests shift a process's wall clock with TOPOGANG_TEST_CLOCK_OFFSET
 * ("+30s", "-30s", "1500ms", "-2m"), read once: every wall-clock reading of
 * the process is shifted, the monotonic clock is not. */
#ifndef TG_UTIL_CLOCK_H
#define TG_UTIL_CLOCK_H

#include <stdint.h>

/* CLOCK_REALTIME in ms since the epoch, plus the test offset. */
int64_t tg_clock_wall_ms(void);
/* CLOCK_MONOTONIC in ms (arbitrary origin; runs on while the process is
 * stopped). */
int64_t tg_clock_mono_ms(void);
/* The wall clock as it read at the first call, advanced by the monotonic
 * clock since: close to the wall clock, but a step of it (NTP, an admin) does
 * not move it. For a clock that both measures durations and is compared with
 * API timestamps (creationTimestamp), as the scheduling engine's. */
int64_t tg_clock_steady_wall_ms(void);
/* Parses an offset: an optional sign, digits, then "ms", "s" (default), "m"
 * or "h". Returns 0, or TG_EINVAL (*ms untouched). */
int tg_clock_parse_offset(const char *s, int64_t *ms);

#endif
