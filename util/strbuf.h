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

/* The length of the longest prefix of s[0..len) of at most max bytes that
 * ends on a UTF-8 character boundary (a multi-byte character is never
 * split; bytes that are not UTF-8 count as one character each). */
size_t tg_utf8_prefix(const char *s, size_t len, size_t max);
/* Copies s into out[cap] whole when it fits, else its UTF-8 prefix and then
 * tail ("...", " and 3 more") so that the result has at most cap - 1 bytes;
 * returns 1 when cut. tail must be shorter than cap. */
int tg_utf8_clip(const char *s, char *out, size_t cap, const char *tail);

#endif
