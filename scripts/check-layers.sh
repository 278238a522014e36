#!/usr/bin/env bash
# check-layers.sh - the layer rule of docs/architecture.md, checked: every #include "..." of a
# library folder names a file of its own folder or of a layer below it; a program folder may include
# every library. The order is read from the machine-readable block of docs/architecture.md
# (between "<!-- layers" and "-->": one layer a line, bottom-up, several folders on one line being
# peers that do not include each other; "allow FOLDER FILE  # why" lines name a documented exception).
# tests/ and bench/ are exempt (they may include anything). A folder with C or CUDA sources that the
# block does not name is an error too (a new folder gets its place in the table).
# A layer may be a nested folder (backend/cuda): a file belongs to the deepest folder the block names.
# A forward declaration "struct NAME;" in a library file whose struct is defined in a higher layer
# is a violation too (naming a higher layer's type without including it).
# Usage: bash scripts/check-layers.sh [REPO_ROOT]; prints FILE:LINE for each violation, exit 1 if any.
set -u
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT" || exit 2
DOC=docs/architecture.md
block=$(awk '/^<!-- layers/ {on = 1; next} on && /^-->/ {exit} on' "$DOC")
[ -n "$block" ] || { echo "$DOC: no \"<!-- layers\" block"; exit 2; }
declare -A rank allow
n=0
while read -r first rest; do
  line="$first $rest"
  line=${line%%#*}
  set -- $line
  [ $# -eq 0 ] && continue
  if [ "$1" = allow ]; then
    [ $# -eq 3 ] || { echo "$DOC: bad allow line: $first $rest"; exit 2; }
    allow["$2 $3"]=1
    continue
  fi
  n=$((n + 1))
  for f in "$@"; do rank[$f]=$n; done
done <<<"$block"
EXEMPT=" tests bench "
bad=0
# the layer folder of a path: its deepest leading folder that the block names, else its first
layer_of() {
  local p=$1 d best=${1%%/*}
  d=${p%/*}
  while [ "$d" != "$p" ] && [ -n "$d" ]; do
    if [ -n "${rank[$d]:-}" ]; then best=$d; break; fi
    p=$d; d=${d%/*}
  done
  printf '%s' "$best"
}
# every folder with sources has a layer
for d in $(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' | while read -r f; do
             case $f in */*) layer_of "$f"; echo ;; esac; done | sort -u); do
  case "$EXEMPT" in *" $d "*) continue ;; esac
  [ -n "${rank[$d]:-}" ] || { echo "$d/: a source folder with no layer in $DOC"; bad=1; }
done
top=$n # the last line of the block: the programs, which may include every library
while IFS=: read -r file lineno text; do
  src=$(layer_of "$file")
  case "$EXEMPT" in *" $src "*) continue ;; esac
  [ -n "${rank[$src]:-}" ] || continue
  inc=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$text")
  [ -n "$inc" ] || continue
  target=$(realpath -m --relative-to=. "$(dirname "$file")/$inc")
  [ "${target%%/*}" = "$target" ] && continue   # a file at the root (none today)
  dst=$(layer_of "$target")
  [ "$dst" = "$src" ] && continue
  [ -n "${allow["$src $target"]:-}" ] && continue
  if [ -z "${rank[$dst]:-}" ]; then
    case "$EXEMPT" in *" $dst "*) ;; *) continue ;; esac
    echo "$file:$lineno: $src/ includes $target ($dst/ is exempt from the layers, not a library)"; bad=1; continue
  fi
  if [ "${rank[$src]}" -eq "$top" ] && [ "${rank[$dst]}" -lt "$top" ]; then continue; fi
  if [ "${rank[$dst]}" -ge "${rank[$src]}" ]; then
    echo "$file:$lineno: $src/ (layer ${rank[$src]}) includes $target ($dst/, layer ${rank[$dst]}): against the layer order of $DOC"
    bad=1
  fi
done < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' | xargs grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' /dev/null)
# forward declarations of a higher layer's struct
declare -A defined_in
while IFS=: read -r file _ text; do
  name=$(sed -n 's/.*struct[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*{.*/\1/p' <<<"$text")
  [ -n "$name" ] && [ -z "${defined_in[$name]:-}" ] && defined_in[$name]=$file
done < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' | grep -v '^tests/\|^bench/' |
         xargs grep -n 'struct[[:space:]]\{1,\}[A-Za-z_][A-Za-z0-9_]*[[:space:]]*{' /dev/null)
while IFS=: read -r file lineno text; do
  src=$(layer_of "$file")
  case "$EXEMPT" in *" $src "*) continue ;; esac
  [ -n "${rank[$src]:-}" ] || continue
  name=$(sed -n 's/^[[:space:]]*struct[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*;.*/\1/p' <<<"$text")
  def=${defined_in[$name]:-}
  [ -n "$def" ] || continue
  dst=$(layer_of "$def")
  [ "$dst" = "$src" ] && continue
  [ -n "${rank[$dst]:-}" ] || continue
  if [ "${rank[$dst]}" -ge "${rank[$src]}" ] && ! { [ "${rank[$src]}" -eq "$top" ] && [ "${rank[$dst]}" -lt "$top" ]; }; then
    echo "$file:$lineno: $src/ (layer ${rank[$src]}) declares struct $name of $def ($dst/, layer ${rank[$dst]}): a higher layer's type"
    bad=1
  fi
done < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' |
         xargs grep -n '^[[:space:]]*struct[[:space:]]\{1,\}[A-Za-z_][A-Za-z0-9_]*[[:space:]]*;' /dev/null)
if [ $bad -eq 0 ]; then echo "check-layers: every #include follows the layer order of $DOC ($n layers)"; fi
exit $bad
