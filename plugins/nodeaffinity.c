/* nodeSelector and required node affinity, as kube-scheduler's NodeAffinity:
 * every nodeSelector label must match; requiredDuringScheduling terms are
 * ORed, the requirements of a term ANDed (In, NotIn, Exists, DoesNotExist, Gt,
 * Lt; matchFields on metadata.name). A term with no requirement matches
 * nothing. */
#include "plugins/builtin.h"
#include "util/intern.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int has_val(const struct tg_selreq *r, uint32_t v)
{
    for (uint16_t i = 0; i < r->nvals; i++)
        if (r->vals[i] == v)
            return 1;
    return 0;
}

static int req_match(const struct tg_selreq *r, const struct tg_node_obj *o)
{
    uint32_t v = r->is_field ? o->name : tg_labels_get(o->labels, o->nlabels, r->key);
    int present = v != TG_STR_NONE;
    switch (r->op) {
    case TG_SEL_IN: return present && has_val(r, v);
    case TG_SEL_NOTIN: return !present || !has_val(r, v);
    case TG_SEL_EXISTS: return present;
    case TG_SEL_DOESNOTEXIST: return !present;
    case TG_SEL_GT:
    case TG_SEL_LT: {
        if (!present)
            return 0;
        const char *s = tg_str(v);
        char *end;
        long long n = strtoll(s, &end, 10);
        if (!*s || *end)
            return 0;
        return r->op == TG_SEL_GT ? n > r->num : n < r->num;
    }
    }
    return 0;
}

int tg__node_affinity_match(const struct tg_podspec *ps, const struct tg_node_obj *o,
                            uint32_t *bad_key)
{
    if (!ps)
        return 1;
    for (uint16_t i = 0; i < ps->nselector; i++)
        if (tg_labels_get(o->labels, o->nlabels, ps->selector[i].key) != ps->selector[i].val) {
            *bad_key = ps->selector[i].key;
            return 0;
        }
    if (ps->nterms == 0 || tg__node_terms_match(ps->terms, ps->nterms, o))
        return 1;
    *bad_key = TG_STR_NONE;
    return 0;
}

int tg__node_terms_match(const struct tg_selterm *terms, uint16_t n, const struct tg_node_obj *o)
{
    for (uint16_t t = 0; t < n; t++) {
        const struct tg_selterm *term = &terms[t];
        if (term->nreq == 0)
            continue;
        int ok = 1;
        for (uint16_t j = 0; ok && j < term->nreq; j++)
            ok = req_match(&term->reqs[j], o);
        if (ok)
            return 1;
    }
    return 0;
}

uint32_t tg__istr(const char *fmt, ...)
{
    char buf[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    uint32_t id = tg_intern(buf);
    return id == TG_STR_NONE ? 0 : id;
}

static int filter(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                  struct tg_status *st)
{
    uint32_t key;
    if (tg__node_affinity_match(s->pod->spec, cx->cluster->nodes[slot].obj, &key))
        return 1;
    *st = key == TG_STR_NONE ? (struct tg_status){TG_UNRESOLVABLE, TG_R_AFFINITY, 0}
                             : (struct tg_status){TG_UNRESOLVABLE, TG_R_SELECTOR, key};
    return 0;
}

const struct tg_plugin tg_plugin_nodeaffinity = {
    .name = "NodeAffinity",
    .filter = filter,
};
