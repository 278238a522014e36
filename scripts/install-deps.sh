#!/usr/bin/env bash
# Installs the Debian 12 packages this project needs. Idempotent; run as root.
set -euo pipefail
PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libopenblas-dev libssl-dev libsodium-dev libzstd-dev libsqlite3-dev libjansson-dev
      zlib1g-dev sqlite3 zstd
      libopenblas0-pthread libblis4-pthread libblis4-openmp libblas3
      libmpfr-dev libgmp-dev
      libonnx-dev protobuf-c-compiler libprotobuf-c-dev python3-onnx python3-numpy
      python3-torch
      libopenmpi-dev openmpi-bin
      chromium fonts-dejavu-core)
# libopenblas0-pthread, libblis4-pthread, libblis4-openmp and libblas3 are the CBLAS implementations behind Debian's libblas.so.3 alternative
# (OpenBLAS pthread, BLIS pthread and OpenMP, the reference BLAS): scripts/test.sh runs the
# invariant, kernel and end-to-end tests under each of them (scripts/blas-matrix.sh).
# libmpfr-dev (with libgmp-dev) is test-only: the independent exact reference of tests/unit/test_exact.c.
# libonnx-dev (the ONNX schema, onnx.proto), protobuf-c-compiler (protoc-c) and libprotobuf-c-dev
# build `trainer export --format onnx` (optional: arch/onnx.cmake); python3-onnx and python3-numpy
# are test-only: tests/e2e/onnx_export.sh checks the exported models with onnx's checker and NumPy.
# python3-torch (PyTorch 1.13) is test-only: tests/e2e/torch_layout.sh loads `trainer export --layout
# torch` files into torch.nn modules written from the docs (strict load, same accuracy and loss), and
# tests/ref/user_files.py writes the PyTorch-made initial weights of tests/e2e/user_data.sh.
# libopenmpi-dev and openmpi-bin (Open MPI: the library and mpirun) build and run the data-parallel
# layer (dist/, optional: VT_MPI); its tests run mpirun as root with --allow-run-as-root
# (docs/distributed.md).
# chromium (Debian's, headless) and fonts-dejavu-core are test-only: tests/e2e/report.sh renders
# `trainer report`'s page, checks its DOM and keeps a screenshot in the build directory (a download
# of about 115 MB, once; the test runs in seconds).
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
