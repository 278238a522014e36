/* vt_fam_loader.c - the loaders: the family that produces a step's inputs from the data set and the step number
 * (LOAD_BATCH: a batch of examples; LOAD_WINDOWS: random text windows; SCHEDULE: the step count and
 * the learning rate). Exact: values are copied or computed from integers, never rounded.
 * Each kind's check, exec and cost, named by its stem in the list (vt_kinds.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_gpt.h"
#include "../kernels/vt_kernels.h"
#include "../kernels/vt_math.h"
#include "vt_ops_int.h"
#include "vt_philox.h"
#include "vt_philox_hd.h"

#define VT_RNG_WINDOWS 5 /* the Philox stream of the text windows (vt_philox.h lists the others) */

/* ------------------------------------------------------------ LOAD_BATCH */

vt_err vti_load_batch_input_check(const vt_program *p, const vt_opdesc *o)
{
    int64_t B = o->iarg[0];
    const vt_tensor *x = T(p, o->out[0]);
    VT_RETURN_ERROR_IF(B < 1 || x->rank != 2 || x->shape[0] != (uint64_t)B || x->dtype != VT_DT_F32, VT_ERR_INTERNAL,
                       "program: \"%s\": the batch is not [B, d] F32", o->name);
    return VT_OK;
}

vt_err vti_load_batch_check(const vt_program *p, const vt_opdesc *o)
{
    VT_FORWARD_IF_ERROR(vti_load_batch_input_check(p, o));
    return want(p, o, o->out[1], VT_DT_U8, (size_t)o->iarg[0], "labels");
}

vt_err vti_load_batch_input(vt_opctx *c)
{
    VT_RETURN_ERROR_IF(!c->ds, VT_ERR_ARG, "loading a batch needs the dataset");
    const vt_tensor *x = T(c->prog, c->o->out[0]);
    VT_RETURN_ERROR_IF(c->ds->d != x->shape[1], VT_ERR_ARG, "the dataset's examples have %u values, the program %u",
                       c->ds->d, x->shape[1]);
    VT_RETURN_ERROR_IF(!c->batch_idx, VT_ERR_INTERNAL, "loading a batch needs the step's example indices");
    return vt_data_batch(c->ds, c->batch_idx, (size_t)c->o->iarg[0], OUT(0), NULL);
}

vt_err vti_load_batch_exec(vt_opctx *c)
{
    VT_FORWARD_IF_ERROR(vti_load_batch_input(c));
    VT_RETURN_ERROR_IF(c->ds->yt, VT_ERR_ARG, "the data set %s has float targets, not class labels: load_batch_targets "
                       "loads them", c->ds->name);
    uint8_t *y = (uint8_t *)OUT(1);
    for (size_t j = 0; j < (size_t)c->o->iarg[0]; j++) y[j] = c->ds->y[c->batch_idx[j]];
    return VT_OK;
}

void vti_load_batch_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = (double)T(p, o->out[0])->n * 4 + (double)T(p, o->out[1])->n;
}

/* ------------------------------------------------------------ SCHEDULE */
/* iarg: schedule kind, warmup, decay_every, steps; farg: lr, decay_factor, final_lr_factor */

vt_err vti_schedule_check(const vt_program *p, const vt_opdesc *o)
{
    VT_RETURN_ERROR_IF(o->iarg[0] < 0 || o->iarg[0] > VT_SCHED_COSINE || o->iarg[1] < 0 || o->iarg[2] < 0 ||
                           o->iarg[3] < 1,
                       VT_ERR_INTERNAL, "program: \"%s\": bad schedule arguments", o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_F64, 1, "step count"));
    return want(p, o, o->out[1], VT_DT_F64, 1, "learning rate");
}

/* lr(s): the warm-up, then the schedule (vt_ops.h) */
double vt_schedule_lr(const vt_schedule *r, uint64_t s)
{
    double lr = r->lr;
    if (r->warmup && s <= r->warmup) lr = lr * (double)s / (double)r->warmup;
    switch (r->kind) {
    case VT_SCHED_STEP: {
        uint64_t k = (s - 1) / r->decay_every;
        double f = 1.0, b = r->decay_factor; /* f = decay_factor^k by squaring */
        while (k) {
            if (k & 1) f *= b;
            b *= b;
            k >>= 1;
        }
        return lr * f;
    }
    case VT_SCHED_COSINE: { /* after the warm-up, lr * (f + (1 - f) (1 + cos(pi t)) / 2) down to f lr */
        if (s <= r->warmup || r->steps <= r->warmup) return lr;
        double t = (double)(s - r->warmup) / (double)(r->steps - r->warmup), f = r->final_lr_factor;
        return lr * (f + (1.0 - f) * (0.5 * (1.0 + vt_cospi(t))));
    }
    case VT_SCHED_LINEAR: {
        if (s <= r->warmup || r->steps <= r->warmup) return lr;
        double t = (double)(s - r->warmup) / (double)(r->steps - r->warmup);
        return lr * (1.0 - t * (1.0 - r->final_lr_factor));
    }
    default: return lr;
    }
}

vt_err vti_schedule_exec(vt_opctx *c)
{
    const vt_opdesc *o = c->o;
    const vt_schedule sc = {(vt_sched_kind)o->iarg[0], (uint64_t)o->iarg[1], (uint64_t)o->iarg[2], (uint64_t)o->iarg[3],
                            o->farg[0],              o->farg[1],          o->farg[2]};
    VT_RETURN_ERROR_IF(c->step > ((uint64_t)1 << 53), VT_ERR_LIMIT, "step %llu has no exact FP64 step count",
                       (unsigned long long)c->step);
    double t = (double)c->step, lr = vt_schedule_lr(&sc, c->step);
    memcpy(OUT(0), &t, 8);
    memcpy(OUT(1), &lr, 8);
    return VT_OK;
}

void vti_schedule_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p, (void)o;
    memset(out, 0, sizeof *out);
    out->flop = 64, out->bytes = 16;
}

/* ------------------------------------------------------------ LOAD_WINDOWS */
/* -> tokens [B, T] U8, targets [B*T] U8; iarg B, T, seed, vocabulary */

vt_err vti_windows_check(const vt_program *p, const vt_opdesc *o)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[0] > 65536 || a[1] > 65536 || a[3] < 2 || a[3] > 256,
           "program: \"%s\": bad window arguments", o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_U8, (size_t)(a[0] * a[1]), "tokens"));
    return want(p, o, o->out[1], VT_DT_U8, (size_t)(a[0] * a[1]), "targets");
}

/* the start of window b of step s: uniform in [0, n - T - 1] from two Philox words */
uint64_t vt_window_start(uint64_t seed, uint64_t step, uint64_t b, uint64_t n, uint64_t T)
{
    uint64_t hi = vt_rand_u32(seed, VT_RNG_WINDOWS, step, 2 * b), lo = vt_rand_u32(seed, VT_RNG_WINDOWS, step, 2 * b + 1);
    return ((hi << 32) | lo) % (n - T);
}

vt_err vti_windows_exec(vt_opctx *c)
{
    const int64_t *a = c->o->iarg;
    const size_t B = (size_t)a[0], T = (size_t)a[1];
    VT_RETURN_ERROR_IF(!c->ds || !c->ds->text, VT_ERR_ARG, "text windows need a text dataset");
    VT_RETURN_ERROR_IF(c->ds->n < T + 1, VT_ERR_ARG, "the text has %zu tokens: too few for windows of %zu", c->ds->n,
                       T);
    VT_RETURN_ERROR_IF(c->ds->n_classes > (uint64_t)a[3], VT_ERR_ARG, "the text has %u tokens in its vocabulary, the "
                       "model %lld", c->ds->n_classes, (long long)a[3]);
    uint8_t *tok = (uint8_t *)OUT(0), *tgt = (uint8_t *)OUT(1);
    for (size_t b = 0; b < B; b++) {
        uint64_t s0 = vt_window_start((uint64_t)a[2], c->step, vti_slot(c, b), c->ds->n, T);
        memcpy(tok + b * T, c->ds->x + s0, T);
        memcpy(tgt + b * T, c->ds->x + s0 + 1, T);
    }
    return VT_OK;
}

void vti_windows_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 2.0 * (double)T(p, o->out[0])->n;
}

/* ------------------------------------------------------------ the plain forms (vt_plainctx) */

vt_err vt_plain_rows(const vt_plainctx *c, uint32_t t, uint8_t *labels)
{
    const size_t B = c->prog->t[t].shape[0];
    void *x = PTP(c, t);
    return c->f64 ? vt_data_batch_f64(c->ds, c->batch_idx, B, x, labels) : vt_data_batch(c->ds, c->batch_idx, B, x, labels);
}

vt_err vti_load_batch_plain(vt_plainctx *c)
{
    VT_RETURN_ERROR_IF(c->ds && c->ds->yt, VT_ERR_ARG, "the data set %s has float targets, not class labels",
                       c->ds->name);
    return vt_plain_rows(c, c->o->out[0], PTP(c, c->o->out[1]));
}

vt_err vti_schedule_plain(vt_plainctx *c) /* exact in FP64 already: the same values as the exec */
{
    const vt_opdesc *o = c->o;
    const vt_schedule sc = {(vt_sched_kind)o->iarg[0], (uint64_t)o->iarg[1], (uint64_t)o->iarg[2], (uint64_t)o->iarg[3],
                            o->farg[0],              o->farg[1],          o->farg[2]};
    double t = (double)c->step, lr = vt_schedule_lr(&sc, c->step);
    memcpy(PTP(c, o->out[0]), &t, 8);
    memcpy(PTP(c, o->out[1]), &lr, 8);
    return VT_OK;
}

vt_err vti_windows_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        const size_t B = (size_t)a[0], Tn = (size_t)a[1];
        VT_RETURN_ERROR_IF(!c->ds || !c->ds->text || c->ds->n < Tn + 1 || c->ds->n_classes > (uint64_t)a[3], VT_ERR_ARG,
                           "text windows need a text dataset of more than %zu tokens and at most %lld in its vocabulary",
                           Tn, (long long)a[3]);
        uint8_t *tok = PTP(c, c->o->out[0]), *tgt = PTP(c, c->o->out[1]);
        for (size_t b = 0; b < B; b++) {
            uint64_t s0 = vt_window_start((uint64_t)a[2], c->step, b, c->ds->n, Tn);
            memcpy(tok + b * Tn, c->ds->x + s0, Tn);
            memcpy(tgt + b * Tn, c->ds->x + s0 + 1, Tn);
        }
        return VT_OK;
    })
}
