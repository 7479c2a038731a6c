/* `topogang agent`: the node topology agent.
 *
 * With --once --print it discovers the topology (hwloc on this machine or an
 * XML export, NVLink from hwloc distances or nvidia-smi) and prints a summary,
 * the annotation JSON and the labels; nothing is sent anywhere. As a
 * DaemonSet it publishes the annotation `topogang.io/topology` and the labels
 * topogang.io/{numa-nodes,gpu-domains,gpus-per-domain} to its own Node (name
 * from --node-name or $NODE_NAME), patching only when they changed, and
 * refreshes every --interval seconds (agent/publish.c). API access: the
 * in-cluster service account, or --kubeconfig / $KUBECONFIG. */
#include "agent/agent.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/exec.h"
#include "agent/podres.h"
#include "agent/publish.h"
#include "util/err.h"
#include "util/log.h"
#include "util/strbuf.h"

#define NVSMI_MAX (1 << 20)

static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
        if (n && access(buf, X_OK) == 0)
            return 1;
        path = colon ? colon + 1 : NULL;
    }
    return 0;
}

/* Runs `nvidia-smi topo -m`, killed after timeout_s; 0 and *m filled, or an
 * error with why[] saying what happened. */
static int run_nvsmi(unsigned timeout_s, struct tg_nvsmi *m, char *why, size_t why_len)
{
    static char *const argv[] = {"nvidia-smi", "topo", "-m", NULL};
    char *buf = malloc(NVSMI_MAX);
    size_t n = 0;
    if (!buf)
        return TG_ENOMEM;
    int err = tg_exec_capture(argv, timeout_s * 1000u, buf, NVSMI_MAX, &n, why, why_len);
    if (!err && (err = tg_nvsmi_parse(buf, n, m)))
        snprintf(why, why_len, "%s", tg_strerror(err));
    free(buf);
    return err;
}

static int nvidia_gpus(const struct tg_hw *hw)
{
    int n = 0;
    for (uint32_t i = 0; i < hw->ngpus; i++)
        n += hw->gpus[i].vendor == 0x10de;
    return n;
}

int tg_agent_collect(const struct tg_agent_opts *o, struct tg_hw *hw, struct tg_topology *t,
                     char *err, size_t errlen)
{
    struct tg_nvsmi *m = NULL;
    int rc = tg_hw_discover(o->topology_xml, hw, err, errlen);
    if (rc)
        return rc;
    if (o->nvsmi_file || (nvidia_gpus(hw) && !strcmp(hw->nvlink_source, "none") &&
                          on_path("nvidia-smi"))) {
        m = malloc(sizeof *m);
        if (!m) {
            snprintf(err, errlen, "out of memory");
            return TG_ENOMEM;
        }
        char why[256] = "";
        rc = o->nvsmi_file ? tg_nvsmi_load(o->nvsmi_file, m)
                           : run_nvsmi(o->nvsmi_timeout_s ? o->nvsmi_timeout_s : TG_NVSMI_TIMEOUT_S,
                                       m, why, sizeof why);
        if (rc && o->nvsmi_file) {
            snprintf(err, errlen, "%s: not a readable `nvidia-smi topo -m` output (%s)",
                     o->nvsmi_file, tg_strerror(rc));
            free(m);
            return TG_EIO;
        }
        if (rc)
            tg_warn("agent", "nvidia-smi topo -m unusable (%s); no NVLink groups",
                    why[0] ? why : tg_strerror(rc));
        else if (tg_hw_merge_nvsmi(hw, m))
            tg_warn("agent", "nvidia-smi shows %u GPUs, hwloc %d NVIDIA GPUs; NVLink groups ignored",
                    m->ngpus, nvidia_gpus(hw));
        free(m);
    }
    tg_agent_build(o, hw, t);
    return 0;
}

void tg_agent_build(const struct tg_agent_opts *o, const struct tg_hw *hw, struct tg_topology *t)
{
    static char last_err[256];
    char err[256] = "";
    tg_hw_domains(hw, o->policy, t);
    if (!o->podres_socket)
        return;
    struct tg_podres *p = malloc(sizeof *p);
    int rc = p ? tg_podres_query(o->podres_socket, p, err, sizeof err) : TG_ENOMEM;
    if (rc) {
        if (strcmp(err, last_err))
            tg_warn("agent", "kubelet pod-resources: %s; publishing no exclusive CPU/memory figures",
                    err[0] ? err : tg_strerror(rc));
        snprintf(last_err, sizeof last_err, "%s", err);
    } else {
        if (last_err[0])
            tg_info("agent", "kubelet pod-resources: answering again");
        last_err[0] = 0;
        tg_podres_apply(p, hw, t);
    }
    free(p);
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: topogang agent [options]\n\n"
        "Discovers this node's NUMA nodes, GPUs, NICs, PCIe roots and NVLink groups\n"
        "(hwloc, nvidia-smi) and publishes them to its Node as the annotation\n"
        "topogang.io/topology and the labels topogang.io/numa-nodes,\n"
        "topogang.io/gpu-domains, topogang.io/gpus-per-domain.\n\n"
        "options:\n"
        "  --once                   discover (and publish) once, then exit\n"
        "  --print                  print the topology and annotation; do not publish\n"
        "  --topology-xml FILE      read an hwloc XML export instead of this machine\n"
        "  --nvidia-smi-topo FILE   read `nvidia-smi topo -m` output from FILE\n"
        "  --nvidia-smi-timeout S   kill nvidia-smi after S seconds (1..300, default 10)\n"
        "  --topology-policy P      kubelet Topology Manager policy of this node:\n"
        "                           none | single-numa-node | restricted (default none)\n"
        "  --pod-resources SOCKET   the kubelet's pod-resources socket, to publish what it\n"
        "                           can still give exclusively per NUMA node; 'none' not to\n"
        "                           (default " TG_PODRES_SOCKET ",\n"
        "                           none with --topology-xml)\n"
        "  --kubelet-interval S     how often to read it, patching on change (default 10)\n"
        "  --node-name NAME         Node to patch (default $NODE_NAME)\n"
        "  --kubeconfig FILE        API access outside a cluster (default in-cluster)\n"
        "  --interval SECONDS       refresh period when not --once (default 300)\n"
        "  --health-file FILE       written after every round with the time the next\n"
        "                           one is due by (the DaemonSet's liveness probe)\n"
        "  --check-health FILE      exit 0 when FILE says a round is not overdue, else 1\n"
        "                           (the liveness probe's command)\n"
        "  --allow-insecure-http    accept an http:// API server (tests)\n"
        "  --v LEVEL                log level: debug, info, warn, error (default info)\n"
        "  -h, --help               this text\n");
}

static int print_all(const struct tg_hw *hw, const struct tg_topology *t)
{
    struct tg_sb b = {0};
    char val[TG_TOPO_NLABELS][16];
    int rc = tg_topo_encode(t, &b);
    if (rc) {
        fprintf(stderr, "topogang agent: cannot encode topology: %s\n", tg_strerror(rc));
        tg_sb_free(&b);
        return 1;
    }
    tg_hw_print(stdout, hw, t);
    tg_topo_labels(t, val);
    printf("labels:\n");
    for (int i = 0; i < TG_TOPO_NLABELS; i++)
        printf("  %s=%s\n", tg_topo_label_keys[i], val[i]);
    printf("annotation %s:\n%s\n", "topogang.io/topology", tg_sb_str(&b));
    tg_sb_free(&b);
    return 0;
}

int tg_cmd_agent(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"once", no_argument, NULL, 'o'},
        {"print", no_argument, NULL, 'p'},
        {"topology-xml", required_argument, NULL, 'x'},
        {"nvidia-smi-topo", required_argument, NULL, 'n'},
        {"topology-policy", required_argument, NULL, 'P'},
        {"node-name", required_argument, NULL, 'N'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"interval", required_argument, NULL, 'i'},
        {"pod-resources", required_argument, NULL, 'r'},
        {"kubelet-interval", required_argument, NULL, 'K'},
        {"nvidia-smi-timeout", required_argument, NULL, 'T'},
        {"health-file", required_argument, NULL, 'F'},
        {"check-health", required_argument, NULL, 'C'},
        {"allow-insecure-http", no_argument, NULL, 'A'},
        {"v", required_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    struct tg_agent_opts o = {0};
    struct tg_publish_opts po = {.interval_s = 300, .kubelet_interval_s = 10};
    int once = 0, print = 0, c;
    const char *podres = NULL;
    char err[512];

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': once = 1; break;
        case 'p': print = 1; break;
        case 'x': o.topology_xml = optarg; break;
        case 'n': o.nvsmi_file = optarg; break;
        case 'N': po.node_name = optarg; break;
        case 'k': po.kubeconfig = optarg; break;
        case 'P':
            if (tg_topo_policy_parse(optarg, &o.policy)) {
                fprintf(stderr, "topogang agent: --topology-policy: unknown policy '%s' "
                                "(none, single-numa-node, restricted)\n", optarg);
                return 2;
            }
            break;
        case 'i': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 10 || v > 86400) {
                fprintf(stderr, "topogang agent: --interval: want 10..86400 seconds\n");
                return 2;
            }
            po.interval_s = (unsigned)v;
            break;
        }
        case 'K': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 3600) {
                fprintf(stderr, "topogang agent: --kubelet-interval: want 1..3600 seconds\n");
                return 2;
            }
            po.kubelet_interval_s = (unsigned)v;
            break;
        }
        case 'r': podres = optarg; break;
        case 'T': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 300) {
                fprintf(stderr, "topogang agent: --nvidia-smi-timeout: want 1..300 seconds\n");
                return 2;
            }
            o.nvsmi_timeout_s = (unsigned)v;
            break;
        }
        case 'F': po.health_file = optarg; break;
        case 'C': return tg_agent_health_check(optarg, stdout) ? 1 : 0;
        case 'A': po.allow_http = 1; break;
        case 'v': {
            enum tg_log_level l;
            if (tg_log_parse_level(optarg, &l)) {
                fprintf(stderr, "topogang agent: --v: want debug, info, warn or error\n");
                return 2;
            }
            tg_log_set_level(l);
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "topogang agent: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (podres)
        o.podres_socket = strcmp(podres, "none") ? podres : NULL;
    else if (!o.topology_xml)
        o.podres_socket = TG_PODRES_SOCKET;

    struct tg_hw *hw = malloc(sizeof *hw);
    struct tg_topology *t = malloc(sizeof *t);
    int rc = 1;
    if (!hw || !t) {
        fprintf(stderr, "topogang agent: out of memory\n");
        goto out;
    }
    if (print || once) {
        if (tg_agent_collect(&o, hw, t, err, sizeof err)) {
            fprintf(stderr, "topogang agent: %s\n", err);
            goto out;
        }
        if (print) {
            rc = print_all(hw, t);
            goto out;
        }
    }
    if (!po.node_name)
        po.node_name = getenv("NODE_NAME");
    if (!po.node_name || !*po.node_name) {
        fprintf(stderr, "topogang agent: no node name: set NODE_NAME (downward API) or "
                        "--node-name, or use --print\n");
        rc = 2;
        goto out;
    }
    po.once = once;
    if (!once)
        tg_info("agent", "publishing the topology of this machine to Node %s every %u s",
                po.node_name, po.interval_s);
    rc = tg_agent_publish(&o, &po) ? 1 : 0;
out:
    free(hw);
    free(t);
    return rc;
}
