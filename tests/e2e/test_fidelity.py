#!/usr/bin/env python3
"""Fidelity of `topogang simulate --replay` (issue 12): one trace, both ways.

The trace (tests/e2e/fixtures/fidelity.yaml, policy fidelity-policy.yaml) is
compressed COMPRESS times (arrivals, durations, grace periods, timeouts and
reserveAfterSeconds divided by it), then
  - replayed: `topogang simulate --replay -o json` on the compressed trace
    (and, for the record, on the trace as written);
  - run by the daemon: `topogang scheduler` on a real etcd + kube-apiserver
    (scripts/cluster-up) holding the trace's Nodes and PriorityClasses. This
    driver creates each PodGroup and pod at its arrival, deletes a bound pod
    once its duration has passed since it was bound (its work is done),
    plays the kubelet (a pod the scheduler evicted is deleted for good once
    its grace period, or its remaining work, has passed) and the controller
    of evicted pods (recreated under the replay's name, <name>-r1, -r2, ...,
    a run's members together once each of them is evicted). A pod watch
    says when and where each pod was bound and who evicted it; the daemon's
    log when each gang was placed and in which level and domain; its Events
    which domain it reserved.
A run is a gang's k-th placement (k-th incarnation of its pods). Compared:
  order        the order in which runs start (every member bound);
  placement    the level, domain and nodes of each run, and the runs
               themselves (none missing, none extra);
  preemption   who evicted each preempted run;
  reservation  the first domain reserved for each gang;
  daemon       exit 0 on SIGTERM, no sanitizer report, no pod deleted by the
               scheduler other than a preemption victim.
A table shows both sides and every difference. Two differences come from
real time and are allowed, each named where it occurs:
  simultaneous   runs that start at the same instant of the replay (it gives
                 them no order) may start in any order;
  bind latency   two runs whose binds finished in the other order although
                 the daemon decided them in the replay's order; a run given
                 other nodes because those the replay gave it were freed (by
                 members the replay frees at one instant) within 0.5 s after
                 the daemon's decision, or 0.1 s before it, as its watch saw.
Anything else fails. The replay of the trace as written is shown beside it;
its differences from the compressed replay come from the engine's timers,
which are wall-clock times (backoff, the unschedulable flush) and so span
COMPRESS times more of the compressed trace: reported, not judged.

usage: test_fidelity.py [--cluster DIR] [--compress C] [--daemon-policy F]
  --cluster DIR       reuse a control plane from scripts/cluster-up DIR
  --compress C        compression factor (default 20; arrivals, grace periods
                      and second-valued policy keys must divide by it)
  --daemon-policy F   another policy for the daemon only (compressed too):
                      shows that the test fails when the sides differ
Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import argparse
import calendar
import heapq
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Api, Cluster, Scheduler, Skip, log  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "fidelity.yaml")
POLICY = os.path.join(HERE, "fixtures", "fidelity-policy.yaml")
DURATION = "simulate.topogang.io/duration"
GROUP = "topogang.io/pod-group"
TIE_S = 0.002           # replay starts this close are the same instant (ms clock)
TOGETHER_S = 0.5        # members of a run due this close finish together
BIND_SPREAD_S = 0.5     # a node freed this soon after a decision: bind latency
WATCH_LAG_S = 0.1       # a pod the driver saw go this soon before a decision may not have
                        # reached the daemon's watch yet (a run's members leaving together
                        # are seen apart: tune-e at 57 s, CI of 9e41b9a)
LEAD_S = 1.0            # from the daemon ready to the trace start
MARGIN_S = 15.0         # beyond the replay's end before the daemon side gives up


# ---- the trace ------------------------------------------------------------------------

def go_duration(s):
    """Seconds of a duration annotation: seconds, or a Go duration (2h30m)."""
    s = str(s).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)", s)
    if not parts or "".join(a + b for a, b in parts) != s:
        raise ValueError(f"malformed duration {s!r}")
    return sum(float(a) * units[b] for a, b in parts)


def parse_ts(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def fmt_ts(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def read_objects(cluster, path):
    """The YAML documents of path as JSON objects, in order (kubectl reads
    the YAML; the standard library cannot)."""
    out = subprocess.run([cluster.kubectl, "--kubeconfig", cluster.kubeconfig, "create",
                          "--dry-run=client", "-o", "json", "-f", path],
                         check=True, capture_output=True, text=True).stdout
    dec, i, objs = json.JSONDecoder(), 0, []
    while True:
        while i < len(out) and out[i].isspace():
            i += 1
        if i >= len(out):
            break
        obj, i = dec.raw_decode(out, i)
        objs.extend(obj["items"] if obj.get("kind") == "List" else [obj])
    return objs


def read_policy(path):
    """A policy file written as comment lines and one JSON object (YAML too)."""
    text = "".join(l for l in open(path) if not l.lstrip().startswith("#"))
    return json.loads(text)


def key(obj):
    md = obj["metadata"]
    return f"{md.get('namespace', 'default')}/{md['name']}"


def is_pending(obj):
    return obj["kind"] == "Pod" and not obj.get("spec", {}).get("nodeName")


def whole(x, what, c):
    if abs(x - round(x)) > 1e-9:
        raise ValueError(f"{what} divided by {c:g} is not a whole number of seconds ({x:g})")
    return int(round(x))


def compress(objs, c):
    """The trace with every time divided by c."""
    t0 = min(parse_ts(o["metadata"]["creationTimestamp"]) for o in objs if is_pending(o))
    out = []
    for o in objs:
        o = json.loads(json.dumps(o))
        md, spec = o["metadata"], o.get("spec", {})
        if o["kind"] in ("Pod", "PodGroup") and md.get("creationTimestamp"):
            rel = parse_ts(md["creationTimestamp"]) - t0
            md["creationTimestamp"] = fmt_ts(t0 + whole(rel / c, f"{key(o)} arrival", c))
        if o["kind"] == "Pod":
            ann = md.get("annotations", {})
            if DURATION in ann:
                ann[DURATION] = "%g" % (go_duration(ann[DURATION]) / c)
            g = spec.get("terminationGracePeriodSeconds", 30)
            spec["terminationGracePeriodSeconds"] = whole(g / c, f"{key(o)} grace period", c)
        if o["kind"] == "PodGroup" and "scheduleTimeoutSeconds" in spec:
            spec["scheduleTimeoutSeconds"] = max(1, whole(spec["scheduleTimeoutSeconds"] / c,
                                                          f"{key(o)} timeout", c))
        out.append(o)
    return out


def compress_policy(policy, c):
    """The policy with its second-valued keys divided by c."""
    pol = json.loads(json.dumps(policy))
    gang = pol.setdefault("gang", {})
    gang["reserveAfterSeconds"] = whole(gang.get("reserveAfterSeconds", 300) / c,
                                        "gang.reserveAfterSeconds", c)
    gang["scheduleTimeoutSeconds"] = max(1, whole(gang.get("scheduleTimeoutSeconds", 300) / c,
                                                  "gang.scheduleTimeoutSeconds", c))
    return pol


def replay(binary, objs, policy, work, name):
    trace, pol = os.path.join(work, f"{name}.json"), os.path.join(work, f"{name}-policy.json")
    with open(trace, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f, indent=1)
    with open(pol, "w") as f:
        json.dump(policy, f)
    r = subprocess.run([binary, "simulate", "--replay", "-f", trace, "--config", pol, "-o", "json"],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"simulate --replay ({name}) exited {r.returncode}:\n{r.stderr}")
    return json.loads(r.stdout)


def replay_runs(doc, scale=1.0):
    """{(gang, k): run} of a replay's JSON; times divided by scale."""
    runs = {}
    for g in doc["gangs"]:
        gk = g["podGroup"] or g["pods"][0]["pod"]
        for k, r in enumerate(g["runs"]):
            runs[(gk, k)] = {
                "start": None if r["start"] is None else r["start"] / scale,
                "level": r["level"], "domain": r["domain"],
                "nodes": {p["pod"]: p["node"] for p in r["pods"]},
                "reason": r["reason"], "by": r.get("preemptedBy")}
    return runs


def reservations_of(doc):
    return {g["podGroup"] or g["pods"][0]["pod"]: g["reservation"]["domain"]
            for g in doc["gangs"] if g.get("reservation")}


# ---- the daemon side ------------------------------------------------------------------

class Watch(threading.Thread):
    """Pods of every namespace: each event into a queue with the time it was
    seen, (t, type, pod)."""

    def __init__(self, api):
        super().__init__(daemon=True)
        self.api, self.q, self.rv, self.stopping = api, queue.Queue(), None, False
        self.synced = threading.Event()

    def run(self):
        while not self.stopping:
            try:
                if self.rv is None:
                    doc = self.api.must("GET", "/api/v1/pods")
                    for p in doc["items"]:
                        self.q.put((time.time(), "ADDED", p))
                    self.rv = doc["metadata"]["resourceVersion"]
                    self.synced.set()
                self.stream()
            except Exception:  # noqa: BLE001 - reconnect; a 410 relists
                if not self.stopping:
                    time.sleep(0.1)

    def stream(self):
        conn = self.api.connect(timeout=120)
        try:
            q = urllib.parse.urlencode({"watch": "1", "resourceVersion": self.rv,
                                        "allowWatchBookmarks": "true", "timeoutSeconds": "100"})
            conn.request("GET", f"/api/v1/pods?{q}", headers=self.api.headers())
            r = conn.getresponse()
            if r.status != 200:
                raise OSError(f"watch: HTTP {r.status}")
            for line in r:
                if self.stopping:
                    return
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    self.rv = None
                    return
                if ev["type"] != "BOOKMARK":
                    self.q.put((time.time(), ev["type"], ev["object"]))
                self.rv = ev["object"]["metadata"]["resourceVersion"]
        finally:
            conn.close()


class Driver:
    """Plays the compressed trace against the daemon (see the module comment)."""

    def __init__(self, api, objs):
        self.api = api
        self.pool = ThreadPoolExecutor(8)
        self.heap, self.seq = [], 0
        self.errors = []            # what the driver could not do
        self.unexpected = []        # deletions by the scheduler that were no preemption
        self.pods = {}              # input pod key -> dict(obj, gang, arrival, dur, grace)
        self.live = {}              # live pod key -> dict(input, inc, uid, node, bound, evicted, by, gone, ours)
        self.recreating = {}        # (gang, run) -> evicted pod keys the controller recreates together
        self.pgs = {}               # PodGroup key -> object
        t0 = min(parse_ts(o["metadata"]["creationTimestamp"]) for o in objs if is_pending(o))
        arrivals = {}
        for o in objs:
            if o["kind"] == "PodGroup":
                self.pgs[key(o)] = o
            if not is_pending(o) or o["spec"].get("schedulerName") != "topogang":
                continue
            md = o["metadata"]
            grp = md.get("labels", {}).get(GROUP)
            gang = f"{md['namespace']}/{grp}" if grp else key(o)
            dur = md.get("annotations", {}).get(DURATION)
            self.pods[key(o)] = {"obj": o, "gang": gang,
                                 "arrival": parse_ts(md["creationTimestamp"]) - t0,
                                 "dur": go_duration(dur) if dur is not None else None,
                                 "grace": o["spec"].get("terminationGracePeriodSeconds", 30)}
            arrivals.setdefault((self.pods[key(o)]["arrival"], gang), []).append(key(o))
        self.arrivals = sorted(arrivals.items())
        self.created_pgs = set()
        self.pending_arrivals = len(self.arrivals)
        self.expected = set()       # live pod keys the driver created (or is creating)

    # -- actions
    def at(self, t, fn, *args):
        heapq.heappush(self.heap, (t, self.seq, fn, args))
        self.seq += 1

    def submit(self, fn, *args):
        def run():
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{fn.__name__}{args}: {type(e).__name__}: {e}")
        self.pool.submit(run)

    def body(self, pk, inc):
        o = json.loads(json.dumps(self.pods[pk]["obj"]))
        md = o["metadata"]
        for f in ("creationTimestamp", "resourceVersion", "uid"):
            md.pop(f, None)
        if inc:
            md["name"] = f"{md['name']}-r{inc}"
        return o

    def create_pod(self, pk, inc):
        o = self.body(pk, inc)
        self.api.must("POST", f"/api/v1/namespaces/{o['metadata']['namespace']}/pods", o)

    def arrive(self, gang, pks):
        """The PodGroup first (a gang's pods must find it), then the pods."""
        if gang in self.pgs and gang not in self.created_pgs:
            o = json.loads(json.dumps(self.pgs[gang]))
            o["metadata"].pop("creationTimestamp", None)
            ns = o["metadata"]["namespace"]
            self.api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups", o)
            self.created_pgs.add(gang)
        for pk in pks:
            self.create_pod(pk, 0)

    def delete(self, lk, uid):
        ns, name = lk.split("/", 1)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": uid}}
        st, doc = self.api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", body)
        if st not in (200, 202, 404, 409):
            raise RuntimeError(f"DELETE {lk}: HTTP {st}: {doc and doc.get('message')}")

    def complete(self, lk):
        """lk's work is done, and that of every member of its run due within
        TOGETHER_S: the replay binds a run's members at one instant, so they
        finish at one instant; the daemon's binds are some ms apart, and
        ending them apart would let a gang waiting for their room try (and
        back off) in between. Deleted concurrently."""
        me = self.live[lk]
        now = time.time()
        for k, p in self.live.items():
            if (k == lk or (p["input"] in self.pods and me["input"] in self.pods and
                            self.pods[p["input"]]["gang"] == self.pods[me["input"]]["gang"] and
                            p["inc"] == me["inc"] and p["bound"] is not None and
                            p["bound"] + self.pods[p["input"]]["dur"] <= now + TOGETHER_S)) \
                    and p["evicted"] is None and not p["gone"] and not p["ours"]:
                p["ours"] = True
                self.submit(self.delete, k, p["uid"])

    def finalise(self, lk):
        p = self.live[lk]
        if not p["gone"]:
            p["ours"] = True
            self.submit(self.delete, lk, p["uid"])

    def run_of(self, lk):
        p = self.live[lk]
        return self.pods[p["input"]]["gang"], p["inc"]

    def evicted_run(self, lk):
        """The controller recreates an evicted pod under the next name: the
        members of one evicted run together, once each of its placed members
        has been evicted (or TOGETHER_S after the first was). The replay
        evicts a run's members at one instant and so recreates them at one
        instant; the daemon's evictions land some ms apart, and recreating
        them apart would let the gang try (and back off) in between, a try
        the replay never makes."""
        run = self.run_of(lk)
        first = run not in self.recreating
        self.recreating.setdefault(run, []).append(lk)
        members = [k for k, p in self.live.items() if p["input"] in self.pods
                   and self.run_of(k) == run and p["bound"] is not None and not p["ours"]]
        if all(self.live[k]["evicted"] is not None or self.live[k]["gone"] for k in members):
            self.recreate_run(run)
        elif first:
            self.at(time.time() + TOGETHER_S, self.recreate_run, run)

    def recreate_run(self, run):
        for lk in self.recreating.pop(run, []):
            p = self.live[lk]
            self.submit(self.create_pod, p["input"], p["inc"] + 1)

    # -- what the watch says
    def input_of(self, lk):
        """(input pod key, incarnation) of a live pod key, or None."""
        if lk in self.pods:
            return lk, 0
        m = re.fullmatch(r"(.*)-r(\d+)", lk)
        if m and m.group(1) in self.pods:
            return m.group(1), int(m.group(2))
        return None

    def on_pod(self, t, etype, obj):
        lk = key(obj)
        src = self.input_of(lk)
        if not src:
            return
        pk, inc = src
        p = self.live.setdefault(lk, {"input": pk, "inc": inc, "uid": obj["metadata"]["uid"],
                                      "node": None, "bound": None, "evicted": None, "by": None,
                                      "gone": False, "t_gone": None, "ours": False})
        spec, md, info = obj.get("spec", {}), obj["metadata"], self.pods[pk]
        for c in obj.get("status", {}).get("conditions", []):
            if c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler":
                m = re.search(r"higher priority gang (\S+) \(priority", c.get("message", ""))
                p["by"] = m.group(1) if m else "?"
        if spec.get("nodeName") and p["node"] is None:
            p["node"], p["bound"] = spec["nodeName"], t
            if info["dur"] is not None:
                self.at(t + info["dur"], self.complete, lk)
        if md.get("deletionTimestamp") and p["evicted"] is None and not p["ours"]:
            p["evicted"] = t
            if p["by"] is None:
                self.unexpected.append(f"{lk} deleted by the scheduler at {t - self.t0:.2f}s, "
                                       "not as a preemption victim")
            end = t + info["grace"]
            if info["dur"] is not None and p["bound"] is not None:
                end = min(end, max(t, p["bound"] + info["dur"]))
            self.at(end, self.finalise, lk)
            self.expected.add(f"{pk}-r{inc + 1}")
            self.evicted_run(lk)
        if etype == "DELETED":
            p["gone"], p["t_gone"] = True, t

    # -- the loop
    def run(self, watch, until):
        self.t0 = time.time() + LEAD_S
        for (a, gang), pks in self.arrivals:
            self.at(self.t0 + a, self.arrive, gang, pks)
        while True:
            now = time.time()
            wait = min(self.heap[0][0] - now, 0.2) if self.heap else 0.2
            try:
                item = watch.q.get(timeout=max(wait, 0))
                while item:
                    self.on_pod(*item)
                    item = watch.q.get_nowait()
            except queue.Empty:
                pass
            now = time.time()
            while self.heap and self.heap[0][0] <= now:
                _, _, fn, args = heapq.heappop(self.heap)
                if fn == self.arrive:
                    self.pending_arrivals -= 1
                    self.expected.update(args[1])
                    self.submit(fn, *args)
                else:
                    fn(*args)
            if not self.pending_arrivals and all(k in self.live and self.live[k]["gone"]
                                                 for k in self.expected):
                return True
            if now > self.t0 + until:
                return False

    def exit_spread(self):
        """(seconds, run) of the widest gap between the exits of one run's
        members that this driver deleted together, or None."""
        runs = {}
        for p in self.live.values():
            if p["ours"] and p["evicted"] is None and p["t_gone"] is not None:
                runs.setdefault((self.pods[p["input"]]["gang"], p["inc"]), []).append(p["t_gone"])
        worst = max(((max(t) - min(t), k) for k, t in runs.items() if len(t) > 1), default=None)
        return (worst[0], f"{worst[1][0]} run {worst[1][1] + 1}") if worst else None

    def runs(self):
        """{(gang, k): {"bound", "nodes", "by"}} of what the watch saw."""
        runs = {}
        for lk, p in self.live.items():
            info = self.pods[p["input"]]
            r = runs.setdefault((info["gang"], p["inc"]), {"bound": None, "nodes": {}, "by": None,
                                                           "complete": True, "evicted": False})
            if p["bound"] is None:
                r["complete"] = False
                continue
            r["nodes"][p["input"]] = p["node"]
            r["bound"] = max(r["bound"] or 0, p["bound"] - self.t0)
            if p["evicted"] is not None and p["by"]:
                src = self.input_of(p["by"])
                r["evicted"], r["by"] = True, self.pods[src[0]]["gang"] if src else p["by"]
        return runs


def daemon_log(path, t0, input_of):
    """From the daemon's log: placements [(gang, t, level, domain)] in order."""
    placed = []
    pat = re.compile(r'^ts=(\S+)Z .*msg="gang (\S+): placed \d+ pod\(s\) in (\S+) (\S+)"')
    for line in open(path, errors="replace"):
        m = pat.match(line)
        if not m:
            continue
        ts, gk, level, domain = m.groups()
        sec, _, ms = ts.partition(".")
        t = calendar.timegm(time.strptime(sec, "%Y-%m-%dT%H:%M:%S")) + int(ms or 0) / 1000
        src = input_of(gk)
        placed.append((src[0] if src else gk, t - t0, level, "" if domain == "(cluster)" else domain))
    return placed


def daemon_reservations(api, since, input_of):
    """The first domain each gang reserved, from its Reserved Events since
    `since` (a reused control plane keeps older ones)."""
    doc = api.must("GET", "/apis/events.k8s.io/v1/events")
    out = {}
    for e in sorted(doc.get("items", []), key=lambda e: e.get("eventTime") or ""):
        if e.get("reason") != "Reserved" or not e.get("eventTime"):
            continue
        if parse_ts(e["eventTime"].split(".")[0].rstrip("Z") + "Z") < since:
            continue
        m = re.search(r"reserving (\S+) for (\S+):", e.get("note", ""))
        if m:
            src = input_of(m.group(2))
            out.setdefault(src[0] if src else m.group(2), m.group(1))
    return out


# ---- the comparison ---------------------------------------------------------------------

class Verdicts:
    def __init__(self):
        self.fails = {c: [] for c in ("order", "placement", "preemption", "reservation", "daemon")}
        self.named = []

    def fail(self, case, msg):
        self.fails[case].append(msg)

    def allow(self, msg):
        self.named.append(msg)


def placed_shapes(nodes, shape):
    """[(pod shape, node)] of a run, sorted: the nodes per kind of member."""
    return sorted((shape.get(p, p), n) for p, n in nodes.items())


def bind_spread(r, d, held_at):
    """Why run d got other nodes than r, when bind latency says it: each node
    of the replay's that the daemon did not give it was still held at the
    daemon's decision by a pod that left within BIND_SPREAD_S (its run's
    members were bound, so finished, that far apart; the replay frees them
    at one instant), or left at most WATCH_LAG_S before it (its deletion still on
    the way to the daemon). None when that is not the reason."""
    missing = list(r["nodes"].values())
    for n in d["nodes"].values():
        if n in missing:
            missing.remove(n)
    why = []
    for n in missing:
        h = held_at(n, d["decided"] - WATCH_LAG_S) if d["decided"] is not None else None
        if not h or h[1] is None or h[1] - d["decided"] > BIND_SPREAD_S:
            return None
        gone = 1000 * (h[1] - d["decided"])
        why.append(f"{n} was still held by {h[0]}, gone {abs(gone):.0f} ms "
                   + ("later" if gone >= 0 else "before the decision (the daemon's watch had not said so)"))
    return "; ".join(why) if why else None


def compare(rp, dm, rp_resv, dm_resv, shape, held_at, v):
    """Fills v (shape: input pod key -> its requests, as text; held_at(node,
    t): the pod on node at t and when it went, or None); returns the runs
    both sides have, in the replay's order."""
    for rk in sorted(set(rp) - set(dm)):
        v.fail("placement", f"{rk[0]} run {rk[1] + 1}: in the replay (start {rp[rk]['start']:.2f}s), "
                            "never started by the daemon")
    for rk in sorted(set(dm) - set(rp)):
        v.fail("placement", f"{rk[0]} run {rk[1] + 1}: started by the daemon "
                            f"({dm[rk]['bound'] or 0:.2f}s), not in the replay")
    both = sorted(set(rp) & set(dm), key=lambda k: (rp[k]["start"], k))
    for k in both:
        r, d = rp[k], dm[k]
        name = f"{k[0]} run {k[1] + 1}"
        if not d["complete"]:
            v.fail("placement", f"{name}: not every member was bound by the daemon")
        # members of one shape are alike: which went where is the order they came in
        rn, dn = placed_shapes(r["nodes"], shape), placed_shapes(d["nodes"], shape)
        if (r["level"], r["domain"], rn) != (d["level"], d["domain"], dn):
            spread = bind_spread(r, d, held_at)
            what = (f"{name}: replay {r['level']} {short(r['domain'])} ({' '.join(n for _, n in rn)}), "
                    f"daemon {d['level']} {short(d['domain'])} ({' '.join(n for _, n in dn)})")
            if spread:
                v.allow(f"bind latency: {what}: {spread}")
            else:
                v.fail("placement", what)
        if sorted(r["nodes"]) != sorted(d["nodes"]):
            v.fail("placement", f"{name}: members differ: replay {' '.join(sorted(r['nodes']))}, "
                                f"daemon {' '.join(sorted(d['nodes']))}")
        rby = r["by"] if r["reason"] == "preempted" else None
        if rby != d["by"]:
            v.fail("preemption", f"{name}: preempted by {rby or 'nobody'} in the replay, "
                                 f"by {d['by'] or 'nobody'} in the daemon")
    # order: every pair the replay orders must start in that order
    for i, a in enumerate(both):
        for b in both[i + 1:]:
            ra, rb, da, db = rp[a], rp[b], dm[a], dm[b]
            if da["bound"] is None or db["bound"] is None or da["bound"] <= db["bound"]:
                continue
            na, nb = f"{a[0]} run {a[1] + 1}", f"{b[0]} run {b[1] + 1}"
            if rb["start"] - ra["start"] <= TIE_S:
                v.allow(f"simultaneous: {na} and {nb} start at {ra['start']:.2f}s in the replay; "
                        f"the daemon bound {nb} {1000 * (da['bound'] - db['bound']):.0f} ms before")
            elif da["decided"] is not None and db["decided"] is not None and da["decided"] < db["decided"]:
                v.allow(f"bind latency: the daemon decided {na} before {nb} as the replay does, "
                        f"its binds finished {1000 * (da['bound'] - db['bound']):.0f} ms later")
            else:
                v.fail("order", f"{nb} started before {na} in the daemon ({db['bound']:.2f}s < "
                                f"{da['bound']:.2f}s), after it in the replay ({rb['start']:.2f}s > "
                                f"{ra['start']:.2f}s)")
    for g in sorted(set(rp_resv) | set(dm_resv)):
        if rp_resv.get(g) != dm_resv.get(g):
            v.fail("reservation", f"{g}: reserved {rp_resv.get(g) or 'nothing'} in the replay, "
                                  f"{dm_resv.get(g) or 'nothing'} in the daemon")
    return both


def rank(keys, t):
    """1-based ranks by time t(k); equal times (within TIE_S) share a rank."""
    out, last, r = {}, None, 0
    for i, k in enumerate(sorted(keys, key=lambda k: (t(k), k))):
        if last is None or t(k) - last > TIE_S:
            r = i + 1
        last = t(k)
        out[k] = r
    return out


def short(dom):
    return dom.replace("zone-0/block-0-0/", "") if dom else "-"


def table(rp, dm, orig, c):
    keys = sorted(set(rp) | set(dm), key=lambda k: (rp[k]["start"] if k in rp else 1e9, k))
    rr = rank([k for k in keys if k in rp], lambda k: rp[k]["start"])
    dr = rank([k for k in keys if k in dm and dm[k]["bound"] is not None], lambda k: dm[k]["bound"])
    orr = rank([k for k in orig], lambda k: orig[k]["start"])
    log("%-24s %5s %7s %7s | %5s %7s %7s %6s | %-14s %-30s %-30s | %s" % (
        "RUN", "TRACE", "#", "START", "#", "PLACED", "BOUND", "LAG", "LEVEL", "DOMAIN (replay)",
        "DOMAIN (daemon)", "AS WRITTEN"))
    for k in keys:
        r, d = rp.get(k), dm.get(k)
        name = k[0] + (f" #{k[1] + 1}" if k[1] or (k[0], 1) in rp or (k[0], 1) in dm else "")
        rs = r["start"] if r else None
        trace = "%d:%02d" % divmod(round(rs * c), 60) if rs is not None else "-"
        lag = (d["bound"] - rs) if (r and d and d["bound"] is not None) else None
        o = orig.get(k)
        ow = "-" if not o else f"#{orr[k]} {short(o['domain'])}"
        log("%-24s %5s %7s %7s | %5s %7s %7s %6s | %-14s %-30s %-30s | %s" % (
            name, trace, rr.get(k, "-"), f"{rs:.2f}s" if rs is not None else "-",
            dr.get(k, "-"), f"{d['decided']:.2f}s" if d and d["decided"] is not None else "-",
            f"{d['bound']:.2f}s" if d and d["bound"] is not None else "-",
            f"{1000 * lag:.0f}ms" if lag is not None else "-",
            (r or d)["level"] or "-", short(r["domain"]) if r else "-",
            ("=" if r and d and d["domain"] == r["domain"] else short(d["domain"])) if d else "-", ow))


def compare_written(rp, orig, rp_resv, or_resv):
    """Differences between the replays of the compressed trace and of the
    trace as written (reported, not judged)."""
    out = []
    for g in sorted(set(rp_resv) | set(or_resv)):
        if rp_resv.get(g) != or_resv.get(g):
            out.append(f"{g}: reserved {short(rp_resv.get(g))} compressed, {short(or_resv.get(g))} as written")
    for k in sorted(set(rp) | set(orig)):
        a, b = rp.get(k), orig.get(k)
        if not a or not b:
            out.append(f"{k[0]} run {k[1] + 1}: only in the {'compressed' if a else 'written'} replay")
        elif (a["domain"], sorted(a["nodes"].values())) != (b["domain"], sorted(b["nodes"].values())):
            out.append(f"{k[0]} run {k[1] + 1}: {short(a['domain'])} compressed, {short(b['domain'])} as written")
    ra = rank(list(set(rp) & set(orig)), lambda k: rp[k]["start"])
    rb = rank(list(set(rp) & set(orig)), lambda k: orig[k]["start"])
    ks = sorted(ra, key=lambda k: ra[k])
    for i, x in enumerate(ks):
        for y in ks[i + 1:]:
            if ra[x] < ra[y] and rb[x] > rb[y]:
                out.append(f"{y[0]} run {y[1] + 1} starts before {x[0]} run {x[1] + 1} as written "
                           f"({orig[y]['start'] / 60:.2f} min, {orig[x]['start'] / 60:.2f} min), after it compressed")
    return out


# ---- main -----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cluster")
    ap.add_argument("--compress", type=float, default=float(os.environ.get("TG_FIDELITY_COMPRESS", 20)))
    ap.add_argument("--daemon-policy")
    a = ap.parse_args()
    src = os.environ.get("TOPOGANG_SRC") or os.path.abspath(os.path.join(HERE, "../.."))
    binary = os.environ.get("TOPOGANG_BIN") or os.path.join(src, "build/topogang")
    work = tempfile.mkdtemp(prefix="tg-e2e-fidelity.")
    try:
        cluster = Cluster(src, work, a.cluster)
    except Skip as e:
        log(f"SKIP: {e}")
        return 77
    v, sched, watch, ok = Verdicts(), None, None, False
    try:
        api = Api(cluster)
        # the CRD first: kubectl maps the trace's PodGroups through the server
        cluster.kubectl_apply(os.path.join(src, "manifests/crd-podgroup.yaml"))
        subprocess.run([cluster.kubectl, "--kubeconfig", cluster.kubeconfig, "wait", "--for",
                        "condition=established", "crd/podgroups.topogang.io", "--timeout=30s"],
                       check=True, stdout=subprocess.DEVNULL)
        # A fresh apiserver takes about 2 s over the first write of a new
        # resource (its quota evaluator and storage start then): paid here,
        # before the daemon starts, and not by the trace's first gang (whose
        # PodGroup came 2 s late, shifting every start after it).
        api.must("POST", "/apis/topogang.io/v1alpha1/namespaces/default/podgroups",
                 {"apiVersion": "topogang.io/v1alpha1", "kind": "PodGroup",
                  "metadata": {"name": "fidelity-warm-up"}, "spec": {"minMember": 1}})
        api.must("DELETE", "/apis/topogang.io/v1alpha1/namespaces/default/podgroups/fidelity-warm-up")
        objs = read_objects(cluster, FIXTURE)
        policy = read_policy(POLICY)
        cobjs, cpol = compress(objs, a.compress), compress_policy(policy, a.compress)
        rp_doc = replay(binary, cobjs, cpol, work, "compressed")
        or_doc = replay(binary, objs, policy, work, "written")
        rp, orig = replay_runs(rp_doc), replay_runs(or_doc, a.compress)
        dpol = compress_policy(read_policy(a.daemon_policy), a.compress) if a.daemon_policy else cpol
        end = rp_doc["summary"]["end"]
        log(f"trace: {len(rp_doc['gangs'])} gangs, {rp_doc['summary']['pods']} pods, "
            f"{end * a.compress / 60:.0f} min as written, compressed {a.compress:g}x: {end:.0f} s")

        # the cluster: Namespaces, PriorityClasses, Nodes (the CRD came first)
        paths = {"Namespace": "/api/v1/namespaces", "Node": "/api/v1/nodes",
                 "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses"}
        for o in objs:
            if o["kind"] in paths:
                api.must("POST", paths[o["kind"]], o, ok=(201, 409))
        with open(os.path.join(work, "daemon-policy.json"), "w") as f:
            json.dump(dpol, f)
        watch = Watch(api)
        watch.start()
        watch.synced.wait(30)
        sched = Scheduler(binary, cluster, "fidelity", work, os.path.join(work, "daemon-policy.json"),
                          extra=("--v", "debug"))
        sched.wait_ready()
        drv = Driver(api, cobjs)
        finished = drv.run(watch, end + MARGIN_S)
        drv.pool.shutdown(wait=True)
        rc = sched.stop()
        if not finished:
            v.fail("daemon", f"pods not gone {end + MARGIN_S:.0f} s after the trace start: "
                             + ", ".join(sorted(k for k in drv.expected
                                                if k not in drv.live or not drv.live[k]["gone"])))
        if rc != 0:
            v.fail("daemon", f"scheduler exited {rc} after SIGTERM (see {sched.log})")
        rep = sched.sanitizer_report()
        if rep:
            v.fail("daemon", f"sanitizer report:\n{rep}")
        for e in drv.errors + drv.unexpected:
            v.fail("daemon", e)

        # the daemon's runs
        def input_of(lk):
            return drv.input_of(lk) if drv.input_of(lk) else None
        dm = drv.runs()
        placed = daemon_log(sched.log, drv.t0, input_of)
        count = {}
        for gk, t, level, domain in placed:
            gang = drv.pods[gk]["gang"] if gk in drv.pods else gk
            k = count.get(gang, 0)
            count[gang] = k + 1
            r = dm.setdefault((gang, k), {"bound": None, "nodes": {}, "by": None, "complete": False,
                                          "evicted": False})
            r.update(decided=t, level=level, domain=domain)
        for r in dm.values():
            r.setdefault("decided", None)
            r.setdefault("level", None)
            r.setdefault("domain", None)
        rp_resv, dm_resv = reservations_of(rp_doc), daemon_reservations(api, drv.t0 - LEAD_S - 1, input_of)
        shape = {pk: json.dumps([c.get("resources") for c in info["obj"]["spec"]["containers"]],
                                sort_keys=True) for pk, info in drv.pods.items()}
        def held_at(node, t):
            for lk, p in drv.live.items():
                if p["node"] == node and p["bound"] - drv.t0 <= t and \
                        (p["t_gone"] is None or p["t_gone"] - drv.t0 > t):
                    return lk, None if p["t_gone"] is None else p["t_gone"] - drv.t0
            return None
        compare(rp, dm, rp_resv, dm_resv, shape, held_at, v)
        log("")
        log(f"times in seconds from the trace start, compressed {a.compress:g}x (TRACE: the replay's start "
            "as written); # the start order (shared: the same instant); LAG: daemon bound - replay start")
        table(rp, dm, orig, a.compress)
        log("reservations: replay " + (", ".join(f"{g} {short(d)}" for g, d in sorted(rp_resv.items())) or "none")
            + "; daemon " + (", ".join(f"{g} {short(d)}" for g, d in sorted(dm_resv.items())) or "none"))
        spread = drv.exit_spread()
        if spread:
            log(f"members of a run leaving (completed together by this driver) seen apart by up to "
                f"{1000 * spread[0]:.0f} ms ({spread[1]})")
        lags = [dm[k]["bound"] - rp[k]["start"] for k in set(rp) & set(dm) if dm[k]["bound"] is not None]
        if lags:
            log(f"lag (daemon bound - replay start): min {1000 * min(lags):.0f} ms, "
                f"max {1000 * max(lags):.0f} ms over {len(lags)} runs")
        for n in v.named:
            log(f"allowed, {n}")
        for d in compare_written(rp, orig, rp_resv, reservations_of(or_doc)):
            log(f"as written vs compressed (the engine's wall-clock timers, not judged): {d}")
        ok = True
    except Exception as e:  # noqa: BLE001
        v.fail("daemon", f"{type(e).__name__}: {e}")
    finally:
        if watch:
            watch.stopping = True
        if sched:
            sched.kill()
        if a.cluster:  # a reused control plane: leave it as it was found
            for ns in ("ml", "research", "inference"):
                for what in ("pods", "podgroups"):
                    subprocess.call([cluster.kubectl, "--kubeconfig", cluster.kubeconfig, "delete",
                                     what, "-n", ns, "--all", "--grace-period=0", "--force"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cluster.down()
    passed = failed = 0
    for case, msgs in v.fails.items():
        log(f"[ RUN      ] fidelity_{case}")
        for m in msgs:
            log(f"    FAIL: {m}")
        if msgs:
            failed += 1
            log(f"[  FAILED  ] fidelity_{case}")
        else:
            passed += 1
            log(f"[       OK ] fidelity_{case}")
    log(f"[==========] {passed + failed} test(s) run.")
    log(f"[  PASSED  ] {passed} test(s).")
    if failed or not ok:
        log(f"[  FAILED  ] {failed} test(s)")
        log(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
