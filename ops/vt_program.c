#include "vt_program.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_ops.h"

size_t vt_dtype_size(vt_dtype d)
{
    static const size_t sz[VT_DT_COUNT] = {4, 8, 1, 4};
    return (unsigned)d < VT_DT_COUNT ? sz[d] : 0;
}

const char *vt_dtype_name(vt_dtype d)
{
    static const char *const nm[VT_DT_COUNT] = {"F32", "F64", "U8", "I32"};
    return (unsigned)d < VT_DT_COUNT ? nm[d] : "?";
}

const char *vt_tclass_name(vt_tclass c)
{
    static const char *const nm[VT_TC_COUNT] = {"param", "opt", "buffer", "input", "act", "grad"};
    return (unsigned)c < VT_TC_COUNT ? nm[c] : "?";
}

void vt_program_init(vt_program *p) { memset(p, 0, sizeof *p); }

void vt_program_free(vt_program *p)
{
    for (uint32_t i = 0; i < p->n_tensors; i++) free(p->t[i].name);
    for (uint32_t j = 1; j <= p->n_ops + p->n_eval; j++) {
        vt_opdesc *o = &p->op[j];
        free(o->in), free(o->out), free(o->iarg), free(o->farg), free(o->name);
    }
    free(p->t);
    free(p->op);
    memset(p, 0, sizeof *p);
}

static char *vfmt(const char *fmt, va_list ap)
{
    char buf[128];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    return n < 0 || (size_t)n >= sizeof buf ? NULL : strdup(buf);
}

uint32_t vt_prog_tensor(vt_program *p, vt_tclass cls, vt_dtype dt, uint32_t rank, const uint32_t *shape,
                        const char *fmt, ...)
{
    if (p->bad || rank > VT_MAX_RANK || (unsigned)cls >= VT_TC_COUNT || (unsigned)dt >= VT_DT_COUNT ||
        p->n_tensors >= UINT32_MAX - 1) {
        p->bad = 1;
        return UINT32_MAX;
    }
    if (p->n_tensors == p->cap_tensors) {
        uint32_t cap = p->cap_tensors ? 2 * p->cap_tensors : 32;
        vt_tensor *t = realloc(p->t, (size_t)cap * sizeof *t);
        if (!t) {
            p->bad = 1;
            return UINT32_MAX;
        }
        p->t = t, p->cap_tensors = cap;
    }
    vt_tensor *t = &p->t[p->n_tensors];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    t->name = vfmt(fmt, ap);
    va_end(ap);
    if (!t->name) {
        p->bad = 1;
        return UINT32_MAX;
    }
    t->cls = (uint8_t)cls, t->dtype = (uint8_t)dt, t->rank = (uint8_t)rank;
    t->n = 1;
    for (uint32_t d = 0; d < rank; d++) {
        t->shape[d] = shape[d];
        if (shape[d] == 0 || t->n > SIZE_MAX / 16 / shape[d]) p->bad = 1;
        else t->n *= shape[d];
    }
    return p->n_tensors++;
}

void vt_prog_init_he(vt_program *p, uint32_t t, uint32_t fan_in)
{
    if (t >= p->n_tensors || fan_in == 0) {
        p->bad = 1;
        return;
    }
    p->t[t].init = VT_INIT_HE_UNIFORM;
    p->t[t].fan_in = fan_in;
}

void vt_prog_init_one(vt_program *p, uint32_t t)
{
    if (t >= p->n_tensors) p->bad = 1;
    else p->t[t].init = VT_INIT_ONE;
}

static void *dup_arr(const void *a, size_t n, size_t sz, int *bad)
{
    if (!n) return NULL;
    void *d = malloc(n * sz);
    if (!d) *bad = 1;
    else memcpy(d, a, n * sz);
    return d;
}

uint32_t vt_prog_op(vt_program *p, uint16_t kind, const uint32_t *in, uint32_t n_in, const uint32_t *out,
                    uint32_t n_out, const int64_t *iarg, uint32_t n_iarg, const double *farg, uint32_t n_farg,
                    const char *fmt, ...)
{
    if (p->bad || p->n_ops >= UINT32_MAX - 2) {
        p->bad = 1;
        return 0;
    }
    if (p->n_ops + 1 >= p->cap_ops) {
        uint32_t cap = p->cap_ops ? 2 * p->cap_ops : 64;
        vt_opdesc *o = realloc(p->op, (size_t)cap * sizeof *o);
        if (!o) {
            p->bad = 1;
            return 0;
        }
        p->op = o, p->cap_ops = cap;
    }
    vt_opdesc *o = &p->op[++p->n_ops];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->n_in = n_in, o->n_out = n_out, o->n_iarg = n_iarg, o->n_farg = n_farg;
    o->in = dup_arr(in, n_in, sizeof *in, &p->bad);
    o->out = dup_arr(out, n_out, sizeof *out, &p->bad);
    o->iarg = dup_arr(iarg, n_iarg, sizeof *iarg, &p->bad);
    o->farg = dup_arr(farg, n_farg, sizeof *farg, &p->bad);
    va_list ap;
    va_start(ap, fmt);
    o->name = vfmt(fmt, ap);
    va_end(ap);
    if (!o->name) p->bad = 1;
    return p->n_ops;
}

void vt_prog_eval_begin(vt_program *p)
{
    if (p->eval_first || p->n_eval) p->bad = 1;
    p->eval_first = p->n_ops + 1;
}

void vt_prog_eval_end(vt_program *p)
{
    if (!p->eval_first || p->n_ops < p->eval_first) {
        p->bad = 1;
        return;
    }
    p->n_eval = p->n_ops - p->eval_first + 1;
    p->n_ops = p->eval_first - 1;
}

void vt_program_eval_range(const vt_program *p, uint32_t *first, uint32_t *last)
{
    if (p->n_eval) *first = p->n_ops + 1, *last = p->n_ops + p->n_eval;
    else *first = p->fwd_first, *last = p->fwd_last;
}

uint32_t vt_program_find(const vt_program *p, const char *name)
{
    for (uint32_t i = 0; i < p->n_tensors; i++)
        if (strcmp(p->t[i].name, name) == 0) return i;
    return UINT32_MAX;
}

int vt_op_writes(const vt_opdesc *o, uint32_t t)
{
    for (uint32_t k = 0; k < o->n_out; k++)
        if (o->out[k] == t) return 1;
    return 0;
}

uint32_t vt_program_producer(const vt_program *p, uint32_t j, uint32_t t, int *prev)
{
    *prev = 0;
    for (uint32_t q = j; q-- > 1;)
        if (vt_op_writes(&p->op[q], t)) return q;
    *prev = 1;
    for (uint32_t q = p->n_ops + 1; q-- > 1;)
        if (vt_op_writes(&p->op[q], t)) return q;
    *prev = 0;
    return 0;
}

/* No operation strictly between producer q and reader j (wrapping into the next step when prev)
 * writes an output of q. */
static vt_err check_dataflow(const vt_program *p, uint32_t j)
{
    const vt_opdesc *o = &p->op[j];
    for (uint32_t k = 0; k < o->n_in; k++) {
        int prev;
        uint32_t t = o->in[k], q = vt_program_producer(p, j, t, &prev);
        VT_RETURN_ERROR_IF(t >= p->n_state && (q == 0 || prev), VT_ERR_INTERNAL,
                           "program: operation \"%s\" reads %s before the step writes it", o->name, p->t[t].name);
        if (!q) continue;
        const vt_opdesc *po = &p->op[q];
        uint32_t n_between = prev ? p->n_ops - q + j - 1 : j - q - 1;
        for (uint32_t d = 1; d <= n_between; d++) {
            uint32_t r = (q - 1 + d) % p->n_ops + 1;
            for (uint32_t u = 0; u < po->n_out; u++)
                VT_RETURN_ERROR_IF(vt_op_writes(&p->op[r], po->out[u]), VT_ERR_INTERNAL,
                                   "program: \"%s\" overwrites %s between \"%s\" and \"%s\"", p->op[r].name,
                                   p->t[po->out[u]].name, po->name, o->name);
        }
    }
    return VT_OK;
}

/* The arbiter derives the state of a step's end from the agreed output hashes of the last writers
 * of the state tensors (game/vt_game_state.c), and a trainer restoring a checkpoint can send only state
 * values: so an operation with several outputs that writes a state tensor writes only state
 * tensors, none of which a later operation of the step writes again. */
static vt_err check_state_writers(const vt_program *p)
{
    for (uint32_t j = 1; j <= p->n_ops; j++) {
        const vt_opdesc *o = &p->op[j];
        int state = 0;
        for (uint32_t u = 0; u < o->n_out; u++) state |= o->out[u] < p->n_state;
        if (o->n_out < 2 || !state) continue;
        for (uint32_t u = 0; u < o->n_out; u++) {
            VT_RETURN_ERROR_IF(o->out[u] >= p->n_state, VT_ERR_INTERNAL,
                               "program: \"%s\" writes state and non-state tensors (%s)", o->name, p->t[o->out[u]].name);
            for (uint32_t r = j + 1; r <= p->n_ops; r++)
                VT_RETURN_ERROR_IF(vt_op_writes(&p->op[r], o->out[u]), VT_ERR_INTERNAL,
                                   "program: \"%s\" writes %s again after \"%s\"", p->op[r].name,
                                   p->t[o->out[u]].name, o->name);
        }
    }
    return VT_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

vt_err vt_program_finish(vt_program *p)
{
    VT_RETURN_ERROR_IF(p->bad, VT_ERR_NOMEM, "building the step program failed (out of memory or a bad tensor)");
    /* the state: classes PARAM, OPT, BUFFER in this order, first in the table, FP32 */
    uint32_t ns = 0;
    while (ns < p->n_tensors && p->t[ns].cls <= VT_TC_BUFFER) ns++;
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        const vt_tensor *t = &p->t[i];
        VT_RETURN_ERROR_IF(i >= ns && t->cls <= VT_TC_BUFFER, VT_ERR_INTERNAL,
                           "program: state tensor %s comes after non-state tensors", t->name);
        VT_RETURN_ERROR_IF(i > 0 && i < ns && t->cls < p->t[i - 1].cls, VT_ERR_INTERNAL,
                           "program: state tensor %s is out of class order", t->name);
        VT_RETURN_ERROR_IF(i < ns && t->dtype != VT_DT_F32, VT_ERR_INTERNAL, "program: state tensor %s is not F32",
                           t->name);
    }
    p->n_state = ns;
    /* arenas: state tensors packed (the state is one FP32 array); the others 64-byte aligned */
    memset(p->arena_bytes, 0, sizeof p->arena_bytes);
    size_t soff = 0;
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        vt_tensor *t = &p->t[i];
        size_t bytes = t->n * vt_dtype_size((vt_dtype)t->dtype);
        if (i < ns) {
            t->off = soff;
            soff += bytes;
        } else {
            size_t *a = &p->arena_bytes[t->cls];
            t->off = (*a + 63) & ~(size_t)63;
            *a = t->off + bytes;
        }
    }
    p->state_floats = soff / 4;
    for (int c = 0; c <= VT_TC_BUFFER; c++) p->arena_bytes[c] = 0;
    p->arena_bytes[VT_TC_PARAM] = soff; /* PARAM, OPT and BUFFER share the state arena */
    /* unique names */
    const char **names = malloc((p->n_tensors ? p->n_tensors : 1) * sizeof *names);
    VT_RETURN_ERROR_IF(!names, VT_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < p->n_tensors; i++) names[i] = p->t[i].name;
    qsort(names, p->n_tensors, sizeof *names, cmp_names);
    for (uint32_t i = 1; i < p->n_tensors; i++)
        if (strcmp(names[i], names[i - 1]) == 0) {
            vt_set_error(VT_ERR_INTERNAL, "program: two tensors are named %s", names[i]);
            free(names);
            return VT_ERR_INTERNAL;
        }
    free(names);
    VT_RETURN_ERROR_IF(p->eval_first && (!p->n_eval || p->eval_first != p->n_ops + 1), VT_ERR_INTERNAL,
                       "program: the evaluation pass was begun and not ended");
    for (uint32_t j = 1; j <= p->n_ops + p->n_eval; j++) VT_FORWARD_IF_ERROR(vt_op_check(p, &p->op[j]));
    for (uint32_t j = 1; j <= p->n_ops; j++) VT_FORWARD_IF_ERROR(check_dataflow(p, j));
    VT_FORWARD_IF_ERROR(check_state_writers(p));
    VT_RETURN_ERROR_IF(p->loss >= p->n_tensors || p->input >= p->n_tensors || p->labels >= p->n_tensors ||
                           p->probs >= p->n_tensors || p->fwd_first < 1 || p->fwd_last < p->fwd_first ||
                           p->fwd_last > p->n_ops,
                       VT_ERR_INTERNAL, "program: loss, input, labels, probabilities or forward pass not set");
    const vt_tensor *l = &p->t[p->loss]; /* vt_model_loss reads one F32 */
    VT_RETURN_ERROR_IF(l->dtype != VT_DT_F32 || l->n != 1, VT_ERR_INTERNAL, "program: the loss %s is not one F32",
                       l->name);
    return VT_OK;
}
