# `trainer report` (run/vt_report.c): a run directory as one self-contained HTML page. Its own library,
# on top of vt_run's store, Merkle tree and recipe; jansson reads the manifest and the audit reports.
add_library(vt_report STATIC ${CMAKE_CURRENT_SOURCE_DIR}/run/vt_report.c)
target_link_libraries(vt_report PUBLIC vt_run vt_store vt_merkle vt_model vt_common PkgConfig::JANSSON m)
