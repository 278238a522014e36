# blas_info: which CBLAS (and which OpenBLAS kernel family) a process resolved; used by
# scripts/blas-matrix.sh to check that each configuration of the BLAS matrix is the one asked for.
add_executable(blas_info ${CMAKE_CURRENT_SOURCE_DIR}/tests/tools/blas_info.c)
target_link_libraries(blas_info PRIVATE PkgConfig::BLAS ${CMAKE_DL_LIBS})
