# Hang guards. Every test's TIMEOUT is set by vt_test_timeout(NAME SECONDS): SECONDS is at least 5x
# the test's time on a quiet 2-core machine (measured with ctest -j2 beside other work, so upper
# bounds: each figure beside its call; the sanitizer build runs with the same values), times
# VT_TEST_TIMEOUT_SCALE, an environment variable read at configure time (a positive number, default
# 1: e.g. VT_TEST_TIMEOUT_SCALE=3 cmake -S . -B build for a slower or busier machine). The same value
# is passed to every test in its environment, where the scripts' own waits and deadlines
# (tests/e2e/lib.sh) and the C tests' (vt_test_timeout_scale, tests/unit/vt_test.c) scale by it. A test
# registered without vt_test_timeout stops the configure. No test measures wall time.
set(VT_TEST_TIMEOUT_SCALE "$ENV{VT_TEST_TIMEOUT_SCALE}")
if(VT_TEST_TIMEOUT_SCALE STREQUAL "")
  set(VT_TEST_TIMEOUT_SCALE 1)
endif()
if(NOT VT_TEST_TIMEOUT_SCALE MATCHES "^([0-9]+)(\\.([0-9]*))?$")
  message(FATAL_ERROR "VT_TEST_TIMEOUT_SCALE=${VT_TEST_TIMEOUT_SCALE}: expected a positive number (e.g. 1, 2.5)")
endif()
# the scale in thousandths (CMake's arithmetic is integer); the leading 1 keeps zeros decimal
string(SUBSTRING "${CMAKE_MATCH_3}000" 0 3 _vt_scale_frac)
math(EXPR _vt_scale_milli "${CMAKE_MATCH_1} * 1000 + 1${_vt_scale_frac} - 1000")
if(_vt_scale_milli LESS 1 OR _vt_scale_milli GREATER 10000000)
  message(FATAL_ERROR "VT_TEST_TIMEOUT_SCALE=${VT_TEST_TIMEOUT_SCALE}: expected a number from 0.001 to 10000")
endif()
function(vt_test_timeout name seconds)
  math(EXPR t "(${seconds} * ${_vt_scale_milli} + 999) / 1000")
  set_tests_properties(${name} PROPERTIES TIMEOUT ${t} VT_HANG_GUARD ${seconds})
endfunction()
# at the end of the directory (after every fragment and module): every test has its hang guard, and
# gets the scale in its environment (appended: a test's own ENVIRONMENT is kept)
function(_vt_check_hang_guards)
  get_property(tests DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} VT_HANG_GUARD g)
    if(NOT g)
      message(FATAL_ERROR "test ${t} has no hang guard: set its TIMEOUT with vt_test_timeout (tests/tests.cmake)")
    endif()
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "VT_TEST_TIMEOUT_SCALE=${VT_TEST_TIMEOUT_SCALE}")
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _vt_check_hang_guards)

# Every tests/unit/test_*.c is one ctest executable linked against all project libraries.
# A test that cannot run here (e.g. needs a GPU) exits 77 and is reported as skipped.
# test_exact checks the exact accumulator against MPFR, a test-only dependency (libmpfr-dev,
# installed by scripts/install-deps.sh); without it that one test is not built.
pkg_check_modules(MPFR IMPORTED_TARGET mpfr)
# The test-only adversaries (tests/tools/vt_cheats.c), linked into the tests and the test builds below.
add_library(vt_cheats STATIC ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/vt_cheats.c)
target_link_libraries(vt_cheats PUBLIC vt_game vt_model Threads::Threads)
file(GLOB VT_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/test_*.c)
foreach(src IN LISTS VT_TEST_SOURCES)
  get_filename_component(name ${src} NAME_WE)
  if(name STREQUAL "test_exact" AND NOT MPFR_FOUND)
    message(WARNING "libmpfr-dev not found: test_exact (the exact accumulator against MPFR) is not built")
    continue()
  endif()
  add_executable(${name} ${src} ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/vt_test.c)
  target_link_libraries(${name} PRIVATE vt_cheats ${VT_TEST_LIBS})
  # tests/ for the fuzz bodies (test_codec), which include "fuzz/..."
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit ${CMAKE_CURRENT_SOURCE_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  vt_test_timeout(${name} 900) # quiet: 138 s at most (test_cert_cnn)
  if(name STREQUAL "test_exact")
    target_link_libraries(${name} PRIVATE PkgConfig::MPFR)
  endif()
endforeach()
# Extra test definitions (corpus replays, end-to-end scripts) live in tests/cmake/*.cmake fragments.
file(GLOB VT_TEST_FRAGMENTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/cmake/*.cmake)
foreach(frag IN LISTS VT_TEST_FRAGMENTS)
  include(${frag})
endforeach()

# The test builds of the programs: the same main.c with VT_TEST_HOOKS, linking the test-only
# adversaries (tests/tools/vt_cheats.c: --cheat, --stop-after, --misbehave, --lie). The production
# trainer, auditor and arbiter contain none of it: the ctest e2e (tests/e2e/e2e.sh) checks that their
# --help shows no testing option, that `nm` finds no vt_cheats symbol in them, and that each testing
# option is a usage error (exit 64).
foreach(prog IN ITEMS trainer auditor)
  add_executable(${prog}-test ${CMAKE_CURRENT_SOURCE_DIR}/${prog}/main.c)
  target_compile_definitions(${prog}-test PRIVATE VT_TEST_HOOKS)
  target_link_libraries(${prog}-test PRIVATE vt_cheats vt_cliopts vt_game vt_run vt_report)
endforeach()
