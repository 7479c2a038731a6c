/* Shared pieces of the fuzz targets (fuzz/fuzz_*.c).
 *
 * Each target defines LLVMFuzzerTestOneInput (and may define
 * LLVMFuzzerInitialize); libFuzzer drives it in the clang build (-Dfuzz=true),
 * fuzz/replay.c drives it over the checked-in corpus in every build. A target
 * frees everything it allocates (leaks are findings) and calls fz_fail when an
 * invariant of the code under test breaks, so libFuzzer records the input. */
#ifndef TG_FUZZ_FUZZ_H
#define TG_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant broke: say which, then abort (a crash for libFuzzer). */
#define fz_check(cond, ...)                                                        \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: invariant broken: ", __FILE__, __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            abort();                                                               \
        }                                                                          \
    } while (0)

/* A NUL-terminated copy of the input (the APIs under test take C strings);
 * the caller frees it. Aborts when out of memory. */
static inline char *fz_strdup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    for (size_t i = 0; i < size; i++)
        s[i] = (char)data[i];
    s[size] = 0;
    return s;
}

/* Length of the next chunk when a stream of `size` bytes is fed in pieces:
 * 1 to 64 bytes, drawn from a generator seeded by the input, so every input
 * replays the same cut points. */
static inline size_t fz_chunk(uint64_t *state, size_t left)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t n = 1 + (size_t)(*state >> 58);
    return n < left ? n : left;
}

/* FNV-1a over bytes, to compare what two runs handed to a callback. */
static inline uint64_t fz_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#endif
