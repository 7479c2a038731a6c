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

  lost_bind_answer_is_found: the API server binds a member but its answer
    is lost (a fault proxy closes the connection): the binder asks again a
    second later, hears 409 "already assigned to node N" with N the node it
    asked for, and takes it as bound; the gang completes with no rollback.

  resent_bind_hears_409: a member's Binding lands and reaches the API
    server a second time (an HTTP library sending it again on a fresh
    connection after the first answer was lost): the only answer the binder
    hears is 409 "already assigned to node N" with N its node; that is bound,
    and the gang completes with no rollback.

  sigterm_sends_the_last_status: PodGroup status patches are held in the
    proxy; the gang binds and the scheduler gets SIGTERM at once; the held
    patch is let go 2 s later: the scheduler must still be there to see it
    answered and send the status it queued behind it (Scheduled, 2 bound),
    then exit 0. A scheduler that left with its binds would leave the status
    at Pending/Scheduling for good.

  late_bind_answer_still_reported: a pod of no PodGroup (a gang of one)
    is bound, and the answer reaches the scheduler 2 s after its watch has
    shown the pod bound (so the gang has nothing pending and its record may
    be gone): the pod still gets its Scheduled Event.

  unanswered_binds_keep_their_room: one member's bind lands unanswered and
    its retries find no server for 4 s, while the scheduler's watch of bound
    pods is stalled (it cannot see the bind landed); a pod arriving then
    must not be given that member's room (the node would hold 16 GPUs of 8);
    the gang completes once the server answers again.

  direct_writes_survive_apiserver_restart: 300 pods bound with their
    Scheduled Events on the direct HTTP/2 write path; kube-apiserver killed
    after 30 binds and restarted: all bound once, one Event each.

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (run_cases, wipe_pods, fail, wait, log, Scheduler, gang_pod, make_namespace, podgroup)  # noqa: E402





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


def scheduler_via_proxy(ctx, name):
    from harness import FaultProxy
    px = FaultProxy(ctx["cluster"], ctx["work"])
    ctx["proxies"].append(px)
    s = Scheduler(ctx["bin"], ctx["cluster"], name, ctx["work"], ctx["policy"],
                  kubeconfig=px.kubeconfig())
    ctx["scheds"].append(s)
    s.wait_ready()
    return px, s


def watched_namespace(api, ns, alloc):
    """Makes namespace ns and returns a started, synced PodWatch of it."""
    from harness import PodWatch
    make_namespace(api, ns)
    watch = PodWatch(api, ns, alloc)
    watch.start()
    watch.synced.wait(10)
    return watch


def gang_of_two_completes(ctx, ns, gang, fault, seen, what):
    """A gang of two through a fault proxy on which fault(px) set a fault on
    the Binding of gang-0: both members are bound, the proxy noted `seen`,
    and nothing was rolled back."""
    api = ctx["api"]
    watch = watched_namespace(api, ns, ctx["alloc"])
    px, s = scheduler_via_proxy(ctx, ns)
    fault(px)
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, gang, 2, "rack"))
    for i in range(2):
        api.create_pod(ns, gang_pod(ns, f"{gang}-{i}", gang, 8))
    wait(lambda: watch.bound_of(gang) == 2, 20, "both members bound")
    time.sleep(2)
    if not px.events(seen):
        fail(f"the proxy never {what}")
    if watch.sched_deletes:
        fail(f"members deleted (a rollback): {watch.sched_deletes}")
    if rolled_back_events(api, ns, gang):
        fail(f"RolledBack Events: {rolled_back_events(api, ns, gang)}")
    if watch.binds != 2:
        fail(f"{watch.binds} binds seen, expected 2")
    s.finish()
    watch.stopping = True
    wipe_pods(api, ns, wait_empty=False)


def case_lost_bind_answer_is_found(ctx):
    gang_of_two_completes(ctx, "lost", "amb", lambda px: px.drop_answer("amb-0"), "answer dropped",
                          "dropped amb-0's answer")


def case_resent_bind_hears_409(ctx):
    gang_of_two_completes(ctx, "resent", "dup", lambda px: px.answer_twice("dup-0"), "sent twice",
                          "sent dup-0's Binding twice")


def case_sigterm_sends_the_last_status(ctx):
    import signal
    api, ns = ctx["api"], "lastword"
    watch = watched_namespace(api, ns, ctx["alloc"])
    px, s = scheduler_via_proxy(ctx, "lastword")
    px.hold_status(True)
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, "lw", 2, "rack"))
    for i in range(2):
        api.create_pod(ns, gang_pod(ns, f"lw-{i}", "lw", 8))
    wait(lambda: watch.bound_of("lw") == 2, 20, "both members bound")
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(2)
    if not s.alive():
        fail(f"the scheduler exited ({s.proc.returncode}) with a status patch unanswered")
    if not px.events("status held"):
        fail("no status patch was held")
    px.hold_status(False)
    try:
        rc = s.proc.wait(15)
    except Exception:
        rc = None
    if rc != 0:
        fail(f"the scheduler exited {rc} after SIGTERM (see {s.log})")
    if px.events("status dropped"):
        fail("a held status patch's client had gone when it was let go")
    st = (api.podgroup(ns, "lw") or {}).get("status") or {}
    if st.get("phase") != "Scheduled" or st.get("scheduled") != 2:
        fail(f"PodGroup lw status after the shutdown: phase {st.get('phase')}, scheduled {st.get('scheduled')}; "
             "expected Scheduled, 2")
    rep = s.sanitizer_report()
    if rep:
        fail(f"sanitizer report:\n{rep}")
    watch.stopping = True
    wipe_pods(api, ns, wait_empty=False)


def case_late_bind_answer_still_reported(ctx):
    api, ns = ctx["api"], "lateans"
    watch = watched_namespace(api, ns, ctx["alloc"])
    px, s = scheduler_via_proxy(ctx, "lateans")
    px.slow_answer("solo", 2)
    solo = gang_pod(ns, "solo", None, 8)
    del solo["metadata"]["labels"]  # no PodGroup: a gang of one
    api.create_pod(ns, solo)
    wait(lambda: any(p["name"] == "solo" and p["node"] for p in watch.pods.values()), 20, "solo bound")
    evs = []
    end = time.time() + 10
    while time.time() < end and not evs:
        evs = [e for e in api.events(ns) if e.get("reason") == "Scheduled"
               and e.get("regarding", {}).get("name") == "solo"]
        time.sleep(0.3)
    if not px.events("answer delayed"):
        fail("the proxy never delayed solo's bind answer")
    if not evs:
        fail("no Scheduled Event for pod solo after its late bind answer")
    s.finish()
    watch.stopping = True
    wipe_pods(api, ns, wait_empty=False)


def case_refused_event_is_retried(ctx):
    """The Scheduled Event of a pod, refused twice with 503, is tried again
    (after 250 ms, then 500 ms) and written once."""
    api, ns = ctx["api"], "evretry"
    watch = watched_namespace(api, ns, ctx["alloc"])
    px, s = scheduler_via_proxy(ctx, "evretry")
    px.fail_events(2)
    solo = gang_pod(ns, "solo", None, 8)
    del solo["metadata"]["labels"]  # no PodGroup: a gang of one
    api.create_pod(ns, solo)
    wait(lambda: any(p["name"] == "solo" and p["node"] for p in watch.pods.values()), 20, "solo bound")
    evs = []
    end = time.time() + 10
    while time.time() < end and not evs:
        evs = [e for e in api.events(ns) if e.get("reason") == "Scheduled"
               and e.get("regarding", {}).get("name") == "solo"]
        time.sleep(0.3)
    refused = px.events("event refused")
    if len(refused) != 2:
        fail(f"the proxy refused {len(refused)} Event POST(s), expected 2")
    if len(evs) != 1:
        fail(f"{len(evs)} Scheduled Event(s) for pod solo after two 503s, expected 1 (retried)")
    s.finish()
    watch.stopping = True
    wipe_pods(api, ns, wait_empty=False)


def case_unanswered_binds_keep_their_room(ctx):
    api, ns = ctx["api"], "blind"
    watch = watched_namespace(api, ns, ctx["alloc"])
    free = ("gpu-00000", "gpu-00004")
    for n in sorted(ctx["alloc"]):
        if n not in free:  # the default scheduler's pods fill every other node
            p = gang_pod(ns, f"blk-{n}", None, 8)
            del p["metadata"]["labels"]
            p["spec"]["nodeName"] = n
            del p["spec"]["schedulerName"]
            api.create_pod(ns, p)
    px, s = scheduler_via_proxy(ctx, "blind")
    px.drop_answer("amb-0", 4)
    px.stall_bound(True)
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, "amb", 2))
    for i in range(2):
        api.create_pod(ns, gang_pod(ns, f"amb-{i}", "amb", 8))
    time.sleep(1.5)
    solo = gang_pod(ns, "solo", None, 8)
    del solo["metadata"]["labels"]
    api.create_pod(ns, solo)
    time.sleep(4)
    px.stall_bound(False)
    wait(lambda: watch.bound_of("amb") == 2, 20, "both members of amb bound")
    time.sleep(2)
    if not px.events("answer dropped") or not px.events("refused"):
        fail("the proxy did not drop amb-0's answer and refuse its retries")
    with watch.lock:
        v = list(watch.violations)
        solo_node = next((p["node"] for p in watch.pods.values() if p["name"] == "solo"), None)
    for x in v:
        fail(x)
    if solo_node:
        fail(f"solo bound to {solo_node}: the cluster had no room for it")
    if watch.sched_deletes:
        fail(f"members deleted (a rollback): {watch.sched_deletes}")
    s.finish()
    watch.stopping = True
    wipe_pods(api, ns, wait_empty=False)


def case_direct_writes_survive_apiserver_restart(ctx):
    """300 pods (no requests, gangs of one) bound with their Scheduled Events,
    the writes on the direct HTTP/2 path (informer/h2.c); kube-apiserver
    SIGKILLed after the first 30 binds and started again a second later:
    every pod bound once, none deleted, one Scheduled Event each, and the
    scheduler says its writes went on a direct connection."""
    api, ns, n = ctx["api"], "direct", 300
    watch = watched_namespace(api, ns, ctx["alloc"])
    for i in range(n):
        p = gang_pod(ns, f"d-{i:03d}", None, 0)
        del p["metadata"]["labels"]
        p["spec"]["containers"][0]["resources"] = {}
        api.create_pod(ns, p)
    s = Scheduler(ctx["bin"], ctx["cluster"], "direct", ctx["work"], ctx["policy"])
    ctx["scheds"].append(s)
    s.wait_ready()
    # a write on the direct connection the killed apiserver dropped must not
    # end the process by SIGPIPE (it did, now and then: exited -13)
    with open(f"/proc/{s.proc.pid}/status") as f:
        ign = int(next(l for l in f if l.startswith("SigIgn:")).split()[1], 16)
    if not ign & (1 << (signal.SIGPIPE - 1)):
        fail("the scheduler does not ignore SIGPIPE")
    wait(lambda: watch.binds >= 30, 60, "the first 30 binds")
    ctx["cluster"].apiserver_kill()
    at_kill = watch.binds
    time.sleep(1)
    ctx["cluster"].apiserver_start(api)
    wait(lambda: watch.binds >= n, 90, f"all {n} pods bound")
    names = []
    end = time.time() + 30
    while time.time() < end:
        names = [e.get("regarding", {}).get("name") for e in api.events(ns) if e.get("reason") == "Scheduled"]
        if len(set(names)) >= n:
            break
        time.sleep(0.5)
    log(f"    killed after {at_kill} of {n} binds; {watch.binds} bound, {len(names)} Scheduled Events")
    if watch.binds != n:
        fail(f"{watch.binds} binds seen, expected {n}")
    if len(set(names)) != n or len(names) != n:
        fail(f"{len(set(names))} pods with a Scheduled Event ({len(names)} Events), expected {n} (one each)")
    with watch.lock:
        for x in watch.violations:
            fail(x)
    if watch.sched_deletes:
        fail(f"pods deleted by the scheduler: {watch.sched_deletes[:5]}")
    if "on a direct HTTP/2 connection" not in open(s.log, errors="replace").read():
        fail("the scheduler never logged its direct HTTP/2 connection")
    s.finish()
    watch.stopping = True
    wipe_pods(api, ns, wait_empty=False)


CASES = [case_timeout_rolls_back_half_bound, case_lost_bind_answer_is_found,
         case_resent_bind_hears_409, case_sigterm_sends_the_last_status,
         case_late_bind_answer_still_reported, case_refused_event_is_retried,
         case_unanswered_binds_keep_their_room, case_direct_writes_survive_apiserver_restart]


def main():
    return run_cases("recovery", CASES, "gang: {reserveAfterSeconds: 0}\npreemption: {enabled: false}\n",
                     nodes=8, rack_size=4, blocks=1)


if __name__ == "__main__":
    sys.exit(main())
