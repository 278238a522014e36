#!/usr/bin/env bash
# bab_mnist_fc.sh - branch and bound on the VNN-COMP mnist_fc shapes (issue 40 item 5;
# docs/benchmarks.md "Branch and bound on the mnist_fc shapes", docs/certify.md "Branch and bound").
#
# Trains the networks 784-256x{2,4,6}-10 with the trainer (recipes/mnist_fc_256xL.json, --steps of
# their steps), exports each to ONNX, writes the L-infinity properties of the first --count test
# images at each eps (`auditor certify RUN --write-vnnlib`), writes a VNN-COMP instances file per
# network and eps (OUT/L/inst_E.csv: net.onnx,prop_i.vnnlib,TIMEOUT a line), then answers every
# instance with each method ONE BY ONE (`auditor certify --onnx NET --vnnlib PROP --method M
# --timeout T`, the instances file's line), so that each gets its own wall time and peak resident
# memory (/usr/bin/time %e %U %M of the whole auditor process, its loading included). beta-crown's
# answers are certified (--out --key) and every certificate is re-checked (`check-certificate CERT
# --onnx NET --vnnlib PROP`, timed the same way). Prints a markdown table per network x eps x method
# (unsat / sat / unknown / timeout, median and max wall seconds per instance, peak memory), the
# check-certificate against certify table for beta-crown's unsat certificates, and the cross-check:
# no beta-crown answer contradicts alpha-crown's (unsat against sat, either way); every sat answer's
# point is evaluated outside the project (bench/bab_cex_check.py: in the box, FP64 margin <= 0).
#
# Results are appended to OUT/results.tsv; an instance already there is not run again, so a partial
# run continues where it stopped (--table: print the tables of OUT/results.tsv and run nothing).
# Not a test: wall seconds depend on the machine and its load.
#
# Usage: bash bench/bab_mnist_fc.sh BUILD_DIR OUT_DIR [options]
#   --nets "2 4 6"            hidden layers of the networks (256 wide), in this order
#   --eps "0.02 0.03 0.05"    radii, in this order
#   --count 15                the first N test images
#   --first 0                 start at this property index (with --count: a slice)
#   --methods "alpha-crown beta-crown"
#   --timeout 100             seconds per instance (the instances file's column, --timeout)
#   --domains 100000          beta-crown's subdomain limit (high: the timeout is the limit)
#   --steps 2000              training steps (the recipes' own count)
#   --weight-decay WD         SGD weight decay (the recipes' own: 0); the networks depend on it far more
#                             than the accuracy does (docs/benchmarks.md), so it goes into OUT/log
#   --threads 1               auditor --threads
#   --nice 19                 niceness of every process this script starts (0: none)
#   --table                   print the tables only
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 64; }
[ $# -ge 2 ] || usage
B=$(cd "$1" && pwd) O=$2
shift 2
NETS="2 4 6" EPS="0.02 0.03 0.05" COUNT=15 FIRST=0 METHODS="alpha-crown beta-crown" T=100 DOMAINS=100000
STEPS=2000 WD= THREADS=1 NICE=19 TABLE=0
while [ $# -gt 0 ]; do
  case $1 in
    --nets) NETS=$2; shift 2 ;; --eps) EPS=$2; shift 2 ;; --count) COUNT=$2; shift 2 ;;
    --first) FIRST=$2; shift 2 ;; --methods) METHODS=$2; shift 2 ;; --timeout) T=$2; shift 2 ;;
    --domains) DOMAINS=$2; shift 2 ;; --steps) STEPS=$2; shift 2 ;; --weight-decay) WD=$2; shift 2 ;; --threads) THREADS=$2; shift 2 ;;
    --nice) NICE=$2; shift 2 ;; --table) TABLE=1; shift ;; -h|--help) usage ;;
    *) echo "bab_mnist_fc.sh: unknown option $1" >&2; usage ;;
  esac
done
mkdir -p "$O"
O=$(cd "$O" && pwd)
R=$O/results.tsv
[ -e "$R" ] || printf 'net\teps\tmethod\tidx\tanswer\twall_s\tuser_s\trss_kb\tcheck\tcheck_wall_s\tcheck_user_s\tcheck_rss_kb\tload1\n' >"$R"
N() { if [ "$NICE" -gt 0 ]; then nice -n "$NICE" "$@"; else "$@"; fi; }

tables() {
  python3 - "$R" "$T" <<'PY'
import csv, json, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
T = float(sys.argv[2])
def subdomains(r):  # the report's subdomains bounded (beta-crown), else "-"
    try:
        return json.load(open(os.path.join(os.path.dirname(sys.argv[1]), r["net"], "%s.%s.%s.json" % (
            r["method"], r["eps"], r["idx"])))).get("subdomains", "-")
    except (OSError, ValueError):
        return "-"
key = lambda r: (int(r["net"]), float(r["eps"]))
groups = {}
for r in rows:
    groups.setdefault((r["net"], r["eps"], r["method"]), []).append(r)
print("| network | eps | method | instances | unsat | sat | unknown | timeout | answered within %g s | wall s median / max | user s median / max | peak RSS MiB | subdomains (max) |" % T)
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (n, e, m) in sorted(groups, key=lambda k: (int(k[0]), float(k[1]), k[2])):
    g = groups[(n, e, m)]
    c = {a: sum(1 for r in g if r["answer"] == a) for a in ("unsat", "sat", "unknown", "timeout")}
    other = len(g) - sum(c.values())
    w = [float(r["wall_s"]) for r in g]
    u = [float(r["user_s"]) for r in g]
    ans = sum(1 for r in g if r["answer"] in ("unsat", "sat") and float(r["wall_s"]) <= T)
    sd = [x for x in map(subdomains, g) if isinstance(x, int)]
    print("| 784-256x%s-10 | %s | %s | %d | %d | %d | %d | %d%s | %d (%.0f%%) | %.1f / %.1f | %.1f / %.1f | %.0f | %s |" % (
        n, e, m, len(g), c["unsat"], c["sat"], c["unknown"], c["timeout"],
        " (+%d other)" % other if other else "", ans, 100.0 * ans / len(g),
        statistics.median(w), max(w), statistics.median(u), max(u), max(int(r["rss_kb"]) for r in g) / 1024, max(sd) if sd else "-"))
print()
print("beta-crown's unsat certificates: check-certificate against certify (wall / user s of the processes)")
print()
print("| network | eps | unsat certificates | certify wall s (sum) | check wall s (sum) | check / certify | certify user s | check user s | checks passed |")
print("|---|---|---|---|---|---|---|---|---|")
for (n, e, m) in sorted(groups, key=lambda k: (int(k[0]), float(k[1]), k[2])):
    if m != "beta-crown": continue
    g = [r for r in groups[(n, e, m)] if r["answer"] == "unsat" and r["check"] != "-"]
    if not g: continue
    cw = sum(float(r["wall_s"]) for r in g); kw = sum(float(r["check_wall_s"]) for r in g)
    cu = sum(float(r["user_s"]) for r in g); ku = sum(float(r["check_user_s"]) for r in g)
    ok = sum(1 for r in g if r["check"] == "ok")
    print("| 784-256x%s-10 | %s | %d | %.1f | %.1f | %.3f | %.1f | %.1f | %d of %d |" % (
        n, e, len(g), cw, kw, kw / cw if cw else 0, cu, ku, ok, len(g)))
bad = [r for r in rows if r["check"] not in ("-", "ok")]
print()
print("certificates whose check failed: %d%s" % (len(bad), "".join(
    "\n  %s %s %s property %s: %s" % (r["net"], r["eps"], r["method"], r["idx"], r["check"]) for r in bad)))
a = {(r["net"], r["eps"], r["idx"]): r["answer"] for r in rows if r["method"] == "alpha-crown"}
b = {(r["net"], r["eps"], r["idx"]): r["answer"] for r in rows if r["method"] == "beta-crown"}
both = sorted(set(a) & set(b))
contra = [k for k in both if {a[k], b[k]} == {"unsat", "sat"}]
changed = [k for k in both if a[k] in ("unsat", "sat") and b[k] != a[k]]
print("cross-check on %d properties answered by both: %d contradictions (unsat against sat)%s; "
      "%d answers of alpha-crown that beta-crown does not repeat%s" % (
    len(both), len(contra), "".join("\n  CONTRADICTION 256x%s eps %s property %s: alpha-crown %s, beta-crown %s"
                                    % (k[0], k[1], k[2], a[k], b[k]) for k in contra),
    len(changed), "".join("\n  256x%s eps %s property %s: alpha-crown %s, beta-crown %s"
                          % (k[0], k[1], k[2], a[k], b[k]) for k in changed)))
PY
}
[ "$TABLE" = 1 ] && { tables; exit 0; }

[ -e "$O/k" ] || "$B/trainer" keygen "$O/k" >/dev/null
[ -e "$O/a" ] || "$B/auditor" keygen "$O/a" >/dev/null
echo "bab_mnist_fc.sh: $(date -u '+%F %T') UTC, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$O/log"
for L in $NETS; do
  D=$O/$L
  mkdir -p "$D"
  # a run trained before --weight-decay existed (no OUT/L/wd) used the recipe's own: 0
  if [ -e "$D/run/commitment.vtc" ] && [ "$(cat "$D/wd" 2>/dev/null || echo 0)" != "${WD:-0}" ]; then
    echo "bab_mnist_fc.sh: $D was trained with weight decay $(cat "$D/wd" 2>/dev/null || echo 0), not ${WD:-0}: use another OUT_DIR" >&2
    exit 1
  fi
  if [ ! -e "$D/run/commitment.vtc" ]; then
    echo "${WD:-0}" >"$D/wd"
    /usr/bin/time -f "%e %U %M" -o "$D/train.time" \
      nice -n "$NICE" "$B/trainer" train "$D/run" --key "$O/k" --recipe "recipes/mnist_fc_256x$L.json" \
      --set steps="$STEPS" ${WD:+--set weight_decay="$WD"} --quiet >"$D/train.out" 2>&1
    echo "256x$L: trained $STEPS steps${WD:+ with weight decay $WD}, $(cut -d' ' -f1 "$D/train.time") s wall" | tee -a "$O/log"
  fi
  [ -s "$D/eval.out" ] || N "$B/trainer" eval "$D/run" >"$D/eval.out" 2>&1 || true
  echo "256x$L: test accuracy $(sed -n 's/^accuracy *\([0-9.]*\)$/\1/p' "$D/eval.out")" | tee -a "$O/log"
  [ -e "$D/net.onnx" ] ||
    N "$B/trainer" export "$D/run" --format onnx --out "$D/net.onnx" --pubkey "$O/k.pub" >"$D/export.out" 2>&1
  for E in $EPS; do
    P=$D/p_$E
    if [ ! -d "$P" ]; then
      rm -rf "$P.tmp" && mkdir -p "$P.tmp"
      N "$B/auditor" certify "$D/run" --eps "$E" --examples "$((FIRST + COUNT))" --method ibp \
        --write-vnnlib "$P.tmp" --quiet >"$D/vnnlib_$E.out" 2>&1
      mv "$P.tmp" "$P"
    fi
    I=$D/inst_$E.csv
    : >"$I"
    for ((i = FIRST; i < FIRST + COUNT; i++)); do
      f=prop_$i.vnnlib
      [ -e "$P/$f" ] || { echo "bab_mnist_fc.sh: no property $i in $P" >&2; exit 1; }
      echo "net.onnx,p_$E/$f,$T" >>"$I"
    done
    for M in $METHODS; do
      i=$FIRST
      while IFS=, read -r net prop to; do
        if awk -F'\t' -v n="$L" -v e="$E" -v m="$M" -v i="$i" \
            '$1 == n && $2 == e && $3 == m && $4 == i { f = 1 } END { exit !f }' "$R"; then
          i=$((i + 1)); continue
        fi
        w=$D/$M.$E.$i
        extra=()
        [ "$M" = beta-crown ] && extra=(--domains "$DOMAINS" --out "$w.cert" --key "$O/a")
        rm -f "$w.cert" "$w.result"
        load=$(cut -d' ' -f1 /proc/loadavg)
        set +e
        /usr/bin/time -f "%e %U %M" -o "$w.time" timeout -s KILL "$((to * 3 + 60))" \
          nice -n "$NICE" "$B/auditor" certify --onnx "$D/$net" --vnnlib "$D/$prop" --method "$M" \
          --timeout "$to" --threads "$THREADS" --result "$w.result" --report "$w.json" "${extra[@]}" \
          >"$w.out" 2>"$w.err"
        rc=$?
        set -e
        ans=$(head -1 "$w.result" 2>/dev/null || true)
        [ -n "$ans" ] || ans="error-rc$rc"
        read -r wall user rss < <(tail -1 "$w.time")
        chk=- cw=- cu=- cr=-
        if [ -e "$w.cert" ]; then
          set +e
          /usr/bin/time -f "%e %U %M" -o "$w.ctime" nice -n "$NICE" "$B/auditor" check-certificate "$w.cert" \
            --onnx "$D/$net" --vnnlib "$D/$prop" --threads "$THREADS" >"$w.check" 2>&1
          crc=$?
          set -e
          [ $crc = 0 ] && chk=ok || chk="FAILED-rc$crc"
          read -r cw cu cr < <(tail -1 "$w.ctime")
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$L" "$E" "$M" "$i" "$ans" "$wall" "$user" \
          "$rss" "$chk" "$cw" "$cu" "$cr" "$load" >>"$R"
        echo "256x$L eps $E $M property $i: $ans, $wall s wall, $user s user, $rss KB; check $chk $cw s (load $load)" |
          tee -a "$O/log"
        i=$((i + 1))
      done <"$I"
    done
  done
done
for L in $NETS; do # the sat answers' points, evaluated outside the project (bench/bab_cex_check.py)
  D=$O/$L
  args=()
  for r in "$D"/*.result; do
    [ -e "$r" ] && [ "$(head -1 "$r")" = sat ] || continue
    b=${r##*/} && b=${b%.result} && i=${b##*.} && e=${b#*.} && e=${e%.*}
    args+=("$D/p_$e/prop_$i.vnnlib" "$r")
  done
  [ ${#args[@]} -gt 0 ] || continue
  [ -e "$D/net.st" ] || N "$B/trainer" export "$D/run" --format safetensors --out "$D/net.st" --pubkey "$O/k.pub" >/dev/null
  N python3 bench/bab_cex_check.py "$D/net.st" "${args[@]}" >"$D/cex_check.out" 2>&1 &&
    echo "256x$L: $((${#args[@]} / 2)) sat answers' points confirmed outside (bench/bab_cex_check.py)" | tee -a "$O/log" ||
    { echo "256x$L: SAT ANSWERS NOT CONFIRMED OUTSIDE:" | tee -a "$O/log"; grep -v confirmed "$D/cex_check.out" | tee -a "$O/log"; }
done
echo "bab_mnist_fc.sh: done $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$O/log"
tables
