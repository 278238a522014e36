/* vt_init.h - the initial state from a safetensors file: `trainer train --init FILE` and the auditor's
 * replay of such a run (docs/format.md "Initial state from a file"). */
#ifndef VT_INIT_H
#define VT_INIT_H

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "../model/vt_model.h"

#define VT_INIT_FILE "init.safetensors" /* the copy of the file a run directory keeps */
#define VT_INIT_LAYOUT_FILE "init.layout" /* beside it when the file is in PyTorch's layout ("torch"):
                                           * --resume reads it in the same layout (the manifest says
                                           * which, so a wrong note only makes the resume refuse) */
/* How --init's file is laid out: auto (PyTorch's when its metadata says vt.layout = torch, else the
 * project's), the project's (`trainer export`), or PyTorch's (a state_dict: run/vt_torch.h) */
enum { VT_INIT_AUTO = 0, VT_INIT_PROJECT = 1, VT_INIT_TORCH = 2 };

/* Sets m's state of step 0 from f (in PyTorch's layout when m->rcp.init_torch: vt_torch.h, the names
 * and shapes of `trainer export --layout torch`): every parameter and buffer of the program's state
 * (the tensors `trainer export` writes) must be in f, by name, as F32 with the program's shape and finite values;
 * the optimiser's state tensors (`export --optimizer`) may be there too, else they keep the recipe's
 * initial values (zero); any other tensor is refused. Errors name the file and every missing, extra or
 * mis-shaped tensor (VT_ERR_ARG: the file does not fit the recipe), or a value's offset (VT_ERR_FORMAT);
 * nothing is changed then. */
vt_err vt_init_apply(vt_model *m, const vt_st_file *f) VT_WARN_UNUSED;

/* The trainer: reads path (NULL: on resume, RUN_DIR/init.safetensors when the run has one, else
 * nothing) into *f and records its SHA-256 and layout in rcp (has_init, init_sha256, init_torch). */
vt_err vt_init_prepare(vt_recipe *rcp, const char *path, const char *resume_dir, int layout,
                       vt_st_file *f) VT_WARN_UNUSED;

/* The auditor: the file the run's manifest names (rcp->init_sha256), read from `given` or else from
 * RUN_DIR/init.safetensors. *why: 0 ok; 1 absent (cannot check); 2 another file than the manifest's
 * (rejected); the message (vt_errmsg) says which. */
vt_err vt_init_for_replay(const vt_recipe *rcp, const char *given, const char *run_dir, vt_st_file *f,
                          int *why) VT_WARN_UNUSED;

#endif
