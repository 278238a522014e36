/* test_data_file.c - data sets from the user's files (data/vt_data_file.c, docs/data.md "Data sets
 * from your files"): safetensors and .npy pairs with float32 and uint8 features, text; the float
 * path behind vt_data_row / vt_data_batch / vt_data_to_f32; the version-2 hash; every hostile file
 * refused with its code, the file named and the offset; a fuzz of both readers over mutated files
 * (no crash, no leak: the suite also runs under ASan+UBSan). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/vt_bytes.h"
#include "../../data/vt_data.h"
#include "vt_test.h"

static char dir[256];

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static void put(const char *name, const void *p, size_t n)
{
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "write %s", path);
}

/* ---------------------------------------------------------------- builders */

typedef struct {
    uint8_t b[1 << 16];
    size_t n;
} buf;

static void app(buf *b, const void *p, size_t n)
{
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

/* A safetensors file of x (dtype xd: "F32" or "U8", [N, D]) and y (yd: "U8", "I32", "I64", [N]). */
static void st_build(buf *o, const char *xd, const char *yd, uint32_t N, uint32_t D, const float *xf,
                     const uint8_t *xu, const int64_t *lab)
{
    size_t xs = strcmp(xd, "F32") == 0 ? 4 : 1, ys = strcmp(yd, "U8") == 0 ? 1 : strcmp(yd, "I32") == 0 ? 4 : 8;
    size_t xb = xs * N * D, yb = ys * N;
    char h[512];
    int k = snprintf(h, sizeof h,
                     "{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"%s\",\"shape\":[%u,%u],\"data_offsets\":[0,%zu]},"
                     "\"y\":{\"dtype\":\"%s\",\"shape\":[%u],\"data_offsets\":[%zu,%zu]}}",
                     xd, N, D, xb, yd, N, xb, xb + yb);
    while (k % 8) h[k++] = ' ';
    uint8_t n8[8];
    vt_put_u64le(n8, (uint64_t)k);
    o->n = 0;
    app(o, n8, 8);
    app(o, h, (size_t)k);
    for (size_t i = 0; i < (size_t)N * D; i++) {
        uint8_t e[4];
        if (xs == 4) {
            uint32_t bits;
            memcpy(&bits, &xf[i], 4);
            vt_put_u32le(e, bits);
            app(o, e, 4);
        } else {
            app(o, &xu[i], 1);
        }
    }
    for (uint32_t i = 0; i < N; i++) {
        uint8_t e[8];
        vt_put_u64le(e, (uint64_t)lab[i]);
        app(o, e, ys);
    }
}

/* A .npy file (version 1.0) of descr and shape, payload p. */
static void npy_build(buf *o, const char *descr, const char *shape, const void *p, size_t n)
{
    char h[256];
    int k = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    while ((10 + k + 1) % 64) h[k++] = ' ';
    h[k++] = '\n';
    o->n = 0;
    app(o, "\x93NUMPY\x01\x00", 8);
    uint8_t l[2] = {(uint8_t)k, (uint8_t)(k >> 8)};
    app(o, l, 2);
    app(o, h, (size_t)k);
    app(o, p, n);
}

#define N 12
#define D 6
static float XF[N * D];
static uint8_t XU[N * D];
static int64_t LAB[N];

/* The load of spec fails with code want, and the message names what and contains `has`. */
static void refused(const char *spec, vt_err want, const char *has)
{
    vt_dataset ds;
    vt_err e = vt_data_load(spec, dir, &ds);
    CHECK(e == want, "%s: code %d, expected %d (%s)", spec, (int)e, (int)want, vt_errmsg());
    CHECK(!has || strstr(vt_errmsg(), has), "%s: message \"%s\" lacks \"%s\"", spec, vt_errmsg(), has);
    CHECK(ds.x == NULL && ds.xf == NULL && ds.y == NULL && ds.n == 0, "%s: a failed load leaves ds zeroed", spec);
}

static void test_safetensors(void)
{
    buf b;
    vt_dataset ds, u8, sub;
    st_build(&b, "F32", "I64", N, D, XF, XU, LAB);
    put("f.safetensors", b.b, b.n);
    CHECK_OK(vt_data_load("safetensors:f.safetensors", dir, &ds));
    CHECK(ds.n == N && ds.d == D && ds.xf && !ds.x && ds.n_classes == 4 && ds.hash_version == 2, "float set shape");
    float row[D], batch[2 * D], *all = NULL;
    uint8_t yb[2];
    size_t idx[2] = {5, 0};
    CHECK_OK(vt_data_row(&ds, 3, row));
    CHECK(memcmp(row, XF + 3 * D, sizeof row) == 0, "row: the file's floats bit for bit");
    CHECK_OK(vt_data_batch(&ds, idx, 2, batch, yb));
    CHECK(memcmp(batch, XF + 5 * D, D * 4) == 0 && memcmp(batch + D, XF, D * 4) == 0 && yb[0] == 1 && yb[1] == 0,
          "batch gathers floats and labels");
    double b64[2 * D];
    CHECK_OK(vt_data_batch_f64(&ds, idx, 2, b64, NULL));
    CHECK(b64[3] == (double)XF[5 * D + 3], "batch_f64 widens exactly");
    CHECK_OK(vt_data_to_f32(&ds, &all));
    CHECK(all && memcmp(all, XF, sizeof XF) == 0, "to_f32");
    free(all);
    uint8_t h[32];
    CHECK_OK(vt_data_hash(&ds, h));
    CHECK(memcmp(h, ds.hash, 32) == 0, "hash recomputed");
    /* the same file elsewhere, by an absolute path and by file:, is the same data set */
    char abs[512], spec[600];
    path_of(abs, sizeof abs, "f.safetensors");
    snprintf(spec, sizeof spec, "file:%s", abs);
    vt_dataset again;
    CHECK_OK(vt_data_load(spec, NULL, &again));
    CHECK(memcmp(again.hash, ds.hash, 32) == 0, "file: and safetensors: give the same hash");
    vt_data_free(&again);
    /* a subset */
    CHECK_OK(vt_data_load("safetensors:f.safetensors:5", dir, &sub));
    CHECK(sub.n == 5 && sub.xf && memcmp(sub.xf, XF, 5 * D * 4) == 0 && memcmp(sub.hash, ds.hash, 32) != 0 &&
              strcmp(sub.name, "safetensors[0:5]") == 0,
          "subset of a float set: %s", sub.name);
    vt_data_free(&sub);
    /* labels against a model's classes: the label's offset named */
    CHECK_OK(vt_data_check_labels(&ds, 4));
    CHECK(vt_data_check_labels(&ds, 3) == VT_ERR_ARG && strstr(vt_errmsg(), "f.safetensors") &&
              strstr(vt_errmsg(), "offset"),
          "label out of range for the model: %s", vt_errmsg());
    /* one changed float: another hash */
    float x2[N * D];
    memcpy(x2, XF, sizeof x2);
    x2[7] = nextafterf(x2[7], 10.0f);
    st_build(&b, "F32", "I64", N, D, x2, XU, LAB);
    put("f2.safetensors", b.b, b.n);
    CHECK_OK(vt_data_load("safetensors:f2.safetensors", dir, &again));
    CHECK(memcmp(again.hash, ds.hash, 32) != 0, "one bit of one feature changes the hash");
    vt_data_free(&again);
    /* u8 features, I32 and U8 labels: v / 255, the same hash whatever the label width */
    st_build(&b, "U8", "I32", N, D, XF, XU, LAB);
    put("u.safetensors", b.b, b.n);
    CHECK_OK(vt_data_load("safetensors:u.safetensors", dir, &u8));
    CHECK(u8.x && !u8.xf && u8.x_max == 255 && u8.lut[255] == 1.0f, "u8 set");
    CHECK_OK(vt_data_row(&u8, 2, row));
    CHECK(row[1] == (float)((double)XU[2 * D + 1] / 255.0), "u8 value / 255");
    st_build(&b, "U8", "U8", N, D, XF, XU, LAB);
    put("u1.safetensors", b.b, b.n);
    CHECK_OK(vt_data_load("safetensors:u1.safetensors", dir, &again));
    CHECK(memcmp(again.hash, u8.hash, 32) == 0, "label width is not part of the identity");
    vt_data_free(&again);
    vt_data_free(&u8);
    vt_data_free(&ds);
}

static void test_hostile_safetensors(void)
{
    buf b;
    st_build(&b, "F32", "I64", N, D, XF, XU, LAB);
    uint64_t hl = vt_get_u64le(b.b);
    /* truncated anywhere */
    put("t.safetensors", b.b, b.n - 3);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "t.safetensors");
    put("t.safetensors", b.b, 5);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "offset 0");
    put("t.safetensors", b.b, 8 + hl - 1);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "header length");
    /* extra bytes after the tensors */
    buf c = b;
    app(&c, "xx", 2);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "no tensor covers");
    /* a header length beyond the limit */
    c = b;
    vt_put_u64le(c.b, (uint64_t)1 << 40);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_LIMIT, "t.safetensors");
    /* NaN and infinity in the features: the offset named */
    float x2[N * D];
    memcpy(x2, XF, sizeof x2);
    x2[9] = NAN;
    st_build(&c, "F32", "I64", N, D, x2, XU, LAB);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "NaN");
    char want[64];
    snprintf(want, sizeof want, "offset %llu", (unsigned long long)(8 + hl + 4 * 9));
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, want);
    x2[9] = INFINITY;
    st_build(&c, "F32", "I64", N, D, x2, XU, LAB);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "infinite");
    /* labels out of 0..255, negative */
    int64_t l2[N];
    memcpy(l2, LAB, sizeof l2);
    l2[4] = 256;
    st_build(&c, "F32", "I64", N, D, XF, XU, l2);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "label 256 of example 4");
    l2[4] = -1;
    st_build(&c, "F32", "I32", N, D, XF, XU, l2);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "label -1");
    /* wrong dtypes, N = 0 */
    st_build(&c, "F32", "I64", N, D, XF, XU, LAB);
    char *p = memmem(c.b, c.n, "\"F32\"", 5);
    memcpy(p, "\"I32\"", 5);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "expected F32 or U8");
    st_build(&c, "F32", "I64", N, D, XF, XU, LAB);
    p = memmem(c.b, c.n, "\"I64\"", 5);
    memcpy(p, "\"F64\"", 5);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "labels");
    st_build(&c, "F32", "I64", 0, D, XF, XU, LAB);
    put("t.safetensors", c.b, c.n);
    refused("safetensors:t.safetensors", VT_ERR_FORMAT, "0 examples");
    /* the header lies: a shape that does not match the offsets, overlapping tensors, a gap */
    static const struct {
        const char *from, *to, *has;
    } lies[] = {
        {"\"shape\":[12,6]", "\"shape\":[12,7]", "data_offsets"},
        {"\"shape\":[12]", "\"shape\":[13]", "data_offsets"},
        {"\"data_offsets\":[288,", "\"data_offsets\":[280,", "data_offsets"},
        {"\"x\":{", "\"z\":{", "no tensor \"x\""},
        {"{\"__metadata__\"", " \"__metadata__\"", "'{'"},
        {"\"dtype\":\"F32\"", "\"dtype\":\"Q32\"", "unknown dtype"},
        {"\"format\":\"pt\"", "\"format\":1234", "__metadata__"},
        {"\"shape\":[12,6]", "\"shape\":[12,6}", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        c = b;
        p = memmem(c.b, c.n, lies[i].from, strlen(lies[i].from));
        CHECK(p && strlen(lies[i].from) == strlen(lies[i].to), "lie %zu", i);
        if (!p) continue;
        memcpy(p, lies[i].to, strlen(lies[i].to));
        put("t.safetensors", c.b, c.n);
        refused("safetensors:t.safetensors", VT_ERR_FORMAT, lies[i].has);
    }
    /* a missing file, and bad specs */
    refused("safetensors:nothing.safetensors", VT_ERR_IO, "nothing.safetensors");
    refused("safetensors:", VT_ERR_ARG, "empty path");
    refused("file:x.npy", VT_ERR_ARG, "pair");
    refused("npy:a.npy", VT_ERR_ARG, "two paths");
    refused("safetensors:f.safetensors:99", VT_ERR_ARG, "only 12");
}

static void test_npy(void)
{
    buf bx, by;
    npy_build(&bx, "<f4", "(12, 6)", XF, sizeof XF);
    int32_t l32[N];
    for (int i = 0; i < N; i++) l32[i] = (int32_t)LAB[i];
    npy_build(&by, "<i4", "(12,)", l32, sizeof l32);
    put("x.npy", bx.b, bx.n);
    put("y.npy", by.b, by.n);
    vt_dataset ds, st;
    CHECK_OK(vt_data_load("npy:x.npy,y.npy", dir, &ds));
    CHECK(ds.n == N && ds.d == D && ds.xf && memcmp(ds.xf, XF, sizeof XF) == 0 && ds.y[5] == 1, "npy float set");
    vt_dataset again;
    CHECK_OK(vt_data_load("file:x.npy,y.npy", dir, &again));
    CHECK(memcmp(again.hash, ds.hash, 32) == 0, "file:X.npy,Y.npy is npy:");
    vt_data_free(&again);
    CHECK_OK(vt_data_load("safetensors:f.safetensors", dir, &st));
    CHECK(memcmp(st.hash, ds.hash, 32) != 0, "the format's name is part of the identity");
    vt_data_free(&st);
    npy_build(&bx, "|u1", "(12, 2, 3)", XU, sizeof XU);
    put("xu.npy", bx.b, bx.n);
    CHECK_OK(vt_data_load("npy:xu.npy,y.npy", dir, &again));
    CHECK(again.x && again.rows == 2 && again.cols == 3 && again.d == 6, "npy u8 [N, H, W]");
    vt_data_free(&again);
    /* hostile .npy files */
    static const struct {
        const char *descr, *shape;
        size_t cut;
        const char *has;
    } bad[] = {
        {">f4", "(12, 6)", 0, "little-endian"},
        {"<f8", "(12, 6)", 0, "dtype"},
        {"<f4", "(12, 7)", 0, "truncated"},
        {"<f4", "(12, 5)", 0, "extra bytes"},
        {"<f4", "(12, 6)", 9, "truncated"},
        {"<f4", "12, 6", 0, "tuple"},
        {"<f4", "(0, 6)", 0, "0 examples"},
        {"<f4", "(72,)", 0, "rank 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        npy_build(&bx, bad[i].descr, bad[i].shape, XF, strcmp(bad[i].shape, "(0, 6)") ? sizeof XF : 0);
        put("h.npy", bx.b, bad[i].cut ? bad[i].cut : bx.n);
        refused("npy:h.npy,y.npy", VT_ERR_FORMAT, bad[i].has);
        CHECK(strstr(vt_errmsg(), "h.npy"), "the message names the file: %s", vt_errmsg());
    }
    npy_build(&by, "<i4", "(11,)", l32, 11 * 4);
    put("h.npy", by.b, by.n);
    refused("npy:x.npy,h.npy", VT_ERR_FORMAT, "are 11");
    l32[3] = 300;
    npy_build(&by, "<i4", "(12,)", l32, sizeof l32);
    put("h.npy", by.b, by.n);
    refused("npy:x.npy,h.npy", VT_ERR_FORMAT, "label 300 of example 3 (offset 140)");
    memcpy(bx.b, "\x93NUMPZ", 6);
    put("h.npy", bx.b, bx.n);
    refused("npy:h.npy,y.npy", VT_ERR_FORMAT, "magic");
    vt_data_free(&ds);
}

/* float32 label files are float targets (docs/data.md "Float targets"): .npy [N] and [N, K], safetensors
 * F32 "y"; every value kept bit for bit, hashed (version 3), a slice keeps its targets; a NaN, a shape
 * that does not match and an empty K are refused naming the file */
static void test_targets(void)
{
    buf bx, by;
    float tg[N * 3];
    for (int i = 0; i < N * 3; i++) tg[i] = (float)i * 0.125f - 2.0f;
    npy_build(&bx, "<f4", "(12, 6)", XF, sizeof XF);
    put("x.npy", bx.b, bx.n);
    npy_build(&by, "<f4", "(12, 3)", tg, sizeof tg);
    put("t3.npy", by.b, by.n);
    npy_build(&by, "<f4", "(12,)", tg, N * 4);
    put("t1.npy", by.b, by.n);
    vt_dataset ds, one, sub;
    CHECK_OK(vt_data_load("npy:x.npy,t3.npy", dir, &ds));
    CHECK(ds.yt && ds.k_targets == 3 && ds.hash_version == 3 && ds.n_classes == 0 && !memcmp(ds.yt, tg, sizeof tg),
          "npy [N, K] float targets");
    CHECK_OK(vt_data_load("npy:x.npy,t1.npy", dir, &one));
    CHECK(one.yt && one.k_targets == 1 && !memcmp(one.yt, tg, N * 4) && memcmp(one.hash, ds.hash, 32) != 0,
          "npy [N] float targets");
    float tb[2 * 3];
    const size_t idx[2] = {7, 2};
    CHECK_OK(vt_data_batch_targets(&ds, idx, 2, tb));
    CHECK(!memcmp(tb, tg + 21, 12) && !memcmp(tb + 3, tg + 6, 12), "the batch's targets");
    CHECK(vt_data_batch_targets(&one, (const size_t[]){12}, 1, tb) == VT_ERR_ARG, "an index past the data set");
    uint8_t h[32];
    memcpy(h, ds.hash, 32);
    ds.yt[35] = 1.0f; /* the last target is hashed */
    uint8_t h2[32];
    CHECK_OK(vt_data_hash(&ds, h2));
    CHECK(memcmp(h, h2, 32) != 0, "the hash covers every target");
    ds.yt[35] = tg[35];
    CHECK_OK(vt_data_load("npy:x.npy,t3.npy:5", dir, &sub));
    CHECK(sub.n == 5 && sub.yt && sub.k_targets == 3 && !memcmp(sub.yt, tg, 15 * 4), "a subset keeps its targets");
    vt_data_free(&sub);
    vt_data_free(&one);
    /* safetensors: a tensor "y" F32 [N, 2] */
    buf b;
    float t2[N * 2];
    for (int i = 0; i < N * 2; i++) t2[i] = (float)i / 3.0f;
    char hd[512];
    const size_t xb = 4u * N * D, yb = 4u * N * 2;
    int k = snprintf(hd, sizeof hd,
                     "{\"x\":{\"dtype\":\"F32\",\"shape\":[%u,%u],\"data_offsets\":[0,%zu]},"
                     "\"y\":{\"dtype\":\"F32\",\"shape\":[%u,2],\"data_offsets\":[%zu,%zu]}}",
                     N, D, xb, N, xb, xb + yb);
    while (k % 8) hd[k++] = ' ';
    uint8_t n8[8];
    vt_put_u64le(n8, (uint64_t)k);
    b.n = 0;
    app(&b, n8, 8);
    app(&b, hd, (size_t)k);
    app(&b, XF, xb); /* little-endian hosts only, as the other builders here */
    app(&b, t2, yb);
    put("t.safetensors", b.b, b.n);
    vt_dataset st;
    CHECK_OK(vt_data_load("safetensors:t.safetensors", dir, &st));
    CHECK(st.yt && st.k_targets == 2 && !memcmp(st.yt, t2, sizeof t2) && st.hash_version == 3, "safetensors F32 targets");
    vt_data_free(&st);
    /* refused: a NaN (named by example and offset), another N, K = 0 */
    tg[4] = NAN;
    npy_build(&by, "<f4", "(12, 3)", tg, sizeof tg);
    put("h.npy", by.b, by.n);
    refused("npy:x.npy,h.npy", VT_ERR_FORMAT, "value 1 of example 1");
    npy_build(&by, "<f4", "(11, 3)", tg, 11 * 12);
    put("h.npy", by.b, by.n);
    refused("npy:x.npy,h.npy", VT_ERR_FORMAT, "are 11");
    npy_build(&by, "<f4", "(12, 0)", tg, 0);
    put("h.npy", by.b, by.n);
    refused("npy:x.npy,h.npy", VT_ERR_FORMAT, "K = 0");
    vt_data_free(&ds);
}

static void test_text(void)
{
    const char *t = "to be or not to be, that is the question: whether 'tis nobler in the mind\n";
    put("t.txt", t, strlen(t));
    vt_dataset tr, va, again;
    CHECK_OK(vt_data_load("text:t.txt", dir, &tr));
    CHECK_OK(vt_data_load("text-val:t.txt", dir, &va));
    CHECK(tr.text && va.text && tr.n + va.n == strlen(t) && tr.n_classes == va.n_classes && tr.hash_version == 2,
          "text splits");
    CHECK_OK(vt_data_load("file:t.txt", dir, &again));
    CHECK(memcmp(again.hash, tr.hash, 32) == 0, "file: of a text is text:");
    vt_data_free(&again);
    /* the same token ids from other bytes: another data set (the vocabulary is hashed) */
    char u[128];
    snprintf(u, sizeof u, "%s", t);
    for (char *q = u; *q; q++) if (*q == 'e') *q = 'E';
    put("u.txt", u, strlen(u));
    CHECK_OK(vt_data_load("text:u.txt", dir, &again));
    CHECK(memcmp(again.x, tr.x, tr.n) != 0 || memcmp(again.hash, tr.hash, 32) != 0, "vocabulary in the hash");
    vt_data_free(&again);
    put("s.txt", "short", 5);
    refused("text:s.txt", VT_ERR_FORMAT, "s.txt");
    vt_data_free(&tr);
    vt_data_free(&va);
}

/* The safetensors reader as the initial state's reader: metadata, tensors, offsets. */
static void test_st_read(void)
{
    buf b;
    st_build(&b, "F32", "I64", N, D, XF, XU, LAB);
    put("r.safetensors", b.b, b.n);
    char path[512];
    path_of(path, sizeof path, "r.safetensors");
    vt_st_file f;
    CHECK_OK(vt_st_read(path, &f));
    const vt_st_entry *x = vt_st_find(&f, "x");
    CHECK(f.n == 2 && x && x->rank == 2 && x->shape[1] == D && x->count == N * D && x->data == f.bytes + x->off &&
              !vt_st_find(&f, "__metadata__"),
          "st_read");
    vt_st_free(&f);
}

/* Mutations of valid files: every load either succeeds or fails with a message naming the file. */
static void fuzz(const char *spec, const char *file, const buf *orig, vt_rng *r, int rounds)
{
    int ok = 0, failed = 0, unnamed = 0;
    for (int i = 0; i < rounds; i++) {
        buf c = *orig;
        int kind = (int)(vt_rng_next(r) % 4), k = 1 + (int)(vt_rng_next(r) % 4);
        for (int j = 0; j < k && c.n; j++) {
            size_t at = (size_t)(vt_rng_next(r) % c.n);
            if (kind == 0) c.b[at] = (uint8_t)vt_rng_next(r);          /* a byte */
            else if (kind == 1) c.b[at] ^= (uint8_t)(1u << (vt_rng_next(r) % 8)); /* a bit */
            else if (kind == 2) c.n = at;                              /* cut */
            else if (at < 48) c.b[at] = "0123456789[]{},:\"-"[vt_rng_next(r) % 18]; /* the header's syntax */
        }
        put(file, c.b, c.n);
        vt_dataset ds;
        vt_err e = vt_data_load(spec, dir, &ds);
        if (e == VT_OK) {
            ok++;
            vt_data_free(&ds);
        } else {
            failed++;
            unnamed += strstr(vt_errmsg(), file) == NULL;
        }
    }
    CHECK(unnamed == 0, "%s: %d of %d refusals do not name the file", spec, unnamed, failed);
    printf("fuzz %s: %d loads, %d refused\n", spec, ok, failed);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/vt-data-file.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    vt_rng r = {vt_test_seed(25)};
    for (int i = 0; i < N * D; i++) {
        XF[i] = (float)vt_rng_normal(&r);
        XU[i] = (uint8_t)vt_rng_next(&r);
    }
    for (int i = 0; i < N; i++) LAB[i] = i % 4;
    test_safetensors();
    test_hostile_safetensors();
    test_npy();
    test_targets();
    test_text();
    test_st_read();
    buf b;
    st_build(&b, "F32", "I64", N, D, XF, XU, LAB);
    fuzz("safetensors:z.safetensors", "z.safetensors", &b, &r, 400);
    buf bx;
    npy_build(&bx, "<f4", "(12, 6)", XF, sizeof XF);
    fuzz("npy:z.npy,y.npy", "z.npy", &bx, &r, 400);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
    return vt_test_finish("test_data_file");
}
