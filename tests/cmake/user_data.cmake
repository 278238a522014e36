# The user's data sets and initial weights end to end (tests/e2e/user_data.sh, tests/ref/user_files.py: issue 25
# items 1 and 2): safetensors, .npy and text data sets and --init files (another run's export, a
# PyTorch-written one) audit VERIFIED; hostile or different files are refused clearly.
add_test(NAME user_data COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/user_data.sh ${CMAKE_BINARY_DIR})
set_tests_properties(user_data PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(user_data 900) # quiet: 13 s
