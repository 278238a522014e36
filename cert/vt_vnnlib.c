/* vt_vnnlib.c - a strict parser of the VNN-COMP subset of VNN-LIB (vt_vnnlib.h): an S-expression
 * reader (every nesting, length and count checked) and the interpretation into an input box and a
 * spec matrix of disjunctions of conjunctions. */
#include "vt_vnnlib.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_hash.h"
#include "vt_cert_int.h"

typedef struct {
    uint32_t first, next; /* list: first child (0: none); sibling (0: none); node 0 is the root */
    uint32_t line, start, len;
    uint8_t is_list;
} sx;

typedef struct {
    const char *t;
    size_t n;
    sx *v;
    uint32_t nv, cap;
} reader;

static vt_err push(reader *r, uint8_t is_list, uint32_t line, size_t start, size_t len, uint32_t *id)
{
    if (r->nv == r->cap) {
        uint32_t cap = r->cap ? 2 * r->cap : 256;
        sx *nv = realloc(r->v, (size_t)cap * sizeof *nv);
        VT_RETURN_ERROR_IF(!nv, VT_ERR_NOMEM, "out of memory");
        r->v = nv, r->cap = cap;
    }
    sx *s = &r->v[r->nv];
    memset(s, 0, sizeof *s);
    s->is_list = is_list, s->line = line, s->start = (uint32_t)start, s->len = (uint32_t)len;
    *id = r->nv++;
    return VT_OK;
}

static int is_sym(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("_-+.<>=", c);
}

/* The S-expressions of the text as children of node 0. */
static vt_err read_sx(reader *r)
{
    uint32_t stack[VT_VNNLIB_MAX_DEPTH + 1], last[VT_VNNLIB_MAX_DEPTH + 1], depth = 0, line = 1, id;
    VT_FORWARD_IF_ERROR(push(r, 1, 1, 0, 0, &id));
    stack[0] = 0, last[0] = 0;
    for (size_t i = 0; i < r->n;) {
        char c = r->t[i];
        if (c == '\n') {
            line++, i++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r') {
            i++;
            continue;
        }
        if (c == ';') {
            while (i < r->n && r->t[i] != '\n') i++;
            continue;
        }
        if (c == ')') {
            VT_RETURN_ERROR_IF(depth == 0, VT_ERR_FORMAT, "vnnlib line %u: ')' without '('", line);
            depth--, i++;
            continue;
        }
        size_t start = i, len = 1;
        if (c == '(') {
            VT_RETURN_ERROR_IF(depth == VT_VNNLIB_MAX_DEPTH, VT_ERR_LIMIT, "vnnlib line %u: nested deeper than %u", line,
                               VT_VNNLIB_MAX_DEPTH);
            i++;
        } else {
            VT_RETURN_ERROR_IF(!is_sym(c), VT_ERR_FORMAT, "vnnlib line %u: unexpected character 0x%02x", line,
                               (unsigned)(unsigned char)c);
            while (i + len < r->n && is_sym(r->t[i + len])) len++;
            i += len;
        }
        VT_FORWARD_IF_ERROR(push(r, c == '(', line, start, c == '(' ? 0 : len, &id));
        if (last[depth]) r->v[last[depth]].next = id;
        else r->v[stack[depth]].first = id;
        last[depth] = id;
        if (c == '(') {
            depth++;
            stack[depth] = id, last[depth] = 0;
        }
    }
    VT_RETURN_ERROR_IF(depth != 0, VT_ERR_FORMAT, "vnnlib line %u: '(' not closed at the end of the file (line %u)",
                       r->v[stack[depth]].line, line);
    return VT_OK;
}

static int sym_is(const reader *r, uint32_t id, const char *s)
{
    const sx *x = &r->v[id];
    return id && !x->is_list && x->len == strlen(s) && memcmp(r->t + x->start, s, x->len) == 0;
}

static uint32_t n_children(const reader *r, uint32_t id)
{
    uint32_t k = 0;
    for (uint32_t c = r->v[id].first; c; c = r->v[c].next) k++;
    return k;
}

static uint32_t child(const reader *r, uint32_t id, uint32_t k)
{
    uint32_t c = r->v[id].first;
    while (c && k--) c = r->v[c].next;
    return c;
}

/* The significant digits of a decimal literal (no sign, no leading or trailing zeros) and the
 * exponent of its first digit; 0 when it has none (zero) or too many. */
static int sig_digits(const char *s, size_t n, char *dig, size_t cap, size_t *nd, long *e10)
{
    size_t i = 0, k = 0;
    long pos = 0, first = 0, ex = 0; /* pos: the exponent of the next integer digit, counted from the point */
    int seen = 0, esign = 1;
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    size_t intd = 0;
    for (size_t j = i; j < n && s[j] >= '0' && s[j] <= '9'; j++) intd++;
    pos = (long)intd - 1;
    for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] == '.') continue;
        if (s[i] != '0' && !seen) seen = 1, first = pos;
        if (seen) {
            if (k >= cap) return 0;
            dig[k++] = s[i];
        }
        pos--;
    }
    if (i < n) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+')) esign = s[i++] == '-' ? -1 : 1;
        for (; i < n; i++)
            if (ex < 100000) ex = ex * 10 + (s[i] - '0');
    }
    while (k && dig[k - 1] == '0') k--;
    *nd = k, *e10 = first + esign * ex;
    return seen;
}

/* 1 when the (valid) literal s is exactly the double v: v's exact decimal expansion (printf prints
 * it digit for digit) has the literal's significant digits and exponent. */
static int same_decimal(const char *s, size_t n, double v)
{
    char a[420], b[900];
    size_t na, nb = 0;
    long ea;
    if (v == 0 || !sig_digits(s, n, a, sizeof a, &na, &ea)) return 0;
    int len = snprintf(b, sizeof b, "%.800e", fabs(v)); /* d.ddd...e+XX, exact: a double has < 800 digits */
    if (len <= 0 || (size_t)len >= sizeof b) return 0;
    char *e = strchr(b, 'e');
    if (!e) return 0;
    long eb = strtol(e + 1, NULL, 10);
    char *q = b;
    for (char *p = b; p < e; p++)
        if (*p != '.') *q++ = *p;
    nb = (size_t)(q - b);
    while (nb && b[nb - 1] == '0') nb--;
    return eb == ea && na == nb && memcmp(a, b, na) == 0;
}

int vt_vnnlib_number(const char *s, size_t n, double *lo, double *hi)
{
    char buf[400];
    if (n == 0 || n >= sizeof buf) return -1;
    size_t i = 0, nd = 0, frac = 0;
    int esign = 1;
    long ex = 0;
    double D = 0;
    int big = 0;
    if (s[i] == '-' || s[i] == '+') i++;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, nd++) {
        if (D < 0x1p53) D = D * 10 + (s[i] - '0'); /* exact below 2^53 */
        if (D >= 0x1p53) big = 1;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, nd++, frac++) {
            if (D < 0x1p53) D = D * 10 + (s[i] - '0');
            if (D >= 0x1p53) big = 1;
        }
    }
    if (nd == 0) return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+')) esign = s[i++] == '-' ? -1 : 1;
        size_t ed = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, ed++)
            if (ex < 100000) ex = ex * 10 + (s[i] - '0');
        if (ed == 0) return -1;
    }
    if (i != n) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    errno = 0;
    double v = strtod(buf, NULL);
    if (!isfinite(v)) return -1;
    long k = (long)frac - esign * ex; /* value = D / 10^k */
    int exact = 0;
    if (!big && D == 0) exact = 1;
    else if (!big && k >= -22 && k <= 22) {
        double p = 1;
        for (long q = 0; q < (k < 0 ? -k : k); q++) p *= 10; /* exact up to 10^22 */
        double av = fabs(v);
        exact = k >= 0 ? fma(av, p, -D) == 0 : fma(D, p, -av) == 0;
    } else exact = same_decimal(s, n, v);
    if (exact) *lo = *hi = v;
    else *lo = nextafter(v, -INFINITY), *hi = nextafter(v, INFINITY);
    return 0;
}

/* A term: X_i (kind 'X'), Y_j ('Y') or a number ('n'). */
typedef struct {
    char kind;
    uint32_t idx;
    double lo, hi;
} term;

static int var_name(const reader *r, uint32_t id, char *kind, uint32_t *idx)
{
    const sx *x = &r->v[id];
    if (x->is_list || x->len < 3 || x->len > 9) return 0;
    const char *s = r->t + x->start;
    if ((s[0] != 'X' && s[0] != 'Y') || s[1] != '_') return 0;
    if (s[2] == '0' && x->len > 3) return 0;
    uint64_t v = 0;
    for (uint32_t i = 2; i < x->len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v >= VT_VNNLIB_MAX_VARS) return 0;
    *kind = s[0], *idx = (uint32_t)v;
    return 1;
}

typedef struct {
    reader r;
    vt_vnnlib *v;
    uint8_t *decl[2];
    uint32_t cap[2];
} ctx;

static vt_err get_term(ctx *c, uint32_t id, term *t)
{
    const sx *x = &c->r.v[id];
    VT_RETURN_ERROR_IF(x->is_list, VT_ERR_UNSUPPORTED,
                       "vnnlib line %u: a compound term (only X_i, Y_j and numbers are supported)", x->line);
    if (var_name(&c->r, id, &t->kind, &t->idx)) {
        int w = t->kind == 'Y';
        VT_RETURN_ERROR_IF(t->idx >= c->cap[w] || !c->decl[w][t->idx], VT_ERR_FORMAT, "vnnlib line %u: %.*s is not declared",
                           x->line, (int)x->len, c->r.t + x->start);
        return VT_OK;
    }
    t->kind = 'n';
    VT_RETURN_ERROR_IF(vt_vnnlib_number(c->r.t + x->start, x->len, &t->lo, &t->hi) != 0, VT_ERR_FORMAT,
                       "vnnlib line %u: \"%.*s\" is neither a declared variable nor a number", x->line,
                       (int)(x->len > 40 ? 40 : x->len), c->r.t + x->start);
    return VT_OK;
}

/* An atom (op A B): *is_input when it bounds an X by a number; strict for < and >; swapped for >= and >
 * (then A >= B is read as B <= A). */
static vt_err get_atom(ctx *c, uint32_t id, term *a, term *b, int *strict, int *is_input)
{
    const sx *x = &c->r.v[id];
    uint32_t op = child(&c->r, id, 0);
    VT_RETURN_ERROR_IF(!x->is_list || n_children(&c->r, id) != 3 || !op, VT_ERR_UNSUPPORTED,
                       "vnnlib line %u: expected a comparison (<= A B), (>= A B), (< A B) or (> A B)", x->line);
    int le = sym_is(&c->r, op, "<=") || sym_is(&c->r, op, "<"), ge = sym_is(&c->r, op, ">=") || sym_is(&c->r, op, ">");
    VT_RETURN_ERROR_IF(!le && !ge, VT_ERR_UNSUPPORTED, "vnnlib line %u: operator \"%.*s\" is not supported here", x->line,
                       (int)(c->r.v[op].is_list ? 2 : (c->r.v[op].len > 20 ? 20 : c->r.v[op].len)),
                       c->r.v[op].is_list ? "()" : c->r.t + c->r.v[op].start);
    *strict = sym_is(&c->r, op, "<") || sym_is(&c->r, op, ">");
    term t0, t1;
    VT_FORWARD_IF_ERROR(get_term(c, child(&c->r, id, 1), &t0));
    VT_FORWARD_IF_ERROR(get_term(c, child(&c->r, id, 2), &t1));
    *a = le ? t0 : t1, *b = le ? t1 : t0; /* a <= b */
    int hasx = a->kind == 'X' || b->kind == 'X', hasy = a->kind == 'Y' || b->kind == 'Y';
    VT_RETURN_ERROR_IF(hasx && (hasy || (a->kind == 'X' && b->kind == 'X')), VT_ERR_UNSUPPORTED,
                       "vnnlib line %u: a constraint relating two variables with an input X (only boxes on X)", x->line);
    *is_input = hasx;
    return VT_OK;
}

/* a <= b for an input bound: narrows the outer box (exact value's interval) and the inner box. */
static void input_bound(ctx *c, const term *a, const term *b, int strict)
{
    vt_vnnlib *v = c->v;
    if (a->kind == 'X') { /* X <= b */
        uint32_t i = a->idx;
        double in = strict ? nextafter(b->lo, -INFINITY) : b->lo;
        if (b->hi < v->xu[i]) v->xu[i] = b->hi;
        if (in < v->ixu[i]) v->ixu[i] = in;
    } else { /* a <= X */
        uint32_t i = b->idx;
        double in = strict ? nextafter(a->hi, INFINITY) : a->hi;
        if (a->lo > v->xl[i]) v->xl[i] = a->lo;
        if (in > v->ixl[i]) v->ixl[i] = in;
    }
}

/* The row of an output atom a <= b: t = a - b. */
static void output_row(ctx *c, uint32_t row, const term *a, const term *b, int strict)
{
    vt_vnnlib *v = c->v;
    double *C = v->C + (size_t)row * v->ny;
    if (a->kind == 'Y') C[a->idx] += 1;
    if (b->kind == 'Y') C[b->idx] -= 1;
    double lo = 0, hi = 0;
    if (a->kind == 'n' && b->kind == 'n') {
        lo = nextafter(a->lo - b->hi, -INFINITY), hi = nextafter(a->hi - b->lo, INFINITY);
    } else if (a->kind == 'n') lo = a->lo, hi = a->hi;
    else if (b->kind == 'n') lo = -b->hi, hi = -b->lo;
    v->d_lo[row] = lo, v->d_hi[row] = hi, v->strict[row] = (uint8_t)strict;
}

/* The output atoms of a conjunction f (an atom or (and atoms...), nested ands flattened) appended to
 * list (NULL: counted only); with inputs_ok, input bounds are applied. */
static vt_err conjunction(ctx *c, uint32_t f, int inputs_ok, uint32_t *list, uint32_t *n, uint32_t depth)
{
    const sx *x = &c->r.v[f];
    VT_RETURN_ERROR_IF(!x->is_list, VT_ERR_FORMAT, "vnnlib line %u: expected a formula, not a symbol", x->line);
    uint32_t h = child(&c->r, f, 0);
    if (sym_is(&c->r, h, "and")) {
        VT_RETURN_ERROR_IF(depth > VT_VNNLIB_MAX_DEPTH, VT_ERR_LIMIT, "vnnlib line %u: nested too deep", x->line);
        for (uint32_t g = c->r.v[h].next; g; g = c->r.v[g].next)
            VT_FORWARD_IF_ERROR(conjunction(c, g, inputs_ok, list, n, depth + 1));
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(sym_is(&c->r, h, "or"), VT_ERR_UNSUPPORTED,
                       "vnnlib line %u: an (or ...) inside a conjunction (supported: one top-level (or ...))", x->line);
    term a, b;
    int strict, is_in;
    VT_FORWARD_IF_ERROR(get_atom(c, f, &a, &b, &strict, &is_in));
    if (is_in) {
        VT_RETURN_ERROR_IF(!inputs_ok, VT_ERR_UNSUPPORTED,
                           "vnnlib line %u: an input constraint inside an (or ...) (supported: input boxes only)", x->line);
        if (list) input_bound(c, &a, &b, strict);
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(*n >= VT_VNNLIB_MAX_ROWS, VT_ERR_LIMIT, "vnnlib line %u: more than %u output constraints", x->line,
                       VT_VNNLIB_MAX_ROWS);
    if (list) list[*n] = f;
    (*n)++;
    return VT_OK;
}

static vt_err declare(ctx *c, uint32_t f, int mark)
{
    const sx *x = &c->r.v[f];
    uint32_t nm = child(&c->r, f, 1), ty = child(&c->r, f, 2);
    char kind;
    uint32_t idx;
    VT_RETURN_ERROR_IF(n_children(&c->r, f) != 3 || !var_name(&c->r, nm, &kind, &idx) || !sym_is(&c->r, ty, "Real"),
                       VT_ERR_UNSUPPORTED, "vnnlib line %u: expected (declare-const X_i Real) or (declare-const Y_j Real)",
                       x->line);
    int w = kind == 'Y';
    if (!mark) {
        if (idx + 1 > c->cap[w]) c->cap[w] = idx + 1;
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(c->decl[w][idx], VT_ERR_FORMAT, "vnnlib line %u: %c_%u declared twice", x->line, kind, idx);
    c->decl[w][idx] = 1;
    return VT_OK;
}

static vt_err interpret(ctx *c)
{
    reader *r = &c->r;
    vt_vnnlib *v = c->v;
    /* declarations: sizes, then marks */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t f = r->v[0].first; f; f = r->v[f].next) {
            const sx *x = &r->v[f];
            uint32_t h = x->is_list ? child(r, f, 0) : 0;
            VT_RETURN_ERROR_IF(!h, VT_ERR_FORMAT, "vnnlib line %u: expected (declare-const ...) or (assert ...)", x->line);
            if (sym_is(r, h, "declare-const")) VT_FORWARD_IF_ERROR(declare(c, f, pass));
            else
                VT_RETURN_ERROR_IF(!sym_is(r, h, "assert"), VT_ERR_UNSUPPORTED,
                                   "vnnlib line %u: only declare-const and assert are supported", x->line);
        }
        if (pass == 0)
            for (int w = 0; w < 2; w++) {
                c->decl[w] = calloc(c->cap[w] ? c->cap[w] : 1, 1);
                VT_RETURN_ERROR_IF(!c->decl[w], VT_ERR_NOMEM, "out of memory");
            }
    }
    for (int w = 0; w < 2; w++) {
        VT_RETURN_ERROR_IF(c->cap[w] == 0, VT_ERR_FORMAT, "vnnlib: no %c variable is declared", w ? 'Y' : 'X');
        for (uint32_t i = 0; i < c->cap[w]; i++)
            VT_RETURN_ERROR_IF(!c->decl[w][i], VT_ERR_FORMAT, "vnnlib: %c_%u is not declared (the indices must be 0..%u)",
                               w ? 'Y' : 'X', i, c->cap[w] - 1);
    }
    v->nx = c->cap[0], v->ny = c->cap[1];
    v->xl = malloc(v->nx * sizeof(double)), v->xu = malloc(v->nx * sizeof(double));
    v->ixl = malloc(v->nx * sizeof(double)), v->ixu = malloc(v->nx * sizeof(double));
    VT_RETURN_ERROR_IF(!v->xl || !v->xu || !v->ixl || !v->ixu, VT_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < v->nx; i++) v->xl[i] = v->ixl[i] = -INFINITY, v->xu[i] = v->ixu[i] = INFINITY;
    /* the asserts: common rows, and the one disjunction */
    uint32_t n_common = 0, the_or = 0;
    for (uint32_t f = r->v[0].first; f; f = r->v[f].next) {
        if (!sym_is(r, child(r, f, 0), "assert")) continue;
        uint32_t g = child(r, f, 1);
        VT_RETURN_ERROR_IF(n_children(r, f) != 2, VT_ERR_FORMAT, "vnnlib line %u: (assert F) takes one formula",
                           r->v[f].line);
        if (r->v[g].is_list && sym_is(r, child(r, g, 0), "or")) {
            VT_RETURN_ERROR_IF(the_or, VT_ERR_UNSUPPORTED, "vnnlib line %u: a second top-level (or ...) (supported: one)",
                               r->v[g].line);
            the_or = g;
            continue;
        }
        VT_FORWARD_IF_ERROR(conjunction(c, g, 1, NULL, &n_common, 0));
    }
    uint32_t *common = malloc((n_common ? n_common : 1) * sizeof *common), nc = 0;
    VT_RETURN_ERROR_IF(!common, VT_ERR_NOMEM, "out of memory");
    vt_err e = VT_OK;
    for (uint32_t f = r->v[0].first; f && !e; f = r->v[f].next) {
        uint32_t g = child(r, f, 1);
        if (!sym_is(r, child(r, f, 0), "assert") || g == the_or) continue;
        e = conjunction(c, g, 1, common, &nc, 0);
    }
    for (uint32_t i = 0; i < v->nx && !e; i++) {
        if (!(v->xl[i] > -INFINITY) || !(v->xu[i] < INFINITY))
            e = vt_set_error(VT_ERR_UNSUPPORTED, "vnnlib: X_%u has no %s bound (supported: a bounded box)", i,
                             v->xl[i] > -INFINITY ? "upper" : "lower");
        else if (!(v->xl[i] <= v->xu[i])) e = vt_set_error(VT_ERR_FORMAT, "vnnlib: the box of X_%u is empty", i);
    }
    /* the disjuncts */
    uint32_t nd = 0;
    uint64_t rows = 0;
    if (the_or)
        for (uint32_t g = r->v[child(r, the_or, 0)].next; g && !e; g = r->v[g].next, nd++) {
            uint32_t k = 0;
            e = conjunction(c, g, 0, NULL, &k, 0);
            rows += (uint64_t)k + nc;
        }
    else nd = 1, rows = nc;
    if (!e && the_or && nd == 0) e = vt_set_error(VT_ERR_FORMAT, "vnnlib line %u: an empty (or)", r->v[the_or].line);
    if (!e && rows > VT_VNNLIB_MAX_ROWS)
        e = vt_set_error(VT_ERR_LIMIT, "vnnlib: %llu output constraints over all disjuncts (at most %u)",
                         (unsigned long long)rows, VT_VNNLIB_MAX_ROWS);
    if (!e) {
        v->n_disj = nd, v->n_rows = (uint32_t)rows;
        v->disj_start = calloc(nd + 1, sizeof *v->disj_start);
        v->C = calloc(rows ? rows * v->ny : 1, sizeof *v->C);
        v->d_lo = calloc(rows ? rows : 1, sizeof(double)), v->d_hi = calloc(rows ? rows : 1, sizeof(double));
        v->strict = calloc(rows ? rows : 1, 1);
        if (!v->disj_start || !v->C || !v->d_lo || !v->d_hi || !v->strict) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    uint32_t *lst = NULL, row = 0;
    if (!e && !(lst = malloc(VT_VNNLIB_MAX_ROWS * sizeof *lst))) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < nd && !e; k++) {
        uint32_t n = 0;
        if (the_or) e = conjunction(c, child(r, the_or, k + 1), 0, lst, &n, 0);
        for (uint32_t q = 0; q < nc && n < VT_VNNLIB_MAX_ROWS; q++) lst[n++] = common[q];
        v->disj_start[k] = row;
        for (uint32_t q = 0; q < n && !e; q++) {
            term a, b;
            int strict, is_in;
            e = get_atom(c, lst[q], &a, &b, &strict, &is_in);
            if (!e) output_row(c, row++, &a, &b, strict);
        }
    }
    if (!e) v->disj_start[nd] = row;
    free(lst);
    free(common);
    return e;
}

vt_err vt_vnnlib_parse(const char *text, size_t n, vt_vnnlib *out)
{
    memset(out, 0, sizeof *out);
    VT_RETURN_ERROR_IF(n > VT_VNNLIB_MAX_BYTES, VT_ERR_LIMIT, "vnnlib: %zu bytes (at most %u)", n, VT_VNNLIB_MAX_BYTES);
    ctx c;
    memset(&c, 0, sizeof c);
    c.r.t = text, c.r.n = n, c.v = out;
    vt_err e = read_sx(&c.r);
    if (!e) e = interpret(&c);
    free(c.r.v), free(c.decl[0]), free(c.decl[1]);
    if (e) vt_vnnlib_free(out);
    return e;
}

void vt_vnnlib_free(vt_vnnlib *v)
{
    free(v->xl), free(v->xu), free(v->ixl), free(v->ixu), free(v->disj_start), free(v->C);
    free(v->d_lo), free(v->d_hi), free(v->strict);
    memset(v, 0, sizeof *v);
}

vt_err vt_vnnlib_read(const char *path, vt_vnnlib *out, uint8_t sha256[32])
{
    memset(out, 0, sizeof *out);
    uint8_t *p = NULL;
    size_t n = 0;
    VT_FORWARD_IF_ERROR(vti_cert_read_file(path, VT_VNNLIB_MAX_BYTES, &p, &n));
    vt_err e = sha256 ? vt_sha256(p, n, sha256) : VT_OK;
    if (!e) e = vt_vnnlib_parse((const char *)p, n, out);
    if (e) e = vt_error_prefix(e, "%s", path);
    free(p);
    return e;
}
