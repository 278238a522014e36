/* gemm_check.h - the cross-check of a GEMM epilogue against the CPU's vt_round, shared by
 * test_epilogue (the host twin of the GPU pipeline, vt_epi_host) and test_cuda (the GPU itself).
 *
 * For each case (shapes, transposes, zeros, crafted near-ties that need the compensated sum and the
 * exact accumulator, NaN and overflow) the device under test rounds op(A) op(B) and:
 *   exact rounding - its FP32 outputs must equal, bit for bit, the CPU's (vt_gemm in the forward
 *                    order, vt_round), and its counts must say which elements it evaluated exactly;
 *   log rounding   - it records; the CPU replays its log from its own FP64 values (vt_round,
 *                    replay) and must get the device's outputs bit for bit; a failure (NaN,
 *                    overflow) must be reported at the same element as the CPU reports it. */
#ifndef GEMM_CHECK_H
#define GEMM_CHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_error.h"
#include "kernels/vt_kernels.h"
#include "rounding/vt_round.h"
#include "vt_test.h"

/* The device under test: rounds op(A) op(B) under rc into out. x_alt is the CPU's FP64 value of
 * the product in the reverse order, which a host twin may use as "its own" value. */
typedef vt_err (*gc_dut)(void *ctx, vt_rctx *rc, uint32_t op, int tA, int tB, size_t M, size_t N, size_t K,
                         const float *A, const float *B, const double *x_alt, float *out);

/* The bound configuration of every case (gc_all runs the provable panelled bounds of format 3,
 * the whole-reduction bounds of formats 1 and 2, and the probabilistic bounds), and whether the
 * device under test gets the CPU's own FP64 values (a host twin: then its log, counts and faults
 * must be the CPU's exactly) or the reverse order's. */
static vt_bound_cfg gc_cfg = {.mode = VT_BOUND_PROVABLE};
static int gc_same_x = 0;

typedef struct {
    size_t M, N, K;
    int zeros;   /* a third of the operands' entries are zero */
    int craft;   /* rows 0..5 of op(A) and columns 0..1 of op(B) make X = 1 + 2^-24 + delta */
    int poison;  /* 1: one NaN operand; 2: products beyond FP32 range; 3: one infinite operand */
    double scale;
} gc_case;

static float gc_val(vt_rng *r, const gc_case *c)
{
    if (c->zeros && vt_rng_next(r) % 3 == 0) return 0.0f;
    return (float)(vt_rng_normal(r) * c->scale);
}

/* op(A)(i, k) and op(B)(k, j) in the stored layouts */
static float *gc_a(float *A, int tA, size_t M, size_t K, size_t i, size_t k) { return tA ? &A[k * M + i] : &A[i * K + k]; }
static float *gc_b(float *B, int tB, size_t N, size_t K, size_t k, size_t j) { return tB ? &B[j * K + k] : &B[k * N + j]; }

static void gc_fill(vt_rng *r, const gc_case *c, int tA, int tB, float *A, float *B)
{
    size_t M = c->M, N = c->N, K = c->K;
    for (size_t e = 0; e < M * K; e++) A[e] = gc_val(r, c);
    for (size_t e = 0; e < K * N; e++) B[e] = gc_val(r, c);
    if (c->craft && K >= 3) {
        static const double delta[6] = {0.0, 0x1p-70, -0x1p-70, 0x1p-40, -0x1p-40, 0x1p-100};
        for (size_t j = 0; j < N && j < 2; j++)
            for (size_t k = 0; k < K; k++) *gc_b(B, tB, N, K, k, j) = k < 3 ? 1.0f : 0.0f;
        for (size_t i = 0; i < M && i < 6; i++)
            for (size_t k = 0; k < K; k++) {
                float v = k == 0 ? 1.0f : k == 1 ? 0x1p-24f : k == 2 ? (float)delta[i] : 0.0f;
                *gc_a(A, tA, M, K, i, k) = v;
            }
    }
    if (c->poison == 1) A[(M * K) / 2] = NAN;
    if (c->poison == 3) B[(K * N) / 3] = -INFINITY;
    if (c->poison == 2)
        for (size_t k = 0; k < K; k++) *gc_a(A, tA, M, K, M / 2, k) = 3e38f, *gc_b(B, tB, N, K, k, N / 2) = 3e38f;
}

static void gc_begin(vt_rctx *rc, vt_steplog *log, vt_rmode mode, vt_rounding rounding)
{
    vt_bound_cfg cfg = gc_cfg;
    cfg.rounding = rounding;
    vt_rctx_init(rc, mode, cfg);
    CHECK_OK(vt_rctx_begin_step(rc, 7, log));
}

static int gc_logs_equal(const vt_oplog *a, const vt_oplog *b)
{
    if (a->n_elems != b->n_elems || a->n_entries != b->n_entries) return 0;
    for (uint64_t k = 0; k < a->n_entries; k++) {
        const vt_log_entry *x = &a->e[k], *y = &b->e[k];
        if (x->index != y->index || x->is_value != y->is_value || x->up != y->up ||
            (x->is_value && x->value_bits != y->value_bits))
            return 0;
    }
    return 1;
}

/* Runs one case through the device under test in both roundings; returns the number of elements
 * the device evaluated exactly (exact rounding) plus the entries it logged. */
static uint64_t gc_run(gc_dut dut, void *ctx, vt_rng *rng, const gc_case *c, int tA, int tB, int host_twin)
{
    size_t M = c->M, N = c->N, K = c->K, n = M * N;
    float *A = malloc(M * K * sizeof *A), *B = malloc(K * N * sizeof *B);
    float *o_cpu = malloc(n * sizeof *o_cpu), *o_dev = malloc(n * sizeof *o_dev), *o_rep = malloc(n * sizeof *o_rep);
    double *xf = malloc(n * sizeof *xf), *xr = malloc(n * sizeof *xr), *rn = malloc(M * sizeof *rn),
           *cn = malloc(N * sizeof *cn), *rn2 = malloc(M * sizeof *rn2), *cn2 = malloc(N * sizeof *cn2);
    uint64_t got = 0;
    if (!A || !B || !o_cpu || !o_dev || !o_rep || !xf || !xr || !rn || !cn || !rn2 || !cn2) {
        CHECK(0, "out of memory");
        goto done;
    }
    gc_fill(rng, c, tA, tB, A, B);
    char what[96];
    snprintf(what, sizeof what, "M=%zu N=%zu K=%zu tA=%d tB=%d zeros=%d craft=%d poison=%d", M, N, K, tA, tB, c->zeros,
             c->craft, c->poison);
    vt_bound_cfg cfg = gc_cfg;
    vt_exec ef, er;
    vt_exec_init(&ef, VT_ORDER_FORWARD, cfg, 0);
    vt_exec_init(&er, VT_ORDER_REVERSE, cfg, 0);
    vt_bounds bf, br;
    vt_err e1 = vt_gemm(&ef, tA, tB, M, N, K, A, B, xf, rn, cn, &bf);
    vt_err e2 = vt_gemm(&er, tA, tB, M, N, K, A, B, xr, rn2, cn2, &br);
    CHECK(e1 == VT_OK && e2 == VT_OK, "%s: vt_gemm", what);
    for (int mode = 0; mode < 2 && !e1 && !e2; mode++) {
        vt_rounding rounding = mode ? VT_ROUNDING_LOG : VT_ROUNDING_EXACT;
        vt_steplog lc, ld, lr;
        vt_steplog_init(&lc, 7);
        vt_steplog_init(&ld, 7);
        vt_steplog_init(&lr, 7);
        vt_rctx rc_cpu, rc_dev, rc_rep;
        gc_begin(&rc_cpu, &lc, VT_RMODE_RECORD, rounding);
        gc_begin(&rc_dev, &ld, VT_RMODE_RECORD, rounding);
        vt_err ec = vt_round(&rc_cpu, 3, xf, &bf, M, N, o_cpu);
        vt_err ed = dut(ctx, &rc_dev, 3, tA, tB, M, N, K, A, B, gc_same_x ? xf : xr, o_dev);
        const char *mname = mode ? "log" : "exact";
        if (c->poison) {
            CHECK(ec == VT_ERR_DIVERGED && ed == VT_ERR_DIVERGED, "%s %s: both diverge (cpu %d, device %d)", what,
                  mname, ec, ed);
            if (ec == VT_ERR_DIVERGED && ed == VT_ERR_DIVERGED && (mode == 0 || gc_same_x))
                CHECK(rc_cpu.fault.index == rc_dev.fault.index && rc_dev.fault.op_id == 3,
                      "%s %s: the same failing element (cpu %llu, device %llu)", what, mname,
                      (unsigned long long)rc_cpu.fault.index, (unsigned long long)rc_dev.fault.index);
        } else {
            CHECK(ec == VT_OK && ed == VT_OK, "%s %s: cpu %d device %d: %s", what, mname, ec, ed, vt_errmsg());
        }
        if (!c->poison && !ec && !ed && mode == 0) {
            CHECK(memcmp(o_cpu, o_dev, n * sizeof *o_cpu) == 0, "%s exact: device outputs equal the CPU's", what);
            CHECK(rc_dev.stats.rounded == n, "%s exact: device counted %llu rounded", what,
                  (unsigned long long)rc_dev.stats.rounded);
            CHECK(ld.n_ops == 0, "%s exact: no log", what);
            got += rc_dev.stats.exact;
            if (c->craft && K >= 3 && N >= 1 && M >= 6)
                CHECK(rc_dev.stats.exact >= 4 && rc_dev.stats.kulisch >= 2,
                      "%s exact: the crafted near-ties were evaluated exactly (%llu, accumulator %llu)", what,
                      (unsigned long long)rc_dev.stats.exact, (unsigned long long)rc_dev.stats.kulisch);
        }
        if (!c->poison && !ec && !ed && mode == 1) {
            CHECK(ld.n_ops == 1 && ld.ops[0].op_id == 3 && ld.ops[0].n_elems == n, "%s log: one record", what);
            /* manifest format 5 (provable bounds): one log per state, whatever values the device had */
            if ((host_twin || (gc_cfg.mode == VT_BOUND_PROVABLE && !gc_cfg.legacy_log)) && ld.n_ops == 1 && lc.n_ops == 1)
                CHECK(gc_logs_equal(&lc.ops[0], &ld.ops[0]), "%s log: the device's log equals vt_round's", what);
            if (gc_same_x)
                CHECK(rc_cpu.stats.logged_dir == rc_dev.stats.logged_dir &&
                          rc_cpu.stats.logged_val == rc_dev.stats.logged_val && rc_cpu.stats.rounded == rc_dev.stats.rounded,
                      "%s log: the same counts as vt_round for the same values", what);
            if (gc_same_x) CHECK(memcmp(o_cpu, o_dev, n * sizeof *o_cpu) == 0, "%s log: the same outputs for the same values", what);
            if (ld.n_ops == 1) {
                got += ld.ops[0].n_entries;
                /* the CPU replays the device's log from its own values */
                gc_begin(&rc_rep, &ld, VT_RMODE_REPLAY, rounding);
                vt_err er2 = vt_round(&rc_rep, 3, xf, &bf, M, N, o_rep);
                CHECK(er2 == VT_OK, "%s log: the CPU accepts the device's log: %s", what, vt_errmsg());
                CHECK(er2 || memcmp(o_rep, o_dev, n * sizeof *o_rep) == 0,
                      "%s log: the CPU's replay gives the device's outputs", what);
                CHECK(er2 || vt_rctx_end_step(&rc_rep) == VT_OK, "%s log: every record consumed", what);
                if (c->craft && K >= 3 && N >= 1 && M >= 6)
                    CHECK(ld.ops[0].n_entries >= 5, "%s log: the crafted near-ties were logged (%llu)", what,
                          (unsigned long long)ld.ops[0].n_entries);
            }
        }
        vt_steplog_free(&lc);
        vt_steplog_free(&ld);
        vt_steplog_free(&lr);
    }
    vt_exec_free(&ef);
    vt_exec_free(&er);
done:
    free(A);
    free(B);
    free(o_cpu);
    free(o_dev);
    free(o_rep);
    free(xf);
    free(xr);
    free(rn);
    free(cn);
    free(rn2);
    free(cn2);
    return got;
}

/* Every case in every transpose form. */
static void gc_all(gc_dut dut, void *ctx, uint64_t seed, int host_twin)
{
    static const gc_case cases[] = {
        {1, 1, 1, 0, 0, 0, 1.0},      {3, 5, 2, 0, 0, 0, 1.0},      {7, 9, 33, 1, 0, 0, 1.0},
        {8, 4, 3, 0, 1, 0, 1.0},      {16, 10, 300, 1, 1, 0, 1.0},  {6, 3, 1000, 0, 1, 0, 1e-3},
        {64, 32, 784, 1, 0, 0, 1.0},  {2, 3, 257, 0, 0, 0, 1e10},   {33, 17, 129, 1, 1, 0, 1e-20},
        {9, 7, 40, 0, 0, 1, 1.0},     {9, 7, 600, 0, 0, 1, 1.0},    {5, 6, 12, 0, 0, 2, 1.0},
        {6, 5, 300, 0, 0, 3, 1.0},
    };
    /* the last: the log's record rule of manifest formats 1-4 (legacy_log) */
    static const vt_bound_cfg cfgs[4] = {
        {.mode = VT_BOUND_PROVABLE}, {.mode = VT_BOUND_PROVABLE, .whole_reduction = 1}, {.mode = VT_BOUND_PROBABILISTIC},
        {.mode = VT_BOUND_PROVABLE, .legacy_log = 1}};
    vt_rng rng = {seed};
    uint64_t evaluated = 0;
    for (int v = 0; v < 4; v++) {
        gc_cfg = cfgs[v];
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int t = 0; t < 4; t++) evaluated += gc_run(dut, ctx, &rng, &cases[c], t & 1, t >> 1, host_twin);
    }
    gc_cfg = cfgs[0];
    CHECK(evaluated > 0, "some elements needed the exact evaluation or a log entry");
    printf("elements evaluated exactly or logged: %llu\n", (unsigned long long)evaluated);
}

#endif
