# The end-to-end test drives the real programs (trainer, auditor) and a tampering tool.
add_executable(vt_tamper ${CMAKE_CURRENT_SOURCE_DIR}/tests/vt_tamper.c)
target_link_libraries(vt_tamper PRIVATE ${VT_TEST_LIBS} PkgConfig::SQLITE)
target_include_directories(vt_tamper PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77)
# The dispute game with real processes on loopback (tests/dispute.sh).
add_test(NAME dispute COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/dispute.sh ${CMAKE_BINARY_DIR})
set_tests_properties(dispute PROPERTIES TIMEOUT 1500 SKIP_RETURN_CODE 77)
# The residual CNN end to end (tests/e2e_cnn.sh).
add_test(NAME e2e_cnn COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e_cnn.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_cnn PROPERTIES TIMEOUT 1500 SKIP_RETURN_CODE 77)
# The character-level GPT end to end (tests/e2e_gpt.sh).
add_test(NAME e2e_gpt COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e_gpt.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_gpt PROPERTIES TIMEOUT 1500 SKIP_RETURN_CODE 77)
