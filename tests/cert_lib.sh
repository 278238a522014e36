# cert_lib.sh - what the certificate scripts share (sourced by tests/cert.sh, tests/cert_cnn.sh,
# tests/cert_onnx.sh and tests/cert_onnx_cnn.sh; expects B, T and bad() defined).

# cert_onepass CERT KEY WHAT MESSAGE "CHECK-ARGS" EDIT...: the one-pass check (docs/certify.md "The
# certificate") rejects CERT altered by tests/cert_edit.py EDIT... and signed again with KEY (the
# auditor's, so only its contents can be at fault): check-certificate with CHECK-ARGS (word-split)
# exits 2 naming MESSAGE (a grep pattern).
cert_onepass() {
  local cert=$1 key=$2 what=$3 msg=$4 args=$5
  shift 5
  cp "$cert" "$T/onepass"
  python3 "$(dirname "${BASH_SOURCE[0]}")/cert_edit.py" "$T/onepass" "$@" >/dev/null || { bad "$what: edit"; return; }
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
