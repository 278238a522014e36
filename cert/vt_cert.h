/* vt_cert.h - robustness certificates of a committed MLP (docs/certify.md): sound bounds under
 * floating point (IBP, CROWN, alpha-CROWN; branch and bound on ReLU splits with beta-CROWN's
 * multipliers, cert/vt_cert_bab.c), a deterministic attack, the signed certificate file
 * (docs/format.md "Certificate") and `auditor certify` / `auditor check-certificate`.
 *
 * The network: L fully connected layers, z_k = W_k^T h_(k-1), a_k = RN32(RN32(z_k) + b_k) as the
 * project evaluates it (exact rounding), h_k = relu(a_k) for k < L, the logits a_L. Every bound here
 * holds both for that deployed network and for the real-arithmetic network on the same FP32 weights
 * (a_k = z_k + b_k), for every real input of the box, including the rounding of the bound computation
 * itself. Every loop runs in one fixed order (no BLAS): the same bits everywhere. */
#ifndef VT_CERT_H
#define VT_CERT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../dist/vt_dist.h"

#define VT_CERT_MAX_LAYERS 16
#define VT_CERT_MAX_WIDTH (1u << 20)

typedef enum { VT_CERT_IBP = 0, VT_CERT_CROWN = 1, VT_CERT_ALPHA_CROWN = 2 } vt_cert_method;

/* CROWN's and alpha-CROWN's intermediate (pre-ReLU) bounds on the layer graph (vt_cert_graph.h):
 * backward passes per value (CROWN, the default) or IBP's (CROWN-IBP). The MLP's are always CROWN's. */
typedef enum { VT_CERT_INTER_CROWN = 0, VT_CERT_INTER_IBP = 1 } vt_cert_inter;

/* VT_CERT_TIMED_OUT: certify --timeout's deadline passed (never recorded: no certificate is written) */
typedef enum { VT_CERT_VERIFIED = 0, VT_CERT_FALSIFIED = 1, VT_CERT_UNKNOWN = 2, VT_CERT_TIMED_OUT = 3 } vt_cert_answer;

/* The search settings a certificate records (fixed defaults: vt_cert_settings_default). */
typedef struct {
    vt_cert_method method;
    uint32_t alpha_iters;  /* alpha-CROWN: projected-gradient steps */
    double alpha_step;     /* first step (sign gradient), multiplied by alpha_decay after each */
    double alpha_decay;
    uint32_t attack_restarts; /* PGD: restarts (the first from the example itself) */
    uint32_t attack_iters;    /* steps per restart, step 2.5 eps / iters */
    uint64_t attack_seed;
    vt_cert_inter inter;      /* the layer graph's intermediate bounds (CROWN, alpha-CROWN); the default CROWN */
    uint32_t bab_domains;     /* > 0 (--method beta-crown, alpha-CROWN): branch and bound on a committed MLP
                               * run, at most this many subdomains bounded per example (certificate version 5) */
    uint32_t bab_branching;   /* beta-crown's choice of the split (vt_cert_branching; not recorded: the check
                               * replays the tree, whatever chose it) */
} vt_cert_settings;

/* Branch and bound's choice of the split (vt_cert_branch_pick; auditor certify --branching). */
typedef enum { VT_CERT_BRANCH_FSB = 0, VT_CERT_BRANCH_BABSR = 1 } vt_cert_branching;

void vt_cert_settings_default(vt_cert_settings *s, vt_cert_method m);
const char *vt_cert_method_name(vt_cert_method m);
const char *vt_cert_answer_name(vt_cert_answer a);

/* A network in the form the bounds read: widths n[0..L], W[k] (k = 1..L) n[k-1] x n[k] row-major
 * FP32 (the program's fc<k>.weight), b[k] n[k] FP32. Borrowed pointers. */
typedef struct {
    uint32_t L;
    uint32_t n[VT_CERT_MAX_LAYERS + 1];
    const float *W[VT_CERT_MAX_LAYERS + 1];
    const float *b[VT_CERT_MAX_LAYERS + 1];
} vt_cert_net;

typedef struct vt_cert_ctx vt_cert_ctx; /* the network in FP64 and the work space */

vt_err vt_cert_ctx_new(const vt_cert_net *net, vt_cert_ctx **out) VT_WARN_UNUSED;
void vt_cert_ctx_free(vt_cert_ctx *c);
/* The number of alpha slopes alpha-CROWN records per example: (n[L] - 1) * (n[1] + ... + n[L-1]). */
size_t vt_cert_n_alpha(const vt_cert_ctx *c);

/* The input box of an example: xl = max(0, x - eps), xu = min(1, x + eps), rounded outward. */
void vt_cert_box(const float *x, uint32_t d, double eps, double *xl, double *xu);

/* Sound lower bounds lb[j] of the margins a_L[label] - a_L[j] over the box [xl, xu] (lb[label] =
 * 0), with settings s; alpha (NULL, or vt_cert_n_alpha doubles) receives alpha-CROWN's slopes.
 * A bound that is not finite is -infinity. Also the final layer's interval [ol, ou] when not NULL. */
vt_err vt_cert_bounds(vt_cert_ctx *c, const double *xl, const double *xu, uint32_t label, const vt_cert_settings *s,
                      double *lb, double *alpha) VT_WARN_UNUSED;
/* Interval bounds [ol, ou] of the logits (deployed and real network) by the method's intermediate
 * bounds (IBP, or CROWN intersected with IBP). */
vt_err vt_cert_logit_bounds(vt_cert_ctx *c, const double *xl, const double *xu, const vt_cert_settings *s,
                            double *ol, double *ou) VT_WARN_UNUSED;

/* The spec-matrix form (VNN-LIB properties, docs/certify.md "ONNX and VNN-LIB"): sound lower bounds
 * lb[r] of C_r . a_L over the box for the m rows of C (m x n[L], row-major doubles), each the larger
 * of IBP's and (alpha-)CROWN's backward pass from C_r; alpha (NULL, or m * vt_cert_n_alpha_row
 * doubles) receives alpha-CROWN's slopes per row. A bound not finite, or one the deadline cut short,
 * is -infinity. The committed-run margins (vt_cert_bounds) are the rows e_label - e_j, computed by the
 * same code with their own IBP term (unchanged bytes). */
vt_err vt_cert_spec_bounds(vt_cert_ctx *c, const double *xl, const double *xu, const double *C, uint32_t m,
                           const vt_cert_settings *s, double *lb, double *alpha) VT_WARN_UNUSED;
size_t vt_cert_n_alpha_row(const vt_cert_ctx *c);
/* check-certificate's one pass (docs/certify.md "The certificate"): alpha (NULL: search) holds the
 * slopes of every row in vt_cert_bounds' / vt_cert_spec_bounds' layout (each in [0, 1]: the caller
 * checks them); alpha-CROWN's bounds after it take each row's slopes as they are, one backward pass a
 * row, no search (a bound is sound for any slopes in [0, 1]); the slopes returned are the given ones
 * with the stable values' replaced by CROWN's (what certify writes there). Borrowed until reset. */
void vt_cert_set_given_slopes(vt_cert_ctx *c, const double *alpha);
/* Branch and bound (docs/certify.md "Branch and bound"): the ReLU splits of a subdomain (borrowed
 * until reset; NULL / 0: the whole box). Split (layer k in 1..L-1, neuron index) active: a_k >= 0,
 * inactive: a_k <= 0 (a_k the ReLU's input, deployed and real network). The bounds after it hold over
 * the subdomain; when its splits exclude each other's bounds (an empty subdomain), vt_cert_infeasible
 * is 1 and vt_cert_bounds gives +infinity. */
typedef struct {
    uint32_t layer, index, active;
} vt_cert_split;
#define VT_CERT_MAX_SPLITS 1024u /* splits of one subdomain (the depth of branch and bound's tree) */
void vt_cert_set_splits(vt_cert_ctx *c, const vt_cert_split *s, uint32_t n);
/* beta-CROWN's multipliers of the splits (alpha-CROWN with splits set): vt_cert_bounds subtracts
 * sum_q beta_q s_q a_q (s_q = +1 active, -1 inactive) from each margin's objective in its final
 * passes (sound for any beta >= 0: the term is >= 0 on the subdomain) and searches them with the
 * slopes from 0, or, given (NULL: search), takes them as they are (check-certificate). Layout of
 * given and out (NULL: not kept): per margin row (j != label, increasing), the n splits' values. */
void vt_cert_set_split_beta(vt_cert_ctx *c, const double *given, double *out);
int vt_cert_infeasible(const vt_cert_ctx *c);
/* Branch and bound's search (docs/certify.md "Branch and bound", "What the search saves"): on, the
 * slope and multiplier steps of a row stop once its bound is > 0 (a subdomain closes or not as with
 * every step, the recorded slopes are where it stopped); the check never sets it. */
void vt_cert_set_bab_search(vt_cert_ctx *c, int on);
/* The search's test of whether a row closes with its bound lb (the larger of its backward pass's and
 * IBP's; row: its index): NULL (the default) lb > 0, a committed run's margin; a VNN-LIB property's row
 * its constant added and rounded as the property's bounds are. Borrowed until reset with NULL. */
typedef int (*vt_cert_row_closes_fn)(const void *ctx, uint32_t row, double lb);
void vt_cert_set_row_closes(vt_cert_ctx *c, vt_cert_row_closes_fn fn, const void *ctx);
/* A subdomain's bounds of hidden layers 1..upto (layer_bounds' state, after its clamps) saved to buf
 * (vt_cert_prefix_len doubles) after vt_cert_bounds / vt_cert_spec_bounds; vt_cert_set_prefix (borrowed
 * until reset with NULL) makes the next bounds take those layers from buf and apply the splits' clamps
 * of those layers again: for a child of that subdomain whose added split is in layer upto, the same
 * bits as computing them (a layer's bounds read only the splits of the layers before it). */
/* The search's warm start (borrowed until reset with NULL): alpha-CROWN's slopes start from alpha's
 * (every row's, vt_cert_n_alpha_row each; the unstable values') instead of CROWN's, the multipliers
 * from beta's (ns per row: the first ns splits', the others from 0): a parent subdomain's. */
void vt_cert_set_warm(vt_cert_ctx *c, const double *alpha, const double *beta, uint32_t ns);
/* Branch and bound's row plan for the next bounds (borrowed until reset with NULL): the n rows (the
 * alpha rows, vt_cert_bounds' margins in class order without the label, or vt_cert_spec_bounds' rows)
 * bounded in order[] (each row once), in groups (last[i] set: order[i] ends its group, a disjunct of
 * the property). Once every row of a group has been bounded without closing (row_closed, as the search
 * tests it), the subdomain cannot close and is split: the rows after it are not bounded (skip[r] set,
 * their bound -inf, their slopes and multipliers the warm start's, else 0), and the caller
 * takes a sound bound of them from elsewhere (the parent subdomain's). skip[] is cleared for the rows
 * bounded. Only with vt_cert_set_bab_search on and alpha-CROWN. */
void vt_cert_set_row_plan(vt_cert_ctx *c, const uint32_t *order, const uint8_t *last, uint32_t n, uint8_t *skip);
/* The next bounds (once) leave hidden layers 1..upto-1 as the context's last complete bounds left them
 * and take layer upto's from those bounds before their clamps, then clamp it with the new splits (a
 * replay's leaf after another of the same box whose splits on layers below upto are the same: the same
 * bits, a layer's bounds reading only the box and the splits below it); without complete bounds of the
 * same box and method before it, everything is computed. */
void vt_cert_set_keep(vt_cert_ctx *c, uint32_t upto);
#define VT_CERT_PREFIX_ARRAYS 10u
size_t vt_cert_prefix_len(const vt_cert_ctx *c, uint32_t upto);
void vt_cert_prefix_save(vt_cert_ctx *c, uint32_t upto, double *buf);
void vt_cert_set_prefix(vt_cert_ctx *c, const double *buf, uint32_t upto);
/* The branching choice after vt_cert_bounds on the same box and splits, from the backward pass of row
 * (n[L] values) with alpha_row's slopes (one row of vt_cert_n_alpha_row; NULL: CROWN's). BaBSR: the
 * unstable ReLU with the largest score max(0, -mu) u (-l) / (u - l), mu the coefficient of its output;
 * when every score is 0, |mu| u (-l) / (u - l) (plus a tiny width term); ties to the lowest (layer,
 * index). FSB (vt_cert_set_branching, the default): the best 4 ReLUs by each of the two scores, each
 * split both ways with row's bound estimated by one more pass (its slopes, the later layers' bounds
 * unchanged), the one whose two estimates sum highest chosen (ties to the first listed). Returns 0
 * when no ReLU is unstable. Deterministic (fixed loops). */
int vt_cert_branch_pick(vt_cert_ctx *c, const double *row, const double *alpha_row, uint32_t *layer, uint32_t *index);
void vt_cert_set_branching(vt_cert_ctx *c, vt_cert_branching b);
/* After vt_cert_branch_pick: the input (n[0] values, in the box) at which its pass's linear lower
 * bound is smallest, a candidate counterexample for the attack (borrowed until the next pass). */
const double *vt_cert_last_point(const vt_cert_ctx *c);
/* Sound lower / upper bounds of row . y over the box [ol, ou] of y (n values; work: n doubles). */
double vt_cert_row_lo(const double *row, const double *ol, const double *ou, uint32_t n, double *work);
double vt_cert_row_hi(const double *row, const double *ol, const double *ou, uint32_t n, double *work);
/* A deadline in vt_now() seconds (0: none), checked between neurons, rows, alpha-CROWN's iterations
 * and the attack's steps; once passed, vt_cert_timed_out is 1 and the bounds computed after it are
 * -infinity (never a wrong answer: a timeout). */
void vt_cert_set_deadline(vt_cert_ctx *c, double deadline);
/* on: every bound also holds for any FP32 evaluation of each layer (any order of the dot product,
 * with or without FMA, the bias inside the sum or added after, subnormals kept or flushed), the
 * semantics an ONNX file leaves open (docs/certify.md "ONNX and VNN-LIB"). Off (the default) for
 * committed runs: their certificates' bytes are unchanged. */
void vt_cert_set_fp32_any(vt_cert_ctx *c, int on);
int vt_cert_timed_out(const vt_cert_ctx *c);

/* Sharded over ranks (docs/certify.md "Sharded over ranks"; `mpirun -np N auditor certify ...
 * --shard tp|fsdp`). Process-wide: every context created after vt_cert_set_shard holds its part of
 * the network on comm's ranks, and every rank must then make the same calls with the same arguments
 * (the bounds, the attack: collectives inside). TP: the rows of each layer split over the ranks in
 * both orientations (W by input i, read by the backward passes; W^T by neuron j, read by IBP and the
 * forward passes); each rank computes the dot products of its rows, by the unsharded loop, and the
 * results are allgathered (copied, never added across ranks). FSDP: each rank holds 1/N of each
 * layer; the whole layer is allgathered into one buffer before a loop reads it, and every rank
 * computes everything. Either way the bounds, slopes and attack are the unsharded context's bits for
 * every N. NONE (or comm NULL): the unsharded context, no collective. The first context created
 * after it ends with vt_dist_agree: every rank fails with the lowest failing rank's error. */
typedef enum { VT_CERT_SHARD_NONE = 0, VT_CERT_SHARD_TP = 1, VT_CERT_SHARD_FSDP = 2 } vt_cert_shard;
void vt_cert_set_shard(vt_comm *comm, vt_cert_shard mode);
const char *vt_cert_shard_name(vt_cert_shard m); /* none, tp, fsdp */
/* Branch and bound's subdomains over ranks (docs/certify.md "Parallel search"; `mpirun -np N auditor
 * certify ... --method beta-crown --shard none`): each round's subdomains split over comm's ranks (each
 * bounding its part on its threads), the outcomes allgathered (copied) and merged in creation order on
 * every rank, so every rank builds the tree of one process; every rank must make the same calls, and
 * no deadline may be set (the ranks would not stop together). NULL: none. Process-wide. */
void vt_cert_set_bab_comm(vt_comm *comm);
/* 1 after vt_cert_set_shard with tp or fsdp: the layer graph (CNNs) refuses (VT_ERR_UNSUPPORTED). */
int vt_cert_shard_active(void);
/* A rank's error path under vt_cert_set_shard: when this rank failed before the first context's
 * agreement (reading the network or the property, a key, a usage error), it takes part in that
 * agreement with its error (mine, the message set) so that the other ranks stop with it instead of
 * waiting; returns the agreed error, or mine when it had already agreed or nothing is sharded. */
vt_err vt_cert_shard_fail(vt_err mine);

/* The real network's FP64 logits at x (for attacks and tests; not a reference). */
void vt_cert_forward64(vt_cert_ctx *c, const double *x, double *logits);
/* The deployed network exactly at the FP32 input x (the project's evaluation with exact rounding,
 * docs/certify.md "What is certified"): a_k = RN32(RN32(z_k) + b_k), z_k's exact value rounded once,
 * h_k = relu(a_k); the logits into y (n[L] values). *finite = 0 when a value is not finite (an
 * overflow: such a point confirms nothing). A collective under vt_cert_set_shard. */
vt_err vt_cert_eval_deployed(vt_cert_ctx *c, const float *x, float *y, int *finite) VT_WARN_UNUSED;
/* After vt_cert_forward64 at a point: g (n[L] values, at least the widest layer's room) holds the
 * gradient of an objective with respect to the logits; on return its first n[0] values are the
 * gradient with respect to the input (g2: work of the widest layer). FP64, for attacks only. */
void vt_cert_backprop64(vt_cert_ctx *c, double *g, double *g2);
/* splitmix64: the attacks' deterministic random numbers. */
uint64_t vt_cert_rand(uint64_t *state);
/* The width of the widest layer; of the output layer. */
uint32_t vt_cert_max_width(const vt_cert_ctx *c);
uint32_t vt_cert_out_width(const vt_cert_ctx *c);

/* PGD with restarts (deterministic: the seed, the example index) over FP32 inputs of the exact ball
 * of x and eps: per restart, a margin loss a_j - a_label for every class j != label in turn (docs/
 * certify.md "Methods"). The example itself and each candidate whose FP64 margin is <= 0 are handed
 * to confirm (the project's own evaluation); the first confirmed one is written to cex and 1 returned
 * in *found. The context's deadline (vt_cert_set_deadline) stops it between steps (vt_cert_timed_out). */
typedef vt_err (*vt_cert_confirm_fn)(void *ctx, const float *x, uint32_t label, int *misclassified);
vt_err vt_cert_attack(vt_cert_ctx *c, const float *x, double eps, uint32_t label, uint64_t index,
                      const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex,
                      int *found) VT_WARN_UNUSED;
/* 1 when the FP32 value f lies in [max(0, x - eps), min(1, x + eps)] exactly. */
int vt_cert_in_ball(float f, float x, double eps);

/* ---------------------------------------------------------------- committed runs */
typedef struct {
    const char *run_dir;
    const char *pubkey_path;  /* optional: the trainer key the run's commitment must be signed by */
    const char *data_root;    /* optional: dataset root */
    const char *key_path;     /* certify --out: the auditor's secret key (signs the certificate) */
    const char *out_path;     /* optional: the certificate */
    const char *report_path;  /* optional: JSON report ("-": standard output) */
    const char *vnnlib_dir;   /* optional: each example's property written as DIR/prop_<i>.vnnlib */
    double eps;
    uint32_t examples;
    int order;                /* vt_order of the confirming evaluation */
    int quiet;
    double timeout;           /* certify --timeout: seconds an example (0: none); an example whose
                               * deadline passes is answered timeout unless a counterexample was confirmed,
                               * and then no certificate is written */
    vt_cert_settings set;
} vt_cert_opts;

typedef struct {
    uint32_t verified, falsified, unknown, timeout;
} vt_cert_result;

/* `auditor certify`: loads the run's final committed state (checked like `trainer export`), its
 * test set, bounds and attacks the first `examples` examples, prints one line per example, writes
 * the certificate and the report. VT_ERR_UNSUPPORTED for a CNN or a GPT run. */
vt_err vt_cert_run(const vt_cert_opts *o, vt_cert_result *r) VT_WARN_UNUSED;
/* `auditor check-certificate CERT RUN_DIR`: parses (every length checked), checks the signature
 * (and the signer against pubkey when given), recomputes the certificate from the run and compares
 * the bytes. VT_ERR_MISMATCH when anything differs, VT_ERR_FORMAT for a malformed file. */
vt_err vt_cert_check(const char *cert_path, const vt_cert_opts *o, const char *signer_pub_path) VT_WARN_UNUSED;

/* ---------------------------------------------------------------- ONNX networks, VNN-LIB properties */
#define VT_CERT_ONNX_MAX_NORM 8
#define VT_CERT_ONNX_MAX_STORE (4 * VT_CERT_MAX_LAYERS + VT_CERT_ONNX_MAX_NORM + 8)

/* A feed-forward ReLU network read from ONNX (cert/vt_cert_onnx.c): the input's normalisation steps
 * x <- x - c ('S') or x <- x / c ('D'), c one value or one per element, then the layers. */
typedef struct {
    vt_cert_net net;
    uint32_t n_norm;
    char norm_op[VT_CERT_ONNX_MAX_NORM];
    const float *norm_c[VT_CERT_ONNX_MAX_NORM];
    uint32_t norm_n[VT_CERT_ONNX_MAX_NORM];
    float *store[VT_CERT_ONNX_MAX_STORE]; /* owned */
    uint32_t n_store;
} vt_cert_onnx;

int vt_cert_onnx_supported(void); /* 0 in a build without ONNX support */
/* Reads path; sha256 receives the SHA-256 of its bytes. VT_ERR_UNSUPPORTED for an operator, attribute,
 * data type or shape outside the supported set (naming the node and operator), VT_ERR_FORMAT for
 * bytes that are not a model or lengths that do not agree. */
vt_err vt_cert_onnx_read(const char *path, vt_cert_onnx *o, uint8_t sha256[32]) VT_WARN_UNUSED;
void vt_cert_onnx_free(vt_cert_onnx *o);
/* Frees the layers' weights (net.W[k] := NULL; the widths, biases and normalisation stay): once a
 * bound context holds its copy (its shard under --shard), the FP32 copy of the file is not needed. */
void vt_cert_onnx_drop_weights(vt_cert_onnx *o);

typedef enum { VT_CERT_UNSAT = 0, VT_CERT_SAT = 1, VT_CERT_SPEC_UNKNOWN = 2, VT_CERT_TIMEOUT = 3 } vt_cert_spec_answer;
const char *vt_cert_spec_answer_name(vt_cert_spec_answer a); /* unsat, sat, unknown, timeout */

typedef struct {
    const char *onnx_path, *vnnlib_path;
    /* instead of onnx_path: a committed MLP run's final state (`certify RUN_DIR --vnnlib`), checked as
     * vt_cert_run checks it (pubkey_path optional); its bounds hold for the deployed and the real
     * network (no FP32 widening); certificate version 3 binds the run in place of the file */
    const char *run_dir, *pubkey_path;
    int order;                       /* vt_order of loading the run's model */
    const char *key_path, *out_path; /* --out: the signed certificate (not written on a timeout) */
    const char *report_path;         /* JSON report ("-": standard output) */
    const char *cex_path;            /* sat: the counterexample, VNN-COMP's format */
    const char *result_path;         /* VNN-COMP's result file: the answer line, then for sat the assignment */
    double timeout;                  /* seconds, 0: none */
    int quiet;                       /* no per-disjunct table on stderr */
    vt_cert_settings set;
} vt_cert_spec_opts;

/* `auditor certify --onnx FILE --vnnlib FILE` (or RUN_DIR --vnnlib FILE): the answer in *ans (docs/certify.md). */
vt_err vt_cert_spec_run(const vt_cert_spec_opts *o, vt_cert_spec_answer *ans) VT_WARN_UNUSED;
typedef struct {
    uint32_t n, count[4]; /* instances; by answer (vt_cert_spec_answer) */
    double seconds;
} vt_cert_spec_summary;

/* `auditor certify --instances FILE.csv`: VNN-COMP's instances file, one ONNX,VNNLIB,TIMEOUT a line
 * (paths relative to the file's folder unless absolute; --timeout, when given, overrides the
 * column), each answered as vt_cert_spec_run (no certificate, no counterexample file), one line a
 * property on standard output; VT_ERR_FORMAT naming the line for a malformed one. */
vt_err vt_cert_spec_instances(const char *csv_path, const vt_cert_spec_opts *o, vt_cert_spec_summary *sum) VT_WARN_UNUSED;
/* `auditor check-certificate CERT --onnx FILE --vnnlib FILE` (or CERT RUN_DIR --vnnlib FILE): parses,
 * checks the signature (and the signer), the model's and the property's hashes, recomputes and
 * compares the bytes. */
vt_err vt_cert_spec_check(const char *cert_path, const vt_cert_spec_opts *o, const char *signer_pub_path) VT_WARN_UNUSED;

#endif
