# The trainer program: command-line code only (run/, game/ hold the logic).
include(${CMAKE_CURRENT_SOURCE_DIR}/run/report.cmake) # vt_report: `trainer report`
add_executable(trainer ${CMAKE_CURRENT_SOURCE_DIR}/trainer/main.c)
target_link_libraries(trainer PRIVATE vt_cliopts vt_game vt_run vt_report)
