# tests/cmake/losses.cmake - test_losses (tests/unit/test_losses.c: the losses of regression and multi-label
# models against MPFR) links MPFR, a test-only dependency as for test_exact; without it the test skips (77).
if(TARGET test_losses AND MPFR_FOUND)
  target_link_libraries(test_losses PRIVATE PkgConfig::MPFR)
  target_compile_definitions(test_losses PRIVATE VT_HAVE_MPFR)
endif()
# the batch split over 2 and 3 ranks (test_losses --ranks N under mpirun: each rank's share of every loss
# kind against the one-process values); without MPI they skip (77), as tests/cmake/dist.cmake's do
foreach(np IN ITEMS 2 3)
  if(VT_HAVE_MPI)
    add_test(NAME test_losses_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --allow-run-as-root -np ${np} $<TARGET_FILE:test_losses>
                     --ranks ${np}
             WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  else()
    add_test(NAME test_losses_np${np} COMMAND test_losses --ranks ${np} WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  # VT_MPI_TEST_ENV: tests/cmake/dist.cmake's (the fragments are included in name order)
  set_tests_properties(test_losses_np${np} PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}")
  vt_test_timeout(test_losses_np${np} 600)
endforeach()
