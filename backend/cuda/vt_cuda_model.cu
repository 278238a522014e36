/* vt_cuda_model.cu - device-resident execution of a model's step (docs/cuda.md, "Device-resident
 * steps"). The model's arenas are mirrored on the GPU; which kinds run there is the device column
 * of the list (ops/vt_kinds.h), nothing here counts or names them: the kinds whose column is
 * GEMM through the rounded GEMMs of vt_cuda.cu on device operands (run_op's matmul and batched_matmul
 * cases, and the convolution kinds of step programs 2 and 3 as program 1's GEMM of operands formed on
 * the device, vt_dev_conv), the kinds
 * whose column is ITEM through the items of backend/cuda/vt_dev_ops_hd.h (k_item), which the CPU twin
 * (tests/unit/test_resident.c) runs too; their formulas are the kernels' `*_hd.h` headers and their
 * rounding rounding/vt_round_hd.h, the code the CPU kernels run. The kinds whose column is CPU,
 * and any operation the device refuses (a size the items do not take, a log replay's rounded
 * kinds), run on the CPU: their inputs and outputs come to the host, their outputs go back
 * (vt_model.c drives this). VT_CUDA_CHECK_OPS=1 checks each device operation against the CPU's
 * (vt_cudap_run_op).
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
#include "../../kernels/vt_cnn.h"
#include "../../model/vt_model.h"
#include "../../ops/vt_ops.h"
#include "../../ops/vt_program.h"
#include "vt_dev_ops_hd.h"
}

#define NOERR 0xffffffffffffffffULL

void vti_cuda_model_free(vt_cuda *g)
{
    if (g->s) (void)cudaStreamSynchronize(g->s); /* nothing queued may still use the arenas */
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

/* every device kind: one thread per item of backend/cuda/vt_dev_ops_hd.h (the CPU twin runs the same items) */
__global__ void k_item(vt_dev_op d)
{
    FOR_EACH(i, d.n_items) vti_dev_op_item(&d, i);
}

/* a convolution kind's formed GEMM operands (vt_dev_conv): A from its first input, W' from W */
__global__ void k_conv_a(vt_dev_conv d, const float *in0, float *A)
{
    FOR_EACH(e, d.n_a) A[e] = vti_dev_conv_a(&d, in0, e);
}

__global__ void k_conv_wp(vt_dev_conv d, const float *w, float *wp)
{
    FOR_EACH(e, d.n_wp) wp[e] = vti_dev_wperm(d.C, d.Co, w, e);
}

/* ------------------------------------------------------------------ driver */

static vt_err upload_class(vt_cuda *g, const vt_model *m, int c)
{
    if (g->dar_bytes[c])
        CU(cudaMemcpyAsync(g->dar[c], m->arena[c], g->dar_bytes[c], cudaMemcpyHostToDevice, g->s));
    return VT_OK;
}

extern "C" vt_err vt_cudap_run_begin(vt_cuda *g, vt_model *m)
{
    (void)cudaGetLastError(); /* not an error of this step */
    CU(cudaSetDevice(g->dev));
    static const int classes[] = {VT_TC_PARAM, VT_TC_INPUT, VT_TC_ACT, VT_TC_GRAD};
    int same = g->model == (const void *)m && g->derr_n == m->prog.n_ops + 1;
    for (int k = 0; k < 4 && same; k++) same = g->dar_bytes[classes[k]] == m->prog.arena_bytes[classes[k]];
    if (!same) {
        vti_cuda_model_free(g);
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
    const char *chk = getenv("VT_CUDA_CHECK_OPS"); /* every device operation against the CPU's */
    g->check_ops = chk && strcmp(chk, "1") == 0;
    VT_FORWARD_IF_ERROR(upload_class(g, m, VT_TC_PARAM)); /* the state: the host's is the reference */
    CU(cudaMemsetAsync(g->derr, 0xff, g->derr_n * sizeof(unsigned long long), g->s));
    return VT_OK;
}

/* The first failure any device operation recorded, reported as the CPU would (vt_dev_err_report). */
static vt_err check_pending(vt_cuda *g, const vt_model *m, vt_rctx *rctx)
{
    CU(cudaMemcpyAsync(g->h_err, g->derr, g->derr_n * sizeof(unsigned long long), cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    for (uint32_t op = 1; op < g->derr_n; op++)
        if (g->h_err[op] != NOERR) return vt_dev_err_report(rctx, m, op, g->h_err[op]);
    return VT_OK;
}

typedef struct {
    vt_cuda *g;
    const vt_model *m;
} dctx;
static void *dptr(void *ctx, uint32_t t)
{
    dctx *c = (dctx *)ctx;
    return dt(c->g, c->m, t);
}

static vt_err run_op(vt_cuda *g, vt_model *m, vt_rctx *rctx, uint32_t op_id, uint64_t step)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    const struct vt_tc_arch_s *tc = vt_gemm_arith_model((uint32_t)m->rcp.gemm_arith);
    if (tc && (o->kind == VT_OPK_MATMUL || o->kind == VT_OPK_BMM)) { /* the tensor-core mode (vt_tc_cuda.cu) */
        VT_FORWARD_IF_ERROR(check_pending(g, m, rctx));
        const int64_t *a = o->iarg;
        const int mm = o->kind == VT_OPK_MATMUL; /* matmul: transA transB M N K; bmm: G M N K transA transB */
        return vti_cuda_tc_gemm_dev(g, tc, op_id, mm ? 1 : (size_t)a[0], (int)a[mm ? 0 : 4], (int)a[mm ? 1 : 5],
                                    (size_t)a[mm ? 2 : 1], (size_t)a[mm ? 3 : 2], (size_t)a[mm ? 4 : 3],
                                    (const float *)dt(g, m, o->in[0]), (const float *)dt(g, m, o->in[1]),
                                    (float *)dt(g, m, o->out[0]));
    }
    if (o->kind == VT_OPK_MATMUL) {
        if (!vt_epi_supported(rctx)) return VT_ERR_UNSUPPORTED; /* a log replay: judged on the host */
        /* the screen writes the output while the flagged elements still read the operands */
        if (o->out[0] == o->in[0] || o->out[0] == o->in[1]) return VT_ERR_UNSUPPORTED;
        VT_FORWARD_IF_ERROR(check_pending(g, m, rctx));
        const int64_t *a = o->iarg;
        return vti_cuda_gemm_dev(g, rctx, op_id, (int)a[0], (int)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4],
                                 (const float *)dt(g, m, o->in[0]), (const float *)dt(g, m, o->in[1]),
                                 (float *)dt(g, m, o->out[0]));
    }
    if (o->kind == VT_OPK_BMM) {
        const int64_t *a = o->iarg;
        size_t K = (size_t)a[3];
        if (!vt_epi_supported(rctx) || vti_bound_panelled(&rctx->bound, K)) return VT_ERR_UNSUPPORTED;
        if (o->out[0] == o->in[0] || o->out[0] == o->in[1]) return VT_ERR_UNSUPPORTED;
        VT_FORWARD_IF_ERROR(check_pending(g, m, rctx));
        return vti_cuda_bmm_dev(g, rctx, op_id, (size_t)a[0], (size_t)a[1], (size_t)a[2], K, (int)a[4], (int)a[5],
                                (const float *)dt(g, m, o->in[0]), (const float *)dt(g, m, o->in[1]),
                                (float *)dt(g, m, o->out[0]));
    }
    vt_dev_conv cv;
    if (vt_dev_conv_make(m, rctx, op_id, &cv)) { /* step program 1's GEMM of the operands formed here */
        if (!tc && !vt_epi_supported(rctx)) return VT_ERR_UNSUPPORTED; /* a log replay: judged on the host */
        if (o->out[0] == o->in[0] || o->out[0] == o->in[1]) return VT_ERR_UNSUPPORTED;
        VT_FORWARD_IF_ERROR(check_pending(g, m, rctx));
        float *A = NULL, *wp = NULL;
        const float *w = (const float *)dt(g, m, o->in[1]);
        VT_FORWARD_IF_ERROR(dbuf(g, B_CONVA, cv.n_a * sizeof(float), (void **)&A));
        k_conv_a<<<GRID(cv.n_a), 0, g->s>>>(cv, (const float *)dt(g, m, o->in[0]), A);
        LAUNCH_CHECK();
        if (cv.dgrad) {
            VT_FORWARD_IF_ERROR(dbuf(g, B_CONVW, cv.n_wp * sizeof(float), (void **)&wp));
            k_conv_wp<<<GRID(cv.n_wp), 0, g->s>>>(cv, w, wp);
            LAUNCH_CHECK();
            w = wp;
        }
        float *out = (float *)dt(g, m, o->out[0]);
        if (tc) return vti_cuda_tc_gemm_dev(g, tc, op_id, 1, cv.ta, 0, cv.M, cv.N, cv.K, A, w, out);
        return vti_cuda_gemm_dev(g, rctx, op_id, cv.ta, 0, cv.M, cv.N, cv.K, A, w, out);
    }
    vt_dev_op d;
    dctx c = {g, m};
    if (!vt_dev_op_make(m, rctx, op_id, step, dptr, &c, &d)) return VT_ERR_UNSUPPORTED;
    d.err = g->derr + op_id;
    if (d.scratch_n) VT_FORWARD_IF_ERROR(dbuf(g, B_X, d.scratch_n * sizeof(double), (void **)&d.scratch));
    if (d.res_n) {
        VT_FORWARD_IF_ERROR(check_pending(g, m, rctx)); /* it synchronises below: earlier failures first */
        VT_FORWARD_IF_ERROR(dbuf(g, B_RES, d.res_n * sizeof(vt_epi_res), (void **)&d.res));
    }
    k_item<<<GRID(d.n_items), 0, g->s>>>(d);
    LAUNCH_CHECK();
    if (!d.res_n) return vt_dev_op_finish(rctx, &d, NULL);
    VT_FORWARD_IF_ERROR(host_staging(g, d.res_n));
    CU(cudaMemcpyAsync(g->h_res, d.res, d.res_n * sizeof(vt_epi_res), cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    return vt_dev_op_finish(rctx, &d, g->h_res);
}

/* a device tensor's bytes to the host (the per-operation check) */
static vt_err dfetch(void *ctx, uint32_t t, void *host, size_t bytes)
{
    dctx *c = (dctx *)ctx;
    if (!bytes) return VT_OK;
    CU(cudaMemcpyAsync(host, dt(c->g, c->m, t), bytes, cudaMemcpyDeviceToHost, c->g->s));
    CU(cudaStreamSynchronize(c->g->s));
    return VT_OK;
}

/* An operation on the device, or VT_ERR_UNSUPPORTED. With VT_CUDA_CHECK_OPS=1 each one the device
 * runs is then checked against the CPU exec of the same operation on the same inputs
 * (vt_dev_check_*, backend/cuda/vt_dev_ops.c); the first differing element stops the step. */
extern "C" vt_err vt_cudap_run_op(vt_cuda *g, vt_model *m, vt_rctx *rctx, uint32_t op_id, uint64_t step)
{
    if (!g->check_ops || vt_kind_device(m->prog.op[op_id].kind) == VT_DEV_CPU) return run_op(g, m, rctx, op_id, step);
    dctx c = {g, m};
    vt_dev_check chk;
    vt_err e = vt_dev_check_begin(m, op_id, dfetch, &c, &chk);
    if (!e) e = run_op(g, m, rctx, op_id, step);
    if (!e) e = check_pending(g, m, rctx); /* its own failures (and earlier ones) first, as without the check */
    if (!e) e = vt_dev_check_end(m, rctx, op_id, step, dfetch, &c);
    vt_dev_check_restore(m, op_id, &chk);
    return e;
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

extern "C" vt_err vt_cudap_op_to_host(vt_cuda *g, vt_model *m, vt_rctx *rctx, uint32_t op_id)
{
    VT_FORWARD_IF_ERROR(check_pending(g, m, rctx));
    return move_tensors(g, m, op_id, 1);
}

extern "C" vt_err vt_cudap_op_to_device(vt_cuda *g, vt_model *m, uint32_t op_id) { return move_tensors(g, m, op_id, 0); }

extern "C" vt_err vt_cudap_run_end(vt_cuda *g, vt_model *m, vt_rctx *rctx)
{
    VT_FORWARD_IF_ERROR(check_pending(g, m, rctx));
    CU(cudaMemcpyAsync(m->arena[VT_TC_PARAM], g->dar[VT_TC_PARAM], g->dar_bytes[VT_TC_PARAM], cudaMemcpyDeviceToHost,
                       g->s));
    size_t bytes = 0;
    void *h = vt_model_tensor(m, m->prog.loss, &bytes);
    if (bytes) CU(cudaMemcpyAsync(h, dt(g, m, m->prog.loss), bytes, cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    return VT_OK;
}
