/* fuzz_st_body.h - the check of the safetensors reader (data/vt_data.h vt_st_read) and what reads
 * its result: the data set loader (vt_data_load_safetensors, `--data-dir` / `dataset=safetensors:`),
 * `trainer train --init`'s reader (vt_init_prepare, the layout told by the metadata) and the initial
 * state's application (vt_init_apply) to a tiny MLP (SGD, the project's layout), a tiny MLP (Adam,
 * PyTorch's layout) and a tiny residual CNN in both layouts. Shared by the libFuzzer target
 * fuzz_safetensors (tests/fuzz/fuzz_target.c) and the corpus replayer (tests/tools/replay_corpus.c: ctest
 * safetensors_corpus over tests/corpus/safetensors).
 *
 * Any input may be refused, but only with a known code (the reader: VT_ERR_FORMAT or VT_ERR_LIMIT;
 * the loader and vt_init_apply also VT_ERR_ARG) and without a change: a refused file leaves the
 * vt_st_file empty and the model's state as it was. What is accepted is consistent: the file's bytes
 * and SHA-256; every tensor named (non-empty, unique, found by vt_st_find), of a known element size,
 * its element count the product of its shape, its bytes inside the file where the header says; the
 * tensors tile the data section exactly (docs/format.md "Export (safetensors)"); a data set has N >= 1
 * examples of d >= 1 finite features and labels below n_classes; an applied state holds the file's
 * values (moved back from PyTorch's layout) and the previous values of the tensors the file leaves
 * out. Returns 0 when every rule holds, 1 on a violation (on stderr); *accepted gets bit 0 when the
 * reader accepted, bit 1 when the data set loaded, bits 2.. for the models that took the state. */
#ifndef VT_FUZZ_ST_BODY_H
#define VT_FUZZ_ST_BODY_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_bytes.h"
#include "common/vt_hash.h"
#include "data/vt_data.h"
#include "fuzz/fuzz_common.h"
#include "model/vt_model.h"
#include "run/vt_init.h"
#include "run/vt_torch.h"

#define VT_FUZZ_ST_FAIL(...) VT_FUZZ_VIOLATION("fuzz_safetensors", __VA_ARGS__)

#define VT_FUZZ_ST_MODELS 4

/* The models (made once): 0 MLP SGD project layout, 1 MLP Adam torch, 2 CNN project, 3 CNN torch. */
static vt_model *vt_fuzz_st_models(void)
{
    static vt_model m[VT_FUZZ_ST_MODELS];
    static int made = 0;
    /* the recipes of tests/fuzz/make_file_corpus.sh's runs, whose exports are the seeds */
    static const char *const mlp[] = {"dataset=digits", "layers=[64,3,10]", "batch=8", NULL};
    static const char *const cnn[] = {"arch=resnet", "dataset=digits", "layers=[64,10]", "image_channels=1",
                                      "image_height=8", "image_width=8", "resnet_width=2", "resnet_stages=2",
                                      "resnet_blocks=1", "resnet_pool=0", "batch=8", NULL};
    if (made) return made > 0 ? m : NULL;
    made = -1;
    for (int k = 0; k < VT_FUZZ_ST_MODELS; k++) {
        vt_recipe rc;
        vt_recipe_default(&rc);
        const char *const *s = k < 2 ? mlp : cnn;
        for (int i = 0; s[i]; i++)
            if (vt_recipe_set(&rc, s[i]) != VT_OK) goto bad;
        if (k == 1 && vt_recipe_set(&rc, "optimizer=adam") != VT_OK) goto bad;
        if (vt_model_init(&m[k], &rc, 8, VT_ORDER_FORWARD) != VT_OK) goto bad;
        m[k].rcp.init_torch = k & 1;
    }
    made = 1;
    return m;
bad:
    fprintf(stderr, "fuzz_safetensors: cannot make the models: %s\n", vt_errmsg());
    return NULL;
}

static int vt_fuzz_st_known(vt_err e, int arg_ok)
{
    return e == VT_ERR_FORMAT || e == VT_ERR_LIMIT || e == VT_ERR_NOMEM || (arg_ok && e == VT_ERR_ARG);
}

/* After vt_init_apply accepted f: every state tensor holds the file's values (in m's layout), or
 * old's when the file has none. Restores old. 0 when it holds. */
static int vt_fuzz_st_applied(vt_model *m, const vt_st_file *f, const float *old, float *tmp)
{
    const vt_program *p = &m->prog;
    int bad = 0;
    for (uint32_t i = 0; i < p->n_state && !bad; i++) {
        const vt_tensor *t = &p->t[i];
        const float *v = (const float *)vt_model_tensor(m, i, NULL);
        const float *was = old + (v - m->state);
        char name[VT_TORCH_NAME_MAX];
        int how = VT_TORCH_COPY;
        const vt_st_entry *e;
        if (m->rcp.init_torch) {
            if (vt_torch_of(&m->rcp, p, i, name, sizeof name, &how)) continue;
            e = vt_st_find(f, name);
        } else
            e = vt_st_find(f, t->name);
        if (!e) {
            bad = memcmp(v, was, t->n * sizeof *v) != 0;
            if (bad) fprintf(stderr, "fuzz_safetensors: %s changed, the file has no value for it\n", t->name);
            continue;
        }
        if (e->count != t->n || strcmp(e->dtype, "F32") != 0) {
            fprintf(stderr, "fuzz_safetensors: %s taken from %s of %llu %s values\n", t->name, e->name,
                    (unsigned long long)e->count, e->dtype);
            return 1;
        }
        if (m->rcp.init_torch) vt_torch_move(how, t, 1, v, tmp);
        else memcpy(tmp, v, t->n * sizeof *tmp);
        for (size_t k = 0; k < t->n && !bad; k++) bad = vt_f32_bits(tmp[k]) != vt_get_u32le(e->data + 4 * k);
        if (bad) fprintf(stderr, "fuzz_safetensors: %s does not hold the file's values of %s\n", t->name, e->name);
    }
    if (vt_model_set_state(m, 0, old, m->n_state) != VT_OK) return 1;
    return bad;
}

static int vt_fuzz_st_one(const uint8_t *data, size_t size, int *accepted)
{
    int rc = 0;
    vt_st_file f, g;
    vt_dataset ds;
    vt_recipe rec;
    float *old = NULL, *tmp = NULL;
    memset(&f, 0, sizeof f), memset(&g, 0, sizeof g), memset(&ds, 0, sizeof ds);
    *accepted = 0;
    vt_model *m = vt_fuzz_st_models();
    const char *path = vt_fuzz_file(data, size);
    if (!m || !path) return 1;

    /* the reader */
    vt_err e = vt_st_read(path, &f);
    if (e) {
        if (!vt_fuzz_st_known(e, 0)) VT_FUZZ_ST_FAIL("vt_st_read refused with code %d (%s)", (int)e, vt_errmsg());
        if (f.bytes || f.t || f.n || f.len) VT_FUZZ_ST_FAIL("vt_st_read refused, the file not left empty");
    } else {
        *accepted |= 1;
        uint8_t h[32];
        if (f.len != size || memcmp(f.bytes, data, size) != 0) VT_FUZZ_ST_FAIL("the file's bytes differ from the input");
        if (vt_sha256(data, size, h) != VT_OK || memcmp(h, f.sha256, 32) != 0) VT_FUZZ_ST_FAIL("the SHA-256 differs");
        uint64_t hl = vt_get_u64le(data), sum = 0;
        for (size_t i = 0; i < f.n; i++) {
            const vt_st_entry *t = &f.t[i];
            uint64_t c = 1;
            int over = 0;
            for (uint32_t k = 0; k < t->rank && k < 8; k++) {
                over |= t->shape[k] && c > UINT64_MAX / t->shape[k];
                c *= t->shape[k];
            }
            if (!t->name || !t->name[0] || vt_st_find(&f, t->name) != t || t->rank > 8 || over || c != t->count ||
                (t->esize != 1 && t->esize != 2 && t->esize != 4 && t->esize != 8))
                VT_FUZZ_ST_FAIL("tensor %zu ('%s') is inconsistent", i, t->name ? t->name : "(null)");
            if (t->count > (size - 8 - hl) / t->esize || t->off < 8 + hl || t->off > size ||
                t->count * t->esize > size - t->off || t->data != f.bytes + t->off)
                VT_FUZZ_ST_FAIL("tensor '%s' (%llu x %u bytes at %llu) is not inside the data section", t->name,
                                (unsigned long long)t->count, t->esize, (unsigned long long)t->off);
            sum += t->count * t->esize;
            for (size_t j = 0; j < f.n; j++) /* no overlap: begins outside every other non-empty tensor */
                if (j != i && f.t[j].count && t->off > f.t[j].off && t->off < f.t[j].off + f.t[j].count * f.t[j].esize)
                    VT_FUZZ_ST_FAIL("tensors '%s' and '%s' overlap", t->name, f.t[j].name);
        }
        if (hl > size - 8 || sum != size - 8 - hl)
            VT_FUZZ_ST_FAIL("the tensors cover %llu bytes of a data section of %llu", (unsigned long long)sum,
                            (unsigned long long)(size - 8 - hl));
    }

    /* the data set loader */
    e = vt_data_load_safetensors(path, "fuzz", &ds);
    if (e) {
        if (!vt_fuzz_st_known(e, 1)) VT_FUZZ_ST_FAIL("the data set loader refused with code %d (%s)", (int)e, vt_errmsg());
    } else {
        *accepted |= 2;
        if (!(*accepted & 1)) VT_FUZZ_ST_FAIL("a data set loaded from a file the reader refuses");
        if (vt_fuzz_dataset_bad(&ds)) VT_FUZZ_ST_FAIL("the data set loaded is inconsistent");
    }

    /* --init: the trainer's reader, then the state into each model */
    vt_recipe_default(&rec);
    e = vt_init_prepare(&rec, path, NULL, VT_INIT_AUTO, &g);
    if ((e == VT_OK) != ((*accepted & 1) != 0)) VT_FUZZ_ST_FAIL("vt_init_prepare and vt_st_read disagree (%d)", (int)e);
    if (!e && (!rec.has_init || memcmp(rec.init_sha256, f.sha256, 32) != 0)) VT_FUZZ_ST_FAIL("--init's SHA-256 not recorded");
    for (int k = 0; !e && k < VT_FUZZ_ST_MODELS; k++) {
        free(old), free(tmp);
        old = malloc(m[k].n_state * sizeof *old), tmp = malloc(m[k].n_state * sizeof *tmp);
        if (!old || !tmp) goto done;
        memcpy(old, m[k].state, m[k].n_state * sizeof *old);
        vt_err ea = vt_init_apply(&m[k], &g);
        if (ea) {
            if (!vt_fuzz_st_known(ea, 1))
                VT_FUZZ_ST_FAIL("model %d: vt_init_apply refused with code %d (%s)", k, (int)ea, vt_errmsg());
            if (memcmp(old, m[k].state, m[k].n_state * sizeof *old) != 0)
                VT_FUZZ_ST_FAIL("model %d: a refused file changed the state", k);
        } else {
            *accepted |= 4 << k;
            if (vt_fuzz_st_applied(&m[k], &g, old, tmp)) VT_FUZZ_ST_FAIL("model %d: the state is not the file's", k);
        }
    }
done:
    free(old), free(tmp);
    vt_st_free(&f), vt_st_free(&g);
    vt_data_free(&ds);
    return rc;
}

#endif
