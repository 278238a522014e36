# tests/cmake/act.cmake - test_act (tests/unit/test_act.c: the activations of client models against MPFR)
# links MPFR, a test-only dependency as for test_exact; without it the test skips (77).
if(TARGET test_act AND MPFR_FOUND)
  target_link_libraries(test_act PRIVATE PkgConfig::MPFR)
  target_compile_definitions(test_act PRIVATE VT_HAVE_MPFR)
endif()
