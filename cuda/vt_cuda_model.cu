/* vt_cuda_model.cu - device-resident execution of a model's step (docs/cuda.md, "Device-resident
 * steps"). The model's arenas are mirrored on the GPU; the MLP's operation kinds run there:
 * matmul (the rounded GEMM of vt_cuda.cu on device operands), bias_add, relu, relu_backward,
 * softmax, cross_entropy, cross_entropy_backward, column_sum, sgd_velocity, sgd_apply,
 * adam_moments, adam_apply. Their per-element chains are kernels/vt_kernels_impl.h and their
 * rounding rounding_log/vt_round_impl.h: the code the CPU kernels run. Any other kind runs on the
 * CPU: its inputs and outputs come to the host, its outputs go back (vt_model.c drives this).
 *
 * What crosses: at the start of a step the state (the host's copy is the reference between steps:
 * set_state, checkpoints and resumes change it there); per fallback operation its tensors; per
 * GEMM the flagged count, indices and decisions; per column sum its decisions (a few per column);
 * at the end the per-operation failure words, the state (what the state hash reads) and the loss.
 * Failures inside an elementwise kernel (NaN, beyond FP32 range, a label that is no class) are
 * recorded per operation as the smallest failing index (an integer atomicMin: the same value
 * whatever the threads' order) and reported, as vt_round reports them, before anything later. */
#include "vt_cuda_int.h"

extern "C" {
#include "../model/vt_model.h"
#include "../model/vt_ops.h"
#include "../model/vt_program.h"
}
#include "../kernels/vt_kernels_impl.h"

#define NOERR 0xffffffffffffffffULL

void vt__cuda_model_free(vt_cuda *g)
{
    if (g->dar[VT_TC_PARAM]) cudaFree(g->dar[VT_TC_PARAM]);
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++)
        if (g->dar[c]) cudaFree(g->dar[c]);
    if (g->derr) cudaFree(g->derr);
    free(g->h_err);
    memset(g->dar, 0, sizeof g->dar);
    memset(g->dar_bytes, 0, sizeof g->dar_bytes);
    g->derr = NULL;
    g->h_err = NULL;
    g->derr_n = 0;
    g->model = NULL;
}

static void *dt(vt_cuda *g, const vt_model *m, uint32_t t)
{
    const vt_tensor *d = &m->prog.t[t];
    return g->dar[d->cls] + d->off;
}

/* ------------------------------------------------------------------ kernels */

/* RN32 of a fixed chain's FP64 value (bound 0), or the element's failure */
__device__ __forceinline__ void put32(double v, float *out, unsigned long long *err, size_t e)
{
    float f = (float)v;
    *out = f;
    if (!vt__bits_finite(vt_hd_bits32(f)))
        atomicMin(err, ((unsigned long long)e << 8) | (unsigned long long)(vt_hd_isnan(v) ? VT__EL_NAN : VT__EL_RANGE));
}

__global__ void k_bias(size_t M, size_t N, const float *x, const float *b, float *y, unsigned long long *err)
{
    FOR_EACH(e, M * N) put32(vt__bias1(x[e], b[e % N]), &y[e], err, e);
}

__global__ void k_relu(size_t n, const float *z, float *a)
{
    FOR_EACH(e, n) a[e] = z[e] > 0.0f ? z[e] : 0.0f;
}

__global__ void k_relu_bwd(size_t n, const float *z, const float *da, float *dz)
{
    FOR_EACH(e, n) dz[e] = z[e] > 0.0f ? da[e] : 0.0f;
}

/* one thread per row; p is FP64 scratch of N x C */
__global__ void k_softmax(size_t N, size_t C, const float *z, double *p, float *out, unsigned long long *err)
{
    FOR_EACH(i, N)
    {
        vt__softmax_row(C, z + i * C, p + i * C);
        for (size_t c = 0; c < C; c++) put32(p[i * C + c], &out[i * C + c], err, i * C + c);
    }
}

/* one thread: the loss is RN32 of the exact sum of the l_i */
__global__ void k_loss(size_t N, size_t C, const float *P, const uint8_t *y, float *out, unsigned long long *err)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    vt_xacc acc;
    vt__xacc_init(&acc);
    const double dn = (double)N;
    for (size_t i = 0; i < N; i++) {
        if (y[i] >= C) {
            atomicMin(err, (unsigned long long)VT__EL_LABEL);
            return;
        }
        vt__xacc_add(&acc, vt__xent_l1(P[i * C + y[i]], dn));
    }
    put32((double)vt__xacc_round32(&acc), out, err, 0);
}

__global__ void k_xent_bwd(size_t N, size_t C, const float *P, const uint8_t *y, float *dz, unsigned long long *err)
{
    FOR_EACH(e, N * C)
    {
        size_t i = e / C, c = e % C;
        if (y[i] >= C) {
            atomicMin(err, ((unsigned long long)e << 8) | VT__EL_LABEL);
            continue;
        }
        put32(vt__xent_bwd1(P[e], c == y[i], (double)N), &dz[e], err, e);
    }
}

/* column sums of X [M, N]: one thread per column; the exact value, and the decision of the record
 * rule on the party's value x = RN64(exact) (within the bound of any evaluation) */
__global__ void k_colsum(size_t M, size_t N, const float *X, vt_bound_cfg cfg, int record, float *out, vt_epi_res *res)
{
    FOR_EACH(j, N)
    {
        vt_xacc acc;
        vt__xacc_init(&acc);
        for (size_t i = 0; i < M; i++) vt__xacc_add(&acc, (double)X[i * N + j]);
        const float one = 1.0f;
        vt_epi_res r;
        r.B = vt__bound_of_terms(&cfg, M, X + j, N, &one, 0);
        r.x = vt__xacc_round64(&acc);
        r.bits = vt_hd_bits32(vt__xacc_round32(&acc));
        r.code = VT__EL_OK;
        r.entry = r.up = 0;
        r.eval = 2;
        if (!vt__bits_finite(r.bits)) {
            r.code = vt_hd_isnan(r.x) ? VT__EL_NAN : VT__EL_RANGE;
        } else if (record) {
            /* the record rule on x = RN64(exact), its second half with the exact RN32 in hand */
            uint32_t rb = r.bits;
            float f;
            int logged, isv, up;
            int code = vt__record1(r.x, r.B, &f, &logged, &isv, &up);
            r.bits = vt_hd_bits32(f);
            vt__record_tail(r.x, r.B, code, logged, vt__record_needs_exact(r.x, r.B, code, logged) ? rb : 0u, &r);
            if (r.code != VT__EL_OK) r.bits = rb;
            else if (!r.entry) r.bits = rb; /* unlogged: RN32(x) = RN32(exact) */
        }
        out[j] = vt_hd_f32(r.bits);
        res[j] = r;
    }
}

__global__ void k_sgd_vel(size_t n, const float *w, const float *g, const float *v, double mu, double wd, float *out,
                          unsigned long long *err)
{
    FOR_EACH(e, n) put32(vt__sgd_velocity1(w[e], g[e], v[e], mu, wd), &out[e], err, e);
}

__global__ void k_sgd_apply(size_t n, const float *w, const float *v, const double *lr, float *out,
                            unsigned long long *err)
{
    FOR_EACH(e, n) put32(vt__sgd_apply1(w[e], v[e], *lr), &out[e], err, e);
}

/* both moments; elements numbered m then v */
__global__ void k_adam_mom(size_t n, const float *g, const float *m, const float *v, double b1, double b2, float *mo,
                           float *vo, unsigned long long *err)
{
    const double c1 = 1.0 - b1, c2 = 1.0 - b2;
    FOR_EACH(e, n)
    {
        double a, b;
        vt__adam_moments1(g[e], m[e], v[e], b1, b2, c1, c2, &a, &b);
        put32(a, &mo[e], err, e);
        put32(b, &vo[e], err, n + e);
    }
}

__global__ void k_adam_apply(size_t n, const float *w, const float *m, const float *v, const double *t,
                             const double *lr, double b1, double b2, double eps, float *out, unsigned long long *err)
{
    double tt = *t;
    if (!(tt >= 1 && tt <= 0x1p53) || tt != (double)(uint64_t)tt) {
        if (blockIdx.x == 0 && threadIdx.x == 0) atomicMin(err, (unsigned long long)VT__EL_STEPS);
        return;
    }
    const double bc1 = 1.0 - vt__powi(b1, (uint64_t)tt), bc2 = 1.0 - vt__powi(b2, (uint64_t)tt);
    FOR_EACH(e, n) put32(vt__adam_apply1(w[e], m[e], v[e], *lr, bc1, bc2, eps), &out[e], err, e);
}

/* ------------------------------------------------------------------ driver */

static vt_err upload_class(vt_cuda *g, const vt_model *m, int c)
{
    if (g->dar_bytes[c])
        CU(cudaMemcpyAsync(g->dar[c], m->arena[c], g->dar_bytes[c], cudaMemcpyHostToDevice, g->s));
    return VT_OK;
}

extern "C" vt_err vt_cuda_run_begin(vt_cuda *g, vt_model *m)
{
    (void)cudaGetLastError(); /* not an error of this step */
    CU(cudaSetDevice(g->dev));
    static const int classes[] = {VT_TC_PARAM, VT_TC_INPUT, VT_TC_ACT, VT_TC_GRAD};
    int same = g->model == (const void *)m && g->derr_n == m->prog.n_ops + 1;
    for (int k = 0; k < 4 && same; k++) same = g->dar_bytes[classes[k]] == m->prog.arena_bytes[classes[k]];
    if (!same) {
        vt__cuda_model_free(g);
        for (int k = 0; k < 4; k++) {
            int c = classes[k];
            size_t b = m->prog.arena_bytes[c];
            CU(cudaMalloc((void **)&g->dar[c], b ? b : 8));
            g->dar_bytes[c] = b;
        }
        g->dar[VT_TC_OPT] = g->dar[VT_TC_BUFFER] = g->dar[VT_TC_PARAM];
        g->derr_n = m->prog.n_ops + 1;
        CU(cudaMalloc((void **)&g->derr, g->derr_n * sizeof(unsigned long long)));
        g->h_err = (unsigned long long *)malloc(g->derr_n * sizeof(unsigned long long));
        VT_RETURN_ERROR_IF(!g->h_err, VT_ERR_NOMEM, "out of memory");
        g->model = m;
        for (int k = 1; k < 4; k++) VT_FORWARD_IF_ERROR(upload_class(g, m, classes[k]));
    }
    VT_FORWARD_IF_ERROR(upload_class(g, m, VT_TC_PARAM)); /* the state: the host's is the reference */
    CU(cudaMemsetAsync(g->derr, 0xff, g->derr_n * sizeof(unsigned long long), g->s));
    return VT_OK;
}

/* The first failure any device operation recorded, reported as vt_round would. */
static vt_err check_pending(vt_cuda *g, vt_rctx *rc)
{
    CU(cudaMemcpyAsync(g->h_err, g->derr, g->derr_n * sizeof(unsigned long long), cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    for (uint32_t op = 1; op < g->derr_n; op++) {
        if (g->h_err[op] == NOERR) continue;
        vt_epi_res r;
        memset(&r, 0, sizeof r);
        r.code = (uint8_t)(g->h_err[op] & 0xff);
        r.x = r.code == VT__EL_RANGE ? (double)INFINITY : (double)NAN;
        return vt_epi_fail(rc, op, g->h_err[op] >> 8, &r);
    }
    return VT_OK;
}

/* the bookkeeping of a rounded operation whose elements need no judgement (bound 0): its log record
 * (record mode), its counts */
static vt_err rounded(vt_rctx *rc, uint32_t op, size_t n) { return vt_epi_finish(rc, op, 1, n, 0, NULL, NULL, NULL); }

extern "C" vt_err vt_cuda_run_op(vt_cuda *g, vt_model *m, vt_rctx *rc, uint32_t op_id, uint64_t step)
{
    (void)step;
    const vt_opdesc *o = &m->prog.op[op_id];
    const vt_tensor *t0 = &m->prog.t[o->in[0]];
    unsigned long long *err = g->derr + op_id;
    const int64_t *a = o->iarg;
    const double *fa = o->farg;
#define IN(k) ((const float *)dt(g, m, o->in[k]))
#define OUT(k) ((float *)dt(g, m, o->out[k]))
#define NOUT(k) (m->prog.t[o->out[k]].n)
    if (m->prog.op[op_id].kind != VT_OPK_RELU && m->prog.op[op_id].kind != VT_OPK_RELU_BWD && !vt_epi_supported(rc))
        return VT_ERR_UNSUPPORTED; /* a log replay: the rounded kinds judge entries on the host */
    switch (o->kind) {
    case VT_OPK_MATMUL:
        VT_FORWARD_IF_ERROR(check_pending(g, rc));
        return vt__cuda_gemm_dev(g, rc, op_id, (int)a[0], (int)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4], IN(0),
                                 IN(1), OUT(0));
    case VT_OPK_BIAS_ADD:
        k_bias<<<GRID(t0->n), 0, g->s>>>(t0->shape[0], t0->shape[1], IN(0), IN(1), OUT(0), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, t0->n);
    case VT_OPK_RELU:
        k_relu<<<GRID(NOUT(0)), 0, g->s>>>(NOUT(0), IN(0), OUT(0));
        LAUNCH_CHECK();
        return VT_OK;
    case VT_OPK_RELU_BWD:
        k_relu_bwd<<<GRID(NOUT(0)), 0, g->s>>>(NOUT(0), IN(0), IN(1), OUT(0));
        LAUNCH_CHECK();
        return VT_OK;
    case VT_OPK_SOFTMAX: {
        double *p;
        VT_FORWARD_IF_ERROR(dbuf(g, B_X, t0->n * sizeof(double), (void **)&p));
        k_softmax<<<GRID(t0->shape[0]), 0, g->s>>>(t0->shape[0], t0->shape[1], IN(0), p, OUT(0), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, t0->n);
    }
    case VT_OPK_XENT_LOSS:
        k_loss<<<1, 1, 0, g->s>>>(t0->shape[0], t0->shape[1], IN(0), (const uint8_t *)IN(1), OUT(0), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, 1);
    case VT_OPK_XENT_BWD:
        k_xent_bwd<<<GRID(t0->n), 0, g->s>>>(t0->shape[0], t0->shape[1], IN(0), (const uint8_t *)IN(1), OUT(0), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, t0->n);
    case VT_OPK_COLSUM: {
        size_t M = t0->shape[0], N = t0->shape[1];
        VT_FORWARD_IF_ERROR(check_pending(g, rc));
        VT_RETURN_ERROR_IF(M > VT_MAX_REDUCTION, VT_ERR_LIMIT, "column sums of %zu rows", M);
        vt_epi_res *res;
        VT_FORWARD_IF_ERROR(dbuf(g, B_RES, N * sizeof(vt_epi_res), (void **)&res));
        k_colsum<<<GRID(N), 0, g->s>>>(M, N, IN(0), rc->bound, rc->bound.rounding == VT_ROUNDING_LOG, OUT(0), res);
        LAUNCH_CHECK();
        vt_epi_res *h = (vt_epi_res *)malloc(N * sizeof *h);
        uint64_t *idx = (uint64_t *)malloc(N * sizeof *idx);
        VT_RETURN_ERROR_IF(!h || !idx, VT_ERR_NOMEM, "out of memory");
        cudaError_t ce = cudaMemcpyAsync(h, res, N * sizeof *h, cudaMemcpyDeviceToHost, g->s);
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(g->s);
        uint64_t n = 0;
        for (size_t j = 0; j < N && ce == cudaSuccess; j++)
            if (h[j].entry || h[j].code) h[n] = h[j], idx[n++] = j;
        vt_err e = ce == cudaSuccess ? vt_epi_finish(rc, op_id, 1, N, n, idx, h, NULL) : cu_fail(ce, "column sums");
        /* vt_epi_finish counted no exact evaluation for the unflagged columns: every column was one */
        if (!e) rc->stats.exact += N - n;
        free(h);
        free(idx);
        return e;
    }
    case VT_OPK_SGD_VELOCITY:
        k_sgd_vel<<<GRID(NOUT(0)), 0, g->s>>>(NOUT(0), IN(0), IN(1), IN(2), fa[0], fa[1], OUT(0), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, NOUT(0));
    case VT_OPK_SGD_APPLY:
        k_sgd_apply<<<GRID(NOUT(0)), 0, g->s>>>(NOUT(0), IN(0), IN(1), (const double *)dt(g, m, o->in[2]), OUT(0), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, NOUT(0));
    case VT_OPK_ADAM_MOMENTS:
        k_adam_mom<<<GRID(NOUT(0)), 0, g->s>>>(NOUT(0), IN(0), IN(1), IN(2), fa[0], fa[1], OUT(0), OUT(1), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, 2 * NOUT(0));
    case VT_OPK_ADAM_APPLY:
        k_adam_apply<<<GRID(NOUT(0)), 0, g->s>>>(NOUT(0), IN(0), IN(1), IN(2), (const double *)dt(g, m, o->in[3]),
                                                  (const double *)dt(g, m, o->in[4]), fa[0], fa[1], fa[2], OUT(0), err);
        LAUNCH_CHECK();
        return rounded(rc, op_id, NOUT(0));
    default:
        return VT_ERR_UNSUPPORTED;
    }
#undef IN
#undef OUT
#undef NOUT
}

/* the bytes of every input and output of operation op between host and device */
static vt_err move_tensors(vt_cuda *g, vt_model *m, uint32_t op_id, int to_host)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    for (uint32_t k = 0; k < o->n_in + o->n_out; k++) {
        uint32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];
        if (!to_host && k < o->n_in) continue; /* back to the device: the outputs only */
        size_t bytes = 0;
        void *h = vt_model_tensor(m, t, &bytes);
        void *d = dt(g, m, t);
        if (bytes)
            CU(cudaMemcpyAsync(to_host ? h : d, to_host ? d : h, bytes,
                               to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, g->s));
    }
    CU(cudaStreamSynchronize(g->s));
    return VT_OK;
}

extern "C" vt_err vt_cuda_op_to_host(vt_cuda *g, vt_model *m, vt_rctx *rc, uint32_t op_id)
{
    VT_FORWARD_IF_ERROR(check_pending(g, rc));
    return move_tensors(g, m, op_id, 1);
}

extern "C" vt_err vt_cuda_op_to_device(vt_cuda *g, vt_model *m, uint32_t op_id) { return move_tensors(g, m, op_id, 0); }

extern "C" vt_err vt_cuda_run_end(vt_cuda *g, vt_model *m, vt_rctx *rc)
{
    VT_FORWARD_IF_ERROR(check_pending(g, rc));
    CU(cudaMemcpyAsync(m->arena[VT_TC_PARAM], g->dar[VT_TC_PARAM], g->dar_bytes[VT_TC_PARAM], cudaMemcpyDeviceToHost,
                       g->s));
    size_t bytes = 0;
    void *h = vt_model_tensor(m, m->prog.loss, &bytes);
    if (bytes) CU(cudaMemcpyAsync(h, dt(g, m, m->prog.loss), bytes, cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    return VT_OK;
}
