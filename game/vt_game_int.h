/* vt_game_int.h - private to game/: the state of one game of the engine (vt_game.c) and the steps it
 * shares with the derivation of the disputed operation's inputs and state (vt_game_state.c) and with
 * the resource limits (vt_game_cost.c). Read docs/dispute.md first. */
#ifndef VT_GAME_INT_H
#define VT_GAME_INT_H

#include <stdint.h>

#include "vt_game.h"

typedef struct {
    const vt_game_io *io;
    const vt_game_limits *lim;
    vt_game_result *res;
    int done;
    const vt_msg_challenge *ch;  /* the verdict names it (vt_game_bind_verdict) */
    uint8_t trainer_nonce[32];   /* from the trainer's SERVICE answer */
    int have_tnonce;
    uint64_t record_serial;      /* of the auditor's service record */
    uint64_t record_expiry;      /* of the auditor's service record */
    int record_expired;          /* it had expired when the arbiter took the challenge */
    int asking_service;          /* the first question (Q_SERVICE) is under way */
    uint8_t cm_hash[32], root[32], trainer_pk[32], manifest_hash[32];
    uint64_t step_count;
    vt_recipe rcp;
    vt_dataset ds;
    vt_model m;
    int have_model;
    vt_game_needs needs; /* from the manifest (vti_check_limits) */
    int have_needs;
    /* computations already credited to each party's clock (kind, a, b): one credit each */
    struct {
        int kind;
        uint64_t a, b;
    } credited[4][32];
    int n_credited[4];
    /* leaves already obtained (step -> leaf), a small cache */
    vt_msg_leaf *leaves;
    uint64_t *leaf_steps;
    size_t n_leaves, cap_leaves;
} vti_game;

/* A party's claim at one position of the segment's chain: the chain hash and the output hash there. */
typedef struct {
    uint8_t C[32], h[32];
} vti_claim;

/* Decides the game (once; later calls do nothing), the reason text from fmt. */
void vti_decide(vti_game *g, int loser, int reason, uint64_t step, uint32_t op, const char *fmt, ...);

/* decide, then leave the (void) function */
#define FAIL(...)              \
    do {                       \
        vti_decide(__VA_ARGS__);   \
        return;                \
    } while (0)

/* A line for the operator's log (io->note), if any. */
void vti_note(vti_game *g, const char *fmt, ...);

/* The time granted for recomputing `steps` steps at the rate floor (0 before the manifest is known). */
int64_t vti_work_ms(const vti_game *g, double steps);

/* What the step's flop says of the GEMMs' arithmetic, for messages ("" for fp64). */
const char *vti_arith_note(const vti_game *g, char *buf, size_t cap);

/* Steps a party recomputes to re-create the state of step s: from its checkpoint at or before s. */
uint64_t vti_restore_steps(const vti_game *g, uint64_t s);

/* Bounds of a question whose answer needs `steps` recomputed steps, the computation named by
 * (kind, a, b): the deadline is extended by their time at every ask, the party's clock credited
 * with it once per computation (a cached answer costs nothing the second time). */
vt_ask_bounds vti_bounds(vti_game *g, int party, uint64_t max_body, double steps, int kind, uint64_t a, uint64_t b);

/* One question to one party. Returns 0 with *ans, or -1 after deciding against the party. */
int vti_ask(vti_game *g, int party, int qtype, const void *q, int atype, const vt_ask_bounds *b, vt_msg *ans,
            uint64_t step, uint32_t op);

/* The trainer's leaf of step s, checked against the signed root. NULL after deciding. */
const vt_msg_leaf *vti_leaf(vti_game *g, uint64_t s);

/* The trainer's list of hashes (PREFIX or TENSORS), checked for its length. */
int vti_hash_list(vti_game *g, int qtype, const void *q, uint64_t want_n, vt_msg *a, uint64_t step, uint32_t op);

/* vt_game_cost.c: the INPUTS body an honest trainer sends for operation j of program p. */
double vti_inputs_body(const vt_program *p, uint32_t j);

/* vt_game_cost.c: the game's needs from the manifest (and, pass 1, with the dataset's data_bytes)
 * against the arbiter's limits; -1 after deciding the game over the limits. */
int vti_check_limits(vti_game *g, int pass, uint64_t data_bytes);

/* vt_game_state.c: the judgement of the disputed operation at position p of the segment after lo:
 * its inputs loaded and authenticated, its log record, the replay, the verdict. */
void vti_recompute(vti_game *g, uint64_t lo, uint64_t p, const vti_claim *ct, const vti_claim *ca,
                   const uint8_t (*prefix)[32], const uint8_t sh_lo[32]);

/* vt_game_state.c: every operation of the segment lo..hi agrees (prefix: their agreed output
 * hashes): the state of step hi derived from them, the trainer's tensor hashes where needed, and
 * compared with the claims ct and ca at its end. Always decides. */
void vti_judge_state(vti_game *g, uint64_t lo, uint64_t hi, const uint8_t (*prefix)[32], const vti_claim *ct,
                     const vti_claim *ca, const uint8_t sh_lo[32]);

#endif
