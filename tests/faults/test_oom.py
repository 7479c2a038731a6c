#!/usr/bin/env python3
"""Allocation failures in `topogang scheduler` on a real etcd + kube-apiserver
(scripts/cluster-up; 32 fake nodes of 8 GPUs, racks of 4).

The scheduler runs with tests/faults/libfailmalloc.so preloaded (the normal
optimised binary: ASan interposes malloc itself; under a sanitizer build the
test takes the sibling build/ tree, else SKIPs). Failures are injected on the
event loop's thread (informer, engine cycle, binder, reporter, API client;
the HTTP server thread that answers /healthz is spared) while gangs arrive,
bind and leave; then injection stops. Cases:
  each_site_once     every distinct call stack in topogang's own code fails
                     its first allocation (TG_FAILMALLOC sites=1,only=topogang)
  random_everywhere  1% of every allocation on the loop's thread fails, in
                     libcurl, OpenSSL, nghttp2, libuv and cJSON too
  exhausted          every allocation on the loop's thread fails for 2 s
Each checks: the daemon never exits nor crashes, /healthz and /readyz answer
200 throughout, and once failures stop every gang that fits is placed whole
(and its PodGroup says Scheduled) and the one that never fits is reported
(Unschedulable reason with numbers); no gang is left partly bound, no node
over-committed. Then one case per place where a failure used to leave a gang
stuck (the regression tests of what the cases above found): the first
allocation made under one function of the daemon fails (TG_FAILMALLOC
under=<its range, from nm>,times=1), and the gang must still be placed and
reported within 20 s:
  at_pending_set     tg_engine_pending_set (an informer event the engine
                     could not take: handed over again by the resync)
  at_bound_set       tg_engine_bound_set (a pod of another scheduler, filling
                     a node: its room must not be given to a gang meanwhile)
  at_cycle           decide, in scheduler/engine.c (a scheduling cycle: the
                     gang backs off and is tried again, not left for a
                     cluster change)
  at_binder          tg__binder_bind (binds that cannot start)
  at_status          tg_api_patch_podgroup_status, the gang's only status
                     write (its PodGroup made last): sent again, not lost
  at_socket          on_socket, informer/client.c, when kube-apiserver is
                     restarted and the client opens a new connection (the
                     socket libcurl gives cannot be watched: the client must
                     go on, not leave libcurl's multi handle dead) Prints the figures: allocations failed, sites reached and
failed (by source file, from the preloaded library's report symbolised with
addr2line), stuck gangs.

usage: test_oom.py [--seconds N] [--cluster DIR] [--keep] [--only CASE]"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import (Api, Cluster, PodWatch, Scheduler, Skip, gang_pod, http_get, log,  # noqa: E402
                     make_namespace, podgroup, setup_cluster)

CASES = {}  # the broad cases come with the fixes they need
SETTLE_S = 30           # after injection stops: a few backoffs and a placement
TARGETED = {
    "at_pending_set": "tg_engine_pending_set",
    "at_bound_set": "tg_engine_bound_set",
    "at_cycle": "decide",  # tg_engine_next's tail call: it has no frame of its own
    "at_binder": "tg__binder_bind",
    "at_status": "tg_api_patch_podgroup_status",
    "at_socket": "on_socket",
}


def func_range(binary, name):
    """(start, end) offsets of a function of the program, from nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True).stdout
    for ln in out.splitlines():
        f = ln.split()
        if len(f) == 4 and f[3] == name:
            a, n = int(f[0], 16), int(f[1], 16)
            return a, a + n
    raise RuntimeError(f"{name} not found in {binary} (nm)")


def sanitized(binary):
    try:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "libasan" in out or "libubsan" in out


def pick_binary(src):
    """The unsanitized topogang and its libfailmalloc.so, or (None, why)."""
    cands = [os.environ.get("TOPOGANG_OOM_BIN"), os.environ.get("TOPOGANG_BIN"),
             os.path.join(src, "build/topogang")]
    for b in cands:
        if not b or not os.path.exists(b) or sanitized(b):
            continue
        lib = os.environ.get("TOPOGANG_FAILMALLOC") or os.path.join(
            os.path.dirname(b), "tests/faults/libfailmalloc.so")
        if os.path.exists(lib):
            return b, lib
    return None, ("no unsanitized topogang with tests/faults/libfailmalloc.so beside it "
                  "(build/ or TOPOGANG_OOM_BIN); ASan interposes malloc itself")


class Oom:
    def __init__(self, a, src, work, binary, lib):
        self.a, self.src, self.work, self.bin, self.lib = a, src, work, binary, lib
        self.rng = random.Random(a.seed)
        self.figures = []

    def start(self):
        self.cluster = Cluster(self.src, self.work, self.a.cluster)
        self.api = Api(self.cluster)
        self.alloc = setup_cluster(self.cluster, self.api, self.src)
        self.policy = os.path.join(self.work, "policy.yaml")
        with open(self.policy, "w") as f:
            f.write("api: {bindConcurrency: 4}\ngang: {scheduleTimeoutSeconds: 600, reserveAfterSeconds: 0}\n"
                    "preemption: {enabled: false}\n")

    # ---- gangs ---------------------------------------------------------------------------------

    def gang(self, ns, name, size, gpus, required, min_member=None):
        self.api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups",
                      podgroup(ns, name, min_member or size, required))
        for i in range(size):
            self.api.create_pod(ns, gang_pod(ns, f"{name}-{i}", name, gpus))
        self.gangs[name] = (min_member or size, size)
        self.gpus[name] = gpus

    def random_gang(self, ns):
        self.seq += 1
        size = self.rng.randint(2, 8)
        self.gang(ns, f"g{self.seq:03d}", size, self.rng.choice([1, 2, 4]),
                  self.rng.choice(["rack", "block", None]))

    def reconcile(self, ns):
        """The controller's part: members the scheduler deleted (a rollback) come back."""
        for g, (mn, size) in list(self.gangs.items()):
            live = self.watch.live_of(g)
            for i in range(size - len(live)):
                self.recreated += 1
                self.api.create_pod(ns, gang_pod(ns, f"{g}-r{self.recreated}", g, self.gpus[g]))

    def drop_gang(self, ns, name):
        del self.gangs[name]
        self.api.request("DELETE", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups/{name}")
        for uid, pod in self.watch.uids_of(name):
            self.watch.deleting(uid)
            self.api.delete_pod(ns, pod, uid)

    # ---- one case --------------------------------------------------------------------------------

    def run_case(self, name, spec):
        ns = f"oom-{name.replace('_', '-')}"
        make_namespace(self.api, ns)
        self.gangs, self.gpus, self.seq, self.recreated, errors = {}, {}, 0, 0, []
        self.watch = PodWatch(self.api, ns, self.alloc)
        self.watch.start()
        self.watch.synced.wait(30)
        report = os.path.join(self.work, f"{name}.report")
        env = {"LD_PRELOAD": self.lib,
               "TG_FAILMALLOC": f"armed=0,report={report}," + spec.format(seed=self.a.seed)
               + (f",{self.a.spec}" if self.a.spec else "")}
        s = Scheduler(self.bin, self.cluster, name, self.work, self.policy, env=env)
        s.wait_ready()
        # one gang that never fits (5 whole nodes in a rack of 4), some that do
        self.gang(ns, "never", 5, 8, "rack")
        for _ in range(4):
            self.random_gang(ns)
        armed_s = 2 if name == "exhausted" else self.a.seconds
        s.proc.send_signal(signal.SIGUSR1)
        t_arm = time.time()
        probes = bad = 0
        next_wave = time.time()
        while time.time() - t_arm < armed_s:
            if not s.alive():
                errors.append(f"the daemon exited ({s.proc.returncode}) with failures injected; see {s.log}")
                break
            for path in ("/healthz", "/readyz"):
                st, text = http_get(s.port, path, timeout=5)
                probes += 1
                if st != 200:
                    bad += 1
                    errors.append(f"{path} answered {st} {text.strip()[:80]} while failures were injected")
            self.reconcile(ns)
            if time.time() >= next_wave:  # churn: a gang arrives, a placed one leaves
                next_wave = time.time() + 2
                self.random_gang(ns)
                done = [g for g, (mn, _) in self.gangs.items()
                        if g != "never" and self.watch.bound_of(g) >= mn]
                if len(done) > 3:
                    self.drop_gang(ns, self.rng.choice(done))
            time.sleep(0.25)
        if s.alive():
            s.proc.send_signal(signal.SIGUSR2)  # stop injecting, write the report
        t_stop = time.time()
        self.random_gang(ns)  # and one more after
        stuck = self.settle(ns, s, errors)
        settled = time.time() - t_stop
        if s.alive():
            for path in ("/healthz", "/readyz"):
                st, _ = http_get(s.port, path)
                if st != 200:
                    errors.append(f"{path} answered {st} after injection stopped")
            rc = s.stop()
            if rc != 0:
                errors.append(f"exit code {rc} after SIGTERM (see {s.log})")
        else:
            errors.append(f"the daemon died: exit {s.proc.returncode}; see {s.log}")
        with self.watch.lock:
            errors += self.watch.violations
        for g in list(self.gangs):  # room for the next case
            self.drop_gang(ns, g)
        self.watch.stopping = True
        fig = self.read_report(report)
        fig.update(case=name, probes=probes, bad_probes=bad, stuck=stuck, settle_s=settled,
                   gangs=self.seq + 1, binds=self.watch.binds, rollbacks=len(self.watch.sched_deletes))
        self.figures.append(fig)
        log(f"    {name}: {fig['failed']} allocation(s) failed of {fig['calls']} counted, "
            f"{fig['sites_failed']} site(s) failed of {fig['sites_reached']} reached; "
            f"{fig['gangs']} gangs, {fig['binds']} binds ({fig['rollbacks']} rolled back); "
            f"health probes {probes - bad}/{probes} ok; "
            f"stuck gangs {stuck}; settled {settled:.0f} s after injection stopped")
        for where, n in sorted(fig.get("by_file", {}).items(), key=lambda kv: -kv[1])[:12]:
            log(f"        {n:4d} site(s) in {where}")
        for e in errors:
            log(f"    ERROR: {e}")
        return not errors and stuck == 0 and fig["failed"] > 0

    def run_targeted(self, name, func):
        ns = f"oom-{name.replace('_', '-')}"
        make_namespace(self.api, ns)
        self.gangs, self.gpus, self.seq, self.recreated, errors = {}, {}, 0, 0, []
        self.watch = PodWatch(self.api, ns, self.alloc)
        self.watch.start()
        self.watch.synced.wait(30)
        lo, hi = func_range(self.bin, func)
        report = os.path.join(self.work, f"{name}.report")
        env = {"LD_PRELOAD": self.lib,
               "TG_FAILMALLOC": f"armed=0,report={report},from=1,times=1,under={lo:x}-{hi:x}"}
        blockers = []
        if name == "at_bound_set":  # every node full but two, before
            free = sorted(self.alloc)[:2]
            for n in sorted(self.alloc)[2:]:
                blockers.append(self.blocker(ns, n))
        s = Scheduler(self.bin, self.cluster, name, self.work, self.policy, env=env)
        s.wait_ready()
        s.proc.send_signal(signal.SIGUSR1)
        t0 = time.time()
        if name == "at_bound_set":
            blockers.append(self.blocker(ns, free[0]))  # its event is the one that fails
            time.sleep(3)
            self.gang(ns, "g001", 2, 8, None)  # fits only where the blocker sits
            time.sleep(8)
            if self.watch.bound_of("g001"):
                errors.append("g001 bound although the cluster has room for 1 of its 2 pods")
        else:
            if name == "at_status":  # the pods first: the PodGroup's arrival places them at once
                s.proc.send_signal(signal.SIGUSR2)
                for i in range(3):
                    self.api.create_pod(ns, gang_pod(ns, f"g001-{i}", "g001", 2))
                time.sleep(2)
                s.proc.send_signal(signal.SIGUSR1)
                self.api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups",
                              podgroup(ns, "g001", 3, "rack"))
                self.gangs["g001"], self.gpus["g001"] = (3, 3), 2
            elif name == "at_socket":  # the client's connection goes: a new socket comes
                self.cluster.apiserver_kill()
                time.sleep(1)
                self.cluster.apiserver_start(self.api)
                self.gang(ns, "g001", 3, 2, "rack")
            else:
                self.gang(ns, "g001", 3, 2, "rack")
            end = t0 + (40 if name == "at_socket" else 20)
            while time.time() < end:
                st = (self.api.podgroup(ns, "g001") or {}).get("status", {})
                if self.watch.bound_of("g001") == 3 and st.get("phase") == "Scheduled":
                    break
                time.sleep(0.5)
            st = (self.api.podgroup(ns, "g001") or {}).get("status", {})
            if self.watch.bound_of("g001") != 3 or st.get("phase") != "Scheduled":
                errors.append(f"g001 not placed and reported {end - t0:.0f} s after the failure: bound "
                              f"{self.watch.bound_of('g001')} of 3, status phase {st.get('phase')} "
                              f"'{(st.get('conditions') or [{}])[0].get('message', '')[:100]}'")
        if s.alive():
            s.proc.send_signal(signal.SIGUSR2)
            time.sleep(0.3)
            st, _ = http_get(s.port, "/healthz")
            if st != 200:
                errors.append(f"/healthz answered {st}")
            if s.stop() != 0:
                errors.append(f"exit code {s.proc.returncode} after SIGTERM (see {s.log})")
        else:
            errors.append(f"the daemon died: exit {s.proc.returncode}; see {s.log}")
        with self.watch.lock:
            errors += self.watch.violations
        fig = self.read_report(report)
        if fig["failed"] != 1:
            errors.append(f"{fig['failed']} allocation(s) failed under {func}, expected 1")
        for g in list(self.gangs):
            self.drop_gang(ns, g)
        for b in blockers:
            self.api.delete_pod(ns, b)
        self.watch.stopping = True
        where = ", ".join(fig.get("by_file", {})) or "-"
        log(f"    {name}: failed the first allocation under {func} ({where})")
        for e in errors:
            log(f"    ERROR: {e}")
        fig.update(case=name, stuck=0 if not errors else 1, gangs=1, binds=self.watch.binds,
                   probes=0, bad_probes=0, settle_s=0)
        self.figures.append(fig)
        return not errors

    def blocker(self, ns, node):
        """A pod of the default scheduler filling a node."""
        name = f"blk-{node}"
        p = gang_pod(ns, name, None, 8)
        del p["metadata"]["labels"]
        del p["spec"]["schedulerName"]
        p["spec"]["nodeName"] = node
        self.api.create_pod(ns, p)
        return name

    def settle(self, ns, s, errors):
        """Waits until every gang but 'never' is placed whole and says Scheduled,
        and 'never' is reported; returns the gangs still not there."""
        end = time.time() + self.a.settle
        while True:
            left = []
            for g, (mn, size) in self.gangs.items():
                b = self.watch.bound_of(g)
                pg = self.api.podgroup(ns, g) or {}
                st = pg.get("status", {})
                msg = (st.get("conditions") or [{}])[0].get("message", "")
                if g == "never":
                    if b or "needs 5 x nvidia.com/gpu=8 in one rack" not in msg:
                        left.append(f"{g}: bound {b}, status {st.get('phase')} '{msg[:100]}'")
                elif b < mn or st.get("phase") != "Scheduled" or st.get("scheduled", 0) < mn:
                    left.append(f"{g}: bound {b} of {mn}, status {st.get('phase')} "
                                f"scheduled {st.get('scheduled')} '{msg[:100]}'")
            if not left or time.time() > end or not s.alive():
                break
            self.reconcile(ns)
            time.sleep(1)
        for x in left:
            errors.append(f"not placed or not reported {self.a.settle} s after injection stopped: {x}")
        return len(left)

    def read_report(self, path):
        fig = {"calls": 0, "failed": 0, "sites_reached": 0, "sites_failed": 0, "by_file": {}}
        try:
            lines = open(path).read().splitlines()
        except OSError:
            return fig
        sites = []
        for ln in lines:
            k, _, v = ln.partition(" ")
            if k in fig:
                fig[k] = int(v)
            elif k == "site":
                sites.append(v.split()[2:])
        # symbolise the frames in topogang: the first one names the allocation site's file
        offs = sorted({f.split("+")[1] for fr in sites for f in fr if f.startswith(self.bin + "+")})
        names = {}
        if offs:
            out = subprocess.run(["addr2line", "-e", self.bin, "-f", "-s"] + offs,
                                 capture_output=True, text=True).stdout.splitlines()
            for i, off in enumerate(offs):
                fn = out[2 * i] if 2 * i < len(out) else "?"
                fl = out[2 * i + 1].split(":")[0] if 2 * i + 1 < len(out) else "?"
                names[off] = (fn, fl)
        for fr in sites:
            own = [names.get(f.split("+")[1]) for f in fr if f.startswith(self.bin + "+")]
            where = f"{own[0][1]} ({own[0][0]})" if own else \
                re.sub(r".*/", "", fr[0].split("+")[0]) if fr else "?"
            if own and any(fn in ("tg_engine_next", "tg__binder_bind", "on_bound", "tg__binder_pump")
                           for fn, _ in own):
                where += " [cycle/binder]"
            fig["by_file"][where] = fig["by_file"].get(where, 0) + 1
        return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=12, help="injection time per case")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--settle", type=int, default=SETTLE_S, help="seconds allowed after injection stops")
    ap.add_argument("--cluster", help="an existing scripts/cluster-up DIR")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--only", action="append", help="run only this case (repeatable)")
    ap.add_argument("--spec", help="TG_FAILMALLOC options added to every broad case, e.g. "
                                   "only=topogang:libcurl (exploring)")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    src = os.environ.get("TOPOGANG_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
    binary, lib = pick_binary(src)
    if not binary:
        log(f"SKIP: {lib}")
        return 77
    work = tempfile.mkdtemp(prefix="tg-faults-oom.")
    o = Oom(a, src, work, binary, lib)
    try:
        o.start()
    except Skip as e:
        log(f"SKIP: {e}")
        return 77
    log(f"    seed {a.seed}; {binary} with {lib}; work dir {work}")
    passed = failed = 0
    try:
        for name, spec in list(CASES.items()) + list(TARGETED.items()):
            if a.only and name not in a.only:
                continue
            log(f"[ RUN      ] oom_{name}")
            try:
                ok = o.run_case(name, spec) if name in CASES else o.run_targeted(name, spec)
            except Exception as e:  # noqa: BLE001
                log(f"    FAIL: {type(e).__name__}: {e}")
                ok = False
            if ok:
                passed += 1
                log(f"[       OK ] oom_{name}")
            else:
                failed += 1
                log(f"[  FAILED  ] oom_{name}")
    finally:
        o.cluster.down()
    tot = {k: sum(f[k] for f in o.figures) for k in ("failed", "sites_failed", "stuck", "gangs")}
    log(f"oom figures (seed {a.seed}): allocation failures injected {tot['failed']}, "
        f"sites failed {tot['sites_failed']}, gangs {tot['gangs']}, stuck gangs {tot['stuck']}")
    log(f"[==========] {passed + failed} test(s) run.")
    log(f"[  PASSED  ] {passed} test(s).")
    if failed:
        log(f"[  FAILED  ] {failed} test(s)")
    if failed or a.keep:
        log(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
