/* fuzz_onnx_body.h - the check of the ONNX reader (cert/vt_cert_onnx.c: libprotobuf-c's decode by
 * libonnx's schema, then our network or layer graph), the whole path from bytes to a network the
 * bounds read or a refusal. Shared by the libFuzzer target fuzz_onnx (tests/fuzz/fuzz_target.c) and
 * the corpus replayer (tests/tools/replay_corpus.c: ctest onnx_corpus over tests/corpus/onnx).
 *
 * The bytes go to vt_cert_onnx_read_any (MLPs and convolutional graphs) and vt_cert_onnx_read (MLPs
 * only). Any input may be refused, but only as VT_ERR_FORMAT, VT_ERR_UNSUPPORTED, VT_ERR_LIMIT or
 * VT_ERR_NOMEM, leaving no network; the two readers agree (the MLP reader refuses a graph as
 * VT_ERR_UNSUPPORTED, a file the other refuses with the same code or that one, and reads the same
 * widths otherwise); the SHA-256 is the input's. An accepted MLP
 * is consistent: 1..16 layers of widths 1..2^20, every weight, bias and normalisation constant present
 * and finite, no division by zero, a normalisation of one value or one per input; a bound context is
 * made from it and IBP's logit intervals over the box [0, 1]^d are ordered (never NaN). An accepted
 * graph has nodes, and when it is small (at most 2^16 values) its IBP intervals over [0, 1]^d are
 * ordered. Returns 0 when every rule holds, 1 on a violation (on stderr); *accepted gets bit 0 for an
 * MLP, bit 1 for a graph. */
#ifndef VT_FUZZ_ONNX_BODY_H
#define VT_FUZZ_ONNX_BODY_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cert/vt_cert.h"
#include "cert/vt_cert_graph.h"
#include "common/vt_hash.h"
#include "fuzz/fuzz_common.h"

#define VT_FUZZ_ONNX_FAIL(...) VT_FUZZ_VIOLATION("fuzz_onnx", __VA_ARGS__)

static int vt_fuzz_onnx_known(vt_err e)
{
    return e == VT_ERR_FORMAT || e == VT_ERR_UNSUPPORTED || e == VT_ERR_LIMIT || e == VT_ERR_NOMEM;
}

static int vt_fuzz_onnx_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

/* 0 when every interval [l, u] of n values is ordered and not NaN */
static int vt_fuzz_onnx_ordered(const double *l, const double *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(l[i]) || isnan(u[i]) || l[i] > u[i]) return 1;
    return 0;
}

static int vt_fuzz_onnx_one(const uint8_t *data, size_t size, int *accepted)
{
    int rc = 0;
    vt_cert_onnx o, o2;
    vt_cert_graph *g = NULL;
    vt_cert_ctx *c = NULL;
    double *xl = NULL, *xu = NULL, *ol = NULL, *ou = NULL;
    uint8_t sha[32], sha2[32], h[32];
    memset(&o, 0, sizeof o), memset(&o2, 0, sizeof o2);
    *accepted = 0;
    const char *path = vt_fuzz_file(data, size);
    if (!path || vt_sha256(data, size, h) != VT_OK) return 1;

    vt_err e = vt_cert_onnx_read_any(path, &o, &g, sha);
    vt_err e2 = vt_cert_onnx_read(path, &o2, sha2);
    if (e) {
        if (!vt_fuzz_onnx_known(e)) VT_FUZZ_ONNX_FAIL("refused with code %d (%s)", (int)e, vt_errmsg());
        if (g || o.n_store || o.net.L) VT_FUZZ_ONNX_FAIL("refused, a network left");
        /* the same refusal, or (a convolutional network, which it does not walk) VT_ERR_UNSUPPORTED */
        if (e2 != e && e2 != VT_ERR_UNSUPPORTED)
            VT_FUZZ_ONNX_FAIL("vt_cert_onnx_read answers %d, vt_cert_onnx_read_any %d", (int)e2, (int)e);
        goto done;
    }
    if (memcmp(sha, h, 32) != 0) VT_FUZZ_ONNX_FAIL("the SHA-256 is not the input's");
    if (g) { /* a convolutional network: the layer graph */
        *accepted |= 2;
        if (e2 != VT_ERR_UNSUPPORTED) VT_FUZZ_ONNX_FAIL("a graph, and vt_cert_onnx_read answers %d", (int)e2);
        uint32_t nn = vt_cert_graph_n_nodes(g);
        uint64_t vals = 0;
        if (nn < 2) VT_FUZZ_ONNX_FAIL("a graph of %u nodes", nn);
        for (uint32_t k = 0; k < nn; k++) {
            if (vt_cert_graph_size(g, k) < 1) VT_FUZZ_ONNX_FAIL("node %u has no values", k);
            vals += vt_cert_graph_size(g, k);
        }
        if (vals > ((uint64_t)1 << 16)) goto done;
        uint32_t d = vt_cert_graph_size(g, 0);
        xl = calloc(d, sizeof *xl), xu = malloc(d * sizeof *xu);
        if (!xl || !xu) goto done;
        for (uint32_t i = 0; i < d; i++) xu[i] = 1;
        e = vt_cert_graph_ibp(g, xl, xu);
        if (e && e != VT_ERR_NOMEM) VT_FUZZ_ONNX_FAIL("IBP on the graph: code %d (%s)", (int)e, vt_errmsg());
        for (uint32_t k = 0; !e && k < nn; k++) {
            const double *l, *u;
            vt_cert_graph_interval(g, k, &l, &u);
            if (vt_fuzz_onnx_ordered(l, u, vt_cert_graph_size(g, k))) VT_FUZZ_ONNX_FAIL("node %u: an interval not ordered", k);
        }
        goto done;
    }
    *accepted |= 1;
    const vt_cert_net *n = &o.net;
    if (e2 || o2.net.L != n->L || memcmp(o2.net.n, n->n, sizeof n->n) != 0 || o2.n_norm != o.n_norm)
        VT_FUZZ_ONNX_FAIL("vt_cert_onnx_read reads another network (%d)", (int)e2);
    if (n->L < 1 || n->L > VT_CERT_MAX_LAYERS || o.n_norm > VT_CERT_ONNX_MAX_NORM || o.n_store > VT_CERT_ONNX_MAX_STORE)
        VT_FUZZ_ONNX_FAIL("%u layers, %u normalisation steps, %u constants", n->L, o.n_norm, o.n_store);
    for (uint32_t k = 0; k <= n->L; k++)
        if (n->n[k] < 1 || n->n[k] > VT_CERT_MAX_WIDTH) VT_FUZZ_ONNX_FAIL("width %u is %u", k, n->n[k]);
    for (uint32_t k = 1; k <= n->L; k++)
        if (!n->W[k] || !n->b[k] || !vt_fuzz_onnx_finite(n->W[k], (size_t)n->n[k - 1] * n->n[k]) ||
            !vt_fuzz_onnx_finite(n->b[k], n->n[k]))
            VT_FUZZ_ONNX_FAIL("layer %u: weights or bias missing or not finite", k);
    for (uint32_t s = 0; s < o.n_norm; s++) {
        if ((o.norm_op[s] != 'S' && o.norm_op[s] != 'D') || !o.norm_c[s] || (o.norm_n[s] != 1 && o.norm_n[s] != n->n[0]) ||
            !vt_fuzz_onnx_finite(o.norm_c[s], o.norm_n[s]))
            VT_FUZZ_ONNX_FAIL("normalisation step %u is inconsistent", s);
        for (uint32_t i = 0; o.norm_op[s] == 'D' && i < o.norm_n[s]; i++)
            if (o.norm_c[s][i] == 0) VT_FUZZ_ONNX_FAIL("normalisation step %u divides by zero", s);
    }
    e = vt_cert_ctx_new(n, &c);
    if (e) {
        if (e != VT_ERR_NOMEM && e != VT_ERR_LIMIT) VT_FUZZ_ONNX_FAIL("no bound context: code %d (%s)", (int)e, vt_errmsg());
        goto done;
    }
    uint32_t d = n->n[0], ny = n->n[n->L];
    xl = calloc(d, sizeof *xl), xu = malloc(d * sizeof *xu), ol = malloc(ny * sizeof *ol), ou = malloc(ny * sizeof *ou);
    if (!xl || !xu || !ol || !ou) goto done;
    for (uint32_t i = 0; i < d; i++) xu[i] = 1;
    vt_cert_settings s;
    vt_cert_settings_default(&s, VT_CERT_IBP);
    e = vt_cert_logit_bounds(c, xl, xu, &s, ol, ou);
    if (e && e != VT_ERR_NOMEM) VT_FUZZ_ONNX_FAIL("IBP: code %d (%s)", (int)e, vt_errmsg());
    if (!e && vt_fuzz_onnx_ordered(ol, ou, ny)) VT_FUZZ_ONNX_FAIL("IBP: a logit interval not ordered");
done:
    vt_cert_ctx_free(c);
    vt_cert_graph_free(g);
    vt_cert_onnx_free(&o);
    vt_cert_onnx_free(&o2);
    free(xl), free(xu), free(ol), free(ou);
    return rc;
}

#endif
