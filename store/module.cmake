# store/module.cmake - the run directory: the SQLite run store (vt_store.c), checkpoint files
# (vt_checkpoint.c), the commitment file (vt_commitment.c) and their durable writes (vt_file.c);
# the safetensors writer for exports (vt_safetensors.c, its header built with jansson).
# Included from the top-level CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is the project root.
pkg_check_modules(SQLITE REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)

add_library(vt_store STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/store/vt_store.c
  ${CMAKE_CURRENT_SOURCE_DIR}/store/vt_checkpoint.c
  ${CMAKE_CURRENT_SOURCE_DIR}/store/vt_commitment.c
  ${CMAKE_CURRENT_SOURCE_DIR}/store/vt_file.c
  ${CMAKE_CURRENT_SOURCE_DIR}/store/vt_safetensors.c)
target_link_libraries(vt_store PUBLIC vt_common PkgConfig::SQLITE PkgConfig::ZSTD PRIVATE PkgConfig::JANSSON)

# Before the existing entries: static libraries must precede what they use.
list(PREPEND VT_TEST_LIBS vt_store)
