/* vt_file.c - durable file writes for store/ (vt_file.h). */
#include "vt_file_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_store.h"
#include "../common/vt_debug.h"

/* The test builds' fault hook (vt_store_set_fault_hook); NULL in production. */
static vt_store_fault_fn *g_fault_hook;

void vt_store_set_fault_hook(vt_store_fault_fn *fn) { g_fault_hook = fn; }

void vti_fault(const char *prefix, const char *name)
{
    if (!g_fault_hook) return;
    char point[96];
    if (prefix)
        snprintf(point, sizeof point, "%s.%s", prefix, name);
    else
        snprintf(point, sizeof point, "%s", name);
    g_fault_hook(point);
}

char *vti_str_printf(const char *fmt, ...)
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

vt_err vti_fsync_dir(const char *dir)
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

char *vti_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return vti_str_printf(".");
    if (slash == path) return vti_str_printf("/");
    return vti_str_printf("%.*s", (int)(slash - path), path);
}

static void dfile_release(vti_dfile *d)
{
    free(d->tmp);
    free(d->path);
    d->f = NULL;
    d->tmp = d->path = NULL;
    d->point = NULL;
}

void vti_dfile_abort(vti_dfile *d)
{
    if (d->f) fclose(d->f);
    if (d->tmp) unlink(d->tmp);
    dfile_release(d);
}

vt_err vti_dfile_open(vti_dfile *d, const char *path, int unique)
{
    static atomic_ulong counter;
    d->f = NULL;
    d->path = vti_str_printf("%s", path);
    if (unique) {
        unsigned long k = atomic_fetch_add(&counter, 1);
        d->tmp = vti_str_printf("%s.tmp-%ld-%lu", path, (long)getpid(), k);
    } else {
        d->tmp = vti_str_printf("%s.tmp", path);
    }
    if (!d->tmp || !d->path) {
        dfile_release(d);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory writing %s", path);
    }
    d->point = NULL;
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (unique ? O_EXCL : O_TRUNC);
    int fd = open(d->tmp, flags, 0666);
    if (fd < 0) {
        vt_err e = vt_set_error(VT_ERR_IO, "cannot create %s: %s", d->tmp, strerror(errno));
        dfile_release(d);
        return e;
    }
    d->f = fdopen(fd, "wb");
    if (!d->f) {
        vt_err e = vt_set_error(VT_ERR_IO, "cannot write %s: %s", d->tmp, strerror(errno));
        close(fd);
        vti_dfile_abort(d);
        return e;
    }
    return VT_OK;
}

vt_err vti_dfile_write(vti_dfile *d, const void *p, size_t n)
{
    VT_ASSERT(d->f != NULL && d->tmp != NULL); /* open, not yet committed or aborted */
    VT_RETURN_ERROR_IF(n && fwrite(p, 1, n, d->f) != n, VT_ERR_IO, "cannot write %s: %s", d->tmp,
                       strerror(errno));
    return VT_OK;
}

vt_err vti_dfile_commit(vti_dfile *d)
{
    int ok = fflush(d->f) == 0;
    if (ok && d->point) vti_fault(d->point, "tmp-written");
    ok = ok && fsync(fileno(d->f)) == 0;
    int werr = errno;
    FILE *f = d->f;
    d->f = NULL;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        werr = errno;
    }
    vt_err e = VT_OK;
    if (!ok) {
        e = vt_set_error(VT_ERR_IO, "cannot write %s: %s", d->tmp, strerror(werr));
    } else {
        if (d->point) vti_fault(d->point, "tmp-synced");
        if (rename(d->tmp, d->path) != 0)
            e = vt_set_error(VT_ERR_IO, "cannot rename %s to %s: %s", d->tmp, d->path, strerror(errno));
    }
    if (e) {
        vti_dfile_abort(d);
        return e;
    }
    if (d->point) vti_fault(d->point, "renamed");
    char *dir = vti_dir_of(d->path);
    e = dir ? vti_fsync_dir(dir) : vt_set_error(VT_ERR_NOMEM, "out of memory writing %s", d->path);
    free(dir);
    if (!e && d->point) vti_fault(d->point, "dir-synced");
    dfile_release(d);
    return e;
}

vt_err vti_write_durable_at(const char *path, const uint8_t *data, size_t len, const char *point)
{
    vti_dfile d;
    VT_FORWARD_IF_ERROR(vti_dfile_open(&d, path, 1));
    d.point = point;
    if (point) vti_fault(point, "tmp-created");
    size_t half = point ? len / 2 : 0;
    vt_err e = vti_dfile_write(&d, data, half);
    if (!e && point) {
        if (fflush(d.f) != 0) e = vt_set_error(VT_ERR_IO, "cannot write %s: %s", d.tmp, strerror(errno));
        if (!e) vti_fault(point, "tmp-half");
    }
    if (!e) e = vti_dfile_write(&d, len > half ? data + half : data, len - half);
    if (e) {
        vti_dfile_abort(&d);
        return e;
    }
    return vti_dfile_commit(&d);
}

vt_err vti_write_durable(const char *path, const uint8_t *data, size_t len)
{
    return vti_write_durable_at(path, data, len, NULL);
}
