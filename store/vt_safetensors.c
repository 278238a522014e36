/* vt_safetensors.c - the safetensors writer (vt_safetensors.h). Every argument is checked and
 * the header built (jansson) before a file is created; the tensors are then streamed into
 * path.tmp through a small little-endian conversion buffer, so an export holds no second copy
 * of them in memory. */
#include "vt_safetensors.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_debug.h"
#include "vt_file_int.h"

#define ST_MAX_HEADER ((size_t)100000000)   /* safetensors readers refuse a longer header */
#define ST_MAX_BYTES ((uint64_t)INT64_MAX)  /* sizes and offsets are JSON integers (json_int_t) */
#define ST_CHUNK 65536                      /* bytes converted at a time */

static const struct {
    const char *name;
    unsigned size;
} DTYPES[] = {
    [VT_ST_F32] = {"F32", 4},
    [VT_ST_F64] = {"F64", 8},
    [VT_ST_U8] = {"U8", 1},
    [VT_ST_I32] = {"I32", 4},
    [VT_ST_I64] = {"I64", 8},
};

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. */
static int utf8_valid(const char *str)
{
    static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned c = *s++;
        if (c < 0x80) continue;
        int k = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
        if (k == 0 || c > 0xF4) return 0;
        uint32_t cp = c & (0x3Fu >> k);
        for (int j = 0; j < k; j++, s++) {
            if ((*s & 0xC0) != 0x80) return 0; /* also the terminating NUL */
            cp = (cp << 6) | (*s & 0x3Fu);
        }
        if (cp < min_cp[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    }
    return 1;
}

/* Elements of a checked tensor. */
static uint64_t elements(const vt_st_tensor *t)
{
    uint64_t count = 1;
    for (uint32_t d = 0; d < t->rank; d++) count *= t->shape[d];
    return count;
}

static vt_err check_tensor(const vt_st_tensor *t, size_t i, uint64_t *bytes)
{
    VT_RETURN_ERROR_IF(!t->name || !*t->name, VT_ERR_ARG, "safetensors: tensor %zu has an empty name", i);
    VT_RETURN_ERROR_IF(!utf8_valid(t->name), VT_ERR_ARG, "safetensors: the name of tensor %zu is not valid UTF-8", i);
    VT_RETURN_ERROR_IF(strcmp(t->name, "__metadata__") == 0, VT_ERR_ARG,
                       "safetensors: tensor %zu: the name \"__metadata__\" is reserved for the metadata", i);
    VT_RETURN_ERROR_IF((unsigned)t->dtype >= sizeof DTYPES / sizeof DTYPES[0], VT_ERR_ARG,
                       "safetensors: tensor '%s': unknown dtype %d", t->name, (int)t->dtype);
    VT_RETURN_ERROR_IF(t->rank > 4, VT_ERR_ARG, "safetensors: tensor '%s': rank %u, at most 4", t->name, t->rank);
    VT_RETURN_ERROR_IF(!t->data, VT_ERR_ARG, "safetensors: tensor '%s' has no data", t->name);
    uint64_t size = DTYPES[t->dtype].size, max = ST_MAX_BYTES / size, count = 1;
    if (max > SIZE_MAX / size) max = SIZE_MAX / size;
    for (uint32_t d = 0; d < t->rank; d++) {
        VT_RETURN_ERROR_IF(t->shape[d] == 0, VT_ERR_ARG, "safetensors: tensor '%s' has zero size (dimension %u is 0)",
                           t->name, d);
        VT_RETURN_ERROR_IF(t->shape[d] > max / count, VT_ERR_LIMIT, "safetensors: tensor '%s' is too large",
                           t->name);
        count *= t->shape[d];
    }
    *bytes = count * size;
    return VT_OK;
}

/* {"dtype":..,"shape":[..],"data_offsets":[begin,end]} added to root under the tensor's name
 * (0 on success; every reference is released either way). */
static int add_tensor(json_t *root, const vt_st_tensor *t, uint64_t begin, uint64_t end)
{
    json_t *info = json_object(), *shape = json_array(), *offsets = json_array();
    int bad = json_object_set_new(info, "dtype", json_string(DTYPES[t->dtype].name));
    for (uint32_t d = 0; d < t->rank; d++) bad |= json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
    bad |= json_object_set_new(info, "shape", shape);
    bad |= json_array_append_new(offsets, json_integer((json_int_t)begin));
    bad |= json_array_append_new(offsets, json_integer((json_int_t)end));
    bad |= json_object_set_new(info, "data_offsets", offsets);
    if (bad) {
        json_decref(info);
        return -1;
    }
    return json_object_set_new(root, t->name, info);
}

static vt_err add_metadata(json_t *root, const char *const *kv, size_t n_meta)
{
    json_t *meta = json_object();
    VT_RETURN_ERROR_IF(!meta, VT_ERR_NOMEM, "safetensors: out of memory");
    vt_err e = VT_OK;
    for (size_t j = 0; j < n_meta && !e; j++) {
        const char *key = kv[2 * j], *value = kv[2 * j + 1];
        if (!key || !value)
            e = vt_set_error(VT_ERR_ARG, "safetensors: metadata pair %zu has no %s", j, key ? "value" : "key");
        else if (!utf8_valid(key) || !utf8_valid(value))
            e = vt_set_error(VT_ERR_ARG, "safetensors: metadata pair %zu is not valid UTF-8", j);
        else if (json_object_get(meta, key))
            e = vt_set_error(VT_ERR_ARG, "safetensors: duplicate metadata key '%s'", key);
        else if (json_object_set_new(meta, key, json_string(value)))
            e = vt_set_error(VT_ERR_NOMEM, "safetensors: out of memory");
    }
    if (e) {
        json_decref(meta);
        return e;
    }
    VT_RETURN_ERROR_IF(json_object_set_new(root, "__metadata__", meta), VT_ERR_NOMEM, "safetensors: out of memory");
    return VT_OK;
}

/* The header JSON (malloc'd), every argument checked. */
static vt_err build_header(const vt_st_tensor *t, size_t n, const char *const *kv, size_t n_meta, char **out)
{
    json_t *root = json_object();
    VT_RETURN_ERROR_IF(!root, VT_ERR_NOMEM, "safetensors: out of memory");
    vt_err e = VT_OK;
    uint64_t offset = 0;
    for (size_t i = 0; i < n && !e; i++) {
        uint64_t bytes = 0;
        if ((e = check_tensor(&t[i], i, &bytes))) break;
        if (json_object_get(root, t[i].name))
            e = vt_set_error(VT_ERR_ARG, "safetensors: duplicate tensor name '%s'", t[i].name);
        else if (bytes > ST_MAX_BYTES - offset || bytes > SIZE_MAX - offset)
            e = vt_set_error(VT_ERR_LIMIT, "safetensors: the tensors exceed %llu bytes",
                             (unsigned long long)ST_MAX_BYTES);
        else if (add_tensor(root, &t[i], offset, offset + bytes))
            e = vt_set_error(VT_ERR_NOMEM, "safetensors: out of memory");
        offset += bytes;
    }
    if (!e && n_meta) e = add_metadata(root, kv, n_meta);
    if (!e && !(*out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER)))
        e = vt_set_error(VT_ERR_NOMEM, "safetensors: out of memory");
    json_decref(root);
    return e;
}

/* The tensor's elements, little-endian. */
static vt_err write_tensor(vti_dfile *d, const vt_st_tensor *t)
{
    unsigned size = DTYPES[t->dtype].size;
    VT_ASSERT(size == 1 || size == 4 || size == 8);
    uint64_t left = elements(t);
    if (size == 1) return vti_dfile_write(d, t->data, (size_t)left);
    const uint8_t *src = t->data;
    uint8_t buf[ST_CHUNK];
    while (left) {
        size_t k = left < ST_CHUNK / size ? (size_t)left : ST_CHUNK / size;
        for (size_t i = 0; i < k; i++, src += size) {
            if (size == 4) {
                uint32_t v;
                memcpy(&v, src, 4);
                vt_put_u32le(buf + 4 * i, v);
            } else {
                uint64_t v;
                memcpy(&v, src, 8);
                vt_put_u64le(buf + 8 * i, v);
            }
        }
        VT_ASSERT(k >= 1 && k * size <= sizeof buf);
        VT_FORWARD_IF_ERROR(vti_dfile_write(d, buf, k * size));
        left -= k;
    }
    return VT_OK;
}

vt_err vt_safetensors_write(const char *path, const vt_st_tensor *t, size_t n, const char *const *meta_kv,
                            size_t n_meta)
{
    VT_RETURN_ERROR_IF(!path || !*path || (!t && n) || (!meta_kv && n_meta), VT_ERR_ARG,
                       "vt_safetensors_write: invalid argument");
    char *header = NULL;
    VT_FORWARD_IF_ERROR(build_header(t, n, meta_kv, n_meta, &header));
    size_t len = strlen(header), padded = len + (8 - len % 8) % 8; /* 8 + padded: a multiple of 8 */
    VT_ASSERT(padded % 8 == 0 && padded >= len && padded - len < 8);
    if (padded > ST_MAX_HEADER) {
        free(header);
        VT_RETURN_ERROR(VT_ERR_LIMIT, "safetensors: a header of %zu bytes exceeds the readers' limit of %zu", padded,
                        ST_MAX_HEADER);
    }
    uint8_t n8[8];
    vt_put_u64le(n8, (uint64_t)padded);
    vti_dfile d;
    vt_err e = vti_dfile_open(&d, path, 0);
    if (e) {
        free(header);
        return e;
    }
    e = vti_dfile_write(&d, n8, 8);
    if (!e) e = vti_dfile_write(&d, header, len);
    if (!e) e = vti_dfile_write(&d, "       ", padded - len);
    for (size_t i = 0; i < n && !e; i++) e = write_tensor(&d, &t[i]);
#if VT_DEBUG >= 1
    if (!e) { /* the file is as long as the header's data_offsets say */
        uint64_t want = 8 + (uint64_t)padded;
        for (size_t i = 0; i < n; i++) want += elements(&t[i]) * DTYPES[t[i].dtype].size;
        VT_ASSERT(ftello(d.f) == (off_t)want);
    }
#endif
    free(header);
    if (e) {
        vti_dfile_abort(&d);
        return e;
    }
    return vti_dfile_commit(&d);
}
