/* test_errors - messages intact and limits before allocation (issue 22, findings 3, 4, 7):
 * context is added to an error message without formatting into the buffer being read
 * (vt_error_prefix / vt_error_suffix, and vt_set_error with vt_errmsg() as an argument); a recipe's
 * errors name the file and the key; recipe texts and manifests are capped in size and depth before
 * parsing; the model's memory is computed from its program and refused beyond the budget before
 * anything is allocated, naming both sizes; the out-of-memory message shows the real size; the
 * built-in datasets' shapes that vt_recipe_check_dataset knows are the loaded ones; the exit code
 * of each kind of error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/vt_cli.h"
#include "data/vt_data.h"
#include "model/vt_model.h"
#include "arch/vt_recipe.h"
#include "vt_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define VT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VT_ASAN 1
#endif
#endif

static char *repeat(char c, size_t n, const char *head, const char *tail)
{
    size_t h = strlen(head), t = strlen(tail);
    char *s = malloc(h + n + t + 1);
    if (!s) return NULL;
    memcpy(s, head, h);
    memset(s + h, c, n);
    memcpy(s + h + n, tail, t + 1);
    return s;
}

int main(void)
{
    /* --- messages: context added around the current message, which is kept */
    vt_set_error(VT_ERR_FORMAT, "recipe key \"lr\": expected a number");
    CHECK(vt_error_prefix(VT_ERR_ARG, "%s", "badlr.json") == VT_ERR_ARG, "prefix returns its code");
    CHECK(strcmp(vt_errmsg(), "badlr.json: recipe key \"lr\": expected a number") == 0, "prefix: %s", vt_errmsg());
    vt_set_error(VT_ERR_DIVERGED, "training diverged at step %d", 7);
    vt_error_suffix(VT_ERR_DIVERGED, "[%s]", "SGD update fc1.weight");
    CHECK(strcmp(vt_errmsg(), "training diverged at step 7 [SGD update fc1.weight]") == 0, "suffix: %s", vt_errmsg());
    /* the old pattern (run/vt_train.c, game/, protocol/): the message as its own argument */
    vt_set_error(VT_ERR_DIVERGED, "training diverged at step %d", 9);
    vt_set_error(VT_ERR_DIVERGED, "%s [%s]", vt_errmsg(), "fc2 forward GEMM");
    CHECK(strcmp(vt_errmsg(), "training diverged at step 9 [fc2 forward GEMM]") == 0, "self-argument: %s", vt_errmsg());
    vt_set_error(VT_ERR_ARG, "x");
    vt_set_error(VT_ERR_ARG, "service record: %s", vt_errmsg());
    CHECK(strcmp(vt_errmsg(), "service record: x") == 0, "self-argument 2: %s", vt_errmsg());
    /* a long message is truncated, never overrun */
    char *lng = repeat('k', 2000, "", "");
    vt_set_error(VT_ERR_ARG, "%s", lng);
    vt_error_prefix(VT_ERR_ARG, "ctx");
    CHECK(strncmp(vt_errmsg(), "ctx: kkk", 8) == 0 && strlen(vt_errmsg()) < 512, "truncated prefix");
    free(lng);

    /* --- a recipe's errors: the file and the key named, the user's (VT_ERR_ARG) */
    vt_recipe r;
    vt_recipe_default(&r);
    char path[] = "/tmp/vt-test-errors-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    FILE *f = fdopen(fd, "w");
    fputs("{\"lr\": \"x\"}", f);
    fclose(f);
    CHECK(vt_recipe_load_file(&r, path) == VT_ERR_ARG, "bad lr in a file: VT_ERR_ARG");
    char want[256];
    snprintf(want, sizeof want, "%s: recipe key \"lr\": expected a number", path);
    CHECK(strcmp(vt_errmsg(), want) == 0, "bad lr message: %s", vt_errmsg());
    f = fopen(path, "w");
    fputs("{\"nokey\": 1}", f);
    fclose(f);
    CHECK(vt_recipe_load_file(&r, path) == VT_ERR_ARG && strstr(vt_errmsg(), "unknown recipe key \"nokey\""),
          "unknown key in a file: %s", vt_errmsg());
    CHECK(vt_recipe_set(&r, "nokey=1") == VT_ERR_ARG, "unknown key by --set: VT_ERR_ARG");
    CHECK(vt_recipe_set(&r, "lr=\"x\"") == VT_ERR_ARG && strstr(vt_errmsg(), "recipe key \"lr\""), "bad lr by --set");
    CHECK(vt_recipe_load_file(&r, "/dev/zero") == VT_ERR_ARG && strstr(vt_errmsg(), "more than the limit"),
          "/dev/zero: %s", vt_errmsg());
    unlink(path);

    /* --- limits before parsing: size and depth */
    char *big = repeat(' ', VT_JSON_MAX_BYTES, "{}", "");
    CHECK(vt_json_check_limits(big, strlen(big), "manifest") == VT_ERR_LIMIT, "size limit");
    uint8_t dh[32];
    CHECK(vt_manifest_parse(big, strlen(big), &r, dh) == VT_ERR_LIMIT && strstr(vt_errmsg(), "manifest: "),
          "manifest size: %s", vt_errmsg());
    CHECK(vt_recipe_apply_json(&r, big, "text") == VT_ERR_ARG, "recipe text size: the user's");
    free(big);
    char deep[64];
    snprintf(deep, sizeof deep, "{\"a\":\"[[[[[[[[[[[[[[[[[[[[\\\"\"}"); /* brackets inside a string */
    CHECK_OK(vt_json_check_limits(deep, strlen(deep), "x"));
    char *nest = repeat('[', VT_JSON_MAX_DEPTH, "{\"layers\":", "");
    CHECK(vt_json_check_limits(nest, strlen(nest), "x") == VT_ERR_LIMIT && strstr(vt_errmsg(), "nested deeper"),
          "depth limit");
    free(nest);
    nest = repeat('[', VT_JSON_MAX_DEPTH - 1, "{\"layers\":", "");
    CHECK_OK(vt_json_check_limits(nest, strlen(nest), "x"));
    free(nest);
    /* a manifest whose recipe does not validate is malformed (2), not a usage error (64) */
    vt_recipe_default(&r);
    r.batch = 0;
    char *m = NULL;
    memset(dh, 1, sizeof dh);
    r.batch = 64;
    CHECK_OK(vt_manifest_build(&r, dh, "cpu", &m));
    char *p = strstr(m, "\"batch\":64");
    CHECK(p != NULL, "batch in manifest");
    if (p) memcpy(p, "\"batch\":00", 10);
    CHECK(vt_manifest_parse(m, strlen(m), &r, dh) == VT_ERR_FORMAT, "invalid manifest recipe: %s", vt_errmsg());
    free(m);

    /* --- memory: computed from the program, refused before allocation with both sizes */
    vt_recipe_default(&r);
    CHECK_OK(vt_recipe_set(&r, "layers=[784,65536,8192,10]"));
    vt_program prog;
    CHECK_OK(vt_program_build(&r, &prog));
    vt_model_mem need;
    vt_model_need(&prog, r.batch, 60000, &need);
    vt_program_free(&prog);
    double gib = need.total / (1024.0 * 1024 * 1024);
    CHECK(gib > 20 && gib < 21.5, "784-65536-8192-10 needs %.2f GiB", gib); /* the 20.6 GiB */
    vt_model m1;
    vt_model_set_memory_budget(8ull << 30, VT_ERR_LIMIT);
    CHECK(vt_model_init(&m1, &r, 60000, VT_ORDER_BLAS) == VT_ERR_LIMIT, "hostile manifest over budget: LIMIT");
    CHECK(strstr(vt_errmsg(), "the model needs 20.") && strstr(vt_errmsg(), "over the memory budget of 8.00 GiB"),
          "budget message: %s", vt_errmsg());
    CHECK(m1.state == NULL && m1.prog.op == NULL, "nothing allocated");
    vt_model_set_memory_budget(8ull << 30, VT_ERR_ARG);
    CHECK(vt_model_init(&m1, &r, 60000, VT_ORDER_BLAS) == VT_ERR_ARG, "user's recipe over budget: ARG");
    vt_model_set_memory_budget(0, VT_ERR_LIMIT);
    CHECK(vt_memory_available() > 0, "available memory");
    /* a small model fits, and its need is what it allocates at least */
    vt_recipe_default(&r);
    CHECK_OK(vt_model_init(&m1, &r, 1000, VT_ORDER_BLAS));
    vt_model_need(&m1.prog, r.batch, 1000, &need);
    CHECK(need.total >= (double)m1.n_state * 4, "need covers the state");
    vt_model_free(&m1);
    /* a tensor-core mode's convolutions (step program 3) form their operands in memory of their own: the
     * plan counts the largest, im2col's columns of the stem (B*H*W pixels x 3*3*3) */
    CHECK_OK(vt_recipe_load_file(&r, "recipes/resnet-cifar10.json"));
    CHECK_OK(vt_recipe_set(&r, "program_version=3"));
    vt_model_mem fp, tcm;
    CHECK_OK(vt_program_build(&r, &prog));
    vt_model_need(&prog, r.batch, 1000, &fp);
    vt_program_free(&prog);
    CHECK_OK(vt_recipe_set(&r, "gemm_arith=tc-bf16-sm90"));
    CHECK_OK(vt_program_build(&r, &prog));
    vt_model_need(&prog, r.batch, 1000, &tcm);
    double most = 0;
    for (uint32_t j = 1; j <= prog.n_ops; j++) {
        const int64_t *a = prog.op[j].iarg;
        uint16_t kd = prog.op[j].kind;
        if (kd != VT_OPK_CONV2D && kd != VT_OPK_CONV2D_WGRAD && kd != VT_OPK_CONV2D_DGRAD) continue;
        double kk = (double)(a[4] * a[4]), Ho = (double)((a[1] + 2 * a[6] - a[4]) / a[5] + 1),
               Wo = (double)((a[2] + 2 * a[6] - a[4]) / a[5] + 1);
        double f = kd == VT_OPK_CONV2D_DGRAD ? (double)a[0] * a[1] * a[2] * kk * a[8] + kk * a[8] * a[3]
                                             : (double)a[0] * Ho * Wo * kk * a[3];
        if (f > most) most = f;
    }
    vt_program_free(&prog);
    CHECK(most > 0 && tcm.scratch == fp.scratch + 4 * most && tcm.total == fp.total + 4 * most,
          "the tc mode's convolution operands: scratch %.0f against %.0f + 4 x %.0f", tcm.scratch, fp.scratch, most);

#ifndef VT_ASAN
    /* the out-of-memory message shows the real size (it printed "0 state values"): a child under
     * a 2 GiB address-space limit, with a budget that lets the allocation be tried */
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {2ull << 30, 2ull << 30};
        setrlimit(RLIMIT_AS, &rl);
        vt_recipe rr;
        vt_recipe_default(&rr);
        if (vt_recipe_set(&rr, "layers=[784,65536,8192,10]")) _exit(3);
        vt_model mm;
        vt_err e = vt_model_init_within(&mm, &rr, 60000, VT_ORDER_BLAS, UINT64_MAX);
        int good = e == VT_ERR_NOMEM && strstr(vt_errmsg(), "20.") && strstr(vt_errmsg(), "GiB") &&
                   !strstr(vt_errmsg(), "(0 state values)");
        if (!good) fprintf(stderr, "OOM message: %s\n", vt_errmsg());
        _exit(good ? 0 : 1);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "out-of-memory message with the real size");
#endif

    /* --- the dataset shapes vt_recipe_check_dataset knows are the loaded datasets' */
    static const char *const names[] = {"mnist-train", "mnist-test", "digits", "cifar10-train", "cifar10-test"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        vt_dataset ds;
        memset(&ds, 0, sizeof ds);
        if (vt_data_load(names[i], NULL, &ds) != VT_OK) {
            printf("  (dataset %s not available: %s)\n", names[i], vt_errmsg());
            continue;
        }
        vt_recipe_default(&r);
        snprintf(r.dataset, sizeof r.dataset, "%s", names[i]);
        r.n_layers = 1, r.widths[0] = ds.d, r.widths[1] = ds.n_classes;
        CHECK_OK(vt_recipe_check_dataset(&r));
        r.widths[1] = ds.n_classes - 1;
        CHECK(vt_recipe_check_dataset(&r) == VT_ERR_ARG, "%s: classes checked", names[i]);
        vt_data_free(&ds);
    }

    /* --- one exit code per kind (README.md "Exit statuses") */
    CHECK(vt_cli_exit_for(VT_OK) == 0 && vt_cli_exit_for(VT_ERR_DIVERGED) == 1 && vt_cli_exit_for(VT_ERR_ARG) == 64 &&
              vt_cli_exit_for(VT_ERR_FORMAT) == 2 && vt_cli_exit_for(VT_ERR_LIMIT) == 2 &&
              vt_cli_exit_for(VT_ERR_IO) == 2 && vt_cli_exit_for(VT_ERR_NOMEM) == 2 &&
              vt_cli_exit_for(VT_ERR_ENV) == 2 && vt_cli_exit_for(VT_ERR_INTERNAL) == 70,
          "vt_cli_exit_for");
    CHECK(vt_cli_exit_for_input(VT_ERR_ARG) == 2 && vt_cli_exit_for_input(VT_ERR_INTERNAL) == 70, "for input");
    uint64_t sz = 0;
    CHECK(vt_cli_size("--max-memory", "8G", &sz) == VT_OK && sz == 8ull << 30, "8G");
    CHECK(vt_cli_size("--max-memory", "512MiB", &sz) == VT_OK && sz == 512ull << 20, "512MiB");
    CHECK(vt_cli_size("--max-memory", "4096", &sz) == VT_OK && sz == 4096, "4096");
    CHECK(vt_cli_size("--max-memory", "0", &sz) == VT_ERR_ARG && vt_cli_size("--max-memory", "8X", &sz) == VT_ERR_ARG &&
              vt_cli_size("--max-memory", "-1G", &sz) == VT_ERR_ARG && vt_cli_size("--max-memory", "99999999999T", &sz),
          "bad sizes refused");
    return vt_test_finish("test_errors");
}
