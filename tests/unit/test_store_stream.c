/* test_store_stream.c - the streamed checkpoint writer and reader (store/vt_checkpoint.h): a file
 * written in pieces is read whole, and a file written whole is read in pieces, bit for bit (the
 * file format is one: docs/format.md "Checkpoint file"); the writer refuses more or fewer values
 * than declared; the streaming reader rejects truncated, extended and altered files - a file hash
 * that differs from the recorded one said at close, before the values are trusted. */
#include "vt_test.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/vt_checkpoint.h"
#include "store/vt_store.h"

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    return b;
}

static int spit(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(b, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* the values of checkpoint `step` read in pieces of `piece` values; the error of the first failing call */
static vt_err read_pieces(vt_store *s, uint64_t step, size_t n, size_t piece, float *out)
{
    vt_ckpt_reader *r = NULL;
    vt_err e = vt_ckpt_read_open(s, step, n, &r);
    for (size_t i = 0; !e && i < n; i += piece) e = vt_ckpt_read(r, out + i, n - i < piece ? n - i : piece);
    if (e) {
        vt_ckpt_read_abort(r);
        return e;
    }
    return vt_ckpt_read_close(r);
}

#define N 300000 /* larger than zstd's stream buffers: several blocks */

int main(void)
{
    char root[256];
    snprintf(root, sizeof root, "%s/vt_ckstream_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) return 1;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/run", root);
    vt_store *s = NULL;
    CHECK_OK(vt_store_create(dir, "{}", 2, &s));
    float *v = malloc(N * sizeof *v), *back = malloc(N * sizeof *back);
    uint64_t x = vt_test_seed(7);
    for (size_t i = 0; i < N; i++) { /* half noise, half runs: zstd has something to compress */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(x >> 32);
        v[i] = i % 2 ? (float)(u % 7) : (float)u * 1e-9f;
    }

    /* 1. streamed in uneven pieces, read whole; written whole, read in pieces */
    vt_ckpt_writer *w = NULL;
    CHECK_OK(vt_ckpt_write_open(s, 4, N, 3, &w));
    size_t pieces[] = {1, 0, 4095, 70001, 100000}, at = 0;
    for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++, at += pieces[k - 1]) CHECK_OK(vt_ckpt_write_append(w, v + at, pieces[k]));
    CHECK_OK(vt_ckpt_write_append(w, v + at, N - at));
    CHECK(vt_ckpt_write_append(w, v, 1) == VT_ERR_ARG, "a value beyond the declared n");
    CHECK_OK(vt_ckpt_write_finish(w));
    float *whole = NULL;
    CHECK_OK(vt_store_get_checkpoint(s, 4, N, &whole));
    CHECK(whole && !memcmp(whole, v, N * sizeof *v), "streamed file, whole reader: not bit-exact");
    free(whole);
    CHECK_OK(vt_store_put_checkpoint(s, 8, v, N, 5));
    for (size_t piece = 1; piece <= N; piece *= 97) {
        memset(back, 0, N * sizeof *back);
        CHECK_OK(read_pieces(s, 8, N, piece, back));
        CHECK(!memcmp(back, v, N * sizeof *v), "whole writer, read in pieces of %zu: not bit-exact", piece);
    }
    CHECK_OK(read_pieces(s, 4, N, 1000, back));
    CHECK(!memcmp(back, v, N * sizeof *v), "streamed file read in pieces");
    /* an empty state */
    CHECK_OK(vt_ckpt_write_open(s, 9, 0, 3, &w));
    CHECK_OK(vt_ckpt_write_finish(w));
    CHECK_OK(read_pieces(s, 9, 0, 1, back));

    /* 2. the writer: fewer values than declared leave nothing behind */
    CHECK_OK(vt_ckpt_write_open(s, 12, N, 3, &w));
    CHECK_OK(vt_ckpt_write_append(w, v, N - 1));
    CHECK(vt_ckpt_write_finish(w) != VT_OK, "a checkpoint one value short was finished");
    uint64_t *list = NULL;
    size_t nl = 0;
    CHECK_OK(vt_store_list_checkpoints(s, &list, &nl));
    CHECK(nl == 3 && list[0] == 4 && list[1] == 8 && list[2] == 9, "checkpoints recorded: %zu", nl);
    free(list);
    char p[600], ckd[400];
    vt_store_checkpoint_path(dir, 12, p, sizeof p);
    CHECK(access(p, F_OK) != 0, "an unfinished checkpoint's file exists");
    snprintf(ckd, sizeof ckd, "%s/checkpoints", dir);
    CHECK_OK(vt_store_put_checkpoint(s, 4, v, N, 3)); /* (a rewrite replaces it) */
    CHECK_OK(vt_ckpt_write_open(s, 4, N, 3, &w));
    vt_ckpt_write_abort(w);
    CHECK_OK(read_pieces(s, 4, N, 5000, back));

    /* 3. hostile streamed files: truncated, extended, altered */
    vt_store_checkpoint_path(dir, 4, p, sizeof p);
    size_t flen = 0;
    uint8_t *file = slurp(p, &flen), *bad = malloc(flen + 2);
    CHECK(file && bad && flen > 1000, "the file");
    size_t cuts[] = {0, 10, 24, 27, flen / 3, flen - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        CHECK(spit(p, file, cuts[k]) == 0, "write");
        vt_err e = read_pieces(s, 4, N, 4096, back);
        CHECK(e == VT_ERR_FORMAT, "truncated to %zu bytes: %d (%s)", cuts[k], (int)e, vt_errmsg());
    }
    memcpy(bad, file, flen);
    bad[flen] = 0;
    CHECK(spit(p, bad, flen + 1) == 0, "write");
    CHECK(read_pieces(s, 4, N, 4096, back) == VT_ERR_FORMAT, "a byte after the frame: %s", vt_errmsg());
    for (size_t pos = flen / 2; pos < flen; pos += flen / 7) {
        memcpy(bad, file, flen);
        bad[pos] ^= 0x04;
        CHECK(spit(p, bad, flen) == 0, "write");
        vt_err e = read_pieces(s, 4, N, 4096, back);
        CHECK(e == VT_ERR_MISMATCH && strstr(vt_errmsg(), "does not match its recorded hash"),
              "a byte altered at %zu of %zu: %d (%s)", pos, flen, (int)e, vt_errmsg());
    }
    /* the file of another checkpoint (a valid file of the same size class, another hash) */
    vt_store_checkpoint_path(dir, 8, ckd, sizeof ckd);
    size_t olen = 0;
    uint8_t *other = slurp(ckd, &olen);
    memcpy(other + 8, file + 8, 8); /* its header names step 4 */
    CHECK(other && spit(p, other, olen) == 0, "write");
    CHECK(read_pieces(s, 4, N, 4096, back) == VT_ERR_MISMATCH, "another file in its place: %s", vt_errmsg());
    CHECK(spit(p, file, flen) == 0, "restore");
    CHECK_OK(read_pieces(s, 4, N, 4096, back));
    CHECK(!memcmp(back, v, N * sizeof *v), "restored");
    /* the wrong n, the wrong step */
    CHECK(read_pieces(s, 4, N - 1, 4096, back) == VT_ERR_FORMAT, "expected n - 1");
    CHECK(read_pieces(s, 5, N, 4096, back) == VT_ERR_ARG, "no checkpoint at 5");
    vt_ckpt_reader *r = NULL;
    CHECK_OK(vt_ckpt_read_open(s, 4, N, &r));
    CHECK(vt_ckpt_read(r, back, N + 1) == VT_ERR_ARG, "a read beyond n");
    CHECK(vt_ckpt_read_close(r) == VT_ERR_INTERNAL, "closed before every value was read");

    free(other), free(file), free(bad), free(v), free(back);
    vt_store_close(s);
    nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return vt_test_finish("test_store_stream");
}
