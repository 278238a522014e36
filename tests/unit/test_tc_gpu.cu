/* test_tc_gpu - the tensor-core emulator (kernels/vt_tc.c) against the GPU's real mma.sync, bit for bit
 * (issue 28 item 4, issue 41; docs/tensorcore.md "GPU check"). Exits 77 without a GPU. On a GPU, for
 * every instruction the device has (the modes' - BF16 / FP16 m16n8k16 and m16n8k8, the FP16 m16n8k16
 * on E4M3 operands the kernel converted (sm90-e4m3f16) - and the E4M3 m16n8k32 no mode issues):
 *   1. the fragment layout: tiles and whole GEMMs of small integers (exact in every model) against
 *      their integer sums - a layout error in backend/cuda/vt_tc_mma.cu shows here, before any arithmetic;
 *   2. the questions only hardware answers (tests/unit/vt_tc_probes.h QPROBES; docs/tensorcore.md "The
 *      unknowns"), in this order: the E4M3 window and band probes (which model the E4M3 m16n8k32
 *      follows: wgmma's, or FP16's in one of two splits), the zero-beside-huge probes (BF16, FP16:
 *      whether a zero product counts in the maximum exponent), the signed-zero probes (all products
 *      cancelling; c = -0), the maximum carry; each probe's GPU bits against every variant's
 *      emulation, then per question the variants the GPU matched. None matched: the question needs a
 *      parameter the emulator lacks - printed, and the test stops (exit 3) before the random tiles; a
 *      match that is not the modes' variant: a failure (the modes' model is not this GPU's);
 *   3. the probe tiles of tests/unit/test_tc.c (PROBES), each group in element (0, 0) of its own tile: the
 *      GPU's bits against the emulator's; a variant probe (+out-rne, +align-floor, +floor-off, +sat)
 *      reports which of the two rows the GPU matched;
 *   4. VT_TC_TILES (default 100,000) random tiles of 16 x 8 groups (inputs of every class: any bit
 *      pattern, a band around 1, tiny, huge; accumulators likewise), one mma instruction each, against
 *      vt_tc_group; the first mismatches are printed with their inputs and the parameter variants whose
 *      emulation would give the GPU's bits (the E4M3 m16n8k32: the count matching each of its models);
 *   5. whole GEMMs of the modes' shapes (the MLP's, the CNN's, the GPT's, batched attention, a long
 *      K) through the mode's kernel (vti_tc_mma_gemm) against vt_tc_gemm.
 * Models of the device's generation (sm90 models on compute capability 9.x, sm80 on 8.x) must agree
 * (exit 1 otherwise); the others run for information only. */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/vt_tc_mma.h"
#include "vt_tc_probes.h"

static int g_fail;
#define FAIL(...) (fprintf(stderr, "FAIL: " __VA_ARGS__), fputc('\n', stderr), g_fail = 1)

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "CUDA: %s: %s\n", #call, cudaGetErrorString(e_));                                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define VK(call)                                                                                                       \
    do {                                                                                                               \
        vt_err e_ = (call);                                                                                            \
        if (e_) {                                                                                                      \
            fprintf(stderr, "%s: %s\n", #call, vt_errmsg());                                                           \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes ? bytes : 8));
    return p;
}

static int g_cc;

/* An instruction under test: the model it is checked against (E4M3_K32: its type and K only; the
 * questions' variants decide), and whether it is the kernel of that model's mode. */
typedef struct {
    const char *label;
    const vt_tc_arch *arch;
    int kind; /* VTI_TC_MMA_* */
} instr;
static const instr INSTR[] = {
    {"sm90-bf16 (mma.sync m16n8k16 BF16)", &vt_tc_sm90_bf16, VTI_TC_MMA_BF16_K16},
    {"sm90-fp16 (mma.sync m16n8k16 FP16)", &vt_tc_sm90_fp16, VTI_TC_MMA_F16_K16},
    {"sm90-e4m3f16 (E4M3 -> FP16 by the kernel, mma.sync m16n8k16 FP16)", &vt_tc_sm90_e4m3f16, VTI_TC_MMA_E4M3F16_K16},
    {"E4M3 mma.sync m16n8k32 (no mode's: the questions decide its model)", &vt_tc_sm90_e4m3, VTI_TC_MMA_E4M3_K32},
    {"sm80-bf16 (mma.sync m16n8k8 BF16)", &vt_tc_sm80_bf16, VTI_TC_MMA_BF16_K8},
    {"sm80-fp16 (mma.sync m16n8k8 FP16)", &vt_tc_sm80_fp16, VTI_TC_MMA_F16_K8},
};
#define N_INSTR (sizeof INSTR / sizeof INSTR[0])

/* the instruction of a model's probes: the mode's kernel's, or (sm90-e4m3) the E4M3 m16n8k32 */
static int kind_of(const vt_tc_arch *A)
{
    if (A->type == VT_TC_E4M3 && !A->via_fp16) return VTI_TC_MMA_E4M3_K32;
    vt_tc_arch plain = *A;
    plain.zero_exp = VT_TC_ZERO_EXP_NONE, plain.zero_sign = VT_TC_ZERO_IEEE;
    return vti_tc_mma_kind(&plain, g_cc, NULL);
}

/* the instruction belongs to this GPU's generation (its results are checked, not information) */
static int mine(const vt_tc_arch *A) { return vti_tc_mma_model_sm(A) / 10 == g_cc / 10; }

/* the tiles through the GPU: n tiles of A [16][KI], B [8][KI], C [16][8] -> D, instruction kind */
static void run_tiles(int kind, size_t n, int KI, const uint16_t *a, const uint16_t *b, const uint32_t *c,
                      uint32_t *d)
{
    size_t na = n * 16 * KI, nb = n * 8 * KI, nc = n * 128;
    uint16_t *da = (uint16_t *)dalloc(na * 2), *db = (uint16_t *)dalloc(nb * 2);
    uint32_t *dc = (uint32_t *)dalloc(nc * 4), *dd = (uint32_t *)dalloc(nc * 4);
    CK(cudaMemcpy(da, a, na * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, nb * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, c, nc * 4, cudaMemcpyHostToDevice));
    for (size_t t0 = 0; t0 < n; t0 += 65535 * 8) {
        size_t m = n - t0 < (size_t)65535 * 8 ? n - t0 : (size_t)65535 * 8;
        VK(vti_tc_mma_tiles_kind(kind, g_cc, m, da + t0 * 16 * KI, db + t0 * 8 * KI, dc + t0 * 128, dd + t0 * 128, NULL));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(d, dd, nc * 4, cudaMemcpyDeviceToHost));
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
}

/* the emulator's group of tile element (i, j) */
static uint32_t emu(const vt_tc_arch *A, int KI, const uint16_t *a, const uint16_t *b, const uint32_t *c, int i, int j)
{
    return vt_tc_group(A, c[i * 8 + j], a + i * KI, b + j * KI, KI);
}

/* the parameter variants that would give the GPU's bits (settles docs/tensorcore.md's choices) */
#define N_VARIANTS 10
static const char *VARIANTS[N_VARIANTS] = {"align-floor", "out-rne",  "prod_eoff-1", "floor-off",    "sat",
                                           "width-1",     "width+1",  "width+2",     "zero-counted", "zero-pos"};
static vt_tc_arch variant(const vt_tc_arch *A, int v)
{
    vt_tc_arch x = *A;
    if (v == 0) x.align = VT_TC_ALIGN_FLOOR;
    if (v == 1) x.out = VT_TC_OUT_RNE;
    if (v == 2) x.prod_eoff = 1;
    if (v == 3) x.e_floor = -300;
    if (v == 4) x.inf_on_overflow = 0;
    if (v == 5) x.width--;
    if (v == 6) x.width++;
    if (v == 7) x.width += 2;
    if (v == 8) x.zero_exp = VT_TC_ZERO_EXP_FIELDS;
    if (v == 9) x.zero_sign = VT_TC_ZERO_POS;
    return x;
}

static void report(const vt_tc_arch *A, int KI, const uint16_t *a, const uint16_t *b, uint32_t c, uint32_t gpu,
                   uint32_t emu_bits, long *var_hits)
{
    fprintf(stderr, "  %s: c=0x%08X a=", A->name, c);
    for (int k = 0; k < KI; k++) fprintf(stderr, "%s%04X", k ? "," : "", a[k]);
    fprintf(stderr, " b=");
    for (int k = 0; k < KI; k++) fprintf(stderr, "%s%04X", k ? "," : "", b[k]);
    fprintf(stderr, ": GPU 0x%08X, emulator 0x%08X; variants giving the GPU's bits:", gpu, emu_bits);
    for (int v = 0; v < N_VARIANTS; v++) {
        vt_tc_arch x = variant(A, v);
        if (vt_tc_arch_check(&x) == VT_OK && vt_tc_group(&x, c, a, b, KI) == gpu) {
            fprintf(stderr, " %s", VARIANTS[v]);
            if (var_hits) var_hits[v]++;
        }
    }
    fputc('\n', stderr);
}

/* 1. the layout: small integers, exact in every model; the whole GEMMs through the mode's kernel */
static int check_layout(const vt_tc_arch *A, int kind)
{
    const int KI = vti_tc_mma_kind_k(kind);
    const size_t n = 64;
    uint16_t *a = (uint16_t *)malloc(n * 16 * KI * 2), *b = (uint16_t *)malloc(n * 8 * KI * 2);
    uint32_t *c = (uint32_t *)malloc(n * 128 * 4), *d = (uint32_t *)malloc(n * 128 * 4);
    uint64_t s = 77;
    int bad = 0;
    for (size_t x = 0; x < n * 16 * KI; x++) a[x] = vt_tc_from_f32(A->type, vt_hd_bits32((float)((int)(sm64(&s) % 7) - 3)));
    for (size_t x = 0; x < n * 8 * KI; x++) b[x] = vt_tc_from_f32(A->type, vt_hd_bits32((float)((int)(sm64(&s) % 7) - 3)));
    for (size_t x = 0; x < n * 128; x++) c[x] = vt_hd_bits32((float)((int)(sm64(&s) % 33) - 16));
    run_tiles(kind, n, KI, a, b, c, d);
    for (size_t t = 0; t < n && !bad; t++)
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 8; j++) {
                double sum = vt_hd_f32(c[t * 128 + i * 8 + j]);
                for (int k = 0; k < KI; k++)
                    sum += (double)vt_hd_f32(vt_tc_to_f32(A->type, a[t * 16 * KI + i * KI + k])) *
                           vt_hd_f32(vt_tc_to_f32(A->type, b[t * 8 * KI + j * KI + k]));
                /* values, not bits: the sign of an exact zero is a question of its own (below) */
                if ((float)sum != vt_hd_f32(d[t * 128 + i * 8 + j]) && !bad) {
                    FAIL("%s layout: tile %zu element (%d, %d): GPU %g, the integer sum %g", A->name, t, i, j,
                         (double)vt_hd_f32(d[t * 128 + i * 8 + j]), sum);
                    bad = 1;
                }
            }
    /* a whole GEMM with padding in every dimension and both transposes */
    const size_t M = 37, N = 21, K = 3 * (size_t)KI + 5;
    for (int tr = 0; tr < 4 && !bad && vti_tc_mma_kind(A, g_cc, NULL) == kind; tr++) {
        int tA = tr & 1, tB = tr >> 1;
        float *X = (float *)malloc(M * K * 4), *Y = (float *)malloc(K * N * 4), *Z = (float *)malloc(M * N * 4);
        for (size_t x = 0; x < M * K; x++) X[x] = (float)((int)(sm64(&s) % 5) - 2);
        for (size_t x = 0; x < K * N; x++) Y[x] = (float)((int)(sm64(&s) % 5) - 2);
        float *dX = (float *)dalloc(M * K * 4), *dY = (float *)dalloc(K * N * 4), *dZ = (float *)dalloc(M * N * 4);
        void *w = dalloc(vti_tc_mma_work_bytes(A, 1, M, N, K));
        CK(cudaMemcpy(dX, X, M * K * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dY, Y, K * N * 4, cudaMemcpyHostToDevice));
        VK(vti_tc_mma_gemm(A, g_cc, 1, tA, tB, M, N, K, dX, dY, dZ, w, NULL));
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(Z, dZ, M * N * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < M && !bad; i++)
            for (size_t j = 0; j < N && !bad; j++) {
                double sum = 0;
                for (size_t k = 0; k < K; k++)
                    sum += (double)(tA ? X[k * M + i] : X[i * K + k]) * (tB ? Y[j * K + k] : Y[k * N + j]);
                if ((float)sum != Z[i * N + j]) {
                    FAIL("%s layout: GEMM %zux%zux%zu tA=%d tB=%d: C[%zu][%zu] = %g, the integer sum %g", A->name, M,
                         N, K, tA, tB, i, j, (double)Z[i * N + j], sum);
                    bad = 1;
                }
            }
        cudaFree(dX), cudaFree(dY), cudaFree(dZ), cudaFree(w);
        free(X), free(Y), free(Z);
    }
    free(a), free(b), free(c), free(d);
    return !bad;
}

/* 2. the questions (QPROBES, in their order: E4M3, zeros in the maximum exponent, signed zeros, the
 * maximum carry). Returns 0 when some question's variants all failed (nothing matched). */
static int check_questions(void)
{
    int ok = 1;
    for (int q = 0; q < VT_Q_COUNT; q++) {
        int match[VT_Q_MAXVAR] = {1, 1, 1}, asked = 0;
        printf("question: %s (variants:", Q_NAME[q]);
        for (int v = 0; v < Q_NVAR[q]; v++) printf("%s %s = %s", v ? ";" : "", Q_SHORT[q][v], Q_VAR[q][v]);
        printf(")\n");
        for (size_t k = 0; k < sizeof QPROBES / sizeof QPROBES[0]; k++) {
            const qprobe *p = &QPROBES[k];
            if (p->q != q) continue;
            const int kind = p->q == VT_Q_E4M3 ? (int)VTI_TC_MMA_E4M3_K32 : kind_of(p->arch), KI = q_k(p);
            if (kind < 0 || !vti_tc_mma_kind_ok(kind, g_cc)) {
                printf("  probe %-22s not run (no such instruction on sm_%d)\n", p->name, g_cc);
                continue;
            }
            uint16_t *a = (uint16_t *)calloc(16 * (size_t)KI, 2), *b = (uint16_t *)calloc(8 * (size_t)KI, 2);
            uint32_t c[128] = {0}, d[128];
            q_row(p, a, b); /* row 0 of A, column 0 of B */
            c[0] = p->c;
            run_tiles(kind, 1, KI, a, b, c, d);
            const int m = mine(p->arch);
            printf("  probe %-22s %-12s GPU 0x%08X;", p->name, p->arch->name, d[0]);
            int hit = 0;
            for (int v = 0; v < Q_NVAR[q]; v++) {
                uint32_t e = q_emulate(p, v, p->c, a, b);
                printf(" %s 0x%08X%s", Q_SHORT[q][v], e, e == d[0] ? " (matched)" : "");
                if (m && e != d[0]) match[v] = 0;
                hit |= e == d[0];
            }
            printf("%s\n", m ? "" : " (information: not this GPU's generation)");
            if (m && !hit && q != VT_Q_E4M3) /* which of the other parameters' variants would give it */
                report(p->arch, KI, a, b, p->c, d[0], q_emulate(p, 0, p->c, a, b), NULL);
            asked += m;
            free(a), free(b);
        }
        if (!asked) {
            printf("  => not asked on this GPU\n");
            continue;
        }
        int any = 0;
        printf("  => the GPU matched:");
        for (int v = 0; v < Q_NVAR[q]; v++)
            if (match[v]) printf("%s %s", any++ ? "," : "", Q_VAR[q][v]);
        printf("%s\n", any ? "" : " NONE");
        if (!any) {
            printf("STOP: %s: no variant of the emulator gives the GPU's bits (the probes above): the model needs a "
                   "parameter it does not have; docs/tensorcore.md \"The unknowns\"\n", Q_NAME[q]);
            ok = 0;
        } else if (Q_MODE_VAR[q] >= 0 && !match[Q_MODE_VAR[q]]) {
            FAIL("%s: the GPU follows another variant than the modes' (%s): the modes' model is not this GPU's",
                 Q_NAME[q], Q_VAR[q][Q_MODE_VAR[q]]);
        } else if (q == VT_Q_E4M3) {
            printf("  => %s\n", match[0] ? "the E4M3 m16n8k32 computes wgmma's model (sm90-e4m3): a kernel issuing it "
                                           "could run tc-e4m3-sm90"
                                         : "the E4M3 m16n8k32 is not wgmma's model: tc-e4m3-sm90 stays refused on the "
                                           "GPU; tc-e4m3f16-sm90's kernel converts to FP16 itself (its FP16 "
                                           "instruction: the questions below and its tiles)");
        }
    }
    return ok;
}

/* 3. the probes */
static void check_probes(void)
{
    static const char *VAR[] = {"", "+align-floor", "+out-rne", "+floor-off", "+sat"};
    for (size_t k = 0; k < sizeof PROBES / sizeof PROBES[0]; k++) {
        const probe *p = &PROBES[k];
        vt_tc_arch A = probe_arch(p);
        const int kind = kind_of(&A);
        if (kind < 0 || !vti_tc_mma_kind_ok(kind, g_cc)) continue;
        const int KI = vti_tc_mma_kind_k(kind);
        uint16_t *a = (uint16_t *)calloc(16 * (size_t)KI, 2), *b = (uint16_t *)calloc(8 * (size_t)KI, 2);
        uint32_t c[128] = {0}, d[128];
        for (int i = 0; i < p->n; i++) a[i] = p->rep ? p->a[0] : p->a[i], b[i] = p->rep ? p->b[0] : p->b[i];
        c[0] = p->c;
        run_tiles(kind, 1, KI, a, b, c, d);
        uint32_t want = emu(&A, KI, a, b, c, 0, 0), built = emu(p->arch, KI, a, b, c, 0, 0);
        /* the E4M3 m16n8k32 is no mode's: its rows are information (the questions decide its model) */
        int m = mine(p->arch) && kind != VTI_TC_MMA_E4M3_K32;
        const char *verdict = d[0] == want ? "agrees" : "DIFFERS";
        if (p->variant) /* a variant row: the GPU picks between it and the built-in model */
            verdict = d[0] == want && d[0] != built ? "the GPU follows the variant"
                      : d[0] == built              ? "the GPU follows the built-in model"
                                                   : "the GPU follows neither";
        printf("probe %-22s %s%s: GPU 0x%08X, emulator 0x%08X: %s%s\n", p->name, p->arch->name, VAR[p->variant], d[0],
               want, verdict, m ? "" : " (information: not a mode's instruction on this GPU)");
        if (m && !p->variant && d[0] != want) FAIL("probe %s", p->name);
        if (m && p->variant && d[0] != built) FAIL("probe %s: the GPU does not follow the built-in model", p->name);
        free(a), free(b);
    }
}

/* 4. random tiles of instruction I */
static void check_random(const instr *I, size_t n_tiles, int mine_)
{
    const vt_tc_arch *A = I->arch;
    const int KI = vti_tc_mma_kind_k(I->kind), native = I->kind == VTI_TC_MMA_E4M3_K32;
    const qprobe qe = {"random", VT_Q_E4M3, &vt_tc_sm90_e4m3, 0, 0, {0}, {0}, 0, {0}}; /* its models: q_emulate */
    const size_t chunk = 20000;
    uint16_t *a = (uint16_t *)malloc(chunk * 16 * KI * 2), *b = (uint16_t *)malloc(chunk * 8 * KI * 2);
    uint32_t *c = (uint32_t *)malloc(chunk * 128 * 4), *d = (uint32_t *)malloc(chunk * 128 * 4);
    uint64_t s = 28 ^ (uint64_t)A->type << 8 ^ (uint64_t)A->group ^ (uint64_t)A->via_fp16 << 16;
    long bad = 0, groups = 0, var_hits[N_VARIANTS] = {0}, e4[VT_Q_MAXVAR] = {0};
    for (size_t t0 = 0; t0 < n_tiles; t0 += chunk) {
        size_t n = n_tiles - t0 < chunk ? n_tiles - t0 : chunk;
        for (size_t t = 0; t < n; t++) {
            int mode = (int)(sm64(&s) % 8), im = mode < 4 ? mode : 1, cm = mode < 4 ? mode : 1;
            if (mode == 4) cm = 2;         /* a tiny accumulator, normal products */
            if (mode == 5) im = 2, cm = 1; /* tiny products under a normal accumulator */
            if (mode == 6) im = 3, cm = 3; /* near the top of the range */
            for (int x = 0; x < 16 * KI; x++) a[t * 16 * KI + x] = gen_in(A->type, &s, im);
            for (int x = 0; x < 8 * KI; x++) b[t * 8 * KI + x] = gen_in(A->type, &s, mode == 7 ? 1 + (int)(sm64(&s) % 3) : im);
            for (int x = 0; x < 128; x++) c[t * 128 + x] = sm64(&s) % 61 == 0 ? (sm64(&s) & 1) << 31 : gen_c(&s, cm);
        }
        run_tiles(I->kind, n, KI, a, b, c, d);
        for (size_t t = 0; t < n; t++)
            for (int i = 0; i < 16; i++)
                for (int j = 0; j < 8; j++) {
                    const uint16_t *ta = a + t * 16 * KI, *tb = b + t * 8 * KI;
                    const uint32_t *tc = c + t * 128;
                    uint32_t g = d[t * 128 + i * 8 + j], e;
                    groups++;
                    if (native) { /* the E4M3 m16n8k32: which of its models */
                        int any = 0;
                        for (int v = 0; v < VT_Q_MAXVAR; v++)
                            if (q_emulate(&qe, v, tc[i * 8 + j], ta + i * KI, tb + j * KI) == g) e4[v]++, any = 1;
                        bad += !any;
                        continue;
                    }
                    e = emu(A, KI, ta, tb, tc, i, j);
                    if (e == g) continue;
                    if (bad < 10) report(A, KI, ta + i * KI, tb + j * KI, tc[i * 8 + j], g, e, var_hits);
                    else if (bad < 2000) {
                        for (int v = 0; v < N_VARIANTS; v++) {
                            vt_tc_arch x = variant(A, v);
                            if (vt_tc_arch_check(&x) == VT_OK && vt_tc_group(&x, tc[i * 8 + j], ta + i * KI, tb + j * KI, KI) == g)
                                var_hits[v]++;
                        }
                    }
                    bad++;
                }
    }
    if (native) {
        printf("%s: %zu random tiles (%ld groups): %ld follow %s, %ld %s, %ld %s; %ld none (information)\n", I->label,
               n_tiles, groups, e4[0], Q_VAR[VT_Q_E4M3][0], e4[1], Q_VAR[VT_Q_E4M3][1], e4[2], Q_VAR[VT_Q_E4M3][2], bad);
        free(a), free(b), free(c), free(d);
        return;
    }
    printf("%s: %zu random tiles (%ld groups, one mma.sync each): %ld differ from the emulator%s\n", A->name, n_tiles,
           groups, bad, mine_ ? "" : " (information: not this GPU's generation)");
    if (bad) {
        printf("  of the first %ld differing groups, the variants that give the GPU's bits:", bad < 2000 ? bad : 2000);
        for (int v = 0; v < N_VARIANTS; v++) printf(" %s %ld", VARIANTS[v], var_hits[v]);
        printf("\n");
    }
    if (mine_ && bad) FAIL("%s: %ld of %ld random groups differ", A->name, bad, groups);
    free(a), free(b), free(c), free(d);
}

/* 4. whole GEMMs of the models' shapes */
static void check_gemms(const vt_tc_arch *A, int mine)
{
    static const struct {
        const char *what;
        size_t G, M, N, K;
        int tA, tB;
    } S[] = {
        {"MLP fc1 forward", 1, 32, 128, 784, 0, 1}, {"MLP fc1 weight gradient", 1, 784, 128, 32, 1, 0},
        {"MLP fc2 input gradient", 1, 32, 128, 10, 0, 0}, {"CNN conv as GEMM", 1, 1024, 16, 144, 0, 0},
        {"CNN conv weight gradient", 1, 144, 16, 1024, 1, 0}, {"GPT projection", 1, 128, 192, 64, 0, 0},
        {"GPT attention scores (bmm)", 16, 64, 64, 16, 0, 1}, {"GPT attention values (bmm)", 16, 64, 16, 64, 0, 0},
        {"long K", 1, 17, 9, 8192, 0, 0},
    };
    uint64_t s = 99;
    for (size_t q = 0; q < sizeof S / sizeof S[0]; q++) {
        size_t G = S[q].G, M = S[q].M, N = S[q].N, K = S[q].K;
        size_t na = G * M * K, nb = G * K * N, nc = G * M * N;
        float *X = (float *)malloc(na * 4), *Y = (float *)malloc(nb * 4), *Z = (float *)malloc(nc * 4),
              *R = (float *)malloc(nc * 4), *a = (float *)malloc(M * K * 4), *b = (float *)malloc(K * N * 4);
        for (size_t x = 0; x < na; x++) /* roughly normal, a few large and tiny values */
            X[x] = (float)(((double)(sm64(&s) >> 11) / 9007199254740992.0 - 0.5) * (x % 97 == 0 ? 1e4 : x % 89 == 0 ? 1e-6 : 2));
        for (size_t x = 0; x < nb; x++) Y[x] = (float)(((double)(sm64(&s) >> 11) / 9007199254740992.0 - 0.5) * 0.2);
        float *dX = (float *)dalloc(na * 4), *dY = (float *)dalloc(nb * 4), *dZ = (float *)dalloc(nc * 4);
        void *w = dalloc(vti_tc_mma_work_bytes(A, G, M, N, K));
        CK(cudaMemcpy(dX, X, na * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dY, Y, nb * 4, cudaMemcpyHostToDevice));
        VK(vti_tc_mma_gemm(A, g_cc, G, S[q].tA, S[q].tB, M, N, K, dX, dY, dZ, w, NULL));
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(Z, dZ, nc * 4, cudaMemcpyDeviceToHost));
        for (size_t g = 0; g < G; g++) {
            const float *Xg = X + g * M * K, *Yg = Y + g * K * N;
            for (size_t i = 0; i < M; i++)
                for (size_t k = 0; k < K; k++) a[i * K + k] = S[q].tA ? Xg[k * M + i] : Xg[i * K + k];
            for (size_t k = 0; k < K; k++)
                for (size_t j = 0; j < N; j++) b[k * N + j] = S[q].tB ? Yg[j * K + k] : Yg[k * N + j];
            VK(vt_tc_gemm(A, M, N, K, a, b, R + g * M * N));
        }
        size_t diff = 0, first = 0;
        for (size_t x = 0; x < nc; x++)
            if (memcmp(&Z[x], &R[x], 4) != 0 && diff++ == 0) first = x;
        printf("%s GEMM %-28s %zux%zux%zux%zu tA=%d tB=%d: %zu of %zu elements differ%s\n", A->name, S[q].what, G, M,
               N, K, S[q].tA, S[q].tB, diff, nc, mine ? "" : " (information)");
        if (diff)
            printf("  first: C[%zu][%zu][%zu]: GPU 0x%08X, emulator 0x%08X\n", first / (M * N), first / N % M,
                   first % N, vt_hd_bits32(Z[first]), vt_hd_bits32(R[first]));
        if (mine && diff) FAIL("%s GEMM %s", A->name, S[q].what);
        cudaFree(dX), cudaFree(dY), cudaFree(dZ), cudaFree(w);
        free(X), free(Y), free(Z), free(R), free(a), free(b);
    }
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("test_tc_gpu: no CUDA GPU: skipped\n");
        return 77;
    }
    int major = 0, minor = 0;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    g_cc = 10 * major + minor;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    setvbuf(stdout, NULL, _IOLBF, 0); /* the log keeps stdout's and stderr's lines in order */
    printf("test_tc_gpu: %s, sm_%d\n", prop.name, g_cc);
    const char *env = getenv("VT_TC_TILES");
    size_t tiles = env && *env ? (size_t)strtoull(env, NULL, 10) : 100000;
    for (size_t m = 0; m < N_INSTR; m++) {
        if (!vti_tc_mma_kind_ok(INSTR[m].kind, g_cc)) {
            printf("%s: not run (not on sm_%d)\n", INSTR[m].label, g_cc);
            continue;
        }
        int ok = check_layout(INSTR[m].arch, INSTR[m].kind);
        printf("%s: fragment layout %s\n", INSTR[m].label, ok ? "right (integer tiles and GEMMs exact)" : "WRONG");
    }
    if (g_fail) {
        printf("test_tc_gpu: the kernel's fragment layout is wrong: nothing else is meaningful\n");
        return 1;
    }
    if (!check_questions()) {
        printf("test_tc_gpu: STOPPED before the random tiles: a question above has no matching variant\n");
        return 3;
    }
    check_probes();
    for (size_t m = 0; m < N_INSTR; m++) {
        if (!vti_tc_mma_kind_ok(INSTR[m].kind, g_cc)) continue;
        const int is_mode = vti_tc_mma_kind(INSTR[m].arch, g_cc, NULL) == INSTR[m].kind;
        const int mine_ = is_mode && mine(INSTR[m].arch);
        check_random(&INSTR[m], mine_ ? tiles : tiles / 10, mine_);
        if (is_mode) check_gemms(INSTR[m].arch, mine_);
    }
    printf("test_tc_gpu: %s\n", g_fail ? "FAILED" : "the GPU's mma agrees with the emulator bit for bit");
    return g_fail ? 1 : 0;
}
