/* Discovery against every hwloc export in testdata/hwloc: the NUMA, GPU, NIC
 * and NVLink facts its README states for each machine, and the GPU domains
 * built from them. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/agent.h"
#include "agent/discover.h"
#include "model/topology.h"
#include "helpers.h"
#include "util/err.h"
#include "util/strbuf.h"

static struct tg_hw hw;
static struct tg_topology topo;

static void load(const char *file)
{
    char path[1024], sub[512], err[512] = "";
    snprintf(sub, sizeof sub, "hwloc/%s", file);
    int rc = tg_hw_discover(td_path(sub, path, sizeof path), &hw, err, sizeof err);
    if (rc)
        fail_msg("%s: %s", file, err);
    tg_hw_domains(&hw, TG_TOPO_POLICY_SINGLE_NUMA, &topo);
}

static uint32_t gpus_on_numa(int32_t numa)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < hw.ngpus; i++)
        n += hw.gpus[i].numa == numa;
    return n;
}

static uint32_t count_vendor(uint16_t v)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < hw.ngpus; i++)
        n += hw.gpus[i].vendor == v;
    return n;
}

static const struct tg_hw_nic *nic(const char *name)
{
    for (uint32_t i = 0; i < hw.nnics; i++)
        if (!strcmp(hw.nics[i].name, name))
            return &hw.nics[i];
    return NULL;
}

static uint32_t rdma_nics(void)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < hw.nnics; i++)
        n += hw.nics[i].rdma;
    return n;
}

static int has_gpu_named(const char *name)
{
    for (uint32_t i = 0; i < hw.ngpus; i++)
        if (!strcmp(hw.gpus[i].name, name))
            return 1;
    return 0;
}

/* Every discovered topology must survive its own annotation. */
static void assert_roundtrip(void)
{
    struct tg_sb b = {0};
    struct tg_topology back;
    const char *why = NULL;
    assert_int_equal(tg_topo_encode(&topo, &b), 0);
    assert_true(b.len < TG_TOPO_MAX_JSON);
    assert_int_equal(tg_topo_decode(b.s, b.len, &back, &why), 0);
    assert_int_equal(back.nnuma, topo.nnuma);
    assert_int_equal(back.ndomains, topo.ndomains);
    assert_memory_equal(back.domains, topo.domains, sizeof topo.domains);
    assert_int_equal(back.nmem, topo.nmem);
    assert_memory_equal(back.mem, topo.mem, sizeof topo.mem);
    tg_sb_free(&b);
}

/* AWS g4dn.metal: 2 sockets, 2 NUMA, 96 PUs, 8 T4, 4 per socket, 2 per host
 * bridge, NVML devices; EFA rdmap197s0 + ENA eth0 on socket 1. */
static void test_g4dn(void **state)
{
    (void)state;
    load("aws-g4dn-metal_2s-cascadelake_8xT4_efa.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(hw.npus, 96);
    assert_int_equal(hw.ngpus, 8);
    assert_int_equal(count_vendor(0x10de), 8);
    assert_int_equal(gpus_on_numa(0), 4);
    assert_int_equal(gpus_on_numa(1), 4);
    for (int i = 0; i < 8; i++) {
        char n[32];
        snprintf(n, sizeof n, "nvml%d", i);
        assert_true(has_gpu_named(n));
    }
    /* two GPUs per PCIe host bridge */
    for (uint32_t i = 0; i < hw.ngpus; i++) {
        int same = 0;
        for (uint32_t j = 0; j < hw.ngpus; j++)
            same += !strcmp(hw.gpus[i].root, hw.gpus[j].root);
        assert_int_equal(same, 2);
    }
    const struct tg_hw_nic *efa = nic("rdmap197s0"), *eth = nic("eth0");
    assert_non_null(efa);
    assert_non_null(eth);
    assert_true(efa->rdma);
    assert_false(eth->rdma);
    assert_int_equal(efa->numa, 1);
    assert_int_equal(eth->numa, 1);
    assert_int_equal(rdma_nics(), 1);
    assert_string_equal(hw.nvlink_source, "none");
    /* domains: one per socket, 4 GPUs, 2 roots; the EFA is on neither GPU root */
    assert_int_equal(topo.ndomains, 2);
    assert_int_equal(topo.domains[0].gpus, 4);
    assert_int_equal(topo.domains[1].gpus, 4);
    assert_int_equal(topo.domains[0].nroots, 2);
    assert_int_equal(topo.domains[1].nnics, 2);
    assert_int_equal(topo.domains[0].nnics, 0);
    assert_int_equal(topo.domains[1].rdma_gpus, 0);
    assert_roundtrip();
}

/* DGX-2H (trimmed): 2 NUMA, 16 V100 nvml0..15, 12 NVSwitches, an
 * NVLinkBandwidth matrix, no NICs. The matrix links each GPU to the 6
 * NVSwitches of its baseboard and has no switch-to-switch entries, so it
 * shows two NVLink groups of 8, one per baseboard (and per socket). */
static void test_dgx2(void **state)
{
    (void)state;
    load("nvidia-dgx2_2s-skylake_16xV100_12xNVSwitch.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(hw.ngpus, 16);
    assert_int_equal(count_vendor(0x10de), 16);
    assert_int_equal(hw.nnvswitch, 12);
    assert_int_equal(hw.nnics, 0);
    assert_true(has_gpu_named("nvml0") && has_gpu_named("nvml15"));
    assert_string_equal(hw.nvlink_source, "hwloc NVLinkBandwidth");
    assert_int_equal(hw.nvlink_groups, 2);
    for (uint32_t i = 0; i < hw.ngpus; i++) {
        assert_true(hw.gpus[i].nvlink >= 0);
        assert_int_equal(hw.gpus[i].nvlink, hw.gpus[i].numa); /* baseboard == socket here */
        assert_true(hw.gpus[i].sw[0]);                      /* deep PCIe switch trees */
    }
    assert_int_equal(topo.ndomains, 2);
    assert_int_equal(topo.domains[0].gpus, 8);
    assert_int_equal(topo.domains[1].gpus, 8);
    assert_int_not_equal(topo.domains[0].nvlink, topo.domains[1].nvlink);
    assert_roundtrip();
}

/* JUWELS Booster: EPYC NPS4, 8 NUMA, 96 PUs, 4 A100 10de:20b0 class 0302
 * without OS devices, 4 ConnectX-6 mlx5_0..3 / ib0..3; each GPU shares a PCIe
 * switch with one NIC; pairs on NUMA 1, 3, 5, 7. */
static void test_juwels_booster(void **state)
{
    (void)state;
    load("juwels-booster_2s-epyc7402-nps4_4xA100_4xmlx5.xml");
    assert_int_equal(hw.nnuma, 8);
    assert_int_equal(hw.npus, 96);
    assert_int_equal(hw.ngpus, 4);               /* the BMC's VGA is not a GPU */
    assert_int_equal(rdma_nics(), 4);
    for (uint32_t i = 0; i < hw.ngpus; i++) {
        const struct tg_hw_gpu *g = &hw.gpus[i];
        assert_int_equal(g->vendor, 0x10de);
        assert_int_equal(g->device, 0x20b0);
        assert_int_equal(g->class_id, 0x0302);
        assert_string_equal(g->name, "");
        assert_true(g->numa == 1 || g->numa == 3 || g->numa == 5 || g->numa == 7);
        assert_int_equal(g->pair_kind, 2);
        assert_true(g->pair_nic >= 0);
        const struct tg_hw_nic *k = &hw.nics[g->pair_nic];
        assert_int_equal(k->numa, g->numa);
        assert_true(k->rdma);
        assert_int_equal(strncmp(k->name, "mlx5_", 5), 0);
        assert_int_equal(strncmp(k->netdev, "ib", 2), 0);
    }
    for (int32_t n = 1; n < 8; n += 2)
        assert_int_equal(gpus_on_numa(n), 1);
    assert_int_equal(topo.ndomains, 4);
    for (uint32_t d = 0; d < 4; d++) {
        assert_int_equal(topo.domains[d].gpus, 1);
        assert_int_equal(topo.domains[d].rdma_gpus, 1);
        assert_int_equal(topo.domains[d].nnics, 1);
        assert_true(topo.domains[d].nics[0].rdma);
    }
    assert_roundtrip();
}

/* JUWELS Cluster GPU node, hwloc v1 XML: 2 NUMA, 80 PUs, 4 V100 (3D class),
 * 2 mlx5; per socket 2 GPUs and 1 NIC share a PCIe switch. */
static void test_juwels_cluster(void **state)
{
    (void)state;
    load("juwels-cluster-gpu_2s-xeon6148_4xV100_2xmlx5.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(hw.npus, 80);
    assert_int_equal(hw.ngpus, 4);
    assert_int_equal(rdma_nics(), 2);
    assert_int_equal(gpus_on_numa(0), 2);
    assert_int_equal(gpus_on_numa(1), 2);
    for (uint32_t i = 0; i < hw.ngpus; i++) {
        assert_int_equal(hw.gpus[i].class_id, 0x0302);
        assert_int_equal(hw.gpus[i].pair_kind, 2);
        assert_int_equal(hw.nics[hw.gpus[i].pair_nic].numa, hw.gpus[i].numa);
    }
    assert_string_equal(hw.gpus[0].sw, hw.gpus[1].sw);
    assert_string_equal(hw.gpus[2].sw, hw.gpus[3].sw);
    assert_string_not_equal(hw.gpus[0].sw, hw.gpus[2].sw);
    assert_int_equal(topo.ndomains, 2);
    assert_int_equal(topo.domains[0].rdma_gpus, 2);
    assert_int_equal(topo.domains[1].rdma_gpus, 2);
    assert_roundtrip();
}

/* LLNL Lassen (POWER9): NUMA P#0 and P#8, 160 PUs, 4 V100 nvml0..3, 2 per
 * socket; 4 mlx5 ports, 2 per socket; PCI domains other than 0000. */
static void test_lassen(void **state)
{
    (void)state;
    load("llnl-lassen_2s-power9_4xV100_4xmlx5.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(hw.numa[0].id, 0);
    assert_int_equal(hw.numa[1].id, 8);
    assert_int_equal(hw.npus, 160);
    assert_int_equal(hw.ngpus, 4);
    assert_int_equal(gpus_on_numa(0), 2);
    assert_int_equal(gpus_on_numa(8), 2);
    for (int i = 0; i < 4; i++) {
        char n[32];
        snprintf(n, sizeof n, "nvml%d", i);
        assert_true(has_gpu_named(n));
    }
    assert_int_equal(rdma_nics(), 4);
    uint32_t on0 = 0;
    for (int i = 0; i < 4; i++) {
        char n[32];
        snprintf(n, sizeof n, "mlx5_%d", i);
        assert_non_null(nic(n));
        on0 += nic(n)->numa == 0;
    }
    assert_int_equal(on0, 2);
    assert_string_equal(hw.gpus[0].busid, "0004:04:00.0");
    assert_int_not_equal(strncmp(hw.gpus[2].busid, "0000:", 5), 0);
    assert_int_equal(topo.ndomains, 2);
    assert_int_equal(topo.domains[1].numa, 8);
    assert_roundtrip();
}

/* LLNL Tioga: 1 socket, 4 NUMA, 128 PUs, 8 MI250X GCDs rsmi0..7 (AMD), 2 per
 * NUMA, host bridges below NUMANode objects; 4 Slingshot hsi0..3 (Ethernet,
 * not RDMA in hwloc's eyes), one per NUMA next to the GPUs. */
static void test_tioga(void **state)
{
    (void)state;
    load("llnl-tioga_1s-epyc7a53-4numa_8xMI250X-gcd_4xslingshot.xml");
    assert_int_equal(hw.nnuma, 4);
    assert_int_equal(hw.npus, 128);
    assert_int_equal(hw.ngpus, 8);
    assert_int_equal(count_vendor(0x1002), 8);
    for (int32_t n = 0; n < 4; n++)
        assert_int_equal(gpus_on_numa(n), 2);
    for (int i = 0; i < 8; i++) {
        char n[32];
        snprintf(n, sizeof n, "rsmi%d", i);
        assert_true(has_gpu_named(n));
    }
    int numa_seen[4] = {0};
    for (int i = 0; i < 4; i++) {
        char n[32];
        snprintf(n, sizeof n, "hsi%d", i);
        const struct tg_hw_nic *k = nic(n);
        assert_non_null(k);
        assert_false(k->rdma);
        assert_true(k->numa >= 0 && k->numa < 4);
        numa_seen[k->numa]++;
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(numa_seen[i], 1);
    assert_int_equal(topo.ndomains, 4);
    for (uint32_t d = 0; d < 4; d++)
        assert_int_equal(topo.domains[d].gpus, 2);
    assert_roundtrip();
}

/* Chimera: 1 socket Threadripper, 2 NUMA with memory (P#0, P#2), 64 PUs;
 * GTX 1070 (cuda0, nvml0) on NUMA 0, Radeon Vega on NUMA 2; no RDMA NIC. */
static void test_chimera(void **state)
{
    (void)state;
    load("chimera_1s-threadripper2990wx-2numa_nvidia+amd-gpu.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(hw.numa[0].id, 0);
    assert_int_equal(hw.numa[1].id, 2);
    assert_int_equal(hw.npus, 64);
    assert_int_equal(hw.ngpus, 2);
    for (uint32_t i = 0; i < 2; i++) {
        if (hw.gpus[i].vendor == 0x10de) {
            assert_int_equal(hw.gpus[i].numa, 0);
            assert_string_equal(hw.gpus[i].name, "nvml0"); /* NVML preferred over cuda0 */
        } else {
            assert_int_equal(hw.gpus[i].vendor, 0x1002);
            assert_int_equal(hw.gpus[i].numa, 2);
        }
    }
    assert_int_equal(rdma_nics(), 0);
    assert_non_null(nic("wlp5s0"));
    assert_int_equal(topo.ndomains, 2);
    assert_roundtrip();
}

/* LLNL Pascal: 2 NUMA, 72 PUs, 2 P100 (nvml0..1) and mlx5_0 all under one
 * PCIe switch on socket 0; socket 1 has no I/O. */
static void test_pascal(void **state)
{
    (void)state;
    load("llnl-pascal_2s-broadwell_2xP100_1xmlx5-asymmetric.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(hw.npus, 72);
    assert_int_equal(hw.ngpus, 2);
    assert_true(has_gpu_named("nvml0") && has_gpu_named("nvml1"));
    assert_int_equal(gpus_on_numa(0), 2);
    assert_int_equal(gpus_on_numa(1), 0);
    const struct tg_hw_nic *k = nic("mlx5_0");
    assert_non_null(k);
    assert_true(k->rdma);
    assert_int_equal(k->numa, 0);
    assert_int_equal(rdma_nics(), 1);
    assert_true(hw.gpus[0].sw[0]);
    assert_string_equal(hw.gpus[0].sw, hw.gpus[1].sw);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(hw.gpus[i].pair_kind, 2);
        assert_string_equal(hw.nics[hw.gpus[i].pair_nic].name, "mlx5_0");
    }
    for (uint32_t i = 0; i < hw.nnics; i++)
        assert_int_equal(hw.nics[i].numa, 0);
    assert_int_equal(topo.ndomains, 1);
    assert_int_equal(topo.domains[0].numa, 0);
    assert_int_equal(topo.domains[0].gpus, 2);
    assert_int_equal(topo.domains[0].rdma_gpus, 2);
    assert_roundtrip();
}

/* ---- NUMA nodes without CPUs -------------------------------------------- */

static const struct tg_topo_memnode *memnode(int32_t id)
{
    for (uint32_t i = 0; i < hw.nmem; i++)
        if (hw.mem[i].id == id)
            return &hw.mem[i];
    return NULL;
}

static uint32_t cpus_total(void)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < hw.nnuma; i++)
        n += hw.numa[i].cpus;
    return n;
}

static void assert_label(int i, const char *want)
{
    char v[TG_TOPO_NLABELS][16];
    tg_topo_labels(&topo, v);
    assert_string_equal(v[i], want);
}

/* LLNL Lassen again, exported by hwloc 1.x: the 4 V100s' memory appears as
 * NUMA nodes 252..255 with no CPUs, at the machine level, equally far from
 * both sockets. Two NUMA nodes to align on, four memory-only ones attached
 * to no socket; GPUs and domains stay on the CPU nodes. */
static void test_lassen_v1_gpu_memory(void **state)
{
    (void)state;
    load("llnl-lassen-hwloc1_2s-power9_4xV100_4x-gpu-memory-numa.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(hw.numa[0].id, 0);
    assert_int_equal(hw.numa[1].id, 8);
    assert_int_equal(hw.npus, 160);
    assert_int_equal(cpus_total(), 160);
    assert_int_equal(hw.nmem, 4);
    for (int32_t id = 252; id <= 255; id++) {
        const struct tg_topo_memnode *m = memnode(id);
        assert_non_null(m);
        assert_int_equal(m->mem, 16911433728ULL);
        assert_int_equal(m->numa, -1);           /* latency 80 to both sockets */
        assert_string_equal(m->gpu, "");         /* hwloc 1.x did not say whose */
    }
    assert_int_equal(hw.ngpus, 4);
    assert_int_equal(gpus_on_numa(0), 2);
    assert_int_equal(gpus_on_numa(8), 2);
    assert_int_equal(topo.nnuma, 2);
    assert_int_equal(topo.nmem, 4);
    assert_int_equal(topo.ndomains, 2);
    assert_int_equal(topo.domains[0].numa, 0);
    assert_int_equal(topo.domains[1].numa, 8);
    assert_label(0, "2");                        /* numa-nodes: where CPUs align */
    assert_label(1, "4");                        /* memory-numa-nodes */
    assert_roundtrip();
}

/* An IBM AC922 (POWER9 + 6 V100 over NVLink 2) with the GPUs' memory kept as
 * NUMA nodes, from hwloc's own test data: hwloc 2 marks them GPUMemory with
 * the GPU's PCI bus id and attaches them to their socket. */
static void test_power9_gpumemory(void **state)
{
    (void)state;
    load("ibm-ac922-power9_6xV100-gpumemory-numa_hwloc-testdata.xml");
    assert_int_equal(hw.nnuma, 2);
    assert_int_equal(cpus_total(), hw.npus);
    assert_int_equal(hw.numa[0].cpus, 16);
    assert_int_equal(hw.numa[1].cpus, 16);
    assert_int_equal(hw.nmem, 6);
    static const struct { int32_t id, numa; const char *gpu; } want[] = {
        {253, 0, "0006:00:00.0"}, {254, 0, "0004:06:00.0"}, {255, 0, "0004:05:00.0"},
        {250, 8, "0035:05:00.0"}, {251, 8, "0035:04:00.0"}, {252, 8, "0007:00:00.0"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct tg_topo_memnode *m = memnode(want[i].id);
        assert_non_null(m);
        assert_int_equal(m->kind, TG_TOPO_MEM_GPU);
        assert_int_equal(m->numa, want[i].numa);
        assert_string_equal(m->gpu, want[i].gpu);
        assert_int_equal(m->mem, 16106127360ULL);
    }
    assert_label(0, "2");
    assert_label(1, "6");
    assert_roundtrip();
}

/* DEEP-ER KNL node knl05, SNC4 + flat MCDRAM, exported twice: by hwloc 1.x
 * (the 4 MCDRAM nodes at the root, cpuset 0, found near their quadrant by
 * the latency matrix) and by hwloc 2.4 (each MCDRAM node beside the DRAM
 * node of its quadrant, with the same 64 PUs). Both give 4 CPU NUMA nodes of
 * 64 PUs and MCDRAM 4..7 attached to DRAM 0..3: the PUs are counted once. */
static void test_knl_snc4_flat_v1_and_v2(void **state)
{
    (void)state;
    struct tg_hw v1;
    for (int pass = 0; pass < 2; pass++) {
        load(pass ? "deep-er-knl05-hwloc2_knl-snc4-flat_4x-mcdram-numa.xml"
                  : "deep-er-knl05-hwloc1_knl-snc4-flat_4x-mcdram-numa.xml");
        assert_int_equal(hw.npus, 256);
        assert_int_equal(cpus_total(), 256);
        assert_int_equal(hw.nnuma, 4);
        assert_int_equal(hw.nmem, 4);
        for (uint32_t i = 0; i < 4; i++) {
            assert_int_equal(hw.numa[i].id, (int32_t)i);
            assert_int_equal(hw.numa[i].cpus, 64);
            const struct tg_topo_memnode *m = memnode((int32_t)i + 4);
            assert_non_null(m);
            assert_int_equal(m->numa, (int32_t)i);
            assert_true(m->mem > 4000000000ULL && m->mem < 4300000000ULL);
        }
        assert_label(0, "4");
        assert_label(1, "4");
        assert_roundtrip();
        if (!pass) {
            v1 = hw;
        } else {
            assert_memory_equal(v1.numa, hw.numa, sizeof hw.numa);
            assert_memory_equal(v1.mem, hw.mem, 4 * sizeof hw.mem[0]);
        }
    }
}

/* DEEP-SEA Intel Xeon Max 9462 in flat (1LM) mode, SNC4 on 2 sockets: 8
 * DRAM NUMA nodes of 16 PUs, each with a 16 GiB HBM node (8..15) beside it
 * in hwloc 2's tree. Before: 16 NUMA nodes claiming 256 PUs on a 128-PU
 * machine. */
static void test_xeon_max_flat_hbm(void **state)
{
    (void)state;
    load("deep-sea-intelmax01_2s-xeon-max-9462-flat_8x-hbm-numa.xml");
    assert_int_equal(hw.npus, 128);
    assert_int_equal(cpus_total(), 128);
    assert_int_equal(hw.nnuma, 8);
    assert_int_equal(hw.nmem, 8);
    for (int32_t id = 8; id < 16; id++) {
        const struct tg_topo_memnode *m = memnode(id);
        assert_non_null(m);
        assert_int_equal(m->numa, id - 8);
        assert_int_equal(m->mem, 17179869184ULL);
        assert_int_equal(tg_topo_numa_index(&topo, id), -1);
    }
    assert_label(0, "8");
    assert_label(1, "8");
    assert_roundtrip();
}

/* Every export: no PU is counted by two NUMA nodes, memory-only nodes are
 * attached to a listed CPU node or to none, no id is both, and a GPU domain
 * sits on a CPU node. Every PU has a home node, except on the Threadripper
 * 2990WX: its two dies without memory are NUMA nodes without memory, which
 * hwloc 2 does not represent (their 32 PUs belong to no NUMA object). */
static void test_every_export_pus_once(void **state)
{
    (void)state;
    char dir[1024];
    DIR *d = opendir(td_path("hwloc", dir, sizeof dir));
    assert_non_null(d);
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".xml"))
            continue;
        load(e->d_name);
        seen++;
        int memless = !strncmp(e->d_name, "chimera_", 8);
        if (memless ? cpus_total() > hw.npus : cpus_total() != hw.npus)
            fail_msg("%s: NUMA nodes hold %u PUs, the machine has %u", e->d_name, cpus_total(),
                     hw.npus);
        for (uint32_t i = 0; i < hw.nmem; i++) {
            assert_int_equal(tg_topo_numa_index(&topo, hw.mem[i].id), -1);
            assert_true(hw.mem[i].numa == -1 || tg_topo_numa_index(&topo, hw.mem[i].numa) >= 0);
        }
        for (uint32_t i = 0; i < topo.ndomains; i++)
            assert_true(topo.domains[i].numa == -1 ||
                        topo.numa[tg_topo_numa_index(&topo, topo.domains[i].numa)].cpus > 0);
        assert_roundtrip();
    }
    closedir(d);
    assert_true(seen >= 13);
}

/* An nvidia-smi matrix with as many GPUs as hwloc found gives them their
 * NVLink groups; one with a different count is refused. */
static void test_merge_nvsmi(void **state)
{
    (void)state;
    static struct tg_nvsmi m;
    char path[1024];
    load("aws-g4dn-metal_2s-cascadelake_8xT4_efa.xml");
    assert_int_equal(tg_nvsmi_load(td_path("nvidia-smi-topo/hgx-8xH100-nvswitch_2numa_no-nics.txt",
                                           path, sizeof path), &m), 0);
    assert_int_equal(tg_hw_merge_nvsmi(&hw, &m), 0);
    for (uint32_t i = 0; i < hw.ngpus; i++)
        assert_int_equal(hw.gpus[i].nvlink, 0);
    tg_hw_domains(&hw, TG_TOPO_POLICY_NONE, &topo);
    assert_int_equal(topo.ndomains, 2);          /* still split by NUMA node */
    assert_int_equal(topo.domains[0].nvlink, 0);

    load("aws-g4dn-metal_2s-cascadelake_8xT4_efa.xml");
    assert_int_equal(tg_nvsmi_load(td_path("nvidia-smi-topo/3xRTXA6000_one-nvlink-bridge-pair_ansi.txt",
                                           path, sizeof path), &m), 0);
    assert_int_equal(tg_hw_merge_nvsmi(&hw, &m), TG_ERANGE);
    for (uint32_t i = 0; i < hw.ngpus; i++)
        assert_int_equal(hw.gpus[i].nvlink, -1);
}

/* nvidia-smi alone (a machine where hwloc sees no NVIDIA GPU): GPUs, NUMA
 * and NICs come from the matrix. */
static void test_nvsmi_only_domains(void **state)
{
    (void)state;
    static struct tg_nvsmi m;
    char path[1024];
    memset(&hw, 0, sizeof hw);
    hw.nvlink_source = "none";
    assert_int_equal(tg_nvsmi_load(td_path("nvidia-smi-topo/dgx1-style-8xV100-SXM2-hybrid-cube-mesh_1xmlx5.txt",
                                           path, sizeof path), &m), 0);
    assert_int_equal(tg_hw_merge_nvsmi(&hw, &m), 0);
    tg_hw_domains(&hw, TG_TOPO_POLICY_SINGLE_NUMA, &topo);
    assert_int_equal(hw.ngpus, 8);
    assert_int_equal(topo.ndomains, 2);
    assert_int_equal(topo.domains[0].gpus, 4);
    assert_int_equal(topo.domains[1].gpus, 4);
    assert_int_equal(topo.domains[0].rdma_gpus, 2);  /* mlx5_0 PIX to GPU2/3 */
    assert_int_equal(topo.domains[1].rdma_gpus, 0);
    assert_roundtrip();
}

/* A real GPU node: topogang's device lease on 2026-11-26 (an H200 VM, Ubuntu
 * 24.04, driver 580.159.04), exported by Debian's lstopo 2.9.0 without the
 * NVML plugin: the GPU is a PCI 3D device with no OS device name; 1 NUMA
 * node, 16 PUs, one virtio NIC (eth0, no RDMA). Its `nvidia-smi topo -m`
 * (ANSI header, driver 580's "GPU NUMA ID" column) merged in: 1 GPU, NUMA 0,
 * no NVLink. One GPU domain. */
static void test_device_h200_vm(void **state)
{
    (void)state;
    static struct tg_nvsmi m;
    char path[1024];
    load("topogang-device-h200-vm_16vcpu_1xH200.xml");
    assert_int_equal(hw.nnuma, 1);
    assert_int_equal(hw.npus, 16);
    assert_int_equal(hw.ngpus, 1);
    assert_int_equal(hw.gpus[0].vendor, 0x10de);
    assert_int_equal(hw.gpus[0].device, 0x2335);
    assert_int_equal(hw.gpus[0].class_id, 0x0302);
    assert_string_equal(hw.gpus[0].busid, "0000:00:06.0");
    assert_string_equal(hw.gpus[0].name, "");
    assert_int_equal(hw.gpus[0].numa, 0);
    assert_int_equal(hw.nnics, 1);
    assert_non_null(nic("eth0"));
    assert_int_equal(rdma_nics(), 0);
    assert_int_equal(tg_nvsmi_load(td_path("nvidia-smi-topo/topogang-device-1xH200-vm_gpu-numa-id-column_ansi.txt",
                                           path, sizeof path), &m), 0);
    assert_int_equal(tg_hw_merge_nvsmi(&hw, &m), 0);
    assert_int_equal(hw.gpus[0].nvlink, -1);
    tg_hw_domains(&hw, TG_TOPO_POLICY_SINGLE_NUMA, &topo);
    assert_int_equal(topo.ndomains, 1);
    assert_int_equal(topo.domains[0].gpus, 1);
    assert_int_equal(topo.domains[0].numa, 0);
    assert_int_equal(topo.domains[0].rdma_gpus, 0);
    assert_roundtrip();
}

static void test_bad_xml(void **state)
{
    (void)state;
    char path[1024], err[512] = "";
    assert_int_equal(tg_hw_discover(td_path("README.md", path, sizeof path), &hw, err, sizeof err),
                     TG_EIO);
    assert_non_null(strstr(err, "README.md"));
    err[0] = 0;
    assert_int_equal(tg_hw_discover(td_path("hwloc/does-not-exist.xml", path, sizeof path), &hw,
                                    err, sizeof err), TG_EIO);
    assert_true(err[0]);
}

/* tg_agent_collect: an unreadable nvidia-smi file is a clear error. */
static void test_collect_errors(void **state)
{
    (void)state;
    char xml[1024], bad[1024], err[512] = "";
    struct tg_agent_opts o = {
        .topology_xml = td_path("hwloc/llnl-pascal_2s-broadwell_2xP100_1xmlx5-asymmetric.xml",
                                xml, sizeof xml),
        .nvsmi_file = td_path("README.md", bad, sizeof bad),
    };
    assert_int_equal(tg_agent_collect(&o, &hw, &topo, err, sizeof err), TG_EIO);
    assert_non_null(strstr(err, "nvidia-smi"));
    o.nvsmi_file = NULL;
    o.policy = TG_TOPO_POLICY_RESTRICTED;
    assert_int_equal(tg_agent_collect(&o, &hw, &topo, err, sizeof err), 0);
    assert_int_equal(topo.policy, TG_TOPO_POLICY_RESTRICTED);
    assert_int_equal(topo.ndomains, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_g4dn),
        cmocka_unit_test(test_dgx2),
        cmocka_unit_test(test_juwels_booster),
        cmocka_unit_test(test_juwels_cluster),
        cmocka_unit_test(test_lassen),
        cmocka_unit_test(test_tioga),
        cmocka_unit_test(test_chimera),
        cmocka_unit_test(test_pascal),
        cmocka_unit_test(test_lassen_v1_gpu_memory),
        cmocka_unit_test(test_power9_gpumemory),
        cmocka_unit_test(test_knl_snc4_flat_v1_and_v2),
        cmocka_unit_test(test_xeon_max_flat_hbm),
        cmocka_unit_test(test_every_export_pus_once),
        cmocka_unit_test(test_merge_nvsmi),
        cmocka_unit_test(test_nvsmi_only_domains),
        cmocka_unit_test(test_device_h200_vm),
        cmocka_unit_test(test_bad_xml),
        cmocka_unit_test(test_collect_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
