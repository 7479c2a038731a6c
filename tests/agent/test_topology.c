/* The topology annotation: round trip, the hardened decoder against hostile
 * input (every truncation, wrong types, absurd counts, 1 MB of JSON), labels,
 * the Node merge patch and the publish decision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "agent/publish.h"
#include "model/topology.h"
#include "util/err.h"
#include "util/strbuf.h"

static struct tg_topology t, back;

/* Two NUMA nodes, two 4-GPU domains, a NIC pair on domain 1. */
static void sample(struct tg_topology *x)
{
    memset(x, 0, sizeof *x);
    x->version = TG_TOPO_VERSION;
    x->policy = TG_TOPO_POLICY_SINGLE_NUMA;
    x->nnuma = 2;
    x->numa[0] = (struct tg_topo_numa){.id = 0, .cpus = 48, .mem = 201863462912ULL};
    x->numa[1] = (struct tg_topo_numa){.id = 1, .cpus = 48, .mem = 202937204736ULL};
    x->ndomains = 2;
    for (uint32_t i = 0; i < 2; i++) {
        struct tg_topo_domain *d = &x->domains[i];
        d->id = i;
        d->numa = (int32_t)i;
        d->nvlink = 0;
        d->gpus = 4;
        d->nroots = 2;
        snprintf(d->roots[0], TG_TOPO_NAME, "0000:%02x", 0x17 + i * 0x80);
        snprintf(d->roots[1], TG_TOPO_NAME, "0000:%02x", 0x34 + i * 0x80);
    }
    x->domains[1].nnics = 1;
    snprintf(x->domains[1].nics[0].name, TG_TOPO_NAME, "mlx5_0");
    snprintf(x->domains[1].nics[0].root, TG_TOPO_NAME, "0000:97");
    x->domains[1].nics[0].rdma = 1;
    x->domains[1].rdma_gpus = 1;
}

static char *encode(const struct tg_topology *x)
{
    struct tg_sb b = {0};
    assert_int_equal(tg_topo_encode(x, &b), 0);
    return b.s;
}

static int dec(const char *s)
{
    const char *why = NULL;
    int rc = tg_topo_decode(s, strlen(s), &back, &why);
    if (rc)
        assert_non_null(why);
    return rc;
}

static void test_roundtrip(void **state)
{
    (void)state;
    sample(&t);
    char *s = encode(&t);
    assert_non_null(strstr(s, "\"v\":1"));
    assert_non_null(strstr(s, "\"policy\":\"single-numa-node\""));
    assert_null(strchr(s, ' '));                 /* compact */
    assert_int_equal(dec(s), 0);
    assert_memory_equal(&back, &t, sizeof t);
    free(s);
}

/* The sample plus what newer agents add: NUMA nodes without CPUs, the
 * kubelet's exclusive CPUs and memory per NUMA node, and the pods already
 * counted in them. */
static void sample_full(struct tg_topology *x)
{
    sample(x);
    x->numa[0].known = TG_TOPO_KCPUS | TG_TOPO_KMEM;
    x->numa[0].kcpus = 40;
    x->numa[0].kmem = 190000000000ULL;
    x->numa[1].known = TG_TOPO_KMEM;
    x->numa[1].kmem = 5;
    x->nmem = 2;
    x->mem[0] = (struct tg_topo_memnode){.id = 252, .numa = 0, .mem = 16911433728ULL,
                                         .kind = TG_TOPO_MEM_GPU};
    snprintf(x->mem[0].gpu, TG_TOPO_NAME, "0004:04:00.0");
    x->mem[1] = (struct tg_topo_memnode){.id = 9, .numa = -1, .mem = 1, .kind = TG_TOPO_MEM_OTHER,
                                         .known = TG_TOPO_KMEM, .kmem = 1};
    assert_int_equal(tg_topo_add_kpod(x, "ml/train-0"), 0);
    assert_int_equal(tg_topo_add_kpod(x, "kube-system/\"quoted\""), 0);
}

static void test_roundtrip_full(void **state)
{
    (void)state;
    sample_full(&t);
    char *s = encode(&t);
    assert_non_null(strstr(s, "\"kcpus\":40,\"kmem\":190000000000}"));
    assert_non_null(strstr(s, "{\"id\":1,\"cpus\":48,\"mem\":202937204736,\"kmem\":5}"));
    assert_non_null(strstr(s, "\"memnodes\":[{\"id\":252,\"mem\":16911433728,\"kind\":\"gpu\","
                              "\"numa\":0,\"gpu\":\"0004:04:00.0\"}"));
    assert_non_null(strstr(s, "{\"id\":9,\"mem\":1,\"kind\":\"memory\",\"numa\":-1,\"gpu\":\"\",\"kmem\":1}"));
    assert_non_null(strstr(s, "\"kpods\":[\"ml/train-0\",\"kube-system/\\\"quoted\\\"\"]"));
    assert_int_equal(dec(s), 0);
    assert_memory_equal(&back, &t, sizeof t);
    char *again = encode(&back);
    assert_string_equal(again, s);
    free(again);
    free(s);

    /* without the new parts the text is what older agents wrote */
    sample(&t);
    s = encode(&t);
    assert_null(strstr(s, "memnodes"));
    assert_null(strstr(s, "kpods"));
    assert_null(strstr(s, "kcpus"));
    free(s);

    /* kcpus above the NUMA node's CPUs, or a memory node on an unknown NUMA
     * node, cannot be encoded (the decoder would refuse them) */
    sample_full(&t);
    t.numa[0].kcpus = 49;
    struct tg_sb b = {0};
    assert_int_equal(tg_topo_encode(&t, &b), TG_EINVAL);
    sample_full(&t);
    t.mem[1].numa = 5;
    assert_int_equal(tg_topo_encode(&t, &b), TG_EINVAL);
    tg_sb_free(&b);

    /* kpods: names only, a cap on bytes */
    sample(&t);
    assert_int_equal(tg_topo_add_kpod(&t, ""), TG_ERANGE);
    assert_int_equal(tg_topo_add_kpod(&t, NULL), TG_ERANGE);
    char name[TG_TOPO_POD_KEY + 1];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = 0;
    assert_int_equal(tg_topo_add_kpod(&t, name), TG_ERANGE);
    name[200] = 0;
    name[3] = '/';
    int added = 0;
    while (tg_topo_add_kpod(&t, name) == 0)
        added++;
    assert_int_equal(added, TG_TOPO_KPODS_BYTES / 201);
    s = encode(&t);
    assert_true(strlen(s) < TG_TOPO_MAX_JSON);
    assert_int_equal(dec(s), 0);
    assert_int_equal(back.nkpods, (uint32_t)added);
    free(s);
}

static void test_memkind_names(void **state)
{
    (void)state;
    uint8_t k = 99;
    for (uint8_t i = 0; i < TG_TOPO_MEM_NKINDS; i++) {
        assert_int_equal(tg_topo_memkind_parse(tg_topo_memkind_name(i), &k), 0);
        assert_int_equal(k, i);
    }
    assert_int_equal(tg_topo_memkind_parse("MCDRAM", &k), TG_EINVAL);
    assert_string_equal(tg_topo_memkind_name(200), "memory");
}

static void test_policy_names(void **state)
{
    (void)state;
    uint8_t p = 9;
    assert_int_equal(tg_topo_policy_parse("restricted", &p), 0);
    assert_int_equal(p, TG_TOPO_POLICY_RESTRICTED);
    assert_int_equal(tg_topo_policy_parse("best-effort", &p), TG_EINVAL);
    assert_int_equal(tg_topo_policy_parse(NULL, &p), TG_EINVAL);
    assert_string_equal(tg_topo_policy_name(TG_TOPO_POLICY_NONE), "none");
    assert_string_equal(tg_topo_policy_name(200), "none");
}

/* Every prefix of a valid annotation is rejected, and the output is zeroed. */
static void test_every_truncation(void **state)
{
    (void)state;
    sample_full(&t);
    char *s = encode(&t);
    size_t n = strlen(s);
    static const struct tg_topology zero;
    for (size_t i = 0; i < n; i++) {
        /* heap copy of exactly i bytes: ASan catches any read past it */
        char *cut = malloc(i ? i : 1);
        memcpy(cut, s, i);
        const char *why = NULL;
        assert_int_not_equal(tg_topo_decode(cut, i, &back, &why), 0);
        assert_non_null(why);
        assert_memory_equal(&back, &zero, sizeof zero);
        free(cut);
    }
    free(s);
}

static void test_hostile(void **state)
{
    (void)state;
    const char *bad[] = {
        "null", "[]", "42", "\"x\"", "{}",
        "{\"v\":2,\"policy\":\"none\",\"numa\":[],\"domains\":[]}",
        "{\"v\":\"1\",\"policy\":\"none\",\"numa\":[],\"domains\":[]}",
        "{\"v\":1.5,\"policy\":\"none\",\"numa\":[],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"sometimes\",\"numa\":[],\"domains\":[]}",
        "{\"v\":1,\"policy\":7,\"numa\":[],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":{},\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[7],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":-1,\"cpus\":1,\"mem\":1}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":\"48\",\"mem\":1}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1e300,\"mem\":1}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":-5}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1},"
            "{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":[]}",
        /* domain problems */
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":0,\"numa\":0,\"gpus\":1000000000,\"nvlink\":-1,\"roots\":[],\"nics\":[],\"rdma_gpus\":0}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":0,\"numa\":3,\"gpus\":1,\"nvlink\":-1,\"roots\":[],\"nics\":[],\"rdma_gpus\":0}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":0,\"numa\":0,\"gpus\":1,\"nvlink\":-1,\"roots\":[],\"nics\":[],\"rdma_gpus\":2}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":0,\"numa\":0,\"gpus\":1,\"nvlink\":-1,\"roots\":[1],\"nics\":[],\"rdma_gpus\":0}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":0,\"numa\":0,\"gpus\":1,\"nvlink\":-1,\"roots\":[\"0123456789012345678901234567890123456789\"],"
            "\"nics\":[],\"rdma_gpus\":0}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":0,\"numa\":0,\"gpus\":1,\"nvlink\":-1,\"roots\":[],\"nics\":[{\"name\":\"x\",\"rdma\":1,\"root\":\"\"}],"
            "\"rdma_gpus\":0}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":0,\"numa\":0,\"gpus\":1,\"nvlink\":-1,\"roots\":[],\"nics\":[],\"rdma_gpus\":0},"
            "{\"id\":0,\"numa\":0,\"gpus\":1,\"nvlink\":-1,\"roots\":[],\"nics\":[],\"rdma_gpus\":0}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":["
            "{\"id\":200,\"numa\":0,\"gpus\":1,\"nvlink\":-1,\"roots\":[],\"nics\":[],\"rdma_gpus\":0}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[null]}",
        /* kubelet figures */
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":2,\"mem\":1,\"kcpus\":3}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":2,\"mem\":1,\"kcpus\":-1}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":2,\"mem\":1,\"kmem\":\"1Gi\"}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":2,\"mem\":1,\"kmem\":1.5}],\"domains\":[]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],\"kpods\":{}}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],\"kpods\":[7]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],\"kpods\":[\"noslash\"]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],\"kpods\":[\"\"]}",
        /* memory-only NUMA nodes */
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],\"memnodes\":{}}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],\"memnodes\":[1]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[{\"id\":0,\"cpus\":1,\"mem\":1}],\"domains\":[],"
            "\"memnodes\":[{\"id\":0,\"mem\":1,\"kind\":\"gpu\",\"numa\":-1,\"gpu\":\"\"}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],"
            "\"memnodes\":[{\"id\":1,\"mem\":1,\"kind\":\"gpu\",\"numa\":-1,\"gpu\":\"\"},"
            "{\"id\":1,\"mem\":1,\"kind\":\"gpu\",\"numa\":-1,\"gpu\":\"\"}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],"
            "\"memnodes\":[{\"id\":1,\"mem\":1,\"kind\":\"gpu\",\"numa\":0,\"gpu\":\"\"}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],"
            "\"memnodes\":[{\"id\":1,\"mem\":1,\"kind\":\"MCDRAM\",\"numa\":-1,\"gpu\":\"\"}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],"
            "\"memnodes\":[{\"id\":1,\"mem\":1,\"kind\":\"gpu\",\"numa\":-1}]}",
        "{\"v\":1,\"policy\":\"none\",\"numa\":[],\"domains\":[],"
            "\"memnodes\":[{\"id\":1,\"mem\":-1,\"kind\":\"gpu\",\"numa\":-1,\"gpu\":\"\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (dec(bad[i]) == 0)
            fail_msg("accepted hostile annotation #%zu: %s", i, bad[i]);
    /* a NaN cannot be written in JSON, but an empty input can */
    const char *why = NULL;
    assert_int_equal(tg_topo_decode(NULL, 0, &back, &why), TG_EPARSE);
    assert_int_equal(tg_topo_decode("", 0, &back, &why), TG_EPARSE);
}

/* More entries than the caps, 1 MB of JSON, deep nesting. */
static void test_absurd_sizes(void **state)
{
    (void)state;
    struct tg_sb b = {0};
    tg_sb_puts(&b, "{\"v\":1,\"policy\":\"none\",\"numa\":[");
    for (int i = 0; i < TG_TOPO_MAX_NUMA + 1; i++)
        tg_sb_printf(&b, "%s{\"id\":%d,\"cpus\":1,\"mem\":1}", i ? "," : "", i);
    tg_sb_puts(&b, "],\"domains\":[]}");
    assert_int_not_equal(dec(b.s), 0);
    tg_sb_free(&b);

    /* 1 MB: valid JSON (a long string), refused before parsing */
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    memcpy(big, "{\"v\":1,\"x\":\"", 12);
    memcpy(big + n - 2, "\"}", 2);
    big[n] = 0;
    const char *why = NULL;
    assert_int_equal(tg_topo_decode(big, n, &back, &why), TG_ERANGE);
    assert_non_null(strstr(why, "64 KiB"));
    /* 60 000 nested arrays: under the size cap, rejected by nesting depth */
    n = 60000;
    for (size_t i = 0; i < n / 2; i++)
        big[i] = '[';
    for (size_t i = n / 2; i < n; i++)
        big[i] = ']';
    assert_int_not_equal(tg_topo_decode(big, n, &back, &why), 0);
    free(big);

    /* the encoder refuses what the decoder would */
    sample(&t);
    t.domains[0].rdma_gpus = 9;
    struct tg_sb e = {0};
    assert_int_equal(tg_topo_encode(&t, &e), TG_EINVAL);
    tg_sb_free(&e);
}

/* The largest topology the caps allow still encodes within the decoder's
 * size limit (the lists are dropped) and decodes. */
static void test_oversized_encodes_compact(void **state)
{
    (void)state;
    static struct tg_topology big;
    memset(&big, 0, sizeof big);
    big.version = TG_TOPO_VERSION;
    big.policy = TG_TOPO_POLICY_SINGLE_NUMA;
    big.nnuma = TG_TOPO_MAX_NUMA;
    for (uint32_t i = 0; i < TG_TOPO_MAX_NUMA; i++)
        big.numa[i] = (struct tg_topo_numa){.id = (int32_t)i, .cpus = 8, .mem = 1ULL << 34};
    big.ndomains = TG_TOPO_MAX_DOMAINS;
    for (uint32_t i = 0; i < TG_TOPO_MAX_DOMAINS; i++) {
        struct tg_topo_domain *d = &big.domains[i];
        d->id = i;
        d->numa = (int32_t)i;
        d->nvlink = 0;
        d->gpus = 8;
        d->rdma_gpus = 8;
        d->nroots = TG_TOPO_MAX_ROOTS;
        d->nnics = TG_TOPO_MAX_NICS;
        for (uint32_t r = 0; r < TG_TOPO_MAX_ROOTS; r++)
            snprintf(d->roots[r], TG_TOPO_NAME, "root-with-a-long-name-%04u", r);
        for (uint32_t k = 0; k < TG_TOPO_MAX_NICS; k++) {
            snprintf(d->nics[k].name, TG_TOPO_NAME, "nic-with-a-long-name-%05u", k);
            snprintf(d->nics[k].root, TG_TOPO_NAME, "root-with-a-long-name-%04u", k);
        }
    }
    struct tg_sb b = {0};
    assert_int_equal(tg_topo_encode(&big, &b), 0);
    assert_true(b.len <= TG_TOPO_MAX_JSON);
    const char *why = NULL;
    assert_int_equal(tg_topo_decode(b.s, b.len, &back, &why), 0);
    assert_int_equal(back.ndomains, TG_TOPO_MAX_DOMAINS);
    assert_int_equal(back.domains[63].gpus, 8);
    assert_int_equal(back.domains[63].rdma_gpus, 8);
    assert_int_equal(back.domains[0].nnics, 0);
    tg_sb_free(&b);
    /* a small one keeps its lists */
    sample(&t);
    char *s = encode(&t);
    assert_non_null(strstr(s, "mlx5_0"));
    free(s);
}

/* Input is read by length: bytes after n do not count. */
static void test_not_nul_terminated(void **state)
{
    (void)state;
    sample(&t);
    char *s = encode(&t);
    size_t n = strlen(s);
    char *padded = malloc(n + 8);
    memcpy(padded, s, n);
    memcpy(padded + n, "garbage!", 8);
    const char *why = NULL;
    assert_int_equal(tg_topo_decode(padded, n, &back, &why), 0);
    assert_int_equal(back.ndomains, 2);
    free(padded);
    free(s);
}

static void test_labels(void **state)
{
    (void)state;
    char v[TG_TOPO_NLABELS][16];
    sample(&t);
    t.domains[1].gpus = 2;
    t.domains[1].rdma_gpus = 1;
    tg_topo_labels(&t, v);
    assert_string_equal(tg_topo_label_keys[0], TG_LABEL_NUMA_NODES);
    assert_string_equal(v[0], "2");
    assert_string_equal(tg_topo_label_keys[1], TG_LABEL_MEMORY_NUMA_NODES);
    assert_string_equal(v[1], "0");
    assert_string_equal(tg_topo_label_keys[2], TG_LABEL_GPU_DOMAINS);
    assert_string_equal(v[2], "2");
    assert_string_equal(tg_topo_label_keys[3], TG_LABEL_GPUS_PER_DOMAIN);
    assert_string_equal(v[3], "2");              /* the smallest domain */
    memset(&t, 0, sizeof t);
    t.nnuma = 1;
    t.nmem = 3;
    tg_topo_labels(&t, v);
    assert_string_equal(v[0], "1");
    assert_string_equal(v[1], "3");
    assert_string_equal(v[2], "0");
    assert_string_equal(v[3], "0");
}

static void test_patch_body(void **state)
{
    (void)state;
    sample(&t);
    char *annot = encode(&t);
    struct tg_sb p = {0};
    assert_int_equal(tg_topo_patch_body(&t, annot, &p), 0);
    cJSON *root = cJSON_Parse(p.s);
    assert_non_null(root);
    cJSON *meta = cJSON_GetObjectItem(root, "metadata");
    cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "annotations"), "topogang.io/topology");
    assert_true(cJSON_IsString(ann));
    assert_string_equal(ann->valuestring, annot);
    cJSON *labels = cJSON_GetObjectItem(meta, "labels");
    assert_string_equal(cJSON_GetObjectItem(labels, TG_LABEL_NUMA_NODES)->valuestring, "2");
    assert_string_equal(cJSON_GetObjectItem(labels, TG_LABEL_GPU_DOMAINS)->valuestring, "2");
    assert_string_equal(cJSON_GetObjectItem(labels, TG_LABEL_GPUS_PER_DOMAIN)->valuestring, "4");
    assert_string_equal(cJSON_GetObjectItem(labels, TG_LABEL_MEMORY_NUMA_NODES)->valuestring, "0");
    cJSON_Delete(root);
    tg_sb_free(&p);


    const char *cur[TG_TOPO_NLABELS] = {"2", "0", "2", "4"};
    assert_int_equal(tg_topo_needs_patch(&t, annot, cur), 0);
    assert_int_equal(tg_topo_needs_patch(&t, NULL, cur), 1);
    cur[3] = NULL;
    assert_int_equal(tg_topo_needs_patch(&t, annot, cur), 1);
    cur[3] = "4";
    cur[1] = NULL;                               /* published by an older agent */
    assert_int_equal(tg_topo_needs_patch(&t, annot, cur), 1);
    cur[1] = "0";
    cur[2] = "3";
    assert_int_equal(tg_topo_needs_patch(&t, annot, cur), 1);
    cur[2] = "2";
    t.domains[0].gpus = 3;                       /* a GPU went away */
    cur[3] = "3";
    assert_int_equal(tg_topo_needs_patch(&t, annot, cur), 1);
    free(annot);
}

/* The publish decision from a Node as the API server returns it. */
static void test_plan(void **state)
{
    (void)state;
    sample(&t);
    char *annot = encode(&t);
    struct tg_sb node = {0}, patch = {0};

    /* a fresh Node: no annotations at all */
    const char *fresh = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\",\"labels\":{\"a\":\"b\"}}}";
    assert_int_equal(tg_agent_plan(fresh, strlen(fresh), &t, &patch), 1);
    assert_non_null(strstr(patch.s, "\"topogang.io/gpus-per-domain\":\"4\""));

    /* up to date: no patch */
    tg_sb_puts(&node, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\",\"annotations\":{"
                      "\"topogang.io/topology\":");
    tg_sb_json_str(&node, annot);
    tg_sb_puts(&node, "},\"labels\":{\"topogang.io/numa-nodes\":\"2\",\"topogang.io/gpu-domains\":\"2\","
                      "\"topogang.io/memory-numa-nodes\":\"0\",\"topogang.io/gpus-per-domain\":\"4\"}}}");
    tg_sb_reset(&patch);
    assert_int_equal(tg_agent_plan(node.s, node.len, &t, &patch), 0);
    assert_int_equal(patch.len, 0);

    /* the policy changed: patch */
    t.policy = TG_TOPO_POLICY_NONE;
    assert_int_equal(tg_agent_plan(node.s, node.len, &t, &patch), 1);
    assert_non_null(strstr(patch.s, "\\\"policy\\\":\\\"none\\\""));

    const char *junk = "{\"metadata\":";
    assert_int_equal(tg_agent_plan(junk, strlen(junk), &t, &patch), TG_EPARSE);
    tg_sb_free(&node);
    tg_sb_free(&patch);
    free(annot);
}

/* 20 000 deterministic mutations of a valid annotation (byte flips,
 * deletions, duplications, cuts): the decoder never crashes (ASan/UBSan
 * watch), and whatever it accepts respects every cap and re-encodes. */
static void test_mutations(void **state)
{
    (void)state;
    sample_full(&t);
    char *s = encode(&t);
    size_t n = strlen(s);
    static const char alphabet[] = "{}[]\",:-0123456789.eE truefalsnl\\";
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    unsigned accepted = 0;
    for (int it = 0; it < 20000; it++) {
        char *m = malloc(2 * n + 2);
        memcpy(m, s, n);
        size_t len = n;
        int edits = 1 + (int)(it % 4);
        for (int e = 0; e < edits && len > 1; e++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t pos = (size_t)(x % len);
            switch ((x >> 32) % 4) {
            case 0: m[pos] = alphabet[(x >> 40) % (sizeof alphabet - 1)]; break;
            case 1: memmove(m + pos, m + pos + 1, len - pos - 1); len--; break;
            case 2: {
                size_t k = (size_t)((x >> 24) % 16);
                if (pos + k > len) k = len - pos;
                if (len + k <= 2 * n) { memmove(m + pos + k, m + pos, len - pos); len += k; }
                break;
            }
            default: len = pos + 1; break;
            }
        }
        char *exact = malloc(len);
        memcpy(exact, m, len);
        free(m);
        const char *why = NULL;
        if (tg_topo_decode(exact, len, &back, &why) == 0) {
            accepted++;
            assert_int_equal(back.version, TG_TOPO_VERSION);
            assert_true(back.nnuma <= TG_TOPO_MAX_NUMA && back.ndomains <= TG_TOPO_MAX_DOMAINS);
            for (uint32_t d = 0; d < back.ndomains; d++) {
                assert_true(back.domains[d].gpus <= TG_TOPO_MAX_GPUS);
                assert_true(back.domains[d].rdma_gpus <= back.domains[d].gpus);
                assert_true(back.domains[d].numa == -1 ||
                            tg_topo_numa_index(&back, back.domains[d].numa) >= 0);
            }
            assert_true(back.nmem <= TG_TOPO_MAX_MEMNODES);
            for (uint32_t k = 0; k < back.nmem; k++) {
                assert_true(back.mem[k].numa == -1 ||
                            tg_topo_numa_index(&back, back.mem[k].numa) >= 0);
                assert_int_equal(tg_topo_numa_index(&back, back.mem[k].id), -1);
            }
            for (uint32_t k = 0; k < back.nnuma; k++)
                assert_true(!(back.numa[k].known & TG_TOPO_KCPUS) ||
                            back.numa[k].kcpus <= back.numa[k].cpus);
            struct tg_sb re = {0};
            assert_int_equal(tg_topo_encode(&back, &re), 0);
            tg_sb_free(&re);
        } else {
            assert_non_null(why);
        }
        free(exact);
    }
    /* some mutations (digit changes) stay valid: the loop did test acceptance */
    assert_true(accepted > 0);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_absurd_sizes),
        cmocka_unit_test(test_oversized_encodes_compact),
        cmocka_unit_test(test_not_nul_terminated),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_roundtrip_full),
        cmocka_unit_test(test_memkind_names),
        cmocka_unit_test(test_patch_body),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
