# Log rounding end to end: one log per state, a padded log refused, older formats readable, and
# --resume on a finished run (tests/e2e/e2e_log.sh; needs trainer, trainer-test, auditor, vt_tamper).
add_test(NAME e2e_log COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/e2e_log.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_log PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(e2e_log 900) # quiet: 17 s
