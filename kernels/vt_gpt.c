/* vt_gpt.c - the transformer's exact data movement (vt_gpt.h), written once for a type T: this file
 * includes itself for float and double. */
#ifndef VT_GPT_T /* ================================================================ outer part */

#include "vt_gpt.h"

#include <string.h>

#define VT_GPT_T float
#define SFX(n) n##_f32
#include "vt_gpt.c"
#undef VT_GPT_T
#undef SFX
#define VT_GPT_T double
#define SFX(n) n##_f64
#include "vt_gpt.c"
#undef VT_GPT_T
#undef SFX

#else /* ================================================= the movement kernels for one T */

#define T_ VT_GPT_T

void SFX(vt_heads_split)(size_t B, size_t T, size_t H, size_t D, const T_ *qkv, T_ *q, T_ *k, T_ *v)
{
    const size_t C = H * D;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                const T_ *src = qkv + (b * T + t) * 3 * C + h * D;
                size_t o = ((b * H + h) * T + t) * D;
                memcpy(q + o, src, D * sizeof(T_));
                memcpy(k + o, src + C, D * sizeof(T_));
                memcpy(v + o, src + 2 * C, D * sizeof(T_));
            }
}

void SFX(vt_heads_merge)(size_t B, size_t T, size_t H, size_t D, const T_ *o, T_ *y)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                memcpy(y + (b * T + t) * H * D + h * D, o + ((b * H + h) * T + t) * D, D * sizeof(T_));
}

void SFX(vt_heads_unmerge)(size_t B, size_t T, size_t H, size_t D, const T_ *y, T_ *o)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                memcpy(o + ((b * H + h) * T + t) * D, y + (b * T + t) * H * D + h * D, D * sizeof(T_));
}

void SFX(vt_heads_join)(size_t B, size_t T, size_t H, size_t D, const T_ *q, const T_ *k, const T_ *v, T_ *qkv)
{
    const size_t C = H * D;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                T_ *dst = qkv + (b * T + t) * 3 * C + h * D;
                size_t o = ((b * H + h) * T + t) * D;
                memcpy(dst, q + o, D * sizeof(T_));
                memcpy(dst + C, k + o, D * sizeof(T_));
                memcpy(dst + 2 * C, v + o, D * sizeof(T_));
            }
}

void SFX(vt_onehot)(size_t n, size_t V, const uint8_t *tok, T_ *out)
{
    for (size_t i = 0; i < n * V; i++) out[i] = 0;
    for (size_t i = 0; i < n; i++)
        if (tok[i] < V) out[i * V + tok[i]] = 1;
}

#undef T_

#endif
