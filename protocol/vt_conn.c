/* vt_conn.c - transport of the dispute game: TCP + TLS 1.3 (OpenSSL) with Ed25519
 * identities, deadline-bounded message I/O (docs/protocol.md). The admission gate is in
 * vt_gate.c, the transcripts in vt_transcript.c. */
#include "vt_conn_int.h"

#include "../common/vt_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* ------------------------------------------------------------------ deadlines */

static _Thread_local int deadline_hit_;

int vt_proto_deadline_exceeded(void) { return deadline_hit_; }

int vt_conn_dead(const vt_conn *c) { return !c || c->ssl_broken || c->rx_failed || c->tx_failed; }

vt_err vt_proto_nonce(uint8_t out[VT_MSG_NONCE_LEN])
{
    VT_RETURN_ERROR_IF(!out, VT_ERR_ARG, "vt_proto_nonce: NULL argument");
    VT_RETURN_ERROR_IF(RAND_bytes(out, (int)VT_MSG_NONCE_LEN) != 1, VT_ERR_INTERNAL, "no random bytes for a nonce");
    return VT_OK;
}

int64_t vt_proto_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Absolute deadline in ns on the monotonic clock, or -1 for none. */
static int64_t deadline_from_ms(int ms) { return ms < 0 ? -1 : vt_proto_now_ns() + (int64_t)ms * 1000000; }

static vt_err deadline_error(const char *what)
{
    deadline_hit_ = 1;
    return vt_set_error(VT_ERR_IO, "deadline exceeded: %s", what);
}

/* Waits until fd is ready for ev or the deadline passes. */
static vt_err wait_fd(int fd, short ev, int64_t deadline, const char *what)
{
    for (;;) {
        int tmo = -1;
        if (deadline >= 0) {
            int64_t left = deadline - vt_proto_now_ns();
            if (left <= 0) return deadline_error(what);
            int64_t ms = (left + 999999) / 1000000;
            tmo = ms > INT_MAX ? INT_MAX : (int)ms;
        }
        struct pollfd p = {.fd = fd, .events = ev, .revents = 0};
        int r = poll(&p, 1, tmo);
        if (r > 0) return VT_OK; /* readiness or an error condition: the caller's I/O reports it */
        if (r == 0) continue;    /* re-check the deadline */
        if (errno == EINTR) continue;
        VT_RETURN_ERROR(VT_ERR_IO, "%s: poll: %s", what, strerror(errno));
    }
}

/* ------------------------------------------------------------------ socket BIO
 * OpenSSL's own socket BIO writes with write(2), which raises SIGPIPE when the peer has
 * gone. Library code must not touch signal dispositions, so this BIO uses send(2) with
 * MSG_NOSIGNAL. Sockets are non-blocking; EAGAIN becomes a retry (SSL_ERROR_WANT_*). */

static int bio_sock_write(BIO *b, const char *buf, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(b);
        return -1;
    }
    return (int)n;
}

static int bio_sock_read(BIO *b, char *buf, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (len <= 0) return 0;
    ssize_t n = recv(fd, buf, (size_t)len, 0);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_read(b);
        return -1;
    }
    return (int)n; /* 0: end of stream */
}

static long bio_sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_sock_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static int bio_sock_destroy(BIO *b)
{
    (void)b; /* the connection owns and closes the descriptor */
    return 1;
}

static BIO_METHOD *bio_meth_;
static pthread_once_t bio_once_ = PTHREAD_ONCE_INIT;

static void bio_meth_init(void)
{
    int idx = BIO_get_new_index();
    if (idx == -1) return;
    BIO_METHOD *m = BIO_meth_new(idx | BIO_TYPE_SOURCE_SINK, "vt-socket");
    if (!m) return;
    if (!BIO_meth_set_write(m, bio_sock_write) || !BIO_meth_set_read(m, bio_sock_read) ||
        !BIO_meth_set_ctrl(m, bio_sock_ctrl) || !BIO_meth_set_create(m, bio_sock_create) ||
        !BIO_meth_set_destroy(m, bio_sock_destroy)) {
        BIO_meth_free(m);
        return;
    }
    bio_meth_ = m; /* lives for the process */
}

/* ------------------------------------------------------------------ OpenSSL errors */

static const char *ssl_err_text(char *buf, size_t n)
{
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, buf, n);
    else
        snprintf(buf, n, "no detail");
    ERR_clear_error();
    return buf;
}

/* ------------------------------------------------------------------ connections */

/* Certificate check (replaces chain verification): the leaf must be a self-signed
 * certificate with an Ed25519 key, equal to the expected key when one is pinned. The
 * TLS handshake itself (CertificateVerify) proves the peer holds the private key. */
static int verify_cb(X509_STORE_CTX *xs, void *arg)
{
    vt_conn *c = arg;
    X509 *cert = X509_STORE_CTX_get0_cert(xs);
    EVP_PKEY *pk = cert ? X509_get0_pubkey(cert) : NULL;
    uint8_t raw[VT_SIGN_PK_LEN];
    size_t len = sizeof raw;
    const char *why = NULL;
    if (!cert)
        why = "peer presented no certificate";
    else if (!pk || EVP_PKEY_id(pk) != EVP_PKEY_ED25519)
        why = "peer certificate key is not Ed25519";
    else if (EVP_PKEY_get_raw_public_key(pk, raw, &len) != 1 || len != VT_SIGN_PK_LEN)
        why = "cannot read the peer's Ed25519 key";
    else if (X509_verify(cert, pk) != 1)
        why = "peer certificate is not validly self-signed";
    else if (c->have_expected && CRYPTO_memcmp(raw, c->expected_pk, VT_SIGN_PK_LEN) != 0)
        why = "peer key does not match the expected (pinned) key";
    if (why) {
        snprintf(c->verify_msg, sizeof c->verify_msg, "%s", why);
        X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    memcpy(c->peer_pk, raw, VT_SIGN_PK_LEN);
    c->peer_ok = 1;
    return 1;
}

/* In-memory identity: the Ed25519 key from the libsodium seed and a self-signed
 * X.509 v3 certificate with fixed validity (2000-01-01 .. 9999-12-31). */
static vt_err make_identity(const vt_keypair *kp, EVP_PKEY **pkey_out, X509 **x_out)
{
    char eb[256];
    *pkey_out = NULL;
    *x_out = NULL;
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, kp->sk, VT_SIGN_SEED_LEN);
    VT_RETURN_ERROR_IF(!pkey, VT_ERR_CRYPTO, "TLS identity: cannot load the Ed25519 key: %s",
                       ssl_err_text(eb, sizeof eb));
    uint8_t pub[VT_SIGN_PK_LEN];
    size_t plen = sizeof pub;
    if (EVP_PKEY_get_raw_public_key(pkey, pub, &plen) != 1 || plen != VT_SIGN_PK_LEN ||
        memcmp(pub, kp->pk, VT_SIGN_PK_LEN) != 0) {
        EVP_PKEY_free(pkey);
        VT_RETURN_ERROR(VT_ERR_ARG, "TLS identity: the key pair's seed does not derive its public key");
    }
    char fpr[VT_SIGN_FPR_HEX_LEN + 1];
    char cn[8 + VT_SIGN_FPR_HEX_LEN];
    if (vt_sign_fingerprint(kp->pk, fpr) != VT_OK) {
        EVP_PKEY_free(pkey);
        return VT_ERR_CRYPTO;
    }
    snprintf(cn, sizeof cn, "vt-%s", fpr);
    X509 *x = X509_new();
    X509_NAME *name = x ? X509_get_subject_name(x) : NULL;
    int ok = x && name && X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
             ASN1_TIME_set_string_X509(X509_getm_notBefore(x), "20000101000000Z") &&
             ASN1_TIME_set_string_X509(X509_getm_notAfter(x), "99991231235959Z") &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) &&
             X509_set_issuer_name(x, name) && X509_set_pubkey(x, pkey) && X509_sign(x, pkey, NULL) > 0;
    if (!ok) {
        X509_free(x);
        EVP_PKEY_free(pkey);
        VT_RETURN_ERROR(VT_ERR_CRYPTO, "TLS identity: cannot build the certificate: %s", ssl_err_text(eb, sizeof eb));
    }
    *pkey_out = pkey;
    *x_out = x;
    return VT_OK;
}

void vt_conn_close(vt_conn *c)
{
    if (!c) return;
    if (c->ssl) {
        if (!c->ssl_broken && SSL_is_init_finished(c->ssl)) {
            ERR_clear_error();
            (void)SSL_shutdown(c->ssl); /* sends close_notify; does not wait for the peer's */
        }
        SSL_free(c->ssl);
    }
    SSL_CTX_free(c->ctx);
    if (c->fd >= 0) close(c->fd);
    ERR_clear_error();
    free(c);
}

/* Takes ownership of fd (closed on failure). */
vt_err vt_conn_new(int fd, int server, const vt_keypair *kp, const uint8_t *expected_pk, vt_conn **out)
{
    char eb[256];
    *out = NULL;
    pthread_once(&bio_once_, bio_meth_init);
    if (!bio_meth_) {
        close(fd);
        VT_RETURN_ERROR(VT_ERR_CRYPTO, "TLS: cannot create the socket BIO method");
    }
    vt_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    c->fd = fd;
    c->send_timeout_ms = 60000;
    memcpy(c->my_pk, kp->pk, VT_SIGN_PK_LEN);
    if (expected_pk) {
        memcpy(c->expected_pk, expected_pk, VT_SIGN_PK_LEN);
        c->have_expected = 1;
    }
    EVP_PKEY *pkey = NULL;
    X509 *cert = NULL;
    vt_err e = make_identity(kp, &pkey, &cert);
    if (e != VT_OK) {
        vt_conn_close(c);
        return e;
    }
    ERR_clear_error();
    c->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    int ok = c->ctx && SSL_CTX_set_min_proto_version(c->ctx, TLS1_3_VERSION) &&
             SSL_CTX_set_max_proto_version(c->ctx, TLS1_3_VERSION) && SSL_CTX_use_certificate(c->ctx, cert) == 1 &&
             SSL_CTX_use_PrivateKey(c->ctx, pkey) == 1 && SSL_CTX_check_private_key(c->ctx) == 1;
    X509_free(cert);
    EVP_PKEY_free(pkey);
    if (ok) {
        SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        SSL_CTX_set_cert_verify_callback(c->ctx, verify_cb, c);
        SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(c->ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_mode(c->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
        ok = SSL_CTX_set_num_tickets(c->ctx, 0) == 1;
    }
    if (ok) {
        c->ssl = SSL_new(c->ctx);
        BIO *bio = c->ssl ? BIO_new(bio_meth_) : NULL;
        ok = bio != NULL;
        if (ok) {
            BIO_set_data(bio, (void *)(intptr_t)fd);
            SSL_set_bio(c->ssl, bio, bio);
            if (server)
                SSL_set_accept_state(c->ssl);
            else
                SSL_set_connect_state(c->ssl);
        }
    }
    if (!ok) {
        e = vt_set_error(VT_ERR_CRYPTO, "TLS setup: %s", ssl_err_text(eb, sizeof eb));
        vt_conn_close(c);
        return e;
    }
    *out = c;
    return VT_OK;
}

/* Turns a failed SSL call into an error (and marks the TLS session broken). */
vt_err vt_conn_ssl_failure(vt_conn *c, int ret, const char *what)
{
    char eb[256];
    int se = SSL_get_error(c->ssl, ret);
    int err_no = errno;
    c->ssl_broken = 1;
    if (se == SSL_ERROR_ZERO_RETURN) {
        ERR_clear_error();
        return vt_set_error(VT_ERR_IO, "%s: connection closed by peer", what);
    }
    if (se == SSL_ERROR_SYSCALL) {
        int queued = ERR_peek_error() != 0;
        if (!queued && (ret == 0 || err_no == 0 || err_no == ECONNRESET || err_no == EPIPE)) {
            ERR_clear_error();
            return vt_set_error(VT_ERR_IO, "%s: connection closed by peer%s", what,
                                err_no == ECONNRESET ? " (reset)" : "");
        }
        if (!queued) return vt_set_error(VT_ERR_IO, "%s: %s", what, strerror(err_no));
    }
    unsigned long le = ERR_peek_last_error();
    if (le && ERR_GET_LIB(le) == ERR_LIB_SSL && ERR_GET_REASON(le) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        return vt_set_error(VT_ERR_IO, "%s: connection closed by peer", what);
    }
    return vt_set_error(VT_ERR_IO, "%s: TLS error: %s", what, ssl_err_text(eb, sizeof eb));
}

/* One step of the handshake: *done = 1 once the peer is authenticated; otherwise *ev says
 * what to wait for. */
vt_err vt_conn_handshake_step(vt_conn *c, int *done, short *ev)
{
    *done = 0;
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        VT_RETURN_ERROR_IF(!c->peer_ok || !SSL_get0_peer_certificate(c->ssl), VT_ERR_CRYPTO,
                           "TLS handshake: the peer was not authenticated");
        VT_RETURN_ERROR_IF(SSL_version(c->ssl) != TLS1_3_VERSION, VT_ERR_CRYPTO, "TLS handshake: not TLS 1.3");
        *done = 1;
        return VT_OK;
    }
    int se = SSL_get_error(c->ssl, r);
    if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE) {
        *ev = se == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return VT_OK;
    }
    if (c->verify_msg[0]) {
        c->ssl_broken = 1;
        ERR_clear_error();
        VT_RETURN_ERROR(VT_ERR_CRYPTO, "TLS handshake: %s", c->verify_msg);
    }
    return vt_conn_ssl_failure(c, r, "TLS handshake");
}

static vt_err handshake(vt_conn *c, int64_t deadline)
{
    for (;;) {
        int done = 0;
        short ev = POLLIN;
        VT_FORWARD_IF_ERROR(vt_conn_handshake_step(c, &done, &ev));
        if (done) return VT_OK;
        VT_FORWARD_IF_ERROR(wait_fd(c->fd, ev, deadline, "TLS handshake"));
    }
}

/* Reads exactly n bytes; *got = bytes read even on failure. */
static vt_err ssl_read_full(vt_conn *c, uint8_t *buf, size_t n, int64_t deadline, size_t *got)
{
    *got = 0;
    while (*got < n) {
        size_t k = 0;
        ERR_clear_error();
        int r = SSL_read_ex(c->ssl, buf + *got, n - *got, &k);
        if (r == 1) {
            *got += k;
            continue;
        }
        int se = SSL_get_error(c->ssl, r);
        if (se == SSL_ERROR_WANT_READ)
            VT_FORWARD_IF_ERROR(wait_fd(c->fd, POLLIN, deadline, "receiving a message"));
        else if (se == SSL_ERROR_WANT_WRITE)
            VT_FORWARD_IF_ERROR(wait_fd(c->fd, POLLOUT, deadline, "receiving a message"));
        else
            return vt_conn_ssl_failure(c, r, "receiving a message");
    }
    return VT_OK;
}

static vt_err ssl_write_full(vt_conn *c, const uint8_t *p, size_t n, int64_t deadline)
{
    size_t off = 0;
    while (off < n) {
        size_t k = 0;
        ERR_clear_error();
        int r = SSL_write_ex(c->ssl, p + off, n - off, &k);
        if (r == 1) {
            off += k;
            continue;
        }
        int se = SSL_get_error(c->ssl, r);
        if (se == SSL_ERROR_WANT_WRITE)
            VT_FORWARD_IF_ERROR(wait_fd(c->fd, POLLOUT, deadline, "sending a message"));
        else if (se == SSL_ERROR_WANT_READ)
            VT_FORWARD_IF_ERROR(wait_fd(c->fd, POLLIN, deadline, "sending a message"));
        else
            return vt_conn_ssl_failure(c, r, "sending a message");
    }
    return VT_OK;
}

/* ------------------------------------------------------------------ addresses */

/* Splits "HOST:PORT" / "[V6]:PORT" into host and port strings. */
static vt_err split_addr(const char *addr, char *host, size_t hn, char *port, size_t pn)
{
    VT_RETURN_ERROR_IF(!addr, VT_ERR_ARG, "address: NULL");
    const char *colon = strrchr(addr, ':');
    VT_RETURN_ERROR_IF(!colon, VT_ERR_ARG, "address \"%s\": expected HOST:PORT", addr);
    const char *h = addr;
    size_t hl = (size_t)(colon - addr);
    if (h[0] == '[') {
        VT_RETURN_ERROR_IF(hl < 3 || h[hl - 1] != ']', VT_ERR_ARG, "address \"%s\": bad [IPv6] host", addr);
        h++;
        hl -= 2;
    }
    VT_RETURN_ERROR_IF(hl >= hn, VT_ERR_ARG, "address \"%s\": host too long", addr);
    const char *ps = colon + 1;
    size_t pl = strlen(ps);
    VT_RETURN_ERROR_IF(pl == 0 || pl >= pn || pl > 5 || strspn(ps, "0123456789") != pl || atoi(ps) > 65535,
                       VT_ERR_ARG, "address \"%s\": bad port", addr);
    memcpy(host, h, hl);
    host[hl] = 0;
    memcpy(port, ps, pl + 1);
    return VT_OK;
}

void vt_proto_tune_socket(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

vt_err vt_listen(const char *addr, vt_listener **out, uint16_t *port)
{
    VT_RETURN_ERROR_IF(!out, VT_ERR_ARG, "vt_listen: NULL argument");
    *out = NULL;
    char host[256], ps[8];
    VT_FORWARD_IF_ERROR(split_addr(addr, host, sizeof host, ps, sizeof ps));
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gr = getaddrinfo(host[0] ? host : NULL, ps, &hints, &res);
    VT_RETURN_ERROR_IF(gr != 0, VT_ERR_IO, "listen on %s: %s", addr, gai_strerror(gr));
    int fd = -1, last_errno = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0) break;
        last_errno = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    VT_RETURN_ERROR_IF(fd < 0, VT_ERR_IO, "listen on %s: %s", addr, strerror(last_errno));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        int en = errno;
        close(fd);
        VT_RETURN_ERROR(VT_ERR_IO, "listen on %s: getsockname: %s", addr, strerror(en));
    }
    vt_listener *l = malloc(sizeof *l);
    if (!l) {
        close(fd);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    l->fd = fd;
    if (port) {
        if (ss.ss_family == AF_INET)
            *port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            *port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        else
            *port = 0;
    }
    *out = l;
    return VT_OK;
}

void vt_listener_close(vt_listener *l)
{
    if (!l) return;
    close(l->fd);
    free(l);
}

vt_err vt_accept(vt_listener *l, const vt_keypair *kp, const uint8_t *expected_peer_pk, int deadline_ms,
                 vt_conn **out, uint8_t peer_pk[VT_SIGN_PK_LEN])
{
    deadline_hit_ = 0;
    VT_RETURN_ERROR_IF(!l || !kp || !out, VT_ERR_ARG, "vt_accept: NULL argument");
    *out = NULL;
    int64_t deadline = deadline_from_ms(deadline_ms);
    int fd;
    for (;;) {
        fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) break;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            VT_FORWARD_IF_ERROR(wait_fd(l->fd, POLLIN, deadline, "waiting for a connection"));
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        VT_RETURN_ERROR(VT_ERR_IO, "accept: %s", strerror(errno));
    }
    vt_proto_tune_socket(fd);
    vt_conn *c;
    VT_FORWARD_IF_ERROR(vt_conn_new(fd, 1, kp, expected_peer_pk, &c));
    /* the handshake gets its own deadline, counted from the TCP connection */
    vt_err e = handshake(c, deadline_from_ms(deadline_ms));
    if (e != VT_OK) {
        vt_conn_close(c);
        return e;
    }
    if (peer_pk) memcpy(peer_pk, c->peer_pk, VT_SIGN_PK_LEN);
    *out = c;
    return VT_OK;
}

static vt_err tcp_connect(const char *addr, int64_t deadline, int *fd_out)
{
    char host[256], ps[8];
    VT_FORWARD_IF_ERROR(split_addr(addr, host, sizeof host, ps, sizeof ps));
    VT_RETURN_ERROR_IF(!host[0], VT_ERR_ARG, "address \"%s\": no host", addr);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int gr = getaddrinfo(host, ps, &hints, &res);
    VT_RETURN_ERROR_IF(gr != 0, VT_ERR_IO, "connect to %s: %s", addr, gai_strerror(gr));
    vt_err e = vt_set_error(VT_ERR_IO, "connect to %s: no address", addr);
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { /* our own resources, not the peer: VT_ERR_INTERNAL, so no one is blamed for it */
            int en = errno;
            e = vt_set_error(en == EMFILE || en == ENFILE || en == ENOBUFS || en == ENOMEM ? VT_ERR_INTERNAL : VT_ERR_IO,
                             "connect to %s: socket: %s", addr, strerror(en));
            continue;
        }
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (r != 0 && (errno == EINPROGRESS || errno == EINTR)) {
            e = wait_fd(fd, POLLOUT, deadline, "connecting");
            if (e == VT_OK) {
                int soerr = 0;
                socklen_t sl = sizeof soerr;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) soerr = errno;
                if (soerr == 0)
                    r = 0;
                else
                    e = vt_set_error(VT_ERR_IO, "connect to %s: %s", addr, strerror(soerr));
            }
        } else if (r != 0) {
            e = vt_set_error(VT_ERR_IO, "connect to %s: %s", addr, strerror(errno));
        }
        if (r == 0) {
            freeaddrinfo(res);
            vt_proto_tune_socket(fd);
            *fd_out = fd;
            return VT_OK;
        }
        close(fd);
        if (deadline_hit_) break;
    }
    freeaddrinfo(res);
    return e;
}

vt_err vt_connect(const char *addr, const vt_keypair *kp, const uint8_t *expected_peer_pk, int deadline_ms,
                  vt_conn **out, uint8_t peer_pk[VT_SIGN_PK_LEN])
{
    deadline_hit_ = 0;
    VT_RETURN_ERROR_IF(!addr || !kp || !out, VT_ERR_ARG, "vt_connect: NULL argument");
    *out = NULL;
    int64_t deadline = deadline_from_ms(deadline_ms);
    int fd;
    VT_FORWARD_IF_ERROR(tcp_connect(addr, deadline, &fd));
    vt_conn *c;
    VT_FORWARD_IF_ERROR(vt_conn_new(fd, 0, kp, expected_peer_pk, &c));
    vt_err e = handshake(c, deadline);
    if (e != VT_OK) {
        vt_conn_close(c);
        return e;
    }
    if (peer_pk) memcpy(peer_pk, c->peer_pk, VT_SIGN_PK_LEN);
    *out = c;
    return VT_OK;
}

const uint8_t *vt_conn_peer_pk(const vt_conn *c) { return c->peer_pk; }

void vt_conn_set_send_timeout(vt_conn *c, int ms) { c->send_timeout_ms = ms; }

void vt_conn_set_send_seq(vt_conn *c, uint32_t seq)
{
    c->send_seq = seq;
    c->send_seq_used_up = 0;
}

void vt_conn_set_transcript(vt_conn *c, vt_transcript *t) { c->tr = t; }

vt_err vt_send_raw(vt_conn *c, const uint8_t *p, size_t n)
{
    deadline_hit_ = 0;
    VT_RETURN_ERROR_IF(!c || (!p && n), VT_ERR_ARG, "vt_send_raw: NULL argument");
    VT_RETURN_ERROR_IF(c->tx_failed || c->ssl_broken, VT_ERR_IO, "connection is unusable after an earlier error");
    vt_err e = ssl_write_full(c, p, n, deadline_from_ms(c->send_timeout_ms));
    if (e != VT_OK) c->tx_failed = 1;
    return e;
}

vt_err vt_send_msg(vt_conn *c, int type, const void *body, const vt_keypair *kp)
{
    deadline_hit_ = 0;
    VT_RETURN_ERROR_IF(!c || !body || !kp, VT_ERR_ARG, "vt_send_msg: NULL argument");
    VT_RETURN_ERROR_IF(memcmp(kp->pk, c->my_pk, VT_SIGN_PK_LEN) != 0, VT_ERR_ARG,
                       "vt_send_msg: signing key differs from the connection's identity");
    VT_RETURN_ERROR_IF(c->tx_failed || c->ssl_broken, VT_ERR_IO, "connection is unusable after an earlier error");
    VT_RETURN_ERROR_IF(c->send_seq_used_up, VT_ERR_LIMIT, "sequence numbers used up on this connection");
    vt_buf b;
    vt_buf_init(&b);
    vt_err e = vt_msg_encode(type, body, c->send_seq, kp, &b);
    /* write-ahead: the transcript holds every message that may have reached the peer */
    if (e == VT_OK && c->tr) e = vt_transcript_append(c->tr, VT_TR_SENT, c->my_pk, b.data, b.len);
    if (e == VT_OK) {
        e = ssl_write_full(c, b.data, b.len, deadline_from_ms(c->send_timeout_ms));
        if (e != VT_OK) c->tx_failed = 1;
    }
    if (e == VT_OK) {
        if (c->send_seq == UINT32_MAX)
            c->send_seq_used_up = 1;
        else
            c->send_seq++;
    }
    vt_buf_free(&b);
    return e;
}

vt_err vt_recv_msg(vt_conn *c, int expected_type, int deadline_ms, const vt_msg_limits *limits, vt_msg *msg)
{
    deadline_hit_ = 0;
    VT_RETURN_ERROR_IF(!c || !msg, VT_ERR_ARG, "vt_recv_msg: NULL argument");
    memset(msg, 0, sizeof *msg);
    VT_RETURN_ERROR_IF(expected_type < 0 || expected_type >= VT_MSG_TYPE_COUNT_, VT_ERR_ARG,
                       "vt_recv_msg: bad expected type %d", expected_type);
    VT_RETURN_ERROR_IF(c->rx_failed || c->ssl_broken, VT_ERR_IO,
                       "connection is unusable for receiving after an earlier error");
    int64_t deadline = deadline_from_ms(deadline_ms);
    uint8_t hdr[VT_MSG_HEADER_LEN];
    size_t got = 0;
    vt_err e = ssl_read_full(c, hdr, sizeof hdr, deadline, &got);
    if (e != VT_OK) {
        if (!(deadline_hit_ && got == 0)) c->rx_failed = 1;
        return e;
    }
    c->rx_failed = 1; /* until the whole message has been accepted */
    vt_msg_header h;
    VT_FORWARD_IF_ERROR(vt_msg_parse_header(hdr, limits, &h));
    VT_RETURN_ERROR_IF(expected_type != VT_MSG_ANY && h.type != expected_type && h.type != VT_MSG_ERROR,
                       VT_ERR_FORMAT, "expected a %s message, received %s", vt_msg_type_name(expected_type),
                       vt_msg_type_name(h.type));
    size_t total = (size_t)VT_MSG_OVERHEAD + h.body_len;
    /* grow with the bytes actually received: a peer that claims a large body and then
     * stalls costs at most twice what it sent */
    size_t cap = total < 65536 ? total : 65536;
    uint8_t *buf = malloc(cap);
    VT_RETURN_ERROR_IF(!buf, VT_ERR_NOMEM, "out of memory receiving a message");
    memcpy(buf, hdr, sizeof hdr);
    size_t have = sizeof hdr;
    while (have < total) {
        if (have == cap) {
            size_t ncap = cap > total / 2 ? total : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory receiving a %u-byte message", (unsigned)total);
            }
            buf = nb;
            cap = ncap;
        }
        e = ssl_read_full(c, buf + have, cap - have, deadline, &got);
        have += got;
        if (e != VT_OK) {
            free(buf);
            return e;
        }
    }
    e = vt_msg_decode(buf, total, c->peer_pk, limits, msg);
    if (e == VT_OK && c->have_peer_seq && msg->hdr.seq <= c->peer_seq)
        e = vt_set_error(VT_ERR_FORMAT, "%s message: sequence number %u not above the previous %u (replay?)",
                         vt_msg_type_name(msg->hdr.type), (unsigned)msg->hdr.seq, (unsigned)c->peer_seq);
    if (e == VT_OK && c->tr) e = vt_transcript_append(c->tr, VT_TR_RECV, c->peer_pk, buf, total);
    if (e != VT_OK) {
        vt_msg_free(msg);
        free(buf);
        return e;
    }
    c->have_peer_seq = 1;
    c->peer_seq = msg->hdr.seq;
    msg->raw = buf;
    msg->raw_len = total;
    c->rx_failed = 0;
    return VT_OK;
}

int vt_conn_wait_readable(vt_conn *c, int ms)
{
    if (!c || c->fd < 0) return 1;
    if (c->ssl && SSL_pending(c->ssl) > 0) return 1;
    struct pollfd p = {.fd = c->fd, .events = POLLIN, .revents = 0};
    int r;
    do r = poll(&p, 1, ms < 0 ? 0 : ms);
    while (r < 0 && errno == EINTR);
    return r != 0; /* ready, an error condition, or poll's own failure: the receive reports it */
}

void vt_conn_shutdown(vt_conn *c)
{
    if (c && c->fd >= 0) (void)shutdown(c->fd, SHUT_RDWR);
}

void vt_conn_refuse(vt_conn *c, const vt_keypair *kp, int code, const char *text)
{
    if (!c) return;
    if (kp && !c->tx_failed && !c->ssl_broken && SSL_is_init_finished(c->ssl)) {
        vt_msg_error er;
        memset(&er, 0, sizeof er);
        er.code = (uint16_t)code;
        snprintf(er.message, sizeof er.message, "%s", text ? text : vt_errc_name(code));
        for (char *p = er.message; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
        int keep = c->send_timeout_ms;
        c->send_timeout_ms = 1000;
        vt_transcript *tr = c->tr;
        c->tr = NULL; /* a refusal is not part of a game */
        if (vt_send_msg(c, VT_MSG_ERROR, &er, kp) != VT_OK) { /* best effort: the peer may be gone */ }
        c->tr = tr;
        c->send_timeout_ms = keep;
    }
    vt_conn_close(c);
}
