#!/usr/bin/env bash
# Log rounding end to end, with the real programs (issue 21, findings 13 and 14):
#   - one state, one log (manifest format 5, docs/rounding.md 5): trainers of other orders commit
#     the same bytes, every auditor order verifies;
#   - a trainer that pads its log (entries on elements whose result is forced) and commits
#     consistently is refused at the first padded entry, naming step, operation and element; the
#     same run labelled format 4 (whose rule accepted such entries) still verifies, and so does an
#     honest run labelled format 4 (older runs stay readable); an interrupted format-4 run resumes;
#   - `trainer train --resume` on a finished run says so, changes nothing and prints the stored
#     run's figures (final loss, log size per step).
# Usage: e2e_log.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin e2e_log "${1:-}" key
TAMPER="$B/vt_tamper"
SMALL=(--set dataset=mnist-train --set subset=2000 --set 'layers=[784,64,10]' --set steps=12 --set batch=64
       --set lr=0.1 --set checkpoint_every=5 --set state_hash_every=1 --set rounding=log)
manifest() { sqlite3 "$1/run.db" "SELECT CAST(value AS TEXT) FROM meta WHERE key = 'manifest'"; }

"$TRAINER" train "$T/a" --key "$T/key" "${SMALL[@]}" --quiet >"$T/a.out" || bad "train"
manifest "$T/a" | grep -q '"format":"vt-manifest-5"' && ok || bad "the manifest is not format 5: $(manifest "$T/a")"

# --- one state, one log: the log names what the exact values need, whatever the trainer's order
for order in pairwise reverse; do
  "$TRAINER" train "$T/b-$order" --key "$T/key" "${SMALL[@]}" --order "$order" --quiet >/dev/null || bad "train $order"
  cmp -s "$T/a/commitment.vtc" "$T/b-$order/commitment.vtc" && ok || bad "log rounding: trainer order $order commits otherwise"
done
for order in blas forward reverse pairwise permuted split; do
  expect 0 verified "" "$T/a" --order "$order"
done

# --- a padded log: three direction entries on elements without one, in every op record of step 7
"$TRAINER_TEST" train "$T/pad" --key "$T/key" "${SMALL[@]}" --quiet --cheat pad-log:7:3 >/dev/null ||
  bad "pad-log cheat"
[ "$(sqlite3 "$T/pad/run.db" "SELECT log_entries - 0 FROM steps WHERE step = 7")" -gt \
  "$(sqlite3 "$T/a/run.db" "SELECT log_entries FROM steps WHERE step = 7")" ] && ok || bad "the cheat padded nothing"
for order in pairwise split; do
  expect 1 "implausible log entry" 7 "$T/pad" --order "$order"
  grep -q '"detail": "step 7, operation 3, index [0-9]*: unneeded log entry' "$T/report.json" && ok ||
    bad "padded log ($order): $(grep '"detail"' "$T/report.json")"
done
# the steps before the padded one verify
expect 0 verified "" "$T/pad" --to 6
# formats 1-4 accepted such entries: the same run labelled format 4 (re-signed) verifies
cp -r "$T/pad" "$T/pad4"
"$TAMPER" "$T/pad4" "$T/key" set-format-resign vt-manifest-4 >/dev/null || bad "relabel the padded run"
manifest "$T/pad4" | grep -q '"format":"vt-manifest-4"' && ok || bad "relabel: $(manifest "$T/pad4")"
expect 0 verified "" "$T/pad4" --order pairwise
# an honest run of format 4 stays readable
cp -r "$T/a" "$T/a4"
"$TAMPER" "$T/a4" "$T/key" set-format-resign vt-manifest-4 >/dev/null || bad "relabel the honest run"
expect 0 verified "" "$T/a4" --order reverse

# an interrupted run of format 4 is resumed under its own rule and keeps its manifest
"$TRAINER_TEST" train "$T/i4" --key "$T/key" "${SMALL[@]}" --quiet --stop-after 7 >/dev/null || bad "stop-after"
"$TAMPER" "$T/i4" "$T/key" set-format vt-manifest-4 >/dev/null || bad "relabel the interrupted run"
"$TRAINER" train "$T/i4" --key "$T/key" "${SMALL[@]}" --quiet --resume >"$T/i4.out" 2>&1 ||
  bad "resume of a format-4 run: $(cat "$T/i4.out")"
manifest "$T/i4" | grep -q '"format":"vt-manifest-4"' && ok || bad "the resumed run changed its manifest"
expect 0 verified "" "$T/i4" --order permuted

# --- --resume on a finished run: nothing changes, the stored figures are printed
cp "$T/a/commitment.vtc" "$T/a.vtc"
db0=$(sqlite3 "$T/a/run.db" "SELECT step, loss_bits, hex(leaf) FROM steps ORDER BY step")
"$TRAINER" train "$T/a" --key "$T/key" "${SMALL[@]}" --resume >"$T/resume.out" 2>&1
st=$?
[ $st = 0 ] && ok || bad "resume of a finished run: exit $st: $(cat "$T/resume.out")"
grep -q "^run $T/a is already finished at step 12 (commitment $T/a/commitment.vtc)" "$T/resume.out" && ok ||
  bad "resume of a finished run does not say so: $(cat "$T/resume.out")"
loss=$(sqlite3 "$T/a/run.db" "SELECT loss_bits FROM steps WHERE step = 12")
want=$(python3 -c "import struct; print('%.4f' % struct.unpack('<f', struct.pack('<I', $loss))[0])")
grep -q "^final loss      $want$" "$T/resume.out" && ok || bad "final loss is not the stored $want: $(cat "$T/resume.out")"
bytes=$(sqlite3 "$T/a/run.db" "SELECT SUM(LENGTH(log)), COUNT(*) FROM steps" |
        awk -F'|' '{ printf "%.0f", $1 / $2 }')
grep -q "^log size        $bytes bytes/step" "$T/resume.out" && ok || bad "log size is not the stored $bytes: $(cat "$T/resume.out")"
grep -qi "nan" "$T/resume.out" && bad "NaN in: $(cat "$T/resume.out")" || ok
cmp -s "$T/a/commitment.vtc" "$T/a.vtc" && ok || bad "resume of a finished run rewrote its commitment"
[ "$(sqlite3 "$T/a/run.db" "SELECT step, loss_bits, hex(leaf) FROM steps ORDER BY step")" = "$db0" ] && ok ||
  bad "resume of a finished run changed its steps"
expect 0 verified "" "$T/a"
# every step stored but the commitment lost (killed while committing): --resume commits it
rm "$T/b-pairwise/commitment.vtc"
"$TRAINER" train "$T/b-pairwise" --key "$T/key" "${SMALL[@]}" --resume >"$T/resume2.out" 2>&1 || bad "resume to commit"
cmp -s "$T/a/commitment.vtc" "$T/b-pairwise/commitment.vtc" && ok || bad "the committed resume differs"
grep -q "^final loss      $want$" "$T/resume2.out" && ! grep -qi "nan" "$T/resume2.out" && ok ||
  bad "resume to commit: $(cat "$T/resume2.out")"

vt_end
