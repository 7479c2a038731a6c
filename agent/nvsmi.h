/* Parser for `nvidia-smi topo -m`: the GPU/NIC connection matrix, GPU CPU
 * and NUMA affinity, and the NVLink groups it implies.
 *
 * Accepts the three forms found in the wild: tab-separated (as nvidia-smi
 * writes it), space-separated (tabs expanded by a terminal or an issue
 * tracker), and captures with ANSI escapes (the header is underlined). The
 * legend and "NIC Legend" sections are optional; a NIC legend names NICn
 * columns (NIC0: mlx5_0). */
#ifndef TG_AGENT_NVSMI_H
#define TG_AGENT_NVSMI_H

#include <stddef.h>
#include <stdint.h>

#define TG_NVSMI_MAX 64                 /* GPUs + NICs */

/* Connection kinds, closest last but NV. */
enum tg_nvsmi_conn { TG_CONN_UNKNOWN, TG_CONN_X, TG_CONN_SYS, TG_CONN_NODE, TG_CONN_PHB,
                     TG_CONN_PXB, TG_CONN_PIX, TG_CONN_NV };

struct tg_nvsmi {
    uint32_t ngpus, nnics;
    char nic[TG_NVSMI_MAX][32];         /* NIC names: legend, header label, or "NICn" */
    int32_t gpu_numa[TG_NVSMI_MAX];     /* NUMA Affinity column; -1 absent, N/A or > 4095 */
    uint32_t gpu_ncpus[TG_NVSMI_MAX];   /* CPUs in the CPU Affinity list, 0 absent or
                                           malformed (a CPU number or count >= 2^20) */
    char gpu_cpus[TG_NVSMI_MAX][64];    /* CPU Affinity text ("0-11,24-35"), "" absent */
    uint8_t gg[TG_NVSMI_MAX][TG_NVSMI_MAX];   /* GPU x GPU conn */
    uint8_t nvlinks[TG_NVSMI_MAX][TG_NVSMI_MAX]; /* bonded NVLinks (NV#), 0 none */
    uint8_t gn[TG_NVSMI_MAX][TG_NVSMI_MAX];   /* GPU x NIC conn */
    int32_t group[TG_NVSMI_MAX];        /* NVLink group per GPU, -1 none */
    uint32_t ngroups;
};

/* Parses n bytes of `nvidia-smi topo -m` output into *m. Returns 0, or
 * TG_EPARSE when no GPU matrix is found or a row is inconsistent (wrong cell
 * count, unknown cell, asymmetric GPU links). */
int tg_nvsmi_parse(const char *text, size_t n, struct tg_nvsmi *m);
/* Reads and parses a file (at most 1 MiB). TG_EIO when unreadable. */
int tg_nvsmi_load(const char *path, struct tg_nvsmi *m);

/* Partitions n GPUs into NVLink groups: GPUs pairwise joined by NVLink
 * (directly, or through one NVSwitch fabric, as adj already says), formed
 * greedily in index order; a GPU linked to none is in no group (-1).
 * adj is n x n, row-major, nonzero = linked. Writes group[n]; returns the
 * number of groups. */
uint32_t tg_nvlink_cliques(uint32_t n, const uint8_t *adj, int32_t *group);

#endif
