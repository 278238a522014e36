/* fuzz_data_body.h - the check of the data-file loaders a hostile `--data-dir` feeds besides
 * safetensors (fuzz_st_body.h): a NumPy .npy pair (vt_data_load_npy) and a text file
 * (vt_data_load_file "text:" and "text-val:"). Shared by the libFuzzer target fuzz_data
 * (tests/fuzz/fuzz_target.c) and the corpus replayer (tests/tools/replay_corpus.c: ctest data_corpus over
 * tests/corpus/data).
 *
 * An input is the pair: its first 4 bytes (little-endian) k, then the features' file (the next
 * k mod (size - 3) bytes) and the labels' file (the rest); the whole input is also read as a text.
 * Any file may be refused, but only as VT_ERR_FORMAT, VT_ERR_LIMIT or VT_ERR_NOMEM; a data set
 * loaded is consistent (fuzz_common.h vt_fuzz_dataset_bad). Returns 0 when every rule holds, 1 on a
 * violation (on stderr); *accepted gets bit 0 when the pair loaded, bit 1 when the text did. */
#ifndef VT_FUZZ_DATA_BODY_H
#define VT_FUZZ_DATA_BODY_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/vt_bytes.h"
#include "data/vt_data.h"
#include "fuzz/fuzz_common.h"

#define VT_FUZZ_DATA_FAIL(...) VT_FUZZ_VIOLATION("fuzz_data", __VA_ARGS__)

static int vt_fuzz_data_one(const uint8_t *data, size_t size, int *accepted)
{
    int rc = 0;
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    *accepted = 0;
    size_t k = size < 4 ? 0 : vt_get_u32le(data) % (size - 3), x0 = size < 4 ? size : 4;
    const char *px = vt_fuzz_file_at(0, data + x0, k), *py = vt_fuzz_file_at(1, data + x0 + k, size - x0 - k);
    if (!px || !py) return 1;
    vt_err e = vt_data_load_npy(px, py, "fuzz", &ds);
    if (e) {
        if (e != VT_ERR_FORMAT && e != VT_ERR_LIMIT && e != VT_ERR_NOMEM)
            VT_FUZZ_DATA_FAIL("the .npy pair refused with code %d (%s)", (int)e, vt_errmsg());
    } else {
        *accepted |= 1;
        if (vt_fuzz_dataset_bad(&ds)) VT_FUZZ_DATA_FAIL("the .npy pair loaded an inconsistent data set");
    }
    vt_data_free(&ds);
    const char *pt = vt_fuzz_file_at(0, data, size);
    char spec[96];
    for (int val = 0; pt && val < 2; val++) {
        snprintf(spec, sizeof spec, "%s:%s", val ? "text-val" : "text", pt);
        e = vt_data_load_file(spec, NULL, &ds);
        if (e) {
            if (e != VT_ERR_FORMAT && e != VT_ERR_LIMIT && e != VT_ERR_NOMEM)
                VT_FUZZ_DATA_FAIL("%s refused with code %d (%s)", spec, (int)e, vt_errmsg());
        } else {
            *accepted |= 2;
            if (vt_fuzz_dataset_bad(&ds) || !ds.text || ds.n_classes < 1)
                VT_FUZZ_DATA_FAIL("%s loaded an inconsistent data set", spec);
        }
        vt_data_free(&ds);
    }
done:
    vt_data_free(&ds);
    return rc;
}

#endif
