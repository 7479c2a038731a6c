/* The kubelet pod-resources reader (agent/podres.h) on messages written here
 * field by field as the kubelet's protobuf encoder would (k8s.io/kubelet
 * pkg/apis/podresources/v1 api.proto; fuzz/make-corpus writes the same
 * answers as the seeds of fuzz_podres): decoding both calls, the gRPC
 * framing, the per-NUMA figures applied to a topology, and the figures past
 * what the annotation carries (fuzz_podres). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/discover.h"
#include "agent/podres.h"
#include "model/topology.h"
#include "util/err.h"
#include "util/strbuf.h"

#define GiB (1ull << 30)

/* ---- a protobuf writer -------------------------------------------------------- */

struct msg {
    uint8_t b[4096];
    size_t n;
};

static void put_varint(struct msg *m, uint64_t v)
{
    do {
        assert_true(m->n < sizeof m->b);
        m->b[m->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void put_int(struct msg *m, uint32_t field, uint64_t v)
{
    put_varint(m, (uint64_t)field << 3);
    put_varint(m, v);
}

static void put_bytes(struct msg *m, uint32_t field, const void *p, size_t n)
{
    put_varint(m, (uint64_t)field << 3 | 2);
    put_varint(m, n);
    assert_true(m->n + n <= sizeof m->b);
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void put_str(struct msg *m, uint32_t field, const char *s)
{
    put_bytes(m, field, s, strlen(s));
}

static void put_msg(struct msg *m, uint32_t field, const struct msg *sub)
{
    put_bytes(m, field, sub->b, sub->n);
}

/* repeated int64, packed */
static void put_packed(struct msg *m, uint32_t field, int64_t from, int64_t to)
{
    struct msg p = {0};
    for (int64_t v = from; v <= to; v++)
        put_varint(&p, (uint64_t)v);
    put_msg(m, field, &p);
}

/* ContainerMemory {memory_type, size, topology {nodes {ID}}} on NUMA a (and b >= 0) */
static void put_memory(struct msg *m, uint32_t field, const char *type, uint64_t size, int a,
                       int b)
{
    struct msg mem = {0}, topo = {0}, node = {0};
    if (a)
        put_int(&node, 1, (uint64_t)a);          /* proto3: an ID of 0 is not written */
    put_msg(&topo, 1, &node);
    if (b >= 0) {
        struct msg node2 = {0};
        if (b)
            put_int(&node2, 1, (uint64_t)b);
        put_msg(&topo, 1, &node2);
    }
    put_str(&mem, 1, type);
    put_int(&mem, 2, size);
    put_msg(&mem, 3, &topo);
    put_msg(m, field, &mem);
}

/* AllocatableResourcesResponse: CPUs 2-31 and 34-63 exclusive-capable, 60
 * GiB pinnable on NUMA 0, 62 GiB on NUMA 1, hugepages and a device (not
 * read). */
static void allocatable(struct msg *m)
{
    struct msg dev = {0}, topo = {0}, node = {0};
    memset(m, 0, sizeof *m);
    put_packed(m, 2, 2, 31);
    put_packed(m, 2, 34, 63);
    put_memory(m, 3, "memory", 60 * GiB, 0, -1);
    put_memory(m, 3, "memory", 62 * GiB, 1, -1);
    put_memory(m, 3, "hugepages-1Gi", 8 * GiB, 0, -1);
    put_str(&dev, 1, "nvidia.com/gpu");
    put_str(&dev, 2, "GPU-0");
    put_msg(&topo, 1, &node);
    put_msg(&dev, 3, &topo);
    put_msg(m, 1, &dev);
}

/* ListPodResourcesResponse: ml/trainer-0 holds CPUs 4-11 and 8 GiB on NUMA
 * 0; prod/db CPUs 20, 21, 40, 41 and 4 GiB over NUMA 0 and 1 (counted on
 * each) plus a sidecar with a device only; prod/web a device only. */
static void list(struct msg *m)
{
    struct msg pod = {0}, c = {0}, side = {0}, dev = {0};
    memset(m, 0, sizeof *m);
    put_str(&c, 1, "train");
    put_packed(&c, 3, 4, 11);
    put_memory(&c, 4, "memory", 8 * GiB, 0, -1);
    put_str(&pod, 1, "trainer-0");
    put_str(&pod, 2, "ml");
    put_msg(&pod, 3, &c);
    put_msg(m, 1, &pod);

    put_str(&dev, 1, "nvidia.com/gpu");
    put_str(&dev, 2, "GPU-1");
    put_str(&side, 1, "side");
    put_msg(&side, 2, &dev);
    memset(&pod, 0, sizeof pod);
    memset(&c, 0, sizeof c);
    put_str(&c, 1, "big");
    put_packed(&c, 3, 20, 21);
    put_packed(&c, 3, 40, 41);
    put_memory(&c, 4, "memory", 4 * GiB, 0, 1);
    put_str(&pod, 1, "db");
    put_str(&pod, 2, "prod");
    put_msg(&pod, 3, &c);
    put_msg(&pod, 3, &side);
    put_msg(m, 1, &pod);

    memset(&pod, 0, sizeof pod);
    put_str(&pod, 1, "web");
    put_str(&pod, 2, "prod");
    put_msg(&pod, 3, &side);
    put_msg(m, 1, &pod);
}

static struct tg_podres p;
static struct tg_hw hw;
static struct tg_topology t, back;

static const struct tg_podres_numa *numa(int32_t id)
{
    for (uint32_t i = 0; i < p.nnuma; i++)
        if (p.numa[i].id == id)
            return &p.numa[i];
    fail_msg("NUMA %d not in the figures", id);
    return NULL;
}

static void test_allocatable(void **state)
{
    (void)state;
    struct msg m;
    allocatable(&m);
    memset(&p, 0, sizeof p);
    assert_int_equal(tg_podres_parse_allocatable(m.b, m.n, &p), 0);
    assert_int_equal(p.nalloc_cpus, 60);
    assert_int_equal(p.nnuma, 2);
    assert_int_equal(numa(0)->alloc, 60 * GiB);         /* hugepages not counted */
    assert_int_equal(numa(1)->alloc, 62 * GiB);
    /* cut anywhere inside: refused, never read past the end */
    for (size_t n = 1; n < m.n; n++) {
        struct msg cut = {0};
        memcpy(cut.b, m.b, n);
        memset(&p, 0, sizeof p);
        int rc = tg_podres_parse_allocatable(cut.b, n, &p);
        assert_true(rc == 0 || rc == TG_EPARSE);
    }
}

/* Both answers into p, as tg_podres_query reads them. */
static void both_answers(void)
{
    struct msg a, l;
    allocatable(&a);
    list(&l);
    memset(&p, 0, sizeof p);
    assert_int_equal(tg_podres_parse_allocatable(a.b, a.n, &p), 0);
    assert_int_equal(tg_podres_parse_list(l.b, l.n, &p), 0);
}

static void test_list(void **state)
{
    (void)state;
    both_answers();
    assert_int_equal(p.npods, 2);                       /* prod/web holds nothing exclusive */
    assert_string_equal(p.pods, "ml/trainer-0");
    assert_string_equal(p.pods + strlen("ml/trainer-0") + 1, "prod/db");
    assert_int_equal(numa(0)->used, 12 * GiB);
    assert_int_equal(numa(1)->used, 4 * GiB);
    for (int cpu = 0; cpu < 64; cpu++) {
        int used = (cpu >= 4 && cpu <= 11) || cpu == 20 || cpu == 21 || cpu == 40 || cpu == 41;
        assert_int_equal((p.cpu_used[cpu / 8] >> (cpu % 8)) & 1, used);
    }
    /* a length past the end: refused */
    uint8_t bad[] = {0x0a, 0x7f, 0x0a, 0x01, 'x'};
    assert_int_equal(tg_podres_parse_list(bad, sizeof bad, &p), TG_EPARSE);
}

/* A namespace or name holding a '/' (fuzz_podres, regress-pod-ns-with-slash):
 * no pod has one, and "a/b" + "c" would read as "a" + "b/c"; such a pod is
 * left out of kpods (the scheduler then counts it again, never less). */
static void test_pod_key_with_slash(void **state)
{
    (void)state;
    static const char *const keys[][2] = {{"a/b", "c"}, {"a", "b/c"}, {"ml", "ok"}};
    struct msg l = {0};
    for (int i = 0; i < 3; i++) {
        struct msg pod = {0}, c = {0};
        put_str(&c, 1, "c");
        put_packed(&c, 3, i, i);
        put_str(&pod, 1, keys[i][1]);
        put_str(&pod, 2, keys[i][0]);
        put_msg(&pod, 3, &c);
        put_msg(&l, 1, &pod);
    }
    memset(&p, 0, sizeof p);
    assert_int_equal(tg_podres_parse_list(l.b, l.n, &p), 0);
    assert_int_equal(p.npods, 1);
    assert_string_equal(p.pods, "ml/ok");
    assert_int_equal(p.cpu_used[0], 7);                 /* their CPUs still count */
}

static void test_unframe(void **state)
{
    (void)state;
    const char *why = NULL;
    size_t n = 99;
    uint8_t body[] = {0, 0, 0, 0, 3, 1, 2, 3, 9};
    assert_int_equal(tg_podres_unframe(body, sizeof body, &n, &why), 0);
    assert_int_equal(n, 3);                             /* the byte after it ignored */
    assert_int_equal(tg_podres_unframe(body, 5, &n, &why), TG_EPARSE);
    assert_string_equal(why, "truncated gRPC message");
    body[0] = 1;                                        /* compressed */
    assert_int_equal(tg_podres_unframe(body, sizeof body, &n, &why), TG_EPARSE);
    assert_string_equal(why, "no uncompressed gRPC message in the response");
    assert_int_equal(tg_podres_unframe(body, 4, &n, &why), TG_EPARSE);
    uint8_t empty[] = {0, 0, 0, 0, 0};
    assert_int_equal(tg_podres_unframe(empty, sizeof empty, &n, &why), 0);
    assert_int_equal(n, 0);
    uint8_t huge[] = {0, 0xff, 0xff, 0xff, 0xff, 1};
    assert_int_equal(tg_podres_unframe(huge, sizeof huge, &n, &why), TG_EPARSE);
}

/* Two sockets of 32 PUs (NUMA 0: 0-15 and 32-47), an HBM node 2 on NUMA 0. */
static void machine(void)
{
    memset(&hw, 0, sizeof hw);
    hw.nvlink_source = "none";
    hw.nnuma = 2;
    for (uint32_t i = 0; i < 2; i++)
        hw.numa[i] = (struct tg_topo_numa){.id = (int32_t)i, .cpus = 32, .mem = 64 * GiB};
    hw.nmem = 1;
    hw.mem[0] = (struct tg_topo_memnode){.id = 2, .mem = 16 * GiB, .kind = TG_TOPO_MEM_HBM,
                                         .numa = 0};
    for (uint32_t c = 0; c < TG_HW_MAX_PUS; c++)
        hw.pu_home[c] = c < 64 ? (int32_t)((c / 16) % 2) : -1;
    tg_hw_domains(&hw, TG_TOPO_POLICY_SINGLE_NUMA, &t);
}

static void assert_decodes(void)
{
    struct tg_sb b = {0};
    const char *why = NULL;
    assert_int_equal(tg_topo_encode(&t, &b), 0);
    if (tg_topo_decode(b.s, b.len, &back, &why))
        fail_msg("the scheduler refuses the annotation (%s): %s", why, tg_sb_str(&b));
    tg_sb_free(&b);
}

static void test_apply(void **state)
{
    (void)state;
    both_answers();
    machine();
    tg_podres_apply(&p, &hw, &t);
    /* NUMA 0: 2-15 and 34-47 allocatable (28), 4-11, 40, 41 used (10) */
    assert_int_equal(t.numa[0].kcpus, 18);
    /* NUMA 1: 16-31 and 48-63 (32), 20, 21 used */
    assert_int_equal(t.numa[1].kcpus, 30);
    assert_int_equal(t.numa[0].kmem, 48 * GiB);
    assert_int_equal(t.numa[1].kmem, 58 * GiB);
    assert_int_equal(t.numa[0].known, TG_TOPO_KCPUS | TG_TOPO_KMEM);
    assert_int_equal(t.mem[0].known, 0);                /* the kubelet said nothing of it */
    assert_int_equal(t.nkpods, 2);
    assert_string_equal(t.kpods, "ml/trainer-0");
    assert_decodes();
}

/* Memory figures past what the annotation carries (fuzz_podres,
 * regress-kmem-2e60): 2^60 allocatable on NUMA 0 made kmem 2^60, and the
 * scheduler refused the whole annotation ("NUMA kmem out of range"); now
 * kmem is TG_TOPO_MAX_BYTES. Sums that would wrap saturate: 2^63 pinned
 * twice does not come back to a small number. */
static void test_memory_past_the_cap(void **state)
{
    (void)state;
    struct msg a = {0}, l = {0}, pod = {0}, c = {0};
    put_memory(&a, 3, "memory", 1ull << 60, 0, -1);
    put_memory(&a, 3, "memory", UINT64_MAX - 1, 2, -1);
    put_memory(&a, 3, "memory", 5, 2, -1);
    put_str(&c, 1, "c");
    put_memory(&c, 4, "memory", 1ull << 63, 1, -1);
    put_memory(&c, 4, "memory", 1ull << 63, 1, -1);
    put_str(&pod, 1, "p");
    put_str(&pod, 2, "ns");
    put_msg(&pod, 3, &c);
    put_msg(&l, 1, &pod);
    memset(&p, 0, sizeof p);
    assert_int_equal(tg_podres_parse_allocatable(a.b, a.n, &p), 0);
    assert_int_equal(tg_podres_parse_list(l.b, l.n, &p), 0);
    assert_int_equal(numa(2)->alloc, UINT64_MAX);
    assert_int_equal(numa(1)->used, UINT64_MAX);
    machine();
    tg_podres_apply(&p, &hw, &t);
    assert_int_equal(t.numa[0].kmem, TG_TOPO_MAX_BYTES);
    assert_int_equal(t.numa[1].kmem, 0);
    assert_int_equal(t.mem[0].kmem, TG_TOPO_MAX_BYTES);
    assert_decodes();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocatable),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_pod_key_with_slash),
        cmocka_unit_test(test_unframe),
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_memory_past_the_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
