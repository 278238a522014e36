# e2e_lib.sh - what the end-to-end scripts share (sourced by tests/e2e.sh and tests/e2e_cnn.sh;
# they define ok, bad, $AUDITOR and $T).
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
