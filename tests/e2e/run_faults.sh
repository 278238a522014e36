#!/usr/bin/env bash
# run_faults.sh - the run directory under faults (issue 22, findings 1, 2 and 6). Usage: run_faults.sh BUILD_DIR
#
#   1. kill -9 at every write point (docs/format.md "Order of writes") of the run's creation, of the
#      first checkpoint (step 0) and of a later one (step 4), of the last checkpoint, of the finish
#      and of the commitment (trainer-test --kill-at POINT:N, the points read from --fault-trace),
#      then `trainer train --resume`: the commitment and the checkpoint files of an uninterrupted
#      run, byte for byte, and no temporary left;
#   2. a full disk (a small tmpfs, as root; skipped otherwise) at several sizes, each failing at
#      another write: exit 2, then --resume (or a new train where nothing was left) on the enlarged
#      file system gives the same commitment;
#   3. damaged or missing checkpoints: resume falls back to the newest good one and says so, down
#      to step 0 recreated from the recipe;
#   4. a second writer on a run directory in use is refused naming the holder's PID; readers are not;
#   5. readers of run.db as training ends: a reader holding an older snapshot is waited for (then
#      the run is committed with run.db holding everything), or, held past --reader-wait, the trainer
#      exits 2 uncommitted naming it and --resume commits later; an idle reader does not delay the
#      end. Each time a copy of run.db + checkpoints/ + commitment.vtc alone audits VERIFIED.
# No wall time is asserted: processes are ordered by their stopped state and their output.
set -u
. "$(dirname "$0")/lib.sh"
vt_begin run_faults "${1:-}"
HOLD="$B/vt_dbhold"
BG=() # the background processes this script started: killed, if still there, at exit
vt_at_exit() { # before the work folder goes (tests/e2e/lib.sh)
  local p
  for p in "${BG[@]}"; do kill -9 "$p" 2>/dev/null; done
  mountpoint -q "$T/full" 2>/dev/null && umount "$T/full"
}
for f in "$TRAINER" "$TRAINER_TEST" "$AUDITOR" "$HOLD"; do
  [ -x "$f" ] || { echo "missing $f"; exit 1; }
done
SM=(--set dataset=mnist-train --set subset=1000 --set 'layers=[784,32,10]' --set steps=12 --set checkpoint_every=4
    --set state_hash_every=2 --quiet)
train_sm() { "$TRAINER" train --key "$T/key" "${SM[@]}" "$@"; }
train_test() { "$TRAINER_TEST" train --key "$T/key" "${SM[@]}" "$@"; }
# (a process started in the background is the program itself, not a shell function: $! is its PID)

"$TRAINER" keygen "$T/key" >/dev/null || { echo "keygen failed"; exit 1; }
train_sm "$T/ref" >/dev/null || { echo "reference run failed"; exit 1; }
REF_VTC="$T/ref/commitment.vtc"

# same_run DIR WHAT: DIR holds the reference run (commitment and checkpoint files byte for byte),
# no temporary, no run.db-wal with content
same_run() {
  local dir=$1 what=$2
  if ! cmp -s "$REF_VTC" "$dir/commitment.vtc"; then bad "$what: the commitment differs from an uninterrupted run's"; return 1; fi
  local a b
  a=$(cd "$T/ref/checkpoints" && ls) b=$(cd "$dir/checkpoints" && ls)
  if [ "$a" != "$b" ]; then bad "$what: checkpoints [$b], expected [$a]"; return 1; fi
  for f in $a; do cmp -s "$T/ref/checkpoints/$f" "$dir/checkpoints/$f" || { bad "$what: $f differs"; return 1; }; done
  if ls -a "$dir" "$dir/checkpoints" | grep -q '\.tmp'; then bad "$what: temporaries left: $(ls "$dir" "$dir/checkpoints")"; return 1; fi
  if [ -s "$dir/run.db-wal" ]; then bad "$what: run.db-wal is not empty after the end"; return 1; fi
  return 0
}
# resume_same DIR WHAT: `trainer train --resume` reaches the reference run
resume_same() {
  local dir=$1 what=$2
  train_sm "$dir" --resume >"$T/resume.out" 2>&1
  local st=$?
  if [ $st != 0 ]; then bad "$what: resume exit $st: $(cat "$T/resume.out")"; return 1; fi
  same_run "$dir" "$what" || return 1
  ok
}
# verify_copy DIR WHAT: run.db, checkpoints/ and commitment.vtc copied alone audit VERIFIED
verify_copy() {
  local dir=$1 what=$2
  rm -rf "$T/copy"
  mkdir -p "$T/copy" && cp "$dir/run.db" "$dir/commitment.vtc" "$T/copy/" && cp -r "$dir/checkpoints" "$T/copy/" ||
    { bad "$what: copy failed"; return; }
  "$AUDITOR" verify "$T/copy" --pubkey "$T/key.pub" --quiet >"$T/verify.out" 2>&1
  local st=$?
  if [ $st = 0 ] && grep -q '^VERIFIED' "$T/verify.out"; then ok; else bad "$what: the copy of run.db + checkpoints + commitment: exit $st: $(cat "$T/verify.out")"; fi
}
# wait_stopped PID: until PID is stopped (its --pause-at point) - 0 - or has ended - 1
stopped() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ]; }
stopped_or_gone() { stopped "$1" || [ ! -r "/proc/$1/stat" ]; }
wait_stopped() { wait_until 300 stopped_or_gone "$1"; stopped "$1"; }
# wait_line FILE REGEX PID: until FILE has a line matching REGEX (0) or PID has ended without one (1)
wait_line() { wait_until 300 line_or_exit "$1" "$2" "$3"; grep -q -- "$2" "$1" 2>/dev/null; }
# hold DIR txn|idle: a reader of DIR/run.db (vt_dbhold) on fd 7; release with `release`
hold() {
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  "$HOLD" "$1/run.db" "$2" <"$T/fifo" >"$T/hold.out" 2>&1 &
  HOLDER=$!
  BG+=($HOLDER)
  exec 7>"$T/fifo"
  wait_line "$T/hold.out" '^holding' "$HOLDER" || bad "the reader did not start: $(cat "$T/hold.out")"
}
release() { echo >&7; exec 7>&-; wait "$HOLDER"; }

# --- 1. kill -9 at every write point
train_test "$T/trace" --fault-trace >/dev/null 2>"$T/trace.err" || bad "trace run"
cmp -s "$REF_VTC" "$T/trace/commitment.vtc" && ok || bad "the test build's run differs"
# POINT:N for each pass; the checkpoints are passes 1 (step 0), 2 (step 4), 3 (step 8), 4 (step 12)
mapfile -t ALL < <(awk '$1 == "write" && $2 == "point" {print $3 ":" $4}' "$T/trace.err")
echo "write points of a run: ${#ALL[@]} passes of $(printf '%s\n' "${ALL[@]}" | sed 's/:.*//' | sort -u | tr '\n' ' ')"
POINTS=()
for p in "${ALL[@]}"; do
  name=${p%:*} n=${p##*:}
  case "$name" in
    create.* | finish.* | commitment.*) POINTS+=("$p") ;;
    ckpt.*) [ "$n" = 1 ] || [ "$n" = 2 ] || [ "$n" = 4 ] && POINTS+=("$p") ;;     # checkpoints 0, 4 and the last (12)
    step.stored) case "$n" in 1 | 2 | 5 | 6 | 13) POINTS+=("$p") ;; esac ;;   # steps 0, 1, 4, 5, 12
    *) POINTS+=("$p") ;;
  esac
done
for want in create.locked:1 create.db-new:1 create.renamed:1 step.stored:1 ckpt.tmp-created:1 ckpt.tmp-half:1 \
            ckpt.tmp-written:1 ckpt.tmp-synced:1 ckpt.renamed:1 ckpt.dir-synced:1 ckpt.recorded:1 ckpt.recorded:2 \
            step.stored:5 finish.folded:1 commitment.tmp-half:1 commitment.renamed:1 commitment.dir-synced:1; do
  printf '%s\n' "${POINTS[@]}" | grep -qx "$want" && ok || bad "write point $want was not passed"
done
echo "killing at ${#POINTS[@]} of them"
for p in "${POINTS[@]}"; do
  dir="$T/k-${p//[:.]/-}"
  train_test "$dir" --kill-at "$p" >/dev/null 2>"$T/kill.err"
  st=$?
  if [ $st != 137 ]; then bad "--kill-at $p: exit $st, expected 137 (SIGKILL): $(cat "$T/kill.err")"; continue; fi
  resume_same "$dir" "kill -9 at $p" && echo "kill -9 at $p: resumed ($(grep -h '^resume' "$T/resume.out" | tr '\n' ' '))"
  rm -rf "$dir"
done
# a kill during a resume's own writes (truncation, recreated checkpoint 0): resume again
train_test "$T/kr" --kill-at step.stored:1 >/dev/null 2>&1
train_test "$T/kr" --resume --kill-at ckpt.renamed:1 >/dev/null 2>&1; st=$?
[ $st = 137 ] && ok || bad "kill during the resume: exit $st"
resume_same "$T/kr" "kill -9 during a resume's recreation of checkpoint 0"
train_test "$T/kt" --stop-after 10 >/dev/null 2>&1
train_test "$T/kt" --resume --kill-at truncate.recorded:1 >/dev/null 2>&1; st=$?
[ $st = 137 ] && ok || bad "kill during the resume's truncation: exit $st"
resume_same "$T/kt" "kill -9 between a truncation's records and files"

# --- 2. a full disk at several sizes (root: a tmpfs)
FULL="$T/full"
mkdir -p "$FULL"
if mount -t tmpfs -o size=64m tmpfs "$FULL" 2>/dev/null; then
  declare -A seen=()
  for size in 4k 24k 64k 128k 200k 300k 420k 520k 620k; do
    rm -rf "$FULL/r"
    mount -o remount,size=$size "$FULL" || { bad "remount size=$size"; continue; }
    train_sm "$FULL/r" >"$T/full.out" 2>&1
    st=$?
    mount -o remount,size=64m "$FULL" || { bad "remount size=64m"; break; }
    if [ $st = 0 ]; then
      echo "disk of $size: no failure"
      same_run "$FULL/r" "disk of $size" && ok
      continue
    fi
    msg=$(grep -v -e '^write point' -e ': debug: ' "$T/full.out" | tail -1)
    echo "disk of $size full: exit $st: $msg"
    [ $st = 2 ] && ok || bad "disk of $size full: exit $st, expected 2"
    seen[$(echo "$msg" | sed 's/tmp-[0-9]*-[0-9]*/tmp/')]=1
    if [ -d "$FULL/r" ]; then
      resume_same "$FULL/r" "disk of $size full, then --resume"
    else # the creation failed and removed what it had made: a new train
      train_sm "$FULL/r" >/dev/null 2>&1 && same_run "$FULL/r" "disk of $size full, then a new train" && ok
    fi
    verify_copy "$FULL/r" "disk of $size"
  done
  [ ${#seen[@]} -ge 4 ] && ok || bad "the disk-full sizes failed at only ${#seen[@]} distinct points"
  rm -rf "$FULL/r"
  umount "$FULL"
else
  echo "SKIP: the disk-full cases (cannot mount a tmpfs here: not root?)"
fi

# --- 3. damaged checkpoints: the newest good one, or step 0 from the recipe
train_test "$T/d" --stop-after 10 >/dev/null || bad "interrupted run"
cp -r "$T/d" "$T/d0"
truncate -s 100 "$T/d/checkpoints/ckpt-000000000008.vtck"
train_sm "$T/d" --resume >"$T/resume.out" 2>&1 && same_run "$T/d" "last checkpoint truncated" && ok || bad "resume with checkpoint 8 truncated: $(cat "$T/resume.out")"
grep -q "^resume: checkpoint 8 is unusable" "$T/resume.out" && grep -q "^resume: from checkpoint 4$" "$T/resume.out" && ok ||
  bad "the fallback is not said: $(cat "$T/resume.out")"
rm -rf "$T/d" && cp -r "$T/d0" "$T/d"
printf 'X' | dd of="$T/d/checkpoints/ckpt-000000000008.vtck" bs=1 seek=20000 conv=notrunc 2>/dev/null
rm "$T/d/checkpoints/ckpt-000000000004.vtck"
train_sm "$T/d" --resume >"$T/resume.out" 2>&1 && same_run "$T/d" "checkpoint 8 altered, 4 deleted" && ok || bad "resume with 8 altered, 4 deleted: $(cat "$T/resume.out")"
grep -q "^resume: from checkpoint 0$" "$T/resume.out" && ok || bad "fallback to 0 not said: $(cat "$T/resume.out")"
rm -rf "$T/d" && cp -r "$T/d0" "$T/d"
for f in "$T/d/checkpoints/"*.vtck; do truncate -s 10 "$f"; done
touch "$T/d/checkpoints/ckpt-000000000004.vtck.tmp-99999-0" "$T/d/commitment.vtc.tmp-99999-1"
train_sm "$T/d" --resume >"$T/resume.out" 2>&1 && same_run "$T/d" "every checkpoint damaged" && ok || bad "resume with every checkpoint damaged: $(cat "$T/resume.out")"
grep -q "^resume: no usable checkpoint: step 0 recreated from the recipe" "$T/resume.out" && ok || bad "step 0 recreation not said: $(cat "$T/resume.out")"

# --- 4. a second writer is refused, naming the holder; readers are not
"$TRAINER_TEST" train --key "$T/key" "${SM[@]}" "$T/l" --pause-at step.stored:6 >/dev/null 2>&1 &
pid=$!
BG+=($pid)
if wait_stopped $pid; then
  train_sm "$T/l" --resume >"$T/second.out" 2>&1
  st=$?
  [ $st = 2 ] && grep -q "is in use by another trainer (pid $pid," "$T/second.out" && ok ||
    bad "a second writer: exit $st: $(cat "$T/second.out")"
  train_sm "$T/l" >"$T/second.out" 2>&1
  st=$?
  [ $st = 64 ] && grep -q "it holds a run (run.db): continue that run with .trainer train --resume" "$T/second.out" && ok ||
    bad "a new train over a run: exit $st: $(cat "$T/second.out")"
  [ "$(cat "$T/l/run.lock")" = "$pid" ] && ok || bad "run.lock holds '$(cat "$T/l/run.lock")', not $pid"
  hold "$T/l" txn # a reader is not refused
  grep -q '^holding [0-9]' "$T/hold.out" && ok || bad "a reader of a locked run: $(cat "$T/hold.out")"
  release
  kill -CONT $pid
  wait $pid
  st=$?
  [ $st = 0 ] && same_run "$T/l" "the first writer, after the refused second" && ok || bad "the first writer: exit $st"
else
  bad "the paused trainer did not stop"
  kill -9 $pid 2>/dev/null
fi
train_sm "$T/l" --resume >"$T/second.out" 2>&1 && grep -q "already finished" "$T/second.out" && ok || bad "the lock was not released: $(cat "$T/second.out")"

# --- 5. readers of run.db as training ends
# reader_case NAME MODE WAIT_ARGS...: an interrupted run resumed; paused after its 3rd stored step
# (so the reader's snapshot is of the WAL), the reader (MODE) starts, then the trainer goes on
reader_case() {
  local dir="$T/$1" mode=$2; shift 2
  train_test "$dir" --stop-after 6 >/dev/null || { bad "$dir: interrupted run"; return 1; }
  "$TRAINER_TEST" train --key "$T/key" "${SM[@]}" "$dir" --resume --pause-at step.stored:3 "$@" \
    >"$T/rd.out" 2>"$T/rd.err" &
  RPID=$!
  BG+=($RPID)
  wait_stopped $RPID || { bad "$dir: the resumed trainer did not stop"; return 1; }
  hold "$dir" "$mode"
  kill -CONT $RPID
}
# (a) an older snapshot held, released while the trainer waits: committed, run.db holds everything
# (the trainer's wait, 60 s by default, is raised: the test releases the reader once the trainer says
# it waits, which a loaded machine may take long to do)
if reader_case ra txn --reader-wait "$(vt_scale 600)"; then
  wait_line "$T/rd.err" 'waiting up to [0-9]* s for a reader of an older snapshot (pid [0-9]' $RPID && ok ||
    bad "(a) the trainer did not say it waits: $(cat "$T/rd.err")"
  grep -q "pid $HOLDER" "$T/rd.err" && ok || bad "(a) the waiting line does not name the reader's pid $HOLDER: $(cat "$T/rd.err")"
  release
  wait $RPID
  st=$?
  [ $st = 0 ] && same_run "$T/ra" "(a) reader released" && ok || bad "(a) exit $st: $(cat "$T/rd.err")"
  verify_copy "$T/ra" "(a) reader released during the wait"
fi
# (b) held past --reader-wait 1: exit 2, nothing committed, the reader named; --resume commits later
if reader_case rb txn --reader-wait 1; then
  wait $RPID
  st=$?
  [ $st = 2 ] && grep -q "is not self-contained: .* (a reader of the run: pid $HOLDER) kept an older snapshot open for 1 s; the run is not committed" "$T/rd.err" &&
    ok || bad "(b) exit $st: $(cat "$T/rd.err")"
  [ ! -e "$T/rb/commitment.vtc" ] && ok || bad "(b) a commitment was written while run.db was not self-contained"
  release
  resume_same "$T/rb" "(b) --resume after the reader let go"
  verify_copy "$T/rb" "(b) committed by --resume"
fi
# (c) an idle reader (a connection, no transaction) does not delay the end
if reader_case rc idle; then
  wait $RPID
  st=$?
  [ $st = 0 ] && ! grep -q waiting "$T/rd.err" && ok || bad "(c) exit $st: $(cat "$T/rd.err")"
  verify_copy "$T/rc" "(c) an idle reader at the end" # run.db may stay in WAL mode: complete all the same
  release
  same_run "$T/rc" "(c) idle reader" && ok
fi

vt_end
