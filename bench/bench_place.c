/* Placement benchmark: synthetic GPU clusters and workloads, medians.
 *
 *   bench_place [--nodes N] [--runs R] [--write-yaml FILE] [--no-serving | --serving-only |
 *                --rank-only]
 *
 * Cluster: N nodes (default 10,000) with 8 GPUs, 192 cpu, 2 TiB, 5 levels:
 * zone (4) / block (5 per zone) / rack (20 nodes) / nvlink-domain (4 nodes) /
 * node, and 20 GFD-like labels per node. Measures, with input already loaded:
 *  1. one 256-pod x 8-GPU gang (required block, preferred rack) placed and
 *     rolled back, R times: median and p90 in ms; then the same gang with
 *     ranks (shuffled topogang.io/rank) against none, interleaved, in thread
 *     CPU time (load on the machine counts less): what rank order adds;
 *  2. 2,000 mixed gangs (1 to 512 pods, 1-8 GPUs or cpu-only) placed in
 *     queue order into the empty cluster: pods/s over the whole run, R runs;
 *  3. the model of N nodes + 10 x N bound pods: RSS in MB, and per pod
 *     (measured first, in a fresh process);
 *  4. one 256-pod x 1-GPU gang with "one replica per node" (required
 *     anti-affinity with itself on kubernetes.io/hostname; required block,
 *     preferred rack), placed and rolled back: median and p90 in ms;
 *  5. 2,000 serving gangs (1 to 32 pods, 1-4 GPUs), each one replica per
 *     node, a quarter also spread over zones (DoNotSchedule, maxSkew 1),
 *     placed in queue order into the empty cluster: pods/s.
 * --write-yaml writes the cluster, 10 x N bound pods and the 2,000 gangs as
 * Kubernetes YAML, to time `topogang simulate` end to end. --no-serving
 * skips 4 and 5 (the workload of the figures before them, for callgrind);
 * --serving-only runs only 4 and 5; --rank-only only 3 and 1. */
#include "config/policy.h"
#include "model/objects.h"
#include "scheduler/cycle.h"
#include "util/intern.h"
#include "util/strbuf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

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

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- generators (YAML text; the same text feeds the model and simulate) -- */

static void node_yaml(struct tg_sb *b, uint32_t i)
{
    uint32_t zone = i / 2500, block = i / 500 % 5, rack = i / 20 % 25, clique = i / 4;
    tg_sb_printf(b, "---\nkind: Node\nmetadata:\n  name: node-%05u\n  labels:\n"
                    "    kubernetes.io/hostname: node-%05u\n    kubernetes.io/arch: amd64\n"
                    "    kubernetes.io/os: linux\n    node.kubernetes.io/instance-type: a3-megagpu-8g\n"
                    "    topology.kubernetes.io/region: us-central1\n"
                    "    topology.kubernetes.io/zone: zone-%u\n"
                    "    cloud.google.com/gce-topology-block: block-%u-%u\n"
                    "    topogang.io/rack: rack-%u-%u-%02u\n    nvidia.com/gpu.clique: clique-%05u\n"
                    "    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n    nvidia.com/gpu.count: \"8\"\n"
                    "    nvidia.com/gpu.memory: \"81559\"\n    nvidia.com/gpu.family: hopper\n"
                    "    nvidia.com/cuda.driver.major: \"550\"\n    nvidia.com/mig.capable: \"true\"\n"
                    "    nvidia.com/gpu.present: \"true\"\n    feature.node.kubernetes.io/rdma.available: \"true\"\n"
                    "    node-role.kubernetes.io/gpu: \"\"\n    pool: training\n"
                    "status:\n  allocatable: {cpu: \"192\", memory: 2015Gi, pods: \"110\", "
                    "nvidia.com/gpu: \"8\", rdma/hca_shared_devices_a: \"8\", ephemeral-storage: 3Ti}\n"
                    "  conditions: [{type: Ready, status: \"True\"}]\n",
                 i, i, zone, zone, block, zone, block, rack, clique);
}

/* A small bound pod (daemon-like: cpu and memory) on node i. */
static void bound_pod_yaml(struct tg_sb *b, uint32_t k, uint32_t node)
{
    tg_sb_printf(b, "---\nkind: Pod\nmetadata: {name: svc-%06u, namespace: tenant-%u, uid: 6f1c%08u}\n"
                    "spec:\n  nodeName: node-%05u\n  containers:\n  - name: main\n"
                    "    resources: {requests: {cpu: 250m, memory: 512Mi}}\nstatus: {phase: Running}\n",
                 k, k % 50, k, node);
}

struct gangspec {
    uint32_t size, gpus, cpu_only;
};

static void make_gangs(struct gangspec *g, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t e = rnd(10); /* sizes 1, 2, 4 ... 512, uniform over powers */
        g[i].size = (1u << e) - (e > 1 ? rnd(1u << (e - 1)) : 0);
        g[i].cpu_only = rnd(4) == 0;
        g[i].gpus = g[i].size >= 16 ? 8 : (uint32_t[]){1, 2, 4, 8}[rnd(4)];
    }
}

/* The pod spec lines of a serving gang: one replica per node, and with
 * spread, an even spread over zones. */
static void serving_yaml(struct tg_sb *b, uint32_t id, int spread)
{
    tg_sb_printf(b, "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                    "      - labelSelector: {matchLabels: {app: job-%04u}}\n"
                    "        topologyKey: kubernetes.io/hostname\n", id);
    if (spread)
        tg_sb_printf(b, "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, "
                        "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: job-%04u}}}\n", id);
}

/* serving: 0 a training gang; 1 one replica per node; 2 and spread over zones. */
static void gang_yaml_as(struct tg_sb *b, uint32_t id, const struct gangspec *g, int serving)
{
    tg_sb_printf(b, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
                    "metadata: {name: job-%04u, namespace: ml, creationTimestamp: \"2026-11-01T%02u:%02u:%02uZ\"}\n"
                    "spec: {minMember: %u, topology: {required: %s, preferred: %s}}\n",
                 id, id / 3600, id / 60 % 60, id % 60, g->size,
                 g->size > 128 ? "zone" : "block", g->size > 16 ? "rack" : "nvlink-domain");
    for (uint32_t k = 0; k < g->size; k++) {
        tg_sb_printf(b, "---\nkind: Pod\nmetadata: {name: job-%04u-%u, namespace: ml, "
                        "labels: {topogang.io/pod-group: job-%04u",
                     id, k, id);
        if (serving)
            tg_sb_printf(b, ", app: job-%04u", id);
        tg_sb_puts(b, "}}\nspec:\n  schedulerName: topogang\n");
        if (serving)
            serving_yaml(b, id, serving > 1);
        tg_sb_puts(b, "  containers:\n  - name: main\n");
        if (g->cpu_only)
            tg_sb_puts(b, "    resources: {requests: {cpu: \"8\", memory: 32Gi}}\n");
        else
            tg_sb_printf(b, "    resources: {requests: {cpu: \"%u\", memory: %uGi, nvidia.com/gpu: %u}}\n",
                         g->gpus * 12, g->gpus * 100, g->gpus);
    }
}

static void gang_yaml(struct tg_sb *b, uint32_t id, const struct gangspec *g)
{
    gang_yaml_as(b, id, g, 0);
}

/* Decodes every document of a YAML text into the scheduler's model, or into
 * a pod list for pending pods. Uses the library's YAML reader. */
#include "util/yamljson.h"

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
    } else if (!strcmp(kind, "Pod")) {
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

static void load(struct loadctx *x, const struct tg_sb *b)
{
    struct tg_sb err = {0};
    if (tg_yaml_parse(b->s, b->len, "bench", on_doc, x, &err)) {
        fprintf(stderr, "%s\n", tg_sb_str(&err));
        exit(1);
    }
}

static void build_cluster(struct tg_sched *s, const struct tg_policy *pol, uint32_t nodes)
{
    tg_sched_init(s, pol);
    struct tg_sb b = {0};
    struct loadctx x = {s, NULL, 0};
    for (uint32_t i = 0; i < nodes; i++) {
        node_yaml(&b, i);
        if (b.len > (8u << 20)) {
            load(&x, &b);
            tg_sb_reset(&b);
        }
    }
    load(&x, &b);
    tg_sb_free(&b);
}

static void rollback(struct tg_sched *s, struct tg_pod **pods, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        tg_cluster_pod_delete(&s->cluster, pods[i]->key);
}

/* 1b. the same gang with ranks (shuffled, as topogang.io/rank gives them)
 * against none, runs interleaved: what rank order adds (scheduler/rank.h). */
static int bench_ranked(struct tg_sched *s, struct tg_gang *g, uint32_t runs, uint32_t nodes)
{
    uint32_t n = g->npods, *perm = calloc(n, sizeof *perm);
    double *t[2] = {calloc(runs * 4 + 8, sizeof(double)), calloc(runs * 4 + 8, sizeof(double))};
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = rnd(i + 1), k = perm[i];
        perm[i] = perm[j], perm[j] = k;
    }
    for (uint32_t r = 0; r < runs * 4; r++)
        for (int ranked = 0; ranked < 2; ranked++) {
            for (uint32_t i = 0; i < n; i++)
                g->pods[i]->rank = ranked ? 1 + perm[i] : 0;
            struct tg_result res;
            double t0 = cpu_ms();
            tg_sched_gang(s, g, &res);
            t[ranked][r] = cpu_ms() - t0;
            if (res.status != TG_GANG_SCHEDULED || res.nplaced != n) {
                fprintf(stderr, "big gang not placed: %s\n", res.reason);
                return 1;
            }
            tg_result_free(&res);
            rollback(s, g->pods, n);
        }
    qsort(t[0], runs * 4, sizeof(double), cmp_d);
    qsort(t[1], runs * 4, sizeof(double), cmp_d);
    printf("256-pod x 8-GPU gang on %u nodes, ranks shuffled: CPU median %.3f ms against %.3f ms "
           "without (%+.1f%%), p90 %.3f against %.3f ms (%u runs each, interleaved)\n",
           nodes, t[1][runs * 2], t[0][runs * 2], 100.0 * (t[1][runs * 2] / t[0][runs * 2] - 1),
           t[1][runs * 4 * 9 / 10], t[0][runs * 4 * 9 / 10], runs * 4);
    for (uint32_t i = 0; i < n; i++)
        g->pods[i]->rank = 0;
    free(perm);
    free(t[0]);
    free(t[1]);
    return 0;
}

/* 4 and 5: gangs whose members keep one per node (and spread over zones). */
static void bench_serving(const struct tg_policy *pol, uint32_t nodes, uint32_t runs)
{
    struct tg_sched s;
    build_cluster(&s, pol, nodes);
    struct tg_sb b = {0};
    struct gangspec one = {256, 1, 0};
    gang_yaml_as(&b, 9998, &one, 1);
    struct tg_pod *pending[300];
    struct loadctx x = {&s, pending, 0};
    load(&x, &b);
    tg_sb_free(&b);
    struct tg_podgroup pg = {.min_member = 256, .required = tg_intern("block"),
                             .preferred = tg_intern("rack"), .key = "ml/job-9998"};
    struct tg_gang g = {.name = "ml/job-9998", .pg = &pg, .pods = pending, .npods = 256,
                        .anchor = TG_NONE};
    double *t = calloc(runs * 4 + 8, sizeof *t);
    for (uint32_t r = 0; r < runs * 4; r++) {
        struct tg_result res;
        double t0 = now_ms();
        tg_sched_gang(&s, &g, &res);
        t[r] = now_ms() - t0;
        if (res.status != TG_GANG_SCHEDULED || res.nplaced != 256) {
            fprintf(stderr, "serving gang not placed: %s\n", res.reason);
            exit(1);
        }
        tg_result_free(&res);
        rollback(&s, pending, 256);
    }
    qsort(t, runs * 4, sizeof *t, cmp_d);
    printf("256-pod x 1-GPU gang, one replica per node, on %u nodes: median %.2f ms, p90 %.2f ms (%u runs)\n",
           nodes, t[runs * 2], t[runs * 4 * 9 / 10], runs * 4);
    for (uint32_t i = 0; i < x.npending; i++)
        tg_pod_free(&pending[i]);
    tg_sched_free(&s);
    free(t);

    enum { NSERVING = 2000 };
    static struct gangspec sv[NSERVING];
    uint32_t total = 0;
    for (uint32_t i = 0; i < NSERVING; i++) {
        uint32_t e = rnd(6);
        sv[i] = (struct gangspec){(1u << e) - (e > 1 ? rnd(1u << (e - 1)) : 0), (uint32_t[]){1, 1, 2, 4}[rnd(4)], 0};
        total += sv[i].size;
    }
    struct tg_pod **all = calloc(total + 1, sizeof *all);
    struct tg_podgroup *pgs = calloc(NSERVING, sizeof *pgs);
    double *rate = calloc(runs + 1, sizeof *rate);
    uint32_t placed = 0, gsched = 0;
    for (uint32_t r = 0; r < runs; r++) {
        build_cluster(&s, pol, nodes);
        struct loadctx lx = {&s, all, 0};
        struct tg_sb gb = {0};
        for (uint32_t i = 0; i < NSERVING; i++)
            gang_yaml_as(&gb, i, &sv[i], i % 4 == 0 ? 2 : 1);
        load(&lx, &gb);
        tg_sb_free(&gb);
        placed = gsched = 0;
        double t0 = now_ms();
        uint32_t off = 0;
        for (uint32_t i = 0; i < NSERVING; i++) {
            pgs[i] = (struct tg_podgroup){.min_member = (int32_t)sv[i].size,
                                          .required = i % 4 == 0 ? 0 : tg_intern(sv[i].size > 16 ? "zone" : "block"),
                                          .preferred = tg_intern("rack"), .key = "bench"};
            struct tg_gang gg = {.name = "bench", .pg = &pgs[i], .pods = all + off,
                                 .npods = sv[i].size, .anchor = TG_NONE};
            struct tg_result res;
            tg_sched_gang(&s, &gg, &res);
            if (res.status == TG_GANG_SCHEDULED) {
                placed += res.nplaced;
                gsched++;
            }
            tg_result_free(&res);
            off += sv[i].size;
        }
        rate[r] = placed / ((now_ms() - t0) / 1e3);
        for (uint32_t i = 0; i < total; i++)
            tg_pod_free(&all[i]);
        tg_sched_free(&s);
    }
    qsort(rate, runs, sizeof *rate, cmp_d);
    printf("2,000 serving gangs (%u pods, 1-32 per gang, one replica per node, 1/4 spread over zones): "
           "%u gangs / %u pods placed, median %.0f pods/s (min %.0f, max %.0f)\n",
           total, gsched, placed, rate[runs / 2], rate[0], rate[runs - 1]);
    free(all);
    free(pgs);
    free(rate);
}

int main(int argc, char **argv)
{
    uint32_t nodes = 10000, runs = 7;
    int serving = 1;
    const char *yaml_out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--write-yaml") && i + 1 < argc)
            yaml_out = argv[++i];
        else if (!strcmp(argv[i], "--no-serving"))
            serving = 0;
        else if (!strcmp(argv[i], "--serving-only"))
            serving = 2;
        else if (!strcmp(argv[i], "--rank-only"))
            serving = 3;
        else {
            fprintf(stderr, "usage: bench_place [--nodes N] [--runs R] [--write-yaml FILE] "
                            "[--no-serving | --serving-only | --rank-only]\n");
            return 2;
        }
    }
    struct tg_policy pol;
    tg_policy_default(&pol);
    enum { NGANGS = 2000 };
    static struct gangspec gangs[NGANGS];
    make_gangs(gangs, NGANGS);

    if (yaml_out) {
        FILE *f = fopen(yaml_out, "w");
        if (!f)
            return 1;
        struct tg_sb b = {0};
        for (uint32_t i = 0; i < nodes; i++) {
            node_yaml(&b, i);
            for (uint32_t k = 0; k < 10; k++)
                bound_pod_yaml(&b, i * 10 + k, i);
            if (b.len > (8u << 20)) {
                fwrite(b.s, 1, b.len, f);
                tg_sb_reset(&b);
            }
        }
        for (uint32_t g = 0; g < NGANGS; g++) {
            gang_yaml(&b, g, &gangs[g]);
            if (b.len > (8u << 20)) {
                fwrite(b.s, 1, b.len, f);
                tg_sb_reset(&b);
            }
        }
        fwrite(b.s, 1, b.len, f);
        fclose(f);
        tg_sb_free(&b);
        printf("wrote %s: %u nodes, %u bound pods, %u gangs\n", yaml_out, nodes, nodes * 10, NGANGS);
        return 0;
    }

    printf("cluster: %u nodes x 8 GPUs, levels zone/block/rack/nvlink-domain/node; %u runs\n", nodes, runs);
    if (serving == 2) {
        bench_serving(&pol, nodes, runs);
        return 0;
    }

    struct tg_sched s;
    /* 3. model memory: N nodes + 10 N bound pods */
    long before = rss_kb();
    build_cluster(&s, &pol, nodes);
    struct tg_sb pb = {0};
    struct loadctx px = {&s, NULL, 0};
    for (uint32_t k = 0; k < nodes * 10; k++) {
        bound_pod_yaml(&pb, k, k % nodes);
        if (pb.len > (8u << 20)) {
            load(&px, &pb);
            tg_sb_reset(&pb);
        }
    }
    load(&px, &pb);
    tg_sb_free(&pb);
    long after = rss_kb();
    printf("model of %u nodes + %u bound pods: %.1f MB RSS for the model (%.1f MB process), "
           "%.0f bytes per pod incl. its node share\n",
           nodes, nodes * 10, (after - before) / 1024.0, after / 1024.0,
           (after - before) * 1024.0 / (nodes * 10));
    tg_sched_free(&s);

    /* 1. one 256 x 8-GPU gang */
    build_cluster(&s, &pol, nodes);
    struct tg_sb b = {0};
    struct gangspec big = {256, 8, 0};
    gang_yaml(&b, 9999, &big);
    struct tg_pod *pending[600];
    struct loadctx x = {&s, pending, 0};
    load(&x, &b);
    tg_sb_free(&b);
    struct tg_podgroup pg = {.min_member = 256, .required = tg_intern("block"),
                             .preferred = tg_intern("rack"), .key = "ml/job-9999"};
    struct tg_gang g = {.name = "ml/job-9999", .pg = &pg, .pods = pending, .npods = 256,
                        .anchor = TG_NONE};
    double *t = calloc(runs * 4 + 8, sizeof *t);
    for (uint32_t r = 0; r < runs * 4; r++) {
        struct tg_result res;
        double t0 = now_ms();
        tg_sched_gang(&s, &g, &res);
        t[r] = now_ms() - t0;
        if (res.status != TG_GANG_SCHEDULED || res.nplaced != 256) {
            fprintf(stderr, "big gang not placed: %s\n", res.reason);
            return 1;
        }
        tg_result_free(&res);
        rollback(&s, pending, 256);
    }
    qsort(t, runs * 4, sizeof *t, cmp_d);
    printf("256-pod x 8-GPU gang on %u nodes: median %.2f ms, p90 %.2f ms (%u runs)\n", nodes,
           t[runs * 2], t[runs * 4 * 9 / 10], runs * 4);
    if (bench_ranked(&s, &g, runs, nodes))
        return 1;
    if (serving == 3)
        return 0;
    for (uint32_t i = 0; i < x.npending; i++)
        tg_pod_free(&pending[i]);
    tg_sched_free(&s);

    /* 2. 2,000 mixed gangs, queue order, into the empty cluster */
    uint32_t total = 0;
    for (uint32_t i = 0; i < NGANGS; i++)
        total += gangs[i].size;
    struct tg_pod **all = calloc(total + 1, sizeof *all);
    struct tg_podgroup *pgs = calloc(NGANGS, sizeof *pgs);
    double *rate = calloc(runs + 1, sizeof *rate);
    uint32_t placed = 0, gsched = 0;
    for (uint32_t r = 0; r < runs; r++) {
        build_cluster(&s, &pol, nodes);
        struct loadctx lx = {&s, all, 0};
        struct tg_sb gb = {0};
        for (uint32_t i = 0; i < NGANGS; i++)
            gang_yaml(&gb, i, &gangs[i]);
        load(&lx, &gb);
        tg_sb_free(&gb);
        placed = gsched = 0;
        double t0 = now_ms();
        uint32_t off = 0;
        for (uint32_t i = 0; i < NGANGS; i++) {
            pgs[i] = (struct tg_podgroup){.min_member = (int32_t)gangs[i].size,
                                          .required = tg_intern(gangs[i].size > 128 ? "zone" : "block"),
                                          .preferred = tg_intern(gangs[i].size > 16 ? "rack" : "nvlink-domain"),
                                          .key = "bench"};
            struct tg_gang gg = {.name = "bench", .pg = &pgs[i], .pods = all + off,
                                 .npods = gangs[i].size, .anchor = TG_NONE};
            struct tg_result res;
            tg_sched_gang(&s, &gg, &res);
            if (res.status == TG_GANG_SCHEDULED) {
                placed += res.nplaced;
                gsched++;
            }
            tg_result_free(&res);
            off += gangs[i].size;
        }
        double ms = now_ms() - t0;
        rate[r] = placed / (ms / 1e3);
        for (uint32_t i = 0; i < total; i++)
            tg_pod_free(&all[i]);
        tg_sched_free(&s);
    }
    qsort(rate, runs, sizeof *rate, cmp_d);
    printf("2,000 mixed gangs (%u pods, 1-512 per gang): %u gangs / %u pods placed, "
           "median %.0f pods/s (min %.0f, max %.0f)\n",
           total, gsched, placed, rate[runs / 2], rate[0], rate[runs - 1]);
    tg_sched_free(&s);
    free(all);
    free(pgs);
    free(rate);
    free(t);
    if (serving)
        bench_serving(&pol, nodes, runs);
    return 0;
}
