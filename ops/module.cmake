# ops/: the operation kinds (the list vt_kinds.h, one file per family), the step program's tables
# and the Philox counter RNG; below model/ (the builders and the interpreter).
add_library(vt_ops STATIC ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_ops.c ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_program.c
            ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_philox.c ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_loader.c
            ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_chain.c ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_reduce.c
            ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_loss.c ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_act.c
            ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_rowwise.c ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_move.c
            ${CMAKE_CURRENT_SOURCE_DIR}/ops/vt_fam_gemm.c)
target_link_libraries(vt_ops PUBLIC vt_kernels vt_data vt_rounding vt_common)
