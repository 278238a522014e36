/* vt_game_cost.c - the arbiter's resource limits from the program's costs (docs/dispute.md
 * "Resource limits", "Clocks"): vt_game_cost, the time granted for recomputation at the rate floor,
 * and the admission of a run's game against the arbiter's limits. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/vt_model.h"
#include "../ops/vt_ops.h"
#include "vt_game_int.h"

/* The time granted for recomputing `steps` steps at the rate floor (0 before the manifest is known). */
int64_t vti_work_ms(const vti_game *g, double steps)
{
    if (!g->have_needs || steps <= 0) return 0;
    double rate = g->lim && g->lim->min_rate > 0 ? g->lim->min_rate : VT_GAME_MIN_RATE;
    double ms = steps * g->needs.step_flop / rate * 1000.0;
    return ms >= 1e12 ? (int64_t)1e12 : (int64_t)ms + 1;
}

/* What the step's flop says of the GEMMs' arithmetic, for messages ("" for fp64). */
const char *vti_arith_note(const vti_game *g, char *buf, size_t cap)
{
    if (!g->rcp.gemm_arith) return "";
    snprintf(buf, cap, " (its GEMMs' %.3g flop weighed %.3f for gemm_arith=%s)", g->needs.gemm_flop,
             g->needs.arith_factor, vt_gemm_arith_names[g->rcp.gemm_arith]);
    return buf;
}

/* The INPUTS body an honest trainer sends for operation j: for each input, itself (state) or
 * every output of the operation that wrote it last (the game authenticates the producer's
 * outputs together); 12 bytes of header and 4 per element each (protocol/vt_msg.c). */
static double wire_bytes(const vt_program *p, uint32_t t) /* as vt_model_tensor_words: F64 as two words */
{
    return 12.0 + 4.0 * (double)p->t[t].n * (p->t[t].dtype == VT_DT_F64 ? 2.0 : 1.0);
}

double vti_inputs_body(const vt_program *p, uint32_t j)
{
    const vt_opdesc *o = &p->op[j];
    double total = vt_msg_min_body(VT_MSG_INPUTS);
    for (uint32_t k = 0; k < o->n_in; k++) {
        int prev;
        uint32_t q = vt_program_producer(p, j, o->in[k], &prev);
        if (!q) {
            total += wire_bytes(p, o->in[k]);
            continue;
        }
        for (uint32_t u = 0; u < p->op[q].n_out; u++) total += wire_bytes(p, p->op[q].out[u]);
    }
    return total;
}

void vt_game_cost(const vt_recipe *rcp, uint64_t data_bytes, const vt_game_limits *lim, vt_game_needs *out)
{
    /* from the program the recipe builds (nothing of it allocated yet). The interpreter's arenas
     * are calloc'd, so only what the game writes becomes resident: the state (set at step 0), the
     * disputed operation's inputs and outputs, and its scratch. Doubles, so nothing overflows. */
    memset(out, 0, sizeof *out);
    out->bytes = out->op_flop = out->max_inputs_body = out->log_body = UINT64_MAX;
    out->step_flop = 1e300;
    vt_program p;
    if (vt_program_build(rcp, &p) != VT_OK) return;
    double state = 0, scratch = 0, norms = 0, f = 0, sf = 0, inb = 0, opt = 0, logb = 4096, logd = 4096, loge = 0;
    /* the GEMMs of a tensor-core mode weigh their flop by the mode's factor (docs/dispute.md "Clocks") */
    double gf = 0, sn = 0, w = 1.0, tcs = 0; /* tcs: the largest FP32 operands a tc-* convolution forms */
    if (rcp->gemm_arith > 0 && rcp->gemm_arith < VT_GAME_ARITH_MAX && lim && lim->arith_factor[rcp->gemm_arith] > 0)
        w = lim->arith_factor[rcp->gemm_arith];
    for (int c = 0; c <= VT_TC_INPUT; c++) state += (double)p.arena_bytes[c];
    for (uint32_t j = 1; j <= p.n_ops; j++) {
        vt_opcost c;
        memset(&c, 0, sizeof c);
        const vt_opkind *k = vt_opkind_get(p.op[j].kind);
        k->cost(&p, &p.op[j], &c);
        if (rcp->gemm_arith) { /* a convolution kind in the mode: the GEMM it runs, the operands it forms */
            double tf, tfl;
            vt_op_tc_cost(&p.op[j], &tf, &tfl);
            if (tf > 0) c.flop = tf;
            if (tfl > tcs) tcs = tfl;
        }
        if (c.scratch > scratch) scratch = c.scratch;
        if (c.norms > norms) norms = c.norms;
        if (c.flop > f) f = c.flop;
        sf += c.flop;
        /* the GEMM family (matmul, batched_matmul, the conv2d kinds): vt_tc_gemm in a tc-* mode */
        if (vt_kind_family_of(p.op[j].kind) == VT_FAM_GEMM) gf += c.flop;
        else sn += c.flop;
        double ib = vti_inputs_body(&p, j), ob = 0;
        for (uint32_t u = 0; u < p.op[j].n_out; u++) ob += wire_bytes(&p, p.op[j].out[u]) - 12.0;
        if (ib > inb) inb = ib;
        if (ib + ob > opt) opt = ib + ob; /* its inputs loaded into the arenas, its outputs written */
        if (k->rounded && rcp->bound.rounding != VT_ROUNDING_EXACT) {
            logb += 64.0 + 16.0 * ob / 4.0; /* its record header (<= 34 bytes), <= 16 per element */
            logd += 64.0 + 15.0 * ob / 4.0; /* decoded: index <= 10 bytes, 2 bits, value 4 bytes */
            loge += ob / 4.0;
        }
    }
    double gap = rcp->state_hash_every ? (double)rcp->state_hash_every : 1.0;
    if (gap > (double)rcp->steps) gap = (double)rcp->steps;
    double examples = rcp->subset ? (double)rcp->subset : 70000.0; /* the sampler's permutation, at most */
    double model = state + opt + 8.0 * 3.0 * scratch + 4.0 * scratch + 16.0 * norms + 4.0 * examples +
                   8.0 * (double)rcp->batch + 4.0 * tcs;
    /* the largest answer, received (framed bytes) and decoded (its tensors), the agreed prefix hashes
     * (received and copied), the committed leaves and tensor hashes (small) */
    if (logb > (double)VT_MSG_LOG_MAX_DATA) logb = VT_MSG_LOG_MAX_DATA;
    double big = inb > logb ? inb : logb; /* INPUTS is freed before the LOG is asked */
    double msgs = 2.0 * big + 3.0 * 32.0 * (gap * p.n_ops + 2.0) + 64.0 * (double)p.n_tensors + (1 << 20);
    /* + the process's baseline (libraries, TLS, the program, transcript buffers): 16 MB */
    double total = model + msgs + (double)data_bytes + (16 << 20);
    out->bytes = total >= 1.8e19 ? UINT64_MAX : (uint64_t)total;
    out->op_flop = f >= 1.8e19 ? UINT64_MAX : (uint64_t)f;
    out->gemm_flop = gf;
    out->arith_factor = rcp->gemm_arith ? w : 1.0;
    /* fp64: the sum as before the weights (the same bits); a tc-* mode: the other operations' flop
     * plus the GEMMs' weighed */
    out->step_flop = (rcp->gemm_arith ? sn + out->arith_factor * gf : sf) + VT_GAME_OP_FLOP * (double)p.n_ops;
    out->n_ops = p.n_ops;
    out->max_log_decoded = logd >= 1.8e19 ? UINT64_MAX : (uint64_t)logd;
    out->max_log_entries = loge >= 1.8e19 ? UINT64_MAX : (uint64_t)loge;
    out->max_inputs_body = inb >= 1.8e19 ? UINT64_MAX : (uint64_t)inb;
    out->log_body = (uint64_t)logb;
    vt_program_free(&p);
}

/* The game's needs from the manifest (pass 0) and again with the dataset the arbiter loaded (pass 1:
 * data_bytes, what loading it held at its peak), against this arbiter's limits: its memory, the
 * largest operation's flop, one HASHES answer for a segment's prefix, and the most recomputation
 * time a game may grant the trainer. -1 after deciding the game over the limits. */
int vti_check_limits(vti_game *g, int pass, uint64_t data_bytes)
{
    char am[128];
    vt_game_cost(&g->rcp, data_bytes, g->lim, &g->needs);
    g->have_needs = 1;
    uint64_t need = g->needs.bytes, flop = g->needs.op_flop;
    if (g->lim && ((g->lim->max_game_bytes && need > g->lim->max_game_bytes) ||
                   (g->lim->max_op_flop && flop > g->lim->max_op_flop))) {
        vti_decide(g, VT_LOSER_NONE, VT_REASON_OVER_LIMIT, 0, 0,
                   "the run's manifest needs %.1f MB%s and %.3g flop for its largest operation; this arbiter accepts at "
                   "most %.1f MB and %.3g flop per game: refused",
                   (double)need / 1e6, pass ? " with its dataset" : "", (double)flop,
                   (double)g->lim->max_game_bytes / 1e6, (double)g->lim->max_op_flop);
        return -1;
    }
    /* the agreed prefix of a segment travels in one HASHES answer */
    uint64_t seg = g->rcp.state_hash_every ? g->rcp.state_hash_every : 1;
    if (g->needs.n_ops && seg > (VT_MSG_HASHES_MAX - 1) / g->needs.n_ops) {
        vti_decide(g, VT_LOSER_NONE, VT_REASON_OVER_LIMIT, 0, 0,
                   "the run's segments of %llu steps hold %llu positions, more than one HASHES answer carries (%u): "
                   "refused", (unsigned long long)seg, (unsigned long long)seg * g->needs.n_ops, VT_MSG_HASHES_MAX);
        return -1;
    }
    /* the most recomputation time a game may grant the trainer: a chain (a restore and a segment),
     * the tensors of two states and one operation's inputs: 4 x checkpoint_every + the segment */
    uint64_t K = g->rcp.checkpoint_every ? g->rcp.checkpoint_every : 1;
    int64_t worst = vti_work_ms(g, 4.0 * (double)K + (double)seg);
    /* the limit is in FP64-equivalent work: a mode whose GEMMs weigh more is granted more time, and
     * is admitted on the same terms as the FP64 run of the recipe (docs/dispute.md "Clocks") */
    double fp64 = g->needs.step_flop - g->needs.gemm_flop * (g->needs.arith_factor - 1.0);
    double eq = g->needs.step_flop > 0 ? (double)worst * (fp64 / g->needs.step_flop) : (double)worst;
    if (g->lim && g->lim->max_work_ms && eq > (double)g->lim->max_work_ms) {
        vti_decide(g, VT_LOSER_NONE, VT_REASON_OVER_LIMIT, 0, 0,
                   "the run's checkpoints every %llu steps and segments of %llu steps may grant the trainer %.0f s of "
                   "FP64-equivalent recomputation at the rate floor (%.0f s%s); this arbiter grants at most %.0f s per "
                   "game: refused",
                   (unsigned long long)K, (unsigned long long)seg, eq / 1000.0, (double)worst / 1000.0,
                   vti_arith_note(g, am, sizeof am), (double)g->lim->max_work_ms / 1000.0);
        return -1;
    }
    return 0;
}
