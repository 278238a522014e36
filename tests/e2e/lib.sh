# tests/e2e/lib.sh - the one library of the end-to-end scripts (every tests/e2e/*.sh sources it:
# `. "$(dirname "$0")/lib.sh"`). What it offers, one line each:
#
#   paths (set when sourced)
#     SRC RECIPES REF DATA          the project's root, its recipes/, the Python references tests/ref/, data/
#   hang guards
#     vt_scale N                    N (seconds or milliseconds) times VT_TEST_TIMEOUT_SCALE, rounded up
#     wait_until S COMMAND...       runs COMMAND every 0.05 s until it succeeds or S seconds (scaled) pass
#     file_or_exit FILE PID         FILE is non-empty, or PID has ended (for wait_until)
#     line_or_exit FILE REGEX PID   FILE has a line matching REGEX, or PID has ended (for wait_until)
#     exited PID                    PID has ended (for wait_until)
#     dl MS                         a deadline an honest party must meet: MS scaled, times SLOW (4 under ASan)
#   a script's frame
#     vt_begin NAME BUILD_DIR [KEY...]  B, T (a work folder removed at exit), PIDS (killed at exit), pass/fail,
#                                   the keys $T/KEY (exit 1 when one cannot be made),
#                                   a script's own vt_at_exit run first at exit when it defines one,
#                                   TRAINER AUDITOR ARBITER TRAINER_TEST AUDITOR_TEST (the programs in B)
#     ok [WHAT]                     counts a pass ("ok: WHAT" printed when WHAT is given)
#     bad WHAT                      counts a failure, "FAIL: WHAT" on stderr
#     vt_end                        "NAME: P passed, F failed"; exits 0 when nothing failed, else 1
#     keys NAME...                  `trainer keygen $T/NAME` for each NAME (exit 1 when one fails)
#     find_python IMPORTS           prints the first python3 that runs IMPORTS (e.g. "import torch"); 1 if none
#   MPI
#     mpi_begin MPIEXEC [SECONDS]   MPIRUN; skipped (77) when MPIEXEC is empty; Open MPI as root, oversubscribed
#     mpi NP ARGS...                MPIRUN -np NP ARGS under a hang guard (MPI_GUARD seconds, default 600)
#   runs and audits
#     train NAME ARGS...            trainer-test train $T/NAME --key $T/tk ARGS... (bad on failure)
#     expect STATUS REASON STEP -- ARGS...  auditor verify ARGS exits STATUS naming REASON and STEP
#     dp_recipes                    COMMON, MLP, CNN, GPT: the data-parallel scripts' small runs (batch 12, 6 steps)
#     export_recipes                MLP, CNN: the export checks' runs (2000 examples, 60 steps); trains $T/mlp
#     refuse STATUS TEXT -- ARGS    trainer export ARGS --out $REFUSED exits STATUS naming TEXT, writes nothing
#     modes_verified ARGS...        runs $T/exact and $T/log of ARGS (key $T/key), each VERIFIED in every order
#   servers and games
#     wait_file FILE PID [LOG]      a server's port file (written atomically); 300 s at most (scaled)
#     server_up WHO PID FILE LOG    PID joins PIDS and its port file FILE is waited for (START_EXIT=1: exit if not)
#     start_arbiter DIR [ARGS]      arbiter serve (key ARB_KEY, default $T/rk), transcripts in DIR/tr; APID, APORT
#     start_trainer DIR RUN [ARGS]  trainer-test serve of RUN ($T/RUN unless absolute), record DIR/service.vtsr;
#                                   TPID, TPORT (LISTEN overrides 127.0.0.1:0)
#     challenge DIR RUN KEY OUT [ARGS]  auditor-test challenge of $T/RUN against the servers; its exit status
#     verdict OUT EXIT LOSER REASON STEP OP  the auditor's exit status and verdict line are these
#     rederive DIR [WANT]           every transcript of DIR/tr re-derives (with the line WANT when given)
#     ntranscripts DIR              how many transcripts DIR/tr holds
#     stop PID...                   kills and reaps each PID
#     arbiter_done                  waits for an arbiter serving --games N to exit by itself (120 s at most)
#     dispute_game NAME RUN LOSER REASON STEP OP [SERVE-ARGS] [-- CHALLENGE-ARGS]  one game on fresh
#                                   servers, its verdict checked and its transcript re-derived
#   certificates
#     cert_begin NAME BUILD_DIR     vt_begin, A (the auditor), keys $T/k (trainer), $T/a and $T/other (auditors)
#     cert_train_mlp RUN            a digits MLP 64-24-24-10, 200 steps (exit 1 when training fails)
#     cert_train_cnn RUN            a tiny residual CNN on the digits, 150 steps (exit 1 when training fails)
#     cert_onnx_or_skip NET PROP    exit 77 when this auditor has no ONNX support, 1 when certify --onnx fails
#     cert_onepass CERT KEY WHAT MESSAGE "CHECK-ARGS" EDIT...  an edited, re-signed certificate is rejected
#     cert_slopes_tampered CERT KEY "CHECK-ARGS" EX  moved, 1.5 and NaN slopes are rejected
#     cert_end                      "NAME: all passed" when nothing failed; exits 0 or 1
#
# Environment: VT_TEST_TIMEOUT_SCALE (every hang guard), VT_ASAN=1 (SLOW=4), VT_KEEP=1 (keep the work
# folder T; VT_FAULTS_KEEP, VT_VERDICT_KEEP and VT_ATTACK_KEEP as well).
#
# A fixed number of seconds in a test is a hang guard, never a measurement: a wait for a file or a
# log line, a `timeout` around a program, a server's deadline for an honest party's answer. Each
# is far longer than the quiet machine needs, and VT_TEST_TIMEOUT_SCALE (a positive number,
# default 1) multiplies them all for a slower or busier machine: ctest reads it at configure time
# for every test's TIMEOUT and passes the same value to the tests in their environment
# (vt_test_timeout, tests/tests.cmake); a script run by hand reads it from its own environment.
# What a test asserts never depends on which of two times runs out first: the order of events
# comes from files and log lines (wait_until), never from a sleep.
VT_SCALE=${VT_TEST_TIMEOUT_SCALE:-1}
if ! awk -v s="$VT_SCALE" 'BEGIN { exit !(s ~ /^[0-9]+(\.[0-9]*)?$/ && s + 0 >= 0.001 && s + 0 <= 10000) }'; then
  echo "VT_TEST_TIMEOUT_SCALE=$VT_SCALE: expected a number from 0.001 to 10000" >&2
  exit 2
fi
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RECIPES=$SRC/recipes
REF=$SRC/tests/ref
DATA=$SRC/data

# ---- hang guards

vt_scale() { awk -v s="$VT_SCALE" -v n="$1" 'BEGIN { v = n * s; r = int(v); if (r < v) r++; print r }'; }

# wait_until SECONDS COMMAND...: a hang guard, COMMAND names the event waited for; 0 when it
# happened, 1 when SECONDS (scaled) passed and a last try failed
wait_until() {
  local end=$((SECONDS + $(vt_scale "$1")))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || { "$@"; return; }
    sleep 0.05
  done
}
file_or_exit() { [ -s "$1" ] || ! kill -0 "$2" 2>/dev/null; }
line_or_exit() { grep -q -- "$2" "$1" 2>/dev/null || ! kill -0 "$3" 2>/dev/null; }
exited() { ! kill -0 "$1" 2>/dev/null; }
SLOW=1; [ "${VT_ASAN:-0}" = 1 ] && SLOW=4
dl() { vt_scale $(($1 * SLOW)); }

# ---- a script's frame

vt_begin() {
  VT_NAME=$1
  [ -n "${2:-}" ] || { echo "usage: $1.sh BUILD_DIR" >&2; exit 2; }
  B=$(cd "$2" && pwd) || exit 1
  T=$(mktemp -d "/tmp/vt-$1.XXXXXX")
  PIDS=()
  trap vt_cleanup EXIT
  pass=0
  fail=0
  TRAINER="$B/trainer"
  AUDITOR="$B/auditor"
  ARBITER="$B/arbiter"
  TRAINER_TEST="$B/trainer-test"
  AUDITOR_TEST="$B/auditor-test"
  shift 2
  keys "$@"
}
vt_cleanup() {
  local p
  ! declare -F vt_at_exit >/dev/null || vt_at_exit
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] || continue
    kill -CONT "$p" 2>/dev/null
    kill "$p" 2>/dev/null
  done
  if [ "${VT_KEEP:-0}${VT_FAULTS_KEEP:-0}" != 00 ] || [ -n "${VT_VERDICT_KEEP:-}${VT_ATTACK_KEEP:-}" ]; then
    echo "kept $T" >&2
  else
    rm -rf "$T"
  fi
}
ok() { pass=$((pass + 1)); [ $# -eq 0 ] || echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
vt_end() {
  echo "$VT_NAME: $pass passed, $fail failed"
  [ "$fail" = 0 ] && exit 0
  exit 1
}
keys() {
  local k
  for k in "$@"; do "$B/trainer" keygen "$T/$k" >/dev/null || { echo "$VT_NAME: keygen $k failed"; exit 1; }; done
}

find_python() {
  local p
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c "$1" 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

# ---- MPI

mpi_begin() {
  MPIRUN=$1
  MPI_GUARD=${2:-600}
  if [ -z "$MPIRUN" ]; then echo "$VT_NAME: this build has no MPI (VT_MPI): skipped"; exit 77; fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
}
# mpi NP ARGS...: a hang guard only (never a timing assertion): a run that stopped waiting for a dead
# rank fails here
mpi() {
  local np=$1; shift
  timeout -k 10 "$(vt_scale "${MPI_GUARD:-600}")" "$MPIRUN" --oversubscribe --allow-run-as-root -np "$np" "$@"
}

# ---- runs and audits

train() { "$B/trainer-test" train "$T/$1" --key "$T/tk" "${@:2}" >/dev/null 2>"$T/$1.train.log" ||
  { bad "train $1: $(tail -2 "$T/$1.train.log")"; return 1; }; }

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

# dp_recipes: small recipes, batch 12 (a multiple of 1, 2, 3 and 4), every other state committed
dp_recipes() {
  COMMON=(--set batch=12 --set steps=6 --set state_hash_every=2 --set checkpoint_every=4)
  MLP=("${COMMON[@]}" --set subset=240)
  CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=120 --set resnet_width=4 --set resnet_stages=2
       --set decay_every=3 "${COMMON[@]}")
  GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32 --set gpt_context=16
       --set warmup=2 --set dropout=0.1 "${COMMON[@]}")
}
# export_recipes: runs long enough to learn something the exported model is checked against
export_recipes() {
  MLP=(--set dataset=mnist-train --set subset=2000 --set "layers=[784,32,10]" --set batch=32 --set steps=60
       --set checkpoint_every=30)
  CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=2000 --set resnet_width=4 --set resnet_stages=2
       --set batch=32 --set steps=60 --set checkpoint_every=30 --set decay_every=30)
  "$TRAINER" train "$T/mlp" --key "$T/key" "${MLP[@]}" --quiet >/dev/null || bad "train mlp"
}
# refuse STATUS TEXT -- EXPORT-ARGS: `trainer export EXPORT-ARGS --out $REFUSED` (default $T/refused)
# exits STATUS, its output names TEXT, and nothing is written
refuse() {
  local want=$1 text=$2 out=${REFUSED:-$T/refused}; shift 3
  rm -f "$out"
  "$TRAINER" export "$@" --out "$out" >"$T/refuse.out" 2>&1
  local st=$?
  if [ $st -ne "$want" ] || ! grep -q -- "$text" "$T/refuse.out" || [ -e "$out" ]; then
    bad "export $* -> exit $st (expected $want, \"$text\"; file written: $([ -e "$out" ] && echo yes || echo no)): $(cat "$T/refuse.out")"
  else ok; fi
}
# modes_verified ARGS...: ORDERS, every evaluation order (VT_QUICK: three of them); a run of ARGS in
# each rounding mode ($T/exact, $T/log, the key $T/key), each audited VERIFIED in every order
modes_verified() {
  local mode order
  ORDERS=(blas forward reverse pairwise permuted sorted split)
  [ -n "${VT_QUICK:-}" ] && ORDERS=(blas split pairwise)
  for mode in exact log; do
    "$TRAINER" train "$T/$mode" --key "$T/key" "$@" --set rounding=$mode --quiet >"$T/train-$mode.out" ||
      bad "train ($mode): $(cat "$T/train-$mode.out")"
    for order in "${ORDERS[@]}"; do expect 0 verified "" "$T/$mode" --order "$order"; done
  done
}

# ---- servers and games. No helper measures wall time; every wait is a hang guard.

# wait_file FILE PID [LOG]: `trainer serve` loads and hashes the data set before it listens, which
# can take long under a sanitizer on a loaded machine: the ceiling is generous, and the wait ends at
# once, showing the log, if the server has exited.
wait_file() {
  wait_until 300 file_or_exit "$1" "$2"
  [ -s "$1" ] && return 0
  echo "server (pid $2): no $1: $(tail -5 "${3:-/dev/null}" 2>/dev/null)" >&2
  return 1
}
# server_up WHO PID PORTFILE LOG: PID joins PIDS, its port file is waited for; a server that does not
# start stops the script when START_EXIT=1 (else 1)
server_up() {
  PIDS+=("$2")
  wait_file "$3" "$2" "$4" && return 0
  echo "$1 did not start" >&2
  [ -z "${START_EXIT:-}" ] || exit 1
  return 1
}
# start_arbiter DIR [args]: ARB_ARGS (an array) go before args; PRE_ARB prefixes the command;
# LOG_APPEND=1 appends to DIR/arbiter.log; START_EXIT=1 exits the script when the server does not start
start_arbiter() {
  local d=$1; shift
  mkdir -p "$d/tr"; rm -f "$d/ap"
  [ -n "${LOG_APPEND:-}" ] || : >"$d/arbiter.log"
  ${PRE_ARB:-} "$B/arbiter" serve --listen 127.0.0.1:0 --key "${ARB_KEY:-$T/rk}" --port-file "$d/ap" \
    --transcripts "$d/tr" ${ARB_ARGS[@]+"${ARB_ARGS[@]}"} "$@" >>"$d/arbiter.log" 2>&1 &
  APID=$!
  server_up arbiter "$APID" "$d/ap" "$d/arbiter.log" || return 1
  APORT=$(cat "$d/ap")
}
# start_trainer DIR RUN [args]: PRE_TR prefixes the command; LOG_APPEND, START_EXIT as start_arbiter
start_trainer() {
  local d=$1 run=$2; shift 2
  case $run in /*) ;; *) run=$T/$run ;; esac
  rm -f "$d/tp"
  [ -n "${LOG_APPEND:-}" ] || : >"$d/trainer.log"
  ${PRE_TR:-} "$B/trainer-test" serve "$run" --listen "${LISTEN:-127.0.0.1:0}" --key "$T/tk" --arbiter-key "$T/rk.pub" \
    --port-file "$d/tp" --service "$d/service.vtsr" "$@" >>"$d/trainer.log" 2>&1 &
  TPID=$!
  server_up trainer "$TPID" "$d/tp" "$d/trainer.log" || return 1
  TPORT=$(cat "$d/tp")
}
# challenge DIR RUN KEY OUT [args]: the record ${SERVICE:-DIR/service.vtsr}, the arbiter at
# ${AADDR:-127.0.0.1:$APORT}
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
stop() { local p; for p in "$@"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
# arbiter_done: an auditor that never challenged would leave the arbiter waiting: 120 s at most
arbiter_done() {
  wait_until $((120 * SLOW)) exited "$APID"
  stop "$APID"
}

# dispute_game NAME RUN EXPECT_LOSER(trainer|auditor) REASON STEP OP [serve args...] [-- challenge args...]:
# an arbiter (--games 1) and a trainer server of $T/RUN started for this game alone, the game played
# from `auditor challenge` with the key $T/ak, the verdict checked (who lost, why, at which step and
# operation: STEP or OP empty is not checked) and its transcript re-derived with `arbiter check`.
# Environment: DEADLINE the arbiter's --deadline-ms; ARB_ORDER its --order (default reverse); WHY a
# text the verdict must contain; ARUN the auditor's run; GARBAGE=1 junk to the trainer's port first.
dispute_game() {
  local name=$1 run=$2 loser=$3 reason=$4 step=$5 op=$6; shift 6
  local sargs=() cargs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do sargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  cargs=("$@")
  local d="$T/g-$name"; mkdir -p "$d"
  "$B/arbiter" serve --listen 127.0.0.1:0 --key "$T/rk" --games 1 --port-file "$d/ap" --transcripts "$d" \
    --deadline-ms "${DEADLINE:-$(dl 20000)}" --order "${ARB_ORDER:-reverse}" >"$d/arbiter.log" 2>&1 &
  local apid=$!
  "$B/trainer-test" serve "$T/$run" --listen 127.0.0.1:0 --key "$T/tk" --arbiter-key "$T/rk.pub" --connections 3 \
    --port-file "$d/tp" --service "$d/service.vtsr" --idle-ms 20000 \
    ${sargs[@]+"${sargs[@]}"} --quiet >"$d/trainer.log" 2>&1 &
  local tpid=$!
  PIDS+=("$apid" "$tpid")
  if ! wait_file "$d/ap" "$apid" "$d/arbiter.log" || ! wait_file "$d/tp" "$tpid" "$d/trainer.log"; then
    bad "$name: servers did not start"; return; fi
  [ -n "${GARBAGE:-}" ] && { head -c 4000 /dev/urandom >/dev/tcp/127.0.0.1/"$(cat "$d/tp")"; } 2>/dev/null
  timeout "$(vt_scale 300)" "$B/auditor-test" challenge "$T/${ARUN:-$run}" --service "$d/service.vtsr" --arbiter 127.0.0.1:"$(cat "$d/ap")" \
    --key "$T/ak" --arbiter-key "$T/rk.pub" --quiet ${cargs[@]+"${cargs[@]}"} >"$d/challenge.out" 2>&1
  local st=$?
  # the arbiter (--games 1) exits by itself once the verdict and the transcript are out: give it
  # time (it returns as soon as it is done) rather than killing it mid-write on a slow machine
  wait_until 60 exited "$apid"
  stop "$apid" "$tpid"
  local want=0; [ "$loser" = auditor ] && want=1
  local out; out=$(cat "$d/challenge.out")
  if [ "$st" != "$want" ]; then bad "$name: auditor challenge exit $st, expected $want: $out $(tail -3 "$d/arbiter.log")"; return; fi
  echo "$out" | grep -q "against the $loser ($reason)" || { bad "$name: verdict: $out"; return; }
  [ -z "$step" ] || echo "$out" | grep -q "at step $step," || { bad "$name: wrong step: $out"; return; }
  [ -z "$op" ] || echo "$out" | grep -q "operation $op\$" || { bad "$name: wrong operation: $out"; return; }
  [ -z "${WHY:-}" ] || echo "$out" | grep -q "$WHY" || { bad "$name: not decided by \"$WHY\": $out"; return; }
  ok
  echo "$name: $(echo "$out" | head -1)"
  local tr; tr=$(ls "$d"/game-*.vttr 2>/dev/null | head -1)
  if [ -z "$tr" ]; then bad "$name: no transcript"; return; fi
  if "$B/arbiter" check "$tr" >"$d/check.out" 2>&1 && grep -q "^RE-DERIVED" "$d/check.out"; then ok; else
    bad "$name: arbiter check: $(cat "$d/check.out")"; fi
}

# ---- certificates (tests/e2e/cert*.sh)

cert_begin() {
  set -u
  vt_begin "$@"
  A="$B/auditor"
  "$B/trainer" keygen "$T/k" >/dev/null && "$A" keygen "$T/a" >/dev/null && "$A" keygen "$T/other" >/dev/null ||
    { echo "$1: keygen failed"; exit 1; }
}
cert_train_mlp() {
  "$B/trainer" train "$1" --key "$T/k" --set dataset=digits --set 'layers=[64,24,24,10]' --set steps=200 \
    --set batch=32 --quiet >/dev/null || { echo "$VT_NAME: training $1 failed"; exit 1; }
}
# the digits (8x8x1), width 4, two stages
cert_train_cnn() {
  "$B/trainer" train "$1" --key "$T/k" --recipe "$RECIPES/resnet-cifar10.json" --set dataset=digits \
    --set 'layers=[64,10]' --set image_channels=1 --set image_height=8 --set image_width=8 --set resnet_width=4 \
    --set resnet_stages=2 --set batch=32 --set steps=150 --set decay_every=1000 --set augment_pad=0 \
    --set augment_flip=0 --quiet >/dev/null || { echo "$VT_NAME: training $1 failed"; exit 1; }
}
# cert_onnx_or_skip NET PROP: the auditor's refusal is checked before the skip
cert_onnx_or_skip() {
  "$A" certify --onnx "$1" --vnnlib "$2" >"$T/probe" 2>&1
  local st=$?
  if [ $st -eq 2 ] && grep -q "without ONNX support" "$T/probe"; then
    echo "$VT_NAME: this auditor has no ONNX support (its refusal checked): skipped"
    exit 77
  fi
  [ $st -eq 0 ] || { echo "FAIL: certify --onnx: exit $st: $(cat "$T/probe")"; exit 1; }
}
# cert_bab_onnx_prop RUN E: the run exported to $T/net.onnx, its first 40 examples' balls of radius E as
# properties in $T/p; P := the first one beta-crown answers unsat on the file with a split tree of more
# than one node (empty, and a failure counted: none). Returns 1 when the auditor has no ONNX support.
cert_bab_onnx_prop() {
  P=""
  mkdir -p "$T/p"
  "$A" certify "$1" --eps "$2" --examples 40 --write-vnnlib "$T/p" --quiet >/dev/null || bad "write-vnnlib"
  "$B/trainer" export "$1" --format onnx --out "$T/net.onnx" --pubkey "$T/k.pub" >/dev/null 2>&1
  "$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_0.vnnlib" --quiet >/dev/null 2>&1 || return 1
  local i b
  for ((i = 0; i < 40; i++)); do
    b=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_$i.vnnlib" --method beta-crown --report "$T/pr.json" --quiet)
    if [ "$b" = unsat ] && python3 -c "import json; assert json.load(open('$T/pr.json'))['tree_nodes'] > 1" 2>/dev/null; then
      P="$T/p/prop_$i.vnnlib"
      return 0
    fi
  done
  bad "no property closed by branch and bound"
}
cert_end() {
  [ "$fail" -eq 0 ] && { echo "$VT_NAME: all passed"; exit 0; }
  exit 1
}
# cert_onepass CERT KEY WHAT MESSAGE "CHECK-ARGS" EDIT...: the one-pass check (docs/certify.md "The
# certificate") rejects CERT altered by tests/ref/cert_edit.py EDIT... and signed again with KEY (the
# auditor's, so only its contents can be at fault): check-certificate with CHECK-ARGS (word-split)
# exits 2 naming MESSAGE (a grep pattern).
cert_onepass() {
  local cert=$1 key=$2 what=$3 msg=$4 args=$5
  shift 5
  cp "$cert" "$T/onepass"
  python3 "$REF/cert_edit.py" "$T/onepass" "$@" >/dev/null || { bad "$what: edit"; return; }
  "$B/vt_cert_resign" "$T/onepass" "$key" || { bad "$what: re-sign"; return; }
  # shellcheck disable=SC2086
  "$B/auditor" check-certificate "$T/onepass" $args >/dev/null 2>"$T/onepass.err"
  local st=$?
  [ $st -eq 2 ] && grep -q -- "$msg" "$T/onepass.err" || bad "$what: exit $st, $(cat "$T/onepass.err")"
}
# cert_slopes_tampered CERT KEY "CHECK-ARGS" EX: CERT's slopes of example EX ('-': a property's)
# moved inside [0, 1] (every one strictly inside set to 0) and one set to 1.5 and NaN: all rejected
cert_slopes_tampered() {
  local cert=$1 key=$2 args=$3 ex=$4
  cert_onepass "$cert" "$key" "$cert: slopes moved in [0, 1]" "differs from byte\|recorded" "$args" fracslopes "$ex" 0
  cert_onepass "$cert" "$key" "$cert: slope 1.5" "slope 0 is 1.5, outside \[0, 1\]" "$args" slope "$ex" 0 1.5
  cert_onepass "$cert" "$key" "$cert: slope NaN" "slope 0 is nan" "$args" slope "$ex" 0 nan
}
