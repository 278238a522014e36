# The file decoders' fuzzing (docs/format.md "Fuzzing the file decoders"): the certificate
# (tests/fuzz/fuzz_cert_body.h), the safetensors reader with the data set loader and --init
# (fuzz_st_body.h), the ONNX reader (fuzz_onnx_body.h), the ONNX front-end of the client's own model
# (fuzz_og_body.h, corpus tests/corpus/onnx_graph), a run's manifest (fuzz_manifest_body.h), the
# .npy and text data sets (fuzz_data_body.h) and a checkpoint (fuzz_ckpt_body.h). Each check runs in
# the normal build over its committed corpus tests/corpus/<kind> (replay_corpus,
# tests/cmake/codec.cmake: ctest <kind>_corpus) and, with -DVT_FUZZ=ON and clang, as a libFuzzer
# target (tests/fuzz/fuzz_target.c: fuzz_cert, fuzz_safetensors, fuzz_onnx, fuzz_onnx_graph, fuzz_manifest,
# fuzz_data, fuzz_ckpt) with a short, reproducible smoke run (ctest <kind>_fuzz_smoke, as
# codec_fuzz_smoke).
foreach(kind IN ITEMS cert safetensors onnx onnx_graph manifest data ckpt)
  add_test(NAME ${kind}_corpus COMMAND replay_corpus ${kind} ${PROJECT_SOURCE_DIR}/tests/corpus/${kind})
  set_tests_properties(${kind}_corpus PROPERTIES SKIP_RETURN_CODE 77)
  vt_test_timeout(${kind}_corpus 120) # quiet: <0.1 s at most (ckpt_corpus)
endforeach()

# name: the target; def: its definition in fuzz_target.c; kind: its corpus; runs: the smoke run's
# inputs (a few seconds' worth); ARGN: the decoder's sources, compiled into the target so that
# libFuzzer's coverage instrumentation reaches them (the rest from the libraries).
function(vt_fuzz_file_target name def kind runs)
  add_executable(${name} ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_target.c ${ARGN})
  target_compile_definitions(${name} PRIVATE ${def})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/tests
                             ${PROJECT_SOURCE_DIR}/tests/fuzz)
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${VT_TEST_LIBS})
  set(out ${CMAKE_BINARY_DIR}/${name}_corpus)
  add_test(NAME ${kind}_fuzz_smoke
           COMMAND sh -c "rm -rf '${out}' && mkdir -p '${out}' && \
set -- \"$0\" '${out}' '${PROJECT_SOURCE_DIR}/tests/corpus/${kind}' -runs=${runs} -seed=1 -reload=0 -max_len=65536 \
-rss_limit_mb=2048 && \
if setarch \"$(uname -m)\" -R true 2>/dev/null; then exec setarch \"$(uname -m)\" -R \"$@\"; fi; exec \"$@\""
                   $<TARGET_FILE:${name}>)
  vt_test_timeout(${kind}_fuzz_smoke 300) # not run here (the clang fuzz build)
endfunction()

# the step-message decoder's smoke run is registered by protocol/module.cmake, before this file
if(TEST msg_fuzz_smoke)
  vt_test_timeout(msg_fuzz_smoke 300) # not run here (the clang fuzz build)
endif()

if(VT_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  vt_fuzz_file_target(fuzz_cert VT_FUZZ_CERT cert 20000 ${PROJECT_SOURCE_DIR}/cert/vt_cert_run.c
                      ${PROJECT_SOURCE_DIR}/cert/vt_cert_spec.c ${PROJECT_SOURCE_DIR}/cert/vt_cert_io.c)
  vt_fuzz_file_target(fuzz_manifest VT_FUZZ_MANIFEST manifest 20000 ${PROJECT_SOURCE_DIR}/arch/vt_recipe.c)
  vt_fuzz_file_target(fuzz_data VT_FUZZ_DATA data 5000 ${PROJECT_SOURCE_DIR}/data/vt_data_file.c
                      ${PROJECT_SOURCE_DIR}/data/vt_data.c)
  vt_fuzz_file_target(fuzz_ckpt VT_FUZZ_CKPT ckpt 1000 ${PROJECT_SOURCE_DIR}/store/vt_checkpoint.c)
  vt_fuzz_file_target(fuzz_safetensors VT_FUZZ_ST safetensors 2000 ${PROJECT_SOURCE_DIR}/data/vt_data_file.c
                      ${PROJECT_SOURCE_DIR}/run/vt_init.c ${PROJECT_SOURCE_DIR}/run/vt_torch.c)
  if(VT_HAVE_ONNX)
    vt_fuzz_file_target(fuzz_onnx VT_FUZZ_ONNX onnx 1000 ${PROJECT_SOURCE_DIR}/cert/vt_cert_onnx.c
                        ${PROJECT_SOURCE_DIR}/cert/vt_cert_graph.c)
    target_link_libraries(fuzz_onnx PRIVATE vt_onnx_pb)
    vt_fuzz_file_target(fuzz_onnx_graph VT_FUZZ_OG onnx_graph 2000 ${PROJECT_SOURCE_DIR}/arch/vt_onnx_graph.c)
    target_link_libraries(fuzz_onnx_graph PRIVATE vt_onnx_pb)
  endif()
endif()
