# game_lib.sh - what the dispute game's test scripts share (tests/e2e/game_faults.sh, tests/e2e/game_round3.sh;
# sourced, with B set to the build directory): the hang guards of tests/e2e/lib.sh, a work folder T
# removed on exit (kept with VT_FAULTS_KEEP=1), ok/bad counters, keys tk (trainer), rk (arbiter), ak
# and ak1..ak6 (auditors), and the servers and games:
#   start_arbiter DIR [args]            arbiter serve, transcripts in DIR/tr; sets APID, APORT
#   start_trainer DIR RUN [args]        trainer-test serve of $T/RUN (LISTEN overrides 127.0.0.1:0);
#                                       the record in DIR/service.vtsr; sets TPID, TPORT
#   challenge DIR RUN KEY OUT [args]    auditor-test challenge (the record ${SERVICE:-DIR/service.vtsr},
#                                       the arbiter at ${AADDR:-127.0.0.1:$APORT}); its exit status
#   verdict OUT EXIT LOSER REASON STEP OP   the auditor's exit status and verdict line
#   rederive DIR [WANT]                 every transcript of DIR/tr re-derives (its line WANT, when given)
#   dl MS                               a deadline an honest party must meet (scaled: a hang guard)
#   arbiter_done, stop PID..., ntranscripts DIR, train NAME ARGS...
# No helper measures wall time; every wait is a hang guard.
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$SRC/tests/e2e/lib.sh"
T=$(mktemp -d /tmp/vt-game.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  if [ "${VT_FAULTS_KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
SLOW=1; [ "${VT_ASAN:-0}" = 1 ] && SLOW=4
dl() { vt_scale $(($1 * SLOW)); }

for k in tk rk ak ak1 ak2 ak3 ak4 ak5 ak6; do "$B/trainer" keygen "$T/$k" >/dev/null || { echo "keygen failed"; exit 1; }; done

wait_file() { # FILE PID LOG: a server's port file (written atomically); 300 s at most (a hang guard)
  wait_until 300 file_or_exit "$1" "$2"
  [ -s "$1" ] && return 0
  echo "server $2: no port file: $(tail -3 "$3")" >&2
  return 1
}
start_arbiter() {
  local d=$1; shift
  mkdir -p "$d/tr"; rm -f "$d/ap"
  "$B/arbiter" serve --listen 127.0.0.1:0 --key "$T/rk" --port-file "$d/ap" --transcripts "$d/tr" "$@" \
    >"$d/arbiter.log" 2>&1 &
  APID=$!
  PIDS+=("$APID")
  wait_file "$d/ap" "$APID" "$d/arbiter.log" || return 1
  APORT=$(cat "$d/ap")
}
start_trainer() {
  local d=$1 run=$2; shift 2
  rm -f "$d/tp"
  "$B/trainer-test" serve "$T/$run" --listen "${LISTEN:-127.0.0.1:0}" --key "$T/tk" --arbiter-key "$T/rk.pub" \
    --port-file "$d/tp" --service-file "$d/service.vtsr" "$@" >"$d/trainer.log" 2>&1 &
  TPID=$!
  PIDS+=("$TPID")
  wait_file "$d/tp" "$TPID" "$d/trainer.log" || return 1
  TPORT=$(cat "$d/tp")
}
challenge() {
  local d=$1 run=$2 key=$3 out=$4; shift 4
  timeout "$(vt_scale $((900 * SLOW)))" "$B/auditor-test" challenge "$T/$run" --service "${SERVICE:-$d/service.vtsr}" \
    --arbiter "${AADDR:-127.0.0.1:$APORT}" --key "$key" --arbiter-key "$T/rk.pub" "$@" >"$out" 2>&1
}
verdict() {
  local out=$1 st=$2 loser=$3 reason=$4 step=$5 op=$6 want=0
  [ "$loser" = auditor ] && want=1
  [ "$st" = "$want" ] || { echo "exit $st, expected $want: $(tail -4 "$out")"; return 1; }
  grep -q "against the $loser ($reason) at step $step, operation $op\$" "$out" || { echo "verdict: $(grep -m1 VERDICT "$out")"; return 1; }
}
rederive() {
  local tr n=0
  for tr in "$1"/tr/*.vttr; do
    [ -e "$tr" ] || continue
    n=$((n + 1))
    "$B/arbiter" check "$tr" >"$tr.check" 2>&1 && grep -q "^RE-DERIVED" "$tr.check" ||
      { echo "arbiter check $tr: $(cat "$tr.check")"; return 1; }
    [ -z "${2:-}" ] || grep -q "^RE-DERIVED: $2" "$tr.check" || { echo "arbiter check $tr: $(cat "$tr.check")"; return 1; }
  done
  [ "$n" -gt 0 ] || { echo "no transcript"; return 1; }
}
ntranscripts() { ls "$1"/tr/*.vttr 2>/dev/null | wc -l; }
stop() { for p in "$@"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
# arbiter_done: the arbiter (--games N) exits by itself once its verdicts and transcripts are out;
# 120 s at most (a hang guard: an auditor that never challenged leaves it waiting)
arbiter_done() {
  wait_until $((120 * SLOW)) exited "$APID"
  stop "$APID"
}
train() { "$B/trainer-test" train --run "$T/$1" --key "$T/tk" "${@:2}" >/dev/null 2>"$T/$1.train.log" ||
  { bad "train $1: $(tail -2 "$T/$1.train.log")"; return 1; }; }
