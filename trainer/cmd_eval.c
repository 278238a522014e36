/* trainer eval / sample: a run's final model (its last checkpoint) evaluated on a data set, or
 * generating text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/vt_store.h"
#include "trainer.h"

vt_err trainer_load_run_model(const char *run, vt_recipe *rcp, vt_model *m, uint64_t *step)
{
    vt_store *st = NULL;
    char *mf = NULL;
    size_t ml = 0, nck = 0;
    uint8_t mh[32], dh[32];
    uint64_t *cks = NULL;
    float *state = NULL;
    memset(m, 0, sizeof *m);
    vt_err e = vt_store_open(run, 1, &st);
    if (!e) e = vt_store_manifest(st, &mf, &ml, mh);
    if (!e) e = vt_manifest_parse(mf, ml, rcp, dh);
    if (!e) e = vt_store_list_checkpoints(st, &cks, &nck);
    if (!e && nck == 0) e = vt_set_error(VT_ERR_FORMAT, "run %s has no checkpoint", run);
    /* the model is only evaluated here: the example count merely sizes its (unused) shuffle */
    if (!e) e = vt_model_init(m, rcp, rcp->batch, VT_ORDER_BLAS);
    if (!e) e = vt_store_get_checkpoint(st, cks[nck - 1], m->n_state, &state);
    if (!e) e = vt_model_set_state(m, cks[nck - 1], state, m->n_state);
    if (!e) *step = cks[nck - 1];
    if (e && m->state) vt_model_free(m);
    free(state);
    free(cks);
    free(mf);
    vt_store_close(st);
    return e;
}

/* Accuracy (validation loss for a text model) of a run's last checkpoint on a dataset. */
int trainer_eval(int argc, char **argv)
{
    const char *spec = NULL, *root = NULL, *per_example = NULL;
    uint64_t max_memory = 0;
    const vt_cli_opt opts[] = {
        VT_OPT_S("--dataset", "SPEC", "the data to evaluate on: NAME or NAME:N, or a file (safetensors:PATH,\n"
                                      "npy:X.npy,Y.npy, text:PATH, text-val:PATH, file:PATH; docs/data.md);\n"
                                      "default: mnist-test for MNIST runs, cifar10-test for CIFAR-10 runs,\n"
                                      "shakespeare-val for tiny-shakespeare, a text file's last 10%\n"
                                      "(text-val:PATH), otherwise the run's own training data (said so)", &spec),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &root),
        VT_OPT_S("--per-example", "FILE", "each example's index, label and predicted class, a line each (a text\n"
                                          "model: each predicted position's index w*T + k, next token and\n"
                                          "predicted token)", &per_example),
        VT_OPT_Z("--max-memory", VT_HELP_MAX_MEMORY, &max_memory),
        VT_OPT_END};
    const vt_cli_cmd cmd = {
        "trainer eval", "RUN_DIR [--dataset SPEC] [--data-dir DIR] [--per-example FILE]",
        "accuracy of a run's last checkpoint on a data set, which it names (\"evaluated on\"); for a text\n"
        "model (arch=gpt) the validation loss in nats per character: the text cut into consecutive,\n"
        "non-overlapping windows of gpt_context characters, each scored on the next ones (docs/cnn.md)",
        NULL, opts, NULL, 1, 1, 0, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    const char *run = a.v[0];
    char dspec[VT_RECIPE_SPEC_MAX];
    const char *what = "the data set given with --dataset";
    int own = 0; /* evaluated on the run's own training data */
    vt_recipe rcp;
    vt_model m;
    vt_dataset ds;
    uint64_t step = 0;
    double acc = 0;
    size_t cnt = 0;
    memset(&ds, 0, sizeof ds);
    vt_model_set_memory_budget(max_memory, VT_ERR_LIMIT); /* the run's manifest is not ours: exit 2 */
    vt_err e = trainer_load_run_model(run, &rcp, &m, &step);
    const int text = vt_recipe_is_text(&rcp); /* the GPT, or a client's language model */
    st = vt_cli_exit_for_input(e); /* the run is the input; --dataset below is the user's */
    if (!e) {
        if (spec) {
            snprintf(dspec, sizeof dspec, "%s", spec);
        } else if (strncmp(rcp.dataset, "mnist", 5) == 0) {
            snprintf(dspec, sizeof dspec, "mnist-test");
            what = "the recipe's data set's test split";
        } else if (strncmp(rcp.dataset, "cifar10", 7) == 0) {
            snprintf(dspec, sizeof dspec, "cifar10-test");
            what = "the recipe's data set's test split";
        } else if (strncmp(rcp.dataset, "shakespeare", 11) == 0) {
            snprintf(dspec, sizeof dspec, "shakespeare-val");
            what = "the recipe's data set's validation split";
        } else if (text && vt_data_is_file_spec(rcp.dataset)) { /* a text file: its last 10% */
            snprintf(dspec, sizeof dspec, "text-val:%s", strchr(rcp.dataset, ':') + 1);
            what = "the last 10% of the run's text file (held out: training read its first 90%)";
        } else {
            vt_recipe_dataset_spec(&rcp, dspec, sizeof dspec);
            what = "the run's own training data (not held out: give --dataset for other data)";
            own = 1;
        }
        e = vt_data_load(dspec, root, &ds);
        /* an unknown or unfitting --dataset is the user's (64); the default one failing to load, not */
        st = spec ? vt_cli_exit_for(e) : vt_cli_exit_for_input(e);
    }
    if (!e && !text && ds.hash_version == 2 && ds.d == rcp.widths[0] && /* a user's file: every label a class */
        vt_data_check_labels(&ds, rcp.widths[rcp.n_layers]) != VT_OK) {
        st = spec ? VT_EXIT_USAGE : VT_EXIT_CANNOT;
        e = VT_ERR_ARG;
    } else if (!e && !text && (ds.d != rcp.widths[0] || (ds.hash_version < 2 && ds.n_classes != rcp.widths[rcp.n_layers]))) {
        e = vt_set_error(VT_ERR_ARG, "dataset %s (%u features, %u classes) does not fit the model (%u -> %u)", dspec,
                         ds.d, ds.n_classes, rcp.widths[0], rcp.widths[rcp.n_layers]);
        st = VT_EXIT_USAGE;
    }
    uint32_t *pred = NULL;
    /* a text model's predictions: a token per position of its windows (at most ds.n of them) */
    if (!e && per_example && !(pred = calloc(ds.n ? ds.n : 1, sizeof *pred))) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory");
        st = vt_cli_exit_for(e);
    }
    if (!e) {
        e = text ? vt_model_text_predict(&m, &ds, 0, &acc, &cnt, pred) : vt_model_predict(&m, &ds, 0, &acc, pred);
        st = vt_cli_exit_for_input(e);
    }
    if (!e && per_example) { /* one line per example (text: per position): index, label, predicted class */
        FILE *f = fopen(per_example, "w");
        const size_t n = text ? cnt : ds.n;
        size_t correct = 0;
        for (size_t i = 0; f && i < n; i++) correct += pred[i] == ds.y[text ? i + 1 : i];
        if (f && text)
            fprintf(f, "# trainer eval --per-example: %s, %zu windows of %u characters, %zu positions, %zu correct; "
                       "index (window * %u + position) next-token predicted\n",
                    ds.name, n / rcp.gpt_context, rcp.gpt_context, n, correct, rcp.gpt_context);
        else if (f)
            fprintf(f, "# trainer eval --per-example: %s, %zu examples, %zu correct; index label predicted\n", ds.name,
                    n, correct);
        for (size_t i = 0; f && i < n; i++) fprintf(f, "%zu %u %u\n", i, (unsigned)ds.y[text ? i + 1 : i], pred[i]);
        if (!f || ferror(f) | (fclose(f) != 0)) {
            e = vt_set_error(VT_ERR_IO, "--per-example %s: cannot write it", per_example);
            st = VT_EXIT_CANNOT;
        }
    }
    free(pred);
    if (!e) {
        if (own)
            fprintf(stderr, "trainer eval: warning: %s is the run's own training data (%s): the figure is not a "
                            "held-out one; give --dataset SPEC for other data\n", dspec, rcp.dataset);
        printf("run             %s (step %llu of %llu)\n", run, (unsigned long long)step, (unsigned long long)rcp.steps);
        printf("dataset         %s (%zu %s)\n", ds.name, ds.n, text ? "characters" : "examples");
        printf("evaluated on    %s: %s\n", dspec, what);
        if (text) printf("validation loss %.4f nats/char (%zu predicted characters)\n", acc, cnt);
        else printf("accuracy        %.4f\n", acc);
        /* full precision, for comparisons: the FP64 mean loss; the exact count of correct examples */
        if (text) printf("mean loss       %.17g nats/char (FP64, all digits)\n", acc);
        else printf("correct         %.0f of %zu (accuracy %.17g)\n", acc * (double)ds.n, ds.n, acc);
    } else {
        fprintf(stderr, "trainer eval: %s\n", vt_errmsg());
    }
    vt_data_free(&ds);
    if (m.state) vt_model_free(&m);
    return e ? st : VT_EXIT_OK;
}

/* Text generated from a text model's final parameters (deterministic: exact rounding, Philox). */
int trainer_sample(int argc, char **argv)
{
    const char *root = NULL, *prompt = NULL;
    uint64_t n = 200, seed = 1, max_memory = 0;
    const vt_cli_opt opts[] = {
        VT_OPT_U("--tokens", "N", "characters to generate (default 200)", 1, 1000000, &n),
        VT_OPT_U("--seed", "S", "the draws' seed (default 1)", 0, UINT64_MAX, &seed),
        VT_OPT_S("--prompt", "TEXT", "the text to continue (default: a newline, or the training text's first\n"
                                     "character when its vocabulary has no newline)", &prompt),
        VT_OPT_S("--data-dir", "DIR", VT_HELP_DATA_DIR, &root),
        VT_OPT_Z("--max-memory", VT_HELP_MAX_MEMORY, &max_memory),
        VT_OPT_END};
    const vt_cli_cmd cmd = {"trainer sample", "RUN_DIR [--tokens N] [--seed S] [--prompt TEXT] [--data-dir DIR]",
                            "N characters generated by a text model's last checkpoint after the prompt: exact\n"
                            "rounding and Philox draws, the same text everywhere (the GPT, or a client's model\n"
                            "with loss=next_token; a token beyond the text's vocabulary prints as U+FFFD)",
                            NULL, opts, NULL, 1, 1, 0, NULL};
    vt_cli_args a;
    int st = vt_cli_parse(&cmd, argc, argv, 2, &a);
    if (st >= 0) return st;
    const char *run = a.v[0];
    vt_recipe rcp;
    vt_model m;
    vt_dataset ds;
    uint64_t step = 0;
    memset(&ds, 0, sizeof ds);
    vt_model_set_memory_budget(max_memory, VT_ERR_LIMIT); /* the run's manifest is not ours: exit 2 */
    vt_err e = trainer_load_run_model(run, &rcp, &m, &step);
    if (!e && !vt_recipe_is_text(&rcp))
        e = vt_set_error(VT_ERR_ARG, "run %s is not a text model (arch=gpt, or a client's model with loss=next_token)",
                         run);
    char dspec[VT_RECIPE_SPEC_MAX];
    if (!e) {
        vt_recipe_dataset_spec(&rcp, dspec, sizeof dspec);
        e = vt_data_load(dspec, root, &ds); /* the vocabulary */
    }
    char first[2] = {'\n', 0};
    if (!e && !prompt) { /* the default: a newline, when the text has one; else the text's first character */
        int has_nl = 0;
        for (uint32_t v = 0; v < ds.n_classes; v++) has_nl |= ds.chars[v] == '\n';
        if (!has_nl && ds.n) first[0] = (char)ds.chars[ds.x[0]];
        prompt = first;
    }
    size_t np = prompt ? strlen(prompt) : 0;
    uint8_t *ids = malloc(np + n + 1);
    if (!e && !ids) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !e && i < np; i++) {
        int k = -1;
        for (uint32_t v = 0; v < ds.n_classes; v++)
            if (ds.chars[v] == (uint8_t)prompt[i]) k = (int)v;
        if (k < 0) e = vt_set_error(VT_ERR_ARG, "--prompt: character 0x%02x is not in the vocabulary", (uint8_t)prompt[i]);
        else ids[i] = (uint8_t)k;
    }
    if (!e && np == 0) e = vt_set_error(VT_ERR_ARG, "--prompt: empty");
    if (!e) e = vt_model_sample(&m, seed, ids, np, n, ids + np);
    if (!e) {
        for (size_t i = 0; i < np + n; i++) /* a token of the model's vocabulary beyond the text's: U+FFFD */
            if (ids[i] < ds.n_classes) putchar(ds.chars[ids[i]]);
            else fputs("\xef\xbf\xbd", stdout);
        putchar('\n');
    } else {
        fprintf(stderr, "trainer sample: %s\n", vt_errmsg());
    }
    free(ids);
    vt_data_free(&ds);
    if (m.state) vt_model_free(&m);
    if (e) return e == VT_ERR_ARG ? VT_EXIT_USAGE : VT_EXIT_CANNOT;
    return VT_EXIT_OK;
}
