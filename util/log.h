/* Structured logging: one logfmt line per record on stderr,
 *   ts=2026-11-22T01:30:00.123Z level=info component=placement msg="..."
 * The level threshold is process-wide (tg_log_set_level, --v / TOPOGANG_LOG).
 * The message is printf-formatted and quoted; quotes and newlines are escaped.
 * stderr is unbuffered: a record is one write unless tg_log_buffer is on. */
#ifndef TG_UTIL_LOG_H
#define TG_UTIL_LOG_H

#include <stdarg.h>

enum tg_log_level { TG_LOG_DEBUG, TG_LOG_INFO, TG_LOG_WARN, TG_LOG_ERROR };

void tg_log_set_level(enum tg_log_level lvl);
/* Parses "debug", "info", "warn", "error"; returns 0 or TG_EINVAL. */
int tg_log_parse_level(const char *s, enum tg_log_level *out);
int tg_log_enabled(enum tg_log_level lvl);
void tg_log(enum tg_log_level lvl, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tg_logv(enum tg_log_level lvl, const char *component, const char *fmt, va_list ap);

/* Buffering, for a single-threaded loop that logs a line per pod: while on,
 * debug and info records are held (64 KiB at most) and written together by
 * tg_log_flush, which the loop calls before it waits; a warning or an error
 * writes the held ones and itself at once, and so does the process's exit.
 * Off (the default): every record is written as it is made. Not thread-safe
 * while on. */
void tg_log_buffer(int on);
void tg_log_flush(void);

#define tg_debug(comp, ...) do { if (tg_log_enabled(TG_LOG_DEBUG)) tg_log(TG_LOG_DEBUG, comp, __VA_ARGS__); } while (0)
#define tg_info(comp, ...)  tg_log(TG_LOG_INFO, comp, __VA_ARGS__)
#define tg_warn(comp, ...)  tg_log(TG_LOG_WARN, comp, __VA_ARGS__)
#define tg_error(comp, ...) tg_log(TG_LOG_ERROR, comp, __VA_ARGS__)

#endif
