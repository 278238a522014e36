#include "vt_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../data/vt_data.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../store/vt_safetensors.h"
#include "../store/vt_store.h"
#include "vt_onnx.h"
#include "vt_torch.h"
#include "vt_train.h"

static vt_st_dtype st_dtype(vt_dtype d)
{
    return d == VT_DT_F64 ? VT_ST_F64 : d == VT_DT_U8 ? VT_ST_U8 : d == VT_DT_I32 ? VT_ST_I32 : VT_ST_F32;
}

/* SHA-256 of the commitment file's bytes (body and signature): the hash the dispute game names. */
static vt_err commitment_hash(const vt_commitment *c, uint8_t ch[32])
{
    uint8_t file[VT_COMMITMENT_FILE_LEN];
    vt_commitment_body(c, file);
    memcpy(file + VT_COMMITMENT_BODY_LEN, c->signature, 64);
    return vt_sha256(file, sizeof file, ch);
}

/* The input, as trainer eval feeds it (data/vt_data.h: value = (float)((double)v / x_max)), in words. */
static void input_text(const vt_recipe *rcp, const vt_program *p, char *input, size_t cap)
{
    const unsigned xmax = strcmp(rcp->dataset, "digits") == 0 ? 16u : 255u;
    char shape[96];
    uint32_t chw[3];
    if (rcp->arch == VT_ARCH_RESNET)
        snprintf(shape, sizeof shape, "[N, %u, %u, %u], a channels-first image (channel planes of H x W, row-major: CIFAR's R, G, B)",
                 rcp->image_channels, rcp->image_height, rcp->image_width);
    else if (vt_onnx_input_image(p, chw) == 1) /* a client graph whose first convolution reads the batch */
        snprintf(shape, sizeof shape, "[N, %u, %u, %u], a channels-first image (the module's own input)", chw[0],
                 chw[1], chw[2]);
    else
        snprintf(shape, sizeof shape, "[N, %u], the features in the data set's order (an image row-major)",
                 p->t[p->input].shape[1]);
    if (vt_data_is_file_spec(rcp->dataset)) /* a user's file (docs/data.md "Data sets from your files") */
        snprintf(input, cap,
                 "input: float32 %s; the data set %s: its float32 features as they are, or its uint8 features v as "
                 "(float)((double)v / 255); no mean or deviation normalisation",
                 shape, rcp->dataset);
    else
        snprintf(input, cap,
                 "input: float32 %s; value = (float)((double)v / %u) for each raw value v (0..%u) of the data set "
                 "%s, which float32 division v / %u.0f equals; no mean or deviation normalisation",
                 shape, xmax, xmax, rcp->dataset, xmax);
}

/* The GPT's vocabulary (token id i is byte vocab[i]) from its data set, which must be the run's. */
static vt_err gpt_vocab(const vt_export_opts *o, const vt_recipe *rcp, const uint8_t dh[32], char *hex, size_t cap)
{
    const char *fmt = o->format == VT_EXPORT_ONNX ? "--format onnx" : "--layout torch";
    char spec[VT_RECIPE_SPEC_MAX];
    vt_recipe_dataset_spec(rcp, spec, sizeof spec);
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    vt_err e = vt_data_load(spec, o->data_root, &ds);
    if (e)
        return vt_set_error(VT_ERR_IO, "%s: the GPT's vocabulary comes from its data set %s, which "
                            "cannot be loaded (--data-dir DIR): %s", fmt, spec, vt_errmsg());
    if (memcmp(ds.hash, dh, 32) != 0) {
        vt_data_free(&ds);
        return vt_set_error(VT_ERR_MISMATCH, "%s: the data set %s is not the run's (another hash): its "
                            "vocabulary may differ", fmt, spec);
    }
    e = ds.text && ds.n_classes >= 1 && 2 * (size_t)ds.n_classes < cap ? VT_OK
        : vt_set_error(VT_ERR_FORMAT, "%s: %s is not a text data set", fmt, spec);
    if (!e) vt_hex(ds.chars, ds.n_classes, hex);
    vt_data_free(&ds);
    return e;
}

/* The ONNX model of the verified state in m: its metadata names the run (docs/format.md "Export
 * (ONNX)"). */
static vt_err write_onnx(const vt_export_opts *o, vt_model *m, const vt_recipe *rcp, const char *manifest, uint64_t s,
                         const uint8_t sh[32], const uint8_t root[32], const uint8_t mh[32], const uint8_t dh[32],
                         const vt_commitment *c)
{
    uint8_t ch[32];
    VT_FORWARD_IF_ERROR(commitment_hash(c, ch));
    char hs[65], hr[65], hm[65], hc[65], pk[65], step[24], *recipe = NULL;
    vt_hex(sh, 32, hs);
    vt_hex(root, 32, hr);
    vt_hex(mh, 32, hm);
    vt_hex(ch, 32, hc);
    vt_hex(c->public_key, 32, pk);
    snprintf(step, sizeof step, "%llu", (unsigned long long)s);
    VT_FORWARD_IF_ERROR(vt_recipe_to_json(rcp, &recipe));
    char input[640 + VT_RECIPE_SPEC_MAX], outputs[512], vocab[2 * 256 + 1] = "";
    const int gpt = rcp->arch == VT_ARCH_GPT;
    if (gpt) {
        vt_err e = gpt_vocab(o, rcp, dh, vocab, sizeof vocab);
        if (e) {
            free(recipe);
            return e;
        }
        snprintf(input, sizeof input, "input: int64 token ids [N, %u]: N windows of exactly T = %u (gpt_context) "
                 "tokens, each id in [0, %u); token id i is the byte of hex digits 2i, 2i+1 of vt.vocab; causal: "
                 "position k sees tokens 0..k only, so a shorter text may be padded on the right with any ids",
                 rcp->gpt_context, rcp->gpt_context, rcp->gpt_vocab);
        snprintf(outputs, sizeof outputs, "logits: float32 [N*T, %u], row n*T + k the logits of the token after "
                 "position k of window n; probs: softmax(logits) [N*T, %u], the next-token probabilities; the "
                 "predicted token is the first index of the largest probability", rcp->gpt_vocab, rcp->gpt_vocab);
    } else {
        input_text(rcp, &m->prog, input, sizeof input);
        snprintf(outputs, sizeof outputs, "logits: float32 [N, classes], the last layer's output; probs: "
                 "softmax(logits) [N, classes]; the predicted class is the first index of the largest probability "
                 "(trainer eval's rule)");
    }
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
                          "vt.outputs", outputs,
                          "vt.vocab", vocab};
    char doc[512];
    snprintf(doc, sizeof doc, "The inference graph of step %s of a verified run (state hash %s), exported by trainer "
             "export --format onnx after checking it against the run's signed commitment.", step, hs);
    /* vt.vocab: a text model's only (the last pair) */
    vt_err e = vt_onnx_write(o->out_path, m, meta, sizeof meta / sizeof meta[0] / 2 - !gpt, doc);
    free(recipe);
    return e;
}

/* ---------------------------------------------------------------- --layout torch
 * docs/format.md "Export (safetensors, --layout torch)": the state as a PyTorch state_dict of the
 * modules docs/cnn.md and docs/gpt.md describe. Values move, never change: a linear weight [in, out]
 * becomes nn.Linear's [out, in], a convolution weight [k, k, C_in, C_out] nn.Conv2d's
 * [C_out, C_in, k, k]; embeddings, vectors and running statistics are kept as they are. */

#define TORCH_NAME_MAX VT_TORCH_NAME_MAX

typedef struct {
    vt_st_tensor *t;
    char (*names)[TORCH_NAME_MAX];
    float **bufs;
    uint32_t n, cap;
    int64_t nbt; /* num_batches_tracked: the step */
} torch_set;

static vt_err torch_add(torch_set *ts, const char *name, vt_st_tensor **out)
{
    VT_RETURN_ERROR_IF(ts->n >= ts->cap, VT_ERR_INTERNAL, "export: more torch tensors than planned");
    vt_st_tensor *t = &ts->t[ts->n];
    VT_RETURN_ERROR_IF((size_t)snprintf(ts->names[ts->n], TORCH_NAME_MAX, "%s", name) >= TORCH_NAME_MAX, VT_ERR_LIMIT,
                       "export: the tensor name %s is too long", name);
    t->name = ts->names[ts->n++];
    *out = t;
    return VT_OK;
}

/* The state's tensors in the torch layout (parameters and buffers in the program's order, each
 * batch norm's num_batches_tracked after its running_var; with --optimizer the optimiser's tensors
 * after them, named optimizer.<torch name>.<momentum_buffer|exp_avg|exp_avg_sq>). */
static vt_err torch_tensors(const vt_export_opts *o, vt_model *m, const vt_recipe *rcp, torch_set *ts, uint64_t *bytes)
{
    const vt_program *p = &m->prog;
    ts->cap = 2 * p->n_state + 1;
    ts->t = calloc(ts->cap, sizeof *ts->t);
    ts->names = calloc(ts->cap, sizeof *ts->names);
    ts->bufs = calloc(ts->cap, sizeof *ts->bufs);
    VT_RETURN_ERROR_IF(!ts->t || !ts->names || !ts->bufs, VT_ERR_NOMEM, "out of memory");
    for (int pass = 0; pass < 2; pass++) /* 0: parameters and buffers; 1: the optimiser's state */
        for (uint32_t i = 0; i < p->n_state; i++) {
            const vt_tensor *d = &p->t[i];
            if ((d->cls == VT_TC_OPT) != pass || (pass && !o->with_optimizer)) continue;
            VT_RETURN_ERROR_IF(d->dtype != VT_DT_F32, VT_ERR_INTERNAL, "export: state tensor %s is not F32", d->name);
            char full[TORCH_NAME_MAX];
            int how = VT_TORCH_COPY;
            VT_RETURN_ERROR_IF(vt_torch_of(rcp, p, i, full, sizeof full, &how), VT_ERR_INTERNAL,
                               "export: %s belongs to no parameter", d->name);
            vt_st_tensor *t = NULL;
            VT_FORWARD_IF_ERROR(torch_add(ts, full, &t));
            t->dtype = VT_ST_F32;
            float *y = malloc(d->n * sizeof *y);
            VT_RETURN_ERROR_IF(!y, VT_ERR_NOMEM, "out of memory");
            ts->bufs[ts->n - 1] = y;
            size_t b = 0;
            vt_torch_shape(how, d, &t->rank, t->shape);
            vt_torch_move(how, d, 1, vt_model_tensor(m, i, &b), y);
            t->data = y;
            *bytes += b;
            const size_t nl = strlen(full), sl = strlen(".running_var");
            if (!pass && d->cls == VT_TC_BUFFER && nl > sl && strcmp(full + nl - sl, ".running_var") == 0) {
                char nb[TORCH_NAME_MAX + 32];
                snprintf(nb, sizeof nb, "%.*s.num_batches_tracked", (int)(nl - sl), full);
                VT_FORWARD_IF_ERROR(torch_add(ts, nb, &t));
                t->dtype = VT_ST_I64, t->rank = 0, t->data = &ts->nbt;
                *bytes += 8;
            }
        }
    return VT_OK;
}

static const char *arch_word(vt_arch_kind a)
{
    return a == VT_ARCH_GPT ? "gpt" : a == VT_ARCH_RESNET ? "resnet" : "mlp";
}

/* The safetensors file in the torch layout, with the architecture in its metadata. */
static vt_err write_torch(const vt_export_opts *o, vt_model *m, const vt_recipe *rcp, const char *manifest, uint64_t s,
                          const uint8_t sh[32], const uint8_t root[32], const uint8_t mh[32], const uint8_t dh[32],
                          const vt_commitment *c, vt_export_result *res)
{
    const vt_program *p = &m->prog;
    uint8_t ch[32];
    VT_FORWARD_IF_ERROR(commitment_hash(c, ch));
    char hs[65], hr[65], hm[65], hc[65], pk[65], step[24], vocab[2 * 256 + 1] = "", input[640 + VT_RECIPE_SPEC_MAX];
    if (rcp->arch == VT_ARCH_GPT) VT_FORWARD_IF_ERROR(gpt_vocab(o, rcp, dh, vocab, sizeof vocab));
    vt_hex(sh, 32, hs);
    vt_hex(root, 32, hr);
    vt_hex(mh, 32, hm);
    vt_hex(ch, 32, hc);
    vt_hex(c->public_key, 32, pk);
    snprintf(step, sizeof step, "%llu", (unsigned long long)s);
    if (rcp->arch == VT_ARCH_GPT)
        snprintf(input, sizeof input, "input: int64 token ids [N, t] with t <= %u (gpt_context); token id i is the "
                 "byte of hex digits 2i, 2i+1 of vt.vocab; output: logits [N, t, %u]", rcp->gpt_context, rcp->gpt_vocab);
    else
        input_text(rcp, p, input, sizeof input);
    char divisor[96], num[16][32]; /* the numbers of the metadata, as text */
    size_t nn = 0;
    if (vt_data_is_file_spec(rcp->dataset))
        snprintf(divisor, sizeof divisor, "255 for uint8 features, 1 for float32 features (the data set's dtype)");
    else
        snprintf(divisor, sizeof divisor, "%u", strcmp(rcp->dataset, "digits") == 0 ? 16u : 255u);
    char *recipe = NULL;
    VT_FORWARD_IF_ERROR(vt_recipe_to_json(rcp, &recipe));
    const char *meta[64];
    size_t k = 0;
#define META(key, val) (meta[k++] = (key), meta[k++] = (val))
#define META_NUM(key, fmt, val) (snprintf(num[nn], sizeof num[nn], fmt, val), META(key, num[nn++]))
    META("format", "pt");
    META("vt.format", "vt-export-torch-1");
    META("vt.layout", "torch");
    META("vt.arch", arch_word(rcp->arch));
    META("vt.step", step);
    META("vt.state_hash", hs);
    META("vt.merkle_root", hr);
    META("vt.manifest_hash", hm);
    META("vt.commitment_hash", hc);
    META("vt.public_key", pk);
    META("vt.recipe", recipe);
    META("vt.manifest", manifest);
    META("vt.input", input);
    if (rcp->arch == VT_ARCH_GPT) {
        META("vt.vocab", vocab);
        META_NUM("vt.gpt_layers", "%u", rcp->gpt_layers);
        META_NUM("vt.gpt_heads", "%u", rcp->gpt_heads);
        META_NUM("vt.gpt_width", "%u", rcp->gpt_width);
        META_NUM("vt.gpt_context", "%u", rcp->gpt_context);
        META_NUM("vt.gpt_vocab", "%u", rcp->gpt_vocab);
        META_NUM("vt.gpt_tie", "%u", rcp->gpt_tie);
        META_NUM("vt.ln_eps", "%.17g", rcp->ln_eps);
        META("vt.qkv_layout", "h.L.attn.c_attn is nn.Linear(C, 3C): output features [0, C) are q, [C, 2C) k, "
                              "[2C, 3C) v; head j of each uses features [j D, (j + 1) D), D = C / gpt_heads; scores "
                              "q k^T / sqrt(D), causal softmax; heads concatenated in order before c_proj");
        META("vt.modules", "wte, wpe: nn.Embedding; h.L (nn.ModuleList): ln_1, attn.c_attn, attn.c_proj, ln_2, "
                           "mlp.c_fc, mlp.c_proj (GELU, tanh form, between); ln_f: nn.LayerNorm(eps = vt.ln_eps); "
                           "logits = ln_f(x) wte.weight^T when vt.gpt_tie = 1 (no lm_head tensor), else lm_head "
                           "(nn.Linear, no bias)");
    } else {
        META("vt.input_divisor", divisor);
        if (rcp->arch == VT_ARCH_RESNET) {
            META_NUM("vt.bn_eps", "%.17g", rcp->bn_eps);
            META_NUM("vt.bn_momentum", "%.17g", rcp->bn_momentum);
            META_NUM("vt.resnet_width", "%u", rcp->resnet_width);
            META_NUM("vt.resnet_stages", "%u", rcp->resnet_stages);
            META_NUM("vt.resnet_blocks", "%u", rcp->resnet_blocks);
            META_NUM("vt.resnet_pool", "%u", rcp->resnet_pool);
            META("vt.modules", "stem (conv, bn), ReLU, 2x2 max pool when vt.resnet_pool = 1; layerS.J basic "
                               "blocks: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), shortcut = "
                               "shortcut.bn(shortcut.conv(x)) (1x1, strided) where present, else x; global average "
                               "pool; fc (nn.Linear). nn.Conv2d bias=False, padding k // 2 (zeros), stride 2 in the "
                               "first block of stages 2 and up; nn.BatchNorm2d(eps = vt.bn_eps, momentum = "
                               "vt.bn_momentum)");
        } else if (rcp->has_model) {
            META("vt.modules", "the client's own module (trainer train --model): its state_dict's names and shapes "
                               "(the ONNX file's initializers), to load with load_state_dict(strict=True)");
        } else {
            META("vt.modules", "fc1 .. fcL: nn.Linear, ReLU between them (not after the last); logits = the last "
                               "layer's output; the prediction is the first index of the largest softmax "
                               "probability");
        }
    }
    if (o->with_optimizer)
        META("vt.optimizer", "optimizer.<name>.momentum_buffer (SGD: v = momentum v + g + weight_decay w), or "
                             "optimizer.<name>.exp_avg and .exp_avg_sq (Adam, AdamW), in the parameter's torch layout; "
                             "their step count is vt.step");
#undef META_NUM
#undef META
    torch_set ts;
    memset(&ts, 0, sizeof ts);
    ts.nbt = (int64_t)s;
    uint64_t bytes = 0;
    vt_err e = torch_tensors(o, m, rcp, &ts, &bytes);
    if (!e) e = vt_safetensors_write(o->out_path, ts.t, ts.n, meta, k / 2);
    if (!e) res->tensors = ts.n, res->bytes = bytes;
    for (uint32_t i = 0; ts.bufs && i < ts.n; i++) free(ts.bufs[i]);
    free(ts.bufs);
    free(ts.names);
    free(ts.t);
    free(recipe);
    return e;
}

static vt_err export_run(const vt_export_opts *o, vt_export_result *res, vt_store **st, vt_model *m, vt_merkle *tree,
                         char **manifest)
{
    char path[4096];
    size_t ml = 0;
    uint8_t mh[32], dh[32];
    vt_recipe rcp;
    const int onnx = o->format == VT_EXPORT_ONNX;
    VT_RETURN_ERROR_IF(onnx && o->with_optimizer, VT_ERR_ARG,
                       "--optimizer: the ONNX export is the inference graph (use --format safetensors)");
    VT_RETURN_ERROR_IF(onnx && o->layout != VT_LAYOUT_PROJECT, VT_ERR_ARG,
                       "--layout: the ONNX export has ONNX's own layout (--layout is for --format safetensors)");
    VT_RETURN_ERROR_IF(onnx && !vt_onnx_available(), VT_ERR_UNSUPPORTED,
                       "--format onnx: this trainer was built without ONNX support (it needs libonnx-dev, "
                       "protobuf-c-compiler and libprotobuf-c-dev at build time: scripts/install-deps.sh, then "
                       "reconfigure)");
    VT_FORWARD_IF_ERROR(vt_sign_init());
    VT_FORWARD_IF_ERROR(vt_store_open(o->run_dir, 1, st));
    VT_FORWARD_IF_ERROR(vt_store_manifest(*st, manifest, &ml, mh));
    vt_err e = vt_manifest_parse(*manifest, ml, &rcp, dh);
    VT_FORWARD_IF_ERROR(e);
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
    VT_RETURN_ERROR_IF(count != c.step_count || count != rcp.steps + 1, VT_ERR_MISMATCH,
                       "the run holds %llu steps, its commitment %llu", (unsigned long long)count,
                       (unsigned long long)c.step_count);
    uint64_t s = o->has_step ? o->step : rcp.steps;
    VT_RETURN_ERROR_IF(s > rcp.steps, VT_ERR_ARG, "--step %llu: the run has steps 0..%llu", (unsigned long long)s,
                       (unsigned long long)rcp.steps);
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
    VT_RETURN_ERROR_IF(!vt_recipe_has_checkpoint(&rcp, s), VT_ERR_ARG,
                       "--step %llu: no checkpoint at that step (checkpoints: every %u steps and the last)",
                       (unsigned long long)s, rcp.checkpoint_every);
    VT_RETURN_ERROR_IF(!want.has_state, VT_ERR_FORMAT,
                       "step %llu's record lacks the state hash its recipe commits (a damaged run)",
                       (unsigned long long)s);
    /* the state: its checkpoint, hashed by the program's own rule */
    VT_FORWARD_IF_ERROR(vt_model_init(m, &rcp, rcp.batch, VT_ORDER_BLAS));
    float *state = NULL;
    e = vt_store_get_checkpoint(*st, s, m->n_state, &state);
    if (e == VT_ERR_ARG) /* a checkpoint the recipe promises is not recorded: a damaged or incomplete run */
        return vt_set_error(VT_ERR_FORMAT, "the run lacks the checkpoint of step %llu, which its recipe promises "
                            "(every %u steps and the last): damaged or incomplete", (unsigned long long)s,
                            rcp.checkpoint_every);
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
        VT_FORWARD_IF_ERROR(write_onnx(o, m, &rcp, *manifest, s, sh, root, mh, dh, &c));
        res->step = s, res->tensors = n, res->bytes = bytes;
        memcpy(res->state_hash, sh, 32);
        memcpy(res->root, root, 32);
        memcpy(res->public_key, c.public_key, 32);
        return VT_OK;
    }
    if (o->layout == VT_LAYOUT_TORCH) {
        VT_FORWARD_IF_ERROR(write_torch(o, m, &rcp, *manifest, s, sh, root, mh, dh, &c, res));
        res->step = s;
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
