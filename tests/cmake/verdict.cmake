# Verdicts bound to their parties and game, fresh service records (issue 21, findings 3, 5, 9;
# tests/e2e/verdict.sh): an arbiter the trainer never accepted, re-signed transcripts, a fake arbiter,
# a stale and an expired service record. vt_rogue plays the dishonest arbiter (test-only).
add_executable(vt_rogue ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/vt_rogue.c ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/vt_test.c)
target_link_libraries(vt_rogue PRIVATE vt_game ${VT_TEST_LIBS})
target_include_directories(vt_rogue PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/tests)
add_test(NAME dispute_binding COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/verdict.sh ${CMAKE_BINARY_DIR})
set_tests_properties(dispute_binding PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(dispute_binding 900) # quiet: 20 s
