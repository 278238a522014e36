/* vt_dist_thr.h - internal to dist/: the shared-memory group behind vt_dist_threads_open (vt_dist.h),
 * n threads of one process, each one rank, whose collectives are copies between their buffers.
 * Each thread holds one end (its rank); a collective is entered by every end, as MPI's are, and
 * waits at a barrier of the group. vti_thr_stop releases every end waiting and fails every later
 * collective, so a thread that stops alone never leaves the others waiting. */
#ifndef VT_DIST_THR_H
#define VT_DIST_THR_H

#include "vt_dist.h"

typedef struct vti_thr vti_thr;

/* n ends of a new group (ends[0..n)); each end is released by the engine's close */
vt_err vti_thr_group(int n, vti_thr **ends) VT_WARN_UNUSED;
/* the engine of an end: the data collectives (name "threads", impl the end) */
void vti_thr_engine(vti_thr *t, vt_dist_engine *e);
vt_err vti_thr_barrier(vti_thr *t) VT_WARN_UNUSED;
/* as vt_dist_agree ("rank R of N: ...", the thread share R) */
vt_err vti_thr_agree(vti_thr *t, vt_err mine, int *failed_rank) VT_WARN_UNUSED;
/* the group stopped by end t with the message why (collectives fail from now on) */
void vti_thr_stop(vti_thr *t, const char *why);

#endif
