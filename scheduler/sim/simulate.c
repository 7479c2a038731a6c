/* `topogang simulate`: read Kubernetes YAML, place every pending topogang
 * pod with the scheduling core, print a table or JSON. See simulate.h. */
#include "scheduler/sim/simulate.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/hmap.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/yamljson.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct gang_rec {
    struct tg_gang g;
    struct tg_result r;
    char key[320];
    int grouped;
};

struct vec {
    void **v;
    uint32_t n, cap;
};

struct tg_sim {
    struct tg_sched sched;
    int quiet;
    struct vec pending;                 /* struct tg_pod *, pending topogang pods */
    struct tg_hmap pending_idx;         /* key -> index + 1 */
    struct vec grouped_bound;           /* struct tg_pod *, bound pods with a group label */
    struct vec groups;                  /* struct tg_podgroup * */
    struct tg_hmap group_idx;           /* key -> index */
    struct tg_imap prio_class;          /* interned name -> value + 2^32 */
    struct gang_rec *gangs;
    uint32_t ngangs;
    struct tg_sim_summary sum;
    /* loading context */
    const char *origin;
    const struct tg_yaml_lines *lines;
    struct tg_diag diag;
};

static int vpush(struct vec *v, void *p)
{
    if (v->n == v->cap) {
        uint32_t nc = v->cap ? v->cap * 2 : 64;
        void **nv = realloc(v->v, nc * sizeof *nv);
        if (!nv)
            return TG_ENOMEM;
        v->v = nv;
        v->cap = nc;
    }
    v->v[v->n++] = p;
    return 0;
}

static void report(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                   const char *msg)
{
    struct tg_sim *sim = ud;
    if (sim->quiet)
        return;
    fprintf(stderr, "%s:%d: %s: %s%s%s: %s%s\n", sim->origin, tg_yaml_line(sim->lines, at),
            is_error ? "error" : "warning", what, *field ? ": " : "", field, msg,
            is_error ? " (object skipped)" : "");
}

struct tg_sim *tg_sim_new(const struct tg_policy *p)
{
    struct tg_sim *sim = calloc(1, sizeof *sim);
    if (!sim)
        return NULL;
    if (tg_sched_init(&sim->sched, p)) {
        free(sim);
        return NULL;
    }
    sim->diag.report = report;
    sim->diag.ud = sim;
    return sim;
}

void tg_sim_quiet(struct tg_sim *sim, int quiet) { sim->quiet = quiet; }
struct tg_sched *tg_sim_sched(struct tg_sim *sim) { return &sim->sched; }
const struct tg_sim_summary *tg_sim_summary(const struct tg_sim *sim) { return &sim->sum; }

void tg_sim_free(struct tg_sim **psim)
{
    struct tg_sim *sim = *psim;
    if (!sim)
        return;
    for (uint32_t i = 0; i < sim->pending.n; i++)
        tg_pod_free((struct tg_pod **)&sim->pending.v[i]);
    for (uint32_t i = 0; i < sim->grouped_bound.n; i++)
        tg_pod_free((struct tg_pod **)&sim->grouped_bound.v[i]);
    for (uint32_t i = 0; i < sim->groups.n; i++)
        tg_podgroup_free((struct tg_podgroup **)&sim->groups.v[i]);
    free(sim->pending.v);
    free(sim->grouped_bound.v);
    free(sim->groups.v);
    tg_hmap_free(&sim->pending_idx);
    tg_hmap_free(&sim->group_idx);
    tg_imap_free(&sim->prio_class);
    for (uint32_t i = 0; i < sim->ngangs; i++) {
        tg_result_free(&sim->gangs[i].r);
        free(sim->gangs[i].g.pods);
    }
    free(sim->gangs);
    tg_sched_free(&sim->sched);
    free(sim);
    *psim = NULL;
}

static void warn_at(struct tg_sim *sim, const cJSON *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn_at(struct tg_sim *sim, const cJSON *at, const char *fmt, ...)
{
    sim->sum.warnings++;
    if (sim->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: warning: ", sim->origin, tg_yaml_line(sim->lines, at));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int add_pod(struct tg_sim *sim, const cJSON *obj)
{
    struct tg_pod *p;
    int rc = tg_pod_decode(obj, TG_DECODE_SPEC, &sim->diag, &p);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        sim->sum.warnings++;
        return 0;
    }
    int ours = p->sched == tg_intern(sim->sched.policy.scheduler_name);
    if (p->node) {
        rc = tg_cluster_pod_update(&sim->sched.cluster, p);
        sim->sum.bound_pods += !tg_pod_terminal(p);
        if (!rc && p->group && !tg_pod_terminal(p))
            return vpush(&sim->grouped_bound, p);
        tg_pod_free(&p);
        return rc;
    }
    if (!ours || tg_pod_terminal(p)) {
        tg_pod_free(&p); /* another scheduler's pending pod: not ours to place */
        return 0;
    }
    uint64_t idx;
    if (tg_hmap_get(&sim->pending_idx, p->key, strlen(p->key), &idx)) {
        warn_at(sim, obj, "Pod %s appears twice; the later one is used", p->key);
        struct tg_pod **slot = (struct tg_pod **)&sim->pending.v[idx - 1];
        tg_hmap_del(&sim->pending_idx, (*slot)->key, strlen((*slot)->key));
        tg_pod_free(slot);
        *slot = p;
        return tg_hmap_put(&sim->pending_idx, p->key, strlen(p->key), idx);
    }
    if ((rc = vpush(&sim->pending, p))) {
        tg_pod_free(&p);
        return rc;
    }
    return tg_hmap_put(&sim->pending_idx, p->key, strlen(p->key), sim->pending.n);
}

static int add_group(struct tg_sim *sim, const cJSON *obj)
{
    struct tg_podgroup *g;
    int rc = tg_podgroup_decode(obj, &sim->diag, &g);
    if (rc == TG_ENOMEM)
        return rc;
    if (rc) {
        sim->sum.warnings++;
        return 0;
    }
    uint64_t idx;
    if (tg_hmap_get(&sim->group_idx, g->key, strlen(g->key), &idx)) {
        warn_at(sim, obj, "PodGroup %s appears twice; the later one is used", g->key);
        struct tg_podgroup **slot = (struct tg_podgroup **)&sim->groups.v[idx];
        tg_hmap_del(&sim->group_idx, (*slot)->key, strlen((*slot)->key));
        tg_podgroup_free(slot);
        *slot = g;
        return tg_hmap_put(&sim->group_idx, g->key, strlen(g->key), idx);
    }
    if ((rc = vpush(&sim->groups, g))) {
        tg_podgroup_free(&g);
        return rc;
    }
    return tg_hmap_put(&sim->group_idx, g->key, strlen(g->key), sim->groups.n - 1);
}

static int add_prio_class(struct tg_sim *sim, const cJSON *obj)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(obj, "value");
    if (!cJSON_IsString(name) || !cJSON_IsNumber(val) || val->valuedouble != (int32_t)val->valuedouble) {
        warn_at(sim, obj, "PriorityClass needs metadata.name and an integer value (skipped)");
        return 0;
    }
    return tg_imap_put(&sim->prio_class, tg_intern(name->valuestring),
                       (uint64_t)(uint32_t)(int32_t)val->valuedouble | 1ull << 32);
}

static int add_object(struct tg_sim *sim, const cJSON *obj);

static int add_list(struct tg_sim *sim, const cJSON *obj)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(obj, "items");
    if (!cJSON_IsArray(items)) {
        warn_at(sim, obj, "List without an items list (skipped)");
        return 0;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        int rc = add_object(sim, it);
        if (rc)
            return rc;
    }
    return 0;
}

static int add_object(struct tg_sim *sim, const cJSON *obj)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *api = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    if (!cJSON_IsObject(obj) || !cJSON_IsString(kind)) {
        warn_at(sim, obj, "object without a kind (skipped)");
        return 0;
    }
    const char *k = kind->valuestring;
    if (!strcmp(k, "List") || !strcmp(k, "NodeList") || !strcmp(k, "PodList") ||
        !strcmp(k, "PodGroupList"))
        return add_list(sim, obj);
    if (!strcmp(k, "Node")) {
        struct tg_node_obj *n;
        int rc = tg_node_decode(obj, &sim->diag, &n);
        if (rc == TG_ENOMEM)
            return rc;
        if (rc) {
            sim->sum.warnings++;
            return 0;
        }
        if (tg_cluster_slot(&sim->sched.cluster, n->name, 0) != TG_NONE &&
            sim->sched.cluster.nodes[tg_cluster_slot(&sim->sched.cluster, n->name, 0)].obj)
            warn_at(sim, obj, "Node %s appears twice; the later one is used", tg_str(n->name));
        return tg_cluster_node_set(&sim->sched.cluster, n);
    }
    if (!strcmp(k, "Pod"))
        return add_pod(sim, obj);
    if (!strcmp(k, "PodGroup")) {
        const char *av = cJSON_IsString(api) ? api->valuestring : "";
        if (strncmp(av, "topogang.io/", 12) && strncmp(av, "scheduling.x-k8s.io/", 20)) {
            warn_at(sim, obj, "PodGroup with apiVersion \"%s\": expected topogang.io/v1alpha1 "
                              "(skipped)", av);
            return 0;
        }
        return add_group(sim, obj);
    }
    if (!strcmp(k, "PriorityClass"))
        return add_prio_class(sim, obj);
    static const char *const ignored[] = {"Namespace", "ConfigMap", "Job", "Deployment",
                                          "StatefulSet", "Service", "CustomResourceDefinition"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        if (!strcmp(k, ignored[i]))
            return 0;
    warn_at(sim, obj, "unknown kind \"%s\" (skipped; simulate reads Node, Pod, PodGroup, "
                      "PriorityClass, List)", k);
    return 0;
}

static int on_doc(void *ud, cJSON *root, const struct tg_yaml_lines *lines)
{
    struct tg_sim *sim = ud;
    sim->lines = lines;
    int rc = add_object(sim, root);
    cJSON_Delete(root);
    sim->lines = NULL;
    return rc ? 1 : 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int tg_sim_load_string(struct tg_sim *sim, const char *yaml, size_t n, const char *origin,
                       struct tg_sb *err)
{
    double t0 = now_ms();
    sim->origin = origin;
    int before = sim->diag.nerrors;
    int rc = tg_yaml_parse(yaml, n, origin, on_doc, sim, err);
    sim->sum.errors += (uint32_t)(sim->diag.nerrors - before);
    sim->sum.load_ms += now_ms() - t0;
    return rc;
}

int tg_sim_load_file(struct tg_sim *sim, const char *path, struct tg_sb *err)
{
    char *buf;
    size_t len;
    int rc = tg_read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    rc = tg_sim_load_string(sim, buf, len, path, err);
    free(buf);
    return rc;
}

/* ---- gangs -------------------------------------------------------------- */

static int32_t class_value(const struct tg_sim *sim, uint32_t name, int *found)
{
    uint64_t v;
    *found = name && tg_imap_get(&sim->prio_class, name, &v);
    return *found ? (int32_t)(uint32_t)v : 0;
}

static int32_t pod_priority(const struct tg_sim *sim, const struct tg_pod *p)
{
    int found;
    if (p->has_priority)
        return p->priority;
    int32_t v = class_value(sim, p->prio_class, &found);
    return found ? v : 0;
}

static int gang_key_cmp(const void *a, const void *b)
{
    const struct gang_rec *x = a, *y = b;
    return tg_gang_cmp(&x->g, &y->g);
}

static int build_gangs(struct tg_sim *sim)
{
    uint32_t n = sim->pending.n;
    sim->gangs = calloc(n + 1, sizeof *sim->gangs);
    uint32_t *gang_of = calloc(n + 1, sizeof *gang_of);
    struct tg_hmap idx = {0};
    int rc = TG_ENOMEM;
    if (!sim->gangs || !gang_of)
        goto out;
    /* One gang per (namespace, group label); a pod without a group is a gang of one. */
    for (uint32_t i = 0; i < n; i++) {
        struct tg_pod *p = sim->pending.v[i];
        char key[320];
        if (p->group)
            snprintf(key, sizeof key, "%s/%s", tg_str(p->ns), tg_str(p->group));
        else
            snprintf(key, sizeof key, "%s", p->key);
        uint64_t gi;
        if (!p->group || !tg_hmap_get(&idx, key, strlen(key), &gi)) {
            gi = sim->ngangs++;
            struct gang_rec *gr = &sim->gangs[gi];
            snprintf(gr->key, sizeof gr->key, "%s", key);
            gr->grouped = p->group != 0;
            gr->g.name = gr->key;
            gr->g.anchor = TG_NONE;
            gr->g.within = TG_NONE;
            gr->g.created_ms = INT64_MAX;
            gr->g.priority = INT32_MIN;
            if (p->group && tg_hmap_put(&idx, gr->key, strlen(gr->key), gi))
                goto out;
        }
        gang_of[i] = (uint32_t)gi;
        sim->gangs[gi].g.npods++;
    }
    for (uint32_t i = 0; i < sim->ngangs; i++) {
        sim->gangs[i].g.pods = malloc((sim->gangs[i].g.npods + 1) * sizeof(struct tg_pod *));
        if (!sim->gangs[i].g.pods)
            goto out;
        sim->gangs[i].g.npods = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct gang_rec *gr = &sim->gangs[gang_of[i]];
        struct tg_pod *p = sim->pending.v[i];
        gr->g.pods[gr->g.npods++] = p;
        int32_t pr = pod_priority(sim, p);
        if (pr > gr->g.priority)
            gr->g.priority = pr;
        int64_t created = p->created_ms ? p->created_ms : 0;
        if (created < gr->g.created_ms)
            gr->g.created_ms = created;
    }
    /* Bound members count toward minMember and anchor the domain. */
    for (uint32_t i = 0; i < sim->grouped_bound.n; i++) {
        struct tg_pod *p = sim->grouped_bound.v[i];
        char key[320];
        snprintf(key, sizeof key, "%s/%s", tg_str(p->ns), tg_str(p->group));
        uint64_t gi;
        if (!tg_hmap_get(&idx, key, strlen(key), &gi))
            continue;
        struct gang_rec *gr = &sim->gangs[gi];
        gr->g.nbound++;
        if (gr->g.anchor == TG_NONE)
            gr->g.anchor = tg_cluster_slot(&sim->sched.cluster, p->node, 0);
    }
    for (uint32_t i = 0; i < sim->ngangs; i++) {
        struct gang_rec *gr = &sim->gangs[i];
        if (!gr->grouped)
            continue;
        uint64_t pgi;
        if (!tg_hmap_get(&sim->group_idx, gr->key, strlen(gr->key), &pgi))
            continue;
        const struct tg_podgroup *pg = sim->groups.v[pgi];
        gr->g.pg = pg;
        int found;
        int32_t cv = class_value(sim, pg->prio_class, &found);
        if (pg->has_priority)
            gr->g.priority = pg->priority;
        else if (found)
            gr->g.priority = cv;
        if (pg->created_ms)
            gr->g.created_ms = pg->created_ms;
    }
    qsort(sim->gangs, sim->ngangs, sizeof *sim->gangs, gang_key_cmp);
    for (uint32_t i = 0; i < sim->ngangs; i++)
        sim->gangs[i].g.name = sim->gangs[i].key; /* qsort moved the records */
    rc = 0;
out:
    free(gang_of);
    tg_hmap_free(&idx);
    return rc;
}

int tg_sim_run(struct tg_sim *sim)
{
    double t0 = now_ms();
    int rc = build_gangs(sim);
    if (rc)
        return rc;
    struct tg_sim_summary *s = &sim->sum;
    s->nodes = sim->sched.cluster.nready;
    s->gangs = sim->ngangs;
    for (uint32_t i = 0; i < sim->ngangs; i++) {
        struct gang_rec *gr = &sim->gangs[i];
        struct tg_gang *g = &gr->g;
        uint32_t min = g->pg ? (uint32_t)g->pg->min_member : 1;
        if (gr->grouped && !g->pg) {
            gr->r.slot = malloc((g->npods + 1) * sizeof *gr->r.slot);
            if (!gr->r.slot)
                return TG_ENOMEM;
            for (uint32_t k = 0; k < g->npods; k++)
                gr->r.slot[k] = TG_NONE;
            gr->r.status = TG_GANG_INVALID;
            snprintf(gr->r.reason, sizeof gr->r.reason,
                     "PodGroup %s does not exist (pods labelled %s=%s wait for it)", gr->key,
                     TG_LABEL_POD_GROUP, strchr(gr->key, '/') + 1);
        } else if (g->npods + g->nbound < min) {
            gr->r.slot = malloc((g->npods + 1) * sizeof *gr->r.slot);
            if (!gr->r.slot)
                return TG_ENOMEM;
            for (uint32_t k = 0; k < g->npods; k++)
                gr->r.slot[k] = TG_NONE;
            gr->r.status = TG_GANG_UNSCHEDULABLE;
            snprintf(gr->r.reason, sizeof gr->r.reason,
                     "waiting for members: %u pending + %u bound < minMember %u", g->npods,
                     g->nbound, min);
        } else if ((rc = tg_sched_gang(&sim->sched, g, &gr->r))) {
            return rc;
        }
        s->scheduled += gr->r.status == TG_GANG_SCHEDULED;
        s->unschedulable += gr->r.status == TG_GANG_UNSCHEDULABLE;
        s->invalid += gr->r.status == TG_GANG_INVALID;
        s->pods_placed += gr->r.status == TG_GANG_SCHEDULED ? gr->r.nplaced : 0;
        s->pods_pending += g->npods - (gr->r.status == TG_GANG_SCHEDULED ? gr->r.nplaced : 0);
    }
    s->schedule_ms = now_ms() - t0;
    return 0;
}

/* ---- output ------------------------------------------------------------- */

static const char *status_name(uint8_t st)
{
    return st == TG_GANG_SCHEDULED ? "Scheduled" : "Unschedulable";
}

static const char *level_name(const struct tg_sim *sim, const struct gang_rec *gr)
{
    if (gr->r.status != TG_GANG_SCHEDULED)
        return NULL;
    return gr->r.level ? sim->sched.policy.levels[gr->r.level - 1].name : "cluster";
}

void tg_sim_json(const struct tg_sim *sim, struct tg_sb *o)
{
    const struct tg_cluster *c = &sim->sched.cluster;
    tg_sb_puts(o, "{\"gangs\":[");
    for (uint32_t i = 0; i < sim->ngangs; i++) {
        const struct gang_rec *gr = &sim->gangs[i];
        tg_sb_puts(o, i ? ",\n{" : "\n{");
        tg_sb_puts(o, "\"podGroup\":");
        if (gr->grouped)
            tg_sb_json_str(o, gr->key);
        else
            tg_sb_puts(o, "null");
        tg_sb_puts(o, ",\"status\":");
        tg_sb_json_str(o, status_name(gr->r.status));
        tg_sb_printf(o, ",\"priority\":%d,\"minMember\":%d", gr->g.priority,
                     gr->g.pg ? gr->g.pg->min_member : 1);
        const char *lvl = level_name(sim, gr);
        tg_sb_puts(o, ",\"level\":");
        if (lvl)
            tg_sb_json_str(o, lvl);
        else
            tg_sb_puts(o, "null");
        tg_sb_puts(o, ",\"domain\":");
        if (gr->r.status == TG_GANG_SCHEDULED) {
            char path[512];
            tg_sb_json_str(o, tg_tree_path(&c->tree, gr->r.domain, path, sizeof path));
        } else {
            tg_sb_puts(o, "null");
        }
        tg_sb_puts(o, ",\"reason\":");
        tg_sb_json_str(o, gr->r.reason);
        tg_sb_puts(o, ",\"pods\":[");
        for (uint32_t k = 0; k < gr->g.npods; k++) {
            tg_sb_puts(o, k ? ",{\"pod\":" : "{\"pod\":");
            tg_sb_json_str(o, gr->g.pods[k]->key);
            tg_sb_puts(o, ",\"node\":");
            uint32_t slot = gr->r.slot ? gr->r.slot[k] : TG_NONE;
            if (slot != TG_NONE && gr->r.status == TG_GANG_SCHEDULED)
                tg_sb_json_str(o, tg_str(c->nodes[slot].name));
            else
                tg_sb_puts(o, "null");
            tg_sb_putc(o, '}');
        }
        tg_sb_puts(o, "]}");
    }
    const struct tg_sim_summary *s = &sim->sum;
    tg_sb_printf(o, "\n],\"summary\":{\"nodes\":%u,\"boundPods\":%u,\"gangs\":%u,\"scheduled\":%u,"
                    "\"unschedulable\":%u,\"podsPlaced\":%u,\"podsPending\":%u,"
                    "\"skippedObjects\":%u,\"loadMs\":%.1f,\"scheduleMs\":%.1f}}\n",
                 s->nodes, s->bound_pods, s->gangs, s->scheduled, s->unschedulable + s->invalid,
                 s->pods_placed, s->pods_pending, s->warnings, s->load_ms, s->schedule_ms);
}

void tg_sim_table(const struct tg_sim *sim, int show_pods, struct tg_sb *o)
{
    const struct tg_cluster *c = &sim->sched.cluster;
    int wname = 5, wdom = 6;
    char path[512];
    for (uint32_t i = 0; i < sim->ngangs; i++) {
        const struct gang_rec *gr = &sim->gangs[i];
        int l = (int)strlen(gr->key) + (gr->grouped ? 0 : 2);
        if (l > wname)
            wname = l;
        if (gr->r.status == TG_GANG_SCHEDULED) {
            l = (int)strlen(tg_tree_path(&c->tree, gr->r.domain, path, sizeof path));
            if (l > wdom)
                wdom = l;
        }
    }
    if (wname > 48)
        wname = 48;
    if (wdom > 40)
        wdom = 40;
    tg_sb_printf(o, "%-*s  %-8s  %-13s  %-13s  %-*s  %s\n", wname, "GANG", "PLACED", "STATUS",
                 "LEVEL", wdom, "DOMAIN", "REASON");
    for (uint32_t i = 0; i < sim->ngangs; i++) {
        const struct gang_rec *gr = &sim->gangs[i];
        char name[340], placed[32];
        snprintf(name, sizeof name, gr->grouped ? "%s" : "(%s)", gr->key);
        uint32_t np = gr->r.status == TG_GANG_SCHEDULED ? gr->r.nplaced : 0;
        snprintf(placed, sizeof placed, "%u/%u", np, gr->g.npods);
        const char *lvl = level_name(sim, gr);
        const char *dom = gr->r.status == TG_GANG_SCHEDULED
                              ? tg_tree_path(&c->tree, gr->r.domain, path, sizeof path)
                              : "-";
        tg_sb_printf(o, "%-*s  %-8s  %-13s  %-13s  %-*s  %s\n", wname, name, placed,
                     status_name(gr->r.status), lvl ? lvl : "-", wdom, *dom ? dom : "(all)",
                     gr->r.reason[0] ? gr->r.reason : "-");
        for (uint32_t k = 0; show_pods && k < gr->g.npods; k++) {
            uint32_t slot = gr->r.slot ? gr->r.slot[k] : TG_NONE;
            tg_sb_printf(o, "    %-40s -> %s\n", gr->g.pods[k]->key,
                         slot != TG_NONE && gr->r.status == TG_GANG_SCHEDULED
                             ? tg_str(c->nodes[slot].name)
                             : "(pending)");
        }
    }
    const struct tg_sim_summary *s = &sim->sum;
    tg_sb_printf(o, "\n%u gangs: %u scheduled, %u unschedulable; %u pods placed, %u pending; "
                    "%u nodes, %u bound pods; %u objects skipped\n",
                 s->gangs, s->scheduled, s->unschedulable + s->invalid, s->pods_placed,
                 s->pods_pending, s->nodes, s->bound_pods, s->warnings);
}

/* ---- the command -------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: topogang simulate -f FILE [-f FILE...] [--config POLICY] [-o table|json]\n"
        "\n"
        "Places pending pods (spec.schedulerName: topogang) from Kubernetes YAML, offline,\n"
        "with the same scheduling code as the daemon. Input: multi-document YAML or\n"
        "kind: List of Nodes, Pods, PodGroups (topogang.io/v1alpha1), PriorityClasses.\n"
        "Pods with spec.nodeName count as usage; pending pods are placed in queue order\n"
        "(priority, then creation time), gang by gang, all or nothing.\n"
        "\n"
        "options:\n"
        "  -f, --filename FILE   input file or directory of *.yaml (repeatable; - is stdin)\n"
        "  -c, --config POLICY   policy YAML (the ConfigMap's config.yaml); default policy otherwise\n"
        "  -o, --output FORMAT   table (default) or json\n"
        "      --show-pods       table: list each pod and its node under its gang\n"
        "      --print-config    print the effective policy and exit\n"
        "  -q, --quiet           do not print warnings about skipped objects\n"
        "  -h, --help            this text\n"
        "\n"
        "exit status: 0 when every file was read (unschedulable gangs included), 1 when a\n"
        "file or the policy cannot be read, 2 on a usage error.\n");
}

static int load_path(struct tg_sim *sim, const char *path, struct tg_sb *err);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(struct tg_sim *sim, const char *dir, struct tg_sb *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        tg_sb_printf(err, "%s: cannot open directory", dir);
        return TG_EIO;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
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
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            rc = load_path(sim, names[i], err);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int load_path(struct tg_sim *sim, const char *path, struct tg_sb *err)
{
    struct stat st;
    if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return load_dir(sim, path, err);
    return tg_sim_load_file(sim, path, err);
}

int tg_cmd_simulate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"filename", required_argument, NULL, 'f'}, {"config", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},   {"show-pods", no_argument, NULL, 'P'},
        {"print-config", no_argument, NULL, 'C'},   {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    const char *config = NULL, *output = "table";
    int nfiles = 0, show_pods = 0, print_config = 0, quiet = 0, opt, rc = 2;
    if (!files)
        return 1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "f:c:o:qh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f': files[nfiles++] = optarg; break;
        case 'c': config = optarg; break;
        case 'o': output = optarg; break;
        case 'P': show_pods = 1; break;
        case 'C': print_config = 1; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); free(files); return 0;
        default: usage(stderr); free(files); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "topogang simulate: unexpected argument '%s' (input files go after -f)\n",
                argv[optind]);
        free(files);
        return 2;
    }
    if (strcmp(output, "table") && strcmp(output, "json")) {
        fprintf(stderr, "topogang simulate: -o must be table or json, not '%s'\n", output);
        free(files);
        return 2;
    }
    struct tg_policy pol;
    struct tg_sb err = {0}, out = {0};
    struct tg_sim *sim = NULL;
    tg_policy_default(&pol);
    if (config && tg_policy_load_file(config, &pol, &err)) {
        fprintf(stderr, "topogang simulate: invalid policy:\n%s", tg_sb_str(&err));
        rc = 1;
        goto done;
    }
    if (print_config) {
        tg_policy_dump(&pol, &out);
        fputs(tg_sb_str(&out), stdout);
        rc = 0;
        goto done;
    }
    if (nfiles == 0) {
        fprintf(stderr, "topogang simulate: no input; give -f FILE (see --help)\n");
        goto done;
    }
    rc = 1;
    if (!(sim = tg_sim_new(&pol)))
        goto done;
    tg_sim_quiet(sim, quiet);
    for (int i = 0; i < nfiles; i++) {
        int lrc = load_path(sim, files[i], &err);
        if (lrc) {
            fprintf(stderr, "topogang simulate: %s\n",
                    err.len ? tg_sb_str(&err) : tg_strerror(lrc));
            goto done;
        }
    }
    if (tg_sim_run(sim)) {
        fprintf(stderr, "topogang simulate: out of memory\n");
        goto done;
    }
    if (!strcmp(output, "json"))
        tg_sim_json(sim, &out);
    else
        tg_sim_table(sim, show_pods, &out);
    fwrite(tg_sb_str(&out), 1, out.len, stdout);
    rc = 0;
done:
    tg_sim_free(&sim);
    tg_sb_free(&err);
    tg_sb_free(&out);
    free(files);
    return rc;
}
