/* vt_file.c - durable file writes for store/ (vt_file.h). */
#include "vt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *vt__str_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* fsync a directory so that a rename or a creation in it is durable. */
vt_err vt__fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) VT_RETURN_ERROR(VT_ERR_IO, "cannot open directory %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    /* Some file systems do not support fsync on directories; that is not an error. */
    if (rc != 0 && e != EINVAL && e != EROFS)
        VT_RETURN_ERROR(VT_ERR_IO, "cannot fsync directory %s: %s", dir, strerror(e));
    return VT_OK;
}

char *vt__dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return vt__str_printf(".");
    if (slash == path) return vt__str_printf("/");
    return vt__str_printf("%.*s", (int)(slash - path), path);
}

/* Write a whole file atomically: temp file in the same directory, fwrite, fflush, fsync,
 * rename over the target, fsync the directory. */
vt_err vt__write_durable(const char *path, const uint8_t *data, size_t len)
{
    static atomic_ulong counter;
    unsigned long k = atomic_fetch_add(&counter, 1);
    char *tmp = vt__str_printf("%s.tmp-%ld-%lu", path, (long)getpid(), k);
    char *dir = vt__dir_of(path);
    vt_err e = VT_OK;
    if (!tmp || !dir) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory writing %s", path);
        goto done;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        e = vt_set_error(VT_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto done;
    }
    int ok = (len == 0 || fwrite(data, 1, len, f) == len) && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int werr = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        werr = errno;
    }
    if (!ok) {
        e = vt_set_error(VT_ERR_IO, "cannot write %s: %s", tmp, strerror(werr));
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        e = vt_set_error(VT_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        goto done;
    }
    e = vt__fsync_dir(dir);
done:
    free(tmp);
    free(dir);
    return e;
}
