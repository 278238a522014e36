#include "vt_recipe.h"

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_hash.h"
#include "../kernels/vt_math.h"
#include "vt_graph.h"

void vt_recipe_default(vt_recipe *r)
{
    memset(r, 0, sizeof *r);
    r->arch = VT_ARCH_MLP;
    r->program_version = 1;
    snprintf(r->dataset, sizeof r->dataset, "mnist-train");
    r->n_layers = 2;
    r->widths[0] = 784, r->widths[1] = 128, r->widths[2] = 10;
    r->batch = 64;
    r->steps = 3000;
    r->seed = 1;
    r->optimizer = VT_OPT_SGD;
    r->lr = 0.05, r->momentum = 0.9, r->weight_decay = 0.0;
    r->beta1 = 0.9, r->beta2 = 0.999, r->eps = 1e-8;
    r->schedule = VT_SCHED_CONSTANT;
    r->decay_factor = 0.5, r->final_lr_factor = 0.1;
    r->bound.mode = VT_BOUND_PROVABLE, r->bound.lambda = VT_DEFAULT_LAMBDA;
    r->bound.rounding = VT_ROUNDING_EXACT; /* the stronger guarantee, at no measurable cost (docs/benchmarks.md) */
    r->resnet_width = 16, r->resnet_stages = 3, r->resnet_blocks = 1, r->resnet_pool = 1;
    r->bn_momentum = 0.1, r->bn_eps = 1e-5;
    r->gpt_layers = 2, r->gpt_heads = 4, r->gpt_width = 128, r->gpt_context = 64, r->gpt_vocab = 65, r->gpt_tie = 1;
    r->dropout = 0.0, r->clip_norm = 1.0, r->ln_eps = 1e-5;
    r->checkpoint_every = 100;
    r->state_hash_every = 10;
    r->zstd_level = 3;
}

/* ------------------------------------------------------------- field table */

typedef enum { F_STR, F_U64, F_U32, F_INT, F_REAL, F_LAYERS, F_ENUM, F_NAMES } ftype;
typedef struct {
    const char *key;
    ftype type;
    size_t off;
    const char *const *names; /* F_ENUM */
} field;

static const char *const arch_names[] = {"mlp", "resnet", "gpt", NULL};
static const char *const opt_names[] = {"sgd", "adam", "adamw", NULL};
static const char *const sched_names[] = {"constant", "step", "linear", "cosine", NULL};
static const char *const bound_names[] = {"provable", "probabilistic", NULL};
static const char *const rounding_names[] = {"log", "exact", NULL};
static const char *const loss_names[] = {"cross_entropy", "mse", "l1", "bce_with_logits", "next_token", NULL};

#define OFF(m) offsetof(vt_recipe, m)
static const field fields[] = {
    {"arch", F_ENUM, OFF(arch), arch_names},
    {"augment_flip", F_U32, OFF(augment_flip), NULL},
    {"augment_pad", F_U32, OFF(augment_pad), NULL},
    {"batch", F_U32, OFF(batch), NULL},
    {"beta1", F_REAL, OFF(beta1), NULL},
    {"beta2", F_REAL, OFF(beta2), NULL},
    {"bn_eps", F_REAL, OFF(bn_eps), NULL},
    {"bn_momentum", F_REAL, OFF(bn_momentum), NULL},
    {"bound_mode", F_ENUM, OFF(bound.mode), bound_names},
    {"checkpoint_every", F_U32, OFF(checkpoint_every), NULL},
    {"clip_norm", F_REAL, OFF(clip_norm), NULL},
    {"dataset", F_STR, OFF(dataset), NULL},
    {"decay_every", F_U64, OFF(decay_every), NULL},
    {"model", F_STR, OFF(model), NULL},
    {"loss", F_ENUM, OFF(loss), loss_names},
    {"frozen", F_NAMES, OFF(frozen), NULL},
    {"trainable", F_NAMES, OFF(trainable), NULL},
    {"decay_factor", F_REAL, OFF(decay_factor), NULL},
    {"dropout", F_REAL, OFF(dropout), NULL},
    {"eps", F_REAL, OFF(eps), NULL},
    {"final_lr_factor", F_REAL, OFF(final_lr_factor), NULL},
    {"gemm_arith", F_ENUM, OFF(gemm_arith), vt_gemm_arith_names},
    {"gpt_context", F_U32, OFF(gpt_context), NULL},
    {"gpt_heads", F_U32, OFF(gpt_heads), NULL},
    {"gpt_layers", F_U32, OFF(gpt_layers), NULL},
    {"gpt_tie", F_U32, OFF(gpt_tie), NULL},
    {"gpt_vocab", F_U32, OFF(gpt_vocab), NULL},
    {"gpt_width", F_U32, OFF(gpt_width), NULL},
    {"image_channels", F_U32, OFF(image_channels), NULL},
    {"image_height", F_U32, OFF(image_height), NULL},
    {"image_width", F_U32, OFF(image_width), NULL},
    {"lambda", F_REAL, OFF(bound.lambda), NULL},
    {"layers", F_LAYERS, 0, NULL},
    {"ln_eps", F_REAL, OFF(ln_eps), NULL},
    {"lr", F_REAL, OFF(lr), NULL},
    {"momentum", F_REAL, OFF(momentum), NULL},
    {"optimizer", F_ENUM, OFF(optimizer), opt_names},
    {"program_version", F_U32, OFF(program_version), NULL},
    {"resnet_blocks", F_U32, OFF(resnet_blocks), NULL},
    {"resnet_pool", F_U32, OFF(resnet_pool), NULL},
    {"resnet_stages", F_U32, OFF(resnet_stages), NULL},
    {"resnet_width", F_U32, OFF(resnet_width), NULL},
    {"rounding", F_ENUM, OFF(bound.rounding), rounding_names},
    {"schedule", F_ENUM, OFF(schedule), sched_names},
    {"seed", F_U64, OFF(seed), NULL},
    {"state_hash_every", F_U32, OFF(state_hash_every), NULL},
    {"steps", F_U64, OFF(steps), NULL},
    {"subset", F_U64, OFF(subset), NULL},
    {"warmup", F_U64, OFF(warmup), NULL},
    {"weight_decay", F_REAL, OFF(weight_decay), NULL},
    {"zstd_level", F_INT, OFF(zstd_level), NULL},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static const field *find_field(const char *key)
{
    for (size_t i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].key, key) == 0) return &fields[i];
    return NULL;
}

static vt_err get_uint(json_t *v, const char *key, uint64_t max, uint64_t *out)
{
    VT_RETURN_ERROR_IF(!json_is_integer(v) || json_integer_value(v) < 0 ||
                           (uint64_t)json_integer_value(v) > max,
                       VT_ERR_FORMAT, "recipe key \"%s\": expected an integer in 0..%llu", key,
                       (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return VT_OK;
}

static vt_err set_field(vt_recipe *r, const field *f, json_t *v)
{
    char *base = (char *)r + f->off;
    uint64_t u = 0;
    switch (f->type) {
    case F_STR: {
        VT_RETURN_ERROR_IF(!json_is_string(v) || json_string_length(v) == 0 ||
                               json_string_length(v) >= sizeof r->dataset,
                           VT_ERR_FORMAT, "recipe key \"%s\": expected a non-empty string of at most %zu bytes",
                           f->key, sizeof r->dataset - 1);
        memcpy(base, json_string_value(v), json_string_length(v) + 1);
        return VT_OK;
    }
    case F_U64:
        VT_FORWARD_IF_ERROR(get_uint(v, f->key, (uint64_t)INT64_MAX, &u));
        memcpy(base, &u, sizeof u);
        return VT_OK;
    case F_U32: {
        VT_FORWARD_IF_ERROR(get_uint(v, f->key, UINT32_MAX, &u));
        uint32_t w = (uint32_t)u;
        memcpy(base, &w, sizeof w);
        if (f->off == OFF(program_version)) r->program_set = 1; /* named: a new run keeps it */
        return VT_OK;
    }
    case F_INT: {
        VT_RETURN_ERROR_IF(!json_is_integer(v) || json_integer_value(v) < -100 || json_integer_value(v) > 100,
                           VT_ERR_FORMAT, "recipe key \"%s\": expected an integer in -100..100", f->key);
        int w = (int)json_integer_value(v);
        memcpy(base, &w, sizeof w);
        return VT_OK;
    }
    case F_REAL: {
        VT_RETURN_ERROR_IF(!json_is_number(v), VT_ERR_FORMAT, "recipe key \"%s\": expected a number", f->key);
        double d = json_number_value(v);
        VT_RETURN_ERROR_IF(!isfinite(d), VT_ERR_FORMAT, "recipe key \"%s\": not finite", f->key);
        memcpy(base, &d, sizeof d);
        return VT_OK;
    }
    case F_ENUM: {
        VT_RETURN_ERROR_IF(!json_is_string(v), VT_ERR_FORMAT, "recipe key \"%s\": expected a string", f->key);
        for (int i = 0; f->names[i]; i++)
            if (strcmp(f->names[i], json_string_value(v)) == 0) {
                memcpy(base, &i, sizeof i);
                return VT_OK;
            }
        VT_RETURN_ERROR(VT_ERR_FORMAT, "recipe key \"%s\": unknown value \"%s\"", f->key, json_string_value(v));
    }
    case F_LAYERS: {
        size_t n = json_is_array(v) ? json_array_size(v) : 0;
        VT_RETURN_ERROR_IF(n < 2 || n > VT_MAX_LAYERS + 1, VT_ERR_FORMAT,
                           "recipe key \"layers\": expected an array of 2..%d widths", VT_MAX_LAYERS + 1);
        uint32_t widths[VT_MAX_LAYERS + 1] = {0};
        for (size_t i = 0; i < n; i++) {
            VT_FORWARD_IF_ERROR(get_uint(json_array_get(v, i), "layers", 1u << 16, &u));
            VT_RETURN_ERROR_IF(u == 0, VT_ERR_FORMAT, "recipe key \"layers\": widths must be >= 1");
            widths[i] = (uint32_t)u;
        }
        memcpy(r->widths, widths, sizeof widths);
        r->n_layers = (uint32_t)(n - 1);
        return VT_OK;
    }
    case F_NAMES: { /* an array of names, kept one per line */
        char buf[sizeof r->frozen] = "";
        size_t len = 0;
        VT_RETURN_ERROR_IF(!json_is_array(v), VT_ERR_FORMAT, "recipe key \"%s\": expected an array of names", f->key);
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *s = json_array_get(v, i);
            size_t n = json_is_string(s) ? json_string_length(s) : 0;
            VT_RETURN_ERROR_IF(n == 0 || memchr(json_string_value(s), '\n', n) || len + n + 2 > sizeof buf,
                               VT_ERR_FORMAT,
                               "recipe key \"%s\": expected non-empty names of one line, %zu bytes in all at most",
                               f->key, sizeof buf - 1);
            if (len) buf[len++] = '\n';
            memcpy(buf + len, json_string_value(s), n + 1);
            len += n;
        }
        memcpy(base, buf, sizeof buf);
        return VT_OK;
    }
    }
    return VT_ERR_INTERNAL;
}

static vt_err apply_object(vt_recipe *r, json_t *obj, const char *what)
{
    VT_RETURN_ERROR_IF(!json_is_object(obj), VT_ERR_FORMAT, "%s: the recipe must be a JSON object", what);
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        const field *f = find_field(key);
        VT_RETURN_ERROR_IF(!f, VT_ERR_FORMAT, "%s: unknown recipe key \"%s\"", what, key);
        vt_err e = set_field(r, f, v);
        if (e) return vt_error_prefix(e, "%s", what);
    }
    return VT_OK;
}

vt_err vt_json_check_limits(const char *text, size_t len, const char *what)
{
    VT_RETURN_ERROR_IF(len > VT_JSON_MAX_BYTES, VT_ERR_LIMIT, "%s: %zu bytes, more than the limit of %u",
                       what, len, (unsigned)VT_JSON_MAX_BYTES);
    /* nesting outside strings (a string's brackets and escaped quotes do not count) */
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            VT_RETURN_ERROR_IF(++depth > VT_JSON_MAX_DEPTH, VT_ERR_LIMIT,
                               "%s: JSON nested deeper than the limit of %d levels", what, VT_JSON_MAX_DEPTH);
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return VT_OK;
}

/* A user's recipe: every error in it is the user's (VT_ERR_ARG, the usage exit status). */
static vt_err users(vt_err e) { return e == VT_ERR_FORMAT || e == VT_ERR_LIMIT ? VT_ERR_ARG : e; }

vt_err vt_recipe_apply_json(vt_recipe *r, const char *text, const char *what)
{
    VT_FORWARD_IF_ERROR(users(vt_json_check_limits(text, strlen(text), what)));
    json_error_t je;
    json_t *obj = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    VT_RETURN_ERROR_IF(!obj, VT_ERR_ARG, "%s: invalid JSON at line %d column %d: %s", what, je.line, je.column,
                       je.text);
    vt_err e = apply_object(r, obj, what);
    json_decref(obj);
    return users(e);
}

vt_err vt_recipe_load_file(vt_recipe *r, const char *path)
{
    /* read at most the limit and one byte more (a device such as /dev/zero has no size to ask) */
    FILE *f = fopen(path, "rb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_ARG, "recipe %s: cannot open it", path);
    char *buf = malloc((size_t)VT_JSON_MAX_BYTES + 2);
    size_t n = buf ? fread(buf, 1, (size_t)VT_JSON_MAX_BYTES + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    VT_RETURN_ERROR_IF(!buf, VT_ERR_NOMEM, "out of memory");
    if (rerr) {
        free(buf);
        VT_RETURN_ERROR(VT_ERR_ARG, "recipe %s: cannot read it", path);
    }
    if (n > VT_JSON_MAX_BYTES) {
        free(buf);
        VT_RETURN_ERROR(VT_ERR_ARG, "recipe %s: more than the limit of %u bytes", path, (unsigned)VT_JSON_MAX_BYTES);
    }
    buf[n] = 0;
    vt_err e = VT_OK;
    if (memchr(buf, 0, n)) e = vt_set_error(VT_ERR_ARG, "recipe %s: a NUL byte: not a JSON text", path);
    if (!e) e = vt_json_check_limits(buf, n, path);
    json_t *obj = NULL;
    json_error_t je;
    if (!e) {
        obj = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
        if (!obj) e = vt_set_error(VT_ERR_ARG, "recipe %s: %s (line %d)", path, je.text, je.line);
    }
    free(buf);
    if (!e) e = apply_object(r, obj, path);
    json_decref(obj);
    return users(e);
}

vt_err vt_recipe_set(vt_recipe *r, const char *a)
{
    const char *eq = strchr(a, '=');
    VT_RETURN_ERROR_IF(!eq || eq == a, VT_ERR_ARG, "override \"%s\": expected key=value", a);
    char key[64];
    size_t kl = (size_t)(eq - a);
    VT_RETURN_ERROR_IF(kl >= sizeof key, VT_ERR_ARG, "override \"%s\": key too long", a);
    memcpy(key, a, kl);
    key[kl] = 0;
    const field *f = find_field(key);
    VT_RETURN_ERROR_IF(!f, VT_ERR_ARG, "override: unknown recipe key \"%s\"", key);
    json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    if (!v) v = json_string(eq + 1);
    VT_RETURN_ERROR_IF(!v, VT_ERR_NOMEM, "out of memory");
    vt_err e = set_field(r, f, v);
    json_decref(v);
    return users(e);
}

void vt_recipe_new_program(vt_recipe *r)
{
    if (r->program_set) return;
    r->program_version = r->arch == VT_ARCH_GPT || r->arch == VT_ARCH_RESNET ? 3 : 1;
}

void vt_recipe_adopt_program(vt_recipe *r, const vt_recipe *run)
{
    if (!r->program_set) r->program_version = run->program_version;
}

vt_err vt_recipe_validate(const vt_recipe *r)
{
    VT_RETURN_ERROR_IF(r->n_layers < 1 || r->n_layers > VT_MAX_LAYERS, VT_ERR_ARG, "recipe: 1..%d layers",
                       VT_MAX_LAYERS);
    VT_RETURN_ERROR_IF(r->batch < 1 || r->batch > 65536, VT_ERR_ARG, "recipe: batch must be 1..65536");
    VT_RETURN_ERROR_IF(r->steps < 1, VT_ERR_ARG, "recipe: steps must be >= 1");
    VT_RETURN_ERROR_IF((r->loss != VT_LOSS_XENT || r->frozen[0] || r->trainable[0]) && !r->model[0] && !r->has_model,
                       VT_ERR_ARG,
                       "recipe: the keys loss, frozen and trainable are a client's model's (--model NET.onnx); the "
                       "built-in architectures train with cross-entropy, every parameter");
    VT_RETURN_ERROR_IF(r->frozen[0] && r->trainable[0], VT_ERR_ARG,
                       "recipe: give frozen or trainable, not both (trainable: every other parameter is frozen)");
    VT_RETURN_ERROR_IF(r->has_model && r->arch != VT_ARCH_MLP, VT_ERR_ARG,
                       "recipe: a client's model (--model) replaces arch; leave arch unset");
    VT_RETURN_ERROR_IF(r->gemm_arith != 0 && r->bound.rounding != VT_ROUNDING_EXACT, VT_ERR_ARG,
                       "recipe: gemm_arith=%s stores the tensor-core model's FP32 results (nothing to log): use "
                       "rounding=exact",
                       vt_gemm_arith_names[r->gemm_arith]);
    VT_RETURN_ERROR_IF(!(r->lr > 0) || !isfinite(r->lr), VT_ERR_ARG, "recipe: lr must be positive");
    VT_RETURN_ERROR_IF(!(r->momentum >= 0 && r->momentum < 1), VT_ERR_ARG, "recipe: momentum must be in [0,1)");
    VT_RETURN_ERROR_IF(!(r->weight_decay >= 0), VT_ERR_ARG, "recipe: weight_decay must be >= 0");
    VT_RETURN_ERROR_IF(!(r->beta1 >= 0 && r->beta1 < 1 && r->beta2 >= 0 && r->beta2 < 1 && r->eps > 0), VT_ERR_ARG,
                       "recipe: Adam needs 0 <= beta < 1 and eps > 0");
    VT_RETURN_ERROR_IF(r->schedule == VT_SCHED_STEP && (r->decay_every < 1 || !(r->decay_factor > 0)), VT_ERR_ARG,
                       "recipe: the step schedule needs decay_every >= 1 and decay_factor > 0");
    VT_RETURN_ERROR_IF(!(r->final_lr_factor >= 0), VT_ERR_ARG, "recipe: final_lr_factor must be >= 0");
    VT_RETURN_ERROR_IF(r->bound.mode == VT_BOUND_PROBABILISTIC && !(r->bound.lambda >= 1), VT_ERR_ARG,
                       "recipe: lambda must be >= 1");
    VT_RETURN_ERROR_IF(r->bound.mode == VT_BOUND_PROBABILISTIC && r->bound.rounding == VT_ROUNDING_EXACT, VT_ERR_ARG,
                       "recipe: rounding=exact needs bound_mode=provable (a probabilistic bound carries no "
                       "guarantee, and in exact rounding it would decide results: use rounding=log with it)");
    VT_RETURN_ERROR_IF(r->checkpoint_every < 1 || r->state_hash_every < 1, VT_ERR_ARG,
                       "recipe: checkpoint_every and state_hash_every must be >= 1");
    VT_RETURN_ERROR_IF(r->checkpoint_every % r->state_hash_every != 0, VT_ERR_ARG,
                       "recipe: checkpoint_every must be a multiple of state_hash_every");
    VT_RETURN_ERROR_IF(r->zstd_level < 1 || r->zstd_level > 19, VT_ERR_ARG, "recipe: zstd_level must be 1..19");
    uint64_t img = (uint64_t)r->image_channels * r->image_height * r->image_width;
    VT_RETURN_ERROR_IF(img && img != r->widths[0], VT_ERR_ARG,
                       "recipe: image_channels x image_height x image_width = %llu, but the input has %u values",
                       (unsigned long long)img, r->widths[0]);
    VT_RETURN_ERROR_IF(r->augment_flip > 1, VT_ERR_ARG, "recipe: augment_flip must be 0 or 1");
    VT_RETURN_ERROR_IF((r->augment_pad || r->augment_flip) && !img, VT_ERR_ARG,
                       "recipe: augmentation needs the image shape (image_channels, image_height, image_width)");
    VT_RETURN_ERROR_IF(r->augment_pad > r->image_height || r->augment_pad > r->image_width || r->augment_pad > 64,
                       VT_ERR_ARG, "recipe: augment_pad must be at most the image's height and width (and 64)");
    if (r->arch == VT_ARCH_GPT) {
        VT_RETURN_ERROR_IF(r->gpt_layers < 1 || r->gpt_layers > 48 || r->gpt_heads < 1 || r->gpt_width < 1 ||
                               r->gpt_width > 4096 || r->gpt_width % r->gpt_heads || r->gpt_context < 2 ||
                               r->gpt_context > 4096 || r->gpt_vocab < 2 || r->gpt_vocab > 256 || r->gpt_tie > 1,
                           VT_ERR_ARG, "recipe: gpt_layers 1..48, gpt_width 1..4096 a multiple of gpt_heads, "
                                       "gpt_context 2..4096, gpt_vocab 2..256, gpt_tie 0 or 1");
        VT_RETURN_ERROR_IF(!(r->dropout >= 0 && r->dropout < 1) || !(r->clip_norm >= 0) ||
                               !(r->ln_eps > 0 && r->ln_eps < 1),
                           VT_ERR_ARG, "recipe: dropout in [0, 1), clip_norm >= 0, ln_eps in (0, 1)");
        VT_RETURN_ERROR_IF(r->optimizer != VT_OPT_ADAMW, VT_ERR_ARG, "recipe: arch=gpt trains with optimizer=adamw");
        VT_RETURN_ERROR_IF(r->gpt_heads > 1024 || (uint64_t)r->batch * r->gpt_heads > ((uint64_t)1 << 24) ||
                               (uint64_t)r->batch * r->gpt_context > ((uint64_t)1 << 24),
                           VT_ERR_ARG, "recipe: at most 1024 heads, batch x heads and batch x context at most 2^24");
    } else {
        const int client = r->model[0] || r->has_model;
        VT_RETURN_ERROR_IF(r->optimizer == VT_OPT_ADAMW && !client, VT_ERR_ARG,
                           "recipe: optimizer=adamw is arch=gpt's and a client's model's (--model NET.onnx)");
        /* clip_norm (default 1) clips under AdamW only: any other value with another optimizer would be
         * silently unused */
        VT_RETURN_ERROR_IF(client && (!(r->clip_norm >= 0) || !isfinite(r->clip_norm) ||
                                      (r->optimizer != VT_OPT_ADAMW && r->clip_norm != 1.0)),
                           VT_ERR_ARG,
                           "recipe: clip_norm (>= 0; 0: no clipping) clips the global gradient norm under "
                           "optimizer=adamw only");
    }
    /* step program 0 is that of manifest formats 1-3 (read with bound.legacy_log set), never a choice */
    VT_RETURN_ERROR_IF((r->program_version == 0 && !r->bound.legacy_log) || r->program_version > VT_PROGRAM_VERSION_MAX ||
                           (r->program_version == 2 && r->arch != VT_ARCH_RESNET) ||
                           (r->program_version == 3 && r->arch == VT_ARCH_MLP),
                       VT_ERR_ARG,
                       "recipe: program_version is 1 (or 2 for arch=resnet: convolutions without im2col tensors; 3 "
                       "for arch=gpt and arch=resnet: the program derived from the architecture's forward graph)");
    if (r->arch == VT_ARCH_RESNET) {
        VT_RETURN_ERROR_IF(!img || r->n_layers != 1, VT_ERR_ARG,
                           "recipe: arch=resnet needs the image shape (image_channels, image_height, image_width) "
                           "and layers = [input, classes]");
        VT_RETURN_ERROR_IF(r->resnet_width < 1 || r->resnet_width > 1024 || r->resnet_stages < 1 ||
                               r->resnet_stages > 6 || r->resnet_blocks < 1 || r->resnet_blocks > 16 ||
                               r->resnet_pool > 1,
                           VT_ERR_ARG, "recipe: resnet_width 1..1024, resnet_stages 1..6, resnet_blocks 1..16, "
                                       "resnet_pool 0 or 1");
        uint64_t f = ((uint64_t)1 << (r->resnet_stages - 1)) << r->resnet_pool;
        VT_RETURN_ERROR_IF(r->image_height % f || r->image_width % f, VT_ERR_ARG,
                           "recipe: the image's height and width must be multiples of %llu (the stages' and the "
                           "pool's downsampling)",
                           (unsigned long long)f);
        VT_RETURN_ERROR_IF((uint64_t)r->resnet_width << (r->resnet_stages - 1) > 4096, VT_ERR_ARG,
                           "recipe: the last stage would have more than 4096 channels");
        VT_RETURN_ERROR_IF(!(r->bn_momentum >= 0 && r->bn_momentum <= 1) || !(r->bn_eps > 0 && r->bn_eps < 1),
                           VT_ERR_ARG, "recipe: bn_momentum must be in [0, 1] and bn_eps in (0, 1)");
        VT_RETURN_ERROR_IF(r->widths[1] < 2 || r->widths[1] > 256, VT_ERR_ARG, "recipe: 2..256 classes");
    }
    return VT_OK;
}

/* The built-in datasets' shapes (data/vt_data.c loads them and checks every byte; tests/unit/test_errors.c
 * checks this table against the loaded datasets). */
static const struct {
    const char *name;
    uint32_t features, classes;
} shapes[] = {
    {"mnist-train", 784, 10}, {"mnist-test", 784, 10},       {"digits", 64, 10},
    {"cifar10-train", 3072, 10}, {"cifar10-test", 3072, 10},
};

vt_err vt_recipe_check_dataset(const vt_recipe *r)
{
    if (vt_recipe_is_text(r)) return VT_OK; /* the text model's sizes are its own keys (or its graph's) */
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (strcmp(shapes[i].name, r->dataset) != 0) continue;
        VT_RETURN_ERROR_IF(r->widths[0] != shapes[i].features || r->widths[r->n_layers] != shapes[i].classes,
                           VT_ERR_ARG,
                           "recipe: dataset %s has %u features and %u classes, but layers = [%u, ..., %u] (the input "
                           "width and the classes must be those)",
                           r->dataset, shapes[i].features, shapes[i].classes, r->widths[0], r->widths[r->n_layers]);
        return VT_OK;
    }
    return VT_OK; /* an unknown name is the data loader's to refuse */
}

static json_t *recipe_json(const vt_recipe *r)
{
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = 0;
    for (size_t i = 0; i < N_FIELDS; i++) {
        const field *f = &fields[i];
        const char *base = (const char *)r + f->off;
        json_t *v = NULL;
        if (f->off == OFF(gemm_arith) && r->gemm_arith == 0) continue; /* the default: as before the key */
        if (f->off == OFF(program_version) && r->program_version == 1) continue; /* likewise */
        if (f->off == OFF(model) && !r->model[0]) continue;                      /* likewise */
        if (f->off == OFF(loss) && r->loss == VT_LOSS_XENT) continue;             /* likewise */
        if (f->off == OFF(frozen) && !r->frozen[0]) continue;                    /* likewise */
        if (f->off == OFF(trainable) && !r->trainable[0]) continue;              /* likewise */
        switch (f->type) {
        case F_STR: v = json_string(base); break;
        case F_U64: { uint64_t u; memcpy(&u, base, 8); v = json_integer((json_int_t)u); break; }
        case F_U32: { uint32_t u; memcpy(&u, base, 4); v = json_integer(u); break; }
        case F_INT: { int u; memcpy(&u, base, sizeof u); v = json_integer(u); break; }
        case F_REAL: { double d; memcpy(&d, base, 8); v = json_real(d); break; }
        case F_ENUM: { int k; memcpy(&k, base, sizeof k); v = json_string(f->names[k]); break; }
        case F_NAMES:
            v = json_array();
            for (const char *s = base; v && *s;) {
                const char *e = strchr(s, '\n');
                size_t n = e ? (size_t)(e - s) : strlen(s);
                bad |= json_array_append_new(v, json_stringn(s, n));
                s += n + (e != NULL);
            }
            break;
        case F_LAYERS:
            v = json_array();
            for (uint32_t l = 0; v && l <= r->n_layers; l++) bad |= json_array_append_new(v, json_integer(r->widths[l]));
            break;
        }
        bad |= !v || json_object_set_new(o, f->key, v);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

#define DUMP_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17))

vt_err vt_recipe_to_json(const vt_recipe *r, char **out)
{
    json_t *o = recipe_json(r);
    VT_RETURN_ERROR_IF(!o, VT_ERR_NOMEM, "out of memory building recipe JSON");
    *out = json_dumps(o, DUMP_FLAGS);
    json_decref(o);
    VT_RETURN_ERROR_IF(!*out, VT_ERR_NOMEM, "out of memory printing recipe JSON");
    return VT_OK;
}

int vt_recipe_equal(const vt_recipe *a, const vt_recipe *b)
{
    char *ja = NULL, *jb = NULL;
    int eq = vt_recipe_to_json(a, &ja) == VT_OK && vt_recipe_to_json(b, &jb) == VT_OK && strcmp(ja, jb) == 0;
    free(ja);
    free(jb);
    return eq;
}

static vt_err manifest_build(const vt_recipe *r, const uint8_t dataset_hash[32], const vt_dataset *ds,
                             const char *backend, char **out)
{
    char hex[65];
    vt_hex(dataset_hash, 32, hex);
    json_t *o = json_object(), *rj = recipe_json(r);
    int bad = !o || !rj;
    if (!bad) {
        bad |= json_object_set_new(o, "format", json_string(VT_MANIFEST_FORMAT));
        bad |= json_object_set_new(o, "recipe", rj);
        rj = NULL;
        bad |= json_object_set_new(o, "dataset_hash", json_string(hex));
        bad |= json_object_set_new(o, "code_version", json_string(VT_CODE_VERSION));
        bad |= json_object_set_new(o, "backend", json_string(backend ? backend : ""));
    }
    if (!bad && r->has_init) {
        char ih[65];
        vt_hex(r->init_sha256, 32, ih);
        bad |= json_object_set_new(o, "init_sha256", json_string(ih));
        if (r->init_torch) bad |= json_object_set_new(o, "init_layout", json_string("torch"));
    }
    if (!bad && r->has_model) { /* the client's graph: its file's hash and its canonical form */
        char mh[65], *gh = malloc(2 * (size_t)r->model_graph_len + 1);
        vt_hex(r->model_sha256, 32, mh);
        if (gh) vt_hex(r->model_graph, r->model_graph_len, gh);
        json_t *mj = gh ? json_pack("{s:s, s:s}", "sha256", mh, "graph", gh) : NULL;
        free(gh);
        bad |= !mj || json_object_set_new(o, "model", mj);
    }
    if (!bad && ds && (ds->hash_version == 2 || ds->hash_version == 3)) { /* a user's file: its shape, readable
                                                                           * without the data */
        json_t *sh = json_pack("{s:I, s:[i,i,i], s:s, s:i}", "n", (json_int_t)ds->n, "shape", (int)ds->channels,
                               (int)ds->rows, (int)ds->cols, "dtype", ds->text ? "text" : ds->xf ? "F32" : "U8",
                               "classes", (int)ds->n_classes);
        if (sh && ds->hash_version == 3) /* float targets: their count per example */
            bad |= json_object_set_new(sh, "targets", json_integer((json_int_t)ds->k_targets));
        bad |= !sh || json_object_set_new(o, "dataset_shape", sh);
    }
    *out = bad ? NULL : json_dumps(o, DUMP_FLAGS);
    json_decref(o);
    json_decref(rj);
    VT_RETURN_ERROR_IF(!*out, VT_ERR_NOMEM, "out of memory building the manifest");
    return VT_OK;
}

vt_err vt_manifest_build(const vt_recipe *r, const uint8_t dataset_hash[32], const char *backend, char **out)
{
    return manifest_build(r, dataset_hash, NULL, backend, out);
}

vt_err vt_manifest_build_ds(const vt_recipe *r, const vt_dataset *ds, const char *backend, char **out)
{
    return manifest_build(r, ds->hash, ds, backend, out);
}

int vt_recipe_is_text(const vt_recipe *r) { return r->arch == VT_ARCH_GPT || r->loss == VT_LOSS_NEXT; }

void vt_recipe_io_widths(const vt_recipe *r, uint32_t *in, uint32_t *out)
{
    const int gpt = r->arch == VT_ARCH_GPT;
    *in = gpt ? r->gpt_context : r->widths[0];
    *out = gpt ? r->gpt_vocab : r->widths[r->n_layers];
}

vt_err vt_recipe_check_data(const vt_recipe *r, const vt_dataset *ds)
{
    if (ds->hash_version < 2) return VT_OK; /* 2: a user's file; 3: with float targets */
    if (vt_recipe_is_text(r)) { /* the GPT, or a client's language model: windows of the text's tokens */
        uint32_t T, V;
        vt_recipe_io_widths(r, &T, &V);
        VT_RETURN_ERROR_IF(!ds->text, VT_ERR_ARG,
                           "recipe: %s trains on a text (dataset=text:PATH), not on the examples of %s",
                           r->arch == VT_ARCH_GPT ? "arch=gpt" : "loss=next_token", r->dataset);
        VT_RETURN_ERROR_IF(ds->n_classes > V, VT_ERR_ARG,
                           "recipe: the text %s has %u distinct bytes, but the vocabulary has %u (%s): at least %u",
                           r->dataset, ds->n_classes, V, r->arch == VT_ARCH_GPT ? "gpt_vocab" : "the model's", ds->n_classes);
        VT_RETURN_ERROR_IF(ds->n < (size_t)T + 1, VT_ERR_ARG,
                           "recipe: the text %s has %zu characters: too few for windows of %u", r->dataset, ds->n, T);
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(ds->text, VT_ERR_ARG, "recipe: %s is a text: it needs arch=gpt or a language model (loss=next_token)",
                       r->dataset);
    VT_RETURN_ERROR_IF(!ds->yt != (r->loss == VT_LOSS_XENT), VT_ERR_ARG,
                       "recipe: the data set %s has %s, but loss = %s needs %s", r->dataset,
                       ds->yt ? "float targets" : "class labels", r->loss == VT_LOSS_XENT ? "cross_entropy" : "a regression loss",
                       r->loss == VT_LOSS_XENT ? "class labels" : "float targets (labels as float32)");
    VT_RETURN_ERROR_IF(ds->d != r->widths[0], VT_ERR_ARG,
                       "recipe: the data set %s has %u values per example (%u x %u x %u), but layers[0] = %u", r->dataset,
                       ds->d, ds->channels, ds->rows, ds->cols, r->widths[0]);
    VT_RETURN_ERROR_IF(ds->n < r->batch, VT_ERR_ARG, "recipe: the data set %s has %zu examples, fewer than batch = %u",
                       r->dataset, ds->n, r->batch);
    VT_RETURN_ERROR_IF(ds->yt && ds->k_targets != r->widths[r->n_layers], VT_ERR_ARG,
                       "recipe: the data set %s has %u targets per example, the model's output %u", r->dataset,
                       ds->k_targets, r->widths[r->n_layers]);
    return ds->yt ? VT_OK : vt_data_check_labels(ds, r->widths[r->n_layers]);
}

vt_err vt_manifest_parse(const char *text, size_t len, vt_recipe *r, uint8_t dataset_hash[32])
{
    VT_FORWARD_IF_ERROR(vt_json_check_limits(text, len, "manifest"));
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    VT_RETURN_ERROR_IF(!o, VT_ERR_FORMAT, "manifest: invalid JSON: %s", je.text);
    vt_err e = VT_OK;
    json_t *fmt = json_object_get(o, "format"), *rj = json_object_get(o, "recipe"),
           *dh = json_object_get(o, "dataset_hash"), *ih = json_object_get(o, "init_sha256");
    /* format 1 predates the recipe key `rounding` (its runs are log-rounded, the default then);
     * formats 1 and 2 predate panelled reductions (their bounds are those of the whole reduction);
     * formats 1-4 predate one log per state (their logs may carry entries the rule does not need) */
    const char *fs = json_is_string(fmt) ? json_string_value(fmt) : "";
    int v1 = strcmp(fs, "vt-manifest-1") == 0, v2 = strcmp(fs, "vt-manifest-2") == 0,
        v3 = strcmp(fs, "vt-manifest-3") == 0, v4 = strcmp(fs, "vt-manifest-4") == 0;
    if (strcmp(fs, VT_MANIFEST_FORMAT) != 0 && !v1 && !v2 && !v3 && !v4)
        e = vt_set_error(VT_ERR_FORMAT, "manifest: unknown format (expected \"%s\")", VT_MANIFEST_FORMAT);
    else if (!json_is_string(dh) || vt_unhex(json_string_value(dh), dataset_hash, 32) != VT_OK)
        e = vt_set_error(VT_ERR_FORMAT, "manifest: bad dataset_hash");
    else {
        vt_recipe_default(r);
        if (v1) {
            /* format 1 predates `rounding`: its runs are log-rounded, whatever today's default */
            r->bound.rounding = VT_ROUNDING_LOG;
            if (json_object_get(rj, "rounding"))
                e = vt_set_error(VT_ERR_FORMAT, "manifest: format vt-manifest-1 has no recipe key \"rounding\"");
        }
        r->bound.whole_reduction = v1 || v2;
        r->bound.legacy_log = v1 || v2 || v3 || v4;
        r->program_version = v1 || v2 || v3 ? 0 : 1;
        r->program_set = 1; /* a manifest names its program (absent: 1, or 0 for formats 1-3) */
        if (!e) e = apply_object(r, rj, "manifest recipe");
        /* keys newer than formats 1-4: no trainer of those formats wrote them (a manifest that has them
         * was made, not recorded) */
        static const char *const newer[] = {"program_version", "gemm_arith"};
        for (size_t i = 0; !e && (v1 || v2 || v3 || v4) && i < sizeof newer / sizeof newer[0]; i++)
            if (json_object_get(rj, newer[i]))
                e = vt_set_error(VT_ERR_FORMAT, "manifest: format %s predates recipe key \"%s\"", fs, newer[i]);
        if (!e && ih && (!json_is_string(ih) || vt_unhex(json_string_value(ih), r->init_sha256, 32) != VT_OK))
            e = vt_set_error(VT_ERR_FORMAT, "manifest: bad init_sha256");
        if (!e && ih) r->has_init = 1;
        json_t *il = json_object_get(o, "init_layout");
        if (!e && il && (!ih || !json_is_string(il) || strcmp(json_string_value(il), "torch") != 0))
            e = vt_set_error(VT_ERR_FORMAT, "manifest: bad init_layout (\"torch\", with init_sha256)");
        if (!e && il) r->init_torch = 1;
        json_t *mo = json_object_get(o, "model"), *ms = json_object_get(mo, "sha256"), *mg = json_object_get(mo, "graph");
        if (!e && mo) {
            size_t gl = json_is_string(mg) ? json_string_length(mg) : 0;
            if (!json_is_object(mo) || json_object_size(mo) != 2 || !json_is_string(ms) ||
                vt_unhex(json_string_value(ms), r->model_sha256, 32) != VT_OK || gl == 0 || gl % 2 ||
                gl / 2 > VT_MODEL_GRAPH_MAX || vt_unhex(json_string_value(mg), r->model_graph, gl / 2) != VT_OK)
                e = vt_set_error(VT_ERR_FORMAT, "manifest: bad model (an object of \"sha256\" and \"graph\", hex)");
            else r->has_model = 1, r->model_graph_len = (uint32_t)(gl / 2);
            vt_graph g; /* the graph decodes, or the manifest is malformed */
            if (!e && (e = vt_graph_decode(r->model_graph, r->model_graph_len, &g)) != VT_OK)
                e = vt_error_prefix(e == VT_ERR_NOMEM ? e : VT_ERR_FORMAT, "manifest: model");
            if (!e) vt_graph_free(&g);
        }
        /* a manifest's recipe that does not validate is a malformed manifest, not a usage error */
        if (!e && vt_recipe_validate(r)) e = vt_error_prefix(VT_ERR_FORMAT, "manifest");
    }
    json_decref(o);
    return e;
}

int vt_recipe_has_checkpoint(const vt_recipe *r, uint64_t s) { return s % r->checkpoint_every == 0 || s == r->steps; }

int vt_recipe_has_state(const vt_recipe *r, uint64_t s)
{
    return vt_recipe_has_checkpoint(r, s) || s % r->state_hash_every == 0;
}

double vt_recipe_lr(const vt_recipe *r, uint64_t s)
{
    return vt_schedule_lr(&(vt_schedule){r->schedule, r->warmup, r->decay_every, r->steps, r->lr, r->decay_factor,
                                         r->final_lr_factor},
                          s);
}
