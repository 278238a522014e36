#!/usr/bin/env bash
# Per-rank memory of the state with and without --shard-state (issue 24 item 5; docs/benchmarks.md
# "Sharded optimiser state"): the MLP, the CNN and the GPT at their recipes' default sizes (a few
# steps, Adam for the MLP), and a wide MLP (784-2048-2048-10, Adam: 5.8 M parameters) and a wider
# GPT (4 layers of width 256, AdamW) whose state outweighs the rest of the process, trained under
# `mpirun -np N` for N = 1, 2, 4 (global batch 16, a multiple of 4). For each run: rank 0's
# planned state and optimiser-state bytes (the trainer's "state memory" line: vt_model_need /
# vt_model_need_sharded) and every rank's peak resident memory (VmHWM, GNU time's %M), rank 0's and
# the largest of the other ranks'; the commitments are compared with the one-process run's.
# Usage: [MODELS="mlp-wide gpt-wide"] bench_shard.sh BUILD_DIR [MPIEXEC (default mpirun)] (MODELS: a subset)
set -u
B=$(cd "$1" && pwd)
MPIRUN=${2:-mpirun}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
"$B/trainer" keygen "$T/key" >/dev/null
COMMON=(--set steps=4 --set state_hash_every=2 --set checkpoint_every=4 --quiet)
printf '| model | ranks | --shard-state | state, rank 0 (planned) | optimiser state, rank 0 (planned) | model allocation, rank 0 (planned) | peak RSS rank 0 | peak RSS other ranks (max) | commitment |\n'
printf '|---|---:|---|---:|---:|---:|---:|---:|---|\n'
for model in ${MODELS:-mlp mlp-wide cnn gpt gpt-wide}; do
  case $model in
    mlp) R=(--recipe "$HERE/../recipes/mlp-mnist.json" --set optimizer=adam) ;;
    mlp-wide) R=(--recipe "$HERE/../recipes/mlp-mnist.json" --set optimizer=adam --set 'layers=[784,2048,2048,10]'
                 --set batch=16) ;;
    cnn) R=(--recipe "$HERE/../recipes/resnet-cifar10.json") ;;
    gpt) R=(--recipe "$HERE/../recipes/gpt-shakespeare.json") ;;
    gpt-wide) R=(--recipe "$HERE/../recipes/gpt-shakespeare.json" --set gpt_width=256 --set gpt_layers=4) ;;
  esac
  "$B/trainer" train "$T/$model" --key "$T/key" "${R[@]}" "${COMMON[@]}" >/dev/null 2>&1 || echo "$model: one process failed"
  for np in 1 2 4; do
    for sh in no yes; do
      opt=(); [ $sh = yes ] && opt=(--shard-state)
      dir="$T/$model-$np-$sh"
      "$MPIRUN" --oversubscribe --allow-run-as-root -np $np bash -c \
        'exec /usr/bin/time -o "$0.hwm.$OMPI_COMM_WORLD_RANK" -f "hwm $OMPI_COMM_WORLD_RANK %M" "$1" "${@:2}"' "$T/t" \
        "$B/trainer" train "$dir" \
        --key "$T/key" "${R[@]}" "${COMMON[@]}" "${opt[@]}" >"$T/out" 2>"$T/err"
      line=$(grep '^state memory' "$T/out")
      st=$(echo "$line" | sed -n 's/^state memory *\([0-9]*\) of .*/\1/p')
      ob=$(echo "$line" | sed -n 's/.* optimiser state \([0-9]*\) of .*/\1/p')
      al=$(echo "$line" | sed -n "s/.* allocation \([0-9]*\) bytes/\1/p")
      if [ -z "$line" ]; then # one rank: the summary has no ranks line
        st=-; ob=-; al=-
      fi
      cat "$T/t.hwm."* >"$T/hwm" 2>/dev/null; rm -f "$T/t.hwm."*
      h0=$(awk '$2 == 0 {print $3}' "$T/hwm")
      ho=$(awk '$2 != 0 {if ($3 > m) m = $3} END {print m + 0}' "$T/hwm")
      same=differs; cmp -s "$T/$model/commitment.vtc" "$dir/commitment.vtc" && same=same
      printf '| %s | %d | %s | %s | %s | %s | %s MiB | %s | %s |\n' "$model" $np $sh "$st" "$ob" "$al" \
        "$(awk -v k="$h0" 'BEGIN {printf "%.1f", k / 1024}')" \
        "$([ $np = 1 ] && echo - || awk -v k="$ho" 'BEGIN {printf "%.1f MiB", k / 1024}')" "$same"
      rm -rf "$dir"
    done
  done
done
