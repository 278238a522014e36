/* vt_mem.c - the memory a process may still use, and byte counts as text (vt_mem.h). */
#include "vt_mem.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

uint64_t vt_memory_resident(void)
{
    unsigned long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    int ok = f && fscanf(f, "%llu %llu", &size, &resident) == 2;
    if (f) fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? (uint64_t)resident * (uint64_t)page : 0;
}

uint64_t vt_memory_available(void)
{
    uint64_t avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[128];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (uint64_t)kb * 1024;
                break;
            }
        fclose(f);
    }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    if (!avail) {
        long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        if (pages > 0 && size > 0) avail = (uint64_t)pages * (uint64_t)size;
    }
#endif
    /* an address-space or data limit below it (ulimit -v / -d) is the real one */
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (!avail || rl.rlim_cur < avail))
        avail = (uint64_t)rl.rlim_cur;
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (!avail || rl.rlim_cur < avail))
        avail = (uint64_t)rl.rlim_cur;
    return avail ? avail : UINT64_MAX;
}

void vt_fmt_bytes(double b, char *buf, size_t cap)
{
    if (b >= 1024.0 * 1024 * 1024) snprintf(buf, cap, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) snprintf(buf, cap, "%.1f MiB", b / (1024.0 * 1024));
    else snprintf(buf, cap, "%.1f KiB", b / 1024.0);
}
