#!/usr/bin/env python3
"""Running work is never harmed by the scheduler (issue 18), on the real
etcd + kube-apiserver (scripts/cluster-up; 32 fake nodes of 8 GPUs in racks
of 4). A gang's life is read from the API (scheduler/loss.h):

  restart_keeps_running_members: a gang of 3 (rack required) bound and
    Complete; the scheduler is killed, a member is lost (deleted) and its
    controller's replacement comes while the only free node of the gang's
    rack is taken. A new scheduler must not delete the 2 members left (it
    used to roll them back at its first decision), must say MemberLoss
    (Event, condition), and once the node frees, place the replacement
    there, inside the gang's rack (MembersReplaced, the condition gone).

  keep_after_grace_across_restart: memberLossGraceSeconds 6, onMemberLoss
    keep, the PodGroup's scheduleTimeoutSeconds 2 (past which the old code
    rolled a short gang back): no room for the replacement; the scheduler
    is restarted in the middle of the grace. The members stay through the
    grace, which the new process counts from the MemberLoss condition's
    time; then MemberLossKept and the condition's reason KeptRunning, the
    members still there.

  evict_after_grace_is_graceful: onMemberLoss evict, grace 4 s: once the
    grace is over, every member is deleted with its own grace period
    (deletionGracePeriodSeconds 30: Terminating, not gone), Event
    MemberLossEvicted, condition reason Evicted.

  half_bound_still_rolled_back: a gang found with 2 of 4 members bound and
    never Complete (a scheduler killed mid-bind) whose rest does not fit:
    rolled back at the first decision, as before; the member that never ran
    is deleted at once (grace 0), the one that ran (status.startTime) with
    its own grace period.

  rollback_deletes_after_its_event: the same through the fault proxy, which
    holds the RolledBack Event 2 s: nothing deleted meanwhile; the deletes
    go after the Event's answer, at once (e2e_crash once saw a scheduler
    killed between a rollback's deletes and its Event).

  rollback_event_unanswered: the Event held on: the deletes go after 5 s
    all the same (TG__ROLLBACK_WAIT_MS), and the Event once let go.

  bind_429_storm: every Binding is answered 429 with Retry-After for 30 s
    (the fault proxy) while a 256-pod gang binds: no rollback, nothing
    deleted, every member bound after the storm.

  bind_429_others_flow: 4 Bindings of a 128-pod gang answered 429 with
    Retry-After 30 (the fault proxy): only those wait their Retry-After; the
    other 124 bind within 15 s of the first 429, and the scheduler's write
    window (topogang_api_write_window) is below the 64 binds it had in
    flight: the client's congestion window halved (informer/client.h).

  apf_throttles_writes: the scheduler as a ServiceAccount whose requests a
    real API Priority and Fairness FlowSchema puts in a priority level of 2
    seats (a ballast level takes the other shares) that rejects what it
    cannot run at once (429). 200 one-pod gangs: every pod bound within
    APF_BOUND_S, exactly one Scheduled Event per pod, none lost, and the
    apiserver really refused some (its
    apiserver_flowcontrol_rejected_requests_total for the level > 0).

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (run_cases, blocker_pod, wipe_pods, fail, wait, FaultProxy, PodWatch, Scheduler, gang_pod, http_get, log, make_namespace, podgroup, write_kubeconfig)  # noqa: E402

RACK = "topogang.io/rack"
# 200 one-pod gangs through an APF level of 2 seats: 400 writes (Bindings
# and Events) and the informer's lists. With the write windows they bound in
# 9-17 s on the 2-core machine under load (ASan and optimised builds); the
# binder that held every bind for each 429's Retry-After took 61 s here (and
# over 5 minutes at 1 seat). 40 s: 2.4x the slowest good run, below that.
APF_BOUND_S = 40
# Scheduled Events may trail the binds while throttled, none may be lost:
# with the windows the last came 0.3-0.5 s after the last bind; before, not
# all within 60 s
APF_EVENTS_S = 20




def pod(api, ns, name):
    st, doc = api.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    return doc if st == 200 else None


def condition(api, ns, name, ctype):
    st = ((api.podgroup(ns, name) or {}).get("status") or {})
    return next((c for c in st.get("conditions") or [] if c.get("type") == ctype), None)


def events(api, ns, name, reason):
    return [e for e in api.events(ns) if e.get("reason") == reason
            and e.get("regarding", {}).get("name") == name]


def parse_time(s):
    return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def racks(api):
    """{node: rack label value}."""
    return {n["metadata"]["name"]: n["metadata"].get("labels", {}).get(RACK)
            for n in api.must("GET", "/api/v1/nodes")["items"]}


def member(ns, name, group, grace=30):
    p = gang_pod(ns, name, group, 8)
    p["spec"]["terminationGracePeriodSeconds"] = grace
    return p


def sched(ctx, name, policy=None, kubeconfig=None):
    s = Scheduler(ctx["bin"], ctx["cluster"], name, ctx["work"], policy or ctx["policy"],
                  kubeconfig=kubeconfig)
    ctx["scheds"].append(s)
    s.wait_ready()
    return s


def policy_file(ctx, name, gang="reserveAfterSeconds: 0"):
    path = os.path.join(ctx["work"], name)
    with open(path, "w") as f:
        f.write("gang: {%s}\npreemption: {enabled: false}\n" % gang)
    return path


def running_gang(ctx, s, ns, name, timeout_s=None):
    """A gang of 3 x 8 GPUs (rack required) bound by s and Complete. Returns
    (nodes of its members, the free node of its rack)."""
    api = ctx["api"]
    make_namespace(api, ns)
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups",
             podgroup(ns, name, 3, "rack", timeout_s=timeout_s))
    for i in range(3):
        api.create_pod(ns, member(ns, f"{name}-{i}", name))
    nodes = {}
    wait(lambda: all((pod(api, ns, f"{name}-{i}") or {}).get("spec", {}).get("nodeName") for i in range(3)),
         30, f"{name}: 3 members bound")
    for i in range(3):
        nodes[f"{name}-{i}"] = pod(api, ns, f"{name}-{i}")["spec"]["nodeName"]
    wait(lambda: (condition(api, ns, name, "Complete") or {}).get("status") == "True", 20,
         f"{name}: condition Complete True")
    rk = racks(api)
    rack = rk[nodes[f"{name}-0"]]
    free = sorted(n for n, r in rk.items() if r == rack and n not in nodes.values())
    if len(free) != 1:
        raise RuntimeError(f"expected one free node in rack {rack}, got {free}")
    return nodes, free[0]


def lose_member(ctx, ns, name, nodes, free):
    """The free node of the rack taken, member 1 lost with its node (the
    node taken too), its replacement created."""
    api = ctx["api"]
    blk = blocker_pod(api, ns, free)
    api.delete_pod(ns, f"{name}-1")  # its node failed: gone
    wait(lambda: pod(api, ns, f"{name}-1") is None, 10, f"{name}-1 gone")
    blocker_pod(api, ns, nodes[f"{name}-1"])
    api.create_pod(ns, member(ns, f"{name}-3", name))
    return blk


def alive_members(api, ns, names):
    """Names of the pods that exist and are not being deleted."""
    return [n for n in names if pod(api, ns, n) and not pod(api, ns, n)["metadata"].get("deletionTimestamp")]


def case_restart_keeps_running_members(ctx):
    api, ns, g = ctx["api"], "keep-a", "run"
    s1 = sched(ctx, "keep-a1")
    nodes, free = running_gang(ctx, s1, ns, g)
    s1.kill()
    blk = lose_member(ctx, ns, g, nodes, free)
    s2 = sched(ctx, "keep-a2")
    wait(lambda: events(api, ns, g, "MemberLoss"), 20, "a MemberLoss Event on PodGroup run")
    time.sleep(3)  # decisions for the replacement come and go
    left = alive_members(api, ns, [f"{g}-0", f"{g}-2"])
    if len(left) != 2:
        fail(f"members of the running gang deleted after the restart: alive {left} of run-0, run-2")
    c = condition(api, ns, g, "MemberLoss") or {}
    if c.get("status") != "True" or c.get("reason") != "WaitingForReplacements":
        fail(f"condition MemberLoss: {c}; expected True/WaitingForReplacements")
    api.delete_pod(ns, blk)
    wait(lambda: (pod(api, ns, f"{g}-3") or {}).get("spec", {}).get("nodeName"), 30, "the replacement bound")
    at = (pod(api, ns, f"{g}-3") or {}).get("spec", {}).get("nodeName")
    if at and at != free:
        fail(f"the replacement went to {at}, not {free}, the free node of the gang's rack")
    wait(lambda: condition(api, ns, g, "MemberLoss") is None, 20, "condition MemberLoss gone once whole")
    wait(lambda: events(api, ns, g, "MembersReplaced"), 20, "a MembersReplaced Event")
    if len(alive_members(api, ns, [f"{g}-0", f"{g}-2", f"{g}-3"])) != 3:
        fail("the gang is not whole (3 live members) after the replacement")
    s2.finish()
    wipe_pods(api, ns)


def case_keep_after_grace_across_restart(ctx):
    api, ns, g = ctx["api"], "keep-b", "run"
    pol = policy_file(ctx, "keep.yaml", "reserveAfterSeconds: 0, memberLossGraceSeconds: 6, onMemberLoss: keep")
    s1 = sched(ctx, "keep-b1", pol)
    nodes, free = running_gang(ctx, s1, ns, g, timeout_s=2)
    lose_member(ctx, ns, g, nodes, free)
    wait(lambda: (condition(api, ns, g, "MemberLoss") or {}).get("reason") == "WaitingForReplacements", 20,
         "condition MemberLoss WaitingForReplacements")
    since = parse_time((condition(api, ns, g, "MemberLoss") or {}).get("lastTransitionTime", "1970-01-01T00:00:00Z"))
    time.sleep(2)
    s1.kill()  # in the middle of the grace
    s2 = sched(ctx, "keep-b2", pol)
    while time.time() < since + 5:
        if len(alive_members(api, ns, [f"{g}-0", f"{g}-2"])) != 2:
            fail("a member deleted during the grace")
            break
        c = condition(api, ns, g, "MemberLoss") or {}
        if c.get("reason") != "WaitingForReplacements":
            fail(f"the grace ended early ({time.time() - since:.1f} s after the loss): {c}")
            break
        time.sleep(0.3)
    wait(lambda: (condition(api, ns, g, "MemberLoss") or {}).get("reason") == "KeptRunning", 20,
         "condition MemberLoss KeptRunning after the grace")
    wait(lambda: events(api, ns, g, "MemberLossKept"), 10, "a MemberLossKept Event")
    time.sleep(2)
    if len(alive_members(api, ns, [f"{g}-0", f"{g}-2"])) != 2:
        fail("members deleted although onMemberLoss is keep")
    if len(events(api, ns, g, "MemberLoss")) > 1:
        fail("the restarted scheduler announced the loss again (a second MemberLoss Event)")
    s2.finish()
    wipe_pods(api, ns)


def case_evict_after_grace_is_graceful(ctx):
    api, ns, g = ctx["api"], "evict-b", "run"
    pol = policy_file(ctx, "evict.yaml", "reserveAfterSeconds: 0, memberLossGraceSeconds: 4, onMemberLoss: evict")
    s = sched(ctx, "evict-b", pol)
    nodes, free = running_gang(ctx, s, ns, g, timeout_s=2)
    lose_member(ctx, ns, g, nodes, free)
    t0 = time.time()
    wait(lambda: not alive_members(api, ns, [f"{g}-0", f"{g}-2"]), 30, "the members evicted after the grace")
    if time.time() - t0 < 3:
        fail(f"evicted {time.time() - t0:.1f} s after the loss: the grace is 4 s")
    for n in (f"{g}-0", f"{g}-2"):
        p = pod(api, ns, n)
        if not p:
            fail(f"{n} gone at once: deleted with grace 0, not its own 30 s")
        elif p["metadata"].get("deletionGracePeriodSeconds") != 30:
            fail(f"{n} deletionGracePeriodSeconds {p['metadata'].get('deletionGracePeriodSeconds')}, expected 30")
    wait(lambda: (condition(api, ns, g, "MemberLoss") or {}).get("reason") == "Evicted", 10,
         "condition MemberLoss Evicted")
    wait(lambda: events(api, ns, g, "MemberLossEvicted"), 10, "a MemberLossEvicted Event")
    s.finish()
    wipe_pods(api, ns)


def half_bound_gang(ctx, ns, g, ran):
    """A gang of 4 (rack required) in namespace ns with 2 members bound (by a
    scheduler that died mid-bind), the rest of its rack taken; ran: g-1 ran
    (a kubelet took it)."""
    api = ctx["api"]
    make_namespace(api, ns)
    rk = racks(api)
    rack_nodes = sorted(n for n, r in rk.items() if r == rk["gpu-00000"])
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, g, 4, "rack"))
    for i in range(4):
        p = member(ns, f"{g}-{i}", g)
        if i < 2:
            p["spec"]["nodeName"] = rack_nodes[i]
        api.create_pod(ns, p)
    if ran:
        st, _ = api.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{g}-1/status",
                            {"status": {"phase": "Running", "startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}},
                            ctype="application/merge-patch+json")
        if st != 200:
            raise RuntimeError(f"patching {g}-1's status: HTTP {st}")
    for n in rack_nodes[2:]:
        blocker_pod(api, ns, n)


def case_half_bound_still_rolled_back(ctx):
    api, ns, g = ctx["api"], "half", "half"
    half_bound_gang(ctx, ns, g, ran=True)
    s = sched(ctx, "half")
    wait(lambda: pod(api, ns, f"{g}-0") is None, 20, "half-0 (never ran) deleted at once")
    wait(lambda: (pod(api, ns, f"{g}-1") or {}).get("metadata", {}).get("deletionTimestamp"), 20,
         "half-1 being deleted")
    p = pod(api, ns, f"{g}-1")
    if not p:
        fail("half-1 (it ran) gone at once: deleted with grace 0")
    elif p["metadata"].get("deletionGracePeriodSeconds") != 30:
        fail(f"half-1 deletionGracePeriodSeconds {p['metadata'].get('deletionGracePeriodSeconds')}, expected 30")
    wait(lambda: events(api, ns, g, "RolledBack"), 10, "a RolledBack Event")
    if events(api, ns, g, "MemberLoss"):
        fail("a half-bound gang taken for a running one (MemberLoss Event)")
    s.finish()
    wipe_pods(api, ns)


def rollback_event_held(ctx, ns, g, hold_s):
    """The half-bound gang of half_bound_still_rolled_back, scheduled
    through the fault proxy, which holds its RolledBack Event; fails when a
    member is deleted within hold_s of that. Returns (scheduler, proxy, the
    time the Event was held)."""
    api = ctx["api"]
    half_bound_gang(ctx, ns, g, ran=False)
    px = FaultProxy(ctx["cluster"], ctx["work"])
    ctx["proxies"].append(px)
    px.hold_events("RolledBack")
    s = sched(ctx, ns, kubeconfig=px.kubeconfig())
    wait(lambda: px.events("event held"), 20, "the RolledBack Event (held by the proxy)")
    t_held = time.time()
    time.sleep(hold_s)
    gone = [f"{g}-{i}" for i in range(2)
            if (pod(api, ns, f"{g}-{i}") or {"metadata": {"deletionTimestamp": "gone"}})["metadata"].get("deletionTimestamp")]
    if gone:
        fail(f"{gone} deleted within {hold_s} s of the RolledBack Event, unanswered")
    return s, px, t_held


def case_rollback_deletes_after_its_event(ctx):
    """The RolledBack Event held 2 s: no member is deleted meanwhile; the
    deletes follow its answer at once (not the TG__ROLLBACK_WAIT_MS bound
    of 5 s)."""
    api, ns, g = ctx["api"], "rbev", "rbev"
    s, px, t_held = rollback_event_held(ctx, ns, g, 2)
    t_release = time.time()
    px.hold_events(None)
    wait(lambda: pod(api, ns, f"{g}-0") is None, 20, f"{g}-0 deleted")
    t_gone = time.time()
    answered = [t for t, m, p, st in px.writes() if m == "POST" and "/events" in p and t >= t_release]
    deletes = [t for t, m, p, st in px.writes() if m == "DELETE" and f"/pods/{g}-" in p]
    log(f"    Event held 2 s; answered {min(answered, default=0) - t_release:.2f} s after release, "
        f"first delete {min(deletes, default=0) - t_release:.2f} s after, {g}-0 gone "
        f"{t_gone - t_held:.1f} s after the hold began")
    if not answered or not deletes or min(deletes) < min(answered):
        fail("a rollback delete went before its RolledBack Event was answered")
    if t_gone - t_held > 4.5:
        fail(f"{g}-0 deleted {t_gone - t_held:.1f} s after the hold began: not on the Event's answer")
    if not events(api, ns, g, "RolledBack"):
        fail("no RolledBack Event")
    s.finish()
    wipe_pods(api, ns)


def case_rollback_event_unanswered(ctx):
    """The RolledBack Event held on: the deletes go after the bound of 5 s
    (TG__ROLLBACK_WAIT_MS), not before 4 s, and the Event is written once
    let go."""
    api, ns, g = ctx["api"], "rbnone", "rbnone"
    s, px, t_held = rollback_event_held(ctx, ns, g, 4)
    wait(lambda: pod(api, ns, f"{g}-0") is None, 10, f"{g}-0 deleted with its Event unanswered")
    log(f"    {g}-0 gone {time.time() - t_held:.1f} s after the Event was held")
    px.hold_events(None)
    wait(lambda: events(api, ns, g, "RolledBack"), 10, "the RolledBack Event, let go")
    s.finish()
    wipe_pods(api, ns)


def case_bind_429_storm(ctx):
    api, ns, g, n = ctx["api"], "storm", "big", 256
    make_namespace(api, ns)
    watch = PodWatch(api, ns, ctx["alloc"])
    watch.start()
    watch.synced.wait(10)
    px = FaultProxy(ctx["cluster"], ctx["work"])
    ctx["proxies"].append(px)
    s = sched(ctx, "storm", kubeconfig=px.kubeconfig())
    px.throttle_binds(30, 2, after=16)
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, g, n))
    for i in range(n):
        p = gang_pod(ns, f"{g}-{i}", g, 1)
        api.create_pod(ns, p)
    wait(lambda: watch.bound_of(g) == n, 120, f"all {n} members bound")
    win = px.storm_window()
    if not win:
        fail("the storm never began")
    else:
        log(f"    storm {win[1] - win[0]:.0f} s; {len(px.events('throttled'))} Bindings answered 429; "
            f"all bound {time.time() - win[1]:.1f} s after it ended")
        with watch.lock:
            last = max((p["t_bound"] for p in watch.pods.values() if p["gang"] == g and p["t_bound"]), default=0)
        if last < win[1] - 1:
            fail("every member bound before the storm ended: the storm did not hit the gang's binds")
    if watch.sched_deletes:
        fail(f"members deleted (a rollback): {watch.sched_deletes[:3]}...")
    if events(api, ns, g, "RolledBack"):
        fail(f"RolledBack Events: {[e.get('note') for e in events(api, ns, g, 'RolledBack')]}")
    with watch.lock:
        for v in watch.violations:
            fail(v)
    s.finish()
    watch.stopping = True
    wipe_pods(api, ns)


def metric(s, name):
    """A metric of scheduler s's /metrics (its first sample), None when absent."""
    st, text = http_get(s.port, "/metrics")
    m = re.search(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M) if st == 200 else None
    return float(m.group(1)) if m else None


def case_bind_429_others_flow(ctx):
    """4 of a 128-pod gang's Bindings answered 429 with Retry-After 30: only
    those wait; the other 124 bind within half of it, at a reduced window."""
    api, ns, g, n, ra = ctx["api"], "flow", "wide", 128, 30
    make_namespace(api, ns)
    watch = PodWatch(api, ns, ctx["alloc"])
    watch.start()
    watch.synced.wait(10)
    px = FaultProxy(ctx["cluster"], ctx["work"])
    ctx["proxies"].append(px)
    s = sched(ctx, "flow", kubeconfig=px.kubeconfig())
    refused = [f"{g}-{i}" for i in (5, 40, 80, 120)]
    px.throttle_pods(refused, ra)
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, g, n))
    for i in range(n):
        api.create_pod(ns, gang_pod(ns, f"{g}-{i}", g, 1))
    wait(lambda: len(px.events("throttled")) == len(refused), 3 * ra, "the 4 Bindings answered 429")

    def bound_at():
        with watch.lock:
            return {p["name"]: p["t_bound"] for p in watch.pods.values() if p["gang"] == g and p["t_bound"]}
    wait(lambda: len(bound_at()) == n, 2 * ra, f"all {n} members bound")
    window = metric(s, "topogang_api_write_window")
    t429 = min(t for t, _, _, _ in px.events("throttled"))
    at = bound_at()
    others = max(t for k, t in at.items() if k not in refused)
    late = [at[k] - t429 for k in refused if k in at] or [float("nan")]
    if others - t429 > ra / 2:
        fail(f"the {n - len(refused)} others' last bind {others - t429:.1f} s after the first 429 "
             f"(Retry-After {ra} s): they waited for it too")
    log(f"    the others' last bind {others - t429:.1f} s after the first 429; the refused ones "
        f"{min(late):.1f}-{max(late):.1f} s after; "
        f"write window {window}")
    for k in refused:
        t = max(t for t, _, p, _ in px.events("throttled") if f"/pods/{k}/" in p)
        if k in at and at[k] < t + ra:
            fail(f"{k} bound {at[k] - t:.1f} s after its 429: before its Retry-After ({ra} s)")
    if window is None or not window < 64:
        fail(f"topogang_api_write_window {window} after the 429s: not below the 64 binds in flight")
    if watch.sched_deletes or events(api, ns, g, "RolledBack"):
        fail(f"a rollback: {watch.sched_deletes[:3]}")
    s.finish()
    watch.stopping = True
    wipe_pods(api, ns)


APF_LEVEL, APF_BALLAST, APF_SA, APF_SEATS = "tg-apf-tight", "tg-apf-ballast", "topogang-apf", 2
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"


def apf_server_seats(ctx):
    """The apiserver's concurrency limit: --max-requests-inflight plus
    --max-mutating-requests-inflight, read from cluster-up's start script."""
    text = open(os.path.join(ctx["cluster"].dir, "apiserver-start")).read()
    return sum(int(re.search(r"--%s=(\d+)" % f, text).group(1))
               for f in ("max-requests-inflight", "max-mutating-requests-inflight"))


def apf_setup(ctx):
    """A ServiceAccount (cluster-admin: the test's, not the chart's), its
    token in a kubeconfig, and a FlowSchema putting all its requests in a
    priority level of one share that rejects what it cannot run at once. A
    ballast level (no FlowSchema uses it) takes the shares that leave that
    level APF_SEATS seats of the server's limit: each level gets
    ceil(limit x its shares / all shares)."""
    api = ctx["api"]
    api.request("POST", "/api/v1/namespaces/default/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": APF_SA}})
    api.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": APF_SA},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": APF_SA, "namespace": "default"}]})
    shares = 0
    for pl in api.must("GET", f"{FC}/prioritylevelconfigurations")["items"]:
        spec = pl["spec"].get("limited") or pl["spec"].get("exempt") or {}
        shares += spec.get("nominalConcurrencyShares", 0)
    # 1 share of (limit / (APF_SEATS - 0.5)) in all: ceil gives APF_SEATS seats
    ballast = int(apf_server_seats(ctx) / (APF_SEATS - 0.5)) - shares - 1
    for name, share in ((APF_LEVEL, 1), (APF_BALLAST, ballast)):
        api.must("POST", f"{FC}/prioritylevelconfigurations", {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": share, "lendablePercent": 0,
                                                    "borrowingLimitPercent": 0,
                                                    "limitResponse": {"type": "Reject"}}}})
    api.must("POST", f"{FC}/flowschemas", {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": APF_LEVEL},
        "spec": {"priorityLevelConfiguration": {"name": APF_LEVEL}, "matchingPrecedence": 100,
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "ServiceAccount",
                                          "serviceAccount": {"name": APF_SA, "namespace": "default"}}],
                            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                               "clusterScope": True, "namespaces": ["*"]}],
                            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})
    wait(lambda: apf_metric(ctx, "apiserver_flowcontrol_nominal_limit_seats") == APF_SEATS, 30,
         f"priority level {APF_LEVEL} at {APF_SEATS} seats")
    tok = api.must("POST", f"/api/v1/namespaces/default/serviceaccounts/{APF_SA}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})["status"]["token"]
    c = ctx["cluster"]
    return write_kubeconfig(os.path.join(ctx["work"], "apf.kubeconfig"), c.server, tok,
                            os.path.join(c.dir, "ca.crt"))


def apf_teardown(ctx):
    api = ctx["api"]
    api.request("DELETE", f"{FC}/flowschemas/{APF_LEVEL}")
    for name in (APF_LEVEL, APF_BALLAST):
        api.request("DELETE", f"{FC}/prioritylevelconfigurations/{name}")
    api.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{APF_SA}")
    api.request("DELETE", f"/api/v1/namespaces/default/serviceaccounts/{APF_SA}")


def apf_metric(ctx, name):
    """The apiserver's metric name for priority level APF_LEVEL (summed)."""
    c = ctx["cluster"]
    r = subprocess.run([c.kubectl, "--kubeconfig", c.kubeconfig, "get", "--raw", "/metrics"],
                       capture_output=True, text=True, check=False)
    return sum(float(m.group(1)) for m in re.finditer(
        r'^%s\{[^}]*priority_level="%s"[^}]*\} (\S+)$' % (name, APF_LEVEL), r.stdout, re.M))


def case_apf_throttles_writes(ctx):
    """200 one-pod gangs through a real APF level of 2 seats that rejects:
    all bound within APF_BOUND_S, one Scheduled Event each, and the
    apiserver really refused some of the scheduler's requests."""
    api, ns, n = ctx["api"], "apf", 200
    try:
        kubeconfig = apf_setup(ctx)
        make_namespace(api, ns)
        s = sched(ctx, "apf", kubeconfig=kubeconfig)
        t0 = time.time()
        for i in range(n):
            p = gang_pod(ns, f"p-{i}", "-", 1)
            del p["metadata"]["labels"]  # a gang of one each
            api.create_pod(ns, p)

        def bound():
            items = api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
            return sum(1 for p in items if p["spec"].get("nodeName"))
        if not wait(lambda: bound() == n, APF_BOUND_S, f"all {n} pods bound through the throttled "
                    f"priority level within {APF_BOUND_S} s"):
            log(f"    {bound()} of {n} bound; the apiserver refused "
                f"{apf_metric(ctx, 'apiserver_flowcontrol_rejected_requests_total'):.0f} requests")
            return
        t_bound = time.time() - t0
        per_pod = {}

        def scheduled_events():
            per_pod.clear()
            for e in api.events(ns):
                if e.get("reason") == "Scheduled":
                    k = e.get("regarding", {}).get("name")
                    per_pod[k] = per_pod.get(k, 0) + 1
            return len(per_pod) == n
        wait(scheduled_events, APF_EVENTS_S, f"a Scheduled Event for each of the {n} pods within "
             f"{APF_EVENTS_S} s of the last bind")
        twice = [k for k, v in per_pod.items() if v > 1]
        if twice:
            fail(f"{len(twice)} pod(s) with more than one Scheduled Event, e.g. {twice[:3]}")
        rejected = apf_metric(ctx, "apiserver_flowcontrol_rejected_requests_total")
        log(f"    {n} pods bound in {t_bound:.1f} s, Events {time.time() - t0:.1f} s; the apiserver "
            f"refused {rejected:.0f} of the scheduler's requests (429); the scheduler counted "
            f"{metric(s, 'topogang_api_throttled_total')}, write window {metric(s, 'topogang_api_write_window')}, "
            f"Event window {metric(s, 'topogang_api_event_window')}, "
            f"{metric(s, 'topogang_events_dropped_total')} Events dropped")
        if not rejected > 0:
            fail("the apiserver refused none of the scheduler's requests: the case tested no throttling")
        if "on a direct HTTP/2 connection" not in open(s.log, errors="replace").read():
            fail("the scheduler's writes never went on the direct HTTP/2 path (informer/h2.c)")
        # the direct path's counters on /metrics: writes answered there (a Binding
        # and an Event per pod, the first few through libcurl while it connects),
        # on a connection that came up
        wait(lambda: (metric(s, "topogang_api_direct_requests_total") or 0) >= n, 5,
             f"topogang_api_direct_requests_total >= {n}")
        direct = {k: metric(s, f"topogang_api_direct_{k}_total")
                  for k in ("requests", "connects", "failures")}
        log(f"    direct HTTP/2 path: {direct}")
        if None in direct.values() or direct["connects"] < 1:
            fail(f"the direct path's counters on /metrics: {direct}, want every one and connects >= 1")
        s.finish()
        wipe_pods(api, ns)
    finally:
        apf_teardown(ctx)


CASES = [case_restart_keeps_running_members, case_keep_after_grace_across_restart,
         case_evict_after_grace_is_graceful, case_half_bound_still_rolled_back, case_rollback_deletes_after_its_event,
         case_rollback_event_unanswered,
         case_bind_429_storm,
         case_bind_429_others_flow, case_apf_throttles_writes]


def main():
    return run_cases("running", CASES, "gang: {reserveAfterSeconds: 0}\npreemption: {enabled: false}\n",
                     nodes=32, rack_size=4, blocks=2)


if __name__ == "__main__":
    sys.exit(main())
