/* libcurl debug trace with credentials redacted (see trace.h). */
#include "informer/trace.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const secret_headers[] = {"authorization:", "proxy-authorization:"};

/* Writes one header line (without its line end) with a secret's value
 * replaced. */
static void header_line(FILE *f, const char *prefix, const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof secret_headers / sizeof secret_headers[0]; i++) {
        size_t k = strlen(secret_headers[i]);
        if (n >= k && !strncasecmp(s, secret_headers[i], k)) {
            /* keep the scheme ("Bearer", "Basic"): it says which credential */
            size_t v = k;
            while (v < n && s[v] == ' ')
                v++;
            size_t w = v;
            while (w < n && s[w] != ' ')
                w++;
            fprintf(f, "%s%.*s %.*s [redacted]\n", prefix, (int)k, s, (int)(w - v), s + v);
            return;
        }
    }
    fprintf(f, "%s%.*s\n", prefix, (int)n, s);
}

static void lines(FILE *f, const char *prefix, const char *data, size_t size, int headers)
{
    while (size) {
        const char *nl = memchr(data, '\n', size);
        size_t n = nl ? (size_t)(nl - data) : size, len = n;
        while (len && (data[len - 1] == '\r'))
            len--;
        if (len || !nl) {
            if (headers)
                header_line(f, prefix, data, len);
            else
                fprintf(f, "%s%.*s\n", prefix, (int)len, data);
        }
        if (!nl)
            break;
        size -= n + 1;
        data += n + 1;
    }
}

int tg_trace_curl(CURL *h, curl_infotype type, char *data, size_t size, void *ud)
{
    FILE *f = ud ? ud : stderr;
    (void)h;
    switch (type) {
    case CURLINFO_TEXT: lines(f, "* ", data, size, 0); break;
    case CURLINFO_HEADER_OUT: lines(f, "> ", data, size, 1); break;
    case CURLINFO_HEADER_IN: lines(f, "< ", data, size, 1); break;
    case CURLINFO_DATA_OUT: fprintf(f, "> [%zu bytes of body]\n", size); break;
    case CURLINFO_DATA_IN: fprintf(f, "< [%zu bytes of body]\n", size); break;
    default: break;                 /* TLS records */
    }
    fflush(f);
    return 0;
}
