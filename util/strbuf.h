/* Growable NUL-terminated string buffer for reasons, JSON output and request
 * bodies. A zero-initialised struct is an empty buffer; tg_sb_free releases it.
 * On allocation failure the buffer keeps what fits and sets .oom. */
#ifndef TG_UTIL_STRBUF_H
#define TG_UTIL_STRBUF_H

#include <stddef.h>

struct tg_sb {
    char *s;
    size_t len, cap;
    int oom;
};

void tg_sb_putn(struct tg_sb *b, const char *s, size_t n);
void tg_sb_puts(struct tg_sb *b, const char *s);
void tg_sb_putc(struct tg_sb *b, char c);
void tg_sb_printf(struct tg_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included. */
void tg_sb_json_str(struct tg_sb *b, const char *s);
const char *tg_sb_str(const struct tg_sb *b);   /* "" when empty */
void tg_sb_reset(struct tg_sb *b);              /* len = 0, keeps memory */
void tg_sb_free(struct tg_sb *b);

#endif
