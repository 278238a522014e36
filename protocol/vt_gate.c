/* vt_gate.c - the admission gate of a server (docs/protocol.md §6a): the accept loop, with the
 * TLS handshakes and first messages of the peers off the server's threads (vt_gate_run). */
#include "vt_conn_int.h"

#include "../common/vt_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

/* ------------------------------------------------------------------ gate
 * The accept loop of a server (docs/protocol.md §6a): one thread, poll-based non-blocking
 * TLS handshakes and first messages, bounded in number overall and per address, each with
 * its own deadline. Nothing is handed to the server before the peer is authenticated. */

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
        if (vt_conn_new(s->fd, 1, g->kp, NULL, &s->c) != VT_OK) {
            s->fd = -1; /* closed by vt_conn_new */
            snprintf(why, sizeof why, "%s", vt_errmsg());
            gate_log(g, s->peer, 0, why);
            g->s[i] = g->s[--g->n];
            return;
        }
        s->stage = 0;
    }
    if (s->stage == 0) {
        int done = 0;
        vt_err e = vt_conn_handshake_step(s->c, &done, &s->ev);
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
        s->deadline = vt_proto_now_ns() + (int64_t)g->o.first_ms * 1000000;
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
            (void)vt_conn_ssl_failure(s->c, r, "before its first message");
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
        vt_proto_tune_socket(fd);
        ns.fd = fd;
        ns.stage = -1;
        ns.t0 = vt_proto_now_ns();
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
        int64_t now = vt_proto_now_ns();
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
            if (p) pause_until = vt_proto_now_ns() + p;
        }
    }
    free(pf);
    gate_free(&g);
    return VT_OK;
}
