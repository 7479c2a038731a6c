/* The Pod, Node and PodGroup decoders (model/objects.h) on JSON as the API
 * server would send it: the input goes through cJSON_Parse, then through
 * every decoder (a Pod with and without TG_DECODE_SPEC). Checks the results
 * keep the contracts the model relies on: errors are TG_EPARSE or TG_ENOMEM,
 * every diagnostic names an object and a field, labels and requests are
 * sorted by id, requests are positive, a pod has one shape however often it
 * is decoded, a node clone equals its node. */
#include "fuzz/fuzz.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "model/objects.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"

static void report(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                   const char *msg)
{
    (void)ud;
    (void)is_error;
    (void)at;
    fz_check(what && field && msg, "diagnostic with a NULL text");
    fz_check(strlen(what) + strlen(field) + strlen(msg) > 0, "empty diagnostic");
}

static void check_rc(int rc, const char *what)
{
    fz_check(rc == 0 || rc == TG_EPARSE || rc == TG_ENOMEM, "%s decode returned %d (%s)", what,
             rc, tg_err_name(rc));
}

static void check_labels(const struct tg_label *l, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        fz_check(i == 0 || l[i - 1].key <= l[i].key, "labels not sorted by key at %u", i);
        fz_check(tg_labels_get(l, n, l[i].key) != TG_STR_NONE, "label %u not found", i);
    }
}

static void check_rq(const struct tg_rq *r, uint32_t n, int positive)
{
    for (uint32_t i = 0; i < n; i++) {
        fz_check(i == 0 || r[i - 1].res < r[i].res, "resources not sorted/unique at %u", i);
        fz_check(positive ? r[i].val > 0 : r[i].val >= 0, "resource %u value %lld", i,
                 (long long)r[i].val);
    }
}

static void pods(const cJSON *j, struct tg_diag *d)
{
    struct tg_pod *a = NULL, *b = NULL, *s = NULL;
    int rc = tg_pod_decode(j, 0, d, &a);
    check_rc(rc, "Pod");
    int rs = tg_pod_decode(j, TG_DECODE_SPEC, d, &s);
    check_rc(rs, "Pod (spec)");
    if (rc == 0) {
        fz_check(strlen(tg_pod_name(a)) + a->name_off == strlen(a->key), "name_off");
        check_labels(a->labels, a->nlabels);
        check_rq(a->req, a->nreq, 1);
        fz_check(tg_pod_decode(j, 0, d, &b) == 0, "second decode fails");
        fz_check(tg_pod_shape_hash(a) == tg_pod_shape_hash(b) && tg_pod_same_shape(a, b),
                 "one pod, two shapes");
    }
    if (rs == 0) {
        fz_check(s->spec != NULL, "TG_DECODE_SPEC without spec");
        check_labels(s->spec->selector, s->spec->nselector);
        fz_check(tg_pod_same_shape(s, s), "pod differs from itself");
    }
    tg_pod_free(&a);
    tg_pod_free(&b);
    tg_pod_free(&s);
}

static void nodes(const cJSON *j, struct tg_diag *d)
{
    struct tg_node_obj *n = NULL;
    int rc = tg_node_decode(j, d, &n);
    check_rc(rc, "Node");
    if (rc)
        return;
    check_labels(n->labels, n->nlabels);
    check_rq(n->alloc, n->nalloc, 0);
    struct tg_node_obj *c = tg_node_clone(n);
    fz_check(c != NULL, "clone failed");
    fz_check(c->name == n->name && c->nlabels == n->nlabels && c->ntaints == n->ntaints &&
             c->nalloc == n->nalloc && c->ready == n->ready &&
             (!n->nlabels || !memcmp(c->labels, n->labels, n->nlabels * sizeof *n->labels)) &&
             (!n->nalloc || !memcmp(c->alloc, n->alloc, n->nalloc * sizeof *n->alloc)) &&
             !c->topology == !n->topology && (!n->topology || !strcmp(c->topology, n->topology)),
             "clone differs from its node");
    tg_node_free(&c);
    tg_node_free(&n);
}

static void podgroups(const cJSON *j, struct tg_diag *d)
{
    struct tg_podgroup *g = NULL;
    int rc = tg_podgroup_decode(j, d, &g);
    check_rc(rc, "PodGroup");
    if (rc == 0) {
        fz_check(g->min_member >= 1, "minMember %d", g->min_member);
        fz_check(g->key && strchr(g->key, '/'), "PodGroup key \"%s\"", g->key ? g->key : "");
    }
    tg_podgroup_free(&g);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_log_set_level(TG_LOG_ERROR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j)
        return 0;
    struct tg_diag d = {report, NULL, 0, 0};
    pods(j, &d);
    nodes(j, &d);
    podgroups(j, &d);
    cJSON_Delete(j);
    return 0;
}
