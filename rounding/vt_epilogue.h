/* vt_epilogue.h - the rounding of a GEMM as an accelerator performs it (docs/cuda.md).
 *
 * The CUDA backend rounds a GEMM on the device in four stages, each a function of
 * rounding/vt_round_hd.h that gcc and nvcc both compile:
 *   1. screen every element with the outer bound coef r_i c_j (vti_gemm_screen): cleared
 *      elements are RN32 of their own FP64 value, which then equals RN32 of the exact value;
 *   2. compact the indices of the elements the screen did not clear, in increasing order (a
 *      stable selection: no atomics, the same list on every run);
 *   3. decide each of them (vti_gemm_elem): its tight bound, then exact rounding's RN32 of the
 *      exact value (compensated sum, vt_xacc where that cannot decide), or the record
 *      rule with the log entry it writes;
 *   4. on the host, vt_epi_finish (vt_epi_finish.c) applies the decisions: the results, the log record (in index
 *      order), the counts and the first failure, exactly as vt_round reports them.
 * vt_epi_host runs the same four stages on the CPU: the twin that the CPU tests compare with
 * vt_round (tests/unit/test_epilogue.c), and the reference the GPU is checked against. */
#ifndef VT_EPILOGUE_H
#define VT_EPILOGUE_H

#include "vt_round.h"
#include "vt_round_hd.h"

/* 1 when the epilogue rounds under this context on the accelerator: exact rounding (every party),
 * or log rounding when recording (the trainer). A log-rounding replay judges the trainer's entries
 * on the host with vt_round. */
int vt_epi_supported(const vt_rctx *c);

/* The coefficient of the outer screening bound of a K-term GEMM (vt_gemm's; negative when K is
 * beyond the proved range). */
double vt_epi_coef(const vt_rctx *c, size_t K);

/* Stage 4: out holds RN32(x) of every element; the n flagged ones, idx[0..n) strictly increasing
 * below M*N, have the decisions res[0..n). Writes their results into out, appends the operation's
 * log record (record mode), counts c->stats and reports the first failing element in index order
 * as vt_round would (c->fault). */
vt_err vt_epi_finish(vt_rctx *c, uint32_t op_id, size_t M, size_t N, uint64_t n, const uint64_t *idx,
                     const vt_epi_res *res, float *out) VT_WARN_UNUSED;

/* The same without writing results (out = NULL: they are already in place, on the device) is
 * vt_epi_finish(..., NULL). vt_epi_fail reports element `index` of operation op_id as failed with
 * decision r (its code), as vt_round would: the error, its message and c->fault. */
vt_err vt_epi_fail(vt_rctx *c, uint32_t op_id, uint64_t index, const vt_epi_res *r) VT_WARN_UNUSED;

/* All four stages on the CPU from the party's FP64 values x (M x N) of the GEMM described by d
 * (d->record and d->cfg are set from c here). */
vt_err vt_epi_host(vt_rctx *c, uint32_t op_id, vt_gemm_epi d, const double *x, size_t M, size_t N,
                   float *out) VT_WARN_UNUSED;

/* The batched GEMM's pipeline on the CPU (the twin of the GPU's): x the party's FP64 values of
 * G batches of M x N; d->rn, d->cn are computed here (vti_norm32, index order); d->coef and
 * d->record are set from c. */
vt_err vt_epi_host_bmm(vt_rctx *c, uint32_t op_id, vt_bmm_epi d, size_t G, const double *x, float *out) VT_WARN_UNUSED;

#endif
