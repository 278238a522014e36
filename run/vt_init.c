/* vt_init.c - the initial state from a safetensors file (vt_init.h). */
#include "vt_init.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"
#include "../store/vt_store.h"
#include "vt_torch.h"

/* Appends to a bounded message. */
static void say(char *b, size_t cap, size_t *len, const char *fmt, const char *a, const char *c)
{
    if (*len >= cap) return;
    int k = snprintf(b + *len, cap - *len, fmt, a, c);
    if (k > 0) *len += (size_t)k < cap - *len ? (size_t)k : cap - *len - 1;
}

static void shape_text(char *out, size_t cap, uint32_t rank, const uint64_t *shape)
{
    size_t l = 0;
    l += (size_t)snprintf(out, cap, "[");
    for (uint32_t k = 0; k < rank && l < cap; k++)
        l += (size_t)snprintf(out + l, cap - l, "%s%llu", k ? ", " : "", (unsigned long long)shape[k]);
    if (l < cap) snprintf(out + l, cap - l, "]");
}

/* The file in PyTorch's layout (m->rcp.init_torch; vt_torch.h): every parameter and buffer by its
 * torch name and shape, the optimiser's under optimizer.* when given, batch norm's
 * num_batches_tracked (I64) allowed and not read; the values moved back into the project's layout. */
static vt_err apply_torch(vt_model *m, const vt_st_file *f)
{
    const vt_program *p = &m->prog;
    char msg[1024];
    size_t len = 0;
    int bad = 0;
    msg[0] = 0;
    char tn[VT_TORCH_NAME_MAX];
    int how = 0;
    for (uint32_t i = 0; i < p->n_state; i++) {
        const vt_tensor *t = &p->t[i];
        if (vt_torch_of(&m->rcp, p, i, tn, sizeof tn, &how)) continue;
        const vt_st_entry *e = vt_st_find(f, tn);
        if (!e) {
            if (t->cls != VT_TC_OPT) say(msg, sizeof msg, &len, "%s%s missing", bad++ ? "; " : "", tn);
            continue;
        }
        uint32_t rank;
        uint64_t want[VT_MAX_RANK];
        vt_torch_shape(how, t, &rank, want);
        int same = e->rank == rank && strcmp(e->dtype, "F32") == 0;
        for (uint32_t k = 0; same && k < rank; k++) same = e->shape[k] == want[k];
        if (!same) {
            char a[96], b[96], item[320];
            shape_text(a, sizeof a, e->rank, e->shape);
            shape_text(b, sizeof b, rank, want);
            snprintf(item, sizeof item, "%s is %s %s, the model's F32 %s", e->name, e->dtype, a, b);
            say(msg, sizeof msg, &len, "%s%s", bad++ ? "; " : "", item);
        }
    }
    for (size_t j = 0; j < f->n; j++) { /* every tensor of the file is a state tensor's (or a counter) */
        const char *nm = f->t[j].name;
        size_t nl = strlen(nm), sl = strlen(".num_batches_tracked");
        if (nl > sl && strcmp(nm + nl - sl, ".num_batches_tracked") == 0) continue;
        int found = 0;
        for (uint32_t i = 0; i < p->n_state && !found; i++)
            found = !vt_torch_of(&m->rcp, p, i, tn, sizeof tn, &how) && strcmp(tn, nm) == 0;
        if (!found)
            say(msg, sizeof msg, &len, "%s%s is not a state tensor of the recipe's model", bad++ ? "; " : "", nm);
    }
    VT_RETURN_ERROR_IF(bad, VT_ERR_ARG,
                       "%s: does not fit the recipe's state in PyTorch's layout (the names and shapes of `trainer "
                       "export --layout torch`): %s",
                       f->path, msg);
    float *state = malloc(m->n_state ? m->n_state * sizeof *state : 1), *tmp = NULL;
    VT_RETURN_ERROR_IF(!state, VT_ERR_NOMEM, "out of memory");
    if (m->n_state) memcpy(state, m->state, m->n_state * sizeof *state);
    vt_err err = VT_OK;
    for (uint32_t i = 0; i < p->n_state && !err; i++) {
        const vt_tensor *t = &p->t[i];
        if (vt_torch_of(&m->rcp, p, i, tn, sizeof tn, &how)) continue;
        const vt_st_entry *e = vt_st_find(f, tn);
        if (!e) continue;
        free(tmp);
        tmp = malloc(t->n ? t->n * sizeof *tmp : 1);
        if (!tmp) {
            err = vt_set_error(VT_ERR_NOMEM, "out of memory");
            break;
        }
        for (uint64_t k = 0; k < e->count && !err; k++) {
            uint32_t b = vt_get_u32le(e->data + 4 * k);
            memcpy(&tmp[k], &b, 4);
            if (!isfinite(tmp[k]))
                err = vt_set_error(VT_ERR_FORMAT, "%s: tensor '%s': value %llu (offset %llu) is %s", f->path, e->name,
                                   (unsigned long long)k, (unsigned long long)(e->off + 4 * k),
                                   isnan(tmp[k]) ? "NaN" : "infinite");
        }
        if (!err) vt_torch_move(how, t, 0, tmp, state + ((float *)vt_model_tensor(m, i, NULL) - m->state));
    }
    free(tmp);
    if (!err) err = vt_model_set_state(m, 0, state, m->n_state);
    free(state);
    return err;
}

/* 1 when every parameter and buffer of the recipe is in f by its torch name and shape (the file is
 * in PyTorch's layout, read without --init-layout torch). */
static int fits_torch(vt_model *m, const vt_st_file *f)
{
    const vt_program *p = &m->prog;
    char tn[VT_TORCH_NAME_MAX];
    int how = 0, any = 0;
    for (uint32_t i = 0; i < p->n_state; i++) {
        const vt_tensor *t = &p->t[i];
        if (vt_torch_of(&m->rcp, p, i, tn, sizeof tn, &how)) continue;
        const vt_st_entry *e = vt_st_find(f, tn);
        if (!e) {
            if (t->cls != VT_TC_OPT) return 0;
            continue;
        }
        uint32_t rank;
        uint64_t want[VT_MAX_RANK];
        vt_torch_shape(how, t, &rank, want);
        if (e->rank != rank) return 0;
        for (uint32_t k = 0; k < rank; k++)
            if (e->shape[k] != want[k]) return 0;
        any = 1;
    }
    return any;
}

vt_err vt_init_apply(vt_model *m, const vt_st_file *f)
{
    if (m->rcp.init_torch) return apply_torch(m, f);
    const vt_program *p = &m->prog;
    char msg[1024];
    size_t len = 0;
    int bad = 0, transposed = 0;
    msg[0] = 0;
    for (uint32_t i = 0; i < p->n_state; i++) { /* every parameter and buffer; the optimiser's when given */
        const vt_tensor *t = &p->t[i];
        const vt_st_entry *e = vt_st_find(f, t->name);
        if (!e) {
            if (t->cls != VT_TC_OPT) say(msg, sizeof msg, &len, "%s%s missing", bad++ ? "; " : "", t->name);
            continue;
        }
        uint64_t want[VT_MAX_RANK];
        for (uint32_t k = 0; k < t->rank; k++) want[k] = t->shape[k];
        int same = e->rank == t->rank && strcmp(e->dtype, "F32") == 0;
        for (uint32_t k = 0; same && k < t->rank; k++) same = e->shape[k] == want[k];
        if (!same) {
            char a[96], b[96], item[320];
            shape_text(a, sizeof a, e->rank, e->shape);
            shape_text(b, sizeof b, t->rank, want);
            snprintf(item, sizeof item, "%s is %s %s, the program's F32 %s", e->name, e->dtype, a, b);
            say(msg, sizeof msg, &len, "%s%s", bad++ ? "; " : "", item);
            transposed += e->rank == 2 && t->rank == 2 && e->shape[0] == want[1] && e->shape[1] == want[0];
        }
    }
    for (size_t j = 0; j < f->n; j++) {
        uint32_t id = vt_program_find(p, f->t[j].name);
        if (id == UINT32_MAX || id >= p->n_state)
            say(msg, sizeof msg, &len, "%s%s is not a state tensor of the recipe's program", bad++ ? "; " : "",
                f->t[j].name);
    }
    /* a PyTorch state_dict read in the project's layout: say which option reads it */
    const char *hint = !bad ? ""
                       : fits_torch(m, f) ? " - the file is in PyTorch's layout (its names and shapes fit): give "
                                            "--init-layout torch"
                       : transposed ? " - its shapes match when transposed, as a PyTorch state_dict's do: give "
                                      "--init-layout torch if it is one"
                                    : "";
    VT_RETURN_ERROR_IF(bad, VT_ERR_ARG,
                       "%s: does not fit the recipe's state (the names and shapes of `trainer export`; `trainer recipe "
                       "--program` lists them): %s%s",
                       f->path, msg, hint);
    float *state = malloc(m->n_state ? m->n_state * sizeof *state : 1);
    VT_RETURN_ERROR_IF(!state, VT_ERR_NOMEM, "out of memory");
    if (m->n_state) memcpy(state, m->state, m->n_state * sizeof *state);
    for (uint32_t i = 0; i < p->n_state; i++) {
        const vt_st_entry *e = vt_st_find(f, p->t[i].name);
        if (!e) continue;
        float *dst = state + ((float *)vt_model_tensor(m, i, NULL) - m->state); /* its place in the state */
        for (uint64_t k = 0; k < e->count; k++) {
            uint32_t b = vt_get_u32le(e->data + 4 * k);
            memcpy(&dst[k], &b, 4);
            if (!isfinite(dst[k])) {
                const char *what = isnan(dst[k]) ? "NaN" : "infinite"; /* (read before state is freed) */
                free(state);
                VT_RETURN_ERROR(VT_ERR_FORMAT, "%s: tensor '%s': value %llu (offset %llu) is %s", f->path, e->name,
                                (unsigned long long)k, (unsigned long long)(e->off + 4 * k), what);
            }
        }
    }
    vt_err err = vt_model_set_state(m, 0, state, m->n_state);
    free(state);
    return err;
}

/* 1 when the file's metadata says vt.layout = torch (trainer export --layout torch writes it) */
static int says_torch(const vt_st_file *f)
{
    if (f->len < 8) return 0;
    uint64_t n = vt_get_u64le(f->bytes);
    if (n > f->len - 8) return 0;
    json_t *h = json_loadb((const char *)f->bytes + 8, (size_t)n, 0, NULL);
    json_t *md = h ? json_object_get(h, "__metadata__") : NULL, *l = md ? json_object_get(md, "vt.layout") : NULL;
    int torch = json_is_string(l) && strcmp(json_string_value(l), "torch") == 0;
    json_decref(h);
    return torch;
}

vt_err vt_init_prepare(vt_recipe *rcp, const char *path, const char *resume_dir, int layout, vt_st_file *f)
{
    memset(f, 0, sizeof *f);
    char kept[4096];
    if (!path && resume_dir) { /* resume: the run's own copy, in the layout it was read in */
        struct stat sb;
        snprintf(kept, sizeof kept, "%s/%s", resume_dir, VT_INIT_LAYOUT_FILE);
        if (layout == VT_INIT_AUTO && stat(kept, &sb) == 0) layout = VT_INIT_TORCH;
        snprintf(kept, sizeof kept, "%s/%s", resume_dir, VT_INIT_FILE);
        if (stat(kept, &sb) != 0) return VT_OK;
        path = kept;
    }
    if (!path) return VT_OK;
    VT_FORWARD_IF_ERROR(vt_st_read(path, f));
    rcp->has_init = 1;
    memcpy(rcp->init_sha256, f->sha256, 32);
    rcp->init_torch = layout == VT_INIT_TORCH || (layout == VT_INIT_AUTO && says_torch(f));
    return VT_OK;
}

vt_err vt_init_for_replay(const vt_recipe *rcp, const char *given, const char *run_dir, vt_st_file *f, int *why)
{
    memset(f, 0, sizeof *f);
    *why = 0;
    char want[65], have[65], kept[4096];
    vt_hex(rcp->init_sha256, 32, want);
    snprintf(kept, sizeof kept, "%s/%s", run_dir, VT_INIT_FILE);
    const char *path = given ? given : kept;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        *why = 1;
        VT_RETURN_ERROR(VT_ERR_IO, "the run starts from a file (trainer train --init) with SHA-256 %s, and %s %s: %s%s",
                        want, given ? "--init" : "the run's copy", path, strerror(errno),
                        given ? "" : " (pass the file with --init FILE)");
    }
    vt_err e = vt_st_read(path, f);
    if (e) {
        *why = 1;
        return e;
    }
    if (memcmp(f->sha256, rcp->init_sha256, 32) != 0) {
        vt_hex(f->sha256, 32, have);
        vt_st_free(f);
        *why = 2;
        VT_RETURN_ERROR(VT_ERR_MISMATCH,
                        "the run started from a file with SHA-256 %s; %s has SHA-256 %s: another initial state", want,
                        path, have);
    }
    return VT_OK;
}
