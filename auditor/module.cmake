# The auditor program: command-line code only, one file per subcommand or close group
# (auditor/main.c dispatches; auditor/auditor.h lists them). The test build auditor-test (tests/,
# VT_TEST_HOOKS) gets the same files and test_hooks.c, its options.
set(VT_AUDITOR_SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/auditor/cmd_verify.c ${CMAKE_CURRENT_SOURCE_DIR}/auditor/cmd_challenge.c
    ${CMAKE_CURRENT_SOURCE_DIR}/auditor/cmd_certify.c)
add_executable(auditor ${CMAKE_CURRENT_SOURCE_DIR}/auditor/main.c ${VT_AUDITOR_SOURCES})
target_link_libraries(auditor PRIVATE vt_cliopts vt_game vt_run vt_cert)
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _vt_program_test_sources auditor ${VT_AUDITOR_SOURCES}
               ${CMAKE_CURRENT_SOURCE_DIR}/auditor/test_hooks.c)
