/* The libcurl debug trace of the API client (TOPOGANG_CURL_VERBOSE=1), with
 * credentials taken out: the value of an Authorization or
 * Proxy-Authorization header never reaches the log, whichever the HTTP
 * version (an HTTP/2 request's headers come in one block). */
#ifndef TG_INFORMER_TRACE_H
#define TG_INFORMER_TRACE_H

#include <curl/curl.h>

/* A CURLOPT_DEBUGFUNCTION: writes the trace to the FILE * given as
 * CURLOPT_DEBUGDATA (NULL: stderr), as curl's own verbose output does:
 * "* " info, "> " headers sent, "< " headers received; bodies and TLS
 * records as their size only. Always returns 0. */
int tg_trace_curl(CURL *h, curl_infotype type, char *data, size_t size, void *ud);

#endif
