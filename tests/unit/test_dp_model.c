/* test_dp_model - data-parallel steps of the interpreter (vt_model_set_shard, docs/distributed.md)
 * against the one-process steps: under `mpirun -np N` (tests/cmake/dp_model.cmake, --ranks N),
 * every rank builds the program for its share of the global batch, runs the steps with the batch
 * split and every batch reduction rounded across the ranks, and after every step its state hash
 * and loss must equal those of a one-process model of the whole batch that the rank runs beside
 * it - for the MLP (SGD with momentum, Adam), the residual CNN (batch normalisation, augmentation; step
 * programs 1 and 2) and the GPT (dropout, text windows). Also: a batch that does not split, rounding=log and a model
 * with a backend are refused; evaluation stays local (no collective: rank 0 alone evaluates).
 * The sharded optimiser state (vt_model_init_sharded, --shard-state) on N > 1 ranks: after every
 * step the parameters and buffers are the one-process model's on every rank, the whole state's hash
 * (streamed to rank 0) and, gathered, the whole state are its bytes, and the planned optimiser bytes
 * of each rank are its 1/N share.
 * One process (no mpirun): the one-rank shard is the plain step. Exit 77 when --ranks N > 1 and
 * the build has no MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/vt_dist.h"
#include "model/vt_model.h"
#include "arch/vt_recipe.h"
#include "vt_test.h"

#define BATCH 12
#define STEPS 3

typedef struct {
    const char *what, *file, *data;
    const char *sets[8];
} cfg;

static vt_comm *g_comm;
static int g_rank, g_size;

static int recipe_of(const cfg *k, uint32_t batch, vt_recipe *rc)
{
    vt_recipe_default(rc);
    if (k->file && vt_recipe_load_file(rc, k->file) != VT_OK) return 0;
    for (int i = 0; k->sets[i]; i++)
        if (vt_recipe_set(rc, k->sets[i]) != VT_OK) return 0;
    char b[32];
    snprintf(b, sizeof b, "batch=%u", batch);
    return vt_recipe_set(rc, b) == VT_OK && vt_recipe_set(rc, "steps=3") == VT_OK;
}

static vt_err step(vt_model *m, const vt_dataset *ds, uint64_t s, float *loss)
{
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_rctx c;
    vt_rctx_init(&c, VT_RMODE_RECORD, m->rcp.bound);
    vt_err e = vt_rctx_begin_step(&c, s, &log);
    if (!e) e = vt_model_step(m, ds, &c, loss);
    if (!e) e = vt_rctx_end_step(&c);
    vt_steplog_free(&log);
    return e;
}

/* a state streamed into / out of memory, in pieces */
typedef struct {
    float *v;
    size_t at, n;
} sink_buf;
static vt_err sink_to(void *ctx, const float *v, size_t n)
{
    sink_buf *b = ctx;
    if (n > b->n - b->at) return VT_ERR_INTERNAL;
    memcpy(b->v + b->at, v, n * sizeof *v);
    b->at += n;
    return VT_OK;
}
static vt_err source_from(void *ctx, float *v, size_t n)
{
    sink_buf *b = ctx;
    if (n > b->n - b->at) return VT_ERR_INTERNAL;
    memcpy(v, b->v + b->at, n * sizeof *v);
    b->at += n;
    return VT_OK;
}

/* the sharded optimiser state against one process's steps of the whole batch */
static void check_sharded(const cfg *k, const vt_recipe *whole, const vt_recipe *part, const vt_dataset *ds)
{
    vt_model ref, sh;
    memset(&ref, 0, sizeof ref), memset(&sh, 0, sizeof sh);
    CHECK_OK(vt_model_init(&ref, whole, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init_sharded(&sh, part, ds->n, (vt_order)(g_rank % 3), g_comm));
    CHECK_OK(vt_model_set_shard(&sh, g_comm, BATCH));
    vt_model_mem all, mine;
    vt_model_need(&ref.prog, part->batch, ds->n, &all);
    CHECK_OK(vt_model_need_sharded(&sh.prog, part->batch, ds->n, g_rank, g_size, &mine));
    /* floor(P r / N) .. floor(P (r + 1) / N) of the P parameter values: one or two optimiser values each */
    CHECK(all.opt > 0 && mine.opt * g_size <= all.opt + 8.0 * g_size && mine.opt * g_size >= all.opt - 8.0 * g_size &&
              mine.total < all.total,
          "%s rank %d: planned optimiser bytes %.0f of %.0f, model %.0f of %.0f", k->what, g_rank, mine.opt, all.opt,
          mine.total, all.total);
    vt_model_shard_release(&sh);
    for (uint64_t s = 1; s <= STEPS; s++) {
        float l1 = 0, l2 = 0;
        CHECK_OK(step(&ref, ds, s, &l1));
        vt_err e = step(&sh, ds, s, &l2);
        CHECK(e == VT_OK, "%s sharded, rank %d step %llu: %s", k->what, g_rank, (unsigned long long)s, vt_errmsg());
        if (e) break;
        uint8_t h1[32], h2[32], f1[32], f2[32];
        memset(f2, 0, sizeof f2);
        CHECK_OK(vt_model_replica_hash(&ref, h1));
        CHECK_OK(vt_model_replica_hash(&sh, h2));
        CHECK_OK(vt_model_state_hash(&ref, f1));
        CHECK_OK(vt_model_shard_state_hash(&sh, f2));
        CHECK(memcmp(h1, h2, 32) == 0 && memcmp(&l1, &l2, 4) == 0 && (g_rank != 0 || memcmp(f1, f2, 32) == 0),
              "%s sharded, rank %d step %llu: the parameters, the loss or the state hash differ from one process's",
              k->what, g_rank, (unsigned long long)s);
    }
    /* the whole state streamed out to rank 0 in pieces: the one-process state, bit for bit */
    sink_buf out = {calloc(ref.n_state + 1, sizeof(float)), 0, ref.n_state};
    uint8_t f3[32];
    CHECK_OK(vt_model_shard_stream_out(&sh, g_rank == 0 ? sink_to : NULL, &out, f3));
    if (g_rank == 0)
        CHECK(out.at == ref.n_state && !memcmp(out.v, ref.state, ref.n_state * sizeof(float)), "%s sharded: the streamed state",
              k->what);
    else
        CHECK(vt_model_state_hash(&sh, (uint8_t[32]){0}) == VT_ERR_INTERNAL, "%s: rank %d hashed a state it lacks",
              k->what, g_rank);
    /* streamed in from rank 0 to a fresh sharded model: every rank's share, the parameters and buffers */
    vt_model in;
    memset(&in, 0, sizeof in);
    CHECK_OK(vt_model_init_sharded(&in, part, ds->n, VT_ORDER_FORWARD, g_comm));
    vt_model_shard_release(&in);
    sink_buf src = {out.v, 0, ref.n_state};
    CHECK_OK(vt_model_shard_stream_in(&in, STEPS, g_rank == 0 ? source_from : NULL, &src));
    uint8_t h3[32], h4[32], f4[32];
    CHECK_OK(vt_model_replica_hash(&ref, h3));
    CHECK_OK(vt_model_replica_hash(&in, h4));
    CHECK_OK(vt_model_shard_state_hash(&in, f4));
    CHECK(in.step == STEPS && !memcmp(h3, h4, 32) && (g_rank != 0 || !memcmp(f3, f4, 32)),
          "%s: the state streamed in is not the one streamed out (rank %d)", k->what, g_rank);
    if (g_rank == 0) { /* the hash of a state read from a source: the state hash */
        uint8_t f5[32];
        sink_buf again = {out.v, 0, ref.n_state};
        CHECK_OK(vt_model_state_hash_read(&ref, STEPS, source_from, &again, f5));
        CHECK(!memcmp(f5, f3, 32), "%s: vt_model_state_hash_read", k->what);
    }
    vt_model_free(&in);
    free(out.v);
    CHECK_OK(vt_dist_barrier(g_comm));
    vt_model_free(&ref);
    vt_model_free(&sh);
}

static void check_cfg(const cfg *k)
{
    vt_recipe whole, part;
    CHECK(recipe_of(k, BATCH, &whole) && recipe_of(k, BATCH / (uint32_t)g_size, &part), "%s: recipes: %s", k->what,
          vt_errmsg());
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    CHECK_OK(vt_data_load(k->data, NULL, &ds));
    vt_model ref, dp;
    memset(&ref, 0, sizeof ref), memset(&dp, 0, sizeof dp);
    CHECK_OK(vt_model_init(&ref, &whole, ds.n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&dp, &part, ds.n, (vt_order)(g_rank % 3))); /* any order: the same bits */
    CHECK_OK(vt_model_set_shard(&dp, g_comm, BATCH));
    CHECK(dp.n_state == ref.n_state && memcmp(dp.state, ref.state, ref.n_state * sizeof(float)) == 0,
          "%s: the state of step 0 does not depend on the batch", k->what);
    for (uint64_t s = 1; s <= STEPS; s++) {
        float l1 = 0, l2 = 0;
        CHECK_OK(step(&ref, &ds, s, &l1));
        vt_err e = step(&dp, &ds, s, &l2);
        CHECK(e == VT_OK, "%s rank %d of %d step %llu: %s", k->what, g_rank, g_size, (unsigned long long)s, vt_errmsg());
        if (e) break;
        uint8_t h1[32], h2[32];
        CHECK_OK(vt_model_state_hash(&ref, h1));
        CHECK_OK(vt_model_state_hash(&dp, h2));
        CHECK(memcmp(h1, h2, 32) == 0 && memcmp(&l1, &l2, 4) == 0,
              "%s rank %d of %d step %llu: the state (or the loss %a, one process %a) differs from one process's",
              k->what, g_rank, g_size, (unsigned long long)s, (double)l2, (double)l1);
    }
    if (dp.shard)
        CHECK(dp.shard->n_dist > 0, "%s: sums were rounded across the ranks", k->what);
    if (g_rank == 0)
        printf("%s on %d ranks: %llu sums across the ranks, %llu settled exactly, %llu bytes sent by rank 0\n", k->what,
               g_size, (unsigned long long)(dp.shard ? dp.shard->n_dist : 0),
               (unsigned long long)(dp.shard ? dp.shard->n_dist_exact : 0),
               (unsigned long long)(dp.shard ? dp.shard->bytes_sent : 0));
    /* evaluation stays local: rank 0 alone, no collective (the others would wait in one) */
    if (g_rank == 0 && !ds.text) {
        double a1 = 0, a2 = 0;
        CHECK_OK(vt_model_accuracy(&ref, &ds, 48, &a1));
        CHECK_OK(vt_model_accuracy(&dp, &ds, 48, &a2));
        CHECK(a1 == a2, "%s: the evaluation of the same state (%g, %g)", k->what, a1, a2);
    }
    CHECK_OK(vt_dist_barrier(g_comm));
    vt_model_free(&ref);
    if (g_size > 1) check_sharded(k, &whole, &part, &ds);
    vt_model_free(&dp);
    vt_data_free(&ds);
}

static void check_refusals(void)
{
    vt_recipe rc;
    vt_recipe_default(&rc);
    CHECK_OK(vt_recipe_set(&rc, "dataset=digits"));
    CHECK_OK(vt_recipe_set(&rc, "layers=[64,16,10]"));
    CHECK_OK(vt_recipe_set(&rc, "batch=5"));
    vt_model m;
    CHECK_OK(vt_model_init(&m, &rc, 1797, VT_ORDER_FORWARD));
    CHECK(vt_model_set_shard(&m, g_comm, 5 * (uint32_t)g_size + 1) == VT_ERR_ARG && strstr(vt_errmsg(), "equal shares"),
          "a batch that does not split is refused: %s", vt_errmsg());
    if (g_size > 1) {
        m.rcp.bound.rounding = VT_ROUNDING_LOG;
        CHECK(vt_model_set_shard(&m, g_comm, 5 * (uint32_t)g_size) == VT_ERR_UNSUPPORTED &&
                  strstr(vt_errmsg(), "rounding=log"),
              "rounding=log on several ranks is refused: %s", vt_errmsg());
        m.rcp.bound.rounding = VT_ROUNDING_EXACT;
        vt_backend be;
        memset(&be, 0, sizeof be);
        be.gemm_round = (void *)1; /* never called here */
        vt_model_set_backend(&m, &be);
        /* accepted: the operations that read the split batch run on the CPU (docs/distributed.md
         * "GPU ranks"; the GPU run itself: tests/e2e/nccl_train.sh) */
        CHECK(vt_model_set_shard(&m, g_comm, 5 * (uint32_t)g_size) == VT_OK,
              "a backend with a split batch is accepted: %s", vt_errmsg());
        vt_model_set_backend(&m, NULL);
    }
    CHECK_OK(vt_model_set_shard(&m, g_comm, 5 * (uint32_t)g_size));
    vt_model_free(&m);
}

int main(int argc, char **argv)
{
    int want = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) want = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: test_dp_model [--ranks N]\n");
            return 2;
        }
    }
    if (want > 1 && !vt_dist_built_with_mpi()) {
        printf("SKIP: this build has no MPI\n");
        return 77;
    }
    CHECK_OK(vt_dist_init(&g_comm));
    if (!g_comm) return vt_test_finish("test_dp_model");
    g_rank = vt_dist_rank(g_comm), g_size = vt_dist_size(g_comm);
    CHECK(g_size == want, "%d ranks, expected %d", g_size, want);
    CHECK(BATCH % g_size == 0, "the test's batch splits into %d", g_size);
    static const cfg cfgs[] = {
        {"mlp", NULL, "digits", {"dataset=digits", "layers=[64,16,10]", NULL}},
        {"mlp adam", NULL, "digits", {"dataset=digits", "layers=[64,16,10]", "optimizer=adam", NULL}},
        {"resnet", "recipes/resnet-cifar10.json", "cifar10-train:96",
         {"subset=96", "resnet_width=4", "resnet_stages=2", NULL}},
        {"resnet program 2", "recipes/resnet-cifar10.json", "cifar10-train:96", /* conv2d_weight_grad's batch sum */
         {"subset=96", "resnet_width=4", "resnet_stages=2", "program_version=2", NULL}},
        {"gpt", "recipes/gpt-shakespeare.json", "shakespeare-train",
         {"gpt_layers=1", "gpt_heads=2", "gpt_width=16", "gpt_context=8", "dropout=0.1", NULL}},
    };
    check_refusals();
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) check_cfg(&cfgs[i]);
    int failed = vt_test_finish("test_dp_model");
    vt_dist_finalize(&g_comm);
    return failed;
}
