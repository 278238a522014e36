#!/usr/bin/env bash
# The dispute game under attack (issue 9), real processes on loopback. Usage: attack.sh BUILD_DIR CASE
# Each case starts its own trainer server and arbiter, plays the reference game (a lying auditor,
# --lie 9:3, against the honest trainer) unloaded, then runs its attack while the same game is played
# again, and checks: the honest party wins with the correct verdict, every time; descriptors and
# threads (sampled every 0.2 s while the attack runs) and peak RSS stay bounded; the CPU seconds
# the honest servers spend while attacked stay within a generous multiple of an unloaded game's;
# no file is left by an unauthenticated peer. Every loop is bounded in count and time.
# No check compares wall time (issue 21): under foreign load (other work on the same cores) a game
# can take many times its unloaded wall time with nothing wrong in the project. What an attack can
# force on a server is work: CPU seconds, descriptors, threads, memory, and those are checked. The
# ratios of loaded to unloaded wall time are measured by bench/attack_load.sh (median of 3 games
# each side, VT_ATTACK_GAMES=3 VT_ATTACK_BENCH=1) and recorded in docs/benchmarks.md.
# Deadlines and ceilings (server deadlines, the auditor's `timeout`, waits for a port file or a log
# line) are hang guards, generous so that a loaded machine cannot reach them: none is a measurement;
# they scale with VT_TEST_TIMEOUT_SCALE (tests/e2e/lib.sh). The CPU bounds do not: they are work.
# Figures are printed ("figure: ..."). Environment: VT_ATTACK_KEEP=1 (or VT_KEEP=1) keeps the
# work folder; AUD_QUIET= shows the auditor's progress (retries) in the game outputs;
# VT_ATTACK_GAMES=N plays N games each side (default 1); VT_ATTACK_BENCH=1 also prints the
# "ratio:" line of the wall times (no check) for bench/attack_load.sh.
set -u
. "$(dirname "$0")/lib.sh"
vt_begin attack "${1:-}"
CASE=$2
keys tk rk ak
R=(--set subset=1000 --set 'layers=[784,128,10]' --set steps=12 --set batch=64 --set checkpoint_every=4
   --set state_hash_every=1 --quiet)
"$B/trainer" train "$T/run" --key "$T/tk" "${R[@]}" >/dev/null || { echo "training failed"; exit 1; }

# the servers (start_arbiter, start_trainer: tests/e2e/lib.sh) stop the script when they do not
# start. The arbiter's deadlines are the product's defaults (30 s an answer; a clock of 300 s a
# party): an honest party must not lose by its clock because other work loads the machine (they
# bound a silent party, which no case here plays but `offline`, which sets its own).
START_EXIT=1
ARB_ARGS=(--deadline-ms "$(dl 30000)" --clock-ms "$(dl 300000)")
# play DIR OUT: the reference game (lying auditor); sets GAME_S (wall seconds: a figure, never
# checked) and GAME_ST (exit status). The timeout is a hang guard under ctest's own (600 s).
play() {
  local t0 t1
  t0=$(date +%s.%N)
  timeout "$(dl 240)" "$B/auditor-test" challenge "$T/run" --service "$1/service.vtsr" --arbiter 127.0.0.1:"$APORT" \
    --key "$T/ak" --arbiter-key "$T/rk.pub" --lie 9:3 ${AUD_QUIET---quiet} >"$2" 2>&1
  GAME_ST=$?
  t1=$(date +%s.%N)
  GAME_S=$(echo "$t1 - $t0" | bc -l)
}
honest_wins() { # OUT: the honest trainer wins: the auditor lost with the correct verdict
  [ "$GAME_ST" = 1 ] && grep -q "against the auditor (wrong output) at step 9, operation 3" "$1"
}
median() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }
GAMES=${VT_ATTACK_GAMES:-1}
# How long an attack lasts at most (s): far longer than the loaded games, even on a loaded machine;
# each case stops its attack once its loaded games are over (cleanup), so this costs nothing.
AT=$(dl 300)
# sample PID: current fds, threads, RSS (kB) and peak RSS (kB)
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
# watch_proc PID FILE: samples every 0.2 s until killed (at most AT s); after every sample FILE
# holds "maxfds maxthreads" so far (written atomically), so a watcher killed at any time leaves it
watch_proc() {
  local p=$1 f=$2 n=$(( AT * 5 )) i mf=0 mt=0 x
  for ((i = 0; i < n; i++)); do
    kill -0 "$p" 2>/dev/null || break
    x=$(fds "$p"); [ "${x:-0}" -gt "$mf" ] && mf=$x
    x=$(status_kb "$p" Threads); [ "${x:-0}" -gt "$mt" ] && mt=$x
    echo "$mf $mt" >"$f.tmp" && mv -f "$f.tmp" "$f"
    sleep 0.2
  done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; } # utime + stime, in clock ticks
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
secs() { echo "scale=2; $1 / $HZ" | bc -l | sed 's/^\./0./'; }

D=$T/c; mkdir -p "$D"
# the reference game, unloaded (the baseline every loaded game is compared with): sets UCPU_A and
# UCPU_T, the CPU ticks the arbiter and the trainer spent on the GAMES unloaded games
baseline() {
  start_arbiter "$D" "$@"
  start_trainer "$D" "$T/run"
  local i t=() a0 t0
  a0=$(cpu_ticks "$APID"); t0=$(cpu_ticks "$TPID")
  for ((i = 0; i < GAMES; i++)); do
    play "$D" "$D/unloaded.out"
    honest_wins "$D/unloaded.out" || { bad "unloaded game: $(cat "$D/unloaded.out")"; exit 1; }
    t+=("$GAME_S")
  done
  UCPU_A=$(($(cpu_ticks "$APID") - a0)); UCPU_T=$(($(cpu_ticks "$TPID") - t0))
  UNLOADED=$(median "${t[@]}")
  echo "figure: $CASE unloaded game $(printf %.2f "$UNLOADED") s (median of $(printf '%.2f ' "${t[@]}")s)," \
    "CPU arbiter $(secs "$UCPU_A") s, trainer $(secs "$UCPU_T") s ($GAMES games)"
}
# attack_starts: call right before a case starts its attack: the CPU the servers spend from here
# to the end of the loaded games is charged to the attack; starts the fd/thread watchers
attack_starts() {
  ACPU0=$(cpu_ticks "$APID"); TCPU0=$(cpu_ticks "$TPID")
  rm -f "$D/arb.watch" "$D/tr.watch"
  watch_proc "$APID" "$D/arb.watch" & W1=$!; PIDS+=("$W1")
  watch_proc "$TPID" "$D/tr.watch" & W2=$!; PIDS+=("$W2")
}
# cpu_bounded NAME TICKS UNLOADED_TICKS ATTACKER_TICKS: the CPU an attack made a server spend, from
# attack_starts to the end of the loaded games (its own games included), against the same number of
# unloaded games and the CPU the attack's own processes spent. CPU time, unlike wall time, is what
# an attack can force on a server, and other work on the machine does not add to it (it only
# delays the server). Refusing a peer is not free (a TLS handshake costs the server about what it
# costs the client), and how many handshakes fit in the game depends on how long the game takes,
# so the bound is the game's own work with ample room plus twice the attacker's CPU:
#   CPU <= 3 x unloaded games + 2 x attacker's CPU + 2 s (x SLOW)
# It holds whatever the load, since foreign load slows attacker and server alike, and it flags an
# amplification: a server that spends more than the attacker does (real work for unauthenticated
# peers: a game, a transcript, hashing the run), or that spins on its own.
cpu_bounded() {
  local max=$(( 3 * $3 + 2 * $4 + 2 * HZ * SLOW ))
  echo "figure: $CASE $1 CPU $(secs "$2") s while attacked (bound $(secs "$max") s; unloaded games $(secs "$3") s, attackers $(secs "$4") s)"
  [ "$2" -le "$max" ] && ok "$1: $(secs "$2") s CPU while attacked, at most 3 x $(secs "$3") s unloaded + 2 x $(secs "$4") s attackers + $((2 * SLOW)) s" ||
    bad "$1 spent $(secs "$2") s CPU while attacked (bound $(secs "$max") s: 3 x $(secs "$3") s unloaded + 2 x $(secs "$4") s attackers + $((2 * SLOW)) s)"
}
# attacker_ticks PID...: the CPU of the attack's processes so far, their reaped children included
attacker_ticks() {
  local p n=0 x
  for p in "$@"; do x=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null); n=$((n + ${x:-0})); done
  echo "$n"
}
# loaded ATTACK_DESCRIPTION ATTACKER_PID...: plays the game while the attack (already started)
# runs; checks the winner of every game and the servers' CPU; the wall times are figures only
loaded() {
  local i t=() won=0
  for ((i = 0; i < GAMES; i++)); do
    play "$D" "$D/loaded.out"
    t+=("$GAME_S")
    if honest_wins "$D/loaded.out"; then won=$((won + 1)); else cp "$D/loaded.out" "$D/lost.out"; fi
    grep "did not take the challenge" "$D/loaded.out" | sed 's/^/  (auditor) /'
  done
  local a=$(($(cpu_ticks "$APID") - ACPU0)) b=$(($(cpu_ticks "$TPID") - TCPU0)) what=$1; shift
  local atk; atk=$(attacker_ticks "$@")
  kill "$W1" "$W2" 2>/dev/null; wait "$W1" "$W2" 2>/dev/null
  if [ "$won" = "$GAMES" ]; then ok "$what: the honest trainer wins ($GAMES of $GAMES games)"
  else bad "$what: the honest trainer won $won of $GAMES games: $(cat "$D/lost.out")"; fi
  LOADED=$(median "${t[@]}")
  echo "figure: $CASE loaded game $(printf %.2f "$LOADED") s (median of $(printf '%.2f ' "${t[@]}")s; unloaded $(printf %.2f "$UNLOADED") s)"
  [ "${VT_ATTACK_BENCH:-0}" = 1 ] && echo "ratio: $CASE $(echo "scale=2; $LOADED / $UNLOADED" | bc -l | sed 's/^\./0./')" \
    "loaded $(printf %.2f "$LOADED") s unloaded $(printf %.2f "$UNLOADED") s"
  cpu_bounded arbiter "$a" "$UCPU_A" "$atk"
  cpu_bounded trainer "$b" "$UCPU_T" "$atk"
}
# bounded PID NAME MAXFDS MAXTHREADS MAXRSS_MB: the largest descriptor and thread counts sampled
# while the attack ran (when attack_starts ran) or now, and the peak RSS (VmHWM, the whole life)
bounded() {
  local f t r w=$D/arb.watch sf=0 st=0
  [ "$1" = "${TPID:-}" ] && w=$D/tr.watch
  f=$(fds "$1"); t=$(status_kb "$1" Threads); r=$(status_kb "$1" VmHWM)
  [ -s "$w" ] && read -r sf st <"$w"
  [ "${sf:-0}" -gt "$f" ] && f=$sf; [ "${st:-0}" -gt "$t" ] && t=$st
  echo "figure: $CASE $2 fds $f, threads $t (largest sampled), peak RSS $((r / 1024)) MB"
  [ "$f" -le "$3" ] && [ "$t" -le "$4" ] && [ $((r / 1024)) -le "$5" ] && ok "$2 bounded" ||
    bad "$2: fds $f (max $3), threads $t (max $4), peak RSS $((r / 1024)) MB (max $5)"
}
ASANMB=$((SLOW > 1 ? 800 : 0))

case "$CASE" in
address) # 1. the auditor cannot pick the trainer's address
  baseline
  "$B/auditor" challenge "$T/run" --trainer 127.0.0.1:9 --arbiter 127.0.0.1:"$APORT" --key "$T/ak" >"$D/o" 2>&1
  [ $? = 64 ] && grep -q "signed service record" "$D/o" && ok "--trainer is refused" || bad "--trainer: $(cat "$D/o")"
  "$B/vt_attack" count-listen "$D/cp" 8 >"$D/count.out" & CL=$!; PIDS+=("$CL")
  wait_file "$D/cp" "$CL"; CP=$(cat "$D/cp")
  # a record for a port of the attacker's, signed by the auditor's own key
  "$B/vt_attack" sign-service "$D/forged.vtsr" "$D/service.vtsr" 127.0.0.1:"$CP" "$T/ak" || bad "sign-service"
  n0=$(ntranscripts "$D")
  "$B/auditor-test" challenge "$T/run" --service "$D/forged.vtsr" --arbiter 127.0.0.1:"$APORT" --key "$T/ak" --arbiter-key "$T/rk.pub" --lie 9:3 \
    --quiet >"$D/o" 2>&1; st=$?
  [ $st = 1 ] && grep -q "against the auditor (invalid challenge)" "$D/o" && grep -q "not signed by the commitment's trainer key" "$D/o" &&
    ok "forged service record: verdict against the auditor" || bad "forged service record: exit $st $(cat "$D/o")"
  # an unsigned (corrupted) commitment with a genuine record
  cp -r "$T/run" "$T/run-bad"; printf '\x55' | dd of="$T/run-bad/commitment.vtc" bs=1 seek=60 conv=notrunc 2>/dev/null
  "$B/vt_attack" challenge 127.0.0.1:"$APORT" "$T/run-bad" "$D/forged.vtsr" >"$D/o2" 2>&1
  grep -q "reply VERDICT loser 2 reason 8: the commitment in the challenge is not signed" "$D/o2" &&
    ok "unsigned commitment: verdict against the auditor" || bad "unsigned commitment: $(cat "$D/o2")"
  wait "$CL"
  grep -q "count-listen: 0 connections" "$D/count.out" && ok "nothing dialled" || bad "dialled: $(cat "$D/count.out")"
  [ "$(ntranscripts "$D")" = "$n0" ] && ok "no transcript for refused challenges" || bad "transcripts written"
  grep -q "rejected 127.0.0.1:[0-9]*: invalid challenge" "$D/arbiter.log" && ok "arbiter logs the rejection" ||
    bad "no rejection logged: $(tail -3 "$D/arbiter.log")"
  # an honest record whose trainer is down at first: retried within its clock, then the game goes on
  kill "$TPID"; wait "$TPID" 2>/dev/null
  # restarted once the arbiter has logged a failed attempt (not after a fixed time: under foreign
  # load the game may take longer than any fixed time to reach the trainer)
  ( wait_until 300 grep -q "attempt 1 to reach the trainer" "$D/arbiter.log"
    exec "$B/trainer" serve "$T/run" --listen 127.0.0.1:"$TPORT" --key "$T/tk" --arbiter-key "$T/rk.pub" \
      --service "$D/service2.vtsr" >"$D/trainer2.log" 2>&1 ) & PIDS+=("$!")
  play "$D" "$D/late.out"
  honest_wins "$D/late.out" && ok "trainer reached within its clock after retries" || bad "late trainer: $(cat "$D/late.out")"
  tr=$(ls -t "$D"/tr/*.vttr | head -1)
  "$B/arbiter" check "$tr" >"$D/check.out" 2>&1 && grep -q RE-DERIVED "$D/check.out" && ok "arbiter check re-derives it" ||
    bad "check: $(cat "$D/check.out")"
  grep -q "attempt 1 to reach the trainer" "$D/arbiter.log" && ok "attempts logged" || bad "no attempt logged"
  ;;
idle) # 2. idle TCP sockets on both ports
  baseline
  attack_starts
  "$B/vt_attack" idle 127.0.0.1:"$TPORT" 40 "$AT" >"$D/i1" & A1=$!; PIDS+=("$A1")
  "$B/vt_attack" idle 127.0.0.1:"$APORT" 40 "$AT" >"$D/i2" & A2=$!; PIDS+=("$A2")
  sleep 1
  loaded "40 + 40 idle sockets" "$A1" "$A2"
  bounded "$APID" arbiter 120 12 $((64 + ASANMB)); bounded "$TPID" trainer 120 14 $((96 + ASANMB))
  ;;
silent_tls) # 3. silent TLS sessions under self-made keys
  baseline
  attack_starts
  "$B/vt_attack" silent-tls 127.0.0.1:"$TPORT" 16 "$AT" >"$D/s1" & A1=$!; PIDS+=("$A1")
  "$B/vt_attack" silent-tls 127.0.0.1:"$APORT" 16 "$AT" >"$D/s2" & A2=$!; PIDS+=("$A2")
  sleep 1
  loaded "16 + 16 silent TLS sessions" "$A1" "$A2"
  bounded "$APID" arbiter 100 12 $((64 + ASANMB)); bounded "$TPID" trainer 100 14 $((96 + ASANMB))
  grep -q "is not an arbiter this trainer answers" "$D/trainer.log" && ok "trainer refuses unknown keys" ||
    bad "no refusal in the trainer log"
  ;;
manifest) # 4. a hostile manifest sized to exhaust the arbiter
  cp -r "$T/run" "$T/huge"
  "$B/vt_tamper" "$T/huge" "$T/tk" set-layers-resign '[784,65536,65536,10]' >/dev/null || bad "tamper"
  start_arbiter "$D"
  start_trainer "$D" "$T/huge"
  "$B/vt_attack" challenge 127.0.0.1:"$APORT" "$T/huge" "$D/service.vtsr" >"$D/o" 2>&1
  grep -q "reply VERDICT loser 0 reason 13: the run's manifest needs" "$D/o" && ok "refused with a signed verdict" ||
    bad "huge manifest: $(cat "$D/o")"
  bounded "$APID" arbiter 40 12 $((48 + ASANMB))
  tr=$(ls "$D"/tr/*.vttr | head -1)
  "$B/arbiter" check "$tr" >"$D/check.out" 2>&1 && grep -q "RE-DERIVED: verdict against nobody (over the arbiter's limits)" "$D/check.out" &&
    ok "the refusal re-derives offline" || bad "check: $(cat "$D/check.out")"
  # a width that fits memory but not a lower limit; and concurrent games beyond --max-running
  kill "$APID"; wait "$APID" 2>/dev/null
  # the new arbiter's first transcript may have the same name as the old one's (game-SECOND-ID,
  # the id counted per process): the old ones move away, so that a new game shows as a new file
  mkdir -p "$D/tr.old"; mv "$D"/tr/*.vttr "$D/tr.old/"
  start_arbiter "$D" --max-game-mb 8 --max-running 1
  cp -r "$T/run" "$T/wide"; "$B/vt_tamper" "$T/wide" "$T/tk" set-layers-resign '[784,4000,10]' >/dev/null || bad "tamper"
  kill "$TPID"; wait "$TPID" 2>/dev/null
  start_trainer "$D" "$T/wide" --misbehave silent
  n0=$(ntranscripts "$D")
  "$B/vt_attack" challenge 127.0.0.1:"$APORT" "$T/wide" "$D/service.vtsr" >"$D/c1" 2>&1 & C1=$!; PIDS+=("$C1")
  # the second challenge once the first game runs (its transcript is open), not after a fixed time
  more_transcripts() { [ "$(ntranscripts "$D")" -gt "$n0" ]; }
  wait_until 120 more_transcripts
  "$B/vt_attack" challenge 127.0.0.1:"$APORT" "$T/wide" "$D/service.vtsr" >"$D/c2" 2>&1
  grep -q "waits for a slot (busy: as many games as this arbiter plays at once" "$D/arbiter.log" &&
    ok "a second game beyond --max-running 1 waits for a slot (docs/dispute.md \"Admission\")" ||
    bad "concurrency: $(cat "$D/c2") $(tail -3 "$D/arbiter.log")"
  kill "$C1" 2>/dev/null; wait "$C1" 2>/dev/null
  ;;
flood) # 5. many silent sessions, a handshake flood, transcript files, a low descriptor limit
  PRE_ARB="prlimit --nofile=160 --" baseline
  n0=$(ntranscripts "$D")
  attack_starts
  "$B/vt_attack" silent-tls 127.0.0.1:"$APORT" 200 "$AT" >"$D/s1" & A1=$!; PIDS+=("$A1")
  "$B/vt_attack" flood 127.0.0.1:"$APORT" "$AT" >"$D/f1" & A2=$!; PIDS+=("$A2")
  "$B/vt_attack" idle 127.0.0.1:"$APORT" 150 "$AT" >"$D/i1" & A3=$!; PIDS+=("$A3")
  sleep 2
  loaded "200 silent TLS sessions + 150 idle sockets + a handshake flood, descriptor limit 160" "$A1" "$A2" "$A3"
  bounded "$APID" arbiter 160 12 $((64 + ASANMB))
  kill "$A1" "$A2" "$A3" 2>/dev/null; wait "$A1" "$A2" "$A3" 2>/dev/null
  [ "$(ntranscripts "$D")" = $((n0 + GAMES)) ] && ok "one transcript per honest game, none for the flood" ||
    bad "transcripts: $(ntranscripts "$D") (expected $((n0 + GAMES)))"
  sleep 1 # the arbiter sees the attacker's sockets close
  t0=$(cpu_ticks "$APID"); sleep 2; t1=$(cpu_ticks "$APID")
  [ $((t1 - t0)) -le $((20 * SLOW)) ] && ok "idle arbiter after the flood: $((t1 - t0)) ticks in 2 s" ||
    bad "the arbiter spins: $((t1 - t0)) ticks in 2 s"
  grep -q "descriptor limit\|too many pending" "$D/arbiter.log" && ok "the gate dropped the oldest pending connections" ||
    bad "no eviction logged"
  ;;
unauth) # 6. questions from keys the trainer does not accept
  baseline
  t0=$(cpu_ticks "$TPID")
  for q in chain inputs leaf; do
    "$B/vt_attack" query 127.0.0.1:"$TPORT" $q >"$D/q" 2>&1
    grep -q "reply ERROR code 3 (unauthorized)" "$D/q" && ok "unauthenticated $q refused" || bad "$q: $(cat "$D/q")"
  done
  for i in $(seq 1 20); do "$B/vt_attack" query 127.0.0.1:"$TPORT" chain >/dev/null 2>&1; done
  t1=$(cpu_ticks "$TPID")
  [ $((t1 - t0)) -le $((50 * SLOW)) ] && ok "23 refused questions cost the trainer $((t1 - t0)) ticks" ||
    bad "the trainer worked: $((t1 - t0)) ticks"
  # the accepted arbiter's key: only segments between adjacent committed states
  "$B/vt_attack" query 127.0.0.1:"$TPORT" chain "$T/rk" >"$D/q" 2>&1
  grep -q "reply ERROR code 7 (no such thing): no segment" "$D/q" && ok "a long segment is refused even to the arbiter" ||
    bad "arbiter chain: $(cat "$D/q")"
  grep -q "rejected 127.0.0.1:[0-9]*: key [0-9a-f]* is not an arbiter" "$D/trainer.log" && ok "trainer logs them" ||
    bad "trainer log: $(tail -3 "$D/trainer.log")"
  attack_starts
  "$B/vt_attack" silent-tls 127.0.0.1:"$TPORT" 8 "$AT" >/dev/null & A1=$!; PIDS+=("$A1")
  ( for i in $(seq 1 200); do "$B/vt_attack" query 127.0.0.1:"$TPORT" chain >/dev/null 2>&1; done ) & A2=$!; PIDS+=("$A2")
  loaded "unauthenticated questions" "$A1" "$A2"
  ;;
error_challenge) # 7. an ERROR in place of the CHALLENGE, its text an address
  baseline
  "$B/vt_attack" count-listen "$D/cp" 6 >"$D/count.out" & CL=$!; PIDS+=("$CL")
  wait_file "$D/cp" "$CL"; CP=$(cat "$D/cp")
  n0=$(ntranscripts "$D")
  "$B/vt_attack" error-challenge 127.0.0.1:"$APORT" "127.0.0.1:$CP" >"$D/o" 2>&1
  grep -q "reply ERROR code 2 (unexpected message): the first message must be a CHALLENGE, not ERROR" "$D/o" &&
    ok "refused with ERROR unexpected" || bad "error-challenge: $(cat "$D/o")"
  wait "$CL"
  grep -q "count-listen: 0 connections" "$D/count.out" && ok "its text was not dialled" || bad "$(cat "$D/count.out")"
  [ "$(ntranscripts "$D")" = "$n0" ] && ok "no transcript" || bad "a transcript was written"
  grep -q "rejected 127.0.0.1:[0-9]*: the first message must be a CHALLENGE" "$D/arbiter.log" && ok "logged" || bad "not logged"
  ;;
offline) # 8. a verdict by deadline (unreachable trainer), re-checked offline
  start_trainer "$D" "$T/run"; kill "$TPID"; wait "$TPID" 2>/dev/null # a genuine record, nobody answering
  start_arbiter "$D" --clock-ms "$(dl 3000)" --deadline-ms "$(dl 1000)"
  "$B/auditor-test" challenge "$T/run" --service "$D/service.vtsr" --arbiter 127.0.0.1:"$APORT" --key "$T/ak" --arbiter-key "$T/rk.pub" --lie 9:3 \
    --quiet >"$D/o" 2>&1; st=$?
  [ $st = 0 ] && grep -q "against the trainer (no valid answer)" "$D/o" && ok "the unreachable trainer loses by its clock" ||
    bad "verdict: exit $st $(cat "$D/o")"
  tr=$(ls "$D"/tr/*.vttr | head -1)
  "$B/arbiter" check "$tr" >"$D/check.out" 2>&1; st=$?
  cat "$D/check.out"
  [ $st = 0 ] && grep -q "RE-DERIVED: verdict against the trainer (no valid answer)" "$D/check.out" &&
    grep -q "rests on: the arbiter's signed account" "$D/check.out" && grep -q "connection attempts to 127.0.0.1:$TPORT" "$D/check.out" &&
    ok "arbiter check re-derives the deadline verdict and says what it rests on" || bad "check: exit $st"
  ;;
emfile) # the accept loop at the descriptor limit: accept() itself fails with EMFILE
  # The gate never holds more pending connections than the limit allows, so here the descriptors
  # are taken by authenticated sessions (under the accepted arbiter's key, the limits on sessions
  # raised above what 48 descriptors hold: 2 each). The accept loop must not spin, must log, and
  # the trainer must serve an honest game once the descriptors are free again.
  start_arbiter "$D"
  PRE_TR="prlimit --nofile=48 --" start_trainer "$D" "$T/run" --max-sessions 128 --sessions-per-arbiter 128
  # dropped sessions come back after 2 s (not 250 ms): the accept loop still meets EMFILE on every
  # return, but the measured CPU is the loop's, not the churn of re-handshaking 60 sessions (which
  # cost 30-80 ticks in 3 s at 250 ms on 2 loaded cores, against ~300 for a busy loop)
  VT_ATTACK_REOPEN_MS=2000 "$B/vt_attack" silent-tls 127.0.0.1:"$TPORT" 60 "$AT" "$T/rk" >"$D/h" & A1=$!; PIDS+=("$A1")
  wait_until "$((120 * SLOW))" grep -q "descriptor limit reached" "$D/trainer.log"
  # the gate's two answers to EMFILE: drop the oldest pending connection, or, with none pending
  # (every descriptor held by sessions), take the new one off the queue with the reserve
  grep -Eq "rejected [0-9.:?]*: descriptor limit reached( \(sessions hold every descriptor\)|: the oldest pending connection is dropped)" "$D/trainer.log" &&
    ok "accept() failed with EMFILE, logged" || bad "no EMFILE logged: $(tail -3 "$D/trainer.log")"
  sleep 1
  t0=$(cpu_ticks "$TPID"); sleep 3; t1=$(cpu_ticks "$TPID")
  n=$(grep -c "descriptor limit reached" "$D/trainer.log")
  echo "figure: emfile trainer $((t1 - t0)) ticks in 3 s at the descriptor limit, fds $(fds "$TPID"), $n EMFILE lines"
  # a busy loop is a whole core: ~300 ticks in 3 s; the paused listener (100 ms) and the attacker's
  # reconnects cost a few, up to 56 seen on 2 cores shared with a parallel build, so the bound is
  # half a core: it still tells a spinning accept loop from a paused one, on a loaded machine too
  [ $((t1 - t0)) -le $((150 * SLOW)) ] && ok "no busy loop at the descriptor limit: $((t1 - t0)) ticks in 3 s" ||
    bad "the trainer spins at EMFILE: $((t1 - t0)) ticks in 3 s"
  kill "$A1" 2>/dev/null; wait "$A1" 2>/dev/null
  sleep 1 # the sessions see the attacker's sockets close
  play "$D" "$D/after.out"
  honest_wins "$D/after.out" && ok "the honest game is served once descriptors are free" ||
    bad "after EMFILE: $(cat "$D/after.out") $(tail -3 "$D/trainer.log")"
  ;;
rejections) # 9. every rejection answered with an ERROR frame and logged
  baseline
  "$B/vt_attack" query 127.0.0.1:"$APORT" garbage >"$D/o1" 2>&1
  grep -q "reply ERROR code 1 (malformed message)" "$D/o1" && ok "arbiter: malformed first frame" || bad "$(cat "$D/o1")"
  "$B/vt_attack" query 127.0.0.1:"$APORT" leaf >"$D/o2" 2>&1
  grep -q "reply ERROR code 2 (unexpected message)" "$D/o2" && ok "arbiter: a question first" || bad "$(cat "$D/o2")"
  "$B/vt_attack" query 127.0.0.1:"$TPORT" leaf >"$D/o3" 2>&1
  grep -q "reply ERROR code 3 (unauthorized)" "$D/o3" && ok "trainer: unknown key" || bad "$(cat "$D/o3")"
  "$B/vt_attack" query 127.0.0.1:"$TPORT" garbage "$T/rk" >"$D/o4" 2>&1
  grep -q "reply ERROR code 1 (malformed message)" "$D/o4" && ok "trainer: a malformed frame from the arbiter" || bad "$(cat "$D/o4")"
  "$B/vt_attack" challenge 127.0.0.1:"$TPORT" "$T/run" "$D/service.vtsr" >/dev/null 2>&1 # unknown key again
  n=$(grep -c "rejected 127.0.0.1:[0-9]*: " "$D/arbiter.log"); m=$(grep -c "rejected 127.0.0.1:[0-9]*: " "$D/trainer.log")
  [ "$n" -ge 2 ] && [ "$m" -ge 3 ] && ok "every rejection logged with its peer (arbiter $n, trainer $m)" ||
    bad "logged: arbiter $n, trainer $m"
  ;;
*) echo "unknown case $CASE"; exit 64 ;;
esac
echo "attack $CASE: $fail failed"
[ "$fail" = 0 ]
