# The run drivers (library): training a recipe into a run directory, auditing one.
find_package(Threads REQUIRED)
add_library(vt_run STATIC ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_step.c ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_train.c ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_audit.c
            ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_export.c ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_onnx.c
            ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_init.c ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_torch.c
            ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_ranks.c ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_shares.c)
target_link_libraries(vt_run PUBLIC vt_cuda vt_model vt_store vt_merkle vt_data vt_kernels vt_rounding vt_dist vt_common
                      Threads::Threads ${CMAKE_DL_LIBS})
list(PREPEND VT_TEST_LIBS vt_run)
# the ONNX export's generated schema code and libprotobuf-c, where found (arch/onnx.cmake)
if(VT_HAVE_ONNX)
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/run/vt_onnx.c PROPERTIES COMPILE_DEFINITIONS VT_HAVE_ONNX=1)
  target_link_libraries(vt_run PRIVATE vt_onnx_pb)
endif()
