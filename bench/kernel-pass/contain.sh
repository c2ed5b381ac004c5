#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# bench/kernel-pass/contain.sh [--series DIR] [--control insn|adjust[,...]]
#                              [--instructions] [--top N] ARCH
#
# The series' pass (ftrace_mod_clear_dead()), compiled verbatim (extract.py,
# with the arch's own ftrace_call_adjust() from its arch/ file and the
# Kconfig options it tests set as in Debian's config), over EVERY module of
# the ARCH tree of the table below, each laid out as the loader lays it out
# (dump.py --tree). The words it clears are held against the entries the
# tool (target/release/zero-weak-mcount --check --format=json) would
# neutralise, module by module (contain.py); exit 1 on any difference.
# Where stock has FTRACE_MCOUNT_MAX_OFFSET (amd64, i386, ppc64el), every
# record where stock's test_for_valid_rec() and the series part is listed
# too, with what the tool says of it.
#
# --control runs a model that must differ somewhere instead, and exits 1
# if it does not: "insn" takes MCOUNT_INSN_SIZE as 0, "adjust" turns the
# Kconfig options ftrace_call_adjust() tests off; "adjust,insn" does both.
#
# --instructions counts with callgrind the instructions the pass executes,
# in one run over the whole tree (one callgrind dump per module), and
# prints the total and the --top (default 10) modules. Where stock has no
# FTRACE_MCOUNT_MAX_OFFSET it executes nothing here: it makes a record of
# every word, unchecked, as the series then does of the words left.
# The series is kernel/ (default) or --series DIR; work files under
# ~/.cache/zero-weak-mcount/kernel-pass/ARCH. docs/kernel-bench.md has the
# results. python3 is the one with pyelftools (Debian's python3-pyelftools).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
series=$REPO/kernel control='' instructions=0 top=10
while [ $# -gt 0 ]; do
    case "$1" in
        --series) series=$(cd "$2" && pwd); shift 2;;
        --control) control=$2; shift 2;;
        --instructions) instructions=1; shift;;
        --top) top=$2; shift 2;;
        -h|--help) sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "$0"; exit 0;;
        -*) echo "contain.sh: unknown option $1" >&2; exit 2;;
        *) arch=$1; shift;;
    esac
done
# One row per tree: ARCH, suite, the linux-source whose arch/ files give
# ftrace_call_adjust() (ADJUST) and MCOUNT_INSN_SIZE (HEADER), the bytes of
# a callsite word, stock's FTRACE_MCOUNT_MAX_OFFSET as N@OPTION (the option
# it takes; - where it is not defined), and an option under which
# ftrace_call_adjust() reads instructions, which the dump has not (- none).
# bookworm's i386 is 6.1: its own arch file, with 0002's pass from 7.2.
facts='
arm64   sid      7.2 arch/arm64/kernel/ftrace.c          arch/arm64/include/asm/ftrace.h   8 -                                    ARM64_BTI_KERNEL
riscv64 sid      7.2 arch/riscv/kernel/ftrace.c          arch/riscv/include/asm/ftrace.h   8 -                                    -
s390x   sid      7.2 arch/s390/include/asm/ftrace.h      arch/s390/include/asm/ftrace.h    8 -                                    -
loong64 sid      7.2 arch/loongarch/include/asm/ftrace.h arch/loongarch/include/asm/ftrace.h 8 -                                  -
amd64   sid      7.2 arch/x86/include/asm/ftrace.h       arch/x86/include/asm/ftrace.h     8 4@X86_KERNEL_IBT                     -
ppc64el sid      7.2 arch/powerpc/kernel/trace/ftrace.c  arch/powerpc/include/asm/ftrace.h 8 16@ARCH_USING_PATCHABLE_FUNCTION_ENTRY CC_IS_CLANG
i386    bookworm 6.1 arch/x86/include/asm/ftrace.h       arch/x86/include/asm/ftrace.h     4 0@HAVE_FENTRY                        -
'
read -r _ suite release adjust header word stock refuse < <(grep "^${arch:-none} " <<<"$facts") ||
    { echo "contain.sh: ARCH is one of: $(cut -d' ' -f1 <<<"$facts" | xargs)" >&2; exit 2; }
work=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/kernel-pass/$arch
mkdir -p "$work"
root=$("$REPO/scripts/fetch-debian-kernel.sh" "$suite" "$arch")
kver=$(cat "$root/../kver")
top_dir=$(find "$root" -maxdepth 4 -type d -path "*/modules/$kver" | head -n 1)
config=$top_dir/config
[ -s "$config" ] || config=$root/boot/config-$kver
[ -s "$config" ] || { echo "contain.sh: no config for $kver" >&2; exit 1; }
src=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64 linux-source-7.2)/usr/src/linux-source-7.2.tar.xz
arch_src=$src
[ "$release" = 7.2 ] ||
    arch_src=$("$REPO/scripts/fetch-debian-kernel.sh" "$suite" amd64 "linux-source-$release")/usr/src/linux-source-$release.tar.xz

echo "contain.sh: $arch $kver: laying out $(find "$top_dir" -name '*.ko*' | wc -l) modules" >&2
find "$top_dir" -name '*.ko*' -print0 | sort -z |
    xargs -0 -P 2 -n 100 nice -n 10 python3 "$HERE/dump.py" --tree "$work/dumps" "$top_dir"

# The model: the series' functions, verbatim, in the order they are defined.
python3 "$HERE/extract.py" --undef FTRACE_MCOUNT_MAX_OFFSET --file "$arch_src:$adjust" "$src" "$series" \
    ftrace_call_adjust ftrace_mod_clear_dead > "$work/model$$.c"
mv "$work/model$$.c" "$work/model.c"
insn=$(tar -xJOf "$arch_src" "linux-source-$release/$header" |
    sed -n 's/^#define MCOUNT_INSN_SIZE[[:space:]]*\([A-Za-z0-9_]*\).*/\1/p')
[ -n "$insn" ] || { echo "contain.sh: no MCOUNT_INSN_SIZE in $header" >&2; exit 1; }
flags=(-DMCOUNT_INSN_SIZE="$insn" -DTABLE_WORD="$word")
if [ "$stock" != - ]; then
    grep -qx "CONFIG_${stock#*@}=y" "$config" ||
        { echo "contain.sh: stock's FTRACE_MCOUNT_MAX_OFFSET of ${stock%@*} needs CONFIG_${stock#*@}" >&2; exit 1; }
    flags+=(-DSTOCK_MAX_OFFSET="${stock%@*}")
fi
mapfile -t opts < <(grep -o 'CONFIG_[A-Z0-9_]*' "$work/model.c" | sort -u)
for opt in "${opts[@]}"; do
    on=0
    grep -qx "$opt=y" "$config" && on=1
    [[ ,$control, = *,adjust,* ]] && on=0
    flags+=(-D"$opt=$on")
done
# The dump has no text bytes for ftrace_call_adjust() to read.
! grep -qx "CONFIG_$refuse=y" "$config" ||
    { echo "contain.sh: $kver has $refuse: the model cannot read instructions" >&2; exit 1; }
for c in ${control//,/ }; do
    case "$c" in
        insn) flags+=(-UMCOUNT_INSN_SIZE -DMCOUNT_INSN_SIZE=0);;
        adjust) ;;
        *) echo "contain.sh: --control is insn or adjust" >&2; exit 2;;
    esac
done
tag=${control:+-$control}
echo "contain.sh: model built with ${flags[*]}" >&2
gcc -O2 -Wall -Werror -Wno-unused-function -I"$HERE" -DVERBATIM="\"$work/model.c\"" "${flags[@]}" \
    -D"CANDIDATE_CALL(mod,words,n)=(ftrace_mod_clear_dead(mod,words,n), 0)" -o "$work/model$tag" "$HERE/verbatim.c"
find "$work/dumps" -name '*.bin' -print0 | sort -z | xargs -0 "$work/model$tag" > "$work/model$tag.tsv"

if [ $instructions = 1 ]; then
    rm -f "$work"/cg.out*
    mapfile -t called < <(awk -F'\t' '$2 > 0 {print $1}' "$work/model.tsv")
    nice -n 10 valgrind --tool=callgrind --toggle-collect=run_candidate --dump-after=run_candidate \
        --callgrind-out-file="$work/cg.out" "$work/model$tag" -c "${called[@]}" >/dev/null 2>"$work/cg.err" ||
        { cat "$work/cg.err" >&2; exit 1; }
    # Dump k (cg.out.k) is the k-th module passed; its "summary:" is the pass.
    for ((k = 1; k <= ${#called[@]}; k++)); do
        printf '%s\t%s\n' "${called[k - 1]#"$work/dumps/"}" "$(sed -n 's/^summary: //p' "$work/cg.out.$k")"
    done > "$work/instructions.tsv"
    rm -f "$work"/cg.out*
fi

(cd "$REPO" && nice -n 10 cargo build --release --quiet)
"$REPO/target/release/zero-weak-mcount" --check --format=json --tree -j 2 "$top_dir" \
    > "$work/tool.jsonl" 2>"$work/tool.err" || [ $? = 1 ]
extra=()
[ -z "$control" ] || extra+=(--control)
[ "$stock" = - ] || extra+=(--stock)
[ $instructions = 0 ] || extra+=(--instructions "$work/instructions.tsv" --top "$top")
python3 "$HERE/contain.py" "$work/model$tag.tsv" "$work/dumps" "$work/tool.jsonl" "$top_dir" "${extra[@]}"
