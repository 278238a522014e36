/* vt_report.h - `trainer report`: one self-contained HTML page about a run directory (docs/report.md):
 * loss and learning-rate curves, log entries per step, the evaluation figure of the final checkpoint
 * (what `trainer eval` prints by default: accuracy, or a text model's validation loss, naming the data),
 * checkpoints, the Merkle root and the commitment's signature, and the audit verdicts found beside
 * the run. Inline CSS and SVG only: no
 * script, no font, no address outside the page (a Content-Security-Policy of default-src 'none'). */
#ifndef VT_REPORT_H
#define VT_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

/* Curves of more steps than this are drawn with one point per bucket of steps (the bucket's mean). */
#define VT_REPORT_MAX_POINTS 2000
/* The per-step table lists at most this many steps (the first ones), the checkpoint table and the
 * audit reports at most these many. */
#define VT_REPORT_MAX_TABLE_STEPS 5000
#define VT_REPORT_MAX_CHECKPOINT_ROWS 1000
#define VT_REPORT_MAX_AUDITS 64
/* An audit report larger than this is not read (the auditor writes about 2 KiB). */
#define VT_REPORT_MAX_AUDIT_BYTES (1u << 20)
/* A run store claiming more steps than this is refused (VT_ERR_LIMIT). */
#define VT_REPORT_MAX_STEPS (1ull << 26)

typedef struct {
    const char *run_dir;
    const char *out_path;            /* "-": standard output */
    const char *pubkey_path;         /* optional: the trainer key the commitment must be signed by */
    const char *const *audit_paths;  /* optional: audit reports (auditor --report) given by the user */
    size_t n_audit_paths;
    int no_search;                   /* 1: only audit_paths, no reports searched beside the run */
    const char *data_root;           /* the evaluation's data set root (NULL: $VT_DATA_DIR or data/) */
    int no_eval;                     /* 1: no evaluation figure (the final checkpoint is not evaluated) */
} vt_report_opts;

typedef struct {
    uint64_t steps;        /* step records read (step 0 included) */
    int committed;         /* 1: a commitment file was read */
    int signature_ok;      /* 1: its signature verifies (and is by --pubkey's key when given) */
    int root_ok;           /* 1: the stored leaves give the signed root */
    size_t audits;         /* audit reports shown */
    size_t problems;       /* things missing or wrong, each listed on the page */
} vt_report_result;

/* Writes the page (atomically: a temporary file renamed to out_path). A run whose store cannot be
 * opened is an error (VT_ERR_IO / VT_ERR_FORMAT / VT_ERR_DB: nothing is written); everything else
 * missing or damaged (the manifest's recipe, step records, the commitment, checkpoint files, audit
 * reports) is said on the page, in its "What is missing" section, and counted in res->problems. */
vt_err vt_report_write(const vt_report_opts *o, vt_report_result *res) VT_WARN_UNUSED;

/* HTML-escapes s[0..n) into out (text and attribute values alike: & < > " ' escaped, control
 * characters and invalid UTF-8 replaced by U+FFFD). Returns the characters written, out NUL-terminated
 * (cap >= 1; cut short, at a whole character, when cap is too small). For the tests. */
size_t vt_report_escape(const char *s, size_t n, char *out, size_t cap);

#endif
