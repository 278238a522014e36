#!/usr/bin/env bash
# Progress lines (common/vt_cli.c vt_progress_*; issue 25 item 6): the trainer's and the auditor's
# show done/total, the last loss, steps/s and the time left; a pipe gets whole lines (one every
# VT_PROGRESS_INTERVAL seconds and one at the end, never "\r"), VT_PROGRESS_INTERVAL=0 none, a
# terminal one line rewritten in place. No assertion on how long anything takes: the interval is
# set small, and only the lines' form and the last line are checked. Usage: progress.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin progress "${1:-}" key
SMALL=(--set dataset=mnist-train --set subset=1000 --set 'layers=[784,32,10]' --set steps=30 --set batch=32
       --set checkpoint_every=10 --set state_hash_every=1)
LINE='^(step|replay) [0-9]+/30 \([0-9]+%\)  loss [0-9.]+( \(step [0-9]+\))?  [0-9.]+ steps/s  ETA ([0-9]+h[0-9]{2}m|[0-9]+m[0-9]{2}s|[0-9]+s|--)  elapsed [0-9hms]+$'

# a pipe: whole lines only, each of the documented form, the last one at 30/30
VT_PROGRESS_INTERVAL=0.001 "$B/trainer" train "$T/run" --key "$T/key" "${SMALL[@]}" >/dev/null 2>"$T/train.err" ||
  bad "train: $(tail -2 "$T/train.err")"
! grep -q $'\r' "$T/train.err" && ok || bad "a pipe got \\r"
[ "$(grep -c . "$T/train.err")" -ge 1 ] && ok || bad "no progress line on a pipe"
! grep -Ev "$LINE" "$T/train.err" | grep -q . && ok || bad "train progress: $(grep -Ev "$LINE" "$T/train.err" | head -2)"
tail -1 "$T/train.err" | grep -Eq '^step 30/30 \(100%\)  loss [0-9.]+  ' && ok || bad "train's last line: $(tail -1 "$T/train.err")"
VT_PROGRESS_INTERVAL=0.001 "$B/auditor" verify "$T/run" >/dev/null 2>"$T/audit.err" || bad "audit"
grep -v '^auditor: replaying' "$T/audit.err" >"$T/audit.lines"
! grep -Ev "$LINE" "$T/audit.lines" | grep -q . && ok || bad "audit progress: $(grep -Ev "$LINE" "$T/audit.lines" | head -2)"
tail -1 "$T/audit.lines" | grep -Eq '^replay 30/30 \(100%\)  loss [0-9.]+ \(step 30\)  ' && ok ||
  bad "audit's last line: $(tail -1 "$T/audit.lines")"
# VT_PROGRESS_INTERVAL=0: no progress on a pipe; --quiet: none either
VT_PROGRESS_INTERVAL=0 "$B/auditor" verify "$T/run" >/dev/null 2>"$T/q.err"
[ "$(grep -vc '^auditor: replaying' "$T/q.err")" = 0 ] && ok || bad "VT_PROGRESS_INTERVAL=0 printed: $(head -2 "$T/q.err")"
VT_PROGRESS_INTERVAL=0.001 "$B/auditor" verify "$T/run" --quiet >/dev/null 2>"$T/q.err"
[ ! -s "$T/q.err" ] && ok || bad "--quiet printed: $(head -2 "$T/q.err")"
# a terminal (script(1) gives the program one): one line rewritten with \r, ended once
if command -v script >/dev/null; then
  script -qec "\"$B/auditor\" verify \"$T/run\" >/dev/null" /dev/null >"$T/tty.out" 2>&1 </dev/null
  grep -q $'\rreplay 30/30 (100%)  loss' "$T/tty.out" && ok || bad "a terminal's line: $(od -c "$T/tty.out" | head -3)"
  [ "$(tr '\r' '\n' <"$T/tty.out" | grep -c '^replay ')" -ge 1 ] && [ "$(grep -c 'replay ' "$T/tty.out")" = 1 ] && ok ||
    bad "a terminal got more than one line of progress"
else
  echo "(no script(1): the terminal case is not checked)"
fi
vt_end
