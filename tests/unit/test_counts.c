/* Per-node counts kept between tries (scheduler/counts.h): a try recounts
 * only the nodes that changed since the shape's last try, and decides as a
 * full count would through every kind of change: binds and unbinds, Node
 * updates (room, taints, cordon, a move to another rack), new nodes,
 * nominations, what-if hides, reservations (blocks) and policy reloads.
 * "As a full count": the same gang tried right after on fresh counts, and
 * a twin gang whose pods carry a node-affinity term every node
 * matches (never cached), get the same verdict, reason and nodes. The
 * reason texts kept by their numbers (place.c) are checked the same way:
 * the try on fresh counts makes its text afresh too. */
#include "testutil.h"
#include "config/policy.h"
#include "model/objects.h"
#include "scheduler/counts.h"
#include "scheduler/cycle.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
    "placement: {strategy: pack, defaultPreferred: rack}\n";

enum { NRACKS = 4, PER_RACK = 4, NNODES = NRACKS * PER_RACK };

/* Sets Node name: rack, GPUs, and spec extras (a taint, a cordon). */
static void node(struct tg_sched *s, const char *name, const char *rack, int gpus, const char *spec)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":\"%s\","
             "\"topology.kubernetes.io/zone\":\"z1\",\"topogang.io/rack\":\"%s\",\"pool\":\"%s\"}},"
             "\"spec\":{%s},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"}}}",
             name, name, rack, rack[1] < '2' ? "a" : "b", spec ? spec : "", gpus);
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    struct tg_node_obj *n;
    assert_int_equal(tg_node_decode(o, NULL, &n), 0);
    assert_int_equal(tg_cluster_node_set(&s->cluster, n), 0);
    cJSON_Delete(o);
}

/* A pod of gpus GPUs; extra: more of its spec (JSON members) or NULL. */
static struct tg_pod *pod(const char *name, int gpus, const char *extra)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":{%s%s"
             "\"schedulerName\":\"topogang\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"nvidia.com/gpu\":\"%d\"}}}]}}",
             name, extra ? extra : "", extra ? "," : "", gpus);
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(o, TG_DECODE_SPEC, NULL, &p), 0);
    cJSON_Delete(o);
    return p;
}

static const char *ANY_NODE =
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
    "[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"Exists\"}]}]}}}";

struct gang {
    struct tg_gang g;
    struct tg_pod *pods[16];
};

/* A gang of n pods of gpus GPUs each (twin: with the never-cached term). */
static void gang(struct gang *x, const char *name, int n, int gpus, const char *extra, int twin)
{
    memset(x, 0, sizeof *x);
    char extras[1024];
    snprintf(extras, sizeof extras, "%s%s%s", extra ? extra : "", extra && twin ? "," : "",
             twin ? ANY_NODE : "");
    for (int i = 0; i < n; i++) {
        char pn[64];
        snprintf(pn, sizeof pn, "%s%s-%d", name, twin ? "-twin" : "", i);
        x->pods[i] = pod(pn, gpus, extras[0] ? extras : NULL);
    }
    x->g = (struct tg_gang){.name = name, .pods = x->pods, .npods = (uint32_t)n, .anchor = TG_NONE,
                            .within = TG_NONE, .min_member = (uint32_t)n};
}

static void gang_free(struct gang *x)
{
    for (uint32_t i = 0; i < x->g.npods; i++)
        tg_pod_free(&x->pods[i]);
}

struct verdict {
    int status;
    char reason[1024];
    uint32_t slot[16];
};

/* Tries g and puts the model back as it was (the members it assumed go). */
static void try_gang(struct tg_sched *s, struct gang *x, struct verdict *v)
{
    struct tg_result r;
    assert_int_equal(tg_sched_gang(s, &x->g, &r), 0);
    v->status = r.status;
    snprintf(v->reason, sizeof v->reason, "%s", r.reason);
    for (uint32_t i = 0; i < x->g.npods; i++) {
        v->slot[i] = r.slot[i];
        if (r.status == TG_GANG_SCHEDULED && r.slot[i] != TG_NONE)
            tg_cluster_pod_delete(&s->cluster, x->pods[i]->key);
    }
    tg_result_free(&r);
}

static void same_verdict(const struct verdict *a, const struct verdict *b, uint32_t n, const char *what)
{
    if (a->status != b->status || strcmp(a->reason, b->reason))
        fail_msg("%s: %d \"%s\" against %d \"%s\"", what, a->status, a->reason, b->status, b->reason);
    for (uint32_t i = 0; i < n; i++)
        if (a->slot[i] != b->slot[i])
            fail_msg("%s: member %u on slot %u against %u", what, i, a->slot[i], b->slot[i]);
}

/* The gang (name, n x gpus, extra) decides from the kept counts as from a
 * full count: the flushed cache and the never-cached twin agree. */
static void check(struct tg_sched *s, const char *name, int n, int gpus, const char *extra, const char *what)
{
    struct gang g, twin;
    gang(&g, name, n, gpus, extra, 0);
    gang(&twin, name, n, gpus, extra, 1);
    struct verdict cached, flushed, full;
    try_gang(s, &g, &cached);
    struct tg__counts *kept = s->counts; /* the same try on fresh counts */
    struct tg__reasons *texts = s->reasons; /* and its reason made afresh */
    s->counts = NULL;
    s->reasons = NULL;
    try_gang(s, &g, &flushed);
    tg__counts_free(&s->counts);
    tg__reasons_free(&s->reasons);
    s->counts = kept;
    s->reasons = texts;
    try_gang(s, &twin, &full);
    char w[256];
    snprintf(w, sizeof w, "%s, %s flushed", what, name);
    same_verdict(&cached, &flushed, (uint32_t)n, w);
    snprintf(w, sizeof w, "%s, %s uncached", what, name);
    same_verdict(&cached, &full, (uint32_t)n, w);
    gang_free(&g);
    gang_free(&twin);
}

/* Three shapes: a 3 x 4-GPU gang, one 8-GPU pod, two 8-GPU pods that need
 * pool b and tolerate a taint. */
static const char *POOL_B = "\"nodeSelector\":{\"pool\":\"b\"},\"tolerations\":[{\"key\":\"gpu-maint\","
                            "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]";

static void check_all(struct tg_sched *s, const char *what)
{
    check(s, "three", 3, 4, NULL, what);
    check(s, "one", 1, 8, NULL, what);
    check(s, "pool", 2, 8, POOL_B, what);
    check(s, "big", 10, 8, NULL, what); /* 10 whole nodes: unschedulable with a reason often */
}

static char nodename[NNODES][16], rackname[NRACKS][8];

static void cluster(struct tg_sched *s)
{
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "test", &pol, NULL), 0);
    assert_int_equal(tg_sched_init(s, &pol), 0);
    for (int r = 0; r < NRACKS; r++) {
        snprintf(rackname[r], sizeof rackname[r], "r%d", r);
        for (int i = 0; i < PER_RACK; i++) {
            snprintf(nodename[r * PER_RACK + i], sizeof nodename[0], "n%d-%d", r, i);
            node(s, nodename[r * PER_RACK + i], rackname[r], 8, NULL);
        }
    }
}

/* A bound pod of gpus GPUs on node i (key ml/<name>). */
static void bind(struct tg_sched *s, const char *name, int i, int gpus)
{
    char extra[300];
    snprintf(extra, sizeof extra, "\"nodeName\":\"%s\"", nodename[i]);
    struct tg_pod *p = pod(name, gpus, extra);
    assert_int_equal(tg_cluster_pod_update(&s->cluster, p), 0);
    tg_pod_free(&p);
}

/* A try after one bind counts that node alone; the first try counts all. */
static void test_recounts_only_changed(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    struct gang g;
    gang(&g, "one", 1, 8, NULL, 0);
    struct verdict v;
    try_gang(&s, &g, &v); /* places and takes back: its node changed twice */
    assert_int_equal(v.status, TG_GANG_SCHEDULED);
    assert_int_equal(tg__counts_evals(s.counts), NNODES);
    try_gang(&s, &g, &v);
    assert_int_equal(tg__counts_evals(s.counts), NNODES + 1);
    bind(&s, "x", 5, 2);
    bind(&s, "y", 9, 2);
    bind(&s, "z", 5, 2);
    uint64_t before = tg__counts_evals(s.counts);
    try_gang(&s, &g, &v);
    /* nodes 5 and 9, and the node the try placed on (once the last try's) */
    assert_true(tg__counts_evals(s.counts) - before <= 3);
    assert_true(tg__counts_evals(s.counts) - before >= 2);
    gang_free(&g);
    tg_sched_free(&s);
}

/* Every kind of change, each followed by the check that the kept counts
 * decide as a full count. */
static void test_changes_decide_as_full(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    check_all(&s, "empty");
    /* fill racks unevenly: r0 nearly full, r2 half */
    for (int i = 0; i < PER_RACK; i++) {
        char n[16];
        snprintf(n, sizeof n, "a%d", i);
        bind(&s, n, i, i == 3 ? 4 : 8);
        snprintf(n, sizeof n, "b%d", i);
        bind(&s, n, 2 * PER_RACK + i, 4);
    }
    check_all(&s, "binds");
    tg_cluster_pod_delete(&s.cluster, "ml/a0"); /* unbind */
    check_all(&s, "unbind");
    node(&s, nodename[4], rackname[1], 2, NULL); /* room shrinks */
    check_all(&s, "allocatable");
    node(&s, nodename[13], rackname[3], 8, "\"taints\":[{\"key\":\"gpu-maint\",\"effect\":\"NoSchedule\"}]");
    check_all(&s, "taint");
    node(&s, nodename[12], rackname[3], 8, "\"unschedulable\":true");
    check_all(&s, "cordon");
    node(&s, nodename[14], rackname[0], 8, NULL); /* moves from r3 to r0 */
    check_all(&s, "move");
    node(&s, "n-new", "r9", 8, NULL); /* a new node in a new rack: the tree grows */
    check_all(&s, "new node");
    tg_cluster_node_remove(&s.cluster, tg_intern(nodename[15]));
    check_all(&s, "node removed");
    /* a nomination holds room */
    struct tg_pod *nom = pod("nom", 8, NULL);
    assert_int_equal(tg_cluster_nominate(&s.cluster, nom, tg_cluster_slot(&s.cluster, tg_intern(nodename[10]), 0)), 0);
    check_all(&s, "nomination");
    /* a what-if hides a bound pod: its room counts as free while hidden */
    struct tg_usage *u = tg_cluster_usage(&s.cluster, "ml/b1");
    assert_non_null(u);
    tg_cluster_usage_hide(&s.cluster, u, 1);
    check_all(&s, "hidden");
    tg_cluster_usage_hide(&s.cluster, u, 0);
    check_all(&s, "shown");
    tg_cluster_pod_delete(&s.cluster, "ml/nom");
    tg_pod_free(&nom);
    check_all(&s, "nomination gone");
    /* reservations: rack r2 and node n1-1 kept for others */
    s.blocks[0] = (struct tg_block){tg_cluster_slot(&s.cluster, tg_intern(nodename[8]), 0), tg_intern("ml/other")};
    s.blocks[0].domain = s.cluster.tree.dom[s.cluster.tree.leaf[s.blocks[0].domain]].parent;
    s.blocks[1] = (struct tg_block){s.cluster.tree.leaf[tg_cluster_slot(&s.cluster, tg_intern(nodename[5]), 0)],
                                    tg_intern("ml/third")};
    s.nblocks = 2;
    check_all(&s, "blocks");
    s.nblocks = 0;
    check_all(&s, "no blocks");
    /* a policy reload (spread) drops what was kept */
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "test", &pol, NULL), 0);
    pol.strategy = TG_STRATEGY_SPREAD;
    assert_int_equal(tg_sched_set_policy(&s, &pol), 0);
    check_all(&s, "policy");
    tg_sched_free(&s);
}

/* A failed try's reason text is copied from the last ones when its numbers
 * are the same, and made afresh when they moved (a bind) or when the
 * policy renamed a level (the reload drops the texts). */
static void test_reasons_kept(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    for (int i = 1; i < 8; i++) { /* 9 whole nodes free */
        char n[16];
        snprintf(n, sizeof n, "f%d", i);
        bind(&s, n, i, 8);
    }
    struct gang g;
    gang(&g, "big", 10, 8, NULL, 0);
    struct tg_podgroup rack = {.key = "ml/big", .min_member = 10, .required = tg_intern("rack")};
    struct tg_podgroup shelf = rack;
    shelf.required = tg_intern("shelf");
    g.g.pg = &rack;
    struct verdict a, b, fresh;
    uint64_t hits, made;
    try_gang(&s, &g, &a);
    assert_int_equal(a.status, TG_GANG_UNSCHEDULABLE);
    tg__reasons_stats(s.reasons, &hits, &made);
    assert_int_equal(hits, 0);
    assert_int_equal(made, 1);
    try_gang(&s, &g, &b); /* nothing changed: copied */
    tg__reasons_stats(s.reasons, &hits, &made);
    assert_int_equal(hits, 1);
    assert_string_equal(a.reason, b.reason);
    bind(&s, "x", 0, 8); /* one more node without room */
    try_gang(&s, &g, &b);
    tg__reasons_stats(s.reasons, &hits, &made);
    assert_int_equal(hits, 1);
    assert_int_equal(made, 2);
    assert_string_not_equal(a.reason, b.reason);
    struct tg__reasons *kept = s.reasons;
    s.reasons = NULL;
    try_gang(&s, &g, &fresh);
    tg__reasons_free(&s.reasons);
    s.reasons = kept;
    assert_string_equal(b.reason, fresh.reason);
    /* the same levels under other names: the numbers are the same, the text is not */
    static const char *RENAMED =
        "topology:\n  levels:\n"
        "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
        "    - {name: shelf, nodeLabel: topogang.io/rack}\n"
        "    - {name: node, nodeLabel: kubernetes.io/hostname}\n"
        "placement: {strategy: pack, defaultPreferred: shelf}\n";
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(RENAMED, strlen(RENAMED), "test", &pol, NULL), 0);
    assert_int_equal(tg_sched_set_policy(&s, &pol), 0);
    g.g.pg = &shelf;
    try_gang(&s, &g, &a);
    if (!strstr(a.reason, "in one shelf; best shelf z1/r"))
        fail_msg("reason after the reload: %s (before: %s)", a.reason, b.reason);
    gang_free(&g);
    tg_sched_free(&s);
}

/* Reservations on kept counts: the reason names them with the nodes they
 * hold, as the full count does (the twin checks the text). */
static void test_blocks_reason(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    for (int r = 0; r < NRACKS - 1; r++) {
        char n[16];
        snprintf(n, sizeof n, "f%d", r);
        bind(&s, n, r * PER_RACK, 8); /* racks r0-r2 lose a node each */
    }
    uint32_t rack3 = s.cluster.tree.dom[s.cluster.tree.leaf[tg_cluster_slot(&s.cluster, tg_intern(nodename[12]), 0)]].parent;
    s.blocks[0] = (struct tg_block){rack3, tg_intern("ml/other")};
    s.nblocks = 1;
    struct gang g;
    gang(&g, "big", 10, 8, NULL, 0); /* 9 whole nodes free outside r3 */
    struct verdict v;
    try_gang(&s, &g, &v);
    assert_int_equal(v.status, TG_GANG_UNSCHEDULABLE);
    if (!strstr(v.reason, "4 nodes reserved for ml/other"))
        fail_msg("reason: %s", v.reason);
    check(&s, "big", 10, 8, NULL, "blocks");
    gang_free(&g);
    tg_sched_free(&s);
}

/* A slot with no Node yet (a pod bound to a node not seen) counts 0 and
 * has no domain: kept counts read no tree arrays for it (UBSan saw a NULL
 * leaf array here once), before and after Nodes arrive. */
static void test_slot_without_node(void **st)
{
    (void)st;
    struct tg_policy pol;
    tg_policy_default(&pol);
    assert_int_equal(tg_policy_parse(POLICY, strlen(POLICY), "test", &pol, NULL), 0);
    struct tg_sched s;
    assert_int_equal(tg_sched_init(&s, &pol), 0);
    struct tg_pod *ghost = pod("ghost", 2, "\"nodeName\":\"gone\"");
    assert_int_equal(tg_cluster_pod_update(&s.cluster, ghost), 0);
    tg_pod_free(&ghost);
    struct gang g;
    gang(&g, "one", 1, 8, NULL, 0);
    struct verdict v;
    try_gang(&s, &g, &v);
    assert_int_equal(v.status, TG_GANG_UNSCHEDULABLE);
    assert_int_equal(tg__counts_evals(s.counts), 1);
    snprintf(nodename[0], sizeof nodename[0], "n0-0");
    node(&s, nodename[0], "r0", 8, NULL);
    try_gang(&s, &g, &v);
    assert_int_equal(v.status, TG_GANG_SCHEDULED);
    assert_int_equal(v.slot[0], tg_cluster_slot(&s.cluster, tg_intern("n0-0"), 0));
    gang_free(&g);
    tg_sched_free(&s);
}

/* A what-if fit (preemption's reprieve asks thousands) that the counts
 * cannot hold is answered without a dry run, and the same as one: rack r0
 * holds 1 of a 4 x 8-GPU gang (three nodes taken), r1 all 4; with r0's pods
 * hidden it holds the gang again. A gang with pod anti-affinity (a domain
 * constraint) always gets the dry run. */
static void test_whatif_bound_by_counts(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    bind(&s, "a", 0, 8);
    bind(&s, "b", 1, 8);
    bind(&s, "c", 2, 8);
    struct gang g;
    gang(&g, "four", 4, 8, NULL, 0);
    struct tg_whatif *w;
    assert_int_equal(tg_whatif_begin(&s, &g.g, &w), 0);
    const struct tg_tree *t = &s.cluster.tree;
    uint32_t r0 = tg_tree_ancestor(t, t->leaf[tg_cluster_slot(&s.cluster, tg_intern(nodename[0]), 0)], 2);
    uint32_t r1 = tg_tree_ancestor(t, t->leaf[tg_cluster_slot(&s.cluster, tg_intern(nodename[PER_RACK]), 0)], 2);
    int ok = -1;
    assert_int_equal(tg_whatif_holds(w, r0), 1);
    assert_int_equal(tg_whatif_fits(w, r0, &ok, NULL), 0);
    assert_int_equal(ok, 0);
    assert_int_equal(tg_whatif_runs(w), 0);
    uint32_t slots[4];
    assert_int_equal(tg_whatif_fits(w, r1, &ok, slots), 0);
    assert_int_equal(ok, 1);
    assert_int_equal(tg_whatif_runs(w), 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tg_tree_ancestor(t, t->leaf[slots[i]], 2), r1);
    const char *keys[3] = {"ml/a", "ml/b", "ml/c"};
    for (int i = 0; i < 3; i++)
        tg_whatif_hide(w, tg_cluster_usage(&s.cluster, keys[i]), 1);
    assert_int_equal(tg_whatif_fits(w, r0, &ok, NULL), 0);
    assert_int_equal(ok, 1);
    assert_int_equal(tg_whatif_runs(w), 2);
    for (int i = 0; i < 3; i++)
        tg_whatif_hide(w, tg_cluster_usage(&s.cluster, keys[i]), 0);
    assert_int_equal(tg_whatif_fits(w, r0, &ok, NULL), 0);
    assert_int_equal(ok, 0);
    assert_int_equal(tg_whatif_runs(w), 2);
    tg_whatif_end(&w);
    gang_free(&g);
    gang(&g, "apart", 4, 8,
         "\"labels\":{\"app\":\"apart\"},\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "[{\"labelSelector\":{\"matchLabels\":{\"app\":\"apart\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}",
         0);
    assert_int_equal(tg_whatif_begin(&s, &g.g, &w), 0);
    assert_int_equal(tg_whatif_fits(w, r0, &ok, NULL), 0);
    assert_int_equal(ok, 0);
    assert_int_equal(tg_whatif_runs(w), 1);
    tg_whatif_end(&w);
    gang_free(&g);
    tg_sched_free(&s);
}

/* The reason's node counts come from the rejections kept per reason
 * (counts.h) and their order from the nodes' (as the full count makes
 * them): 40 nodes each with a taint of its own (more reasons than a
 * histogram holds, each on one node, so the order decides which are
 * shown), taken off and put back under other keys (kept entries emptied
 * and reused), whole nodes taken, and a reservation over tainted nodes
 * (their reason becomes the reservation). Each step decides as a full
 * count, reason text included. */
static void test_many_reasons(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    char name[40][16], rack[40][8], taint[128];
    for (int i = 0; i < 40; i++) {
        snprintf(name[i], sizeof name[i], "t%02d", i);
        snprintf(rack[i], sizeof rack[i], "r%d", 4 + i / 10);
        snprintf(taint, sizeof taint, "\"taints\":[{\"key\":\"k%02d\",\"effect\":\"NoSchedule\"}]", i);
        node(&s, name[i], rack[i], 8, taint);
    }
    for (int i = 0; i < NNODES - 4; i++) { /* 4 nodes left: "big" (10 nodes) waits */
        char n[16];
        snprintf(n, sizeof n, "w%d", i);
        bind(&s, n, i, 8);
    }
    check_all(&s, "forty taints");
    struct gang g;
    gang(&g, "big", 10, 8, NULL, 0);
    struct verdict v;
    try_gang(&s, &g, &v);
    assert_int_equal(v.status, TG_GANG_UNSCHEDULABLE);
    /* 32 reasons kept: insufficient GPUs and k00-k30; the ties shown from
     * the last kept back (explain's selection) */
    if (!strstr(v.reason, "12 nodes insufficient") || !strstr(v.reason, "tainted k30; 1 node tainted k29") ||
        strstr(v.reason, "k31"))
        fail_msg("reason: %s", v.reason);
    char first[sizeof v.reason];
    memcpy(first, v.reason, sizeof first);
    for (int i = 0; i < 40; i += 3) { /* other keys: emptied entries reused, order moves */
        snprintf(taint, sizeof taint, "\"taints\":[{\"key\":\"x%02d\",\"effect\":\"NoSchedule\"}]", 39 - i);
        node(&s, name[i], rack[i], 8, i % 2 ? NULL : taint);
        check_all(&s, "taints moved");
    }
    try_gang(&s, &g, &v);
    if (!strcmp(v.reason, first))
        fail_msg("reason after moves unchanged: %s", v.reason);
    /* a reservation over rack r4: its tainted nodes' reason becomes it */
    uint32_t r4 = s.cluster.tree.dom[s.cluster.tree.leaf[tg_cluster_slot(&s.cluster, tg_intern(name[1]), 0)]].parent;
    s.blocks[0] = (struct tg_block){r4, tg_intern("ml/other")};
    s.nblocks = 1;
    check_all(&s, "block over taints");
    try_gang(&s, &g, &v);
    if (!strstr(v.reason, "10 nodes reserved for ml/other"))
        fail_msg("reason with the block: %s", v.reason);
    s.nblocks = 0;
    check_all(&s, "block gone");
    gang_free(&g);
    tg_sched_free(&s);
}

/* A try whose gang the whole cluster cannot hold looks at no domain
 * (tg_sched_gang: no domain holds more than the cluster); one the cluster
 * holds exactly is placed, on every node. */
static void test_cluster_holds_exactly(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    struct gang g;
    gang(&g, "all", NNODES, 8, NULL, 0);
    struct verdict v;
    try_gang(&s, &g, &v);
    if (v.status != TG_GANG_SCHEDULED)
        fail_msg("16 x 8 GPUs on 16 free nodes: %s", v.reason);
    bind(&s, "one", 7, 1);
    try_gang(&s, &g, &v);
    assert_int_equal(v.status, TG_GANG_UNSCHEDULABLE);
    if (!strstr(v.reason, "the cluster holds 15; 1 node insufficient nvidia.com/gpu"))
        fail_msg("reason: %s", v.reason);
    gang_free(&g);
    tg_sched_free(&s);
}

/* Hooks that count the records they hear of. */
struct heard {
    int added, removed;
};

static void heard_added(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    (void)c, (void)u;
    ((struct heard *)ud)->added++;
}

static void heard_removed(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    (void)c, (void)u;
    ((struct heard *)ud)->removed++;
}

/* A what-if's dry run is quiet (tg_cluster_quiet): listeners that skip
 * quiet records (the gang and queue layers) hear neither of its members
 * nor of their removal, others (plugins that read records while counting)
 * hear both; a placement (tg_sched_gang) is heard by both. */
static void test_whatif_quiet(void **st)
{
    (void)st;
    struct tg_sched s;
    cluster(&s);
    struct heard quiet = {0}, loud = {0};
    struct tg_cluster_hooks hq = {.record_added = heard_added, .record_removed = heard_removed,
                                  .ud = &quiet, .skip_quiet = 1};
    struct tg_cluster_hooks hl = {.record_added = heard_added, .record_removed = heard_removed,
                                  .ud = &loud};
    assert_int_equal(tg_cluster_listen(&s.cluster, &hq), 0);
    assert_int_equal(tg_cluster_listen(&s.cluster, &hl), 0);
    struct gang g;
    gang(&g, "four", 4, 8, NULL, 0);
    struct tg_whatif *w;
    assert_int_equal(tg_whatif_begin(&s, &g.g, &w), 0);
    const struct tg_tree *t = &s.cluster.tree;
    uint32_t r1 = tg_tree_ancestor(t, t->leaf[tg_cluster_slot(&s.cluster, tg_intern(nodename[PER_RACK]), 0)], 2);
    int ok = 0;
    assert_int_equal(tg_whatif_fits(w, r1, &ok, NULL), 0);
    assert_int_equal(ok, 1);
    assert_int_equal(tg_whatif_runs(w), 1);
    tg_whatif_end(&w);
    assert_int_equal(loud.added, 4);
    assert_int_equal(loud.removed, 4);
    assert_int_equal(quiet.added, 0);
    assert_int_equal(quiet.removed, 0);
    assert_false(s.cluster.quiet);
    assert_null(tg_cluster_usage(&s.cluster, g.pods[0]->key)); /* taken back */
    struct verdict v;
    try_gang(&s, &g, &v); /* placed (then deleted by try_gang): heard by both */
    assert_int_equal(v.status, TG_GANG_SCHEDULED);
    assert_int_equal(quiet.added, 4);
    assert_int_equal(quiet.removed, 4);
    assert_int_equal(loud.added, 8);
    gang_free(&g);
    tg_sched_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recounts_only_changed),
        cmocka_unit_test(test_changes_decide_as_full),
        cmocka_unit_test(test_blocks_reason),
        cmocka_unit_test(test_reasons_kept),
        cmocka_unit_test(test_slot_without_node),
        cmocka_unit_test(test_whatif_bound_by_counts),
        cmocka_unit_test(test_many_reasons),
        cmocka_unit_test(test_cluster_holds_exactly),
        cmocka_unit_test(test_whatif_quiet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
