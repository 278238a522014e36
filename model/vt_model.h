/* vt_model.h - the interpreter of the step program: one for the trainer, the auditor and the
 * arbiter (docs/architecture.md).
 *
 * vt_model_init builds the recipe's program (ops/vt_program.h; the builder of its `arch`),
 * allocates one arena per tensor class and the scratch the operations' costs ask for, and sets
 * the state of step 0. A step runs the operations 1 .. n_ops in order; every rounded operation
 * goes through the rounding context, whose mode alone distinguishes the trainer (record) from the
 * auditor and the arbiter (replay). The arbiter executes one operation by id
 * (vt_model_exec_op) on inputs it has loaded by tensor id (vt_model_tensor_load): nothing here
 * or above knows what the operation is.
 *
 * Hooks: a caller may observe (or, in tests, tamper with) every operation's outputs - the
 * after-operation hook of vt_model_run, and the model's own `tamper` hook, which runs first
 * and stays installed for every step (tests/tools/vt_cheats.c plays cheating parties with it; no
 * production program installs one). */
#ifndef VT_MODEL_H
#define VT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"
#include "../common/vt_mem.h" /* vt_memory_available, vt_fmt_bytes */
#include "../data/vt_data.h"
#include "../backend/vt_backend.h"
#include "../kernels/vt_kernels.h"
#include "../rounding/vt_round.h"
#include "../ops/vt_ops.h"
#include "../ops/vt_program.h"
#include "../arch/vt_arch.h"

typedef struct vt_model vt_model;
typedef struct vt_sstate vt_sstate; /* the sharded optimiser state (vt_model_init_sharded) */

/* Called after each operation of a step; a non-zero return stops the step. */
typedef vt_err (*vt_op_hook)(void *ctx, vt_model *m, uint64_t step, uint32_t op_id);

/* Test hooks: how tests/tools/vt_cheats.c plays a cheating trainer or a lying auditor through the
 * production drivers (no production program sets any). after_op becomes the model's tamper hook
 * (it may change the outputs of the operation just run); after_log may change a step's log
 * after the step and before it is committed. */
typedef struct {
    vt_op_hook after_op;
    void (*after_log)(void *ctx, vt_steplog *log, uint64_t step);
    void *ctx;
    /* the tamper hook of the start-up known-answer probe's operations (model/vt_probe.h; run/'s
     * agreement of the ranks): a build that computes other bits */
    vt_op_hook probe_op;
} vt_hooks;

/* Runs m's kernels that backend be supplies (backend/vt_backend.h) on it; NULL or the CPU backend:
 * every kernel on the CPU. be must outlive its use by m. The results do not depend on it. */
void vt_model_set_backend(vt_model *m, const vt_backend *be);

/* Installs hooks->after_op (hooks may be NULL: none) as m's tamper hook. */
void vt_model_set_hooks(vt_model *m, const vt_hooks *hooks);

struct vt_model {
    vt_recipe rcp; /* the run's recipe */
    vt_program prog;
    uint8_t *arena[VT_TC_COUNT];     /* arena[VT_TC_PARAM] is the whole state (OPT, BUFFER inside) */
    float *state;                    /* the state: prog.state_floats FP32 values */
    size_t n_state;                  /* = prog.state_floats */
    uint32_t n_tensors;              /* state tensors (= prog.n_state) */
    uint32_t n_ops;                  /* = prog.n_ops */
    uint64_t step;                   /* steps completed (0 = initial state) */

    /* scratch, sized from the operations' costs */
    double *x64, *x64b, *b64, *rn, *cn;
    float *f32s;
    size_t scratch;

    /* the data order */
    size_t *batch_idx;
    uint32_t *perm;                  /* current epoch's permutation */
    uint64_t perm_epoch;             /* epoch of perm + 1 (0 = none) */
    size_t n_examples;
    const vt_dataset *ds;            /* during vt_model_run: the dataset */
    vt_rctx *rctx;                   /* during vt_model_run: the step's rounding context (for hooks) */

    vt_exec exec;
    const vt_backend *be;            /* NULL or the backend whose kernels replace the CPU's (not owned) */
    vt_op_hook tamper;               /* tests only (see above); NULL in every production program */
    void *tamper_ctx;

    /* data parallelism (vt_model_set_shard): NULL when this process holds the whole batch */
    vt_shard *shard;
    vt_shard shard_s;                /* shard points here */
    int in_step;                     /* during vt_model_run: the operations run as the shard's */
    vt_sstate *sst;                  /* sharded optimiser state (vt_model_init_sharded); NULL: this rank
                                      * holds and updates the whole state */
};

/* Builds the program of recipe rcp (its arch) over a dataset of n_examples examples, evaluating
 * reductions in `order`, and initialises the state of step 0. */
vt_err vt_model_init(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order) VT_WARN_UNUSED;
/* Data-parallel training (docs/distributed.md): m was initialised with the recipe whose batch is
 * this rank's share b = global_batch / size of comm (the state does not depend on the batch); from
 * now on each step holds the examples (global slots) rank*b .. rank*b + b - 1 of the global batch,
 * the kinds divide by the global batch's counts and key their draws by global slot, and every sum
 * over the batch is rounded across the ranks: every rank must run every step (collective), and
 * every rank's state after a step is the one-process run's. Evaluation stays local. Refused
 * (VT_ERR_ARG / VT_ERR_UNSUPPORTED): a global batch that is not size * b, rounding=log with more
 * than one rank, a backend set on m. One rank (size 1) is accepted: the one-process step. */
vt_err vt_model_set_shard(vt_model *m, vt_comm *comm, uint32_t global_batch) VT_WARN_UNUSED;
void vt_model_free(vt_model *m);

/* Sharded optimiser state (--shard-state, ZeRO-1 style; docs/distributed.md "Sharded optimiser
 * state"). vt_model_init_sharded is vt_model_init for rank r of the N ranks of comm (N > 1): the
 * parameter values, flattened in table order (state floats [0, P)), are cut into N contiguous
 * ranges, rank r's [floor(P r / N), floor(P (r + 1) / N)); in each parameter tensor the rank updates
 * the elements of that range, and of the optimiser state (velocity, exp_avg, exp_avg_sq) it holds
 * those elements alone: the memory of the optimiser state falls as 1/N (vt_model_need_sharded).
 * The state keeps its layout (m->state: the whole state's addresses, the other ranks' optimiser
 * values neither resident nor accessible). Each step runs the optimiser's operations on the rank's
 * elements, then allgathers the parameters (every rank's bits copied): every rank's parameters and
 * buffers are the unsharded step's, and each optimiser value is on the rank that owns it, the
 * unsharded value. Every rank, rank 0 included, holds only its share from the start: no function
 * here gathers the whole optimiser state anywhere. vt_model_shard_stream_out streams the whole
 * state to rank 0 (collective), vt_model_shard_stream_in from rank 0 to every rank's share
 * (collective), one optimiser tensor at a time; vt_model_state_hash needs the whole state (an
 * unsharded model); vt_model_replica_hash hashes what every rank holds alike (the parameters and
 * buffers). Refused (VT_ERR_UNSUPPORTED) where an optimiser value is not elementwise with one
 * parameter. */
vt_err vt_model_init_sharded(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order, vt_comm *comm)
    VT_WARN_UNUSED;
int vt_model_sharded(const vt_model *m);
/* Rank 0's end of a streamed whole state, in state order (the state floats 0 .. n_state-1, the
 * tensors in table order), in pieces: a sink takes n values, a source gives the next n. */
typedef vt_err (*vt_state_sink)(void *ctx, const float *v, size_t n);
typedef vt_err (*vt_state_source)(void *ctx, float *v, size_t n);
/* Collective: the whole state to rank 0 in state order, each optimiser tensor's slices gathered
 * in turn (one vt_dist_alltoallv with blocks to rank 0 only), handed to sink (NULL: none) and
 * hashed, then dropped: rank 0 holds one optimiser tensor beyond its share at a time. out: the
 * state hash, on rank 0 (the other ranks' out untouched, their sink unused). Every rank takes
 * part in every exchange whatever it ran into; the caller agrees on the outcome. */
vt_err vt_model_shard_stream_out(vt_model *m, vt_state_sink sink, void *ctx, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
/* vt_model_shard_stream_out with no sink. */
vt_err vt_model_shard_state_hash(vt_model *m, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
/* Collective: the state of `step` read by rank 0 from src in state order: the parameters and
 * buffers into rank 0's place, then broadcast; each optimiser tensor read whole and its slices
 * sent to their ranks (one vt_dist_alltoallv), rank 0 keeping its own. src is rank 0's only. */
vt_err vt_model_shard_stream_in(vt_model *m, uint64_t step, vt_state_source src, void *ctx) VT_WARN_UNUSED;
/* One process, any model: the state hash at `step` of a whole state read from src in state order
 * (pieces of 64 Ki values), nothing of it kept or changed in m (a checkpoint checked before it is
 * loaded). */
vt_err vt_model_state_hash_read(const vt_model *m, uint64_t step, vt_state_source src, void *ctx,
                                uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
/* The optimiser state's pages that are not this rank's handed back and closed (PROT_NONE: a stray
 * access faults). */
void vt_model_shard_release(vt_model *m);
vt_err vt_model_replica_hash(vt_model *m, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Memory. vt_model_init computes what it will allocate from the program before allocating any of
 * it, and refuses (allocating nothing) when that exceeds the memory budget: the process's budget
 * (vt_model_set_memory_budget; default the available memory, vt_memory_available) or the one
 * passed to vt_model_init_within. The refusal names both sizes ("the model needs 20.60 GiB ...,
 * over the memory budget of 8.00 GiB") and is the error `over` of the process's setting:
 * VT_ERR_LIMIT by default (a manifest from someone else: cannot check), VT_ERR_ARG where the
 * recipe is the user's own (trainer train). */
typedef struct {
    double arenas;     /* the tensor arenas: state, inputs, activations, gradients */
    double state;      /* of these, the state's bytes this rank holds (sharded: its optimiser values only) */
    double opt;        /* of these, the optimiser state's */
    double scratch;    /* the operations' FP64 scratch and norms (and a tensor-core mode's convolution operands) */
    double data_order; /* the batch indices and the epoch's permutation */
    double total;      /* bytes */
} vt_model_mem;
void vt_model_need(const vt_program *p, uint32_t batch, size_t n_examples, vt_model_mem *need);
/* The same for rank `rank` of `size` holding a sharded optimiser state (vt_model_init_sharded):
 * its optimiser values and the buffer of its parameters for the allgather; the one optimiser tensor
 * rank 0 streams at a time at committed states is not counted (docs/distributed.md). */
vt_err vt_model_need_sharded(const vt_program *p, uint32_t batch, size_t n_examples, int rank, int size,
                             vt_model_mem *need) VT_WARN_UNUSED;
/* VT_OK when need fits budget (0: the process's budget), else the refusal above. Under --max-memory (the
 * process's budget set, budget 0) the bytes the process has resident already (vt_memory_resident: its data,
 * an --init file's bytes, the libraries) count beside need; the default budget, the available memory, is
 * what is left beside them. */
vt_err vt_model_check_budget(const vt_model_mem *need, uint64_t budget) VT_WARN_UNUSED;
/* bytes = 0: the default. Set once at start-up (--max-memory), before any thread starts. */
void vt_model_set_memory_budget(uint64_t bytes, vt_err over);
uint64_t vt_model_memory_budget(void);
/* What the process's budget counts besides a plan: under --max-memory the bytes resident now
 * (vt_memory_resident), else 0 (the available memory is what is left beside them). */
double vt_model_memory_held(void);
/* vt_model_init against an explicit budget (0: the process's). */
vt_err vt_model_init_within(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order,
                            uint64_t budget) VT_WARN_UNUSED;

/* Runs operations 1..upto of step m->step + 1 (upto = n_ops: the whole step, after which
 * m->step is incremented), calling hook after each (may be NULL). The rounding context's step
 * must already be begun for that step. On failure the context's fault says where. */
vt_err vt_model_run(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint32_t upto, vt_op_hook hook,
                    void *hook_ctx) VT_WARN_UNUSED;
/* A whole step (vt_model_run to n_ops); *loss receives the step's loss. */
vt_err vt_model_step(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, float *loss) VT_WARN_UNUSED;
/* Executes the single operation op_id of step `step` on the current contents of its input
 * tensors (the arbiter's recomputation; ds is needed for LOAD_BATCH only). */
vt_err vt_model_exec_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t step, uint32_t op_id) VT_WARN_UNUSED;

/* Tensor t's storage (NULL for an unknown id) and its size in bytes. */
void *vt_model_tensor(vt_model *m, uint32_t t, size_t *bytes);
/* SHA-256 of tensor t's bytes (little-endian elements). */
vt_err vt_model_tensor_hash(vt_model *m, uint32_t t, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
/* An operation's output hash: its output tensor's hash when it has one output; otherwise
 * vt_output_hash_of over its outputs' tensor hashes, so that each output can be authenticated
 * on its own. */
vt_err vt_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* SHA-256("VTOH" || u32 n || the n tensor hashes); for n = 1 the tensor hash itself. */
vt_err vt_output_hash_of(uint32_t n, const uint8_t (*tensor_hashes)[VT_HASH_LEN], uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Tensors on the wire (the INPUTS message, docs/protocol.md): a tensor travels as 32-bit words -
 * an F32 element as its bits, an F64 element as two words (low half first), a U8 or I32 element
 * as its value. Words needed for tensor t (0 for an unknown id). */
size_t vt_model_tensor_words(const vt_model *m, uint32_t t);
/* Writes tensor t as vt_model_tensor_words(m, t) words (4 bytes each, host order) into words. */
void vt_model_tensor_save(vt_model *m, uint32_t t, void *words);
/* Loads tensor t from n words: VT_ERR_MISMATCH when n is not its size or an element is not a
 * value of its dtype (a U8 above 255). */
vt_err vt_model_tensor_load(vt_model *m, uint32_t t, const void *words, size_t n) VT_WARN_UNUSED;

/* State tensor hashes (n_tensors of them) and the state hash:
 * SHA-256("VTST" || u32 version 2 || u64 step || u32 n || the n tensor hashes), so that a single
 * tensor can be authenticated against a state hash. */
vt_err vt_model_tensor_hashes(vt_model *m, uint8_t (*out)[VT_HASH_LEN]) VT_WARN_UNUSED;
vt_err vt_state_hash_of(uint64_t step, uint32_t n, const uint8_t (*tensor_hashes)[VT_HASH_LEN],
                        uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
vt_err vt_model_state_hash(vt_model *m, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Replace the state with the given step's (n floats must equal n_state). */
vt_err vt_model_set_state(vt_model *m, uint64_t step, const float *state, size_t n) VT_WARN_UNUSED;

/* Name of an operation id ("fc1 forward GEMM", ...); "?" when unknown. */
const char *vt_model_op_name(const vt_model *m, uint32_t op_id);
/* 1 when operation op_id is rounded (has a log record in log rounding). */
int vt_model_op_rounded(const vt_model *m, uint32_t op_id);
/* The step's loss (after a step or its loss operation). */
float vt_model_loss(vt_model *m);

/* Accuracy of the current parameters on the first max_examples examples of ds (0 = all): the
 * program's own forward pass (operations fwd_first .. fwd_last) on batches of the evaluation
 * set, rounded to nearest without a log. For reports only. */
vt_err vt_model_accuracy(vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc) VT_WARN_UNUSED;
/* The same, and the predicted class of every example evaluated in pred[0 .. n) (NULL: none): the
 * first index of the largest probability (trainer eval --per-example). */
vt_err vt_model_predict(vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc, uint32_t *pred)
    VT_WARN_UNUSED;

/* The accuracy loop both interpreters share: over the first max_examples examples of ds (0 = all)
 * in batches of the program's batch size (the last one padded), fwd fills the input with the
 * examples idx[0..B) and runs the forward pass; prob(ctx, i) reads element i of the probabilities. */
typedef vt_err (*vt_eval_fwd)(void *ctx, const size_t *idx, size_t B);
typedef double (*vt_eval_prob)(void *ctx, size_t i);
vt_err vt_program_evaluate(const vt_program *p, const vt_dataset *ds, size_t max_examples, vt_eval_fwd fwd,
                           vt_eval_prob prob, void *ctx, double *acc) VT_WARN_UNUSED;
/* The same, with each evaluated example's predicted class in pred[i] (NULL: none). */
vt_err vt_program_evaluate_pred(const vt_program *p, const vt_dataset *ds, size_t max_examples, vt_eval_fwd fwd,
                                vt_eval_prob prob, void *ctx, double *acc, uint32_t *pred) VT_WARN_UNUSED;

/* Text models (arch gpt): the mean cross-entropy in nats per character of the evaluation pass over
 * consecutive windows of ds (window w: tokens [wT, wT + T) predicting [wT + 1, wT + T + 1)), the
 * first max_windows of them (0 = all); *positions receives the characters counted. */
vt_err vt_model_text_loss(vt_model *m, const vt_dataset *ds, size_t max_windows, double *nats,
                          size_t *positions) VT_WARN_UNUSED;
/* The same, with each counted position's predicted token (the first index of the largest
 * probability) in pred[w * T + k] (NULL: none; room for *positions = windows * T entries). */
vt_err vt_model_text_predict(vt_model *m, const vt_dataset *ds, size_t max_windows, double *nats, size_t *positions,
                             uint32_t *pred) VT_WARN_UNUSED;
/* n tokens generated after the prompt (np >= 1 token ids) into out: each from the evaluation pass
 * on the last (at most T) tokens, drawn by inverse CDF at the 24-bit uniform (seed, purpose 6, i).
 * Exact rounding throughout: the same text on every machine for the same weights and seed. */
vt_err vt_model_sample(vt_model *m, uint64_t seed, const uint8_t *prompt, size_t np, size_t n,
                       uint8_t *out) VT_WARN_UNUSED;

/* For operation kinds: the batch of step s (the data order), into m->batch_idx. */
void vt_model_batch_indices(vt_model *m, uint64_t s);

/* Element k of state tensor t at step 0 (its vt_tinit: zero, or the He-uniform FP32 draw). */
float vt_program_initial_value(const vt_program *p, uint64_t seed, uint32_t t, size_t k);
/* The program as text (tensor table and operation list; `trainer recipe --program`); malloc'd. */
vt_err vt_program_describe(const vt_program *p, char **out) VT_WARN_UNUSED;

#endif
