/* vt_dispute.h - what every party of the dispute game computes the same way
 * (docs/dispute.md): the per-operation output chain of a segment of steps, the positions of
 * a segment, and restoring a party's model at a given step.
 *
 * Segment (lo, hi]: lo and hi are steps with a committed state hash. Position p = 1..P,
 * P = (hi - lo) * n_ops, is operation ((p-1) % n_ops) + 1 of step lo + (p-1) / n_ops + 1;
 * position P + 1 is the state hash of step hi. h_p is the SHA-256 of position p's output
 * (vt_model_output_hash), h_(P+1) the state hash. The chain:
 *     C_0 = SHA-256("VTC0" || u64 lo || state_hash(lo)),   C_p = SHA-256(C_(p-1) || h_p).
 * Agreement on C_p means agreement on every output up to p. */
#ifndef VT_DISPUTE_H
#define VT_DISPUTE_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "../model/vt_model.h"
#include "../protocol/vt_proto.h"
#include "../run/vt_step.h"
#include "../store/vt_store.h"

typedef struct {
    uint64_t lo, hi;
    uint32_t n_ops;
    uint64_t P;          /* operation positions; P + 1 positions in all */
    uint8_t (*h)[32];    /* h[1..P+1] (h[0] unused) */
    uint8_t (*C)[32];    /* C[0..P+1] */
} vt_seg_chain;

void vt_chain_start(uint64_t lo, const uint8_t state_hash_lo[32], uint8_t c0[32]);
void vt_chain_next(const uint8_t c[32], const uint8_t h[32], uint8_t out[32]);
/* Position p (1..P) to (step, op); returns 0 for p = P + 1 (the final state). */
int vt_seg_position(uint64_t lo, uint32_t n_ops, uint64_t p, uint64_t *step, uint32_t *op);

/* One whole step as the party; *disputed (may be NULL) tells an auditor that the step held a
 * missing or implausible entry or an unusable log (its state from there on is marked). */
vt_err vt_step_once(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, int *disputed) VT_WARN_UNUSED;
/* h <- SHA-256("VT-DISPUTED" || h): how an auditor marks an output or state it disputes even
 * where its own values coincide with the trainer's. */
void vt_dispute_mark(uint8_t h[32]);

/* Computes the chain of segment (lo, hi] from m, which must hold the state of step lo,
 * leaving m at step hi. The start hash is the state hash of m at lo. */
vt_err vt_seg_chain_compute(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint64_t hi,
                            vt_seg_chain *out) VT_WARN_UNUSED;
void vt_seg_chain_free(vt_seg_chain *c);

/* Runs step m->step + 1 up to (not including) operation op, so that op's input slots hold
 * its inputs. fault (may be NULL) receives the rounding context's fault, with through_op:
 * the step is run through op itself (an auditor looking for its hint). */
vt_err vt_run_to_op(vt_model *m, vt_store *st, const vt_dataset *ds, vt_party party, uint32_t op, int through_op,
                    vt_fault *fault) VT_WARN_UNUSED;

/* Tensors ids[0..n) of m as INPUTS entries (each id once; words as vt_model_tensor_save writes
 * them), into t[0..cap); *nt receives the count. Free with vt_wire_tensors_free. */
vt_err vt_model_wire_tensors(vt_model *m, const uint32_t *ids, uint32_t n, vt_msg_tensor *t, uint32_t cap,
                             uint32_t *nt) VT_WARN_UNUSED;
void vt_wire_tensors_free(vt_msg_tensor *t, uint32_t nt);

/* For the operation at position p of a segment, the producer of its input tensor `tensor`: the
 * position of the operation whose output it reads (*pos > 0: the latest earlier position that
 * wrote it), or 0 when it comes from the state at lo (a state tensor: its id is its index among
 * the state's tensor hashes). */
vt_err vt_input_producer(const vt_model *m, uint64_t p, uint32_t tensor, uint64_t *pos) VT_WARN_UNUSED;

#endif
