# protocol/module.cmake - dispute-game messages, TLS 1.3 transport and transcripts
# (docs/protocol.md). Included from the top-level CMakeLists.txt, so
# CMAKE_CURRENT_SOURCE_DIR is the project root.
pkg_check_modules(SSL REQUIRED IMPORTED_TARGET libssl libcrypto)
find_package(Threads REQUIRED)

add_library(vt_proto STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/protocol/vt_msg.c
  ${CMAKE_CURRENT_SOURCE_DIR}/protocol/vt_conn.c
  ${CMAKE_CURRENT_SOURCE_DIR}/protocol/vt_gate.c
  ${CMAKE_CURRENT_SOURCE_DIR}/protocol/vt_transcript.c
  ${CMAKE_CURRENT_SOURCE_DIR}/protocol/vt_service.c)
target_link_libraries(vt_proto PUBLIC vt_merkle vt_common PkgConfig::SSL Threads::Threads)

# Before the existing entries: static libraries must precede what they use.
list(PREPEND VT_TEST_LIBS vt_proto)

# ---------------------------------------------------------------- message corpus and fuzzing
set(VT_MSG_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/tests/corpus/msg)

# Writes the seed corpus: make_msg_corpus tests/corpus/msg (see tests/fuzz/make_msg_corpus.c).
add_executable(make_msg_corpus ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/make_msg_corpus.c)
target_link_libraries(make_msg_corpus PRIVATE vt_proto)
target_include_directories(make_msg_corpus PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz)

# The corpus replay test (msg_corpus) is in tests/cmake/codec.cmake, with the step log's.

if(VT_FUZZ)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    # The message codec and its helpers are compiled into the target so that libFuzzer's
    # coverage instrumentation reaches them.
    add_executable(fuzz_msg
      ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/fuzz_msg.c
      ${CMAKE_CURRENT_SOURCE_DIR}/protocol/vt_msg.c
      ${CMAKE_CURRENT_SOURCE_DIR}/protocol/vt_service.c
      ${CMAKE_CURRENT_SOURCE_DIR}/merkle/vt_sign.c
      ${CMAKE_CURRENT_SOURCE_DIR}/common/vt_bytes.c
      ${CMAKE_CURRENT_SOURCE_DIR}/common/vt_error.c
      ${CMAKE_CURRENT_SOURCE_DIR}/common/vt_hash.c)
    target_include_directories(fuzz_msg PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz)
    target_compile_options(fuzz_msg PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
                           -fno-omit-frame-pointer)
    target_link_options(fuzz_msg PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_msg PRIVATE PkgConfig::SODIUM PkgConfig::CRYPTO)
    # A short smoke run, reproducible: every run starts from a fresh, empty output directory
    # in the build tree (libFuzzer writes new inputs to the first directory only, so the
    # committed corpus is read, never written), with a fixed seed, without libFuzzer's periodic,
    # time-driven re-reading of that directory (-reload=0) and, where setarch allows it, without
    # address-space randomisation (compared pointer values steer the mutations): the same inputs
    # every run.
    set(_vt_msg_fuzz_out ${CMAKE_BINARY_DIR}/fuzz_msg_corpus)
    add_test(NAME msg_fuzz_smoke
             COMMAND sh -c "rm -rf '${_vt_msg_fuzz_out}' && mkdir -p '${_vt_msg_fuzz_out}' && \
set -- \"$0\" '${_vt_msg_fuzz_out}' '${VT_MSG_CORPUS}' -runs=20000 -seed=1 -reload=0 && \
if setarch \"$(uname -m)\" -R true 2>/dev/null; then exec setarch \"$(uname -m)\" -R \"$@\"; fi; exec \"$@\""
                     $<TARGET_FILE:fuzz_msg>)
    set_tests_properties(msg_fuzz_smoke PROPERTIES TIMEOUT 300)
  else()
    message(WARNING "VT_FUZZ=ON needs clang as the C compiler (CC=clang); fuzz_msg is not built")
  endif()
endif()
