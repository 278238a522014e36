/* vt_arith.c - the weight of a GEMM flop in each GEMM arithmetic (game/vt_game.h vt_game_arith;
 * docs/dispute.md "Clocks"): calibrated at `arbiter serve`'s start against the FP64 GEMM path,
 * overridden or defaulted by the operator, recorded in the transcript (VT_NOTE_ARITH) and read back
 * by `arbiter check`, which never measures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/vt_cli.h"
#include "../common/vt_par.h"
#include "../kernels/vt_kernels.h"
#include "../kernels/vt_tc.h"
#include "../ops/vt_ops.h"
#include "../rounding/vt_round_exact.h"
#include "vt_game.h"

/* The documented weights without calibration (--no-calibrate): above what `arbiter serve` calibrated on
 * the 2-core x86 machine of docs/benchmarks.md ("Work grants by arithmetic") with its default OpenBLAS
 * kernels (26 to 38), which keep a tensor-core step of the README's CNN on the portable emulator a
 * margin above fp64's (docs/dispute.md "Clocks"). */
const double vt_arith_default_factor[VT_GAME_ARITH_MAX] = {1.0, 40.0, 40.0, 50.0, 50.0, 40.0, 40.0, 0.0};

static int n_modes(void)
{
    int n = 0;
    while (vt_gemm_arith_names[n]) n++;
    return n;
}

vt_err vt_game_arith_parse(const char *spec, double factor[VT_GAME_ARITH_MAX])
{
    const char *eq = spec ? strchr(spec, '=') : NULL;
    VT_RETURN_ERROR_IF(!eq, VT_ERR_ARG, "--tc-factor %s: expected MODE=X (e.g. tc-fp16-sm80=40)", spec ? spec : "");
    int n = n_modes(), v = -1;
    const size_t len = (size_t)(eq - spec);
    for (int i = 0; i < n; i++)
        if (strlen(vt_gemm_arith_names[i]) == len && strncmp(vt_gemm_arith_names[i], spec, len) == 0) v = i;
    VT_RETURN_ERROR_IF(v < 0 || v >= VT_GAME_ARITH_MAX, VT_ERR_ARG,
                       "--tc-factor %s: unknown mode (one of tc-bf16-sm90, tc-fp16-sm90, tc-bf16-sm80, tc-fp16-sm80, "
                       "tc-e4m3-sm90, tc-e4m3f16-sm90)", spec);
    VT_RETURN_ERROR_IF(v == 0, VT_ERR_ARG, "--tc-factor %s: fp64 is the unit (its weight is 1)", spec);
    char *end = NULL;
    double x = strtod(eq + 1, &end);
    VT_RETURN_ERROR_IF(end == eq + 1 || *end || !(x >= 1.0 && x <= 1e6), VT_ERR_ARG,
                       "--tc-factor %s: the weight must be a number from 1 to 1e6 (a tc-* GEMM flop costs at least "
                       "an FP64 one)", spec);
    factor[v] = ceil(x * 1000.0 - 1e-6) / 1000.0; /* whole thousandths, as the transcript records it */
    return VT_OK;
}

/* The calibration GEMM's operands: fixed values in [-1, 1) (splitmix64), the same on every machine. */
static void fill(float *x, size_t n, uint64_t s)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[i] = (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0);
    }
}

/* The FP64 GEMM path of a verifiable step: vt_gemm (blas order, its bound) then exact rounding. */
static vt_err fp64_path(vt_exec *e, const vt_bound_cfg *cfg, const float *A, const float *B, double *x, double *rn,
                        double *cn, float *C)
{
    const size_t M = VT_ARITH_CAL_M, N = VT_ARITH_CAL_N, K = VT_ARITH_CAL_K;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_gemm(e, 0, 0, M, N, K, A, B, x, rn, cn, &bd));
    uint64_t ne = 0, nk = 0;
    vt_elem_fault f;
    return vt_round_exact_op(cfg, x, &bd, M, N, C, &ne, &nk, &f);
}

/* The process's CPU time in seconds: what the computation costs, not what other processes on the
 * machine take from it while it runs (a loaded machine's share is the margin's business). */
static double cpu_now(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)) return vt_now();
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static vt_err calibrate(vt_game_arith *a, const int *todo)
{
    const size_t M = VT_ARITH_CAL_M, N = VT_ARITH_CAL_N, K = VT_ARITH_CAL_K;
    float *A = malloc(M * K * sizeof *A), *B = malloc(K * N * sizeof *B), *C = malloc(M * N * sizeof *C);
    double *x = malloc(M * N * sizeof *x), *rn = malloc(M * sizeof *rn), *cn = malloc(N * sizeof *cn);
    vt_err e = !A || !B || !C || !x || !rn || !cn ? vt_set_error(VT_ERR_NOMEM, "out of memory (the calibration GEMM)")
                                                   : VT_OK;
    vt_bound_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.mode = VT_BOUND_PROVABLE, cfg.lambda = VT_DEFAULT_LAMBDA, cfg.rounding = VT_ROUNDING_EXACT;
    vt_exec ex;
    vt_exec_init(&ex, VT_ORDER_BLAS, cfg, 0);
    if (!e) fill(A, M * K, 1), fill(B, K * N, 2);
    /* rounds of VT_ARITH_CAL_FP64_REPS FP64 GEMMs then one emulation per mode (after one of each, untimed,
     * to warm the caches and the workspace): the fastest FP64 GEMM over the slowest emulation of each
     * mode, so that the weight errs on the trainer's side, and a quiet moment of the machine, if any,
     * is where the FP64 time is taken */
    double best = INFINITY, worst[VT_GAME_ARITH_MAX] = {0};
    if (!e) e = fp64_path(&ex, &cfg, A, B, x, rn, cn, C);
    for (int v = 1; !e && v < a->n_modes; v++) /* and one emulation per mode (the emulator's first call) */
        if (todo[v]) e = vt_tc_gemm_ex(vt_gemm_arith_model((uint32_t)v), 0, 0, 0, M, N, K, A, B, C);
    for (int r = 0; !e && r < VT_ARITH_CAL_REPS; r++) {
        for (int k = 0; !e && k < VT_ARITH_CAL_FP64_REPS; k++) {
            double t0 = cpu_now();
            e = fp64_path(&ex, &cfg, A, B, x, rn, cn, C);
            double t = cpu_now() - t0;
            if (t < best) best = t;
        }
        for (int v = 1; !e && v < a->n_modes; v++) {
            if (!todo[v]) continue;
            double t0 = cpu_now();
            e = vt_tc_gemm_ex(vt_gemm_arith_model((uint32_t)v), 0 /* scalar: the slowest implementation */, 0, 0, M,
                              N, K, A, B, C);
            double t = cpu_now() - t0;
            if (t > worst[v]) worst[v] = t;
        }
    }
    for (int v = 1; !e && v < a->n_modes; v++) {
        if (!todo[v]) continue;
        a->tc_s[v] = worst[v];
        double f = best > 0 ? worst[v] / best : 1e6;
        if (!(f >= 1.0)) f = 1.0;
        if (f > 1e6) f = 1e6;
        a->factor[v] = ceil(f * 1000.0) / 1000.0, a->how[v] = VT_ARITH_CALIBRATED;
    }
    if (!e) a->fp64_s = best;
    vt_exec_free(&ex);
    free(A), free(B), free(C), free(x), free(rn), free(cn);
    return e;
}

vt_err vt_game_arith_setup(const double *override, int no_calibrate, vt_game_arith *a)
{
    memset(a, 0, sizeof *a);
    a->n_modes = n_modes();
    VT_RETURN_ERROR_IF(a->n_modes > VT_GAME_ARITH_MAX, VT_ERR_INTERNAL, "%d GEMM arithmetics, more than %d",
                       a->n_modes, VT_GAME_ARITH_MAX);
    a->factor[0] = 1.0;
    int todo[VT_GAME_ARITH_MAX] = {0}, any = 0;
    for (int v = 1; v < a->n_modes; v++) {
        if (override && override[v] > 0) {
            VT_RETURN_ERROR_IF(!(override[v] >= 1.0), VT_ERR_ARG, "--tc-factor %s=%g: below 1", vt_gemm_arith_names[v],
                               override[v]);
            a->factor[v] = ceil(override[v] * 1000.0 - 1e-6) / 1000.0, a->how[v] = VT_ARITH_OVERRIDE;
        } else if (no_calibrate) {
            a->factor[v] = vt_arith_default_factor[v], a->how[v] = VT_ARITH_DEFAULT;
        } else
            todo[v] = 1, any = 1;
    }
    if (!any) return VT_OK;
    /* on one thread: the cost of a flop, not the pool's scheduling (no loop is running at start-up) */
    int threads = vt_par_threads();
    vt_par_set_threads(1);
    vt_err e = calibrate(a, todo);
    vt_par_set_threads(threads);
    return e;
}

void vt_game_arith_note(const vt_game_arith *a, int v, vt_msg_note *nt)
{
    memset(nt, 0, sizeof *nt);
    nt->kind = VT_NOTE_ARITH;
    nt->code = (uint16_t)v;
    nt->n = (uint32_t)a->how[v];
    nt->v[0] = (uint64_t)llround(a->factor[v] * 1000.0);
    const double flop = 2.0 * VT_ARITH_CAL_M * VT_ARITH_CAL_N * VT_ARITH_CAL_K;
    if (a->how[v] == VT_ARITH_CALIBRATED) {
        nt->v[1] = (uint64_t)llround(a->fp64_s * 1e9), nt->v[2] = (uint64_t)llround(a->tc_s[v] * 1e9);
        nt->v[3] = (uint64_t)flop;
        snprintf(nt->text, sizeof nt->text,
                 "%s: a GEMM flop weighs %.3f FP64 GEMM flop (calibrated, CPU time of GEMMs of %.3g flop: the scalar "
                 "emulator's slowest of %d %.3f ms, the FP64 path's fastest of %d %.3f ms)",
                 vt_gemm_arith_names[v], a->factor[v], flop, VT_ARITH_CAL_REPS, a->tc_s[v] * 1e3,
                 VT_ARITH_CAL_REPS * VT_ARITH_CAL_FP64_REPS, a->fp64_s * 1e3);
    } else
        snprintf(nt->text, sizeof nt->text, "%s: a GEMM flop weighs %.3f FP64 GEMM flop (%s)", vt_gemm_arith_names[v],
                 a->factor[v],
                 a->how[v] == VT_ARITH_OVERRIDE ? "--tc-factor" : "--no-calibrate: the documented default");
}

vt_err vt_game_arith_from_note(const vt_msg_note *nt, vt_game_limits *lim)
{
    VT_RETURN_ERROR_IF(nt->kind != VT_NOTE_ARITH || nt->party != 0 || nt->code < 1 || nt->code >= VT_GAME_ARITH_MAX ||
                           (int)nt->code >= n_modes(),
                       VT_ERR_FORMAT, "transcript: an arithmetic note for no tc-* mode (code %u)", (unsigned)nt->code);
    VT_RETURN_ERROR_IF(nt->v[0] < 1000 || nt->v[0] > 1000000000ull, VT_ERR_FORMAT,
                       "transcript: the weight of %s, %llu thousandths, is not from 1 to 1e6",
                       vt_gemm_arith_names[nt->code], (unsigned long long)nt->v[0]);
    lim->arith_factor[nt->code] = (double)nt->v[0] / 1000.0;
    return VT_OK;
}
