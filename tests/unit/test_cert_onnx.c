/* test_cert_onnx.c - the ONNX reader of `auditor certify --onnx` (cert/vt_cert_onnx.c) on models
 * built here with the protoc-c structures: a network using every supported form (Sub and Div
 * normalisation with a negative divisor, Flatten, MatMul with an Add of a Constant node's bias,
 * Relu, Reshape, Gemm transB 1 with C, a float_data initializer beside raw_data ones) is read into
 * the expected layers, and answered through vt_cert_spec_run (an always-reachable disjunction is
 * sat with a counterexample that an FP64 evaluation confirms; a far threshold is unsat); each
 * mutation outside the supported set is refused with its kind (UNSUPPORTED: exit 64; FORMAT: 2) and
 * a message naming the node and operator. A convolutional model (per-channel Sub, Conv with pads and
 * bias, BatchNormalization, Relu, a 1x1 Conv branch and a residual Add, MaxPool, AveragePool,
 * GlobalAveragePool, Flatten, Gemm) is read into the graph; over random boxes, sampled inputs evaluated
 * directly (long double for the real network, FP32 in two orders for an FP32 evaluation) never leave
 * the output's IBP interval nor fall below IBP's or CROWN's spec-row bounds; group 2, dilation 2, a
 * weight of the wrong shape, a pool whose stride is not its kernel, a Conv reading the input from before
 * its normalisation are refused (UNSUPPORTED).
 * Skipped (77) in a build without ONNX support. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cert/vt_cert.h"
#include "../../cert/vt_cert_graph.h"
#include "vt_test.h"

#ifdef VT_HAVE_ONNX
#include "onnx.pb-c.h"

enum { M_NONE, M_SIGMOID, M_TRANSA, M_ALPHA, M_TWO_INPUTS, M_DYNAMIC, M_RAW_LEN, M_DOUBLE, M_EXTERNAL, M_DIV0,
       M_RELU_OUT, M_TWO_LINEAR, M_BIAS_SHAPE, M_STD_SHAPE, M_COLUMN, M_N };

static const float W1[12] = {0.5f, -1, 0.25f, 1, 0.75f, -0.5f, -0.25f, 0.5f, 1, 0.125f, -1, 0.5f}; /* [4, 3] */
static const float B1[3] = {0.1f, -0.2f, 0.3f};
static const float W2[6] = {1, -0.5f, 0.25f, -1, 0.5f, 0.75f}; /* [2, 3], transB 1 */
static const float B2[2] = {0.05f, -0.05f};
static const float MEAN[1] = {0.5f}, STD[4] = {0.25f, -0.5f, 0.5f, 0.25f};

typedef struct {
    Onnx__TensorProto t[8];
    int64_t dims[8][4];
    uint8_t raw[8][64];
    Onnx__TensorProto *tp[8];
    Onnx__NodeProto n[10];
    Onnx__NodeProto *np[10];
    char *io[10][3];
    Onnx__AttributeProto a[6];
    Onnx__AttributeProto *ap[6][2];
    Onnx__ValueInfoProto vi[3];
    Onnx__ValueInfoProto *vip[3];
    Onnx__TypeProto ty[3];
    Onnx__TypeProto__Tensor tt[3];
    Onnx__TensorShapeProto sh[3];
    Onnx__TensorShapeProto__Dimension dm[3][4];
    Onnx__TensorShapeProto__Dimension *dmp[3][4];
    Onnx__GraphProto g;
    Onnx__ModelProto m;
} model;

static void tensor(model *b, int i, const char *name, int rank, const int64_t *dims, const float *v, int raw)
{
    Onnx__TensorProto *t = &b->t[i];
    onnx__tensor_proto__init(t);
    size_t n = 1;
    for (int k = 0; k < rank; k++) b->dims[i][k] = dims[k], n *= (size_t)dims[k];
    t->n_dims = (size_t)rank, t->dims = b->dims[i], t->has_data_type = 1, t->data_type = 1, t->name = (char *)name;
    if (raw) {
        memcpy(b->raw[i], v, n * 4); /* little-endian hosts */
        t->has_raw_data = 1, t->raw_data.len = n * 4, t->raw_data.data = b->raw[i];
    } else t->n_float_data = n, t->float_data = (float *)v;
    b->tp[i] = t;
}

static void node(model *b, int i, const char *op, const char *in0, const char *in1, const char *out, int n_attr)
{
    Onnx__NodeProto *n = &b->n[i];
    onnx__node_proto__init(n);
    b->io[i][0] = (char *)in0, b->io[i][1] = (char *)in1, b->io[i][2] = (char *)out;
    n->op_type = (char *)op, n->name = (char *)op, n->n_input = in1 ? 2 : 1, n->input = b->io[i];
    n->n_output = 1, n->output = &b->io[i][2], n->n_attribute = (size_t)n_attr, n->attribute = b->ap[i < 6 ? i : 0];
    b->np[i] = n;
}

static Onnx__AttributeProto *attr_i(model *b, int k, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = &b->a[k];
    onnx__attribute_proto__init(a);
    a->name = (char *)name, a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = v;
    return a;
}

static void value(model *b, int i, const char *name, int rank, const int64_t *dims)
{
    onnx__value_info_proto__init(&b->vi[i]);
    onnx__type_proto__init(&b->ty[i]);
    onnx__type_proto__tensor__init(&b->tt[i]);
    onnx__tensor_shape_proto__init(&b->sh[i]);
    for (int k = 0; k < rank; k++) {
        Onnx__TensorShapeProto__Dimension *d = &b->dm[i][k];
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[k] < 0) d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, d->dim_param = (char *)"N";
        else d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, d->dim_value = dims[k];
        b->dmp[i][k] = d;
    }
    b->sh[i].n_dim = (size_t)rank, b->sh[i].dim = b->dmp[i];
    b->tt[i].has_elem_type = 1, b->tt[i].elem_type = 1, b->tt[i].shape = &b->sh[i];
    b->ty[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, b->ty[i].tensor_type = &b->tt[i];
    b->vi[i].name = (char *)name, b->vi[i].type = &b->ty[i];
    b->vip[i] = &b->vi[i];
}

/* the model of b's graph, packed and written to path */
static void write_model(model *b, const char *path)
{
    onnx__model_proto__init(&b->m);
    b->m.has_ir_version = 1, b->m.ir_version = 8, b->m.graph = &b->g;
    size_t len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&b->m, buf);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
}

/* The test network with one mutation, written to path. */
static void build(const char *path, int mut)
{
    static model b;
    memset(&b, 0, sizeof b);
    static const float ZERO[1] = {0};
    tensor(&b, 0, "mean", 1, (const int64_t[]){1}, MEAN, 1);
    /* M_STD_SHAPE: [4, 1] against x [1, 1, 2, 2]: [1, 1, 4, 2]... another network */
    tensor(&b, 1, "std", mut == M_STD_SHAPE ? 2 : 4, mut == M_STD_SHAPE ? (const int64_t[]){4, 1} : (const int64_t[]){1, 1, 2, 2}, mut == M_DIV0 ? (const float[]){0.25f, 0, 1, 1} : STD, 0);
    tensor(&b, 2, "W1", 2, (const int64_t[]){4, 3}, W1, 1);
    tensor(&b, 3, "W2", 2, (const int64_t[]){2, 3}, W2, 1);
    tensor(&b, 4, "B2", 1, (const int64_t[]){2}, B2, 1);
    /* the Constant node's value; M_BIAS_SHAPE: [3, 1], which broadcasts h1 [1, 3] to [3, 3] */
    tensor(&b, 5, "b1", mut == M_BIAS_SHAPE ? 2 : 1, (const int64_t[]){3, 1}, B1, 1);
    Onnx__TensorProto *shape = &b.t[6];
    onnx__tensor_proto__init(shape);
    static int64_t sd[1] = {2}, sv[2] = {1, -1}, sc[2] = {-1, 1}; /* M_COLUMN: [-1, 1], a column [3, 1] */
    shape->n_dims = 1, shape->dims = sd, shape->has_data_type = 1, shape->data_type = 7, shape->n_int64_data = 2;
    shape->int64_data = mut == M_COLUMN ? sc : sv, shape->name = (char *)"shape";
    b.tp[5] = shape; /* initializers: mean std W1 W2 B2 shape */
    if (mut == M_RAW_LEN) b.t[2].raw_data.len -= 4;
    if (mut == M_DOUBLE) b.t[3].data_type = 11;
    if (mut == M_EXTERNAL) b.t[4].has_data_location = 1, b.t[4].data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    (void)ZERO;
    int k = 0;
    node(&b, k++, "Sub", "x", "mean", "x1", 0);
    node(&b, k++, "Div", "x1", "std", "x2", 0);
    b.ap[2][0] = attr_i(&b, 2, "axis", 1);
    node(&b, k++, "Flatten", "x2", NULL, "x3", 1);
    node(&b, k++, "Constant", NULL, NULL, "b1c", 1);
    b.n[3].n_input = 0;
    Onnx__AttributeProto *av = &b.a[3];
    onnx__attribute_proto__init(av);
    av->name = (char *)"value", av->has_type = 1, av->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR, av->t = &b.t[5];
    b.ap[3][0] = av;
    node(&b, k++, "MatMul", "x3", "W1", "h1", 0);
    node(&b, k++, mut == M_TWO_LINEAR ? "MatMul" : "Add", mut == M_TWO_LINEAR ? "h1" : "b1c",
         mut == M_TWO_LINEAR ? "W1" : "h1", "h2", 0);
    node(&b, k++, mut == M_SIGMOID ? "Sigmoid" : "Relu", "h2", NULL, "h3", 0);
    node(&b, k++, "Reshape", "h3", "shape", "h4", 0);
    node(&b, k, "Gemm", "h4", "W2", "y", 0);
    const char **gin = malloc(3 * sizeof *gin);
    gin[0] = "h4", gin[1] = "W2", gin[2] = "B2";
    b.n[k].n_input = 3, b.n[k].input = (char **)gin;
    b.ap[0][0] = attr_i(&b, 0, "transB", 1);
    b.ap[0][1] = attr_i(&b, 1, mut == M_TRANSA ? "transA" : "transB", 1);
    if (mut == M_ALPHA) {
        b.a[1].name = (char *)"alpha", b.a[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, b.a[1].has_f = 1;
        b.a[1].f = 2;
    }
    b.n[k].attribute = b.ap[0], b.n[k].n_attribute = mut == M_TRANSA || mut == M_ALPHA ? 2 : 1;
    k++;
    if (mut == M_RELU_OUT) node(&b, k++, "Relu", "y", NULL, "y2", 0);
    value(&b, 0, "x", 4, (const int64_t[]){-1, 1, 2, mut == M_DYNAMIC ? -1 : 2});
    value(&b, 1, mut == M_RELU_OUT ? "y2" : "y", 2, (const int64_t[]){-1, 2});
    value(&b, 2, "x_other", 2, (const int64_t[]){1, 4});
    onnx__graph_proto__init(&b.g);
    b.g.n_node = (size_t)k, b.g.node = b.np;
    b.g.n_initializer = 6, b.g.initializer = b.tp;
    b.g.n_input = mut == M_TWO_INPUTS ? 2 : 1, b.g.input = (Onnx__ValueInfoProto *[]){b.vip[0], b.vip[2]};
    b.g.n_output = 1, b.g.output = &b.vip[1];
    write_model(&b, path);
    free(gin);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* a fresh folder dir (a mkdtemp template) and the paths of its network, property and counterexample */
static int tmp_files(char *dir, char *net, char *prop, char *cex)
{
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return 0;
    }
    snprintf(net, 64, "%s/n.onnx", dir), snprintf(prop, 64, "%s/p.vnnlib", dir);
    snprintf(cex, 64, "%s/cex", dir);
    return 1;
}

/* the property head + tail written to prop and answered on net by method m (--cex cex) */
static vt_cert_spec_answer ask(const char *net, const char *prop, const char *cex, int m, const char *head,
                               const char *tail)
{
    char text[1024];
    snprintf(text, sizeof text, "%s%s", head, tail);
    write_text(prop, text);
    vt_cert_spec_opts so;
    memset(&so, 0, sizeof so);
    so.onnx_path = net, so.vnnlib_path = prop, so.cex_path = cex, so.quiet = 1;
    vt_cert_settings_default(&so.set, (vt_cert_method)m);
    vt_cert_spec_answer a = VT_CERT_SPEC_UNKNOWN;
    CHECK_OK(vt_cert_spec_run(&so, &a));
    return a;
}

/* the real network in FP64 (tests only) */
static void forward(const float *x, double *y)
{
    double a[4], h[3];
    for (int i = 0; i < 4; i++) a[i] = ((double)x[i] - MEAN[0]) / STD[i];
    for (int j = 0; j < 3; j++) {
        double s = B1[j];
        for (int i = 0; i < 4; i++) s += a[i] * W1[i * 3 + j];
        h[j] = s > 0 ? s : 0;
    }
    for (int o = 0; o < 2; o++) {
        double s = B2[o];
        for (int j = 0; j < 3; j++) s += h[j] * W2[o * 3 + j];
        y[o] = s;
    }
}

static void test_onnx(void)
{
    char dir[] = "/tmp/vt-cert-onnx-XXXXXX", net[64], prop[64], cex[64];
    if (!tmp_files(dir, net, prop, cex)) return;
    build(net, M_NONE);
    vt_cert_onnx o;
    uint8_t sha[32];
    CHECK_OK(vt_cert_onnx_read(net, &o, sha));
    CHECK(o.net.L == 2 && o.net.n[0] == 4 && o.net.n[1] == 3 && o.net.n[2] == 2, "layers %u", o.net.L);
    CHECK(o.n_norm == 2 && o.norm_op[0] == 'S' && o.norm_op[1] == 'D' && o.norm_n[0] == 1 && o.norm_n[1] == 4,
          "normalisation steps");
    if (o.net.L == 2) {
        int same = 1;
        for (int i = 0; i < 12; i++) same &= o.net.W[1][i] == W1[i];
        for (int i = 0; i < 3; i++) /* W2 [2, 3] transposed to [3, 2] */
            for (int j = 0; j < 2; j++) same &= o.net.W[2][i * 2 + j] == W2[j * 3 + i];
        for (int j = 0; j < 3; j++) same &= o.net.b[1][j] == B1[j];
        CHECK(same, "weights and biases as written");
    }
    vt_cert_onnx_free(&o);
    /* answers: sat on a disjunction every output reaches, unsat far away */
    const char *head = "(declare-const X_0 Real)(declare-const X_1 Real)(declare-const X_2 Real)(declare-const X_3 Real)\n"
                       "(declare-const Y_0 Real)(declare-const Y_1 Real)\n"
                       "(assert (>= X_0 0.1))(assert (<= X_0 0.3))(assert (>= X_1 0.5))(assert (<= X_1 0.9))\n"
                       "(assert (>= X_2 0))(assert (<= X_2 1))(assert (>= X_3 0.25))(assert (<= X_3 0.5))\n";
    char text[1024];
    for (int m = 0; m < 3; m++) {
        vt_cert_spec_answer a = ask(net, prop, cex, m, head, "(assert (or (and (<= Y_0 Y_1)) (and (<= Y_1 Y_0))))\n");
        CHECK(a == VT_CERT_SAT, "method %d: an always-reached disjunction: %s", m, vt_cert_spec_answer_name(a));
        FILE *f = fopen(cex, "r");
        float x[4] = {0};
        int got = 0;
        for (int i = 0; f && i < 4; i++) {
            double v;
            got += fscanf(f, " %*[(]X_%*d %lf)", &v) == 1;
            x[i] = (float)v;
        }
        if (f) fclose(f);
        CHECK(got == 4 && x[0] >= 0.1f && x[0] <= 0.3f && x[1] >= 0.5f && x[3] <= 0.5f, "counterexample %d read", got);
        a = ask(net, prop, cex, m, head, "(assert (>= Y_0 1e6))\n");
        CHECK(a == VT_CERT_UNSAT, "method %d: a far threshold: %s", m, vt_cert_spec_answer_name(a));
        /* a threshold some sampled input reaches: never unsat */
        double best = -INFINITY, y[2];
        for (int s = 0; s < 2000; s++) {
            float p[4] = {0.1f + 0.2f * (float)(s % 7) / 6, 0.5f + 0.4f * (float)(s % 5) / 4, (float)(s % 11) / 10,
                          0.25f + 0.25f * (float)(s % 3) / 2};
            forward(p, y);
            best = y[0] > best ? y[0] : best;
        }
        snprintf(text, sizeof text, "(assert (>= Y_0 %.17g))\n", best - 1e-6);
        a = ask(net, prop, cex, m, head, text);
        CHECK(a != VT_CERT_UNSAT, "method %d: a reached threshold answered unsat", m);
    }
    /* the mutations */
    static const struct {
        int mut;
        vt_err want;
        const char *text;
    } cases[] = {
        {M_SIGMOID, VT_ERR_UNSUPPORTED, "operator Sigmoid is not supported"},
        {M_TRANSA, VT_ERR_UNSUPPORTED, "transA 1"},
        {M_ALPHA, VT_ERR_UNSUPPORTED, "alpha 2"},
        {M_TWO_INPUTS, VT_ERR_UNSUPPORTED, "more than one input"},
        {M_DYNAMIC, VT_ERR_UNSUPPORTED, "dynamic"},
        {M_RAW_LEN, VT_ERR_FORMAT, "raw_data holds"},
        {M_DOUBLE, VT_ERR_UNSUPPORTED, "data type 11"},
        {M_EXTERNAL, VT_ERR_UNSUPPORTED, "external data"},
        {M_DIV0, VT_ERR_FORMAT, "division by zero"},
        {M_RELU_OUT, VT_ERR_UNSUPPORTED, "a Relu's"},
        {M_TWO_LINEAR, VT_ERR_UNSUPPORTED, "two linear layers"},
        {M_BIAS_SHAPE, VT_ERR_UNSUPPORTED, "3 values of 2 dimensions for a vector of 3 outputs"},
        {M_STD_SHAPE, VT_ERR_UNSUPPORTED, "4 values of 2 dimensions"},
        {M_COLUMN, VT_ERR_UNSUPPORTED, "other than a row vector"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        build(net, cases[i].mut);
        vt_err e = vt_cert_onnx_read(net, &o, sha);
        CHECK(e == cases[i].want && strstr(vt_errmsg(), cases[i].text), "mutation %d: error %d: %s", cases[i].mut, (int)e,
              e ? vt_errmsg() : "accepted");
        if (!e) vt_cert_onnx_free(&o);
    }
    write_text(net, "not a model at all");
    CHECK(vt_cert_onnx_read(net, &o, sha) == VT_ERR_FORMAT, "junk bytes");
    unlink(net), unlink(prop), unlink(cex), rmdir(dir);
}

/* ---------------------------------------------------------------- exact confirmation */

/* x [1, 1] -> Gemm(W [1, 2], C [2]) -> y [1, 2]: y0 = x + 2^-23, y1 = x */
static void build_gemm(const char *path)
{
    static model b;
    memset(&b, 0, sizeof b);
    static const float W[2] = {1, 1}, C[2] = {0x1p-23f, 0};
    tensor(&b, 0, "W", 2, (const int64_t[]){1, 2}, W, 1);
    tensor(&b, 1, "C", 1, (const int64_t[]){2}, C, 1);
    node(&b, 0, "Gemm", "x", "W", "y", 0);
    static char *gin[3] = {(char *)"x", (char *)"W", (char *)"C"};
    b.n[0].n_input = 3, b.n[0].input = gin;
    value(&b, 0, "x", 2, (const int64_t[]){1, 1});
    value(&b, 1, "y", 2, (const int64_t[]){1, 2});
    onnx__graph_proto__init(&b.g);
    b.g.n_node = 1, b.g.node = b.np;
    b.g.n_initializer = 2, b.g.initializer = b.tp;
    b.g.n_input = 1, b.g.input = &b.vip[0];
    b.g.n_output = 1, b.g.output = &b.vip[1];
    write_model(&b, path);
}

/* A real violation whose rigorous interval straddles 0 (the FP32 widening of y0 = x + 2^-23 is
 * about 3e-7 > 2^-23 at x = 1) is confirmed by the exact evaluation of the deployed network at the
 * point (sat, every method); the reverse property (no violation: y0 - y1 = 2^-23 > 0 exactly) is not
 * (unknown: nothing refutes it either). */
static void test_exact_confirm(void)
{
    char dir[] = "/tmp/vt-cert-exact-XXXXXX", net[64], prop[64], cex[64];
    if (!tmp_files(dir, net, prop, cex)) return;
    build_gemm(net);
    vt_cert_onnx o;
    uint8_t sha[32];
    CHECK_OK(vt_cert_onnx_read(net, &o, sha));
    vt_cert_ctx *c = NULL;
    if (o.net.L == 1) CHECK_OK(vt_cert_ctx_new(&o.net, &c));
    if (c) { /* the interval at the point and CROWN on it: neither can confirm */
        vt_cert_set_fp32_any(c, 1);
        double pl[1] = {1}, pu[1] = {1}, ol[2], ou[2], row[2] = {-1, 1}, neg[2] = {1, -1}, lb = 0;
        vt_cert_settings st;
        vt_cert_settings_default(&st, VT_CERT_IBP);
        CHECK_OK(vt_cert_logit_bounds(c, pl, pu, &st, ol, ou));
        CHECK(ol[1] - ou[0] < 0 && ou[1] - ol[0] > 0, "the interval of y1 - y0 at x = 1 [%g, %g] straddles 0",
              ol[1] - ou[0], ou[1] - ol[0]);
        vt_cert_settings_default(&st, VT_CERT_CROWN);
        CHECK_OK(vt_cert_spec_bounds(c, pl, pu, neg, 1, &st, &lb, NULL));
        CHECK(!(lb > 0), "CROWN on the point proves y0 - y1 > 0 (%g): the test is moot", lb);
        CHECK_OK(vt_cert_spec_bounds(c, pl, pu, row, 1, &st, &lb, NULL));
        CHECK(!(lb > 0), "CROWN on the point refutes the violation (%g)", lb);
        vt_cert_ctx_free(c);
    }
    vt_cert_onnx_free(&o);
    const char *head = "(declare-const X_0 Real)(declare-const Y_0 Real)(declare-const Y_1 Real)\n"
                       "(assert (>= X_0 1))(assert (<= X_0 1))\n";
    for (int m = 0; m < 3; m++) {
        unlink(cex);
        vt_cert_spec_answer a = ask(net, prop, cex, m, head, "(assert (>= Y_0 Y_1))\n");
        CHECK(a == VT_CERT_SAT, "method %d: the real violation y0 >= y1: %s", m, vt_cert_spec_answer_name(a));
        FILE *f = fopen(cex, "r");
        double x0 = 0, y0 = 0, y1 = 0;
        int got = f ? fscanf(f, " ((X_0 %lf) (Y_0 %lf) (Y_1 %lf))", &x0, &y0, &y1) : 0;
        if (f) fclose(f);
        CHECK(got == 3 && x0 == 1 && y0 == 1 + 0x1p-23 && y1 == 1, "counterexample (%d read): X_0 %.17g Y_0 %.17g Y_1 %.17g",
              got, x0, y0, y1);
        a = ask(net, prop, cex, m, head, "(assert (<= Y_0 Y_1))\n");
        CHECK(a == VT_CERT_SPEC_UNKNOWN, "method %d: y0 <= y1, false at the only point: %s", m, vt_cert_spec_answer_name(a));
    }
    unlink(net), unlink(prop), unlink(cex), rmdir(dir);
}

/* ---------------------------------------------------------------- a convolutional model */

enum { C_NONE, C_GROUP2, C_DIL2, C_WDIMS, C_POOLSTRIDE, C_RAW_INPUT, C_MEAN_SHAPE, C_GEMM_C_SHAPE, C_N };

/* x [1, 2, 4, 4] - mean (per channel) -> Conv 3x3 pads 1 (3 channels, bias) -> BN -> Relu = r;
 * Conv 1x1 of r (no bias) = s; Add(r, s) -> MaxPool 2x2 -> AveragePool 1x2 (stride 1x2) ->
 * GlobalAveragePool -> Flatten -> Gemm (transB 1, C) -> y [1, 2] */
static float CW1[54], CB1[3], BNS[3], BNB[3], BNM[3], BNV[3], CW2[9], GW[6], GB[2];
static const float CMEAN[2] = {0.25f, -0.125f};

static Onnx__TensorProto *ctensor(const char *name, int rank, const int64_t *dims, const float *v)
{
    Onnx__TensorProto *t = calloc(1, sizeof *t);
    onnx__tensor_proto__init(t);
    size_t n = 1;
    t->dims = calloc(4, sizeof *t->dims);
    for (int k = 0; k < rank; k++) t->dims[k] = dims[k], n *= (size_t)dims[k];
    t->n_dims = (size_t)rank, t->has_data_type = 1, t->data_type = 1, t->name = (char *)name;
    t->n_float_data = n, t->float_data = (float *)v;
    return t;
}

static Onnx__AttributeProto *cattr(const char *name, int n, const int64_t *v)
{
    Onnx__AttributeProto *a = calloc(1, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name, a->has_type = 1;
    if (n == 0) a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = v[0];
    else a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, a->n_ints = (size_t)n, a->ints = (int64_t *)v;
    return a;
}

static Onnx__NodeProto *cnode(const char *op, const char *name, int n_in, const char *const *in, const char *out, int n_attr,
                              Onnx__AttributeProto **attrs)
{
    Onnx__NodeProto *n = calloc(1, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op, n->name = (char *)name, n->n_input = (size_t)n_in, n->input = (char **)in;
    n->n_output = 1, n->output = calloc(1, sizeof(char *)), n->output[0] = (char *)out;
    n->n_attribute = (size_t)n_attr, n->attribute = attrs;
    return n;
}

static void build_cnn(const char *path, int mut)
{
    static const int64_t one[1] = {1}, two[1] = {2}, k3[2] = {3, 3}, p1[4] = {1, 1, 1, 1}, s1[2] = {1, 1}, d2[2] = {2, 2},
                         k2[2] = {2, 2}, k12[2] = {1, 2}, k11[2] = {1, 1};
    Onnx__TensorProto *init[12];
    int ni = 0;
    /* C_MEAN_SHAPE: [2, 1, 1, 1] broadcasts x [1, 2, 4, 4] to [2, 2, 4, 4] (a batch of two) */
    init[ni++] = ctensor("mean", 4, mut == C_MEAN_SHAPE ? (const int64_t[]){2, 1, 1, 1} : (const int64_t[]){1, 2, 1, 1}, CMEAN);
    init[ni++] = ctensor("W1", 4, (const int64_t[]){3, mut == C_WDIMS ? 1 : 2, 3, 3}, CW1);
    init[ni++] = ctensor("B1", 1, (const int64_t[]){3}, CB1);
    init[ni++] = ctensor("bns", 1, (const int64_t[]){3}, BNS);
    init[ni++] = ctensor("bnb", 1, (const int64_t[]){3}, BNB);
    init[ni++] = ctensor("bnm", 1, (const int64_t[]){3}, BNM);
    init[ni++] = ctensor("bnv", 1, (const int64_t[]){3}, BNV);
    init[ni++] = ctensor("W2", 4, (const int64_t[]){3, 3, 1, 1}, CW2);
    init[ni++] = ctensor("GW", 2, (const int64_t[]){2, 3}, GW);
    init[ni++] = ctensor("GB", mut == C_GEMM_C_SHAPE ? 2 : 1, (const int64_t[]){2, 1}, GB); /* [2, 1]: not [1, 2]'s */
    Onnx__NodeProto *nd[12];
    int nn = 0;
    nd[nn++] = cnode("Sub", "norm", 2, (const char *const[]){"x", "mean"}, "x1", 0, NULL);
    Onnx__AttributeProto **ca = calloc(5, sizeof *ca);
    ca[0] = cattr("kernel_shape", 2, k3), ca[1] = cattr("pads", 4, p1), ca[2] = cattr("strides", 2, s1);
    ca[3] = cattr("dilations", 2, mut == C_DIL2 ? d2 : s1), ca[4] = cattr("group", 0, mut == C_GROUP2 ? two : one);
    /* C_RAW_INPUT: conv1 reads x, not the normalised x1 (the bounds would be those of x1's network) */
    nd[nn++] = cnode("Conv", "conv1", 3, (const char *const[]){mut == C_RAW_INPUT ? "x" : "x1", "W1", "B1"}, "c1", 5, ca);
    Onnx__AttributeProto **ba = calloc(1, sizeof *ba);
    ba[0] = calloc(1, sizeof **ba);
    onnx__attribute_proto__init(ba[0]);
    ba[0]->name = (char *)"epsilon", ba[0]->has_type = 1, ba[0]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    ba[0]->has_f = 1, ba[0]->f = 1e-3f;
    nd[nn++] = cnode("BatchNormalization", "bn", 5, (const char *const[]){"c1", "bns", "bnb", "bnm", "bnv"}, "b1", 1, ba);
    nd[nn++] = cnode("Relu", "relu", 1, (const char *const[]){"b1"}, "r", 0, NULL);
    nd[nn++] = cnode("Conv", "conv2", 2, (const char *const[]){"r", "W2"}, "s", 0, NULL);
    nd[nn++] = cnode("Add", "res", 2, (const char *const[]){"s", "r"}, "a", 0, NULL);
    Onnx__AttributeProto **ma = calloc(2, sizeof *ma);
    ma[0] = cattr("kernel_shape", 2, k2), ma[1] = cattr("strides", 2, mut == C_POOLSTRIDE ? k11 : k2);
    nd[nn++] = cnode("MaxPool", "mp", 1, (const char *const[]){"a"}, "m", 2, ma);
    Onnx__AttributeProto **aa = calloc(2, sizeof *aa);
    aa[0] = cattr("kernel_shape", 2, k12), aa[1] = cattr("strides", 2, k12);
    nd[nn++] = cnode("AveragePool", "ap", 1, (const char *const[]){"m"}, "p", 2, aa);
    nd[nn++] = cnode("GlobalAveragePool", "gap", 1, (const char *const[]){"p"}, "g", 0, NULL);
    nd[nn++] = cnode("Flatten", "flat", 1, (const char *const[]){"g"}, "f", 0, NULL);
    Onnx__AttributeProto **ga = calloc(1, sizeof *ga);
    ga[0] = cattr("transB", 0, one);
    nd[nn++] = cnode("Gemm", "fc", 3, (const char *const[]){"f", "GW", "GB"}, "y", 1, ga);
    model b; /* only its value infos */
    memset(&b, 0, sizeof b);
    value(&b, 0, "x", 4, (const int64_t[]){1, 2, 4, 4});
    value(&b, 1, "y", 2, (const int64_t[]){1, 2});
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.n_node = (size_t)nn, g.node = nd, g.n_initializer = (size_t)ni, g.initializer = init;
    g.n_input = 1, g.input = &b.vip[0], g.n_output = 1, g.output = &b.vip[1];
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1, m.ir_version = 8, m.graph = &g;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&m, buf);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
    for (int i = 0; i < ni; i++) free(init[i]->dims), free(init[i]);
    for (int i = 0; i < nn; i++) {
        for (size_t k = 0; k < nd[i]->n_attribute; k++) free(nd[i]->attribute[k]);
        free(nd[i]->attribute), free(nd[i]->output), free(nd[i]);
    }
}

/* the network evaluated directly: T long double (the real network) or float (an FP32 evaluation,
 * rev: each sum in the reverse order) */
#define CNN_FORWARD(NAME, T)                                                                                             \
    static void NAME(const float *x, int rev, double *y)                                                                 \
    {                                                                                                                    \
        T a[2][6][6], c[3][4][4], r[3][4][4], m[3][2][2], g[3];                                                          \
        memset(a, 0, sizeof a);                                                                                          \
        for (int ch = 0; ch < 2; ch++)                                                                                   \
            for (int i = 0; i < 4; i++)                                                                                  \
                for (int j = 0; j < 4; j++) a[ch][i + 1][j + 1] = (T)x[(ch * 4 + i) * 4 + j] - (T)CMEAN[ch];            \
        for (int co = 0; co < 3; co++)                                                                                   \
            for (int i = 0; i < 4; i++)                                                                                  \
                for (int j = 0; j < 4; j++) {                                                                            \
                    T s = 0;                                                                                             \
                    for (int q = 0; q < 18; q++) {                                                                       \
                        int t = rev ? 17 - q : q, ci = t / 9, ky = t / 3 % 3, kx = t % 3;                                \
                        s += (T)CW1[((co * 2 + ci) * 3 + ky) * 3 + kx] * a[ci][i + ky][j + kx];                          \
                    }                                                                                                    \
                    s += (T)CB1[co];                                                                                     \
                    T bn = (s - (T)BNM[co]) / (T)sqrt((T)BNV[co] + (T)1e-3f) * (T)BNS[co] + (T)BNB[co];                  \
                    r[co][i][j] = bn > 0 ? bn : 0;                                                                       \
                }                                                                                                        \
        for (int co = 0; co < 3; co++)                                                                                   \
            for (int i = 0; i < 4; i++)                                                                                  \
                for (int j = 0; j < 4; j++) {                                                                            \
                    T s = 0;                                                                                             \
                    for (int q = 0; q < 3; q++) s += (T)CW2[co * 3 + (rev ? 2 - q : q)] * r[rev ? 2 - q : q][i][j];      \
                    c[co][i][j] = s + r[co][i][j];                                                                       \
                }                                                                                                        \
        for (int co = 0; co < 3; co++)                                                                                   \
            for (int i = 0; i < 2; i++)                                                                                  \
                for (int j = 0; j < 2; j++) {                                                                            \
                    T v = c[co][2 * i][2 * j];                                                                           \
                    for (int q = 1; q < 4; q++) v = c[co][2 * i + q / 2][2 * j + q % 2] > v ? c[co][2 * i + q / 2][2 * j + q % 2] : v; \
                    m[co][i][j] = v;                                                                                     \
                }                                                                                                        \
        for (int co = 0; co < 3; co++) {                                                                                 \
            T p0 = (m[co][0][0] + m[co][0][1]) / 2, p1 = (m[co][1][0] + m[co][1][1]) / 2;                                \
            g[co] = (p0 + p1) / 2;                                                                                       \
        }                                                                                                                \
        for (int o = 0; o < 2; o++) {                                                                                    \
            T s = 0;                                                                                                     \
            for (int q = 0; q < 3; q++) s += (T)GW[o * 3 + (rev ? 2 - q : q)] * g[rev ? 2 - q : q];                      \
            y[o] = (double)(s + (T)GB[o]);                                                                               \
        }                                                                                                                \
    }
CNN_FORWARD(cnn_real, long double)
CNN_FORWARD(cnn_f32, float)

static void test_onnx_cnn(void)
{
    uint64_t st = 12345;
    for (int i = 0; i < 54; i++) CW1[i] = (float)((double)(vt_cert_rand(&st) >> 11) * 0x1p-53 - 0.5);
    for (int i = 0; i < 3; i++) {
        CB1[i] = (float)((double)(vt_cert_rand(&st) >> 11) * 0x1p-53 * 0.2 - 0.1);
        BNS[i] = 0.5f + (float)i * 0.25f, BNB[i] = 0.1f * (float)i - 0.05f, BNM[i] = 0.05f * (float)i, BNV[i] = 0.5f + (float)i;
    }
    for (int i = 0; i < 9; i++) CW2[i] = (float)((double)(vt_cert_rand(&st) >> 11) * 0x1p-53 - 0.5);
    for (int i = 0; i < 6; i++) GW[i] = (float)((double)(vt_cert_rand(&st) >> 11) * 0x1p-53 * 2 - 1);
    GB[0] = 0.125f, GB[1] = -0.25f;
    char dir[] = "/tmp/vt-cert-onnx-cnn-XXXXXX", net[64];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    snprintf(net, sizeof net, "%s/c.onnx", dir);
    build_cnn(net, C_NONE);
    vt_cert_onnx o;
    vt_cert_graph *g = NULL;
    uint8_t sha[32];
    CHECK_OK(vt_cert_onnx_read_any(net, &o, &g, sha));
    CHECK(g && o.net.n[0] == 32 && o.n_norm == 1 && o.norm_n[0] == 32, "a graph of 32 inputs, one normalisation step");
    vt_cert_onnx_free(&o); /* the graph owns copies of what it needs */
    CHECK(vt_cert_onnx_read(net, &o, sha) == VT_ERR_UNSUPPORTED, "the MLP reader refuses a convolutional file");
    if (!g) return;
    CHECK(vt_cert_graph_size(g, vt_cert_graph_n_nodes(g) - 1) == 2, "two outputs");
    uint32_t out = vt_cert_graph_n_nodes(g) - 1;
    static const double C[3][2] = {{1, -1}, {-1, 1}, {0.5, 2}};
    long checked = 0, below = 0, outside = 0, crown_better = 0;
    for (int sem = 1; sem <= 2; sem++) {
        vt_cert_graph_set_sem(g, (vt_cert_graph_sem)sem);
        for (int box = 0; box < 24; box++) {
            double eps = box % 3 == 0 ? 0.001 : box % 3 == 1 ? 0.02 : 0.2;
            float x0[32], x[32];
            double xl[32], xu[32], ll[32], lu[32], y[2];
            for (int i = 0; i < 32; i++) {
                x0[i] = (float)((double)(vt_cert_rand(&st) >> 11) * 0x1p-53);
                xl[i] = x0[i] - eps, xu[i] = x0[i] + eps;
                /* the normalised box, outward (the Sub's FP32 rounding too) */
                double m = CMEAN[i / 16];
                double w = (fabs(xl[i] - m) + fabs(xu[i] - m)) * 0x1p-23 + 0x1p-125;
                ll[i] = nextafter(xl[i] - m - w, -INFINITY), lu[i] = nextafter(xu[i] - m + w, INFINITY);
            }
            double lbi[3], lbc[3];
            int to = 0;
            CHECK_OK(vt_cert_graph_spec_bounds(g, ll, lu, &C[0][0], 3, VT_CERT_IBP, 0, lbi, &to));
            CHECK_OK(vt_cert_graph_spec_bounds(g, ll, lu, &C[0][0], 3, VT_CERT_CROWN, 0, lbc, &to));
            const double *ol, *ou;
            vt_cert_graph_interval(g, out, &ol, &ou);
            for (int r = 0; r < 3; r++) {
                CHECK(lbc[r] >= lbi[r], "CROWN below IBP");
                crown_better += lbc[r] > lbi[r];
            }
            for (int smp = 0; smp < 200; smp++) {
                for (int i = 0; i < 32; i++) {
                    double u = smp < 2 ? (double)((smp + i) % 2) : (double)(vt_cert_rand(&st) >> 11) * 0x1p-53;
                    x[i] = (float)(x0[i] - eps + 2 * eps * u);
                    if ((double)x[i] < xl[i]) x[i] = nextafterf(x[i], INFINITY);
                    if ((double)x[i] > xu[i]) x[i] = nextafterf(x[i], -INFINITY);
                }
                for (int kind = 0; kind < (sem == 2 ? 3 : 1); kind++) {
                    if (kind == 0) cnn_real(x, 0, y);
                    else cnn_f32(x, kind == 2, y);
                    checked++;
                    for (int j = 0; j < 2; j++) outside += y[j] < ol[j] || y[j] > ou[j];
                    for (int r = 0; r < 3; r++) {
                        double v = C[r][0] * y[0] + C[r][1] * y[1];
                        below += v < lbc[r] - 1e-12 * fabs(v) || v < lbi[r] - 1e-12 * fabs(v);
                    }
                }
            }
        }
    }
    CHECK(outside == 0 && below == 0, "%ld evaluations: %ld outside the output's interval, %ld below a row's bound", checked,
          outside, below);
    CHECK(crown_better > 0, "CROWN never above IBP");
    printf("test_cert_onnx: convolutional model: %ld evaluations inside every bound; CROWN above IBP on %ld rows\n", checked,
           crown_better);
    vt_cert_graph_free(g);
    vt_cert_onnx_free(&o);
    static const struct {
        int mut;
        const char *text;
    } cases[] = {{C_GROUP2, "group 2"}, {C_DIL2, "dilations 2"}, {C_WDIMS, "weight [3, 1, 3, 3]"}, {C_POOLSTRIDE, "strides = kernel"},
                     {C_RAW_INPUT, "before its normalisation"}, {C_MEAN_SHAPE, "2 values of 4 dimensions"},
                     {C_GEMM_C_SHAPE, "C of 2 values"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        build_cnn(net, cases[i].mut);
        vt_err e = vt_cert_onnx_read_any(net, &o, &g, sha);
        CHECK(e == VT_ERR_UNSUPPORTED && strstr(vt_errmsg(), cases[i].text), "mutation %d: error %d: %s", cases[i].mut,
              (int)e, e ? vt_errmsg() : "accepted");
        if (!e) vt_cert_graph_free(g), vt_cert_onnx_free(&o);
    }
    unlink(net), rmdir(dir);
}
#endif

int main(void)
{
#ifndef VT_HAVE_ONNX
    printf("test_cert_onnx: built without ONNX support: skipped\n");
    return 77;
#else
    test_onnx();
    test_exact_confirm();
    test_onnx_cnn();
    return vt_test_finish("test_cert_onnx");
#endif
}
