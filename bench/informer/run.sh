#!/usr/bin/env bash
# Informer benchmark: initial sync of N Nodes + M Pods from a real kube-apiserver,
# compared with `kubectl get --raw` fetching the same lists in the same run; then
# events/s while watching a churn; RSS per cached object.
#
# Usage: bench/informer/run.sh [BUILD_DIR] [RUNS]     (defaults: build, 5)
#   TG_BENCH_NODES (10000), TG_BENCH_PODS (100000), TG_BENCH_PAGE (informer page size)
# Starts its own control plane (scripts/cluster-up) and stops it at exit.
# Writes bench/out/informer-<date>.txt; prints medians.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${2:-5}
nodes=${TG_BENCH_NODES:-10000}
pods=${TG_BENCH_PODS:-100000}
page=${TG_BENCH_PAGE:-0}
bench=$build/bench/informer/bench_informer
mkdir -p "$src/bench/out"
out=$src/bench/out/informer-$(date -u +%Y%m%dT%H%M%S).txt
dir=$(mktemp -d /tmp/tg-bench-XXXXXX)
trap '"$src/scripts/cluster-down" "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
TG_CLUSTER_OWNER=$$ "$src/scripts/cluster-up" "$dir" >/dev/null
. "$dir/env"
k="$TG_K8S_BIN/kubectl"
"$k" create namespace bench >/dev/null

echo "# $(date -u) nodes=$nodes pods=$pods runs=$runs $(nproc) cores" | tee "$out"
"$bench" load --nodes "$nodes" --pods "$pods" | tee -a "$out"

pending='/api/v1/pods?fieldSelector=spec.schedulerName%3Dtopogang%2Cspec.nodeName%3D'
bound='/api/v1/pods?fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed'
now() { date +%s.%N; }
for r in $(seq 1 "$runs"); do
  # kubectl: the three lists the informer makes, in parallel as the informer does,
  # once as consistent reads (from etcd) and once with resourceVersion=0 (watch cache).
  t0=$(now)
  "$k" get --raw /api/v1/nodes >/dev/null & p1=$!
  "$k" get --raw "$pending" >/dev/null & p2=$!
  "$k" get --raw "$bound" >/dev/null & p3=$!
  wait $p1 $p2 $p3
  t1=$(now)
  "$k" get --raw '/api/v1/nodes?resourceVersion=0' >/dev/null & p1=$!
  "$k" get --raw "$pending&resourceVersion=0" >/dev/null & p2=$!
  "$k" get --raw "$bound&resourceVersion=0" >/dev/null & p3=$!
  wait $p1 $p2 $p3
  t2=$(now)
  echo "kubectl run=$r seconds_consistent=$(echo "$t1 - $t0" | bc) seconds_rv0=$(echo "$t2 - $t1" | bc)" | tee -a "$out"
  "$bench" sync --page-size "$page" | sed "s/^/informer run=$r /" | tee -a "$out"
done

# events/s while watching: churn label patches on the bound pods for 20 s
"$bench" watch --seconds 25 --page-size "$page" > "$dir/watch.txt" &
wpid=$!
sleep 8
"$bench" churn --pods "$pods" --seconds 20 | tee -a "$out"
wait $wpid
tee -a "$out" < "$dir/watch.txt"

med() { tr ' ' '\n' | sed -n "s/^$1=//p" | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
echo "## medians over $runs runs" | tee -a "$out"
{
  echo "kubectl_consistent_s=$(grep '^kubectl' "$out" | med seconds_consistent)"
  echo "kubectl_rv0_s=$(grep '^kubectl' "$out" | med seconds_rv0)"
  echo "informer_synced_s=$(grep '^informer' "$out" | med seconds)"
  echo "informer_cpu_s=$(grep '^informer' "$out" | med cpu_s)"
  echo "bytes_per_object_synced=$(grep '^informer' "$out" | med bytes_per_object)"
  echo "bytes_per_object_trimmed=$(grep '^informer' "$out" | med bytes_per_object_trimmed)"
  echo "rss_kib_peak=$(grep '^informer' "$out" | med rss_kib_peak)"
  grep '^watch' "$out" | tr ' ' '\n' | grep -E 'events_per_s|cpu_us_per_event'
  grep '^churn' "$out" | tr ' ' '\n' | grep writes_per_s
} | tee -a "$out"
echo "# full results: $out"
