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

  bind_429_storm: every Binding is answered 429 with Retry-After for 30 s
    (the fault proxy) while a 256-pod gang binds: no rollback, nothing
    deleted, every member bound after the storm.

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (run_cases, blocker_pod, wipe_pods, fail, wait, FaultProxy, PodWatch, Scheduler, gang_pod, log, make_namespace, podgroup)  # noqa: E402

RACK = "topogang.io/rack"




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


def case_half_bound_still_rolled_back(ctx):
    api, ns, g = ctx["api"], "half", "half"
    make_namespace(api, ns)
    rk = racks(api)
    rack_nodes = sorted(n for n, r in rk.items() if r == rk["gpu-00000"])
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, g, 4, "rack"))
    for i in range(4):
        p = member(ns, f"{g}-{i}", g)
        if i < 2:  # bound by a scheduler that died mid-bind
            p["spec"]["nodeName"] = rack_nodes[i]
        api.create_pod(ns, p)
    # half-1 ran: a kubelet took it
    st, _ = api.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{g}-1/status",
                        {"status": {"phase": "Running", "startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}},
                        ctype="application/merge-patch+json")
    if st != 200:
        raise RuntimeError(f"patching {g}-1's status: HTTP {st}")
    for n in rack_nodes[2:]:
        blocker_pod(api, ns, n)
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


CASES = [case_restart_keeps_running_members, case_keep_after_grace_across_restart,
         case_evict_after_grace_is_graceful, case_half_bound_still_rolled_back, case_bind_429_storm]


def main():
    return run_cases("running", CASES, "gang: {reserveAfterSeconds: 0}\npreemption: {enabled: false}\n",
                     nodes=32, rack_size=4, blocks=2)


if __name__ == "__main__":
    sys.exit(main())
