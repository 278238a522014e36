/* vt_conn_int.h - private to protocol/: the connection and listener structures and the few
 * transport helpers that the admission gate (vt_gate.c) shares with the transport (vt_conn.c). */
#ifndef VT_CONN_INT_H
#define VT_CONN_INT_H

#include <stdint.h>

#include <openssl/ssl.h>

#include "vt_proto.h"

struct vt_listener {
    int fd;
};

struct vt_conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    int ssl_broken; /* a fatal TLS error happened: no shutdown */
    int rx_failed;  /* the incoming stream is out of step: no more receiving */
    int tx_failed;  /* a send failed part-way: no more sending */
    uint8_t my_pk[VT_SIGN_PK_LEN];
    uint8_t peer_pk[VT_SIGN_PK_LEN];
    uint8_t expected_pk[VT_SIGN_PK_LEN];
    int have_expected;
    int peer_ok;
    char verify_msg[192];
    int send_timeout_ms;
    uint32_t send_seq;
    int send_seq_used_up;
    int have_peer_seq;
    uint32_t peer_seq;
    vt_transcript *tr;
};

/* Now on the monotonic clock, in ns. */
int64_t vt_proto_now_ns(void);
/* TCP_NODELAY on a connected socket. */
void vt_proto_tune_socket(int fd);
/* Takes ownership of fd (closed on failure). */
vt_err vt_conn_new(int fd, int server, const vt_keypair *kp, const uint8_t *expected_pk, vt_conn **out);
/* Turns a failed SSL call into an error (and marks the TLS session broken). */
vt_err vt_conn_ssl_failure(vt_conn *c, int ret, const char *what);
/* One step of the handshake: *done = 1 once the peer is authenticated; otherwise *ev says
 * what to wait for. */
vt_err vt_conn_handshake_step(vt_conn *c, int *done, short *ev);

#endif
