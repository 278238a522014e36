# The trainer's and the auditor's progress lines on a pipe and on a terminal (tests/e2e/progress.sh).
add_test(NAME progress COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/progress.sh ${CMAKE_BINARY_DIR})
vt_test_timeout(progress 300) # quiet: 3.2 s
