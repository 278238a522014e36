/* fuzz_vnnlib.c - the VNN-LIB parser (cert/vt_vnnlib.c) under libFuzzer, and the same check as a
 * corpus replayer (built with -DVT_FUZZ_REPLAY: ctest cert_vnnlib_corpus runs every file of
 * tests/corpus/vnnlib through it). Build the fuzzer: cmake -DVT_FUZZ=ON with CC=clang (target
 * fuzz_vnnlib), then e.g. mkdir -p /tmp/v && ./fuzz_vnnlib /tmp/v tests/corpus/vnnlib -max_total_time=60.
 * Any input may be refused, but only as VT_ERR_FORMAT, VT_ERR_UNSUPPORTED, VT_ERR_LIMIT or
 * VT_ERR_NOMEM, and what is accepted is consistent: every box finite and ordered, the inner box
 * inside the outer one, the disjuncts' rows in order and covering every row, every constant's
 * interval ordered, every coefficient finite. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cert/vt_vnnlib.h"

static int check_one(const uint8_t *data, size_t size)
{
    vt_vnnlib v;
    vt_err e = vt_vnnlib_parse((const char *)data, size, &v);
    if (e) return !(e == VT_ERR_FORMAT || e == VT_ERR_UNSUPPORTED || e == VT_ERR_LIMIT || e == VT_ERR_NOMEM);
    int bad = v.nx < 1 || v.ny < 1 || v.n_disj < 1 || v.disj_start[0] != 0 || v.disj_start[v.n_disj] != v.n_rows;
    for (uint32_t i = 0; i < v.nx && !bad; i++)
        bad = !isfinite(v.xl[i]) || !isfinite(v.xu[i]) || !(v.xl[i] <= v.xu[i]) || v.ixl[i] < v.xl[i] || v.ixu[i] > v.xu[i];
    for (uint32_t k = 0; k < v.n_disj && !bad; k++) bad = v.disj_start[k] > v.disj_start[k + 1];
    for (uint32_t r = 0; r < v.n_rows && !bad; r++) {
        bad = !(v.d_lo[r] <= v.d_hi[r]) || v.strict[r] > 1;
        for (uint32_t j = 0; j < v.ny && !bad; j++) bad = !isfinite(v.C[(size_t)r * v.ny + j]);
    }
    vt_vnnlib_free(&v);
    return bad;
}

#ifndef VT_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (check_one(data, size)) abort();
    return 0;
}
#else
/* fuzz_vnnlib FILE...: 0 when every file passes the check */
int main(int argc, char **argv)
{
    int fail = 0, n = 0, acc = 0;
    for (int a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) {
            fprintf(stderr, "%s: cannot open it\n", argv[a]);
            return 2;
        }
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        vt_vnnlib v;
        if (vt_vnnlib_parse((const char *)buf, len, &v) == VT_OK) acc++, vt_vnnlib_free(&v);
        if (check_one(buf, len)) {
            fprintf(stderr, "FAIL: %s\n", argv[a]);
            fail = 1;
        }
        n++;
    }
    printf("fuzz_vnnlib: %d corpus files checked (%d accepted)%s\n", n, acc, fail ? ", FAILURES" : "");
    return fail;
}
#endif
