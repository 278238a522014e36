# Robustness certificates (library): sound bounds under floating point (IBP, CROWN, alpha-CROWN),
# the attack, the signed certificate (docs/certify.md); committed MLP runs, and ONNX networks with
# VNN-LIB properties (the ONNX reader uses arch/onnx.cmake's generated vt_onnx_pb where it is built).
add_library(vt_cert STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_bound.c ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_run.c
            ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_io.c ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_vnnlib.c
            ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_onnx.c ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_spec.c
            ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_graph.c ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_cnn.c
            ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_bab.c)
target_link_libraries(vt_cert PUBLIC vt_run vt_model vt_store vt_merkle vt_data vt_kernels vt_rounding vt_common m)
if(VT_HAVE_ONNX)
  target_link_libraries(vt_cert PRIVATE vt_onnx_pb)
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_onnx.c PROPERTIES COMPILE_DEFINITIONS VT_HAVE_ONNX=1)
endif()
list(PREPEND VT_TEST_LIBS vt_cert)
