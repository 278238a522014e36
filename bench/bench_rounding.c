/* bench_rounding.c - benchmark of the rounding layer on GEMM shapes of MLP, CNN (im2col) and
 * transformer layers, forward and backward, reduction lengths K = 64 .. 65536.
 *
 * For every shape and both bound modes (provable; probabilistic, lambda = 10) it reports
 *   - the log: entries, logged fraction (entries / elements), compressed log bytes per million
 *     rounded elements (the whole "VTLZ" container of a one-operation step log, zstd level 3 as
 *     the trainer's default recipe, and the marginal bytes = container minus the container of
 *     the same operation with no entries, which is what the operation adds to a real step log),
 *     and the ratio to the dense published baseline (1.6 bits per element = 200,000 bytes per
 *     million elements);
 *   - the time of bounds + rounding + logging relative to the bare FP64 GEMM in the same run:
 *       bare     cblas_dgemm on FP64 copies of the operands made beforehand (outside the timing)
 *       verif    vt_gemm (FP32 -> FP64 conversion + row/column norms + the same dgemm)
 *                + vt_round in record mode + vt_steplog_encode (zstd + SHA-256)
 *       overhead = (verif - bare) / bare   (best of several repetitions each, interleaved)
 *     with BLAS single-threaded, and (when the BLAS is OpenBLAS) again with 2 BLAS threads.
 * Then one PASS/MISS line per target of the acceptance text.
 *
 * Usage: bench_rounding [--quick] [--reps N] [--no-mt] [--strict] [--wall] [--only SUBSTRING]
 *   --quick   a subset of shapes with fewer repetitions (a smoke run of ~15 s)
 *   --reps N  repetitions per measurement (default: adaptive, 3..25, about 3 s per shape)
 *   --no-mt   skip the 2-thread measurement
 *   --strict  exit 1 when a target is missed (default: report only, exit 0)
 *   --wall    time single-threaded runs with the wall clock instead of the thread's CPU time
 *   --only S  only the shapes whose name contains S (for profiling)
 * Run it with OPENBLAS_NUM_THREADS=1 (scripts/bench.sh does); the program also sets the
 * OpenBLAS thread count itself through openblas_set_num_threads when the symbol exists.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/vt_cli.h"
#include "common/vt_error.h"
#include "kernels/vt_kernels.h"
#include "rounding_log/vt_rlog.h"

#define DENSE_BYTES_PER_M 200000.0 /* 1.6 bits per element */
#define ZSTD_LEVEL 3                /* the trainer's default (model/vt_recipe.c) */
#define NMODES 2

typedef struct {
    const char *name;
    size_t M, N, K;
    int tA, tB; /* C = op(A) op(B), vt_gemm conventions */
    int relu;   /* A = max(0, N(0,1)) instead of N(0,1) */
    int quick;  /* part of --quick */
} shape;

/* C = op(A) op(B). Forward Y = X W (0,0); input grad dX = dY W^T (0,1); weight grad dW = X^T dY (1,0).
 * im2col convolution: the column matrix is (batch*H*W) x (k*k*C_in), weights (k*k*C_in) x C_out. */
static const shape shapes[] = {
    {"transformer attn scores Q*K^T fwd (seq 512, head 64)", 512, 512, 64, 0, 1, 0, 1},
    {"CNN conv3x3 input-grad dCol = dY*W^T (C_out 64, 4x28x28)", 3136, 576, 64, 0, 1, 0, 0},
    {"MLP fc2 weight-grad dW = X^T*dY (batch 128, 1024->1024)", 1024, 1024, 128, 1, 0, 0, 0},
    {"MLP fc1 weight-grad dW = X^T*dY (batch 256, 784->1024)", 784, 1024, 256, 1, 0, 0, 1},
    {"CNN conv3x3 input-grad dCol = dY*W^T (C_out 256, 16x7x7)", 784, 2304, 256, 0, 1, 0, 0},
    {"transformer attn out-proj fwd (512 tok, d 512)", 512, 512, 512, 0, 0, 0, 0},
    {"CNN conv3x3 fwd im2col (C_in 64 -> 64, 4x28x28)", 3136, 64, 576, 0, 0, 0, 0},
    {"transformer QKV proj fwd (256 tok, d 768 -> 3x768)", 256, 2304, 768, 0, 0, 0, 0},
    {"MLP fc1 fwd (batch 256, 784->1024)", 256, 1024, 784, 0, 0, 0, 0},
    {"MLP fc2 fwd (batch 256, 1024->1024)", 256, 1024, 1024, 0, 0, 0, 1},
    {"MLP fc2 fwd, ReLU activations (batch 256, 1024->1024)", 256, 1024, 1024, 0, 0, 1, 0},
    {"MLP fc2 input-grad dX = dY*W^T (batch 256, 1024->1024)", 256, 1024, 1024, 0, 1, 0, 0},
    {"CNN conv3x3 fwd im2col (C_in 128 -> 128, 8x14x14)", 1568, 128, 1152, 0, 0, 0, 0},
    {"CNN conv3x3 fwd im2col, ReLU act. (C_in 128 -> 128, 8x14x14)", 1568, 128, 1152, 0, 0, 1, 0},
    {"CNN conv3x3 fwd im2col (C_in 256 -> 256, 16x7x7)", 784, 256, 2304, 0, 0, 0, 0},
    {"CNN conv3x3 weight-grad dW = Col^T*dY (64 -> 64, 4x28x28)", 576, 64, 3136, 1, 0, 0, 0},
    {"transformer FFN down fwd (256 tok, 4096 -> 1024)", 256, 1024, 4096, 0, 0, 0, 1},
    {"transformer FFN down fwd, ReLU act. (256 tok, 4096 -> 1024)", 256, 1024, 4096, 0, 0, 1, 0},
    {"transformer FFN up input-grad dX = dH*W1^T (256 tok, 1024 -> 4096)", 256, 1024, 4096, 0, 1, 0, 0},
    {"transformer attn proj weight-grad dW = X^T*dY (4096 tok, d 512)", 512, 512, 4096, 1, 0, 0, 0},
    {"CNN conv3x3 weight-grad dW = Col^T*dY (16 -> 64, 16x32x32)", 144, 64, 16384, 1, 0, 0, 1},
    {"CNN conv1 3x3 weight-grad dW = Col^T*dY (RGB 3 -> 64, 64x32x32)", 27, 64, 65536, 1, 0, 0, 0},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* ----------------------------------------------------------------- helpers */

static void die(const char *what)
{
    fprintf(stderr, "bench_rounding: %s: %s\n", what, vt_errmsg());
    exit(VT_EXIT_CANNOT);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_rounding: out of memory (%zu bytes)\n", n);
        exit(VT_EXIT_CANNOT);
    }
    return p;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* n seeded N(0,1) FP32 values (Box-Muller); relu: max(0, .) */
static void gaussian(float *x, size_t n, uint64_t seed, int relu)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i += 2) {
        double u1 = ((double)(splitmix64(&s) >> 11) + 1.0) * 0x1p-53; /* (0, 1] */
        double u2 = (double)(splitmix64(&s) >> 11) * 0x1p-53;
        double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u2;
        float a = (float)(r * cos(t)), b = (float)(r * sin(t));
        if (relu) {
            a = a > 0.0f ? a : 0.0f;
            b = b > 0.0f ? b : 0.0f;
        }
        x[i] = a;
        if (i + 1 < n) x[i + 1] = b;
    }
}

/* OpenBLAS thread control, when the BLAS is OpenBLAS (looked up at run time so that any CBLAS
 * can be swapped in). */
typedef void (*set_threads_fn)(int);
typedef char *(*get_config_fn)(void);
static set_threads_fn blas_set_threads;

static void cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ') p++;
                p[strcspn(p, "\n")] = 0;
                snprintf(buf, n, "%s", p);
            }
            break;
        }
    fclose(f);
}

/* the first three fields of /proc/loadavg (other processes on the machine disturb the timing) */
static void read_loadavg(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, n, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
}

/* The clock of the measurements. Single-threaded runs use the CPU time of this thread (user +
 * system, so page faults count) which, unlike wall-clock time, does not grow while other processes
 * hold the CPU: the machine this was written on is shared. Multi-threaded BLAS runs (and --wall)
 * use the monotonic wall clock (vt_now). */
static int g_cpu_clock = 1;
static double now(void)
{
    if (g_cpu_clock) {
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return vt_now();
}

static int min_i(int a, int b) { return a < b ? a : b; }
static int max_i(int a, int b) { return a > b ? a : b; }

/* ------------------------------------------------------------ measurement */

typedef struct {
    /* log (from the last repetition; identical in every repetition) */
    uint64_t entries, dir, val;
    size_t bytes, bytes_empty;
    /* best times, seconds */
    double verif, gemm, round, enc; /* verif = gemm + round + enc (best total); parts: best each */
    double verif2;                  /* 2 BLAS threads (provable only) */
} mode_result;

typedef struct {
    double bare, bare2;
    mode_result m[NMODES];
} shape_result;

typedef struct {
    const shape *s;
    float *A, *B, *out;
    double *A64, *B64, *C, *rn, *cn;
    vt_exec ex[NMODES];
    vt_rctx rc[NMODES];
    vt_steplog log[NMODES];
    uint64_t step;
} bench_ctx;

static double time_bare(bench_ctx *b)
{
    const shape *s = b->s;
    double t0 = now();
    cblas_dgemm(CblasRowMajor, s->tA ? CblasTrans : CblasNoTrans, s->tB ? CblasTrans : CblasNoTrans, (int)s->M,
                (int)s->N, (int)s->K, 1.0, b->A64, s->tA ? (int)s->M : (int)s->K, b->B64,
                s->tB ? (int)s->K : (int)s->N, 0.0, b->C, (int)s->N);
    return now() - t0;
}

/* One verifiable GEMM: vt_gemm + vt_round (record) + vt_steplog_encode. Times in t[0..2]. */
static void time_verif(bench_ctx *b, int mode, double t[3], mode_result *r)
{
    const shape *s = b->s;
    vt_bounds bd;
    uint8_t *blob = NULL;
    size_t blen = 0;
    uint8_t hash[32];
    double t0 = now();
    if (vt_gemm(&b->ex[mode], s->tA, s->tB, s->M, s->N, s->K, b->A, b->B, b->C, b->rn, b->cn, &bd)) die("vt_gemm");
    double t1 = now();
    if (vt_rctx_begin_step(&b->rc[mode], ++b->step, &b->log[mode])) die("vt_rctx_begin_step");
    if (vt_round(&b->rc[mode], 1, b->C, &bd, s->M, s->N, b->out)) die("vt_round");
    double t2 = now();
    if (vt_steplog_encode(&b->log[mode], ZSTD_LEVEL, &blob, &blen, hash)) die("vt_steplog_encode");
    double t3 = now();
    free(blob);
    t[0] = t1 - t0;
    t[1] = t2 - t1;
    t[2] = t3 - t2;
    if (r) {
        const vt_oplog *o = &b->log[mode].ops[0];
        r->entries = o->n_entries;
        r->dir = r->val = 0;
        for (uint64_t k = 0; k < o->n_entries; k++) {
            if (o->e[k].is_value)
                r->val++;
            else
                r->dir++;
        }
        r->bytes = blen;
    }
}

static size_t empty_log_bytes(uint64_t n_elems)
{
    vt_steplog l;
    vt_oplog *o;
    uint8_t *blob = NULL;
    size_t blen = 0;
    vt_steplog_init(&l, 1);
    if (vt_steplog_add_op(&l, 1, n_elems, &o)) die("vt_steplog_add_op");
    if (vt_steplog_encode(&l, ZSTD_LEVEL, &blob, &blen, NULL)) die("vt_steplog_encode");
    free(blob);
    vt_steplog_free(&l);
    return blen;
}

static void run_shape(const shape *s, uint64_t seed, int reps_opt, int quick, int mt, shape_result *res)
{
    bench_ctx b;
    memset(&b, 0, sizeof b);
    b.s = s;
    const size_t nA = s->M * s->K, nB = s->K * s->N, nC = s->M * s->N;
    b.A = xmalloc(nA * sizeof(float));
    b.B = xmalloc(nB * sizeof(float));
    b.out = xmalloc(nC * sizeof(float));
    b.A64 = xmalloc(nA * sizeof(double));
    b.B64 = xmalloc(nB * sizeof(double));
    b.C = xmalloc(nC * sizeof(double));
    b.rn = xmalloc(s->M * sizeof(double));
    b.cn = xmalloc(s->N * sizeof(double));
    gaussian(b.A, nA, seed * 2 + 1, s->relu);
    gaussian(b.B, nB, seed * 2 + 2, 0);
    for (size_t i = 0; i < nA; i++) b.A64[i] = (double)b.A[i];
    for (size_t i = 0; i < nB; i++) b.B64[i] = (double)b.B[i];
    const vt_bound_cfg cfg[NMODES] = {{.mode = VT_BOUND_PROVABLE}, {.mode = VT_BOUND_PROBABILISTIC, .lambda = VT_DEFAULT_LAMBDA}};
    for (int m = 0; m < NMODES; m++) {
        vt_exec_init(&b.ex[m], VT_ORDER_BLAS, cfg[m], 0);
        vt_rctx_init(&b.rc[m], VT_RMODE_RECORD, cfg[m]);
        vt_steplog_init(&b.log[m], 0);
    }
    memset(res, 0, sizeof *res);
    res->bare = res->bare2 = 1e300;
    for (int m = 0; m < NMODES; m++) {
        mode_result *r = &res->m[m];
        r->verif = r->gemm = r->round = r->enc = r->verif2 = 1e300;
        r->bytes_empty = empty_log_bytes((uint64_t)nC);
    }

    /* warm-up (allocates workspaces, faults pages in) and a time estimate of one repetition */
    double t[3];
    double per_rep = time_bare(&b);
    for (int m = 0; m < NMODES; m++) {
        time_verif(&b, m, t, NULL);
        per_rep += t[0] + t[1] + t[2];
    }
    int reps = reps_opt;
    if (reps <= 0) {
        double budget = quick ? 0.4 : 3.0; /* seconds of single-threaded repetitions per shape */
        reps = per_rep > 0 ? (int)(budget / per_rep) : 15;
        reps = max_i(quick ? 2 : 3, min_i(reps, quick ? 5 : 25));
    }

    /* single-threaded BLAS: interleave bare and verifiable runs so drift hits both alike */
    for (int rep = 0; rep < reps; rep++) {
        double tb = time_bare(&b);
        if (tb < res->bare) res->bare = tb;
        for (int m = 0; m < NMODES; m++) {
            mode_result *r = &res->m[m];
            time_verif(&b, m, t, r);
            double tot = t[0] + t[1] + t[2];
            if (tot < r->verif) r->verif = tot;
            if (t[0] < r->gemm) r->gemm = t[0];
            if (t[1] < r->round) r->round = t[1];
            if (t[2] < r->enc) r->enc = t[2];
        }
    }
    if (mt && blas_set_threads) {
        int cpu_clock = g_cpu_clock;
        g_cpu_clock = 0; /* BLAS worker threads: wall clock */
        blas_set_threads(2);
        (void)time_bare(&b);
        for (int rep = 0; rep < reps; rep++) {
            double tb = time_bare(&b);
            if (tb < res->bare2) res->bare2 = tb;
            time_verif(&b, 0, t, NULL);
            double tot = t[0] + t[1] + t[2];
            if (tot < res->m[0].verif2) res->m[0].verif2 = tot;
        }
        blas_set_threads(1);
        g_cpu_clock = cpu_clock;
    }

    for (int m = 0; m < NMODES; m++) {
        vt_exec_free(&b.ex[m]);
        vt_steplog_free(&b.log[m]);
    }
    free(b.A);
    free(b.B);
    free(b.out);
    free(b.A64);
    free(b.B64);
    free(b.C);
    free(b.rn);
    free(b.cn);
}

/* ----------------------------------------------------------------- report */

static const char *mode_name(int m) { return m == 0 ? "provable" : "prob. λ=10"; }
static const char *op_name(const shape *s)
{
    if (!s->tA && !s->tB) return "A·B";
    if (!s->tA && s->tB) return "A·Bᵀ";
    if (s->tA && !s->tB) return "Aᵀ·B";
    return "Aᵀ·Bᵀ";
}
static double per_m(double bytes, double elems) { return bytes / elems * 1e6; }
static double ovh(double verif, double bare) { return (verif - bare) / bare; }

int main(int argc, char **argv)
{
    int quick = 0, reps = 0, mt = 1, strict = 0;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--no-mt"))
            mt = 0;
        else if (!strcmp(argv[i], "--strict"))
            strict = 1;
        else if (!strcmp(argv[i], "--wall"))
            g_cpu_clock = 0;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            if (vt_cli_int("--reps", argv[++i], 1, 1000000, &reps) != VT_OK) {
                fprintf(stderr, "%s: %s\n", argv[0], vt_errmsg());
                return VT_EXIT_USAGE;
            }
        }
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            filter = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--reps N] [--no-mt] [--strict] [--wall] [--only SUBSTRING]\n", argv[0]);
            return VT_EXIT_USAGE;
        }
    }
    blas_set_threads = (set_threads_fn)dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    get_config_fn blas_config = (get_config_fn)dlsym(RTLD_DEFAULT, "openblas_get_config");
    if (blas_set_threads) blas_set_threads(1);

    char cpu[256], load0[64];
    cpu_model(cpu, sizeof cpu);
    read_loadavg(load0, sizeof load0);
    const char *env_thr = getenv("OPENBLAS_NUM_THREADS");
    printf("### bench_rounding%s\n\n", quick ? " --quick" : "");
    printf("CPU: %s; BLAS: %s; OPENBLAS_NUM_THREADS=%s; zstd level %d; inputs: seeded N(0,1) FP32 "
           "(\"ReLU\": A = max(0, N(0,1))).\n",
           cpu, blas_config ? blas_config() : "(not OpenBLAS: thread count not controlled)",
           env_thr ? env_thr : "(unset)", ZSTD_LEVEL);
    printf("Dense published baseline: 1.6 bits/element = %.0f bytes per million elements.\n\n", DENSE_BYTES_PER_M);

    size_t idx[NSHAPES], n = 0;
    for (size_t i = 0; i < NSHAPES; i++)
        if ((!quick || shapes[i].quick) && (!filter || strstr(shapes[i].name, filter))) idx[n++] = i;
    shape_result *res = xmalloc(n * sizeof *res);
    double t_start = vt_now();
    for (size_t k = 0; k < n; k++) {
        const shape *s = &shapes[idx[k]];
        fprintf(stderr, "[%2zu/%zu] %s  %zux%zux%zu ...", k + 1, n, s->name, s->M, s->N, s->K);
        fflush(stderr);
        double t0 = vt_now();
        run_shape(s, 1000 + idx[k], reps, quick, mt && !quick, &res[k]);
        fprintf(stderr, " %.1f s\n", vt_now() - t0);
    }
    double t_total = vt_now() - t_start;

    /* Table 1: the log */
    printf("#### Log size (zstd level %d)\n\n", ZSTD_LEVEL);
    printf("\"log bytes\": the compressed container (\"VTLZ\", zstd level %d) of a step log holding this one "
           "operation; \"dense bytes\": the published method's 1.6 bits per element for the same elements; "
           "\"bytes/M\": log bytes per million elements; \"marginal\": minus the container of the same op "
           "with no entries (container header, hash and zstd frame, paid once per step, plus the op's empty record), "
           "i.e. what the op's entries add to a step log; \"%% dense\" = marginal bytes/M / 200,000.\n\n",
           ZSTD_LEVEL);
    printf("| shape | M×N×K | op | mode | elements | entries (dir+val) | logged frac | log bytes | dense bytes | "
           "bytes/M | marginal bytes/M | %% dense |\n");
    printf("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (size_t k = 0; k < n; k++) {
        const shape *s = &shapes[idx[k]];
        double el = (double)(s->M * s->N);
        for (int m = 0; m < NMODES; m++) {
            const mode_result *r = &res[k].m[m];
            double marg = per_m((double)r->bytes - (double)r->bytes_empty, el);
            printf("| %s | %zu×%zu×%zu | %s | %s | %zu | %llu (%llu+%llu) | %.2e | %zu | %.0f | %.0f | %.0f | %.2f%% |\n",
                   s->name, s->M, s->N, s->K, op_name(s), mode_name(m), s->M * s->N, (unsigned long long)r->entries,
                   (unsigned long long)r->dir, (unsigned long long)r->val, (double)r->entries / el, r->bytes,
                   el * DENSE_BYTES_PER_M / 1e6, per_m((double)r->bytes, el), marg, 100.0 * marg / DENSE_BYTES_PER_M);
        }
    }

    /* Table 2: time */
    printf("\n#### Time: bounds + rounding + logging relative to the bare FP64 GEMM\n\n");
    printf("Best of several interleaved repetitions, %s. bare = cblas_dgemm on FP64 copies made beforehand; "
           "verif = vt_gemm (FP32→FP64 conversion + norms + dgemm) + vt_round (record) + vt_steplog_encode. "
           "overhead = (verif − bare)/bare. The parts (provable mode) as %% of bare: cvt+norms = best "
           "vt_gemm − bare; round = vt_round; encode = vt_steplog_encode (zstd + SHA-256). "
           "2T: the same with 2 OpenBLAS threads (conversion, rounding and encoding stay single-threaded), wall clock.\n\n",
           g_cpu_clock ? "timed by the CPU time of the (only) thread, which other processes on the machine do not inflate"
                       : "timed by the wall clock");
    printf("| shape | K | elements | bare ms | provable ms | overhead | prob. ms | overhead | cvt+norms | round | "
           "encode | round ns/elem | bare 2T ms | overhead 2T |\n");
    printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (size_t k = 0; k < n; k++) {
        const shape *s = &shapes[idx[k]];
        const shape_result *r = &res[k];
        const mode_result *p = &r->m[0], *q = &r->m[1];
        char mt2[64] = "n/a", mt2b[64] = "n/a";
        if (r->bare2 < 1e299) {
            snprintf(mt2b, sizeof mt2b, "%.2f", r->bare2 * 1e3);
            snprintf(mt2, sizeof mt2, "%+.1f%%", 100.0 * ovh(p->verif2, r->bare2));
        }
        printf("| %s | %zu | %zu | %.2f | %.2f | %+.1f%% | %.2f | %+.1f%% | %.1f%% | %.1f%% | %.1f%% | %.2f | %s | %s |\n",
               s->name, s->K, s->M * s->N, r->bare * 1e3, p->verif * 1e3, 100.0 * ovh(p->verif, r->bare),
               q->verif * 1e3, 100.0 * ovh(q->verif, r->bare), 100.0 * (p->gemm - r->bare) / r->bare,
               100.0 * p->round / r->bare, 100.0 * p->enc / r->bare, p->round * 1e9 / (double)(s->M * s->N), mt2b, mt2);
    }

    /* Targets (provable mode, Gaussian inputs unless stated) */
    printf("\n#### Targets\n\n");
    int missed = 0;
    {
        /* T1: K <= 1024, provable, Gaussian: marginal log <= 2% of dense */
        double worst = -1, worst_tot = -1;
        const char *wn = "-";
        int cnt = 0;
        for (size_t k = 0; k < n; k++) {
            const shape *s = &shapes[idx[k]];
            if (s->K > 1024 || s->relu) continue;
            double el = (double)(s->M * s->N), r = ((double)res[k].m[0].bytes - (double)res[k].m[0].bytes_empty) / el * 1e6;
            double tot = (double)res[k].m[0].bytes / el * 1e6;
            cnt++;
            if (r > worst) worst = r, wn = s->name;
            if (tot > worst_tot) worst_tot = tot;
        }
        int ok = worst <= 0.02 * DENSE_BYTES_PER_M;
        missed += !ok;
        printf("- %s T1 provable, K <= 1024 (%d shapes): log <= 2%% of dense (4000 bytes/M): worst marginal %.0f "
               "bytes/M = %.2f%% (%s); whole containers: worst %.0f bytes/M = %.2f%%\n",
               ok ? "PASS" : "MISS", cnt, worst, 100.0 * worst / DENSE_BYTES_PER_M, wn, worst_tot,
               100.0 * worst_tot / DENSE_BYTES_PER_M);
    }
    {
        /* T2: K = 4096 provable <= 10%; T3: probabilistic <= 1/4 of provable at 4096 */
        double worst = -1, worst_ratio = -1, worst_tot = -1;
        const char *wn = "-", *wr = "-";
        int cnt = 0;
        for (size_t k = 0; k < n; k++) {
            const shape *s = &shapes[idx[k]];
            if (s->K != 4096 || s->relu) continue;
            double el = (double)(s->M * s->N);
            double pr = ((double)res[k].m[0].bytes - (double)res[k].m[0].bytes_empty) / el * 1e6;
            double pb = ((double)res[k].m[1].bytes - (double)res[k].m[1].bytes_empty) / el * 1e6;
            double tot = (double)res[k].m[0].bytes / el * 1e6;
            cnt++;
            if (pr > worst) worst = pr, wn = s->name;
            if (tot > worst_tot) worst_tot = tot;
            if (pb / pr > worst_ratio) worst_ratio = pb / pr, wr = s->name;
        }
        if (cnt) {
            int ok = worst <= 0.10 * DENSE_BYTES_PER_M;
            missed += !ok;
            printf("- %s T2 provable, K = 4096 (%d shapes): log <= 10%% of dense (20000 bytes/M): worst marginal %.0f "
                   "bytes/M = %.2f%% (%s); whole containers: worst %.0f bytes/M = %.2f%%\n",
                   ok ? "PASS" : "MISS", cnt, worst, 100.0 * worst / DENSE_BYTES_PER_M, wn, worst_tot,
                   100.0 * worst_tot / DENSE_BYTES_PER_M);
            ok = worst_ratio <= 0.25;
            missed += !ok;
            printf("- %s T3 probabilistic (λ=10) <= 1/4 of provable bytes at K = 4096 (%d shapes): worst ratio %.3f (%s)\n",
                   ok ? "PASS" : "MISS", cnt, worst_ratio, wr);
        }
    }
    for (int m = 0; m < NMODES; m++) {
        /* T4: overhead <= 10% for K >= 256 (1 BLAS thread) */
        double worst = -1e9;
        const char *wn = "-";
        int cnt = 0, nmiss = 0;
        char list[2048] = "";
        for (size_t k = 0; k < n; k++) {
            const shape *s = &shapes[idx[k]];
            if (s->K < 256) continue;
            double o = ovh(res[k].m[m].verif, res[k].bare);
            cnt++;
            if (o > worst) worst = o, wn = s->name;
            if (o > 0.10) {
                nmiss++;
                size_t L = strlen(list);
                snprintf(list + L, sizeof list - L, "%sK=%zu %+.1f%%", nmiss > 1 ? ", " : "", s->K, 100.0 * o);
            }
        }
        int ok = nmiss == 0;
        missed += !ok;
        printf("- %s T4 %s, K >= 256 (%d shapes, all inputs): bounds+rounding+logging <= 10%% of the bare FP64 GEMM "
               "(1 BLAS thread): worst %+.1f%% (%s)%s%s\n",
               ok ? "PASS" : "MISS", mode_name(m), cnt, 100.0 * worst, wn, nmiss ? "; over 10%: " : "", list);
    }
    char load1[64];
    read_loadavg(load1, sizeof load1);
    printf("\nTotal benchmark time %.1f s; load average (1/5/15 min) at start %s, at end %s.\n", t_total, load0,
           load1);
    free(res);
    return strict && missed ? VT_EXIT_REJECTED : VT_EXIT_OK;
}
