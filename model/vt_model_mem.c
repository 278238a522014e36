/* vt_model_mem.c - the interpreter's memory plan (vt_model.h): the budget (--max-memory, else the
 * available memory), what a program needs (arenas from the layout, scratch from the kinds' costs,
 * the data order; a sharded optimiser state's share) and the check against the budget, made before
 * vt_model_init allocates anything. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "vt_model.h"
#include "vt_model_int.h"
#include "../common/vt_mem.h"

static uint64_t g_budget;             /* bytes; 0: the default (vt_memory_available) */
static vt_err g_over = VT_ERR_LIMIT;  /* what exceeding it is */

void vt_model_set_memory_budget(uint64_t bytes, vt_err over)
{
    g_budget = bytes;
    g_over = over;
}

uint64_t vt_model_memory_budget(void) { return g_budget ? g_budget : vt_memory_available(); }

double vt_model_memory_held(void) { return g_budget ? (double)vt_memory_resident() : 0.0; }


/* The scratch sizes (FP64 elements, norms) vt_model_init allocates: the largest any operation's
 * cost asks for, the evaluation pass included (a sharded optimiser state, ss: the optimiser's
 * operations over this rank's elements). */
void vti_model_scratch_need(const vt_program *p, const vt_sstate *ss, double *scratch, double *norms)
{
    *scratch = 1, *norms = 1;
    for (uint32_t j = 1; j <= p->n_ops + p->n_eval; j++) {
        vt_opcost c;
        memset(&c, 0, sizeof c);
        const vt_program *q = ss && vti_opt_kind(p->op[j].kind) ? &ss->sprog : p;
        vt_opkind_get(p->op[j].kind)->cost(q, &p->op[j], &c);
        if (c.scratch > *scratch) *scratch = c.scratch;
        if (c.norms > *norms) *norms = c.norms;
    }
}

/* the need, with this rank holding opt_own of the optimiser state's values and a buffer of send
 * bytes besides */
void vti_model_need_of(const vt_program *p, uint32_t batch, size_t n_examples, const vt_sstate *ss, vt_model_mem *need)
{
    memset(need, 0, sizeof *need);
    for (uint32_t t = 0; t < p->n_state; t++)
        if (p->t[t].cls == VT_TC_OPT) need->opt += (double)p->t[t].n * sizeof(float);
    need->state = (double)p->arena_bytes[VT_TC_PARAM];
    double scratch, norms;
    vti_model_scratch_need(p, ss, &scratch, &norms);
    if (ss) { /* its optimiser values; its parameters' buffer for the allgather unless the scratch holds them */
        need->state += (double)ss->opt_own * sizeof(float) - need->opt;
        if (scratch * sizeof(double) < (double)ss->pbytes[ss->rank]) need->state += (double)ss->pbytes[ss->rank];
        need->opt = (double)ss->opt_own * sizeof(float);
    }
    need->arenas = need->state ? need->state : 1.0;
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++) need->arenas += p->arena_bytes[c] ? (double)p->arena_bytes[c] : 1.0;
    need->scratch = scratch * (3.0 * sizeof(double) + sizeof(float)) + norms * 2.0 * sizeof(double);
    double tcs = 0; /* a tensor-core mode's convolution operands, formed by the kind (the largest) */
    for (uint32_t j = 1; p->gemm_arith && j <= p->n_ops; j++) {
        double f, fl;
        vt_op_tc_cost(&p->op[j], &f, &fl);
        if (fl > tcs) tcs = fl;
    }
    need->scratch += tcs * sizeof(float);
    need->data_order = (double)batch * sizeof(size_t) + (double)n_examples * sizeof(uint32_t);
    need->total = need->arenas + need->scratch + need->data_order;
}

void vt_model_need(const vt_program *p, uint32_t batch, size_t n_examples, vt_model_mem *need)
{
    vti_model_need_of(p, batch, n_examples, NULL, need);
}

vt_err vt_model_need_sharded(const vt_program *p, uint32_t batch, size_t n_examples, int rank, int size,
                             vt_model_mem *need)
{
    vt_sstate *ss = NULL;
    VT_FORWARD_IF_ERROR(vti_sstate_plan(p, NULL, rank, size, &ss));
    vti_model_need_of(p, batch, n_examples, ss, need);
    vti_sstate_free(ss);
    return VT_OK;
}

vt_err vt_model_check_budget(const vt_model_mem *need, uint64_t budget)
{
    int given = budget != 0 || g_budget != 0;
    /* --max-memory is the process's budget: what it holds already (its data, an --init file's bytes, the
     * libraries) counts too; the available memory (the default) is what is left beside it, and a caller's own
     * budget (an auditor's replay job) is that model's share */
    double held = !budget ? vt_model_memory_held() : 0.0;
    if (!budget) budget = vt_model_memory_budget();
    if (need->total + held <= (double)budget) return VT_OK;
    char n[32], b[32], a[32], s[32], h[32];
    vt_fmt_bytes(need->total, n, sizeof n);
    vt_fmt_bytes((double)budget, b, sizeof b);
    vt_fmt_bytes(need->arenas, a, sizeof a);
    vt_fmt_bytes(need->scratch, s, sizeof s);
    vt_fmt_bytes(held, h, sizeof h);
    return vt_set_error(g_over, "the model needs %s (tensors %s, scratch %s)%s%s%s, over the memory budget of %s (%s)", n,
                        a, s, held > 0 ? " besides the " : "", held > 0 ? h : "",
                        held > 0 ? " this process holds already" : "", b,
                        given ? "--max-memory" : "the available memory; --max-memory sets it");
}
