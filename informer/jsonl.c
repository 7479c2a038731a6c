/* Newline-delimited JSON splitting for watch streams (see jsonl.h). */
#include "informer/jsonl.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"

static int emit(const char *s, size_t n, tg_jsonl_fn fn, void *ud)
{
    while (n && (s[n - 1] == '\r' || s[n - 1] == ' '))
        n--;
    if (!n)
        return 0;
    return fn(ud, s, n);
}

static int append(struct tg_jsonl *j, const char *d, size_t n)
{
    size_t max = j->max_line ? j->max_line : (size_t)256 << 20;
    if (j->len + n > max)
        return TG_ERANGE;
    if (j->len + n > j->cap) {
        size_t cap = j->cap ? j->cap : 4096;
        while (cap < j->len + n)
            cap *= 2;
        char *b = realloc(j->buf, cap);
        if (!b)
            return TG_ENOMEM;
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, d, n);
    j->len += n;
    return 0;
}

int tg_jsonl_feed(struct tg_jsonl *j, const char *data, size_t len, tg_jsonl_fn fn, void *ud)
{
    int rc;
    const char *end = data + len;
    if (j->len) {
        /* Finish the pending line: its newline can only be in the new data. */
        const char *nl = memchr(data, '\n', len);
        if (!nl) {
            rc = append(j, data, len);
            j->scanned = j->len;
            return rc;
        }
        if ((rc = append(j, data, (size_t)(nl - data))))
            return rc;
        size_t n = j->len;
        j->len = j->scanned = 0;
        if ((rc = emit(j->buf, n, fn, ud)))
            return rc;
        data = nl + 1;
    }
    while (data < end) {
        const char *nl = memchr(data, '\n', (size_t)(end - data));
        if (!nl) {
            rc = append(j, data, (size_t)(end - data));
            j->scanned = j->len;
            return rc;
        }
        if ((rc = emit(data, (size_t)(nl - data), fn, ud)))
            return rc;
        data = nl + 1;
    }
    return 0;
}

void tg_jsonl_reset(struct tg_jsonl *j)
{
    j->len = j->scanned = 0;
}

void tg_jsonl_free(struct tg_jsonl *j)
{
    free(j->buf);
    j->buf = NULL;
    j->len = j->cap = j->scanned = 0;
}
