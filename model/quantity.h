/* Kubernetes resource quantities, parsed exactly.
 *
 * Grammar (k8s.io/apimachinery/pkg/api/resource): a signed decimal number with
 * an optional fraction, then either a binary suffix (Ki Mi Gi Ti Pi Ei), a
 * decimal suffix (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
 * Values are computed with 128-bit integers, never floating point, and rounded
 * up the way Quantity.Value()/MilliValue() round: "0.1" cpu is 100 millicores,
 * "1.5Gi" is 1610612736 bytes, "129M" is 129000000, "1m" of memory is 1 byte. */
#ifndef TG_MODEL_QUANTITY_H
#define TG_MODEL_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Parses s[0..n). milli != 0 returns thousandths (cpu), else whole units.
 * Returns 0, TG_EPARSE (not a quantity), TG_ERANGE (does not fit int64) or
 * TG_EINVAL (negative: requests and capacities cannot be). */
int tg_quantity_parse(const char *s, size_t n, int milli, int64_t *out);

/* Formats v for people: "500m", "8", "64Gi", "1.5Gi" where exact. Returns buf. */
const char *tg_quantity_format(int64_t v, int milli, char *buf, size_t n);

#endif
