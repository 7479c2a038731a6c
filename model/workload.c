/* Decoders for the peers' PodGroups, the workloads that form gangs without
 * one, and what a pod says about its gang; see workload.h. Like decode.c,
 * never trusts a type or a count; unlike it, a peer's spec problem keeps the
 * object (with `problem` set) so that the scheduler can tell its owner. */
#include "model/workload.h"
#include "model/decoding.h"
#include "model/queues.h"
#include "util/err.h"
#include "util/intern.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct tg_pg_apiinfo tg_pg_apis[TG_PG_NAPI] = {
    [TG_PG_TOPOGANG] = {"topogang.io", "v1alpha1", "topogang.io/v1alpha1", "topogang", "topogang"},
    [TG_PG_UPSTREAM] = {"scheduling.k8s.io", "v1alpha2", "scheduling.k8s.io/v1alpha2", "upstream",
                        "upstream"},
    [TG_PG_XK8S] = {"scheduling.x-k8s.io", "v1alpha1", "scheduling.x-k8s.io/v1alpha1",
                    "scheduler-plugins", "scheduler-plugins"},
    [TG_PG_VOLCANO] = {"scheduling.volcano.sh", "v1beta1", "scheduling.volcano.sh/v1beta1",
                       "Volcano", "volcano"},
    [TG_PG_KAI] = {"scheduling.run.ai", "v2alpha2", "scheduling.run.ai/v2alpha2", "KAI", "kai"},
};

const struct tg_wl_kindinfo tg_wl_kinds[TG_WL_N] = {
    [TG_WL_JOB] = {"Job", "batch", "v1", "jobs", "job"},
    [TG_WL_JOBSET] = {"JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", "jobset"},
    [TG_WL_LWS] = {"LeaderWorkerSet", "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "lws"},
    [TG_WL_PYTORCHJOB] = {"PyTorchJob", "kubeflow.org", "v1", "pytorchjobs", "pytorchjob"},
    [TG_WL_MPIJOB] = {"MPIJob", "kubeflow.org", "v1", "mpijobs", "mpijob"},
    [TG_WL_TRAINJOB] = {"TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs", "trainjob"},
};

int tg_pg_api_of(const char *av)
{
    for (int i = 0; av && i < TG_PG_NAPI; i++) {
        size_t n = strlen(tg_pg_apis[i].group);
        if (!strncmp(av, tg_pg_apis[i].group, n) && av[n] == '/')
            return i;
    }
    return -1;
}

int tg_wl_kind_of(const char *kind)
{
    for (int i = 1; kind && i < TG_WL_N; i++)
        if (!strcmp(kind, tg_wl_kinds[i].kind))
            return i;
    return TG_WL_NONE;
}

/* ---- a decoding pass ------------------------------------------------------------ */

struct wdec {
    struct tg__dec c;                   /* the object, its first spec problem (decoding.h) */
    int bad;                            /* the object cannot be kept at all */
    int nomem;                          /* out of memory on the way */
};

/* Optional int field within [lo, hi]: 1 given, 0 absent/null, -1 bad (a problem). */
static int opt_int(struct wdec *x, const cJSON *o, const char *k, const char *field, int64_t lo,
                   int64_t hi, int64_t *out)
{
    const cJSON *j = tg__get(o, k);
    if (!j || cJSON_IsNull(j))
        return 0;
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble)) {
        tg__problem(&x->c, j, field, "must be a whole number");
        return -1;
    }
    /* the range in double first: converting 1e76 to int64 is undefined (fuzz_liststream) */
    if (!(j->valuedouble >= (double)lo && j->valuedouble <= (double)hi)) {
        tg__problem(&x->c, j, field, "must be %lld..%lld, not %.0f", (long long)lo, (long long)hi,
                j->valuedouble);
        return -1;
    }
    *out = (int64_t)j->valuedouble;
    return 1;
}

static const char *opt_str(struct wdec *x, const cJSON *o, const char *k, const char *field)
{
    const cJSON *j = tg__get(o, k);
    if (!j || cJSON_IsNull(j))
        return NULL;
    if (!cJSON_IsString(j)) {
        tg__problem(&x->c, j, field, "must be a string");
        return NULL;
    }
    return j->valuestring;
}

struct wmeta {
    const char *ns, *name, *uid, *rv;
    const cJSON *md, *annotations, *labels;
    int64_t created_ms, generation;
};

/* metadata; 0, or -1 when the object cannot be named (reported, skipped). */
static int wmeta(struct wdec *x, const cJSON *obj, const char *kind, const char *api,
                 struct wmeta *m)
{
    memset(m, 0, sizeof *m);
    m->md = tg__get(obj, "metadata");
    m->name = tg__str(m->md, "name");
    m->ns = tg__str(m->md, "namespace");
    if (!m->ns || !*m->ns)
        m->ns = "default";
    snprintf(x->c.what, sizeof x->c.what, "%s %s/%s%s%s%s", kind, m->ns, m->name ? m->name : "(unnamed)",
             api ? " (" : "", api ? api : "", api ? ")" : "");
    if (!cJSON_IsObject(obj) || !m->name || !*m->name || strlen(m->name) > 253) {
        tg_diag_error(x->c.d, m->md ? m->md : obj, x->c.what, "metadata.name", "is required");
        return -1;
    }
    m->uid = tg__str(m->md, "uid");
    m->rv = tg__str(m->md, "resourceVersion");
    m->annotations = tg__get(m->md, "annotations");
    m->labels = tg__get(m->md, "labels");
    const char *ts = tg__str(m->md, "creationTimestamp");
    if (ts && tg_parse_time(ts, &m->created_ms))
        m->created_ms = 0;
    m->generation = tg__generation(m->md);
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- the peers' PodGroups --------------------------------------------------------- */

static const char *const xk8s_spec[] = {"minMember", "minResources", "scheduleTimeoutSeconds", NULL};
static const char *const volcano_spec[] = {"minMember", "minResources", "minTaskMember",
                                           "networkTopology", "priorityClassName", "queue",
                                           "subGroupPolicy", NULL};
static const char *const volcano_nt[] = {"mode", "highestTierAllowed", "highestTierName", NULL};
static const char *const kai_spec[] = {"backoffLimit", "completions", "markUnschedulable",
                                       "minMember", "parallelism", "preemptibility",
                                       "priorityClassName", "queue", "schedulingBackoff",
                                       "subGroups", "topologyConstraint", NULL};
static const char *const kai_tc[] = {"topology", "requiredTopologyLevel", "preferredTopologyLevel",
                                     NULL};
static const char *const up_spec[] = {"podGroupTemplateRef", "schedulingPolicy",
                                      "schedulingConstraints", "resourceClaims", "disruptionMode",
                                      "priorityClassName", "priority", NULL};

/* spec.minMember, required, >= 1 (Volcano: 0 is taken as 1). */
static void min_member(struct wdec *x, const cJSON *spec, int64_t lo, struct tg_podgroup *g)
{
    int64_t v = 1;
    int r = opt_int(x, spec, "minMember", "spec.minMember", lo, 1000000, &v);
    if (r == 0)
        tg__problem(&x->c, spec, "spec.minMember", "is required (the number of pods that must start "
                                           "together)");
    g->min_member = (int32_t)(v < 1 ? 1 : v);
}

static void prio_class(struct wdec *x, const cJSON *spec, struct tg_podgroup *g)
{
    const char *pc = opt_str(x, spec, "priorityClassName", "spec.priorityClassName");
    g->prio_class = pc && *pc ? tg_intern(pc) : 0;
}

static void decode_xk8s(struct wdec *x, const cJSON *spec, struct tg_podgroup *g)
{
    tg__known_fields(&x->c, spec, "spec", xk8s_spec);
    min_member(x, spec, 1, g);
    int64_t v = 0;
    if (opt_int(x, spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", 0, 31536000, &v) > 0)
        g->timeout_s = (int32_t)v;
}

/* A Volcano networkTopology {mode, highestTierAllowed | highestTierName} at
 * `path`: mode hard unless soft; *tier the tier (-1 none); *name the tier
 * name (interned, 0 none). 0, or -1 after a problem. */
static int decode_nt(struct wdec *x, const cJSON *nt, const char *path, uint8_t *hard,
                     int16_t *tier, uint32_t *name)
{
    char f[160];
    *hard = 1, *tier = -1, *name = 0;
    if (!cJSON_IsObject(nt)) {
        tg__problem(&x->c, nt, path, "must be a map");
        return -1;
    }
    tg__known_fields(&x->c, nt, path, volcano_nt);
    snprintf(f, sizeof f, "%s.mode", path);
    const char *mode = opt_str(x, nt, "mode", f);
    if (mode && strcmp(mode, "hard") && strcmp(mode, "soft")) {
        tg__problem(&x->c, tg__get(nt, "mode"), f, "must be hard or soft, not \"%s\"", mode);
        return -1;
    }
    *hard = !mode || !strcmp(mode, "hard");
    int64_t t;
    snprintf(f, sizeof f, "%s.highestTierAllowed", path);
    int has_tier = opt_int(x, nt, "highestTierAllowed", f, 0, 64, &t);
    snprintf(f, sizeof f, "%s.highestTierName", path);
    const char *tname = opt_str(x, nt, "highestTierName", f);
    if (has_tier > 0 && tname) {
        tg__problem(&x->c, nt, path, "highestTierAllowed and highestTierName exclude each other");
        return -1;
    }
    if (has_tier > 0) {
        *tier = (int16_t)t;
    } else if (tname && *tname) {
        *name = tg_intern(tname);
    } else if (has_tier == 0 && *hard) {
        snprintf(f, sizeof f, "%s.highestTierAllowed", path);
        tg__problem(&x->c, nt, f, "is required with mode hard (or highestTierName)");
        return -1;
    } else if (has_tier == 0) {
        *tier = 1; /* soft, no tier: as tight as the first tier above the nodes */
    }
    return has_tier < 0 ? -1 : 0;
}

static const char *const volcano_sgp[] = {"name", "subGroupSize", "labelSelector", "matchLabelKeys",
                                          "minSubGroups", "networkTopology", NULL};

/* spec.subGroupPolicy[i] at `path` into *sp. Returns 0 or TG_ENOMEM
 * (problems go to x). */
static int decode_sgpolicy(struct wdec *x, const cJSON *it, const char *path, uint32_t i,
                           struct tg_sgpolicy *sp)
{
    char f[160];
    sp->tier = -1;
    if (!cJSON_IsObject(it)) {
        tg__problem(&x->c, it, path, "must be a map");
        return 0;
    }
    tg__known_fields(&x->c, it, path, volcano_sgp);
    snprintf(f, sizeof f, "%s.name", path);
    const char *name = opt_str(x, it, "name", f);
    char idx[16];
    snprintf(idx, sizeof idx, "%u", i);
    if (name && strlen(name) > 253)
        tg__problem(&x->c, tg__get(it, "name"), f, "is longer than 253 characters");
    sp->name = tg_intern(name && *name && strlen(name) <= 253 ? name : idx);
    int64_t v = 1;
    snprintf(f, sizeof f, "%s.subGroupSize", path);
    opt_int(x, it, "subGroupSize", f, 1, 1000000, &v);
    sp->size = (int32_t)v;
    snprintf(f, sizeof f, "%s.minSubGroups", path);
    sp->min_subs = opt_int(x, it, "minSubGroups", f, 0, 1000000, &v) > 0 ? (int32_t)v : -1;
    const cJSON *ls = tg__get(it, "labelSelector");
    snprintf(f, sizeof f, "%s.labelSelector", path);
    if (ls && !cJSON_IsNull(ls) && tg__labelsel_decode(&x->c, ls, f, &sp->sel) == TG_ENOMEM)
        return TG_ENOMEM;
    const cJSON *k, *keys = tg__get(it, "matchLabelKeys");
    snprintf(f, sizeof f, "%s.matchLabelKeys", path);
    int nk = keys && !cJSON_IsNull(keys) ? (cJSON_IsArray(keys) ? cJSON_GetArraySize(keys) : -1) : 0;
    if (nk < 0 || nk > TG_MAX_SGKEYS) {
        tg__problem(&x->c, keys, f, nk < 0 ? "must be a list of label keys"
                                           : "has more than %d keys", TG_MAX_SGKEYS);
        nk = 0;
    }
    if (nk && !(sp->keys = calloc((size_t)nk, sizeof *sp->keys)))
        return TG_ENOMEM;
    const cJSON *klist = nk ? keys : NULL;
    cJSON_ArrayForEach(k, klist)
    {
        if (!cJSON_IsString(k) || !*k->valuestring || strlen(k->valuestring) > 317) {
            snprintf(f, sizeof f, "%s.matchLabelKeys[%u]", path, sp->nkeys);
            tg__problem(&x->c, k, f, "must be a label key (a non-empty string)");
            return 0;
        }
        sp->keys[sp->nkeys++] = tg_intern(k->valuestring);
    }
    const cJSON *nt = tg__get(it, "networkTopology");
    snprintf(f, sizeof f, "%s.networkTopology", path);
    if (nt && !cJSON_IsNull(nt))
        decode_nt(x, nt, f, &sp->tier_hard, &sp->tier, &sp->tier_name);
    return 0;
}

/* spec.subGroupPolicy into g->sgpol. Returns 0 or TG_ENOMEM. */
static int decode_sgpolicies(struct wdec *x, const cJSON *spec, struct tg_podgroup *g)
{
    const cJSON *it, *list = tg__get(spec, "subGroupPolicy");
    if (!list || cJSON_IsNull(list))
        return 0;
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (n < 0 || n > TG_MAX_SGPOLICIES) {
        tg__problem(&x->c, list, "spec.subGroupPolicy", n < 0 ? "must be a list"
                    : "has more than %d entries", TG_MAX_SGPOLICIES);
        return 0;
    }
    if (!n)
        return 0;
    if (!(g->sgpol = calloc((size_t)n, sizeof *g->sgpol)))
        return TG_ENOMEM;
    cJSON_ArrayForEach(it, list)
    {
        char path[48];
        uint32_t i = g->nsgpol++;
        snprintf(path, sizeof path, "spec.subGroupPolicy[%u]", i);
        if (decode_sgpolicy(x, it, path, i, &g->sgpol[i]))
            return TG_ENOMEM;
        for (uint32_t j = 0; j < i; j++)
            if (g->sgpol[j].name == g->sgpol[i].name) {
                char f[64];
                snprintf(f, sizeof f, "%s.name", path);
                tg__problem(&x->c, tg__get(it, "name"), f, "\"%s\" is the name of "
                            "spec.subGroupPolicy[%u] too", tg_str(g->sgpol[i].name), j);
            }
    }
    return 0;
}

static void decode_volcano(struct wdec *x, const cJSON *spec, struct tg_podgroup *g)
{
    tg__known_fields(&x->c, spec, "spec", volcano_spec);
    min_member(x, spec, 0, g);
    prio_class(x, spec, g);
    g->tier = -1;
    if (decode_sgpolicies(x, spec, g))
        x->nomem = 1;
    const cJSON *nt = tg__get(spec, "networkTopology");
    uint32_t tname;
    if (!nt || cJSON_IsNull(nt) ||
        decode_nt(x, nt, "spec.networkTopology", &g->tier_hard, &g->tier, &tname) || !tname)
        return;
    if (g->tier_hard) {
        g->topo_req = tname;
        g->topo_req_field = "spec.networkTopology.highestTierName";
    } else {
        g->topo_pref = tname;
        g->topo_pref_field = "spec.networkTopology.highestTierName";
    }
}

static const char *const kai_sub[] = {"name", "minMember", "parent", "topologyConstraint", NULL};

/* One KAI sub-group's topologyConstraint: node label keys (or level names),
 * resolved against the policy's levels by placement. */
static void kai_sub_topo(struct wdec *x, const cJSON *it, const char *path, struct tg_subgroup *sg)
{
    char f[96];
    const cJSON *tc = tg__get(it, "topologyConstraint");
    if (!tc || cJSON_IsNull(tc))
        return;
    snprintf(f, sizeof f, "%s.topologyConstraint", path);
    if (!cJSON_IsObject(tc)) {
        tg__problem(&x->c, tc, f, "must be a map");
        return;
    }
    tg__known_fields(&x->c, tc, f, kai_tc);
    snprintf(f, sizeof f, "%s.topologyConstraint.requiredTopologyLevel", path);
    const char *r = opt_str(x, tc, "requiredTopologyLevel", f);
    snprintf(f, sizeof f, "%s.topologyConstraint.preferredTopologyLevel", path);
    const char *p = opt_str(x, tc, "preferredTopologyLevel", f);
    sg->required = r && *r ? tg_intern(r) : 0;
    sg->preferred = p && *p ? tg_intern(p) : 0;
}

/* KAI's parents (parent[i]: the interned parent name of entry i, 0 none):
 * the leaves stay in g->subs; a parent with a topologyConstraint goes to
 * g->outer and its leaves point at it (subs[k].outer). A constrained parent
 * of another parent (constraints nested more than one level) is refused
 * naming the field. Returns 0 or TG_ENOMEM. */
static int kai_parents(struct wdec *x, const cJSON *list, struct tg_podgroup *g, const uint32_t *parent)
{
    uint32_t n = g->nsubs, k = 0;
    uint8_t *is_parent = calloc(n + 1, 1);
    if (!is_parent || !(g->outer = calloc(n + 1, sizeof *g->outer))) {
        free(is_parent);
        return TG_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n && !is_parent[i]; j++)
            is_parent[i] = parent[j] && parent[j] == g->subs[i].name;
    for (uint32_t i = 0; i < n; i++) {
        if (!is_parent[i] || !(g->subs[i].required || g->subs[i].preferred))
            continue;
        for (uint32_t j = 0; j < n; j++)
            if (parent[j] == g->subs[i].name && is_parent[j]) {
                char f[64];
                snprintf(f, sizeof f, "spec.subGroups[%u].topologyConstraint", i);
                tg__problem(&x->c, list, f, "a constraint over sub-groups nested more than one "
                            "level (its child %s has children) is not supported",
                            tg_str(g->subs[j].name));
                break;
            }
        g->outer[g->nouter] = g->subs[i];
        g->outer[g->nouter++].min_member = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (is_parent[i])
            continue;
        g->subs[k] = g->subs[i];
        for (uint32_t o = 0; parent[i] && o < g->nouter; o++)
            if (g->outer[o].name == parent[i])
                g->subs[k].outer = o + 1;
        k++;
    }
    g->nsubs = k;
    if (!g->nouter) {
        free(g->outer);
        g->outer = NULL;
    }
    free(is_parent);
    return 0;
}

/* KAI's spec.subGroups: pods join leaf sub-groups by the label
 * kai.scheduler/subgroup-name. A parent sub-group groups its children (each
 * leaf is placed whole, all of them required); a parent's own
 * topologyConstraint holds its leaves inside one domain of its level
 * (kai_parents). Returns 0 or TG_ENOMEM. */
static int decode_kai_subgroups(struct wdec *x, const cJSON *spec, struct tg_podgroup *g)
{
    const cJSON *it, *list = tg__get(spec, "subGroups");
    if (!list || cJSON_IsNull(list))
        return 0;
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (n < 0 || n > TG_MAX_SUBGROUPS) {
        tg__problem(&x->c, list, "spec.subGroups", n < 0 ? "must be a list" : "has more than %d entries",
                TG_MAX_SUBGROUPS);
        return 0;
    }
    if (!n || !(g->subs = calloc((size_t)n, sizeof *g->subs)))
        return n ? TG_ENOMEM : 0;
    uint32_t *parent = calloc((size_t)n, sizeof *parent);
    if (!parent)
        return TG_ENOMEM;
    cJSON_ArrayForEach(it, list)
    {
        char path[48], f[96];
        snprintf(path, sizeof path, "spec.subGroups[%u]", g->nsubs);
        struct tg_subgroup *sg = &g->subs[g->nsubs];
        tg__known_fields(&x->c, it, path, kai_sub);
        snprintf(f, sizeof f, "%s.name", path);
        const char *name = opt_str(x, it, "name", f);
        if (!name || !*name) {
            tg__problem(&x->c, it, f, "is required");
            continue;
        }
        sg->name = tg_intern(name);
        int64_t v = 1;
        snprintf(f, sizeof f, "%s.minMember", path);
        opt_int(x, it, "minMember", f, 1, 1000000, &v);
        sg->min_member = (int32_t)v;
        snprintf(f, sizeof f, "%s.parent", path);
        const char *par = opt_str(x, it, "parent", f);
        parent[g->nsubs] = par && *par ? tg_intern(par) : 0;
        kai_sub_topo(x, it, path, sg);
        g->nsubs++;
    }
    int rc = kai_parents(x, list, g, parent);
    free(parent);
    return rc;
}

static void decode_kai(struct wdec *x, const cJSON *spec, struct tg_podgroup *g)
{
    tg__known_fields(&x->c, spec, "spec", kai_spec);
    min_member(x, spec, 1, g);
    prio_class(x, spec, g);
    if (decode_kai_subgroups(x, spec, g))
        x->nomem = 1;
    const cJSON *tc = tg__get(spec, "topologyConstraint");
    if (!tc || cJSON_IsNull(tc))
        return;
    if (!cJSON_IsObject(tc)) {
        tg__problem(&x->c, tc, "spec.topologyConstraint", "must be a map");
        return;
    }
    tg__known_fields(&x->c, tc, "spec.topologyConstraint", kai_tc);
    const char *r = opt_str(x, tc, "requiredTopologyLevel",
                            "spec.topologyConstraint.requiredTopologyLevel");
    const char *p = opt_str(x, tc, "preferredTopologyLevel",
                            "spec.topologyConstraint.preferredTopologyLevel");
    if (r && *r) {
        g->topo_req = tg_intern(r);
        g->topo_req_field = "spec.topologyConstraint.requiredTopologyLevel";
    }
    if (p && *p) {
        g->topo_pref = tg_intern(p);
        g->topo_pref_field = "spec.topologyConstraint.preferredTopologyLevel";
    }
}

static void upstream_status(const cJSON *obj, struct tg_podgroup *g)
{
    const cJSON *c, *conds = tg__get(tg__get(obj, "status"), "conditions");
    if (!cJSON_IsArray(conds))
        return;
    cJSON_ArrayForEach(c, conds)
    {
        const char *t = tg__str(c, "type"), *s = tg__str(c, "status");
        if (t && s && !strcmp(t, "PodGroupScheduled") && !strcmp(s, "True"))
            g->sched_true = 1;
    }
}

static void decode_upstream(struct wdec *x, const cJSON *obj, const cJSON *spec,
                            struct tg_podgroup *g)
{
    tg__known_fields(&x->c, spec, "spec", up_spec);
    g->min_member = 1;
    const cJSON *sp = tg__get(spec, "schedulingPolicy");
    const cJSON *gang = tg__get(sp, "gang");
    int64_t v = 1;
    if (cJSON_IsObject(gang)) {
        if (opt_int(x, gang, "minCount", "spec.schedulingPolicy.gang.minCount", 1, 1000000, &v) == 0)
            tg__problem(&x->c, gang, "spec.schedulingPolicy.gang.minCount", "is required");
        g->min_member = (int32_t)v;
    } else if (!cJSON_IsObject(tg__get(sp, "basic"))) {
        tg__problem(&x->c, sp ? sp : spec, "spec.schedulingPolicy", "needs gang (minCount) or basic");
    }
    prio_class(x, spec, g);
    if (opt_int(x, spec, "priority", "spec.priority", -2147483648LL, 2147483647LL, &v) > 0) {
        g->priority = (int32_t)v;
        g->has_priority = 1;
    }
    const cJSON *topo = tg__get(tg__get(spec, "schedulingConstraints"), "topology");
    if (cJSON_IsArray(topo) && cJSON_GetArraySize(topo) > 0) {
        const cJSON *t0 = cJSON_GetArrayItem(topo, 0);
        const char *key = opt_str(x, t0, "key", "spec.schedulingConstraints.topology[0].key");
        if (!key || !*key)
            tg__problem(&x->c, t0, "spec.schedulingConstraints.topology[0].key", "is required");
        else {
            g->topo_req = tg_intern(key);
            g->topo_req_field = "spec.schedulingConstraints.topology[0].key";
        }
        if (cJSON_GetArraySize(topo) > 1)
            tg__problem(&x->c, topo, "spec.schedulingConstraints.topology",
                    "holds %d constraints; one is supported", cJSON_GetArraySize(topo));
    }
    upstream_status(obj, g);
}

int tg_podgroup_decode_api(const cJSON *obj, int api, struct tg_diag *d, struct tg_podgroup **out)
{
    *out = NULL;
    if (api == TG_PG_TOPOGANG)
        return tg_podgroup_decode(obj, d, out);
    if (api < 0 || api >= TG_PG_NAPI)
        return TG_EINVAL;
    struct wdec x = {.c = {.d = d, .note = " (its gang is not placed)"}};
    struct wmeta m;
    if (wmeta(&x, obj, "PodGroup", tg_pg_apis[api].api_version, &m))
        return TG_EPARSE;
    struct tg_podgroup *g = calloc(1, sizeof *g);
    if (!g)
        return TG_ENOMEM;
    g->api = (uint8_t)api;
    g->tier = -1;
    size_t kl = strlen(m.ns) + strlen(m.name) + strlen(tg_pg_apis[api].group) + 3;
    g->key = malloc(kl);
    g->uid = dup_or_null(m.uid);
    g->rv = dup_or_null(m.rv);
    if (!g->key || (m.uid && !g->uid) || (m.rv && !g->rv))
        goto nomem;
    snprintf(g->key, kl, "%s/%s@%s", m.ns, m.name, tg_pg_apis[api].group);
    g->ns = tg_intern(m.ns);
    g->name = tg_intern(m.name);
    g->created_ms = m.created_ms;
    g->generation = m.generation;
    const cJSON *spec = tg__get(obj, "spec");
    if (!cJSON_IsObject(spec))
        tg__problem(&x.c, obj, "spec", "is required");
    switch (api) {
    case TG_PG_UPSTREAM: decode_upstream(&x, obj, spec, g); break;
    case TG_PG_XK8S: decode_xk8s(&x, spec, g); break;
    case TG_PG_VOLCANO: decode_volcano(&x, spec, g); break;
    default: decode_kai(&x, spec, g); break;
    }
    /* KAI's and Volcano's spec.queue (known fields of both), else a queue label */
    const char *q = api == TG_PG_KAI || api == TG_PG_VOLCANO ? opt_str(&x, spec, "queue", "spec.queue")
                                                            : NULL;
    g->queue = q && *q && strlen(q) <= 253 ? tg_intern(q) : tg_queue_meta(m.md, TG_QOF_WORKLOAD);
    if (g->queue == TG_STR_NONE)
        goto nomem;
    if (x.nomem || (x.c.problem[0] && !(g->problem = strdup(x.c.problem))))
        goto nomem;
    *out = g;
    return 0;
nomem:
    tg_podgroup_free(&g);
    return TG_ENOMEM;
}

int tg_podgroup_decode_any(const cJSON *obj, struct tg_diag *d, struct tg_podgroup **out)
{
    const char *av = tg__str(obj, "apiVersion");
    int api = tg_pg_api_of(av);
    if (api < 0) {
        *out = NULL;
        tg_diag_error(d, obj, "PodGroup", "apiVersion", "\"%s\" is none of topogang.io, "
                      "scheduling.k8s.io, scheduling.x-k8s.io, scheduling.volcano.sh, "
                      "scheduling.run.ai", av ? av : "");
        return TG_EPARSE;
    }
    return tg_podgroup_decode_api(obj, api, d, out);
}

/* ---- workloads ----------------------------------------------------------------------- */

/* The controller owner reference of an object (controller: true). */
static void owner_of(const cJSON *md, uint32_t *kind, uint32_t *name)
{
    const cJSON *r, *refs = tg__get(md, "ownerReferences");
    *kind = *name = 0;
    if (!cJSON_IsArray(refs))
        return;
    cJSON_ArrayForEach(r, refs)
    {
        const char *k = tg__str(r, "kind"), *n = tg__str(r, "name");
        if (cJSON_IsTrue(tg__get(r, "controller")) && k && n && *k && *n) {
            *kind = tg_intern(k);
            *name = tg_intern(n);
            return;
        }
    }
}

/* What one Job spec runs at once: parallelism (default 1), or completions -
 * succeeded when smaller. */
static int32_t job_size(struct wdec *x, const cJSON *spec, int64_t succeeded, const char *path)
{
    char f[200];
    int64_t par = 1, comp = 0;
    snprintf(f, sizeof f, "%s.parallelism", path);
    opt_int(x, spec, "parallelism", f, 0, 1000000, &par);
    snprintf(f, sizeof f, "%s.completions", path);
    if (opt_int(x, spec, "completions", f, 0, 100000000, &comp) > 0 && comp - succeeded < par)
        par = comp - succeeded;
    return (int32_t)(par < 1 ? 1 : par);
}

/* An exclusive-topology annotation's value (a node label key), interned; 0 none. */
static uint32_t excl_of(struct wdec *x, const cJSON *annotations, const char *key, const char *path)
{
    char f[200];
    snprintf(f, sizeof f, "%s.annotations[%s]", path, key);
    const char *v = opt_str(x, annotations, key, f);
    uint32_t id = v && *v ? tg_intern(v) : 0;
    if (id == TG_STR_NONE)
        x->nomem = 1;
    return id == TG_STR_NONE ? 0 : id;
}

/* An LWS's spec.leaderWorkerTemplate.subGroupPolicy (LWS's own rules: size
 * or size - 1 a multiple of subGroupSize, size - 1 under LeaderExcluded)
 * and its subgroup-exclusive-topology annotation; a bad one is the
 * workload's problem, naming the field. */
static void decode_lws_subgroups(struct wdec *x, const cJSON *obj, const cJSON *t, struct tg_workload *w)
{
    const cJSON *sp = tg__get(t, "subGroupPolicy");
    int64_t n = 0;
    if (!sp)
        return;
    if (opt_int(x, sp, "subGroupSize", "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize", 1,
                100000, &n) != 1)
        return;
    const char *type = opt_str(x, sp, "subGroupPolicyType",
                               "spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType");
    int excluded = type && !strcmp(type, "LeaderExcluded");
    if (type && !excluded && strcmp(type, "LeaderWorker")) {
        tg__problem(&x->c, tg__get(sp, "subGroupPolicyType"),
                    "spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType",
                    "must be LeaderWorker or LeaderExcluded, not \"%s\"", type);
        return;
    }
    int64_t size = w->size;
    if (n > size || (excluded ? (size - 1) % n : size % n && (size - 1) % n)) {
        tg__problem(&x->c, tg__get(sp, "subGroupSize"),
                    "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize",
                    "%lld does not divide spec.leaderWorkerTemplate.size %lld%s", (long long)n,
                    (long long)size, excluded ? " - 1 (LeaderExcluded)" : " or size - 1");
        return;
    }
    w->sub_size = (int32_t)n;
    w->sub_leader_excluded = (uint8_t)excluded;
    w->sub_excl = excl_of(x, tg__get(tg__get(obj, "metadata"), "annotations"),
                          TG_ANN_LWS_SUB_EXCLUSIVE, "metadata");
}

static void decode_jobset(struct wdec *x, const cJSON *obj, const cJSON *spec, struct tg_workload *w)
{
    const cJSON *rjs = tg__get(spec, "replicatedJobs"), *rj;
    if (!cJSON_IsArray(rjs) || !cJSON_GetArraySize(rjs)) {
        tg__problem(&x->c, spec, "spec.replicatedJobs", "is required");
        return;
    }
    if (cJSON_GetArraySize(rjs) > UINT16_MAX) {
        tg__problem(&x->c, rjs, "spec.replicatedJobs", "has more than %d entries", UINT16_MAX);
        return;
    }
    uint32_t js_excl = excl_of(x, tg__get(tg__get(obj, "metadata"), "annotations"), TG_ANN_JOBSET_EXCLUSIVE,
                               "metadata");
    if (!(w->rjobs = calloc((size_t)cJSON_GetArraySize(rjs), sizeof *w->rjobs))) {
        x->nomem = 1;
        return;
    }
    int64_t total = 0;
    int i = 0;
    cJSON_ArrayForEach(rj, rjs)
    {
        char f[120];
        struct tg_wl_rjob *r = &w->rjobs[i];
        snprintf(f, sizeof f, "spec.replicatedJobs[%d].replicas", i);
        int64_t reps = 1;
        opt_int(x, rj, "replicas", f, 0, 100000, &reps);
        snprintf(f, sizeof f, "spec.replicatedJobs[%d].template.spec", i);
        int32_t size = job_size(x, tg__get(tg__get(rj, "template"), "spec"), 0, f);
        total += reps * size;
        const char *name = tg__str(rj, "name");
        r->name = name && *name ? tg_intern(name) : 0;
        r->name = r->name == TG_STR_NONE ? (x->nomem = 1, 0) : r->name;
        r->replicas = (int32_t)reps;
        r->size = size;
        snprintf(f, sizeof f, "spec.replicatedJobs[%d].template.metadata", i);
        r->excl = excl_of(x, tg__get(tg__get(tg__get(rj, "template"), "metadata"), "annotations"),
                          TG_ANN_JOBSET_EXCLUSIVE, f);
        r->excl_own = r->excl != 0;
        if (!r->excl)
            r->excl = js_excl;
        i++;
    }
    w->npsets = (uint16_t)i;
    w->size = (int32_t)(total > 1000000 ? 1000000 : total < 1 ? 1 : total);
}

/* Kubeflow: the replicas of every replica type ("Master", "Worker", ...). */
static void decode_replicas(struct wdec *x, const cJSON *spec, const char *field,
                            struct tg_workload *w)
{
    const cJSON *m = tg__get(spec, field), *e;
    char f[200];
    if (!cJSON_IsObject(m) || !cJSON_GetArraySize(m)) {
        snprintf(f, sizeof f, "spec.%s", field);
        tg__problem(&x->c, spec, f, "is required");
        return;
    }
    int64_t total = 0;
    cJSON_ArrayForEach(e, m)
    {
        int64_t r = 1;
        snprintf(f, sizeof f, "spec.%s.%s.replicas", field, e->string);
        opt_int(x, e, "replicas", f, 0, 100000, &r);
        total += r;
        w->npsets++;
    }
    w->size = (int32_t)(total > 1000000 ? 1000000 : total < 1 ? 1 : total);
}

/* Kubeflow's elastic forms, into w->min_size / w->max_size: the common
 * spec.runPolicy.schedulingPolicy.minAvailable (PyTorchJob, MPIJob: e.g.
 * elastic Horovod), then a PyTorchJob's spec.elasticPolicy: minReplicas..
 * maxReplicas Workers (the other replica types fixed). */
static void decode_elastic(struct wdec *x, const cJSON *spec, struct tg_workload *w)
{
    const cJSON *ep = tg__get(spec, "elasticPolicy");
    int64_t workers = 1, lo = 0, hi = 0;
    if (opt_int(x, tg__get(tg__get(spec, "runPolicy"), "schedulingPolicy"), "minAvailable",
                "spec.runPolicy.schedulingPolicy.minAvailable", 1, 1000000, &lo) > 0)
        w->min_size = (int32_t)lo;
    lo = 0;
    if (w->kind != TG_WL_PYTORCHJOB || !cJSON_IsObject(ep))
        return;
    opt_int(x, tg__get(tg__get(spec, "pytorchReplicaSpecs"), "Worker"), "replicas",
            "spec.pytorchReplicaSpecs.Worker.replicas", 0, 100000, &workers);
    if (opt_int(x, ep, "minReplicas", "spec.elasticPolicy.minReplicas", 1, 100000, &lo) < 0 ||
        opt_int(x, ep, "maxReplicas", "spec.elasticPolicy.maxReplicas", 1, 100000, &hi) < 0)
        return;
    if (lo && hi && hi < lo) {
        tg__problem(&x->c, tg__get(ep, "maxReplicas"), "spec.elasticPolicy.maxReplicas",
                "must be at least minReplicas (%lld), not %lld", (long long)lo, (long long)hi);
        return;
    }
    int64_t fixed = w->size - workers > 0 ? w->size - workers : 0;
    if (lo)
        w->min_size = (int32_t)(fixed + lo);
    w->max_size = hi ? (int32_t)(fixed + hi) : 0;
}

static void decode_wl_spec(struct wdec *x, const cJSON *obj, const cJSON *spec, struct tg_workload *w)
{
    int64_t v = 1;
    w->size = 1;
    w->npsets = 1;
    switch (w->kind) {
    case TG_WL_JOB:
        v = 0;
        opt_int(x, tg__get(obj, "status"), "succeeded", "status.succeeded", 0, 100000000, &v);
        w->size = job_size(x, spec, v, "spec");
        w->suspended = (uint8_t)cJSON_IsTrue(tg__get(spec, "suspend"));
        break;
    case TG_WL_JOBSET:
        w->npsets = 0;
        decode_jobset(x, obj, spec, w);
        w->suspended = (uint8_t)cJSON_IsTrue(tg__get(spec, "suspend"));
        break;
    case TG_WL_LWS: {
        const cJSON *t = tg__get(spec, "leaderWorkerTemplate");
        opt_int(x, t, "size", "spec.leaderWorkerTemplate.size", 1, 100000, &v);
        w->size = (int32_t)v;
        w->npsets = v > 1 ? 2 : 1;
        int64_t reps = 1;
        opt_int(x, spec, "replicas", "spec.replicas", 0, 100000, &reps);
        w->replicas = (int32_t)reps;
        w->excl = excl_of(x, tg__get(tg__get(obj, "metadata"), "annotations"), TG_ANN_LWS_EXCLUSIVE,
                          "metadata");
        decode_lws_subgroups(x, obj, t, w);
        const char *sp = opt_str(x, spec, "startupPolicy", "spec.startupPolicy");
        if (sp && !strcmp(sp, "LeaderReady") && v > 1)
            tg__problem(&x->c, tg__get(spec, "startupPolicy"), "spec.startupPolicy",
                    "LeaderReady creates the workers only once the leader runs, so the group "
                    "can never start as one gang (use LeaderCreated)");
        break;
    }
    case TG_WL_PYTORCHJOB:
        w->npsets = 0;
        decode_replicas(x, spec, "pytorchReplicaSpecs", w);
        decode_elastic(x, spec, w);
        break;
    case TG_WL_MPIJOB:
        w->npsets = 0;
        decode_replicas(x, spec, "mpiReplicaSpecs", w);
        decode_elastic(x, spec, w);
        break;
    default: /* TrainJob: its JobSet says better, when seen */
        if (opt_int(x, tg__get(spec, "trainer"), "numNodes", "spec.trainer.numNodes", 1, 100000, &v) == 0)
            tg__problem(&x->c, spec, "spec.trainer.numNodes", "is not set (the runtime decides; its "
                                                       "JobSet says how many pods)");
        w->size = (int32_t)v;
        break;
    }
}

int tg_workload_decode(const cJSON *obj, struct tg_diag *d, struct tg_workload **out)
{
    *out = NULL;
    const char *k = tg__str(obj, "kind");
    int kind = tg_wl_kind_of(k);
    struct wdec x = {.c = {.d = d, .note = " (its gang is not placed)"}};
    struct wmeta m;
    if (wmeta(&x, obj, k ? k : "(no kind)", NULL, &m))
        return TG_EPARSE;
    if (!kind) {
        tg_diag_error(d, obj, x.c.what, "kind", "is not a workload kind topogang derives gangs from");
        return TG_EPARSE;
    }
    struct tg_workload *w = calloc(1, sizeof *w);
    if (!w)
        return TG_ENOMEM;
    w->kind = (uint8_t)kind;
    size_t kl = strlen(m.ns) + strlen(k) + strlen(m.name) + 3;
    w->key = malloc(kl);
    w->uid = dup_or_null(m.uid);
    w->rv = dup_or_null(m.rv);
    if (!w->key || (m.uid && !w->uid) || (m.rv && !w->rv))
        goto nomem;
    snprintf(w->key, kl, "%s/%s/%s", m.ns, k, m.name);
    w->ns = tg_intern(m.ns);
    w->name = tg_intern(m.name);
    w->created_ms = m.created_ms;
    owner_of(m.md, &w->owner_kind, &w->owner_name);
    const cJSON *spec = tg__get(obj, "spec");
    if (!cJSON_IsObject(spec))
        tg__problem(&x.c, obj, "spec", "is required");
    decode_wl_spec(&x, obj, spec, w);
    if (x.nomem || (x.c.problem[0] && !(w->problem = strdup(x.c.problem))))
        goto nomem;
    *out = w;
    return 0;
nomem:
    tg_workload_free(&w);
    return TG_ENOMEM;
}

void tg_workload_free(struct tg_workload **pw)
{
    struct tg_workload *w = *pw;
    if (!w)
        return;
    free(w->key);
    free(w->uid);
    free(w->rv);
    free(w->problem);
    free(w->rjobs);
    free(w);
    *pw = NULL;
}

/* ---- what a pod says about its gang ---------------------------------------------- */

const char *tg_hint_annotation(int src, int required)
{
    switch (src) {
    case TG_HINT_TOPOGANG: return required ? TG_ANN_TOPO_REQUIRED : TG_ANN_TOPO_PREFERRED;
    case TG_HINT_KUEUE: return required ? TG_ANN_KUEUE_REQUIRED : TG_ANN_KUEUE_PREFERRED;
    case TG_HINT_KAI: return required ? TG_ANN_KAI_REQUIRED : TG_ANN_KAI_PREFERRED;
    default: return "";
    }
}

static uint32_t label(const struct tg_pod *p, const char *key)
{
    uint32_t k = tg_intern_lookup(key, strlen(key));
    if (k == TG_STR_NONE)
        return 0;
    uint32_t v = tg_labels_get(p->labels, p->nlabels, k);
    return v == TG_STR_NONE ? 0 : v;
}

/* The gang the pod's controller forms, "Kind/name[/group]", or 0; an LWS
 * group's pod with whole_lws (topogang.io/gang-scope: lws) forms
 * "LeaderWorkerSet/name", one gang for every group. */
static uint32_t derive(const struct tg_pod *p, int whole_lws)
{
    if (!p->owner_kind)
        return 0;
    const char *kind = tg_str(p->owner_kind), *owner = tg_str(p->owner_name);
    char buf[600];
    uint32_t a, b;
    if (!strcmp(kind, "Job") && (a = label(p, "jobset.sigs.k8s.io/jobset-name")) && *tg_str(a))
        snprintf(buf, sizeof buf, "JobSet/%s", tg_str(a));
    else if (!strcmp(kind, "Job") || !strcmp(kind, "PyTorchJob") || !strcmp(kind, "MPIJob"))
        snprintf(buf, sizeof buf, "%s/%s", kind, owner);
    else if (!strcmp(kind, "StatefulSet") && (a = label(p, "leaderworkerset.sigs.k8s.io/name")) &&
             (b = label(p, TG_LABEL_LWS_GROUP)) && *tg_str(a) && *tg_str(b) && whole_lws)
        snprintf(buf, sizeof buf, "LeaderWorkerSet/%s", tg_str(a));
    else if (!strcmp(kind, "StatefulSet") && (a = label(p, "leaderworkerset.sigs.k8s.io/name")) &&
             (b = label(p, TG_LABEL_LWS_GROUP)) && *tg_str(a) && *tg_str(b))
        snprintf(buf, sizeof buf, "LeaderWorkerSet/%s/%s", tg_str(a), tg_str(b));
    else
        return 0;
    uint32_t id = tg_intern(buf);
    return id == TG_STR_NONE ? 0 : id;
}

int tg_derived_kind(uint32_t derived)
{
    if (!derived)
        return TG_WL_NONE;
    const char *s = tg_str(derived), *slash = strchr(s, '/');
    if (!slash)
        return TG_WL_NONE;
    for (int i = 1; i < TG_WL_N; i++)
        if ((size_t)(slash - s) == strlen(tg_wl_kinds[i].kind) &&
            !strncmp(s, tg_wl_kinds[i].kind, (size_t)(slash - s)))
            return i;
    return TG_WL_NONE;
}

const char *tg_derived_owner_key(uint32_t ns, uint32_t derived, char *buf, size_t n)
{
    const char *s = tg_str(derived), *slash = strchr(s, '/');
    const char *second = slash ? strchr(slash + 1, '/') : NULL;
    int len = second ? (int)(second - s) : (int)strlen(s);
    snprintf(buf, n, "%s/%.*s", tg_str(ns), len, s);
    return buf;
}

static const char *ann(const cJSON *an, const char *k)
{
    const char *v = tg__str(an, k);
    return v && *v ? v : NULL;
}

/* topogang.io's, then Kueue's, then KAI's spelling of one hint. */
static void hint(const cJSON *an, int required, uint32_t *val, uint8_t *src)
{
    for (int s = TG_HINT_TOPOGANG; s <= TG_HINT_KAI; s++) {
        const char *v = ann(an, tg_hint_annotation(s, required));
        if (v) {
            *val = tg_intern(v);
            *src = (uint8_t)s;
            return;
        }
    }
}

static int decode_hints(const cJSON *an, struct tg_diag *d, struct tg_pod *p)
{
    struct tg_ganghints h = {0};
    hint(an, 1, &h.req, &h.req_src);
    hint(an, 0, &h.pref, &h.pref_src);
    const char *mm = ann(an, TG_ANN_MIN_MEMBER);
    if (mm) {
        char *end;
        long v = strtol(mm, &end, 10);
        h.min = *end || end == mm || v < 1 || v > 1000000 ? -1 : (int32_t)v;
        if (h.min < 0) {
            char what[300];
            snprintf(what, sizeof what, "Pod %s", p->key);
            tg_diag_warn(d, tg__get(an, TG_ANN_MIN_MEMBER), what,
                         "metadata.annotations[" TG_ANN_MIN_MEMBER "]",
                         "must be a whole number 1..1000000, not \"%s\"", mm);
        }
    }
    if (!h.req && !h.pref && !h.min)
        return 0;
    if (h.req == TG_STR_NONE || h.pref == TG_STR_NONE || !(p->hints = malloc(sizeof h)))
        return TG_ENOMEM;
    *p->hints = h;
    return 0;
}

/* A rank value: a whole number 0..2^31-1 into *v (1), absent (0), or
 * malformed (-1: a warning naming the pod and where it was read). */
static int rank_value(const char *v, const cJSON *at, const char *field, struct tg_diag *d,
                      const struct tg_pod *p, uint32_t *out)
{
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (end != v && !*end && !errno && n >= 0 && n <= INT32_MAX && *v != '+' && *v != ' ') {
        *out = (uint32_t)n;
        return 1;
    }
    char what[300];
    snprintf(what, sizeof what, "Pod %s", p->key);
    tg_diag_warn(d, at, what, field, "must be a whole number 0..2147483647 for a rank, not \"%s\"", v);
    return -1;
}

static const char *label_str(const struct tg_pod *p, const char *key)
{
    uint32_t v = label(p, key);
    return v ? tg_str(v) : NULL;
}

/* p->rank from the first source it carries (workload.h). */
static void decode_rank(const cJSON *md, struct tg_diag *d, struct tg_pod *p)
{
    const cJSON *labels = tg__get(md, "labels"), *an = tg__get(md, "annotations");
    uint32_t major = 0, minor = 0;
    int ok;
    const char *ci = label_str(p, TG_LABEL_COMPLETION), *ci_field =
        "metadata.labels[" TG_LABEL_COMPLETION "]";
    const cJSON *ci_at = tg__get(labels, TG_LABEL_COMPLETION);
    if (!ci && (ci = ann(an, TG_LABEL_COMPLETION))) {
        ci_field = "metadata.annotations[" TG_LABEL_COMPLETION "]";
        ci_at = tg__get(an, TG_LABEL_COMPLETION);
    }
    const char *kt = label_str(p, TG_LABEL_KF_TYPE), *js_key = TG_LABEL_JOBSET_GLOBAL;
    const char *js_field = "metadata.labels[" TG_LABEL_JOBSET_GLOBAL "]";
    if (!label(p, js_key))
        js_key = TG_LABEL_JOBSET_INDEX, js_field = "metadata.labels[" TG_LABEL_JOBSET_INDEX "]";
    const char *js = label_str(p, js_key);
    if (label(p, TG_LABEL_RANK))
        ok = rank_value(label_str(p, TG_LABEL_RANK), tg__get(labels, TG_LABEL_RANK),
                        "metadata.labels[" TG_LABEL_RANK "]", d, p, &minor);
    else if (label(p, TG_LABEL_LWS_WORKER))
        ok = rank_value(label_str(p, TG_LABEL_LWS_WORKER), tg__get(labels, TG_LABEL_LWS_WORKER),
                        "metadata.labels[" TG_LABEL_LWS_WORKER "]", d, p, &minor);
    else if (kt) {
        if (!strcasecmp(kt, "worker"))
            major = 1;
        else if (strcasecmp(kt, "master") && strcasecmp(kt, "chief") && strcasecmp(kt, "launcher"))
            return; /* a parameter server, an evaluator: in no ring */
        ok = rank_value(label_str(p, TG_LABEL_KF_INDEX), tg__get(labels, TG_LABEL_KF_INDEX),
                        "metadata.labels[" TG_LABEL_KF_INDEX "]", d, p, &minor);
    } else if (js && ci) {
        ok = rank_value(js, tg__get(labels, js_key), js_field, d, p, &major);
        if (ok > 0)
            ok = rank_value(ci, ci_at, ci_field, d, p, &minor);
    } else {
        ok = rank_value(ci, ci_at, ci_field, d, p, &minor);
    }
    if (ok > 0)
        p->rank = 1 + ((uint64_t)major << 32 | minor);
}

int tg_pod_gang_decode(const cJSON *obj, struct tg_diag *d, struct tg_pod *p)
{
    const cJSON *md = tg__get(obj, "metadata"), *an = tg__get(md, "annotations");
    const cJSON *labels = tg__get(md, "labels");
    if (p->group) {
        p->group_api = cJSON_IsString(tg__get(labels, TG_LABEL_POD_GROUP)) ? TG_PG_TOPOGANG : TG_PG_XK8S;
    } else {
        const char *name = tg__str(tg__get(tg__get(obj, "spec"), "schedulingGroup"), "podGroupName");
        int api = TG_PG_UPSTREAM;
        if (!name || !*name)
            name = ann(an, TG_ANN_VOLCANO_GROUP), api = TG_PG_VOLCANO;
        if (!name)
            name = ann(an, TG_ANN_KAI_GROUP), api = TG_PG_KAI;
        if (name && *name) {
            p->group = tg_intern(name);
            p->group_api = (uint8_t)api;
            if (p->group == TG_STR_NONE)
                return TG_ENOMEM;
        }
    }
    if (!p->group) {
        const char *scope = ann(an, TG_ANN_GANG_SCOPE);
        if (scope && strcmp(scope, "lws") && strcmp(scope, "group")) {
            char what[300];
            snprintf(what, sizeof what, "Pod %s", p->key);
            tg_diag_warn(d, tg__get(an, TG_ANN_GANG_SCOPE), what,
                         "metadata.annotations[" TG_ANN_GANG_SCOPE "]",
                         "must be lws or group, not \"%s\" (taken as group)", scope);
        }
        p->derived = derive(p, scope && !strcmp(scope, "lws"));
    }
    decode_rank(md, d, p);
    if ((p->queue = tg_queue_meta(md, TG_QOF_WORKLOAD)) == TG_STR_NONE)
        return TG_ENOMEM;
    return cJSON_IsObject(an) ? decode_hints(an, d, p) : 0;
}
