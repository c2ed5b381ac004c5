#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-e2e-ppc64le.sh — prove the kernel half (kernel/*.patch) on ppc64le.
#
#   scripts/kernel-e2e-ppc64le.sh [--build-only] [--work DIR] [--loads N]
#
# What scripts/kernel-e2e.sh does on x86_64, for a ppc64le (pseries, little
# endian) kernel with the series, cross-built with gcc and booted under
# qemu-system-ppc64 -M pseries (TCG, one vCPU):
#   1. build the series kernel from Debian's linux-source-7.2 with the
#      trimmed config of scripts/kernel-e2e/config-ppc64le.sh; the build
#      runs the tool on every module through the Kbuild hook;
#   2. collect kvm.ko four ways: tagged (the hook's), unchecked (relinked
#      without the hook: a module built without the tool), stripped (tagged,
#      then strip --strip-unneeded: a stale tag) and forged (the unchecked
#      one with a tag forged to match its counts, nothing zeroed); check each
#      tag with kmod's modinfo against scripts/kernel-e2e/counts.py, and
#      that the tool by hand on the unchecked one gives the tagged one byte
#      for byte;
#   3. boot the series kernel once with tagged, unchecked and stripped,
#      loading each --loads times, interleaved; then once with forged;
#   4. scripts/kernel-e2e/report-ppc64le.py judges the boots (see its
#      docstring) and writes WORK/report.md.
#
# No stock kernel is built (a second hour of cross build): the baseline is
# the forged boot.  Its tag is trusted, so the kernel skips the load-time
# pass and lists every weak location as __ftrace_invalid_address___N, and
# WARNs in t_show(): that boot is at once the "before" listing and the
# negative control that shows a valid tag really skips the pass.
#
# Defaults: --loads 5, WORK ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/kernel-e2e-ppc64le.
# Builds are incremental.  Environment: ZWM_JOBS (make -j, default
# nproc+1), ZWM_NICE (niceness of the build, default 10), ZWM (the tool;
# default a fresh cargo build --release).
#
# Host needs: make gcc gcc-powerpc64le-linux-gnu flex bison bc libelf-dev
# libssl-dev git cpio python3 qemu-system-ppc kmod; missing ones are
# installed with apt-get when run as root.  The guest's busybox is Debian
# sid's busybox-static for ppc64el (scripts/fetch-debian-kernel.sh).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$REPO/scripts/kernel-e2e
PROG=kernel-e2e-ppc64le DIE_STATUS=2
. "$REPO/scripts/lib.sh"
now() { date +%s; }

build_only=0 loads=5
work=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/kernel-e2e-ppc64le
while [ $# -gt 0 ]; do
    case "$1" in
        --build-only) build_only=1; shift;;
        --work) work=$2; shift 2;;
        --loads) loads=$2; shift 2;;
        -h|--help) sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "$0"; exit 0;;
        *) die "unknown argument $1 (see --help)";;
    esac
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${ZWM_JOBS:-$(( $(nproc) + 1 ))}
cross=powerpc64le-linux-gnu-

needs=("git git" "python3 python3" "xz xz-utils" "make make" "gcc gcc" "flex flex"
    "bison bison" "bc bc" "cpio cpio" "${cross}gcc gcc-powerpc64le-linux-gnu"
    "${cross}strip binutils-powerpc64le-linux-gnu" "qemu-system-ppc64 qemu-system-ppc"
    "modinfo kmod" "/usr/include/gelf.h libelf-dev" "/usr/include/openssl/evp.h libssl-dev")
missing_packages "${needs[@]}"
install_packages "${MISSING[@]}"

root=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64 linux-source-7.2) || die "fetching linux-source-7.2 failed"
tarball=$root/usr/src/linux-source-7.2.tar.xz
[ -f "$tarball" ] || die "no $tarball"
mapfile -t patches < <(ls "$REPO"/kernel/*.patch)
[ ${#patches[@]} -gt 0 ] || die "no kernel/*.patch"
ppcroot=$("$REPO/scripts/fetch-debian-kernel.sh" sid ppc64el busybox-static) || die "fetching busybox-static:ppc64el failed"
busybox=$ppcroot/bin/busybox
[ -f "$busybox" ] || busybox=$ppcroot/usr/bin/busybox
[ -f "$busybox" ] || die "no ppc64el busybox under $ppcroot"

ZWM=$(find_tool "${ZWM:-}") || exit 2

# --- the series kernel -------------------------------------------------------------
# Same stamp as scripts/kernel-e2e.sh: tar keeps the archive's mtimes, so an
# unchanged tree builds incrementally.
src=$work/src-series obj=$work/obj-series
stamp="$(stat -c '%s %Y' "$tarball") $(cat "${patches[@]}" | sha256sum)"
if [ ! -f "$src/.zwm-stamp" ] || [ "$(cat "$src/.zwm-stamp")" != "$stamp" ]; then
    log "unpacking the source and applying the series"
    rm -rf "$src"; mkdir -p "$src"
    tar -xJf "$tarball" -C "$src" --strip-components=1
    (cd "$src" && git apply "${patches[@]}") || die "the series does not apply"
    echo "$stamp" > "$src/.zwm-stamp"
fi
"$HERE/config-ppc64le.sh" "$src" "$obj.config-new" CROSS_COMPILE=$cross
# Keep the old .config (and its mtime) when nothing changed.
if ! cmp -s "$obj.config-new/.config" "$obj/.config" 2>/dev/null; then
    mkdir -p "$obj"; cp "$obj.config-new/.config" "$obj/.config"
fi
rm -rf "$obj.config-new"
for o in CONFIG_BUILDTIME_MCOUNT_ZERO=y CONFIG_MPROFILE_KERNEL=y; do
    has_line "$o" cat "$obj/.config" || die "the series config lacks $o (gcc's -mprofile-kernel, which defines FTRACE_MCOUNT_MAX_OFFSET)"
done
log "building the series kernel (nice make -j$jobs, log in $obj.log)"
start=$(now)
nice -n "${ZWM_NICE:-10}" make -C "$src" O="$obj" ARCH=powerpc CROSS_COMPILE=$cross -j"$jobs" \
        ZERO_WEAK_MCOUNT="$ZWM" vmlinux modules >"$obj.log" 2>&1 ||
    { tail -n 30 "$obj.log" >&2; die "the series kernel did not build"; }
build_secs=$(( $(now) - start ))
log "series kernel built in $build_secs s"

# --- kvm.ko four ways --------------------------------------------------------------
m=$work/modules
rm -rf "$m"; mkdir -p "$m"
cp "$obj/arch/powerpc/kvm/kvm.ko" "$m/tagged-kvm.ko"
link=$(sed -n 's/^savedcmd_arch\/powerpc\/kvm\/kvm.ko := //p' "$obj/arch/powerpc/kvm/.kvm.ko.cmd")
link=${link%%; : zero-weak-mcount*}
case "$link" in *" -o arch/powerpc/kvm/kvm.ko "*) ;; *) die "unexpected kvm.ko link command: $link";; esac
(cd "$obj" && eval "${link/ -o arch\/powerpc\/kvm\/kvm.ko / -o $m/unchecked-kvm.ko }") || die "relinking kvm.ko failed"

tag() { modinfo -F mcount "$1"; }
placeholder=unchecked:--------:--------
bound() { "$HERE/counts.py" "$1"; }
[ "$(tag "$m/tagged-kvm.ko")" = "$(bound "$m/tagged-kvm.ko")" ] ||
    die "the series build's kvm.ko is not tagged $(bound "$m/tagged-kvm.ko"): $(tag "$m/tagged-kvm.ko")"
[ "$(tag "$m/unchecked-kvm.ko")" = "$placeholder" ] || die "the relinked kvm.ko is not unchecked"
"$ZWM" -v --kconfig "$obj/include/config/auto.conf" -o "$m/by-hand-kvm.ko" "$m/unchecked-kvm.ko" 2>"$m/by-hand.log" ||
    { cat "$m/by-hand.log" >&2; die "the tool failed on the unchecked kvm.ko"; }
cmp "$m/by-hand-kvm.ko" "$m/tagged-kvm.ko" || die "the tool by hand and the Kbuild hook disagree on kvm.ko"
summary=$(tail -n 1 "$m/by-hand.log")
"${cross}strip" --strip-unneeded -o "$m/stripped-kvm.ko" "$m/tagged-kvm.ko"
[ "$(tag "$m/stripped-kvm.ko")" = "$(tag "$m/tagged-kvm.ko")" ] || die "strip changed the tag"
[ "$(bound "$m/stripped-kvm.ko")" != "$(tag "$m/stripped-kvm.ko")" ] || die "strip left the symbol count as it was"
python3 - "$m/unchecked-kvm.ko" "$m/forged-kvm.ko" "$(bound "$m/unchecked-kvm.ko")" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
old = b"\0mcount=unchecked:--------:--------\0"
assert data.count(old) == 1
open(sys.argv[2], "wb").write(data.replace(old, b"\0mcount=" + sys.argv[3].encode() + b"\0" * 4))
PY
[ "$(tag "$m/forged-kvm.ko")" = "$(bound "$m/forged-kvm.ko")" ] || die "forging the tag failed"
log "kvm.ko: tagged $(tag "$m/tagged-kvm.ko"), unchecked, stripped, forged; by hand: $summary"
if [ $build_only = 1 ]; then
    log "built; stopping there (--build-only)"
    exit 0
fi

# --- boots -------------------------------------------------------------------------
# scripts/kernel-e2e/init, as on x86; ppc64le's kvm.ko needs no irqbypass.ko
# (IRQ_BYPASS_MANAGER is built in), so the initramfs has none.
boot() { # OUTDIR LOADS CASE...
    local out=$1 loads=$2 rd start; shift 2
    rd=$out/initrd
    rm -rf "$out"; mkdir -p "$rd"/{bin,proc,sys,dev,m}
    cp "$busybox" "$rd/bin/busybox"; chmod 755 "$rd/bin/busybox"
    ln -s busybox "$rd/bin/sh"
    cp "$HERE/init" "$rd/init"
    for c in "$@"; do cp "$m/$c.ko" "$rd/m/$c.ko"; done
    echo "$loads $*" > "$rd/cases"
    echo series > "$out/kernel"
    (cd "$rd" && find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0) > "$out/initrd.cpio"
    start=$(now)
    timeout -k 5 1800 qemu-system-ppc64 -accel tcg \
        -M pseries,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off \
        -cpu power9 -smp 1 -m 1024 -nographic -no-reboot \
        -kernel "$obj/vmlinux" -initrd "$out/initrd.cpio" \
        -append "console=hvc0 panic=-1 loglevel=7" </dev/null >"$out/console.log" 2>"$out/qemu.stderr" ||
        log "warning: qemu exited with $? ($out)"
    echo $(( $(now) - start )) > "$out/boot-seconds"
    log "booted with $* in $(cat "$out/boot-seconds") s"
}
boot "$work/boots/series" "$loads" tagged-kvm unchecked-kvm stripped-kvm
boot "$work/boots/negative" 1 forged-kvm
touch "$work/boots/negative/expect-warn"

{
    echo "Built in $build_secs s (nice make -j$jobs, ARCH=powerpc CROSS_COMPILE=$cross, $(${cross}gcc --version | head -n 1));"
    echo "the boot with $loads loads per case took $(cat "$work/boots/series/boot-seconds") s, the negative control $(cat "$work/boots/negative/boot-seconds") s."
    echo "The tool on the relinked kvm.ko: $summary"
    echo
} > "$work/header.md"
rc=0
"${cross}nm" "$m/unchecked-kvm.ko" > "$m/unchecked-kvm.nm"
python3 "$HERE/report-ppc64le.py" "$work/report.md" "$m/by-hand.log" "$m/unchecked-kvm.nm" \
    "$work/boots/series" "$work/boots/negative" || rc=1
cat "$work/header.md" "$work/report.md" > "$work/report.full.md"
cat "$work/header.md"
exit $rc
