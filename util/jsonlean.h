/* A lean JSON parse into a cJSON tree: one scan, every node and string in
 * an arena kept across parses (no malloc per node), and the subtrees the
 * caller names as unread left out of the tree (validated, never built).
 *
 * The tree is the one cJSON_ParseWithLength builds, less the left-out
 * subtrees: the same nodes in the same order, the same types, strings (keys
 * and values, escapes decoded as cJSON does), valuedouble and valueint. The
 * lean scan takes strict JSON (RFC 8259: no control characters in strings,
 * no invalid \u escapes or \u0000, no leading zeros or '+', numbers of at
 * most 63 characters, at most 256 levels, only whitespace after the value);
 * anything else is parsed by cJSON_ParseWithLength, whose verdict stands,
 * so the two paths accept the same texts (fuzz/fuzz_jsonlean.c checks both).
 *
 * Unread subtrees are paths of object keys separated by '.', "*" matching
 * any key or any array element: "object.metadata.managedFields",
 * "object.spec.containers.*.env". A matched key's value is left out
 * whatever its type; a reader must not look for it (the Pod decoder's list
 * is model/objects.h's tg_pod_unread). */
#ifndef TG_UTIL_JSONLEAN_H
#define TG_UTIL_JSONLEAN_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

struct cJSON;

enum { TG_JLEAN_MAX_NODES = 128 };

/* The unread paths as a tree of keys (node 0 the root; 0 as a link: none). */
struct tg__jlean_node {
    const char *key;                    /* "*": any key or element */
    uint16_t child, sibling;
    uint8_t leaf;                       /* a path ends here: its value is left out */
};

struct tg_jlean {
    struct tg_arena arena;              /* the lean tree's nodes and strings */
    struct cJSON *full;                 /* the last fallback tree, owned */
    struct tg__jlean_node node[TG_JLEAN_MAX_NODES];
    uint16_t nnodes;
    char *paths;                        /* owned copies of the paths' text */
    uint8_t cjson_only;                 /* set: every text goes to cJSON (no lean scan) */
    uint64_t lean, fallbacks;           /* parses done each way */
};

/* Sets j up to leave out `unread` (NULL-terminated paths, NULL: none) under
 * the key path `base` ("object", or "" for the root: the paths are joined to
 * it). Returns 0, TG_EINVAL (an empty path, or more than TG_JLEAN_MAX_NODES
 * keys in all) or TG_ENOMEM. A key that a named component and a "*" both
 * match follows the named one. Free with
 * tg_jlean_free; a zeroed struct is a tg_jlean without unread paths. */
int tg_jlean_init(struct tg_jlean *j, const char *base, const char *const *unread);
void tg_jlean_free(struct tg_jlean *j);

/* Parses buf[0..len) (no NUL needed). On success *root is the tree (lean,
 * or cJSON's after a fallback), owned by j and valid until the next parse,
 * tg_jlean_clear or tg_jlean_free: never cJSON_Delete it. NULL when cJSON refuses the text
 * too (TG_EPARSE), or memory ran out (TG_ENOMEM). */
int tg_jlean_parse(struct tg_jlean *j, const char *buf, size_t len, const struct cJSON **root);
/* Drops the last tree (a huge one's memory goes; the arena's usual block is
 * kept for the next parse). */
void tg_jlean_clear(struct tg_jlean *j);

/* Whether lean (a tree tg_jlean_parse gave) is full (cJSON's of the same
 * text) less j's unread paths: the same types, keys, strings, numbers and
 * order, the first child's prev the last (tests, fuzz/fuzz_jsonlean.c).
 * Returns the number of subtrees of full left out (>= 0), or -1 with the
 * path of the first difference in where[0..n). */
int tg_jlean_compare(const struct tg_jlean *j, const struct cJSON *lean,
                     const struct cJSON *full, char *where, size_t n);

#endif
