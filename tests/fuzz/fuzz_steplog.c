/* fuzz_steplog.c - libFuzzer target for the step-log decoders (container and payload).
 * Build: cmake -DVT_FUZZ=ON with CC=clang (target fuzz_steplog). Run, e.g.:
 *   mkdir -p /tmp/steplog-corpus
 *   ./fuzz_steplog /tmp/steplog-corpus tests/corpus/steplog -max_total_time=60
 * The check itself lives in fuzz_steplog_body.h (shared with tests/tools/replay_corpus.c). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_steplog_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int accepted;
    if (vt_fuzz_steplog_one(data, size, &accepted) != 0) abort();
    return 0;
}
