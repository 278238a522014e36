#include "vt_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../store/vt_safetensors.h"
#include "../store/vt_store.h"
#include "vt_onnx.h"

static vt_st_dtype st_dtype(vt_dtype d)
{
    return d == VT_DT_F64 ? VT_ST_F64 : d == VT_DT_U8 ? VT_ST_U8 : d == VT_DT_I32 ? VT_ST_I32 : VT_ST_F32;
}

/* The ONNX model of the verified state in m: its metadata names the run (docs/format.md "Export
 * (ONNX)"). */
static vt_err write_onnx(const vt_export_opts *o, vt_model *m, const vt_recipe *rc, const char *manifest, uint64_t s,
                         const uint8_t sh[32], const uint8_t root[32], const uint8_t mh[32], const vt_commitment *c)
{
    uint8_t file[VT_COMMITMENT_FILE_LEN], ch[32];
    vt_commitment_body(c, file);
    memcpy(file + VT_COMMITMENT_BODY_LEN, c->signature, 64);
    VT_FORWARD_IF_ERROR(vt_sha256(file, sizeof file, ch));
    char hs[65], hr[65], hm[65], hc[65], pk[65], step[24], *recipe = NULL;
    vt_hex(sh, 32, hs);
    vt_hex(root, 32, hr);
    vt_hex(mh, 32, hm);
    vt_hex(ch, 32, hc);
    vt_hex(c->public_key, 32, pk);
    snprintf(step, sizeof step, "%llu", (unsigned long long)s);
    VT_FORWARD_IF_ERROR(vt_recipe_to_json(rc, &recipe));
    /* the input, as trainer eval feeds it (data/vt_data.h: value = (float)((double)v / x_max)) */
    const vt_program *p = &m->prog;
    const unsigned xmax = strcmp(rc->dataset, "digits") == 0 ? 16u : 255u;
    char input[640 + VT_RECIPE_SPEC_MAX], shape[96];
    if (rc->arch == VT_ARCH_RESNET)
        snprintf(shape, sizeof shape, "[N, %u, %u, %u], a channels-first image (channel planes of H x W, row-major: CIFAR's R, G, B)",
                 rc->image_channels, rc->image_height, rc->image_width);
    else
        snprintf(shape, sizeof shape, "[N, %u], the features in the data set's order (an image row-major)",
                 p->t[p->input].shape[1]);
    if (vt_data_is_file_spec(rc->dataset)) /* a user's file (docs/data.md "Data sets from your files") */
        snprintf(input, sizeof input,
                 "input: float32 %s; the data set %s: its float32 features as they are, or its uint8 features v as "
                 "(float)((double)v / 255); no mean or deviation normalisation",
                 shape, rc->dataset);
    else
        snprintf(input, sizeof input,
                 "input: float32 %s; value = (float)((double)v / %u) for each raw value v (0..%u) of the data set "
                 "%s, which float32 division v / %u.0f equals; no mean or deviation normalisation",
                 shape, xmax, xmax, rc->dataset, xmax);
    const char *meta[] = {"vt.format", "vt-onnx-1",
                          "vt.step", step,
                          "vt.state_hash", hs,
                          "vt.merkle_root", hr,
                          "vt.manifest_hash", hm,
                          "vt.commitment_hash", hc,
                          "vt.public_key", pk,
                          "vt.recipe", recipe,
                          "vt.manifest", manifest,
                          "vt.input", input,
                          "vt.outputs", "logits: float32 [N, classes], the last layer's output; probs: softmax(logits) "
                                        "[N, classes]; the predicted class is the first index of the largest "
                                        "probability (trainer eval's rule)"};
    char doc[512];
    snprintf(doc, sizeof doc, "The inference graph of step %s of a verified run (state hash %s), exported by trainer "
             "export --format onnx after checking it against the run's signed commitment.", step, hs);
    vt_err e = vt_onnx_write(o->out_path, m, meta, sizeof meta / sizeof meta[0] / 2, doc);
    free(recipe);
    return e;
}

static vt_err export_run(const vt_export_opts *o, vt_export_result *res, vt_store **st, vt_model *m, vt_merkle *tree,
                         char **manifest)
{
    char path[4096];
    size_t ml = 0;
    uint8_t mh[32], dh[32];
    vt_recipe rc;
    const int onnx = o->format == VT_EXPORT_ONNX;
    VT_RETURN_ERROR_IF(onnx && o->with_optimizer, VT_ERR_ARG,
                       "--optimizer: the ONNX export is the inference graph (use --format safetensors)");
    VT_RETURN_ERROR_IF(onnx && !vt_onnx_available(), VT_ERR_UNSUPPORTED,
                       "--format onnx: this trainer was built without ONNX support (it needs libonnx-dev, "
                       "protobuf-c-compiler and libprotobuf-c-dev at build time: scripts/install-deps.sh, then "
                       "reconfigure)");
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_FORWARD_IF_ERROR(vt_store_open(o->run_dir, 1, st));
    VT_FORWARD_IF_ERROR(vt_store_manifest(*st, manifest, &ml, mh));
    vt_err e = vt_manifest_parse(*manifest, ml, &rc, dh);
    VT_FORWARD_IF_ERROR(e);
    VT_RETURN_ERROR_IF(onnx && rc.arch == VT_ARCH_GPT, VT_ERR_ARG,
                       "the GPT's export to ONNX is not supported yet: use --format safetensors");
    /* the commitment: signature, key, manifest, root over every leaf */
    vt_commitment c;
    vt_store_commitment_path(o->run_dir, path, sizeof path);
    VT_FORWARD_IF_ERROR(vt_commitment_read(path, &c));
    uint8_t body[VT_COMMITMENT_BODY_LEN];
    vt_commitment_body(&c, body);
    VT_RETURN_ERROR_IF(vt_sign_verify_detached(c.signature, body, sizeof body, c.public_key) != 0, VT_ERR_MISMATCH,
                       "the commitment's signature does not verify");
    if (o->pubkey_path) {
        uint8_t pk[32];
        VT_FORWARD_IF_ERROR(vt_sign_read_public_key(o->pubkey_path, pk));
        VT_RETURN_ERROR_IF(memcmp(pk, c.public_key, 32) != 0, VT_ERR_MISMATCH,
                           "the commitment is signed by another key than %s", o->pubkey_path);
    }
    VT_RETURN_ERROR_IF(memcmp(mh, c.manifest_hash, 32) != 0, VT_ERR_MISMATCH,
                       "the run's manifest is not the committed one");
    uint64_t count;
    VT_FORWARD_IF_ERROR(vt_store_step_count(*st, &count));
    VT_RETURN_ERROR_IF(count != c.step_count || count != rc.steps + 1, VT_ERR_MISMATCH,
                       "the run holds %llu steps, its commitment %llu", (unsigned long long)count,
                       (unsigned long long)c.step_count);
    uint64_t s = o->has_step ? o->step : rc.steps;
    VT_RETURN_ERROR_IF(s > rc.steps, VT_ERR_ARG, "--step %llu: the run has steps 0..%llu", (unsigned long long)s,
                       (unsigned long long)rc.steps);
    vt_step_rec want;
    memset(&want, 0, sizeof want);
    for (uint64_t i = 0; i < count; i++) {
        vt_step_rec r;
        VT_FORWARD_IF_ERROR(vt_store_get_step(*st, i, &r));
        uint8_t leaf[32];
        VT_FORWARD_IF_ERROR(vt_step_leaf(i, r.state_hash, r.has_state, r.log_hash, leaf));
        VT_RETURN_ERROR_IF(memcmp(leaf, r.leaf, 32) != 0, VT_ERR_MISMATCH, "step %llu's leaf is not its record's",
                           (unsigned long long)i);
        VT_FORWARD_IF_ERROR(vt_merkle_append(tree, leaf));
        if (i == s) want = r;
    }
    uint8_t root[32];
    VT_FORWARD_IF_ERROR(vt_merkle_root(tree, root));
    VT_RETURN_ERROR_IF(memcmp(root, c.root, 32) != 0, VT_ERR_MISMATCH, "the run's leaves do not give its signed root");
    VT_RETURN_ERROR_IF(!vt_recipe_has_checkpoint(&rc, s), VT_ERR_ARG,
                       "--step %llu: no checkpoint at that step (checkpoints: every %u steps and the last)",
                       (unsigned long long)s, rc.checkpoint_every);
    VT_RETURN_ERROR_IF(!want.has_state, VT_ERR_FORMAT,
                       "step %llu's record lacks the state hash its recipe commits (a damaged run)",
                       (unsigned long long)s);
    /* the state: its checkpoint, hashed by the program's own rule */
    VT_FORWARD_IF_ERROR(vt_model_init(m, &rc, rc.batch, VT_ORDER_BLAS));
    float *state = NULL;
    e = vt_store_get_checkpoint(*st, s, m->n_state, &state);
    if (e == VT_ERR_ARG) /* a checkpoint the recipe promises is not recorded: a damaged or incomplete run */
        return vt_set_error(VT_ERR_FORMAT, "the run lacks the checkpoint of step %llu, which its recipe promises "
                            "(every %u steps and the last): damaged or incomplete", (unsigned long long)s,
                            rc.checkpoint_every);
    VT_FORWARD_IF_ERROR(e);
    e = vt_model_set_state(m, s, state, m->n_state);
    free(state);
    VT_FORWARD_IF_ERROR(e);
    uint8_t sh[32];
    VT_FORWARD_IF_ERROR(vt_model_state_hash(m, sh));
    VT_RETURN_ERROR_IF(memcmp(sh, want.state_hash, 32) != 0, VT_ERR_MISMATCH,
                       "the checkpoint of step %llu does not give its committed state hash", (unsigned long long)s);
    /* the tensors */
    const vt_program *p = &m->prog;
    if (onnx) {
        uint64_t bytes = 0;
        uint32_t n = 0;
        for (uint32_t i = 0; i < p->n_state; i++)
            if (p->t[i].cls != VT_TC_OPT) n++, bytes += p->t[i].n * vt_dtype_size((vt_dtype)p->t[i].dtype);
        VT_FORWARD_IF_ERROR(write_onnx(o, m, &rc, *manifest, s, sh, root, mh, &c));
        res->step = s, res->tensors = n, res->bytes = bytes;
        memcpy(res->state_hash, sh, 32);
        memcpy(res->root, root, 32);
        memcpy(res->public_key, c.public_key, 32);
        return VT_OK;
    }
    vt_st_tensor *t = calloc(p->n_state + 1, sizeof *t);
    VT_RETURN_ERROR_IF(!t, VT_ERR_NOMEM, "out of memory");
    uint32_t n = 0;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < p->n_state; i++) {
        const vt_tensor *d = &p->t[i];
        if (d->cls == VT_TC_OPT && !o->with_optimizer) continue;
        vt_st_tensor *x = &t[n++];
        x->name = d->name, x->dtype = st_dtype((vt_dtype)d->dtype), x->rank = d->rank;
        for (uint32_t k = 0; k < d->rank; k++) x->shape[k] = d->shape[k];
        size_t b = 0;
        x->data = vt_model_tensor(m, i, &b);
        bytes += b;
    }
    char hs[65], hr[65], hm[65], step[24];
    vt_hex(sh, 32, hs);
    vt_hex(root, 32, hr);
    vt_hex(mh, 32, hm);
    snprintf(step, sizeof step, "%llu", (unsigned long long)s);
    const char *meta[] = {"format", "vt-export-1", "step", step, "state_hash", hs, "merkle_root", hr, "manifest_hash", hm};
    e = vt_safetensors_write(o->out_path, t, n, meta, sizeof meta / sizeof meta[0] / 2);
    free(t);
    VT_FORWARD_IF_ERROR(e);
    res->step = s, res->tensors = n, res->bytes = bytes;
    memcpy(res->state_hash, sh, 32);
    memcpy(res->root, root, 32);
    memcpy(res->public_key, c.public_key, 32);
    return VT_OK;
}

vt_err vt_export_run(const vt_export_opts *o, vt_export_result *res)
{
    memset(res, 0, sizeof *res);
    vt_store *st = NULL;
    vt_model m;
    memset(&m, 0, sizeof m);
    vt_merkle tree;
    vt_merkle_init(&tree);
    char *manifest = NULL;
    vt_err e = export_run(o, res, &st, &m, &tree, &manifest);
    free(manifest);
    vt_merkle_free(&tree);
    vt_model_free(&m);
    vt_store_close(st);
    return e;
}
