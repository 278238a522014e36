/* vt_data.c - dataset loaders (MNIST IDX, UCI digits CSV), canonical hash, subsets and
 * FP32 conversion. See vt_data.h and docs/data.md. */
#include "vt_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "../common/vt_bytes.h"
#include "vt_data_int.h"

#ifndef VT_SOURCE_DIR
#define VT_SOURCE_DIR "."
#endif

#define VT_DATA_PATH_MAX 4096
#define VT_DATA_FIRST_MAX (256u << 20) /* largest first allocation for a payload */
#define VT_DATA_DEFLATE_MAX_RATIO 1032u   /* deflate never expands more than this per input byte */

/* ---------------------------------------------------------------- byte source
 * A file read either directly or through zlib's inflate (gzip detected by its magic bytes
 * 1f 8b). Every byte handed out is also fed to a SHA-256 of the decompressed payload.
 * A gzip file must consist of complete gzip members (RFC 1952; several members are
 * concatenated, as gzip -d does) and nothing else: a member cut short, a bad CRC-32 or
 * length, or trailing bytes that are not another member are errors. The output is never
 * more than the caller asks for, so decompression is bounded by the header-implied size. */

#define VT_DATA_INBUF (1u << 16)

typedef struct {
    const char *path;
    FILE *f;
    int is_gz;
    int zs_live;    /* inflateInit2 done */
    int in_member;  /* inside a gzip member (its end not yet seen) */
    int members;    /* members started so far */
    size_t member_out; /* bytes produced by the current member */
    z_stream zs;
    uint8_t *inbuf;
    vt_sha256_ctx sha;
    int sha_live;
    size_t consumed; /* decompressed bytes handed out so far */
    uint64_t file_size; /* bytes in the file (fstat), 0 when unknown */
} vt_src;

static void src_close(vt_src *s)
{
    if (s->f) fclose(s->f);
    if (s->zs_live) inflateEnd(&s->zs);
    free(s->inbuf);
    if (s->sha_live) vt_sha256_abort(&s->sha);
    s->f = NULL;
    s->inbuf = NULL;
    s->zs_live = 0;
    s->sha_live = 0;
}

static vt_err src_open(vt_src *s, const char *path)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    errno = 0;
    s->f = fopen(path, "rb");
    VT_RETURN_ERROR_IF(!s->f, VT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char m[2];
    size_t k = fread(m, 1, 2, s->f);
    if (ferror(s->f)) {
        int e = errno;
        src_close(s);
        VT_RETURN_ERROR(VT_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    rewind(s->f);
    struct stat st;
    if (fstat(fileno(s->f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        s->file_size = (uint64_t)st.st_size;
    if (k == 2 && m[0] == 0x1f && m[1] == 0x8b) {
        s->is_gz = 1;
        s->inbuf = malloc(VT_DATA_INBUF);
        if (!s->inbuf) {
            src_close(s);
            VT_RETURN_ERROR(VT_ERR_NOMEM, "%s: out of memory", path);
        }
        /* zs is zeroed: zalloc/zfree/opaque = Z_NULL, no input yet */
        if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK) { /* gzip wrapper only */
            src_close(s);
            VT_RETURN_ERROR(VT_ERR_NOMEM, "%s: zlib inflateInit2 failed", path);
        }
        s->zs_live = 1;
    }
    vt_err e = vt_sha256_init(&s->sha);
    if (e != VT_OK) {
        src_close(s);
        return e;
    }
    s->sha_live = 1;
    return VT_OK;
}

/* Inflates up to n bytes into buf; *got < n only at the end of the last member. */
static vt_err src_inflate(vt_src *s, uint8_t *buf, size_t n, size_t *got)
{
    size_t tot = 0;
    while (tot < n) {
        if (s->zs.avail_in == 0) {
            size_t k = fread(s->inbuf, 1, VT_DATA_INBUF, s->f);
            VT_RETURN_ERROR_IF(k == 0 && ferror(s->f), VT_ERR_IO, "%s: read error: %s", s->path,
                               strerror(errno));
            if (k == 0) {
                VT_RETURN_ERROR_IF(s->in_member, VT_ERR_FORMAT,
                                   "%s: truncated gzip stream (the compressed data ends inside "
                                   "gzip member %d)",
                                   s->path, s->members);
                break; /* clean end after a complete member */
            }
            s->zs.next_in = s->inbuf;
            s->zs.avail_in = (uInt)k;
        }
        if (!s->in_member) { /* more bytes after a member: they must be another member */
            if (s->members > 0 && inflateReset(&s->zs) != Z_OK)
                VT_RETURN_ERROR(VT_ERR_INTERNAL, "%s: zlib inflateReset failed", s->path);
            s->in_member = 1;
            s->members++;
            s->member_out = 0;
        }
        size_t want = n - tot;
        if (want > (1u << 30)) want = 1u << 30;
        s->zs.next_out = buf + tot;
        s->zs.avail_out = (uInt)want;
        int ret = inflate(&s->zs, Z_NO_FLUSH);
        size_t made = want - s->zs.avail_out;
        tot += made;
        s->member_out += made;
        if (ret == Z_STREAM_END) {
            s->in_member = 0;
        } else if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT) {
            VT_RETURN_ERROR_IF(s->members > 1 && s->member_out == 0, VT_ERR_FORMAT,
                               "%s: extra bytes after the end of the gzip stream (not a gzip "
                               "member: %s)",
                               s->path, s->zs.msg ? s->zs.msg : "bad header");
            VT_RETURN_ERROR(VT_ERR_FORMAT, "%s: corrupt gzip data in member %d: %s", s->path,
                            s->members, s->zs.msg ? s->zs.msg : "needs a dictionary");
        } else if (ret == Z_MEM_ERROR) {
            VT_RETURN_ERROR(VT_ERR_NOMEM, "%s: zlib: out of memory", s->path);
        } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            VT_RETURN_ERROR(VT_ERR_INTERNAL, "%s: zlib inflate returned %d", s->path, ret);
        }
        /* Z_OK / Z_BUF_ERROR: output full (loop ends) or more input needed (next fread) */
    }
    *got = tot;
    return VT_OK;
}

/* Reads up to n bytes; *got < n only at the end of the payload. A truncated or corrupt
 * gzip stream is an error, also when it is noticed after the last payload byte. */
static vt_err src_read(vt_src *s, uint8_t *buf, size_t n, size_t *got)
{
    size_t tot = 0;
    *got = 0;
    if (!s->is_gz) {
        tot = fread(buf, 1, n, s->f);
        VT_RETURN_ERROR_IF(tot < n && ferror(s->f), VT_ERR_IO, "%s: read error: %s", s->path,
                           strerror(errno));
    } else {
        VT_FORWARD_IF_ERROR(src_inflate(s, buf, n, &tot));
    }
    if (tot > 0) VT_FORWARD_IF_ERROR(vt_sha256_update(&s->sha, buf, tot));
    s->consumed += tot;
    *got = tot;
    return VT_OK;
}

/* Reads exactly n bytes of a header field; names the file and the field when short. */
static vt_err src_read_exact(vt_src *s, uint8_t *buf, size_t n, const char *what)
{
    size_t got = 0;
    size_t before = s->consumed;
    VT_FORWARD_IF_ERROR(src_read(s, buf, n, &got));
    VT_RETURN_ERROR_IF(got == 0 && before == 0, VT_ERR_FORMAT, "%s: empty file", s->path);
    VT_RETURN_ERROR_IF(got < n, VT_ERR_FORMAT,
                       "%s: truncated %s: expected %zu bytes at offset %zu, file ends after %zu",
                       s->path, what, n, before, before + got);
    return VT_OK;
}

/* At most how many more decompressed bytes the file can hold (an allocation hint). */
static uint64_t src_bound(const vt_src *s)
{
    if (s->file_size == 0) return 1u << 20; /* unknown (not a regular file): start small */
    if (!s->is_gz) return s->file_size > s->consumed ? s->file_size - s->consumed : 0;
    return s->file_size * VT_DATA_DEFLATE_MAX_RATIO; /* file_size < 2^63 / 1032 in practice */
}

/* Reads exactly `total` payload bytes into a new buffer. The first allocation is at most
 * what the file can actually hold (raw: the bytes left; gzip: 1032x its size), and the
 * buffer grows only as bytes arrive, so a header claiming a huge count in a small file
 * costs no more memory than the file could produce. */
static vt_err src_read_payload(vt_src *s, size_t total, const char *what, uint8_t **out)
{
    *out = NULL;
    uint64_t first = src_bound(s);
    if (first > VT_DATA_FIRST_MAX) first = VT_DATA_FIRST_MAX;
    size_t cap = total < first ? total : (size_t)first;
    uint8_t *buf = malloc(cap ? cap : 1);
    VT_RETURN_ERROR_IF(!buf, VT_ERR_NOMEM, "%s: out of memory (%zu bytes)", s->path, cap);
    size_t have = 0;
    size_t start = s->consumed;
    while (have < total) {
        if (have == cap) {
            size_t ncap = cap + (cap > (1u << 16) ? cap : (1u << 16));
            if (ncap > total) ncap = total;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                VT_RETURN_ERROR(VT_ERR_NOMEM, "%s: out of memory (%zu bytes)", s->path, ncap);
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = 0;
        vt_err e = src_read(s, buf + have, cap - have, &got);
        if (e != VT_OK) {
            free(buf);
            return e;
        }
        have += got;
        if (have < cap) break; /* end of payload */
    }
    if (have < total) {
        free(buf);
        VT_RETURN_ERROR(VT_ERR_FORMAT,
                        "%s: truncated %s: the header implies %zu bytes after offset %zu, "
                        "only %zu follow",
                        s->path, what, total, start, have);
    }
    *out = buf;
    return VT_OK;
}

/* Reads the whole payload (at most max bytes, else VT_ERR_LIMIT) into a new buffer. */
static vt_err src_read_all(vt_src *s, size_t max, uint8_t **out, size_t *out_len)
{
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    *out = NULL, *out_len = 0;
    for (;;) {
        if (len == cap) {
            if (cap > max) {
                free(buf);
                VT_RETURN_ERROR(VT_ERR_LIMIT, "%s: more than %zu bytes (decompressed)", s->path, max);
            }
            size_t ncap = cap ? 2 * cap : (1u << 16);
            if (ncap > max + 1) ncap = max + 1;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                VT_RETURN_ERROR(VT_ERR_NOMEM, "%s: out of memory", s->path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = 0;
        vt_err e = src_read(s, buf + len, cap - len, &got);
        if (e) {
            free(buf);
            return e;
        }
        len += got;
        if (len < cap) break;
    }
    *out = buf, *out_len = len;
    return VT_OK;
}

/* The payload must end here: no extra bytes, and (gzip) a complete, valid stream. */
static vt_err src_expect_end(vt_src *s)
{
    uint8_t probe;
    size_t got = 0;
    size_t at = s->consumed;
    VT_FORWARD_IF_ERROR(src_read(s, &probe, 1, &got));
    VT_RETURN_ERROR_IF(got != 0, VT_ERR_FORMAT,
                       "%s: extra bytes after the %zu-byte payload the header implies", s->path,
                       at);
    return VT_OK;
}

/* Finishes the payload hash (after src_expect_end). */
static vt_err src_finish_hash(vt_src *s, uint8_t out[VT_HASH_LEN])
{
    s->sha_live = 0;
    return vt_sha256_final(&s->sha, out);
}

static uint32_t get_u32be(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* ---------------------------------------------------------------- dataset helpers */

vt_err vti_data_check_name(const char *name)
{
    VT_RETURN_ERROR_IF(!name || !name[0], VT_ERR_ARG, "dataset name is empty");
    size_t len = strlen(name);
    VT_RETURN_ERROR_IF(len > VT_DATA_NAME_MAX, VT_ERR_ARG,
                       "dataset name is %zu characters long, the limit is %d", len,
                       VT_DATA_NAME_MAX);
    for (size_t i = 0; i < len; i++)
        VT_RETURN_ERROR_IF((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e,
                           VT_ERR_ARG, "dataset name has a non-printable character at %zu", i);
    return VT_OK;
}

static void fill_lut(vt_dataset *ds)
{
    for (unsigned v = 0; v < 256; v++)
        ds->lut[v] = v <= ds->x_max ? (float)((double)v / (double)ds->x_max) : 0.0f;
}

/* float32 values as their little-endian bytes */
static vt_err hash_f32(vt_sha256_ctx *c, const float *v, size_t total)
{
    vt_err e = VT_OK;
    for (size_t i = 0; e == VT_OK && i < total;) {
        uint8_t buf[4096];
        size_t k = 0;
        for (; k < sizeof buf / 4 && i < total; k++, i++) {
            uint32_t b;
            memcpy(&b, &v[i], 4);
            vt_put_u32le(buf + 4 * k, b);
        }
        e = vt_sha256_update(c, buf, 4 * k);
    }
    return e;
}

vt_err vt_data_hash(const vt_dataset *ds, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(!ds || !out, VT_ERR_ARG, "vt_data_hash: NULL argument");
    /* version 3: version 2 with float targets (their count per example in the head, their bytes in
     * place of the labels'); versions 1 and 2 are unchanged by it */
    const int v3 = ds->hash_version == 3, v2 = ds->hash_version == 2 || v3;
    VT_RETURN_ERROR_IF((ds->n > 0 && ((!ds->x && !ds->xf) || !ds->y)) || (ds->xf && !v2) ||
                           (!ds->xf && (ds->x_max == 0 || ds->x_max > 255)) || ds->hash_version > 3 ||
                           (v3 != (ds->yt != NULL)) || (v3 && !ds->k_targets),
                       VT_ERR_ARG, "vt_data_hash: dataset is not loaded");
    uint8_t head[4 + 4 + 4 + VT_DATA_NAME_MAX + 8 + 4 * 10];
    size_t len = strnlen(ds->name, VT_DATA_NAME_MAX);
    size_t p = 0;
    memcpy(head, "VTDS", 4);
    p = 4;
    vt_put_u32le(head + p, v3 ? 3u : v2 ? 2u : VT_DATA_HASH_VERSION), p += 4;
    vt_put_u32le(head + p, (uint32_t)len), p += 4;
    memcpy(head + p, ds->name, len), p += len;
    vt_put_u64le(head + p, (uint64_t)ds->n), p += 8;
    vt_put_u32le(head + p, ds->d), p += 4;
    if (v2) vt_put_u32le(head + p, ds->channels), p += 4;
    vt_put_u32le(head + p, ds->rows), p += 4;
    vt_put_u32le(head + p, ds->cols), p += 4;
    vt_put_u32le(head + p, ds->n_classes), p += 4;
    if (v2) vt_put_u32le(head + p, ds->xf ? 1u : 0u), p += 4; /* the features' kind: 0 u8, 1 float32 */
    vt_put_u32le(head + p, ds->xf ? 0u : ds->x_max), p += 4;
    uint32_t vocab = v2 && ds->text ? ds->n_classes : 0; /* a text's vocabulary: the bytes of its token ids */
    if (v2) vt_put_u32le(head + p, vocab), p += 4;
    if (v3) vt_put_u32le(head + p, ds->k_targets), p += 4;
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, head, p);
    if (e == VT_OK && vocab) e = vt_sha256_update(&c, ds->chars, vocab);
    if (e == VT_OK && ds->n && !ds->xf) e = vt_sha256_update(&c, ds->x, ds->n * (size_t)ds->d);
    if (e == VT_OK && ds->xf) e = hash_f32(&c, ds->xf, ds->n * (size_t)ds->d);
    if (e == VT_OK && v3) e = hash_f32(&c, ds->yt, ds->n * (size_t)ds->k_targets);
    else if (e == VT_OK && ds->n) e = vt_sha256_update(&c, ds->y, ds->n);
    if (e != VT_OK) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

void vt_data_free(vt_dataset *ds)
{
    if (!ds) return;
    free(ds->x);
    free(ds->xf);
    free(ds->y);
    free(ds->yt);
    memset(ds, 0, sizeof *ds);
}

/* ---------------------------------------------------------------- MNIST */

/* Fills a loaded dataset (taking x and y) and computes its hash; frees it on failure. */
static vt_err finish_dataset(vt_dataset *ds, const char *name, size_t n, uint32_t channels, uint32_t rows,
                             uint32_t cols, uint32_t n_classes, uint32_t x_max, uint8_t *x, uint8_t *y, int n_src)
{
    memcpy(ds->name, name, strlen(name) + 1);
    ds->n = n;
    ds->channels = channels, ds->rows = rows, ds->cols = cols;
    ds->d = channels * rows * cols;
    ds->n_classes = n_classes;
    ds->x_max = x_max;
    ds->x = x, ds->y = y;
    ds->n_src = n_src;
    fill_lut(ds);
    vt_err e = vt_data_hash(ds, ds->hash);
    if (e) vt_data_free(ds);
    return e;
}

vt_err vt_data_load_mnist(const char *images_path, const char *labels_path, const char *name,
                          vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_mnist: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!images_path || !labels_path, VT_ERR_ARG,
                       "vt_data_load_mnist: NULL path");
    VT_FORWARD_IF_ERROR(vti_data_check_name(name));

    vt_src si, sl;
    uint8_t *x = NULL, *y = NULL;
    vt_err e = src_open(&sl, labels_path);
    if (e != VT_OK) return e;
    e = src_open(&si, images_path);
    if (e != VT_OK) {
        src_close(&sl);
        return e;
    }

    uint8_t lh[8], ih[16];
    e = src_read_exact(&sl, lh, 4, "IDX magic");
    if (e) goto fail;
    uint32_t lmagic = get_u32be(lh);
    if (lmagic != 0x00000801u) {
        e = vt_set_error(VT_ERR_FORMAT,
                         "%s: wrong magic 0x%08x (expected 0x00000801, IDX u8 labels)%s",
                         labels_path, lmagic,
                         lmagic == 0x00000803u ? "; this looks like an images file" : "");
        goto fail;
    }
    e = src_read_exact(&sl, lh + 4, 4, "IDX label header");
    if (e) goto fail;
    e = src_read_exact(&si, ih, 4, "IDX magic");
    if (e) goto fail;
    uint32_t imagic = get_u32be(ih);
    if (imagic != 0x00000803u) {
        e = vt_set_error(VT_ERR_FORMAT,
                         "%s: wrong magic 0x%08x (expected 0x00000803, IDX u8 images)%s",
                         images_path, imagic,
                         imagic == 0x00000801u ? "; this looks like a labels file" : "");
        goto fail;
    }
    e = src_read_exact(&si, ih + 4, 12, "IDX image header");
    if (e) goto fail;
    uint32_t nl = get_u32be(lh + 4);
    uint32_t ni = get_u32be(ih + 4), rows = get_u32be(ih + 8), cols = get_u32be(ih + 12);
    if (ni != nl) {
        e = vt_set_error(VT_ERR_FORMAT, "%s: %u images, but %s has %u labels", images_path, ni,
                         labels_path, nl);
        goto fail;
    }
    if (ni == 0) {
        e = vt_set_error(VT_ERR_FORMAT, "%s: header says 0 images", images_path);
        goto fail;
    }
    if (rows == 0 || cols == 0) {
        e = vt_set_error(VT_ERR_FORMAT, "%s: image size %ux%u is empty", images_path, rows, cols);
        goto fail;
    }
    if (rows > VT_DATA_IDX_MAX_DIM || cols > VT_DATA_IDX_MAX_DIM) {
        e = vt_set_error(VT_ERR_LIMIT, "%s: image size %ux%u exceeds the limit %ux%u",
                         images_path, rows, cols, VT_DATA_IDX_MAX_DIM, VT_DATA_IDX_MAX_DIM);
        goto fail;
    }
    uint64_t nvals = (uint64_t)ni * rows * cols;
    if (nvals > VT_DATA_MAX_VALUES) {
        e = vt_set_error(VT_ERR_LIMIT,
                         "%s: %u images of %ux%u = %llu pixels exceed the limit of %llu",
                         images_path, ni, rows, cols, (unsigned long long)nvals,
                         (unsigned long long)VT_DATA_MAX_VALUES);
        goto fail;
    }

    e = src_read_payload(&sl, nl, "labels", &y);
    if (e) goto fail;
    e = src_expect_end(&sl);
    if (e) goto fail;
    for (size_t i = 0; i < nl; i++) {
        if (y[i] >= 10) {
            e = vt_set_error(VT_ERR_FORMAT, "%s: label %u of example %zu is not in 0..9",
                             labels_path, y[i], i);
            goto fail;
        }
    }
    e = src_read_payload(&si, (size_t)nvals, "pixels", &x);
    if (e) goto fail;
    e = src_expect_end(&si);
    if (e) goto fail;
    e = src_finish_hash(&si, ds->src_sha256[0]);
    if (e) goto fail;
    e = src_finish_hash(&sl, ds->src_sha256[1]);
    if (e) goto fail;
    src_close(&si);
    src_close(&sl);

    return finish_dataset(ds, name, ni, 1, rows, cols, 10, 255, x, y, 2);

fail:
    free(x);
    free(y);
    src_close(&si);
    src_close(&sl);
    memset(ds, 0, sizeof *ds);
    return e;
}

/* Path of dir/base, or dir/base.gz when only that exists. */
static vt_err find_file(const char *dir, const char *base, char *out, size_t cap)
{
    struct stat st;
    int k = snprintf(out, cap, "%s/%s", dir, base);
    VT_RETURN_ERROR_IF(k < 0 || (size_t)k + 3 >= cap, VT_ERR_ARG, "%s/%s: path too long", dir,
                       base);
    if (stat(out, &st) == 0) return VT_OK;
    strcat(out, ".gz");
    if (stat(out, &st) == 0) return VT_OK;
    VT_RETURN_ERROR(VT_ERR_IO, "%s/%s: not found (nor %s/%s.gz)", dir, base, dir, base);
}

/* The two files of an MNIST split in dir; *prefix_name gets the default dataset name. */
static vt_err mnist_paths(const char *dir, const char *split, char *ip, char *lp, size_t cap,
                          const char **default_name)
{
    const char *prefix;
    if (strcmp(split, "train") == 0) {
        prefix = "train";
        *default_name = "mnist-train";
    } else if (strcmp(split, "test") == 0 || strcmp(split, "t10k") == 0) {
        prefix = "t10k";
        *default_name = "mnist-test";
    } else {
        VT_RETURN_ERROR(VT_ERR_ARG, "MNIST split \"%s\": expected \"train\" or \"test\"", split);
    }
    char base[64];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    VT_FORWARD_IF_ERROR(find_file(dir, base, ip, cap));
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    return find_file(dir, base, lp, cap);
}

vt_err vt_data_load_mnist_dir(const char *dir, const char *split, const char *name,
                              vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_mnist_dir: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!dir || !split, VT_ERR_ARG, "vt_data_load_mnist_dir: NULL argument");
    char ip[VT_DATA_PATH_MAX], lp[VT_DATA_PATH_MAX];
    const char *dflt = NULL;
    VT_FORWARD_IF_ERROR(mnist_paths(dir, split, ip, lp, sizeof ip, &dflt));
    return vt_data_load_mnist(ip, lp, name ? name : dflt, ds);
}

/* ---------------------------------------------------------------- digits CSV */

#define DIGITS_FEATURES 64

/* A byte for an error message: 'c' when printable, else 0xNN. */
static const char *byte_desc(uint8_t c, char buf[8])
{
    if (c >= 0x21 && c <= 0x7e)
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "0x%02x", c);
    return buf;
}

/* Parses the CSV text buf[0..len) into x (rows*64) and y; *n_out rows. */
static vt_err parse_digits(const char *path, const uint8_t *buf, size_t len, uint8_t *x,
                           uint8_t *y, size_t max_rows, size_t *n_out)
{
    size_t pos = 0, line = 0, n = 0;
    char bd[8];
    *n_out = 0;
    while (pos < len) {
        line++;
        size_t end = pos;
        while (end < len && buf[end] != '\n') end++;
        size_t next = end < len ? end + 1 : end;
        size_t stop = end;
        if (stop > pos && buf[stop - 1] == '\r') stop--;
        VT_RETURN_ERROR_IF(stop == pos, VT_ERR_FORMAT, "%s: line %zu: empty line", path, line);
        VT_RETURN_ERROR_IF(n >= max_rows, VT_ERR_INTERNAL, "%s: line %zu: row count", path, line);
        size_t p = pos;
        for (int col = 1; col <= DIGITS_FEATURES + 1; col++) {
            if (col > 1) {
                VT_RETURN_ERROR_IF(p >= stop, VT_ERR_FORMAT,
                                   "%s: line %zu: %d columns, expected %d (64 features and "
                                   "the label)",
                                   path, line, col - 1, DIGITS_FEATURES + 1);
                VT_RETURN_ERROR_IF(buf[p] != ',', VT_ERR_FORMAT,
                                   "%s: line %zu, column %d: expected ',' or the end of the "
                                   "line, found %s",
                                   path, line, col - 1, byte_desc(buf[p], bd));
                p++;
            }
            size_t s = p;
            unsigned v = 0;
            while (p < stop && buf[p] >= '0' && buf[p] <= '9' && p - s < 3) {
                v = 10 * v + (unsigned)(buf[p] - '0');
                p++;
            }
            size_t nd = p - s;
            VT_RETURN_ERROR_IF(nd == 0, VT_ERR_FORMAT,
                               "%s: line %zu, column %d: expected an unsigned integer, found %s",
                               path, line, col, p < stop ? byte_desc(buf[p], bd) : "nothing");
            VT_RETURN_ERROR_IF(p < stop && buf[p] >= '0' && buf[p] <= '9', VT_ERR_FORMAT,
                               "%s: line %zu, column %d: integer too long", path, line, col);
            VT_RETURN_ERROR_IF(nd > 1 && buf[s] == '0', VT_ERR_FORMAT,
                               "%s: line %zu, column %d: leading zero", path, line, col);
            VT_RETURN_ERROR_IF(p < stop && buf[p] != ',', VT_ERR_FORMAT,
                               "%s: line %zu, column %d: unexpected %s after the integer "
                               "(integers only)",
                               path, line, col, byte_desc(buf[p], bd));
            if (col <= DIGITS_FEATURES) {
                VT_RETURN_ERROR_IF(v > 16, VT_ERR_FORMAT,
                                   "%s: line %zu, column %d: feature value %u is not in 0..16",
                                   path, line, col, v);
                x[n * DIGITS_FEATURES + (size_t)(col - 1)] = (uint8_t)v;
            } else {
                VT_RETURN_ERROR_IF(v > 9, VT_ERR_FORMAT,
                                   "%s: line %zu, column %d: label %u is not in 0..9", path,
                                   line, col, v);
                y[n] = (uint8_t)v;
            }
        }
        VT_RETURN_ERROR_IF(p != stop, VT_ERR_FORMAT,
                           "%s: line %zu: more than %d columns (64 features and the label)",
                           path, line, DIGITS_FEATURES + 1);
        n++;
        pos = next;
    }
    VT_RETURN_ERROR_IF(n == 0, VT_ERR_FORMAT, "%s: empty file (no rows)", path);
    *n_out = n;
    return VT_OK;
}

/* A whole single-file payload (raw or gzip, at most max bytes): read, its SHA-256 into sha, the
 * file closed. *out (malloc'd) holds *len bytes; an empty payload is returned as such. */
vt_err vti_data_read_whole(const char *path, size_t max, uint8_t **out, size_t *len, uint8_t sha[VT_HASH_LEN])
{
    vt_src s;
    VT_FORWARD_IF_ERROR(src_open(&s, path));
    vt_err e = src_read_all(&s, max, out, len);
    if (!e) e = src_finish_hash(&s, sha);
    src_close(&s);
    if (e) {
        free(*out);
        *out = NULL, *len = 0;
    }
    return e;
}

vt_err vt_data_load_digits_csv(const char *path, const char *name, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_digits_csv: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!path, VT_ERR_ARG, "vt_data_load_digits_csv: NULL path");
    VT_FORWARD_IF_ERROR(vti_data_check_name(name));

    uint8_t *buf = NULL, *x = NULL, *y = NULL;
    size_t len = 0;
    vt_err e = vti_data_read_whole(path, VT_DATA_CSV_MAX_BYTES, &buf, &len, ds->src_sha256[0]);
    if (e) goto fail;
    if (len == 0) {
        e = vt_set_error(VT_ERR_FORMAT, "%s: empty file", path);
        goto fail;
    }

    size_t max_rows = 1;
    for (size_t i = 0; i < len; i++) max_rows += buf[i] == '\n';
    x = malloc(max_rows * DIGITS_FEATURES);
    y = malloc(max_rows);
    if (!x || !y) {
        e = vt_set_error(VT_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    size_t n = 0;
    e = parse_digits(path, buf, len, x, y, max_rows, &n);
    if (e) goto fail;
    free(buf);

    return finish_dataset(ds, name, n, 1, 8, 8, 10, 16, x, y, 1); /* 8 x 8 = DIGITS_FEATURES */

fail:
    free(buf);
    free(x);
    free(y);
    memset(ds, 0, sizeof *ds);
    return e;
}

vt_err vt_data_load_text(const char *path, const char *name, int split, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_text: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!path || (split != 0 && split != 1), VT_ERR_ARG, "vt_data_load_text: bad argument");
    VT_FORWARD_IF_ERROR(vti_data_check_name(name));
    uint8_t *buf = NULL, sha[VT_HASH_LEN];
    size_t len = 0;
    VT_FORWARD_IF_ERROR(vti_data_read_whole(path, VT_DATA_CSV_MAX_BYTES, &buf, &len, sha));
    size_t cut = len / 10 * 9 + len % 10 * 9 / 10; /* floor(0.9 len) without overflow */
    size_t start = split ? cut : 0, n = split ? len - cut : cut;
    if (len < 20 || n == 0) {
        free(buf);
        VT_RETURN_ERROR(VT_ERR_FORMAT, "%s: %zu bytes: too short a text for two splits", path, len);
    }
    int seen[256] = {0};
    for (size_t i = 0; i < len; i++) seen[buf[i]] = 1;
    uint8_t id[256];
    uint32_t V = 0;
    for (int c = 0; c < 256; c++)
        if (seen[c]) ds->chars[V] = (uint8_t)c, id[c] = (uint8_t)V++;
    uint8_t *x = malloc(n), *y = malloc(n);
    if (!x || !y) {
        free(buf), free(x), free(y);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++) x[i] = y[i] = id[buf[start + i]];
    free(buf);
    memcpy(ds->src_sha256[0], sha, VT_HASH_LEN);
    ds->text = 1; /* finish_dataset keeps text and chars */
    return finish_dataset(ds, name, n, 1, 1, 1, V, V > 1 ? V - 1 : 1, x, y, 1);
}

vt_err vt_data_load_cifar(const char *path, const char *name, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_cifar: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!path, VT_ERR_ARG, "vt_data_load_cifar: NULL path");
    VT_FORWARD_IF_ERROR(vti_data_check_name(name));
    uint8_t *buf = NULL, *x = NULL, *y = NULL;
    size_t len = 0;
    vt_err e = vti_data_read_whole(path, (size_t)VT_DATA_CIFAR_MAX_RECORDS * VT_DATA_CIFAR_RECORD, &buf, &len, ds->src_sha256[0]);
    if (!e && (len == 0 || len % VT_DATA_CIFAR_RECORD != 0))
        e = vt_set_error(VT_ERR_FORMAT, "%s: %zu bytes is not a whole number of %u-byte CIFAR records%s", path, len,
                         VT_DATA_CIFAR_RECORD, len ? " (truncated or extra bytes)" : "");
    size_t n = len / VT_DATA_CIFAR_RECORD;
    if (!e) {
        x = malloc(n * VT_DATA_CIFAR_FEATURES);
        y = malloc(n);
        if (!x || !y) e = vt_set_error(VT_ERR_NOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; !e && i < n; i++) {
        const uint8_t *r = buf + i * VT_DATA_CIFAR_RECORD;
        if (r[0] > 9) {
            e = vt_set_error(VT_ERR_FORMAT, "%s: record %zu (offset %zu) has label %u, not a class 0..9", path, i,
                             i * VT_DATA_CIFAR_RECORD, r[0]);
            break;
        }
        y[i] = r[0];
        memcpy(x + i * VT_DATA_CIFAR_FEATURES, r + 1, VT_DATA_CIFAR_FEATURES); /* R, G, B planes of 32x32 */
    }
    free(buf);
    if (e) {
        free(x), free(y);
        memset(ds, 0, sizeof *ds);
        return e;
    }
    return finish_dataset(ds, name, n, 3, 32, 32, 10, 255, x, y, 1); /* 3 x 32 x 32 = VT_DATA_CIFAR_FEATURES */
}

/* ---------------------------------------------------------------- paths, built-ins */

vt_err vt_data_root(const char *root, char *out, size_t cap)
{
    VT_RETURN_ERROR_IF(!out || cap == 0, VT_ERR_ARG, "vt_data_root: no output buffer");
    int k;
    if (root && root[0]) {
        k = snprintf(out, cap, "%s", root);
    } else {
        const char *env = getenv("VT_DATA_DIR");
        if (env && env[0])
            k = snprintf(out, cap, "%s", env);
        else
            k = snprintf(out, cap, "%s/data", VT_SOURCE_DIR);
    }
    VT_RETURN_ERROR_IF(k < 0 || (size_t)k >= cap, VT_ERR_ARG, "data root path too long");
    return VT_OK;
}

typedef struct {
    const char *name;  /* canonical dataset name */
    const char *alias; /* or NULL */
    const char *dir;   /* subdirectory of the data root */
    const char *split; /* MNIST split; the CIFAR record file (cifar10*); NULL for digits */
    const char *sha[2]; /* pinned SHA-256 of the decompressed payloads (see data/README.md) */
} builtin;

static const builtin builtins[] = {
    {"mnist-train", NULL, "mnist", "train",
     {"ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
      "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"}},
    {"mnist-test", "mnist-t10k", "mnist", "test",
     {"0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
      "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"}},
    {"digits", NULL, "digits", NULL,
     {"6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8", NULL}},
    {"cifar10-train", NULL, "cifar10", "cifar10_train_4000.bin",
     {"0993cf8b8e43bc207603aef9787006995746513f5e3fa5a52e06d1b069926330", NULL}},
    {"cifar10-test", NULL, "cifar10", "cifar10_test_1000.bin",
     {"8314c96d7cd65618193bab23acdd5d4c4af15bf6dd00a1781d55beedf3be1ef5", NULL}},
    {"shakespeare-train", NULL, "tinyshakespeare", "train",
     {"86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", NULL}},
    {"shakespeare-val", NULL, "tinyshakespeare", "val",
     {"86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", NULL}},
};

vt_err vt_data_resolve(const char *name, const char *root, char *out, size_t cap)
{
    VT_RETURN_ERROR_IF(!name || !out, VT_ERR_ARG, "vt_data_resolve: NULL argument");
    const char *sub = NULL;
    if (strcmp(name, "mnist") == 0) sub = "mnist";
    for (size_t i = 0; !sub && i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(name, builtins[i].name) == 0 ||
            (builtins[i].alias && strcmp(name, builtins[i].alias) == 0))
            sub = builtins[i].dir;
    VT_RETURN_ERROR_IF(!sub, VT_ERR_ARG,
                       "unknown dataset \"%s\" (known: mnist, mnist-train, mnist-test, digits, cifar10-train, cifar10-test, "
                       "shakespeare-train, shakespeare-val)",
                       name);
    char r[VT_DATA_PATH_MAX];
    VT_FORWARD_IF_ERROR(vt_data_root(root, r, sizeof r));
    int k = snprintf(out, cap, "%s/%s", r, sub);
    VT_RETURN_ERROR_IF(k < 0 || (size_t)k >= cap, VT_ERR_ARG, "%s/%s: path too long", r, sub);
    struct stat st;
    VT_RETURN_ERROR_IF(stat(out, &st) != 0 || !S_ISDIR(st.st_mode), VT_ERR_IO,
                       "%s: no such data directory (pass a root or set VT_DATA_DIR)", out);
    return VT_OK;
}

vt_err vt_data_load(const char *spec, const char *root, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!spec, VT_ERR_ARG, "vt_data_load: NULL spec");
    if (vt_data_is_file_spec(spec)) return vt_data_load_file(spec, root, ds);
    char nm[VT_DATA_NAME_MAX + 1];
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    VT_RETURN_ERROR_IF(nlen == 0 || nlen > VT_DATA_NAME_MAX, VT_ERR_ARG,
                       "dataset spec \"%s\": bad name", spec);
    memcpy(nm, spec, nlen);
    nm[nlen] = 0;
    size_t first = 0;
    if (colon) {
        const char *p = colon + 1;
        VT_RETURN_ERROR_IF(!*p, VT_ERR_ARG, "dataset spec \"%s\": no count after ':'", spec);
        for (; *p; p++) {
            VT_RETURN_ERROR_IF(*p < '0' || *p > '9' || first > (SIZE_MAX - 9) / 10, VT_ERR_ARG,
                               "dataset spec \"%s\": the count after ':' must be an integer",
                               spec);
            first = 10 * first + (size_t)(*p - '0');
        }
        VT_RETURN_ERROR_IF(first == 0, VT_ERR_ARG, "dataset spec \"%s\": count 0", spec);
    }
    const builtin *b = NULL;
    for (size_t i = 0; !b && i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(nm, builtins[i].name) == 0 ||
            (builtins[i].alias && strcmp(nm, builtins[i].alias) == 0))
            b = &builtins[i];
    VT_RETURN_ERROR_IF(!b, VT_ERR_ARG,
                       "unknown dataset \"%s\" (known: mnist-train, mnist-test, digits, cifar10-train, cifar10-test, "
                       "shakespeare-train, shakespeare-val; or a file: safetensors:PATH, npy:X.npy,Y.npy, text:PATH, file:PATH)", nm);

    char dir[VT_DATA_PATH_MAX], path[2][VT_DATA_PATH_MAX];
    VT_FORWARD_IF_ERROR(vt_data_resolve(b->name, root, dir, sizeof dir));
    vt_dataset full;
    if (strcmp(b->dir, "tinyshakespeare") == 0) {
        VT_FORWARD_IF_ERROR(find_file(dir, "input.txt", path[0], sizeof path[0]));
        VT_FORWARD_IF_ERROR(vt_data_load_text(path[0], b->name, strcmp(b->split, "val") == 0, &full));
    } else if (strcmp(b->dir, "cifar10") == 0) {
        VT_FORWARD_IF_ERROR(find_file(dir, b->split, path[0], sizeof path[0]));
        VT_FORWARD_IF_ERROR(vt_data_load_cifar(path[0], b->name, &full));
    } else if (b->split) {
        const char *dflt;
        VT_FORWARD_IF_ERROR(mnist_paths(dir, b->split, path[0], path[1], sizeof path[0], &dflt));
        VT_FORWARD_IF_ERROR(vt_data_load_mnist(path[0], path[1], b->name, &full));
    } else {
        VT_FORWARD_IF_ERROR(find_file(dir, "digits.csv", path[0], sizeof path[0]));
        VT_FORWARD_IF_ERROR(vt_data_load_digits_csv(path[0], b->name, &full));
    }
    for (int k = 0; k < full.n_src; k++) {
        uint8_t want[VT_HASH_LEN];
        if (!b->sha[k] || vt_unhex(b->sha[k], want, VT_HASH_LEN) != VT_OK) {
            vt_data_free(&full);
            VT_RETURN_ERROR(VT_ERR_INTERNAL, "vt_data_load: bad pinned hash for %s", b->name);
        }
        if (memcmp(want, full.src_sha256[k], VT_HASH_LEN) != 0) {
            char got[2 * VT_HASH_LEN + 1];
            vt_hex(full.src_sha256[k], VT_HASH_LEN, got);
            vt_data_free(&full);
            VT_RETURN_ERROR(VT_ERR_MISMATCH,
                            "%s: decompressed payload has SHA-256 %s, but %s expects %s "
                            "(see data/README.md)",
                            path[k], got, b->name, b->sha[k]);
        }
    }
    /* what loading held at its peak: the decoded payload and the dataset built from it */
    size_t full_bytes = full.n * ((size_t)full.d + 1);
    if (!colon) {
        *ds = full;
        ds->load_bytes = 2 * full_bytes;
        return VT_OK;
    }
    if (first > full.n) {
        size_t have = full.n;
        vt_data_free(&full);
        VT_RETURN_ERROR(VT_ERR_ARG, "dataset spec \"%s\": %s has only %zu examples", spec,
                        b->name, have);
    }
    vt_err e = vt_data_subset(&full, first, ds);
    vt_data_free(&full);
    if (!e) ds->load_bytes = 2 * full_bytes + ds->n * ((size_t)ds->d + 1);
    return e;
}

/* ---------------------------------------------------------------- subsets */

vt_err vt_data_slice(const vt_dataset *src, size_t start, size_t count, vt_dataset *dst)
{
    VT_RETURN_ERROR_IF(!dst, VT_ERR_ARG, "vt_data_slice: NULL destination");
    VT_RETURN_ERROR_IF(dst == src, VT_ERR_ARG, "vt_data_slice: destination is the source");
    memset(dst, 0, sizeof *dst);
    VT_RETURN_ERROR_IF(!src || (!src->x && !src->xf) || !src->y || src->n == 0, VT_ERR_ARG,
                       "vt_data_slice: source dataset is not loaded");
    VT_RETURN_ERROR_IF(count == 0 || start >= src->n || count > src->n - start, VT_ERR_ARG,
                       "%s: slice [%zu, +%zu) is empty or outside 0..%zu", src->name, start,
                       count, src->n);
    vt_dataset t = *src;
    t.x = NULL;
    t.xf = NULL;
    t.y = NULL;
    t.yt = NULL;
    if (!(start == 0 && count == src->n)) {
        int k = snprintf(t.name, sizeof t.name, "%s[%zu:%zu]", src->name, start, start + count);
        VT_RETURN_ERROR_IF(k < 0 || (size_t)k >= sizeof t.name, VT_ERR_ARG,
                           "%s: the slice's name \"%s[%zu:%zu]\" is longer than %d characters",
                           src->name, src->name, start, start + count, VT_DATA_NAME_MAX);
        t.n_src = 0;
        memset(t.src_sha256, 0, sizeof t.src_sha256);
    }
    t.n = count;
    if (src->xf)
        t.xf = malloc(count * (size_t)src->d * sizeof(float));
    else
        t.x = malloc(count * (size_t)src->d);
    t.y = malloc(count);
    if (src->yt) t.yt = malloc(count * (size_t)src->k_targets * sizeof(float));
    if ((!t.x && !t.xf) || !t.y || (src->yt && !t.yt)) {
        free(t.x);
        free(t.xf);
        free(t.y);
        free(t.yt);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "%s: out of memory for a slice of %zu examples",
                        src->name, count);
    }
    if (src->xf)
        memcpy(t.xf, src->xf + start * (size_t)src->d, count * (size_t)src->d * sizeof(float));
    else
        memcpy(t.x, src->x + start * (size_t)src->d, count * (size_t)src->d);
    memcpy(t.y, src->y + start, count);
    if (src->yt)
        memcpy(t.yt, src->yt + start * (size_t)src->k_targets, count * (size_t)src->k_targets * sizeof(float));
    vt_err e = vt_data_hash(&t, t.hash);
    if (e != VT_OK) {
        vt_data_free(&t);
        return e;
    }
    *dst = t;
    return VT_OK;
}

vt_err vt_data_subset(const vt_dataset *src, size_t n, vt_dataset *dst)
{
    return vt_data_slice(src, 0, n, dst);
}

/* ---------------------------------------------------------------- FP32 */

/* Example i's d values (FP32 or, for T double, widened) into o. */
#define VTI_DATA_ROW(T)                                                                            \
    static void row_##T(const vt_dataset *ds, size_t i, T *o)                                      \
    {                                                                                              \
        if (ds->xf) {                                                                              \
            const float *r = ds->xf + i * (size_t)ds->d;                                           \
            for (uint32_t k = 0; k < ds->d; k++) o[k] = (T)r[k];                                   \
        } else {                                                                                   \
            const uint8_t *r = ds->x + i * (size_t)ds->d;                                          \
            for (uint32_t k = 0; k < ds->d; k++) o[k] = (T)ds->lut[r[k]];                          \
        }                                                                                          \
    }
VTI_DATA_ROW(float)
VTI_DATA_ROW(double)

vt_err vt_data_row(const vt_dataset *ds, size_t i, float *out)
{
    VT_RETURN_ERROR_IF(!ds || (!ds->x && !ds->xf) || !out, VT_ERR_ARG, "vt_data_row: NULL argument");
    VT_RETURN_ERROR_IF(i >= ds->n, VT_ERR_ARG, "%s: example %zu of %zu", ds->name, i, ds->n);
    row_float(ds, i, out);
    return VT_OK;
}

static vt_err batch_check(const vt_dataset *ds, const size_t *idx, size_t m, const void *x)
{
    VT_RETURN_ERROR_IF(!ds || (!ds->x && !ds->xf) || !ds->y || (m && (!idx || !x)), VT_ERR_ARG,
                       "vt_data_batch: NULL argument");
    for (size_t j = 0; j < m; j++)
        VT_RETURN_ERROR_IF(idx[j] >= ds->n, VT_ERR_ARG, "%s: batch entry %zu: example %zu of %zu",
                           ds->name, j, idx[j], ds->n);
    return VT_OK;
}

/* vt_data_batch (T float) and vt_data_batch_f64 (T double): one gather, the row converter of T */
#define VTI_DATA_BATCH(FN, T)                                                                      \
    vt_err FN(const vt_dataset *ds, const size_t *idx, size_t m, T *x, uint8_t *y)                 \
    {                                                                                              \
        VT_FORWARD_IF_ERROR(batch_check(ds, idx, m, x));                                           \
        for (size_t j = 0; j < m; j++) {                                                           \
            row_##T(ds, idx[j], x + j * (size_t)ds->d);                                            \
            if (y) y[j] = ds->y[idx[j]];                                                           \
        }                                                                                          \
        return VT_OK;                                                                              \
    }
VTI_DATA_BATCH(vt_data_batch, float)
VTI_DATA_BATCH(vt_data_batch_f64, double)

vt_err vt_data_batch_targets(const vt_dataset *ds, const size_t *idx, size_t m, float *t)
{
    VT_FORWARD_IF_ERROR(batch_check(ds, idx, m, t));
    VT_RETURN_ERROR_IF(!ds->yt || !ds->k_targets, VT_ERR_ARG, "%s: the data set has class labels, not float targets",
                       ds->name);
    const size_t k = ds->k_targets;
    for (size_t j = 0; j < m; j++) memcpy(t + j * k, ds->yt + idx[j] * k, k * sizeof *t);
    return VT_OK;
}

vt_err vt_data_to_f32(const vt_dataset *ds, float **out)
{
    VT_RETURN_ERROR_IF(!ds || (!ds->x && !ds->xf) || !out, VT_ERR_ARG, "vt_data_to_f32: NULL argument");
    *out = NULL;
    size_t total = ds->n * (size_t)ds->d;
    float *f = malloc(total ? total * sizeof(float) : 1);
    VT_RETURN_ERROR_IF(!f, VT_ERR_NOMEM, "%s: out of memory for %zu floats", ds->name, total);
    for (size_t i = 0; i < ds->n; i++) row_float(ds, i, f + i * (size_t)ds->d);
    *out = f;
    return VT_OK;
}
