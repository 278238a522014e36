/* vt_cuda_load.c - vt_cuda.h in a build with the CUDA backend: the functions forward to the CUDA
 * plugin (libvt_cuda.so, backend/cuda/vt_cuda_plugin.h), opened with dlopen on first use. It is looked for
 * at $VT_CUDA_PLUGIN, beside the running program, and where the build wrote it. */
#include "vt_cuda.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_cuda_plugin.h"
#include "../../kernels/vt_cnn.h"
#include "../../kernels/vt_kernels.h"
#include "../../kernels/vt_tc.h"
#include "../../dist/vt_dist.h"
#include "../../model/vt_model.h"
#include "../../rounding/vt_epilogue.h"

/* What the plugin takes from the program that loads it (`nm -D --undefined-only libvt_cuda.so`):
 * referenced here so that every program able to open the plugin links them and exports them. */
void *const vti_cuda_plugin_needs[] = {
    (void *)vt_avgpool_weight, (void *)vt_conv_geom_make, (void *)vt_epi_fail, (void *)vt_epi_finish,
    (void *)vt_gemm_bounds,    (void *)vt_model_tensor,   (void *)vt_rctx_init, (void *)vt_round,
    (void *)vt_set_error,
    (void *)vt_tc_gemm,        (void *)vt_gemm_arith_model, (void *)vt_error_prefix, /* the tensor-core mode's */
    /* the NCCL engine's (backend/cuda/vt_nccl.c, in builds with NCCL) */
    (void *)vt_dist_agree, (void *)vt_dist_bcast, (void *)vt_dist_rank, (void *)vt_dist_set_engine,
    (void *)vt_dist_size,
};

#ifndef VT_CUDA_PLUGIN_PATH
#define VT_CUDA_PLUGIN_PATH "libvt_cuda.so"
#endif

static struct {
    void *h;
    vt_err code; /* why not: VT_ERR_UNSUPPORTED (no plugin file), VT_ERR_IO (one that does not load) */
    char why[400];
    __typeof__(vt_cudap_open) *open;
    __typeof__(vt_cudap_close) *close;
    __typeof__(vt_cudap_gemm_round) *gemm_round;
    __typeof__(vt_cudap_gemm_plain64) *gemm_plain64;
    __typeof__(vt_cudap_gemm_plain32) *gemm_plain32;
    __typeof__(vt_cudap_time_gemm) *time_gemm;
    __typeof__(vt_cudap_run_begin) *run_begin;
    __typeof__(vt_cudap_run_op) *run_op;
    __typeof__(vt_cudap_op_to_host) *op_to_host;
    __typeof__(vt_cudap_op_to_device) *op_to_device;
    __typeof__(vt_cudap_run_end) *run_end;
    __typeof__(vt_cudap_tc_gemm) *tc_gemm;
} P;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *try_open(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    P.code = access(path, F_OK) == 0 ? VT_ERR_IO : VT_ERR_UNSUPPORTED;
    if (!h) {
        const char *e = dlerror();
        snprintf(P.why, sizeof P.why, "cannot load the CUDA backend %.180s: %.180s", path, e ? e : "unknown error");
    }
    return h;
}

static void load(void)
{
    const char *env = getenv("VT_CUDA_PLUGIN");
    void *h = NULL;
    if (env && *env) {
        h = try_open(env);
    } else {
        /* beside the program; where the build wrote it only when there is none beside it */
        char exe[PATH_MAX], path[PATH_MAX + 32];
        int beside = 0;
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            char *slash = strrchr(exe, '/');
            if (slash) {
                *slash = 0;
                snprintf(path, sizeof path, "%s/libvt_cuda.so", exe);
                beside = access(path, F_OK) == 0;
                if (beside) h = try_open(path);
            }
        }
        if (!beside) h = try_open(VT_CUDA_PLUGIN_PATH);
    }
    if (!h) return;
    unsigned long long (*abi)(void) = (unsigned long long (*)(void))dlsym(h, "vt_cudap_abi");
    if (!abi || abi() != VT_CUDA_PLUGIN_LAYOUT()) {
        snprintf(P.why, sizeof P.why,
                 "the CUDA backend plugin was built from other sources than this program (layout %016llx, "
                 "this program %016llx)",
                 abi ? abi() : 0ULL, VT_CUDA_PLUGIN_LAYOUT());
        P.code = VT_ERR_IO;
        dlclose(h);
        return;
    }
    int ok = 1;
#define SYM(f)                                                                                                         \
    do {                                                                                                               \
        *(void **)&P.f = dlsym(h, "vt_cudap_" #f);                                                                     \
        ok &= P.f != NULL;                                                                                             \
    } while (0)
    SYM(open);
    SYM(close);
    SYM(gemm_round);
    SYM(gemm_plain64);
    SYM(gemm_plain32);
    SYM(time_gemm);
    SYM(run_begin);
    SYM(run_op);
    SYM(op_to_host);
    SYM(op_to_device);
    SYM(run_end);
    SYM(tc_gemm);
#undef SYM
    if (!ok) {
        dlclose(h);
        memset(&P, 0, sizeof P);
        snprintf(P.why, sizeof P.why, "the CUDA backend plugin lacks an entry point");
        P.code = VT_ERR_IO;
        return;
    }
    P.h = h;
}

void *vti_cuda_plugin_sym(const char *name)
{
    pthread_once(&once, load);
    return P.h ? dlsym(P.h, name) : NULL;
}

vt_err vt_cuda_open(vt_cuda **out, char *desc, size_t desc_len)
{
    *out = NULL;
    pthread_once(&once, load);
    VT_RETURN_ERROR_IF(!P.h, P.code ? P.code : VT_ERR_UNSUPPORTED, "%s", P.why);
    return P.open(out, desc, desc_len);
}

/* every other entry point needs an open vt_cuda, hence a loaded plugin */
void vt_cuda_close(vt_cuda *g)
{
    if (g && P.h) P.close(g);
}
vt_err vt_cuda_gemm_round(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                          const float *A, const float *B, float *out)
{
    return P.gemm_round(g, rctx, op_id, tA, tB, M, N, K, A, B, out);
}
vt_err vt_cuda_gemm_plain64(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const double *A,
                            const double *B, double *C)
{
    return P.gemm_plain64(g, tA, tB, M, N, K, A, B, C);
}
vt_err vt_cuda_gemm_plain32(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                            const float *B, float *C)
{
    return P.gemm_plain32(g, tA, tB, M, N, K, A, B, C);
}
vt_err vt_cuda_time_gemm(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps, double *t_verif,
                         double *t_dgemm, double *t_sgemm, uint64_t *n_flagged)
{
    return P.time_gemm(g, tA, tB, M, N, K, reps, t_verif, t_dgemm, t_sgemm, n_flagged);
}
vt_err vt_cuda_tc_gemm(vt_cuda *g, const struct vt_tc_arch_s *arch, size_t G, int tA, int tB, size_t M, size_t N,
                       size_t K, const float *A, const float *B, float *C)
{
    return P.tc_gemm(g, arch, G, tA, tB, M, N, K, A, B, C);
}
vt_err vt_cuda_run_begin(vt_cuda *g, struct vt_model *m) { return P.run_begin(g, m); }
vt_err vt_cuda_run_op(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id, uint64_t step)
{
    return P.run_op(g, m, rctx, op_id, step);
}
vt_err vt_cuda_op_to_host(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id)
{
    return P.op_to_host(g, m, rctx, op_id);
}
vt_err vt_cuda_op_to_device(vt_cuda *g, struct vt_model *m, uint32_t op_id) { return P.op_to_device(g, m, op_id); }
vt_err vt_cuda_run_end(vt_cuda *g, struct vt_model *m, vt_rctx *rctx) { return P.run_end(g, m, rctx); }
