#!/usr/bin/env bash
# Wall time of the reference game under attack against the same game unloaded (issue 9's "at most
# 2x the unloaded time"): a benchmark, not a test (issue 21: wall time depends on whatever else the
# machine runs; tests/e2e/attack.sh checks winners, verdicts and bounded resources instead).
# For each attack that plays games while it runs, tests/e2e/attack.sh plays 3 games unloaded and 3
# under the attack (VT_ATTACK_GAMES=3) and prints the medians (VT_ATTACK_BENCH=1); this prints one
# table row per attack: the medians, their ratio, and the honest servers' CPU seconds.
# Usage: bench/attack_load.sh [BUILD_DIR] [CASE...]   (default build/release; idle silent_tls flood unauth)
# Run it on an otherwise idle machine: other work on the same cores moves every figure.
# Figures: docs/benchmarks.md, "The dispute game under attack".
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}; shift || true
CASES=("$@"); [ ${#CASES[@]} = 0 ] && CASES=(idle silent_tls flood unauth)
[ -x "$BUILD/vt_attack" ] || { echo "no $BUILD/vt_attack: build the project first (cmake --build $BUILD)" >&2; exit 2; }
GAMES=${VT_ATTACK_GAMES:-3}
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); median of $GAMES games each side"
printf '| attack | unloaded game | loaded game | loaded / unloaded | arbiter CPU attacked (unloaded %s games) | trainer CPU attacked (unloaded) |\n' "$GAMES"
printf '|---|--:|--:|--:|--:|--:|\n'
st=0
for c in "${CASES[@]}"; do
  out=$(VT_ATTACK_GAMES=$GAMES VT_ATTACK_BENCH=1 bash tests/e2e/attack.sh "$BUILD" "$c" 2>&1); rc=$?
  [ $rc = 0 ] || { st=1; echo "$out" | grep -E "FAIL|failed" >&2; }
  r=$(echo "$out" | awk '$1 == "ratio:" {print $3, $5, $8}')
  read -r ratio lo un <<<"$r"
  ucpu=$(echo "$out" | sed -n 's/.*unloaded game .*CPU arbiter \([0-9.]*\) s, trainer \([0-9.]*\) s.*/\1 \2/p')
  read -r ua ut <<<"$ucpu"
  ca=$(echo "$out" | sed -n 's/^figure: [a-z_]* arbiter CPU \([0-9.]*\) s while attacked.*/\1/p')
  ct=$(echo "$out" | sed -n 's/^figure: [a-z_]* trainer CPU \([0-9.]*\) s while attacked.*/\1/p')
  printf '| %s | %s s | %s s | %s | %s s (%s s) | %s s (%s s) |\n' "$c" "${un:-?}" "${lo:-?}" "${ratio:-?}" "${ca:-?}" "${ua:-?}" "${ct:-?}" "${ut:-?}"
done
exit $st
