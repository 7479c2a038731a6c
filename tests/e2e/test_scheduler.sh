#!/usr/bin/env bash
# End-to-end tests of `topogang scheduler` on a real etcd + kube-apiserver
# (scripts/cluster-up), with fake GPU nodes (scripts/fake-nodes) and the real
# CRD from manifests/. Each case uses its own namespace and cleans its pods.
# Faults are real: a ValidatingAdmissionPolicy refuses one pod's Binding, the
# scheduler is killed and restarted, replicas compete for the Lease.
# Prints cmocka-style summary lines so scripts/count-tests counts the cases.
# Exit: 0 all passed, 1 a case failed, 77 the control plane cannot be built.
set -uo pipefail
SRC=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${TOPOGANG_BIN:-$SRC/build/topogang}
source "$SRC/tests/e2e/cases.sh"  # fail, check, wait_for, run_case, summary, e2e_cluster_up
e2e_cluster_up sched

# start_sched NAME PORT [extra args]: a scheduler in the background, log in $(logf NAME)
logf() { echo "$WORK/${CASE}_$1.log"; }
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
  sanitizer_clean "$(logf "$1")"
}
sanitizer_clean() {
  if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$1"; then
    fail "sanitizer report in $1:"; grep -m5 -E "Sanitizer|runtime error:|#[0-9] " "$1"
  fi
}
metric() { curl -s "127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

# gang NS NAME MIN N GPUS TOPOLOGY [extra pod spec yaml]
gang() {
  local ns=$1 name=$2 min=$3 n=$4 gpus=$5 topo=$6
  {
    printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: %s}\nspec: {minMember: %s%s}\n' \
      "$name" "$ns" "$min" "${topo:+, topology: $topo}"
    for i in $(seq 0 $((n - 1))); do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s-%s, namespace: %s, labels: {topogang.io/pod-group: %s}}\n' "$name" "$i" "$ns" "$name"
      printf 'spec:\n  schedulerName: topogang\n  terminationGracePeriodSeconds: 0\n  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: %s}}}]\n' "$gpus"
    done
  } | $K create -f - >/dev/null
}
# blocker NS NAME NODE GPUS: a pod of the default scheduler, already bound
blocker() {
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n  nodeName: %s\n  terminationGracePeriodSeconds: 0\n  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: %s}}}]\n' \
    "$2" "$1" "$3" "$4" | $K create -f - >/dev/null
}
bound_count() { $K get pods -n "$1" -l "topogang.io/pod-group=$2" --field-selector spec.nodeName!= --no-headers 2>/dev/null | wc -l; }
nodes_of() { $K get pods -n "$1" -l "topogang.io/pod-group=$2" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -v '^$' | sort -u; }
rack_of() { $K get node "$1" -o jsonpath='{.metadata.labels.topogang\.io/rack}'; }
pg_field() { $K get pg "$2" -n "$1" -o jsonpath="$3"; }
is_eq() { [ "$1" = "$2" ]; }
bound_is() { [ "$(bound_count "$1" "$2")" = "$3" ]; }
pg_phase_is() { [ "$(pg_field "$1" "$2" '{.status.phase}')" = "$3" ]; }
has_event() { $K get events -n "$1" -o jsonpath='{range .items[*]}{.involvedObject.name} {.reason}{"\n"}{end}' | grep -q "^$2 $3$"; }
newns() { $K create ns "$1" >/dev/null; }
wipe() { $K delete pods -n "$1" --all --grace-period=0 --force >/dev/null 2>&1; $K delete pg -n "$1" --all >/dev/null 2>&1; }

# ---- setup: CRD, 8 nodes in 2 racks of 4 (NVLink cliques of 2) ------------
$K apply -f "$SRC/manifests/crd-podgroup.yaml" >/dev/null
$K wait --for condition=established crd/podgroups.topogang.io --timeout=30s >/dev/null
$K create ns topogang-system >/dev/null
"$SRC/scripts/fake-nodes" --nodes 8 --zones 1 --blocks 1 --rack-size 4 --clique-size 2 | $K create -f - >/dev/null

case_gang_all_or_nothing() {
  newns a
  # fewer binds in flight than members: the binder queues (and must not lose) ops
  printf 'api: {bindConcurrency: 1}\n' > "$WORK/conc.yaml"
  start_sched s1 18101 --config "$WORK/conc.yaml" || return
  gang a train 4 4 8 "{required: rack}"
  gang a small 3 3 1 "{required: node}"
  for i in 0 1 2 3 4; do
    printf -- 'apiVersion: v1\nkind: Pod\nmetadata: {name: single-%s, namespace: a}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]}\n' $i | $K create -f - >/dev/null
  done
  wait_for 15 "4 bound" bound_is a train 4 || return
  wait_for 15 "the 3-pod gang on one node" bound_is a small 3
  check "small gang on one node" is_eq "$(nodes_of a small | wc -l)" 1
  wait_for 15 "5 single pods bound" bash -c "[ \$($K get pods -n a --field-selector spec.nodeName!= --no-headers | grep -c '^single-') = 5 ]"
  local racks; racks=$(for n in $(nodes_of a train); do rack_of "$n"; echo; done | sort -u | grep -c .)
  check "all members in one rack" is_eq "$racks" 1
  wait_for 10 "PodGroup Scheduled" pg_phase_is a train Scheduled
  check "status.scheduled = 4" is_eq "$(pg_field a train '{.status.scheduled}')" 4
  check "status.placement.level = rack" is_eq "$(pg_field a train '{.status.placement.level}')" rack
  wait_for 5 "Scheduled event" has_event a train Scheduled
  check "binds_total ok >= 4" test "$(metric 18101 'topogang_binds_total{result="ok"}')" -ge 4
  wipe a; stop_sched s1
}

case_not_enough_room() {
  newns b; start_sched s1 18102 || return
  # 5 whole nodes in one rack of 4: never; with a 2 s timeout
  {
    printf 'apiVersion: topogang.io/v1alpha1\nkind: PodGroup\nmetadata: {name: big, namespace: b}\nspec: {minMember: 5, scheduleTimeoutSeconds: 2, topology: {required: rack}}\n'
  } | $K create -f - >/dev/null
  for i in 0 1 2 3 4; do
    printf -- 'apiVersion: v1\nkind: Pod\nmetadata: {name: big-%s, namespace: b, labels: {topogang.io/pod-group: big}}\nspec: {schedulerName: topogang, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}\n' $i | $K create -f - >/dev/null
  done
  wait_for 10 "FailedScheduling or Timeout event" bash -c "$(declare -f has_event); K=$K; has_event b big FailedScheduling || has_event b big Timeout"
  check "nothing bound" bound_is b big 0
  local msg; msg=$(pg_field b big '{.status.conditions[0].message}')
  case "$msg" in *"needs 5 x nvidia.com/gpu=8 in one rack; best rack"*"holds 4"*) ;; *) fail "reason in numbers, got: $msg";; esac
  wait_for 10 "phase Unschedulable after the timeout" pg_phase_is b big Unschedulable
  check "nothing bound after the timeout" bound_is b big 0
  wipe b; stop_sched s1
}

case_respects_other_pods_and_frees_room() {
  newns c; start_sched s1 18103 || return
  # the default scheduler's pods fill 7 of 8 nodes
  for i in 0 1 2 3 4 5 6; do blocker c "blk-$i" "gpu-0000$i" 8; done
  gang c wait 2 2 8 ""
  sleep 2
  check "gang waits: only one node free" bound_is c wait 0
  $K delete pod -n c blk-5 --grace-period=0 --force >/dev/null 2>&1
  wait_for 15 "gang runs once a pod is deleted" bound_is c wait 2 || return
  local nodes; nodes=$(nodes_of c wait | tr '\n' ' ')
  check "placed on the freed nodes (gpu-00005, gpu-00007), got $nodes" is_eq "$nodes" "gpu-00005 gpu-00007 "
  wipe c; stop_sched s1
}

case_bind_failure_rolls_back() {
  newns d
  cat <<'EOF' | $K apply -f - >/dev/null
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deny-one-binding}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods/binding"]}]
  validations: [{expression: "object.metadata.name != 'rb-3'", message: "binding of rb-3 refused by test policy"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-one-binding}
spec: {policyName: deny-one-binding, validationActions: [Deny], matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: d}}}}
EOF
  sleep 2 # the policy takes effect asynchronously
  start_sched s1 18104 || return
  gang d rb 4 4 8 "{required: rack}"
  wait_for 20 "RolledBack event" has_event d rb RolledBack || { tail -5 "$(logf s1)"; return; }
  wait_for 10 "bound members deleted" bash -c "[ \$($K get pods -n d --no-headers 2>/dev/null | grep -c '^rb-[012] ') = 0 ]"
  check "rb-3 still pending, unbound" is_eq "$($K get pod -n d rb-3 -o jsonpath='{.spec.nodeName}')" ""
  check "rollback counted" test "$(metric 18104 topogang_gang_rollbacks_total)" -ge 1
  # The RolledBack Event keeps the explanation; the status says what is true
  # now: the rollback, or (once the deletes are seen, a race with this read)
  # that the gang waits for the members it lost.
  local ev; ev=$($K get events -n d --field-selector reason=RolledBack,involvedObject.name=rb -o jsonpath='{.items[*].message}')
  case "$ev" in *"rolled back"*"rb-3"*) ;; *) fail "RolledBack Event explains the rollback, got: $ev";; esac
  local msg; msg=$(pg_field d rb '{.status.conditions[0].message}')
  case "$msg" in *"rolled back"*"rb-3"*|"waiting for members: 1 pending + 0 bound"*) ;;
    *) fail "status explains the rollback or the wait after it, got: $msg";; esac
  $K delete validatingadmissionpolicybinding deny-one-binding >/dev/null
  $K delete validatingadmissionpolicy deny-one-binding >/dev/null
  wipe d; stop_sched s1
}

case_restart_completes_half_bound_gang() {
  newns e
  # as if a scheduler died mid-bind: 2 of 4 members bound on rack-0-0-0
  gang e half 4 0 8 "{required: rack}"
  for i in 0 1; do
    printf -- 'apiVersion: v1\nkind: Pod\nmetadata: {name: half-%s, namespace: e, labels: {topogang.io/pod-group: half}}\nspec: {schedulerName: topogang, nodeName: gpu-0000%s, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}\n' $i $i | $K create -f - >/dev/null
  done
  for i in 2 3; do
    printf -- 'apiVersion: v1\nkind: Pod\nmetadata: {name: half-%s, namespace: e, labels: {topogang.io/pod-group: half}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}\n' $i | $K create -f - >/dev/null
  done
  start_sched s1 18105 || return
  wait_for 15 "completed: 4 bound" bound_is e half 4 || return
  local racks; racks=$(for n in $(nodes_of e half); do rack_of "$n"; echo; done | sort -u | grep -c .)
  check "completed in the rack of the bound members" is_eq "$racks" 1
  stop_sched s1; wipe e

  # the same, but the rest cannot fit in that rack: rolled back
  gang e cut 4 0 8 "{required: rack}"
  for i in 0 1; do
    printf -- 'apiVersion: v1\nkind: Pod\nmetadata: {name: cut-%s, namespace: e, labels: {topogang.io/pod-group: cut}}\nspec: {schedulerName: topogang, nodeName: gpu-0000%s, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}\n' $i $i | $K create -f - >/dev/null
  done
  blocker e blk-2 gpu-00002 8; blocker e blk-3 gpu-00003 8
  for i in 2 3; do
    printf -- 'apiVersion: v1\nkind: Pod\nmetadata: {name: cut-%s, namespace: e, labels: {topogang.io/pod-group: cut}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}\n' $i | $K create -f - >/dev/null
  done
  start_sched s1 18115 || return
  wait_for 15 "half-bound members deleted" bash -c "! $K get pod -n e cut-0 >/dev/null 2>&1 && ! $K get pod -n e cut-1 >/dev/null 2>&1"
  wait_for 10 "RolledBack event" has_event e cut RolledBack
  wipe e; stop_sched s1
}

one_leader() { [ "$(leader_of "$@" | wc -l)" = 1 ]; }
leader_of() { for p in "$@"; do curl -s "127.0.0.1:$p/readyz" | grep -q leader && echo "$p"; done; }
case_leader_election_failover() {
  newns f
  start_sched r1 18106 --leader-elect --lease topogang-system/e2e-lease --lease-duration 4 || return
  start_sched r2 18107 --leader-elect --lease topogang-system/e2e-lease --lease-duration 4 || return
  wait_for 10 "one leader" one_leader 18106 18107 || return
  local lead; lead=$(leader_of 18106 18107)
  local other=18107 leadname=r1; [ "$lead" = 18107 ] && other=18106 && leadname=r2
  check "holder recorded in the Lease" is_eq "$($K get lease -n topogang-system e2e-lease -o jsonpath='{.spec.holderIdentity}')" "$leadname"
  # the leader dies without releasing: the standby takes over after expiry
  local pid; eval "pid=\$PID_$leadname"; kill -9 "$pid"
  local t0=$SECONDS
  wait_for 12 "standby becomes leader" bash -c "curl -s 127.0.0.1:$other/readyz | grep -q 'ok: leader'" || return
  echo "    failover in $((SECONDS - t0)) s (lease 4 s)"
  gang f after 1 1 8 ""
  wait_for 10 "new leader schedules" bound_is f after 1
  check "transitions counted" test "$(metric $other topogang_leader_transitions_total)" -ge 1
  wipe f; stop_sched r1; stop_sched r2
}

case_policy_live_reload() {
  newns g
  $K create configmap -n topogang-system topogang-config --from-literal=config.yaml="$(printf 'topology:\n  levels:\n    - {name: zone, nodeLabel: topology.kubernetes.io/zone}\n    - {name: rack, nodeLabel: topogang.io/rack}\n    - {name: node, nodeLabel: kubernetes.io/hostname}\n')" >/dev/null
  start_sched s1 18108 --config-map topogang-system/topogang-config || return
  wait_for 30 "policy loaded" test "$(metric 18108 'topogang_config_reloads_total{result="ok"}')" = 1
  # a bad edit is refused; the last good policy stays
  $K create configmap -n topogang-system topogang-config --from-literal=config.yaml="$(printf 'placement: {strategy: sideways}\n')" -o yaml --dry-run=client | $K replace -f - >/dev/null
  wait_for 30 "bad policy rejected" test "$(metric 18108 'topogang_config_reloads_total{result="rejected"}')" = 1
  wait_for 5 "InvalidPolicy event" has_event topogang-system topogang-config InvalidPolicy
  check "still healthy" curl -sf 127.0.0.1:18108/healthz
  gang g z 1 1 8 "{required: zone}"
  wait_for 10 "old policy (with zone) still places" bound_is g z 1
  # a good edit without the zone level applies live
  $K create configmap -n topogang-system topogang-config --from-literal=config.yaml="$(printf 'topology:\n  levels:\n    - {name: rack, nodeLabel: topogang.io/rack}\n    - {name: node, nodeLabel: kubernetes.io/hostname}\n')" -o yaml --dry-run=client | $K replace -f - >/dev/null
  wait_for 30 "new policy applied" test "$(metric 18108 'topogang_config_reloads_total{result="ok"}')" = 2
  gang g z2 1 1 8 "{required: zone}"
  wait_for 10 "zone is no longer a level" has_event g z2 InvalidTopology
  check "z2 not bound" bound_is g z2 0
  grep -q 'policy rejected' "$(logf s1)" || fail "log line for the rejected policy"
  $K delete configmap -n topogang-system topogang-config >/dev/null
  wipe g; stop_sched s1
}

case_bad_podgroups_and_shutdown() {
  newns h; start_sched s1 18109 || return
  gang h odd 1 1 8 "{required: galaxy}"
  gang h nogroup 1 0 8 ""
  printf -- 'apiVersion: v1\nkind: Pod\nmetadata: {name: orphan, namespace: h, labels: {topogang.io/pod-group: missing}}\nspec: {schedulerName: topogang, containers: [{name: c, image: busybox}]}\n' | $K create -f - >/dev/null
  wait_for 10 "InvalidTopology event" has_event h odd InvalidTopology
  local msg; msg=$(pg_field h odd '{.status.conditions[0].message}')
  case "$msg" in *'unknown level "galaxy"'*) ;; *) fail "status names the bad level, got: $msg";; esac
  wait_for 10 "PodGroupNotFound event on the pod" has_event h orphan PodGroupNotFound
  check "daemon alive" curl -sf 127.0.0.1:18109/healthz
  # graceful shutdown: exits 0 promptly
  local t0=$SECONDS; kill -TERM "$PID_s1"; wait "$PID_s1"; local rc=$?
  check "exit 0 on SIGTERM (got $rc)" is_eq "$rc" 0
  sanitizer_clean "$(logf s1)"
  check "stopped within 5 s" test $((SECONDS - t0)) -le 5
  wipe h
}

for c in case_gang_all_or_nothing case_not_enough_room case_respects_other_pods_and_frees_room \
         case_bind_failure_rolls_back case_restart_completes_half_bound_gang \
         case_leader_election_failover case_policy_live_reload case_bad_podgroups_and_shutdown; do
  run_case "$c"
done
summary
