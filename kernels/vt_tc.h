/* vt_tc.h - a CPU emulator of NVIDIA tensor-core arithmetic (issue 28 item 2, the Hawkeye seed):
 * FP32 -> BF16 / FP16 / FP8 E4M3 conversion by round-to-nearest-even, the tensor cores' group
 * accumulation (an FP32 accumulator plus a group of exact products, aligned to the group's largest
 * exponent by a truncating shift, summed exactly, normalised by truncation, converted to FP32), and
 * a GEMM in one fixed, documented order. Integer arithmetic, and in the GEMM FP64 operations that
 * are all exact (no rounding decides a result bit), so every machine returns the same bits. The model, every parameter and every
 * choice made where the sources are silent: docs/tensorcore.md. Verified on the CPU against an
 * independent model of the same semantics (tests/unit/test_tc.c); agreement with real tensor cores is
 * NOT yet checked (it needs a lent GPU: docs/tensorcore.md "GPU check"). */
#ifndef VT_TC_H
#define VT_TC_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "vt_tc_hd.h" /* vt_tc_type; the conversions, shared with the GPU kernel (backend/cuda/vt_tc_mma.cu) */

/* How an aligned term loses its bits below the window (the "truncating right shift"). */
typedef enum {
    VT_TC_ALIGN_RZ = 0,   /* the magnitude is shifted (toward zero; the default) */
    VT_TC_ALIGN_FLOOR = 1 /* the two's-complement value is shifted (toward minus infinity) */
} vt_tc_align;

/* How the normalised sum becomes an FP32 value. */
typedef enum {
    VT_TC_OUT_RZ = 0, /* truncation toward zero (the default) */
    VT_TC_OUT_RNE = 1 /* round to nearest, ties to even */
} vt_tc_out;

/* Whether a zero product (or a zero accumulator) takes part in the group's largest exponent E
 * (docs/tensorcore.md "The unknowns"). */
typedef enum {
    VT_TC_ZERO_EXP_NONE = 0,  /* zero terms take no part in E (every mode) */
    VT_TC_ZERO_EXP_FIELDS = 1 /* a zero term's alignment exponent, from its exponent fields (a zero's field is
                               * 0: emin, as a subnormal's), counts in E, as do a partial group's missing
                               * products (zeros of exponent 2 emin + prod_eoff); the accumulator's +-0: -126 */
} vt_tc_zero_exp;

/* The sign of a group's exact-zero result. */
typedef enum {
    VT_TC_ZERO_IEEE = 0, /* as IEEE addition: -0 only when every term is a zero of negative sign (every mode) */
    VT_TC_ZERO_POS = 1   /* always +0 */
} vt_tc_zero_sign;

/* One architecture's model (docs/tensorcore.md "Parameters"). */
typedef struct vt_tc_arch_s {
    const char *name;    /* "sm90-bf16", ... */
    vt_tc_type type;     /* the products' input type */
    int group;           /* products per group (the FP32 accumulator is one more term) */
    int mma_k;           /* the mma instruction's K (a multiple of group): documentation of the tile order */
    int width;           /* w: the window keeps the bits of weight >= 2^(E - w + 1); the normalised
                          * sum keeps w significant bits */
    int prod_eoff;       /* a product's alignment exponent: ea + eb + prod_eoff (0 or 1) */
    int e_floor;         /* E = max(e_floor, the terms' alignment exponents) */
    vt_tc_align align;   /* the alignment shift */
    vt_tc_out out;       /* the conversion to FP32 */
    uint32_t nan_bits;   /* the FP32 bits of every NaN result */
    int inf_on_overflow; /* 1: a result of magnitude >= 2^128 is +-inf; 0: +-FLT_MAX under RZ */
    int via_fp16;        /* E4M3 models: 0 the group of E4M3 products (subnormals unnormalised: Hopper's FP8
                          * wgmma); 1 every input converted exactly to FP16 first, the group FP16's (its
                          * exponents, emin -14: no E4M3 value is an FP16 subnormal) - mma.sync's E4M3 on
                          * Hopper (cutlass issue 1986). 0 for BF16 / FP16 */
    vt_tc_zero_exp zero_exp;   /* zero terms in E (NONE in every built-in model) */
    vt_tc_zero_sign zero_sign; /* the sign of an exact zero (IEEE in every built-in model) */
} vt_tc_arch;

/* The built-in models: "sm90-bf16", "sm90-fp16", "sm80-bf16", "sm80-fp16", "sm90-e4m3" (Hopper's FP8
 * wgmma: groups of 32, w = 14), "sm90-e4m3f16" (E4M3 inputs converted exactly to FP16, then
 * sm90-fp16's groups of 16: mma.sync's E4M3 on Hopper, and what the GPU kernel issues for it). */
extern const vt_tc_arch vt_tc_sm90_bf16, vt_tc_sm90_fp16, vt_tc_sm80_bf16, vt_tc_sm80_fp16, vt_tc_sm90_e4m3,
    vt_tc_sm90_e4m3f16;
/* The built-in model of that name, or NULL. */
const vt_tc_arch *vt_tc_arch_by_name(const char *name);
/* VT_ERR_ARG (with a message) when the parameters are outside what the emulator supports. */
vt_err vt_tc_arch_check(const vt_tc_arch *arch);

/* FP32 (bits) -> the type's bits by round-to-nearest-even. BF16 and FP16: IEEE RNE with overflow to
 * +-inf (a value of magnitude >= the largest finite value plus half its ulp), subnormal results
 * kept (gradual underflow), NaN -> sign | the quiet NaN 0x7FC0 / 0x7E00 (payload dropped). E4M3
 * (OCP FP8, no infinities): RNE then saturation to +-448 for finite values beyond it and for
 * +-inf (PTX cvt.rn.satfinite), NaN -> sign | 0x7F. */
uint16_t vt_tc_from_f32(vt_tc_type type, uint32_t f32bits);
/* The type's bits -> FP32 bits (exact; E4M3 NaN -> 0x7FC00000 with the sign, BF16/FP16 NaN keeps its payload). */
uint32_t vt_tc_to_f32(vt_tc_type type, uint16_t bits);

/* One group: the FP32 accumulator c (bits) plus sum_{i<n} a[i]*b[i] (the type's bits), n <= arch->group
 * (missing products are zeros, which change nothing unless zero_exp counts them in E). Returns the FP32
 * bits (docs/tensorcore.md "The group"). */
uint32_t vt_tc_group(const vt_tc_arch *arch, uint32_t c, const uint16_t *a, const uint16_t *b, int n);

/* C = A B (row-major, A M x K, B K x N, C M x N, FP32): A and B rounded to the type by
 * vt_tc_from_f32, then each C[i][j] = the fold, from c = +0, of vt_tc_group over the groups
 * k = [0, g), [g, 2g), ... in increasing k (g = arch->group; a last partial group padded with zeros);
 * no split-K. Deterministic, no BLAS; the operands decoded once, the groups of finite rows and
 * columns run in exact FP64 arithmetic (vt_tc.c "the GEMM"), the rows split over the threads
 * (common/vt_par.h: the same bits for every thread count and implementation); a model with zero_exp or
 * zero_sign other than the built-in models' runs every element as the fold of vt_tc_group on the
 * bits (slower; no mode uses them). VT_ERR_ARG / VT_ERR_NOMEM. */
vt_err vt_tc_gemm(const vt_tc_arch *arch, size_t M, size_t N, size_t K, const float *A, const float *B, float *C);

/* vt_tc_gemm of op(A) op(B): ta = 1 reads A stored K x M (op(A) = its transpose), tb = 1 B stored
 * N x K; impl: an implementation's index (vt_tc_impl_name), -1 the default (vt_tc_impl). */
vt_err vt_tc_gemm_ex(const vt_tc_arch *arch, int impl, int ta, int tb, size_t M, size_t N, size_t K, const float *A,
                     const float *B, float *C);

/* The implementations of the GEMM's finite groups, all giving the same bits: 0 "scalar" (the portable
 * loop, always present), 1 "avx2" (x86-64 with AVX2: eight columns at a time). vt_tc_impl_name(i):
 * the name of implementation i when this CPU runs it, else NULL. vt_tc_impl(): the one vt_tc_gemm
 * uses, picked once: VT_TC_IMPL's if it names one this CPU runs, else the last this CPU runs. */
const char *vt_tc_impl_name(int i);
const char *vt_tc_impl(void);

#endif
