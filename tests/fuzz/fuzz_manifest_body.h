/* fuzz_manifest_body.h - the check of the manifest reader (arch/vt_recipe.h vt_manifest_parse: the
 * JSON a run directory holds, read by `auditor verify`, `trainer export`, `--resume`, certify),
 * shared by the libFuzzer target fuzz_manifest (tests/fuzz/fuzz_target.c) and the corpus replayer
 * (tests/tools/replay_corpus.c: ctest manifest_corpus over tests/corpus/manifest).
 *
 * Any input may be refused, but only as VT_ERR_FORMAT, VT_ERR_LIMIT, VT_ERR_ARG or VT_ERR_NOMEM.
 * What is accepted is consistent: its recipe validates (vt_recipe_validate), and, for a manifest of
 * the current format (an older one is read, not written), writing it again
 * (vt_manifest_build) gives a manifest that reads back to the same recipe (vt_recipe_to_json), the
 * same dataset hash, initial-state hash and client graph (its file's hash and canonical form), and
 * writes again to the same bytes; a client graph (the manifest's "model") either builds its step
 * program (vt_program_build) or is refused as VT_ERR_FORMAT, VT_ERR_ARG or VT_ERR_NOMEM. Returns 0 when every
 * rule holds, 1 on a violation (on stderr); *accepted is 1 when the reader accepted. */
#ifndef VT_FUZZ_MANIFEST_BODY_H
#define VT_FUZZ_MANIFEST_BODY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_common.h"
#include "arch/vt_arch.h"
#include "arch/vt_recipe.h"

#define VT_FUZZ_MANIFEST_FAIL(...) VT_FUZZ_VIOLATION("fuzz_manifest", __VA_ARGS__)

static int vt_fuzz_manifest_one(const uint8_t *data, size_t size, int *accepted)
{
    int rc = 0;
    static vt_recipe r, r2; /* a recipe holds a client graph's canonical form: off the stack */
    uint8_t dh[32], dh2[32];
    char *m1 = NULL, *m2 = NULL, *j1 = NULL, *j2 = NULL;
    *accepted = 0;
    vt_err e = vt_manifest_parse((const char *)data, size, &r, dh);
    if (e) {
        if (e != VT_ERR_FORMAT && e != VT_ERR_LIMIT && e != VT_ERR_ARG && e != VT_ERR_NOMEM)
            VT_FUZZ_MANIFEST_FAIL("refused with code %d (%s)", (int)e, vt_errmsg());
        goto done;
    }
    *accepted = 1;
    if (vt_recipe_validate(&r) != VT_OK) VT_FUZZ_MANIFEST_FAIL("accepted a recipe that does not validate: %s", vt_errmsg());
    /* a manifest of an older format (1-4: no program version, whole reductions, logs of the old rule)
     * is read, to audit old runs, but the writer writes only the current format, which cannot express
     * it: no write-back for it */
    if (r.program_version == 0 || r.bound.whole_reduction || r.bound.legacy_log) goto done;
    e = vt_manifest_build(&r, dh, "cpu", &m1);
    if (e == VT_ERR_NOMEM) goto done;
    if (e) VT_FUZZ_MANIFEST_FAIL("the accepted recipe does not write: %s", vt_errmsg());
    e = vt_manifest_parse(m1, strlen(m1), &r2, dh2);
    if (e) VT_FUZZ_MANIFEST_FAIL("the manifest written from it does not read: %s\n%s", vt_errmsg(), m1);
    if (memcmp(dh, dh2, 32) != 0 || r.has_init != r2.has_init || r.init_torch != r2.init_torch ||
        memcmp(r.init_sha256, r2.init_sha256, 32) != 0)
        VT_FUZZ_MANIFEST_FAIL("the dataset hash or the initial state's hash does not read back");
    if (r.has_model != r2.has_model || memcmp(r.model_sha256, r2.model_sha256, 32) != 0 ||
        r.model_graph_len != r2.model_graph_len || memcmp(r.model_graph, r2.model_graph, r.model_graph_len) != 0)
        VT_FUZZ_MANIFEST_FAIL("the client graph does not read back");
    if (r.has_model) {
        vt_program p;
        e = vt_program_build(&r, &p);
        if (!e) vt_program_free(&p);
        else if (e != VT_ERR_FORMAT && e != VT_ERR_ARG && e != VT_ERR_NOMEM)
            VT_FUZZ_MANIFEST_FAIL("a client graph refused with code %d (%s)", (int)e, vt_errmsg());
    }
    if (vt_recipe_to_json(&r, &j1) != VT_OK || vt_recipe_to_json(&r2, &j2) != VT_OK) goto done;
    if (strcmp(j1, j2) != 0) VT_FUZZ_MANIFEST_FAIL("the recipe does not read back:\n%s\n%s", j1, j2);
    if (vt_manifest_build(&r2, dh2, "cpu", &m2) != VT_OK) goto done;
    if (strcmp(m1, m2) != 0) VT_FUZZ_MANIFEST_FAIL("written twice, two manifests:\n%s\n%s", m1, m2);
done:
    free(m1), free(m2), free(j1), free(j2);
    return rc;
}

#endif
