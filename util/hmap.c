/* Hash maps; see hmap.h. */
#include "util/hmap.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

static const char tomb_mark;
#define TOMB (&tomb_mark)

/* 64-bit hash: 8-byte words mixed with a multiply-xorshift (wyhash-like). */
uint64_t tg_hash(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h ^= w * 0xbf58476d1ce4e5b9ull;
        h = (h << 27 | h >> 37) * 0x94d049bb133111ebull;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    if (n)
        memcpy(&w, s, n);
    h ^= w * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return h;
}

static int hmap_find(const struct tg_hmap *m, const char *key, size_t klen, uint32_t h32)
{
    if (m->cap == 0)
        return -1;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = h32 & mask;; i = (i + 1) & mask) {
        const struct tg_hslot *s = &m->slots[i];
        if (s->key == NULL)
            return -1;
        if (s->key != TOMB && s->hash32 == h32 && s->klen == klen && memcmp(s->key, key, klen) == 0)
            return (int)i;
    }
}

static int hmap_grow(struct tg_hmap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 16;
    if (m->len * 2 < m->cap)
        ncap = m->cap; /* mostly tombstones: rehash in place size */
    struct tg_hslot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return TG_ENOMEM;
    for (uint32_t i = 0; i < m->cap; i++) {
        struct tg_hslot *s = &m->slots[i];
        if (!s->key || s->key == TOMB)
            continue;
        uint32_t j = s->hash32 & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->used = m->len;
    return 0;
}

int tg_hmap_get(const struct tg_hmap *m, const char *key, size_t klen, uint64_t *val)
{
    int i = hmap_find(m, key, klen, (uint32_t)tg_hash(key, klen));
    if (i < 0)
        return 0;
    if (val)
        *val = m->slots[i].val;
    return 1;
}

int tg_hmap_put(struct tg_hmap *m, const char *key, size_t klen, uint64_t val)
{
    uint32_t h32 = (uint32_t)tg_hash(key, klen);
    int i = hmap_find(m, key, klen, h32);
    if (i >= 0) {
        m->slots[i].key = key;
        m->slots[i].val = val;
        return 0;
    }
    if ((uint64_t)(m->used + 1) * 10 > (uint64_t)m->cap * 7) {
        int rc = hmap_grow(m);
        if (rc)
            return rc;
    }
    uint32_t mask = m->cap - 1;
    uint32_t j = h32 & mask;
    while (m->slots[j].key && m->slots[j].key != TOMB)
        j = (j + 1) & mask;
    if (!m->slots[j].key)
        m->used++;
    m->slots[j] = (struct tg_hslot){key, (uint32_t)klen, h32, val};
    m->len++;
    return 0;
}

int tg_hmap_del(struct tg_hmap *m, const char *key, size_t klen)
{
    int i = hmap_find(m, key, klen, (uint32_t)tg_hash(key, klen));
    if (i < 0)
        return 0;
    m->slots[i].key = TOMB;
    m->len--;
    return 1;
}

const struct tg_hslot *tg_hmap_next(const struct tg_hmap *m, uint32_t *pos)
{
    while (*pos < m->cap) {
        const struct tg_hslot *s = &m->slots[(*pos)++];
        if (s->key && s->key != TOMB)
            return s;
    }
    return NULL;
}

void tg_hmap_free(struct tg_hmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static uint32_t ihash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

static int imap_find(const struct tg_imap *m, uint64_t key)
{
    if (m->cap == 0)
        return -1;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = ihash(key) & mask;; i = (i + 1) & mask) {
        if (m->state[i] == 0)
            return -1;
        if (m->state[i] == 1 && m->slots[i].key == key)
            return (int)i;
    }
}

static int imap_grow(struct tg_imap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 16;
    if (m->len * 2 < m->cap)
        ncap = m->cap;
    struct tg_islot *ns = malloc((size_t)ncap * sizeof *ns);
    uint8_t *st = calloc(ncap, 1);
    if (!ns || !st) {
        free(ns);
        free(st);
        return TG_ENOMEM;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->state[i] != 1)
            continue;
        uint32_t j = ihash(m->slots[i].key) & (ncap - 1);
        while (st[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
        st[j] = 1;
    }
    free(m->slots);
    free(m->state);
    m->slots = ns;
    m->state = st;
    m->cap = ncap;
    m->used = m->len;
    return 0;
}

const struct tg_islot *tg_imap_next(const struct tg_imap *m, uint32_t *pos)
{
    while (*pos < m->cap) {
        uint32_t i = (*pos)++;
        if (m->state[i] == 1)
            return &m->slots[i];
    }
    return NULL;
}

int tg_imap_get(const struct tg_imap *m, uint64_t key, uint64_t *val)
{
    int i = imap_find(m, key);
    if (i < 0)
        return 0;
    if (val)
        *val = m->slots[i].val;
    return 1;
}

int tg_imap_put(struct tg_imap *m, uint64_t key, uint64_t val)
{
    int i = imap_find(m, key);
    if (i >= 0) {
        m->slots[i].val = val;
        return 0;
    }
    if ((uint64_t)(m->used + 1) * 10 > (uint64_t)m->cap * 7) {
        int rc = imap_grow(m);
        if (rc)
            return rc;
    }
    uint32_t mask = m->cap - 1;
    uint32_t j = ihash(key) & mask;
    while (m->state[j] == 1)
        j = (j + 1) & mask;
    if (m->state[j] == 0)
        m->used++;
    m->slots[j] = (struct tg_islot){key, val};
    m->state[j] = 1;
    m->len++;
    return 0;
}

int tg_imap_del(struct tg_imap *m, uint64_t key)
{
    int i = imap_find(m, key);
    if (i < 0)
        return 0;
    m->state[i] = 2;
    m->len--;
    return 1;
}

void tg_imap_free(struct tg_imap *m)
{
    free(m->slots);
    free(m->state);
    memset(m, 0, sizeof *m);
}
