/* The resource name registry; see resources.h. */
#include "model/resources.h"
#include "model/quantity.h"
#include "util/hmap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    struct tg_hmap index;
    char *names[TG_RES_MAX];
    uint32_t n;
} reg;

static void init_fixed(void)
{
    static const char *const fixed[TG_RES_NFIXED] = {"cpu", "memory", "pods", "ephemeral-storage",
                                                     "(a resource no node offers)"};
    if (reg.n)
        return;
    for (uint32_t i = 0; i < TG_RES_NFIXED; i++) {
        reg.names[i] = (char *)fixed[i];
        if (i != TG_RES_UNOFFERED)
            tg_hmap_put(&reg.index, fixed[i], strlen(fixed[i]), i);
    }
    reg.n = TG_RES_NFIXED;
}

int tg_res_lookup(const char *name, size_t n)
{
    init_fixed();
    uint64_t v;
    return tg_hmap_get(&reg.index, name, n, &v) ? (int)v : -1;
}

int tg_res_id(const char *name, size_t n)
{
    int id = tg_res_lookup(name, n);
    if (id >= 0)
        return id;
    if (reg.n >= TG_RES_MAX || n == 0)
        return -1;
    char *copy = malloc(n + 1);
    if (!copy)
        return -1;
    memcpy(copy, name, n);
    copy[n] = 0;
    if (tg_hmap_put(&reg.index, copy, n, reg.n)) {
        free(copy);
        return -1;
    }
    reg.names[reg.n] = copy;
    return (int)reg.n++;
}

const char *tg_res_name(uint32_t id)
{
    init_fixed();
    return id < reg.n ? reg.names[id] : "?";
}

uint32_t tg_res_count(void)
{
    init_fixed();
    return reg.n;
}

int64_t tg_rq_get(const struct tg_rq *v, uint32_t n, uint32_t res)
{
    for (uint32_t i = 0; i < n; i++) {
        if (v[i].res == res)
            return v[i].val;
        if (v[i].res > res)
            break;
    }
    return 0;
}

static int rq_cmp(const void *a, const void *b)
{
    const struct tg_rq *x = a, *y = b;
    return (x->res > y->res) - (x->res < y->res);
}

uint32_t tg_rq_normalize(struct tg_rq *v, uint32_t n)
{
    if (n < 2)
        return n;
    qsort(v, n, sizeof *v, rq_cmp);
    uint32_t out = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (out && v[out - 1].res == v[i].res)
            v[out - 1].val += v[i].val;
        else
            v[out++] = v[i];
    }
    return out;
}

int tg_res_amount(uint32_t id, double v, int flags, char *buf, size_t n)
{
    int whole = v == trunc(v) && fabs(v) < 0x1p53;
    if (id != TG_RES_CPU && id != TG_RES_MEMORY && whole) {
        snprintf(buf, n, "%lld", (long long)v);
        return 1;
    }
    if (id != TG_RES_CPU && id != TG_RES_MEMORY && !(flags & TG_AMOUNT_QUANTITY)) {
        snprintf(buf, n, "%g", v);
        return 1;
    }
    int milli = id != TG_RES_MEMORY; /* cpu's unit, or a fraction of a unit */
    tg_quantity_format((int64_t)llround(milli && id != TG_RES_CPU ? v * 1000 : v), milli, buf, n);
    return 0;
}
