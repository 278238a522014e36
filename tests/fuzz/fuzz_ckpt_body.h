/* fuzz_ckpt_body.h - the check of the checkpoint reader (store/vt_checkpoint.h; docs/format.md
 * "Checkpoint file"), shared by the libFuzzer target fuzz_ckpt (tests/fuzz/fuzz_target.c) and the
 * corpus replayer (tests/tools/replay_corpus.c: ctest ckpt_corpus over tests/corpus/ckpt).
 *
 * Once per process a store is made in a temporary run directory (removed at exit) with one
 * checkpoint (step 1, 64 values); each input then replaces that checkpoint's file, and is read back whole
 * (vt_store_get_checkpoint) and streamed in pieces of 7 values (vt_ckpt_read_open / read / close).
 * Any file may be refused, but only as VT_ERR_FORMAT, VT_ERR_MISMATCH, VT_ERR_LIMIT or VT_ERR_NOMEM,
 * and both ways alike; a file is accepted only when it is the recorded file byte for byte, with its
 * values (and the recorded file itself is, checked once at the start). Returns 0 when every rule holds, 1 on a violation (on stderr); *accepted is 1 when read. */
#ifndef VT_FUZZ_CKPT_BODY_H
#define VT_FUZZ_CKPT_BODY_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/fuzz_common.h"
#include "store/vt_checkpoint.h"
#include "store/vt_store.h"

#define VT_FUZZ_CKPT_FAIL(...) VT_FUZZ_VIOLATION("fuzz_ckpt", __VA_ARGS__)
#define VT_FUZZ_CKPT_N 64

static char vt_fuzz_ckpt_dir[] = "/tmp/vt-fuzz-ckpt-XXXXXX";
static vt_store *vt_fuzz_ckpt_store = NULL;

static int vt_fuzz_ckpt_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* at exit: the store closed, the temporary run directory removed */
static void vt_fuzz_ckpt_cleanup(void)
{
    vt_store_close(vt_fuzz_ckpt_store);
    vt_fuzz_ckpt_store = NULL;
    nftw(vt_fuzz_ckpt_dir, vt_fuzz_ckpt_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static int vt_fuzz_ckpt_known(vt_err e)
{
    return e == VT_ERR_FORMAT || e == VT_ERR_MISMATCH || e == VT_ERR_LIMIT || e == VT_ERR_NOMEM;
}

static int vt_fuzz_ckpt_one(const uint8_t *data, size_t size, int *accepted)
{
    static char path[512];
    static uint8_t *orig = NULL;
    static size_t orig_n = 0;
    static float want[VT_FUZZ_CKPT_N];
    int rc = 0;
    float *v = NULL, got[VT_FUZZ_CKPT_N];
    vt_ckpt_reader *r = NULL;
    *accepted = 0;
    if (!vt_fuzz_ckpt_store) { /* the run directory, its store and its checkpoint of step 1 */
        char run[64];
        for (int i = 0; i < VT_FUZZ_CKPT_N; i++) want[i] = (float)i * 0.25f - 3.0f;
        if (!mkdtemp(vt_fuzz_ckpt_dir)) return 1;
        atexit(vt_fuzz_ckpt_cleanup);
        snprintf(run, sizeof run, "%s/run", vt_fuzz_ckpt_dir);
        if (vt_store_create(run, "{}", 2, &vt_fuzz_ckpt_store) != VT_OK ||
            vt_store_put_checkpoint(vt_fuzz_ckpt_store, 1, want, VT_FUZZ_CKPT_N, 3) != VT_OK) {
            fprintf(stderr, "fuzz_ckpt: no store: %s\n", vt_errmsg());
            return 1;
        }
        vt_store_checkpoint_path(run, 1, path, sizeof path);
        FILE *f = fopen(path, "rb");
        orig = malloc(1 << 16);
        orig_n = f && orig ? fread(orig, 1, 1 << 16, f) : 0;
        if (f) fclose(f);
        if (!orig_n) return 1;
        if (vt_fuzz_ckpt_one(orig, orig_n, accepted) != 0 || !*accepted) { /* the recorded file reads back */
            fprintf(stderr, "fuzz_ckpt: the recorded checkpoint does not read back\n");
            return 1;
        }
        *accepted = 0;
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    vt_store *s = vt_fuzz_ckpt_store;
    int same = size == orig_n && memcmp(data, orig, size) == 0;
    vt_err e = vt_store_get_checkpoint(s, 1, VT_FUZZ_CKPT_N, &v);
    vt_err e2 = vt_ckpt_read_open(s, 1, VT_FUZZ_CKPT_N, &r);
    for (size_t k = 0; !e2 && k < VT_FUZZ_CKPT_N; k += 7)
        e2 = vt_ckpt_read(r, got + k, VT_FUZZ_CKPT_N - k < 7 ? VT_FUZZ_CKPT_N - k : 7);
    if (!e2) e2 = vt_ckpt_read_close(r);
    else vt_ckpt_read_abort(r);
    if (e && !vt_fuzz_ckpt_known(e)) VT_FUZZ_CKPT_FAIL("refused with code %d (%s)", (int)e, vt_errmsg());
    if (e2 && !vt_fuzz_ckpt_known(e2)) VT_FUZZ_CKPT_FAIL("streamed: refused with code %d (%s)", (int)e2, vt_errmsg());
    if (!e != !e2) VT_FUZZ_CKPT_FAIL("read whole: code %d, streamed: code %d", (int)e, (int)e2);
    if (!e) {
        *accepted = 1;
        if (!same) VT_FUZZ_CKPT_FAIL("accepted a file other than the recorded one");
        if (memcmp(v, want, sizeof want) != 0 || memcmp(got, want, sizeof want) != 0)
            VT_FUZZ_CKPT_FAIL("the values read are not the checkpoint's");
    } else if (same)
        VT_FUZZ_CKPT_FAIL("the recorded file itself refused: %s", vt_errmsg());
done:
    free(v);
    return rc;
}

#endif
