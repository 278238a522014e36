/* fuzz_og_body.h - the check of the ONNX front-end of the client's own model (arch/vt_onnx_graph.c:
 * libprotobuf-c's decode by libonnx's schema, then the folded graph), the whole path from bytes to a
 * folded graph or a refusal. Shared by the libFuzzer target fuzz_onnx_graph (tests/fuzz/fuzz_target.c)
 * and the corpus replayer (tests/tools/replay_corpus.c: ctest onnx_graph_corpus over
 * tests/corpus/onnx_graph).
 *
 * The bytes go to vt_og_read with a batch of 3. Any input may be refused, but only as VT_ERR_FORMAT,
 * VT_ERR_ARG, VT_ERR_LIMIT or VT_ERR_NOMEM, leaving the graph empty (the file's SHA-256 aside). An
 * accepted graph is consistent: every value of rank at most VT_OG_MAX_RANK with dimensions in
 * [0, VT_OG_MAX_DIM], a known dtype, exactly one of input / initializer / constant / computed, and
 * data of exactly its elements' bytes when it is an initializer or a constant (none otherwise);
 * every node's operands and the graph's inputs and outputs name values (or are omitted); every
 * computed value is written by exactly one node, before any node reads it; the file's SHA-256 is the
 * input's; the canonical form starts with "VTOG" and hashes to canon_sha256, and a second read gives
 * the same hash; the graph mapped to a forward graph, its form read back and its program built
 * (vt_fuzz_og_map). Returns 0 when every rule holds, 1 on a violation (on stderr); *accepted is 1 for an
 * accepted graph. */
#ifndef VT_FUZZ_OG_BODY_H
#define VT_FUZZ_OG_BODY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/vt_graph.h"
#include "arch/vt_onnx_graph.h"
#include "common/vt_hash.h"
#include "fuzz/fuzz_common.h"

#define VT_FUZZ_OG_FAIL(...) VT_FUZZ_VIOLATION("fuzz_onnx_graph", __VA_ARGS__)

static int vt_fuzz_og_known(vt_err e)
{
    return e == VT_ERR_FORMAT || e == VT_ERR_ARG || e == VT_ERR_LIMIT || e == VT_ERR_NOMEM;
}

/* an accepted graph mapped to a forward graph (arch/vt_graph_onnx.c): refused only as VT_ERR_ARG or
 * VT_ERR_NOMEM; a mapped graph's canonical form reads back to the same bytes, and its program for
 * batches of 3 is built or refused (VT_ERR_ARG, VT_ERR_NOMEM, VT_ERR_LIMIT). 0 when so; 1 with the
 * violation on stderr. */
static int vt_fuzz_og_map(const vt_og_graph *og)
{
    vt_graph fg, fg2;
    float **vals = NULL;
    vt_err e = vt_graph_from_onnx(og, &fg, &vals);
    if (e) {
        if (e == VT_ERR_ARG || e == VT_ERR_NOMEM) return 0;
        fprintf(stderr, "fuzz_onnx_graph violation: the mapping refuses with code %d (%s)\n", (int)e, vt_errmsg());
        return 1;
    }
    int bad = 0;
    vt_buf b1, b2;
    if (vt_graph_encode(&fg, &b1) == VT_OK) {
        if (vt_graph_decode(b1.data, b1.len, &fg2) != VT_OK) {
            fprintf(stderr, "fuzz_onnx_graph violation: the forward graph's form does not read back: %s\n",
                    vt_errmsg());
            bad = 1;
        } else {
            if (vt_graph_encode(&fg2, &b2) == VT_OK) {
                if (b2.len != b1.len || memcmp(b1.data, b2.data, b1.len) != 0) {
                    fprintf(stderr, "fuzz_onnx_graph violation: the forward graph's form reads back to other bytes\n");
                    bad = 1;
                }
                vt_buf_free(&b2);
            }
            vt_graph_free(&fg2);
        }
        vt_buf_free(&b1);
    }
    vt_recipe r;
    vt_recipe_default(&r);
    r.batch = 3, r.n_layers = 1, r.widths[0] = fg.in_cols;
    r.widths[1] = fg.out >= 1 && fg.out <= fg.n_layer ? fg.layer[fg.out - 1].cols : 1;
    vt_program p;
    vt_program_init(&p);
    e = vt_graph_build(&fg, &r, &p);
    if (e && e != VT_ERR_ARG && e != VT_ERR_NOMEM && e != VT_ERR_LIMIT) {
        fprintf(stderr, "fuzz_onnx_graph violation: the program refused with code %d (%s)\n", (int)e, vt_errmsg());
        bad = 1;
    }
    vt_program_free(&p);
    for (uint32_t k = 0; k < fg.n_param; k++) free(vals[k]);
    free(vals);
    vt_graph_free(&fg);
    return bad;
}

static int vt_fuzz_og_one(const uint8_t *data, size_t size, int *accepted)
{
    int rc = 0;
    vt_og_graph g, g2;
    uint8_t h[32], *buf = NULL, *written = NULL;
    size_t len = 0;
    memset(&g2, 0, sizeof g2);
    *accepted = 0;
    if (vt_sha256(data, size, h) != VT_OK) return 1;
    vt_err e = vt_og_read(data, size, 3, &g);
    if (e) {
        if (!vt_fuzz_og_known(e)) VT_FUZZ_OG_FAIL("refused with code %d (%s)", (int)e, vt_errmsg());
        if (g.n_values || g.n_nodes || g.v || g.node || g.inputs || g.outputs) VT_FUZZ_OG_FAIL("refused, a graph left");
        goto done;
    }
    *accepted = 1;
    if (memcmp(g.file_sha256, h, 32) != 0) VT_FUZZ_OG_FAIL("the SHA-256 is not the input's");
    if (g.opset < 13 || g.opset > 17 || g.n_outputs < 1) VT_FUZZ_OG_FAIL("opset %lld, %u outputs", (long long)g.opset, g.n_outputs);
    written = calloc(g.n_values ? g.n_values : 1, 1);
    if (!written) goto done;
    for (uint32_t i = 0; i < g.n_values; i++) {
        const vt_og_value *v = &g.v[i];
        size_t es = vt_og_dtype_size(v->dtype), n = 1;
        if (!es || v->rank > VT_OG_MAX_RANK || !v->name) VT_FUZZ_OG_FAIL("value %u: dtype %d, rank %u", i, (int)v->dtype, v->rank);
        for (uint32_t d = 0; d < v->rank; d++) {
            if (v->shape[d] < 0 || v->shape[d] > VT_OG_MAX_DIM) VT_FUZZ_OG_FAIL("value %u: dimension %lld", i, (long long)v->shape[d]);
            n *= (size_t)v->shape[d];
        }
        if (v->is_input + v->is_init + v->is_const > 1) VT_FUZZ_OG_FAIL("value %u: more than one kind", i);
        if ((v->is_init || v->is_const) && (!v->data || v->nbytes != n * es))
            VT_FUZZ_OG_FAIL("value %u: %zu bytes for %zu elements of %zu", i, v->nbytes, n, es);
        if (!v->is_init && !v->is_const && (v->data || v->nbytes)) VT_FUZZ_OG_FAIL("value %u: data of a computed value", i);
        written[i] = v->is_input || v->is_init || v->is_const;
    }
    for (uint32_t i = 0; i < g.n_inputs; i++)
        if (g.inputs[i] >= g.n_values || !g.v[g.inputs[i]].is_input) VT_FUZZ_OG_FAIL("input %u is not an input value", i);
    for (uint32_t i = 0; i < g.n_nodes; i++) {
        const vt_og_node *nd = &g.node[i];
        if (!nd->name || !nd->op || nd->n_out < 1) VT_FUZZ_OG_FAIL("node %u: no name, op or output", i);
        for (uint32_t k = 0; k < nd->n_in; k++)
            if (nd->in[k] != UINT32_MAX && (nd->in[k] >= g.n_values || !written[nd->in[k]]))
                VT_FUZZ_OG_FAIL("node %u (%s): input %u reads value %u before it is written", i, nd->op, k, nd->in[k]);
        for (uint32_t k = 0; k < nd->n_out; k++) {
            uint32_t o = nd->out[k];
            if (o == UINT32_MAX) continue;
            if (o >= g.n_values || written[o]) VT_FUZZ_OG_FAIL("node %u (%s): output %u is value %u, written before", i, nd->op, k, o);
            written[o] = 1;
        }
        for (uint32_t k = 0; k < nd->n_attr; k++)
            if (!nd->attr[k].name || nd->attr[k].type < VT_OGA_INT || nd->attr[k].type > VT_OGA_STRING)
                VT_FUZZ_OG_FAIL("node %u: attribute %u", i, k);
    }
    for (uint32_t i = 0; i < g.n_outputs; i++)
        if (g.outputs[i] >= g.n_values || !written[g.outputs[i]]) VT_FUZZ_OG_FAIL("output %u is not written", i);
    if (vt_og_canonical(&g, &buf, &len) == VT_OK) {
        uint8_t ch[32];
        if (len < 8 || memcmp(buf, "VTOG", 4) != 0) VT_FUZZ_OG_FAIL("the canonical form does not start with VTOG");
        if (vt_sha256(buf, len, ch) != VT_OK || memcmp(ch, g.canon_sha256, 32) != 0)
            VT_FUZZ_OG_FAIL("canon_sha256 is not the canonical form's");
    }
    if (vt_fuzz_og_map(&g)) VT_FUZZ_OG_FAIL("the forward graph (above)");
    e = vt_og_read(data, size, 3, &g2);
    if (e && e != VT_ERR_NOMEM) VT_FUZZ_OG_FAIL("a second read refuses: %s", vt_errmsg());
    if (!e && memcmp(g2.canon_sha256, g.canon_sha256, 32) != 0) VT_FUZZ_OG_FAIL("a second read hashes another graph");
done:
    free(buf), free(written);
    vt_og_free(&g);
    vt_og_free(&g2);
    return rc;
}

#endif
