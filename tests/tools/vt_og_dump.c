/* vt_og_dump.c - the ONNX front-end's folded graph as text (arch/vt_onnx_graph.h; the test
 * tests/e2e/onnx_import.sh reads it). Usage: vt_og_dump FILE.onnx BATCH [VALUE]
 * Prints the opset and producer, the graph inputs, then one line per compute node -
 *   node NAME OP in=[id:name dtype[shape] ...] out=[...]
 * (an input that is a constant marked const, a parameter init) - then the outputs, a line
 *   ops OP=COUNT ...  (the compute nodes' operators, in first-use order)
 * and the canonical hash "canonical HEX" (and "file HEX"). With VALUE (a value's name, its id, or @N
 * for graph output N: an output written by an Identity is its input's value, named so), only
 * that value's elements, when it is a constant, one line "const NAME v0 v1 ...". A refusal: the message on stderr, exit 64
 * for VT_ERR_ARG (the trainer's usage exit), 2 for corrupt or hostile bytes, 1 otherwise. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/vt_onnx_graph.h"

static void value(const vt_og_graph *g, uint32_t id)
{
    if (id == UINT32_MAX) {
        printf(" -");
        return;
    }
    const vt_og_value *v = &g->v[id];
    printf(" %u:%s %s[", id, v->name, vt_og_dtype_name(v->dtype));
    for (uint32_t d = 0; d < v->rank; d++) printf("%s%" PRId64, d ? "," : "", v->shape[d]);
    printf("]%s", v->is_const ? "const" : v->is_init ? "init" : "");
}

static void hex(const char *what, const uint8_t *h)
{
    printf("%s ", what);
    for (int i = 0; i < 32; i++) printf("%02x", h[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s FILE.onnx BATCH [VALUE]\n", argv[0]);
        return 64;
    }
    char *end;
    long long batch = strtoll(argv[2], &end, 10);
    if (*end || batch < 0) {
        fprintf(stderr, "%s: BATCH %s is not a count\n", argv[0], argv[2]);
        return 64;
    }
    vt_og_graph g;
    vt_err e = vt_og_read_file(argv[1], batch, &g);
    if (e) {
        fprintf(stderr, "%s: %s: %s\n", argv[0], vt_err_name(e), vt_errmsg());
        return e == VT_ERR_ARG ? 64 : e == VT_ERR_FORMAT || e == VT_ERR_LIMIT ? 2 : 1;
    }
    if (argc == 4) {
        uint32_t id = vt_og_find(&g, argv[3]);
        if (id == UINT32_MAX && argv[3][0] >= '0' && argv[3][0] <= '9') id = (uint32_t)strtoul(argv[3], NULL, 10);
        if (id == UINT32_MAX && argv[3][0] == '@') { /* @N: graph output N */
            unsigned long k = strtoul(argv[3] + 1, NULL, 10);
            id = k < g.n_outputs ? g.outputs[k] : UINT32_MAX;
        }
        int ok = id < g.n_values && g.v[id].is_const;
        if (ok) {
            const vt_og_value *v = &g.v[id];
            printf("const %s", v->name);
            for (size_t i = 0; i < v->nbytes / vt_og_dtype_size(v->dtype); i++) {
                if (v->dtype == VT_OG_F32) printf(" %.9g", (double)((const float *)v->data)[i]);
                else if (v->dtype == VT_OG_F64) printf(" %.17g", ((const double *)v->data)[i]);
                else if (v->dtype == VT_OG_I64) printf(" %" PRId64, ((const int64_t *)v->data)[i]);
                else if (v->dtype == VT_OG_I32) printf(" %" PRId32, ((const int32_t *)v->data)[i]);
                else printf(" %u", ((const uint8_t *)v->data)[i]);
            }
            printf("\n");
        } else
            fprintf(stderr, "%s: no constant %s\n", argv[0], argv[3]);
        vt_og_free(&g);
        return ok ? 0 : 1;
    }
    printf("opset %" PRId64 " producer %s values %u nodes %u\n", g.opset, g.producer, g.n_values, g.n_nodes);
    printf("inputs");
    for (uint32_t i = 0; i < g.n_inputs; i++) value(&g, g.inputs[i]);
    printf("\n");
    const char *ops[64];
    unsigned cnt[64], nops = 0;
    for (uint32_t i = 0; i < g.n_nodes; i++) {
        const vt_og_node *n = &g.node[i];
        printf("node %s %s in=[", n->name, n->op);
        for (uint32_t k = 0; k < n->n_in; k++) value(&g, n->in[k]);
        printf(" ] out=[");
        for (uint32_t k = 0; k < n->n_out; k++) value(&g, n->out[k]);
        printf(" ]\n");
        unsigned j = 0;
        while (j < nops && strcmp(ops[j], n->op)) j++;
        if (j == nops && nops < 64) ops[nops] = n->op, cnt[nops++] = 0;
        if (j < nops) cnt[j]++;
    }
    printf("outputs");
    for (uint32_t i = 0; i < g.n_outputs; i++) value(&g, g.outputs[i]);
    printf("\nops");
    for (unsigned j = 0; j < nops; j++) printf(" %s=%u", ops[j], cnt[j]);
    printf("\n");
    hex("canonical", g.canon_sha256);
    hex("file", g.file_sha256);
    vt_og_free(&g);
    return 0;
}
