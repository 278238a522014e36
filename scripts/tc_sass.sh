#!/usr/bin/env bash
# The SASS of every tensor-core kernel (scripts/gpu-check.sh step 2d, first; docs/tensorcore.md "GPU
# check"): cuobjdump -sass of each binary given, the functions whose names hold "k_tc_" (the mode's
# GEMM and the GPU check's tiles, backend/cuda/vt_tc_mma.cu) written whole to OUTFILE, and a summary printed:
# per kernel the matrix instructions and conversions it issues (HMMA, QMMA, IMMA, the warpgroup
# *GMMA, F2FP, F2F) with their counts - what the hardware is asked to do before anything is compared:
# the E4M3 m16n8k32 (k_tc_tiles<4>) as QMMA is a native FP8 unit, as F2FP...E4M3 conversions then
# HMMA the FP16 path (cutlass issue 1986). Prints a line and exits 0 without cuobjdump (nothing to
# dump is not a failure of the check).
# Usage: tc_sass.sh OUTFILE BINARY...
set -u
out=$1
shift
CUOBJDUMP=$(command -v cuobjdump || true)
[ -z "$CUOBJDUMP" ] && [ -x /usr/local/cuda/bin/cuobjdump ] && CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
if [ -z "$CUOBJDUMP" ]; then
  echo "tc_sass: no cuobjdump on this machine: the SASS is not dumped"
  exit 0
fi
FILT=$(command -v cu++filt || command -v c++filt || echo cat)
: >"$out"
for bin in "$@"; do
  [ -f "$bin" ] || { echo "tc_sass: $bin: no such file"; continue; }
  echo "== $bin" >>"$out"
  # the tensor-core functions only (a function runs from its "Function :" line to the next)
  "$CUOBJDUMP" -sass "$bin" 2>&1 | awk '/Function :/ { keep = ($3 ~ /k_tc_/) } keep' >>"$out"
done
# the summary: per function, its opcodes of interest and their counts
awk -v filt="$FILT" '
  /^== / { bin = $2; next }
  /Function :/ {
    fn = bin "|" $3; cmd = "echo " $3 " | " filt; dm = $3; cmd | getline dm; close(cmd)
    sub(/\(.*/, "", dm); b = bin; sub(/.*\//, "", b); name[fn] = b ": " dm; order[++nf] = fn; next
  }
  /\/\*[0-9a-f]+\*\// {
    line = $0
    sub(/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]*/, "", line)
    sub(/^@!?U?P[0-9T]+[ \t]+/, "", line)
    split(line, w, /[ \t;]+/)
    op = w[1]
    if (op ~ /^(HMMA|QMMA|IMMA|BMMA|HGMMA|QGMMA|IGMMA|F2FP|F2F)/) { n[fn, op]++; if (!((fn, op) in seen)) { seen[fn, op] = 1; ops[fn] = ops[fn] " " op } }
  }
  END {
    if (!nf) { print "tc_sass: no k_tc_ function in the binaries"; exit }
    for (i = 1; i <= nf; i++) {
      fn = order[i]; s = ""
      m = split(ops[fn], o, " ")
      for (j = 1; j <= m; j++) s = s (j > 1 ? ", " : "") o[j] " x" n[fn, o[j]]
      printf "  %s: %s\n", name[fn], (s == "" ? "(no matrix instruction)" : s)
      if (fn ~ /k_tc_tilesILi4E/) {
        verdict = "neither QMMA nor HMMA: unknown"
        if (ops[fn] ~ /QMMA/) verdict = "QMMA: a native FP8 matrix unit"
        else if (ops[fn] ~ /HMMA/ && ops[fn] ~ /F2FP[^ ]*E4M3/) verdict = "F2FP E4M3 conversions then HMMA: the FP16 path"
        else if (ops[fn] ~ /HMMA/) verdict = "HMMA: an FP16/BF16 matrix unit"
        printf "  => the E4M3 mma.sync m16n8k32 compiles to %s\n", verdict
      }
    }
  }' "$out"
echo "tc_sass: the kernels' SASS in $out"
