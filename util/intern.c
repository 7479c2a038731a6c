/* String interning; see intern.h. */
#include "util/intern.h"
#include "util/arena.h"
#include "util/hmap.h"

#include <stdlib.h>
#include <string.h>

static struct {
    struct tg_arena mem;
    struct tg_hmap index;   /* string -> id */
    const char **strs;      /* id -> string */
    uint32_t *lens;
    uint32_t len, cap;
} in;

static int ensure_empty(void)
{
    if (in.len)
        return 0;
    in.cap = 1024;
    in.strs = malloc(in.cap * sizeof *in.strs);
    in.lens = malloc(in.cap * sizeof *in.lens);
    if (!in.strs || !in.lens)
        return -1;
    in.strs[0] = "";
    in.lens[0] = 0;
    in.len = 1;
    return 0;
}

uint32_t tg_intern_lookup(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    uint64_t v;
    return tg_hmap_get(&in.index, s, n, &v) ? (uint32_t)v : TG_STR_NONE;
}

uint32_t tg_intern_n(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (ensure_empty())
        return TG_STR_NONE;
    uint64_t v;
    if (tg_hmap_get(&in.index, s, n, &v))
        return (uint32_t)v;
    if (in.len == in.cap) {
        uint32_t ncap = in.cap * 2;
        const char **ns = realloc(in.strs, ncap * sizeof *ns);
        if (!ns)
            return TG_STR_NONE;
        in.strs = ns;
        uint32_t *nl = realloc(in.lens, ncap * sizeof *nl);
        if (!nl)
            return TG_STR_NONE;
        in.lens = nl;
        in.cap = ncap;
    }
    char *copy = tg_arena_strndup(&in.mem, s, n);
    if (!copy)
        return TG_STR_NONE;
    uint32_t id = in.len;
    if (tg_hmap_put(&in.index, copy, n, id))
        return TG_STR_NONE;
    in.strs[id] = copy;
    in.lens[id] = (uint32_t)n;
    in.len++;
    return id;
}

uint32_t tg_intern(const char *s) { return tg_intern_n(s, strlen(s)); }

const char *tg_str(uint32_t id)
{
    if (ensure_empty() || id >= in.len)
        return "";
    return in.strs[id];
}

size_t tg_str_len(uint32_t id) { return id < in.len ? in.lens[id] : 0; }

uint32_t tg_intern_count(void) { return in.len; }

size_t tg_intern_bytes(void)
{
    return in.mem.total + in.index.cap * sizeof(struct tg_hslot) +
           in.cap * (sizeof *in.strs + sizeof *in.lens);
}
