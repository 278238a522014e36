# Step-log codec (rounding_log/vt_codec.c): corpus tools, the corpus replay test and,
# with -DVT_FUZZ=ON and clang, the libFuzzer target fuzz_steplog.
set(VT_STEPLOG_CORPUS ${PROJECT_SOURCE_DIR}/tests/corpus/steplog)

# Writes the seed corpus: make_corpus tests/corpus/steplog (see tests/fuzz/make_corpus.c).
add_executable(make_corpus ${PROJECT_SOURCE_DIR}/tests/fuzz/make_corpus.c)
target_link_libraries(make_corpus PRIVATE ${VT_TEST_LIBS} PkgConfig::ZSTD)
target_include_directories(make_corpus PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz)

# Runs every corpus file through the fuzzer's check (tests/fuzz/fuzz_steplog_body.h,
# tests/fuzz/fuzz_msg_body.h): one program for both decoders.
add_executable(replay_corpus ${PROJECT_SOURCE_DIR}/tests/tools/replay_corpus.c)
target_link_libraries(replay_corpus PRIVATE ${VT_TEST_LIBS})
target_include_directories(replay_corpus PRIVATE ${PROJECT_SOURCE_DIR}/tests)
add_test(NAME codec_corpus COMMAND replay_corpus steplog ${VT_STEPLOG_CORPUS})
vt_test_timeout(codec_corpus 120) # quiet: <0.1 s
add_test(NAME msg_corpus COMMAND replay_corpus msg ${VT_MSG_CORPUS})
vt_test_timeout(msg_corpus 120) # quiet: <0.1 s

if(VT_FUZZ)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    # The codec and its helpers are compiled into the target so that libFuzzer's
    # coverage instrumentation reaches them.
    add_executable(fuzz_steplog
      ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_steplog.c
      ${PROJECT_SOURCE_DIR}/rounding_log/vt_codec.c
      ${PROJECT_SOURCE_DIR}/common/vt_bytes.c
      ${PROJECT_SOURCE_DIR}/common/vt_error.c
      ${PROJECT_SOURCE_DIR}/common/vt_hash.c)
    target_include_directories(fuzz_steplog PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/tests/fuzz)
    target_compile_options(fuzz_steplog PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
                           -fno-omit-frame-pointer)
    target_link_options(fuzz_steplog PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_steplog PRIVATE PkgConfig::ZSTD PkgConfig::CRYPTO)
    # A short smoke run, reproducible: every run starts from a fresh, empty output directory
    # in the build tree (libFuzzer writes new inputs to the first directory only, so the
    # committed corpus is read, never written), with a fixed seed, without libFuzzer's periodic,
    # time-driven re-reading of that directory (-reload=0) and, where setarch allows it, without
    # address-space randomisation (compared pointer values steer the mutations): the same inputs
    # every run.
    set(_vt_steplog_fuzz_out ${CMAKE_BINARY_DIR}/fuzz_steplog_corpus)
    add_test(NAME codec_fuzz_smoke
             COMMAND sh -c "rm -rf '${_vt_steplog_fuzz_out}' && mkdir -p '${_vt_steplog_fuzz_out}' && \
set -- \"$0\" '${_vt_steplog_fuzz_out}' '${VT_STEPLOG_CORPUS}' -runs=20000 -seed=1 -reload=0 && \
if setarch \"$(uname -m)\" -R true 2>/dev/null; then exec setarch \"$(uname -m)\" -R \"$@\"; fi; exec \"$@\""
                     $<TARGET_FILE:fuzz_steplog>)
    vt_test_timeout(codec_fuzz_smoke 300) # not run here (the clang fuzz build)
  else()
    message(WARNING "VT_FUZZ=ON needs clang as the C compiler (CC=clang); fuzz_steplog is not built")
  endif()
endif()
