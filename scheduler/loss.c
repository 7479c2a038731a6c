/* A gang's life from the API's record, and the member-loss grace: see
 * loss.h. Pure functions: the daemon gathers the facts and acts. */
#include "scheduler/loss.h"

#include <stdio.h>

enum tg_life tg_life_classify(const struct tg_life_facts *f)
{
    if (!f->bound || f->bound >= f->min)
        return TG_LIFE_WHOLE;
    if (f->status_ours)
        return f->complete ? TG_LIFE_SHORT : TG_LIFE_HALF_BOUND;
    return f->started ? TG_LIFE_SHORT : TG_LIFE_HALF_BOUND;
}

enum tg_loss_step tg_loss_step(const struct tg_policy *p, int64_t since_ms, int64_t now_ms,
                               int64_t *due_ms)
{
    *due_ms = since_ms + p->member_loss_grace_s * 1000;
    if (now_ms < *due_ms)
        return TG_LOSS_STEP_WAIT;
    return p->on_member_loss == TG_LOSS_EVICT ? TG_LOSS_STEP_EVICT : TG_LOSS_STEP_KEEP;
}

int tg_loss_node_failed(const struct tg_node_obj *o, struct tg_status *why)
{
    struct tg_status st = {TG_UNSCHEDULABLE, TG_R_NO_NODE, 0};
    int failed = !o;
    if (o && !o->ready) {
        st.reason = TG_R_NOT_READY;
        failed = 1;
    }
    for (uint16_t i = 0; o && !failed && i < o->ntaints; i++)
        if (o->taints[i].effect == TG_EFFECT_NOEXECUTE) {
            st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_TAINT, o->taints[i].key};
            failed = 1;
        }
    if (failed && why)
        *why = st;
    return failed;
}

static uint32_t mark_home(const struct tg_cluster *c, struct tg_usage *const *m, uint32_t n,
                          uint8_t *home, int healthy_only)
{
    const struct tg_tree *t = &c->tree;
    uint32_t marked = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = m[i]->slot;
        if (slot >= t->nslots || t->leaf[slot] == TG_NONE)
            continue;
        if (healthy_only && tg_loss_node_failed(c->nodes[slot].obj, NULL))
            continue;
        marked++;
        for (uint32_t d = t->leaf[slot]; d != TG_NONE && !home[d]; d = t->dom[d].parent)
            home[d] = 1;
    }
    return marked;
}

uint32_t tg_loss_home(const struct tg_cluster *c, struct tg_usage *const *m, uint32_t n,
                      uint8_t *home)
{
    uint32_t k = mark_home(c, m, n, home, 1);
    return k ? k : mark_home(c, m, n, home, 0);
}

void tg_loss_explain(char *buf, size_t n, const char *who, const char *level, const char *path,
                     uint32_t fit, uint32_t nodes, uint32_t failed, const char *what)
{
    int k = path && *path
                ? snprintf(buf, n, "%s for %s %s: %u of %u node%s in the %s ha%s room for %s", who,
                           level, path, fit, nodes, nodes == 1 ? "" : "s", level,
                           fit == 1 ? "s" : "ve", what)
                : snprintf(buf, n, "%s anywhere in the cluster: %u of %u node%s in the cluster "
                           "ha%s room for %s", who, fit, nodes, nodes == 1 ? "" : "s",
                           fit == 1 ? "s" : "ve", what);
    if (failed && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " (%u not Ready or tainted NoExecute)", failed);
}

enum tg_noroom_step tg_loss_no_room(const struct tg_policy *p, int announced)
{
    return p->on_no_replacement == TG_NOROOM_REQUEUE && announced ? TG_NOROOM_STEP_REQUEUE
                                                                  : TG_NOROOM_STEP_WAIT;
}
