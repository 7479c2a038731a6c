#!/usr/bin/env python3
"""Checks of the Helm chart's output for tests/e2e/test_manifests.sh (TG_INSTALL=helm).

  helm_compare.py objects HELM.yaml KUSTOMIZE.yaml
      the chart renders the objects of manifests/: the same kinds, namespaces
      and names; specs equal (labels and annotations aside); every label of
      manifests/ kept (Helm adds its own).
  helm_compare.py values HELM.yaml
      the output of the values the test sets (agent off, gang sources volcano
      and job only, image, replicas, policy) says so.
Prints a summary or the problems; exit 1 on a problem."""
import sys
import yaml


def load(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("labels", "annotations")}
    if isinstance(o, list):
        return [strip(x) for x in o]
    return o


def objects(helm, kust):
    def index(docs):
        return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
    h, k = index(load(helm)), index(load(kust))
    errs = ["only in the chart: %s/%s/%s" % x for x in sorted(set(h) - set(k))]
    errs += ["only in manifests/: %s/%s/%s" % x for x in sorted(set(k) - set(h))]
    for x in sorted(set(h) & set(k)):
        if strip(h[x]) != strip(k[x]):
            errs.append("%s/%s/%s differs" % x)
        for key, v in (k[x]["metadata"].get("labels") or {}).items():
            if (h[x]["metadata"].get("labels") or {}).get(key) != v:
                errs.append("%s/%s/%s: label %s" % (x + (key,)))
    return errs, "%d objects" % len(h)


def values(helm):
    docs = load(helm)
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    errs = []
    if kinds & {("DaemonSet", "topogang-agent"), ("ClusterRole", "topogang-agent"),
                 ("Namespace", "topogang-agent"),
                 ("ValidatingAdmissionPolicy", "topogang-agent-own-node"),
                 ("ValidatingAdmissionPolicyBinding", "topogang-agent-own-node")}:
        errs.append("agent.enabled=false still renders the agent")
    dep = next(d for d in docs if d["kind"] == "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    for arg in ("--gang-sources=volcano,job", "--config-map=tg/topogang-config"):
        if arg not in c["args"]:
            errs.append("no %s in %s" % (arg, c["args"]))
    if c["image"] != "registry.example/tg:9.9":
        errs.append("image %s" % c["image"])
    if dep["spec"]["replicas"] != 3:
        errs.append("replicas %s" % dep["spec"]["replicas"])
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    if cm["data"]["config.yaml"].strip() != "schedulerName: gangs":
        errs.append("policy %r" % cm["data"]["config.yaml"])
    rules = next(d for d in docs if d["kind"] == "ClusterRole"
                 and d["metadata"]["name"] == "topogang-scheduler")["rules"]
    # the gang sources switch off the peers' PodGroups and workloads; their
    # Queues are read whatever they say (tenant queues, docs/queues.md)
    groups = {g for r in rules if set(r["resources"]) - {"queues", "queues/status"} for g in r["apiGroups"]}
    if not any(r["resources"] == ["queues"] and "scheduling.run.ai" in r["apiGroups"] for r in rules):
        errs.append("no rule to read KAI's Queues")
    for g in ("scheduling.volcano.sh", "batch"):
        if g not in groups:
            errs.append("no rule for " + g)
    for g in ("scheduling.x-k8s.io", "scheduling.run.ai", "jobset.x-k8s.io",
              "leaderworkerset.x-k8s.io", "kubeflow.org", "trainer.kubeflow.org"):
        if g in groups:
            errs.append("a rule for " + g)
    if any("scheduling.k8s.io" in r["apiGroups"] and "podgroups" in r["resources"] for r in rules):
        errs.append("a rule for the upstream PodGroup, switched off")
    return errs, "ok"


if __name__ == "__main__":
    errs, ok = objects(*sys.argv[2:4]) if sys.argv[1] == "objects" else values(sys.argv[2])
    print("; ".join(errs) if errs else ok)
    sys.exit(1 if errs else 0)
