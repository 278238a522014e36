/* vt_mem.h - what the layers above lend from here about memory: the memory a process may still
 * use, and a byte count as text. */
#ifndef VT_MEM_H
#define VT_MEM_H

#include <stddef.h>
#include <stdint.h>

/* MemAvailable of /proc/meminfo (else the available physical pages), capped by RLIMIT_AS and
 * RLIMIT_DATA; UINT64_MAX when nothing can be told. */
uint64_t vt_memory_available(void);
/* The bytes this process has resident now (/proc/self/statm's resident pages); 0 when it cannot be told. */
uint64_t vt_memory_resident(void);
/* "20.60 GiB", "512.0 MiB" or "3.0 KiB". */
void vt_fmt_bytes(double bytes, char *buf, size_t cap);

#endif
