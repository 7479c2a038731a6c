/* The kubelet pod-resources reader (agent/podres.h): the protobuf decoders
 * of AllocatableResourcesResponse and ListPodResourcesResponse, the gRPC
 * framing of a unary response, and what the agent does with the figures
 * (tg_podres_apply onto a topology, then the annotation it publishes).
 *
 * The first input byte picks what the rest is (modulo 3):
 *   0: an AllocatableResourcesResponse message;
 *   1: a ListPodResourcesResponse message;
 *   2: the two gRPC response bodies one after the other, as the agent's two
 *      calls receive them (GetAllocatableResources, then List): each is
 *      unframed (tg_podres_unframe) and decoded as tg_podres_query does.
 * Each message is decoded into a zeroed struct, as the agent does.
 *
 * Checks: a refusal is TG_EPARSE; the figures stay inside their caps
 * (nalloc_cpus is the count of allocatable CPUs, NUMA ids unique and in
 * 0..4095, pods "ns/name" strings with one '/' and both parts, counted
 * right, each shorter than a pod key); decoding is deterministic; applied to a two-socket machine with a
 * memory-only node, no NUMA node gets more exclusive CPUs than it has, and
 * the annotation the agent would publish is refused by the encoder or
 * decoded by the scheduler and stable. */
#include "fuzz/agent.h"

#include "agent/discover.h"
#include "agent/podres.h"
#include "util/log.h"

/* large: kept off the stack */
static struct tg_podres p, p2;
static struct tg_hw hw;
static struct tg_topology base, t;

static void check_figures(const struct tg_podres *x)
{
    uint32_t n = 0;
    for (size_t i = 0; i < sizeof x->cpu_alloc; i++)
        n += (uint32_t)__builtin_popcount(x->cpu_alloc[i]);
    fz_check(n == x->nalloc_cpus, "nalloc_cpus %u, %u CPUs allocatable", x->nalloc_cpus, n);
    fz_check(x->nnuma <= TG_PODRES_MAX_NUMA, "%u NUMA nodes", x->nnuma);
    for (uint32_t i = 0; i < x->nnuma; i++) {
        fz_check(x->numa[i].id >= 0 && x->numa[i].id <= 4095, "NUMA id %d", x->numa[i].id);
        for (uint32_t j = 0; j < i; j++)
            fz_check(x->numa[i].id != x->numa[j].id, "NUMA %d twice", x->numa[i].id);
    }
    fz_check(x->pods_len <= sizeof x->pods, "pods_len %u", x->pods_len);
    uint32_t np = 0;
    for (const char *k = x->pods; k < x->pods + x->pods_len; k += strlen(k) + 1, np++) {
        size_t l = strnlen(k, (size_t)(x->pods + x->pods_len - k));
        fz_check(k + l < x->pods + x->pods_len, "pod %u not terminated", np);
        const char *slash = strchr(k, '/');
        fz_check(slash && slash > k && slash[1] && !strchr(slash + 1, '/') && l < TG_TOPO_POD_KEY,
                 "pod key \"%s\"", k);
    }
    fz_check(np == x->npods, "npods %u, %u pods listed", x->npods, np);
}

/* Decodes msg as the call (0 allocatable, 1 list) into *x, zeroed first. */
static int decode(int list, const uint8_t *msg, size_t n, struct tg_podres *x)
{
    memset(x, 0, sizeof *x);
    int rc = list ? tg_podres_parse_list(msg, n, x) : tg_podres_parse_allocatable(msg, n, x);
    fz_check(rc == 0 || rc == TG_EPARSE, "tg_podres_parse_%s returned %d",
             list ? "list" : "allocatable", rc);
    return rc;
}

/* The message of one call, checked, its figures into p (added). */
static int one(int list, const uint8_t *msg, size_t n)
{
    int rc = decode(list, msg, n, &p2);
    if (rc == 0) {
        check_figures(&p2);
        /* into what the other call left, as tg_podres_query does */
        rc = list ? tg_podres_parse_list(msg, n, &p) : tg_podres_parse_allocatable(msg, n, &p);
        fz_check(rc == 0, "decoded alone, refused after the other call");
        check_figures(&p);
    }
    return rc;
}

static void apply_and_publish(void)
{
    memcpy(&t, &base, sizeof t);
    tg_podres_apply(&p, &hw, &t);
    for (uint32_t i = 0; i < t.nnuma; i++)
        fz_check(!(t.numa[i].known & TG_TOPO_KCPUS) || t.numa[i].kcpus <= t.numa[i].cpus,
                 "NUMA %d: %u exclusive CPUs of %u", t.numa[i].id, t.numa[i].kcpus,
                 t.numa[i].cpus);
    fz_check(t.nkpods <= p.npods, "%u kpods of %u pods", t.nkpods, p.npods);
    fz_check_published(&t);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_log_set_level(TG_LOG_ERROR);
    /* Two sockets of 32 PUs (NUMA 0: 0-15 and 32-47, NUMA 1 the others),
     * an HBM node 2 attached to NUMA 0, two GPUs. */
    memset(&hw, 0, sizeof hw);
    hw.nvlink_source = "none";
    hw.nnuma = 2;
    hw.npus = 64;
    for (uint32_t i = 0; i < 2; i++)
        hw.numa[i] = (struct tg_topo_numa){.id = (int32_t)i, .cpus = 32, .mem = 1ull << 36};
    hw.nmem = 1;
    hw.mem[0] = (struct tg_topo_memnode){.id = 2, .mem = 1ull << 34, .kind = TG_TOPO_MEM_HBM,
                                         .numa = 0};
    for (uint32_t c = 0; c < TG_HW_MAX_PUS; c++)
        hw.pu_home[c] = c < 64 ? (int32_t)((c / 16) % 2) : -1;
    hw.ngpus = 2;
    for (uint32_t g = 0; g < 2; g++) {
        snprintf(hw.gpus[g].busid, sizeof hw.gpus[g].busid, "0000:%02x:00.0", 0x18 + g);
        hw.gpus[g].vendor = 0x10de;
        hw.gpus[g].numa = (int32_t)g;
        hw.gpus[g].nvlink = -1;
        hw.gpus[g].pair_nic = -1;
    }
    tg_hw_domains(&hw, TG_TOPO_POLICY_SINGLE_NUMA, &base);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int mode = size ? data[0] % 3 : 0;
    const uint8_t *d = size ? data + 1 : data;
    size_t n = size ? size - 1 : 0;
    memset(&p, 0, sizeof p);
    if (mode < 2) {
        if (one(mode, d, n))
            return 0;
        /* deterministic: the same message decodes the same */
        fz_check(decode(mode, d, n, &p2) == 0 && !memcmp(&p, &p2, sizeof p),
                 "two decodes of one message differ");
        apply_and_publish();
        return 0;
    }
    size_t an, ln;
    const char *why = NULL;
    int rc = tg_podres_unframe(d, n, &an, &why);
    fz_check(rc == 0 || (rc == TG_EPARSE && why && *why), "unframe returned %d", rc);
    if (rc)
        return 0;
    fz_check(an <= n - 5, "message of %zu bytes in a body of %zu", an, n);
    const uint8_t *rest = d + 5 + an;
    size_t rn = n - 5 - an;
    if (one(0, d + 5, an))
        return 0;
    rc = tg_podres_unframe(rest, rn, &ln, &why);
    if (rc)
        return 0;
    /* the List body: copied to an exact-size buffer, as the agent moves it */
    uint8_t *msg = malloc(ln ? ln : 1);
    if (!msg)
        abort();
    memcpy(msg, rest + 5, ln);
    rc = one(1, msg, ln);
    free(msg);
    if (rc == 0)
        apply_and_publish();
    return 0;
}
