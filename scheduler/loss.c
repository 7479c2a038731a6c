/* A gang's life from the API's record, and the member-loss grace: see
 * loss.h. Pure functions: the daemon gathers the facts and acts. */
#include "scheduler/loss.h"

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
