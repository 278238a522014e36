#!/usr/bin/env bash
# tc_grant.sh - the work grant against the work, per GEMM arithmetic (issue 37 item 4; docs/benchmarks.md
# "Work grants by arithmetic", docs/dispute.md "Clocks"). On this machine: the seconds a step of the
# README's CNN takes the trainer with --threads 1 in fp64, tc-bf16-sm90 and tc-fp16-sm80 (the avx2 and
# the portable scalar emulator, VT_TC_IMPL), as the CPU time (user + system) of `trainer train` for 1 + N
# steps less that for 1 step, over N (so neither the start-up nor other processes on the machine count);
# against the seconds `arbiter serve` grants one step at the default rate floor with the weights it
# calibrates (bench_tc_grant: the same calibration, the same vt_game_cost); the margin granted / needed,
# and the margin with the documented defaults (arbiter serve --no-calibrate).
# Usage: bench/tc_grant.sh BUILD_DIR [N]   (N extra steps, default 3)
set -eu
B=$(cd "$1" && pwd)
N=${2:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/vt-tcgrant.XXXXXX)
trap 'rm -rf "$T"' EXIT
RECIPE="$SRC/recipes/resnet-cifar10.json"
"$B/trainer" keygen "$T/key" >/dev/null
"$B/bench_tc_grant" --recipe "$RECIPE" >"$T/grant"
"$B/bench_tc_grant" --recipe "$RECIPE" --no-calibrate >"$T/grant-default"
grep -v '^GRANT' "$T/grant" || true

# cpu_s MODE IMPL STEPS: user + system seconds of the whole training run (and wall seconds)
run_s() {
  local mode=$1 impl=$2 steps=$3 dir="$T/run-$1-$2-$3"
  VT_TC_IMPL=$impl /usr/bin/time -f "%U %S %e" -o "$T/time" "$B/trainer" train "$dir" --key "$T/key" \
    --recipe "$RECIPE" --set steps="$steps" --set checkpoint_every="$steps" --set state_hash_every=1 \
    --set gemm_arith="$mode" --threads 1 --quiet >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
  rm -rf "$dir"
  awk '{printf "%.4f %.4f\n", $1 + $2, $3}' "$T/time"
}

printf '%-14s %-8s %8s %10s %11s %14s %8s %16s\n' mode emulator weight "cpu s/step" "wall s/step" "granted s/step" margin "margin (defaults)"
for cfg in fp64:- tc-bf16-sm90:avx2 tc-bf16-sm90:scalar tc-fp16-sm80:avx2 tc-fp16-sm80:scalar; do
  mode=${cfg%%:*} impl=${cfg#*:}
  ienv=$impl; [ "$impl" = - ] && ienv=""
  read -r c1 w1 < <(run_s "$mode" "$ienv" 1)
  read -r c2 w2 < <(run_s "$mode" "$ienv" $((1 + N)))
  read -r weight granted < <(awk -v m="$mode" '$1 == "GRANT" && $2 == m {print $3, $7}' "$T/grant")
  read -r dweight dgranted < <(awk -v m="$mode" '$1 == "GRANT" && $2 == m {print $3, $7}' "$T/grant-default")
  awk -v m="$mode" -v i="$impl" -v w="$weight" -v c1="$c1" -v c2="$c2" -v w1="$w1" -v w2="$w2" -v n="$N" -v g="$granted" \
    -v dw="$dweight" -v dg="$dgranted" \
    'BEGIN { c = (c2 - c1) / n; wl = (w2 - w1) / n; if (c <= 0) c = 1e-9;
             printf "%-14s %-8s %8.3f %10.3f %11.3f %14.2f %7.0fx %9.0fx (w %g)\n", m, i, w, c, wl, g, g / c, dg / c, dw }'
done
