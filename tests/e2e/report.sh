#!/usr/bin/env bash
# `trainer report` (run/vt_report.c, docs/report.md): train a small run, audit it with a JSON report,
# write the page and render it in headless Chromium; check what the page shows in Chromium's DOM
# (the curves' points, the verdict, the Merkle root, the signature's status) and keep a screenshot
# under the build directory (BUILD_DIR/report/, a CI artefact). Then hostile and partial run
# directories: every string escaped, what is missing said on the page, a clear error where there is
# no run, never a crash. Skips (77) only without Chromium (scripts/install-deps.sh installs it).
# Usage: report.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin report "${1:-}"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: no chromium (Debian's chromium package: scripts/install-deps.sh installs it)"
  exit 77
fi
TRAINER="$B/trainer"
AUDITOR="$B/auditor"
ART="$B/report" # the CI artefacts: the page and its screenshot
mkdir -p "$ART"

# headless Chromium as root (no sandbox), its profile in $T, nothing from the network to fetch
chrome() {
  HOME="$T" timeout "$(vt_scale 180)" "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$T/chrome" --window-size=1100,3200 "$@" 2>>"$T/chrome.err"
}
# the DOM Chromium built from the page FILE, into OUT
dom() { chrome --dump-dom "file://$1" >"$2" || bad "chromium --dump-dom $1"; }
# the number of points of the polyline of series S in a DOM dump (points="x,y x,y ...")
points() {
  sed -n "s/.*<polyline[^>]*data-series=\"$1\"[^>]*points=\"\([^\"]*\)\".*/\1/p" "$2" | head -1 | wc -w
}

# a small, fast run: 2000 MNIST images, 784-64-10, 40 steps, log rounding (so that it has log
# entries), checkpoints every 10 steps
SMALL=(--set dataset=mnist-train --set subset=2000 --set 'layers=[784,64,10]' --set steps=40 --set batch=64
       --set lr=0.1 --set checkpoint_every=10 --set state_hash_every=1 --set rounding=log)
"$TRAINER" keygen "$T/key" >/dev/null || bad "keygen"
"$TRAINER" train "$T/run" --key "$T/key" "${SMALL[@]}" --set schedule=cosine --set warmup=5 --quiet \
  >"$T/train.out" 2>&1 || { cat "$T/train.out"; bad "train"; }
root=$(sed -n 's/^merkle root *\([0-9a-f]\{64\}\)$/\1/p' "$T/train.out")
[ ${#root} = 64 ] && ok || bad "no merkle root in the trainer's output"
"$AUDITOR" verify "$T/run" --quiet --report "$T/run.audit.json" >"$T/audit.out" 2>&1
[ $? = 0 ] && grep -q '^VERIFIED' "$T/audit.out" && ok || bad "audit: $(cat "$T/audit.out")"

# --- the page of an honest, audited run
"$TRAINER" report "$T/run" --out "$T/report.html" --pubkey "$T/key.pub" >"$T/report.out" 2>&1
[ $? = 0 ] && ok || bad "report: $(cat "$T/report.out")"
grep -q "40 steps, signature valid, root matches, 1 audit report, 0 things missing" "$T/report.out" && ok ||
  bad "report summary line: $(cat "$T/report.out")"
cp "$T/report.html" "$ART/report.html"
# self-contained: no script, no element that loads anything, no external style
! grep -Eio '<script|<link|<img|<iframe|<object|<embed|src=|href=|@import|url\(' "$T/report.html" | grep -q . && ok ||
  bad "the page refers to something outside itself: $(grep -Eio '<script|<link|<img|src=|href=|@import|url\(' "$T/report.html" | sort -u | tr '\n' ' ')"
[ "$(grep -Eo 'https?://[^" ]*' "$T/report.html" | sort -u)" = "http://www.w3.org/2000/svg" ] && ok ||
  bad "an address other than the SVG namespace: $(grep -Eo 'https?://[^" ]*' "$T/report.html" | sort -u | tr '\n' ' ')"
dom "$T/report.html" "$T/dom.html"
cp "$T/dom.html" "$ART/report.dom.html"
# the curves: one point per step (40), the learning rate over the recipe's 40 steps
[ "$(points loss "$T/dom.html")" = 40 ] && ok || bad "loss curve: $(points loss "$T/dom.html") points, want 40"
[ "$(points lr "$T/dom.html")" = 40 ] && ok || bad "learning-rate curve: $(points lr "$T/dom.html") points, want 40"
[ "$(points log-entries "$T/dom.html")" = 40 ] && ok || bad "log-entry curve: $(points log-entries "$T/dom.html") points"
grep -q 'id="loss-chart"' "$T/dom.html" && grep -q 'id="lr-chart"' "$T/dom.html" && grep -q 'id="entries-chart"' "$T/dom.html" &&
  ok || bad "a chart is missing from the DOM"
# the log entries the trainer counted are the page's total
want=$(sed -n 's/^log entries *\([0-9]*\) over.*/\1/p' "$T/train.out")
grep -q "id=\"entries-total\" data-total=\"$want\"" "$T/dom.html" && ok || bad "log entries total (want $want)"
# the checkpoints: steps 0, 10, 20, 30, 40
[ "$(grep -o '<tr class="checkpoint" data-step="[0-9]*"' "$T/dom.html" | grep -o '[0-9]*' | tr '\n' ' ')" = "0 10 20 30 40 " ] &&
  ok || bad "checkpoint rows: $(grep -o '<tr class="checkpoint" data-step="[0-9]*"' "$T/dom.html" | tr '\n' ' ')"
# the verdict, the root, the signature
grep -q 'data-verdict="verified">VERIFIED</span>' "$T/dom.html" && ok || bad "no VERIFIED verdict in the DOM"
grep -q "\"merkle_root\": \"$root\"" "$T/run.audit.json" && ok || bad "the audit report does not name the run's root"
grep -q 'data-run="this">this run<' "$T/dom.html" && ok || bad "the audit report is not matched to the run"
grep -q "id=\"merkle-root\" data-signed=\"1\">$root<" "$T/dom.html" && ok || bad "the DOM lacks the root $root"
grep -q 'id="signature-status" class="ok" data-status="valid">valid (Ed25519), by the key given with --pubkey' "$T/dom.html" &&
  ok || bad "signature status"
grep -q 'id="commitment-status" class="ok" data-status="consistent"' "$T/dom.html" && ok || bad "commitment status"
grep -q 'id="problems-none"' "$T/dom.html" && ok || bad "an honest run's page lists problems"
grep -q 'data-recorded="40" data-recipe="40"' "$T/dom.html" && ok || bad "steps recorded"
# the screenshot: a PNG of the rendered page, kept as an artefact
rm -f "$ART/report.png"
chrome --screenshot="$ART/report.png" "file://$T/report.html" >/dev/null || bad "chromium --screenshot"
[ "$(head -c 8 "$ART/report.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] && ok ||
  bad "no PNG screenshot at $ART/report.png"
[ "$(stat -c %s "$ART/report.png" 2>/dev/null || echo 0)" -gt 20000 ] && ok || bad "the screenshot is (nearly) empty"
# --out -: the same page on standard output
"$TRAINER" report "$T/run" --out - --pubkey "$T/key.pub" 2>/dev/null | cmp -s - "$T/report.html" && ok || bad "--out -"

# --- an exact-rounding run: no log, said so
"$TRAINER" train "$T/exact" --key "$T/key" --set dataset=mnist-train --set subset=1000 \
  --set 'layers=[784,32,10]' --set steps=12 --set batch=32 --set checkpoint_every=4 --set state_hash_every=2 --quiet >/dev/null 2>&1 || bad "train exact"
"$TRAINER" report "$T/exact" --out "$T/exact.html" >/dev/null 2>&1 && ok || bad "report of an exact run"
dom "$T/exact.html" "$T/exact.dom"
grep -q 'id="entries-chart" class="note" data-rounding="exact"' "$T/exact.dom" && ok || bad "exact run: the log note"
[ "$(points loss "$T/exact.dom")" = 12 ] && ok || bad "exact run: loss points"
grep -q 'id="no-audit"' "$T/exact.dom" && ok || bad "exact run: no audit report said"
# another run's audit report beside it: shown, and said to be about another run
cp "$T/run.audit.json" "$T/exact.audit.json"
"$TRAINER" report "$T/exact" --out "$T/exact2.html" >/dev/null 2>&1 && ok || bad "report with another run's audit"
grep -q 'data-run="other">ANOTHER run<' "$T/exact2.html" && ok || bad "another run's report is not flagged"
grep -q 'exact.audit.json is about another run' "$T/exact2.html" && ok || bad "another run's report is not listed as missing"

# --- a rejected run: one loss changed in a copy (the loss is not in the leaf: the signature and the
# root still hold, the audit rejects it); its report beside it, with hostile strings in another one
# named with --audit, and a directory whose name needs escaping
H="$T/we<ird>&\"na'me"
cp -r "$T/run" "$H"
sqlite3 "$H/run.db" "UPDATE steps SET loss_bits = loss_bits + 1 WHERE step = 7" || bad "sqlite3"
"$AUDITOR" verify "$H" --quiet --report "$H.audit.json" >/dev/null 2>&1
[ $? = 1 ] && ok || bad "the altered loss was not rejected"
cat >"$T/hostile.json" <<'EOF'
{"verdict": "rejected", "reason": "<script>alert(1)</script>", "detail": "<img src=x onerror=alert(2)> & \"q\" 'a' \u0001 \u00e9",
 "step": 3, "operation": 2, "operation_name": "</code><b>bold</b>", "order": "<i>x</i>", "from": 0, "to": 40,
 "steps_checked": 3, "complete": false}
EOF
printf '{"verdict":"<b>odd</b>"}' >"$T/odd.json"
printf 'not json at all' >"$T/garbage.json"
printf '{"some": "other json"}' >"$H/notes.json"
"$TRAINER" report "$H" --out "$T/hostile.html" --audit "$T/hostile.json" --audit "$T/odd.json" --audit "$T/garbage.json" \
  --audit "$T/missing.json" >"$T/h.out" 2>&1
[ $? = 0 ] && ok || bad "report of the altered run: $(cat "$T/h.out")"
dom "$T/hostile.html" "$T/hostile.dom"
cp "$T/hostile.html" "$ART/report-hostile.html"
# nothing from the run became markup: no script, img, b or i element in the DOM
! grep -Eq '<script|<img|<b>|<i>' "$T/hostile.dom" && ok || bad "a string from the run became markup: $(grep -Eo '<script[^>]*>|<img[^>]*>|<b>|<i>' "$T/hostile.dom" | head -3)"
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$T/hostile.html" && ok || bad "the hostile reason is not escaped as text"
grep -q 'we&lt;ird&gt;&amp;&quot;na&#39;me' "$T/hostile.html" && ok || bad "the directory name is not escaped"
grep -q '&#xFFFD;' "$T/hostile.html" && ok || bad "a control character was not replaced"
grep -q 'data-verdict="rejected">REJECTED</span>' "$T/hostile.dom" && ok || bad "no REJECTED verdict"
[ "$(grep -o 'data-run="[a-z]*"' "$T/hostile.dom" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')" = ' 1 data-run="this"  2 data-run="unknown" ' ] &&
  ok || bad "run column: $(grep -o 'data-run="[a-z]*"' "$T/hostile.dom" | sort | uniq -c | tr '\n' ' ')"
grep -q 'record mismatch' "$T/hostile.dom" && ok || bad "the rejection's reason is not shown"
grep -q 'data-verdict="&lt;b&gt;odd&lt;/b&gt;">unknown verdict' "$T/hostile.dom" && ok || bad "an unknown verdict"
[ "$(grep -c 'data-verdict="unreadable"' "$T/hostile.dom")" = 2 ] && ok || bad "garbage and missing reports: not UNREADABLE"
grep -q 'not JSON' "$T/hostile.dom" && grep -q 'cannot open it' "$T/hostile.dom" && ok || bad "why a report is unreadable"
grep -q 'not audit reports: <code>.*notes.json</code>' "$T/hostile.dom" && ok || bad "the JSON beside the run that is not a report"
grep -q 'data-status="consistent"' "$T/hostile.dom" && ok || bad "the altered loss is not in the leaf: the commitment holds"

# --- partial and damaged runs: the page says what is missing
P="$T/partial"
cp -r "$T/run" "$P"
rm "$P/commitment.vtc" "$P/checkpoints/ckpt-000000000030.vtck"
sqlite3 "$P/run.db" "DELETE FROM steps WHERE step > 33; DELETE FROM checkpoints WHERE step > 33;
  UPDATE steps SET loss_bits = 2143289344 WHERE step = 12;" || bad "sqlite3" # a NaN loss at step 12
"$TRAINER" report "$P" --out "$T/partial.html" --no-search >"$T/p.out" 2>&1
[ $? = 0 ] && ok || bad "report of a partial run: $(cat "$T/p.out")"
dom "$T/partial.html" "$T/partial.dom"
grep -q 'in progress or was interrupted at step 33 of 40' "$T/partial.dom" && ok || bad "partial: no commitment said"
grep -q 'checkpoint file is missing from checkpoints/ (the first: step 30)' "$T/partial.dom" && ok || bad "partial: missing file"
grep -q 'data-status="missing">no commitment' "$T/partial.dom" && ok || bad "partial: signature status"
grep -q 'id="merkle-root" data-signed="0"' "$T/partial.dom" && ok || bad "partial: the unsigned root of the stored steps"
[ "$(points loss "$T/partial.dom")" = 32 ] && ok || bad "partial: loss points $(points loss "$T/partial.dom") (33 steps, one NaN)"
grep -q "1 step's loss is not finite (not drawn)" "$T/partial.dom" && ok || bad "partial: the NaN loss is not said"
[ "$(points lr "$T/partial.dom")" = 40 ] && ok || bad "partial: the schedule covers the recipe's 40 steps"
grep -q 'id="no-audit"' "$T/partial.dom" && ok || bad "--no-search found a report"
D="$T/damaged"
cp -r "$T/run" "$D"
sqlite3 "$D/run.db" "UPDATE steps SET leaf = zeroblob(32) WHERE step = 5; UPDATE steps SET log_hash = x'00' WHERE step = 9;" ||
  bad "sqlite3"
"$TRAINER" report "$D" --out "$T/damaged.html" >"$T/d.out" 2>&1
[ $? = 0 ] && ok || bad "report of a damaged run: $(cat "$T/d.out")"
grep -q "step 5&#39;s leaf is not the hash of its record" "$T/damaged.html" && ok || bad "damaged: the leaf"
grep -q 'step record 9: ' "$T/damaged.html" && ok || bad "damaged: the unreadable record"
grep -q 'data-status="inconsistent"' "$T/damaged.html" && ok || bad "damaged: the commitment holds?"
cp "$T/run/commitment.vtc" "$T/c.vtc"
printf '\x01' | dd of="$T/run/commitment.vtc" bs=1 seek=170 conv=notrunc status=none
"$TRAINER" report "$T/run" --out "$T/badsig.html" >/dev/null 2>&1 && ok || bad "report of a run with a bad signature"
grep -q 'data-status="invalid">INVALID' "$T/badsig.html" && ok || bad "a bad signature is not INVALID"
cp "$T/c.vtc" "$T/run/commitment.vtc"
"$TRAINER" keygen "$T/other" >/dev/null
"$TRAINER" report "$T/run" --out "$T/otherkey.html" --pubkey "$T/other.pub" >/dev/null 2>&1 && ok || bad "report --pubkey other"
grep -q 'data-status="wrong-key"' "$T/otherkey.html" && ok || bad "another key is not said"

# --- no run at all: a clear error, exit 2, nothing written; usage errors 64
want_exit() { # STATUS PATTERN -- command...
  local st=$1 pat=$2
  shift 3
  "$@" >"$T/e.out" 2>&1
  local got=$?
  [ "$got" = "$st" ] && grep -q -- "$pat" "$T/e.out" && ok || bad "$* -> $got (want $st, '$pat'): $(head -2 "$T/e.out")"
}
mkdir "$T/empty"
want_exit 2 "trainer report: run directory" -- "$TRAINER" report "$T/empty" --out "$T/x.html"
want_exit 2 "No such file" -- "$TRAINER" report "$T/nowhere" --out "$T/x.html"
want_exit 2 "not a directory" -- "$TRAINER" report "$T/garbage.json" --out "$T/x.html"
mkdir "$T/junk" && head -c 5000 /dev/urandom >"$T/junk/run.db"
want_exit 2 "trainer report: " -- "$TRAINER" report "$T/junk" --out "$T/x.html"
[ ! -e "$T/x.html" ] && ok || bad "a page was written for no run"
[ -z "$(ls "$T" | grep 'x.html.tmp')" ] && ok || bad "a temporary file was left"
want_exit 64 "RUN_DIR and --out FILE are required" -- "$TRAINER" report "$T/run"
want_exit 64 "" -- "$TRAINER" report "$T/run" --out "$T/x.html" --bogus
want_exit 2 "" -- "$TRAINER" report "$T/run" --out "$T/no/such/dir/x.html"

echo "report: $pass passed, $fail failed (page, DOM and screenshot in $ART)"
[ "$fail" = 0 ]
