# backend/cuda/nccl.cmake - NCCL for the ranks' collectives with --backend cuda (backend/cuda/vt_nccl.h,
# docs/distributed.md "GPU ranks"). Looked for only beside the CUDA backend (VT_HAVE_CUDA): NCCL's
# header and library (in the CUDA toolkit's folders, /usr/local/cuda, or the system's). VT_NCCL=AUTO
# (the default) builds the engine where both are found, ON requires them, OFF leaves it out; without
# it `mpirun -np N trainer train --backend cuda` is refused with "this build has no NCCL".
# Included from the top-level CMakeLists.txt (CMAKE_CURRENT_SOURCE_DIR is the project root) before
# its "Backends compiled" line, which shows VT_NCCL_STATUS; vt_nccl_targets() after the targets.
set(VT_NCCL "AUTO" CACHE STRING "NCCL for data-parallel ranks on GPUs: AUTO (where found with CUDA), ON (required) or OFF")
set_property(CACHE VT_NCCL PROPERTY STRINGS AUTO ON OFF)
set(VT_HAVE_NCCL OFF)
if(NOT VT_HAVE_CUDA)
  set(VT_NCCL_STATUS "NCCL: not built (no CUDA backend)")
elseif(VT_NCCL STREQUAL "OFF")
  set(VT_NCCL_STATUS "NCCL: not built (VT_NCCL=OFF)")
else()
  set(_vt_nccl_roots ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR} /usr/local/cuda)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATHS ${_vt_nccl_roots} PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} PATHS ${_vt_nccl_roots} PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _vt_nccl_v REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3" _vt_nccl_ver "${_vt_nccl_v}")
    set(VT_HAVE_NCCL ON)
    set(VT_NCCL_STATUS "NCCL ${_vt_nccl_ver} (${NCCL_LIBRARY}): GPU ranks")
  elseif(VT_NCCL STREQUAL "ON")
    message(FATAL_ERROR "VT_NCCL=ON, but NCCL's nccl.h and libnccl were not found beside CUDA")
  else()
    set(VT_NCCL_STATUS "NCCL: not found (no nccl.h and libnccl beside CUDA): data-parallel ranks on the CPU only")
  endif()
endif()

# the engine in the plugin, vt_nccl_attach in every build
function(vt_nccl_targets)
  target_sources(vt_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/backend/cuda/vt_nccl_host.c)
  target_link_libraries(vt_cuda PUBLIC vt_dist)
  if(VT_HAVE_NCCL)
    target_compile_definitions(vt_cuda PRIVATE VT_HAVE_NCCL)
    target_sources(vt_cuda_plugin PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/backend/cuda/vt_nccl.c)
    target_include_directories(vt_cuda_plugin SYSTEM PRIVATE ${NCCL_INCLUDE_DIR})
    target_link_libraries(vt_cuda_plugin PRIVATE ${NCCL_LIBRARY})
  endif()
endfunction()
