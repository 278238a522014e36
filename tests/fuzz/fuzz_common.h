/* fuzz_common.h - what the file decoders' checks share (fuzz_cert_body.h, fuzz_st_body.h,
 * fuzz_onnx_body.h, fuzz_manifest_body.h; run by the libFuzzer targets of tests/fuzz/fuzz_target.c
 * and by the corpus replayer tests/replay_corpus.c): the report of a violation, and the bytes of one
 * input as a file for the decoders that take a path (the safetensors reader, the ONNX reader): one
 * memfd per process (memfd_create, no disk), truncated and rewritten for each input, opened by the
 * decoder as /proc/self/fd/N like any regular file. */
#ifndef VT_FUZZ_COMMON_H
#define VT_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* The path of a file holding exactly data[0..size), or NULL (an error on stderr). */
static const char *vt_fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("vt-fuzz-input", 0);
        if (fd < 0) {
            perror("memfd_create");
            return NULL;
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) {
        perror("ftruncate");
        return NULL;
    }
    for (size_t off = 0; off < size;) {
        ssize_t k = pwrite(fd, data + off, size - off, (off_t)off);
        if (k <= 0) {
            perror("pwrite");
            return NULL;
        }
        off += (size_t)k;
    }
    return path;
}

#endif
