/* Streaming LIST body splitter (see liststream.h). A byte-level scanner
 * tracks nesting depth and strings; only the current item (or metadata) and
 * an unfinished top-level key are kept in the buffer. */
#include "informer/liststream.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"

void tg_liststream_reset(struct tg_liststream *s, tg_list_part_fn on_item,
                         tg_list_part_fn on_meta, void *ud)
{
    char *buf = s->buf;
    size_t cap = s->cap;
    memset(s, 0, sizeof *s);
    s->buf = buf;
    s->cap = cap;
    s->on_item = on_item;
    s->on_meta = on_meta;
    s->ud = ud;
}

void tg_liststream_free(struct tg_liststream *s)
{
    free(s->buf);
    memset(s, 0, sizeof *s);
}

int tg_liststream_finish(const struct tg_liststream *s)
{
    return s->done ? 0 : TG_EPARSE;
}

static int append(struct tg_liststream *s, const char *d, size_t n)
{
    if (n == 0)
        return 0;               /* buf may still be NULL: no memcpy to NULL + 0 */
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap < s->len + n)
            cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b)
            return TG_ENOMEM;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, d, n);
    s->len += n;
    return 0;
}

/* Drops the bytes no capture needs any more. */
static void compact(struct tg_liststream *s)
{
    size_t keep = s->len;
    if (s->capture)
        keep = s->start;
    else if (s->key_open)
        keep = s->kstart;
    if (keep == 0)
        return;
    memmove(s->buf, s->buf + keep, s->len - keep);
    s->len -= keep;
    s->pos -= keep;
    s->start -= s->capture ? keep : 0;
    s->kstart -= s->key_open ? keep : 0;
}

static int scan(struct tg_liststream *s)
{
    char *b = s->buf;
    for (size_t i = s->pos; i < s->len; i++) {
        char c = b[i];
        if (s->in_str) {
            if (s->esc) {
                s->esc = 0;
            } else if (c == '\\') {
                s->esc = 1;
            } else if (c == '"') {
                s->in_str = 0;
                if (s->key_open) {
                    size_t n = i - s->kstart - 1;
                    if (n >= sizeof s->key)
                        n = sizeof s->key - 1;
                    memcpy(s->key, b + s->kstart + 1, n);
                    s->key[n] = 0;
                    s->key_open = 0;
                }
            }
            continue;
        }
        if (s->done) {
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                s->pos = s->len;
                return TG_EPARSE;
            }
            continue;
        }
        switch (c) {
        case '"':
            s->in_str = 1;
            if (s->depth == 1 && s->expect_key) {
                s->key_open = 1;
                s->kstart = i;
            }
            break;
        case '{':
        case '[':
            s->depth++;
            if (s->depth == 1) {
                if (c != '{')
                    return TG_EPARSE;
                s->expect_key = 1;
            } else if (s->depth == 2) {
                if (c == '[' && strcmp(s->key, "items") == 0) {
                    s->in_items = 1;
                } else if (c == '{' && strcmp(s->key, "metadata") == 0) {
                    s->capture = 2;
                    s->start = i;
                }
            } else if (s->depth == 3 && s->in_items && c == '{') {
                s->capture = 1;
                s->start = i;
            }
            break;
        case '}':
        case ']':
            if (s->depth == 0)
                return TG_EPARSE;
            if (s->depth == 3 && s->capture == 1) {
                s->capture = 0;
                s->pos = i + 1;
                int rc = s->on_item ? s->on_item(s->ud, b + s->start, i + 1 - s->start) : 0;
                if (rc)
                    return rc;
            } else if (s->depth == 2 && s->capture == 2) {
                s->capture = 0;
                s->pos = i + 1;
                int rc = s->on_meta ? s->on_meta(s->ud, b + s->start, i + 1 - s->start) : 0;
                if (rc)
                    return rc;
            } else if (s->depth == 2 && s->in_items) {
                s->in_items = 0;
            }
            if (--s->depth == 0)
                s->done = 1;
            break;
        case ',':
            if (s->depth == 1)
                s->expect_key = 1;
            break;
        case ':':
            if (s->depth == 1)
                s->expect_key = 0;
            break;
        default:
            break;
        }
    }
    s->pos = s->len;
    return 0;
}

int tg_liststream_feed(struct tg_liststream *s, const char *data, size_t len)
{
    int rc = append(s, data, len);
    if (rc)
        return rc;
    rc = scan(s);
    compact(s);
    return rc;
}
