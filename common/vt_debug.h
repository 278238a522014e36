/* vt_debug.h - internal invariants checked in debug builds (as zstd's assert() under DEBUGLEVEL).
 *
 * VT_ASSERT(cond) states an invariant of the project's own code - never a property of input, which
 * stays an error return (VT_RETURN_ERROR_IF, common/vt_error.h). At debug level VT_DEBUG >= 1
 * (CMake: Debug and sanitizer builds, or -DVT_DEBUG=N) a false cond prints the condition and
 * FILE:LINE (function) to stderr and aborts; at VT_DEBUG = 0 (the default) it compiles to nothing:
 * cond is not evaluated (it only appears under sizeof, so variables used only by asserts raise no
 * warning). VT_ASSERT_LEVEL(level, cond) checks only from VT_DEBUG >= level: level 2 and above for
 * invariants that cost a loop.
 *
 * Usable from code nvcc compiles (a _hd.h header): on the device it prints with printf and stops
 * the kernel with __trap().
 */
#ifndef VT_DEBUG_H
#define VT_DEBUG_H

#ifndef VT_DEBUG
#define VT_DEBUG 0
#endif

#if VT_DEBUG >= 1
#if defined(__CUDA_ARCH__)
#define VTI_ASSERT_FAIL(text)                                                                              \
    do {                                                                                                   \
        printf("VT_ASSERT failed: %s at %s:%d (%s)\n", text, __FILE__, __LINE__, __func__);                \
        __trap();                                                                                          \
    } while (0)
#else
#include <stdio.h>
#include <stdlib.h>
#define VTI_ASSERT_FAIL(text)                                                                              \
    do {                                                                                                   \
        fprintf(stderr, "VT_ASSERT failed: %s at %s:%d (%s)\n", text, __FILE__, __LINE__, __func__);       \
        abort();                                                                                           \
    } while (0)
#endif
#define VT_ASSERT_LEVEL(level, cond)                                 \
    do {                                                             \
        if (VT_DEBUG >= (level) && !(cond)) VTI_ASSERT_FAIL(#cond); \
    } while (0)
#else
#define VT_ASSERT_LEVEL(level, cond) ((void)sizeof(!(cond)))
#endif

#define VT_ASSERT(cond) VT_ASSERT_LEVEL(1, cond)

#endif
