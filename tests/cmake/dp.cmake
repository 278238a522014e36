# tests/cmake/dp.cmake - data-parallel training end to end (tests/e2e/dp.sh, docs/distributed.md
# "Training on N ranks"): the MLP, the residual CNN and the GPT under `mpirun -np N`, N = 1..4
# (oversubscribed on two cores, as root in CI), sign the one-process commitment; the 4-rank runs
# audit VERIFIED in one process; refusals, a rank with an altered state, a killed rank and resume.
# A build without MPI registers the test, which skips (exit 77).
if(VT_HAVE_MPI)
  set(VT_DP_MPIEXEC ${MPIEXEC_EXECUTABLE})
else()
  set(VT_DP_MPIEXEC "")
endif()
add_test(NAME dp COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/dp.sh ${CMAKE_BINARY_DIR} "${VT_DP_MPIEXEC}")
set(VT_DP_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    OMPI_MCA_btl_vader_single_copy_mechanism=none)
if(VT_SANITIZE)
  # as for test_dist under mpirun (tests/cmake/dist.cmake): Open MPI's start-up allocations are not
  # reported as leaks (memory errors still are); the one-process runs are leak-checked by e2e
  list(APPEND VT_DP_ENV ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
endif()
set_tests_properties(dp PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_DP_ENV}")
vt_test_timeout(dp 900) # quiet: 90 s
