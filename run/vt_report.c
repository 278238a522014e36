/* vt_report.c - `trainer report`: a run directory as one self-contained HTML page (vt_report.h,
 * docs/report.md). Everything read from the run (names, messages, JSON strings, file names) is
 * HTML-escaped; a damaged part of the run becomes a line of the page's "What is missing" list. */
#include "vt_report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"
#include "../merkle/vt_merkle.h"
#include "../merkle/vt_sign.h"
#include "../arch/vt_recipe.h"
#include "../data/vt_data.h"
#include "../model/vt_model.h"
#include "../store/vt_store.h"
#include "vt_train.h"

/* ------------------------------------------------------------------ a growing string */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sb;

static void sb_put(sb *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_puts(sb *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sb_put(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_put(b, big, (size_t)n);
    free(big);
}

/* The length of the valid UTF-8 sequence at s[0..n) (RFC 3629: no overlong forms, no surrogates,
 * nothing beyond U+10FFFF), 0 when there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
    if (c == 0xED && s[1] >= 0xA0) return 0; /* a surrogate */
    if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
    if (c == 0xF4 && s[1] >= 0x90) return 0; /* beyond U+10FFFF */
    return len;
}

/* s[0..n) as HTML text or attribute value: & < > " ' escaped; control characters and bytes that
 * are not UTF-8 replaced by U+FFFD. */
static void sb_escn(sb *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = u[i];
        if (c < 0x80) {
            switch (c) {
            case '&': sb_puts(b, "&amp;"); break;
            case '<': sb_puts(b, "&lt;"); break;
            case '>': sb_puts(b, "&gt;"); break;
            case '"': sb_puts(b, "&quot;"); break;
            case '\'': sb_puts(b, "&#39;"); break;
            default:
                if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F)
                    sb_puts(b, "&#xFFFD;");
                else
                    sb_put(b, (const char *)&u[i], 1);
            }
            i++;
            continue;
        }
        size_t l = utf8_len(u + i, n - i);
        if (l == 0) {
            sb_puts(b, "&#xFFFD;");
            i++;
        } else {
            sb_put(b, (const char *)&u[i], l);
            i += l;
        }
    }
}

static void sb_esc(sb *b, const char *s)
{
    if (s) sb_escn(b, s, strlen(s));
}

static void sb_hex(sb *b, const uint8_t *h, size_t n)
{
    char hex[2 * 64 + 1];
    if (n > 64) n = 64;
    vt_hex(h, n, hex);
    sb_put(b, hex, 2 * n);
}

/* ------------------------------------------------------------------ what the page is made of */

typedef struct {
    char path[4096];
    char name[512];     /* as shown */
    int given;          /* named by the user (--audit), not found beside the run */
    json_t *j;          /* the report, when it is one */
    int run_match;      /* its "merkle_root" is this run's: 1, another: 0, not named (or no root here): -1 */
    char error[512];    /* why it is not shown (plain text) */
} audit_file;

typedef struct {
    const vt_report_opts *o;
    sb problems; /* <li> items, escaped */
    size_t n_problems;
    char base[512]; /* the run directory's last component */
    /* the manifest */
    char *manifest;
    size_t manifest_len;
    uint8_t manifest_hash[32];
    json_t *mj; /* the manifest as JSON, NULL when unreadable */
    vt_recipe rcp;
    int have_rc;
    /* the step records 0 .. n_steps-1 that read back */
    uint64_t count, n_steps;
    float *loss;
    uint64_t *entries;
    uint8_t *has_state;
    uint8_t (*leaves)[32];
    int leaves_ok;
    /* the commitment */
    int have_commitment, sig_ok, key_ok, manifest_ok, count_ok, root_ok;
    vt_commitment c;
    uint8_t root[32]; /* of the stored leaves */
    int have_root;
    /* checkpoints */
    uint64_t *cks;
    size_t n_cks;
    int cks_ok;
    /* audit reports */
    audit_file *audits;
    size_t n_audits;
    size_t n_ignored;
    sb ignored; /* names of JSON files beside the run that are not audit reports, escaped */
    /* the evaluation figure of the last checkpoint (plain text), or why there is none */
    int have_eval;
    char eval[512];
} report;

static void problem(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(report *r, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sb_puts(&r->problems, "<li>");
    sb_esc(&r->problems, msg);
    sb_puts(&r->problems, "</li>\n");
    r->n_problems++;
}

/* ------------------------------------------------------------------ reading the run */

static void read_manifest(report *r, vt_store *st)
{
    vt_err e = vt_store_manifest(st, &r->manifest, &r->manifest_len, r->manifest_hash);
    if (e) {
        problem(r, "the manifest: %s", vt_errmsg());
        return;
    }
    uint8_t dh[32];
    if (vt_manifest_parse(r->manifest, r->manifest_len, &r->rcp, dh) == VT_OK)
        r->have_rc = 1;
    else
        problem(r, "the manifest's recipe: %s (no learning-rate curve, no checkpoint schedule)", vt_errmsg());
    if (vt_json_check_limits(r->manifest, r->manifest_len, "the manifest") == VT_OK) {
        json_error_t je;
        r->mj = json_loadb(r->manifest, r->manifest_len, JSON_REJECT_DUPLICATES, &je);
        if (r->mj && !json_is_object(r->mj)) {
            json_decref(r->mj);
            r->mj = NULL;
        }
    }
}

static void read_steps(report *r, vt_store *st)
{
    uint64_t n = r->count;
    if (r->have_rc && n > r->rcp.steps + 1) {
        problem(r, "the store holds %llu step records, the recipe %llu steps (records 0..%llu): the records after "
                   "step %llu are not shown",
                (unsigned long long)n, (unsigned long long)r->rcp.steps, (unsigned long long)r->rcp.steps,
                (unsigned long long)r->rcp.steps);
        n = r->rcp.steps + 1;
    }
    if (n == 0) return;
    r->leaves_ok = 1;
    uint64_t cap = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i == cap) { /* grown as records read back: a count the rows do not bear out costs nothing */
            cap = cap ? 2 * cap : 1024;
            if (cap > n) cap = n;
            float *l = realloc(r->loss, cap * sizeof *l);
            if (l) r->loss = l;
            uint64_t *e = realloc(r->entries, cap * sizeof *e);
            if (e) r->entries = e;
            uint8_t *h = realloc(r->has_state, cap);
            if (h) r->has_state = h;
            uint8_t(*lv)[32] = realloc(r->leaves, cap * sizeof *lv);
            if (lv) r->leaves = lv;
            if (!l || !e || !h || !lv) {
                problem(r, "out of memory reading %llu step records (the steps from %llu on are not shown)",
                        (unsigned long long)n, (unsigned long long)i);
                break;
            }
        }
        vt_step_rec rec;
        if (vt_store_get_step(st, i, &rec)) {
            problem(r, "step record %llu: %s (the steps from %llu on are not shown)", (unsigned long long)i,
                    vt_errmsg(), (unsigned long long)i);
            break;
        }
        r->loss[i] = vt_bits_f32(rec.loss_bits);
        r->entries[i] = rec.log_entries;
        r->has_state[i] = (uint8_t)rec.has_state;
        uint8_t leaf[32];
        if (vt_step_leaf(i, rec.state_hash, rec.has_state, rec.log_hash, leaf) != VT_OK ||
            memcmp(leaf, rec.leaf, 32) != 0) {
            if (r->leaves_ok)
                problem(r, "step %llu's leaf is not the hash of its record (state hash, log hash): the store was "
                           "altered",
                        (unsigned long long)i);
            r->leaves_ok = 0;
        }
        memcpy(r->leaves[i], rec.leaf, 32);
        r->n_steps = i + 1;
    }
    if (r->n_steps == n && vt_merkle_root_of((const uint8_t(*)[32])r->leaves, n, r->root) == VT_OK) r->have_root = 1;
}

static void read_commitment(report *r)
{
    char path[4200];
    vt_store_commitment_path(r->o->run_dir, path, sizeof path);
    struct stat sbuf;
    if (stat(path, &sbuf) != 0 && errno == ENOENT) {
        if (r->have_rc && r->n_steps < r->rcp.steps + 1)
            problem(r, "no commitment (commitment.vtc): the run is in progress or was interrupted at step %llu of "
                       "%llu (continue it with trainer train --resume)",
                    (unsigned long long)(r->n_steps ? r->n_steps - 1 : 0), (unsigned long long)r->rcp.steps);
        else
            problem(r, "no commitment (commitment.vtc): every step is stored but the run is not committed (trainer "
                       "train --resume commits it)");
        return;
    }
    if (vt_commitment_read(path, &r->c) != VT_OK) {
        problem(r, "the commitment: %s", vt_errmsg());
        return;
    }
    r->have_commitment = 1;
    uint8_t body[VT_COMMITMENT_BODY_LEN];
    vt_commitment_body(&r->c, body);
    r->sig_ok = vt_sign_init() == VT_OK &&
                vt_sign_verify_detached(r->c.signature, body, sizeof body, r->c.public_key) == 0;
    if (!r->sig_ok) problem(r, "the commitment's signature does not verify");
    r->key_ok = 1;
    if (r->o->pubkey_path) {
        uint8_t pk[32];
        if (vt_sign_read_public_key(r->o->pubkey_path, pk) != VT_OK) {
            problem(r, "--pubkey: %s", vt_errmsg());
            r->key_ok = 0;
        } else if (memcmp(pk, r->c.public_key, 32) != 0) {
            problem(r, "the commitment is signed by another key than %s", r->o->pubkey_path);
            r->key_ok = 0;
        }
    }
    r->manifest_ok = r->manifest && memcmp(r->manifest_hash, r->c.manifest_hash, 32) == 0;
    if (r->manifest && !r->manifest_ok) problem(r, "the run's manifest is not the committed one");
    r->count_ok = r->c.step_count == r->count && r->n_steps == r->count;
    if (r->c.step_count != r->count)
        problem(r, "the store holds %llu step records, the commitment %llu", (unsigned long long)r->count,
                (unsigned long long)r->c.step_count);
    r->root_ok = r->have_root && r->count_ok && r->leaves_ok && memcmp(r->root, r->c.root, 32) == 0;
    if (r->have_root && r->count_ok && r->leaves_ok && !r->root_ok)
        problem(r, "the stored steps' leaves do not give the signed Merkle root");
}

static void read_checkpoints(report *r, vt_store *st)
{
    if (vt_store_list_checkpoints(st, &r->cks, &r->n_cks) != VT_OK) {
        problem(r, "the checkpoint records: %s", vt_errmsg());
        r->cks = NULL, r->n_cks = 0;
        return;
    }
    r->cks_ok = 1;
    size_t j = 0;
    uint64_t missing = 0, first = 0;
    for (uint64_t s = 0; r->have_rc && s < r->n_steps; s++) {
        if (!vt_recipe_has_checkpoint(&r->rcp, s)) continue;
        while (j < r->n_cks && r->cks[j] < s) j++;
        if (j < r->n_cks && r->cks[j] == s) continue;
        if (missing++ == 0) first = s;
    }
    if (missing)
        problem(r, "%llu checkpoint%s the recipe promises for the stored steps %s not recorded (the first: step %llu)",
                (unsigned long long)missing, missing == 1 ? "" : "s", missing == 1 ? "is" : "are",
                (unsigned long long)first);
    uint64_t absent = 0;
    for (size_t i = 0; i < r->n_cks; i++) {
        char path[4200];
        struct stat sbuf;
        vt_store_checkpoint_path(r->o->run_dir, r->cks[i], path, sizeof path);
        if (stat(path, &sbuf) != 0 || !S_ISREG(sbuf.st_mode)) {
            if (absent++ == 0) first = r->cks[i];
        }
    }
    if (absent)
        problem(r, "%llu recorded checkpoint file%s missing from checkpoints/ (the first: step %llu)",
                (unsigned long long)absent, absent == 1 ? " is" : "s are", (unsigned long long)first);
}

/* The evaluation figure of the last checkpoint, as `trainer eval` computes it by default: accuracy
 * on the recipe's test split (the training data itself for a user's file, said so), a text model's
 * validation loss. What stops it (no checkpoint, no data set here, a model over the memory budget) is
 * said in the figure's row, not counted as missing: the run may be complete without the data set. */
static void read_eval(report *r, vt_store *st)
{
    r->have_eval = 0;
    if (r->o->no_eval) {
        snprintf(r->eval, sizeof r->eval, "not computed (--no-eval)");
        return;
    }
    if (!r->have_rc || !r->cks_ok || r->n_cks == 0) {
        snprintf(r->eval, sizeof r->eval, "not computed: %s", !r->have_rc ? "no readable recipe" : "no checkpoint");
        return;
    }
    const vt_recipe *rcp = &r->rcp;
    const int text = rcp->arch == VT_ARCH_GPT;
    char spec[VT_RECIPE_SPEC_MAX];
    const char *what = "";
    if (strncmp(rcp->dataset, "mnist", 5) == 0)
        snprintf(spec, sizeof spec, "mnist-test"), what = "the test split";
    else if (strncmp(rcp->dataset, "cifar10", 7) == 0)
        snprintf(spec, sizeof spec, "cifar10-test"), what = "the test split";
    else if (strncmp(rcp->dataset, "shakespeare", 11) == 0)
        snprintf(spec, sizeof spec, "shakespeare-val"), what = "the validation split";
    else if (text && vt_data_is_file_spec(rcp->dataset))
        snprintf(spec, sizeof spec, "text-val:%s", strchr(rcp->dataset, ':') + 1), what = "the text's last 10%, held out";
    else
        vt_recipe_dataset_spec(rcp, spec, sizeof spec), what = "the run's own training data, not held out";
    uint64_t step = r->cks[r->n_cks - 1];
    vt_model m;
    vt_dataset ds;
    float *state = NULL;
    double v = 0;
    size_t cnt = 0;
    memset(&m, 0, sizeof m);
    memset(&ds, 0, sizeof ds);
    vt_err e = vt_model_init(&m, rcp, rcp->batch, VT_ORDER_BLAS);
    if (!e) e = vt_store_get_checkpoint(st, step, m.n_state, &state);
    if (!e) e = vt_model_set_state(&m, step, state, m.n_state);
    if (!e) e = vt_data_load(spec, r->o->data_root, &ds);
    if (!e && !text && (ds.d != rcp->widths[0] || (ds.hash_version < 2 && ds.n_classes != rcp->widths[rcp->n_layers])))
        e = vt_set_error(VT_ERR_ARG, "%s does not fit the model", spec);
    if (!e) e = text ? vt_model_text_loss(&m, &ds, 0, &v, &cnt) : vt_model_predict(&m, &ds, 0, &v, NULL);
    if (e) {
        snprintf(r->eval, sizeof r->eval, "not computed: %s", vt_errmsg());
    } else {
        r->have_eval = 1;
        if (text)
            snprintf(r->eval, sizeof r->eval, "validation loss %.4f nats/char on %s (%zu characters; %s), step %llu",
                     v, ds.name, ds.n, what, (unsigned long long)step);
        else
            snprintf(r->eval, sizeof r->eval, "accuracy %.4f on %s (%zu examples; %s), step %llu", v, ds.name, ds.n,
                     what, (unsigned long long)step);
    }
    vt_data_free(&ds);
    free(state);
    if (m.state) vt_model_free(&m);
}

/* ------------------------------------------------------------------ the audit reports */

static const char *str_field(json_t *j, const char *k)
{
    json_t *v = json_object_get(j, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Reads one report; 0 when it is one (f->j set), else f->error says why. */
static int read_audit(audit_file *f)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(f->error, sizeof f->error, "cannot open it: %s", strerror(errno));
        return -1;
    }
    struct stat sbuf;
    if (fstat(fd, &sbuf) != 0 || !S_ISREG(sbuf.st_mode)) {
        snprintf(f->error, sizeof f->error, "not a regular file");
        close(fd);
        return -1;
    }
    if (sbuf.st_size > (off_t)VT_REPORT_MAX_AUDIT_BYTES) {
        snprintf(f->error, sizeof f->error, "%lld bytes: larger than an audit report can be (%u)",
                 (long long)sbuf.st_size, VT_REPORT_MAX_AUDIT_BYTES);
        close(fd);
        return -1;
    }
    size_t n = (size_t)sbuf.st_size, got = 0;
    char *buf = malloc(n + 1);
    if (!buf) {
        snprintf(f->error, sizeof f->error, "out of memory");
        close(fd);
        return -1;
    }
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    if (got != n) {
        snprintf(f->error, sizeof f->error, "a read error (%zu of %zu bytes)", got, n);
        free(buf);
        return -1;
    }
    if (vt_json_check_limits(buf, n, "the report") != VT_OK) {
        snprintf(f->error, sizeof f->error, "%s", vt_errmsg());
        free(buf);
        return -1;
    }
    json_error_t je;
    json_t *j = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
    free(buf);
    if (!j) {
        snprintf(f->error, sizeof f->error, "not JSON: %s at line %d, column %d", je.text, je.line, je.column);
        return -1;
    }
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "verdict"))) {
        snprintf(f->error, sizeof f->error, "not an audit report (no \"verdict\")");
        json_decref(j);
        return -1;
    }
    f->j = j;
    return 0;
}

static int add_audit(report *r, const char *path, const char *name, int given)
{
    if (r->n_audits >= VT_REPORT_MAX_AUDITS) {
        problem(r, "more than %d audit reports: %s and any later ones are not shown", VT_REPORT_MAX_AUDITS, name);
        return -1;
    }
    struct stat a;
    if (stat(path, &a) == 0)
        for (size_t i = 0; i < r->n_audits; i++) { /* the same file found twice */
            struct stat b;
            if (stat(r->audits[i].path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return 0;
        }
    audit_file *f = &r->audits[r->n_audits];
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->given = given;
    if (read_audit(f) == 0) {
        r->n_audits++;
        f->run_match = -1;
        const char *hex = str_field(f->j, "merkle_root");
        const uint8_t *mine = r->have_commitment ? r->c.root : r->have_root ? r->root : NULL;
        uint8_t theirs[32];
        if (hex && mine && strlen(hex) == 64 && vt_unhex(hex, theirs, 32) == VT_OK) {
            f->run_match = memcmp(theirs, mine, 32) == 0;
            if (!f->run_match) problem(r, "the audit report %s is about another run (its Merkle root differs)", name);
        }
        return 0;
    }
    if (given) {
        problem(r, "the audit report %s: %s", name, f->error);
        r->n_audits++; /* shown, as unreadable */
    } else { /* a JSON file beside the run that is not an audit report */
        if (r->n_ignored++) sb_puts(&r->ignored, ", ");
        sb_puts(&r->ignored, "<code>");
        sb_esc(&r->ignored, name);
        sb_puts(&r->ignored, "</code>");
    }
    return 0;
}

/* The JSON files in DIR whose names start with PREFIX, in name order. */
static void search_dir(report *r, const char *dir, const char *prefix, const char *shown_dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < 4096) {
        const char *nm = de->d_name;
        if (nm[0] == '.' || !has_suffix(nm, ".json") || strncmp(nm, prefix, strlen(prefix)) != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (!p) break;
            names = p;
        }
        if (!(names[n] = strdup(nm))) break;
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[4200], shown[1100];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        snprintf(shown, sizeof shown, "%s%s", shown_dir, names[i]);
        struct stat sbuf;
        if (stat(path, &sbuf) == 0 && S_ISREG(sbuf.st_mode)) add_audit(r, path, shown, 0);
        free(names[i]);
    }
    free(names);
}

static void read_audits(report *r)
{
    r->audits = calloc(VT_REPORT_MAX_AUDITS, sizeof *r->audits);
    if (!r->audits) {
        problem(r, "out of memory for the audit reports");
        return;
    }
    for (size_t i = 0; i < r->o->n_audit_paths; i++) add_audit(r, r->o->audit_paths[i], r->o->audit_paths[i], 1);
    if (r->o->no_search) return;
    /* inside the run directory: any *.json; beside it: BASE.*.json and BASE-*.json (auditor --report
     * RUN.audit.json, as scripts/demo.sh writes it) */
    char shown[600];
    snprintf(shown, sizeof shown, "%s/", r->base);
    search_dir(r, r->o->run_dir, "", shown);
    char parent[4200];
    snprintf(parent, sizeof parent, "%s", r->o->run_dir);
    size_t pl = strlen(parent);
    while (pl > 1 && parent[pl - 1] == '/') parent[--pl] = 0;
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = 0;
    else
        *slash = 0;
    char prefix[520];
    snprintf(prefix, sizeof prefix, "%s.", r->base);
    search_dir(r, parent, prefix, "");
    snprintf(prefix, sizeof prefix, "%s-", r->base);
    search_dir(r, parent, prefix, "");
}

/* ------------------------------------------------------------------ the SVG charts */

typedef struct {
    const char *id, *title, *ylabel, *series, *color;
    const double *x, *y;
    size_t n;                    /* points */
    double xmin, xmax;
    uint64_t stride;             /* steps per point (1: every step) */
    uint64_t first, last;        /* the steps the curve covers */
    const uint64_t *marks;       /* checkpoint steps, drawn as ticks */
    size_t n_marks;
    int y_from_zero;
    int integer_y;               /* counts: ticks at whole numbers */
} chart;

#define CW 760.0
#define CH 260.0
#define ML 72.0
#define MR 16.0
#define MT 16.0
#define MB 44.0

static double nice_step(double range, int n)
{
    double raw = range / n;
    if (!(raw > 0) || !isfinite(raw)) return 1;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

static void render_chart(sb *b, const chart *c)
{
    sb_printf(b, "<figure class=\"chart\" id=\"%s\">\n<figcaption>%s</figcaption>\n", c->id, c->title);
    double ymin = INFINITY, ymax = -INFINITY;
    for (size_t i = 0; i < c->n; i++) {
        if (c->y[i] < ymin) ymin = c->y[i];
        if (c->y[i] > ymax) ymax = c->y[i];
    }
    if (c->n == 0) ymin = 0, ymax = 1;
    if (c->y_from_zero && ymin > 0) ymin = 0;
    if (ymax - ymin <= 1e-9 * fmax(fabs(ymin), fabs(ymax)) || !isfinite(ymax - ymin)) { /* flat (to print) */
        double d = fabs(ymax) > 0 && isfinite(ymax) ? fabs(ymax) * 0.1 : 1;
        ymin -= d, ymax += d;
    }
    double xmin = c->xmin, xmax = c->xmax > c->xmin ? c->xmax : c->xmin + 1;
    const double pw = CW - ML - MR, ph = CH - MT - MB;
#define PX(v) (ML + ((v) - xmin) / (xmax - xmin) * pw)
#define PY(v) (MT + ph - ((v) - ymin) / (ymax - ymin) * ph)
    sb_printf(b,
              "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
              "role=\"img\" aria-label=\"%s\" data-series=\"%s\" data-points=\"%zu\" data-stride=\"%llu\" "
              "data-first-step=\"%llu\" data-last-step=\"%llu\">\n",
              CW, CH, CW, CH, c->title, c->series, c->n, (unsigned long long)c->stride, (unsigned long long)c->first,
              (unsigned long long)c->last);
    sb_printf(b, "<rect class=\"plot\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", ML, MT, pw, ph);
    /* y grid and labels */
    double ys = nice_step(ymax - ymin, 5);
    if (c->integer_y && ys < 1) ys = 1;
    for (int i = 0; i < 40; i++) { /* whole multiples of the tick: at most 40, whatever the rounding */
        double v = (ceil(ymin / ys) + i) * ys;
        if (v > ymax + ys * 1e-9) break;
        double y = PY(v);
        sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", ML, y, ML + pw, y);
        sb_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", ML - 6, y + 4,
                  fabs(v) < ys * 1e-6 ? 0.0 : v);
    }
    /* x grid and labels: whole steps */
    double xs = nice_step(xmax - xmin, 8);
    if (xs < 1) xs = 1;
    for (int i = 0; i < 40; i++) {
        double v = (ceil(xmin / xs) + i) * xs;
        if (v > xmax + 1e-9) break;
        double x = PX(v);
        sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, MT, x, MT + ph);
        sb_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", x,
                  MT + ph + 16, v);
    }
    sb_printf(b, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", ML + pw / 2,
              CH - 6);
    sb_printf(b,
              "<text class=\"axis\" x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">%s"
              "</text>\n",
              MT + ph / 2, MT + ph / 2, c->ylabel);
    /* checkpoints: ticks on the x axis */
    for (size_t i = 0; i < c->n_marks && i < 200; i++) {
        double v = (double)c->marks[i];
        if (v < xmin || v > xmax) continue;
        sb_printf(b,
                  "<line class=\"ckpt-mark\" data-step=\"%llu\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
                  (unsigned long long)c->marks[i], PX(v), MT + ph - 8, PX(v), MT + ph);
    }
    if (c->n) {
        sb_printf(b, "\n<polyline class=\"series\" data-series=\"%s\" data-points=\"%zu\" stroke=\"%s\" points=\"",
                  c->series, c->n, c->color);
        for (size_t i = 0; i < c->n; i++) sb_printf(b, "%s%.1f,%.1f", i ? " " : "", PX(c->x[i]), PY(c->y[i]));
        sb_puts(b, "\"/>\n");
        if (c->n == 1)
            sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", PX(c->x[0]), PY(c->y[0]), c->color);
    } else {
        sb_printf(b, "<text class=\"empty\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no data</text>\n",
                  ML + pw / 2, MT + ph / 2);
    }
#undef PX
#undef PY
    sb_puts(b, "</svg>\n</figure>\n");
}

/* The points of per-step values v[first..last] (finite ones only): every step, or the mean of each
 * bucket of `stride` steps at the bucket's last step. Returns the points; *stride set. */
static size_t series_points(const double *v, uint64_t first, uint64_t last, double *xs, double *ys,
                            uint64_t *stride)
{
    uint64_t n = last >= first ? last - first + 1 : 0;
    uint64_t k = n > VT_REPORT_MAX_POINTS ? (n + VT_REPORT_MAX_POINTS - 1) / VT_REPORT_MAX_POINTS : 1;
    *stride = k;
    size_t m = 0;
    for (uint64_t s = first; s <= last && n; s += k) {
        uint64_t e = s + k - 1 > last ? last : s + k - 1;
        double sum = 0;
        uint64_t cnt = 0;
        for (uint64_t t = s; t <= e; t++)
            if (isfinite(v[t - first])) sum += v[t - first], cnt++;
        if (!cnt) continue;
        xs[m] = (double)e, ys[m] = sum / (double)cnt;
        m++;
    }
    return m;
}

/* ------------------------------------------------------------------ the page */

static const char *const k_css =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:980px;"
    "color:#1d2330;background:#fff;padding:0 16px;line-height:1.45}\n"
    "h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.15em;margin-top:28px;border-bottom:1px solid #dde;"
    "padding-bottom:4px}\n"
    "code,.hex{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:.9em}\n"
    ".hex{word-break:break-all}\n"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #dde;padding:3px 8px;text-align:left;"
    "vertical-align:top}th{background:#f4f5f9}\n"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
    ".ok{color:#0a7a36;font-weight:600}.bad{color:#b3261e;font-weight:600}.warn{color:#9a6200;font-weight:600}\n"
    ".verdict{display:inline-block;padding:1px 8px;border-radius:4px;color:#fff;font-weight:700}\n"
    ".verdict-verified{background:#0a7a36}.verdict-rejected{background:#b3261e}"
    ".verdict-cannot_check,.verdict-unknown{background:#9a6200}\n"
    "figure.chart{margin:12px 0}figcaption{font-weight:600;margin-bottom:4px}\n"
    "svg .plot{fill:#fafbfd;stroke:#c8cbd6}svg .grid{stroke:#e6e8ef;stroke-width:1}\n"
    "svg .tick{font-size:11px;fill:#555}svg .axis{font-size:12px;fill:#333}svg .empty{font-size:14px;fill:#888}\n"
    "svg .series{fill:none;stroke-width:1.6;stroke-linejoin:round}svg .ckpt-mark{stroke:#7a4ab8;stroke-width:2}\n"
    "#problems li{color:#b3261e}.note{color:#555;font-size:.92em}\n"
    "details{margin:8px 0}summary{cursor:pointer;font-weight:600}\n";

static void row(sb *b, const char *key, const char *html_value)
{
    sb_printf(b, "<tr><th>%s</th><td>%s</td></tr>\n", key, html_value);
}

/* A manifest recipe value as escaped compact JSON (a string without its quotes). */
static void json_value(sb *b, json_t *v)
{
    if (!v) {
        sb_puts(b, "<span class=\"note\">absent</span>");
        return;
    }
    if (json_is_string(v)) {
        sb_escn(b, json_string_value(v), json_string_length(v));
        return;
    }
    if (json_is_real(v)) { /* 0.1, not its 17 digits 0.10000000000000001 */
        sb_printf(b, "%.9g", json_real_value(v));
        return;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (s) sb_esc(b, s);
    free(s);
}

static json_t *recipe_obj(const report *r)
{
    json_t *rj = r->mj ? json_object_get(r->mj, "recipe") : NULL;
    return json_is_object(rj) ? rj : NULL;
}

static void render_summary(sb *b, report *r)
{
    sb_puts(b, "<section id=\"summary\">\n<h2>Run</h2>\n<table>\n");
    sb_puts(b, "<tr><th>run directory</th><td><code>");
    sb_esc(b, r->o->run_dir);
    sb_puts(b, "</code></td></tr>\n");
    json_t *rj = recipe_obj(r);
    static const char *const keys[] = {"arch", "dataset", "optimizer", "batch", "lr", "schedule", "rounding", "seed"};
    for (size_t i = 0; rj && i < sizeof keys / sizeof *keys; i++) {
        sb_printf(b, "<tr><th>%s</th><td>", keys[i]);
        json_value(b, json_object_get(rj, keys[i]));
        sb_puts(b, "</td></tr>\n");
    }
    if (r->have_rc)
        sb_printf(b,
                  "<tr><th>steps</th><td id=\"steps-recorded\" data-recorded=\"%llu\" data-recipe=\"%llu\">%llu of "
                  "%llu recorded</td></tr>\n",
                  (unsigned long long)(r->n_steps ? r->n_steps - 1 : 0), (unsigned long long)r->rcp.steps,
                  (unsigned long long)(r->n_steps ? r->n_steps - 1 : 0), (unsigned long long)r->rcp.steps);
    else
        sb_printf(b, "<tr><th>steps</th><td id=\"steps-recorded\" data-recorded=\"%llu\">%llu recorded</td></tr>\n",
                  (unsigned long long)(r->n_steps ? r->n_steps - 1 : 0),
                  (unsigned long long)(r->n_steps ? r->n_steps - 1 : 0));
    if (r->n_steps > 1) {
        float last = r->loss[r->n_steps - 1];
        sb_printf(b, "<tr><th>last loss</th><td id=\"last-loss\">%.6g <span class=\"note\">(step %llu)</span></td></tr>\n",
                  (double)last, (unsigned long long)(r->n_steps - 1));
    }
    sb_printf(b, "<tr><th>evaluation</th><td id=\"evaluation\" data-computed=\"%d\">", r->have_eval);
    sb_esc(b, r->eval[0] ? r->eval : "not computed");
    sb_puts(b, " <span class=\"note\">(<code>trainer eval</code> of the last checkpoint)</span></td></tr>\n");
    if (r->manifest) {
        sb_puts(b, "<tr><th>manifest hash</th><td class=\"hex\">");
        sb_hex(b, r->manifest_hash, 32);
        sb_puts(b, "</td></tr>\n");
    }
    static const char *const mkeys[] = {"dataset_hash", "format", "code_version", "backend", "init_sha256"};
    for (size_t i = 0; r->mj && i < sizeof mkeys / sizeof *mkeys; i++) {
        json_t *v = json_object_get(r->mj, mkeys[i]);
        if (!v) continue;
        sb_printf(b, "<tr><th>%s</th><td%s>", mkeys[i], strstr(mkeys[i], "hash") || strstr(mkeys[i], "sha") ? " class=\"hex\"" : "");
        json_value(b, v);
        sb_puts(b, "</td></tr>\n");
    }
    sb_puts(b, "</table>\n</section>\n");
}

static void render_commitment(sb *b, report *r)
{
    sb_puts(b, "<section id=\"commitment\">\n<h2>Commitment</h2>\n<table>\n");
    if (!r->have_commitment) {
        row(b, "signature", "<span id=\"signature-status\" class=\"warn\" data-status=\"missing\">no commitment</span>");
        if (r->have_root) {
            sb_puts(b, "<tr><th>Merkle root of the stored steps (not signed)</th><td class=\"hex\" id=\"merkle-root\" "
                       "data-signed=\"0\">");
            sb_hex(b, r->root, 32);
            sb_puts(b, "</td></tr>\n");
        }
        sb_puts(b, "</table>\n</section>\n");
        return;
    }
    const int all = r->sig_ok && r->key_ok && r->manifest_ok && r->root_ok;
    if (!r->sig_ok)
        row(b, "signature", "<span id=\"signature-status\" class=\"bad\" data-status=\"invalid\">INVALID: the "
                            "signature does not verify</span>");
    else if (!r->key_ok)
        row(b, "signature", "<span id=\"signature-status\" class=\"bad\" data-status=\"wrong-key\">valid, but not by "
                            "the key given with --pubkey</span>");
    else if (r->o->pubkey_path)
        row(b, "signature", "<span id=\"signature-status\" class=\"ok\" data-status=\"valid\">valid (Ed25519), by the "
                            "key given with --pubkey</span>");
    else
        row(b, "signature", "<span id=\"signature-status\" class=\"ok\" data-status=\"valid\">valid (Ed25519)</span> "
                            "<span class=\"note\">checked against the key inside the commitment, which anyone can put "
                            "there: pass --pubkey FILE.pub to check that the trainer you trust signed it</span>");
    char fpr[VT_SIGN_FPR_HEX_LEN + 1];
    if (vt_sign_fingerprint(r->c.public_key, fpr) == VT_OK) {
        sb_printf(b, "<tr><th>signer's key</th><td><span class=\"hex\">");
        sb_hex(b, r->c.public_key, 32);
        sb_printf(b, "</span> <span class=\"note\">(fingerprint %s)</span></td></tr>\n", fpr);
    }
    sb_puts(b, "<tr><th>Merkle root (signed)</th><td class=\"hex\" id=\"merkle-root\" data-signed=\"1\">");
    sb_hex(b, r->c.root, 32);
    sb_puts(b, "</td></tr>\n");
    sb_printf(b, "<tr><th>the stored steps give it</th><td id=\"root-status\" class=\"%s\">%s</td></tr>\n",
              r->root_ok ? "ok" : "bad",
              r->root_ok ? "yes: every step record's leaf is under the signed root"
                         : "NO: see \"What is missing\"");
    sb_printf(b, "<tr><th>steps committed</th><td>%llu (steps 0..%llu)</td></tr>\n",
              (unsigned long long)r->c.step_count,
              (unsigned long long)(r->c.step_count ? r->c.step_count - 1 : 0));
    sb_printf(b, "<tr><th>manifest</th><td class=\"%s\">%s</td></tr>\n", r->manifest_ok ? "ok" : "bad",
              r->manifest_ok ? "the committed one" : "NOT the committed one");
    sb_printf(b, "<tr><th>overall</th><td id=\"commitment-status\" class=\"%s\" data-status=\"%s\">%s</td></tr>\n",
              all ? "ok" : "bad", all ? "consistent" : "inconsistent",
              all ? "the run's records are the ones its trainer signed (their values are checked by auditor verify)"
                  : "the run does not match its commitment");
    sb_puts(b, "</table>\n</section>\n");
}

static int int_field(json_t *j, const char *k, long long *out)
{
    json_t *v = json_object_get(j, k);
    if (!json_is_integer(v)) return 0;
    *out = (long long)json_integer_value(v);
    return 1;
}

static void render_audits(sb *b, report *r)
{
    sb_puts(b, "<section id=\"audits\">\n<h2>Audits</h2>\n");
    size_t shown = 0;
    for (size_t i = 0; i < r->n_audits; i++) shown += r->audits[i].j != NULL;
    if (r->n_audits == 0) {
        sb_puts(b, "<p id=\"no-audit\" class=\"warn\">No audit report found beside the run. Write one with "
                   "<code>auditor verify RUN_DIR --report RUN_DIR.audit.json</code> (or name it with "
                   "<code>--audit FILE</code>).</p>\n");
    } else {
        sb_puts(b, "<p class=\"note\">The audit reports (auditor verify --report) found in the run directory, beside it "
                   "(RUN_DIR.*.json) or given with --audit. A report names the run it checked by its commitment's "
                   "Merkle root (column run); one written before the auditor did says nothing.</p>\n<table>\n<tr><th>report</th><th>run</th><th>verdict</th><th>steps</th><th>order</th>"
                   "<th>finding</th></tr>\n");
        for (size_t i = 0; i < r->n_audits; i++) {
            audit_file *f = &r->audits[i];
            sb_puts(b, "<tr class=\"audit\"><td><code>");
            sb_esc(b, f->name);
            sb_puts(b, "</code></td>");
            if (!f->j) {
                sb_puts(b, "<td></td><td><span class=\"verdict verdict-unknown\" data-verdict=\"unreadable\">UNREADABLE"
                           "</span></td><td></td><td></td><td>");
                sb_esc(b, f->error);
                sb_puts(b, "</td></tr>\n");
                continue;
            }
            if (f->run_match == 1)
                sb_puts(b, "<td class=\"ok run-match\" data-run=\"this\">this run</td>");
            else if (f->run_match == 0)
                sb_puts(b, "<td class=\"bad run-match\" data-run=\"other\">ANOTHER run</td>");
            else
                sb_puts(b, "<td class=\"note run-match\" data-run=\"unknown\">not named</td>");
            const char *v = str_field(f->j, "verdict");
            const char *cls = strcmp(v, "verified") == 0 ? "verified"
                              : strcmp(v, "rejected") == 0 ? "rejected"
                              : strcmp(v, "cannot_check") == 0 ? "cannot_check"
                                                               : "unknown";
            const char *text = strcmp(cls, "verified") == 0 ? "VERIFIED"
                               : strcmp(cls, "rejected") == 0 ? "REJECTED"
                               : strcmp(cls, "cannot_check") == 0 ? "CANNOT CHECK"
                                                                  : NULL;
            sb_printf(b, "<td><span class=\"verdict verdict-%s\" data-verdict=\"", cls);
            sb_esc(b, v);
            sb_puts(b, "\">");
            if (text)
                sb_puts(b, text);
            else {
                sb_puts(b, "unknown verdict: ");
                sb_esc(b, v);
            }
            sb_puts(b, "</span></td><td>");
            long long from = 0, to = 0, checked = 0;
            int hf = int_field(f->j, "from", &from), ht = int_field(f->j, "to", &to);
            if (hf && ht) sb_printf(b, "%lld..%lld", from, to);
            if (int_field(f->j, "steps_checked", &checked)) sb_printf(b, " <span class=\"note\">(%lld replayed)</span>", checked);
            json_t *cj = json_object_get(f->j, "complete");
            if (json_is_true(cj)) sb_puts(b, " <span class=\"ok\">complete</span>");
            else if (json_is_false(cj) && strcmp(cls, "verified") == 0) sb_puts(b, " <span class=\"warn\">a segment</span>");
            sb_puts(b, "</td><td>");
            sb_esc(b, str_field(f->j, "order"));
            sb_puts(b, "</td><td>");
            if (strcmp(cls, "verified") != 0) {
                const char *reason = str_field(f->j, "reason"), *detail = str_field(f->j, "detail");
                const char *opn = str_field(f->j, "operation_name");
                long long step = -1, op = -1;
                int_field(f->j, "step", &step);
                int_field(f->j, "operation", &op);
                if (reason && *reason) {
                    sb_puts(b, "<strong>");
                    sb_esc(b, reason);
                    sb_puts(b, "</strong>");
                }
                if (step >= 0) sb_printf(b, " at step %lld", step);
                if (op >= 0) {
                    sb_printf(b, ", operation %lld", op);
                    if (opn && *opn) {
                        sb_puts(b, " (<code>");
                        sb_esc(b, opn);
                        sb_puts(b, "</code>)");
                    }
                }
                if (detail && *detail) {
                    sb_puts(b, "<br>");
                    sb_esc(b, detail);
                }
            } else {
                long long applied = 0;
                if (int_field(f->j, "log_entries_applied", &applied))
                    sb_printf(b, "%lld log entr%s applied", applied, applied == 1 ? "y" : "ies");
            }
            sb_puts(b, "</td></tr>\n");
        }
        sb_puts(b, "</table>\n");
    }
    if (r->n_ignored) {
        sb_puts(b, "<p class=\"note\">JSON files beside the run that are not audit reports: ");
        sb_put(b, r->ignored.p, r->ignored.len);
        sb_puts(b, "</p>\n");
    }
    sb_printf(b, "<p class=\"note\" id=\"audit-count\" data-count=\"%zu\">%zu audit report%s shown.</p>\n", shown,
              shown, shown == 1 ? "" : "s");
    sb_puts(b, "</section>\n");
}

static void render_curves(sb *b, report *r)
{
    sb_puts(b, "<section id=\"curves\">\n<h2>Curves</h2>\n");
    uint64_t last = r->n_steps ? r->n_steps - 1 : 0; /* steps 1..last carry a loss */
    uint64_t xmax = r->have_rc && r->rcp.steps > last ? r->rcp.steps : last;
    if (xmax < 1) xmax = 1;
    size_t cap = VT_REPORT_MAX_POINTS + 2;
    double *v = NULL, *xs = malloc(cap * sizeof *xs), *ys = malloc(cap * sizeof *ys);
    if (last >= 1) v = malloc(last * sizeof *v);
    if (!xs || !ys || (last >= 1 && !v)) {
        sb_puts(b, "<p class=\"bad\">out of memory drawing the curves</p>\n</section>\n");
        free(v), free(xs), free(ys);
        return;
    }
    /* the checkpoints, as ticks */
    chart c;
    memset(&c, 0, sizeof c);
    c.marks = r->cks, c.n_marks = r->n_cks;
    c.xmin = 1, c.xmax = (double)xmax;
    /* loss */
    uint64_t stride = 1, nonfinite = 0;
    size_t n = 0;
    if (last >= 1) {
        for (uint64_t s = 1; s <= last; s++) {
            v[s - 1] = (double)r->loss[s];
            nonfinite += !isfinite(v[s - 1]);
        }
        n = series_points(v, 1, last, xs, ys, &stride);
    }
    c.id = "loss-chart", c.title = "Training loss (the batch's mean, per step)", c.ylabel = "loss", c.series = "loss";
    c.color = "#2457c5", c.x = xs, c.y = ys, c.n = n, c.stride = stride, c.first = 1, c.last = last;
    c.y_from_zero = 1;
    render_chart(b, &c);
    if (stride > 1)
        sb_printf(b, "<p class=\"note\">%llu steps: each point is the mean of %llu steps.</p>\n",
                  (unsigned long long)last, (unsigned long long)stride);
    if (nonfinite)
        sb_printf(b, "<p class=\"bad\">%llu step%s not finite (not drawn).</p>\n",
                  (unsigned long long)nonfinite, nonfinite == 1 ? "'s loss is" : "s' losses are");
    if (r->n_cks)
        sb_puts(b, "<p class=\"note\">Purple ticks on the step axis: checkpoints.</p>\n");
    /* learning rate: the recipe's schedule over every step of the recipe */
    if (r->have_rc && r->rcp.steps >= 1) {
        uint64_t k = r->rcp.steps > VT_REPORT_MAX_POINTS ? (r->rcp.steps + VT_REPORT_MAX_POINTS - 1) / VT_REPORT_MAX_POINTS : 1;
        size_t m = 0;
        for (uint64_t s = 1; s <= r->rcp.steps; s += k) { /* the schedule sampled, not averaged */
            xs[m] = (double)s, ys[m] = vt_recipe_lr(&r->rcp, s);
            if (isfinite(ys[m])) m++;
        }
        if (k > 1 && m && xs[m - 1] < (double)r->rcp.steps) { /* and the last step */
            xs[m] = (double)r->rcp.steps, ys[m] = vt_recipe_lr(&r->rcp, r->rcp.steps);
            if (isfinite(ys[m])) m++;
        }
        chart l = c;
        l.id = "lr-chart", l.title = "Learning rate (the recipe's schedule)", l.ylabel = "learning rate";
        l.series = "lr", l.color = "#c55a11", l.n = m, l.stride = k, l.first = 1, l.last = r->rcp.steps;
        l.marks = NULL, l.n_marks = 0;
        render_chart(b, &l);
    } else {
        sb_puts(b, "<p id=\"lr-chart\" class=\"warn\">No learning-rate curve: the manifest's recipe is unreadable.</p>\n");
    }
    /* log entries */
    int log_rounding = r->have_rc && r->rcp.bound.rounding == VT_ROUNDING_LOG;
    uint64_t total = 0;
    for (uint64_t s = 0; s < r->n_steps; s++) total += r->entries[s];
    if (r->have_rc && !log_rounding && total == 0) {
        sb_puts(b, "<p id=\"entries-chart\" class=\"note\" data-rounding=\"exact\">Log entries per step: none. "
                   "This run uses exact rounding (<code>rounding=exact</code>): every element whose rounding its "
                   "trainer's bound could not settle was evaluated exactly, so its steps write no log, and the run "
                   "store keeps no count of those elements per step (the trainer's summary line prints the "
                   "run's total).</p>\n");
    } else if (last >= 1) {
        for (uint64_t s = 1; s <= last; s++) v[s - 1] = (double)r->entries[s];
        n = series_points(v, 1, last, xs, ys, &stride);
        chart e = c;
        e.id = "entries-chart";
        e.title = "Rounding-log entries per step (elements whose rounding the log decides)";
        e.ylabel = "log entries", e.series = "log-entries", e.color = "#1a8a5a", e.integer_y = 1;
        e.n = n, e.stride = stride, e.first = 1, e.last = last, e.xmax = (double)xmax;
        render_chart(b, &e);
        sb_printf(b, "<p class=\"note\" id=\"entries-total\" data-total=\"%llu\">%llu log entries in all.</p>\n",
                  (unsigned long long)total, (unsigned long long)total);
    }
    free(v), free(xs), free(ys);
    sb_puts(b, "</section>\n");
}

static void render_checkpoints(sb *b, report *r)
{
    sb_puts(b, "<section id=\"checkpoints\">\n<h2>Checkpoints</h2>\n");
    if (!r->cks_ok) {
        sb_puts(b, "<p class=\"bad\">The checkpoint records are unreadable.</p>\n</section>\n");
        return;
    }
    if (r->have_rc)
        sb_printf(b, "<p class=\"note\">The recipe checkpoints every %u steps and the last step.</p>\n",
                  r->rcp.checkpoint_every);
    sb_printf(b, "<table id=\"checkpoint-table\" data-count=\"%zu\">\n<tr><th>step</th><th>file</th><th>bytes</th>"
                 "<th>loss at that step</th></tr>\n",
              r->n_cks);
    for (size_t i = 0; i < r->n_cks && i < VT_REPORT_MAX_CHECKPOINT_ROWS; i++) {
        char path[4200];
        struct stat sbuf;
        vt_store_checkpoint_path(r->o->run_dir, r->cks[i], path, sizeof path);
        const char *slash = strrchr(path, '/');
        int present = stat(path, &sbuf) == 0 && S_ISREG(sbuf.st_mode);
        sb_printf(b, "<tr class=\"checkpoint\" data-step=\"%llu\"><td class=\"num\">%llu</td><td><code>",
                  (unsigned long long)r->cks[i], (unsigned long long)r->cks[i]);
        sb_esc(b, slash ? slash + 1 : path);
        sb_puts(b, "</code></td>");
        if (present)
            sb_printf(b, "<td class=\"num\">%lld</td>", (long long)sbuf.st_size);
        else
            sb_puts(b, "<td class=\"bad\">missing</td>");
        if (r->cks[i] >= 1 && r->cks[i] < r->n_steps)
            sb_printf(b, "<td class=\"num\">%.6g</td></tr>\n", (double)r->loss[r->cks[i]]);
        else
            sb_puts(b, "<td></td></tr>\n");
    }
    sb_puts(b, "</table>\n");
    if (r->n_cks > VT_REPORT_MAX_CHECKPOINT_ROWS)
        sb_printf(b, "<p class=\"note\">and %zu more.</p>\n", r->n_cks - VT_REPORT_MAX_CHECKPOINT_ROWS);
    sb_puts(b, "<p class=\"note\">The files' contents are checked against the run by <code>auditor verify</code> "
               "and <code>trainer export</code>.</p>\n</section>\n");
}

static void render_recipe(sb *b, report *r)
{
    json_t *rj = recipe_obj(r);
    if (!rj) return;
    sb_puts(b, "<section id=\"recipe\">\n<h2>Recipe</h2>\n<details><summary>Every recipe key (from the manifest)"
               "</summary>\n<table>\n");
    const char *k;
    json_t *v;
    json_object_foreach(rj, k, v) {
        sb_puts(b, "<tr><th>");
        sb_esc(b, k);
        sb_puts(b, "</th><td><code>");
        json_value(b, v);
        sb_puts(b, "</code></td></tr>\n");
    }
    sb_puts(b, "</table>\n</details>\n</section>\n");
}

static void render_steps(sb *b, report *r)
{
    if (r->n_steps < 2) return;
    uint64_t last = r->n_steps - 1, shown = last > VT_REPORT_MAX_TABLE_STEPS ? VT_REPORT_MAX_TABLE_STEPS : last;
    sb_printf(b, "<section id=\"steps\">\n<h2>Steps</h2>\n<details><summary>The step records (%llu%s)</summary>\n",
              (unsigned long long)shown, shown < last ? ", the first ones" : "");
    sb_puts(b, "<table id=\"step-table\">\n<tr><th>step</th><th>loss</th><th>learning rate</th><th>log entries</th>"
               "<th>state committed</th></tr>\n");
    for (uint64_t s = 1; s <= shown; s++) {
        sb_printf(b, "<tr data-step=\"%llu\"><td class=\"num\">%llu</td><td class=\"num\">%.9g</td>",
                  (unsigned long long)s, (unsigned long long)s, (double)r->loss[s]);
        if (r->have_rc)
            sb_printf(b, "<td class=\"num\">%.9g</td>", vt_recipe_lr(&r->rcp, s));
        else
            sb_puts(b, "<td></td>");
        sb_printf(b, "<td class=\"num\">%llu</td><td>%s</td></tr>\n", (unsigned long long)r->entries[s],
                  r->has_state[s] ? "yes" : "");
    }
    sb_puts(b, "</table>\n</details>\n</section>\n");
}

static void render(sb *b, report *r)
{
    sb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<meta name=\"generator\" content=\"trainer report " VT_CODE_VERSION "\">\n<title>Run report: ");
    sb_esc(b, r->base);
    sb_puts(b, "</title>\n<style>\n");
    sb_puts(b, k_css);
    sb_puts(b, "</style>\n</head>\n<body>\n<h1>Run report: <code>");
    sb_esc(b, r->base);
    sb_puts(b, "</code></h1>\n<p class=\"note\">Written by <code>trainer report</code> from the run directory alone "
               "(run.db, checkpoints/, commitment.vtc) and the audit reports beside it. This page loads nothing.</p>\n");
    render_summary(b, r);
    sb_puts(b, "<section id=\"missing\">\n<h2>What is missing</h2>\n");
    if (r->n_problems)
        sb_printf(b, "<ul id=\"problems\" data-count=\"%zu\">\n%s</ul>\n", r->n_problems,
                  r->problems.p ? r->problems.p : "");
    else
        sb_puts(b, "<p id=\"problems-none\" class=\"ok\">Nothing: every part of the run this page shows is "
                   "present.</p>\n");
    sb_puts(b, "</section>\n");
    render_commitment(b, r);
    render_audits(b, r);
    render_curves(b, r);
    render_checkpoints(b, r);
    render_recipe(b, r);
    render_steps(b, r);
    sb_puts(b, "</body>\n</html>\n");
}

/* ------------------------------------------------------------------ writing */

static vt_err write_out(const char *path, const sb *b)
{
    if (strcmp(path, "-") == 0) {
        VT_RETURN_ERROR_IF(fwrite(b->p, 1, b->len, stdout) != b->len || fflush(stdout) != 0, VT_ERR_IO,
                           "writing the report to standard output: %s", strerror(errno));
        return VT_OK;
    }
    char tmp[4200];
    VT_RETURN_ERROR_IF(snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof tmp, VT_ERR_ARG,
                       "--out: the path is too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    VT_RETURN_ERROR_IF(fd < 0, VT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    size_t done = 0;
    while (done < b->len) {
        ssize_t k = write(fd, b->p + done, b->len - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        done += (size_t)k;
    }
    int err = done != b->len ? errno : 0;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return vt_set_error(VT_ERR_IO, "writing %s: %s", path, strerror(err ? err : EIO));
    }
    return VT_OK;
}

vt_err vt_report_write(const vt_report_opts *o, vt_report_result *res)
{
    VT_RETURN_ERROR_IF(!o || !o->run_dir || !o->out_path || !res, VT_ERR_ARG, "report: missing arguments");
    memset(res, 0, sizeof *res);
    struct stat sbuf;
    VT_RETURN_ERROR_IF(stat(o->run_dir, &sbuf) != 0, VT_ERR_IO, "run directory %s: %s", o->run_dir, strerror(errno));
    VT_RETURN_ERROR_IF(!S_ISDIR(sbuf.st_mode), VT_ERR_IO, "run directory %s: not a directory", o->run_dir);
    report r;
    memset(&r, 0, sizeof r);
    r.o = o;
    {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s", o->run_dir);
        size_t n = strlen(tmp);
        while (n > 1 && tmp[n - 1] == '/') tmp[--n] = 0;
        const char *slash = strrchr(tmp, '/');
        const char *base = slash && slash[1] ? slash + 1 : tmp;
        size_t bl = strlen(base) < sizeof r.base - 1 ? strlen(base) : sizeof r.base - 1;
        memcpy(r.base, base, bl);
        r.base[bl] = 0;
    }
    vt_store *st = NULL;
    vt_err e = vt_store_open(o->run_dir, 1, &st);
    if (e) return vt_error_prefix(e, "run directory %s", o->run_dir);
    read_manifest(&r, st);
    e = vt_store_step_count(st, &r.count);
    if (!e && r.count > VT_REPORT_MAX_STEPS)
        e = vt_set_error(VT_ERR_LIMIT, "the run store claims %llu steps, more than a report reads (%llu)",
                         (unsigned long long)r.count, (unsigned long long)VT_REPORT_MAX_STEPS);
    if (e) {
        vt_store_close(st);
        goto out;
    }
    read_steps(&r, st);
    read_checkpoints(&r, st);
    read_eval(&r, st);
    vt_store_close(st);
    read_commitment(&r);
    read_audits(&r);
    sb page;
    memset(&page, 0, sizeof page);
    render(&page, &r);
    if (page.oom || r.problems.oom || r.ignored.oom)
        e = vt_set_error(VT_ERR_NOMEM, "out of memory writing the report");
    else
        e = write_out(o->out_path, &page);
    free(page.p);
    res->steps = r.n_steps;
    res->committed = r.have_commitment;
    res->signature_ok = r.sig_ok && r.key_ok;
    res->root_ok = r.root_ok;
    for (size_t i = 0; i < r.n_audits; i++) res->audits += r.audits[i].j != NULL;
    res->problems = r.n_problems;
out:
    free(r.manifest);
    if (r.mj) json_decref(r.mj);
    free(r.loss), free(r.entries), free(r.has_state), free(r.leaves), free(r.cks);
    for (size_t i = 0; r.audits && i < r.n_audits; i++)
        if (r.audits[i].j) json_decref(r.audits[i].j);
    free(r.audits);
    free(r.problems.p), free(r.ignored.p);
    return e;
}
