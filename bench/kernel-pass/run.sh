#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# bench/kernel-pass/run.sh [--repeats N] [--top N] [--instructions] [OUT.tsv]
#
# The candidate load-time passes (pass.c) over Debian sid's amd64 modules:
# amdgpu.ko, kvm.ko and the --top (default 20) modules with the most
# callsite locations.  Each module is laid out as the loader would
# (dump.py), every candidate is checked against the kernel's own
# per-record scan, then timed --repeats times (default 21); the table
# gives the median, min and max microseconds and the bytes each candidate
# allocates.  --instructions counts instead, with callgrind, the
# instructions each candidate executes once per module: the same on a
# loaded machine as on an idle one.  kernel/README.md has the results and
# the choice.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
repeats=21 top=20 out= instructions=0
while [ $# -gt 0 ]; do
    case "$1" in
        --repeats) repeats=$2; shift 2;;
        --top) top=$2; shift 2;;
        --instructions) instructions=1; shift;;
        -h|--help) sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "$0"; exit 0;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2;;
        *) out=$1; shift;;
    esac
done
work=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/kernel-pass
mkdir -p "$work"
root=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64)
kver=$(cat "$root/../kver")
mods=$(find "$root" -path "*/modules/$kver/*" -name '*.ko*' | sort)
[ -n "$mods" ] || { echo "run.sh: no modules under $root" >&2; exit 1; }
# shellcheck disable=SC2086
python3 "$HERE/dump.py" --count $mods | sort -k1,1nr -k2 > "$work/counts.txt"
mapfile -t pick < <({ head -n "$top" "$work/counts.txt"; grep -E '/(kvm|amdgpu)\.ko' "$work/counts.txt"; } |
    awk '!seen[$2]++ {print $2}')
dumps=()
for m in "${pick[@]}"; do
    d=$work/$(basename "${m%%.ko*}").bin
    [ -s "$d" ] && [ "$d" -nt "$m" ] || python3 "$HERE/dump.py" "$m" "$d" 4 >/dev/null
    dumps+=("$d")
done
gcc -O2 -Wall -Wextra -Werror -o "$work/pass" "$HERE/pass.c"
if [ $instructions = 1 ]; then
    command -v valgrind >/dev/null || { echo "run.sh: --instructions needs valgrind (apt-get install valgrind)" >&2; exit 1; }
    # Checked against stock first, as every timed run is.
    "$work/pass" -r 1 "${dumps[@]}" >/dev/null
    {
        printf 'module\tcandidate\tinstructions\n'
        for d in "${dumps[@]}"; do
            for c in stock bsearch gallop merge; do
                valgrind --tool=callgrind --toggle-collect="pass_$c" --callgrind-out-file="$work/cg.out" \
                    "$work/pass" -c "$c" "$d" >/dev/null 2>"$work/cg.err" || { cat "$work/cg.err" >&2; exit 1; }
                printf '%s\t%s\t%s\n' "$(basename "$d" .bin)" "$c" "$(sed -n 's/^summary: //p' "$work/cg.out")"
            done
        done
    } | if [ -n "$out" ]; then tee "$out"; else cat; fi
    exit 0
fi
echo "run.sh: $kver, ${#dumps[@]} modules, $repeats repeats" >&2
if [ -n "$out" ]; then
    "$work/pass" -r "$repeats" "${dumps[@]}" | tee "$out"
else
    "$work/pass" -r "$repeats" "${dumps[@]}"
fi
