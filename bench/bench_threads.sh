#!/usr/bin/env bash
# bench_threads.sh BUILD_DIR [ROUNDS]: the wall time of `trainer train` with --threads 1 and 2 on the
# residual CNN and the GPT (their default batches), alternated ROUNDS times (default 5), medians and
# the ratio 1-thread / 2-thread per model; the commitments of both thread counts compared (they must
# be the same bytes). --threads 2 runs the step as 2 in-process shares of the batch (both default
# batches split: docs/architecture.md "Threads"). Two figures per model: the whole process of a
# 20-step run (the data set load and the model's set-up are in it too, once per share), and the
# marginal step: (time of a 40-step run - time of the 20-step run) / 20, which leaves the set-up out
# (a checkpoint and a state hash every 20 steps in both). Run on a quiet machine: other load
# inflates both.
set -u
B=$(cd "$1" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/vt-bench-threads.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$B/trainer" keygen "$T/key" >/dev/null
CNN=(--recipe "$HERE/recipes/resnet-cifar10.json" --set checkpoint_every=20 --set state_hash_every=20)
GPT=(--recipe "$HERE/recipes/gpt-shakespeare.json" --set checkpoint_every=20 --set state_hash_every=20)
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for m in CNN GPT; do
  if [ $m = CNN ]; then R=("${CNN[@]}"); else R=("${GPT[@]}"); fi
  : >"$T/t1"; : >"$T/t2"; : >"$T/s1"; : >"$T/s2"
  for ((i = 0; i < ROUNDS; i++)); do
    for t in 1 2; do
      for n in 20 40; do
        rm -rf "$T/run$t"
        s=$(now)
        OPENBLAS_NUM_THREADS=$t "$B/trainer" train --threads $t "$T/run$t" --key "$T/key" "${R[@]}" --set steps=$n \
          --quiet >/dev/null 2>&1 || { echo "$m --threads $t failed"; exit 1; }
        e=$(now)
        [ $n = 20 ] && w20=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.6f", b - a }')
      done
      echo "$w20" >>"$T/t$t"
      awk -v a="$s" -v b="$e" -v w="$w20" 'BEGIN { printf "%.6f\n", (b - a - w) / 20 }' >>"$T/s$t"
    done
    cmp -s "$T/run1/commitment.vtc" "$T/run2/commitment.vtc" || { echo "$m: the commitments differ"; exit 1; }
  done
  m1=$(median <"$T/t1") m2=$(median <"$T/t2") p1=$(median <"$T/s1") p2=$(median <"$T/s2")
  printf "%s: whole 20-step process --threads 1 %.2f s, --threads 2 %.2f s, ratio %.2f; marginal step %.4f s, %.4f s, ratio %.2f (medians of %d); commitments identical\n" \
    $m "$m1" "$m2" "$(awk -v a="$m1" -v b="$m2" 'BEGIN { print a / b }')" "$p1" "$p2" \
    "$(awk -v a="$p1" -v b="$p2" 'BEGIN { print a / b }')" "$ROUNDS"
done
