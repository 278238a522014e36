/* fuzz_common.h - what the file decoders' checks share (fuzz_cert_body.h, fuzz_st_body.h,
 * fuzz_onnx_body.h, fuzz_manifest_body.h; run by the libFuzzer targets of tests/fuzz/fuzz_target.c
 * and by the corpus replayer tests/tools/replay_corpus.c): the report of a violation, and the bytes of one
 * input as a file for the decoders that take a path (the safetensors reader, the ONNX reader): one
 * memfd per process (memfd_create, no disk), truncated and rewritten for each input, opened by the
 * decoder as /proc/self/fd/N like any regular file; and the consistency of a loaded data set. */
#ifndef VT_FUZZ_COMMON_H
#define VT_FUZZ_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/vt_data.h"

/* In a check with `int rc` and a label `done`: reports the violation of target on stderr, sets rc = 1
 * and leaves by done. */
#define VT_FUZZ_VIOLATION(target, ...)                \
    do {                                              \
        fprintf(stderr, "%s violation: ", target);    \
        fprintf(stderr, __VA_ARGS__);                 \
        fputc('\n', stderr);                          \
        rc = 1;                                       \
        goto done;                                    \
    } while (0)

/* The path of a file holding exactly data[0..size), or NULL (an error on stderr); slot 0 or 1 (two
 * files at once, e.g. a .npy pair). */
static inline const char *vt_fuzz_file_at(int slot, const uint8_t *data, size_t size)
{
    static int fd[2] = {-1, -1};
    static char path[2][64];
    if (fd[slot] < 0) {
        fd[slot] = memfd_create("vt-fuzz-input", 0);
        if (fd[slot] < 0) {
            perror("memfd_create");
            return NULL;
        }
        snprintf(path[slot], sizeof path[slot], "/proc/self/fd/%d", fd[slot]);
    }
    if (ftruncate(fd[slot], 0) != 0) {
        perror("ftruncate");
        return NULL;
    }
    for (size_t off = 0; off < size;) {
        ssize_t k = pwrite(fd[slot], data + off, size - off, (off_t)off);
        if (k <= 0) {
            perror("pwrite");
            return NULL;
        }
        off += (size_t)k;
    }
    return path[slot];
}

static inline const char *vt_fuzz_file(const uint8_t *data, size_t size) { return vt_fuzz_file_at(0, data, size); }

/* 0 when a loaded data set is consistent: N >= 1 examples of d = channels x rows x cols >= 1
 * features, u8 or finite FP32 ones, labels below n_classes; else 1 (on stderr). */
static inline int vt_fuzz_dataset_bad(const vt_dataset *ds)
{
    if (ds->n < 1 || ds->d < 1 || !ds->y || !ds->x == !ds->xf || ds->d != ds->channels * ds->rows * ds->cols) {
        fprintf(stderr, "the data set is inconsistent (n %zu, d %u = %u x %u x %u)\n", ds->n, ds->d, ds->channels,
                ds->rows, ds->cols);
        return 1;
    }
    for (size_t i = 0; i < ds->n; i++)
        if (ds->y[i] >= ds->n_classes) {
            fprintf(stderr, "label %zu is %u, n_classes %u\n", i, ds->y[i], ds->n_classes);
            return 1;
        }
    for (size_t i = 0; ds->xf && i < ds->n * ds->d; i++)
        if (!isfinite(ds->xf[i])) {
            fprintf(stderr, "feature %zu is not finite\n", i);
            return 1;
        }
    return 0;
}

#endif
