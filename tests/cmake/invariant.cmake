# The invariant property test again, in the probabilistic bound mode.
add_test(NAME test_invariant_probabilistic COMMAND test_invariant WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_invariant_probabilistic PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
                     ENVIRONMENT "VT_BOUND_MODE=probabilistic")
