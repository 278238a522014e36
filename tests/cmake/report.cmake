# `trainer report` rendered in headless Chromium (tests/e2e/report.sh): the page's curves, verdict, root and
# signature checked in Chromium's DOM, a screenshot kept in BUILD_DIR/report/ (a CI artefact); hostile
# and partial run directories. Skips (77) only without Chromium.
add_test(NAME report COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/report.sh ${CMAKE_BINARY_DIR})
set_tests_properties(report PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(report 900) # quiet: 13 s
