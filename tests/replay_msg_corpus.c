/* replay_msg_corpus.c - `replay_msg_corpus DIR`: runs every file of DIR through the same check
 * as the libFuzzer target (tests/fuzz/fuzz_msg_body.h) and exits non-zero on any
 * violation. Files named "ok-*" must also be accepted as a frame signed by the fixed key
 * (vt_fuzz_msg_key) and files named "bad-*" rejected as such; other names (e.g. fuzzer
 * finds) only need to pass the check. Write the corpus with make_msg_corpus DIR.
 * Prints "N passed, M failed". */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz_msg_body.h"

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
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
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
        size_t plen = strlen(argv[1]) + strlen(names[i]) + 2;
        char *path = malloc(plen);
        if (!path) return 2;
        snprintf(path, plen, "%s/%s", argv[1], names[i]);
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
        } else if (vt_fuzz_msg_one(buf, len, &accepted) != 0) {
            fprintf(stderr, "FAIL %s: round-trip violation\n", path);
            ok = 0;
        } else if (strncmp(names[i], "ok-", 3) == 0 && !(accepted & 2)) {
            fprintf(stderr, "FAIL %s: expected to decode, rejected\n", path);
            ok = 0;
        } else if (strncmp(names[i], "bad-", 4) == 0 && (accepted & 2)) {
            fprintf(stderr, "FAIL %s: expected to be rejected, accepted\n", path);
            ok = 0;
        }
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
        fprintf(stderr, "no files in %s\n", argv[1]);
        return 1;
    }
    return failed ? 1 : 0;
}
