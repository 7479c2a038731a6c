#!/usr/bin/env bash
# End-to-end: a failed node under a running gang with sub-groups (issue 20),
# on a real etcd + kube-apiserver + kube-controller-manager (as
# test_replace.sh: node lifecycle controller off, taint eviction on).
#
# 12 fake nodes of 8 GPUs in one rack, four NVLink cliques of 3
# (clique-0: gpu-00000..02, ..., clique-3: gpu-00009..11); pods of no
# scheduler hold gpu-00006, 07 and all of clique-3, so clique-2 has one free
# node. An indexed Job of 4 pods of 8 GPUs, gang train (minMember 4, required
# rack, spec.subGroupSize 2 with subGroupTopology required nvlink-domain):
# ranks 0-1 and 2-3 each land whole in one clique (clique-0 and clique-1).
#
#   replace_in_subgroup: rank 0's node is tainted NoExecute;
#     kube-controller-manager evicts its pod, the Job recreates index 0, and
#     the replacement goes into the clique of rank 1 (its sub-group's),
#     never onto the tainted node nor into clique-2's single free node (best
#     fit in the rack) nor beside the other sub-group; the 3 healthy members
#     keep their pods. Before, a sub-grouped gang with members bound waited
#     ("placing the rest beside their sub-groups is not supported yet").
# Prints cmocka-style lines (scripts/count-tests). Exit: 0 all passed, 1 a
# case failed, 77 the control plane cannot be built.
set -uo pipefail
SRC=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${TOPOGANG_BIN:-$SRC/build/topogang}
source "$SRC/tests/e2e/cases.sh"  # fail, check, wait_for, run_case, summary, e2e_cluster_up
TG_KCM_ARGS="--controllers=*,-node-lifecycle-controller,-statefulset-controller" \
  e2e_cluster_up replace-sg --controller-manager

NS=ml
SEL=job-name=train
# "index node uid" of the pods of SEL that are not terminating
pods() {
  $K get pods -n $NS -l $SEL -o jsonpath='{range .items[*]}{.metadata.labels.batch\.kubernetes\.io/job-completion-index} {.spec.nodeName} {.metadata.uid} {.metadata.deletionTimestamp}{"\n"}{end}' |
    awk 'NF >= 3 && $4 == "" {print $1, $2, $3}'
}
bound_is() { [ "$(pods | awk '$2 != ""' | grep -c .)" = "$1" ]; }
gone_from() { ! $K get pods -n $NS -l $SEL -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -qx "$1"; }
clique_of() { $K get node "$1" -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.clique}'; }
node_of() { pods | awk -v i="$1" '$1 == i {print $2}'; }
pg_condition() { $K get podgroup train -n $NS -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}"; }
complete() { [ "$(pg_condition Complete)" = True ]; }
block() {
  $K create -n $NS -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: blk-$1}
spec: {nodeName: $1, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}
EOF
}
untouched() { local l; while read -r l; do pods | grep -qxF "$l" || return 1; done <<< "$1"; }

# ---- setup -----------------------------------------------------------------
$K apply -f "$SRC/manifests/crd-podgroup.yaml" >/dev/null
$K wait --for condition=established crd --all --timeout=120s >/dev/null
$K create ns topogang-system >/dev/null
$K create ns $NS >/dev/null
"$SRC/scripts/fake-nodes" --nodes 12 --zones 1 --blocks 1 --rack-size 12 --clique-size 3 | $K create -f - >/dev/null
for i in 06 07 09 10 11; do block gpu-000$i; done
"$BIN" scheduler --kubeconfig "$KUBECONFIG" --listen 127.0.0.1:18332 --identity replace-sg \
  --v debug >"$WORK/sched.log" 2>&1 &  # debug: its status writes are logged
SCHED_PID=$!
end=$((SECONDS + 30))
until curl -sf 127.0.0.1:18332/readyz >/dev/null 2>&1; do
  [ $SECONDS -le $end ] || { echo "scheduler not ready:"; tail -20 "$WORK/sched.log"; echo "[  FAILED  ] 1 test(s)"; exit 1; }
  sleep 0.2
done
$K create -n $NS -f - >/dev/null <<EOF
apiVersion: topogang.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec:
  minMember: 4
  topology: {required: rack}
  subGroupSize: 2
  subGroupTopology: {required: nvlink-domain}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 4
  completions: 4
  completionMode: Indexed
  backoffLimit: 20
  template:
    metadata: {labels: {topogang.io/pod-group: train}}
    spec:
      schedulerName: topogang
      restartPolicy: Never
      terminationGracePeriodSeconds: 0
      containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]
EOF

case_replace_in_subgroup() {
  wait_for 60 "4 pods of Job train bound" bound_is 4 || return
  if ! wait_for 20 "PodGroup train Complete" complete; then
    echo "    PodGroup status: $($K get podgroup train -n $NS -o jsonpath='{.status}')"
    grep 'status patch\|status held\|record freed\|bound 4' "$WORK/sched.log" | tail -12 | cut -c1-400
    return
  fi
  local before victim healthy c0 c2
  before=$(pods)
  echo "    members (index node uid): $(tr '\n' ';' <<< "$before")"
  c0=$(clique_of "$(node_of 0)")
  [ "$c0" = "$(clique_of "$(node_of 1)")" ] || fail "ranks 0 and 1 (sub-group 0) in two cliques"
  c2=$(clique_of "$(node_of 2)")
  [ "$c2" = "$(clique_of "$(node_of 3)")" ] || fail "ranks 2 and 3 (sub-group 1) in two cliques"
  [ "$c0" != "$c2" ] || fail "both sub-groups in $c0: it has room for 3"
  victim=$(node_of 0)
  healthy=$(grep -v '^0 ' <<< "$before")
  echo "    tainting $victim (rank 0, sub-group 0 in $c0)"
  $K taint node "$victim" gpu-broken=true:NoExecute >/dev/null
  wait_for 60 "kube-controller-manager evicts the pod on $victim" gone_from "$victim" || return
  wait_for 60 "the Job's replacement of index 0 bound" bound_is 4 || return
  local node; node=$(node_of 0)
  echo "    replacement of index 0 on $node ($(clique_of "$node"))"
  [ "$node" != "$victim" ] || fail "the replacement went to the tainted node $victim"
  [ "$(clique_of "$node")" = "$c0" ] || fail "the replacement is on $node ($(clique_of "$node")), not in $c0 beside rank 1"
  check "the 3 healthy members untouched" untouched "$healthy"
  grep -q "delete.*train-" "$WORK/sched.log" && fail "the scheduler deleted a member: $(grep 'delete.*train-' "$WORK/sched.log" | head -3)"
}

run_case case_replace_in_subgroup
case_sanitizers() {
  kill -TERM "$SCHED_PID" 2>/dev/null; wait "$SCHED_PID" 2>/dev/null; SCHED_PID=
  grep -l "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$WORK"/sched*.log &&
    fail "sanitizer report: $(grep -h -m3 'Sanitizer\|runtime error:' "$WORK"/sched*.log)"
}
run_case case_sanitizers
summary
