/* The index of placed pods the inter-pod plugins share (internal to
 * plugins/): usage records by label (for the keys some selector has asked
 * about), records by the anti-affinity terms they carry, and live queries
 * that count, per domain of a node label, the records a selector picks and
 * stay current while a gang is placed (assumed members, what-if hides)
 * until stopped. One index per cluster, on tg_cluster.ext. */
#ifndef TG_PLUGINS_PODINDEX_H
#define TG_PLUGINS_PODINDEX_H

#include "plugins/plugin.h"
#include "util/hmap.h"

/* A set of pointers (open addressing; 0 empty, 1 deleted). */
struct tg__pset {
    uintptr_t *v;
    uint32_t cap, len, used;
};

enum { TG__Q_MATCH, TG__Q_GROUP };
/* What bumps *gen: nothing; the total going to or from 0; a domain's count
 * going to or from 0 (the total too); the minimum over the domains. */
enum { TG__B_NONE, TG__B_TOTAL, TG__B_DOMAIN, TG__B_MIN };

/* A live count of records per value of node label `key`. MATCH: records in
 * the namespaces of nsterm (NULL, or one naming none: namespace ns) whose
 * labels match sel (NULL: none). GROUP: records carrying an anti-affinity
 * term equal to gterm, in namespace ns. With elig, only records on those
 * slots count, and the values of those slots are the domains (min and min2
 * over them, for spread). Fill the fields, then tg__pq_start. */
struct tg__pq {
    struct tg__pq *next, *prev;         /* the index's live queries */
    uint8_t kind;                       /* TG__Q_* */
    uint8_t bump;                       /* TG__B_*: what changes *gen */
    uint8_t oom;                        /* a count could not be kept: caps are unreliable */
    uint32_t key;
    uint32_t ns;
    const struct tg_labelsel *sel;
    const struct tg_podterm *nsterm;
    const struct tg_podterm *gterm;
    uint64_t ghash;
    const struct tg_objstore *store;
    const uint8_t *elig;
    uint64_t *gen;
    uint64_t mark;                      /* TG__B_DOMAIN: the total crossing it bumps *gen too */
    /* kept by the index */
    struct tg_imap cnt;                 /* value -> count */
    struct tg_imap nscache;             /* namespace -> 1 selected, 2 not */
    uint64_t total;                     /* records counted in some domain */
    uint32_t *hist, nhist;              /* TG__B_MIN: hist[c] = domains counting c */
    uint32_t ndom;                      /* eligible domains (elig given) */
    uint32_t min, min2;                 /* smallest count, the second smallest (== min when
                                           shared); UINT32_MAX when none */
};

/* Counts what is placed now and keeps counting. Returns 0 or TG_ENOMEM (q
 * needs no stop then). */
int tg__pq_start(struct tg_cluster *c, struct tg__pq *q);
void tg__pq_stop(struct tg_cluster *c, struct tg__pq *q);
uint64_t tg__pq_count(const struct tg__pq *q, uint32_t val);
/* min over the domains other than val (TG__B_MIN queries): UINT32_MAX when
 * val is the only one. */
uint32_t tg__pq_min_others(const struct tg__pq *q, uint32_t val);

/* Value of node label key on slot, TG_STR_NONE when absent. */
uint32_t tg__kval(const struct tg_cluster *c, uint32_t slot, uint32_t key);
/* 1 when term (of a pod in namespace owner_ns) selects a pod in namespace
 * ns with these labels. */
int tg__term_selects(const struct tg_podterm *t, uint32_t owner_ns, const struct tg_objstore *st,
                     uint32_t ns, const struct tg_label *labels, uint32_t nlabels);

/* Calls fn for every distinct anti-affinity term (with its namespace) that
 * placed pods carry and that selects pod p; desc names who carries it
 * ("ml/llama-3 on kubernetes.io/hostname", interned). Stops at fn's first
 * non-zero return and returns it. */
int tg__pidx_groups(struct tg_cluster *c, const struct tg_objstore *st, const struct tg_pod *p,
                    int (*fn)(void *ud, const struct tg_podterm *t, uint32_t ns, uint64_t hash,
                              uint32_t desc),
                    void *ud);

/* The index's side of the cluster hooks (plugins/registry.c). */
int tg__pidx_attach(struct tg_cluster *c);
void tg__pidx_usage(struct tg_cluster *c, struct tg_usage *u, int sign);
void tg__pidx_added(struct tg_cluster *c, struct tg_usage *u);
void tg__pidx_removed(struct tg_cluster *c, struct tg_usage *u);
void tg__pidx_changing(struct tg_cluster *c, struct tg_usage *u, int done);
/* Keys named by the selectors of placed pods' anti-affinity terms, into out
 * (up to cap, after the n already there, deduplicated); returns the new n. */
uint32_t tg__pidx_group_keys(struct tg_cluster *c, uint32_t *out, uint32_t n, uint32_t cap);

/* "ml/app=x,tier in (a,b)" for a selector in namespaces (for reasons). */
void tg__describe_term(const struct tg_podterm *t, uint32_t ns, char *buf, size_t n);

#endif
