/* vt_ranks.c - the ranks agree before anything is written (vt_ranks.h). */
#include "vt_ranks.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_hash.h"
#include "../model/vt_probe.h"
#include "../arch/vt_recipe.h"
#include "../rounding/vt_round_dist.h"

/* A record is text, one "KEY=VALUE\n" line per item (KEY has no '='), in this order: the options
 * ("option:"), the build ("build:"), "manifest", "program", then the probe's operations in the order
 * they ran ("probe:PROGRAM#OP:KIND", the output hash). */
typedef struct {
    char *b;
    size_t len, cap;
    int bad;
} rec;

static void put(rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(rec *r, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !r->bad; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(r->b ? r->b + r->len : NULL, r->b ? r->cap - r->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) r->bad = 1;
        else if (r->b && (size_t)n < r->cap - r->len) {
            r->len += (size_t)n;
            return;
        } else {
            size_t cap = 2 * r->cap + (size_t)n + 256;
            char *nb = realloc(r->b, cap);
            if (!nb) r->bad = 1;
            else r->b = nb, r->cap = cap;
        }
    }
}

static void put_hash(rec *r, const char *key, const uint8_t h[VT_HASH_LEN])
{
    char hex[2 * VT_HASH_LEN + 1];
    vt_hex(h, VT_HASH_LEN, hex);
    put(r, "%s=%s\n", key, hex);
}

/* the kind list of this build as text, every facet of every line of ops/vt_kinds.h, hashed */
static vt_err kinds_hash(uint8_t out[VT_HASH_LEN])
{
    static const char *const LINES[] = {
#define LINE(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, rx, dv, st, gr)                                                   \
    #ID " " nm " " #fam " " #rd " " #ni " " #no " " #nia " " #nfa " [" ia "] [" fa "] " #rx " " #dv " " #st " " #gr "\n",
        VT_KINDS(LINE)
#undef LINE
    };
    vt_sha256_ctx c;
    VT_FORWARD_IF_ERROR(vt_sha256_init(&c));
    for (size_t i = 0; i < sizeof LINES / sizeof LINES[0]; i++) {
        vt_err e = vt_sha256_update(&c, LINES[i], strlen(LINES[i]));
        if (e) {
            vt_sha256_abort(&c);
            return e;
        }
    }
    return vt_sha256_final(&c, out);
}

static vt_err make_record(const vt_ranks_start *s, rec *r)
{
    put(r, "option:--shard-state=%s\n", s->shard_state ? "yes" : "no");
    put(r, "option:--backend=%s\n", s->backend);
    put(r, "option:engine=%s\n", s->engine);
    put(r, "option:--resume=%s\n", s->resume ? "yes" : "no");
    put(r, "option:--stop-after=%llu\n", (unsigned long long)s->stop_after);
    put(r, "build:code version=%s\n", VT_CODE_VERSION);
    put(r, "build:manifest format=%s\n", VT_MANIFEST_FORMAT);
    put(r, "build:step program versions=1..%d\n", VT_PROGRAM_VERSION_MAX);
    put(r, "build:probe version=%d\n", VT_PROBE_VERSION);
    put(r, "build:distributed rounding round=%zu\n", (size_t)VT_ROUND_DIST_ROUND);
#ifdef __FAST_MATH__
    put(r, "build:floating point=FLT_EVAL_METHOD %d, fast-math\n", (int)FLT_EVAL_METHOD);
#else
    put(r, "build:floating point=FLT_EVAL_METHOD %d\n", (int)FLT_EVAL_METHOD);
#endif
    uint8_t h[VT_HASH_LEN];
    VT_FORWARD_IF_ERROR(kinds_hash(h));
    put_hash(r, "build:kind list", h);
    VT_FORWARD_IF_ERROR(vt_sha256(s->manifest, strlen(s->manifest), h));
    put_hash(r, "manifest", h);
    char *desc = NULL;
    VT_FORWARD_IF_ERROR(vt_program_describe(s->prog, &desc));
    vt_err e = vt_sha256(desc, strlen(desc), h);
    free(desc);
    VT_FORWARD_IF_ERROR(e);
    put_hash(r, "program", h);
    vt_probe *p = malloc(sizeof *p);
    VT_RETURN_ERROR_IF(!p, VT_ERR_NOMEM, "out of memory");
    e = vt_probe_run(s->order, s->hooks ? s->hooks->probe_op : NULL, s->hooks ? s->hooks->ctx : NULL, p);
    for (size_t i = 0; i < p->n_seq && !e; i++) { /* in the order they ran: the first that differs is the cause */
        const vt_probe_op *q = &p->seq[i];
        char key[96];
        snprintf(key, sizeof key, "probe:%s#%u:%s", vt_probe_program_name(q->prog), q->op, vt_opkind_get(q->kind)->name);
        put_hash(r, key, q->h);
    }
    vt_probe_free(p);
    free(p);
    VT_FORWARD_IF_ERROR(e);
    VT_RETURN_ERROR_IF(r->bad, VT_ERR_NOMEM, "out of memory");
    return VT_OK;
}

/* one record's items */
typedef struct {
    const char *k, *v;
    size_t kl, vl;
} item;

static size_t parse(const char *b, size_t n, item *it, size_t cap)
{
    size_t m = 0;
    for (size_t i = 0; i < n && m < cap;) {
        const char *nl = memchr(b + i, '\n', n - i), *eq = memchr(b + i, '=', n - i);
        size_t end = nl ? (size_t)(nl - b) : n;
        if (eq && (size_t)(eq - b) < end)
            it[m++] = (item){b + i, eq + 1, (size_t)(eq - (b + i)), end - (size_t)(eq + 1 - b)};
        i = end + 1;
    }
    return m;
}

static int same_key(const item *a, const item *b) { return a->kl == b->kl && memcmp(a->k, b->k, a->kl) == 0; }

/* want's key among it[0 .. n), tried at `at` first (records of one build hold the same keys in the
 * same order) */
static const item *find(const item *it, size_t n, size_t at, const item *want)
{
    if (at < n && same_key(&it[at], want)) return &it[at];
    for (size_t i = 0; i < n; i++)
        if (same_key(&it[i], want)) return &it[i];
    return NULL;
}

/* The first item where a rank's record differs from rank 0's (rank 0's order, then the rank's items
 * that rank 0's lacks): its key and the two values (NULL: absent), copied (they point into the
 * gathered records); the number of probe items that differ. */
typedef struct {
    item key, mine_v, root_v;
    const item *mine, *root; /* &mine_v, &root_v or NULL */
    int probes;
} diff;

static int first_diff(const item *root, size_t nr, const item *mine, size_t nm, diff *d)
{
    memset(d, 0, sizeof *d);
    int found = 0;
    for (size_t i = 0; i < nr; i++) {
        const item *m = find(mine, nm, i, &root[i]);
        if (m && m->vl == root[i].vl && memcmp(m->v, root[i].v, m->vl) == 0) continue;
        if (!found) {
            found = 1, d->key = root[i], d->root_v = root[i], d->root = &d->root_v;
            if (m) d->mine_v = *m, d->mine = &d->mine_v;
        }
        d->probes += root[i].kl > 6 && memcmp(root[i].k, "probe:", 6) == 0;
    }
    for (size_t i = 0; i < nm && !found; i++)
        if (!find(root, nr, i, &mine[i])) found = 1, d->key = mine[i], d->mine_v = mine[i], d->mine = &d->mine_v;
    return found;
}

static int is(const item *k, const char *prefix)
{
    size_t n = strlen(prefix);
    return k->kl >= n && memcmp(k->k, prefix, n) == 0;
}

static int is_word(const item *v, const char *w) { return v && v->vl == strlen(w) && memcmp(v->v, w, v->vl) == 0; }

/* an item's value for "%.*s" (H: its first 16 characters) */
#define V(it) (it) ? (int)(it)->vl : 6, (it) ? (it)->v : "(none)"
#define H(it) (it) ? ((it)->vl < 16 ? (int)(it)->vl : 16) : 6, (it) ? (it)->v : "(none)"

/* The error of rank R's first difference d (others: the other ranks that differ, as text). */
static vt_err report(int R, int N, const diff *d, const char *others)
{
    const item *k = &d->key;
    const int kl = (int)k->kl;
    if (is(k, "option:engine"))
        VT_RETURN_ERROR(VT_ERR_ARG,
                        "rank %d of %d would run its data collectives over %.*s, rank 0 over %.*s (VT_DIST_ENGINE)%s: "
                        "every rank must be given the same options and settings; nothing was written",
                        R, N, V(d->mine), V(d->root), others);
    if (is(k, "option:")) {
        const int has = is_word(d->mine, "yes") && is_word(d->root, "no");
        if (has || (is_word(d->mine, "no") && is_word(d->root, "yes")))
            VT_RETURN_ERROR(VT_ERR_ARG,
                            "rank %d of %d %s %.*s, rank 0 %s%s: every rank must be given the same options (they "
                            "decide the collectives the ranks run together); nothing was written",
                            R, N, has ? "has" : "does not have", kl - 7, k->k + 7, has ? "does not" : "has it",
                            others);
        VT_RETURN_ERROR(VT_ERR_ARG,
                        "rank %d of %d has %.*s %.*s, rank 0 %.*s %.*s%s: every rank must be given the same options "
                        "(they decide the collectives the ranks run together); nothing was written",
                        R, N, kl - 7, k->k + 7, V(d->mine), kl - 7, k->k + 7, V(d->root), others);
    }
    if (is(k, "build:"))
        VT_RETURN_ERROR(VT_ERR_ARG,
                        "rank %d of %d runs another build than rank 0: its %.*s is %.*s, rank 0's %.*s%s: every rank "
                        "must run the same build of the trainer; nothing was written",
                        R, N, kl - 6, k->k + 6, V(d->mine), V(d->root), others);
    if (is(k, "manifest"))
        VT_RETURN_ERROR(VT_ERR_ARG,
                        "rank %d of %d: its manifest (recipe, dataset or --init file) differs from rank 0's%s: every "
                        "rank must be given the same recipe, options and files; nothing was written",
                        R, N, others);
    if (is(k, "program"))
        VT_RETURN_ERROR(VT_ERR_ARG,
                        "rank %d of %d: its step program differs from rank 0's (another build of the trainer)%s: every "
                        "rank must run the same program; nothing was written",
                        R, N, others);
    /* probe:PROGRAM#OP:KIND - the first operation of the probe whose outputs differ */
    const char *colon = memrchr(k->k, ':', k->kl);
    if (!colon || colon - k->k < 6) colon = k->k + 5; /* no operation named: the whole key is the kind */
    const int nl = (int)(k->k + k->kl - colon - 1);
    const char *w = k->k + 6, *hash = colon > w ? memchr(w, '#', (size_t)(colon - w)) : NULL;
    if (!hash) hash = colon; /* PROGRAM#OP: the program's name, then the operation's id */
    const int pl = (int)(hash - w), ol = hash < colon ? (int)(colon - hash - 1) : 0;
    char more[80] = "";
    if (d->probes > 1)
        snprintf(more, sizeof more, ", and %d later operation%s of the probe differ%s", d->probes - 1,
                 d->probes == 2 ? "" : "s", d->probes == 2 ? "s" : "");
    VT_RETURN_ERROR(VT_ERR_MISMATCH,
                    "rank %d of %d: its known-answer probe of kind %.*s differs from rank 0's (operation %.*s of the "
                    "probe's %.*s program: %.*s... against %.*s...%s)%s: its build computes other bits than rank "
                    "0's; every rank stopped before anything was written",
                    R, N, nl, colon + 1, ol, hash + 1, pl, w, H(d->mine), H(d->root), more, others);
}

/* Every rank's record against rank 0's: VT_OK, or the lowest differing rank's error (report). */
static vt_err compare(int N, const uint8_t *all, const size_t *lens)
{
    size_t cap = 1, total = 0;
    for (int r = 0; r < N; r++) total += lens[r];
    for (size_t i = 0; i < total; i++) cap += all[i] == '\n';
    item *root = malloc(cap * sizeof *root), *mine = malloc(cap * sizeof *mine);
    if (!root || !mine) {
        free(root);
        free(mine);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory comparing the ranks");
    }
    const size_t nr = parse((const char *)all, lens[0], root, cap);
    int R = -1, n_others = 0, cut = 0;
    diff dR, d;
    char others[96] = "";
    size_t ol = 0, off = lens[0];
    for (int r = 1; r < N; r++) {
        const size_t nm = parse((const char *)all + off, lens[r], mine, cap);
        off += lens[r];
        if (!first_diff(root, nr, mine, nm, &d)) continue;
        if (R < 0) {
            R = r, dR = d;
            dR.mine = d.mine ? &dR.mine_v : NULL, dR.root = d.root ? &dR.root_v : NULL;
            continue;
        }
        if (ol + 16 < sizeof others)
            ol += (size_t)snprintf(others + ol, sizeof others - ol, "%s%d", n_others ? ", " : "", r);
        else
            cut = 1;
        n_others++;
    }
    free(root);
    free(mine);
    if (R < 0) return VT_OK;
    char tail[160] = "";
    if (n_others)
        snprintf(tail, sizeof tail, " (rank%s %s%s of %d differ%s from rank 0 too)", n_others > 1 ? "s" : "", others,
                 cut ? ", ..." : "", N, n_others > 1 ? "" : "s");
    return report(R, N, &dR, tail);
}

vt_err vt_ranks_agree(vt_comm *c, const vt_ranks_start *s, int *common)
{
    *common = 0;
    rec r = {0};
    int failed = -1;
    vt_err e = vt_dist_agree(c, make_record(s, &r), &failed);
    if (e) {
        free(r.b);
        *common = failed >= 0;
        return e;
    }
    uint8_t *all = NULL;
    size_t *lens = NULL;
    e = vt_dist_allgather_blocks(c, r.b, r.len, &all, &lens);
    free(r.b);
    VT_FORWARD_IF_ERROR(e);
    e = compare(vt_dist_size(c), all, lens);
    free(all);
    free(lens);
    *common = e != VT_OK; /* the same records on every rank: the same outcome */
    return e;
}
