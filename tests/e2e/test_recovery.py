#!/usr/bin/env python3
"""Regression cases of the daemon's recovery paths, each made deterministic
on the real etcd + kube-apiserver (scripts/cluster-up; 8 fake nodes of 8 GPUs
in 2 racks of 4), for what test_crash.py found at random:

  timeout_rolls_back_half_bound: a gang found half-bound at start (2 of 4
    members bound, as a scheduler killed mid-bind leaves it) whose completion
    fails (a ValidatingAdmissionPolicy refuses one member's Binding) is left
    with 2 bound + 1 pending < minMember. Once its scheduleTimeoutSeconds has
    passed, its bound members must be deleted (RolledBack Event saying so),
    not left bound forever.

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Api, Cluster, Scheduler, Skip, gang_pod, log, make_namespace,  # noqa: E402
                     podgroup, setup_cluster)

failures = []


def fail(msg):
    log(f"    FAIL: {msg}")
    failures.append(msg)


def wait(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.2)
    fail(f"timed out after {timeout} s waiting for: {what}")
    return False


DENY_BIND = """apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deny-bind-%(pod)s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods/binding"]}]
  validations: [{expression: "object.metadata.name != '%(pod)s'", message: "binding of %(pod)s refused by the test"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-bind-%(pod)s}
spec: {policyName: deny-bind-%(pod)s, validationActions: [Deny], matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %(ns)s}}}}
"""


def pod_exists(api, ns, name):
    return api.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")[0] == 200


def rolled_back_events(api, ns, gang):
    return [e.get("note", "") for e in api.events(ns)
            if e.get("reason") == "RolledBack" and e.get("regarding", {}).get("name") == gang]


def case_timeout_rolls_back_half_bound(ctx):
    api, ns = ctx["api"], "rb-timeout"
    make_namespace(api, ns)
    ctx["cluster"].kubectl_apply(DENY_BIND % {"pod": "cut-3", "ns": ns}, text=True)
    time.sleep(2)  # the policy takes effect asynchronously
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups",
             podgroup(ns, "cut", 4, "rack", timeout_s=3))
    for i in range(4):
        p = gang_pod(ns, f"cut-{i}", "cut", 8)
        if i < 2:  # bound by a scheduler that died mid-bind
            p["spec"]["nodeName"] = f"gpu-0000{i}"
        api.create_pod(ns, p)
    s = Scheduler(ctx["bin"], ctx["cluster"], "timeout", ctx["work"], ctx["policy"])
    ctx["scheds"].append(s)
    s.wait_ready()
    # the completion binds cut-2 (and is refused cut-3): cut-2 is rolled back at once
    wait(lambda: not pod_exists(api, ns, "cut-2"), 20, "cut-2 (bound in the failed completion) deleted")
    # 2 bound + 1 pending < 4, past the 3 s timeout: the rest goes too
    wait(lambda: not pod_exists(api, ns, "cut-0") and not pod_exists(api, ns, "cut-1"), 30,
         "cut-0 and cut-1 deleted once the gang's timeout passed")
    wait(lambda: any("past its timeout" in n for n in rolled_back_events(api, ns, "cut")), 10,
         "a RolledBack Event saying the gang was incomplete past its timeout")
    if pod_exists(api, ns, "cut-3") and api.must("GET", f"/api/v1/namespaces/{ns}/pods/cut-3")["spec"].get("nodeName"):
        fail("cut-3 bound although its Binding is refused")
    if s.stop() != 0:
        fail(f"scheduler exited {s.proc.returncode} after SIGTERM (see {s.log})")
    rep = s.sanitizer_report()
    if rep:
        fail(f"sanitizer report:\n{rep}")
    subprocess_delete(ctx, "validatingadmissionpolicybinding", "deny-bind-cut-3")
    subprocess_delete(ctx, "validatingadmissionpolicy", "deny-bind-cut-3")
    api.delete_pod(ns, "cut-3")


def subprocess_delete(ctx, kind, name):
    import subprocess
    c = ctx["cluster"]
    subprocess.call([c.kubectl, "--kubeconfig", c.kubeconfig, "delete", kind, name],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


CASES = [case_timeout_rolls_back_half_bound]


def main():
    src = os.environ.get("TOPOGANG_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
    binary = os.environ.get("TOPOGANG_BIN") or os.path.join(src, "build/topogang")
    work = tempfile.mkdtemp(prefix="tg-e2e-recovery.")
    reuse = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        cluster = Cluster(src, work, reuse)
    except Skip as e:
        log(f"SKIP: {e}")
        return 77
    api = Api(cluster)
    policy = os.path.join(work, "policy.yaml")
    with open(policy, "w") as f:
        f.write("gang: {reserveAfterSeconds: 0}\npreemption: {enabled: false}\n")
    ctx = {"api": api, "cluster": cluster, "bin": binary, "work": work, "policy": policy, "scheds": []}
    passed = failed = 0
    try:
        setup_cluster(cluster, api, src, nodes=8, rack_size=4, blocks=1)
        for c in CASES:
            name = c.__name__[5:]
            log(f"[ RUN      ] {name}")
            before = len(failures)
            try:
                c(ctx)
            except Exception as e:  # noqa: BLE001
                fail(f"{type(e).__name__}: {e}")
            for s in ctx["scheds"]:
                s.kill()
            ctx["scheds"] = []
            if len(failures) == before:
                passed += 1
                log(f"[       OK ] {name}")
            else:
                failed += 1
                log(f"[  FAILED  ] {name}")
    finally:
        for s in ctx["scheds"]:
            s.kill()
        cluster.down()
    log(f"[==========] {passed + failed} test(s) run.")
    log(f"[  PASSED  ] {passed} test(s).")
    if failed:
        log(f"[  FAILED  ] {failed} test(s)")
        log(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
