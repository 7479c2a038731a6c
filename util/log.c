/* logfmt records on stderr; see log.h. */
#include "util/log.h"
#include "util/clock.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static enum tg_log_level threshold = TG_LOG_INFO;

/* tg_log_buffer: debug and info records gathered here, written by
 * tg_log_flush, by the next warning or error (after them, in order), or when
 * full; one write(2) for many records instead of one each. */
static struct {
    int on;
    size_t len;
    char buf[1 << 16];
} held;

void tg_log_flush(void)
{
    if (held.len) {
        fwrite(held.buf, 1, held.len, stderr);
        held.len = 0;
    }
}

void tg_log_buffer(int on)
{
    static int registered;
    if (!on)
        tg_log_flush();
    else if (!registered)
        registered = atexit(tg_log_flush) == 0;
    held.on = on;
}
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void tg_log_set_level(enum tg_log_level lvl) { threshold = lvl; }

int tg_log_enabled(enum tg_log_level lvl) { return lvl >= threshold; }

int tg_log_parse_level(const char *s, enum tg_log_level *out)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum tg_log_level)i;
            return 0;
        }
    return TG_EINVAL;
}

void tg_logv(enum tg_log_level lvl, const char *component, const char *fmt, va_list ap)
{
    if (lvl < threshold)
        return;
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);

    int64_t now = tg_clock_wall_ms();
    time_t sec = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    char line[4608];
    size_t n = (size_t)snprintf(line, sizeof line, "ts=%s.%03ldZ level=%s component=%s msg=\"",
                                when, (long)(now % 1000), level_names[lvl], component);
    for (const char *p = msg; *p && n + 4 < sizeof line; p++) {
        if (*p == '"' || *p == '\\') {
            line[n++] = '\\';
            line[n++] = *p;
        } else if (*p == '\n') {
            line[n++] = '\\';
            line[n++] = 'n';
        } else {
            line[n++] = *p;
        }
    }
    line[n++] = '"';
    line[n++] = '\n';
    if (held.on && lvl < TG_LOG_WARN) {
        if (held.len + n > sizeof held.buf)
            tg_log_flush();
        memcpy(held.buf + held.len, line, n);
        held.len += n;
        return;
    }
    tg_log_flush();
    fwrite(line, 1, n, stderr);
}

void tg_log(enum tg_log_level lvl, const char *component, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tg_logv(lvl, component, fmt, ap);
    va_end(ap);
}
