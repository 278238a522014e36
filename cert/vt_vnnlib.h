/* vt_vnnlib.h - VNN-LIB properties, the VNN-COMP subset (docs/certify.md "ONNX and VNN-LIB"):
 *   (declare-const X_i Real) / (declare-const Y_j Real), the indices 0..n-1 each declared once;
 *   (assert (<= X_i c)) / (>= X_i c) (either order, also inside a top-level (and ...)): the input box,
 *     every X_i bounded below and above;
 *   output constraints over Y: atoms (<= A B), (>= A B), (< A B), (> A B) with A, B a Y_j or a
 *     number; top-level asserts of atoms or (and atoms...) hold in every disjunct; at most one assert
 *     (or D...) with each D an atom or (and atoms...).
 * The property is VNN-COMP's unsafe region: the AND of the asserts. It holds (unsat, "verified")
 * when no input of the box reaches any disjunct. Each atom becomes a row t = C_r . y + d_r of the
 * spec matrix, the disjunct needing t <= 0 (t < 0 when strict).
 * Numbers: decimal literals ([-+]digits[.digits][e[-+]digits]); d and the box ends are kept as
 * intervals of doubles containing the literal's exact value ([lo, hi], one point when the literal
 * is exactly a double: D / 10^k with D < 2^53, k <= 22, checked by an exact FMA).
 * Hostile input: every length, count and nesting depth checked; an error names the line. */
#ifndef VT_VNNLIB_H
#define VT_VNNLIB_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

#define VT_VNNLIB_MAX_BYTES (64u << 20) /* a file */
#define VT_VNNLIB_MAX_DEPTH 64          /* nesting of parentheses */
#define VT_VNNLIB_MAX_VARS (1u << 20)   /* X's and Y's each */
#define VT_VNNLIB_MAX_ROWS (1u << 16)   /* atoms over all disjuncts */

typedef struct {
    uint32_t nx, ny;
    double *xl, *xu;   /* the outer box: contains the exact box (bounds) */
    double *ixl, *ixu; /* the inner box: inside the exact box (counterexamples) */
    uint32_t n_disj, n_rows;
    uint32_t *disj_start; /* n_disj + 1: disjunct k's rows are disj_start[k] .. disj_start[k+1]-1 */
    double *C;            /* n_rows x ny */
    double *d_lo, *d_hi;  /* the constant of each row, as an interval */
    uint8_t *strict;      /* 1: t < 0, 0: t <= 0 */
} vt_vnnlib;

/* Parses text (n bytes, not NUL-terminated). VT_ERR_FORMAT for malformed text, VT_ERR_UNSUPPORTED
 * for a construct outside the subset, VT_ERR_LIMIT beyond the limits; the message names the line. */
vt_err vt_vnnlib_parse(const char *text, size_t n, vt_vnnlib *out) VT_WARN_UNUSED;
/* Reads and parses a file; sha256 (when not NULL) receives the SHA-256 of its bytes. */
vt_err vt_vnnlib_read(const char *path, vt_vnnlib *out, uint8_t sha256[32]) VT_WARN_UNUSED;
void vt_vnnlib_free(vt_vnnlib *v);

/* [lo, hi] containing the exact value of the decimal literal s (n bytes); 0, or -1 when malformed. */
int vt_vnnlib_number(const char *s, size_t n, double *lo, double *hi);

#endif
