# store/module.cmake - the run directory: SQLite run store, checkpoint and commitment files.
# Included from the top-level CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is the project root.
pkg_check_modules(SQLITE REQUIRED IMPORTED_TARGET sqlite3)

add_library(vt_store STATIC ${CMAKE_CURRENT_SOURCE_DIR}/store/vt_store.c)
target_link_libraries(vt_store PUBLIC vt_common PkgConfig::SQLITE PkgConfig::ZSTD)

# Before the existing entries: static libraries must precede what they use.
list(PREPEND VT_TEST_LIBS vt_store)
