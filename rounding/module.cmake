# rounding/module.cmake - the rounding layer (library vt_rounding): bounds, the exact evaluation
# (vt_xacc), the tight bound, the per-element rules, exact rounding, the rounding context and
# vt_round's dispatch, log rounding's record and judge, the GEMM epilogue's host side. The step log
# itself (entries, records, codec) is rounding_log/ (vt_rlog), below it.
# Included from the top-level CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is the project root.
add_library(vt_rounding STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_bound.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_elem.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_exact.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_quot.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_tight.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_eval.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_round_exact.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_round_dist.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_round.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_round_log.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_epilogue.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rounding/vt_epi_finish.c)
target_include_directories(vt_rounding PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  # the rounding filter loops have run-time trip counts: let GCC weigh vectorising them
  target_compile_options(vt_rounding PRIVATE -fvect-cost-model=dynamic)
endif()
# vt_round_dist.c: distributed exact rounding over the communicator of dist/ (vt_dist, dist/module.cmake)
target_link_libraries(vt_rounding PUBLIC vt_rlog vt_dist vt_common ${M_LIB})
