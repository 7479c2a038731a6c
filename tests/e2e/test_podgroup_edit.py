#!/usr/bin/env python3
"""An edit of a topogang.io PodGroup's spec wakes its waiting gang, on the
real etcd + kube-apiserver (scripts/cluster-up; 8 fake nodes of 8 GPUs, two
racks of 4):

  subgroup_edit_wakes: PodGroup sg (minMember 6, spec.subGroupSize 6, each
    sub-group in one rack) with 6 pods of 8 GPUs never fits a rack of 4
    nodes: its Scheduled condition says why and nothing is bound. The
    PodGroup's spec is patched to subGroupSize 3 (only the sub-group shape
    moves: metadata.generation does, minMember does not): all 6 are bound
    within 10 s (a wake, not the unschedulable pool's 60 s flush), 3 in
    each rack. Its status writes before the patch left metadata.generation
    at 1 (the CRD's status subresource), which is what the engine compares.

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (run_cases, fail, log, wait, wipe_pods, Scheduler, gang_pod, make_namespace,  # noqa: E402
                     podgroup)

RACK = "topogang.io/rack"
RANK = "topogang.io/rank"


def bound(api, ns):
    return {p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")}


def scheduled_message(api, ns, name):
    st = ((api.podgroup(ns, name) or {}).get("status") or {})
    c = next((c for c in st.get("conditions") or [] if c.get("type") == "Scheduled"), None)
    return (c or {}).get("message", "")


def case_subgroup_edit_wakes(ctx):
    api, ns = ctx["api"], "pg-edit"
    make_namespace(api, ns)
    s = Scheduler(ctx["bin"], ctx["cluster"], "pg-edit", ctx["work"], ctx["policy"])
    ctx["scheds"].append(s)
    s.wait_ready()
    pg = podgroup(ns, "sg", 6)
    pg["spec"]["subGroupSize"] = 6
    pg["spec"]["subGroupTopology"] = {"required": "rack"}
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", pg)
    for i in range(6):
        pod = gang_pod(ns, f"sg-{i}", "sg", 8)
        pod["metadata"]["labels"][RANK] = str(i)
        api.create_pod(ns, pod)
    if not wait(lambda: scheduled_message(api, ns, "sg") != "", 30, "sg's Scheduled condition written"):
        return
    time.sleep(2)
    if bound(api, ns):
        fail(f"bound before the edit: {bound(api, ns)}")
    log(f"    before the edit: {scheduled_message(api, ns, 'sg')}")
    gen = (api.podgroup(ns, "sg") or {}).get("metadata", {}).get("generation")
    if gen != 1:
        fail(f"metadata.generation {gen} after the scheduler's status writes; expected 1")
    t0 = time.time()
    st, doc = api.request("PATCH", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups/sg",
                          {"spec": {"subGroupSize": 3}}, ctype="application/merge-patch+json")
    if st != 200:
        fail(f"patch spec.subGroupSize: HTTP {st} {doc}")
        return
    if wait(lambda: len(bound(api, ns)) == 6, 10, "sg's 6 pods bound within 10 s of the edit"):
        log(f"    bound {time.time() - t0:.1f} s after the edit")
        rk = {n["metadata"]["name"]: n["metadata"].get("labels", {}).get(RACK)
              for n in api.must("GET", "/api/v1/nodes")["items"]}
        b = bound(api, ns)
        for lo in (0, 3):
            racks = {rk[b[f"sg-{i}"]] for i in range(lo, lo + 3)}
            if len(racks) != 1:
                fail(f"sub-group of ranks {lo}..{lo + 2} spans racks {sorted(racks)}: {b}")
    s.finish()
    wipe_pods(api, ns)


CASES = [case_subgroup_edit_wakes]


def main():
    return run_cases("podgroup_edit", CASES, "gang: {reserveAfterSeconds: 0}\npreemption: {enabled: false}\n",
                     nodes=8, rack_size=4, blocks=1)


if __name__ == "__main__":
    sys.exit(main())
