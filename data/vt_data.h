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

/* The whole dataset as FP32 (n*d floats, 4*n*d bytes) in a new malloc'd array (free()). */
vt_err vt_data_to_f32(const vt_dataset *ds, float **out) VT_WARN_UNUSED;

/* ---------------------------------------------------------------- hashing */

/* Recomputes the dataset hash of *ds (the loaders store it in ds->hash). */
vt_err vt_data_hash(const vt_dataset *ds, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

#endif
