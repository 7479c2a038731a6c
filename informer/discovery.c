/* API discovery; see discovery.h. One request in flight at a time: the
 * group list, then each wanted group-version in turn (a handful at start). */
#include "informer/discovery.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "util/err.h"
#include "util/log.h"

enum { MAX_WANT = 64, BACKOFF_MIN_MS = 500, BACKOFF_MAX_MS = 30000 };

struct tg_discovery {
    struct tg_client *c;
    const struct tg_apiref *want;
    int n;
    uint8_t served[MAX_WANT];
    uint8_t listed[MAX_WANT];           /* its group-version is in /apis */
    int next;                           /* the want[] whose group-version is asked next */
    uint32_t backoff_ms;
    struct tg_req *req;
    uv_timer_t retry;
    int closing;
    void (*done)(void *ud, const uint8_t *served);
    void *ud;
};

static void step(struct tg_discovery *d);

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

static void on_retry(uv_timer_t *t)
{
    struct tg_discovery *d = t->data;
    d->next = -1;
    step(d);
}

static void failed(struct tg_discovery *d, const struct tg_resp *r, const char *what)
{
    tg_warn("informer", "API discovery: %s: %s (HTTP %ld); retrying", what,
            r->msg ? r->msg : tg_strerror(r->err), r->status);
    uint32_t delay = d->backoff_ms / 2 + (uint32_t)(rand() % (int)(d->backoff_ms / 2 + 1));
    d->backoff_ms = d->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : d->backoff_ms * 2;
    uv_timer_start(&d->retry, on_retry, delay, 0);
}

/* /apis: which group-versions are served. */
static void on_groups(void *ud, const struct tg_resp *r)
{
    struct tg_discovery *d = ud;
    d->req = NULL;
    if (r->err) {
        failed(d, r, "GET /apis");
        return;
    }
    cJSON *root = cJSON_ParseWithLength(r->body, r->len);
    const cJSON *g, *v;
    memset(d->listed, 0, sizeof d->listed);
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(root, "groups"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(g, "name");
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(g, "versions"))
        {
            const cJSON *ver = cJSON_GetObjectItemCaseSensitive(v, "version");
            for (int i = 0; cJSON_IsString(name) && cJSON_IsString(ver) && i < d->n; i++)
                if (!strcmp(d->want[i].group, name->valuestring) &&
                    !strcmp(d->want[i].version, ver->valuestring))
                    d->listed[i] = 1;
        }
    }
    cJSON_Delete(root);
    d->next = 0;
    step(d);
}

/* /apis/GROUP/VERSION: its resources. */
static void on_resources(void *ud, const struct tg_resp *r)
{
    struct tg_discovery *d = ud;
    d->req = NULL;
    const struct tg_apiref *w = &d->want[d->next];
    if (r->err && r->status != 404) {
        char what[300];
        snprintf(what, sizeof what, "GET /apis/%s/%s", w->group, w->version);
        failed(d, r, what);
        return;
    }
    cJSON *root = r->err ? NULL : cJSON_ParseWithLength(r->body, r->len);
    const cJSON *res;
    cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(root, "resources"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(res, "name");
        for (int i = d->next; cJSON_IsString(name) && i < d->n; i++)
            if (!strcmp(d->want[i].group, w->group) && !strcmp(d->want[i].version, w->version) &&
                !strcmp(d->want[i].resource, name->valuestring))
                d->served[i] = 1;
    }
    cJSON_Delete(root);
    /* every want of this group-version is answered */
    for (int i = d->next; i < d->n; i++)
        if (!strcmp(d->want[i].group, w->group) && !strcmp(d->want[i].version, w->version))
            d->listed[i] = 0;
    d->next++;
    step(d);
}

/* The next request, or done. */
static void step(struct tg_discovery *d)
{
    struct tg_req_opts o = {.timeout_ms = 15000, .ud = d};
    char path[300];
    if (d->next < 0) {
        memset(d->served, 0, sizeof d->served);
        o.path = "/apis";
        o.on_done = on_groups;
    } else {
        while (d->next < d->n && !d->listed[d->next])
            d->next++;
        if (d->next == d->n) {
            d->done(d->ud, d->served);
            return;
        }
        snprintf(path, sizeof path, "/apis/%s/%s", d->want[d->next].group, d->want[d->next].version);
        o.path = path;
        o.on_done = on_resources;
    }
    struct tg_resp r = {.err = TG_ENOMEM, .msg = "out of memory"};
    if (tg_client_request(d->c, &o, &d->req))
        failed(d, &r, o.path);
}

int tg_discovery_start(struct tg_client *c, const struct tg_apiref *want, int n,
                       void (*done)(void *ud, const uint8_t *served), void *ud,
                       struct tg_discovery **out)
{
    *out = NULL;
    if (n < 0 || n > MAX_WANT)
        return TG_EINVAL;
    struct tg_discovery *d = calloc(1, sizeof *d);
    if (!d)
        return TG_ENOMEM;
    d->c = c;
    d->want = want;
    d->n = n;
    d->done = done;
    d->ud = ud;
    d->next = -1;
    d->backoff_ms = BACKOFF_MIN_MS;
    uv_timer_init(tg_client_loop(c), &d->retry);
    d->retry.data = d;
    *out = d;
    step(d);
    return 0;
}

void tg_discovery_free(struct tg_discovery **pd)
{
    struct tg_discovery *d = *pd;
    if (!d)
        return;
    *pd = NULL;
    tg_client_cancel(d->req);
    d->req = NULL;
    uv_timer_stop(&d->retry);
    uv_close((uv_handle_t *)&d->retry, on_closed);
}
