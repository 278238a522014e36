/* test_cert_onnx.c - the ONNX reader of `auditor certify --onnx` (cert/vt_cert_onnx.c) on models
 * built here with the protoc-c structures: a network using every supported form (Sub and Div
 * normalisation with a negative divisor, Flatten, MatMul with an Add of a Constant node's bias,
 * Relu, Reshape, Gemm transB 1 with C, a float_data initializer beside raw_data ones) is read into
 * the expected layers, and answered through vt_cert_spec_run (an always-reachable disjunction is
 * sat with a counterexample that an FP64 evaluation confirms; a far threshold is unsat); each
 * mutation outside the supported set is refused with its kind (UNSUPPORTED: exit 64; FORMAT: 2) and
 * a message naming the node and operator. Skipped (77) in a build without ONNX support. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cert/vt_cert.h"
#include "vt_test.h"

#ifdef VT_HAVE_ONNX
#include "onnx.pb-c.h"

enum { M_NONE, M_SIGMOID, M_TRANSA, M_ALPHA, M_TWO_INPUTS, M_DYNAMIC, M_RAW_LEN, M_DOUBLE, M_EXTERNAL, M_DIV0,
       M_RELU_OUT, M_TWO_LINEAR, M_N };

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

/* The test network with one mutation, written to path. */
static void build(const char *path, int mut)
{
    static model b;
    memset(&b, 0, sizeof b);
    static const float ZERO[1] = {0};
    tensor(&b, 0, "mean", 1, (const int64_t[]){1}, MEAN, 1);
    tensor(&b, 1, "std", 4, (const int64_t[]){1, 1, 2, 2}, mut == M_DIV0 ? (const float[]){0.25f, 0, 1, 1} : STD, 0);
    tensor(&b, 2, "W1", 2, (const int64_t[]){4, 3}, W1, 1);
    tensor(&b, 3, "W2", 2, (const int64_t[]){2, 3}, W2, 1);
    tensor(&b, 4, "B2", 1, (const int64_t[]){2}, B2, 1);
    tensor(&b, 5, "b1", 1, (const int64_t[]){3}, B1, 1); /* the Constant node's value */
    Onnx__TensorProto *shape = &b.t[6];
    onnx__tensor_proto__init(shape);
    static int64_t sd[1] = {2}, sv[2] = {1, -1};
    shape->n_dims = 1, shape->dims = sd, shape->has_data_type = 1, shape->data_type = 7, shape->n_int64_data = 2;
    shape->int64_data = sv, shape->name = (char *)"shape";
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
    onnx__model_proto__init(&b.m);
    b.m.has_ir_version = 1, b.m.ir_version = 8, b.m.graph = &b.g;
    size_t len = onnx__model_proto__get_packed_size(&b.m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&b.m, buf);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
    free(gin);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
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
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    snprintf(net, sizeof net, "%s/n.onnx", dir), snprintf(prop, sizeof prop, "%s/p.vnnlib", dir);
    snprintf(cex, sizeof cex, "%s/cex", dir);
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
        vt_cert_spec_opts so;
        memset(&so, 0, sizeof so);
        so.onnx_path = net, so.vnnlib_path = prop, so.cex_path = cex, so.quiet = 1;
        vt_cert_settings_default(&so.set, (vt_cert_method)m);
        vt_cert_spec_answer a;
        snprintf(text, sizeof text, "%s(assert (or (and (<= Y_0 Y_1)) (and (<= Y_1 Y_0))))\n", head);
        write_text(prop, text);
        CHECK_OK(vt_cert_spec_run(&so, &a));
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
        snprintf(text, sizeof text, "%s(assert (>= Y_0 1e6))\n", head);
        write_text(prop, text);
        CHECK_OK(vt_cert_spec_run(&so, &a));
        CHECK(a == VT_CERT_UNSAT, "method %d: a far threshold: %s", m, vt_cert_spec_answer_name(a));
        /* a threshold some sampled input reaches: never unsat */
        double best = -INFINITY, y[2];
        for (int s = 0; s < 2000; s++) {
            float p[4] = {0.1f + 0.2f * (float)(s % 7) / 6, 0.5f + 0.4f * (float)(s % 5) / 4, (float)(s % 11) / 10,
                          0.25f + 0.25f * (float)(s % 3) / 2};
            forward(p, y);
            best = y[0] > best ? y[0] : best;
        }
        snprintf(text, sizeof text, "%s(assert (>= Y_0 %.17g))\n", head, best - 1e-6);
        write_text(prop, text);
        CHECK_OK(vt_cert_spec_run(&so, &a));
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
#endif

int main(void)
{
#ifndef VT_HAVE_ONNX
    printf("test_cert_onnx: built without ONNX support: skipped\n");
    return 77;
#else
    test_onnx();
    return vt_test_finish("test_cert_onnx");
#endif
}
