/* fuzz_msg.c - libFuzzer target for the dispute-game message decoders (protocol/vt_msg.c).
 * Build: cmake -DVT_FUZZ=ON with CC=clang (target fuzz_msg). Run, e.g.:
 *   mkdir -p /tmp/msg-corpus
 *   ./fuzz_msg /tmp/msg-corpus tests/corpus/msg -max_total_time=60
 * The check itself lives in fuzz_msg_body.h (shared with tests/tools/replay_corpus.c):
 * every type is decoded from the bytes with no signature check and with a fixed key; a
 * decoder must never crash, and whatever it accepts must re-encode to the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_msg_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int accepted;
    if (vt_fuzz_msg_one(data, size, &accepted) != 0) abort();
    return 0;
}
