/* vt_export.h - `trainer export`: the parameters (and buffers) of a committed step of a run, in
 * safetensors, or its inference graph in ONNX (run/vt_onnx.h), once the step's state is shown to
 * be the committed one. */
#ifndef VT_EXPORT_H
#define VT_EXPORT_H

#include <stdint.h>

#include "../common/vt_error.h"

typedef enum { VT_EXPORT_SAFETENSORS = 0, VT_EXPORT_ONNX = 1 } vt_export_format;
/* The safetensors file's names and shapes: the program's (the default: what `trainer recipe
 * --program` lists, a linear weight [in, out]) or a PyTorch state_dict's (nn.Linear [out, in],
 * nn.Conv2d [C_out, C_in, k, k], batch norm's num_batches_tracked; docs/format.md "Export
 * (safetensors, --layout torch)"). */
typedef enum { VT_LAYOUT_PROJECT = 0, VT_LAYOUT_TORCH = 1 } vt_export_layout;

typedef struct {
    const char *run_dir;
    const char *out_path;
    const char *pubkey_path; /* optional: the trainer key the commitment must be signed by */
    uint64_t step;           /* with has_step: the step to export (0: the initial state) */
    int has_step;            /* 0: the last step */
    int with_optimizer;      /* also the optimiser's state (safetensors only) */
    vt_export_format format;
    vt_export_layout layout; /* safetensors only */
    const char *data_root;   /* a GPT's --layout torch or ONNX: where its text is (the vocabulary); NULL: the default */
} vt_export_opts;

typedef struct {
    uint64_t step;
    uint32_t tensors;        /* safetensors: tensors written; ONNX: initializers (the graph's state tensors) */
    uint64_t bytes;          /* the state tensors' bytes */
    uint8_t state_hash[32];
    uint8_t root[32];
    uint8_t public_key[32]; /* the key that signed the commitment (checked against --pubkey when given) */
} vt_export_result;

/* Checks, before writing anything: the commitment's signature (and key, when given), that the run's
 * leaves give its signed root, that the step's leaf is its committed (state hash, log hash), and
 * that the step's checkpoint hashes to that state hash. Then writes the state's parameter and
 * buffer tensors, by their program names and shapes, with metadata (manifest hash, step, state
 * hash, root); or, with VT_EXPORT_ONNX, the model's inference graph with those tensors as
 * initializers and the run's hashes and recipe as metadata (docs/format.md "Export (ONNX)"); with
 * VT_LAYOUT_TORCH, a PyTorch state_dict of the same values (transposed or permuted, never
 * rounded) with the architecture in the metadata (a GPT's vocabulary read from its data set,
 * whose hash must be the manifest's: VT_ERR_MISMATCH otherwise, an unreadable one VT_ERR_IO).
 * Errors: VT_ERR_MISMATCH (the run does not verify), VT_ERR_ARG (the step asked for is beyond the
 * run or not one whose state the recipe commits and checkpoints), VT_ERR_FORMAT (the run lacks a
 * checkpoint its recipe promises: damaged or incomplete), VT_ERR_IO, VT_ERR_LIMIT (the model
 * exceeds the memory budget); with VT_EXPORT_ONNX also VT_ERR_ARG for --optimizer or
 * VT_LAYOUT_TORCH (before anything is checked) and VT_ERR_UNSUPPORTED in a build without ONNX (a
 * GPT run's ONNX carries its vocabulary, read from its data set as for VT_LAYOUT_TORCH). */
vt_err vt_export_run(const vt_export_opts *o, vt_export_result *res) VT_WARN_UNUSED;

#endif
