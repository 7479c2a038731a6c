/* `topogang watch`: a debug command that syncs the scheduler's caches from
 * the API server and prints one line per change, e.g.
 *   ADD pods-pending ml/worker-0 node= phase=Pending rv=1234
 *   SYNCED nodes=3 pods-pending=1 pods-bound=7 podgroups=1 config=0 in 0.041s
 * It uses exactly the informer the scheduler uses. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "informer/client.h"
#include "informer/informer.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/log.h"

static const char usage[] =
    "usage: topogang watch [--kubeconfig FILE] [--context NAME] [options]\n"
    "\n"
    "List and watch what the scheduler caches (Nodes, this scheduler's pending Pods,\n"
    "bound Pods, PodGroups, the policy ConfigMap, PriorityClasses,\n"
    "PodDisruptionBudgets) and print one line per change.\n"
    "\n"
    "  --kubeconfig FILE    kubeconfig (default $KUBECONFIG, then ~/.kube/config;\n"
    "                       in a pod without either: the service account)\n"
    "  --context NAME       context to use (default current-context)\n"
    "  --scheduler-name N   pending pods with spec.schedulerName=N (default topogang)\n"
    "  --config NS/NAME     also watch this ConfigMap (e.g. kube-system/topogang-config)\n"
    "  --no-podgroups       do not watch PodGroups (checked automatically: skipped\n"
    "                       when the topogang.io/v1alpha1 API is not served)\n"
    "  --page-size N        LIST page size (default 500)\n"
    "  --once               exit once synced (prints SYNCED and statistics)\n"
    "  --quiet              do not print individual changes\n"
    "  --allow-insecure-http  accept an http:// API server (tests)\n"
    "  --v LEVEL            log level: debug, info, warn, error (default warn)\n"
    "  -h, --help           this text\n"
    "\n"
    "Exit status: 0 on SIGINT/SIGTERM or --once, 1 on a configuration error.\n";

static const char *const names[TG_INF_N] = {
    "nodes", "pods", "podgroups", "config", "priorityclasses", "pdbs",
    "podgroups-upstream", "podgroups-scheduler-plugins", "podgroups-volcano", "podgroups-kai",
    "jobs", "jobsets", "leaderworkersets", "pytorchjobs", "mpijobs", "trainjobs",
    [TG_INF_QUEUES_TG] = "queues", [TG_INF_QUEUES_KAI] = "queues-kai",
    [TG_INF_QUEUES_VOLCANO] = "queues-volcano"};

struct wctx {
    uv_loop_t *loop;
    struct tg_client *client;
    struct tg_informer *inf;
    uv_signal_t sigint, sigterm;
    int once, quiet;
    uint64_t t0;
};

struct hud {
    struct wctx *w;
    int kind;
};

static const char *phase_name(int p)
{
    static const char *const n[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
    return p >= 0 && p <= 4 ? n[p] : "?";
}

static void print_obj(int kind, const char *ev, const void *o)
{
    switch (kind) {
    case TG_INF_NODES: {
        const struct tg_node_obj *n = o;
        printf("%s nodes %s ready=%d unschedulable=%d labels=%u taints=%u rv=%s\n", ev,
               tg_str(n->name), n->ready, n->unschedulable, n->nlabels, n->ntaints,
               n->rv ? n->rv : "");
        break;
    }
    case TG_INF_PODS: {
        const struct tg_pod *p = o;
        printf("%s %s %s node=%s phase=%s group=%s rv=%s\n", ev,
               p->node ? "pods-bound" : "pods-pending", p->key,
               tg_str(p->node), phase_name(p->phase), tg_str(p->group), p->rv ? p->rv : "");
        break;
    }
    case TG_INF_PODGROUPS: {
        const struct tg_podgroup *g = o;
        printf("%s podgroups %s minMember=%d rv=%s\n", ev, g->key, g->min_member,
               g->rv ? g->rv : "");
        break;
    }
    case TG_INF_PRIOCLASSES: {
        const struct tg_prioclass *pc = o;
        printf("%s priorityclasses %s value=%d never=%d default=%d rv=%s\n", ev, pc->name,
               pc->value, pc->never, pc->global_default, pc->rv ? pc->rv : "");
        break;
    }
    case TG_INF_PDBS: {
        const struct tg_pdb *b = o;
        printf("%s pdbs %s allowed=%d rv=%s\n", ev, b->key, b->disruptions_allowed,
               b->rv ? b->rv : "");
        break;
    }
    default: {
        const struct tg_configmap *cm = o;
        printf("%s config %s keys=%u rv=%s\n", ev, cm->key, cm->ndata, cm->rv ? cm->rv : "");
        break;
    }
    }
    fflush(stdout);
}

static void on_add(void *ud, const void *o)
{
    struct hud *h = ud;
    if (!h->w->quiet)
        print_obj(h->kind, "ADD", o);
}

static void on_update(void *ud, const void *old, const void *o)
{
    (void)old;
    struct hud *h = ud;
    if (!h->w->quiet)
        print_obj(h->kind, "UPDATE", o);
}

static void on_delete(void *ud, const void *o)
{
    struct hud *h = ud;
    if (!h->w->quiet)
        print_obj(h->kind, "DELETE", o);
}

static void on_sig_closed(uv_handle_t *h)
{
    (void)h;
}

static void stop(struct wctx *w)
{
    tg_informer_free(&w->inf);
    tg_client_free(&w->client);
    uv_close((uv_handle_t *)&w->sigint, on_sig_closed);
    uv_close((uv_handle_t *)&w->sigterm, on_sig_closed);
}

static void print_stats(struct wctx *w)
{
    for (int i = 0; i < TG_INF_N; i++) {
        if (!w->inf->r[i])
            continue;
        const struct tg_reflector_stats *s = tg_reflector_stats(w->inf->r[i]);
        printf("STATS %s objects=%u pages=%llu lists=%llu relists=%llu watches=%llu "
               "events=%llu errors=%llu parse_errors=%llu decode_errors=%llu skipped=%llu\n",
               names[i], tg_store_len(tg_reflector_store(w->inf->r[i])),
               (unsigned long long)s->pages, (unsigned long long)s->lists,
               (unsigned long long)s->relists, (unsigned long long)s->watches,
               (unsigned long long)s->events, (unsigned long long)s->errors,
               (unsigned long long)s->parse_errors, (unsigned long long)s->decode_errors,
               (unsigned long long)s->skipped);
    }
    fflush(stdout);
}

static void on_synced(void *ud)
{
    struct wctx *w = ud;
    uv_update_time(w->loop);
    printf("SYNCED");
    for (int i = 0; i < TG_INF_N; i++) {
        const struct tg_store *s = tg_informer_store(w->inf, (enum tg_inf_kind)i);
        if (s && i == TG_INF_PODS) {
            uint32_t bound = 0;
            for (uint32_t k = 0; k < tg_store_len(s); k++)
                bound += ((const struct tg_pod *)tg_store_at(s, k))->node != 0;
            printf(" pods-pending=%u pods-bound=%u", tg_store_len(s) - bound, bound);
        } else if (s) {
            printf(" %s=%u", names[i], tg_store_len(s));
        }
    }
    printf(" in %.3fs\n", (double)(uv_now(w->loop) - w->t0) / 1000.0);
    fflush(stdout);
    if (w->once) {
        print_stats(w);
        stop(w);
    }
}

static void on_signal(uv_signal_t *s, int sig)
{
    (void)sig;
    struct wctx *w = s->data;
    if (w->inf)
        print_stats(w);
    stop(w);
}

int tg_cmd_watch(int argc, char **argv)
{
    static const struct option opts[] = {
        {"kubeconfig", required_argument, 0, 'k'}, {"context", required_argument, 0, 'c'},
        {"scheduler-name", required_argument, 0, 's'}, {"config", required_argument, 0, 'C'},
        {"no-podgroups", no_argument, 0, 'P'}, {"page-size", required_argument, 0, 'p'},
        {"once", no_argument, 0, 'o'}, {"quiet", no_argument, 0, 'q'},
        {"v", required_argument, 0, 'v'}, {"help", no_argument, 0, 'h'},
        {"allow-insecure-http", no_argument, 0, 'A'}, {0, 0, 0, 0}};
    const char *kc = NULL, *ctx = NULL, *sched = "topogang", *cfg = NULL;
    int no_pg = 0, page = 0, allow_http = 0, ch;
    struct wctx w = {0};
    tg_log_set_level(TG_LOG_WARN);
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'k': kc = optarg; break;
        case 'c': ctx = optarg; break;
        case 's': sched = optarg; break;
        case 'C': cfg = optarg; break;
        case 'P': no_pg = 1; break;
        case 'p': page = atoi(optarg); break;
        case 'o': w.once = 1; break;
        case 'A': allow_http = 1; break;
        case 'q': w.quiet = 1; break;
        case 'v': {
            enum tg_log_level l;
            if (tg_log_parse_level(optarg, &l)) {
                fprintf(stderr, "topogang watch: bad --v %s\n%s", optarg, usage);
                return 2;
            }
            tg_log_set_level(l);
            break;
        }
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "topogang watch: unexpected argument %s\n%s", argv[optind], usage);
        return 2;
    }
    struct tg_kconf conf;
    char err[512] = "";
    int rc;
    if (!kc && !getenv("KUBECONFIG") && (rc = tg_kubeconfig_incluster(NULL, &conf, err, sizeof err)) != TG_ENOENT) {
        if (rc) {  /* in a pod, without its service account */
            fprintf(stderr, "topogang watch: %s\n", err[0] ? err : tg_strerror(rc));
            return 1;
        }
    } else if ((rc = tg_kubeconfig_load(kc, ctx, &conf, err, sizeof err))) {
        fprintf(stderr, "topogang watch: %s\n", err[0] ? err : tg_strerror(rc));
        return 1;
    }
    if (tg_kconf_check(&conf, allow_http, err, sizeof err)) {
        fprintf(stderr, "topogang watch: %s\n", err);
        tg_kconf_free(&conf);
        return 1;
    }
    char cfg_ns[254] = "", *cfg_name = NULL;
    if (cfg) {
        const char *sl = strchr(cfg, '/');
        if (!sl || sl == cfg || !sl[1] || (size_t)(sl - cfg) >= sizeof cfg_ns) {
            fprintf(stderr, "topogang watch: --config wants NAMESPACE/NAME\n");
            tg_kconf_free(&conf);
            return 2;
        }
        memcpy(cfg_ns, cfg, (size_t)(sl - cfg));
        cfg_name = (char *)sl + 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    w.loop = &loop;
    rc = tg_client_new(&loop, &conf, NULL, &w.client);
    tg_kconf_free(&conf);
    if (rc) {
        fprintf(stderr, "topogang watch: %s\n", tg_strerror(rc));
        uv_loop_close(&loop);
        return 1;
    }
    /* Fail early and clearly when the server is unreachable or not trusted. */
    struct tg_resp resp;
    struct tg_req_opts probe = {.path = "/apis/topogang.io/v1alpha1", .timeout_ms = 15000};
    rc = tg_client_do(w.client, &probe, &resp, NULL);
    if (rc && rc != TG_ENOENT && rc != TG_EHTTP) {
        fprintf(stderr, "topogang watch: %s: %s\n", tg_strerror(rc), resp.msg);
        tg_client_free(&w.client);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        return 1;
    }
    if (rc == TG_ENOENT && !no_pg) {
        fprintf(stderr, "topogang watch: topogang.io/v1alpha1 is not served (CRD not "
                        "installed): not watching PodGroups\n");
        no_pg = 1;
    }
    struct hud hu[TG_INF_N];
    struct tg_informer_opts io = {.scheduler_name = sched, .config_ns = cfg_ns,
                                  .config_name = cfg_name, .no_podgroups = no_pg,
                                  .page_size = page, .on_synced = on_synced, .ud = &w};
    for (int i = 0; i < TG_INF_N; i++) {
        hu[i] = (struct hud){&w, i};
        io.h[i] = (struct tg_handlers){on_add, on_update, on_delete, NULL, &hu[i]};
    }
    uv_signal_init(&loop, &w.sigint);
    uv_signal_init(&loop, &w.sigterm);
    w.sigint.data = w.sigterm.data = &w;
    uv_signal_start(&w.sigint, on_signal, SIGINT);
    uv_signal_start(&w.sigterm, on_signal, SIGTERM);
    uv_update_time(&loop);
    w.t0 = uv_now(&loop);
    if ((rc = tg_informer_start(w.client, &io, &w.inf))) {
        fprintf(stderr, "topogang watch: %s\n", tg_strerror(rc));
        stop(&w);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc ? 1 : 0;
}
