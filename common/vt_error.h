/* vt_error.h - error codes and error-return macros shared by every library.
 *
 * Library code never exits: each function returns a vt_err (0 = success) and,
 * on failure, leaves a human-readable message in a thread-local buffer that
 * vt_errmsg() returns.  Only main() turns errors into exit statuses.
 *
 * Debug level VT_DEBUG (0 by default; CMake sets 1 for CMAKE_BUILD_TYPE=Debug and VT_SANITIZE=ON,
 * the cache variable VT_DEBUG overrides): at 1 or more, VT_RETURN_ERROR_IF / VT_RETURN_ERROR and
 * vt_set_error also record where the error was raised - the failing condition's text, file, line
 * and function - in a per-thread record vt_err_site() returns (as zstd's RETURN_ERROR_IF logs in its
 * debug builds). The message is the same at every level; the programs print the site after their
 * error message (vt_err_site_print) at VT_DEBUG >= 1 or with VT_DEBUG_ERRORS=1 in the environment.
 * At 0 the macros are exactly the plain returns below and the record stays empty.
 */
#ifndef VT_ERROR_H
#define VT_ERROR_H

#include <stdarg.h>

#ifndef VT_DEBUG
#define VT_DEBUG 0
#endif

typedef enum {
    VT_OK = 0,
    VT_ERR_ARG,          /* caller passed an invalid argument */
    VT_ERR_NOMEM,        /* allocation failed */
    VT_ERR_IO,           /* read/write/open failed */
    VT_ERR_FORMAT,       /* bytes do not follow the documented format */
    VT_ERR_LIMIT,        /* a size limit was exceeded (hostile or too large input) */
    VT_ERR_DIVERGED,     /* NaN or a value beyond FP32 range in a result */
    VT_ERR_IMPLAUSIBLE,  /* a rounding-log entry is not plausible for our own value */
    VT_ERR_MISMATCH,     /* the log does not match the operation sequence, or hashes differ */
    VT_ERR_CRYPTO,       /* a cryptographic primitive failed or a signature is bad */
    VT_ERR_DB,           /* SQLite error */
    VT_ERR_UNSUPPORTED,  /* feature not built in (e.g. CUDA) */
    VT_ERR_INTERNAL,     /* a bug: an invariant of our own code does not hold */
    VT_ERR_ENV,          /* the floating-point environment is not IEEE round-to-nearest with gradual
                          * underflow (common/vt_env.h): refusing to compute */
    VT_ERR_COUNT_
} vt_err;

/* Short stable name of an error code, e.g. "format". */
const char *vt_err_name(vt_err e);

/* Message of the last error set on this thread (never NULL). */
const char *vt_errmsg(void);

/* Set the thread's error message; returns e so it can be used in return statements. */
vt_err vt_set_error(vt_err e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Add context to the thread's current message, keeping it: vt_error_prefix(e, "recipe %s", path)
 * turns "unknown key" into "recipe x.json: unknown key"; vt_error_suffix(e, "[%s]", op) into
 * "unknown key [op]". Both format the context and the result in temporaries (never into the
 * buffer being read) and return e. vt_set_error(e, "...%s", vt_errmsg()) is safe too. */
vt_err vt_error_prefix(vt_err e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
vt_err vt_error_suffix(vt_err e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Clear the thread's error message (and its failure site). */
void vt_clear_error(void);

/* Where the thread's last error was raised (VT_DEBUG >= 1): cond is the text of the failing
 * condition of VT_RETURN_ERROR_IF, NULL for VT_RETURN_ERROR and vt_set_error; file is NULL when
 * nothing is recorded (VT_DEBUG = 0, or no error since vt_clear_error). vt_error_prefix and
 * vt_error_suffix keep the site: it is the origin's, not the context's. */
typedef struct {
    const char *cond;
    const char *file;
    int line;
    const char *func;
} vt_fail_site;
const vt_fail_site *vt_err_site(void); /* never NULL */

/* What a program prints after its own error message: "PROG: debug: failed `COND` at FILE:LINE
 * (FUNC)" on stderr, when this build has VT_DEBUG >= 1 or the environment has VT_DEBUG_ERRORS=1 and
 * a site is recorded; with VT_DEBUG_ERRORS=1 and none recorded, a line saying so. Otherwise nothing:
 * the default output of a VT_DEBUG = 0 build is unchanged. */
void vt_err_site_print(const char *prog);

/* Records the site and returns e (the macros below at VT_DEBUG >= 1; not for direct use). */
vt_err vti_err_site_note(vt_err e, const char *cond, const char *file, int line, const char *func);

#if VT_DEBUG >= 1
/* every vt_set_error call records its site (cond NULL); (vt_set_error)(...) is the function */
#define vt_set_error(err, ...) vti_err_site_note((vt_set_error)((err), __VA_ARGS__), NULL, __FILE__, __LINE__, __func__)
#define VT_RETURN_ERROR_IF(cond, err, ...)                                                                \
    do {                                                                                                  \
        if (cond) return vti_err_site_note((vt_set_error)((err), __VA_ARGS__), #cond, __FILE__, __LINE__, \
                                           __func__);                                                     \
    } while (0)
#else
/* Return early with an error and a formatted message when cond holds. */
#define VT_RETURN_ERROR_IF(cond, err, ...)                \
    do {                                                  \
        if (cond) return vt_set_error((err), __VA_ARGS__); \
    } while (0)
#endif

#define VT_RETURN_ERROR(err, ...) return vt_set_error((err), __VA_ARGS__)

/* Propagate a non-zero vt_err (the message is already set). */
#define VT_FORWARD_IF_ERROR(expr)      \
    do {                               \
        vt_err vt_e_ = (expr);         \
        if (vt_e_ != VT_OK) return vt_e_; \
    } while (0)

#if defined(__GNUC__)
#define VT_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define VT_WARN_UNUSED
#endif

#endif
