/* What the kubelet can still give exclusively, per NUMA node, from its
 * pod-resources API (gRPC service v1.PodResourcesLister on the unix socket
 * /var/lib/kubelet/pod-resources/kubelet.sock):
 *   GetAllocatableResources: the CPUs the static CPU manager may assign
 *     exclusively (cpu_ids), the memory the Static memory manager may assign
 *     per NUMA node (memory, type "memory");
 *   List: per container of every active pod, its exclusive CPUs and its
 *     pinned memory with their NUMA nodes.
 * Free = allocatable - assigned; CPUs are put on NUMA nodes with the agent's
 * hwloc view (each PU's home node). Why the API and not the checkpoint files
 * (cpu_manager_state, memory_manager_state): it is the kubelet's supported,
 * versioned interface (GA), it answers for the running kubelet instead of
 * its last write, and it already excludes the reserved CPUs and memory,
 * which the checkpoints do not say.
 *
 * The transport is plain HTTP/2 (prior knowledge) over the unix socket with
 * libcurl: a unary gRPC call is a POST of one length-prefixed message with
 * "content-type: application/grpc", answered by one message and the trailer
 * grpc-status. The messages are decoded here (a few protobuf fields). */
#ifndef TG_AGENT_PODRES_H
#define TG_AGENT_PODRES_H

#include <stddef.h>
#include <stdint.h>

#include "agent/discover.h"
#include "model/topology.h"

#define TG_PODRES_SOCKET   "/var/lib/kubelet/pod-resources/kubelet.sock"
#define TG_PODRES_MAX_CPUS 8192
#define TG_PODRES_MAX_NUMA 128

struct tg_podres_numa {
    int32_t id;
    uint64_t alloc;                     /* memory the memory manager may pin here */
    uint64_t used;                      /* pinned by containers (multi-NUMA: on each) */
};

struct tg_podres {
    uint8_t cpu_alloc[TG_PODRES_MAX_CPUS / 8];  /* bitmap: exclusive-capable CPUs */
    uint8_t cpu_used[TG_PODRES_MAX_CPUS / 8];   /* bitmap: assigned exclusively */
    uint32_t nalloc_cpus, nnuma;
    struct tg_podres_numa numa[TG_PODRES_MAX_NUMA];
    uint32_t npods, pods_len;           /* pods holding exclusive CPUs or memory */
    char pods[TG_TOPO_KPODS_BYTES];     /* "ns/name\0" ... */
};

/* Decodes an AllocatableResourcesResponse / ListPodResourcesResponse message
 * (protobuf, without the gRPC prefix) into *p, adding to what is there.
 * Returns 0 or TG_EPARSE (malformed; *p may be partly filled). */
int tg_podres_parse_allocatable(const uint8_t *msg, size_t n, struct tg_podres *p);
int tg_podres_parse_list(const uint8_t *msg, size_t n, struct tg_podres *p);

/* The message of a unary gRPC response body of len bytes: one
 * length-prefixed message (flag byte 0 = uncompressed, 4-byte big-endian
 * length); bytes after it are ignored. Returns 0 with the message at
 * body + 5, *n bytes, or TG_EPARSE with *why saying what is wrong. */
int tg_podres_unframe(const uint8_t *body, size_t len, size_t *n, const char **why);

/* Queries both calls on the kubelet's socket into *p (zeroed first).
 * Returns 0, or TG_ENOENT (no socket), TG_EIO (connection, HTTP/2 or gRPC
 * error), TG_EPARSE, with err[errlen] saying what. */
int tg_podres_query(const char *socket_path, struct tg_podres *p, char *err, size_t errlen);

/* Sets kcpus/kmem on t's CPU NUMA nodes (and kmem on its memory-only
 * nodes) and t->kpods from p: kcpus when the kubelet reports exclusive CPUs
 * (static CPU manager), kmem when it reports per-NUMA memory (Static memory
 * manager), at most TG_TOPO_MAX_BYTES (what the annotation carries; the
 * sums saturate). CPUs go to NUMA nodes by hw's home node of each PU. */
void tg_podres_apply(const struct tg_podres *p, const struct tg_hw *hw, struct tg_topology *t);

#endif
