#!/usr/bin/env bash
# Fetches, on this (Debian 12) machine, the .deb files that scripts/gpu-check.sh unpacks on a GPU
# machine whose image has CUDA, cuBLAS, CMake and a compiler but not this project's -dev libraries.
# They land in .gpu-debs/ (ignored by git: carry it to the GPU machine). Usage: bash scripts/gpu-debs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(libopenblas-pthread-dev libopenblas0-pthread libopenblas-dev libgfortran5 libquadmath0
      libssl-dev libssl3 libsodium-dev libsodium23 libzstd-dev libzstd1 libsqlite3-dev libsqlite3-0
      libjansson-dev libjansson4 zlib1g-dev zlib1g pkgconf pkgconf-bin libpkgconf3)
mkdir -p .gpu-debs
grep -qx '/.gpu-debs/' .git/info/exclude 2>/dev/null || echo '/.gpu-debs/' >>.git/info/exclude
[ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v lock)" ] || apt-get update -q
(cd .gpu-debs && apt-get download "${PKGS[@]}")
du -sh .gpu-debs
