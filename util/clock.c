/* Wall and monotonic clocks, and the test offset of the wall clock; see
 * clock.h. Config: TOPOGANG_TEST_CLOCK_OFFSET (tests only). */
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int tg_clock_parse_offset(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return TG_EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || (*s != '+' && *s != '-' && (*s < '0' || *s > '9')))
        return TG_EINVAL;
    long long unit;
    if (!strcmp(end, "ms"))
        unit = 1;
    else if (!*end || !strcmp(end, "s"))
        unit = 1000;
    else if (!strcmp(end, "m"))
        unit = 60000;
    else if (!strcmp(end, "h"))
        unit = 3600000;
    else
        return TG_EINVAL;
    /* a year either way is plenty for a test, and cannot overflow */
    if (v > 366LL * 86400000 / unit || v < -366LL * 86400000 / unit)
        return TG_EINVAL;
    *ms = v * unit;
    return 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int64_t off, wall0, mono0;

static int64_t real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Once per process (any thread may log): the offset, and the anchor of the
 * steady wall clock. A bad offset is said on stderr and ignored. */
static void init(void)
{
    const char *s = getenv("TOPOGANG_TEST_CLOCK_OFFSET");
    if (s && *s && tg_clock_parse_offset(s, &off))
        fprintf(stderr, "topogang: TOPOGANG_TEST_CLOCK_OFFSET=%s is not an offset like +30s, "
                        "-1500ms: ignored\n", s);
    wall0 = real_ms() + off;
    mono0 = tg_clock_mono_ms();
}

int64_t tg_clock_wall_ms(void)
{
    pthread_once(&once, init);
    return real_ms() + off;
}

int64_t tg_clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tg_clock_steady_wall_ms(void)
{
    pthread_once(&once, init);
    return wall0 + (tg_clock_mono_ms() - mono0);
}
