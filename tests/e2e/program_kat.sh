#!/usr/bin/env bash
# Known answers of the step programs (tests/kat/programs/): `trainer recipe --program` of each recipe in
# tests/kat/programs/LIST must print NAME.txt byte for byte - the tensor table (ids, names, classes,
# shapes) and the operations (ids, names, kinds, inputs, outputs, arguments). The files were written
# by the hand-written builders; the builders derived from graphs (arch/vt_graph.c) must reproduce
# them op for op. Usage: program_kat.sh BUILD_DIR
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
vt_end
