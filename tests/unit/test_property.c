/* Property tests: random small clusters, placements checked against a
 * brute-force model kept by the test itself (not the scheduler's):
 *  - no node is over-committed;
 *  - all or nothing: a gang is placed whole or not at all;
 *  - every member sits in one domain of the required level;
 *  - an Unschedulable single-shape gang has no domain of its required level
 *    that could hold it, and a schedulable one is never refused;
 *  - pack keeps the gang inside one preferred-level domain whenever one can
 *    hold it;
 *  - with labels missing at random: members carry the required level's
 *    label and share its value, a node lacking a preferred level's label is
 *    a domain of its own there, and the domain named is the tightest one
 *    whose label every member carries, never "-" or an empty segment.
 * Seeded, so a failure replays. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *POLICY =
    "topology:\n  levels:\n"
    "    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n"
    "    - {name: rack, nodeLabel: topogang.io/rack}\n"
    "    - {name: node, nodeLabel: kubernetes.io/hostname}\n";

enum { MAXN = 24 };

struct mnode {
    int zone, rack, gpus, used, tainted;
    int has[4];                         /* carries the label of level 1 zone, 2 rack, 3 node */
    char name[16];
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int rnd(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

/* domain id of node i at level (1 zone, 2 rack, 3 node; 0 the cluster), or
 * -1 when the node lacks the level's label. Nodes lacking the zone label
 * share racks by their rack label (zone 9 here), as the labels say. */
static int dom(const struct mnode *m, int i, int level)
{
    if (level && !m[i].has[level])
        return -1;
    int zone = m[i].has[1] ? m[i].zone : 9;
    return level == 0 ? 0 : level == 1 ? zone : level == 2 ? zone * 10 + m[i].rack : 1000 + i;
}

static int capacity(const struct mnode *m, int nn, int level, int d, int g)
{
    int c = 0;
    for (int i = 0; i < nn; i++)
        if (d >= 0 && dom(m, i, level) == d && !m[i].tainted)
            c += (m[i].gpus - m[i].used) / g;
    return c;
}

static int any_domain_holds(const struct mnode *m, int nn, int level, int n, int g)
{
    for (int i = 0; i < nn; i++)
        if (capacity(m, nn, level, dom(m, i, level), g) >= n)
            return 1;
    return 0;
}

/* A preferred level pref below the required req: a domain of pref, or a node
 * lacking pref's label (its own domain there), that carries req's label
 * and holds the gang. */
static int any_pref_holds(const struct mnode *m, int nn, int req, int pref, int n, int g)
{
    for (int i = 0; i < nn; i++) {
        if (dom(m, i, req) < 0 || m[i].tainted)
            continue;
        int c = dom(m, i, pref) >= 0 ? capacity(m, nn, pref, dom(m, i, pref), g)
                                     : (m[i].gpus - m[i].used) / g;
        if (c >= n)
            return 1;
    }
    return 0;
}

/* The path of node i's domain at level: the labels it carries down to it. */
static void path_of(const struct mnode *m, int i, int level, char *buf, size_t n)
{
    buf[0] = 0;
    if (level >= 1 && m[i].has[1])
        snprintf(buf + strlen(buf), n - strlen(buf), "z%d", m[i].zone);
    if (level >= 2 && m[i].has[2])
        snprintf(buf + strlen(buf), n - strlen(buf), "%sr%d", *buf ? "/" : "", m[i].rack);
    if (level >= 3 && m[i].has[3])
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", *buf ? "/" : "", m[i].name);
}

static int node_index(const struct mnode *m, int nn, const char *name)
{
    for (int i = 0; i < nn; i++)
        if (!strcmp(m[i].name, name))
            return i;
    return -1;
}

/* A gang's placement with labels missing (drop): each member carries the
 * required level's label, all share one domain at the level named, which
 * is as tight as the required one, and the path names it by its labels. */
static void check_named(const struct mnode *m, const cJSON *g, const int *idx, int n, int req)
{
    static const char *const lv[] = {"cluster", "zone", "rack", "node"};
    const char *level = tu_str(g, "level"), *domain = tu_str(g, "domain");
    int l = 0;
    while (l < 4 && strcmp(lv[l], level))
        l++;
    assert_true(l < 4 && l >= req);
    char want[64];
    path_of(m, idx[0], l, want, sizeof want);
    assert_string_equal(domain, want);
    for (int i = 0; i < n; i++) {
        assert_true(dom(m, idx[i], req) >= 0);
        assert_true(l == 0 || dom(m, idx[i], l) >= 0);
        assert_int_equal(dom(m, idx[i], l), dom(m, idx[0], l));
    }
    assert_null(strchr(domain, '-'));
    assert_null(strstr(domain, "//"));
}

static void trial(int t, int ngangs, int drop)
{
    struct mnode m[MAXN];
    int nn = 0;
    char *y = NULL;
    int nz = 1 + rnd(2);
    for (int z = 0; z < nz; z++) {
        int nr = 1 + rnd(3);
        for (int r = 0; r < nr; r++) {
            int k = 1 + rnd(4);
            for (int i = 0; i < k && nn < MAXN; i++) {
                struct mnode *x = &m[nn];
                x->zone = z;
                x->rack = r;
                x->gpus = (int[]){0, 2, 4, 8, 8}[rnd(5)];
                x->used = x->gpus ? rnd(x->gpus + 1) : 0;
                x->tainted = rnd(8) == 0;
                for (int l = 1; l < 4; l++)
                    x->has[l] = !drop || rnd(4) != 0;
                snprintf(x->name, sizeof x->name, "n%d", nn);
                char zone[8], rack[8];
                snprintf(zone, sizeof zone, "z%d", z);
                snprintf(rack, sizeof rack, "r%d", r);
                if (x->has[3])
                    tu_node(&y, x->name, x->has[1] ? zone : "", x->has[2] ? rack : "", x->gpus,
                            x->tainted ? "taints: [{key: bad, effect: NoSchedule}]" : NULL);
                else /* without kubernetes.io/hostname */
                    tu_cat(&y, "---\nkind: Node\nmetadata:\n  name: %s\n  labels: {%s%s%s%s%s}\n"
                               "spec: {%s}\nstatus: {allocatable: {nvidia.com/gpu: \"%d\", pods: \"110\"}}\n",
                           x->name, x->has[1] ? "topology.kubernetes.io/zone: " : "",
                           x->has[1] ? zone : "", x->has[1] && x->has[2] ? ", " : "",
                           x->has[2] ? "topogang.io/rack: " : "", x->has[2] ? rack : "",
                           x->tainted ? "taints: [{key: bad, effect: NoSchedule}]" : "", x->gpus);
                if (x->used)
                    tu_cat(&y, "---\nkind: Pod\nmetadata: {name: used-%d, namespace: other}\n"
                               "spec: {nodeName: %s, containers: [{resources: {requests: {nvidia.com/gpu: %d}}}]}\n",
                           nn, x->name, x->used);
                nn++;
            }
        }
    }
    static const char *const lvname[] = {NULL, "zone", "rack", "node"};
    int gn[4], gg[4], greq[4], gpref[4];
    for (int k = 0; k < ngangs; k++) {
        gn[k] = 1 + rnd(8);
        gg[k] = (int[]){1, 2, 4, 8}[rnd(4)];
        greq[k] = rnd(3);                       /* cluster, zone, rack */
        gpref[k] = greq[k] + rnd(4 - greq[k]);  /* up to node */
        char topo[96] = "";
        if (greq[k])
            snprintf(topo, sizeof topo, ", topology: {required: %s, preferred: %s}", lvname[greq[k]],
                     lvname[gpref[k] ? gpref[k] : 1]);
        else if (gpref[k])
            snprintf(topo, sizeof topo, ", topology: {preferred: %s}", lvname[gpref[k]]);
        else
            gpref[k] = 2; /* policy default: rack */
        if (greq[k] && !gpref[k])
            gpref[k] = 1;
        /* creation order fixes the queue order: gang 0 first */
        tu_cat(&y, "---\nkind: PodGroup\napiVersion: topogang.io/v1alpha1\n"
                   "metadata: {name: g%d, namespace: ml, creationTimestamp: '2026-01-0%dT00:00:00Z'}\n"
                   "spec: {minMember: %d%s}\n", k, k + 1, gn[k], topo);
        for (int i = 0; i < gn[k]; i++) {
            char name[32], grp[8], req[48];
            snprintf(name, sizeof name, "g%d-%d", k, i);
            snprintf(grp, sizeof grp, "g%d", k);
            snprintf(req, sizeof req, "nvidia.com/gpu: %d", gg[k]);
            tu_pod(&y, name, grp, req, NULL);
        }
    }
    cJSON *res = tu_simulate(POLICY, y);
    for (int k = 0; k < ngangs; k++) {
        char key[16];
        snprintf(key, sizeof key, "ml/g%d", k);
        const cJSON *g = tu_gang(res, key);
        assert_non_null(g);
        int scheduled = !strcmp(tu_str(g, "status"), "Scheduled");
        /* brute force on the state this gang saw (earlier gangs applied below) */
        int feasible = any_domain_holds(m, nn, greq[k], gn[k], gg[k]);
        int pref_ok = gpref[k] > greq[k] ? any_pref_holds(m, nn, greq[k], gpref[k], gn[k], gg[k])
                                         : feasible;
        if (scheduled != feasible)
            print_error("trial %d gang %d: scheduled=%d but brute force says feasible=%d\n%s\n", t,
                        k, scheduled, feasible, y);
        assert_int_equal(scheduled, feasible);
        int placed = 0, first = -1, same_req = 1, same_pref = 1, idx_of[8];
        for (int i = 0; i < gn[k]; i++) {
            char pod[32];
            snprintf(pod, sizeof pod, "ml/g%d-%d", k, i);
            const char *node = tu_node_of(res, pod);
            if (!node)
                continue;
            int idx = node_index(m, nn, node);
            assert_true(idx >= 0);
            idx_of[placed++] = idx;
            m[idx].used += gg[k];
            assert_true(m[idx].used <= m[idx].gpus); /* never over-committed */
            assert_false(m[idx].tainted);
            if (first < 0)
                first = idx;
            same_req &= dom(m, idx, greq[k]) >= 0 && dom(m, idx, greq[k]) == dom(m, first, greq[k]);
            /* a node lacking the preferred level's label is its own domain there */
            int p = dom(m, idx, gpref[k]), p0 = dom(m, first, gpref[k]);
            same_pref &= (p >= 0 ? p : 100000 + idx) == (p0 >= 0 ? p0 : 100000 + first);
        }
        assert_int_equal(placed, scheduled ? gn[k] : 0); /* all or nothing */
        if (scheduled) {
            assert_true(same_req);
            if (drop)
                check_named(m, g, idx_of, placed, greq[k]);
            if (pref_ok && !same_pref)
                print_error("trial %d gang %d: a %s could hold it but it was split\n%s\n", t, k,
                            lvname[gpref[k]], y);
            if (pref_ok)
                assert_true(same_pref);
        }
    }
    cJSON_Delete(res);
    free(y);
}

/* ---- heterogeneous gangs ---------------------------------------------------------
 * 2-4 pod sets that differ in where they may go (a nodeSelector on a node
 * kind, a toleration of the GPU taint: nested and crossing eligibilities)
 * and, in half the trials, in how many GPUs each member asks. The checker
 * decides by backtracking whether every member fits inside one domain. */

struct hnode {
    int zone, rack, gpus, used, kind, tainted;
};

struct hset {
    int n, gpus, kind, tolerates; /* kind -1: any */
};

static int eligible(const struct hnode *m, const struct hset *s)
{
    return (s->kind < 0 || m->kind == s->kind) && (!m->tainted || s->tolerates);
}

/* Members of sets [si..] from member mi on, each set's members on
 * non-decreasing node positions (they are interchangeable). */
static int assign(struct hnode *m, const int *nodes, int nn, const struct hset *s, int ns, int si,
                  int mi, int from)
{
    if (si == ns)
        return 1;
    if (mi == s[si].n)
        return assign(m, nodes, nn, s, ns, si + 1, 0, 0);
    for (int k = from; k < nn; k++) {
        struct hnode *x = &m[nodes[k]];
        if (!eligible(x, &s[si]) || x->gpus - x->used < s[si].gpus)
            continue;
        x->used += s[si].gpus;
        int ok = assign(m, nodes, nn, s, ns, si, mi + 1, k);
        x->used -= s[si].gpus;
        if (ok)
            return 1;
    }
    return 0;
}

static int hdom(const struct hnode *m, int i, int level)
{
    return level == 0 ? 0 : level == 1 ? m[i].zone : level == 2 ? m[i].zone * 10 + m[i].rack : 1000 + i;
}

static int hfeasible(struct hnode *m, int nn, int level, const struct hset *s, int ns)
{
    for (int i = 0; i < nn; i++) {
        int nodes[MAXN], k = 0, d = hdom(m, i, level);
        int first = 1;
        for (int j = 0; j < i; j++)
            if (hdom(m, j, level) == d)
                first = 0;
        if (!first)
            continue;
        for (int j = 0; j < nn; j++)
            if (hdom(m, j, level) == d)
                nodes[k++] = j;
        if (assign(m, nodes, k, s, ns, 0, 0, 0))
            return 1;
    }
    return 0;
}

static int hetero_wrong;

static void hetero_trial(int t)
{
    struct hnode m[MAXN];
    int nn = 0;
    char *y = NULL;
    int nz = 1 + rnd(2);
    for (int z = 0; z < nz; z++) {
        int nr = 1 + rnd(2);
        for (int r = 0; r < nr; r++) {
            int k = 1 + rnd(6);
            for (int i = 0; i < k && nn < 12; i++) {
                struct hnode *x = &m[nn];
                x->zone = z;
                x->rack = r;
                x->gpus = (int[]){2, 4, 8, 8}[rnd(4)];
                x->used = rnd(3) == 0 ? rnd(x->gpus + 1) : 0;
                x->kind = rnd(2);
                x->tainted = rnd(3) == 0;
                char name[16], zone[8], rack[8], extra[160];
                snprintf(name, sizeof name, "n%d", nn);
                snprintf(zone, sizeof zone, "z%d", z);
                snprintf(rack, sizeof rack, "r%d", r);
                tu_cat(&y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n"
                           "    kubernetes.io/hostname: %s\n    topology.kubernetes.io/zone: %s\n"
                           "    topogang.io/rack: %s\n    kind: k%d\n", name, name, zone, rack, x->kind);
                snprintf(extra, sizeof extra, "%s", x->tainted ? "taints: [{key: nvidia.com/gpu, effect: NoSchedule}]" : "");
                tu_cat(&y, "spec: {%s}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
                           "nvidia.com/gpu: \"%d\"}\n", extra, x->gpus);
                if (x->used)
                    tu_cat(&y, "---\nkind: Pod\nmetadata: {name: used-%d, namespace: other}\n"
                               "spec: {nodeName: %s, containers: [{resources: {requests: {nvidia.com/gpu: %d}}}]}\n",
                           nn, name, x->used);
                nn++;
            }
        }
    }
    struct hset s[4];
    int ns = 2 + rnd(3), equal = rnd(2), total = 0, g0 = (int[]){2, 4, 8, 8}[rnd(4)];
    int dominant = rnd(2); /* a big set that may go anywhere, beside constrained ones */
    for (int i = 0; i < ns; i++) {
        s[i].n = 1 + rnd(dominant && i == 0 ? 7 : 4);
        s[i].gpus = equal ? g0 : (int[]){2, 4, 8, 8}[rnd(4)];
        s[i].kind = dominant && i == 0 ? -1 : rnd(3) - 1;
        s[i].tolerates = dominant && i == 0 ? 1 : rnd(2);
        total += s[i].n;
    }
    int req = rnd(3), pref = req + rnd(4 - req);
    static const char *const lvname[] = {NULL, "zone", "rack", "node"};
    char topo[96] = "";
    if (req)
        snprintf(topo, sizeof topo, ", topology: {required: %s, preferred: %s}", lvname[req],
                 lvname[pref ? pref : 1]);
    else if (pref)
        snprintf(topo, sizeof topo, ", topology: {preferred: %s}", lvname[pref]);
    if (!req && !pref)
        pref = 2; /* the policy's defaultPreferred: rack */
    tu_cat(&y, "---\nkind: PodGroup\napiVersion: topogang.io/v1alpha1\n"
               "metadata: {name: h, namespace: ml}\nspec: {minMember: %d%s}\n", total, topo);
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < s[i].n; j++) {
            char name[16], req2[48], spec[256] = "";
            snprintf(name, sizeof name, "h-%d-%d", i, j);
            snprintf(req2, sizeof req2, "nvidia.com/gpu: %d", s[i].gpus);
            if (s[i].kind >= 0)
                snprintf(spec, sizeof spec, "  nodeSelector: {kind: k%d}\n", s[i].kind);
            if (s[i].tolerates)
                snprintf(spec + strlen(spec), sizeof spec - strlen(spec),
                         "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n");
            tu_pod(&y, name, "h", req2, spec);
        }
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *g = tu_gang(res, "ml/h");
    int scheduled = !strcmp(tu_str(g, "status"), "Scheduled");
    int feasible = hfeasible(m, nn, req, s, ns);
    int pref_ok = hfeasible(m, nn, pref, s, ns);
    if (scheduled != feasible) {
        hetero_wrong++;
        print_error("hetero trial %d: scheduled=%d, brute force feasible=%d (%s)\n%s\n", t,
                    scheduled, feasible, tu_str(g, "reason"), y);
    }
    if (scheduled != feasible) {
        cJSON_Delete(res);
        free(y);
        return;
    }
    if (scheduled) {
        int first = -1, same_req = 1, same_pref = 1;
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < s[i].n; j++) {
                char pod[32];
                snprintf(pod, sizeof pod, "ml/h-%d-%d", i, j);
                const char *node = tu_node_of(res, pod);
                assert_non_null(node);
                int idx = atoi(node + 1);
                assert_true(eligible(&m[idx], &s[i]));
                m[idx].used += s[i].gpus;
                assert_true(m[idx].used <= m[idx].gpus);
                if (first < 0)
                    first = idx;
                same_req &= hdom(m, idx, req) == hdom(m, first, req);
                same_pref &= hdom(m, idx, pref) == hdom(m, first, pref);
            }
        assert_true(same_req);
        if (pref_ok && !same_pref)
            print_error("hetero trial %d: a %s could hold it but it was split\n%s\n", t,
                        lvname[pref], y);
        if (pref_ok)
            assert_true(same_pref);
    }
    cJSON_Delete(res);
    free(y);
}

static void test_heterogeneous(void **state)
{
    (void)state;
    for (int t = 0; t < 3000; t++)
        hetero_trial(t);
    assert_int_equal(hetero_wrong, 0);
}

/* ---- constraints between pods ---------------------------------------------------
 * One gang whose members carry app=c and either a required anti-affinity
 * against app=c (on the hostname, or on the rack label: one member per
 * domain, none where a bound app=c pod is) or a DoNotSchedule spread over
 * zones, racks or hosts (maxSkew 1-2, counting bound app=c pods). Rack
 * names repeat across zones in half the trials: a topologyKey domain is a
 * label value, so "r0" of two zones is one domain (and no tree level).
 * Brute force: anti-affinity holds n iff some domain of the required level
 * has n distinct key values with a node that has room and no app=c pod in
 * that value; spread is a water-fill into the least loaded domain, the
 * minimum taken over every domain of the cluster. Checked: the verdict, the
 * placement obeys the constraint, pack keeps a preferred domain when one can
 * hold the gang (anti-affinity). */

struct cnode {
    int zone, rack, gpus, used, tainted, app;
    char name[16], rackv[16];
};

enum { K_HOST, K_RACK, K_ZONE };

/* The value of key k on node i, as a small int (racks by label value). */
static int kval(const struct cnode *m, int nn, int i, int k)
{
    if (k == K_HOST)
        return i;
    if (k == K_ZONE)
        return m[i].zone;
    for (int j = 0; j < nn; j++)
        if (!strcmp(m[j].rackv, m[i].rackv))
            return 100 + j; /* first node with this rack value */
    return -1;
}

static int cdom(const struct cnode *m, int i, int level)
{
    return level == 0 ? 0 : level == 1 ? m[i].zone : level == 2 ? m[i].zone * 10 + m[i].rack : 1000 + i;
}

static int room(const struct cnode *x, int g)
{
    return x->tainted ? 0 : (x->gpus - x->used) / g;
}

/* Anti-affinity: distinct key values usable inside domain d of level. */
static int anti_holds(const struct cnode *m, int nn, int level, int d, int k, int g)
{
    int vals[64], nv = 0;
    for (int i = 0; i < nn; i++) {
        if (cdom(m, i, level) != d || room(&m[i], g) < 1)
            continue;
        int v = kval(m, nn, i, k), busy = 0, seen = 0;
        for (int j = 0; j < nn; j++)
            busy |= m[j].app && kval(m, nn, j, k) == v;
        for (int j = 0; j < nv; j++)
            seen |= vals[j] == v;
        if (!busy && !seen)
            vals[nv++] = v;
    }
    return nv;
}

/* Spread: members a water-fill puts inside domain d of level. */
static int spread_holds(const struct cnode *m, int nn, int level, int d, int k, int g, int skew, int want)
{
    int val[64], cnt[64], rm[64], nv = 0;
    for (int i = 0; i < nn; i++) {
        int v = kval(m, nn, i, k), j = 0;
        while (j < nv && val[j] != v)
            j++;
        if (j == nv) {
            val[nv] = v;
            cnt[nv] = rm[nv] = 0;
            nv++;
        }
        cnt[j] += m[i].app;
        if (cdom(m, i, level) == d)
            rm[j] += room(&m[i], g);
    }
    int placed = 0;
    while (placed < want) {
        int best = -1, min = 1 << 30;
        for (int j = 0; j < nv; j++)
            min = cnt[j] < min ? cnt[j] : min;
        for (int j = 0; j < nv; j++)
            if (rm[j] > 0 && (best < 0 || cnt[j] < cnt[best]))
                best = j;
        if (best < 0 || cnt[best] + 1 - min > skew)
            break;
        cnt[best]++;
        rm[best]--;
        placed++;
    }
    return placed;
}

static int c_any(const struct cnode *m, int nn, int level, int kind, int k, int g, int skew, int n)
{
    for (int i = 0; i < nn; i++) {
        int d = cdom(m, i, level);
        int h = kind ? spread_holds(m, nn, level, d, k, g, skew, n) : anti_holds(m, nn, level, d, k, g);
        if (h >= n)
            return 1;
    }
    return 0;
}

static int constraint_wrong;

static void constraint_trial(int t)
{
    struct cnode m[MAXN];
    int nn = 0, shared = rnd(2);
    char *y = NULL;
    int nz = 1 + rnd(2);
    for (int z = 0; z < nz; z++) {
        int nr = 1 + rnd(3);
        for (int r = 0; r < nr; r++) {
            int k = 1 + rnd(4);
            for (int i = 0; i < k && nn < MAXN; i++) {
                struct cnode *x = &m[nn];
                x->zone = z;
                x->rack = r;
                x->gpus = (int[]){0, 2, 4, 8, 8}[rnd(5)];
                x->used = x->gpus ? rnd(x->gpus + 1) : 0;
                x->tainted = rnd(8) == 0;
                x->app = rnd(5) == 0;
                snprintf(x->name, sizeof x->name, "n%d", nn);
                snprintf(x->rackv, sizeof x->rackv, shared ? "r%d" : "r%d-%d", shared ? r : z, r);
                char zone[8];
                snprintf(zone, sizeof zone, "z%d", z);
                tu_cat(&y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n"
                           "    kubernetes.io/hostname: %s\n    topology.kubernetes.io/zone: %s\n"
                           "    topogang.io/rack: %s\n", x->name, x->name, zone, x->rackv);
                tu_cat(&y, "spec: {%s}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
                           "nvidia.com/gpu: \"%d\"}\n",
                       x->tainted ? "taints: [{key: bad, effect: NoSchedule}]" : "", x->gpus);
                if (x->used)
                    tu_cat(&y, "---\nkind: Pod\nmetadata: {name: used-%d, namespace: other}\n"
                               "spec: {nodeName: %s, containers: [{resources: {requests: {nvidia.com/gpu: %d}}}]}\n",
                           nn, x->name, x->used);
                if (x->app)
                    tu_cat(&y, "---\nkind: Pod\nmetadata: {name: app-%d, namespace: ml, labels: {app: c}}\n"
                               "spec: {nodeName: %s, containers: [{resources: {requests: {cpu: \"1\"}}}]}\n",
                           nn, x->name);
                nn++;
            }
        }
    }
    static const char *const lvname[] = {NULL, "zone", "rack", "node"};
    static const char *const keys[] = {"kubernetes.io/hostname", "topogang.io/rack",
                                       "topology.kubernetes.io/zone"};
    int kind = rnd(2), k = rnd(kind ? 3 : 2), skew = 1 + rnd(2);
    int n = 1 + rnd(6), g = (int[]){1, 2, 4, 8}[rnd(4)];
    int req = rnd(3), pref = req ? req + rnd(4 - req) : 2;
    if (pref == 0)
        pref = 2;
    char topo[96] = "";
    if (req)
        snprintf(topo, sizeof topo, ", topology: {required: %s, preferred: %s}", lvname[req], lvname[pref]);
    tu_cat(&y, "---\nkind: PodGroup\napiVersion: topogang.io/v1alpha1\n"
               "metadata: {name: c, namespace: ml}\nspec: {minMember: %d%s}\n", n, topo);
    char spec[400];
    if (kind)
        snprintf(spec, sizeof spec, "  topologySpreadConstraints:\n  - {maxSkew: %d, topologyKey: %s, "
                                    "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: c}}}\n",
                 skew, keys[k]);
    else
        snprintf(spec, sizeof spec, "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                                    "      - {labelSelector: {matchLabels: {app: c}}, topologyKey: %s}\n", keys[k]);
    for (int i = 0; i < n; i++) {
        char name[32], rq[48];
        snprintf(name, sizeof name, "c-%d", i);
        snprintf(rq, sizeof rq, "nvidia.com/gpu: %d", g);
        tu_cat(&y, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: ml, labels: "
                   "{topogang.io/pod-group: c, app: c}}\nspec:\n  schedulerName: topogang\n%s"
                   "  containers:\n  - name: x\n    resources: {requests: {%s}}\n", name, spec, rq);
    }
    cJSON *res = tu_simulate(POLICY, y);
    const cJSON *gj = tu_gang(res, "ml/c");
    int scheduled = !strcmp(tu_str(gj, "status"), "Scheduled");
    int feasible = c_any(m, nn, req, kind, k, g, skew, n);
    int pref_ok = !kind && c_any(m, nn, pref, kind, k, g, skew, n);
    if (scheduled != feasible) {
        constraint_wrong++;
        print_error("constraint trial %d (%s on %s, n %d, required %s): scheduled=%d, brute force "
                    "feasible=%d (%s)\n%s\n", t, kind ? "spread" : "anti-affinity", keys[k], n,
                    req ? lvname[req] : "cluster", scheduled, feasible, tu_str(gj, "reason"), y);
    }
    if (scheduled) {
        int at[8], first = -1, same_req = 1, same_pref = 1;
        for (int i = 0; i < n; i++) {
            char pod[32];
            snprintf(pod, sizeof pod, "ml/c-%d", i);
            const char *nd = tu_node_of(res, pod);
            assert_non_null(nd);
            at[i] = atoi(nd + 1);
            m[at[i]].used += g;
            assert_true(m[at[i]].used <= m[at[i]].gpus);
            assert_false(m[at[i]].tainted);
            if (first < 0)
                first = at[i];
            same_req &= cdom(m, at[i], req) == cdom(m, first, req);
            same_pref &= cdom(m, at[i], pref) == cdom(m, first, pref);
        }
        assert_true(same_req);
        if (!kind) {
            /* one member per value, none beside a bound app=c pod */
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < i; j++)
                    assert_int_not_equal(kval(m, nn, at[i], k), kval(m, nn, at[j], k));
                for (int j = 0; j < nn; j++)
                    assert_false(m[j].app && kval(m, nn, j, k) == kval(m, nn, at[i], k));
            }
            if (pref_ok && !same_pref)
                print_error("constraint trial %d: a %s could hold it but it was split\n%s\n", t,
                            lvname[pref], y);
            assert_true(!pref_ok || same_pref);
        } else {
            /* a domain that got members ends at most maxSkew above the
             * minimum over every domain of the cluster (the minimum only rises) */
            int val[64], cnt[64], got[64], nv = 0;
            for (int i = 0; i < nn; i++) {
                int v = kval(m, nn, i, k), j = 0, mine = 0;
                for (int q = 0; q < n; q++)
                    mine += at[q] == i;
                while (j < nv && val[j] != v)
                    j++;
                if (j == nv) {
                    val[nv] = v;
                    cnt[nv] = got[nv] = 0;
                    nv++;
                }
                cnt[j] += m[i].app + mine;
                got[j] += mine;
            }
            int lo = 1 << 30;
            for (int j = 0; j < nv; j++)
                lo = cnt[j] < lo ? cnt[j] : lo;
            for (int j = 0; j < nv; j++) {
                if (got[j] && cnt[j] - lo > skew)
                    print_error("constraint trial %d: skew %d > %d\n%s\n", t, cnt[j] - lo, skew, y);
                assert_true(!got[j] || cnt[j] - lo <= skew);
            }
        }
    }
    cJSON_Delete(res);
    free(y);
}

static void test_constraints(void **state)
{
    (void)state;
    int nt = getenv("TG_TRIALS") ? atoi(getenv("TG_TRIALS")) : 1500;
    for (int t = 0; t < nt; t++)
        constraint_trial(t);
    assert_int_equal(constraint_wrong, 0);
}

static void test_single_gang(void **state)
{
    (void)state;
    for (int t = 0; t < 300; t++)
        trial(t, 1, 0);
}

static void test_gang_sequences(void **state)
{
    (void)state;
    for (int t = 0; t < 200; t++)
        trial(t, 4, 0);
}

/* Some nodes lack the zone, rack or hostname label (each 1 in 4). */
static void test_missing_labels(void **state)
{
    (void)state;
    for (int t = 0; t < 300; t++)
        trial(t, 1, 1);
    for (int t = 0; t < 200; t++)
        trial(t, 4, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_gang),
        cmocka_unit_test(test_gang_sequences),
        cmocka_unit_test(test_missing_labels),
        cmocka_unit_test(test_heterogeneous),
        cmocka_unit_test(test_constraints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
