#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine, in one run of about 5 minutes (docs/cuda.md):
#   1. unpacks the carried .deb files (.gpu-debs/, from scripts/gpu-debs.sh) into a prefix and
#      builds with the CUDA backend required (-DVT_CUDA=ON);
#   2. the kernel-by-kernel check against the CPU reference (test_cuda: bit-identical FP32
#      outputs in exact rounding; the CPU's replay of the GPU's log gives the GPU's outputs; whole
#      device-resident MLP, CNN and GPT steps against the CPU) and the CPU twins (test_epilogue,
#      test_resident); the end-to-end test, whose CUDA section then trains on the GPU and audits
#      on the CPU and on the GPU;
#   2b. operation by operation (VT_CUDA_CHECK_OPS=1, docs/cuda.md): 2 steps of the MLP, the CNN and
#      the GPT in both roundings, every device operation checked against the CPU exec of the same
#      operation on the same inputs; a difference stops the run naming the operation, its kind, the
#      output tensor and the first differing element with both values' bits;
#   2c. GPU ranks (docs/distributed.md "GPU ranks"): test_nccl (test_dist's cases through the NCCL
#      engine: one rank, and 2 ranks under mpirun) and tests/e2e/nccl_train.sh (2 ranks with
#      --backend cuda, collectives over NCCL and over MPI, against the CPU run); each says "skipped"
#      without MPI in the build or, for NCCL on 2 ranks, with fewer than 2 GPUs;
#   2d. tensor cores (issues 28 and 41; docs/tensorcore.md "GPU check"): first the SASS of every
#      tensor-core kernel (scripts/tc_sass.sh: cuobjdump -sass of the plugin and test_tc_gpu, the
#      matrix instructions each issues; tc-sass.txt under $OUT), then test_tc_gpu (the emulator
#      against the real mma.sync: the fragment layout; the questions only hardware answers, in
#      order - the E4M3 window and band probes, the zero-beside-huge probes (BF16, FP16), the
#      signed-zero probes, the maximum carry - printing the variant the GPU matched for each and
#      stopping (exit 3) when none matched; then the probe tiles, 100,000 random tiles per
#      instruction of this GPU's generation, whole GEMMs of the modes' shapes; tc-gpu.log under
#      $OUT); then MLP, CNN and GPT runs in tensor-core modes trained on the GPU (--backend cuda,
#      VT_CUDA_CHECK_TC=1: every device GEMM against the emulator) and on the CPU (emulated):
#      byte-identical commitments, and the GPU run audited VERIFIED on the CPU; tc-e4m3-sm90 (wgmma's
#      model, no kernel) refused on the GPU; at most about 4 minutes;
#   3. trains the default MLP, and shortened CNN and GPT runs, on the GPU (--backend cuda);
#   4. bench_cuda: each step against a plain FP64 step (cuBLAS DGEMM) and a plain FP32 step
#      (cuBLAS SGEMM, no TF32) on the same GPU, and the verifiable GEMM path against DGEMM;
#   5. puts under $OUT (default ./gpu-out): runs-{mlp,cnn,gpt}.tar.gz (the run directories), bench_cuda.md,
#      gpu-check.log and versions.txt (GPU, driver, CUDA); with time to spare, memcheck.log
#      (test_cuda under compute-sanitizer).
# Then, on the CPU machine: bash scripts/gpu-audit.sh OUT_DIR verifies every GPU-trained run.
# Usage: bash scripts/gpu-check.sh [--quick]   (--quick: 20-step runs, 5 bench steps)
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-check.log") 2>&1
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }

step "prefix from .gpu-debs"
P=/tmp/vt-prefix
mkdir -p "$P"
ls .gpu-debs/*.deb >/dev/null 2>&1 || { echo "gpu-check: no .gpu-debs/*.deb (run scripts/gpu-debs.sh and carry .gpu-debs)"; exit 2; }
for f in .gpu-debs/*.deb; do dpkg -x "$f" "$P"; done
A=x86_64-linux-gnu
OB=$P/usr/lib/$A/openblas-pthread
# the Debian alternatives that dpkg -x does not set up: blas.pc and cblas.h of OpenBLAS (pthread)
mkdir -p "$P/pc"
cat >"$P/pc/blas.pc" <<PC
Name: blas
Description: OpenBLAS (carried)
Version: 0.3
Libs: -L$OB -lblas
Cflags: -I$P/usr/include/$A/openblas-pthread
PC
for pc in "$P"/usr/lib/$A/pkgconfig/*.pc "$P"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed "s|^prefix=/usr|prefix=$P/usr|" "$pc" >"$P/pc/$(basename "$pc")"
done
export PKG_CONFIG_PATH=$P/pc PKG_CONFIG_LIBDIR=$P/pc
command -v pkg-config >/dev/null 2>&1 || export PATH=$P/usr/bin:$PATH
export LD_LIBRARY_PATH=$OB:$P/usr/lib/$A:${LD_LIBRARY_PATH:-}
export CPATH=$P/usr/include:$P/usr/include/$A:${CPATH:-}
export LIBRARY_PATH=$OB:$P/usr/lib/$A:${LIBRARY_PATH:-}
[ -x "$P/usr/bin/pkgconf" ] && ! command -v pkg-config >/dev/null 2>&1 && ln -sf "$P/usr/bin/pkgconf" "$P/usr/bin/pkg-config"

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  nvcc --version 2>&1 | tail -1 | sed 's/^/nvcc: /'
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$OUT/versions.txt"

step "build (-DVT_CUDA=ON)"
B=build/gpu
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVT_CUDA=ON -DVT_WERROR=ON >/tmp/vt-configure.log 2>&1 ||
  { tail -40 /tmp/vt-configure.log; exit 2; }
cmake --build "$B" -j"$(nproc)" >/tmp/vt-build.log 2>&1 || { grep -E -A3 "error" /tmp/vt-build.log | head -60; exit 2; }
status=0

step "kernel-by-kernel check (test_cuda) and the CPU twin (test_epilogue)"
"$B/test_cuda" || status=1
"$B/test_epilogue" | tail -1 || status=1
"$B/test_resident" | tail -1 || status=1
step "operation by operation (VT_CUDA_CHECK_OPS=1): every device operation against the CPU's"
CK=/tmp/vt-check-ops
rm -rf "$CK" && mkdir -p "$CK"
"$B/trainer" keygen "$CK/key" --force >/dev/null
for spec in mlp: cnn:recipes/resnet-cifar10.json gpt:recipes/gpt-shakespeare.json; do
  n=${spec%%:*} r=${spec#*:}
  RA=()
  [ -n "$r" ] && RA=(--recipe "$r")
  for rd in exact log; do
    if VT_CUDA_CHECK_OPS=1 "$B/trainer" train "$CK/$n-$rd" --key "$CK/key" "${RA[@]}" --backend cuda \
      --set steps=2 --set rounding=$rd >"$CK/$n-$rd.log" 2>&1; then
      echo "$n, $rd rounding: every device operation as the CPU's"
    else
      status=1
      echo "$n, $rd rounding: FAILED"
      tail -5 "$CK/$n-$rd.log"
    fi
  done
done
rm -rf "$CK"
step "end to end (tests/e2e/e2e.sh: its CUDA section trains on the GPU, audits on CPU and GPU)"
bash tests/e2e/e2e.sh "$B" | tail -3 || status=1

step "GPU ranks: the collectives over NCCL (test_nccl, test_nccl_np2, nccl_train; at most 240 s)"
for t in test_nccl test_nccl_np2 nccl_train; do
  timeout 240 ctest --test-dir "$B" -R "^$t\$" -V >/tmp/vt-$t.log 2>&1
  st=$?
  grep -E "(nccl_train|test_nccl|test_dist)[^ ]*: " /tmp/vt-$t.log | grep -v "^Test command" | head -8
  if grep -q "\*\*\*Skipped" /tmp/vt-$t.log; then echo "$t: skipped"
  elif [ $st = 0 ]; then echo "$t: passed"
  else status=1; echo "$t: FAILED (exit $st)"; tail -15 /tmp/vt-$t.log; fi
done

step "tensor cores: the SASS of every tensor-core kernel first (what the hardware is asked to do)"
bash scripts/tc_sass.sh "$OUT/tc-sass.txt" "$B/libvt_cuda.so" "$B/test_tc_gpu"
step "tensor cores: the questions, then the emulator against mma.sync (test_tc_gpu), the mode on the GPU against the CPU's emulation"
TILES=100000; [ "$quick" = 1 ] && TILES=10000
VT_TC_TILES=$TILES timeout 150 "$B/test_tc_gpu" >"$OUT/tc-gpu.log" 2>&1
st=$?
# the layout, then each question's probes and the variant the GPU matched, then the rest
grep -E "^(test_tc_gpu|sm[0-9]+-[a-z0-9]+[:( ]|E4M3 |question|  probe|  =>|STOP|probe )" "$OUT/tc-gpu.log" | cut -c1-220 | head -110
tc_go=1
if [ $st = 77 ]; then echo "test_tc_gpu: skipped (no GPU)"
elif [ $st = 3 ]; then
  status=1; tc_go=0
  echo "test_tc_gpu: STOPPED: a question has no variant that matches the GPU (tc-gpu.log 'STOP'); the tensor-core"
  echo "  modes are not trained on this GPU: their models would be checked against hardware they do not describe"
elif [ $st != 0 ]; then status=1; echo "test_tc_gpu: FAILED (exit $st)"; grep -E "FAIL|GPU 0x" "$OUT/tc-gpu.log" | head -20; fi
TC=/tmp/vt-tc
rm -rf "$TC" && mkdir -p "$TC"
"$B/trainer" keygen "$TC/key" --force >/dev/null
# tc-e4m3-sm90 (Hopper's wgmma model) has no GPU kernel: --backend cuda refuses it with a message
if [ $tc_go = 1 ]; then
  if "$B/trainer" train "$TC/e4m3-refused" --key "$TC/key" --backend cuda --set gemm_arith=tc-e4m3-sm90 \
      --set steps=1 --quiet >"$TC/e4m3-refused.log" 2>&1; then
    status=1; echo "tc-e4m3-sm90 on the GPU: NOT refused"
  elif grep -q "wgmma" "$TC/e4m3-refused.log"; then echo "tc-e4m3-sm90 on the GPU: refused ($(grep -m1 -o "the model is Hopper's FP8 wgmma[^:]*" "$TC/e4m3-refused.log"))"
  else status=1; echo "tc-e4m3-sm90 on the GPU: failed without the refusal's message:"; tail -3 "$TC/e4m3-refused.log"; fi
fi
for spec in mlp:tc-bf16-sm90::100 mlp-e4m3f16:tc-e4m3f16-sm90::100 cnn:tc-bf16-sm90:recipes/resnet-cifar10.json:8 \
            gpt:tc-fp16-sm90:recipes/gpt-shakespeare.json:10; do
  [ $tc_go = 1 ] || break
  IFS=: read -r n mode r steps <<<"$spec"
  RA=(--set gemm_arith="$mode" --set steps="$steps" --set checkpoint_every=50 --quiet)
  [ -n "$r" ] && RA+=(--recipe "$r")
  t1=$(date +%s)
  if ! VT_CUDA_CHECK_TC=1 timeout 120 "$B/trainer" train "$TC/$n-gpu" --key "$TC/key" --backend cuda "${RA[@]}" \
    >"$TC/$n-gpu.log" 2>&1; then
    status=1; echo "$n ($mode): GPU training FAILED"; tail -5 "$TC/$n-gpu.log"; continue
  fi
  t2=$(date +%s)
  timeout 240 "$B/trainer" train "$TC/$n-cpu" --key "$TC/key" "${RA[@]}" >"$TC/$n-cpu.log" 2>&1 ||
    { status=1; echo "$n ($mode): CPU training FAILED"; tail -5 "$TC/$n-cpu.log"; continue; }
  t3=$(date +%s)
  if cmp -s "$TC/$n-gpu/commitment.vtc" "$TC/$n-cpu/commitment.vtc"; then same="byte-identical commitments"
  else status=1; same="commitments DIFFER"; fi
  v=$(timeout 240 "$B/auditor" verify "$TC/$n-gpu" --quiet 2>&1 | head -1) || status=1
  echo "$n ($mode, $steps steps): GPU $((t2 - t1)) s, CPU emulation $((t3 - t2)) s: $same; the GPU run audited on the CPU: $v"
done
rm -rf "$TC"

step "training on the GPU"
R=$OUT/runs
mkdir -p "$R"
"$B/trainer" keygen "$R/key" --force >/dev/null
S=()
[ "$quick" = 1 ] && S=(--set steps=20)
# the default MLP; checkpoints every 500 steps instead of 100 so that its run directory stays
# below the 16 MiB a brought-back file may have
"$B/trainer" train "$R/mlp" --key "$R/key" --backend cuda --set checkpoint_every=500 "${S[@]}" || status=1
CS=(--set steps=${CNN_STEPS:-150}); [ "$quick" = 1 ] && CS=(--set steps=10)
"$B/trainer" train "$R/cnn" --key "$R/key" --recipe recipes/resnet-cifar10.json --backend cuda "${CS[@]}" || status=1
GS=(--set steps=${GPT_STEPS:-100}); [ "$quick" = 1 ] && GS=(--set steps=10)
"$B/trainer" train "$R/gpt" --key "$R/key" --recipe recipes/gpt-shakespeare.json --backend cuda "${GS[@]}" || status=1
"$B/auditor" verify "$R/mlp" --backend cuda --order pairwise --quiet | head -2 || status=1
rm -f "$R/key"
for r in mlp cnn gpt; do (cd "$OUT" && tar czf "runs-$r.tar.gz" "runs/$r"); done
rm -rf "$R"
ls -la "$OUT"

step "bench_cuda"
N=20; [ "$quick" = 1 ] && N=5
"$B/bench_cuda" --steps "$N" --recipe recipes/resnet-cifar10.json --recipe recipes/gpt-shakespeare.json \
  | tee "$OUT/bench_cuda.md" || status=1
# with time to spare: the kernels under compute-sanitizer (out-of-bounds and uninitialised reads)
if [ $(( $(date +%s) - t0 )) -lt 330 ] && command -v compute-sanitizer >/dev/null 2>&1; then
  step "compute-sanitizer memcheck of test_cuda (at most 120 s)"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/test_cuda" >"$OUT/memcheck.log" 2>&1
  st=$?
  tail -3 "$OUT/memcheck.log"
  [ "$st" = 9 ] && { echo "memcheck found errors (memcheck.log)"; status=1; }
  [ "$st" = 124 ] && echo "memcheck did not finish in 120 s (not a failure)"
fi
step "done (status $status)"
exit $status
