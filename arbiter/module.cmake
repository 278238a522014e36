# The arbiter program: command-line code only.
add_executable(arbiter ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/main.c)
target_link_libraries(arbiter PRIVATE vt_cliopts vt_game)
