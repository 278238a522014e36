# cli/module.cmake - what the three programs' command lines share beyond common/vt_cli.c: the
# option tables (numbers and evaluation orders) and the keygen subcommand, which need kernels/
# (vt_order_parse) and merkle/ (vt_sign), above common/.
add_library(vt_cliopts STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cli/vt_cli_opts.c)
target_link_libraries(vt_cliopts PUBLIC vt_kernels vt_merkle)
