# The dispute game (library): what every party computes alike (vt_dispute), the engine (vt_game:
# play, the state derivation, the costs), and each party's side: the arbiter service, the trainer's
# server, the auditor's challenge.
add_library(vt_game STATIC ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_dispute.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_game.c
            ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_game_state.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_game_cost.c
            ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_arith.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_arbiter.c
            ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_arbiter_admit.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_arbiter_check.c
            ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_serve.c ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_serve_jobs.c
            ${CMAKE_CURRENT_SOURCE_DIR}/game/vt_challenge.c)
target_link_libraries(vt_game PUBLIC vt_proto vt_run vt_model vt_store vt_merkle vt_data vt_kernels vt_rounding vt_common
                      Threads::Threads)
list(PREPEND VT_TEST_LIBS vt_game)
