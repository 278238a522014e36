# arch/onnx.cmake - ONNX support, optional at build time: the front-end of the client's own model
# (arch/vt_onnx_graph.c, in vt_arch), the ONNX export (run/vt_onnx.c) and the certifier's ONNX reader
# (cert/vt_cert_onnx.c) all read or write through the generated vt_onnx_pb. The ONNX schema is
# Debian's libonnx-dev (/usr/include/onnx/onnx.proto); protoc-c (protobuf-c-compiler) generates its
# C structures and serialisers at build time, linked with libprotobuf-c (libprotobuf-c-dev).
# VT_ONNX=AUTO (default): built where all three are found; ON: required; OFF: left out. Without
# it, `trainer export --format onnx` exits 2: "this trainer was built without ONNX support".
# Without it, vt_og_read returns VT_ERR_UNSUPPORTED "built without ONNX support".
# Included from arch/module.cmake (CMAKE_CURRENT_SOURCE_DIR is the project root); run/module.cmake
# and cert/module.cmake link vt_onnx_pb into their libraries when VT_HAVE_ONNX is set.
set(VT_ONNX "AUTO" CACHE STRING "ONNX export: AUTO (where protoc-c, libprotobuf-c and onnx.proto are found), ON or OFF")
set_property(CACHE VT_ONNX PROPERTY STRINGS AUTO ON OFF)
set(VT_HAVE_ONNX OFF)
if(NOT VT_ONNX STREQUAL "OFF")
  find_program(VT_PROTOC_C protoc-c)
  pkg_check_modules(PROTOBUF_C IMPORTED_TARGET libprotobuf-c)
  find_file(VT_ONNX_PROTO onnx.proto PATHS /usr/include/onnx /usr/local/include/onnx NO_DEFAULT_PATH)
  if(VT_PROTOC_C AND PROTOBUF_C_FOUND AND VT_ONNX_PROTO)
    set(VT_HAVE_ONNX ON)
  elseif(VT_ONNX STREQUAL "ON")
    message(FATAL_ERROR "VT_ONNX=ON, but protoc-c (${VT_PROTOC_C}), libprotobuf-c (${PROTOBUF_C_FOUND}) or "
                        "onnx.proto (${VT_ONNX_PROTO}) was not found: apt-get install libonnx-dev protobuf-c-compiler "
                        "libprotobuf-c-dev")
  endif()
endif()
if(VT_HAVE_ONNX)
  set(_vt_onnx_gen ${CMAKE_BINARY_DIR}/onnx_gen)
  add_custom_command(
    OUTPUT ${_vt_onnx_gen}/onnx.pb-c.c ${_vt_onnx_gen}/onnx.pb-c.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_vt_onnx_gen}
    COMMAND ${CMAKE_COMMAND} -E copy ${VT_ONNX_PROTO} ${_vt_onnx_gen}/onnx.proto
    COMMAND ${VT_PROTOC_C} --proto_path=${_vt_onnx_gen} --c_out=${_vt_onnx_gen} ${_vt_onnx_gen}/onnx.proto
    DEPENDS ${VT_ONNX_PROTO}
    COMMENT "protoc-c: the ONNX schema (${VT_ONNX_PROTO}) to C"
    VERBATIM)
  # generated code: compiled without the project's warning flags (not ours to fix)
  add_library(vt_onnx_pb STATIC ${_vt_onnx_gen}/onnx.pb-c.c)
  target_compile_options(vt_onnx_pb PRIVATE -w)
  target_include_directories(vt_onnx_pb PUBLIC ${_vt_onnx_gen})
  target_link_libraries(vt_onnx_pb PUBLIC PkgConfig::PROTOBUF_C)
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/arch/vt_onnx_graph.c PROPERTIES COMPILE_DEFINITIONS VT_HAVE_ONNX=1)
  target_link_libraries(vt_arch PRIVATE vt_onnx_pb)
  message(STATUS "ONNX export: built (${VT_PROTOC_C}, ${VT_ONNX_PROTO}, libprotobuf-c ${PROTOBUF_C_VERSION})")
else()
  message(STATUS "ONNX export: not built (VT_ONNX=${VT_ONNX}; needs libonnx-dev, protobuf-c-compiler, libprotobuf-c-dev)")
endif()
