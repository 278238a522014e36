# The certificate tests: test_cert.c (a ctest of its own, from the glob) and tests/e2e/cert.sh (a trained
# run certified, re-checked in another order, every byte of the certificate altered and rejected).
# The test build auditor-test is defined after the fragments: it gets vt_cert at the end of the
# directory.
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL target_link_libraries auditor-test PRIVATE vt_cert)
add_test(NAME cert COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert.sh ${CMAKE_BINARY_DIR})
vt_test_timeout(cert 600) # quiet: 73 s
# vt_cert_resign: an altered certificate signed again (the one-pass check's rejections, tests/cert*.sh)
add_executable(vt_cert_resign ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/vt_cert_resign.c)
target_link_libraries(vt_cert_resign PRIVATE vt_cert ${VT_TEST_LIBS})
target_include_directories(vt_cert_resign PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
# test_cert_samples.c (millions of sampled inputs, exact fallbacks) and test_cert_bab.c (branch and bound's
# leaves against exact evaluation) need MPFR too (else they skip, 77); test_cert_attack (the per-row attack)
# checks the exact deployed evaluation against it when it is there
foreach(t IN ITEMS test_cert test_cert_samples test_cert_bab test_cert_attack)
  if(TARGET ${t} AND MPFR_FOUND)
    target_link_libraries(${t} PRIVATE PkgConfig::MPFR)
    target_compile_definitions(${t} PRIVATE VT_HAVE_MPFR)
  endif()
endforeach()
# ONNX networks and VNN-LIB properties: tests/e2e/cert_onnx.sh (a run exported to ONNX, its properties
# written as VNN-LIB and answered on both; hostile files), and the VNN-LIB parser's corpus through
# the fuzzer's check (tests/fuzz/fuzz_vnnlib.c, -DVT_FUZZ_REPLAY); with -DVT_FUZZ=ON and clang the
# libFuzzer target fuzz_vnnlib.
add_test(NAME cert_onnx COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_onnx.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cert_onnx PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(cert_onnx 900) # quiet: 9.7 s
add_executable(fuzz_vnnlib_replay ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_vnnlib.c)
target_compile_definitions(fuzz_vnnlib_replay PRIVATE VT_FUZZ_REPLAY)
target_include_directories(fuzz_vnnlib_replay PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(fuzz_vnnlib_replay PRIVATE vt_cert)
file(GLOB _vt_vnnlib_corpus ${PROJECT_SOURCE_DIR}/tests/corpus/vnnlib/*)
add_test(NAME cert_vnnlib_corpus COMMAND fuzz_vnnlib_replay ${_vt_vnnlib_corpus})
vt_test_timeout(cert_vnnlib_corpus 120) # quiet: <0.1 s
if(VT_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  # the parser compiled into the target (coverage instrumentation reaches it); the rest from vt_cert
  add_executable(fuzz_vnnlib ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_vnnlib.c ${PROJECT_SOURCE_DIR}/cert/vt_vnnlib.c)
  target_include_directories(fuzz_vnnlib PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(fuzz_vnnlib PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  target_link_options(fuzz_vnnlib PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_vnnlib PRIVATE vt_cert)
endif()
# test_cert_onnx.c builds its models with the protoc-c structures: it needs them (else it skips, 77)
if(TARGET test_cert_onnx AND TARGET vt_onnx_pb)
  target_link_libraries(test_cert_onnx PRIVATE vt_onnx_pb)
  target_compile_definitions(test_cert_onnx PRIVATE VT_HAVE_ONNX)
endif()
# The residual CNN: tests/e2e/cert_cnn.sh (tiny resnet runs certified with IBP and CROWN, re-checked in
# other orders); test_cert_cnn.c (the graph bounds against sampled inputs) comes from the glob.
add_test(NAME cert_cnn COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_cnn.sh ${CMAKE_BINARY_DIR})
vt_test_timeout(cert_cnn 300) # quiet: 13 s
# Convolutional networks from ONNX: tests/e2e/cert_onnx_cnn.sh (a tiny resnet exported to ONNX, its
# properties answered on the file against the run's verdicts; hostile Conv attributes refused).
add_test(NAME cert_onnx_cnn COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_onnx_cnn.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cert_onnx_cnn PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(cert_onnx_cnn 300) # quiet: 12 s
# FP32 overflow (tests/e2e/cert_fp32_overflow.sh): networks whose FP32 evaluation overflows while the real
# one does not are never unsat; their in-range twins are.
add_test(NAME cert_fp32_overflow COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_fp32_overflow.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cert_fp32_overflow PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(cert_fp32_overflow 300) # quiet: 3.6 s
# Branch and bound (certify --method beta-crown): tests/e2e/cert_bab.sh (alpha-CROWN's unknowns closed,
# the version-5 certificate re-checked in other orders, tampered split trees rejected naming the node)
add_test(NAME cert_bab_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_bab.sh ${CMAKE_BINARY_DIR})
vt_test_timeout(cert_bab_e2e 600) # quiet: 20 s (the VNN-LIB part: 40 properties x 3 answers)
# Branch and bound over threads: tests/e2e/cert_bab_par.sh (the same certificate bytes and answers for
# --threads 1, 2 and 3; check-certificate's replay over threads; tampered trees rejected alike)
add_test(NAME cert_bab_par COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_bab_par.sh ${CMAKE_BINARY_DIR})
vt_test_timeout(cert_bab_par 600) # quiet: 15 s
# Branch and bound over MPI ranks: tests/e2e/cert_bab_ranks.sh (mpirun -np 2 and 3 ... --shard none: the
# one-process certificate byte for byte)
add_test(NAME cert_bab_ranks COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_bab_ranks.sh ${CMAKE_BINARY_DIR}
                                     "$<$<BOOL:${VT_HAVE_MPI}>:${MPIEXEC_EXECUTABLE}>")
set_tests_properties(cert_bab_ranks PROPERTIES SKIP_RETURN_CODE 77)
# its environment: dist.cmake's VT_MPI_TEST_ENV, appended once every fragment is in
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL cmake_language EVAL CODE
  "set_property(TEST cert_bab_ranks APPEND PROPERTY ENVIRONMENT \${VT_MPI_TEST_ENV})")
vt_test_timeout(cert_bab_ranks 900) # quiet: 30 s (three mpirun start-ups)
# Input splitting (few inputs): tests/e2e/cert_bab_input.sh (a random 4-input MLP's properties, version-8
# certificates the same for --threads 1 and 2, tampered input splits rejected naming the node)
add_test(NAME cert_bab_input COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_bab_input.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cert_bab_input PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(cert_bab_input 300) # quiet: 2 s
