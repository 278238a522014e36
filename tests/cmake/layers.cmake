# The layer rule of docs/architecture.md: no #include runs against the layer order
# (scripts/check-layers.sh reads the order from the page's "<!-- layers" block).
add_test(NAME layers COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check-layers.sh ${CMAKE_CURRENT_SOURCE_DIR})
vt_test_timeout(layers 120) # quiet: 8.9 s
# Every path and code name the docs cite resolves (scripts/check-doc-refs.py: README.md, docs/*.md).
add_test(NAME doc_refs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check-doc-refs.py ${CMAKE_CURRENT_SOURCE_DIR})
vt_test_timeout(doc_refs 120) # quiet: 0.3 s
