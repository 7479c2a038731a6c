/* A gang's life from the API's record (scheduler/loss.h): which gangs with
 * fewer members bound than minMember are half-bound (rolled back) and which
 * ran complete and lost members (never rolled back; a grace, then
 * gang.onMemberLoss), what the grace does, the policy keys, and the decoding
 * of the records this reads (PodGroup conditions Complete and MemberLoss, a
 * pod's status.startTime). No apiserver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "config/policy.h"
#include "model/objects.h"
#include "scheduler/loss.h"
#include "util/err.h"
#include "util/strbuf.h"

static enum tg_life life(uint32_t bound, uint32_t min, int ours, int complete, uint32_t started)
{
    struct tg_life_facts f = {.bound = bound, .min = min, .started = started,
                              .status_ours = (uint8_t)ours, .complete = (uint8_t)complete};
    return tg_life_classify(&f);
}

static void classify_from_the_record(void **state)
{
    (void)state;
    /* nothing bound, or minMember bound: nothing to decide */
    assert_int_equal(life(0, 4, 1, 1, 0), TG_LIFE_WHOLE);
    assert_int_equal(life(4, 4, 1, 0, 0), TG_LIFE_WHOLE);
    assert_int_equal(life(5, 4, 0, 0, 0), TG_LIFE_WHOLE);
    /* our PodGroup's status says Complete: a running gang that lost a member,
     * whether its pods ran or not (no kubelet, or not yet) */
    assert_int_equal(life(3, 4, 1, 1, 0), TG_LIFE_SHORT);
    assert_int_equal(life(1, 4, 1, 1, 1), TG_LIFE_SHORT);
    /* ... never complete: half-bound, even when its bound members started
     * (a kubelet starts a pod as soon as it is bound) */
    assert_int_equal(life(3, 4, 1, 0, 0), TG_LIFE_HALF_BOUND);
    assert_int_equal(life(3, 4, 1, 0, 3), TG_LIFE_HALF_BOUND);
    /* no status of ours (a Job's gang, a peer's PodGroup): members that ran */
    assert_int_equal(life(3, 4, 0, 0, 1), TG_LIFE_SHORT);
    assert_int_equal(life(3, 4, 0, 0, 0), TG_LIFE_HALF_BOUND);
    /* a complete flag without our status is not read */
    assert_int_equal(life(3, 4, 0, 1, 0), TG_LIFE_HALF_BOUND);
}

static void grace_then_policy(void **state)
{
    (void)state;
    struct tg_policy p;
    tg_policy_default(&p);
    assert_int_equal(p.member_loss_grace_s, 300);
    assert_int_equal(p.on_member_loss, TG_LOSS_KEEP);
    int64_t due = 0;
    assert_int_equal(tg_loss_step(&p, 1000000, 1000000, &due), TG_LOSS_STEP_WAIT);
    assert_int_equal(due, 1300000);
    assert_int_equal(tg_loss_step(&p, 1000000, 1299999, &due), TG_LOSS_STEP_WAIT);
    assert_int_equal(tg_loss_step(&p, 1000000, 1300000, &due), TG_LOSS_STEP_KEEP);
    p.on_member_loss = TG_LOSS_EVICT;
    assert_int_equal(tg_loss_step(&p, 1000000, 1300000, &due), TG_LOSS_STEP_EVICT);
    /* a since in the past (read from the PodGroup by a new process): the
     * same decision at once, no new grace */
    assert_int_equal(tg_loss_step(&p, 0, 1300000, &due), TG_LOSS_STEP_EVICT);
    p.member_loss_grace_s = 0;
    assert_int_equal(tg_loss_step(&p, 5000, 5000, &due), TG_LOSS_STEP_EVICT);
}

static void policy_keys(void **state)
{
    (void)state;
    struct tg_policy p;
    struct tg_sb err = {0};
    const char *y = "gang: {memberLossGraceSeconds: 60, onMemberLoss: evict}\n";
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), 0);
    assert_int_equal(p.member_loss_grace_s, 60);
    assert_int_equal(p.on_member_loss, TG_LOSS_EVICT);
    struct tg_sb dump = {0};
    tg_policy_dump(&p, &dump);
    assert_non_null(strstr(tg_sb_str(&dump), "onMemberLoss: evict"));
    assert_non_null(strstr(tg_sb_str(&dump), "memberLossGraceSeconds: 60"));
    tg_sb_free(&dump);
    y = "gang: {onMemberLoss: restart}\n";
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), TG_EPARSE);
    assert_non_null(strstr(tg_sb_str(&err), "gang.onMemberLoss: must be one of keep, evict"));
    tg_sb_free(&err);
    y = "gang: {memberLossGraceSeconds: -1}\n";
    assert_int_equal(tg_policy_parse(y, strlen(y), "cfg", &p, &err), TG_EPARSE);
    assert_non_null(strstr(tg_sb_str(&err), "gang.memberLossGraceSeconds"));
    tg_sb_free(&err);
}

static void quiet(void *ud, int is_error, const cJSON *at, const char *what, const char *field,
                  const char *msg)
{
    (void)ud, (void)is_error, (void)at, (void)what, (void)field, (void)msg;
}

static struct tg_podgroup *pg_of(const char *status)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"topogang.io/v1alpha1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":4},"
             "\"status\":%s}", status);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    struct tg_diag d = {quiet, NULL, 0, 0};
    struct tg_podgroup *g = NULL;
    assert_int_equal(tg_podgroup_decode(j, &d, &g), 0);
    cJSON_Delete(j);
    return g;
}

static void records_decoded(void **state)
{
    (void)state;
    struct tg_podgroup *g = pg_of("{}");
    assert_int_equal(g->complete, 0);
    assert_int_equal(g->loss, TG_PGLOSS_NONE);
    tg_podgroup_free(&g);
    g = pg_of("{\"phase\":\"Scheduled\",\"conditions\":["
              "{\"type\":\"Scheduled\",\"status\":\"True\",\"reason\":\"Scheduled\",\"message\":\"m\","
              "\"lastTransitionTime\":\"2026-11-26T10:00:00Z\"},"
              "{\"type\":\"Complete\",\"status\":\"True\",\"reason\":\"MinMemberBound\",\"message\":\"m\","
              "\"lastTransitionTime\":\"2026-11-26T10:00:00Z\"},"
              "{\"type\":\"MemberLoss\",\"status\":\"True\",\"reason\":\"WaitingForReplacements\","
              "\"message\":\"m\",\"lastTransitionTime\":\"2026-11-26T10:05:00Z\"}]}");
    assert_int_equal(g->complete, 1);
    assert_int_equal(g->loss, TG_PGLOSS_WAITING);
    assert_true(g->loss_since_ms - g->complete_since_ms == 300000);
    tg_podgroup_free(&g);
    g = pg_of("{\"conditions\":[{\"type\":\"MemberLoss\",\"status\":\"True\",\"reason\":\"KeptRunning\","
              "\"message\":\"m\",\"lastTransitionTime\":\"2026-11-26T10:05:00Z\"},"
              "{\"type\":\"Complete\",\"status\":\"False\",\"reason\":\"x\",\"message\":\"m\","
              "\"lastTransitionTime\":\"2026-11-26T10:00:00Z\"}]}");
    assert_int_equal(g->complete, 0); /* False is not complete */
    assert_int_equal(g->loss, TG_PGLOSS_KEPT);
    tg_podgroup_free(&g);
    g = pg_of("{\"conditions\":[{\"type\":\"MemberLoss\",\"status\":\"True\",\"reason\":\"Evicted\"}]}");
    assert_int_equal(g->loss, TG_PGLOSS_EVICTED);
    assert_int_equal(g->loss_since_ms, 0); /* no time: the reader's own clock */
    tg_podgroup_free(&g);
}

static struct tg_pod *pod_of(const char *status)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u\"},"
             "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\"}]},\"status\":%s}",
             status);
    cJSON *j = cJSON_Parse(text);
    struct tg_diag d = {quiet, NULL, 0, 0};
    struct tg_pod *p = NULL;
    assert_int_equal(tg_pod_decode(j, 0, &d, &p), 0);
    cJSON_Delete(j);
    return p;
}

static void pod_started(void **state)
{
    (void)state;
    struct tg_pod *p = pod_of("{\"phase\":\"Pending\"}");
    assert_int_equal(p->started, 0); /* bound, no kubelet took it yet */
    tg_pod_free(&p);
    p = pod_of("{\"phase\":\"Pending\",\"startTime\":\"2026-11-26T10:00:00Z\"}");
    assert_int_equal(p->started, 1); /* a kubelet took it (pulling images) */
    tg_pod_free(&p);
    p = pod_of("{\"phase\":\"Running\"}");
    assert_int_equal(p->started, 1);
    tg_pod_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classify_from_the_record), cmocka_unit_test(grace_then_policy),
        cmocka_unit_test(policy_keys), cmocka_unit_test(records_decoded),
        cmocka_unit_test(pod_started),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
