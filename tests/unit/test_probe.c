/* test_probe - the known-answer probe of the operation kinds (model/vt_probe.h), which the ranks of a
 * data-parallel run compare at start-up (run/vt_ranks.h, docs/distributed.md): every kind of the
 * list runs in it, and the MLP's GEMMs in every tensor-core arithmetic model (gemm_arith), which
 * differ from FP64's; its hashes are the same in every evaluation order and thread count; a tamper
 * hook that flips one bit of one kind's outputs (what tests/tools/vt_cheats.c's skew-kind does) changes
 * that kind's hash, the first operation whose output hash differs is of that kind (what the ranks
 * name), and where no other operation of the probe reads those outputs (SUB) no other kind's hash
 * changes. vt_ranks_agree (run/vt_ranks.h) on one rank: its record made and compared with itself.
 * The time one probe takes is printed, not asserted. */
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_cli.h"
#include "../../common/vt_par.h"
#include "../../model/vt_probe.h"
#include "../../run/vt_ranks.h"
#include "vt_test.h"

static uint16_t g_skew;

static vt_err skew(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    (void)ctx, (void)step;
    const vt_opdesc *o = &m->prog.op[op];
    if (o->kind == g_skew) *(uint8_t *)vt_model_tensor(m, o->out[0], NULL) ^= 1u;
    return VT_OK;
}

/* the same hashes, per kind and per operation */
static int same(const vt_probe *a, const vt_probe *b)
{
    return memcmp(a->kind, b->kind, sizeof a->kind) == 0 && memcmp(a->ops, b->ops, sizeof a->ops) == 0 &&
           a->n_seq == b->n_seq && memcmp(a->seq, b->seq, a->n_seq * sizeof *a->seq) == 0;
}

int main(void)
{
    vt_probe *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    CHECK(a && b, "memory");
    if (!a || !b) return vt_test_finish("test_probe");
    double t0 = vt_now();
    CHECK_OK(vt_probe_run(VT_ORDER_BLAS, NULL, NULL, a));
    printf("one probe: %.3f s (information)\n", vt_now() - t0);
    for (uint16_t k = 1; k < VT_OPK_COUNT; k++) {
        static const uint8_t zero[VT_HASH_LEN];
        CHECK(a->ops[k] > 0 && memcmp(a->kind[k], zero, VT_HASH_LEN) != 0, "kind %s: %u operations probed",
              vt_opkind_get(k)->name, a->ops[k]);
    }
    /* the MLP in each tensor-core arithmetic model: its GEMMs compute otherwise than in FP64 */
    for (size_t v = 1; vt_gemm_arith_names[v]; v++) {
        int differ = 0, seen = 0;
        for (size_t i = 0; i < a->n_seq; i++) {
            const vt_probe_op *q = &a->seq[i];
            if (q->kind != VT_OPK_MATMUL || strcmp(vt_probe_program_name(q->prog), vt_gemm_arith_names[v]) != 0)
                continue;
            seen++;
            for (size_t j = 0; j < a->n_seq; j++) /* the same operation of the FP64 MLP (program 0) */
                if (a->seq[j].prog == 0 && a->seq[j].op == q->op)
                    differ += memcmp(a->seq[j].h, q->h, VT_HASH_LEN) != 0;
        }
        CHECK(seen > 0 && differ > 0, "gemm_arith %s: %d GEMMs probed, %d differ from FP64's", vt_gemm_arith_names[v],
              seen, differ);
    }
    /* the same hashes in every order, and on 1 and 3 threads */
    for (int order = 0; order < VT_ORDER_COUNT; order++) {
        vt_probe_free(b);
        CHECK_OK(vt_probe_run((vt_order)order, NULL, NULL, b));
        CHECK(same(a, b), "order %s: other hashes", vt_order_name((vt_order)order));
    }
    for (int threads = 1; threads <= 3; threads += 2) {
        vt_par_set_threads(threads);
        vt_probe_free(b);
        CHECK_OK(vt_probe_run(VT_ORDER_BLAS, NULL, NULL, b));
        CHECK(same(a, b), "%d threads: other hashes", threads);
    }
    /* one kind's outputs one bit off: that kind's hash differs, the same operations ran */
    static const uint16_t SKEW[] = {VT_OPK_GELU, VT_OPK_SUB, VT_OPK_XENT_BWD, VT_OPK_MATMUL};
    for (size_t i = 0; i < sizeof SKEW / sizeof SKEW[0]; i++) {
        g_skew = SKEW[i];
        vt_probe_free(b);
        CHECK_OK(vt_probe_run(VT_ORDER_BLAS, skew, NULL, b));
        CHECK(memcmp(a->kind[g_skew], b->kind[g_skew], VT_HASH_LEN) != 0, "kind %s skewed: the same hash",
              vt_opkind_get(g_skew)->name);
        CHECK(memcmp(a->ops, b->ops, sizeof a->ops) == 0 && a->n_seq == b->n_seq,
              "kind %s skewed: other operations ran", vt_opkind_get(g_skew)->name);
        /* the first operation whose outputs differ (what the ranks name) is of the skewed kind */
        size_t j = 0;
        while (j < a->n_seq && j < b->n_seq && memcmp(a->seq[j].h, b->seq[j].h, VT_HASH_LEN) == 0) j++;
        CHECK(j < b->n_seq && b->seq[j].kind == g_skew, "kind %s skewed: the first operation that differs is %s",
              vt_opkind_get(g_skew)->name, j < b->n_seq ? vt_opkind_get(b->seq[j].kind)->name : "none");
    }
    g_skew = VT_OPK_SUB; /* read by no other operation: only its own hash changes */
    vt_probe_free(b);
    CHECK_OK(vt_probe_run(VT_ORDER_BLAS, skew, NULL, b));
    for (uint16_t k = 1; k < VT_OPK_COUNT; k++)
        CHECK((memcmp(a->kind[k], b->kind[k], VT_HASH_LEN) != 0) == (k == VT_OPK_SUB), "sub skewed: kind %s",
              vt_opkind_get(k)->name);
    /* the ranks' agreement on one rank (no MPI): its record is made (the probe run) and compared
     * with itself */
    vt_comm *c = NULL;
    CHECK_OK(vt_dist_init(&c));
    vt_program prog;
    vt_program_init(&prog);
    const vt_ranks_start st = {1, "cpu", "mpi", 0, 0, "{}", &prog, VT_ORDER_BLAS, NULL};
    int common = -1;
    CHECK_OK(vt_ranks_agree(c, &st, &common));
    CHECK(common == 0, "one rank: common %d", common);
    CHECK_OK(vt_dist_finalize(&c));
    vt_probe_free(a);
    vt_probe_free(b);
    free(a);
    free(b);
    return vt_test_finish("test_probe");
}
