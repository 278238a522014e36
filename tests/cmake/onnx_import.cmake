# The ONNX front-end of the client's own model (arch/vt_onnx_graph.c; docs/models.md "The client's
# own model"): tests/ref/onnx_models.py exports a zoo with torch 1.13 (MLP, LeNet-5, ViT-tiny, a causal
# character LM at opsets 13 and 17, and a model with an unsupported operator); tests/e2e/onnx_import.sh
# reads each with vt_og_dump (tests/tools/vt_og_dump.c) and checks the folded graphs, the refusals and
# the canonical hashes. Skipped (77) without torch and onnx, or in a build without ONNX support.
add_executable(vt_og_dump ${PROJECT_SOURCE_DIR}/tests/tools/vt_og_dump.c)
target_link_libraries(vt_og_dump PRIVATE vt_arch vt_common)
target_include_directories(vt_og_dump PRIVATE ${PROJECT_SOURCE_DIR})
add_test(NAME onnx_import COMMAND bash ${PROJECT_SOURCE_DIR}/tests/e2e/onnx_import.sh ${CMAKE_BINARY_DIR})
set_tests_properties(onnx_import PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(onnx_import 300) # quiet: 5 s
# The client's own model end to end (tests/e2e/onnx_model.sh, docs/models.md): PyTorch models exported,
# trained with --model, checked against PyTorch FP64, audited in two orders and on 2 ranks, a poisoned
# operation convicted, unsupported and truncated files refused.
add_test(NAME onnx_model COMMAND bash ${PROJECT_SOURCE_DIR}/tests/e2e/onnx_model.sh ${CMAKE_BINARY_DIR}
                                 "$<$<BOOL:${VT_HAVE_MPI}>:${MPIEXEC_EXECUTABLE}>")
set_tests_properties(onnx_model PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${VT_MPI_TEST_ENV}")
vt_test_timeout(onnx_model 900)
