/* fuzz_target.c - the libFuzzer targets of the file decoders, one program per decoder by the
 * definition it is compiled with (tests/cmake/fuzz.cmake): VT_FUZZ_CERT (fuzz_cert: the certificate,
 * fuzz_cert_body.h), VT_FUZZ_ST (fuzz_safetensors: the safetensors reader, the data set loader and
 * --init, fuzz_st_body.h), VT_FUZZ_ONNX (fuzz_onnx: the ONNX reader, fuzz_onnx_body.h), VT_FUZZ_OG
 * (fuzz_onnx_graph: the ONNX front-end of the client's own model, fuzz_og_body.h),
 * VT_FUZZ_MANIFEST (fuzz_manifest: a run's manifest, fuzz_manifest_body.h), VT_FUZZ_DATA (fuzz_data:
 * a .npy pair and a text as data sets, fuzz_data_body.h), VT_FUZZ_CKPT (fuzz_ckpt: a checkpoint file,
 * fuzz_ckpt_body.h). The check
 * lives in the body, shared with the corpus replayer (tests/tools/replay_corpus.c). Build: cmake
 * -DVT_FUZZ=ON with CC=clang; run, e.g.:
 *   mkdir -p /tmp/cert-corpus && ./fuzz_cert /tmp/cert-corpus ../../tests/corpus/cert -max_total_time=180 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(VT_FUZZ_CERT)
#include "fuzz_cert_body.h"
#define VT_FUZZ_ONE vt_fuzz_cert_one
#elif defined(VT_FUZZ_ST)
#include "fuzz_st_body.h"
#define VT_FUZZ_ONE vt_fuzz_st_one
#elif defined(VT_FUZZ_ONNX)
#include "fuzz_onnx_body.h"
#define VT_FUZZ_ONE vt_fuzz_onnx_one
#elif defined(VT_FUZZ_OG)
#include "fuzz_og_body.h"
#define VT_FUZZ_ONE vt_fuzz_og_one
#elif defined(VT_FUZZ_MANIFEST)
#include "fuzz_manifest_body.h"
#define VT_FUZZ_ONE vt_fuzz_manifest_one
#elif defined(VT_FUZZ_DATA)
#include "fuzz_data_body.h"
#define VT_FUZZ_ONE vt_fuzz_data_one
#elif defined(VT_FUZZ_CKPT)
#include "fuzz_ckpt_body.h"
#define VT_FUZZ_ONE vt_fuzz_ckpt_one
#else
#error "define VT_FUZZ_CERT, VT_FUZZ_ST, VT_FUZZ_ONNX, VT_FUZZ_OG, VT_FUZZ_MANIFEST, VT_FUZZ_DATA or VT_FUZZ_CKPT"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int accepted;
    if (VT_FUZZ_ONE(data, size, &accepted) != 0) abort();
    return 0;
}
