/* vt_cert_int.h - private to cert/: the certificate's byte buffer and file helpers shared by the
 * committed-run certificate (vt_cert_run.c) and the ONNX / VNN-LIB one (vt_cert_spec.c). */
#ifndef VT_CERT_INT_H
#define VT_CERT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/vt_error.h"
#include "../merkle/vt_sign.h"
#include "vt_cert.h"

typedef struct {
    uint8_t *b;
    size_t n, cap;
    int bad; /* an allocation failed: the contents are incomplete */
} vti_buf;

void vti_put(vti_buf *o, const void *p, size_t n);
void vti_put32(vti_buf *o, uint32_t v);
void vti_put64(vti_buf *o, uint64_t v);
/* The whole file (at most max bytes) into *p (malloc'd), its length in *n. */
vt_err vti_cert_read_file(const char *path, size_t max, uint8_t **p, size_t *n) VT_WARN_UNUSED;
vt_err vti_cert_write_file(const char *path, const uint8_t *p, size_t n) VT_WARN_UNUSED;
/* Appends the signer's public key and the Ed25519 signature of everything before it; writes the file. */
vt_err vti_cert_sign_write(vti_buf *out, const vt_keypair *kp, const char *path) VT_WARN_UNUSED;
/* The signature of a certificate of body bytes (then key, signature), and with signer_pub_path, its key. */
vt_err vti_cert_verify(const char *cert_path, const uint8_t *p, size_t body, const char *signer_pub_path) VT_WARN_UNUSED;
/* VT_ERR_MISMATCH naming the first differing byte unless the recomputed body equals the file's. */
vt_err vti_cert_compare(const char *cert_path, const vti_buf *out, const uint8_t *p, size_t body) VT_WARN_UNUSED;

/* The certificate decoders (docs/format.md "Certificate"), check-certificate's first step and the
 * fuzz target's (tests/fuzz/fuzz_cert_body.h): every length and field checked, no signature. A
 * committed run's (versions 1 and 4; o: examples, eps and settings; state_hash: offset 84), or the
 * VNN-LIB one's (version 2, or 3 with run; s: the settings); *body_len = n - 96. VT_ERR_FORMAT. */
vt_err vti_cert_parse_run(const uint8_t *p, size_t n, vt_cert_opts *o, uint8_t state_hash[32],
                          size_t *body_len) VT_WARN_UNUSED;
vt_err vti_cert_parse_spec(const uint8_t *p, size_t n, int run, vt_cert_settings *s, size_t *body_len) VT_WARN_UNUSED;

/* The certificate's method word (docs/format.md "Certificate"): the method (bits 0-7), and for a
 * layer graph's CROWN or alpha-CROWN with CROWN's intermediate bounds (settings' inter) the bit
 * VTI_CERT_CROWN_INTER; without it a graph's CROWN is CROWN-IBP (the certificates written before it). */
#define VTI_CERT_CROWN_INTER 0x100u
uint32_t vti_cert_method_word(const vt_cert_settings *s, int graph);
/* Reads a method word into s (method, inter: CROWN's with the bit, IBP's without); VT_ERR_FORMAT for
 * another bit, a method out of range, the bit with IBP, or the bit where no graph can be (mlp). */
vt_err vti_cert_method_read(uint32_t w, int mlp, vt_cert_settings *s) VT_WARN_UNUSED;
/* certify: VT_ERR_UNSUPPORTED for IBP's intermediate bounds asked of an MLP (its CROWN has CROWN's). */
vt_err vti_cert_inter_check(const vt_cert_settings *s, int graph) VT_WARN_UNUSED;
/* The report's settings (`certify --report`): the "intermediate" member (the intermediate bounds the
 * method used: "crown" for CROWN's backward passes, "ibp" for IBP's) and the "settings" object (the
 * alpha-CROWN and attack settings the certificate records), each line indented by two spaces and
 * followed by a comma. */
void vti_cert_settings_json(FILE *f, const vt_cert_settings *s, int graph);

/* check-certificate's one pass: the n recorded slopes at p (FP64, little-endian) into a, each in
 * [0, 1]; VT_ERR_MISMATCH naming where (an example, the property) and the first other one (NaN too). */
vt_err vti_cert_slopes(const char *cert_path, const char *where, const uint8_t *p, size_t n, double *a) VT_WARN_UNUSED;

/* Branch and bound's split tree (vt_cert_bab.c; docs/certify.md "Branch and bound", docs/format.md
 * "Certificate" version 5). Node 0 the root; an internal node splits (layer, index), its kid[0] the
 * active side (a >= 0), kid[1] the inactive one (a <= 0); a leaf holds its slopes (na: every margin's,
 * vt_cert_n_alpha), its beta-CROWN multipliers and its C margin bounds. */
#define VTI_BAB_MAX_DEPTH 1024u
#define VTI_BAB_MAX_NODES (1u << 24)
/* The attack from a subdomain's point inside the search: at most this many sign-gradient steps (the
 * settings' attack_iters when fewer; the step is the box's width over them, as for the attack). */
#define VTI_BAB_ATTACK_ITERS 10u
/* The search's saved layers (split subdomains' bounds kept for their children) at most this many bytes
 * at once; past it a child computes them (the same bits, more time). */
#define VTI_BAB_PREFIX_MAX_BYTES ((size_t)1 << 30)
/* The split subdomains' slopes and multipliers kept for their children's start, at most this many
 * bytes at once; past it a child starts from CROWN's slopes (decided in the merge: every rank alike). */
#define VTI_BAB_WARM_MAX_BYTES ((size_t)1 << 30)
typedef struct {
    int32_t parent, kid[2];
    uint32_t side, depth, split, layer, index; /* split: 0 a leaf, 1 a ReLU (layer, index), 2 an input
                                                * (index: the input, at: where; kid[0] x <= at, kid[1] x >= at) */
    uint32_t rdepth; /* the ReLU splits above it (a leaf's multipliers: R x rdepth) */
    double at;
    double *alpha, *beta, *lb; /* leaves: slopes (na), multipliers ((C - 1) x depth: per margin, the path's
                                * splits from the root), bounds (C) */
    const uint8_t *rec;    /* check: the leaf's recorded slopes, then its bounds */
} vti_bab_node;
typedef struct {
    vti_bab_node *v;
    uint32_t n, cap, C; /* C: the bounds a leaf records (a run's margins: its classes; a property: its rows) */
    uint32_t R;         /* the rows a leaf records multipliers and slopes for (C - 1 margins; a property's rows) */
    size_t na;          /* a leaf's slopes: R x vt_cert_n_alpha_row */
    int inputs;         /* it holds an input split (versions 8, 9) */
    uint32_t reused;    /* the search: subdomains bounded in this process from their parent's saved layers */
    uint64_t skipped;   /* the search: rows not bounded by the row plan (vt_cert_set_row_plan) */
} vti_bab_tree;
/* Input splitting (docs/certify.md "Input splitting"): a property of at most this many inputs is split
 * on its inputs (bisecting the widest side of the subdomain's box) instead of its ReLUs. */
#define VTI_BAB_INPUT_SPLIT_MAX 8u
void vti_bab_free(vti_bab_tree *t);
/* A tree of one leaf: the whole box's slopes and bounds. */
vt_err vti_bab_root(vti_bab_tree *t, size_t na, uint32_t C, const double *alpha, const double *lb) VT_WARN_UNUSED;
vt_err vti_bab_root_rows(vti_bab_tree *t, size_t na, uint32_t R, uint32_t nlb, const double *alpha,
                         const double *lb) VT_WARN_UNUSED;
/* What branch and bound bounds (a committed run's margins, vt_cert_bab.c; a VNN-LIB property's rows,
 * vt_cert_spec.c): R rows with slopes and multipliers, nlb bounds a leaf; bound: the subdomain's bounds
 * with the splits set (lb: nlb values, alpha: the R rows' slopes); worst: > 0 when the leaf closes, else
 * a measure (not finite: stop) and the row to branch on (row: its n[L] coefficients, r: its index among
 * the R rows, which: its name in messages); candidate: after the branching pass, its smallest point
 * pt (vt_cert_last_point of the worker that bounded it, n[0] values) tried as a counterexample, aimed
 * at worst's which (*found = 1 when confirmed). bound and worst run on several threads at once (each
 * with its own context: they only read ctx); candidate on the caller's thread, in creation order. */
typedef struct vti_bab_prob {
    uint32_t R, nlb;
    const double *xl, *xu; /* the box (d values); a subdomain's is it cut by its path's input splits */
    uint32_t d;
    int input_split;       /* branch on the inputs (the widest side of the box, at its midpoint) */
    const char *what; /* "margin", "row" */
    int progress;     /* a line on standard error every 100 subdomains */
    vt_err (*bound)(struct vti_bab_prob *p, vt_cert_ctx *c, const double *xl, const double *xu, double *lb, double *alpha);
    double (*worst)(struct vti_bab_prob *p, const double *lb, double *row, uint32_t *r, uint32_t *which);
    vt_err (*candidate)(struct vti_bab_prob *p, vt_cert_ctx *c, const double *pt, uint32_t which, int *found);
    /* the row plan of a child of a subdomain whose bounds were plb (nlb values; vt_cert_set_row_plan):
     * the R rows' order, their groups' ends, and lbi[r], row r's index in the bounds; key: R doubles of
     * work. NULL: no plan (every row bounded) */
    void (*plan)(struct vti_bab_prob *p, const double *plb, uint32_t *order, uint8_t *last, uint32_t *lbi, double *key);
    void *ctx;
} vti_bab_prob;
vt_err vti_bab_search_p(vt_cert_ctx *c, vti_bab_prob *p, const vt_cert_settings *s, vti_bab_tree *t, int *closed,
                        uint32_t *bounded, int *found) VT_WARN_UNUSED;
vt_err vti_bab_replay_p(vt_cert_ctx *c, const vt_cert_net *net, vti_bab_prob *p,
                        vti_bab_tree *t, const char *cert_path, const char *where, int *closed) VT_WARN_UNUSED;
/* inputs: input splits (kind 2) allowed (versions 8, 9); d: the inputs */
vt_err vti_bab_scan_rows(const uint8_t *p, size_t avail, size_t na, uint32_t R, uint32_t C, int inputs, uint32_t d,
                         const char *where, vti_bab_tree *t, size_t *used) VT_WARN_UNUSED;
/* certify: breadth-first branch and bound over the box with s (alpha-CROWN) until every leaf closes
 * (*closed = 1) or s->bab_domains subdomains were bounded, the deadline passed, nothing is left to split
 * or (at not NULL) a counterexample is confirmed (*found = 1, at->cex: each subdomain that does not close
 * hands the point where its worst margin's pass is smallest, in FP32 in the ball, to at->confirm when
 * the FP64 network misclassifies it) (*closed = 0, the tree then incomplete); *bounded: the subdomains
 * bounded. */
typedef struct { /* the attack inside the search: the example, its ball, the confirming evaluation */
    const float *x;
    double eps;
    uint32_t d;
    vt_cert_confirm_fn confirm;
    void *cctx;
    float *cex; /* d values: a confirmed counterexample */
    int progress; /* a line on standard error every 100 subdomains (certify without --quiet) */
} vti_bab_attack;
vt_err vti_bab_search(vt_cert_ctx *c, const double *xl, const double *xu, uint32_t label, const vt_cert_settings *s,
                      uint32_t C, vti_bab_tree *t, int *closed, uint32_t *bounded, const vti_bab_attack *at,
                      int *found) VT_WARN_UNUSED;
/* Each margin's smallest bound over the leaves (sound over the box: the leaves cover it). */
void vti_bab_min_lb(const vti_bab_tree *t, double *lb);
/* order: 0..n-1 sorted by key[] ascending, ties in index order (a plan's order) */
void vti_bab_order(const double *key, uint32_t n, uint32_t *order);
/* The tree's bytes: its node count, then the nodes in preorder (docs/format.md). */
void vti_bab_put(vti_buf *o, const vti_bab_tree *t);
/* Reads (t NULL: only checks) a recorded tree at p (avail bytes): every length, the structure (every
 * split has both children, nothing after the tree is complete, the depth), naming the node;
 * *used: its bytes. VT_ERR_FORMAT. */
vt_err vti_bab_scan(const uint8_t *p, size_t avail, size_t na, uint32_t C, const char *where, vti_bab_tree *t,
                    size_t *used) VT_WARN_UNUSED;
/* check-certificate: every leaf's bound recomputed from its recorded slopes (one backward pass a margin,
 * no search) with its path's splits; VT_ERR_MISMATCH naming the node for a split that is not a hidden
 * ReLU or repeats one above it, a leaf of a tree of more than one node whose bound does not close, or a
 * recorded bound that is not the recomputed one. *closed: every leaf closes. */
vt_err vti_bab_replay(vt_cert_ctx *c, const vt_cert_net *net, const double *xl, const double *xu, uint32_t label,
                      const vt_cert_settings *s, vti_bab_tree *t, const char *cert_path, const char *where,
                      int *closed) VT_WARN_UNUSED;

/* A committed run's final state for the VNN-LIB path (vt_cert_spec.c, `certify RUN_DIR --vnnlib`):
 * loaded and checked as `certify RUN_DIR` loads it (vt_cert_run.c); *net borrows from *out (a residual
 * CNN: its widths only, the network being vti_cert_run_graph's graph, owned by the run). */
typedef struct {
    uint64_t step;
    uint8_t state_hash[32], root[32], manifest_hash[32], public_key[32];
} vti_cert_model_id;
typedef struct vti_cert_run vti_cert_run;
vt_err vti_cert_run_open(const char *run_dir, const char *pubkey_path, int order, vti_cert_run **out,
                         const vt_cert_net **net, vti_cert_model_id *id) VT_WARN_UNUSED;
struct vt_cert_graph *vti_cert_run_graph(vti_cert_run *r); /* NULL for an MLP run */
void vti_cert_run_close(vti_cert_run *r);
/* The run's own evaluation pass (exact rounding, the CPU reference) at the FP32 input x: *logits its
 * outputs (borrowed until the next call), as certify RUN_DIR confirms a counterexample. */
vt_err vti_cert_run_eval(vti_cert_run *r, const float *x, const float **logits) VT_WARN_UNUSED;

/* Sharding over ranks (vt_cert_bound.c; docs/certify.md "Sharded over ranks"): the process's
 * communicator and mode (NULL: none); the first agreement of the ranks on mine (every rank calls it
 * once, before its first collective; later calls return mine); the start of rank r's part of n items
 * (the parts in rank order); v[0..n w) := every rank's rows [part_lo(rank), part_lo(rank + 1)) of w
 * values, copied through tmp (its own part's size) with bytes (size entries), never combined. */
vt_comm *vti_cert_shard_comm(vt_cert_shard *mode);
vt_err vti_cert_shard_join(vt_err mine) VT_WARN_UNUSED;
size_t vti_cert_part_lo(size_t n, int r, int size);
vt_err vti_cert_share_rows(vt_comm *comm, double *v, size_t n, size_t w, double *tmp, size_t *bytes) VT_WARN_UNUSED;

/* Branch and bound's workers (vt_cert_bab.c, docs/certify.md "Branch and bound"): a context of its own
 * (bound state, work, the deadline and FP32 setting copied) reading c's weights (c must outlive it;
 * VT_ERR_UNSUPPORTED for a sharded c: its passes are collectives); vt_cert_ctx_free frees it. Bounds
 * computed on it are c's bits. vti_cert_ctx_time_out: c's sticky timeout set (a worker's passed). */
vt_err vti_cert_ctx_fork(const vt_cert_ctx *c, vt_cert_ctx **out) VT_WARN_UNUSED;
void vti_cert_ctx_time_out(vt_cert_ctx *c);
/* On: the context's passes are estimates (a search's steering, never a bound): backward passes and
 * vt_cert_forward64 / vt_cert_backprop64 multiply by the FP32 weights in FP32 (unsharded contexts; the
 * same bits in every implementation), backward passes without their error terms. Off (the default):
 * FP64 and sound. */
void vti_cert_set_estimate(vt_cert_ctx *c, int on);
/* Whether the last bounds took the output layer's from IBP alone (branch and bound's search defers
 * its CROWN passes: a subdomain that closes is bounded again from its slopes before it is recorded). */
int vti_cert_logits_deferred(const vt_cert_ctx *c);
uint32_t vti_cert_in_width(const vt_cert_ctx *c); /* n[0] */

/* A test hook (tests/unit/test_cert_cnn.c, never set otherwise): when > 0, CROWN's intermediate bounds on
 * the layer graph are each moved inward by this fraction of their width (unsound on purpose: the
 * sampling tests must catch it). */
extern double vti_cert_graph_inward;
/* A test hook: when set, the intermediate bounds' passes are the dense ones in one process too (the
 * sparse ones must give the same bits). */
extern int vti_cert_graph_dense;

/* The attack of a committed run's example (vt_cert_attack, vt_cert_graph_attack): PGD with a margin
 * loss per wrong class and restarts per class (docs/certify.md "Methods"), each FP64 candidate handed
 * to confirm (the project's exact evaluation). forward: the d inputs to the C outputs (FP64); grad,
 * after forward: the gradient of gout . out with respect to the input (gin: max(d, C, work) values). */
typedef struct {
    void (*forward)(void *net, const double *x, double *out);
    void (*grad)(void *net, const double *gout, double *gin);
    void *net;
    uint32_t d, C, work;
    double deadline; /* vt_now() seconds, checked before each step (0: none) */
    int timed_out;   /* out: the deadline stopped it */
    const float *start; /* branch and bound's subdomains: one run from this FP32 point of the ball (not the
                         * example itself, no restarts), aimed at class only_class alone */
    uint32_t only_class;
} vti_cert_pgd_net;
/* vt_cert_attack from start (d FP32 values in the ball) at class cls alone (vti_cert_pgd_net's start). */
vt_err vti_cert_attack_from(vt_cert_ctx *c, const float *x, double eps, uint32_t label, const float *start, uint32_t cls,
                            const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex,
                            int *found) VT_WARN_UNUSED;
vt_err vti_cert_pgd(vti_cert_pgd_net *net, const float *x, double eps, uint32_t label, uint64_t index,
                    const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex, int *found) VT_WARN_UNUSED;

#endif
