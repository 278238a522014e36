#!/usr/bin/env bash
# Verdicts bound to their parties and game, and fresh service records (issue 21, findings 3, 5, 9;
# docs/dispute.md "Verdict", "Fresh service records", "Offline check"), with real processes on
# loopback. Usage: verdict.sh BUILD_DIR (VT_VERDICT_KEEP=1 keeps the work folder). No case measures
# wall time.
#  1. an auditor's own arbiter (a key the trainer's record does not name): the challenge is refused
#     with nothing dialled; the auditor refuses it itself, pinned or not;
#  2. a rogue arbiter's game against the trainer (the trainer answers ERROR unauthorized): `arbiter
#     check` refuses it (the trainer never accepted that arbiter);
#  3. a genuine transcript: re-derived, its arbiter key printed and checked against --arbiter-key;
#     re-signed by another key (keeping or renaming the verdict's arbiter): refused;
#  4. a fake arbiter: another key (the pin refuses it), the right key with a verdict of another
#     game (refused, exit 2, never "the auditor lost"); no --arbiter-key: a usage error;
#  5. a stale record: the trainer restarted at the same address with another run, same key, after
#     the auditor's record of the run expired: nobody loses (stale service record), re-derived offline
#     (before it expired: a withdrawal, the trainer loses - tests/e2e/game_round3.sh records);
#  6. a serving trainer re-signs its record before it expires (the test build's short records: the
#     product signs at least 1200 s; expired records in the game: tests/e2e/game_round3.sh records);
#  7. one verdict and nothing after it, and time sanity (issue 37, item 5; docs/dispute.md "Offline
#     check"): the genuine transcript of case 3 with a second VERDICT (contradictory or the same) or a
#     NOTE appended under the arbiter's key, or trailing bytes, is refused; its verdict re-timed (re-signed
#     by the arbiter's key) 3,600 s before the record's signing time is refused, 200 s before or at it
#     re-derives; a game against an unreachable trainer re-derives, and is refused once its NO_ANSWER note
#     ends after the record's expiry.
set -u
. "$(dirname "$0")/lib.sh"
vt_begin verdict "${1:-}" # VT_VERDICT_KEEP=1 (or VT_KEEP=1) keeps the work folder (its transcripts)
keys tk rk ak fk
R=(--set subset=1000 --set 'layers=[784,128,10]' --set steps=12 --set batch=64 --set checkpoint_every=4
   --set state_hash_every=1 --quiet)
"$B/trainer-test" train "$T/run" --key "$T/tk" "${R[@]}" >/dev/null &&
  "$B/trainer-test" train "$T/cheat" --key "$T/tk" "${R[@]}" --cheat lr:7:0.5 >/dev/null &&
  "$B/trainer-test" train "$T/other" --key "$T/tk" "${R[@]}" --set seed=7 >/dev/null ||
  { echo "training failed"; exit 1; }

# the servers (start_arbiter with its key in ARB_KEY, start_trainer: tests/e2e/lib.sh) append to
# their logs and stop the script when they do not start
START_EXIT=1
LOG_APPEND=1
ARB_ARGS=(--deadline-ms "$(dl 20000)" --clock-ms "$(dl 60000)")

# ---------------------------------------------------------------- 1. the auditor's own arbiter
D=$T/own; mkdir -p "$D"
start_trainer "$D" "$T/run"
ARB_KEY="$T/ak" start_arbiter "$D" # the auditor's own key
"$B/vt_attack" challenge 127.0.0.1:"$APORT" "$T/run" "$D/service.vtsr" >"$D/o" 2>&1
grep -q "reply VERDICT loser 2 reason 8: the trainer's service record does not name this arbiter's key" "$D/o" &&
  ok "an arbiter the record does not name refuses the challenge (against the auditor)" || bad "own arbiter: $(cat "$D/o")"
[ "$(ntranscripts "$D")" = 0 ] && ok "nothing played, no transcript" || bad "a transcript was written"
grep -q "is not an arbiter this trainer answers" "$D/trainer.log" && bad "the arbiter dialled the trainer" ||
  ok "the trainer was never dialled"
"$B/auditor-test" challenge "$T/run" --service "$D/service.vtsr" --arbiter 127.0.0.1:"$APORT" --key "$T/ak" \
  --arbiter-key "$T/ak.pub" --lie 9:3 --quiet >"$D/o" 2>&1; st=$?
[ $st = 2 ] && grep -q "does not name the arbiter key" "$D/o" && ok "the auditor refuses to pin an arbiter the record does not name" ||
  bad "pinned own arbiter: exit $st $(cat "$D/o")"
"$B/auditor-test" challenge "$T/run" --service "$D/service.vtsr" --arbiter 127.0.0.1:"$APORT" --key "$T/ak" \
  --no-pin-arbiter --lie 9:3 --quiet >"$D/o" 2>&1; st=$?
[ $st = 2 ] && grep -q "which the trainer's service record does not name" "$D/o" &&
  ok "unpinned, the auditor refuses an arbiter the record does not name" || bad "unpinned own arbiter: exit $st $(cat "$D/o")"

# ---------------------------------------------------------------- 2. a rogue arbiter's game
"$B/vt_rogue" rogue-game 127.0.0.1:"$TPORT" "$T/run" "$D/service.vtsr" "$T/ak" "$D/rogue.vttr" >"$D/r" 2>&1
grep -q "trainer reply ERROR code 3 (unauthorized)" "$D/r" && ok "the trainer refuses the rogue arbiter (signed ERROR)" ||
  bad "rogue game: $(cat "$D/r")"
"$B/arbiter" check "$D/rogue.vttr" >"$D/c" 2>&1; st=$?
[ $st = 1 ] && ! grep -q "^RE-DERIVED" "$D/c" && grep -q "which the trainer never accepted" "$D/c" &&
  ok "arbiter check rejects a verdict from an arbiter the trainer never accepted" || bad "rogue check: exit $st $(cat "$D/c")"
stop "$APID"; stop "$TPID"

# ---------------------------------------------------------------- 3. a genuine transcript, re-signed
D=$T/genuine; mkdir -p "$D"
start_trainer "$D" "$T/cheat" --cheat lr:7:0.5
start_arbiter "$D" --games 1
"$B/auditor-test" challenge "$T/cheat" --service "$D/service.vtsr" --arbiter 127.0.0.1:"$APORT" --key "$T/ak" \
  --arbiter-key "$T/rk.pub" --quiet >"$D/o" 2>&1; st=$?
[ $st = 0 ] && grep -q "against the trainer (wrong output) at step 7" "$D/o" && ok "the cheating trainer loses" ||
  bad "genuine game: exit $st $(cat "$D/o")"
wait "$APID" 2>/dev/null
G=$(ls "$D"/tr/*.vttr | head -1)
"$B/arbiter" check "$G" >"$D/c" 2>&1; st=$?
[ $st = 0 ] && grep -q "^RE-DERIVED: verdict against the trainer" "$D/c" && grep -q "arbiter key: [0-9a-f]\{64\} (not pinned" "$D/c" &&
  ok "re-derived, the arbiter key printed" || bad "check: exit $st $(cat "$D/c")"
"$B/arbiter" check "$G" --arbiter-key "$T/rk.pub" >"$D/c" 2>&1; st=$?
[ $st = 0 ] && grep -q "^RE-DERIVED" "$D/c" && grep -q "(the pinned key)" "$D/c" && ok "re-derived under the pinned key" ||
  bad "pinned check: exit $st $(cat "$D/c")"
"$B/arbiter" check "$G" --arbiter-key "$T/ak.pub" >"$D/c" 2>&1; st=$?
[ $st = 1 ] && grep -q "^REFUSED" "$D/c" && grep -q "not the pinned" "$D/c" && ok "refused under another pinned key" ||
  bad "wrong pin: exit $st $(cat "$D/c")"
"$B/vt_rogue" resign "$G" "$D/resigned.vttr" "$T/ak" >/dev/null || bad "resign"
"$B/arbiter" check "$D/resigned.vttr" >"$D/c" 2>&1; st=$?
[ $st = 1 ] && ! grep -q "^RE-DERIVED" "$D/c" && grep -q "re-signed by another key" "$D/c" &&
  ok "a transcript re-signed by another key is refused" || bad "re-signed: exit $st $(cat "$D/c")"
"$B/vt_rogue" resign "$G" "$D/renamed.vttr" "$T/ak" rename >/dev/null || bad "resign rename"
"$B/arbiter" check "$D/renamed.vttr" >"$D/c" 2>&1; st=$?
[ $st = 1 ] && ! grep -q "^RE-DERIVED" "$D/c" && grep -q "never accepted" "$D/c" &&
  ok "re-signed and renamed to another arbiter: refused (the trainer never accepted it)" || bad "renamed: exit $st $(cat "$D/c")"
stop "$TPID"

# ---------------------------------------------------------------- 4. a fake arbiter
D=$T/fake; mkdir -p "$D"
start_trainer "$D" "$T/run"
"$B/vt_rogue" fake-arbiter "$D/fp" "$T/fk" 1 >"$D/f1" 2>&1 & F1=$!; PIDS+=("$F1")
wait_file "$D/fp" "$F1"
"$B/auditor-test" challenge "$T/run" --service "$D/service.vtsr" --arbiter 127.0.0.1:"$(cat "$D/fp")" --key "$T/ak" \
  --arbiter-key "$T/rk.pub" --lie 9:3 --quiet >"$D/o" 2>&1; st=$?
[ $st = 2 ] && grep -q "pinned" "$D/o" && ! grep -q "VERDICT" "$D/o" && ok "a fake arbiter under another key: refused by the pin" ||
  bad "fake key: exit $st $(cat "$D/o")"
stop "$F1"; rm -f "$D/fp"
"$B/vt_rogue" fake-arbiter "$D/fp" "$T/rk" 2 >"$D/f2" 2>&1 & F2=$!; PIDS+=("$F2")
wait_file "$D/fp" "$F2"
"$B/auditor-test" challenge "$T/run" --service "$D/service.vtsr" --arbiter 127.0.0.1:"$(cat "$D/fp")" --key "$T/ak" \
  --arbiter-key "$T/rk.pub" --lie 9:3 --quiet >"$D/o" 2>&1; st=$?
[ $st = 2 ] && grep -q "not for this challenge: the verdict names another nonce" "$D/o" && ! grep -q "^VERDICT" "$D/o" &&
  ok "a verdict of another game: refused (exit 2), not \"the auditor lost\"" || bad "replayed verdict: exit $st $(cat "$D/o")"
"$B/auditor-test" challenge "$T/run" --service "$D/service.vtsr" --arbiter 127.0.0.1:"$(cat "$D/fp")" --key "$T/ak" \
  --no-pin-arbiter --lie 9:3 --quiet >"$D/o" 2>&1; st=$?
[ $st = 2 ] && grep -q "not for this challenge" "$D/o" && ok "unpinned (explicitly): the verdict is still checked" ||
  bad "unpinned replayed verdict: exit $st $(cat "$D/o")"
stop "$F2"
"$B/auditor" challenge "$T/run" --service "$D/service.vtsr" --arbiter 127.0.0.1:1 --key "$T/ak" >"$D/o" 2>&1; st=$?
[ $st = 64 ] && grep -q "arbiter-key FILE.pub is required" "$D/o" && ok "no --arbiter-key: a usage error" ||
  bad "no pin: exit $st $(cat "$D/o")"
"$B/auditor" challenge "$T/run" --arbiter 127.0.0.1:1 --key "$T/ak" --arbiter-key "$T/rk.pub" --no-pin-arbiter >"$D/o" 2>&1
[ $? = 64 ] && ok "--arbiter-key with --no-pin-arbiter: a usage error" || bad "both: $(cat "$D/o")"
stop "$TPID"

# ---------------------------------------------------------------- 5. a stale record
D=$T/stale; mkdir -p "$D"
start_trainer "$D" "$T/run"
stop "$TPID"
"$B/vt_record" "$T/tk" "$D/service.vtsr" "$D/run.vtsr" -1000 -10 >/dev/null # the auditor's record, expired since
LISTEN=127.0.0.1:$TPORT start_trainer "$D" "$T/other" # the same key and address, another run
start_arbiter "$D" --games 1
"$B/auditor-test" challenge "$T/run" --service "$D/run.vtsr" --arbiter 127.0.0.1:"$APORT" --key "$T/ak" \
  --arbiter-key "$T/rk.pub" --lie 9:3 --quiet >"$D/o" 2>&1; st=$?
[ $st = 2 ] && grep -q "against nobody (stale service record)" "$D/o" && grep -q "not this run" "$D/o" &&
  ok "a trainer serving another run at the address: stale record, nobody loses" || bad "stale: exit $st $(cat "$D/o")"
wait "$APID" 2>/dev/null
"$B/arbiter" check "$(ls "$D"/tr/*.vttr | head -1)" --arbiter-key "$T/rk.pub" >"$D/c" 2>&1; st=$?
[ $st = 0 ] && grep -q "^RE-DERIVED: verdict against nobody (stale service record)" "$D/c" && ok "the stale verdict re-derives" ||
  bad "stale check: exit $st $(cat "$D/c")"
stop "$TPID"

# ---------------------------------------------------------------- 6. a record re-signed while serving
D=$T/expired; mkdir -p "$D"
start_trainer "$D" "$T/run" --misbehave short-record --record-ttl 2
cp "$D/service.vtsr" "$D/old.vtsr"
start_arbiter "$D"
resigned() { ! cmp -s "$D/service.vtsr" "$D/old.vtsr"; }
wait_until 30 resigned
cmp -s "$D/service.vtsr" "$D/old.vtsr" && bad "the serving trainer did not re-sign its record" ||
  ok "the serving trainer re-signs its record before it expires"
"$B/trainer" serve "$T/run" --listen 127.0.0.1:0 --key "$T/tk" --arbiter-key "$T/rk.pub" --record-ttl 2 >"$D/o" 2>&1
[ $? = 64 ] && ok "the product refuses to sign a record under the floor" || bad "trainer serve --record-ttl 2: $(cat "$D/o")"
stop "$APID"; stop "$TPID"

# ---------------------------------------------------------------- 7. one verdict; time sanity
D=$T/sanity; mkdir -p "$D"
chk() { # TRANSCRIPT: st, and the output in $D/c (its verdict and refusal lines shown)
  "$B/arbiter" check "$1" --arbiter-key "$T/rk.pub" >"$D/c" 2>&1; st=$?
  grep -E "^(RE-DERIVED|REFUSED|MISMATCH)|refused:|arbiter check:" "$D/c" | sed "s/^ */    [exit $st] /"
}
expect_check() { # STATUS PATTERN WHAT: the last chk exited STATUS and printed PATTERN (and, unless 0, no RE-DERIVED)
  if [ "$st" = "$1" ] && grep -q -- "$2" "$D/c" && { [ "$1" = 0 ] || ! grep -q "^RE-DERIVED" "$D/c"; }; then ok "$3"
  else bad "$3: exit $st $(cat "$D/c")"; fi
}
edit() { "$B/vt_rogue" edit "$@" >/dev/null || bad "vt_rogue edit $*"; }
"$B/vt_rogue" list "$G" >"$D/list" || bad "list"
echo "the genuine transcript holds $(grep -c " VERDICT " "$D/list") VERDICT record(s) (the verdict, recorded once)"
chk "$G"; expect_check 0 "^RE-DERIVED" "the genuine transcript still re-derives"
ARB="signed by key [0-9a-f]* (the arbiter's key)"
edit "$G" "$D/flip.vttr" "$T/rk" append-verdict flip; chk "$D/flip.vttr"
expect_check 1 "refused: inconsistent transcript: a second VERDICT (sent) at offset [0-9]*, after the verdict at offset [0-9]*, $ARB" \
  "a contradictory second verdict under the arbiter's key: refused, the arbiter's key named"
edit "$G" "$D/same.vttr" "$T/rk" append-verdict same; chk "$D/same.vttr"
expect_check 1 "inconsistent transcript: a second VERDICT (sent) .*$ARB" "the same verdict once more: refused"
edit "$G" "$D/note.vttr" "$T/rk" append-note; chk "$D/note.vttr"
expect_check 1 "inconsistent transcript: a record (NOTE, a note) at offset [0-9]* after the verdict at offset [0-9]*, $ARB" \
  "a note after the verdict: refused"
# trailing bytes: hostile tails are a malformed transcript (exit 2), never a crash
size=$(stat -c %s "$G")
i=0
for tail in 'printf garbage' 'head -c 36 /dev/zero' "printf '\\001'; head -c 32 /dev/zero; printf '\\000\\000\\000\\200'" \
            "printf '\\011'; head -c 40 /dev/zero" "printf '\\002'; head -c 32 /dev/zero; printf '\\310\\000\\000\\000'; head -c 10 /dev/zero"; do
  i=$((i + 1)); cp "$G" "$D/tail$i.vttr"; eval "$tail" >>"$D/tail$i.vttr"; chk "$D/tail$i.vttr"
  expect_check 2 "inconsistent transcript: trailing bytes at offset $size, after the verdict at offset [0-9]*, are not a whole record" \
    "trailing bytes ($tail): refused, exit 2"
done
vo=$(grep ' VERDICT ' "$D/list" | head -1 | cut -d' ' -f1)
n=0; odd=""
for ((cut = vo + 1; cut < size; cut += 61)); do # cut anywhere from the verdict on
  head -c "$cut" "$G" >"$D/cut.vttr"; "$B/arbiter" check "$D/cut.vttr" >/dev/null 2>&1; s=$?; n=$((n + 1))
  [ $s -le 2 ] || odd="$odd $cut:$s"
done
[ -z "$odd" ] && ok "$n transcripts cut after the verdict's start: exit 0, 1 or 2, never a crash" || bad "cut transcripts:$odd"
cp "$G" "$D/zero.vttr"; { printf '\002'; head -c 32 /dev/zero; printf '\120\000\000\000'; head -c 80 /dev/zero; } >>"$D/zero.vttr"
chk "$D/zero.vttr"
expect_check 1 "inconsistent transcript: a record (not a message, received) at offset $size after the verdict at offset [0-9]*, naming key [0-9a-f]* (a key of none of the parties), whose signature does not verify under it" \
  "a whole record of zeros after the verdict: refused"
# an arbiter whose clock was behind: the verdict re-timed and re-signed by the arbiter's key
edit "$G" "$D/behind.vttr" "$T/rk" verdict-time -3600; chk "$D/behind.vttr"
expect_check 1 "the verdict's time [0-9]* precedes the signing time [0-9]* of the trainer's service record (serial [0-9]*, in the challenge) by 3600 s, more than the 300 s allowed for the clocks' difference: the arbiter's clock was behind" \
  "a verdict timed 3,600 s before the record was signed: refused (the arbiter's clock was behind)"
for dt in -200 0; do
  edit "$G" "$D/skew$dt.vttr" "$T/rk" verdict-time $dt; chk "$D/skew$dt.vttr"
  expect_check 0 "^RE-DERIVED" "a verdict timed $dt s from the record's signing time re-derives"
done
# an unreachable trainer: re-derived; refused once the arbiter's note ends the failure after the record expired
D=$T/gone; mkdir -p "$D"
start_trainer "$D" "$T/run"; stop "$TPID" # a genuine record, nobody answering
start_arbiter "$D" --games 1 --clock-ms $((3000 * SLOW)) --deadline-ms $((1000 * SLOW))
"$B/vt_attack" challenge 127.0.0.1:"$APORT" "$T/run" "$D/service.vtsr" >"$D/o" 2>&1
grep -q "reply VERDICT loser 1 reason 1" "$D/o" && ok "the unreachable trainer loses by its clock" || bad "unreachable: $(cat "$D/o")"
wait "$APID" 2>/dev/null
U=$(ls "$D"/tr/*.vttr | head -1)
chk "$U"
expect_check 0 "rests on: the arbiter's signed account" "the unreachable trainer's verdict re-derives"
for how in flip same; do
  edit "$U" "$D/$how.vttr" "$T/rk" append-verdict $how; chk "$D/$how.vttr"
  expect_check 1 "inconsistent transcript: a second VERDICT (sent) .*$ARB" "a second verdict ($how): refused"
done
edit "$U" "$D/late.vttr" "$T/rk" late-failure; chk "$D/late.vttr"
expect_check 1 "a verdict against the trainer that rests on its unreachability (the arbiter's notes), which they end at [0-9.]* s (the verdict's time [0-9]* plus [0-9]* ms of the game), not before the expiry [0-9]* of the newest service record of this run the game relied on (serial [0-9]*, in the challenge): a trainer is not bound to be reachable after its record expired" \
  "unreachable after its record expired: refused"

vt_end
