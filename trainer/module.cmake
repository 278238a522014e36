# The trainer program: command-line code only (run/, game/ hold the logic), one file per subcommand
# or close group (trainer/main.c dispatches; trainer/trainer.h lists them). The test build
# trainer-test (tests/, VT_TEST_HOOKS) gets the same files and test_hooks.c, its options.
include(${CMAKE_CURRENT_SOURCE_DIR}/run/report.cmake) # vt_report: `trainer report`
set(VT_TRAINER_SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/trainer/cmd_train.c ${CMAKE_CURRENT_SOURCE_DIR}/trainer/cmd_export.c
    ${CMAKE_CURRENT_SOURCE_DIR}/trainer/cmd_eval.c ${CMAKE_CURRENT_SOURCE_DIR}/trainer/cmd_serve.c)
add_executable(trainer ${CMAKE_CURRENT_SOURCE_DIR}/trainer/main.c ${VT_TRAINER_SOURCES})
target_link_libraries(trainer PRIVATE vt_cliopts vt_game vt_run vt_report)
# the test build (defined from main.c by the tests): its other sources, at the end of the directory
function(_vt_program_test_sources prog)
  if(TARGET ${prog}-test)
    target_sources(${prog}-test PRIVATE ${ARGN})
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _vt_program_test_sources trainer ${VT_TRAINER_SOURCES}
               ${CMAKE_CURRENT_SOURCE_DIR}/trainer/test_hooks.c)
