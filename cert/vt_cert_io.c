/* vt_cert_io.c - the certificate's byte buffer and whole-file reads and writes (vt_cert_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../merkle/vt_sign.h"
#include "vt_cert_int.h"

void vti_put(vti_buf *o, const void *p, size_t n)
{
    if (o->bad) return;
    if (o->n + n > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->n + n) cap *= 2;
        uint8_t *nb = realloc(o->b, cap);
        if (!nb) {
            o->bad = 1;
            return;
        }
        o->b = nb, o->cap = cap;
    }
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

void vti_put32(vti_buf *o, uint32_t v)
{
    uint8_t t[4];
    vt_put_u32le(t, v);
    vti_put(o, t, 4);
}

void vti_put64(vti_buf *o, uint64_t v)
{
    uint8_t t[8];
    vt_put_u64le(t, v);
    vti_put(o, t, 8);
}

vt_err vti_cert_read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
    *out = NULL, *len = 0;
    FILE *f = fopen(path, "rb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "%s: cannot open it", path);
    uint8_t *p = NULL;
    size_t n = 0, cap = 0;
    vt_err e = VT_OK;
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                e = vt_set_error(VT_ERR_LIMIT, "%s: larger than %zu bytes", path, max);
                break;
            }
            size_t nc = cap ? 2 * cap : 65536;
            uint8_t *np = realloc(p, nc);
            if (!np) {
                e = vt_set_error(VT_ERR_NOMEM, "out of memory");
                break;
            }
            p = np, cap = nc;
        }
        size_t got = fread(p + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!e && ferror(f)) e = vt_set_error(VT_ERR_IO, "%s: cannot read it", path);
    fclose(f);
    if (e) {
        free(p);
        return e;
    }
    *out = p, *len = n;
    return VT_OK;
}

vt_err vti_cert_write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "%s: cannot create it", path);
    size_t w = fwrite(p, 1, n, f);
    int bad = ferror(f) | (fclose(f) != 0);
    VT_RETURN_ERROR_IF(w != n || bad, VT_ERR_IO, "%s: cannot write it", path);
    return VT_OK;
}

vt_err vti_cert_sign_write(vti_buf *out, const vt_keypair *kp, const char *path)
{
    vti_put(out, kp->pk, 32);
    uint8_t sig[VT_SIGN_SIG_LEN];
    VT_RETURN_ERROR_IF(out->bad, VT_ERR_NOMEM, "out of memory");
    VT_FORWARD_IF_ERROR(vt_sign_detached(kp, out->b, out->n, sig));
    vti_put(out, sig, sizeof sig);
    VT_RETURN_ERROR_IF(out->bad, VT_ERR_NOMEM, "out of memory");
    return vti_cert_write_file(path, out->b, out->n);
}

vt_err vti_cert_verify(const char *cert_path, const uint8_t *p, size_t body, const char *signer_pub_path)
{
    VT_RETURN_ERROR_IF(vt_sign_verify_detached(p + body + 32, p, body + 32, p + body) != 0, VT_ERR_MISMATCH,
                       "%s: the signature does not verify", cert_path);
    if (signer_pub_path) {
        uint8_t pk[32];
        VT_FORWARD_IF_ERROR(vt_sign_read_public_key(signer_pub_path, pk));
        VT_RETURN_ERROR_IF(memcmp(pk, p + body, 32) != 0, VT_ERR_MISMATCH, "%s is signed by another key than %s", cert_path,
                           signer_pub_path);
    }
    return VT_OK;
}

vt_err vti_cert_compare(const char *cert_path, const vti_buf *out, const uint8_t *p, size_t body)
{
    VT_RETURN_ERROR_IF(out->bad, VT_ERR_NOMEM, "out of memory");
    if (out->n != body || memcmp(out->b, p, body) != 0) {
        size_t k = 0;
        while (k < body && k < out->n && out->b[k] == p[k]) k++;
        return vt_set_error(VT_ERR_MISMATCH, "%s: the recomputed certificate differs from byte %zu", cert_path, k);
    }
    return VT_OK;
}

vt_err vti_cert_slopes(const char *cert_path, const char *where, const uint8_t *p, size_t n, double *a)
{
    for (size_t k = 0; k < n; k++) {
        a[k] = vt_bits_f64(vt_get_u64le(p + 8 * k));
        VT_RETURN_ERROR_IF(!(a[k] >= 0 && a[k] <= 1), VT_ERR_MISMATCH,
                           "%s: %s: slope %zu is %g, outside [0, 1] (a relaxation's lower slope must be)", cert_path, where,
                           k, a[k]);
    }
    return VT_OK;
}

uint32_t vti_cert_method_word(const vt_cert_settings *s, int graph)
{
    int full = graph && s->method != VT_CERT_IBP && s->inter == VT_CERT_INTER_CROWN;
    return (uint32_t)s->method | (full ? VTI_CERT_CROWN_INTER : 0);
}

vt_err vti_cert_method_read(uint32_t w, int mlp, vt_cert_settings *s)
{
    uint32_t m = w & 0xffu, full = w & VTI_CERT_CROWN_INTER;
    VT_RETURN_ERROR_IF((w & ~(0xffu | VTI_CERT_CROWN_INTER)) || m > VT_CERT_ALPHA_CROWN ||
                           (full && (m == VT_CERT_IBP || mlp)),
                       VT_ERR_FORMAT, "certificate: method word 0x%x is out of range", w);
    s->method = (vt_cert_method)m;
    s->inter = full || mlp ? VT_CERT_INTER_CROWN : VT_CERT_INTER_IBP;
    return VT_OK;
}

void vti_cert_settings_json(FILE *f, const vt_cert_settings *s, int graph)
{
    const char *inter = s->method == VT_CERT_IBP || (graph && s->inter == VT_CERT_INTER_IBP) ? "ibp" : "crown";
    fprintf(f, "  \"intermediate\": \"%s\",\n  \"settings\": {", inter);
    if (s->method == VT_CERT_ALPHA_CROWN)
        fprintf(f, "\"alpha_iters\": %u, \"alpha_step\": %.17g, \"alpha_decay\": %.17g, ", s->alpha_iters, s->alpha_step,
                s->alpha_decay);
    fprintf(f, "\"attack_restarts\": %u, \"attack_iters\": %u, \"attack_seed\": %llu},\n", s->attack_restarts,
            s->attack_iters, (unsigned long long)s->attack_seed);
}

vt_err vti_cert_inter_check(const vt_cert_settings *s, int graph)
{
    VT_RETURN_ERROR_IF(!graph && s->method != VT_CERT_IBP && s->inter == VT_CERT_INTER_IBP, VT_ERR_UNSUPPORTED,
                       "certify: --intermediate ibp is for the layer graph (a residual CNN run, a convolutional ONNX "
                       "file); an MLP's CROWN always bounds its intermediate values by backward passes");
    return VT_OK;
}
