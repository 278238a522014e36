#!/usr/bin/env bash
# The residual CNN on CIFAR-10 end to end: install, build, train the README's default
# (recipes/resnet-cifar10.json: about 9 minutes on 2 cores), evaluate it on the 1000 test images
# with its running statistics, audit it in another evaluation order (split, 2 parallel segments),
# export the verified weights with their running statistics, and print the verdict.
# Usage: bash scripts/cnn.sh [extra trainer options, e.g. --set rounding=log --set steps=300]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p build runs
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >build/release.configure.log 2>&1 ||
  { cat build/release.configure.log; exit 1; }
cmake --build build/release -j"$jobs" --target trainer auditor >/dev/null
B=build/release
run=runs/cnn
[ -f runs/cnn.key ] || "$B/trainer" keygen runs/cnn.key
rm -rf "$run"
echo "== training the residual CNN (recipes/resnet-cifar10.json)"
"$B/trainer" train "$run" --key runs/cnn.key --recipe recipes/resnet-cifar10.json "$@"
echo "== evaluation (running statistics)"
"$B/trainer" eval "$run"
echo "== audit (order split, 2 parallel segments)"
set +e
"$B/auditor" verify "$run" --order split --jobs 2 --pubkey runs/cnn.key.pub --report "$run.audit.json"
status=$?
set -e
echo "== export"
"$B/trainer" export "$run" --format safetensors --out "$run.safetensors" --pubkey runs/cnn.key.pub
case $status in 0) echo "verdict: verified" ;; 1) echo "verdict: REJECTED" ;; *) echo "verdict: cannot check" ;; esac
exit $status
