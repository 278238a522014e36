# An honest party never loses, round 3 (tests/e2e/game_round3.sh, issue 37): connection resets, the
# auditor's resumption, record lifetimes, the waiting queue. One ctest per case; no case asserts
# wall time; TIMEOUT is a hang guard.
add_executable(vt_record ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/vt_record.c)
target_link_libraries(vt_record PRIVATE ${VT_TEST_LIBS})
target_include_directories(vt_record PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(case IN ITEMS resets resume gone records admission)
  add_test(NAME game3_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/game_round3.sh ${CMAKE_BINARY_DIR} ${case})
  set_tests_properties(game3_${case} PROPERTIES SKIP_RETURN_CODE 77)
  vt_test_timeout(game3_${case} 900) # quiet: resets 60 s (137 s under ASan), the others 40 s at most
endforeach()
