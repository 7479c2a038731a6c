/* String interning; see intern.h.
 *
 * id -> (string, length, references) in three parallel arrays; string -> id
 * in one hash map. Pinned strings come from an arena and stay; counted ones
 * are malloc'ed one by one, so that the last unref can free them. A freed
 * id goes on a free list (threaded through its refs slot) and is reused
 * first, so the arrays stay as long as the most strings ever live at once. */
#include "util/intern.h"
#include "util/arena.h"
#include "util/hmap.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define PINNED UINT32_MAX

static struct {
    struct tg_arena mem;
    struct tg_hmap index;   /* string -> id */
    const char **strs;      /* id -> string; NULL: a free id */
    uint32_t *lens;
    uint32_t *refs;         /* PINNED, a count, or (free id) the next free id */
    uint32_t len, cap;      /* ids handed out so far (free ones included) */
    uint32_t live;
    uint32_t free_head;     /* first free id, TG_STR_NONE: none */
    size_t heap;            /* bytes of counted strings */
} in = {.free_head = TG_STR_NONE};

static int ensure_empty(void)
{
    if (in.len)
        return 0;
    in.cap = 1024;
    in.strs = malloc(in.cap * sizeof *in.strs);
    in.lens = malloc(in.cap * sizeof *in.lens);
    in.refs = malloc(in.cap * sizeof *in.refs);
    if (!in.strs || !in.lens || !in.refs)
        return -1;
    in.strs[0] = "";
    in.lens[0] = 0;
    in.refs[0] = PINNED;
    in.len = 1;
    in.live = 1;
    return 0;
}

uint32_t tg_intern_lookup(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    uint64_t v;
    return tg_hmap_get(&in.index, s, n, &v) ? (uint32_t)v : TG_STR_NONE;
}

static int grow(void)
{
    uint32_t ncap = in.cap * 2;
    const char **ns = realloc(in.strs, ncap * sizeof *ns);
    if (!ns)
        return -1;
    in.strs = ns;
    uint32_t *nl = realloc(in.lens, ncap * sizeof *nl);
    if (!nl)
        return -1;
    in.lens = nl;
    uint32_t *nr = realloc(in.refs, ncap * sizeof *nr);
    if (!nr)
        return -1;
    in.refs = nr;
    in.cap = ncap;
    return 0;
}

/* A new entry for s[0..n), pinned or with one reference. */
static uint32_t add(const char *s, size_t n, int pin)
{
    if (in.free_head == TG_STR_NONE && in.len == in.cap && grow())
        return TG_STR_NONE;
    char *copy = pin ? tg_arena_strndup(&in.mem, s, n) : malloc(n + 1);
    if (!copy)
        return TG_STR_NONE;
    if (!pin) {
        memcpy(copy, s, n);
        copy[n] = 0;
    }
    uint32_t id = in.free_head != TG_STR_NONE ? in.free_head : in.len;
    if (tg_hmap_put(&in.index, copy, n, id)) {
        if (!pin)
            free(copy);
        return TG_STR_NONE;
    }
    if (id == in.free_head)
        in.free_head = in.refs[id];
    else
        in.len++;
    in.strs[id] = copy;
    in.lens[id] = (uint32_t)n;
    in.refs[id] = pin ? PINNED : 1;
    in.live++;
    if (!pin)
        in.heap += n + 1;
    return id;
}

/* The id of s[0..n), new or found: pinned, or with one more reference. */
static uint32_t intern(const char *s, size_t n, int pin)
{
    if (n == 0)
        return 0;
    if (ensure_empty())
        return TG_STR_NONE;
    uint64_t v;
    if (!tg_hmap_get(&in.index, s, n, &v))
        return add(s, n, pin);
    if (pin)
        in.refs[v] = PINNED; /* a counted string stays malloc'ed, never freed now */
    else
        tg_intern_retain((uint32_t)v);
    return (uint32_t)v;
}

uint32_t tg_intern_n(const char *s, size_t n) { return intern(s, n, 1); }
uint32_t tg_intern(const char *s) { return intern(s, strlen(s), 1); }
uint32_t tg_intern_ref(const char *s, size_t n) { return intern(s, n, 0); }

void tg_intern_retain(uint32_t id)
{
    if (id == 0 || id >= in.len)
        return;
    assert(in.strs[id] && in.refs[id] > 0);
    if (in.refs[id] != PINNED && in.refs[id] < PINNED - 1)
        in.refs[id]++;
}

void tg_intern_unref(uint32_t id)
{
    if (id == 0 || id >= in.len || in.refs[id] == PINNED)
        return;
    assert(in.strs[id] && in.refs[id] > 0);
    if (--in.refs[id])
        return;
    char *s = (char *)in.strs[id];
    tg_hmap_del(&in.index, s, in.lens[id]);
    in.heap -= in.lens[id] + 1;
    free(s);
    in.strs[id] = NULL;
    in.lens[id] = 0;
    in.refs[id] = in.free_head;
    in.free_head = id;
    in.live--;
}

const char *tg_str(uint32_t id)
{
    if (ensure_empty() || id >= in.len || !in.strs[id])
        return "";
    return in.strs[id];
}

size_t tg_str_len(uint32_t id) { return id < in.len ? in.lens[id] : 0; }

uint32_t tg_intern_count(void) { return in.live; }

size_t tg_intern_bytes(void)
{
    return in.mem.total + in.heap + in.index.cap * sizeof(struct tg_hslot) +
           in.cap * (sizeof *in.strs + sizeof *in.lens + sizeof *in.refs);
}
