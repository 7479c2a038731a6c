/* Informer benchmark against a real kube-apiserver.
 *
 *   bench_informer load  --nodes N --pods M [--ns NS]   create the objects (64 in flight)
 *   bench_informer sync  [--page-size P]                time to synced + RSS per cached pod
 *   bench_informer churn --pods M --seconds S [--ns NS] patch pod labels as fast as the server takes
 *   bench_informer watch --seconds S                    sync, then count events/s and CPU per event
 *   bench_informer http --requests N --rounds R [--window W] [--variants a,b]
 *       N small POSTs (SelfSubjectAccessReviews: a Binding's size, nothing stored),
 *       W in flight, through informer/client.c once per HTTP variant (the
 *       client's tuning options, see `variants` below), the variants interleaved
 *       in each of R rounds; prints this process's CPU-us per request, median
 *       over the rounds (CPU time, not wall time: the machine is shared)
 *
 * All commands read $KUBECONFIG. Output is one "key=value ..." line per run,
 * for bench/informer/run.sh to collect. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "informer/client.h"
#include "informer/informer.h"
#include "util/err.h"
#include "util/intern.h"

static uv_loop_t loop;
static struct tg_client *client;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Peak RSS of the process so far (VmHWM), KiB. */
static long peak_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int open_client(double qps)
{
    struct tg_kconf k;
    char err[512];
    int rc = tg_kubeconfig_load(NULL, NULL, &k, err, sizeof err);
    if (rc) {
        fprintf(stderr, "bench_informer: %s\n", err);
        return rc;
    }
    struct tg_client_opts o = {.qps = qps, .burst = (int)qps};
    rc = tg_client_new(&loop, &k, &o, &client);
    tg_kconf_free(&k);
    return rc;
}

/* ---- load / churn: a window of concurrent writes ---- */

struct writer {
    int n, next, done, failed, inflight, window;
    const char *ns;
    int nodes, pods, mode;            /* mode 0: load, 1: churn */
    double until;
    char *body;
};

static void fill(struct writer *w);

static void wdone(void *ud, const struct tg_resp *r)
{
    struct writer *w = ud;
    w->done++;
    w->inflight--;
    if (r->err && r->err != TG_EEXIST && w->failed++ < 5)
        fprintf(stderr, "write failed: %s\n", r->msg);
    fill(w);
}

static void issue(struct writer *w, int i)
{
    char path[256], body[4096];
    struct tg_req_opts o = {.method = "POST", .path = path, .body = body, .is_write = 1,
                            .on_done = wdone, .ud = w};
    if (w->mode == 1) {
        int p = i % w->pods;
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/p-%06d", w->ns, p);
        snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"churn\":\"%d\"}}}", i);
        o.method = "PATCH";
        o.content_type = "application/merge-patch+json";
    } else if (i < w->nodes) {
        snprintf(path, sizeof path, "/api/v1/nodes");
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%05d\","
                 "\"labels\":{\"kubernetes.io/hostname\":\"node-%05d\",\"topology.kubernetes.io/zone\":"
                 "\"zone-%d\",\"cloud.google.com/gce-topology-block\":\"block-%d\",\"topogang.io/rack\":"
                 "\"rack-%d\",\"nvidia.com/gpu.clique\":\"clique-%d\",\"nvidia.com/gpu.product\":"
                 "\"NVIDIA-H100-80GB-HBM3\"}},\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\","
                 "\"value\":\"present\",\"effect\":\"NoSchedule\"}]}}",
                 i, i, i / 2500, i / 500, i / 16, i / 4);
    } else {
        int p = i - w->nodes;
        int bound = p % 10 != 0;
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", w->ns);
        char node[64] = "";
        if (bound)
            snprintf(node, sizeof node, "\"nodeName\":\"node-%05d\",", p % (w->nodes ? w->nodes : 1));
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%06d\",\"labels\":"
                 "{\"app\":\"trainer\",\"topogang.io/pod-group\":\"job-%d\",\"batch.kubernetes.io/job-name\":"
                 "\"job-%d\"},\"annotations\":{\"example.com/owner\":\"team-%d\"}},\"spec\":{%s"
                 "\"schedulerName\":\"%s\",\"priorityClassName\":\"\",\"restartPolicy\":\"Never\","
                 "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
                 "\"NoSchedule\"}],\"nodeSelector\":{\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"},"
                 "\"containers\":[{\"name\":\"trainer\",\"image\":\"registry.example.com/ml/trainer:v1.2.3\","
                 "\"command\":[\"torchrun\",\"--nproc-per-node=8\",\"train.py\"],\"env\":[{\"name\":"
                 "\"NCCL_DEBUG\",\"value\":\"INFO\"}],\"resources\":{\"requests\":{\"cpu\":\"8\",\"memory\":"
                 "\"64Gi\",\"nvidia.com/gpu\":\"8\"},\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}",
                 p, p / 16, p / 16, p % 20, node, bound ? "default-scheduler" : "topogang");
    }
    w->inflight++;
    if (tg_client_request(client, &o, NULL) != 0) {
        w->inflight--;
        w->done++;
        w->failed++;
    }
}

static void fill(struct writer *w)
{
    while (w->inflight < w->window && (w->mode == 1 ? now_s() < w->until : w->next < w->n))
        issue(w, w->next++);
    if (w->mode == 1 && now_s() >= w->until && w->inflight == 0)
        w->n = w->done;
}

static int cmd_load(int nodes, int pods, const char *ns, int churn_s)
{
    if (open_client(0))
        return 1;
    struct writer w = {.n = nodes + pods, .window = 64, .ns = ns, .nodes = nodes, .pods = pods};
    double t0 = now_s();
    if (churn_s) {
        w.mode = 1;
        w.n = -1;
        w.until = t0 + churn_s;
        w.nodes = 0;
    }
    fill(&w);
    while (w.done != w.n)
        uv_run(&loop, UV_RUN_ONCE);
    double dt = now_s() - t0;
    printf("%s writes=%d failed=%d seconds=%.2f writes_per_s=%.0f\n", churn_s ? "churn" : "load",
           w.done, w.failed, dt, w.done / dt);
    tg_client_free(&client);
    uv_run(&loop, UV_RUN_DEFAULT);
    return w.failed ? 1 : 0;
}

/* ---- http: CPU per request for each client tuning ---- */

static const struct variant {
    const char *name;
    struct tg_client_opts o;
} variants[] = {
    /* "h2" is the client before TCP_CORK (cork -1); the others change one thing.
     * All but h2-direct send through libcurl only (h2_direct -1). */
    {"h2", {.cork = -1, .h2_direct = -1}},
    {"h2-cork", {.cork = 1, .h2_direct = -1}},      /* the default until 2026-11-27 */
    {"h2-direct", {.cork = 1}},                      /* POSTs on informer/h2.c: the default since */
    {"h1", {.writes_http = 1, .cork = -1, .h2_direct = -1}},
    {"h1-cork", {.writes_http = 1, .cork = 1, .h2_direct = -1}},
    {"h2-nagle", {.nodelay_off = 1, .cork = -1, .h2_direct = -1}},
    {"h2-streams16", {.max_streams = 16, .cork = -1, .h2_direct = -1}},
    {"h2-streams16-cork", {.max_streams = 16, .cork = 1, .h2_direct = -1}},
    {"h2-streams2-cork", {.max_streams = 2, .cork = 1, .h2_direct = -1}},   /* many handshakes at once */
    {"h2-buf64k", {.buffer_size = 65536, .upload_buffer_size = 65536, .cork = -1, .h2_direct = -1}},
    {"h2-buf8k", {.buffer_size = 8192, .upload_buffer_size = 16384, .cork = -1, .h2_direct = -1}},
    {"h2-hdrs-per-req", {.headers_per_request = 1, .cork = -1, .h2_direct = -1}},
    {"h2-nosessioncache", {.no_sessionid_cache = 1, .cork = -1, .h2_direct = -1}},
};
#define NVAR (int)(sizeof variants / sizeof variants[0])

static void hdone(void *ud, const struct tg_resp *r);

static void hfill(struct writer *w)
{
    static const char body[] =
        "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\","
        "\"spec\":{\"resourceAttributes\":{\"verb\":\"create\",\"resource\":\"pods\","
        "\"subresource\":\"binding\",\"namespace\":\"bench\"}}}";
    struct tg_req_opts o = {.method = "POST", .body = body, .is_write = 1, .on_done = hdone, .ud = w,
                            .path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"};
    while (w->inflight < w->window && w->next < w->n) {
        w->next++;
        w->inflight++;
        if (tg_client_request(client, &o, NULL) != 0) {
            w->inflight--;
            w->done++;
            w->failed++;
        }
    }
}

static void hdone(void *ud, const struct tg_resp *r)
{
    struct writer *w = ud;
    w->done++;
    w->inflight--;
    if (r->err && w->failed++ < 5)
        fprintf(stderr, "request failed: %s\n", r->msg);
    hfill(w);
}

static uint64_t direct_last;     /* requests of the last run answered on the direct path */

/* n requests, window in flight, on a fresh client of variant v: CPU-us per request */
static int http_once(const struct variant *v, int n, int window, double *cpu_us, double *rps,
                     uint64_t *conns)
{
    struct tg_kconf k;
    char err[512];
    if (tg_kubeconfig_load(NULL, NULL, &k, err, sizeof err)) {
        fprintf(stderr, "bench_informer: %s\n", err);
        return 1;
    }
    struct tg_client_opts o = v->o;
    int rc = tg_client_new(&loop, &k, &o, &client);
    tg_kconf_free(&k);
    if (rc)
        return 1;
    /* warm up: the connections opened, the pool filled */
    struct writer w = {.n = window * 2, .window = window};
    hfill(&w);
    while (w.done < w.n)
        uv_run(&loop, UV_RUN_ONCE);
    w = (struct writer){.n = n, .window = window};
    double t0 = now_s(), c0 = cpu_s();
    hfill(&w);
    while (w.done < w.n)
        uv_run(&loop, UV_RUN_ONCE);
    *cpu_us = (cpu_s() - c0) * 1e6 / n;
    *rps = n / (now_s() - t0);
    *conns = tg_client_stats(client)->connects + tg_client_stats(client)->h2_connects;
    direct_last = tg_client_stats(client)->h2_direct;
    tg_client_free(&client);
    uv_run(&loop, UV_RUN_DEFAULT);
    return w.failed ? 1 : 0;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmd_http(int n, int rounds, int window, const char *only)
{
    double cpu[NVAR][64], rps[NVAR][64];
    uint64_t conns[NVAR] = {0};
    int use[NVAR];
    if (rounds > 64)
        rounds = 64;
    for (int v = 0; v < NVAR; v++) {
        char pat[80];
        snprintf(pat, sizeof pat, ",%s,", variants[v].name);
        char list[512];
        snprintf(list, sizeof list, ",%s,", only ? only : "");
        use[v] = !only || strstr(list, pat) != NULL;
    }
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < NVAR; i++) {
            int v = (i + r) % NVAR; /* each round starts with another variant */
            if (!use[v])
                continue;
            if (http_once(&variants[v], n, window, &cpu[v][r], &rps[v][r], &conns[v]))
                return 1;
            printf("http round=%d variant=%s cpu_us_per_req=%.1f req_per_s=%.0f connections=%llu "
                   "direct=%llu\n", r, variants[v].name, cpu[v][r], rps[v][r],
                   (unsigned long long)conns[v], (unsigned long long)direct_last);
            fflush(stdout);
        }
    }
    printf("## medians over %d rounds of %d requests, %d in flight\n", rounds, n, window);
    for (int v = 0; v < NVAR; v++) {
        if (!use[v])
            continue;
        qsort(cpu[v], (size_t)rounds, sizeof(double), dcmp);
        qsort(rps[v], (size_t)rounds, sizeof(double), dcmp);
        printf("http_median variant=%s cpu_us_per_req=%.1f (min %.1f max %.1f) req_per_s=%.0f\n",
               variants[v].name, cpu[v][rounds / 2], cpu[v][0], cpu[v][rounds - 1], rps[v][rounds / 2]);
    }
    return 0;
}

/* ---- sync / watch ---- */

struct counts {
    uint64_t events;
};

static void c_add(void *ud, const void *o)
{
    (void)o;
    ((struct counts *)ud)->events++;
}
static void c_upd(void *ud, const void *a, const void *b)
{
    (void)a;
    (void)b;
    ((struct counts *)ud)->events++;
}

static int synced_flag;
static void on_synced(void *ud)
{
    (void)ud;
    synced_flag = 1;
}

static void stop_loop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

static int cmd_sync(int page, int watch_s)
{
    if (open_client(0))
        return 1;
    struct counts cnt = {0};
    struct tg_informer_opts o = {.no_podgroups = 1, .page_size = page, .on_synced = on_synced};
    for (int i = 0; i < TG_INF_N; i++)
        o.h[i] = (struct tg_handlers){c_add, c_upd, c_add, NULL, &cnt};
    malloc_trim(0);
    long rss0 = rss_kib();
    double t0 = now_s(), c0 = cpu_s();
    struct tg_informer *inf;
    if (tg_informer_start(client, &o, &inf))
        return 1;
    while (!synced_flag)
        uv_run(&loop, UV_RUN_ONCE);
    double dt = now_s() - t0, dcpu = cpu_s() - c0;
    long rss1 = rss_kib();
    malloc_trim(0);
    long rss2 = rss_kib();
    uint32_t nodes = tg_store_len(tg_informer_store(inf, TG_INF_NODES));
    uint32_t pods = tg_store_len(tg_informer_store(inf, TG_INF_PODS));
    printf("sync nodes=%u pods=%u seconds=%.3f cpu_s=%.3f rss_kib_before=%ld rss_kib_synced=%ld "
           "rss_kib_trimmed=%ld rss_kib_peak=%ld bytes_per_object=%.0f bytes_per_object_trimmed=%.0f interned=%u "
           "http2=%llu connections=%llu pages=%llu unstalled=%llu\n",
           nodes, pods, dt, dcpu, rss0, rss1, rss2, peak_kib(), (double)(rss1 - rss0) * 1024 / (nodes + pods),
           (double)(rss2 - rss0) * 1024 / (nodes + pods), tg_intern_count(),
           (unsigned long long)tg_client_stats(client)->http2,
           (unsigned long long)tg_client_stats(client)->connects,
           (unsigned long long)(tg_reflector_stats(inf->r[TG_INF_NODES])->pages +
                                tg_reflector_stats(inf->r[TG_INF_PODS])->pages),
           (unsigned long long)tg_client_stats(client)->unstalled);
    fflush(stdout);
    if (watch_s) {
        cnt.events = 0;
        double w0 = now_s(), wc0 = cpu_s();
        uv_timer_t stop;
        uv_timer_init(&loop, &stop);
        uv_timer_start(&stop, stop_loop, (uint64_t)watch_s * 1000, 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_close((uv_handle_t *)&stop, NULL);
        double wdt = now_s() - w0, wcpu = cpu_s() - wc0;
        printf("watch events=%llu seconds=%.2f events_per_s=%.0f cpu_s=%.3f cpu_us_per_event=%.1f\n",
               (unsigned long long)cnt.events, wdt, (double)cnt.events / wdt, wcpu,
               cnt.events ? wcpu * 1e6 / (double)cnt.events : 0.0);
    }
    tg_informer_free(&inf);
    tg_client_free(&client);
    uv_run(&loop, UV_RUN_DEFAULT);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"nodes", required_argument, 0, 'n'}, {"pods", required_argument, 0, 'p'},
        {"ns", required_argument, 0, 's'}, {"page-size", required_argument, 0, 'P'},
        {"seconds", required_argument, 0, 'S'}, {"requests", required_argument, 0, 'N'},
        {"rounds", required_argument, 0, 'R'}, {"window", required_argument, 0, 'W'},
        {"variants", required_argument, 0, 'V'}, {0, 0, 0, 0}};
    if (argc < 2) {
        fprintf(stderr, "usage: bench_informer load|sync|churn|watch|http [options] (see the source)\n");
        return 2;
    }
    const char *cmd = argv[1];
    int nodes = 0, pods = 0, page = 0, secs = 10, ch, nreq = 5000, rounds = 5, window = 64;
    const char *ns = "bench", *only = NULL;
    optind = 2;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': nodes = atoi(optarg); break;
        case 'p': pods = atoi(optarg); break;
        case 's': ns = optarg; break;
        case 'P': page = atoi(optarg); break;
        case 'S': secs = atoi(optarg); break;
        case 'N': nreq = atoi(optarg); break;
        case 'R': rounds = atoi(optarg); break;
        case 'W': window = atoi(optarg); break;
        case 'V': only = optarg; break;
        default: return 2;
        }
    }
    uv_loop_init(&loop);
    int rc = 2;
    if (!strcmp(cmd, "load"))
        rc = cmd_load(nodes, pods, ns, 0);
    else if (!strcmp(cmd, "churn"))
        rc = cmd_load(0, pods, ns, secs);
    else if (!strcmp(cmd, "sync"))
        rc = cmd_sync(page, 0);
    else if (!strcmp(cmd, "watch"))
        rc = cmd_sync(page, secs);
    else if (!strcmp(cmd, "http"))
        rc = cmd_http(nreq, rounds, window, only);
    uv_loop_close(&loop);
    return rc;
}
