/* Hardware discovery for the agent: hwloc (the live machine, or an XML export
 * given by --topology-xml) plus, for NVLink, hwloc's NVLinkBandwidth /
 * XGMIBandwidth distances or `nvidia-smi topo -m` output.
 *
 * What is found:
 *  - NUMA nodes that own CPUs: OS index, PUs, local memory. Every PU has one
 *    home node (as Linux's nodeN/cpulist says): of the NUMA nodes whose
 *    locality holds it, the one of the narrowest locality, main memory
 *    (DRAM or no subtype) before HBM/GPU/NVM/CXL/SPM, then the lowest OS
 *    index. hwloc 2 gives a memory-only node the locality of the object it
 *    is attached to, so HBM beside DRAM shares its CPUs: counted once;
 *  - NUMA nodes without CPUs (GPU memory, HBM/MCDRAM in flat mode, CXL,
 *    NVDIMM): memory attached to the CPU node of its locality, else the
 *    unique closest one by hwloc's NUMA latency matrix (hwloc v1 exports put
 *    them at the root with no CPUs), else none; a GPU's memory names its GPU
 *    (hwloc's PCIBusID info on GPUMemory nodes);
 *  - GPUs: PCI devices of vendor NVIDIA (0x10de) or AMD (0x1002) and class
 *    VGA (0x0300), 3D (0x0302) or display (0x0380); bus id, NUMA node, PCIe
 *    root (host bridge, "dddd:bb"), the PCIe switch above it, its OS device
 *    name (nvml0, cuda0, rsmi0) when hwloc has one;
 *  - NICs: network-class PCI devices with a network or OpenFabrics OS device
 *    (mlx5_0 + ib0, rdmap197s0, eth0); rdma when an OpenFabrics device exists;
 *    the GPUs sharing a PCIe switch (PIX/PXB) or root (PHB) with an RDMA NIC
 *    are GPUDirect RDMA pairs;
 *  - NVSwitches (PCI subtype NVSwitch) and NVLink groups.
 * tg_hw_domains turns this into the GPU domains of model/topology.h. */
#ifndef TG_AGENT_DISCOVER_H
#define TG_AGENT_DISCOVER_H

#include <stdint.h>
#include <stdio.h>

#include "agent/nvsmi.h"
#include "model/topology.h"

#define TG_HW_MAX_GPUS 64
#define TG_HW_MAX_NICS 64
#define TG_HW_MAX_PUS  8192

struct tg_hw_gpu {
    char busid[TG_TOPO_NAME];           /* "0000:18:00.0" */
    char name[TG_TOPO_NAME];            /* nvml0 / cuda0 / rsmi0, "" none */
    char root[TG_TOPO_NAME];            /* PCIe root "0000:17", "" unknown */
    char sw[TG_TOPO_NAME];              /* bus id of the PCIe switch upstream port, "" none */
    uint16_t vendor, device, class_id;
    int32_t numa;                       /* NUMA node OS index, -1 unknown */
    int32_t nvlink;                     /* NVLink group, -1 none */
    int32_t pair_nic;                   /* index of the RDMA NIC it pairs with, -1 none */
    uint8_t pair_kind;                  /* 0 none, 1 same root (PHB), 2 same switch (PIX/PXB) */
};

struct tg_hw_nic {
    char name[TG_TOPO_NAME];            /* OpenFabrics name if any, else network name */
    char netdev[TG_TOPO_NAME];          /* ib0 / eth0, "" none */
    char busid[TG_TOPO_NAME];
    char root[TG_TOPO_NAME];
    int32_t numa;
    uint8_t rdma;
};

struct tg_hw {
    uint32_t nnuma, ngpus, nnics, nnvswitch, npus, nmem;
    struct tg_topo_numa numa[TG_TOPO_MAX_NUMA];     /* nodes with CPUs */
    struct tg_topo_memnode mem[TG_TOPO_MAX_MEMNODES]; /* nodes without CPUs */
    int32_t pu_home[TG_HW_MAX_PUS];     /* PU OS index -> its home NUMA node id, -1 none */
    struct tg_hw_gpu gpus[TG_HW_MAX_GPUS];
    struct tg_hw_nic nics[TG_HW_MAX_NICS];
    uint32_t nvlink_groups;
    const char *nvlink_source;          /* "hwloc NVLinkBandwidth", "nvidia-smi", ..., or "none" */
    char machine[64];                   /* DMIProductName or Architecture, may be "" */
};

/* Discovers the live machine (xml_path NULL) or loads an hwloc XML export.
 * The whole machine is described, not only what this process's cpuset and
 * memory binding allow (the agent's container may be confined to the
 * kubelet's shared CPU pool). On failure returns TG_EIO (XML does not load)
 * or TG_ENOMEM and writes a message into err[errlen]. *hw is fully
 * overwritten. */
int tg_hw_discover(const char *xml_path, struct tg_hw *hw, char *err, size_t errlen);

/* Takes NVLink groups (and, when hwloc found no NVIDIA GPU, the GPUs and NICs
 * themselves) from parsed `nvidia-smi topo -m` output. nvidia-smi numbers
 * GPUs in PCI bus order; when hwloc's NVIDIA GPU count differs, nothing is
 * merged and TG_ERANGE is returned. */
int tg_hw_merge_nvsmi(struct tg_hw *hw, const struct tg_nvsmi *m);

/* Builds t from hw: NUMA nodes with CPUs, memory-only NUMA nodes, and one
 * GPU domain per (NUMA node, NVLink group) holding GPUs, in order of first
 * GPU; NICs go to the domains of their NUMA node. policy is published as
 * given. */
void tg_hw_domains(const struct tg_hw *hw, uint8_t policy, struct tg_topology *t);

/* Human-readable summary of hw and t. */
void tg_hw_print(FILE *f, const struct tg_hw *hw, const struct tg_topology *t);

#endif
