/* The topology tree: root -> one domain per distinct label value at each
 * configured level (zone, block, rack, nvlink-domain, ...) -> nodes.
 *
 * Flat arrays with parent indices: domain 0 is the root (level 0); configured
 * level i (0-based in the policy) is tree level i + 1. The deepest domains
 * list node slots as children; every other domain lists child domains. A node
 * lacking a level's label sits in the domain named "" at that level (with the
 * other nodes of its parent that lack it), and below it by the labels it has.
 * Such a domain is a place in the tree, not a domain of that level: its nodes
 * share nothing there (tg_tree_labelled, tg_tree_named). Nodes are inserted,
 * moved and removed incrementally; domains are never freed (an empty one
 * keeps nnodes == 0 and is skipped), so domain ids stay stable. */
#ifndef TG_MODEL_TREE_H
#define TG_MODEL_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "util/hmap.h"

#define TG_MAX_LEVELS 8

struct tg_label;

struct tg_domain {
    uint32_t parent;                    /* UINT32_MAX for the root */
    uint32_t name;                      /* interned label value */
    uint32_t nnodes;                    /* aggregate: nodes below */
    uint32_t nchild, cap;
    uint32_t *child;                    /* domain ids, or node slots at the deepest level */
    uint8_t level;                      /* 0 root, 1..nlevels */
};

struct tg_tree {
    struct tg_domain *dom;
    uint32_t ndom, domcap;
    uint32_t nlevels;
    uint32_t label[TG_MAX_LEVELS];      /* node label key id per level */
    struct tg_imap index;               /* parent << 32 | name -> domain id */
    uint32_t *leaf;                     /* per slot: deepest domain, UINT32_MAX if absent */
    uint32_t *pos;                      /* per slot: index in that domain's child list */
    uint32_t nslots;
    uint32_t *bylevel[TG_MAX_LEVELS + 1]; /* domain ids per level */
    uint32_t nbylevel[TG_MAX_LEVELS + 1], capbylevel[TG_MAX_LEVELS + 1];
    /* Per level: domains whose name another domain of the level has too (a
     * rack "r1" in two zones); 0 when a name there is one domain, as a
     * topologyKey sees it. Names "" (label missing) do not count. */
    uint32_t ndup[TG_MAX_LEVELS + 1];
    struct tg_imap names;               /* level << 32 | name -> 1 */
};

/* Empty tree for the given level label ids (nlevels <= TG_MAX_LEVELS).
 * Returns 0, TG_EINVAL or TG_ENOMEM. Free with tg_tree_free. */
int tg_tree_init(struct tg_tree *t, const uint32_t *labels, uint32_t nlevels);
void tg_tree_free(struct tg_tree *t);
/* Puts slot under the domains its labels name (moving it if it was
 * elsewhere). labels are sorted by key (struct tg_node_obj). */
int tg_tree_insert(struct tg_tree *t, uint32_t slot, const struct tg_label *labels, uint32_t n);
void tg_tree_remove(struct tg_tree *t, uint32_t slot);
/* The ancestor of domain d at tree level lvl (d itself when at lvl).
 * Inline: placement and preemption ask it per node and per record. */
static inline uint32_t tg_tree_ancestor(const struct tg_tree *t, uint32_t d, uint32_t lvl)
{
    while (d != UINT32_MAX && t->dom[d].level > lvl)
        d = t->dom[d].parent;
    return d;
}
/* The node slots under domain d, into out (room for t->nslots); returns
 * how many. Recursion depth is the number of levels. */
uint32_t tg_tree_slots_under(const struct tg_tree *t, uint32_t d, uint32_t *out);
/* 1 when the nodes under d carry the label of tree level lvl (d's level
 * or above), so that they share one domain there; level 0 (the cluster)
 * always. */
int tg_tree_labelled(const struct tg_tree *t, uint32_t d, uint32_t lvl);
/* The tightest real domain holding d: d or its nearest ancestor whose
 * nodes carry its level's label (the root at worst). */
uint32_t tg_tree_named(const struct tg_tree *t, uint32_t d);
/* "zone-a/block-1/rack-3" for a domain: its label values, outermost first,
 * leaving out the levels whose label its nodes lack ("zone-a/rack-3"); ""
 * for the root. Returns buf. */
const char *tg_tree_path(const struct tg_tree *t, uint32_t d, char *buf, size_t n);

#endif
