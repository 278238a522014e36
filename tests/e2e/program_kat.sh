#!/usr/bin/env bash
# Known answers of the step programs (tests/kat/programs/): `trainer recipe --program` of each recipe in
# tests/kat/programs/LIST must print NAME.txt byte for byte - the tensor table (ids, names, classes,
# shapes) and the operations (ids, names, kinds, inputs, outputs, arguments). The files were written
# by the hand-written builders; the builders derived from graphs (arch/vt_graph.c) must reproduce
# them op for op; a GPT or CNN recipe that names no program_version prints program 3. Usage: program_kat.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin program_kat "${1:-}"
K="$SRC/tests/kat/programs"
while read -r name rest; do
  case $name in '#'* | '') continue ;; esac
  read -ra args <<<"${rest//@RECIPES@/$RECIPES}"
  if ! "$TRAINER" recipe --program "${args[@]}" >"$T/$name.txt" 2>"$T/err"; then
    bad "$name: trainer recipe --program failed: $(head -c 300 "$T/err")"
  elif cmp -s "$K/$name.txt" "$T/$name.txt"; then
    ok "$name"
  else
    bad "$name: the program differs from tests/kat/programs/$name.txt (first lines: $(diff "$K/$name.txt" "$T/$name.txt" | head -6 | tr '\n' '|'))"
  fi
done <"$K/LIST"
# a recipe of the GPT or the CNN that names no program_version gets program 3 (a new run's default)
for pair in "gpt-small-v3 gpt-shakespeare" "resnet-default-v3 resnet-cifar10"; do
  set -- $pair
  args=(--recipe "$RECIPES/$2.json")
  [ "$2" = gpt-shakespeare ] && args+=(--set gpt_layers=1 --set gpt_width=32 --set gpt_context=16 --set gpt_heads=2)
  if "$TRAINER" recipe --program "${args[@]}" >"$T/default-$1.txt" 2>"$T/err" && cmp -s "$K/$1.txt" "$T/default-$1.txt"
  then ok "$2 without program_version: program 3 ($1)"
  else bad "$2 without program_version is not program 3: $(head -c 300 "$T/err")"; fi
done
vt_end
