# Sourced by the shell e2e tests: cases that print cmocka-style lines, which
# scripts/count-tests counts. A case is a function; it fails by calling fail
# (or check / wait_for, which call it) and goes on, so that one run reports
# every problem. The test ends with `summary`, which exits 0 or 1.
passed=0; failed=0; CASE=""
fail() { echo "    FAIL [$CASE]: $*"; CASE_OK=0; }
check() { local what=$1; shift; if ! "$@" >/dev/null 2>&1; then fail "$what"; fi; }
# wait_for SECONDS DESCRIPTION CMD...: polls CMD every 0.2 s
wait_for() {
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t))
  while [ $SECONDS -le $end ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  fail "timed out after ${t}s waiting for: $what"; return 1
}
run_case() {
  CASE=$1; CASE_OK=1
  echo "[ RUN      ] $CASE"
  "$CASE"
  if [ $CASE_OK = 1 ]; then passed=$((passed + 1)); echo "[       OK ] $CASE"
  else failed=$((failed + 1)); echo "[  FAILED  ] $CASE"; fi
}
summary() {
  echo "[==========] $((passed + failed)) test(s) run."
  echo "[  PASSED  ] $passed test(s)."
  [ $failed -gt 0 ] && { echo "[  FAILED  ] $failed test(s)"; exit 1; }
  exit 0
}

# e2e_cluster_up NAME [cluster-up flags]: the test's control plane
# (scripts/cluster-up, with TG_APISERVER_ARGS / TG_KCM_ARGS from the caller's
# environment) in WORK=/tmp/tg-e2e-NAME.*; sets WORK, K (kubectl), the
# cluster's env (KUBECONFIG, TG_K8S_BIN), SCHED_PID and PIDS. Exits 77 when the
# control plane cannot be built, 1 when it does not start. At exit SCHED_PID
# and PIDS are killed, the control plane stopped, and WORK removed unless a
# case failed or TOPOGANG_KEEP is set.
e2e_cluster_up() {
  local name=$1; shift
  WORK=$(mktemp -d "/tmp/tg-e2e-$name.XXXXXX")
  export TG_CLUSTER_OWNER=$$
  if ! "$SRC/scripts/cluster-up" "$@" "$WORK/cp" >"$WORK/cluster-up.log" 2>&1; then
    if grep -q "cannot build" "$WORK/cluster-up.log"; then echo "SKIP: no control plane"; exit 77; fi
    cat "$WORK/cluster-up.log"; echo "[  FAILED  ] 1 test(s)"; exit 1
  fi
  source "$WORK/cp/env"
  K="$TG_K8S_BIN/kubectl"
  SCHED_PID=; PIDS=()
  trap e2e_cleanup EXIT
}
e2e_cleanup() {
  local p
  for p in "${SCHED_PID:-}" "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
  "$SRC/scripts/cluster-down" "$WORK/cp" >/dev/null 2>&1
  if [ "$failed" -gt 0 ] || [ -n "${TOPOGANG_KEEP:-}" ]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
