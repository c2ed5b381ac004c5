#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# probe-e2e.sh — does a probe on a function reach that function?  Boots
# stock Debian kernels under QEMU (TCG) with a module as Debian ships it
# (signed, loaded as is) and as zero-weak-mcount processed it, and for every
# function that precedes a dead weak body in the module measures an fprobe
# (tracefs dynamic_events "f:"), a BPF fentry program and, where a row has
# one, a livepatch, each against the function tracer as control, on the
# same workload.  The host replays the kernel's record lookup on the records
# the guest listed, so the test knows which functions the stock module must
# misdirect (the negative control: the stock boot must show exactly those)
# and that the processed one must misdirect none.  docs/probes.md has the
# kernel path, the table and what each row proves.
#
# Usage: scripts/probe-e2e.sh [--rows LIST] [--work DIR]
#
# Rows (default: all; docs/probes.md says what each proves):
#   sid-amd64, trixie-amd64, bookworm-amd64  Debian sid 7.2, trixie 6.12,
#               bookworm 6.1 (no IBT: nothing at risk) x86_64: kvm.ko, with
#               kvm-amd under QEMU -cpu max (SVM), workload
#               scripts/probe/kvmdrive.c, and a livepatch on irqfd_wakeup
#               (scripts/probe/livepatch.c, built in a Debian root made with
#               mmdebstrap that holds the release's gcc and linux-headers)
#   sid-arm64   Debian sid 7.2 arm64 (virt): rvu_nicpf.ko, the one module of
#               the tree with dead weak bodies (kvm is built in)
#   sid-ppc64el Debian sid 7.2 ppc64le (pseries, power9): kvm.ko
#   sid-riscv64 Debian sid 7.2 riscv64 (virt, rv64 with the H extension): kvm.ko
#   The last three have no workload that calls the functions: there the
#   guest reads the kernel text (/proc/kcore, scripts/probe/kpeek.c) to see
#   which patch site each probe made ftrace rewrite.
#
# Environment: ZWM (tool binary; default target/release/zero-weak-mcount,
# built with cargo), ZWM_CACHE (downloads, see scripts/fetch-debian-kernel.sh),
# ZWM_PROBE_WORK (work folder).  Needs gcc and the static C library.
# Exit status: 0 every row passed, 1 otherwise.
set -uo pipefail
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=probe-e2e
. "$REPO/scripts/lib.sh"
PROBE=$REPO/scripts/probe
PY=(python3 "$PROBE/probe.py")
E2EPY=(python3 "$REPO/scripts/e2e/zwm_e2e.py")
FETCH=$REPO/scripts/fetch-debian-kernel.sh

ALL_ROWS="sid-amd64 trixie-amd64 bookworm-amd64 sid-arm64 sid-ppc64el sid-riscv64"
rows=$ALL_ROWS
work=${ZWM_PROBE_WORK:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) rows=${2//,/ }; shift 2;;
        --rows=*) rows=${1#--rows=}; rows=${rows//,/ }; shift;;
        --work) work=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
for r in $rows; do
    case " $ALL_ROWS " in *" $r "*) ;; *) die "unknown row $r";;
    esac
done
needs=("qemu-system-x86_64 qemu-system-x86" "cpio cpio" "xz xz-utils" "python3 python3"
       "/usr/lib/python3/dist-packages/elftools python3-pyelftools"
       "gcc gcc" "/usr/lib/$(gcc -print-multiarch 2>/dev/null)/libc.a libc6-dev")
case "$rows" in *arm64*) needs+=("qemu-system-aarch64 qemu-system-arm" "aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu"
                                  "/usr/aarch64-linux-gnu/lib/libc.a libc6-dev-arm64-cross");; esac
case "$rows" in *riscv64*) needs+=("qemu-system-riscv64 qemu-system-misc" "riscv64-linux-gnu-gcc gcc-riscv64-linux-gnu"
                                  "/usr/riscv64-linux-gnu/lib/libc.a libc6-dev-riscv64-cross");; esac
case "$rows" in *ppc64el*) needs+=("qemu-system-ppc64 qemu-system-ppc" "powerpc64le-linux-gnu-gcc gcc-powerpc64le-linux-gnu"
                                  "/usr/powerpc64le-linux-gnu/lib/libc.a libc6-dev-ppc64el-cross");; esac
missing_packages "${needs[@]}"
install_packages "${MISSING[@]}"
ZWM=$(find_tool "${ZWM:-}") || exit 1
work=$(work_dir "$work" /tmp/zwm-probe.XXXXXX) || die "cannot make the work folder"
log "work folder: $work"
FAILURES=()

# build_livepatch ABI OUT: scripts/probe/livepatch.c built against the
# release's own headers (linux-headers-ABI) with the gcc that built the
# kernel (CONFIG_CC_VERSION_TEXT), in a SUITE root kept in the cache.
build_livepatch() {
    local abi=$1 out=$2 broot gccpkg cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}
    broot=$cache/probe-build/$SUITE-$DEBARCH-$abi
    # "x86_64-linux-gnu-gcc-14 (Debian ...)" from 6.12 on, "gcc-12 (Debian ...)" in 6.1.
    gccpkg=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\(.*-\)\{0,1\}gcc-\([0-9][0-9]*\) .*/gcc-\2/p' "$KCONFIG")
    [ -n "$gccpkg" ] || { FAILURES+=("$ROW: no gcc version in $KCONFIG"); return 1; }
    command -v mmdebstrap >/dev/null || install_packages mmdebstrap
    # A release's newest kernel is often in its -security suite only.
    local mirrors=("deb ${ZWM_DEBIAN_MIRROR:-http://deb.debian.org/debian} $SUITE main")
    [ "$SUITE" = sid ] ||
        mirrors+=("deb ${ZWM_DEBIAN_SECURITY:-http://deb.debian.org/debian-security} $SUITE-security main")
    if [ ! -d "$broot/usr/src/linux-headers-$abi" ]; then
        log "$ROW: making a $SUITE root with $gccpkg and linux-headers-$abi"
        rm -rf "$broot"; mkdir -p "$(dirname "$broot")"
        nice mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
            --aptopt='Acquire::Check-Date "false"' \
            --include="make,$gccpkg,libc6-dev,linux-headers-$abi" "$SUITE" "$broot" "${mirrors[@]}" \
            >"$RDIR/mmdebstrap.log" 2>&1 ||
            { FAILURES+=("$ROW: mmdebstrap failed ($RDIR/mmdebstrap.log)"); rm -rf "$broot"; return 1; }
    fi
    rm -rf "$broot/build"; mkdir -p "$broot/build"
    cp "$PROBE/livepatch.c" "$broot/build/zwm_probe_livepatch.c"
    echo 'obj-m := zwm_probe_livepatch.o' > "$broot/build/Kbuild"
    # objtool reads /proc.
    mount -t proc proc "$broot/proc" || { FAILURES+=("$ROW: cannot mount proc in $broot"); return 1; }
    nice chroot "$broot" make -C "/usr/src/linux-headers-$abi" M=/build modules >"$RDIR/livepatch-build.log" 2>&1
    local rc=$?
    umount "$broot/proc"
    [ $rc = 0 ] || { FAILURES+=("$ROW: building the livepatch failed ($RDIR/livepatch-build.log)"); return 1; }
    cp "$broot/build/zwm_probe_livepatch.ko" "$out"
}

# static_build OUT SRC: a static program for the guest ($CC).
static_build() {
    "$CC" -O2 -Wall -static -o "$1" "$2" || { FAILURES+=("cannot build $2"); return 1; }
}

# boot VARIANT_DIR: boot the row's modules from VARIANT_DIR/mods with the
# probe payload; write VARIANT_DIR/facts.json.
boot() {
    local v=$1 mods=() m
    for m in $CHAIN; do mods+=("$v/mods/$m.ko"); done
    log "$ROW: booting $(basename "$v") (${CHAIN})"
    nice "$GUEST/run.sh" --arch "$GARCH" ${GCPU:+--cpu "$GCPU"} --kernel "$KERNEL" --out "$v/boot" \
        --mem 1024 --timeout 1200 --payload "$GUEST/payload/probe.sh" --add "$RDIR/probe=/probe" "${mods[@]}"
    local rc=$?
    log "$ROW: $(basename "$v") boot: rc $rc, $(cat "$v/boot/boot-seconds" 2>/dev/null)s"
    [ $rc = 0 ] || { FAILURES+=("$ROW: $(basename "$v") boot rc $rc ($v/boot/console.log)"); return 1; }
    "${PY[@]}" facts "$v/boot" "$v/mods/$MOD.ko" "$GARCH" "$v/facts.json" ||
        { FAILURES+=("$ROW: $(basename "$v"): cannot read the boot"); return 1; }
}

run_row() {
    ROW=$1
    case "$ROW" in
        sid-amd64|trixie-amd64|bookworm-amd64)
            SUITE=${ROW%-amd64} DEBARCH=amd64 GARCH=x86_64 GCPU=max MOD=kvm WORKLOAD=kvmdrive LIVEPATCH=irqfd_wakeup
            CC=gcc
            # In load order: kvm-amd needs ccp; kvm needs irqbypass.
            CHAIN_PATHS="virt/lib/irqbypass arch/x86/kvm/kvm drivers/crypto/ccp/ccp arch/x86/kvm/kvm-amd";;
        sid-arm64)
            SUITE=sid DEBARCH=arm64 GARCH=aarch64 GCPU='' MOD=rvu_nicpf WORKLOAD=none LIVEPATCH='' CC=aarch64-linux-gnu-gcc
            CHAIN_PATHS="drivers/net/ethernet/marvell/octeontx2/af/rvu_mbox drivers/net/ethernet/marvell/octeontx2/nic/otx2_ptp
                         drivers/net/macsec drivers/net/ethernet/marvell/octeontx2/nic/rvu_nicpf";;
        sid-ppc64el)
            SUITE=sid DEBARCH=ppc64el GARCH=ppc64le GCPU='' MOD=kvm WORKLOAD=none LIVEPATCH='' CC=powerpc64le-linux-gnu-gcc
            CHAIN_PATHS="arch/powerpc/kvm/kvm";;
        sid-riscv64)
            SUITE=sid DEBARCH=riscv64 GARCH=riscv64 GCPU='' MOD=kvm WORKLOAD=none LIVEPATCH='' CC=riscv64-linux-gnu-gcc
            CHAIN_PATHS="arch/riscv/kvm/kvm";;
    esac
    RDIR=$work/$ROW
    mkdir -p "$RDIR/stock/mods" "$RDIR/processed/mods" "$RDIR/probe"
    local root kver kdir p m
    root=$("$FETCH" "$SUITE" "$DEBARCH") || { FAILURES+=("$ROW: fetching the kernel failed"); return 1; }
    kver=$(cat "$root/../kver")
    kdir=$root/lib/modules/$kver
    [ -d "$kdir" ] || kdir=$root/usr/lib/modules/$kver
    KERNEL=$kdir/vmlinuz
    # shellcheck disable=SC2012 # Debian's file names: the first match is all that is wanted
    [ -f "$KERNEL" ] || KERNEL=$(ls "$root"/boot/vmlinu* 2>/dev/null | head -n1)
    KCONFIG=$kdir/config
    # shellcheck disable=SC2012 # Debian's file names: the first match is all that is wanted
    [ -f "$KCONFIG" ] || KCONFIG=$(ls "$root"/boot/config-* | head -n1)
    CHAIN=""
    for p in $CHAIN_PATHS; do
        # shellcheck disable=SC2012 # Debian's file names: the first match is all that is wanted
        m=$(ls "$kdir/kernel/$p".ko* | head -n1)
        local name
        name=$("${E2EPY[@]}" modname "$m") || return 1
        CHAIN="$CHAIN $name"
        # As Debian ships it: decompressed, still signed (the kernel checks it).
        "${E2EPY[@]}" decompress "$m" "$RDIR/stock/mods/$name.ko" || return 1
        cp "$RDIR/stock/mods/$name.ko" "$RDIR/processed/mods/$name.ko"
    done
    # The tool's report (docs/report-format.md): the weak entries, at_risk
    # before and at_risk_after.
    "$ZWM" --format=json --signed=strip --kconfig "$KCONFIG" -o "$RDIR/processed/mods/$MOD.ko" \
        "$RDIR/stock/mods/$MOD.ko" >"$RDIR/tool.json" 2>"$RDIR/tool.log" ||
        { FAILURES+=("$ROW: the tool failed on $MOD.ko: $(tail -n 2 "$RDIR/tool.log")"); return 1; }
    "${PY[@]}" functions "$RDIR/tool.json" > "$RDIR/probe/functions"
    [ -s "$RDIR/probe/functions" ] || { FAILURES+=("$ROW: no function precedes a dead body"); return 1; }
    echo "$MOD" > "$RDIR/probe/module"
    echo "$WORKLOAD" > "$RDIR/probe/workload"
    if [ "$WORKLOAD" = none ]; then
        printf '#!/bin/sh\necho "none: ok (no workload)"\n' > "$RDIR/probe/none"; chmod 755 "$RDIR/probe/none"
    else
        static_build "$RDIR/probe/$WORKLOAD" "$PROBE/$WORKLOAD.c" || return 1
    fi
    static_build "$RDIR/probe/kpeek" "$PROBE/kpeek.c" || return 1
    static_build "$RDIR/probe/fentry" "$PROBE/fentry.c" || return 1
    if [ -n "${LIVEPATCH:-}" ]; then
        build_livepatch "$(basename "$kdir")" "$RDIR/probe/livepatch.ko" || return 1
        echo "$LIVEPATCH" > "$RDIR/probe/livepatch-function"
    fi
    boot "$RDIR/stock" || return 1
    boot "$RDIR/processed" || return 1
    "${PY[@]}" row "$RDIR/stock/facts.json" "$RDIR/processed/facts.json" "$RDIR/tool.json" "$RDIR/row.txt" ||
        FAILURES+=("$ROW: see $RDIR/row.txt")
}

for r in $rows; do
    run_row "$r"
done
log "work folder: $work"
if [ ${#FAILURES[@]} -gt 0 ]; then
    for f in "${FAILURES[@]}"; do log "FAIL: $f"; done
    exit 1
fi
log "PASS ($rows)"
