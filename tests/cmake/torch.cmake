# `trainer export --layout torch` checked from PyTorch (tests/e2e/torch_layout.sh, tests/ref/torch_models.py;
# issue 25 item 5): MLP, CNN and GPT exports load with load_state_dict(strict=True) into torch.nn
# modules written from the docs, hold the project's values bit for bit, reproduce trainer eval's
# predictions exactly and the GPT's loss within 1e-6. Skipped (77) only when no python3 imports torch.
add_test(NAME torch_layout COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/torch_layout.sh ${CMAKE_BINARY_DIR})
set_tests_properties(torch_layout PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(torch_layout 600) # quiet: 55 s
