/* Growing arrays; see vec.h. */
#include "util/vec.h"
#include "util/err.h"

#include <stdlib.h>

int tg_grow(void **v, uint32_t *cap, uint32_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    uint64_t nc = *cap ? (uint64_t)*cap * 2 : 16;
    while (nc <= n)
        nc *= 2;
    if (nc > UINT32_MAX || nc > SIZE_MAX / sz)
        return TG_ENOMEM;
    void *nv = realloc(*v, (size_t)nc * sz);
    if (!nv)
        return TG_ENOMEM;
    *v = nv;
    *cap = (uint32_t)nc;
    return 0;
}
