# e2e_lib.sh - what the end-to-end scripts share (sourced by tests/e2e/e2e.sh, tests/e2e/e2e_cnn.sh,
# tests/e2e/e2e_gpt.sh, tests/e2e/dp.sh and tests/e2e/run_faults.sh), the hang guards' helpers with it
# (tests/e2e/lib.sh: vt_scale, wait_until).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# e2e_begin NAME BUILD_DIR: B (the build directory), T (a temporary directory, removed at exit),
# the pass/fail counters with ok and bad, HERE (tests/), TRAINER, AUDITOR, TRAINER_TEST
e2e_begin() {
  B=$(cd "$2" && pwd)
  T=$(mktemp -d "/tmp/vt-$1.XXXXXX")
  trap 'rm -rf "$T"' EXIT
  pass=0
  fail=0
  HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  TRAINER="$B/trainer"
  AUDITOR="$B/auditor"
  TRAINER_TEST="$B/trainer-test"
}
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# expect STATUS REASON STEP -- auditor args: `auditor verify` exits STATUS and its report names
# REASON and STEP (either may be empty: not checked).
expect() {
  local want=$1 reason=$2 step=$3; shift 3
  "$AUDITOR" verify "$@" --quiet --report "$T/report.json" >"$T/audit.out" 2>&1
  local st=$?
  if [ "$st" != "$want" ]; then bad "auditor $* -> exit $st, expected $want: $(cat "$T/audit.out")"; return; fi
  if [ -n "$reason" ] && ! grep -q "\"reason\": \"$reason\"" "$T/report.json"; then
    bad "auditor $* -> reason $(grep '"reason"' "$T/report.json"), expected $reason"; return; fi
  if [ -n "$step" ] && ! grep -q "\"step\": $step," "$T/report.json"; then
    bad "auditor $* -> step $(grep '"step"' "$T/report.json"), expected $step"; return; fi
  ok
}
