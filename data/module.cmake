# data/module.cmake - the dataset library (MNIST IDX and UCI digits loaders, dataset hash).
find_package(ZLIB REQUIRED)
add_library(vt_data STATIC ${CMAKE_CURRENT_SOURCE_DIR}/data/vt_data.c)
target_link_libraries(vt_data PUBLIC vt_common ZLIB::ZLIB)
# Default data root: <source dir>/data (overridden by $VT_DATA_DIR or an explicit root).
target_compile_definitions(vt_data PUBLIC VT_SOURCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
list(PREPEND VT_TEST_LIBS vt_data)
