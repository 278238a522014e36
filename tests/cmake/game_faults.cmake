# Where an honest party could lose the game through no fault of its own (tests/e2e/game_faults.sh,
# issue 21): one ctest per case, each with its own servers and runs. No case asserts wall time;
# TIMEOUT is a hang guard.
foreach(case IN ITEMS idle sessions work cnn gpt huge worklimit budget admission tc)
  add_test(NAME game_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/game_faults.sh ${CMAKE_BINARY_DIR} ${case})
  set_tests_properties(game_${case} PROPERTIES SKIP_RETURN_CODE 77)
  # quiet: cnn 213 s, gpt 192 s, work 176 s, the others 21 s at most
  if(case STREQUAL "cnn" OR case STREQUAL "gpt")
    vt_test_timeout(game_${case} 1200)
  else()
    vt_test_timeout(game_${case} 900)
  endif()
endforeach()
