#include "vt_env.h"

#include <fenv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_cli.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define VT_ENV_MXCSR 1
#endif

/* Operands come from volatile objects and results go through volatile objects: the compiler can
 * neither fold an operation at compile time (where the environment is IEEE's) nor drop it.
 * Results are compared by their bits (a comparison would itself read a subnormal as 0 under DAZ). */
static uint32_t mul32(uint32_t a, uint32_t b)
{
    volatile float x, y, r;
    float t;
    memcpy(&t, &a, 4), x = t;
    memcpy(&t, &b, 4), y = t;
    r = x * y;
    t = r;
    uint32_t u;
    memcpy(&u, &t, 4);
    return u;
}

static uint32_t add32(uint32_t a, uint32_t b)
{
    volatile float x, y, r;
    float t;
    memcpy(&t, &a, 4), x = t;
    memcpy(&t, &b, 4), y = t;
    r = x + y;
    t = r;
    uint32_t u;
    memcpy(&u, &t, 4);
    return u;
}

static uint64_t mul64(uint64_t a, uint64_t b)
{
    volatile double x, y, r;
    double t;
    memcpy(&t, &a, 8), x = t;
    memcpy(&t, &b, 8), y = t;
    r = x * y;
    t = r;
    uint64_t u;
    memcpy(&u, &t, 8);
    return u;
}

static uint64_t add64(uint64_t a, uint64_t b)
{
    volatile double x, y, r;
    double t;
    memcpy(&t, &a, 8), x = t;
    memcpy(&t, &b, 8), y = t;
    r = x + y;
    t = r;
    uint64_t u;
    memcpy(&u, &t, 8);
    return u;
}

static uint32_t f64_to_f32(uint64_t a)
{
    volatile double x;
    volatile float r;
    double t;
    memcpy(&t, &a, 8), x = t;
    r = (float)x;
    float f = r;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t f32_to_f64(uint32_t a)
{
    volatile float x;
    volatile double r;
    float t;
    memcpy(&t, &a, 4), x = t;
    r = (double)x;
    double d = r;
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* FP32 bits */
#define F32_ONE 0x3f800000u
#define F32_HALF 0x3f000000u
#define F32_TWO 0x40000000u
#define F32_MIN 0x00800000u  /* FLT_MIN = 2^-126 */
#define F32_SUB 0x00400000u  /* 2^-127, subnormal */
#define F32_U 0x33800000u    /* 2^-24: half an ulp of 1 */
#define F32_3U 0x34400000u   /* 3 * 2^-24 */
#define F32_UP 0x33808000u   /* 2^-24 + 2^-32: just over half an ulp of 1 */
/* FP64 bits */
#define F64_ONE 0x3ff0000000000000ull
#define F64_HALF 0x3fe0000000000000ull
#define F64_TWO 0x4000000000000000ull
#define F64_MIN 0x0010000000000000ull /* DBL_MIN = 2^-1022 */
#define F64_SUB 0x0008000000000000ull /* 2^-1023, subnormal */
#define F64_2M127 0x3800000000000000ull /* 2^-127 as a double */
#define F64_U 0x3ca0000000000000ull   /* 2^-53 */
#define F64_3U 0x3cb8000000000000ull  /* 3 * 2^-53 */
#define F64_UP 0x3ca0100000000000ull  /* 2^-53 + 2^-61 */
#define SIGN32 0x80000000u
#define SIGN64 0x8000000000000000ull

enum {
    FLUSH_F32 = 1,     /* FLT_MIN * 0.5 is not the subnormal 2^-127 */
    FLUSH_F64 = 2,     /* DBL_MIN * 0.5 */
    FLUSH_CVT = 4,     /* (float) of the double 2^-127 */
    DAZ_F32 = 8,       /* 2^-127 * 2 is not FLT_MIN */
    DAZ_F64 = 16,      /* 2^-1023 * 2 */
    DAZ_CVT = 32,      /* (double) of the float 2^-127 */
    ROUND_F32 = 64,    /* a tie or a non-tie of FP32 addition not rounded to nearest even */
    ROUND_F64 = 128,   /* the same in FP64 */
    ROUND_FENV = 256,  /* fegetround() != FE_TONEAREST */
};

static unsigned probe(void)
{
    unsigned bad = 0;
    if (mul32(F32_MIN, F32_HALF) != F32_SUB) bad |= FLUSH_F32;
    if (mul64(F64_MIN, F64_HALF) != F64_SUB) bad |= FLUSH_F64;
    if (f64_to_f32(F64_2M127) != F32_SUB) bad |= FLUSH_CVT;
    if (mul32(F32_SUB, F32_TWO) != F32_MIN) bad |= DAZ_F32;
    if (mul64(F64_SUB, F64_TWO) != F64_MIN) bad |= DAZ_F64;
    if (f32_to_f64(F32_SUB) != F64_2M127) bad |= DAZ_CVT;
    /* ties go to even (1 + 2^-24 -> 1, 1 + 3*2^-24 -> 1 + 2^-22, in both signs), a non-tie to nearest
     * (1 + 2^-24 + 2^-32 -> 1 + 2^-23): toward zero, upward and downward each fail one */
    if (add32(F32_ONE, F32_U) != F32_ONE || add32(F32_ONE, F32_3U) != F32_ONE + 2 ||
        add32(F32_ONE | SIGN32, F32_U | SIGN32) != (F32_ONE | SIGN32) ||
        add32(F32_ONE | SIGN32, F32_3U | SIGN32) != ((F32_ONE + 2) | SIGN32) || add32(F32_ONE, F32_UP) != F32_ONE + 1 ||
        add32(F32_ONE | SIGN32, F32_UP | SIGN32) != ((F32_ONE + 1) | SIGN32))
        bad |= ROUND_F32;
    if (add64(F64_ONE, F64_U) != F64_ONE || add64(F64_ONE, F64_3U) != F64_ONE + 2 ||
        add64(F64_ONE | SIGN64, F64_U | SIGN64) != (F64_ONE | SIGN64) ||
        add64(F64_ONE | SIGN64, F64_3U | SIGN64) != ((F64_ONE + 2) | SIGN64) || add64(F64_ONE, F64_UP) != F64_ONE + 1 ||
        add64(F64_ONE | SIGN64, F64_UP | SIGN64) != ((F64_ONE + 1) | SIGN64))
        bad |= ROUND_F64;
    if (fegetround() != FE_TONEAREST) bad |= ROUND_FENV;
    return bad;
}

static const char *round_name(int r)
{
    switch (r) {
    case FE_TONEAREST: return "to nearest";
    case FE_UPWARD: return "upward";
    case FE_DOWNWARD: return "downward";
    case FE_TOWARDZERO: return "toward zero";
    default: return "unknown";
    }
}

vt_err vt_env_check(void)
{
    unsigned bad = probe();
    unsigned csr = 0;
#ifdef VT_ENV_MXCSR
    csr = _mm_getcsr();
#endif
    const unsigned ftz = csr & 0x8000u, daz = csr & 0x0040u, rc = (csr >> 13) & 3u;
    if (!bad && !ftz && !daz && !rc) return VT_OK;
    char what[400];
    size_t n = 0;
    what[0] = 0;
#define ADD(...) (n += (size_t)snprintf(what + n, n < sizeof what ? sizeof what - n : 0, __VA_ARGS__))
    if (ftz || daz || (bad & (FLUSH_F32 | FLUSH_F64 | FLUSH_CVT | DAZ_F32 | DAZ_F64 | DAZ_CVT))) {
        ADD("the floating-point environment flushes subnormals to zero (");
        if (ftz || daz)
            ADD("%s set in MXCSR: a library built with -ffast-math, e.g. the CBLAS in use, set it",
                ftz && daz ? "FTZ and DAZ" : ftz ? "FTZ" : "DAZ");
        else
            ADD("%s%s: a library built with -ffast-math, or the platform's flush-to-zero mode",
                bad & (FLUSH_F32 | FLUSH_F64 | FLUSH_CVT) ? "a subnormal result became 0" : "a subnormal operand was read as 0",
                bad & (FLUSH_F32 | FLUSH_F64 | FLUSH_CVT) && bad & (DAZ_F32 | DAZ_F64 | DAZ_CVT)
                    ? ", a subnormal operand was read as 0"
                    : "");
        ADD(")");
    }
    if (rc || (bad & (ROUND_F32 | ROUND_F64 | ROUND_FENV))) {
        static const char *const rcs[4] = {"to nearest", "downward", "upward", "toward zero"};
        ADD("%sthe rounding mode is not round-to-nearest-even (", n ? "; " : "");
        if (rc) ADD("MXCSR rounding control %s, ", rcs[rc]);
        ADD("fegetround() %s%s: a library changed it)", round_name(fegetround()),
            bad & (ROUND_F32 | ROUND_F64) ? ", ties and halfway sums not rounded to even" : "");
    }
#undef ADD
    return vt_set_error(VT_ERR_ENV, "%s; refusing to compute: results would not be bit-identical (docs/rounding.md 1)",
                        what);
}

int vt_env_cli_check(const char *prog)
{
    if (vt_env_check() == VT_OK) return 0;
    fprintf(stderr, "%s: %s\n", prog, vt_errmsg());
    return VT_EXIT_CANNOT;
}

size_t vt_impl_pick(const char *env, const void *table, size_t n, size_t stride)
{
    const char *want = getenv(env);
    if (!want || !*want) want = "avx2";
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)(const void *)((const char *)table + i * stride);
        if (!strcmp(name, want) && (strcmp(name, "avx2") || vt_cpu_avx2())) return i;
    }
    return 0;
}

int vt_cpu_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
#else
    return 0;
#endif
}
