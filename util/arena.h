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
void tg_arena_free(struct tg_arena *a);

#endif
