#include "vt_audit.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../arch/vt_graph.h"
#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../backend/cuda/vt_backend_open.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../store/vt_store.h"
#include "vt_init.h"
#include "vt_step.h"
#include "vt_train.h"

/* ------------------------------------------------------------- verdicts */

typedef struct {
    vt_verdict verdict;
    char reason[48];
    char detail[640];
    int64_t step, op, index;
    char op_name[48];
} finding;

static int find_set(finding *f, vt_verdict v, int64_t step, const char *reason, const char *fmt, ...)
{
    f->verdict = v;
    f->step = step;
    f->op = -1;
    f->index = -1;
    f->op_name[0] = 0;
    snprintf(f->reason, sizeof f->reason, "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->detail, sizeof f->detail, fmt, ap);
    va_end(ap);
    return -1;
}

/* Map a library error while reading the trainer's files: corrupt or unreadable = cannot check. */
static int find_io(finding *f, int64_t step, const char *what)
{
    return find_set(f, VT_VERDICT_CANNOT, step, "unreadable input", "%s: %s", what, vt_errmsg());
}

/* --------------------------------------------------------------- shared */

typedef struct {
    const vt_audit_opts *o;
    vt_recipe rcp;
    vt_dataset ds;
    vt_commitment cm;
    int have_cm;       /* cm was read (whatever its checks gave) */
    vt_step_rec *recs; /* steps 0..rcp.steps */
    uint64_t *cks;
    size_t ncks;
    pthread_mutex_t mu;
    uint64_t budget; /* the memory budget, fixed at the start (every worker's model within it) */
    uint64_t done; /* steps replayed, all workers */
    vt_progress pr;
    vt_st_file init; /* the initial state's file, when the run starts from one (vt_init.h) */
} audit_ctx;

typedef struct {
    audit_ctx *a;
    uint64_t from, to; /* replay from+1..to, starting from the state of step `from` */
    finding f;
    uint64_t checked, applied, passed;
} worker;

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* a->cks is sorted (static_checks) */
static int is_checkpoint(const audit_ctx *a, uint64_t s)
{
    return a->ncks && bsearch(&s, a->cks, a->ncks, sizeof *a->cks, cmp_u64) != NULL;
}

static int expected_has_state(const vt_recipe *rcp, uint64_t s)
{
    return vt_recipe_has_state(rcp, s);
}

/* A recorded checkpoint that does not read back (e, from vt_store_get_checkpoint). Changing a
 * checkpoint after committing is the trainer's threat (docs/dispute.md), and the replay from step 0
 * checks everything else without it: a file that is gone, or whose bytes are not the checkpoint
 * recorded (truncated, malformed, another hash), is a finding about the run (REJECTED); a failure
 * to read a file that is there (permissions, I/O, memory) is the auditor's own (CANNOT CHECK). */
static int find_checkpoint(finding *f, const char *run_dir, uint64_t s, vt_err e)
{
    char path[4096];
    struct stat sb;
    vt_store_checkpoint_path(run_dir, s, path, sizeof path);
    if (e == VT_ERR_IO && stat(path, &sb) != 0 && errno == ENOENT)
        return find_set(f, VT_VERDICT_REJECTED, (int64_t)s, "incomplete run",
                        "the checkpoint of step %llu, recorded in the run store, is missing (%s)", (unsigned long long)s,
                        path);
    if (e == VT_ERR_MISMATCH || e == VT_ERR_FORMAT)
        return find_set(f, VT_VERDICT_REJECTED, (int64_t)s, "checkpoint altered",
                        "the checkpoint of step %llu does not match the hash recorded for it: %s", (unsigned long long)s,
                        vt_errmsg());
    return find_io(f, (int64_t)s, "checkpoint");
}

/* Compare the model's state with the checkpoint file of step s. 0 = fine. */
static int check_checkpoint(worker *w, vt_store *st, vt_model *m, uint64_t s)
{
    float *state = NULL;
    vt_err e = vt_store_get_checkpoint(st, s, m->n_state, &state);
    if (e) {
        find_checkpoint(&w->f, w->a->o->run_dir, s, e);
        return -1;
    }
    int same = memcmp(state, m->state, m->n_state * sizeof(float)) == 0;
    free(state);
    if (!same) {
        find_set(&w->f, VT_VERDICT_REJECTED, (int64_t)s, "checkpoint mismatch",
                 "the checkpoint of step %llu differs from the replayed (and committed) state", (unsigned long long)s);
        return -1;
    }
    return 0;
}

/* The segment's start: the run store, the model on its backend, the state of step w->from (the
 * initial state or the checkpoint) checked against the committed one. 0, or -1 with the finding set. */
static int segment_open(worker *w, vt_store **st, vt_model *m, vt_backend *be)
{
    audit_ctx *a = w->a;
    if (vt_store_open(a->o->run_dir, 1, st)) {
        find_io(&w->f, (int64_t)w->from, "run store");
        return -1;
    }
    vt_err me = vt_model_init_within(m, &a->rcp, a->ds.n, a->o->order, a->budget);
    if (me) {
        find_set(&w->f, VT_VERDICT_CANNOT, -1,
                 me == VT_ERR_LIMIT ? "memory budget" : me == VT_ERR_INTERNAL ? "internal error" : "local error",
                 "cannot build the model: %s", vt_errmsg());
        return -1;
    }
    if (vt_backend_open(a->o->backend ? a->o->backend : "cpu", be)) {
        find_set(&w->f, VT_VERDICT_CANNOT, -1, "backend unavailable", "%s", vt_errmsg());
        return -1;
    }
    vt_model_set_backend(m, be);
    if (w->from == 0 && a->rcp.has_init && vt_init_apply(m, &a->init)) {
        find_set(&w->f, VT_VERDICT_REJECTED, 0, "init mismatch", "%s", vt_errmsg());
        return -1;
    }
    if (w->from > 0) { /* start from the checkpoint, which must hold the committed state */
        float *state = NULL;
        vt_err e = vt_store_get_checkpoint(*st, w->from, m->n_state, &state);
        if (e) {
            find_checkpoint(&w->f, a->o->run_dir, w->from, e);
            return -1;
        }
        if (vt_model_set_state(m, w->from, state, m->n_state)) {
            free(state);
            find_io(&w->f, (int64_t)w->from, "checkpoint");
            return -1;
        }
        free(state);
    }
    uint8_t h[32];
    if (vt_model_state_hash(m, h)) {
        find_io(&w->f, -1, "hashing");
        return -1;
    }
    if (memcmp(h, a->recs[w->from].state_hash, 32) != 0) {
        find_set(&w->f, VT_VERDICT_REJECTED, (int64_t)w->from, "state mismatch",
                 w->from ? "the checkpoint of step %llu does not hold the committed state"
                         : "the initial state (step %llu) differs from the committed one: other seed or initialisation",
                 (unsigned long long)w->from);
        return -1;
    }
    if (w->from == 0 && is_checkpoint(a, 0) && check_checkpoint(w, *st, m, 0)) return -1;
    return 0;
}

/* Step s replayed on m from its stored log (checked against the committed log hash), its record, state
 * hash and checkpoint checked. 0, or -1 with the finding set. */
static int replay_step(worker *w, vt_store *st, vt_model *m, vt_step_args *sa, uint64_t s)
{
    audit_ctx *a = w->a;
    uint8_t h[32];
    const vt_step_rec *rec = &a->recs[s];
    uint8_t *blob = NULL;
    size_t blen = 0;
    uint8_t lh[32];
    if (vt_store_get_log(st, s, &blob, &blen)) {
        find_io(&w->f, (int64_t)s, "log");
        return -1;
    }
    vt_err e = vt_steplog_decode_stored(blob, blen, s, NULL, sa->log, lh);
    free(blob);
    if (e) {
        find_set(&w->f, VT_VERDICT_REJECTED, (int64_t)s, "log corrupt", "the log of step %llu cannot be decoded: %s",
                 (unsigned long long)s, vt_errmsg());
        return -1;
    }
    if (memcmp(lh, rec->log_hash, 32) != 0) {
        find_set(&w->f, VT_VERDICT_REJECTED, (int64_t)s, "log mismatch",
                 "the log stored for step %llu is not the committed one (its hash differs)", (unsigned long long)s);
        return -1;
    }
    e = vt_step_run(m, &a->ds, sa);
    if (e) {
        const char *reason = e == VT_ERR_IMPLAUSIBLE ? (sa->fault->has_entry ? "implausible log entry" : "missing log entry")
                             : e == VT_ERR_MISMATCH  ? "log mismatch"
                             : e == VT_ERR_DIVERGED  ? "replay diverged"
                                                     : "local error";
        /* our failure, not the run's: a local error or a bug of ours is never a verdict on the run */
        int cannot = e == VT_ERR_NOMEM || e == VT_ERR_IO || e == VT_ERR_ENV || e == VT_ERR_INTERNAL;
        if (e == VT_ERR_INTERNAL) reason = "internal error";
        find_set(&w->f, cannot ? VT_VERDICT_CANNOT : VT_VERDICT_REJECTED, (int64_t)s, reason, "%s", vt_errmsg());
        if (sa->fault->code != VT_OK) {
            w->f.op = sa->fault->op_id;
            w->f.index = sa->fault->has_entry || e != VT_ERR_MISMATCH ? (int64_t)sa->fault->index : -1;
            snprintf(w->f.op_name, sizeof w->f.op_name, "%s", vt_model_op_name(m, sa->fault->op_id));
        }
        return -1;
    }
    /* the record's entry count is not in the leaf: it must be the committed log's (checked after the
     * replay, so that a faulty log is reported for what it is, not for its bookkeeping) */
    if (rec->log_entries != vt_steplog_total_entries(sa->log)) {
        find_set(&w->f, VT_VERDICT_REJECTED, (int64_t)s, "record mismatch",
                 "the record of step %llu counts %llu log entries; its committed log holds %llu",
                 (unsigned long long)s, (unsigned long long)rec->log_entries,
                 (unsigned long long)vt_steplog_total_entries(sa->log));
        return -1;
    }
    uint32_t lb;
    memcpy(&lb, sa->loss, 4);
    if (lb != rec->loss_bits) {
        find_set(&w->f, VT_VERDICT_REJECTED, (int64_t)s, "record mismatch",
                 "the loss stored for step %llu (%.9g) differs from the replayed loss (%.9g)", (unsigned long long)s,
                 (double)vt_bits_f32(rec->loss_bits), (double)*sa->loss);
        return -1;
    }
    if (rec->has_state) {
        if (vt_model_state_hash(m, h)) {
            find_io(&w->f, (int64_t)s, "hashing");
            return -1;
        }
        if (memcmp(h, rec->state_hash, 32) != 0) {
            uint64_t prev = s - 1;
            while (prev > w->from && !a->recs[prev].has_state) prev--;
            find_set(&w->f, VT_VERDICT_REJECTED, (int64_t)s, "state mismatch",
                     "the replayed state of step %llu differs from the committed one (the last committed state "
                     "that matched is step %llu): a step in %llu..%llu was not computed as recorded",
                     (unsigned long long)s, (unsigned long long)prev, (unsigned long long)prev + 1,
                     (unsigned long long)s);
            return -1;
        }
    }
    if (is_checkpoint(a, s) && check_checkpoint(w, st, m, s)) return -1;
    w->checked++;
    pthread_mutex_lock(&a->mu);
    a->done++;
    char extra[64]; /* the loss of the step just replayed (by whichever segment) */
    snprintf(extra, sizeof extra, "loss %.4f (step %llu)", (double)*sa->loss, (unsigned long long)s);
    vt_progress_update(&a->pr, "replay", a->done, extra);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

static void replay_segment(worker *w)
{
    vt_store *st = NULL;
    vt_model m;
    vt_backend be;
    vt_steplog log;
    vt_rstats stats;
    memset(&m, 0, sizeof m);
    memset(&be, 0, sizeof be);
    memset(&stats, 0, sizeof stats);
    vt_steplog_init(&log, 0);
    w->f.verdict = VT_VERDICT_VERIFIED;
    if (segment_open(w, &st, &m, &be) == 0) {
        vt_fault fault;
        float loss;
        vt_step_args sa;
        memset(&sa, 0, sizeof sa);
        sa.party = VT_PARTY_VERIFIER, sa.log = &log, sa.fault = &fault, sa.stats = &stats, sa.loss = &loss;
        for (uint64_t s = w->from + 1; s <= w->to; s++)
            if (replay_step(w, st, &m, &sa, s)) break;
    }
    w->applied = stats.logged_dir + stats.logged_val;
    w->passed = stats.checked;
    vt_steplog_free(&log);
    vt_model_free(&m);
    vt_backend_close(&be);
    vt_store_close(st);
}

static void *worker_main(void *p)
{
    replay_segment((worker *)p);
    return NULL;
}

/* ------------------------------------------------------- static checks */

/* --model FILE (vt_audit.h): the run trains exactly the client's graph from the client's values: the
 * file's SHA-256 the manifest names, the graph it carries re-derived from the file with the run's batch,
 * loss and frozen parameters, and - unless --init names the client's own initial state - the run's
 * initial state equal, bit for bit, to the file's initializers. A dishonest trainer that names the
 * client's file but trains another graph, or starts it from other weights, is rejected here. */
static int model_check(audit_ctx *a, finding *f)
{
    const vt_audit_opts *o = a->o;
    if (!a->rcp.has_model)
        return find_set(f, VT_VERDICT_REJECTED, -1, "another model",
                        "the run trains a built-in architecture, not the client's model %s", o->model_path);
    vt_graph g;
    float **vals = NULL;
    uint8_t sha[32];
    if (vt_graph_import_onnx(o->model_path, a->rcp.batch, &g, &vals, sha))
        return find_set(f, VT_VERDICT_CANNOT, -1, "model unreadable", "--model: %s", vt_errmsg());
    int r = 0;
    vt_recipe *want = malloc(sizeof *want);
    if (!want) r = find_set(f, VT_VERDICT_CANNOT, -1, "local error", "out of memory");
    else *want = a->rcp;
    if (!r && memcmp(sha, a->rcp.model_sha256, 32) != 0) {
        char have[65], named[65];
        vt_hex(sha, 32, have), vt_hex(a->rcp.model_sha256, 32, named);
        r = find_set(f, VT_VERDICT_REJECTED, -1, "another model",
                     "the run names a model file with SHA-256 %s; %s has SHA-256 %s", named, o->model_path, have);
    }
    if (!r && vt_recipe_set_graph(want, &g, sha))
        r = find_set(f, VT_VERDICT_REJECTED, -1, "another model", "%s against the run's recipe: %s", o->model_path,
                     vt_errmsg());
    if (!r && (want->model_graph_len != a->rcp.model_graph_len ||
               memcmp(want->model_graph, a->rcp.model_graph, want->model_graph_len) != 0))
        r = find_set(f, VT_VERDICT_REJECTED, -1, "another graph",
                     "the run trains another graph than %s's (the manifest's canonical form differs from the one "
                     "derived from the file)",
                     o->model_path);
    for (uint32_t k = 0; !r && !o->init_path && k < g.n_param; k++) {
        const vt_st_entry *t = vt_st_find(&a->init, g.param[k].name);
        size_t n = 1;
        for (uint32_t d = 0; d < g.param[k].rank; d++) n *= g.param[k].shape[d];
        if (!t || strcmp(t->dtype, "F32") != 0 || t->count != n || memcmp(t->data, vals[k], n * sizeof(float)) != 0)
            r = find_set(f, VT_VERDICT_REJECTED, 0, "another initial state",
                         "the run starts from other values of %s than %s's initializers", g.param[k].name,
                         o->model_path);
    }
    free(want);
    vt_graph_values_free(vals, g.n_param);
    vt_graph_free(&g);
    return r;
}

static int static_checks(audit_ctx *a, vt_store *st, finding *f)
{
    const vt_audit_opts *o = a->o;
    char path[4096];
    f->verdict = VT_VERDICT_VERIFIED;
    vt_store_commitment_path(o->run_dir, path, sizeof path);
    if (vt_commitment_read(path, &a->cm)) return find_io(f, -1, "commitment");
    a->have_cm = 1;
    uint8_t body[VT_COMMITMENT_BODY_LEN];
    vt_commitment_body(&a->cm, body);
    if (vt_sign_init()) return find_io(f, -1, "libsodium");
    if (vt_sign_verify_detached(a->cm.signature, body, sizeof body, a->cm.public_key) != 0)
        return find_set(f, VT_VERDICT_REJECTED, -1, "bad signature",
                        "the commitment's signature does not verify under its public key");
    if (o->pubkey_path) {
        uint8_t pk[32];
        if (vt_sign_read_public_key(o->pubkey_path, pk)) return find_io(f, -1, "trusted public key");
        if (memcmp(pk, a->cm.public_key, 32) != 0)
            return find_set(f, VT_VERDICT_REJECTED, -1, "untrusted key",
                            "the commitment is signed by another key than %s", o->pubkey_path);
    }
    char *mf = NULL;
    size_t ml = 0;
    uint8_t mh[32], dh[32];
    vt_err me = vt_store_manifest(st, &mf, &ml, mh);
    if (me == VT_ERR_MISMATCH)
        return find_set(f, VT_VERDICT_REJECTED, -1, "manifest mismatch", "%s", vt_errmsg());
    if (me) return find_io(f, -1, "run store manifest");
    int mismatch = memcmp(mh, a->cm.manifest_hash, 32) != 0;
    vt_err e = mismatch ? VT_OK : vt_manifest_parse(mf, ml, &a->rcp, dh);
    free(mf);
    if (mismatch)
        return find_set(f, VT_VERDICT_REJECTED, -1, "manifest mismatch",
                        "the manifest in the run store is not the one the commitment signs (recipe or dataset altered)");
    if (e) return find_io(f, -1, "manifest");
    if (o->recipe_path) {
        vt_recipe want;
        vt_recipe_default(&want);
        if (vt_recipe_load_file(&want, o->recipe_path)) return find_io(f, -1, "recipe");
        vt_recipe_adopt_program(&want, &a->rcp); /* a recipe that does not name the program: any of its arch */
        if (!vt_recipe_equal(&want, &a->rcp))
            return find_set(f, VT_VERDICT_REJECTED, -1, "recipe mismatch",
                            "the run was trained with another recipe than %s", o->recipe_path);
    }
    char spec[VT_RECIPE_SPEC_MAX];
    vt_recipe_dataset_spec(&a->rcp, spec, sizeof spec);
    if (vt_data_load(spec, o->data_root, &a->ds))
        return find_set(f, VT_VERDICT_CANNOT, -1, "dataset unavailable", "cannot load dataset %s: %s", spec,
                        vt_errmsg());
    if (memcmp(a->ds.hash, dh, 32) != 0) {
        char have[65], want[65];
        vt_hex(a->ds.hash, 32, have);
        vt_hex(dh, 32, want);
        return find_set(f, VT_VERDICT_REJECTED, -1, "wrong dataset",
                        "the run was trained on a dataset with hash %s; the local %s has hash %s", want, spec, have);
    }
    if (vt_recipe_check_data(&a->rcp, &a->ds))
        return find_set(f, VT_VERDICT_REJECTED, -1, "dataset does not fit", "%s", vt_errmsg());
    int why = 0;
    if (a->rcp.has_init ? vt_init_for_replay(&a->rcp, o->init_path, o->run_dir, &a->init, &why) != VT_OK
                       : o->init_path != NULL)
        return find_set(f, why == 1 ? VT_VERDICT_CANNOT : VT_VERDICT_REJECTED, 0,
                        why == 1 ? "init unavailable" : "wrong init", "%s",
                        why ? vt_errmsg() : "the run starts from its recipe's initialisation, not from the --init file");
    if (o->model_path && model_check(a, f)) return -1; /* the client's own model: this graph, these values */
    uint64_t count;
    if (vt_store_step_count(st, &count)) return find_io(f, -1, "run store");
    if (count != a->cm.step_count || count != a->rcp.steps + 1)
        return find_set(f, VT_VERDICT_REJECTED, -1, "incomplete run",
                        "the store holds %llu steps, the commitment %llu, the recipe %llu", (unsigned long long)count,
                        (unsigned long long)a->cm.step_count, (unsigned long long)(a->rcp.steps + 1));
    a->recs = calloc(count, sizeof *a->recs);
    if (!a->recs) return find_set(f, VT_VERDICT_CANNOT, -1, "local error", "out of memory");
    vt_merkle tree;
    vt_merkle_init(&tree);
    for (uint64_t s = 0; s < count; s++) {
        vt_step_rec *r = &a->recs[s];
        uint8_t leaf[32];
        if (vt_store_get_step(st, s, r)) {
            vt_merkle_free(&tree);
            return find_io(f, (int64_t)s, "step record");
        }
        if (r->has_state != expected_has_state(&a->rcp, s)) {
            vt_merkle_free(&tree);
            return find_set(f, VT_VERDICT_REJECTED, (int64_t)s, "record mismatch",
                            "step %llu %s a state hash against the recipe's schedule", (unsigned long long)s,
                            r->has_state ? "carries" : "lacks");
        }
        if (vt_step_leaf(s, r->state_hash, r->has_state, r->log_hash, leaf) || vt_merkle_append(&tree, r->leaf)) {
            vt_merkle_free(&tree);
            return find_io(f, (int64_t)s, "hashing");
        }
        if (memcmp(leaf, r->leaf, 32) != 0) {
            vt_merkle_free(&tree);
            return find_set(f, VT_VERDICT_REJECTED, (int64_t)s, "record mismatch",
                            "the stored state or log hash of step %llu does not match the step's leaf",
                            (unsigned long long)s);
        }
    }
    uint8_t root[32];
    vt_err re = vt_merkle_root(&tree, root);
    vt_merkle_free(&tree);
    if (re) return find_io(f, -1, "hashing");
    if (memcmp(root, a->cm.root, 32) != 0)
        return find_set(f, VT_VERDICT_REJECTED, -1, "root mismatch",
                        "the leaves in the run store do not hash to the committed Merkle root");
    /* step 0's record: no loss, no log entries (its leaf commits neither) */
    if (a->recs[0].loss_bits != 0 || a->recs[0].log_entries != 0)
        return find_set(f, VT_VERDICT_REJECTED, 0, "record mismatch",
                        "the record of step 0 (the initial state) holds a loss or log entries (loss bits 0x%08x, %llu "
                        "entries)",
                        (unsigned)a->recs[0].loss_bits, (unsigned long long)a->recs[0].log_entries);
    if (vt_store_list_checkpoints(st, &a->cks, &a->ncks)) return find_io(f, -1, "checkpoint list");
    if (a->ncks) qsort(a->cks, a->ncks, sizeof *a->cks, cmp_u64);
    /* complete: every checkpoint the recipe promises (every checkpoint_every steps and the last,
     * step 0 included) is recorded, so that the run can be resumed, disputed and exported at each;
     * the replay then compares each with the replayed state */
    for (uint64_t k = 0;; k += a->rcp.checkpoint_every) {
        uint64_t s = k < a->rcp.steps ? k : a->rcp.steps;
        if (!is_checkpoint(a, s))
            return find_set(f, VT_VERDICT_REJECTED, (int64_t)s, "incomplete run",
                            "the run store lacks the checkpoint of step %llu, which the recipe promises (every %u "
                            "steps and the last)%s",
                            (unsigned long long)s, a->rcp.checkpoint_every,
                            s == a->rcp.steps ? ": the final state cannot be exported" : "");
        if (s == a->rcp.steps) break;
    }
    return 0;
}

/* ------------------------------------------------------- several ranks */

/* Every rank ends with the same finding: the first rank's (in rank order) that is not VERIFIED, or
 * VERIFIED. A failure of the exchange itself is this rank's CANNOT. */
static void agree_finding(vt_comm *c, finding *f)
{
    int n = vt_dist_size(c);
    if (n <= 1) return;
    double mine = (double)f->verdict, *all = calloc((size_t)n, sizeof *all);
    if (!all || vt_dist_allgather_f64(c, &mine, 1, all)) {
        free(all);
        find_set(f, VT_VERDICT_CANNOT, -1, "local error", "the ranks could not agree: %s", vt_errmsg());
        return;
    }
    int root = -1;
    for (int r = 0; r < n && root < 0; r++)
        if (all[r] != (double)VT_VERDICT_VERIFIED) root = r;
    free(all);
    if (root >= 0 && vt_dist_bcast(c, f, sizeof *f, root))
        find_set(f, VT_VERDICT_CANNOT, -1, "local error", "the ranks could not agree: %s", vt_errmsg());
}

/* The smallest of the ranks' values (the same on every rank). */
static uint64_t min_over_ranks(vt_comm *c, uint64_t v)
{
    int n = vt_dist_size(c);
    double mine = (double)v, *all = calloc((size_t)(n > 0 ? n : 1), sizeof *all);
    if (!all || vt_dist_allgather_f64(c, &mine, 1, all)) {
        free(all);
        return 1;
    }
    for (int r = 0; r < n; r++)
        if (all[r] < mine) mine = all[r];
    free(all);
    return (uint64_t)mine;
}

/* The memory each parallel replay needs, against the budget (a->budget, fixed now): *jobs reduced to
 * the replays that fit, res's memory fields set; a finding in *f when none fits. */
static void plan_memory(audit_ctx *a, const vt_audit_opts *o, finding *f, vt_audit_result *res, int *jobs)
{
    vt_program p;
    if (vt_program_build(&a->rcp, &p)) {
        find_set(f, VT_VERDICT_CANNOT, -1, "local error", "cannot build the program: %s", vt_errmsg());
        return; /* (every rank meets the agreement after it) */
    }
    vt_model_mem need;
    vt_model_need(&p, a->rcp.batch, a->ds.n, &need);
    vt_program_free(&p);
    a->budget = vt_model_memory_budget();
    if (vt_model_check_budget(&need, a->budget)) {
        find_set(f, VT_VERDICT_CANNOT, -1, "memory budget", "%s", vt_errmsg());
        return; /* (every rank meets the agreement after it) */
    }
    uint64_t fit = need.total > 0 ? (uint64_t)((double)a->budget / need.total) : (uint64_t)*jobs;
    if (fit < (uint64_t)*jobs) {
        char n[32], b[32];
        vt_fmt_bytes(need.total, n, sizeof n);
        vt_fmt_bytes((double)a->budget, b, sizeof b);
        if (!o->quiet)
            fprintf(stderr, "auditor: --jobs %d reduced to %llu: each replay needs %s, the memory budget is %s\n",
                    *jobs, (unsigned long long)fit, n, b);
        *jobs = (int)fit;
    }
    res->memory_need = need.total;
    res->memory_budget = (double)a->budget;
}

/* [from, to) split into at most jobs segments, each ending at a checkpoint (the last at to): ws[0..nw) */
static int split_segments(audit_ctx *a, worker *ws, int jobs, uint64_t from, uint64_t to)
{
    int nw = 0;
    uint64_t start = from;
    for (int j = 0; j < jobs && start < to; j++) {
        uint64_t target = from + (to - from) * (uint64_t)(j + 1) / (uint64_t)jobs, end = to;
        if (j + 1 < jobs) { /* the first checkpoint at or after the target */
            end = to;
            for (size_t i = 0; i < a->ncks; i++)
                if (a->cks[i] > start && a->cks[i] >= target && a->cks[i] < end) end = a->cks[i];
        }
        ws[nw].a = a;
        ws[nw].from = start;
        ws[nw].to = end;
        nw++;
        start = end;
    }
    return nw;
}

/* This rank's segments replayed: all of them in one process, every nr-th from its rank under mpirun,
 * each on its own thread when there are several. */
static void replay_own(audit_ctx *a, worker *ws, int nw, int rank, int nr, int quiet)
{
    uint64_t own_steps = 0;
    int n_own = 0;
    for (int j = rank; j < nw; j += nr) own_steps += ws[j].to - ws[j].from, n_own++;
    vt_progress_init(&a->pr, 0, own_steps, quiet);
    if (n_own == 1) {
        replay_segment(&ws[rank]);
    } else if (n_own > 1) {
        pthread_t *th = calloc((size_t)nw, sizeof *th);
        int *started = calloc((size_t)nw, sizeof *started);
        for (int j = rank; th && started && j < nw; j += nr)
            started[j] = pthread_create(&th[j], NULL, worker_main, &ws[j]) == 0;
        for (int j = rank; j < nw; j += nr) {
            if (th && started && started[j])
                pthread_join(th[j], NULL);
            else
                replay_segment(&ws[j]);
        }
        free(th);
        free(started);
    }
    vt_progress_end(&a->pr);
}

/* Every segment's result from the rank that replayed it. 0, or -1 with the finding set. */
static int gather_segments(vt_comm *comm, worker *ws, int nw, int nr, finding *f)
{
    for (int j = 0; comm && j < nw; j++) { /* every segment's result from the rank that replayed it */
        struct {
            finding f;
            uint64_t checked, applied, passed;
        } r = {ws[j].f, ws[j].checked, ws[j].applied, ws[j].passed};
        if (vt_dist_bcast(comm, &r, sizeof r, j % nr)) {
            find_set(f, VT_VERDICT_CANNOT, -1, "local error", "segment %d's result from rank %d: %s", j, j % nr,
                     vt_errmsg());
            return -1;
        }
        ws[j].f = r.f, ws[j].checked = r.checked, ws[j].applied = r.applied, ws[j].passed = r.passed;
    }
    return 0;
}

/* The result from the finding (the first one, or none: verified). */
static void fill_result(vt_audit_result *res, const finding *f, const audit_ctx *a, double t0)
{
    res->verdict = f->verdict;
    snprintf(res->reason, sizeof res->reason, "%s", f->verdict == VT_VERDICT_VERIFIED ? "verified" : f->reason);
    snprintf(res->detail, sizeof res->detail, "%s", f->verdict == VT_VERDICT_VERIFIED ? "" : f->detail);
    res->step = f->verdict == VT_VERDICT_VERIFIED ? -1 : f->step;
    res->op = f->verdict == VT_VERDICT_VERIFIED ? -1 : f->op;
    res->index = f->verdict == VT_VERDICT_VERIFIED ? -1 : f->index;
    snprintf(res->op_name, sizeof res->op_name, "%s", f->op_name);
    res->complete = f->verdict == VT_VERDICT_VERIFIED && res->from == 0 && a->rcp.steps && res->to == a->rcp.steps;
    res->seconds = vt_now() - t0;
    if ((res->has_commitment = a->have_cm)) { /* which run the verdict is about (trainer report matches it) */
        memcpy(res->merkle_root, a->cm.root, 32);
        memcpy(res->manifest_hash, a->cm.manifest_hash, 32);
    }
}

void vt_audit_run(const vt_audit_opts *o, vt_audit_result *res)
{
    vt_comm *comm = o->comm && vt_dist_size(o->comm) > 1 ? o->comm : NULL;
    const int nr = comm ? vt_dist_size(comm) : 1, rank = comm ? vt_dist_rank(comm) : 0;
    audit_ctx a;
    memset(&a, 0, sizeof a);
    memset(res, 0, sizeof *res);
    a.o = o;
    pthread_mutex_init(&a.mu, NULL);
    double t0 = vt_now();
    finding f;
    memset(&f, 0, sizeof f);
    f.step = f.op = f.index = -1;
    snprintf(res->order, sizeof res->order, "%s", vt_order_name(o->order));
    vt_store *st = NULL;
    worker *ws = NULL;
    int nw = 0;
    vt_err oe = vt_store_open(o->run_dir, 1, &st);
    if (oe == VT_ERR_MISMATCH) /* the manifest is not the one its recorded hash (and the commitment) names */
        find_set(&f, VT_VERDICT_REJECTED, -1, "manifest mismatch", "%s (recipe or dataset altered)", vt_errmsg());
    else if (oe)
        find_io(&f, -1, "run store");
    if (oe) {
        if (comm) agree_finding(comm, &f);
        goto done;
    }
    static_checks(&a, st, &f);
    vt_store_close(st);
    if (comm) agree_finding(comm, &f); /* every rank read the same run, or all stop with the first's finding */
    if (f.verdict != VT_VERDICT_VERIFIED) goto done;
    res->steps_total = a.rcp.steps;

    uint64_t from = o->from, to = o->to ? o->to : a.rcp.steps;
    if (to > a.rcp.steps || from >= to) {
        find_set(&f, VT_VERDICT_CANNOT, -1, "bad segment", "--from %llu --to %llu: the run has steps 1..%llu",
                 (unsigned long long)from, (unsigned long long)to, (unsigned long long)a.rcp.steps);
        goto done;
    }
    if (from && !is_checkpoint(&a, from)) {
        find_set(&f, VT_VERDICT_CANNOT, -1, "bad segment", "--from %llu: no checkpoint at that step (every %u steps)",
                 (unsigned long long)from, a.rcp.checkpoint_every);
        goto done;
    }
    res->from = from, res->to = to;
    /* memory: each parallel replay holds a model; all of them within the budget, fixed now */
    int jobs = o->jobs > 0 ? o->jobs : 1;
    plan_memory(&a, o, &f, res, &jobs);
    if (comm) agree_finding(comm, &f); /* a rank short of memory stops every rank */
    if (f.verdict != VT_VERDICT_VERIFIED) goto done;
    if (comm) { /* one split of the run for every rank: nr times the smallest rank's --jobs */
        jobs = (int)min_over_ranks(comm, (uint64_t)jobs) * nr;
    }
    ws = calloc((size_t)jobs, sizeof *ws);
    if (!ws) {
        find_set(&f, VT_VERDICT_CANNOT, -1, "local error", "out of memory");
        goto done;
    }
    nw = split_segments(&a, ws, jobs, from, to);
    /* this rank's segments: all of them in one process, every nr-th from its rank under mpirun */
    replay_own(&a, ws, nw, rank, nr, o->quiet);
    if (comm && gather_segments(comm, ws, nw, nr, &f)) goto done;
    for (int j = 0; j < nw; j++) { /* the earliest finding wins */
        res->steps_checked += ws[j].checked;
        res->entries_applied += ws[j].applied;
        res->checks_passed += ws[j].passed;
        if (ws[j].f.verdict != VT_VERDICT_VERIFIED && (f.verdict == VT_VERDICT_VERIFIED)) f = ws[j].f;
    }
done:
    fill_result(res, &f, &a, t0);
    free(ws);
    free(a.recs);
    free(a.cks);
    vt_data_free(&a.ds);
    vt_st_free(&a.init);
    pthread_mutex_destroy(&a.mu);
}

char *vt_audit_report_json(const vt_audit_result *r)
{
    static const char *const vname[] = {"verified", "rejected", "cannot_check"};
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:s, s:f}", "verdict",
                          vname[r->verdict], "reason", r->reason, "detail", r->detail, "step", (json_int_t)r->step,
                          "operation", (json_int_t)r->op, "index", (json_int_t)r->index, "steps_checked",
                          (json_int_t)r->steps_checked, "log_entries_applied", (json_int_t)r->entries_applied,
                          "plausibility_checks_passed", (json_int_t)r->checks_passed, "operation_name", r->op_name,
                          "from", (json_int_t)r->from, "to", (json_int_t)r->to, "order", r->order, "seconds",
                          r->seconds);
    if (!o) return NULL;
    /* what a verdict covers, field by field of the run store (docs/format.md) */
    const char *cov =
        r->verdict != VT_VERDICT_VERIFIED
            ? "no verdict of completeness: see reason"
        : r->complete
            ? "every stored field checked: each step's leaf (state hash, log hash) against the signed root; "
              "has_state against the recipe; loss and log_entries (not in the leaf) against the replay and the "
              "committed log, step 0's as zero; every log against its hash; every checkpoint the recipe promises "
              "present and equal to the replayed state, the last one included (the final state is exportable)"
            : "a segment: the leaves, the records' schedule and the presence of every promised checkpoint are "
              "checked for the whole run; loss, log_entries, logs and checkpoint contents only for the replayed "
              "steps";
    json_object_set_new(o, "coverage", json_string(cov));
    json_object_set_new(o, "complete", json_boolean(r->complete));
    json_object_set_new(o, "memory_need_bytes", json_real(r->memory_need));
    json_object_set_new(o, "memory_budget_bytes", json_real(r->memory_budget));
    if (r->has_commitment) { /* the run the report is about: its commitment's root and manifest hash */
        char h[65];
        vt_hex(r->merkle_root, 32, h);
        json_object_set_new(o, "merkle_root", json_string(h));
        vt_hex(r->manifest_hash, 32, h);
        json_object_set_new(o, "manifest_hash", json_string(h));
    }
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}
