#include "vt_philox.h"

#include "vt_philox_hd.h"

void vt_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]) { vti_philox4x32(key, ctr, out); }

uint32_t vt_rand_u32(uint64_t seed, uint32_t purpose, uint64_t step, uint64_t index)
{
    return vti_rand_u32(seed, purpose, step, index);
}

double vt_rand_unit(uint64_t seed, uint32_t purpose, uint64_t step, uint64_t index)
{
    return (double)(vt_rand_u32(seed, purpose, step, index) >> 8) * 0x1p-24;
}

void vt_shuffle(uint32_t *perm, uint32_t n, uint64_t seed, uint32_t purpose, uint64_t step)
{
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    for (uint32_t i = n; i-- > 1;) {
        /* unbiased j in [0, i]: reject draws in the incomplete top range */
        uint64_t range = (uint64_t)i + 1;
        uint64_t limit = ((uint64_t)1 << 32) - (((uint64_t)1 << 32) % range);
        uint32_t j = 0;
        for (uint32_t attempt = 0;; attempt++) {
            uint64_t r = vt_rand_u32(seed, purpose, step, ((uint64_t)i << 8) | (attempt & 0xffu));
            if (r < limit || attempt == 255) { /* 256 rejections in a row: probability < 2^-256 */
                j = (uint32_t)(r % range);
                break;
            }
        }
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
