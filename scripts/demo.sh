#!/usr/bin/env bash
# The main job on the embedded default: install, build, train the default MLP on MNIST
# (verifiable: rounded, logged, committed, signed), then audit the run on another evaluation
# order and print the verdict and the figures.
# Usage: bash scripts/demo.sh [extra trainer options, e.g. --set steps=500]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >build/release.configure.log 2>&1 ||
  { mkdir -p build; cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo; }
cmake --build build/release -j"$jobs" --target trainer auditor >/dev/null
B=build/release
mkdir -p runs
[ -f runs/demo.key ] || "$B/trainer" keygen runs/demo.key
rm -rf runs/demo
echo "== training (trainer order: blas)"
"$B/trainer" train --run runs/demo --key runs/demo.key "$@" | tee runs/demo.train.txt
"$B/trainer" eval --run runs/demo 2>/dev/null || true
echo "== auditing (auditor order: split, 2 parallel segments)"
set +e
"$B/auditor" verify runs/demo --order split --jobs 2 --pubkey runs/demo.key.pub --report runs/demo.audit.json
status=$?
set -e
train_rate=$(sed -n 's/.*(\([0-9.]*\) steps\/s).*/\1/p' runs/demo.train.txt | head -1)
echo "== figures"
grep -E "^(log size|log entries|final loss)" runs/demo.train.txt || true
echo "training speed  ${train_rate:-?} steps/s; audit report: runs/demo.audit.json"
case $status in
  0) echo "verdict: verified" ;;
  1) echo "verdict: REJECTED" ;;
  *) echo "verdict: cannot check" ;;
esac
exit $status
