pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
add_library(vt_model STATIC ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_recipe.c
            ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_arch_common.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_arch_mlp.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_arch_resnet.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_arch_gpt.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_model.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_shard_state.c
            ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_probe.c
            ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_plain.c)
target_link_libraries(vt_model PUBLIC vt_ops vt_kernels vt_data vt_rlog vt_common PkgConfig::JANSSON)
list(PREPEND VT_TEST_LIBS vt_cuda vt_model vt_ops)
