# test_tc_gpu (tests/unit/test_tc_gpu.cu): the tensor-core emulator against the GPU's real mma.sync, bit for bit
# (docs/tensorcore.md "GPU check"). Built with the CUDA backend; exits 77 (skipped) without a GPU.
if(VT_HAVE_CUDA)
  add_executable(test_tc_gpu ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/test_tc_gpu.cu ${CMAKE_CURRENT_SOURCE_DIR}/backend/cuda/vt_tc_mma.cu)
  target_include_directories(test_tc_gpu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit)
  target_compile_options(test_tc_gpu PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:--fmad=false;-ftz=false;-Xcompiler=-ffp-contract=off,-fno-fast-math,-Wall,-Wextra>"
    "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${VT_WERROR}>>:-Werror=all-warnings;-Xcompiler=-Werror>")
  target_link_libraries(test_tc_gpu PRIVATE vt_kernels vt_common CUDA::cudart_static)
  add_test(NAME test_tc_gpu COMMAND test_tc_gpu WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(test_tc_gpu PROPERTIES SKIP_RETURN_CODE 77)
  vt_test_timeout(test_tc_gpu 600) # skipped here (no GPU)
endif()
