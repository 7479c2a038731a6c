/* The NUMA/NVLink fit model: how the kubelet's Topology Manager would align
 * a GPU pod on a node described by a struct tg_topology, and how many pods of
 * one shape still fit. Pure functions over plain structs; plugins/numa.c keeps
 * one struct tg_fit_state per node and calls these.
 *
 * A pod requesting GPUs takes all of them from one GPU domain, and its CPU
 * (millicores) and memory from that domain's NUMA node. The domain chosen is
 * the best fit: with an RDMA request, a domain with a GPU+NIC pair first;
 * then the fewest free GPUs left over (big holes stay whole for big pods);
 * then the lowest id. Only GPU pods are aligned (and only their use is
 * tracked): CPU-only pods run in the kubelet's shared pool. Under policy
 * restricted, a pod needing more GPUs than the largest domain may span
 * domains, as the kubelet then prefers the narrowest hint it can get. */
#ifndef TG_AGENT_FIT_H
#define TG_AGENT_FIT_H

#include <stdint.h>

#include "agent/topology.h"

struct tg_fit_req {
    int64_t gpus;                       /* GPUs (nvidia.com/gpu + amd.com/gpu) */
    int64_t cpu_milli;
    int64_t mem;                        /* bytes */
    uint8_t rdma;                       /* also requests an RDMA resource */
};

/* What aligned pods hold; a zeroed struct is an empty node. */
struct tg_fit_state {
    int64_t gpu_used[TG_TOPO_MAX_DOMAINS];     /* by domain index */
    int64_t cpu_used[TG_TOPO_MAX_NUMA];        /* millicores, by NUMA index */
    int64_t mem_used[TG_TOPO_MAX_NUMA];
    int64_t spread_gpus;                       /* GPUs of pods spanning domains */
};

/* Domain index for one pod of r, or -1 when no single domain holds it. */
int tg_fit_choose(const struct tg_topology *t, const struct tg_fit_state *s,
                  const struct tg_fit_req *r);
/* Adds (sign +1) or removes (-1) r on domain index dom (-1: spanning). */
void tg_fit_apply(const struct tg_topology *t, struct tg_fit_state *s, int dom,
                  const struct tg_fit_req *r, int sign);
/* Pods of r that still fit, at most limit; UINT32_MAX for a pod without GPUs
 * or on a node whose policy is none. */
uint32_t tg_fit_count(const struct tg_topology *t, const struct tg_fit_state *s,
                      const struct tg_fit_req *r, uint32_t limit);
/* Preference 0..100: 100 fits one domain (with a GPU+NIC pair when r->rdma),
 * 80 fits one domain without the pair, 0 fits none; 100 for pods without GPUs. */
int tg_fit_score(const struct tg_topology *t, const struct tg_fit_state *s,
                 const struct tg_fit_req *r);
/* Free GPUs in domain index d (never negative). */
int64_t tg_fit_free_gpus(const struct tg_topology *t, const struct tg_fit_state *s, uint32_t d);

#endif
