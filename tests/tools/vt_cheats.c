/* vt_cheats.c - test-only adversaries through the drivers' hooks (vt_cheats.h). */
#include "vt_cheats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_bytes.h"
#include "../../common/vt_cli.h"
#include "../../protocol/vt_proto.h"

static void flip_low_bit(float *p) { *p = vt_bits_f32(vt_f32_bits(*p) ^ 1u); }

/* skew-kind: the lowest bit of the first byte of the first output of every operation of the kind
 * (whatever the step: a build that computes other bits); also the probe's hook */
static vt_err skew_kind(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    (void)step;
    vt_cheats *c = ctx;
    const vt_opdesc *o = &m->prog.op[op];
    if (c->kind == VT_CHEAT_SKEW_KIND && o->kind == c->skew_kind) *(uint8_t *)vt_model_tensor(m, o->out[0], NULL) ^= 1u;
    return VT_OK;
}

static vt_err after_op(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    vt_cheats *c = ctx;
    if (c->kind == VT_CHEAT_SKEW_KIND) return skew_kind(ctx, m, step, op);
    if (step != c->step) return VT_OK;
    if (op == 1) c->done = 0; /* every replay of the step cheats alike */
    const vt_program *p = &m->prog;
    const vt_opdesc *o = &p->op[op];
    if (c->kind == VT_CHEAT_ARITH) { /* the step's operations after the first in gemm_arith VALUE */
        if (op == 1) c->arith_old = m->rcp.gemm_arith, m->rcp.gemm_arith = (int)c->value;
        if (op == p->n_ops) m->rcp.gemm_arith = c->arith_old;
        return VT_OK;
    }
    switch (c->kind) {
    case VT_CHEAT_LR: {
        uint32_t lr = vt_program_find(p, "lr");
        if (vt_op_writes(o, lr)) memcpy(vt_model_tensor(m, lr, NULL), &c->value, 8);
        return VT_OK;
    }
    case VT_CHEAT_POISON: {
        char gname[160]; /* the gradient of the first parameter (fc1.weight, stem.conv.weight) */
        snprintf(gname, sizeof gname, "%s.grad", p->t[0].name);
        uint32_t g = vt_program_find(p, gname);
        if (!vt_op_writes(o, g)) return VT_OK;
        float *gw = vt_model_tensor(m, g, NULL);
        for (size_t i = 0; i < p->t[g].n; i++) gw[i] = (float)((double)gw[i] + c->value);
        return VT_OK;
    }
    case VT_CHEAT_FLIP_W: {
        uint32_t w = 0; /* the first parameter (fc1.weight, stem.conv.weight) */
        if (vt_op_writes(o, w) && o->kind != VT_OPK_LOAD_BATCH) flip_low_bit(vt_model_tensor(m, w, NULL));
        return VT_OK;
    }
    case VT_CHEAT_FLIP_BUFFER: { /* the first buffer (a running mean), when the step writes it */
        for (uint32_t t = 0; t < p->n_state; t++)
            if (p->t[t].cls == VT_TC_BUFFER) {
                if (vt_op_writes(o, t)) flip_low_bit(vt_model_tensor(m, t, NULL));
                break;
            }
        return VT_OK;
    }
    case VT_CHEAT_REORDER: /* another example than the recipe's in the batch's first place */
        if (o->kind == VT_OPK_LOAD_BATCH && m->ds) {
            size_t other = (m->batch_idx[0] + 1) % m->n_examples;
            return vt_data_batch(m->ds, &other, 1, vt_model_tensor(m, o->out[0], NULL),
                                 vt_model_tensor(m, o->out[1], NULL));
        }
        return VT_OK;
    case VT_CHEAT_AUGMENT_SEED: /* the step's augmentation redone with another seed */
        if (o->kind == VT_OPK_AUGMENT) {
            const int64_t *a = o->iarg;
            size_t H = (size_t)a[1], W = (size_t)a[2], d = (size_t)a[0] * H * W, B = p->t[o->in[0]].shape[0];
            const float *in = vt_model_tensor(m, o->in[0], NULL);
            float *out = vt_model_tensor(m, o->out[0], NULL);
            for (size_t b = 0; b < B; b++) {
                uint32_t oy, ox;
                int fl;
                vt_augment_draw((uint64_t)a[5] + 1, step, b, (uint32_t)a[3], (int)a[4], &oy, &ox, &fl);
                for (size_t e = 0; e < d; e++) {
                    int64_t src = vt_augment_source(H, W, (uint32_t)a[3], oy, ox, fl, e);
                    out[b * d + e] = src < 0 ? 0.0f : in[b * d + (size_t)src];
                }
            }
        }
        return VT_OK;
    case VT_CHEAT_DROPOUT_SEED: /* the step's first dropout operation redone with another seed */
        if (o->kind == VT_OPK_DROPOUT && !c->done) {
            size_t n = p->t[o->out[0]].n;
            const float *x = vt_model_tensor(m, o->in[0], NULL);
            float *y = vt_model_tensor(m, o->out[0], NULL);
            double sc = 1.0 / (1.0 - o->farg[0]);
            for (size_t i = 0; i < n; i++)
                y[i] = vt_dropout_keep((uint64_t)o->iarg[0] + 1, step, (uint32_t)o->iarg[1], i, o->farg[0])
                           ? (float)((double)x[i] * sc)
                           : 0.0f;
            c->done = 1;
        }
        return VT_OK;
    case VT_CHEAT_SWAP_WINDOW: /* window 0 of the step starts a token later */
        if (o->kind == VT_OPK_LOAD_WINDOWS && m->ds) {
            size_t T = (size_t)o->iarg[1];
            uint64_t s0 = (vt_window_start((uint64_t)o->iarg[2], step, 0, m->ds->n, T) + 1) % (m->ds->n - T);
            memcpy(vt_model_tensor(m, o->out[0], NULL), m->ds->x + s0, T);
            memcpy(vt_model_tensor(m, o->out[1], NULL), m->ds->x + s0 + 1, T);
        }
        return VT_OK;
    case VT_CHEAT_FLIP_OUTPUT: /* the lowest bit of the first element, whatever its dtype (little-endian) */
        if (op == c->op) *(uint8_t *)vt_model_tensor(m, o->out[0], NULL) ^= 1u;
        return VT_OK;
    case VT_CHEAT_SHIFT_OUTPUT: /* an F32 output: VALUE added to every element (else the lowest bit) */
        if (op != c->op) return VT_OK;
        if (p->t[o->out[0]].dtype == VT_DT_F32) {
            float *y = vt_model_tensor(m, o->out[0], NULL);
            for (size_t i = 0; i < p->t[o->out[0]].n; i++) y[i] = (float)((double)y[i] + c->value);
        } else
            *(uint8_t *)vt_model_tensor(m, o->out[0], NULL) ^= 1u;
        return VT_OK;
    default: return VT_OK;
    }
}

/* pad-log: a direction entry (down) on each of the first n elements of o without an entry */
static void pad_oplog(vt_oplog *o, uint64_t n)
{
    uint64_t room = o->n_elems - o->n_entries, add = n < room ? n : room, w = 0, k = 0, added = 0;
    vt_log_entry *e = add ? malloc((o->n_entries + add) * sizeof *e) : NULL;
    if (!e) return;
    for (uint64_t i = 0; i < o->n_elems && (added < add || k < o->n_entries); i++) {
        if (k < o->n_entries && o->e[k].index == i)
            e[w++] = o->e[k++];
        else if (added < add)
            e[w++] = (vt_log_entry){.index = i}, added++;
    }
    free(o->e);
    o->e = e;
    o->n_entries = o->cap = w;
}

static void after_log(void *ctx, vt_steplog *l, uint64_t step)
{
    vt_cheats *c = ctx;
    if (step != c->step) return;
    if (c->kind == VT_CHEAT_PAD_LOG)
        for (uint32_t i = 0; i < l->n_ops; i++) pad_oplog(&l->ops[i], c->value >= 1 ? (uint64_t)c->value : 1);
    for (uint32_t i = 0; i < l->n_ops; i++) {
        vt_oplog *o = &l->ops[i];
        if (c->kind == VT_CHEAT_OMIT_ENTRY) o->n_entries = 0;
        for (uint64_t k = 0; k < o->n_entries && c->kind == VT_CHEAT_FLIP_DIRECTION; k++)
            if (!o->e[k].is_value) {
                o->e[k].up ^= 1;
                return;
            }
    }
}

static int silent(void *ctx) { return ((vt_cheats *)ctx)->serve == VT_MISBEHAVE_SILENT; }

static void tamper(void *ctx, uint16_t type, void *answer)
{
    vt_cheats *c = ctx;
    if (c->serve == VT_MISBEHAVE_BAD_PROOF && type == VT_MSG_LEAF) {
        vt_msg_leaf *a = answer;
        if (a->n_path) a->path[0][0] ^= 1;
    }
    if (c->serve == VT_MISBEHAVE_INCONSISTENT && type == VT_MSG_CHAIN_CLAIM) ((vt_msg_chain_claim *)answer)->chain_hash[0] ^= 1;
    /* answers at the protocol maxima (64 MiB of hashes, a 256 MiB tensor): the arbiter must refuse
     * them by their header, from the sizes the game needs (issue 21, finding 8) */
    static uint8_t (*big_h)[32];
    static float *big_f;
    static vt_msg_tensor big_t;
    if (c->serve == VT_MISBEHAVE_HUGE_HASHES && type == VT_MSG_HASHES) {
        if (!big_h) big_h = calloc(VT_MSG_HASHES_MAX, 32);
        vt_msg_hashes *a = answer;
        if (big_h) a->n = VT_MSG_HASHES_MAX, a->h = big_h;
    }
    if (c->serve == VT_MISBEHAVE_HUGE_INPUTS && type == VT_MSG_INPUTS) {
        uint32_t rows = 4096, cols = (VT_MSG_INPUTS_MAX_BODY - 64) / 4 / rows;
        if (!big_f) big_f = calloc((size_t)rows * cols, sizeof *big_f);
        vt_msg_inputs *a = answer;
        if (big_f && a->n_tensors) {
            big_t = a->tensors[0];
            big_t.rows = rows, big_t.cols = cols, big_t.data = big_f;
            a->n_tensors = 1, a->tensors = &big_t;
        }
    }
}

static int short_record(void *ctx) { return ((vt_cheats *)ctx)->serve == VT_MISBEHAVE_SHORT_RECORD; }

static int drop(void *ctx, int answered)
{
    vt_cheats *c = ctx;
    if (c->serve != VT_MISBEHAVE_DROP_ONCE || answered != 6) return 0;
    pthread_mutex_lock(&c->mu);
    int d = !c->dropped;
    c->dropped = 1;
    pthread_mutex_unlock(&c->mu);
    return d;
}

void vt_cheats_init(vt_cheats *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->hooks = (vt_hooks){after_op, after_log, c, skew_kind};
    c->serve_hooks = (vt_serve_hooks){silent, tamper, drop, short_record, c};
}

vt_err vt_cheats_parse(vt_cheats *c, const char *spec)
{
    if (strncmp(spec, "skew-kind:", 10) == 0) { /* skew-kind:NAME, a kind's name (ops/vt_kinds.h) */
        for (uint16_t k = 1; k < VT_OPK_COUNT; k++)
            if (strcmp(vt_opkind_get(k)->name, spec + 10) == 0) {
                c->kind = VT_CHEAT_SKEW_KIND;
                c->skew_kind = k;
                return VT_OK;
            }
        VT_RETURN_ERROR(VT_ERR_ARG, "--cheat skew-kind:NAME: no operation kind is named \"%s\"", spec + 10);
    }
    char kind[32], num[32];
    uint64_t step = 0;
    double value = 0;
    const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    size_t kl = c1 ? (size_t)(c1 - spec) : 0, nl = c1 ? (c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1)) : 0;
    VT_RETURN_ERROR_IF(!c1 || kl == 0 || kl >= sizeof kind || nl >= sizeof num, VT_ERR_ARG,
                       "--cheat %s: expected KIND:STEP[:VALUE]", spec);
    memcpy(kind, spec, kl);
    kind[kl] = 0;
    memcpy(num, c1 + 1, nl);
    num[nl] = 0;
    VT_FORWARD_IF_ERROR(vt_cli_u64("--cheat STEP", num, 1, (uint64_t)INT64_MAX, &step));
    int has_value = 0;
    if (c2) {
        char *end = NULL;
        value = strtod(c2 + 1, &end);
        VT_RETURN_ERROR_IF(!c2[1] || *end || !isfinite(value), VT_ERR_ARG,
                           "--cheat VALUE: \"%s\" is not a finite number", c2 + 1);
        has_value = 1;
    }
    static const struct { const char *name; vt_cheat_kind kind; } k[] = {
        {"lr", VT_CHEAT_LR}, {"poison", VT_CHEAT_POISON}, {"flip-weight", VT_CHEAT_FLIP_W},
        {"flip-buffer", VT_CHEAT_FLIP_BUFFER}, {"dropout-seed", VT_CHEAT_DROPOUT_SEED},
        {"swap-window", VT_CHEAT_SWAP_WINDOW},
        {"reorder", VT_CHEAT_REORDER}, {"flip-direction", VT_CHEAT_FLIP_DIRECTION},
        {"omit-entry", VT_CHEAT_OMIT_ENTRY}, {"augment-seed", VT_CHEAT_AUGMENT_SEED}, {"pad-log", VT_CHEAT_PAD_LOG},
        {"shift-op", VT_CHEAT_SHIFT_OUTPUT}, {"arith", VT_CHEAT_ARITH}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(kind, k[i].name) == 0) {
            c->kind = k[i].kind;
            c->step = step;
            c->value = has_value ? value : (k[i].kind == VT_CHEAT_POISON ? 1e-3 : 0.5);
            if (k[i].kind == VT_CHEAT_ARITH) { /* arith:STEP:V, V an index of vt_gemm_arith_names */
                int nv = 0;
                while (vt_gemm_arith_names[nv]) nv++;
                VT_RETURN_ERROR_IF(!has_value || value < 0 || value >= nv || value != (double)(int)value, VT_ERR_ARG,
                                   "--cheat arith:STEP:V needs V in 0..%d (vt_gemm_arith_names)", nv - 1);
            }
            if (k[i].kind == VT_CHEAT_SHIFT_OUTPUT) { /* shift-op:STEP:OP, the operation id; 0.25 added */
                VT_RETURN_ERROR_IF(!has_value || value < 1 || value > UINT32_MAX || value != (double)(uint32_t)value,
                                   VT_ERR_ARG, "--cheat shift-op:STEP:OP needs an operation id");
                c->op = (uint32_t)value;
                c->value = 0.25;
            }
            return VT_OK;
        }
    VT_RETURN_ERROR(VT_ERR_ARG, "--cheat: unknown kind \"%s\"", kind);
}

vt_err vt_cheats_lie(vt_cheats *c, const char *spec)
{
    /* STEP:OP:shift - 0.25 added to every element of an F32 output (a lie that cannot be absorbed) */
    size_t n = strlen(spec);
    if (n > 6 && strcmp(spec + n - 6, ":shift") == 0 && n - 6 < 64) {
        char head[64];
        memcpy(head, spec, n - 6);
        head[n - 6] = 0;
        VT_FORWARD_IF_ERROR(vt_cli_step_op("--lie", head, &c->step, &c->op));
        c->kind = VT_CHEAT_SHIFT_OUTPUT;
        c->value = 0.25;
        return VT_OK;
    }
    VT_FORWARD_IF_ERROR(vt_cli_step_op("--lie", spec, &c->step, &c->op));
    c->kind = VT_CHEAT_FLIP_OUTPUT;
    return VT_OK;
}

vt_err vt_cheats_misbehave(vt_cheats *c, const char *name)
{
    static const struct { const char *name; vt_misbehave m; } k[] = {
        {"silent", VT_MISBEHAVE_SILENT}, {"bad-proof", VT_MISBEHAVE_BAD_PROOF},
        {"inconsistent", VT_MISBEHAVE_INCONSISTENT}, {"drop-once", VT_MISBEHAVE_DROP_ONCE},
        {"huge-hashes", VT_MISBEHAVE_HUGE_HASHES}, {"huge-inputs", VT_MISBEHAVE_HUGE_INPUTS},
        {"short-record", VT_MISBEHAVE_SHORT_RECORD}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(name, k[i].name) == 0) {
            c->serve = k[i].m;
            return VT_OK;
        }
    VT_RETURN_ERROR(VT_ERR_ARG, "unknown --misbehave %s", name);
}
