#!/usr/bin/env bash
# End-to-end tests of the character-level GPT (arch=gpt) with the real programs: a short
# tiny-shakespeare run in both rounding modes audits verified in every evaluation order
# (scripts/blas-matrix.sh runs this under every CBLAS); tampering - a flipped weight bit, another
# dropout seed, a swapped batch window - is rejected at the right step; evaluation reports the
# validation loss; sampling is deterministic; the export recomputes the committed state hash; step program
# 3 (the GPT derived from its forward graph) commits what program 1 commits. The
# dispute game on a GPT run is in tests/e2e/dispute.sh. Usage: e2e_gpt.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin e2e_gpt "${1:-}" key
# the README's recipe, made small: one layer of width 32, context 16, batch 8, 12 steps, dropout
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32 --set gpt_context=16
     --set batch=8 --set steps=12 --set warmup=3 --set dropout=0.1 --set checkpoint_every=6 --set state_hash_every=1)

# both rounding modes, every order (tests/e2e/lib.sh)
modes_verified "${GPT[@]}"
"$TRAINER" train "$T/exact2" --key "$T/key" "${GPT[@]}" --order pairwise --quiet >/dev/null || bad "train (pairwise)"
cmp -s "$T/exact/commitment.vtc" "$T/exact2/commitment.vtc" && ok || bad "exact rounding: another order signed another commitment"

# step program 3, derived from the GPT's forward graph by the one builder (arch/vt_graph_builtin.c): the same
# operations as the hand-written program 1 (kinds, arguments, shapes; tensors named by the graph), so the very
# same Merkle root in both rounding modes (the manifests differ in program_version); audited in another order; sampled alike
for m in exact log; do
  r1=$(grep "^merkle root" "$T/train-$m.out") &&
    r3=$("$TRAINER" train "$T/v3$m" --key "$T/key" "${GPT[@]}" --set rounding=$m --set program_version=3 --quiet |
      grep "^merkle root") && [ "$r1" = "$r3" ] && ok || bad "program 3 ($m): '$r3', program 1 '$r1'"
done
"$AUDITOR" verify "$T/v3exact" --pubkey "$T/key.pub" --order reverse 2>&1 | grep -q "^VERIFIED" && ok ||
  bad "program 3: not verified in another order"
n1=$("$TRAINER" recipe "${GPT[@]}" --program | grep "^operations") &&
  n3=$("$TRAINER" recipe "${GPT[@]}" --set program_version=3 --program | grep "^operations") && [ "$n1" = "$n3" ] && ok ||
  bad "program 3: '$n3', program 1 '$n1'"

# the program: dropout, the gradient norm, AdamW; evaluation without dropout
"$TRAINER" recipe "${GPT[@]}" --program >"$T/program.txt" || bad "recipe --program"
for k in load_windows causal_softmax batched_matmul dropout sum_scalars clip_factor adamw_apply; do
  grep -q " $k " "$T/program.txt" && ok || bad "the program has no $k operation"
done
awk '/^evaluation pass/{f=1} f' "$T/program.txt" | grep -q " dropout " && bad "dropout in the evaluation pass" || ok

# tampering, each rejected at its step (the dispute game names the operation: tests/e2e/dispute.sh)
"$TRAINER_TEST" train "$T/flipw" --key "$T/key" "${GPT[@]}" --quiet --cheat flip-weight:5 >/dev/null || bad "cheat"
expect 1 "state mismatch" 5 "$T/flipw" --order pairwise
"$TRAINER_TEST" train "$T/drop" --key "$T/key" "${GPT[@]}" --quiet --cheat dropout-seed:4 >/dev/null || bad "cheat"
expect 1 "record mismatch" 4 "$T/drop" --order reverse # the loss of step 4 already differs
"$TRAINER_TEST" train "$T/win" --key "$T/key" "${GPT[@]}" --quiet --cheat swap-window:3 >/dev/null || bad "cheat"
expect 1 "record mismatch" 3 "$T/win"

# evaluation: the validation loss in nats per character, below the uniform ln 65 = 4.17 after 12 steps
"$TRAINER" eval "$T/exact" >"$T/eval.out" 2>&1 && grep -q "^dataset         shakespeare-val (111540 characters)" "$T/eval.out" &&
  awk '/^validation loss/{exit !($3 > 0 && $3 < 4.17)}' "$T/eval.out" && ok || bad "eval: $(cat "$T/eval.out")"
# sampling: deterministic, and the same from the run retrained in another order
"$TRAINER" sample "$T/exact" --tokens 40 --seed 7 >"$T/s1" && "$TRAINER" sample "$T/exact2" --tokens 40 --seed 7 >"$T/s2" &&
  cmp -s "$T/s1" "$T/s2" && [ "$(wc -c <"$T/s1")" -ge 42 ] && ok || bad "sample: $(cat "$T/s1" "$T/s2")"
"$TRAINER" sample "$T/exact" --tokens 40 --seed 8 | cmp -s - "$T/s1" && bad "another seed sampled the same text" || ok
"$TRAINER" sample "$T/exact" --tokens 0 >/dev/null 2>&1; [ $? = 64 ] && ok || bad "sample --tokens 0 must be a usage error"
"$TRAINER" plain --precision fp32 "${GPT[@]}" >/dev/null 2>&1 && ok || bad "plain GPT baseline"

# export: every state tensor by name; the committed state hash recomputed by an independent reader
"$TRAINER" export "$T/exact" --format safetensors --out "$T/gpt.safetensors" --optimizer --pubkey "$T/key.pub" \
  >/dev/null && python3 "$REF/check_export.py" "$T/gpt.safetensors" "$T/exact" 12 any >/dev/null && ok || bad "export"

vt_end
