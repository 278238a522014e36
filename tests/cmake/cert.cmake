# The certificate tests: test_cert.c (a ctest of its own, from the glob) and tests/cert.sh (a trained
# run certified, re-checked in another order, every byte of the certificate altered and rejected).
# The test build auditor-test is defined after the fragments: it gets vt_cert at the end of the
# directory.
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL target_link_libraries auditor-test PRIVATE vt_cert)
add_test(NAME cert COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cert.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cert PROPERTIES TIMEOUT 600)
if(TARGET test_cert AND MPFR_FOUND)
  target_link_libraries(test_cert PRIVATE PkgConfig::MPFR)
  target_compile_definitions(test_cert PRIVATE VT_HAVE_MPFR)
endif()
