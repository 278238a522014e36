/* vt_probe.h - the known-answer probe of the operation kinds (docs/distributed.md "Ranks agree
 * before anything is written"): every kind of ops/vt_kinds.h run on small fixed inputs, the outputs
 * of every operation hashed, so that ranks can compare what their builds compute before a
 * data-parallel run writes anything.
 *
 * The inputs are fixed: synthetic examples drawn from a constant seed (an 8 x 8 three-channel image
 * set and a text of 16 tokens, built in memory, no file read), and one step of five tiny programs -
 * the MLP with SGD and with Adam, the residual CNN in step programs 1 and 2 with its evaluation pass,
 * the GPT with dropout, clipping and AdamW and its evaluation pass - then a hand-built program of
 * the kinds no architecture uses (SUB), then the MLP with SGD once in each tensor-core arithmetic
 * model (recipe key gemm_arith), then a hand-built program of the losses and of the client models'
 * activations (vt_probe_losses_program) on a data set of float targets, then the layout moves, then a
 * client's transformer built by the graph builder (vt_probe_transformer_recipe), all in exact rounding on the
 * CPU. Exact rounding makes every output a function of those inputs alone: the same hashes on every machine, BLAS, thread count and
 * evaluation order; a build whose kinds compute other bits gives other hashes. It costs a few
 * milliseconds on one core. */
#ifndef VT_PROBE_H
#define VT_PROBE_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"
#include "../kernels/vt_kernels.h"
#include "../ops/vt_ops.h"
#include "vt_model.h"

/* The probe's own version: a change of its programs or inputs changes every hash. */
#define VT_PROBE_VERSION 1

/* one probed operation: the probe's program (vt_probe_program_name), the operation's id in it, its
 * kind and its output hash (vt_model_output_hash) */
typedef struct {
    uint8_t prog;
    uint16_t kind;
    uint32_t op;
    uint8_t h[VT_HASH_LEN];
} vt_probe_op;

typedef struct {
    /* kind[id]: SHA-256 chained over the output hashes of every probed operation of kind id in the
     * order they ran: h = SHA-256(h || output hash), h starting at 32 zero bytes; kind[0] unused */
    uint8_t kind[VT_OPK_COUNT][VT_HASH_LEN];
    uint32_t ops[VT_OPK_COUNT]; /* the operations of each kind that ran */
    vt_probe_op *seq;           /* every probed operation, in the order they ran (n_seq) */
    size_t n_seq, cap_seq;
} vt_probe;

/* Runs the probe in evaluation order `order` (the hashes do not depend on it) into *out (release
 * with vt_probe_free, also after a failure). tamper (NULL: none; tests only: a build that computes
 * other bits, tests/tools/vt_cheats.h) is called after every probed operation, before its outputs are
 * hashed, as the model's tamper hook. VT_ERR_INTERNAL naming the kind when a kind of the list runs in
 * none of the probe's programs. */
vt_err vt_probe_run(vt_order order, vt_op_hook tamper, void *tamper_ctx, vt_probe *out) VT_WARN_UNUSED;
void vt_probe_free(vt_probe *p);
/* The hand-built program of the losses the probe runs last (program "losses"): LOAD_BATCH_TARGETS
 * (x [B, K], t [B, K] from a data set of K float features and K float targets), then MSE_LOSS, MSE_BWD,
 * L1_LOSS, L1_BWD, BCE_LOSS and BCE_BWD of (x, t), then the activations of client models on x with t for
 * dY: SIGMOID, SIGMOID_BWD (of sigmoid's output), TANH, TANH_BWD (of tanh's output), LEAKY_RELU and
 * LEAKY_RELU_BWD (alpha 0.2; of x), GELU_ERF and GELU_ERF_BWD (of x); finished (vt_program_finish: its layout). Release
 * with vt_program_free, also after a failure. tests/unit/test_kinds.c checks its operations too. */
vt_err vt_probe_losses_program(vt_program *g, uint32_t B, uint32_t K) VT_WARN_UNUSED;
/* Steps 1 .. steps of the losses' program (batches of B) on a data set of n examples of K logits and K
 * float targets in [0, 1) drawn from seed (example 0's first values a logit of 40 with target 1 and one
 * of -40 with target 0, then a value equal to its target), the data order that of seed 7, in the given
 * rounding; tamper as the model's hook, after(actx, ...) after every operation (its outputs then read with
 * vt_model_tensor and the like). The probe runs it with n = 8, K = 3, B = 4 in exact rounding; the
 * known answers of tests/kat/losses.kat (tests/unit/test_kat.c) with larger sizes in both roundings. */
vt_err vt_probe_losses_run(uint32_t n, uint32_t K, uint32_t B, uint64_t seed, uint64_t steps, vt_rounding rounding,
                           vt_op_hook tamper, void *tctx, vt_op_hook after, void *actx) VT_WARN_UNUSED;
/* The hand-built program of the layout moves the probe runs after the losses (program "layouts"): an
 * state tensor x [B, C*HW] channels-first, to_channels_last into y [B*HW, C], to_channels_first of y into z
 * [B, C*HW] (z = x); finished. tests/unit/test_kinds.c checks its operations too. */
vt_err vt_probe_layouts_program(vt_program *g, uint32_t B, uint32_t HW, uint32_t C) VT_WARN_UNUSED;
/* The recipe of the probe's last program (program "transformer"): a client's graph (arch/vt_graph.h) on the
 * probe's 3 x 8 x 8 images - a 2 x 2 patch convolution of stride 2 read as a sequence of 16 rows of 8, a learned
 * position embedding (add_positions), a layer norm, q|k|v, attention of 2 heads over the whole sequence
 * (scaled_softmax), the residual, GELU's exact form, the mean over the rows, a classifier - in the recipe's canonical form (no file: a zero hash). tests/unit/test_kinds.c
 * checks its operations too. */
vt_err vt_probe_transformer_recipe(vt_recipe *r) VT_WARN_UNUSED;
/* The name of the probe's program `prog` ("mlp sgd", "resnet program 2", "sub", then the tensor-core
 * models' names for the MLP in them: "tc-bf16-sm90" ..., then "losses", "layouts", "transformer"; "?" beyond
 * them). */
const char *vt_probe_program_name(uint8_t prog);

#endif
