/* vt_model.c - the interpreter of the step program (vt_model.h): the model's set-up (the recipe's
 * program, its arenas and scratch, the state of step 0), its settings (backend, hooks, the data-parallel
 * shard) and the run of the operations. Beside it: the memory plan (vt_model_mem.c), the hashes and wire
 * words (vt_model_hash.c), evaluation (vt_model_eval.c), text (vt_model_text.c). */
#include "vt_model.h"
#include "vt_model_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/vt_philox.h"

float vt_program_initial_value(const vt_program *p, uint64_t seed, uint32_t t, size_t k)
{
    const vt_tensor *d = &p->t[t];
    if (d->init == VT_INIT_ONE) return 1.0f;
    if (d->init != VT_INIT_HE_UNIFORM) return 0.0f;
    /* He-uniform: W ~ U(-a, a), a = sqrt(6 / fan_in): basic operations only */
    double a = sqrt(6.0 / (double)d->fan_in);
    double u = vt_rand_unit(seed, VT_RNG_INIT, t, k); /* exact 24-bit value in [0,1) */
    return (float)((2.0 * u - 1.0) * a);
}

static void init_state(vt_model *m)
{
    const vt_program *p = &m->prog;
    for (uint32_t i = 0; i < p->n_state; i++) {
        float *W = vt_model_tensor(m, i, NULL);
        size_t lo = 0, hi = p->t[i].n; /* a sharded optimiser state: this rank's values */
        if (m->sst && p->t[i].cls == VT_TC_OPT) lo = m->sst->lo[i], hi = m->sst->hi[i];
        for (size_t k = lo; k < hi; k++) W[k] = vt_program_initial_value(p, m->rcp.seed, i, k);
    }
}

vt_err vt_model_init(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order)
{
    return vt_model_init_within(m, rcp, n_examples, order, 0);
}

static vt_err model_init(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order, uint64_t budget,
                         vt_comm *comm);

vt_err vt_model_init_within(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order, uint64_t budget)
{
    return model_init(m, rcp, n_examples, order, budget, NULL);
}

vt_err vt_model_init_sharded(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order, vt_comm *comm)
{
    VT_RETURN_ERROR_IF(!comm || vt_dist_size(comm) < 2, VT_ERR_ARG, "a sharded optimiser state needs several ranks");
    return model_init(m, rcp, n_examples, order, 0, comm);
}

static vt_err model_init(vt_model *m, const vt_recipe *rcp, size_t n_examples, vt_order order, uint64_t budget,
                         vt_comm *comm)
{
    memset(m, 0, sizeof *m);
    VT_FORWARD_IF_ERROR(vt_recipe_validate(rcp));
    VT_RETURN_ERROR_IF(rcp->program_version == 0 && rcp->bound.rounding == VT_ROUNDING_LOG, VT_ERR_UNSUPPORTED,
                       "this log-rounded run was recorded by step program 0 (manifest formats 1-3), whose logs number "
                       "the operations differently: check it with version 0.1.0 of this software");
    VT_RETURN_ERROR_IF(n_examples < rcp->batch || n_examples > UINT32_MAX, VT_ERR_ARG,
                       "the dataset has %zu examples; the batch needs %u (and at most 2^32)", n_examples, rcp->batch);
    m->rcp = *rcp;
    m->n_examples = n_examples;
    VT_FORWARD_IF_ERROR(vt_program_build(rcp, &m->prog));
    const vt_program *p = &m->prog;
    /* the whole allocation, from the program's costs, against the budget before any of it */
    vt_model_mem need;
    vt_err be = VT_OK;
    if (comm) { /* sharded: this rank's share of the optimiser state */
        be = vti_sstate_plan(p, comm, vt_dist_rank(comm), vt_dist_size(comm), &m->sst);
    }
    vti_model_need_of(p, rcp->batch, n_examples, m->sst, &need);
    if (!be) be = vt_model_check_budget(&need, budget);
    if (!be && m->sst) be = vti_sstate_map(m->sst, p->arena_bytes[VT_TC_PARAM]);
    if (be) {
        vti_sstate_free(m->sst);
        vt_program_free(&m->prog);
        memset(m, 0, sizeof *m);
        return be;
    }
    m->n_state = p->state_floats;
    m->n_tensors = p->n_state;
    m->n_ops = p->n_ops;
    double scratch, norms;
    vti_model_scratch_need(p, m->sst, &scratch, &norms);
    int bad = scratch > (double)(SIZE_MAX / 16) || norms > (double)(SIZE_MAX / 16);
    m->scratch = bad ? 0 : (size_t)scratch;
    if (m->sst) m->arena[VT_TC_PARAM] = (uint8_t *)m->sst->state_map; /* mapped, resident where touched */
    for (int c = 0; c < VT_TC_COUNT && !bad; c++)
        if ((c == VT_TC_PARAM && !m->sst) || c > VT_TC_BUFFER) {
            m->arena[c] = calloc(p->arena_bytes[c] ? p->arena_bytes[c] : 1, 1);
            bad |= !m->arena[c];
        }
    if (!bad) {
        size_t ns = m->scratch, nn = (size_t)norms;
        m->x64 = calloc(ns, sizeof(double)), m->x64b = calloc(ns, sizeof(double)), m->b64 = calloc(ns, sizeof(double));
        m->rn = calloc(nn, sizeof(double)), m->cn = calloc(nn, sizeof(double));
        m->f32s = calloc(ns, sizeof(float));
        m->batch_idx = calloc(rcp->batch, sizeof(size_t));
        m->perm = calloc(n_examples, sizeof(uint32_t));
        bad = !m->x64 || !m->x64b || !m->b64 || !m->rn || !m->cn || !m->f32s || !m->batch_idx || !m->perm;
        if (!bad && m->sst && ns * sizeof(double) < m->sst->pbytes[m->sst->rank]) /* (vti_model_need_of alike) */
            bad = !(m->sst->send = malloc(m->sst->pbytes[m->sst->rank]));
    }
    if (bad) {
        size_t nstate = p->state_floats; /* read before vt_model_free clears the program */
        vt_model_free(m);
        char t[32];
        vt_fmt_bytes(need.total, t, sizeof t);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory allocating the model (%s, %zu state values)", t, nstate);
    }
    m->arena[VT_TC_OPT] = m->arena[VT_TC_BUFFER] = m->arena[VT_TC_PARAM];
    m->state = (float *)m->arena[VT_TC_PARAM];
    vt_exec_init(&m->exec, order, rcp->bound, rcp->seed);
    init_state(m);
    return VT_OK;
}

vt_err vt_model_set_shard(vt_model *m, vt_comm *comm, uint32_t global_batch)
{
    const int size = vt_dist_size(comm), rank = vt_dist_rank(comm);
    VT_RETURN_ERROR_IF(size < 1 || m->rcp.batch < 1 || (uint64_t)m->rcp.batch * (uint64_t)size != global_batch,
                       VT_ERR_ARG,
                       "rank %d of %d: a batch of %u examples does not split into %d equal shares (the batch must be a "
                       "multiple of the number of ranks)",
                       rank, size, global_batch, size);
    VT_RETURN_ERROR_IF(size > 1 && m->rcp.bound.rounding != VT_ROUNDING_EXACT, VT_ERR_UNSUPPORTED,
                       "rank %d of %d: rounding=log needs one rank (a batch split over ranks is rounded exactly)", rank,
                       size);
    VT_RETURN_ERROR_IF(size > 1 && m->rcp.gemm_arith, VT_ERR_UNSUPPORTED,
                       "rank %d of %d: gemm_arith=%s needs one rank (a tensor-core sum is not split across ranks)",
                       rank, size, vt_gemm_arith_names[m->rcp.gemm_arith]);
    VT_RETURN_ERROR_IF(m->n_examples < global_batch, VT_ERR_ARG, "rank %d of %d: the dataset has %zu examples, the "
                       "batch %u", rank, size, m->n_examples, global_batch);
    if (size == 1) {
        m->shard = NULL;
        return VT_OK;
    }
    memset(&m->shard_s, 0, sizeof m->shard_s);
    m->shard_s.comm = comm;
    m->shard_s.batch = global_batch;
    m->shard_s.local = m->rcp.batch;
    m->shard_s.first = (uint32_t)rank * m->rcp.batch;
    m->shard = &m->shard_s;
    m->perm_epoch = 0; /* the data order is the global batch's from now on */
    return VT_OK;
}

void vt_model_free(vt_model *m)
{
    if (m->sst) vti_sstate_free(m->sst); /* (unmaps the state) */
    else free(m->arena[VT_TC_PARAM]);
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++) free(m->arena[c]);
    free(m->x64), free(m->x64b), free(m->b64), free(m->rn), free(m->cn), free(m->f32s);
    free(m->batch_idx);
    free(m->perm);
    vt_program_free(&m->prog);
    vt_exec_free(&m->exec);
    memset(m, 0, sizeof *m);
}

const char *vt_model_op_name(const vt_model *m, uint32_t op_id)
{
    return op_id >= 1 && op_id <= m->prog.n_ops ? m->prog.op[op_id].name : "?";
}

/* Batch of step s (1-based): epoch e = (s-1) / steps_per_epoch uses a Fisher-Yates
 * permutation keyed by (seed, SHUFFLE, e); the batch is its p-th slice of B examples. */
void vt_model_batch_indices(vt_model *m, uint64_t s)
{
    /* the global batch's order; this rank's share from its first slot (all of it in one process) */
    const vt_shard *sh = m->shard;
    uint64_t B = sh ? sh->batch : m->rcp.batch, spe = m->n_examples / B, first = sh ? sh->first : 0;
    uint64_t e = (s - 1) / spe, p = (s - 1) % spe;
    if (m->perm_epoch != e + 1) {
        vt_shuffle(m->perm, (uint32_t)m->n_examples, m->rcp.seed, VT_RNG_SHUFFLE, e);
        m->perm_epoch = e + 1;
    }
    for (uint64_t i = 0; i < m->rcp.batch; i++) m->batch_idx[i] = m->perm[p * B + first + i];
}

/* ------------------------------------------------------------- tensors */

void *vt_model_tensor(vt_model *m, uint32_t t, size_t *bytes)
{
    if (bytes) *bytes = 0;
    if (t >= m->prog.n_tensors) return NULL;
    const vt_tensor *d = &m->prog.t[t];
    if (bytes) *bytes = d->n * vt_dtype_size((vt_dtype)d->dtype);
    return m->arena[d->cls] + d->off;
}

vt_err vt_model_set_state(vt_model *m, uint64_t step, const float *state, size_t n)
{
    VT_RETURN_ERROR_IF(n != m->n_state, VT_ERR_MISMATCH, "state has %zu values, the model needs %zu", n, m->n_state);
    if (m->sst) { /* sharded: the parameters, the buffers and this rank's optimiser values */
        for (uint32_t t = 0; t < m->n_tensors; t++) {
            size_t o = m->prog.t[t].off / 4, lo = 0, hi = m->prog.t[t].n;
            if (m->prog.t[t].cls == VT_TC_OPT) lo = m->sst->lo[t], hi = m->sst->hi[t];
            memcpy(m->state + o + lo, state + o + lo, (hi - lo) * sizeof(float));
        }
    } else {
        memcpy(m->state, state, n * sizeof(float));
    }
    m->step = step;
    return VT_OK;
}

void vt_model_set_backend(vt_model *m, const vt_backend *be) { m->be = be && (be->gemm_round || be->run_begin) ? be : NULL; }

void vt_model_set_hooks(vt_model *m, const vt_hooks *hooks)
{
    m->tamper = hooks ? hooks->after_op : NULL;
    m->tamper_ctx = hooks ? hooks->ctx : NULL;
}

int vt_model_op_rounded(const vt_model *m, uint32_t op_id)
{
    return op_id >= 1 && op_id <= m->prog.n_ops && vt_opkind_get(m->prog.op[op_id].kind)->rounded;
}

float vt_model_loss(vt_model *m)
{
    float v;
    memcpy(&v, vt_model_tensor(m, m->prog.loss, NULL), 4);
    return v;
}

/* ------------------------------------------------------------ running */

/* In a step whose batch is split over ranks (vt_model_set_shard), the operations whose exec reads
 * the shard - a sum over the global batch rounded across the ranks (vt_op_batch_reduction), the
 * global batch's row count (cross-entropy backward, batch norm), an example's global slot
 * (augmentation, dropout, the loaders) - run on the CPU without the backend: the backend's kernels
 * (a device kind, a GEMM rounded on the GPU) know this rank's rows only. docs/distributed.md. */
static int split_on_cpu(const vt_model *m, const vt_opdesc *o)
{
    if (!m->shard || !m->in_step) return 0;
    if (vt_op_batch_reduction(o)) return 1;
    switch (o->kind) {
    case VT_OPK_LOAD_BATCH: case VT_OPK_LOAD_WINDOWS: case VT_OPK_AUGMENT: case VT_OPK_DROPOUT:
    case VT_OPK_XENT_BWD: case VT_OPK_BN_CENTER: case VT_OPK_BN_APPLY: case VT_OPK_BN_RUNNING:
    case VT_OPK_BN_GAMMA_GRAD: case VT_OPK_BN_BACKWARD: case VT_OPK_LOAD_BATCH_TARGETS: case VT_OPK_MSE_BWD:
    case VT_OPK_L1_BWD: case VT_OPK_BCE_BWD:
        return 1;
    default:
        return 0;
    }
}

vt_err vti_model_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t s, uint32_t op_id)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    vt_opctx c;
    memset(&c, 0, sizeof c);
    c.prog = &m->prog, c.arena = m->arena, c.o = o, c.op_id = op_id, c.step = s, c.ds = ds, c.rctx = rctx;
    if (m->sst && m->in_step && vti_opt_kind(o->kind)) { /* sharded: this rank's elements of the update */
        c.prog = &m->sst->sprog;
        if (!c.prog->t[o->out[0]].n) return VT_OK;
    }
    c.exec = &m->exec, c.be = split_on_cpu(m, o) ? NULL : m->be;
    c.shard = m->in_step ? m->shard : NULL; /* evaluation is local */
    c.gemm_arith = (uint32_t)m->rcp.gemm_arith;
    c.s = (vt_opscratch){m->x64, m->x64b, m->b64, m->rn, m->cn, m->f32s};
    if (o->kind == VT_OPK_LOAD_BATCH || o->kind == VT_OPK_LOAD_BATCH_TARGETS) {
        vt_model_batch_indices(m, s);
        c.batch_idx = m->batch_idx;
    }
    return vt_opkind_get(o->kind)->exec(&c);
}

vt_err vti_model_exec(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t step, uint32_t op_id)
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops + m->prog.n_eval, VT_ERR_ARG, "no operation %u", op_id);
    vt_err e = vti_model_op(m, ds, rctx, step, op_id);
    if (!e && m->tamper) e = m->tamper(m->tamper_ctx, m, step, op_id);
    return e;
}

vt_err vt_model_exec_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t step, uint32_t op_id)
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops, VT_ERR_ARG, "no operation %u", op_id);
    return vti_model_op(m, ds, rctx, step, op_id);
}

vt_err vt_model_run(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint32_t upto, vt_op_hook hook, void *hook_ctx)
{
    uint64_t s = m->step + 1;
    VT_RETURN_ERROR_IF(ds->n != m->n_examples, VT_ERR_ARG, "the dataset has %zu examples, the model was built for %zu",
                       ds->n, m->n_examples);
    VT_RETURN_ERROR_IF(rctx->step != s, VT_ERR_ARG, "rounding context is at step %llu, model at %llu",
                       (unsigned long long)rctx->step, (unsigned long long)s);
    VT_RETURN_ERROR_IF(upto > m->prog.n_ops, VT_ERR_ARG, "no operation %u", upto);
    VT_RETURN_ERROR_IF(m->rcp.gemm_arith && m->be && !m->be->gemm_tc, VT_ERR_UNSUPPORTED,
                       "gemm_arith=%s: the backend %s has no tensor-core GEMM (--backend cpu emulates it)",
                       vt_gemm_arith_names[m->rcp.gemm_arith], m->be->name);
    m->ds = ds;
    m->rctx = rctx;
    m->in_step = 1;
    vt_err e = VT_OK;
    /* a whole step without hooks runs device-resident where the backend can (backend/vt_backend.h) */
    const vt_backend *be = m->be;
    if (be && be->run_begin && !hook && !m->tamper && upto == m->prog.n_ops) {
        e = be->run_begin(be->impl, m);
        for (uint32_t op = 1; op <= upto && !e; op++) {
            e = split_on_cpu(m, &m->prog.op[op]) ? VT_ERR_UNSUPPORTED : be->run_op(be->impl, m, rctx, op, s);
            if (e != VT_ERR_UNSUPPORTED) continue;
            e = be->op_to_host(be->impl, m, rctx, op);
            if (!e) e = vti_model_op(m, ds, rctx, s, op);
            if (!e) e = be->op_to_device(be->impl, m, op);
        }
        if (!e) e = be->run_end(be->impl, m, rctx);
    } else {
        for (uint32_t op = 1; op <= upto && !e; op++) {
            e = vti_model_op(m, ds, rctx, s, op);
            if (!e && m->tamper) e = m->tamper(m->tamper_ctx, m, s, op);
            if (!e && hook) e = hook(hook_ctx, m, s, op);
        }
    }
    m->ds = NULL;
    m->rctx = NULL;
    m->in_step = 0;
    if (m->sst && upto == m->prog.n_ops) { /* every rank's updated parameters to every rank */
        /* an update may fail on its owner alone: the ranks agree first; a failing rank keeps its
         * own error (the caller agrees on it as on any step's), the others take the failing one's */
        int failed = -1;
        char own[512];
        snprintf(own, sizeof own, "%s", e ? vt_errmsg() : "");
        vt_err mine = e;
        e = vt_dist_agree(m->sst->comm, e, &failed);
        if (mine) e = vt_set_error(mine, "%s", own);
        if (!e) e = vti_sstate_allgather_params(m);
    }
    VT_FORWARD_IF_ERROR(e);
    if (upto == m->prog.n_ops) m->step = s;
    return VT_OK;
}

vt_err vt_model_step(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, float *loss)
{
    VT_FORWARD_IF_ERROR(vt_model_run(m, ds, rctx, m->prog.n_ops, NULL, NULL));
    *loss = vt_model_loss(m);
    return VT_OK;
}
