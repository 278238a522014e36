/* vt_arch.h - the architecture builders (recipe key `arch`) and the program's construction from a
 * recipe (vt_program_build). A builder only describes the step: it adds tensors and operations to a
 * vt_program (ops/vt_program.h); the interpreter (model/) runs what it built. */
#ifndef VT_ARCH_H
#define VT_ARCH_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../ops/vt_program.h"
#include "vt_recipe.h"

/* The builders of the architectures not yet built from a graph (recipe key `arch`; the MLP is a graph:
 * vt_graph.h), and the dispatch on rcp->arch. */
vt_err vt_arch_resnet_build(const vt_recipe *rcp, vt_program *p) VT_WARN_UNUSED;
vt_err vt_arch_gpt_build(const vt_recipe *rcp, vt_program *p) VT_WARN_UNUSED;
/* the step's inputs (input, labels, input.augmented when the recipe augments - else *xa = *x -,
 * step, lr) and the operations that produce them (load, augment, schedule) */
void vt_arch_inputs(vt_program *p, const vt_recipe *rcp, uint32_t *x, uint32_t *y, uint32_t *xa, uint32_t *tstep,
                    uint32_t *lr);
void vt_arch_input_ops(vt_program *p, const vt_recipe *rcp, uint32_t x, uint32_t y, uint32_t xa, uint32_t tstep,
                       uint32_t lr);
/* the learning-rate schedule's operation "learning-rate schedule" (step, lr) */
void vt_arch_schedule_op(vt_program *p, const vt_recipe *rcp, uint32_t tstep, uint32_t lr);
/* Shared by the builders (and vt_graph_build): the optimiser's state tensors of the n parameters
 * (m1: velocity or exp_avg of each, then m2: exp_avg_sq of each for Adam and AdamW; named after the
 * parameter), and its update operations: under AdamW with clip_norm > 0 first the global gradient
 * norm's clipping factor (each gradient's sum of squares, their sum, the factor), then parameter by
 * parameter SGD's velocity and update, or Adam's moments (scaled by the factor when clipping) and
 * Adam's or AdamW's update; AdamW decays parameter t when decay is NULL or decay[t] is 1. */
void vt_arch_opt_tensors(vt_program *p, const vt_recipe *rcp, uint32_t n, const uint32_t *params, uint32_t *m1,
                         uint32_t *m2);
void vt_arch_update_ops(vt_program *p, const vt_recipe *rcp, uint32_t n, const uint32_t *params,
                        const uint32_t *grads, const uint32_t *m1, const uint32_t *m2, const uint8_t *decay,
                        uint32_t tstep, uint32_t lr);
/* Validates rcp and builds its program into p (initialised here; freed again on failure). */
vt_err vt_program_build(const vt_recipe *rcp, vt_program *p) VT_WARN_UNUSED;

#endif
