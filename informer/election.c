/* Leader election's decisions (see election.h): pure, every time passed in. */
#include "informer/election.h"
#include "util/err.h"
#include "util/hmap.h"

#include <string.h>

int tg_election_init(struct tg_election *e, int64_t lease_ms, int64_t deadline_ms)
{
    memset(e, 0, sizeof *e);
    if (lease_ms <= 0 || deadline_ms <= 0 || deadline_ms >= lease_ms)
        return TG_EINVAL;
    e->lease_ms = lease_ms;
    e->deadline_ms = deadline_ms;
    return 0;
}

/* The record's identity: what changes with every write of it. */
static uint64_t record_id(const struct tg_lease *l)
{
    uint64_t h[5] = {tg_hash(l->holder ? l->holder : "", l->holder ? strlen(l->holder) : 0),
                     tg_hash(l->rv ? l->rv : "", l->rv ? strlen(l->rv) : 0),
                     (uint64_t)l->renew_ms, (uint64_t)(int64_t)l->duration_s, !l->holder};
    return tg_hash(h, sizeof h);
}

int tg_election_observe(struct tg_election *e, const struct tg_lease *cur, const char *me,
                        int64_t now)
{
    uint64_t id = record_id(cur);
    if (!e->observed || id != e->seen_id) {
        e->observed = 1;
        e->seen_id = id;
        e->seen_ms = now;
        e->seen_dur_ms = cur->duration_s > 0 ? cur->duration_s * 1000LL : e->lease_ms;
    }
    if (!cur->holder || !cur->holder[0])
        return TG_ELECT_WRITE;          /* free (released) */
    if (me && !strcmp(cur->holder, me))
        return TG_ELECT_WRITE;          /* ours: renew */
    e->leading = 0;                     /* another holds it */
    return now - e->seen_ms >= e->seen_dur_ms ? TG_ELECT_WRITE : TG_ELECT_WAIT;
}

void tg_election_written(struct tg_election *e, int64_t sent_ms, int64_t now)
{
    if (sent_ms > now)
        sent_ms = now;
    e->sent_ms = sent_ms;
    e->leading = now - sent_ms < e->deadline_ms;
}

void tg_election_lost(struct tg_election *e)
{
    e->leading = 0;
}

int tg_election_leading(const struct tg_election *e, int64_t now)
{
    return e->leading && now - e->sent_ms < e->deadline_ms;
}

int64_t tg_election_deadline(const struct tg_election *e)
{
    return e->leading ? e->sent_ms + e->deadline_ms : 0;
}
