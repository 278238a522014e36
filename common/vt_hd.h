/* vt_hd.h - what code shared by the CPU (gcc) and the CUDA kernels (nvcc) needs: the VT_HD
 * qualifier, bit casts, leading/trailing zero counts and the IEEE neighbours of a double, each
 * written once for both compilers. Only exactly specified operations appear here, so host and
 * device return the same bits (docs/cuda.md, "Shared code"). */
#ifndef VT_HD_H
#define VT_HD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define VT_HD __host__ __device__
#else
#define VT_HD
#endif
/* a static inline function for both the host and the device */
#define VT_HDI static inline VT_HD
/* the same, always inlined (loops the host compiler should vectorise in their callers) */
#if defined(__CUDACC__)
#define VT_HDFI static __forceinline__ VT_HD
#elif defined(__GNUC__)
#define VT_HDFI static inline __attribute__((always_inline))
#else
#define VT_HDFI static inline
#endif

VT_HDI uint64_t vt_hd_bits64(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
VT_HDI double vt_hd_f64(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}
VT_HDI uint32_t vt_hd_bits32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
VT_HDI float vt_hd_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
/* x must be non-zero */
VT_HDI int vt_hd_clz32(uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return __clz((int)x);
#else
    return __builtin_clz(x);
#endif
}
VT_HDI int vt_hd_ctz32(uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return __ffs((int)x) - 1;
#else
    return __builtin_ctz(x);
#endif
}
VT_HDI int vt_hd_isnan(double x) { return x != x; }
VT_HDI int vt_hd_isfinite(double x) { return (vt_hd_bits64(x) & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL; }
VT_HDI double vt_hd_fabs(double x) { return vt_hd_f64(vt_hd_bits64(x) & 0x7fffffffffffffffULL); }
/* nextafter(x, +inf) and nextafter(x, -inf), as C specifies them (NaN passes) */
VT_HDI double vt_hd_next_up(double x)
{
    if (vt_hd_isnan(x) || x == (double)INFINITY) return x;
    if (x == 0) return 0x1p-1074;
    uint64_t u = vt_hd_bits64(x);
    return vt_hd_f64(x > 0 ? u + 1 : u - 1);
}
VT_HDI double vt_hd_next_down(double x)
{
    if (vt_hd_isnan(x) || x == -(double)INFINITY) return x;
    if (x == 0) return -0x1p-1074;
    uint64_t u = vt_hd_bits64(x);
    return vt_hd_f64(x > 0 ? u - 1 : u + 1);
}
#endif
