#include "vt_philox.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

void vt_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(PHILOX_M0, c0, &hi0, &lo0);
        mulhilo(PHILOX_M1, c2, &hi1, &lo1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

uint32_t vt_rand_u32(uint64_t seed, uint32_t purpose, uint64_t step, uint64_t index)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), (uint32_t)step,
                       (purpose << 24) | ((uint32_t)(step >> 32) & 0xffffffu)};
    uint32_t out[4];
    vt_philox4x32(key, ctr, out);
    return out[0];
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
