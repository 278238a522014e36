# tests/cmake/losses.cmake - test_losses (tests/unit/test_losses.c: the losses of regression and multi-label
# models against MPFR) links MPFR, a test-only dependency as for test_exact; without it the test skips (77).
if(TARGET test_losses AND MPFR_FOUND)
  target_link_libraries(test_losses PRIVATE PkgConfig::MPFR)
  target_compile_definitions(test_losses PRIVATE VT_HAVE_MPFR)
endif()
