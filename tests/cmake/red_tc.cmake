# The dispute game in the tensor-core mode and step program 2: cheats lose, honest trainers beat lying
# auditors, the arbiter recomputing the mode's operation (tests/e2e/dispute_modes.sh).
add_test(NAME dispute_modes COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/dispute_modes.sh ${CMAKE_BINARY_DIR})
set_tests_properties(dispute_modes PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(dispute_modes 1500) # quiet: 120 s
# Manifest edits of gemm_arith and program_version, re-signed or not, and hostile values (tests/e2e/red_tc.sh).
add_test(NAME red_tc COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/red_tc.sh ${CMAKE_BINARY_DIR})
set_tests_properties(red_tc PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(red_tc 600) # quiet: 20 s
