/* Kubernetes quantities (model/quantity.h): any bytes, as whole units and as
 * thousandths. Checks what exact parsing implies: the two readings agree on
 * syntax, ceil(milli / 1000) equals the whole-unit value, and what
 * tg_quantity_format prints parses back to the same value. */
#include "fuzz/fuzz.h"

#include "model/quantity.h"
#include "util/err.h"

#include <string.h>

static void round_trip(int64_t v, int milli)
{
    char buf[64];
    int64_t back = -1;
    const char *s = tg_quantity_format(v, milli, buf, sizeof buf);
    int rc = tg_quantity_parse(s, strlen(s), milli, &back);
    fz_check(rc == 0 && back == v, "format(%lld, milli=%d) = \"%s\" parses to %lld (rc %d)",
             (long long)v, milli, s, (long long)back, rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    int64_t v = -1, mv = -1;
    int rc = tg_quantity_parse(s, size, 0, &v);
    int mrc = tg_quantity_parse(s, size, 1, &mv);
    fz_check((rc == TG_EPARSE) == (mrc == TG_EPARSE), "syntax verdict differs: %d vs %d", rc, mrc);
    fz_check(rc == 0 || rc == TG_EPARSE || rc == TG_ERANGE || rc == TG_EINVAL, "rc %d", rc);
    if (rc == 0) {
        fz_check(v >= 0, "negative value %lld", (long long)v);
        round_trip(v, 0);
    }
    if (mrc == 0) {
        fz_check(mv >= 0, "negative milli value %lld", (long long)mv);
        fz_check(rc == 0, "milli parses (%lld) but whole units do not (rc %d)", (long long)mv, rc);
        int64_t up = mv / 1000 + (mv % 1000 != 0);
        fz_check(up == v, "\"%.*s\": ceil(%lld milli / 1000) = %lld, whole units %lld", (int)size,
                 s, (long long)mv, (long long)up, (long long)v);
        round_trip(mv, 1);
    }
    return 0;
}
