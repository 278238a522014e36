# arch/module.cmake - the architecture builders and the recipe (library vt_arch): a recipe validated
# and turned into its step program (vt_program_build). Below model/, which runs what they build.
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
add_library(vt_arch STATIC ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_recipe.c ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_arch_common.c
            ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_graph.c ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_arch_resnet.c
            ${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_arch_gpt.c)
target_link_libraries(vt_arch PUBLIC vt_ops vt_kernels vt_data vt_rounding vt_common PkgConfig::JANSSON)
