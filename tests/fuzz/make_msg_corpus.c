/* make_msg_corpus.c - `make_msg_corpus DIR` writes the seed corpus of the message
 * decoders (tests/corpus/msg): "ok-*" files are valid frames of every type signed by the
 * fixed key of fuzz_msg_body.h, "bad-*" files hostile frames (most of them correctly
 * signed, so that the body checks are what rejects them). Deterministic: Ed25519
 * signatures are, so rerunning it reproduces the committed files byte for byte. Every file
 * is checked with vt_fuzz_msg_one before it is written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_msg_body.h"

static const char *dir_;
static int failures_;

static void write_file(const char *name, const uint8_t *p, size_t n)
{
    int acc = 0;
    if (vt_fuzz_msg_one(p, n, &acc) != 0) {
        fprintf(stderr, "%s: violates the fuzz check\n", name);
        failures_++;
    }
    int want_ok = strncmp(name, "ok-", 3) == 0;
    if (want_ok != ((acc & 2) != 0)) {
        fprintf(stderr, "%s: expected %s\n", name, want_ok ? "accepted" : "rejected");
        failures_++;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir_, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write\n", path);
        exit(2);
    }
}

/* A frame around arbitrary body bytes, signed by kp. */
static void frame(vt_buf *out, int type, uint32_t seq, const uint8_t *body, size_t blen, const vt_keypair *kp)
{
    uint8_t hdr[VT_MSG_HEADER_LEN], sig[VT_MSG_SIG_LEN];
    memcpy(hdr, VT_MSG_MAGIC, 4);
    vt_put_u16le(hdr + 4, (uint16_t)VT_MSG_VERSION);
    vt_put_u16le(hdr + 6, (uint16_t)type);
    vt_put_u32le(hdr + 8, seq);
    vt_put_u32le(hdr + 12, (uint32_t)blen);
    out->len = 0;
    if (vt_buf_append(out, hdr, sizeof hdr) != VT_OK || vt_buf_append(out, body, blen) != VT_OK ||
        vt_sign_detached(kp, out->data, out->len, sig) != VT_OK || vt_buf_append(out, sig, sizeof sig) != VT_OK) {
        fprintf(stderr, "frame: %s\n", vt_errmsg());
        exit(2);
    }
}

static void enc_ok(const char *name, int type, const void *body, uint32_t seq)
{
    vt_buf b;
    vt_buf_init(&b);
    if (vt_msg_encode(type, body, seq, vt_fuzz_msg_key(), &b) != VT_OK) {
        fprintf(stderr, "%s: encode: %s\n", name, vt_errmsg());
        exit(2);
    }
    write_file(name, b.data, b.len);
    vt_buf_free(&b);
}

/* A signed frame whose body is given as bytes (hostile bodies the encoder refuses). */
static void raw_bad(const char *name, int type, const uint8_t *body, size_t blen)
{
    vt_buf b;
    vt_buf_init(&b);
    frame(&b, type, 1, body, blen, vt_fuzz_msg_key());
    write_file(name, b.data, b.len);
    vt_buf_free(&b);
}

static void fill(uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v + i);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    dir_ = argv[1];
    const vt_keypair *kp = vt_fuzz_msg_key();
    vt_buf b;
    vt_buf_init(&b);

    /* ---------------------------------------------------------------- valid */
    vt_msg_hello hello = {.role = VT_ROLE_AUDITOR};
    memcpy(hello.pk, kp->pk, 32);
    fill(hello.nonce, 32, 1);
    enc_ok("ok-hello", VT_MSG_HELLO, &hello, 0);

    static vt_msg_challenge ch;
    memcpy(ch.commitment, "VTCM\x01\0\0\0", 8);
    fill(ch.commitment + 8, VT_MSG_COMMITMENT_LEN - 8, 9);
    fill(ch.auditor_pk, 32, 40);
    fill(ch.arbiter_pk, 32, 140);
    ch.claimed_step = 1234;
    fill(ch.auditor_state_hash, 32, 77);
    fill(ch.nonce, 32, 200);
    static vt_service rec; /* a service record signed by the fuzz key (the codec carries it as opaque bytes) */
    fill(rec.manifest_hash, 32, 77);
    rec.serial = 1700000000000000ull;
    rec.expiry = 1700604800ull;
    rec.n_arbiters = 2;
    fill(rec.arbiter_pk[0], 32, 140);
    fill(rec.arbiter_pk[1], 32, 170);
    strcpy(rec.addr, "127.0.0.1:7000");
    {
        size_t n = 0;
        if (vt_service_sign(&rec, kp, ch.service, sizeof ch.service, &n) != VT_OK) {
            fprintf(stderr, "service: %s\n", vt_errmsg());
            return 2;
        }
        ch.service_len = (uint16_t)n;
    }
    static vt_msg_service sm;
    fill(sm.commitment_hash, 32, 50);
    fill(sm.auditor_nonce, 32, 200);
    fill(sm.trainer_nonce, 32, 230);
    memcpy(sm.record, ch.service, ch.service_len);
    sm.record_len = ch.service_len;
    enc_ok("ok-challenge", VT_MSG_CHALLENGE, &ch, 1);
    ch.service_len = 0;
    enc_ok("ok-challenge-no-service", VT_MSG_CHALLENGE, &ch, 2);
    fill(ch.service, VT_MSG_SERVICE_MAX, 0xc3);
    ch.service_len = VT_MSG_SERVICE_MAX;
    enc_ok("ok-challenge-service-max", VT_MSG_CHALLENGE, &ch, 3);

    static vt_msg_note note = {.kind = VT_NOTE_CONNECT, .party = VT_ROLE_TRAINER, .code = 1, .n = 3,
                               .v = {1, 2, 3, UINT64_MAX}, .text = "127.0.0.1:9: connection refused"};
    enc_ok("ok-note", VT_MSG_NOTE, &note, 30);
    note.kind = VT_NOTE_GAME;
    note.text[0] = 0;
    enc_ok("ok-note-game", VT_MSG_NOTE, &note, 31);
    note.kind = VT_NOTE_ARITH, note.party = 0, note.code = 4, note.n = 1; /* a tensor-core mode's weight */
    note.v[0] = 31441, note.v[1] = 97000, note.v[2] = 6350000, note.v[3] = 2097152;
    snprintf(note.text, sizeof note.text, "tc-fp16-sm80: a GEMM flop weighs 31.441 FP64 GEMM flop");
    enc_ok("ok-note-arith", VT_MSG_NOTE, &note, 35);

    vt_msg_q_step q = {.step = 42};
    enc_ok("ok-q-leaf", VT_MSG_Q_LEAF, &q, 4);
    enc_ok("ok-q-state", VT_MSG_Q_STATE, &q, 5);
    q.step = UINT64_MAX;
    enc_ok("ok-q-log", VT_MSG_Q_LOG, &q, 6);

    static vt_msg_leaf leaf;
    leaf.step = 5;
    leaf.has_state = 1;
    fill(leaf.state_hash, 32, 3);
    fill(leaf.log_hash, 32, 4);
    fill(leaf.leaf, 32, 5);
    leaf.tree_size = 11;
    leaf.n_path = 4;
    for (int i = 0; i < 4; i++) fill(leaf.path[i], 32, (uint8_t)(100 + i));
    enc_ok("ok-leaf", VT_MSG_LEAF, &leaf, 7);
    leaf.has_state = 0;
    leaf.n_path = 0;
    enc_ok("ok-leaf-nostate-nopath", VT_MSG_LEAF, &leaf, 8);
    leaf.has_state = 1;
    leaf.n_path = VT_MSG_PATH_MAX;
    for (unsigned i = 0; i < VT_MSG_PATH_MAX; i++) fill(leaf.path[i], 32, (uint8_t)i);
    enc_ok("ok-leaf-path-max", VT_MSG_LEAF, &leaf, 9);

    vt_msg_state_claim sc = {.step = 17};
    fill(sc.state_hash, 32, 8);
    enc_ok("ok-state-claim", VT_MSG_STATE_CLAIM, &sc, 10);

    vt_msg_q_chain qc = {.seg_from = 1, .seg_to = 9, .pos = 4};
    enc_ok("ok-q-chain", VT_MSG_Q_CHAIN, &qc, 11);
    vt_msg_chain_claim cc = {.seg_from = 1, .seg_to = 9, .pos = 4, .total_positions = 300};
    fill(cc.chain_hash, 32, 20);
    fill(cc.output_hash, 32, 30);
    enc_ok("ok-chain-claim", VT_MSG_CHAIN_CLAIM, &cc, 12);

    vt_msg_q_inputs qi = {.step = 3, .op = 12};
    enc_ok("ok-q-inputs", VT_MSG_Q_INPUTS, &qi, 13);
    float d0[6] = {1.0f, -2.5f, 0.0f, -0.0f, 3.4028235e38f, 1e-45f};
    float d1[2];
    memcpy(&d1[0], "\x01\x00\xc0\x7f", 4); /* a NaN with a payload: bits are carried exactly */
    memcpy(&d1[1], "\x00\x00\x80\x7f", 4); /* +inf */
    vt_msg_tensor ts[3] = {{.tensor_id = 1, .rows = 2, .cols = 3, .data = d0},
                           {.tensor_id = 2, .rows = 0, .cols = 7, .data = NULL},
                           {.tensor_id = 9, .rows = 1, .cols = 2, .data = d1}};
    vt_msg_inputs in = {.step = 3, .op = 12, .n_tensors = 3, .tensors = ts};
    enc_ok("ok-inputs", VT_MSG_INPUTS, &in, 14);
    vt_msg_inputs in0 = {.step = 3, .op = 12, .n_tensors = 0, .tensors = NULL};
    enc_ok("ok-inputs-empty", VT_MSG_INPUTS, &in0, 15);

    uint8_t logdata[40];
    fill(logdata, sizeof logdata, 0x30);
    vt_msg_log lg = {.step = 3, .len = sizeof logdata, .data = logdata};
    enc_ok("ok-log", VT_MSG_LOG, &lg, 16);
    vt_msg_log lg0 = {.step = 4, .len = 0, .data = NULL};
    enc_ok("ok-log-empty", VT_MSG_LOG, &lg0, 17);

    static vt_msg_verdict vd;
    fill(vd.commitment_hash, 32, 50);
    vd.step = 3;
    vd.op = 12;
    vd.loser = VT_LOSER_TRAINER;
    vd.reason_code = 4;
    fill(vd.arbiter_pk, 32, 140);
    fill(vd.auditor_pk, 32, 40);
    vd.claimed_step = 1234;
    fill(vd.claimed_state, 32, 77);
    fill(vd.auditor_nonce, 32, 200);
    fill(vd.trainer_nonce, 32, 230);
    vd.time = 1700000123ull;
    strcpy(vd.reason, "operation 12 of step 3: the trainer's output differs from the recomputation");
    enc_ok("ok-verdict", VT_MSG_VERDICT, &vd, 18);
    memset(vd.reason, 'r', VT_MSG_TEXT_MAX);
    vd.reason[VT_MSG_TEXT_MAX] = 0;
    vd.loser = VT_LOSER_NONE;
    enc_ok("ok-verdict-reason-max", VT_MSG_VERDICT, &vd, 19);

    vt_msg_error er = {.code = 7};
    strcpy(er.message, "step 99 is beyond the committed run");
    enc_ok("ok-error", VT_MSG_ERROR, &er, 20);
    er.message[0] = 0;
    enc_ok("ok-error-empty", VT_MSG_ERROR, &er, 21);

    /* the game engine's additions */
    vt_msg_q_step qm = {.step = 0};
    enc_ok("ok-q-manifest", VT_MSG_Q_MANIFEST, &qm, 22);
    static const char manifest[] = "{\"dataset\":\"digits\",\"layers\":[64,16,10]}";
    vt_msg_log mf = {.step = 0, .len = sizeof manifest - 1, .data = (uint8_t *)manifest};
    enc_ok("ok-manifest", VT_MSG_MANIFEST, &mf, 23);
    qm.step = 8;
    enc_ok("ok-q-tensors", VT_MSG_Q_TENSORS, &qm, 24);
    vt_msg_q_chain qp = {.seg_from = 8, .seg_to = 8, .pos = 3};
    enc_ok("ok-q-prefix", VT_MSG_Q_PREFIX, &qp, 25);
    static uint8_t hs[3][32];
    for (int i = 0; i < 3; i++) fill(hs[i], 32, (uint8_t)(60 + i));
    vt_msg_hashes hh = {.a = 8, .b = 8, .n = 3, .h = hs};
    enc_ok("ok-hashes", VT_MSG_HASHES, &hh, 26);
    hh.n = 0;
    hh.h = NULL;
    enc_ok("ok-hashes-empty", VT_MSG_HASHES, &hh, 27);
    vt_msg_q_inputs qh = {.step = 8, .op = 5};
    enc_ok("ok-q-hint", VT_MSG_Q_HINT, &qh, 28);
    vt_msg_hint hn = {.step = 8, .op = 5, .has = 1, .index = 1234};
    enc_ok("ok-hint", VT_MSG_HINT, &hn, 29);
    /* version 3: the trainer's current record, for one game */
    vt_msg_q_service qsv;
    fill(qsv.commitment_hash, 32, 50);
    fill(qsv.auditor_nonce, 32, 200);
    enc_ok("ok-q-service", VT_MSG_Q_SERVICE, &qsv, 32);
    enc_ok("ok-service", VT_MSG_SERVICE, &sm, 33);
    sm.record_len = 0;
    enc_ok("ok-service-no-record", VT_MSG_SERVICE, &sm, 34);

    /* ---------------------------------------------------------------- hostile frames */
    vt_msg_q_step qs = {.step = 1};
    if (vt_msg_encode(VT_MSG_Q_LEAF, &qs, 1, kp, &b) != VT_OK) return 2;
    uint8_t good[VT_MSG_OVERHEAD + 8];
    memcpy(good, b.data, sizeof good);
    uint8_t t[512];

    write_file("bad-empty", good, 0);
    write_file("bad-short-header", good, 10);
    write_file("bad-header-only", good, VT_MSG_HEADER_LEN);
    write_file("bad-truncated", good, sizeof good - 1);
    memcpy(t, good, sizeof good);
    t[sizeof good] = 0;
    write_file("bad-trailing-byte", t, sizeof good + 1);
    memcpy(t, good, sizeof good);
    t[0] = 'X';
    write_file("bad-magic", t, sizeof good);
    memcpy(t, good, sizeof good);
    t[4] = 1; /* version 1: before the service record */
    write_file("bad-version", t, sizeof good);
    t[4] = 2; /* version 2: before the verdict named its parties */
    write_file("bad-version-2", t, sizeof good);
    memcpy(t, good, sizeof good);
    t[6] = 0;
    write_file("bad-type-0", t, sizeof good);
    memcpy(t, good, sizeof good);
    t[6] = VT_MSG_TYPE_COUNT_;
    write_file("bad-type-unknown", t, sizeof good);
    memcpy(t, good, sizeof good);
    t[6] = 0xff;
    t[7] = 0xff;
    write_file("bad-type-65535", t, sizeof good);
    memcpy(t, good, sizeof good);
    t[sizeof good - 1] ^= 1;
    write_file("bad-sig-bit", t, sizeof good);
    memcpy(t, good, sizeof good);
    t[VT_MSG_HEADER_LEN] ^= 0x80;
    write_file("bad-body-bit", t, sizeof good);
    memcpy(t, good, sizeof good);
    t[8] ^= 1; /* seq */
    write_file("bad-seq-bit", t, sizeof good);
    {
        vt_keypair other;
        uint8_t seed[32];
        memset(seed, 0x33, sizeof seed);
        if (vt_sign_seed_keypair(&other, seed) != VT_OK) return 2;
        frame(&b, VT_MSG_Q_LEAF, 1, good + VT_MSG_HEADER_LEN, 8, &other);
        write_file("bad-other-key", b.data, b.len);
    }
    /* lengths: a header claiming a huge body, with nothing after it */
    memcpy(t, good, VT_MSG_HEADER_LEN);
    vt_put_u16le(t + 6, VT_MSG_INPUTS);
    vt_put_u32le(t + 12, 0xffffffffu);
    write_file("bad-inputs-len-4g", t, VT_MSG_HEADER_LEN);
    vt_put_u32le(t + 12, VT_MSG_INPUTS_MAX_BODY + 1);
    write_file("bad-inputs-len-over-max", t, VT_MSG_HEADER_LEN);
    vt_put_u16le(t + 6, VT_MSG_LOG);
    vt_put_u32le(t + 12, 12 + VT_MSG_LOG_MAX_DATA + 1);
    write_file("bad-log-len-over-max", t, VT_MSG_HEADER_LEN);
    vt_put_u16le(t + 6, VT_MSG_HELLO);
    vt_put_u32le(t + 12, 66);
    write_file("bad-hello-len-66", t, VT_MSG_HEADER_LEN);
    /* signed frames with hostile bodies */
    uint8_t body[4096];
    memset(body, 0, sizeof body);
    body[0] = 0; /* role 0 */
    raw_bad("bad-hello-role-0", VT_MSG_HELLO, body, 65);
    body[0] = 4;
    raw_bad("bad-hello-role-4", VT_MSG_HELLO, body, 65);
    body[0] = 1;
    raw_bad("bad-hello-short", VT_MSG_HELLO, body, 64);
    raw_bad("bad-q-leaf-long", VT_MSG_Q_LEAF, body, 9);

    /* strings (in an ERROR message; every text field shares the check) */
    {
        size_t off = 2;
        const struct {
            const char *name, *s;
            size_t n;
        } strs[] = {
            {"bad-text-ctrl-newline", "host\n:1", 7},
            {"bad-text-ctrl-nul", "ho\0st:1", 7},
            {"bad-text-del", "host\x7f:1", 7},
            {"bad-text-c1", "host\xc2\x85:1", 8},
            {"bad-text-overlong", "\xc0\xaf", 2},
            {"bad-text-overlong3", "\xe0\x80\xaf", 3},
            {"bad-text-surrogate", "\xed\xa0\x80", 3},
            {"bad-text-above-10ffff", "\xf4\x90\x80\x80", 4},
            {"bad-text-lone-cont", "\x80", 1},
            {"bad-text-truncated-utf8", "ab\xe2\x9c", 4},
            {"bad-text-bidi", "a\xe2\x80\xae" "b", 5},
        };
        for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
            memset(body, 0x11, off);
            vt_put_u16le(body + off, (uint16_t)strs[i].n);
            memcpy(body + off + 2, strs[i].s, strs[i].n);
            raw_bad(strs[i].name, VT_MSG_ERROR, body, off + 2 + strs[i].n);
        }
    }
    /* CHALLENGE service record lengths */
    {
        size_t off = VT_MSG_COMMITMENT_LEN + 32 + 32 + 8 + 32 + 32;
        memset(body, 0x11, off);
        vt_put_u16le(body + off, VT_MSG_SERVICE_MAX + 1);
        memset(body + off + 2, 'a', VT_MSG_SERVICE_MAX + 1);
        raw_bad("bad-challenge-service-over-max", VT_MSG_CHALLENGE, body, off + 2 + VT_MSG_SERVICE_MAX + 1); /* header rejects */
        vt_put_u16le(body + off, 10);
        raw_bad("bad-challenge-service-len-short", VT_MSG_CHALLENGE, body, off + 2 + 12);
        vt_put_u16le(body + off, 12);
        raw_bad("bad-challenge-service-len-long", VT_MSG_CHALLENGE, body, off + 2 + 10);
        vt_put_u16le(body + off, 600);
        raw_bad("bad-challenge-service-len-600", VT_MSG_CHALLENGE, body, off + 2 + 10);
    }
    /* SERVICE record lengths */
    {
        size_t off = 32 + 32 + 32;
        memset(body, 0x12, off + 2 + 20);
        vt_put_u16le(body + off, 10);
        raw_bad("bad-service-len-short", VT_MSG_SERVICE, body, off + 2 + 12);
        vt_put_u16le(body + off, 12);
        raw_bad("bad-service-len-long", VT_MSG_SERVICE, body, off + 2 + 10);
        vt_put_u16le(body + off, VT_MSG_SERVICE_MAX + 1);
        raw_bad("bad-service-len-over-max", VT_MSG_SERVICE, body, off + 2 + 10);
        raw_bad("bad-q-service-short", VT_MSG_Q_SERVICE, body, 63);
    }
    /* NOTE */
    {
        memset(body, 0, 44);
        body[0] = 0;
        raw_bad("bad-note-kind-0", VT_MSG_NOTE, body, 42);
        body[0] = 5;
        raw_bad("bad-note-kind-5", VT_MSG_NOTE, body, 42);
        body[0] = 1;
        vt_put_u16le(body + 40, 5);
        raw_bad("bad-note-text-len", VT_MSG_NOTE, body, 44);
    }
    /* LEAF */
    {
        memset(body, 0x22, 115 + 65 * 32);
        vt_put_u64le(body, 5);
        body[8] = 1;
        vt_put_u16le(body + 113, 65);
        raw_bad("bad-leaf-npath-65", VT_MSG_LEAF, body, 115 + 64 * 32);
        vt_put_u16le(body + 113, 3);
        raw_bad("bad-leaf-npath-mismatch", VT_MSG_LEAF, body, 115 + 2 * 32);
        vt_put_u16le(body + 113, 0);
        body[8] = 2;
        raw_bad("bad-leaf-has-state-2", VT_MSG_LEAF, body, 115);
        body[8] = 0; /* has_state 0 but the state hash is not the filler */
        raw_bad("bad-leaf-no-filler", VT_MSG_LEAF, body, 115);
    }
    /* INPUTS */
    {
        memset(body, 0, sizeof body);
        vt_put_u64le(body, 3);
        vt_put_u32le(body + 8, 12);
        vt_put_u16le(body + 12, 1);
        vt_put_u32le(body + 14, 1);
        vt_put_u32le(body + 18, 0xffffffffu);
        vt_put_u32le(body + 22, 0xffffffffu);
        raw_bad("bad-inputs-elems-overflow", VT_MSG_INPUTS, body, 26 + 16);
        vt_put_u32le(body + 18, 0x40000000u);
        vt_put_u32le(body + 22, 4);
        raw_bad("bad-inputs-elems-huge", VT_MSG_INPUTS, body, 26 + 16);
        vt_put_u32le(body + 18, 2);
        vt_put_u32le(body + 22, 3);
        raw_bad("bad-inputs-data-short", VT_MSG_INPUTS, body, 26 + 20);
        raw_bad("bad-inputs-data-long", VT_MSG_INPUTS, body, 26 + 28);
        vt_put_u16le(body + 12, 0xffff);
        raw_bad("bad-inputs-ntensors-65535", VT_MSG_INPUTS, body, 26 + 24);
        vt_put_u16le(body + 12, 2);
        raw_bad("bad-inputs-second-tensor-missing", VT_MSG_INPUTS, body, 26 + 24);
    }
    /* LOG */
    {
        memset(body, 0x44, 64);
        vt_put_u64le(body, 3);
        vt_put_u32le(body + 8, 40);
        raw_bad("bad-log-len-short", VT_MSG_LOG, body, 12 + 39);
        raw_bad("bad-log-len-long", VT_MSG_LOG, body, 12 + 41);
        vt_put_u32le(body + 8, 0xffffffffu);
        raw_bad("bad-log-len-4g", VT_MSG_LOG, body, 12 + 40);
    }
    /* VERDICT, ERROR */
    {
        memset(body, 0x55, 224 + 8); /* the fixed part is 222 bytes, then the reason's length at 222 */
        body[44] = 4; /* loser */
        vt_put_u16le(body + 222, 2);
        memcpy(body + 224, "ok", 2);
        raw_bad("bad-verdict-loser-4", VT_MSG_VERDICT, body, 226);
        body[44] = 1;
        memcpy(body + 224, "o\x1b", 2);
        raw_bad("bad-verdict-escape", VT_MSG_VERDICT, body, 226);
        memcpy(body + 224, "ok", 2);
        raw_bad("bad-verdict-short", VT_MSG_VERDICT, body, 223);
        vt_put_u16le(body, 7);
        vt_put_u16le(body + 2, 3);
        memcpy(body + 4, "a\0b", 3);
        raw_bad("bad-error-nul", VT_MSG_ERROR, body, 7);
        vt_put_u16le(body + 2, 1025);
        memset(body + 4, 'e', 1025);
        raw_bad("bad-error-len-1025", VT_MSG_ERROR, body, 4 + 1025);
        vt_put_u16le(body + 2, 0xffff);
        raw_bad("bad-error-len-65535", VT_MSG_ERROR, body, 4 + 10);
    }
    /* HASHES, HINT, MANIFEST */
    {
        memset(body, 0, 20 + 96);
        vt_put_u32le(body + 16, 4);
        raw_bad("bad-hashes-count-long", VT_MSG_HASHES, body, 20 + 96);
        vt_put_u32le(body + 16, 2);
        raw_bad("bad-hashes-count-short", VT_MSG_HASHES, body, 20 + 96);
        vt_put_u32le(body + 16, 0xffffffffu);
        raw_bad("bad-hashes-count-4g", VT_MSG_HASHES, body, 20 + 96);
        memset(body, 0, 21);
        body[12] = 2;
        raw_bad("bad-hint-has-2", VT_MSG_HINT, body, 21);
        memset(body, 0x20, 40);
        vt_put_u64le(body, 0);
        vt_put_u32le(body + 8, VT_MSG_MANIFEST_MAX + 1);
        raw_bad("bad-manifest-len-over-max", VT_MSG_MANIFEST, body, 40);
    }
    vt_buf_free(&b);
    if (failures_) {
        fprintf(stderr, "%d corpus files do not behave as named\n", failures_);
        return 1;
    }
    return 0;
}
