/* bench_cnn.c - what a verifiable step of the residual CNN costs (docs/benchmarks.md "The CNN"),
 * measured in one run on one machine, BLAS single-threaded:
 *
 *   plain FP64 / FP32  model/vt_plain.h: the same program in plain double / float
 *   verifiable         vt_model_step in record mode (the BLAS order) + the stored log + the state
 *                      hash every H steps (what the trainer commits, minus SQLite), in
 *                      rounding=exact and rounding=log
 *   PyTorch FP32       bench/torch_resnet.py (python3-torch, one thread): the same architecture and
 *                      recipe, timed over the same number of steps (skipped when torch is missing)
 *
 * The four in-process configurations run in rounds of interleaved blocks; per-step figures are
 * medians over the rounds of the thread's CPU time (with --threads 1; wall time with more), and PyTorch's
 * steps are timed on the same clock (the scripts' "clock", printed beside the table; a mismatch is said).
 * Then the kinds against the machine's DGEMM rate: per operation kind, the verifiable exact step's time
 * (the mean of 5 more steps, 2 with --quick), its FP64 GEMM work, the rate reached and its fraction of
 * the DGEMM rate; for the CNN and the GPT PyTorch's time for the same kind (bench/torch_resnet.py or
 * torch_gpt.py --profile-kinds 20, 5 with --quick: the autograd profiler's shares of its step time on
 * its clock; the convolution's input and weight gradients are one operation there, so a row gives both,
 * and the rows of each split it in the ratio of the two timed alone). Then, per operation kind (forward
 * conv, input gradient, weight gradient, batch norm, pooling, fc, the rest) over one step of each mode: time,
 * rounded elements, elements computed exactly (exact mode), log entries and the stored bytes of a log
 * holding only those operations' records with entries (log mode; 0 when none has one) against the
 * dense 1.6-bit code (0.2 B per rounded element). The whole step's stored log is the total.
 *
 * Targets: verification overhead (verifiable / plain FP64) <= 1.10 in both modes; log <= 2% of
 * dense; PyTorch steps/s / ours <= 2.5.
 *
 * With --recipe recipes/gpt-shakespeare.json (any arch=gpt recipe) the same figures for the
 * character-level GPT: kinds QKV projection, attention scores, attention-weighted sum, output
 * projection, FFN, the weight gradients, layer norm; PyTorch through bench/torch_gpt.py; tokens/s.
 * With an arch=mlp recipe (recipes/mlp-mnist.json) the MLP, PyTorch through bench/torch_mlp.py.
 *
 * --threads T (default 1): the verifiable step with the project's T threads (common/vt_par.h; BLAS
 * one thread a part, as `trainer --threads T` runs), the plain steps with a T-thread BLAS, PyTorch
 * with torch.set_num_threads(T); with T > 1 every figure is wall time (thread CPU time would count
 * one thread). Also printed: the machine's DGEMM rate with T BLAS threads (the best of five
 * 1024 x 1024 x 1024 products: the peak the step's GEMMs are measured against), the FP64 GEMM work
 * of one step (2 M N K over its MATMUL and BMM operations) and the rate that work reaches in the
 * verifiable and the plain FP64 step (work / whole step time), as a fraction of that peak; and one
 * line "SIDE ..." with the row of the side-by-side table (scripts/bench-side.sh), ending in the clocks of
 * both sides (thread-CPU or wall; none where PyTorch did not run).
 *
 * --profile MODE N: only N steps of one configuration (MODE plain64, plain32, exact or log), nothing
 * printed but the time: the process to hand to `perf record` (docs/benchmarks.md "Where the
 * verifiable step's time goes").
 *
 * --conv-kernels: only the convolution kinds' kernels, per layer and per kind, with every implementation
 * (kernels/vt_cnn.h vt_conv_impl_set), in GFLOP/s and as a fraction of the DGEMM rate (docs/benchmarks.md
 * "Direct convolution kernels").
 *
 * Usage: bench_cnn [--quick] [--recipe FILE] [--data-dir DIR] [--python PATH] [--threads T]
 *                  [--profile MODE N] [--conv-kernels]
 */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BENCH_NAME "bench_cnn"
#include "bench/bench_util.h"
#include "common/vt_par.h"
#include "kernels/vt_cnn.h"
#include "data/vt_data.h"
#include "model/vt_model.h"
#include "model/vt_plain.h"
#include "rounding/vt_round.h"
#include "run/vt_train.h"

static const char *CNN_GROUPS[] = {"conv forward", "conv input gradient", "conv weight gradient", "batch norm",
                                   "pooling", "fc", "other"};
static const char *GPT_GROUPS[] = {"QKV projection", "attention scores", "attention-weighted sum",
                                   "output projection", "FFN", "weight gradients", "layer norm",
                                   "other"};
#define NG 8
static const char **GROUPS = CNN_GROUPS;
static int n_groups = 7, gpt_mode = 0;

static int group_cnn(const vt_opdesc *o)
{
    int conv = strstr(o->name, "conv") != NULL;
    if (o->kind == VT_OPK_MATMUL) {
        if (!conv) return 5;
        if (strstr(o->name, "forward")) return 0;
        if (strstr(o->name, "input-gradient")) return 1;
        if (strstr(o->name, "weight-gradient")) return 2;
    }
    if (o->kind == VT_OPK_CONV2D) return 0; /* step program 2: the gather inside */
    if (o->kind == VT_OPK_CONV2D_WGRAD) return 2;
    if (o->kind == VT_OPK_CONV2D_DGRAD) return 1;
    if (o->kind == VT_OPK_IM2COL || o->kind == VT_OPK_CONV_DGATHER || o->kind == VT_OPK_CONV_WPERM) return 6;
    if ((o->kind >= VT_OPK_BN_CENTER && o->kind <= VT_OPK_BN_EVAL) ||
        ((o->kind == VT_OPK_COLSUM || o->kind == VT_OPK_COLDOT) && strstr(o->name, ".bn")))
        return 3;
    if (o->kind >= VT_OPK_MAXPOOL && o->kind <= VT_OPK_AVGPOOL_BWD) return 4;
    if ((o->kind == VT_OPK_BIAS_ADD || o->kind == VT_OPK_COLSUM) && strstr(o->name, "fc")) return 5;
    return 6;
}

static int group_gpt(const vt_opdesc *o)
{
    const char *n = o->name;
    if (o->kind == VT_OPK_MATMUL && strstr(n, "weight-gradient")) return 5;
    if (o->kind == VT_OPK_MATMUL || o->kind == VT_OPK_BIAS_ADD) {
        /* the QKV projection: its forward GEMM and bias add are named "hL.attn ...", its gradients "hL.attn.c_attn ..." */
        if (strstr(n, "c_attn") || strstr(n, ".attn forward GEMM") || strstr(n, ".attn bias add")) return 0;
        if (strstr(n, "attn.c_proj")) return 3;
        if (strstr(n, "mlp.")) return 4;
        return 7;
    }
    if (o->kind == VT_OPK_BMM) return strstr(n, "scores") || strstr(n, "q gradient") || strstr(n, "k gradient") ? 1 : 2;
    if (o->kind == VT_OPK_ROW_SUM || o->kind == VT_OPK_ROW_DOT) return strstr(n, "ln") ? 6 : 7;
    if ((o->kind >= VT_OPK_LN_CENTER && o->kind <= VT_OPK_LN_BACKWARD) ||
        ((o->kind == VT_OPK_COLSUM || o->kind == VT_OPK_COLDOT) && strstr(n, "ln")))
        return 6;
    if (o->kind == VT_OPK_COLSUM) return 5; /* bias gradients */
    return 7;
}

static int group_of(const vt_opdesc *o) { return gpt_mode ? group_gpt(o) : group_cnn(o); }

/* the FP64 GEMM work of one operation, 2 M N K (MATMUL: iarg transA, transB, M, N, K; BMM: G, M, N, K; the
 * convolutions of step program 2: their kinds' cost, the input gradient's its products by non-zeros only);
 * 0 for every other kind */
static double op_gemm_flop(const vt_program *p, const vt_opdesc *o)
{
    if (o->kind == VT_OPK_MATMUL && o->n_iarg >= 5) return 2.0 * (double)o->iarg[2] * (double)o->iarg[3] * (double)o->iarg[4];
    if (o->kind == VT_OPK_CONV2D || o->kind == VT_OPK_CONV2D_WGRAD || o->kind == VT_OPK_CONV2D_DGRAD) {
        vt_opcost c;
        memset(&c, 0, sizeof c);
        vt_opkind_get(o->kind)->cost(p, o, &c);
        return c.flop;
    }
    if (o->kind == VT_OPK_BMM && o->n_iarg >= 4)
        return 2.0 * (double)o->iarg[0] * (double)o->iarg[1] * (double)o->iarg[2] * (double)o->iarg[3];
    return 0;
}

/* the step's FP64 GEMM work: the whole step's, and per kind of the table (group_of) in gf[] */
static double gemm_flops(const vt_program *p, double gf[NG])
{
    double f = 0;
    for (int g = 0; g < NG; g++) gf[g] = 0;
    for (uint32_t j = 0; j < p->n_ops; j++) {
        const double x = op_gemm_flop(p, &p->op[j]);
        f += x, gf[group_of(&p->op[j])] += x;
    }
    return f;
}

/* the number after "\"key\": " in a one-line JSON object, or -1 */
static double json_num(const char *line, const char *key)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *q = strstr(line, pat);
    return q ? atof(q + strlen(pat)) : -1.0;
}

/* the machine's DGEMM rate (flop/s) with the BLAS's current threads: best of 5 products of n^3 */
static double dgemm_peak(void)
{
    const int n = 1024;
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n), *c = malloc(sizeof(double) * n * n);
    if (!a || !b || !c) {
        fprintf(stderr, "bench_cnn: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = 1.0 + (double)(i % 7) * 0.125, b[i] = 0.5 - (double)(i % 5) * 0.0625;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = clk();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
        double t = clk() - t0;
        if (t < best) best = t;
    }
    free(a), free(b), free(c);
    return 2.0 * n * n * (double)n / best;
}

typedef struct {
    vt_model m;
    vt_rctx rctx;
    vt_steplog log;
    uint64_t bytes, entries, rounded;
    /* the profile step */
    double last, t[NG];
    uint64_t ex[NG], rd[NG], last_exact, last_rounded;
} verif;

static void verif_init(verif *v, const vt_recipe *rcp, const vt_dataset *ds, vt_rounding mode)
{
    memset(v, 0, sizeof *v);
    vt_recipe r = *rcp;
    r.bound.rounding = mode;
    TRY(vt_model_init(&v->m, &r, ds->n, VT_ORDER_BLAS));
    vt_rctx_init(&v->rctx, VT_RMODE_RECORD, r.bound);
    vt_steplog_init(&v->log, 0);
}

static void verif_step(verif *v, const vt_dataset *ds, vt_op_hook hook)
{
    uint64_t s = v->m.step + 1;
    TRY(vt_rctx_begin_step(&v->rctx, s, &v->log));
    TRY(vt_model_run(&v->m, ds, &v->rctx, v->m.n_ops, hook, v));
    TRY(vt_rctx_end_step(&v->rctx));
    uint8_t *blob = NULL, h[32];
    size_t len = 0;
    TRY(vt_steplog_encode_stored(&v->log, v->m.rcp.zstd_level, &blob, &len, h));
    free(blob);
    v->bytes += len, v->entries += vt_steplog_total_entries(&v->log);
    if (vt_recipe_has_state(&v->m.rcp, s)) TRY(vt_model_state_hash(&v->m, h));
}

static vt_err profile_hook(void *ctx, vt_model *m, uint64_t step, uint32_t j)
{
    (void)step;
    verif *v = ctx;
    double now = clk();
    int g = group_of(&m->prog.op[j]);
    v->t[g] += now - v->last;
    v->ex[g] += v->rctx.stats.exact - v->last_exact;
    v->rd[g] += v->rctx.stats.rounded - v->last_rounded;
    v->last_exact = v->rctx.stats.exact, v->last_rounded = v->rctx.stats.rounded;
    v->last = clk();
    return VT_OK;
}

/* stored bytes of the log records of group g in v's last step's log */
static uint64_t group_log(verif *v, int g, uint64_t *entries)
{
    vt_steplog sub;
    vt_steplog_init(&sub, v->log.step);
    *entries = 0;
    for (uint32_t i = 0; i < v->log.n_ops; i++) {
        const vt_oplog *o = &v->log.ops[i];
        if (group_of(&v->m.prog.op[o->op_id]) != g || o->n_entries == 0) continue; /* records with entries */
        vt_oplog *d;
        TRY(vt_steplog_add_op(&sub, o->op_id, o->n_elems, &d));
        for (uint64_t k = 0; k < o->n_entries; k++) TRY(vt_oplog_push(d, o->e[k]));
        *entries += o->n_entries;
    }
    uint8_t *blob = NULL, h[32];
    size_t len = 0;
    if (sub.n_ops) TRY(vt_steplog_encode_stored(&sub, v->m.rcp.zstd_level, &blob, &len, h));
    free(blob);
    vt_steplog_free(&sub);
    return len;
}

static double plain_block(vt_plain *p, const vt_dataset *ds, int k)
{
    double t0 = clk(), loss;
    for (int s = 0; s < k; s++) TRY(vt_plain_step(p, ds, &loss));
    return (clk() - t0) / k;
}

static double verif_block(verif *v, const vt_dataset *ds, int k)
{
    double t0 = clk();
    for (int s = 0; s < k; s++) verif_step(v, ds, NULL);
    return (clk() - t0) / k;
}

/* the recipe and its data set */
static void load_recipe(const char *recipe, const char *root, vt_recipe *rcp, vt_dataset *ds)
{
    vt_recipe_default(rcp);
    TRY(vt_recipe_load_file(rcp, recipe));
    char spec[96];
    vt_recipe_dataset_spec(rcp, spec, sizeof spec);
    TRY(vt_data_load(spec, root, ds));
}

/* --conv-kernels: the convolution kinds' kernels alone (vt_conv2d, vt_conv2d_wgrad, vt_conv2d_dgrad in the
 * BLAS order, no rounding), every convolution of the recipe's step program (program_version 2) run with
 * each implementation (vt_conv_impl_set: gemm, scalar, avx2, avx512 where the processor has them) on
 * random FP32 operands, best of 5 runs each (thread CPU time, one thread); printed per layer shape and
 * per kind (the kind's flop over the sum of its layers' times) as GFLOP/s and as a fraction of the
 * machine's DGEMM rate (1024^3, one BLAS thread); with VT_CONV_IMPL set, that implementation alone */
static float rnd_half(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * 0x1p-53 - 0.5);
}

static int conv_kernels_only(const char *recipe, const char *root)
{
    vt_recipe rcp;
    vt_dataset ds;
    load_recipe(recipe, root, &rcp, &ds);
    vt_model m;
    TRY(vt_model_init(&m, &rcp, ds.n, VT_ORDER_BLAS));
    blas_threads(1);
    vt_par_set_threads(1);
    const double peak = dgemm_peak();
    char *(*corename)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
    static const char *impls[] = {"gemm", "scalar", "avx2", "avx512"};
    static const char *kinds[] = {"conv2d", "conv2d_input_grad", "conv2d_weight_grad"};
    enum { NI = 4 };
    double kflop[3] = {0}, kt[3][NI] = {{0}};
    int ok[NI];
    printf("# bench_cnn --conv-kernels: %s (program_version %u); the machine's DGEMM (1024^3, 1 thread, OpenBLAS "
           "core %s): %.2f GFLOP/s; the default convolution implementation: %s\n\n",
           recipe, rcp.program_version, corename ? corename() : "?", peak * 1e-9, vt_conv_impl());
    const char *only = getenv("VT_CONV_IMPL"); /* set: that implementation alone (for perf record) */
    for (int i = 0; i < NI; i++) ok[i] = vt_conv_impl_set(impls[i]) == VT_OK && (!only || !*only || !strcmp(only, impls[i]));
    printf("| kind | B H W C -> Co, k s p | GFLOP |");
    for (int i = 0; i < NI; i++)
        if (ok[i]) printf(" %s GFLOP/s |", impls[i]);
    printf("\n|---|---|---:|");
    for (int i = 0; i < NI; i++)
        if (ok[i]) printf("---:|");
    printf("\n");
    uint64_t R = 42; /* splitmix64: operands in [-0.5, 0.5) */
    for (uint32_t j = 0; j < m.prog.n_ops; j++) {
        const vt_opdesc *o = &m.prog.op[j];
        const int kd = o->kind == VT_OPK_CONV2D ? 0 : o->kind == VT_OPK_CONV2D_DGRAD ? 1 : o->kind == VT_OPK_CONV2D_WGRAD ? 2 : -1;
        if (kd < 0) continue;
        const int64_t *a = o->iarg;
        vt_conv_geom g;
        TRY(vt_conv_geom_make(&g, a[0], a[1], a[2], a[3], a[4], a[5], a[6], (int)a[7]));
        const size_t Co = (size_t)a[8], M = g.B * g.Ho * g.Wo, K = g.k * g.k * g.C, Min = g.B * g.H * g.W;
        const size_t nx = Min * g.C, rows = kd == 0 ? M : kd == 1 ? Min : K, cols = kd == 1 ? g.C : Co;
        vt_opcost c;
        memset(&c, 0, sizeof c);
        vt_opkind_get(o->kind)->cost(&m.prog, o, &c);
        float *x = malloc(nx * sizeof *x), *w = malloc(K * Co * sizeof *w), *dy = malloc(M * Co * sizeof *dy),
              *wp = malloc(K * Co * sizeof *wp);
        double *out = malloc(rows * cols * sizeof *out), *rn = malloc((rows > K ? rows : K) * sizeof *rn),
               *cn = malloc((cols > Co ? cols : Co) * sizeof *cn);
        if (!x || !w || !dy || !wp || !out || !rn || !cn) {
            fprintf(stderr, "bench_cnn: out of memory\n");
            exit(2);
        }
        for (size_t i = 0; i < nx; i++) x[i] = rnd_half(&R);
        for (size_t i = 0; i < K * Co; i++) w[i] = rnd_half(&R);
        for (size_t i = 0; i < M * Co; i++) dy[i] = rnd_half(&R);
        printf("| %s | %zu %zu %zu %zu -> %zu, %zu %zu %zu | %.4f |", kinds[kd], g.B, g.H, g.W, g.C, Co, g.k, g.s, g.p,
               c.flop * 1e-9);
        kflop[kd] += c.flop;
        for (int i = 0; i < NI; i++) {
            if (!ok[i]) continue;
            TRY(vt_conv_impl_set(impls[i]));
            vt_exec e;
            vt_exec_init(&e, VT_ORDER_BLAS, rcp.bound, 1);
            double best = 1e30;
            for (int r = 0; r < 5; r++) {
                vt_bounds bd;
                vt_conv_ref ref;
                const double t0 = clk();
                if (kd == 0) TRY(vt_conv2d(&e, &g, Co, x, w, out, rn, cn, &bd, &ref));
                else if (kd == 1) TRY(vt_conv2d_dgrad(&e, &g, Co, dy, w, wp, out, rn, cn, &bd, &ref));
                else TRY(vt_conv2d_wgrad(&e, &g, Co, x, dy, out, rn, cn, &bd, &ref));
                const double t = clk() - t0;
                best = t < best ? t : best;
            }
            vt_exec_free(&e);
            kt[kd][i] += best;
            printf(" %.2f |", c.flop / best * 1e-9);
        }
        printf("\n");
        free(x), free(w), free(dy), free(wp), free(out), free(rn), free(cn);
    }
    printf("\nPer kind (the kind's flop over its layers' summed times; %% of the DGEMM rate above):\n\n| kind | GFLOP |");
    for (int i = 0; i < NI; i++)
        if (ok[i]) printf(" %s GFLOP/s (%% DGEMM) |", impls[i]);
    printf("\n|---|---:|");
    for (int i = 0; i < NI; i++)
        if (ok[i]) printf("---:|");
    printf("\n");
    for (int kd = 0; kd < 3; kd++) {
        printf("| %s | %.3f |", kinds[kd], kflop[kd] * 1e-9);
        for (int i = 0; i < NI; i++)
            if (ok[i]) printf(" %.2f (%.0f%%) |", kflop[kd] / kt[kd][i] * 1e-9, 100 * kflop[kd] / kt[kd][i] / peak);
        printf("\n");
    }
    vt_model_free(&m);
    vt_data_free(&ds);
    return 0;
}

/* --profile MODE N: N steps of one configuration alone (for perf record) */
static int profile_only(const char *recipe, const char *root, const char *mode, int n, int threads)
{
    vt_recipe rcp;
    vt_dataset ds;
    load_recipe(recipe, root, &rcp, &ds);
    double t;
    if (!strcmp(mode, "plain64") || !strcmp(mode, "plain32")) {
        vt_plain p;
        TRY(vt_plain_init(&p, &rcp, ds.n, mode[5] == '6'));
        t = plain_block(&p, &ds, n);
        vt_plain_free(&p);
    } else if (!strcmp(mode, "exact") || !strcmp(mode, "log")) {
        verif *v = malloc(sizeof *v);
        if (!v) return 2;
        blas_threads(1);
        verif_init(v, &rcp, &ds, mode[0] == 'e' ? VT_ROUNDING_EXACT : VT_ROUNDING_LOG);
        t = verif_block(v, &ds, n);
        vt_model_free(&v->m), vt_steplog_free(&v->log);
        free(v);
    } else {
        fprintf(stderr, "bench_cnn: --profile MODE is plain64, plain32, exact or log\n");
        return 64;
    }
    printf("%s: %d steps, %.6f s/step (%s)\n", mode, n, t, threads == 1 ? "thread CPU time" : "wall time");
    vt_data_free(&ds);
    return 0;
}

int main(int argc, char **argv)
{
    int quick = 0, threads = 1, prof_n = 0, conv_only = 0;
    const char *prof = NULL;
    const char *recipe = VT_SOURCE_DIR "/recipes/resnet-cifar10.json", *root = NULL, *python = "/usr/bin/python3";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--recipe") && i + 1 < argc) recipe = argv[++i];
        else if (!strcmp(argv[i], "--data-dir") && i + 1 < argc) root = argv[++i];
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc && atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= VT_PAR_MAX)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--conv-kernels")) conv_only = 1;
        else if (!strcmp(argv[i], "--profile") && i + 2 < argc && atoi(argv[i + 2]) >= 1)
            prof = argv[++i], prof_n = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_cnn [--quick] [--recipe FILE] [--data-dir DIR] [--python PATH] [--threads T] "
                            "[--profile plain64|plain32|exact|log N] [--conv-kernels]\n");
            return 64;
        }
    }
    g_cpu_clock = threads == 1; /* several threads: wall time (see the head of this file) */
    vt_par_set_threads(threads);
    blas_threads(threads);
    if (prof) return profile_only(recipe, root, prof, prof_n, threads);
    if (conv_only) return conv_kernels_only(recipe, root);
    const double peak = dgemm_peak();
    blas_threads(1);
    vt_recipe rcp;
    vt_dataset ds;
    load_recipe(recipe, root, &rcp, &ds);
    vt_plain p64, p32;
    TRY(vt_plain_init(&p64, &rcp, ds.n, 1));
    TRY(vt_plain_init(&p32, &rcp, ds.n, 0));
    verif ve, vl;
    verif_init(&ve, &rcp, &ds, VT_ROUNDING_EXACT);
    verif_init(&vl, &rcp, &ds, VT_ROUNDING_LOG);
    gpt_mode = rcp.arch == VT_ARCH_GPT;
    if (gpt_mode) GROUPS = GPT_GROUPS, n_groups = 8;
    size_t params = 0;
    for (uint32_t t = 0; t < ve.m.prog.n_state; t++)
        if (ve.m.prog.t[t].cls == VT_TC_PARAM) params += ve.m.prog.t[t].n;
    const int R = quick ? 3 : 9, K = 3;
    double tp64[16], tp32[16], tex[16], tlg[16];
    for (int r = 0; r < R; r++) { /* plain: a T-thread BLAS; verifiable: T parts, one BLAS thread each */
        blas_threads(threads);
        tp64[r] = plain_block(&p64, &ds, K);
        tp32[r] = plain_block(&p32, &ds, K);
        blas_threads(1);
        tex[r] = verif_block(&ve, &ds, K);
        tlg[r] = verif_block(&vl, &ds, K);
    }
    double m64 = median(tp64, R), m32 = median(tp32, R), mex = median(tex, R), mlg = median(tlg, R);
    /* the per-kind time of the verifiable exact step: the mean of PK more steps (the kinds' table against
     * the DGEMM rate and PyTorch) */
    const int PK = quick ? 2 : 5;
    double kt[NG];
    memset(ve.t, 0, sizeof ve.t);
    ve.last_exact = ve.rctx.stats.exact, ve.last_rounded = ve.rctx.stats.rounded;
    ve.last = clk();
    for (int s = 0; s < PK; s++) verif_step(&ve, &ds, profile_hook);
    for (int g = 0; g < NG; g++) kt[g] = ve.t[g] / PK;
    /* the per-kind profile: one more step of each mode */
    verif *vs[2] = {&ve, &vl};
    for (int k = 0; k < 2; k++) {
        verif *v = vs[k];
        v->last_exact = v->rctx.stats.exact, v->last_rounded = v->rctx.stats.rounded;
        memset(v->t, 0, sizeof v->t), memset(v->ex, 0, sizeof v->ex), memset(v->rd, 0, sizeof v->rd);
        v->last = clk();
        verif_step(v, &ds, profile_hook);
    }
    /* PyTorch */
    double torch_sps = -1, torch_kind[NG], torch_grads = -1; /* torch_grads: its conv input + weight gradient */
    char cmd[2048], torch_clock[32] = "none";
    for (int g = 0; g < NG; g++) torch_kind[g] = -1;
    const int mlp_mode = rcp.arch == VT_ARCH_MLP;
    int tsteps = mlp_mode ? (quick ? 200 : 1000) : quick ? 10 : 40;
    const int cnn_mode = !gpt_mode && !mlp_mode; /* torch_resnet.py and torch_gpt.py profile their kinds */
    snprintf(cmd, sizeof cmd, "'%s' '%s/bench/%s' --recipe '%s' --random-init --threads %d --time-only %d%s%s%s%s 2>/dev/null",
             python, VT_SOURCE_DIR, gpt_mode ? "torch_gpt.py" : mlp_mode ? "torch_mlp.py" : "torch_resnet.py", recipe,
             threads, tsteps, !mlp_mode ? (quick ? " --profile-kinds 5" : " --profile-kinds 20") : "",
             root ? " --data-dir '" : "", root ? root : "", root ? "'" : "");
    FILE *f = popen(cmd, "r");
    if (f) {
        char line[4096] = "";
        if (fgets(line, sizeof line, f)) {
            const double sec = json_num(line, "seconds");
            if (sec > 0) torch_sps = tsteps / sec;
            const char *c = strstr(line, "\"clock\": \"");
            if (c) snprintf(torch_clock, sizeof torch_clock, "%.*s", (int)strcspn(c + 10, "\""), c + 10);
            /* the CNN's kinds as torch_resnet.py names them (the input and weight gradients are one there) */
            static const char *tk[] = {"conv forward", "conv input gradient", "conv weight gradient", "batch norm",
                                       "pooling", "fc", "other"};
            for (int g = 0; !mlp_mode && g < n_groups; g++) /* the GPT's: as GPT_GROUPS names them */
                torch_kind[g] = json_num(line, cnn_mode ? tk[g] : GROUPS[g]);
            if (cnn_mode) torch_grads = json_num(line, "conv input + weight gradient");
        }
        pclose(f);
    }

    printf("# bench_cnn: %s (%s)\n\n", gpt_mode ? "the character-level GPT" : mlp_mode ? "the MLP" : "the residual CNN",
           recipe);
    if (gpt_mode)
        printf("arch=gpt %u layers, %u heads, width %u, context %u, batch %u (%u tokens per step), %zu parameters, %u "
               "operations per step; ", rcp.gpt_layers, rcp.gpt_heads, rcp.gpt_width, rcp.gpt_context, rcp.batch,
               rcp.batch * rcp.gpt_context, params, ve.m.n_ops);
    else if (mlp_mode) {
        printf("arch=mlp layers");
        for (uint32_t l = 0; l <= rcp.n_layers; l++) printf("%s%u", l ? "-" : " ", rcp.widths[l]);
        printf(", batch %u, %zu parameters, %u operations per step; ", rcp.batch, params, ve.m.n_ops);
    } else
        printf("arch=resnet width %u, %u stages x %u blocks, pool %u, batch %u, %zu parameters, %u operations per step; ",
               rcp.resnet_width, rcp.resnet_stages, rcp.resnet_blocks, rcp.resnet_pool, rcp.batch, params, ve.m.n_ops);
    printf("%d thread%s (plain: BLAS with %d; verifiable: the project's --threads %d); medians of %d rounds of %d steps "
           "(%s)\n\n", threads, threads > 1 ? "s" : "", threads, threads, R, K, g_cpu_clock ? "thread CPU time" : "wall time");
    printf("| configuration | s/step | steps/s | / plain FP64 |\n|---|---:|---:|---:|\n");
    printf("| plain FP32 | %.4f | %.2f | %.3f |\n", m32, 1 / m32, m32 / m64);
    printf("| plain FP64 | %.4f | %.2f | 1.000 |\n", m64, 1 / m64);
    printf("| verifiable, rounding=exact | %.4f | %.2f | %.3f |\n", mex, 1 / mex, mex / m64);
    printf("| verifiable, rounding=log | %.4f | %.2f | %.3f |\n", mlg, 1 / mlg, mlg / m64);
    if (torch_sps > 0)
        printf("| PyTorch FP32 (%d thread%s) | %.4f | %.2f | %.3f |\n", threads, threads > 1 ? "s" : "", 1 / torch_sps,
               torch_sps, 1 / torch_sps / m64);
    const char *our_clock = g_cpu_clock ? "thread CPU time" : "wall time";
    if (torch_sps > 0)
        printf("\nClocks: this process %s, PyTorch %s%s\n", our_clock, torch_clock,
               strcmp(our_clock, torch_clock) ? " - NOT THE SAME CLOCK: the ratio to PyTorch is not a like-for-like figure" : "");
    double gfk[NG];
    const double gf = gemm_flops(&ve.m.prog, gfk);
    printf("\nFP64 GEMM work %.3g flop a step; the machine's DGEMM (1024^3, %d BLAS thread%s): %.2f GFLOP/s; reached over "
           "the whole step: verifiable exact %.2f GFLOP/s (%.1f%% of it), plain FP64 %.2f GFLOP/s (%.1f%%)\n",
           gf, threads, threads > 1 ? "s" : "", peak * 1e-9, gf / mex * 1e-9, 100 * gf / mex / peak, gf / m64 * 1e-9,
           100 * gf / m64 / peak);
    if (gpt_mode)
        printf("\ntokens/s: plain FP64 %.0f, verifiable exact %.0f, log %.0f%s%.0f\n", rcp.batch * rcp.gpt_context / m64,
               rcp.batch * rcp.gpt_context / mex, rcp.batch * rcp.gpt_context / mlg, torch_sps > 0 ? ", PyTorch FP32 " : "",
               torch_sps > 0 ? torch_sps * rcp.batch * rcp.gpt_context : 0.0);
    printf("\nPer operation kind against the machine's DGEMM rate (%.2f GFLOP/s, above)%s: the verifiable exact step's "
           "time per kind (the mean of %d steps, %s), its FP64 GEMM work and the rate it reaches%s:\n\n",
           peak * 1e-9, torch_kind[0] >= 0 ? " and PyTorch" : "", PK, our_clock,
           torch_kind[0] < 0 ? ""
           : cnn_mode ? "; PyTorch FP32's ms a step of the same kind (bench/torch_resnet.py --profile-kinds: the profiler's "
                        "shares of its step time, same clock; its one convolution backward operation split in the ratio of "
                        "the two gradients timed alone)"
                      : "; PyTorch FP32's ms a step of the same kind (bench/torch_gpt.py --profile-kinds: the profiler's "
                        "shares of its step time, same clock)");
    printf("| kind | GFLOP a step | exact: ms | GFLOP/s | %% of DGEMM | PyTorch FP32: ms | exact / PyTorch |\n"
           "|---|---:|---:|---:|---:|---:|---:|\n");
    double kt_sum = 0, tk_sum = torch_grads > 0 ? torch_grads : 0;
    for (int g = 0; g < n_groups; g++) {
        if (kt[g] <= 0 && gfk[g] <= 0) continue;
        kt_sum += kt[g];
        char pt[32] = "-", rt[32] = "-";
        if (torch_kind[g] >= 0) {
            if (!cnn_mode || (g != 1 && g != 2)) tk_sum += torch_kind[g]; /* the CNN's two gradients: in torch_grads */
            snprintf(pt, sizeof pt, "%.1f", torch_kind[g]);
            if (torch_kind[g] > 0) snprintf(rt, sizeof rt, "%.2f", 1e3 * kt[g] / torch_kind[g]);
        }
        if (gfk[g] > 0)
            printf("| %s | %.4f | %.1f | %.2f | %.1f%% | %s | %s |\n", GROUPS[g], gfk[g] * 1e-9, 1e3 * kt[g],
                   gfk[g] / kt[g] * 1e-9, 100 * gfk[g] / kt[g] / peak, pt, rt);
        else printf("| %s | 0 | %.1f | - | - | %s | %s |\n", GROUPS[g], 1e3 * kt[g], pt, rt);
        if (g == 2 && torch_grads >= 0) { /* PyTorch's one backward operation: both gradients */
            const double both = kt[1] + kt[2], bf = gfk[1] + gfk[2];
            printf("| conv input + weight gradient (PyTorch: one operation) | %.4f | %.1f | %.2f | %.1f%% | %.1f | %.2f |\n",
                   bf * 1e-9, 1e3 * both, bf / both * 1e-9, 100 * bf / both / peak, torch_grads,
                   torch_grads > 0 ? 1e3 * both / torch_grads : 0.0);
        }
    }
    if (tk_sum > 0)
        printf("| the step (sum of the kinds) | %.4f | %.1f | %.2f | %.1f%% | %.1f | %.2f |\n", gf * 1e-9, 1e3 * kt_sum,
               gf / kt_sum * 1e-9, 100 * gf / kt_sum / peak, tk_sum, 1e3 * kt_sum / tk_sum);
    printf("\nPer operation kind, one step (exact: elements computed exactly; log: entries, and the stored bytes of a "
           "log of those operations' records that have entries, against the dense 1.6-bit code, 0.2 B per rounded "
           "element):\n\n");
    printf("| kind | exact: ms | rounded | computed exactly | fraction | log: ms | entries | log bytes | dense bytes "
           "| log / dense |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int g = 0; g < n_groups; g++) {
        if (!ve.rd[g] && !vl.rd[g]) continue; /* a group this model has none of (the MLP's convolutions) */
        uint64_t ent = 0, b = group_log(&vl, g, &ent);
        double dense = 0.2 * (double)vl.rd[g];
        printf("| %s | %.1f | %llu | %llu | %.2e | %.1f | %llu | %llu | %.0f | %.3f%% |\n", GROUPS[g], 1e3 * ve.t[g],
               (unsigned long long)ve.rd[g], (unsigned long long)ve.ex[g],
               ve.rd[g] ? (double)ve.ex[g] / (double)ve.rd[g] : 0.0, 1e3 * vl.t[g], (unsigned long long)ent,
               (unsigned long long)b, dense, dense > 0 ? 100.0 * (double)b / dense : 0.0);
    }
    uint64_t steps_l = vl.m.step;
    double avg_log = (double)vl.bytes / (double)steps_l, dense_step = 0.2 * (double)vl.rctx.stats.rounded / (double)steps_l;
    printf("\nlog mode over all %llu steps: %.0f stored bytes/step, %.1f entries/step, dense %.0f bytes/step: %.3f%%\n",
           (unsigned long long)steps_l, avg_log, (double)vl.entries / (double)steps_l, dense_step,
           100.0 * avg_log / dense_step);
    printf("exact mode: %llu of %llu rounded elements computed exactly (%.2e)\n\n", (unsigned long long)ve.rctx.stats.exact,
           (unsigned long long)ve.rctx.stats.rounded, (double)ve.rctx.stats.exact / (double)ve.rctx.stats.rounded);
    printf("SIDE %s %d %.5f %.5f %.5f %.5f %.5f %.4f %.4f %s %s\n",
           gpt_mode                      ? "GPT"
           : mlp_mode                    ? "MLP"
           : rcp.program_version == 3    ? "CNN-program-3"
           : rcp.program_version == 2    ? "CNN-program-2"
                                         : "CNN-program-1",
           threads, m32, m64,
           mex, mlg, torch_sps > 0 ? 1 / torch_sps : -1.0, gf / mex / peak, gf / m64 / peak,
           g_cpu_clock ? "thread-CPU" : "wall", !strcmp(torch_clock, "thread CPU time") ? "thread-CPU"
                                                 : !strcmp(torch_clock, "wall time") ? "wall" : "none");
    printf("%s verification overhead, rounding=exact: %.3f (target <= 1.10)\n", mex / m64 <= 1.10 ? "PASS" : "MISS",
           mex / m64);
    printf("%s verification overhead, rounding=log: %.3f (target <= 1.10)\n", mlg / m64 <= 1.10 ? "PASS" : "MISS", mlg / m64);
    printf("%s log / dense: %.3f%% (target <= 2%%)\n", avg_log / dense_step <= 0.02 ? "PASS" : "MISS",
           100.0 * avg_log / dense_step);
    if (torch_sps > 0)
        printf("%s PyTorch FP32 steps/s / verifiable (exact) steps/s: %.2f (target <= 2.5)\n",
               torch_sps * mex <= 2.5 ? "PASS" : "MISS", torch_sps * mex);
    else printf("SKIP PyTorch comparison: %s bench/torch_resnet.py did not run (python3-torch missing?)\n", python);
    vt_plain_free(&p64), vt_plain_free(&p32);
    vt_model_free(&ve.m), vt_model_free(&vl.m);
    vt_steplog_free(&ve.log), vt_steplog_free(&vl.log);
    vt_data_free(&ds);
    return 0;
}
