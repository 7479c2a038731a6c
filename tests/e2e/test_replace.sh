#!/usr/bin/env bash
# End-to-end: a failed node under a running gang (issue 20), on a real etcd +
# kube-apiserver + kube-controller-manager (scripts/cluster-up
# --controller-manager; its node lifecycle controller off, as no kubelet
# heartbeats the fake nodes; its taint eviction controller on).
#
# 12 fake nodes of 8 GPUs in one rack, two NVLink cliques of 6 (clique-0:
# gpu-00000..05, clique-1: gpu-00006..11); pods of no scheduler hold
# gpu-00006..10, so clique-1 has one free node. An indexed Job of 4 pods of
# 8 GPUs, gang train (PodGroup minMember 4, required rack), lands in clique-0.
#
#   replace_beside_peers: one member's node is tainted NoExecute;
#     kube-controller-manager evicts its pod (topogang deletes nothing), the
#     Job recreates it, and the replacement goes into clique-0 beside its 3
#     healthy peers (best fit in the rack alone would take clique-1's single
#     free node), never onto the tainted node; the 3 peers keep their pods
#     (same uid, same node).
#   wait_with_reason: the rest of the rack is taken and a second member's
#     node tainted: the replacement waits, its Event saying in numbers why
#     ("replacement for rack ...: 0 of 12 nodes in the rack have room for 1 x
#     nvidia.com/gpu=8 (2 not Ready or tainted NoExecute)"), the PodGroup
#     says MemberLoss, the 3 members left are untouched; once a node of the
#     rack frees, the replacement is placed there.
#   requeue_whole: gang.onNoReplacement requeue (the scheduler restarted
#     with it): the same with no room, and the gang is evicted whole; its
#     recreated pods wait to be placed anew as a whole gang.
# Prints cmocka-style lines (scripts/count-tests). Exit: 0 all passed, 1 a
# case failed, 77 the control plane cannot be built.
set -uo pipefail
SRC=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${TOPOGANG_BIN:-$SRC/build/topogang}
source "$SRC/tests/e2e/cases.sh"  # fail, check, wait_for, run_case, summary, e2e_cluster_up
TG_KCM_ARGS="--controllers=*,-node-lifecycle-controller,-statefulset-controller" \
  e2e_cluster_up replace --controller-manager

NS=ml
SEL=job-name=train
# "name node uid" of the pods of SEL that are not terminating
pods() {
  $K get pods -n $NS -l $SEL -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.uid} {.metadata.deletionTimestamp}{"\n"}{end}' |
    awk 'NF >= 3 && $4 == "" {print $1, $2, $3}'
}
bound_is() { [ "$(pods | awk '$2 != ""' | grep -c .)" = "$1" ]; }
pending_is() { [ "$($K get pods -n $NS -l $SEL -o jsonpath='{range .items[*]}{.spec.nodeName}{"|"}{.metadata.deletionTimestamp}{"\n"}{end}' | grep -c '^|$')" = "$1" ]; }
gone_from() { ! $K get pods -n $NS -l $SEL -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -qx "$1"; }
clique_of() { $K get node "$1" -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.clique}'; }
events() { $K get events -n $NS -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name} {.reason} {.message}{"\n"}{end}'; }
event_says() { events | grep -qF -- "$1"; }
pg_condition() { $K get podgroup train -n $NS -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}"; }
complete() { [ "$(pg_condition Complete)" = True ]; }
member_loss() { [ "$(pg_condition MemberLoss)" = True ]; }
member_loss_gone() { [ "$(pg_condition MemberLoss)" != True ]; }
# block NODE: a pod of no scheduler holding NODE's 8 GPUs
block() {
  $K create -n $NS -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: blk-$1}
spec: {nodeName: $1, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}
EOF
}
# the healthy members (recorded "name node uid" lines) are as they were
untouched() { local l; while read -r l; do pods | grep -qxF "$l" || return 1; done <<< "$1"; }

# ---- setup -----------------------------------------------------------------
$K apply -f "$SRC/manifests/crd-podgroup.yaml" >/dev/null
$K wait --for condition=established crd --all --timeout=120s >/dev/null
$K create ns topogang-system >/dev/null
$K create ns $NS >/dev/null
"$SRC/scripts/fake-nodes" --nodes 12 --zones 1 --blocks 1 --rack-size 12 --clique-size 6 | $K create -f - >/dev/null
for i in 06 07 08 09 10; do block gpu-000$i; done
"$BIN" scheduler --kubeconfig "$KUBECONFIG" --listen 127.0.0.1:18331 --identity replace >"$WORK/sched.log" 2>&1 &
SCHED_PID=$!
end=$((SECONDS + 30))
until curl -sf 127.0.0.1:18331/readyz >/dev/null 2>&1; do
  [ $SECONDS -le $end ] || { echo "scheduler not ready:"; tail -20 "$WORK/sched.log"; echo "[  FAILED  ] 1 test(s)"; exit 1; }
  sleep 0.2
done
$K create -n $NS -f - >/dev/null <<EOF
apiVersion: topogang.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec: {minMember: 4, topology: {required: rack}}
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

case_replace_beside_peers() {
  wait_for 60 "4 pods of Job train bound" bound_is 4 || return
  wait_for 20 "PodGroup train Complete" complete || return
  local before victim healthy
  before=$(pods)
  for n in $(awk '{print $2}' <<< "$before"); do
    [ "$(clique_of "$n")" = clique-0 ] || fail "member on $n, not in clique-0: $before"
  done
  victim=$(head -1 <<< "$before" | awk '{print $2}')
  healthy=$(tail -n +2 <<< "$before")
  echo "    members: $(tr '\n' ';' <<< "$before"); tainting $victim"
  $K taint node "$victim" gpu-broken=true:NoExecute >/dev/null
  wait_for 60 "kube-controller-manager evicts the pod on $victim" gone_from "$victim" || return
  wait_for 60 "the Job's replacement bound" bound_is 4 || return
  local now new node
  now=$(pods)
  new=$(grep -vxF -f <(echo "$healthy") <<< "$now")
  node=$(awk '{print $2}' <<< "$new")
  echo "    replacement: $new"
  [ "$node" != "$victim" ] || fail "the replacement went to the tainted node $victim"
  [ "$(clique_of "$node")" = clique-0 ] || fail "the replacement is on $node ($(clique_of "$node")), not in clique-0 beside its peers"
  check "the 3 healthy members untouched" untouched "$healthy"
  grep -q "delete.*train-" "$WORK/sched.log" && fail "the scheduler deleted a member: $(grep 'delete.*train-' "$WORK/sched.log" | head -3)"
}

case_wait_with_reason() {
  local before victim healthy free
  before=$(pods)
  # take every node of the rack still free
  for free in $(for i in $(seq -w 0 11); do echo gpu-000$i; done | grep -vxF -f <(awk '{print $2}' <<< "$before") | grep -vx 'gpu-0000[6-9]\|gpu-00010'); do
    $K get node "$free" -o jsonpath='{.spec.taints}' | grep -q NoExecute || block "$free"
  done
  victim=$(head -1 <<< "$before" | awk '{print $2}')
  healthy=$(tail -n +2 <<< "$before")
  echo "    tainting $victim; the rest of the rack is taken"
  $K taint node "$victim" gpu-broken=true:NoExecute >/dev/null
  wait_for 60 "kube-controller-manager evicts the pod on $victim" gone_from "$victim" || return
  wait_for 30 "the Job's replacement exists, pending" pending_is 1 || return
  wait_for 30 "an Event with the replacement's reason in numbers" \
    event_says "0 of 12 nodes in the rack have room for 1 x nvidia.com/gpu=8 (2 not Ready or tainted NoExecute)"
  events | grep -F "replacement for rack" | head -2 | sed 's/^/    /'
  wait_for 20 "PodGroup condition MemberLoss" member_loss
  sleep 3
  check "still 3 members bound" bound_is 3
  check "the 3 members left untouched" untouched "$healthy"
  # a node of the rack frees: the replacement goes there
  local freed; freed=$($K get pods -n $NS -o name | grep -m1 'blk-gpu-0000[0-5]' | sed 's|pod/blk-||')
  [ -n "$freed" ] || { fail "no blocker in clique-0 to free"; return; }
  $K delete pod -n $NS "blk-$freed" --grace-period=0 --force >/dev/null 2>&1
  wait_for 30 "the replacement bound once $freed frees" bound_is 4 || return
  check "the replacement on $freed" grep -q " $freed " <<< "$(pods)"
  wait_for 20 "MemberLoss condition gone" member_loss_gone
  check "the 3 members left untouched" untouched "$healthy"
}

# requeue: the scheduler restarted with gang.onNoReplacement requeue; a third
# member's node tainted with the rack full: once the loss is announced and the
# replacement tried again (a node added elsewhere wakes it), every member is
# deleted (Event MemberLossRequeued), and what the Job recreates waits to be
# placed anew, whole (minMember), not as replacements.
case_requeue_whole() {
  kill -TERM "$SCHED_PID" 2>/dev/null; wait "$SCHED_PID" 2>/dev/null; SCHED_PID=
  printf 'gang: {onNoReplacement: requeue}\n' > "$WORK/requeue.yaml"
  "$BIN" scheduler --kubeconfig "$KUBECONFIG" --listen 127.0.0.1:18331 --identity replace2 \
    --config "$WORK/requeue.yaml" >"$WORK/sched2.log" 2>&1 &
  SCHED_PID=$!
  wait_for 30 "scheduler ready" curl -sf 127.0.0.1:18331/readyz || return
  local before victim
  before=$(pods)
  victim=$(head -1 <<< "$before" | awk '{print $2}')
  $K taint node "$victim" gpu-broken=true:NoExecute >/dev/null
  wait_for 60 "kube-controller-manager evicts the pod on $victim" gone_from "$victim" || return
  wait_for 20 "PodGroup condition MemberLoss" member_loss || return
  "$SRC/scripts/fake-nodes" --nodes 1 --prefix other | sed 's/rack-0-0-0/rack-other/' | $K create -f - >/dev/null
  # tried again at the latest after the queue's 60 s flush
  wait_for 90 "Event MemberLossRequeued" event_says "requeued whole (gang.onNoReplacement requeue)" || return
  events | grep -F "MemberLossRequeued" | head -1 | sed 's/^/    /'
  local l uid
  while read -r l; do
    uid=$(awk '{print $3}' <<< "$l")
    wait_for 30 "member $(awk '{print $1}' <<< "$l") deleted" \
      bash -c "! $K get pods -n $NS -o jsonpath='{.items[*].metadata.uid}' | grep -q $uid"
  done <<< "$(tail -n +2 <<< "$before")"
  # placed anew, whole: what is pending waits for minMember, nothing is bound
  # next to anything (the Job recreates the rest after its own pod-failure
  # backoff, minutes after 6 failures: not waited for here)
  check "no member of train bound" bound_is 0
  wait_for 30 "the gang waits whole: Event Waiting, 0 bound" event_says "+ 0 bound < minMember 4"
}

run_case case_replace_beside_peers
run_case case_wait_with_reason
run_case case_requeue_whole
# the schedulers' logs: no sanitizer report (TOPOGANG_BIN=build-asan/topogang)
case_sanitizers() {
  kill -TERM "$SCHED_PID" 2>/dev/null; wait "$SCHED_PID" 2>/dev/null; SCHED_PID=
  grep -l "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$WORK"/sched*.log &&
    fail "sanitizer report: $(grep -h -m3 'Sanitizer\|runtime error:' "$WORK"/sched*.log)"
}
run_case case_sanitizers
summary
