/* test_draws.c - the known-answer vectors of docs/data.md "Every draw, byte by byte", computed by the
 * code itself: Philox-4x32-10 (against Random123's published vectors too), the 32-bit words of every
 * purpose, the epoch shuffle, the batches of a few steps, the augmentation's crops and flips, the GPT's
 * window starts, dropout's mask, the initial values, the learning-rate schedules and the input
 * scaling. The vectors are printed as the lines of the block between "<!-- draws:begin -->" and
 * "<!-- draws:end -->" in docs/data.md, and the test fails when the document's block differs from
 * them by a byte: the document cannot drift from the code. `test_draws --print` prints the block
 * (to update the document after a deliberate change). Run from the source directory (ctest does). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../model/vt_model.h"
#include "../../arch/vt_recipe.h"
#include "../../ops/vt_ops.h"
#include "../../ops/vt_philox.h"
#include "../../ops/vt_philox_hd.h"
#include "vt_test.h"

#define DOC "docs/data.md"
#define BEGIN "<!-- draws:begin -->"
#define END "<!-- draws:end -->"

static char g_out[1 << 16];
static size_t g_len;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_out + g_len, sizeof g_out - g_len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof g_out - g_len) g_len += (size_t)n;
}

/* Random123's known-answer vectors for philox4x32_10 (kat_vectors: zeros, ones, pi digits). */
static void random123(void)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x408f276du, 0x41c83b0eu,
         0xa20bc7c6u, 0x6d5451fdu},
        {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u, 0xd16cfe09u, 0x94fdccebu,
         0x5001e420u, 0x24126ea1u},
    };
    for (int i = 0; i < 3; i++) {
        const uint32_t *v = kat[i];
        uint32_t out[4];
        vt_philox4x32(v + 4, v, out);
        CHECK(memcmp(out, v + 6, sizeof out) == 0, "Philox-4x32-10 differs from Random123's vector %d", i);
        put("philox4x32_10 key %08x %08x ctr %08x %08x %08x %08x -> %08x %08x %08x %08x\n", v[4], v[5], v[0], v[1], v[2],
            v[3], out[0], out[1], out[2], out[3]);
    }
}

static void words(void)
{
    static const struct {
        uint64_t seed;
        uint32_t purpose;
        uint64_t step, index;
    } w[] = {{1, 1, 0, 0},          {1, 1, 0, 1},          {1, 1, 2, 0},         {1, 2, 0, (9u << 8) | 0},
             {1, 2, 1, 9u << 8},    {1, 3, 1, 0},          {1, 4, 1, 0},         {1, 5, 1, 0},
             {1, 6, 0, 0},          {0x123456789abcdefull, 2, 0x100000002ull, 0x300000004ull}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        uint32_t ctr[4] = {(uint32_t)w[i].index, (uint32_t)(w[i].index >> 32), (uint32_t)w[i].step,
                           (w[i].purpose << 24) | (uint32_t)(w[i].step >> 32)};
        uint32_t key[2] = {(uint32_t)w[i].seed, (uint32_t)(w[i].seed >> 32)}, out[4];
        vt_philox4x32(key, ctr, out);
        uint32_t r = vt_rand_u32(w[i].seed, w[i].purpose, w[i].step, w[i].index);
        CHECK(r == out[0], "vt_rand_u32 is not word 0 of the documented block");
        put("u32 seed %llu purpose %u step %llu index %llu: key %08x %08x ctr %08x %08x %08x %08x -> %08x\n",
            (unsigned long long)w[i].seed, w[i].purpose, (unsigned long long)w[i].step,
            (unsigned long long)w[i].index, key[0], key[1], ctr[0], ctr[1], ctr[2], ctr[3], r);
    }
    double u = vt_rand_unit(1, 6, 0, 0);
    CHECK(u == (double)(vt_rand_u32(1, 6, 0, 0) >> 8) * 0x1p-24, "vt_rand_unit");
    put("unit seed 1 purpose 6 step 0 index 0 -> %.17g (= (u32 >> 8) 2^-24)\n", u);
}

/* the shuffle, redone here from the documented rule, against vt_shuffle */
static void shuffle(void)
{
    for (uint64_t ep = 0; ep < 2; ep++) {
        uint32_t perm[10], mine[10];
        vt_shuffle(perm, 10, 1, VT_RNG_SHUFFLE, ep);
        for (uint32_t i = 0; i < 10; i++) mine[i] = i;
        for (uint32_t i = 9; i >= 1; i--) {
            uint64_t range = i + 1, limit = 4294967296ull - 4294967296ull % range, r;
            uint32_t a = 0;
            while ((r = vt_rand_u32(1, 2, ep, ((uint64_t)i << 8) | a)) >= limit && a < 255) a++;
            uint32_t j = (uint32_t)(r % range), t = mine[i];
            mine[i] = mine[j], mine[j] = t;
        }
        CHECK(memcmp(perm, mine, sizeof perm) == 0, "vt_shuffle is not the documented Fisher-Yates");
        put("shuffle seed 1 epoch %llu n 10 ->", (unsigned long long)ep);
        for (int i = 0; i < 10; i++) put(" %u", perm[i]);
        put("\n");
    }
}

/* the batches of steps 1..6 of a run of 10 examples, batch 4: vt_model_batch_indices itself */
static void batches(void)
{
    vt_recipe rc;
    vt_recipe_default(&rc);
    rc.widths[0] = 4, rc.widths[1] = 3, rc.n_layers = 1, rc.batch = 4, rc.seed = 1;
    vt_model m;
    memset(&m, 0, sizeof m);
    if (vt_model_init(&m, &rc, 10, VT_ORDER_BLAS) != VT_OK) {
        CHECK(0, "vt_model_init: %s", vt_errmsg());
        return;
    }
    for (uint64_t s = 1; s <= 6; s++) {
        vt_model_batch_indices(&m, s);
        put("batch seed 1 n 10 batch 4 step %llu (epoch %llu, position %llu) ->", (unsigned long long)s,
            (unsigned long long)((s - 1) / 2), (unsigned long long)((s - 1) % 2));
        uint32_t perm[10];
        vt_shuffle(perm, 10, 1, VT_RNG_SHUFFLE, (s - 1) / 2);
        for (int i = 0; i < 4; i++) {
            CHECK(m.batch_idx[i] == perm[(s - 1) % 2 * 4 + (uint64_t)i], "batch slot %d of step %llu", i,
                  (unsigned long long)s);
            put(" %zu", m.batch_idx[i]);
        }
        put("\n");
    }
    vt_model_free(&m);
}

static void augment(void)
{
    for (uint64_t b = 0; b < 4; b++) {
        uint32_t oy, ox;
        int fl;
        vt_augment_draw(1, 1, b, 4, 1, &oy, &ox, &fl);
        CHECK(oy == vt_rand_u32(1, 3, 1, 4 * b) % 9 && ox == vt_rand_u32(1, 3, 1, 4 * b + 1) % 9 &&
                  fl == (int)(vt_rand_u32(1, 3, 1, 4 * b + 2) & 1),
              "the augmentation's draws of slot %llu", (unsigned long long)b);
        /* output pixel (0, 0) of channel 0 of a 32 x 32 image: its source element or -1 */
        long long src = (long long)vt_augment_source(32, 32, 4, oy, ox, fl, 0);
        put("augment seed 1 step 1 slot %llu pad 4 flip on -> crop y %u x %u flip %d; output (c 0, y 0, x 0) reads %lld\n",
            (unsigned long long)b, oy, ox, fl, src);
    }
}

static void windows(void)
{
    const uint64_t n = 1003854, T = 64; /* shakespeare-train: floor(0.9 * 1115394) characters */
    for (uint64_t b = 0; b < 4; b++) {
        uint64_t s0 = vt_window_start(1, 1, b, n, T);
        uint64_t w = (uint64_t)vt_rand_u32(1, 5, 1, 2 * b) << 32 | vt_rand_u32(1, 5, 1, 2 * b + 1);
        CHECK(s0 == w % (n - T), "window start of slot %llu", (unsigned long long)b);
        put("window seed 1 step 1 slot %llu n %llu T %llu -> start %llu\n", (unsigned long long)b,
            (unsigned long long)n, (unsigned long long)T, (unsigned long long)s0);
    }
}

static void dropout(void)
{
    for (uint32_t key = 0; key < 2; key++) {
        put("dropout seed 1 step 1 key %u p 0.1 elements 0..31 kept ->", key);
        char mask[33];
        for (uint64_t e = 0; e < 32; e++) {
            int k = vti_dropout_keep(1, 1, key, e, 0.1);
            CHECK(k == (vt_rand_u32(1, 4, 1, (uint64_t)key << 32 | e) >= 429496729u), "dropout element %llu",
                  (unsigned long long)e);
            mask[e] = k ? '1' : '0';
        }
        mask[32] = 0;
        put(" %s\n", mask);
    }
}

static void init_values(void)
{
    vt_recipe rc;
    vt_recipe_default(&rc); /* MNIST 784-128-10, seed 1: tensor 0 is fc1.weight, fan-in 784 */
    vt_program p;
    memset(&p, 0, sizeof p);
    if (vt_program_build(&rc, &p) != VT_OK) {
        CHECK(0, "vt_program_build: %s", vt_errmsg());
        return;
    }
    for (size_t k = 0; k < 3; k++) {
        float v = vt_program_initial_value(&p, 1, 0, k);
        double u = vt_rand_unit(1, 1, 0, k);
        CHECK(v == (float)((2.0 * u - 1.0) * sqrt(6.0 / 784.0)), "initial value %zu", k);
        uint32_t bits;
        memcpy(&bits, &v, 4);
        put("init seed 1 tensor 0 (%s, He-uniform, fan-in %u) element %zu -> %.9g (0x%08x)\n", p.t[0].name,
            p.t[0].fan_in, k, (double)v, bits);
    }
    vt_program_free(&p);
}

static void schedules(void)
{
    const vt_schedule sc[3] = {{VT_SCHED_STEP, 0, 500, 1500, 0.05, 0.3, 0.1},
                               {VT_SCHED_COSINE, 100, 0, 2000, 0.003, 0.5, 0.1},
                               {VT_SCHED_LINEAR, 10, 0, 100, 0.1, 0.5, 0.25}};
    const char *name[3] = {"step lr 0.05 decay_every 500 decay_factor 0.3",
                           "cosine lr 0.003 warmup 100 steps 2000 final_lr_factor 0.1",
                           "linear lr 0.1 warmup 10 steps 100 final_lr_factor 0.25"};
    const uint64_t at[3][5] = {{1, 500, 501, 1001, 1500}, {1, 100, 101, 1000, 2000}, {5, 10, 11, 55, 100}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            put("lr %s step %llu -> %.17g\n", name[i], (unsigned long long)at[i][j], vt_schedule_lr(&sc[i], at[i][j]));
}

static void scaling(void)
{
    const unsigned v[4] = {0, 1, 128, 255};
    for (int i = 0; i < 4; i++) {
        float f = (float)((double)v[i] / 255.0);
        CHECK(f == (float)v[i] / 255.0f, "v / 255 in FP32 differs");
        uint32_t bits;
        memcpy(&bits, &f, 4);
        put("scale MNIST/CIFAR-10 v %u -> %.9g (0x%08x)\n", v[i], (double)f, bits);
    }
}

static char *read_doc(size_t *len)
{
    FILE *f = fopen(DOC, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    *len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[*len] = 0;
    return buf;
}

int main(int argc, char **argv)
{
    random123();
    words();
    shuffle();
    batches();
    augment();
    windows();
    dropout();
    init_values();
    schedules();
    scaling();
    if (argc > 1 && strcmp(argv[1], "--print") == 0) {
        fputs(g_out, stdout);
        return vt_test_finish("test_draws");
    }
    size_t len = 0;
    char *doc = read_doc(&len);
    CHECK(doc != NULL, "cannot read %s (run from the source directory)", DOC);
    if (doc) {
        char *b = strstr(doc, BEGIN), *e = b ? strstr(b, END) : NULL;
        CHECK(b && e, "%s has no block between %s and %s", DOC, BEGIN, END);
        if (b && e) {
            /* the block: a fenced code block of exactly the lines computed above */
            char *s = strstr(b, "```text\n"), *t = s ? strstr(s + 8, "```") : NULL;
            CHECK(s && t && t < e, "the draws block of %s is not one ```text fence", DOC);
            if (s && t && t < e) {
                s += 8;
                size_t n = (size_t)(t - s);
                if (n != g_len || memcmp(s, g_out, n) != 0) {
                    size_t i = 0;
                    while (i < n && i < g_len && s[i] == g_out[i]) i++;
                    size_t ls = i;
                    while (ls > 0 && g_out[ls - 1] != '\n') ls--;
                    CHECK(0, "%s's known-answer vectors differ from the code's at byte %zu; the code's line: %.*s", DOC,
                          i, (int)(strcspn(g_out + ls, "\n")), g_out + ls);
                }
            }
        }
    }
    free(doc);
    return vt_test_finish("test_draws");
}
