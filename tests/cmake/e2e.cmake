# The end-to-end test drives the real programs (trainer, auditor) and a tampering tool.
add_executable(vt_tamper ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/vt_tamper.c)
target_link_libraries(vt_tamper PRIVATE ${VT_TEST_LIBS} PkgConfig::SQLITE)
target_include_directories(vt_tamper PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/e2e.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(e2e 1200) # quiet: 126 s
# The dispute game with real processes on loopback (tests/e2e/dispute.sh).
add_test(NAME dispute COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/dispute.sh ${CMAKE_BINARY_DIR})
set_tests_properties(dispute PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(dispute 1500) # quiet: 169 s
# The residual CNN end to end (tests/e2e/e2e_cnn.sh).
add_test(NAME e2e_cnn COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/e2e_cnn.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_cnn PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(e2e_cnn 1500) # quiet: 77 s
# The character-level GPT end to end (tests/e2e/e2e_gpt.sh).
add_test(NAME e2e_gpt COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/e2e_gpt.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_gpt PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(e2e_gpt 1500) # quiet: 46 s
# The CUDA plugin takes project symbols from the program that loads it (backend/cuda/vt_cuda_plugin.h):
# every one it needs must be exported by each program that can open it.
if(VT_HAVE_CUDA)
  add_test(NAME cuda_plugin_symbols COMMAND bash -c
    "need=$(nm -D --undefined-only '${CMAKE_BINARY_DIR}/libvt_cuda.so' | awk '{print $2}' | grep '^vt_' | sort -u); \
     [ -n \"$need\" ] || { echo 'no vt_ symbols needed?'; exit 1; }; st=0; \
     for p in trainer auditor test_cuda bench_cuda; do \
       have=$(nm -D --defined-only '${CMAKE_BINARY_DIR}'/$p | awk '{print $3}' | sort -u); \
       miss=$(comm -23 <(echo \"$need\") <(echo \"$have\")); \
       if [ -n \"$miss\" ]; then echo \"$p lacks: $miss\"; st=1; fi; done; \
     echo \"plugin needs: $need\" | tr '\\n' ' '; echo; exit $st")
  vt_test_timeout(cuda_plugin_symbols 60) # quiet: 0.8 s
endif()
# The residual CNN's step program 2 (convolutions without im2col tensors) against program 1 (tests/e2e/conv_v2.sh).
add_test(NAME conv_v2 COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/conv_v2.sh ${CMAKE_BINARY_DIR})
set_tests_properties(conv_v2 PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(conv_v2 900) # quiet: 32 s
