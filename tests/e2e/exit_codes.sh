#!/usr/bin/env bash
# One exit code per kind of error (issue 22, findings 3, 4, 5, 7), with the real programs: each
# case provokes one error and checks its exit status and its message (README.md "Exit statuses").
# Small recipes; no case asserts time. Usage: exit_codes.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin exit_codes "${1:-}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI missing (scripts/install-deps.sh installs it)"; exit 77; }

# want STATUS REGEX -- command...: the status and a line of stderr+stdout matching REGEX
want() {
  local st=$1 re=$2; shift 3
  "$@" >"$T/out" 2>&1
  local got=$?
  if [ "$got" = "$st" ] && grep -Eq -- "$re" "$T/out"; then ok
  else bad "[$*] exit $got (want $st), output: $(head -c 600 "$T/out") (want /$re/)"; fi
}

TR="$B/trainer"
AU="$B/auditor"
"$TR" keygen "$T/key" >/dev/null || bad keygen
S=(--set subset=1000 --set 'layers=[784,32,10]' --set steps=8 --set checkpoint_every=4 --set state_hash_every=2 --quiet)

# --- finding 7 and deliverable 6: usage and recipe errors are 64, alike from --set and a file,
# and nothing is created on disk before the recipe is fully validated
want 64 'unknown recipe key "nokey"' -- "$TR" train "$T/a" --key "$T/key" --set nokey=1
printf '{"nokey": 1}' >"$T/unk.json"
want 64 'unk.json: unknown recipe key "nokey"' -- "$TR" train "$T/a" --key "$T/key" --recipe "$T/unk.json"
want 64 'unknown recipe key "nokey"' -- "$TR" recipe --recipe "$T/unk.json"
want 64 'cannot open' -- "$TR" train "$T/a" --key "$T/key" --recipe "$T/missing.json"
want 64 'unknown dataset "nosuch"' -- "$TR" train "$T/a" --key "$T/key" "${S[@]}" --set dataset=nosuch
want 64 'dataset mnist-train has 784 features and 10 classes, but layers = \[784, \.\.\., 1\]' -- \
  "$TR" train "$T/a" --key "$T/key" "${S[@]}" --set 'layers=[784,1]'
want 64 'but layers = \[100, \.\.\., 10\]' -- "$TR" train "$T/a" --key "$T/key" "${S[@]}" --set 'layers=[100,10]'
[ ! -e "$T/a" ] && ok || bad "a refused recipe created the run directory"
want 64 'max-memory: "lots" is not a size' -- "$TR" train "$T/a" --key "$T/key" --max-memory lots

# --- finding 4: messages intact (no self-overlapping format)
printf '{"lr": "x"}' >"$T/badlr.json"
want 64 '^trainer: [^ ]*badlr.json: recipe key "lr": expected a number$' -- \
  "$TR" train "$T/a" --key "$T/key" --recipe "$T/badlr.json"
want 1 '^trainer: training diverged at step [0-9]+, operation [0-9]+.*\[.*\]$' -- \
  "$TR" train "$T/div" --key "$T/key" "${S[@]}" --set lr=1e30

# --- finding 3: recipe files capped in size and depth before parsing; the memory budget
want 64 'recipe /dev/zero: more than the limit of 1048576 bytes' -- "$TR" recipe --recipe /dev/zero
head -c 1100000 /dev/zero | tr '\0' ' ' >"$T/big.json"
want 64 'more than the limit of 1048576 bytes' -- "$TR" recipe --recipe "$T/big.json"
python3 -c "print('{\"lr\":' + '['*40 + ']'*40 + '}')" >"$T/deep.json" 2>/dev/null ||
  printf '{"lr":[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]}' >"$T/deep.json"
want 64 'nested deeper than the limit of 16 levels' -- "$TR" recipe --recipe "$T/deep.json"
# a user's recipe beyond the budget: 64, before the run directory exists (nothing allocated)
want 64 'the model needs 20\.[0-9]+ GiB .*over the memory budget of 8\.00 GiB \(--max-memory\)' -- \
  "$TR" train "$T/huge" --key "$T/key" "${S[@]}" --set 'layers=[784,65536,8192,10]' --max-memory 8G
[ ! -e "$T/huge" ] && ok || bad "a recipe over the budget created the run directory"

# --- an honest run, then the checks on it
"$TR" train "$T/ok" --key "$T/key" "${S[@]}" >/dev/null || bad "train"
want 0 '^VERIFIED' -- "$AU" verify "$T/ok" --quiet --pubkey "$T/key.pub" --report "$T/rep.json"
grep -q '"complete": true' "$T/rep.json" && grep -q '"coverage": "every stored field checked' "$T/rep.json" && ok ||
  bad "report: complete / coverage"
# a hostile manifest (re-signed by the trainer's key) beyond the budget: cannot check, 2
cp -r "$T/ok" "$T/hostile"
"$B/vt_tamper" "$T/hostile" "$T/key" set-layers-resign '[784,65536,8192,10]' >/dev/null || bad "tamper layers"
want 2 'the model needs 20\.[0-9]+ GiB .*over the memory budget of 4\.00 GiB' -- \
  "$AU" verify "$T/hostile" --quiet --max-memory 4G
want 2 'the model needs .*over the memory budget' -- "$TR" export "$T/hostile" --out "$T/h.st" --max-memory 4G
want 2 'the model needs .*over the memory budget' -- "$TR" eval "$T/hostile" --max-memory 4G
# --jobs reduced to what the budget holds (each replay ~1.2 MiB)
want 0 'jobs 4 reduced to 1' -- "$AU" verify "$T/ok" --jobs 4 --max-memory 2M
# a manifest nested beyond the limit: refused before parsing, 2
cp -r "$T/ok" "$T/deep"
"$B/vt_tamper" "$T/deep" "$T/key" set-layers-resign '[[[[[[[[[[[[[[[[[[[[784]]]]]]]]]]]]]]]]]]],10]' >/dev/null ||
  bad "tamper deep"
want 2 'manifest: JSON nested deeper than the limit' -- "$AU" verify "$T/deep" --quiet
want 2 'manifest: JSON nested deeper than the limit' -- "$TR" export "$T/deep" --out "$T/d.st"
# a manifest blob over the size limit in the store: refused by its length, before it is read
cp -r "$T/ok" "$T/bigman"
sqlite3 "$T/bigman/run.db" "UPDATE meta SET value = zeroblob(3000000) WHERE key = 'manifest'" || bad "sqlite bigman"
want 2 'a manifest of 3000000 bytes, over the 1048576-byte limit' -- "$AU" verify "$T/bigman" --quiet

# --- finding 5: VERIFIED means complete; export warns without --pubkey
want 0 'warning: no --pubkey: the signature was checked against the key inside the commitment' -- \
  "$TR" export "$T/ok" --out "$T/ok.st"
want 0 '^exported step 8' -- "$TR" export "$T/ok" --out "$T/ok.st" --pubkey "$T/key.pub"
grep -q "warning" "$T/out" && bad "export warned with --pubkey" || ok
case_() { # name, SQL, verify status, verify regex, export status
  rm -rf "$T/t"; cp -r "$T/ok" "$T/t"; sqlite3 "$T/t/run.db" "$2" || bad "sqlite $1"
  want "$3" "$4" -- "$AU" verify "$T/t" --quiet
  want "$5" "" -- "$TR" export "$T/t" --out "$T/t.st" --pubkey "$T/key.pub"
}
case_ "final checkpoint row" "DELETE FROM checkpoints WHERE step = 8" 1 \
  'lacks the checkpoint of step 8, which the recipe promises.*final state cannot be exported' 2
case_ "other checkpoint row" "DELETE FROM checkpoints WHERE step = 4" 1 'lacks the checkpoint of step 4' 0
case_ "step 0 checkpoint row" "DELETE FROM checkpoints WHERE step = 0" 1 'lacks the checkpoint of step 0' 0
case_ "step 0 loss" "UPDATE steps SET loss_bits = 1065353216 WHERE step = 0" 1 'record of step 0 .* holds a loss' 0
case_ "log_entries" "UPDATE steps SET log_entries = 3 WHERE step = 5" 1 \
  'record of step 5 counts 3 log entries; its committed log holds 0' 0
case_ "loss" "UPDATE steps SET loss_bits = loss_bits + 1 WHERE step = 6" 1 'loss stored for step 6' 0
# export: a damaged run is 2, --step that is no checkpoint is 64, a contradiction of the commitment 1
want 2 'lacks the checkpoint of step 8' -- bash -c "rm -rf '$T/t'; cp -r '$T/ok' '$T/t'; sqlite3 '$T/t/run.db' \
  'DELETE FROM checkpoints WHERE step = 8'; '$TR' export '$T/t' --out '$T/t.st' --pubkey '$T/key.pub'"
want 64 '--step 3: no checkpoint at that step' -- "$TR" export "$T/ok" --out "$T/t.st" --step 3 --pubkey "$T/key.pub"
"$TR" keygen "$T/other" >/dev/null
want 1 'signed by another key' -- "$TR" export "$T/ok" --out "$T/t.st" --pubkey "$T/other.pub"

# --- a run changed after it was committed (the trainer's threat, docs/dispute.md) is REJECTED, never
# CANNOT CHECK: the replay from step 0 checks the rest without it (issue 37)
# ckfile NAME STEP rm|truncate REGEX [verify args]: a recorded checkpoint file deleted or truncated
ckfile() {
  rm -rf "$T/t"; cp -r "$T/ok" "$T/t"
  local f; f="$T/t/checkpoints/ckpt-$(printf %012d "$2").vtck"
  if [ "$3" = rm ]; then rm -f "$f"; else truncate -s 10 "$f"; fi
  want 1 "$4" -- "$AU" verify "$T/t" --quiet "${@:5}"
}
ckfile "deleted checkpoint" 4 rm 'the checkpoint of step 4, recorded in the run store, is missing'
ckfile "deleted checkpoint, a segment starts there" 4 rm 'the checkpoint of step 4, recorded in the run store, is missing' --jobs 2
ckfile "deleted final checkpoint" 8 rm 'the checkpoint of step 8, recorded in the run store, is missing'
ckfile "truncated checkpoint" 4 truncate 'the checkpoint of step 4 does not match the hash recorded for it: .*truncated'
# the manifest edited in the store without its recorded hash (re-hashed, it is e2e's "manifest mismatch")
rm -rf "$T/t"; cp -r "$T/ok" "$T/t"
sqlite3 "$T/t/run.db" "UPDATE meta SET value = CAST(replace(CAST(value AS TEXT), '\"steps\":8', '\"steps\":7') AS BLOB)
  WHERE key = 'manifest'" || bad "sqlite manifest"
want 1 'the manifest does not match its recorded hash \(recipe or dataset altered\)' -- "$AU" verify "$T/t" --quiet
want 1 'the manifest does not match its recorded hash' -- "$TR" export "$T/t" --out "$T/t.st" --pubkey "$T/key.pub"

# --- --resume: a directory that was never created is nothing to resume (2, nothing created); one
# that exists without a complete run.db (its creation interrupted) starts the run
want 2 'cannot open run store .*never/made/run.db' -- "$TR" train "$T/never/made" --key "$T/key" "${S[@]}" --resume
[ ! -e "$T/never" ] && ok || bad "--resume of a directory that was never created created it"
mkdir "$T/empty"
want 0 'has no run.db \(its creation was interrupted\): starting the run' -- \
  "$TR" train "$T/empty" --key "$T/key" "${S[@]}" --resume
cmp -s "$T/empty/commitment.vtc" "$T/ok/commitment.vtc" && ok || bad "--resume of an empty directory: another commitment"

# --- eval: an unknown dataset is 64 as in train; an unreadable run 2
want 64 'unknown dataset "nosuch"' -- "$TR" eval "$T/ok" --dataset nosuch
want 64 'does not fit the model' -- "$TR" eval "$T/ok" --dataset digits
want 2 'cannot open run store' -- "$TR" eval "$T/nonexistent"
want 2 'cannot open run store|run store' -- "$AU" verify "$T/nonexistent" --quiet
want 64 'max-memory' -- "$AU" verify "$T/ok" --max-memory 0

vt_end
