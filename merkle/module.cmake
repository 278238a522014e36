# merkle/module.cmake - RFC 9162 Merkle tree and Ed25519 signatures (libsodium).
# Included from the top-level CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is the project root.
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)

add_library(vt_merkle STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/merkle/vt_merkle.c
  ${CMAKE_CURRENT_SOURCE_DIR}/merkle/vt_sign.c)
target_link_libraries(vt_merkle PUBLIC vt_common PkgConfig::SODIUM)

# Before the existing entries: static libraries must precede what they use.
list(PREPEND VT_TEST_LIBS vt_merkle)
