# --threads N: the same commitment for 1, 2 and 3 threads (MLP, CNN, GPT; 2 and 3 as shares of the
# batch, the per-operation split where the batch does not split) and for mpirun -np 2 where the build
# has MPI; audits with 2 (tests/e2e/threads.sh)
if(VT_HAVE_MPI)
  set(VT_THREADS_MPIEXEC ${MPIEXEC_EXECUTABLE})
else()
  set(VT_THREADS_MPIEXEC "")
endif()
add_test(NAME threads COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/threads.sh ${CMAKE_BINARY_DIR}
         "${VT_THREADS_MPIEXEC}" WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
vt_test_timeout(threads 900) # quiet: 11 s
