/* vt_cert_graph.h - sound bounds of a layer graph (the residual CNN's evaluation pass): linear
 * nodes (convolution, dense, bias, batch norm in evaluation form, global average pooling) as sparse
 * operators with an error term per output, ReLU, residual add, max pooling (docs/certify.md "The
 * residual CNN"). IBP, CROWN and alpha-CROWN with CROWN's intermediate bounds (backward passes per
 * unstable ReLU input value) or IBP's (CROWN-IBP); every bound holds for the
 * real-arithmetic network and for the project's exact-rounding evaluation (RN32 per rounded
 * operation), including the rounding of the bound computation itself. Fixed-order loops, no BLAS. */
#ifndef VT_CERT_GRAPH_H
#define VT_CERT_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "../model/vt_model.h"
#include "../rounding/vt_round.h"
#include "vt_cert.h"

#define VT_CERT_GRAPH_MAX_NODES 256

typedef struct vt_cert_graph vt_cert_graph;

/* A graph whose node 0 is the input (d values per example). Node builders append one node (its
 * inputs: earlier nodes) and return its id in *id; the last node appended is the output (logits). */
vt_err vt_cert_graph_new(uint32_t d, vt_cert_graph **g) VT_WARN_UNUSED;
void vt_cert_graph_free(vt_cert_graph *g);
/* Convolution of input H x W x Cin (channels-last, or channels-first when chw), k x k kernel,
 * stride s, zero padding p, weight [k*k*Cin, Cout] (row (ky*k + kx)*Cin + c), output Ho x Wo x Cout
 * channels-last; rounded: the deployed network stores RN32 of the exact sum. */
vt_err vt_cert_graph_conv(vt_cert_graph *g, uint32_t in, uint32_t H, uint32_t W, uint32_t Cin, uint32_t k, uint32_t s,
                          uint32_t p, int chw, uint32_t Cout, const float *w, int rounded, uint32_t *id) VT_WARN_UNUSED;
/* y = x W, W [n_in, n_out] row-major. */
vt_err vt_cert_graph_dense(vt_cert_graph *g, uint32_t in, uint32_t n_out, const float *w, int rounded,
                           uint32_t *id) VT_WARN_UNUSED;
/* y = RN32(x + b) */
vt_err vt_cert_graph_bias(vt_cert_graph *g, uint32_t in, const float *b, uint32_t *id) VT_WARN_UNUSED;
/* Batch norm in evaluation form over the last dimension (C channels): y = gamma (x - rm) / sqrt(rv + eps)
 * + beta in real arithmetic, the deployed value RN32 of the FP64 chain vti_bn_eval1 (kernels/vt_cnn_hd.h). */
vt_err vt_cert_graph_bn(vt_cert_graph *g, uint32_t in, uint32_t C, const float *rm, const float *rv,
                        const float *gamma, const float *beta, double eps, uint32_t *id) VT_WARN_UNUSED;
/* y[c] = RN32(sum_t x[t][c] w) over HW pixels (w the FP32 weight RN32(1/HW)) */
vt_err vt_cert_graph_avgpool(vt_cert_graph *g, uint32_t in, uint32_t HW, uint32_t C, float w, uint32_t *id) VT_WARN_UNUSED;
/* k x k windows, stride k, of H x W x C (channels-last) */
vt_err vt_cert_graph_maxpool(vt_cert_graph *g, uint32_t in, uint32_t H, uint32_t W, uint32_t C, uint32_t k,
                             uint32_t *id) VT_WARN_UNUSED;
vt_err vt_cert_graph_relu(vt_cert_graph *g, uint32_t in, uint32_t *id) VT_WARN_UNUSED;
/* y = RN32(a + b) */
vt_err vt_cert_graph_add(vt_cert_graph *g, uint32_t a, uint32_t b, uint32_t *id) VT_WARN_UNUSED;

/* ONNX forms (cert/vt_cert_onnx.c; docs/certify.md "Convolutional networks from ONNX"), channels-first:
 * a convolution of Cin x H x W, kh x kw kernel w [Cout, Cin, kh, kw] (ONNX's OIHW), strides sh, sw,
 * pads {top, left, bottom, right}, bias (Cout values) or NULL, output Cout x Ho x Wo; y = x W + bias
 * (W [n_in, n_out], bias n_out values or NULL); batch norm of C x HW; pooling of C x H x W by kh x kw
 * windows, stride the window (max, or the average sum x / (kh kw)), output C x H/kh x W/kw. */
vt_err vt_cert_graph_conv2d(vt_cert_graph *g, uint32_t in, uint32_t Cin, uint32_t H, uint32_t W, uint32_t Cout, uint32_t kh,
                            uint32_t kw, uint32_t sh, uint32_t sw, const uint32_t pads[4], const float *w, const float *bias,
                            uint32_t *id) VT_WARN_UNUSED;
vt_err vt_cert_graph_linear(vt_cert_graph *g, uint32_t in, uint32_t n_out, const float *w, const float *bias,
                            uint32_t *id) VT_WARN_UNUSED;
vt_err vt_cert_graph_bn_chw(vt_cert_graph *g, uint32_t in, uint32_t C, uint32_t HW, const float *rm, const float *rv,
                            const float *gamma, const float *beta, double eps, uint32_t *id) VT_WARN_UNUSED;
vt_err vt_cert_graph_pool_chw(vt_cert_graph *g, uint32_t in, uint32_t C, uint32_t H, uint32_t W, uint32_t kh, uint32_t kw,
                              int max, uint32_t *id) VT_WARN_UNUSED;
/* What the bounds hold for: PROJECT (the default) the real network and the project's exact-rounding
 * evaluation (each node's own RN32 terms); REAL the real-arithmetic network alone; FP32_ANY the real
 * network and any FP32 evaluation of each node on its own (a dot product with its constant in any
 * order, FMA or not, subnormals kept or flushed; batch norm as any FP32 chain; each result rounded
 * to FP32). Set before the bounds. */
typedef enum { VT_CERT_GRAPH_PROJECT = 0, VT_CERT_GRAPH_REAL = 1, VT_CERT_GRAPH_FP32_ANY = 2 } vt_cert_graph_sem;
void vt_cert_graph_set_sem(vt_cert_graph *g, vt_cert_graph_sem sem);

uint32_t vt_cert_graph_n_nodes(const vt_cert_graph *g);
uint32_t vt_cert_graph_size(const vt_cert_graph *g, uint32_t node); /* values per example */

/* IBP over the box [xl, xu]: every node's interval (readable with vt_cert_graph_interval). */
vt_err vt_cert_graph_ibp(vt_cert_graph *g, const double *xl, const double *xu) VT_WARN_UNUSED;
void vt_cert_graph_interval(const vt_cert_graph *g, uint32_t node, const double **l, const double **u);
/* Sound lower bounds lb[j] of the margins out[label] - out[j] over the box (lb[label] = 0): IBP, or
 * (VT_CERT_CROWN) the larger of IBP's and CROWN's backward pass with the intermediate bounds of
 * vt_cert_graph_set_intermediate (CROWN's: also at least CROWN-IBP's pass), or
 * (VT_CERT_ALPHA_CROWN) the larger of IBP's and alpha-CROWN's: per margin the lower slopes of every
 * unstable ReLU value optimised in [0, 1] by projected sign-gradient ascent from CROWN's slopes
 * (vt_cert_graph_set_alpha's settings), the best slopes' sound bound kept (never below CROWN's). A
 * bound that is not finite is -infinity. */
vt_err vt_cert_graph_bounds(vt_cert_graph *g, const double *xl, const double *xu, uint32_t label, vt_cert_method m,
                            double *lb) VT_WARN_UNUSED;
/* The spec-matrix form (VNN-LIB properties): sound lower bounds lb[r] of C_r . out over the box for the
 * m rows of C (m x outputs, row-major): IBP's, or the larger of IBP's and a CROWN (alpha-CROWN) backward
 * pass from C_r with the intermediate bounds as vt_cert_graph_bounds. deadline (vt_now() seconds, 0:
 * none) is checked between rows, between the intermediate bounds' values and between alpha-CROWN's
 * iterations; the rows it cuts short are -infinity and *timed_out 1. */
vt_err vt_cert_graph_spec_bounds(vt_cert_graph *g, const double *xl, const double *xu, const double *C, uint32_t m,
                                 vt_cert_method meth, double deadline, double *lb, int *timed_out) VT_WARN_UNUSED;
/* The intermediate bounds of the next CROWN and alpha-CROWN bounds (a new graph: VT_CERT_INTER_CROWN):
 * VT_CERT_INTER_CROWN, per ReLU in graph order each unstable value of its input (IBP's l < 0 < u) by
 * a backward pass from it for each end through the earlier ReLUs' relaxations, intersected with IBP's
 * (docs/certify.md "The residual CNN"); the final bounds are then never below CROWN-IBP's (each row
 * keeps the larger); VT_CERT_INTER_IBP, IBP's (CROWN-IBP). After the bounds, vt_cert_graph_interval
 * gives the intervals used (the refined ones, and IBP again from them for the others). */
void vt_cert_graph_set_intermediate(vt_cert_graph *g, vt_cert_inter in);
/* alpha-CROWN's settings (alpha_iters, alpha_step, alpha_decay of s; the rest ignored) for the bounds
 * after it; a new graph has vt_cert_settings_default's. */
void vt_cert_graph_set_alpha(vt_cert_graph *g, const vt_cert_settings *s);
/* certify RUN_DIR --timeout: a deadline (vt_now() seconds, 0: none) for vt_cert_graph_bounds (between
 * the intermediate bounds' values and alpha-CROWN's iterations) and vt_cert_graph_attack (between
 * steps); vt_cert_graph_timed_out: it passed since it was set (the bounds cut short are -infinity). */
void vt_cert_graph_set_deadline(vt_cert_graph *g, double deadline);
int vt_cert_graph_timed_out(const vt_cert_graph *g);
/* After alpha-CROWN's bounds: the number of unstable ReLU values of the box (the intermediate bounds'
 * interval of the ReLU's input has l < 0 < u), and the slopes found: per row (the margins j != label in increasing j;
 * the spec rows in order) that many doubles, the unstable values in node order, then index order.
 * Owned by the graph, valid until the next bounds. */
uint32_t vt_cert_graph_n_alpha(const vt_cert_graph *g);
const double *vt_cert_graph_alpha(const vt_cert_graph *g);
uint32_t vt_cert_graph_n_relu(const vt_cert_graph *g); /* the ReLU values of all ReLU nodes */
/* check-certificate's one pass (docs/certify.md "The certificate"): the next alpha-CROWN bounds
 * (vt_cert_graph_bounds, vt_cert_graph_spec_bounds; once, then forgotten) take each row's slopes from
 * a (rows x U doubles in vt_cert_graph_alpha's layout, each in [0, 1]: the caller checks them) with one
 * backward pass a row, no search; VT_ERR_MISMATCH unless U is the box's number of unstable values and
 * the method alpha-CROWN. A bound is sound for any slopes in [0, 1]. Borrowed. */
void vt_cert_graph_given_slopes(vt_cert_graph *g, const double *a, uint32_t U);
/* After vt_cert_graph_forward64: the gradient of out . gout with respect to the input into gin (FP64). */
void vt_cert_graph_grad64(vt_cert_graph *g, const double *gout, double *gin);
/* The FP64 forward pass (attacks and tests; not a reference): out receives the output node's values. */
void vt_cert_graph_forward64(vt_cert_graph *g, const double *x, double *out);
/* PGD with restarts as vt_cert_attack (same settings), on the graph's FP64 forward and backward
 * passes; candidates with FP64 margin <= 0 are handed to confirm. */
vt_err vt_cert_graph_attack(vt_cert_graph *g, const float *x, double eps, uint32_t label, uint64_t index,
                            const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex,
                            int *found) VT_WARN_UNUSED;


/* An ONNX file (cert/vt_cert_onnx.c): as vt_cert_onnx_read, but a file with any convolutional
 * operator (Conv, BatchNormalization, a pool, an Add of two values) is read into *g (the graph of its
 * tensors, channels-first, REAL semantics; o holds the input's normalisation and n[0]); *g NULL for
 * a feed-forward MLP read into o->net. */
vt_err vt_cert_onnx_read_any(const char *path, vt_cert_onnx *o, vt_cert_graph **g, uint8_t sha256[32]) VT_WARN_UNUSED;

/* The graph of a model's evaluation pass (cert/vt_cert_cnn.c) for one example, reading the model's
 * tensors (borrowed: the graph keeps its own copies of the weights); *logits: the tensor the final
 * softmax reads. VT_ERR_UNSUPPORTED naming an operation outside the supported set. */
vt_err vt_cert_graph_from_program(vt_model *m, uint32_t *logits, vt_cert_graph **g) VT_WARN_UNUSED;
/* One operation of the model's evaluation range (the evaluation pass's ids follow the step's), exact
 * as the interpreter runs it on the CPU: the counterexamples' confirmation. */
vt_err vt_cert_eval_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint32_t op_id) VT_WARN_UNUSED;

#endif
