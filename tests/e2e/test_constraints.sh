#!/usr/bin/env bash
# End-to-end tests of the constraints a pod carries (issue 10) in `topogang
# scheduler` on a real etcd + kube-apiserver (scripts/cluster-up): 8 fake GPU
# nodes in 2 zones (scripts/fake-nodes --zones 2 --rack-size 2 --clique-size 1:
# gpu-00000..3 in zone-0, gpu-00004..7 in zone-1), the objects of
# tests/e2e/constraints/ (see its README.md for each case). The daemon reads
# Namespaces, PersistentVolumes, PersistentVolumeClaims, StorageClasses and
# ResourceClaims through its informer; no controller runs, so the PVC's Bound
# phase and the ResourceClaim's allocation are written by the test as the PV
# controller and a DRA driver would.
#   - inter-pod anti-affinity inside a gang: one replica per node, one per zone
#     (a third member is refused, with the reason);
#   - topologySpreadConstraints (DoNotSchedule, maxSkew 1 over zones): 2 + 2;
#   - host ports of hostNetwork pods: never on one node, nor beside a bound pod
#     holding the port;
#   - the symmetric rule: a bound pod's anti-affinity keeps a newcomer away;
#   - a PVC bound to a local PV: only the PV's node; a WaitForFirstConsumer
#     PVC and an unallocated ResourceClaim: the pod waits with the reason;
#   - an allocated ResourceClaim: only its node; a claim allocated later (a
#     status update through the watch) lets its waiting pod in, on that node.
# Prints cmocka-style summary lines so scripts/count-tests counts the cases.
# Exit: 0 all passed, 1 a case failed, 77 the control plane cannot be built.
set -uo pipefail
SRC=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${TOPOGANG_BIN:-$SRC/build/topogang}
DIR=$SRC/tests/e2e/constraints
source "$SRC/tests/e2e/cases.sh"  # fail, check, wait_for, run_case, summary, e2e_cluster_up
e2e_cluster_up constraints
NS=e2e-c
node_of() { $K get pod -n $NS "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; echo; }
zone_of() { $K get node "$1" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}'; echo; }
# why POD: its last FailedScheduling message
why() { events | grep "^Pod/$1|FailedScheduling|" | tail -1 | cut -d'|' -f3 | cut -c1-300; }
bound() { for p in "$@"; do [ -n "$(node_of "$p")" ] || return 1; done; }
distinct() { [ "$(printf '%s\n' "$@" | sort -u | wc -l)" = "$#" ]; }
is_eq() { [ "$1" = "$2" ]; }
events() { $K get events -n $NS -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name}|{.reason}|{.message}{"\n"}{end}'; }
has_event() { events | grep "^$1|$2|" | grep -qF -- "$3"; }
pg_phase() { $K get pg -n $NS "$1" -o jsonpath='{.status.phase}'; }

# ---- the cluster, the objects, the scheduler -------------------------------------------
setup() {
  $K apply -f "$SRC/manifests/crd-podgroup.yaml" >/dev/null &&
    $K wait --for condition=established crd/podgroups.topogang.io --timeout=30s >/dev/null || return 1
  "$SRC/scripts/fake-nodes" --nodes 8 --zones 2 --blocks 1 --rack-size 2 --clique-size 1 |
    $K create -f - >/dev/null || return 1
  $K apply -f "$DIR/00-setup.yaml" >/dev/null || return 1
  # what the PV controller and a DRA driver would write: status, which apply leaves out
  $K -n $NS patch pvc data --subresource=status --type=merge \
    -p '{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"100Gi"}}}' >/dev/null || return 1
  $K -n $NS patch resourceclaim gpu-alloc --subresource=status --type=merge -p "$(claim_on gpu-00001)" >/dev/null || return 1
  $K apply -f "$DIR/10-workloads.yaml" >/dev/null || return 1
  "$BIN" scheduler --kubeconfig "$KUBECONFIG" --listen 127.0.0.1:18311 >"$WORK/scheduler.log" 2>&1 &
  SCHED_PID=$!
  local end=$((SECONDS + 15))
  while [ $SECONDS -le $end ]; do curl -sf 127.0.0.1:18311/readyz >/dev/null && return 0; sleep 0.2; done
  return 1
}
claim_on() {
  printf '{"status":{"allocation":{"devices":{"results":[]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["%s"]}]}]}}}}' "$1"
}

# ---- the cases ------------------------------------------------------------------------------
one_replica_per_node() {
  wait_for 20 "serve-0..3 bound" bound serve-0 serve-1 serve-2 serve-3 || return
  local n; n=$(for p in serve-0 serve-1 serve-2 serve-3; do node_of $p; done)
  echo "    serve on" $n
  check "4 distinct nodes ($(echo $n))" distinct $n
  wait_for 10 "PodGroup serve Scheduled" is_eq_cmd Scheduled pg_phase serve
}
is_eq_cmd() { local want=$1; shift; [ "$("$@")" = "$want" ]; }

one_per_zone() {
  wait_for 20 "quorum-0/1 bound" bound quorum-0 quorum-1 || return
  local z0 z1; z0=$(zone_of "$(node_of quorum-0)"); z1=$(zone_of "$(node_of quorum-1)")
  echo "    quorum in $z0 and $z1"
  check "one per zone ($z0, $z1)" test "$z0" != "$z1"
  # three that must each have a zone of their own, in two zones: refused, with the reason
  {
    printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: trio, namespace: %s}\nspec: {minMember: 3}\n' $NS
    for i in 0 1 2; do
      cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: trio-$i, namespace: $NS, labels: {topogang.io/pod-group: trio, app: trio}}
spec:
  schedulerName: topogang
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: trio}}
        topologyKey: topology.kubernetes.io/zone
  containers: [{name: main, image: registry.k8s.io/pause:3.10, resources: {limits: {nvidia.com/gpu: 1}}}]
YAML
    done
  } | $K create -f - >/dev/null || { fail "creating trio"; return; }
  wait_for 20 "FailedScheduling on trio naming the anti-affinity" \
    has_event PodGroup/trio FailedScheduling "pod anti-affinity" || { events | grep trio; return; }
  events | grep "^PodGroup/trio|FailedScheduling|" | head -1 | cut -d'|' -f3 | cut -c1-240 | sed 's/^/    /'
  check "no trio pod bound" is_eq "$(for p in trio-0 trio-1 trio-2; do node_of $p; done | tr -d '\n')" ""
}

spread() {
  wait_for 20 "spread-0..3 bound" bound spread-0 spread-1 spread-2 spread-3 || return
  local zs; zs=$(for p in spread-0 spread-1 spread-2 spread-3; do zone_of "$(node_of $p)"; done | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')
  echo "    spread per zone: $zs"
  check "2 + 2 over the zones (got $zs)" is_eq "$zs" "2 2 "
}

host_ports() {
  wait_for 20 "nccl-0/1 bound" bound nccl-0 nccl-1 || return
  local a b; a=$(node_of nccl-0); b=$(node_of nccl-1)
  echo "    nccl on $a and $b (agent holds port 29500 on $(node_of agent))"
  check "two distinct nodes" test "$a" != "$b"
  check "neither beside the bound pod holding the port" test "$a" != gpu-00000 -a "$b" != gpu-00000
}

symmetric_anti_affinity() {
  wait_for 20 "web bound" bound web || return
  echo "    web on $(node_of web) (loner on gpu-00007 refuses app=web)"
  check "web not beside loner" test "$(node_of web)" != gpu-00007
  check "web in zone-1 (its nodeSelector)" is_eq "$(zone_of "$(node_of web)")" zone-1
  # one that may only go beside loner: refused there, and told why
  $K create -f - >/dev/null <<YAML || { fail "creating web-7"; return; }
apiVersion: v1
kind: Pod
metadata: {name: web-7, namespace: $NS, labels: {app: web}}
spec:
  schedulerName: topogang
  nodeSelector: {kubernetes.io/hostname: gpu-00007}
  containers: [{name: main, image: registry.k8s.io/pause:3.10, resources: {limits: {nvidia.com/gpu: 1}}}]
YAML
  wait_for 20 "web-7 refused beside loner, with the reason" has_event Pod/web-7 FailedScheduling "e2e-c/loner" ||
    { echo "    web-7: $(why web-7)"; return; }
  echo "    web-7: $(why web-7)"
  check "web-7 not bound" is_eq "$(node_of web-7)" ""
}

pv_node_affinity() {
  wait_for 20 "uses-data bound" bound uses-data || return
  check "uses-data on the local PV's node gpu-00003 (got $(node_of uses-data))" is_eq "$(node_of uses-data)" gpu-00003
}

wait_for_first_consumer() {
  wait_for 20 "a FailedScheduling Event naming the PVC" has_event Pod/uses-scratch FailedScheduling \
    "PVC e2e-c/scratch waits for its first consumer (StorageClass local, WaitForFirstConsumer): binding volumes is not supported by topogang yet" || return
  check "uses-scratch not bound" is_eq "$(node_of uses-scratch)" ""
}

dra_allocated() {
  wait_for 20 "uses-claim bound" bound uses-claim || { echo "    uses-claim: $(why uses-claim)"; return; }
  check "uses-claim on its claim's node gpu-00001 (got $(node_of uses-claim))" is_eq "$(node_of uses-claim)" gpu-00001
}

dra_not_allocated() {
  wait_for 20 "a FailedScheduling Event naming the claim" has_event Pod/waits-claim FailedScheduling \
    "ResourceClaim e2e-c/gpu-unalloc is not allocated: DRA allocation is not supported by topogang yet" || return
  check "waits-claim not bound" is_eq "$(node_of waits-claim)" ""
  # a driver allocates it on gpu-00002: the watch brings the change, the pod goes there
  $K -n $NS patch resourceclaim gpu-unalloc --subresource=status --type=merge -p "$(claim_on gpu-00002)" >/dev/null ||
    { fail "patching the claim's allocation"; return; }
  wait_for 20 "waits-claim bound once its claim is allocated" bound waits-claim || { echo "    $(why waits-claim)"; return; }
  check "waits-claim on gpu-00002 (got $(node_of waits-claim))" is_eq "$(node_of waits-claim)" gpu-00002
}

daemon_clean() {
  kill -TERM "$SCHED_PID"; wait "$SCHED_PID"; local rc=$?; SCHED_PID=""
  [ $rc = 0 ] || fail "scheduler exited $rc after SIGTERM (see $WORK/scheduler.log)"
  if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$WORK/scheduler.log"; then
    fail "sanitizer report in $WORK/scheduler.log"; grep -m5 -E "Sanitizer|runtime error:|#[0-9] " "$WORK/scheduler.log"
  fi
  grep -m1 "resourceclaims not served" "$WORK/scheduler.log" && fail "resource.k8s.io/v1 is served here"
}

CASES="one_replica_per_node one_per_zone spread host_ports symmetric_anti_affinity pv_node_affinity
       wait_for_first_consumer dra_allocated dra_not_allocated daemon_clean"
if ! setup >"$WORK/setup.log" 2>&1; then
  echo "setup failed:"; tail -20 "$WORK/setup.log"; tail -20 "$WORK/scheduler.log" 2>/dev/null
  for c in $CASES; do echo "[ RUN      ] $c"; echo "[  FAILED  ] $c"; done
  failed=$(echo $CASES | wc -w); echo "[  FAILED  ] $failed test(s)"; exit 1
fi
for c in $CASES; do run_case "$c"; done
summary
