/* Bump allocator; see arena.h. */
#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tg__arena_chunk {
    struct tg__arena_chunk *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

enum { CHUNK_MIN = 64 * 1024 };

void *tg_arena_alloc(struct tg_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->used + n > a->head->size) {
        struct tg__arena_chunk *c = NULL;
        if (a->spare && a->spare->size >= n) {
            c = a->spare;
            a->spare = c->next;
        } else {
            size_t sz = n > CHUNK_MIN ? n : CHUNK_MIN;
            if (a->head && a->head->size * 2 > sz && a->head->size < (64u << 20))
                sz = a->head->size * 2;
            c = malloc(sizeof *c + sz);
            if (!c)
                return NULL;
            c->size = sz;
            a->total += sz;
        }
        c->next = a->head;
        a->head = c;
        a->used = 0;
    }
    void *p = a->head->data + a->used;
    a->used += n;
    return p;
}

void *tg_arena_calloc(struct tg_arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = tg_arena_alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

char *tg_arena_strndup(struct tg_arena *a, const char *s, size_t n)
{
    char *p = tg_arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

void tg_arena_reset(struct tg_arena *a)
{
    while (a->head) {
        struct tg__arena_chunk *c = a->head;
        a->head = c->next;
        c->next = a->spare;
        a->spare = c;
    }
    a->used = 0;
}

struct tg_arena_mark tg_arena_mark(const struct tg_arena *a)
{
    return (struct tg_arena_mark){a->head, a->used};
}

void tg_arena_release(struct tg_arena *a, struct tg_arena_mark m)
{
    while (a->head && a->head != m.chunk) {
        struct tg__arena_chunk *c = a->head;
        a->head = c->next;
        c->next = a->spare;
        a->spare = c;
    }
    a->used = a->head ? m.used : 0;
}

void tg_arena_free(struct tg_arena *a)
{
    tg_arena_reset(a);
    while (a->spare) {
        struct tg__arena_chunk *c = a->spare;
        a->spare = c->next;
        free(c);
    }
    memset(a, 0, sizeof *a);
}
