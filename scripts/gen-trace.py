#!/usr/bin/env python3
"""Writes examples/trace/: a day of the 64-node example cluster for
`topogang simulate --replay -f examples/trace/`.

  cluster.yaml    the Node objects of examples/cluster.yaml (8 GPUs each; the
                  tainted, cordoned and NotReady ones too) and three
                  PriorityClasses: high (1000), normal (100), low (10)
  workload.yaml   PodGroups and pods arriving over 24 hours, each pod with its
                  run time in the annotation simulate.topogang.io/duration:
                  - inference gangs (priority high): 4 pods x 4 GPUs, NVLink
                    domain preferred, rack required; most start at night, a
                    few arrive into the full cluster in the day and preempt;
                  - training gangs (normal): 2 or 4 pods x 8 GPUs, rack
                    required, NVLink domain preferred: a burst at 08:00, a
                    steady stream all day, a trickle at night;
                  - research sweeps (low): 1 or 2 pods x 8 GPUs at night; the
                    morning's training preempts them;
                  - notebooks and preprocessing (single pods, low): 1-2 GPUs;
                  - ml/llama-pretrain (normal): 8 pods x 8 GPUs, a whole rack,
                    arriving at 09:30 while normal-priority jobs keep every
                    rack busy: it cannot preempt them (same priority) and
                    starves unless a rack is reserved for it
                    (gang.reserveAfterSeconds, default 300).
  policies/       policies to compare against the default one:
                  no-reservation.yaml (reserveAfterSeconds 0), spread.yaml.

Deterministic (fixed seed); rerun after changing it and commit the output.
Usage: scripts/gen-trace.py [REPO]   (default: this script's repository)"""
import os
import random
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
OUT = os.path.join(ROOT, "examples", "trace")
START = 1772409600  # 2026-03-02T00:00:00Z
DAY = 86400
rng = random.Random(20260302)


def stamp(t):
    t = int(t)
    d, s = divmod(t, DAY)
    return "2026-03-%02dT%02d:%02d:%02dZ" % (2 + d, s // 3600, s // 60 % 60, s % 60)


def dur(s):
    s = int(s)
    h, m = s // 3600, s // 60 % 60
    return ("%dh" % h if h else "") + ("%dm" % m if m else "") + ("" if h or m else "%ds" % s)


def nodes():
    """The Node documents of examples/cluster.yaml, as they are."""
    text = open(os.path.join(ROOT, "examples", "cluster.yaml")).read()
    return [d.strip("\n") for d in text.split("\n---\n") if "\nkind: Node\n" in "\n" + d + "\n"]


out = []


def emit(doc):
    out.append(doc.strip("\n"))


def group(ns, name, t, size, prio, required, preferred=None, timeout=14400):
    topo = "required: %s" % required + (", preferred: %s" % preferred if preferred else "")
    emit(f"""apiVersion: topogang.io/v1alpha1
kind: PodGroup
metadata: {{name: {name}, namespace: {ns}, creationTimestamp: "{stamp(t)}"}}
spec: {{minMember: {size}, priorityClassName: {prio}, scheduleTimeoutSeconds: {timeout}, topology: {{{topo}}}}}""")


def pod(ns, name, t, run, prio, gpus, cpu, owner, grp=None):
    labels = f"\n  labels: {{topogang.io/pod-group: {grp}}}" if grp else ""
    emit(f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  creationTimestamp: "{stamp(t)}"{labels}
  annotations: {{simulate.topogang.io/duration: "{dur(run)}"}}
  ownerReferences: [{{apiVersion: batch/v1, kind: {owner[0]}, name: {owner[1]}, uid: {owner[1]}-uid, controller: true}}]
spec:
  schedulerName: topogang
  priorityClassName: {prio}
  tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
  containers:
  - name: main
    image: trainer
    resources: {{requests: {{nvidia.com/gpu: {gpus}, cpu: "{cpu}", memory: {gpus * 100 if gpus else 16}Gi}}}}""")


def gang(ns, name, t, size, gpus, run, prio, required, preferred=None, timeout=14400, kind="Job"):
    group(ns, name, t, size, prio, required, preferred, timeout)
    for i in range(size):
        # members are created by their controller within a few seconds
        pod(ns, f"{name}-{i}", t + i % 3, run, prio, gpus, gpus * 12, (kind, name), name)


def stream(gap, until, fn):
    """Calls fn(t, n) at random arrivals; gap(hour) is the mean gap in seconds."""
    t, n = 0.0, 0
    while True:
        t += rng.expovariate(1 / gap(t / 3600))
        if t >= until:
            return
        fn(t, n)
        n += 1


# inference: 4 services start at night and run most of the day; 3 more
# arrive in the day into a full cluster (they preempt research sweeps)
for i, (t, run) in enumerate([(0, 20 * 3600), (900, 16 * 3600), (2100, 18 * 3600),
                              (3300, 14 * 3600), (14.5 * 3600, 5 * 3600),
                              (16.25 * 3600, 5 * 3600), (18 * 3600, 4 * 3600)]):
    gang("inference", f"serve-{i}", t, 4, 4, run, "high", "rack", "nvlink-domain", timeout=1800,
         kind="LeaderWorkerSet")

# training: the team's morning burst (08:00-10:00), then a steady stream
# through the working day, a trickle at night
stream(lambda h: 240 if 8 <= h < 10 else 300 if 10 <= h < 19 else 1500, DAY - 2 * 3600,
       lambda t, n: gang("ml", f"train-{n:03d}", t, rng.choice([2, 2, 2, 4, 4]), 8,
                         rng.choice([1800, 3600, 5400, 7200, 10800]), "normal", "rack",
                         "nvlink-domain"))

# research sweeps: low priority, at night (the morning's training evicts
# what is still running)
stream(lambda h: 240 if h < 7 or h >= 20 else 10 ** 7, DAY - 2 * 3600,
       lambda t, n: gang("research", f"sweep-{n:03d}", t, rng.choice([1, 2]), 8,
                         rng.choice([3600, 5400, 7200, 10800]), "low", "rack"))

# single pods: notebooks (1-2 GPUs) and preprocessing (no GPU), in the day
stream(lambda h: 300 if 8 <= h < 20 else 1800, DAY - 3600, lambda t, n: pod(
    "research", f"nb-{n:03d}", t, rng.choice([600, 1200, 1800, 3600, 5400]), "low",
    rng.choice([1, 1, 2]), 8, ("Job", f"nb-{n:03d}")) if n % 4 else pod(
    "research", f"prep-{n:03d}", t, rng.choice([900, 1800]), "low", 0, 16, ("Job", f"prep-{n:03d}")))

# the big one: a whole rack at normal priority, in the busiest hour
gang("ml", "llama-pretrain", 9.5 * 3600, 8, 8, 4 * 3600, "normal", "rack", timeout=43200,
     kind="JobSet")

os.makedirs(os.path.join(OUT, "policies"), exist_ok=True)
head = "# Generated by scripts/gen-trace.py; see there. "
with open(os.path.join(OUT, "cluster.yaml"), "w") as f:
    f.write(head + "The nodes of examples/cluster.yaml and the PriorityClasses.\n---\n")
    docs = nodes()
    for name, value in [("high", 1000), ("normal", 100), ("low", 10)]:
        docs.append(f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                    f"metadata: {{name: {name}}}\nvalue: {value}")
    f.write("\n---\n".join(docs) + "\n")
with open(os.path.join(OUT, "workload.yaml"), "w") as f:
    f.write(head + "A day of arrivals; run times in simulate.topogang.io/duration.\n---\n")
    f.write("\n---\n".join(out) + "\n")
with open(os.path.join(OUT, "policies", "no-reservation.yaml"), "w") as f:
    f.write(head + "The default policy without reservations for starving gangs.\n"
            "gang: {reserveAfterSeconds: 0}\n")
with open(os.path.join(OUT, "policies", "spread.yaml"), "w") as f:
    f.write(head + "The default policy, spreading gangs instead of packing them.\n"
            "placement: {strategy: spread}\n")
