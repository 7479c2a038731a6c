/* logfmt records on stderr; see log.h. */
#include "util/log.h"
#include "util/clock.h"
#include "util/err.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static enum tg_log_level threshold = TG_LOG_INFO;
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
    fwrite(line, 1, n, stderr);
}

void tg_log(enum tg_log_level lvl, const char *component, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tg_logv(lvl, component, fmt, ap);
    va_end(ap);
}
