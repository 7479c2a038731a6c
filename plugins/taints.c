/* Taint/toleration filter, as kube-scheduler's TaintToleration: every taint
 * with effect NoSchedule or NoExecute must be tolerated; PreferNoSchedule only
 * lowers the score. A toleration matches on effect (empty: all), key (empty
 * with Exists: all keys) and value (Equal) or any value (Exists). */
#include "plugins/builtin.h"

static int tolerated(const struct tg_podspec *ps, const struct tg_taint *t)
{
    for (uint16_t i = 0; ps && i < ps->ntol; i++) {
        const struct tg_toleration *tol = &ps->tols[i];
        if (tol->effect != TG_EFFECT_ANY && tol->effect != t->effect)
            continue;
        if (tol->op == TG_TOL_EXISTS) {
            if (tol->key == 0 || tol->key == t->key)
                return 1;
        } else if (tol->key == t->key && tol->val == t->val) {
            return 1;
        }
    }
    return 0;
}

int tg__taints_tolerated(const struct tg_podspec *ps, const struct tg_node_obj *o)
{
    for (uint16_t i = 0; i < o->ntaints; i++)
        if (o->taints[i].effect != TG_EFFECT_PREFER_NOSCHEDULE && !tolerated(ps, &o->taints[i]))
            return 0;
    return 1;
}

static int filter(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                  struct tg_status *st)
{
    const struct tg_node_obj *o = cx->cluster->nodes[slot].obj;
    for (uint16_t i = 0; i < o->ntaints; i++) {
        const struct tg_taint *t = &o->taints[i];
        if (t->effect == TG_EFFECT_PREFER_NOSCHEDULE || tolerated(s->pod->spec, t))
            continue;
        *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_TAINT, t->key};
        return 0;
    }
    return 1;
}

static int score(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot)
{
    const struct tg_node_obj *o = cx->cluster->nodes[slot].obj;
    int bad = 0;
    for (uint16_t i = 0; i < o->ntaints; i++)
        if (o->taints[i].effect == TG_EFFECT_PREFER_NOSCHEDULE && !tolerated(s->pod->spec, &o->taints[i]))
            bad++;
    return bad ? 100 / (bad + 1) : 100;
}

const struct tg_plugin tg_plugin_taints = {
    .name = "TaintToleration",
    .filter = filter,
    .score = score,
};
