/* vt_rlog.h - the rounding layer: bounds, the record/replay rounding rules and the
 * step log (in memory and on the wire).  See docs/rounding.md and docs/format.md.
 *
 * Every operation of a training step computes in FP64 from FP32 inputs and
 * produces, per output element, an a-priori error bound B valid for any order
 * of evaluation.  vt_round() turns those FP64 results into FP32:
 *   record (trainer):  RN32 of the exact value X; log every element whose window
 *                      [X-B, X+B] contains a rounding boundary (found among those whose
 *                      [x-2B, x+2B] around the trainer's own x does);
 *   replay (auditor):  judge each entry, and each element without one, against the
 *                      exact value (docs/rounding.md 5), take the logged result, round the rest.
 */
#ifndef VT_RLOG_H
#define VT_RLOG_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hd.h"

/* ------------------------------------------------------------------ bounds */

typedef enum {
    VT_BOUND_PROVABLE = 0,      /* worst case, any order, any IEEE machine (default) */
    VT_BOUND_PROBABILISTIC = 1, /* Higham-Mary probabilistic bound with parameter lambda */
} vt_bound_mode;

/* How an operation's FP64 results become FP32 (docs/rounding.md):
 *   LOG   - the trainer rounds its own value and logs the elements near a boundary; a replayer
 *           follows the log (the published method's shape);
 *   EXACT - every party produces RN32 of the exact value of the reduction: its own FP64 result
 *           where its own bound clears every boundary, the exact accumulator (vt_exact.h)
 *           otherwise; composite operations are correctly rounded reductions followed by fixed
 *           chains of IEEE operations. No log; nothing depends on any party's order. */
typedef enum {
    VT_ROUNDING_LOG = 0,
    VT_ROUNDING_EXACT = 1,
} vt_rounding;

typedef struct {
    vt_bound_mode mode;
    double lambda;        /* probabilistic mode only; VT_DEFAULT_LAMBDA when 0 */
    vt_rounding rounding; /* the recipe's `rounding` */
    /* 0 (manifest format 3 on, and the default): every reduction longer than 2 * VT_PANEL terms
     * is evaluated in panels of VT_PANEL consecutive terms, by every order, and its bound is the
     * panel bound (vt_bound_coef_red); 1: formats 1 and 2, the bound of the whole reduction and
     * no panels (how those runs were recorded). Provable bounds only. */
    int whole_reduction;
    /* Log rounding. 0 (manifest format 5 on, and the default): one state has one log - an element
     * carries an entry exactly when [X - B, X + B] around its exact value X holds a rounding
     * boundary (a direction entry when it holds one, a value entry when more), and the replay
     * rejects any other entry as unneeded (docs/rounding.md 5); 1: formats 1-4, whose trainer logged
     * by its own value (boundaries within 2B of it) and whose replay accepts an entry on any element
     * whose window is one value (moot). */
    int legacy_log;
} vt_bound_cfg;

/* The panel length of the project's reductions (terms k in [p*VT_PANEL, (p+1)*VT_PANEL) form
 * panel p; docs/rounding.md 2.1). */
#define VT_PANEL 128

#define VT_DEFAULT_LAMBDA 10.0
/* Largest reduction length the bound formulas are proved for. */
#define VT_MAX_REDUCTION ((uint64_t)1 << 30)

/* Coefficient c(n) such that a sum of n terms t_1..t_n, evaluated in FP64 in any
 * order (with or without FMA), differs from the exact sum by at most
 * c(n) * S for any upper bound S >= sum |t_i| that was itself computed in FP64 by
 * a sum of n non-negative terms (c(n) already absorbs the rounding of S, of the
 * final products and of c itself: see docs/rounding.md).  c(1) = 0.  Returns a
 * negative value when n > VT_MAX_REDUCTION. */
double vt_bound_coef(const vt_bound_cfg *cfg, uint64_t n);

/* The coefficient of a reduction of n terms evaluated in panels of at most kc consecutive terms,
 * each panel summed in any order, the P = ceil(n/kc) panel results then combined by any binary
 * tree of depth at most d = ceil(log2 P) (the panel tree of kernels/):
 * error <= [g(kc) + h(d)(1 + g(kc))] * sum|t| with g(j) = gamma_(j-1), h(d) = gamma_d,
 * inflated like vt_bound_coef (provable bounds only; kc >= 2). For n = 65536 and kc = 128 it
 * is about 480 times smaller than vt_bound_coef(n). Negative when n > VT_MAX_REDUCTION. */
double vt_bound_coef_panel(uint64_t n, uint64_t kc);

/* 1 when a reduction of K terms is evaluated in panels under cfg (provable bounds, format 3,
 * K > 2 * VT_PANEL): every order then sums each panel from +0 in its own way and adds the panel
 * results in its own way. */
int vt_bound_panelled(const vt_bound_cfg *cfg, uint64_t K);

/* THE coefficient of a reduction of K terms, nnz of them non-zero, under cfg: vt_bound_coef(nnz)
 * and, where the reduction is panelled, the smaller of that and vt_bound_coef_panel(K, VT_PANEL)
 * (both hold for a panelled evaluation: additions of a zero term are exact). Every party's own
 * bound and the canonical bound that log entries are judged by. Negative when K or nnz exceeds
 * VT_MAX_REDUCTION. */
double vt_bound_coef_red(const vt_bound_cfg *cfg, uint64_t nnz, uint64_t K);

/* Per-failure probability of the probabilistic bound for n terms (an upper bound);
 * 0 for the provable mode. */
double vt_bound_failure_prob(const vt_bound_cfg *cfg, uint64_t n);

/* Exponent of the lowest set bit of a non-zero finite FP32 value (v = odd * 2^result). */
static inline int vt_f32_lsb_exp(uint32_t bits)
{
    uint32_t e = (bits >> 23) & 0xffu, m = bits & 0x7fffffu;
    if (e == 0) return -149 + __builtin_ctz(m);
    return (int)e - 150 + __builtin_ctz(m | 0x800000u);
}

/* Exactness test of a reduction (docs/rounding.md, section 2.1): when every term is a multiple
 * of 2^emin and sum|t| < 2^(emin+53), every partial sum of every summation tree is a multiple of
 * 2^emin below 2^(emin+53), hence representable: no addition rounds, the bound is 0.
 * sabs is the computed sum of |t| (inflated here to cover its own rounding). */
static inline int vt_sum_is_exact(double sabs, int emin)
{
    if (emin > 900 || emin < -1074) return 0;
    double lim = 1.0;
    int k = emin + 53; /* 2^k by repeated scaling: exact, no libm */
    for (; k > 0; k--) lim *= 2.0;
    for (; k < 0; k++) lim *= 0.5;
    return sabs * (1.0 + 0x1p-20) < lim;
}

/* How an operation describes the bounds of its rows x cols outputs (row-major). */
typedef enum {
    VT_BOUNDS_ZERO = 0,  /* B = 0: exact or deterministic elementwise result */
    VT_BOUNDS_ARRAY = 1, /* B[i] per element */
    VT_BOUNDS_OUTER = 2, /* B[i][j] = coef * r[i] * c[j] (GEMM via Cauchy-Schwarz) */
} vt_bounds_kind;

typedef struct {
    vt_bounds_kind kind;
    const double *b;  /* ARRAY */
    const double *r;  /* OUTER: rows entries */
    const double *c;  /* OUTER: cols entries */
    double coef;      /* OUTER */
    /* OUTER, optional (ta != NULL): the GEMM operands, so that the rounding layer can use the
     * tight bound  B[i][j] = coef * sum_k |A(i,k) * B(k,j)|  (<= coef * r[i] * c[j]) for the
     * few elements the screening bound cannot clear. A(i,k) = ta[i*ta_si + k*ta_sk],
     * B(k,j) = tb[k*tb_sk + j*tb_sj]. When given, the tight bound is THE bound of the element
     * (docs/rounding.md, section 2.1); the outer product only screens. */
    const float *ta, *tb;
    size_t ta_si, ta_sk, tb_sk, tb_sj, K;
    /* Exact evaluator (exact rounding; optional: xa != NULL). Element e = (i, j), i = e / cols,
     * j = e % cols, is the reduction  sum_{k < xK} xa[i*xa_si + j*xa_sj + k*xa_sk] *
     * xb[i*xb_si + j*xb_sj + k*xb_sk]  of FP32 values (a GEMM element: op(A) row times op(B)
     * column; a column sum: xb a single 1.0f with zero strides). */
    const float *xa, *xb;
    size_t xa_si, xa_sj, xa_sk, xb_si, xb_sj, xb_sk, xK;
    /* batched operands (optional: x_rpb > 0): row i is row i % x_rpb of batch g = i / x_rpb, and
     * the operands' addresses gain g*xa_sg and g*xb_sg (i % x_rpb replaces i above) */
    size_t x_rpb, xa_sg, xb_sg;
} vt_bounds;

/* ---------------------------------------------------------------- step log */

/* One log entry: the element index within the operation's output, and either a
 * direction (the FP32 neighbour above or below the unique midpoint near x) or the
 * trainer's FP32 value (cancellation: B is not small against the ulp). */
typedef struct {
    uint64_t index;
    uint32_t value_bits; /* value entries: raw FP32 bits */
    uint8_t is_value;    /* 1 = value entry, 0 = direction entry */
    uint8_t up;          /* direction entries: 1 = upper neighbour, 0 = lower */
} vt_log_entry;

/* Entries of one operation, indices strictly increasing. */
typedef struct {
    uint32_t op_id;
    uint64_t n_elems;
    uint64_t n_entries;
    uint64_t cap;
    vt_log_entry *e;
} vt_oplog;

/* The log of one training step: one vt_oplog per rounded operation, in the
 * step's fixed operation order (op ids strictly increasing). */
typedef struct {
    uint64_t step;
    uint32_t n_ops;
    uint32_t cap_ops;
    vt_oplog *ops;
} vt_steplog;

void vt_steplog_init(vt_steplog *l, uint64_t step);
void vt_steplog_free(vt_steplog *l);
/* Empties the log (keeps allocations) and sets its step. */
void vt_steplog_reset(vt_steplog *l, uint64_t step);
/* Appends a new, empty operation record; returns it through *out. */
vt_err vt_steplog_add_op(vt_steplog *l, uint32_t op_id, uint64_t n_elems, vt_oplog **out) VT_WARN_UNUSED;
vt_err vt_oplog_push(vt_oplog *o, vt_log_entry e) VT_WARN_UNUSED;
uint64_t vt_steplog_total_entries(const vt_steplog *l);

/* ------------------------------------------------------------------- codec */

/* Limits a decoder enforces (hostile input). Zero fields take the defaults. */
typedef struct {
    uint64_t max_decoded_bytes; /* default 256 MiB */
    uint32_t max_ops;           /* default 65536 */
    uint64_t max_entries;       /* default 16 Mi per step */
    uint64_t max_elems;         /* default 2^40 per op */
} vt_log_limits;

/* Canonical uncompressed encoding (docs/format.md, "step log payload").  The log
 * hash is SHA-256 of exactly these bytes, so it does not depend on zstd. */
vt_err vt_steplog_serialize(const vt_steplog *l, uint8_t **out, size_t *out_len) VT_WARN_UNUSED;
/* Compressed container (magic "VTLZ"): header + zstd frame of the payload.
 * hash (may be NULL) receives the log hash. */
vt_err vt_steplog_encode(const vt_steplog *l, int zstd_level, uint8_t **out, size_t *out_len,
                         uint8_t hash[32]) VT_WARN_UNUSED;
/* Decode a container; every byte is treated as hostile. hash (may be NULL)
 * receives the log hash of the decoded payload. On failure *l is left empty. */
vt_err vt_steplog_decode(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l,
                         uint8_t hash[32]) VT_WARN_UNUSED;
/* Decode the uncompressed canonical payload (also used by decode). */
vt_err vt_steplog_parse(const uint8_t *buf, size_t len, const vt_log_limits *lim, vt_steplog *l) VT_WARN_UNUSED;
/* Stored form of a step's log (the run store, the LOG message): a log without any operation
 * record - every step of an exact-rounding run - is stored as zero bytes; any other log as its
 * container. hash receives the log hash either way (of the canonical payload, which still names
 * the step). *out is NULL when *out_len is 0. */
vt_err vt_steplog_encode_stored(const vt_steplog *l, int zstd_level, uint8_t **out, size_t *out_len,
                                uint8_t hash[32]) VT_WARN_UNUSED;
/* Decode a stored log of step `step`: zero bytes are the empty log of that step; anything else a
 * container (vt_steplog_decode; the caller checks that it holds that step's log: l->step). */
vt_err vt_steplog_decode_stored(const uint8_t *buf, size_t len, uint64_t step, const vt_log_limits *lim,
                                vt_steplog *l, uint8_t hash[32]) VT_WARN_UNUSED;
/* Hash of a log without keeping the encoding. */
vt_err vt_steplog_hash(const vt_steplog *l, uint8_t hash[32]) VT_WARN_UNUSED;

/* --------------------------------------------------------- rounding context */

typedef enum {
    VT_RMODE_RECORD = 0, /* trainer: round to nearest and log unstable elements */
    VT_RMODE_REPLAY = 1, /* auditor/arbiter: check and follow the trainer's log */
} vt_rmode;

/* What went wrong, for reports and dispute evidence. */
typedef struct {
    vt_err code;       /* VT_OK when nothing failed */
    uint64_t step;
    uint32_t op_id;
    uint64_t index;    /* element index within the operation (when known) */
    int has_entry;     /* 1 when a log entry was involved */
    vt_log_entry entry;
    double own_x;      /* this party's FP64 value */
    double own_bound;  /* this party's bound */
    char why[160];
} vt_fault;

typedef struct {
    uint64_t rounded;     /* elements rounded */
    uint64_t exact;       /* elements evaluated exactly (exact rounding; replay: judged) */
    uint64_t kulisch;     /* of those, the ones the compensated sum could not decide (accumulator) */
    uint64_t logged_dir;  /* record: direction entries written; replay: applied */
    uint64_t logged_val;  /* record: value entries written; replay: applied */
    uint64_t checked;     /* replay: plausibility checks passed */
} vt_rstats;

typedef struct {
    vt_rmode mode;
    vt_bound_cfg bound;
    uint64_t step;
    vt_steplog *log;   /* record: appended to; replay: read (not owned) */
    uint32_t cursor;   /* replay: next op record to consume */
    vt_rstats stats;
    vt_fault fault;
    /* replay only: on an implausible or missing entry, note the first such fault in `fault` and
     * carry on with this party's own rounding instead of failing (an auditor computing its
     * own version of a disputed run for the dispute game). */
    int lenient;
} vt_rctx;

void vt_rctx_init(vt_rctx *c, vt_rmode mode, vt_bound_cfg bound);
/* Start a step: record mode resets *log to the step; replay mode reads *log
 * (which must be that step's decoded log). */
vt_err vt_rctx_begin_step(vt_rctx *c, uint64_t step, vt_steplog *log) VT_WARN_UNUSED;
/* End a step: replay mode checks every op record was consumed. */
vt_err vt_rctx_end_step(vt_rctx *c) VT_WARN_UNUSED;

/* Round rows*cols FP64 results x (row-major) to FP32 out under the context's
 * rule. Operation ids within a step must be strictly increasing. On failure
 * the context's fault names step, operation, index and why.
 * Exact rounding (c->bound.rounding == VT_ROUNDING_EXACT), record and replay alike: an element
 * whose [x - B, x + B] holds no FP32 rounding boundary is RN32(x), which then equals RN32 of the
 * exact value; any other element is computed by the exact evaluator of *b (VT_ERR_UNSUPPORTED
 * when the operation has none). Nothing is logged or read from the log. */
vt_err vt_round(vt_rctx *c, uint32_t op_id, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                float *out) VT_WARN_UNUSED;

/* The tight bound of one reduction sum_k a[k*inca] * b[k*incb] (docs/rounding.md 2.1):
 * c(m) * sum |a b| over the m non-zero products, 0 when m <= 1 or the sum is exact in every
 * order. The same function gives a GEMM element's bound and (b = 1) a sum's. */
double vt_bound_of_terms(const vt_bound_cfg *cfg, size_t K, const float *a, size_t inca, const float *b,
                         size_t incb);

/* --- the per-element rules, exposed for tests and the arbiter --- */

/* Ordered key: monotone map of FP32 bit patterns (-inf < ... < -0 < +0 < ... < +inf)
 * to consecutive unsigned integers; -0 and +0 are adjacent. */
VT_HDI uint32_t vt_f32_key(uint32_t bits)
{
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

/* Interval factors of the rules (docs/rounding.md section 3). */
/* Judged against the exact value, the trainer's rule needs only 2W (docs/rounding.md 5, Lemmas
 * A and B: [X - B, X + B] lies inside [x - 2B, x + 2B]); until the exact judgement it was 3 and 9. */
#define VT_UNSTABLE_K 2.0   /* record: unstable (logged) when ends_2 differ */
#define VT_DIRECTION_K 2.0  /* record: direction entry when ends_2 are adjacent */
#define VT_SCREEN_K 2.0     /* replay: an unlogged element whose own ends_2 agree needs no judgement */

/* FP32 results of the two ends of [x - k*Bw, x + k*Bw] with the working bound
 * Bw = B + |x|*2^-50 (0 when B = 0), each end first moved one FP64 step outward
 * so the interval can only widen. */
void vt_round_ends(double x, double B, double k, uint32_t *lo_bits, uint32_t *hi_bits);

/* Record rule for one element. Returns VT_OK, or VT_ERR_DIVERGED when x is NaN,
 * B is not a finite non-negative number, or x rounds beyond FP32 range.
 * *logged is set when an entry was produced in *entry (index left 0). */
vt_err vt_round_record1(double x, double B, float *out, int *logged, vt_log_entry *entry);
/* The record rule of manifest format 5 for one element with exact value X: *out = RN32(X), and an
 * entry exactly when lo = RN32(X - B) and hi = RN32(X + B) differ - a direction entry when they are
 * adjacent, a value entry otherwise. It is a function of X and B alone, so every honest trainer
 * writes the same log. (vt_round applies it only to the elements whose own [x - 2B, x + 2B] holds a
 * boundary, vt_round_record1's logged ones: every other element has lo = hi.) VT_ERR_DIVERGED as
 * vt_round_record1, and for an exact result beyond FP32 range. */
struct vt_xacc_s;
vt_err vt_round_record1_exact(const struct vt_xacc_s *X, double B, float *out, int *logged, vt_log_entry *entry);
/* Replay rule for one element, judged against its exact value X (any order, any party: the
 * same verdict) with B its bound: with lo = RN32(X - B) and hi = RN32(X + B),
 *   - a value entry is plausible when lo <= value <= hi (then *out = value);
 *   - a direction entry when hi is lo or lo's successor (*out = hi for up, lo for down; lo when
 *     lo = hi);
 *   - no entry (entry = NULL) when lo = hi (*out = lo); otherwise "missing log entry";
 *   - unless legacy (manifest formats 1-4): an entry when lo = hi (B = 0 included) is an unneeded
 *     entry, and a value entry when lo and hi are adjacent is one where the rule writes a direction.
 * VT_ERR_IMPLAUSIBLE otherwise; VT_ERR_DIVERGED for NaN or a result beyond FP32 range. */
vt_err vt_round_judge1(const struct vt_xacc_s *X, double B, int legacy, const vt_log_entry *entry, float *out);

#endif
