#!/usr/bin/env bash
# env_fastmath.sh BUILD_DIR - a CBLAS built with -ffast-math is refused (common/vt_env.h).
#
# A shared library built with `cc -O3 -ffast-math -shared` carries GCC's crtfastmath start-up code,
# which sets flush-to-zero and denormals-are-zero for the whole process when the library is loaded.
# Selected exactly as the README swaps the BLAS (a libblas.so.3 on LD_LIBRARY_PATH), it would make
# a run sign a different commitment. Here such a CBLAS (a shim that forwards cblas_sgemm and
# cblas_dgemm to the system's libblas.so.3) is put on LD_LIBRARY_PATH: the trainer, the auditor
# and the arbiter must refuse to compute, exit 2 and name the cause, and the trainer must write no
# commitment. The same shim built without -ffast-math is a working BLAS (control).
# Exit 77 (skipped) where no C compiler is found or its -ffast-math does not set flush-to-zero.
set -u
. "$(dirname "$0")/lib.sh"
vt_begin env_fastmath "${1:-}"
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || { echo "no C compiler ($CC): skipped"; exit 77; }

# the CBLAS the programs load now (the libblas.so.3 alternative), which the shim forwards to
REAL=$(ldd "$B/trainer" | awk '$1 == "libblas.so.3" {print $3}')
[ -n "$REAL" ] && REAL=$(readlink -f "$REAL")
[ -f "$REAL" ] || { echo "FAIL: cannot find the trainer's libblas.so.3"; exit 1; }
cat >"$T/shim.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
typedef void sgemm_fn(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void dgemm_fn(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *,
                      int);
static void *real(const char *name)
{
    static void *h;
    if (!h) h = dlopen(REAL_BLAS, RTLD_NOW | RTLD_LOCAL);
    void *f = h ? dlsym(h, name) : NULL;
    if (!f) {
        fprintf(stderr, "shim: %s not found in %s\n", name, REAL_BLAS);
        abort();
    }
    return f;
}
void cblas_sgemm(int o, int ta, int tb, int m, int n, int k, float al, const float *a, int lda, const float *b, int ldb,
                 float be, float *c, int ldc)
{
    ((sgemm_fn *)real("cblas_sgemm"))(o, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}
void cblas_dgemm(int o, int ta, int tb, int m, int n, int k, double al, const double *a, int lda, const double *b,
                 int ldb, double be, double *c, int ldc)
{
    ((dgemm_fn *)real("cblas_dgemm"))(o, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}
EOF
mkdir -p "$T/fast" "$T/plain"
"$CC" -O3 -ffast-math -shared -fPIC -DREAL_BLAS="\"$REAL\"" -Wl,-soname,libblas.so.3 -o "$T/fast/libblas.so.3" "$T/shim.c" -ldl ||
  { echo "FAIL: cannot build the fast-math shim"; exit 1; }
"$CC" -O2 -shared -fPIC -DREAL_BLAS="\"$REAL\"" -Wl,-soname,libblas.so.3 -o "$T/plain/libblas.so.3" "$T/shim.c" -ldl ||
  { echo "FAIL: cannot build the plain shim"; exit 1; }

# does loading the fast-math library flush subnormals? (a program linked against it; volatile: not folded)
cat >"$T/probe.c" <<'EOF'
#include <float.h>
#include <stdio.h>
int main(void)
{
    volatile float a = FLT_MIN, h = 0.5f, r = a * h;
    puts(r == 0.0f ? "flush" : "gradual");
    return 0;
}
EOF
"$CC" -O0 -o "$T/probe" "$T/probe.c" -Wl,--no-as-needed -L"$T/fast" -l:libblas.so.3 || { echo "FAIL: probe"; exit 1; }
p_plain=$(LD_LIBRARY_PATH="$T/plain" "$T/probe")
p_fast=$(LD_LIBRARY_PATH="$T/fast" "$T/probe")
echo "probe: plain shim: $p_plain, fast-math shim: $p_fast"
[ "$p_plain" = gradual ] || { echo "FAIL: subnormals flushed without the fast-math library"; exit 1; }
[ "$p_fast" = flush ] || { echo "$CC -ffast-math -shared does not set flush-to-zero at load here: skipped"; exit 77; }
case "$(uname -m)" in x86_64 | i?86) CAUSE="FTZ and DAZ set in MXCSR" ;; *) CAUSE="flushes subnormals to zero" ;; esac

# each program resolves libblas.so.3 to the shim on LD_LIBRARY_PATH, as the README's BLAS swap does
for prog in trainer auditor arbiter; do
  if LD_LIBRARY_PATH="$T/fast" ldd "$B/$prog" | grep -q "$T/fast/libblas.so.3"; then ok; else
    bad "$prog does not load the shim through LD_LIBRARY_PATH"; fi
done

RECIPE=(--set dataset=digits --set "layers=[64,16,10]" --set batch=8 --set steps=4 --set optimizer=adam
        --set beta1=0.5 --set beta2=0.5 --set lr=0.001 --set checkpoint_every=2 --set state_hash_every=2)
"$B/trainer" keygen "$T/key" >/dev/null 2>&1 || { echo "FAIL: keygen"; exit 1; }

# control: the shim without -ffast-math is a working CBLAS: train and verify through it
if LD_LIBRARY_PATH="$T/plain" "$B/trainer" train "$T/run" --key "$T/key" "${RECIPE[@]}" --quiet >"$T/out" 2>&1 &&
   [ -f "$T/run/commitment.vtc" ]; then ok; else bad "training through the plain shim: $(cat "$T/out")"; fi
if LD_LIBRARY_PATH="$T/plain" "$B/auditor" verify "$T/run" --pubkey "$T/key.pub" --quiet >"$T/out" 2>&1; then ok; else
  bad "verifying through the plain shim: $(cat "$T/out")"; fi

# refuse: exit STATUS, the message names the cause, on stderr or stdout
refused() {
  local what=$1; shift
  LD_LIBRARY_PATH="$T/fast" timeout "$(vt_scale 120)" "$@" >"$T/out" 2>&1
  local st=$?
  if [ "$st" != 2 ]; then bad "$what: exit $st, expected 2: $(cat "$T/out")"; return; fi
  if ! grep -q "flushes subnormals to zero" "$T/out" || ! grep -q "$CAUSE" "$T/out" ||
     ! grep -q "refusing to compute" "$T/out"; then
    bad "$what: the message does not name the cause: $(cat "$T/out")"; return; fi
  echo "$what: exit 2: $(head -c 300 "$T/out")"
  ok
}
refused "trainer train" "$B/trainer" train "$T/run2" --key "$T/key" "${RECIPE[@]}" --quiet
if [ -e "$T/run2/commitment.vtc" ]; then bad "the refused trainer wrote a commitment"; else ok; fi
refused "trainer serve" "$B/trainer" serve "$T/run" --listen 127.0.0.1:0 --key "$T/key" --arbiter-key "$T/key.pub" --quiet
refused "trainer export" "$B/trainer" export "$T/run" --format safetensors --out "$T/x.safetensors"
refused "auditor verify" "$B/auditor" verify "$T/run" --pubkey "$T/key.pub" --quiet
refused "auditor challenge" "$B/auditor" challenge "$T/run" --arbiter 127.0.0.1:9 --key "$T/key" --quiet
refused "arbiter serve" "$B/arbiter" serve --listen 127.0.0.1:0 --key "$T/key" --quiet
refused "arbiter check" "$B/arbiter" check "$T/no-such-transcript"

vt_end
