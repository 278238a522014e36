/* vt_ops.c - the operation kinds of the step program: the table KINDS, generated from the list
 * (vt_kinds.h), and the first kinds' functions (loaders, GEMM, the MLP's chains and sums, the
 * optimisers, augmentation); the CNN's and the transformer's are in vt_ops_cnn.c, vt_ops_gpt.c.
 * See vt_ops.h. */
#include "vt_ops.h"

#include <string.h>

#include "../common/vt_bytes.h"
#include "../kernels/vt_kernels.h"
#include "vt_philox.h"
#include "vt_recipe.h"

#include "vt_ops_int.h"
#include "vt_philox_hd.h"

vt_err vti_op_want(const vt_program *p, const vt_opdesc *o, uint32_t id, vt_dtype dt, size_t n, const char *what)
{
    const vt_tensor *t = T(p, id);
    VT_RETURN_ERROR_IF(t->dtype != dt || t->n != n, VT_ERR_INTERNAL,
                       "program: operation \"%s\": %s %s is %s with %zu elements, expected %s with %zu", o->name, what,
                       t->name, vt_dtype_name((vt_dtype)t->dtype), t->n, vt_dtype_name(dt), n);
    return VT_OK;
}

void vti_cost_elementwise(const vt_program *p, const vt_opdesc *o, double flop_per, vt_opcost *out)
{
    double n = (double)T(p, o->out[0])->n, bytes = 0;
    for (uint32_t k = 0; k < o->n_in; k++) bytes += (double)T(p, o->in[k])->n * vt_dtype_size((vt_dtype)T(p, o->in[k])->dtype);
    for (uint32_t k = 0; k < o->n_out; k++) bytes += (double)T(p, o->out[k])->n * 4;
    out->flop = flop_per * n;
    out->bytes = bytes;
    out->scratch = n * o->n_out;
    out->norms = 0;
}

/* ------------------------------------------------------------ LOAD_BATCH */

vt_err vti_load_batch_check(const vt_program *p, const vt_opdesc *o)
{
    int64_t B = o->iarg[0];
    const vt_tensor *x = T(p, o->out[0]);
    VT_RETURN_ERROR_IF(B < 1 || x->rank != 2 || x->shape[0] != (uint64_t)B || x->dtype != VT_DT_F32, VT_ERR_INTERNAL,
                       "program: \"%s\": the batch is not [B, d] F32", o->name);
    return want(p, o, o->out[1], VT_DT_U8, (size_t)B, "labels");
}

vt_err vti_load_batch_exec(vt_opctx *c)
{
    VT_RETURN_ERROR_IF(!c->ds, VT_ERR_ARG, "loading a batch needs the dataset");
    const vt_tensor *x = T(c->prog, c->o->out[0]);
    VT_RETURN_ERROR_IF(c->ds->d != x->shape[1], VT_ERR_ARG, "the dataset's examples have %u values, the program %u",
                       c->ds->d, x->shape[1]);
    VT_RETURN_ERROR_IF(!c->batch_idx, VT_ERR_INTERNAL, "loading a batch needs the step's example indices");
    return vt_data_batch(c->ds, c->batch_idx, (size_t)c->o->iarg[0], OUT(0), (uint8_t *)OUT(1));
}

void vti_load_batch_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = (double)T(p, o->out[0])->n * 4 + (double)T(p, o->out[1])->n;
}

/* ------------------------------------------------------------ SCHEDULE */
/* iarg: schedule kind, warmup, decay_every, steps; farg: lr, decay_factor, final_lr_factor */

vt_err vti_schedule_check(const vt_program *p, const vt_opdesc *o)
{
    VT_RETURN_ERROR_IF(o->iarg[0] < 0 || o->iarg[0] > VT_SCHED_COSINE || o->iarg[1] < 0 || o->iarg[2] < 0 ||
                           o->iarg[3] < 1,
                       VT_ERR_INTERNAL, "program: \"%s\": bad schedule arguments", o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_F64, 1, "step count"));
    return want(p, o, o->out[1], VT_DT_F64, 1, "learning rate");
}

vt_err vti_schedule_exec(vt_opctx *c)
{
    const vt_opdesc *o = c->o;
    vt_recipe r;
    memset(&r, 0, sizeof r);
    r.schedule = (vt_sched_kind)o->iarg[0];
    r.warmup = (uint64_t)o->iarg[1];
    r.decay_every = (uint64_t)o->iarg[2];
    r.steps = (uint64_t)o->iarg[3];
    r.lr = o->farg[0], r.decay_factor = o->farg[1], r.final_lr_factor = o->farg[2];
    VT_RETURN_ERROR_IF(c->step > ((uint64_t)1 << 53), VT_ERR_LIMIT, "step %llu has no exact FP64 step count",
                       (unsigned long long)c->step);
    double t = (double)c->step, lr = vt_recipe_lr(&r, c->step);
    memcpy(OUT(0), &t, 8);
    memcpy(OUT(1), &lr, 8);
    return VT_OK;
}

void vti_schedule_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p, (void)o;
    memset(out, 0, sizeof *out);
    out->flop = 64, out->bytes = 16;
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

vt_err vti_matmul_exec(vt_opctx *c)
{
    const int64_t *a = c->o->iarg;
    size_t M = (size_t)a[2], N = (size_t)a[3], K = (size_t)a[4];
    vt_bounds bd;
    if (c->be && c->be->gemm_round) return c->be->gemm_round(c->be->impl, c->rc, c->op_id, (int)a[0], (int)a[1], M, N, K, IN(0), IN(1), OUT(0));
    VT_FORWARD_IF_ERROR(vt_gemm(c->exec, (int)a[0], (int)a[1], M, N, K, IN(0), IN(1), c->s.x64, c->s.rn, c->s.cn, &bd));
    ROUND(c->s.x64, &bd, M, N, OUT(0));
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

/* ------------------------------------------------------------ elementwise and sums */

vt_err vti_same_n_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    for (uint32_t k = 0; k < o->n_in; k++) VT_FORWARD_IF_ERROR(want(p, o, o->in[k], VT_DT_F32, n, "input"));
    return want(p, o, o->out[0], VT_DT_F32, n, "output");
}

vt_err vti_bias_add_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x = T(p, o->in[0]);
    VT_RETURN_ERROR_IF(x->rank != 2 || x->dtype != VT_DT_F32, VT_ERR_INTERNAL, "program: \"%s\": X is not [M, N] F32",
                       o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, x->shape[1], "bias"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bias_add_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bias_add(x->shape[0], x->shape[1], IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_bias_add_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

vt_err vti_relu_exec(vt_opctx *c) /* exact, nothing to round */
{
    size_t n = NOUT(0);
    const float *z = IN(0);
    float *a = OUT(0);
    for (size_t i = 0; i < n; i++) a[i] = z[i] > 0.0f ? z[i] : 0.0f;
    return VT_OK;
}

vt_err vti_relu_bwd_exec(vt_opctx *c) /* exact */
{
    size_t n = NOUT(0);
    const float *z = IN(0), *da = IN(1);
    float *dz = OUT(0);
    for (size_t i = 0; i < n; i++) dz[i] = z[i] > 0.0f ? da[i] : 0.0f;
    return VT_OK;
}

static void relu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 1, out);
    out->scratch = 0;
}

vt_err vti_relu_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_relu_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
void vti_relu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { relu_cost(p, o, out); }
void vti_relu_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { relu_cost(p, o, out); }

vt_err vti_op_rows(const vt_program *p, const vt_opdesc *o, vt_tensor const **x)
{
    *x = T(p, o->in[0]);
    VT_RETURN_ERROR_IF((*x)->rank != 2 || (*x)->dtype != VT_DT_F32, VT_ERR_INTERNAL,
                       "program: \"%s\": input is not [N, C] F32", o->name);
    return VT_OK;
}

vt_err vti_softmax_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_softmax_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_softmax(c->exec, x->shape[0], x->shape[1], IN(0), c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_softmax_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 30, out); }

vt_err vti_xent_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_U8, x->shape[0], "labels"));
    VT_RETURN_ERROR_IF(x->shape[1] > 256, VT_ERR_INTERNAL, "program: \"%s\": more than 256 classes", o->name);
    return want(p, o, o->out[0], VT_DT_F32, o->kind == VT_OPK_XENT_LOSS ? 1 : x->n, "output");
}

vt_err vti_xent_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    double lx, lb;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(
        vt_xent_loss(c->exec, x->shape[0], x->shape[1], IN(0), (const uint8_t *)IN(1), &lx, &lb, &bd));
    ROUND(&lx, &bd, 1, 1, OUT(0));
    return VT_OK;
}

vt_err vti_xent_bwd_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const uint8_t *y = (const uint8_t *)IN(1);
    for (uint32_t i = 0; i < x->shape[0]; i++) /* the kernel's precondition: labels < C */
        VT_RETURN_ERROR_IF(y[i] >= x->shape[1], VT_ERR_ARG, "label %u of example %u is not a class", y[i], i);
    vt_xent_backward(x->shape[0], x->shape[1], IN(0), y, c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_xent_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 30, out);
    out->scratch = (double)T(p, o->in[0])->n;
}

vt_err vti_xent_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_xent_check(p, o); }
void vti_xent_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { vti_xent_cost(p, o, out); }

vt_err vti_colsum_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    return want(p, o, o->out[0], VT_DT_F32, x->shape[1], "output");
}

vt_err vti_colsum_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_colsum(c->exec, x->shape[0], x->shape[1], IN(0), c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, 1, x->shape[1], OUT(0));
    return VT_OK;
}

void vti_colsum_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    const vt_tensor *x = T(p, o->in[0]);
    out->flop = 2.0 * (double)x->n;
    out->bytes = 4.0 * ((double)x->n + x->shape[1]);
    out->scratch = x->shape[1];
    out->norms = 0;
}

/* ------------------------------------------------------------ optimisers */

static vt_err scalar_f64(const vt_program *p, const vt_opdesc *o, uint32_t k)
{
    return want(p, o, o->in[k], VT_DT_F64, 1, "scalar");
}

vt_err vti_sgd_apply_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, n, "weights"));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, n, "velocity"));
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_F32, n, "output")); /* written as n FP32 values */
    return scalar_f64(p, o, 2);
}

vt_err vti_adam_moments_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->in[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(want(p, o, o->in[k], VT_DT_F32, n, "input"));
    for (uint32_t k = 0; k < 2; k++) VT_FORWARD_IF_ERROR(want(p, o, o->out[k], VT_DT_F32, n, "output"));
    return VT_OK;
}

vt_err vti_adam_apply_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(want(p, o, o->in[k], VT_DT_F32, n, "input"));
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_F32, n, "output")); /* written as n FP32 values */
    VT_FORWARD_IF_ERROR(scalar_f64(p, o, 3));
    return scalar_f64(p, o, 4);
}

static double f64_in(vt_opctx *c, uint32_t k)
{
    double v;
    memcpy(&v, IN(k), 8);
    return v;
}

vt_err vti_sgd_velocity_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vt_sgd_velocity(n, IN(0), IN(1), IN(2), c->o->farg[0], c->o->farg[1], c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

vt_err vti_sgd_apply_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vt_sgd_apply(n, IN(0), IN(1), f64_in(c, 2), c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

vt_err vti_adam_moments_exec(vt_opctx *c)
{
    /* both moments in one pass; their elements are numbered m then v (vt_ops.h) */
    size_t n = NOUT(0);
    vt_adam_moments(n, IN(0), IN(1), IN(2), c->o->farg[0], c->o->farg[1], c->s.x64, c->s.x64 + n);
    ROUND(c->s.x64, NULL, 1, 2 * n, c->s.f32s);
    memcpy(OUT(0), c->s.f32s, n * sizeof(float));
    memcpy(OUT(1), c->s.f32s + n, n * sizeof(float));
    return VT_OK;
}

vt_err vti_adam_apply_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    double t = f64_in(c, 3);
    VT_RETURN_ERROR_IF(!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t, VT_ERR_ARG,
                       "Adam's step count %g is not a step", t);
    vt_adam_apply(n, IN(0), IN(1), IN(2), f64_in(c, 4), c->o->farg[0], c->o->farg[1], c->o->farg[2], (uint64_t)t,
                  c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

vt_err vti_sgd_velocity_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
void vti_sgd_velocity_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 4, out); }
void vti_sgd_apply_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 4, out); }
void vti_adam_moments_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }
void vti_adam_apply_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }

/* ------------------------------------------------------------ AUGMENT */

vt_err vti_augment_check(const vt_program *p, const vt_opdesc *o)
{
    const int64_t *a = o->iarg;
    const vt_tensor *x = T(p, o->in[0]);
    VT_RETURN_ERROR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[0] > 4096 || a[1] > 4096 || a[2] > 4096 || a[3] < 0 ||
                           a[3] > a[1] || a[3] > a[2] || (a[4] != 0 && a[4] != 1) || x->rank != 2 ||
                           x->dtype != VT_DT_F32 || (int64_t)x->shape[1] != a[0] * a[1] * a[2],
                       VT_ERR_INTERNAL, "program: \"%s\": bad augmentation arguments or input", o->name);
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

void vt_augment_draw(uint64_t seed, uint64_t step, uint64_t b, uint32_t pad, int flip, uint32_t *oy, uint32_t *ox,
                     int *fl)
{
    vti_augment_draw(seed, step, b, pad, flip, oy, ox, fl); /* model/vt_philox_hd.h (shared with the GPU) */
}

int64_t vt_augment_source(size_t H, size_t W, uint32_t pad, uint32_t oy, uint32_t ox, int fl, size_t e)
{
    return vti_augment_source(H, W, pad, oy, ox, fl, e);
}

vt_err vti_augment_exec(vt_opctx *c) /* exact: values are moved, never computed */
{
    const int64_t *a = c->o->iarg;
    const size_t C = (size_t)a[0], H = (size_t)a[1], W = (size_t)a[2], d = C * H * W;
    const uint32_t pad = (uint32_t)a[3];
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const float *in = IN(0);
    float *out = OUT(0);
    for (size_t b = 0; b < x->shape[0]; b++) {
        uint32_t oy, ox;
        int fl;
        vt_augment_draw((uint64_t)a[5], c->step, b, pad, (int)a[4], &oy, &ox, &fl);
        for (size_t e = 0; e < d; e++) {
            int64_t src = vt_augment_source(H, W, pad, oy, ox, fl, e);
            out[b * d + e] = src < 0 ? 0.0f : in[b * d + (size_t)src];
        }
    }
    return VT_OK;
}

void vti_augment_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 8.0 * (double)T(p, o->in[0])->n;
}

/* ------------------------------------------------------------ the table */

/* generated from the list (vt_kinds.h): one entry per kind, its functions named by its stem */
static const vt_opkind KINDS[VT_OPK_COUNT] = {
#define VTI_KIND_ROW(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, rx, dev, st)                                           \
    [VT_OPK_##ID] = {.name = nm, .rounded = rd, .n_in = ni, .n_out = no, .n_iarg = nia, .n_farg = nfa,                 \
                     .family = VT_FAM_##fam, .red = VT_RED_##rx, .device = VT_DEV_##dev, .iargs = ia, .fargs = fa,    \
                     .impl = #st, .check = vti_##st##_check, .exec = vti_##st##_exec, .cost = vti_##st##_cost},
    VT_KINDS(VTI_KIND_ROW)
#undef VTI_KIND_ROW
};

const vt_opkind *vt_opkind_get(uint16_t kind)
{
    return kind >= 1 && kind < VT_OPK_COUNT ? &KINDS[kind] : NULL;
}

int vt_op_batch_reduction(const vt_opdesc *o)
{
    const vt_opkind *k = vt_opkind_get(o->kind);
    return k && (k->red == VT_RED_BATCH || (k->red == VT_RED_GEMM_K && o->n_iarg >= 1 && o->iarg[0] == 1));
}

vt_err vt_op_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_opkind *k = vt_opkind_get(o->kind);
    VT_RETURN_ERROR_IF(!k, VT_ERR_INTERNAL, "program: operation \"%s\" has unknown kind %u", o->name, o->kind);
    VT_RETURN_ERROR_IF((k->n_in == VT_VARIADIC ? o->n_in < 1 : o->n_in != k->n_in) || o->n_out != k->n_out ||
                           o->n_iarg != k->n_iarg || o->n_farg != k->n_farg,
                       VT_ERR_INTERNAL, "program: operation \"%s\" (%s) has the wrong number of inputs, outputs or arguments",
                       o->name, k->name);
    VT_RETURN_ERROR_IF(o->n_out < 1 || o->n_out > VT_MAX_OP_OUTPUTS, VT_ERR_INTERNAL,
                       "program: operation \"%s\" has %u outputs (1..%d)", o->name, o->n_out, VT_MAX_OP_OUTPUTS);
    for (uint32_t i = 0; i < o->n_in; i++)
        VT_RETURN_ERROR_IF(o->in[i] >= p->n_tensors, VT_ERR_INTERNAL, "program: \"%s\": input %u is no tensor", o->name, i);
    for (uint32_t i = 0; i < o->n_out; i++)
        VT_RETURN_ERROR_IF(o->out[i] >= p->n_tensors, VT_ERR_INTERNAL, "program: \"%s\": output %u is no tensor", o->name,
                           i);
    return k->check(p, o);
}
