# Robustness certificates of committed runs (library): sound bounds under floating point (IBP,
# CROWN, alpha-CROWN), the attack, the signed certificate (docs/certify.md).
add_library(vt_cert STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_bound.c ${CMAKE_CURRENT_SOURCE_DIR}/cert/vt_cert_run.c)
target_link_libraries(vt_cert PUBLIC vt_run vt_model vt_store vt_merkle vt_data vt_kernels vt_rlog vt_common m)
list(PREPEND VT_TEST_LIBS vt_cert)
