# the tensor-core mode (gemm_arith): MLP, CNN and GPT trained by the CPU's emulation, audited (tests/e2e/tc_mode.sh)
add_test(NAME tc_mode COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/tc_mode.sh ${CMAKE_BINARY_DIR}
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(tc_mode PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(tc_mode 600) # quiet: 7.9 s
