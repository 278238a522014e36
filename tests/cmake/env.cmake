# The floating-point environment is checked, not assumed (common/vt_env.h).
# A CBLAS built with -ffast-math, selected through LD_LIBRARY_PATH: every program refuses it.
add_test(NAME env_fastmath COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e/env_fastmath.sh ${CMAKE_BINARY_DIR})
set_tests_properties(env_fastmath PROPERTIES SKIP_RETURN_CODE 77)
vt_test_timeout(env_fastmath 600) # quiet: 1.9 s
# CMake refuses fast-math, flush-to-zero and contraction flags in every compile and link flag
# variable: a configure of this source tree with such a flag fails naming it (configure only:
# it stops at the guard, before any package is looked for; nothing is built).
add_test(NAME env_cmake_guard COMMAND bash -c
  "t=$(mktemp -d /tmp/vt-envcm.XXXXXX); trap 'rm -rf $t' EXIT; st=0; \
   for v in CMAKE_EXE_LINKER_FLAGS=-ffast-math CMAKE_SHARED_LINKER_FLAGS=-Ofast CMAKE_MODULE_LINKER_FLAGS_RELEASE=-mdaz-ftz \
            CMAKE_STATIC_LINKER_FLAGS=-ffast-math CMAKE_C_FLAGS_DEBUG=-ffp-contract=fast CMAKE_C_FLAGS=-ffp-contract=on \
            CMAKE_C_FLAGS_MINSIZEREL=-funsafe-math-optimizations CMAKE_CXX_FLAGS=-ffinite-math-only \
            'CMAKE_CUDA_FLAGS=-O3 --use_fast_math' CMAKE_CUDA_FLAGS_RELWITHDEBINFO=--fmad=true \
            'CMAKE_CUDA_FLAGS=-Xcompiler=-O2,-ffast-math' CMAKE_C_FLAGS=-fcx-limited-range; do \
     rm -rf $t/b; out=$('${CMAKE_COMMAND}' -S '${CMAKE_CURRENT_SOURCE_DIR}' -B $t/b -DVT_CUDA=OFF \"-D$v\" 2>&1); rc=$?; \
     if [ $rc = 0 ] || ! printf '%s' \"$out\" | grep -q 'flags are forbidden in this' || \
        ! printf '%s' \"$out\" | grep -q \"\${v%%=*}=\"; then \
       echo \"FAIL: -D$v: exit $rc\"; printf '%s\\n' \"$out\" | tail -5; st=1; else echo \"refused: -D$v\"; fi; \
   done; \
   rm -rf $t/b; out=$('${CMAKE_COMMAND}' -S '${CMAKE_CURRENT_SOURCE_DIR}' -B $t/b -DVT_CUDA=OFF -DCMAKE_C_FLAGS=-fno-fast-math \
                     -DCMAKE_EXE_LINKER_FLAGS=-Wl,-O1 2>&1); \
   if printf '%s' \"$out\" | grep -q 'are forbidden'; then echo 'FAIL: -fno-fast-math refused'; st=1; \
   else echo 'accepted: -fno-fast-math, -Wl,-O1'; fi; exit $st")
vt_test_timeout(env_cmake_guard 600) # quiet: 9.2 s
