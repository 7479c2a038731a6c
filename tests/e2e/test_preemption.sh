#!/usr/bin/env bash
# End-to-end tests of preemption and reservation in `topogang scheduler` on a
# real etcd + kube-apiserver (scripts/cluster-up), with 8 fake GPU nodes in
# two racks of 4 (scripts/fake-nodes) and the real CRD from manifests/. No
# kubelet runs: a pod deleted with a grace period stays Terminating until the
# test finalises it as a kubelet would (`kubectl delete --grace-period=0
# --force` once it sees the deletionTimestamp). Running gangs are created
# already bound (spec.nodeName) and owned by a made-up controller, so that
# preemption may evict them (pods with no controller are not victims).
#   - the cheapest gangs of one rack are evicted (DisruptionTarget, delete with
#     grace, Events on both sides), the preemptor binds there once they are
#     gone, the other rack is not touched;
#   - nomination: while the victims leave, a lower-priority gang that would
#     fit the freed room is not placed into it; the waiting preemptor shows
#     status.nominated and its pods status.nominatedNodeName (the API server
#     clears the latter at binding);
#   - reservation: a big gang of the same priority as a stream of small pods
#     starves without gang.reserveAfterSeconds and is placed with it, while
#     small pods keep flowing into the other rack;
#   - a PriorityClass with preemptionPolicy: Never waits and evicts nothing;
#   - priority is not a tenant's to set (issue 19): a PodGroup with
#     spec.priority 2147483647 in a tenant namespace evicts no
#     system-node-critical pod of kube-system, and says why; a PodGroup naming
#     a high non-system PriorityClass preempts a lower gang.
# Priorities come from PriorityClasses e2e-pN (value N), as on a real cluster:
# a PodGroup's numeric spec.priority is ignored by default.
# Prints cmocka-style summary lines so scripts/count-tests counts the cases.
# Exit: 0 all passed, 1 a case failed, 77 the control plane cannot be built.
set -uo pipefail
SRC=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${TOPOGANG_BIN:-$SRC/build/topogang}
source "$SRC/tests/e2e/cases.sh"  # fail, check, wait_for, run_case, summary, e2e_cluster_up
e2e_cluster_up preempt

logf() { echo "$WORK/${CASE}_$1.log"; }
# start_sched NAME PORT [extra args]
start_sched() {
  local name=$1 port=$2; shift 2
  "$BIN" scheduler --kubeconfig "$KUBECONFIG" --listen "127.0.0.1:$port" --identity "$name" \
    "$@" >"$(logf "$name")" 2>&1 &
  PIDS+=($!)
  eval "PID_$name=$!"
  wait_for 10 "$name ready" curl -sf "127.0.0.1:$port/readyz"
}
# stop_sched NAME: SIGTERM; the daemon must exit 0 (a sanitizer report exits non-zero)
stop_sched() {
  local pid rc; eval "pid=\${PID_$1:-}"; [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid"; wait "$pid"; rc=$?
  [ $rc = 0 ] || fail "scheduler $1 exited $rc after SIGTERM (see its log)"
  if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$(logf "$1")"; then
    fail "sanitizer report in $(logf "$1")"; grep -m5 -E "Sanitizer|runtime error:|#[0-9] " "$(logf "$1")"
  fi
}
metric() { curl -s "127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }

# running_gang NS NAME PRIORITY NODE...: a gang already bound, one 8-GPU pod
# per node, owned by a made-up controller (evictable), grace period 30 s; its
# PodGroup names the PriorityClass e2e-pPRIORITY
running_gang() {
  local ns=$1 name=$2 prio=$3; shift 3
  local uid i=0; uid=$(cat /proc/sys/kernel/random/uuid)
  {
    printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: %s}\nspec: {minMember: %s, priorityClassName: e2e-p%s}\n' \
      "$name" "$ns" "$#" "$prio"
    for node in "$@"; do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%s\n  namespace: %s\n  labels: {topogang.io/pod-group: %s}\n' "$name" "$i" "$ns" "$name"
      printf '  ownerReferences: [{apiVersion: example.com/v1, kind: TrainJob, name: %s, uid: %s, controller: true}]\n' "$name" "$uid"
      printf 'spec:\n  schedulerName: topogang\n  nodeName: %s\n  terminationGracePeriodSeconds: 30\n  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]\n' "$node"
      i=$((i + 1))
    done
  } | $K create -f - >/dev/null
}
# pending_gang NS NAME N GPUS TOPOLOGY PRIORITY-FIELD: N pods, minMember N
pending_gang() {
  local ns=$1 name=$2 n=$3 gpus=$4 topo=$5 prio=$6
  {
    printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: %s}\nspec: {minMember: %s, %s%s}\n' \
      "$name" "$ns" "$n" "$prio" "${topo:+, topology: $topo}"
    for i in $(seq 0 $((n - 1))); do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s-%s, namespace: %s, labels: {topogang.io/pod-group: %s}}\n' "$name" "$i" "$ns" "$name"
      printf 'spec:\n  schedulerName: topogang\n  terminationGracePeriodSeconds: 0\n  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: %s}}}]\n' "$gpus"
    done
  } | $K create -f - >/dev/null
}
# the busy cluster of the preemption cases: rack-0-0-0 holds low-priority
# gangs (lo-a: 2 nodes, lo-b: 1, priority 10; lo-c: 1, priority 20), rack-0-0-1
# medium ones (md-a, md-b: 2 nodes each, priority 50)
busy_racks() {
  running_gang "$1" lo-a 10 gpu-00000 gpu-00001
  running_gang "$1" lo-b 10 gpu-00002
  running_gang "$1" lo-c 20 gpu-00003
  running_gang "$1" md-a 50 gpu-00004 gpu-00005
  running_gang "$1" md-b 50 gpu-00006 gpu-00007
}
pod_field() { $K get pod -n "$1" "$2" -o jsonpath="$3" 2>/dev/null; }
terminating() { for p in "${@:2}"; do [ -n "$(pod_field "$1" "$p" '{.metadata.deletionTimestamp}')" ] || return 1; done; }
disruption_target() { [ "$(pod_field "$1" "$2" '{.status.conditions[?(@.type=="DisruptionTarget")].reason}')" = PreemptionByScheduler ]; }
untouched() {
  [ -n "$(pod_field "$1" "$2" '{.spec.nodeName}')" ] && [ -z "$(pod_field "$1" "$2" '{.metadata.deletionTimestamp}')" ] \
    && [ -z "$(pod_field "$1" "$2" '{.status.conditions[?(@.type=="DisruptionTarget")].type}')" ]
}
# finalise NS POD...: what a kubelet does once the containers stopped
finalise() { $K delete pod -n "$1" "${@:2}" --grace-period=0 --force >/dev/null 2>&1; }
bound_count() { $K get pods -n "$1" -l "topogang.io/pod-group=$2" --field-selector spec.nodeName!= --no-headers 2>/dev/null | wc -l; }
bound_is() { [ "$(bound_count "$1" "$2")" = "$3" ]; }
nodes_of() { $K get pods -n "$1" -l "topogang.io/pod-group=$2" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -v '^$' | sort -u | tr '\n' ' '; }
rack_of() { $K get node "$1" -o jsonpath='{.metadata.labels.topogang\.io/rack}'; }
pg_field() { $K get pg "$2" -n "$1" -o jsonpath="$3"; }
is_eq() { [ "$1" = "$2" ]; }
events() { $K get events -n "$1" -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name}|{.reason}|{.message}{"\n"}{end}'; }
# has_event NS KIND/NAME REASON [TEXT]: an Event with that reason whose message holds TEXT
has_event() { events "$1" | grep "^$2|$3|" | grep -qF -- "${4:-}"; }
no_event() { ! has_event "$@"; }
newns() { $K create ns "$1" >/dev/null; }
wipe() { $K delete pods -n "$1" --all --grace-period=0 --force >/dev/null 2>&1; $K delete pg -n "$1" --all >/dev/null 2>&1; }

# ---- setup: CRD, 8 nodes in 2 racks of 4 ------------------------------------
$K apply -f "$SRC/manifests/crd-podgroup.yaml" >/dev/null
$K wait --for condition=established crd/podgroups.topogang.io --timeout=30s >/dev/null
"$SRC/scripts/fake-nodes" --nodes 8 --zones 1 --blocks 1 --rack-size 4 --clique-size 2 | $K create -f - >/dev/null
for v in 0 10 15 20 50 100; do
  printf 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: e2e-p%s}\nvalue: %s\n' "$v" "$v"
  printf -- '---\n'
done | $K create -f - >/dev/null
RACK0=zone-0/block-0-0/rack-0-0-0

# one line per pod: name node deletionGracePeriodSeconds DisruptionTarget-reason deletionTimestamp
pods_state() { $K get pods -n "$1" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.deletionGracePeriodSeconds}/{.status.conditions[?(@.type=="DisruptionTarget")].reason}/{.metadata.deletionTimestamp}{"\n"}{end}'; }
state_of() { awk -v p="$2" '$1 == p {print $3}' <<< "$1"; }

case_preempt_cheapest_gangs_in_one_rack() {
  newns p1; busy_racks p1
  # a PDB on the medium gangs: preemption must not need to weigh it (they are never victims)
  printf 'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: md, namespace: p1}\nspec: {minAvailable: 4, selector: {matchExpressions: [{key: topogang.io/pod-group, operator: In, values: [md-a, md-b]}]}}\n' \
    | $K create -f - >/dev/null
  start_sched s1 18201 || return
  local t0 t1 tf t2 st; t0=$(now)
  # 3 whole nodes in one rack, priority 100: the cheapest set is lo-a + lo-b
  # (priority 10) in rack-0-0-0; any set with lo-c (20) or in rack-0-0-1 (50) costs more
  pending_gang p1 hi 3 8 "{required: rack}" "priorityClassName: e2e-p100"
  wait_for 15 "the victims Terminating" terminating p1 lo-a-0 lo-a-1 lo-b-0 || { tail -5 "$(logf s1)"; return; }
  t1=$(now)
  st=$(pods_state p1)
  finalise p1 lo-a-0 lo-a-1 lo-b-0 # the kubelet's part, as soon as seen
  tf=$(now)
  wait_for 20 "the preemptor bound" bound_is p1 hi 3 || { tail -5 "$(logf s1)"; return; }
  t2=$(now)
  # what the victims and the others looked like while the victims were Terminating
  for p in lo-a-0 lo-a-1 lo-b-0; do
    check "$p: DisruptionTarget (PreemptionByScheduler), deleted with its own grace period 30 s; got $(state_of "$st" $p)" \
      bash -c "[[ '$(state_of "$st" $p)' == 30/PreemptionByScheduler/?* ]]"
  done
  for p in lo-c-0 md-a-0 md-a-1 md-b-0 md-b-1; do
    check "$p not touched; got $(state_of "$st" $p)" is_eq "$(state_of "$st" $p)" "//"
  done
  check "the preemptor had not bound while its victims terminated" \
    is_eq "$(grep -c '^hi-[0-9] gpu' <<< "$st")" 0
  check "bound on the freed nodes, got $(nodes_of p1 hi)" is_eq "$(nodes_of p1 hi)" "gpu-00000 gpu-00001 gpu-00002 "
  for p in lo-c-0 md-a-0 md-a-1 md-b-0 md-b-1; do check "$p still not touched" untouched p1 "$p"; done
  wait_for 10 "phase Scheduled, nomination gone" bash -c "[ \"\$($K get pg -n p1 hi -o jsonpath='{.status.phase}/{.status.nominated}')\" = Scheduled/ ]"
  wait_for 5 "Preempting on the preemptor, naming victims and domain" has_event p1 PodGroup/hi Preempting "p1/lo-a (2 pods), p1/lo-b (1 pod); rack $RACK0"
  for o in PodGroup/lo-a PodGroup/lo-b Pod/lo-a-0 Pod/lo-a-1 Pod/lo-b-0; do
    check "Preempted on $o naming the preemptor" has_event p1 "$o" Preempted "preempted by p1/hi (priority 100)"
  done
  check "no Preempted on lo-c" no_event p1 PodGroup/lo-c Preempted
  check "topogang_preemptions_total = 1" is_eq "$(metric 18201 topogang_preemptions_total)" 1
  check "victims: 2 gangs" is_eq "$(metric 18201 'topogang_preemption_victims_total{kind="gang"}')" 2
  check "victims: 0 pods of no gang" is_eq "$(metric 18201 'topogang_preemption_victims_total{kind="pod"}')" 0
  check "3 pods preempted" is_eq "$(metric 18201 topogang_preempted_pods_total)" 3
  check "no nomination left" is_eq "$(metric 18201 topogang_nominations)" 0
  echo "    preemption: victims Terminating $(secs "$t0" "$t1") s after the preemptor's creation; preemptor bound $(secs "$t0" "$t2") s after its creation, $(secs "$tf" "$t2") s after the victims were finalised"
  wipe p1; stop_sched s1
}

case_nomination_holds_room() {
  newns p2; busy_racks p2
  start_sched s1 18202 || return
  local t0 t1; t0=$(now)
  pending_gang p2 hi 3 8 "{required: rack}" "priorityClassName: e2e-p100"
  wait_for 15 "the victims Terminating" terminating p2 lo-a-0 lo-a-1 lo-b-0 || return
  # a gang of priority 15 (above the victims, below the preemptor) that one freed node would hold
  pending_gang p2 mid 1 8 "" "priorityClassName: e2e-p15"
  sleep 1
  # the victims leave one by one: gpu-00002 is free first; only the nomination keeps mid out
  finalise p2 lo-b-0
  sleep 3
  check "mid not placed into the room held for the preemptor" bound_is p2 mid 0
  check "the preemptor still waits for the rest" bound_is p2 hi 0
  local msg; msg=$(pg_field p2 hi '{.status.conditions[0].reason}: {.status.conditions[0].message}')
  case "$msg" in Nominated:*"waiting for"*"preempted pod(s) to leave"*) ;; *) fail "status says it waits for its victims, got: $msg";; esac
  check "status.nominated.victims = 2, got $(pg_field p2 hi '{.status.nominated.victims}')" is_eq "$(pg_field p2 hi '{.status.nominated.victims}')" 2
  check "status.nominated.domain = $RACK0" is_eq "$(pg_field p2 hi '{.status.nominated.domain}')" "$RACK0"
  check "nominatedNodeName on the waiting preemptor's pods" \
    is_eq "$($K get pods -n p2 -l topogang.io/pod-group=hi -o jsonpath='{.items[*].status.nominatedNodeName}' | tr ' ' '\n' | sort | tr '\n' ' ')" "gpu-00000 gpu-00001 gpu-00002 "
  finalise p2 lo-a-0 lo-a-1
  wait_for 20 "the preemptor bound" bound_is p2 hi 3 || { tail -5 "$(logf s1)"; return; }
  t1=$(now)
  check "the preemptor on the freed nodes, got $(nodes_of p2 hi)" is_eq "$(nodes_of p2 hi)" "gpu-00000 gpu-00001 gpu-00002 "
  sleep 1
  check "mid still pending (the cluster is full)" bound_is p2 mid 0
  check "lo-c not touched (mid may not preempt priority 20)" untouched p2 lo-c-0
  echo "    nomination: preemptor bound $(secs "$t0" "$t1") s after its creation (victims finalised one by one, 3 s apart)"
  wipe p2; stop_sched s1
}

# ---- reservation ---------------------------------------------------------------
NEXT=0
# small NS: one more single pod of 4 GPUs (two fill a node)
small() {
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: small-%03d, namespace: %s, labels: {app: small}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 4}}}]}\n' \
    "$NEXT" "$1" | $K create -f - >/dev/null
  NEXT=$((NEXT + 1))
}
smalls_bound() { $K get pods -n "$1" -l app=small --field-selector spec.nodeName!= --no-headers 2>/dev/null | wc -l; }
# churn NS SECONDS STOP...: until STOP succeeds, the oldest running small pod
# finishes (deleted) and a new one is submitted, about twice a second
churn() {
  local ns=$1 end=$((SECONDS + $2)); shift 2
  while [ $SECONDS -le $end ]; do
    "$@" && return 0
    local old; old=$($K get pods -n "$ns" -l app=small --field-selector spec.nodeName!= -o name | sort | head -1)
    [ -n "$old" ] && $K delete -n "$ns" "$old" --grace-period=0 --force >/dev/null 2>&1
    small "$ns"
    sleep 0.2
  done
  return 1
}
# fill NS: 16 small pods on the 8 nodes, then the big gang (a whole rack)
fill_and_big() {
  NEXT=0
  for i in $(seq 1 16); do small "$1"; done
  wait_for 20 "16 small pods bound" bash -c "[ \$($K get pods -n $1 -l app=small --field-selector spec.nodeName!= --no-headers | wc -l) = 16 ]" || return 1
  pending_gang "$1" big 4 8 "{required: rack}" "priorityClassName: e2e-p0"
  FIRST_AFTER_BIG=$NEXT
  sleep 1.1 # the small pods submitted from now on are younger than the big gang
}

case_reservation_off_starves() {
  newns r0
  printf 'gang: {reserveAfterSeconds: 0}\n' > "$WORK/noreserve.yaml"
  start_sched s1 18203 --config "$WORK/noreserve.yaml" || return
  fill_and_big r0 || return
  local n0=$NEXT
  churn r0 15 bound_is r0 big 4 && fail "the big gang was placed without a reservation"
  check "big still pending after 15 s of churn" bound_is r0 big 0
  local flowed; flowed=$($K get pods -n r0 -l app=small --field-selector spec.nodeName!= -o name | sed 's/.*small-//' | awk -v n="$n0" '$1 + 0 >= n' | wc -l)
  check "small pods kept flowing ($flowed bound of those submitted after the big gang)" test "$flowed" -ge 5
  check "no reservation" is_eq "$(metric 18203 topogang_reservations)" 0
  echo "    no reservation: big gang (4 x 8 GPUs, one rack) still pending after 15 s; $((NEXT - n0)) small pods submitted, $flowed of them running"
  wipe r0; stop_sched s1
}

# the stop condition of the churn with reservations: watches the gauge and the status on the way
RESV_SEEN=""; GAUGE_SEEN=0; RESV_AT=""
big_placed_watching() {
  local d; d=$(pg_field r1 big '{.status.reservation.domain}' 2>/dev/null)
  if [ -n "$d" ] && [ -z "$RESV_SEEN" ]; then RESV_SEEN=$d; RESV_AT=$NEXT; fi
  [ "$(metric 18204 topogang_reservations)" = 1 ] && GAUGE_SEEN=1
  if bound_is r1 big 4; then
    FLOWED=$($K get pods -n r1 -l app=small --field-selector spec.nodeName!= -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}')
    return 0
  fi
  return 1
}

case_reservation_lets_starving_gang_in() {
  newns r1
  printf 'gang: {reserveAfterSeconds: 3}\n' > "$WORK/reserve.yaml"
  start_sched s1 18204 --config "$WORK/reserve.yaml" || return
  fill_and_big r1 || return
  local t0; t0=$(now)
  churn r1 90 big_placed_watching || { fail "the big gang was not placed within 90 s"; tail -5 "$(logf s1)"; return; }
  local t1; t1=$(now)
  local nodes rack; nodes=$(nodes_of r1 big)
  rack=$(for n in $nodes; do rack_of "$n"; echo; done | sort -u)
  check "big in one rack, got $nodes" is_eq "$(echo "$rack" | grep -c .)" 1
  check "the reservation was shown in the status: '$RESV_SEEN'" is_eq "$RESV_SEEN" "zone-0/block-0-0/$rack"
  check "topogang_reservations was 1 while it lasted" is_eq "$GAUGE_SEEN" 1
  check "Reserved Event on the big gang" has_event r1 PodGroup/big Reserved "reserving zone-0/block-0-0/$rack for r1/big"
  # small pods submitted after the reservation ran meanwhile, in the other rack
  local after=0 wrong=0
  while read -r name node; do
    [ -n "$name" ] || continue
    [ "$((10#${name#small-}))" -ge "${RESV_AT:-999999}" ] || continue
    after=$((after + 1)); [ "$(rack_of "$node")" = "$rack" ] && wrong=$((wrong + 1))
  done <<< "$FLOWED"
  check "small pods kept flowing while the rack drained ($after submitted after the reservation ran)" test "$after" -ge 2
  check "none of them in the reserved rack ($wrong)" is_eq "$wrong" 0
  # small pods still pending wait in a full cluster and may, past reserveAfterSeconds,
  # get reservations of their own: gone with them, none must be left
  $K delete pods -n r1 -l app=small --field-selector spec.nodeName= --wait=false >/dev/null 2>&1
  wait_for 15 "the reservation ended" bash -c "[ \"\$(curl -s 127.0.0.1:18204/metrics | awk '\$1 == \"topogang_reservations\" {print \$2}')\" = 0 ]"
  wait_for 15 "status without reservation" bash -c "[ -z \"\$($K get pg -n r1 big -o jsonpath='{.status.reservation}')\" ]"
  echo "    reservation: big gang placed $(secs "$t0" "$t1") s after the churn began (reserveAfterSeconds 3; $((NEXT - FIRST_AFTER_BIG)) small pods submitted meanwhile, $after after the reservation, running in the other rack)"
  wipe r1; stop_sched s1
}

case_preemption_policy_never() {
  newns p4; busy_racks p4
  printf 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: e2e-never-high}\nvalue: 1000\npreemptionPolicy: Never\n' | $K create -f - >/dev/null
  start_sched s1 18205 || return
  pending_gang p4 nv 3 8 "{required: rack}" "priorityClassName: e2e-never-high"
  wait_for 15 "FailedScheduling on the gang" has_event p4 PodGroup/nv FailedScheduling || return
  sleep 2
  for p in lo-a-0 lo-a-1 lo-b-0 lo-c-0 md-a-0 md-a-1 md-b-0 md-b-1; do check "$p not touched" untouched p4 "$p"; done
  check "the gang waits" bound_is p4 nv 0
  check "no Preempting Event" no_event p4 PodGroup/nv Preempting
  check "no preemption counted" is_eq "$(metric 18205 topogang_preemptions_total)" 0
  check "status says Unschedulable, got $(pg_field p4 nv '{.status.conditions[0].reason}')" is_eq "$(pg_field p4 nv '{.status.conditions[0].reason}')" Unschedulable
  $K delete priorityclass e2e-never-high >/dev/null
  wipe p4; stop_sched s1
}

# ---- priority is not a tenant's to set (issue 19) ------------------------------
# every node held: gpu-00000 by a tenant's gang of priority 10, the other 7 by
# a system-node-critical DaemonSet pod of kube-system (its spec.priority filled
# by the apiserver's Priority admission from the built-in class)
case_tenant_priority_escalation() {
  newns team-a; newns team-b
  running_gang team-b lo 10 gpu-00000
  local uid i; uid=$(cat /proc/sys/kernel/random/uuid)
  for i in 1 2 3 4 5 6 7; do
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: dcgm-exporter-%s\n  namespace: kube-system\n' "$i"
    printf '  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: dcgm-exporter, uid: %s, controller: true}]\n' "$uid"
    printf 'spec:\n  nodeName: gpu-0000%s\n  priorityClassName: system-node-critical\n  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]\n' "$i"
  done | $K create -f - >/dev/null
  check "dcgm-exporter admitted at system-node-critical" \
    is_eq "$(pod_field kube-system dcgm-exporter-1 '{.spec.priority}')" 2000001000
  start_sched s1 18206 || return
  # a tenant asks for the highest priority there is, for a whole rack (4 x 8
  # GPUs): only evicting dcgm-exporter pods could make room
  pending_gang team-a grab 4 8 "{required: rack}" "priority: 2147483647"
  grab_decided() { has_event team-a PodGroup/grab FailedScheduling || has_event team-a PodGroup/grab Preempting; }
  wait_for 15 "a decision on the tenant's gang" grab_decided || { tail -5 "$(logf s1)"; return; }
  sleep 2
  for i in 1 2 3 4 5 6 7; do check "dcgm-exporter-$i not touched" untouched kube-system "dcgm-exporter-$i"; done
  check "lo-0 not touched (the gang's priority is its pods', 0)" untouched team-b lo-0
  check "the tenant's gang waits" bound_is team-a grab 0
  check "no Preempting Event" no_event team-a PodGroup/grab Preempting
  check "the reason says why" has_event team-a PodGroup/grab FailedScheduling \
    "PodGroup team-a/grab: spec.priority 2147483647 not honoured (policy priority.allowPodGroupPriority is false)"
  check "no preemption counted" is_eq "$(metric 18206 topogang_preemptions_total)" 0
  # a PriorityClass the admin made, high but not a system one: it preempts the lower gang only
  printf 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: e2e-tenant-high}\nvalue: 1000000\n' | $K create -f - >/dev/null
  pending_gang team-a legit 1 8 "" "priorityClassName: e2e-tenant-high"
  wait_for 15 "lo-0 Terminating" terminating team-b lo-0 || { tail -5 "$(logf s1)"; return; }
  check "lo-0: DisruptionTarget PreemptionByScheduler" disruption_target team-b lo-0
  finalise team-b lo-0
  wait_for 20 "the legit gang bound" bound_is team-a legit 1 || { tail -5 "$(logf s1)"; return; }
  check "on the freed node, got $(nodes_of team-a legit)" is_eq "$(nodes_of team-a legit)" "gpu-00000 "
  check "Preempted on lo naming the preemptor" has_event team-b PodGroup/lo Preempted "preempted by team-a/legit (priority 1000000)"
  for i in 1 2 3 4 5 6 7; do check "dcgm-exporter-$i still not touched" untouched kube-system "dcgm-exporter-$i"; done
  check "the tenant's gang still waits" bound_is team-a grab 0
  $K delete pods -n kube-system dcgm-exporter-{1..7} --grace-period=0 --force >/dev/null 2>&1
  $K delete priorityclass e2e-tenant-high >/dev/null
  wipe team-a; wipe team-b; stop_sched s1
}

for c in case_preempt_cheapest_gangs_in_one_rack case_nomination_holds_room \
         case_reservation_off_starves case_reservation_lets_starving_gang_in \
         case_preemption_policy_never case_tenant_priority_escalation; do
  run_case "$c"
done
summary
