# The arbiter program: command-line code only, one file per subcommand (arbiter/main.c dispatches).
add_executable(arbiter ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/main.c ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/cmd_serve.c
               ${CMAKE_CURRENT_SOURCE_DIR}/arbiter/cmd_check.c)
target_link_libraries(arbiter PRIVATE vt_cliopts vt_game)
