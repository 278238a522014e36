/* vt_recipe.h - a training recipe (what the client paid for), its JSON form and the
 * canonical manifest that the commitment signs. */
#ifndef VT_RECIPE_H
#define VT_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "../ops/vt_ops.h" /* vt_sched_kind, vt_schedule */
#include "../rounding/vt_round.h"

#define VT_MAX_LAYERS 8
#define VT_RECIPE_DATASET_MAX 511 /* the recipe key `dataset`: at most this many bytes (a user's file path) */
#define VT_RECIPE_SPEC_MAX (VT_RECIPE_DATASET_MAX + 32) /* a dataset spec: `dataset` and ":N" (vt_recipe_dataset_spec) */
#define VT_MANIFEST_FORMAT "vt-manifest-5" /* 2: the recipe key `rounding`; 3: panelled reductions;
                                              * 4: the step program (recipe key `arch`, operation ids);
                                              * 5: one log per state (vt_bound_cfg.legacy_log = 0) */
#define VT_CODE_VERSION "0.1.0"
#define VT_MODEL_GRAPH_MAX (96u << 10) /* the canonical form of a client's graph: at most this many bytes */
#define VT_PROGRAM_VERSION_MAX 3 /* the newest step program (recipe key program_version: 1 .. this) */

typedef enum { VT_ARCH_MLP = 0, VT_ARCH_RESNET = 1, VT_ARCH_GPT = 2 } vt_arch_kind;
typedef enum { VT_OPT_SGD = 0, VT_OPT_ADAM = 1, VT_OPT_ADAMW = 2 } vt_opt_kind;
/* recipe key `loss` (a client's graph only; docs/models.md): softmax cross-entropy over classes (the
 * default), mean squared error, mean absolute error, binary cross-entropy with logits (float targets) */
typedef enum { VT_LOSS_XENT = 0, VT_LOSS_MSE = 1, VT_LOSS_L1 = 2, VT_LOSS_BCE = 3, VT_LOSS_NEXT = 4 } vt_loss_kind;

typedef struct {
    vt_arch_kind arch;         /* recipe key `arch`: "mlp" (the default) or "resnet" */
    char dataset[VT_RECIPE_DATASET_MAX + 1]; /* "mnist-train", "digits", "safetensors:PATH" ... (a
                                                  * vt_data_load spec without the ":N") */
    uint64_t subset;           /* first N examples; 0 = all */
    uint32_t n_layers;         /* number of weight layers */
    uint32_t widths[VT_MAX_LAYERS + 1];
    uint32_t batch;
    uint64_t steps;
    uint64_t seed;
    vt_opt_kind optimizer;
    double lr, momentum, weight_decay, beta1, beta2, eps;
    vt_sched_kind schedule;
    uint64_t warmup, decay_every;
    double decay_factor, final_lr_factor;
    vt_bound_cfg bound;
    uint32_t image_channels, image_height, image_width; /* the input as an image (0: not given);
                                                         * C x H x W must equal the input width */
    uint32_t augment_pad;      /* random crop: pad by this many zero pixels, crop back (0: none) */
    uint32_t augment_flip;     /* 1: random horizontal flip */
    /* arch "resnet" (arch/vt_arch_resnet.c): the input is the image; layers = [C*H*W, classes] */
    uint32_t resnet_width;     /* channels of the stem and the first stage (doubled per stage) */
    uint32_t resnet_stages;    /* stages; every stage after the first halves the resolution */
    uint32_t resnet_blocks;    /* basic blocks per stage */
    uint32_t resnet_pool;      /* 1: a 2 x 2 max pool after the stem */
    double bn_momentum, bn_eps; /* batch normalisation: running-statistics momentum, epsilon */
    /* arch "gpt" (arch/vt_arch_gpt.c): a character-level transformer on a text dataset */
    uint32_t gpt_layers, gpt_heads, gpt_width, gpt_context, gpt_vocab, gpt_tie;
    double dropout;            /* dropout probability after the embedding, attention and MLP (0: none) */
    double clip_norm;          /* clip the gradient to this global norm (0: no clipping) */
    double ln_eps;             /* layer normalisation epsilon */
    uint32_t checkpoint_every; /* K: a checkpoint every K steps (and at the last step) */
    uint32_t state_hash_every; /* H: commit the state hash every H steps (and at checkpoints, last step) */
    int zstd_level;
    /* Not a recipe key: the numbering of the step program the run was recorded with. 1 for
     * manifest format 4; 0 for formats 1-3, whose step (no schedule operation, Adam's moments as
     * two operations) gave other operation ids - which only their logs name. */
    uint32_t program_version;
    /* Not a recipe key: 1 when the recipe (file, --set or manifest) named program_version; a recipe
     * that did not takes the newest program for a new run (vt_recipe_new_program) and the stored
     * run's for a resume or an audit (vt_recipe_adopt_program). */
    uint32_t program_set;
    /* Not a recipe key: the initial state came from a file (trainer train --init), whose SHA-256 the
     * manifest records as "init_sha256" (absent otherwise, so other runs keep their manifests). */
    uint32_t has_init;
    uint8_t init_sha256[32];
    /* the file is in PyTorch's layout (--init-layout torch, or its metadata vt.layout = torch:
     * run/vt_torch.h): the manifest's "init_layout": "torch" (absent for the project's layout) */
    uint32_t init_torch;
    /* recipe key gemm_arith (ops/vt_ops.h vt_gemm_arith_names): 0 "fp64" (the default: absent from
     * the recipe's JSON, so other runs keep their manifests), else a tensor-core model */
    int gemm_arith;
    /* The client's own model (docs/models.md): recipe key `model`, the ONNX file the trainer imports
     * (a path, "" for none: the built-in `arch`); not recipe keys: has_model, the file's SHA-256 and
     * the canonical form of its graph (arch/vt_graph.h), which the manifest carries ("model":
     * {"sha256", "graph"}) and every party builds the step program from. */
    char model[VT_RECIPE_DATASET_MAX + 1];
    vt_loss_kind loss;
    /* recipe key `frozen`: the parameters (by name, one per line) a client's graph does not train; recipe
     * key `trainable`: the only ones it trains (every other frozen). At most one of the two is given. */
    char frozen[VT_RECIPE_DATASET_MAX + 1];
    char trainable[VT_RECIPE_DATASET_MAX + 1];
    uint32_t has_model;
    uint8_t model_sha256[32];
    uint32_t model_graph_len;
    uint8_t model_graph[VT_MODEL_GRAPH_MAX];
} vt_recipe;

/* The default recipe: MNIST, 784-128-10 MLP, SGD with momentum (about a minute on 2 cores). */
void vt_recipe_default(vt_recipe *r);

/* Limits on a recipe file and on a manifest, checked before any JSON is parsed (a hostile file
 * costs no more than its bytes): at most VT_JSON_MAX_BYTES bytes (as the protocol's
 * VT_MSG_MANIFEST_MAX) and VT_JSON_MAX_DEPTH levels of nesting (a recipe needs 2, a manifest 3). */
#define VT_JSON_MAX_BYTES (1u << 20)
#define VT_JSON_MAX_DEPTH 16
/* VT_ERR_LIMIT naming `what` when text exceeds either limit. */
vt_err vt_json_check_limits(const char *text, size_t len, const char *what) VT_WARN_UNUSED;

/* Apply a JSON object (text) on top of *r; unknown keys, ill-typed values and texts beyond the
 * limits are the user's errors (VT_ERR_ARG with the key named). */
vt_err vt_recipe_apply_json(vt_recipe *r, const char *json_text, const char *what) VT_WARN_UNUSED;
/* Read a JSON recipe file on top of *r (at most VT_JSON_MAX_BYTES; every error VT_ERR_ARG). */
vt_err vt_recipe_load_file(vt_recipe *r, const char *path) VT_WARN_UNUSED;
/* Apply one "key=value" override (value parsed as JSON, or as a string when that fails). */
vt_err vt_recipe_set(vt_recipe *r, const char *assignment) VT_WARN_UNUSED;
/* The step program of a new run whose recipe did not name program_version (docs/format.md "Recipe"):
 * 3, the program derived from the forward graph, for arch=gpt and arch=resnet (in a tensor-core mode
 * too: its convolutions are program 1's GEMMs in the mode, ops/vt_fam_gemm.c); 1 for the MLP (its
 * program 1 is the derived one). A recipe that named it keeps it. */
void vt_recipe_new_program(vt_recipe *r);
/* A recipe that did not name program_version takes *run's (the stored run it resumes or is compared
 * with: the programs of one arch compute the same training, only the numbering differs); one that
 * named it keeps it. */
void vt_recipe_adopt_program(vt_recipe *r, const vt_recipe *run);
/* Consistency checks (layer widths, batch <= examples, finite positive lr, ...). */
vt_err vt_recipe_validate(const vt_recipe *r) VT_WARN_UNUSED;

/* The recipe against its dataset's shape, known by name for the built-in image datasets: the
 * input width and the classes (layers' first and last widths) must be the dataset's (VT_ERR_ARG
 * naming both), so that a run that would fail at its first step is refused before anything is
 * written. Unknown names and arch=gpt pass (the loader and the model check them). */
vt_err vt_recipe_check_dataset(const vt_recipe *r) VT_WARN_UNUSED;

/* 1 when the recipe trains on a text's windows: arch=gpt, or a client's language model (loss=next_token). */
int vt_recipe_is_text(const vt_recipe *r);
/* An example's input width and the output's classes: arch gpt's context and vocabulary, else the first and the
 * last of layers. */
void vt_recipe_io_widths(const vt_recipe *r, uint32_t *in, uint32_t *out);
/* A user's data set (ds->hash_version 2: vt_data_load_file) against the recipe: a text model needs a text
 * whose vocabulary fits gpt_vocab (a client's: its own) and windows of its context; the others an example of layers[0] values and every label a class
 * (the first label that is not names the file and its offset). VT_ERR_ARG. Built-in data sets pass
 * (vt_recipe_check_dataset checks them by name). */
vt_err vt_recipe_check_data(const vt_recipe *r, const vt_dataset *ds) VT_WARN_UNUSED;

/* Recipe as a JSON object text (keys sorted, compact; reals printed with 17 digits so they
 * round-trip exactly). malloc'd. */
vt_err vt_recipe_to_json(const vt_recipe *r, char **out) VT_WARN_UNUSED;
/* Field-by-field equality (reals compared by bits). */
int vt_recipe_equal(const vt_recipe *a, const vt_recipe *b);

/* Manifest: {"format","recipe","dataset_hash","code_version","backend"} canonical JSON
 * (sorted keys, compact), and "init_sha256" when r->has_init. The manifest hash is SHA-256 of these
 * exact bytes. */
vt_err vt_manifest_build(const vt_recipe *r, const uint8_t dataset_hash[32], const char *backend,
                         char **out) VT_WARN_UNUSED;
/* The same from the loaded dataset: its hash, and for a user's file (ds->hash_version 2) also
 * "dataset_shape": {"n": N, "shape": [C, H, W], "dtype": "F32"|"U8"|"text", "classes": C} (docs/format.md). */
vt_err vt_manifest_build_ds(const vt_recipe *r, const vt_dataset *ds, const char *backend, char **out) VT_WARN_UNUSED;
/* Parse manifest bytes back into a recipe (with has_init and init_sha256) and dataset hash (hostile input: VT_ERR_FORMAT, or
 * VT_ERR_LIMIT beyond the limits above; a recipe that does not validate is VT_ERR_FORMAT). */
vt_err vt_manifest_parse(const char *text, size_t len, vt_recipe *r, uint8_t dataset_hash[32]) VT_WARN_UNUSED;

/* Learning rate of step s (1-based), from basic FP64 operations only. */
double vt_recipe_lr(const vt_recipe *r, uint64_t s);
/* 1 when step s commits a state hash: every state_hash_every steps, at checkpoints
 * (every checkpoint_every steps) and at the last step; step 0 is the initial state. The one rule
 * the trainer, the auditor, the trainer's server and the arbiter share. */
int vt_recipe_has_state(const vt_recipe *r, uint64_t s);
/* 1 when step s writes a checkpoint: every checkpoint_every steps and the last step. */
int vt_recipe_has_checkpoint(const vt_recipe *r, uint64_t s);

#endif
