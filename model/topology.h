/* The inside of one node as the scheduler sees it: NUMA nodes and GPU
 * domains, and the annotation `topogang.io/topology` that carries them from
 * the agent to the scheduler.
 *
 * A GPU domain is the set a pod's GPUs should come from so that the kubelet's
 * Topology Manager (single-numa-node, restricted) can align them: the GPUs of
 * one NVLink group on one NUMA node. A machine without NVLink has one domain
 * per NUMA node holding GPUs. Each domain lists its PCIe roots (host bridges),
 * its network adapters, and how many of its GPUs share a PCIe switch or root
 * with an RDMA adapter (GPUDirect RDMA pairs).
 *
 * Annotation (compact JSON, version 1):
 *   {"v":1,"policy":"single-numa-node",
 *    "numa":[{"id":0,"cpus":48,"mem":201863462912}, ...],
 *    "domains":[{"id":0,"numa":0,"gpus":4,"nvlink":0,"roots":["0000:17"],
 *                "nics":[{"name":"mlx5_0","rdma":true,"root":"0000:17"}],
 *                "rdma_gpus":1}, ...]}
 * "numa" in a domain is a NUMA node id from "numa"; "nvlink" is the NVLink
 * group (-1: none).
 *
 * "numa" lists only NUMA nodes that own CPUs: the places a pod's CPUs and
 * memory are aligned. NUMA nodes without CPUs (GPU memory over NVLink-C2C or
 * POWER9 NVLink, HBM/MCDRAM in flat mode, CXL or NVDIMM memory) are memory
 * attached to a GPU or a socket, never an alignment target; when present
 * they are listed apart (omitted when there are none):
 *    "memnodes":[{"id":252,"mem":16911433728,"kind":"gpu","numa":0,
 *                 "gpu":"0004:04:00.0"}, ...]
 * "numa" there is the CPU NUMA node the memory is local to (-1: unknown),
 * "gpu" the PCI bus id of the GPU whose memory it is ("" unknown); "kmem"
 * (optional) what the kubelet's memory manager can still pin there: a
 * Guaranteed pod without exclusive CPUs may have its memory there.
 *
 * What the kubelet can still give exclusively, when the agent read it from
 * the kubelet's pod-resources API (optional, per CPU NUMA node):
 *    {"id":0,"cpus":48,"mem":...,"kcpus":40,"kmem":190000000000}
 * kcpus: CPUs the static CPU manager can still assign exclusively there;
 * kmem: bytes the Static memory manager can still assign there. Absent: that
 * manager does not pin (policy none) or the agent has no access. With them,
 *    "kpods":["ns/name", ...]
 * names the pods whose exclusive CPUs and memory are already out of kcpus
 * and kmem (so the scheduler subtracts only the others).
 *
 * The decoder accepts only this shape, within the caps below, so a hostile
 * annotation is rejected instead of trusted. */
#ifndef TG_MODEL_TOPOLOGY_H
#define TG_MODEL_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#define TG_TOPO_VERSION     1
#define TG_TOPO_MAX_JSON    (64 * 1024)    /* annotation bytes accepted */
#define TG_TOPO_MAX_NUMA    64
#define TG_TOPO_MAX_DOMAINS 64             /* < 0xff: fits struct tg_usage.inner */
#define TG_TOPO_MAX_ROOTS   16             /* per domain */
#define TG_TOPO_MAX_NICS    16             /* per domain */
#define TG_TOPO_MAX_GPUS    256            /* per domain */
#define TG_TOPO_NAME        32             /* name buffer, NUL included */
#define TG_TOPO_MAX_MEMNODES 64            /* NUMA nodes without CPUs */
#define TG_TOPO_KPODS_BYTES (16 * 1024)    /* "ns/name\0..." of kpods */
#define TG_TOPO_POD_KEY     320            /* longest "ns/name" + 1 */
#define TG_TOPO_MAX_BYTES   (1ull << 53)   /* mem and kmem accepted (exact in a double) */

#define TG_LABEL_NUMA_NODES        "topogang.io/numa-nodes"
#define TG_LABEL_MEMORY_NUMA_NODES "topogang.io/memory-numa-nodes"
#define TG_LABEL_GPU_DOMAINS       "topogang.io/gpu-domains"
#define TG_LABEL_GPUS_PER_DOMAIN   "topogang.io/gpus-per-domain"
#define TG_TOPO_NLABELS 4
/* The label keys the agent publishes, in the order of tg_topo_labels. */
extern const char *const tg_topo_label_keys[TG_TOPO_NLABELS];

/* The agent's --topology-policy: what the node's kubelet Topology Manager
 * enforces. none: the scheduler applies no NUMA limit on this node. */
enum tg_topo_policy { TG_TOPO_POLICY_NONE, TG_TOPO_POLICY_SINGLE_NUMA,
                      TG_TOPO_POLICY_RESTRICTED };

/* A NUMA node that owns CPUs. */
struct tg_topo_numa {
    int32_t id;                         /* OS index */
    uint32_t cpus;                      /* logical CPUs (PUs) whose home node this is */
    uint64_t mem;                       /* bytes of local memory */
    uint8_t known;                      /* TG_TOPO_KCPUS | TG_TOPO_KMEM: which of the two are set */
    uint32_t kcpus;                     /* exclusive CPUs the kubelet can still give here */
    uint64_t kmem;                      /* bytes the memory manager can still give here */
};
#define TG_TOPO_KCPUS 1
#define TG_TOPO_KMEM  2

/* What a NUMA node without CPUs holds (hwloc's subtype). */
enum tg_topo_memkind { TG_TOPO_MEM_OTHER, TG_TOPO_MEM_GPU, TG_TOPO_MEM_HBM, TG_TOPO_MEM_NVM,
                       TG_TOPO_MEM_CXL, TG_TOPO_MEM_SPM, TG_TOPO_MEM_DRAM, TG_TOPO_MEM_NKINDS };

/* A NUMA node without CPUs: memory attached to a socket or a GPU. */
struct tg_topo_memnode {
    int32_t id;                         /* OS index */
    int32_t numa;                       /* CPU NUMA node it is local to, -1 unknown */
    uint64_t mem;                       /* bytes */
    uint8_t kind;                       /* enum tg_topo_memkind */
    uint8_t known;                      /* TG_TOPO_KMEM when kmem is set */
    uint64_t kmem;                      /* bytes the memory manager can still give here */
    char gpu[TG_TOPO_NAME];             /* bus id of the GPU whose memory it is, "" */
};

struct tg_topo_nic {
    char name[TG_TOPO_NAME];            /* mlx5_0, rdmap197s0, eth0 */
    char root[TG_TOPO_NAME];            /* PCIe root "dddd:bb", "" unknown */
    uint8_t rdma;                       /* has an RDMA (OpenFabrics) device */
};

struct tg_topo_domain {
    uint32_t id;
    int32_t numa;                       /* NUMA node id, -1 unknown */
    int32_t nvlink;                     /* NVLink group, -1 none */
    uint32_t gpus;
    uint32_t rdma_gpus;                 /* GPUs sharing a PCIe switch/root with an RDMA NIC */
    uint32_t nroots, nnics;
    char roots[TG_TOPO_MAX_ROOTS][TG_TOPO_NAME];
    struct tg_topo_nic nics[TG_TOPO_MAX_NICS];
};

struct tg_topology {
    uint32_t version;
    uint8_t policy;                     /* enum tg_topo_policy */
    uint32_t nnuma, ndomains, nmem;
    struct tg_topo_numa numa[TG_TOPO_MAX_NUMA];
    struct tg_topo_domain domains[TG_TOPO_MAX_DOMAINS];
    struct tg_topo_memnode mem[TG_TOPO_MAX_MEMNODES];
    uint32_t nkpods, kpods_len;         /* names in kpods, bytes used */
    char kpods[TG_TOPO_KPODS_BYTES];    /* "ns/name" NUL-terminated, one after another */
};

/* "none", "single-numa-node", "restricted" <-> enum; parse returns 0 or TG_EINVAL. */
int tg_topo_policy_parse(const char *s, uint8_t *out);
const char *tg_topo_policy_name(uint8_t policy);

/* Index of NUMA node id in t->numa, or -1. */
int tg_topo_numa_index(const struct tg_topology *t, int32_t id);

/* "memory", "gpu", "hbm", "nvm", "cxl", "spm", "dram" <-> enum tg_topo_memkind. */
const char *tg_topo_memkind_name(uint8_t kind);
int tg_topo_memkind_parse(const char *s, uint8_t *out);

/* Appends a pod key to t->kpods. Returns 0, or TG_ERANGE when it is empty,
 * too long or does not fit (the caller then leaves it out: the scheduler
 * counts that pod once more, never less). */
int tg_topo_add_kpod(struct tg_topology *t, const char *key);

/* Appends the compact annotation JSON of t to *out (tg_sb from util/strbuf.h,
 * declared opaque here). When the full text would exceed TG_TOPO_MAX_JSON,
 * the domains' "roots" and "nics" lists are left empty (counts, NUMA nodes
 * and rdma_gpus stay), so the result always decodes. Returns 0, TG_ENOMEM, or
 * TG_EINVAL when t breaks a cap (the decoder would refuse it). */
struct tg_sb;
int tg_topo_encode(const struct tg_topology *t, struct tg_sb *out);

/* Decodes an annotation of n bytes (need not be NUL-terminated) into *t.
 * Rejects, with TG_EPARSE (or TG_ERANGE for a cap broken), and t zeroed:
 * more than TG_TOPO_MAX_JSON bytes, invalid JSON, a version other than 1,
 * a missing or mistyped field, negative or absurd counts, more entries than
 * the caps, duplicate ids, a domain whose NUMA node is not listed. On
 * failure *why (if not NULL) points to a static text saying what was wrong. */
int tg_topo_decode(const char *json, size_t n, struct tg_topology *t, const char **why);

/* The selector labels (keys in tg_topo_label_keys), as label values:
 * numa-nodes = NUMA nodes with CPUs; memory-numa-nodes = NUMA nodes without
 * CPUs; gpu-domains = GPU domain count; gpus-per-domain = GPUs in the
 * smallest domain with GPUs ("0" when none). */
void tg_topo_labels(const struct tg_topology *t, char val[TG_TOPO_NLABELS][16]);

/* JSON merge patch (RFC 7386) for a Node, setting the annotation to `annot`
 * and the labels; appended to *out. Returns 0 or TG_ENOMEM. */
int tg_topo_patch_body(const struct tg_topology *t, const char *annot, struct tg_sb *out);

/* 1 when the Node's current annotation (NULL: absent) and label values
 * (cur[i] for tg_topo_label_keys[i], NULL: absent) differ from what t would
 * publish, so a patch is needed. */
int tg_topo_needs_patch(const struct tg_topology *t, const char *cur_annot,
                        const char *const cur[TG_TOPO_NLABELS]);

#endif
