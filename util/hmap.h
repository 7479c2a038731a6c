/* Open-addressing hash maps, linear probing, tombstones on delete.
 *
 * tg_hmap maps byte strings to a uint64 value. The map does not own the key
 * bytes: callers pass keys that outlive the entry (interned strings, or the
 * object the entry points to). tg_imap maps uint64 keys to uint64 values.
 * Both grow at 70% load (live + tombstones). Written here rather than taken
 * from a library: the daemon keeps several of these with 10^5 entries, and a
 * 24-byte slot with the cached hash is what keeps them small and fast. */
#ifndef TG_UTIL_HMAP_H
#define TG_UTIL_HMAP_H

#include <stddef.h>
#include <stdint.h>

uint64_t tg_hash(const void *p, size_t n);

struct tg_hslot {
    const char *key;     /* NULL: empty; TG_HMAP_TOMB: deleted */
    uint32_t klen;
    uint32_t hash32;
    uint64_t val;
};

struct tg_hmap {
    struct tg_hslot *slots;
    uint32_t cap;        /* power of two, or 0 */
    uint32_t len;
    uint32_t used;       /* len + tombstones */
};

/* Returns 1 and sets *val when found, else 0. */
int tg_hmap_get(const struct tg_hmap *m, const char *key, size_t klen, uint64_t *val);
/* Inserts or replaces. Returns 0 or TG_ENOMEM. */
int tg_hmap_put(struct tg_hmap *m, const char *key, size_t klen, uint64_t val);
/* Removes; returns 1 if it was there. */
int tg_hmap_del(struct tg_hmap *m, const char *key, size_t klen);
void tg_hmap_free(struct tg_hmap *m);
/* Iteration: start with *pos = 0; returns the next live slot or NULL. The map
 * must not change during the walk, except through tg_hmap_del of the slot just
 * returned. */
const struct tg_hslot *tg_hmap_next(const struct tg_hmap *m, uint32_t *pos);

struct tg_islot {
    uint64_t key;
    uint64_t val;
};

struct tg_imap {
    struct tg_islot *slots;
    uint8_t *state;      /* 0 empty, 1 live, 2 tombstone */
    uint32_t cap, len, used;
};

int tg_imap_get(const struct tg_imap *m, uint64_t key, uint64_t *val);
int tg_imap_put(struct tg_imap *m, uint64_t key, uint64_t val);
int tg_imap_del(struct tg_imap *m, uint64_t key);
/* Iteration as tg_hmap_next: start with *pos = 0; the next live slot or NULL. */
const struct tg_islot *tg_imap_next(const struct tg_imap *m, uint32_t *pos);
void tg_imap_free(struct tg_imap *m);

#endif
