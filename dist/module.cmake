# dist/module.cmake - the communicator of data-parallel runs (library vt_dist, depends on common
# only; docs/distributed.md). Open MPI is optional: VT_MPI=AUTO (the default) builds with it where
# find_package(MPI COMPONENTS C) finds it, ON requires it, OFF leaves it out; without it every run
# is one rank (vt_dist_init refuses a launch as one of several ranks, saying so).
# Included from the top-level CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is the project root.
set(VT_MPI "AUTO" CACHE STRING "MPI (Open MPI) for data-parallel runs: AUTO (where found), ON (required) or OFF")
set_property(CACHE VT_MPI PROPERTY STRINGS AUTO ON OFF)
set(VT_HAVE_MPI OFF)
if(NOT VT_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C)
  if(MPI_C_FOUND AND MPIEXEC_EXECUTABLE)
    set(VT_HAVE_MPI ON)
  elseif(VT_MPI STREQUAL "ON")
    message(FATAL_ERROR "VT_MPI=ON, but no MPI C library with mpiexec was found (Debian: libopenmpi-dev openmpi-bin)")
  endif()
endif()

add_library(vt_dist STATIC ${CMAKE_CURRENT_SOURCE_DIR}/dist/vt_dist.c ${CMAKE_CURRENT_SOURCE_DIR}/dist/vt_dist_thr.c)
find_package(Threads REQUIRED)
target_include_directories(vt_dist PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(vt_dist PUBLIC vt_common Threads::Threads)
if(VT_HAVE_MPI)
  target_compile_definitions(vt_dist PRIVATE VT_HAVE_MPI)
  target_link_libraries(vt_dist PRIVATE MPI::MPI_C)
  message(STATUS "MPI: built with MPI ${MPI_C_VERSION} (${MPIEXEC_EXECUTABLE}): data-parallel runs under mpirun")
else()
  if(VT_MPI STREQUAL "OFF")
    message(STATUS "MPI: not built (VT_MPI=OFF): one rank only")
  else()
    message(STATUS "MPI: not built (VT_MPI=${VT_MPI}, no MPI C library with mpiexec found; Debian: libopenmpi-dev openmpi-bin): one rank only")
  endif()
endif()

# The lowest of the modules: after every existing entry (static libraries precede what they use).
list(APPEND VT_TEST_LIBS vt_dist)
