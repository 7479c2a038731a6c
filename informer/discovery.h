/* API discovery: which of a list of (group, version, resource) the API
 * server serves, so that the informer watches only those (a CRD that is not
 * installed is not an error). GET /apis (the groups and versions served),
 * then GET /apis/GROUP/VERSION for each wanted group-version listed (its
 * resources). A failed request (no connection, 5xx, 403) retries the whole
 * discovery after a jittered backoff (500 ms doubling to 30 s); a 404 means
 * "not served". Runs on the client's loop. */
#ifndef TG_INFORMER_DISCOVERY_H
#define TG_INFORMER_DISCOVERY_H

#include <stdint.h>

#include "informer/client.h"

struct tg_apiref {
    const char *group, *version, *resource;   /* "kubeflow.org", "v1", "pytorchjobs" */
};

struct tg_discovery;

/* Starts discovering want[0..n) (kept by pointer until done). done(ud,
 * served) is called once, served[i] != 0 when want[i] is served; *out is
 * freed with tg_discovery_free (also after done; before it, done is never
 * called). Errors: TG_ENOMEM, TG_EINVAL (n > 64). */
int tg_discovery_start(struct tg_client *c, const struct tg_apiref *want, int n,
                       void (*done)(void *ud, const uint8_t *served), void *ud,
                       struct tg_discovery **out);
/* Cancels what is in flight; the struct goes once the loop closed its timer. */
void tg_discovery_free(struct tg_discovery **d);

#endif
