#!/usr/bin/env bash
# Certification sharded over ranks (issue 26 item 6; docs/benchmarks.md "Certification sharded over
# ranks"): every rank's peak resident memory (VmHWM of its whole process: GNU time's %M, the
# kernel's ru_maxrss) of `auditor certify --onnx NET --vnnlib PROP --out CERT` for N = 1, 2, 4 ranks
# x --shard none | tp | fsdp (one mode per process; N = 1 none is the plain one-process auditor, no
# mpirun), and every certificate compared with that one-process certificate (cmp). The networks are
# random MLPs written by bench/gen_mlp_onnx.py (no training), the property a far threshold on every
# output (unsat; no attack runs); the method is given per network (CROWN's intermediate bounds cost
# one backward pass per neuron and sign of every hidden layer after the first: IBP for the deep one).
# NET resnet-W is the default CIFAR-10 resnet recipe (recipes/resnet-cifar10.json) with resnet_width W
# (16: the recipe's), trained 4 steps (batch 16, a 256-image subset; signed, committed), certified as a
# run (`certify RUN_DIR --eps 0.0002 --examples 2`: the layer graph; the weights column gives the width).
# Usage: bench_cert_shard.sh BUILD_DIR [MPIEXEC (default mpirun)] [NET:METHOD ...]
#   default networks: 784-65536-10:crown 784-65536-10:ibp 784-8192-8192-10:ibp
set -u
B=$(cd "$1" && pwd)
MPIRUN=${2:-mpirun}
shift $(($# >= 2 ? 2 : $#))
NETS=("$@")
[ ${#NETS[@]} = 0 ] && NETS=(784-65536-10:crown 784-65536-10:ibp 784-8192-8192-10:ibp)
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
"$B/auditor" keygen "$T/key" >/dev/null
"$B/trainer" keygen "$T/tkey" >/dev/null
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| network | weights | method | ranks | --shard | answer | peak RSS rank 0 | peak RSS other ranks (max) | wall s | certificate |\n'
printf '|---|---:|---|---:|---|---|---:|---:|---:|---|\n'
gib() { awk -v k="$1" 'BEGIN { printf "%.2f GiB", k / 1048576 }'; }
for spec in "${NETS[@]}"; do
  net=${spec%%:*} meth=${spec##*:}
  case $net in
  resnet-*)
    if [ ! -e "$T/$net" ]; then
      "$B/trainer" train "$T/$net" --key "$T/tkey" --recipe "$HERE/../recipes/resnet-cifar10.json" --set subset=256 \
        --set resnet_width=${net#resnet-} --set batch=16 --set steps=4 --quiet >/dev/null || exit 2
    fi
    weights="width ${net#resnet-}"
    certargs=(certify "$T/$net" --eps 0.0002 --examples 2) ;;
  *)
    if [ ! -e "$T/$net.onnx" ]; then
      mkdir -p "$T/$net"
      python3 "$HERE/gen_mlp_onnx.py" "$T/$net.onnx" "$net" --seed 1 --props "$T/$net" --eps 0.01 --count 2 || exit 2
    fi
    weights=$(echo "$net" | awk -F- '{ s = 0; for (i = 2; i <= NF; i++) s += $(i - 1) * $i; printf "%.1f M", s / 1e6 }')
    certargs=(certify --onnx "$T/$net.onnx" --vnnlib "$T/$net/prop_1.vnnlib") ;;
  esac
  ref="$T/$net-$meth.cert"
  for run in "1 none" "1 tp" "1 fsdp" "2 none" "2 tp" "2 fsdp" "4 none" "4 tp" "4 fsdp"; do
    set -- $run
    np=$1 mode=$2 out="$T/c.cert"
    [ "$np $mode" = "1 none" ] && out=$ref
    rm -f "$T"/rss.* "$T/c.cert"
    args=("${certargs[@]}" --method "$meth" --out "$out" --key "$T/key" --quiet)
    t0=$(date +%s.%N)
    if [ "$np $mode" = "1 none" ]; then
      /usr/bin/time -f %M -o "$T/rss.0" "$B/auditor" "${args[@]}" >"$T/ans" 2>"$T/err"
    else
      "$MPIRUN" --oversubscribe --allow-run-as-root -np "$np" sh -c \
        'exec /usr/bin/time -f %M -o "$0/rss.$OMPI_COMM_WORLD_RANK" "$@"' "$T" "$B/auditor" "${args[@]}" --shard "$mode" \
        >"$T/ans" 2>"$T/err"
    fi
    st=$?
    t1=$(date +%s.%N)
    r0=$(tail -1 "$T/rss.0" 2>/dev/null || echo 0)
    ro=$(for f in "$T"/rss.*; do [ "$f" = "$T/rss.0" ] || tail -1 "$f"; done | sort -n | tail -1)
    same=$(if [ $st != 0 ]; then echo "FAILED (exit $st: $(head -c 200 "$T/err"))"; elif [ "$out" = "$ref" ]; then echo reference;
           elif cmp -s "$ref" "$out"; then echo identical; else echo DIFFERS; fi)
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %s |\n' "$net" "$weights" "$meth" "$np" "$mode" \
      "$(head -1 "$T/ans" | sed 's/^[a-z-]* eps [^:]*: //; s/; certificate .*//')" "$(gib "$r0")" "$([ -n "$ro" ] && gib "$ro" || echo -)" "$(echo "$t1 - $t0" | bc)" "$same"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
