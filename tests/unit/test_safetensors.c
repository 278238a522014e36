/* test_safetensors.c - the safetensors writer (store/vt_safetensors.c): a file with tensors of
 * every dtype, laid out so that any byte-order or offset mistake shows (distinct bit patterns in
 * every element and byte, odd-sized tensors between wider ones, -0, subnormals, a NaN payload,
 * a scalar, a rank-4 tensor, non-ASCII names and metadata that needs escaping), checked byte
 * for byte by an independent reader (tests/ref/read_safetensors.py: Python's json and struct only);
 * and every refused argument: VT_ERR_ARG, and neither the file nor its temporary left behind.
 * Skipped (77) when python3 is missing. */
#include "vt_test.h"

#include <errno.h>
#include <float.h>
#include <ftw.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/vt_bytes.h"
#include "store/vt_safetensors.h"

static char g_root[256];

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Neither path nor path.tmp exists. */
static int nothing_left(const char *path)
{
    char tmp[520];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    return !exists(path) && !exists(tmp);
}

/* Bit pattern of element i of t as lowercase hex of the element's width. */
static void bits_hex(const vt_st_tensor *t, size_t i, char *out, size_t cap)
{
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case VT_ST_F32:
    case VT_ST_I32: {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        snprintf(out, cap, "%08x", (unsigned)v);
        break;
    }
    case VT_ST_F64:
    case VT_ST_I64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        snprintf(out, cap, "%016llx", (unsigned long long)v);
        break;
    }
    case VT_ST_U8:
        snprintf(out, cap, "%02x", (unsigned)p[i]);
        break;
    }
}

/* The expectation file for read_safetensors.py: metadata (NULL when n_meta = 0) and every
 * tensor's bits in the order given. */
static int write_expect(const char *path, const vt_st_tensor *t, size_t n, const char *const *kv, size_t n_meta)
{
    static const char *const names[] = {"F32", "F64", "U8", "I32", "I64"};
    json_t *root = json_object(), *list = json_array();
    json_t *meta = n_meta ? json_object() : json_null();
    for (size_t j = 0; j < n_meta; j++) json_object_set_new(meta, kv[2 * j], json_string(kv[2 * j + 1]));
    for (size_t i = 0; i < n; i++) {
        json_t *shape = json_array(), *bits = json_array();
        size_t count = 1;
        for (uint32_t d = 0; d < t[i].rank; d++) {
            json_array_append_new(shape, json_integer((json_int_t)t[i].shape[d]));
            count *= (size_t)t[i].shape[d];
        }
        for (size_t e = 0; e < count; e++) {
            char h[24];
            bits_hex(&t[i], e, h, sizeof h);
            json_array_append_new(bits, json_string(h));
        }
        json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:o}", "name", t[i].name, "dtype",
                                              names[t[i].dtype], "shape", shape, "bits", bits));
    }
    json_object_set_new(root, "metadata", meta);
    json_object_set_new(root, "tensors", list);
    int rc = json_dump_file(root, path, JSON_COMPACT);
    json_decref(root);
    return rc;
}

/* Run the independent reader on file against the expectation; its exit status. */
static int python_check(const char *file, const vt_st_tensor *t, size_t n, const char *const *kv, size_t n_meta)
{
    char expect[540], cmd[2048], dir[512];
    snprintf(expect, sizeof expect, "%s.expect.json", file);
    if (write_expect(expect, t, n, kv, n_meta) != 0) return -1;
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, "tests/unit");
    snprintf(cmd, sizeof cmd, "python3 '%s/../ref/read_safetensors.py' '%s' '%s'", dir, file, expect);
    fflush(stdout);
    int rc = system(cmd);
    return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

/* ------------------------------------------------------------------ the good file */

static float g_f32[2 * 3 * 4];
static float g_scalar = -2.75f;
static double g_f64[5];
static double g_f64b[3 * 2];
static uint8_t g_u8[3 * 7];
static int32_t g_i32[5];
static int64_t g_i64 = -0x0102030405060708LL; /* a scalar, as torch's num_batches_tracked */

static void fill(void)
{
    static const uint32_t special[] = {
        0x80000000u, /* -0 */
        0x00000001u, /* the smallest subnormal, 2^-149 */
        0x00400001u, /* a larger subnormal */
        0x807fffffu, /* the largest negative subnormal */
        0x7f7fffffu, /* FLT_MAX */
        0x7fc12345u, /* a quiet NaN with a payload */
        0xff800000u, /* -inf */
        0x3f800000u, /* 1 */
    };
    for (size_t i = 0; i < sizeof g_f32 / sizeof g_f32[0]; i++) {
        /* every byte of every element different from its neighbours' */
        uint32_t b = i < sizeof special / sizeof special[0] ? special[i] : 0x3e010203u + (uint32_t)i * 0x00010501u;
        g_f32[i] = vt_bits_f32(b);
    }
    g_f64[0] = -0.0;
    g_f64[1] = 0x1p-1074; /* the smallest subnormal */
    g_f64[2] = 1.0 / 3.0;
    g_f64[3] = -1e300;
    g_f64[4] = DBL_MAX;
    for (size_t i = 0; i < sizeof g_f64b / sizeof g_f64b[0]; i++)
        g_f64b[i] = vt_bits_f64(0x0102030405060708ull + (uint64_t)i * 0x1011121314151617ull);
    for (size_t i = 0; i < sizeof g_u8; i++) g_u8[i] = (uint8_t)(i * 37 + 1);
    g_i32[0] = -1;
    g_i32[1] = INT32_MIN;
    g_i32[2] = INT32_MAX;
    g_i32[3] = 0x01020304;
    g_i32[4] = -0x01020304;
}

static void test_good(void)
{
    fill();
    /* Order: odd-sized U8 right after the F32 block, so the I32 and F64 tensors begin at offsets
     * that are not multiples of their size. */
    const vt_st_tensor t[] = {
        {"layer0.weight", VT_ST_F32, 3, {2, 3, 4}, g_f32},
        {"bytes", VT_ST_U8, 2, {3, 7}, g_u8},
        {"index", VT_ST_I32, 4, {1, 1, 1, 5}, g_i32},
        {"f64.vector", VT_ST_F64, 1, {5}, g_f64},
        {"scalar", VT_ST_F32, 0, {0}, &g_scalar},
        {"couche.d\xc3\xa9j\xc3\xa0", VT_ST_F64, 2, {3, 2}, g_f64b}, /* "couche.déjà" */
        {"bn.num_batches_tracked", VT_ST_I64, 0, {0}, &g_i64},
    };
    const size_t n = sizeof t / sizeof t[0];
    const char *const kv[] = {"format", "vt", "step", "1000",
                              "note", "quote \" backslash \\ slash / tab \t \xe2\x82\xac"};
    char path[512];
    snprintf(path, sizeof path, "%s/good.safetensors", g_root);
    CHECK_OK(vt_safetensors_write(path, t, n, kv, 3));
    char tmp[520];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(exists(path) && !exists(tmp), "the file, not its temporary");

    /* What the C side knows without a JSON parser: the header length, its padding, the size. */
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (f) {
        uint8_t n8[8];
        CHECK(fread(n8, 1, 8, f) == 8, "header length");
        uint64_t hlen = vt_get_u64le(n8);
        CHECK((8 + hlen) % 8 == 0, "8 + N = %llu is a multiple of 8", (unsigned long long)(8 + hlen));
        char *h = malloc(hlen + 1);
        CHECK(h && fread(h, 1, hlen, f) == hlen, "header bytes");
        if (h) {
            h[hlen] = 0;
            CHECK(h[0] == '{', "the header is a JSON object");
            size_t end = strlen(h);
            while (end > 0 && h[end - 1] == ' ') end--;
            CHECK(end > 0 && h[end - 1] == '}', "only spaces after the JSON");
            CHECK(strstr(h, "\"__metadata__\":{") != NULL, "metadata present");
        }
        free(h);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        size_t data = sizeof g_f32 + sizeof g_u8 + sizeof g_i32 + sizeof g_f64 + sizeof g_scalar + sizeof g_f64b +
                      sizeof g_i64;
        CHECK(size == (long)(8 + hlen + data), "file size %ld = 8 + %llu + %zu", size, (unsigned long long)hlen,
              data);
        fclose(f);
    }
    CHECK(python_check(path, t, n, kv, 3) == 0, "the Python reader accepts %s with the values written", path);

    /* Rewriting replaces the file (and a stale temporary); no metadata: no "__metadata__". */
    FILE *stale = fopen(tmp, "wb");
    if (stale) {
        fputs("stale", stale);
        fclose(stale);
    }
    CHECK_OK(vt_safetensors_write(path, t + 1, 2, NULL, 0));
    CHECK(exists(path) && !exists(tmp), "the file, not its temporary");
    CHECK(python_check(path, t + 1, 2, NULL, 0) == 0, "the Python reader accepts the rewritten %s", path);

    /* Metadata only: a header and nothing else. */
    snprintf(path, sizeof path, "%s/meta-only.safetensors", g_root);
    CHECK_OK(vt_safetensors_write(path, NULL, 0, kv, 1));
    CHECK(python_check(path, NULL, 0, kv, 1) == 0, "the Python reader accepts %s", path);
}

/* ------------------------------------------------------------------ refused arguments */

static void refused(const char *what, const vt_st_tensor *t, size_t n, const char *const *kv, size_t n_meta,
                    vt_err want)
{
    char path[512];
    snprintf(path, sizeof path, "%s/refused.safetensors", g_root);
    vt_err e = vt_safetensors_write(path, t, n, kv, n_meta);
    CHECK(e == want, "%s: got %d (%s), expected %d", what, (int)e, vt_errmsg(), (int)want);
    CHECK(nothing_left(path), "%s: no file left behind", what);
    if (e) printf("  %s: %s\n", what, vt_errmsg());
}

static void test_refused(void)
{
    float x[4] = {1, 2, 3, 4};
    const char *const kv[] = {"a", "1", "a", "2"};
    const char *const kv_null[] = {"a", NULL};
    const char *const kv_bad[] = {"a", "\xc0\xaf"}; /* an overlong '/' */
    vt_st_tensor two[2] = {{"w", VT_ST_F32, 1, {4}, x}, {"w", VT_ST_F32, 1, {2}, x}};
    refused("duplicate names", two, 2, NULL, 0, VT_ERR_ARG);
    vt_st_tensor t = {"", VT_ST_F32, 1, {4}, x};
    refused("an empty name", &t, 1, NULL, 0, VT_ERR_ARG);
    t.name = NULL;
    refused("no name", &t, 1, NULL, 0, VT_ERR_ARG);
    t.name = "__metadata__";
    refused("the name __metadata__", &t, 1, NULL, 0, VT_ERR_ARG);
    t.name = "bad\xff";
    refused("a name that is not UTF-8", &t, 1, NULL, 0, VT_ERR_ARG);
    t.name = "surrogate\xed\xa0\x80";
    refused("a name with a UTF-16 surrogate", &t, 1, NULL, 0, VT_ERR_ARG);
    t.name = "w";
    t.rank = 5;
    refused("rank 5", &t, 1, NULL, 0, VT_ERR_ARG);
    t.rank = 2;
    t.shape[0] = 4;
    t.shape[1] = 0;
    refused("a zero-size tensor", &t, 1, NULL, 0, VT_ERR_ARG);
    t.shape[1] = 1;
    t.dtype = (vt_st_dtype)7;
    refused("an unknown dtype", &t, 1, NULL, 0, VT_ERR_ARG);
    t.dtype = VT_ST_F32;
    t.data = NULL;
    refused("no data", &t, 1, NULL, 0, VT_ERR_ARG);
    t.data = x;
    refused("no tensor array", NULL, 1, NULL, 0, VT_ERR_ARG);
    refused("a duplicate metadata key", &t, 1, kv, 2, VT_ERR_ARG);
    refused("a NULL metadata value", &t, 1, kv_null, 1, VT_ERR_ARG);
    refused("metadata that is not UTF-8", &t, 1, kv_bad, 1, VT_ERR_ARG);
    refused("no metadata array", &t, 1, NULL, 1, VT_ERR_ARG);
    t.rank = 4;
    t.shape[0] = t.shape[1] = t.shape[2] = t.shape[3] = (uint64_t)1 << 20;
    refused("2^80 elements", &t, 1, NULL, 0, VT_ERR_LIMIT);
    CHECK(vt_safetensors_write(NULL, &t, 1, NULL, 0) == VT_ERR_ARG, "no path");

    /* Failures after the temporary exists remove it: the target is a directory (rename fails),
     * and a directory that does not exist (nothing can be created). */
    char path[512];
    snprintf(path, sizeof path, "%s/a-directory", g_root);
    CHECK(mkdir(path, 0777) == 0, "mkdir %s: %s", path, strerror(errno));
    t.rank = 1;
    t.shape[0] = 4;
    vt_err e = vt_safetensors_write(path, &t, 1, NULL, 0);
    CHECK(e == VT_ERR_IO, "over a directory: %d (%s)", (int)e, vt_errmsg());
    char tmp[520];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(!exists(tmp), "over a directory: the temporary is removed");
    snprintf(path, sizeof path, "%s/missing/x.safetensors", g_root);
    e = vt_safetensors_write(path, &t, 1, NULL, 0);
    CHECK(e == VT_ERR_IO, "in a missing directory: %d (%s)", (int)e, vt_errmsg());
}

int main(void)
{
    snprintf(g_root, sizeof g_root, "%s/vt_safetensors_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_refused();
    if (system("python3 -c '' >/dev/null 2>&1") != 0) {
        printf("python3 not found: the file's bytes cannot be checked (skipped)\n");
        nftw(g_root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        return vt_test_failed ? vt_test_finish("test_safetensors") : 77;
    }
    test_good();
    int rc = vt_test_finish("test_safetensors");
    if (rc == 0) nftw(g_root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    else printf("files kept in %s\n", g_root);
    return rc;
}
