#include "vt_train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "../arch/vt_graph.h"
#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../backend/cuda/vt_backend_open.h"
#include "../backend/cuda/vt_nccl.h"
#include "../data/vt_data.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../model/vt_model.h"
#include "../rounding/vt_round.h"
#include "../store/vt_safetensors.h"
#include "../store/vt_store.h"
#include "vt_init.h"
#include "vt_ranks.h"
#include "vt_step.h"

void vt_recipe_dataset_spec(const vt_recipe *rcp, char *buf, size_t cap)
{
    if (rcp->subset)
        snprintf(buf, cap, "%s:%llu", rcp->dataset, (unsigned long long)rcp->subset);
    else
        snprintf(buf, cap, "%s", rcp->dataset);
}

typedef struct {
    vt_store *st;
    vt_dataset ds;
    vt_model m;
    vt_merkle tree;
    vt_keypair kp;
    vt_steplog log;
    char *manifest;
    vt_backend be;
    vt_st_file init; /* --init: the initial state's file */
    vt_comm *comm;   /* NULL: one process */
    int rank, size;  /* this rank, the ranks (1: one process) */
    int common;      /* the error returned is every rank's (agreed or compared alike) */
    /* a sharded run's start, decided by rank 0 in open_run, done by every rank in share_start: */
    int load_ck;       /* 1: stream checkpoint `start` in to the ranks' shares */
    int step0;         /* 1: commit step 0 (a new run), 2: recreate it (a resume with no usable checkpoint) */
    uint64_t step0_cnt; /* the steps stored (step0 = 2) */
} train_ctx;

/* the checkpoint writer and reader as the model's sink and source of a streamed state */
static vt_err ckpt_sink(void *w, const float *v, size_t n) { return vt_ckpt_write_append(w, v, n); }
static vt_err ckpt_source(void *r, float *v, size_t n) { return vt_ckpt_read(r, v, n); }

static void ctx_free(train_ctx *t)
{
    vt_store_close(t->st);
    vt_data_free(&t->ds);
    vt_model_free(&t->m);
    vt_backend_close(&t->be);
    vt_merkle_free(&t->tree);
    vt_keypair_wipe(&t->kp);
    vt_steplog_free(&t->log);
    free(t->manifest);
    vt_st_free(&t->init);
}

/* The record of step s from the model's state (hash: its state hash when already computed, else
 * NULL) and t->log; *blob: the stored log (caller frees). */
static vt_err step_record(train_ctx *t, const vt_recipe *rcp, uint64_t s, float loss, const uint8_t *hash,
                          vt_step_rec *rec, uint8_t **blob, size_t *blen)
{
    memset(rec, 0, sizeof *rec);
    rec->step = s;
    memcpy(&rec->loss_bits, &loss, 4);
    VT_FORWARD_IF_ERROR(vt_steplog_encode_stored(&t->log, rcp->zstd_level, blob, blen, rec->log_hash));
    rec->has_state = vt_recipe_has_state(rcp, s);
    rec->log_entries = vt_steplog_total_entries(&t->log);
    vt_err e = VT_OK;
    if (rec->has_state && hash) memcpy(rec->state_hash, hash, 32);
    else if (rec->has_state) e = vt_model_state_hash(&t->m, rec->state_hash);
    if (!e) e = vt_step_leaf(s, rec->state_hash, rec->has_state, rec->log_hash, rec->leaf);
    if (e) {
        free(*blob);
        *blob = NULL;
    }
    return e;
}

/* Commit one step (record, log, leaf, and a checkpoint when due). The step's row is stored before
 * its checkpoint: a crash in between leaves a checkpoint step without its checkpoint, which resume
 * passes over (an earlier checkpoint, or step 0 recreated from the recipe). */
static vt_err commit_step(train_ctx *t, const vt_recipe *rcp, uint64_t s, float loss, const uint8_t *hash,
                          vt_ckpt_writer *w, vt_train_result *res)
{
    /* w: the checkpoint streamed so far (a sharded run), finished here (aborted on failure) */
    uint8_t *blob = NULL;
    size_t blen = 0;
    vt_step_rec rec;
    vt_err e = step_record(t, rcp, s, loss, hash, &rec, &blob, &blen);
    if (!e) e = vt_store_put_step(t->st, &rec, blob, blen);
    free(blob);
    if (!e) e = vt_merkle_append(&t->tree, rec.leaf);
    if (e || !vt_recipe_has_checkpoint(rcp, s)) vt_ckpt_write_abort(w);
    VT_FORWARD_IF_ERROR(e);
    if (vt_recipe_has_checkpoint(rcp, s))
        VT_FORWARD_IF_ERROR(w ? vt_ckpt_write_finish(w)
                              : vt_store_put_checkpoint(t->st, s, t->m.state, t->m.n_state, rcp->zstd_level));
    res->log_entries += rec.log_entries;
    res->log_bytes += blen;
    res->log_steps++;
    return VT_OK;
}

/* A write of the run failed (a full disk, an I/O error): what is stored stays valid, and resume
 * goes on from it; the message says so. */
static vt_err write_failed(vt_err e)
{
    if (e != VT_ERR_IO && e != VT_ERR_DB) return e;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", vt_errmsg()); /* (not formatted into the buffer it is read from) */
    return vt_set_error(e, "%s; the steps stored are kept: once the cause is fixed, --resume continues the run", msg);
}

/* The figures of the stored steps 0 .. count-1: the last one's loss, the log entries and the
 * compressed log bytes (a resume that has nothing left to train reports these). */
static vt_err store_figures(train_ctx *t, uint64_t count, vt_train_result *res)
{
    res->log_entries = res->log_bytes = res->log_steps = 0;
    for (uint64_t s = 0; s < count; s++) {
        vt_step_rec rec;
        uint8_t *blob = NULL;
        size_t len = 0;
        VT_FORWARD_IF_ERROR(vt_store_get_step(t->st, s, &rec));
        VT_FORWARD_IF_ERROR(vt_store_get_log(t->st, s, &blob, &len));
        free(blob);
        res->log_entries += rec.log_entries;
        res->log_bytes += len;
        res->log_steps++;
        if (s + 1 == count) memcpy(&res->final_loss, &rec.loss_bits, 4);
    }
    return VT_OK;
}

/* Resume of a finished run: every step stored and a readable commitment over exactly those steps
 * and this manifest. *finished = 1 then (res filled from the store; nothing is written); otherwise
 * the run is resumed (a run whose last step was stored but not committed is committed). */
static vt_err finished_run(train_ctx *t, const vt_recipe *rcp, const char *run_dir, int *finished, vt_train_result *res)
{
    *finished = 0;
    uint64_t cnt;
    VT_FORWARD_IF_ERROR(vt_store_step_count(t->st, &cnt));
    if (cnt != rcp->steps + 1) return VT_OK;
    char path[4096];
    vt_store_commitment_path(run_dir, path, sizeof path);
    vt_commitment c;
    FILE *f = fopen(path, "rb");
    if (!f) return VT_OK;
    fclose(f);
    if (vt_commitment_read(path, &c) != VT_OK || c.step_count != cnt) return VT_OK;
    char *mf = NULL;
    size_t ml = 0;
    uint8_t mh[32], root[32];
    VT_FORWARD_IF_ERROR(vt_store_manifest(t->st, &mf, &ml, mh));
    free(mf);
    vt_merkle tree;
    vt_merkle_init(&tree);
    vt_err e = VT_OK;
    for (uint64_t s = 0; s < cnt && !e; s++) {
        vt_step_rec rec;
        e = vt_store_get_step(t->st, s, &rec);
        if (!e) e = vt_merkle_append(&tree, rec.leaf);
    }
    if (!e) e = vt_merkle_root(&tree, root);
    vt_merkle_free(&tree);
    VT_FORWARD_IF_ERROR(e);
    if (memcmp(root, c.root, 32) != 0 || memcmp(mh, c.manifest_hash, 32) != 0) return VT_OK;
    VT_FORWARD_IF_ERROR(store_figures(t, cnt, res));
    res->steps = rcp->steps;
    res->resumed_from = rcp->steps;
    memcpy(res->root, c.root, 32);
    *finished = 1;
    return VT_OK;
}

/* Loads checkpoint ck into the model and checks it against step ck's committed state hash. */
static vt_err load_checkpoint(train_ctx *t, uint64_t ck)
{
    vt_step_rec rec;
    uint8_t h[32];
    if (vt_model_sharded(&t->m)) { /* checked streamed, nothing kept: share_start streams it in to the ranks */
        vt_ckpt_reader *r = NULL;
        VT_FORWARD_IF_ERROR(vt_ckpt_read_open(t->st, ck, t->m.n_state, &r));
        vt_err e = vt_model_state_hash_read(&t->m, ck, ckpt_source, r, h);
        if (e) vt_ckpt_read_abort(r);
        else e = vt_ckpt_read_close(r);
        VT_FORWARD_IF_ERROR(e);
        VT_FORWARD_IF_ERROR(vt_store_get_step(t->st, ck, &rec));
        VT_RETURN_ERROR_IF(!rec.has_state || memcmp(h, rec.state_hash, 32) != 0, VT_ERR_MISMATCH,
                           "checkpoint %llu does not match its committed state", (unsigned long long)ck);
        return VT_OK;
    }
    float *state = NULL;
    VT_FORWARD_IF_ERROR(vt_store_get_checkpoint(t->st, ck, t->m.n_state, &state));
    vt_err e = vt_model_set_state(&t->m, ck, state, t->m.n_state);
    free(state);
    VT_FORWARD_IF_ERROR(e);
    VT_FORWARD_IF_ERROR(vt_store_get_step(t->st, ck, &rec));
    VT_FORWARD_IF_ERROR(vt_model_state_hash(&t->m, h));
    VT_RETURN_ERROR_IF(!rec.has_state || memcmp(h, rec.state_hash, 32) != 0, VT_ERR_MISMATCH,
                       "checkpoint %llu does not match its committed state", (unsigned long long)ck);
    return VT_OK;
}

/* Resume without a usable checkpoint: step 0 is the recipe's initial state (the model's state
 * before anything was loaded, in init), so it is recreated, checked against the stored step 0
 * (when there is one) and checkpointed again. */
static vt_err recreate_step0(train_ctx *t, const vt_recipe *rcp, uint64_t cnt, const float *init, const uint8_t *hash,
                             vt_ckpt_writer *w, vt_train_result *res)
{
    /* a sharded run: init NULL, the state already step 0's, hash its state hash, w its checkpoint streamed */
    vt_err e = init ? vt_model_set_state(&t->m, 0, init, t->m.n_state) : VT_OK;
    vt_steplog_reset(&t->log, 0);
    if (!e && cnt == 0) return commit_step(t, rcp, 0, 0.0f, hash, w, res); /* killed before step 0 was stored */
    vt_step_rec want, got;
    uint8_t *blob = NULL;
    size_t blen = 0;
    if (!e) e = step_record(t, rcp, 0, 0.0f, hash, &want, &blob, &blen);
    free(blob);
    if (!e) e = vt_store_get_step(t->st, 0, &got);
    if (!e && memcmp(want.leaf, got.leaf, 32) != 0)
        e = vt_set_error(VT_ERR_MISMATCH, "cannot resume: the stored step 0 is not this recipe's initial state");
    if (!e) e = vt_store_truncate(t->st, 0);
    if (e) vt_ckpt_write_abort(w);
    VT_FORWARD_IF_ERROR(e);
    VT_FORWARD_IF_ERROR(w ? vt_ckpt_write_finish(w) : vt_store_put_checkpoint(t->st, 0, init, t->m.n_state, rcp->zstd_level));
    return vt_merkle_append(&t->tree, got.leaf);
}

/* Resume: keep the steps up to the newest usable checkpoint, reload it, rebuild the tree. A
 * checkpoint that cannot be read, or does not match its step's committed state, is passed over
 * (saying so); with none usable, step 0 is recreated from the recipe. */
static vt_err resume_run(train_ctx *t, const vt_recipe *rcp, uint64_t *start, vt_train_result *res)
{
    uint64_t cnt;
    VT_FORWARD_IF_ERROR(vt_store_step_count(t->st, &cnt));
    uint64_t *cks = NULL;
    size_t nck = 0;
    VT_FORWARD_IF_ERROR(vt_store_list_checkpoints(t->st, &cks, &nck));
    /* step 0's state, in case no checkpoint is usable (a sharded run: a loaded checkpoint changes nothing) */
    const int sharded = vt_model_sharded(&t->m);
    float *init = sharded ? NULL : malloc(t->m.n_state ? t->m.n_state * sizeof *init : 1);
    if (!sharded && !init) {
        free(cks);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory resuming the run");
    }
    if (init && t->m.n_state) memcpy(init, t->m.state, t->m.n_state * sizeof *init);
    uint64_t ck = 0;
    int found = 0, passed = 0;
    vt_err e = VT_OK;
    for (size_t i = nck; i-- > 0 && !found;) {
        if (cks[i] >= cnt) continue; /* its step was never stored (truncated below) */
        e = load_checkpoint(t, cks[i]);
        if (!e) {
            ck = cks[i];
            found = 1;
        } else if (e == VT_ERR_FORMAT || e == VT_ERR_MISMATCH || e == VT_ERR_IO) {
            fprintf(stderr, "resume: checkpoint %llu is unusable (%s): trying the one before\n",
                    (unsigned long long)cks[i], vt_errmsg());
            passed = 1;
            e = VT_OK;
        } else {
            break;
        }
    }
    free(cks);
    if (!e && !found) {
        if (cnt == 0)
            fprintf(stderr, "resume: the run stored no step yet: starting it at step 0\n");
        else
            fprintf(stderr, "resume: %s: step 0 recreated from the recipe\n",
                    passed ? "no usable checkpoint" : "the run has no checkpoint yet");
        if (sharded) { /* with every rank: share_start */
            vt_steplog_reset(&t->log, 0);
            t->step0 = 2, t->step0_cnt = cnt;
        } else {
            e = recreate_step0(t, rcp, cnt, init, NULL, NULL, res);
        }
    }
    free(init);
    VT_FORWARD_IF_ERROR(e);
    if (found) {
        t->load_ck = sharded;
        if (passed) fprintf(stderr, "resume: from checkpoint %llu\n", (unsigned long long)ck);
        VT_FORWARD_IF_ERROR(vt_store_truncate(t->st, ck));
        for (uint64_t s = 0; s <= ck; s++) {
            vt_step_rec rec;
            VT_FORWARD_IF_ERROR(vt_store_get_step(t->st, s, &rec));
            VT_FORWARD_IF_ERROR(vt_merkle_append(&t->tree, rec.leaf));
        }
    }
    *start = ck;
    res->resumed_from = ck;
    return VT_OK;
}

/* ranks > 1: every rank's outcome agreed (vt_dist_agree: the lowest failing rank's error, its
 * message naming that rank, on every rank). One rank: mine, unchanged. */
static vt_err agree(train_ctx *t, vt_err mine)
{
    if (t->size <= 1) return mine;
    int failed = -1;
    vt_err e = vt_dist_agree(t->comm, mine, &failed);
    if (e && failed >= 0) t->common = 1;
    return e;
}

/* What every rank sets up for itself before anything is written: the recipe's checks, the data,
 * the manifest, the model (with ranks > 1 built for this rank's share of the batch and sharded),
 * the backend. Only rank 0 reads the secret key (it alone signs). */
static vt_err prepare(train_ctx *t, const vt_recipe *rcp, const vt_train_opts *o)
{
    char spec[VT_RECIPE_SPEC_MAX];
    vt_recipe_dataset_spec(rcp, spec, sizeof spec);
    VT_FORWARD_IF_ERROR(vt_recipe_validate(rcp));
    const char *backend = o->backend ? o->backend : "cpu";
    VT_RETURN_ERROR_IF(o->shard_state && strcmp(backend, "cpu") != 0, VT_ERR_UNSUPPORTED,
                       "--shard-state: the sharded optimiser state is updated on the CPU ranks (--backend cpu, the "
                       "default); --backend %s keeps the whole state on every rank",
                       backend);
    vt_recipe local = *rcp; /* the program each rank runs: its share of the batch */
    if (t->size > 1) {     /* the refusals of a data-parallel run, before anything is read or written */
        VT_RETURN_ERROR_IF(rcp->batch % (uint32_t)t->size != 0, VT_ERR_ARG,
                           "a batch of %u examples does not split into %d equal shares: with %d ranks the batch "
                           "must be a multiple of %d (--set batch=...), or run another number of ranks",
                           rcp->batch, t->size, t->size, t->size);
        VT_RETURN_ERROR_IF(rcp->bound.rounding != VT_ROUNDING_EXACT, VT_ERR_ARG,
                           "rounding=log runs in one process only: with %d ranks use rounding=exact (the default), "
                           "or train rounding=log without mpirun",
                           t->size);
        VT_RETURN_ERROR_IF(strcmp(backend, "cpu") != 0 && !vt_nccl_built(), VT_ERR_UNSUPPORTED,
                           "--backend %s with %d ranks: this build has no NCCL (configured without NCCL beside the "
                           "CUDA backend, VT_NCCL): data-parallel ranks compute on the CPU (--backend cpu, the "
                           "default); a GPU run without NCCL is one process",
                           backend, t->size);
        local.batch = rcp->batch / (uint32_t)t->size;
    }
    VT_FORWARD_IF_ERROR(vt_sign_init());
    if (t->rank == 0) VT_FORWARD_IF_ERROR(vt_sign_read_secret_key(o->key_path, &t->kp));
    VT_FORWARD_IF_ERROR(vt_data_load(spec, o->data_root, &t->ds));
    VT_FORWARD_IF_ERROR(vt_recipe_check_data(rcp, &t->ds));
    /* The backend is informational: an auditor uses its own. To keep the manifest (and so the
     * commitment) independent of the trainer's evaluation order, only the device class is recorded.
     * The manifest is the whole run's (the global batch), whatever the number of ranks. */
    VT_FORWARD_IF_ERROR(vt_manifest_build_ds(rcp, &t->ds, backend, &t->manifest));
    if (o->shard_state && t->size > 1) /* each rank 1/N of the optimiser state */
        VT_FORWARD_IF_ERROR(vt_model_init_sharded(&t->m, &local, t->ds.n, o->order, t->comm));
    else
        VT_FORWARD_IF_ERROR(vt_model_init(&t->m, &local, t->ds.n, o->order));
    if (t->size > 1) VT_FORWARD_IF_ERROR(vt_model_set_shard(&t->m, t->comm, rcp->batch));
    if (rcp->has_init) VT_FORWARD_IF_ERROR(vt_init_apply(&t->m, &t->init)); /* before anything is written */
    VT_FORWARD_IF_ERROR(vt_backend_open(backend, &t->be));
    vt_model_set_backend(&t->m, &t->be);
    if (!o->quiet && t->be.gemm_round) fprintf(stderr, "backend: %s: %s\n", t->be.name, t->be.desc);
    vt_model_set_hooks(&t->m, o->hooks);
    return VT_OK;
}

/* A 32-byte hash as 4 FP64 values' bits (vt_dist_allgather_f64 copies bits unchanged). */
static vt_err gather_hashes(train_ctx *t, const uint8_t *h, size_t nh, double **all)
{
    double mine[8];
    memcpy(mine, h, nh * 32);
    *all = malloc((size_t)t->size * nh * 4 * sizeof **all);
    VT_RETURN_ERROR_IF(!*all, VT_ERR_NOMEM, "out of memory comparing the ranks");
    vt_err e = vt_dist_allgather_f64(t->comm, mine, nh * 4, *all);
    if (e) {
        free(*all);
        *all = NULL;
    }
    return e;
}

/* ranks > 1: the ranks compare their state hashes after step s (h: this rank's); a rank whose state
 * differs from rank 0's stops every rank, named (the same error on every rank). */
static vt_err same_state(train_ctx *t, uint64_t s, const uint8_t h[32])
{
    double *all = NULL;
    VT_FORWARD_IF_ERROR(gather_hashes(t, h, 1, &all));
    int bad = 0;
    for (int r = 1; r < t->size && !bad; r++)
        if (memcmp(all + (size_t)r * 4, all, 32) != 0) bad = r;
    char mine[17] = "", root[17] = "";
    if (bad) {
        uint8_t b[32];
        memcpy(b, all + (size_t)bad * 4, 32);
        vt_hex(b, 8, mine);
        memcpy(b, all, 32);
        vt_hex(b, 8, root);
    }
    free(all);
    if (!bad) return VT_OK;
    t->common = 1;
    VT_RETURN_ERROR(VT_ERR_MISMATCH,
                    "rank %d of %d: its state after step %llu differs from rank 0's (state hash %s... against "
                    "%s...): the ranks no longer train the same run; every rank stopped, step %llu was not "
                    "stored (--resume continues from the steps stored)",
                    bad, t->size, (unsigned long long)s, mine, root, (unsigned long long)s);
}

/* A new run's directory may name parents that do not exist yet (`trainer train runs/x`): they are
 * created (mode 0777 less the umask), the run directory itself by vt_store_create. */
static vt_err make_parents(const char *dir)
{
    char p[4096];
    size_t n = strlen(dir);
    VT_RETURN_ERROR_IF(n >= sizeof p, VT_ERR_ARG, "run directory %.64s...: path too long", dir);
    memcpy(p, dir, n + 1);
    while (n > 1 && p[n - 1] == '/') p[--n] = 0; /* "runs/x/" names x */
    for (size_t i = 1; i < n; i++) {
        if (p[i] != '/' || p[i - 1] == '/') continue;
        p[i] = 0;
        struct stat sb;
        if (stat(p, &sb) != 0) {
            VT_RETURN_ERROR_IF(mkdir(p, 0777) != 0 && errno != EEXIST, VT_ERR_IO,
                               "cannot create %s, a parent of the run directory %s: %s", p, dir, strerror(errno));
        } else {
            VT_RETURN_ERROR_IF(!S_ISDIR(sb.st_mode), VT_ERR_IO,
                               "cannot create the run directory %s: %s is not a directory", dir, p);
        }
        p[i] = '/';
    }
    return VT_OK;
}

/* Rank 0: opens the run directory - creates the run store and commits step 0, or resumes (the
 * newest usable checkpoint, *start its step), or finds the run finished (*done = 1). */
static vt_err open_run(train_ctx *t, const vt_recipe *rcp, const vt_train_opts *o, uint64_t *start, int *done,
                       vt_train_result *res)
{
    const char *backend = o->backend ? o->backend : "cpu";
    size_t mlen = strlen(t->manifest);
    int wait_ms = (o->reader_wait_s > 0 ? o->reader_wait_s : VT_TRAIN_READER_WAIT_S) * 1000;
    int fresh = !o->resume;
    *start = 0;
    *done = 0;
    if (o->resume) { /* a directory whose run.db was never completed (killed while creating it) starts afresh */
        char p[4096];
        struct stat sb;
        snprintf(p, sizeof p, "%s/run.db", o->run_dir);
        if (stat(p, &sb) != 0 && errno == ENOENT && stat(o->run_dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "resume: %s has no run.db (its creation was interrupted): starting the run\n",
                    o->run_dir);
            fresh = 1;
        }
    }
    if (!fresh) {
        VT_FORWARD_IF_ERROR(vt_store_open(o->run_dir, 0, &t->st));
        char *mf = NULL;
        size_t ml = 0;
        uint8_t mh[32];
        VT_FORWARD_IF_ERROR(vt_store_manifest(t->st, &mf, &ml, mh));
        int same = ml == mlen && memcmp(mf, t->manifest, ml) == 0;
        if (!same) { /* a run may be resumed on the other backend: it records the one it started on */
            char *alt = NULL;
            vt_err ea = vt_manifest_build_ds(rcp, &t->ds, strcmp(backend, "cpu") ? "cpu" : "cuda", &alt);
            if (ea) free(mf);
            VT_FORWARD_IF_ERROR(ea);
            if (strlen(alt) == ml && memcmp(mf, alt, ml) == 0) {
                free(t->manifest);
                t->manifest = alt;
                same = 1;
            } else {
                free(alt);
            }
        }
        if (!same) {
            /* a run of manifest format 4 (before one log per state) of this recipe and dataset goes on
             * under its own log rule, keeping its manifest; other formats numbered or bounded their
             * steps otherwise and are not resumed */
            vt_recipe old;
            uint8_t odh[32];
            char *keep = malloc(ml + 1);
            if (keep && vt_manifest_parse(mf, ml, &old, odh) == VT_OK && memcmp(odh, t->ds.hash, 32) == 0 &&
                vt_recipe_equal(&old, rcp) && old.program_version == rcp->program_version &&
                old.bound.whole_reduction == rcp->bound.whole_reduction) {
                memcpy(keep, mf, ml);
                keep[ml] = 0;
                free(t->manifest);
                t->manifest = keep;
                keep = NULL;
                t->m.rcp.bound.legacy_log = old.bound.legacy_log;
                same = 1;
            }
            free(keep);
        }
        free(mf);
        VT_RETURN_ERROR_IF(!same, VT_ERR_ARG, "cannot resume %s: it was started with another recipe or dataset",
                           o->run_dir);
        VT_FORWARD_IF_ERROR(finished_run(t, rcp, o->run_dir, done, res));
        if (*done) { /* (a run.db that an earlier version or a blocked finish left in WAL mode is folded) */
            VT_FORWARD_IF_ERROR(vt_store_finish(t->st, wait_ms));
            res->finished = 1;
            return VT_OK;
        }
        VT_FORWARD_IF_ERROR(resume_run(t, rcp, start, res));
    } else {
        if (!o->resume) VT_FORWARD_IF_ERROR(make_parents(o->run_dir)); /* a resume creates nothing */
        VT_FORWARD_IF_ERROR(vt_store_create(o->run_dir, t->manifest, mlen, &t->st));
        if (rcp->has_init) VT_FORWARD_IF_ERROR(vt_store_put_file(o->run_dir, VT_INIT_FILE, t->init.bytes, t->init.len));
        if (rcp->has_init && rcp->init_torch)
            VT_FORWARD_IF_ERROR(vt_store_put_file(o->run_dir, VT_INIT_LAYOUT_FILE, (const uint8_t *)"torch\n", 6));
        vt_steplog_reset(&t->log, 0);
        if (vt_model_sharded(&t->m)) /* with every rank: share_start */
            t->step0 = 1;
        else
            VT_FORWARD_IF_ERROR(write_failed(commit_step(t, rcp, 0, 0.0f, NULL, NULL, res)));
    }
    return VT_OK;
}

/* A sharded run's start, every rank (no rank ever holds the whole optimiser state): a resume
 * streams the checkpoint rank 0 checked in to every rank's share; a new run (or a resume with no
 * usable checkpoint) holds step 0's state on every rank already (the recipe's initial state and
 * --init, each rank its share), and streams it out to rank 0 to commit step 0 and its checkpoint
 * (or to check the stored step 0 against it and write its checkpoint again). */
static vt_err shard_start(train_ctx *t, const vt_recipe *rcp, uint64_t start, vt_train_result *res)
{
    const int root = t->rank == 0;
    vt_model_shard_release(&t->m);
    if (t->load_ck) {
        vt_ckpt_reader *r = NULL;
        VT_FORWARD_IF_ERROR(agree(t, root ? vt_ckpt_read_open(t->st, start, t->m.n_state, &r) : VT_OK));
        vt_err e = vt_model_shard_stream_in(&t->m, start, root ? ckpt_source : NULL, r);
        if (root) { /* (the file read again: its hash is checked again at close) */
            if (e) vt_ckpt_read_abort(r);
            else e = vt_ckpt_read_close(r);
        }
        return agree(t, e);
    }
    if (!t->step0) return VT_OK;
    vt_ckpt_writer *w = NULL;
    vt_err e = root && vt_recipe_has_checkpoint(rcp, 0) ? vt_ckpt_write_open(t->st, 0, t->m.n_state, rcp->zstd_level, &w)
                                                       : VT_OK;
    VT_FORWARD_IF_ERROR(agree(t, e));
    uint8_t full[32];
    e = agree(t, vt_model_shard_stream_out(&t->m, w ? ckpt_sink : NULL, w, full));
    if (e) {
        vt_ckpt_write_abort(w);
        return e;
    }
    if (root)
        e = t->step0 == 1 ? commit_step(t, rcp, 0, 0.0f, full, w, res)
                          : recreate_step0(t, rcp, t->step0_cnt, NULL, full, w, res);
    return agree(t, write_failed(e));
}

/* ranks > 1, after rank 0 opened the run: rank 0's outcome (finished or not), start step, log rule
 * and state go to every rank, so that every rank starts from rank 0's state. */
static vt_err share_start(train_ctx *t, const vt_recipe *rcp, uint64_t *start, int *done, vt_train_result *res)
{
    uint64_t hdr[6] = {*start, (uint64_t)*done, (uint64_t)(int64_t)t->m.rcp.bound.legacy_log, (uint64_t)t->load_ck,
                       (uint64_t)t->step0, t->step0_cnt};
    VT_FORWARD_IF_ERROR(vt_dist_bcast(t->comm, hdr, sizeof hdr, 0));
    *start = hdr[0];
    *done = (int)hdr[1];
    t->m.rcp.bound.legacy_log = (int)(int64_t)hdr[2];
    t->load_ck = (int)hdr[3], t->step0 = (int)hdr[4], t->step0_cnt = hdr[5];
    if (*done) return VT_OK;
    if (vt_model_sharded(&t->m)) return shard_start(t, rcp, *start, res);
    vt_err e = vt_dist_bcast(t->comm, t->m.state, t->m.n_state * sizeof *t->m.state, 0);
    if (!e && t->rank != 0) e = vt_model_set_state(&t->m, *start, t->m.state, t->m.n_state);
    return e;
}

/* Rank 0, after the last step: run.db self-contained, then the signed commitment. */
static vt_err commit_run(train_ctx *t, const vt_train_opts *o, vt_train_result *res)
{
    int wait_ms = (o->reader_wait_s > 0 ? o->reader_wait_s : VT_TRAIN_READER_WAIT_S) * 1000;
    /* run.db self-contained before the commitment exists: a committed run is run.db, the
     * checkpoints and commitment.vtc, whatever readers were doing */
    VT_FORWARD_IF_ERROR(vt_store_finish(t->st, wait_ms));

    /* commitment */
    vt_commitment c;
    memset(&c, 0, sizeof c);
    c.version = 1;
    char *mf = NULL;
    size_t ml = 0;
    VT_FORWARD_IF_ERROR(vt_store_manifest(t->st, &mf, &ml, c.manifest_hash));
    free(mf);
    c.step_count = vt_merkle_size(&t->tree);
    VT_FORWARD_IF_ERROR(vt_merkle_root(&t->tree, c.root));
    memcpy(c.public_key, t->kp.pk, 32);
    uint8_t body[VT_COMMITMENT_BODY_LEN];
    vt_commitment_body(&c, body);
    VT_FORWARD_IF_ERROR(vt_sign_detached(&t->kp, body, sizeof body, c.signature));
    char path[4096];
    vt_store_commitment_path(o->run_dir, path, sizeof path);
    VT_FORWARD_IF_ERROR(vt_commitment_write(path, &c));
    memcpy(res->root, c.root, 32);
    res->committed = 1;
    return VT_OK;
}

/* One step on this rank: run it, then (ranks > 1) agree on every rank's outcome and compare the
 * states when the step commits one; then rank 0 commits it, and the ranks agree on that. */
static vt_err train_step(train_ctx *t, const vt_recipe *rcp, const vt_train_opts *o, uint64_t s, vt_step_args *sa,
                         float *loss, vt_train_result *res)
{
    vt_err e = vt_step_run(&t->m, &t->ds, sa);
    if (e && sa->fault->code != VT_OK) e = vt_set_error(e, "%s [%s]", vt_errmsg(), vt_model_op_name(&t->m, sa->fault->op_id));
    if (!e && o->hooks && o->hooks->after_log) o->hooks->after_log(o->hooks->ctx, &t->log, s);
    uint8_t h[32], full[32];
    int compare = t->size > 1 && vt_recipe_has_state(rcp, s), sharded = vt_model_sharded(&t->m);
    if (!e && compare) e = sharded ? vt_model_replica_hash(&t->m, h) : vt_model_state_hash(&t->m, h);
    VT_FORWARD_IF_ERROR(agree(t, e));
    if (compare) VT_FORWARD_IF_ERROR(same_state(t, s, h));
    vt_ckpt_writer *w = NULL;
    if (sharded && compare) { /* the state streamed to rank 0, one optimiser tensor at a time: hashed, and
                               * at a checkpoint written to it as it comes */
        if (t->rank == 0 && vt_recipe_has_checkpoint(rcp, s))
            e = vt_ckpt_write_open(t->st, s, t->m.n_state, rcp->zstd_level, &w);
        VT_FORWARD_IF_ERROR(agree(t, write_failed(e)));
        e = agree(t, vt_model_shard_stream_out(&t->m, w ? ckpt_sink : NULL, w, full));
        if (e) {
            vt_ckpt_write_abort(w);
            return e;
        }
    }
    e = t->rank == 0 ? commit_step(t, rcp, s, *loss, compare ? (sharded ? full : h) : NULL, w, res) : VT_OK;
    if (e) e = write_failed(e);
    return agree(t, e);
}

/* The state's planned bytes on this rank (information: the summary, the benchmark). */
static vt_err state_figures(train_ctx *t, vt_train_result *res)
{
    vt_model_mem mem;
    if (vt_model_sharded(&t->m))
        VT_FORWARD_IF_ERROR(vt_model_need_sharded(&t->m.prog, t->m.rcp.batch, t->ds.n, t->rank, t->size, &mem));
    else
        vt_model_need(&t->m.prog, t->m.rcp.batch, t->ds.n, &mem);
    res->sharded = vt_model_sharded(&t->m);
    res->state_bytes = (uint64_t)mem.state, res->opt_bytes = (uint64_t)mem.opt, res->model_bytes = (uint64_t)mem.total;
    res->state_total = (uint64_t)t->m.prog.arena_bytes[VT_TC_PARAM];
    for (uint32_t k = 0; k < t->m.prog.n_state; k++)
        if (t->m.prog.t[k].cls == VT_TC_OPT) res->opt_total += t->m.prog.t[k].n * sizeof(float);
    return VT_OK;
}

static vt_err train(train_ctx *t, const vt_recipe *rcp, const vt_train_opts *o, vt_train_result *res)
{
    const int root = t->rank == 0;
    VT_FORWARD_IF_ERROR(agree(t, prepare(t, rcp, o)));
    const char *engine = getenv("VT_DIST_ENGINE"); /* "mpi": the GPU ranks' collectives over MPI (a check) */
    const int nccl = t->size > 1 && t->be.impl && !(engine && strcmp(engine, "mpi") == 0);
    if (t->size > 1 && vt_dist_is_mpi(t->comm)) { /* the first collective after the start-up's agreement: every
                                                    * rank reaches it (thread shares: one build, one set of options) */
        const vt_ranks_start st = {o->shard_state, o->backend ? o->backend : "cpu", nccl ? "nccl" : "mpi",
                                   o->resume, o->stop_after, t->manifest, &t->m.prog, o->order, o->hooks};
        int common = 0;
        vt_err e = vt_ranks_agree(t->comm, &st, &common);
        t->common = common;
        VT_FORWARD_IF_ERROR(e);
    }
    if (nccl) { /* --backend cuda: the ranks' collectives over NCCL (its errors agreed) */
        vt_err e = vt_nccl_attach(&t->be, t->comm);
        t->common = e != VT_OK;
        VT_FORWARD_IF_ERROR(e);
    }
    VT_FORWARD_IF_ERROR(agree(t, state_figures(t, res)));
    vt_merkle_init(&t->tree);
    vt_steplog_init(&t->log, 0);
    uint64_t start = 0;
    int done = 0;
    VT_FORWARD_IF_ERROR(agree(t, root ? open_run(t, rcp, o, &start, &done, res) : VT_OK));
    vt_st_free(&t->init); /* applied to the model and kept in the run directory: its bytes are not needed again */
    if (t->size > 1) {
        VT_FORWARD_IF_ERROR(share_start(t, rcp, &start, &done, res));
        if (done) {
            res->finished = 1;
            res->steps = res->resumed_from = rcp->steps;
            return VT_OK;
        }
        uint8_t h[32];
        VT_FORWARD_IF_ERROR(agree(t, vt_model_sharded(&t->m) ? vt_model_replica_hash(&t->m, h)
                                                             : vt_model_state_hash(&t->m, h)));
        VT_FORWARD_IF_ERROR(same_state(t, start, h));
        res->resumed_from = start;
    } else if (done) {
        return VT_OK;
    }

    vt_rstats stats;
    memset(&stats, 0, sizeof stats);
    vt_fault fault;
    vt_step_args sa;
    memset(&sa, 0, sizeof sa);
    sa.party = VT_PARTY_TRAINER, sa.log = &t->log, sa.fault = &fault, sa.stats = &stats;
    vt_progress pr;
    vt_progress_init(&pr, start, rcp->steps, o->quiet || !root);
    double t0 = vt_now();
    float loss = 0;
    sa.loss = &loss;
    for (uint64_t s = start + 1; s <= rcp->steps; s++) {
        vt_err e = train_step(t, rcp, o, s, &sa, &loss, res);
        if (e) {
            vt_progress_end(&pr);
            return e;
        }
        char extra[48];
        snprintf(extra, sizeof extra, "loss %.4f", (double)loss);
        vt_progress_update(&pr, "step", s, extra);
        if (o->stop_after && s >= o->stop_after) {
            vt_progress_end(&pr);
            res->steps = s;
            res->final_loss = loss;
            res->seconds = vt_now() - t0;
            return VT_OK; /* interrupted on purpose: no commitment */
        }
    }
    vt_progress_end(&pr);
    res->seconds = vt_now() - t0;
    res->steps = rcp->steps;
    res->final_loss = loss;
    res->rounded = stats.rounded;
    res->exact = stats.exact;
    vt_err e = VT_OK;
    if (root && start == rcp->steps) { /* nothing left to train (the last step was stored, not committed) */
        uint64_t cnt;
        e = vt_store_step_count(t->st, &cnt);
        if (!e) e = store_figures(t, cnt, res);
    }
    if (root && !e) e = commit_run(t, o, res);
    VT_FORWARD_IF_ERROR(agree(t, e));
    if (t->size > 1 && t->m.shard) { /* the figures of the distributed sums: bytes summed over the ranks */
        int64_t bytes = (int64_t)t->m.shard->bytes_sent;
        VT_FORWARD_IF_ERROR(vt_dist_allreduce_i64(t->comm, &bytes, 1));
        res->dist_sums = t->m.shard->n_dist;
        res->dist_exact = t->m.shard->n_dist_exact;
        res->dist_bytes = (uint64_t)bytes;
    }
    return VT_OK;
}

/* recipe key `model` (docs/models.md): the client's ONNX file imported into r (its graph's canonical
 * form and the file's hash); on a fresh run without --init, its initializers written to a temporary
 * safetensors file *tmp that becomes the run's initial state through --init's path (vt_init.h) */
static vt_err model_prepare(vt_recipe *r, const vt_train_opts *o, char *tmp, size_t cap)
{
    vt_graph g;
    float **vals = NULL;
    VT_FORWARD_IF_ERROR(vt_recipe_import_graph(r, &g, &vals));
    vt_err e = VT_OK;
    vt_st_tensor *t = o->resume || o->init_path ? NULL : calloc(g.n_param + 1, sizeof *t);
    if (t) {
        for (uint32_t k = 0; k < g.n_param; k++) {
            t[k] = (vt_st_tensor){.name = g.param[k].name, .dtype = VT_ST_F32, .rank = g.param[k].rank, .data = vals[k]};
            for (uint32_t d = 0; d < g.param[k].rank; d++) t[k].shape[d] = g.param[k].shape[d];
        }
        const char *dir = getenv("TMPDIR");
        snprintf(tmp, cap, "%s/vt-model-init-XXXXXX", dir && *dir ? dir : "/tmp");
        int fd = mkstemp(tmp);
        if (fd < 0) e = vt_set_error(VT_ERR_IO, "model: cannot create a temporary file %s: %s", tmp, strerror(errno));
        else close(fd);
        if (!e) e = vt_safetensors_write(tmp, t, g.n_param, NULL, 0);
        if (e && fd >= 0) unlink(tmp);
        if (e) tmp[0] = 0;
    } else if (!o->resume && !o->init_path) e = vt_set_error(VT_ERR_NOMEM, "model: out of memory");
    free(t);
    vt_graph_values_free(vals, g.n_param);
    vt_graph_free(&g);
    return e;
}

/* --resume with a recipe that did not name program_version: the stored run's program (a run started
 * before the default became program 3 goes on as program 1). No readable store: the recipe's own
 * (open_run decides whether the directory is a run). */
static vt_err adopt_stored_program(vt_recipe *rp, const char *run_dir)
{
    vt_store *st = NULL;
    if (rp->program_set || vt_store_open(run_dir, 1, &st) != VT_OK) {
        vt_clear_error();
        return VT_OK;
    }
    char *mf = NULL;
    size_t ml = 0;
    uint8_t mh[32], dh[32];
    vt_recipe *old = malloc(sizeof *old);
    vt_err e = old ? vt_store_manifest(st, &mf, &ml, mh) : vt_set_error(VT_ERR_NOMEM, "out of memory");
    if (!e && vt_manifest_parse(mf, ml, old, dh) == VT_OK && old->arch == rp->arch) vt_recipe_adopt_program(rp, old);
    if (!e) vt_clear_error(); /* an unreadable manifest: open_run reports it */
    free(mf);
    free(old);
    vt_store_close(st);
    return e;
}

vt_err vt_train_run(const vt_recipe *rcp, const vt_train_opts *o, vt_train_result *res)
{
    train_ctx t;
    memset(&t, 0, sizeof t);
    memset(res, 0, sizeof *res);
    t.comm = o->comm;
    t.rank = o->comm ? vt_dist_rank(o->comm) : 0;
    t.size = o->comm ? vt_dist_size(o->comm) : 1;
    res->ranks = t.size;
    /* with the --init file's hash (vt_init.h) and the client's graph; every rank reads them (vt_ranks_agree
     * compares); a large recipe (the graph's canonical form), so on the heap */
    vt_recipe *rp = malloc(sizeof *rp);
    if (!rp) return vt_set_error(VT_ERR_NOMEM, "out of memory");
    *rp = *rcp;
    char model_init[4096] = "";
    vt_err e = o->resume ? adopt_stored_program(rp, o->run_dir) : VT_OK;
    if (!e && rp->model[0]) e = model_prepare(rp, o, model_init, sizeof model_init);
    if (!e) e = vt_init_prepare(rp, model_init[0] ? model_init : o->init_path, o->resume ? o->run_dir : NULL,
                                o->init_layout, &t.init);
    if (model_init[0]) unlink(model_init);
    if (t.size > 1) e = agree(&t, e);
    if (!e) e = train(&t, rp, o, res);
    res->err_common = t.size > 1 && e != VT_OK && t.common;
    ctx_free(&t);
    free(rp);
    return e;
}
