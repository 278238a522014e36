#!/usr/bin/env bash
# cli_grammar.sh - one command-line grammar (issue 38, "One CLI grammar"): every subcommand parses
# through one table (cli/vt_cli_opts.h) whose --help lists every option it takes and states the
# default evaluation order where it has one; RUN_DIR is the positional argument (--run DIR still
# accepted, with a warning on stderr); --service FILE on both sides (trainer serve's --service-file
# accepted with a warning); and the frictions of the issue, each checked: train creates missing
# parents, a PyTorch file given to --init without --init-layout torch is refused with a hint naming
# it, sample on a text without newlines, eval says which data it evaluated (and warns on a user-data
# run's own training file), the report shows the evaluation figure, docs/cnn.md and docs/format.md.
# Usage: cli_grammar.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh" # vt_scale (hang guards)
B=$(cd "${1:?usage: cli_grammar.sh BUILD_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/vt-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
TR="$B/trainer"
AU="$B/auditor"
AR="$B/arbiter"
G() { timeout "$(vt_scale 300)" "$@"; } # a hang guard around every program

# want STATUS REGEX -- command...: the status and a line of stdout+stderr matching REGEX
want() {
  local st=$1 re=$2; shift 3
  G "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [ "$got" = "$st" ] && cat "$T/out" "$T/err" | grep -Eq -- "$re"; then ok
  else bad "[$*] exit $got (want $st), out: $(head -c 400 "$T/out") err: $(head -c 600 "$T/err") (want /$re/)"; fi
}

G "$TR" keygen "$T/key" >/dev/null || bad "keygen"
S=(--set subset=500 --set 'layers=[784,16,10]' --set steps=4 --set checkpoint_every=2 --set state_hash_every=1 --set batch=32 --quiet)

unset VT_CLI_DEPRECATED # the warnings are checked here
# --- 1. --help from the tables: every option listed is taken; the default orders stated
help_of() { G "$@" --help 2>&1; }
check_help() { # ORDER-or-"" command...
  local order=$1; shift
  local h opts o
  h=$(help_of "$@") || { bad "$* --help: exit $?"; return; }
  [ -n "$order" ] && { grep -q "^default evaluation order: $order" <<<"$h" && ok || bad "$* --help: no default order $order"; }
  [ -z "$order" ] && { grep -q "^default evaluation order" <<<"$h" && bad "$* --help states an order" || ok; }
  opts=$(sed -n '/^options:/,$p' <<<"$h" | grep -oE '^  --[a-z][a-z-]*' | sed 's/^ *//')
  [ -n "$opts" ] || { bad "$* --help lists no option"; return; }
  for o in $opts; do # each listed option is known to the parser (whatever else it says of its value)
    G "$@" "$o" >"$T/o" 2>&1 </dev/null
    grep -q "unknown option" "$T/o" && bad "$* --help lists $o, which the parser refuses" || ok
  done
  G "$@" --no-such-option >"$T/o" 2>&1; [ $? = 64 ] && grep -q 'unknown option "--no-such-option"' "$T/o" && ok ||
    bad "$*: an unknown option must be a usage error naming it: $(cat "$T/o")"
}
check_help blas "$TR" train
check_help blas "$TR" serve
check_help "" "$TR" recipe
check_help "" "$TR" plain
check_help "" "$TR" export
check_help "" "$TR" report
check_help "" "$TR" eval
check_help "" "$TR" sample
check_help split "$AU" verify
check_help pairwise "$AU" challenge
check_help split "$AU" certify
check_help split "$AU" check-certificate
check_help reverse "$AR" serve
check_help reverse "$AR" check
for p in trainer auditor arbiter; do
  "$B/$p" --help | grep -q "^commands:" && ok || bad "$p --help lists no commands"
  "$B/$p" keygen --help | grep -q -- "--force" && ok || bad "$p keygen --help"
done
# the test builds list their testing options in the same help; the production builds do not
"$B/trainer-test" train --help | grep -q -- "--stop-after" && ok || bad "trainer-test train --help lacks --stop-after"
"$TR" train --help | grep -q -- "--stop-after" && bad "production trainer lists --stop-after" || ok

# --- 2. RUN_DIR positional; --run deprecated with a warning; parents created (friction 1)
cd "$T" || exit 1
want 0 "^commitment +runs/deep/x/commitment.vtc" -- "$TR" train runs/deep/x --key "$T/key" "${S[@]}"
[ -f "$T/runs/deep/x/commitment.vtc" ] && ok || bad "train RUN_DIR with missing parents: no run"
want 0 "warning: --run is deprecated; give RUN_DIR as the argument" -- "$TR" train --run "$T/runs/old/y" --key "$T/key" "${S[@]}"
cmp -s "$T/runs/deep/x/commitment.vtc" "$T/runs/old/y/commitment.vtc" && ok || bad "--run and RUN_DIR: other commitments"
want 64 "give RUN_DIR once" -- "$TR" train "$T/runs/a" --run "$T/runs/b" --key "$T/key" "${S[@]}"
want 2 "cannot open run store" -- "$TR" train "$T/never/made" --key "$T/key" "${S[@]}" --resume
[ ! -e "$T/never" ] && ok || bad "--resume created the parents of a run that never was"
printf x >"$T/afile"
want 2 "afile is not a directory" -- "$TR" train "$T/afile/x" --key "$T/key" "${S[@]}"
RUN="$T/runs/deep/x"
want 0 "^VERIFIED" -- "$AU" verify "$RUN" --quiet
want 0 "warning: --run is deprecated" -- "$AU" verify --run "$RUN" --quiet
want 0 "^accuracy" -- "$TR" eval "$RUN"
want 0 "warning: --run is deprecated" -- "$TR" eval --run "$RUN"
want 0 "^exported step 4" -- "$TR" export "$RUN" --out="$T/x.st" --pubkey "$T/key.pub" # --name=VALUE
want 64 "--out needs a value" -- "$TR" export "$RUN" --out
want 64 'unexpected argument "extra"' -- "$TR" eval "$RUN" extra
want 64 '--jobs: "0" is not an integer' -- "$AU" verify "$RUN" --jobs 0
want 64 '--order: "bogus" is not an evaluation order' -- "$AR" check "$T/none" --order bogus
# --run twice, empty values, options the mode does not use: usage errors, never silently taken or ignored
want 64 "--run given twice" -- "$TR" eval --run "$RUN" --run "$RUN"
want 64 "an empty argument" -- "$TR" eval ""
want 64 "--key: an empty value" -- "$TR" train "$T/runs/e" --key= "${S[@]}"
want 64 "--run: an empty value" -- "$AU" verify --run=
want 64 "--eps: for certify" -- "$AU" check-certificate "$T/none.cert" "$RUN" --eps 0.1
want 64 "--out: for certify" -- "$AU" check-certificate "$T/none.cert" "$RUN" --out "$T/c2"
want 64 "--signer: for check-certificate" -- "$AU" certify "$RUN" --eps 0.1 --examples 2 --signer "$T/key.pub"
want 64 "--cex: for a VNN-LIB property" -- "$AU" certify "$RUN" --eps 0.1 --examples 2 --cex "$T/c.cex"
want 64 "--timeout SECONDS: a positive number" -- "$AU" certify "$RUN" --eps 0.1 --examples 2 --timeout -1
want 2 "--pubkey: " -- "$TR" report "$RUN" --out "$T/r.html" --pubkey "$T/no-such.pub"
want 64 'unexpected argument "--threads=2"' -- "$TR" eval "$RUN" -- --threads=2

# --- 3. --service on both sides (trainer serve's --service-file: deprecated, still accepted)
"$AR" keygen "$T/rk" >/dev/null || bad "arbiter keygen"
want 64 "warning: --service-file is deprecated; use --service" -- "$TR" serve "$RUN" --listen 127.0.0.1:0 \
  --key "$T/key" --arbiter-key "$T/rk.pub" --service-file "$T/s.vtsr" --record-ttl 5
want 64 "record-ttl 5: a service record lives at least" -- "$TR" serve "$RUN" --listen 127.0.0.1:0 \
  --key "$T/key" --arbiter-key "$T/rk.pub" --service "$T/s.vtsr" --record-ttl 5
grep -q deprecated "$T/err" && bad "--service warned" || ok

# --- 4. --init: a PyTorch file without --init-layout torch is refused, naming --init-layout torch
G "$TR" export "$RUN" --layout torch --out "$T/torch.st" --pubkey "$T/key.pub" >/dev/null 2>&1 || bad "export --layout torch"
python3 - "$T/torch.st" "$T/torch-nometa.st" <<'PY' || bad "strip the metadata"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
j = json.dumps(h).encode(); j += b" " * (-(8 + len(j)) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(j)) + j + b[8 + n:])
PY
want 64 "give --init-layout torch" -- "$TR" train "$T/runs/i1" --key "$T/key" "${S[@]}" --init "$T/torch-nometa.st"
[ ! -e "$T/runs/i1" ] && ok || bad "a refused --init file created the run"
want 0 "^commitment" -- "$TR" train "$T/runs/i2" --key "$T/key" "${S[@]}" --init "$T/torch-nometa.st" --init-layout torch
want 0 "^VERIFIED" -- "$AU" verify "$T/runs/i2" --quiet

# --- 5. eval names the data it evaluated; a user-data run's own file is said so
grep -q "^evaluated on    mnist-test: the recipe's data set's test split" <(G "$TR" eval "$RUN" 2>/dev/null) && ok ||
  bad "eval of an MNIST run does not say mnist-test"
python3 - "$T/data" <<'PY' || bad "write the data set"
import json, struct, sys, os
os.makedirs(sys.argv[1], exist_ok=True)
N, D = 64, 16
xs = [((i * 7 + j * 3) % 11) / 10.0 for i in range(N) for j in range(D)]
ys = [i % 4 for i in range(N)]
t = [("x", "F32", [N, D], struct.pack("<%df" % (N * D), *xs)), ("y", "I64", [N], struct.pack("<%dq" % N, *ys))]
head, off = {}, 0
for name, dt, shape, b in t:
    head[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}; off += len(b)
h = json.dumps(head).encode(); h += b" " * (-(8 + len(h)) % 8)
open(os.path.join(sys.argv[1], "data.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + b"".join(x[3] for x in t))
open(os.path.join(sys.argv[1], "flat.txt"), "w").write(("the quick brown fox jumps over the lazy dog " * 60).strip())
PY
U=(--data-dir "$T/data" --set dataset=safetensors:data.safetensors --set 'layers=[16,8,4]' --set steps=4
   --set batch=16 --set checkpoint_every=2 --set state_hash_every=1 --quiet)
want 0 "^commitment" -- "$TR" train "$T/runs/u" --key "$T/key" "${U[@]}"
want 0 "^evaluated on    safetensors:data.safetensors: the run's own training data" -- \
  "$TR" eval "$T/runs/u" --data-dir "$T/data"
grep -q "warning: .*the run's own training data.*not a held-out one; give --dataset" "$T/err" && ok ||
  bad "eval of a user-data run did not warn: $(cat "$T/err")"
want 0 "^evaluated on    safetensors:data.safetensors: the data set given with --dataset" -- \
  "$TR" eval "$T/runs/u" --data-dir "$T/data" --dataset safetensors:data.safetensors
grep -q warning "$T/err" && bad "eval warned about a --dataset given" || ok

# --- 6. sample on a text without newlines: a default prompt, no --prompt blamed
GPT=(--recipe "$ROOT/recipes/gpt-shakespeare.json" --data-dir "$T/data" --set dataset=text:flat.txt --set gpt_vocab=32
     --set gpt_layers=1 --set gpt_width=16 --set gpt_heads=2 --set gpt_context=8 --set batch=4 --set steps=4
     --set warmup=1 --set checkpoint_every=2 --set state_hash_every=1 --quiet)
want 0 "^commitment" -- "$TR" train "$T/runs/g" --key "$T/key" "${GPT[@]}"
want 0 "^t" -- "$TR" sample "$T/runs/g" --data-dir "$T/data" --tokens 12
grep -q -- "--prompt" "$T/err" && bad "sample blamed a --prompt nobody gave: $(cat "$T/err")" || ok
[ "$(head -c 13 "$T/out" | wc -c)" = 13 ] && ok || bad "sample: $(cat "$T/out")"
want 64 "--prompt: character 0x0a is not in the vocabulary" -- "$TR" sample "$T/runs/g" --data-dir "$T/data" \
  --prompt "$(printf 'a\nb')"
want 0 "^evaluated on    text-val:flat.txt: the last 10% of the run's text file" -- "$TR" eval "$T/runs/g" --data-dir "$T/data"

# --- 7. the report shows the evaluation figure
want 0 'id="evaluation" data-computed="1">accuracy 0\.[0-9]+ on mnist-test' -- "$TR" report "$RUN" --out -
want 0 'id="evaluation" data-computed="1">validation loss [0-9.]+ nats/char on text-val' -- \
  "$TR" report "$T/runs/g" --out - --data-dir "$T/data"
want 0 'id="evaluation" data-computed="0">not computed \(--no-eval\)' -- "$TR" report "$RUN" --out - --no-eval

# --- 8. the documents: cnn.md says which convolution strides and how eval cuts the text; format.md's
# Python needs no package that nothing installs
grep -q 'its \*\*first\*\* convolution (`conv1`, 3×3, padding 1) has stride 2' "$ROOT/docs/cnn.md" && ok ||
  bad "docs/cnn.md: which convolution of a downsampling block has stride 2"
grep -q 'non-overlapping windows of T = `gpt_context`' "$ROOT/docs/cnn.md" && ok ||
  bad "docs/cnn.md: how trainer eval cuts the GPT's text"
PYT=python3 # one that imports numpy and torch (scripts/install-deps.sh), to run the examples too
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c "import numpy, torch" 2>/dev/null; then PYT=$p; break; fi
done
"$PYT" - "$ROOT/docs/format.md" "$T" <<'PY' || bad "docs/format.md: its Python examples"
import re, sys, importlib.util
src = open(sys.argv[1]).read()
blocks = re.findall(r"```python\n(.*?)```", src, re.S)
assert blocks, "no python example"
allowed = {"json", "struct", "numpy", "torch"}
for b in blocks:
    for m in re.findall(r"^\s*(?:import|from)\s+([\w.]+(?:\s*,\s*[\w.]+)*)", b, re.M):
        for mod in re.split(r"\s*,\s*", m):
            mod = mod.split()[0].split(".")[0]
            assert mod in allowed, "docs/format.md imports %s" % mod
env = {}
if all(importlib.util.find_spec(m) for m in ("numpy", "torch")):
    for b in blocks:
        exec(compile(b, "format.md", "exec"), env)
    import numpy as np
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    env["save_file"]({"w": a, "b": np.ones(4, np.float32)}, sys.argv[2] + "/doc.st")  # the writer's file
    t = env["load_file"](sys.argv[2] + "/doc.st")  # read back by the reader
    assert sorted(t) == ["b", "w"] and (t["w"].numpy() == a).all(), "format.md: save_file / load_file"
    t = env["load_file"](sys.argv[2] + "/torch.st")  # a `trainer export --layout torch` file
    assert t and all(v.dtype is not None for v in t.values()), "format.md: load_file of an export"
    print("docs/format.md: the examples ran")
PY

echo "cli_grammar: $pass passed, $fail failed"
[ "$fail" = 0 ]
