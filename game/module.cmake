# The dispute game (library): what every party computes alike (vt_dispute), the engine
# (vt_game), and each party's side: the arbiter service, the trainer's server, the auditor's
# challenge.
add_library(vt_game STATIC ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_dispute.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_game.c
            ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_arbiter.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_serve.c
            ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_challenge.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_arith.c)
target_link_libraries(vt_game PUBLIC vt_proto vt_run vt_model vt_store vt_merkle vt_data vt_kernels vt_rounding vt_common
                      Threads::Threads)
list(PREPEND VT_TEST_LIBS vt_game)
