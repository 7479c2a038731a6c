/* The NUMA/NVLink plugin ("NUMA"): reads each node's topology annotation
 * (topogang.io/topology, written by `topogang agent`) and, on nodes whose
 * kubelet Topology Manager policy is single-numa-node or restricted (the
 * node's label named by numa.policyLabel; else the agent's --topology-policy
 * in the annotation, unless none; else numa.defaultPolicy), counts
 * only the GPU pods that can be aligned to one GPU domain (GPUs + CPUs +
 * memory of one NUMA node), the way the kubelet would admit them. Its score
 * prefers nodes where the pod fits one domain, and a GPU+NIC pair on one PCIe
 * root when the pod also requests an RDMA resource (a name starting with
 * "rdma/" or containing "hca"). Scoring weight: policy scoring.numa.
 *
 * Where the annotation carries the kubelet's figures (what its static CPU and
 * memory managers can still pin per NUMA node), a Guaranteed pod is counted
 * only where one NUMA node still holds its exclusive CPUs and memory; else
 * it waits with TG_R_NUMA_KUBELET, naming the most the kubelet can give.
 *
 * A missing annotation means no inner topology (no limit). A bad one is
 * ignored the same way, with one warning per node and annotation and a count
 * in tg_numa_bad_annotations(). The model itself is model/fit.h. */
#ifndef TG_PLUGINS_NUMA_H
#define TG_PLUGINS_NUMA_H

#include <stddef.h>
#include <stdint.h>

#include "model/fit.h"
#include "plugins/plugin.h"

extern const struct tg_plugin tg_plugin_numa;

/* Annotations that failed to decode since start (a metric). */
uint64_t tg_numa_bad_annotations(void);

/* The fit model of a slot, or NULL when the node has no usable topology
 * (for tests, simulate's explanations and debugging). Aligns pending usage
 * first, hence the non-const cluster. */
const struct tg_fit_node *tg_numa_node(struct tg_cluster *c, uint32_t slot);

/* The alignment request of a set of requests: GPUs (nvidia.com/gpu,
 * amd.com/gpu), cpu, memory, and whether an RDMA resource is requested (the
 * QoS fields are left 0: not pinned). */
void tg_numa_req(const struct tg_rq *req, uint32_t n, struct tg_fit_req *out);

/* The argument of TG_R_NUMA_KUBELET: what (tg_fit_short's 'c' or 'm') and
 * the most the kubelet can still give on one NUMA node; and its text
 * ("0 exclusive CPUs", "11.8 GiB of memory") into buf. */
uint32_t tg_numa_kubelet_arg(char what, int64_t most);
const char *tg_numa_kubelet_text(uint32_t arg, char *buf, size_t n);

#endif
