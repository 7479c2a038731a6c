/* Decoders: effective pod requests as kube-scheduler computes them, node
 * fields, PodGroups, and bad input reported with the object and the field. */
#include "testutil.h"
#include "informer/kinds.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/yamljson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char msgs[4096];

static void capture(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                    const char *msg)
{
    (void)ud;
    (void)at;
    size_t n = strlen(msgs);
    snprintf(msgs + n, sizeof msgs - n, "%s %s %s: %s\n", is_error ? "E" : "W", what, field, msg);
}

static int take(void *ud, cJSON *root, const struct tg_yaml_lines *lines)
{
    (void)lines;
    *(cJSON **)ud = root;
    return 1;
}

static cJSON *yaml(const char *text)
{
    cJSON *root = NULL;
    struct tg_sb err = {0};
    assert_int_equal(tg_yaml_parse(text, strlen(text), "t", take, &root, &err), 0);
    tg_sb_free(&err);
    assert_non_null(root);
    return root;
}

static struct tg_pod *pod(const char *text, int *rc)
{
    cJSON *j = yaml(text);
    struct tg_diag d = {capture, NULL, 0, 0};
    struct tg_pod *p = NULL;
    msgs[0] = 0;
    *rc = tg_pod_decode(j, TG_DECODE_SPEC, &d, &p);
    cJSON_Delete(j);
    return p;
}

/* A pod's request of res: by id when a Node has registered the name, else
 * among the names no node offers (a pod registers none). */
static int64_t req(const struct tg_pod *p, const char *res)
{
    int id = tg_res_lookup(res, strlen(res));
    if (id >= 0)
        return tg_rq_get(p->req, p->nreq, (uint32_t)id);
    for (uint32_t i = 0; i < p->nunoffered; i++)
        if (!strcmp(p->unoffered[i].name, res))
            return p->unoffered[i].val;
    return 0;
}

static void test_effective_requests(void **state)
{
    (void)state;
    int rc;
    struct tg_pod *p = pod(
        "kind: Pod\nmetadata: {name: w, namespace: ml, labels: {topogang.io/pod-group: g}}\n"
        "spec:\n"
        "  initContainers:\n"
        "  - {name: setup, resources: {requests: {cpu: '4', memory: 1Gi}}}\n"
        "  - {name: proxy, restartPolicy: Always, resources: {requests: {cpu: 500m}}}\n"
        "  containers:\n"
        "  - {name: a, resources: {requests: {cpu: '1'}, limits: {nvidia.com/gpu: 8, memory: 2Gi}}}\n"
        "  - {name: b, resources: {requests: {cpu: 1500m, memory: 1Gi}}}\n"
        "  overhead: {cpu: 100m}\n", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(p->key, "ml/w");
    assert_string_equal(tg_pod_name(p), "w");
    assert_string_equal(tg_str(p->group), "g");
    /* cpu: max(init 4 + sidecars before it 0, containers 2.5 + sidecar 0.5) + overhead */
    assert_int_equal(req(p, "cpu"), 4100);
    /* memory: limits stand in for requests: 2Gi + 1Gi */
    assert_int_equal(req(p, "memory"), 3LL << 30);
    assert_int_equal(req(p, "nvidia.com/gpu"), 8);
    assert_int_equal(p->phase, TG_PHASE_PENDING);
    assert_string_equal(tg_str(p->sched), "default-scheduler");
    tg_pod_free(&p);
    assert_null(p);
}

static void test_pod_constraints(void **state)
{
    (void)state;
    int rc;
    struct tg_pod *p = pod(
        "kind: Pod\nmetadata: {name: w}\n"
        "spec:\n  schedulerName: topogang\n  nodeName: n1\n  priority: 7\n"
        "  nodeSelector: {disk: ssd, gen: 5}\n"
        "  tolerations: [{operator: Exists}, {key: k, value: v, effect: NoExecute}]\n"
        "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [\n"
        "    {matchExpressions: [{key: a, operator: In, values: [x, y]}, {key: n, operator: Gt, values: ['3']}]},\n"
        "    {matchFields: [{key: metadata.name, operator: NotIn, values: [bad]}]}]}}}\n"
        "status: {phase: Running}\n", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(p->key, "default/w");
    assert_string_equal(tg_str(p->node), "n1");
    assert_int_equal(p->priority, 7);
    assert_int_equal(p->phase, TG_PHASE_RUNNING);
    assert_int_equal(p->spec->nselector, 2);
    assert_string_equal(tg_str(tg_labels_get(p->spec->selector, 2, tg_intern("gen"))), "5");
    assert_int_equal(p->spec->ntol, 2);
    assert_int_equal(p->spec->tols[0].op, TG_TOL_EXISTS);
    assert_int_equal(p->spec->tols[0].key, 0);
    assert_int_equal(p->spec->tols[1].effect, TG_EFFECT_NOEXECUTE);
    assert_int_equal(p->spec->nterms, 2);
    assert_int_equal(p->spec->terms[0].nreq, 2);
    assert_int_equal(p->spec->terms[0].reqs[1].op, TG_SEL_GT);
    assert_int_equal(p->spec->terms[0].reqs[1].num, 3);
    assert_int_equal(p->spec->terms[1].reqs[0].is_field, 1);
    tg_pod_free(&p);
}

static void test_bad_pods(void **state)
{
    (void)state;
    int rc;
    struct tg_pod *p = pod("kind: Pod\nmetadata: {name: x, namespace: ml}\n"
                           "spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n", &rc);
    assert_null(p);
    assert_int_equal(rc, TG_EPARSE);
    assert_non_null(strstr(msgs, "Pod ml/x spec.containers[0].resources.requests.cpu: malformed quantity \"lots\""));

    p = pod("kind: Pod\nmetadata: {name: x}\nspec: {containers: [{resources: {requests: {memory: -1Gi}}}]}\n", &rc);
    assert_null(p);
    assert_non_null(strstr(msgs, "negative quantity \"-1Gi\""));

    p = pod("kind: Pod\nmetadata: {name: x}\nspec: {tolerations: {key: a}}\n", &rc);
    assert_null(p);
    assert_non_null(strstr(msgs, "spec.tolerations: must be a list, not a map"));

    p = pod("kind: Pod\nmetadata: {namespace: ml}\nspec: {}\n", &rc);
    assert_null(p);
    assert_non_null(strstr(msgs, "metadata.name: is required"));

    p = pod("kind: Pod\nmetadata: {name: x}\nspec: {priority: 1.5}\n", &rc);
    assert_null(p);
    assert_non_null(strstr(msgs, "spec.priority: must be a whole number"));

    p = pod("kind: Pod\nmetadata: {name: x}\nspec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
            " {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near, values: [b]}]}]}}}}\n", &rc);
    assert_null(p);
    assert_non_null(strstr(msgs, "unknown operator \"Near\""));

    p = pod("- just\n- a list\n", &rc);
    assert_null(p);
    assert_non_null(strstr(msgs, "object must be a map, not a list"));
}

static void test_node(void **state)
{
    (void)state;
    cJSON *j = yaml("kind: Node\nmetadata:\n  name: n1\n  labels: {topogang.io/rack: r1}\n"
                    "  annotations: {topogang.io/topology: '{\"v\":1}'}\n"
                    "spec:\n  unschedulable: true\n  taints: [{key: maint, value: 'yes', effect: NoSchedule}]\n"
                    "status:\n  capacity: {cpu: '8', nvidia.com/gpu: '8'}\n"
                    "  conditions: [{type: Ready, status: 'False'}]\n");
    struct tg_diag d = {capture, NULL, 0, 0};
    struct tg_node_obj *n;
    assert_int_equal(tg_node_decode(j, &d, &n), 0);
    assert_string_equal(tg_str(n->name), "n1");
    assert_int_equal(n->unschedulable, 1);
    assert_int_equal(n->ready, 0);
    assert_int_equal(n->ntaints, 1);
    assert_string_equal(tg_str(n->taints[0].val), "yes");
    assert_int_equal(tg_rq_get(n->alloc, n->nalloc, TG_RES_CPU), 8000);
    assert_string_equal(n->topology, "{\"v\":1}");
    assert_string_equal(tg_str(tg_labels_get(n->labels, n->nlabels, tg_intern("topogang.io/rack"))), "r1");
    tg_node_free(&n);
    cJSON_Delete(j);

    msgs[0] = 0;
    j = yaml("kind: Node\nmetadata: {name: n2}\nstatus: {allocatable: {cpu: [1]}}\n");
    assert_int_equal(tg_node_decode(j, &d, &n), TG_EPARSE);
    assert_non_null(strstr(msgs, "Node n2 status.allocatable.cpu: must be a quantity string, not a list"));
    cJSON_Delete(j);
}

static void test_podgroup(void **state)
{
    (void)state;
    cJSON *j = yaml("apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
                    "spec: {minMember: 16, priority: 5, topology: {required: rack, preferred: nvlink-domain, strategy: spread}}\n");
    struct tg_diag d = {capture, NULL, 0, 0};
    struct tg_podgroup *g;
    assert_int_equal(tg_podgroup_decode(j, &d, &g), 0);
    assert_string_equal(g->key, "ml/g");
    assert_int_equal(g->min_member, 16);
    assert_int_equal(g->strategy, TG_STRATEGY_SPREAD);
    assert_string_equal(tg_str(g->required), "rack");
    assert_string_equal(tg_str(g->preferred), "nvlink-domain");
    tg_podgroup_free(&g);
    cJSON_Delete(j);

    msgs[0] = 0;
    j = yaml("kind: PodGroup\nmetadata: {name: g}\nspec: {minMember: 0, topology: {strategy: tight}}\n");
    assert_int_equal(tg_podgroup_decode(j, &d, &g), TG_EPARSE);
    assert_non_null(strstr(msgs, "spec.minMember: must be a whole number from 1"));
    assert_non_null(strstr(msgs, "spec.topology.strategy: must be pack or spread"));
    cJSON_Delete(j);
}

/* Sub-groups (issue 20): the listed form and the rank-slice form; bad
 * entries named by field. */
static void test_podgroup_subgroups(void **state)
{
    (void)state;
    cJSON *j = yaml("kind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
                    "spec:\n  minMember: 12\n  subGroups:\n"
                    "  - {name: prefill, minMember: 4, topology: {required: nvlink-domain}}\n"
                    "  - {name: decode, minMember: 8, topology: {required: rack, preferred: nvlink-domain}}\n");
    struct tg_diag d = {capture, NULL, 0, 0};
    struct tg_podgroup *g;
    assert_int_equal(tg_podgroup_decode(j, &d, &g), 0);
    assert_int_equal(g->nsubs, 2);
    assert_int_equal(g->sub_size, 0);
    assert_string_equal(tg_str(g->subs[0].name), "prefill");
    assert_int_equal(g->subs[0].min_member, 4);
    assert_string_equal(tg_str(g->subs[0].required), "nvlink-domain");
    assert_int_equal(g->subs[0].preferred, 0);
    assert_string_equal(tg_str(g->subs[1].required), "rack");
    assert_string_equal(tg_str(g->subs[1].preferred), "nvlink-domain");
    tg_podgroup_free(&g);
    cJSON_Delete(j);

    j = yaml("kind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
             "spec: {minMember: 64, subGroupSize: 8, subGroupTopology: {required: nvlink-domain}}\n");
    assert_int_equal(tg_podgroup_decode(j, &d, &g), 0);
    assert_int_equal(g->sub_size, 8);
    assert_int_equal(g->sub_topo.min_member, 8);
    assert_string_equal(tg_str(g->sub_topo.required), "nvlink-domain");
    tg_podgroup_free(&g);
    cJSON_Delete(j);

    msgs[0] = 0;
    j = yaml("kind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
             "spec:\n  minMember: 2\n  subGroupSize: 2\n  subGroups:\n  - {name: a}\n");
    assert_int_equal(tg_podgroup_decode(j, &d, &g), TG_EPARSE);
    assert_non_null(strstr(msgs, "spec.subGroups: cannot be given with spec.subGroupSize"));
    cJSON_Delete(j);

    msgs[0] = 0;
    j = yaml("kind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
             "spec:\n  minMember: 2\n  subGroups:\n  - {name: a, minMember: 0}\n  - {name: a}\n"
             "  - {minMember: 1}\n  - 7\n");
    assert_int_equal(tg_podgroup_decode(j, &d, &g), TG_EPARSE);
    assert_non_null(strstr(msgs, "spec.subGroups[0].minMember: must be a whole number from 1"));
    assert_non_null(strstr(msgs, "spec.subGroups[1].name: \"a\" is listed twice"));
    assert_non_null(strstr(msgs, "spec.subGroups[2].name: is required"));
    assert_non_null(strstr(msgs, "spec.subGroups[3]: must be a map"));
    cJSON_Delete(j);
}

/* One PriorityClass decoder (issue 19): the daemon's informer kind and
 * `simulate` call tg_prioclass_decode, so they agree; a null
 * preemptionPolicy is the API's default, PreemptLowerPriority (the informer
 * accepted it and `simulate` refused it before). */
static void test_prioclass(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        int rc, value, never, def;
        const char *msg;
    } cases[] = {
        {"kind: PriorityClass\nmetadata: {name: hi}\nvalue: 1000\npreemptionPolicy: null\n", 0,
         1000, 0, 0, NULL},
        {"kind: PriorityClass\nmetadata: {name: hi}\nvalue: 1000\n", 0, 1000, 0, 0, NULL},
        {"kind: PriorityClass\nmetadata: {name: p}\nvalue: -5\npreemptionPolicy: Never\n"
         "globalDefault: true\n", 0, -5, 1, 1, NULL},
        {"kind: PriorityClass\nmetadata: {name: p}\nvalue: 5\npreemptionPolicy: PreemptLowerPriority\n",
         0, 5, 0, 0, NULL},
        {"kind: PriorityClass\nmetadata: {name: p}\nvalue: 5\npreemptionPolicy: Sometimes\n",
         TG_EPARSE, 0, 0, 0, "E PriorityClass p preemptionPolicy: must be PreemptLowerPriority or Never"},
        {"kind: PriorityClass\nmetadata: {name: p}\nvalue: 2147483648\n", TG_EPARSE, 0, 0, 0,
         "E PriorityClass p value: must be a whole number from -2147483648 to 2147483647"},
        {"kind: PriorityClass\nmetadata: {name: p}\n", TG_EPARSE, 0, 0, 0,
         "E PriorityClass p value: is required"},
        {"kind: PriorityClass\nmetadata: {name: p}\nvalue: 1\nglobalDefault: yes please\n",
         TG_EPARSE, 0, 0, 0, "E PriorityClass p globalDefault: must be a boolean"},
        {"kind: PriorityClass\nvalue: 1\n", TG_EPARSE, 0, 0, 0, "metadata.name: is required"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *j = yaml(cases[i].yaml);
        struct tg_diag d = {capture, NULL, 0, 0};
        struct tg_prioclass *pc = NULL;
        msgs[0] = 0;
        assert_int_equal(tg_prioclass_decode(j, &d, &pc), cases[i].rc);
        if (cases[i].msg)
            assert_non_null(strstr(msgs, cases[i].msg));
        void *o = NULL;
        assert_int_equal(tg_kind_prioclass.decode(j, &o), cases[i].rc); /* the daemon's path */
        if (!cases[i].rc) {
            const struct tg_prioclass *k = o;
            assert_int_equal(pc->value, cases[i].value);
            assert_int_equal(pc->never, cases[i].never);
            assert_int_equal(pc->global_default, cases[i].def);
            assert_int_equal(k->value, pc->value);
            assert_int_equal(k->never, pc->never);
            assert_int_equal(k->global_default, pc->global_default);
            assert_string_equal(tg_kind_prioclass.key(o), pc->name);
            tg_kind_prioclass.free(o);
        } else {
            assert_null(pc);
            assert_null(o);
        }
        tg_prioclass_free(&pc);
        assert_null(pc);
        cJSON_Delete(j);
    }
    assert_true(tg_prioclass_is_system("system-node-critical", 2000001000));
    assert_true(tg_prioclass_is_system("system-custom", 10));
    assert_true(tg_prioclass_is_system("huge", 1000000001));
    assert_false(tg_prioclass_is_system("high", 1000000000));
    assert_false(tg_prioclass_is_system("systemic", 5));
}

static void test_shapes(void **state)
{
    (void)state;
    int rc;
    const char *a = "kind: Pod\nmetadata: {name: a}\nspec: {nodeSelector: {x: y}, containers: [{resources: {requests: {cpu: '1'}}}]}\n";
    const char *b = "kind: Pod\nmetadata: {name: b}\nspec: {nodeSelector: {x: y}, containers: [{resources: {requests: {cpu: 1000m}}}]}\n";
    const char *c = "kind: Pod\nmetadata: {name: c}\nspec: {nodeSelector: {x: z}, containers: [{resources: {requests: {cpu: '1'}}}]}\n";
    struct tg_pod *pa = pod(a, &rc), *pb = pod(b, &rc), *pc = pod(c, &rc);
    assert_true(tg_pod_shape_hash(pa) == tg_pod_shape_hash(pb));
    assert_true(tg_pod_same_shape(pa, pb));
    assert_false(tg_pod_same_shape(pa, pc));
    tg_pod_free(&pa);
    tg_pod_free(&pb);
    tg_pod_free(&pc);
}

static void test_time(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(tg_parse_time("2026-11-20T08:00:00Z", &ms), 0);
    assert_true(ms == 1795161600000LL);
    assert_int_equal(tg_parse_time("2026-11-20T09:00:00.250+01:00", &ms), 0);
    assert_true(ms == 1795161600250LL);
    assert_int_equal(tg_parse_time("yesterday", &ms), TG_EPARSE);
    /* a short zone offset: p skipped 6 bytes past the end of the string (heap
     * read overflow on a Lease's renewTime; found by fuzz/fuzz_lease) */
    const char *shortoff[] = {"2023-11-14T21:01:02.333-3:3", "2023-11-14T21:01:02+1:30",
                              "2023-11-14T21:01:02+01:3", "2023-11-14T21:01:02- 1:30"};
    for (size_t i = 0; i < sizeof shortoff / sizeof *shortoff; i++) {
        char *s = strdup(shortoff[i]); /* exact size: ASan sees a read past it */
        assert_int_equal(tg_parse_time(s, &ms), TG_EPARSE);
        free(s);
    }
    assert_int_equal(tg_parse_time("2023-11-14T21:01:02-03:30", &ms), 0);
    assert_true(ms == 1699995662000LL + (3 * 3600 + 30 * 60) * 1000LL);
}

static void test_yaml_errors(void **state)
{
    (void)state;
    cJSON *root = NULL;
    struct tg_sb err = {0};
    const char *bad = "a: 1\nb: [1, 2\nc: 3\n";
    assert_int_equal(tg_yaml_parse(bad, strlen(bad), "f.yaml", take, &root, &err), TG_EPARSE);
    assert_non_null(strstr(tg_sb_str(&err), "f.yaml:"));
    tg_sb_free(&err);
    /* alias bombs stop at the node budget instead of eating memory */
    struct tg_sb bomb = {0};
    tg_sb_puts(&bomb, "a: &a [x,x,x,x,x,x,x,x,x,x]\n");
    for (char c = 'b'; c <= 'j'; c++)
        tg_sb_printf(&bomb, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", c, c, c - 1,
                     c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
    root = NULL;
    assert_int_equal(tg_yaml_parse(tg_sb_str(&bomb), bomb.len, "bomb", take, &root, &err), TG_EPARSE);
    assert_non_null(strstr(tg_sb_str(&err), "too large"));
    assert_null(root);
    tg_sb_free(&bomb);
    tg_sb_free(&err);
}


/* Issue 18: the resource-name registry. A pod never takes a slot: more than
 * the per-object cap of names is refused before anything is looked up, and a
 * name no node offers is held on the pod (unsatisfiable) instead of being
 * registered, so tenants cannot fill the registry and a Node's new name
 * always gets one. */
static void test_resource_registry_bounded(void **state)
{
    (void)state;
    int rc;
    uint32_t n0 = tg_res_count();
    char *y = NULL;
    /* 65 names in one requests map: refused, naming the field */
    tu_cat(&y, "kind: Pod\nmetadata: {name: greedy, namespace: t}\nspec:\n  containers:\n"
               "  - name: c\n    resources:\n      requests:\n");
    for (int i = 0; i < 65; i++)
        tu_cat(&y, "        made.up/r%d: 1\n", i);
    struct tg_pod *p = pod(y, &rc);
    assert_int_equal(rc, TG_EPARSE);
    assert_null(p);
    assert_non_null(strstr(msgs, "E Pod t/greedy spec.containers[0].resources.requests: has 65 resources, "
                                 "more than 64"));
    assert_int_equal(tg_res_count(), n0);
    free(y);
    /* a Node of 65 resources: refused before any of them is registered */
    y = NULL;
    tu_cat(&y, "kind: Node\nmetadata: {name: wide}\nstatus:\n  allocatable:\n");
    for (int i = 0; i < 65; i++)
        tu_cat(&y, "    node.example/r%d: 1\n", i);
    cJSON *jn = yaml(y);
    struct tg_diag dn = {capture, NULL, 0, 0};
    struct tg_node_obj *wide = NULL;
    msgs[0] = 0;
    assert_int_equal(tg_node_decode(jn, &dn, &wide), TG_EPARSE);
    cJSON_Delete(jn);
    assert_non_null(strstr(msgs, "E Node wide status.allocatable: has 65 resources, more than 64"));
    assert_int_equal(tg_res_count(), n0);
    free(y);
    /* 3 containers of 30 distinct names each: 90 in the pod, refused */
    y = NULL;
    tu_cat(&y, "kind: Pod\nmetadata: {name: spread, namespace: t}\nspec:\n  containers:\n");
    for (int c = 0; c < 3; c++) {
        tu_cat(&y, "  - name: c%d\n    resources:\n      requests:\n", c);
        for (int i = 0; i < 30; i++)
            tu_cat(&y, "        made.up/c%d-r%d: 1\n", c, i);
    }
    p = pod(y, &rc);
    assert_int_equal(rc, TG_EPARSE);
    assert_non_null(strstr(msgs, "E Pod t/spread spec.containers[2].resources.requests.made.up/c2-r4: "
                                 "names more than 64 resources no node offers"));
    assert_int_equal(tg_res_count(), n0);
    free(y);
    /* 1,000 pods, each with a name of its own: every one decodes, none registers */
    for (int i = 0; i < 1000; i++) {
        char t[256];
        snprintf(t, sizeof t, "kind: Pod\nmetadata: {name: p%d, namespace: t}\nspec:\n  containers:\n"
                              "  - {name: c, resources: {requests: {cpu: '1', tenant.example/x%d: 3}}}\n", i, i);
        p = pod(t, &rc);
        assert_int_equal(rc, 0);
        assert_int_equal(p->nunoffered, 1);
        assert_int_equal(tg_rq_get(p->req, p->nreq, TG_RES_UNOFFERED), 1);
        assert_int_equal(req(p, "cpu"), 1000);
        tg_pod_free(&p);
    }
    assert_int_equal(tg_res_count(), n0);
    /* a pod asking for what no node offers yet; then a Node brings it */
    p = pod("kind: Pod\nmetadata: {name: early, namespace: t}\nspec:\n  containers:\n"
            "  - {name: c, resources: {limits: {vendor.example/accel: 2, other.example/y: 1}}}\n", &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(p->nunoffered, 2);
    assert_int_equal(tg_pod_resolve(p), 0);              /* nothing registered yet */
    cJSON *j = yaml("kind: Node\nmetadata: {name: n-accel}\n"
                    "status: {allocatable: {cpu: '8', vendor.example/accel: 4}}\n");
    struct tg_diag d = {capture, NULL, 0, 0};
    struct tg_node_obj *n = NULL;
    assert_int_equal(tg_node_decode(j, &d, &n), 0);
    cJSON_Delete(j);
    int id = tg_res_lookup("vendor.example/accel", 20);
    assert_true(id >= TG_RES_NFIXED);
    assert_int_equal(tg_rq_get(n->alloc, n->nalloc, (uint32_t)id), 4);
    assert_int_equal(tg_res_count(), n0 + 1);
    assert_int_equal(tg_pod_resolve(p), 1);
    assert_int_equal(tg_rq_get(p->req, p->nreq, (uint32_t)id), 2);
    assert_int_equal(p->nunoffered, 1);                  /* other.example/y: still none */
    assert_string_equal(p->unoffered[0].name, "other.example/y");
    assert_int_equal(tg_rq_get(p->req, p->nreq, TG_RES_UNOFFERED), 1);
    for (uint8_t i = 1; i < p->nreq; i++)
        assert_true(p->req[i - 1].res < p->req[i].res); /* still sorted */
    tg_node_free(&n);
    tg_pod_free(&p);
}

/* Issue 18: a pod's label keys and values are counted references; when the
 * last pod using a string is freed, the interner gives its memory and id
 * back. Strings something pinned (a namespace) stay. */
static void test_intern_reclaims_pod_labels(void **state)
{
    (void)state;
    int rc;
    char t[512];
    struct tg_pod *p;
    uint32_t c0 = 0;
    size_t b0 = 0;
    for (int i = 0; i < 21000; i++) {
        if (i == 1000) { /* warmed up: the index has its size */
            c0 = tg_intern_count();
            b0 = tg_intern_bytes();
            assert_int_equal(tg_intern_lookup("app", 3), TG_STR_NONE); /* only those pods had it */
        }
        snprintf(t, sizeof t, "kind: Pod\nmetadata: {name: p%d, namespace: churn, labels: "
                              "{app: churn, run-%d: v%d, controller-uid: uid-%d}}\n"
                              "spec: {containers: [{name: c}]}\n", i, i, i, i);
        p = pod(t, &rc);
        assert_int_equal(rc, 0);
        assert_int_equal(p->nlabels, 2);
        uint32_t v = tg_labels_get(p->labels, p->nlabels, tg_intern_lookup("app", 3));
        assert_string_equal(tg_str(v), "churn");              /* the namespace's string, pinned */
        tg_pod_free(&p);
    }
    assert_int_equal(tg_intern_count(), c0);
    assert_int_equal(tg_intern_bytes(), b0);
    assert_int_equal(tg_intern_lookup("v20999", 6), TG_STR_NONE);
    assert_true(tg_intern_lookup("churn", 5) != TG_STR_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_effective_requests), cmocka_unit_test(test_pod_constraints),
        cmocka_unit_test(test_bad_pods),           cmocka_unit_test(test_node),
        cmocka_unit_test(test_podgroup),           cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_podgroup_subgroups),
        cmocka_unit_test(test_time),               cmocka_unit_test(test_yaml_errors),
        cmocka_unit_test(test_prioclass),
        cmocka_unit_test(test_resource_registry_bounded),
        cmocka_unit_test(test_intern_reclaims_pod_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
