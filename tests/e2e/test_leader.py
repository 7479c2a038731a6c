#!/usr/bin/env python3
"""One leader binds, ever: leader election on the real etcd + kube-apiserver
(scripts/cluster-up; 32 fake nodes of 8 GPUs), two scheduler replicas, each
behind its own fault proxy (tests/e2e/harness.py) that only records every
write it relays and its answer. Lease duration 4 s (renew deadline 2.67 s).

  stopped_leader_mid_bind: a gang of 240 one-GPU pods; the policy's
    api.qps 20 makes the leader bind for ~12 s, its Bindings queued behind
    the token bucket (its Lease renewals must not wait behind them: no
    takeover while it binds). Once 120 are bound the leader is SIGSTOPped;
    the standby must take over (the record unchanged for a lease duration)
    and complete the half-bound gang; the old leader is SIGCONTed 6 s after
    the stop. Then: every pod bound exactly once (one successful Binding per
    pod over both proxies), no node over-committed, no member deleted, no
    Binding, delete or status patch of the old leader reached the API server
    after it was resumed, and its log says it stood down.

  skew_leader_fast, skew_leader_slow: the leader's wall clock shifted +30 s
    and the standby's -30 s (TOPOGANG_TEST_CLOCK_OFFSET), then the other way
    round. The healthy leader keeps the Lease for 16 s (4 lease durations;
    the standby never leads), the renewTime it writes shows its shifted clock,
    and when it is SIGKILLed the standby takes over within 2 lease durations
    + 2 s: expiry is judged on each process's monotonic clock, never by
    comparing renewTime with the local wall clock (which took over a leader
    whose clock ran 30 s slow at once, and waited 60 s more for one whose
    clock ran fast).

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import calendar
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (run_cases, fail, wait as harness_wait, http_get, FaultProxy, PodWatch, Scheduler, gang_pod, log, make_namespace, podgroup)  # noqa: E402

LEASE_S = 4



def wait(pred, timeout, what):
    return harness_wait(pred, timeout, what, step=0.1)


def replica(ctx, name, lease, env=None):
    """A scheduler replica campaigning for Lease topogang-system/<lease>,
    behind its own recording proxy."""
    px = FaultProxy(ctx["cluster"], ctx["work"])
    ctx["proxies"].append(px)
    s = Scheduler(ctx["bin"], ctx["cluster"], name, ctx["work"], ctx["policy"], leader_elect=True,
                  env=env, kubeconfig=px.kubeconfig(), identity=name,
                  extra=["--lease", f"topogang-system/{lease}", "--lease-duration", str(LEASE_S)])
    ctx["scheds"].append(s)
    return px, s


def log_text(s):
    return open(s.log, errors="replace").read()


def leader_only(method, path):
    """A write only the lease holder may make (not the Lease, not an Event)."""
    p = path.split("?")[0]
    return ((method == "POST" and p.endswith("/binding")) or method == "DELETE" or
            (method == "PATCH" and p.endswith("/status")))


def case_stopped_leader_mid_bind(ctx):
    api, ns, gang, n = ctx["api"], "stopmid", "big", 240
    make_namespace(api, ns)
    watch = PodWatch(api, ns, ctx["alloc"])
    watch.start()
    watch.synced.wait(10)
    pa, a = replica(ctx, "stop-a", "stop-lease")
    if not wait(lambda: a.is_leader(), 30, "stop-a leads"):
        return
    pb, b = replica(ctx, "stop-b", "stop-lease")
    b.wait_ready()
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", podgroup(ns, gang, n))
    for i in range(n):
        api.create_pod(ns, gang_pod(ns, f"{gang}-{i}", gang, 1))
    # half the gang: 6 s of binding at qps 20 with the rest queued behind the
    # bucket, longer than the lease: renewals that waited there would lose it
    if not wait(lambda: watch.bound_of(gang) >= n // 2, 90, f"{n // 2} members bound by stop-a"):
        return
    if not a.is_leader() or b.is_leader():
        fail("the leadership moved while stop-a was binding: its renewals waited behind its binds")
    if "stood down" in log_text(a):
        fail("stop-a stood down while binding, before it was stopped")
    t_stop = time.time()
    a.proc.send_signal(signal.SIGSTOP)
    at_stop = watch.bound_of(gang)
    log(f"    stop-a SIGSTOPped with {at_stop} of {n} bound")
    if at_stop >= n:
        fail("the gang was bound before the SIGSTOP: not mid-bind")
    took = wait(lambda: b.is_leader(), 30, "stop-b takes over")
    t_take = time.time()
    log(f"    stop-b leads {t_take - t_stop:.1f} s after the SIGSTOP")
    if took and t_take - t_stop < LEASE_S - 1:
        fail(f"stop-b took over {t_take - t_stop:.1f} s after the stop: sooner than the lease")
    time.sleep(max(0.0, t_stop + LEASE_S + 2 - time.time()))
    t_cont = time.time()
    a.proc.send_signal(signal.SIGCONT)
    wait(lambda: watch.bound_of(gang) == n, 120, f"all {n} members bound")
    time.sleep(3)  # anything late of stop-a's lands by now
    with watch.lock:
        violations = list(watch.violations)
        deletes = list(watch.sched_deletes)
    for v in violations:
        fail(v)
    if deletes:
        fail(f"{len(deletes)} member(s) deleted, e.g. {deletes[:3]}")
    ok = {}
    for who, px in (("stop-a", pa), ("stop-b", pb)):
        for t, m, p, st in px.writes():
            if m == "POST" and p.split("?")[0].endswith("/binding") and st == 201:
                ok.setdefault(p.split("/")[-2], []).append(who)
    twice = {k: v for k, v in ok.items() if len(v) > 1}
    if twice:
        fail(f"{len(twice)} pod(s) bound twice, e.g. {list(twice.items())[:3]}")
    if len(ok) != n:
        fail(f"{len(ok)} pods had a successful Binding, expected {n}")
    late = [(round(t - t_cont, 2), m, p, st) for t, m, p, st in pa.writes()
            if t > t_cont and leader_only(m, p)]
    if late:
        fail(f"{len(late)} write(s) of stop-a reached the API server after it resumed, e.g. {late[:3]}")
    a_binds = sum(1 for v in ok.values() if v == ["stop-a"])
    conflicts = sum(1 for px in (pa, pb) for t, m, p, st in px.writes()
                    if p.split("?")[0].endswith("/binding") and st == 409)
    log(f"    bound by stop-a {a_binds}, by stop-b {len(ok) - a_binds}; Binding conflicts (409) {conflicts}")
    if conflicts:
        fail(f"{conflicts} Binding(s) answered 409 (already assigned)")
    if wait(lambda: "stood down" in log_text(a), 10, "stop-a's log saying it stood down"):
        for line in log_text(a).splitlines():
            if "stood down" in line:
                log(f"    stop-a: {line}")
    fenced = []
    if wait(lambda: fenced.append(metric(a, "topogang_fenced_writes")) or (fenced[-1] or 0) >= 1, 10,
            "stop-a's topogang_fenced_writes >= 1 (its queued Bindings dropped)"):
        log(f"    stop-a: topogang_fenced_writes {fenced[-1]}")
    if not a.alive():
        fail(f"stop-a exited {a.proc.returncode} after SIGCONT (see {a.log})")
    elif a.is_leader():
        fail("stop-a says it leads after it was resumed")
    for s in (a, b):
        s.finish(killed_ok=True)
    watch.stopping = True
    for p in api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]:
        api.delete_pod(ns, p["metadata"]["name"])


def metric(s, name):
    """The value of an unlabelled series on s's /metrics (None: unread)."""
    st, body = http_get(s.port, "/metrics")
    for line in (body or "").splitlines() if st == 200 else []:
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def lease_renew_offset(api, lease):
    """renewTime of the Lease minus this machine's clock, in seconds (None: unset)."""
    st, doc = api.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/topogang-system/leases/{lease}")
    rt = (doc or {}).get("spec", {}).get("renewTime") if st == 200 else None
    if not rt:
        return None
    secs = calendar.timegm(time.strptime(rt[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + rt[19:].rstrip("Z"))
    return secs - time.time()


def skew(ctx, tag, off_a, off_b):
    lease = f"skew-{tag}"
    pa, a = replica(ctx, f"{tag}-a", lease, env={"TOPOGANG_TEST_CLOCK_OFFSET": off_a})
    if not wait(lambda: a.is_leader(), 30, f"{tag}-a leads"):
        return
    pb, b = replica(ctx, f"{tag}-b", lease, env={"TOPOGANG_TEST_CLOCK_OFFSET": off_b})
    b.wait_ready()
    shift = lease_renew_offset(ctx["api"], lease)
    want = int(off_a.rstrip("s"))
    if shift is None or abs(shift - want) > 5:
        fail(f"{tag}-a's renewTime is {shift} s off this machine's clock, expected about {want}: "
             "the clock offset did not apply")
    end = time.time() + 4 * LEASE_S
    while time.time() < end:
        if b.is_leader() or not a.is_leader():
            fail(f"the healthy leader {tag}-a lost the Lease to {tag}-b (wall clocks {off_a} and {off_b})")
            break
        time.sleep(0.25)
    if "is now the leader" in log_text(b):
        fail(f"{tag}-b led at some point while {tag}-a renewed")
    t = time.time()
    a.kill()
    if wait(lambda: b.is_leader(), 2 * LEASE_S + 10, f"{tag}-b takes over after {tag}-a is killed"):
        took = time.time() - t
        log(f"    {tag}-b leads {took:.1f} s after {tag}-a was killed")
        if took > 2 * LEASE_S + 2:
            fail(f"{tag}-b took {took:.1f} s to take over, more than 2 lease durations + 2 s")
    b.finish(killed_ok=True)
    rep = a.sanitizer_report()
    if rep:
        fail(f"{a.name}: sanitizer report:\n{rep}")


def case_skew_leader_fast(ctx):
    skew(ctx, "fast", "+30s", "-30s")


def case_skew_leader_slow(ctx):
    skew(ctx, "slow", "-30s", "+30s")


CASES = [case_stopped_leader_mid_bind, case_skew_leader_fast, case_skew_leader_slow]


def main():
    return run_cases("leader", CASES, "api: {qps: 20, burst: 20}\ngang: {reserveAfterSeconds: 0}\npreemption: {enabled: false}\n",
                     nodes=32, rack_size=4, blocks=2)


if __name__ == "__main__":
    sys.exit(main())
