/* vt_rogue - test tool: a dishonest arbiter (issue 21, findings 3 and 9), for tests/verdict.sh.
 * Not part of the product.
 *
 *   vt_rogue resign IN OUT KEY [rename]
 *       copies transcript IN to OUT with every record the arbiter wrote (sent, notes) re-signed by
 *       KEY (its author key KEY's); with "rename" the VERDICT also names KEY as its arbiter
 *   vt_rogue rogue-game TRAINER_ADDR RUN_DIR SERVICE KEY OUT
 *       an auditor that is its own arbiter (KEY both): a CHALLENGE of RUN_DIR's commitment naming
 *       KEY as the arbiter, Q_SERVICE sent to the trainer at TRAINER_ADDR (which does not accept
 *       KEY), and a VERDICT against the trainer signed by KEY, all in transcript OUT; prints the
 *       trainer's reply
 *   vt_rogue fake-arbiter PORT_FILE KEY N
 *       listens on a free port (written to PORT_FILE), and answers each of N challenges at once with
 *       a VERDICT against the auditor signed by KEY that names everything of the challenge but its
 *       nonce (a verdict replayed from another game)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/vt_bytes.h"
#include "common/vt_cli.h"
#include "common/vt_hash.h"
#include "game/vt_game.h"
#include "merkle/vt_sign.h"
#include "protocol/vt_proto.h"
#include "vt_test.h"

/* A wait that should end (a handshake, a reply): a hang guard, scaled (VT_TEST_TIMEOUT_SCALE) */
#define GUARD_MS(ms) ((int)((ms) * vt_test_timeout_scale()))
#include "store/vt_commitment.h"

static void die(const char *what)
{
    fprintf(stderr, "vt_rogue: %s: %s\n", what, vt_errmsg());
    exit(2);
}

static void append_msg(vt_transcript *t, int dir, int type, const void *body, uint32_t seq, const vt_keypair *kp)
{
    vt_buf b;
    vt_buf_init(&b);
    if (vt_msg_encode(type, body, seq, kp, &b) || vt_transcript_append(t, dir, kp->pk, b.data, b.len)) die("append");
    vt_buf_free(&b);
}

static int cmd_resign(const char *in, const char *out, const char *key, int rename)
{
    vt_keypair kp;
    if (vt_sign_read_secret_key(key, &kp)) die("key");
    vt_transcript_reader *r = NULL;
    vt_transcript *w = NULL;
    if (vt_transcript_reader_open(in, &r)) die("transcript");
    remove(out);
    if (vt_transcript_open(out, &w)) die("output");
    int n = 0;
    for (;;) {
        vt_transcript_record rec;
        int eof = 0;
        if (vt_transcript_next(r, &rec, &eof)) die("read");
        if (eof) break;
        if (rec.dir == VT_TR_RECV) {
            if (vt_transcript_append(w, rec.dir, rec.author_pk, rec.bytes, rec.len)) die("append");
            continue;
        }
        vt_msg m;
        if (vt_msg_decode(rec.bytes, rec.len, NULL, NULL, &m)) die("decode");
        if (rename && m.hdr.type == VT_MSG_VERDICT) memcpy(m.body.verdict.arbiter_pk, kp.pk, 32);
        append_msg(w, rec.dir, m.hdr.type, &m.body, m.hdr.seq, &kp);
        vt_msg_free(&m);
        n++;
    }
    vt_transcript_reader_close(r);
    if (vt_transcript_close(w)) die("close");
    printf("resign: %d records re-signed%s\n", n, rename ? ", the verdict renamed" : "");
    return 0;
}

static void read_challenge(const char *run_dir, const char *service, const vt_keypair *kp, vt_msg_challenge *ch)
{
    char path[4096];
    memset(ch, 0, sizeof *ch);
    vt_store_commitment_path(run_dir, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f || fread(ch->commitment, 1, sizeof ch->commitment, f) != sizeof ch->commitment) die("commitment");
    fclose(f);
    size_t n = 0;
    if (vt_service_read_file(service, ch->service, sizeof ch->service, &n)) die("service record");
    ch->service_len = (uint16_t)n;
    memcpy(ch->auditor_pk, kp->pk, 32);
    memcpy(ch->arbiter_pk, kp->pk, 32); /* its own arbiter */
    ch->claimed_step = 4;
    memset(ch->auditor_state_hash, 0x42, 32);
    if (vt_proto_nonce(ch->nonce)) die("nonce");
}

static int cmd_rogue_game(const char *addr, const char *run_dir, const char *service, const char *key, const char *out)
{
    vt_keypair kp;
    if (vt_sign_read_secret_key(key, &kp)) die("key");
    static vt_msg_challenge ch;
    read_challenge(run_dir, service, &kp, &ch);
    vt_transcript *t = NULL;
    remove(out);
    if (vt_transcript_open(out, &t)) die("transcript");
    append_msg(t, VT_TR_RECV, VT_MSG_CHALLENGE, &ch, 0, &kp); /* as the arbiter "received" it */
    vt_msg_note gn;
    memset(&gn, 0, sizeof gn);
    gn.kind = VT_NOTE_GAME;
    gn.v[0] = 30000, gn.v[1] = 300000;
    snprintf(gn.text, sizeof gn.text, "a rogue arbiter's game");
    append_msg(t, VT_TR_NOTE, VT_MSG_NOTE, &gn, 0, &kp);
    vt_conn *c = NULL;
    if (vt_connect(addr, &kp, ch.commitment + 80, GUARD_MS(3000), &c, NULL)) die("connect to the trainer");
    vt_conn_set_transcript(c, t);
    vt_msg_q_service q;
    vt_commitment_bytes_hash(ch.commitment, q.commitment_hash);
    memcpy(q.auditor_nonce, ch.nonce, 32);
    if (vt_send_msg(c, VT_MSG_Q_SERVICE, &q, &kp)) fprintf(stderr, "vt_rogue: send: %s\n", vt_errmsg());
    vt_msg m;
    if (vt_recv_msg(c, VT_MSG_ANY, GUARD_MS(5000), NULL, &m) == VT_OK) {
        if (m.hdr.type == VT_MSG_ERROR)
            printf("trainer reply ERROR code %u (%s): %s\n", m.body.error.code, vt_errc_name(m.body.error.code),
                   m.body.error.message);
        else
            printf("trainer reply %s\n", vt_msg_type_name(m.hdr.type));
        vt_msg_free(&m);
    } else {
        printf("trainer reply none: %s\n", vt_errmsg());
    }
    vt_conn_set_transcript(c, NULL);
    vt_conn_close(c);
    vt_msg_verdict v;
    memset(&v, 0, sizeof v);
    vt_commitment_bytes_hash(ch.commitment, v.commitment_hash);
    v.loser = VT_LOSER_TRAINER;
    v.reason_code = VT_REASON_NO_ANSWER;
    snprintf(v.reason, sizeof v.reason, "the trainer refused to answer Q_SERVICE");
    vt_game_bind_verdict(&v, &ch, kp.pk, NULL, (uint64_t)time(NULL));
    append_msg(t, VT_TR_SENT, VT_MSG_VERDICT, &v, 1, &kp);
    if (vt_transcript_close(t)) die("close");
    return 0;
}

static int cmd_fake_arbiter(const char *port_file, const char *key, int n)
{
    vt_keypair kp;
    if (vt_sign_read_secret_key(key, &kp)) die("key");
    vt_listener *l = NULL;
    uint16_t port = 0;
    if (vt_listen("127.0.0.1:0", &l, &port)) die("listen");
    char num[16];
    int k = snprintf(num, sizeof num, "%u\n", (unsigned)port);
    if (vt_write_file_atomic(port_file, num, (size_t)k)) die("port file");
    for (int i = 0; i < n; i++) {
        vt_conn *c = NULL;
        if (vt_accept(l, &kp, NULL, 120000, &c, NULL)) {
            fprintf(stderr, "vt_rogue: accept: %s\n", vt_errmsg());
            continue;
        }
        vt_msg m;
        if (vt_recv_msg(c, VT_MSG_CHALLENGE, GUARD_MS(10000), NULL, &m) == VT_OK) {
            vt_msg_verdict v;
            memset(&v, 0, sizeof v);
            vt_commitment_bytes_hash(m.body.challenge.commitment, v.commitment_hash);
            v.loser = VT_LOSER_AUDITOR;
            v.reason_code = VT_REASON_WRONG_OUTPUT;
            snprintf(v.reason, sizeof v.reason, "a verdict from another game");
            vt_game_bind_verdict(&v, &m.body.challenge, kp.pk, NULL, (uint64_t)time(NULL));
            memset(v.auditor_nonce, 0x77, 32); /* another game's */
            if (vt_send_msg(c, VT_MSG_VERDICT, &v, &kp)) fprintf(stderr, "vt_rogue: send: %s\n", vt_errmsg());
            printf("fake-arbiter: answered a challenge\n");
            vt_msg_free(&m);
        }
        vt_conn_close(c);
    }
    vt_listener_close(l);
    return 0;
}

int main(int argc, char **argv)
{
    if (vt_sign_init()) die("libsodium");
    if (argc >= 5 && argc <= 6 && strcmp(argv[1], "resign") == 0)
        return cmd_resign(argv[2], argv[3], argv[4], argc == 6 && strcmp(argv[5], "rename") == 0);
    if (argc == 7 && strcmp(argv[1], "rogue-game") == 0) return cmd_rogue_game(argv[2], argv[3], argv[4], argv[5], argv[6]);
    if (argc == 5 && strcmp(argv[1], "fake-arbiter") == 0) return cmd_fake_arbiter(argv[2], argv[3], atoi(argv[4]));
    fprintf(stderr, "usage: see the comment at the top of tests/vt_rogue.c\n");
    return 64;
}
