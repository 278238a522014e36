/* vt_fam_gemm.c - the GEMM family: matrix products (MATMUL) and batched products (BMM), one reduction per
 * output element through the backend's or the CBLAS GEMM, bounded and rounded by the rounding layer
 * (kernels/vt_kernels.h vt_gemm).
 * Each kind's check, exec and cost, named by its stem in the list (vt_kinds.h). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_par.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_gpt.h"
#include "../kernels/vt_kernels.h"
#include "../kernels/vt_tc.h"
#include "vt_ops_int.h"
#include "vt_philox.h"
#include "vt_philox_hd.h"

/* ------------------------------------------------------------ the GEMMs' arithmetic (vt_ops.h) */

const char *const vt_gemm_arith_names[] = {"fp64",         "tc-bf16-sm90", "tc-fp16-sm90",    "tc-bf16-sm80",
                                           "tc-fp16-sm80", "tc-e4m3-sm90", "tc-e4m3f16-sm90", NULL};

const struct vt_tc_arch_s *vt_gemm_arith_model(uint32_t v)
{
    static const vt_tc_arch *const models[] = {NULL, &vt_tc_sm90_bf16, &vt_tc_sm90_fp16, &vt_tc_sm80_bf16,
                                               &vt_tc_sm80_fp16, &vt_tc_sm90_e4m3, &vt_tc_sm90_e4m3f16};
    return v < sizeof models / sizeof models[0] ? models[v] : NULL;
}

/* C [M, N] = op(A) op(B) by the tensor-core model tc (vt_tc_gemm_ex reads the transposed operands
 * in place). FP32 results as the model gives them: no bound, nothing rounded after. */
static vt_err tc_gemm(const vt_tc_arch *tc, int ta, int tb, size_t M, size_t N, size_t K, const float *A,
                      const float *B, float *C)
{
    return vt_tc_gemm_ex(tc, -1, ta, tb, M, N, K, A, B, C);
}

/* One GEMM of an operation in the tensor-core mode: the backend's kernel of the model where it has
 * one (the same bits), else the model itself. */
static vt_err tc_op(const vt_opctx *c, const vt_tc_arch *tc, int ta, int tb, size_t M, size_t N, size_t K,
                    const float *A, const float *B, float *C)
{
    if (c->be && c->be->gemm_tc) return c->be->gemm_tc(c->be->impl, tc, 1, ta, tb, M, N, K, A, B, C);
    return tc_gemm(tc, ta, tb, M, N, K, A, B, C);
}

/* ------------------------------------------------------------ MATMUL */
/* iarg: transA, transB, M, N, K: C [M, N] = op(A) op(B) (kernels/vt_kernels.h vt_gemm) */

vt_err vti_matmul_check(const vt_program *p, const vt_opdesc *o)
{
    const int64_t *a = o->iarg;
    VT_RETURN_ERROR_IF((a[0] != 0 && a[0] != 1) || (a[1] != 0 && a[1] != 1) || a[2] < 1 || a[3] < 1 || a[4] < 1 ||
                           a[2] > UINT32_MAX || a[3] > UINT32_MAX || a[4] > UINT32_MAX,
                       VT_ERR_INTERNAL, "program: \"%s\": bad GEMM arguments", o->name);
    size_t M = (size_t)a[2], N = (size_t)a[3], K = (size_t)a[4];
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, M * K, "A"));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, K * N, "B"));
    return want(p, o, o->out[0], VT_DT_F32, M * N, "C");
}

/* A convolution's input-gradient GEMM: op(A) = A is the gather G of a conv_grad_gather operation of
 * the step (B = W'). 1 with its geometry (C = the GEMM's N) and output channels; 0 for any other GEMM.
 * vt_conv_dgrad_gemm then skips the products by the gather's structural zeros (kernels/vt_cnn.h). */
static int conv_dgrad_geom(const vt_program *p, uint32_t j, const vt_opdesc *o, vt_conv_geom *g, size_t *Co)
{
    const int64_t *a = o->iarg;
    int prev = 0;
    if (a[0] || a[1] || j < 1 || j > p->n_ops) return 0;
    uint32_t q = vt_program_producer(p, j, o->in[0], &prev);
    if (q == 0 || prev || p->op[q].kind != VT_OPK_CONV_DGATHER) return 0;
    const int64_t *d = p->op[q].iarg; /* B H W Co k stride pad (checked with the program) */
    if (a[3] > 65536 || vt_conv_geom_make(g, d[0], d[1], d[2], a[3], d[4], d[5], d[6], 0)) return 0;
    *Co = (size_t)d[3];
    return (size_t)a[2] == g->B * g->H * g->W && (size_t)a[4] == g->k * g->k * *Co;
}

vt_err vti_matmul_exec(vt_opctx *c)
{
    const int64_t *a = c->o->iarg;
    size_t M = (size_t)a[2], N = (size_t)a[3], K = (size_t)a[4];
    vt_bounds bd;
    const vt_tc_arch *tc = vt_gemm_arith_model(c->gemm_arith);
    if (tc) return tc_op(c, tc, (int)a[0], (int)a[1], M, N, K, IN(0), IN(1), OUT(0)); /* the tensor-core mode */
    if (c->be && c->be->gemm_round) return c->be->gemm_round(c->be->impl, c->rctx, c->op_id, (int)a[0], (int)a[1], M, N, K, IN(0), IN(1), OUT(0));
    vt_conv_geom g;
    size_t Co = 0;
    int done = 0; /* a strided convolution's input gradient: by output phase, the same reductions and bounds */
    if (conv_dgrad_geom(c->prog, c->op_id, c->o, &g, &Co))
        VT_FORWARD_IF_ERROR(vt_conv_dgrad_gemm(c->exec, &g, Co, IN(0), IN(1), c->s.x64, c->s.rn, c->s.cn, &bd, &done));
    if (!done)
        VT_FORWARD_IF_ERROR(vt_gemm(c->exec, (int)a[0], (int)a[1], M, N, K, IN(0), IN(1), c->s.x64, c->s.rn, c->s.cn, &bd));
    if (a[0]) ROUND_BATCH(c->s.x64, &bd, M, N, OUT(0)); /* transA: K is the batch's rows (vt_op_batch_reduction) */
    else ROUND(c->s.x64, &bd, M, N, OUT(0));
    return VT_OK;
}

void vti_matmul_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p;
    double M = (double)o->iarg[2], N = (double)o->iarg[3], K = (double)o->iarg[4];
    out->flop = 2 * M * N * K;
    out->bytes = 4 * (M * K + K * N + M * N);
    out->scratch = M * N;
    out->norms = M > N ? M : N;
}

/* ------------------------------------------------------------ BMM */
/* iarg G, M, N, K, ta, tb: C [G*M, N], C_g = op(A_g) op(B_g); A_g [M, K] (ta = 1: [K, M]),
 * B_g [K, N] (tb = 1: [N, K]). One reduction per element (vt_reduce, batched operands). */

static vt_err bmm_args(const vt_opdesc *o, size_t *G, size_t *M, size_t *N, size_t *K)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[3] < 1 || a[0] > (1 << 24) || a[1] > (1 << 20) || a[2] > (1 << 20) ||
               a[3] > (1 << 20) || (a[4] != 0 && a[4] != 1) || (a[5] != 0 && a[5] != 1),
           "program: \"%s\": bad batched GEMM arguments", o->name);
    *G = (size_t)a[0], *M = (size_t)a[1], *N = (size_t)a[2], *K = (size_t)a[3];
    return VT_OK;
}

vt_err vti_bmm_check(const vt_program *p, const vt_opdesc *o)
{
    size_t G = 0, M = 0, N = 0, K = 0, t;
    VT_FORWARD_IF_ERROR(bmm_args(o, &G, &M, &N, &K));
    ERR_IF(__builtin_mul_overflow(G, M, &t) || __builtin_mul_overflow(t, K > N ? K : N, &t) ||
               __builtin_mul_overflow(G * (K > M ? K : M), N, &t),
           "program: \"%s\": the batched GEMM is too large", o->name);
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], G * M * K, "A"));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[1], G * K * N, "B"));
    return f32_shape(p, o, o->out[0], G * M * N, "C");
}

typedef struct {
    const vt_exec *e;
    int ta, tb;
    size_t M, N, K;
    const float *A, *B;
    double *C, *bnd, coef;
    vt_err err[VT_PAR_MAX];
    char msg[VT_PAR_MAX][200];
} bmm_job;

/* out[v] = sqrt of sum_k X[v sv + k sk]^2 for v < n, each a sequential sum in k order from +0 (the
 * squares of FP32 values exact in FP64); 64 sums side by side, k outer, so that the loop over them is
 * contiguous (sv = 1) or at least 64 independent chains: the same additions per sum */
static void bmm_norms(const float *X, size_t n, size_t K, size_t sv, size_t sk, double *out)
{
    for (size_t v0 = 0; v0 < n; v0 += 64) {
        const size_t nb = n - v0 < 64 ? n - v0 : 64;
        double acc[64] = {0};
        for (size_t k = 0; k < K; k++) {
            const float *x = X + v0 * sv + k * sk;
            for (size_t v = 0; v < nb; v++) {
                const double d = x[v * sv];
                acc[v] += d * d;
            }
        }
        for (size_t v = 0; v < nb; v++) out[v0 + v] = sqrt(acc[v]);
    }
}

/* batches [lo, hi) of vti_bmm_exec */
static void bmm_part(void *ctx, size_t lo, size_t hi, int part)
{
    bmm_job *j = ctx;
    const size_t M = j->M, N = j->N, K = j->K;
    const int ta = j->ta, tb = j->tb;
    vt_exec sub;
    vt_exec_init(&sub, j->e->order, j->e->bound, j->e->seed);
    double *rn = malloc((M + N) * sizeof *rn), *cn = rn ? rn + M : NULL;
    j->err[part] = rn ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory (a batched GEMM part's norms)");
    for (size_t g = lo; g < hi && !j->err[part]; g++) {
        const float *Ag = j->A + g * M * K, *Bg = j->B + g * K * N;
        /* each batch a GEMM in the executor's order (BLAS or the project's loops); the bound of element
         * (g, i, j) is the batch's Cauchy-Schwarz bound coef * |row i of op(A_g)| * |column j of op(B_g)|,
         * the norms fixed-order FP64 sums computed here: the same value for every party, THE bound of
         * the element (there is no tight fallback). The GEMM is computed without vt_gemm's norms (the same
         * computation), and the operand norms in one fixed sequential order whatever the executor's
         * (vt_gemm's depend on its panels and order when K is panelled): the bound is one function of
         * the operands for every party */
        j->err[part] = vt_gemm_plain(&sub, ta, tb, M, N, K, Ag, Bg, j->C + g * M * N);
        if (j->err[part]) break;
        bmm_norms(Ag, M, K, ta ? 1 : K, ta ? M : 1, rn);
        bmm_norms(Bg, N, K, tb ? K : 1, tb ? 1 : N, cn);
        double *b = j->bnd + g * M * N;
        for (size_t i = 0; i < M; i++)
            for (size_t jj = 0; jj < N; jj++) b[i * N + jj] = j->coef * rn[i] * cn[jj];
    }
    if (j->err[part]) snprintf(j->msg[part], sizeof j->msg[part], "%s", vt_errmsg());
    free(rn);
    vt_exec_free(&sub);
}

vt_err vti_bmm_exec(vt_opctx *c)
{
    size_t G = 0, M = 0, N = 0, K = 0;
    VT_FORWARD_IF_ERROR(bmm_args(c->o, &G, &M, &N, &K));
    const int ta = (int)c->o->iarg[4], tb = (int)c->o->iarg[5];
    const float *A = IN(0), *Bm = IN(1);
    const vt_tc_arch *tc = vt_gemm_arith_model(c->gemm_arith);
    if (tc && c->be && c->be->gemm_tc) return c->be->gemm_tc(c->be->impl, tc, G, ta, tb, M, N, K, A, Bm, OUT(0));
    for (size_t g = 0; tc && g < G; g++) /* the tensor-core model, group by group */
        VT_FORWARD_IF_ERROR(tc_gemm(tc, ta, tb, M, N, K, A + g * M * K, Bm + g * K * N, OUT(0) + g * M * N));
    if (tc) return VT_OK;
    /* each batch a GEMM in the executor's order (BLAS or the project's loops); the bound of element
     * (g, i, j) is the batch's Cauchy-Schwarz bound coef * |row i of op(A_g)| * |column j of op(B_g)|,
     * the norms fixed-order FP64 sums computed here: the same value for every party, THE bound of
     * the element (there is no tight fallback) */
    const double coef = vt_bound_coef_red(&c->exec->bound, K, K);
    VT_RETURN_ERROR_IF(!(coef >= 0.0), VT_ERR_LIMIT, "batched GEMM: no bound coefficient for K = %zu", K);
    /* the batches over the threads: each is computed whole by one part (its GEMM, norms and
     * bounds), with an executor of the same order, bound and seed, so the bits are those of one
     * thread (common/vt_par.h) */
    bmm_job *j = malloc(sizeof *j);
    VT_RETURN_ERROR_IF(!j, VT_ERR_NOMEM, "out of memory (a batched GEMM's parts)");
    *j = (bmm_job){.e = c->exec, .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .A = A, .B = Bm, .C = c->s.x64,
                   .bnd = c->s.b64, .coef = coef};
    const int parts = vt_par_for(G, 1 + (1u << 15) / (M * N * K + 1), bmm_part, j);
    vt_err ret = VT_OK;
    for (int p = 0; p < parts && !ret; p++)
        if (j->err[p]) ret = vt_set_error(j->err[p], "%s", j->msg[p]);
    free(j);
    VT_FORWARD_IF_ERROR(ret);
    vt_bounds bd;
    memset(&bd, 0, sizeof bd);
    bd.kind = VT_BOUNDS_ARRAY;
    bd.b = c->s.b64;
    /* the exact evaluator: element (g*M + i, j) = sum_k op(A_g)(i, k) op(B_g)(k, j) */
    bd.xa = A, bd.xa_si = ta ? 1 : K, bd.xa_sj = 0, bd.xa_sk = ta ? M : 1, bd.xa_sg = M * K;
    bd.xb = Bm, bd.xb_si = 0, bd.xb_sj = tb ? K : 1, bd.xb_sk = tb ? 1 : N, bd.xb_sg = K * N;
    bd.xK = K, bd.x_rpb = M;
    ROUND(c->s.x64, &bd, G * M, N, OUT(0));
    return VT_OK;
}

void vti_bmm_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    double G = (double)o->iarg[0], M = (double)o->iarg[1], N = (double)o->iarg[2], K = (double)o->iarg[3];
    (void)p;
    out->flop = 2 * G * M * N * K;
    out->bytes = 4 * G * (M * K + K * N + M * N);
    out->scratch = G * M * N;
    out->norms = M > N ? M : N;
}

/* ------------------------------------------------------------ the plain forms (vt_plainctx) */

vt_err vti_matmul_plain(vt_plainctx *c)
{
    const int64_t *a = c->o->iarg;
    int ta = (int)a[0], tb = (int)a[1], M = (int)a[2], N = (int)a[3], K = (int)a[4];
    const vt_backend *be = c->be;
    vt_conv_geom g;
    size_t Co = 0; /* a strided convolution's input gradient: by output phase, as the verifiable exec */
    const int phase = conv_dgrad_geom(c->prog, (uint32_t)(c->o - c->prog->op), c->o, &g, &Co) && g.s >= 2;
    VTI_PLAIN_BOTH(c, {
        if (be && _Generic((real)0, float: be->gemm_plain32, default: be->gemm_plain64))
            return _Generic((real)0, float: be->gemm_plain32, default: be->gemm_plain64)(
                be->impl, ta, tb, (size_t)M, (size_t)N, (size_t)K, PX(0), PX(1), PY(0));
        if (phase) return PTG(vt_conv_dgrad_plain)(&g, Co, PX(0), PX(1), PY(0));
        PGEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, (real)1, PX(0),
              ta ? M : K, PX(1), tb ? K : N, (real)0, PY(0), N);
        return VT_OK;
    })
}

vt_err vti_bmm_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        int G = (int)a[0], M = (int)a[1], N = (int)a[2], K = (int)a[3], ta = (int)a[4], tb = (int)a[5];
        for (int g = 0; g < G; g++)
            PGEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, (real)1,
                 PX(0) + (size_t)g * M * K, ta ? M : K, PX(1) + (size_t)g * K * N, tb ? K : N, (real)0, PY(0) + (size_t)g * M * N,
                 N);
        return VT_OK;
    })
}

/* ------------------------------------------------------------ CONV2D, CONV2D_WGRAD, CONV2D_DGRAD */
/* iarg B, H, W, C, k, stride, pad, chw, Co: CONV2D x [B*H*W, C] (chw: [B, C*H*W]), W [k*k*C, Co] ->
 * Z [B*Ho*Wo, Co] = im2col(x) W; CONV2D_WGRAD x, dY [B*Ho*Wo, Co] -> dW [k*k*C, Co] = im2col(x)^T dY;
 * CONV2D_DGRAD dY, W -> dX [B*H*W, C] = G(dY) W' (chw 0). The GEMMs of step program 1's im2col and
 * matmul (conv_grad_gather, conv_weight_transpose and matmul) without the im2col tensor (the gathered
 * G) (kernels/vt_cnn.h vt_conv2d, vt_conv2d_wgrad, vt_conv2d_dgrad): the same reductions, hence the
 * same exactly rounded results; the input gradient has program 1's tight bound too. */

static vt_err conv2d_geom(const vt_opdesc *o, vt_conv_geom *g, size_t *Co, size_t *M, size_t *K)
{
    const int64_t *a = o->iarg;
    ERR_IF((a[7] != 0 && a[7] != 1) || a[8] < 1 || a[8] > 65536, "program: \"%s\": bad convolution arguments", o->name);
    if (vt_conv_geom_make(g, a[0], a[1], a[2], a[3], a[4], a[5], a[6], (int)a[7]) != VT_OK) {
        char why[160];
        snprintf(why, sizeof why, "%s", vt_errmsg());
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "program: \"%s\": %s", o->name, why);
    }
    size_t t;
    *Co = (size_t)a[8];
    ERR_IF(__builtin_mul_overflow(g->B * g->Ho, g->Wo, M) || __builtin_mul_overflow(g->k * g->k, g->C, K) ||
               g->B * g->Ho / g->B != g->Ho || __builtin_mul_overflow(*M > *K ? *M : *K, *Co, &t) ||
               __builtin_mul_overflow(*M, *K, &t) || *M > INT_MAX || *K > INT_MAX,
           "program: \"%s\": the convolution is too large", o->name);
    return VT_OK;
}

vt_err vti_conv2d_check(const vt_program *p, const vt_opdesc *o)
{
    vt_conv_geom g;
    size_t Co = 0, M = 0, K = 0;
    VT_FORWARD_IF_ERROR(conv2d_geom(o, &g, &Co, &M, &K));
    if (o->kind != VT_OPK_CONV2D_DGRAD)
        VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, g.B * g.H * g.W * g.C, "input"));
    if (o->kind == VT_OPK_CONV2D) {
        VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, K * Co, "weight"));
        return want(p, o, o->out[0], VT_DT_F32, M * Co, "output");
    }
    if (o->kind == VT_OPK_CONV2D_DGRAD) { /* dY, W -> dX: the input is dY */
        size_t t;
        ERR_IF(g.chw || __builtin_mul_overflow(g.k * g.k, Co, &t) || t > INT_MAX ||
                   __builtin_mul_overflow(t, g.C, &t) || g.B * g.H * g.W > INT_MAX,
               "program: \"%s\": bad input-gradient arguments", o->name);
        VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, M * Co, "output gradient"));
        VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, K * Co, "weight"));
        return want(p, o, o->out[0], VT_DT_F32, g.B * g.H * g.W * g.C, "input gradient");
    }
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, M * Co, "output gradient"));
    return want(p, o, o->out[0], VT_DT_F32, K * Co, "weight gradient");
}

int vt_conv_as_gemm(const vt_opdesc *o, vt_conv_gemm *cg)
{
    if (o->kind != VT_OPK_CONV2D && o->kind != VT_OPK_CONV2D_WGRAD && o->kind != VT_OPK_CONV2D_DGRAD) return 0;
    const int64_t *a = o->iarg; /* B H W C k stride pad chw Co */
    memset(cg, 0, sizeof *cg);
    if (a[8] < 1 || vt_conv_geom_make(&cg->g, a[0], a[1], a[2], a[3], a[4], a[5], a[6], (int)a[7]) != VT_OK) return 0;
    const vt_conv_geom *g = &cg->g;
    cg->Co = (size_t)a[8], cg->dgrad = o->kind == VT_OPK_CONV2D_DGRAD, cg->ta = o->kind == VT_OPK_CONV2D_WGRAD;
    const size_t P = g->B * g->Ho * g->Wo, KC = g->k * g->k * g->C; /* output pixels; im2col's K */
    if (cg->dgrad) {
        cg->M = g->B * g->H * g->W, cg->N = g->C, cg->K = g->k * g->k * cg->Co;
        return !__builtin_mul_overflow(cg->M, cg->K, &cg->n_a) && !__builtin_mul_overflow(cg->K, cg->N, &cg->n_wp);
    }
    cg->M = cg->ta ? KC : P, cg->N = cg->Co, cg->K = cg->ta ? P : KC;
    return !__builtin_mul_overflow(P, KC, &cg->n_a);
}

/* The tensor-core mode (gemm_arith = tc-*; docs/tensorcore.md "The mode"): each kind is step program
 * 1's tensor-core GEMM of the same operands (vt_conv_as_gemm), formed here instead of as tensors, so
 * the model sums the same K terms in the same order and the FP32 results are program 1's bits. */
static vt_err conv2d_tc(vt_opctx *c, const vt_tc_arch *tc)
{
    vt_conv_gemm cg;
    VT_RETURN_ERROR_IF(!vt_conv_as_gemm(c->o, &cg), VT_ERR_INTERNAL, "\"%s\": the convolution is too large", c->o->name);
    float *a = malloc(cg.n_a * sizeof *a), *wp = cg.dgrad ? malloc(cg.n_wp * sizeof *wp) : NULL;
    vt_err e = a && (wp || !cg.dgrad) ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory (\"%s\": its GEMM's operand)", c->o->name);
    if (!e) {
        if (cg.dgrad) {
            vt_conv_dgather_f32(&cg.g, cg.Co, IN(0), a);
            vt_conv_wperm_f32(cg.g.k, cg.g.C, cg.Co, IN(1), wp);
        } else
            vt_im2col_f32(&cg.g, IN(0), a);
        e = tc_op(c, tc, cg.ta, 0, cg.M, cg.N, cg.K, a, cg.dgrad ? wp : IN(1), OUT(0));
    }
    free(a);
    free(wp);
    return e;
}

vt_err vti_conv2d_exec(vt_opctx *c)
{
    vt_conv_geom g;
    size_t Co = 0, M = 0, K = 0;
    VT_FORWARD_IF_ERROR(conv2d_geom(c->o, &g, &Co, &M, &K));
    const vt_tc_arch *tc = vt_gemm_arith_model(c->gemm_arith);
    if (tc) return conv2d_tc(c, tc);
    vt_bounds bd;
    vt_conv_ref ref;
    if (c->o->kind == VT_OPK_CONV2D) {
        VT_FORWARD_IF_ERROR(vt_conv2d(c->exec, &g, Co, IN(0), IN(1), c->s.x64, c->s.rn, c->s.cn, &bd, &ref));
        ROUND(c->s.x64, &bd, M, Co, OUT(0));
    } else if (c->o->kind == VT_OPK_CONV2D_DGRAD) {
        float *wp = malloc(K * Co * sizeof *wp); /* W', the bound's and the exact evaluator's op(B) */
        VT_RETURN_ERROR_IF(!wp, VT_ERR_NOMEM, "out of memory (an input gradient's transposed weight)");
        vt_err err = vt_conv2d_dgrad(c->exec, &g, Co, IN(0), IN(1), wp, c->s.x64, c->s.rn, c->s.cn, &bd, &ref);
        if (!err) err = vt_round(c->rctx, c->op_id, c->s.x64, &bd, g.B * g.H * g.W, g.C, OUT(0));
        free(wp);
        VT_FORWARD_IF_ERROR(err);
    } else {
        VT_FORWARD_IF_ERROR(vt_conv2d_wgrad(c->exec, &g, Co, IN(0), IN(1), c->s.x64, c->s.rn, c->s.cn, &bd, &ref));
        ROUND_BATCH(c->s.x64, &bd, K, Co, OUT(0)); /* a sum over the batch's pixels */
    }
    return VT_OK;
}

void vti_conv2d_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p;
    const int64_t *a = o->iarg;
    const double Ho = (double)((a[1] + 2 * a[6] - a[4]) / a[5] + 1), Wo = (double)((a[2] + 2 * a[6] - a[4]) / a[5] + 1);
    const double M = (double)a[0] * Ho * Wo, K = (double)(a[4] * a[4] * a[3]), N = (double)a[8];
    double rows = o->kind == VT_OPK_CONV2D ? M : K;
    out->flop = 2 * M * N * K;
    out->bytes = 4 * ((double)a[0] * (double)a[1] * (double)a[2] * (double)a[3] + K * N + M * N);
    out->scratch = rows * N;
    out->norms = rows > N ? rows : N;
    if (o->kind == VT_OPK_CONV2D_DGRAD) { /* [B*H*W, C] from the phase classes: about M*Co*k*k*C products */
        const double Min = (double)a[0] * (double)a[1] * (double)a[2], C = (double)a[3];
        out->scratch = Min * C;
        out->norms = Min > C ? Min : C;
    }
}

void vt_op_tc_cost(const vt_opdesc *o, double *flop, double *floats)
{
    vt_conv_gemm cg;
    *flop = *floats = 0;
    if (!vt_conv_as_gemm(o, &cg)) return;
    *flop = 2 * (double)cg.M * (double)cg.N * (double)cg.K;
    *floats = (double)cg.n_a + (double)cg.n_wp;
}

/* the plain form keeps the im2col matrix (a scratch buffer, not a tensor) and one CBLAS GEMM */
vt_err vti_conv2d_plain(vt_plainctx *c)
{
    const int64_t *a = c->o->iarg;
    vt_conv_geom g;
    memset(&g, 0, sizeof g);
    if (vt_conv_geom_make(&g, a[0], a[1], a[2], a[3], a[4], a[5], a[6], (int)a[7]))
        return vt_set_error(VT_ERR_INTERNAL, "\"%s\": bad convolution", c->o->name);
    const int M = (int)(g.B * g.Ho * g.Wo), K = (int)(g.k * g.k * g.C), N = (int)a[8];
    const int fwd = c->o->kind == VT_OPK_CONV2D;
    if (c->o->kind == VT_OPK_CONV2D_DGRAD) { /* the phase classes' GEMMs over tiles gathered from dY */
        VTI_PLAIN_BOTH(c, { return PTG(vt_conv2d_dgrad_plain)(&g, (size_t)N, PX(0), PX(1), PY(0)); })
    }
    VTI_PLAIN_BOTH(c, {
        real *col = malloc((size_t)M * (size_t)K * sizeof *col);
        VT_RETURN_ERROR_IF(!col, VT_ERR_NOMEM, "out of memory (a convolution's columns)");
        PTG(vt_im2col)(&g, PX(0), col);
        if (fwd)
            PGEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, (real)1, col, K, PX(1), N, (real)0, PY(0), N);
        else
            PGEMM(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, (real)1, col, K, PX(1), N, (real)0, PY(0), N);
        free(col);
        return VT_OK;
    })
}

/* ------------------------------------------------------------ backward facets (vt_grad_fn) */

/* The gradient of operand i (0: A, 1: B) of C = op(A) op(B) (M x N, inner K) as one product of
 * the same shape rules, written in the operand's stored layout: dA = dC op(B)^T, dB = op(A)^T dC.
 * Out: the product's operands x, y, their transpositions and its M, N, K. */
static void gemm_grad_args(int64_t ta, int64_t tb, int64_t M, int64_t N, int64_t K, uint32_t i, uint32_t a,
                           uint32_t b, uint32_t dc, uint32_t *x, uint32_t *y, int64_t *g)
{
    if (i == 0 && !ta) *x = dc, *y = b, g[0] = 0, g[1] = !tb, g[2] = M, g[3] = K, g[4] = N; /* dA [M, K] */
    else if (i == 0) *x = b, *y = dc, g[0] = tb, g[1] = 1, g[2] = K, g[3] = M, g[4] = N;     /* dA [K, M] */
    else if (!tb) *x = a, *y = dc, g[0] = !ta, g[1] = 0, g[2] = K, g[3] = N, g[4] = M;      /* dB [K, N] */
    else *x = dc, *y = a, g[0] = 1, g[1] = ta, g[2] = N, g[3] = K, g[4] = M;                /* dB [N, K] */
}

vt_grad_rule vti_matmul_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                             const char *layer)
{
    if (dx == VT_GRAD_QUERY) return VT_GRAD_OPS;
    const int64_t *a = o->iarg; /* transA transB M N K */
    uint32_t x, y;
    int64_t g[5];
    gemm_grad_args(a[0], a[1], a[2], a[3], a[4], i, o->in[0], o->in[1], dy[0], &x, &y, g);
    vt_prog_op(p, VT_OPK_MATMUL, (const uint32_t[]){x, y}, 2, &dx, 1, g, 5, NULL, 0, "%s %s-gradient GEMM", layer,
               i ? "weight" : "input");
    return VT_GRAD_OPS;
}

vt_grad_rule vti_bmm_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                          const char *layer)
{
    if (dx == VT_GRAD_QUERY) return VT_GRAD_OPS;
    const int64_t *a = o->iarg; /* G M N K transA transB */
    uint32_t x, y;
    int64_t g[5];
    gemm_grad_args(a[4], a[5], a[1], a[2], a[3], i, o->in[0], o->in[1], dy[0], &x, &y, g);
    vt_prog_op(p, VT_OPK_BMM, (const uint32_t[]){x, y}, 2, &dx, 1, (const int64_t[]){a[0], g[2], g[3], g[4], g[0], g[1]},
               6, NULL, 0, "%s %s gradient", layer, i ? "B" : "A");
    return VT_GRAD_OPS;
}

/* x, W -> the weight gradient conv2d_weight_grad(x, dY) and the input gradient conv2d_input_grad(dY, W)
 * (whose input is channels-last: the gradient of a channels-first input - the image itself - is
 * not a kind, and no builder asks for it) */
vt_grad_rule vti_conv2d_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                             const char *layer)
{
    if (i == 0 && o->iarg[7]) return VT_GRAD_FUSED;
    if (dx == VT_GRAD_QUERY) return VT_GRAD_OPS;
    int64_t g[9];
    memcpy(g, o->iarg, sizeof g);
    if (i == 1)
        vt_prog_op(p, VT_OPK_CONV2D_WGRAD, (const uint32_t[]){o->in[0], dy[0]}, 2, &dx, 1, g, 9, NULL, 0,
                   "%s weight gradient", layer);
    else
        vt_prog_op(p, VT_OPK_CONV2D_DGRAD, (const uint32_t[]){dy[0], o->in[1]}, 2, &dx, 1, g, 9, NULL, 0,
                   "%s input gradient", layer);
    return VT_GRAD_OPS;
}
