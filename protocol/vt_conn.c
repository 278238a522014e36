/* vt_conn.c - transport of the dispute game: TCP + TLS 1.3 (OpenSSL) with Ed25519
 * identities, deadline-bounded message I/O, and transcripts (docs/protocol.md). */
#include "vt_proto.h"

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
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

vt_err vt_proto_nonce(uint8_t out[VT_MSG_NONCE_LEN])
{
    VT_RETURN_ERROR_IF(!out, VT_ERR_ARG, "vt_proto_nonce: NULL argument");
    VT_RETURN_ERROR_IF(RAND_bytes(out, (int)VT_MSG_NONCE_LEN) != 1, VT_ERR_INTERNAL, "no random bytes for a nonce");
    return VT_OK;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Absolute deadline in ns on the monotonic clock, or -1 for none. */
static int64_t deadline_from_ms(int ms) { return ms < 0 ? -1 : now_ns() + (int64_t)ms * 1000000; }

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
            int64_t left = deadline - now_ns();
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
static vt_err conn_new(int fd, int server, const vt_keypair *kp, const uint8_t *expected_pk, vt_conn **out)
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
static vt_err ssl_failure(vt_conn *c, int ret, const char *what)
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
static vt_err handshake_step(vt_conn *c, int *done, short *ev)
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
    return ssl_failure(c, r, "TLS handshake");
}

static vt_err handshake(vt_conn *c, int64_t deadline)
{
    for (;;) {
        int done = 0;
        short ev = POLLIN;
        VT_FORWARD_IF_ERROR(handshake_step(c, &done, &ev));
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
            return ssl_failure(c, r, "receiving a message");
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
            return ssl_failure(c, r, "sending a message");
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

static void tune_socket(int fd)
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
    tune_socket(fd);
    vt_conn *c;
    VT_FORWARD_IF_ERROR(conn_new(fd, 1, kp, expected_peer_pk, &c));
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
            tune_socket(fd);
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
    VT_FORWARD_IF_ERROR(conn_new(fd, 0, kp, expected_peer_pk, &c));
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

/* ------------------------------------------------------------------ gate
 * The accept loop of a server (docs/protocol.md §6a): one thread, poll-based non-blocking
 * TLS handshakes and first messages, bounded in number overall and per address, each with
 * its own deadline. Nothing is handed to the server before the peer is authenticated. */

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

typedef struct {
    vt_conn *c; /* NULL until the peer's first bytes arrive (an idle socket costs a descriptor only) */
    int fd;
    int64_t t0, deadline;
    int stage; /* -1 nothing received yet, 0 TLS handshake, 1 first message */
    short ev;
    uint8_t *buf;
    size_t have, need;
    char ip[64], peer[80];
} gate_slot;

typedef struct {
    vt_listener *l;
    const vt_keypair *kp;
    vt_gate_opts o;
    const vt_gate_cb *cb;
    gate_slot *s;
    int n, cap;
    int reserve_fd;
    vt_msg_limits lim;
} gate;

static void gate_log(gate *g, const char *peer, int code, const char *reason)
{
    if (g->cb->reject) g->cb->reject(g->cb->ctx, peer, code, reason);
}

static void gate_drop(gate *g, int i, int refuse_code, const char *reason)
{
    gate_slot *s = &g->s[i];
    gate_log(g, s->peer, refuse_code, reason);
    if (!s->c)
        close(s->fd);
    else if (refuse_code && s->stage == 1)
        vt_conn_refuse(s->c, g->kp, refuse_code, reason);
    else
        vt_conn_close(s->c);
    free(s->buf);
    g->s[i] = g->s[--g->n];
}

/* The connection to drop for room (of address ip, when given): the oldest of those that have
 * sent nothing, else the oldest of those that completed their handshake and have not sent their
 * first message (an honest client sends it at once), else the oldest handshaking one. "Sent
 * nothing" is asked of the socket now, not of the slot's stage: a connection accepted in the same
 * burst as the flood that makes room has its ClientHello queued but not yet read, and counts as
 * handshaking (else an honest client that shares an address with a flood of idle sockets, as on
 * loopback or behind a NAT, is dropped as idle). */
static int gate_rank(const gate_slot *s)
{
    if (s->stage == 1) return 1;
    if (s->stage == 0) return 0;
    char b;
    ssize_t r = recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r > 0 ? 0 : 2; /* bytes waiting: handshaking; none, end of stream or an error: idle */
}

static int gate_oldest(gate *g, const char *ip)
{
    int best = -1, rb = -1;
    for (int i = 0; i < g->n; i++) {
        if (ip && strcmp(g->s[i].ip, ip) != 0) continue;
        int ri = gate_rank(&g->s[i]);
        if (best < 0 || ri > rb || (ri == rb && g->s[i].t0 < g->s[best].t0)) best = i, rb = ri;
    }
    return best;
}

/* Hands slot i over (authenticated, first message read if asked) and removes it. */
static void gate_admit(gate *g, int i, vt_msg *first)
{
    gate_slot s = g->s[i];
    g->s[i] = g->s[--g->n];
    free(s.buf);
    vt_gate_peer p = {s.c, s.peer, s.ip, first};
    g->cb->admit(g->cb->ctx, &p);
}

/* Progress of slot i on readiness or at once; the slot may be gone afterwards. */
void vt_log_rejection_code(const char *who, const char *peer, int code, const char *reason)
{
    char line[700];
    if (code)
        snprintf(line, sizeof line, "%.600s (ERROR %d, %s)", reason, code, vt_errc_name(code));
    else
        snprintf(line, sizeof line, "%.690s", reason);
    vt_log_rejection(who, peer, line);
}

/* Closes every pending connection and the reserve descriptor. */
static void gate_free(gate *g)
{
    for (int i = 0; i < g->n; i++) {
        if (g->s[i].c)
            vt_conn_close(g->s[i].c);
        else
            close(g->s[i].fd);
        free(g->s[i].buf);
    }
    free(g->s);
    if (g->reserve_fd >= 0) close(g->reserve_fd);
}

static void gate_progress(gate *g, int i)
{
    gate_slot *s = &g->s[i];
    char why[320];
    if (s->stage < 0) { /* the first bytes: only now the TLS state is made */
        if (conn_new(s->fd, 1, g->kp, NULL, &s->c) != VT_OK) {
            s->fd = -1; /* closed by conn_new */
            snprintf(why, sizeof why, "%s", vt_errmsg());
            gate_log(g, s->peer, 0, why);
            g->s[i] = g->s[--g->n];
            return;
        }
        s->stage = 0;
    }
    if (s->stage == 0) {
        int done = 0;
        vt_err e = handshake_step(s->c, &done, &s->ev);
        if (e) {
            snprintf(why, sizeof why, "%s", vt_errmsg());
            gate_drop(g, i, 0, why);
            return;
        }
        if (!done) return;
        if (g->o.first_ms <= 0) {
            gate_admit(g, i, NULL);
            return;
        }
        s->stage = 1;
        s->deadline = now_ns() + (int64_t)g->o.first_ms * 1000000;
        s->need = VT_MSG_HEADER_LEN;
        s->have = 0;
        s->buf = malloc(VT_MSG_HEADER_LEN);
        if (!s->buf) {
            gate_drop(g, i, VT_ERRC_INTERNAL, "out of memory");
            return;
        }
    }
    for (;;) {
        size_t k = 0;
        ERR_clear_error();
        int r = SSL_read_ex(s->c->ssl, s->buf + s->have, s->need - s->have, &k);
        if (r != 1) {
            int se = SSL_get_error(s->c->ssl, r);
            if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE) {
                s->ev = se == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
                return;
            }
            (void)ssl_failure(s->c, r, "before its first message");
            snprintf(why, sizeof why, "%s", vt_errmsg());
            gate_drop(g, i, 0, why);
            return;
        }
        s->have += k;
        if (s->have < s->need) continue;
        if (s->need == VT_MSG_HEADER_LEN) {
            vt_msg_header h;
            vt_err e = vt_msg_parse_header(s->buf, &g->lim, &h);
            if (!e && h.type != g->o.first_type) {
                snprintf(why, sizeof why, "the first message must be a %s, not %s", vt_msg_type_name(g->o.first_type),
                         vt_msg_type_name(h.type));
                gate_drop(g, i, VT_ERRC_UNEXPECTED, why);
                return;
            }
            if (e) {
                snprintf(why, sizeof why, "first message: %s", vt_errmsg());
                gate_drop(g, i, e == VT_ERR_LIMIT ? VT_ERRC_LIMIT : VT_ERRC_MALFORMED, why);
                return;
            }
            s->need = VT_MSG_OVERHEAD + h.body_len;
            uint8_t *nb = realloc(s->buf, s->need);
            if (!nb) {
                gate_drop(g, i, VT_ERRC_INTERNAL, "out of memory");
                return;
            }
            s->buf = nb;
            continue;
        }
        vt_msg m;
        vt_err e = vt_msg_decode(s->buf, s->need, s->c->peer_pk, &g->lim, &m);
        if (e) {
            snprintf(why, sizeof why, "first message: %s", vt_errmsg());
            gate_drop(g, i, VT_ERRC_MALFORMED, why);
            return;
        }
        s->c->have_peer_seq = 1;
        s->c->peer_seq = m.hdr.seq;
        m.raw = s->buf;
        m.raw_len = s->need;
        s->buf = NULL;
        gate_admit(g, i, &m);
        vt_msg_free(&m);
        return;
    }
}

static void peer_names(const struct sockaddr_storage *ss, socklen_t sl, char *ip, size_t ipn, char *peer, size_t pn)
{
    char host[64] = "?", serv[16] = "?";
    if (getnameinfo((const struct sockaddr *)ss, sl, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(host, sizeof host, "?");
        snprintf(serv, sizeof serv, "?");
    }
    snprintf(ip, ipn, "%s", host);
    snprintf(peer, pn, ss->ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

/* Accepts what is waiting (at most 32 connections). Returns the ns to pause the listener. */
static int64_t gate_accept(gate *g)
{
    for (int k = 0; k < 32; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(g->l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE) {
                if (g->n > 0) { /* make room: the oldest pending connection goes */
                    gate_drop(g, gate_oldest(g, NULL), 0, "descriptor limit reached: the oldest pending connection is dropped");
                    continue;
                }
                /* nothing of ours to drop: take the connection off the queue with the reserved
                 * descriptor and close it, then pause the listener (no busy loop) */
                char ip[64], peer[80] = "?";
                if (g->reserve_fd >= 0) {
                    close(g->reserve_fd);
                    g->reserve_fd = -1;
                    sl = sizeof ss;
                    int f2 = accept4(g->l->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
                    if (f2 >= 0) {
                        peer_names(&ss, sl, ip, sizeof ip, peer, sizeof peer);
                        close(f2);
                    }
                    g->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                }
                gate_log(g, peer, 0, "descriptor limit reached (sessions hold every descriptor): the new connection is "
                                     "dropped, accepting paused 100 ms");
                return 100 * 1000000LL;
            }
            char m[128];
            snprintf(m, sizeof m, "accept: %s (accepting paused 100 ms)", strerror(errno));
            gate_log(g, "?", 0, m);
            return 100 * 1000000LL;
        }
        gate_slot ns;
        memset(&ns, 0, sizeof ns);
        peer_names(&ss, sl, ns.ip, sizeof ns.ip, ns.peer, sizeof ns.peer);
        if (g->n >= g->cap)
            gate_drop(g, gate_oldest(g, NULL), 0, "too many pending connections: the oldest is dropped");
        int same = 0;
        for (int i = 0; i < g->n; i++) same += strcmp(g->s[i].ip, ns.ip) == 0;
        if (same >= g->o.max_pending_per_ip)
            gate_drop(g, gate_oldest(g, ns.ip), 0, "too many pending connections from this address: the oldest is dropped");
        tune_socket(fd);
        ns.fd = fd;
        ns.stage = -1;
        ns.t0 = now_ns();
        ns.deadline = ns.t0 + (int64_t)g->o.handshake_ms * 1000000;
        ns.ev = POLLIN;
        g->s[g->n++] = ns;
    }
    return 0;
}

vt_err vt_gate_run(vt_listener *l, const vt_keypair *kp, const vt_gate_opts *opts, const vt_gate_cb *cb)
{
    VT_RETURN_ERROR_IF(!l || !kp || !cb || !cb->admit, VT_ERR_ARG, "vt_gate_run: NULL argument");
    gate g;
    memset(&g, 0, sizeof g);
    g.l = l, g.kp = kp, g.cb = cb;
    if (opts) g.o = *opts;
    if (g.o.max_pending <= 0) g.o.max_pending = VT_GATE_DEFAULT_PENDING;
    if (g.o.max_pending_per_ip <= 0) g.o.max_pending_per_ip = VT_GATE_DEFAULT_PENDING_PER_IP;
    if (g.o.handshake_ms <= 0) g.o.handshake_ms = VT_GATE_DEFAULT_HANDSHAKE_MS;
    if (g.o.reserve_fds <= 0) g.o.reserve_fds = 64;
    VT_RETURN_ERROR_IF(g.o.first_ms > 0 && (g.o.first_type <= 0 || g.o.first_type >= VT_MSG_TYPE_COUNT_), VT_ERR_ARG,
                       "vt_gate_run: bad first message type %d", g.o.first_type);
    if (g.o.first_ms > 0) g.lim.max_body[g.o.first_type] = g.o.first_max;
    /* leave descriptors to the sessions: the gate never holds more than the limit allows */
    g.cap = g.o.max_pending;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        long room = (long)rl.rlim_cur - g.o.reserve_fds;
        if (room < 4) room = 4;
        if (g.cap > room) g.cap = (int)room;
    }
    g.s = calloc((size_t)g.cap, sizeof *g.s);
    struct pollfd *pf = calloc((size_t)g.cap + 1, sizeof *pf);
    if (!g.s || !pf) {
        free(g.s);
        free(pf);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    g.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int64_t pause_until = 0;
    while (!(cb->stop && cb->stop(cb->ctx))) {
        int64_t now = now_ns();
        for (int i = 0; i < g.n;) {
            if (g.s[i].deadline > now) {
                i++;
                continue;
            }
            char why[160];
            if (g.s[i].stage <= 0)
                snprintf(why, sizeof why, "no TLS handshake within %d ms", g.o.handshake_ms);
            else
                snprintf(why, sizeof why, "no %s within %d ms of the handshake", vt_msg_type_name(g.o.first_type),
                         g.o.first_ms);
            gate_drop(&g, i, g.s[i].stage == 1 ? VT_ERRC_TIMEOUT : 0, why);
        }
        int64_t wake = now + 100 * 1000000LL;
        for (int i = 0; i < g.n; i++)
            if (g.s[i].deadline < wake) wake = g.s[i].deadline;
        int np = 0, listening = now >= pause_until;
        if (listening) {
            pf[np].fd = l->fd, pf[np].events = POLLIN, pf[np].revents = 0;
            np++;
        } else if (pause_until < wake) {
            wake = pause_until;
        }
        int base = np, nslots = g.n;
        for (int i = 0; i < nslots; i++) {
            pf[np].fd = g.s[i].fd, pf[np].events = g.s[i].ev, pf[np].revents = 0;
            np++;
        }
        int64_t left = wake - now;
        int tmo = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
        int r = poll(pf, (nfds_t)np, tmo);
        if (r < 0 && errno != EINTR) {
            int err = errno;
            free(pf);
            gate_free(&g);
            VT_RETURN_ERROR(VT_ERR_IO, "gate: poll: %s", strerror(err));
        }
        if (r <= 0) continue;
        /* slots first (by descriptor: the array is reordered as slots go), then new connections */
        for (int k = base; k < np; k++) {
            if (!pf[k].revents) continue;
            for (int i = 0; i < g.n; i++)
                if (g.s[i].fd == pf[k].fd) {
                    gate_progress(&g, i);
                    break;
                }
        }
        if (listening && (pf[0].revents & POLLIN)) {
            int64_t p = gate_accept(&g);
            if (p) pause_until = now_ns() + p;
        }
    }
    free(pf);
    gate_free(&g);
    return VT_OK;
}

/* ------------------------------------------------------------------ transcripts */

struct vt_transcript {
    int fd;
    pthread_mutex_t mu;
    int failed;
    uint64_t size;
};

static vt_err pread_full(int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
    *got = 0;
    while (*got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + *got, n - *got, (off_t)(off + *got));
        if (r < 0 && errno == EINTR) continue;
        VT_RETURN_ERROR_IF(r < 0, VT_ERR_IO, "transcript: read: %s", strerror(errno));
        if (r == 0) break;
        *got += (size_t)r;
    }
    return VT_OK;
}

static vt_err pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pwrite(fd, (const uint8_t *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        VT_RETURN_ERROR_IF(r <= 0, VT_ERR_IO, "transcript: write: %s", r < 0 ? strerror(errno) : "no progress");
        done += (size_t)r;
    }
    return VT_OK;
}

static vt_err check_record_header(const uint8_t *rh, uint64_t off, uint32_t version)
{
    uint32_t len = vt_get_u32le(rh + 1 + VT_SIGN_PK_LEN);
    VT_RETURN_ERROR_IF(rh[0] != VT_TR_SENT && rh[0] != VT_TR_RECV && !(rh[0] == VT_TR_NOTE && version >= 2), VT_ERR_FORMAT,
                       "transcript: record at offset %llu: bad direction %u", (unsigned long long)off, rh[0]);
    VT_RETURN_ERROR_IF(len < VT_MSG_OVERHEAD || len > VT_TR_MAX_RECORD, VT_ERR_FORMAT,
                       "transcript: record at offset %llu: length %u outside [%u, %u]", (unsigned long long)off,
                       (unsigned)len, (unsigned)VT_MSG_OVERHEAD, (unsigned)VT_TR_MAX_RECORD);
    return VT_OK;
}

/* Reading takes versions 1 and 2; appending (write = 1) only the current one. */
static vt_err check_file_header(const uint8_t *h, int write, uint32_t *version)
{
    VT_RETURN_ERROR_IF(memcmp(h, VT_TR_MAGIC, 4) != 0, VT_ERR_FORMAT, "transcript: bad magic");
    uint32_t v = vt_get_u32le(h + 4);
    VT_RETURN_ERROR_IF(v < 1 || v > VT_TR_VERSION, VT_ERR_FORMAT, "transcript: unsupported version %u", (unsigned)v);
    VT_RETURN_ERROR_IF(write && v != VT_TR_VERSION, VT_ERR_FORMAT,
                       "transcript: version %u can be read but not appended to (this program writes version %u)",
                       (unsigned)v, VT_TR_VERSION);
    if (version) *version = v;
    return VT_OK;
}

/* Scans an existing transcript; *end = the end of its last complete record. */
static vt_err scan_transcript(int fd, uint64_t fsize, uint64_t *end)
{
    uint8_t h[VT_TR_HEADER_LEN];
    size_t got;
    VT_FORWARD_IF_ERROR(pread_full(fd, h, sizeof h, 0, &got));
    VT_RETURN_ERROR_IF(got != sizeof h, VT_ERR_FORMAT, "transcript: truncated header");
    VT_FORWARD_IF_ERROR(check_file_header(h, 1, NULL));
    uint64_t off = VT_TR_HEADER_LEN;
    while (off < fsize) {
        uint8_t rh[VT_TR_RECORD_HEADER_LEN];
        VT_FORWARD_IF_ERROR(pread_full(fd, rh, sizeof rh, off, &got));
        if (got < sizeof rh) break; /* torn record header */
        VT_FORWARD_IF_ERROR(check_record_header(rh, off, VT_TR_VERSION));
        uint64_t len = vt_get_u32le(rh + 1 + VT_SIGN_PK_LEN);
        if (fsize - off - VT_TR_RECORD_HEADER_LEN < len) break; /* torn record */
        off += VT_TR_RECORD_HEADER_LEN + len;
    }
    *end = off;
    return VT_OK;
}

vt_err vt_transcript_open(const char *path, vt_transcript **out)
{
    VT_RETURN_ERROR_IF(!path || !out, VT_ERR_ARG, "vt_transcript_open: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    VT_RETURN_ERROR_IF(fd < 0, VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    vt_err e = VT_OK;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        e = vt_set_error(VT_ERR_IO, "transcript %s: in use by another writer", path);
    struct stat st;
    if (e == VT_OK && fstat(fd, &st) != 0) e = vt_set_error(VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    uint64_t end = VT_TR_HEADER_LEN;
    if (e == VT_OK && st.st_size == 0) {
        uint8_t h[VT_TR_HEADER_LEN];
        memcpy(h, VT_TR_MAGIC, 4);
        vt_put_u32le(h + 4, VT_TR_VERSION);
        e = pwrite_full(fd, h, sizeof h, 0);
        if (e == VT_OK && fdatasync(fd) != 0) e = vt_set_error(VT_ERR_IO, "transcript %s: fsync: %s", path, strerror(errno));
    } else if (e == VT_OK) {
        e = scan_transcript(fd, (uint64_t)st.st_size, &end);
        if (e == VT_OK && end != (uint64_t)st.st_size && ftruncate(fd, (off_t)end) != 0)
            e = vt_set_error(VT_ERR_IO, "transcript %s: cutting a torn record: %s", path, strerror(errno));
    }
    vt_transcript *t = NULL;
    if (e == VT_OK) {
        t = calloc(1, sizeof *t);
        if (!t) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    if (e == VT_OK && pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t);
        e = vt_set_error(VT_ERR_INTERNAL, "transcript: cannot create a mutex");
    }
    if (e != VT_OK) {
        if (e == VT_ERR_FORMAT) {
            char m[512];
            snprintf(m, sizeof m, "%s", vt_errmsg());
            e = vt_set_error(e, "%s: %s", path, m);
        }
        close(fd);
        return e;
    }
    t->fd = fd;
    t->size = end;
    *out = t;
    return VT_OK;
}

vt_err vt_transcript_append(vt_transcript *t, int dir, const uint8_t author_pk[VT_SIGN_PK_LEN],
                            const uint8_t *bytes, size_t len)
{
    VT_RETURN_ERROR_IF(!t || !author_pk || !bytes, VT_ERR_ARG, "vt_transcript_append: NULL argument");
    VT_RETURN_ERROR_IF(dir != VT_TR_SENT && dir != VT_TR_RECV && dir != VT_TR_NOTE, VT_ERR_ARG,
                       "transcript: bad direction %d", dir);
    VT_RETURN_ERROR_IF(len < VT_MSG_OVERHEAD || len > VT_TR_MAX_RECORD, VT_ERR_ARG,
                       "transcript: record length %zu outside [%u, %u]", len, (unsigned)VT_MSG_OVERHEAD,
                       (unsigned)VT_TR_MAX_RECORD);
    uint8_t rh[VT_TR_RECORD_HEADER_LEN];
    rh[0] = (uint8_t)dir;
    memcpy(rh + 1, author_pk, VT_SIGN_PK_LEN);
    vt_put_u32le(rh + 1 + VT_SIGN_PK_LEN, (uint32_t)len);
    pthread_mutex_lock(&t->mu);
    vt_err e = VT_OK;
    if (t->failed) e = vt_set_error(VT_ERR_IO, "transcript: unusable after an earlier write failure");
    if (e == VT_OK) e = pwrite_full(t->fd, rh, sizeof rh, t->size);
    if (e == VT_OK) e = pwrite_full(t->fd, bytes, len, t->size + sizeof rh);
    if (e == VT_OK && fdatasync(t->fd) != 0) e = vt_set_error(VT_ERR_IO, "transcript: fsync: %s", strerror(errno));
    if (e == VT_OK) {
        t->size += sizeof rh + len;
    } else if (!t->failed && ftruncate(t->fd, (off_t)t->size) != 0) {
        t->failed = 1;
    }
    pthread_mutex_unlock(&t->mu);
    return e;
}

vt_err vt_transcript_close(vt_transcript *t)
{
    if (!t) return VT_OK;
    vt_err e = VT_OK;
    if (fsync(t->fd) != 0) e = vt_set_error(VT_ERR_IO, "transcript: fsync: %s", strerror(errno));
    if (close(t->fd) != 0 && e == VT_OK) e = vt_set_error(VT_ERR_IO, "transcript: close: %s", strerror(errno));
    pthread_mutex_destroy(&t->mu);
    free(t);
    return e;
}

struct vt_transcript_reader {
    int fd;
    uint32_t version;
    uint64_t size, off;
    uint8_t *buf;
    size_t cap;
};

vt_err vt_transcript_reader_open(const char *path, vt_transcript_reader **out)
{
    VT_RETURN_ERROR_IF(!path || !out, VT_ERR_ARG, "vt_transcript_reader_open: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    VT_RETURN_ERROR_IF(fd < 0, VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    struct stat st;
    uint8_t h[VT_TR_HEADER_LEN];
    size_t got = 0;
    vt_err e = VT_OK;
    if (fstat(fd, &st) != 0) e = vt_set_error(VT_ERR_IO, "transcript %s: %s", path, strerror(errno));
    if (e == VT_OK && !S_ISREG(st.st_mode)) e = vt_set_error(VT_ERR_IO, "transcript %s: not a regular file", path);
    if (e == VT_OK) e = pread_full(fd, h, sizeof h, 0, &got);
    if (e == VT_OK && got != sizeof h) e = vt_set_error(VT_ERR_FORMAT, "transcript %s: truncated header", path);
    uint32_t version = 0;
    if (e == VT_OK) e = check_file_header(h, 0, &version);
    vt_transcript_reader *r = NULL;
    if (e == VT_OK) {
        r = calloc(1, sizeof *r);
        if (!r) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    if (e != VT_OK) {
        close(fd);
        return e;
    }
    r->fd = fd;
    r->version = version;
    r->size = (uint64_t)st.st_size;
    r->off = VT_TR_HEADER_LEN;
    *out = r;
    return VT_OK;
}

vt_err vt_transcript_next(vt_transcript_reader *r, vt_transcript_record *rec, int *eof)
{
    VT_RETURN_ERROR_IF(!r || !rec || !eof, VT_ERR_ARG, "vt_transcript_next: NULL argument");
    memset(rec, 0, sizeof *rec);
    *eof = 0;
    uint8_t rh[VT_TR_RECORD_HEADER_LEN];
    size_t got;
    VT_FORWARD_IF_ERROR(pread_full(r->fd, rh, sizeof rh, r->off, &got));
    if (got == 0) {
        *eof = 1;
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(got < sizeof rh, VT_ERR_FORMAT, "transcript: torn record header at offset %llu",
                       (unsigned long long)r->off);
    VT_FORWARD_IF_ERROR(check_record_header(rh, r->off, r->version));
    uint32_t len = vt_get_u32le(rh + 1 + VT_SIGN_PK_LEN);
    /* the file may have grown since it was opened: re-check its size before allocating */
    struct stat st;
    VT_RETURN_ERROR_IF(fstat(r->fd, &st) != 0, VT_ERR_IO, "transcript: %s", strerror(errno));
    r->size = (uint64_t)st.st_size;
    VT_RETURN_ERROR_IF(r->size < r->off + sizeof rh || r->size - r->off - sizeof rh < len, VT_ERR_FORMAT,
                       "transcript: record at offset %llu claims %u bytes, fewer remain", (unsigned long long)r->off,
                       (unsigned)len);
    if (r->cap < len) {
        uint8_t *nb = realloc(r->buf, len);
        VT_RETURN_ERROR_IF(!nb, VT_ERR_NOMEM, "transcript: out of memory for a %u-byte record", (unsigned)len);
        r->buf = nb;
        r->cap = len;
    }
    VT_FORWARD_IF_ERROR(pread_full(r->fd, r->buf, len, r->off + sizeof rh, &got));
    VT_RETURN_ERROR_IF(got != len, VT_ERR_FORMAT, "transcript: torn record at offset %llu",
                       (unsigned long long)r->off);
    rec->dir = rh[0];
    memcpy(rec->author_pk, rh + 1, VT_SIGN_PK_LEN);
    rec->bytes = r->buf;
    rec->len = len;
    rec->offset = r->off;
    r->off += sizeof rh + len;
    return VT_OK;
}

void vt_transcript_reader_close(vt_transcript_reader *r)
{
    if (!r) return;
    close(r->fd);
    free(r->buf);
    free(r);
}
