# One command-line grammar (tests/e2e/cli_grammar.sh; issue 38): every subcommand's --help generated
# from its option table (every option listed is taken, the default evaluation order stated), RUN_DIR
# positional with --run deprecated, --service on both sides, and the frictions of the issue.
add_test(NAME cli_grammar COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cli_grammar.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cli_grammar PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(cli_grammar 600) # quiet: about 20 s
