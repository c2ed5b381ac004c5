#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# run.sh — boot a kernel under QEMU (TCG) with an initramfs that speaks the
# guest protocol of scripts/guest/init (load the modules, source the
# payloads, report between @@ZWM markers, power off).  Every real-kernel
# proof of the project boots through here (docs/e2e.md, "The guest runner").
#
#   scripts/guest/run.sh --arch ARCH --kernel FILE --out DIR
#       [--busybox FILE] [--payload FILE]... [--add SRC=DEST]... [--tree DIR]...
#       [--smp N] [--tcg-thread single|multi] [--mem MB] [--timeout SEC]
#       [--cpu MODEL] [--append ARGS] [MODULE.ko...]
#   scripts/guest/run.sh --image ARCH   the kernel image's path in a build tree
#
# ARCH is a row of scripts/guest/arches.tsv.  Without --busybox the guest
# gets the host's /bin/busybox when the row's Debian arch is the host's,
# else trixie's busybox-static for it (not sid's 1.38: once a trap has run,
# its ash's `read` loops forever, and ftracetest traps its verdicts).  --cpu replaces the row's CPU
# (x86_64 "max" exposes SVM, so that kvm-amd loads).  MODULE.ko files
# (plain ELF) load in the order given, named after their .modinfo name=.
# --tcg-thread single runs all vCPUs in one host thread, in turn: the guest
# still has N interleaving CPUs (for lockdep, RCU, KASAN), but none runs
# code while another rewrites it; the debug-kernel proof needs that (with a
# thread a vCPU its kernels, stock ones too, died of "Oops: int3" while
# ftrace patched their text: docs/kernel-e2e.md, "The debug kernel").
# Each --payload is sourced by /init in the order given; --add copies a file
# to DEST in the initramfs, --tree copies a folder's contents to its root.
#
# Writes DIR/initrd.cpio, qemu-cmd, console.log, qemu.stderr, boot-seconds
# and qemu-rc.  Exit status: 0 the guest powered off, 12 it timed out, 2
# usage or host error.  Judging the console is the caller's (guest.py).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$here/../.." && pwd)
PROG=guest DIE_STATUS=2
. "$REPO/scripts/lib.sh"

# arch_row ARCH: the row's fields as A_QEMU A_MACHINE ... ("-" for default).
arch_row() {
    local row
    row=$(awk -v a="$1" '!/^#/ && $1 == a' "$here/arches.tsv")
    [ -n "$row" ] || die "unknown arch $1 (scripts/guest/arches.tsv: $(awk '!/^#/ && NF {printf "%s ", $1}' "$here/arches.tsv"))"
    read -r _ A_QEMU A_MACHINE A_CPU A_CONSOLE A_FIRMWARE A_MEM A_TIMEOUT A_IMAGE A_DEBARCH A_APPEND <<<"$row"
}

if [ "${1:-}" = --image ]; then
    arch_row "$2"; echo "$A_IMAGE"; exit 0
fi

arch='' kernel='' busybox='' out='' timeout='' mem='' smp=1 append='' tcg_thread='' cpu=''
mods=() payloads=() adds=() trees=()
while [ $# -gt 0 ]; do
    case "$1" in
        --arch|--kernel|--busybox|--out|--timeout|--mem|--smp|--cpu|--tcg-thread|--append)
            o=${1#--}; printf -v "${o//-/_}" %s "$2"; shift 2;;
        --payload) payloads+=("$2"); shift 2;;
        --add) adds+=("$2"); shift 2;;
        --tree) trees+=("$2"); shift 2;;
        -*) arg_error "$1";;
        *) mods+=("$1"); shift;;
    esac
done
[ -n "$arch" ] && [ -n "$kernel" ] && [ -n "$out" ] || die "--arch, --kernel and --out are required"
case "$tcg_thread" in ''|single|multi) ;; *) die "--tcg-thread is single or multi, not $tcg_thread";; esac
arch_row "$arch"
[ -z "$cpu" ] || A_CPU=$cpu
[ -f "$kernel" ] || die "no kernel $kernel"
for t in cpio python3 "$A_QEMU"; do command -v "$t" >/dev/null || die "$t not found"; done
if [ -z "$busybox" ]; then
    if [ "$A_DEBARCH" = "$(dpkg --print-architecture 2>/dev/null)" ]; then
        busybox=/bin/busybox
    else
        root=$("$REPO/scripts/fetch-debian-kernel.sh" trixie "$A_DEBARCH" busybox-static) ||
            die "fetching busybox-static:$A_DEBARCH failed"
        busybox=$root/bin/busybox
        [ -f "$busybox" ] || busybox=$root/usr/bin/busybox
    fi
fi
[ -f "$busybox" ] || die "no busybox $busybox"

out=$(work_dir "$out" -)
rd=$out/initrd
rm -rf "$rd"
mkdir -p "$rd"/{bin,sbin,proc,sys,dev,tmp,etc,payload}
install -m 755 "$busybox" "$rd/bin/busybox"
ln -s busybox "$rd/bin/sh"
install -m 755 "$here/init" "$rd/init"
for m in ${mods[@]+"${mods[@]}"}; do
    [ -f "$m" ] || die "no module $m"
    b=$(python3 "$here/guest.py" modname "$m") || die "cannot read $m"
    mkdir -p "$rd/modules"
    cp "$m" "$rd/modules/$b.ko"
    echo "$b" >> "$rd/modules/order"
done
i=10
for p in ${payloads[@]+"${payloads[@]}"}; do
    [ -f "$p" ] || die "no payload $p"
    cp "$p" "$rd/payload/$i-$(basename "$p")"; i=$((i + 1))
done
for a in ${adds[@]+"${adds[@]}"}; do
    [ -e "${a%%=*}" ] || die "no file ${a%%=*}"
    mkdir -p "$rd/$(dirname "${a#*=}")"
    cp -r "${a%%=*}" "$rd/${a#*=}"
done
for t in ${trees[@]+"${trees[@]}"}; do
    [ -d "$t" ] || die "no folder $t"
    cp -a "$t/." "$rd/"
done
(cd "$rd" && find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0) > "$out/initrd.cpio"

qemu=("$A_QEMU" -accel "tcg${tcg_thread:+,thread=$tcg_thread}" -smp "$smp" -m "${mem:-$A_MEM}")
[ "$A_MACHINE" = - ] || qemu+=(-M "$A_MACHINE")
[ "$A_CPU" = - ] || qemu+=(-cpu "$A_CPU")
[ "$A_FIRMWARE" = - ] || qemu+=(-bios "$A_FIRMWARE")
args=$append
[ "$A_APPEND" = - ] || args="$A_APPEND${args:+ $args}"
printf '%q ' "${qemu[@]}" -kernel "$kernel" > "$out/qemu-cmd"; echo >> "$out/qemu-cmd"
start=$(date +%s.%N)
qrc=0
timeout -k 5 "${timeout:-$A_TIMEOUT}" "${qemu[@]}" -nographic -no-reboot \
    -kernel "$kernel" -initrd "$out/initrd.cpio" \
    -append "console=$A_CONSOLE panic=-1 loglevel=7 nokaslr${args:+ $args}" \
    </dev/null >"$out/console.log" 2>"$out/qemu.stderr" || qrc=$?
python3 -c "import time;print(round(time.time()-$start,1))" > "$out/boot-seconds"
echo "$qrc" > "$out/qemu-rc"
case "$qrc" in 124|137) exit 12;; esac
exit 0
