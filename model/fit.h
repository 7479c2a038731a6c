/* The NUMA/NVLink fit model: how the kubelet's Topology Manager would align
 * a GPU pod on a node, and how many pods of one shape still fit. plugins/numa.c
 * keeps one struct tg_fit_node per node (built from the node's decoded
 * topology annotation) and calls these; they are plain functions so the model
 * is tested without a cluster.
 *
 * A pod requesting GPUs takes all of them from one GPU domain, and its CPU
 * (millicores) and memory from that domain's NUMA node. The domain chosen is
 * the best fit: with an RDMA request, a domain with a GPU+NIC pair first;
 * then the fewest free GPUs left over (big holes stay whole for big pods);
 * then the lowest id. Only GPU pods are aligned (and only their use is
 * tracked): CPU-only pods run in the kubelet's shared pool. Under policy
 * restricted, a pod needing more GPUs than the largest domain may span
 * domains, as the kubelet then prefers the narrowest hint it can get. */
#ifndef TG_MODEL_FIT_H
#define TG_MODEL_FIT_H

#include <stdint.h>

#include "model/topology.h"

struct tg_fit_req {
    int64_t gpus;                       /* GPUs (nvidia.com/gpu + amd.com/gpu) */
    int64_t cpu_milli;
    int64_t mem;                        /* bytes */
    uint8_t rdma;                       /* also requests an RDMA resource */
};

struct tg_fit_dom {
    int64_t used;                       /* GPUs held by pods aligned here */
    uint32_t gpus, rdma_gpus;
    int32_t numa;                       /* index into numa[], -1 unknown */
    uint32_t id;
};

struct tg_fit_numa {
    int64_t cpu_milli, mem;             /* capacity; 0 = unknown, no limit */
    int64_t cpu_used, mem_used;         /* held by aligned GPU pods */
};

/* Compact per-node model: a few hundred bytes for a GPU node. */
struct tg_fit_node {
    uint8_t policy;                     /* enum tg_topo_policy */
    uint32_t ndom, nnuma;
    int64_t spread;                     /* GPUs of pods spanning domains */
    struct tg_fit_dom *dom;             /* ndom, in the same allocation */
    struct tg_fit_numa *numa;           /* nnuma, in the same allocation */
};

/* Builds an empty (nothing placed) model of t in one allocation the caller
 * frees with tg_fit_node_free. Returns 0 or TG_ENOMEM. */
int tg_fit_node_new(const struct tg_topology *t, struct tg_fit_node **out);
void tg_fit_node_free(struct tg_fit_node **n);
/* Forgets every placement. */
void tg_fit_reset(struct tg_fit_node *n);

/* Domain index for one pod of r, or -1 when no single domain holds it. */
int tg_fit_choose(const struct tg_fit_node *n, const struct tg_fit_req *r);
/* Adds (sign +1) or removes (-1) r on domain index dom (-1: spanning). */
void tg_fit_apply(struct tg_fit_node *n, int dom, const struct tg_fit_req *r, int sign);
/* Pods of r that still fit, at most limit; UINT32_MAX for a pod without GPUs
 * or on a node whose policy is none. Replays placements on n and undoes
 * them: n is unchanged on return. */
uint32_t tg_fit_count(struct tg_fit_node *n, const struct tg_fit_req *r, uint32_t limit);
/* Preference 0..100: 100 fits one domain (with a GPU+NIC pair when r->rdma),
 * 80 fits one domain without the pair, 0 fits none; 100 for pods without GPUs. */
int tg_fit_score(const struct tg_fit_node *n, const struct tg_fit_req *r);
/* Free GPUs in domain index d (never negative). */
int64_t tg_fit_free_gpus(const struct tg_fit_node *n, uint32_t d);

#endif
