/* vt_model.c - the interpreter of the step program (vt_model.h). */
#include "vt_model.h"
#include "vt_model_int.h"
#include "../kernels/vt_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/vt_bytes.h"
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

/* ------------------------------------------------------------- memory */

static uint64_t g_budget;             /* bytes; 0: the default (vt_memory_available) */
static vt_err g_over = VT_ERR_LIMIT;  /* what exceeding it is */

void vt_model_set_memory_budget(uint64_t bytes, vt_err over)
{
    g_budget = bytes;
    g_over = over;
}

uint64_t vt_memory_available(void)
{
    uint64_t avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[128];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (uint64_t)kb * 1024;
                break;
            }
        fclose(f);
    }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    if (!avail) {
        long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        if (pages > 0 && size > 0) avail = (uint64_t)pages * (uint64_t)size;
    }
#endif
    /* an address-space or data limit below it (ulimit -v / -d) is the real one */
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (!avail || rl.rlim_cur < avail))
        avail = (uint64_t)rl.rlim_cur;
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (!avail || rl.rlim_cur < avail))
        avail = (uint64_t)rl.rlim_cur;
    return avail ? avail : UINT64_MAX;
}

uint64_t vt_model_memory_budget(void) { return g_budget ? g_budget : vt_memory_available(); }

void vt_fmt_bytes(double b, char *buf, size_t cap)
{
    if (b >= 1024.0 * 1024 * 1024) snprintf(buf, cap, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) snprintf(buf, cap, "%.1f MiB", b / (1024.0 * 1024));
    else snprintf(buf, cap, "%.1f KiB", b / 1024.0);
}

/* The scratch sizes (FP64 elements, norms) vt_model_init allocates: the largest any operation's
 * cost asks for, the evaluation pass included (a sharded optimiser state, ss: the optimiser's
 * operations over this rank's elements). */
static void scratch_need(const vt_program *p, const vt_sstate *ss, double *scratch, double *norms)
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
static void need_of(const vt_program *p, uint32_t batch, size_t n_examples, const vt_sstate *ss, vt_model_mem *need)
{
    memset(need, 0, sizeof *need);
    for (uint32_t t = 0; t < p->n_state; t++)
        if (p->t[t].cls == VT_TC_OPT) need->opt += (double)p->t[t].n * sizeof(float);
    need->state = (double)p->arena_bytes[VT_TC_PARAM];
    double scratch, norms;
    scratch_need(p, ss, &scratch, &norms);
    if (ss) { /* its optimiser values; its parameters' buffer for the allgather unless the scratch holds them */
        need->state += (double)ss->opt_own * sizeof(float) - need->opt;
        if (scratch * sizeof(double) < (double)ss->pbytes[ss->rank]) need->state += (double)ss->pbytes[ss->rank];
        need->opt = (double)ss->opt_own * sizeof(float);
    }
    need->arenas = need->state ? need->state : 1.0;
    for (int c = VT_TC_BUFFER + 1; c < VT_TC_COUNT; c++) need->arenas += p->arena_bytes[c] ? (double)p->arena_bytes[c] : 1.0;
    need->scratch = scratch * (3.0 * sizeof(double) + sizeof(float)) + norms * 2.0 * sizeof(double);
    need->data_order = (double)batch * sizeof(size_t) + (double)n_examples * sizeof(uint32_t);
    need->total = need->arenas + need->scratch + need->data_order;
}

void vt_model_need(const vt_program *p, uint32_t batch, size_t n_examples, vt_model_mem *need)
{
    need_of(p, batch, n_examples, NULL, need);
}

vt_err vt_model_need_sharded(const vt_program *p, uint32_t batch, size_t n_examples, int rank, int size,
                             vt_model_mem *need)
{
    vt_sstate *ss = NULL;
    VT_FORWARD_IF_ERROR(vti_sstate_plan(p, NULL, rank, size, &ss));
    need_of(p, batch, n_examples, ss, need);
    vti_sstate_free(ss);
    return VT_OK;
}

vt_err vt_model_check_budget(const vt_model_mem *need, uint64_t budget)
{
    int given = budget != 0 || g_budget != 0;
    if (!budget) budget = vt_model_memory_budget();
    if (need->total <= (double)budget) return VT_OK;
    char n[32], b[32], a[32], s[32];
    vt_fmt_bytes(need->total, n, sizeof n);
    vt_fmt_bytes((double)budget, b, sizeof b);
    vt_fmt_bytes(need->arenas, a, sizeof a);
    vt_fmt_bytes(need->scratch, s, sizeof s);
    return vt_set_error(g_over, "the model needs %s (tensors %s, scratch %s), over the memory budget of %s (%s)", n, a,
                        s, b, given ? "--max-memory" : "the available memory; --max-memory sets it");
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
    need_of(p, rcp->batch, n_examples, m->sst, &need);
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
    scratch_need(p, m->sst, &scratch, &norms);
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
        if (!bad && m->sst && ns * sizeof(double) < m->sst->pbytes[m->sst->rank]) /* (need_of alike) */
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

/* Tensor bytes are little-endian in memory on every supported host (x86-64, AArch64 LE). */
vt_err vt_model_tensor_hash(vt_model *m, uint32_t t, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(t >= m->prog.n_tensors, VT_ERR_ARG, "no tensor %u", t);
    size_t bytes = 0;
    const void *p = vt_model_tensor(m, t, &bytes);
    return vt_sha256(p, bytes, out);
}

vt_err vt_output_hash_of(uint32_t n, const uint8_t (*th)[VT_HASH_LEN], uint8_t out[VT_HASH_LEN])
{
    if (n == 1) {
        memcpy(out, th[0], VT_HASH_LEN);
        return VT_OK;
    }
    uint8_t hdr[8];
    memcpy(hdr, "VTOH", 4);
    vt_put_u32le(hdr + 4, n);
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, hdr, sizeof hdr);
    if (!e && n) e = vt_sha256_update(&c, th, (size_t)n * VT_HASH_LEN);
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

vt_err vt_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops, VT_ERR_ARG, "no operation %u", op_id);
    return vti_model_output_hash(m, op_id, out);
}

vt_err vti_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops + m->prog.n_eval, VT_ERR_ARG, "no operation %u", op_id);
    const vt_opdesc *o = &m->prog.op[op_id];
    uint8_t th[VT_MAX_OP_OUTPUTS][VT_HASH_LEN];
    VT_RETURN_ERROR_IF(o->n_out < 1 || o->n_out > VT_MAX_OP_OUTPUTS, VT_ERR_INTERNAL, "operation %u has %u outputs", op_id, o->n_out);
    for (uint32_t k = 0; k < o->n_out; k++) VT_FORWARD_IF_ERROR(vt_model_tensor_hash(m, o->out[k], th[k]));
    return vt_output_hash_of(o->n_out, (const uint8_t(*)[VT_HASH_LEN])th, out);
}

size_t vt_model_tensor_words(const vt_model *m, uint32_t t)
{
    if (t >= m->prog.n_tensors) return 0;
    const vt_tensor *d = &m->prog.t[t];
    return d->dtype == VT_DT_F64 ? 2 * d->n : d->n;
}

static uint32_t word_at(const void *w, size_t i)
{
    uint32_t v;
    memcpy(&v, (const uint8_t *)w + 4 * i, 4);
    return v;
}

static void word_put(void *w, size_t i, uint32_t v) { memcpy((uint8_t *)w + 4 * i, &v, 4); }

void vt_model_tensor_save(vt_model *m, uint32_t t, void *words)
{
    const vt_tensor *d = &m->prog.t[t];
    const uint8_t *p = vt_model_tensor(m, t, NULL);
    if (d->dtype == VT_DT_U8)
        for (size_t i = 0; i < d->n; i++) word_put(words, i, p[i]);
    else /* F32, I32: one word an element; F64: two, low half first (little-endian memory) */
        memcpy(words, p, vt_model_tensor_words(m, t) * 4);
}

vt_err vt_model_tensor_load(vt_model *m, uint32_t t, const void *words, size_t n)
{
    VT_RETURN_ERROR_IF(t >= m->prog.n_tensors, VT_ERR_MISMATCH, "no tensor %u", t);
    const vt_tensor *d = &m->prog.t[t];
    VT_RETURN_ERROR_IF(n != vt_model_tensor_words(m, t), VT_ERR_MISMATCH, "tensor %s needs %zu words, got %zu",
                       d->name, vt_model_tensor_words(m, t), n);
    uint8_t *p = vt_model_tensor(m, t, NULL);
    if (d->dtype == VT_DT_U8) {
        for (size_t i = 0; i < d->n; i++)
            VT_RETURN_ERROR_IF(word_at(words, i) > 255, VT_ERR_MISMATCH, "tensor %s: element %zu is %u, not a U8",
                               d->name, i, word_at(words, i));
        for (size_t i = 0; i < d->n; i++) p[i] = (uint8_t)word_at(words, i);
    } else {
        memcpy(p, words, n * 4);
    }
    return VT_OK;
}

vt_err vt_model_tensor_hashes(vt_model *m, uint8_t (*out)[VT_HASH_LEN])
{
    for (uint32_t t = 0; t < m->n_tensors; t++) VT_FORWARD_IF_ERROR(vt_model_tensor_hash(m, t, out[t]));
    return VT_OK;
}

vt_err vt_state_hash_of(uint64_t step, uint32_t n, const uint8_t (*th)[VT_HASH_LEN], uint8_t out[VT_HASH_LEN])
{
    uint8_t hdr[20];
    memcpy(hdr, "VTST", 4);
    vt_put_u32le(hdr + 4, 2);
    vt_put_u64le(hdr + 8, step);
    vt_put_u32le(hdr + 16, n);
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    vt_err e = vt_sha256_update(&c, hdr, sizeof hdr);
    if (!e && n) e = vt_sha256_update(&c, th, (size_t)n * VT_HASH_LEN);
    if (e) {
        vt_sha256_abort(&c);
        return e;
    }
    return vt_sha256_final(&c, out);
}

vt_err vt_model_state_hash(vt_model *m, uint8_t out[VT_HASH_LEN])
{
    VT_RETURN_ERROR_IF(m->sst != NULL, VT_ERR_INTERNAL,
                       "the optimiser state is sharded: its state hash is streamed to rank 0 (vt_model_shard_state_hash)");
    uint8_t (*th)[VT_HASH_LEN] = malloc(((size_t)m->n_tensors + 1) * VT_HASH_LEN);
    VT_RETURN_ERROR_IF(!th, VT_ERR_NOMEM, "out of memory");
    vt_err e = vt_model_tensor_hashes(m, th);
    if (!e) e = vt_state_hash_of(m->step, m->n_tensors, (const uint8_t(*)[VT_HASH_LEN])th, out);
    free(th);
    return e;
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

vt_err vt_program_describe(const vt_program *p, char **out)
{
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    VT_RETURN_ERROR_IF(!b, VT_ERR_NOMEM, "out of memory");
#define PUT(...)                                                                   \
    do {                                                                           \
        int n_ = snprintf(b + len, cap - len, __VA_ARGS__);                        \
        while (n_ >= 0 && (size_t)n_ >= cap - len) {                               \
            char *nb = realloc(b, cap *= 2);                                       \
            if (!nb) {                                                             \
                free(b);                                                           \
                VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");                    \
            }                                                                      \
            b = nb;                                                                \
            n_ = snprintf(b + len, cap - len, __VA_ARGS__);                        \
        }                                                                          \
        len += n_ > 0 ? (size_t)n_ : 0;                                            \
    } while (0)
    PUT("tensors (%u; ids 0..%u are the state)\n", p->n_tensors, p->n_state ? p->n_state - 1 : 0);
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        const vt_tensor *t = &p->t[i];
        PUT("  %4u  %-28s %-6s %-3s [", i, t->name, vt_tclass_name((vt_tclass)t->cls), vt_dtype_name((vt_dtype)t->dtype));
        for (uint32_t d = 0; d < t->rank; d++) PUT("%s%u", d ? ", " : "", t->shape[d]);
        PUT("]\n");
    }
    PUT("operations (%u)\n", p->n_ops);
    for (uint32_t j = 1; j <= p->n_ops + p->n_eval; j++) {
        if (j == p->n_ops + 1) PUT("evaluation pass (%u operations, not part of the step)\n", p->n_eval);
        const vt_opdesc *o = &p->op[j];
        const vt_opkind *k = vt_opkind_get(o->kind);
        PUT("  %4u  %-30s %-22s %s in", j, o->name, k ? k->name : "?", k && k->rounded ? "rounded" : "exact  ");
        for (uint32_t i = 0; i < o->n_in; i++) PUT(" %u", o->in[i]);
        PUT(" -> out");
        for (uint32_t i = 0; i < o->n_out; i++) PUT(" %u", o->out[i]);
        if (o->n_iarg) {
            PUT("  iarg");
            for (uint32_t i = 0; i < o->n_iarg; i++) PUT(" %lld", (long long)o->iarg[i]);
        }
        if (o->n_farg) {
            PUT("  farg");
            for (uint32_t i = 0; i < o->n_farg; i++) PUT(" %.17g", o->farg[i]);
        }
        PUT("\n");
    }
#undef PUT
    *out = b;
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
    case VT_OPK_BN_GAMMA_GRAD: case VT_OPK_BN_BACKWARD:
        return 1;
    default:
        return 0;
    }
}

static vt_err exec_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t s, uint32_t op_id)
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
    if (o->kind == VT_OPK_LOAD_BATCH) {
        vt_model_batch_indices(m, s);
        c.batch_idx = m->batch_idx;
    }
    return vt_opkind_get(o->kind)->exec(&c);
}

vt_err vti_model_exec(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t step, uint32_t op_id)
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops + m->prog.n_eval, VT_ERR_ARG, "no operation %u", op_id);
    vt_err e = exec_op(m, ds, rctx, step, op_id);
    if (!e && m->tamper) e = m->tamper(m->tamper_ctx, m, step, op_id);
    return e;
}

vt_err vt_model_exec_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t step, uint32_t op_id)
{
    VT_RETURN_ERROR_IF(op_id < 1 || op_id > m->prog.n_ops, VT_ERR_ARG, "no operation %u", op_id);
    return exec_op(m, ds, rctx, step, op_id);
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
            if (!e) e = exec_op(m, ds, rctx, s, op);
            if (!e) e = be->op_to_device(be->impl, m, op);
        }
        if (!e) e = be->run_end(be->impl, m, rctx);
    } else {
        for (uint32_t op = 1; op <= upto && !e; op++) {
            e = exec_op(m, ds, rctx, s, op);
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

/* ------------------------------------------------------------ evaluation */

vt_err vt_program_evaluate(const vt_program *p, const vt_dataset *ds, size_t max_examples, vt_eval_fwd fwd,
                           vt_eval_prob prob, void *ctx, double *acc)
{
    return vt_program_evaluate_pred(p, ds, max_examples, fwd, prob, ctx, acc, NULL);
}

vt_err vt_program_evaluate_pred(const vt_program *p, const vt_dataset *ds, size_t max_examples, vt_eval_fwd fwd,
                                vt_eval_prob prob, void *ctx, double *acc, uint32_t *pred)
{
    const vt_tensor *x = &p->t[p->input], *pr = &p->t[p->probs];
    size_t n = ds->n < max_examples || !max_examples ? ds->n : max_examples, B = x->shape[0], C = pr->shape[1],
           correct = 0;
    VT_RETURN_ERROR_IF(x->rank != 2 || pr->rank != 2 || x->dtype != VT_DT_F32 || pr->dtype != VT_DT_F32 ||
                           pr->shape[0] != x->shape[0],
                       VT_ERR_INTERNAL, "evaluation: the program's input and probabilities are not [B, d] and [B, C] F32");
    VT_RETURN_ERROR_IF(ds->d != x->shape[1], VT_ERR_ARG, "the dataset does not fit the model");
    VT_RETURN_ERROR_IF(n == 0, VT_ERR_ARG, "no examples to evaluate");
    size_t *idx = malloc(B * sizeof *idx);
    VT_RETURN_ERROR_IF(!idx, VT_ERR_NOMEM, "out of memory");
    vt_err e = VT_OK;
    for (size_t i0 = 0; i0 < n && !e; i0 += B) {
        for (size_t k = 0; k < B; k++) idx[k] = i0 + k < n ? i0 + k : 0; /* the last batch padded */
        e = fwd(ctx, idx, B);
        for (size_t k = 0; k < B && !e && i0 + k < n; k++) {
            size_t best = 0;
            for (size_t c = 1; c < C; c++)
                if (prob(ctx, k * C + c) > prob(ctx, k * C + best)) best = c;
            correct += best == ds->y[i0 + k];
            if (pred) pred[i0 + k] = (uint32_t)best;
        }
    }
    free(idx);
    VT_FORWARD_IF_ERROR(e);
    *acc = (double)correct / (double)n;
    return VT_OK;
}

typedef struct {
    vt_model *m;
    const vt_dataset *ds;
    vt_rctx rctx;
    vt_steplog log;
    uint8_t *lab;
} eval_ctx;

static vt_err eval_fwd(void *ctx, const size_t *idx, size_t B)
{
    eval_ctx *c = ctx;
    const vt_program *p = &c->m->prog;
    vt_err e = vt_data_batch(c->ds, idx, B, vt_model_tensor(c->m, p->input, NULL), c->lab);
    if (!e) e = vt_rctx_begin_step(&c->rctx, 1, &c->log);
    uint32_t first, last;
    vt_program_eval_range(p, &first, &last);
    for (uint32_t j = first; j <= last && !e; j++) e = exec_op(c->m, c->ds, &c->rctx, 1, j);
    return e;
}

static double eval_prob(void *ctx, size_t i)
{
    eval_ctx *c = ctx;
    return ((const float *)vt_model_tensor(c->m, c->m->prog.probs, NULL))[i];
}

vt_err vt_model_accuracy(vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc)
{
    return vt_model_predict(m, ds, max_examples, acc, NULL);
}

vt_err vt_model_predict(vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc, uint32_t *pred)
{
    eval_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m, c.ds = ds, c.lab = malloc(m->prog.t[m->prog.input].shape[0]); /* the batch vt_program_evaluate loads */
    VT_RETURN_ERROR_IF(!c.lab, VT_ERR_NOMEM, "out of memory");
    /* the forward pass of the step program, rounded to nearest with a log nobody reads */
    vt_bound_cfg bc = m->rcp.bound;
    bc.rounding = VT_ROUNDING_LOG;
    vt_steplog_init(&c.log, 0);
    vt_rctx_init(&c.rctx, VT_RMODE_RECORD, bc);
    vt_exec saved = m->exec;
    vt_exec_init(&m->exec, m->exec.order, bc, m->rcp.seed);
    vt_err e = vt_program_evaluate_pred(&m->prog, ds, max_examples, eval_fwd, eval_prob, &c, acc, pred);
    vt_exec_free(&m->exec);
    m->exec = saved;
    vt_steplog_free(&c.log);
    free(c.lab);
    return e;
}

/* ------------------------------------------------------------ text models */

/* The evaluation pass on the current tokens, every value RN32 of the exact result (the same bits
 * on every machine: the samples and losses below do not depend on who computes them). */
typedef struct {
    vt_rctx rctx;
    vt_steplog log;
    vt_exec saved;
} text_eval;

static void text_eval_begin(vt_model *m, text_eval *t)
{
    vt_bound_cfg bc = m->rcp.bound;
    bc.rounding = VT_ROUNDING_EXACT;
    bc.mode = VT_BOUND_PROVABLE;
    vt_steplog_init(&t->log, 0);
    vt_rctx_init(&t->rctx, VT_RMODE_RECORD, bc);
    t->saved = m->exec;
    vt_exec_init(&m->exec, m->exec.order, bc, m->rcp.seed);
}

static vt_err text_eval_run(vt_model *m, const vt_dataset *ds, text_eval *t)
{
    uint32_t first, last;
    vt_program_eval_range(&m->prog, &first, &last);
    vt_err e = vt_rctx_begin_step(&t->rctx, 1, &t->log);
    for (uint32_t j = first; j <= last && !e; j++) e = exec_op(m, ds, &t->rctx, 1, j);
    return e;
}

static void text_eval_end(vt_model *m, text_eval *t)
{
    vt_exec_free(&m->exec);
    m->exec = t->saved;
    vt_steplog_free(&t->log);
}

static vt_err text_shapes(const vt_model *m, size_t *B, size_t *T, size_t *V)
{
    const vt_program *p = &m->prog;
    const vt_tensor *x = &p->t[p->input], *pr = &p->t[p->probs];
    VT_RETURN_ERROR_IF(x->dtype != VT_DT_U8 || x->rank != 2 || pr->rank != 2 || pr->shape[0] != x->n, VT_ERR_ARG,
                       "the model is not a text model");
    *B = x->shape[0], *T = x->shape[1], *V = pr->shape[1];
    return VT_OK;
}

vt_err vt_model_text_loss(vt_model *m, const vt_dataset *ds, size_t max_windows, double *nats, size_t *positions)
{
    size_t B = 0, T = 0, V = 0;
    VT_FORWARD_IF_ERROR(text_shapes(m, &B, &T, &V));
    VT_RETURN_ERROR_IF(!ds->text || ds->n < T + 1, VT_ERR_ARG, "%s is not a text of more than %zu tokens", ds->name, T);
    VT_RETURN_ERROR_IF(ds->n_classes > V, VT_ERR_ARG, "%s has %u tokens in its vocabulary, the model %zu", ds->name,
                       ds->n_classes, V);
    size_t nw = (ds->n - 1) / T;
    if (max_windows && max_windows < nw) nw = max_windows;
    uint8_t *tok = vt_model_tensor(m, m->prog.input, NULL);
    const float *pr = vt_model_tensor(m, m->prog.probs, NULL);
    text_eval t;
    text_eval_begin(m, &t);
    double sum = 0;
    size_t cnt = 0;
    vt_err e = VT_OK;
    for (size_t w0 = 0; w0 < nw && !e; w0 += B) {
        for (size_t b = 0; b < B; b++) { /* window w0 + b: tokens [wT, wT + T), targets one later */
            size_t w = w0 + b < nw ? w0 + b : w0;
            memcpy(tok + b * T, ds->x + w * T, T);
        }
        e = text_eval_run(m, ds, &t);
        for (size_t b = 0; b < B && !e && w0 + b < nw; b++)
            for (size_t k = 0; k < T; k++) {
                double q = pr[(b * T + k) * V + ds->x[(w0 + b) * T + k + 1]];
                sum += -vt_log(q > 0x1p-149 ? q : 0x1p-149);
                cnt++;
            }
    }
    text_eval_end(m, &t);
    VT_FORWARD_IF_ERROR(e);
    *nats = sum / (double)cnt;
    if (positions) *positions = cnt;
    return VT_OK;
}

vt_err vt_model_sample(vt_model *m, uint64_t seed, const uint8_t *prompt, size_t np, size_t n, uint8_t *out)
{
    size_t B = 0, T = 0, V = 0;
    VT_FORWARD_IF_ERROR(text_shapes(m, &B, &T, &V));
    VT_RETURN_ERROR_IF(np == 0 || n > SIZE_MAX - np, VT_ERR_ARG, "sampling needs a prompt of at least one token");
    for (size_t i = 0; i < np; i++)
        VT_RETURN_ERROR_IF(prompt[i] >= V, VT_ERR_ARG, "prompt token %u is not in the vocabulary", prompt[i]);
    uint8_t *ctx = malloc(np + n);
    VT_RETURN_ERROR_IF(!ctx, VT_ERR_NOMEM, "out of memory");
    memcpy(ctx, prompt, np);
    uint8_t *tok = vt_model_tensor(m, m->prog.input, NULL);
    const float *pr = vt_model_tensor(m, m->prog.probs, NULL);
    text_eval t;
    text_eval_begin(m, &t);
    vt_err e = VT_OK;
    size_t len = np;
    for (size_t i = 0; i < n && !e; i++) {
        size_t c0 = len > T ? len - T : 0, cl = len - c0; /* the last (at most T) tokens, left-aligned */
        memset(tok, 0, B * T);
        memcpy(tok, ctx + c0, cl);
        e = text_eval_run(m, NULL, &t);
        if (e) break;
        /* inverse CDF of the next token's distribution at a 24-bit uniform draw (seed, purpose 6, i) */
        double u = vt_rand_unit(seed, 6, 0, i), acc = 0;
        const float *q = pr + (cl - 1) * V;
        size_t k = 0;
        for (; k + 1 < V; k++) {
            acc += q[k];
            if (u < acc) break;
        }
        ctx[len++] = (uint8_t)k;
        out[i] = (uint8_t)k;
    }
    text_eval_end(m, &t);
    free(ctx);
    return e;
}
