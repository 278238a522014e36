/* vt_rogue - test tool: a dishonest arbiter (issue 21, findings 3 and 9), for tests/e2e/verdict.sh.
 * Not part of the product.
 *
 *   vt_rogue resign IN OUT KEY [rename]
 *       copies transcript IN to OUT with every record the arbiter wrote (sent, notes) re-signed by
 *       KEY (its author key KEY's); with "rename" the VERDICT also names KEY as its arbiter
 *   vt_rogue rogue-game TRAINER_ADDR RUN_DIR SERVICE KEY OUT
 *       an auditor that is its own arbiter (KEY both): a CHALLENGE of RUN_DIR's commitment naming
 *       KEY as the arbiter, Q_SERVICE (answered: the record is public) then Q_COMMITMENT sent to the
 *       trainer at TRAINER_ADDR (which does not accept KEY: ERROR unauthorized), and a VERDICT against
 *       the trainer signed by KEY, all in transcript OUT; prints the trainer's replies
 *   vt_rogue edit IN OUT KEY ACTION [ARG]
 *       copies transcript IN to OUT, every record the arbiter wrote re-signed by KEY (the arbiter's own key:
 *       the same signatures), with one edit (issue 37, "time sanity" of arbiter check):
 *         append-verdict flip|same  a second VERDICT after the recorded one: against the other party, or
 *                                   the same verdict again
 *         append-note               a NOTE (a connection attempt) after the verdict
 *         verdict-time DELTA        the verdict's time set to the signing time of the challenge's service
 *                                   record plus DELTA seconds (an arbiter whose clock was behind: DELTA < 0)
 *         late-failure              the trainer's last NO_ANSWER note moved to end 1 s after the expiry of the
 *                                   challenge's service record (an arbiter that held the trainer past it)
 *   vt_rogue list IN
 *       one line per record: offset, direction, type, the author key's first 8 hex digits
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
#include "../unit/vt_test.h"

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

/* Copies transcript IN to the writer w: the received records verbatim, every record the arbiter wrote
 * decoded, handed to edit (NULL: none) with its index in the transcript, and re-signed by kp. Returns
 * the sequence number after the last re-signed record; *n gets how many were re-signed. */
typedef void edit_fn(void *ctx, long i, vt_msg *m);
static uint32_t copy_resigned(const char *in, vt_transcript *w, const vt_keypair *kp, edit_fn *edit, void *ctx, int *n)
{
    vt_transcript_reader *r = NULL;
    if (vt_transcript_reader_open(in, &r)) die("transcript");
    uint32_t seq = 0;
    *n = 0;
    for (long i = 0;; i++) {
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
        if (edit) edit(ctx, i, &m);
        append_msg(w, rec.dir, m.hdr.type, &m.body, m.hdr.seq, kp);
        seq = m.hdr.seq + 1;
        vt_msg_free(&m);
        (*n)++;
    }
    vt_transcript_reader_close(r);
    return seq;
}

static vt_transcript *open_output(const char *out)
{
    vt_transcript *w = NULL;
    remove(out);
    if (vt_transcript_open(out, &w)) die("output");
    return w;
}

static void rename_verdict(void *ctx, long i, vt_msg *m)
{
    (void)i;
    if (m->hdr.type == VT_MSG_VERDICT) memcpy(m->body.verdict.arbiter_pk, ((const vt_keypair *)ctx)->pk, 32);
}

static int cmd_resign(const char *in, const char *out, const char *key, int rename)
{
    vt_keypair kp;
    if (vt_sign_read_secret_key(key, &kp)) die("key");
    vt_transcript *w = open_output(out);
    int n = 0;
    copy_resigned(in, w, &kp, rename ? rename_verdict : NULL, &kp, &n);
    if (vt_transcript_close(w)) die("close");
    printf("resign: %d records re-signed%s\n", n, rename ? ", the verdict renamed" : "");
    return 0;
}

/* What the edit needs to know of the transcript before it copies it. */
typedef struct {
    int have_v;
    uint64_t v_time, signed_at, expiry;
    long last_na; /* the index of the trainer's last NO_ANSWER note (-1: none) */
    vt_msg_verdict v;
} tr_facts;

static void read_facts(const char *in, tr_facts *f)
{
    memset(f, 0, sizeof *f);
    f->last_na = -1;
    vt_transcript_reader *r = NULL;
    if (vt_transcript_reader_open(in, &r)) die("transcript");
    for (long i = 0;; i++) {
        vt_transcript_record rec;
        int eof = 0;
        if (vt_transcript_next(r, &rec, &eof)) die("read");
        if (eof) break;
        vt_msg m;
        if (vt_msg_decode(rec.bytes, rec.len, NULL, NULL, &m)) continue;
        vt_service sv;
        if (m.hdr.type == VT_MSG_CHALLENGE &&
            vt_service_parse(m.body.challenge.service, m.body.challenge.service_len, &sv) == VT_OK)
            f->signed_at = vt_service_signed_at(&sv), f->expiry = sv.expiry;
        if (m.hdr.type == VT_MSG_VERDICT && !f->have_v) f->have_v = 1, f->v = m.body.verdict, f->v_time = m.body.verdict.time;
        if (m.hdr.type == VT_MSG_NOTE && m.body.note.kind == VT_NOTE_NO_ANSWER && m.body.note.party == VT_ROLE_TRAINER)
            f->last_na = i;
        vt_msg_free(&m);
    }
    vt_transcript_reader_close(r);
    if (!f->have_v || !f->signed_at) die("the transcript holds no verdict or no valid service record");
}

typedef struct {
    const tr_facts *f;
    int set_time, late;
    const char *arg;
} edit_ctx;

static void apply_edit(void *ctx, long i, vt_msg *m)
{
    const edit_ctx *e = ctx;
    const tr_facts *f = e->f;
    if (e->set_time && m->hdr.type == VT_MSG_VERDICT) m->body.verdict.time = (uint64_t)((int64_t)f->signed_at + atoll(e->arg));
    if (e->late && i == f->last_na) { /* the note ends 1 s after the expiry, in ms since the verdict's time */
        uint64_t end_ms = f->expiry + 1 > f->v_time ? (f->expiry + 1 - f->v_time) * 1000u : 0;
        m->body.note.v[0] = end_ms > m->body.note.v[1] ? end_ms - m->body.note.v[1] : 0;
    }
}

static int cmd_edit(const char *in, const char *out, const char *key, const char *act, const char *arg)
{
    vt_keypair kp;
    if (vt_sign_read_secret_key(key, &kp)) die("key");
    tr_facts f;
    read_facts(in, &f);
    int append = strcmp(act, "append-verdict") == 0 || strcmp(act, "append-note") == 0;
    int set_time = strcmp(act, "verdict-time") == 0, late = strcmp(act, "late-failure") == 0;
    if (!append && !set_time && !late) {
        fprintf(stderr, "vt_rogue: unknown edit %s\n", act);
        return 64;
    }
    if ((set_time || strcmp(act, "append-verdict") == 0) && !arg) die("the edit needs an argument");
    if (late && f.last_na < 0) die("no NO_ANSWER note of the trainer");
    edit_ctx ec = {&f, set_time, late, arg};
    vt_transcript *w = open_output(out);
    int n = 0;
    uint32_t seq = copy_resigned(in, w, &kp, apply_edit, &ec, &n);
    if (strcmp(act, "append-verdict") == 0) {
        vt_msg_verdict v = f.v;
        if (strcmp(arg, "flip") == 0) {
            v.loser = v.loser == VT_LOSER_AUDITOR ? VT_LOSER_TRAINER : VT_LOSER_AUDITOR;
            snprintf(v.reason, sizeof v.reason, "a second verdict, against the other party");
        }
        append_msg(w, VT_TR_SENT, VT_MSG_VERDICT, &v, seq, &kp);
    } else if (strcmp(act, "append-note") == 0) {
        vt_msg_note nt;
        memset(&nt, 0, sizeof nt);
        nt.kind = VT_NOTE_CONNECT, nt.party = VT_ROLE_TRAINER, nt.code = 1, nt.n = 99;
        snprintf(nt.text, sizeof nt.text, "127.0.0.1:1: a note written after the verdict");
        append_msg(w, VT_TR_NOTE, VT_MSG_NOTE, &nt, seq, &kp);
    }
    if (vt_transcript_close(w)) die("close");
    printf("edit: %s%s%s\n", act, arg ? " " : "", arg ? arg : "");
    return 0;
}

static int cmd_list(const char *in)
{
    vt_transcript_reader *r = NULL;
    if (vt_transcript_reader_open(in, &r)) die("transcript");
    for (;;) {
        vt_transcript_record rec;
        int eof = 0;
        if (vt_transcript_next(r, &rec, &eof)) die("read");
        if (eof) break;
        vt_msg_header h;
        int ok = rec.len >= VT_MSG_HEADER_LEN && vt_msg_parse_header(rec.bytes, NULL, &h) == VT_OK;
        char hex[65];
        vt_hex(rec.author_pk, 32, hex);
        printf("%llu %s %s %.8s\n", (unsigned long long)rec.offset,
               rec.dir == VT_TR_SENT ? "sent" : rec.dir == VT_TR_RECV ? "recv" : "note", ok ? vt_msg_type_name(h.type) : "?",
               hex);
    }
    vt_transcript_reader_close(r);
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
    /* the record is public (Q_SERVICE, answered to any key); the game's questions are not */
    uint8_t tnonce[32], *tn = NULL;
    vt_msg_q_step qc = {0};
    for (int k = 0; k < 2; k++) {
        if (vt_send_msg(c, k ? VT_MSG_Q_COMMITMENT : VT_MSG_Q_SERVICE, k ? (const void *)&qc : (const void *)&q, &kp))
            fprintf(stderr, "vt_rogue: send: %s\n", vt_errmsg());
        vt_msg m;
        if (vt_recv_msg(c, VT_MSG_ANY, GUARD_MS(5000), NULL, &m) == VT_OK) {
            if (m.hdr.type == VT_MSG_ERROR)
                printf("trainer reply ERROR code %u (%s): %s\n", m.body.error.code, vt_errc_name(m.body.error.code),
                       m.body.error.message);
            else
                printf("trainer reply %s\n", vt_msg_type_name(m.hdr.type));
            if (m.hdr.type == VT_MSG_SERVICE) memcpy(tnonce, m.body.service.trainer_nonce, 32), tn = tnonce;
            vt_msg_free(&m);
        } else {
            printf("trainer reply none: %s\n", vt_errmsg());
        }
    }
    vt_conn_set_transcript(c, NULL);
    vt_conn_close(c);
    vt_msg_verdict v;
    memset(&v, 0, sizeof v);
    vt_commitment_bytes_hash(ch.commitment, v.commitment_hash);
    v.loser = VT_LOSER_TRAINER;
    v.reason_code = VT_REASON_NO_ANSWER;
    snprintf(v.reason, sizeof v.reason, "the trainer refused to answer Q_COMMITMENT");
    vt_game_bind_verdict(&v, &ch, kp.pk, tn, (uint64_t)time(NULL));
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
    if (argc >= 6 && argc <= 7 && strcmp(argv[1], "edit") == 0)
        return cmd_edit(argv[2], argv[3], argv[4], argv[5], argc == 7 ? argv[6] : NULL);
    if (argc == 3 && strcmp(argv[1], "list") == 0) return cmd_list(argv[2]);
    if (argc == 5 && strcmp(argv[1], "fake-arbiter") == 0) return cmd_fake_arbiter(argv[2], argv[3], atoi(argv[4]));
    fprintf(stderr, "usage: see the comment at the top of tests/tools/vt_rogue.c\n");
    return 64;
}
