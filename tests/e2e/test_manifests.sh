#!/usr/bin/env bash
# e2e: the manifests a cluster admin applies, against a real etcd +
# kube-apiserver on loopback (scripts/cluster-up; binaries from
# scripts/build-k8s, cached in ~/.cache/topogang).
#
# Checks: `kubectl apply -k manifests/` really applies (and again, unchanged);
# the PodGroup CRD (names, schema, printer columns, status subresource);
# admission rejects bad PodGroups with a clear message; the scheduler's
# ServiceAccount can do what the daemon needs and nothing else (kubectl auth
# can-i, and real requests with a ServiceAccount token); the Deployment's pod
# template is admitted; the ConfigMap's policy passes the real parser and is
# the default policy; examples/k8s applies and its gangs are consistent.
#
# TG_INSTALL=helm (tests/e2e/test_helm.sh) installs the Helm chart instead,
# `helm template charts/topogang | kubectl apply -f -` (helm built by
# scripts/build-helm), after `helm lint --strict`, a check that it renders the
# objects of manifests/ (specs equal, labels aside) and that its values
# (agent off, a subset of gang sources, image, replicas, policy) do what they
# say; every check after the install is the same.
#
# Environment: TOPOGANG_SRC (repo root; default: this file's ../..),
# TOPOGANG_BIN (the topogang binary; default $TOPOGANG_SRC/build/topogang),
# TG_INSTALL (kustomize, the default, or helm).
# Exit: 0 all passed, 1 a check failed, 77 the control plane binaries (or
# helm) cannot be built.
set -uo pipefail

src=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tg=${TOPOGANG_BIN:-$src/build/topogang}

failures=0
pass() { echo "[  OK  ] $1"; }
fail() { echo "[ FAIL ] $1${2:+: $2}"; failures=$((failures + 1)); }
# check NAME CMD...: passes when CMD exits 0.
check() { local n=$1; shift; if "$@" >/dev/null 2>"$work/check.err"; then pass "$n"; else fail "$n" "$(cat "$work/check.err")"; fi; }

if ! k8sbin=$("$src/scripts/build-k8s" 2>/tmp/topogang-e2e-build-k8s.$$.log | tail -1) \
   || [ ! -x "$k8sbin/kubectl" ] || [ ! -x "$k8sbin/kube-apiserver" ]; then
  echo "SKIP: cannot build the control plane binaries (see /tmp/topogang-e2e-build-k8s.$$.log)"
  exit 77
fi
rm -f /tmp/topogang-e2e-build-k8s.$$.log
mode=${TG_INSTALL:-kustomize}
if [ "$mode" = helm ]; then
  if ! helmbin=$("$src/scripts/build-helm" 2>/tmp/topogang-e2e-build-helm.$$.log | tail -1) \
     || [ ! -x "$helmbin/helm" ]; then
    echo "SKIP: cannot build helm (see /tmp/topogang-e2e-build-helm.$$.log)"
    exit 77
  fi
  rm -f /tmp/topogang-e2e-build-helm.$$.log
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/topogang-e2e-manifests.XXXXXX")
cleanup() { "$src/scripts/cluster-down" "$work/cluster" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! TG_CLUSTER_OWNER=$$ "$src/scripts/cluster-up" "$work/cluster" > "$work/cluster-up.log" 2>&1; then
  echo "cluster-up failed:"; cat "$work/cluster-up.log"; exit 1
fi
# shellcheck disable=SC1091
. "$work/cluster/env"
k() { "$k8sbin/kubectl" --request-timeout=30s "$@"; }
kjp() { k get "$@" 2>/dev/null; }         # kjp RES... -o jsonpath=...

# ---------------------------------------------------------------- install
# Everything the agent's kustomization installs is part of the full install.
k kustomize "$src/manifests/agent" -o "$work/agent.yaml" 2>"$work/err" || fail "kustomize manifests/agent" "$(cat "$work/err")"
k kustomize "$src/manifests" -o "$work/all.yaml" 2>"$work/err" || fail "kustomize manifests" "$(cat "$work/err")"
ids() { python3 -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d: print(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
' "$1" | sort; }
if python3 -c 'import yaml' 2>/dev/null; then
  missing=$(comm -23 <(ids "$work/agent.yaml") <(ids "$work/all.yaml"))
  [ -z "$missing" ] && pass "manifests/ includes every agent resource" \
    || fail "manifests/ includes every agent resource" "missing: $missing"
  want="ClusterRole  topogang-scheduler
ClusterRoleBinding  topogang-scheduler
ConfigMap topogang-system topogang-config
CustomResourceDefinition  podgroups.topogang.io
CustomResourceDefinition  queues.topogang.io
Deployment topogang-system topogang-scheduler
Namespace  topogang-agent
Namespace  topogang-system
Role topogang-system topogang-scheduler
RoleBinding topogang-system topogang-scheduler
ServiceAccount topogang-system topogang
ServiceAccount topogang-agent topogang-agent
DaemonSet topogang-agent topogang-agent
ValidatingAdmissionPolicy  topogang-agent-own-node
ValidatingAdmissionPolicyBinding  topogang-agent-own-node"
  missing=$(comm -23 <(echo "$want" | sort) <(ids "$work/all.yaml"))
  [ -z "$missing" ] && pass "manifests/ has the scheduler's resources" \
    || fail "manifests/ has the scheduler's resources" "missing: $missing"
else
  fail "python3-yaml is needed to compare kustomize outputs"
fi

# ---------------------------------------------------------------- the Helm chart
chart=$src/charts/topogang
helm_checks() {
  local h="$helmbin/helm" out
  if "$h" lint --strict "$chart" > "$work/lint.log" 2>&1 && ! grep -qE '\[(WARNING|ERROR)\]' "$work/lint.log"; then
    pass "helm lint --strict charts/topogang"
  else
    fail "helm lint --strict charts/topogang" "$(cat "$work/lint.log")"
  fi
  "$h" template topogang "$chart" --namespace topogang-system --include-crds \
    --set namespace.create=true > "$work/helm.yaml" 2>"$work/err" \
    && pass "helm template charts/topogang" || fail "helm template charts/topogang" "$(cat "$work/err")"
  cmp -s "$chart/crds/podgroup.yaml" "$src/manifests/crd-podgroup.yaml" \
    && pass "the chart's CRD is manifests/crd-podgroup.yaml" || fail "the chart's CRD is manifests/crd-podgroup.yaml"
  cmp -s "$chart/crds/queue.yaml" "$src/manifests/crd-queue.yaml" \
    && pass "the chart's Queue CRD is manifests/crd-queue.yaml" || fail "the chart's Queue CRD is manifests/crd-queue.yaml"
  # the same objects as manifests/, specs equal, its labels kept (Helm's added)
  if out=$(python3 "$src/tests/e2e/helm_compare.py" objects "$work/helm.yaml" "$work/all.yaml" 2>&1); then
    pass "the chart renders the objects of manifests/ ($out)"
  else
    fail "the chart renders the objects of manifests/" "$out"
  fi
  # monitoring is off by default: prometheus-operator's CRD may not be there
  # (it is not in this cluster; tests/e2e/test_dashboard.py renders it on)
  if grep -qE '^kind: ServiceMonitor$|^  name: topogang-(metrics|dashboard)$' "$work/helm.yaml"; then
    fail "the defaults render no ServiceMonitor, metrics Service or dashboard ConfigMap" \
      "$(grep -nE '^kind: ServiceMonitor$|^  name: topogang-(metrics|dashboard)$' "$work/helm.yaml")"
  else
    pass "the defaults render no ServiceMonitor, metrics Service or dashboard ConfigMap"
  fi
  # values do what they say
  "$h" template topogang "$chart" --namespace tg --set agent.enabled=false \
    --set gangSources.upstream=false,gangSources.schedulerPlugins=false,gangSources.kai=false \
    --set gangSources.jobset=false,gangSources.lws=false,gangSources.pytorchjob=false \
    --set gangSources.mpijob=false,gangSources.trainjob=false \
    --set image.repository=registry.example/tg,image.tag=9.9,scheduler.replicas=3 \
    --set-string policy='schedulerName: gangs' > "$work/helm-values.yaml" 2>"$work/err"
  if out=$(python3 "$src/tests/e2e/helm_compare.py" values "$work/helm-values.yaml" 2>&1); then
    pass "helm values: agent off, gang sources, image, replicas, policy"
  else
    fail "helm values: agent off, gang sources, image, replicas, policy" "$out"
  fi
}

if [ "$mode" = helm ]; then
  helm_checks
  install() { k apply -f "$work/helm.yaml"; }
  how="helm template charts/topogang | kubectl apply -f -"
else
  install() { k apply -k "$src/manifests"; }
  how="kubectl apply -k manifests/"
fi
if install > "$work/apply1.log" 2>&1; then
  pass "$how"
else
  fail "$how" "$(cat "$work/apply1.log")"
fi
check "CRD becomes Established" \
  k wait --for condition=Established crd/podgroups.topogang.io --timeout=60s
check "kubectl get crd podgroups.topogang.io" k get crd podgroups.topogang.io -o name
# A second apply changes nothing: the manifests are stable under defaulting.
if install > "$work/apply2.log" 2>&1 && ! grep -vE ' (unchanged|serverside-applied)$' "$work/apply2.log" | grep -q .; then
  pass "re-apply is a no-op"
else
  fail "re-apply is a no-op" "$(grep -v unchanged "$work/apply2.log")"
fi
for r in namespace/topogang-system serviceaccount/topogang clusterrole/topogang-scheduler \
         clusterrolebinding/topogang-scheduler role/topogang-scheduler rolebinding/topogang-scheduler \
         configmap/topogang-config deployment/topogang-scheduler; do
  check "exists: $r" k get -n topogang-system "$r" -o name
done
for r in namespace/topogang-agent serviceaccount/topogang-agent daemonset/topogang-agent; do
  check "exists: $r -n topogang-agent" k get -n topogang-agent "$r" -o name
done
for r in validatingadmissionpolicy/topogang-agent-own-node validatingadmissionpolicybinding/topogang-agent-own-node; do
  check "exists: $r" k get "$r" -o name
done

# ---------------------------------------------------------------- CRD shape
crd() { kjp crd podgroups.topogang.io -o jsonpath="$1"; }
[ "$(crd '{.spec.group}/{.spec.names.kind}/{.spec.names.plural}/{.spec.scope}')" = "topogang.io/PodGroup/podgroups/Namespaced" ] \
  && pass "CRD group/kind/plural/scope" || fail "CRD group/kind/plural/scope" "$(crd '{.spec.group}/{.spec.names.kind}/{.spec.names.plural}/{.spec.scope}')"
[ "$(crd '{.spec.names.shortNames[*]}')" = "pg" ] && pass "CRD short name pg" || fail "CRD short name pg"
[ "$(crd '{.spec.versions[?(@.storage==true)].name}')" = "v1alpha1" ] && pass "CRD storage version v1alpha1" || fail "CRD storage version v1alpha1"
[ "$(crd '{.status.acceptedNames.shortNames[*]}')" = "pg" ] && pass "CRD names accepted" || fail "CRD names accepted"
k api-resources --api-group=topogang.io --no-headers > "$work/apires" 2>&1
grep -qE '^podgroups +pg +topogang.io/v1alpha1 +true +PodGroup' "$work/apires" \
  && pass "api-resources: podgroups pg namespaced" || fail "api-resources: podgroups pg namespaced" "$(cat "$work/apires")"

# ---------------------------------------------------------------- PodGroups
k create namespace e2e -o name >/dev/null 2>&1 || fail "create namespace e2e"
cat > "$work/pg-ok.yaml" <<'EOF'
apiVersion: topogang.io/v1alpha1
kind: PodGroup
metadata: {name: llama, namespace: e2e}
spec:
  minMember: 16
  scheduleTimeoutSeconds: 600
  priority: 100
  topology: {required: rack, preferred: nvlink-domain, strategy: pack}
EOF
check "create a valid PodGroup" k apply -f "$work/pg-ok.yaml"
cat > "$work/pg-min.yaml" <<'EOF'
apiVersion: topogang.io/v1alpha1
kind: PodGroup
metadata: {name: minimal, namespace: e2e}
spec: {minMember: 1}
EOF
check "create a minimal PodGroup (minMember only)" k apply -f "$work/pg-min.yaml"
k get pg -n e2e > "$work/getpg" 2>&1
head -1 "$work/getpg" | grep -qE '^NAME +MIN +SCHEDULED +PHASE +DOMAIN +AGE$' \
  && pass "kubectl get pg: columns NAME MIN SCHEDULED PHASE DOMAIN AGE" \
  || fail "kubectl get pg: columns NAME MIN SCHEDULED PHASE DOMAIN AGE" "$(cat "$work/getpg")"
grep -qE '^llama +16 +' "$work/getpg" && pass "kubectl get pg: MIN shows spec.minMember" \
  || fail "kubectl get pg: MIN shows spec.minMember" "$(cat "$work/getpg")"
k get podgroups.topogang.io -n e2e llama -o name >/dev/null 2>&1 && pass "get by full name" || fail "get by full name"

# reject NAME YAML-SPEC EXPECTED-MESSAGE-REGEX
reject() {
  local name=$1 spec=$2 want=$3 out
  out=$(printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: bad, namespace: e2e}\nspec: %s\n' "$spec" \
        | k create -f - 2>&1)
  local rc=$?
  if [ $rc -ne 0 ] && grep -qE "$want" <<< "$out" && ! k get pg -n e2e bad >/dev/null 2>&1; then
    pass "rejected: $name ($(echo "$out" | grep -oE "$want" | head -1))"
  else
    fail "rejected: $name" "rc=$rc: $out"
    k delete pg -n e2e bad --ignore-not-found >/dev/null 2>&1
  fi
}
reject "minMember 0" '{minMember: 0}' 'spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1'
reject "minMember -3" '{minMember: -3}' 'spec.minMember in body should be greater than or equal to 1'
reject 'minMember "abc"' '{minMember: "abc"}' 'spec.minMember: Invalid value: "string": spec.minMember in body must be of type integer'
reject "minMember 2.5" '{minMember: 2.5}' 'spec.minMember: Invalid value: "number": spec.minMember in body must be of type integer'
reject "minMember 2^40" '{minMember: 1099511627776}' 'spec.minMember in body should be less than or equal to'
reject "missing minMember" '{priority: 1}' 'spec.minMember: Required value'
reject "missing spec" 'null' 'spec: Required value'
reject 'strategy "tight"' '{minMember: 2, topology: {strategy: tight}}' 'spec.topology.strategy: Unsupported value: "tight": supported values: "pack", "spread"'
reject "scheduleTimeoutSeconds -1" '{minMember: 2, scheduleTimeoutSeconds: -1}' 'spec.scheduleTimeoutSeconds in body should be greater than or equal to 0'
reject "topology.required a number" '{minMember: 2, topology: {required: 3}}' 'spec.topology.required in body must be of type string'
reject "topology.preferred 64 chars" "{minMember: 2, topology: {preferred: $(printf 'x%.0s' $(seq 64))}}" 'spec.topology.preferred: Too long'
reject "priority a string" '{minMember: 2, priority: high}' 'spec.priority in body must be of type integer'
# sub-groups (issue 20): listed by name, or by rank slices
reject "subGroups entry without name" '{minMember: 2, subGroups: [{minMember: 2}]}' 'spec.subGroups\[0\].name: Required value'
reject "subGroups duplicate name" '{minMember: 2, subGroups: [{name: a}, {name: a}]}' 'spec.subGroups\[1\]: Duplicate value'
reject "subGroupSize 0" '{minMember: 2, subGroupSize: 0}' 'spec.subGroupSize in body should be greater than or equal to 1'
printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: tp, namespace: e2e}\nspec:\n  minMember: 16\n  topology: {required: block}\n  subGroups:\n  - {name: tp-0, minMember: 8, topology: {required: nvlink-domain}}\n  - {name: tp-1, minMember: 8, topology: {required: nvlink-domain, preferred: node}}\n' > "$work/pg-sub.yaml"
check "create a PodGroup with subGroups" k apply -f "$work/pg-sub.yaml"
[ "$(k get pg -n e2e tp -o jsonpath='{.spec.subGroups[1].topology.preferred}')" = node ] \
  && pass "subGroups stored (not pruned)" || fail "subGroups stored (not pruned)"
printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: slices, namespace: e2e}\nspec: {minMember: 64, subGroupSize: 8, subGroupTopology: {required: nvlink-domain}}\n' > "$work/pg-size.yaml"
check "create a PodGroup with subGroupSize" k apply -f "$work/pg-size.yaml"
# Unknown fields: refused by kubectl's (default) strict validation; pruned,
# never stored, for clients that do not ask for it.
reject "unknown field minMembers" '{minMember: 2, minMembers: 5}' 'unknown field "spec.minMembers"'
# Unknown fields are pruned (structural schema), not stored.
printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pruned, namespace: e2e}\nspec: {minMember: 2, minMembers: 5}\n' \
  | k create -f - --validate=false >/dev/null 2>&1
[ "$(kjp pg -n e2e pruned -o jsonpath='{.spec}')" = '{"minMember":2}' ] \
  && pass "unknown spec fields are pruned" || fail "unknown spec fields are pruned" "$(kjp pg -n e2e pruned -o jsonpath='{.spec}')"

# ---------------------------------------------------------------- status subresource
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
status='{"status":{"phase":"Scheduled","scheduled":16,"placement":{"level":"rack","domain":"zone-a/block-1/rack-3"},"conditions":[{"type":"Scheduled","status":"True","reason":"GangBound","message":"16/16 members bound in rack zone-a/block-1/rack-3","lastTransitionTime":"'$now'","observedGeneration":1}]}}'
if out=$(k patch pg -n e2e llama --subresource=status --type=merge -p "$status" 2>&1); then
  pass "patch --subresource=status"
else
  fail "patch --subresource=status" "$out"
fi
k get pg -n e2e llama > "$work/getpg" 2>&1
grep -qE '^llama +16 +16 +Scheduled +zone-a/block-1/rack-3 +' "$work/getpg" \
  && pass "kubectl get pg shows SCHEDULED, PHASE, DOMAIN from status" \
  || fail "kubectl get pg shows SCHEDULED, PHASE, DOMAIN from status" "$(cat "$work/getpg")"
k get pg -n e2e llama -o wide > "$work/wide" 2>&1
head -1 "$work/wide" | grep -qE 'DOMAIN +AGE +LEVEL|DOMAIN +LEVEL' && pass "kubectl get pg -o wide adds LEVEL" || fail "kubectl get pg -o wide adds LEVEL"
# Status written through the main resource is ignored; spec through status too.
k patch pg -n e2e llama --type=merge -p '{"status":{"phase":"Failed"}}' >/dev/null 2>&1
[ "$(kjp pg -n e2e llama -o jsonpath='{.status.phase}')" = Scheduled ] \
  && pass "status ignored on the main resource" || fail "status ignored on the main resource"
k patch pg -n e2e llama --subresource=status --type=merge -p '{"spec":{"minMember":3}}' >/dev/null 2>&1
[ "$(kjp pg -n e2e llama -o jsonpath='{.spec.minMember}')" = 16 ] \
  && pass "spec ignored on the status subresource" || fail "spec ignored on the status subresource"
# Status is validated too.
badstatus() {
  local name=$1 patch=$2 want=$3 out
  if out=$(k patch pg -n e2e llama --subresource=status --type=merge -p "$patch" 2>&1); then
    fail "status rejected: $name" "accepted"
  elif grep -qE "$want" <<< "$out"; then pass "status rejected: $name"
  else fail "status rejected: $name" "$out"; fi
}
badstatus 'phase "Done"' '{"status":{"phase":"Done"}}' 'status.phase: Unsupported value: "Done"'
badstatus 'scheduled -1' '{"status":{"scheduled":-1}}' 'status.scheduled: Invalid value: -1: .*greater than or equal to 0'
badstatus 'condition without reason' '{"status":{"conditions":[{"type":"X","status":"True","message":"m","lastTransitionTime":"'$now'"}]}}' 'reason: Required value'
badstatus 'condition status "yes"' '{"status":{"conditions":[{"type":"X","status":"yes","reason":"R","message":"m","lastTransitionTime":"'$now'"}]}}' 'Unsupported value: "yes"'
badstatus 'duplicate condition type' '{"status":{"conditions":[{"type":"X","status":"True","reason":"R","message":"m","lastTransitionTime":"'$now'"},{"type":"X","status":"False","reason":"R","message":"m","lastTransitionTime":"'$now'"}]}}' 'Duplicate value'
# A JSON patch replacing one condition by type (list-type map) keeps the others.
k patch pg -n e2e llama --subresource=status --type=merge \
  -p '{"status":{"conditions":[{"type":"Scheduled","status":"True","reason":"GangBound","message":"m","lastTransitionTime":"'$now'"},{"type":"Timeout","status":"False","reason":"InTime","message":"m","lastTransitionTime":"'$now'"}]}}' >/dev/null 2>&1
[ "$(kjp pg -n e2e llama -o jsonpath='{.status.conditions[*].type}')" = "Scheduled Timeout" ] \
  && pass "two conditions keyed by type" || fail "two conditions keyed by type" "$(kjp pg -n e2e llama -o jsonpath='{.status.conditions[*].type}')"

# ---------------------------------------------------------------- RBAC
sa=system:serviceaccount:topogang-system:topogang
can() {  # can yes|no VERB RESOURCE [ARGS...]
  local want=$1; shift
  local got
  got=$(k auth can-i "$@" --as="$sa" 2>/dev/null)
  [ "$got" = "$want" ] && pass "can-i $* -> $want" || fail "can-i $* -> $want" "got '$got'"
}
can yes create pods --subresource=binding -n e2e
can yes create pods --subresource=binding -A
can yes delete pods -n e2e
can yes list pods -A
can yes watch pods -A
can yes list nodes
can yes watch nodes
can yes list podgroups.topogang.io -A
can yes watch podgroups.topogang.io -A
can yes patch podgroups.topogang.io --subresource=status -n e2e
can yes create events.events.k8s.io -n e2e
# verbs the daemon never calls (it lists and watches, never GETs one object;
# patches status, never reads or replaces it; creates Events, never updates
# them; writes only events.k8s.io Events): not granted
can no get pods -n e2e
can no get nodes
can no get podgroups.topogang.io -n e2e
can no get podgroups.topogang.io --subresource=status -n e2e
can no update podgroups.topogang.io --subresource=status -n e2e
can no patch events.events.k8s.io -n e2e
can no create events -n e2e
can no patch events -n e2e
can no get priorityclasses.scheduling.k8s.io
can no get configmaps -n topogang-system
# the queues' saved usage (scheduler/daemon/usage.c): that one ConfigMap only
can yes get configmaps/topogang-scheduler-usage -n topogang-system
can yes patch configmaps/topogang-scheduler-usage -n topogang-system
can no patch configmaps/topogang-config -n topogang-system
can no delete configmaps/topogang-scheduler-usage -n topogang-system
can yes list priorityclasses.scheduling.k8s.io
can yes watch priorityclasses.scheduling.k8s.io
can yes list poddisruptionbudgets.policy -A
can yes watch poddisruptionbudgets.policy -A
# what constraints read, read only
for r in namespaces persistentvolumes persistentvolumeclaims storageclasses.storage.k8s.io \
         resourceclaims.resource.k8s.io; do
  can yes list "$r" -A
  can yes watch "$r" -A
  can no create "$r" -A
  can no delete "$r" -A
  can no patch "$r" -A
done
can yes patch pods --subresource=status -n e2e
# gangs as they come: the peers' PodGroups and the workloads, read only; the
# upstream PodGroup's status only. Their APIs are not served here, so a
# SubjectAccessReview asks RBAC directly (kubectl auth can-i resolves the
# resource through discovery first).
sar() {  # sar yes|no VERB GROUP RESOURCE[/SUBRESOURCE]
  local want=$1 verb=$2 group=$3 res=${4%%/*} sub="" got
  [[ $4 == */* ]] && sub=${4#*/}
  got=$(k create -o jsonpath='{.status.allowed}' -f - 2>&1 <<EOF
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: $sa
  groups: [system:serviceaccounts, system:serviceaccounts:topogang-system, system:authenticated]
  resourceAttributes: {verb: $verb, group: "$group", resource: $res, subresource: "$sub", namespace: e2e}
EOF
)
  [ "$got" = true ] && got=yes || got=no
  [ "$got" = "$want" ] && pass "RBAC: $verb $group $4 -> $want" || fail "RBAC: $verb $group $4 -> $want" "got $got"
}
for gr in scheduling.k8s.io/podgroups scheduling.x-k8s.io/podgroups scheduling.volcano.sh/podgroups \
          scheduling.run.ai/podgroups batch/jobs jobset.x-k8s.io/jobsets \
          leaderworkerset.x-k8s.io/leaderworkersets kubeflow.org/pytorchjobs kubeflow.org/mpijobs \
          trainer.kubeflow.org/trainjobs; do
  sar yes list "${gr%%/*}" "${gr#*/}"
  sar yes watch "${gr%%/*}" "${gr#*/}"
  sar no get "${gr%%/*}" "${gr#*/}"
  sar no create "${gr%%/*}" "${gr#*/}"
  sar no delete "${gr%%/*}" "${gr#*/}"
  sar no patch "${gr%%/*}" "${gr#*/}"
done
sar yes patch scheduling.k8s.io podgroups/status
sar no update scheduling.k8s.io podgroups/status
for g in scheduling.x-k8s.io scheduling.volcano.sh scheduling.run.ai; do
  sar no patch "$g" podgroups/status
  sar no update "$g" podgroups/status
done
sar no patch batch jobs/status
# tenant Queues (docs/queues.md): the three APIs read only; our own's status
for g in topogang.io scheduling.run.ai scheduling.volcano.sh; do
  sar yes list "$g" queues
  sar yes watch "$g" queues
  sar no create "$g" queues
  sar no delete "$g" queues
  sar no patch "$g" queues
done
sar yes patch topogang.io queues/status
sar no update topogang.io queues/status
sar no patch scheduling.run.ai queues/status
sar no patch scheduling.volcano.sh queues/status
can no delete nodes
can no patch nodes
can no get secrets -n topogang-system
can no list secrets -A
can no create pods -n e2e
can no update pods -n e2e
can no patch pods -n e2e
can no update pods --subresource=status -n e2e
can no get poddisruptionbudgets.policy -n e2e
can no create poddisruptionbudgets.policy -n e2e
can no delete poddisruptionbudgets.policy -n e2e
can no create pods --subresource=eviction -n e2e
can no create podgroups.topogang.io -n e2e
can no update podgroups.topogang.io -n e2e
can no delete podgroups.topogang.io -n e2e
can no get configmaps -n e2e
can no update configmaps -n topogang-system
can no update leases.coordination.k8s.io -n e2e
can no delete leases.coordination.k8s.io -n topogang-system
can no create clusterrolebindings.rbac.authorization.k8s.io
can no create serviceaccounts/token -n topogang-system
can no '*' '*'
# No wildcards anywhere in the scheduler's rules, and its ServiceAccount is
# bound to nothing but its own roles.
rules=$(k get clusterrole/topogang-scheduler role/topogang-scheduler -n topogang-system -o jsonpath='{range .items[*]}{.rules}{"\n"}{end}' 2>&1)
if [ -n "$rules" ] && ! grep -q '"\*"' <<< "$rules"; then pass "no wildcard in the scheduler's rules"
else fail "no wildcard in the scheduler's rules" "$rules"; fi
bound=$(k get clusterrolebindings,rolebindings -A -o jsonpath='{range .items[*]}{range .subjects[*]}{.kind}/{.namespace}/{.name} {end}|{..roleRef.kind}/{..roleRef.name}{"\n"}{end}' 2>/dev/null \
        | grep 'ServiceAccount/topogang-system/topogang ' | sed 's/.*|//' | sort -u | tr '\n' ' ')
[ "$bound" = "ClusterRole/topogang-scheduler Role/topogang-scheduler " ] \
  && pass "the ServiceAccount is bound only to topogang-scheduler roles" \
  || fail "the ServiceAccount is bound only to topogang-scheduler roles" "$bound"

# Real requests with the ServiceAccount's token (authentication included).
if tok=$(k create token topogang -n topogang-system --duration=10m 2>"$work/err"); then
  pass "token for the scheduler's ServiceAccount"
  ksa() { "$k8sbin/kubectl" --request-timeout=30s --kubeconfig=/dev/null --server="$TG_SERVER" \
          --certificate-authority="$TG_CLUSTER_DIR/ca.crt" --token="$tok" "$@"; }
  k create -f - >/dev/null 2>&1 <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-1
  labels: {kubernetes.io/hostname: gpu-node-1, topogang.io/rack: rack-3}
status:
  allocatable: {cpu: "96", memory: 1000Gi, pods: "110", nvidia.com/gpu: "8"}
  capacity: {cpu: "96", memory: 1000Gi, pods: "110", nvidia.com/gpu: "8"}
---
apiVersion: v1
kind: Pod
metadata: {name: member-0, namespace: e2e, labels: {topogang.io/pod-group: llama}}
spec:
  schedulerName: topogang
  containers: [{name: main, image: registry.example/x:1}]
EOF
  check "SA lists nodes" ksa get nodes --field-selector metadata.name=gpu-node-1 -o name
  check "SA lists podgroups" ksa get pg -A -o name
  code=$(curl -sS -o "$work/bind.json" -w '%{http_code}' --cacert "$TG_CLUSTER_DIR/ca.crt" \
         -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -X POST \
         -d '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"member-0"},"target":{"kind":"Node","name":"gpu-node-1"}}' \
         "$TG_SERVER/api/v1/namespaces/e2e/pods/member-0/binding")
  [ "$code" = 201 ] && [ "$(kjp pod -n e2e member-0 -o jsonpath='{.spec.nodeName}')" = gpu-node-1 ] \
    && pass "SA binds a pod (POST pods/binding -> 201, spec.nodeName set)" \
    || fail "SA binds a pod" "HTTP $code $(cat "$work/bind.json")"
  code=$(curl -sS -o "$work/pgpatch.json" -w '%{http_code}' --cacert "$TG_CLUSTER_DIR/ca.crt" \
         -H "Authorization: Bearer $tok" -H 'Content-Type: application/merge-patch+json' -X PATCH \
         -d '{"status":{"phase":"Scheduling","scheduled":0}}' \
         "$TG_SERVER/apis/topogang.io/v1alpha1/namespaces/e2e/podgroups/minimal/status")
  [ "$code" = 200 ] && pass "SA patches podgroups/status (PATCH, no GET)" \
    || fail "SA patches podgroups/status" "HTTP $code $(cat "$work/pgpatch.json")"
  [ "$(kjp pg -n e2e minimal -o jsonpath='{.status.phase}')" = Scheduling ] && pass "SA's status patch stored" || fail "SA's status patch stored"
  check "SA creates an Event (events.k8s.io/v1)" ksa create -f - -o name <<EOF
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: llama.e2e, namespace: e2e}
eventTime: "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)"
reportingController: topogang.io/scheduler
reportingInstance: topogang-scheduler-0
action: Scheduling
reason: GangWaiting
note: "gang 16 x 8 GPU: needs one rack; best rack zone-a/rack-3 has room for 12"
type: Normal
regarding: {apiVersion: topogang.io/v1alpha1, kind: PodGroup, name: llama, namespace: e2e}
EOF
  check "SA creates a Lease in topogang-system" ksa create -f - -o name <<EOF
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: topogang-scheduler, namespace: topogang-system}
spec: {holderIdentity: topogang-scheduler-0, leaseDurationSeconds: 15}
EOF
  check "SA lists its ConfigMap" ksa get configmap -n topogang-system --field-selector metadata.name=topogang-config -o name
  # as the daemon sends it: a PATCH with no GET first (kubectl would GET pods/status)
  code=$(curl -sS -o "$work/patch.json" -w '%{http_code}' --cacert "$TG_CLUSTER_DIR/ca.crt" \
         -H "Authorization: Bearer $tok" -H 'Content-Type: application/strategic-merge-patch+json' -X PATCH \
         -d '{"status":{"conditions":[{"type":"DisruptionTarget","status":"True","reason":"PreemptionByScheduler","message":"e2e"}]}}' \
         "$TG_SERVER/api/v1/namespaces/e2e/pods/member-0/status")
  [ "$code" = 200 ] && [ "$(kjp pod -n e2e member-0 -o jsonpath='{.status.conditions[?(@.type=="DisruptionTarget")].reason}')" = PreemptionByScheduler ] \
    && pass "SA patches a pod's status (preemption: DisruptionTarget)" \
    || fail "SA patches a pod's status (preemption: DisruptionTarget)" "HTTP $code $(cat "$work/patch.json")"
  check "SA lists PodDisruptionBudgets" ksa get pdb -A -o name
  check "SA deletes a pod" ksa delete pod -n e2e member-0 --wait=false
  if out=$(ksa get secrets -n topogang-system 2>&1); then fail "SA cannot read secrets" "allowed"
  else grep -q Forbidden <<< "$out" && pass "SA cannot read secrets (Forbidden)" || fail "SA cannot read secrets" "$out"; fi
  if out=$(ksa delete node gpu-node-1 2>&1); then fail "SA cannot delete nodes" "allowed"
  else grep -q Forbidden <<< "$out" && pass "SA cannot delete nodes (Forbidden)" || fail "SA cannot delete nodes" "$out"; fi
else
  fail "token for the scheduler's ServiceAccount" "$(cat "$work/err")"
fi

# ---------------------------------------------------------------- Deployment
dj() { kjp deployment -n topogang-system topogang-scheduler -o jsonpath="$1"; }
expect() {  # expect NAME GOT WANT
  [ "$2" = "$3" ] && pass "$1" || fail "$1" "got '$2', want '$3'"
}
expect "deployment: 2 replicas" "$(dj '{.spec.replicas}')" 2
expect "deployment: serviceAccountName" "$(dj '{.spec.template.spec.serviceAccountName}')" topogang
expect "deployment: args" "$(dj '{.spec.template.spec.containers[0].args[*]}')" \
  "scheduler --config-map=topogang-system/topogang-config --leader-elect --metrics-bind-address=:8080 --health-bind-address=:8081"
expect "deployment: image" "$(dj '{.spec.template.spec.containers[0].image}')" "ghcr.io/topogang/topogang:0.1.0"
expect "deployment: pod runAsNonRoot" "$(dj '{.spec.template.spec.securityContext.runAsNonRoot}')" true
expect "deployment: seccomp RuntimeDefault" "$(dj '{.spec.template.spec.containers[0].securityContext.seccompProfile.type}')" RuntimeDefault
expect "deployment: runAsNonRoot" "$(dj '{.spec.template.spec.containers[0].securityContext.runAsNonRoot}')" true
expect "deployment: readOnlyRootFilesystem" "$(dj '{.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem}')" true
expect "deployment: allowPrivilegeEscalation false" "$(dj '{.spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation}')" false
expect "deployment: drop ALL" "$(dj '{.spec.template.spec.containers[0].securityContext.capabilities.drop[*]}')" ALL
expect "deployment: liveness /healthz on the health port 8081" "$(dj '{.spec.template.spec.containers[0].livenessProbe.httpGet.path} {.spec.template.spec.containers[0].livenessProbe.httpGet.port} {.spec.template.spec.containers[0].ports[?(@.name=="health")].containerPort}')" "/healthz health 8081"
expect "deployment: readiness /readyz on the health port" "$(dj '{.spec.template.spec.containers[0].readinessProbe.httpGet.path} {.spec.template.spec.containers[0].readinessProbe.httpGet.port}')" "/readyz health"
expect "deployment: metrics port 8080" "$(dj '{.spec.template.spec.containers[0].ports[?(@.name=="metrics")].containerPort}')" 8080
res=$(dj '{.spec.template.spec.containers[0].resources.requests.cpu}/{.spec.template.spec.containers[0].resources.requests.memory}/{.spec.template.spec.containers[0].resources.limits.memory}')
[[ "$res" =~ ^[^/]+/[^/]+/[^/]+$ ]] && pass "deployment: cpu/memory requests, memory limit ($res)" || fail "deployment: requests/limits" "$res"
expect "deployment: POD_NAME, POD_NAMESPACE from the downward API" \
  "$(dj '{.spec.template.spec.containers[0].env[?(@.name=="POD_NAME")].valueFrom.fieldRef.fieldPath} {.spec.template.spec.containers[0].env[?(@.name=="POD_NAMESPACE")].valueFrom.fieldRef.fieldPath}')" \
  "metadata.name metadata.namespace"
# The pod template is admitted as a Pod (priority class, security context).
k get deployment -n topogang-system topogang-scheduler -o json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["spec"]["template"]
t["metadata"]["name"] = "topogang-scheduler-template"
t["metadata"]["namespace"] = "topogang-system"
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": t["metadata"], "spec": t["spec"]}))
' > "$work/pod.json"
out=$(k create --dry-run=server -f "$work/pod.json" -o jsonpath='{.spec.priority}' 2>&1) && [ "$out" -gt 1000000000 ] \
  && pass "scheduler pod template admitted (priority $out)" || fail "scheduler pod template admitted" "$out"

# ---------------------------------------------------------------- Pod Security
# The scheduler's namespace enforces `restricted` (the template above passed
# it: admission ran); the agent's, which needs host paths, `privileged`.
expect "namespace topogang-system: Pod Security enforce restricted" \
  "$(kjp ns topogang-system -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}')" restricted
expect "namespace topogang-agent: Pod Security enforce privileged" \
  "$(kjp ns topogang-agent -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}')" privileged
out=$(k create -o name -f - 2>&1 <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: privileged-intruder, namespace: topogang-system}
spec:
  containers: [{name: c, image: registry.example/x:1, securityContext: {privileged: true}}]
EOF
)
if ! k get pod -n topogang-system privileged-intruder >/dev/null 2>&1 \
   && grep -q 'violates PodSecurity "restricted:latest"' <<< "$out"; then
  pass "a privileged pod in topogang-system is refused by Pod Security admission"
else
  fail "a privileged pod in topogang-system is refused" "$out"
  k delete pod -n topogang-system privileged-intruder --wait=false >/dev/null 2>&1
fi
# The agent's pod template: admitted in its own namespace, refused in the scheduler's.
k get daemonset -n topogang-agent topogang-agent -o json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["spec"]["template"]
t["metadata"]["name"] = "topogang-agent-template"
t["spec"]["nodeName"] = "no-such-node"
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": t["metadata"], "spec": t["spec"]}))
' > "$work/agentpod.json"
out=$(k create --dry-run=server -n topogang-agent -f "$work/agentpod.json" -o name 2>&1) \
  && pass "agent pod template admitted in topogang-agent" || fail "agent pod template admitted in topogang-agent" "$out"
out=$(k create --dry-run=server -n topogang-system -f "$work/agentpod.json" -o name 2>&1)
grep -q 'violates PodSecurity "restricted:latest"' <<< "$out" \
  && pass "agent pod template refused in topogang-system (host paths)" \
  || fail "agent pod template refused in topogang-system" "$out"
expect "agent: liveness probe runs --check-health on its health file" \
  "$(kjp daemonset -n topogang-agent topogang-agent -o jsonpath='{.spec.template.spec.containers[0].livenessProbe.exec.command[*]}')" \
  "/usr/local/bin/topogang agent --check-health /run/topogang/health"
grep -q -- '--health-file=/run/topogang/health' <<< "$(kjp daemonset -n topogang-agent topogang-agent -o jsonpath='{.spec.template.spec.containers[0].args[*]}')" \
  && pass "agent: --health-file where the probe reads it" || fail "agent: --health-file where the probe reads it"

# ---------------------------------------------------------------- the agent: its own Node only
# ValidatingAdmissionPolicy topogang-agent-own-node: with a token bound to a
# pod on node-a (the kubelet's projected token is so bound) the agent may
# patch topogang's annotation and labels of node-a, nothing else.
k create -f - >/dev/null 2>"$work/err" <<'EOF' || fail "create node-a, node-b and a pod on node-a" "$(cat "$work/err")"
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a, topogang.io/rack: r1}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {kubernetes.io/hostname: node-b}}
---
apiVersion: v1
kind: Pod
metadata: {name: agent-on-a, namespace: topogang-agent}
spec:
  serviceAccountName: topogang-agent
  nodeName: node-a
  containers: [{name: agent, image: registry.example/x:1}]
EOF
bound=$(k create token topogang-agent -n topogang-agent --bound-object-kind Pod \
        --bound-object-name agent-on-a --duration=10m 2>"$work/err") || fail "bound token for the agent" "$(cat "$work/err")"
unbound=$(k create token topogang-agent -n topogang-agent --duration=10m 2>"$work/err") || fail "token for the agent" "$(cat "$work/err")"
kas() { local t=$1; shift; "$k8sbin/kubectl" --request-timeout=30s --kubeconfig=/dev/null --server="$TG_SERVER" \
        --certificate-authority="$TG_CLUSTER_DIR/ca.crt" --token="$t" "$@"; }
expect "the bound token carries the node (authentication.kubernetes.io/node-name)" \
  "$(kas "$bound" auth whoami -o jsonpath='{.status.userInfo.extra.authentication\.kubernetes\.io/node-name[0]}' 2>&1)" node-a
# refused NAME WANT-REGEX TOKEN KUBECTL-ARGS...: the request is denied by the policy
refused() {
  local name=$1 want=$2 t=$3 out; shift 3
  if out=$(kas "$t" "$@" 2>&1); then fail "agent refused: $name" "allowed: $out"
  elif grep -q 'topogang-agent-own-node' <<< "$out" && grep -qE "$want" <<< "$out"; then pass "agent refused: $name"
  else fail "agent refused: $name" "$out"; fi
}
if out=$(kas "$bound" patch node node-a --type=merge \
         -p '{"metadata":{"annotations":{"topogang.io/topology":"{\"v\":1}"},"labels":{"topogang.io/gpu-domains":"2"}}}' 2>&1) \
   && [ "$(kjp node node-a -o jsonpath='{.metadata.labels.topogang\.io/gpu-domains}')" = 2 ]; then
  pass "agent on node-a patches its own Node's topogang annotation and labels"
else
  fail "agent on node-a patches its own Node's topogang annotation and labels" "$out"
fi
refused "another Node" 'a pod on node node-a may change only its own Node, not node-b' \
  "$bound" patch node node-b --type=merge -p '{"metadata":{"annotations":{"topogang.io/topology":"{}"}}}'
refused "a taint on its own Node" "may not change a Node's spec" \
  "$bound" patch node node-a --type=merge -p '{"spec":{"taints":[{"key":"evil","effect":"NoSchedule"}]}}'
refused "cordoning its own Node" "may not change a Node's spec" \
  "$bound" patch node node-a --type=merge -p '{"spec":{"unschedulable":true}}'
refused "a foreign label" 'may set only the labels .* it changed topogang.io/rack' \
  "$bound" patch node node-a --type=merge -p '{"metadata":{"labels":{"topogang.io/rack":"r9"}}}'
refused "removing a label" 'it changed kubernetes.io/hostname' \
  "$bound" patch node node-a --type=merge -p '{"metadata":{"labels":{"kubernetes.io/hostname":null}}}'
refused "a foreign annotation" 'only the annotation topogang.io/topology' \
  "$bound" patch node node-a --type=merge -p '{"metadata":{"annotations":{"node.alpha.kubernetes.io/ttl":"0"}}}'
refused "a token bound to no node" 'not bound to a pod on a node' \
  "$unbound" patch node node-a --type=merge -p '{"metadata":{"annotations":{"topogang.io/topology":"{}"}}}'
# the agent itself, with the bound token: publishes on node-a, is refused on node-b
printf 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "%s", certificate-authority: "%s"}}]\nusers: [{name: u, user: {token: "%s"}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n' \
  "$TG_SERVER" "$TG_CLUSTER_DIR/ca.crt" "$bound" > "$work/agent.kubeconfig"
if [ -x "$tg" ]; then
  xml=$src/tests/fixtures/hardware/hwloc/aws-g4dn-metal_2s-cascadelake_8xT4_efa.xml
  if ASAN_OPTIONS=detect_leaks=0 "$tg" agent --once --node-name node-a --kubeconfig "$work/agent.kubeconfig" \
       --topology-xml "$xml" --pod-resources none > "$work/agent.log" 2>&1 \
     && [ "$(kjp node node-a -o jsonpath='{.metadata.labels.topogang\.io/numa-nodes}')" = 2 ]; then
    pass "topogang agent publishes its own Node through the policy"
  else fail "topogang agent publishes its own Node through the policy" "$(cat "$work/agent.log")"; fi
  if ASAN_OPTIONS=detect_leaks=0 "$tg" agent --once --node-name node-b --kubeconfig "$work/agent.kubeconfig" \
       --topology-xml "$xml" --pod-resources none > "$work/agent.log" 2>&1; then
    fail "topogang agent on node-a cannot publish node-b" "allowed"
  else
    grep -q 'may change only its own Node, not node-b' "$work/agent.log" \
      && pass "topogang agent on node-a cannot publish node-b" || fail "topogang agent on node-a cannot publish node-b" "$(cat "$work/agent.log")"
  fi
fi
# only the agent's ServiceAccount is matched (the scheduler's may patch no Node anyway)
expect "admission policy matches only the agent's ServiceAccount" \
  "$(kjp validatingadmissionpolicy topogang-agent-own-node -o jsonpath='{.spec.matchConditions[0].expression}')" \
  "request.userInfo.username == 'system:serviceaccount:topogang-agent:topogang-agent'"

# ---------------------------------------------------------------- policy ConfigMap
kjp configmap -n topogang-system topogang-config -o jsonpath='{.data.config\.yaml}' > "$work/config.yaml"
if [ ! -x "$tg" ]; then
  fail "topogang binary at $tg (set TOPOGANG_BIN)"
else
  if "$tg" simulate --config "$work/config.yaml" --print-config > "$work/effective.yaml" 2>"$work/err"; then
    pass "ConfigMap config.yaml parses (topogang simulate --print-config)"
  else
    fail "ConfigMap config.yaml parses" "$(cat "$work/err")"
  fi
  "$tg" simulate --print-config > "$work/default.yaml" 2>/dev/null
  diff -u "$work/default.yaml" "$work/effective.yaml" > "$work/diff" \
    && pass "ConfigMap policy == the built-in default policy" \
    || fail "ConfigMap policy == the built-in default policy" "$(cat "$work/diff")"
  levels=$(grep -oE 'name: [a-z-]+, nodeLabel' "$work/effective.yaml" | awk '{print $2}' | tr -d , | tr '\n' ' ')
  expect "policy levels outermost first" "$levels" "zone block rack nvlink-domain node "
  # The parser is not a rubber stamp: a bad edit of the same text fails.
  sed 's/strategy: pack/strategy: tight/' "$work/config.yaml" > "$work/bad.yaml"
  if "$tg" simulate --config "$work/bad.yaml" --print-config >/dev/null 2>&1; then
    fail "a bad policy edit is refused by the parser"
  else pass "a bad policy edit is refused by the parser"; fi
fi

# ---------------------------------------------------------------- examples/k8s
if k apply -k "$src/examples/k8s" > "$work/ex.log" 2>&1; then
  pass "kubectl apply -k examples/k8s"
else
  fail "kubectl apply -k examples/k8s" "$(cat "$work/ex.log")"
fi
# Every workload's pods use topogang and name an existing PodGroup of their
# namespace; per group, the replicas add up to exactly minMember; the training
# gang is an Indexed Job, the inference gang has two roles.
k get podgroups,jobs,deployments,statefulsets -n ml -o json > "$work/ml.json" 2>&1
out=$(python3 - "$work/ml.json" <<'EOF'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
groups = {i["metadata"]["name"]: i["spec"]["minMember"] for i in items if i["kind"] == "PodGroup"}
members, kinds, errs = {}, {}, []
for i in items:
    if i["kind"] == "PodGroup":
        continue
    t = i["spec"]["template"]
    g = t["metadata"].get("labels", {}).get("topogang.io/pod-group")
    name = i["kind"] + "/" + i["metadata"]["name"]
    if t["spec"].get("schedulerName") != "topogang":
        errs.append(name + ": schedulerName is not topogang")
    if g not in groups:
        errs.append(name + ": pod-group label %r names no PodGroup" % g)
        continue
    n = i["spec"].get("parallelism", 1) if i["kind"] == "Job" else i["spec"].get("replicas", 1)
    members[g] = members.get(g, 0) + n
    kinds.setdefault(g, []).append(i["kind"])
    if i["kind"] == "Job" and i["spec"].get("completionMode") != "Indexed":
        errs.append(name + ": not an Indexed Job")
for g, m in groups.items():
    if members.get(g, 0) != m:
        errs.append("PodGroup %s: minMember %d but workloads run %d pods" % (g, m, members.get(g, 0)))
if not any(k == ["Job"] for k in kinds.values()):
    errs.append("no Job-backed training gang")
if not any(len(k) >= 2 for k in kinds.values()):
    errs.append("no two-role (prefill/decode) gang")
print("; ".join(errs) if errs else "gangs: " + ", ".join("%s=%s(%d)" % (g, "+".join(kinds[g]), groups[g]) for g in sorted(groups)))
sys.exit(1 if errs else 0)
EOF
) && pass "examples: workloads match their PodGroups ($out)" || fail "examples: workloads match their PodGroups" "$out"
# Their pod templates are admitted as Pods.
python3 - "$work/ml.json" "$work/expods" <<'EOF'
import json, sys, os
os.makedirs(sys.argv[2], exist_ok=True)
for i in json.load(open(sys.argv[1]))["items"]:
    if i["kind"] == "PodGroup": continue
    t = i["spec"]["template"]
    md = dict(t["metadata"], name=i["metadata"]["name"] + "-template", namespace="ml")
    md.pop("creationTimestamp", None)
    json.dump({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": t["spec"]},
              open(os.path.join(sys.argv[2], i["metadata"]["name"] + ".json"), "w"))
EOF
for f in "$work"/expods/*.json; do
  [ -e "$f" ] || { fail "examples: pod templates found"; break; }
  out=$(k create --dry-run=server -f "$f" -o name 2>&1) && pass "examples: $(basename "$f" .json) pod template admitted" \
    || fail "examples: $(basename "$f" .json) pod template admitted" "$out"
done
k get pg -n ml > "$work/mlpg" 2>&1
grep -qE '^llama-pretrain +4 ' "$work/mlpg" && grep -qE '^llm-serve +6 ' "$work/mlpg" \
  && pass "kubectl get pg -n ml lists the example gangs" || fail "kubectl get pg -n ml lists the example gangs" "$(cat "$work/mlpg")"

# ---------------------------------------------------------------- Containerfile
# The runtime stage installs the package of every shared library the binary
# needs (Debian: dpkg -S maps each NEEDED soname to its package).
cf=$src/manifests/Containerfile
if [ -x "$tg" ] && command -v readelf >/dev/null && command -v dpkg >/dev/null; then
  runtime=$(awk '/^FROM /{n++} n==2' "$cf")
  missing=""
  for so in $(readelf -d "$tg" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'); do
    # the C library, and sanitizer runtimes of a test build (the image is built without them)
    case $so in libc.so.*|libm.so.*|ld-linux*|libpthread.so.*|libdl.so.*|libasan.so.*|libubsan.so.*|liblsan.so.*) continue ;; esac
    path=$(ldconfig -p | awk -v s="$so" '$1 == s {print $NF; exit}')
    pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
    grep -qw -- "${pkg:-?$so}" <<< "$runtime" || missing="$missing $so(${pkg:-unknown})"
  done
  [ -z "$missing" ] && pass "Containerfile runtime stage installs every NEEDED library" \
    || fail "Containerfile runtime stage installs every NEEDED library" "missing:$missing"
  grep -qE '^USER +[1-9][0-9]*' <<< "$runtime" && pass "Containerfile runs as a non-root uid" \
    || fail "Containerfile runs as a non-root uid"
  grep -qE '^FROM +[^ ]*debian:bookworm' "$cf" && pass "Containerfile based on debian:bookworm" \
    || fail "Containerfile based on debian:bookworm"
fi

echo
if [ "$failures" -ne 0 ]; then
  echo "e2e_manifests ($mode): $failures check(s) FAILED"
  exit 1
fi
echo "e2e_manifests ($mode): all checks passed"
exit 0
