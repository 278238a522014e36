# model/module.cmake - the interpreter (library vt_model): runs the program arch/ builds (vt_model*.c: set-up
# and run, memory plan, hashes, evaluation, text); the sharded
# optimiser state, the known-answer probe, the plain FP32/FP64 baseline.
add_library(vt_model STATIC ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_model.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_model_mem.c
            ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_model_hash.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_model_eval.c
            ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_model_text.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_shard_state.c
            ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_probe.c ${CMAKE_CURRENT_SOURCE_DIR}/model/vt_plain.c)
target_link_libraries(vt_model PUBLIC vt_arch vt_ops vt_kernels vt_data vt_rounding vt_common)
list(PREPEND VT_TEST_LIBS vt_cuda vt_model vt_arch vt_ops)
