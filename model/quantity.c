/* Exact Kubernetes quantity parsing with 128-bit integers; see quantity.h. */
#include "model/quantity.h"
#include "util/err.h"

#include <stdio.h>
#include <string.h>

typedef __int128 i128;

static const i128 I64MAX = INT64_MAX;

/* Multiplies *v by 10^e (e >= 0) or divides rounding up (e < 0). Returns 0 or
 * TG_ERANGE when the result exceeds int64. */
static int scale10(i128 *v, int e)
{
    for (; e > 0; e--) {
        if (*v > I64MAX * 10)
            return TG_ERANGE;
        *v *= 10;
        if (*v > I64MAX * 1000) /* keep headroom; checked against int64 at the end */
            return TG_ERANGE;
    }
    for (; e < 0; e++) {
        i128 q = *v / 10;
        if (*v % 10)
            q++;
        *v = q;
    }
    return 0;
}

int tg_quantity_parse(const char *s, size_t n, int milli, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    i128 mant = 0;
    int digits = 0, frac = 0, seen_dot = 0;
    for (; i < n; i++) {
        char ch = s[i];
        if (ch >= '0' && ch <= '9') {
            if (mant == 0 && ch == '0') {
                if (seen_dot)
                    frac++;
                digits++;
                continue;
            }
            if (mant > ((i128)1 << 100))
                return TG_ERANGE; /* more significant digits than any sane quantity */
            mant = mant * 10 + (ch - '0');
            digits++;
            if (seen_dot)
                frac++;
        } else if (ch == '.' && !seen_dot) {
            seen_dot = 1;
        } else {
            break;
        }
    }
    if (digits == 0)
        return TG_EPARSE;

    int e10 = -frac, bin = 0;
    const char *suf = s + i;
    size_t sl = n - i;
    if (sl == 0) {
        /* plain number */
    } else if (sl == 2 && suf[0] && suf[1] == 'i' && strchr("KMGTPE", suf[0])) {
        bin = 10 * (int)(strchr("KMGTPE", suf[0]) - "KMGTPE" + 1);
    } else if (sl == 1 && suf[0] && strchr("numkMGTPE", suf[0])) {
        static const char sym[] = "numkMGTPE";
        static const int exp[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
        e10 += exp[strchr(sym, suf[0]) - sym];
    } else if (suf[0] == 'e' || suf[0] == 'E') {
        size_t j = 1;
        int eneg = 0, ev = 0;
        if (j < sl && (suf[j] == '+' || suf[j] == '-'))
            eneg = suf[j++] == '-';
        if (j == sl)
            return TG_EPARSE;
        for (; j < sl; j++) {
            if (suf[j] < '0' || suf[j] > '9')
                return TG_EPARSE;
            ev = ev * 10 + (suf[j] - '0');
            if (ev > 100)
                return TG_ERANGE;
        }
        e10 += eneg ? -ev : ev;
    } else {
        return TG_EPARSE;
    }
    if (neg && mant != 0)
        return TG_EINVAL;
    if (milli)
        e10 += 3;

    i128 v = mant;
    /* Apply the binary multiplier first where it keeps precision exact. */
    for (int b = 0; b < bin; b++) {
        if (v > I64MAX * 1000)
            return TG_ERANGE;
        v <<= 1;
    }
    if (e10 < -40) {
        v = v ? 1 : 0; /* a positive amount below one unit rounds up to one */
    } else {
        int rc = scale10(&v, e10);
        if (rc)
            return rc;
    }
    if (v > I64MAX)
        return TG_ERANGE;
    *out = (int64_t)v;
    return 0;
}

const char *tg_quantity_format(int64_t v, int milli, char *buf, size_t n)
{
    if (milli) {
        if (v % 1000 == 0)
            snprintf(buf, n, "%lld", (long long)(v / 1000));
        else
            snprintf(buf, n, "%lldm", (long long)v);
        return buf;
    }
    static const char *const bsuf[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int k = -1;
    int64_t x = v;
    while (x && x % 1024 == 0 && k < 5) {
        x /= 1024;
        k++;
    }
    if (k >= 0 && v >= 1024)
        snprintf(buf, n, "%lld%s", (long long)x, bsuf[k]);
    else
        snprintf(buf, n, "%lld", (long long)v);
    return buf;
}
