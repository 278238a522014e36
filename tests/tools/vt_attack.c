/* vt_attack - test tool: a network attacker and a hostile client against the dispute servers,
 * on loopback (tests/e2e/attack.sh). Not part of the product; every loop is bounded in time.
 *
 *   vt_attack idle HOST:PORT N SECONDS            N TCP connections that send nothing, reopened when
 *                                                 dropped, for SECONDS; prints how many were opened
 *   vt_attack silent-tls HOST:PORT N SECONDS [KEY]  N TLS sessions under fresh self-made keys (or all
 *                                                 under KEY) that send nothing, reopened when dropped
 *   vt_attack flood HOST:PORT SECONDS             handshake flood: connect, handshake, close, repeat
 *   vt_attack query HOST:PORT TYPE [KEY]          one question (chain: Q_CHAIN over the whole run,
 *                                                 inputs[:J]: Q_INPUTS of operation J (default 1) of step 5,
 *                                                 leaf: Q_LEAF, garbage: a malformed
 *                                                 frame) under a fresh key or KEY; prints the reply
 *   vt_attack error-challenge HOST:PORT TEXT      an ERROR frame carrying TEXT in place of a CHALLENGE
 *   vt_attack challenge HOST:PORT RUN_DIR SERVICE [STEP]  a CHALLENGE of RUN_DIR's commitment with the
 *                                                 record SERVICE and a made-up state hash; prints the reply
 *   vt_attack sign-service OUT FROM_SERVICE ADDR KEY   a record for ADDR, the manifest, expiry and
 *                                                 arbiters of FROM_SERVICE, signed by KEY
 *   vt_attack count-listen PORT_FILE SECONDS      listens on a free port, prints the connections it saw
 *
 * Replies print as "reply TYPE [code N (name)]: text" or "reply none: why". */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common/vt_bytes.h"
#include "common/vt_cli.h"
#include "merkle/vt_sign.h"
#include "protocol/vt_proto.h"
#include "store/vt_commitment.h"
#include "../unit/vt_test.h"

/* A wait that should end (a handshake, a reply): a hang guard, scaled (VT_TEST_TIMEOUT_SCALE) */
#define GUARD_MS(ms) ((int)((ms) * vt_test_timeout_scale()))

static void die(const char *what)
{
    fprintf(stderr, "vt_attack: %s: %s\n", what, vt_errmsg());
    exit(2);
}

static int tcp_open(const char *addr)
{
    char host[128];
    const char *colon = strrchr(addr, ':');
    if (!colon) return -1;
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void print_reply(vt_conn *c, int deadline_ms)
{
    vt_msg m;
    if (vt_recv_msg(c, VT_MSG_ANY, deadline_ms, NULL, &m)) {
        printf("reply none: %s\n", vt_errmsg());
        return;
    }
    if (m.hdr.type == VT_MSG_ERROR)
        printf("reply ERROR code %u (%s): %s\n", m.body.error.code, vt_errc_name(m.body.error.code),
               m.body.error.message);
    else if (m.hdr.type == VT_MSG_VERDICT)
        printf("reply VERDICT loser %u reason %u: %s\n", m.body.verdict.loser, m.body.verdict.reason_code,
               m.body.verdict.reason);
    else
        printf("reply %s\n", vt_msg_type_name(m.hdr.type));
    vt_msg_free(&m);
}

static vt_conn *tls_open(const char *addr, const vt_keypair *kp)
{
    vt_conn *c = NULL;
    if (vt_connect(addr, kp, NULL, GUARD_MS(3000), &c, NULL)) return NULL;
    return c;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: see the comment at the top of tests/tools/vt_attack.c\n");
        return 64;
    }
    if (vt_sign_init()) die("libsodium");
    const char *mode = argv[1], *addr = argv[2];
    vt_keypair kp;
    if (vt_sign_keypair(&kp)) die("keypair");
    if (strcmp(mode, "idle") == 0 && argc == 5) {
        int n = atoi(argv[3]);
        double until = vt_now() + atof(argv[4]);
        int *fd = calloc((size_t)n, sizeof *fd), opened = 0;
        for (int i = 0; i < n; i++) fd[i] = -1;
        while (vt_now() < until) {
            for (int i = 0; i < n; i++) {
                if (fd[i] >= 0) {
                    char b;
                    ssize_t r = recv(fd[i], &b, 1, MSG_DONTWAIT);
                    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) close(fd[i]), fd[i] = -1;
                }
                if (fd[i] < 0 && (fd[i] = tcp_open(addr)) >= 0) opened++;
            }
            usleep(50000);
        }
        printf("idle: %d connections opened\n", opened);
        return 0;
    }
    if (strcmp(mode, "silent-tls") == 0 && (argc == 5 || argc == 6)) {
        int n = atoi(argv[3]), opened = 0, refused = 0;
        if (argc == 6 && vt_sign_read_secret_key(argv[5], &kp)) die("key");
        double until = vt_now() + atof(argv[4]);
        vt_conn **c = calloc((size_t)n, sizeof *c);
        double *next = calloc((size_t)n, sizeof *next); /* a dropped session is reopened 250 ms later */
        const char *ro = getenv("VT_ATTACK_REOPEN_MS"); /* or as set (attack.sh emfile: slow churn) */
        double reopen = ro && atof(ro) > 0 ? atof(ro) / 1000.0 : 0.25;
        while (vt_now() < until) {
            for (int i = 0; i < n && vt_now() < until; i++) {
                if (c[i]) {
                    vt_msg m;
                    if (vt_recv_msg(c[i], VT_MSG_ANY, 0, NULL, &m) == VT_OK) {
                        refused += m.hdr.type == VT_MSG_ERROR;
                        vt_msg_free(&m);
                        vt_conn_close(c[i]), c[i] = NULL, next[i] = vt_now() + reopen;
                    } else if (!vt_proto_deadline_exceeded()) {
                        vt_conn_close(c[i]), c[i] = NULL, next[i] = vt_now() + reopen;
                    }
                }
                if (!c[i] && vt_now() >= next[i]) {
                    vt_keypair k = kp;
                    if (argc == 5 && vt_sign_keypair(&k)) die("keypair");
                    if ((c[i] = tls_open(addr, &k))) opened++;
                }
            }
            usleep(20000);
        }
        for (int i = 0; i < n; i++) vt_conn_close(c[i]);
        printf("silent-tls: %d sessions opened, %d refused with an ERROR\n", opened, refused);
        return 0;
    }
    if (strcmp(mode, "flood") == 0 && argc == 4) {
        double until = vt_now() + atof(argv[3]);
        int n = 0;
        while (vt_now() < until) {
            vt_conn *c = tls_open(addr, &kp);
            n += c != NULL;
            vt_conn_close(c);
        }
        printf("flood: %d handshakes\n", n);
        return 0;
    }
    if (strcmp(mode, "query") == 0 && (argc == 4 || argc == 5)) {
        if (argc == 5 && vt_sign_read_secret_key(argv[4], &kp)) die("key");
        vt_conn *c = tls_open(addr, &kp);
        if (!c) die("connect");
        vt_err e = VT_OK;
        if (strcmp(argv[3], "chain") == 0) {
            vt_msg_q_chain q = {0, 1000000, 5};
            e = vt_send_msg(c, VT_MSG_Q_CHAIN, &q, &kp);
        } else if (strcmp(argv[3], "inputs") == 0 || strncmp(argv[3], "inputs:", 7) == 0) {
            vt_msg_q_inputs q = {5, argv[3][6] == ':' ? (uint32_t)atoi(argv[3] + 7) : 1};
            e = vt_send_msg(c, VT_MSG_Q_INPUTS, &q, &kp);
        } else if (strcmp(argv[3], "leaf") == 0) {
            vt_msg_q_step q = {1};
            e = vt_send_msg(c, VT_MSG_Q_LEAF, &q, &kp);
        } else if (strcmp(argv[3], "garbage") == 0) {
            uint8_t junk[96];
            memset(junk, 0x5a, sizeof junk);
            memcpy(junk, "VTPM", 4);
            e = vt_send_raw(c, junk, sizeof junk);
        } else {
            fprintf(stderr, "vt_attack: unknown question %s\n", argv[3]);
            return 64;
        }
        if (e) die("send");
        print_reply(c, GUARD_MS(5000));
        vt_conn_close(c);
        return 0;
    }
    if (strcmp(mode, "error-challenge") == 0 && argc == 4) {
        vt_conn *c = tls_open(addr, &kp);
        if (!c) die("connect");
        vt_msg_error er;
        memset(&er, 0, sizeof er);
        er.code = 1;
        snprintf(er.message, sizeof er.message, "%s", argv[3]);
        if (vt_send_msg(c, VT_MSG_ERROR, &er, &kp)) die("send");
        print_reply(c, GUARD_MS(5000));
        vt_conn_close(c);
        return 0;
    }
    if (strcmp(mode, "challenge") == 0 && (argc == 5 || argc == 6)) {
        static vt_msg_challenge ch;
        char path[4096];
        vt_store_commitment_path(argv[3], path, sizeof path);
        FILE *f = fopen(path, "rb");
        if (!f || fread(ch.commitment, 1, sizeof ch.commitment, f) != sizeof ch.commitment) die("commitment");
        fclose(f);
        size_t n = 0;
        if (vt_service_read_file(argv[4], ch.service, sizeof ch.service, &n)) die("service record");
        ch.service_len = (uint16_t)n;
        memcpy(ch.auditor_pk, kp.pk, 32);
        ch.claimed_step = argc == 6 ? (uint64_t)atoll(argv[5]) : 4;
        memset(ch.auditor_state_hash, 0x42, 32);
        if (vt_proto_nonce(ch.nonce)) die("nonce");
        vt_conn *c = tls_open(addr, &kp);
        if (!c) die("connect");
        memcpy(ch.arbiter_pk, vt_conn_peer_pk(c), 32); /* the arbiter it is made before */
        if (vt_send_msg(c, VT_MSG_CHALLENGE, &ch, &kp)) die("send");
        /* answer nothing: a verdict comes when the game needs no auditor answer (or by deadline) */
        print_reply(c, GUARD_MS(120000));
        vt_conn_close(c);
        return 0;
    }
    if (strcmp(mode, "sign-service") == 0 && argc == 6) {
        uint8_t rec[VT_SERVICE_MAX_LEN], out[VT_SERVICE_MAX_LEN];
        size_t n = 0;
        vt_service sv;
        if (vt_service_read_file(argv[3], rec, sizeof rec, &n) || vt_service_parse(rec, n, &sv)) die("service record");
        if (vt_sign_read_secret_key(argv[5], &kp)) die("key");
        snprintf(sv.addr, sizeof sv.addr, "%s", argv[4]);
        sv.serial++;
        if (vt_service_sign(&sv, &kp, out, sizeof out, &n) ||
            vt_write_file_atomic(argv[2], out, n))
            die("sign");
        return 0;
    }
    if (strcmp(mode, "count-listen") == 0 && argc == 4) {
        vt_listener *l = NULL;
        uint16_t port = 0;
        if (vt_listen("127.0.0.1:0", &l, &port)) die("listen");
        char num[16];
        int k = snprintf(num, sizeof num, "%u\n", (unsigned)port);
        if (vt_write_file_atomic(argv[2], num, (size_t)k)) die("port file");
        double until = vt_now() + atof(argv[3]);
        int n = 0;
        while (vt_now() < until) {
            vt_conn *c = NULL;
            vt_err e = vt_accept(l, &kp, NULL, 200, &c, NULL);
            if (!e || !vt_proto_deadline_exceeded() || strstr(vt_errmsg(), "handshake")) n++;
            vt_conn_close(c);
        }
        printf("count-listen: %d connections\n", n);
        vt_listener_close(l);
        return 0;
    }
    fprintf(stderr, "vt_attack: bad arguments for %s\n", mode);
    return 64;
}
