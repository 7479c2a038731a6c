#!/usr/bin/env python3
"""Crash consistency of `topogang scheduler` on a real etcd + kube-apiserver
(scripts/cluster-up), 32 fake nodes of 8 GPUs (2 blocks x 4 racks x 4 nodes).

Rounds: new gangs (2-32 pods of 1-4 GPUs, rack, block or no required level,
minMember = size or less) are created while the scheduler runs with a low
api.bindConcurrency (2-4) and api.qps, so that one gang's binds span time;
once a random number of this round's pods are bound, a process is SIGKILLed:
  restart   the only scheduler, started again after a random pause;
  standby   the leader of two replicas (--leader-elect, 2 s Lease); the
            standby takes over, the killed one comes back as the standby;
  apiserver kube-apiserver (etcd stays), restarted after 0.5-3 s; the
            scheduler lives on.
The test acts as the pods' controller: a member the scheduler deletes (a
rollback) is recreated under a new name, so a rolled-back gang queues again;
and as their kubelet: a pod left Terminating with grace 0 (the API server
deletes a bound pod in two writes, deletionTimestamp then removal, and a
scheduler killed between them leaves the first) is removed at once.
In about half the rounds one new gang has a member named <gang>-poison whose
Binding a ValidatingAdmissionPolicy refuses, so that gang is rolled back
(perhaps several times, perhaps when the kill comes) until the test deletes
that member after the restart (its replacement binds).
After each kill it waits for the cluster to settle (no pod event for 2 s and
no gang partly bound, or each gang's scheduleTimeoutSeconds (15 s) plus 20 s
after the restart), then checks, from what the API server said (a watch of
every pod from a LIST's resourceVersion, resumed from the last one seen after
any break, so no event is missed):
  - no pod bound twice: a pod uid's spec.nodeName is set once and never
    changes, and no node ever holds more GPUs than it has (room handed out
    twice, e.g. by a restarted scheduler that missed a bind, shows here);
  - no gang left partly bound (0 < bound < minMember, Terminating pods not
    counted) once its timeout passed: every gang is complete or rolled back
    (nothing bound);
  - every rollback (bound pods deleted by the scheduler) explained by a
    RolledBack Event on the gang's PodGroup;
  - no sanitizer report in the schedulers' logs; the daemon that was not
    killed (apiserver case) is alive and /healthz answers.
Prints the figures (kills, gangs, binds, rollbacks, violations) and
cmocka-style lines for scripts/count-tests.

usage: test_crash.py [--long] [--seed N] [--kills N] [--apiserver-kills N]
                     [--cluster DIR] [--keep]
The default (CI) is 2 restarts + 2 standby takeovers + 1 apiserver kill;
--long is 18 + 14 + 3. Exit 0 passed, 1 a violation or failure, 77 no
control plane."""
import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Api, Cluster, PodWatch, Scheduler, Skip, gang_pod, log,  # noqa: E402
                     make_namespace, podgroup, setup_cluster, http_get)

TIMEOUT_S = 15              # PodGroup scheduleTimeoutSeconds
NS = "crash"                # crash-SEED on a reused cluster
RACK_GPUS, BLOCK_GPUS, CLUSTER_GPUS = 32, 128, 256


POISON = """apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: crash-poison-%(ns)s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods/binding"]}]
  validations: [{expression: "!object.metadata.name.endsWith('-poison')", message: "a poisoned member: binding refused by the test"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: crash-poison-%(ns)s}
spec: {policyName: crash-poison-%(ns)s, validationActions: [Deny], matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %(ns)s}}}}
"""


class Gang:
    def __init__(self, name, size, gpus, min_member, required, rnd):
        self.name, self.size, self.gpus, self.min = name, size, gpus, min_member
        self.required, self.round, self.gen = required, rnd, 0
        self.created = time.time()


class Crash:
    def __init__(self, a, src, work, binary):
        self.a, self.src, self.work, self.bin = a, src, work, binary
        self.rng = random.Random(a.seed)
        self.gangs = {}
        self.seq = 0
        self.rnd = 0
        self.checked_deletes = 0
        self.f = dict(kills=0, restarts=0, takeovers=0, apiserver=0, mid_gang=0, gangs=0, poisoned=0,
                      rollbacks=0, rollback_pods=0, recreated=0, retired_unplaced=0, ended=0,
                      max_partial=0)
        self.violations = []
        self.scheds = []

    # ---- setup ----------------------------------------------------------------------------

    def start(self):
        self.cluster = Cluster(self.src, self.work, self.a.cluster)
        self.api = Api(self.cluster)
        self.alloc = setup_cluster(self.cluster, self.api, self.src)
        global NS
        NS = "crash" if self.cluster.owned else f"crash-{self.a.seed}"
        if not self.cluster.owned:  # an earlier run's pods would hold the nodes
            for p in self.api.must("GET", "/api/v1/pods")["items"]:
                if p["metadata"]["namespace"].startswith("crash"):
                    self.api.delete_pod(p["metadata"]["namespace"], p["metadata"]["name"])
        make_namespace(self.api, NS)
        self.cluster.kubectl_apply(POISON % {"ns": NS}, text=True)
        time.sleep(2)  # the policy takes effect asynchronously
        conc = self.rng.choice([2, 3, 4])
        self.policy = os.path.join(self.work, "policy.yaml")
        with open(self.policy, "w") as f:
            f.write(f"api: {{bindConcurrency: {conc}, qps: 60, burst: 60}}\n"
                    f"gang: {{scheduleTimeoutSeconds: {TIMEOUT_S}, bindRetries: 3, reserveAfterSeconds: 0}}\n"
                    "preemption: {enabled: false}\n")
        log(f"    seed {self.a.seed}: bindConcurrency {conc}, qps 60; work dir {self.work}")
        self.watch = PodWatch(self.api, NS, self.alloc)
        self.watch.start()
        if not self.watch.synced.wait(30):
            raise RuntimeError("the pod watch did not start")

    def stop(self):
        for s in self.scheds:
            s.kill()
        self.watch.stopping = True
        if hasattr(self, "cluster"):
            self.cluster.down()

    # ---- gangs ------------------------------------------------------------------------------

    def used_gpus(self):
        return sum(g.size * g.gpus for g in self.gangs.values())

    def one_gang(self):
        size = self.rng.randint(2, 32)
        required = self.rng.choice(["rack", "rack", "block", "block", None])
        gpus = self.rng.choice([1, 1, 2, 4])
        cap = {"rack": RACK_GPUS // 2, "block": BLOCK_GPUS // 2, None: CLUSTER_GPUS // 4}[required]
        while size * gpus > cap and gpus > 1:
            gpus //= 2
        size = min(size, cap // gpus)
        min_member = size if self.rng.random() < 0.7 else self.rng.randint(max(2, size // 2), size)
        self.seq += 1
        return Gang(f"g{self.seq:03d}", size, gpus, min_member, required, self.rnd)

    def create_pods(self, g, names):
        for n in names:
            self.api.create_pod(NS, gang_pod(NS, n, g.name, g.gpus))

    def new_gangs(self, budget_pods):
        """Gangs of this round, within ~60% of the cluster's GPUs; returns their pods."""
        made, pods = [], 0
        while pods < budget_pods:
            g = self.one_gang()
            if self.used_gpus() + g.size * g.gpus > 0.6 * CLUSTER_GPUS:
                break
            self.gangs[g.name] = g
            self.api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{NS}/podgroups",
                          podgroup(NS, g.name, g.min, g.required, TIMEOUT_S))
            made.append(g)
            pods += g.size
        self.f["gangs"] += len(made)
        names = {g.name: [f"{g.name}-{i}" for i in range(g.size)] for g in made}
        poisoned = [g for g in made if g.size >= 3 and g.min == g.size]
        if poisoned and self.rng.random() < 0.5:  # its Binding is refused: rollbacks
            g = self.rng.choice(poisoned)
            names[g.name][0] = f"{g.name}-poison"
            self.f["poisoned"] += 1
        # pods of several gangs at once, interleaved as controllers would create them
        threads = [threading.Thread(target=self.create_pods, args=(g, names[g.name])) for g in made]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return pods

    def reconcile(self):
        """The kubelet's part: a pod Terminating with grace 0 (a DELETE whose
        client died between the API server's two writes) is removed, as the
        node's kubelet would at once (the fake nodes have none). The
        controller's part (a Job's, podReplacementPolicy TerminatingOrFailed):
        members deleted or Terminating come back under new names."""
        for uid, name in self.watch.ending():
            if self.api.delete_pod(NS, name, uid) == 200:
                self.f["ended"] += 1
        for g in list(self.gangs.values()):
            live = self.watch.live_of(g.name, terminating=False)
            if len(live) < g.size:
                g.gen += 1
                names = [f"{g.name}-r{g.gen}-{i}" for i in range(g.size - len(live))]
                self.create_pods(g, names)
                self.watch.wait_seen(names, 10)
                self.f["recreated"] += len(names)

    def cure(self):
        """The poisoned members go (as if fixed by their owner); their replacements bind."""
        for g in self.gangs.values():
            for uid, name in self.watch.uids_of(g.name):
                if name.endswith("-poison"):
                    self.watch.deleting(uid)
                    self.api.delete_pod(NS, name, uid)

    def retire(self):
        """Deletes complete gangs of earlier rounds (and ones never placed for 2
        rounds) so that the next round finds room."""
        for g in list(self.gangs.values()):
            bound = self.watch.bound_of(g.name, terminating=False)
            done = bound >= g.min and g.round < self.rnd
            stale = bound == 0 and g.round < self.rnd - 1
            if not (done or stale):
                continue
            self.f["retired_unplaced"] += stale
            del self.gangs[g.name]
            self.api.request("DELETE", f"/apis/topogang.io/v1alpha1/namespaces/{NS}/podgroups/{g.name}")
            for uid, name in self.watch.uids_of(g.name):
                self.watch.deleting(uid)
                self.api.delete_pod(NS, name, uid)

    def partial(self):
        out = []
        for g in self.gangs.values():
            b = self.watch.bound_of(g.name, terminating=False)
            if 0 < b < g.min:
                out.append((g, b))
        return out

    # ---- schedulers ---------------------------------------------------------------------------

    def sched(self, name, leader_elect):
        # a new process is a new identity: one with the old identity would
        # find itself holding the Lease and lead at once, taking nothing over
        s = Scheduler(self.bin, self.cluster, name, self.work, self.policy, leader_elect,
                      identity=f"{name}-{self.f['kills']}")
        self.scheds = [x for x in self.scheds if x.name != name] + [s]
        return s

    def leader(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            for s in self.scheds:
                if s.alive() and s.is_leader():
                    return s
            time.sleep(0.05)
        raise RuntimeError("no leader")

    # ---- one round -------------------------------------------------------------------------------

    def wait_binds(self, target, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.watch.binds >= target:
                return True
            time.sleep(0.005)
        return False

    def round(self, kind):
        self.rnd += 1
        self.retire()
        b0 = self.watch.binds
        pods = self.new_gangs(self.rng.randint(40, 110))
        if not pods:
            raise RuntimeError(f"round {self.rnd}: no room for a new gang")
        # the kill comes after some of what must bind: a gang's members past its
        # minMember are an elastic gang's growth, which waits in its domain for
        # room that old rounds' gangs may hold (seed 2290979954 under ASan: g012
        # placed 9 of 16 in a rack that filled, and the round stalled at 75 of 83)
        must = sum(g.min for g in self.gangs.values() if g.round == self.rnd)
        target = b0 + self.rng.randint(1, max(1, min(pods, must) - 1))
        if not self.wait_binds(target):
            self.violations.append(f"round {self.rnd}: binding stalled at {self.watch.binds - b0} of "
                                   f"{pods} pods (target {target - b0})")
            return
        time.sleep(self.rng.uniform(0, 0.05))
        if kind == "apiserver":
            self.cluster.apiserver_kill()
            what = "kube-apiserver"
        else:
            victim = self.leader()
            victim.kill()
            what = f"scheduler {victim.name}"
        self.f["kills"] += 1
        bound_at_kill = self.watch.binds - b0
        # gangs the kill caught partly bound (binds in flight still land for a moment)
        time.sleep(0.2)
        part = len(self.partial())
        self.f["mid_gang"] += part > 0
        self.f["max_partial"] = max(self.f["max_partial"], part)
        if kind == "restart":
            time.sleep(self.rng.uniform(0, 1.0))
            self.f["restarts"] += 1
            self.sched(victim.name, False).wait_ready()
        elif kind == "standby":
            self.f["takeovers"] += 1
            self.sched(victim.name, True).wait_ready()
        else:
            self.f["apiserver"] += 1
            time.sleep(self.rng.uniform(0.5, 3.0))
            self.cluster.apiserver_start(self.api)
        log(f"    round {self.rnd} ({kind}): killed {what} after {bound_at_kill} of {pods} binds; "
            f"{part} gang(s) partly bound then")
        self.cure()
        self.settle()
        self.check()

    def settle(self):
        """No pod event for 2 s and no gang partly bound, or its timeout (+20 s) passed."""
        end = time.time() + TIMEOUT_S + 20
        while time.time() < end:
            self.reconcile()
            if not self.partial() and time.time() - self.watch.last_event > 2:
                return
            time.sleep(0.2)

    # ---- checks ------------------------------------------------------------------------------------

    def check(self):
        with self.watch.lock:
            new_v = self.watch.violations[:]
            self.watch.violations.clear()
        self.violations += [f"round {self.rnd}: {v}" for v in new_v]
        for g, b in self.partial():
            self.violations.append(f"round {self.rnd}: gang {g.name} left with {b} of minMember "
                                   f"{g.min} bound after its timeout ({TIMEOUT_S} s) passed"
                                   f"{self.explain(g)}")
        self.check_rollbacks()
        for s in self.scheds:
            rep = s.sanitizer_report()
            if rep:
                self.violations.append(f"sanitizer report in {s.log}:\n{rep}")
        leader = [s for s in self.scheds if s.alive()]
        if not leader:
            self.violations.append(f"round {self.rnd}: no scheduler alive")
        for s in leader:
            st, _ = http_get(s.port, "/healthz")
            if st != 200:
                self.violations.append(f"round {self.rnd}: {s.name} /healthz answered {st}")

    def explain(self, g):
        """What the watch saw of g's pods and what the PodGroup's status says:
        the facts a violation needs to be understood from its log alone."""
        with self.watch.lock:
            pods = sorted((p["t_bound"] or 0, p["name"], p["node"],
                           p["deleted"] and "deleted" or p["terminating"] and "terminating", u)
                          for u, p in self.watch.pods.items() if p["gang"] == g.name)
        def utc(t):
            return time.strftime("%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}"
        lines = []
        for tb, n, nd, d, u in pods:
            api = ""
            if d != "deleted":  # what the API server holds now
                st, obj = self.api.request("GET", f"/api/v1/namespaces/{NS}/pods/{n}")
                md = obj.get("metadata", {}) if st == 200 and isinstance(obj, dict) else {}
                api = (f"; API: HTTP {st}, uid {md.get('uid', '-')[:8]}, "
                       f"node {obj.get('spec', {}).get('nodeName') if md else '-'}, "
                       f"deletionTimestamp {md.get('deletionTimestamp', '-')}, "
                       f"resourceVersion {md.get('resourceVersion', '-')}")
            lines.append(f"\n        {n} uid {u[:8]} node {nd or '-'}"
                         f"{f' bound at {utc(tb)}Z' if tb else ''}{f' {d}' if d else ''}{api}")
        st, doc = self.api.request("GET", f"/apis/topogang.io/v1alpha1/namespaces/{NS}/podgroups/{g.name}")
        status = doc.get("status") if st == 200 and isinstance(doc, dict) else st
        return "".join(lines) + f"\n        PodGroup status: {status}"

    def check_rollbacks(self):
        """Every group of deletions of one gang's bound pods (a rollback) has a
        RolledBack Event on its PodGroup, from 65 s before to 20 s after."""
        with self.watch.lock:
            dels = self.watch.sched_deletes[self.checked_deletes:]
            self.checked_deletes = len(self.watch.sched_deletes)
        episodes = []
        for t, gang, name, uid, node in sorted(dels, key=lambda d: (d[1] or "", d[0])):
            if episodes and episodes[-1]["gang"] == gang and t - episodes[-1]["t1"] < 3:
                episodes[-1]["t1"] = t
                episodes[-1]["pods"].append(name)
            else:
                episodes.append({"gang": gang, "t0": t, "t1": t, "pods": [name]})
        self.f["rollbacks"] += len(episodes)
        self.f["rollback_pods"] += len(dels)
        if not episodes:
            return
        end = time.time() + 10
        while True:
            evs = [e for e in self.api.events(NS) if e.get("reason") == "RolledBack"]
            missing = [ep for ep in episodes if not any(self.explains(e, ep) for e in evs)]
            if not missing or time.time() > end:
                break
            time.sleep(0.5)
        for ep in missing:
            self.violations.append(f"round {self.rnd}: rollback of gang {ep['gang']} (deleted "
                                   f"{', '.join(ep['pods'])}) has no RolledBack Event")

    @staticmethod
    def explains(ev, ep):
        reg = ev.get("regarding", {})
        if reg.get("kind") != "PodGroup" or reg.get("name") != ep["gang"]:
            return False
        ts = ev.get("eventTime") or ev.get("deprecatedLastTimestamp") or ""
        try:
            t = time.mktime(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        except ValueError:
            return True
        return ep["t0"] - 65 <= t <= ep["t1"] + 20

    def final(self):
        """The last settle: every gang complete, or never placed and reported."""
        end = time.time() + TIMEOUT_S + 40
        while time.time() < end:
            self.reconcile()
            if all(self.watch.bound_of(g.name, terminating=False) >= g.min for g in self.gangs.values()):
                break
            if not self.partial() and time.time() - self.watch.last_event > 10:
                break
            time.sleep(0.3)
        self.check()
        for g in self.gangs.values():
            if self.watch.bound_of(g.name, terminating=False) >= g.min:
                continue
            pg = self.api.podgroup(NS, g.name) or {}
            st = pg.get("status", {})
            if not st.get("phase") or not st.get("conditions"):
                self.violations.append(f"gang {g.name} neither placed nor reported (status {st})")


def case(name, fn):
    log(f"[ RUN      ] {name}")
    try:
        ok = fn()
    except Exception as e:  # noqa: BLE001 - a harness failure fails the case
        log(f"    FAIL [{name}]: {type(e).__name__}: {e}")
        ok = False
    log(f"[       OK ] {name}" if ok else f"[  FAILED  ] {name}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--long", action="store_true", help="32 scheduler kills + 3 apiserver kills")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--kills", type=int, default=None, help="scheduler kills (half restart, half standby)")
    ap.add_argument("--apiserver-kills", type=int, default=None)
    ap.add_argument("--cluster", help="an existing scripts/cluster-up DIR (not torn down)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    kills = a.kills if a.kills is not None else (32 if a.long else 4)
    api_kills = a.apiserver_kills if a.apiserver_kills is not None else (3 if a.long else 1)
    src = os.environ.get("TOPOGANG_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
    binary = os.environ.get("TOPOGANG_BIN") or os.path.join(src, "build/topogang")
    work = tempfile.mkdtemp(prefix="tg-e2e-crash.")
    c = Crash(a, src, work, binary)
    results = []
    t0 = time.time()
    try:
        c.start()
    except Skip as e:
        log(f"SKIP: {e}")
        c.stop()
        return 77
    except Exception as e:  # noqa: BLE001
        log(f"setup failed: {e}")
        c.stop()
        log("[  FAILED  ] 1 test(s)")
        return 1

    def run(kind, n, replicas):
        def fn():
            before = len(c.violations)
            for s in list(c.scheds):
                s.stop()
            c.scheds = []
            for i in range(replicas):
                c.sched(f"{kind}-{i}", replicas > 1).wait_ready()
            c.leader()
            for _ in range(n):
                c.round(kind)
            for v in c.violations[before:]:
                log(f"    VIOLATION: {v}")
            return len(c.violations) == before
        return fn

    n_restart = (kills + 1) // 2 if kills >= 1 else 0
    n_standby = kills - n_restart
    plan = [("crash_scheduler_restart", "restart", n_restart, 1),
            ("crash_standby_takeover", "standby", n_standby, 2),
            ("crash_apiserver", "apiserver", api_kills, 1)]
    for name, kind, n, replicas in plan:
        if n:
            results.append(case(name, run(kind, n, replicas)))

    def fin():
        before = len(c.violations)
        c.final()
        for v in c.violations[before:]:
            log(f"    VIOLATION: {v}")
        return len(c.violations) == before
    results.append(case("crash_final_settle", fin))
    c.stop()
    f, w = c.f, c.watch
    log(f"crash figures (seed {a.seed}, {time.time() - t0:.0f} s): kills {f['kills']} "
        f"(scheduler restarts {f['restarts']}, standby takeovers {f['takeovers']}, "
        f"apiserver {f['apiserver']}), kills with a gang partly bound {f['mid_gang']} "
        f"(at most {f['max_partial']} gangs at once), gangs {f['gangs']} ({f['poisoned']} with a "
        f"member whose bind is refused), binds {w.binds}, "
        f"rollbacks {f['rollbacks']} ({f['rollback_pods']} bound pods deleted, "
        f"{f['recreated']} recreated, {f['ended']} left Terminating by a killed client and "
        f"ended as a kubelet would), gangs retired unplaced {f['retired_unplaced']}, "
        f"watch reconnects {w.reconnects}, violations {len(c.violations)}")
    failed = results.count(False)
    log(f"[==========] {len(results)} test(s) run.")
    log(f"[  PASSED  ] {len(results) - failed} test(s).")
    if failed:
        log(f"[  FAILED  ] {failed} test(s)")
    if failed or a.keep:
        log(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
