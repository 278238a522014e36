# Every tests/test_*.c is one ctest executable linked against all project libraries.
# A test that cannot run here (e.g. needs a GPU) exits 77 and is reported as skipped.
# test_exact checks the exact accumulator against MPFR, a test-only dependency (libmpfr-dev,
# installed by scripts/install-deps.sh); without it that one test is not built.
pkg_check_modules(MPFR IMPORTED_TARGET mpfr)
# The test-only adversaries (tests/vt_cheats.c), linked into the tests and the test builds below.
add_library(vt_cheats STATIC ${CMAKE_CURRENT_SOURCE_DIR}/tests/vt_cheats.c)
target_link_libraries(vt_cheats PUBLIC vt_game vt_model Threads::Threads)
file(GLOB VT_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_*.c)
foreach(src IN LISTS VT_TEST_SOURCES)
  get_filename_component(name ${src} NAME_WE)
  if(name STREQUAL "test_exact" AND NOT MPFR_FOUND)
    message(WARNING "libmpfr-dev not found: test_exact (the exact accumulator against MPFR) is not built")
    continue()
  endif()
  add_executable(${name} ${src} ${CMAKE_CURRENT_SOURCE_DIR}/tests/vt_test.c)
  target_link_libraries(${name} PRIVATE vt_cheats ${VT_TEST_LIBS})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
  if(name STREQUAL "test_exact")
    target_link_libraries(${name} PRIVATE PkgConfig::MPFR)
  endif()
endforeach()
# Extra test definitions (corpus replays, end-to-end scripts) live in tests/*.cmake fragments.
file(GLOB VT_TEST_FRAGMENTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/cmake/*.cmake)
foreach(frag IN LISTS VT_TEST_FRAGMENTS)
  include(${frag})
endforeach()

# The test builds of the programs: the same main.c with VT_TEST_HOOKS, linking the test-only
# adversaries (tests/vt_cheats.c: --cheat, --stop-after, --misbehave, --lie). The production
# trainer, auditor and arbiter contain none of it: the ctest e2e (tests/e2e.sh) checks that their
# --help shows no testing option, that `nm` finds no vt_cheats symbol in them, and that each testing
# option is a usage error (exit 64).
foreach(prog IN ITEMS trainer auditor)
  add_executable(${prog}-test ${CMAKE_CURRENT_SOURCE_DIR}/${prog}/main.c)
  target_compile_definitions(${prog}-test PRIVATE VT_TEST_HOOKS)
  target_link_libraries(${prog}-test PRIVATE vt_cheats vt_cliopts vt_game vt_run vt_report)
endforeach()
