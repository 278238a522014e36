# The dispute game under attack (tests/e2e/attack.sh): one ctest per attack of issue 9, each with its
# own servers and runs; the attack tool is a test program, never linked into the products.
# No case measures wall time (issue 21): they check who wins, the verdict and bounded resources
# (descriptors, threads, RSS, the servers' CPU seconds), none of which other tests running on the
# same cores can push over its bound, so the cases run in parallel with the rest of the suite
# (no RUN_SERIAL). The loaded/unloaded wall-time ratios are a benchmark: bench/attack_load.sh.
# TIMEOUT is a hang guard.
add_executable(vt_attack ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/vt_attack.c ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/vt_test.c)
target_link_libraries(vt_attack PRIVATE ${VT_TEST_LIBS})
target_include_directories(vt_attack PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(attack IN ITEMS address idle silent_tls manifest flood unauth error_challenge offline rejections emfile)
  add_test(NAME attack_${attack} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/attack.sh ${CMAKE_BINARY_DIR} ${attack})
  set_tests_properties(attack_${attack} PROPERTIES SKIP_RETURN_CODE 77)
  vt_test_timeout(attack_${attack} 600) # quiet: 19 s at most (attack_address)
endforeach()
