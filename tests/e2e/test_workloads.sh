#!/usr/bin/env bash
# End-to-end: gangs as they come (issue 9), on a real etcd + kube-apiserver
# + kube-controller-manager (scripts/cluster-up --controller-manager) with the
# upstream scheduling.k8s.io/v1alpha2 API served (its feature gates on) and
# the peers' real CRDs installed (tests/fixtures/crds). One control plane and
# one scheduler for every case; each case has its own namespace and wipes its
# pods after (no kubelet: bound pods only go with grace period 0).
#
# Each kind of workload forms a gang placed all at once inside the topology
# it asks: a real batch/v1 Job (kube-controller-manager makes its pods); a
# JobSet and a TrainJob (the test makes the Jobs their controllers would, the
# Job controller their pods); a LeaderWorkerSet (the test makes its
# StatefulSets and pods as the LWS controller and webhook would: the
# StatefulSet controller is off); a PyTorchJob and an MPIJob (their pods as
# the training operator makes them); the upstream PodGroup (its
# PodGroupScheduled condition written), scheduler-plugins', Volcano's and
# KAI's (their status never touched: resourceVersion unchanged). Bad peers'
# PodGroups get an Event naming the object and the field while the rest
# keeps scheduling. Volcano's subGroupPolicy places each partition of
# workers in one NVLink clique. Prints cmocka-style lines (scripts/count-tests).
# Exit: 0 all passed, 1 a case failed, 77 the control plane cannot be built.
set -uo pipefail
SRC=${TOPOGANG_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${TOPOGANG_BIN:-$SRC/build/topogang}
source "$SRC/tests/e2e/cases.sh"  # fail, check, wait_for, run_case, summary, e2e_cluster_up
gates=GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true
# no node lifecycle controller: the fake nodes have no kubelet, and 50 s after they
# appear it would taint them all unreachable (cases past that point then failed on a
# loaded machine)
TG_APISERVER_ARGS="--runtime-config=scheduling.k8s.io/v1alpha2=true --feature-gates=$gates" \
  TG_KCM_ARGS="--controllers=*,-statefulset-controller,-node-lifecycle-controller --feature-gates=$gates" \
  e2e_cluster_up workloads --controller-manager

# ---- helpers ---------------------------------------------------------------
newns() { $K create ns "$1" >/dev/null; }
# wipe NS: owners orphan their pods, the pods go at once (no kubelet)
wipe() {
  $K delete jobs,jobsets,trainjobs,leaderworkersets,statefulsets,pytorchjobs,mpijobs -n "$1" --all \
    --cascade=orphan --wait=false >/dev/null 2>&1
  $K delete pods -n "$1" --all --grace-period=0 --force >/dev/null 2>&1
}
uid_of() { $K get "$1" "$2" -n "$3" -o jsonpath='{.metadata.uid}'; }
rv_of() { $K get "$1" "$2" -n "$3" -o jsonpath='{.metadata.resourceVersion}'; }
# pods NS SELECTOR: "name node" lines
pods() { $K get pods -n "$1" -l "$2" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}'; }
count_pods() { pods "$1" "$2" | grep -c . ; }
count_bound() { pods "$1" "$2" | awk 'NF == 2' | grep -c . ; }
bound_is() { [ "$(count_bound "$1" "$2")" = "$3" ]; }
pods_are() { [ "$(count_pods "$1" "$2")" = "$3" ]; }
label_of() { $K get node "$1" -o jsonpath="{.metadata.labels.$2}"; }
# distinct values of a node label over the bound pods of SELECTOR
domains() {
  local n; for n in $(pods "$1" "$2" | awk 'NF == 2 {print $2}'); do label_of "$n" "$3"; echo; done | sort -u | grep -c .
}
one_rack() { [ "$(domains "$1" "$2" 'topogang\.io/rack')" = 1 ]; }
one_clique() { [ "$(domains "$1" "$2" 'nvidia\.com/gpu\.clique')" = 1 ]; }
# events NS: "Kind/name reason message" lines
events() { $K get events -n "$1" -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name} {.reason} {.message}{"\n"}{end}'; }
has_event() { events "$1" | grep -q "^$2 $3"; }         # has_event NS Kind/name REASON
event_says() { events "$1" | grep "^$2 $3" | grep -qF -- "$4"; }
gpus() { printf '{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: %s}}}' "$1"; }

# ---- setup: CRDs (topogang's, the peers' real ones), 8 nodes in 2 racks ----
$K apply -f "$SRC/manifests/crd-podgroup.yaml" >/dev/null
# server-side: the big CRDs exceed the client-side last-applied annotation
$K apply --server-side -f "$SRC/tests/fixtures/crds/" >"$WORK/crds.log" 2>&1 || { cat "$WORK/crds.log"; exit 1; }
$K wait --for condition=established crd --all --timeout=120s >/dev/null
$K create ns topogang-system >/dev/null
"$SRC/scripts/fake-nodes" --nodes 8 --zones 1 --blocks 1 --rack-size 4 --clique-size 2 | $K create -f - >/dev/null
"$BIN" scheduler --kubeconfig "$KUBECONFIG" --listen 127.0.0.1:18301 --identity wl >"$WORK/sched.log" 2>&1 &
SCHED_PID=$!
end=$((SECONDS + 30))
until curl -sf 127.0.0.1:18301/readyz >/dev/null 2>&1; do
  [ $SECONDS -le $end ] || { echo "scheduler not ready:"; tail -20 "$WORK/sched.log"; echo "[  FAILED  ] 1 test(s)"; exit 1; }
  sleep 0.2
done

case_discovery() {
  local line; line=$(grep "gang definitions read from" "$WORK/sched.log")
  for api in topogang.io/v1alpha1/podgroups scheduling.k8s.io/v1alpha2/podgroups \
             scheduling.x-k8s.io/v1alpha1/podgroups scheduling.volcano.sh/v1beta1/podgroups \
             scheduling.run.ai/v2alpha2/podgroups batch/v1/jobs jobset.x-k8s.io/v1alpha2/jobsets \
             leaderworkerset.x-k8s.io/v1/leaderworkersets kubeflow.org/v1/pytorchjobs \
             kubeflow.org/v1/mpijobs trainer.kubeflow.org/v1alpha1/trainjobs; do
    grep -qF "$api" <<< "$line" || fail "the log does not say $api is read: $line"
  done
  grep -q 'not served (not watched): -"' <<< "$line" || fail "something is said not served: $line"
}

# A real Job: kube-controller-manager makes its 4 pods; they are placed in one
# rack (the pod template's annotation), all at once; a Job too big for any
# rack gets nothing bound and a FailedScheduling Event on the Job.
case_job() {
  newns jobs
  $K create -n jobs -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 4
  completions: 4
  completionMode: Indexed
  template:
    metadata: {annotations: {topogang.io/topology-required: rack}}
    spec: {schedulerName: topogang, restartPolicy: Never, terminationGracePeriodSeconds: 0, containers: [$(gpus 8)]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: toobig}
spec:
  parallelism: 5
  completions: 5
  template:
    metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: topogang.io/rack}}
    spec: {schedulerName: topogang, restartPolicy: Never, terminationGracePeriodSeconds: 0, containers: [$(gpus 8)]}
EOF
  wait_for 30 "4 pods of Job train bound" bound_is jobs job-name=train 4 || return
  check "Job train in one rack" one_rack jobs job-name=train
  wait_for 10 "Scheduled Event on the Job" has_event jobs Job/train Scheduled
  wait_for 20 "FailedScheduling Event on Job toobig" has_event jobs Job/toobig FailedScheduling
  check "5 pods of toobig exist" pods_are jobs job-name=toobig 5
  check "no pod of toobig bound" bound_is jobs job-name=toobig 0
  check "its Event says why" event_says jobs Job/toobig FailedScheduling "in one rack"
  wipe jobs
}

# Rank order (issue 20): an indexed Job of 8 pods x 4 GPUs in one rack (4 nodes
# of 8 GPUs) gets completion indexes 2k and 2k+1 on one node, nodes in
# topology order (gpu-00000.. as the scheduler saw them), however the Job
# controller created the pods; the metrics count the pairs of consecutive
# ranks it placed and the rack level.
metric() { curl -sf 127.0.0.1:18301/metrics | awk -v m="$1" '$1 == m {print $2}'; }
node_of_index() {
  $K get pods -n ranks -l job-name=ring -o jsonpath='{range .items[*]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index} {.spec.nodeName}{"\n"}{end}' |
    awk -v i="$1" '$1 == i {print $2}'
}
case_rank_order() {
  newns ranks
  local pairs0; pairs0=$(metric topogang_rank_pairs_total); pairs0=${pairs0:-0}
  $K create -n ranks -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: ring}
spec:
  parallelism: 8
  completions: 8
  completionMode: Indexed
  template:
    metadata: {annotations: {topogang.io/topology-required: rack}}
    spec: {schedulerName: topogang, restartPolicy: Never, terminationGracePeriodSeconds: 0, containers: [$(gpus 4)]}
EOF
  wait_for 30 "8 pods of Job ring bound" bound_is ranks job-name=ring 8 || return
  check "Job ring in one rack" one_rack ranks job-name=ring
  local i prev="" n m
  for i in 0 2 4 6; do
    n=$(node_of_index $i); m=$(node_of_index $((i + 1)))
    [ -n "$n" ] && [ "$n" = "$m" ] || fail "indexes $i and $((i + 1)) on '$n' and '$m', not one node"
    [ -z "$prev" ] || [[ "$prev" < "$n" ]] || fail "index $i on $n, not after $prev (topology order)"
    prev=$n
  done
  local pairs; pairs=$(metric topogang_rank_pairs_total)
  [ "${pairs:-0}" -ge $((pairs0 + 7)) ] || fail "topogang_rank_pairs_total $pairs, was $pairs0: the 7 pairs not counted"
  [ -n "$(metric 'topogang_rank_crossings_total{level="rack"}')" ] ||
    fail 'no topogang_rank_crossings_total{level="rack"} in /metrics'
  wipe ranks
}

# jobset_job NS JOBSET UID RJOB IDX N GPUS [ANNOTATIONS]: the Job the JobSet
# controller makes for replicated job RJOB index IDX (labels and annotations
# as its constructJob), whose pods the Job controller makes.
jobset_job() {
  local ns=$1 js=$2 uid=$3 rj=$4 idx=$5 n=$6 g=$7 ann=${8:-}
  local lbl="jobset.sigs.k8s.io/jobset-name: $js, jobset.sigs.k8s.io/replicatedjob-name: $rj, jobset.sigs.k8s.io/replicatedjob-replicas: \"1\", jobset.sigs.k8s.io/job-index: \"$idx\", jobset.sigs.k8s.io/job-global-index: \"$idx\", jobset.sigs.k8s.io/job-key: key-$rj-$idx, jobset.sigs.k8s.io/jobset-uid: $uid"
  $K create -n "$ns" -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: $js-$rj-$idx
  labels: {$lbl}
  annotations: {$lbl}
  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: $js, uid: $uid, controller: true, blockOwnerDeletion: true}]
spec:
  parallelism: $n
  completions: $n
  completionMode: Indexed
  backoffLimit: 0
  template:
    metadata:
      labels: {$lbl}
      annotations: {$lbl${ann:+, $ann}}
    spec: {schedulerName: topogang, restartPolicy: Never, terminationGracePeriodSeconds: 0, subdomain: $js, containers: [$(gpus "$g")]}
EOF
}

# A JobSet of a leader job (1 pod) and a worker job (2 pods): one gang of 3,
# in one rack (Kueue's annotation, a node label key).
case_jobset() {
  newns js
  $K create -n js -f - >/dev/null <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - name: leader
    replicas: 1
    template: {spec: {parallelism: 1, completions: 1, template: {spec: {restartPolicy: Never, containers: [$(gpus 4)]}}}}
  - name: workers
    replicas: 1
    template: {spec: {parallelism: 2, completions: 2, template: {spec: {restartPolicy: Never, containers: [$(gpus 4)]}}}}
EOF
  local uid; uid=$(uid_of jobset js js)
  local ann="kueue.x-k8s.io/podset-required-topology: topogang.io/rack"
  # the worker job first: its 2 pods wait for the leader's
  jobset_job js js "$uid" workers 0 2 4 "$ann"
  wait_for 20 "2 worker pods" pods_are js jobset.sigs.k8s.io/jobset-name=js 2 || return
  sleep 1
  check "no pod bound while the gang is incomplete" bound_is js jobset.sigs.k8s.io/jobset-name=js 0
  wait_for 10 "Waiting Event on the JobSet" has_event js JobSet/js Waiting
  jobset_job js js "$uid" leader 0 1 4 "$ann"
  wait_for 30 "3 pods bound" bound_is js jobset.sigs.k8s.io/jobset-name=js 3 || return
  check "in one rack" one_rack js jobset.sigs.k8s.io/jobset-name=js
  wait_for 10 "Scheduled Event on the JobSet" has_event js JobSet/js Scheduled
  wipe js
}

# Sub-groups from JobSet's exclusive-topology (issue 20), read from the real
# API (the replicated job's template annotation survives the CRD's pruning):
# 2 child Jobs of 2 pods x 8 GPUs, each placed whole in one NVLink clique,
# the JobSet in one rack; a JobSet whose exclusive-topology names a label the
# policy lacks gets an InvalidTopology Event naming the annotation, nothing bound.
case_jobset_exclusive() {
  newns jsx
  $K create -n jsx -f - >/dev/null <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: sx}
spec:
  replicatedJobs:
  - name: w
    replicas: 2
    template:
      metadata: {annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: nvidia.com/gpu.clique}}
      spec: {parallelism: 2, completions: 2, template: {spec: {restartPolicy: Never, containers: [$(gpus 8)]}}}
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: bad, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool}}
spec:
  replicatedJobs:
  - name: w
    replicas: 1
    template: {spec: {parallelism: 1, completions: 1, template: {spec: {restartPolicy: Never, containers: [$(gpus 1)]}}}}
EOF
  local uid; uid=$(uid_of jobset sx jsx)
  local ann="alpha.jobset.sigs.k8s.io/exclusive-topology: nvidia.com/gpu.clique, topogang.io/topology-required: rack"
  jobset_job jsx sx "$uid" w 0 2 8 "$ann"
  jobset_job jsx sx "$uid" w 1 2 8 "$ann"
  jobset_job jsx bad "$(uid_of jobset bad jsx)" w 0 1 1 "alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool"
  wait_for 30 "4 pods bound" bound_is jsx jobset.sigs.k8s.io/jobset-name=sx 4 || return
  check "child Job 0 in one clique" one_clique jsx batch.kubernetes.io/job-name=sx-w-0
  check "child Job 1 in one clique" one_clique jsx batch.kubernetes.io/job-name=sx-w-1
  check "the JobSet in one rack" one_rack jsx jobset.sigs.k8s.io/jobset-name=sx
  wait_for 10 "InvalidTopology Event naming the annotation" event_says jsx JobSet/bad InvalidTopology \
    'metadata.annotations[alpha.jobset.sigs.k8s.io/exclusive-topology]: "cloud.google.com/gke-nodepool" is neither a level'
  check "the bad JobSet's pod not bound" bound_is jsx jobset.sigs.k8s.io/jobset-name=bad 0
  wipe jsx
}

# A TrainJob: Kubeflow Trainer makes a JobSet of its name, the JobSet a Job.
case_trainjob() {
  newns tj
  $K create -n tj -f - >/dev/null <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2}
EOF
  local tuid; tuid=$(uid_of trainjob tj tj)
  $K create -n tj -f - >/dev/null <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: tj
  labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
  ownerReferences: [{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: tj, uid: $tuid, controller: true, blockOwnerDeletion: true}]
spec:
  replicatedJobs:
  - name: node
    replicas: 1
    template: {spec: {parallelism: 2, completions: 2, template: {spec: {restartPolicy: Never, containers: [$(gpus 8)]}}}}
EOF
  jobset_job tj tj "$(uid_of jobset tj tj)" node 0 2 8 "topogang.io/topology-required: rack"
  wait_for 30 "2 pods bound" bound_is tj jobset.sigs.k8s.io/jobset-name=tj 2 || return
  check "in one rack" one_rack tj jobset.sigs.k8s.io/jobset-name=tj
  wait_for 10 "Scheduled Event on its JobSet" has_event tj JobSet/tj Scheduled
  wipe tj
}

# A LeaderWorkerSet of 2 groups of 2: the LWS controller's leader
# StatefulSet, per group a leader pod (labels the LWS webhook sets), a worker
# StatefulSet owned by the leader pod and its worker pod. A group is placed
# only once its worker exists, in one NVLink clique (KAI's annotation).
lws_group() {  # lws_group NS LWS LWSUID LEADER-STS-UID GROUP
  local ns=$1 lws=$2 g=$5
  local lbl="leaderworkerset.sigs.k8s.io/name: $lws, leaderworkerset.sigs.k8s.io/group-index: \"$g\", leaderworkerset.sigs.k8s.io/group-key: gk$g"
  local ann="leaderworkerset.sigs.k8s.io/size: \"2\", kai.scheduler/topology-required-placement: nvidia.com/gpu.clique"
  $K create -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $lws-$g
  labels: {$lbl, leaderworkerset.sigs.k8s.io/worker-index: "0", apps.kubernetes.io/pod-index: "$g", statefulset.kubernetes.io/pod-name: $lws-$g}
  annotations: {$ann}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: $lws, uid: $4, controller: true, blockOwnerDeletion: true}]
spec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [$(gpus 4)]}
EOF
  local puid; puid=$(uid_of pod "$lws-$g" "$ns")
  $K create -n "$ns" -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: $lws-$g
  labels: {$lbl}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: $lws-$g, uid: $puid, controller: true, blockOwnerDeletion: true}]
spec:
  replicas: 1
  serviceName: $lws
  podManagementPolicy: Parallel
  selector: {matchLabels: {$lbl}}
  template:
    metadata: {labels: {$lbl}, annotations: {$ann}}
    spec: {schedulerName: topogang, containers: [$(gpus 4)]}
EOF
}
lws_worker() {  # lws_worker NS LWS GROUP
  local ns=$1 lws=$2 g=$3
  local lbl="leaderworkerset.sigs.k8s.io/name: $lws, leaderworkerset.sigs.k8s.io/group-index: \"$g\", leaderworkerset.sigs.k8s.io/group-key: gk$g"
  $K create -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $lws-$g-1
  labels: {$lbl, leaderworkerset.sigs.k8s.io/worker-index: "1", apps.kubernetes.io/pod-index: "0"}
  annotations: {leaderworkerset.sigs.k8s.io/size: "2", leaderworkerset.sigs.k8s.io/leader-name: $lws-$g, kai.scheduler/topology-required-placement: nvidia.com/gpu.clique}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: $lws-$g, uid: $(uid_of statefulset "$lws-$g" "$ns"), controller: true, blockOwnerDeletion: true}]
spec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [$(gpus 4)]}
EOF
}
case_lws() {
  newns lws
  $K create -n lws -f - >/dev/null <<EOF
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: vllm}
spec:
  replicas: 2
  startupPolicy: LeaderCreated
  leaderWorkerTemplate:
    size: 2
    workerTemplate: {spec: {containers: [$(gpus 4)]}}
EOF
  local luid; luid=$(uid_of leaderworkerset vllm lws)
  $K create -n lws -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: vllm
  labels: {leaderworkerset.sigs.k8s.io/name: vllm}
  ownerReferences: [{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, name: vllm, uid: $luid, controller: true, blockOwnerDeletion: true}]
spec:
  replicas: 2
  serviceName: vllm
  podManagementPolicy: Parallel
  selector: {matchLabels: {leaderworkerset.sigs.k8s.io/name: vllm, leaderworkerset.sigs.k8s.io/worker-index: "0"}}
  template:
    metadata: {labels: {leaderworkerset.sigs.k8s.io/name: vllm, leaderworkerset.sigs.k8s.io/worker-index: "0"}}
    spec: {schedulerName: topogang, containers: [$(gpus 4)]}
EOF
  local suid; suid=$(uid_of statefulset vllm lws)
  lws_group lws vllm "$luid" "$suid" 0
  lws_group lws vllm "$luid" "$suid" 1
  lws_worker lws vllm 0
  wait_for 30 "group 0 bound" bound_is lws leaderworkerset.sigs.k8s.io/group-index=0 2 || return
  check "group 0 in one clique" one_clique lws leaderworkerset.sigs.k8s.io/group-index=0
  check "group 1 (no worker yet) not bound" bound_is lws leaderworkerset.sigs.k8s.io/group-index=1 0
  lws_worker lws vllm 1
  wait_for 30 "group 1 bound" bound_is lws leaderworkerset.sigs.k8s.io/group-index=1 2 || return
  check "group 1 in one clique" one_clique lws leaderworkerset.sigs.k8s.io/group-index=1
  wait_for 10 "Scheduled Event on the LWS" has_event lws LeaderWorkerSet/vllm Scheduled
  wipe lws
}

# The whole LWS one gang (topogang.io/gang-scope: lws on its pods; issue 20):
# 2 groups of 2 pods x 8 GPUs, each group a sub-group in one NVLink clique
# (the LWS's exclusive-topology), the gang in one rack; group 0 complete
# alone stays unbound (one gang per group would bind it at once).
# whole_pod NS LWS GROUP WORKER STS-UID [GPUS ", MORE-LABELS" ", MORE-ANNOTATIONS"]:
# a pod of a whole-LWS gang (defaults: 8 GPUs, no more labels, required rack
# and exclusive-topology on the cliques; "" for none)
whole_pod() {
  local ns=$1 lws=$2 g=$3 w=$4 name=$2-$3
  local ann=${8-", topogang.io/topology-required: rack, leaderworkerset.sigs.k8s.io/exclusive-topology: nvidia.com/gpu.clique"}
  [ "$w" = 0 ] || name=$2-$3-$4
  $K create -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $name
  labels: {leaderworkerset.sigs.k8s.io/name: $lws, leaderworkerset.sigs.k8s.io/group-index: "$g", leaderworkerset.sigs.k8s.io/worker-index: "$w"${7:-}}
  annotations: {topogang.io/gang-scope: lws$ann}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: $lws, uid: $5, controller: true, blockOwnerDeletion: true}]
spec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [$(gpus "${6:-8}")]}
EOF
}
# An LWS of 8-GPU pods and its leader StatefulSet (no pods: the cases make
# them); prints the StatefulSet's uid.
lws_8gpu() {  # lws_8gpu NS LWS ANNOTATIONS REPLICAS TEMPLATE-LINES
  $K create -n "$1" -f - >/dev/null <<EOF
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: $2, annotations: {$3}}
spec:
  replicas: $4
  startupPolicy: LeaderCreated
  leaderWorkerTemplate:
$5
    workerTemplate: {spec: {containers: [$(gpus 8)]}}
EOF
  $K create -n "$1" -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: $2
  ownerReferences: [{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, name: $2, uid: $(uid_of leaderworkerset "$2" "$1"), controller: true, blockOwnerDeletion: true}]
spec:
  replicas: 0
  serviceName: $2
  selector: {matchLabels: {leaderworkerset.sigs.k8s.io/name: $2}}
  template:
    metadata: {labels: {leaderworkerset.sigs.k8s.io/name: $2}}
    spec: {schedulerName: topogang, containers: [$(gpus 8)]}
EOF
  uid_of statefulset "$2" "$1"
}
case_lws_whole() {
  newns lwsw
  local suid; suid=$(lws_8gpu lwsw ws "leaderworkerset.sigs.k8s.io/exclusive-topology: nvidia.com/gpu.clique" 2 "    size: 2")
  whole_pod lwsw ws 0 0 "$suid"
  whole_pod lwsw ws 0 1 "$suid"
  wait_for 20 "group 0's 2 pods" pods_are lwsw leaderworkerset.sigs.k8s.io/group-index=0 2 || return
  sleep 2
  check "group 0 alone not bound (the whole LWS is one gang)" bound_is lwsw leaderworkerset.sigs.k8s.io/name=ws 0
  whole_pod lwsw ws 1 0 "$suid"
  whole_pod lwsw ws 1 1 "$suid"
  wait_for 30 "4 pods bound" bound_is lwsw leaderworkerset.sigs.k8s.io/name=ws 4 || return
  check "group 0 in one clique" one_clique lwsw leaderworkerset.sigs.k8s.io/group-index=0
  check "group 1 in one clique" one_clique lwsw leaderworkerset.sigs.k8s.io/group-index=1
  check "the LWS in one rack" one_rack lwsw leaderworkerset.sigs.k8s.io/name=ws
  wait_for 10 "Scheduled Event on the LWS" has_event lwsw LeaderWorkerSet/ws Scheduled
  wipe lwsw
}

# kubeflow_pods NS KIND JOB UID OPERATOR TYPE N GPUS [ANNOTATIONS]: the pods the
# training operator makes for one replica type
kubeflow_pods() {
  local ns=$1 kind=$2 job=$3 uid=$4 op=$5 t=$6 n=$7 g=$8 ann=${9:-} i
  for i in $(seq 0 $((n - 1))); do
    $K create -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $job-$t-$i
  labels: {training.kubeflow.org/job-name: $job, training.kubeflow.org/operator-name: $op, training.kubeflow.org/replica-type: $t, training.kubeflow.org/replica-index: "$i"}
  annotations: {$ann}
  ownerReferences: [{apiVersion: kubeflow.org/v1, kind: $kind, name: $job, uid: $uid, controller: true, blockOwnerDeletion: true}]
spec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [$( [ "$g" = 0 ] && echo '{name: main, image: busybox}' || gpus "$g")]}
EOF
  done
}

# A PyTorchJob (Master 1 + Worker 3, an NVLink domain preferred) and an
# MPIJob (a launcher without GPUs + 2 workers): all replicas, one gang each.
case_kubeflow() {
  newns kf
  $K create -n kf -f - >/dev/null <<EOF
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: trainer}]}}}
    Worker: {replicas: 3, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: trainer}]}}}
---
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: mpi}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: launcher, image: mpi}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: worker, image: mpi}]}}}
EOF
  local ann="topogang.io/topology-preferred: nvlink-domain"
  kubeflow_pods kf PyTorchJob pt "$(uid_of pytorchjob pt kf)" pytorchjob-controller master 1 2 "$ann"
  kubeflow_pods kf PyTorchJob pt "$(uid_of pytorchjob pt kf)" pytorchjob-controller worker 2 2 "$ann"
  sleep 1
  check "3 of 4 PyTorchJob pods: none bound" bound_is kf training.kubeflow.org/job-name=pt 0
  $K create -n kf -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: pt-worker-2
  labels: {training.kubeflow.org/job-name: pt, training.kubeflow.org/operator-name: pytorchjob-controller, training.kubeflow.org/replica-type: worker, training.kubeflow.org/replica-index: "2"}
  annotations: {$ann}
  ownerReferences: [{apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: pt, uid: $(uid_of pytorchjob pt kf), controller: true, blockOwnerDeletion: true}]
spec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [$(gpus 2)]}
EOF
  wait_for 30 "4 PyTorchJob pods bound" bound_is kf training.kubeflow.org/job-name=pt 4 || return
  check "in one NVLink clique" one_clique kf training.kubeflow.org/job-name=pt
  wait_for 10 "Scheduled Event on the PyTorchJob" event_says kf PyTorchJob/pt Scheduled nvlink-domain
  kubeflow_pods kf MPIJob mpi "$(uid_of mpijob mpi kf)" mpijob-controller launcher 1 0
  kubeflow_pods kf MPIJob mpi "$(uid_of mpijob mpi kf)" mpijob-controller worker 2 1
  wait_for 30 "3 MPIJob pods bound" bound_is kf training.kubeflow.org/job-name=mpi 3 || return
  wait_for 10 "Scheduled Event on the MPIJob" has_event kf MPIJob/mpi Scheduled
  wipe kf
}

# The upstream PodGroup: members by spec.schedulingGroup; one rack (its
# topology key); its PodGroupScheduled condition written True.
case_upstream() {
  newns up
  $K create -n up -f - >/dev/null <<EOF
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: up}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
  schedulingConstraints: {topology: [{key: topogang.io/rack}]}
EOF
  local i
  for i in 0 1 2; do
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: up-%s, labels: {app: up}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, schedulingGroup: {podGroupName: up}, containers: [%s]}\n' \
      $i "$(gpus 8)"
  done | $K create -n up -f - >/dev/null
  wait_for 30 "3 pods bound" bound_is up app=up 3 || return
  check "in one rack" one_rack up app=up
  local cond='{.status.conditions[?(@.type=="PodGroupScheduled")].status}/{.status.conditions[?(@.type=="PodGroupScheduled")].reason}'
  wait_for 10 "PodGroupScheduled True/Scheduled" \
    bash -c "[ \"\$($K get podgroups.scheduling.k8s.io up -n up -o jsonpath='$cond')\" = True/Scheduled ]"
  wait_for 10 "Scheduled Event on the PodGroup" has_event up PodGroup/up Scheduled
  wipe up
}

# scheduler-plugins', Volcano's and KAI's: placed as their PodGroups ask; their
# status never touched by topogang (resourceVersion as created).
case_peers_status_untouched() {
  newns peers
  $K create -n peers -f - >/dev/null <<EOF
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: sp}
spec: {minMember: 3, scheduleTimeoutSeconds: 60}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: vc}
spec: {minMember: 2, queue: default, networkTopology: {mode: hard, highestTierAllowed: 1}}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: kai}
spec: {minMember: 4, queue: default-queue, topologyConstraint: {requiredTopologyLevel: topogang.io/rack, preferredTopologyLevel: nvidia.com/gpu.clique}}
EOF
  local rsp rvc rkai i
  rsp=$(rv_of podgroups.scheduling.x-k8s.io sp peers)
  rvc=$(rv_of podgroups.scheduling.volcano.sh vc peers)
  rkai=$(rv_of podgroups.scheduling.run.ai kai peers)
  {
    for i in 0 1 2; do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: sp-%s, labels: {scheduling.x-k8s.io/pod-group: sp}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' $i "$(gpus 2)"
    done
    for i in 0 1; do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: vc-%s, labels: {g: vc}, annotations: {scheduling.k8s.io/group-name: vc}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' $i "$(gpus 8)"
    done
    for i in 0 1 2 3; do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: kai-%s, labels: {g: kai}, annotations: {pod-group-name: kai}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' $i "$(gpus 2)"
    done
  } | $K create -n peers -f - >/dev/null
  wait_for 30 "scheduler-plugins gang bound" bound_is peers scheduling.x-k8s.io/pod-group=sp 3 || return
  wait_for 30 "Volcano gang bound" bound_is peers g=vc 2 || return
  wait_for 30 "KAI gang bound" bound_is peers g=kai 4 || return
  check "Volcano tier 1: one NVLink clique" one_clique peers g=vc
  check "KAI: one rack" one_rack peers g=kai
  check "KAI: its preferred clique (4 x 2 GPUs fit one)" one_clique peers g=kai
  wait_for 10 "Scheduled Event on the Volcano PodGroup" has_event peers PodGroup/vc Scheduled
  sleep 1
  check "scheduler-plugins PodGroup never written" [ "$(rv_of podgroups.scheduling.x-k8s.io sp peers)" = "$rsp" ]
  check "Volcano PodGroup never written" [ "$(rv_of podgroups.scheduling.volcano.sh vc peers)" = "$rvc" ]
  check "KAI PodGroup never written" [ "$(rv_of podgroups.scheduling.run.ai kai peers)" = "$rkai" ]
  check "KAI PodGroup status empty" [ -z "$($K get podgroups.scheduling.run.ai kai -n peers -o jsonpath='{.status.phase}{.status.conditions}')" ]
  wipe peers
}

# Bad peers' PodGroups: an Event naming the object and the field; the
# upstream one's condition says so too; a good gang submitted after them is
# placed all the same.
case_bad_peers() {
  newns bad
  $K create -n bad -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: vc-high}
spec: {minMember: 1, networkTopology: {mode: hard, highestTierAllowed: 7}}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: kai-nomin}
spec: {queue: q}
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: up-key}
spec:
  schedulingPolicy: {gang: {minCount: 1}}
  schedulingConstraints: {topology: [{key: topology.kubernetes.io/region}]}
EOF
  {
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: vc-high-0, annotations: {scheduling.k8s.io/group-name: vc-high}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' "$(gpus 1)"
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: kai-nomin-0, annotations: {pod-group-name: kai-nomin}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' "$(gpus 1)"
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: up-key-0}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, schedulingGroup: {podGroupName: up-key}, containers: [%s]}\n' "$(gpus 1)"
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: fine-0, labels: {app: fine}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' "$(gpus 1)"
  } | $K create -n bad -f - >/dev/null
  wait_for 15 "InvalidTopology Event on the Volcano PodGroup" \
    event_says bad PodGroup/vc-high InvalidTopology "spec.networkTopology.highestTierAllowed: tier 7 does not exist"
  wait_for 15 "InvalidPodGroup Event on the KAI PodGroup" \
    event_says bad PodGroup/kai-nomin InvalidPodGroup "spec.minMember: is required"
  wait_for 15 "InvalidTopology Event on the upstream PodGroup" \
    event_says bad PodGroup/up-key InvalidTopology 'spec.schedulingConstraints.topology[0].key: "topology.kubernetes.io/region"'
  local msg='{.status.conditions[?(@.type=="PodGroupScheduled")].message}'
  wait_for 10 "the upstream PodGroup's condition names the field" \
    bash -c "$K get podgroups.scheduling.k8s.io up-key -n bad -o jsonpath='$msg' | grep -q schedulingConstraints"
  wait_for 15 "a good pod placed meanwhile" bound_is bad app=fine 1
  check "the bad gangs stay unbound" [ "$(count_bound bad '!app')" = 0 ]
  wipe bad
}

# LWS's subGroupPolicy (issue 20): one group of 3 pods x 8 GPUs,
# subGroupSize 2 with LeaderExcluded and subgroup-exclusive-topology on
# the cliques: the two workers (subgroup 0, labelled as LWS's webhook
# labels them) share a clique, the leader goes beside them. Packed without
# it, ranks 0-1 (leader, worker 1) take one clique and worker 2 the other.
sub_pod() {  # sub_pod NS LWS WORKER STS-UID
  local ns=$1 lws=$2 w=$3 name=$2-0 sg=""
  [ "$w" = 0 ] || { name=$2-0-$3; sg=', leaderworkerset.sigs.k8s.io/subgroup-index: "0"'; }
  $K create -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $name
  labels: {leaderworkerset.sigs.k8s.io/name: $lws, leaderworkerset.sigs.k8s.io/group-index: "0", leaderworkerset.sigs.k8s.io/worker-index: "$w"$sg}
  annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: nvidia.com/gpu.clique}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: $lws, uid: $4, controller: true, blockOwnerDeletion: true}]
spec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [$(gpus 8)]}
EOF
}
case_lws_subgroups() {
  newns lwss
  local suid; suid=$(lws_8gpu lwss ls "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: nvidia.com/gpu.clique" 1 \
    "    size: 3
    subGroupPolicy: {subGroupSize: 2, subGroupPolicyType: LeaderExcluded}")
  sub_pod lwss ls 0 "$suid"
  sub_pod lwss ls 1 "$suid"
  sub_pod lwss ls 2 "$suid"
  wait_for 30 "3 pods bound" bound_is lwss leaderworkerset.sigs.k8s.io/name=ls 3 || return
  check "the workers (subgroup 0) in one clique" one_clique lwss leaderworkerset.sigs.k8s.io/subgroup-index=0
  check "the group in one rack" one_rack lwss leaderworkerset.sigs.k8s.io/name=ls
  wipe lwss
}

# Volcano's spec.subGroupPolicy (issue 20) on its real CRD: workers of two
# partitions (label volcano.sh/partition, listed in matchLabelKeys), 4 x 4
# GPUs each, their names interleaved so that packing by name would mix them
# on the nodes; each partition is a sub-group of subGroupSize 4 at tier 1
# (the NVLink clique: 2 nodes of 8 GPUs, exactly one partition), the gang
# at tier 2 (one rack); a launcher the labelSelector leaves out goes anywhere
# in that rack. A second PodGroup naming a tier the policy lacks gets an Event
# naming the field and stays unbound.
case_volcano_subgroups() {
  newns vsg
  $K create -n vsg -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: tp}
spec:
  minMember: 9
  networkTopology: {mode: hard, highestTierAllowed: 2}
  subGroupPolicy:
  - name: part
    subGroupSize: 4
    labelSelector: {matchLabels: {role: worker}}
    matchLabelKeys: [volcano.sh/partition]
    networkTopology: {mode: hard, highestTierAllowed: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: tp-bad}
spec:
  minMember: 1
  subGroupPolicy:
  - {name: part, subGroupSize: 1, matchLabelKeys: [volcano.sh/partition], networkTopology: {mode: hard, highestTierAllowed: 9}}
EOF
  local i p
  {
    for i in 0 1 2 3 4 5 6 7; do
      p=a; [ $((i % 2)) = 1 ] && p=b
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: w-%s, labels: {g: tp, role: worker, volcano.sh/partition: %s}, annotations: {scheduling.k8s.io/group-name: tp}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' $i $p "$(gpus 4)"
    done
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: launcher, labels: {g: tp, role: launcher}, annotations: {scheduling.k8s.io/group-name: tp}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [{name: main, image: busybox, resources: {requests: {cpu: 100m}}}]}\n'
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: bad-0, labels: {g: bad, volcano.sh/partition: a}, annotations: {scheduling.k8s.io/group-name: tp-bad}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' "$(gpus 1)"
  } | $K create -n vsg -f - >/dev/null
  wait_for 30 "9 pods bound" bound_is vsg g=tp 9 || return
  check "partition a in one clique" one_clique vsg volcano.sh/partition=a,g=tp
  check "partition b in one clique" one_clique vsg volcano.sh/partition=b,g=tp
  check "the two partitions in two cliques" [ "$(domains vsg role=worker 'nvidia\.com/gpu\.clique')" = 2 ]
  check "the gang (launcher too) in one rack" one_rack vsg g=tp
  wait_for 15 "an Event on the bad PodGroup names the field" \
    event_says vsg PodGroup/tp-bad InvalidTopology "spec.subGroupPolicy[0].networkTopology.highestTierAllowed: tier 9 does not exist"
  check "the bad gang stays unbound" [ "$(count_bound vsg g=bad)" = 0 ]
  wipe vsg
}

# A whole LWS (gang-scope: lws) whose group has LWS subgroups (issue 20):
# the group in one rack (exclusive-topology), each subgroup of 3 pods x 4
# GPUs in one NVLink clique inside it (subGroupPolicy subGroupSize 3 and
# subgroup-exclusive-topology). A pod of no scheduler fills gpu-00002, so
# rack-0 has 24 GPUs free (clique-0 16, clique-1 8): it holds the group by
# count, and best fit picks it, but its subgroups only in rack-1. Before, a
# whole LWS's subgroups were not placed: the group took rack-0 and its second
# subgroup split across clique-0 and clique-1.
case_lws_whole_subgroups() {
  newns lwsn
  $K create -n lwsn -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: other, labels: {app: other}}
spec: {nodeName: gpu-00002, terminationGracePeriodSeconds: 0, containers: [$(gpus 8)]}
EOF
  local suid w; suid=$(lws_8gpu lwsn wn "leaderworkerset.sigs.k8s.io/exclusive-topology: topogang.io/rack, leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: nvidia.com/gpu.clique" 1 \
    "    size: 6
    subGroupPolicy: {subGroupSize: 3}")
  for w in 0 1 2 3 4 5; do
    whole_pod lwsn wn 0 $w "$suid" 4 ", leaderworkerset.sigs.k8s.io/subgroup-index: \"$((w / 3))\"" ""
  done
  wait_for 30 "6 pods bound" bound_is lwsn leaderworkerset.sigs.k8s.io/name=wn 6 || return
  check "subgroup 0 in one clique" one_clique lwsn leaderworkerset.sigs.k8s.io/subgroup-index=0
  check "subgroup 1 in one clique" one_clique lwsn leaderworkerset.sigs.k8s.io/subgroup-index=1
  check "the group in one rack" one_rack lwsn leaderworkerset.sigs.k8s.io/name=wn
  check "the group in rack-1 (rack-0 holds it by count only)" \
    [ "$(label_of "$(pods lwsn leaderworkerset.sigs.k8s.io/name=wn | awk 'NR == 1 {print $2}')" 'topogang\.io/rack')" = rack-0-0-1 ]
  wipe lwsn
}

# Volcano's minSubGroups (issue 20), as Volcano reads it: the gang is ready
# with minMember placed and at least minSubGroups of the entry's sub-groups
# whole. Partition a has its 4 workers (4 GPUs each: one clique of 2 nodes x
# 8 GPUs), partition b 3 of 4: with minSubGroups 1, a is placed in one clique
# and b waits without holding a back (before: the whole gang waited for b).
# b's fourth worker then comes: b joins the running gang, whole, in a clique
# of its own. A second PodGroup asking minSubGroups 2 of one whole partition
# waits with an Event naming the entry and the numbers.
vc_worker() {  # vc_worker NS GROUP NAME PARTITION
  printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, labels: {g: %s, volcano.sh/partition: %s}, annotations: {scheduling.k8s.io/group-name: %s}}\nspec: {schedulerName: topogang, terminationGracePeriodSeconds: 0, containers: [%s]}\n' \
    "$3" "$2" "$4" "$2" "$(gpus 4)" | $K create -n "$1" -f - >/dev/null
}
case_volcano_min_subgroups() {
  newns vms
  $K create -n vms -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: ms}
spec:
  minMember: 4
  networkTopology: {mode: hard, highestTierAllowed: 2}
  subGroupPolicy:
  - {name: part, subGroupSize: 4, minSubGroups: 1, matchLabelKeys: [volcano.sh/partition], networkTopology: {mode: hard, highestTierAllowed: 1}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: ms2}
spec:
  minMember: 1
  subGroupPolicy:
  - {name: part, subGroupSize: 2, minSubGroups: 2, matchLabelKeys: [volcano.sh/partition], networkTopology: {mode: hard, highestTierAllowed: 1}}
EOF
  local i
  for i in 0 1 2 3; do vc_worker vms ms a-$i a; done
  for i in 0 1 2; do vc_worker vms ms b-$i b; done
  vc_worker vms ms2 c-0 c
  vc_worker vms ms2 c-1 c
  wait_for 30 "partition a's 4 workers bound" bound_is vms g=ms,volcano.sh/partition=a 4 || return
  check "partition a in one clique" one_clique vms g=ms,volcano.sh/partition=a
  check "partition b (3 of 4) waits" [ "$(count_bound vms g=ms,volcano.sh/partition=b)" = 0 ]
  vc_worker vms ms b-3 b
  wait_for 30 "partition b's 4 workers bound once whole" bound_is vms g=ms,volcano.sh/partition=b 4 || return
  check "partition b in one clique" one_clique vms g=ms,volcano.sh/partition=b
  check "a and b in two cliques" [ "$(domains vms g=ms 'nvidia\.com/gpu\.clique')" = 2 ]
  wait_for 15 "an Event on ms2 names minSubGroups" \
    event_says vms PodGroup/ms2 "[A-Za-z]*" "spec.subGroupPolicy[0] (part) has 1 of its minSubGroups 2 sub-groups"
  check "ms2 stays unbound" [ "$(count_bound vms g=ms2)" = 0 ]
  wipe vms
}

run_case case_discovery
run_case case_job
run_case case_rank_order
run_case case_jobset
run_case case_jobset_exclusive
run_case case_trainjob
run_case case_lws
run_case case_lws_whole
run_case case_lws_subgroups
run_case case_lws_whole_subgroups
run_case case_volcano_subgroups
run_case case_volcano_min_subgroups
run_case case_kubeflow
run_case case_upstream
run_case case_peers_status_untouched
run_case case_bad_peers

# SIGTERM: exit 0, and no sanitizer report in its log
CASE=shutdown; CASE_OK=1
kill -TERM "$SCHED_PID"; wait "$SCHED_PID"; rc=$?; SCHED_PID=
[ $rc = 0 ] || fail "scheduler exited $rc after SIGTERM (see $WORK/sched.log)"
if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$WORK/sched.log"; then
  fail "sanitizer report in the scheduler's log"; grep -m5 -E "Sanitizer|runtime error:" "$WORK/sched.log"
fi
if [ $CASE_OK = 1 ]; then passed=$((passed + 1)); echo "[       OK ] shutdown"; else failed=$((failed + 1)); echo "[  FAILED  ] shutdown"; fi

echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ $failed = 0 ] || { echo "[  FAILED  ] $failed test(s)."; exit 1; }
