#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# bench/kernel-pass/run.sh [--repeats N] [--top N] [--instructions]
#                          [--v2 DIR] [--series DIR] [--models "NAME..."] [OUT.tsv]
#
# The candidate load-time passes (pass.c) over Debian sid's amd64 modules:
# amdgpu.ko, kvm.ko and the --top (default 20) modules with the most
# callsite locations.  Each module is laid out as the loader would
# (dump.py), every candidate is checked against the kernel's own
# per-record scan, then timed --repeats times (default 21); the table
# gives the median, min and max microseconds and the bytes each candidate
# allocates.  --instructions counts instead, with callgrind, the
# instructions each candidate executes once per module: the same on a
# loaded machine as on an idle one.
#
# With --instructions, two more rows run real kernel code rather than a
# model of it (verbatim.c): with --series DIR, "series", the pass of the
# series in DIR, and, with --v2 DIR, "v2", the posted "ftrace: Drop
# weak function locations of modules when loading them" v2 patches saved
# in DIR.  extract.py applies each to Debian's linux-source-7.2 and takes
# its functions out of the patched files unchanged; each is first checked
# against stock's per-record rule on every module.  --models limits the
# model candidates counted (default all four: "stock bsearch gallop
# merge"; stock's scan alone is most of the run).  docs/kernel-bench.md
# has the results.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
repeats=21 top=20 out='' instructions=0 v2='' series='' models="stock bsearch gallop merge"
while [ $# -gt 0 ]; do
    case "$1" in
        --v2) v2=$(cd "$2" && pwd); shift 2;;
        --series) series=$(cd "$2" && pwd); shift 2;;
        --models) models=$2; shift 2;;
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
mkdir -p "$work/dumps"
for m in "${pick[@]}"; do
    d=$work/dumps/$(basename "${m%%.ko*}").bin
    [ -s "$d" ] && [ "$d" -nt "$m" ] || python3 "$HERE/dump.py" "$m" "$d" 4 >/dev/null
    dumps+=("$d")
done
gcc -O2 -Wall -Wextra -Werror -o "$work/pass" "$HERE/pass.c"
if [ $instructions = 1 ]; then
    command -v valgrind >/dev/null || { echo "run.sh: --instructions needs valgrind (apt-get install valgrind)" >&2; exit 1; }
    # Checked against stock first, as every timed run is.
    "$work/pass" -r 1 "${dumps[@]}" >/dev/null
    # The verbatim rows: NAME DIR CALL DEFINITIONS...
    verbatim=()
    [ -z "$series" ] || verbatim+=("series $series (ftrace_mod_clear_dead(mod,words,n),0) ftrace_mod_clear_dead")
    [ -z "$v2" ] || verbatim+=("v2 $v2 ftrace_zero_weak_locs(mod,words,n) kallsyms_symbol_name is_lookup_symbol module_kallsyms_on_each_addr ftrace_mod_locs ftrace_mark_valid_locs ftrace_zero_weak_locs")
    src=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64 linux-source-7.2)/usr/src/linux-source-7.2.tar.xz
    vnames=()
    for row in "${verbatim[@]}"; do
        read -r name dir call defs <<<"$row"
        # shellcheck disable=SC2086 # the definitions are words on purpose
        python3 "$HERE/extract.py" "$src" "$dir" $defs > "$work/$name.verbatim.c"
        gcc -O2 -Wall -Werror -Wno-unused-function -I"$HERE" -DVERBATIM="\"$work/$name.verbatim.c\"" \
            -D"CANDIDATE_CALL(mod,words,n)=$call" -o "$work/$name.verbatim" "$HERE/verbatim.c"
        "$work/$name.verbatim" "${dumps[@]}" > "$work/$name.check" ||
            { cat "$work/$name.check" >&2; echo "run.sh: $name ($dir) keeps other words than stock" >&2; exit 1; }
        vnames+=("$name")
    done
    {
        printf 'module\tcandidate\tinstructions\n'
        for d in "${dumps[@]}"; do
            for c in $models; do
                valgrind --tool=callgrind --toggle-collect="pass_$c" --callgrind-out-file="$work/cg.out" \
                    "$work/pass" -c "$c" "$d" >/dev/null 2>"$work/cg.err" || { cat "$work/cg.err" >&2; exit 1; }
                printf '%s\t%s\t%s\n' "$(basename "$d" .bin)" "$c" "$(sed -n 's/^summary: //p' "$work/cg.out")"
            done
            for c in "${vnames[@]}"; do
                valgrind --tool=callgrind --toggle-collect=run_candidate --callgrind-out-file="$work/cg.out" \
                    "$work/$c.verbatim" -c "$d" >/dev/null 2>"$work/cg.err" || { cat "$work/cg.err" >&2; exit 1; }
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
