#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# boot.sh — boot a kernel under QEMU (TCG, one vCPU) with a minimal initramfs
# that loads the given modules in order and reports what ftrace made of them.
#
# Usage:
#   scripts/e2e/boot.sh --arch x86_64|i386|ppc64le|aarch64|riscv64|s390x
#                       --kernel FILE --busybox FILE
#                       --out DIR [--timeout SEC] [--mem MB] MODULE.ko...
#
# MODULE.ko files must be plain ELF (decompressed, signature stripped); they
# are loaded in the order given.  Module names are read from .modinfo.  The guest prints, between @@ZWM markers:
#   - the insmod result of each module,
#   - each module's lines of available_filter_functions_addrs (ip, name,
#     " [mod]"), or of available_filter_functions on kernels before 6.5, and
#     the load address of each of the module's sections, so that every
#     record can be placed in the module file,
#   - an ftrace smoke test of all modules at once (":mod:NAME" of each into
#     set_ftrace_filter, current_tracer = function, check enabled_functions
#     per module, back to nop),
#   - dmesg since the first load,
# then powers off.
#
# Writes DIR/initrd.cpio, DIR/console.log and DIR/report.json.
# Exit codes: 0 ok, 10 an insmod failed, 11 panic/oops, 12 timeout,
#             13 report missing or incomplete, 2 usage/host error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "boot.sh: error: $*" >&2; exit 2; }

arch= kernel= busybox= out= timeout= mem=
mods=()
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch=$2; shift 2;;
        --kernel) kernel=$2; shift 2;;
        --busybox) busybox=$2; shift 2;;
        --out) out=$2; shift 2;;
        --timeout) timeout=$2; shift 2;;
        --mem) mem=$2; shift 2;;
        -h|--help) sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "$0"; exit 0;;
        -*) die "unknown option $1";;
        *) mods+=("$1"); shift;;
    esac
done
[ -n "$arch" ] && [ -n "$kernel" ] && [ -n "$busybox" ] && [ -n "$out" ] ||
    die "--arch, --kernel, --busybox and --out are required"
[ -f "$kernel" ] || die "no kernel $kernel"
[ -f "$busybox" ] || die "no busybox $busybox"
for t in cpio python3; do command -v $t >/dev/null || die "$t not found"; done

case "$arch" in
    x86_64)
        qemu=(qemu-system-x86_64 -accel tcg -smp 1 -m "${mem:-512}")
        console=ttyS0
        timeout=${timeout:-180};;
    i386)
        # qemu32: a plain 32-bit CPU (P6-class: CMOV, no long mode), enough
        # for Debian's 686 flavour.
        qemu=(qemu-system-i386 -accel tcg -cpu qemu32 -smp 1 -m "${mem:-512}")
        console=ttyS0
        timeout=${timeout:-180};;
    ppc64le)
        qemu=(qemu-system-ppc64 -accel tcg -M pseries,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off -cpu power9 -smp 1 -m "${mem:-1024}")
        console=hvc0
        timeout=${timeout:-300};;
    aarch64)
        # pauth-impdef: emulated pointer authentication with the QARMA
        # algorithm makes TCG about 4 times slower.
        qemu=(qemu-system-aarch64 -accel tcg -M virt -cpu max,pauth-impdef=on -smp 1 -m "${mem:-1024}")
        console=ttyAMA0
        timeout=${timeout:-300};;
    riscv64)
        # -bios default: the OpenSBI firmware QEMU ships.
        qemu=(qemu-system-riscv64 -accel tcg -M virt -bios default -cpu rv64 -smp 1 -m "${mem:-1024}")
        console=ttyS0
        timeout=${timeout:-300};;
    s390x)
        qemu=(qemu-system-s390x -accel tcg -M s390-ccw-virtio -cpu max -smp 1 -m "${mem:-1024}")
        console=ttysclp0
        # The SCLP console slows to a crawl when the host is busy.
        timeout=${timeout:-600};;
    *) die "unknown arch $arch (x86_64|i386|ppc64le|aarch64|riscv64|s390x)";;
esac
command -v "${qemu[0]}" >/dev/null || die "${qemu[0]} not found"

mkdir -p "$out"
out=$(cd "$out" && pwd)
rd=$out/initrd
rm -rf "$rd"
mkdir -p "$rd"/{bin,sbin,proc,sys,dev,tmp,modules,etc}
cp "$busybox" "$rd/bin/busybox"
chmod 755 "$rd/bin/busybox"
ln -s busybox "$rd/bin/sh"

names=()
for m in "${mods[@]}"; do
    [ -f "$m" ] || die "no module $m"
    b=$(python3 "$here/zwm_e2e.py" modname "$m") || die "cannot read $m"
    cp "$m" "$rd/modules/$b.ko"
    names+=("$b")
done
printf '%s\n' "${names[@]}" > "$rd/modules/order"

cat > "$rd/init" <<'INIT'
#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
T=/sys/kernel/tracing
mount -t tracefs tracefs $T 2>/dev/null
if [ ! -e $T/available_filter_functions ]; then
    mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
    T=/sys/kernel/debug/tracing
fi
# keep the console quiet while we report
echo 4 > /proc/sys/kernel/printk 2>/dev/null
echo "@@ZWM BEGIN $(uname -r)"
echo "@@ZWM TRACEFS $T"
echo "zwm-e2e: start" > /dev/kmsg
loaded=""
failed=0
for m in $(cat /modules/order); do
    insmod /modules/$m.ko
    rc=$?
    echo "@@ZWM INSMOD $m rc=$rc"
    if [ $rc -ne 0 ]; then failed=1; break; fi
    loaded="$m $loaded"
done
# Each read of these files walks every record of the kernel, which takes
# seconds under TCG: read each once.
echo "@@ZWM TIME loaded $(cut -d' ' -f1 /proc/uptime)"
cat $T/available_filter_functions_addrs > /tmp/affa 2>/dev/null
[ -s /tmp/affa ] || cat $T/available_filter_functions > /tmp/aff
echo "@@ZWM TIME listed $(cut -d' ' -f1 /proc/uptime)"
# Where the kernel lists the ips (6.5 on), those lines carry the names too:
# print only them, for slow consoles (s390x's SCLP under a loaded host).
for m in $(cat /modules/order); do
    if [ -s /tmp/affa ]; then
        echo "@@ZWM ADDRS-BEGIN $m"
        grep " \[$m\]\$" /tmp/affa
        echo "@@ZWM ADDRS-END $m"
    else
        echo "@@ZWM AFF-BEGIN $m"
        grep " \[$m\]\$" /tmp/aff
        echo "@@ZWM AFF-END $m"
    fi
    echo "@@ZWM SECTIONS-BEGIN $m"
    for s in /sys/module/$m/sections/.* /sys/module/$m/sections/*; do
        [ -f "$s" ] && echo "${s##*/} $(cat "$s")"
    done
    echo "@@ZWM SECTIONS-END $m"
done
# One smoke test for all loaded modules: every pass over the records (the
# filter, the tracer switch) takes seconds under TCG.
echo > $T/set_ftrace_filter
werr=""
for m in $loaded; do
    echo ":mod:$m" >> $T/set_ftrace_filter || werr="$werr $m"
done
if [ -n "$loaded" ] && echo function > $T/current_tracer; then
    cur=$(cat $T/current_tracer)
    cp $T/enabled_functions /tmp/enabled
    sleep 1
    echo nop > $T/current_tracer; rc1=$?
else
    cur=none rc1=1
    cp /dev/null /tmp/enabled
fi
cur2=$(cat $T/current_tracer)
cp $T/set_ftrace_filter /tmp/filtered
echo > $T/set_ftrace_filter
for m in $(cat /modules/order); do
    case " $loaded " in *" $m "*) ;; *) continue;; esac
    n=$(grep -c " \[$m\]\$" /tmp/filtered)
    e=$(grep -c " \[$m\]" /tmp/enabled)
    case " $werr " in *" $m "*) echo "@@ZWM SMOKE $m fail set_ftrace_filter-write"; continue;; esac
    if [ "$cur" = function ] && [ $rc1 -eq 0 ] && [ "$cur2" = nop ] && [ "$n" -gt 0 ] && [ "$e" = "$n" ]; then
        echo "@@ZWM SMOKE $m ok filtered=$n enabled=$e"
    else
        echo "@@ZWM SMOKE $m fail filtered=$n enabled=$e tracer=$cur/$cur2 nop-rc=$rc1"
    fi
done
echo "@@ZWM TIME smoked $(cut -d' ' -f1 /proc/uptime)"
for m in $loaded; do
    rmmod $m
    echo "@@ZWM RMMOD $m rc=$?"
done
echo "@@ZWM DMESG-BEGIN"
dmesg | sed -n '/zwm-e2e: start/,$p'
echo "@@ZWM DMESG-END"
echo "@@ZWM END"
sync
poweroff -f
sleep 30
INIT
chmod 755 "$rd/init"
(cd "$rd" && find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0) > "$out/initrd.cpio"

append="console=$console panic=-1 loglevel=7 nokaslr"
start=$(date +%s.%N)
set +e
timeout -k 5 "$timeout" "${qemu[@]}" -nographic -no-reboot \
    -kernel "$kernel" -initrd "$out/initrd.cpio" -append "$append" \
    </dev/null >"$out/console.log" 2>"$out/qemu.stderr"
qrc=$?
set -e
secs=$(python3 -c "import time;print(round(time.time()-$start,1))")
timed=()
[ "$qrc" = 124 ] || [ "$qrc" = 137 ] && timed=(--timed-out)
set +e
why=$(python3 "$here/zwm_e2e.py" parse "$out/console.log" "$out/report.json" ${timed[@]+"${timed[@]}"} "${names[@]}")
rc=$?
set -e
echo "$secs" > "$out/boot-seconds"
echo "boot.sh: $arch ${names[*]}: $why (qemu rc $qrc, ${secs}s) -> $out" >&2
if [ "$rc" != 0 ]; then
    echo "boot.sh: last console lines:" >&2
    tail -n 25 "$out/console.log" | sed 's/^/  | /' >&2
    [ -s "$out/qemu.stderr" ] && sed 's/^/  qemu: /' "$out/qemu.stderr" >&2
fi
exit "$rc"
