/* String interning: label keys and values, node names, namespaces, resource
 * names and taint keys are stored once and named by a uint32 id, so the model
 * compares ids instead of strings and a label costs 8 bytes on a node.
 * Id 0 is always the empty string. Strings live until the process ends (a
 * label value that churns, such as a timestamp, grows the table: the informer
 * skips such keys, see informer/). Single-threaded, like the rest of the core. */
#ifndef TG_UTIL_INTERN_H
#define TG_UTIL_INTERN_H

#include <stddef.h>
#include <stdint.h>

#define TG_STR_NONE UINT32_MAX

/* Interns s[0..n) and returns its id, or TG_STR_NONE when out of memory. */
uint32_t tg_intern_n(const char *s, size_t n);
uint32_t tg_intern(const char *s);
/* Id of s if already interned, else TG_STR_NONE; never allocates. */
uint32_t tg_intern_lookup(const char *s, size_t n);
/* The NUL-terminated string of an id. */
const char *tg_str(uint32_t id);
size_t tg_str_len(uint32_t id);
/* Number of interned strings and bytes held (for metrics and benchmarks). */
uint32_t tg_intern_count(void);
size_t tg_intern_bytes(void);

#endif
