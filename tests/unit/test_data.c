/* test_data.c - dataset loaders: the vendored MNIST and digits files (counts, payload
 * SHA-256s from data/README.md, pinned dataset hashes), raw/.gz equivalence, subsets,
 * FP32 conversion, and hostile inputs (each a clean error naming the file). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "../../common/vt_bytes.h"
#include "../../data/vt_data.h"
#include "vt_test.h"

/* Payload SHA-256s (decompressed) from data/README.md. */
#define SHA_TRAIN_IMAGES "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
#define SHA_TRAIN_LABELS "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"
#define SHA_TEST_IMAGES "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"
#define SHA_TEST_LABELS "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"
#define SHA_DIGITS_CSV "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8"

/* Dataset hashes (canonical bytes, docs/data.md), pinned so that any change to the
 * canonical encoding or the loaders' decoding is noticed. */
#define DS_MNIST_TRAIN "a479679b06dbf09e3ac346e3de8c481649f4a721bd161288f35f71a07acb412d"
#define DS_MNIST_TEST "1df93f33332a67b3389b122aeba2c806314a98586b94fa9a43e043ad5882c9e7"
#define DS_DIGITS "d6d24eb9d71518367a9cc7ea1abb360f0e0256f35e25fd6ec8d4229b43433e2e"
#define DS_MNIST_TEST_100 "c50f9f54026aa5ba8f9840ad23aeedd3f8ea7785b8800ba8166e0dbb9aa14c8c"

/* ---------------------------------------------------------------- temp files */

static char g_tmp[512];
static char g_made[256][600];
static int g_nmade;

static const char *tpath(char *buf, const char *name)
{
    snprintf(buf, 600, "%s/%s", g_tmp, name);
    return buf;
}

static void remember(const char *p)
{
    for (int i = 0; i < g_nmade; i++)
        if (strcmp(g_made[i], p) == 0) return;
    if (g_nmade < 256) snprintf(g_made[g_nmade++], 600, "%s", p);
}

/* Writes bytes to path: raw (level < 0) or gzip at the given level. */
static int write_file(const char *path, const void *p, size_t n, int level)
{
    remember(path);
    if (level < 0) {
        FILE *f = fopen(path, "wb");
        if (!f) return -1;
        size_t w = n ? fwrite(p, 1, n, f) : 0;
        return (fclose(f) == 0 && w == n) ? 0 : -1;
    }
    char mode[16];
    snprintf(mode, sizeof mode, "wb%d", level);
    gzFile g = gzopen(path, mode);
    if (!g) return -1;
    int w = n ? gzwrite(g, p, (unsigned)n) : 0;
    return (gzclose(g) == Z_OK && (size_t)w == n) ? 0 : -1;
}

static int make_dir(const char *path)
{
    remember(path);
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Whole file, decompressed when gzip (gzread is transparent for raw files). */
static uint8_t *read_all(const char *path, size_t *len, int decompress)
{
    *len = 0;
    size_t cap = 1 << 20, n = 0;
    uint8_t *b = malloc(cap);
    if (!b) return NULL;
    if (decompress) {
        gzFile g = gzopen(path, "rb");
        if (!g) { free(b); return NULL; }
        for (;;) {
            if (n == cap) { cap *= 2; uint8_t *nb = realloc(b, cap); if (!nb) { free(b); gzclose(g); return NULL; } b = nb; }
            int r = gzread(g, b + n, (unsigned)(cap - n));
            if (r <= 0) break;
            n += (size_t)r;
        }
        gzclose(g);
    } else {
        FILE *f = fopen(path, "rb");
        if (!f) { free(b); return NULL; }
        for (;;) {
            if (n == cap) { cap *= 2; uint8_t *nb = realloc(b, cap); if (!nb) { free(b); fclose(f); return NULL; } b = nb; }
            size_t r = fread(b + n, 1, cap - n, f);
            if (r == 0) break;
            n += r;
        }
        fclose(f);
    }
    *len = n;
    return b;
}

static void cleanup(void)
{
    for (int i = g_nmade - 1; i >= 0; i--) {
        struct stat st;
        if (stat(g_made[i], &st) != 0) continue;
        if (S_ISDIR(st.st_mode))
            rmdir(g_made[i]);
        else
            unlink(g_made[i]);
    }
    rmdir(g_tmp);
}

/* ---------------------------------------------------------------- helpers */

static int hash_is(const uint8_t h[VT_HASH_LEN], const char *hex)
{
    char s[2 * VT_HASH_LEN + 1];
    vt_hex(h, VT_HASH_LEN, s);
    return strcmp(s, hex) == 0;
}

static const char *hexs(const uint8_t h[VT_HASH_LEN])
{
    static char s[4][2 * VT_HASH_LEN + 1];
    static int k;
    k = (k + 1) % 4;
    vt_hex(h, VT_HASH_LEN, s[k]);
    return s[k];
}

/* Expects error `code` whose message names `file` and contains `what`. */
#define EXPECT_ERR(expr, code, file, what)                                                   \
    do {                                                                                     \
        vt_clear_error();                                                                    \
        int rc_ = (int)(expr);                                                               \
        CHECK(rc_ == (int)(code), "%s: got %d (%s), want %d: %s", #expr, rc_,                \
              vt_err_name((vt_err)rc_), (int)(code), vt_errmsg());                           \
        CHECK(strstr(vt_errmsg(), (file)) != NULL, "message does not name %s: %s", (file),   \
              vt_errmsg());                                                                  \
        CHECK(strstr(vt_errmsg(), (what)) != NULL, "message lacks \"%s\": %s", (what),       \
              vt_errmsg());                                                                  \
    } while (0)

static void label_counts(const vt_dataset *ds, size_t c[10])
{
    memset(c, 0, 10 * sizeof c[0]);
    for (size_t i = 0; i < ds->n; i++) c[ds->y[i] < 10 ? ds->y[i] : 0]++;
}

static int counts_are(const size_t c[10], const size_t want[10])
{
    return memcmp(c, want, 10 * sizeof c[0]) == 0;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A small valid IDX pair: n images of r x c. Returns sizes through *il, *ll. */
static void make_idx(uint8_t *img, size_t *il, uint8_t *lab, size_t *ll, uint32_t n, uint32_t r,
                     uint32_t c, vt_rng *rng)
{
    put_be32(img, 0x803), put_be32(img + 4, n), put_be32(img + 8, r), put_be32(img + 12, c);
    for (size_t i = 0; i < (size_t)n * r * c; i++) img[16 + i] = (uint8_t)vt_rng_next(rng);
    *il = 16 + (size_t)n * r * c;
    put_be32(lab, 0x801), put_be32(lab + 4, n);
    for (size_t i = 0; i < n; i++) lab[8 + i] = (uint8_t)(vt_rng_next(rng) % 10);
    *ll = 8 + n;
}

/* ---------------------------------------------------------------- tests */

static void test_paths(void)
{
    char out[4096];
    CHECK_OK(vt_data_root("some/where", out, sizeof out));
    CHECK(strcmp(out, "some/where") == 0, "root %s", out);
    CHECK_OK(vt_data_resolve("mnist", "data", out, sizeof out));
    CHECK(strcmp(out, "data/mnist") == 0, "resolve %s", out);
    CHECK_OK(vt_data_resolve("mnist-t10k", NULL, out, sizeof out));
    CHECK(strstr(out, "/mnist") != NULL, "resolve %s", out);
    CHECK_OK(vt_data_resolve("digits", NULL, out, sizeof out));
    EXPECT_ERR(vt_data_resolve("cifar", NULL, out, sizeof out), VT_ERR_ARG, "cifar", "unknown");
    EXPECT_ERR(vt_data_resolve("mnist", "/nonexistent/vt", out, sizeof out), VT_ERR_IO,
               "/nonexistent/vt/mnist", "no such data directory");
    char tiny[4];
    CHECK(vt_data_root("long/path", tiny, sizeof tiny) == VT_ERR_ARG, "short buffer");
}

static void check_lut(const vt_dataset *ds)
{
    int bad = 0;
    for (unsigned v = 0; v <= ds->x_max; v++) {
        float want = (float)((double)v / (double)ds->x_max);
        if (vt_f32_bits(ds->lut[v]) != vt_f32_bits(want)) bad++;
    }
    CHECK(bad == 0, "%s: %d lut entries differ from the formula", ds->name, bad);
    CHECK(ds->lut[0] == 0.0f && ds->lut[ds->x_max] == 1.0f, "%s: lut ends", ds->name);
}

static void test_mnist(vt_dataset *train, vt_dataset *test)
{
    CHECK_OK(vt_data_load("mnist-train", NULL, train));
    CHECK(train->n == 60000 && train->d == 784 && train->rows == 28 && train->cols == 28,
          "train shape n=%zu d=%u", train->n, train->d);
    CHECK(train->n_classes == 10 && train->x_max == 255, "train classes/x_max");
    CHECK(strcmp(train->name, "mnist-train") == 0, "name %s", train->name);
    CHECK(train->n_src == 2 && hash_is(train->src_sha256[0], SHA_TRAIN_IMAGES) &&
              hash_is(train->src_sha256[1], SHA_TRAIN_LABELS),
          "train payload sha %s %s", hexs(train->src_sha256[0]), hexs(train->src_sha256[1]));
    CHECK(hash_is(train->hash, DS_MNIST_TRAIN), "train dataset hash %s", hexs(train->hash));
    size_t c[10];
    static const size_t want_train[10] = {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949};
    label_counts(train, c);
    CHECK(counts_are(c, want_train), "train label counts");
    CHECK(train->y[0] == 5 && train->y[1] == 0 && train->y[2] == 4, "first train labels");
    check_lut(train);

    CHECK_OK(vt_data_load("mnist-t10k", NULL, test));
    CHECK(test->n == 10000 && test->d == 784, "test shape n=%zu", test->n);
    CHECK(strcmp(test->name, "mnist-test") == 0, "alias gives the canonical name: %s", test->name);
    CHECK(hash_is(test->src_sha256[0], SHA_TEST_IMAGES) &&
              hash_is(test->src_sha256[1], SHA_TEST_LABELS),
          "test payload sha %s %s", hexs(test->src_sha256[0]), hexs(test->src_sha256[1]));
    CHECK(hash_is(test->hash, DS_MNIST_TEST), "test dataset hash %s", hexs(test->hash));
    static const size_t want_test[10] = {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009};
    label_counts(test, c);
    CHECK(counts_are(c, want_test), "test label counts");
    CHECK(test->y[0] == 7 && test->y[1] == 2 && test->y[2] == 1, "first test labels");
    CHECK(memcmp(train->hash, test->hash, VT_HASH_LEN) != 0, "train and test differ");

    uint8_t h[VT_HASH_LEN];
    CHECK_OK(vt_data_hash(test, h));
    CHECK(memcmp(h, test->hash, VT_HASH_LEN) == 0, "recomputed hash");

    /* FP32 on demand: the formula, bit for bit. */
    float row[784];
    CHECK_OK(vt_data_row(train, 0, row));
    int bad = 0, ink = 0;
    for (int k = 0; k < 784; k++) {
        uint8_t p = train->x[k];
        if (vt_f32_bits(row[k]) != vt_f32_bits((float)((double)p / 255.0))) bad++;
        ink += p != 0;
    }
    CHECK(bad == 0 && ink > 50, "row 0: %d differ, %d ink pixels", bad, ink);
    EXPECT_ERR(vt_data_row(train, 60000, row), VT_ERR_ARG, "mnist-train", "60000");

    size_t idx[3] = {9999, 0, 4242};
    float *xb = malloc(3 * 784 * sizeof(float));
    uint8_t yb[3];
    CHECK_OK(vt_data_batch(test, idx, 3, xb, yb));
    for (int j = 0; j < 3; j++) {
        CHECK_OK(vt_data_row(test, idx[j], row));
        CHECK(memcmp(row, xb + j * 784, sizeof row) == 0 && yb[j] == test->y[idx[j]], "batch %d", j);
    }
    size_t badidx[2] = {1, 10000};
    EXPECT_ERR(vt_data_batch(test, badidx, 2, xb, yb), VT_ERR_ARG, "mnist-test", "10000");
    free(xb);

    float *all = NULL;
    CHECK_OK(vt_data_to_f32(test, &all));
    if (all) {
        CHECK_OK(vt_data_row(test, 1234, row));
        CHECK(memcmp(all + 1234 * 784, row, sizeof row) == 0, "to_f32 row 1234");
        free(all);
    }
}

static void test_digits(vt_dataset *dg)
{
    CHECK_OK(vt_data_load("digits", NULL, dg));
    CHECK(dg->n == 1797 && dg->d == 64 && dg->rows == 8 && dg->cols == 8 && dg->x_max == 16 &&
              dg->n_classes == 10,
          "digits shape n=%zu d=%u", dg->n, dg->d);
    CHECK(dg->n_src == 1 && hash_is(dg->src_sha256[0], SHA_DIGITS_CSV), "digits payload sha %s",
          hexs(dg->src_sha256[0]));
    CHECK(hash_is(dg->hash, DS_DIGITS), "digits dataset hash %s", hexs(dg->hash));
    size_t c[10];
    static const size_t want[10] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
    label_counts(dg, c);
    CHECK(counts_are(c, want), "digits label counts");
    /* first line: 0,0,5,13,9,1,0,0,... label 0 */
    CHECK(dg->x[2] == 5 && dg->x[3] == 13 && dg->y[0] == 0 && dg->y[1] == 1, "digits row 0");
    check_lut(dg);
    float *all = NULL;
    CHECK_OK(vt_data_to_f32(dg, &all));
    int bad = 0;
    for (size_t i = 0; all && i < dg->n * 64; i++)
        if (all[i] * 16.0f != (float)dg->x[i]) bad++; /* f/16 is exact */
    CHECK(all && bad == 0, "digits f/16 exact: %d bad", bad);
    free(all);
}

static void test_subsets(const vt_dataset *test, const vt_dataset *dg)
{
    vt_dataset a, b;
    CHECK_OK(vt_data_subset(test, 100, &a));
    CHECK(a.n == 100 && strcmp(a.name, "mnist-test[0:100]") == 0 && a.n_src == 0, "subset %s", a.name);
    CHECK(a.x && memcmp(a.x, test->x, 100 * 784) == 0 && memcmp(a.y, test->y, 100) == 0, "prefix");
    CHECK(hash_is(a.hash, DS_MNIST_TEST_100), "subset hash %s", hexs(a.hash));
    CHECK_OK(vt_data_load("mnist-test:100", NULL, &b));
    CHECK(memcmp(a.hash, b.hash, VT_HASH_LEN) == 0 && strcmp(b.name, a.name) == 0, "load spec :100");
    vt_data_free(&b);
    CHECK_OK(vt_data_slice(test, 100, 50, &b));
    CHECK(b.n == 50 && strcmp(b.name, "mnist-test[100:150]") == 0 &&
              memcmp(b.x, test->x + 100 * 784, 50 * 784) == 0,
          "slice %s", b.name);
    CHECK(memcmp(a.hash, b.hash, VT_HASH_LEN) != 0, "slices differ");
    vt_data_free(&b);
    CHECK_OK(vt_data_slice(dg, 0, dg->n, &b));
    CHECK(memcmp(b.hash, dg->hash, VT_HASH_LEN) == 0 && strcmp(b.name, "digits") == 0, "full slice");
    vt_data_free(&b);
    EXPECT_ERR(vt_data_subset(test, 0, &b), VT_ERR_ARG, "mnist-test", "empty");
    EXPECT_ERR(vt_data_subset(test, 10001, &b), VT_ERR_ARG, "mnist-test", "outside");
    EXPECT_ERR(vt_data_slice(test, 9999, 2, &b), VT_ERR_ARG, "mnist-test", "outside");
    CHECK(b.x == NULL && b.n == 0, "failed slice leaves dst zeroed");
    EXPECT_ERR(vt_data_load("digits:1798", NULL, &b), VT_ERR_ARG, "digits", "only 1797");
    EXPECT_ERR(vt_data_load("digits:x", NULL, &b), VT_ERR_ARG, "digits:x", "integer");
    EXPECT_ERR(vt_data_load("digits:0", NULL, &b), VT_ERR_ARG, "digits:0", "count 0");
    EXPECT_ERR(vt_data_load("cifar10", NULL, &b), VT_ERR_ARG, "cifar10", "unknown");
    EXPECT_ERR(vt_data_load("digits", "/nonexistent/vt", &b), VT_ERR_IO, "/nonexistent/vt", "no such");
    vt_data_free(&a);
    vt_data_free(&a); /* idempotent */
}

/* Raw and re-compressed copies give the same dataset hash. */
static void test_raw_vs_gz(const vt_dataset *test, const vt_dataset *dg)
{
    char p1[600], p2[600], d1[600], d2[600];
    size_t il, ll, cl;
    uint8_t *img = read_all("data/mnist/t10k-images-idx3-ubyte.gz", &il, 1);
    uint8_t *lab = read_all("data/mnist/t10k-labels-idx1-ubyte.gz", &ll, 1);
    uint8_t *csv = read_all("data/digits/digits.csv.gz", &cl, 1);
    CHECK(img && lab && csv && il == 7840016 && ll == 10008 && cl == 264712, "decompressed sizes");
    if (!img || !lab || !csv) goto out;

    tpath(d1, "raw");
    tpath(d2, "gz1");
    CHECK(make_dir(d1) == 0 && make_dir(d2) == 0, "mkdir");
    tpath(p1, "raw/t10k-images-idx3-ubyte");
    tpath(p2, "raw/t10k-labels-idx1-ubyte");
    CHECK(write_file(p1, img, il, -1) == 0 && write_file(p2, lab, ll, -1) == 0, "write raw");
    tpath(p1, "gz1/t10k-images-idx3-ubyte.gz");
    tpath(p2, "gz1/t10k-labels-idx1-ubyte.gz");
    CHECK(write_file(p1, img, il, 1) == 0 && write_file(p2, lab, ll, 1) == 0, "write gz");

    vt_dataset a;
    CHECK_OK(vt_data_load_mnist_dir(d1, "test", NULL, &a));
    CHECK(memcmp(a.hash, test->hash, VT_HASH_LEN) == 0, "raw t10k hash %s", hexs(a.hash));
    CHECK(memcmp(a.src_sha256, test->src_sha256, sizeof a.src_sha256) == 0, "raw payload sha");
    vt_data_free(&a);
    CHECK_OK(vt_data_load_mnist_dir(d2, "t10k", NULL, &a));
    CHECK(memcmp(a.hash, test->hash, VT_HASH_LEN) == 0, "gz-1 t10k hash %s", hexs(a.hash));
    vt_data_free(&a);
    CHECK_OK(vt_data_load_mnist_dir(d2, "test", "other-name", &a));
    CHECK(memcmp(a.hash, test->hash, VT_HASH_LEN) != 0, "the name is part of the hash");
    vt_data_free(&a);
    EXPECT_ERR(vt_data_load_mnist_dir(d2, "train", NULL, &a), VT_ERR_IO, "train-images-idx3-ubyte", "not found");
    EXPECT_ERR(vt_data_load_mnist_dir(d2, "val", NULL, &a), VT_ERR_ARG, "val", "split");
    /* A root holding the raw copies: vt_data_load finds the raw files and they pass the pins. */
    {
        char r[600], m[600];
        tpath(r, "root");
        tpath(m, "root/mnist");
        CHECK(make_dir(r) == 0 && make_dir(m) == 0, "mkdir root");
        tpath(p1, "root/mnist/t10k-images-idx3-ubyte");
        tpath(p2, "root/mnist/t10k-labels-idx1-ubyte");
        CHECK(write_file(p1, img, il, -1) == 0 && write_file(p2, lab, ll, -1) == 0, "write root");
        CHECK_OK(vt_data_load("mnist-test", r, &a));
        CHECK(memcmp(a.hash, test->hash, VT_HASH_LEN) == 0, "root raw hash");
        vt_data_free(&a);
        /* One changed pixel: loads as a dataset, but not as the pinned built-in. */
        img[16 + 500] ^= 1;
        CHECK(write_file(p1, img, il, -1) == 0, "write changed");
        img[16 + 500] ^= 1;
        EXPECT_ERR(vt_data_load("mnist-test", r, &a), VT_ERR_MISMATCH, p1, SHA_TEST_IMAGES);
        CHECK_OK(vt_data_load_mnist(p1, p2, "mnist-test", &a));
        CHECK(memcmp(a.hash, test->hash, VT_HASH_LEN) != 0, "one pixel changes the hash");
        vt_data_free(&a);
    }

    /* digits: raw, gzip level 1, CRLF line ends, no final newline: all the same hash. */
    tpath(p1, "digits.csv");
    CHECK(write_file(p1, csv, cl, -1) == 0, "write csv");
    CHECK_OK(vt_data_load_digits_csv(p1, "digits", &a));
    CHECK(memcmp(a.hash, dg->hash, VT_HASH_LEN) == 0, "raw digits hash");
    vt_data_free(&a);
    tpath(p1, "digits1.csv.gz");
    CHECK(write_file(p1, csv, cl, 1) == 0, "write csv gz");
    CHECK_OK(vt_data_load_digits_csv(p1, "digits", &a));
    CHECK(memcmp(a.hash, dg->hash, VT_HASH_LEN) == 0, "gz-1 digits hash");
    vt_data_free(&a);
    tpath(p1, "digits_nofinal.csv");
    CHECK(write_file(p1, csv, cl - 1, -1) == 0, "write csv no final newline");
    CHECK_OK(vt_data_load_digits_csv(p1, "digits", &a));
    CHECK(memcmp(a.hash, dg->hash, VT_HASH_LEN) == 0, "no-final-newline digits hash");
    vt_data_free(&a);
    {
        uint8_t *crlf = malloc(2 * cl);
        size_t k = 0;
        for (size_t i = 0; crlf && i < cl; i++) {
            if (csv[i] == '\n') crlf[k++] = '\r';
            crlf[k++] = csv[i];
        }
        tpath(p1, "digits_crlf.csv");
        CHECK(crlf && write_file(p1, crlf, k, -1) == 0, "write crlf");
        CHECK_OK(vt_data_load_digits_csv(p1, "digits", &a));
        CHECK(memcmp(a.hash, dg->hash, VT_HASH_LEN) == 0, "crlf digits hash");
        vt_data_free(&a);
        free(crlf);
    }
out:
    free(img);
    free(lab);
    free(csv);
}

static void test_hostile_idx(vt_rng *rng)
{
    enum { N = 3, R = 28, C = 28 };
    static uint8_t img[16 + N * R * C + 64], lab[8 + N + 64];
    size_t il, ll;
    make_idx(img, &il, lab, &ll, N, R, C, rng);
    char ip[600], lp[600], xp[600];
    tpath(ip, "img");
    tpath(lp, "lab");
    vt_dataset ds;

    /* baseline, raw and gz */
    CHECK(write_file(ip, img, il, -1) == 0 && write_file(lp, lab, ll, -1) == 0, "write");
    CHECK_OK(vt_data_load_mnist(ip, lp, "tiny", &ds));
    CHECK(ds.n == N && ds.d == R * C && memcmp(ds.x, img + 16, N * R * C) == 0, "tiny content");
    uint8_t h0[VT_HASH_LEN];
    memcpy(h0, ds.hash, VT_HASH_LEN);
    vt_data_free(&ds);
    tpath(xp, "img.gz");
    CHECK(write_file(xp, img, il, 9) == 0, "write gz");
    CHECK_OK(vt_data_load_mnist(xp, lp, "tiny", &ds));
    CHECK(memcmp(ds.hash, h0, VT_HASH_LEN) == 0, "tiny gz hash");
    vt_data_free(&ds);
    { /* two concatenated gzip members (as `cat a.gz b.gz`) form one payload */
        char m1[600], m2[600];
        size_t l1, l2;
        CHECK(write_file(tpath(m1, "part1.gz"), img, 100, 6) == 0 &&
                  write_file(tpath(m2, "part2.gz"), img + 100, il - 100, 6) == 0, "w");
        uint8_t *a = read_all(m1, &l1, 0), *b = read_all(m2, &l2, 0);
        uint8_t *cat = a && b ? malloc(l1 + l2) : NULL;
        if (cat) {
            memcpy(cat, a, l1);
            memcpy(cat + l1, b, l2);
            CHECK(write_file(tpath(xp, "img_2members.gz"), cat, l1 + l2, -1) == 0, "w");
            CHECK_OK(vt_data_load_mnist(xp, lp, "tiny", &ds));
            CHECK(memcmp(ds.hash, h0, VT_HASH_LEN) == 0, "two-member gz hash");
            vt_data_free(&ds);
        }
        CHECK(cat != NULL, "read members");
        free(a);
        free(b);
        free(cat);
    }

    /* other shapes are accepted */
    {
        static uint8_t i2[16 + 2 * 5 * 7], l2[10];
        size_t a, b;
        make_idx(i2, &a, l2, &b, 2, 5, 7, rng);
        char p[600], q[600];
        CHECK(write_file(tpath(p, "i57"), i2, a, -1) == 0 && write_file(tpath(q, "l57"), l2, b, -1) == 0, "w");
        CHECK_OK(vt_data_load_mnist(p, q, "five-by-seven", &ds));
        CHECK(ds.rows == 5 && ds.cols == 7 && ds.d == 35 && ds.n == 2, "5x7");
        vt_data_free(&ds);
    }

    /* missing, directory */
    EXPECT_ERR(vt_data_load_mnist("/nonexistent/img", lp, "t", &ds), VT_ERR_IO, "/nonexistent/img", "cannot open");
    EXPECT_ERR(vt_data_load_mnist(ip, "/nonexistent/lab", "t", &ds), VT_ERR_IO, "/nonexistent/lab", "cannot open");
    EXPECT_ERR(vt_data_load_mnist(g_tmp, lp, "t", &ds), VT_ERR_IO, g_tmp, "");
    CHECK(ds.x == NULL && ds.y == NULL && ds.n == 0, "failed load leaves ds zeroed");

    /* empty files */
    tpath(xp, "empty");
    CHECK(write_file(xp, "", 0, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(xp, lp, "t", &ds), VT_ERR_FORMAT, xp, "empty file");
    EXPECT_ERR(vt_data_load_mnist(ip, xp, "t", &ds), VT_ERR_FORMAT, xp, "empty file");
    tpath(xp, "empty.gz");
    CHECK(write_file(xp, "", 0, 6) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(xp, lp, "t", &ds), VT_ERR_FORMAT, xp, "empty file");

    /* truncated images: in the payload, in the header */
    tpath(xp, "img_trunc");
    CHECK(write_file(xp, img, il - 100, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(xp, lp, "t", &ds), VT_ERR_FORMAT, xp, "truncated pixels");
    CHECK(write_file(xp, img, 10, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(xp, lp, "t", &ds), VT_ERR_FORMAT, xp, "truncated IDX image header");
    CHECK(write_file(xp, lab, ll - 1, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(ip, xp, "t", &ds), VT_ERR_FORMAT, xp, "truncated labels");

    /* extra trailing bytes, raw and inside the gzip payload */
    tpath(xp, "img_extra");
    CHECK(write_file(xp, img, il + 1, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(xp, lp, "t", &ds), VT_ERR_FORMAT, xp, "extra bytes");
    tpath(xp, "img_extra.gz");
    CHECK(write_file(xp, img, il + 7, 6) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(xp, lp, "t", &ds), VT_ERR_FORMAT, xp, "extra bytes");
    tpath(xp, "lab_extra");
    CHECK(write_file(xp, lab, ll + 2, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(ip, xp, "t", &ds), VT_ERR_FORMAT, xp, "extra bytes");

    /* wrong magic; files swapped */
    uint8_t save[16];
    memcpy(save, img, 16);
    put_be32(img, 0x804);
    tpath(xp, "img_magic");
    CHECK(write_file(xp, img, il, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(xp, lp, "t", &ds), VT_ERR_FORMAT, xp, "wrong magic 0x00000804");
    memcpy(img, save, 16);
    EXPECT_ERR(vt_data_load_mnist(lp, ip, "t", &ds), VT_ERR_FORMAT, ip, "looks like an images file");

    /* mismatched counts */
    put_be32(lab + 4, N + 1);
    tpath(xp, "lab_count");
    CHECK(write_file(xp, lab, ll + 1, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(ip, xp, "t", &ds), VT_ERR_FORMAT, xp, "3 images, but");
    put_be32(lab + 4, N);

    /* label 10 */
    lab[8 + 1] = 10;
    tpath(xp, "lab_10");
    CHECK(write_file(xp, lab, ll, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_mnist(ip, xp, "t", &ds), VT_ERR_FORMAT, xp, "label 10 of example 1");
    lab[8 + 1] = 3;

    /* header sizes: zero, too large, huge claims with tiny files (must not allocate them) */
    struct { uint32_t n, r, c; vt_err e; const char *what; } hdr[] = {
        {0, 28, 28, VT_ERR_FORMAT, "0 images"},
        {N, 0, 28, VT_ERR_FORMAT, "empty"},
        {N, 28, 4097, VT_ERR_LIMIT, "exceeds the limit"},
        {N, 4096, 4096, VT_ERR_FORMAT, "truncated pixels"},
        {0x7fffffffu, 28, 28, VT_ERR_LIMIT, "exceed the limit"},
        {2739128, 28, 28, VT_ERR_FORMAT, "truncated"}, /* 2739128*784 < 2^31 */
    };
    for (size_t t = 0; t < sizeof hdr / sizeof hdr[0]; t++) {
        uint8_t h[16 + N * R * C];
        memcpy(h, img, sizeof h);
        put_be32(h + 4, hdr[t].n), put_be32(h + 8, hdr[t].r), put_be32(h + 12, hdr[t].c);
        uint8_t l[8 + N];
        memcpy(l, lab, sizeof l);
        put_be32(l + 4, hdr[t].n);
        char a[600], b[600];
        CHECK(write_file(tpath(a, "img_hdr"), h, sizeof h, -1) == 0 &&
                  write_file(tpath(b, "lab_hdr"), l, sizeof l, -1) == 0, "w");
        /* labels are checked first, so a huge count with a short label file names it */
        const char *who = (hdr[t].e == VT_ERR_FORMAT && strcmp(hdr[t].what, "truncated") == 0) ? b : a;
        EXPECT_ERR(vt_data_load_mnist(a, b, "t", &ds), hdr[t].e, who, hdr[t].what);
    }

    /* gzip damage, using the real t10k labels .gz */
    size_t gl;
    uint8_t *gz = read_all("data/mnist/t10k-labels-idx1-ubyte.gz", &gl, 0);
    CHECK(gz && gl == 4542, "read t10k labels gz");
    if (gz) {
        static uint8_t ti[16 + 10000];
        memset(ti, 0, sizeof ti);
        put_be32(ti, 0x803), put_be32(ti + 4, 10000), put_be32(ti + 8, 1), put_be32(ti + 12, 1);
        char tip[600];
        CHECK(write_file(tpath(tip, "t10k_1x1"), ti, sizeof ti, -1) == 0, "w");
        tpath(xp, "lab_full.gz");
        CHECK(write_file(xp, gz, gl, -1) == 0, "w");
        CHECK_OK(vt_data_load_mnist(tip, xp, "t", &ds));
        vt_data_free(&ds);
        tpath(xp, "lab_half.gz");
        CHECK(write_file(xp, gz, gl / 2, -1) == 0, "w");
        EXPECT_ERR(vt_data_load_mnist(tip, xp, "t", &ds), VT_ERR_FORMAT, xp, "truncated gzip");
        tpath(xp, "lab_notrailer.gz");
        CHECK(write_file(xp, gz, gl - 4, -1) == 0, "w");
        EXPECT_ERR(vt_data_load_mnist(tip, xp, "t", &ds), VT_ERR_FORMAT, xp, "truncated gzip");
        tpath(xp, "lab_badcrc.gz");
        gz[gl - 6] ^= 0x55; /* CRC-32 in the trailer */
        CHECK(write_file(xp, gz, gl, -1) == 0, "w");
        gz[gl - 6] ^= 0x55;
        EXPECT_ERR(vt_data_load_mnist(tip, xp, "t", &ds), VT_ERR_FORMAT, xp, "gzip");
        tpath(xp, "lab_corrupt.gz");
        gz[gl / 2] ^= 0xff;
        CHECK(write_file(xp, gz, gl, -1) == 0, "w");
        gz[gl / 2] ^= 0xff;
        vt_clear_error();
        vt_err e = vt_data_load_mnist(tip, xp, "t", &ds);
        CHECK(e == VT_ERR_FORMAT && strstr(vt_errmsg(), xp), "corrupt gz: %d %s", (int)e, vt_errmsg());
        /* bytes after the gzip member: garbage, zeros, a second copy */
        {
            uint8_t *g2 = malloc(2 * gl);
            if (g2) {
                memcpy(g2, gz, gl);
                memcpy(g2 + gl, "garbage\n", 8);
                tpath(xp, "lab_garbage.gz");
                CHECK(write_file(xp, g2, gl + 8, -1) == 0, "w");
                EXPECT_ERR(vt_data_load_mnist(tip, xp, "t", &ds), VT_ERR_FORMAT, xp,
                           "extra bytes after the end of the gzip stream");
                memset(g2 + gl, 0, 8);
                tpath(xp, "lab_zeros.gz");
                CHECK(write_file(xp, g2, gl + 8, -1) == 0, "w");
                EXPECT_ERR(vt_data_load_mnist(tip, xp, "t", &ds), VT_ERR_FORMAT, xp,
                           "extra bytes after the end of the gzip stream");
                memcpy(g2 + gl, gz, gl);
                tpath(xp, "lab_twice.gz");
                CHECK(write_file(xp, g2, 2 * gl, -1) == 0, "w");
                EXPECT_ERR(vt_data_load_mnist(tip, xp, "t", &ds), VT_ERR_FORMAT, xp,
                           "extra bytes after the 10008-byte payload");
                free(g2);
            }
        }
        tpath(xp, "lab_magiconly.gz");
        CHECK(write_file(xp, gz, 2, -1) == 0, "w");
        EXPECT_ERR(vt_data_load_mnist(tip, xp, "t", &ds), VT_ERR_FORMAT, xp, "");
        free(gz);
    }

    /* bad names */
    EXPECT_ERR(vt_data_load_mnist(ip, lp, "", &ds), VT_ERR_ARG, "name", "empty");
    EXPECT_ERR(vt_data_load_mnist(ip, lp, "tab\there", &ds), VT_ERR_ARG, "name", "non-printable");
    {
        char longname[80];
        memset(longname, 'a', 79);
        longname[79] = 0;
        EXPECT_ERR(vt_data_load_mnist(ip, lp, longname, &ds), VT_ERR_ARG, "name", "limit");
        memset(longname, 'a', 63);
        longname[63] = 0;
        CHECK_OK(vt_data_load_mnist(ip, lp, longname, &ds));
        vt_dataset s;
        EXPECT_ERR(vt_data_subset(&ds, 1, &s), VT_ERR_ARG, "aaaa", "longer than");
        vt_data_free(&ds);
    }
}

/* Random damage to a small valid pair: never a crash; an error always names a file. */
static void test_mutations(vt_rng *rng)
{
    enum { N = 4, R = 6, C = 5 };
    uint8_t img[16 + N * R * C], lab[8 + N];
    size_t il, ll;
    make_idx(img, &il, lab, &ll, N, R, C, rng);
    char ip[600], lp[600];
    int ok = 0, err = 0, unnamed = 0;
    for (int it = 0; it < 400; it++) {
        uint8_t mi[sizeof img + 8], ml[sizeof lab + 8];
        memcpy(mi, img, il);
        memcpy(ml, lab, ll);
        size_t mil = il, mll = ll;
        int which = (int)(vt_rng_next(rng) % 2);
        uint8_t *m = which ? ml : mi;
        size_t *mlen = which ? &mll : &mil;
        int kind = (int)(vt_rng_next(rng) % 4);
        if (kind == 0) { /* flip a byte, mostly in the header */
            size_t span = vt_rng_next(rng) % 2 ? (which ? 8 : 16) : *mlen;
            size_t at = vt_rng_next(rng) % span;
            if (at < *mlen) m[at] ^= (uint8_t)(1 + vt_rng_next(rng) % 255);
        } else if (kind == 1) { /* truncate */
            *mlen = vt_rng_next(rng) % *mlen;
        } else if (kind == 2) { /* append */
            size_t k = 1 + vt_rng_next(rng) % 8;
            for (size_t j = 0; j < k; j++) m[(*mlen)++] = (uint8_t)vt_rng_next(rng);
        }
        int level = vt_rng_next(rng) % 2 ? -1 : 6;
        tpath(ip, level < 0 ? "mut_img" : "mut_img.gz");
        tpath(lp, "mut_lab");
        if (write_file(ip, mi, mil, level) != 0 || write_file(lp, ml, mll, -1) != 0) continue;
        if (kind == 3 && level > 0) { /* damage the compressed bytes */
            size_t gl;
            uint8_t *g = read_all(ip, &gl, 0);
            if (g && gl > 0) {
                g[vt_rng_next(rng) % gl] ^= (uint8_t)(1 + vt_rng_next(rng) % 255);
                write_file(ip, g, gl, -1);
            }
            free(g);
        }
        vt_dataset ds;
        vt_clear_error();
        vt_err e = vt_data_load_mnist(ip, lp, "mut", &ds);
        if (e == VT_OK) {
            ok++;
            CHECK(ds.n >= 1 && ds.x && ds.y, "ok load has data");
            vt_data_free(&ds);
        } else {
            err++;
            if (!strstr(vt_errmsg(), ip) && !strstr(vt_errmsg(), lp)) {
                unnamed++;
                fprintf(stderr, "unnamed error: %s\n", vt_errmsg());
            }
            CHECK(ds.x == NULL && ds.y == NULL, "failed load leaves ds zeroed");
        }
    }
    printf("mutations: %d loaded, %d rejected\n", ok, err);
    CHECK(unnamed == 0, "%d errors without a file name (%d ok, %d errors)", unnamed, ok, err);
    CHECK(err > 100, "mutations mostly rejected: %d ok, %d errors", ok, err);
}

static void test_hostile_csv(void)
{
    static const char good[] =
        "0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0,0";
    char path[600];
    vt_dataset ds;
    char buf[2048];

    snprintf(buf, sizeof buf, "%s\n%s\n", good, good);
    CHECK(write_file(tpath(path, "ok.csv"), buf, strlen(buf), -1) == 0, "w");
    CHECK_OK(vt_data_load_digits_csv(path, "d2", &ds));
    CHECK(ds.n == 2 && ds.x[3] == 13 && ds.y[1] == 0, "two rows");
    vt_data_free(&ds);

    struct { const char *second; const char *what; } bad[] = {
        {"abc", "line 2, column 1: expected an unsigned integer, found 'a'"},
        {"0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,17,0,0,0,0",
         "line 2, column 61: feature value 17 is not in 0..16"},
        {"0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0",
         "line 2: 64 columns, expected 65"},
        {"0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0,0,1",
         "line 2: more than 65 columns"},
        {"0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0,10",
         "line 2, column 65: label 10 is not in 0..9"},
        {"-1,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0,0",
         "line 2, column 1: expected an unsigned integer, found '-'"},
        {"1.0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0,0",
         "line 2, column 1: unexpected '.' after the integer"},
        {"1,0 ,5", "line 2, column 2: unexpected 0x20 after the integer"},
        {"01,0,5", "line 2, column 1: leading zero"},
        {"0,0,5000", "line 2, column 3: integer too long"},
        {"0,,5", "line 2, column 2: expected an unsigned integer, found ','"},
        {"", "line 2: empty line"},
        {"0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0,0,",
         "line 2: more than 65 columns"},
        {"pixel_0_0,pixel_0_1", "line 2, column 1"},
    };
    for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
        snprintf(buf, sizeof buf, "%s\n%s\n%s\n", good, bad[t].second, good);
        CHECK(write_file(tpath(path, "bad.csv"), buf, strlen(buf), -1) == 0, "w");
        EXPECT_ERR(vt_data_load_digits_csv(path, "d", &ds), VT_ERR_FORMAT, path, bad[t].what);
        CHECK(write_file(tpath(path, "bad.csv.gz"), buf, strlen(buf), 6) == 0, "w");
        EXPECT_ERR(vt_data_load_digits_csv(path, "d", &ds), VT_ERR_FORMAT, path, bad[t].what);
    }
    /* a NUL byte */
    snprintf(buf, sizeof buf, "%s\n", good);
    buf[3] = 0;
    CHECK(write_file(tpath(path, "nul.csv"), buf, strlen(good) + 1, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_digits_csv(path, "d", &ds), VT_ERR_FORMAT, path, "line 1, column 2");
    /* empty, only newlines, missing, truncated gzip */
    CHECK(write_file(tpath(path, "empty.csv"), "", 0, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_digits_csv(path, "d", &ds), VT_ERR_FORMAT, path, "empty file");
    CHECK(write_file(tpath(path, "nl.csv"), "\n", 1, -1) == 0, "w");
    EXPECT_ERR(vt_data_load_digits_csv(path, "d", &ds), VT_ERR_FORMAT, path, "empty line");
    EXPECT_ERR(vt_data_load_digits_csv("/nonexistent/digits.csv", "d", &ds), VT_ERR_IO,
               "/nonexistent/digits.csv", "cannot open");
    {
        size_t gl;
        uint8_t *g = read_all("data/digits/digits.csv.gz", &gl, 0);
        CHECK(g != NULL, "read digits gz");
        if (g) {
            CHECK(write_file(tpath(path, "digits_trunc.csv.gz"), g, gl - 1000, -1) == 0, "w");
            EXPECT_ERR(vt_data_load_digits_csv(path, "d", &ds), VT_ERR_FORMAT, path, "truncated gzip");
            free(g);
        }
    }
    /* a gzip bomb: 65 MiB of digits decompressed from ~64 KiB stops at the 64 MiB limit */
    {
        tpath(path, "bomb.csv.gz");
        remember(path);
        gzFile g = gzopen(path, "wb1");
        static char zeros[1 << 16];
        memset(zeros, '0', sizeof zeros);
        int w = 1;
        for (int i = 0; g && w && i < 65 * 16; i++) w = gzwrite(g, zeros, sizeof zeros) > 0;
        CHECK(g && gzclose(g) == Z_OK && w, "write bomb");
        EXPECT_ERR(vt_data_load_digits_csv(path, "d", &ds), VT_ERR_LIMIT, path, "more than");
    }
    CHECK(ds.x == NULL && ds.n == 0, "failed load leaves ds zeroed");
}

/* CIFAR-10: the vendored subset (record counts, class counts from ../shared/data/README.md, the
 * first record's label and pixels as stored), and hostile files. */
static void test_cifar(void)
{
    vt_dataset tr, te;
    CHECK_OK(vt_data_load("cifar10-train", NULL, &tr));
    CHECK_OK(vt_data_load("cifar10-test", NULL, &te));
    static const size_t want_tr[10] = {396, 366, 420, 384, 422, 393, 414, 385, 407, 413};
    static const size_t want_te[10] = {103, 89, 100, 103, 90, 86, 112, 102, 106, 109};
    size_t c[10];
    CHECK(tr.n == 4000 && te.n == 1000 && tr.d == 3072 && tr.channels == 3 && tr.rows == 32 && tr.cols == 32 &&
              tr.x_max == 255 && tr.n_classes == 10,
          "cifar10 shapes: %zu %zu d %u", tr.n, te.n, tr.d);
    CHECK(hash_is(tr.hash, "52d914436b1fabd33cb92053fa568d6755dca7dbb7961526843fb9365d593010") &&
              hash_is(te.hash, "9e18eeed7b68635cff46f10703b28a5c815b7503afc432745cd7617ca72e172e"),
          "cifar10 dataset hashes (docs/data.md)");
    label_counts(&tr, c);
    CHECK(counts_are(c, want_tr), "cifar10-train class counts");
    label_counts(&te, c);
    CHECK(counts_are(c, want_te), "cifar10-test class counts");
    /* the first record, read independently from the file */
    char path[600];
    snprintf(path, sizeof path, "%s/data/cifar10/cifar10_train_4000.bin.gz", VT_SOURCE_DIR);
    size_t len = 0;
    uint8_t *raw = read_all(path, &len, 1);
    CHECK(raw && len == 4000u * 3073u, "read the CIFAR file (%zu bytes)", len);
    if (raw && len == 4000u * 3073u) {
        CHECK(tr.y[0] == raw[0] && memcmp(tr.x, raw + 1, 3072) == 0, "record 0 as stored");
        CHECK(tr.y[3999] == raw[3999u * 3073u] && memcmp(tr.x + 3999u * 3072u, raw + 3999u * 3073u + 1, 3072) == 0,
              "record 3999 as stored");
        /* hostile: truncated, extra byte, bad label, empty; each refused with a clear error */
        char p1[600];
        tpath(p1, "cifar_bad.bin");
        vt_dataset h;
        CHECK(write_file(p1, raw, 3 * 3073 - 1, -1) == 0, "write truncated");
        CHECK(vt_data_load_cifar(p1, "x", &h) == VT_ERR_FORMAT && strstr(vt_errmsg(), "whole number"),
              "a truncated record is refused: %s", vt_errmsg());
        CHECK(write_file(p1, raw, 3 * 3073 + 1, 1) == 0, "write extra");
        CHECK(vt_data_load_cifar(p1, "x", &h) == VT_ERR_FORMAT, "an extra byte is refused (gzip)");
        uint8_t *bad = malloc(3 * 3073);
        if (bad) {
            memcpy(bad, raw, 3 * 3073);
            bad[2 * 3073] = 10;
            CHECK(write_file(p1, bad, 3 * 3073, -1) == 0, "write bad label");
            CHECK(vt_data_load_cifar(p1, "x", &h) == VT_ERR_FORMAT && strstr(vt_errmsg(), "record 2"),
                  "a label of 10 is refused naming the record: %s", vt_errmsg());
            CHECK(write_file(p1, bad, 2 * 3073, 1) == 0, "write two records");
            CHECK_OK(vt_data_load_cifar(p1, "two", &h));
            CHECK(h.n == 2 && h.y[1] == raw[3073], "two good records load");
            vt_data_free(&h);
            free(bad);
        }
        CHECK(write_file(p1, raw, 0, -1) == 0, "write empty");
        CHECK(vt_data_load_cifar(p1, "x", &h) == VT_ERR_FORMAT, "an empty file is refused");
        CHECK(h.x == NULL && h.n == 0, "a refused load leaves the dataset empty");
    }
    free(raw);
    printf("dataset hashes: cifar10-train %s\n                cifar10-test  %s\n", hexs(tr.hash), hexs(te.hash));
    vt_data_free(&tr);
    vt_data_free(&te);
}

/* text datasets: the vocabulary (sorted distinct bytes of the whole file), the 90/10 split, raw
 * and gzip alike, refusals; the vendored tiny-shakespeare against its pinned hash */
static void test_text(void)
{
    char p[600], pz[600];
    const char *txt = "banana bread, cabbage; and a dab of AB\n"; /* 39 bytes */
    size_t n = strlen(txt), cut = n / 10 * 9 + n % 10 * 9 / 10;
    CHECK(write_file(tpath(p, "t.txt"), txt, n, -1) == 0 && write_file(tpath(pz, "t.txt.gz"), txt, n, 6) == 0,
          "write text");
    vt_dataset a, b, z;
    CHECK_OK(vt_data_load_text(p, "t-train", 0, &a));
    CHECK_OK(vt_data_load_text(p, "t-val", 1, &b));
    CHECK_OK(vt_data_load_text(pz, "t-train", 0, &z));
    CHECK(a.text && a.n == cut && b.n == n - cut && a.d == 1, "split %zu / %zu of %zu", a.n, b.n, n);
    int seen[256] = {0};
    uint32_t V = 0;
    for (size_t i = 0; i < n; i++) V += !seen[(uint8_t)txt[i]]++;
    CHECK(a.n_classes == V && b.n_classes == V, "vocabulary %u, expected %u", a.n_classes, V);
    int ok = 1;
    for (uint32_t v = 1; v < V; v++) ok &= a.chars[v - 1] < a.chars[v];
    for (size_t i = 0; i < a.n; i++) ok &= a.chars[a.x[i]] == (uint8_t)txt[i];
    for (size_t i = 0; i < b.n; i++) ok &= b.chars[b.x[i]] == (uint8_t)txt[cut + i];
    CHECK(ok, "token ids are the ranks of the bytes in the sorted vocabulary");
    CHECK(memcmp(a.hash, z.hash, 32) == 0 && memcmp(a.hash, b.hash, 32) != 0, "raw and gzip hash alike; splits differ");
    vt_data_free(&a), vt_data_free(&b), vt_data_free(&z);
    CHECK(write_file(tpath(p, "short.txt"), "tiny", 4, -1) == 0, "write");
    CHECK(vt_data_load_text(p, "s", 0, &a) == VT_ERR_FORMAT, "a text too short for two splits");
    CHECK(vt_data_load_text(p, "s", 2, &a) == VT_ERR_ARG, "split 2");
    CHECK(vt_data_load_text(tpath(p, "missing.txt"), "s", 0, &a) != VT_OK, "a missing file");
    CHECK_OK(vt_data_load("shakespeare-val", NULL, &a));
    char hex[65];
    vt_hex(a.hash, 32, hex);
    CHECK(a.n == 111540 && a.n_classes == 65 && !strcmp(hex, "e70b0395a651a03bda212f949630896b982e74e02067876e7a5b72915c17c5f0"),
          "shakespeare-val: %zu tokens, %u classes, hash %s", a.n, a.n_classes, hex);
    vt_data_free(&a);
}

int main(void)
{
    vt_rng rng = {vt_test_seed(0xda7a5e7)};
    const char *t = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/vt_test_data_XXXXXX", t && t[0] ? t : "/tmp");
    if (!mkdtemp(g_tmp)) {
        fprintf(stderr, "mkdtemp %s: %s\n", g_tmp, strerror(errno));
        return 1;
    }

    vt_dataset train, test, dg;
    test_text();
    test_paths();
    test_mnist(&train, &test);
    test_digits(&dg);
    test_subsets(&test, &dg);
    test_raw_vs_gz(&test, &dg);
    test_hostile_idx(&rng);
    test_mutations(&rng);
    test_hostile_csv();
    test_cifar();

    printf("dataset hashes: mnist-train %s\n                mnist-test  %s\n                digits      %s\n",
           hexs(train.hash), hexs(test.hash), hexs(dg.hash));
    vt_data_free(&train);
    vt_data_free(&test);
    vt_data_free(&dg);
    cleanup();
    return vt_test_finish("test_data");
}
