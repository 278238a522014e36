# The invariant property test again, in the probabilistic bound mode. Unlike the provable mode,
# this mode's bound holds only with high probability under the Higham-Mary model (independent,
# mean-zero rounding errors): the test's seeded random data satisfy that model; structured data
# need not (docs/rounding.md), so this test checks the mode on the data it is meant for.
add_test(NAME test_invariant_probabilistic COMMAND test_invariant WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_invariant_probabilistic PROPERTIES SKIP_RETURN_CODE 77
                     ENVIRONMENT "VT_BOUND_MODE=probabilistic")
vt_test_timeout(test_invariant_probabilistic 900) # quiet: 51 s
# ... and in exact rounding: every order's outputs must also be RN32 of the exact value.
add_test(NAME test_invariant_exact COMMAND test_invariant WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_invariant_exact PROPERTIES SKIP_RETURN_CODE 77
                     ENVIRONMENT "VT_ROUNDING=exact")
vt_test_timeout(test_invariant_exact 900) # quiet: 33 s
