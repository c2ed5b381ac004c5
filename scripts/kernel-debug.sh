#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-debug.sh — the series on a debug kernel, under load (make kernel-debug).
#
#   scripts/kernel-debug.sh [--work DIR] [--rounds N] [--stock-control]
#                           [--build-only | --boot-only]
#
# 1. Build Linux 7.2 with the series and the kernel-e2e configuration
#    (scripts/kernel-e2e/config.sh) plus lockdep (PROVE_LOCKING,
#    PROVE_RCU), DEBUG_ATOMIC_SLEEP, generic KASAN, DEBUG_LIST and
#    DEBUG_OBJECTS; then the same tree with scripts/kernel-debug/broken.patch,
#    a sleeping allocation in the pass while it holds rcu_read_lock(): the
#    negative control, an incremental rebuild of kernel/trace/ftrace.c.
#    With --stock-control, also the same tree with 7.2's own ftrace.c (no
#    pass), booted like the others: what the debug checks and the stress do
#    to a kernel without the series.
# 2. The modules, from the same build: kvm.ko as built (unchecked),
#    processed by the tool, and stripped with --strip-debug (what
#    INSTALL_MOD_STRIP=1 does); and a generated module of amdgpu's scale
#    (scripts/kernel-bench/genmod.py, 17,000 functions), built with M=.
# 3. Boot each kernel with 2 vCPUs in one QEMU thread (run.sh's
#    --tcg-thread single: with a thread a vCPU, every kernel, stock ones
#    too, died of "Oops: int3" while ftrace patched its text;
#    docs/kernel-e2e.md) and run scripts/kernel-debug/stress.sh:
#    --rounds (default 20) rounds of loading and unloading every module
#    (the broken kernel: one round), two insmods at once every fourth
#    round, while another process turns the function tracer on and off and
#    reads available_filter_functions.
# 4. The series kernel must log no splat (guest.py's BAD lines: WARNING,
#    BUG, Oops, Call Trace) and take no taint but the generated module's O,
#    with every load and unload successful; the broken kernel must log "BUG:
#    sleeping function called from invalid context" in insmod, or the
#    checks were not live.
#
# --boot-only boots the kernels and modules a previous run left in the
# work folder (steps 3 and 4 alone).  Each boot may take
# ZWM_DEBUG_TIMEOUT seconds (default 10800; 20 rounds took about 1.5 hours
# on a busy 2-core host).
#
# Not part of make check: the KASAN and lockdep build and the boots under
# TCG take too long (docs/runs/*-kernel-debug.md has the dated results).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$REPO/scripts/kernel-debug
PROG=kernel-debug DIE_STATUS=2
. "$REPO/scripts/lib.sh"

rounds=20 build_only=0 boot_only=0 stock=0 work=
while [ $# -gt 0 ]; do
    case "$1" in
        --work) work=$2; shift 2;;
        --rounds) rounds=$2; shift 2;;
        --build-only) build_only=1; shift;;
        --boot-only) boot_only=1; shift;;
        --stock-control) stock=1; shift;;
        *) arg_error "$1";;
    esac
done
work=$(work_dir "${work:-${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/kernel-debug}" "")
missing_packages "${KBUILD_NEEDS[@]}" "cpio cpio" "qemu-system-x86_64 qemu-system-x86" \
    "/bin/busybox busybox-static" "/usr/lib/python3/dist-packages/elftools python3-pyelftools"
install_packages "${MISSING[@]}"
need_elftools
[ $build_only = 0 ] || [ $boot_only = 0 ] || die "--build-only and --boot-only exclude each other"
kernels="series broken"
[ $stock = 0 ] || kernels="$kernels stockftrace"
src=$work/src obj=$work/obj m=$work/modules
ftrace=$src/kernel/trace/ftrace.c

# --- 1. two kernels (three with --stock-control) from one tree ----------------------
build_kernels() {
    unpack_tree "$src" 1
    ZWM_KCONFIG_EXTRA="--disable SLUB_TINY --enable SLUB_DEBUG --enable STACKTRACE --enable DEBUG_KERNEL --enable PROVE_LOCKING --enable PROVE_RCU \
        --enable DEBUG_ATOMIC_SLEEP --enable KASAN --enable KASAN_GENERIC --enable KASAN_OUTLINE \
        --enable DEBUG_LIST --enable DEBUG_OBJECTS --enable DEBUG_OBJECTS_FREE \
        --enable DEBUG_OBJECTS_RCU_HEAD --enable DEBUG_OBJECTS_WORK --enable DEBUG_OBJECTS_TIMERS" \
        kernel_config config.sh "$src" "$obj"
    for o in PROVE_LOCKING PROVE_RCU DEBUG_ATOMIC_SLEEP KASAN KASAN_GENERIC DEBUG_LIST DEBUG_OBJECTS; do
        grep -qx "CONFIG_$o=y" "$obj/.config" || die "the debug configuration lacks CONFIG_$o"
    done
    # A run stopped while a variant's ftrace.c was in place leaves the series' copy.
    if [ -f "$work/ftrace.c.series" ]; then rm -f "$ftrace"; cp "$work/ftrace.c.series" "$ftrace"; fi
    log "building the debug kernel (make -j$JOBS, log in $obj.log)"
    build_kernel "the debug kernel" "$obj.log" -C "$src" O="$obj" ARCH=x86_64 bzImage modules
    log "built in $BUILD_SECS s"
    cp "$image" "$work/bzImage-series"
    cp "$ftrace" "$work/ftrace.c.series"
    patch -s -o "$work/ftrace.c.broken" "$work/ftrace.c.series" "$HERE/broken.patch" || die "broken.patch does not apply"
    variant broken "$work/ftrace.c.broken"
    if [ $stock = 1 ]; then
        tar -xJf "$TARBALL" -O linux-source-7.2/kernel/trace/ftrace.c > "$work/ftrace.c.stockftrace"
        variant stockftrace "$work/ftrace.c.stockftrace"
    fi
    rm "$work/ftrace.c.series"
}

# variant NAME FTRACE.C: bzImage-NAME, the series tree rebuilt
# (incrementally) with FTRACE.C as kernel/trace/ftrace.c, which is then
# put back to the series' own, $work/ftrace.c.series.
variant() {
    local start rc=0
    start=$(now)
    rm "$ftrace"; cp "$2" "$ftrace"
    kernel_make "$obj-$1.log" -C "$src" O="$obj" ARCH=x86_64 bzImage || rc=$?
    rm -f "$ftrace"; cp "$work/ftrace.c.series" "$ftrace"
    [ $rc = 0 ] || die "the $1 kernel did not build"
    cp "$image" "$work/bzImage-$1"
    log "$1 variant built in $(( $(now) - start )) s"
}

# --- 2. the modules ----------------------------------------------------------------
build_modules() {
    local gen=$work/gen
    rm -rf "$m"; mkdir -p "$m"
    cp "$obj/virt/lib/irqbypass.ko" "$m/irqbypass.ko"
    cp "$obj/arch/x86/kvm/kvm.ko" "$m/kvm-unchecked.ko"
    "$ZWM" --kconfig "$obj/include/config/auto.conf" -o "$m/kvm-processed.ko" "$m/kvm-unchecked.ko" ||
        die "the tool failed on kvm.ko"
    strip --strip-debug -o "$m/kvm-stripped.ko" "$m/kvm-unchecked.ko"
    rm -rf "$gen"
    python3 "$REPO/scripts/kernel-bench/genmod.py" "$gen" zwm_gen17000 17000
    build_kernel "the generated module" "$gen.log" -C "$src" O="$obj" M="$gen" modules
    cp "$gen/zwm_gen17000.ko" "$m/gen-unchecked.ko"
    printf '%s\n' "kvm-unchecked kvm" "kvm-processed kvm" "kvm-stripped kvm" "gen-unchecked zwm_gen17000" > "$m/cases"
}

if [ $boot_only = 0 ]; then
    ZWM=$(find_tool "${ZWM:-}") || exit 2
    series_source
    image=$obj/$("$REPO/scripts/guest/run.sh" --image x86_64)
    build_kernels
    build_modules
else
    for k in $kernels; do [ -f "$work/bzImage-$k" ] || die "no $work/bzImage-$k to boot (run without --boot-only)"; done
    [ -f "$m/cases" ] || die "no $m/cases to boot with (run without --boot-only)"
fi
[ $build_only = 0 ] || { log "built; stopping there (--build-only)"; exit 0; }

# --- 3. boots ----------------------------------------------------------------------
boot() { # NAME ROUNDS
    local adds=() c
    for c in kvm-unchecked kvm-processed kvm-stripped gen-unchecked; do adds+=(--add "$m/$c.ko=/stress/$c.ko"); done
    echo "$2" > "$m/rounds-$1"
    log "booting the $1 kernel with 2 vCPUs in one QEMU thread, $2 rounds"
    "$REPO/scripts/guest/run.sh" --arch x86_64 --kernel "$work/bzImage-$1" --out "$work/boot-$1" \
        --smp 2 --tcg-thread single --mem 2048 --timeout "${ZWM_DEBUG_TIMEOUT:-10800}" --payload "$HERE/stress.sh" \
        --add "$m/cases=/stress/cases" --add "$m/rounds-$1=/stress/rounds" "${adds[@]}" \
        "$m/irqbypass.ko" || die "the $1 boot failed or timed out"
    log "$1: $(cat "$work/boot-$1/boot-seconds") s"
}
# The broken pass sleeps under RCU in the first insmod, so one round
# decides its boot; the others take --rounds.
for k in $kernels; do boot "$k" "$([ "$k" = broken ] && echo 1 || echo "$rounds")"; done

# --- 4. verdicts -------------------------------------------------------------------
controls=()
[ $stock = 0 ] || controls=("$work/boot-stockftrace")
python3 "$HERE/report.py" "$work/report.md" "$work/boot-series" "$work/boot-broken" "$rounds" ${controls[@]+"${controls[@]}"}
