#!/usr/bin/env bash
# Figures of the dispute game (docs/benchmarks.md, "Dispute game"): for runs of 10, 1000 and
# 100000 steps with a trainer that alters the learning rate in the middle, play the game on
# loopback and report rounds, bytes exchanged, the game's wall time and the arbiter's compute
# as a fraction of one training step (bench_verify_step: the yardstick, timed on the run's own
# model), beside the cost of re-running the disputed steps.
# Usage: bench/bench_dispute.sh BUILD_DIR [--quick]
set -u
B=$(cd "${1:-build/release}" && pwd)
QUICK=${2:-}
T=$(mktemp -d /tmp/vt-bench-dispute.XXXXXX)
trap 'rm -rf "$T"; kill $(jobs -p) 2>/dev/null' EXIT
"$B/trainer" keygen "$T/tk" >/dev/null; "$B/trainer" keygen "$T/ak" >/dev/null; "$B/arbiter" keygen "$T/rk" >/dev/null
wait_file() { for _ in $(seq 1 600); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

printf '| run | model | steps | H | rounds (steps + ops) | bytes exchanged | game wall time | arbiter: the operation | + hashing its output | one training step | arbiter / step (op, op+hash) | published method: re-run the H disputed steps |\n'
printf '|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|\n'
run() { # name steps H K dataset layers batch
  local name=$1 steps=$2 H=$3 K=$4 ds=$5 layers=$6 batch=$7
  local cheat=$((steps / 2 + 1))
  local R=(--set dataset="$ds" --set "layers=$layers" --set steps="$steps" --set batch="$batch"
           --set state_hash_every="$H" --set checkpoint_every="$K" --quiet)
  [ "$ds" = mnist-train ] && R+=(--set subset=10000)
  local out; out=$("$B/trainer-test" train "$T/$name" --key "$T/tk" "${R[@]}" --cheat "lr:$cheat:0.5")
  mkdir -p "$T/g-$name"
  "$B/arbiter" serve --listen 127.0.0.1:0 --key "$T/rk" --games 1 --port-file "$T/g-$name/ap" --transcripts "$T/g-$name" \
    >"$T/g-$name/arb.log" 2>&1 &
  local apid=$!
  "$B/trainer-test" serve "$T/$name" --listen 127.0.0.1:0 --key "$T/tk" --arbiter-key "$T/rk.pub" --connections 2 \
    --port-file "$T/g-$name/tp" --service "$T/g-$name/service.vtsr" --cheat "lr:$cheat:0.5" --quiet &
  local tpid=$!
  wait_file "$T/g-$name/ap"; wait_file "$T/g-$name/tp"
  wait_file "$T/g-$name/service.vtsr"
  "$B/auditor" challenge "$T/$name" --service "$T/g-$name/service.vtsr" \
    --arbiter 127.0.0.1:"$(cat "$T/g-$name/ap")" --arbiter-key "$T/rk.pub" --key "$T/ak" --quiet >"$T/g-$name/ch.out" 2>&1
  wait "$apid" 2>/dev/null; kill "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null
  local line; line=$(grep "rounds (" "$T/g-$name/arb.log")
  local rounds sr orr rec game
  rounds=$(echo "$line" | sed -n 's/.*: \([0-9]*\) rounds.*/\1/p')
  sr=$(echo "$line" | sed -n 's/.*(\([0-9]*\) over steps.*/\1/p')
  orr=$(echo "$line" | sed -n 's/.*, \([0-9]*\) over operations.*/\1/p')
  rec=$(echo "$line" | sed -n 's/.*, \([0-9.]*\) s recomputing.*/\1/p')
  local hsh; hsh=$(echo "$line" | sed -n 's/.*recomputing, \([0-9.]*\) s hashing.*/\1/p')
  game=$(echo "$line" | sed -n 's/.*game \([0-9.]*\) s.*/\1/p')
  local step_ms; step_ms=$("$B/bench_verify_step" "$T/$name" | sed -n 's/^STEP \([0-9.]*\)$/\1/p' | awk '{printf "%.3f", 1000*$1}')
  local bytes; bytes=$(stat -c %s "$T/g-$name"/game-*.vttr 2>/dev/null | head -1)
  local verdict; verdict=$(head -1 "$T/g-$name/ch.out")
  printf '| %s | %s | %s | %s | %s (%s + %s) | %s | %s s | %.3f ms | %.3f ms | %s ms | %s, %s | %s ms |\n' "$name" \
    "$ds $layers" "$steps" "$H" "$rounds" "$sr" "$orr" "$bytes" "$game" "$(awk -v r="$rec" 'BEGIN{print 1000*r}')" \
    "$(awk -v r="$hsh" 'BEGIN{print 1000*r}')" "$step_ms" \
    "$(awk -v r="$rec" -v s="$step_ms" 'BEGIN{printf "%.3f", 1000*r/s}')" \
    "$(awk -v r="$rec" -v h="$hsh" -v s="$step_ms" 'BEGIN{printf "%.3f", 1000*(r+h)/s}')" \
    "$(awk -v s="$step_ms" -v h="$H" 'BEGIN{printf "%.1f", s*h}')"
  echo "  $name: $verdict" >&2
}
run short 10 1 5 mnist-train '[784,128,10]' 64
run medium 1000 10 100 mnist-train '[784,128,10]' 64
if [ "$QUICK" != "--quick" ]; then
  run long 100000 100 1000 digits '[64,16,10]' 16
fi
