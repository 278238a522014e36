#!/usr/bin/env bash
# bench_bab_threads.sh - branch and bound over threads (docs/benchmarks.md "Branch and bound over
# threads", docs/certify.md "Parallel search"): an mnist_fc network (784-256x2-10, recipes/
# mnist_fc_256x2.json, STEPS of its steps) certified with `--method beta-crown --domains D` on its
# first N test images, with --threads 1 and --threads 2; the two certificates compared byte for byte,
# then check-certificate (the one-pass leaf replay) with --threads 1 and 2. Prints wall and user
# seconds (/usr/bin/time, the whole auditor process) and the load average before each run.
#
# Usage: bash bench/bench_bab_threads.sh BUILD_DIR [OUT_DIR] [N] [D] [STEPS] [EPS]
#   defaults: OUT_DIR BUILD_DIR/bab-threads, N 10, D 100, STEPS 300, EPS 0.02. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
B=$(cd "${1:?usage: bench_bab_threads.sh BUILD_DIR [OUT_DIR] [N] [D] [STEPS] [EPS]}" && pwd)
O=${2:-$B/bab-threads} N=${3:-10} D=${4:-100} S=${5:-300} E=${6:-0.02}
mkdir -p "$O"
[ -e "$O/k" ] || "$B/trainer" keygen "$O/k" >/dev/null
[ -e "$O/a" ] || "$B/auditor" keygen "$O/a" >/dev/null
[ -e "$O/mnist2/commitment.vtc" ] ||
  "$B/trainer" train "$O/mnist2" --key "$O/k" --recipe recipes/mnist_fc_256x2.json --set steps="$S" --quiet >/dev/null
t() { # t LABEL CMD...: one line, the load before it, wall and user seconds
  local l; l=$(cut -d' ' -f1-3 /proc/loadavg)
  /usr/bin/time -f "%e %U" -o "$O/time" "${@:2}" >"$O/$1.out" 2>"$O/$1.err" || { echo "$1: failed"; cat "$O/$1.err"; exit 1; }
  echo "| $1 | $(cut -d' ' -f1 "$O/time") | $(cut -d' ' -f2 "$O/time") | $l |"
}
echo "| run | wall s | user s | load average (1, 5, 15 min) before it |"
echo "|---|---|---|---|"
for n in 1 2; do
  t "certify --threads $n" "$B/auditor" certify "$O/mnist2" --eps "$E" --examples "$N" --method beta-crown --domains "$D" \
    --threads $n --out "$O/c.$n" --key "$O/a" --report "$O/r.$n.json" --quiet
done
cmp "$O/c.1" "$O/c.2" && echo "certificates of --threads 1 and 2: the same bytes ($(wc -c <"$O/c.1") bytes)"
for n in 1 2; do
  t "check-certificate --threads $n" "$B/auditor" check-certificate "$O/c.1" "$O/mnist2" --threads $n
done
python3 - "$O/r.1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("answers: %d verified, %d falsified, %d unknown; subdomains %s; tree nodes %s" % (
    r["verified"], r["falsified"], r["unknown"], [e.get("subdomains") for e in r["examples"]],
    [e.get("tree_nodes") for e in r["examples"]]))
PY
