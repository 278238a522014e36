#!/usr/bin/env bash
# On the CPU machine: verifies, with the CPU auditor, every run that scripts/gpu-check.sh trained on
# the GPU and brought back. Usage: bash scripts/gpu-audit.sh GPU_OUT_DIR [BUILD_DIR]
set -euo pipefail
out=${1:?usage: gpu-audit.sh GPU_OUT_DIR [BUILD_DIR]}
B=${2:-build/release}
tmp=$(mktemp -d /tmp/vt-gpu-audit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for t in "$out"/runs*.tar.gz; do tar xzf "$t" -C "$tmp"; done
status=0
for run in "$tmp"/runs/*/; do
  [ -f "$run/commitment.vtc" ] || continue
  echo "== $(basename "$run")"
  "$B/auditor" verify "$run" --order split --jobs 2 --quiet || status=1
done
exit $status
