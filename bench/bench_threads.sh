#!/usr/bin/env bash
# bench_threads.sh BUILD_DIR [ROUNDS]: the wall time of `trainer train` with --threads 1 and 2 on the
# residual CNN and the GPT (their default batches, a few steps), alternated ROUNDS times (default 5),
# medians and the ratio 1-thread / 2-thread per model; the commitments of both thread counts compared
# (they must be the same bytes). --threads 2 runs the step as 2 in-process shares of the batch (both
# default batches split: docs/architecture.md "Threads"). Wall time of the whole process (the data set
# load and the model's set-up are in it too, once per share). Run on a quiet machine: other load
# inflates both.
set -u
B=$(cd "$1" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/vt-bench-threads.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$B/trainer" keygen "$T/key" >/dev/null
CNN=(--recipe "$HERE/recipes/resnet-cifar10.json" --set steps=20 --set checkpoint_every=20 --set state_hash_every=20)
GPT=(--recipe "$HERE/recipes/gpt-shakespeare.json" --set steps=20 --set checkpoint_every=20 --set state_hash_every=20)
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for m in CNN GPT; do
  if [ $m = CNN ]; then R=("${CNN[@]}"); else R=("${GPT[@]}"); fi
  : >"$T/t1"; : >"$T/t2"
  for ((i = 0; i < ROUNDS; i++)); do
    for t in 1 2; do
      rm -rf "$T/run$t"
      s=$(now)
      OPENBLAS_NUM_THREADS=$t "$B/trainer" train --threads $t "$T/run$t" --key "$T/key" "${R[@]}" --quiet \
        >/dev/null 2>&1 || { echo "$m --threads $t failed"; exit 1; }
      e=$(now)
      awk -v a="$s" -v b="$e" 'BEGIN { printf "%.6f\n", b - a }' >>"$T/t$t"
    done
    cmp -s "$T/run1/commitment.vtc" "$T/run2/commitment.vtc" || { echo "$m: the commitments differ"; exit 1; }
  done
  m1=$(median <"$T/t1") m2=$(median <"$T/t2")
  printf "%s: --threads 1 %.2f s, --threads 2 %.2f s (medians of %d), ratio %.2f; commitments identical\n" \
    $m "$m1" "$m2" "$ROUNDS" "$(awk -v a="$m1" -v b="$m2" 'BEGIN { print a / b }')"
done
