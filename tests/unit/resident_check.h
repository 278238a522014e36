/* resident_check.h - device-resident steps against the CPU (shared by test_resident, which runs
 * the GPU's CPU twin, and test_cuda, which runs the GPU): an MLP with SGD and with Adam, a small
 * residual CNN (step programs 1 and 3) and a one-layer GPT (with and without dropout), in both roundings, must give the
 * plain CPU run's state and loss at every step, the same (empty) log in exact rounding and, in log
 * rounding, a log that a CPU replayer in the reverse order accepts, ending in the same state; failing steps (a NaN in a bias, labels beyond the
 * classes) must fail alike: the same error, message, and fault operation and element. */
#ifndef RESIDENT_CHECK_H
#define RESIDENT_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/vt_data.h"
#include "backend/vt_backend.h"
#include "model/vt_model.h"
#include "ops/vt_ops.h"
#include "vt_test.h"

/* a device for one model: open fills be (and state), close checks what it wants and frees */
typedef struct {
    vt_backend be;
    void *state;
} rs_dev;
typedef struct {
    int (*open)(vt_model *m, rs_dev *d);
    void (*close)(rs_dev *d, const vt_recipe *rc, const vt_model *m, const char *what);
} rs_device;

static void compare(const char *what, const vt_recipe *rc, const vt_dataset *ds, const rs_device *dev)
{
    vt_model a, b, r; /* the CPU, the twin, and a CPU replayer of the twin's log */
    CHECK_OK(vt_model_init(&a, rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&b, rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&r, rc, ds->n, VT_ORDER_REVERSE));
    if (!a.state || !b.state || !r.state) return;
    rs_dev d;
    if (!dev->open(&b, &d)) {
        CHECK(0, "%s: cannot open the device: %s", what, vt_errmsg());
        vt_model_free(&a), vt_model_free(&b), vt_model_free(&r);
        return;
    }
    vt_model_set_backend(&b, &d.be);
    vt_steplog la, lb;
    vt_steplog_init(&la, 0);
    vt_steplog_init(&lb, 0);
    vt_rctx ca, cb, cr;
    vt_rctx_init(&ca, VT_RMODE_RECORD, rc->bound);
    vt_rctx_init(&cb, VT_RMODE_RECORD, rc->bound);
    vt_rctx_init(&cr, VT_RMODE_REPLAY, rc->bound);
    int same = 1;
    uint64_t entries = 0;
    for (uint64_t s = 1; s <= rc->steps && same; s++) {
        float fa = 0, fb = 0;
        CHECK_OK(vt_rctx_begin_step(&ca, s, &la));
        CHECK_OK(vt_rctx_begin_step(&cb, s, &lb));
        CHECK_OK(vt_model_step(&a, ds, &ca, &fa));
        CHECK_OK(vt_model_step(&b, ds, &cb, &fb));
        uint8_t ha[32], hb[32];
        CHECK_OK(vt_steplog_hash(&la, ha));
        CHECK_OK(vt_steplog_hash(&lb, hb));
        entries += vt_steplog_total_entries(&lb);
        /* the stored values are RN32 of exact values in both roundings: the same state and loss;
         * exact rounding has no log, and a log-rounding twin's log (its own values: column sums from
         * the exact value) must be accepted by a CPU replayer in another order, with the same state */
        float fr = 0;
        CHECK_OK(vt_rctx_begin_step(&cr, s, &lb));
        vt_err er = vt_model_step(&r, ds, &cr, &fr);
        CHECK(er == VT_OK, "%s: step %llu: a CPU replayer refuses the twin's log: %s", what, (unsigned long long)s,
              vt_errmsg());
        CHECK(er || vt_rctx_end_step(&cr) == VT_OK, "%s: every record of the twin's log consumed", what);
        same = memcmp(a.state, b.state, a.n_state * sizeof(float)) == 0 && memcmp(&fa, &fb, 4) == 0 &&
               memcmp(r.state, b.state, b.n_state * sizeof(float)) == 0 &&
               (rc->bound.rounding == VT_ROUNDING_LOG || memcmp(ha, hb, 32) == 0);
        CHECK(same, "%s: step %llu: the device-resident twin gives another state, loss or log", what,
              (unsigned long long)s);
    }
    CHECK(ca.stats.rounded == cb.stats.rounded, "%s: the same number of rounded elements", what);
    printf("%s: %llu steps alike, %llu log entries", what, (unsigned long long)rc->steps, (unsigned long long)entries);
    dev->close(&d, rc, &b, what);
    vt_steplog_free(&la);
    vt_steplog_free(&lb);
    vt_model_free(&a);
    vt_model_free(&b);
    vt_model_free(&r);
}

/* A failing step: the CPU and the twin fail alike - the error, its message, the fault's
 * operation and element. poison 1: a NaN in a bias (the device's bias_add fails); 2: labels that
 * are no class (the network has 5 outputs; MNIST has labels up to 9). */
static void compare_failure(const char *what, vt_recipe rc, const vt_dataset *ds, int poison, const rs_device *dev)
{
    if (poison == 2) CHECK_OK(vt_recipe_set(&rc, "layers=[784,32,5]"));
    vt_model a, b;
    CHECK_OK(vt_model_init(&a, &rc, ds->n, VT_ORDER_FORWARD));
    CHECK_OK(vt_model_init(&b, &rc, ds->n, VT_ORDER_FORWARD));
    if (!a.state || !b.state) return;
    rs_dev d;
    if (!dev->open(&b, &d)) {
        CHECK(0, "%s: cannot open the device: %s", what, vt_errmsg());
        vt_model_free(&a), vt_model_free(&b);
        return;
    }
    vt_model_set_backend(&b, &d.be);
    if (poison == 1)
        for (uint32_t t = 0; t < a.prog.n_tensors; t++)
            if (strstr(a.prog.t[t].name, "bias") && a.prog.t[t].cls == VT_TC_PARAM) {
                ((float *)vt_model_tensor(&a, t, NULL))[3] = NAN;
                ((float *)vt_model_tensor(&b, t, NULL))[3] = NAN;
                break;
            }
    vt_steplog la, lb;
    vt_steplog_init(&la, 0);
    vt_steplog_init(&lb, 0);
    vt_rctx ca, cb;
    vt_rctx_init(&ca, VT_RMODE_RECORD, rc.bound);
    vt_rctx_init(&cb, VT_RMODE_RECORD, rc.bound);
    float fa, fb;
    CHECK_OK(vt_rctx_begin_step(&ca, 1, &la));
    CHECK_OK(vt_rctx_begin_step(&cb, 1, &lb));
    vt_err ea = vt_model_step(&a, ds, &ca, &fa);
    char ma[256];
    snprintf(ma, sizeof ma, "%s", vt_errmsg());
    vt_err eb = vt_model_step(&b, ds, &cb, &fb);
    CHECK(ea != VT_OK && ea == eb, "%s: both fail alike (cpu %d, twin %d)", what, ea, eb);
    CHECK(strcmp(ma, vt_errmsg()) == 0, "%s: the same message (cpu \"%s\", twin \"%s\")", what, ma, vt_errmsg());
    CHECK(ca.fault.code == cb.fault.code && ca.fault.op_id == cb.fault.op_id && ca.fault.index == cb.fault.index,
          "%s: the same fault (cpu op %u index %llu, twin op %u index %llu)", what, ca.fault.op_id,
          (unsigned long long)ca.fault.index, cb.fault.op_id, (unsigned long long)cb.fault.index);
    printf("%s: both fail: %s", what, ma);
    dev->close(&d, NULL, &b, what);
    vt_steplog_free(&la);
    vt_steplog_free(&lb);
    vt_model_free(&a);
    vt_model_free(&b);
}

/* the small residual CNN and the one-layer GPT of the checks */
static const char *const rs_resnet_set[] = {"arch=resnet", "dataset=cifar10-train", "layers=[3072,10]",
                                            "image_channels=3", "image_height=32", "image_width=32", "augment_pad=4",
                                            "augment_flip=1", "resnet_width=4", "resnet_stages=2", "resnet_blocks=1",
                                            "resnet_pool=1", "batch=8", "steps=6", "lr=0.05", "momentum=0.9"};
static const char *const rs_gpt_set[] = {"arch=gpt", "dataset=shakespeare-train", "gpt_layers=1", "gpt_heads=2",
                                         "gpt_width=16", "gpt_context=8", "gpt_vocab=65", "gpt_tie=1", "batch=4",
                                         "steps=5", "optimizer=adamw", "lr=0.003", "beta1=0.9", "beta2=0.99",
                                         "eps=1e-8", "weight_decay=0.1", "clip_norm=0.5", "schedule=cosine",
                                         "warmup=2"};
#define RS_N(a) (sizeof(a) / sizeof((a)[0]))

static void rs_all(const rs_device *dev)
{
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    vt_err e = vt_data_load("mnist-train", NULL, &ds);
    CHECK(e == VT_OK, "load mnist-train: %s", vt_errmsg());
    if (e) return;
    static const char *const variants[][3] = {
        {"SGD, exact rounding", "rounding=exact", "optimizer=sgd"},
        {"SGD, log rounding", "rounding=log", "optimizer=sgd"},
        {"Adam, exact rounding", "rounding=exact", "optimizer=adam"},
        {"Adam, log rounding", "rounding=log", "optimizer=adam"},
    };
    for (size_t v = 0; v < 4; v++) {
        vt_recipe rc;
        vt_recipe_default(&rc);
        CHECK_OK(vt_recipe_set(&rc, "steps=30"));
        CHECK_OK(vt_recipe_set(&rc, "layers=[784,128,64,10]"));
        CHECK_OK(vt_recipe_set(&rc, variants[v][1]));
        CHECK_OK(vt_recipe_set(&rc, variants[v][2]));
        CHECK_OK(vt_recipe_validate(&rc));
        compare(variants[v][0], &rc, &ds, dev);
        if (v % 2 == 0) {
            char what[96];
            snprintf(what, sizeof what, "%s, NaN bias", variants[v][0]);
            compare_failure(what, rc, &ds, 1, dev);
            snprintf(what, sizeof what, "%s, labels beyond the classes", variants[v][0]);
            compare_failure(what, rc, &ds, 2, dev);
        }
    }
    vt_data_free(&ds);
    /* the residual CNN: convolutions' gathers and weight transpose, batch norm, pooling, residual
     * additions, column sums and dot products, the augmentation on the twin; the loader on the CPU */
    memset(&ds, 0, sizeof ds);
    e = vt_data_load("cifar10-train", NULL, &ds);
    CHECK(e == VT_OK, "load cifar10-train: %s", vt_errmsg());
    if (e) return;
    for (int v = 0; v < 5; v++) { /* programs 1 and 3 (3: conv2d and its gradient kinds, program 1's GEMMs
                                   * of operands formed on the device) in each rounding; then program 3
                                   * 8 wide in log rounding, whose convolutions log entries at step 2 */
        const int log = v % 2 || v == 4, p3 = v >= 2;
        vt_recipe rc;
        vt_recipe_default(&rc);
        for (size_t k = 0; k < RS_N(rs_resnet_set); k++) CHECK_OK(vt_recipe_set(&rc, rs_resnet_set[k]));
        CHECK_OK(vt_recipe_set(&rc, log ? "rounding=log" : "rounding=exact"));
        CHECK_OK(vt_recipe_set(&rc, p3 ? "program_version=3" : "program_version=1"));
        if (v == 4) {
            CHECK_OK(vt_recipe_set(&rc, "resnet_width=8"));
            CHECK_OK(vt_recipe_set(&rc, "steps=3"));
        }
        CHECK_OK(vt_recipe_validate(&rc));
        compare(v == 4 ? "ResNet program 3 8 wide, log rounding"
                : log  ? (p3 ? "ResNet program 3, log rounding" : "ResNet, log rounding")
                       : (p3 ? "ResNet program 3, exact rounding" : "ResNet, exact rounding"),
                &rc, &ds, dev);
    }
    vt_data_free(&ds);
    /* the character-level GPT: embeddings, layer norm, heads, causal softmax, GELU, dropout, the
     * attention's batched GEMMs, the squared norms, gradient clipping and AdamW on the device; the
     * windows, the schedule and the sum of the squared norms' scalars on the CPU */
    memset(&ds, 0, sizeof ds);
    e = vt_data_load("shakespeare-train", NULL, &ds);
    CHECK(e == VT_OK, "load shakespeare-train: %s", vt_errmsg());
    if (e) return;
    for (int v = 0; v < 3; v++) {
        vt_recipe rc;
        vt_recipe_default(&rc);
        for (size_t k = 0; k < RS_N(rs_gpt_set); k++) CHECK_OK(vt_recipe_set(&rc, rs_gpt_set[k]));
        CHECK_OK(vt_recipe_set(&rc, v == 1 ? "rounding=log" : "rounding=exact"));
        CHECK_OK(vt_recipe_set(&rc, v == 2 ? "dropout=0.1" : "dropout=0"));
        CHECK_OK(vt_recipe_validate(&rc));
        compare(v == 0 ? "GPT, exact rounding" : v == 1 ? "GPT, log rounding" : "GPT with dropout, exact rounding", &rc,
                &ds, dev);
    }
    vt_data_free(&ds);
}

/* Shorter runs of each architecture, in both roundings, for a device in the per-operation check
 * mode (test_resident: the twin with the check on). */
static inline void rs_checked(const rs_device *dev)
{
    static const char *const data[] = {"mnist-train", "cifar10-train", "shakespeare-train"};
    for (int a = 0; a < 3; a++) {
        vt_dataset ds;
        memset(&ds, 0, sizeof ds);
        vt_err e = vt_data_load(data[a], NULL, &ds);
        CHECK(e == VT_OK, "load %s: %s", data[a], vt_errmsg());
        if (e) return;
        for (int v = 0; v < (a == 0 ? 2 : 3); v++) { /* the CNN's third: program 3, exact */
            vt_recipe rc;
            vt_recipe_default(&rc);
            if (a == 0) {
                CHECK_OK(vt_recipe_set(&rc, "layers=[784,64,10]"));
                CHECK_OK(vt_recipe_set(&rc, "optimizer=adam"));
            }
            for (size_t k = 0; a == 1 && k < RS_N(rs_resnet_set); k++) CHECK_OK(vt_recipe_set(&rc, rs_resnet_set[k]));
            for (size_t k = 0; a == 2 && k < RS_N(rs_gpt_set); k++) CHECK_OK(vt_recipe_set(&rc, rs_gpt_set[k]));
            CHECK_OK(vt_recipe_set(&rc, "steps=2"));
            CHECK_OK(vt_recipe_set(&rc, v == 1 ? "rounding=log" : "rounding=exact"));
            if (a == 2) CHECK_OK(vt_recipe_set(&rc, v == 2 ? "dropout=0.1" : "dropout=0"));
            if (a == 1) CHECK_OK(vt_recipe_set(&rc, v == 2 ? "program_version=3" : "program_version=1"));
            CHECK_OK(vt_recipe_validate(&rc));
            char what[96];
            snprintf(what, sizeof what, "checked %s, %s rounding%s", a == 0 ? "MLP (Adam)" : a == 1 ? "ResNet" : "GPT",
                     v == 1 ? "log" : "exact", v != 2 ? "" : a == 2 ? ", dropout" : ", program 3");
            compare(what, &rc, &ds, dev);
        }
        vt_data_free(&ds);
    }
}

#endif
