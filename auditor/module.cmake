# The auditor program: command-line code only.
add_executable(auditor ${CMAKE_CURRENT_SOURCE_DIR}/auditor/main.c)
target_link_libraries(auditor PRIVATE vt_cliopts vt_game vt_run vt_cert)
