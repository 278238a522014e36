# The ONNX export checked from outside (tests/e2e/onnx_export.sh, tests/ref/onnx_check.py): python3-onnx's
# checker and a NumPy evaluator reproduce trainer eval's predictions on tiny MLP and CNN runs.
# Skipped (77) without python3-onnx and numpy, or in a build without ONNX support (arch/onnx.cmake).
add_test(NAME onnx_export COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/onnx_export.sh ${CMAKE_BINARY_DIR})
set_tests_properties(onnx_export PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(onnx_export 600) # quiet: 14 s
