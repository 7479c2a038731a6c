/* Sub-group placement benchmark (issue 20), medians.
 *
 *   bench_subgroup [--nodes N] [--runs R] [--volcano]
 *
 * Cluster: N nodes (default 10,000) of 4 GPUs; zone (4 blocks) / block (32
 * NVLink domains, 576 nodes) / rack = nvlink-domain (18 nodes) / node.
 * Every block but the last full one has one domain with 3 nodes taken (a
 * bound 4-GPU pod each): by count it holds the gang, but that domain fits
 * only 3 sub-groups, so the joint search rejects it (those blocks are the
 * tightest, tried first). Gang: 1,024 pods x 2 GPUs, spec.subGroupSize 8
 * (ranks from topogang.io/rank), each sub-group `required: nvlink-domain`,
 * the gang `required: block`: 128 sub-groups, 4 per domain, the whole of
 * one block. Measures tg_sched_gang (the core: count, search, fill) placed
 * and rolled back R times. --volcano: the same gang as a Volcano PodGroup's
 * spec.subGroupPolicy (one entry, subGroupSize 8, matchLabelKeys [part],
 * pods labelled part: <rank / 8>; the 128 sub-groups listed as the gang
 * layer lists them), so each member's sub-group is found by its labels. */
#include "config/policy.h"
#include "model/objects.h"
#include "model/workload.h"
#include "scheduler/cycle.h"
#include "util/intern.h"
#include "util/strbuf.h"
#include "util/yamljson.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PER_DOM = 18, DOMS_PER_BLOCK = 32, BLOCKS_PER_ZONE = 4, GANG = 1024, SIZE = 8 };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void node_yaml(struct tg_sb *b, uint32_t i)
{
    uint32_t dom = i / PER_DOM, block = dom / DOMS_PER_BLOCK, zone = block / BLOCKS_PER_ZONE;
    tg_sb_printf(b, "---\nkind: Node\nmetadata:\n  name: node-%05u\n  labels:\n"
                    "    kubernetes.io/hostname: node-%05u\n    topology.kubernetes.io/zone: zone-%u\n"
                    "    cloud.google.com/gce-topology-block: block-%u\n    topogang.io/rack: rack-%u\n"
                    "    nvidia.com/gpu.clique: clique-%u\n"
                    "status:\n  allocatable: {cpu: \"144\", memory: 900Gi, pods: \"110\", "
                    "nvidia.com/gpu: \"4\"}\n  conditions: [{type: Ready, status: \"True\"}]\n",
                 i, i, zone, block, dom, dom);
}

struct loadctx {
    struct tg_sched *s;
    struct tg_pod **pending;
    uint32_t npending;
};

static int on_doc(void *ud, cJSON *root, const struct tg_yaml_lines *l)
{
    (void)l;
    struct loadctx *x = ud;
    const char *kind = cJSON_GetObjectItem(root, "kind")->valuestring;
    if (!strcmp(kind, "Node")) {
        struct tg_node_obj *n;
        if (tg_node_decode(root, NULL, &n) || tg_cluster_node_set(&x->s->cluster, n))
            abort();
    } else {
        struct tg_pod *p;
        if (tg_pod_decode(root, TG_DECODE_SPEC, NULL, &p))
            abort();
        if (p->node) {
            tg_cluster_pod_update(&x->s->cluster, p);
            tg_pod_free(&p);
        } else {
            x->pending[x->npending++] = p;
        }
    }
    cJSON_Delete(root);
    return 0;
}

static void load(struct loadctx *x, struct tg_sb *b)
{
    struct tg_sb err = {0};
    if (tg_yaml_parse(b->s, b->len, "bench", on_doc, x, &err)) {
        fprintf(stderr, "%s\n", tg_sb_str(&err));
        exit(1);
    }
    tg_sb_reset(b);
}

int main(int argc, char **argv)
{
    uint32_t nodes = 10000, runs = 15;
    int volcano = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--volcano"))
            volcano = 1;
        else {
            fprintf(stderr, "usage: bench_subgroup [--nodes N] [--runs R] [--volcano]\n");
            return 2;
        }
    }
    struct tg_policy pol;
    tg_policy_default(&pol);
    struct tg_sched s;
    tg_sched_init(&s, &pol);
    static struct tg_pod *pending[GANG];
    struct loadctx x = {&s, pending, 0};
    struct tg_sb b = {0};
    uint32_t per_block = PER_DOM * DOMS_PER_BLOCK, full = nodes / per_block;
    for (uint32_t i = 0; i < nodes; i++) {
        node_yaml(&b, i);
        uint32_t blk = i / per_block, at = i % per_block;
        if (blk + 1 < full && at >= 5 * PER_DOM && at < 5 * PER_DOM + 3)
            tg_sb_printf(&b, "---\nkind: Pod\nmetadata: {name: busy-%05u, namespace: other}\n"
                             "spec:\n  nodeName: node-%05u\n  containers:\n  - name: c\n"
                             "    resources: {requests: {nvidia.com/gpu: 4}}\nstatus: {phase: Running}\n",
                         i, i);
        if (b.len > (8u << 20))
            load(&x, &b);
    }
    for (uint32_t r = 0; r < GANG; r++)
        tg_sb_printf(&b, "---\nkind: Pod\nmetadata:\n  name: w-%04u\n  namespace: ml\n  labels: "
                         "{topogang.io/pod-group: tp, topogang.io/rank: \"%u\", part: \"%u\"}\n"
                         "spec:\n  schedulerName: topogang\n  containers:\n  - name: c\n"
                         "    resources: {requests: {nvidia.com/gpu: 2}}\n", r, r, r / SIZE);
    load(&x, &b);
    tg_sb_free(&b);
    struct tg_podgroup pg = {.min_member = GANG, .required = tg_intern("block"), .key = "ml/tp",
                             .sub_size = SIZE,
                             .sub_topo = {.min_member = SIZE, .required = tg_intern("nvlink-domain")}};
    static struct tg_subgroup subs[GANG / SIZE];
    uint32_t part = tg_intern("part");
    struct tg_sgpolicy sp = {.name = tg_intern("part"), .size = SIZE, .keys = &part, .nkeys = 1,
                             .tier_hard = 1, .tier = 1};
    if (volcano) { /* what scheduler/gang.c's volcano_subs makes of it */
        char name[32];
        for (uint32_t k = 0; k < GANG / SIZE; k++) {
            snprintf(name, sizeof name, "part-%u", k);
            subs[k] = (struct tg_subgroup){tg_intern(name), SIZE, tg_intern("nvlink-domain"), 0};
        }
        pg.sub_size = 0;
        pg.subs = subs;
        pg.nsubs = GANG / SIZE;
        pg.sgpol = &sp;
        pg.nsgpol = 1;
        pg.sub_by = TG_SUB_BY_VOLCANO;
        pg.api = TG_PG_VOLCANO;
    }
    struct tg_gang g = {.name = "ml/tp", .pg = &pg, .pods = pending, .npods = x.npending,
                        .anchor = TG_NONE, .within = TG_NONE};
    double *t = calloc(runs + 1, sizeof *t), *cpu = calloc(runs + 1, sizeof *cpu);
    char path[256] = "";
    for (uint32_t r = 0; r < runs; r++) {
        struct tg_result res;
        double t0 = now_ms(), c0 = cpu_ms();
        tg_sched_gang(&s, &g, &res);
        t[r] = now_ms() - t0;
        cpu[r] = cpu_ms() - c0;
        if (res.status != TG_GANG_SCHEDULED || res.nplaced != GANG || res.nsub != GANG / SIZE) {
            fprintf(stderr, "gang not placed: %s\n", res.reason);
            return 1;
        }
        tg_tree_path(&s.cluster.tree, res.domain, path, sizeof path);
        tg_result_free(&res);
        for (uint32_t i = 0; i < GANG; i++)
            tg_cluster_pod_delete(&s.cluster, pending[i]->key);
    }
    qsort(t, runs, sizeof *t, cmp_d);
    qsort(cpu, runs, sizeof *cpu, cmp_d);
    printf("1,024-pod gang of 128 sub-groups of 8%s (required nvlink-domain, gang required block) on "
           "%u nodes, %u blocks rejected by the joint search first: median %.2f ms, p90 %.2f ms "
           "(thread CPU: median %.2f ms; %u runs; placed in %s)\n",
           volcano ? " by Volcano's subGroupPolicy" : "", nodes, full > 1 ? full - 1 : 0,
           t[runs / 2], t[runs * 9 / 10], cpu[runs / 2], runs, path);
    for (uint32_t i = 0; i < x.npending; i++)
        tg_pod_free(&pending[i]);
    free(t);
    free(cpu);
    tg_sched_free(&s);
    return 0;
}
