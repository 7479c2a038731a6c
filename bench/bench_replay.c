/* Replay benchmark: `simulate --replay` on a synthetic trace, medians.
 *
 *   bench_replay [--nodes N] [--gangs G] [--load L] [--queues Q] [--runs R]
 *                [--ranks] [--sub-size N] [--write-yaml FILE]
 *
 * Cluster: N nodes (default 1,000) of 8 GPUs in 2 zones / 5 blocks per zone
 * / racks of 10 nodes / NVLink domains of 5 nodes / node. Trace: G gangs
 * (default 10,000) of 5 pods on average (sizes cycle 1, 1, 1, 1, 2, 2, 4,
 * 8, 16, 14: 50,000 pods for 10,000 gangs), arriving at a rate that asks
 * for L of the GPUs (--load, default 0.75: busy, with queues, preemptions
 * and reservations; 0.8 saturates the cluster for days); gangs of 2 or more
 * pods take 8 GPUs per pod, need one rack (more than 10 pods: one block)
 * and prefer an NVLink domain; single pods take 1 to 4 GPUs. Priorities:
 * 5% high, 70% normal, 25% low (so some preempt); run times 10 minutes to
 * 4 hours. --queues Q (default 0: none) adds Q tenant Queues (topogang.io,
 * q0..q<Q-1>) whose nvidia.com/gpu quotas are equal and add up to the
 * cluster's GPUs, and puts gang g in queue q<g mod Q> (label
 * topogang.io/queue on its pods).
 *
 * --ranks gives every gang's members topogang.io/rank (in reverse of their
 * order), --sub-size N (ranks implied) also slices each gang of a multiple
 * of N pods into sub-groups of N, each required in one NVLink domain: what
 * rank order and sub-groups cost in wait and gain in crossings (the
 * summary's "rank order" line, scheduler/rank.h).
 *
 * Each run reads the YAML text (generated in memory once) into a fresh
 * model and replays it to the end; prints the median and range of the load,
 * replay and total wall times and of the CPU time (user + system: less
 * disturbed by a busy machine) over R runs (default 3), what the replay did,
 * and the process's peak RSS (the input text and the last run's state
 * included). --write-yaml writes the trace, to time the command itself:
 *   time build/topogang simulate --replay -q -f FILE -o json >/dev/null */
#include "config/policy.h"
#include "scheduler/sim/load.h"
#include "scheduler/sim/replay.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- the trace ---------------------------------------------------------------- */

static void node_yaml(struct tg_sb *b, uint32_t i)
{
    uint32_t zone = i / 500, block = i / 100 % 5, rack = i / 10 % 10, clique = i / 5;
    tg_sb_printf(b, "---\nkind: Node\nmetadata:\n  name: node-%04u\n  labels:\n"
                    "    kubernetes.io/hostname: node-%04u\n"
                    "    topology.kubernetes.io/zone: zone-%u\n"
                    "    cloud.google.com/gce-topology-block: block-%u-%u\n"
                    "    topogang.io/rack: rack-%u-%u-%u\n    nvidia.com/gpu.clique: clique-%04u\n"
                    "status:\n  allocatable: {cpu: \"192\", memory: 2015Gi, pods: \"110\", "
                    "nvidia.com/gpu: \"8\"}\n",
                 i, i, zone, zone, block, zone, block, rack, clique);
}

static const char *stamp(double secs, char *buf, size_t n)
{
    long s = (long)secs;
    snprintf(buf, n, "2026-03-%02ldT%02ld:%02ld:%02ldZ", 2 + s / 86400, s / 3600 % 24, s / 60 % 60,
             s % 60);
    return buf;
}

static const char *prio_of(uint32_t g)
{
    uint32_t x = g * 2654435761u % 100;
    return x < 5 ? "high" : x < 75 ? "normal" : "low";
}

static uint32_t nqueues;
static int ranked;                      /* --ranks: gang members carry topogang.io/rank */
static uint32_t sub_size;               /* --sub-size N: gangs of a multiple of N pods get
                                           subGroupSize N, each sub-group required in one
                                           NVLink domain */

static void gang_yaml(struct tg_sb *b, uint32_t g, uint32_t size, double t)
{
    char qlabel[48] = "";
    if (nqueues)
        snprintf(qlabel, sizeof qlabel, "topogang.io/queue: q%u", g % nqueues);
    static const uint32_t runs[] = {600, 1200, 1800, 3600, 5400, 7200, 10800, 14400};
    char ts[48];
    const char *prio = prio_of(g);
    uint32_t run = runs[rnd(8)], gpus = size > 1 ? 8 : 1 + rnd(4);
    stamp(t, ts, sizeof ts);
    char subs[96] = "";
    if (sub_size && size % sub_size == 0)
        snprintf(subs, sizeof subs, ", subGroupSize: %u, subGroupTopology: {required: nvlink-domain}",
                 sub_size);
    if (size > 1)
        tg_sb_printf(b, "---\napiVersion: topogang.io/v1alpha1\nkind: PodGroup\n"
                        "metadata: {name: g%05u, namespace: ml, creationTimestamp: \"%s\"}\n"
                        "spec: {minMember: %u, priorityClassName: %s, scheduleTimeoutSeconds: 3600, "
                        "topology: {required: %s, preferred: nvlink-domain}%s}\n",
                     g, ts, size, prio, size > 10 ? "block" : "rack", subs);
    for (uint32_t i = 0; i < size; i++) {
        tg_sb_printf(b, "---\nkind: Pod\nmetadata:\n  name: g%05u-%u\n  namespace: ml\n"
                        "  creationTimestamp: \"%s\"\n", g, i, ts);
        char rank[48] = "";
        if (ranked || sub_size) /* in reverse of the pods' order: the layout has work to do */
            snprintf(rank, sizeof rank, ", topogang.io/rank: \"%u\"", size - 1 - i);
        if (size > 1)
            tg_sb_printf(b, "  labels: {topogang.io/pod-group: g%05u%s%s%s}\n", g,
                         nqueues ? ", " : "", qlabel, rank);
        else if (nqueues)
            tg_sb_printf(b, "  labels: {%s}\n", qlabel);
        tg_sb_printf(b, "  annotations: {simulate.topogang.io/duration: \"%u\"}\n"
                        "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: g%05u, "
                        "uid: u%05u, controller: true}]\n"
                        "spec:\n  schedulerName: topogang\n  priorityClassName: %s\n"
                        "  containers: [{name: c, resources: {requests: {nvidia.com/gpu: %u, "
                        "cpu: \"%u\", memory: %uGi}}}]\n",
                     run, g, g, prio, gpus, gpus * 12, gpus * 100);
    }
}

/* The whole trace; *npods receives the number of pods. */
static void trace_yaml(struct tg_sb *b, uint32_t nodes, uint32_t gangs, double load,
                       uint32_t *npods)
{
    static const uint32_t sizes[] = {1, 1, 1, 1, 2, 2, 4, 8, 16, 14};
    tg_sb_puts(b, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                  "metadata: {name: high}\nvalue: 1000\n"
                  "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                  "metadata: {name: normal}\nvalue: 100\n"
                  "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                  "metadata: {name: low}\nvalue: 10\n");
    for (uint32_t i = 0; i < nodes; i++)
        node_yaml(b, i);
    for (uint32_t q = 0; q < nqueues; q++) /* equal quotas adding up to the GPUs */
        tg_sb_printf(b, "---\napiVersion: topogang.io/v1alpha1\nkind: Queue\nmetadata: {name: q%u}\n"
                        "spec: {resources: {nvidia.com/gpu: {quota: \"%u\"}}}\n",
                     q, 8 * nodes / nqueues + (q < 8 * nodes % nqueues));
    /* about 37.6 GPUs x 1.3 h per gang: gaps that ask for `load` of the GPUs */
    double gap = 37.6 * 4700.0 / (load * 8.0 * nodes), t = 0;
    *npods = 0;
    for (uint32_t g = 0; g < gangs; g++) {
        gang_yaml(b, g, sizes[g % 10], t);
        *npods += sizes[g % 10];
        t += gap * (0.5 + rnd(1000) / 1000.0);
    }
}

/* ---- the runs ------------------------------------------------------------------------ */

struct run {
    double load, replay, total, cpu;
};

/* CPU time of this process so far (user + system), ms. */
static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
           ru.ru_stime.tv_usec / 1e3;
}

static int one(const char *yaml, size_t n, const struct tg_policy *pol, struct run *out,
               int verbose)
{
    struct tg_simdata d;
    struct tg_sb err = {0};
    tg_simdata_init(&d);
    d.quiet = 1;
    double c0 = cpu_ms(), t0 = now_ms();
    int rc = tg_simdata_load_string(&d, yaml, n, "bench", &err);
    double t1 = now_ms();
    struct tg_replay_opts o = {.until_ms = -1};
    struct tg_replay *r = rc ? NULL : tg_replay_new(&d, pol, &o);
    if (!r || tg_replay_run(r)) {
        fprintf(stderr, "bench_replay: %s\n", err.len ? tg_sb_str(&err) : "failed");
        rc = 1;
    }
    double t2 = now_ms();
    if (!rc && verbose) {
        const struct tg_replay_summary *s = tg_replay_summary(r);
        printf("replayed %u gangs (%u pods) on %u nodes over %.1f virtual hours: %u completed; "
               "%llu attempts, %llu events; %u preemptions (%u reclaims, %u victim pods), "
               "%u reservations, "
               "%u timed out; wait p50 %.0f s, p90 %.0f s, p99 %.0f s\n",
               s->gangs, s->pods, d.nnodes, s->end_s / 3600, s->completed,
               (unsigned long long)s->attempts, (unsigned long long)s->events, s->preemptions,
               s->reclaims, s->victim_pods, s->reservations, s->timed_out, s->wait_p50, s->wait_p90,
               s->wait_p99);
        if (s->rank.pairs) {
            const char *names[TG_MAX_LEVELS + 1];
            uint32_t counts[TG_MAX_LEVELS + 1], nl = tg_rank_by_level(pol, &s->rank, names, counts);
            printf("rank order: %u consecutive-rank pairs; crossing", s->rank.pairs);
            for (uint32_t l = 0; l < nl; l++)
                printf("%s %s %u", l ? "," : "", names[l], counts[l]);
            printf("\n");
        }
    }
    *out = (struct run){t1 - t0, t2 - t1, t2 - t0, cpu_ms() - c0};
    tg_replay_free(&r);
    tg_simdata_free(&d);
    tg_sb_free(&err);
    return rc;
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    printf("%-8s median %8.1f ms  (min %.1f, max %.1f)\n", what, v[n / 2], v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
    uint32_t nodes = 1000, gangs = 10000, npods;
    double load = 0.75;
    int runs = 3;
    const char *write = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gangs") && i + 1 < argc)
            gangs = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--load") && i + 1 < argc)
            load = atof(argv[++i]);
        else if (!strcmp(argv[i], "--queues") && i + 1 < argc)
            nqueues = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ranks"))
            ranked = 1;
        else if (!strcmp(argv[i], "--sub-size") && i + 1 < argc)
            sub_size = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--write-yaml") && i + 1 < argc)
            write = argv[++i];
        else {
            fprintf(stderr, "usage: bench_replay [--nodes N] [--gangs G] [--load L] [--queues Q] "
                            "[--runs R] [--ranks] [--sub-size N] [--write-yaml FILE]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 100 || nodes < 10 || gangs < 1 || !(load > 0.01 && load < 10) ||
        nqueues > 1000)
        return 2;
    struct tg_sb yaml = {0};
    trace_yaml(&yaml, nodes, gangs, load, &npods);
    if (write) {
        FILE *f = fopen(write, "w");
        if (!f || fwrite(yaml.s, 1, yaml.len, f) != yaml.len || fclose(f)) {
            fprintf(stderr, "bench_replay: cannot write %s\n", write);
            return 1;
        }
        printf("wrote %s: %u nodes, %u gangs, %u pods (%.1f MB)\n", write, nodes, gangs, npods,
               yaml.len / 1e6);
        tg_sb_free(&yaml);
        return 0;
    }
    struct tg_policy pol;
    tg_policy_default(&pol);
    double tload[100], rep[100], total[100], cpu[100];
    printf("trace: %u nodes, %u gangs, %u pods, %u queues, %.1f MB of YAML\n", nodes, gangs, npods,
           nqueues, yaml.len / 1e6);
    for (int i = 0; i < runs; i++) {
        struct run r;
        if (one(yaml.s, yaml.len, &pol, &r, i == 0))
            return 1;
        tload[i] = r.load;
        rep[i] = r.replay;
        total[i] = r.total;
        cpu[i] = r.cpu;
    }
    report("load", tload, runs);
    report("replay", rep, runs);
    report("total", total, runs);
    report("cpu", cpu, runs);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("max RSS %.1f MB (%d runs)\n", ru.ru_maxrss / 1024.0, runs);
    tg_sb_free(&yaml);
    return 0;
}
