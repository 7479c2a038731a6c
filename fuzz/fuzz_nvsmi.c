/* The `nvidia-smi topo -m` parser (agent/nvsmi.h) and what the agent does
 * with an accepted matrix (agent/agent.c tg_agent_collect): merge it into
 * the hardware hwloc found (agent/discover.h: on a machine where hwloc saw
 * no NVIDIA GPU the matrix gives the GPUs, NICs and NUMA nodes; where it saw
 * as many, only the NVLink groups; another count is refused and changes
 * nothing), build the GPU domains, print them (`--print`) and encode the
 * topology annotation.
 *
 * Checks: a refusal is TG_EPARSE; an accepted matrix is consistent (1 to
 * TG_NVSMI_MAX devices, symmetric GPU links with X on the diagonal and
 * nowhere else, NVLink groups of two or more GPUs pairwise linked by NV#,
 * NUMA -1 or above, NUL-terminated names); tabs read as spaces (the same
 * output pasted from a terminal parses the same); the annotation the agent
 * would publish is either refused by the encoder (the agent then publishes
 * nothing) or decoded by the scheduler (tg_topo_decode) and re-encodes to
 * the same text. */
#include "fuzz/agent.h"

#include "agent/discover.h"
#include "agent/nvsmi.h"
#include "util/log.h"

/* large: kept off the stack */
static struct tg_nvsmi m, m2;
static struct tg_hw hw, before;
static struct tg_topology t;
static FILE *devnull;                   /* tg_hw_print's output */

static void check_matrix(const struct tg_nvsmi *x)
{
    fz_check(x->ngpus >= 1 && x->ngpus + x->nnics <= TG_NVSMI_MAX, "%u GPUs, %u NICs", x->ngpus,
             x->nnics);
    fz_check(x->ngroups <= x->ngpus / 2, "%u NVLink groups of %u GPUs", x->ngroups, x->ngpus);
    for (uint32_t i = 0; i < x->ngpus; i++) {
        fz_check(x->gpu_numa[i] >= -1, "GPU%u NUMA %d", i, x->gpu_numa[i]);
        fz_check(memchr(x->gpu_cpus[i], 0, sizeof x->gpu_cpus[i]) != NULL, "GPU%u cpus", i);
        fz_check(x->gpu_cpus[i][0] || x->gpu_ncpus[i] == 0, "GPU%u: CPUs without a list", i);
        fz_check(x->group[i] >= -1 && x->group[i] < (int32_t)x->ngroups, "GPU%u group %d", i,
                 x->group[i]);
        for (uint32_t j = 0; j < x->ngpus; j++) {
            fz_check(x->gg[i][j] == x->gg[j][i] && x->nvlinks[i][j] == x->nvlinks[j][i],
                     "GPU%u-GPU%u asymmetric", i, j);
            fz_check((i == j) == (x->gg[i][j] == TG_CONN_X), "GPU%u-GPU%u: X misplaced", i, j);
            if (i != j && x->group[i] >= 0 && x->group[i] == x->group[j])
                fz_check(x->gg[i][j] == TG_CONN_NV, "GPU%u, GPU%u grouped without NVLink", i, j);
        }
    }
    for (int32_t g = 0; g < (int32_t)x->ngroups; g++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < x->ngpus; i++)
            n += x->group[i] == g;
        fz_check(n >= 2, "NVLink group %d has %u GPUs", g, n);
    }
    for (uint32_t k = 0; k < x->nnics; k++)
        fz_check(x->nic[k][0] && memchr(x->nic[k], 0, sizeof x->nic[k]), "NIC %u name", k);
}

/* The annotation of hw, as the agent builds, prints and publishes it. */
static void check_annotation(void)
{
    tg_hw_domains(&hw, TG_TOPO_POLICY_SINGLE_NUMA, &t);
    tg_hw_print(devnull, &hw, &t);
    fz_check_published(&t);
}

/* hwloc's view: ngpus NVIDIA GPUs (bus ids in reverse of index order, so the
 * merge sorts them), two NUMA nodes of 16 CPUs, one NIC. */
static void hwloc_view(uint32_t ngpus)
{
    memset(&hw, 0, sizeof hw);
    hw.nvlink_source = "none";
    hw.nnuma = 2;
    for (uint32_t i = 0; i < 2; i++)
        hw.numa[i] = (struct tg_topo_numa){.id = (int32_t)i, .cpus = 16, .mem = 1ull << 34};
    for (uint32_t g = 0; g < ngpus && g < TG_HW_MAX_GPUS; g++) {
        struct tg_hw_gpu *x = &hw.gpus[hw.ngpus++];
        snprintf(x->busid, sizeof x->busid, "0000:%02x:00.0", 0xff - g);
        snprintf(x->root, sizeof x->root, "0000:%02x", 0xf0 - g / 4);
        x->vendor = 0x10de;
        x->class_id = 0x0302;
        x->numa = (int32_t)(g % 2);
        x->nvlink = -1;
        x->pair_nic = -1;
    }
    hw.nnics = 1;
    snprintf(hw.nics[0].name, sizeof hw.nics[0].name, "mlx5_0");
    hw.nics[0].rdma = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_log_set_level(TG_LOG_ERROR);
    devnull = fopen("/dev/null", "w");
    if (!devnull)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(&m, 0xa5, sizeof m);         /* garbage the parser must overwrite */
    int rc = tg_nvsmi_parse((const char *)data, size, &m);
    fz_check(rc == 0 || rc == TG_EPARSE, "tg_nvsmi_parse returned %d", rc);

    char *spaced = fz_strdup(data, size);
    for (size_t i = 0; i < size; i++)
        if (spaced[i] == '\t')
            spaced[i] = ' ';
    memset(&m2, 0x5a, sizeof m2);
    int rc2 = tg_nvsmi_parse(spaced, size, &m2);
    free(spaced);
    fz_check(rc == rc2, "tabs as spaces: %d, as tabs: %d", rc2, rc);
    if (rc)
        return 0;
    fz_check(!memcmp(&m, &m2, sizeof m), "tabs as spaces parse differently");
    check_matrix(&m);

    /* hwloc saw no NVIDIA GPU: everything from the matrix */
    hwloc_view(0);
    fz_check(tg_hw_merge_nvsmi(&hw, &m) == 0, "merge into a machine without GPUs refused");
    fz_check(hw.ngpus == m.ngpus, "%u GPUs merged of %u", hw.ngpus, m.ngpus);
    check_annotation();

    /* as many: the NVLink groups only */
    hwloc_view(m.ngpus);
    fz_check(tg_hw_merge_nvsmi(&hw, &m) == 0, "merge of as many GPUs refused");
    for (uint32_t g = 0; g < hw.ngpus; g++)
        fz_check(hw.gpus[g].nvlink == m.group[hw.ngpus - 1 - g], "GPU %s: group %d, not %d",
                 hw.gpus[g].busid, hw.gpus[g].nvlink, m.group[hw.ngpus - 1 - g]);
    check_annotation();

    /* another count: refused, nothing changed */
    hwloc_view(m.ngpus < TG_HW_MAX_GPUS ? m.ngpus + 1 : m.ngpus - 1);
    memcpy(&before, &hw, sizeof hw);
    fz_check(tg_hw_merge_nvsmi(&hw, &m) == TG_ERANGE, "merge of another GPU count accepted");
    fz_check(!memcmp(&hw, &before, sizeof hw), "a refused merge changed the hardware");
    return 0;
}
