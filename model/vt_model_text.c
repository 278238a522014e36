/* vt_model_text.c - text for people (vt_model.h): the program's listing (vt_program_describe:
 * `trainer recipe --program`). */
#include <stdio.h>
#include <stdlib.h>

#include "vt_model.h"

vt_err vt_program_describe(const vt_program *p, char **out)
{
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    VT_RETURN_ERROR_IF(!b, VT_ERR_NOMEM, "out of memory");
#define PUT(...)                                                                   \
    do {                                                                           \
        int n_ = snprintf(b + len, cap - len, __VA_ARGS__);                        \
        while (n_ >= 0 && (size_t)n_ >= cap - len) {                               \
            char *nb = realloc(b, cap *= 2);                                       \
            if (!nb) {                                                             \
                free(b);                                                           \
                VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");                    \
            }                                                                      \
            b = nb;                                                                \
            n_ = snprintf(b + len, cap - len, __VA_ARGS__);                        \
        }                                                                          \
        len += n_ > 0 ? (size_t)n_ : 0;                                            \
    } while (0)
    PUT("tensors (%u; ids 0..%u are the state)\n", p->n_tensors, p->n_state ? p->n_state - 1 : 0);
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        const vt_tensor *t = &p->t[i];
        PUT("  %4u  %-28s %-6s %-3s [", i, t->name, vt_tclass_name((vt_tclass)t->cls), vt_dtype_name((vt_dtype)t->dtype));
        for (uint32_t d = 0; d < t->rank; d++) PUT("%s%u", d ? ", " : "", t->shape[d]);
        PUT("]\n");
    }
    PUT("operations (%u)\n", p->n_ops);
    for (uint32_t j = 1; j <= p->n_ops + p->n_eval; j++) {
        if (j == p->n_ops + 1) PUT("evaluation pass (%u operations, not part of the step)\n", p->n_eval);
        const vt_opdesc *o = &p->op[j];
        const vt_opkind *k = vt_opkind_get(o->kind);
        PUT("  %4u  %-30s %-22s %s in", j, o->name, k ? k->name : "?", k && k->rounded ? "rounded" : "exact  ");
        for (uint32_t i = 0; i < o->n_in; i++) PUT(" %u", o->in[i]);
        PUT(" -> out");
        for (uint32_t i = 0; i < o->n_out; i++) PUT(" %u", o->out[i]);
        if (o->n_iarg) {
            PUT("  iarg");
            for (uint32_t i = 0; i < o->n_iarg; i++) PUT(" %lld", (long long)o->iarg[i]);
        }
        if (o->n_farg) {
            PUT("  farg");
            for (uint32_t i = 0; i < o->n_farg; i++) PUT(" %.17g", o->farg[i]);
        }
        PUT("\n");
    }
#undef PUT
    *out = b;
    return VT_OK;
}
