/* Dynamic resource allocation, the part that needs no allocator: a pod
 * whose ResourceClaims are allocated (status.allocation) goes only where
 * each allocation's nodeSelector allows; a pod with a claim not allocated
 * yet is never placed (the kubelet could not start it), and its gang waits
 * with a reason saying DRA allocation is not supported by topogang yet.
 * Claims come from the pod's loader store, else the scheduler's. */
#include "plugins/builtin.h"
#include "model/objstore.h"
#include "util/arena.h"
#include "util/err.h"
#include "util/intern.h"

struct cterm {
    const struct tg_rclaim *c;
    uint32_t arg;                       /* "ml/gpu-claim" */
};

struct cstate {
    struct cterm *v;
    uint32_t n;
};

static int prefilter(const struct tg_cycle_ctx *cx, struct tg_shape *s, struct tg_status *st)
{
    const struct tg_pod *p = s->pod;
    const struct tg_podspec *ps = p->spec;
    st->code = TG_SKIP;
    if (!ps || !ps->nclaims)
        return 0;
    const struct tg_objstore *store = ps->store ? ps->store : cx->store;
    struct cstate *cs = tg_arena_calloc(cx->arena, 1, sizeof *cs);
    if (!cs || !(cs->v = tg_arena_calloc(cx->arena, ps->nclaims, sizeof *cs->v)))
        return TG_ENOMEM;
    for (uint16_t i = 0; i < ps->nclaims; i++) {
        const struct tg_claimref *r = &ps->claims[i];
        const char *ns = tg_str(p->ns);
        if (!r->claim) {
            *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_WAIT,
                                     tg__istr("the ResourceClaim of %s from template %s/%s is not "
                                              "created yet", tg_str(r->name), ns, tg_str(r->tmpl))};
            return 0;
        }
        const struct tg_rclaim *c = tg_objstore_claim(store, p->ns, r->claim);
        if (!c) {
            *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_WAIT,
                                     tg__istr("ResourceClaim %s/%s not found", ns, tg_str(r->claim))};
            return 0;
        }
        if (!c->allocated) {
            *st = (struct tg_status){TG_UNRESOLVABLE, TG_R_WAIT,
                                     tg__istr("ResourceClaim %s is not allocated: DRA allocation is "
                                              "not supported by topogang yet", c->key)};
            return 0;
        }
        if (c->nterms)
            cs->v[cs->n++] = (struct cterm){c, tg__istr("%s", c->key)};
    }
    if (cs->n) {
        s->state[TG_PS_DRA] = cs;
        st->code = TG_SUCCESS;
    }
    return 0;
}

static int filter(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                  struct tg_status *st)
{
    const struct cstate *cs = s->state[TG_PS_DRA];
    const struct tg_node_obj *o = cx->cluster->nodes[slot].obj;
    for (uint32_t i = 0; cs && i < cs->n; i++)
        if (!tg__node_terms_match(cs->v[i].c->terms, cs->v[i].c->nterms, o)) {
            *st = (struct tg_status){TG_UNRESOLVABLE, TG_R_CLAIM, cs->v[i].arg};
            return 0;
        }
    return 1;
}

const struct tg_plugin tg_plugin_dra = {
    .name = "DynamicResources",
    .prefilter = prefilter,
    .filter = filter,
};
