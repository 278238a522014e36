/* vt_shard_state.c - the sharded optimiser state (--shard-state; docs/distributed.md "Sharded
 * optimiser state"): each rank holds and updates 1/N of the optimiser state and of the parameters,
 * then the ranks allgather the updated parameters. The optimiser's kinds are elementwise, so each
 * element's update is the same function of the same values whichever rank computes it: the bits
 * are the unsharded run's. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vt_model_int.h"

int vti_opt_kind(uint16_t kind)
{
    return kind == VT_OPK_SGD_VELOCITY || kind == VT_OPK_SGD_APPLY || kind == VT_OPK_ADAM_MOMENTS ||
           kind == VT_OPK_ADAM_APPLY || kind == VT_OPK_ADAM_SCALED || kind == VT_OPK_ADAMW;
}

/* the tensors an optimiser operation applies elementwise: its first inputs (two for SGD's update:
 * weights, velocity; three for the others: weights or gradient and the moments; then come the
 * scalars), every output */
static uint32_t elementwise(const vt_opdesc *o, uint32_t *ids)
{
    uint32_t n = 0, nin = o->kind == VT_OPK_SGD_APPLY ? 2 : 3;
    for (uint32_t k = 0; k < o->n_in && k < nin; k++) ids[n++] = o->in[k];
    for (uint32_t k = 0; k < o->n_out && n < 3 + VT_MAX_OP_OUTPUTS; k++) ids[n++] = o->out[k];
    return n;
}

/* owner[t]: the parameter tensor t follows (every parameter itself); the optimiser's operations
 * link their elementwise tensors. Refused when the program's optimiser cannot be cut so. */
static vt_err find_owners(const vt_program *p, uint32_t *owner)
{
    for (uint32_t t = 0; t < p->n_tensors; t++) owner[t] = p->t[t].cls == VT_TC_PARAM ? t : UINT32_MAX;
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t j = 1; j <= p->n_ops; j++) {
            const vt_opdesc *o = &p->op[j];
            if (!vti_opt_kind(o->kind)) continue;
            uint32_t ids[3 + VT_MAX_OP_OUTPUTS], n = elementwise(o, ids), q = UINT32_MAX;
            for (uint32_t k = 0; k < n && q == UINT32_MAX; k++) q = owner[ids[k]];
            if (q == UINT32_MAX) continue;
            for (uint32_t k = 0; k < n; k++) {
                const vt_tensor *d = &p->t[ids[k]];
                VT_RETURN_ERROR_IF(owner[ids[k]] != UINT32_MAX && owner[ids[k]] != q, VT_ERR_UNSUPPORTED,
                                   "--shard-state: operation \"%s\" updates %s with the parameters of two tensors",
                                   o->name, d->name);
                VT_RETURN_ERROR_IF(d->n != p->t[q].n || d->dtype != VT_DT_F32 || d->cls == VT_TC_BUFFER,
                                   VT_ERR_UNSUPPORTED, "--shard-state: operation \"%s\": %s is not elementwise with %s",
                                   o->name, d->name, p->t[q].name);
                if (owner[ids[k]] == UINT32_MAX) owner[ids[k]] = q, changed = 1;
            }
        }
    }
    for (uint32_t t = 0; t < p->n_state; t++)
        VT_RETURN_ERROR_IF(p->t[t].cls == VT_TC_OPT && owner[t] == UINT32_MAX, VT_ERR_UNSUPPORTED,
                           "--shard-state: the optimiser state %s follows no parameter", p->t[t].name);
    /* the optimiser state is read and written by the optimiser's operations alone */
    for (uint32_t j = 1; j <= p->n_ops + p->n_eval; j++) {
        const vt_opdesc *o = &p->op[j];
        if (vti_opt_kind(o->kind)) continue;
        for (uint32_t k = 0; k < o->n_in + o->n_out; k++) {
            uint32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];
            VT_RETURN_ERROR_IF(p->t[t].cls == VT_TC_OPT, VT_ERR_UNSUPPORTED,
                               "--shard-state: operation \"%s\" uses the optimiser state %s", o->name, p->t[t].name);
        }
    }
    return VT_OK;
}

void vti_sstate_range(const vt_sstate *s, const vt_program *p, uint32_t t, int r, size_t *lo, size_t *hi)
{
    *lo = 0, *hi = p->t[t].n;
    uint32_t q = s->owner[t];
    if (q == UINT32_MAX) return;
    size_t o = p->t[q].off / 4, n = p->t[q].n, a = s->plo[r], b = s->plo[r + 1];
    *lo = a <= o ? 0 : a - o < n ? a - o : n;
    *hi = b <= o ? 0 : b - o < n ? b - o : n;
    if (*hi < *lo) *hi = *lo;
}

void vti_sstate_free(vt_sstate *s)
{
    if (!s) return;
    if (s->state_map) munmap(s->state_map, s->map_bytes);
    free(s->plo), free(s->pbytes), free(s->owner), free(s->lo), free(s->hi), free(s->tt), free(s->send);
    free(s);
}

vt_err vti_sstate_plan(const vt_program *p, vt_comm *comm, int rank, int size, vt_sstate **out)
{
    *out = NULL;
    VT_RETURN_ERROR_IF(size < 1 || rank < 0 || rank >= size, VT_ERR_ARG, "rank %d of %d", rank, size);
    vt_sstate *s = calloc(1, sizeof *s);
    VT_RETURN_ERROR_IF(!s, VT_ERR_NOMEM, "out of memory");
    size_t nt = p->n_tensors ? p->n_tensors : 1;
    s->comm = comm, s->rank = rank, s->size = size;
    s->plo = calloc((size_t)size + 1, sizeof *s->plo), s->pbytes = calloc((size_t)size, sizeof *s->pbytes);
    s->owner = calloc(nt, sizeof *s->owner), s->lo = calloc(nt, sizeof *s->lo), s->hi = calloc(nt, sizeof *s->hi);
    s->tt = calloc(nt, sizeof *s->tt);
    if (!s->plo || !s->pbytes || !s->owner || !s->lo || !s->hi || !s->tt) {
        vti_sstate_free(s);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    vt_err e = find_owners(p, s->owner);
    if (e) {
        vti_sstate_free(s);
        return e;
    }
    /* the layout: parameters, optimiser state, buffers (vt_program_finish) */
    s->opt_first = s->opt_end = p->state_floats;
    for (uint32_t t = 0; t < p->n_state; t++) {
        size_t a = p->t[t].off / 4, b = a + p->t[t].n;
        if (p->t[t].cls == VT_TC_PARAM) s->n_param = b > s->n_param ? b : s->n_param;
        if (p->t[t].cls == VT_TC_OPT) {
            s->opt_first = a < s->opt_first ? a : s->opt_first;
            s->opt_end = s->opt_end == p->state_floats || b > s->opt_end ? b : s->opt_end;
        }
    }
    if (s->opt_first == p->state_floats) s->opt_end = s->opt_first; /* no optimiser state */
    for (int r = 0; r <= size; r++) /* floor(n_param r / size) without overflow */
        s->plo[r] = s->n_param / (size_t)size * (size_t)r + s->n_param % (size_t)size * (size_t)r / (size_t)size;
    for (int r = 0; r < size; r++) {
        s->pbytes[r] = (s->plo[r + 1] - s->plo[r]) * sizeof(float);
        size_t own = 0;
        for (uint32_t t = 0; t < p->n_state; t++)
            if (p->t[t].cls == VT_TC_OPT) {
                size_t lo, hi;
                vti_sstate_range(s, p, t, r, &lo, &hi);
                own += hi - lo;
            }
        if (r == rank) s->opt_own = own;
        s->opt_max = own > s->opt_max ? own : s->opt_max;
    }
    /* the optimiser operations' table: the owned tensors cut to this rank's elements */
    memcpy(s->tt, p->t, p->n_tensors * sizeof *s->tt);
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        vti_sstate_range(s, p, t, rank, &s->lo[t], &s->hi[t]);
        if (s->owner[t] == UINT32_MAX) continue;
        vt_tensor *d = &s->tt[t];
        d->n = s->hi[t] - s->lo[t];
        d->off += s->lo[t] * sizeof(float);
        d->rank = 1;
        memset(d->shape, 0, sizeof d->shape);
        d->shape[0] = (uint32_t)d->n;
    }
    s->sprog = *p;
    s->sprog.t = s->tt;
    *out = s;
    return VT_OK;
}

vt_err vti_sstate_map(vt_sstate *s, size_t state_bytes)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    s->map_bytes = (state_bytes + page - 1) / page * page;
    if (!s->map_bytes) s->map_bytes = page;
    void *a = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    VT_RETURN_ERROR_IF(a == MAP_FAILED, VT_ERR_NOMEM, "out of memory mapping the state (%zu bytes)", s->map_bytes);
    s->state_map = a;
    return VT_OK;
}

/* The bytes of the optimiser state's region that no needed value touches, page by page: handed
 * back (MADV_DONTNEED) and closed (PROT_NONE). */
static void opt_pages(vt_model *m)
{
    vt_sstate *s = m->sst;
    const vt_program *p = &m->prog;
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    uint8_t *base = (uint8_t *)s->state_map;
    size_t need_end = s->opt_first * 4; /* bytes below are needed (the parameters) */
    for (uint32_t t = 0; t <= p->n_state; t++) {
        size_t a, b; /* the next needed bytes: an owned range, or the buffers after the optimiser state */
        if (t < p->n_state && p->t[t].cls != VT_TC_OPT) continue;
        if (t == p->n_state) {
            a = s->opt_end * 4, b = s->map_bytes;
        } else {
            if (s->hi[t] == s->lo[t]) continue;
            a = p->t[t].off + s->lo[t] * 4, b = p->t[t].off + s->hi[t] * 4;
        }
        size_t g0 = (need_end + page - 1) / page * page, g1 = a / page * page; /* whole pages between */
        if (g1 > g0) {
            madvise(base + g0, g1 - g0, MADV_DONTNEED);
            mprotect(base + g0, g1 - g0, PROT_NONE);
        }
        need_end = b;
    }
}

int vt_model_sharded(const vt_model *m) { return m->sst != NULL; }

void vt_model_shard_release(vt_model *m)
{
    if (!m->sst) return;
    opt_pages(m);
}

/* the largest optimiser tensor's values (at least 1) */
static size_t opt_max_n(const vt_program *p)
{
    size_t nmax = 1;
    for (uint32_t t = 0; t < p->n_state; t++)
        if (p->t[t].cls == VT_TC_OPT && p->t[t].n > nmax) nmax = p->t[t].n;
    return nmax;
}

/* The block counts of an exchange of optimiser tensor t between rank 0 and every rank: rank 0's
 * counts[r] = rank r's slice bytes (own: whether rank 0's own slice is in it), another rank's
 * counts[0] = its slice bytes, the rest 0. */
static void slice_counts(const vt_sstate *s, const vt_program *p, uint32_t t, int own, size_t *counts)
{
    memset(counts, 0, (size_t)s->size * sizeof *counts);
    for (int r = 0; r < s->size; r++) {
        size_t lo, hi;
        vti_sstate_range(s, p, t, r, &lo, &hi);
        if (s->rank == 0 && (r > 0 || own)) counts[r] = (hi - lo) * sizeof(float);
        if (s->rank != 0 && r == s->rank) counts[0] = (hi - lo) * sizeof(float);
    }
}

vt_err vt_model_shard_stream_out(vt_model *m, vt_state_sink sink, void *ctx, uint8_t out[VT_HASH_LEN])
{
    vt_sstate *s = m->sst;
    const vt_program *p = &m->prog;
    VT_RETURN_ERROR_IF(!s, VT_ERR_INTERNAL, "the optimiser state is not sharded");
    const int root = s->rank == 0;
    uint8_t (*th)[VT_HASH_LEN] = malloc(((size_t)p->n_state + 1) * VT_HASH_LEN);
    size_t *sb = calloc((size_t)s->size, sizeof *sb), *rb = calloc((size_t)s->size, sizeof *rb);
    float *buf = root ? malloc(opt_max_n(p) * sizeof *buf) : NULL;
    vt_err e = !th || !sb || !rb || (root && !buf) ? vt_set_error(VT_ERR_NOMEM, "out of memory streaming the state") : VT_OK;
    /* every rank takes part in every exchange, whatever it ran into (no rank is left waiting) */
    for (uint32_t t = 0; t < p->n_state; t++) {
        const float *vals = m->state + p->t[t].off / 4;
        if (p->t[t].cls == VT_TC_OPT) { /* tensor t's slices in rank order (their elements' order) to rank 0 */
            if (sb && rb) {
                slice_counts(s, p, t, 1, rb);
                memset(sb, 0, (size_t)s->size * sizeof *sb);
                sb[0] = (s->hi[t] - s->lo[t]) * sizeof(float);
                if (!root) memset(rb, 0, (size_t)s->size * sizeof *rb);
            }
            vt_err ex = sb && rb ? vt_dist_alltoallv(s->comm, vals + s->lo[t], sb, root ? (void *)buf : NULL, rb)
                                 : VT_ERR_NOMEM;
            if (!e) e = ex;
            vals = buf;
        }
        if (root && !e) e = vt_sha256(vals, p->t[t].n * sizeof(float), th[t]);
        if (root && !e && sink) e = sink(ctx, vals, p->t[t].n);
    }
    if (root && !e) e = vt_state_hash_of(m->step, p->n_state, (const uint8_t(*)[VT_HASH_LEN])th, out);
    free(th), free(sb), free(rb), free(buf);
    return e;
}

vt_err vt_model_shard_state_hash(vt_model *m, uint8_t out[VT_HASH_LEN])
{
    return vt_model_shard_stream_out(m, NULL, NULL, out);
}

vt_err vt_model_shard_stream_in(vt_model *m, uint64_t step, vt_state_source src, void *ctx)
{
    vt_sstate *s = m->sst;
    const vt_program *p = &m->prog;
    VT_RETURN_ERROR_IF(!s, VT_ERR_INTERNAL, "the optimiser state is not sharded");
    const int root = s->rank == 0;
    size_t *cnt = calloc(2 * (size_t)s->size, sizeof *cnt), *none = cnt ? cnt + s->size : NULL;
    float *buf = root ? malloc(opt_max_n(p) * sizeof *buf) : NULL;
    vt_err e = !cnt || (root && !buf) ? vt_set_error(VT_ERR_NOMEM, "out of memory loading the state") : VT_OK;
    for (uint32_t t = 0; t < p->n_state; t++) {
        float *base = m->state + p->t[t].off / 4;
        if (p->t[t].cls != VT_TC_OPT) { /* parameters and buffers: rank 0's place, broadcast below */
            if (root && !e) e = src(ctx, base, p->t[t].n);
            continue;
        }
        if (root && !e) e = src(ctx, buf, p->t[t].n);
        size_t lo1 = 0, hi1 = 0; /* rank 1's slice begins where rank 0's ends */
        vti_sstate_range(s, p, t, 1, &lo1, &hi1);
        if (root && !e) memcpy(base + s->lo[t], buf + s->lo[t], (s->hi[t] - s->lo[t]) * sizeof(float));
        if (cnt) slice_counts(s, p, t, 0, cnt);
        vt_err ex = !cnt ? VT_ERR_NOMEM
                    : root ? vt_dist_alltoallv(s->comm, buf + lo1, cnt, NULL, none)
                           : vt_dist_alltoallv(s->comm, NULL, none, base + s->lo[t], cnt);
        if (!e) e = ex;
    }
    vt_err eb = vt_dist_bcast(s->comm, m->state, s->opt_first * sizeof(float), 0);
    if (!eb && m->n_state > s->opt_end)
        eb = vt_dist_bcast(s->comm, m->state + s->opt_end, (m->n_state - s->opt_end) * sizeof(float), 0);
    if (!e) e = eb;
    if (!e) m->step = step;
    free(cnt), free(buf);
    return e;
}

vt_err vt_model_state_hash_read(const vt_model *m, uint64_t step, vt_state_source src, void *ctx,
                                uint8_t out[VT_HASH_LEN])
{
    const vt_program *p = &m->prog;
    enum { CHUNK = 65536 };
    float *buf = malloc(CHUNK * sizeof *buf);
    uint8_t (*th)[VT_HASH_LEN] = malloc(((size_t)p->n_state + 1) * VT_HASH_LEN);
    vt_err e = !buf || !th ? vt_set_error(VT_ERR_NOMEM, "out of memory hashing a state") : VT_OK;
    for (uint32_t t = 0; t < p->n_state && !e; t++) {
        vt_sha256_ctx c;
        if ((e = vt_sha256_init(&c))) break;
        for (size_t i = 0; i < p->t[t].n && !e; i += CHUNK) {
            size_t k = p->t[t].n - i < CHUNK ? p->t[t].n - i : CHUNK;
            e = src(ctx, buf, k);
            if (!e) e = vt_sha256_update(&c, buf, k * sizeof(float));
        }
        if (e) vt_sha256_abort(&c);
        else e = vt_sha256_final(&c, th[t]);
    }
    if (!e) e = vt_state_hash_of(step, p->n_state, (const uint8_t(*)[VT_HASH_LEN])th, out);
    free(buf), free(th);
    return e;
}

vt_err vti_sstate_allgather_params(vt_model *m)
{
    vt_sstate *s = m->sst;
    /* the FP64 scratch is free between steps; a buffer of its own where it is too small */
    void *buf = s->send ? (void *)s->send : (void *)m->x64;
    memcpy(buf, m->state + s->plo[s->rank], s->pbytes[s->rank]);
    return vt_dist_allgatherv(s->comm, buf, s->pbytes, m->state);
}

vt_err vt_model_replica_hash(vt_model *m, uint8_t out[VT_HASH_LEN])
{
    uint8_t (*th)[VT_HASH_LEN] = malloc(((size_t)m->n_tensors + 1) * VT_HASH_LEN);
    VT_RETURN_ERROR_IF(!th, VT_ERR_NOMEM, "out of memory");
    uint32_t n = 0;
    vt_err e = VT_OK;
    for (uint32_t t = 0; t < m->n_tensors && !e; t++)
        if (m->prog.t[t].cls != VT_TC_OPT) e = vt_model_tensor_hash(m, t, th[n++]);
    if (!e) e = vt_state_hash_of(m->step, n, (const uint8_t(*)[VT_HASH_LEN])th, out);
    free(th);
    return e;
}
