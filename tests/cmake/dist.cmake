# tests/cmake/dist.cmake - the data-parallel tests (docs/distributed.md): test_dist (the
# communicator and distributed exact rounding) and test_dp_model (data-parallel steps) under `mpirun -np N` for N = 1..4, oversubscribed so
# that they run on two cores, as root in CI. The plain test_dist (one process, no MPI) is
# registered by tests.cmake. A build without MPI registers the same names, which skip (exit 77).
if(MPFR_FOUND)
  # the exact references of test_dist checked against MPFR too, as test_exact does
  target_link_libraries(test_dist PRIVATE PkgConfig::MPFR)
  target_compile_definitions(test_dist PRIVATE VT_TEST_MPFR)
endif()
set(VT_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    OMPI_MCA_btl_vader_single_copy_mechanism=none)
if(VT_SANITIZE)
  # Open MPI's start-up leaves allocations LeakSanitizer reports, many in components it has unloaded
  # by then (no module to suppress by): under mpirun leaks are not checked (memory errors are); the
  # plain test_dist runs the same rounding code in one process with leak checking on
  list(APPEND VT_MPI_TEST_ENV ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
endif()
# test_dp_model (the interpreter's data-parallel steps against one process's, vt_model_set_shard)
# likewise on 2..4 ranks; on one it is the plain test_dp_model
foreach(t IN ITEMS test_dist test_dp_model)
  foreach(np IN ITEMS 1 2 3 4)
    if(t STREQUAL "test_dp_model" AND np EQUAL 1)
      continue()
    endif()
    if(VT_HAVE_MPI)
      add_test(NAME ${t}_np${np}
               COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --allow-run-as-root -np ${np} $<TARGET_FILE:${t}> --ranks ${np}
               WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    else()
      add_test(NAME ${t}_np${np} COMMAND ${t} --ranks ${np} WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    endif()
    set_tests_properties(${t}_np${np} PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}")
    vt_test_timeout(${t}_np${np} 600) # quiet: 9.4 s at most (test_dp_model_np2)
  endforeach()
endforeach()
# `mpirun -np M auditor verify`: the segments split over the ranks, the one-process verdict and report
add_test(NAME audit_ranks COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/audit_ranks.sh ${CMAKE_BINARY_DIR}
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(audit_ranks PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}")
vt_test_timeout(audit_ranks 600) # quiet: 7.1 s
# --shard-state (tests/e2e/shard_state.sh): the sharded optimiser state signs the one-process commitment
if(VT_HAVE_MPI)
  add_test(NAME shard_state COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/shard_state.sh ${CMAKE_BINARY_DIR} ${MPIEXEC_EXECUTABLE})
else()
  add_test(NAME shard_state COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/shard_state.sh ${CMAKE_BINARY_DIR} "")
endif()
set_tests_properties(shard_state PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}")
vt_test_timeout(shard_state 600) # quiet: 23 s
# `mpirun -np N auditor certify --onnx ... --shard tp|fsdp` (tests/e2e/cert_shard.sh): the one-process certificate on 2 and 3 ranks
add_test(NAME cert_shard COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/cert_shard.sh ${CMAKE_BINARY_DIR}
                                 "$<$<BOOL:${VT_HAVE_MPI}>:${MPIEXEC_EXECUTABLE}>")
# TIMEOUT: about 60 mpirun start-ups, each minutes at worst on a loaded 2-core machine (a hang guard)
set_tests_properties(cert_shard PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}")
vt_test_timeout(cert_shard 1500) # quiet: 102 s
# the ranks agree before anything is written (tests/e2e/ranks_agree.sh, docs/distributed.md): options that
# change the collectives (--shard-state on some ranks only) and a build that computes other bits
# (trainer-test --cheat skew-kind:KIND, the known-answer probe) refused on every rank, naming the rank
add_test(NAME ranks_agree COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/ranks_agree.sh ${CMAKE_BINARY_DIR}
                                  "$<$<BOOL:${VT_HAVE_MPI}>:${MPIEXEC_EXECUTABLE}>")
set_tests_properties(ranks_agree PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}")
vt_test_timeout(ranks_agree 600)
