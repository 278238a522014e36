# The dispute game under attack (tests/attack.sh): one ctest per attack of issue 9, each with its
# own servers and runs; the attack tool is a test program, never linked into the products.
add_executable(vt_attack ${CMAKE_CURRENT_SOURCE_DIR}/tests/vt_attack.c)
target_link_libraries(vt_attack PRIVATE ${VT_TEST_LIBS})
target_include_directories(vt_attack PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(attack IN ITEMS address idle silent_tls manifest flood unauth error_challenge offline rejections emfile)
  add_test(NAME attack_${attack} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/attack.sh ${CMAKE_BINARY_DIR} ${attack})
  set_tests_properties(attack_${attack} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
# The cases that compare a loaded game with the unloaded one measure time: they run alone, so that
# other tests on the same cores do not load one measurement and not the other.
# attack_emfile measures the server's CPU time (no busy loop at the descriptor limit).
set_tests_properties(attack_idle attack_silent_tls attack_flood attack_unauth attack_emfile PROPERTIES RUN_SERIAL TRUE)
