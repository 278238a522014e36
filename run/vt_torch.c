/* vt_torch.c - the state in PyTorch's layout (vt_torch.h). */
#include "vt_torch.h"

#include <stdio.h>
#include <string.h>

/* the PyTorch name of program tensor `name`: "hL." -> "h.L."; every other name kept */
static void torch_name(const char *name, char *out, size_t cap)
{
    unsigned l = 0;
    int k = 0;
    if (name[0] == 'h' && name[1] >= '0' && name[1] <= '9' && sscanf(name, "h%u.%n", &l, &k) == 1 && k > 0)
        snprintf(out, cap, "h.%u.%s", l, name + k);
    else
        snprintf(out, cap, "%s", name);
}

/* how parameter d moves: rank 4 (a convolution) permuted, rank 2 (a linear layer) transposed, except
 * the GPT's embeddings (nn.Embedding keeps [num, dim]); a client's model (--model) keeps every
 * parameter as its module holds it (docs/models.md "Layouts"): copied */
static int torch_how(const vt_recipe *rcp, const vt_tensor *d)
{
    if (rcp->has_model) return VT_TORCH_COPY;
    if (d->rank == 4) return VT_TORCH_PERMUTE;
    if (d->rank != 2) return VT_TORCH_COPY;
    if (rcp->arch == VT_ARCH_GPT && (strcmp(d->name, "wte.weight") == 0 || strcmp(d->name, "wpe.weight") == 0))
        return VT_TORCH_COPY;
    return VT_TORCH_TRANSPOSE;
}

/* the parameter an optimiser tensor belongs to ("<param>.<what>"), or UINT32_MAX */
static uint32_t opt_param(const vt_program *p, const char *name, const char **what)
{
    uint32_t best = UINT32_MAX;
    size_t bl = 0;
    for (uint32_t j = 0; j < p->n_state; j++) {
        size_t l = strlen(p->t[j].name);
        if (p->t[j].cls == VT_TC_PARAM && l > bl && strncmp(name, p->t[j].name, l) == 0 && name[l] == '.')
            best = j, bl = l;
    }
    if (best != UINT32_MAX) *what = name + bl + 1;
    return best;
}

int vt_torch_of(const vt_recipe *rcp, const vt_program *p, uint32_t i, char *name, size_t cap, int *how)
{
    const vt_tensor *d = &p->t[i];
    *how = VT_TORCH_COPY;
    if (d->cls != VT_TC_OPT) {
        torch_name(d->name, name, cap);
        if (d->cls == VT_TC_PARAM) *how = torch_how(rcp, d);
        return 0;
    }
    const char *what = NULL;
    uint32_t j = opt_param(p, d->name, &what);
    if (j == UINT32_MAX) return -1;
    char tn[VT_TORCH_NAME_MAX];
    torch_name(p->t[j].name, tn, sizeof tn);
    *how = torch_how(rcp, &p->t[j]);
    snprintf(name, cap, "optimizer.%s.%s", tn, strcmp(what, "velocity") == 0 ? "momentum_buffer" : what);
    return 0;
}

void vt_torch_shape(int how, const vt_tensor *d, uint32_t *rank, uint64_t shape[VT_MAX_RANK])
{
    *rank = d->rank;
    for (uint32_t k = 0; k < d->rank; k++) shape[k] = d->shape[k];
    if (how == VT_TORCH_TRANSPOSE) shape[0] = d->shape[1], shape[1] = d->shape[0];
    if (how == VT_TORCH_PERMUTE) /* [ky, kx, ci, co] -> [co, ci, ky, kx] */
        shape[0] = d->shape[3], shape[1] = d->shape[2], shape[2] = d->shape[0], shape[3] = d->shape[1];
}

void vt_torch_move(int how, const vt_tensor *d, int to_torch, const float *from, float *to)
{
    if (how == VT_TORCH_TRANSPOSE) { /* [a, b] <-> [b, a] */
        const size_t a = d->shape[0], b = d->shape[1];
        for (size_t i = 0; i < a; i++)
            for (size_t j = 0; j < b; j++) {
                size_t pj = i * b + j, tj = j * a + i; /* the project's index, torch's */
                if (to_torch) to[tj] = from[pj];
                else to[pj] = from[tj];
            }
    } else if (how == VT_TORCH_PERMUTE) {
        const size_t kh = d->shape[0], kw = d->shape[1], ci = d->shape[2], co = d->shape[3];
        for (size_t ky = 0; ky < kh; ky++)
            for (size_t kx = 0; kx < kw; kx++)
                for (size_t c = 0; c < ci; c++)
                    for (size_t o = 0; o < co; o++) {
                        size_t pj = ((ky * kw + kx) * ci + c) * co + o, tj = ((o * ci + c) * kh + ky) * kw + kx;
                        if (to_torch) to[tj] = from[pj];
                        else to[pj] = from[tj];
                    }
    } else {
        memcpy(to, from, d->n * sizeof *to);
    }
}
