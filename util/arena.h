/* Bump allocator for scratch memory with one lifetime (a scheduling cycle, a
 * decoded document). Chunks are malloc'ed and kept across tg_arena_reset, so a
 * steady cycle allocates nothing. Memory is 16-byte aligned, never freed alone.
 * tg_arena_free releases every chunk; the struct can be zero-initialised. */
#ifndef TG_UTIL_ARENA_H
#define TG_UTIL_ARENA_H

#include <stddef.h>

struct tg__arena_chunk;

struct tg_arena {
    struct tg__arena_chunk *head;   /* chunk being filled */
    struct tg__arena_chunk *spare;  /* chunks kept by reset */
    size_t used;                    /* bytes used in head */
    size_t total;                   /* bytes held, all chunks */
};

/* Returns NULL only when malloc fails. */
void *tg_arena_alloc(struct tg_arena *a, size_t n);
void *tg_arena_calloc(struct tg_arena *a, size_t n, size_t size);
char *tg_arena_strndup(struct tg_arena *a, const char *s, size_t n);
void tg_arena_reset(struct tg_arena *a);

/* A point to come back to: everything allocated after tg_arena_mark is
 * released (kept for reuse) by tg_arena_release. */
struct tg_arena_mark {
    struct tg__arena_chunk *chunk;
    size_t used;
};
struct tg_arena_mark tg_arena_mark(const struct tg_arena *a);
void tg_arena_release(struct tg_arena *a, struct tg_arena_mark m);
void tg_arena_free(struct tg_arena *a);

#endif
