#!/usr/bin/env bash
# cert_bench.sh - the certification benchmark of issue 26 item 8 (docs/benchmarks.md "Certification
# (issue 26 item 8)"): the VNN-COMP mnist_fc architectures (784-256x2-10, 784-256x4-10, 784-256x6-10;
# recipes/mnist_fc_256x{2,4,6}.json) trained with this project's trainer, exported to safetensors
# and ONNX, certified by `auditor certify RUN_DIR` with IBP, CROWN and alpha-CROWN at eps 0.03 and
# 0.05 on the first N MNIST test images: verified / falsified / unknown, seconds per property and
# peak resident memory (/usr/bin/time, the whole auditor process); the same properties
# (--write-vnnlib) answered on the ONNX export through `certify --instances` (CROWN: the unsat
# count, which may only be <= the run's, the file's bounds also covering any FP32 evaluation);
# bench/torch_bounds.py's independent FP64 IBP and CROWN compared with the tool's bounds; the
# alpha-CROWN certificates' check-certificate (the one-pass check) CPU time against certify's.
#
# Usage: bash bench/cert_bench.sh BUILD_DIR [--examples N] [--steps S] [--out DIR] [--methods "ibp crown alpha-crown"]
#                                           [--eps "0.03 0.05"] [--nets "2 4 6"] [--no-onnx] [--no-torch] [--jobs J]
#                                           [--cnn STEPS] [--onnx-nets LIST]
#   BUILD_DIR  holds trainer and auditor; --out DIR (default BUILD_DIR/cert-bench) keeps the runs,
#   the exports, the properties and the reports; a run already trained there is reused, and a
#   certify job whose report and times are there is not run again (delete them to re-measure).
#   --onnx-nets LIST: the networks whose ONNX export is certified too (default: all of --nets).
#   --steps S  overrides the recipes' steps (2000); --jobs J runs J auditor processes at a time
#   (each single-threaded). --cnn S: also the default CNN (recipes/resnet-cifar10.json, trained S
#   steps) with the same methods at eps 1/255 and 2/255 on
#   the first N CIFAR-10 test images. Prints a markdown report on stdout.
# Not a test: CI does not run it. Times: wall-clock and CPU (user + sys) seconds of each auditor
# process (one thread each), divided by N.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:?usage: cert_bench.sh BUILD_DIR [--examples N] [--steps S] [--out DIR] ...}
shift
N=100 steps="" out="$B/cert-bench" methods="ibp crown alpha-crown" epss="0.03 0.05" nets="2 4 6" onnx=1 torch=1 J=1 cnn=0 onnx_nets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --examples) N=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    --eps) epss=$2; shift 2 ;;
    --nets) nets=$2; shift 2 ;;
    --no-onnx) onnx=0; shift ;;
    --no-torch) torch=0; shift ;;
    --jobs) J=$2; shift 2 ;;
    --cnn) cnn=$2; shift 2 ;;
    --onnx-nets) onnx_nets=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "cert_bench.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
  esac
done
PY=/usr/bin/python3
onnx_nets=${onnx_nets:-$nets}
mkdir -p "$out"
T="$B/trainer" A="$B/auditor"
[ -x "$T" ] && [ -x "$A" ] || { echo "cert_bench.sh: no trainer / auditor in $B" >&2; exit 2; }
[ -e "$out/k" ] || "$T" keygen "$out/k" >/dev/null
[ -e "$out/a" ] || "$A" keygen "$out/a" >/dev/null # the auditor's: alpha-CROWN's certificates
# "SECONDS PEAK_RSS_KIB" of a command into $out/last.time
timed() {
  /usr/bin/time -f "%e %M" -o "$out/last.time" "$@"
}
echo "## Certification benchmark"
echo
echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- programs: $A, $T; N = $N test images; eps: $epss; $J auditor processes at a time"
echo
echo "### Training"
echo
echo "| network | steps | train s | accuracy (mnist-test) |"
echo "|---|---|---|---|"
for L in $nets; do
  name="mnist_fc_256x$L" run="$out/run_$L"
  if [ -e "$run/run.db" ] && "$T" eval "$run" >/dev/null 2>&1; then
    tsec="(reused)"
  else
    rm -rf "$run"
    set -- "$run" --key "$out/k" --recipe "recipes/$name.json" --quiet
    [ -n "$steps" ] && set -- "$@" --set "steps=$steps"
    timed "$T" train "$@" >/dev/null
    tsec=$(cut -d' ' -f1 "$out/last.time")
  fi
  acc=$("$T" eval "$run" 2>/dev/null | sed -n 's/^accuracy *\([0-9.]*\)$/\1/p')
  st=${steps:-$($PY -c "import json; print(json.load(open('recipes/$name.json'))['steps'])")}
  echo "| 784-256x$L-10 | $st | $tsec | $acc |"
  "$T" export "$run" --format safetensors --out "$out/net_$L.safetensors" --pubkey "$out/k.pub" >/dev/null
  if [ $onnx -eq 1 ]; then
    "$T" export "$run" --format onnx --out "$out/net_$L.onnx" --pubkey "$out/k.pub" >/dev/null 2>&1 || onnx=0
  fi
done
# the default CNN: trained in the background while the MLPs are certified
if [ "$cnn" -gt 0 ]; then
  run="$out/run_cnn"
  if [ -e "$run/run.db" ] && "$T" eval "$run" >/dev/null 2>&1; then
    echo "(reused)" >"$out/cnn_train.time"
  else
    rm -rf "$run"
    /usr/bin/time -f "%e %M" -o "$out/cnn_train.time" "$T" train "$run" --key "$out/k" \
      --recipe recipes/resnet-cifar10.json --set "steps=$cnn" --quiet >/dev/null &
    cnn_pid=$!
  fi
fi
# the certify runs: one job per (network, eps, method), J at a time, the longest first; each writes
# its report and "wall user sys maxrss_KiB" of its process
jobs="$out/jobs.txt"
: >"$jobs"
for L in $(echo $nets | tr ' ' '\n' | sort -rn); do
  for m in alpha-crown crown ibp; do
    [[ " $methods " == *" $m "* ]] || continue
    for e in $epss; do
      p="$out/props_${L}_$e"
      mkdir -p "$p"
      extra=""
      [ "$m" = ibp ] && extra="--write-vnnlib $p"
      [ "$m" = alpha-crown ] && extra="--out $out/c_${L}_$e.cert --key $out/a"
      [ -s "$out/t_${L}_${e}_$m.time" ] && [ -s "$out/r_${L}_${e}_$m.json" ] && [ -s "$p/prop_$((N - 1)).vnnlib" ] &&
        { [ "$m" != alpha-crown ] || [ -s "$out/c_${L}_$e.cert" ]; } && continue
      echo "/usr/bin/time -f '%e %U %S %M' -o $out/t_${L}_${e}_$m.time $A certify $out/run_$L --eps $e --examples $N --method $m --report $out/r_${L}_${e}_$m.json --quiet $extra >/dev/null" >>"$jobs"
    done
  done
done
cnn_eps="$($PY -c 'print("%.17g %.17g" % (1/255, 2/255))')"
: >"$out/jobs_cnn.txt"
if [ "$cnn" -gt 0 ]; then
  for m in $methods; do
    for e in $cnn_eps; do
      extra=""
      [ "$m" = alpha-crown ] && extra="--out $out/c_cnn_$e.cert --key $out/a"
      [ -s "$out/t_cnn_${e}_$m.time" ] && [ -s "$out/r_cnn_${e}_$m.json" ] &&
        { [ "$m" != alpha-crown ] || [ -s "$out/c_cnn_$e.cert" ]; } && continue
      echo "/usr/bin/time -f '%e %U %S %M' -o $out/t_cnn_${e}_$m.time $A certify $out/run_cnn --eps $e --examples $N --method $m --report $out/r_cnn_${e}_$m.json --quiet $extra >/dev/null" >>"$out/jobs_cnn.txt"
    done
  done
fi
xargs -r -P "$J" -d '\n' -n 1 sh -c <"$jobs"
if [ "$cnn" -gt 0 ]; then
  if [ -n "${cnn_pid:-}" ]; then wait "$cnn_pid"; fi
  acc=$("$T" eval "$out/run_cnn" 2>/dev/null | sed -n 's/^accuracy *\([0-9.]*\)$/\1/p')
  echo "| default CNN (resnet-cifar10) | $cnn | $(cut -d' ' -f1 "$out/cnn_train.time") | $acc (cifar10-test, 1000 images) |"
  xargs -r -P "$J" -d '\n' -n 1 sh -c <"$out/jobs_cnn.txt"
fi
echo
echo "### auditor certify RUN_DIR: per method, of the first $N test images"
echo
echo "Verified / falsified / unknown; wall and CPU (user + sys) seconds per property (the whole auditor process: the run's checks and loading included, divided by N); peak resident memory of the process."
echo
echo "| network | eps | method | verified | falsified | unknown | wall s / property | CPU s / property | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
# one row of the table: NETWORK EPS-LABEL KEY (t_KEY_EPS_METHOD.time, r_..json) EPS METHOD
result_row() {
  local sec us sy kib v f u
  read -r sec us sy kib <"$out/t_${3}_${4}_$5.time"
  read -r v f u < <($PY -c "import json; d=json.load(open('$out/r_${3}_${4}_$5.json')); print(d['verified'], d['falsified'], d['unknown'])")
  $PY -c "print('| $1 | $2 | $5 | $v (%.0f%%) | $f | $u | %.3f | %.3f | %.0f |' % (100*$v/$N, $sec/$N, ($us+$sy)/$N, $kib/1024))"
}
for L in $nets; do
  for e in $epss; do
    for m in $methods; do result_row "784-256x$L-10" "$e" "$L" "$e" "$m"; done
  done
done
if [ "$cnn" -gt 0 ]; then
  for e in $cnn_eps; do
    for m in $methods; do result_row "default CNN" "$($PY -c "print('%d/255' % round($e*255))")" cnn "$e" "$m"; done
  done
fi
if [[ " $methods " == *" alpha-crown "* ]]; then
  echo
  echo "### check-certificate (one pass) against certify: the alpha-CROWN certificates above"
  echo
  echo "CPU (user + sys) seconds of each auditor process, whole (the run's checks and loading included); check-certificate recomputes each margin's bound from the recorded slopes (one backward pass, no search, no attack)."
  echo
  echo "| network | eps | certify CPU s | check-certificate CPU s | ratio |"
  echo "|---|---|---|---|---|"
  keys=""
  for L in $nets; do for e in $epss; do keys="$keys 784-256x$L-10:$L:$e:run_$L"; done; done
  if [ "$cnn" -gt 0 ]; then for e in $cnn_eps; do keys="$keys default-CNN:cnn:$e:run_cnn"; done; fi
  for k in $keys; do
    IFS=: read -r name key e run <<<"$k"
    /usr/bin/time -f '%U %S' -o "$out/tc_${key}_$e.time" "$A" check-certificate "$out/c_${key}_$e.cert" "$out/$run" >/dev/null
    read -r _ us sy _ <"$out/t_${key}_${e}_alpha-crown.time"
    read -r cu cs <"$out/tc_${key}_$e.time"
    $PY -c "c=$us+$sy; k=$cu+$cs; print('| $name | %.4g | %.2f | %.2f | %.1fx |' % ($e, c, k, c/k if k > 0 else float('inf')))"
  done
fi
if [ $onnx -eq 1 ]; then
  : >"$jobs"
  for L in $(echo $onnx_nets | tr ' ' '\n' | sort -rn); do
    for e in $epss; do
      csv="$out/inst_${L}_$e.csv"
      for ((i = 0; i < N; i++)); do echo "net_$L.onnx,props_${L}_$e/prop_$i.vnnlib,600"; done >"$csv"
      [ -s "$out/ti_${L}_$e.time" ] && [ -s "$out/inst_${L}_$e.out" ] && continue
      echo "/usr/bin/time -f '%e %U %S %M' -o $out/ti_${L}_$e.time $A certify --instances $csv --method crown >$out/inst_${L}_$e.out" >>"$jobs"
    done
  done
  xargs -r -P "$J" -d '\n' -n 1 sh -c <"$jobs"
  echo
  echo "### The same properties on the ONNX export (certify --instances, CROWN)"
  echo
  echo "The file's bounds also hold for any FP32 evaluation of it (docs/certify.md \"What is claimed\"), so its unsat count can only be <= the run's verified count."
  echo
  echo "| network | eps | unsat (run: verified) | sat (run: falsified) | unknown | wall s / property | CPU s / property | peak RSS MiB |"
  echo "|---|---|---|---|---|---|---|---|"
  for L in $onnx_nets; do
    for e in $epss; do
      read -r sec us sy kib <"$out/ti_${L}_$e.time"
      s=$(tail -1 "$out/inst_${L}_$e.out")
      read -r v f u < <($PY -c "import json; d=json.load(open('$out/r_${L}_${e}_crown.json')); print(d['verified'], d['falsified'], d['unknown'])")
      nu=$(echo "$s" | sed -n 's/.*: \([0-9]*\) unsat.*/\1/p') ns=$(echo "$s" | sed -n 's/.*, \([0-9]*\) sat.*/\1/p')
      nk=$(echo "$s" | sed -n 's/.*, \([0-9]*\) unknown.*/\1/p')
      $PY -c "print('| 784-256x$L-10 | $e | $nu ($v) | $ns ($f) | $nk | %.3f | %.3f | %.0f |' % ($sec/$N, ($us+$sy)/$N, $kib/1024))"
    done
  done
fi
if [ $torch -eq 1 ] && [[ " $methods " == *" ibp "* ]] && [[ " $methods " == *" crown "* ]]; then
  echo
  echo "### The tool's bounds against bench/torch_bounds.py (FP64, no widening): per example the smallest margin bound"
  echo
  echo "| network | eps | method | max abs diff | max diff / max(1, abs(torch)) | IBP: max diff / rounding widening | tool above torch | verified: tool / torch |"
  echo "|---|---|---|---|---|---|---|---|"
  for L in $nets; do
    for e in $epss; do
      $PY bench/torch_bounds.py --weights "$out/net_$L.safetensors" --props "$out/props_${L}_$e" \
        --report-ibp "$out/r_${L}_${e}_ibp.json" --report-crown "$out/r_${L}_${e}_crown.json" --threads 1 |
        while read -r line; do
          $PY -c "import json,sys; d=json.loads(sys.argv[1]); w=d['max_diff_over_widening']; print('| 784-256x$L-10 | $e | %s | %.3g | %.3g | %s | %d | %d / %d |' % (d['method'], d['max_abs_diff'], d['max_rel_diff'], '-' if w is None else '%.3g' % w, d['tool_above_torch'], d['verified_tool'], d['verified_torch']))" "$line"
        done
    done
  done
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
