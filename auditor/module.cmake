find_package(Threads REQUIRED)
add_library(vt_audit STATIC ${CMAKE_CURRENT_SOURCE_DIR}/auditor/vt_audit.c)
target_link_libraries(vt_audit PUBLIC vt_train vt_model vt_store vt_merkle vt_data vt_kernels vt_rlog vt_common
                      Threads::Threads ${CMAKE_DL_LIBS})
add_executable(auditor ${CMAKE_CURRENT_SOURCE_DIR}/auditor/main.c)
target_link_libraries(auditor PRIVATE vt_audit)
list(PREPEND VT_TEST_LIBS vt_audit)
