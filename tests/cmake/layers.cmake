# The layer rule of docs/architecture.md: no #include runs against the layer order
# (scripts/check-layers.sh reads the order from the page's "<!-- layers" block).
add_test(NAME layers COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check-layers.sh ${CMAKE_CURRENT_SOURCE_DIR})
vt_test_timeout(layers 120) # quiet: 8.9 s
