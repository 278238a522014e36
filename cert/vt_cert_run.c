/* vt_cert_run.c - `auditor certify` and `auditor check-certificate` on a committed run
 * (docs/certify.md): the run's final state checked as `trainer export` checks it (by running that
 * export into a private temporary file, then re-hashing what is read back), the test set, the
 * bounds and the attack of every example, the counterexamples confirmed by the project's own
 * evaluation (exact rounding), the signed certificate (docs/format.md "Certificate"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../kernels/vt_kernels.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../arch/vt_recipe.h"
#include "../ops/vt_ops.h"
#include "../rounding/vt_round.h"
#include "../run/vt_export.h"
#include "../run/vt_train.h"
#include "../store/vt_store.h"
#include "vt_cert.h"
#include "vt_cert_graph.h"
#include "vt_cert_int.h"

#define CERT_MAGIC "VTCERT01"
#define CERT_VERSION 1u
#define CERT_VERSION_CNN 4u /* version 1's layout, a residual CNN run bounded as a graph (vt_cert_graph.h); alpha-CROWN: per example its unstable ReLU values' slopes */
#define CERT_VERSION_BAB 5u /* version 1's header, an MLP run by branch and bound: each example's split tree in place of its slopes */
#define CERT_HEADER 244u

typedef struct {
    vt_model m;
    vt_recipe rcp;
    vt_dataset ds;
    vt_cert_net net;
    vt_export_result ex;
    uint8_t manifest_hash[32];
    uint32_t logits; /* the tensor the softmax reads */
    int have_model;
    vt_cert_graph *graph;   /* a residual CNN run's evaluation pass (read as a graph); NULL for an MLP */
} cert_run;

static void cert_run_free(cert_run *r)
{
    if (r->have_model) vt_model_free(&r->m);
    vt_cert_graph_free(r->graph);
    vt_data_free(&r->ds);
}

static int32_t tensor_id(const vt_program *p, const char *name)
{
    for (uint32_t i = 0; i < p->n_tensors; i++)
        if (strcmp(p->t[i].name, name) == 0) return (int32_t)i;
    return -1;
}

/* The state, through `trainer export`'s checks: exported (with the optimiser's tensors, so that the
 * whole state can be re-hashed) into a private directory, read back into the model, hashed again. */
static vt_err load_state(const vt_cert_opts *o, cert_run *r)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/vt-cert-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    VT_RETURN_ERROR_IF(!mkdtemp(dir), VT_ERR_IO, "certify: cannot make a temporary directory in %s",
                       tmp && *tmp ? tmp : "/tmp");
    snprintf(path, sizeof path, "%s/state.safetensors", dir);
    vt_export_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.run_dir = o->run_dir, eo.out_path = path, eo.pubkey_path = o->pubkey_path, eo.with_optimizer = 1;
    eo.format = VT_EXPORT_SAFETENSORS;
    vt_err e = vt_export_run(&eo, &r->ex);
    vt_st_file f;
    memset(&f, 0, sizeof f);
    if (!e) e = vt_st_read(path, &f);
    unlink(path);
    rmdir(dir);
    if (e) return e;
    vt_store *st = NULL;
    char *manifest = NULL;
    size_t ml = 0;
    uint8_t dh[32];
    e = vt_store_open(o->run_dir, 1, &st);
    if (!e) e = vt_store_manifest(st, &manifest, &ml, r->manifest_hash);
    if (!e) e = vt_manifest_parse(manifest, ml, &r->rcp, dh);
    free(manifest);
    vt_store_close(st);
    if (!e && r->rcp.arch != VT_ARCH_MLP && r->rcp.arch != VT_ARCH_RESNET)
        e = vt_set_error(VT_ERR_UNSUPPORTED, "certify: the run is a GPT; transformers are out of scope");
    /* a client's graph is not the built-in MLP, whatever its layer names: never read as fc1..fcL */
    if (!e && r->rcp.has_model)
        e = vt_set_error(VT_ERR_UNSUPPORTED,
                         "certify: the run trains a client's own graph (--model); export it (trainer export --format "
                         "onnx: the verified weights, the commitment in its metadata) and certify the file with --onnx "
                         "NET.onnx --vnnlib PROP.vnnlib");
    /* the bounds are those of exact rounding's network and of real arithmetic (docs/certify.md): a run of
     * the tensor-core mode evaluates its GEMMs otherwise (BF16/FP16/E4M3 operands, truncated sums), errors
     * no bound here covers - a certificate of it would be about another function than the run's */
    if (!e && r->rcp.gemm_arith != 0)
        e = vt_set_error(VT_ERR_UNSUPPORTED,
                         "certify: the run's GEMMs are the tensor-core model gemm_arith=%s, whose arithmetic the bounds "
                         "do not cover (they are exact rounding's and real arithmetic's): only gemm_arith=fp64 runs "
                         "are certified",
                         vt_gemm_arith_names[r->rcp.gemm_arith]);
    if (!e) e = vt_model_init(&r->m, &r->rcp, r->rcp.batch, (vt_order)o->order);
    if (!e) r->have_model = 1;
    const vt_program *p = &r->m.prog;
    for (uint32_t i = 0; !e && i < p->n_state; i++) {
        const vt_st_entry *t = vt_st_find(&f, p->t[i].name);
        if (!t || strcmp(t->dtype, "F32") != 0 || t->count != p->t[i].n)
            e = vt_set_error(VT_ERR_MISMATCH, "certify: the exported state lacks %s", p->t[i].name);
        else e = vt_model_tensor_load(&r->m, i, t->data, t->count);
    }
    vt_st_free(&f);
    uint8_t sh[32];
    r->m.step = r->ex.step;
    if (!e) e = vt_model_state_hash(&r->m, sh);
    if (!e && memcmp(sh, r->ex.state_hash, 32) != 0)
        e = vt_set_error(VT_ERR_MISMATCH, "certify: the state read back does not give the committed state hash");
    if (e) return e;
    if (r->rcp.arch == VT_ARCH_RESNET) { /* the evaluation pass as a graph; net: only its widths */
        VT_FORWARD_IF_ERROR(vt_cert_graph_from_program(&r->m, &r->logits, &r->graph));
        r->net.L = 1, r->net.n[0] = vt_cert_graph_size(r->graph, 0);
        r->net.n[1] = vt_cert_graph_size(r->graph, vt_cert_graph_n_nodes(r->graph) - 1);
        return VT_OK;
    }
    /* the network */
    r->net.L = r->rcp.n_layers;
    VT_RETURN_ERROR_IF(r->net.L > VT_CERT_MAX_LAYERS, VT_ERR_UNSUPPORTED, "certify: %u layers", r->net.L);
    for (uint32_t k = 0; k <= r->net.L; k++) r->net.n[k] = r->rcp.widths[k];
    for (uint32_t k = 1; k <= r->net.L; k++) {
        char nw[32], nb[32];
        snprintf(nw, sizeof nw, "fc%u.weight", k);
        snprintf(nb, sizeof nb, "fc%u.bias", k);
        int32_t w = tensor_id(p, nw), b = tensor_id(p, nb);
        VT_RETURN_ERROR_IF(w < 0 || b < 0, VT_ERR_FORMAT, "certify: the program has no %s / %s", nw, nb);
        r->net.W[k] = vt_model_tensor(&r->m, (uint32_t)w, NULL);
        r->net.b[k] = vt_model_tensor(&r->m, (uint32_t)b, NULL);
    }
    uint32_t first, last;
    vt_program_eval_range(p, &first, &last);
    VT_RETURN_ERROR_IF(p->op[last].n_in < 1, VT_ERR_INTERNAL, "certify: the evaluation pass ends without input");
    r->logits = p->op[last].in[0];
    VT_RETURN_ERROR_IF(p->t[r->logits].n != (size_t)r->rcp.batch * r->net.n[r->net.L], VT_ERR_INTERNAL,
                       "certify: the evaluation pass's last operation does not read the logits");
    return VT_OK;
}

/* The test set: the dataset's -test split (MNIST), else the training data set, as `trainer eval`. */
static vt_err load_data(const vt_cert_opts *o, cert_run *r)
{
    char spec[VT_RECIPE_SPEC_MAX];
    if (strncmp(r->rcp.dataset, "mnist", 5) == 0) snprintf(spec, sizeof spec, "mnist-test");
    else if (strncmp(r->rcp.dataset, "cifar10", 7) == 0) snprintf(spec, sizeof spec, "cifar10-test");
    else vt_recipe_dataset_spec(&r->rcp, spec, sizeof spec);
    VT_FORWARD_IF_ERROR(vt_data_load(spec, o->data_root, &r->ds));
    VT_RETURN_ERROR_IF(r->ds.d != r->net.n[0] || r->ds.text, VT_ERR_ARG, "certify: %s does not fit the model", spec);
    VT_RETURN_ERROR_IF(o->examples > r->ds.n, VT_ERR_ARG, "certify: --examples %u: %s has %zu", o->examples, spec,
                       r->ds.n);
    return vt_data_check_labels(&r->ds, r->net.n[r->net.L]);
}

/* The project's evaluation pass (exact rounding: every rounded output RN32 of its exact value) on
 * x in every row of the batch; *lg: the first row's logits (the model's tensor). */
static vt_err eval_logits(cert_run *r, const float *x, const float **lgp)
{
    vt_model *m = &r->m;
    const vt_program *p = &m->prog;
    uint32_t d = r->net.n[0], B = r->rcp.batch;
    float *in = vt_model_tensor(m, p->input, NULL);
    for (uint32_t b = 0; b < B; b++) memcpy(in + (size_t)b * d, x, d * sizeof *x);
    vt_bound_cfg bc = m->rcp.bound;
    bc.rounding = VT_ROUNDING_EXACT;
    bc.mode = VT_BOUND_PROVABLE;
    vt_steplog log;
    vt_rctx rctx;
    vt_steplog_init(&log, 0);
    vt_rctx_init(&rctx, VT_RMODE_RECORD, bc);
    vt_exec saved = m->exec;
    vt_exec_init(&m->exec, m->exec.order, bc, m->rcp.seed);
    uint32_t first, last;
    vt_program_eval_range(p, &first, &last);
    vt_err e = vt_rctx_begin_step(&rctx, 1, &log);
    for (uint32_t j = first; j < last && !e; j++) e = r->graph ? vt_cert_eval_op(m, &r->ds, &rctx, j) : vt_model_exec_op(m, &r->ds, &rctx, 1, j);
    vt_exec_free(&m->exec);
    m->exec = saved;
    vt_steplog_free(&log);
    VT_FORWARD_IF_ERROR(e);
    *lgp = vt_model_tensor(m, r->logits, NULL);
    return VT_OK;
}

/* eval_logits at x; misclassified when a logit other than the label's is >= it. */
static vt_err confirm(void *ctx, const float *x, uint32_t label, int *mis)
{
    cert_run *r = ctx;
    uint32_t C = r->net.n[r->net.L];
    const float *lg = NULL;
    VT_FORWARD_IF_ERROR(eval_logits(r, x, &lg));
    *mis = 0;
    for (uint32_t j = 0; j < C; j++)
        if (j != label && !(lg[label] > lg[j])) *mis = 1;
    return VT_OK;
}

/* ---------------------------------------------------------------- the certificate */

static void put_header(vti_buf *o, const vt_cert_opts *op, const cert_run *r, uint32_t n_alpha)
{
    const vt_cert_settings *s = &op->set;
    vti_put(o, CERT_MAGIC, 8);
    vti_put32(o, r->graph ? CERT_VERSION_CNN : s->bab_domains ? CERT_VERSION_BAB : CERT_VERSION), vti_put32(o, vti_cert_method_word(s, r->graph != NULL)), vti_put32(o, op->examples);
    vti_put32(o, r->net.n[r->net.L]), vti_put32(o, r->net.n[0]), vti_put32(o, n_alpha);
    vti_put64(o, r->ex.step), vti_put64(o, vt_f64_bits(op->eps));
    vti_put32(o, s->alpha_iters), vti_put64(o, vt_f64_bits(s->alpha_step)), vti_put64(o, vt_f64_bits(s->alpha_decay));
    vti_put32(o, s->attack_restarts), vti_put32(o, s->attack_iters), vti_put64(o, s->attack_seed);
    vti_put(o, r->ex.state_hash, 32), vti_put(o, r->ex.root, 32), vti_put(o, r->manifest_hash, 32);
    vti_put(o, r->ex.public_key, 32), vti_put(o, r->ds.hash, 32);
}

typedef struct {
    FILE *rep;
    int first;
} report;

/* The example's property in VNN-LIB (VNN-COMP's mnist_fc form): the box [xl, xu] (each end printed
 * with 17 digits: read back as the same double, up to the reader's one-ulp widening of an inexact
 * literal), the unsafe region "some other class's logit >= the label's". */
static vt_err write_vnnlib(const char *dir, uint32_t i, const double *xl, const double *xu, uint32_t d, uint32_t label,
                           uint32_t C)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/prop_%u.vnnlib", dir, i);
    FILE *f = fopen(path, "w");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "--write-vnnlib: cannot create %s", path);
    fprintf(f, "; example %u of the test set, label %u\n", i, label);
    for (uint32_t k = 0; k < d; k++) fprintf(f, "(declare-const X_%u Real)\n", k);
    for (uint32_t j = 0; j < C; j++) fprintf(f, "(declare-const Y_%u Real)\n", j);
    for (uint32_t k = 0; k < d; k++) fprintf(f, "(assert (>= X_%u %.17g))\n(assert (<= X_%u %.17g))\n", k, xl[k], k, xu[k]);
    fprintf(f, "(assert (or\n");
    for (uint32_t j = 0; j < C; j++)
        if (j != label) fprintf(f, "    (and (>= Y_%u Y_%u))\n", j, label);
    fprintf(f, "))\n");
    int bad = ferror(f) | (fclose(f) != 0);
    VT_RETURN_ERROR_IF(bad, VT_ERR_IO, "--write-vnnlib: cannot write %s", path);
    return VT_OK;
}

/* The bytes of example record q before its slopes (its answer read from it: a counterexample or not). */
static uint64_t rec_head(const uint8_t *q, uint32_t C, uint32_t d)
{
    return 12 + (uint64_t)C * 8 + (vt_get_u32le(q + 8) == VT_CERT_FALSIFIED ? (uint64_t)d * 4 : 0);
}

/* Computes the certificate's body (everything before the signer's key) into o. cert (check-certificate,
 * parsed by vti_cert_parse_run(); NULL: certify): the one-pass check: alpha-CROWN's bounds from the recorded slopes
 * (each in [0, 1]; one backward pass a margin, no search), a recorded counterexample confirmed by the
 * same exact evaluation instead of the attack; the answer re-derived (verified iff every recomputed
 * bound is > 0, falsified iff the recorded counterexample lies in the ball and confirms, else
 * unknown); the caller compares the bytes. */
static vt_err compute(const vt_cert_opts *op, cert_run *r, vti_buf *o, vt_cert_result *res, report *rep,
                      const uint8_t *cert, const char *cert_path)
{
    vt_cert_ctx *c = NULL;
    if (!r->graph) VT_FORWARD_IF_ERROR(vt_cert_ctx_new(&r->net, &c));
    else vt_cert_graph_set_alpha(r->graph, &op->set), vt_cert_graph_set_intermediate(r->graph, op->set.inter);
    uint32_t d = r->net.n[0], C = r->net.n[r->net.L];
    /* a CNN: the header gives the ReLU values (each example records its unstable ones' slopes) */
    int galpha = r->graph && op->set.method == VT_CERT_ALPHA_CROWN;
    int bab = !r->graph && op->set.bab_domains > 0; /* version 5: a split tree an example */
    vti_bab_tree tree;
    memset(&tree, 0, sizeof tree);
    size_t na = op->set.method != VT_CERT_ALPHA_CROWN ? 0 : r->graph ? vt_cert_graph_n_relu(r->graph) : vt_cert_n_alpha(c);
    vt_err e = na > UINT32_MAX ? vt_set_error(VT_ERR_LIMIT, "certify: too many slopes") : VT_OK;
    if (!e && (bab && (r->graph || op->set.method != VT_CERT_ALPHA_CROWN)))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "certify: beta-crown: a committed MLP run (alpha-CROWN's subdomain bounds)");
    put_header(o, op, r, (uint32_t)na);
    double *xl = malloc(d * sizeof *xl), *xu = malloc(d * sizeof *xu), *lb = malloc(C * sizeof *lb),
           *alpha = malloc((na && !galpha ? na : 1) * sizeof *alpha);
    /* check: the recorded slopes of an example (an MLP's na; a CNN's at most (C - 1) x its ReLU values) */
    double *given = cert && na ? malloc((galpha ? (size_t)(C - 1) * na : na) * sizeof *given) : NULL;
    float *x = malloc(d * sizeof *x), *cex = malloc(d * sizeof *cex);
    uint8_t lab;
    if (!e && (!xl || !xu || !lb || !alpha || !x || !cex || (cert && na && !given))) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    memset(res, 0, sizeof *res);
    size_t roff = CERT_HEADER; /* check: the example's record in cert (vti_cert_parse_run checked its lengths) */
    if (!e && cert && (vt_get_u32le(cert + 20) != C || vt_get_u32le(cert + 24) != d || vt_get_u32le(cert + 28) != na))
        e = vt_set_error(VT_ERR_MISMATCH, "%s: its classes, inputs or slopes (%u, %u, %u) are not the run's (%u, %u, %zu)",
                         cert_path, vt_get_u32le(cert + 20), vt_get_u32le(cert + 24), vt_get_u32le(cert + 28), C, d, na);
    for (uint32_t i = 0; i < op->examples && !e; i++) {
        const uint8_t *rec = cert ? cert + roff : NULL;
        uint64_t rh = rec ? rec_head(rec, C, d) : 0;
        char where[64];
        snprintf(where, sizeof where, "example %u", i);
        if (rec && bab) { /* the recorded split tree (vti_cert_parse_run checked its structure) */
            size_t used = 0;
            e = vti_bab_scan(rec + rh, SIZE_MAX, na, C, where, &tree, &used);
            roff += rh + used;
        } else if (rec && galpha) {
            uint32_t U = vt_get_u32le(rec + rh);
            e = vti_cert_slopes(cert_path, where, rec + rh + 4, (size_t)(C - 1) * U, given);
            if (!e) vt_cert_graph_given_slopes(r->graph, given, U);
            roff += rh + 4 + (size_t)(C - 1) * U * 8;
        } else if (rec) {
            if (na) e = vti_cert_slopes(cert_path, where, rec + rh, na, given);
            if (c) vt_cert_set_given_slopes(c, given);
            roff += rh + na * 8;
        }
        if (e) break;
        size_t idx = i;
        e = vt_data_batch(&r->ds, &idx, 1, x, &lab);
        if (e) break;
        vt_cert_box(x, d, op->eps, xl, xu);
        if (op->vnnlib_dir) e = write_vnnlib(op->vnnlib_dir, i, xl, xu, d, lab, C);
        if (e) break;
        int closed = 0;
        uint32_t bounded = 1, reused = 0;
        uint64_t skipped = 0;
        if (!cert && op->timeout > 0) { /* the example's own deadline */
            if (c) vt_cert_set_deadline(c, vt_now() + op->timeout);
            else vt_cert_graph_set_deadline(r->graph, vt_now() + op->timeout);
        }
        if (rec && bab) { /* the one pass: every leaf's bound from its slopes */
            e = vti_bab_replay(c, &r->net, xl, xu, lab, &op->set, &tree, cert_path, where, &closed);
            if (!e) vti_bab_min_lb(&tree, lb);
        } else
            e = r->graph ? vt_cert_graph_bounds(r->graph, xl, xu, lab, op->set.method, lb)
                         : vt_cert_bounds(c, xl, xu, lab, &op->set, lb, na ? alpha : NULL);
        if (!e && bab && !rec) e = vti_bab_root(&tree, na, C, alpha, lb);
        if (e) {
            if (rec && !bab) e = vt_error_prefix(e, "%s: %s", cert_path, where); /* the replay names its node */
            break;
        }
        double mn = INFINITY;
        for (uint32_t j = 0; j < C; j++)
            if (j != lab && lb[j] < mn) mn = lb[j];
        vt_cert_answer ans = mn > 0 ? VT_CERT_VERIFIED : VT_CERT_UNKNOWN;
        int found = 0;
        if (ans != VT_CERT_VERIFIED && rec) { /* the recorded counterexample, not an attack */
            if (vt_get_u32le(rec + 8) == VT_CERT_FALSIFIED) {
                int in = 1;
                for (uint32_t k = 0; k < d; k++) {
                    cex[k] = vt_bits_f32(vt_get_u32le(rec + 12 + (size_t)C * 8 + 4 * (size_t)k));
                    in &= vt_cert_in_ball(cex[k], x[k], op->eps);
                }
                if (in) e = confirm(r, cex, lab, &found);
                if (e) break;
            }
            if (found) ans = VT_CERT_FALSIFIED;
        } else if (ans != VT_CERT_VERIFIED) {
            e = r->graph ? vt_cert_graph_attack(r->graph, x, op->eps, lab, i, &op->set, confirm, r, cex, &found)
                         : vt_cert_attack(c, x, op->eps, lab, i, &op->set, confirm, r, cex, &found);
            if (e) break;
            if (found) ans = VT_CERT_FALSIFIED;
            if (!found && bab) { /* branch and bound: the tree replaces the root leaf when every leaf closes */
                vti_bab_tree t2;
                memset(&t2, 0, sizeof t2);
                vti_bab_attack at = {x, op->eps, d, confirm, r, cex, !op->quiet};
                e = vti_bab_search(c, xl, xu, lab, &op->set, C, &t2, &closed, &bounded, &at, &found);
                reused = t2.reused, skipped = t2.skipped;
                if (!e && found) ans = VT_CERT_FALSIFIED; /* confirmed by the exact evaluation */
                if (!e && closed) {
                    vti_bab_free(&tree);
                    tree = t2;
                    vti_bab_min_lb(&tree, lb);
                    mn = INFINITY;
                    for (uint32_t j = 0; j < C; j++)
                        if (j != lab && lb[j] < mn) mn = lb[j];
                    ans = VT_CERT_VERIFIED;
                } else
                    vti_bab_free(&t2);
                if (e) break;
            }
        }
        /* the deadline passed (bounds cut short: -inf; the attack or the search stopped): timeout, unless a
         * counterexample is confirmed (a falsified answer needs no bound) */
        if ((c ? vt_cert_timed_out(c) : vt_cert_graph_timed_out(r->graph)) && ans != VT_CERT_FALSIFIED)
            ans = VT_CERT_TIMED_OUT;
        if (rec && vt_get_u32le(rec + 8) != (uint32_t)ans) {
            e = vt_set_error(VT_ERR_MISMATCH, "%s: %s is recorded %s; the one-pass check gives %s%s", cert_path, where,
                             vt_cert_answer_name((vt_cert_answer)vt_get_u32le(rec + 8)), vt_cert_answer_name(ans),
                             ans == VT_CERT_VERIFIED ? "" : vt_get_u32le(rec + 8) == VT_CERT_VERIFIED
                                 ? " (a recorded bound is not > 0 when recomputed)"
                                 : " (the recorded counterexample is outside the ball or does not violate the property)");
            break;
        }
        res->verified += ans == VT_CERT_VERIFIED, res->falsified += ans == VT_CERT_FALSIFIED;
        res->unknown += ans == VT_CERT_UNKNOWN, res->timeout += ans == VT_CERT_TIMED_OUT;
        vti_put32(o, i), vti_put32(o, lab), vti_put32(o, (uint32_t)ans);
        for (uint32_t j = 0; j < C; j++) vti_put64(o, vt_f64_bits(lb[j]));
        if (ans == VT_CERT_FALSIFIED)
            for (uint32_t k = 0; k < d; k++) vti_put32(o, vt_f32_bits(cex[k]));
        uint32_t tnodes = tree.n;
        if (bab) {
            vti_bab_put(o, &tree);
            vti_bab_free(&tree);
        } else if (galpha) { /* the unstable values' count, then the margins' slopes (j != label, increasing j) */
            uint32_t U = vt_cert_graph_n_alpha(r->graph);
            const double *ga = vt_cert_graph_alpha(r->graph);
            vti_put32(o, U);
            for (size_t k = 0; k < (size_t)(C - 1) * U; k++) vti_put64(o, vt_f64_bits(ga[k]));
        } else
            for (size_t k = 0; k < na; k++) vti_put64(o, vt_f64_bits(alpha[k]));
        if (!op->quiet) { /* the progress of a long certification, also when standard output is a file */
            if (bab)
                printf("example %4u  label %u  %-9s  min margin >= %.6g  subdomains %u\n", i, lab,
                       vt_cert_answer_name(ans), mn, bounded);
            else printf("example %4u  label %u  %-9s  min margin >= %.6g\n", i, lab, vt_cert_answer_name(ans), mn);
            fflush(stdout);
        }
        if (rep && rep->rep) {
            fprintf(rep->rep, "%s\n    {\"index\": %u, \"label\": %u, \"answer\": \"%s\", \"margin_lower_bound\": ",
                    rep->first ? "" : ",", i, lab, vt_cert_answer_name(ans));
            if (isfinite(mn)) fprintf(rep->rep, "%.17g", mn);
            else fprintf(rep->rep, "null");
            if (bab) /* branch and bound: the subdomains bounded, the recorded tree's nodes */
                fprintf(rep->rep, ", \"subdomains\": %u, \"subdomains_reused\": %u, \"rows_skipped\": %llu, \"tree_nodes\": %u",
                        bounded, reused, (unsigned long long)skipped, tnodes);
            fprintf(rep->rep, "}");
            rep->first = 0;
        }
    }
    if (!e && o->bad) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    free(xl), free(xu), free(lb), free(alpha), free(x), free(cex), free(given);
    vti_bab_free(&tree);
    vt_cert_ctx_free(c);
    return e;
}

static vt_err load(const vt_cert_opts *o, cert_run *r)
{
    memset(r, 0, sizeof *r);
    VT_RETURN_ERROR_IF(!(o->eps >= 0) || !(o->eps <= 1), VT_ERR_ARG, "certify: --eps must be in [0, 1]");
    VT_RETURN_ERROR_IF(o->examples < 1, VT_ERR_ARG, "certify: --examples must be at least 1");
    VT_FORWARD_IF_ERROR(load_state(o, r));
    return load_data(o, r);
}

vt_err vt_cert_run(const vt_cert_opts *o, vt_cert_result *res)
{
    cert_run r;
    vti_buf out = {0};
    report rep = {NULL, 1};
    vt_keypair kp;
    memset(&kp, 0, sizeof kp);
    vt_err e = VT_OK;
    if (o->out_path) {
        VT_RETURN_ERROR_IF(!o->key_path, VT_ERR_ARG, "certify: --out needs --key KEYFILE (the auditor's key)");
        VT_FORWARD_IF_ERROR(vt_sign_read_secret_key(o->key_path, &kp));
    }
    e = load(o, &r);
    if (!e) e = vti_cert_inter_check(&o->set, r.graph != NULL);
    if (!e && o->report_path) {
        rep.rep = strcmp(o->report_path, "-") == 0 ? stdout : fopen(o->report_path, "w");
        if (!rep.rep) e = vt_set_error(VT_ERR_IO, "--report %s: cannot create it", o->report_path);
        else {
            fprintf(rep.rep, "{\n  \"method\": \"%s\",\n", o->set.bab_domains ? "beta-crown" : vt_cert_method_name(o->set.method));
            vti_cert_settings_json(rep.rep, &o->set, r.graph != NULL);
            fprintf(rep.rep, "  \"eps\": %.17g,\n  \"examples\": [", o->eps);
        }
    }
    if (!e) e = compute(o, &r, &out, res, &rep, NULL, NULL);
    if (rep.rep) {
        char hs[65];
        vt_hex(r.ex.state_hash, 32, hs);
        if (!e)
            fprintf(rep.rep, "\n  ],\n  \"verified\": %u,\n  \"falsified\": %u,\n  \"unknown\": %u,\n  \"timeout\": %u,\n"
                    "  \"state_hash\": \"%s\"\n}\n", res->verified, res->falsified, res->unknown, res->timeout, hs);
        int bad = ferror(rep.rep);
        if (rep.rep != stdout) bad |= fclose(rep.rep) != 0;
        else fflush(stdout);
        if (!e && bad) e = vt_set_error(VT_ERR_IO, "--report %s: cannot write it", o->report_path);
    }
    /* a timeout depends on the clock: no certificate (check-certificate could not recompute it) */
    if (!e && o->out_path && !res->timeout) e = vti_cert_sign_write(&out, &kp, o->out_path);
    vt_keypair_wipe(&kp);
    free(out.b);
    cert_run_free(&r);
    return e;
}

/* ---------------------------------------------------------------- the run for the VNN-LIB path */

struct vti_cert_run {
    cert_run r;
};

vt_err vti_cert_run_open(const char *run_dir, const char *pubkey_path, int order, vti_cert_run **out,
                         const vt_cert_net **net, vti_cert_model_id *id)
{
    *out = NULL;
    vti_cert_run *h = calloc(1, sizeof *h);
    VT_RETURN_ERROR_IF(!h, VT_ERR_NOMEM, "out of memory");
    vt_cert_opts o;
    memset(&o, 0, sizeof o);
    o.run_dir = run_dir, o.pubkey_path = pubkey_path, o.order = order;
    vt_err e = load_state(&o, &h->r);
    if (e) {
        vti_cert_run_close(h);
        return e;
    }
    id->step = h->r.ex.step;
    memcpy(id->state_hash, h->r.ex.state_hash, 32), memcpy(id->root, h->r.ex.root, 32);
    memcpy(id->manifest_hash, h->r.manifest_hash, 32), memcpy(id->public_key, h->r.ex.public_key, 32);
    *net = &h->r.net, *out = h;
    return VT_OK;
}

vt_cert_graph *vti_cert_run_graph(vti_cert_run *h) { return h ? h->r.graph : NULL; }

vt_err vti_cert_run_eval(vti_cert_run *h, const float *x, const float **logits) { return eval_logits(&h->r, x, logits); }

void vti_cert_run_close(vti_cert_run *h)
{
    if (!h) return;
    cert_run_free(&h->r);
    free(h);
}

/* Parses a certificate: every length checked; fills the options it binds (vt_cert_int.h). */
vt_err vti_cert_parse_run(const uint8_t *p, size_t n, vt_cert_opts *o, uint8_t state_hash[32], size_t *body_len)
{
    VT_RETURN_ERROR_IF(n >= 12 && memcmp(p, CERT_MAGIC, 8) == 0 && vt_get_u32le(p + 8) == 2, VT_ERR_FORMAT,
                       "an ONNX / VNN-LIB certificate (version 2): check it with --onnx FILE --vnnlib FILE");
    VT_RETURN_ERROR_IF(n >= 12 && memcmp(p, CERT_MAGIC, 8) == 0 && vt_get_u32le(p + 8) == 3, VT_ERR_FORMAT,
                       "a VNN-LIB certificate of a committed run (version 3): check it with RUN_DIR --vnnlib FILE");
    VT_RETURN_ERROR_IF(n < CERT_HEADER + 96 || memcmp(p, CERT_MAGIC, 8) != 0, VT_ERR_FORMAT,
                       "not a certificate (magic, or shorter than its header)");
    uint32_t ver = vt_get_u32le(p + 8);
    VT_RETURN_ERROR_IF(ver != CERT_VERSION && ver != CERT_VERSION_CNN && ver != CERT_VERSION_BAB, VT_ERR_FORMAT,
                       "certificate version %u (this auditor: %u, %u for a CNN run, %u by branch and bound)", ver,
                       CERT_VERSION, CERT_VERSION_CNN, CERT_VERSION_BAB);
    uint32_t meth = vt_get_u32le(p + 12), N = vt_get_u32le(p + 16), C = vt_get_u32le(p + 20), d = vt_get_u32le(p + 24),
             A = vt_get_u32le(p + 28);
    VT_FORWARD_IF_ERROR(vti_cert_method_read(meth, ver != CERT_VERSION_CNN, &o->set));
    meth &= 0xffu;
    int bab = ver == CERT_VERSION_BAB;
    VT_RETURN_ERROR_IF(bab && meth != VT_CERT_ALPHA_CROWN, VT_ERR_FORMAT, "certificate: version 5 (branch and bound) "
                       "without alpha-CROWN");
    o->set.bab_domains = bab ? 1 : 0; /* not recorded: the check does not search */
    VT_RETURN_ERROR_IF(N < 1 || C < 2 || C > VT_CERT_MAX_WIDTH || d < 1 ||
                           d > VT_CERT_MAX_WIDTH,
                       VT_ERR_FORMAT, "certificate: a header field is out of range");
    o->examples = N;
    o->eps = vt_bits_f64(vt_get_u64le(p + 40));
    vt_cert_settings *s = &o->set;
    s->alpha_iters = vt_get_u32le(p + 48), s->alpha_step = vt_bits_f64(vt_get_u64le(p + 52));
    s->alpha_decay = vt_bits_f64(vt_get_u64le(p + 60)), s->attack_restarts = vt_get_u32le(p + 68);
    s->attack_iters = vt_get_u32le(p + 72), s->attack_seed = vt_get_u64le(p + 76);
    VT_RETURN_ERROR_IF(s->alpha_iters > 100000 || s->attack_restarts > 100000 || s->attack_iters > 100000,
                       VT_ERR_FORMAT, "certificate: search settings out of range");
    memcpy(state_hash, p + 84, 32);
    int galpha = vt_get_u32le(p + 8) == CERT_VERSION_CNN && meth == VT_CERT_ALPHA_CROWN;
    VT_RETURN_ERROR_IF(meth != VT_CERT_ALPHA_CROWN && A, VT_ERR_FORMAT, "certificate: slopes recorded without alpha-CROWN");
    size_t off = CERT_HEADER, end = n - 96;
    for (uint32_t i = 0; i < N; i++) {
        VT_RETURN_ERROR_IF(end - off < 12 || vt_get_u32le(p + off) != i || vt_get_u32le(p + off + 8) > 2, VT_ERR_FORMAT,
                           "certificate: example %u at byte %zu is malformed", i, off);
        uint64_t need = rec_head(p + off, C, d);
        if (galpha) { /* version 4, alpha-CROWN: U (at most A, the ReLU values), then (C - 1) U slopes */
            VT_RETURN_ERROR_IF(need + 4 > end - off, VT_ERR_FORMAT, "certificate: example %u at byte %zu is truncated", i, off);
            uint32_t U = vt_get_u32le(p + off + need);
            VT_RETURN_ERROR_IF(U > A, VT_ERR_FORMAT, "certificate: example %u records %u slopes of %u ReLU values", i, U, A);
            need += 4 + (uint64_t)(C - 1) * U * 8;
        } else if (bab) { /* version 5: the split tree (a single leaf unless verified) */
            VT_RETURN_ERROR_IF(need > end - off, VT_ERR_FORMAT, "certificate: example %u at byte %zu is truncated", i, off);
            char where[64];
            size_t used = 0;
            snprintf(where, sizeof where, "example %u", i);
            VT_FORWARD_IF_ERROR(vti_bab_scan(p + off + need, end - off - need, A, C, where, NULL, &used));
            VT_RETURN_ERROR_IF(vt_get_u32le(p + off + 8) != VT_CERT_VERIFIED && vt_get_u32le(p + off + need) != 1,
                               VT_ERR_FORMAT, "certificate: example %u is not verified but records a split tree", i);
            need += used;
        } else
            need += (uint64_t)A * 8;
        VT_RETURN_ERROR_IF(need > end - off, VT_ERR_FORMAT, "certificate: example %u at byte %zu is truncated", i, off);
        off += need;
    }
    VT_RETURN_ERROR_IF(off != end, VT_ERR_FORMAT, "certificate: %zu bytes after the last example", end - off);
    *body_len = end;
    return VT_OK;
}

vt_err vt_cert_check(const char *cert_path, const vt_cert_opts *in, const char *signer_pub_path)
{
    uint8_t *p = NULL;
    size_t n = 0;
    VT_FORWARD_IF_ERROR(vti_cert_read_file(cert_path, (size_t)1 << 34, &p, &n));
    vt_cert_opts o = *in;
    uint8_t sh[32];
    size_t body = 0;
    vt_err e = vti_cert_parse_run(p, n, &o, sh, &body);
    if (!e) e = vti_cert_verify(cert_path, p, body, signer_pub_path);
    cert_run r;
    int loaded = 0;
    vti_buf out = {0};
    if (!e) {
        e = load(&o, &r);
        loaded = 1;
    }
    if (!e && memcmp(sh, r.ex.state_hash, 32) != 0)
        e = vt_set_error(VT_ERR_MISMATCH, "%s: certifies another model than the run's final state", cert_path);
    vt_cert_result res;
    if (!e) e = compute(&o, &r, &out, &res, NULL, p, cert_path);
    if (!e) e = vti_cert_compare(cert_path, &out, p, body);
    free(out.b);
    if (loaded) cert_run_free(&r);
    free(p);
    return e;
}
