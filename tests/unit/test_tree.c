/* The topology tree and the cluster model: incremental insert, move and
 * remove with aggregates; usage from bound pods in any order. */
#include "testutil.h"
#include "model/cluster.h"
#include "model/tree.h"
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tg_node_obj *mknode(const char *name, const char *zone, const char *rack, int gpus)
{
    struct tg_node_obj *n = calloc(1, sizeof *n);
    n->name = tg_intern(name);
    n->labels = calloc(2, sizeof *n->labels);
    if (*zone)
        n->labels[n->nlabels++] = (struct tg_label){tg_intern("zone"), tg_intern(zone)};
    if (*rack)
        n->labels[n->nlabels++] = (struct tg_label){tg_intern("rack"), tg_intern(rack)};
    if (n->nlabels == 2 && n->labels[0].key > n->labels[1].key) {
        struct tg_label t = n->labels[0];
        n->labels[0] = n->labels[1];
        n->labels[1] = t;
    }
    n->alloc = calloc(1, sizeof *n->alloc);
    n->alloc[0] = (struct tg_rq){(uint32_t)tg_res_id("nvidia.com/gpu", 14), gpus};
    n->nalloc = 1;
    n->ready = 1;
    return n;
}

static uint32_t dom_of(const struct tg_cluster *c, const char *node, uint32_t lvl)
{
    uint32_t s = tg_cluster_slot((struct tg_cluster *)c, tg_intern(node), 0);
    return tg_tree_ancestor(&c->tree, c->tree.leaf[s], lvl);
}

static void test_tree(void **state)
{
    (void)state;
    uint32_t levels[2] = {tg_intern("zone"), tg_intern("rack")};
    struct tg_cluster c;
    assert_int_equal(tg_cluster_init(&c, levels, 2), 0);
    assert_int_equal(tg_cluster_node_set(&c, mknode("n1", "za", "r1", 8)), 0);
    assert_int_equal(tg_cluster_node_set(&c, mknode("n2", "za", "r1", 8)), 0);
    assert_int_equal(tg_cluster_node_set(&c, mknode("n3", "za", "r2", 8)), 0);
    assert_int_equal(tg_cluster_node_set(&c, mknode("n4", "", "r9", 8)), 0);
    assert_int_equal(c.tree.dom[0].nnodes, 4);
    uint32_t r1 = dom_of(&c, "n1", 2);
    assert_int_equal(c.tree.dom[r1].nnodes, 2);
    assert_int_equal(dom_of(&c, "n1", 1), dom_of(&c, "n3", 1));
    char path[128];
    assert_string_equal(tg_tree_path(&c.tree, r1, path, sizeof path), "za/r1");
    /* n4 lacks the zone label: its rack is named without one, never "-" */
    uint32_t r9 = dom_of(&c, "n4", 2);
    assert_string_equal(tg_tree_path(&c.tree, r9, path, sizeof path), "r9");
    assert_true(tg_tree_labelled(&c.tree, r9, 2));
    assert_false(tg_tree_labelled(&c.tree, r9, 1)); /* its "" zone is no zone */
    assert_true(tg_tree_labelled(&c.tree, r9, 0));
    assert_true(tg_tree_labelled(&c.tree, r1, 1));
    assert_int_equal(tg_tree_named(&c.tree, r9), r9);
    assert_int_equal(tg_tree_named(&c.tree, dom_of(&c, "n4", 1)), 0); /* the cluster */
    assert_string_equal(tg_tree_path(&c.tree, 0, path, sizeof path), "");
    /* n5 lacks the rack label: the tightest real domain holding it is its zone */
    assert_int_equal(tg_cluster_node_set(&c, mknode("n5", "za", "", 8)), 0);
    uint32_t loose = dom_of(&c, "n5", 2);
    assert_false(tg_tree_labelled(&c.tree, loose, 2));
    assert_true(tg_tree_labelled(&c.tree, loose, 1));
    assert_int_equal(tg_tree_named(&c.tree, loose), dom_of(&c, "n1", 1));
    assert_string_equal(tg_tree_path(&c.tree, loose, path, sizeof path), "za");
    tg_cluster_node_remove(&c, tg_intern("n5"));

    /* n2 changes racks: aggregates follow */
    assert_int_equal(tg_cluster_node_set(&c, mknode("n2", "za", "r2", 8)), 0);
    assert_int_equal(c.tree.dom[r1].nnodes, 1);
    assert_int_equal(c.tree.dom[dom_of(&c, "n2", 2)].nnodes, 2);
    assert_int_equal(c.tree.dom[dom_of(&c, "n2", 1)].nnodes, 3);
    /* n1 removed: its rack is empty but keeps its id */
    tg_cluster_node_remove(&c, tg_intern("n1"));
    assert_int_equal(c.tree.dom[r1].nnodes, 0);
    assert_int_equal(c.tree.dom[0].nnodes, 3);
    assert_int_equal(c.nready, 3);

    /* relevel: racks only */
    uint32_t racks[1] = {tg_intern("rack")};
    assert_int_equal(tg_cluster_set_levels(&c, racks, 1), 0);
    assert_int_equal(c.tree.nbylevel[1], 2); /* r2, r9 */
    tg_cluster_free(&c);
}

static struct tg_pod *mkpod(const char *key, const char *node, int gpus, int phase)
{
    struct tg_pod *p = calloc(1, sizeof *p);
    p->key = strdup(key);
    p->node = node ? tg_intern(node) : 0;
    p->phase = (uint8_t)phase;
    p->req = calloc(1, sizeof *p->req);
    p->req[0] = (struct tg_rq){(uint32_t)tg_res_id("nvidia.com/gpu", 14), gpus};
    p->nreq = 1;
    return p;
}

static void test_usage(void **state)
{
    (void)state;
    uint32_t levels[1] = {tg_intern("rack")};
    struct tg_cluster c;
    uint32_t gpu = (uint32_t)tg_res_id("nvidia.com/gpu", 14);
    assert_int_equal(tg_cluster_init(&c, levels, 1), 0);
    /* a pod bound to a node we have not seen yet */
    struct tg_pod *a = mkpod("ns/a", "n1", 4, TG_PHASE_RUNNING);
    assert_int_equal(tg_cluster_pod_update(&c, a), 0);
    assert_int_equal(tg_cluster_node_set(&c, mknode("n1", "", "r1", 8)), 0);
    uint32_t s = tg_cluster_slot(&c, tg_intern("n1"), 0);
    assert_int_equal(tg_used(&c, s, gpu), 4);
    assert_int_equal(tg_alloc(&c, s, gpu), 8);
    assert_int_equal(tg_used(&c, s, TG_RES_PODS), 1);
    /* the same update twice is one record */
    assert_int_equal(tg_cluster_pod_update(&c, a), 0);
    assert_int_equal(tg_used(&c, s, gpu), 4);
    /* finished pods hold nothing */
    a->phase = TG_PHASE_SUCCEEDED;
    assert_int_equal(tg_cluster_pod_update(&c, a), 0);
    assert_int_equal(tg_used(&c, s, gpu), 0);
    /* assumed, then seen bound, then deleted */
    struct tg_pod *b = mkpod("ns/b", NULL, 2, TG_PHASE_PENDING);
    assert_int_equal(tg_cluster_assume(&c, b, s), 0);
    assert_int_equal(tg_used(&c, s, gpu), 2);
    assert_int_equal(tg_cluster_pod_update(&c, b), 0); /* still unbound: assumption kept */
    assert_int_equal(tg_used(&c, s, gpu), 2);
    b->node = tg_intern("n1");
    assert_int_equal(tg_cluster_pod_update(&c, b), 0);
    assert_int_equal(tg_cluster_usage(&c, "ns/b")->assumed, 0);
    tg_cluster_pod_delete(&c, "ns/b");
    assert_int_equal(tg_used(&c, s, gpu), 0);
    assert_int_equal(tg_used(&c, s, TG_RES_PODS), 0);
    /* a new resource name after nodes exist grows the stride and keeps rows */
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "example.com/r%d", i);
        tg_res_id(name, strlen(name));
    }
    struct tg_pod *big = mkpod("ns/big", "n1", 1, TG_PHASE_RUNNING);
    big->req[0].res = (uint32_t)tg_res_id("example.com/r19", 15);
    assert_int_equal(tg_cluster_pod_update(&c, big), 0);
    assert_int_equal(tg_alloc(&c, s, gpu), 8);
    assert_int_equal(tg_used(&c, s, big->req[0].res), 1);
    tg_pod_free(&a);
    tg_pod_free(&b);
    tg_pod_free(&big);
    tg_cluster_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
