/* The lean JSON parse; see jsonlean.h. A recursive descent over strict
 * JSON that builds cJSON nodes in an arena, mirroring cJSON 1.7's parser
 * for every text it takes (strings unescaped byte for byte as
 * parse_string/utf16_literal_to_utf8 do, numbers through strtod with the
 * locale's decimal point and valueint saturated as parse_number does, the
 * first child's prev pointing at the last); a text it does not take goes to
 * cJSON_ParseWithLength. */
#include "util/jsonlean.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

enum { MAX_NEST = 256, MAX_NUMBER = 63, NONE = 0xFFFF, KEEP = 1 << 20, BLOCK = 8192 };

/* A scan: STRICT means "not strict JSON: let cJSON decide". */
enum { STRICT = 1 };

struct scan {
    const unsigned char *p, *end;
    struct tg_jlean *j;
    int depth;
    char *cur, *lim;                    /* the arena block being filled */
};

/* n bytes (8-aligned) of the arena, taken a block at a time. */
static inline void *bump(struct scan *s, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if ((size_t)(s->lim - s->cur) < n) {
        size_t want = n > BLOCK ? n : BLOCK;
        if (!(s->cur = tg_arena_alloc(&s->j->arena, want)))
            return NULL;
        s->lim = s->cur + want;
    }
    void *p = s->cur;
    s->cur += n;
    return p;
}

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static int hex4(const unsigned char *h, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = h[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* One \u escape at p (p[0] == '\\', p[1] == 'u'), with its low surrogate:
 * the code point and the bytes taken, or -1 (not strict: a bad hex digit,
 * \u0000, a lone surrogate). */
static int utf16(const unsigned char *p, const unsigned char *end, unsigned long *cp)
{
    unsigned hi, lo;
    if (end - p < 6 || hex4(p + 2, &hi) || hi == 0 || (hi >= 0xDC00 && hi <= 0xDFFF))
        return -1;
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = hi;
        return 6;
    }
    if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, &lo) || lo < 0xDC00 ||
        lo > 0xDFFF)
        return -1;
    *cp = 0x10000 + (((unsigned long)(hi & 0x3FF) << 10) | (lo & 0x3FF));
    return 12;
}

static char *put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* Whether one of the 8 bytes of w is below 0x20, '"' or '\\' (exact for
 * the word as a whole; which byte is not said). */
static inline int special8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high ? 1 : 0;
}

/* A string at s->p (after checking *s->p == '"'). out NULL: validate only;
 * else *out is its unescaped copy in the arena. */
static int string(struct scan *s, char **out)
{
    const unsigned char *q = ++s->p, *end = s->end;
    int escaped = 0;
    for (;;) {
        uint64_t w;
        while (end - q >= 8 && (memcpy(&w, q, 8), !special8(w)))
            q += 8;
        while (q < end && *q >= 0x20 && *q != '"' && *q != '\\')
            q++;
        if (q >= end || *q == '"')
            break;
        if (*q < 0x20 || q + 1 >= end)
            return STRICT;
        escaped = 1;
        unsigned char e = q[1];
        if (e == 'u') {
            unsigned long cp;
            int n = utf16(q, end, &cp);
            if (n < 0)
                return STRICT;
            q += n;
            continue;
        }
        if (!e || !strchr("bfnrt\"\\/", e))
            return STRICT;
        q += 2;
    }
    if (q >= end)
        return STRICT;
    if (out) {
        size_t n = (size_t)(q - s->p);
        char *o = bump(s, n + 1);
        if (!o)
            return TG_ENOMEM;
        *out = o;
        if (!escaped) {
            memcpy(o, s->p, n);
            o += n;
        } else {
            for (const unsigned char *r = s->p; r < q;) {
                if (*r != '\\') {
                    *o++ = (char)*r++;
                    continue;
                }
                unsigned long cp;
                switch (r[1]) {
                case 'b': *o++ = '\b'; break;
                case 'f': *o++ = '\f'; break;
                case 'n': *o++ = '\n'; break;
                case 'r': *o++ = '\r'; break;
                case 't': *o++ = '\t'; break;
                case 'u': r += utf16(r, q, &cp) - 2; o = put_utf8(o, cp); break;
                default: *o++ = (char)r[1]; break;
                }
                r += 2;
            }
        }
        *o = 0;
    }
    s->p = q + 1;
    return 0;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? of at most MAX_NUMBER bytes. */
static int number(struct scan *s, cJSON *item)
{
    const unsigned char *q = s->p, *end = s->end;
#define DIGITS(min)                                                                                \
    do {                                                                                           \
        const unsigned char *d0 = q;                                                               \
        while (q < end && *q >= '0' && *q <= '9')                                                  \
            q++;                                                                                   \
        if (q - d0 < (min))                                                                        \
            return STRICT;                                                                         \
    } while (0)
    if (q < end && *q == '-')
        q++;
    if (q < end && *q == '0')
        q++;
    else
        DIGITS(1);
    if (q < end && *q == '.') {
        q++;
        DIGITS(1);
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        DIGITS(1);
    }
#undef DIGITS
    size_t n = (size_t)(q - s->p);
    if (n > MAX_NUMBER)
        return STRICT;
    if (item) {
        char buf[MAX_NUMBER + 1], point = '.';
        if (memchr(s->p, '.', n)) { /* strtod reads the locale's, as cJSON makes it */
            const struct lconv *lc = localeconv();
            point = lc && lc->decimal_point ? lc->decimal_point[0] : '.';
        }
        for (size_t i = 0; i < n; i++)
            buf[i] = s->p[i] == '.' ? point : (char)s->p[i];
        buf[n] = 0;
        double v = strtod(buf, NULL);
        item->type = cJSON_Number;
        item->valuedouble = v;
        item->valueint = v >= INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
    }
    s->p = q;
    return 0;
}

/* The unread-path node below node n for an object key (NULL: an array
 * element), or 0. */
static uint16_t step(const struct tg_jlean *j, uint16_t n, const char *key)
{
    uint16_t any = 0;
    for (uint16_t c = j->node[n].child; c; c = j->node[c].sibling) {
        const char *k = j->node[c].key;
        if (k[0] == '*' && !k[1])
            any = c;
        else if (key && k[0] == key[0] && !strcmp(k, key))
            return c;
    }
    return any;
}

static int value(struct scan *s, cJSON *item, uint16_t at);

/* Appends a node to a child list (NULL when validating only). */
static cJSON *new_child(struct scan *s, cJSON *parent, cJSON **last)
{
    cJSON *c = bump(s, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    if (*last) {
        (*last)->next = c;
        c->prev = *last;
    } else {
        parent->child = c;
    }
    *last = c;
    return c;
}

static int members(struct scan *s, cJSON *item, uint16_t at, int is_obj)
{
    unsigned char close = is_obj ? '}' : ']';
    cJSON *last = NULL;
    int rc;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close)
        goto done;
    for (;;) {
        char *key = NULL;
        if (is_obj) {
            if (s->p >= s->end || *s->p != '"')
                return STRICT;
            if ((rc = string(s, item ? &key : NULL)))
                return rc;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return STRICT;
            s->p++;
            skip_ws(s);
        }
        uint16_t m = at == NONE ? 0 : step(s->j, at, key);
        int skip = m && s->j->node[m].leaf; /* an unread path ends here */
        cJSON *c = NULL;
        if (item && !skip) {
            if (!(c = new_child(s, item, &last)))
                return TG_ENOMEM;
            c->string = key;
        }
        if ((rc = value(s, c, m && !skip ? m : NONE)))
            return rc;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (s->p < s->end && *s->p == close)
            break;
        return STRICT;
    }
done:
    s->p++;
    if (item) {
        item->type = is_obj ? cJSON_Object : cJSON_Array;
        if (item->child)
            item->child->prev = last;
    }
    return 0;
}

/* null, true or false (word) at s->p: type (true's valueint 1, as cJSON's). */
static int literal(struct scan *s, cJSON *item, const char *word, int type)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
        return STRICT;
    if (item) {
        item->type = type;
        item->valueint = type == cJSON_True;
    }
    s->p += n;
    return 0;
}

/* A value at s->p into item (NULL: validate only); at: its node in the
 * unread paths' tree (0 the root), NONE when on no path. */
static int value(struct scan *s, cJSON *item, uint16_t at)
{
    if (s->p >= s->end)
        return STRICT;
    int rc;
    switch (*s->p) {
    case '{':
    case '[':
        if (++s->depth > MAX_NEST)
            return STRICT;
        rc = members(s, item, at, *s->p == '{');
        s->depth--;
        return rc;
    case '"':
        if ((rc = string(s, item ? &item->valuestring : NULL)))
            return rc;
        if (item)
            item->type = cJSON_String;
        return 0;
    case 'n':
        return literal(s, item, "null", cJSON_NULL);
    case 't':
        return literal(s, item, "true", cJSON_True);
    case 'f':
        return literal(s, item, "false", cJSON_False);
    default:
        return number(s, item);
    }
}

/* The child of node n named key, made when missing; 0 when the tree is full. */
static uint16_t child(struct tg_jlean *j, uint16_t n, const char *key)
{
    uint16_t *link = &j->node[n].child;
    for (; *link; link = &j->node[*link].sibling)
        if (!strcmp(j->node[*link].key, key))
            return *link;
    if (j->nnodes == TG_JLEAN_MAX_NODES)
        return 0;
    uint16_t c = j->nnodes++;
    j->node[c] = (struct tg__jlean_node){.key = key};
    return *link = c;
}

int tg_jlean_init(struct tg_jlean *j, const char *base, const char *const *unread)
{
    memset(j, 0, sizeof *j);
    j->nnodes = 1;
    size_t total = 0;
    for (const char *const *u = unread; u && *u; u++)
        total += strlen(base) + strlen(*u) + 2;
    if (!total)
        return 0;
    char *t = j->paths = malloc(total);
    if (!t)
        return TG_ENOMEM;
    for (const char *const *u = unread; *u; u++) {
        size_t b = strlen(base), len = b + strlen(*u) + 2;
        snprintf(t, len, "%s%s%s", base, b ? "." : "", *u);
        uint16_t n = 0;
        char *save = NULL;
        for (char *c = strtok_r(t, ".", &save); c; c = strtok_r(NULL, ".", &save))
            if (!(n = child(j, n, c)))
                break;
        if (!n || !**u) {
            tg_jlean_free(j);
            return TG_EINVAL;
        }
        j->node[n].leaf = 1;
        t += len;
    }
    return 0;
}

void tg_jlean_free(struct tg_jlean *j)
{
    tg_arena_free(&j->arena);
    cJSON_Delete(j->full);
    free(j->paths);
    memset(j, 0, sizeof *j);
}

void tg_jlean_clear(struct tg_jlean *j)
{
    cJSON_Delete(j->full);
    j->full = NULL;
    if (j->arena.total > KEEP)
        tg_arena_free(&j->arena); /* a huge object's chunks are not kept for the next */
    tg_arena_reset(&j->arena);
}

int tg_jlean_parse(struct tg_jlean *j, const char *buf, size_t len, const cJSON **root)
{
    tg_jlean_clear(j);
    *root = NULL;
    if (!j->cjson_only) {
        struct scan s = {(const unsigned char *)buf, (const unsigned char *)buf + len, j, 0, NULL, NULL};
        cJSON *top = tg_arena_calloc(&j->arena, 1, sizeof *top);
        if (!top)
            return TG_ENOMEM;
        skip_ws(&s);
        int rc = value(&s, top, 0);
        skip_ws(&s);
        if (rc == 0 && s.p == s.end) {
            j->lean++;
            *root = top;
            return 0;
        }
        if (rc == TG_ENOMEM)
            return rc;
        tg_arena_reset(&j->arena);
        j->fallbacks++;
    }
    j->full = cJSON_ParseWithLength(buf, len);
    *root = j->full;
    return j->full ? 0 : TG_EPARSE;
}

static int compare(const struct tg_jlean *j, const cJSON *lean, const cJSON *full, uint16_t at,
                   char *where, size_t n, size_t used)
{
    if (lean->type != full->type || !lean->valuestring != !full->valuestring ||
        (lean->valuestring && strcmp(lean->valuestring, full->valuestring)) ||
        memcmp(&lean->valuedouble, &full->valuedouble, sizeof(double)) ||
        lean->valueint != full->valueint || (lean->child && lean->child->prev == NULL))
        return -1;
    int left_out = 0;
    const cJSON *l = lean->child;
    for (const cJSON *f = full->child; f; f = f->next) {
        int obj = full->type == cJSON_Object;
        size_t w = used + (size_t)snprintf(where + used, used < n ? n - used : 0, ".%s",
                                           obj ? f->string : "*");
        w = w < n ? w : n - 1;
        uint16_t m = at == NONE ? 0 : step(j, at, obj ? f->string : NULL);
        if (m && j->node[m].leaf) {
            left_out++;
            continue;
        }
        if (!l || !l->string != !f->string || (f->string && strcmp(f->string, l->string)))
            return -1;
        int rc = compare(j, l, f, m ? m : NONE, where, n, w);
        if (rc < 0)
            return rc;
        left_out += rc;
        l = l->next;
    }
    where[used < n ? used : n - 1] = 0;
    return l ? -1 : left_out;
}

int tg_jlean_compare(const struct tg_jlean *j, const cJSON *lean, const cJSON *full, char *where,
                     size_t n)
{
    where[0] = 0;
    return compare(j, lean, full, 0, where, n, 0);
}
