/* Node state filter: a node must have a Node object, be Ready and not be
 * cordoned (spec.unschedulable), unless the pod tolerates the taints the node
 * lifecycle controller would put there (node.kubernetes.io/not-ready,
 * node.kubernetes.io/unschedulable), as kube-scheduler's NodeUnschedulable. */
#include "plugins/builtin.h"
#include "util/intern.h"

#include <string.h>

static int tolerates_key(const struct tg_podspec *ps, const char *key)
{
    if (!ps)
        return 0;
    uint32_t k = tg_intern_lookup(key, strlen(key));
    for (uint16_t i = 0; i < ps->ntol; i++) {
        const struct tg_toleration *t = &ps->tols[i];
        if (t->op == TG_TOL_EXISTS && (t->key == 0 || t->key == k))
            return 1;
        if (t->key == k && k != TG_STR_NONE)
            return 1;
    }
    return 0;
}

static int filter(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                  struct tg_status *st)
{
    const struct tg_node_obj *o = cx->cluster->nodes[slot].obj;
    if (!o) {
        *st = (struct tg_status){TG_UNRESOLVABLE, TG_R_NO_NODE, 0};
        return 0;
    }
    if (!o->ready && !tolerates_key(s->pod->spec, "node.kubernetes.io/not-ready")) {
        *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_NOT_READY, 0};
        return 0;
    }
    if (o->unschedulable && !tolerates_key(s->pod->spec, "node.kubernetes.io/unschedulable")) {
        *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_CORDONED, 0};
        return 0;
    }
    return 1;
}

const struct tg_plugin tg_plugin_nodestate = {
    .name = "NodeState",
    .filter = filter,
};
