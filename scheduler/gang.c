/* Gang assembly; see gang.h. Records by key in a hash map; pending members
 * are located through an index of pod keys (owned copies, so a pod object
 * replaced by its update never leaves a dangling key); placed members
 * through the cluster listener and each record's position (usage.gpos). */
#include "scheduler/gang.h"
#include "scheduler/internal.h"
#include "scheduler/subgroup.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/vec.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pending index: pod key (owned) -> its gang and position in the gang's
 * pending array (the gang, not the pod's key now: an update may move a pod
 * to another gang, when its group label or its owner changes) */
struct pidx {
    char *key;
    uint32_t pos;
    struct tg_grec *g;
};

/* The derived gang name a pod's (or record's) owner gives it here, or 0. */
static uint32_t derived_of(const struct tg_gangs *gs, uint32_t derived)
{
    return derived && (gs->owner_kinds >> tg_derived_kind(derived) & 1) ? derived : 0;
}

const char *tg_gang_key_of(const struct tg_gangs *gs, const struct tg_pod *p, char *buf, size_t n)
{
    uint32_t group = p->group ? p->group : derived_of(gs, p->derived);
    if (group)
        snprintf(buf, n, "%s/%s", tg_str(p->ns), tg_str(group));
    else
        snprintf(buf, n, "%s", p->key);
    return buf;
}

/* A placed pod's group: its own, or (a pod of this scheduler) its owner's. */
static uint32_t usage_group(const struct tg_gangs *gs, const struct tg_usage *u)
{
    if (u->group)
        return u->group;
    return u->derived && u->sched == gs->sched ? derived_of(gs, u->derived) : 0;
}

static const char *usage_gang_key(const struct tg_gangs *gs, const struct tg_usage *u, char *buf,
                                  size_t n)
{
    uint32_t group = usage_group(gs, u);
    if (!group)
        return u->key;
    snprintf(buf, n, "%s/%s", tg_str(u->ns), tg_str(group));
    return buf;
}

static uint64_t group_id(uint32_t ns, uint32_t group)
{
    return (uint64_t)ns << 32 | group;
}

struct tg_grec *tg_gangs_get(const struct tg_gangs *gs, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&gs->by_key, key, strlen(key), &v) ? (struct tg_grec *)(uintptr_t)v : NULL;
}

/* Called for every placed pod by preemption and the cluster listener: the
 * gang of a PodGroup is found by its interned ids, without a key built. */
struct tg_grec *tg_gangs_of_usage(const struct tg_gangs *gs, const struct tg_usage *u)
{
    uint64_t v;
    uint32_t group = usage_group(gs, u);
    if (group && tg_imap_get(&gs->by_group, group_id(u->ns, group), &v))
        return (struct tg_grec *)(uintptr_t)v;
    char key[512];
    return tg_gangs_get(gs, usage_gang_key(gs, u, key, sizeof key));
}

static void resolve_pg(struct tg_gangs *gs, struct tg_grec *g);
static void member_joined(struct tg_grec *g, const struct tg_label *l, uint32_t n);
static void hints_changed(struct tg_gangs *gs, struct tg_grec *g, const struct tg_pod *p);

static struct tg_grec *get_or_make(struct tg_gangs *gs, const char *key, uint32_t ns, uint32_t group,
                                   int derived)
{
    struct tg_grec *g = tg_gangs_get(gs, key);
    if (g)
        return g;
    g = calloc(1, sizeof *g);
    if (!g || !(g->key = strdup(key))) {
        free(g);
        return NULL;
    }
    g->ns = ns;
    g->group = group;
    g->created_ms = INT64_MAX;
    g->priority = INT32_MIN;
    tg_qent_init(&g->q, g->key);
    if (tg_hmap_put(&gs->by_key, g->key, strlen(g->key), (uint64_t)(uintptr_t)g)) {
        free(g->key);
        free(g);
        return NULL;
    }
    if (group && tg_imap_put(&gs->by_group, group_id(ns, group), (uint64_t)(uintptr_t)g)) {
        tg_hmap_del(&gs->by_key, g->key, strlen(g->key));
        free(g->key);
        free(g);
        return NULL;
    }
    g->derived = (uint8_t)(derived != 0);
    if (group)
        resolve_pg(gs, g); /* resolves the priority too */
    else
        tg_grec_resolve(gs, g);
    return g;
}

static void maybe_free(struct tg_gangs *gs, struct tg_grec *g);

static void grec_free(struct tg_grec *g)
{
    free(g->pending);
    free(g->members);
    if (g->eff && (g->derived || g->eff->sub_by == TG_SUB_BY_VOLCANO))
        free(g->eff->subs); /* made by derived_subs, volcano_subs; a KAI one's are borrowed */
    if (g->eff && g->derived)
        free(g->eff->outer); /* a whole LWS's groups (derived_subs) */
    free(g->eff);
    free(g->sgpol_lv);
    free(g->eff_problem);
    free(g->key);
    free(g);
}

/* Frees g when nothing refers to it any more. */
void tg_gangs_release(struct tg_gangs *gs, struct tg_grec *g)
{
    maybe_free(gs, g);
}

static void maybe_free(struct tg_gangs *gs, struct tg_grec *g)
{
    if (g->npending || g->nmembers || g->q.state != TG_Q_OUT)
        return;
    if (gs->freed)
        gs->freed(gs->ud, g);
    tg_queue_nomination_clear(&g->q);
    tg_hmap_del(&gs->by_key, g->key, strlen(g->key));
    if (g->group)
        tg_imap_del(&gs->by_group, group_id(g->ns, g->group));
    grec_free(g);
}

/* ---- the victims index (gang.h) ---------------------------------------------------- */

/* The bucket of prio, or where it would go (*found = 0). */
static uint32_t pb_find(const struct tg_gangs *gs, int32_t prio, int *found)
{
    uint32_t lo = 0, hi = gs->npb;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (gs->pb[mid].prio < prio)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < gs->npb && gs->pb[lo].prio == prio;
    return lo;
}

static void unfile(struct tg_gangs *gs, struct tg_grec *g)
{
    int found;
    uint32_t b = pb_find(gs, g->filed_prio, &found);
    if (!g->filed || !found)
        return;
    if (g->pprev)
        g->pprev->pnext = g->pnext;
    else
        gs->pb[b].head = g->pnext;
    if (g->pnext)
        g->pnext->pprev = g->pprev;
    g->pnext = g->pprev = NULL;
    g->filed = 0;
    if (!gs->pb[b].head) { /* no empty bucket: their number stays that of the priorities in use */
        memmove(gs->pb + b, gs->pb + b + 1, (gs->npb - b - 1) * sizeof *gs->pb);
        gs->npb--;
    }
}

/* Files g under its priority while it has a placed member; O(log buckets),
 * plus a bucket moved when a priority appears or goes. */
static void refile(struct tg_gangs *gs, struct tg_grec *g)
{
    int want = g->nmembers > 0;
    if (g->filed && (!want || g->filed_prio != g->priority))
        unfile(gs, g);
    if (!want || g->filed)
        return;
    int found;
    uint32_t b = pb_find(gs, g->priority, &found);
    if (!found) {
        if (tg_grow((void **)&gs->pb, &gs->cappb, gs->npb, sizeof *gs->pb)) {
            gs->index_lost = 1;
            return;
        }
        memmove(gs->pb + b + 1, gs->pb + b, (gs->npb - b) * sizeof *gs->pb);
        gs->pb[b] = (struct tg_pbucket){g->priority, NULL};
        gs->npb++;
    }
    g->pnext = gs->pb[b].head;
    g->pprev = NULL;
    if (g->pnext)
        g->pnext->pprev = g;
    gs->pb[b].head = g;
    g->filed_prio = g->priority;
    g->filed = 1;
}

struct tg_grec *tg_gangs_placed_next(const struct tg_gangs *gs, int32_t below,
                                     struct tg_placed_it *it)
{
    if (it->g)
        it->g = it->g->pnext;
    while (!it->g) {
        if (it->b >= gs->npb || gs->pb[it->b].prio >= below)
            return NULL;
        it->g = gs->pb[it->b++].head;
    }
    return it->g;
}

int tg_gangs_index_lost(const struct tg_gangs *gs)
{
    return gs->index_lost;
}

struct tg_usage *tg_gangs_loose_next(const struct tg_gangs *gs, uint32_t *pos)
{
    const struct tg_islot *s = tg_imap_next(&gs->loose, pos);
    return s ? (struct tg_usage *)(uintptr_t)s->val : NULL;
}

/* ---- priority ------------------------------------------------------------------ */

int32_t tg_gangs_pclass_value(const struct tg_gangs *gs, uint32_t name, int *found)
{
    uint64_t v;
    *found = name && tg_imap_get(&gs->pclass, name, &v);
    return *found ? ((const struct tg_pclass *)(uintptr_t)v)->value : 0;
}

static const struct tg_pclass *pclass(const struct tg_gangs *gs, uint32_t name)
{
    uint64_t v;
    return name && tg_imap_get(&gs->pclass, name, &v) ? (const struct tg_pclass *)(uintptr_t)v : NULL;
}

static int32_t prio_of(const struct tg_gangs *gs, int has, int32_t prio, uint32_t cls)
{
    if (has)
        return prio;
    const struct tg_pclass *c = pclass(gs, cls);
    if (!c && !cls)
        c = pclass(gs, gs->default_class);
    return c ? c->value : 0;
}

int32_t tg_gangs_usage_priority(const struct tg_gangs *gs, const struct tg_usage *u)
{
    return prio_of(gs, u->has_priority, u->priority, u->prio_class);
}

static int32_t pod_priority(const struct tg_gangs *gs, const struct tg_pod *p)
{
    return prio_of(gs, p->has_priority, p->priority, p->prio_class);
}

static int pod_never(const struct tg_gangs *gs, const struct tg_pod *p)
{
    const struct tg_pclass *c = pclass(gs, p->prio_class);
    return p->preempt_never || (c && c->never);
}

/* How a PodGroup sets its gang's priority (gang.h): PG_FIXED (*v is it),
 * PG_CEIL (a system class: the members' highest, at most *v) or PG_NONE (the
 * members'). */
enum { PG_NONE, PG_FIXED, PG_CEIL };

static int pg_rule(const struct tg_gangs *gs, const struct tg_podgroup *pg, int32_t *v)
{
    const struct tg_pclass *c = pg ? pclass(gs, pg->prio_class) : NULL;
    if (c) {
        *v = c->value;
        return c->system ? PG_CEIL : PG_FIXED;
    }
    if (!pg || pg->prio_class || !pg->has_priority || !gs->policy || !gs->policy->allow_pg_priority)
        return PG_NONE;
    *v = pg->priority < gs->user_max ? pg->priority : gs->user_max;
    return PG_FIXED;
}

int tg_grec_resolve(struct tg_gangs *gs, struct tg_grec *g)
{
    int32_t prio = INT32_MIN;
    int64_t created = INT64_MAX;
    uint8_t never = 0;
    for (uint32_t i = 0; i < g->npending; i++) {
        int32_t p = pod_priority(gs, g->pending[i]);
        if (p > prio)
            prio = p;
        if (g->pending[i]->created_ms && g->pending[i]->created_ms < created)
            created = g->pending[i]->created_ms;
        never |= (uint8_t)pod_never(gs, g->pending[i]);
    }
    for (uint32_t i = 0; i < g->nmembers; i++) {
        int32_t p = tg_gangs_usage_priority(gs, g->members[i]);
        if (p > prio)
            prio = p;
        if (g->members[i]->created_ms && g->members[i]->created_ms < created)
            created = g->members[i]->created_ms;
    }
    const struct tg_podgroup *pg = g->pg;
    int32_t v;
    int rule = pg_rule(gs, pg, &v);
    if (rule == PG_FIXED || (rule == PG_CEIL && prio > v))
        prio = v;
    const struct tg_pclass *c = pg ? pclass(gs, pg->prio_class) : NULL;
    if (c && c->never)
        never = 1;
    if (pg && pg->created_ms)
        created = pg->created_ms;
    g->pclass_missing = (uint8_t)(pg && pg->prio_class && !c);
    if (prio == INT32_MIN)
        prio = 0;
    if (created == INT64_MAX)
        created = 0;
    int changed = prio != g->priority || created != g->created_ms;
    g->priority = prio;
    g->created_ms = created;
    g->preempt_never = never;
    refile(gs, g);
    return changed;
}

/* A member or pending pod added: the aggregates move one way only. */
static void absorb(struct tg_gangs *gs, struct tg_grec *g, int32_t prio, int64_t created, int never)
{
    const struct tg_podgroup *pg = g->pg;
    int32_t v;
    int rule = pg_rule(gs, pg, &v);
    if (rule == PG_CEIL && prio > v)
        prio = v;
    if (rule != PG_FIXED && prio > g->priority)
        g->priority = prio;
    if (!(pg && pg->created_ms) && created && (created < g->created_ms || !g->created_ms))
        g->created_ms = created;
    if (never)
        g->preempt_never = 1;
    refile(gs, g);
}

const char *tg_grec_priority_note(const struct tg_gangs *gs, const struct tg_grec *g, char *buf,
                                  size_t n)
{
    const struct tg_podgroup *pg = g->pg;
    const struct tg_pclass *c = pg ? pclass(gs, pg->prio_class) : NULL;
    char what[600];
    buf[0] = 0;
    if (!pg || g->pclass_missing)
        return buf;
    tg_grec_describe(g, what, sizeof what);
    if (c && c->system && g->priority < c->value)
        snprintf(buf, n, "%s: spec.priorityClassName %s (%d, a system class) counts only up to its "
                 "pods' own priority, %d (pods are admitted with a class, PodGroups are not)",
                 what, tg_str(pg->prio_class), c->value, g->priority);
    else if (!c && pg->has_priority && !(gs->policy && gs->policy->allow_pg_priority))
        snprintf(buf, n, "%s: spec.priority %d not honoured (policy "
                 "priority.allowPodGroupPriority is false): priority %d from its pods; name a "
                 "PriorityClass in spec.priorityClassName", what, pg->priority, g->priority);
    else if (!c && pg->has_priority && pg->priority > gs->user_max)
        snprintf(buf, n, "%s: spec.priority %d capped at %d, the highest non-system "
                 "PriorityClass (%s)", what, pg->priority, gs->user_max,
                 gs->user_max_name ? tg_str(gs->user_max_name)
                                   : "none: the highest a user-defined class may have");
    return buf;
}

/* The highest non-system class, after a class was set or deleted. */
static void user_max_update(struct tg_gangs *gs)
{
    gs->user_max = TG_PRIO_USER_MAX;
    gs->user_max_name = 0;
    uint32_t pos = 0;
    const struct tg_islot *s;
    while ((s = tg_imap_next(&gs->pclass, &pos))) {
        const struct tg_pclass *c = (const struct tg_pclass *)(uintptr_t)s->val;
        if (!c->system && (!gs->user_max_name || c->value > gs->user_max)) {
            gs->user_max = c->value;
            gs->user_max_name = (uint32_t)s->key;
        }
    }
}

int tg_gangs_pclass_set(struct tg_gangs *gs, uint32_t name, const struct tg_pclass *pc)
{
    uint64_t v;
    struct tg_pclass *c;
    if (tg_imap_get(&gs->pclass, name, &v)) {
        c = (struct tg_pclass *)(uintptr_t)v;
    } else {
        if (!(c = malloc(sizeof *c)))
            return TG_ENOMEM;
        if (tg_imap_put(&gs->pclass, name, (uint64_t)(uintptr_t)c)) {
            free(c);
            return TG_ENOMEM;
        }
    }
    *c = *pc;
    c->system = (uint8_t)tg_prioclass_is_system(tg_str(name), pc->value);
    user_max_update(gs);
    if (pc->global_default)
        gs->default_class = name;
    else if (gs->default_class == name)
        gs->default_class = 0;
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&gs->by_key, &pos)))
        tg_grec_resolve(gs, (struct tg_grec *)(uintptr_t)s->val);
    return 0;
}

void tg_gangs_pclass_delete(struct tg_gangs *gs, uint32_t name)
{
    uint64_t v;
    if (!tg_imap_get(&gs->pclass, name, &v))
        return;
    free((struct tg_pclass *)(uintptr_t)v);
    tg_imap_del(&gs->pclass, name);
    user_max_update(gs);
    if (gs->default_class == name)
        gs->default_class = 0;
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&gs->by_key, &pos)))
        tg_grec_resolve(gs, (struct tg_grec *)(uintptr_t)s->val);
}

/* ---- placed members (cluster listener) ------------------------------------------ */

/* Moves g->held by u's requests (sign +1: it joined, -1: it left); with no
 * member left it starts afresh (exact again after a loss). */
static void held_move(struct tg_grec *g, const struct tg_usage *u, int sign)
{
    if (!g->nmembers) {
        g->nheld = 0;
        return;
    }
    for (uint8_t i = 0; i < u->nreq && g->nheld != TG_GREC_HELD_LOST; i++) {
        uint8_t k = 0;
        while (k < g->nheld && g->held[k].res != u->req[i].res)
            k++;
        if (k == g->nheld) {
            if (sign < 0 || k == TG_GREC_HELD) {
                g->nheld = TG_GREC_HELD_LOST; /* sign < 0: cannot happen (it was added) */
                break;
            }
            g->held[g->nheld++] = (struct tg_rq){u->req[i].res, 0};
        }
        g->held[k].val += sign * u->req[i].val;
    }
}

static int push_member(struct tg_grec *g, struct tg_usage *u)
{
    if (tg_grow((void **)&g->members, &g->capmembers, g->nmembers, sizeof *g->members))
        return TG_ENOMEM;
    u->gpos = g->nmembers;
    g->members[g->nmembers++] = u;
    held_move(g, u, +1);
    return 0;
}

/* The pending-member entry of key, NULL: no pending pod has it. */
static struct pidx *pidx_of(const struct tg_gangs *gs, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&gs->pidx, key, strlen(key), &v) ? (struct pidx *)(uintptr_t)v : NULL;
}

/* Whether u counts in its pending pod's gang's npending_rec: any record but
 * a nomination that the gang layer hears of (a quiet one it never does). */
static int rec_counts(const struct tg_usage *u)
{
    return u && u->kind != TG_USAGE_NOMINATED && !u->quiet;
}

static void on_record_added(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    struct tg_gangs *gs = ud;
    u->gpos = UINT32_MAX;
    if (u->kind == TG_USAGE_NOMINATED)
        return;
    struct pidx *px = pidx_of(gs, u->key);
    if (px)
        px->g->npending_rec++;
    if (u->deleting) /* a Terminating pod is leaving: its gang may already have new members */
        goto loose;
    char buf[512];
    const char *key = usage_gang_key(gs, u, buf, sizeof buf);
    uint32_t group = usage_group(gs, u);
    struct tg_grec *g = group ? get_or_make(gs, key, u->ns, group, !u->group) : tg_gangs_get(gs, key);
    if (!g || push_member(g, u))
        goto loose; /* none, or out of memory: the pod still counts as usage, on its own */
    if (tg_hmap_put(&gs->umem, u->key, strlen(u->key), (uint64_t)(uintptr_t)g)) {
        g->nmembers--; /* out of memory: not a member after all */
        held_move(g, u, -1);
        u->gpos = UINT32_MAX;
        maybe_free(gs, g);
        goto loose;
    }
    if (px)
        g->npending_placed++;
    member_joined(g, u->labels, u->nlabels);
    if (!g->anchor_node)
        g->anchor_node = c->nodes[u->slot].name;
    absorb(gs, g, tg_gangs_usage_priority(gs, u), u->created_ms, 0); /* files g */
    return;
loose:
    if (tg_imap_put(&gs->loose, (uint64_t)(uintptr_t)u, (uint64_t)(uintptr_t)u))
        gs->index_lost = 1;
}

static void on_record_removed(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    struct tg_gangs *gs = ud;
    if (u->kind == TG_USAGE_NOMINATED)
        return;
    struct pidx *px = pidx_of(gs, u->key);
    if (px) {
        assert(px->g->npending_rec > 0); /* counted when added, or when its pod came */
        px->g->npending_rec--;
    }
    if (u->gpos == UINT32_MAX) {
        tg_imap_del(&gs->loose, (uint64_t)(uintptr_t)u);
        return;
    }
    /* the gang it joined (its group may have changed in place since) */
    uint64_t v;
    if (!tg_hmap_get(&gs->umem, u->key, strlen(u->key), &v))
        return;
    tg_hmap_del(&gs->umem, u->key, strlen(u->key));
    struct tg_grec *g = (struct tg_grec *)(uintptr_t)v;
    if (u->gpos >= g->nmembers || g->members[u->gpos] != u)
        return;
    g->members[u->gpos] = g->members[--g->nmembers];
    g->members[u->gpos]->gpos = u->gpos;
    held_move(g, u, -1);
    if (px && g->npending_placed)
        g->npending_placed--;
    if (g->anchor_node == c->nodes[u->slot].name)
        g->anchor_node = g->nmembers ? c->nodes[g->members[0]->slot].name : 0;
    refile(gs, g);
    if (gs->member_gone)
        gs->member_gone(gs->ud, g, u);
    maybe_free(gs, g);
}

/* ---- pending members ------------------------------------------------------------ */

int tg_gangs_init(struct tg_gangs *gs, struct tg_cluster *c)
{
    memset(gs, 0, sizeof *gs);
    gs->cluster = c;
    gs->user_max = TG_PRIO_USER_MAX;
    struct tg_cluster_hooks h = {.record_added = on_record_added,
                                 .record_removed = on_record_removed, .ud = gs,
                                 .skip_quiet = 1}; /* a what-if's members are no gang's */
    return tg_cluster_listen(c, &h);
}

void tg_gangs_free(struct tg_gangs *gs)
{
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&gs->by_key, &pos))) {
        struct tg_grec *g = (struct tg_grec *)(uintptr_t)s->val;
        if (gs->freed)
            gs->freed(gs->ud, g);
        tg_queue_nomination_clear(&g->q);
        grec_free(g);
    }
    tg_hmap_free(&gs->by_key);
    tg_imap_free(&gs->by_group);
    tg_hmap_free(&gs->pgs);
    tg_hmap_free(&gs->wls);
    tg_hmap_free(&gs->umem);
    tg_imap_free(&gs->loose);
    free(gs->pb);
    pos = 0;
    while ((s = tg_hmap_next(&gs->pidx, &pos))) {
        struct pidx *x = (struct pidx *)(uintptr_t)s->val;
        free(x->key);
        free(x);
    }
    tg_hmap_free(&gs->pidx);
    for (uint32_t i = 0; i < gs->pclass.cap; i++)
        if (gs->pclass.state && gs->pclass.state[i] == 1)
            free((struct tg_pclass *)(uintptr_t)gs->pclass.slots[i].val);
    tg_imap_free(&gs->pclass);
    memset(gs, 0, sizeof *gs);
}

/* Takes x's pod out of its gang's pending members and frees x; returns the
 * gang. p: the pod as that gang knows it (its annotations may have counted). */
static struct tg_grec *pending_out(struct tg_gangs *gs, struct pidx *x, const struct tg_pod *p)
{
    struct tg_grec *g = x->g;
    const struct tg_usage *u = tg_cluster_usage(gs->cluster, x->key);
    if (u && u->gpos != UINT32_MAX && u->kind != TG_USAGE_NOMINATED && g->npending_placed)
        g->npending_placed--;
    if (rec_counts(u)) {
        assert(g->npending_rec > 0);
        g->npending_rec--;
    }
    tg_hmap_del(&gs->pidx, x->key, strlen(x->key));
    uint32_t pos = x->pos;
    free(x->key);
    free(x);
    if (pos < g->npending) {
        g->pending[pos] = g->pending[--g->npending];
        uint64_t v;
        if (pos < g->npending) {
            const char *moved = g->pending[pos]->key;
            if (tg_hmap_get(&gs->pidx, moved, strlen(moved), &v))
                ((struct pidx *)(uintptr_t)v)->pos = pos;
        }
    }
    if (g->derived && p && p->hints)
        resolve_pg(gs, g); /* its annotations may have been the ones in force */
    return g;
}

int tg_gangs_pending_set(struct tg_gangs *gs, struct tg_pod *p, int64_t now, struct tg_grec **out)
{
    char key[512];
    tg_gang_key_of(gs, p, key, sizeof key);
    *out = NULL;
    uint32_t derived = p->group ? 0 : derived_of(gs, p->derived);
    struct tg_grec *g = get_or_make(gs, key, p->ns, p->group ? p->group : derived, derived);
    if (!g)
        return TG_ENOMEM;
    *out = g;
    uint64_t v;
    if (tg_hmap_get(&gs->pidx, p->key, strlen(p->key), &v)) {
        struct pidx *x = (struct pidx *)(uintptr_t)v;
        struct tg_grec *was = x->g;
        if (was == g && x->pos < g->npending) {
            const struct tg_pod *old = g->pending[x->pos];
            g->pending[x->pos] = p;
            member_joined(g, p->labels, p->nlabels);
            if (g->derived && (old->hints || p->hints))
                hints_changed(gs, g, p);
            absorb(gs, g, pod_priority(gs, p), p->created_ms, pod_never(gs, p));
            return 0;
        }
        /* it moved to another gang: the one it leaves may have nothing left */
        pending_out(gs, x, x->pos < was->npending ? was->pending[x->pos] : NULL);
        if (gs->pending_left)
            gs->pending_left(gs->ud, was);
        else
            maybe_free(gs, was);
    }
    if (tg_grow((void **)&g->pending, &g->cappending, g->npending, sizeof *g->pending))
        return TG_ENOMEM;
    struct pidx *x = malloc(sizeof *x);
    if (!x || !(x->key = strdup(p->key))) {
        free(x);
        return TG_ENOMEM;
    }
    x->pos = g->npending;
    x->g = g;
    if (tg_hmap_put(&gs->pidx, x->key, strlen(x->key), (uint64_t)(uintptr_t)x)) {
        free(x->key);
        free(x);
        return TG_ENOMEM;
    }
    if (g->npending == 0)
        g->first_seen_ms = now;
    g->pending[g->npending++] = p;
    const struct tg_usage *u = tg_cluster_usage(gs->cluster, p->key);
    if (u && u->gpos != UINT32_MAX && u->kind != TG_USAGE_NOMINATED)
        g->npending_placed++;
    if (rec_counts(u))
        g->npending_rec++;
    member_joined(g, p->labels, p->nlabels);
    if (g->derived && p->hints)
        hints_changed(gs, g, p);
    absorb(gs, g, pod_priority(gs, p), p->created_ms, pod_never(gs, p));
    return 0;
}

struct tg_grec *tg_gangs_pending_delete(struct tg_gangs *gs, const struct tg_pod *p)
{
    uint64_t v;
    if (!tg_hmap_get(&gs->pidx, p->key, strlen(p->key), &v))
        return NULL;
    struct tg_grec *g = pending_out(gs, (struct pidx *)(uintptr_t)v, p);
    if (!g->npending && !g->nmembers && g->q.state == TG_Q_OUT) {
        maybe_free(gs, g);
        return NULL;
    }
    return g;
}

/* ---- PodGroups ------------------------------------------------------------------- */

/* The gang of a PodGroup key: "ns/name" (a peer's key ends in "@group"). */
static struct tg_grec *gang_of_pg_key(const struct tg_gangs *gs, const char *key)
{
    const char *at = strchr(key, '@');
    if (!at)
        return tg_gangs_get(gs, key);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(at - key), key);
    return tg_gangs_get(gs, buf);
}

struct tg_grec *tg_gangs_podgroup_set(struct tg_gangs *gs, const struct tg_podgroup *pg)
{
    if (tg_hmap_put(&gs->pgs, pg->key, strlen(pg->key), (uint64_t)(uintptr_t)pg))
        return NULL;
    struct tg_grec *g = gang_of_pg_key(gs, pg->key);
    if (g && g->group && !g->derived)
        resolve_pg(gs, g);
    return g;
}

struct tg_grec *tg_gangs_podgroup_delete(struct tg_gangs *gs, const char *key)
{
    tg_hmap_del(&gs->pgs, key, strlen(key));
    struct tg_grec *g = gang_of_pg_key(gs, key);
    if (g && g->group && !g->derived)
        resolve_pg(gs, g);
    return g;
}

const struct tg_podgroup *tg_gangs_podgroup(const struct tg_gangs *gs, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&gs->pgs, key, strlen(key), &v) ? (const struct tg_podgroup *)(uintptr_t)v
                                                       : NULL;
}

/* ---- PodGroups made here: the peers', the derived gangs' ----------------------------- */

/* The level `tier` levels above the nodes (a level whose node label is
 * kubernetes.io/hostname is the nodes themselves, tier 0), or -1. */
static int tier_level(const struct tg_policy *p, int tier)
{
    if (!p)
        return -1;
    int nodes = (int)p->nlevels + 1;
    for (uint32_t i = 0; i < p->nlevels; i++)
        if (!strcmp(p->levels[i].label, "kubernetes.io/hostname"))
            nodes = (int)i + 1;
    int l = nodes - tier;
    return l >= 1 && l <= (int)p->nlevels ? l : -1;
}

/* "(levels: zone=topology.kubernetes.io/zone, ...)" for messages. */
static void levels_text(const struct tg_policy *p, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "levels:");
    for (uint32_t i = 0; p && i < p->nlevels && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s %s=%s", i ? "," : "", p->levels[i].name,
                              p->levels[i].label);
}

static uint32_t level_name(const struct tg_policy *p, int l)
{
    uint32_t id = l >= 1 ? tg_intern(p->levels[l - 1].name) : 0;
    return id == TG_STR_NONE ? 0 : id;
}

/* Sets g's own problem text (first one wins). */
static void eff_problem(struct tg_grec *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void eff_problem(struct tg_grec *g, const char *fmt, ...)
{
    if (g->eff_problem)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g->eff_problem = strdup(buf);
}

/* One topology value of a peer: a level name or node label key. */
static uint32_t resolve_key(const struct tg_gangs *gs, struct tg_grec *g, uint32_t key,
                            const char *field)
{
    int l = tg_policy_level_any(gs->policy, key);
    if (l >= 1)
        return level_name(gs->policy, l);
    char lv[512];
    levels_text(gs->policy, lv, sizeof lv);
    eff_problem(g, "%s: \"%s\" is neither a level of the policy nor the node label of one (%s)",
                field ? field : "topology", tg_str(key), lv);
    return 0;
}

/* Member labels l (n of them) of g, whose PodGroup e is a Volcano one with
 * spec.subGroupPolicy: its sub-group added to e->subs when new. */
static void volcano_join(struct tg_grec *g, struct tg_podgroup *e, const struct tg_label *l,
                         uint32_t n)
{
    char name[1024];
    int i = tg_subgroup_volcano_name(e, l, n, name, sizeof name);
    uint32_t id = i < 0 ? TG_STR_NONE : tg_intern(name);
    if (id == TG_STR_NONE)
        return;
    for (uint32_t k = 0; k < e->nsubs; k++)
        if (e->subs[k].name == id)
            return;
    if (e->nsubs >= TG_MAX_SUBGROUPS) {
        eff_problem(g, "spec.subGroupPolicy: its members form more than %d sub-groups",
                    TG_MAX_SUBGROUPS);
        e->problem = g->eff_problem;
        return;
    }
    if (tg_grow((void **)&e->subs, &g->capsubs, e->nsubs, sizeof *e->subs))
        return; /* out of memory: the member is in no sub-group for now */
    e->subs[e->nsubs++] = (struct tg_subgroup){.name = id, .min_member = e->sgpol[i].size,
                                               .required = g->sgpol_lv[2 * i],
                                               .preferred = g->sgpol_lv[2 * i + 1],
                                               .policy = (uint32_t)i};
}

/* A member (pending pod or placed record) joined g: its Volcano sub-group. */
static void member_joined(struct tg_grec *g, const struct tg_label *l, uint32_t n)
{
    if (g->pg && g->pg == g->eff && g->eff->sub_by == TG_SUB_BY_VOLCANO)
        volcano_join(g, g->eff, l, n);
}

/* A Volcano PodGroup's sub-groups (spec.subGroupPolicy): each entry's
 * networkTopology as level names (as the gang's: a tier counts the levels
 * from the nodes up; a tier name is a level or its node label), then the
 * sub-groups of the members g has, listed afresh in e->subs. */
static void volcano_subs(struct tg_gangs *gs, struct tg_grec *g, struct tg_podgroup *e)
{
    free(g->sgpol_lv);
    g->capsubs = 0;
    if (!(g->sgpol_lv = calloc(2 * (size_t)e->nsgpol, sizeof *g->sgpol_lv))) {
        eff_problem(g, "out of memory for its sub-groups");
        return;
    }
    e->sub_by = TG_SUB_BY_VOLCANO;
    for (uint32_t i = 0; i < e->nsgpol; i++) {
        const struct tg_sgpolicy *sp = &e->sgpol[i];
        char f[96];
        uint32_t lv = 0;
        if (sp->tier >= 0) {
            int l = tier_level(gs->policy, sp->tier);
            char lvs[512];
            if (l < 1) {
                levels_text(gs->policy, lvs, sizeof lvs);
                eff_problem(g, "spec.subGroupPolicy[%u].networkTopology.highestTierAllowed: tier "
                            "%d does not exist (tiers count the policy's levels from the nodes "
                            "up; %s)", i, sp->tier, lvs);
            }
            lv = l < 1 ? 0 : level_name(gs->policy, l);
        } else if (sp->tier_name) {
            snprintf(f, sizeof f, "spec.subGroupPolicy[%u].networkTopology.highestTierName", i);
            lv = resolve_key(gs, g, sp->tier_name, f);
        }
        g->sgpol_lv[2 * i + !sp->tier_hard] = lv;
    }
    for (uint32_t i = 0; i < g->npending; i++)
        volcano_join(g, e, g->pending[i]->labels, g->pending[i]->nlabels);
    for (uint32_t i = 0; i < g->nmembers; i++)
        volcano_join(g, e, g->members[i]->labels, g->members[i]->nlabels);
}

static void resolve_peer(struct tg_gangs *gs, struct tg_grec *g, const struct tg_podgroup *raw)
{
    struct tg_podgroup *e = g->eff;
    if (e->sub_by == TG_SUB_BY_VOLCANO)
        free(e->subs);
    *e = *raw;
    e->subs = raw->api == TG_PG_VOLCANO ? NULL : raw->subs;
    e->nsubs = raw->api == TG_PG_VOLCANO ? 0 : raw->nsubs;
    e->required = e->preferred = 0;
    if (raw->problem)
        return; /* borrowed, like the rest */
    if (raw->api == TG_PG_VOLCANO && raw->tier >= 0) {
        int l = tier_level(gs->policy, raw->tier);
        if (l < 1) {
            char lv[512];
            levels_text(gs->policy, lv, sizeof lv);
            eff_problem(g, "spec.networkTopology.highestTierAllowed: tier %d does not exist (tiers "
                           "count the policy's levels from the nodes up; %s)", raw->tier, lv);
        } else if (raw->tier_hard) {
            e->required = level_name(gs->policy, l);
        } else {
            e->preferred = level_name(gs->policy, l);
        }
    }
    if (raw->topo_req)
        e->required = resolve_key(gs, g, raw->topo_req, raw->topo_req_field);
    if (raw->topo_pref)
        e->preferred = resolve_key(gs, g, raw->topo_pref, raw->topo_pref_field);
    if (raw->api == TG_PG_VOLCANO && raw->nsgpol)
        volcano_subs(gs, g, e);
}

/* The workload of a derived gang (a JobSet's gang falls back on the TrainJob
 * of the same name when the JobSet is not seen). */
static const struct tg_workload *workload_of(const struct tg_gangs *gs, const struct tg_grec *g)
{
    char key[512];
    const struct tg_workload *w = tg_gangs_workload(gs, tg_derived_owner_key(g->ns, g->group, key,
                                                                             sizeof key));
    if (!w && tg_derived_kind(g->group) == TG_WL_JOBSET) {
        snprintf(key, sizeof key, "%s/TrainJob/%s", tg_str(g->ns), strchr(tg_str(g->group), '/') + 1);
        w = tg_gangs_workload(gs, key);
    }
    return w;
}

/* The tightest level any pending member's annotation asks (required != 0:
 * the required one), 0 none; a value that names no level is a problem. */
static uint32_t member_level(const struct tg_gangs *gs, struct tg_grec *g, int required)
{
    int best = 0;
    for (uint32_t i = 0; i < g->npending; i++) {
        const struct tg_pod *p = g->pending[i];
        const struct tg_ganghints *h = p->hints;
        uint32_t v = h ? (required ? h->req : h->pref) : 0;
        if (!v)
            continue;
        int l = tg_policy_level_any(gs->policy, v);
        if (l < 1) {
            char lv[512];
            levels_text(gs->policy, lv, sizeof lv);
            eff_problem(g, "Pod %s: metadata.annotations[%s]: \"%s\" is neither a level of the "
                           "policy nor the node label of one (%s)", p->key,
                        tg_hint_annotation(required ? h->req_src : h->pref_src, required),
                        tg_str(v), lv);
        } else if (l > best) {
            best = l;
        }
    }
    return level_name(gs->policy, best);
}

/* A workload's exclusive-topology (a node label key) as a level name; 0
 * none, or with g's problem set when it names no level. */
static uint32_t excl_level(const struct tg_gangs *gs, struct tg_grec *g, uint32_t key,
                           const char *field)
{
    return key ? resolve_key(gs, g, key, field) : 0;
}

/* Sub-group k of e: name, minMember, level. */
static void sub_set(struct tg_podgroup *e, uint32_t k, const char *name, int32_t min, uint32_t lvl)
{
    uint32_t id = tg_intern(name);
    e->subs[k] = (struct tg_subgroup){.name = id == TG_STR_NONE ? 0 : id, .min_member = min,
                                      .required = lvl};
}

/* A whole LWS (gang "LeaderWorkerSet/name") whose groups have LWS subgroups
 * (subGroupPolicy with the subgroup-exclusive-topology annotation): each
 * group an outer group "<group>" at the LWS's exclusive-topology level (none:
 * anywhere in the gang's domain), its subgroups the sub-groups
 * "<group>-<subgroup>" (nper a group, numbered as LWS numbers them) at the
 * subgroup level, each inside its group's domain (subgroup.h). */
static void lws_nested_subs(struct tg_gangs *gs, struct tg_grec *g, const struct tg_workload *w,
                            struct tg_podgroup *e, uint64_t nper, int32_t extra)
{
    if (!(e->outer = calloc((size_t)w->replicas, sizeof *e->outer))) {
        eff_problem(g, "out of memory for its sub-groups");
        return;
    }
    e->sub_by = TG_SUB_BY_LWS_NESTED;
    uint32_t glvl = excl_level(gs, g, w->excl, "metadata.annotations[" TG_ANN_LWS_EXCLUSIVE "]");
    uint32_t lvl = excl_level(gs, g, w->sub_excl, "metadata.annotations[" TG_ANN_LWS_SUB_EXCLUSIVE "]");
    char name[64];
    for (int32_t i = 0; i < w->replicas; i++) {
        snprintf(name, sizeof name, "%d", (int)i);
        e->outer[e->nouter++] = (struct tg_subgroup){.name = tg_intern(name), .required = glvl};
        for (uint64_t s = 0; s < nper; s++) {
            snprintf(name, sizeof name, "%d-%llu", (int)i, (unsigned long long)s);
            sub_set(e, e->nsubs, name, w->sub_size + (s ? 0 : extra), lvl);
            e->subs[e->nsubs++].outer = (uint32_t)i + 1;
        }
    }
}

/* The sub-groups of a derived gang (issue 20), into e->subs (owned by g):
 *  - a JobSet: each child Job ("<jobset>-<replicated job>-<index>") of a
 *    replicated job with an exclusive-topology, at that level; its pods join
 *    by their controller Job;
 *  - a whole LWS (gang "LeaderWorkerSet/name"): each group ("0".."replicas-1")
 *    at the LWS's exclusive-topology level, when it has one; pods join by
 *    their group-index label;
 *  - an LWS group (gang "LeaderWorkerSet/name/<group>") whose LWS sets
 *    spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize and the
 *    subgroup-exclusive-topology annotation: each subgroup ("0".."n-1", as
 *    LWS numbers them: the leader in the first, one more member there when
 *    size - 1 is the multiple; in none under LeaderExcluded) at that level;
 *    pods join by their subgroup-index label (LWS's webhook sets it).
 * Child Jobs and groups without a level form no sub-group (their members go
 * anywhere in the gang's domain). */
static void derived_subs(struct tg_gangs *gs, struct tg_grec *g, const struct tg_workload *w,
                         struct tg_podgroup *e)
{
    int whole_lws = w->kind == TG_WL_LWS && tg_derived_kind(g->group) == TG_WL_LWS &&
                    !strchr(strchr(tg_str(g->group), '/') + 1, '/');
    uint64_t n = 0;
    for (uint32_t r = 0; w->rjobs && r < w->npsets; r++)
        n += w->rjobs[r].excl ? (uint64_t)w->rjobs[r].replicas : 0;
    if (whole_lws && w->excl)
        n = (uint64_t)w->replicas;
    int lws_group = w->kind == TG_WL_LWS && !whole_lws && w->sub_size > 0 && w->sub_excl;
    int lws_nested = whole_lws && w->sub_size > 0 && w->sub_excl; /* groups of subgroups */
    int32_t extra = 0; /* the leader, one more in subgroup 0 (LeaderWorker, size - 1 the multiple) */
    uint64_t nper = 0;
    if (lws_group || lws_nested) {
        extra = !w->sub_leader_excluded && w->size % w->sub_size;
        nper = (uint64_t)((w->size - (w->sub_leader_excluded || extra)) / w->sub_size);
        lws_nested = lws_nested && nper && w->replicas > 0;
        n = lws_group ? nper : lws_nested ? (uint64_t)w->replicas * nper : n;
    }
    if (!n)
        return;
    char f[300], name[600];
    if (n > TG_MAX_SUBGROUPS) {
        eff_problem(g, "%s: %llu sub-groups (one per %s with an exclusive-topology), more than %d",
                    lws_group || lws_nested ? "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"
                    : whole_lws ? "spec.replicas" : "spec.replicatedJobs", (unsigned long long)n,
                    lws_group ? "subgroup" : whole_lws ? "group" : "child Job", TG_MAX_SUBGROUPS);
        return;
    }
    if (!(e->subs = calloc(n, sizeof *e->subs))) {
        eff_problem(g, "out of memory for its sub-groups");
        return;
    }
    if (lws_group) {
        e->sub_by = TG_SUB_BY_LWS_SUBGROUP;
        uint32_t lvl = excl_level(gs, g, w->sub_excl,
                                  "metadata.annotations[" TG_ANN_LWS_SUB_EXCLUSIVE "]");
        for (uint32_t i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%u", i);
            sub_set(e, e->nsubs++, name, w->sub_size + (i ? 0 : extra), lvl);
        }
        return;
    }
    if (lws_nested) {
        lws_nested_subs(gs, g, w, e, nper, extra);
        return;
    }
    if (whole_lws) {
        e->sub_by = TG_SUB_BY_LWS_GROUP;
        uint32_t lvl = excl_level(gs, g, w->excl, "metadata.annotations[" TG_ANN_LWS_EXCLUSIVE "]");
        for (uint32_t i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%u", i);
            sub_set(e, e->nsubs++, name, w->size, lvl);
        }
        return;
    }
    e->sub_by = TG_SUB_BY_JOB;
    for (uint32_t r = 0; r < w->npsets; r++) {
        const struct tg_wl_rjob *rj = &w->rjobs[r];
        if (!rj->excl)
            continue;
        if (rj->excl_own)
            snprintf(f, sizeof f, "spec.replicatedJobs[%u].template.metadata.annotations["
                     TG_ANN_JOBSET_EXCLUSIVE "]", r);
        else
            snprintf(f, sizeof f, "metadata.annotations[" TG_ANN_JOBSET_EXCLUSIVE "]");
        uint32_t lvl = excl_level(gs, g, rj->excl, f);
        for (int32_t i = 0; i < rj->replicas; i++) {
            snprintf(name, sizeof name, "%s-%s-%d", tg_str(w->name), rj->name ? tg_str(rj->name) : "",
                     (int)i);
            sub_set(e, e->nsubs++, name, rj->size, lvl);
        }
    }
}

static void resolve_derived(struct tg_gangs *gs, struct tg_grec *g)
{
    const struct tg_workload *w = workload_of(gs, g);
    g->wl = w;
    g->owner_missing = !w;
    if (!w) {
        g->pg = NULL;
        return;
    }
    struct tg_podgroup *e = g->eff;
    free(e->subs);
    free(e->outer);
    memset(e, 0, sizeof *e);
    e->key = g->key;
    e->ns = g->ns;
    e->name = g->group;
    e->uid = w->uid;
    e->rv = w->rv;
    e->created_ms = w->created_ms;
    e->min_member = w->size > 0 ? w->size : 1;
    if (w->min_size > 0 && w->min_size < e->min_member) /* elastic: starts with fewer */
        e->min_member = w->min_size;
    e->max_member = w->max_size;
    e->tier = -1;
    int32_t min = 0;
    memset(&g->seen, 0, sizeof g->seen);
    for (uint32_t i = 0; i < g->npending; i++) {
        const struct tg_ganghints *h = g->pending[i]->hints;
        if (h && h->min < 0)
            eff_problem(g, "Pod %s: metadata.annotations[" TG_ANN_MIN_MEMBER "]: must be a whole "
                           "number 1..1000000", g->pending[i]->key);
        else if (h && h->min > min)
            min = h->min;
        if (h)
            g->seen = *h;
    }
    int whole_lws = w->kind == TG_WL_LWS && !strchr(strchr(tg_str(g->group), '/') + 1, '/');
    int64_t every = (int64_t)w->replicas * w->size; /* a whole LWS: every group */
    if (whole_lws)
        e->min_member = every < 1 ? 1 : every > 1000000 ? 1000000 : (int32_t)every;
    if (min)
        e->min_member = min;
    if (e->max_member && e->max_member < e->min_member)
        e->max_member = e->min_member;
    e->required = member_level(gs, g, 1);
    e->preferred = member_level(gs, g, 0);
    /* one LWS group: its exclusive-topology holds it in one domain, unless
     * the members ask a required level themselves */
    if (!e->required && w->kind == TG_WL_LWS && !whole_lws)
        e->required = excl_level(gs, g, w->excl, "metadata.annotations[" TG_ANN_LWS_EXCLUSIVE "]");
    derived_subs(gs, g, w, e);
    if (w->problem)
        e->problem = w->problem;
}

/* Chooses and builds g->pg (see gang.h), then its priority. */
static void resolve_pg(struct tg_gangs *gs, struct tg_grec *g)
{
    free(g->eff_problem);
    g->eff_problem = NULL;
    const struct tg_podgroup *raw = NULL;
    if (!g->derived) {
        char key[600];
        uint64_t v;
        for (int api = 0; api < TG_PG_NAPI && !raw; api++) {
            if (api == TG_PG_TOPOGANG)
                snprintf(key, sizeof key, "%s", g->key);
            else
                snprintf(key, sizeof key, "%s@%s", g->key, tg_pg_apis[api].group);
            if (tg_hmap_get(&gs->pgs, key, strlen(key), &v))
                raw = (const struct tg_podgroup *)(uintptr_t)v;
        }
        if (!raw || raw->api == TG_PG_TOPOGANG) {
            g->pg = raw;
            tg_grec_resolve(gs, g);
            return;
        }
    }
    if (!g->eff && !(g->eff = calloc(1, sizeof *g->eff))) {
        g->pg = NULL; /* out of memory: it waits as if it had none */
        tg_grec_resolve(gs, g);
        return;
    }
    if (g->derived)
        resolve_derived(gs, g);
    else
        resolve_peer(gs, g, raw);
    if (g->eff_problem && !g->eff->problem)
        g->eff->problem = g->eff_problem;
    if (!g->derived || g->wl)
        g->pg = g->eff;
    tg_grec_resolve(gs, g);
}

/* A derived gang's member came with (or lost) annotations: resolve again
 * unless they are those resolved last. */
static void hints_changed(struct tg_gangs *gs, struct tg_grec *g, const struct tg_pod *p)
{
    const struct tg_ganghints *h = p->hints;
    if (h && g->pg && !g->eff_problem && h->req == g->seen.req && h->pref == g->seen.pref &&
        h->min == g->seen.min)
        return;
    resolve_pg(gs, g);
}

void tg_gangs_set_policy(struct tg_gangs *gs, const struct tg_policy *p)
{
    gs->policy = p;
    uint32_t sched = p ? tg_intern(p->scheduler_name) : 0;
    gs->sched = sched == TG_STR_NONE ? 0 : sched;
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&gs->by_key, &pos))) {
        struct tg_grec *g = (struct tg_grec *)(uintptr_t)s->val;
        if (g->group)
            resolve_pg(gs, g);
    }
}

const struct tg_workload *tg_gangs_workload(const struct tg_gangs *gs, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&gs->wls, key, strlen(key), &v) ? (const struct tg_workload *)(uintptr_t)v
                                                       : NULL;
}

/* Resolves again every derived gang of the workload key (an LWS: each group;
 * a TrainJob: its JobSet's). */
static void workload_changed(struct tg_gangs *gs, const char *key, tg_grec_fn each, void *ud)
{
    const char *s1 = strchr(key, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!s2)
        return;
    int trainjob = !strncmp(s1 + 1, "TrainJob/", 9);
    char alt[512];
    if (trainjob) /* its pods are its JobSet's */
        snprintf(alt, sizeof alt, "%.*s/JobSet/%s", (int)(s1 - key), key, s2 + 1);
    const char *want = trainjob ? alt : key;
    struct tg_grec *whole = tg_gangs_get(gs, want); /* the gang of that key (a whole LWS too) */
    if (whole && whole->derived) {
        resolve_pg(gs, whole);
        if (each)
            each(ud, whole);
    }
    if (strncmp(s1 + 1, "LeaderWorkerSet/", 16)) /* one gang, of the same key */
        return;
    size_t wl = strlen(want); /* an LWS: a gang per group, "<key>/<group>" */
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&gs->by_key, &pos))) {
        struct tg_grec *g = (struct tg_grec *)(uintptr_t)s->val;
        if (g->derived && !strncmp(g->key, want, wl) && g->key[wl] == '/') {
            resolve_pg(gs, g);
            if (each)
                each(ud, g);
        }
    }
}

int tg_gangs_workload_set(struct tg_gangs *gs, const struct tg_workload *w, tg_grec_fn each, void *ud)
{
    if (tg_hmap_put(&gs->wls, w->key, strlen(w->key), (uint64_t)(uintptr_t)w))
        return TG_ENOMEM;
    workload_changed(gs, w->key, each, ud);
    return 0;
}

void tg_gangs_workload_delete(struct tg_gangs *gs, const char *key, tg_grec_fn each, void *ud)
{
    tg_hmap_del(&gs->wls, key, strlen(key));
    workload_changed(gs, key, each, ud);
}

const char *tg_grec_describe(const struct tg_grec *g, char *buf, size_t n)
{
    if (g->derived) {
        const char *s = tg_str(g->group), *slash = strchr(s, '/');
        snprintf(buf, n, "%.*s %s/%s", (int)(slash - s), s, tg_str(g->ns), slash + 1);
        if (g->wl && g->wl->kind != tg_derived_kind(g->group))
            snprintf(buf + strlen(buf), n - strlen(buf), " (%s %s)", tg_wl_kinds[g->wl->kind].kind,
                     tg_str(g->wl->name));
    } else if (g->pg && g->pg->api != TG_PG_TOPOGANG) {
        snprintf(buf, n, "PodGroup %s/%s (%s)", tg_str(g->ns), tg_str(g->pg->name),
                 tg_pg_apis[g->pg->api].api_version);
    } else {
        snprintf(buf, n, "PodGroup %s", g->key);
    }
    return buf;
}

int tg_grec_unresolved(const struct tg_grec *g, int *invalid, char *reason, size_t n)
{
    char what[600];
    *invalid = 0;
    if (g->derived && g->owner_missing) {
        tg_grec_describe(g, what, sizeof what);
        snprintf(reason, n, "waiting for %s: not seen yet (its pods form one gang)", what);
        return 1;
    }
    if (g->pg && g->pg->problem) {
        *invalid = 1;
        snprintf(reason, n, "%s: %s", tg_grec_describe(g, what, sizeof what), g->pg->problem);
        return 1;
    }
    if (g->pclass_missing) { /* issue 19: a pod naming it would be refused; waits for it */
        snprintf(reason, n, "%s: spec.priorityClassName: PriorityClass \"%s\" does not exist "
                 "(waiting for it; the apiserver refuses a pod that names a missing class)",
                 tg_grec_describe(g, what, sizeof what), tg_str(g->pg->prio_class));
        return 1;
    }
    if (g->group && !g->derived && !g->pg && g->npending && g->pending[0]->group_api != TG_PG_TOPOGANG &&
        g->pending[0]->group_api != TG_PG_XK8S) {
        static const char *const how[TG_PG_NAPI] = {
            [TG_PG_UPSTREAM] = "spec.schedulingGroup.podGroupName",
            [TG_PG_VOLCANO] = "the annotation " TG_ANN_VOLCANO_GROUP,
            [TG_PG_KAI] = "the annotation " TG_ANN_KAI_GROUP};
        *invalid = 1;
        snprintf(reason, n, "PodGroup %s does not exist (pods name it by %s and wait for it)", g->key,
                 how[g->pending[0]->group_api]);
        return 1;
    }
    return 0;
}

/* ---- views ------------------------------------------------------------------------ */

uint32_t tg_grec_min(const struct tg_grec *g)
{
    return g->pg ? (uint32_t)g->pg->min_member : 1;
}

static int unplaced(const struct tg_pod *p, const struct tg_cluster *c)
{
    if (p->node)
        return 0;
    const struct tg_usage *u = tg_cluster_usage(c, p->key);
    return !u || u->kind == TG_USAGE_NOMINATED;
}

void tg_grec_view(const struct tg_grec *g, const struct tg_cluster *c, struct tg_pod **pods,
                  struct tg_gang *out)
{
    uint32_t n = 0;
    /* no pending member has a record (npending_rec): none is placed, and
     * no lookup of each one's is needed. A what-if's quiet records, which
     * the count leaves out, live only while the cluster is quiet. */
    int none = !g->npending_rec && !c->quiet;
    for (uint32_t i = 0; i < g->npending; i++) {
        const struct tg_pod *p = g->pending[i];
        assert(!none || unplaced(p, c) == !p->node); /* the count is exact */
        if (none ? !p->node : unplaced(p, c))
            pods[n++] = g->pending[i];
    }
    uint32_t anchor = g->anchor_node && g->nmembers
                          ? tg_cluster_slot((struct tg_cluster *)c, g->anchor_node, 0)
                          : TG_NONE;
    *out = (struct tg_gang){.name = g->key, .pg = g->pg, .pods = pods, .npods = n,
                            .nbound = g->nmembers, .anchor = anchor, .members = g->members,
                            .within = TG_NONE,
                            .priority = g->priority, .created_ms = g->created_ms};
}
