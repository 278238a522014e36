/* vt_env.h - the floating-point environment is checked, not assumed.
 *
 * Bit-identical results rest on IEEE-754 arithmetic with round-to-nearest-even and gradual
 * underflow (docs/rounding.md 1). Both are properties of the running thread, and a library can
 * change them behind the program's back: a shared library built with `-ffast-math` carries GCC's
 * crtfastmath start-up code, which sets flush-to-zero (FTZ) and denormals-are-zero (DAZ) for the
 * whole process when it is loaded (e.g. a CBLAS selected through LD_LIBRARY_PATH); a library can
 * also change the rounding mode. Under FTZ an FP32 subnormal result becomes 0 and a run signs a
 * different commitment, silently.
 *
 * vt_env_check probes the environment by computing (volatile operands: nothing is folded at
 * compile time): FP32 and FP64 subnormal production (FLT_MIN * 0.5, DBL_MIN * 0.5 and the FP64 to
 * FP32 conversion of a subnormal), subnormal consumption (a subnormal times 2, the FP32 to FP64
 * conversion of a subnormal), and the rounding mode (fegetround() and computed ties and
 * non-ties in both formats); on x86 it also reads MXCSR (FTZ bit 15, DAZ bit 6, rounding control
 * bits 13-14) to name the cause. It costs a few dozen instructions: the programs call it at
 * start-up and the step driver and the arbiter's judgement of an operation call it again (a
 * library opened later, or a thread, may change the environment).
 */
#ifndef VT_ENV_H
#define VT_ENV_H

#include <stddef.h>

#include "vt_error.h"

/* VT_OK when this thread computes with IEEE round-to-nearest-even and gradual underflow;
 * otherwise VT_ERR_ENV with a message naming what is wrong and its likely cause, e.g. "the
 * floating-point environment flushes subnormals to zero (FTZ set in MXCSR: ...); refusing to
 * compute: results would not be bit-identical". */
vt_err vt_env_check(void) VT_WARN_UNUSED;

/* For main(): runs vt_env_check; on failure prints "PROG: MESSAGE" on stderr and returns the
 * exit status VT_EXIT_CANNOT (2), else 0. */
int vt_env_cli_check(const char *prog);

/* The implementation tables picked once at start-up (libsodium's way: the kernels' transcendental
 * lanes, the certifier's dot-product lanes): table holds n entries stride bytes apart, each a struct
 * whose first member is its name (const char *); an entry named "avx2" runs where the CPU has AVX2,
 * the others anywhere. Returns the index of the one the environment variable env names when this
 * CPU runs it, else of "avx2" where it runs, else 0 (the reference). */
size_t vt_impl_pick(const char *env, const void *table, size_t n, size_t stride);

/* 1 when this CPU runs AVX2 instructions (x86-64 with GCC or clang), else 0 */
int vt_cpu_avx2(void);

#endif
