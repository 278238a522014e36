#!/usr/bin/env bash
# --threads N (common/vt_par.h): exact rounding gives the same bits whatever the thread count. The
# MLP (784-256-10 on 2048 MNIST images: GEMM outputs large enough for the rounding pass to be split
# over the threads), the residual CNN and the GPT (small) are trained with --threads 1, 2 and 3: the
# three commitments are byte-identical, and the 3-thread run audits VERIFIED with --threads 2.
# --threads 0 and --threads x are usage errors (64). Usage: threads.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin threads "${1:-}" key
MLP=(--set subset=2048 --set 'layers=[784,256,10]' --set batch=256 --set steps=6 --set checkpoint_every=3 --set state_hash_every=1)
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=256 --set resnet_width=4 --set resnet_stages=2
     --set batch=32 --set steps=4 --set checkpoint_every=2 --set state_hash_every=1)
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32 --set gpt_context=16
     --set batch=16 --set steps=4 --set dropout=0.1 --set checkpoint_every=2 --set state_hash_every=1)
for m in MLP CNN GPT; do
  declare -n R=$m
  for t in 1 2 3; do
    "$B/trainer" train --threads $t "$T/$m-$t" --key "$T/key" "${R[@]}" --quiet >"$T/out" 2>&1 ||
      bad "$m --threads $t: $(cat "$T/out")"
  done
  for t in 2 3; do
    cmp -s "$T/$m-1/commitment.vtc" "$T/$m-$t/commitment.vtc" && ok || bad "$m: --threads $t's commitment differs from 1's"
  done
  "$B/auditor" verify "$T/$m-3" --threads 2 --quiet >"$T/out" 2>&1 && ok || bad "$m: audit: $(cat "$T/out")"
done
"$B/trainer" train --threads 0 "$T/x" --key "$T/key" --quiet >/dev/null 2>&1; st=$?
[ $st = 64 ] && ok || bad "--threads 0: exit $st"
"$B/auditor" --threads x verify "$T/MLP-1" >/dev/null 2>&1; st=$?
[ $st = 64 ] && ok || bad "--threads x: exit $st"
vt_end
