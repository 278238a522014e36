# cli/module.cmake - the programs' one command-line parser (cli/vt_cli_opts.c: option tables of
# flags, strings, numbers, sizes, orders, choices and repeated values, --help generated from them,
# the programs' main and the keygen subcommand), above common/: it needs kernels/ (vt_order_parse)
# and merkle/ (vt_sign).
add_library(vt_cliopts STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cli/vt_cli_opts.c)
target_link_libraries(vt_cliopts PUBLIC vt_kernels vt_merkle)
