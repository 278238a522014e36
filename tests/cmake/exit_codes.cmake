# One exit code per kind of error, and the messages intact (tests/e2e/exit_codes.sh; issue 22).
add_test(NAME exit_codes COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/exit_codes.sh ${CMAKE_BINARY_DIR})
set_tests_properties(exit_codes PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(exit_codes 600) # quiet: 18 s
