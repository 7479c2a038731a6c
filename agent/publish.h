/* Publishing the topology to the agent's own Node: read the Node, compare
 * its annotation and labels with what the agent discovered, and send a JSON
 * merge patch only when something differs; then again every interval.
 *
 * RBAC needed: get and patch on nodes (manifests/agent/). */
#ifndef TG_AGENT_PUBLISH_H
#define TG_AGENT_PUBLISH_H

#include <stddef.h>
#include <stdio.h>

#include "model/topology.h"

struct tg_agent_opts;
struct tg_sb;

struct tg_publish_opts {
    const char *node_name;              /* required */
    const char *kubeconfig;             /* NULL: in-cluster service account */
    unsigned interval_s;                /* hardware rediscovery (and full Node check) period */
    unsigned kubelet_interval_s;        /* kubelet pod-resources period, when read */
    int once;                           /* publish once and return */
    int allow_http;                     /* --allow-insecure-http: an http:// server */
    const char *health_file;            /* --health-file: written after every round, or NULL */
};

/* Decides from the Node JSON (as GET /api/v1/nodes/NAME returns it) whether
 * t must be published. Returns 1 with the merge patch appended to *patch when
 * the annotation or a label differs, 0 when the Node is up to date, or
 * TG_EPARSE (not a Node) / TG_ENOMEM / TG_EINVAL (t cannot be encoded). */
int tg_agent_plan(const char *node_json, size_t n, const struct tg_topology *t,
                  struct tg_sb *patch);

/* Runs the publish loop (see the file comment): discovers with o every
 * po->interval_s and publishes to po->node_name; in between, with
 * o->podres_socket, rereads the kubelet every po->kubelet_interval_s and
 * publishes when the annotation changed. Returns 0 after one round with
 * po->once; otherwise runs until a fatal error. Errors are logged; returns a
 * TG_E* code. */
int tg_agent_publish(const struct tg_agent_opts *o, const struct tg_publish_opts *po);

/* The liveness file (--health-file): "due <unix seconds>\n", the time by
 * which the next round should have ended, replaced atomically (a file
 * beside it, renamed). The loop writes it before its first round and after
 * every round, whether the round published or failed (an API server that is
 * down is no reason to restart the agent; a round that never ends is).
 * Returns 0 or TG_EIO. */
int tg_agent_health_write(const char *path, long due_unix_s);
/* The liveness probe (--check-health): 0 when path says the next round is
 * not overdue, TG_ETIMEOUT when it is, TG_EIO / TG_EPARSE when path cannot be
 * read; says which on out. */
int tg_agent_health_check(const char *path, FILE *out);

/* A round takes at most this long: discovery, nvidia-smi (killed after
 * --nvidia-smi-timeout), the kubelet and the API (30 s per request). */
#define TG_AGENT_ROUND_MAX_S 180

#endif
