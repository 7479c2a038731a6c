/* Gang assembly; see gang.h. Records by key in a hash map; pending members
 * are located through an index of pod keys (owned copies, so a pod object
 * replaced by its update never leaves a dangling key); placed members
 * through the cluster listener and each record's position (usage.gpos). */
#include "scheduler/gang.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pending index: pod key (owned) -> position in its gang's pending array */
struct pidx {
    char *key;
    uint32_t pos;
};

const char *tg_gang_key_of(const struct tg_pod *p, char *buf, size_t n)
{
    if (p->group)
        snprintf(buf, n, "%s/%s", tg_str(p->ns), tg_str(p->group));
    else
        snprintf(buf, n, "%s", p->key);
    return buf;
}

static const char *usage_gang_key(const struct tg_usage *u, char *buf, size_t n)
{
    if (!u->group)
        return u->key;
    snprintf(buf, n, "%s/%s", tg_str(u->ns), tg_str(u->group));
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
    if (u->group && tg_imap_get(&gs->by_group, group_id(u->ns, u->group), &v))
        return (struct tg_grec *)(uintptr_t)v;
    char key[512];
    return tg_gangs_get(gs, usage_gang_key(u, key, sizeof key));
}

static struct tg_grec *get_or_make(struct tg_gangs *gs, const char *key, uint32_t ns, uint32_t group)
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
    if (group) {
        uint64_t v;
        if (tg_hmap_get(&gs->pgs, key, strlen(key), &v))
            g->pg = (const struct tg_podgroup *)(uintptr_t)v;
    }
    tg_grec_resolve(gs, g);
    return g;
}

static void maybe_free(struct tg_gangs *gs, struct tg_grec *g);

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
    free(g->pending);
    free(g->members);
    free(g->key);
    free(g);
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
    if (pg) {
        const struct tg_pclass *c = pclass(gs, pg->prio_class);
        if (pg->has_priority)
            prio = pg->priority;
        else if (c)
            prio = c->value;
        if (c && c->never)
            never = 1;
        if (pg->created_ms)
            created = pg->created_ms;
    }
    if (prio == INT32_MIN)
        prio = 0;
    if (created == INT64_MAX)
        created = 0;
    int changed = prio != g->priority || created != g->created_ms;
    g->priority = prio;
    g->created_ms = created;
    g->preempt_never = never;
    return changed;
}

/* A member or pending pod added: the aggregates move one way only. */
static void absorb(struct tg_gangs *gs, struct tg_grec *g, int32_t prio, int64_t created, int never)
{
    const struct tg_podgroup *pg = g->pg;
    if (!(pg && (pg->has_priority || pclass(gs, pg->prio_class))) && prio > g->priority)
        g->priority = prio;
    if (!(pg && pg->created_ms) && created && (created < g->created_ms || !g->created_ms))
        g->created_ms = created;
    if (never)
        g->preempt_never = 1;
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
    if (gs->default_class == name)
        gs->default_class = 0;
    uint32_t pos = 0;
    const struct tg_hslot *s;
    while ((s = tg_hmap_next(&gs->by_key, &pos)))
        tg_grec_resolve(gs, (struct tg_grec *)(uintptr_t)s->val);
}

/* ---- placed members (cluster listener) ------------------------------------------ */

static int push_member(struct tg_grec *g, struct tg_usage *u)
{
    if (tg_grow((void **)&g->members, &g->capmembers, g->nmembers, sizeof *g->members))
        return TG_ENOMEM;
    u->gpos = g->nmembers;
    g->members[g->nmembers++] = u;
    return 0;
}

static int is_pending(const struct tg_gangs *gs, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&gs->pidx, key, strlen(key), &v);
}

static void on_record_added(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    struct tg_gangs *gs = ud;
    u->gpos = UINT32_MAX;
    if (u->kind == TG_USAGE_NOMINATED || u->deleting)
        return; /* a Terminating pod is leaving: its gang may already have new members */
    char buf[512];
    const char *key = usage_gang_key(u, buf, sizeof buf);
    struct tg_grec *g = u->group ? get_or_make(gs, key, u->ns, u->group) : tg_gangs_get(gs, key);
    if (!g || push_member(g, u))
        return; /* out of memory: the pod still counts as usage, it is just not a member */
    if (is_pending(gs, u->key))
        g->npending_placed++;
    if (!g->anchor_node)
        g->anchor_node = c->nodes[u->slot].name;
    absorb(gs, g, tg_gangs_usage_priority(gs, u), u->created_ms, 0);
}

static void on_record_removed(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    struct tg_gangs *gs = ud;
    if (u->kind == TG_USAGE_NOMINATED || u->gpos == UINT32_MAX)
        return;
    struct tg_grec *g = tg_gangs_of_usage(gs, u);
    if (!g || u->gpos >= g->nmembers || g->members[u->gpos] != u)
        return;
    g->members[u->gpos] = g->members[--g->nmembers];
    g->members[u->gpos]->gpos = u->gpos;
    if (is_pending(gs, u->key) && g->npending_placed)
        g->npending_placed--;
    if (g->anchor_node == c->nodes[u->slot].name)
        g->anchor_node = g->nmembers ? c->nodes[g->members[0]->slot].name : 0;
    if (gs->member_gone)
        gs->member_gone(gs->ud, g, u);
    maybe_free(gs, g);
}

/* ---- pending members ------------------------------------------------------------ */

int tg_gangs_init(struct tg_gangs *gs, struct tg_cluster *c)
{
    memset(gs, 0, sizeof *gs);
    gs->cluster = c;
    struct tg_cluster_hooks h = {.record_added = on_record_added,
                                 .record_removed = on_record_removed, .ud = gs};
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
        free(g->pending);
        free(g->members);
        free(g->key);
        free(g);
    }
    tg_hmap_free(&gs->by_key);
    tg_imap_free(&gs->by_group);
    tg_hmap_free(&gs->pgs);
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

int tg_gangs_pending_set(struct tg_gangs *gs, struct tg_pod *p, int64_t now, struct tg_grec **out)
{
    char key[512];
    tg_gang_key_of(p, key, sizeof key);
    *out = NULL;
    struct tg_grec *g = get_or_make(gs, key, p->ns, p->group);
    if (!g)
        return TG_ENOMEM;
    *out = g;
    uint64_t v;
    if (tg_hmap_get(&gs->pidx, p->key, strlen(p->key), &v)) {
        struct pidx *x = (struct pidx *)(uintptr_t)v;
        if (x->pos < g->npending && !strcmp(g->pending[x->pos]->key, p->key)) {
            g->pending[x->pos] = p;
            absorb(gs, g, pod_priority(gs, p), p->created_ms, pod_never(gs, p));
            return 0;
        }
    }
    if (tg_grow((void **)&g->pending, &g->cappending, g->npending, sizeof *g->pending))
        return TG_ENOMEM;
    struct pidx *x = malloc(sizeof *x);
    if (!x || !(x->key = strdup(p->key))) {
        free(x);
        return TG_ENOMEM;
    }
    x->pos = g->npending;
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
    absorb(gs, g, pod_priority(gs, p), p->created_ms, pod_never(gs, p));
    return 0;
}

struct tg_grec *tg_gangs_pending_delete(struct tg_gangs *gs, const struct tg_pod *p)
{
    uint64_t v;
    if (!tg_hmap_get(&gs->pidx, p->key, strlen(p->key), &v))
        return NULL;
    struct pidx *x = (struct pidx *)(uintptr_t)v;
    char key[512];
    struct tg_grec *g = tg_gangs_get(gs, tg_gang_key_of(p, key, sizeof key));
    const struct tg_usage *u = tg_cluster_usage(gs->cluster, p->key);
    if (g && u && u->gpos != UINT32_MAX && u->kind != TG_USAGE_NOMINATED && g->npending_placed)
        g->npending_placed--;
    tg_hmap_del(&gs->pidx, x->key, strlen(x->key));
    uint32_t pos = x->pos;
    free(x->key);
    free(x);
    if (!g || pos >= g->npending)
        return g;
    g->pending[pos] = g->pending[--g->npending];
    if (pos < g->npending) {
        const char *moved = g->pending[pos]->key;
        if (tg_hmap_get(&gs->pidx, moved, strlen(moved), &v))
            ((struct pidx *)(uintptr_t)v)->pos = pos;
    }
    if (!g->npending && !g->nmembers && g->q.state == TG_Q_OUT) {
        maybe_free(gs, g);
        return NULL;
    }
    return g;
}

/* ---- PodGroups ------------------------------------------------------------------- */

struct tg_grec *tg_gangs_podgroup_set(struct tg_gangs *gs, const struct tg_podgroup *pg)
{
    if (tg_hmap_put(&gs->pgs, pg->key, strlen(pg->key), (uint64_t)(uintptr_t)pg))
        return NULL;
    struct tg_grec *g = tg_gangs_get(gs, pg->key);
    if (g && g->group) {
        g->pg = pg;
        tg_grec_resolve(gs, g);
    }
    return g;
}

struct tg_grec *tg_gangs_podgroup_delete(struct tg_gangs *gs, const char *key)
{
    tg_hmap_del(&gs->pgs, key, strlen(key));
    struct tg_grec *g = tg_gangs_get(gs, key);
    if (g && g->group) {
        g->pg = NULL;
        tg_grec_resolve(gs, g);
    }
    return g;
}

const struct tg_podgroup *tg_gangs_podgroup(const struct tg_gangs *gs, const char *key)
{
    uint64_t v;
    return tg_hmap_get(&gs->pgs, key, strlen(key), &v) ? (const struct tg_podgroup *)(uintptr_t)v
                                                       : NULL;
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
    for (uint32_t i = 0; i < g->npending; i++)
        if (unplaced(g->pending[i], c))
            pods[n++] = g->pending[i];
    uint32_t anchor = g->anchor_node && g->nmembers
                          ? tg_cluster_slot((struct tg_cluster *)c, g->anchor_node, 0)
                          : TG_NONE;
    *out = (struct tg_gang){.name = g->key, .pg = g->pg, .pods = pods, .npods = n,
                            .nbound = g->nmembers, .anchor = anchor, .within = TG_NONE,
                            .priority = g->priority, .created_ms = g->created_ms};
}
