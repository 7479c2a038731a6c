/* The engine (scheduler/engine.h) driven event by event on a clock the test
 * moves, with no apiserver: members arriving, nominations holding room while
 * victims terminate, a higher priority taking that room, reservations for a
 * starving head gang, timeouts, and which node changes wake waiting gangs. */
#include "testutil.h"
#include "config/policy.h"
#include "model/queues.h"
#include "scheduler/engine.h"
#include "scheduler/internal.h" /* the tests embed an engine and look inside */
#include "util/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t now_ms;
static int64_t clock_now(void *ud)
{
    (void)ud;
    return now_ms;
}

struct world {
    struct tg_engine e;
    struct tg_pod *pods[256];
    uint32_t npods;
    struct tg_podgroup *pgs[32];
    uint32_t npgs;
};

static void world_init(struct world *w, const char *policy)
{
    memset(w, 0, sizeof *w);
    struct tg_policy p;
    struct tg_sb err = {0};
    tg_policy_default(&p);
    const char *base = "topology:\n  levels:\n"
                       "    - {name: rack, nodeLabel: topogang.io/rack}\n"
                       "    - {name: node, nodeLabel: kubernetes.io/hostname}\n";
    char text[1024];
    snprintf(text, sizeof text, "%s%s", base, policy ? policy : "");
    assert_int_equal(tg_policy_parse(text, strlen(text), "policy", &p, &err), 0);
    tg_sb_free(&err);
    struct tg_clock clk = {clock_now, NULL};
    now_ms = 1000000;
    assert_int_equal(tg_engine_init(&w->e, &p, &clk), 0);
}

static void world_free(struct world *w)
{
    tg_engine_free(&w->e);
    for (uint32_t i = 0; i < w->npods; i++)
        tg_pod_free(&w->pods[i]);
    for (uint32_t i = 0; i < w->npgs; i++)
        tg_podgroup_free(&w->pgs[i]);
}

static cJSON *parse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *parse(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static void node(struct world *w, const char *name, const char *rack, int gpus)
{
    cJSON *j = parse("{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":\"%s\","
                     "\"topogang.io/rack\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":\"64\","
                     "\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"}}}",
                     name, name, rack, gpus);
    struct tg_node_obj *n;
    assert_int_equal(tg_node_decode(j, NULL, &n), 0);
    cJSON_Delete(j);
    assert_int_equal(tg_engine_node_set(&w->e, n), 0);
}

/* A PodGroup whose priority is prio, from the PriorityClass "p<prio>" (as on
 * a cluster: a PodGroup's own spec.priority counts only where the policy
 * allows it). */
static void podgroup(struct world *w, const char *name, int min, int prio, const char *required,
                     int timeout_s)
{
    char cls[32];
    snprintf(cls, sizeof cls, "p%d", prio);
    assert_int_equal(tg_engine_pclass_set(&w->e, tg_intern(cls), &(struct tg_pclass){.value = prio}), 0);
    cJSON *j = parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":%d,"
                     "\"priorityClassName\":\"%s\",\"scheduleTimeoutSeconds\":%d%s%s%s}}",
                     name, min, cls, timeout_s, required ? ",\"topology\":{\"required\":\"" : "",
                     required ? required : "", required ? "\"}" : "");
    struct tg_podgroup *pg;
    assert_int_equal(tg_podgroup_decode(j, NULL, &pg), 0);
    cJSON_Delete(j);
    w->pgs[w->npgs++] = pg;
    tg_engine_podgroup_set(&w->e, pg);
}

/* A pod object (kept by the world); node NULL: pending. */
static struct tg_pod *pod(struct world *w, const char *name, const char *group, int gpus,
                          const char *node_name, int deleting)
{
    char labels[128] = "";
    if (group)
        snprintf(labels, sizeof labels, "\"labels\":{\"topogang.io/pod-group\":\"%s\"},", group);
    cJSON *j = parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",%s%s"
                     "\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"j\",\"controller\":true}],"
                     "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
                     "\"spec\":{\"schedulerName\":\"topogang\"%s%s%s,\"containers\":[{\"resources\":"
                     "{\"requests\":{\"nvidia.com/gpu\":%d}}}]}}",
                     name, labels, deleting ? "\"deletionTimestamp\":\"2026-01-01T00:00:01Z\"," : "",
                     node_name ? ",\"nodeName\":\"" : "", node_name ? node_name : "",
                     node_name ? "\"" : "", gpus);
    struct tg_pod *p;
    assert_int_equal(tg_pod_decode(j, TG_DECODE_SPEC, NULL, &p), 0);
    cJSON_Delete(j);
    w->pods[w->npods++] = p;
    return p;
}

static void pending(struct world *w, const char *name, const char *group, int gpus)
{
    assert_int_equal(tg_engine_pending_set(&w->e, pod(w, name, group, gpus, NULL, 0)), 0);
}

static void bound(struct world *w, const char *name, const char *group, int gpus, const char *n)
{
    assert_int_equal(tg_engine_bound_set(&w->e, pod(w, name, group, gpus, n, 0)), 0);
}

/* The pod is Terminating: still on its node. */
static void terminating(struct world *w, const char *name, const char *group, int gpus, const char *n)
{
    assert_int_equal(tg_engine_bound_set(&w->e, pod(w, name, group, gpus, n, 1)), 0);
}

static void gone(struct world *w, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "ml/%s", name);
    tg_engine_bound_gone(&w->e, key);
}

/* Takes the next decision; PLACE decisions are bound at once. Returns kind. */
static int next(struct world *w, struct tg_decision *d)
{
    assert_int_equal(tg_engine_next(&w->e, d), 0);
    if (d->kind == TG_D_PLACE) {
        for (uint32_t i = 0; i < d->view.npods; i++) {
            if (d->result.slot[i] == TG_NONE)
                continue;
            struct tg_pod *p = d->view.pods[i];
            const char *nn = tg_str(w->e.sched.cluster.nodes[d->result.slot[i]].name);
            struct tg_pod *b = pod(w, tg_pod_name(p), p->group ? tg_str(p->group) : NULL,
                                   (int)p->req[0].val, nn, 0);
            assert_int_equal(tg_engine_bound_set(&w->e, b), 0);
            tg_engine_pending_gone(&w->e, p);
        }
        tg_engine_bind_done(&w->e, d->gang, 1, 0);
    }
    return d->kind;
}

static const char *node_of(struct world *w, const char *pod_name)
{
    char key[64];
    snprintf(key, sizeof key, "ml/%s", pod_name);
    const struct tg_usage *u = tg_cluster_usage(&w->e.sched.cluster, key);
    return u ? tg_str(w->e.sched.cluster.nodes[u->slot].name) : NULL;
}

static void members_arrive(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    node(&w, "a1", "ra", 8);
    podgroup(&w, "g", 2, 0, "rack", 0);
    pending(&w, "g-0", "g", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_WAITING);
    assert_non_null(strstr(d.reason, "1 pending + 0 bound < minMember 2"));
    tg_decision_free(&d);
    assert_int_equal(next(&w, &d), TG_D_NONE); /* parked until a member comes */
    tg_decision_free(&d);
    pending(&w, "g-1", "g", 8);
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    assert_int_equal(d.result.nplaced, 2);
    tg_decision_free(&d);
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    assert_int_equal(tg_queue_len(&w.e.queue), 0);
    world_free(&w);
}

/* The pods come before their PodGroup (two watches, either order): the gang
 * says so and waits without a backoff; the PodGroup's arrival places it at
 * once, not a backoff later. */
static void podgroup_after_its_pods(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    node(&w, "a1", "ra", 8);
    pending(&w, "late-0", "late", 8);
    pending(&w, "late-1", "late", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_INVALID);
    assert_non_null(strstr(d.reason, "PodGroup ml/late does not exist"));
    tg_decision_free(&d);
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    now_ms += 10;
    podgroup(&w, "late", 2, 0, "rack", 0);
    assert_int_equal(next(&w, &d), TG_D_PLACE); /* at the same instant: no backoff ran */
    assert_int_equal(d.result.nplaced, 2);
    tg_decision_free(&d);
    world_free(&w);
}

/* A PodGroup naming a PriorityClass not seen (yet) waits, saying so; the
 * class's arrival (on its own watch, in either order) tries it at once
 * (issue 19). */
static void class_after_its_podgroup(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    cJSON *j = parse("{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":1,"
                     "\"priorityClassName\":\"later\",\"priority\":7}}");
    struct tg_podgroup *pg;
    assert_int_equal(tg_podgroup_decode(j, NULL, &pg), 0);
    cJSON_Delete(j);
    w.pgs[w.npgs++] = pg;
    tg_engine_podgroup_set(&w.e, pg);
    pending(&w, "g-0", "g", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_WAITING);
    assert_string_equal(d.reason, "PodGroup ml/g: spec.priorityClassName: PriorityClass \"later\" does not "
                                  "exist (waiting for it; the apiserver refuses a pod that names a missing class)");
    tg_decision_free(&d);
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    now_ms += 10;
    assert_int_equal(tg_engine_pclass_set(&w.e, tg_intern("other"), &(struct tg_pclass){.value = 1}), 0);
    assert_int_equal(next(&w, &d), TG_D_NONE); /* not the class it waits for */
    tg_decision_free(&d);
    assert_int_equal(tg_engine_pclass_set(&w.e, tg_intern("later"), &(struct tg_pclass){.value = 300}), 0);
    assert_int_equal(next(&w, &d), TG_D_PLACE); /* at the same instant */
    assert_int_equal(d.gang->priority, 300);
    tg_decision_free(&d);
    world_free(&w);
}

/* Rack ra is full of two low gangs; a high gang preempts them; while one is
 * still Terminating a low newcomer must not take the room the other freed. */
static void nomination_holds_room(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    node(&w, "a1", "ra", 8);
    podgroup(&w, "low1", 1, 10, NULL, 0);
    podgroup(&w, "low2", 1, 10, NULL, 0);
    bound(&w, "low1-0", "low1", 8, "a0");
    bound(&w, "low2-0", "low2", 8, "a1");
    podgroup(&w, "hi", 2, 100, "rack", 0);
    pending(&w, "hi-0", "hi", 8);
    pending(&w, "hi-1", "hi", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_PREEMPT);
    assert_int_equal(d.preemption.nvictims, 2);
    assert_int_equal(w.e.stats.preemptions, 1);
    tg_decision_free(&d);
    /* the evictor marks them Terminating; one goes, one stays */
    terminating(&w, "low1-0", "low1", 8, "a0");
    terminating(&w, "low2-0", "low2", 8, "a1");
    gone(&w, "low1-0");
    assert_int_equal(next(&w, &d), TG_D_NOMINATED); /* one victim left */
    tg_decision_free(&d);
    podgroup(&w, "newcomer", 1, 5, NULL, 0);
    pending(&w, "newcomer-0", "newcomer", 8);
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_string_equal(d.gang->key, "ml/newcomer");
    tg_decision_free(&d);
    assert_null(node_of(&w, "newcomer-0"));
    gone(&w, "low2-0");
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    assert_string_equal(d.gang->key, "ml/hi");
    tg_decision_free(&d);
    assert_non_null(node_of(&w, "hi-0"));
    assert_non_null(node_of(&w, "hi-1"));
    world_free(&w);
}

/* A gang that outranks the nominated one takes its room; the nomination is
 * dropped and its gang plans again. */
static void higher_priority_takes_nominated_room(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    podgroup(&w, "low", 1, 10, NULL, 0);
    bound(&w, "low-0", "low", 8, "a0");
    podgroup(&w, "mid", 1, 100, NULL, 0);
    pending(&w, "mid-0", "mid", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_PREEMPT);
    tg_decision_free(&d);
    terminating(&w, "low-0", "low", 8, "a0");
    gone(&w, "low-0");
    podgroup(&w, "top", 1, 1000, NULL, 0);
    pending(&w, "top-0", "top", 8);
    /* top is first in queue order, takes a0, displaces mid's nomination */
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    assert_string_equal(d.gang->key, "ml/top");
    tg_decision_free(&d);
    assert_int_equal(w.e.stats.nominations_dropped, 1);
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_string_equal(d.gang->key, "ml/mid");
    assert_non_null(strstr(d.reason, "no gang or pod of lower priority"));
    tg_decision_free(&d);
    world_free(&w);
}

/* A gang of tenant queue q (label topogang.io/queue) at priority prio. */
static void queued_podgroup(struct world *w, const char *name, int min, int prio, const char *q)
{
    char cls[32];
    snprintf(cls, sizeof cls, "p%d", prio);
    assert_int_equal(tg_engine_pclass_set(&w->e, tg_intern(cls), &(struct tg_pclass){.value = prio}), 0);
    cJSON *j = parse("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"labels\":"
                     "{\"topogang.io/queue\":\"%s\"}},\"spec\":{\"minMember\":%d,"
                     "\"priorityClassName\":\"%s\"}}", name, q, min, cls);
    struct tg_podgroup *pg;
    assert_int_equal(tg_podgroup_decode(j, NULL, &pg), 0);
    cJSON_Delete(j);
    w->pgs[w->npgs++] = pg;
    tg_engine_podgroup_set(&w->e, pg);
}

/* Tenant Queues team-a and team-b with these nvidia.com/gpu quotas, handed
 * to the engine; the caller frees qo[0..1]. */
static void two_queues(struct world *w, const char *qa, const char *qb, struct tg_queue_obj **qo)
{
    const char *name[] = {"team-a", "team-b"}, *quota[] = {qa, qb};
    for (int i = 0; i < 2; i++) {
        cJSON *j = parse("{\"apiVersion\":\"topogang.io/v1alpha1\",\"kind\":\"Queue\","
                         "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"resources\":"
                         "{\"nvidia.com/gpu\":{\"quota\":\"%s\"}}}}", name[i], quota[i]);
        assert_int_equal(tg_queue_obj_decode(j, NULL, &qo[i]), 0);
        cJSON_Delete(j);
    }
    assert_int_equal(tg_engine_queues_set(&w->e, (const struct tg_queue_obj *const *)qo, 2), 0);
}

/* Room a reclaim frees stays its reclaimer's (issue 19). Quotas: team-a
 * 12, team-b 4 of 16 GPUs. team-b runs b1 (two 4-GPU pods on a0) and b2 (4
 * on a1): allocated 12, fair share 4; team-a runs 4 on a1. team-a's
 * priority-1 gang of one 8-GPU pod reclaims b1 (the only whole node). While
 * b1's second pod is still Terminating, team-b's new priority-100 gang b3
 * (4 GPUs) comes: it outranks the reclaimer by priority but is of another
 * queue, so it does not take the half of a0 already free (before, it did,
 * the reclaimer planned again and evicted another gang: a loop that evicted
 * one gang 946 times in bench_replay --queues 4). Inside one queue a higher
 * priority still takes a nomination's room (higher_priority_takes_nominated_room). */
static void reclaimed_room_stays_with_reclaimer(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    node(&w, "a1", "ra", 8);
    struct tg_queue_obj *qo[2];
    two_queues(&w, "12", "4", qo);
    queued_podgroup(&w, "b1", 2, 100, "team-b");
    queued_podgroup(&w, "b2", 1, 100, "team-b");
    queued_podgroup(&w, "arun", 1, 1, "team-a");
    bound(&w, "b1-0", "b1", 4, "a0");
    bound(&w, "b1-1", "b1", 4, "a0");
    bound(&w, "b2-0", "b2", 4, "a1");
    bound(&w, "arun-0", "arun", 4, "a1");
    queued_podgroup(&w, "a", 1, 1, "team-a");
    pending(&w, "a-0", "a", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_PREEMPT);
    assert_true(d.preemption.reclaim);
    assert_int_equal(d.preemption.nvictims, 1);
    assert_string_equal(d.preemption.victims[0].gang->key, "ml/b1");
    tg_decision_free(&d);
    terminating(&w, "b1-0", "b1", 4, "a0");
    terminating(&w, "b1-1", "b1", 4, "a0");
    gone(&w, "b1-0");
    queued_podgroup(&w, "b3", 1, 100, "team-b");
    pending(&w, "b3-0", "b3", 4);
    for (int i = 0; i < 8; i++) {
        int k = next(&w, &d);
        tg_decision_free(&d);
        if (k == TG_D_NONE)
            break;
    }
    assert_null(node_of(&w, "b3-0"));
    gone(&w, "b1-1");
    for (int i = 0; i < 8; i++) {
        int k = next(&w, &d);
        tg_decision_free(&d);
        if (k == TG_D_NONE)
            break;
    }
    assert_non_null(node_of(&w, "a-0"));
    assert_string_equal(node_of(&w, "a-0"), "a0");
    assert_null(node_of(&w, "b3-0"));
    assert_int_equal(w.e.stats.nominations_dropped, 0);
    world_free(&w);
    for (int i = 0; i < 2; i++)
        tg_queue_obj_free(&qo[i]);
}

/* preemption.reclaimMinRuntimeSeconds (KAI's reclaimMinRuntime): a gang
 * that has run less than that is no reclaim victim; the wait says so in
 * numbers. Its runtime counts from status.startTime when the pod has one,
 * else from when the engine first saw it bound. b1 (started an hour ago) may
 * be reclaimed at once; b2 (no startTime, seen bound now) only 600 s later. */
static void reclaim_min_runtime(void **state)
{
    (void)state;
    for (int started = 0; started < 2; started++) {
        struct world w;
        world_init(&w, "preemption: {reclaimMinRuntimeSeconds: 600}\n");
        now_ms = 1767225600000LL + 3600 * 1000; /* 2026-01-01T01:00:00Z */
        node(&w, "a0", "ra", 8);
        node(&w, "a1", "ra", 8);
        struct tg_queue_obj *qo[2];
        two_queues(&w, "8", "8", qo);
        queued_podgroup(&w, "b1", 1, 100, "team-b");
        queued_podgroup(&w, "b2", 1, 100, "team-b");
        for (int i = 0; i < 2; i++) {
            cJSON *j = parse("{\"metadata\":{\"name\":\"b%d-0\",\"namespace\":\"ml\",\"labels\":"
                             "{\"topogang.io/pod-group\":\"b%d\"},\"ownerReferences\":[{\"kind\":"
                             "\"Job\",\"name\":\"j\",\"controller\":true}]},\"spec\":{\"schedulerName\":"
                             "\"topogang\",\"nodeName\":\"a%d\",\"containers\":[{\"resources\":"
                             "{\"requests\":{\"nvidia.com/gpu\":8}}}]},\"status\":{\"phase\":\"%s\""
                             "%s}}", i + 1, i + 1, i, started ? "Running" : "Pending",
                             started ? ",\"startTime\":\"2026-01-01T00:00:00Z\"" : "");
            struct tg_pod *p;
            assert_int_equal(tg_pod_decode(j, TG_DECODE_SPEC, NULL, &p), 0);
            cJSON_Delete(j);
            w.pods[w.npods++] = p;
            assert_int_equal(tg_engine_bound_set(&w.e, p), 0);
        }
        queued_podgroup(&w, "a", 1, 1, "team-a");
        pending(&w, "a-0", "a", 8);
        struct tg_decision d;
        if (started) { /* an hour: past the minimum */
            int k = next(&w, &d);
            if (k != TG_D_PREEMPT)
                fail_msg("kind %d: %s", k, d.reason);
            assert_true(d.preemption.reclaim);
            tg_decision_free(&d);
        } else {
            assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
            if (!strstr(d.reason, "has run 0 s < preemption.reclaimMinRuntimeSeconds 600"))
                fail_msg("reason: %s", d.reason);
            tg_decision_free(&d);
            now_ms += 599 * 1000;
            tg_engine_wake(&w.e);
            assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
            assert_non_null(strstr(d.reason, "has run 599 s <"));
            tg_decision_free(&d);
            now_ms += 5000; /* past its backoff too */
            tg_engine_wake(&w.e);
            assert_int_equal(next(&w, &d), TG_D_PREEMPT);
            assert_true(d.preemption.reclaim);
            tg_decision_free(&d);
        }
        world_free(&w);
        for (int i = 0; i < 2; i++)
            tg_queue_obj_free(&qo[i]);
    }
}

/* A big gang of the same priority as the small pods around it starves until
 * its reservation keeps rack rb (where it misses the least) for it: a small
 * pod that would fit best in rb goes to ra meanwhile, and when rb drains the
 * big gang gets it. */
static void reservation_lets_the_head_in(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, "gang: {reserveAfterSeconds: 10}\n");
    node(&w, "a0", "ra", 8);
    node(&w, "a1", "ra", 8);
    node(&w, "b0", "rb", 8);
    node(&w, "b1", "rb", 8);
    bound(&w, "s-a0", NULL, 4, "a0");
    bound(&w, "s-a1", NULL, 4, "a1");
    bound(&w, "s-b0", NULL, 6, "b0");
    podgroup(&w, "big", 2, 0, "rack", 0);
    pending(&w, "big-0", "big", 8);
    pending(&w, "big-1", "big", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_int_equal(d.reserved, 0); /* not waited long enough */
    tg_decision_free(&d);
    now_ms += 11000;
    tg_engine_wake(&w.e);
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_string_equal(d.gang->key, "ml/big");
    assert_int_equal(d.reserved, 1);
    assert_int_equal(d.reservation_new, 1);
    assert_non_null(strstr(d.reason, "reserving rb for ml/big: 10 of 16 nvidia.com/gpu free, "
                                     "waiting for 1 pod(s) to finish"));
    tg_decision_free(&d);
    /* best fit would be b0 (2 free): the reservation sends it to ra */
    pending(&w, "small", NULL, 2);
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    tg_decision_free(&d);
    assert_int_equal(node_of(&w, "small")[0], 'a');
    /* without a reservation it goes to b0: the same pod in a fresh world */
    struct world w2;
    world_init(&w2, "gang: {reserveAfterSeconds: 0}\n");
    node(&w2, "a0", "ra", 8);
    node(&w2, "a1", "ra", 8);
    node(&w2, "b0", "rb", 8);
    node(&w2, "b1", "rb", 8);
    bound(&w2, "s-a0", NULL, 4, "a0");
    bound(&w2, "s-a1", NULL, 4, "a1");
    bound(&w2, "s-b0", NULL, 6, "b0");
    pending(&w2, "small", NULL, 2);
    assert_int_equal(next(&w2, &d), TG_D_PLACE);
    tg_decision_free(&d);
    assert_string_equal(node_of(&w2, "small"), "b0");
    world_free(&w2);
    /* rb drains: its small pod finishes */
    gone(&w, "s-b0");
    now_ms += 61000;
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    assert_string_equal(d.gang->key, "ml/big");
    tg_decision_free(&d);
    assert_string_equal(node_of(&w, "big-0")[0] == 'b' ? "rb" : "ra", "rb");
    assert_null(tg_engine_reservation(&w.e, tg_gangs_get(&w.e.gangs, "ml/big")));
    world_free(&w);
}

/* One rack of two 8-GPU nodes, each half used by a small pod, and a gang of
 * two 8-GPU pods asking for the rack (scheduleTimeoutSeconds timeout_s);
 * reserveAfterSeconds 3. */
static void starving_world(struct world *w, int timeout_s)
{
    world_init(w, "gang: {reserveAfterSeconds: 3}\n");
    node(w, "a0", "ra", 8);
    node(w, "a1", "ra", 8);
    bound(w, "s-a0", NULL, 4, "a0");
    bound(w, "s-a1", NULL, 4, "a1");
    podgroup(w, "big", 2, 0, "rack", timeout_s);
    pending(w, "big-0", "big", 8);
    pending(w, "big-1", "big", 8);
}

/* No wake helps a starving gang: here nothing changes at all. It is tried
 * again at the point it may reserve room (reserveAfterSeconds after it was
 * first seen), not only at the unschedulable flush 60 s later, and its
 * timeout still comes on time after that. */
static void starving_gang_tried_on_time(void **state)
{
    (void)state;
    struct world w;
    starving_world(&w, 20);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_int_equal(d.reserved, 0);
    tg_decision_free(&d);
    now_ms += 1000; /* its backoff (1 s) is over: unschedulable, no wake */
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    assert_true(tg_engine_next_due(&w.e) <= now_ms + 2000);
    now_ms += 2100;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_string_equal(d.gang->key, "ml/big");
    assert_int_equal(d.reserved, 1);
    tg_decision_free(&d);
    /* the timeout (20 s) is still armed: reported at 20 s, not at the 60 s flush */
    now_ms += 10000;
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    now_ms += 7000;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_int_equal(d.timed_out, 1);
    tg_decision_free(&d);
    world_free(&w);
}

/* The try its reserve point brings (no cluster change prompted it) leaves
 * its backoff as it was: here over, so the room it then waits for draining
 * finds it ready at once (a backoff lengthened by that try, 2 s after two
 * failures, would hold it until +5.1 s). */
static void reserved_gang_not_held_by_backoff(void **state)
{
    (void)state;
    struct world w;
    starving_world(&w, 0);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    tg_decision_free(&d);
    now_ms += 3100;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_int_equal(d.reservation_new, 1);
    tg_decision_free(&d);
    now_ms += 1500; /* the rack drains */
    gone(&w, "s-a0");
    gone(&w, "s-a1");
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    assert_string_equal(d.gang->key, "ml/big");
    tg_decision_free(&d);
    world_free(&w);
}

static void timeout_reported_once(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    podgroup(&w, "g", 2, 0, NULL, 5);
    pending(&w, "g-0", "g", 8);
    pending(&w, "g-1", "g", 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    assert_int_equal(d.timed_out, 0);
    tg_decision_free(&d);
    now_ms += 4000;
    assert_int_equal(next(&w, &d), TG_D_NONE); /* backoff 1 s over, but no wake: unsched */
    tg_decision_free(&d);
    now_ms += 1000;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE); /* its deadline brings it back */
    assert_int_equal(d.timed_out, 1);
    tg_decision_free(&d);
    assert_int_equal(w.e.stats.timeouts, 1);
    now_ms += 100000;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE); /* the flush */
    assert_int_equal(d.timed_out, 0);                   /* said once */
    tg_decision_free(&d);
    world_free(&w);
}

/* A gang parked while it waits for members keeps its timeout deadline; when
 * its last pod goes the record is freed, and the deadline must go with it
 * (a use after free in the queue once the deadline came, found under ASan by
 * tests/e2e/test_crash.py after an apiserver restart). */
static void parked_gang_freed_with_its_deadline(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    podgroup(&w, "g", 2, 0, NULL, 5);
    struct tg_pod *p = pod(&w, "g-0", "g", 8, NULL, 0);
    assert_int_equal(tg_engine_pending_set(&w.e, p), 0);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_WAITING); /* parked: out of the queue, deadline kept */
    tg_decision_free(&d);
    assert_int_equal(w.e.queue.deadline.n, 1);
    tg_engine_pending_gone(&w.e, p);              /* the gang's record goes */
    assert_null(tg_gangs_get(&w.e.gangs, "ml/g"));
    assert_int_equal(w.e.queue.deadline.n, 0);
    now_ms += 10000;                              /* past the deadline */
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    world_free(&w);
}

/* A node update that changes nothing a gang could use (a heartbeat) wakes
 * nobody; a new node does. */
static void heartbeat_wakes_nobody(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    pending(&w, "p", NULL, 16);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    tg_decision_free(&d);
    now_ms += 2000;
    node(&w, "a0", "ra", 8); /* same object again */
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    node(&w, "big", "ra", 16);
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    tg_decision_free(&d);
    world_free(&w);
}

/* Room freed where no member of a waiting gang could go wakes nobody;
 * room it could use does. */
static void targeted_wake(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    node(&w, "a0", "ra", 8);
    node(&w, "a1", "ra", 8);
    bound(&w, "small", NULL, 2, "a0");
    bound(&w, "other", NULL, 4, "a0");
    bound(&w, "big", NULL, 8, "a1");
    pending(&w, "p", NULL, 8);
    struct tg_decision d;
    assert_int_equal(next(&w, &d), TG_D_UNSCHEDULABLE);
    tg_decision_free(&d);
    now_ms += 2000; /* its backoff is over: only a wake brings it back */
    gone(&w, "small"); /* a0 has 4 free: not enough for 8 */
    assert_int_equal(next(&w, &d), TG_D_NONE);
    tg_decision_free(&d);
    gone(&w, "big"); /* a1 empty */
    assert_int_equal(next(&w, &d), TG_D_PLACE);
    tg_decision_free(&d);
    assert_string_equal(node_of(&w, "p"), "a1");
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(members_arrive),
        cmocka_unit_test(podgroup_after_its_pods),
        cmocka_unit_test(class_after_its_podgroup),
        cmocka_unit_test(nomination_holds_room),
        cmocka_unit_test(higher_priority_takes_nominated_room),
        cmocka_unit_test(reclaimed_room_stays_with_reclaimer),
        cmocka_unit_test(reclaim_min_runtime),
        cmocka_unit_test(reservation_lets_the_head_in),
        cmocka_unit_test(starving_gang_tried_on_time),
        cmocka_unit_test(reserved_gang_not_held_by_backoff),
        cmocka_unit_test(timeout_reported_once),
        cmocka_unit_test(parked_gang_freed_with_its_deadline),
        cmocka_unit_test(heartbeat_wakes_nobody),
        cmocka_unit_test(targeted_wake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
