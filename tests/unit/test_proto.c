/* test_proto.c - protocol/ : message codecs (round trips, truncations, bit flips, size
 * limits, strings), the TLS transport over loopback (pinning, deadlines, malformed
 * messages, a server that outlives bad clients) and transcripts (hostile files). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "protocol/vt_proto.h"
#include "vt_test.h"

static vt_keypair k_trainer, k_auditor, k_stranger;
static char tmpdir[64];

static void make_key(vt_keypair *kp, uint8_t v)
{
    uint8_t seed[32];
    memset(seed, v, sizeof seed);
    CHECK_OK(vt_sign_seed_keypair(kp, seed));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Timing in the loopback tests. Nothing may depend on how the threads happen to be scheduled:
 * on a loaded machine, or under a sanitizer, a runnable thread can wait seconds for a CPU.
 *  - The order of events between the two sides comes from explicit handshakes (sig_*), never
 *    from a sleep.
 *  - Waits that are expected to succeed, or to fail for another reason than their deadline,
 *    get a deadline nobody reaches: OK_MS.
 *  - Upper bounds on elapsed time (HANG_S) are generous: they only catch a deadline that is not
 *    enforced, or a wait that should end promptly (a closed peer, a refused connection, an
 *    over-limit header) but runs to its own deadline instead. OK_MS is longer than HANG_S, so a
 *    wait that runs to an OK_MS deadline fails the bound.
 *  - Lower bounds are exact: the transport promises that a deadline never expires early.
 * OK_MS and HANG_S are hang guards: both scale with VT_TEST_TIMEOUT_SCALE (vt_test_timeout_scale),
 * so that OK_MS stays the longer. */
#define OK_MS ((int)(60000 * vt_test_timeout_scale()))
#define HANG_S (30.0 * vt_test_timeout_scale())

/* One-way signals between the test's threads, over a pipe. */
static void sig_init(int p[2]) { CHECK(pipe(p) == 0, "pipe: %s", strerror(errno)); }

static void sig_post(int p[2])
{
    char b = 1;
    if (write(p[1], &b, 1) != 1) fprintf(stderr, "sig_post: %s\n", strerror(errno));
}

/* Waits for one sig_post, at most ms; returns 1 when it came. Bounded, so that a broken peer
 * makes the checks that follow fail instead of hanging the test. */
static int sig_wait(int p[2], int ms)
{
    struct pollfd pf = {.fd = p[0], .events = POLLIN, .revents = 0};
    int r;
    while ((r = poll(&pf, 1, ms)) < 0 && errno == EINTR) {
    }
    char b;
    return r > 0 && read(p[0], &b, 1) == 1;
}

static void sig_close(int p[2])
{
    close(p[0]);
    close(p[1]);
}

static void fill(uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v + 3 * i);
}

/* ------------------------------------------------------------------ sample bodies */

static float s_d0[6], s_d1[3];
static vt_msg_tensor s_ts[3];
static uint8_t s_log[50];
static uint8_t s_hashes[4][32];

/* A sample body of each type; n_path and the sizes are small unless big != 0. */
static void sample(int type, vt_msg_body *b, int big)
{
    memset(b, 0, sizeof *b);
    switch (type) {
    case VT_MSG_HELLO:
        b->hello.role = VT_ROLE_TRAINER;
        memcpy(b->hello.pk, k_trainer.pk, 32);
        fill(b->hello.nonce, 32, 7);
        break;
    case VT_MSG_CHALLENGE:
        fill(b->challenge.commitment, VT_MSG_COMMITMENT_LEN, 1);
        memcpy(b->challenge.auditor_pk, k_auditor.pk, 32);
        fill(b->challenge.arbiter_pk, 32, 15);
        b->challenge.claimed_step = 0x0102030405060708ull;
        fill(b->challenge.auditor_state_hash, 32, 9);
        fill(b->challenge.nonce, 32, 16);
        b->challenge.service_len = 20;
        fill(b->challenge.service, 20, 3);
        break;
    case VT_MSG_Q_LEAF:
        b->q_leaf.step = 77;
        break;
    case VT_MSG_LEAF:
        b->leaf.step = 6;
        b->leaf.has_state = 1;
        fill(b->leaf.state_hash, 32, 2);
        fill(b->leaf.log_hash, 32, 3);
        fill(b->leaf.leaf, 32, 4);
        b->leaf.tree_size = 13;
        b->leaf.n_path = big ? VT_MSG_PATH_MAX : 3;
        for (unsigned i = 0; i < b->leaf.n_path; i++) fill(b->leaf.path[i], 32, (uint8_t)(50 + i));
        break;
    case VT_MSG_Q_STATE:
        b->q_state.step = UINT64_MAX;
        break;
    case VT_MSG_STATE_CLAIM:
        b->state_claim.step = 8;
        fill(b->state_claim.state_hash, 32, 11);
        break;
    case VT_MSG_Q_CHAIN:
        b->q_chain.seg_from = 2;
        b->q_chain.seg_to = 10;
        b->q_chain.pos = 6;
        break;
    case VT_MSG_CHAIN_CLAIM:
        b->chain_claim.seg_from = 2;
        b->chain_claim.seg_to = 10;
        b->chain_claim.pos = 6;
        fill(b->chain_claim.chain_hash, 32, 12);
        fill(b->chain_claim.output_hash, 32, 13);
        b->chain_claim.total_positions = 1000;
        break;
    case VT_MSG_Q_INPUTS:
        b->q_inputs.step = 5;
        b->q_inputs.op = 3;
        break;
    case VT_MSG_INPUTS:
        for (int i = 0; i < 6; i++) s_d0[i] = (float)i * -1.25f;
        memcpy(&s_d1[0], "\x01\x00\xc0\x7f", 4); /* NaN with payload */
        s_d1[1] = 1e-45f;
        s_d1[2] = -0.0f;
        s_ts[0] = (vt_msg_tensor){.tensor_id = 4, .rows = 2, .cols = 3, .data = s_d0};
        s_ts[1] = (vt_msg_tensor){.tensor_id = 5, .rows = 3, .cols = 0, .data = NULL};
        s_ts[2] = (vt_msg_tensor){.tensor_id = 6, .rows = 3, .cols = 1, .data = s_d1};
        b->inputs.step = 5;
        b->inputs.op = 3;
        b->inputs.n_tensors = 3;
        b->inputs.tensors = s_ts;
        break;
    case VT_MSG_Q_LOG:
        b->q_log.step = 0;
        break;
    case VT_MSG_LOG:
        fill(s_log, sizeof s_log, 0x28);
        b->log.step = 5;
        b->log.len = sizeof s_log;
        b->log.data = s_log;
        break;
    case VT_MSG_VERDICT:
        fill(b->verdict.commitment_hash, 32, 14);
        b->verdict.step = 5;
        b->verdict.op = 3;
        b->verdict.loser = VT_LOSER_AUDITOR;
        b->verdict.reason_code = 9;
        fill(b->verdict.arbiter_pk, 32, 15);
        memcpy(b->verdict.auditor_pk, k_auditor.pk, 32);
        b->verdict.claimed_step = 0x0102030405060708ull;
        fill(b->verdict.claimed_state, 32, 9);
        fill(b->verdict.auditor_nonce, 32, 16);
        fill(b->verdict.trainer_nonce, 32, 17);
        b->verdict.time = 1700000000ull;
        strcpy(b->verdict.reason, "auditor challenged an honest step (\xc3\xa9tape 5)");
        break;
    case VT_MSG_ERROR:
        b->error.code = 500;
        strcpy(b->error.message, "internal: try again later");
        break;
    /* the game engine's additions */
    case VT_MSG_Q_MANIFEST:
    case VT_MSG_Q_COMMITMENT:
        b->q_step.step = 0;
        break;
    case VT_MSG_NOTE:
        b->note.kind = VT_NOTE_CONNECT;
        b->note.party = VT_ROLE_TRAINER;
        b->note.code = 1;
        b->note.n = 2;
        b->note.v[0] = 5, b->note.v[3] = UINT64_MAX;
        strcpy(b->note.text, "127.0.0.1:1: connection refused");
        break;
    case VT_MSG_COMMITMENT:
        fill(s_log, sizeof s_log, 0x31);
        b->log.step = 0;
        b->log.len = sizeof s_log;
        b->log.data = s_log;
        break;
    case VT_MSG_MANIFEST:
        b->log.step = 0;
        b->log.len = 17;
        b->log.data = (uint8_t *)"{\"layers\":[4,2]}";
        break;
    case VT_MSG_Q_TENSORS:
        b->q_step.step = 12;
        break;
    case VT_MSG_Q_PREFIX:
        b->q_chain.seg_from = 3;
        b->q_chain.seg_to = 4;
        b->q_chain.pos = 2;
        break;
    case VT_MSG_HASHES:
        for (int i = 0; i < 4; i++) fill(s_hashes[i], 32, (uint8_t)(90 + i));
        b->hashes.a = 3;
        b->hashes.b = 4;
        b->hashes.n = big ? 4 : 2;
        b->hashes.h = s_hashes;
        break;
    case VT_MSG_Q_HINT:
    case VT_MSG_Q_OUTPUT:
        b->q_inputs.step = 12;
        b->q_inputs.op = 7;
        break;
    case VT_MSG_HINT:
        b->hint.step = 12;
        b->hint.op = 7;
        b->hint.has = 1;
        b->hint.index = 0x0102030405ull;
        break;
    case VT_MSG_Q_SERVICE:
        fill(b->q_service.commitment_hash, 32, 14);
        fill(b->q_service.auditor_nonce, 32, 16);
        break;
    case VT_MSG_SERVICE:
        fill(b->service.commitment_hash, 32, 14);
        fill(b->service.auditor_nonce, 32, 16);
        fill(b->service.trainer_nonce, 32, 17);
        b->service.record_len = big ? VT_MSG_SERVICE_MAX : 30;
        fill(b->service.record, b->service.record_len, 18);
        break;
    }
}

static int bytes_of(int type, const void *body, vt_buf *out)
{
    out->len = 0;
    return vt_msg_body_encode(type, body, out) == VT_OK;
}

/* ------------------------------------------------------------------ codec tests */

static void test_roundtrip(void)
{
    vt_buf a, b, f;
    vt_buf_init(&a);
    vt_buf_init(&b);
    vt_buf_init(&f);
    for (int big = 0; big < 2; big++) {
        for (int t = 1; t < VT_MSG_TYPE_COUNT_; t++) {
            vt_msg_body body;
            sample(t, &body, big);
            f.len = 0;
            CHECK_OK(vt_msg_encode(t, &body, (uint32_t)(100 + t), &k_trainer, &f));
            vt_msg m;
            vt_err e = vt_msg_decode(f.data, f.len, k_trainer.pk, NULL, &m);
            CHECK(e == VT_OK, "%s: decode failed: %s", vt_msg_type_name(t), vt_errmsg());
            if (e != VT_OK) continue;
            CHECK(m.hdr.type == t && m.hdr.seq == (uint32_t)(100 + t) && m.hdr.version == VT_MSG_VERSION && m.sig_verified == 1,
                  "%s: header fields", vt_msg_type_name(t));
            CHECK(m.hdr.body_len + VT_MSG_OVERHEAD == f.len, "%s: body_len", vt_msg_type_name(t));
            CHECK(bytes_of(t, &body, &a) && bytes_of(t, &m.body, &b) && a.len == b.len &&
                      memcmp(a.data, b.data, a.len) == 0,
                  "%s: decoded body differs", vt_msg_type_name(t));
            CHECK(memcmp(f.data + VT_MSG_HEADER_LEN, a.data, a.len) == 0, "%s: body bytes", vt_msg_type_name(t));
            /* decoding does not point into the input */
            CHECK(m.raw == NULL, "raw is NULL after vt_msg_decode");
            /* without a key: same body, not verified */
            vt_msg m2;
            CHECK_OK(vt_msg_decode(f.data, f.len, NULL, NULL, &m2));
            CHECK(m2.sig_verified == 0, "unverified decode");
            /* another author's key: bad signature */
            vt_msg m3;
            CHECK(vt_msg_decode(f.data, f.len, k_auditor.pk, NULL, &m3) == VT_ERR_CRYPTO, "%s: wrong key accepted",
                  vt_msg_type_name(t));
            /* Ed25519 is deterministic: re-encoding reproduces the frame */
            a.len = 0;
            CHECK_OK(vt_msg_encode(t, &m.body, m.hdr.seq, &k_trainer, &a));
            CHECK(a.len == f.len && memcmp(a.data, f.data, f.len) == 0, "%s: frame not reproduced",
                  vt_msg_type_name(t));
            vt_msg_free(&m);
            vt_msg_free(&m2);
            vt_msg_free(&m3);
        }
    }
    /* spot checks of decoded values */
    {
        vt_msg_body body;
        sample(VT_MSG_INPUTS, &body, 0);
        f.len = 0;
        CHECK_OK(vt_msg_encode(VT_MSG_INPUTS, &body, 1, &k_trainer, &f));
        vt_msg m;
        CHECK_OK(vt_msg_decode(f.data, f.len, k_trainer.pk, NULL, &m));
        CHECK(m.body.inputs.n_tensors == 3 && m.body.inputs.tensors[0].rows == 2 &&
                  m.body.inputs.tensors[0].cols == 3 && m.body.inputs.tensors[1].data == NULL &&
                  m.body.inputs.tensors[2].tensor_id == 6,
              "INPUTS fields");
        CHECK(m.body.inputs.n_tensors == 3 && memcmp(m.body.inputs.tensors[2].data, s_d1, sizeof s_d1) == 0,
              "INPUTS float bits (NaN payload, subnormal, -0) carried exactly");
        vt_msg_free(&m);
        sample(VT_MSG_LEAF, &body, 0);
        body.leaf.has_state = 0;
        memset(body.leaf.state_hash, 0x12, 32); /* ignored: the filler goes on the wire */
        f.len = 0;
        CHECK_OK(vt_msg_encode(VT_MSG_LEAF, &body, 1, &k_trainer, &f));
        CHECK_OK(vt_msg_decode(f.data, f.len, k_trainer.pk, NULL, &m));
        int filler = 1;
        for (int i = 0; i < 32; i++) filler &= m.body.leaf.state_hash[i] == 0xff;
        CHECK(m.body.leaf.has_state == 0 && filler, "LEAF without state carries the 0xFF filler");
        vt_msg_free(&m);
        sample(VT_MSG_VERDICT, &body, 0);
        f.len = 0;
        CHECK_OK(vt_msg_encode(VT_MSG_VERDICT, &body, 1, &k_trainer, &f));
        CHECK_OK(vt_msg_decode(f.data, f.len, k_trainer.pk, NULL, &m));
        CHECK(strcmp(m.body.verdict.reason, body.verdict.reason) == 0 && m.body.verdict.loser == VT_LOSER_AUDITOR,
              "VERDICT fields");
        vt_msg_free(&m);
    }
    vt_buf_free(&a);
    vt_buf_free(&b);
    vt_buf_free(&f);
}

/* Every truncation and every single-bit flip of a signed frame is rejected. */
static void test_truncations_and_flips(void)
{
    vt_buf f;
    vt_buf_init(&f);
    long flips = 0, bad_codes = 0, accepted = 0;
    for (int t = 1; t < VT_MSG_TYPE_COUNT_; t++) {
        vt_msg_body body;
        sample(t, &body, 0);
        f.len = 0;
        CHECK_OK(vt_msg_encode(t, &body, 3, &k_trainer, &f));
        uint8_t *p = malloc(f.len + 1);
        if (!p) return;
        for (size_t n = 0; n < f.len; n++) {
            memcpy(p, f.data, n);
            vt_msg m;
            vt_err e = vt_msg_decode(p, n, k_trainer.pk, NULL, &m);
            if (e == VT_OK) accepted++;
            if (e != VT_ERR_FORMAT && e != VT_ERR_LIMIT) bad_codes++;
            vt_msg_free(&m);
        }
        /* one extra byte */
        memcpy(p, f.data, f.len);
        p[f.len] = 0;
        vt_msg mx;
        CHECK(vt_msg_decode(p, f.len + 1, k_trainer.pk, NULL, &mx) == VT_ERR_FORMAT, "%s: trailing byte accepted",
              vt_msg_type_name(t));
        for (size_t i = 0; i < f.len * 8; i++) {
            memcpy(p, f.data, f.len);
            p[i / 8] ^= (uint8_t)(1u << (i % 8));
            vt_msg m;
            vt_err e = vt_msg_decode(p, f.len, k_trainer.pk, NULL, &m);
            flips++;
            if (e == VT_OK) {
                accepted++;
                fprintf(stderr, "%s: flip of bit %zu accepted\n", vt_msg_type_name(t), i);
            }
            if (e != VT_ERR_FORMAT && e != VT_ERR_LIMIT && e != VT_ERR_CRYPTO) bad_codes++;
            vt_msg_free(&m);
        }
        free(p);
    }
    CHECK(accepted == 0, "%ld truncated or flipped frames accepted", accepted);
    CHECK(bad_codes == 0, "%ld rejections with an unexpected code", bad_codes);
    CHECK(flips > 10000, "flipped %ld bits", flips);
    vt_buf_free(&f);
}

static void put_header(uint8_t *h, int type, uint32_t seq, uint32_t blen)
{
    memcpy(h, VT_MSG_MAGIC, 4);
    vt_put_u16le(h + 4, (uint16_t)VT_MSG_VERSION);
    vt_put_u16le(h + 6, (uint16_t)type);
    vt_put_u32le(h + 8, seq);
    vt_put_u32le(h + 12, blen);
}

/* A frame around arbitrary body bytes, signed by kp. */
static void sign_frame(vt_buf *out, int type, uint32_t seq, const uint8_t *body, size_t blen, const vt_keypair *kp)
{
    uint8_t h[VT_MSG_HEADER_LEN], sig[64];
    put_header(h, type, seq, (uint32_t)blen);
    out->len = 0;
    CHECK_OK(vt_buf_append(out, h, sizeof h));
    CHECK_OK(vt_buf_append(out, body, blen));
    CHECK_OK(vt_sign_detached(kp, out->data, out->len, sig));
    CHECK_OK(vt_buf_append(out, sig, sizeof sig));
}

static vt_err decode_signed(int type, const uint8_t *body, size_t blen)
{
    vt_buf f;
    vt_buf_init(&f);
    sign_frame(&f, type, 1, body, blen, &k_trainer);
    vt_msg m;
    vt_err e = vt_msg_decode(f.data, f.len, k_trainer.pk, NULL, &m);
    vt_msg_free(&m);
    vt_buf_free(&f);
    return e;
}

static void test_limits(void)
{
    uint8_t h[VT_MSG_HEADER_LEN];
    vt_msg m;
    vt_msg_header hh;
    /* the header alone decides: a claimed body beyond the limit fails before anything else */
    put_header(h, VT_MSG_INPUTS, 0, 0xffffffffu);
    CHECK(vt_msg_decode(h, sizeof h, NULL, NULL, &m) == VT_ERR_LIMIT, "4 GiB INPUTS: %s", vt_errmsg());
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_LIMIT, "parse_header: 4 GiB INPUTS");
    put_header(h, VT_MSG_INPUTS, 0, VT_MSG_INPUTS_MAX_BODY);
    CHECK_OK(vt_msg_parse_header(h, NULL, &hh));
    CHECK(vt_msg_decode(h, sizeof h, NULL, NULL, &m) == VT_ERR_FORMAT, "256 MiB claimed, 16 bytes given");
    put_header(h, VT_MSG_INPUTS, 0, VT_MSG_INPUTS_MAX_BODY + 1);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_LIMIT, "INPUTS over 256 MiB");
    put_header(h, VT_MSG_LOG, 0, 12 + VT_MSG_LOG_MAX_DATA + 1);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_LIMIT, "LOG over 64 MiB");
    put_header(h, VT_MSG_LOG, 0, 12 + VT_MSG_LOG_MAX_DATA);
    CHECK_OK(vt_msg_parse_header(h, NULL, &hh));
    put_header(h, VT_MSG_HELLO, 0, 66);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_LIMIT, "HELLO of 66 bytes");
    put_header(h, VT_MSG_HELLO, 0, 64);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_FORMAT, "HELLO of 64 bytes");
    put_header(h, VT_MSG_VERDICT, 0, 224 + VT_MSG_TEXT_MAX + 1);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_LIMIT, "VERDICT over its limit");
    put_header(h, 0, 0, 8);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_FORMAT, "type 0");
    put_header(h, VT_MSG_TYPE_COUNT_, 0, 8);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_FORMAT, "first unknown type");
    put_header(h, 0xffff, 0, 8);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_FORMAT, "type 65535");
    put_header(h, VT_MSG_Q_LEAF, 0, 8);
    h[4] = 4;
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_FORMAT, "version 4");
    h[4] = 2;
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_FORMAT, "version 2 (before the verdict named its game)");
    h[4] = 1;
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_FORMAT, "version 1 (before the service record)");
    /* caller limits only tighten */
    vt_msg_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_body[VT_MSG_LOG] = 1000;
    lim.max_body[VT_MSG_HELLO] = 1000000; /* above the protocol maximum: clamped */
    CHECK(vt_msg_max_body(VT_MSG_LOG, &lim) == 1000 && vt_msg_max_body(VT_MSG_HELLO, &lim) == 65 &&
              vt_msg_max_body(VT_MSG_INPUTS, &lim) == VT_MSG_INPUTS_MAX_BODY && vt_msg_max_body(0, NULL) == 0,
          "effective limits");
    put_header(h, VT_MSG_LOG, 0, 1001);
    CHECK(vt_msg_parse_header(h, &lim, &hh) == VT_ERR_LIMIT, "LOG over a caller limit");
    put_header(h, VT_MSG_HELLO, 0, 66);
    CHECK(vt_msg_parse_header(h, &lim, &hh) == VT_ERR_LIMIT, "HELLO limit not raised by the caller");

    /* bodies: sizes inside are checked against what remains before allocating */
    uint8_t b[256];
    memset(b, 0, sizeof b);
    vt_put_u64le(b, 1);
    vt_put_u32le(b + 8, 2);
    vt_put_u16le(b + 12, 1);
    vt_put_u32le(b + 18, 0xffffffffu);
    vt_put_u32le(b + 22, 0xffffffffu); /* rows*cols*4 overflows 64 bits */
    CHECK(decode_signed(VT_MSG_INPUTS, b, 26 + 8) == VT_ERR_FORMAT, "INPUTS rows*cols overflow");
    vt_put_u32le(b + 18, 0x40000000u);
    vt_put_u32le(b + 22, 1);
    CHECK(decode_signed(VT_MSG_INPUTS, b, 26 + 8) == VT_ERR_FORMAT, "INPUTS 4 GiB tensor in 34 bytes");
    vt_put_u16le(b + 12, 0xffff);
    CHECK(decode_signed(VT_MSG_INPUTS, b, 26 + 8) == VT_ERR_FORMAT, "INPUTS 65535 tensors in 34 bytes");
    vt_put_u16le(b + 12, 1);
    vt_put_u32le(b + 18, 2);
    vt_put_u32le(b + 22, 2);
    CHECK(decode_signed(VT_MSG_INPUTS, b, 26 + 16) == VT_OK, "INPUTS 2x2: %s", vt_errmsg());
    CHECK(decode_signed(VT_MSG_INPUTS, b, 26 + 15) == VT_ERR_FORMAT, "INPUTS data short");
    CHECK(decode_signed(VT_MSG_INPUTS, b, 26 + 17) == VT_ERR_FORMAT, "INPUTS data long");
    memset(b, 0, sizeof b);
    vt_put_u32le(b + 8, 0xffffffffu);
    CHECK(decode_signed(VT_MSG_LOG, b, 12 + 20) == VT_ERR_LIMIT, "LOG len 4 GiB");
    vt_put_u32le(b + 8, 21);
    CHECK(decode_signed(VT_MSG_LOG, b, 12 + 20) == VT_ERR_FORMAT, "LOG len beyond the body");
    vt_put_u32le(b + 8, 19);
    CHECK(decode_signed(VT_MSG_LOG, b, 12 + 20) == VT_ERR_FORMAT, "LOG len short of the body");
    /* LEAF */
    memset(b, 0, sizeof b);
    b[8] = 1;
    vt_put_u16le(b + 113, 65);
    uint8_t big[115 + 65 * 32];
    memset(big, 0, sizeof big);
    memcpy(big, b, 115);
    CHECK(decode_signed(VT_MSG_LEAF, big, 115 + 64 * 32) == VT_ERR_FORMAT, "LEAF n_path 65");
    vt_put_u16le(big + 113, 2);
    CHECK(decode_signed(VT_MSG_LEAF, big, 115 + 64) == VT_OK, "LEAF n_path 2: %s", vt_errmsg());
    CHECK(decode_signed(VT_MSG_LEAF, big, 115 + 65) == VT_ERR_FORMAT, "LEAF path with an extra byte");
    big[8] = 2;
    CHECK(decode_signed(VT_MSG_LEAF, big, 115 + 64) == VT_ERR_FORMAT, "LEAF has_state 2");
    big[8] = 0;
    CHECK(decode_signed(VT_MSG_LEAF, big, 115 + 64) == VT_ERR_FORMAT, "LEAF has_state 0 without the filler");
    memset(big + 9, 0xff, 32);
    CHECK(decode_signed(VT_MSG_LEAF, big, 115 + 64) == VT_OK, "LEAF has_state 0 with the filler");
    /* HASHES (count checked against the bytes before allocating), HINT, MANIFEST */
    memset(b, 0, sizeof b);
    vt_put_u32le(b + 16, VT_MSG_HASHES_MAX + 1);
    CHECK(decode_signed(VT_MSG_HASHES, b, 20 + 64) == VT_ERR_LIMIT, "HASHES count over the maximum");
    vt_put_u32le(b + 16, 0xffffffffu);
    CHECK(decode_signed(VT_MSG_HASHES, b, 20 + 64) == VT_ERR_LIMIT, "HASHES count 2^32-1");
    vt_put_u32le(b + 16, 3);
    CHECK(decode_signed(VT_MSG_HASHES, b, 20 + 64) == VT_ERR_FORMAT, "HASHES count beyond the body");
    vt_put_u32le(b + 16, 1);
    CHECK(decode_signed(VT_MSG_HASHES, b, 20 + 64) == VT_ERR_FORMAT, "HASHES count short of the body");
    vt_put_u32le(b + 16, 2);
    CHECK(decode_signed(VT_MSG_HASHES, b, 20 + 64) == VT_OK, "HASHES of 2");
    memset(b, 0, sizeof b);
    b[12] = 2;
    CHECK(decode_signed(VT_MSG_HINT, b, 21) == VT_ERR_FORMAT, "HINT has 2");
    b[12] = 1;
    CHECK(decode_signed(VT_MSG_HINT, b, 21) == VT_OK, "HINT has 1");
    memset(b, 0, sizeof b);
    vt_put_u32le(b + 8, VT_MSG_MANIFEST_MAX + 1);
    CHECK(decode_signed(VT_MSG_MANIFEST, b, 12 + 20) == VT_ERR_LIMIT, "MANIFEST len over 1 MiB");
    put_header(h, VT_MSG_MANIFEST, 0, 12 + VT_MSG_MANIFEST_MAX + 1);
    CHECK(vt_msg_parse_header(h, NULL, &hh) == VT_ERR_LIMIT, "MANIFEST body over its limit");
    /* HELLO role, VERDICT loser */
    memset(b, 0, sizeof b);
    CHECK(decode_signed(VT_MSG_HELLO, b, 65) == VT_ERR_FORMAT, "HELLO role 0");
    b[0] = 3;
    CHECK(decode_signed(VT_MSG_HELLO, b, 65) == VT_OK, "HELLO role 3");
    b[0] = 4;
    CHECK(decode_signed(VT_MSG_HELLO, b, 65) == VT_ERR_FORMAT, "HELLO role 4");
    memset(b, 0, sizeof b);
    b[44] = 4;
    CHECK(decode_signed(VT_MSG_VERDICT, b, 224) == VT_ERR_FORMAT, "VERDICT loser 4");
    b[44] = 3;
    CHECK(decode_signed(VT_MSG_VERDICT, b, 224) == VT_OK, "VERDICT loser 3, empty reason");
    CHECK(decode_signed(VT_MSG_VERDICT, b, 223) == VT_ERR_FORMAT, "VERDICT without its binding fields");

    /* the encoder refuses what the decoder would refuse */
    vt_buf out;
    vt_buf_init(&out);
    vt_msg_body body;
    sample(VT_MSG_LEAF, &body, 0);
    body.leaf.n_path = 65;
    CHECK(vt_msg_encode(VT_MSG_LEAF, &body, 0, &k_trainer, &out) == VT_ERR_ARG && out.len == 0, "encode n_path 65");
    sample(VT_MSG_HELLO, &body, 0);
    body.hello.role = 0;
    CHECK(vt_msg_encode(VT_MSG_HELLO, &body, 0, &k_trainer, &out) == VT_ERR_ARG && out.len == 0, "encode role 0");
    sample(VT_MSG_VERDICT, &body, 0);
    body.verdict.loser = 7;
    CHECK(vt_msg_encode(VT_MSG_VERDICT, &body, 0, &k_trainer, &out) == VT_ERR_ARG && out.len == 0, "encode loser 7");
    sample(VT_MSG_INPUTS, &body, 0);
    vt_msg_tensor huge = {.tensor_id = 1, .rows = 0x10000, .cols = 0x10000, .data = s_d0};
    body.inputs.n_tensors = 1;
    body.inputs.tensors = &huge;
    CHECK(vt_msg_encode(VT_MSG_INPUTS, &body, 0, &k_trainer, &out) == VT_ERR_ARG && out.len == 0,
          "encode a 16 GiB tensor");
    huge.rows = 2;
    huge.cols = 2;
    huge.data = NULL;
    CHECK(vt_msg_encode(VT_MSG_INPUTS, &body, 0, &k_trainer, &out) == VT_ERR_ARG, "encode tensor without data");
    sample(VT_MSG_LOG, &body, 0);
    body.log.len = VT_MSG_LOG_MAX_DATA + 1;
    CHECK(vt_msg_encode(VT_MSG_LOG, &body, 0, &k_trainer, &out) == VT_ERR_ARG, "encode LOG over 64 MiB");
    CHECK(vt_msg_encode(0, &body, 0, &k_trainer, &out) == VT_ERR_ARG, "encode type 0");
    CHECK(vt_msg_encode(VT_MSG_TYPE_COUNT_, &body, 0, &k_trainer, &out) == VT_ERR_ARG, "encode an unknown type");
    /* prefix in the buffer is kept on failure, and a frame can be appended after it */
    CHECK_OK(vt_buf_append(&out, "xyz", 3));
    CHECK(vt_msg_encode(VT_MSG_LOG, &body, 0, &k_trainer, &out) == VT_ERR_ARG && out.len == 3, "prefix kept");
    sample(VT_MSG_Q_LEAF, &body, 0);
    CHECK_OK(vt_msg_encode(VT_MSG_Q_LEAF, &body, 0, &k_trainer, &out));
    CHECK(out.len == 3 + VT_MSG_OVERHEAD + 8, "appended frame");
    CHECK_OK(vt_msg_decode(out.data + 3, out.len - 3, k_trainer.pk, NULL, &m));
    vt_msg_free(&m);
    vt_buf_free(&out);
}

static void test_strings(void)
{
    struct {
        const char *s;
        size_t n;
        int ok;
    } cases[] = {
        {"", 0, 1},
        {"plain ascii ~!@#$%^&*()", 23, 1},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 1},
        {"tab\there", 8, 0},
        {"nl\n", 3, 0},
        {"cr\r", 3, 0},
        {"nul\0x", 5, 0},
        {"del\x7f", 4, 0},
        {"esc\x1b[31m", 8, 0},
        {"c1 \xc2\x9b", 5, 0},
        {"nbsp \xc2\xa0", 7, 1},
        {"\xc0\x80", 2, 0},         /* overlong NUL */
        {"\xc1\xbf", 2, 0},         /* overlong */
        {"\xe0\x9f\xbf", 3, 0},     /* overlong 3-byte */
        {"\xf0\x8f\xbf\xbf", 4, 0}, /* overlong 4-byte */
        {"\xed\xa0\x80", 3, 0},     /* surrogate */
        {"\xed\x9f\xbf", 3, 1},     /* U+D7FF */
        {"\xf4\x8f\xbf\xbf", 4, 1}, /* U+10FFFF */
        {"\xf4\x90\x80\x80", 4, 0}, /* above U+10FFFF */
        {"\xf5\x80\x80\x80", 4, 0},
        {"\xff", 1, 0},
        {"\x80", 1, 0},
        {"\xe2\x82", 2, 0},      /* truncated */
        {"\xe2\x28\xa1", 3, 0},  /* bad continuation */
        {"\xe2\x80\xae", 3, 0},  /* RIGHT-TO-LEFT OVERRIDE */
        {"\xe2\x81\xa6", 3, 0},  /* LEFT-TO-RIGHT ISOLATE */
        {"\xe2\x80\xa8", 3, 0},  /* LINE SEPARATOR */
        {"\xe2\x80\x8b", 3, 1},  /* ZERO WIDTH SPACE: allowed */
    };
    vt_buf out;
    vt_buf_init(&out);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vt_err e = vt_msg_check_text((const uint8_t *)cases[i].s, cases[i].n, 1024, VT_ERR_FORMAT, "t");
        CHECK((e == VT_OK) == cases[i].ok, "string case %zu: %s", i, vt_errmsg());
        /* decoder, through a signed ERROR frame */
        uint8_t body[64];
        vt_put_u16le(body, 1);
        vt_put_u16le(body + 2, (uint16_t)cases[i].n);
        memcpy(body + 4, cases[i].s, cases[i].n);
        e = decode_signed(VT_MSG_ERROR, body, 4 + cases[i].n);
        CHECK((e == VT_OK) == cases[i].ok && (e == VT_OK || e == VT_ERR_FORMAT), "ERROR decode case %zu", i);
        /* encoder (strings with an embedded NUL are shorter C strings: skip them) */
        if (memchr(cases[i].s, 0, cases[i].n)) continue;
        vt_msg_error er = {.code = 1};
        memcpy(er.message, cases[i].s, cases[i].n);
        er.message[cases[i].n] = 0;
        out.len = 0;
        e = vt_msg_encode(VT_MSG_ERROR, &er, 0, &k_trainer, &out);
        CHECK((e == VT_OK) == cases[i].ok && (e == VT_OK || e == VT_ERR_ARG), "ERROR encode case %zu", i);
    }
    /* lengths: 1024/1025 for the service record and for texts */
    vt_msg_body body;
    sample(VT_MSG_CHALLENGE, &body, 0);
    memset(body.challenge.service, 'a', VT_MSG_SERVICE_MAX);
    body.challenge.service_len = VT_MSG_SERVICE_MAX;
    out.len = 0;
    CHECK_OK(vt_msg_encode(VT_MSG_CHALLENGE, &body, 0, &k_trainer, &out));
    vt_msg m;
    CHECK_OK(vt_msg_decode(out.data, out.len, k_trainer.pk, NULL, &m));
    CHECK(m.body.challenge.service_len == VT_MSG_SERVICE_MAX, "1024-byte service record");
    vt_msg_free(&m);
    body.challenge.service_len = VT_MSG_SERVICE_MAX + 1;
    out.len = 0;
    CHECK(vt_msg_encode(VT_MSG_CHALLENGE, &body, 0, &k_trainer, &out) == VT_ERR_ARG, "1025-byte service record");
    static vt_msg_error er;
    memset(er.message, 'z', VT_MSG_TEXT_MAX);
    out.len = 0;
    CHECK_OK(vt_msg_encode(VT_MSG_ERROR, &er, 0, &k_trainer, &out));
    /* a struct whose string is not terminated within its array is refused, not overread */
    memset(&er, 'z', sizeof er);
    er.code = 3;
    out.len = 0;
    CHECK(vt_msg_encode(VT_MSG_ERROR, &er, 0, &k_trainer, &out) == VT_ERR_ARG, "unterminated 1025-byte message");
    /* decoder: a declared length of 1025 inside a frame of allowed size */
    uint8_t body2[4 + 1024];
    vt_put_u16le(body2, 1);
    vt_put_u16le(body2 + 2, 1025);
    memset(body2 + 4, 'q', 1024);
    CHECK(decode_signed(VT_MSG_ERROR, body2, sizeof body2) == VT_ERR_FORMAT, "declared text length 1025");
    vt_buf_free(&out);
}

/* ------------------------------------------------------------------ loopback */

static void addr_of(uint16_t port, char *buf, size_t n) { snprintf(buf, n, "127.0.0.1:%u", (unsigned)port); }

static int raw_tcp_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

typedef struct {
    vt_listener *l;
    const uint8_t *expect; /* client key to pin, or NULL */
    int accept_ms;
    /* results */
    vt_err accept_err;
    int accept_deadline;
    char accept_msg[256];
    uint8_t peer_pk[32];
    vt_err recv_err[4];
    int recv_deadline[4];
    char recv_msg[4][256];
    double recv_s[4];
    int n_ok;
    const char *tr_path;
    int sync[2]; /* test_drop: the client tells the server it has closed */
} srv_ctx;

/* A: exchange HELLOs, then a 1 MiB INPUTS and a LOG, with a transcript. */
static void *srv_exchange(void *arg)
{
    srv_ctx *s = arg;
    vt_conn *c = NULL;
    s->accept_err = vt_accept(s->l, &k_trainer, s->expect, s->accept_ms, &c, s->peer_pk);
    snprintf(s->accept_msg, sizeof s->accept_msg, "%s", vt_errmsg());
    if (s->accept_err) return NULL;
    vt_transcript *tr = NULL;
    if (s->tr_path && vt_transcript_open(s->tr_path, &tr) == VT_OK) vt_conn_set_transcript(c, tr);
    vt_msg m;
    if (vt_recv_msg(c, VT_MSG_HELLO, OK_MS, NULL, &m) == VT_OK) {
        if (m.body.hello.role == VT_ROLE_AUDITOR && memcmp(m.body.hello.pk, s->peer_pk, 32) == 0) s->n_ok++;
        vt_msg_free(&m);
        vt_msg_hello h = {.role = VT_ROLE_TRAINER};
        memcpy(h.pk, k_trainer.pk, 32);
        if (vt_send_msg(c, VT_MSG_HELLO, &h, &k_trainer) == VT_OK) s->n_ok++;
    }
    if (vt_recv_msg(c, VT_MSG_INPUTS, OK_MS, NULL, &m) == VT_OK) {
        int good = m.body.inputs.n_tensors == 1 && m.body.inputs.tensors[0].rows == 512 &&
                   m.body.inputs.tensors[0].cols == 512;
        for (uint32_t i = 0; good && i < 512u * 512u; i++) good = m.body.inputs.tensors[0].data[i] == (float)i;
        if (good) s->n_ok++;
        vt_msg_free(&m);
        vt_msg_log lg = {.step = 9, .len = 3, .data = (uint8_t *)"abc"};
        if (vt_send_msg(c, VT_MSG_LOG, &lg, &k_trainer) == VT_OK) s->n_ok++;
    } else {
        snprintf(s->recv_msg[0], sizeof s->recv_msg[0], "%s", vt_errmsg());
    }
    vt_conn_close(c);
    if (tr) (void)vt_transcript_close(tr);
    return NULL;
}

static void test_tls_exchange(void)
{
    vt_listener *l;
    uint16_t port = 0;
    CHECK_OK(vt_listen("127.0.0.1:0", &l, &port));
    CHECK(port != 0, "ephemeral port");
    char addr[64], trs[128], trc[128];
    addr_of(port, addr, sizeof addr);
    snprintf(trs, sizeof trs, "%s/server.vttr", tmpdir);
    snprintf(trc, sizeof trc, "%s/client.vttr", tmpdir);
    srv_ctx s = {.l = l, .expect = NULL, .accept_ms = OK_MS, .tr_path = trs};
    pthread_t th;
    pthread_create(&th, NULL, srv_exchange, &s);
    vt_conn *c = NULL;
    uint8_t peer[32];
    vt_err e = vt_connect(addr, &k_auditor, k_trainer.pk, OK_MS, &c, peer);
    CHECK(e == VT_OK, "connect with pinning: %s", vt_errmsg());
    int client_ok = 0;
    if (e == VT_OK) {
        CHECK(memcmp(peer, k_trainer.pk, 32) == 0 && memcmp(vt_conn_peer_pk(c), k_trainer.pk, 32) == 0,
              "client sees the server key");
        vt_transcript *tr = NULL;
        CHECK_OK(vt_transcript_open(trc, &tr));
        vt_conn_set_transcript(c, tr);
        CHECK(vt_send_msg(c, VT_MSG_HELLO, &(vt_msg_hello){.role = VT_ROLE_TRAINER}, &k_trainer) == VT_ERR_ARG,
              "signing with a key other than the connection's identity is refused");
        vt_msg_hello h = {.role = VT_ROLE_AUDITOR};
        memcpy(h.pk, k_auditor.pk, 32);
        CHECK_OK(vt_send_msg(c, VT_MSG_HELLO, &h, &k_auditor));
        vt_msg m;
        e = vt_recv_msg(c, VT_MSG_HELLO, OK_MS, NULL, &m);
        CHECK(e == VT_OK, "client recv HELLO: %s", vt_errmsg());
        if (e == VT_OK) {
            client_ok += m.body.hello.role == VT_ROLE_TRAINER;
            CHECK(m.raw && m.raw_len == VT_MSG_OVERHEAD + 65 && m.hdr.seq == 0, "raw bytes kept, seq 0");
            vt_msg_free(&m);
        }
        float *big = malloc(sizeof(float) * 512 * 512);
        for (uint32_t i = 0; big && i < 512u * 512u; i++) big[i] = (float)i;
        vt_msg_tensor t = {.tensor_id = 1, .rows = 512, .cols = 512, .data = big};
        vt_msg_inputs in = {.step = 1, .op = 2, .n_tensors = 1, .tensors = &t};
        CHECK_OK(vt_send_msg(c, VT_MSG_INPUTS, &in, &k_auditor));
        free(big);
        e = vt_recv_msg(c, VT_MSG_LOG, OK_MS, NULL, &m);
        CHECK(e == VT_OK, "client recv LOG: %s", vt_errmsg());
        if (e == VT_OK) {
            client_ok += m.body.log.len == 3 && memcmp(m.body.log.data, "abc", 3) == 0 && m.hdr.seq == 1;
            vt_msg_free(&m);
        }
        /* the server has closed: the next receive reports it, promptly (not at its OK_MS
         * deadline: the HANG_S bound fails then) */
        double t0 = now_s();
        e = vt_recv_msg(c, VT_MSG_ANY, OK_MS, NULL, &m);
        double dt = now_s() - t0;
        CHECK(e == VT_ERR_IO && !vt_proto_deadline_exceeded() && dt < HANG_S, "closed by peer: %d %s %.3f s", (int)e,
              vt_errmsg(), dt);
        vt_conn_close(c);
        CHECK_OK(vt_transcript_close(tr));
    }
    pthread_join(th, NULL);
    CHECK(s.accept_err == VT_OK, "server accept: %s", s.accept_msg);
    CHECK(memcmp(s.peer_pk, k_auditor.pk, 32) == 0, "server learns the client key");
    CHECK(s.n_ok == 4, "server steps ok: %d (%s)", s.n_ok, s.recv_msg[0]);
    CHECK(client_ok == 2, "client steps ok: %d", client_ok);
    vt_listener_close(l);

    /* both transcripts hold the four messages, each verifiable with its author's key */
    const char *paths[2] = {trs, trc};
    for (int p = 0; p < 2; p++) {
        vt_transcript_reader *r;
        CHECK_OK(vt_transcript_reader_open(paths[p], &r));
        int n = 0, verified = 0, eof = 0;
        vt_transcript_record rec;
        while (r && vt_transcript_next(r, &rec, &eof) == VT_OK && !eof) {
            vt_msg m;
            if (vt_msg_decode(rec.bytes, rec.len, rec.author_pk, NULL, &m) == VT_OK) verified++;
            int mine = memcmp(rec.author_pk, p == 0 ? k_trainer.pk : k_auditor.pk, 32) == 0;
            if ((rec.dir == VT_TR_SENT) != mine) verified = -100;
            vt_msg_free(&m);
            n++;
        }
        CHECK(eof && n == 4 && verified == 4, "transcript %d: %d records, %d verified", p, n, verified);
        vt_transcript_reader_close(r);
    }
}

/* B, C: wrong pinned keys. */
static void *srv_accept_only(void *arg)
{
    srv_ctx *s = arg;
    vt_conn *c = NULL;
    s->accept_err = vt_accept(s->l, &k_trainer, s->expect, s->accept_ms, &c, s->peer_pk);
    s->accept_deadline = vt_proto_deadline_exceeded();
    snprintf(s->accept_msg, sizeof s->accept_msg, "%s", vt_errmsg());
    if (s->accept_err == VT_OK) {
        vt_msg m;
        s->recv_err[0] = vt_recv_msg(c, VT_MSG_ANY, OK_MS, NULL, &m);
        vt_msg_free(&m);
        vt_conn_close(c);
    }
    return NULL;
}

static void test_tls_pinning_failures(void)
{
    vt_listener *l;
    uint16_t port = 0;
    char addr[64];
    CHECK_OK(vt_listen("127.0.0.1:0", &l, &port));
    addr_of(port, addr, sizeof addr);

    /* the client pins a key the server does not hold */
    srv_ctx s = {.l = l, .accept_ms = OK_MS};
    pthread_t th;
    pthread_create(&th, NULL, srv_accept_only, &s);
    vt_conn *c = NULL;
    vt_err e = vt_connect(addr, &k_auditor, k_stranger.pk, OK_MS, &c, NULL);
    CHECK(e == VT_ERR_CRYPTO && c == NULL, "wrong server key: %d %s", (int)e, vt_errmsg());
    CHECK(strstr(vt_errmsg(), "pinned") != NULL, "message names the pinning: %s", vt_errmsg());
    pthread_join(th, NULL);
    CHECK(s.accept_err != VT_OK && !s.accept_deadline, "server sees the failed handshake: %s", s.accept_msg);

    /* the server pins a client key; another client comes */
    srv_ctx s2 = {.l = l, .accept_ms = OK_MS, .expect = k_auditor.pk};
    pthread_create(&th, NULL, srv_accept_only, &s2);
    c = NULL;
    e = vt_connect(addr, &k_stranger, k_trainer.pk, OK_MS, &c, NULL);
    if (e == VT_OK) {
        /* TLS 1.3: the client finishes first; the rejection arrives as an alert */
        vt_msg m;
        e = vt_recv_msg(c, VT_MSG_ANY, OK_MS, NULL, &m);
        CHECK(e == VT_ERR_IO && !vt_proto_deadline_exceeded(), "rejected client learns it: %d %s", (int)e,
              vt_errmsg());
        vt_conn_close(c);
    }
    pthread_join(th, NULL);
    CHECK(s2.accept_err == VT_ERR_CRYPTO, "server refuses an unexpected client key: %d %s", (int)s2.accept_err,
          s2.accept_msg);

    /* the same server pinning the right client key */
    srv_ctx s3 = {.l = l, .accept_ms = OK_MS, .expect = k_auditor.pk};
    pthread_create(&th, NULL, srv_accept_only, &s3);
    e = vt_connect(addr, &k_auditor, NULL, OK_MS, &c, NULL);
    CHECK(e == VT_OK, "connect without pinning: %s", vt_errmsg());
    if (e == VT_OK) {
        CHECK(memcmp(vt_conn_peer_pk(c), k_trainer.pk, 32) == 0, "unpinned client reports the server key");
        CHECK_OK(vt_send_msg(c, VT_MSG_Q_STATE, &(vt_msg_q_step){.step = 4}, &k_auditor));
        vt_conn_close(c);
    }
    pthread_join(th, NULL);
    CHECK(s3.accept_err == VT_OK && s3.recv_err[0] == VT_OK, "server pinning the right key: %s", s3.accept_msg);

    /* bad addresses */
    CHECK(vt_connect("127.0.0.1", &k_auditor, NULL, 500, &c, NULL) == VT_ERR_ARG, "no port");
    CHECK(vt_connect("127.0.0.1:99999", &k_auditor, NULL, 500, &c, NULL) == VT_ERR_ARG, "port > 65535");
    vt_listener *l2 = NULL;
    CHECK(vt_listen("[::1:0", &l2, NULL) == VT_ERR_ARG && !l2, "bad brackets");
    CHECK(vt_listen("127.0.0.1:x", &l2, NULL) == VT_ERR_ARG && !l2, "bad port");
    vt_listener_close(l);
    /* nobody listening: a prompt I/O error, not a deadline. The port is held by a socket of ours,
     * bound but not listening, for the whole check: the kernel refuses the connection, and no
     * other process (a test running in parallel) can take the port meanwhile, as it could take
     * a port that was merely freed. */
    int bfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int bound = bfd >= 0 && bind(bfd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
                getsockname(bfd, (struct sockaddr *)&sa, &sl) == 0;
    CHECK(bound, "bind a port without listening: %s", strerror(errno));
    if (bound) {
        addr_of(ntohs(sa.sin_port), addr, sizeof addr);
        double t0 = now_s();
        e = vt_connect(addr, &k_auditor, NULL, OK_MS, &c, NULL);
        double dt = now_s() - t0;
        CHECK(e == VT_ERR_IO && !vt_proto_deadline_exceeded() && strstr(vt_errmsg(), "refused") && dt < HANG_S,
              "connection refused: %s (%.3f s)", vt_errmsg(), dt);
    }
    if (bfd >= 0) close(bfd);
}

/* IPv6 loopback, when the machine has it. */
static void *srv_accept_v6(void *arg)
{
    srv_ctx *s = arg;
    vt_conn *c = NULL;
    s->accept_err = vt_accept(s->l, &k_trainer, k_auditor.pk, OK_MS, &c, s->peer_pk);
    snprintf(s->accept_msg, sizeof s->accept_msg, "%s", vt_errmsg());
    vt_conn_close(c);
    return NULL;
}

static void test_ipv6(void)
{
    vt_listener *l = NULL;
    uint16_t port = 0;
    if (vt_listen("[::1]:0", &l, &port) != VT_OK) {
        printf("no IPv6 loopback here (%s): IPv6 test skipped\n", vt_errmsg());
        return;
    }
    char addr[64];
    snprintf(addr, sizeof addr, "[::1]:%u", (unsigned)port);
    srv_ctx s = {.l = l};
    pthread_t th;
    pthread_create(&th, NULL, srv_accept_v6, &s);
    vt_conn *c = NULL;
    vt_err e = vt_connect(addr, &k_auditor, k_trainer.pk, OK_MS, &c, NULL);
    CHECK(e == VT_OK, "IPv6 connect: %s", vt_errmsg());
    vt_conn_close(c);
    pthread_join(th, NULL);
    CHECK(s.accept_err == VT_OK && memcmp(s.peer_pk, k_auditor.pk, 32) == 0, "IPv6 accept: %s", s.accept_msg);
    vt_listener_close(l);
}

/* D: silent and slow peers. The silences are made certain by handshakes, not by sleeps: the
 * client sends its late message only once the server reports (to_client) that its short
 * deadline has passed, and the server starts its mid-header wait only once the client reports
 * (to_server) that the half header is out. */
typedef struct {
    vt_listener *l;
    int to_client[2], to_server[2];
    vt_err err[4];
    int dl[4];
    double secs[4];
    char msg[4][256];
} slow_ctx;

static void *srv_slow(void *arg)
{
    slow_ctx *s = arg;
    vt_conn *c = NULL;
    /* 1. a TCP client that never starts TLS (it connected before this thread started) */
    double t0 = now_s();
    s->err[0] = vt_accept(s->l, &k_trainer, NULL, 200, &c, NULL);
    s->dl[0] = vt_proto_deadline_exceeded();
    s->secs[0] = now_s() - t0;
    snprintf(s->msg[0], sizeof s->msg[0], "%s", vt_errmsg());
    if (c) vt_conn_close(c);
    /* 2. a TLS client that sends nothing until told to, then a message */
    s->err[1] = vt_accept(s->l, &k_trainer, NULL, OK_MS, &c, NULL);
    if (s->err[1] != VT_OK) { /* every later step fails with it */
        snprintf(s->msg[1], sizeof s->msg[1], "accept: %s", vt_errmsg());
        s->err[2] = s->err[3] = s->err[1];
        snprintf(s->msg[2], sizeof s->msg[2], "%s", s->msg[1]);
        snprintf(s->msg[3], sizeof s->msg[3], "%s", s->msg[1]);
        return NULL;
    }
    vt_msg m;
    t0 = now_s();
    s->err[1] = vt_recv_msg(c, VT_MSG_ANY, 200, NULL, &m);
    s->dl[1] = vt_proto_deadline_exceeded();
    s->secs[1] = now_s() - t0;
    snprintf(s->msg[1], sizeof s->msg[1], "%s", vt_errmsg());
    vt_msg_free(&m); /* (vt_recv_msg clears m, also on failure) */
    sig_post(s->to_client); /* the deadline has passed: the client may send now */
    /* the connection is still usable: the message arrives later */
    s->err[2] = vt_recv_msg(c, VT_MSG_Q_LEAF, OK_MS, NULL, &m);
    snprintf(s->msg[2], sizeof s->msg[2], "%s", vt_errmsg());
    if (s->err[2] == VT_OK && m.body.q_leaf.step != 5) s->err[2] = VT_ERR_INTERNAL;
    vt_msg_free(&m);
    /* 3. half a header, then silence: deadline, and the connection is now unusable */
    int half_sent = sig_wait(s->to_server, OK_MS);
    t0 = now_s();
    s->err[3] = vt_recv_msg(c, VT_MSG_ANY, 200, NULL, &m);
    s->dl[3] = vt_proto_deadline_exceeded();
    s->secs[3] = now_s() - t0;
    snprintf(s->msg[3], sizeof s->msg[3], "%s", vt_errmsg());
    vt_msg_free(&m);
    vt_err again = vt_recv_msg(c, VT_MSG_ANY, 200, NULL, &m);
    if (again != VT_ERR_IO || strstr(vt_errmsg(), "unusable") == NULL) {
        s->err[3] = VT_ERR_INTERNAL;
        snprintf(s->msg[3], sizeof s->msg[3], "not unusable after the deadline: %s", vt_errmsg());
    }
    vt_msg_free(&m);
    if (!half_sent) {
        s->err[3] = VT_ERR_INTERNAL;
        snprintf(s->msg[3], sizeof s->msg[3], "the client never reported its half header");
    }
    sig_post(s->to_client); /* done: the client may close */
    vt_conn_close(c);
    return NULL;
}

static void test_deadlines(void)
{
    vt_listener *l;
    uint16_t port = 0;
    char addr[64];
    CHECK_OK(vt_listen("127.0.0.1:0", &l, &port));
    addr_of(port, addr, sizeof addr);
    slow_ctx s = {.l = l};
    sig_init(s.to_client);
    sig_init(s.to_server);
    /* queued on the listener before the server thread starts, so its first accept takes this
     * connection however late that thread runs */
    int fd = raw_tcp_connect(port);
    CHECK(fd >= 0, "raw connect");
    pthread_t th;
    pthread_create(&th, NULL, srv_slow, &s);
    vt_conn *c = NULL;
    vt_err e = vt_connect(addr, &k_auditor, k_trainer.pk, OK_MS, &c, NULL); /* queued until the first times out */
    CHECK(e == VT_OK, "second client connects: %s", vt_errmsg());
    /* the server is past the raw client now (or, if its handshake deadline is not enforced, stuck
     * on it: closing ends that wait as a closed connection, which fails the check below) */
    if (fd >= 0) close(fd);
    if (e == VT_OK) {
        /* the client's own receive deadline (the server never sends anything) */
        double t0 = now_s();
        vt_msg m;
        e = vt_recv_msg(c, VT_MSG_ANY, 200, NULL, &m);
        double dt = now_s() - t0;
        CHECK(e == VT_ERR_IO && vt_proto_deadline_exceeded() && dt >= 0.18 && dt < HANG_S,
              "client recv deadline: %d %s %.3f s", (int)e, vt_errmsg(), dt);
        CHECK(strncmp(vt_errmsg(), "deadline exceeded", 17) == 0, "message: %s", vt_errmsg());
        vt_msg_free(&m);
        /* silent until the server's own 200 ms deadline has passed (if it never passes, the
         * message goes after OK_MS anyway and the server's check fails) */
        CHECK(sig_wait(s.to_client, OK_MS), "the server's receive deadline passes");
        CHECK_OK(vt_send_msg(c, VT_MSG_Q_LEAF, &(vt_msg_q_step){.step = 5}, &k_auditor));
        /* half a header */
        vt_buf f;
        vt_buf_init(&f);
        CHECK_OK(vt_msg_encode(VT_MSG_Q_LEAF, &(vt_msg_q_step){.step = 6}, 1, &k_auditor, &f));
        CHECK_OK(vt_send_raw(c, f.data, 8));
        vt_buf_free(&f);
        sig_post(s.to_server);
        /* keep the connection open (silent) until the server is done with it */
        CHECK(sig_wait(s.to_client, OK_MS), "the server's mid-header deadline passes");
        vt_conn_close(c);
    }
    pthread_join(th, NULL);
    sig_close(s.to_client);
    sig_close(s.to_server);
    CHECK(s.err[0] == VT_ERR_IO && s.dl[0] && s.secs[0] >= 0.18 && s.secs[0] < HANG_S,
          "silent TCP client: handshake deadline (%d, %.3f s, %s)", (int)s.err[0], s.secs[0], s.msg[0]);
    CHECK(s.err[1] == VT_ERR_IO && s.dl[1] && s.secs[1] >= 0.18 && s.secs[1] < HANG_S,
          "silent TLS client: recv deadline (%d, %.3f s, %s)", (int)s.err[1], s.secs[1], s.msg[1]);
    CHECK(s.err[2] == VT_OK, "message after a missed deadline: %s", s.msg[2]);
    CHECK(s.err[3] == VT_ERR_IO && s.dl[3] && s.secs[3] >= 0.18 && s.secs[3] < HANG_S,
          "stalled mid-header: %d %s %.3f s", (int)s.err[3], s.msg[3], s.secs[3]);

    /* accept with nobody connecting */
    vt_conn *c2 = NULL;
    double t0 = now_s();
    e = vt_accept(l, &k_trainer, NULL, 150, &c2, NULL);
    double dt = now_s() - t0;
    CHECK(e == VT_ERR_IO && vt_proto_deadline_exceeded() && dt >= 0.13 && dt < HANG_S, "accept deadline: %s %.3f s",
          vt_errmsg(), dt);
    vt_listener_close(l);
}

/* E, F: malformed messages, and a server that keeps serving. */
typedef struct {
    vt_listener *l;
    int rounds;
    vt_err accept_err[8], recv_err[8];
    char msg[8][256];
    double secs[8];
    int served;
} loop_ctx;

static void *srv_loop(void *arg)
{
    loop_ctx *s = arg;
    for (int i = 0; i < s->rounds; i++) {
        vt_conn *c = NULL;
        s->accept_err[i] = vt_accept(s->l, &k_trainer, NULL, OK_MS, &c, NULL);
        if (s->accept_err[i] != VT_OK) {
            snprintf(s->msg[i], sizeof s->msg[i], "%s", vt_errmsg());
            continue;
        }
        vt_msg m;
        vt_msg_limits lim;
        memset(&lim, 0, sizeof lim);
        lim.max_body[VT_MSG_LOG] = 4096;
        double t0 = now_s();
        s->recv_err[i] = vt_recv_msg(c, VT_MSG_Q_LEAF, OK_MS, &lim, &m);
        s->secs[i] = now_s() - t0;
        snprintf(s->msg[i], sizeof s->msg[i], "%s", vt_errmsg());
        if (s->recv_err[i] == VT_OK) {
            int is_error = m.hdr.type == VT_MSG_ERROR;
            vt_msg_free(&m);
            /* a second message must carry a higher seq */
            vt_err e2 = vt_recv_msg(c, VT_MSG_ANY, OK_MS, NULL, &m);
            if (e2 == VT_OK) {
                vt_msg_free(&m);
            } else {
                snprintf(s->msg[i], sizeof s->msg[i], "second: %s", vt_errmsg());
                if (!is_error && (e2 != VT_ERR_FORMAT || strstr(vt_errmsg(), "sequence") == NULL))
                    s->recv_err[i] = e2;
            }
            vt_msg_body leaf;
            sample(VT_MSG_LEAF, &leaf, 1);
            if (vt_send_msg(c, VT_MSG_LEAF, &leaf, &k_trainer) == VT_OK) s->served++;
        }
        vt_conn_close(c);
    }
    return NULL;
}

static vt_conn *client(const char *addr)
{
    vt_conn *c = NULL;
    vt_err e = vt_connect(addr, &k_auditor, k_trainer.pk, OK_MS, &c, NULL);
    CHECK(e == VT_OK, "client connect: %s", vt_errmsg());
    return c;
}

static void test_malformed_and_server_survives(void)
{
    vt_listener *l;
    uint16_t port = 0;
    char addr[64];
    CHECK_OK(vt_listen("127.0.0.1:0", &l, &port));
    addr_of(port, addr, sizeof addr);
    loop_ctx s = {.l = l, .rounds = 8};
    pthread_t th;
    pthread_create(&th, NULL, srv_loop, &s);
    vt_buf f;
    vt_buf_init(&f);
    vt_msg m;

    /* 0: not TLS at all */
    int fd = raw_tcp_connect(port);
    CHECK(fd >= 0, "raw connect");
    if (fd >= 0) {
        const char junk[] = "GET / HTTP/1.0\r\n\r\n\x16\x03\x01\xff\xff garbage garbage garbage";
        CHECK(send(fd, junk, sizeof junk, MSG_NOSIGNAL) == (ssize_t)sizeof junk, "send junk");
        char tmp[256];
        while (recv(fd, tmp, sizeof tmp, 0) > 0) {
        }
        close(fd);
    }
    /* 1: TLS, then bytes that are not a frame */
    vt_conn *c = client(addr);
    if (c) {
        static const uint8_t junk[40] = "this is not a VTPM frame at all.........";
        CHECK_OK(vt_send_raw(c, junk, sizeof junk));
        CHECK(vt_recv_msg(c, VT_MSG_ANY, 3000, NULL, &m) != VT_OK, "client 1 gets no answer");
        vt_conn_close(c);
    }
    /* 2: a frame signed by another key */
    c = client(addr);
    if (c) {
        CHECK_OK(vt_msg_encode(VT_MSG_Q_LEAF, &(vt_msg_q_step){.step = 1}, 0, &k_stranger, &f));
        CHECK_OK(vt_send_raw(c, f.data, f.len));
        CHECK(vt_recv_msg(c, VT_MSG_ANY, 3000, NULL, &m) != VT_OK, "client 2 gets no answer");
        vt_conn_close(c);
    }
    /* 3: an unexpected type */
    c = client(addr);
    if (c) {
        CHECK_OK(vt_send_msg(c, VT_MSG_Q_STATE, &(vt_msg_q_step){.step = 1}, &k_auditor));
        CHECK(vt_recv_msg(c, VT_MSG_ANY, 3000, NULL, &m) != VT_OK, "client 3 gets no answer");
        vt_conn_close(c);
    }
    /* 4: a header claiming an over-limit body, then silence: rejected at once (this client
     * waits up to OK_MS, so a server that waited for the body instead would fail the HANG_S
     * bound on its receive) */
    c = client(addr);
    if (c) {
        uint8_t h[VT_MSG_HEADER_LEN];
        put_header(h, VT_MSG_Q_LEAF, 0, 0xffffff00u);
        CHECK_OK(vt_send_raw(c, h, sizeof h));
        CHECK(vt_recv_msg(c, VT_MSG_ANY, OK_MS, NULL, &m) != VT_OK, "client 4 gets no answer");
        vt_conn_close(c);
    }
    /* 5: a correct message, then a replay of it (same seq) */
    c = client(addr);
    if (c) {
        f.len = 0;
        CHECK_OK(vt_msg_encode(VT_MSG_Q_LEAF, &(vt_msg_q_step){.step = 2}, 0, &k_auditor, &f));
        CHECK_OK(vt_send_raw(c, f.data, f.len));
        CHECK_OK(vt_send_raw(c, f.data, f.len));
        CHECK(vt_recv_msg(c, VT_MSG_LEAF, OK_MS, NULL, &m) == VT_OK, "client 5 served: %s", vt_errmsg());
        vt_msg_free(&m);
        vt_conn_close(c);
    }
    /* 6: a correct signed body that is malformed (signed garbage: evidence) */
    c = client(addr);
    if (c) {
        uint8_t b[9] = {1, 0, 5, 0, 'a', 'b', '\n', 'c', 'd'}; /* ERROR with a control character */
        sign_frame(&f, VT_MSG_ERROR, 0, b, 9, &k_auditor);
        CHECK_OK(vt_send_raw(c, f.data, f.len));
        CHECK(vt_recv_msg(c, VT_MSG_ANY, 3000, NULL, &m) != VT_OK, "client 6 gets no answer");
        vt_conn_close(c);
    }
    /* 7: a well-behaved client, served after all of the above: ERROR is accepted when a
     * Q_LEAF is expected; then a Q_LEAF with a higher seq; the answer is a 64-hash LEAF */
    c = client(addr);
    if (c) {
        vt_conn_set_send_seq(c, 41);
        vt_msg_error er = {.code = 2};
        strcpy(er.message, "just checking");
        CHECK_OK(vt_send_msg(c, VT_MSG_ERROR, &er, &k_auditor));
        CHECK_OK(vt_send_msg(c, VT_MSG_Q_LEAF, &(vt_msg_q_step){.step = 6}, &k_auditor));
        vt_err e = vt_recv_msg(c, VT_MSG_LEAF, OK_MS, NULL, &m);
        CHECK(e == VT_OK && m.body.leaf.n_path == VT_MSG_PATH_MAX, "client 7 served: %s", vt_errmsg());
        vt_msg_free(&m);
        vt_conn_close(c);
    }
    pthread_join(th, NULL);
    CHECK(s.accept_err[0] != VT_OK, "junk client: handshake fails (%s)", s.msg[0]);
    CHECK(s.accept_err[1] == VT_OK && s.recv_err[1] == VT_ERR_FORMAT, "non-frame: %d %s", (int)s.recv_err[1], s.msg[1]);
    CHECK(s.accept_err[2] == VT_OK && s.recv_err[2] == VT_ERR_CRYPTO, "wrong signer: %d %s", (int)s.recv_err[2],
          s.msg[2]);
    CHECK(s.accept_err[3] == VT_OK && s.recv_err[3] == VT_ERR_FORMAT && strstr(s.msg[3], "expected"),
          "unexpected type: %d %s", (int)s.recv_err[3], s.msg[3]);
    CHECK(s.accept_err[4] == VT_OK && s.recv_err[4] == VT_ERR_LIMIT && s.secs[4] < HANG_S, "over-limit: %d %s %.3f",
          (int)s.recv_err[4], s.msg[4], s.secs[4]);
    CHECK(s.accept_err[5] == VT_OK && s.recv_err[5] == VT_OK && strstr(s.msg[5], "sequence"), "replay: %d %s",
          (int)s.recv_err[5], s.msg[5]);
    CHECK(s.accept_err[6] == VT_OK && s.recv_err[6] == VT_ERR_FORMAT, "signed malformed: %d %s", (int)s.recv_err[6],
          s.msg[6]);
    CHECK(s.accept_err[7] == VT_OK && s.recv_err[7] == VT_OK, "good client after bad ones: %s", s.msg[7]);
    CHECK(s.served == 2, "served %d clients", s.served);
    vt_buf_free(&f);
    vt_listener_close(l);
}

/* G: a peer that disconnects in the middle of a message. */
static void *srv_drop(void *arg)
{
    srv_ctx *s = arg;
    vt_conn *c = NULL;
    s->accept_err = vt_accept(s->l, &k_trainer, NULL, OK_MS, &c, NULL);
    if (s->accept_err) return NULL;
    vt_msg m;
    double t0 = now_s();
    s->recv_err[0] = vt_recv_msg(c, VT_MSG_ANY, OK_MS, NULL, &m);
    s->recv_s[0] = now_s() - t0;
    s->recv_deadline[0] = vt_proto_deadline_exceeded();
    snprintf(s->recv_msg[0], sizeof s->recv_msg[0], "%s", vt_errmsg());
    /* sending to a peer that has gone: an error, never SIGPIPE. The close_notify seen above
     * may come before the peer's socket is closed: wait until the client says it is. */
    if (!sig_wait(s->sync, OK_MS)) fprintf(stderr, "srv_drop: the client never reported its close\n");
    vt_err e = VT_OK;
    vt_msg_body leaf;
    sample(VT_MSG_LEAF, &leaf, 1);
    for (int i = 0; i < 50 && e == VT_OK; i++) e = vt_send_msg(c, VT_MSG_LEAF, &leaf, &k_trainer);
    s->recv_err[1] = e;
    vt_conn_close(c);
    return NULL;
}

static void test_drop(void)
{
    vt_listener *l;
    uint16_t port = 0;
    char addr[64];
    CHECK_OK(vt_listen("127.0.0.1:0", &l, &port));
    addr_of(port, addr, sizeof addr);
    srv_ctx s = {.l = l};
    sig_init(s.sync);
    pthread_t th;
    pthread_create(&th, NULL, srv_drop, &s);
    vt_conn *c = client(addr);
    if (c) {
        vt_buf f;
        vt_buf_init(&f);
        vt_msg_body body;
        sample(VT_MSG_VERDICT, &body, 0);
        CHECK_OK(vt_msg_encode(VT_MSG_VERDICT, &body, 0, &k_auditor, &f));
        CHECK_OK(vt_send_raw(c, f.data, f.len / 2));
        vt_buf_free(&f);
        vt_conn_close(c);
    }
    sig_post(s.sync); /* closed (or never connected) */
    pthread_join(th, NULL);
    sig_close(s.sync);
    CHECK(s.recv_err[0] == VT_ERR_IO && !s.recv_deadline[0] && s.recv_s[0] < HANG_S && strstr(s.recv_msg[0], "closed"),
          "dropped mid-message: %d %s", (int)s.recv_err[0], s.recv_msg[0]);
    CHECK(s.recv_err[1] == VT_ERR_IO, "send to a closed peer fails cleanly");
    vt_listener_close(l);
}

/* ------------------------------------------------------------------ transcripts */

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int write_bytes(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = malloc(1 << 16);
    *n = buf ? fread(buf, 1, 1 << 16, f) : 0;
    fclose(f);
    return buf;
}

/* Reads every record; returns the count, or -1 - count on an error after count records. */
static int read_records(const char *path, int verify)
{
    vt_transcript_reader *r;
    if (vt_transcript_reader_open(path, &r) != VT_OK) return -1000;
    int n = 0, eof = 0;
    vt_transcript_record rec;
    vt_err e;
    while ((e = vt_transcript_next(r, &rec, &eof)) == VT_OK && !eof) {
        if (verify) {
            vt_msg m;
            if (vt_msg_decode(rec.bytes, rec.len, rec.author_pk, NULL, &m) != VT_OK) e = VT_ERR_CRYPTO;
            vt_msg_free(&m);
            if (e) break;
        }
        n++;
    }
    vt_transcript_reader_close(r);
    return e == VT_OK ? n : -1 - n;
}

static void test_transcripts(void)
{
    char path[128], p2[128];
    snprintf(path, sizeof path, "%s/t.vttr", tmpdir);
    snprintf(p2, sizeof p2, "%s/h.vttr", tmpdir);
    vt_transcript *t;
    CHECK_OK(vt_transcript_open(path, &t));
    vt_transcript *t_again = NULL;
    CHECK(vt_transcript_open(path, &t_again) == VT_ERR_IO && !t_again, "second writer refused");
    vt_buf f;
    vt_buf_init(&f);
    for (int i = 1; i <= 3; i++) {
        vt_msg_body body;
        sample(i == 2 ? VT_MSG_INPUTS : VT_MSG_STATE_CLAIM, &body, 0);
        f.len = 0;
        const vt_keypair *kp = i == 2 ? &k_auditor : &k_trainer;
        CHECK_OK(vt_msg_encode(i == 2 ? VT_MSG_INPUTS : VT_MSG_STATE_CLAIM, &body, (uint32_t)i, kp, &f));
        CHECK_OK(vt_transcript_append(t, i == 2 ? VT_TR_RECV : VT_TR_SENT, kp->pk, f.data, f.len));
    }
    CHECK(vt_transcript_append(t, 4, k_trainer.pk, f.data, f.len) == VT_ERR_ARG, "bad direction");
    CHECK(vt_transcript_append(t, VT_TR_SENT, k_trainer.pk, f.data, 79) == VT_ERR_ARG, "record too short");
    CHECK_OK(vt_transcript_close(t));
    CHECK(read_records(path, 1) == 3, "3 records read back and verified");

    /* reopen: appends after the existing records */
    CHECK_OK(vt_transcript_open(path, &t));
    CHECK_OK(vt_transcript_append(t, VT_TR_SENT, k_trainer.pk, f.data, f.len));
    CHECK_OK(vt_transcript_close(t));
    CHECK(read_records(path, 1) == 4, "4 records after reopening");
    long size4 = file_size(path);

    /* a torn record at the end (crash mid-append): the reader reports it, reopening cuts it */
    size_t n = 0;
    uint8_t *all = read_all(path, &n);
    CHECK(all && (long)n == size4, "read transcript");
    if (!all) return;
    uint8_t *torn = malloc(n + 100);
    memcpy(torn, all, n);
    memcpy(torn + n, all + 8, 60); /* a record header and part of its message */
    CHECK(write_bytes(path, torn, n + 60) == 0, "write torn file");
    CHECK(read_records(path, 0) == -1 - 4, "torn record reported after 4 good ones");
    CHECK_OK(vt_transcript_open(path, &t));
    CHECK(file_size(path) == size4, "torn record cut on reopen");
    CHECK_OK(vt_transcript_append(t, VT_TR_RECV, k_auditor.pk, f.data, f.len));
    CHECK_OK(vt_transcript_close(t));
    CHECK(read_records(path, 0) == 5, "append after the cut");

    /* every truncation of a good file: never a crash; a clean end exactly at record
     * boundaries, otherwise an error after the complete records */
    long bounds[8];
    int nb = 0;
    for (long pos = 8; pos <= (long)n && nb < 8; pos += 37 + (long)vt_get_u32le(all + pos + 33)) {
        bounds[nb++] = pos;
        if (pos + 37 > (long)n) break;
    }
    CHECK(nb == 5 && bounds[4] == (long)n, "record boundaries: %d", nb);
    int bad = 0;
    for (size_t k = 0; k <= n; k++) {
        CHECK(write_bytes(p2, all, k) == 0, "write truncation");
        int r = read_records(p2, 1), want;
        if (k < 8) {
            want = -1000;
        } else {
            int complete = 0, at = 0;
            for (int i = 0; i < nb; i++) {
                if (bounds[i] <= (long)k) complete = i;
                if (bounds[i] == (long)k) at = 1;
            }
            want = at ? complete : -1 - complete;
        }
        if (r != want) {
            if (bad < 5) fprintf(stderr, "truncation at %zu: %d records, expected %d\n", k, r, want);
            bad++;
        }
    }
    CHECK(bad == 0, "%d truncations misread", bad);

    /* hostile headers: bad magic, version, direction, lengths (checked before allocating) */
    uint8_t h[8 + 37 + 100];
    memcpy(h, all, 8 + 37);
    h[0] = 'X';
    CHECK(write_bytes(p2, h, 8) == 0 && read_records(p2, 0) == -1000, "bad magic");
    memcpy(h, all, 8);
    h[4] = 3;
    CHECK(write_bytes(p2, h, 8) == 0 && read_records(p2, 0) == -1000, "bad version");
    memcpy(h, all, 8 + 37);
    h[8] = 7;
    CHECK(write_bytes(p2, h, 8 + 37) == 0 && read_records(p2, 0) == -1, "bad direction");
    memcpy(h, all, 8 + 37);
    vt_put_u32le(h + 8 + 33, 0xffffffffu);
    CHECK(write_bytes(p2, h, 8 + 37) == 0 && read_records(p2, 0) == -1, "4 GiB record");
    vt_put_u32le(h + 8 + 33, 79);
    memset(h + 45, 0, 100);
    CHECK(write_bytes(p2, h, 8 + 37 + 79) == 0 && read_records(p2, 0) == -1, "record below a frame's size");
    vt_put_u32le(h + 8 + 33, VT_TR_MAX_RECORD);
    CHECK(write_bytes(p2, h, 8 + 37 + 100) == 0 && read_records(p2, 0) == -1, "256 MiB record claimed, 100 bytes");
    /* the writer refuses to continue a malformed file and leaves it as it is */
    memcpy(h, all, 8 + 37);
    h[8] = 9;
    CHECK(write_bytes(p2, h, 8 + 37) == 0, "write");
    t = NULL;
    CHECK(vt_transcript_open(p2, &t) == VT_ERR_FORMAT && !t && file_size(p2) == 8 + 37, "malformed file left alone");
    CHECK(write_bytes(p2, h, 5) == 0 && vt_transcript_open(p2, &t) == VT_ERR_FORMAT, "truncated header refused");
    vt_transcript_reader *rd = NULL;
    CHECK(vt_transcript_reader_open("/nonexistent/x.vttr", &rd) == VT_ERR_IO && !rd, "missing file");
    free(torn);
    free(all);
    vt_buf_free(&f);
}

/* The service record (docs/format.md "Service record", version 2): round trip, bounds, version 1
 * refused, the accepted arbiters, a bad signature. */
static void test_service_record(void)
{
    vt_service s, p;
    memset(&s, 0, sizeof s);
    fill(s.manifest_hash, 32, 21);
    s.serial = 1700000000123456ull;
    s.expiry = 1700604800ull;
    s.n_arbiters = 2;
    memcpy(s.arbiter_pk[0], k_auditor.pk, 32);
    fill(s.arbiter_pk[1], 32, 22);
    strcpy(s.addr, "[::1]:7001");
    uint8_t r[VT_SERVICE_MAX_LEN + 8];
    size_t n = 0;
    CHECK_OK(vt_service_sign(&s, &k_trainer, r, sizeof r, &n));
    CHECK(n == VT_SERVICE_BASE_LEN + 2 * 32 + strlen(s.addr), "record size %zu", n);
    CHECK_OK(vt_service_parse(r, n, &p));
    CHECK(memcmp(p.trainer_pk, k_trainer.pk, 32) == 0 && p.serial == s.serial && p.expiry == s.expiry &&
              p.n_arbiters == 2 && strcmp(p.addr, s.addr) == 0 && memcmp(p.manifest_hash, s.manifest_hash, 32) == 0,
          "record fields");
    CHECK(vt_service_names_arbiter(&p, k_auditor.pk) && vt_service_names_arbiter(&p, s.arbiter_pk[1]) &&
              !vt_service_names_arbiter(&p, k_trainer.pk), "the accepted arbiters");
    uint8_t t[VT_SERVICE_MAX_LEN + 8];
    for (size_t i = 0; i < n; i++) { /* every bit flip: refused */
        memcpy(t, r, n);
        t[i] ^= 0x10;
        vt_err e = vt_service_parse(t, n, &p);
        CHECK(e == VT_ERR_FORMAT || e == VT_ERR_CRYPTO, "flip at %zu: %d", i, (int)e);
    }
    CHECK(vt_service_parse(r, n - 1, &p) == VT_ERR_FORMAT, "truncated record");
    memcpy(t, r, n);
    vt_put_u32le(t + 4, 1);
    CHECK(vt_service_parse(t, n, &p) == VT_ERR_FORMAT && strstr(vt_errmsg(), "version 1"), "version 1 refused: %s",
          vt_errmsg());
    memcpy(t, r, n);
    t[88] = 0;
    CHECK(vt_service_parse(t, n, &p) == VT_ERR_FORMAT, "no arbiter");
    t[88] = VT_SERVICE_MAX_ARBITERS + 1;
    CHECK(vt_service_parse(t, n, &p) == VT_ERR_FORMAT, "17 arbiters");
    s.n_arbiters = 0;
    CHECK(vt_service_sign(&s, &k_trainer, r, sizeof r, &n) == VT_ERR_ARG, "signing without an arbiter");
    s.n_arbiters = VT_SERVICE_MAX_ARBITERS;
    for (unsigned i = 0; i < VT_SERVICE_MAX_ARBITERS; i++) fill(s.arbiter_pk[i], 32, (uint8_t)(30 + i));
    memset(s.addr, 'h', VT_MSG_ADDR_MAX - 6);
    strcpy(s.addr + VT_MSG_ADDR_MAX - 6, ":65535");
    CHECK_OK(vt_service_sign(&s, &k_trainer, r, sizeof r, &n));
    CHECK(n == VT_SERVICE_MAX_LEN && n <= VT_MSG_SERVICE_MAX, "the largest record: %zu bytes", n);
    CHECK_OK(vt_service_parse(r, n, &p));
    CHECK(vt_service_names_arbiter(&p, s.arbiter_pk[15]), "the 16th arbiter");
    uint8_t n1[32], n2[32];
    CHECK_OK(vt_proto_nonce(n1));
    CHECK_OK(vt_proto_nonce(n2));
    CHECK(memcmp(n1, n2, 32) != 0, "two nonces differ");
}

int main(void)
{
    (void)vt_test_seed(1);
    CHECK_OK(vt_sign_init());
    make_key(&k_trainer, 1);
    make_key(&k_auditor, 2);
    make_key(&k_stranger, 3);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt_test_proto_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = now_s();
    test_roundtrip();
    test_truncations_and_flips();
    test_limits();
    test_strings();
    test_service_record();
    double t1 = now_s();
    test_tls_exchange();
    test_tls_pinning_failures();
    test_ipv6();
    test_deadlines();
    test_malformed_and_server_survives();
    test_drop();
    double t2 = now_s();
    test_transcripts();
    printf("codec %.2f s, loopback %.2f s, transcripts %.2f s\n", t1 - t0, t2 - t1, now_s() - t2);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return vt_test_finish("test_proto");
}
