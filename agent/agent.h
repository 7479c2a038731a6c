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
    uint8_t policy;                     /* enum tg_topo_policy */
};

/* Discovers hardware into *hw and builds *t from it. NVLink groups come from
 * hwloc distances, else from o->nvsmi_file, else from `nvidia-smi topo -m`
 * when NVIDIA GPUs were found and nvidia-smi is on PATH. Returns 0, or TG_EIO
 * (XML or nvidia-smi file unusable) with err[errlen] saying why. A
 * nvidia-smi matrix that does not match hwloc's GPUs is ignored with a
 * warning. */
int tg_agent_collect(const struct tg_agent_opts *o, struct tg_hw *hw, struct tg_topology *t,
                     char *err, size_t errlen);

#endif
