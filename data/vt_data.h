/* vt_data.h - datasets in memory: loaders for MNIST (IDX) and the UCI digits CSV,
 * the canonical dataset hash, subsets, and deterministic FP32 preprocessing.
 *
 * Storage design (chosen to keep memory low): a dataset keeps its feature values as the
 * raw bytes it was loaded from (u8, n*d row-major: MNIST train is 47 MB instead of 188 MB
 * as FP32) and converts to FP32 only when a row or a batch is asked for. The conversion is
 * one fixed formula, the same for every dataset,
 *
 *     value(v) = (float)((double)v / (double)x_max)      x_max = 255 (MNIST), 16 (digits)
 *
 * (one IEEE double division, then one rounding to float; exact for x_max = 16). It is
 * tabulated once per dataset in ds->lut[256], so a batch conversion is a table lookup and
 * gives bit-identical results to evaluating the formula.
 *
 * Dataset hash: SHA-256 over the canonical byte string described in docs/data.md (magic
 * "VTDS", version 1, name, shape, n_classes, x_max, then the raw u8 features and the
 * labels). It depends only on the decoded content, never on whether the files were gzip.
 *
 * Loaders never trust header counts: every size is checked against limits and against the
 * bytes actually present; the decompressed payload must have exactly the size its header
 * implies. Errors: VT_ERR_IO (missing/unreadable file), VT_ERR_FORMAT (bad content,
 * truncated or corrupt gzip, trailing bytes), VT_ERR_LIMIT (sizes beyond the limits below),
 * VT_ERR_MISMATCH (vt_data_load only: a built-in dataset's payload hash differs from the
 * pinned one), VT_ERR_ARG, VT_ERR_NOMEM. Every message names the file concerned.
 */
#ifndef VT_DATA_H
#define VT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"

#define VT_DATA_NAME_MAX 63                    /* name: 1..63 printable ASCII characters */
#define VT_DATA_IDX_MAX_DIM 4096u              /* IDX rows and cols: 1..4096 each */
#define VT_DATA_MAX_VALUES (1ull << 31)        /* n*d at most 2^31 */
#define VT_DATA_CSV_MAX_BYTES (64u << 20)      /* decompressed CSV at most 64 MiB */
#define VT_DATA_HASH_VERSION 1u
#define VT_DATA_CIFAR_RECORD 3073u             /* CIFAR-10 binary: label byte, then 3 x 32 x 32 */
#define VT_DATA_CIFAR_FEATURES 3072u
#define VT_DATA_CIFAR_MAX_RECORDS 60000u       /* a CIFAR file holds at most 60000 records */

typedef struct {
    char name[VT_DATA_NAME_MAX + 1]; /* e.g. "mnist-train", "mnist-test", "digits", "digits[0:100]" */
    size_t n;                         /* examples */
    uint32_t d;                       /* features per example (= rows * cols) */
    uint32_t channels;                /* image planes: 1 (MNIST, digits), 3 (CIFAR-10: R, G, B) */
    uint32_t rows, cols;              /* image shape: 28x28 (MNIST), 8x8 (digits), 32x32 (CIFAR-10);
                                       * d = channels * rows * cols, features channel-major */
    uint32_t n_classes;               /* labels are 0..n_classes-1 (10 for both) */
    uint32_t x_max;                   /* raw values are 0..x_max; 255 MNIST, 16 digits */
    uint8_t *x;                       /* n*d raw feature values, row-major */
    uint8_t *y;                       /* n labels */
    float lut[256];                   /* lut[v] = (float)((double)v / x_max); 0 above x_max */
    uint8_t hash[VT_HASH_LEN];        /* dataset hash of the canonical bytes */
    int n_src;                        /* number of source files hashed below (0 for a subset) */
    /* text datasets (vt_data_load_text): x holds one token id per example (d = 1; y the same ids),
     * n_classes is the vocabulary's size and chars[id] the byte of token id; 0 for the others */
    uint32_t text;
    uint8_t chars[256];
    uint8_t src_sha256[2][VT_HASH_LEN]; /* SHA-256 of each decompressed source payload:
                                         * MNIST [0] images, [1] labels; digits [0] the CSV */
    size_t load_bytes;                /* vt_data_load: the bytes loading held at its peak (the decoded
                                       * payload of the whole file, the dataset, a subset's copy); 0
                                       * from the other loaders */
    /* data sets from the user's files (vt_data_load_file, docs/data.md "Data sets from your files") */
    float *xf;                        /* float32 features (n*d, row-major, the file's values bit for bit);
                                       * x is NULL then and lut unused. NULL for u8 data sets */
    uint32_t hash_version;            /* 0 or 1: the canonical hash of version 1; 2: version 2 (user files) */
    uint64_t y_off;                   /* user files: the byte offset of the labels in y_file, */
    uint32_t y_size;                  /* the size of one label there (1, 4 or 8 bytes; 0: not a user file) */
    char y_file[256];                 /* the labels' file (truncated for messages) */
    /* float targets (regression, multi-label; docs/data.md "Float targets"): a user's label file of
     * dtype float32, [N] or [N, K]. yt holds n*k_targets values, row-major, the file's bits; y is then
     * n zero bytes that no loader hands out (LOAD_BATCH refuses the data set), hash version 3 */
    float *yt;                        /* NULL: class labels */
    uint32_t k_targets;               /* targets per example (0: class labels) */
} vt_dataset;

/* ---------------------------------------------------------------- paths */

/* Data root directory into out: root when non-NULL and non-empty, else $VT_DATA_DIR when
 * set and non-empty, else the repository's data/ directory (compile-time VT_SOURCE_DIR). */
vt_err vt_data_root(const char *root, char *out, size_t cap) VT_WARN_UNUSED;

/* Directory of a dataset by name: "mnist" (also "mnist-train", "mnist-test", "mnist-t10k")
 * -> <root>/mnist, "digits" -> <root>/digits. root as for vt_data_root. Fails with
 * VT_ERR_ARG for an unknown name and VT_ERR_IO when the directory does not exist. */
vt_err vt_data_resolve(const char *name, const char *root, char *out, size_t cap) VT_WARN_UNUSED;

/* ---------------------------------------------------------------- loaders
 * On success *ds owns its memory (release with vt_data_free); on failure *ds is zeroed.
 * Each file may be raw or gzip (detected by the magic bytes 1f 8b). */

/* MNIST-style IDX pair: images (magic 0x00000803, n x rows x cols u8) and labels (magic
 * 0x00000801, n u8 < 10). Any name (1..63 printable ASCII). */
vt_err vt_data_load_mnist(const char *images_path, const char *labels_path, const char *name,
                          vt_dataset *ds) VT_WARN_UNUSED;

/* The MNIST split in a directory: split "train" reads train-images-idx3-ubyte and
 * train-labels-idx1-ubyte, split "test" (alias "t10k") the t10k-* pair; each file raw or
 * with ".gz" appended (raw preferred when both exist). name NULL -> "mnist-train" /
 * "mnist-test". Train and test are separate datasets with separate hashes. */
vt_err vt_data_load_mnist_dir(const char *dir, const char *split, const char *name,
                              vt_dataset *ds) VT_WARN_UNUSED;

/* The scikit-learn digits CSV (raw or .gz): every line is 64 integers 0..16 and a label
 * 0..9, comma-separated, written as plain decimals ("0" or no leading zero, no sign, no
 * spaces); "\n" or "\r\n" line ends, final newline optional; no header, no empty lines.
 * Shape 8x8, x_max 16, n_classes 10. */
vt_err vt_data_load_digits_csv(const char *path, const char *name, vt_dataset *ds) VT_WARN_UNUSED;

/* A CIFAR-10 binary file (raw or .gz): records of 3073 bytes, a label 0..9 then the red, green
 * and blue 32x32 planes (row-major); no header. The payload must be a whole, non-zero number of
 * records (at most VT_DATA_CIFAR_MAX_RECORDS) and every label a class; a bad record is named by
 * its index and offset. Shape 3x32x32 (d = 3072, channel-major as stored), x_max 255. */
vt_err vt_data_load_cifar(const char *path, const char *name, vt_dataset *ds) VT_WARN_UNUSED;

/* A text file (raw or .gz, at most 64 MiB, not empty) as a character-level token stream: the
 * vocabulary is the sorted set of the bytes of the WHOLE file (so both splits share it), token id i
 * is the i-th smallest byte; split 0 is the first floor(0.9 n) bytes (training), split 1 the rest
 * (validation). */
vt_err vt_data_load_text(const char *path, const char *name, int split, vt_dataset *ds) VT_WARN_UNUSED;

/* Built-in datasets by spec "NAME" or "NAME:N" (first N examples), NAME one of
 * "mnist-train", "mnist-test" (alias "mnist-t10k"), "digits", "cifar10-train" (4000 images),
 * "cifar10-test" (1000), "shakespeare-train", "shakespeare-val" (tiny-shakespeare, 90% / 10%);
 * root as for vt_data_root.
 * Also checks each decompressed source payload against its pinned SHA-256 (see
 * data/README.md) and fails with VT_ERR_MISMATCH when it differs. */
vt_err vt_data_load(const char *spec, const char *root, vt_dataset *ds) VT_WARN_UNUSED;

/* ---------------------------------------------------------------- the user's files
 * Specs (vt_data_load accepts them too; docs/data.md "Data sets from your files"):
 *   safetensors:PATH       a safetensors file with a tensor "x" (F32 or U8, [N, D], [N, H, W] or
 *                          [N, C, H, W]) and a tensor "y" (U8, I32 or I64, [N], labels 0..255)
 *   npy:XPATH,YPATH        the same as a NumPy .npy pair (x: <f4 or |u1; y: |u1, <i4 or <i8)
 *   text:PATH              any file of bytes as characters: the first 90% (vocabulary: the whole
 *   text-val:PATH          file's distinct bytes), or the last 10%
 *   file:PATH              by the name: PATH ending in .safetensors as safetensors:, two .npy paths
 *                          "X.npy,Y.npy" as npy:, anything else as text:
 * each optionally followed by ":N" (the first N examples). A relative PATH is taken from the data
 * directory when one is given (root, else $VT_DATA_DIR), else from the current directory.
 * Every byte is checked; an error names the file and the byte offset. U8 features convert as
 * v / 255 (x_max 255); F32 features are used as they are (NaN and infinities refused). */
#define VT_DATA_FILE_MAX_BYTES ((size_t)1 << 33) /* a safetensors or .npy file: at most 8 GiB */
#define VT_DATA_ST_MAX_HEADER ((uint64_t)100000000) /* a safetensors header: at most 10^8 bytes */

/* 1 when spec names a user's file (one of the prefixes above). */
int vt_data_is_file_spec(const char *spec);
/* Loads a user's file by spec (as above); root as for vt_data_root, but see "relative PATH". */
vt_err vt_data_load_file(const char *spec, const char *root, vt_dataset *ds) VT_WARN_UNUSED;
/* The loaders behind it (paths used as given). name: the data set's name (hashed). */
vt_err vt_data_load_safetensors(const char *path, const char *name, vt_dataset *ds) VT_WARN_UNUSED;
vt_err vt_data_load_npy(const char *x_path, const char *y_path, const char *name, vt_dataset *ds) VT_WARN_UNUSED;

/* The first label >= classes, as an error naming the file, the example and the label's offset
 * (VT_ERR_ARG: the data set does not fit a model of that many classes); VT_OK when all fit. */
vt_err vt_data_check_labels(const vt_dataset *ds, uint32_t classes) VT_WARN_UNUSED;

/* A safetensors file read whole and checked (the reader behind safetensors: data sets and
 * `trainer train --init`): the header's JSON (jansson) is an object of tensors {"dtype", "shape",
 * "data_offsets"} and an optional "__metadata__" object of strings; every tensor's byte size is its
 * shape's times its dtype's, and the tensors tile the data section exactly (no gap, no overlap,
 * nothing after). Errors (VT_ERR_FORMAT, VT_ERR_IO, VT_ERR_LIMIT) name the file and the offset. */
typedef struct {
    char *name;
    char dtype[8];      /* "F32", "U8", "I64", ... as in the header */
    uint32_t esize;     /* bytes per element */
    uint32_t rank;
    uint64_t shape[8];
    uint64_t count;     /* elements */
    uint64_t off;       /* the tensor's first byte: an offset in the file (and in bytes) */
    const uint8_t *data;
} vt_st_entry;
typedef struct {
    char path[256];     /* for messages (truncated) */
    uint8_t *bytes;     /* the whole file */
    size_t len;
    uint8_t sha256[VT_HASH_LEN]; /* SHA-256 of the file */
    size_t n;
    vt_st_entry *t;     /* in the header's order */
} vt_st_file;
vt_err vt_st_read(const char *path, vt_st_file *f) VT_WARN_UNUSED;
/* The tensor named name, or NULL. */
const vt_st_entry *vt_st_find(const vt_st_file *f, const char *name);
void vt_st_free(vt_st_file *f);

/* Releases the memory and zeroes *ds (safe on a zeroed dataset). */
void vt_data_free(vt_dataset *ds);

/* ---------------------------------------------------------------- subsets */

/* dst = examples [start, start+count) of src, a new dataset (copied) named
 * "<src name>[start:start+count]" with its own hash; the whole range gives a copy with the
 * same name and hash. count >= 1. dst must not be src. */
vt_err vt_data_slice(const vt_dataset *src, size_t start, size_t count, vt_dataset *dst) VT_WARN_UNUSED;

/* The first n examples: vt_data_slice(src, 0, n, dst). */
vt_err vt_data_subset(const vt_dataset *src, size_t n, vt_dataset *dst) VT_WARN_UNUSED;

/* ---------------------------------------------------------------- FP32 on demand */

/* out[0..d) = FP32 features of example i. */
vt_err vt_data_row(const vt_dataset *ds, size_t i, float *out) VT_WARN_UNUSED;

/* Gathers m examples idx[0..m) (e.g. a shuffled batch): x[j*d + k] = FP32 feature k of
 * example idx[j]; y[j] = its label (y may be NULL). */
vt_err vt_data_batch(const vt_dataset *ds, const size_t *idx, size_t m, float *x,
                     uint8_t *y) VT_WARN_UNUSED;

/* The float targets of the same m examples: t[j*k + c] = target c of example idx[j], k = ds->k_targets
 * (VT_ERR_ARG when the data set has none). */
vt_err vt_data_batch_targets(const vt_dataset *ds, const size_t *idx, size_t m, float *t) VT_WARN_UNUSED;

/* vt_data_batch with the FP32 values widened to FP64 (exactly): the plain FP64 baseline's loader. */
vt_err vt_data_batch_f64(const vt_dataset *ds, const size_t *idx, size_t m, double *x,
                         uint8_t *y) VT_WARN_UNUSED;

/* The whole dataset as FP32 (n*d floats, 4*n*d bytes) in a new malloc'd array (free()). */
vt_err vt_data_to_f32(const vt_dataset *ds, float **out) VT_WARN_UNUSED;

/* ---------------------------------------------------------------- hashing */

/* Recomputes the dataset hash of *ds (the loaders store it in ds->hash). */
vt_err vt_data_hash(const vt_dataset *ds, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

#endif
