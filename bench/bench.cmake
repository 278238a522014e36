# Benchmarks: every bench/bench_*.c is one executable in the build directory, linked against the
# project libraries. They are not tests (CI does not run them); scripts/bench.sh builds and runs them.
file(GLOB VT_BENCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_*.c)
foreach(src IN LISTS VT_BENCH_SOURCES)
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE vt_kernels vt_rounding vt_common ${M_LIB} ${CMAKE_DL_LIBS})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
endforeach()

# ---- bench_step (training-step benchmark): also needs the model, trainer and store libraries.
# It runs the real trainer and auditor binaries for the parallel-audit figure, so build them too.
if(TARGET bench_step)
  target_link_libraries(bench_step PRIVATE vt_run vt_model vt_store vt_merkle vt_data)
  add_dependencies(bench_step trainer auditor)
endif()

# ---- bench_cnn (the residual CNN's step; bench/torch_resnet.py for the PyTorch figure)
if(TARGET bench_cnn)
  target_link_libraries(bench_cnn PRIVATE vt_run vt_model vt_data)
endif()

# ---- bench_cuda (the CUDA backend on a GPU; skips without one)
if(TARGET bench_cuda)
  target_link_libraries(bench_cuda PRIVATE vt_run vt_model vt_data vt_cuda)
endif()

# ---- bench_dp (data-parallel steps under mpirun: bytes, the exact phase, step time; docs/benchmarks.md)
if(TARGET bench_dp)
  target_link_libraries(bench_dp PRIVATE vt_model vt_data vt_dist)
endif()

# ---- bench_tc_grant (the arbiter's work grant per step in each GEMM arithmetic; bench/tc_grant.sh)
if(TARGET bench_tc_grant)
  target_link_libraries(bench_tc_grant PRIVATE vt_cliopts vt_game vt_model)
endif()

# ---- bench_verify_step (the dispute game's yardstick: one verifiable step of a run's model; bench/bench_dispute.sh)
if(TARGET bench_verify_step)
  target_link_libraries(bench_verify_step PRIVATE vt_run vt_model vt_store vt_merkle vt_data)
endif()
