#!/usr/bin/env python3
"""Elastic gangs (issue 20; scheduler/elastic.h) on the real etcd +
kube-apiserver (scripts/cluster-up; 8 fake nodes of 8 GPUs, two racks of 4):

  desired_size_bounds: admission refuses maxMember below minMember (the
    CRD's CEL rule); a PodGroup minMember 2, maxMember 3 (rack required)
    with 5 pods: 3 bound, in one rack, 2 left pending; the PodGroup stays
    phase Scheduled and its Scheduled condition says 2 members beyond
    maxMember 3 wait.

  grows_in_its_rack_when_room_frees: minMember 2 (rack required), 3 pods;
    pods of another scheduler fill all of rack 1 and two nodes of rack 0:
    2 bound in rack 0, 1 waits. A node of rack 1 frees: the third stays
    pending (its rack holds no room). A node of rack 0 frees: the third is
    bound there within 10 s (a wake, not the 60 s flush).

  extras_preempted_before_a_whole_gang: rack 0 holds elastic gang el
    (priority 20, minMember 2, 4 members bound), rack 1 gang w (priority 10,
    minMember 4, 4 bound). A gang of priority 100 needing 2 nodes of one rack
    evicts el's two newest members only (DisruptionTarget, deleted with their
    grace), never w, and is bound in rack 0; el keeps 2 members.

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (run_cases, blocker_pod, fail, log, wait, wipe_pods, Scheduler, gang_pod, make_namespace,  # noqa: E402
                     podgroup)

RACK = "topogang.io/rack"


def pods(api, ns):
    return api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]


def bound(api, ns, prefix):
    """{pod name: node} of the live pods named prefix-*, bound."""
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods(api, ns)
            if p["metadata"]["name"].startswith(prefix + "-") and p["spec"].get("nodeName")
            and not p["metadata"].get("deletionTimestamp")}


def racks(api):
    return {n["metadata"]["name"]: n["metadata"].get("labels", {}).get(RACK)
            for n in api.must("GET", "/api/v1/nodes")["items"]}


def by_rack(api):
    rk = racks(api)
    out = {}
    for n, r in sorted(rk.items()):
        out.setdefault(r, []).append(n)
    return [out[r] for r in sorted(out)]


def sched(ctx, name, policy=None):
    s = Scheduler(ctx["bin"], ctx["cluster"], name, ctx["work"], policy or ctx["policy"])
    ctx["scheds"].append(s)
    s.wait_ready()
    return s


def scheduled_condition(api, ns, name):
    st = ((api.podgroup(ns, name) or {}).get("status") or {})
    c = next((c for c in st.get("conditions") or [] if c.get("type") == "Scheduled"), None)
    return st.get("phase"), (c or {}).get("message", "")


def case_desired_size_bounds(ctx):
    api, ns = ctx["api"], "el-a"
    make_namespace(api, ns)
    s = sched(ctx, "el-a")
    bad = podgroup(ns, "bad", 2)
    bad["spec"]["maxMember"] = 1
    st, doc = api.request("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", bad)
    if st != 422 or "spec.maxMember must be at least spec.minMember" not in str(doc):
        fail(f"maxMember 1 < minMember 2 admitted or refused otherwise: HTTP {st} {doc}")
    pg = podgroup(ns, "el", 2, "rack")
    pg["spec"]["maxMember"] = 3
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", pg)
    for i in range(5):
        api.create_pod(ns, gang_pod(ns, f"el-{i}", "el", 8))
    wait(lambda: len(bound(api, ns, "el")) == 3, 30, "3 of el's 5 pods bound")
    time.sleep(2)  # decisions for the other two come and go
    b = bound(api, ns, "el")
    if len(b) != 3:
        fail(f"bound {sorted(b)}: expected exactly maxMember 3")
    rk = racks(api)
    if len({rk[n] for n in b.values()}) != 1:
        fail(f"el's members span racks: {b}")
    want = "2 member(s) beyond it wait"
    wait(lambda: want in scheduled_condition(api, ns, "el")[1], 20, f"the Scheduled condition says '{want}'")
    phase, msg = scheduled_condition(api, ns, "el")
    if phase != "Scheduled":
        fail(f"phase {phase} ({msg}); expected Scheduled while its extras wait")
    s.finish()
    wipe_pods(api, ns)


def case_grows_in_its_rack_when_room_frees(ctx):
    api, ns = ctx["api"], "el-b"
    make_namespace(api, ns)
    r0, r1 = by_rack(api)
    blk = {n: blocker_pod(api, ns, n) for n in r1 + r0[2:]}
    s = sched(ctx, "el-b")
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, "el", 2, "rack"))
    for i in range(3):
        api.create_pod(ns, gang_pod(ns, f"el-{i}", "el", 8))
    wait(lambda: len(bound(api, ns, "el")) == 2, 30, "2 of el's 3 pods bound in rack 0")
    api.delete_pod(ns, blk[r1[0]])
    time.sleep(4)
    b = bound(api, ns, "el")
    if len(b) != 2 or any(n not in r0 for n in b.values()):
        fail(f"el grew outside its rack once a node of the other rack freed: {b}")
    _, msg = scheduled_condition(api, ns, "el")
    if "elastic: 2 placed (minMember 2, desired 3); 1 wait for room" not in msg:
        fail(f"the Scheduled condition: '{msg}'; expected the elastic reason")
    t0 = time.time()
    api.delete_pod(ns, blk[r0[2]])
    if wait(lambda: len(bound(api, ns, "el")) == 3, 10, "el's third pod bound once rack 0 has room"):
        b = bound(api, ns, "el")
        third = [n for p, n in b.items() if n not in r0[:2]]
        if third != [r0[2]]:
            fail(f"the third went to {third}, not {r0[2]}")
        log(f"    grew {time.time() - t0:.1f} s after the room freed")
    s.finish()
    wipe_pods(api, ns)


def case_extras_preempted_before_a_whole_gang(ctx):
    api, ns = ctx["api"], "el-c"
    make_namespace(api, ns)
    for v in (10, 20, 100):
        api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": f"el-p{v}"}, "value": v})
    r0, r1 = by_rack(api)
    pol = os.path.join(ctx["work"], "preempt.yaml")
    with open(pol, "w") as f:
        f.write("gang: {reserveAfterSeconds: 0}\npreemption: {enabled: true, evictBarePods: true}\n")
    s = sched(ctx, "el-c", pol)
    for name, mn, prio, nodes in (("el", 2, 20, r0), ("w", 4, 10, r1)):
        pg = podgroup(ns, name, mn)
        pg["spec"]["priorityClassName"] = f"el-p{prio}"
        api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", pg)
        for i, n in enumerate(nodes):
            p = gang_pod(ns, f"{name}-{i}", name, 8)
            p["spec"]["nodeName"] = n
            p["spec"]["priorityClassName"] = f"el-p{prio}"
            api.create_pod(ns, p)
            time.sleep(1.1)  # creationTimestamp has 1 s resolution: el-3 is the newest
    wait(lambda: len(bound(api, ns, "el")) == 4 and len(bound(api, ns, "w")) == 4, 20, "el and w running")
    hi = podgroup(ns, "hi", 2, "rack")
    hi["spec"]["priorityClassName"] = "el-p100"
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", hi)
    for i in range(2):
        p = gang_pod(ns, f"hi-{i}", "hi", 8)
        p["spec"]["priorityClassName"] = "el-p100"
        api.create_pod(ns, p)
    if wait(lambda: len(bound(api, ns, "hi")) == 2, 30, "hi bound"):
        b = bound(api, ns, "hi")
        if any(n not in r0 for n in b.values()):
            fail(f"hi bound outside rack 0: {b}")
    left = sorted(bound(api, ns, "el"))
    if left != ["el-0", "el-1"]:
        fail(f"el's members left: {left}; expected el-0, el-1 (the two newest evicted)")
    if len(bound(api, ns, "w")) != 4:
        fail(f"w lost members: {sorted(bound(api, ns, 'w'))}")
    s.finish()
    wipe_pods(api, ns)


CASES = [case_desired_size_bounds, case_grows_in_its_rack_when_room_frees,
         case_extras_preempted_before_a_whole_gang]


def main():
    return run_cases("elastic", CASES, "gang: {reserveAfterSeconds: 0}\npreemption: {enabled: false}\n",
                     nodes=8, rack_size=4, blocks=1)


if __name__ == "__main__":
    sys.exit(main())
