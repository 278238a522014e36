# tests/cmake/nccl.cmake - the NCCL engine of GPU ranks (docs/distributed.md "GPU ranks"). test_nccl
# (test_dist's cases with the NCCL engine installed; registered by tests.cmake as one rank, a
# one-rank NCCL communicator) runs here under mpirun -np 2 as test_nccl_np2, and nccl_train
# (tests/e2e/nccl_train.sh) trains on 2 GPU ranks with --backend cuda against the one-process CPU run.
# Each exits 77 - skipped - without a GPU, without NCCL or MPI in the build, or with fewer GPUs than
# ranks on the machine (NCCL needs a GPU per rank).
if(MPFR_FOUND)
  target_link_libraries(test_nccl PRIVATE PkgConfig::MPFR)
  target_compile_definitions(test_nccl PRIVATE VT_TEST_MPFR)
endif()
if(VT_HAVE_MPI)
  add_test(NAME test_nccl_np2
           COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --allow-run-as-root -np 2 $<TARGET_FILE:test_nccl> --ranks 2
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set(_vt_mpiexec ${MPIEXEC_EXECUTABLE})
else()
  add_test(NAME test_nccl_np2 COMMAND test_nccl --ranks 2 WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set(_vt_mpiexec "")
endif()
add_test(NAME nccl_train COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/nccl_train.sh ${CMAKE_BINARY_DIR} "${_vt_mpiexec}"
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_nccl_np2 nccl_train PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}") # dist.cmake's
vt_test_timeout(test_nccl_np2 600) # skipped here (no GPU)
vt_test_timeout(nccl_train 600) # skipped here (no GPU)
