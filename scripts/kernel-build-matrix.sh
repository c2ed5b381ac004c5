#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-build-matrix.sh — the series builds without a warning of its own:
# stock and series, side by side, at W=1, on every config of ROWS below.
#
#   scripts/kernel-build-matrix.sh [--rows "NAME..."] [--sides "stock series"] [--work DIR]
#                                  [--release 7.2|7.3] [--suite SUITE]
#
# For each row and side: the row's base config (a defconfig, or kernel-e2e's
# config), its changes, olddefconfig (which must keep every change: an
# option something selects comes back on), `make prepare`, then, at W=1, the
# folders of the .c files the series changes (kernel/module/,
# kernel/trace/: what the config enables there; a changed object it does
# not build is reported as such), and where the row says so a full link
# (vmlinux, for MODULES=n, where the series changes what is linked).  The
# compilers are Debian's (gcc-ARCH-linux-gnu); each build holds the lock
# file $ZWM_BUILD_LOCK when that is set (lib.sh's locked), so that one
# kernel build runs at a time on a shared machine.
#
# Checked, per row: both sides build; the series side has no warning line
# that the stock side lacks (warnings compared as text, the source tree's
# path taken out); each row's facts (compiler, the ftrace flavour Kconfig
# chose) are printed.  WORK/matrix.md gets the table.  Default WORK
# ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/kernel-build-matrix, with -REL and
# -SUITE appended for another release (lib.sh's SOURCES: 7.2 from sid, 7.3
# from experimental) or suite (as in kernel-e2e.sh: `--release 7.3 --suite
# trixie-backports` builds 7.3.4).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=kernel-build-matrix DIE_STATUS=2
. "$REPO/scripts/lib.sh"

# Every defconfig row turns FTRACE on first: FUNCTION_TRACER sits in its menu, and
# arm64's defconfig has it off.  riscv64 drops compressed instructions: with them
# dynamic ftrace needs -fmin-function-alignment, which gcc 12 lacks
# (GCC_SUPPORTS_DYNAMIC_FTRACE, arch/riscv/Kconfig); EFI selects them, and
# PORTABLE, on unless NONPORTABLE, selects EFI.
# x86_64 cannot have the function tracer without dynamic ftrace: DYNAMIC_FTRACE
# has no prompt and defaults to y wherever the arch has it (kernel/trace/Kconfig),
# so nodynftrace turns the function tracer off (and STACK_TRACER, which selects
# it) and keeps the rest of tracing.  FUNCTION_TRACER, FTRACE_SYSCALLS, KPROBES
# and others select KALLSYMS, so nokallsyms turns those off as well.
# i386: 32-bit x86 with dynamic ftrace selects HAVE_FENTRY (arch/x86/Kconfig), so
# FTRACE_MCOUNT_MAX_OFFSET is defined there too, as ENDBR_INSN_SIZE, which is 0
# without IBT (x86_64 only): the pass is built with a window of 0 bytes.
# name | ARCH | CROSS_COMPILE | base | config changes (scripts/config words) | full link | facts to show
ROWS="
x86_64-e2e        x86_64  -                       e2e                -                                                          -        X86_KERNEL_IBT,LIVEPATCH
x86_64-nomodules  x86_64  -                       e2e                -d,MODULES                                                 vmlinux  MODULES,DYNAMIC_FTRACE
x86_64-nodynftrace x86_64 -                       e2e                -d,FUNCTION_TRACER,-d,STACK_TRACER,-d,DYNAMIC_FTRACE      -        MODULES,DYNAMIC_FTRACE
x86_64-nokallsyms x86_64  -                       e2e                -d,FUNCTION_TRACER,-d,STACK_TRACER,-d,FTRACE_SYSCALLS,-d,KPROBES,-d,KALLSYMS,-d,KALLSYMS_ALL,-d,LIVEPATCH,-d,FPROBE,-d,DYNAMIC_DEBUG  -  KALLSYMS,DYNAMIC_FTRACE
i386              i386    -                       i386_defconfig     -e,FTRACE,-e,FUNCTION_TRACER,-e,DYNAMIC_FTRACE             -        X86_32,HAVE_FENTRY,X86_KERNEL_IBT
arm64             arm64   aarch64-linux-gnu-      defconfig          -e,FTRACE,-e,FUNCTION_TRACER,-e,DYNAMIC_FTRACE             -        DYNAMIC_FTRACE_WITH_CALL_OPS,DYNAMIC_FTRACE_WITH_ARGS
ppc64le           powerpc powerpc64le-linux-gnu-  ppc64le_defconfig  -e,FTRACE,-e,FUNCTION_TRACER,-e,DYNAMIC_FTRACE             -        MPROFILE_KERNEL,ARCH_USING_PATCHABLE_FUNCTION_ENTRY,PPC_FTRACE_OUT_OF_LINE
ppc32-pmac32      powerpc powerpc-linux-gnu-      pmac32_defconfig   -e,FTRACE,-e,FUNCTION_TRACER,-e,DYNAMIC_FTRACE             -        ARCH_USING_PATCHABLE_FUNCTION_ENTRY
riscv64           riscv   riscv64-linux-gnu-      defconfig          -e,NONPORTABLE,-d,EFI,-d,RISCV_ISA_C,-e,FTRACE,-e,FUNCTION_TRACER,-e,DYNAMIC_FTRACE -        DYNAMIC_FTRACE_WITH_CALL_OPS
s390              s390    s390x-linux-gnu-        defconfig          -e,FTRACE,-e,FUNCTION_TRACER,-e,DYNAMIC_FTRACE             -        DYNAMIC_FTRACE_WITH_REGS
"
cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}
work='' rows='' sides="stock series" release=7.2 suite=''
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) rows=$2; shift 2;;
        --sides) sides=$2; shift 2;;
        --work) work=$2; shift 2;;
        --release) release=$2; shift 2;;
        --suite) suite=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
if [ -z "$work" ]; then
    work=$cache/kernel-build-matrix
    [ "$release" = 7.2 ] || work=$work-$release
    [ -z "$suite" ] || work=$work-$suite
fi
work=$(work_dir "$work" "") || die "cannot make $work"
[ -n "$rows" ] || rows=$(awk 'NF {print $1}' <<<"$ROWS" | tr '\n' ' ')
needs=("${KBUILD_NEEDS[@]}")
for r in $rows; do
    c=$(awk -v n="$r" '$1 == n {print $3}' <<<"$ROWS")
    [ -n "$c" ] || die "unknown row $r"
    [ "$c" = - ] || needs+=("${c}gcc gcc-${c%-}")
done
missing_packages "${needs[@]}"
install_packages "${MISSING[@]}"
[ -z "$suite" ] || SOURCES=$(awk -v r="$release" 'NF && $1 != r' <<<"$SOURCES"; echo "$release $suite")
series_source "$release"
# The objects of the .c files the series changes (new files and host tools aside).
mapfile -t objects < <(sed -n 's|^--- a/\(.*\)\.c$|\1.o|p' "${PATCHES[@]}" | grep -v '^scripts/' | sort -u)

# build ROW SIDE: configure, prepare and build into WORK/ROW-SIDE; writes
# WORK/ROW-SIDE.warnings (one normalised warning a line) and .facts.
build() {
    local row=$1 side=$2 _ karch cross base changes full facts src obj mk o
    read -r _ karch cross base changes full facts <<<"$(awk -v n="$row" '$1 == n' <<<"$ROWS")"
    [ "$cross" != - ] || cross=
    # Source trees of its own: kernel-e2e patches its series tree for a while.
    src=$work/src-$side obj=$work/$row-$side
    unpack_tree "$src" "$([ "$side" = series ] && echo 1 || echo 0)"
    mk=(-C "$src" O="$obj" ARCH="$karch" ${cross:+CROSS_COMPILE=$cross})
    if [ "$base" = e2e ]; then
        locked "$REPO/scripts/kernel-e2e/config.sh" "$src" "$obj.config-new" ${cross:+CROSS_COMPILE=$cross}
    else
        mkdir -p "$obj.config-new"
        locked make "${mk[@]}" O="$obj.config-new" -s "$base" >/dev/null
    fi
    if [ "$changes" != - ]; then
        # shellcheck disable=SC2046 # the changes are words on purpose
        "$src/scripts/config" --file "$obj.config-new/.config" $(tr ',' ' ' <<<"$changes")
    fi
    locked make "${mk[@]}" O="$obj.config-new" -s olddefconfig >/dev/null
    # A row shows what it claims only if Kconfig kept every change.
    set --
    # shellcheck disable=SC2046 # the changes are words on purpose
    [ "$changes" = - ] || set -- $(tr ',' ' ' <<<"$changes")
    while [ $# -ge 2 ]; do
        case "$1" in
            -e) grep -qx "CONFIG_$2=y" "$obj.config-new/.config" || { log "$row: Kconfig did not keep $2=y"; return 1; };;
            -d) ! grep -q "^CONFIG_$2=[ym]" "$obj.config-new/.config" || { log "$row: Kconfig did not keep $2 off"; return 1; };;
        esac
        shift 2
    done
    install_config "$obj.config-new" "$obj"
    # The series changes no Kconfig option: both sides configure alike.
    if [ "$side" = series ] && [ -f "$work/$row-stock/.config" ]; then
        cmp -s "$work/$row-stock/.config" "$obj/.config" || { log "$row: the stock and series configs differ"; return 1; }
    fi
    : > "$obj.facts"
    for o in ${facts//,/ }; do
        echo "CONFIG_$o=$(sed -n "s/^CONFIG_$o=//p" "$obj/.config")" >> "$obj.facts"
    done
    # shellcheck disable=SC2005 # one line even if gcc prints nothing
    echo "$("${cross}gcc" --version | head -n 1)" >> "$obj.facts"
    log "$row/$side: prepare"
    kernel_make "$obj.prepare.log" "${mk[@]}" prepare || return 1
    # The folders of the objects: Kbuild builds there what this config
    # enables, so an object the config leaves out is simply not built.
    local targets=() dirs
    dirs=$(printf '%s\n' "${objects[@]%/*}" | sort -u | sed 's|$|/|')
    # shellcheck disable=SC2206 # folder names have no blanks
    targets=($dirs)
    [ "$full" = - ] || targets+=("$full")
    log "$row/$side: W=1 ${targets[*]}"
    # Remove what W=1 must compile again, so that a rerun reports its warnings again.
    for o in $dirs; do rm -f "$obj/$o"*.o; done
    kernel_make "$obj.build.log" "${mk[@]}" W=1 "${targets[@]}" || return 1
    for o in "${objects[@]}"; do
        [ -f "$obj/$o" ] || echo "not built: $o" >> "$obj.facts"
    done
    grep -E 'warning:' "$obj.build.log" | sed "s|$src/||g; s|\\.\\./||g" | sort -u > "$obj.warnings" || true
}
# lines FILE: its line count, or - when that side is not built.
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo -; fi; }
fails=() uncompared=()
{
    echo "| config | compiler and Kconfig facts | stock warnings | series warnings | new in series |"
    echo "|---|---|---|---|---|"
} > "$work/matrix.md"
for r in $rows; do
    ok=1
    for s in $sides; do
        build "$r" "$s" || { fails+=("$r/$s: the build failed (see $work/$r-$s.*.log)"); ok=0; }
    done
    [ $ok = 1 ] || continue
    # A side may come from an earlier run (--sides builds only some); a row
    # with one side missing is shown, not compared.
    stock=$work/$r-stock.warnings series=$work/$r-series.warnings new=-
    if [ -f "$stock" ] && [ -f "$series" ]; then
        new=$(comm -13 "$stock" "$series" | wc -l)
        [ "$new" = 0 ] || fails+=("$r: the series adds $new warning(s): $(comm -13 "$stock" "$series" | head -n 3 | tr '\n' ' ')")
    else
        log "$r: not compared, a side is not built yet (--sides \"stock series\" builds both)"
        uncompared+=("$r")
    fi
    facts=$work/$r-series.facts
    [ -f "$facts" ] || facts=$work/$r-stock.facts
    echo "| $r | $(tr '\n' ';' < "$facts") | $(lines "$stock") | $(lines "$series") | $new |" >> "$work/matrix.md"
done
cat "$work/matrix.md"
if [ ${#fails[@]} -gt 0 ]; then
    printf 'FAIL: %s\n' "${fails[@]}"
    echo "kernel-build-matrix: FAIL"
    exit 1
fi
# A row with one side proves nothing about the series: say so, not PASS.
if [ ${#uncompared[@]} -gt 0 ]; then
    echo "kernel-build-matrix: built; not compared: ${uncompared[*]}"
    exit 0
fi
echo "kernel-build-matrix: PASS"
