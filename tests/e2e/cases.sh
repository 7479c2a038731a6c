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
