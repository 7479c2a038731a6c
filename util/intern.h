/* String interning: label keys and values, node names, namespaces, resource
 * names and taint keys are stored once and named by a uint32 id, so the model
 * compares ids instead of strings and a label costs 8 bytes on a node.
 * Id 0 is always the empty string. Single-threaded, like the rest of the core.
 *
 * Two kinds of holder:
 * - tg_intern pins the string: it lives until the process ends. For what is
 *   few and steady (node names, namespaces, label keys the policy names,
 *   selectors, gang names).
 * - tg_intern_ref counts a reference that the holder gives back with
 *   tg_intern_unref. For what churns with objects (a pod's label values: a
 *   Job's name, a timestamp, a hostile tenant's made-up labels): when the
 *   last reference goes and nothing pinned the string, its memory and its id
 *   are reclaimed, and the id is handed to the next new string. A holder
 *   must therefore not keep a counted id past its unref (copies take their
 *   own reference: model/cluster.c's usage records do).
 * Both are one hash lookup; a count is a 4-byte add. */
#ifndef TG_UTIL_INTERN_H
#define TG_UTIL_INTERN_H

#include <stddef.h>
#include <stdint.h>

#define TG_STR_NONE UINT32_MAX

/* Interns s[0..n) for good (pinned) and returns its id, or TG_STR_NONE when
 * out of memory. */
uint32_t tg_intern_n(const char *s, size_t n);
uint32_t tg_intern(const char *s);
/* Interns s[0..n) with one counted reference; TG_STR_NONE when out of
 * memory. Release with tg_intern_unref. */
uint32_t tg_intern_ref(const char *s, size_t n);
/* One more reference to a live id (a copy of a counted id). */
void tg_intern_retain(uint32_t id);
/* Gives back one reference; the last frees an unpinned string. Ids 0 and
 * TG_STR_NONE are ignored. */
void tg_intern_unref(uint32_t id);
/* Id of s if already interned, else TG_STR_NONE; never allocates. */
uint32_t tg_intern_lookup(const char *s, size_t n);
/* The NUL-terminated string of an id. */
const char *tg_str(uint32_t id);
size_t tg_str_len(uint32_t id);
/* Live interned strings, and bytes held (for metrics and benchmarks). */
uint32_t tg_intern_count(void);
size_t tg_intern_bytes(void);

#endif
