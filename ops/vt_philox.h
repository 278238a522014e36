/* vt_philox.h - Philox-4x32-10 counter-based generator (Salmon et al., SC'11).
 * Integer arithmetic only: the draw for (seed, purpose, step, index) never depends on
 * thread layout or call order. Floats are made from bits by exact operations. */
#ifndef VT_PHILOX_H
#define VT_PHILOX_H

#include <stdint.h>

/* Purposes of random draws (part of the counter). */
enum {
    VT_RNG_INIT = 1,    /* parameter initialisation: step = tensor index */
    VT_RNG_SHUFFLE = 2, /* data order: step = epoch */
    VT_RNG_AUGMENT = 3, /* data augmentation: step = training step, index = 4 * example slot + draw */
};

/* Philox-4x32-10 block: key (2 words), counter (4 words) -> 4 words. */
void vt_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]);

/* One 32-bit word for (seed, purpose, step, index): counter = (index lo, index hi, step lo,
 * purpose << 24 | step hi (24 bits)), key = seed. */
uint32_t vt_rand_u32(uint64_t seed, uint32_t purpose, uint64_t step, uint64_t index);

/* Uniform in [0, 1) with 24 random bits: exactly (u32 >> 8) * 2^-24 (an FP32 value). */
double vt_rand_unit(uint64_t seed, uint32_t purpose, uint64_t step, uint64_t index);

/* Fisher-Yates shuffle of perm[0..n) (filled with 0..n-1 first) keyed by (seed, purpose, step);
 * the draw for position i is an unbiased integer in [0, i] by rejection from 32-bit words
 * drawn at indices (i << 8 | attempt). */
void vt_shuffle(uint32_t *perm, uint32_t n, uint64_t seed, uint32_t purpose, uint64_t step);

#endif
