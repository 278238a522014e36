# The run directory under faults (tests/e2e/run_faults.sh, issue 22 findings 1, 2 and 6): kill -9 at
# every write point of the first and of a later checkpoint (trainer-test --kill-at), a full disk
# (a small tmpfs: as root, else that part is skipped), damaged checkpoints, a second writer, and
# readers of run.db as training ends (vt_dbhold, a reader holding a snapshot or an idle connection).
add_executable(vt_dbhold ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/vt_dbhold.c)
target_link_libraries(vt_dbhold PRIVATE PkgConfig::SQLITE)
add_test(NAME run_faults COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/run_faults.sh ${CMAKE_BINARY_DIR})
set_tests_properties(run_faults PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(run_faults 1200) # quiet: 115 s
