/* `nvidia-smi topo -m` parsing against every file in testdata/nvidia-smi-topo
 * (tabs, spaces, ANSI escapes, with and without legends), NVLink grouping,
 * and malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/nvsmi.h"
#include "helpers.h"
#include "util/err.h"

static struct tg_nvsmi m, m_out;

static void load(const char *file)
{
    char path[1024], sub[512];
    snprintf(sub, sizeof sub, "nvidia-smi-topo/%s", file);
    int rc = tg_nvsmi_load(td_path(sub, path, sizeof path), &m);
    if (rc)
        fail_msg("%s: %s", file, tg_strerror(rc));
}

static void assert_one_group_all(void)
{
    assert_int_equal(m.ngroups, 1);
    for (uint32_t i = 0; i < m.ngpus; i++)
        assert_int_equal(m.group[i], 0);
}

/* 3x RTX A6000, tabs + ANSI underline in the header: GPU0-GPU1 NV4 bridge,
 * GPU2 alone (NODE); 1 NUMA node. */
static void test_a6000_ansi(void **state)
{
    (void)state;
    load("3xRTXA6000_one-nvlink-bridge-pair_ansi.txt");
    assert_int_equal(m.ngpus, 3);
    assert_int_equal(m.nnics, 0);
    assert_int_equal(m.gg[0][1], TG_CONN_NV);
    assert_int_equal(m.nvlinks[0][1], 4);
    assert_int_equal(m.gg[0][2], TG_CONN_NODE);
    assert_int_equal(m.gg[1][2], TG_CONN_NODE);
    assert_int_equal(m.ngroups, 1);
    assert_int_equal(m.group[0], 0);
    assert_int_equal(m.group[1], 0);
    assert_int_equal(m.group[2], -1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(m.gpu_numa[i], 0);
        assert_string_equal(m.gpu_cpus[i], "0-31,64-95");
        assert_int_equal(m.gpu_ncpus[i], 64);
    }
}

/* HGX H200, tabs: NV18 all-to-all, 8 NIC VFs mlx5_0..7 from the NIC legend,
 * one PIX to each GPU; GPUs 0-3 on NUMA 0, 4-7 on NUMA 1. */
static void test_h200_tabs_nic_legend(void **state)
{
    (void)state;
    load("hgx-8xH200-nvswitch_8xmlx5-vf_2s-xeon8592.txt");
    assert_int_equal(m.ngpus, 8);
    assert_int_equal(m.nnics, 8);
    assert_one_group_all();
    for (uint32_t i = 0; i < 8; i++) {
        char want[16];
        snprintf(want, sizeof want, "mlx5_%u", i);
        assert_string_equal(m.nic[i], want);
        assert_int_equal(m.gn[i][i], TG_CONN_PIX);
        assert_int_equal(m.gpu_numa[i], i < 4 ? 0 : 1);
        assert_int_equal(m.gpu_ncpus[i], 96);
        for (uint32_t j = 0; j < 8; j++)
            if (i != j)
                assert_int_equal(m.nvlinks[i][j], 18);
    }
    assert_int_equal(m.gn[0][4], TG_CONN_SYS);
    assert_int_equal(m.gn[0][1], TG_CONN_NODE);
}

/* HGX B200, tabs: NV18 all-to-all, 2 NUMA, no NICs. */
static void test_b200(void **state)
{
    (void)state;
    load("hgx-8xB200-nvswitch_2numa_no-nics.txt");
    assert_int_equal(m.ngpus, 8);
    assert_int_equal(m.nnics, 0);
    assert_one_group_all();
    assert_int_equal(m.gpu_numa[3], 0);
    assert_int_equal(m.gpu_numa[4], 1);
    assert_string_equal(m.gpu_cpus[7], "48-95,144-191");
}

/* Perlmutter: 4 A100 with NV4 between every pair (no NVSwitch), each on a
 * different NUMA node: 3, 2, 1, 0. */
static void test_perlmutter(void **state)
{
    (void)state;
    load("perlmutter-4xA100-SXM4-nv4-allpairs_1s-epyc7763-4numa.txt");
    assert_int_equal(m.ngpus, 4);
    assert_one_group_all();
    assert_int_equal(m.nvlinks[0][3], 4);
    assert_int_equal(m.gpu_numa[0], 3);
    assert_int_equal(m.gpu_numa[1], 2);
    assert_int_equal(m.gpu_numa[2], 1);
    assert_int_equal(m.gpu_numa[3], 0);
}

/* A real GPU node (topogang's device lease, 2026-11-26): 1 H200 in a VM,
 * driver 580, ANSI underline in the header and the "GPU NUMA ID" column
 * (N/A) after NUMA Affinity; no NICs, no NVLink. */
static void test_device_h200_vm(void **state)
{
    (void)state;
    load("topogang-device-1xH200-vm_gpu-numa-id-column_ansi.txt");
    assert_int_equal(m.ngpus, 1);
    assert_int_equal(m.nnics, 0);
    assert_int_equal(m.nvlinks[0][0], 0);
    assert_int_equal(m.gpu_numa[0], 0);
    assert_string_equal(m.gpu_cpus[0], "0-15");
    assert_int_equal(m.gpu_ncpus[0], 16);
}

/* HGX H100, spaces, matrix only (no legend): NV18, 2 NUMA, 208 CPUs. */
static void test_h100_spaces_no_legend(void **state)
{
    (void)state;
    load("hgx-8xH100-nvswitch_2numa_no-nics.txt");
    assert_int_equal(m.ngpus, 8);
    assert_int_equal(m.nnics, 0);
    assert_one_group_all();
    assert_int_equal(m.gpu_numa[0], 0);
    assert_int_equal(m.gpu_numa[7], 1);
    assert_int_equal(m.gpu_ncpus[0] + m.gpu_ncpus[7], 208);
}

/* 8x H20, spaces, no legend: NV18; 2 NICs PHB to GPU6, NODE to GPUs 4/5/7,
 * SYS to GPUs 0-3. */
static void test_h20(void **state)
{
    (void)state;
    load("hgx-8xH20-nvswitch_2nics.txt");
    assert_int_equal(m.ngpus, 8);
    assert_int_equal(m.nnics, 2);
    assert_string_equal(m.nic[0], "NIC0");
    assert_one_group_all();
    for (uint32_t k = 0; k < 2; k++) {
        assert_int_equal(m.gn[6][k], TG_CONN_PHB);
        assert_int_equal(m.gn[4][k], TG_CONN_NODE);
        assert_int_equal(m.gn[5][k], TG_CONN_NODE);
        assert_int_equal(m.gn[7][k], TG_CONN_NODE);
        for (uint32_t g = 0; g < 4; g++)
            assert_int_equal(m.gn[g][k], TG_CONN_SYS);
    }
}

/* DGX-1 hybrid cube-mesh, spaces, old driver (no NUMA column): NV1/NV2 mix,
 * SYS across the quads -> two fully linked NVLink groups {0-3}, {4-7};
 * mlx5_0 is a column label, PIX to GPU2/3. */
static void test_dgx1_cube_mesh(void **state)
{
    (void)state;
    load("dgx1-style-8xV100-SXM2-hybrid-cube-mesh_1xmlx5.txt");
    assert_int_equal(m.ngpus, 8);
    assert_int_equal(m.nnics, 1);
    assert_string_equal(m.nic[0], "mlx5_0");
    assert_int_equal(m.nvlinks[0][1], 1);
    assert_int_equal(m.nvlinks[0][3], 2);
    assert_int_equal(m.nvlinks[0][4], 2);     /* the cube edge across the quads */
    assert_int_equal(m.gg[0][5], TG_CONN_SYS);
    assert_int_equal(m.ngroups, 2);
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(m.group[i], i < 4 ? 0 : 1);
        assert_int_equal(m.gpu_numa[i], -1);
        assert_string_equal(m.gpu_cpus[i], i < 4 ? "0-11,24-35" : "12-23,36-47");
    }
    assert_int_equal(m.gn[2][0], TG_CONN_PIX);
    assert_int_equal(m.gn[3][0], TG_CONN_PIX);
    assert_int_equal(m.gn[0][0], TG_CONN_NODE);
    assert_int_equal(m.gn[4][0], TG_CONN_SYS);
}

/* 4x H100 NV6 all pairs, legend cut after PHB: NICs keep their column names;
 * one PIX NIC per GPU; NUMA 3, 1, 7, 5. */
static void test_h100_nv6_truncated_legend(void **state)
{
    (void)state;
    load("4xH100-nv6-allpairs_4nic-pix-per-gpu_legend-truncated.txt");
    assert_int_equal(m.ngpus, 4);
    assert_int_equal(m.nnics, 4);
    assert_one_group_all();
    assert_int_equal(m.nvlinks[1][2], 6);
    const int32_t numa[4] = {3, 1, 7, 5};
    for (uint32_t i = 0; i < 4; i++) {
        assert_int_equal(m.gpu_numa[i], numa[i]);
        assert_int_equal(m.gn[i][i], TG_CONN_PIX);
        assert_int_equal(m.gpu_ncpus[i], 4);
    }
    assert_string_equal(m.nic[3], "NIC3");
}

/* 4x L40S, PCIe only: no NVLink group; NODE within a socket, SYS across;
 * mlx5_0/1 from the NIC legend, on socket 1. */
static void test_l40s_pcie_only(void **state)
{
    (void)state;
    load("4xL40S-pcie-only_2s_2xmlx5.txt");
    assert_int_equal(m.ngpus, 4);
    assert_int_equal(m.nnics, 2);
    assert_int_equal(m.ngroups, 0);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(m.group[i], -1);
    assert_int_equal(m.gg[0][1], TG_CONN_NODE);
    assert_int_equal(m.gg[0][2], TG_CONN_SYS);
    assert_string_equal(m.nic[0], "mlx5_0");
    assert_string_equal(m.nic[1], "mlx5_1");
    assert_int_equal(m.gn[2][0], TG_CONN_NODE);
    assert_int_equal(m.gn[0][0], TG_CONN_SYS);
    assert_int_equal(m.gpu_numa[1], 0);
    assert_int_equal(m.gpu_numa[2], 1);
}

static int parse_str(const char *s)
{
    return tg_nvsmi_parse(s, strlen(s), &m);
}

static void test_malformed(void **state)
{
    (void)state;
    assert_int_equal(parse_str(""), TG_EPARSE);
    assert_int_equal(parse_str("No devices were found\n"), TG_EPARSE);
    /* asymmetric links */
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\n"
                               "GPU0\t X \tNV4\t0-3\n"
                               "GPU1\tNODE\t X \t0-3\n"), TG_EPARSE);
    /* a row cut short */
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\n"
                               "GPU0\t X \tNV4\t0-3\n"
                               "GPU1\tNV4\n"), TG_EPARSE);
    /* a missing row */
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\n"
                               "GPU0\t X \tNV4\t0-3\n"), TG_EPARSE);
    /* an unknown cell */
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\n"
                               "GPU0\t X \tFOO\t0-3\n"
                               "GPU1\tFOO\t X \t0-3\n"), TG_EPARSE);
    /* the diagonal is not X */
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\n"
                               "GPU0\tNV1\tNV1\t0-3\n"
                               "GPU1\tNV1\tNV1\t0-3\n"), TG_EPARSE);
    /* too many columns for the caps: must not overflow */
    char big[8192] = "";
    for (int i = 0; i < 100; i++) {
        char c[16];
        snprintf(c, sizeof c, "\tGPU%d", i);
        strcat(big, c);
    }
    strcat(big, "\n");
    assert_int_equal(parse_str(big), TG_EPARSE);
    /* an absurdly long line is cut, not overflowed */
    static char longl[20000];
    memset(longl, 'A', sizeof longl - 1);
    longl[0] = 'G', longl[1] = 'P', longl[2] = 'U', longl[3] = '0';
    assert_int_equal(tg_nvsmi_parse(longl, sizeof longl - 1, &m), TG_EPARSE);
    /* a valid minimal matrix still parses, CRLF line ends included */
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\r\n"
                               "GPU0\t X \tNV2\t0-3\t0\r\n"
                               "GPU1\tNV2\t X \t0-3\t0\r\n"), 0);
    assert_int_equal(m.ngroups, 1);
    assert_int_equal(m.gpu_numa[1], 0);
}

/* CPU Affinity and NUMA Affinity values past what the topology annotation
 * carries (fuzz_nvsmi: a 20-digit CPU number overflowed the count, a signed
 * overflow, and a NUMA column of 2^32 became a NUMA id the scheduler's
 * decoder refuses): the list counts as malformed (0 CPUs), the NUMA column
 * as absent; the matrix still parses. */
static void test_affinity_out_of_range(void **state)
{
    (void)state;
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                               "GPU0\t X \tNV2\t0-99999999999999999999\t4294967296\n"
                               "GPU1\tNV2\t X \t0-1048575,0-1048575\t4096\n"), 0);
    assert_int_equal(m.gpu_ncpus[0], 0);
    assert_int_equal(m.gpu_ncpus[1], 0);
    assert_int_equal(m.gpu_numa[0], -1);
    assert_int_equal(m.gpu_numa[1], -1);
    assert_int_equal(parse_str("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                               "GPU0\t X \tNV2\t0-1048575\t4095\n"
                               "GPU1\tNV2\t X \t1048575\t0\n"), 0);
    assert_int_equal(m.gpu_ncpus[0], 1 << 20);
    assert_int_equal(m.gpu_ncpus[1], 1);
    assert_int_equal(m.gpu_numa[0], 4095);
    assert_int_equal(m.ngroups, 1);
}

/* The clique partition: a GPU joins a group only when linked to every member. */
static void test_cliques(void **state)
{
    (void)state;
    /* path 0-1-2: 0 and 2 not linked -> {0,1}, 2 alone */
    const uint8_t path[9] = {0, 1, 0, 1, 0, 1, 0, 1, 0};
    int32_t g[3];
    assert_int_equal(tg_nvlink_cliques(3, path, g), 1);
    assert_int_equal(g[0], 0);
    assert_int_equal(g[1], 0);
    assert_int_equal(g[2], -1);
    const uint8_t none[4] = {0};
    assert_int_equal(tg_nvlink_cliques(2, none, g), 0);
}

/* Mutations of every real file (byte flips, cuts, deletions): the parser
 * never crashes, and what it accepts is a consistent matrix. */
static void test_mutations(void **state)
{
    (void)state;
    static const char *files[] = {
        "3xRTXA6000_one-nvlink-bridge-pair_ansi.txt",
        "hgx-8xH200-nvswitch_8xmlx5-vf_2s-xeon8592.txt",
        "dgx1-style-8xV100-SXM2-hybrid-cube-mesh_1xmlx5.txt",
        "4xL40S-pcie-only_2s_2xmlx5.txt",
    };
    static const char alphabet[] = "GPUNICX0123456789 \t\n\x1b[mSYSNODEPHBPXBPIXNV-,:";
    uint64_t x = 0x243f6a8885a308d3ULL;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[1024], sub[512];
        snprintf(sub, sizeof sub, "nvidia-smi-topo/%s", files[f]);
        FILE *fp = fopen(td_path(sub, path, sizeof path), "rb");
        assert_non_null(fp);
        static char orig[16384];
        size_t n = fread(orig, 1, sizeof orig, fp);
        fclose(fp);
        for (int it = 0; it < 2000; it++) {
            char *buf = malloc(n);
            memcpy(buf, orig, n);
            size_t len = n;
            for (int e = 0; e < 1 + it % 3 && len > 1; e++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                size_t pos = (size_t)(x % len);
                switch ((x >> 32) % 3) {
                case 0: buf[pos] = alphabet[(x >> 40) % (sizeof alphabet - 1)]; break;
                case 1: memmove(buf + pos, buf + pos + 1, len - pos - 1); len--; break;
                default: len = pos + 1; break;
                }
            }
            if (tg_nvsmi_parse(buf, len, &m_out) == 0) {
                assert_true(m_out.ngpus >= 1 && m_out.ngpus <= TG_NVSMI_MAX);
                for (uint32_t i = 0; i < m_out.ngpus; i++) {
                    assert_int_equal(m_out.gg[i][i], TG_CONN_X);
                    assert_true(m_out.group[i] < (int32_t)m_out.ngroups);
                }
            }
            free(buf);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a6000_ansi),
        cmocka_unit_test(test_affinity_out_of_range),
        cmocka_unit_test(test_h200_tabs_nic_legend),
        cmocka_unit_test(test_b200),
        cmocka_unit_test(test_perlmutter),
        cmocka_unit_test(test_device_h200_vm),
        cmocka_unit_test(test_h100_spaces_no_legend),
        cmocka_unit_test(test_h20),
        cmocka_unit_test(test_dgx1_cube_mesh),
        cmocka_unit_test(test_h100_nv6_truncated_legend),
        cmocka_unit_test(test_l40s_pcie_only),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_cliques),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
