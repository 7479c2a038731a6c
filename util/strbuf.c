/* Growable string buffer; see strbuf.h. */
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(struct tg_sb *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t ncap = b->cap ? b->cap : 64;
    while (ncap < b->len + extra + 1)
        ncap *= 2;
    char *ns = realloc(b->s, ncap);
    if (!ns) {
        b->oom = 1;
        return -1;
    }
    b->s = ns;
    b->cap = ncap;
    return 0;
}

void tg_sb_putn(struct tg_sb *b, const char *s, size_t n)
{
    if (reserve(b, n))
        return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void tg_sb_puts(struct tg_sb *b, const char *s) { tg_sb_putn(b, s, strlen(s)); }

void tg_sb_putc(struct tg_sb *b, char c) { tg_sb_putn(b, &c, 1); }

void tg_sb_printf(struct tg_sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        tg_sb_putn(b, tmp, (size_t)n);
        return;
    }
    if (reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void tg_sb_json_str(struct tg_sb *b, const char *s)
{
    tg_sb_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const unsigned char *q = p;     /* a run that needs no escape: one copy */
        while (*q >= 0x20 && *q != '"' && *q != '\\')
            q++;
        if (q > p) {
            tg_sb_putn(b, (const char *)p, (size_t)(q - p));
            if (!*q)
                break;
            p = q;
        }
        switch (*p) {
        case '"': tg_sb_puts(b, "\\\""); break;
        case '\\': tg_sb_puts(b, "\\\\"); break;
        case '\n': tg_sb_puts(b, "\\n"); break;
        case '\r': tg_sb_puts(b, "\\r"); break;
        case '\t': tg_sb_puts(b, "\\t"); break;
        default:
            if (*p < 0x20)
                tg_sb_printf(b, "\\u%04x", *p);
            else
                tg_sb_putc(b, (char)*p);
        }
    }
    tg_sb_putc(b, '"');
}

const char *tg_sb_str(const struct tg_sb *b) { return b->s ? b->s : ""; }

void tg_sb_reset(struct tg_sb *b)
{
    b->len = 0;
    if (b->s)
        b->s[0] = 0;
}

void tg_sb_free(struct tg_sb *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

size_t tg_utf8_prefix(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    /* back over continuation bytes (10xxxxxx) to the start of the character
     * that does not fit; at most 3 of them belong to one character */
    size_t back = 0;
    while (n > 0 && back < 3 && ((unsigned char)s[n] & 0xc0) == 0x80) {
        n--;
        back++;
    }
    if (((unsigned char)s[n] & 0xc0) == 0x80)
        return max;                 /* not UTF-8 there: bytes are characters */
    return n;
}

int tg_utf8_clip(const char *s, char *out, size_t cap, const char *tail)
{
    size_t len = strlen(s), tl = strlen(tail);
    if (len < cap) {
        memcpy(out, s, len + 1);
        return 0;
    }
    size_t k = tg_utf8_prefix(s, len, cap - 1 - tl);
    memcpy(out, s, k);
    memcpy(out + k, tail, tl + 1);
    return 1;
}
