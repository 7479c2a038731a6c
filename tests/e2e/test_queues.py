#!/usr/bin/env python3
"""Tenant Queues (issue 19) on the real etcd + kube-apiserver
(scripts/cluster-up): the Queue CRDs of KAI and Volcano as their projects
publish them (tests/fixtures/crds) beside ours (manifests/crd-queue.yaml),
and the Queues of tests/fixtures/queues/queues.yaml (one of each API, a
broken KAI one and a broken one of ours).

  absent_api_not_read: only our CRD and KAI's installed. topogang starts,
    says it reads topogang.io and scheduling.run.ai Queues and not Volcano's
    (not served), keeps serving, and tells each broken Queue what is wrong
    with it once: a Warning Event InvalidQueue regarding the Queue, naming
    the field (spec.resources.gpu.quota of kai-broken, spec.resources.
    nvidia.com/gpu.limit of tg-broken), and on ours the condition Valid=False
    with the same field. The good Queues get nothing, and no second Event
    comes for an unchanged Queue. kubectl's printer columns show ours.

  volcano_discovered_and_fixed: a new topogang (--rediscover-seconds 2)
    started before Volcano's CRD exists says it does not read Volcano's
    Queues; the CRD installed and its Queue made (with a broken twin): it
    finds the API without a restart, reads Volcano's Queues too and tells
    the broken one (spec.capability.cpu). tg-broken fixed: its
    condition turns Valid=True, and no Event says anything new of it.
    kai-broken given another problem (a limit below its quota): one new
    Event naming that field.

  limit_holds: our CRD and a Queue team-lim (limit 8 GPUs); two one-pod
    gangs of 8 GPUs labelled topogang.io/queue: team-lim on a cluster with
    room for both: one is bound, the other stays pending with an Event
    naming the queue and the numbers ("queue team-lim at its limit: 8/8
    nvidia.com/gpu"); a pod of a queue that does not exist waits saying so;
    the limit raised to 16: the second is bound.

  status: a Queue team-st (8 GPUs quota and limit; a cpu limit below its
    quota, so Valid=False) and two 8-GPU one-pod gangs in it: one bound, one
    waiting at the limit. Its status reads allocated and fairShare 8
    nvidia.com/gpu, runningGangs 1, waitingGangs 1 (and /metrics'
    topogang_tenant_gangs the same), with the Valid condition
    still there; `kubectl get queues.topogang.io` shows them in the columns
    GPU ALLOCATED, GPU FAIR SHARE, WAITING, RUNNING. Another controller's
    condition added and the spec fixed: Valid turns True and the other
    condition stays (server-side apply). The bound pod deleted:
    the other is bound and the status follows (1 running, 0 waiting). KAI's
    Queue kai-team gets none of these fields.

  reclaim: our CRD, Queues team-ra and team-rb (quota 16 GPUs each, the
    cluster's 32 divided). team-rb fills every node with one-pod gangs of 8
    GPUs (a controller's pods, grace period 30 s, the same priority as
    team-ra's); team-ra submits a gang of 2 x 8 within its quota. team-rb
    is above its fair share (32 > 16) and team-ra below (0 + 16 <= 16): two
    of team-rb's gangs are evicted, gracefully (DisruptionTarget, deleted
    with their own 30 s, never 0), with a Reclaimed Event naming both queues
    and the numbers; team-ra's PodGroup gets Reclaiming. Finalised as a
    kubelet would, team-ra's gang binds; the other two of team-rb's stay;
    topogang_reclaims_total{queue="team-ra"} is 1.

  usage_survives_restart: queues.usageHalfLifeSeconds 3600, a Queue team-u
    running one 8-GPU gang. After a few seconds the scheduler is stopped
    (SIGTERM): the ConfigMap topogang-system/topogang-scheduler-usage holds
    team-u's decayed usage (GPU-seconds > 0). A new scheduler reads it back
    before deciding ("read back" in its log) and /metrics'
    topogang_queue_usage_seconds for team-u starts at about that amount,
    not from zero (before: every restart wiped time fairness out).

Prints cmocka-style lines for scripts/count-tests. Exit 0 passed, 1 failed,
77 no control plane."""
import json
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import run_cases, fail, wait, Scheduler, log, make_namespace, wipe_pods, http_get  # noqa: E402

SRC = os.environ.get("TOPOGANG_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
FIX = os.path.join(SRC, "tests/fixtures")
OURS, KAI, VOLCANO = "topogang.io/v1alpha1", "scheduling.run.ai/v2", "scheduling.volcano.sh/v1beta1"


def kubectl(ctx, *args, stdin=None):
    c = ctx["cluster"]
    return subprocess.run([c.kubectl, "--kubeconfig", c.kubeconfig, "--request-timeout=30s", *args],
                          input=stdin, capture_output=True, text=True, check=False)


def install_crd(ctx, path, name):
    r = kubectl(ctx, "apply", "--server-side", "-f", path)
    if r.returncode:
        raise RuntimeError(f"apply {path}: {r.stderr}")
    r = kubectl(ctx, "wait", "--for", "condition=Established", f"crd/{name}", "--timeout=60s")
    if r.returncode:
        raise RuntimeError(f"CRD {name} not established: {r.stderr}")


def fixture_docs(apis):
    """The documents of queues.yaml whose apiVersion is in apis, as YAML text."""
    text = open(os.path.join(FIX, "queues/queues.yaml")).read()
    docs = [d for d in text.split("\n---\n") if any(f"apiVersion: {a}\n" in d for a in apis)]
    return "\n---\n".join(docs) + "\n"


def queue_events(ctx, name):
    """InvalidQueue Events regarding the Queue name (filed in "default")."""
    return [e for e in ctx["api"].events("default") if e.get("reason") == "InvalidQueue"
            and e.get("regarding", {}).get("kind") == "Queue"
            and e.get("regarding", {}).get("name") == name]


def valid_condition(ctx, name):
    st, doc = ctx["api"].request("GET", f"/apis/{OURS}/queues/{name}")
    conds = ((doc or {}).get("status") or {}).get("conditions") or [] if st == 200 else []
    return next((c for c in conds if c.get("type") == "Valid"), None)


def start(ctx, name, extra=()):
    s = Scheduler(ctx["bin"], ctx["cluster"], name, ctx["work"], ctx["policy"],
                  extra=["--gang-sources", "none", *extra])
    ctx["scheds"].append(s)
    s.wait_ready(60)
    return s


def log_line(s, needle, timeout=30):
    found = []
    wait(lambda: found.append(1) or needle in open(s.log, errors="replace").read(), timeout,
         f"'{needle}' in {s.log}")
    return needle in open(s.log, errors="replace").read()


def check_event(ctx, name, api_version, field):
    ok = wait(lambda: queue_events(ctx, name), 30, f"an InvalidQueue Event on Queue {name}")
    if not ok:
        return
    e = queue_events(ctx, name)[0]
    if e.get("type") != "Warning" or field not in e.get("note", ""):
        fail(f"Event on {name}: {e.get('type')} {e.get('note')!r}, wanted a Warning naming {field}")
    reg = e.get("regarding", {})
    if reg.get("apiVersion") != api_version or reg.get("namespace"):
        fail(f"Event on {name} regards {reg}: wanted apiVersion {api_version} and no namespace")


def case_absent_api_not_read(ctx):
    install_crd(ctx, os.path.join(SRC, "manifests/crd-queue.yaml"), "queues.topogang.io")
    install_crd(ctx, os.path.join(FIX, "crds/scheduling.run.ai_queues.yaml"), "queues.scheduling.run.ai")
    r = kubectl(ctx, "apply", "-f", "-", stdin=fixture_docs([OURS, KAI]))
    if r.returncode:
        raise RuntimeError(f"applying the Queues: {r.stderr}")
    s = start(ctx, "queues-a")
    log_line(s, "tenant Queues read from: topogang.io/v1alpha1/queues, scheduling.run.ai/v2/queues; "
                "not served (not watched): scheduling.volcano.sh/v1beta1/queues")
    check_event(ctx, "kai-broken", KAI, "spec.resources.gpu.quota")
    check_event(ctx, "tg-broken", OURS, "spec.resources.nvidia.com/gpu.limit")
    wait(lambda: valid_condition(ctx, "tg-broken"), 30, "the Valid condition on Queue tg-broken")
    c = valid_condition(ctx, "tg-broken") or {}
    if c.get("status") != "False" or c.get("reason") != "InvalidSpec" or \
            "spec.resources.nvidia.com/gpu.limit" not in c.get("message", ""):
        fail(f"tg-broken's condition: {c}")
    time.sleep(3)  # time for a repeat, which must not come
    for name in ("kai-broken", "tg-broken"):
        n = len(queue_events(ctx, name))
        if n != 1:
            fail(f"{n} InvalidQueue Events on {name}; once per change is 1")
    for name in ("kai-team", "tg-team"):
        if queue_events(ctx, name):
            fail(f"an InvalidQueue Event on the valid Queue {name}: {queue_events(ctx, name)}")
    if valid_condition(ctx, "tg-team"):
        fail(f"a condition written on the valid Queue tg-team: {valid_condition(ctx, 'tg-team')}")
    if s.readyz()[0] != 200:
        fail("the scheduler stopped serving")
    r = kubectl(ctx, "get", "queues.topogang.io", "tg-team")
    lines = r.stdout.splitlines()
    if r.returncode or len(lines) != 2 or lines[0].split()[:6] != ["NAME", "PARENT", "GPU", "QUOTA", "GPU", "LIMIT"] \
            or lines[1].split()[:4] != ["tg-team", "org", "24", "48"]:
        fail(f"kubectl get queues.topogang.io tg-team:\n{r.stdout}{r.stderr}")
    rep = s.sanitizer_report()
    if rep:
        fail(f"sanitizer: {rep}")


def case_volcano_discovered_and_fixed(ctx):
    # started before Volcano's CRD exists: discovery asked again finds it
    s = start(ctx, "queues-b", extra=["--rediscover-seconds", "2"])
    log_line(s, "not served (not watched): scheduling.volcano.sh/v1beta1/queues")
    install_crd(ctx, os.path.join(FIX, "crds/scheduling.volcano.sh_queues.yaml"),
                "queues.scheduling.volcano.sh")
    broken = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: volcano-broken}\n"
              "spec: {weight: 1, capability: {cpu: '-4'}}\n")
    r = kubectl(ctx, "apply", "-f", "-", stdin=fixture_docs([VOLCANO]) + "---\n" + broken)
    if r.returncode:
        raise RuntimeError(f"applying the Volcano Queues: {r.stderr}")
    log_line(s, "/apis/scheduling.volcano.sh/v1beta1/queues is served now: watched from now on")
    log_line(s, "tenant Queues read from: topogang.io/v1alpha1/queues, scheduling.run.ai/v2/queues, "
                "scheduling.volcano.sh/v1beta1/queues; not served (not watched): -")
    check_event(ctx, "volcano-broken", VOLCANO, "spec.capability.cpu")
    if queue_events(ctx, "volcano-team"):
        fail("an InvalidQueue Event on the valid Queue volcano-team")
    # a new process tells what it finds once more: that Event first, then the fix
    wait(lambda: len(queue_events(ctx, "tg-broken")) >= 2, 30, "the new process's Event on tg-broken")
    time.sleep(1)
    before = len(queue_events(ctx, "tg-broken"))
    r = kubectl(ctx, "patch", "queues.topogang.io", "tg-broken", "--type=merge", "-p",
                '{"spec":{"resources":{"nvidia.com/gpu":{"limit":"32"}}}}')
    if r.returncode:
        raise RuntimeError(f"fixing tg-broken: {r.stderr}")
    wait(lambda: (valid_condition(ctx, "tg-broken") or {}).get("status") == "True", 30,
         "tg-broken's condition Valid=True once fixed")
    if len(queue_events(ctx, "tg-broken")) != before:
        fail("an InvalidQueue Event for the fixed Queue tg-broken")
    # a different problem is a change: told once more, naming the new field
    n = len(queue_events(ctx, "kai-broken"))
    r = kubectl(ctx, "patch", "queues.scheduling.run.ai", "kai-broken", "--type=merge", "-p",
                '{"spec":{"resources":{"gpu":{"quota":8,"limit":2}}}}')
    if r.returncode:
        raise RuntimeError(f"changing kai-broken: {r.stderr}")
    wait(lambda: any("spec.resources.gpu.limit" in e.get("note", "") for e in queue_events(ctx, "kai-broken")),
         30, "an InvalidQueue Event on kai-broken naming spec.resources.gpu.limit")
    time.sleep(2)
    if len(queue_events(ctx, "kai-broken")) != n + 1:
        fail(f"{len(queue_events(ctx, 'kai-broken')) - n} new Events on kai-broken for one change")
    rep = s.sanitizer_report()
    if rep:
        fail(f"sanitizer: {rep}")


def lim_queue(gpus):
    return {"apiVersion": OURS, "kind": "Queue", "metadata": {"name": "team-lim"},
            "spec": {"resources": {"nvidia.com/gpu": {"quota": "4", "limit": str(gpus)}}}}


def lim_pod(name, queue):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "lim", "labels": {"topogang.io/queue": queue}},
            "spec": {"schedulerName": "topogang", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}


def node_of_ns(ctx, ns, name):
    st, doc = ctx["api"].request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    return (doc or {}).get("spec", {}).get("nodeName") if st == 200 else None


def node_of(ctx, name):
    return node_of_ns(ctx, "lim", name)


def notes(ctx, pod):
    return " | ".join(e.get("note", "") for e in ctx["api"].events("lim")
                      if e.get("regarding", {}).get("name") == pod)


def case_limit_holds(ctx):
    install_crd(ctx, os.path.join(SRC, "manifests/crd-queue.yaml"), "queues.topogang.io")
    api = ctx["api"]
    st, _ = api.request("POST", f"/apis/{OURS}/queues", lim_queue(8))
    if st not in (200, 201, 409):
        raise RuntimeError(f"creating Queue team-lim: HTTP {st}")
    make_namespace(api, "lim")
    start(ctx, "queues-lim")
    api.create_pod("lim", lim_pod("l1", "team-lim"))
    wait(lambda: node_of(ctx, "l1"), 30, "lim/l1 bound")
    api.create_pod("lim", lim_pod("l2", "team-lim"))
    api.create_pod("lim", lim_pod("x1", "no-such-queue"))
    want = "queue team-lim at its limit: 8/8 nvidia.com/gpu"
    wait(lambda: want in notes(ctx, "l2"), 30, f"an Event on lim/l2 saying '{want}'")
    wait(lambda: "queue no-such-queue does not exist" in notes(ctx, "x1"), 30,
         "an Event on lim/x1 saying its queue does not exist")
    if node_of(ctx, "l2") or node_of(ctx, "x1"):
        fail(f"bound past the queue's limit or without its queue: l2 on {node_of(ctx, 'l2')}, "
             f"x1 on {node_of(ctx, 'x1')}")
    st, doc = api.request("GET", f"/apis/{OURS}/queues/team-lim")
    body = lim_queue(16)
    body["metadata"]["resourceVersion"] = (doc or {}).get("metadata", {}).get("resourceVersion")
    st, _ = api.request("PUT", f"/apis/{OURS}/queues/team-lim", body)
    if st != 200:
        fail(f"raising team-lim's limit: HTTP {st}")
    wait(lambda: node_of(ctx, "l2"), 60, "lim/l2 bound once the limit is 16")
    rep = ctx["scheds"][-1].sanitizer_report()
    if rep:
        fail(f"sanitizer: {rep}")


def st_queue():
    # cpu's limit below its quota: a problem it lives with (Valid=False), GPUs as written
    return {"apiVersion": OURS, "kind": "Queue", "metadata": {"name": "team-st"},
            "spec": {"resources": {"nvidia.com/gpu": {"quota": "8", "limit": "8"},
                                   "cpu": {"quota": "4", "limit": "2"}}}}


def st_pod(name):
    p = lim_pod(name, "team-st")
    p["metadata"]["namespace"] = "st"
    return p


def queue_status(ctx, name, api_version=OURS):
    st, doc = ctx["api"].request("GET", f"/apis/{api_version}/queues/{name}")
    return ((doc or {}).get("status") or {}) if st == 200 else {}


def columns(text):
    """kubectl's table as {column: value} for its one row (columns by header offset)."""
    lines = text.splitlines()
    if len(lines) != 2:
        return {}
    head, row = lines
    names = [m for m in re.finditer(r"\S+(?: \S+)*", head)]
    return {m.group(0): row[m.start():].split()[0] if len(row) > m.start() and row[m.start():].split() else ""
            for m in names}


def case_status(ctx):
    install_crd(ctx, os.path.join(SRC, "manifests/crd-queue.yaml"), "queues.topogang.io")
    api = ctx["api"]
    st, _ = api.request("POST", f"/apis/{OURS}/queues", st_queue())
    if st not in (200, 201, 409):
        raise RuntimeError(f"creating Queue team-st: HTTP {st}")
    make_namespace(api, "st")
    s = start(ctx, "queues-st")
    wait(lambda: (valid_condition(ctx, "team-st") or {}).get("status") == "False", 30,
         "team-st's condition Valid=False (its cpu limit)")
    api.create_pod("st", st_pod("s1"))
    wait(lambda: node_of_ns(ctx, "st", "s1"), 30, "st/s1 bound")
    api.create_pod("st", st_pod("s2"))

    def counted():
        q = queue_status(ctx, "team-st")
        return (q.get("allocated") or {}).get("nvidia.com/gpu") == 8 and q.get("runningGangs") == 1 \
            and q.get("waitingGangs") == 1
    wait(counted, 30, "team-st's status: 8 GPUs allocated, 1 gang running, 1 waiting")
    got = {}

    def metric():
        got["text"] = http_get(s.port, "/metrics", timeout=10)[1]
        return all(f'topogang_tenant_gangs{{queue="team-st",state="{k}"}} 1\n' in got["text"]
                   for k in ("waiting", "running"))
    wait(metric, 30, "topogang_tenant_gangs of team-st: 1 waiting, 1 running on /metrics")
    q = queue_status(ctx, "team-st")
    if (q.get("fairShare") or {}).get("nvidia.com/gpu") != 8:
        fail(f"team-st's fair share: {q.get('fairShare')}, wanted 8 GPUs (its quota and limit)")
    v = valid_condition(ctx, "team-st")
    if not v or v.get("status") != "False" or "spec.resources.cpu.limit" not in v.get("message", ""):
        fail(f"team-st's Valid condition after the status writes: {v}; status {q}")
    if node_of_ns(ctx, "st", "s2"):
        fail("st/s2 bound past team-st's limit")
    r = kubectl(ctx, "get", "queues.topogang.io", "team-st")
    col = columns(r.stdout)
    want = {"NAME": "team-st", "GPU QUOTA": "8", "GPU LIMIT": "8", "GPU ALLOCATED": "8",
            "GPU FAIR SHARE": "8", "WAITING": "1", "RUNNING": "1", "VALID": "False"}
    if r.returncode or any(col.get(k) != w for k, w in want.items()):
        fail(f"kubectl get queues.topogang.io team-st: {col}, wanted {want}:\n{r.stdout}{r.stderr}")
    # another controller's condition beside ours, then the spec fixed: Valid
    # turns True and the other condition stays (a merge patch of conditions
    # would replace the whole list)
    other = {"type": "Audited", "status": "True", "reason": "Checked", "message": "by another controller",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}
    conds = (queue_status(ctx, "team-st").get("conditions") or []) + [other]
    st, _ = api.request("PATCH", f"/apis/{OURS}/queues/team-st/status", {"status": {"conditions": conds}},
                        ctype="application/merge-patch+json")
    if st != 200:
        fail(f"adding another controller's condition to team-st: HTTP {st}")
    st, doc = api.request("GET", f"/apis/{OURS}/queues/team-st")
    body = st_queue()
    body["spec"]["resources"]["cpu"]["limit"] = "4"
    body["metadata"]["resourceVersion"] = (doc or {}).get("metadata", {}).get("resourceVersion")
    st, _ = api.request("PUT", f"/apis/{OURS}/queues/team-st", body)
    if st != 200:
        fail(f"fixing team-st's cpu limit: HTTP {st}")
    wait(lambda: (valid_condition(ctx, "team-st") or {}).get("status") == "True", 30,
         "team-st's condition Valid=True once its spec is clean")
    kept = [c for c in queue_status(ctx, "team-st").get("conditions") or [] if c.get("type") == "Audited"]
    if not kept:
        fail(f"another controller's condition lost when Valid was written: {queue_status(ctx, 'team-st')}")
    # s1 gone: nothing running, s2 placed (8 GPUs free in the queue again)
    api.delete_pod("st", "s1")
    wait(lambda: queue_status(ctx, "team-st").get("runningGangs") == 1
         and queue_status(ctx, "team-st").get("waitingGangs") == 0, 60,
         "team-st's status once s1 is gone and s2 placed: 1 running, 0 waiting")
    # KAI's Queues (case absent_api_not_read made some) get no status from us
    kai = queue_status(ctx, "kai-team", KAI)
    if any(k in kai for k in ("fairShare", "waitingGangs", "runningGangs")):
        fail(f"topogang wrote KAI Queue kai-team's status: {kai}")
    if s.readyz()[0] != 200:
        fail("the scheduler stopped serving")


def r_queue(name):
    return {"apiVersion": OURS, "kind": "Queue", "metadata": {"name": name},
            "spec": {"resources": {"nvidia.com/gpu": {"quota": "16"}}}}


def r_gang(api, ns, name, n, queue, node=None):
    """A PodGroup of n pods of 8 GPUs in queue; bound to node (a controller's
    pod, grace 30 s) when given, else pending."""
    api.must("POST", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups",
             {"apiVersion": "topogang.io/v1alpha1", "kind": "PodGroup",
              "metadata": {"name": name, "namespace": ns, "labels": {"topogang.io/queue": queue}},
              "spec": {"minMember": n}})
    for i in range(n):
        meta = {"name": f"{name}-{i}", "namespace": ns,
                "labels": {"topogang.io/pod-group": name, "topogang.io/queue": queue}}
        spec = {"schedulerName": "topogang", "terminationGracePeriodSeconds": 30 if node else 0,
                "containers": [{"name": "c", "image": "busybox",
                                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
        if node:
            meta["ownerReferences"] = [{"apiVersion": "example.com/v1", "kind": "TrainJob",
                                        "name": name, "uid": f"00000000-0000-0000-0000-{abs(hash(name)) % 10**12:012d}",
                                        "controller": True}]
            spec["nodeName"] = node
        api.create_pod(ns, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def r_pods(api, ns):
    return {p["metadata"]["name"]: p for p in api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]}


def r_events(api, ns, reason):
    return [e for e in api.events(ns) if e.get("reason") == reason]


def case_reclaim(ctx):
    install_crd(ctx, os.path.join(SRC, "manifests/crd-queue.yaml"), "queues.topogang.io")
    api = ctx["api"]
    wipe_pods(api, "lim")  # limit_holds' pods would hold GPUs
    for q in ("team-ra", "team-rb"):
        st, _ = api.request("POST", f"/apis/{OURS}/queues", r_queue(q))
        if st not in (200, 201, 409):
            raise RuntimeError(f"creating Queue {q}: HTTP {st}")
    make_namespace(api, "ra")
    make_namespace(api, "rb")
    nodes = sorted(ctx["alloc"])
    if sum(ctx["alloc"][n] for n in nodes) != 32:
        raise RuntimeError(f"this case wants 32 GPUs: {ctx['alloc']}")
    for k, node in enumerate(nodes):
        for j in range(ctx["alloc"][node] // 8):
            r_gang(api, "rb", f"b{k}{j}", 1, "team-rb", node)
    s = start(ctx, "queues-reclaim")
    r_gang(api, "ra", "a", 2, "team-ra")
    victims = []

    def terminating():
        victims[:] = [n for n, p in r_pods(api, "rb").items() if p["metadata"].get("deletionTimestamp")]
        return len(victims) >= 2
    if not wait(terminating, 30, "two of team-rb's pods Terminating"):
        log("ra's Events: " + " | ".join(f"{e.get('reason')}: {e.get('note')}" for e in api.events("ra")))
        return
    pods = r_pods(api, "rb")
    if len(victims) != 2:
        fail(f"victims {victims}: want 2 of team-rb's 8-GPU gangs (16 GPUs)")
    for v in victims:
        p = pods[v]
        grace = p["metadata"].get("deletionGracePeriodSeconds")
        conds = {c["type"]: c for c in p.get("status", {}).get("conditions", [])}
        if grace != 30:
            fail(f"{v} deleted with grace {grace}, not its own 30 s")
        if conds.get("DisruptionTarget", {}).get("reason") != "PreemptionByScheduler" or \
                "queue team-ra" not in conds["DisruptionTarget"].get("message", ""):
            fail(f"{v}: DisruptionTarget {conds.get('DisruptionTarget')}")
    want = "from queue team-rb (fair share 16, allocated 32) for queue team-ra (fair share 16, allocated 0)"
    wait(lambda: any(want in e.get("note", "") for e in r_events(api, "rb", "Reclaimed")
                     if e.get("regarding", {}).get("kind") == "PodGroup"), 15,
         f"a Reclaimed Event on a victim PodGroup saying '{want}'")
    wait(lambda: any("reclaimed 16 nvidia.com/gpu " + want in e.get("note", "")
                     for e in r_events(api, "ra", "Reclaiming")
                     if e.get("regarding", {}).get("name") == "a"), 15,
         "a Reclaiming Event on ra/a with the numbers")
    if r_events(api, "rb", "Preempted"):
        fail("a Preempted Event: this was a reclaim")
    for v in victims:  # as a kubelet would, once the grace period runs
        api.delete_pod("rb", v)
    wait(lambda: all(r_pods(api, "ra").get(f"a-{i}", {}).get("spec", {}).get("nodeName")
                     for i in range(2)), 60, "team-ra's gang bound")
    left = [n for n, p in r_pods(api, "rb").items() if not p["metadata"].get("deletionTimestamp")]
    if len(left) != 2:
        fail(f"team-rb keeps {left}: want its other two gangs (its fair share, 16)")
    metric = 'topogang_reclaims_total{queue="team-ra"} 1'
    wait(lambda: metric in http_get(s.port, "/metrics")[1], 15, f"{metric} on /metrics")
    rep = s.sanitizer_report()
    if rep:
        fail(f"sanitizer: {rep}")


def usage_metric(s, queue):
    """topogang_queue_usage_seconds of queue's GPUs on s's /metrics, or None."""
    text = http_get(s.port, "/metrics", timeout=10)[1]
    m = re.search(r'^topogang_queue_usage_seconds\{queue="%s",resource="nvidia.com/gpu"\} (\S+)$'
                  % re.escape(queue), text, re.M)
    return float(m.group(1)) if m else None


def case_usage_survives_restart(ctx):
    install_crd(ctx, os.path.join(SRC, "manifests/crd-queue.yaml"), "queues.topogang.io")
    api = ctx["api"]
    q = {"apiVersion": OURS, "kind": "Queue", "metadata": {"name": "team-u"},
         "spec": {"resources": {"nvidia.com/gpu": {"quota": "8"}}}}
    st, _ = api.request("POST", f"/apis/{OURS}/queues", q)
    if st not in (200, 201, 409):
        raise RuntimeError(f"creating Queue team-u: HTTP {st}")
    make_namespace(api, "topogang-system")
    make_namespace(api, "usage")
    policy = os.path.join(ctx["work"], "policy-usage.yaml")
    with open(policy, "w") as f:
        f.write(open(ctx["policy"]).read() + "queues: {usageHalfLifeSeconds: 3600}\n")
    saved_policy, ctx["policy"] = ctx["policy"], policy
    try:
        s = start(ctx, "queues-usage")
        p = lim_pod("u1", "team-u")
        p["metadata"]["namespace"] = "usage"
        api.create_pod("usage", p)
        wait(lambda: node_of_ns(ctx, "usage", "u1"), 30, "usage/u1 bound")
        wait(lambda: (usage_metric(s, "team-u") or 0) > 8, 30,
             "team-u's usage above 8 GPU-seconds on /metrics")
        s.finish()
        path = "/api/v1/namespaces/topogang-system/configmaps/topogang-scheduler-usage"
        st, cm = api.request("GET", path)
        if st != 200:
            fail(f"no saved usage after SIGTERM: GET {path}: HTTP {st}")
            return
        saved = json.loads(cm["data"]["usage.json"])
        used = saved["queues"]["team-u"]["nvidia.com/gpu"]
        if not used > 8:
            fail(f"saved usage of team-u {used} GPU-seconds, want > 8: {cm['data']}")
        s2 = start(ctx, "queues-usage-2")
        log_line(s2, "read back")
        got = usage_metric(s2, "team-u")
        wait(lambda: usage_metric(s2, "team-u") is not None, 30, "team-u on the new scheduler's /metrics")
        got = usage_metric(s2, "team-u")
        # decayed by at most a few seconds of a one-hour half-life, plus what accrued since
        if got is None or not got >= used * 0.99:
            fail(f"the new scheduler's usage of team-u is {got}, want about the saved {used}")
        s2.finish()
    finally:
        ctx["policy"] = saved_policy


CASES = [case_absent_api_not_read, case_usage_survives_restart, case_volcano_discovered_and_fixed, case_limit_holds, case_status,
         case_reclaim]


def main():
    return run_cases("queues", CASES, "gang: {reserveAfterSeconds: 0}\n", nodes=4, rack_size=4, blocks=1)


if __name__ == "__main__":
    log("e2e_queues: the Queues of three APIs read, broken ones told once")
    sys.exit(main())
