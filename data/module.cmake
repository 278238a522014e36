# data/module.cmake - the dataset library (MNIST IDX, UCI digits, CIFAR-10, text loaders; the user's
# safetensors, .npy and text files; dataset hash).
find_package(ZLIB REQUIRED)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
add_library(vt_data STATIC ${CMAKE_CURRENT_SOURCE_DIR}/data/vt_data.c ${CMAKE_CURRENT_SOURCE_DIR}/data/vt_data_file.c)
# jansson: the safetensors header of a user's data set (vt_data_file.c)
target_link_libraries(vt_data PUBLIC vt_common ZLIB::ZLIB PRIVATE PkgConfig::JANSSON)
# Default data root: <source dir>/data (overridden by $VT_DATA_DIR or an explicit root).
target_compile_definitions(vt_data PUBLIC VT_SOURCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
list(PREPEND VT_TEST_LIBS vt_data)
