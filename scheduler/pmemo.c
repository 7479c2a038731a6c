/* A memo of failed preemption and reclaim plans; see pmemo.h. */
#include "scheduler/pmemo.h"
#include "plugins/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tg_pmemo_ent {
    struct tg_pmemo_key k;              /* view, blocks, exclude, cluster: NULL (copies below) */
    uint8_t timed;
    char *exclude;                      /* owned, NULL none */
    struct tg_block blocks[TG_MAX_BLOCKS];
    const struct tg_podgroup *pg;       /* compared while the generations are equal */
    uint32_t min_member, npods;
    char *reason;                       /* owned */
    struct tg_pod *pods[];              /* the view's pods, npods of them */
};

/* A PodGroup whose every field placement reads is compared below: ours, no
 * sub-groups, usable. */
static int pg_simple(const struct tg_podgroup *pg)
{
    return !pg || (pg->api == 0 && !pg->nsubs && !pg->sub_size && !pg->nsgpol && !pg->nouter &&
                   !pg->problem);
}

static int pg_same(const struct tg_podgroup *a, const struct tg_podgroup *b)
{
    if (a == b)
        return 1;
    return a && b && a->min_member == b->min_member && a->max_member == b->max_member &&
           a->strategy == b->strategy && a->required == b->required &&
           a->preferred == b->preferred && a->tier == b->tier && a->tier_hard == b->tier_hard &&
           a->topo_req == b->topo_req && a->topo_pref == b->topo_pref &&
           a->complete == b->complete && a->loss == b->loss;
}

static int pod_simple(const struct tg_pod *p)
{
    return !p->cons && !p->nunoffered &&
           (!p->spec || (!p->spec->npvcs && !p->spec->nclaims && !p->spec->nspread));
}

int tg_pmemo_usable(struct tg_pmemo *m, const struct tg_pmemo_key *k)
{
    const struct tg_gang *v = k->view;
    m->unusable++; /* taken back below when it is */
    if (v->within != TG_NONE || v->nbound || !v->npods || v->npods > TG_PMEMO_PODS ||
        k->nblocks > TG_MAX_BLOCKS || !pg_simple(v->pg))
        return 0;
    for (uint32_t i = 0; i < v->npods; i++)
        if (!pod_simple(v->pods[i]))
            return 0;
    m->unusable--;
    return 1;
}

/* Pods that placement treats as one set: equal requests and spec
 * (tg_pod_same_shape), namespace, node name and rank, and labels where a
 * plugin's selector looks (keys). */
static int pod_same(const struct tg_pod *a, const struct tg_pod *b, const uint32_t *keys, uint32_t nk)
{
    if (a == b)
        return 1;
    return a->ns == b->ns && a->node == b->node && a->rank == b->rank &&
           a->deleting == b->deleting && tg_pod_same_shape(a, b) &&
           tg_pod_labels_same(a, b, keys, nk);
}

/* The key's scalars and the generations (no pointer is followed). */
static int scalars_same(const struct tg_pmemo_ent *e, const struct tg_pmemo_key *k)
{
    const struct tg_gang *v = k->view;
    if (memcmp(e->k.gen, k->gen, sizeof k->gen) || e->k.reclaim != k->reclaim ||
        e->k.priority != k->priority || e->k.queue != k->queue || e->k.dom != k->dom ||
        (e->timed && e->k.now_ms != k->now_ms) || e->npods != v->npods ||
        e->min_member != v->min_member || e->k.nblocks != k->nblocks ||
        !e->exclude != !k->exclude || (e->exclude && strcmp(e->exclude, k->exclude)))
        return 0;
    for (uint32_t i = 0; i < k->nblocks; i++)
        if (e->blocks[i].domain != k->blocks[i].domain || e->blocks[i].owner != k->blocks[i].owner)
            return 0;
    return 1;
}

const char *tg_pmemo_find(struct tg_pmemo *m, const struct tg_pmemo_key *k)
{
    const struct tg_gang *v = k->view;
    uint32_t keys[64], nk = 0;
    int have_keys = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        const struct tg_pmemo_ent *e = m->v[i];
        if (!scalars_same(e, k) || !pg_same(e->pg, v->pg))
            continue;
        if (!have_keys) {
            nk = tg_plugins_label_keys(k->cluster, v->pods, v->npods, keys, 64);
            have_keys = 1;
        }
        if (nk > 64)
            break; /* more keys than compared: no answer */
        uint32_t j = 0;
        while (j < v->npods && pod_same(e->pods[j], v->pods[j], keys, nk))
            j++;
        if (j == v->npods) {
            m->hits++;
            return e->reason;
        }
    }
    m->misses++;
    return NULL;
}

static void ent_free(struct tg_pmemo_ent **pe)
{
    if (!*pe)
        return;
    free((*pe)->exclude);
    free((*pe)->reason);
    free(*pe);
    *pe = NULL;
}

void tg_pmemo_put(struct tg_pmemo *m, const struct tg_pmemo_key *k, int timed, const char *reason)
{
    const struct tg_gang *v = k->view;
    /* entries of other generations can never match again: those go first */
    uint32_t w = 0;
    for (uint32_t i = 0; i < m->n; i++)
        if (memcmp(m->v[i]->k.gen, k->gen, sizeof k->gen))
            ent_free(&m->v[i]);
        else
            m->v[w++] = m->v[i];
    m->n = w;
    if (m->next > m->n)
        m->next = 0;
    struct tg_pmemo_ent *e = calloc(1, sizeof *e + v->npods * sizeof e->pods[0]);
    if (!e || !(e->reason = strdup(reason)) || (k->exclude && !(e->exclude = strdup(k->exclude)))) {
        ent_free(&e);
        return;
    }
    e->k = *k;
    e->k.view = NULL;
    e->k.blocks = NULL;
    e->k.exclude = NULL;
    e->k.cluster = NULL;
    e->timed = (uint8_t)!!timed;
    if (k->nblocks)
        memcpy(e->blocks, k->blocks, k->nblocks * sizeof *k->blocks);
    e->pg = v->pg;
    e->min_member = v->min_member;
    e->npods = v->npods;
    memcpy(e->pods, v->pods, v->npods * sizeof *v->pods);
    if (m->n < TG_PMEMO_CAP) {
        m->v[m->n++] = e;
    } else { /* full: the oldest goes */
        ent_free(&m->v[m->next]);
        m->v[m->next] = e;
        m->next = (m->next + 1) % TG_PMEMO_CAP;
    }
    m->puts++;
}

void tg_pmemo_verify(int rc, int failed, const char *reason, const char *memo)
{
    static uint64_t checked;
    if (rc || !failed || strcmp(reason, memo)) {
        fprintf(stderr, "pmemo: a hit that planning contradicts (rc %d, failed %d): planned \"%s\", "
                        "memo \"%s\"\n", rc, failed, reason, memo);
        abort();
    }
    checked++;
    if (!(checked & (checked - 1))) /* 1, 2, 4, ...: alive, and how many */
        fprintf(stderr, "pmemo: %llu hits checked\n", (unsigned long long)checked);
}

void tg_pmemo_clear(struct tg_pmemo *m)
{
    for (uint32_t i = 0; i < m->n; i++)
        ent_free(&m->v[i]);
    m->n = m->next = 0;
}

void tg_pmemo_free(struct tg_pmemo *m)
{
#ifdef TG_PMEMO_VERIFY
    fprintf(stderr, "pmemo: %llu hits, %llu misses, %llu kept, %llu not memoed\n",
            (unsigned long long)m->hits, (unsigned long long)m->misses,
            (unsigned long long)m->puts, (unsigned long long)m->unusable);
#endif
    tg_pmemo_clear(m);
}
