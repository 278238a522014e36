# The trainer program: command-line code only (run/, game/ hold the logic).
add_executable(trainer ${CMAKE_CURRENT_SOURCE_DIR}/trainer/main.c)
target_link_libraries(trainer PRIVATE vt_cliopts vt_game vt_run)
