#!/usr/bin/env bash
# Red team of the tensor-core mode (recipe key gemm_arith) and step program 2 (program_version): a
# dishonest trainer that edits the mode or the program in its manifest - re-signed, so that only the
# replay can tell - is REJECTED at step 1 (never VERIFIED); an edit without re-signing is a manifest
# mismatch; unknown or out-of-range values and combinations that no version of the trainer ever
# recorded are refused (exit 64 from the trainer; a manifest carrying them is unreadable input, exit 2
# from the auditor) rather than silently run: program_version 0 (step program 0, that of manifest
# formats 1-3 only), and gemm_arith or program_version in a manifest of a format that predates them
# (formats 1-4). auditor certify refuses a tensor-core run (its bounds are of exact rounding's
# network). Usage: red_tc.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin red_tc "${1:-}" key
TAMPER="$B/vt_tamper"
MLP=(--set dataset=mnist-train --set subset=2000 --set "layers=[784,32,10]" --set batch=32 --set steps=6
     --set checkpoint_every=3 --set state_hash_every=1)
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=256 --set resnet_width=4 --set resnet_stages=2
     --set batch=16 --set steps=2 --set checkpoint_every=2 --set state_hash_every=1)
"$TRAINER" train "$T/fp" --key "$T/key" "${MLP[@]}" --quiet >/dev/null 2>&1 || bad "train fp64"
"$TRAINER" train "$T/tc" --key "$T/key" "${MLP[@]}" --set gemm_arith=tc-bf16-sm90 --quiet >/dev/null 2>&1 ||
  bad "train tc-bf16-sm90"
"$TRAINER" train "$T/p2" --key "$T/key" "${CNN[@]}" --set program_version=2 --quiet >/dev/null 2>&1 ||
  bad "train program 2"
# edit NAME RUN OLD NEW [resign]: a copy of RUN whose manifest text OLD is replaced by NEW
edit() {
  rm -rf "$T/$1"; cp -r "$T/$2" "$T/$1"
  "$TAMPER" "$T/$1" "$T/key" "replace${5:+-resign}" "$3" "$4" >/dev/null || bad "tamper $1"
}
# the mode claimed otherwise, re-signed: the replay in the claimed mode differs at step 1
edit claim-tc fp '"final_lr_factor":' '"gemm_arith":"tc-bf16-sm90","final_lr_factor":' resign
expect 1 "" 1 "$T/claim-tc"
edit claim-fp64 tc '"gemm_arith":"tc-bf16-sm90",' '' resign
expect 1 "" 1 "$T/claim-fp64"
for m in tc-bf16-sm80 tc-fp16-sm90 tc-fp16-sm80 tc-e4m3-sm90 tc-e4m3f16-sm90; do
  edit "claim-$m" tc '"gemm_arith":"tc-bf16-sm90"' "\"gemm_arith\":\"$m\"" resign
  expect 1 "" 1 "$T/claim-$m" --order reverse
done
# the same edit without re-signing: the commitment signs another manifest
edit unsigned tc '"gemm_arith":"tc-bf16-sm90",' ''
expect 1 "manifest mismatch" "" "$T/unsigned"
# unreadable manifests (re-signed): unknown models, other types, duplicates, combinations refused
for v in '"tc-bf16-sm75"' '"TC-BF16-SM90"' '""' '1' 'null' '"tc-bf16-sm90","gemm_arith":"fp64"'; do
  edit bad-arith tc '"gemm_arith":"tc-bf16-sm90"' "\"gemm_arith\":$v" resign
  expect 2 "unreadable input" "" "$T/bad-arith"
done
edit tc-log tc '"rounding":"exact"' '"rounding":"log"' resign
expect 2 "unreadable input" "" "$T/tc-log"
edit tc-p2 tc '"rounding":"exact"' '"rounding":"exact","program_version":2' resign
expect 2 "unreadable input" "" "$T/tc-p2"
for v in 0 3 4 -1 2.5 4294967296; do
  edit "bad-program" fp '"rounding":"exact"' "\"rounding\":\"exact\",\"program_version\":$v" resign
  expect 2 "unreadable input" "" "$T/bad-program"
done
# keys newer than the manifest's format: no trainer ever wrote them there
for f in 2 3 4; do
  edit "old-tc-$f" tc '"format":"vt-manifest-5"' "\"format\":\"vt-manifest-$f\"" resign
  expect 2 "unreadable input" "" "$T/old-tc-$f"
  edit "old-p2-$f" p2 '"format":"vt-manifest-5"' "\"format\":\"vt-manifest-$f\"" resign
  expect 2 "unreadable input" "" "$T/old-p2-$f"
done
# the trainer refuses the same values (exit 64, a message naming the key)
refuse_recipe() { # WHAT TEXT ARGS...: exit 64 with TEXT in the message, and no run left
  local what=$1 text=$2; shift 2
  rm -rf "$T/r"
  "$TRAINER" train "$T/r" --key "$T/key" "$@" --quiet >"$T/r.out" 2>&1
  local st=$?
  [ $st = 64 ] && grep -q -- "$text" "$T/r.out" && [ ! -e "$T/r/commitment.vtc" ] && ok ||
    bad "$what: exit $st: $(cat "$T/r.out")"
}
refuse_recipe "program_version 0" program_version "${MLP[@]}" --set program_version=0
refuse_recipe "program_version 0, CNN" program_version "${CNN[@]}" --set program_version=0
refuse_recipe "program_version 0, log" program_version "${MLP[@]}" --set program_version=0 --set rounding=log
refuse_recipe "program_version 4" program_version "${CNN[@]}" --set program_version=4
refuse_recipe "program_version 3, MLP" program_version "${MLP[@]}" --set program_version=3
refuse_recipe "program_version 2, MLP" program_version "${MLP[@]}" --set program_version=2
refuse_recipe "an unknown model" gemm_arith "${MLP[@]}" --set gemm_arith=tc-bf16-sm75
refuse_recipe "an empty model" gemm_arith "${MLP[@]}" --set gemm_arith=
refuse_recipe "a model by number" gemm_arith "${MLP[@]}" --set gemm_arith=1
refuse_recipe "gemm_arith with log rounding" gemm_arith "${MLP[@]}" --set gemm_arith=tc-fp16-sm90 --set rounding=log
# certification bounds the network of exact rounding (and of real arithmetic): a tensor-core run's own
# evaluation is another function (an example its tc evaluation misclassifies could be "verified"), so
# certify refuses it (exit 64, naming gemm_arith) rather than certify another network; an fp64 run certifies
"$AUDITOR" keygen "$T/akey" >/dev/null 2>&1 || bad "auditor keygen"
"$AUDITOR" certify "$T/tc" --eps 0.000001 --examples 2 --method ibp --quiet >"$T/c.out" 2>&1; st=$?
[ $st = 64 ] && grep -q gemm_arith "$T/c.out" && ok || bad "certify a tc run: exit $st: $(cat "$T/c.out")"
"$AUDITOR" certify "$T/fp" --eps 0.000001 --examples 2 --method ibp --out "$T/fp.cert" --key "$T/akey" --quiet \
  >"$T/c.out" 2>&1 && ok || bad "certify the fp64 run: $(cat "$T/c.out")"
# the fp64 run's certificate presented with the run relabelled tc (re-signed) is not checked against it
edit cert-tc fp '"final_lr_factor":' '"gemm_arith":"tc-bf16-sm90","final_lr_factor":' resign
"$AUDITOR" check-certificate "$T/fp.cert" "$T/cert-tc" >"$T/c.out" 2>&1; st=$?
[ $st != 0 ] && ok || bad "check-certificate against a tc run: exit $st: $(cat "$T/c.out")"
# an interrupted tc-bf16-sm90 run resumed (another thread count and order) signs the uninterrupted run's
# commitment; resuming it in another arithmetic is refused (exit 64), as is a program-2 run resumed as program 1
"$TRAINER_TEST" train "$T/res" --key "$T/key" "${MLP[@]}" --set gemm_arith=tc-bf16-sm90 --stop-after 4 --quiet \
  >/dev/null 2>&1 || bad "stop-after"
for m in fp64 tc-bf16-sm80; do
  "$TRAINER" train "$T/res" --key "$T/key" "${MLP[@]}" --set gemm_arith=$m --resume --quiet >"$T/r.out" 2>&1; st=$?
  [ $st = 64 ] && [ ! -e "$T/res/commitment.vtc" ] && ok || bad "resume a tc-bf16 run as $m: exit $st: $(cat "$T/r.out")"
done
"$TRAINER" train "$T/res" --key "$T/key" "${MLP[@]}" --set gemm_arith=tc-bf16-sm90 --resume --threads 1 \
  --order reverse --quiet >/dev/null 2>&1 || bad "resume the tc-bf16 run"
cmp -s "$T/res/commitment.vtc" "$T/tc/commitment.vtc" && ok || bad "the resumed tc-bf16 run's commitment differs"
"$TRAINER_TEST" train "$T/res2" --key "$T/key" "${CNN[@]}" --set steps=4 --set program_version=2 --stop-after 2 \
  --quiet >/dev/null 2>&1 || bad "stop-after, program 2"
"$TRAINER" train "$T/res2" --key "$T/key" "${CNN[@]}" --set steps=4 --set program_version=1 --resume --quiet \
  >"$T/r.out" 2>&1; st=$?
[ $st = 64 ] && ok || bad "resume a program-2 run as program 1: exit $st: $(cat "$T/r.out")"
# a recipe that names no program_version resumes the stored run's program (here 2, not a new run's 3)
"$TRAINER" train "$T/res2" --key "$T/key" "${CNN[@]}" --set steps=4 --resume --quiet >"$T/r.out" 2>&1; st=$?
[ $st = 0 ] && [ -e "$T/res2/commitment.vtc" ] && ok || # (as program 3 its manifest would differ: refused)
  bad "resume a program-2 run without naming the program: exit $st: $(cat "$T/r.out")"
# the honest runs verify
expect 0 verified "" "$T/tc" --order reverse
expect 0 verified "" "$T/p2" --order pairwise
vt_end
