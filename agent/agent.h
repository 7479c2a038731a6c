/* `topogang agent`: discover this node's topology and publish it.
 *
 * Options (see --help): --once, --print, --topology-xml FILE,
 * --nvidia-smi-topo FILE, --topology-policy none|single-numa-node|restricted,
 * --node-name NAME (default $NODE_NAME), --interval SECONDS, --kubeconfig.
 * The command itself is tg_cmd_agent; main.c dispatches to it. */
#ifndef TG_AGENT_AGENT_H
#define TG_AGENT_AGENT_H

#include <stddef.h>
#include <stdint.h>

/* `topogang agent ...`: returns the exit code (0 ok, 1 failure, 2 usage). */
int tg_cmd_agent(int argc, char **argv);

#include "agent/discover.h"
#include "model/topology.h"

struct tg_agent_opts {
    const char *topology_xml;           /* NULL: the live machine */
    const char *nvsmi_file;             /* NULL: run nvidia-smi when present and useful */
    const char *podres_socket;          /* the kubelet's pod-resources socket, NULL: not read */
    uint8_t policy;                     /* enum tg_topo_policy */
    unsigned nvsmi_timeout_s;           /* nvidia-smi is killed after this; 0: the default */
};

#define TG_NVSMI_TIMEOUT_S 10

/* Discovers hardware into *hw and builds *t from it (tg_agent_build). NVLink
 * groups come from hwloc distances, else from o->nvsmi_file, else from
 * `nvidia-smi topo -m` when NVIDIA GPUs were found and nvidia-smi is on PATH.
 * Returns 0, or TG_EIO (XML or nvidia-smi file unusable) with err[errlen]
 * saying why. A nvidia-smi matrix that does not match hwloc's GPUs is ignored
 * with a warning. */
int tg_agent_collect(const struct tg_agent_opts *o, struct tg_hw *hw, struct tg_topology *t,
                     char *err, size_t errlen);

/* Builds *t from an already discovered *hw: GPU domains, and, with
 * o->podres_socket, what the kubelet can still give exclusively per NUMA
 * node (agent/podres.h). A kubelet that does not answer leaves those out,
 * with a warning when its error changes. */
void tg_agent_build(const struct tg_agent_opts *o, const struct tg_hw *hw, struct tg_topology *t);

#endif
