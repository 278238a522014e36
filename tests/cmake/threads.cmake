# --threads N: the same commitment for 1, 2 and 3 threads (MLP, CNN, GPT), audits with 2 (tests/e2e/threads.sh)
add_test(NAME threads COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/threads.sh ${CMAKE_BINARY_DIR}
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
vt_test_timeout(threads 900) # quiet: 11 s
