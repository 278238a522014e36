/* vt_data_file.c - data sets from the user's files: a safetensors file (x, y), a NumPy .npy pair,
 * any file of bytes as characters; the checked safetensors reader (also `trainer train --init`).
 * See vt_data.h and docs/data.md "Data sets from your files". Every byte is checked; every error
 * names the file and the byte offset concerned. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_data.h"
#include "vt_data_int.h"

#define PATH_MAX_LEN 4096

/* ---------------------------------------------------------------- safetensors */

static const struct {
    const char *name;
    uint32_t size;
} ST_DTYPES[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
    {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8},
};

void vt_st_free(vt_st_file *f)
{
    if (!f) return;
    for (size_t i = 0; f->t && i < f->n; i++) free(f->t[i].name);
    free(f->t);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

const vt_st_entry *vt_st_find(const vt_st_file *f, const char *name)
{
    for (size_t i = 0; f && i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

static int cmp_entry(const void *a, const void *b)
{
    const vt_st_entry *x = *(const vt_st_entry *const *)a, *y = *(const vt_st_entry *const *)b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->count * x->esize < y->count * y->esize ? -1 : x->count * x->esize > y->count * y->esize;
}

/* A non-negative JSON integer (jansson's json_int_t is 64-bit signed). */
static int json_u64(json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

/* One tensor entry of the header: {"dtype", "shape", "data_offsets"} and nothing else. */
static vt_err st_entry(const char *path, const char *name, json_t *v, uint64_t hl, uint64_t data_len, vt_st_entry *t)
{
    VT_RETURN_ERROR_IF(!name[0], VT_ERR_FORMAT, "%s: the header (offset 8) names a tensor with an empty name", path);
    VT_RETURN_ERROR_IF(!json_is_object(v), VT_ERR_FORMAT, "%s: header (offset 8): tensor '%s' is not a JSON object",
                       path, name);
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"), *of = json_object_get(v, "data_offsets");
    VT_RETURN_ERROR_IF(!dt || !sh || !of || json_object_size(v) != 3, VT_ERR_FORMAT,
                       "%s: header (offset 8): tensor '%s' must have exactly the keys dtype, shape and data_offsets",
                       path, name);
    VT_RETURN_ERROR_IF(!json_is_string(dt), VT_ERR_FORMAT, "%s: header (offset 8): tensor '%s': dtype is not a string",
                       path, name);
    const char *ds = json_string_value(dt);
    t->esize = 0;
    for (size_t i = 0; i < sizeof ST_DTYPES / sizeof ST_DTYPES[0]; i++)
        if (strcmp(ds, ST_DTYPES[i].name) == 0) t->esize = ST_DTYPES[i].size, snprintf(t->dtype, sizeof t->dtype, "%s", ds);
    VT_RETURN_ERROR_IF(!t->esize, VT_ERR_FORMAT, "%s: header (offset 8): tensor '%s': unknown dtype \"%.16s\"", path,
                       name, ds);
    VT_RETURN_ERROR_IF(!json_is_array(sh) || json_array_size(sh) > 8, VT_ERR_FORMAT,
                       "%s: header (offset 8): tensor '%s': shape is not an array of at most 8 dimensions", path, name);
    t->rank = (uint32_t)json_array_size(sh);
    t->count = 1;
    for (uint32_t k = 0; k < t->rank; k++) {
        uint64_t dim;
        VT_RETURN_ERROR_IF(!json_u64(json_array_get(sh, k), &dim), VT_ERR_FORMAT,
                           "%s: header (offset 8): tensor '%s': dimension %u is not a non-negative integer", path, name,
                           k);
        t->shape[k] = dim;
        VT_RETURN_ERROR_IF(dim && t->count > ((uint64_t)1 << 62) / dim, VT_ERR_FORMAT,
                           "%s: header (offset 8): tensor '%s': its shape holds more elements than any file", path,
                           name);
        t->count *= dim;
    }
    /* the byte size too (else count * esize wraps modulo 2^64: [2^61] F64 would claim 0 bytes) */
    VT_RETURN_ERROR_IF(t->count > ((uint64_t)1 << 62) / t->esize, VT_ERR_FORMAT,
                       "%s: header (offset 8): tensor '%s': its shape holds more bytes than any file", path, name);
    uint64_t b, e;
    VT_RETURN_ERROR_IF(!json_is_array(of) || json_array_size(of) != 2 || !json_u64(json_array_get(of, 0), &b) ||
                           !json_u64(json_array_get(of, 1), &e) || b > e,
                       VT_ERR_FORMAT,
                       "%s: header (offset 8): tensor '%s': data_offsets is not [BEGIN, END] with 0 <= BEGIN <= END",
                       path, name);
    VT_RETURN_ERROR_IF(e > data_len, VT_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets [%llu, %llu] end past the data section (file offsets %llu.., the "
                       "file has %llu bytes: truncated, or the header lies)",
                       path, name, (unsigned long long)b, (unsigned long long)e, (unsigned long long)(8 + hl),
                       (unsigned long long)(8 + hl + data_len));
    VT_RETURN_ERROR_IF(e - b != t->count * t->esize, VT_ERR_FORMAT,
                       "%s: tensor '%s' (offset %llu): %s with shape of %llu elements is %llu bytes, but data_offsets "
                       "[%llu, %llu] give %llu",
                       path, name, (unsigned long long)(8 + hl + b), t->dtype, (unsigned long long)t->count,
                       (unsigned long long)(t->count * t->esize), (unsigned long long)b, (unsigned long long)e,
                       (unsigned long long)(e - b));
    t->off = 8 + hl + b;
    t->name = strdup(name);
    VT_RETURN_ERROR_IF(!t->name, VT_ERR_NOMEM, "%s: out of memory", path);
    return VT_OK;
}

/* The header (bytes 8 .. 8 + hl) into f->t; the tensors must tile the data section. */
static vt_err st_parse(vt_st_file *f, const char *path, uint64_t hl)
{
    const uint8_t *h = f->bytes + 8;
    uint64_t data_len = f->len - 8 - hl;
    VT_RETURN_ERROR_IF(hl == 0 || h[0] != '{', VT_ERR_FORMAT,
                       "%s: the header at offset 8 does not begin with '{' (not a safetensors file?)", path);
    VT_RETURN_ERROR_IF(memchr(h, 0, (size_t)hl) != NULL, VT_ERR_FORMAT, "%s: a NUL byte in the header at offset %llu",
                       path, (unsigned long long)(8 + (const uint8_t *)memchr(h, 0, (size_t)hl) - h));
    json_error_t je;
    json_t *root = json_loadb((const char *)h, (size_t)hl, JSON_REJECT_DUPLICATES, &je);
    VT_RETURN_ERROR_IF(!root, VT_ERR_FORMAT, "%s: the header is not valid JSON at offset %llu: %s", path,
                       (unsigned long long)(8 + (je.position > 0 ? (uint64_t)je.position : 0)), je.text);
    vt_err e = VT_OK;
    if (!json_is_object(root)) e = vt_set_error(VT_ERR_FORMAT, "%s: the header at offset 8 is not a JSON object", path);
    size_t n = e ? 0 : json_object_size(root);
    if (!e && n > 1000000) e = vt_set_error(VT_ERR_LIMIT, "%s: the header names %zu tensors, the limit is 10^6", path, n);
    if (!e && !(f->t = calloc(n ? n : 1, sizeof *f->t))) e = vt_set_error(VT_ERR_NOMEM, "%s: out of memory", path);
    const char *key;
    json_t *v;
    if (!e) json_object_foreach(root, key, v)
        {
            if (strcmp(key, "__metadata__") == 0) {
                const char *mk;
                json_t *mv;
                if (!json_is_object(v)) {
                    e = vt_set_error(VT_ERR_FORMAT, "%s: header (offset 8): __metadata__ is not an object", path);
                    break;
                }
                json_object_foreach(v, mk, mv) if (!json_is_string(mv))
                {
                    e = vt_set_error(VT_ERR_FORMAT, "%s: header (offset 8): __metadata__ \"%.64s\" is not a string",
                                     path, mk);
                    break;
                }
                if (e) break;
                continue;
            }
            if ((e = st_entry(path, key, v, hl, data_len, &f->t[f->n]))) break;
            f->n++;
        }
    json_decref(root);
    if (e) return e;
    /* the tensors tile the data section: sorted by offset, each begins where the one before ends */
    const vt_st_entry **s = malloc((f->n ? f->n : 1) * sizeof *s);
    VT_RETURN_ERROR_IF(!s, VT_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < f->n; i++) s[i] = &f->t[i];
    qsort(s, f->n, sizeof *s, cmp_entry);
    uint64_t at = 8 + hl;
    for (size_t i = 0; i < f->n && !e; i++) {
        if (s[i]->off != at)
            e = vt_set_error(VT_ERR_FORMAT, "%s: tensor '%s' begins at offset %llu, but %s ends at %llu (%s: the header lies)",
                             path, s[i]->name, (unsigned long long)s[i]->off,
                             i ? "the tensor before it" : "the header", (unsigned long long)at,
                             s[i]->off < at ? "overlapping data" : "a gap");
        at = s[i]->off + s[i]->count * s[i]->esize;
    }
    free(s);
    if (e) return e;
    VT_RETURN_ERROR_IF(at != f->len, VT_ERR_FORMAT,
                       "%s: the tensors end at offset %llu, the file at %llu (%llu bytes no tensor covers)", path,
                       (unsigned long long)at, (unsigned long long)f->len, (unsigned long long)(f->len - at));
    for (size_t i = 0; i < f->n; i++) f->t[i].data = f->bytes + f->t[i].off;
    return VT_OK;
}

vt_err vt_st_read(const char *path, vt_st_file *f)
{
    VT_RETURN_ERROR_IF(!f, VT_ERR_ARG, "vt_st_read: NULL argument");
    memset(f, 0, sizeof *f);
    VT_RETURN_ERROR_IF(!path, VT_ERR_ARG, "vt_st_read: NULL path");
    snprintf(f->path, sizeof f->path, "%s", path);
    VT_FORWARD_IF_ERROR(vti_data_read_whole(path, VT_DATA_FILE_MAX_BYTES, &f->bytes, &f->len, f->sha256));
    vt_err e = VT_OK;
    if (f->len < 8)
        e = vt_set_error(VT_ERR_FORMAT, "%s: %zu bytes: truncated before the 8-byte header length at offset 0", path,
                         f->len);
    uint64_t hl = e ? 0 : vt_get_u64le(f->bytes);
    if (!e && hl > VT_DATA_ST_MAX_HEADER)
        e = vt_set_error(VT_ERR_LIMIT, "%s: the header length at offset 0 is %llu bytes, over the limit of %llu", path,
                         (unsigned long long)hl, (unsigned long long)VT_DATA_ST_MAX_HEADER);
    if (!e && hl > f->len - 8)
        e = vt_set_error(VT_ERR_FORMAT,
                         "%s: the header length at offset 0 is %llu bytes, but only %zu follow (truncated, or not a "
                         "safetensors file)",
                         path, (unsigned long long)hl, f->len - 8);
    if (!e) e = st_parse(f, path, hl);
    if (e) vt_st_free(f);
    return e;
}

/* ---------------------------------------------------------------- arrays -> dataset */

typedef struct {
    const char *path;
    const uint8_t *data;
    uint64_t off;      /* file offset of data[0] */
    int is_f32;        /* features: 1 float32, 0 uint8; labels: the element size is esize */
    uint32_t esize;
    int is_signed;
    uint32_t rank;
    uint64_t shape[8];
} arr;

/* total float32 values (little-endian, from file offset off) into v bit for bit, each finite (what names
 * value i % per of example i / per) */
static vt_err read_f32(const char *path, const uint8_t *data, uint64_t off, size_t total, size_t per, const char *what,
                       float *v)
{
    for (size_t i = 0; i < total; i++) {
        uint32_t b = vt_get_u32le(data + 4 * i);
        memcpy(&v[i], &b, 4);
        VT_RETURN_ERROR_IF(!isfinite(v[i]), VT_ERR_FORMAT,
                           "%s: value %zu of example %zu (offset %llu) is %s: the %s must be finite", path, i % per,
                           i / per, (unsigned long long)(off + 4 * i), isnan(v[i]) ? "NaN" : "infinite", what);
    }
    return VT_OK;
}

/* x [N, ...] (F32 or U8) and y [N] (integers) into a version-2 dataset named name; y of float32, [N] or
 * [N, K], into the float targets of a version-3 one (docs/data.md "Float targets") */
static vt_err from_arrays(const arr *x, const arr *y, const char *name, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(x->rank < 2 || x->rank > 4, VT_ERR_FORMAT,
                       "%s: the features (offset %llu) have rank %u: expected [N, D], [N, H, W] or [N, C, H, W]", x->path,
                       (unsigned long long)x->off, x->rank);
    VT_RETURN_ERROR_IF(!y->is_f32 && y->rank != 1, VT_ERR_FORMAT, "%s: the labels (offset %llu) have rank %u: expected [N]",
                       y->path, (unsigned long long)y->off, y->rank);
    VT_RETURN_ERROR_IF(y->is_f32 && (y->rank < 1 || y->rank > 2 || (y->rank == 2 && y->shape[1] == 0)), VT_ERR_FORMAT,
                       "%s: the float targets (offset %llu) have rank %u%s: expected [N] or [N, K], K >= 1", y->path,
                       (unsigned long long)y->off, y->rank, y->rank == 2 ? " and K = 0" : "");
    uint64_t n = x->shape[0];
    VT_RETURN_ERROR_IF(n == 0, VT_ERR_FORMAT, "%s: 0 examples (N = 0 in the features' shape)", x->path);
    VT_RETURN_ERROR_IF(y->shape[0] != n, VT_ERR_FORMAT, "%s: %llu examples, but the labels (%s) are %llu", x->path,
                       (unsigned long long)n, y->path, (unsigned long long)y->shape[0]);
    uint64_t d = 1;
    for (uint32_t k = 1; k < x->rank; k++) {
        VT_RETURN_ERROR_IF(x->shape[k] == 0, VT_ERR_FORMAT, "%s: the features' dimension %u is 0", x->path, k);
        VT_RETURN_ERROR_IF(x->shape[k] > UINT32_MAX || d * x->shape[k] > UINT32_MAX, VT_ERR_LIMIT,
                           "%s: more than 2^32 values per example", x->path);
        d *= x->shape[k];
    }
    VT_RETURN_ERROR_IF(n > VT_DATA_MAX_VALUES / d, VT_ERR_LIMIT, "%s: %llu x %llu values exceed the limit of 2^31",
                       x->path, (unsigned long long)n, (unsigned long long)d);
    size_t total = (size_t)(n * d);
    /* float targets: K per example (rank 1: one), as many values as the features at most */
    const uint64_t kt = !y->is_f32 ? 0 : y->rank == 2 ? y->shape[1] : 1;
    VT_RETURN_ERROR_IF(kt > UINT32_MAX || (kt && n > VT_DATA_MAX_VALUES / kt), VT_ERR_LIMIT,
                       "%s: %llu x %llu float targets exceed the limit of 2^31", y->path, (unsigned long long)n,
                       (unsigned long long)kt);
    uint8_t *yl = calloc((size_t)n, 1);
    float *yt = kt ? malloc((size_t)(n * kt) * sizeof(float)) : NULL;
    void *xv = malloc(x->is_f32 ? total * sizeof(float) : total);
    vt_err e = !yl || !xv || (kt && !yt) ? vt_set_error(VT_ERR_NOMEM, "%s: out of memory", x->path) : VT_OK;
    uint32_t maxl = 0;
    if (!e && kt) e = read_f32(y->path, y->data, y->off, (size_t)(n * kt), (size_t)kt, "float targets", yt);
    for (uint64_t i = 0; !e && !kt && i < n; i++) { /* labels: integers 0..255 */
        const uint8_t *p = y->data + i * y->esize;
        int64_t v = 0;
        if (y->esize == 1) v = p[0];
        else if (y->esize == 4) v = (int32_t)vt_get_u32le(p);
        else v = (int64_t)vt_get_u64le(p);
        if (v < 0 || v > 255)
            e = vt_set_error(VT_ERR_FORMAT, "%s: label %lld of example %llu (offset %llu) is not in 0..255", y->path,
                             (long long)v, (unsigned long long)i, (unsigned long long)(y->off + i * y->esize));
        else {
            yl[i] = (uint8_t)v;
            if ((uint32_t)v > maxl) maxl = (uint32_t)v;
        }
    }
    if (!e && x->is_f32) /* float32 features: finite, kept bit for bit */
        e = read_f32(x->path, x->data, x->off, total, (size_t)d, "features", xv);
    else if (!e)
        memcpy(xv, x->data, total);
    if (e) {
        free(yl);
        free(yt);
        free(xv);
        return e;
    }
    memset(ds, 0, sizeof *ds);
    snprintf(ds->name, sizeof ds->name, "%s", name);
    ds->n = (size_t)n;
    ds->d = (uint32_t)d;
    ds->channels = x->rank == 4 ? (uint32_t)x->shape[1] : 1;
    ds->rows = x->rank == 2 ? 1 : (uint32_t)x->shape[x->rank - 2];
    ds->cols = (uint32_t)x->shape[x->rank - 1];
    ds->n_classes = kt ? 0 : maxl + 1; /* float targets: no classes */
    ds->y = yl;
    ds->yt = yt, ds->k_targets = (uint32_t)kt;
    if (x->is_f32) {
        ds->xf = xv;
        ds->x_max = 0;
    } else {
        ds->x = xv;
        ds->x_max = 255;
        for (unsigned v = 0; v < 256; v++) ds->lut[v] = (float)((double)v / 255.0);
    }
    ds->hash_version = kt ? 3 : 2;
    ds->y_off = y->off, ds->y_size = kt ? 0 : y->esize;
    snprintf(ds->y_file, sizeof ds->y_file, "%s", y->path);
    ds->n_src = 1;
    e = vt_data_hash(ds, ds->hash);
    if (e) vt_data_free(ds);
    return e;
}

vt_err vt_data_load_safetensors(const char *path, const char *name, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_safetensors: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!path, VT_ERR_ARG, "vt_data_load_safetensors: NULL path");
    VT_FORWARD_IF_ERROR(vti_data_check_name(name));
    vt_st_file f;
    VT_FORWARD_IF_ERROR(vt_st_read(path, &f));
    const vt_st_entry *tx = vt_st_find(&f, "x"), *ty = vt_st_find(&f, "y");
    vt_err e = VT_OK;
    if (!tx || !ty)
        e = vt_set_error(VT_ERR_FORMAT, "%s: no tensor \"%s\" (a data set is a tensor \"x\" [N, ...] of F32 or U8 and a "
                         "tensor \"y\": [N] of U8, I32 or I64 labels, or [N] or [N, K] of F32 targets)", path,
                         !tx ? "x" : "y");
    else if (strcmp(tx->dtype, "F32") && strcmp(tx->dtype, "U8"))
        e = vt_set_error(VT_ERR_FORMAT, "%s: tensor 'x' (offset %llu) has dtype %s: expected F32 or U8", path,
                         (unsigned long long)tx->off, tx->dtype);
    else if (strcmp(ty->dtype, "U8") && strcmp(ty->dtype, "I32") && strcmp(ty->dtype, "I64") && strcmp(ty->dtype, "F32"))
        e = vt_set_error(VT_ERR_FORMAT,
                         "%s: tensor 'y' (offset %llu) has dtype %s: expected U8, I32 or I64 labels or F32 targets",
                         path, (unsigned long long)ty->off, ty->dtype);
    if (!e) {
        arr x = {path, tx->data, tx->off, strcmp(tx->dtype, "F32") == 0, tx->esize, 0, tx->rank, {0}};
        arr y = {path, ty->data, ty->off, strcmp(ty->dtype, "F32") == 0, ty->esize, 1, ty->rank, {0}};
        memcpy(x.shape, tx->shape, sizeof x.shape);
        memcpy(y.shape, ty->shape, sizeof y.shape);
        e = from_arrays(&x, &y, name, ds);
    }
    if (!e) memcpy(ds->src_sha256[0], f.sha256, VT_HASH_LEN), ds->load_bytes = 2 * f.len;
    vt_st_free(&f);
    return e;
}

/* ---------------------------------------------------------------- .npy */

typedef struct {
    uint8_t *bytes;
    size_t len;
    uint8_t sha[VT_HASH_LEN];
    arr a;
    char descr[16];
} npy;

static void skip_ws(const char *h, size_t n, size_t *p)
{
    while (*p < n && (h[*p] == ' ' || h[*p] == '\t')) (*p)++;
}

/* After an item: ',' consumed (1: another item may follow), or the closing character, not consumed
 * (0); -1 for anything else. */
static int npy_sep(const char *h, size_t n, size_t *p, char close)
{
    skip_ws(h, n, p);
    if (*p < n && h[*p] == ',') {
        (*p)++;
        return 1;
    }
    return *p < n && h[*p] == close ? 0 : -1;
}

/* The header dict {'descr': '<f4', 'fortran_order': False, 'shape': (N, D), } of h[0..n). */
static vt_err npy_dict(const char *path, const char *h, size_t n, uint64_t hoff, npy *f)
{
    size_t p = 0;
    int have[3] = {0, 0, 0}, fortran = 0;
#define NPY_BAD(what) VT_RETURN_ERROR(VT_ERR_FORMAT, "%s: header at offset %llu: %s", path, (unsigned long long)(hoff + p), what)
    skip_ws(h, n, &p);
    if (p >= n || h[p] != '{') NPY_BAD("expected '{'");
    p++;
    for (;;) {
        skip_ws(h, n, &p);
        if (p < n && h[p] == '}') break;
        if (p >= n || (h[p] != '\'' && h[p] != '"')) NPY_BAD("expected a quoted key or '}'");
        char q = h[p++], key[16];
        size_t k = 0;
        while (p < n && h[p] != q && k < sizeof key - 1) key[k++] = h[p++];
        key[k] = 0;
        if (p >= n || h[p] != q) NPY_BAD("unterminated or unknown key");
        p++;
        skip_ws(h, n, &p);
        if (p >= n || h[p] != ':') NPY_BAD("expected ':'");
        p++;
        skip_ws(h, n, &p);
        int which = strcmp(key, "descr") == 0 ? 0 : strcmp(key, "fortran_order") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2 : -1;
        if (which < 0) NPY_BAD("unknown key (expected descr, fortran_order, shape)");
        if (have[which]) NPY_BAD("duplicate key");
        have[which] = 1;
        if (which == 0) {
            if (p >= n || (h[p] != '\'' && h[p] != '"')) NPY_BAD("descr is not a quoted string");
            char dq = h[p++];
            size_t j = 0;
            while (p < n && h[p] != dq && j < sizeof f->descr - 1) f->descr[j++] = h[p++];
            f->descr[j] = 0;
            if (p >= n || h[p] != dq) NPY_BAD("descr is not a short quoted string");
            p++;
        } else if (which == 1) {
            if (n - p >= 4 && memcmp(h + p, "True", 4) == 0) fortran = 1, p += 4;
            else if (n - p >= 5 && memcmp(h + p, "False", 5) == 0) p += 5;
            else NPY_BAD("fortran_order is not True or False");
        } else {
            if (p >= n || h[p] != '(') NPY_BAD("shape is not a tuple");
            p++;
            f->a.rank = 0;
            for (;;) {
                skip_ws(h, n, &p);
                if (p < n && h[p] == ')') break;
                if (p >= n || h[p] < '0' || h[p] > '9') NPY_BAD("expected a dimension (a non-negative integer)");
                uint64_t v = 0;
                while (p < n && h[p] >= '0' && h[p] <= '9') {
                    if (v > ((uint64_t)1 << 40)) NPY_BAD("dimension too large");
                    v = 10 * v + (uint64_t)(h[p++] - '0');
                }
                if (f->a.rank == 8) NPY_BAD("more than 8 dimensions");
                f->a.shape[f->a.rank++] = v;
                int more = npy_sep(h, n, &p, ')');
                if (more < 0) NPY_BAD("expected ',' or ')' in the shape");
                if (!more) break;
            }
            p++;
        }
        int more = npy_sep(h, n, &p, '}');
        if (more < 0) NPY_BAD("expected ',' or '}'");
        if (!more) break;
    }
    p++;
    while (p < n && (h[p] == ' ' || h[p] == '\n' || h[p] == '\t')) p++;
    if (p != n) NPY_BAD("bytes after the header's dict");
    if (!have[0] || !have[1] || !have[2]) NPY_BAD("the dict lacks descr, fortran_order or shape");
    if (fortran && f->a.rank > 1) NPY_BAD("fortran_order True: save the array in C order");
#undef NPY_BAD
    return VT_OK;
}

static vt_err npy_read(const char *path, npy *f)
{
    memset(f, 0, sizeof *f);
    VT_FORWARD_IF_ERROR(vti_data_read_whole(path, VT_DATA_FILE_MAX_BYTES, &f->bytes, &f->len, f->sha));
    const uint8_t *b = f->bytes;
    VT_RETURN_ERROR_IF(f->len < 10, VT_ERR_FORMAT, "%s: %zu bytes: truncated before the end of the .npy preamble (10 bytes)",
                       path, f->len);
    VT_RETURN_ERROR_IF(memcmp(b, "\x93NUMPY", 6) != 0, VT_ERR_FORMAT,
                       "%s: no .npy magic \\x93NUMPY at offset 0 (not a NumPy .npy file)", path);
    VT_RETURN_ERROR_IF(b[6] < 1 || b[6] > 3, VT_ERR_FORMAT, "%s: .npy format version %u.%u at offset 6: expected 1, 2 or 3",
                       path, b[6], b[7]);
    size_t hoff = b[6] == 1 ? 10 : 12;
    VT_RETURN_ERROR_IF(f->len < hoff, VT_ERR_FORMAT, "%s: truncated in the header length at offset 8", path);
    uint64_t hl = b[6] == 1 ? (uint64_t)(b[8] | (b[9] << 8)) : vt_get_u32le(b + 8);
    VT_RETURN_ERROR_IF(hl > f->len - hoff, VT_ERR_FORMAT,
                       "%s: the header length at offset 8 is %llu bytes, only %zu follow (truncated)", path,
                       (unsigned long long)hl, f->len - hoff);
    VT_RETURN_ERROR_IF(hl == 0 || b[hoff + hl - 1] != '\n', VT_ERR_FORMAT,
                       "%s: the header (offset %zu) does not end in a newline", path, hoff);
    for (uint64_t i = 0; i < hl; i++)
        VT_RETURN_ERROR_IF(b[hoff + i] < 0x20 && b[hoff + i] != '\n' && b[hoff + i] != '\t', VT_ERR_FORMAT,
                           "%s: a control byte 0x%02x in the header at offset %llu", path, b[hoff + i],
                           (unsigned long long)(hoff + i));
    VT_FORWARD_IF_ERROR(npy_dict(path, (const char *)b + hoff, (size_t)hl, hoff, f));
    const char *d = f->descr;
    arr *a = &f->a;
    a->path = path;
    a->off = hoff + hl;
    a->data = b + a->off;
    if (strcmp(d, "<f4") == 0) a->is_f32 = 1, a->esize = 4;
    else if (strcmp(d, "|u1") == 0 || strcmp(d, "<u1") == 0 || strcmp(d, "u1") == 0) a->esize = 1;
    else if (strcmp(d, "<i4") == 0) a->esize = 4, a->is_signed = 1;
    else if (strcmp(d, "<i8") == 0) a->esize = 8, a->is_signed = 1;
    else
        VT_RETURN_ERROR(VT_ERR_FORMAT, "%s: dtype '%s' in the header at offset %zu: expected '<f4' or '|u1' (features), "
                        "'|u1', '<i4' or '<i8' (labels), little-endian", path, d, hoff);
    uint64_t count = 1;
    for (uint32_t k = 0; k < a->rank; k++) {
        VT_RETURN_ERROR_IF(a->shape[k] && count > ((uint64_t)1 << 60) / a->shape[k], VT_ERR_FORMAT,
                           "%s: the shape in the header holds more elements than any file", path);
        count *= a->shape[k];
    }
    uint64_t want = count * a->esize, have = f->len - a->off;
    VT_RETURN_ERROR_IF(have < want, VT_ERR_FORMAT,
                       "%s: truncated: the header implies %llu bytes of data after offset %llu, only %llu follow", path,
                       (unsigned long long)want, (unsigned long long)a->off, (unsigned long long)have);
    VT_RETURN_ERROR_IF(have > want, VT_ERR_FORMAT, "%s: %llu extra bytes after the %llu-byte data at offset %llu", path,
                       (unsigned long long)(have - want), (unsigned long long)want, (unsigned long long)a->off);
    return VT_OK;
}

vt_err vt_data_load_npy(const char *x_path, const char *y_path, const char *name, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_npy: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!x_path || !y_path, VT_ERR_ARG, "vt_data_load_npy: NULL path");
    VT_FORWARD_IF_ERROR(vti_data_check_name(name));
    npy x, y;
    memset(&y, 0, sizeof y);
    vt_err e = npy_read(x_path, &x);
    if (!e) e = npy_read(y_path, &y);
    if (!e && x.a.esize != (x.a.is_f32 ? 4u : 1u))
        e = vt_set_error(VT_ERR_FORMAT, "%s: the features have dtype '%s': expected '<f4' or '|u1'", x_path, x.descr);
    if (!e) e = from_arrays(&x.a, &y.a, name, ds);
    if (!e) {
        memcpy(ds->src_sha256[0], x.sha, VT_HASH_LEN);
        memcpy(ds->src_sha256[1], y.sha, VT_HASH_LEN);
        ds->n_src = 2;
        ds->load_bytes = 2 * (x.len + y.len);
    }
    free(x.bytes);
    free(y.bytes);
    return e;
}

/* ---------------------------------------------------------------- specs */

static const char *const PREFIXES[] = {"safetensors:", "npy:", "text:", "text-val:", "file:"};

int vt_data_is_file_spec(const char *spec)
{
    for (size_t i = 0; spec && i < sizeof PREFIXES / sizeof PREFIXES[0]; i++)
        if (strncmp(spec, PREFIXES[i], strlen(PREFIXES[i])) == 0) return 1;
    return 0;
}

/* path as given when absolute; else under root (the argument, else $VT_DATA_DIR) or the current directory */
static vt_err resolve(const char *spec, const char *p, size_t len, const char *root, char *out, size_t cap)
{
    VT_RETURN_ERROR_IF(len == 0, VT_ERR_ARG, "dataset spec \"%s\": an empty path", spec);
    const char *env = getenv("VT_DATA_DIR");
    const char *base = p[0] == '/' ? NULL : root && root[0] ? root : env && env[0] ? env : NULL;
    int k = base ? snprintf(out, cap, "%s/%.*s", base, (int)len, p) : snprintf(out, cap, "%.*s", (int)len, p);
    VT_RETURN_ERROR_IF(k < 0 || (size_t)k >= cap, VT_ERR_ARG, "dataset spec \"%s\": the path is too long", spec);
    return VT_OK;
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
    size_t k = strlen(suffix);
    return len >= k && memcmp(s + len - k, suffix, k) == 0;
}

vt_err vt_data_load_file(const char *spec, const char *root, vt_dataset *ds)
{
    VT_RETURN_ERROR_IF(!ds, VT_ERR_ARG, "vt_data_load_file: NULL dataset");
    memset(ds, 0, sizeof *ds);
    VT_RETURN_ERROR_IF(!spec || !vt_data_is_file_spec(spec), VT_ERR_ARG, "vt_data_load_file: not a file spec");
    const char *colon = strchr(spec, ':'), *rest = colon + 1;
    size_t plen = (size_t)(colon - spec), len = strlen(rest);
    char kind[16];
    snprintf(kind, sizeof kind, "%.*s", (int)plen, spec);
    /* ":N" at the end: the first N examples */
    size_t first = 0;
    const char *last = strrchr(rest, ':');
    if (last && last[1]) {
        const char *q = last + 1;
        while (*q >= '0' && *q <= '9') q++;
        if (!*q) {
            for (q = last + 1; *q; q++) {
                VT_RETURN_ERROR_IF(first > (SIZE_MAX - 9) / 10, VT_ERR_ARG, "dataset spec \"%s\": count too large", spec);
                first = 10 * first + (size_t)(*q - '0');
            }
            VT_RETURN_ERROR_IF(first == 0, VT_ERR_ARG, "dataset spec \"%s\": count 0", spec);
            len = (size_t)(last - rest);
        }
    }
    const char *comma = memchr(rest, ',', len);
    if (strcmp(kind, "file") == 0) { /* by the name */
        if (comma && ends_with(rest, (size_t)(comma - rest), ".npy") && ends_with(rest, len, ".npy"))
            snprintf(kind, sizeof kind, "npy");
        else if (ends_with(rest, len, ".safetensors"))
            snprintf(kind, sizeof kind, "safetensors");
        else if (ends_with(rest, len, ".npy"))
            VT_RETURN_ERROR(VT_ERR_ARG, "dataset spec \"%s\": a .npy data set is a pair: file:X.npy,Y.npy (or npy:X.npy,Y.npy)",
                            spec);
        else
            snprintf(kind, sizeof kind, "text");
    }
    char p1[PATH_MAX_LEN], p2[PATH_MAX_LEN];
    vt_dataset full;
    vt_err e;
    if (strcmp(kind, "npy") == 0) {
        VT_RETURN_ERROR_IF(!comma || memchr(comma + 1, ',', len - (size_t)(comma + 1 - rest)), VT_ERR_ARG,
                           "dataset spec \"%s\": expected npy:X.npy,Y.npy (two paths, one comma)", spec);
        VT_FORWARD_IF_ERROR(resolve(spec, rest, (size_t)(comma - rest), root, p1, sizeof p1));
        VT_FORWARD_IF_ERROR(resolve(spec, comma + 1, len - (size_t)(comma + 1 - rest), root, p2, sizeof p2));
        e = vt_data_load_npy(p1, p2, "npy", &full);
    } else {
        VT_FORWARD_IF_ERROR(resolve(spec, rest, len, root, p1, sizeof p1));
        if (strcmp(kind, "safetensors") == 0) {
            e = vt_data_load_safetensors(p1, "safetensors", &full);
        } else { /* text: the vocabulary bound into the hash (version 2) */
            int val = strcmp(kind, "text-val") == 0;
            e = vt_data_load_text(p1, val ? "text-val" : "text", val, &full);
            if (!e) {
                full.hash_version = 2;
                full.load_bytes = 3 * full.n;
                e = vt_data_hash(&full, full.hash);
                if (e) vt_data_free(&full);
            }
        }
    }
    VT_FORWARD_IF_ERROR(e);
    if (!first || first == full.n) {
        *ds = full;
        return VT_OK;
    }
    if (first > full.n) {
        size_t have = full.n;
        vt_data_free(&full);
        VT_RETURN_ERROR(VT_ERR_ARG, "dataset spec \"%s\": the file has only %zu examples", spec, have);
    }
    size_t lb = full.load_bytes;
    e = vt_data_subset(&full, first, ds);
    vt_data_free(&full);
    if (!e) ds->load_bytes = lb + ds->n * ((size_t)ds->d * (ds->xf ? 4 : 1) + 1);
    return e;
}

vt_err vt_data_check_labels(const vt_dataset *ds, uint32_t classes)
{
    VT_RETURN_ERROR_IF(!ds || !ds->y, VT_ERR_ARG, "vt_data_check_labels: dataset is not loaded");
    for (size_t i = 0; i < ds->n; i++) {
        if (ds->y[i] < classes) continue;
        if (ds->y_size)
            VT_RETURN_ERROR(VT_ERR_ARG, "%s: label %u of example %zu (offset %llu) is not a class of the model (0..%u)",
                            ds->y_file, ds->y[i], i, (unsigned long long)(ds->y_off + i * ds->y_size), classes - 1);
        VT_RETURN_ERROR(VT_ERR_ARG, "%s: label %u of example %zu is not a class of the model (0..%u)", ds->name, ds->y[i],
                        i, classes - 1);
    }
    return VT_OK;
}
