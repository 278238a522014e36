# The dispute game: shared computations (vt_dispute), the engine (vt_game), the arbiter service.
add_library(vt_game STATIC ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/vt_dispute.c ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/vt_game.c
            ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/vt_arbiter.c ${CMAKE_CURRENT_SOURCE_DIR}/trainer/vt_serve.c
            ${CMAKE_CURRENT_SOURCE_DIR}/auditor/vt_challenge.c)
target_link_libraries(vt_game PUBLIC vt_proto vt_train vt_model vt_store vt_merkle vt_data vt_kernels vt_rlog vt_common
                      Threads::Threads)
add_executable(arbiter ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/main.c)
target_link_libraries(arbiter PRIVATE vt_game)
target_link_libraries(trainer PRIVATE vt_game)
target_link_libraries(auditor PRIVATE vt_game)
list(PREPEND VT_TEST_LIBS vt_game)
