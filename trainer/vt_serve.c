/* vt_serve.c - the trainer's side of the dispute game: one thread per connection, every
 * answer signed (by the transport), computed from the run directory and, where values are
 * needed, by re-creating the committed computation from the nearest checkpoint. */
#include "vt_serve.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../arbiter/vt_dispute.h"
#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../protocol/vt_proto.h"
#include "../store/vt_store.h"
#include "vt_train.h"

typedef struct {
    const vt_serve_opts *o;
    vt_keypair kp;
    vt_recipe rc;
    vt_dataset ds;
    vt_merkle tree;
    char *manifest;
    size_t manifest_len;
    uint8_t commitment[VT_MSG_COMMITMENT_LEN]; /* the commitment file this server stands behind */
    pthread_mutex_t mu;
    int active;
    int dropped;
} server;

typedef struct {
    server *sv;
    vt_conn *c;
    vt_store *st;
    vt_seg_chain chain; /* cached chain of the last segment asked */
    int have_chain;
} session;

static vt_err new_model(session *ss, vt_model *m)
{
    VT_FORWARD_IF_ERROR(vt_model_init(m, &ss->sv->rc, ss->sv->ds.n, ss->sv->o->order));
    m->cheat = ss->sv->o->cheat;
    return VT_OK;
}

static vt_err get_chain(session *ss, uint64_t lo, uint64_t hi)
{
    if (ss->have_chain && ss->chain.lo == lo && ss->chain.hi == hi) return VT_OK;
    if (ss->have_chain) vt_seg_chain_free(&ss->chain);
    ss->have_chain = 0;
    VT_RETURN_ERROR_IF(lo >= hi || hi > ss->sv->rc.steps, VT_ERR_ARG, "no segment (%llu, %llu]",
                       (unsigned long long)lo, (unsigned long long)hi);
    vt_model m;
    VT_FORWARD_IF_ERROR(new_model(ss, &m));
    vt_err e = vt_restore(&m, ss->st, &ss->sv->ds, VT_PARTY_TRAINER, lo);
    if (!e) e = vt_seg_chain_compute(&m, ss->st, &ss->sv->ds, VT_PARTY_TRAINER, hi, &ss->chain);
    vt_model_free(&m);
    if (!e) ss->have_chain = 1;
    return e;
}

static vt_err send_error(session *ss, const char *what)
{
    vt_msg_error er;
    memset(&er, 0, sizeof er);
    er.code = 1;
    snprintf(er.message, sizeof er.message, "%s", what);
    for (char *p = er.message; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
    return vt_send_msg(ss->c, VT_MSG_ERROR, &er, &ss->sv->kp);
}

static vt_err answer(session *ss, const vt_msg *q)
{
    server *sv = ss->sv;
    const vt_serve_opts *o = sv->o;
    int type = q->hdr.type;
    switch (type) {
    case VT_MSG_Q_MANIFEST: {
        vt_msg_log a = {0, (uint32_t)sv->manifest_len, (uint8_t *)sv->manifest};
        return vt_send_msg(ss->c, VT_MSG_MANIFEST, &a, &sv->kp);
    }
    case VT_MSG_Q_COMMITMENT: {
        vt_msg_log a = {0, VT_MSG_COMMITMENT_LEN, sv->commitment};
        return vt_send_msg(ss->c, VT_MSG_COMMITMENT, &a, &sv->kp);
    }
    case VT_MSG_Q_LEAF: {
        uint64_t s = q->body.q_leaf.step;
        vt_step_rec r;
        if (s >= vt_merkle_size(&sv->tree) || vt_store_get_step(ss->st, s, &r)) return send_error(ss, "no such step");
        vt_msg_leaf a;
        memset(&a, 0, sizeof a);
        a.step = s;
        a.has_state = (uint8_t)r.has_state;
        memcpy(a.state_hash, r.state_hash, 32);
        memcpy(a.log_hash, r.log_hash, 32);
        memcpy(a.leaf, r.leaf, 32);
        a.tree_size = vt_merkle_size(&sv->tree);
        size_t n = 0;
        VT_FORWARD_IF_ERROR(vt_merkle_prove(&sv->tree, s, a.path, VT_MSG_PATH_MAX, &n));
        a.n_path = (uint16_t)n;
        if (o->misbehave == VT_SERVE_BAD_PROOF && n) a.path[0][0] ^= 1;
        return vt_send_msg(ss->c, VT_MSG_LEAF, &a, &sv->kp);
    }
    case VT_MSG_Q_LOG: {
        uint8_t *blob = NULL;
        size_t n = 0;
        if (vt_store_get_log(ss->st, q->body.q_log.step, &blob, &n)) return send_error(ss, "no such step");
        vt_msg_log a = {q->body.q_log.step, (uint32_t)n, blob};
        vt_err e = vt_send_msg(ss->c, VT_MSG_LOG, &a, &sv->kp);
        free(blob);
        return e;
    }
    case VT_MSG_Q_CHAIN:
    case VT_MSG_Q_PREFIX: {
        const vt_msg_q_chain *qc = &q->body.q_chain;
        if (get_chain(ss, qc->seg_from, qc->seg_to)) return send_error(ss, vt_errmsg());
        uint64_t total = ss->chain.P + 1;
        if (qc->pos > total || (type == VT_MSG_Q_CHAIN && qc->pos < 1)) return send_error(ss, "no such position");
        if (type == VT_MSG_Q_PREFIX) {
            vt_msg_hashes a = {qc->seg_from, qc->seg_to, (uint32_t)qc->pos, ss->chain.h + 1};
            return vt_send_msg(ss->c, VT_MSG_HASHES, &a, &sv->kp);
        }
        vt_msg_chain_claim a;
        a.seg_from = qc->seg_from, a.seg_to = qc->seg_to, a.pos = qc->pos, a.total_positions = total;
        memcpy(a.chain_hash, ss->chain.C[qc->pos], 32);
        memcpy(a.output_hash, ss->chain.h[qc->pos], 32);
        if (o->misbehave == VT_SERVE_INCONSISTENT) a.chain_hash[0] ^= 1;
        return vt_send_msg(ss->c, VT_MSG_CHAIN_CLAIM, &a, &sv->kp);
    }
    case VT_MSG_Q_TENSORS: {
        uint64_t s = q->body.q_step.step;
        if (s > sv->rc.steps) return send_error(ss, "no such step");
        vt_model m;
        VT_FORWARD_IF_ERROR(new_model(ss, &m));
        uint8_t th[VT_MAX_TENSORS][32];
        vt_err e = vt_restore(&m, ss->st, &sv->ds, VT_PARTY_TRAINER, s);
        if (!e) e = vt_model_tensor_hashes(&m, th);
        vt_msg_hashes a = {s, s, m.n_tensors, th};
        vt_model_free(&m);
        if (e) return send_error(ss, vt_errmsg());
        return vt_send_msg(ss->c, VT_MSG_HASHES, &a, &sv->kp);
    }
    case VT_MSG_Q_INPUTS: {
        uint64_t s = q->body.q_inputs.step;
        uint32_t j = q->body.q_inputs.op;
        vt_model m;
        VT_FORWARD_IF_ERROR(new_model(ss, &m));
        vt_err e = (s < 1 || s > sv->rc.steps || j < 1 || j > m.n_ops) ? vt_set_error(VT_ERR_ARG, "no such operation")
                                                                       : VT_OK;
        if (!e) e = vt_restore(&m, ss->st, &sv->ds, VT_PARTY_TRAINER, s - 1);
        if (!e) e = vt_run_to_op(&m, ss->st, &sv->ds, VT_PARTY_TRAINER, j, 0, NULL);
        vt_msg_tensor t[VT_MAX_OP_INPUTS + 1];
        float *lab = NULL;
        uint16_t nt = 0;
        const vt_op *op = e ? NULL : &m.ops[j];
        int batch_sent = 0;
        for (uint32_t k = 0; op && k < op->n_in; k++) {
            size_t n = 0;
            uint8_t *labels = NULL;
            uint32_t slot = op->in[k];
            float *p = vt_model_slot(&m, slot, &n, &labels);
            if ((slot >> 8) == VT_SLOT_Y || (slot >> 8) == VT_SLOT_X) {
                /* the batch goes whole: inputs and labels (exact small integers), as loaded */
                if (batch_sent++) continue;
                vt_model_slot(&m, VT_SLOT(VT_SLOT_Y, 0), &n, &labels);
                lab = malloc(n * sizeof(float));
                if (!lab) break;
                for (size_t i = 0; i < n; i++) lab[i] = (float)labels[i];
                t[nt++] = (vt_msg_tensor){VT_SLOT(VT_SLOT_Y, 0), 1, (uint32_t)n, lab};
                size_t nx = 0;
                float *x = vt_model_slot(&m, VT_SLOT(VT_SLOT_X, 0), &nx, NULL);
                t[nt++] = (vt_msg_tensor){VT_SLOT(VT_SLOT_X, 0), 1, (uint32_t)nx, x};
            } else {
                t[nt++] = (vt_msg_tensor){slot, 1, (uint32_t)n, p};
            }
        }
        vt_msg_inputs a = {s, j, nt, t};
        vt_err se = e ? send_error(ss, vt_errmsg()) : vt_send_msg(ss->c, VT_MSG_INPUTS, &a, &sv->kp);
        free(lab);
        vt_model_free(&m);
        return se;
    }
    default: return send_error(ss, "unexpected message");
    }
}

static void *session_main(void *p)
{
    session *ss = p;
    server *sv = ss->sv;
    if (vt_store_open(sv->o->run_dir, 1, &ss->st) == VT_OK) {
        vt_msg_limits lim;
        memset(&lim, 0, sizeof lim);
        for (int t = 1; t < VT_MSG_TYPE_COUNT_; t++) lim.max_body[t] = 64; /* only small questions come in */
        for (int answered = 0;; answered++) {
            if (sv->o->misbehave == VT_SERVE_DROP_ONCE && answered == 6) {
                pthread_mutex_lock(&sv->mu);
                int drop = !sv->dropped;
                sv->dropped = 1;
                pthread_mutex_unlock(&sv->mu);
                if (drop) break; /* as if the network dropped the connection */
            }
            vt_msg q;
            if (vt_recv_msg(ss->c, VT_MSG_ANY, sv->o->idle_ms, &lim, &q)) break;
            vt_err e = sv->o->misbehave == VT_SERVE_SILENT ? VT_OK : answer(ss, &q);
            vt_msg_free(&q);
            if (e) break;
        }
        vt_store_close(ss->st);
    }
    if (ss->have_chain) vt_seg_chain_free(&ss->chain);
    vt_conn_close(ss->c);
    pthread_mutex_lock(&sv->mu);
    sv->active--;
    pthread_mutex_unlock(&sv->mu);
    free(ss);
    return NULL;
}

vt_err vt_serve_run(const vt_serve_opts *o)
{
    server sv;
    memset(&sv, 0, sizeof sv);
    sv.o = o;
    pthread_mutex_init(&sv.mu, NULL);
    vt_merkle_init(&sv.tree);
    vt_store *st = NULL;
    vt_listener *l = NULL;
    uint8_t mh[32], dh[32];
    char spec[96];
    vt_err e = vt_sign_init();
    if (!e) e = vt_sign_read_secret_key(o->key_path, &sv.kp);
    if (!e) e = vt_store_open(o->run_dir, 1, &st);
    if (!e) e = vt_store_manifest(st, &sv.manifest, &sv.manifest_len, mh);
    if (!e) {
        char cpath[4096];
        vt_store_commitment_path(o->run_dir, cpath, sizeof cpath);
        FILE *cf = fopen(cpath, "rb");
        size_t got = cf ? fread(sv.commitment, 1, sizeof sv.commitment, cf) : 0;
        if (cf) fclose(cf);
        if (got != sizeof sv.commitment) e = vt_set_error(VT_ERR_IO, "cannot read the commitment %s", cpath);
    }
    if (!e) e = vt_manifest_parse(sv.manifest, sv.manifest_len, &sv.rc, dh);
    if (!e) {
        vt_recipe_dataset_spec(&sv.rc, spec, sizeof spec);
        e = vt_data_load(spec, o->data_root, &sv.ds);
    }
    uint64_t count = 0;
    if (!e) e = vt_store_step_count(st, &count);
    for (uint64_t s = 0; !e && s < count; s++) {
        vt_step_rec r;
        e = vt_store_get_step(st, s, &r);
        if (!e) e = vt_merkle_append(&sv.tree, r.leaf);
    }
    vt_store_close(st);
    uint16_t port = 0;
    if (!e) e = vt_listen(o->listen, &l, &port);
    if (!e && o->port_file) { /* atomically: a reader polling for the file never sees half of it */
        char num[16];
        int k = snprintf(num, sizeof num, "%u\n", (unsigned)port);
        e = vt_write_file_atomic(o->port_file, num, (size_t)k);
    }
    if (!e && !o->quiet) fprintf(stderr, "trainer: serving %s on port %u\n", o->run_dir, port);
    int handled = 0, maxc = o->max_clients > 0 ? o->max_clients : 8;
    while (!e && (o->max_connections <= 0 || handled < o->max_connections)) {
        vt_conn *c = NULL;
        if (vt_accept(l, &sv.kp, NULL, 10000, &c, NULL) != VT_OK) continue; /* a failed handshake drops that client only */
        handled++;
        pthread_mutex_lock(&sv.mu);
        int busy = sv.active >= maxc;
        if (!busy) sv.active++;
        pthread_mutex_unlock(&sv.mu);
        session *ss = busy ? NULL : calloc(1, sizeof *ss);
        pthread_t th;
        if (ss) {
            ss->sv = &sv;
            ss->c = c;
            vt_conn_set_send_timeout(c, o->idle_ms > 0 ? o->idle_ms : 60000);
            if (pthread_create(&th, NULL, session_main, ss) == 0) {
                pthread_detach(th);
                continue;
            }
            free(ss);
            pthread_mutex_lock(&sv.mu);
            sv.active--;
            pthread_mutex_unlock(&sv.mu);
        }
        session tmp = {&sv, c, NULL, {0}, 0};
        if (send_error(&tmp, "busy")) { /* nothing more to do for this client */ }
        vt_conn_close(c);
    }
    /* wait for the sessions still running */
    for (int i = 0; i < 6000; i++) {
        pthread_mutex_lock(&sv.mu);
        int a = sv.active;
        pthread_mutex_unlock(&sv.mu);
        if (!a) break;
        usleep(10000);
    }
    vt_listener_close(l);
    vt_merkle_free(&sv.tree);
    vt_data_free(&sv.ds);
    free(sv.manifest);
    vt_keypair_wipe(&sv.kp);
    pthread_mutex_destroy(&sv.mu);
    return e;
}
