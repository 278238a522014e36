# arch/module.cmake - the architecture builders and the recipe (library vt_arch): a recipe validated
# and turned into its step program (vt_program_build). Below model/, which runs what they build.
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
add_library(vt_arch STATIC ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_recipe.c ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_arch_common.c
            ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_graph.c ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_graph_builtin.c
            ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_graph_onnx.c
            ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_arch_resnet.c
            ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_arch_gpt.c ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_onnx_graph.c)
target_link_libraries(vt_arch PUBLIC vt_ops vt_kernels vt_data vt_rounding vt_common PkgConfig::JANSSON)
# ONNX support where found (arch/onnx.cmake): vt_onnx_pb, linked into vt_arch for the front-end of the
# client's own model (vt_onnx_graph.c); run/ and cert/ link it too
include(${CMAKE_CURRENT_SOURCE_DIR}/arch/onnx.cmake)
