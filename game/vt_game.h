/* vt_game.h - the arbiter's game engine (docs/dispute.md): bisection over committed steps,
 * bisection over the operation chain of the disputed segment, then the recomputation of
 * ONE operation under the replay rule. The engine talks to the parties through an
 * abstract `ask`, so the same code runs live (over TLS) and offline (arbiter check, from a
 * transcript), and so derives the same verdict from the same answers. */
#ifndef VT_GAME_H
#define VT_GAME_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "../kernels/vt_kernels.h"
#include "../model/vt_model.h"
#include "../arch/vt_recipe.h"
#include "../protocol/vt_proto.h"

/* reason codes of a verdict */
enum {
    VT_REASON_NONE = 0,
    VT_REASON_NO_ANSWER = 1,       /* deadline passed, connection lost, malformed message, ERROR reply */
    VT_REASON_BAD_PROOF = 2,       /* an inclusion proof or a leaf does not verify against the root */
    VT_REASON_INCONSISTENT = 3,    /* an answer contradicts the party's earlier signed answers */
    VT_REASON_IMPLAUSIBLE = 4,     /* the trainer's log entry is implausible for the replay rule */
    VT_REASON_MISSING_ENTRY = 5,   /* the trainer omitted a log entry the rule requires */
    VT_REASON_WRONG_OUTPUT = 6,    /* the party's claimed output differs from the recomputation */
    VT_REASON_MANIFEST = 7,        /* the trainer's manifest does not match its commitment */
    VT_REASON_BAD_CHALLENGE = 8,   /* the challenge itself is invalid (bad commitment, no disagreement) */
    VT_REASON_LOG_MISMATCH = 9,    /* the trainer's log does not match its committed log hash */
    VT_REASON_BAD_INPUT = 10,      /* the trainer sent inputs that do not match the agreed hashes */
    VT_REASON_CANNOT_JUDGE = 11,   /* the arbiter could not judge (its own data or resources) */
    VT_REASON_EQUIVOCATION = 12,   /* the trainer signed two different roots for one run */
    VT_REASON_OVER_LIMIT = 13,     /* the game would exceed the arbiter's limits: refused, nobody loses */
    VT_REASON_STALE_RECORD = 14,   /* the trainer has since signed a newer record for its address, for
                                    * another run: the auditor's record is stale; nobody loses */
    VT_REASON_SHORT_RECORD = 15,   /* the trainer served a record with less than the lifetime floor left */
    VT_REASON_WITHDRAWN = 16,      /* the trainer serves another run at its address before its record for this
                                    * run expired: it withdrew during the challenge window */
    VT_REASON_EXPIRED_RECORD = 17, /* the record expired and the trainer serves no current record for the run;
                                    * nobody loses */
    VT_REASON_AUDITOR_GONE = 18,   /* the auditor's connection dropped and it did not come back within its
                                    * clock; nobody loses */
    VT_REASON_CLOCK_SKEW = 19,     /* a record is dated after the arbiter's clock (beyond VT_CLOCK_SKEW_S): one of
                                    * the two clocks is wrong, nobody can prove which; nobody loses */
    VT_REASON_PREEMPTED = 20,      /* the auditor had used a deadline of its clock while an auditor of the same run
                                    * waited for a slot: the slot went to the waiting one; nobody loses */
};

/* Record lifetimes and clocks (docs/dispute.md "Fresh service records"): a record the trainer
 * serves must have at least VT_RECORD_FLOOR_S seconds left (by the arbiter's clock, less the
 * allowance VT_CLOCK_SKEW_S for the two clocks' difference); `trainer serve` signs records of at
 * least 2 x VT_RECORD_FLOOR_S and re-signs when half is left. A record's signing time is its serial
 * in microseconds since 1970 (vt_service_signed_at). */
#define VT_RECORD_FLOOR_S 600
#define VT_CLOCK_SKEW_S 300
const char *vt_reason_name(int code);

/* What one question may cost (docs/dispute.md "Clocks" and "Access control and limits"), both
 * derived from the manifest: the largest answer body the arbiter reads (the answer's computed
 * size; 0: the protocol maximum, for small fixed-size answers), and the time the computation the
 * question requires is granted on top of the per-answer deadline (the steps the party must
 * recompute times the time one step takes at the arbiter's documented rate floor). */
typedef struct {
    uint32_t max_body;
    int64_t work_ms;
    int credit; /* 1: work_ms is also credited to the party's clock (once per computation) */
} vt_ask_bounds;

typedef struct {
    /* Sends (qtype, qbody) to party VT_ROLE_TRAINER or VT_ROLE_AUDITOR and receives its answer
     * of type atype (or ERROR) into *ans, signature verified, its body at most b->max_body. A
     * non-zero return means the party gave no valid answer (vt_errmsg says why). */
    vt_err (*ask)(void *ctx, int party, int qtype, const void *qbody, int atype, const vt_ask_bounds *b,
                  vt_msg *ans);
    void *ctx;
    /* Called with a one-line description of each round (may be NULL). */
    void (*note)(void *ctx, const char *line);
    /* Called once the challenge's commitment and the trainer's service record have verified,
     * before the first question to the trainer: the only address the trainer may be reached at
     * (may be NULL). */
    void (*endpoint)(void *ctx, const char *addr);
    /* The game's identity, named by its verdict (docs/dispute.md "Verdict"): the arbiter's key
     * and the time it took the challenge (seconds since 1970), against which the service
     * record's expiry is checked. The offline check passes the recorded ones. */
    const uint8_t *arbiter_pk;
    uint64_t time;
    /* After a failed ask of the auditor: VT_REASON_AUDITOR_GONE when its connection dropped and it did
     * not come back within its clock, VT_REASON_PREEMPTED when its slot went to a waiting auditor
     * (nobody is at fault either way, docs/dispute.md), 0 otherwise (may be NULL). */
    int (*gone)(void *ctx, int party);
} vt_game_io;

/* The GEMM arithmetics the limits weigh (gemm_arith values 0 .. VT_GAME_ARITH_MAX - 1). */
#define VT_GAME_ARITH_MAX 8

/* What the arbiter accepts to spend on one game (0 = no limit). */
typedef struct {
    uint64_t max_game_bytes; /* memory the game needs (model, dataset, messages), from the manifest */
    uint64_t max_op_flop;    /* floating-point operations of the largest operation it may recompute */
    double min_rate;         /* the rate floor (flop of the program's costs per second) at which a
                              * party's recomputation is granted time; 0: VT_GAME_MIN_RATE */
    uint64_t max_work_ms;    /* the most recomputation time a game may grant a party in all (the
                              * manifest's worst case, vt_game_work_ms); 0: no limit */
    /* The weight of one GEMM flop in each GEMM arithmetic, by the recipe's gemm_arith value
     * (ops/vt_ops.h vt_gemm_arith_names; docs/dispute.md "Clocks"): a tc-* mode's GEMM costs its
     * flop times this in the program's costs (vt_game_cost). 0 (and fp64, index 0): 1. Set by
     * vt_game_arith_setup, recorded in the transcript (VT_NOTE_ARITH). */
    double arith_factor[VT_GAME_ARITH_MAX];
} vt_game_limits;

/* The default rate floor: 200 Mflop of the program's costs per second of a verifiable step, about
 * 1/50 of what a 2-core x86 machine reaches on the README's CNN recipe (docs/dispute.md). */
#define VT_GAME_MIN_RATE 2e8
/* What one operation costs beyond its flop (the interpreter, hashing its output), as flop at the
 * rate floor: 2e5, 0.5 ms an operation at the default floor. */
#define VT_GAME_OP_FLOP 2e5

/* What a game of this recipe needs, computed from the recipe alone before anything is allocated
 * (saturating): the arbiter's peak memory in bytes (its state arenas, the largest operation's
 * tensors and scratch, the largest answers it reads, the agreed prefix hashes, and data_bytes
 * for the dataset: pass 0 before it is loaded), the largest operation's flop, and one step's
 * flop (the sum of the program's operation costs; the unit of the clocks' work allowance). */
typedef struct {
    uint64_t bytes;
    uint64_t op_flop;
    double step_flop;          /* the program's flop (its GEMMs' weighed by arith_factor) plus
                                * VT_GAME_OP_FLOP per operation */
    double gemm_flop;          /* of the program's flop, its GEMMs' (matmul, batched_matmul), unweighed */
    double arith_factor;       /* the weight of the recipe's gemm_arith applied to gemm_flop (1 for fp64) */
    uint64_t n_ops;            /* operations per step */
    uint64_t max_log_decoded;  /* the largest decoded LOG payload of one step an honest trainer sends */
    uint64_t max_log_entries;  /* the most entries one step's log can need (its rounded elements) */
    uint64_t max_inputs_body; /* the largest INPUTS answer an honest trainer sends, bytes */
    uint64_t log_body;        /* the largest LOG answer of one step, bytes */
} vt_game_needs;
void vt_game_cost(const vt_recipe *rcp, uint64_t data_bytes, const vt_game_limits *lim, vt_game_needs *out);

/* The GEMM arithmetics' weights (docs/dispute.md "Clocks", game/vt_arith.c). A mode's weight is what
 * one GEMM flop costs the portable emulator (kernels/vt_tc.h, implementation "scalar", the slowest a
 * trainer may run) relative to the FP64 GEMM path (vt_gemm in the blas order, then exact rounding),
 * measured in CPU time on one thread on a fixed calibration GEMM (VT_ARITH_CAL_M x N x K): the slowest
 * of VT_ARITH_CAL_REPS emulations over the fastest of VT_ARITH_CAL_REPS x VT_ARITH_CAL_FP64_REPS FP64
 * GEMMs (interleaved, after one untimed run of each), at least 1, rounded up to a thousandth. */
#define VT_ARITH_CAL_M 64
#define VT_ARITH_CAL_N 64
#define VT_ARITH_CAL_K 256
#define VT_ARITH_CAL_REPS 3
#define VT_ARITH_CAL_FP64_REPS 8 /* FP64 GEMMs per round (each round: these, then one emulation per mode) */
/* The documented weights without calibration (arbiter serve --no-calibrate), by gemm_arith value. */
extern const double vt_arith_default_factor[VT_GAME_ARITH_MAX];
/* How a weight was set (VT_NOTE_ARITH's n). */
enum { VT_ARITH_CALIBRATED = 1, VT_ARITH_OVERRIDE = 2, VT_ARITH_DEFAULT = 3 };
typedef struct {
    double factor[VT_GAME_ARITH_MAX]; /* >= 1, a whole number of thousandths; [0] = 1 (fp64) */
    int how[VT_GAME_ARITH_MAX];       /* VT_ARITH_*; 0 for index 0 and past the modes */
    double fp64_s;                    /* the calibration: the fastest FP64 GEMM path, seconds (0 if not run) */
    double tc_s[VT_GAME_ARITH_MAX];   /* the slowest emulation of each calibrated mode, seconds */
    int n_modes;                      /* the gemm_arith values, 1 + the tc-* modes */
} vt_game_arith;
/* Parses one override "MODE=X" (arbiter serve --tc-factor): MODE a tc-* name of vt_gemm_arith_names,
 * X a number from 1 to 1e6; sets factor[mode] = X rounded up to a thousandth. VT_ERR_ARG with a
 * message otherwise (fp64, an unknown mode, X below 1); factor is then unchanged. */
vt_err vt_game_arith_parse(const char *spec, double factor[VT_GAME_ARITH_MAX]) VT_WARN_UNUSED;
/* The weights of every tc-* mode: override[mode] where it is > 0 (from vt_game_arith_parse; NULL:
 * none), else vt_arith_default_factor when no_calibrate, else measured now (about 0.2 s of
 * CPU; the calibration runs only for the modes not overridden). VT_ERR_ARG for an override below 1. */
vt_err vt_game_arith_setup(const double *override, int no_calibrate, vt_game_arith *a) VT_WARN_UNUSED;
/* The transcript note (VT_NOTE_ARITH) recording mode v's weight: code v, n how, v[0] the weight in
 * thousandths, v[1] and v[2] the calibration's FP64 and emulation times in ns, v[3] the calibration
 * GEMM's flop; text a readable line. */
void vt_game_arith_note(const vt_game_arith *a, int v, vt_msg_note *nt);
/* Reads such a note back into lim->arith_factor (arbiter check). VT_ERR_FORMAT when it is not a
 * valid ARITH note (a mode out of range, a weight below 1). */
vt_err vt_game_arith_from_note(const vt_msg_note *nt, vt_game_limits *lim) VT_WARN_UNUSED;

/* The checks of a challenge that need no party (cheap; done before anything is allocated or
 * dialled): the commitment's format and signature, the trainer's service record (format,
 * signature, the commitment's key and manifest, naming arbiter_pk), and that the challenge names
 * arbiter_pk. Returns 0 and *sv, or -1 with *v a verdict against the auditor (invalid challenge),
 * signed by the caller. The record's times are checked in the game (vt_game_play): an expired
 * record passes here. */
int vt_game_check_challenge(const vt_msg_challenge *ch, const uint8_t arbiter_pk[32], uint64_t now, vt_service *sv,
                            vt_msg_verdict *v);

/* Fills the fields of a verdict that bind it to its game: the arbiter's key, the challenge's
 * auditor key, commitment hash, claimed step and state and nonce, the trainer's nonce (NULL:
 * zeros) and the time. */
void vt_game_bind_verdict(vt_msg_verdict *v, const vt_msg_challenge *ch, const uint8_t arbiter_pk[32],
                          const uint8_t *trainer_nonce, uint64_t time);

/* 0 when verdict v is the one a game of challenge ch ends with (its commitment hash, auditor
 * key, claimed step and state, nonce and arbiter key); else -1 and why (cap bytes). */
int vt_game_verdict_for(const vt_msg_verdict *v, const vt_msg_challenge *ch, const uint8_t arbiter_pk[32], char *why,
                        size_t cap);

typedef struct {
    vt_msg_verdict v;
    uint64_t rounds;           /* question/answer exchanges */
    uint64_t step_rounds, op_rounds;
    double recompute_seconds;  /* the arbiter's own computation of the disputed operation */
    double hash_seconds;       /* hashing that output to compare it with the claims */
    uint64_t need_bytes;       /* the game's memory estimate (vt_game_cost with the dataset) */
    char op_name[48];
    char endpoint[VT_MSG_ADDR_MAX + 1]; /* the trainer's address from its signed service record */
} vt_game_result;

/* Plays the game for challenge ch. data_root: where the arbiter finds the dataset (NULL:
 * default). order: the arbiter's own evaluation order. Always produces a verdict. */
void vt_game_play(const vt_game_io *io, const vt_msg_challenge *ch, const char *data_root, vt_order order,
                  const vt_game_limits *lim, vt_game_result *res);

/* The last stage of the game, the judgement of one operation (docs/dispute.md): m holds the
 * agreed inputs of operation j of step s in its slots (and the model's recipe); log holds the
 * trainer's committed log record of that operation (NULL: none - an unrounded operation, or an
 * exact-rounding run, whose committed log is empty); ht and ha are the trainer's and the
 * auditor's claimed output hashes. The arbiter replays the operation in m's own order under the
 * replay rule, which judges every entry and every element against the exact value, and compares.
 * The verdict depends on the inputs, the log and the claims only: not on the arbiter's order. */
typedef struct {
    int loser;  /* VT_LOSER_* */
    int reason; /* VT_REASON_* */
    char why[256];
    double recompute_seconds, hash_seconds;
} vt_judgement;
void vt_game_judge_op(vt_model *m, const vt_dataset *ds, uint64_t s, uint32_t j, vt_steplog *log,
                      const uint8_t ht[32], const uint8_t ha[32], vt_judgement *out);

/* SHA-256 of a commitment file's bytes (the verdict names the run by it). */
void vt_commitment_bytes_hash(const uint8_t c[176], uint8_t out[32]);

#endif
