/* Fair-share benchmark (scheduler/fairshare.h): the division of a large
 * cluster among tenant queues.
 *
 *   bench_fairshare [--nodes N] [--pods P] [--runs R]
 *
 * Capacity: N nodes (default 10,000) of 8 GPUs, 192 cpu, 2 TiB, summed per
 * resource. Queues: 50 in a tree of depth 3 (5 departments, 3 teams each, 10
 * of the teams with 3 projects), mixed quotas, limits, weights and two
 * over-quota tiers. P pods (default 100,000) of 1 to 8 GPUs, 4 cpu and
 * 64 GiB each, spread over the 40 leaf queues: their demand is added, and
 * the first 60% are bound (allocation added), as a daemon does at start.
 * Measures:
 *  1. recomputing the fair shares after one demand change, R times (default
 *     201): median and p90 in ms;
 *  2. one bind + unbind (allocation added and removed, O(depth)): ns each,
 *     over all P pods. */
#include "model/resources.h"
#include "scheduler/fairshare.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { NQ = 50 };
static struct tg_queue_obj qo[NQ];
static struct tg_queue_res qres[NQ][3];
static const struct tg_queue_obj *qp[NQ];
static uint32_t gpu_name, cpu_name, mem_name;

static void mkqueue(uint32_t i, const char *name, const char *parent, double gpus)
{
    qo[i].name = tg_intern(name);
    qo[i].parent = parent ? tg_intern(parent) : 0;
    qo[i].api = TG_QAPI_TOPOGANG;
    qo[i].priority = (int32_t)(i % 2);
    qo[i].created_ms = i;
    qo[i].res = qres[i];
    qo[i].nres = 3;
    qres[i][0] = (struct tg_queue_res){cpu_name, gpus * 24000, -1, 1 + i % 3, 0};
    qres[i][1] = (struct tg_queue_res){mem_name, gpus * 256.0 * (1 << 30), -1, 1 + i % 3, 0};
    qres[i][2] = (struct tg_queue_res){gpu_name, gpus, i % 4 ? -1 : gpus * 3, 1 + i % 3, 0};
    qp[i] = &qo[i];
}

/* 5 departments / 15 teams / 30 projects; returns the leaves in leaf[]. */
static uint32_t mktree(uint32_t nodes, uint32_t *leaf)
{
    char name[32], parent[32];
    uint32_t n = 0, nl = 0;
    double dept = nodes * 8.0 / 8;       /* the departments' quotas: 5/8 of the GPUs */
    for (int d = 0; d < 5; d++) {
        snprintf(name, sizeof name, "dept-%d", d);
        mkqueue(n++, name, NULL, dept);
    }
    for (int t = 0; t < 15; t++) {
        snprintf(name, sizeof name, "team-%d", t);
        snprintf(parent, sizeof parent, "dept-%d", t / 3);
        if (t >= 10)
            leaf[nl++] = n;
        mkqueue(n++, name, parent, dept / 4);
    }
    for (int p = 0; p < 30; p++) {
        snprintf(name, sizeof name, "proj-%d", p);
        snprintf(parent, sizeof parent, "team-%d", p / 3);
        leaf[nl++] = n;
        mkqueue(n++, name, parent, dept / 16);
    }
    return nl;
}

int main(int argc, char **argv)
{
    uint32_t nodes = 10000, pods = 100000, runs = 201;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes"))
            nodes = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pods"))
            pods = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs"))
            runs = (uint32_t)atoi(argv[i + 1]);
    }
    uint32_t gpu = (uint32_t)tg_res_id("nvidia.com/gpu", 14);
    gpu_name = tg_intern("nvidia.com/gpu");
    cpu_name = tg_intern("cpu");
    mem_name = tg_intern("memory");
    uint32_t leaf[NQ], nleaf = mktree(nodes, leaf);

    struct tg_fairshare *fs = NULL;
    if (tg_fairshare_build(qp, NQ, NULL, NULL, &fs) != 0)
        return 1;
    for (uint32_t q = 0; q < NQ; q++)
        if (tg_fairshare_problem(fs, q))
            fprintf(stderr, "queue %u: %s\n", q, tg_fairshare_problem(fs, q));
    struct tg_rq cap[3] = {{TG_RES_CPU, 0}, {TG_RES_MEMORY, 0}, {gpu, 0}};
    for (uint32_t i = 0; i < nodes; i++) {
        cap[0].val += 192000;
        cap[1].val += 2LL << 40;
        cap[2].val += 8;
    }
    tg_fairshare_set_capacity(fs, cap, 3);

    struct tg_rq (*req)[3] = calloc(pods, sizeof *req);
    if (!req)
        return 1;
    for (uint32_t p = 0; p < pods; p++) {
        req[p][0] = (struct tg_rq){TG_RES_CPU, 4000};
        req[p][1] = (struct tg_rq){TG_RES_MEMORY, 64LL << 30};
        req[p][2] = (struct tg_rq){gpu, 1 + p % 8};
        tg_fairshare_demand_add(fs, leaf[p % nleaf], req[p], 3, 1);
        if (p < pods / 10 * 6)
            tg_fairshare_alloc_add(fs, leaf[p % nleaf], req[p], 3, 1);
    }

    double *t = calloc(runs, sizeof *t);
    if (!t)
        return 1;
    for (uint32_t r = 0; r < runs; r++) {
        tg_fairshare_demand_add(fs, leaf[r % nleaf], req[r % pods], 3, r % 2 ? -1 : 1);
        double t0 = now_ms();
        if (tg_fairshare_update(fs) != 1)
            return 1;
        t[r] = now_ms() - t0;
    }
    qsort(t, runs, sizeof *t, cmp_double);
    double top = 0;                     /* demand exceeds capacity: all of it is divided */
    for (uint32_t q = 0; q < 5; q++)
        top += tg_fairshare_share(fs, q, gpu);
    if (top != (double)cap[2].val) {
        fprintf(stderr, "departments' GPU shares %g, capacity %lld\n", top, (long long)cap[2].val);
        return 1;
    }
    printf("fair shares of %u queues (depth 3) over %u nodes / %u pods: median %.3f ms, "
           "p90 %.3f ms (%u runs)\n", NQ, nodes, pods, t[runs / 2], t[runs * 9 / 10], runs);

    double t0 = now_ms();
    for (uint32_t p = 0; p < pods; p++) {
        tg_fairshare_alloc_add(fs, leaf[p % nleaf], req[p], 3, 1);
        tg_fairshare_alloc_add(fs, leaf[p % nleaf], req[p], 3, -1);
    }
    double per = (now_ms() - t0) * 1e6 / (2.0 * pods);
    printf("allocation update per bind or unbind (3 resources, depth 3): %.0f ns\n", per);
    if (tg_fairshare_update(fs) != 0)
        return 1;                       /* binds must not dirty the shares */
    free(t);
    free(req);
    tg_fairshare_free(&fs);
    return 0;
}
