# Known answers of `trainer export` (tests/e2e/kat_export.sh, tests/kat/export.kat): the exported
# safetensors bytes of tiny MLP, CNN and GPT runs, pinned before the operation kinds move (issue 23).
add_test(NAME kat_export COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/kat_export.sh ${CMAKE_BINARY_DIR})
vt_test_timeout(kat_export 600) # quiet: 1.6 s
# Known answers of the step programs (tests/e2e/program_kat.sh, tests/kat/programs/): the programs of the
# hand-written builders, which the builders derived from graphs (arch/vt_graph.c) reproduce op for op.
add_test(NAME program_kat COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/program_kat.sh ${CMAKE_BINARY_DIR})
vt_test_timeout(program_kat 300)
