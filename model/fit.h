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
 * domains, as the kubelet then prefers the narrowest hint it can get.
 *
 * What the kubelet can still give exclusively (the annotation's kcpus/kmem,
 * read by the agent from the kubelet's pod-resources API) limits the pods
 * the kubelet pins: Guaranteed pods. Such a pod needs one NUMA node with its
 * exclusive CPUs (whole CPUs of its integer-CPU containers) and its memory
 * (Static memory manager) still free: a GPU pod on its domain's NUMA node; a
 * pod without GPUs on the lowest-numbered NUMA node that holds it (the
 * kubelet's Topology Manager picks the first narrowest hint), a NUMA node
 * without CPUs only when it needs no exclusive CPU. Pods the kubelet's
 * figures already include (the annotation's kpods) are not subtracted again.
 * Memory-only NUMA nodes are never where a pod's CPUs go. */
#ifndef TG_MODEL_FIT_H
#define TG_MODEL_FIT_H

#include <stdint.h>

#include "model/topology.h"

struct tg_fit_req {
    int64_t gpus;                       /* GPUs (nvidia.com/gpu + amd.com/gpu) */
    int64_t cpu_milli;
    int64_t mem;                        /* bytes */
    uint8_t rdma;                       /* also requests an RDMA resource */
    uint8_t guaranteed;                 /* QoS Guaranteed: the kubelet pins it */
    uint8_t counted;                    /* already in the kubelet's figures (kpods) */
    uint16_t excl_cpus;                 /* whole CPUs the static CPU manager pins */
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
    int32_t id;                         /* NUMA node id */
    int64_t kcpus, kmem;                /* the kubelet can still give; -1 unknown */
    int64_t kcpus_used, kmem_used;      /* by pinned pods not in its figures */
};

/* A NUMA node without CPUs: only its memory the kubelet can still pin. */
struct tg_fit_mem {
    int32_t id;
    int64_t kmem, kmem_used;            /* kmem -1: unknown (never a target) */
};

/* Compact per-node model: a few hundred bytes for a GPU node. */
struct tg_fit_node {
    uint8_t policy;                     /* enum tg_topo_policy */
    uint8_t kubelet;                    /* has the kubelet's figures (some kcpus/kmem) */
    uint32_t ndom, nnuma, nmem, nkpods;
    int64_t spread;                     /* GPUs of pods spanning domains */
    struct tg_fit_dom *dom;             /* ndom, in the same allocation */
    struct tg_fit_numa *numa;           /* nnuma, in the same allocation */
    struct tg_fit_mem *mem;             /* nmem, in the same allocation */
    uint64_t *kpods;                    /* nkpods hashes of "ns/name", sorted, same allocation */
};

/* Placement codes of tg_fit_choose: a GPU domain index (0..63), or for a
 * pinned pod without GPUs a CPU NUMA node (TG_FIT_NUMA + index) or a
 * memory-only node (TG_FIT_MEM + index). */
#define TG_FIT_NUMA 64
#define TG_FIT_MEM  128

/* Builds an empty (nothing placed) model of t in one allocation the caller
 * frees with tg_fit_node_free. Returns 0 or TG_ENOMEM. */
int tg_fit_node_new(const struct tg_topology *t, struct tg_fit_node **out);
void tg_fit_node_free(struct tg_fit_node **n);
/* Forgets every placement. */
void tg_fit_reset(struct tg_fit_node *n);

/* Whether a pod the kubelet pins is limited here: r is Guaranteed, not
 * already counted, and the node has the kubelet's figures. */
int tg_fit_pinned(const struct tg_fit_node *n, const struct tg_fit_req *r);

/* 1 when the kubelet's figures already include pod key ("ns/name"). */
int tg_fit_counted(const struct tg_fit_node *n, const char *key);

/* Placement code for one pod of r (see TG_FIT_NUMA), or -1: no single domain
 * holds it (GPU pod), or no NUMA node does (pinned pod), or there is nothing
 * to align (neither). */
int tg_fit_choose(const struct tg_fit_node *n, const struct tg_fit_req *r);
/* Adds (sign +1) or removes (-1) r at placement code `at` (-1: GPUs spanning
 * domains). The kubelet's figures are charged only for a pinned, uncounted r. */
void tg_fit_apply(struct tg_fit_node *n, int at, const struct tg_fit_req *r, int sign);
/* Pods of r that still fit, at most limit; UINT32_MAX for a pod with nothing
 * to align (no GPUs, not pinned) or on a node whose policy is none. Replays
 * placements on n and undoes them: n is unchanged on return. */
uint32_t tg_fit_count(struct tg_fit_node *n, const struct tg_fit_req *r, uint32_t limit);
/* Preference 0..100: 100 fits one domain (with a GPU+NIC pair when r->rdma),
 * 80 fits one domain without the pair, 0 fits none; 100 for pods with
 * nothing to align; a pinned pod without GPUs: 100 or 0. */
int tg_fit_score(const struct tg_fit_node *n, const struct tg_fit_req *r);

/* For a pinned r that fits no NUMA node: the most the kubelet can still give
 * on one NUMA node of what is short. *what: 'm' memory (*most in bytes) or
 * 'c' exclusive CPUs (*most in CPUs). Returns 0, or -1 when nothing is short
 * (r fits). */
int tg_fit_short(const struct tg_fit_node *n, const struct tg_fit_req *r, char *what,
                 int64_t *most);
/* Free GPUs in domain index d (never negative). */
int64_t tg_fit_free_gpus(const struct tg_fit_node *n, uint32_t d);

#endif
