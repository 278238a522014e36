/* bench_dp.c - what a data-parallel step costs (docs/benchmarks.md "Data-parallel steps", issue 24
 * item 10): run under `mpirun -np N bench_dp`, every rank runs the same model with the global batch
 * split over the ranks (vt_model_set_shard: every sum over the batch rounded across the ranks by
 * vt_round_dist), for the MLP (the default recipe), the residual CNN (recipes/resnet-cifar10.json)
 * and the GPT (recipes/gpt-shakespeare.json), and rank 0 prints per model and step:
 *
 *   bytes     what each rank sent for the step (the shard's counter; the largest over the ranks)
 *             against a plain FP32 gradient all-reduce of the same model, 4 P 2 (N-1) / N bytes
 *             for P trained parameters (a ring all-reduce), and the ratio (target <= 2.1);
 *   exact     the elements rounded across the ranks and the fraction that needed the exact
 *             integer phase;
 *   time      the step's wall time (the slowest rank; the ranks start each step together after a
 *             barrier) and thread CPU time, min and median over the steps, and the wall time
 *             inside the collectives (waiting for the other ranks included: vt_dist_clock); on N > 1
 *             ranks, the step's vt_round_dist calls alone (as many, of the mean size, those with a
 *             refinement round with one of the same kind), each between barriers.
 *
 * One thread a rank (vt_par_set_threads(1)), BLAS single-threaded: one core per rank. --out FILE appends one line per model (key=value) for
 * --project FILE, which reads the 1-rank and 2-rank lines of each model and prints the projection
 * to 8, 64 and 512 ranks (the model is printed with it, docs/benchmarks.md).
 *
 * Usage: mpirun -np N bench_dp [--models mlp,resnet,gpt] [--steps S] [--warmup W]
 *                              [--batch-mlp B] [--batch-resnet B] [--batch-gpt B] [--out FILE]
 *        bench_dp --project FILE [--alpha-us A] [--gbps G]
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "bench_dp"
#include "bench/bench_util.h"
#include "common/vt_par.h"
#include "data/vt_data.h"
#include "dist/vt_dist.h"
#include "model/vt_model.h"
#include "arch/vt_recipe.h"
#include "rounding/vt_round_dist.h"

typedef struct {
    const char *name, *file; /* NULL file: the default recipe (the MLP) */
    uint32_t batch;
} model_cfg;

static vt_comm *g_comm;
static int g_rank, g_size;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static vt_err one_step(vt_model *m, const vt_dataset *ds, uint64_t s)
{
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx c;
    vt_rctx_init(&c, VT_RMODE_RECORD, m->rcp.bound);
    float loss = 0;
    vt_err e = vt_rctx_begin_step(&c, s, &log);
    if (!e) e = vt_model_step(m, ds, &c, &loss);
    if (!e) e = vt_rctx_end_step(&c);
    vt_steplog_free(&log);
    return e;
}

/* the probe's refinement: every element's bound is 0 */
static double probe_refine(void *arg, size_t i, double *p)
{
    (void)arg, (void)i, (void)p;
    return 0.0;
}

/* the largest value over the ranks (through the FP64 allgather) */
static double max_over_ranks(double v)
{
    double all[1024];
    if (g_size > 1024) return v;
    TRY(vt_dist_allgather_f64(g_comm, &v, 1, all));
    double m = all[0];
    for (int r = 1; r < g_size; r++) m = all[r] > m ? all[r] : m;
    return m;
}

static size_t trained_params(const vt_model *m)
{
    size_t p = 0;
    for (uint32_t t = 0; t < m->prog.n_state; t++)
        if (m->prog.t[t].cls == VT_TC_PARAM) p += m->prog.t[t].n;
    return p;
}

static void run_model(const model_cfg *k, int steps, int warmup, FILE *out)
{
    vt_recipe rcp;
    vt_recipe_default(&rcp);
    if (k->file) TRY(vt_recipe_load_file(&rcp, k->file));
    uint32_t B = k->batch ? k->batch : rcp.batch;
    if (B % (uint32_t)g_size) {
        if (g_rank == 0) printf("%s: batch %u does not split over %d ranks: skipped\n", k->name, B, g_size);
        return;
    }
    char set[64];
    snprintf(set, sizeof set, "batch=%u", B / (uint32_t)g_size);
    TRY(vt_recipe_set(&rcp, set));
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    TRY(vt_data_load(rcp.dataset, NULL, &ds));
    vt_model m;
    memset(&m, 0, sizeof m);
    TRY(vt_model_init(&m, &rcp, ds.n, VT_ORDER_BLAS));
    TRY(vt_model_set_shard(&m, g_comm, B));
    size_t P = trained_params(&m);
    double *wall = calloc((size_t)steps, sizeof *wall), *cpu = calloc((size_t)steps, sizeof *cpu);
    double *comm = calloc((size_t)steps, sizeof *comm), *rdt = calloc((size_t)steps, sizeof *rdt);
    double *ccpu = calloc((size_t)steps, sizeof *ccpu);
    if (!wall || !cpu || !comm || !rdt || !ccpu) exit(2);
    uint64_t bytes = 0, nd = 0, nx = 0, coll = 0, xch = 0, calls = 0;
    for (int s = 1; s <= warmup + steps; s++) {
        TRY(vt_dist_barrier(g_comm));
        vt_dist_clock_t c0, c1;
        vt_dist_clock(g_comm, &c0);
        uint64_t q0, q1;
        double r0, r1;
        vt_round_dist_clock(&q0, &r0);
        const vt_shard z = {0}, *sh = m.shard ? m.shard : &z; /* one rank: no shard, the plain step */
        uint64_t b0 = sh->bytes_sent, d0 = sh->n_dist, x0 = sh->n_dist_exact;
        double w0 = vt_now(), t0 = thread_cpu();
        TRY(one_step(&m, &ds, (uint64_t)s));
        double w = vt_now() - w0, t = thread_cpu() - t0;
        vt_dist_clock(g_comm, &c1);
        vt_round_dist_clock(&q1, &r1);
        if (s <= warmup) continue;
        int i = s - warmup - 1;
        wall[i] = max_over_ranks(w);
        cpu[i] = max_over_ranks(t);
        ccpu[i] = max_over_ranks(t - (c1.cpu_seconds - c0.cpu_seconds)); /* CPU outside the collectives */
        comm[i] = max_over_ranks(c1.seconds - c0.seconds);
        rdt[i] = max_over_ranks((r1 - r0) - (c1.seconds - c0.seconds)); /* vt_round_dist's own work */
        calls = q1 - q0;
        /* per step: the same every step (the same sums), the largest over the ranks */
        bytes = (uint64_t)max_over_ranks((double)(sh->bytes_sent - b0));
        nd = sh->n_dist - d0;
        nx += sh->n_dist_exact - x0;
        coll = c1.collectives - c0.collectives;
        xch = c1.exchanges - c0.exchanges;
    }
    /* the collectives alone, with the load filtered out: vt_round_dist on the same number of calls of
     * the mean size (exact partials, zero bounds: phase 1 only), each call timed between barriers,
     * the minimum of 30 x the calls a step (noise only lengthens a call); the calls with a refinement
     * round timed alike with elements refined: a round sent to the owners (an exchange beyond the one
     * a call has, and an allgather) with 2048 refined, a gathered round (one more collective) with one
     * (the collectives beyond three a call and those; phase 2's, rare, are not counted) */
    double probe = 0;
    uint64_t n_own = 0, n_gat = 0;
    if (g_size > 1 && calls) {
        size_t per = (size_t)(nd / calls) + 1;
        n_own = xch > calls ? xch - calls : 0;
        if (n_own > calls) n_own = calls;
        n_gat = coll > 3 * calls + 2 * n_own ? coll - 3 * calls - 2 * n_own : 0;
        if (n_gat > calls - n_own) n_gat = calls - n_own;
        size_t n_ref = per < 2048 ? per : 2048;
        double *pp = calloc(per, sizeof *pp), *pb = calloc(per, sizeof *pb), *pg = calloc(per, sizeof *pg),
               *po_b = calloc(per, sizeof *po_b);
        float *po = calloc(per, sizeof *po);
        if (!pp || !pb || !pg || !po_b || !po) exit(2);
        for (size_t j = 0; j < per; j++) pp[j] = (double)(j % 97) * 0.25;
        pg[0] = 1e300; /* undecided by this bound, decided by its refinement (0) */
        for (size_t j = 0; j < n_ref; j++) po_b[j] = 1e300;
        double best = 1e9, best_g = 1e9, best_o = 1e9;
        for (int it = 0; it < 30; it++) {
            TRY(vt_dist_barrier(g_comm));
            double t0 = vt_now();
            TRY(vt_round_dist(g_comm, per, pp, pb, NULL, NULL, po, NULL, NULL));
            best = fmin(best, max_over_ranks(vt_now() - t0));
            if (n_gat) {
                TRY(vt_dist_barrier(g_comm));
                t0 = vt_now();
                TRY(vt_round_dist_refined(g_comm, per, pp, pg, probe_refine, 0, NULL, NULL, po, NULL, NULL));
                best_g = fmin(best_g, max_over_ranks(vt_now() - t0));
            }
            if (n_own) {
                TRY(vt_dist_barrier(g_comm));
                t0 = vt_now();
                TRY(vt_round_dist_refined(g_comm, per, pp, po_b, probe_refine, 0, NULL, NULL, po, NULL, NULL));
                best_o = fmin(best_o, max_over_ranks(vt_now() - t0));
            }
        }
        probe = best * (double)(calls - n_own - n_gat) + (n_gat ? best_g * (double)n_gat : 0.0) +
                (n_own ? best_o * (double)n_own : 0.0);
        free(pp), free(pb), free(pg), free(po_b), free(po);
    }
    double ring = 4.0 * (double)P * 2.0 * (double)(g_size - 1) / g_size;
    double wmin = wall[0], cmin = cpu[0], mmin = comm[0], cpmin = wall[0] - comm[0];
    for (int i = 1; i < steps; i++) {
        wmin = fmin(wmin, wall[i]), cmin = fmin(cmin, cpu[i]), mmin = fmin(mmin, comm[i]);
        cpmin = fmin(cpmin, wall[i] - comm[i]);
    }
    double rmin = rdt[0], ocmin = ccpu[0];
    for (int i = 1; i < steps; i++) rmin = fmin(rmin, rdt[i]), ocmin = fmin(ocmin, ccpu[i]);
    double wmed = median(wall, steps), cmed = median(cpu, steps), mmed = median(comm, steps);
    if (g_rank == 0) {
        printf("%-6s N=%d B=%u (%u a rank)  P=%zu parameters\n", k->name, g_size, B, B / (uint32_t)g_size, P);
        printf("  bytes a rank sends a step: %llu; an FP32 ring all-reduce of P: %.0f; ratio %s%.3f\n",
               (unsigned long long)bytes, ring, g_size > 1 ? "" : "(one rank: none) ", g_size > 1 ? bytes / ring : 0.0);
        printf("  sums across the ranks a step: %llu elements (%.2f P) in %llu calls, %llu collectives (%llu exchanges); "
               "exact integer phase: %llu of %llu over %d steps (%.2e)\n",
               (unsigned long long)nd, (double)nd / (double)P, (unsigned long long)calls, (unsigned long long)coll, (unsigned long long)xch,
               (unsigned long long)nx, (unsigned long long)nd * (unsigned long long)steps, steps,
               nd ? (double)nx / ((double)nd * steps) : 0.0);
        printf("  step wall min %.4f s median %.4f s; thread CPU min %.4f median %.4f; in collectives min %.4f "
               "median %.4f; wall outside them min %.4f; thread CPU outside them min %.4f; vt_round_dist's own work "
               "(outside its collectives) min %.4f\n",
               wmin, wmed, cmin, cmed, mmin, mmed, cpmin, ocmin, rmin);
        if (g_size > 1)
            printf("  the step's vt_round_dist calls alone, unloaded (probe: %llu calls of %llu elements, %llu with a "
                   "refinement round to the owners, %llu gathered, the fastest of 30): %.4f s; thread CPU outside the "
                   "collectives + probe: %.4f s\n",
                   (unsigned long long)calls, (unsigned long long)(nd / calls) + 1, (unsigned long long)n_own,
                   (unsigned long long)n_gat, probe, ocmin + probe);
        fflush(stdout);
        if (out) {
            fprintf(out,
                    "model=%s N=%d B=%u P=%zu bytes=%llu ring=%.0f nd=%llu nx=%llu steps=%d coll=%llu xch=%llu "
                    "wall_min=%.6f wall_med=%.6f cpu_min=%.6f comm_min=%.6f comm_med=%.6f compute_min=%.6f "
                    "rdist_min=%.6f calls=%llu ocpu_min=%.6f probe=%.6f\n",
                    k->name, g_size, B, P, (unsigned long long)bytes, ring, (unsigned long long)nd,
                    (unsigned long long)nx, steps, (unsigned long long)coll, (unsigned long long)xch, wmin, wmed, cmin,
                    mmin, mmed, cpmin, rmin, (unsigned long long)calls, ocmin, probe);
            fflush(out);
        }
    }
    free(wall), free(cpu), free(comm), free(rdt), free(ccpu);
    vt_model_free(&m);
    vt_data_free(&ds);
}

/* ---------------------------------------------------------------- the projection */

typedef struct {
    char model[16];
    int N;
    unsigned B;
    double P, bytes, nd, coll, xch, wall, compute, ocpu, probe;
} rec;

static int read_recs(const char *path, rec *r, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_dp: cannot read %s\n", path);
        exit(2);
    }
    char line[1024];
    int n = 0;
    while (n < cap && fgets(line, sizeof line, f)) {
        rec x;
        memset(&x, 0, sizeof x);
        char *tok = strtok(line, " \n");
        int ok = 0;
        for (; tok; tok = strtok(NULL, " \n")) {
            char *eq = strchr(tok, '=');
            if (!eq) continue;
            *eq = 0;
            const char *k = tok, *v = eq + 1;
            if (!strcmp(k, "model")) snprintf(x.model, sizeof x.model, "%s", v), ok = 1;
            else if (!strcmp(k, "N")) x.N = atoi(v);
            else if (!strcmp(k, "B")) x.B = (unsigned)atoi(v);
            else if (!strcmp(k, "P")) x.P = atof(v);
            else if (!strcmp(k, "bytes")) x.bytes = atof(v);
            else if (!strcmp(k, "nd")) x.nd = atof(v);
            else if (!strcmp(k, "coll")) x.coll = atof(v);
            else if (!strcmp(k, "xch")) x.xch = atof(v);
            else if (!strcmp(k, "wall_min")) x.wall = atof(v);
            else if (!strcmp(k, "compute_min")) x.compute = atof(v);
            else if (!strcmp(k, "ocpu_min")) x.ocpu = atof(v);
            else if (!strcmp(k, "probe")) x.probe = atof(v);
        }
        /* compute: the thread CPU outside the collectives (the wall time on a quiet machine; the wall
         * outside them grows with the load), where recorded */
        if (x.ocpu > 0) x.compute = x.ocpu;
        if (ok) r[n++] = x;
    }
    fclose(f);
    return n;
}

/* The record of model and N with the least compute (repeated runs: the least disturbed). */
static const rec *find(const rec *r, int n, const char *model, int N)
{
    const rec *got = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(r[i].model, model) && r[i].N == N && (!got || r[i].compute < got->compute)) got = &r[i];
    return got;
}

static void project(const char *path, double alpha_us, double gbps)
{
    static rec r[512];
    int n = read_recs(path, r, 512);
    double alpha = alpha_us * 1e-6, beta = gbps * 1e9 / 8; /* bytes per second */
    printf("Projection. Time outside the collectives c(N) = a / N + s (the thread CPU time outside them: on a\n"
           "quiet machine the wall time), from the measured 1- and 2-rank steps\n"
           "(c1 = a + s, c2 = a / 2 + s: a the work split with the batch, s the replicated work - the optimiser,\n"
           "the partials' bounds, the rounding of every element). Bytes a rank sends: the 2-rank bytes per element\n"
           "rounded across the ranks x 2 (N-1)/N (16 (N-1)/N an element, phase 2 as measured). Collectives a\n"
           "step as on 2 ranks: each exchange (alltoallv) N - 1 messages, every other collective log2 N steps;\n"
           "a link of %.0f Gb/s and %.1f us a message: comm(N) = alpha (xch (N-1) + (coll - xch) log2 N) +\n"
           "bytes / beta, no overlap with compute. Strong scaling: the global batch of the runs, N <= B;\n"
           "weak scaling: each rank keeps the 2-rank run's share (c = c2), the global batch grows with N;\n"
           "speed-up = examples a second against the 1-rank run.\n\n",
           gbps, alpha_us);
    printf("| model | N | bytes a rank | / FP32 ring all-reduce | comm (s): latency + bandwidth | strong: step (s), speed-up | weak: step (s), speed-up |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    const char *models[] = {"mlp", "resnet", "gpt"};
    for (int mi = 0; mi < 3; mi++) {
        const rec *a1 = find(r, n, models[mi], 1), *a2 = find(r, n, models[mi], 2);
        if (!a1 || !a2) continue;
        double a = 2 * (a1->compute - a2->compute), s = 2 * a2->compute - a1->compute;
        if (s < 0) s = 0, a = a1->compute;
        if (a < 0) a = 0, s = a2->compute; /* no gain from the split: c(N) = c2 */
        double per_elem = a2->bytes * 2.0 / (a2->nd > 0 ? a2->nd : 1); /* bytes an element at N = 2, / (1/2) */
        const int Ns[] = {2, 8, 64, 512};
        for (int j = 0; j < 4; j++) {
            int N = Ns[j];
            double bytes = per_elem * (double)(N - 1) / N * a2->nd;
            double lg = ceil(log2((double)N));
            double lat = alpha * (a2->xch * (N - 1) + (a2->coll - a2->xch) * lg);
            double bw = bytes / beta, ring = 4.0 * a2->P * 2.0 * (N - 1) / N;
            char strong[64];
            if ((unsigned)N <= a1->B) {
                double t = a / N + s + lat + bw;
                snprintf(strong, sizeof strong, "%.4f, %.2f", t, a1->compute / t);
            } else snprintf(strong, sizeof strong, "- (B = %u)", a1->B);
            double tw = a2->compute + lat + bw;
            double sw = (double)N * (a2->B / 2.0) / tw / (a1->B / a1->compute);
            printf("| %s | %d | %.0f | %.3f | %.4f + %.4f | %s | %.4f, %.1f |\n", models[mi], N, bytes, bytes / ring, lat,
                   bw, strong, tw, sw);
        }
        printf("| %s | 1 (measured) | 0 | | | %.4f, 1.00 | |\n", models[mi], a1->compute);
        printf("| %s | 2 (measured: compute + the calls alone) | %.0f | %.3f | %.4f | %.4f, %.2f | |\n", models[mi],
               a2->bytes, a2->bytes / (4.0 * a2->P), a2->probe, a2->compute + a2->probe,
               a1->compute / (a2->compute + a2->probe));
    }
}

int main(int argc, char **argv)
{
    int steps = 4, warmup = 1;
    const char *models = "mlp,resnet,gpt", *outp = NULL, *proj = NULL;
    uint32_t bm = 0, br = 0, bg = 0;
    double alpha_us = 5.0, gbps = 100.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--models") && v) models = v, i++;
        else if (!strcmp(a, "--steps") && v) steps = atoi(v), i++;
        else if (!strcmp(a, "--warmup") && v) warmup = atoi(v), i++;
        else if (!strcmp(a, "--batch-mlp") && v) bm = (uint32_t)atoi(v), i++;
        else if (!strcmp(a, "--batch-resnet") && v) br = (uint32_t)atoi(v), i++;
        else if (!strcmp(a, "--batch-gpt") && v) bg = (uint32_t)atoi(v), i++;
        else if (!strcmp(a, "--out") && v) outp = v, i++;
        else if (!strcmp(a, "--project") && v) proj = v, i++;
        else if (!strcmp(a, "--alpha-us") && v) alpha_us = atof(v), i++;
        else if (!strcmp(a, "--gbps") && v) gbps = atof(v), i++;
        else {
            fprintf(stderr, "usage: mpirun -np N bench_dp [--models mlp,resnet,gpt] [--steps S] [--warmup W] "
                            "[--batch-mlp B] [--batch-resnet B] [--batch-gpt B] [--out FILE]\n"
                            "       bench_dp --project FILE [--alpha-us A] [--gbps G]\n");
            return 2;
        }
    }
    if (proj) {
        project(proj, alpha_us, gbps);
        return 0;
    }
    if (steps < 1) steps = 1;
    vt_par_set_threads(1); /* one thread a rank: the 1-rank run is the one-core step */
    blas_threads(1);
    TRY(vt_dist_init(&g_comm));
    g_rank = vt_dist_rank(g_comm), g_size = vt_dist_size(g_comm);
    FILE *out = NULL;
    if (outp && g_rank == 0 && !(out = fopen(outp, "a"))) {
        fprintf(stderr, "bench_dp: cannot write %s\n", outp);
        return 2;
    }
    if (g_rank == 0)
        printf("bench_dp: %d rank%s%s, %d steps after %d warm-up, BLAS single-threaded\n", g_size, g_size > 1 ? "s" : "",
               vt_dist_is_mpi(g_comm) ? " (MPI)" : "", steps, warmup);
    if (g_rank == 0) printf("one thread a rank (vt_par_threads %d)\n", vt_par_threads());
    const model_cfg cfgs[] = {
        {"mlp", NULL, bm},
        {"resnet", "recipes/resnet-cifar10.json", br},
        {"gpt", "recipes/gpt-shakespeare.json", bg},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        if (strstr(models, cfgs[i].name)) run_model(&cfgs[i], steps, warmup, out);
    if (out) fclose(out);
    TRY(vt_dist_finalize(&g_comm));
    return 0;
}
