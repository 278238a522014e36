/* vt_philox_hd.h - the one implementation of Philox-4x32-10 and of the project's 32-bit draws
 * (vt_philox.h), for the CPU (ops/vt_philox.c wraps these) and the CUDA device kinds (dropout's
 * mask in backend/cuda/vt_dev_ops_hd.h). Integer arithmetic only. */
#ifndef VT_PHILOX_HD_H
#define VT_PHILOX_HD_H

#include <stdint.h>

#include "../common/vt_hd.h"

#define VTI_PHILOX_M0 0xD2511F53u
#define VTI_PHILOX_M1 0xCD9E8D57u
#define VTI_PHILOX_W0 0x9E3779B9u
#define VTI_PHILOX_W1 0xBB67AE85u

VT_HDI void vti_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)VTI_PHILOX_M0 * c0, p1 = (uint64_t)VTI_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += VTI_PHILOX_W0;
        k1 += VTI_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* one word for (seed, purpose, step, index): counter = (index lo, index hi, step lo,
 * purpose << 24 | step hi (24 bits)), key = seed */
VT_HDI uint32_t vti_rand_u32(uint64_t seed, uint32_t purpose, uint64_t step, uint64_t index)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), (uint32_t)step,
                       (purpose << 24) | ((uint32_t)(step >> 32) & 0xffffffu)};
    uint32_t out[4];
    vti_philox4x32(key, ctr, out);
    return out[0];
}

/* dropout's draw for element e of stream key at step `step` (VT_RNG_DROPOUT = 4): kept when the
 * word is at least floor(p 2^32) */
#define VT_RNG_DROPOUT 4
VT_HDI int vti_dropout_keep(uint64_t seed, uint64_t step, uint32_t key, uint64_t e, double p)
{
    uint64_t thr = (uint64_t)(p * 4294967296.0); /* p in [0, 1): below 2^32 */
    return (uint64_t)vti_rand_u32(seed, VT_RNG_DROPOUT, step, ((uint64_t)key << 32) | e) >= thr;
}

/* the augmentation's draws for example slot b of step `step` (VT_RNG_AUGMENT = 3): the crop offsets
 * in [0, 2 pad] into the zero-padded image and the flip (vt_augment_draw) */
VT_HDI void vti_augment_draw(uint64_t seed, uint64_t step, uint64_t b, uint32_t pad, int flip, uint32_t *oy,
                             uint32_t *ox, int *fl)
{
    uint32_t span = 2 * pad + 1;
    *oy = vti_rand_u32(seed, 3, step, 4 * b) % span;
    *ox = vti_rand_u32(seed, 3, step, 4 * b + 1) % span;
    *fl = flip ? (int)(vti_rand_u32(seed, 3, step, 4 * b + 2) & 1u) : 0;
}

/* element e of an augmented C x H x W image: the index of its source element, or -1 (padding) */
VT_HDI int64_t vti_augment_source(size_t H, size_t W, uint32_t pad, uint32_t oy, uint32_t ox, int fl, size_t e)
{
    size_t ch = e / (H * W), i = e / W % H, j = e % W;
    size_t jj = fl ? W - 1 - j : j; /* the padded image shifted by (oy, ox), then mirrored */
    int64_t si = (int64_t)i + oy - pad, sj = (int64_t)jj + ox - pad;
    return si >= 0 && si < (int64_t)H && sj >= 0 && sj < (int64_t)W ? (int64_t)((ch * H + (size_t)si) * W + (size_t)sj)
                                                                    : -1;
}

#endif
