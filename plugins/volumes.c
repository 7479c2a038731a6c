/* Volumes, as much of kube-scheduler's VolumeBinding as needs no binding:
 * a pod whose PersistentVolumeClaim is bound to a PersistentVolume with
 * node affinity (a local volume, a zonal disk) goes only where the volume
 * is reachable. A claim not bound yet keeps the pod waiting, with why: its
 * StorageClass binds WaitForFirstConsumer (topogang does not choose volumes
 * yet, so it does not place the pod where the volume could never follow),
 * or Immediate (the volume controller has not bound it yet), or it has no
 * class or PV at all. Claims and volumes come from the pod's loader store,
 * else the scheduler's (tg_cycle_ctx.store). */
#include "plugins/builtin.h"
#include "model/objstore.h"
#include "util/arena.h"
#include "util/err.h"
#include "util/intern.h"

struct pvterm {
    const struct tg_pv *pv;
    uint32_t arg;                       /* "PV pv-1 (PVC ml/data)" */
};

struct vstate {
    struct pvterm *v;
    uint32_t n;
};

static const struct tg_objstore *store_of(const struct tg_cycle_ctx *cx, const struct tg_pod *p)
{
    return p->spec && p->spec->store ? p->spec->store : cx->store;
}

static void wait(struct tg_status *st, uint8_t code, uint32_t arg)
{
    *st = (struct tg_status){code, TG_R_WAIT, arg};
}

/* The verdict on one unbound claim c (its name in ns/name form). */
static void unbound(const struct tg_objstore *store, const struct tg_pvc *c, struct tg_status *st)
{
    const struct tg_storageclass *sc = NULL;
    const char *cls = c->has_sc ? tg_str(c->sc) : NULL;
    if (cls && !*cls) {
        wait(st, TG_UNSCHEDULABLE, tg__istr("PVC %s is not bound yet (no StorageClass: waiting for "
                                            "a PersistentVolume to bind it)", c->key));
        return;
    }
    sc = cls ? tg_objstore_sc(store, c->sc) : tg_objstore_default_sc(store);
    if (!sc && !cls) {
        wait(st, TG_UNSCHEDULABLE, tg__istr("PVC %s is not bound yet (no default StorageClass: "
                                            "waiting for a PersistentVolume to bind it)", c->key));
    } else if (!sc) {
        wait(st, TG_UNSCHEDULABLE, tg__istr("StorageClass %s of PVC %s not found", cls, c->key));
    } else if (sc->wffc) {
        wait(st, TG_UNRESOLVABLE,
             tg__istr("PVC %s waits for its first consumer (StorageClass %s, WaitForFirstConsumer): "
                      "binding volumes is not supported by topogang yet", c->key, tg_str(sc->name)));
    } else {
        wait(st, TG_UNSCHEDULABLE,
             tg__istr("PVC %s is not bound yet (StorageClass %s binds Immediate: waiting for the "
                      "volume controller)", c->key, tg_str(sc->name)));
    }
}

static int prefilter(const struct tg_cycle_ctx *cx, struct tg_shape *s, struct tg_status *st)
{
    const struct tg_pod *p = s->pod;
    const struct tg_podspec *ps = p->spec;
    st->code = TG_SKIP;
    if (!ps || !ps->npvcs)
        return 0;
    const struct tg_objstore *store = store_of(cx, p);
    struct vstate *vs = tg_arena_calloc(cx->arena, 1, sizeof *vs);
    if (!vs || !(vs->v = tg_arena_calloc(cx->arena, ps->npvcs, sizeof *vs->v)))
        return TG_ENOMEM;
    for (uint16_t i = 0; i < ps->npvcs; i++) {
        const struct tg_pvc *c = tg_objstore_pvc(store, p->ns, ps->pvcs[i]);
        if (!c) {
            wait(st, TG_UNSCHEDULABLE, tg__istr("PersistentVolumeClaim %s/%s not found",
                                                tg_str(p->ns), tg_str(ps->pvcs[i])));
            return 0;
        }
        if (!c->volume) {
            unbound(store, c, st);
            return 0;
        }
        const struct tg_pv *pv = tg_objstore_pv(store, c->volume);
        if (!pv) {
            wait(st, TG_UNSCHEDULABLE, tg__istr("PersistentVolume %s of PVC %s not found",
                                                tg_str(c->volume), c->key));
            return 0;
        }
        if (pv->has_affinity)
            vs->v[vs->n++] = (struct pvterm){pv, tg__istr("PV %s (PVC %s)", tg_str(pv->name), c->key)};
    }
    if (vs->n) {
        s->state[TG_PS_VOLUMES] = vs;
        st->code = TG_SUCCESS;
    }
    return 0;
}

static int filter(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                  struct tg_status *st)
{
    const struct vstate *vs = s->state[TG_PS_VOLUMES];
    const struct tg_node_obj *o = cx->cluster->nodes[slot].obj;
    for (uint32_t i = 0; vs && i < vs->n; i++)
        if (!tg__node_terms_match(vs->v[i].pv->terms, vs->v[i].pv->nterms, o)) {
            *st = (struct tg_status){TG_UNRESOLVABLE, TG_R_VOLUME, vs->v[i].arg};
            return 0;
        }
    return 1;
}

const struct tg_plugin tg_plugin_volumes = {
    .name = "VolumeBinding",
    .prefilter = prefilter,
    .filter = filter,
};
