/* test_recipe - the manifest's rounding mode: format 2 records `rounding` (exact by default);
 * a format-1 manifest (before the key existed) is a log-rounded run, whatever today's default,
 * and may not carry the key; exact rounding with probabilistic bounds is refused. */
#include <stdlib.h>
#include <string.h>

#include "arch/vt_recipe.h"
#include "vt_test.h"

/* Replaces the first occurrence of `from` in a heap string by `to`. */
static char *replace(char *s, const char *from, const char *to)
{
    char *p = strstr(s, from);
    if (!p) return s;
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *o = malloc(n);
    if (!o) return s;
    size_t head = (size_t)(p - s);
    memcpy(o, s, head);
    strcpy(o + head, to);
    strcat(o, p + strlen(from));
    free(s);
    return o;
}

int main(void)
{
    uint8_t dh[32] = {1, 2, 3}, dh2[32];
    vt_recipe r, q;
    vt_recipe_default(&r);
    CHECK(r.bound.rounding == VT_ROUNDING_EXACT, "the default is exact rounding");
    char *m = NULL;
    CHECK_OK(vt_manifest_build(&r, dh, "cpu", &m));
    CHECK(m && strstr(m, "\"rounding\":\"exact\"") && strstr(m, VT_MANIFEST_FORMAT), "manifest: %s", m ? m : "");
    CHECK_OK(vt_manifest_parse(m, strlen(m), &q, dh2));
    CHECK(q.bound.rounding == VT_ROUNDING_EXACT && memcmp(dh, dh2, 32) == 0 && !q.bound.whole_reduction,
          "format 3 round trip (panelled reductions)");
    /* format 2: the bounds of the whole reduction */
    char *v2 = replace(strdup(m), VT_MANIFEST_FORMAT, "vt-manifest-2");
    CHECK_OK(vt_manifest_parse(v2, strlen(v2), &q, dh2));
    CHECK(q.bound.rounding == VT_ROUNDING_EXACT && q.bound.whole_reduction, "a format-2 run is not panelled");
    free(v2);
    /* a log-rounded run */
    CHECK_OK(vt_recipe_set(&r, "rounding=log"));
    free(m);
    CHECK_OK(vt_manifest_build(&r, dh, "cpu", &m));
    CHECK_OK(vt_manifest_parse(m, strlen(m), &q, dh2));
    CHECK(q.bound.rounding == VT_ROUNDING_LOG, "rounding=log round trip");
    /* format 1: no key, log rounding */
    char *v1 = replace(replace(strdup(m), "\"rounding\":\"log\",", ""), VT_MANIFEST_FORMAT, "vt-manifest-1");
    CHECK(strstr(v1, "rounding") == NULL && strstr(v1, "vt-manifest-1"), "made a format-1 manifest: %s", v1);
    CHECK_OK(vt_manifest_parse(v1, strlen(v1), &q, dh2));
    CHECK(q.bound.rounding == VT_ROUNDING_LOG && q.bound.whole_reduction, "a format-1 run is log-rounded, not panelled");
    /* format 1 with the key: refused */
    char *bad = replace(strdup(m), VT_MANIFEST_FORMAT, "vt-manifest-1");
    CHECK(vt_manifest_parse(bad, strlen(bad), &q, dh2) == VT_ERR_FORMAT, "format 1 may not carry rounding");
    char *unk = replace(strdup(m), VT_MANIFEST_FORMAT, "vt-manifest-9");
    CHECK(vt_manifest_parse(unk, strlen(unk), &q, dh2) == VT_ERR_FORMAT, "unknown format refused");
    /* exact + probabilistic refused */
    vt_recipe_default(&r);
    CHECK_OK(vt_recipe_set(&r, "bound_mode=probabilistic"));
    CHECK(vt_recipe_validate(&r) == VT_ERR_ARG, "exact rounding with probabilistic bounds refused");
    CHECK_OK(vt_recipe_set(&r, "rounding=log"));
    CHECK_OK(vt_recipe_validate(&r));
    /* AdamW: the GPT's and a client model's; clip_norm clips under AdamW only */
    vt_recipe_default(&r);
    CHECK_OK(vt_recipe_set(&r, "optimizer=adamw"));
    CHECK(vt_recipe_validate(&r) == VT_ERR_ARG && strstr(vt_errmsg(), "adamw"), "the built-in MLP with AdamW refused");
    CHECK_OK(vt_recipe_set(&r, "model=net.onnx"));
    CHECK_OK(vt_recipe_validate(&r));
    CHECK_OK(vt_recipe_set(&r, "clip_norm=0.5"));
    CHECK_OK(vt_recipe_validate(&r));
    CHECK_OK(vt_recipe_set(&r, "optimizer=sgd"));
    CHECK(vt_recipe_validate(&r) == VT_ERR_ARG && strstr(vt_errmsg(), "clip_norm"), "clip_norm with SGD refused");
    CHECK_OK(vt_recipe_set(&r, "clip_norm=1"));
    CHECK_OK(vt_recipe_validate(&r));
    /* step program 3: the GPT's, derived from its graph */
    vt_recipe_default(&r);
    CHECK_OK(vt_recipe_set(&r, "program_version=3"));
    CHECK(vt_recipe_validate(&r) == VT_ERR_ARG && strstr(vt_errmsg(), "program_version"), "program 3 for the MLP refused");
    CHECK_OK(vt_recipe_set(&r, "arch=gpt"));
    CHECK_OK(vt_recipe_set(&r, "optimizer=adamw"));
    CHECK_OK(vt_recipe_validate(&r));
    CHECK_OK(vt_recipe_set(&r, "arch=resnet"));
    CHECK_OK(vt_recipe_set(&r, "optimizer=sgd"));
    CHECK_OK(vt_recipe_set(&r, "layers=[3072,10]"));
    CHECK_OK(vt_recipe_set(&r, "image_channels=3"));
    CHECK_OK(vt_recipe_set(&r, "image_height=32"));
    CHECK_OK(vt_recipe_set(&r, "image_width=32"));
    CHECK_OK(vt_recipe_validate(&r));
    CHECK_OK(vt_recipe_set(&r, "gemm_arith=tc-bf16-sm90"));
    CHECK_OK(vt_recipe_validate(&r)); /* program 3's convolutions in the mode: program 1's GEMMs (issue 42) */
    CHECK_OK(vt_recipe_set(&r, "program_version=2"));
    CHECK_OK(vt_recipe_validate(&r));
    CHECK_OK(vt_recipe_set(&r, "program_version=4"));
    CHECK(vt_recipe_validate(&r) == VT_ERR_ARG, "program 4 refused");
    /* a new run's program when the recipe names none: 3 for the GPT and the CNN (gemm_arith too), 1 for
     * the MLP; a named one kept; a resume or an audit adopts the stored run's only when none is named */
    {
        vt_recipe run;
        vt_recipe_default(&r);
        vt_recipe_new_program(&r);
        CHECK(r.program_version == 1 && !r.program_set, "the MLP's new run: program 1");
        CHECK_OK(vt_recipe_set(&r, "arch=gpt"));
        vt_recipe_new_program(&r);
        CHECK(r.program_version == 3, "the GPT's new run: program 3");
        CHECK_OK(vt_recipe_set(&r, "gemm_arith=tc-bf16-sm90"));
        vt_recipe_new_program(&r);
        CHECK(r.program_version == 3, "under gemm_arith: program 3 as well");
        vt_recipe_default(&run);
        run.program_version = 2;
        vt_recipe_adopt_program(&r, &run);
        CHECK(r.program_version == 2, "no program named: the stored run's adopted");
        CHECK_OK(vt_recipe_set(&r, "program_version=1"));
        vt_recipe_new_program(&r);
        vt_recipe_adopt_program(&r, &run);
        CHECK(r.program_set && r.program_version == 1, "a named program kept");
    }
    free(m);
    free(v1);
    free(bad);
    free(unk);
    return vt_test_finish("test_recipe");
}
