/* Device-resident steps on the CPU twin of the GPU: the protocol of vt_model_run
 * (kernels/vt_backend.h: run_begin, run_op, op_to_host, op_to_device, run_end) and the device
 * kinds' own code, against the CPU reference. The twin device is a shadow copy of the model's
 * arenas in host memory; on it the twin runs what cuda/vt_cuda_model.cu runs on the GPU, from the
 * same source: every non-GEMM kind through vt_dev_op_make, the items of vti_dev_op_item (one
 * loop iteration where the GPU has one thread) and vt_dev_op_finish, the GEMMs through the
 * epilogue's host twin vt_epi_host; the other kinds it refuses, and vt_model_run brackets them
 * with the transfers. A missing transfer or a device kind computing anything else than the CPU's
 * kernel makes the twin's run differ from the plain CPU run: the test requires the same state,
 * loss and log at every step, in both roundings, with SGD and with Adam. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/vt_data.h"
#include "kernels/vt_backend.h"
#include "model/vt_model.h"
#include "model/vt_ops.h"
#include "cuda/vt_dev_ops_hd.h"
#include "rounding_log/vt_epilogue.h"
#include "resident_check.h"
#include "vt_test.h"

typedef struct {
    vt_model *m;
    uint8_t *shadow[VT_TC_COUNT];
    int have;
    uint64_t on_device, moved;
} mock;

static vt_err mock_gemm(void *impl, vt_rctx *rc, uint32_t op, int tA, int tB, size_t M, size_t N, size_t K,
                        const float *A, const float *B, float *out)
{
    vt_model *m = ((mock *)impl)->m;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, tA, tB, M, N, K, A, B, m->x64, m->rn, m->cn, &bd));
    return vt_round(rc, op, m->x64, &bd, M, N, out);
}

static vt_err mock_begin(void *impl, struct vt_model *m)
{
    mock *d = impl;
    if (!d->have) {
        for (int c = 0; c < VT_TC_COUNT; c++)
            if (c == VT_TC_PARAM || c > VT_TC_BUFFER) {
                d->shadow[c] = calloc(m->prog.arena_bytes[c] ? m->prog.arena_bytes[c] : 1, 1);
                if (!d->shadow[c]) return VT_ERR_NOMEM;
                memcpy(d->shadow[c], m->arena[c], m->prog.arena_bytes[c]);
            }
        d->shadow[VT_TC_OPT] = d->shadow[VT_TC_BUFFER] = d->shadow[VT_TC_PARAM];
        d->have = 1;
    }
    memcpy(d->shadow[VT_TC_PARAM], m->arena[VT_TC_PARAM], m->prog.arena_bytes[VT_TC_PARAM]);
    return VT_OK;
}

static void *shadow_of(mock *d, vt_model *m, uint32_t t);
static void *shadow_ptr(void *ctx, uint32_t t)
{
    mock *d = ctx;
    return shadow_of(d, d->m, t);
}

/* what vt_cuda_run_op does, on the shadow */
static vt_err mock_op(void *impl, struct vt_model *m, vt_rctx *rc, uint32_t op, uint64_t step)
{
    mock *d = impl;
    const vt_opdesc *o = &m->prog.op[op];
    if (o->kind == VT_OPK_MATMUL) {
        if (!vt_epi_supported(rc)) return VT_ERR_UNSUPPORTED;
        const int64_t *a = o->iarg;
        int tA = (int)a[0], tB = (int)a[1];
        size_t M = (size_t)a[2], N = (size_t)a[3], K = (size_t)a[4];
        const float *A = shadow_ptr(d, o->in[0]), *B = shadow_ptr(d, o->in[1]);
        vt_bounds bd;
        VT_FORWARD_IF_ERROR(vt_gemm(&m->exec, tA, tB, M, N, K, A, B, m->x64, m->rn, m->cn, &bd));
        vt_gemm_epi ep = {.A = A, .B = B, .a_si = tA ? 1 : K, .a_sk = tA ? M : 1, .b_sk = tB ? 1 : N,
                          .b_sj = tB ? K : 1, .K = K};
        d->on_device++;
        return vt_epi_host(rc, op, ep, m->x64, M, N, shadow_ptr(d, o->out[0]));
    }
    if (o->kind == VT_OPK_BMM) { /* what vti_cuda_bmm_dev does, with the CPU's products */
        const int64_t *a = o->iarg;
        size_t G = (size_t)a[0], M = (size_t)a[1], N = (size_t)a[2], K = (size_t)a[3];
        int tA = (int)a[4], tB = (int)a[5];
        if (!vt_epi_supported(rc) || vt_bound_panelled(&rc->bound, K)) return VT_ERR_UNSUPPORTED;
        const float *A = shadow_ptr(d, o->in[0]), *B = shadow_ptr(d, o->in[1]);
        for (size_t g = 0; g < G; g++)
            VT_FORWARD_IF_ERROR(vt_gemm_plain(&m->exec, tA, tB, M, N, K, A + g * M * K, B + g * K * N, m->x64 + g * M * N));
        vt_bmm_epi ep = {.A = A, .B = B, .a_si = tA ? 1 : K, .a_sk = tA ? M : 1, .b_sk = tB ? 1 : N, .b_sj = tB ? K : 1,
                         .M = M, .N = N, .K = K};
        d->on_device++;
        return vt_epi_host_bmm(rc, op, ep, G, m->x64, shadow_ptr(d, o->out[0]));
    }
    vt_dev_op dop;
    if (!vt_dev_op_make(m, rc, op, step, shadow_ptr, d, &dop)) return VT_ERR_UNSUPPORTED;
    unsigned long long err = ~0ULL;
    dop.err = &err;
    dop.scratch = dop.scratch_n ? calloc(dop.scratch_n, sizeof(double)) : NULL;
    dop.res = dop.res_n ? calloc(dop.res_n, sizeof(vt_epi_res)) : NULL;
    if ((dop.scratch_n && !dop.scratch) || (dop.res_n && !dop.res)) return VT_ERR_NOMEM;
    for (size_t i = 0; i < dop.n_items; i++) vti_dev_op_item(&dop, i);
    /* the GPU reads the failure words later (before its next synchronising operation), but reports
     * the first failing operation the same way: the shared decoder */
    vt_err e = vt_dev_err_report(rc, m, op, err);
    if (!e) e = vt_dev_op_finish(rc, &dop, dop.res);
    free(dop.scratch);
    free(dop.res);
    d->on_device++;
    return e;
}

static void *shadow_of(mock *d, vt_model *m, uint32_t t)
{
    const vt_tensor *x = &m->prog.t[t];
    return d->shadow[x->cls] + x->off;
}

static vt_err mock_move(mock *d, vt_model *m, uint32_t op, int to_host)
{
    const vt_opdesc *o = &m->prog.op[op];
    for (uint32_t k = 0; k < o->n_in + o->n_out; k++) {
        if (!to_host && k < o->n_in) continue;
        uint32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];
        size_t bytes;
        void *h = vt_model_tensor(m, t, &bytes);
        memcpy(to_host ? h : shadow_of(d, m, t), to_host ? shadow_of(d, m, t) : h, bytes);
        d->moved++;
    }
    return VT_OK;
}

static vt_err mock_to_host(void *impl, struct vt_model *m, vt_rctx *rc, uint32_t op)
{
    (void)rc;
    return mock_move(impl, m, op, 1);
}
static vt_err mock_to_device(void *impl, struct vt_model *m, uint32_t op) { return mock_move(impl, m, op, 0); }

static vt_err mock_end(void *impl, struct vt_model *m, vt_rctx *rc)
{
    (void)rc;
    mock *d = impl;
    memcpy(m->arena[VT_TC_PARAM], d->shadow[VT_TC_PARAM], m->prog.arena_bytes[VT_TC_PARAM]);
    size_t bytes;
    void *h = vt_model_tensor(m, m->prog.loss, &bytes);
    memcpy(h, shadow_of(d, m, m->prog.loss), bytes);
    return VT_OK;
}

static int mock_open(vt_model *m, rs_dev *d)
{
    mock *k = calloc(1, sizeof *k);
    if (!k) return 0;
    k->m = m;
    d->state = k;
    d->be = (vt_backend){.name = "mock", .impl = k, .gemm_round = mock_gemm, .run_begin = mock_begin,
                         .run_op = mock_op, .op_to_host = mock_to_host, .op_to_device = mock_to_device,
                         .run_end = mock_end};
    return 1;
}

static void mock_close(rs_dev *d, const vt_recipe *rc, const vt_model *m, const char *what)
{
    mock *k = d->state;
    if (rc)
        CHECK(k->on_device > rc->steps * (m->prog.n_ops / 2) && k->moved > 0,
              "%s: the twin ran %llu operations and moved %llu tensors", what, (unsigned long long)k->on_device,
              (unsigned long long)k->moved);
    printf("; %llu operations on the twin, %llu tensor moves\n", (unsigned long long)k->on_device,
           (unsigned long long)k->moved);
    free(k->shadow[VT_TC_PARAM]);
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++) free(k->shadow[c]);
    free(k);
}

int main(void)
{
    static const rs_device twin = {mock_open, mock_close};
    rs_all(&twin);
    return vt_test_finish("test_resident");
}
