/* Reading the simulator's input; see load.h. */
#include "scheduler/sim/load.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/vec.h"
#include "util/yamljson.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void report(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                   const char *msg)
{
    struct tg_simdata *d = ud;
    if (d->quiet)
        return;
    fprintf(stderr, "%s:%d: %s: %s%s%s: %s%s\n", d->origin, tg_yaml_line(d->lines, at),
            is_error ? "error" : "warning", what, *field ? ": " : "", field, msg,
            is_error ? " (object skipped)" : "");
}

void tg_simdata_init(struct tg_simdata *d)
{
    memset(d, 0, sizeof *d);
    d->diag.report = report;
    d->diag.ud = d;
}

void tg_simdata_free(struct tg_simdata *d)
{
    for (uint32_t i = 0; i < d->nnodes; i++)
        tg_node_free(&d->nodes[i]);
    for (uint32_t i = 0; i < d->npods; i++)
        tg_pod_free(&d->pods[i].pod);
    for (uint32_t i = 0; i < d->npgs; i++)
        tg_podgroup_free(&d->pgs[i]);
    for (uint32_t i = 0; i < d->npdbs; i++)
        tg_pdb_free(&d->pdbs[i]);
    free(d->nodes);
    free(d->pods);
    free(d->pgs);
    free(d->pcs);
    free(d->pdbs);
    tg_hmap_free(&d->pod_idx);
    tg_hmap_free(&d->pg_idx);
    tg_hmap_free(&d->pdb_idx);
    tg_imap_free(&d->node_idx);
    for (uint32_t i = 0; i < d->nwls; i++)
        tg_workload_free(&d->wls[i]);
    free(d->wls);
    tg_hmap_free(&d->wl_idx);
    for (uint32_t i = 0; i < d->nqueues; i++)
        tg_queue_obj_free(&d->queues[i]);
    free(d->queues);
    tg_hmap_free(&d->queue_idx);
    tg_objstore_free(&d->store);
    memset(d, 0, sizeof *d);
}

static void warn_at(struct tg_simdata *d, const cJSON *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn_at(struct tg_simdata *d, const cJSON *at, const char *fmt, ...)
{
    d->warnings++;
    if (d->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: warning: ", d->origin, tg_yaml_line(d->lines, at));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void error_at(struct tg_simdata *d, const cJSON *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error_at(struct tg_simdata *d, const cJSON *at, const char *fmt, ...)
{
    d->warnings++;
    d->errors++;
    if (d->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: error: ", d->origin, tg_yaml_line(d->lines, at));
    vfprintf(stderr, fmt, ap);
    fputs(" (object skipped)\n", stderr);
    va_end(ap);
}

/* ---- durations ------------------------------------------------------------------ */

int tg_parse_duration_ms(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return TG_EPARSE;
    char *end;
    double v = strtod(s, &end);
    if (!*end && end != s && isdigit((unsigned char)s[0])) { /* plain seconds */
        if (!(v >= 0 && v <= 1e10))
            return TG_EPARSE;
        *ms = (int64_t)llround(v * 1000);
        return 0;
    }
    /* Go: [0-9.]+(h|m|s|ms|us|ns), repeated */
    double total = 0;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p) && *p != '.')
            return TG_EPARSE;
        v = strtod(p, &end);
        if (end == p || !(v >= 0))
            return TG_EPARSE;
        p = end;
        double unit;
        if (!strncmp(p, "ms", 2)) unit = 1, p += 2;
        else if (!strncmp(p, "us", 2)) unit = 1e-3, p += 2;
        else if (!strncmp(p, "ns", 2)) unit = 1e-6, p += 2;
        else if (*p == 'h') unit = 3600e3, p++;
        else if (*p == 'm') unit = 60e3, p++;
        else if (*p == 's') unit = 1e3, p++;
        else return TG_EPARSE;
        total += v * unit;
    }
    if (!(total <= 1e13))
        return TG_EPARSE;
    *ms = (int64_t)llround(total);
    return 0;
}

/* ---- objects ------------------------------------------------------------------------ */

static int add_pod(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_pod *p;
    int rc = tg_pod_decode(obj, TG_DECODE_SPEC, &d->diag, &p);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    if (p->spec)
        p->spec->store = &d->store;
    int64_t dur = -1;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *an = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(an, TG_SIM_DURATION_ANNOTATION);
    if (ds) {
        const char *txt = cJSON_IsString(ds) ? ds->valuestring
                          : cJSON_IsNumber(ds) ? ds->valuestring : NULL;
        if (!txt || tg_parse_duration_ms(txt, &dur)) {
            error_at(d, ds, "Pod %s: metadata.annotations[%s]: malformed duration \"%s\" (seconds, or "
                            "a Go duration such as 2h30m)",
                     p->key, TG_SIM_DURATION_ANNOTATION, txt ? txt : "(not a string)");
            tg_pod_free(&p);
            return 0;
        }
    }
    uint64_t idx;
    if (tg_hmap_get(&d->pod_idx, p->key, strlen(p->key), &idx)) {
        warn_at(d, obj, "Pod %s appears twice; the later one is used", p->key);
        struct tg_simpod *sp = &d->pods[idx];
        tg_hmap_del(&d->pod_idx, sp->pod->key, strlen(sp->pod->key));
        tg_pod_free(&sp->pod);
        sp->pod = p;
        sp->duration_ms = dur;
        return tg_hmap_put(&d->pod_idx, p->key, strlen(p->key), idx);
    }
    if ((rc = tg_grow((void **)&d->pods, &d->cappods, d->npods, sizeof *d->pods))) {
        tg_pod_free(&p);
        return rc;
    }
    d->pods[d->npods] = (struct tg_simpod){p, dur, d->npods};
    d->npods++;
    return tg_hmap_put(&d->pod_idx, p->key, strlen(p->key), d->npods - 1);
}

/* Keeps obj (an object with a "ns/name" key) in the list v; a second one
 * of the same key replaces the first, with a warning. Frees obj on failure. */
static int keep_last(struct tg_simdata *d, const cJSON *at, const char *kind, const char *key,
                     void *obj, void ***v, uint32_t *n, uint32_t *cap, struct tg_hmap *idx,
                     void (*fr)(void *))
{
    uint64_t i;
    if (!key) /* never: decoders always name the object; keeps the compiler sure of it */
        key = "";
    if (tg_hmap_get(idx, key, strlen(key), &i)) {
        warn_at(d, at, "%s %s appears twice; the later one is used", kind, key);
        tg_hmap_del(idx, key, strlen(key));
        fr((*v)[i]);
        (*v)[i] = obj;
        return tg_hmap_put(idx, key, strlen(key), i);
    }
    if (tg_grow((void **)v, cap, *n, sizeof **v)) {
        fr(obj);
        return TG_ENOMEM;
    }
    (*v)[(*n)++] = obj;
    return tg_hmap_put(idx, key, strlen(key), *n - 1);
}

static void pg_free(void *o)
{
    struct tg_podgroup *g = o;
    tg_podgroup_free(&g);
}

static void pdb_free(void *o)
{
    struct tg_pdb *b = o;
    tg_pdb_free(&b);
}

static int add_group(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_podgroup *g;
    int rc = tg_podgroup_decode(obj, &d->diag, &g);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    return keep_last(d, obj, "PodGroup", g->key, g, (void ***)&d->pgs, &d->npgs, &d->cappgs,
                     &d->pg_idx, pg_free);
}

static int add_pdb(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_pdb *b;
    int rc = tg_pdb_decode(obj, &d->diag, &b);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    return keep_last(d, obj, "PodDisruptionBudget", b->key, b, (void ***)&d->pdbs, &d->npdbs,
                     &d->cappdbs, &d->pdb_idx, pdb_free);
}

static int add_prio_class(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_prioclass *pc;
    int rc = tg_prioclass_decode(obj, &d->diag, &pc);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    struct tg_simpclass c = {tg_intern(pc->name), {pc->value, pc->never, pc->global_default}};
    tg_prioclass_free(&pc);
    for (uint32_t i = 0; i < d->npcs; i++)
        if (d->pcs[i].name == c.name) {
            d->pcs[i] = c;
            return 0;
        }
    rc = tg_grow((void **)&d->pcs, &d->cappcs, d->npcs, sizeof *d->pcs);
    if (!rc)
        d->pcs[d->npcs++] = c;
    return rc;
}

static int add_node(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_node_obj *n;
    int rc = tg_node_decode(obj, &d->diag, &n);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    uint64_t idx;
    if (tg_imap_get(&d->node_idx, n->name, &idx)) {
        warn_at(d, obj, "Node %s appears twice; the later one is used", tg_str(n->name));
        tg_node_free(&d->nodes[idx]);
        d->nodes[idx] = n;
        return 0;
    }
    if ((rc = tg_grow((void **)&d->nodes, &d->capnodes, d->nnodes, sizeof *d->nodes))) {
        tg_node_free(&n);
        return rc;
    }
    d->nodes[d->nnodes++] = n;
    return tg_imap_put(&d->node_idx, n->name, d->nnodes - 1);
}

/* Namespace, PersistentVolume, PersistentVolumeClaim, StorageClass,
 * ResourceClaim: into the store (a later one of the same name replaces). */
static int add_stored(struct tg_simdata *d, const cJSON *obj, const char *k)
{
    void *o = NULL;
    int rc;
    if (!strcmp(k, "Namespace"))
        rc = tg_namespace_decode(obj, &d->diag, (struct tg_namespace **)&o);
    else if (!strcmp(k, "PersistentVolume"))
        rc = tg_pv_decode(obj, &d->diag, (struct tg_pv **)&o);
    else if (!strcmp(k, "PersistentVolumeClaim"))
        rc = tg_pvc_decode(obj, &d->diag, (struct tg_pvc **)&o);
    else if (!strcmp(k, "StorageClass"))
        rc = tg_sc_decode(obj, &d->diag, (struct tg_storageclass **)&o);
    else
        rc = tg_rclaim_decode(obj, &d->diag, (struct tg_rclaim **)&o);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    if (!strcmp(k, "Namespace"))
        return tg_objstore_namespace_set(&d->store, o);
    if (!strcmp(k, "PersistentVolume"))
        return tg_objstore_pv_set(&d->store, o);
    if (!strcmp(k, "PersistentVolumeClaim"))
        return tg_objstore_pvc_set(&d->store, o);
    if (!strcmp(k, "StorageClass"))
        return tg_objstore_sc_set(&d->store, o);
    return tg_objstore_claim_set(&d->store, o);
}

/* A peer's PodGroup (model/workload.h): scheduling.k8s.io, scheduling.x-k8s.io,
 * scheduling.volcano.sh, scheduling.run.ai. */
static int add_peer_group(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_podgroup *g;
    int rc = tg_podgroup_decode_any(obj, &d->diag, &g);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    return keep_last(d, obj, "PodGroup", g->key, g, (void ***)&d->pgs, &d->npgs, &d->cappgs,
                     &d->pg_idx, pg_free);
}

static void wl_free(void *o)
{
    struct tg_workload *w = o;
    tg_workload_free(&w);
}

/* Job, JobSet, LeaderWorkerSet, PyTorchJob, MPIJob, TrainJob. */
static int add_workload(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_workload *w;
    int rc = tg_workload_decode(obj, &d->diag, &w);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    d->wl_kinds |= 1u << w->kind;
    if (w->kind == TG_WL_TRAINJOB) /* its pods are its JobSet's */
        d->wl_kinds |= 1u << TG_WL_JOBSET;
    return keep_last(d, obj, w->kind == TG_WL_JOB ? "Job" : tg_wl_kinds[w->kind].kind, w->key, w,
                     (void ***)&d->wls, &d->nwls, &d->capwls, &d->wl_idx, wl_free);
}

static void queue_free(void *o)
{
    struct tg_queue_obj *q = o;
    tg_queue_obj_free(&q);
}

/* A tenant Queue of any of the three APIs (model/queues.h). */
static int add_queue(struct tg_simdata *d, const cJSON *obj)
{
    struct tg_queue_obj *q;
    int rc = tg_queue_obj_decode(obj, &d->diag, &q);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        d->warnings++;
        return 0;
    }
    return keep_last(d, obj, "Queue", tg_str(q->name), q, (void ***)&d->queues, &d->nqueues,
                     &d->capqueues, &d->queue_idx, queue_free);
}

static int add_object(struct tg_simdata *d, const cJSON *obj);

static int add_list(struct tg_simdata *d, const cJSON *obj)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(obj, "items");
    if (!cJSON_IsArray(items)) {
        warn_at(d, obj, "List without an items list (skipped)");
        return 0;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        int rc = add_object(d, it);
        if (rc)
            return rc;
    }
    return 0;
}

static int add_object(struct tg_simdata *d, const cJSON *obj)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *api = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    if (!cJSON_IsObject(obj) || !cJSON_IsString(kind)) {
        warn_at(d, obj, "object without a kind (skipped)");
        return 0;
    }
    const char *k = kind->valuestring;
    size_t kl = strlen(k);
    if (!strcmp(k, "List") || (kl > 4 && !strcmp(k + kl - 4, "List")))
        return add_list(d, obj);
    if (!strcmp(k, "Node"))
        return add_node(d, obj);
    if (!strcmp(k, "Pod"))
        return add_pod(d, obj);
    if (!strcmp(k, "PodGroup") && tg_pg_api_of(cJSON_IsString(api) ? api->valuestring : NULL) > 0)
        return add_peer_group(d, obj);
    if (tg_wl_kind_of(k))
        return add_workload(d, obj);
    if (!strcmp(k, "PodGroup")) {
        const char *av = cJSON_IsString(api) ? api->valuestring : "";
        if (strncmp(av, "topogang.io/", 12) && strncmp(av, "scheduling.x-k8s.io/", 20)) {
            warn_at(d, obj, "PodGroup with apiVersion \"%s\": expected topogang.io/v1alpha1 "
                            "(skipped)", av);
            return 0;
        }
        return add_group(d, obj);
    }
    if (!strcmp(k, "PriorityClass"))
        return add_prio_class(d, obj);
    if (!strcmp(k, "PodDisruptionBudget"))
        return add_pdb(d, obj);
    if (!strcmp(k, "Queue"))
        return add_queue(d, obj);
    static const char *const stored[] = {"Namespace", "PersistentVolume", "PersistentVolumeClaim",
                                         "StorageClass", "ResourceClaim"};
    for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++)
        if (!strcmp(k, stored[i]))
            return add_stored(d, obj, k);
    static const char *const ignored[] = {"ConfigMap", "Job", "Deployment", "StatefulSet",
                                          "Service", "CustomResourceDefinition",
                                          "ResourceClaimTemplate", "DeviceClass", "ResourceSlice"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        if (!strcmp(k, ignored[i]))
            return 0;
    warn_at(d, obj, "unknown kind \"%s\" (skipped; simulate reads Node, Pod, PodGroup, "
                    "PriorityClass, PodDisruptionBudget, Namespace, PersistentVolume, "
                    "PersistentVolumeClaim, StorageClass, ResourceClaim, Queue, List)", k);
    return 0;
}

static int on_doc(void *ud, cJSON *root, const struct tg_yaml_lines *lines)
{
    struct tg_simdata *d = ud;
    d->lines = lines;
    int rc = add_object(d, root);
    cJSON_Delete(root);
    d->lines = NULL;
    return rc ? 1 : 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Pods read before the Nodes that offer their resources (model/objects.h
 * tg_pod_resolve): their requests are complete once those Nodes are read. */
static int resolve_pods(struct tg_simdata *d)
{
    for (uint32_t i = 0; i < d->npods; i++)
        if (d->pods[i].pod->nunoffered && tg_pod_resolve(d->pods[i].pod) == TG_ENOMEM)
            return TG_ENOMEM;
    return 0;
}

int tg_simdata_load_string(struct tg_simdata *d, const char *yaml, size_t n, const char *origin,
                           struct tg_sb *err)
{
    double t0 = now_ms();
    d->origin = origin;
    int before = d->diag.nerrors;
    int rc = tg_yaml_parse(yaml, n, origin, on_doc, d, err);
    if (!rc)
        rc = resolve_pods(d);
    d->errors += (uint32_t)(d->diag.nerrors - before);
    d->load_ms += now_ms() - t0;
    return rc;
}

static int load_file(struct tg_simdata *d, const char *path, struct tg_sb *err)
{
    char *buf;
    size_t len;
    int rc = tg_read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    rc = tg_simdata_load_string(d, buf, len, path, err);
    free(buf);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(struct tg_simdata *d, const char *dir, struct tg_sb *err)
{
    DIR *dh = opendir(dir);
    if (!dh) {
        tg_sb_printf(err, "%s: cannot open directory", dir);
        return TG_EIO;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(dh))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || !((l > 5 && !strcmp(e->d_name + l - 5, ".yaml")) ||
                                     (l > 4 && !strcmp(e->d_name + l - 4, ".yml"))))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                rc = TG_ENOMEM;
                break;
            }
            names = nn;
        }
        if (asprintf(&names[n], "%s/%s", dir, e->d_name) < 0) {
            rc = TG_ENOMEM;
            break;
        }
        n++;
    }
    closedir(dh);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            rc = tg_simdata_load_path(d, names[i], err);
        free(names[i]);
    }
    free(names);
    return rc;
}

int tg_simdata_load_path(struct tg_simdata *d, const char *path, struct tg_sb *err)
{
    struct stat st;
    if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return load_dir(d, path, err);
    return load_file(d, path, err);
}
