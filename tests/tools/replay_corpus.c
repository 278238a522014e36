/* replay_corpus.c - `replay_corpus KIND DIR`: runs every file of DIR through the same check as the
 * decoder's libFuzzer target (tests/fuzz/fuzz_steplog_body.h, tests/fuzz/fuzz_msg_body.h,
 * fuzz_cert_body.h, fuzz_st_body.h, fuzz_onnx_body.h, fuzz_og_body.h, fuzz_manifest_body.h, fuzz_data_body.h,
 * fuzz_ckpt_body.h) and exits non-zero on any violation. Files named "ok-*" must also be accepted
 * and files named "bad-*" rejected (step log: by decode or parse; messages: as a frame signed by the
 * fixed key vt_fuzz_msg_key; certificate: by one of its decoders; safetensors: by the reader; ONNX:
 * as an MLP or a graph; the ONNX front-end (onnx_graph): as a folded graph; manifest: by the reader; data: the .npy pair, any file being a text;
 * checkpoint: read back); other names (e.g. fuzzer finds) only need to pass the check. Prints "N
 * passed, M failed"; with VT_REPLAY_VERBOSE set, also each file's `accepted` bits. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz_cert_body.h"
#include "fuzz/fuzz_ckpt_body.h"
#include "fuzz/fuzz_data_body.h"
#include "fuzz/fuzz_manifest_body.h"
#include "fuzz/fuzz_msg_body.h"
#include "fuzz/fuzz_og_body.h"
#include "fuzz/fuzz_onnx_body.h"
#include "fuzz/fuzz_st_body.h"
#include "fuzz/fuzz_steplog_body.h"

/* A decoder's check, and the bits of its `accepted` result that mean "accepted". */
static const struct {
    const char *name;
    int (*check)(const uint8_t *, size_t, int *);
    int accept_mask;
} kinds[] = {{"steplog", vt_fuzz_steplog_one, ~0},
             {"msg", vt_fuzz_msg_one, 2},
             {"cert", vt_fuzz_cert_one, ~0},
             {"safetensors", vt_fuzz_st_one, 1},
             {"onnx", vt_fuzz_onnx_one, ~0},
             {"onnx_graph", vt_fuzz_og_one, ~0},
             {"manifest", vt_fuzz_manifest_one, ~0},
             {"data", vt_fuzz_data_one, 1},
             {"ckpt", vt_fuzz_ckpt_one, ~0}};

#define MAX_FILE ((size_t)16 << 20)

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    uint8_t *buf = malloc(MAX_FILE + 1);
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, MAX_FILE + 1, f);
    int bad = ferror(f) || n > MAX_FILE;
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

int main(int argc, char **argv)
{
    size_t kind = sizeof kinds / sizeof kinds[0];
    for (size_t k = 0; argc == 3 && k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(argv[1], kinds[k].name) == 0) kind = k;
    if (kind == sizeof kinds / sizeof kinds[0]) {
        fprintf(stderr, "usage: %s steplog|msg|cert|safetensors|onnx|onnx_graph|manifest|data|ckpt DIR\n", argv[0]);
        return 2;
    }
    if (strcmp(kinds[kind].name, "onnx") == 0 && !vt_cert_onnx_supported()) {
        printf("skipped: this build has no ONNX reader\n");
        return 77;
    }
    if (strcmp(kinds[kind].name, "onnx_graph") == 0) {
        vt_og_graph g;
        if (vt_og_read((const uint8_t *)"", 0, 1, &g) == VT_ERR_UNSUPPORTED) {
            printf("skipped: this build has no ONNX front-end\n");
            return 77;
        }
        vt_og_free(&g);
    }
    const char *dir = argv[2];
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 2;
    }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (nn == cap) {
            cap = cap ? 2 * cap : 64;
            char **t = realloc(names, cap * sizeof *names);
            if (!t) return 2;
            names = t;
        }
        names[nn] = strdup(de->d_name);
        if (!names[nn]) return 2;
        nn++;
    }
    closedir(d);
    if (nn) qsort(names, nn, sizeof *names, cmp_names);

    long passed = 0, failed = 0;
    for (size_t i = 0; i < nn; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(plen);
        if (!path) return 2;
        snprintf(path, plen, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        uint8_t *buf = NULL;
        size_t len = 0;
        int ok = 1, accepted = 0;
        if (read_file(path, &buf, &len) != 0) {
            fprintf(stderr, "FAIL %s: cannot read\n", path);
            ok = 0;
        } else if (kinds[kind].check(buf, len, &accepted) != 0) {
            fprintf(stderr, "FAIL %s: round-trip violation\n", path);
            ok = 0;
        } else if (strncmp(names[i], "ok-", 3) == 0 && !(accepted & kinds[kind].accept_mask)) {
            fprintf(stderr, "FAIL %s: expected to decode, rejected: %s\n", path, vt_errmsg());
            ok = 0;
        } else if (strncmp(names[i], "bad-", 4) == 0 && (accepted & kinds[kind].accept_mask)) {
            fprintf(stderr, "FAIL %s: expected to be rejected, accepted\n", path);
            ok = 0;
        }
        if (getenv("VT_REPLAY_VERBOSE")) printf("%s: accepted 0x%x\n", names[i], (unsigned)accepted);
        if (ok)
            passed++;
        else
            failed++;
        free(buf);
        free(path);
        free(names[i]);
    }
    free(names);
    printf("%ld passed, %ld failed\n", passed, failed);
    if (passed + failed == 0) {
        fprintf(stderr, "no files in %s\n", dir);
        return 1;
    }
    return failed ? 1 : 0;
}
