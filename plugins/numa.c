/* The NUMA/NVLink plugin: per-node fit models kept in step with the cluster
 * (node_changed decodes the annotation, usage_changed aligns each placed GPU
 * pod to a domain, and each pod the kubelet pins to a NUMA node, and records
 * it in tg_usage.inner), and filter/count/score over them. See plugins/numa.h. Config keys: scoring.numa (its weight),
 * numa.policyLabel (a node label naming the node's Topology Manager policy)
 * and numa.defaultPolicy (for nodes whose label and agent say nothing). */
#include "plugins/numa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/topology.h"
#include "config/policy.h"
#include "model/resources.h"
#include "util/hmap.h"
#include "util/intern.h"
#include "util/log.h"

#define INNER_NONE   0xff               /* usage not aligned (nothing to align, no model) */
#define INNER_SPREAD 0xfe               /* usage spans domains */
#define COUNT_LIMIT  (1u << 20)

/* tg_node.inner: the annotation seen last (by hash) and its model. */
struct numa_inner {
    uint64_t hash;                      /* of the annotation text */
    size_t len;
    uint8_t bad;                        /* it did not decode: no model */
    uint8_t annot_policy;               /* the agent's --topology-policy */
    uint8_t dirty;                      /* new model: usage not aligned on it yet */
    struct tg_fit_node *fit;            /* fit->policy: the effective policy (see effective()) */
};

static uint64_t bad_annotations;
/* Nodes whose new model waits for its usage (see sync_models). Only ever too
 * high (a node removed while pending), which costs one needless scan. */
static uint32_t pending;

uint64_t tg_numa_bad_annotations(void)
{
    return bad_annotations;
}

static int is_gpu_res(const char *name)
{
    return !strcmp(name, "nvidia.com/gpu") || !strcmp(name, "amd.com/gpu");
}

static int is_rdma_res(const char *name)
{
    return !strncmp(name, "rdma/", 5) || strstr(name, "hca") != NULL;
}

void tg_numa_req(const struct tg_rq *req, uint32_t n, struct tg_fit_req *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < n; i++) {
        if (req[i].val <= 0)
            continue;
        if (req[i].res == TG_RES_CPU) {
            out->cpu_milli = req[i].val;
        } else if (req[i].res == TG_RES_MEMORY) {
            out->mem = req[i].val;
        } else if (req[i].res >= TG_RES_NFIXED) {
            const char *name = tg_res_name(req[i].res);
            if (!name)
                continue;
            if (is_gpu_res(name))
                out->gpus += req[i].val;
            else if (is_rdma_res(name))
                out->rdma = 1;
        }
    }
}

/* The alignment request of a placed pod: its requests and QoS; whether the
 * kubelet's figures on this node already include it. */
static void usage_req(const struct tg_fit_node *fit, const struct tg_usage *u,
                      struct tg_fit_req *r)
{
    tg_numa_req(u->req, u->nreq, r);
    r->guaranteed = u->guaranteed;
    r->excl_cpus = u->excl_cpus;
    r->counted = u->guaranteed && fit->nkpods && tg_fit_counted(fit, u->key);
}

/* Aligns one usage record on the node's model (+1) or takes it back (-1). */
static void place_usage(struct tg_fit_node *fit, struct tg_usage *u, int sign)
{
    struct tg_fit_req r;
    usage_req(fit, u, &r);
    if (sign < 0) {
        if (u->inner == INNER_SPREAD)
            tg_fit_apply(fit, -1, &r, -1);
        else if (u->inner != INNER_NONE)
            tg_fit_apply(fit, u->inner, &r, -1);
        u->inner = INNER_NONE;
        return;
    }
    if (r.gpus <= 0 && !tg_fit_pinned(fit, &r)) {
        u->inner = INNER_NONE;
        return;
    }
    int d = tg_fit_choose(fit, &r);
    if (d < 0 && r.gpus > 0) {
        /* Admitted without alignment (policy none, restricted spanning, or
         * placed by someone else): its GPUs count against the node. */
        tg_fit_apply(fit, -1, &r, +1);
        u->inner = INNER_SPREAD;
        return;
    }
    if (d < 0) {
        /* Pinned by nobody yet and no room: the kubelet will refuse it. */
        u->inner = INNER_NONE;
        return;
    }
    tg_fit_apply(fit, d, &r, +1);
    u->inner = (uint8_t)d;
}

/* The alignment request of a shape's pod (pending: never in kpods). */
static void shape_req(const struct tg_shape *s, struct tg_fit_req *r)
{
    tg_numa_req(s->pod->req, s->pod->nreq, r);
    r->guaranteed = s->pod->guaranteed;
    r->excl_cpus = s->pod->excl_cpus;
}

uint32_t tg_numa_kubelet_arg(char what, int64_t most)
{
    if (what == 'c')
        return 1u << 31 | (uint32_t)(most > INT32_MAX ? INT32_MAX : most < 0 ? 0 : most);
    int64_t mib = most / (1024 * 1024);
    return (uint32_t)(mib > INT32_MAX ? INT32_MAX : mib < 0 ? 0 : mib);
}

const char *tg_numa_kubelet_text(uint32_t arg, char *buf, size_t n)
{
    uint32_t v = arg & INT32_MAX;
    if (arg >> 31)
        snprintf(buf, n, "%u exclusive CPU%s", v, v == 1 ? "" : "s");
    else if (v >= 1024)
        snprintf(buf, n, "%.1f GiB of memory", v / 1024.0);
    else
        snprintf(buf, n, "%u MiB of memory", v);
    return buf;
}

/* Aligns the usage of every node with a new model, in one scan of the usage
 * map for however many nodes changed (a relist sets thousands of nodes; one
 * scan per node would cost nodes x pods). Called before any model is read. */
static void sync_models(struct tg_cluster *c)
{
    if (!pending)
        return;
    uint32_t pos = 0;
    const struct tg_hslot *hs;
    while ((hs = tg_hmap_next(&c->usage, &pos))) {
        struct tg_usage *u = (struct tg_usage *)(uintptr_t)hs->val;
        struct numa_inner *in = u->slot < c->nslots ? c->nodes[u->slot].inner : NULL;
        if (in && in->dirty && in->fit)
            place_usage(in->fit, u, +1);
    }
    for (uint32_t i = 0; i < c->nslots; i++) {
        struct numa_inner *in = c->nodes[i].inner;
        if (in)
            in->dirty = 0;
    }
    pending = 0;
}

const struct tg_fit_node *tg_numa_node(struct tg_cluster *c, uint32_t slot)
{
    sync_models(c);
    const struct numa_inner *in = slot < c->nslots ? c->nodes[slot].inner : NULL;
    return in ? in->fit : NULL;
}

static void inner_free(struct numa_inner **in)
{
    if (*in)
        tg_fit_node_free(&(*in)->fit);
    free(*in);
    *in = NULL;
}

/* A decoded model of the annotation text, or NULL (bad: warned, counted). */
static struct tg_fit_node *decode(const struct tg_cluster *c, uint32_t slot, const char *annot,
                                  size_t len)
{
    struct tg_topology *t = malloc(sizeof *t);
    struct tg_fit_node *fit = NULL;
    const char *why = "out of memory";
    if (t && tg_topo_decode(annot, len, t, &why) == 0 && tg_fit_node_new(t, &fit) == 0) {
        free(t);
        return fit;
    }
    free(t);
    bad_annotations++;
    tg_warn("numa", "node %s: ignoring annotation %s: %s; treating the node as having no "
            "NUMA/GPU topology", tg_str(c->nodes[slot].name), TG_ANNOTATION_TOPOLOGY, why);
    return NULL;
}

/* Usage records keep the domain index of the model they were aligned on;
 * when the model goes, they are stale until sync_models realigns them on the
 * next model, and usage_changed ignores them meanwhile. */
static void node_changed(struct tg_cluster *c, uint32_t slot)
{
    struct tg_node *n = &c->nodes[slot];
    struct numa_inner *in = n->inner;
    const char *annot = n->obj ? n->obj->topology : NULL;
    size_t len = annot ? strlen(annot) : 0;
    uint64_t h = annot ? tg_hash(annot, len) : 0;

    if (in && annot && in->hash == h && in->len == len)
        return;                         /* same annotation: keep the model and usage */
    inner_free(&in);
    n->inner = NULL;
    if (!annot)
        return;
    in = calloc(1, sizeof *in);
    if (!in) {
        tg_error("numa", "node %s: out of memory; no NUMA model", tg_str(n->name));
        return;
    }
    in->hash = h;
    in->len = len;
    in->fit = decode(c, slot, annot, len);
    in->bad = in->fit == NULL;
    in->annot_policy = in->fit ? in->fit->policy : TG_TOPO_POLICY_NONE;
    n->inner = in;
    if (in->fit && n->npods) {
        in->dirty = 1;
        pending++;
    }
}

static void usage_changed(struct tg_cluster *c, struct tg_usage *u, int sign)
{
    struct numa_inner *in = u->slot < c->nslots ? c->nodes[u->slot].inner : NULL;
    if (!in || !in->fit || in->dirty) {
        u->inner = INNER_NONE;          /* a dirty model picks it up in sync_models */
        return;
    }
    place_usage(in->fit, u, sign);
}

static uint8_t from_config(int v)
{
    return v == TG_NUMA_SINGLE_NUMA_NODE ? TG_TOPO_POLICY_SINGLE_NUMA
         : v == TG_NUMA_RESTRICTED       ? TG_TOPO_POLICY_RESTRICTED
                                         : TG_TOPO_POLICY_NONE;   /* none, best-effort */
}

/* The node's Topology Manager policy: its numa.policyLabel label when it
 * names one, else the agent's --topology-policy from the annotation when not
 * none, else numa.defaultPolicy. best-effort never rejects: treated as none. */
static uint8_t effective(const struct tg_cycle_ctx *cx, uint32_t slot, const struct numa_inner *in)
{
    const struct tg_policy *pol = cx->policy;
    const struct tg_node_obj *o = cx->cluster->nodes[slot].obj;
    if (pol && o && pol->numa_label_id) {
        uint32_t v = tg_labels_get(o->labels, o->nlabels, pol->numa_label_id);
        if (v != TG_STR_NONE) {
            const char *s = tg_str(v);
            uint8_t p;
            if (!tg_topo_policy_parse(s, &p))
                return p;
            if (s && !strcmp(s, "best-effort"))
                return TG_TOPO_POLICY_NONE;
        }
    }
    if (in->annot_policy != TG_TOPO_POLICY_NONE || !pol)
        return in->annot_policy;
    return from_config(pol->numa_default);
}

/* The slot's model with its effective policy set, or NULL. */
static struct tg_fit_node *model(const struct tg_cycle_ctx *cx, uint32_t slot)
{
    sync_models(cx->cluster);
    struct numa_inner *in = cx->cluster->nodes[slot].inner;
    if (!in || !in->fit)
        return NULL;
    in->fit->policy = effective(cx, slot, in);
    return in->fit;
}

static uint32_t gpu_res_id(const struct tg_pod *p)
{
    for (uint8_t i = 0; i < p->nreq; i++) {
        const char *name = p->req[i].res >= TG_RES_NFIXED ? tg_res_name(p->req[i].res) : NULL;
        if (name && is_gpu_res(name))
            return p->req[i].res;
    }
    return TG_RES_CPU;
}

/* Why r fits no domain of an empty node, or 0 (as a resource id + 1). */
static uint32_t never_fits(const struct tg_fit_node *fit, const struct tg_fit_req *r,
                           const struct tg_pod *p)
{
    int64_t gpus = 0, cpu = 0, mem = 0;
    for (uint32_t d = 0; d < fit->ndom; d++) {
        const struct tg_fit_dom *x = &fit->dom[d];
        if (x->gpus < r->gpus)
            continue;
        if ((int64_t)x->gpus > gpus)
            gpus = x->gpus;
        if (x->numa < 0)
            return 0;
        const struct tg_fit_numa *m = &fit->numa[x->numa];
        if ((!m->cpu_milli || m->cpu_milli >= r->cpu_milli) && (!m->mem || m->mem >= r->mem))
            return 0;
        cpu = m->cpu_milli > cpu ? m->cpu_milli : cpu;
        mem = m->mem > mem ? m->mem : mem;
    }
    if (!gpus)
        return gpu_res_id(p) + 1;
    return (cpu && cpu < r->cpu_milli ? TG_RES_CPU : TG_RES_MEMORY) + 1;
}

/* Filter: a GPU pod that no domain could hold even on an empty node. */
static int filter(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                  struct tg_status *st)
{
    struct tg_fit_node *fit = model(cx, slot);
    if (!fit || fit->policy == TG_TOPO_POLICY_NONE)
        return 1;
    struct tg_fit_req r;
    shape_req(s, &r);
    if (r.gpus <= 0)
        return 1;                       /* pinned pods: the kubelet's figures change, count decides */
    if (fit->policy == TG_TOPO_POLICY_RESTRICTED) {
        int64_t widest = 0;
        for (uint32_t d = 0; d < fit->ndom; d++)
            widest = (int64_t)fit->dom[d].gpus > widest ? fit->dom[d].gpus : widest;
        if (r.gpus > widest)
            return 1;                   /* may span: count decides */
    }
    uint32_t why = never_fits(fit, &r, s->pod);
    if (!why)
        return 1;
    *st = (struct tg_status){TG_UNRESOLVABLE, TG_R_NUMA, why - 1};
    return 0;
}

static uint32_t count(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                      struct tg_status *st)
{
    struct tg_fit_node *fit = model(cx, slot);
    if (!fit)
        return UINT32_MAX;
    struct tg_fit_req r;
    shape_req(s, &r);
    uint32_t n = tg_fit_count(fit, &r, COUNT_LIMIT);
    if (n == 0) {
        /* The kubelet cannot pin it: say what it can still give at most. */
        struct tg_fit_req hw = r;
        char what;
        int64_t most;
        hw.guaranteed = 0;
        if (tg_fit_pinned(fit, &r) && (r.gpus <= 0 || tg_fit_choose(fit, &hw) >= 0) &&
            tg_fit_short(fit, &r, &what, &most) == 0) {
            *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_NUMA_KUBELET,
                                     tg_numa_kubelet_arg(what, most)};
            return 0;
        }
        /* Name what is short: the GPUs, or the CPU/memory beside them. */
        struct tg_fit_req gpus_only = {.gpus = r.gpus, .rdma = r.rdma};
        uint32_t res = gpu_res_id(s->pod);
        if (tg_fit_choose(fit, &gpus_only) >= 0) {
            struct tg_fit_req cpu_only = gpus_only;
            cpu_only.cpu_milli = r.cpu_milli;
            res = tg_fit_choose(fit, &cpu_only) < 0 ? TG_RES_CPU : TG_RES_MEMORY;
        }
        *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_NUMA, res};
    }
    return n;
}

static int score(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot)
{
    struct tg_fit_node *fit = model(cx, slot);
    struct tg_fit_req r;
    shape_req(s, &r);
    if (!fit)
        return r.gpus > 0 ? 50 : 100;   /* unknown inside: between fits and does not */
    return tg_fit_score(fit, &r);
}

const struct tg_plugin tg_plugin_numa = {
    .name = "NUMA",
    .filter = filter,
    .count = count,
    .score = score,
    .node_changed = node_changed,
    .usage_changed = usage_changed,
};
