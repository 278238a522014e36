/* blas_info - prints which CBLAS this process resolved, so that scripts/blas-matrix.sh can
 * check that LD_LIBRARY_PATH and OPENBLAS_CORETYPE did select what it asked for:
 *
 *   library  /usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3   (real path)
 *   impl     openblas | blis | reference
 *   core     Haswell                                  (OpenBLAS only: the kernel family in use)
 *
 * Exit status 0, or 2 when cblas_dgemm cannot be found. */
#include <cblas.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    /* a real reference, so the link keeps libblas.so.3 whatever --as-needed says */
    void (*volatile ref)(void) = (void (*)(void))cblas_dgemm;
    void *f = dlsym(RTLD_DEFAULT, "cblas_dgemm");
    (void)ref;
    Dl_info di;
    if (!f || !dladdr(f, &di) || !di.dli_fname) {
        fprintf(stderr, "blas_info: cblas_dgemm not found in this process\n");
        return 2;
    }
    char real[PATH_MAX];
    printf("library  %s\n", realpath(di.dli_fname, real) ? real : di.dli_fname);
    char *(*corename)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
    int is_blis = dlsym(RTLD_DEFAULT, "bli_info_get_version_str") != NULL;
    printf("impl     %s\n", corename ? "openblas" : is_blis ? "blis" : "reference");
    if (corename) printf("core     %s\n", corename());
    return 0;
}
