/* Helpers of model/'s decoders; see decoding.h. */
#include "model/decoding.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const cJSON *tg__get(const cJSON *o, const char *k)
{
    /* cJSON_GetObjectItemCaseSensitive's answer (the first child named k; a
     * child without a name ends the search), each name's first byte compared
     * before strcmp: the decoders look up many absent keys */
    if (!o || (o->type & 0xFF) != cJSON_Object)
        return NULL;
    for (const cJSON *c = o->child; c; c = c->next) {
        if (!c->string)
            return NULL;
        if (c->string[0] == k[0] && !strcmp(c->string, k))
            return c;
    }
    return NULL;
}

const char *tg__str(const cJSON *o, const char *k)
{
    const cJSON *j = tg__get(o, k);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

int64_t tg__generation(const cJSON *md)
{
    const cJSON *gen = tg__get(md, "generation");
    /* within int64 first: converting 1e300 is undefined (the class fuzz_liststream found in
     * opt_int) */
    return cJSON_IsNumber(gen) && gen->valuedouble >= -9223372036854775808.0 &&
                   gen->valuedouble < 9223372036854775808.0
               ? (int64_t)gen->valuedouble
               : 0;
}

void tg__problem(struct tg__dec *x, const cJSON *at, const char *field, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!x->problem[0])
        snprintf(x->problem, sizeof x->problem, "%s: %s", field, msg);
    tg_diag_warn(x->d, at, x->what, field, "%s%s", msg, x->note ? x->note : "");
}

void tg__known_fields(struct tg__dec *x, const cJSON *o, const char *path, const char *const *known)
{
    const cJSON *e, *map = cJSON_IsObject(o) ? o : NULL;
    cJSON_ArrayForEach(e, map)
    {
        int ok = 0;
        for (const char *const *k = known; *k && !ok; k++)
            ok = !strcmp(e->string, *k);
        if (!ok) {
            char field[300];
            snprintf(field, sizeof field, "%s.%s", path, e->string);
            tg__problem(x, e, field, "unknown field");
        }
    }
}
