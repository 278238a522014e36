# cert_lib.sh - what the certificate scripts share (sourced by tests/e2e/cert.sh, tests/e2e/cert_cnn.sh,
# tests/e2e/cert_onnx.sh and tests/e2e/cert_onnx_cnn.sh).

# cert_begin NAME BUILD_DIR: B (the build directory), A (its auditor), T (a temporary directory,
# removed at exit), fail and bad(), HERE (tests/), the keys $T/k (the trainer's), $T/a and $T/other
# (auditors'); exits 1 when a key cannot be made.
cert_begin() {
  set -u
  CERT_NAME=$1
  B=${2:?usage: $1.sh BUILD_DIR}
  A="$B/auditor"
  HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  fail=0
  "$B/trainer" keygen "$T/k" >/dev/null && "$A" keygen "$T/a" >/dev/null && "$A" keygen "$T/other" >/dev/null ||
    { echo "$1: keygen failed"; exit 1; }
}
bad() { echo "FAIL: $*"; fail=1; }

# cert_train_mlp RUN: a digits MLP 64-24-24-10, 200 steps; cert_train_cnn RUN: a tiny residual CNN on
# the digits (8x8x1, width 4, two stages, 150 steps). Exit 1 when training fails.
cert_train_mlp() {
  "$B/trainer" train --run "$1" --key "$T/k" --set dataset=digits --set 'layers=[64,24,24,10]' --set steps=200 \
    --set batch=32 --quiet >/dev/null || { echo "$CERT_NAME: training $1 failed"; exit 1; }
}
cert_train_cnn() {
  "$B/trainer" train --run "$1" --key "$T/k" --recipe "$HERE/../../recipes/resnet-cifar10.json" --set dataset=digits \
    --set 'layers=[64,10]' --set image_channels=1 --set image_height=8 --set image_width=8 --set resnet_width=4 \
    --set resnet_stages=2 --set batch=32 --set steps=150 --set decay_every=1000 --set augment_pad=0 \
    --set augment_flip=0 --quiet >/dev/null || { echo "$CERT_NAME: training $1 failed"; exit 1; }
}

# cert_onnx_or_skip NET PROP: exit 77 (skipped) when this auditor has no ONNX support (its refusal
# checked), exit 1 when certify --onnx NET --vnnlib PROP fails otherwise.
cert_onnx_or_skip() {
  "$A" certify --onnx "$1" --vnnlib "$2" >"$T/probe" 2>&1
  local st=$?
  if [ $st -eq 2 ] && grep -q "without ONNX support" "$T/probe"; then
    echo "$CERT_NAME: this auditor has no ONNX support (its refusal checked): skipped"
    exit 77
  fi
  [ $st -eq 0 ] || { echo "FAIL: certify --onnx: exit $st: $(cat "$T/probe")"; exit 1; }
}

# cert_end: the summary line and the exit status
cert_end() {
  [ $fail -eq 0 ] && echo "$CERT_NAME: all passed"
  exit $fail
}

# cert_onepass CERT KEY WHAT MESSAGE "CHECK-ARGS" EDIT...: the one-pass check (docs/certify.md "The
# certificate") rejects CERT altered by tests/ref/cert_edit.py EDIT... and signed again with KEY (the
# auditor's, so only its contents can be at fault): check-certificate with CHECK-ARGS (word-split)
# exits 2 naming MESSAGE (a grep pattern).
cert_onepass() {
  local cert=$1 key=$2 what=$3 msg=$4 args=$5
  shift 5
  cp "$cert" "$T/onepass"
  python3 "$(dirname "${BASH_SOURCE[0]}")/../ref/cert_edit.py" "$T/onepass" "$@" >/dev/null || { bad "$what: edit"; return; }
  "$B/vt_cert_resign" "$T/onepass" "$key" || { bad "$what: re-sign"; return; }
  # shellcheck disable=SC2086
  "$B/auditor" check-certificate "$T/onepass" $args >/dev/null 2>"$T/onepass.err"
  local st=$?
  [ $st -eq 2 ] && grep -q -- "$msg" "$T/onepass.err" || bad "$what: exit $st, $(cat "$T/onepass.err")"
}

# cert_slopes_tampered CERT KEY "CHECK-ARGS" EX: CERT's slopes of example EX ('-': a property's)
# moved inside [0, 1] (every one strictly inside set to 0) and one set to 1.5 and NaN: all rejected
cert_slopes_tampered() {
  local cert=$1 key=$2 args=$3 ex=$4
  cert_onepass "$cert" "$key" "$cert: slopes moved in [0, 1]" "differs from byte\|recorded" "$args" fracslopes "$ex" 0
  cert_onepass "$cert" "$key" "$cert: slope 1.5" "slope 0 is 1.5, outside \[0, 1\]" "$args" slope "$ex" 0 1.5
  cert_onepass "$cert" "$key" "$cert: slope NaN" "slope 0 is nan" "$args" slope "$ex" 0 nan
}
