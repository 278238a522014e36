#!/usr/bin/env bash
# End-to-end tests of the residual CNN (arch=resnet) with the real programs: a short CIFAR-10 run
# in both rounding modes audits verified in every evaluation order (scripts/blas-matrix.sh runs
# this under every CBLAS); tampering - a flipped weight bit, a changed running statistic, another
# augmentation seed, a checkpoint altered after commitment - is rejected at the right step;
# evaluation uses the running statistics; the export carries them and recomputes the committed
# state hash. The dispute game on a CNN run is in tests/e2e/dispute.sh. Usage: e2e_cnn.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin e2e_cnn "${1:-}" key
# the README's recipe, made small: width 4, two stages, 512 images, batch 16, 12 steps, every state
# committed
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=512 --set resnet_width=4 --set resnet_stages=2
     --set batch=16 --set steps=12 --set checkpoint_every=6 --set state_hash_every=1 --set decay_every=6)


# both rounding modes, every order (tests/e2e/lib.sh)
modes_verified "${CNN[@]}"
grep -q "^log entries " "$T/train-log.out" && ok || bad "the log run's summary: $(cat "$T/train-log.out")"
# an honest retraining in another order signs the same exact-mode commitment, byte for byte
"$TRAINER" train "$T/exact2" --key "$T/key" "${CNN[@]}" --order reverse --quiet >/dev/null || bad "train (reverse)"
cmp -s "$T/exact/commitment.vtc" "$T/exact2/commitment.vtc" && ok || bad "exact rounding: another order signed another commitment"

# the program: batch norm's running statistics are state buffers; evaluation has its own pass
"$TRAINER" recipe "${CNN[@]}" --program >"$T/program.txt" || bad "recipe --program"
grep -Eq "stem\.bn\.running_mean +buffer" "$T/program.txt" && ok || bad "no running-mean buffer"
grep -q "^evaluation pass" "$T/program.txt" && grep -q "batchnorm_eval" "$T/program.txt" && ok ||
  bad "no evaluation pass with the running statistics"
opid() { awk -v n="$1" '/^operations/{f=1} /^evaluation pass/{f=0} f && index($0, n) {print $1; exit}' "$T/program.txt"; }
UPD=$(opid "SGD update stem.conv.weight")
RUN=$(opid "stem.bn running statistics")
[ -n "$UPD" ] && [ -n "$RUN" ] && ok || bad "operation ids not found"

# tampering: each rejected at its step (the dispute game names the operation: tests/e2e/dispute.sh)
"$TRAINER_TEST" train "$T/flipw" --key "$T/key" "${CNN[@]}" --quiet --cheat flip-weight:5 >/dev/null || bad "cheat"
expect 1 "state mismatch" 5 "$T/flipw" --order pairwise
"$TRAINER_TEST" train "$T/flipb" --key "$T/key" "${CNN[@]}" --quiet --cheat flip-buffer:4 >/dev/null || bad "cheat"
expect 1 "state mismatch" 4 "$T/flipb" --order reverse
"$TRAINER_TEST" train "$T/seed" --key "$T/key" "${CNN[@]}" --quiet --cheat augment-seed:3 >/dev/null || bad "cheat"
expect 1 "record mismatch" 3 "$T/seed" # the loss of step 3 already differs
rm -rf "$T/ck"; cp -r "$T/exact" "$T/ck"
"$B/vt_tamper" "$T/ck" "$T/key" flip-checkpoint 6 >/dev/null || bad "tamper checkpoint"
expect 1 "checkpoint altered" 6 "$T/ck" --order pairwise

# evaluation with the running statistics (accuracy on the 1000 CIFAR-10 test images)
"$TRAINER" eval "$T/exact" >"$T/eval.out" 2>&1 && grep -q "^dataset         cifar10-test (1000 examples)" "$T/eval.out" &&
  grep -Eq "^accuracy        0\.[0-9]{4}$" "$T/eval.out" && ok || bad "eval: $(cat "$T/eval.out")"
# the plain FP64 baseline (benchmarks) runs the same program
"$TRAINER" plain --precision fp64 "${CNN[@]}" >"$T/plain.out" 2>&1 && ok || bad "plain CNN baseline: $(cat "$T/plain.out")"

# export: parameters, optimiser state and running statistics by name; the committed state hash
# recomputed from the exported values by an independent reader
"$TRAINER" export "$T/exact" --format safetensors --out "$T/cnn.safetensors" --optimizer --pubkey "$T/key.pub" \
  >/dev/null && ok || bad "export"
python3 "$REF/check_export.py" "$T/cnn.safetensors" "$T/exact" 12 resnet && ok || bad "export check"
"$TRAINER" export "$T/exact" --format safetensors --out "$T/cnn0.safetensors" --step 0 --optimizer >/dev/null &&
  python3 "$REF/check_export.py" "$T/cnn0.safetensors" "$T/exact" 0 resnet >/dev/null && ok || bad "export of step 0"

vt_end
