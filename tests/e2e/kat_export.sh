#!/usr/bin/env bash
# Known answers of `trainer export` (issue 23, pinned before the operation kinds are moved): the
# SHA-256 of the safetensors bytes exported from tiny MLP, CNN and GPT runs in both rounding modes
# (the parameters, optimiser state and buffers of the last step; a log run's state is the exact run's,
# its manifest, hence its manifest hash and Merkle root in the metadata, differ). Exact rounding and a key-free export
# (the metadata are the step, state hash, Merkle root and manifest hash) make the bytes a function of
# the recipe, the data and the code, so they hold on every machine. The answers live in
# tests/kat/export.kat ("name sha256" lines), written by this script from the code before any move:
#     bash tests/e2e/kat_export.sh BUILD_DIR --write tests/kat/export.kat
# and change only with a deliberate, documented change of what a step computes or what export writes.
# The CNN and GPT answers are step program 1's (named: new runs of those architectures default to
# program 3, whose manifest, hence metadata, differ).
set -u
. "$(dirname "$0")/lib.sh"
vt_begin kat_export "${1:-}"
WRITE=
[ "${2:-}" = --write ] && WRITE=${3:?--write FILE}
[ -x "$TRAINER" ] || { echo "kat_export: no $TRAINER"; exit 1; }
"$TRAINER" keygen "$T/key" >/dev/null || { echo "kat_export: keygen failed"; exit 1; }
MLP=(--set dataset=digits --set 'layers=[64,16,10]' --set optimizer=adam --set lr=0.002 --set batch=16 --set steps=4
     --set checkpoint_every=2 --set state_hash_every=1)
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=256 --set resnet_width=4 --set resnet_stages=2
     --set batch=8 --set steps=3 --set checkpoint_every=3 --set state_hash_every=1 --set decay_every=2
     --set program_version=1)
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_heads=2 --set gpt_width=16
     --set gpt_context=8 --set batch=4 --set steps=3 --set warmup=1 --set dropout=0.1 --set checkpoint_every=3
     --set state_hash_every=1 --set program_version=1)
: >"$T/got"
for name in mlp resnet gpt mlp-log resnet-log gpt-log; do
  case $name in
    mlp*) args=("${MLP[@]}") ;;
    resnet*) args=("${CNN[@]}") ;;
    gpt*) args=("${GPT[@]}") ;;
  esac
  case $name in *-log) args+=(--set rounding=log) ;; esac
  if ! "$TRAINER" train "$T/$name" --key "$T/key" "${args[@]}" --quiet >"$T/$name.out" 2>&1 ||
     ! "$TRAINER" export "$T/$name" --format safetensors --out "$T/$name.safetensors" --optimizer \
       --pubkey "$T/key.pub" >>"$T/$name.out" 2>&1; then
    echo "FAIL $name: train or export"; cat "$T/$name.out"; fail=1; continue
  fi
  echo "$name $(sha256sum "$T/$name.safetensors" | cut -d' ' -f1)" >>"$T/got"
done
if [ -n "$WRITE" ]; then
  { echo "# kat_export answers (tests/e2e/kat_export.sh): name sha256 of the exported safetensors; written by --write"
    cat "$T/got"; } >"$WRITE"
  echo "wrote $(wc -l <"$T/got") answers to $WRITE"
  exit $fail
fi
while read -r name want; do
  case $name in '#'*|'') continue ;; esac
  got=$(awk -v n="$name" '$1 == n {print $2}' "$T/got")
  if [ "$got" = "$want" ]; then echo "ok   $name $got"; else echo "FAIL $name: pinned $want, got ${got:-(nothing)}"; fail=1; fi
done <"$SRC/tests/kat/export.kat"
exit $fail
