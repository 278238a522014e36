#!/usr/bin/env bash
# An honest party never loses, round 3 (issue 37; docs/dispute.md "Connections are not parties",
# "Fresh service records", "Access control and limits"), with real processes on loopback. Each case
# checks who wins with which verdict and re-derives it with `arbiter check`; none asserts wall time.
# Usage: game_round3.sh BUILD_DIR [CASE...]
#   resets    an on-path relay resets the arbiter->trainer connection whenever a question has been
#             pending 200 ms: the honest trainer wins (its computation survives the cut sessions)
#   resume    a relay resets every auditor<->arbiter connection after a few messages: the honest
#             auditor resumes its one game and wins; one transcript
#   gone      the auditor is killed mid-game and never comes back: nobody is at fault
#   records   record lifetimes: a record under the floor (the trainer loses), `trainer serve` refuses
#             one, an expired record of an unreachable trainer (nobody at fault), an expired copy of a
#             serving trainer's record (its current one is fetched: the game goes on), a withdrawn
#             run (the trainer loses), a record signed after the arbiter's clock (nobody at fault)
#   admission a slow auditor (a colluder answering late) holds a run's only slot: the honest auditor
#             of the run waits, the slow one is preempted (nobody at fault), the honest one wins
set -u
. "$(dirname "$0")/lib.sh"
vt_begin game_round3 "${1:-}"
shift
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(resets resume gone records admission)
keys tk rk ak ak1 ak2 ak3 ak4 ak5 ak6
command -v python3 >/dev/null || { echo "python3 missing: the relay cases cannot run"; exit 77; }

# 4000 MNIST images, 784-128-10, 20 steps, a committed state every step, checkpoints every 5
R=(--set subset=4000 --set 'layers=[784,128,10]' --set steps=20 --set batch=64 --set checkpoint_every=5
   --set state_hash_every=1 --quiet)
need() { # honest / cheat (the learning rate altered at step 7)
  case $1 in
  honest) [ -d "$T/honest" ] || train honest "${R[@]}" ;;
  cheat) [ -d "$T/cheat" ] || train cheat "${R[@]}" --cheat lr:7:0.5 ;;
  esac
}
# start_relay DIR NAME TARGET_PORT_FILE MODE N: sets RPORT (cuts logged to DIR/NAME.cuts)
start_relay() {
  local d=$1 name=$2
  rm -f "$d/$name.port"; : >"$d/$name.cuts"
  python3 "$REF/vt_relay.py" "$d/$name.port" "$3" "$4" "$5" "$d/$name.cuts" >"$d/$name.log" 2>&1 &
  PIDS+=($!)
  wait_file "$d/$name.port" $! "$d/$name.log" || return 1
  RPORT=$(cat "$d/$name.port")
}
cuts() { wc -l <"$1" | tr -d ' '; }

case_resets() { # finding 1: the chain of a 40-step segment and uncached inputs, cut every 200 ms
  local W=(--set subset=4000 --set 'layers=[784,1024,10]' --set steps=40 --set batch=128 --set checkpoint_every=40
           --set state_hash_every=20 --quiet)
  train big "${W[@]}" || return
  local d="$T/resets" why; mkdir -p "$d"
  start_relay "$d" relay "$d/tp" pending 200 || { bad "resets: relay"; return; }
  start_arbiter "$d" --games 1 --deadline-ms "$(dl 30000)" --clock-ms "$(dl 300000)" ||
    { bad "resets: arbiter"; return; }
  start_trainer "$d" big --advertise 127.0.0.1:"$RPORT" || { bad "resets: trainer"; return; }
  challenge "$d" big "$T/ak" "$d/out" --lie 27:17
  local st=$?
  arbiter_done; stop "$TPID"
  if why=$(verdict "$d/out" $st auditor "wrong output" 27 17); then ok "resets: the honest trainer wins"; else bad "resets: $why"; fi
  local n; n=$(cuts "$d/relay.cuts")
  [ "$n" -ge 2 ] && ok "resets: the relay cut $n connections with a question pending" ||
    bad "resets: the relay cut $n connections (the case tests nothing)"
  grep -q "cannot start a session" "$d/trainer.log" && bad "resets: a reconnection met 'cannot start a session'" ||
    ok "resets: every reconnection got a session"
  if why=$(rederive "$d" "verdict against the auditor (wrong output)"); then ok "resets: re-derived offline"; else bad "resets: $why"; fi
}

case_resume() { # finding 2: every auditor<->arbiter connection reset after a few of the arbiter's messages
  need cheat || return
  local d="$T/resume" why; mkdir -p "$d"
  start_arbiter "$d" --games 1 --deadline-ms "$(dl 30000)" || { bad "resume: arbiter"; return; }
  start_trainer "$d" cheat --cheat lr:7:0.5 || { bad "resume: trainer"; return; }
  start_relay "$d" relay "$d/ap" chunks 6 || { bad "resume: relay"; return; }
  AADDR=127.0.0.1:$RPORT challenge "$d" cheat "$T/ak" "$d/out"
  local st=$?
  arbiter_done; stop "$TPID"
  if [ $st = 0 ] && grep -q "against the trainer (wrong output) at step 7, operation" "$d/out"; then
    ok "resume: the honest auditor wins through the resets"
  else bad "resume: exit $st $(tail -4 "$d/out")"; fi
  local n; n=$(cuts "$d/relay.cuts")
  [ "$n" -ge 2 ] && ok "resume: the relay reset $n connections" || bad "resume: $n resets (the case tests nothing)"
  grep -q "resumes on the new connection" "$d/arbiter.log" && ok "resume: the game resumed on new connections" ||
    bad "resume: no resumption logged"
  [ "$(ntranscripts "$d")" = 1 ] && ok "resume: one game, one transcript" || bad "resume: $(ntranscripts "$d") transcripts"
  if why=$(rederive "$d" "verdict against the trainer (wrong output)"); then ok "resume: re-derived offline"; else bad "resume: $why"; fi
}

case_gone() { # finding 2: an auditor that does not come back within its clock is not convicted
  need honest || return
  local d="$T/gone" why; mkdir -p "$d"
  start_arbiter "$d" --games 1 --deadline-ms "$(dl 3000)" --clock-ms "$(dl 6000)" || { bad "gone: arbiter"; return; }
  start_trainer "$d" honest || { bad "gone: trainer"; return; }
  "$B/auditor-test" challenge "$T/honest" --service "$d/service.vtsr" --arbiter 127.0.0.1:"$APORT" --key "$T/ak" \
    --arbiter-key "$T/rk.pub" --lie 9:3 --slow "$(dl 2500)" >"$d/out" 2>&1 &
  local apid=$!
  PIDS+=("$apid")
  # killed while it thinks over the first question (--slow: its answer 2.5 s after the line), so the game
  # cannot have ended before: without the delay a fast game finished first and convicted the liar
  wait_until $((300 * SLOW)) line_or_exit "$d/out" "arbiter asks" "$apid"
  kill -9 "$apid"; wait "$apid" 2>/dev/null
  arbiter_done; stop "$TPID"
  if why=$(rederive "$d" "verdict against nobody (auditor gone)"); then ok "gone: nobody at fault, re-derived"
  else bad "gone: $why $(tail -3 "$d/arbiter.log")"; fi
}

case_records() { # finding 3 (and 5: a record from the arbiter's future)
  need honest && need cheat || return
  local d="$T/records" why st; mkdir -p "$d"
  # a. a cheater signing 2 s records: the honest auditor wins (the trainer signed under the floor)
  start_arbiter "$d" --games 1 || { bad "records: arbiter"; return; }
  start_trainer "$d" cheat --cheat lr:7:0.5 --misbehave short-record --record-ttl 2 || { bad "records: trainer"; return; }
  challenge "$d" cheat "$T/ak" "$d/out-short"; st=$?
  arbiter_done; stop "$TPID"
  grep -q "under the 600 s floor" "$d/out-short" && ok "records: the auditor says the record is under the floor" ||
    bad "records: the auditor did not check the floor"
  [ $st = 0 ] && grep -q "against the trainer (record shorter than the floor)" "$d/out-short" &&
    ok "records: a 2 s record convicts the trainer that signed it" || bad "records: short: exit $st $(tail -3 "$d/out-short")"
  if why=$(rederive "$d" "verdict against the trainer (record shorter than the floor)"); then ok "records: short: re-derived"
  else bad "records: short: $why"; fi
  # b. the production trainer refuses to sign one
  "$B/trainer" serve "$T/cheat" --listen 127.0.0.1:0 --key "$T/tk" --arbiter-key "$T/rk.pub" --record-ttl 2 \
    --service "$d/x.vtsr" >"$d/refuse" 2>&1; st=$?
  [ $st = 64 ] && grep -q "lives at least 1200 s" "$d/refuse" && [ ! -e "$d/x.vtsr" ] &&
    ok "records: trainer serve refuses --record-ttl 2 (exit 64)" || bad "records: ttl 2: exit $st $(cat "$d/refuse")"
  # c. an expired record (signed for 990 s, expired 10 s ago) of a trainer that no longer serves: nobody at fault
  rm -rf "$d/tr"
  start_trainer "$d" honest || { bad "records: trainer"; return; }
  stop "$TPID"
  "$B/vt_record" "$T/tk" "$d/service.vtsr" "$d/expired.vtsr" -1000 -10 >/dev/null || { bad "records: vt_record"; return; }
  start_arbiter "$d" --games 1 --deadline-ms "$(dl 2000)" --clock-ms "$(dl 4000)" || { bad "records: arbiter"; return; }
  SERVICE=$d/expired.vtsr challenge "$d" honest "$T/ak" "$d/out-expired" --lie 9:3; st=$?
  arbiter_done
  [ $st = 2 ] && grep -q "against nobody (expired service record)" "$d/out-expired" &&
    ok "records: an expired record of an unreachable trainer: nobody at fault" ||
    bad "records: expired: exit $st $(tail -3 "$d/out-expired")"
  if why=$(rederive "$d" "verdict against nobody (expired service record)"); then ok "records: expired: re-derived"
  else bad "records: expired: $why"; fi
  # d. an expired copy of a serving trainer's record: the auditor fetches the current one; the game goes on
  rm -rf "$d/tr"
  start_arbiter "$d" --games 1 || { bad "records: arbiter"; return; }
  start_trainer "$d" cheat --cheat lr:7:0.5 || { bad "records: trainer"; return; }
  "$B/vt_record" "$T/tk" "$d/service.vtsr" "$d/old.vtsr" -1000 -10 >/dev/null || { bad "records: vt_record"; return; }
  SERVICE=$d/old.vtsr challenge "$d" cheat "$T/ak" "$d/out-fetch"; st=$?
  arbiter_done; stop "$TPID"
  [ $st = 0 ] && grep -q "current record (serial" "$d/out-fetch" &&
    grep -q "against the trainer (wrong output) at step 7" "$d/out-fetch" &&
    ok "records: the auditor fetched the current record and won" || bad "records: fetch: exit $st $(tail -5 "$d/out-fetch")"
  if why=$(rederive "$d" "verdict against the trainer (wrong output)"); then ok "records: fetch: re-derived"
  else bad "records: fetch: $why"; fi
  # e. a withdrawn run: the trainer restarts at its address with another run before its record expired
  rm -rf "$d/tr"
  train other "${R[@]}" --set seed=7 || return
  start_trainer "$d" cheat --cheat lr:7:0.5 || { bad "records: trainer"; return; }
  cp "$d/service.vtsr" "$d/run.vtsr"
  stop "$TPID"
  LISTEN=127.0.0.1:$TPORT start_trainer "$d" other || { bad "records: trainer"; return; }
  start_arbiter "$d" --games 1 || { bad "records: arbiter"; return; }
  SERVICE=$d/run.vtsr challenge "$d" cheat "$T/ak" "$d/out-withdrawn"; st=$?
  arbiter_done; stop "$TPID"
  [ $st = 0 ] && grep -q "against the trainer (withdrawn run)" "$d/out-withdrawn" &&
    grep -q "serves another run" "$d/out-withdrawn" && ok "records: a withdrawn run convicts the trainer" ||
    bad "records: withdrawn: exit $st $(tail -4 "$d/out-withdrawn")"
  if why=$(rederive "$d" "verdict against the trainer (withdrawn run)"); then ok "records: withdrawn: re-derived"
  else bad "records: withdrawn: $why"; fi
  # f. a record signed an hour after the arbiter's clock (an arbiter 1 h behind): nobody at fault, never
  #    a verdict against the trainer by its absence
  rm -rf "$d/tr"
  start_trainer "$d" honest || { bad "records: trainer"; return; }
  stop "$TPID"
  "$B/vt_record" "$T/tk" "$d/service.vtsr" "$d/future.vtsr" 3600 90000 >/dev/null || { bad "records: vt_record"; return; }
  start_arbiter "$d" --games 1 || { bad "records: arbiter"; return; }
  SERVICE=$d/future.vtsr challenge "$d" honest "$T/ak" "$d/out-future" --lie 9:3; st=$?
  arbiter_done
  [ $st = 2 ] && grep -q "against nobody (clock skew)" "$d/out-future" &&
    ok "records: a record from the arbiter's future: nobody at fault" || bad "records: future: exit $st $(tail -3 "$d/out-future")"
  if why=$(rederive "$d" "verdict against nobody (clock skew)"); then ok "records: future: re-derived"
  else bad "records: future: $why"; fi
}

case_admission() { # finding 7: a colluder answering late cannot hold a run's slot past the honest auditor's wait
  need cheat || return
  local d="$T/admission" why; mkdir -p "$d"
  start_arbiter "$d" --games 2 --games-per-commitment 1 --deadline-ms "$(dl 4000)" || { bad "admission: arbiter"; return; }
  start_trainer "$d" cheat --cheat lr:7:0.5 || { bad "admission: trainer"; return; }
  # the colluder: a lying auditor of the cheater's run, each answer 1.5 s late (within the deadline)
  challenge "$d" cheat "$T/ak1" "$d/out-slow" --lie 9:3 --slow "$(dl 1500)" &
  local spid=$!
  wait_until $((300 * SLOW)) line_or_exit "$d/out-slow" "arbiter asks" "$spid"
  challenge "$d" cheat "$T/ak2" "$d/out-honest"
  local st=$?
  wait "$spid"
  arbiter_done; stop "$TPID"
  grep -q "waits for a slot" "$d/arbiter.log" && ok "admission: the honest auditor waited for the run's slot" ||
    bad "admission: the honest auditor did not wait (the case tests nothing): $(tail -3 "$d/arbiter.log")"
  grep -q "against nobody (preempted)" "$d/out-slow" && ok "admission: the slow auditor was preempted, nobody at fault" ||
    bad "admission: slow: $(tail -3 "$d/out-slow")"
  [ $st = 0 ] && grep -q "against the trainer (wrong output) at step 7" "$d/out-honest" &&
    ok "admission: the honest auditor then wins" || bad "admission: honest: exit $st $(tail -3 "$d/out-honest")"
  if why=$(rederive "$d"); then ok "admission: both games re-derived"; else bad "admission: $why"; fi
}

for c in "${CASES[@]}"; do "case_$c"; done
vt_end
