/* bench_step.c - what a verifiable training step costs, measured in one run on one machine.
 *
 * For the default MLP (784-128-10, batch 64) and a wider one (784-1024-10, batch 64) on MNIST,
 * single-threaded BLAS (OPENBLAS_NUM_THREADS=1; the program also calls openblas_set_num_threads(1)):
 *
 *   plain FP64 / FP32   model/vt_plain.h: the same recipe in plain double / float (dgemm /
 *                       sgemm, no rounding layer, no log, no hashing)
 *   verifiable          in memory, what run/vt_train.c's commit_step does minus the SQLite
 *                       and checkpoint I/O: vt_model_step in record mode (BLAS order) + the stored
 *                       log (vt_steplog_encode_stored: zstd container + log hash; zero bytes for
 *                       a log without op records, i.e. every exact-rounding step) + state hash when due + leaf + Merkle append; at the
 *                       recipe's default H (state hash every H steps and at the last step) and at
 *                       H = 1 (the same run with the missing state hashes timed separately); with
 *                       the default recipe (rounding=exact: no log entries, every rounded element
 *                       RN32 of the exact value) and with the same recipe in rounding=log
 *   with run store      vt_train_run (the trainer library: SQLite, checkpoints every K, fsync)
 *   replay              the auditor's loop in memory over the same steps: log decode + hash check,
 *                       vt_model_step in replay mode, state hash when committed (checked); in the
 *                       trainer's order (blas) and in the auditor's default order (split); for
 *                       rounding=log in the split order (entries judged against the exact value)
 *
 * Figures and targets:
 *   verification overhead = verifiable step / plain FP64 step, rounding=exact and rounding=log
 *                                                                         target <= 1.10
 *   precision cost        = plain FP64 step / plain FP32 step             (reported)
 *   log size              = compressed log bytes per step / (rounded elements per step * 0.2 B,
 *                           the dense 1.6-bit code of the published method), rounding=log
 *                                                                         target <= 2%
 *                           rounding=exact: 0 entries, 0 stored bytes         target 0
 *   state hashing         = vt_model_state_hash throughput, one core      target >= 1.5 GB/s
 *   audit speed           = replay steps/s / training steps/s             target >= 0.95
 *   parallel audit        = time(auditor verify --jobs 1) / time(--jobs 2), the real binaries on
 *                           a run of a few hundred steps written by the real trainer
 *                                                                         target >= 1.7
 * Plain FP64, plain FP32, verifiable and the replays (both roundings) run in rounds of interleaved
 * blocks (other processes then slow all of them alike); per-step figures are medians over the
 * rounds, timed by the CPU time of the (only) thread unless --wall.
 * Beside the parallel audit: the machine's own 2-thread ceiling (a fixed compute loop on 1 and 2
 * threads) and the serial part of an audit (an audit of one step), i.e. the Amdahl bound.
 * Then where the time goes: the time of every operation inside the real step (vt_model_run's
 * per-operation hook), each GEMM re-timed in isolation (bare dgemm, vt_gemm in the blas and
 * pairwise orders, vt_round with the tight fallback and with the outer bound alone, elements the
 * screen leaves unstable) and the other operations (kernel and rounding apart); then a markdown
 * table and one PASS/MISS line per target. docs/benchmarks.md ("Training step") explains them.
 *
 * Usage: bench_step [--quick] [--strict] [--no-cli] [--wall] [--data-dir DIR]
 *   --quick     fewer steps (a smoke run)
 *   --wall      time the in-process figures with the wall clock instead of the thread's CPU time
 *   --strict    exit 1 when a target is missed (default: report only, exit 0)
 *   --no-cli    skip the auditor --jobs measurement (needs trainer and auditor next to this binary)
 */
#include <cblas.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/vt_cli.h"
#include "common/vt_error.h"
#include "common/vt_hash.h"
#include "data/vt_data.h"
#include "kernels/vt_kernels.h"
#include "kernels/vt_kernels_hd.h"
#include "merkle/vt_merkle.h"
#include "merkle/vt_sign.h"
#include "model/vt_model.h"
#include "model/vt_plain.h"
#include "rounding/vt_round.h"
#include "run/vt_train.h"

#define BENCH_NAME "bench_step"
#include "bench/bench_util.h"

static const char *data_root = NULL;
static int quick = 0;

/* ------------------------------------------------------------------ plain */

/* Seconds per plain step over a block of k steps. */
static double plain_block(vt_plain *p, const vt_dataset *ds, uint64_t k)
{
    double loss, t0 = clk();
    for (uint64_t s = 0; s < k; s++) TRY(vt_plain_step(p, ds, &loss));
    return (clk() - t0) / (double)k;
}

/* ------------------------------------------------------------- verifiable */

/* Per-operation time inside the real step, through vt_model_run's hook (one clock read per
 * operation): acc[op] += time since the previous operation ended. */
typedef struct {
    double last;
    uint32_t n_ops;
    double *acc; /* acc[1 .. n_ops], one per operation of the program */
} op_clock;

static void op_clock_init(op_clock *c, const vt_model *m)
{
    c->last = 0;
    c->n_ops = m->n_ops;
    c->acc = calloc((size_t)m->n_ops + 1, sizeof *c->acc);
    if (!c->acc) {
        fprintf(stderr, "bench_step: out of memory\n");
        exit(2);
    }
}

static void op_clock_free(op_clock *c)
{
    free(c->acc);
    c->acc = NULL;
    c->n_ops = 0;
}

static vt_err op_tick(void *ctx, vt_model *m, uint64_t step, uint32_t op_id)
{
    (void)m, (void)step;
    op_clock *c = ctx;
    double now = clk();
    if (op_id <= c->n_ops) c->acc[op_id] += now - c->last;
    c->last = now;
    return VT_OK;
}

static vt_err timed_step(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, op_clock *c, float *loss)
{
    c->last = clk();
    VT_FORWARD_IF_ERROR(vt_model_run(m, ds, rctx, m->n_ops, op_tick, c));
    *loss = vt_model_loss(m);
    return VT_OK;
}

typedef struct {
    uint64_t n, done;           /* steps 1..n to record; steps recorded so far */
    uint32_t H, K;
    double t_step, t_encode, t_hash, t_leaf; /* seconds inside the loop, per phase */
    double t_hash_extra;        /* the state hashes H = 1 adds (timed outside the loop) */
    uint64_t n_hash, n_hash_extra;
    uint64_t entries, log_bytes;
    uint8_t **blob;             /* step s's encoded log at [s-1] */
    size_t *blen;
    uint8_t (*log_hash)[32];
    uint8_t (*state_hash)[32];
    uint32_t *loss_bits;
    int *has_state;
    op_clock clk;
    /* the trainer's state */
    vt_model m;
    vt_steplog log;
    vt_merkle tree;
    vt_rctx ctx;
} recorder;

static void rec_free(recorder *r)
{
    for (uint64_t i = 0; r->blob && i < r->n; i++) free(r->blob[i]);
    free(r->blob), free(r->blen), free(r->log_hash), free(r->state_hash), free(r->loss_bits), free(r->has_state);
    op_clock_free(&r->clk);
    vt_model_free(&r->m);
    vt_steplog_free(&r->log);
    vt_merkle_free(&r->tree);
    memset(r, 0, sizeof *r);
}

static void rec_init(recorder *r, const vt_recipe *rcp, const vt_dataset *ds, uint64_t n)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    r->H = rcp->state_hash_every;
    r->K = rcp->checkpoint_every;
    r->blob = calloc(n, sizeof *r->blob);
    r->blen = calloc(n, sizeof *r->blen);
    r->log_hash = calloc(n, sizeof *r->log_hash);
    r->state_hash = calloc(n, sizeof *r->state_hash);
    r->loss_bits = calloc(n, sizeof *r->loss_bits);
    r->has_state = calloc(n, sizeof *r->has_state);
    if (!r->blob || !r->blen || !r->log_hash || !r->state_hash || !r->loss_bits || !r->has_state) {
        fprintf(stderr, "bench_step: out of memory\n");
        exit(2);
    }
    vt_recipe rcn = *rcp;
    rcn.steps = n;
    TRY(vt_model_init(&r->m, &rcn, ds->n, VT_ORDER_BLAS));
    op_clock_init(&r->clk, &r->m);
    vt_steplog_init(&r->log, 0);
    vt_merkle_init(&r->tree);
    vt_rctx_init(&r->ctx, VT_RMODE_RECORD, rcp->bound);
    /* step 0: the initial state with an empty log (not timed) */
    uint8_t leaf[32], h0[32], *b0 = NULL;
    size_t l0 = 0;
    vt_steplog_reset(&r->log, 0);
    TRY(vt_steplog_encode(&r->log, rcp->zstd_level, &b0, &l0, h0));
    free(b0);
    TRY(vt_model_state_hash(&r->m, leaf));
    TRY(vt_step_leaf(0, leaf, 1, h0, leaf));
    TRY(vt_merkle_append(&r->tree, leaf));
}

/* The trainer's per-step work minus SQLite and checkpoint I/O, for the next k steps: the
 * verifiable step (record mode), the zstd log container and its hash, the state hash when due
 * (every H steps, at checkpoint steps and at the last step), the leaf and the Merkle append.
 * Returns seconds per step of the block (without the extra H = 1 hashes, timed apart). */
static double rec_block(recorder *r, const vt_dataset *ds, int zstd_level, uint64_t k)
{
    uint8_t leaf[32], zero[32] = {0};
    double t_loop0 = clk(), extra = 0;
    uint64_t end = r->done + k > r->n ? r->n : r->done + k, k0 = r->done;
    for (uint64_t s = r->done + 1; s <= end; s++) {
        float loss;
        double t0 = clk();
        TRY(vt_rctx_begin_step(&r->ctx, s, &r->log));
        TRY(timed_step(&r->m, ds, &r->ctx, &r->clk, &loss));
        TRY(vt_rctx_end_step(&r->ctx));
        double t1 = clk();
        TRY(vt_steplog_encode_stored(&r->log, zstd_level, &r->blob[s - 1], &r->blen[s - 1], r->log_hash[s - 1]));
        double t2 = clk();
        int hs = s % r->H == 0 || s % r->K == 0 || s == r->n;
        if (hs) TRY(vt_model_state_hash(&r->m, r->state_hash[s - 1]));
        double t3 = clk();
        TRY(vt_step_leaf(s, hs ? r->state_hash[s - 1] : zero, hs, r->log_hash[s - 1], leaf));
        TRY(vt_merkle_append(&r->tree, leaf));
        double t4 = clk();
        r->t_step += t1 - t0, r->t_encode += t2 - t1, r->t_hash += t3 - t2, r->t_leaf += t4 - t3;
        r->n_hash += hs;
        r->has_state[s - 1] = hs;
        memcpy(&r->loss_bits[s - 1], &loss, 4);
        r->entries += vt_steplog_total_entries(&r->log);
        r->log_bytes += r->blen[s - 1];
        if (!hs) { /* what H = 1 adds: timed, and excluded from the loop time */
            uint8_t hx[32];
            double u0 = clk();
            TRY(vt_model_state_hash(&r->m, hx));
            double u1 = clk();
            r->t_hash_extra += u1 - u0;
            r->n_hash_extra++;
            extra += u1 - u0;
        }
    }
    r->done = end;
    return (clk() - t_loop0 - extra) / (double)(end - k0);
}

/* The auditor's loop over recorded steps, in memory (a replayer follows the recorder). */
typedef struct {
    vt_model m;
    vt_steplog log;
    vt_rctx ctx;
    vt_order order;
    op_clock clk;
} replayer;

static void rep_init(replayer *p, const vt_recipe *rcp, const vt_dataset *ds, uint64_t n, vt_order order)
{
    memset(p, 0, sizeof *p);
    vt_recipe rcn = *rcp;
    rcn.steps = n;
    TRY(vt_model_init(&p->m, &rcn, ds->n, order));
    op_clock_init(&p->clk, &p->m);
    vt_steplog_init(&p->log, 0);
    vt_rctx_init(&p->ctx, VT_RMODE_REPLAY, rcp->bound);
    p->order = order;
}

static void rep_free(replayer *p)
{
    op_clock_free(&p->clk);
    vt_model_free(&p->m);
    vt_steplog_free(&p->log);
}

/* Replays the recorded steps the replayer has not done yet: log decode and log-hash check,
 * the step in replay mode, the loss and (when committed) the state hash checked. Returns
 * seconds per step. */
static double rep_block(replayer *p, const vt_dataset *ds, const recorder *r)
{
    uint64_t k0 = p->m.step;
    double t0 = clk();
    for (uint64_t s = p->m.step + 1; s <= r->done; s++) {
        uint8_t lh[32], sh[32];
        float loss;
        TRY(vt_steplog_decode_stored(r->blob[s - 1], r->blen[s - 1], s, NULL, &p->log, lh));
        TRY(vt_rctx_begin_step(&p->ctx, s, &p->log));
        TRY(timed_step(&p->m, ds, &p->ctx, &p->clk, &loss));
        TRY(vt_rctx_end_step(&p->ctx));
        uint32_t lb;
        memcpy(&lb, &loss, 4);
        int bad = memcmp(lh, r->log_hash[s - 1], 32) != 0 || lb != r->loss_bits[s - 1];
        if (r->has_state[s - 1]) {
            TRY(vt_model_state_hash(&p->m, sh));
            bad |= memcmp(sh, r->state_hash[s - 1], 32) != 0;
        }
        if (bad) {
            fprintf(stderr, "bench_step: replay (%s order) of step %llu does not match the recording\n",
                    vt_order_name(p->order), (unsigned long long)s);
            exit(2);
        }
    }
    return (clk() - t0) / (double)(r->done - k0);
}

/* ------------------------------------------------------------ run store */

static char tmpdir[256];

static void make_key(char *path, size_t cap)
{
    snprintf(path, cap, "%s/key", tmpdir);
    if (access(path, F_OK) == 0) return;
    vt_keypair kp;
    TRY(vt_sign_init());
    TRY(vt_sign_keypair(&kp));
    TRY(vt_sign_write_secret_key(path, &kp, 1));
    vt_keypair_wipe(&kp);
}

/* Seconds per step of the trainer library (SQLite, checkpoints, commitment) over n steps. */
static double time_store(const vt_recipe *rcp, uint64_t n, const char *tag)
{
    char key[512], run[512];
    make_key(key, sizeof key);
    snprintf(run, sizeof run, "%s/run-%s", tmpdir, tag);
    vt_recipe rcn = *rcp;
    rcn.steps = n;
    vt_train_opts o;
    memset(&o, 0, sizeof o);
    o.run_dir = run;
    o.key_path = key;
    o.data_root = data_root;
    o.order = VT_ORDER_BLAS;
    o.quiet = 1;
    vt_train_result res;
    TRY(vt_train_run(&rcn, &o, &res));
    return res.seconds / (double)n;
}

/* ---------------------------------------------------- per-operation profile */

typedef struct {
    char label[96]; /* "layer 1 forward GEMM" */
    int tA, tB;
    size_t M, N, K;
    const float *A, *B;
} gemm_op;

/* The label of a MATMUL operation of the program in the profile: "layer L <what>", with L from
 * the operation's name ("fcL ...", arch/vt_graph.c) and <what> from its transposes (the
 * forward GEMM X W, the weight gradient X^T dZ, the input gradient dZ W^T); any other
 * operation's own name. */
static void gemm_label(const vt_opdesc *o, char *out, size_t cap)
{
    const int tA = (int)o->iarg[0], tB = (int)o->iarg[1];
    const char *what = !tA && !tB ? "forward GEMM" : tA && !tB ? "weight-grad GEMM" : !tA && tB ? "input-grad GEMM" : NULL;
    unsigned layer;
    int used = 0;
    if (what && o->name && sscanf(o->name, "fc%u %n", &layer, &used) == 1 && used > 0)
        snprintf(out, cap, "layer %u %s", layer, what);
    else
        snprintf(out, cap, "%s", o->name ? o->name : "?");
}

static double min_time(double *t, int n)
{
    double m = t[0];
    for (int i = 1; i < n; i++)
        if (t[i] < m) m = t[i];
    return m;
}

/* Times the GEMM operations of the model's last step (its buffers still hold the step's
 * operands) in isolation: the bare dgemm on FP64 copies, vt_gemm (conversion + norms + dgemm)
 * in the BLAS and pairwise orders, vt_round in record mode with the tight fallback (as the
 * step runs it) and with the outer (Cauchy-Schwarz) bound alone, and counts the elements that
 * the outer bound leaves unstable (those go through the tight O(K) bound). */
static void profile_ops(vt_model *m, double step_s)
{
    const vt_recipe *r = &m->rcp;
    const size_t Bt = r->batch;
    /* the MATMUL operations of the program, in program order; every tensor of the last step keeps
     * its own storage (ops/vt_program.h), so their operands are still there */
    gemm_op *ops = calloc((size_t)m->prog.n_ops + 1, sizeof *ops);
    if (!ops) {
        fprintf(stderr, "bench_step: out of memory\n");
        exit(2);
    }
    int no = 0;
    for (uint32_t j = 1; j <= m->prog.n_ops; j++) {
        const vt_opdesc *d = &m->prog.op[j];
        if (d->kind != VT_OPK_MATMUL) continue;
        gemm_op *g = &ops[no++];
        gemm_label(d, g->label, sizeof g->label);
        g->tA = (int)d->iarg[0], g->tB = (int)d->iarg[1];
        g->M = (size_t)d->iarg[2], g->N = (size_t)d->iarg[3], g->K = (size_t)d->iarg[4];
        g->A = vt_model_tensor(m, d->in[0], NULL);
        g->B = vt_model_tensor(m, d->in[1], NULL);
    }

    size_t maxmn = 0, maxk = 0, maxdim = 1;
    for (int i = 0; i < no; i++) {
        if (ops[i].M > maxdim) maxdim = ops[i].M;
        if (ops[i].N > maxdim) maxdim = ops[i].N;
        if (ops[i].M * ops[i].N > maxmn) maxmn = ops[i].M * ops[i].N;
        size_t a = ops[i].M * ops[i].K, b = ops[i].K * ops[i].N;
        if (a > maxk) maxk = a;
        if (b > maxk) maxk = b;
    }
    double *C = malloc(maxmn * sizeof(double)), *A64 = malloc(maxk * sizeof(double)),
           *B64 = malloc(maxk * sizeof(double)), *rn = malloc(maxdim * sizeof(double)),
           *cn = malloc(maxdim * sizeof(double));
    float *out = malloc(maxmn * sizeof(float));
    if (!C || !A64 || !B64 || !rn || !cn || !out) {
        fprintf(stderr, "bench_step: out of memory\n");
        exit(2);
    }
    vt_exec ex, exp2;
    vt_exec_init(&ex, VT_ORDER_BLAS, r->bound, r->seed);
    vt_exec_init(&exp2, VT_ORDER_PAIRWISE, r->bound, r->seed);
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx ctx;
    vt_rctx_init(&ctx, VT_RMODE_RECORD, r->bound);
    const int reps = quick ? 5 : 15;
    double sum_round = 0, sum_gemm = 0, sum_dgemm = 0;
    printf("\nPer-operation profile of the verifiable step, %u-%u-%u batch %zu (min of %d calls, microseconds; "
           "BLAS single-threaded):\n\n",
           r->widths[0], r->widths[1], r->widths[r->n_layers], Bt, reps);
    printf("| operation | M x N x K | bare dgemm | vt_gemm (blas) | vt_gemm (pairwise) | vt_round (as in the step) "
           "| vt_round, outer bound only | elements unstable under the outer bound |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < no; i++) {
        gemm_op *o = &ops[i];
        double t[32];
        vt_bounds bd;
        /* bare dgemm on FP64 copies of op(A), op(B) in their stored layout */
        size_t ar = o->tA ? o->K : o->M, ac = o->tA ? o->M : o->K, br = o->tB ? o->N : o->K,
               bc = o->tB ? o->K : o->N;
        for (size_t k = 0; k < ar * ac; k++) A64[k] = o->A[k];
        for (size_t k = 0; k < br * bc; k++) B64[k] = o->B[k];
        for (int q = 0; q < reps; q++) {
            double t0 = clk();
            cblas_dgemm(CblasRowMajor, o->tA ? CblasTrans : CblasNoTrans, o->tB ? CblasTrans : CblasNoTrans,
                        (int)o->M, (int)o->N, (int)o->K, 1.0, A64, (int)ac, B64, (int)bc, 0.0, C, (int)o->N);
            t[q] = clk() - t0;
        }
        double td = min_time(t, reps);
        for (int q = 0; q < reps; q++) {
            double t0 = clk();
            TRY(vt_gemm(&exp2, o->tA, o->tB, o->M, o->N, o->K, o->A, o->B, C, rn, cn, &bd));
            t[q] = clk() - t0;
        }
        double tp = min_time(t, reps);
        for (int q = 0; q < reps; q++) {
            double t0 = clk();
            TRY(vt_gemm(&ex, o->tA, o->tB, o->M, o->N, o->K, o->A, o->B, C, rn, cn, &bd));
            t[q] = clk() - t0;
        }
        double tg = min_time(t, reps);
        for (int q = 0; q < reps; q++) {
            TRY(vt_rctx_begin_step(&ctx, 1, &log));
            double t0 = clk();
            TRY(vt_round(&ctx, 1, C, &bd, o->M, o->N, out));
            t[q] = clk() - t0;
        }
        double tr = min_time(t, reps);
        vt_bounds outer = bd;
        outer.ta = outer.tb = NULL;
        for (int q = 0; q < reps; q++) {
            TRY(vt_rctx_begin_step(&ctx, 1, &log));
            double t0 = clk();
            TRY(vt_round(&ctx, 1, C, &outer, o->M, o->N, out));
            t[q] = clk() - t0;
        }
        double to = min_time(t, reps);
        size_t unstable = 0, zero = 0;
        for (size_t a = 0; a < o->M; a++)
            for (size_t b = 0; b < o->N; b++) {
                double x = C[a * o->N + b], B = bd.coef * bd.r[a] * bd.c[b];
                uint32_t lo, hi;
                vt_round_ends(x, B, VT_UNSTABLE_K, &lo, &hi);
                if (lo != hi) unstable++, zero += x == 0.0;
            }
        char shape[64];
        snprintf(shape, sizeof shape, "%zu x %zu x %zu", o->M, o->N, o->K);
        printf("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %zu of %zu (%.1f%%; %zu of them exactly 0) |\n",
               o->label, shape, td * 1e6, tg * 1e6, tp * 1e6, tr * 1e6, to * 1e6, unstable, o->M * o->N,
               100.0 * (double)unstable / (double)(o->M * o->N), zero);
        sum_round += tr, sum_gemm += tg, sum_dgemm += td;
    }
    printf("\nGEMMs: bare dgemm %.1f us, vt_gemm %.1f us, their vt_round %.1f us; the whole verifiable step %.1f us "
           "(the rest: bias, softmax, loss, sums, optimiser, their rounding, batch gather)\n",
           sum_dgemm * 1e6, sum_gemm * 1e6, sum_round * 1e6, step_s * 1e6);
    vt_steplog_free(&log);
    vt_exec_free(&ex);
    vt_exec_free(&exp2);
    free(C), free(A64), free(B64), free(rn), free(cn), free(out);
    free(ops);
}

/* The other operations of the step, timed the same way on the model's last-step buffers: the
 * kernel (FP64 result + bounds) and its vt_round separately, summed over layers/tensors. */
typedef struct {
    vt_rctx ctx;
    vt_steplog log;
    int reps;
} rtimer;

static double time_round(rtimer *t, const double *x, const vt_bounds *b, size_t rows, size_t cols, float *out)
{
    double best = 1e30;
    for (int q = 0; q < t->reps; q++) {
        TRY(vt_rctx_begin_step(&t->ctx, 1, &t->log));
        double t0 = clk();
        TRY(vt_round(&t->ctx, 1, x, b, rows, cols, out));
        double d = clk() - t0;
        if (d < best) best = d;
    }
    return best;
}

#define TIME_MIN(var, reps, stmt)                        \
    do {                                                 \
        var = 1e30;                                      \
        for (int q_ = 0; q_ < (reps); q_++) {            \
            double t0_ = clk();                          \
            stmt;                                        \
            double d_ = clk() - t0_;                     \
            if (d_ < var) var = d_;                      \
        }                                                \
    } while (0)

static void profile_rest(vt_model *m, const vt_dataset *ds)
{
    const vt_recipe *r = &m->rcp;
    if (r->optimizer != VT_OPT_SGD) return;
    const vt_program *pg = &m->prog;
    const size_t Bt = r->batch;
    /* scratch for the largest tensor of the program (the biggest parameter or activation) */
    size_t big = 1;
    for (uint32_t i = 0; i < pg->n_tensors; i++)
        if (pg->t[i].n > big) big = pg->t[i].n;
    double *x = malloc(big * sizeof(double)), *b = malloc(big * sizeof(double));
    float *out = malloc(big * sizeof(float)), *xb = malloc(pg->t[pg->input].n * sizeof(float));
    uint8_t *lab = malloc(Bt);
    if (!x || !b || !out || !xb || !lab) {
        fprintf(stderr, "bench_step: out of memory\n");
        exit(2);
    }
    rtimer rt;
    vt_rctx_init(&rt.ctx, VT_RMODE_RECORD, r->bound);
    vt_steplog_init(&rt.log, 0);
    rt.reps = quick ? 5 : 15;
    const int reps = rt.reps;
    vt_bounds bd;
    double k_gather = 0, k_bias = 0, r_bias = 0, k_soft = 0, r_soft = 0, k_loss = 0, r_loss = 0, k_dz = 0, r_dz = 0,
           k_col = 0, r_col = 0, k_sgd = 0, r_sgd = 0, k_relu = 0, t;
    size_t n_bias = 0, n_relu = 0, n_soft = 0, n_dz = 0, n_col = 0, n_sgd = 0;
    uint32_t vel_out = UINT32_MAX; /* the velocity `out` holds (rounded by the last SGD velocity) */
    /* every operation of the program but the GEMMs (profile_ops) and the schedule, on the last
     * step's tensors, in program order */
    for (uint32_t j = 1; j <= pg->n_ops; j++) {
        const vt_opdesc *o = &pg->op[j];
        const vt_tensor *x0 = o->n_in ? &pg->t[o->in[0]] : NULL;
        const float *in0 = o->n_in ? vt_model_tensor(m, o->in[0], NULL) : NULL;
        const float *in1 = o->n_in > 1 ? vt_model_tensor(m, o->in[1], NULL) : NULL;
        switch (o->kind) {
        case VT_OPK_LOAD_BATCH:
            TIME_MIN(t, reps, TRY(vt_data_batch(ds, m->batch_idx, Bt, xb, lab)));
            k_gather += t;
            break;
        case VT_OPK_BIAS_ADD: {
            size_t rows = x0->shape[0], cols = x0->shape[1];
            n_bias += rows * cols;
            TIME_MIN(t, reps, for (size_t i = 0; i < rows * cols; i++) x[i] = vti_bias1(in0[i], in1[i % cols]));
            k_bias += t;
            r_bias += time_round(&rt, x, NULL, rows, cols, out);
            break;
        }
        case VT_OPK_RELU: { /* exact, nothing to round */
            size_t n1 = pg->t[o->out[0]].n;
            const float *z = in0;
            n_relu += n1;
            TIME_MIN(t, reps, for (size_t i = 0; i < n1; i++) out[i] = z[i] > 0.0f ? z[i] : 0.0f);
            k_relu += t;
            break;
        }
        case VT_OPK_RELU_BWD: { /* exact */
            size_t n1 = pg->t[o->out[0]].n;
            const float *z = in0, *da = in1;
            TIME_MIN(t, reps, for (size_t i = 0; i < n1; i++) out[i] = z[i] > 0.0f ? da[i] : 0.0f);
            k_relu += t;
            break;
        }
        case VT_OPK_SOFTMAX: {
            size_t rows = x0->shape[0], cols = x0->shape[1];
            n_soft += rows * cols;
            TIME_MIN(t, reps, TRY(vt_softmax(&m->exec, rows, cols, in0, x, b, &bd)));
            k_soft += t;
            r_soft += time_round(&rt, x, &bd, rows, cols, out);
            break;
        }
        case VT_OPK_XENT_LOSS: {
            size_t rows = x0->shape[0], cols = x0->shape[1];
            const uint8_t *y = (const uint8_t *)in1;
            double lx, lb;
            TIME_MIN(t, reps, TRY(vt_xent_loss(&m->exec, rows, cols, in0, y, &lx, &lb, &bd)));
            k_loss += t;
            r_loss += time_round(&rt, &lx, &bd, 1, 1, out);
            break;
        }
        case VT_OPK_XENT_BWD: {
            size_t rows = x0->shape[0], cols = x0->shape[1];
            const uint8_t *y = (const uint8_t *)in1;
            n_dz += rows * cols;
            TIME_MIN(t, reps, for (size_t i = 0; i < rows * cols; i++) x[i] = vti_xent_bwd1(in0[i], i % cols == y[i / cols], (double)rows));
            k_dz += t;
            r_dz += time_round(&rt, x, NULL, rows, cols, out);
            break;
        }
        case VT_OPK_COLSUM: {
            size_t rows = x0->shape[0], cols = x0->shape[1];
            n_col += cols;
            TIME_MIN(t, reps, TRY(vt_colsum(&m->exec, rows, cols, in0, x, b, &bd)));
            k_col += t;
            r_col += time_round(&rt, x, &bd, 1, cols, out);
            break;
        }
        case VT_OPK_SGD_VELOCITY: { /* w, g, v -> v */
            size_t n = pg->t[o->out[0]].n;
            const float *v = vt_model_tensor(m, o->in[2], NULL);
            n_sgd += n;
            TIME_MIN(t, reps, for (size_t i = 0; i < n; i++) x[i] = vti_sgd_velocity1(in0[i], in1[i], v[i], o->farg[0], o->farg[1]));
            k_sgd += t;
            r_sgd += time_round(&rt, x, NULL, 1, n, out);
            vel_out = o->out[0];
            break;
        }
        case VT_OPK_SGD_APPLY: { /* w, v, lr -> w: with the velocity just rounded, lr 0.05 */
            size_t n = pg->t[o->out[0]].n;
            const float *v = o->in[1] == vel_out ? out : in1;
            n_sgd += n;
            TIME_MIN(t, reps, for (size_t i = 0; i < n; i++) x[i] = vti_sgd_apply1(in0[i], v[i], 0.05));
            k_sgd += t;
            r_sgd += time_round(&rt, x, NULL, 1, n, out);
            vel_out = UINT32_MAX;
            break;
        }
        default: /* MATMUL: profile_ops; SCHEDULE: two scalars */
            break;
        }
    }
    printf("\nThe other operations (same model, min of %d calls, microseconds):\n\n", reps);
    printf("| operation | kernel | its vt_round | elements rounded |\n|---|---:|---:|---:|\n");
    printf("| batch gather (vt_data_batch, u8 -> FP32) | %.1f | - | - |\n", k_gather * 1e6);
    printf("| bias add, all layers | %.1f | %.1f | %zu |\n", k_bias * 1e6, r_bias * 1e6, n_bias);
    printf("| ReLU forward and backward (exact, no rounding; %zu elements each) | %.1f | - | - |\n", n_relu,
           k_relu * 1e6);
    printf("| softmax | %.1f | %.1f | %zu |\n", k_soft * 1e6, r_soft * 1e6, n_soft);
    printf("| cross-entropy loss | %.1f | %.1f | 1 |\n", k_loss * 1e6, r_loss * 1e6);
    printf("| logits gradient | %.1f | %.1f | %zu |\n", k_dz * 1e6, r_dz * 1e6, n_dz);
    printf("| bias gradients (column sums), all layers | %.1f | %.1f | %zu |\n", k_col * 1e6, r_col * 1e6, n_col);
    printf("| SGD velocity + update, all tensors | %.1f | %.1f | %zu |\n", k_sgd * 1e6, r_sgd * 1e6, n_sgd);
    printf("\nsum of the other operations: %.1f us (kernels %.1f, rounding %.1f)\n",
           (k_gather + k_bias + r_bias + k_relu + k_soft + r_soft + k_loss + r_loss + k_dz + r_dz + k_col + r_col +
            k_sgd + r_sgd) * 1e6,
           (k_gather + k_bias + k_relu + k_soft + k_loss + k_dz + k_col + k_sgd) * 1e6,
           (r_bias + r_soft + r_loss + r_dz + r_col + r_sgd) * 1e6);
    vt_steplog_free(&rt.log);
    free(x), free(b), free(out), free(xb), free(lab);
}

/* ------------------------------------------------------------------ hashing */

/* Best of several ~0.15 s blocks (contention from other processes only slows a block down). */
static double hash_gbps(vt_model *m)
{
    uint8_t h[32];
    size_t bytes = m->n_state * sizeof(float) + 24;
    TRY(vt_model_state_hash(m, h)); /* warm */
    double best = 0;
    for (int b = 0; b < (quick ? 3 : 7); b++) {
        int reps = 0;
        double t0 = clk(), t = 0;
        do {
            TRY(vt_model_state_hash(m, h));
            reps++;
            t = clk() - t0;
        } while (t < 0.15);
        double g = (double)bytes * reps / t / 1e9;
        if (g > best) best = g;
    }
    return best;
}

/* ------------------------------------------------- machine parallel ceiling */

static void *spin(void *arg)
{
    double x = 1.0;
    for (long i = 0; i < 60000000L; i++) x = x * 1.0000001 + 1e-9; /* one dependent chain: pure core time */
    *(double *)arg = x;
    return NULL;
}

/* Throughput of 2 threads over 1 thread on the same fixed work (2.0 on two idle cores): the ceiling
 * of any 2-way parallel speed-up on this machine at this moment (median of 3). */
static double parallel_ceiling(void)
{
    double r[3], sink[2];
    for (int q = 0; q < 3; q++) {
        double t0 = vt_now();
        spin(&sink[0]);
        double t1 = vt_now() - t0;
        pthread_t th;
        t0 = vt_now();
        int ok = pthread_create(&th, NULL, spin, &sink[1]) == 0;
        spin(&sink[0]);
        if (ok) pthread_join(th, NULL);
        double t2 = vt_now() - t0;
        r[q] = ok ? 2.0 * t1 / t2 : 1.0;
    }
    return median(r, 3);
}

/* ------------------------------------------------------- auditor --jobs */

static int sh(const char *cmd)
{
    int st = system(cmd);
    return st;
}

/* Seconds of `auditor verify RUN --jobs j` (median of reps), or -1 when the binaries are missing. */
static int cli_audit(uint64_t steps, uint32_t ckpt_every, double *t1, double *t2, double *t_fixed, double *train_s)
{
    char exe[PATH_MAX], dir[PATH_MAX], cmd[4 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    if (!slash) return -1;
    *slash = 0;
    char trainer[PATH_MAX + 16], auditor[PATH_MAX + 16];
    snprintf(trainer, sizeof trainer, "%s/trainer", dir);
    snprintf(auditor, sizeof auditor, "%s/auditor", dir);
    if (access(trainer, X_OK) || access(auditor, X_OK)) return -1;
    char key[512];
    make_key(key, sizeof key);
    const char *dd = data_root ? data_root : "";
    snprintf(cmd, sizeof cmd, "'%s' train --run '%s/cli-run' --key '%s' --quiet --set steps=%llu %s%s%s >/dev/null",
             trainer, tmpdir, key, (unsigned long long)steps, data_root ? "--data-dir '" : "", dd,
             data_root ? "'" : "");
    double t0 = vt_now();
    if (sh(cmd) != 0) {
        fprintf(stderr, "bench_step: %s failed\n", cmd);
        return -1;
    }
    *train_s = vt_now() - t0;
    const int reps = quick ? 1 : 3;
    for (int j = 1; j <= 2; j++) {
        double t[8];
        for (int q = 0; q < reps; q++) {
            snprintf(cmd, sizeof cmd, "'%s' verify '%s/cli-run' --quiet --jobs %d %s%s%s >/dev/null", auditor, tmpdir,
                     j, data_root ? "--data-dir '" : "", dd, data_root ? "'" : "");
            t0 = vt_now();
            if (sh(cmd) != 0) {
                fprintf(stderr, "bench_step: %s did not verify\n", cmd);
                return -1;
            }
            t[q] = vt_now() - t0;
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp_double);
        *(j == 1 ? t1 : t2) = t[reps / 2];
    }
    /* the serial part of every audit (process start, dataset load and hash, signature, manifest, step
     * records, Merkle root): an audit of one step from the last checkpoint before the end */
    uint64_t from = (steps - 1) / ckpt_every * ckpt_every;
    snprintf(cmd, sizeof cmd, "'%s' verify '%s/cli-run' --quiet --from %llu --to %llu %s%s%s >/dev/null", auditor,
             tmpdir, (unsigned long long)from, (unsigned long long)from + 1, data_root ? "--data-dir '" : "", dd,
             data_root ? "'" : "");
    t0 = vt_now();
    if (sh(cmd) != 0) {
        fprintf(stderr, "bench_step: %s did not verify\n", cmd);
        return -1;
    }
    *t_fixed = vt_now() - t0;
    return 0;
}

/* --------------------------------------------------------------------- main */

typedef struct {
    const char *name;
    uint32_t hidden;
    uint64_t rec_steps;   /* steps recorded and replayed */
    uint64_t store_steps; /* steps through the run store */
    /* results */
    double plain64, plain32, verif_H, verif_1, store, replay_blas, replay_pair;
    double log_bytes, dense_bytes, entries, rounded, exact_frac;
    /* the same recipe with rounding=log (the default recipe is rounding=exact) */
    double lg_H, lg_1, lg_replay, lg_log_bytes, lg_entries, lg_judged_frac;
} config;

static const char *pass(int ok) { return ok ? "PASS" : "MISS"; }

/* The 1-minute load average (other processes compete for the cores; -1 when unknown). */
static double loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

int main(int argc, char **argv)
{
    int strict = 0, no_cli = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--strict") == 0)
            strict = 1;
        else if (strcmp(argv[i], "--no-cli") == 0)
            no_cli = 1;
        else if (strcmp(argv[i], "--wall") == 0)
            g_cpu_clock = 0;
        else if (strcmp(argv[i], "--data-dir") == 0 && i + 1 < argc)
            data_root = argv[++i];
        else {
            fprintf(stderr, "usage: bench_step [--quick] [--strict] [--no-cli] [--wall] [--data-dir DIR]\n");
            return 64;
        }
    }
    setenv("OPENBLAS_NUM_THREADS", "1", 1); /* for the child processes */
    blas_threads(1);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt_bench_step.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("bench_step: mkdtemp");
        return 2;
    }

    vt_dataset ds;
    double tl0 = vt_now();
    TRY(vt_data_load("mnist-train", data_root, &ds));
    double t_load = vt_now() - tl0;
    vt_recipe base;
    vt_recipe_default(&base);
    const uint32_t H = base.state_hash_every;

    config cf[2] = {
        {.name = "784-128-10", .hidden = 128, .rec_steps = quick ? 60 : 300, .store_steps = quick ? 60 : 300},
        {.name = "784-1024-10", .hidden = 1024, .rec_steps = quick ? 20 : 60, .store_steps = quick ? 20 : 60},
    };
    printf("# bench_step: verifiable training step vs plain FP64 / FP32 (MNIST, batch %u, SGD momentum, BLAS "
           "single-threaded; default recipe rounding=%s, and the same recipe with rounding=log)\n",
           base.batch, base.bound.rounding == VT_ROUNDING_EXACT ? "exact" : "log");
    const char *env_core = getenv("OPENBLAS_CORETYPE");
    char *(*blas_cfg)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_config");
    printf("load average at start: %.2f on %ld CPUs; BLAS: %s; OPENBLAS_CORETYPE=%s; per-step clock: %s\n", loadavg(),
           sysconf(_SC_NPROCESSORS_ONLN), blas_cfg ? blas_cfg() : "(not OpenBLAS)",
           env_core ? env_core : "(unset)", g_cpu_clock ? "CPU time of the thread" : "wall clock");
    vt_model keep; /* the wide model, for the hashing figure */
    memset(&keep, 0, sizeof keep);
    enum { MAXR = 16 };
    const int R = quick ? 3 : 10; /* rounds of interleaved blocks */
    for (int c = 0; c < 2; c++) {
        config *k = &cf[c];
        vt_recipe rcp = base;
        rcp.widths[1] = k->hidden;
        rcp.steps = k->rec_steps;
        const uint64_t kb = k->rec_steps / (uint64_t)R;
        vt_recipe rcl = rcp; /* the same recipe in log rounding */
        rcl.bound.rounding = VT_ROUNDING_LOG;
        printf("\n## %s: %d rounds of interleaved blocks: plain FP64 (%llu steps), plain FP32 (%llu), verifiable "
               "(%llu), replay blas (%llu), replay split (%llu), verifiable rounding=log (%llu), its replay split "
               "(%llu)...\n",
               k->name, R, (unsigned long long)(2 * kb), (unsigned long long)(2 * kb), (unsigned long long)kb,
               (unsigned long long)kb, (unsigned long long)kb, (unsigned long long)kb, (unsigned long long)kb);
        fflush(stdout);
        vt_plain p64, p32;
        recorder rec, recl;
        replayer rb, rp, rpl;
        TRY(vt_plain_init(&p64, &rcp, ds.n, 1));
        TRY(vt_plain_init(&p32, &rcp, ds.n, 0));
        plain_block(&p64, &ds, 5); /* warm-up */
        plain_block(&p32, &ds, 5);
        rec_init(&rec, &rcp, &ds, kb * (uint64_t)R);
        rep_init(&rb, &rcp, &ds, rec.n, VT_ORDER_BLAS);
        rep_init(&rp, &rcp, &ds, rec.n, VT_ORDER_SPLIT);
        rec_init(&recl, &rcl, &ds, kb * (uint64_t)R);
        rep_init(&rpl, &rcl, &ds, recl.n, VT_ORDER_SPLIT);
        double a64[MAXR], a32[MAXR], av[MAXR], a1[MAXR], arb[MAXR], arp[MAXR], alv[MAXR], al1[MAXR], alp[MAXR];
        for (int q = 0; q < R; q++) {
            a64[q] = plain_block(&p64, &ds, 2 * kb);
            a32[q] = plain_block(&p32, &ds, 2 * kb);
            double hx0 = rec.t_hash_extra;
            av[q] = rec_block(&rec, &ds, rcp.zstd_level, kb);
            a1[q] = av[q] + (rec.t_hash_extra - hx0) / (double)kb;
            arb[q] = rep_block(&rb, &ds, &rec);
            arp[q] = rep_block(&rp, &ds, &rec);
            hx0 = recl.t_hash_extra;
            alv[q] = rec_block(&recl, &ds, rcl.zstd_level, kb);
            al1[q] = alv[q] + (recl.t_hash_extra - hx0) / (double)kb;
            alp[q] = rep_block(&rpl, &ds, &recl);
        }
        k->plain64 = median(a64, R), k->plain32 = median(a32, R);
        k->verif_H = median(av, R), k->verif_1 = median(a1, R);
        k->replay_blas = median(arb, R), k->replay_pair = median(arp, R);
        double n = (double)rec.n;
        k->log_bytes = (double)rec.log_bytes / n;
        k->rounded = (double)rec.ctx.stats.rounded / n;
        k->dense_bytes = k->rounded * 0.2;
        k->entries = (double)rec.entries / n;
        k->exact_frac = (double)rec.ctx.stats.exact / (double)rec.ctx.stats.rounded;
        k->lg_H = median(alv, R), k->lg_1 = median(al1, R), k->lg_replay = median(alp, R);
        k->lg_log_bytes = (double)recl.log_bytes / n;
        k->lg_entries = (double)recl.entries / n;
        k->lg_judged_frac = (double)rpl.ctx.stats.exact / (double)rpl.ctx.stats.rounded;
        printf("plain FP64 %.3f ms/step, plain FP32 %.3f ms/step (medians of %d blocks)\n", k->plain64 * 1e3,
               k->plain32 * 1e3, R);
        printf("verifiable %.3f ms/step at H=%u (median); totals over %llu steps per step: model step %.3f, log "
               "encode %.3f, state hash %.3f (%llu hashes; %.3f ms each), leaf+tree %.4f; H=1 %.3f ms/step\n",
               k->verif_H * 1e3, H, (unsigned long long)rec.n, rec.t_step / n * 1e3, rec.t_encode / n * 1e3,
               rec.t_hash / n * 1e3, (unsigned long long)rec.n_hash,
               rec.t_hash_extra / (double)(rec.n_hash_extra ? rec.n_hash_extra : 1) * 1e3, rec.t_leaf / n * 1e3,
               k->verif_1 * 1e3);
        printf("replay %.3f ms/step (blas order), %.3f ms/step (split order)\n", k->replay_blas * 1e3,
               k->replay_pair * 1e3);
        printf("exact rounding: %llu of %llu rounded elements computed exactly (%.2e), %.2f log entries per step\n",
               (unsigned long long)rec.ctx.stats.exact, (unsigned long long)rec.ctx.stats.rounded, k->exact_frac,
               k->entries);
        printf("rounding=log: verifiable %.3f ms/step at H=%u, %.3f at H=1; %.2f log entries and %.1f log bytes per "
               "step; replay (split order) %.3f ms/step, %.2e of the elements judged exactly\n",
               k->lg_H * 1e3, H, k->lg_1 * 1e3, k->lg_entries, k->lg_log_bytes, k->lg_replay * 1e3, k->lg_judged_frac);
        printf("\nTime per operation inside the real step (vt_model_run hook; mean over the %llu recorded steps, "
               "microseconds):\n\n| op | operation | record (trainer, blas) | replay, blas | replay, split | "
               "rounding=log: record | rounding=log: replay, split |\n"
               "|---:|---|---:|---:|---:|---:|---:|\n",
               (unsigned long long)rec.n);
        double sum_r = 0, sum_b = 0, sum_p = 0, sum_lr = 0, sum_lp = 0;
        for (uint32_t o = 1; o <= rec.m.n_ops; o++) {
            double tr = rec.clk.acc[o] / n, tb = rb.clk.acc[o] / n, tp = rp.clk.acc[o] / n;
            double tlr = recl.clk.acc[o] / n, tlp = rpl.clk.acc[o] / n;
            sum_r += tr, sum_b += tb, sum_p += tp, sum_lr += tlr, sum_lp += tlp;
            printf("| %u | %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", o, vt_model_op_name(&rec.m, o), tr * 1e6,
                   tb * 1e6, tp * 1e6, tlr * 1e6, tlp * 1e6);
        }
        printf("| | **step total** | %.1f | %.1f | %.1f | %.1f | %.1f |\n", sum_r * 1e6, sum_b * 1e6, sum_p * 1e6,
               sum_lr * 1e6, sum_lp * 1e6);
        profile_ops(&rec.m, rec.t_step / n);
        profile_rest(&rec.m, &ds);
        vt_plain_free(&p64);
        vt_plain_free(&p32);
        rep_free(&rb);
        rep_free(&rp);
        rep_free(&rpl);
        rec_free(&recl);
        printf("\nwith the run store (vt_train_run, %llu steps)...\n", (unsigned long long)k->store_steps);
        fflush(stdout);
        k->store = time_store(&rcp, k->store_steps, k->name);
        printf("with run store %.3f ms/step\n", k->store * 1e3);
        if (c == 1) { /* keep the wide model for the hashing figure */
            keep = rec.m;
            memset(&rec.m, 0, sizeof rec.m);
        }
        rec_free(&rec);
    }
    double gbps = hash_gbps(&keep);
    size_t hash_bytes = keep.n_state * sizeof(float);
    vt_model_free(&keep);
    double ceiling = parallel_ceiling();

    double t_j1 = -1, t_j2 = -1, t_fix = 0, t_train = 0;
    uint64_t cli_steps = quick ? 200 : 400;
    if (!no_cli) {
        printf("\nauditor verify --jobs 1 / --jobs 2 on a %llu-step run of the default recipe (real binaries)...\n",
               (unsigned long long)cli_steps);
        fflush(stdout);
        if (cli_audit(cli_steps, base.checkpoint_every, &t_j1, &t_j2, &t_fix, &t_train) != 0)
            t_j1 = t_j2 = -1;
        else
            printf("trainer train (%llu steps, with its run store): %.2f s; auditor verify --jobs 1: %.2f s, "
                   "--jobs 2: %.2f s\n",
                   (unsigned long long)cli_steps, t_train, t_j1, t_j2);
    }

    /* ------------------------------------------------------------ table */
    printf("\n## Results (one run, one machine, OPENBLAS_NUM_THREADS=1 for every per-step figure; load average "
           "now %.2f)\n\n",
           loadavg());
    printf("| figure | %s | %s | target |\n|---|---:|---:|---|\n", cf[0].name, cf[1].name);
    printf("| plain FP32 step (ms) | %.3f | %.3f | |\n", cf[0].plain32 * 1e3, cf[1].plain32 * 1e3);
    printf("| plain FP64 step (ms) | %.3f | %.3f | |\n", cf[0].plain64 * 1e3, cf[1].plain64 * 1e3);
    printf("| verifiable step, rounding=exact (default), H=%u (ms) | %.3f | %.3f | |\n", H, cf[0].verif_H * 1e3,
           cf[1].verif_H * 1e3);
    printf("| verifiable step, rounding=exact, H=1 (ms) | %.3f | %.3f | |\n", cf[0].verif_1 * 1e3, cf[1].verif_1 * 1e3);
    printf("| verifiable step, rounding=log, H=%u (ms) | %.3f | %.3f | |\n", H, cf[0].lg_H * 1e3, cf[1].lg_H * 1e3);
    printf("| verifiable step, rounding=log, H=1 (ms) | %.3f | %.3f | |\n", cf[0].lg_1 * 1e3, cf[1].lg_1 * 1e3);
    printf("| verifiable step with run store, rounding=exact, H=%u (ms) | %.3f | %.3f | |\n", H, cf[0].store * 1e3,
           cf[1].store * 1e3);
    printf("| **verification overhead**, rounding=exact (default), H=%u (verifiable / plain FP64) | %.2f | %.2f | "
           "<= 1.10 |\n",
           H, cf[0].verif_H / cf[0].plain64, cf[1].verif_H / cf[1].plain64);
    printf("| **verification overhead**, rounding=exact, H=1 | %.2f | %.2f | <= 1.10 |\n", cf[0].verif_1 / cf[0].plain64,
           cf[1].verif_1 / cf[1].plain64);
    printf("| **verification overhead**, rounding=log, H=%u | %.2f | %.2f | <= 1.10 |\n", H, cf[0].lg_H / cf[0].plain64,
           cf[1].lg_H / cf[1].plain64);
    printf("| **verification overhead**, rounding=log, H=1 | %.2f | %.2f | <= 1.10 |\n", cf[0].lg_1 / cf[0].plain64,
           cf[1].lg_1 / cf[1].plain64);
    printf("| verification overhead with run store, rounding=exact, H=%u | %.2f | %.2f | (reported) |\n", H,
           cf[0].store / cf[0].plain64, cf[1].store / cf[1].plain64);
    printf("| **precision cost** (plain FP64 / plain FP32) | %.2f | %.2f | (reported) |\n",
           cf[0].plain64 / cf[0].plain32, cf[1].plain64 / cf[1].plain32);
    printf("| rounded elements per step | %.0f | %.0f | |\n", cf[0].rounded, cf[1].rounded);
    printf("| rounding=exact: elements computed exactly (fraction) | %.2e | %.2e | |\n", cf[0].exact_frac,
           cf[1].exact_frac);
    printf("| rounding=exact: log entries per step | %.2f | %.2f | 0 |\n", cf[0].entries, cf[1].entries);
    printf("| rounding=exact: stored log bytes per step | %.1f | %.1f | 0 |\n", cf[0].log_bytes, cf[1].log_bytes);
    printf("| rounding=log: log entries per step | %.2f | %.2f | |\n", cf[0].lg_entries, cf[1].lg_entries);
    printf("| rounding=log: stored log bytes per step (zstd container) | %.1f | %.1f | |\n", cf[0].lg_log_bytes,
           cf[1].lg_log_bytes);
    printf("| dense 1.6-bit baseline bytes per step | %.0f | %.0f | |\n", cf[0].dense_bytes, cf[1].dense_bytes);
    printf("| **log size**, rounding=log (log / dense baseline) | %.3f%% | %.3f%% | <= 2%% |\n",
           100 * cf[0].lg_log_bytes / cf[0].dense_bytes, 100 * cf[1].lg_log_bytes / cf[1].dense_bytes);
    printf("| replay step, rounding=exact, blas order (ms) | %.3f | %.3f | |\n", cf[0].replay_blas * 1e3,
           cf[1].replay_blas * 1e3);
    printf("| replay step, rounding=exact, split order (auditor default) (ms) | %.3f | %.3f | |\n",
           cf[0].replay_pair * 1e3, cf[1].replay_pair * 1e3);
    printf("| replay step, rounding=log, split order (ms) | %.3f | %.3f | |\n", cf[0].lg_replay * 1e3,
           cf[1].lg_replay * 1e3);
    printf("| rounding=log replay: elements judged exactly (fraction) | %.2e | %.2e | |\n", cf[0].lg_judged_frac,
           cf[1].lg_judged_frac);
    printf("| **audit speed**, rounding=exact, blas order (replay steps/s / training steps/s) | %.2f | %.2f | >= 0.95 |\n",
           cf[0].verif_H / cf[0].replay_blas, cf[1].verif_H / cf[1].replay_blas);
    printf("| **audit speed**, rounding=exact, split order (auditor default) | %.2f | %.2f | >= 0.95 |\n",
           cf[0].verif_H / cf[0].replay_pair, cf[1].verif_H / cf[1].replay_pair);
    printf("| **audit speed**, rounding=log, split order | %.2f | %.2f | >= 0.95 |\n", cf[0].lg_H / cf[0].lg_replay,
           cf[1].lg_H / cf[1].lg_replay);
    printf("| **state hashing** (vt_model_state_hash, %.1f MB state, one core) | %.2f GB/s | | >= 1.5 GB/s |\n",
           (double)hash_bytes / 1e6, gbps);
    if (t_j1 > 0)
        printf("| **parallel audit** (auditor verify, %llu steps, split: --jobs 1 %.2f s / --jobs 2 %.2f s) | "
               "%.2fx | | >= 1.7x |\n",
               (unsigned long long)cli_steps, t_j1, t_j2, t_j1 / t_j2);
    if (t_j1 > 0)
        printf("| serial part of an audit (auditor verify of 1 step: start, dataset, checks) | %.2f s; 2-job "
               "bound by Amdahl %.2fx | | |\n",
               t_fix, t_j1 / (t_fix + (t_j1 - t_fix) / 2));
    printf("| loading mnist-train (gunzip + pinned and dataset SHA-256; serial in every audit) | %.2f s | | |\n",
           t_load);
    printf("| machine ceiling: 2 threads / 1 thread on a pure-compute loop | %.2fx | | (2.00 on 2 idle cores) |\n",
           ceiling);

    /* ------------------------------------------------------------ verdicts */
    printf("\n## Targets\n\n");
    int missed = 0;
#define VERDICT(ok, ...)                         \
    do {                                         \
        int ok_ = (ok);                          \
        missed += !ok_;                          \
        printf("%s  ", pass(ok_));               \
        printf(__VA_ARGS__);                     \
        printf("\n");                            \
    } while (0)
    for (int c = 0; c < 2; c++) {
        config *k = &cf[c];
        VERDICT(k->verif_H / k->plain64 <= 1.10,
                "verification overhead %s, rounding=exact (default) H=%u: %.3f (target <= 1.10)", k->name, H,
                k->verif_H / k->plain64);
        VERDICT(k->verif_1 / k->plain64 <= 1.10, "verification overhead %s, rounding=exact H=1: %.3f (target <= 1.10)",
                k->name, k->verif_1 / k->plain64);
        VERDICT(k->lg_H / k->plain64 <= 1.10, "verification overhead %s, rounding=log H=%u: %.3f (target <= 1.10)",
                k->name, H, k->lg_H / k->plain64);
        VERDICT(k->lg_1 / k->plain64 <= 1.10, "verification overhead %s, rounding=log H=1: %.3f (target <= 1.10)",
                k->name, k->lg_1 / k->plain64);
        VERDICT(k->entries == 0 && k->log_bytes == 0,
                "log %s, rounding=exact: %.2f entries and %.1f stored bytes per step (target 0)", k->name, k->entries,
                k->log_bytes);
        VERDICT(k->lg_log_bytes / k->dense_bytes <= 0.02,
                "log size %s, rounding=log: %.3f%% of the dense 1.6-bit code (target <= 2%%)", k->name,
                100 * k->lg_log_bytes / k->dense_bytes);
        VERDICT(k->verif_H / k->replay_blas >= 0.95, "audit speed %s, rounding=exact, blas order: %.3f (target >= 0.95)",
                k->name, k->verif_H / k->replay_blas);
        VERDICT(k->verif_H / k->replay_pair >= 0.95,
                "audit speed %s, rounding=exact, split order (the auditor's default): %.3f (target >= 0.95)", k->name,
                k->verif_H / k->replay_pair);
        VERDICT(k->lg_H / k->lg_replay >= 0.95, "audit speed %s, rounding=log, split order: %.3f (target >= 0.95)",
                k->name, k->lg_H / k->lg_replay);
    }
    VERDICT(gbps >= 1.5, "state hashing: %.2f GB/s on one core (target >= 1.5)", gbps);
    if (t_j1 > 0)
        VERDICT(t_j1 / t_j2 >= 1.7,
                "parallel audit: --jobs 2 is %.2fx --jobs 1 (target >= 1.7x; this machine's 2-thread ceiling "
                "right now: %.2fx)",
                t_j1 / t_j2, ceiling);
    else if (!no_cli)
        printf("SKIP  parallel audit: trainer/auditor binaries not found next to bench_step\n");
    printf("\nprecision cost (plain FP64 / plain FP32): %.2f (%s), %.2f (%s)\n", cf[0].plain64 / cf[0].plain32,
           cf[0].name, cf[1].plain64 / cf[1].plain32, cf[1].name);

    vt_data_free(&ds);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "bench_step: could not remove %s\n", tmpdir);
    return strict && missed ? 1 : 0;
}
