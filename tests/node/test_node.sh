#!/usr/bin/env bash
# The node tier: a real node on this machine (scripts/node-up: containerd v2,
# runc, a CNI bridge, a kubelet with the static CPU manager, the Static memory
# manager and topologyManagerPolicy single-numa-node) against a real control
# plane with kube-controller-manager (scripts/cluster-up), the image built from
# manifests/Containerfile with no registry (scripts/image), and
# `kubectl apply -k manifests/` running in-cluster. Cases:
#   manifests_running  both scheduler replicas Running from the built image,
#                      one leader by the Lease; the agent DaemonSet Running
#   readyz_metrics     /readyz through each pod IP (leader, standby), /metrics
#   agent_annotation   the agent's annotation and labels on the Node, with the
#                      kubelet's exclusive CPUs and memory per NUMA node
#   gang_job           a batch/v1 Job of 3 pods (kube-controller-manager) with
#                      a PodGroup: bound by the in-cluster scheduler, Running,
#                      then Succeeded
#   leader_failover    the leader pod deleted: the standby holds the Lease
#                      within the lease duration and binds a new gang
#   topology_manager   the kubelet as the judge: a Guaranteed pod no NUMA node
#                      can pin waits under topogang with the reason in
#                      numbers, while kube-scheduler binds the same pod and the
#                      kubelet rejects it with TopologyAffinityError; a pod
#                      the kubelet can pin is bound and gets its exclusive CPU
#   example_load_rss   10 fake GPU nodes + examples/k8s: the gangs placed, the
#                      leader's RSS reported
#   helm_running       the kustomize install removed (namespace gone), then
#                      `helm install` of charts/topogang (helm from
#                      scripts/build-helm): both replicas Running from the built
#                      image, one leader pod, the agent Running, and a Job gang
#                      bound by the chart's scheduler, Running, then Succeeded
# Where the machine cannot run a node (not root, no overlayfs or netfilter,
# another node up), every case prints SKIP with the reason and the test exits
# 77. Figures (time to Ready, image size, failover, RSS) are printed as
# "figure:" lines. TOPOGANG_KEEP=1 keeps the logs; node-down always runs.
set -uo pipefail
SRC=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
CASES="manifests_running readyz_metrics agent_annotation gang_job leader_failover topology_manager example_load_rss helm_running"
skip_all() {
  for c in $CASES; do echo "[ SKIP     ] $c: $*"; done
  echo "SKIP: $*"
  exit 77
}
why=$("$SRC/scripts/node-up" --check 2>&1 >/dev/null) || skip_all "${why#node-up: }"
if [ -e /run/topogang-node.owner ] && ! flock -n /run/topogang-node.lock true 2>/dev/null; then
  skip_all "another node is up on this machine ($(cat /run/topogang-node.owner))"
fi

WORK=$(mktemp -d /tmp/tg-node.XXXXXX)
export TG_CLUSTER_OWNER=$$
passed=0; failed=0; CASE=""; PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  "$SRC/scripts/node-down" --keep-logs "$WORK/cp" >/dev/null 2>&1
  "$SRC/scripts/cluster-down" "$WORK/cp" >/dev/null 2>&1
  if [ $failed -gt 0 ] || [ -n "${TOPOGANG_KEEP:-}" ]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

setup_failed() {
  echo "$*"
  for c in $CASES; do echo "[ RUN      ] $c"; echo "[  FAILED  ] $c"; done
  failed=$(echo $CASES | wc -w)
  echo "[  FAILED  ] $failed test(s)"
  exit 1
}
if ! "$SRC/scripts/cluster-up" --san 10.96.0.1 --san kubernetes.default.svc --service-accounts \
       --controller-manager "$WORK/cp" >"$WORK/cluster-up.log" 2>&1; then
  if grep -q "cannot build" "$WORK/cluster-up.log"; then skip_all "no control plane: $(tail -1 "$WORK/cluster-up.log")"; fi
  setup_failed "cluster-up failed: $(tail -5 "$WORK/cluster-up.log")"
fi
source "$WORK/cp/env"
K() { "$TG_K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }
NODE=topogang-node
ready_s=$("$SRC/scripts/node-up" --cpu-manager static --memory-manager Static \
            --topology-manager single-numa-node --emulate-cpuless-numa "$WORK/cp" 2>"$WORK/node-up.log" | tail -1)
[ -n "$ready_s" ] || setup_failed "node-up failed: $(tail -5 "$WORK/node-up.log")"
echo "figure: node Ready ${ready_s} s after node-up started (binaries cached)"
grep -o "emulating.*" "$WORK/node-up.log" | sed 's/^/note: /'
# kube-scheduler, the default scheduler: schedules the Deployment and the contrast pod.
"$TG_K8S_BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port 0 >"$WORK/kube-scheduler.log" 2>&1 &
PIDS+=($!)
t0=$SECONDS
size=$("$SRC/scripts/image" --node "$WORK/cp" 2>"$WORK/image.log" | tail -1)
[ -n "$size" ] || setup_failed "scripts/image failed: $(tail -15 "$WORK/image.log")"
echo "figure: image $size unpacked, built and imported in $((SECONDS - t0)) s ($(grep -o 'OCI archive [0-9]* MiB' "$WORK/image.log"))"

fail() { echo "    FAIL [$CASE]: $*"; CASE_OK=0; }
check() { local what=$1; shift; if ! "$@" >/dev/null 2>&1; then fail "$what"; fi; }
wait_for() {
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t))
  while [ $SECONDS -le $end ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  fail "timed out after ${t}s waiting for: $what"; return 1
}
run_case() {
  CASE=$1; CASE_OK=1
  echo "[ RUN      ] $CASE"
  "case_$CASE"
  if [ $CASE_OK = 1 ]; then passed=$((passed + 1)); echo "[       OK ] $CASE"
  else failed=$((failed + 1)); echo "[  FAILED  ] $CASE"; fi
}
jp() { K get "$@" 2>/dev/null; }
NS=topogang-system AGENT_NS=topogang-agent
sched_pods() { jp pods -n $NS -l app.kubernetes.io/component=scheduler -o jsonpath='{.items[*].metadata.name}'; }
leader() { jp lease -n $NS topogang-scheduler -o jsonpath='{.spec.holderIdentity}'; }
pod_ip() { jp pod -n $NS "$1" -o jsonpath='{.status.podIP}'; }
all_running() {  # NS SELECTOR N: N pods, all Running and Ready
  local out; out=$(jp pods -n "$1" -l "$2" -o jsonpath='{range .items[*]}{.status.phase}/{.status.containerStatuses[0].ready} {end}')
  [ "$(echo $out | wc -w)" = "$3" ] && [ -z "$(echo $out | tr ' ' '\n' | grep -v '^Running/true$')" ]
}
is_eq() { [ "$1" = "$2" ]; }

case_manifests_running() {
  check "kubectl apply -k manifests/" K apply -k "$SRC/manifests/"
  wait_for 120 "2 scheduler pods Running and Ready" all_running $NS app.kubernetes.io/component=scheduler 2
  wait_for 60 "the agent pod Running" all_running $AGENT_NS app.kubernetes.io/name=topogang-agent 1
  # the image ID the kubelet reports is the config digest of the archive built
  local ids; ids="$(jp pods -n $NS -o jsonpath='{.items[*].status.containerStatuses[0].imageID}') $(jp pods -n $AGENT_NS -o jsonpath='{.items[*].status.containerStatuses[0].imageID}')"
  local want; want=$(image_config_digest)
  echo "    image ${want:0:19}... in $(echo $ids | tr ' ' '\n' | grep -c "$want") of $(echo $ids | wc -w) pods"
  [ -n "$want" ] && [ "$(echo $ids | tr ' ' '\n' | grep -vc "$want")" = 0 ] ||
    fail "pods run $ids, not the built image $want"
  wait_for 30 "a Lease holder among the pods" leader_is_a_pod
  echo "    leader $(leader)"
}
image_config_digest() {
  python3 - "${TOPOGANG_CACHE:-$HOME/.cache/topogang}/image/topogang.oci.tar" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
blob = lambda d: json.load(t.extractfile("blobs/sha256/" + d.split(":")[1]))
index = json.load(t.extractfile("index.json"))
print(blob(index["manifests"][0]["digest"])["config"]["digest"].split(":")[1])
PY
}
leader_is_a_pod() { local l; l=$(leader); [ -n "$l" ] && case " $(sched_pods) " in *" $l "*) return 0;; esac; return 1; }

case_readyz_metrics() {
  local l; l=$(leader) roles=""
  for p in $(sched_pods); do
    local ip; ip=$(pod_ip "$p")
    local r; r=$(curl -s --max-time 5 "http://$ip:8081/readyz")
    echo "    $p $ip /readyz: $r"
    if [ "$p" = "$l" ]; then is_eq "$r" "ok: leader" || fail "leader $p /readyz says '$r'"
    else case "$r" in "ok: standby"*) ;; *) fail "standby $p /readyz says '$r'";; esac; fi
  done
  local m; m=$(curl -s --max-time 5 "http://$(pod_ip "$l"):8080/metrics")
  grep -q '^topogang_leader 1' <<< "$m" || fail "/metrics of the leader lacks topogang_leader 1"
  grep -q '^# TYPE topogang_binds_total counter' <<< "$m" || fail "/metrics lacks topogang_binds_total"
  echo "    /metrics: $(echo "$m" | grep -c '^topogang_') topogang_ samples"
}

annotation() { jp node $NODE -o jsonpath='{.metadata.annotations.topogang\.io/topology}'; }
case_agent_annotation() {
  wait_for 60 "the agent's annotation with the kubelet's figures on the Node" has_kfig
  local a; a=$(annotation)
  echo "    $a"
  echo "$a" | python3 -c 'import json,sys; t=json.load(sys.stdin); assert t["v"]==1 and t["policy"]=="single-numa-node"; assert t["numa"] and all("kcpus" in n and "kmem" in n for n in t["numa"]); assert all(n["cpus"]>0 for n in t["numa"])' \
    || fail "annotation: NUMA nodes with CPUs, the kubelet's kcpus/kmem, policy single-numa-node"
  local n; n=$(jp node $NODE -o jsonpath='{.metadata.labels.topogang\.io/numa-nodes}')
  [ -n "$n" ] && [ "$n" -ge 1 ] || fail "label topogang.io/numa-nodes missing ($n)"
  echo "    labels: numa-nodes=$n memory-numa-nodes=$(jp node $NODE -o jsonpath='{.metadata.labels.topogang\.io/memory-numa-nodes}')"
  jp pods -n $AGENT_NS -l app.kubernetes.io/name=topogang-agent -o name | head -1 | xargs -r -I{} \
    "$TG_K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG" logs -n $AGENT_NS {} > "$WORK/agent.log" 2>&1 ||
    fail "kubectl logs of the agent (apiserver -> kubelet)"
  grep -q "published" "$WORK/agent.log" || fail "the agent's log says nothing was published"
}
has_kfig() { local a; a=$(annotation); grep -q kcpus <<< "$a"; }

# job NAME N SECONDS: a PodGroup of N and a Job of N busybox pods, schedulerName topogang
job() {
  K apply -f - >/dev/null <<YAML
apiVersion: topogang.io/v1alpha1
kind: PodGroup
metadata: {name: $1, namespace: default}
spec: {minMember: $2}
---
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: default}
spec:
  parallelism: $2
  completions: $2
  backoffLimit: 0
  template:
    metadata: {labels: {topogang.io/pod-group: $1}}
    spec:
      schedulerName: topogang
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: w
        image: topogang.local/busybox:1
        imagePullPolicy: Never
        command: [sh, -c, "echo rank \$JOB_COMPLETION_INDEX on \$(hostname); sleep $3"]
        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 64Mi}}
YAML
}
job_pods_bound() { local n; n=$(jp pods -l job-name="$1" -o jsonpath='{range .items[*]}{.spec.nodeName} {end}' | wc -w); [ "$n" = "$2" ]; }
job_pods_running() { all_running default job-name="$1" "$2"; }
job_succeeded() { is_eq "$(jp job "$1" -o jsonpath='{.status.succeeded}')" "$2"; }
case_gang_job() {
  local t0=$SECONDS
  job gang-a 3 6
  wait_for 60 "3 pods of Job gang-a bound" job_pods_bound gang-a 3 || return
  echo "    bound in $((SECONDS - t0)) s by $(jp pods -l job-name=gang-a -o jsonpath='{.items[0].spec.schedulerName}')"
  wait_for 60 "3 pods Running" job_pods_running gang-a 3
  wait_for 60 "Job gang-a Succeeded 3" job_succeeded gang-a 3
  is_eq "$(jp podgroup gang-a -o jsonpath='{.status.phase}')" Scheduled || fail "PodGroup gang-a not Scheduled"
  local out; out=$(K logs -l job-name=gang-a --prefix 2>&1)
  [ "$(grep -c "rank" <<< "$out")" = 3 ] || fail "kubectl logs of the gang's 3 pods: $out"
  echo "    Job gang-a Succeeded $((SECONDS - t0)) s after creation"
}

case_leader_failover() {
  local old; old=$(leader)
  [ -n "$old" ] || { fail "no leader"; return; }
  local t0=$SECONDS
  K delete pod -n $NS "$old" --wait=false >/dev/null
  wait_for 15 "a new leader within the lease duration (15 s)" new_leader "$old" || return
  local took=$((SECONDS - t0))
  echo "    $old deleted; $(leader) holds the Lease after ${took} s"
  echo "figure: failover ${took} s (lease duration 15 s)"
  job gang-b 2 1
  wait_for 60 "Job gang-b bound by the new leader" job_pods_bound gang-b 2
  wait_for 60 "Job gang-b Succeeded 2" job_succeeded gang-b 2
  wait_for 120 "2 scheduler pods again" all_running $NS app.kubernetes.io/component=scheduler 2
}
new_leader() { local l; l=$(leader); [ -n "$l" ] && [ "$l" != "$1" ] && leader_is_a_pod; }

# gpod NAME CPU MEM: a Guaranteed busybox pod for topogang, in PodGroup NAME
gpod() {
  K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default, labels: {topogang.io/pod-group: $1}}
spec:
  schedulerName: topogang
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: topogang.local/busybox:1
    imagePullPolicy: Never
    command: [sh, -c, "cat /sys/fs/cgroup/cpuset/cpuset.cpus 2>/dev/null || cat /sys/fs/cgroup/cpuset.cpus.effective; sleep 3600"]
    resources: {limits: {cpu: "$2", memory: "$3"}}
YAML
}
pg() { K apply -f - >/dev/null <<YAML
apiVersion: topogang.io/v1alpha1
kind: PodGroup
metadata: {name: $1, namespace: default}
spec: {minMember: 1}
YAML
}
pod_reason() { jp pod "$1" -o jsonpath='{.status.reason}'; }
case_topology_manager() {
  # Memory: more than the kubelet can pin on any one NUMA node, less than
  # the node's allocatable minus what is requested there.
  local a; a=$(annotation)
  local most; most=$(echo "$a" | python3 -c 'import json,sys; t=json.load(sys.stdin); print(max([n.get("kmem",0) for n in t["numa"]]+[m.get("kmem",0) for m in t.get("memnodes",[])]))')
  local mib=$(( most / 1048576 + 512 ))
  echo "    the kubelet can pin at most $((most / 1048576)) MiB on one NUMA node; asking ${mib}Mi"
  pg tm-wide
  gpod tm-wide 200m "${mib}Mi"
  # the same pod for kube-scheduler (no PodGroup label, default scheduler)
  K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: ks-wide, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: topogang.local/busybox:1
    imagePullPolicy: Never
    command: [sleep, "3600"]
    resources: {limits: {cpu: 200m, memory: "${mib}Mi"}}
YAML
  wait_for 60 "kube-scheduler binds ks-wide and the kubelet rejects it" is_eq_cmd TopologyAffinityError pod_reason ks-wide
  echo "    kube-scheduler bound ks-wide to $(jp pod ks-wide -o jsonpath='{.spec.nodeName}'): $(pod_reason ks-wide): $(jp pod ks-wide -o jsonpath='{.status.message}')"
  wait_for 30 "topogang says why tm-wide waits" pg_says tm-wide "can pin at most"
  echo "    topogang: $(jp podgroup tm-wide -o jsonpath='{.status.conditions[0].message}')"
  sleep 5
  [ -z "$(jp pod tm-wide -o jsonpath='{.spec.nodeName}')" ] || fail "topogang bound tm-wide, which the kubelet would refuse"
  # a Guaranteed pod the kubelet can pin: bound by topogang, gets an exclusive CPU
  pg tm-fits
  gpod tm-fits 1 256Mi
  wait_for 60 "tm-fits Running" is_eq_cmd Running jp pod tm-fits -o 'jsonpath={.status.phase}'
  local cpus; cpus=$(K logs tm-fits 2>/dev/null | head -1)
  echo "    tm-fits runs on CPU(s) $cpus (exclusive)"
  wait_for 30 "the agent's kpods to name default/tm-fits" has_kpod tm-fits
  echo "    $(annotation)"
  K delete pod tm-wide ks-wide tm-fits --wait=false >/dev/null 2>&1
}
is_eq_cmd() { local want=$1; shift; [ "$("$@")" = "$want" ]; }
pg_says() { local m; m=$(jp podgroup "$1" -o jsonpath='{.status.conditions[*].message}'
            K get events --field-selector involvedObject.name="$1" -o jsonpath='{.items[*].message}' 2>/dev/null)
            grep -q "$2" <<< "$m"; }
has_kpod() { local a; a=$(annotation); grep -q "\"default/$1\"" <<< "$a"; }

case_example_load_rss() {
  python3 "$SRC/scripts/fake-nodes" --nodes 10 --zones 1 --blocks 1 --rack-size 5 --clique-size 5 \
    --prefix fake | K create -f - >/dev/null || { fail "fake nodes"; return; }
  check "kubectl apply -k examples/k8s/" K apply -k "$SRC/examples/k8s/"
  wait_for 90 "the example gangs placed on the fake nodes" examples_scheduled
  jp pg -n ml | sed 's/^/    /'
  local l; l=$(leader)
  local rss; rss=$(K exec -n $NS "$l" -- cat /proc/1/status 2>/dev/null | awk '/^VmRSS/ {print $2, $3}')
  [ -n "$rss" ] || { fail "no RSS from kubectl exec into $l"; return; }
  echo "figure: scheduler leader RSS $rss with 11 nodes (10 fake GPU nodes + this one) and the examples/k8s gangs placed"
}
examples_scheduled() {
  local p; p=$(jp pg -n ml -o jsonpath='{range .items[*]}{.status.phase} {end}')
  [ "$(echo $p | wc -w)" -ge 2 ] && [ -z "$(echo $p | tr ' ' '\n' | grep -v '^Scheduled$')" ]
}

case_helm_running() {
  local helm
  helm=$("$SRC/scripts/build-helm" 2>"$WORK/build-helm.log" | tail -1)/helm
  [ -x "$helm" ] || { fail "helm could not be built: $(tail -3 "$WORK/build-helm.log")"; return; }
  # what kustomize installed goes first, its namespace too (the chart makes the same
  # objects); the fake nodes of example_load_rss first: no kubelet would ever end the
  # agent pods the DaemonSet put there (the pod GC removes pods of deleted nodes)
  K delete -k "$SRC/examples/k8s/" --wait=false >/dev/null 2>&1
  K delete node $(jp nodes -o name | grep '^node/fake' | sed 's|^node/||') --wait=false >/dev/null 2>&1
  K delete pod --all --wait=false >/dev/null 2>&1
  K delete -k "$SRC/manifests/" --wait=false >/dev/null 2>&1
  # both namespaces: the chart makes the agent's namespace too, and helm will not adopt
  # (or create) one that still exists, Terminating
  wait_for 180 "the kustomize install gone (namespaces $NS, $AGENT_NS)" bash -c \
    "! $TG_K8S_BIN/kubectl --kubeconfig $KUBECONFIG get ns $NS && ! $TG_K8S_BIN/kubectl --kubeconfig $KUBECONFIG get ns $AGENT_NS" || return
  local t0=$SECONDS
  if ! "$helm" --kubeconfig "$KUBECONFIG" install topogang "$SRC/charts/topogang" \
    -n $NS --create-namespace >"$WORK/helm-install.log" 2>&1; then
    fail "helm install: $(tail -3 "$WORK/helm-install.log")"
  fi
  wait_for 120 "2 scheduler pods Running and Ready" all_running $NS app.kubernetes.io/component=scheduler 2 || return
  wait_for 60 "the agent pod Running" all_running $AGENT_NS app.kubernetes.io/name=topogang-agent 1
  echo "figure: helm install -> both scheduler replicas Ready in $((SECONDS - t0)) s"
  local ids want; ids="$(jp pods -n $NS -o jsonpath='{.items[*].status.containerStatuses[0].imageID}') $(jp pods -n $AGENT_NS -o jsonpath='{.items[*].status.containerStatuses[0].imageID}')"
  want=$(image_config_digest)
  [ -n "$want" ] && [ "$(echo $ids | tr ' ' '\n' | grep -vc "$want")" = 0 ] ||
    fail "pods run $ids, not the built image $want"
  wait_for 30 "a Lease holder among the pods" leader_is_a_pod
  "$helm" --kubeconfig "$KUBECONFIG" list -n $NS 2>/dev/null | sed 's/^/    /'
  job helm-gang 3 1 || return
  wait_for 60 "the chart's scheduler binds the gang" job_pods_bound helm-gang 3 || return
  wait_for 90 "the gang's pods Running, then the Job Succeeded" job_succeeded helm-gang 3
}

for c in $CASES; do run_case "$c"; done
echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ $failed -gt 0 ] && { echo "[  FAILED  ] $failed test(s)"; exit 1; }
exit 0
