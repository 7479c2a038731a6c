/* Growing arrays: the one helper every module's push uses. */
#ifndef TG_UTIL_VEC_H
#define TG_UTIL_VEC_H

#include <stddef.h>
#include <stdint.h>

/* Makes room in *v (elements of size sz, capacity *cap) for index n,
 * doubling from 16. Returns 0, or TG_ENOMEM leaving *v and *cap as they were. */
int tg_grow(void **v, uint32_t *cap, uint32_t n, size_t sz);

#endif
