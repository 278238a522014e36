/* vt_torch.h - the state in PyTorch's layout (docs/format.md "Export (safetensors, --layout torch)"),
 * both ways: `trainer export --layout torch` writes it and `trainer train --init FILE --init-layout
 * torch` reads it back. Values move, never change: a linear weight [in, out] is nn.Linear's
 * [out, in], a convolution weight [k, k, C_in, C_out] nn.Conv2d's [C_out, C_in, k, k] (a client's
 * model, recipe has_model, is already in its module's layout: copied); embeddings,
 * vectors and running statistics keep their shape; the GPT's block prefix "hL." is "h.L." (an
 * nn.ModuleList); an optimiser tensor "<param>.<what>" is "optimizer.<torch name>.<kind>"
 * (momentum_buffer for SGD's velocity, exp_avg and exp_avg_sq for Adam's). */
#ifndef VT_TORCH_H
#define VT_TORCH_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/vt_recipe.h"
#include "../ops/vt_program.h"

enum { VT_TORCH_COPY = 0, VT_TORCH_TRANSPOSE = 1, VT_TORCH_PERMUTE = 2 };
#define VT_TORCH_NAME_MAX 352

/* State tensor i of p in the torch layout: its name and how its values move (VT_TORCH_*). 0, or -1
 * for an optimiser tensor that belongs to no parameter. */
int vt_torch_of(const vt_recipe *rcp, const vt_program *p, uint32_t i, char *name, size_t cap, int *how);
/* The torch shape of tensor d moved by `how`. */
void vt_torch_shape(int how, const vt_tensor *d, uint32_t *rank, uint64_t shape[VT_MAX_RANK]);
/* d's values x (the project's layout) into y (torch's), or back (to_torch = 0: x from y). */
void vt_torch_move(int how, const vt_tensor *d, int to_torch, const float *from, float *to);

#endif
