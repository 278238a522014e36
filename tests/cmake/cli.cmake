# One command-line grammar (tests/e2e/cli_grammar.sh; issue 38): every subcommand's --help generated
# from its option table (every option listed is taken, the default evaluation order stated), RUN_DIR
# positional with --run deprecated, --service on both sides, and the frictions of the issue.
add_test(NAME cli_grammar COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cli_grammar.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cli_grammar PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(cli_grammar 600) # quiet: about 20 s
# The older scripts still give `--run DIR` and `--service-file` (accepted for one release, with a
# warning on stderr); some of them read stderr line by line (tests/progress.sh: progress lines only).
# Until they move to RUN_DIR they run with VT_CLI_DEPRECATED=quiet, which silences those warnings
# and nothing else; cli_grammar checks the warnings themselves.
function(_vt_cli_quiet_deprecations)
  get_property(tests DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY TESTS)
  foreach(t IN LISTS tests)
    if(NOT t STREQUAL "cli_grammar")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT VT_CLI_DEPRECATED=quiet)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _vt_cli_quiet_deprecations)
