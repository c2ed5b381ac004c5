#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# build-clang-kernel.sh --arch x86_64|ppc64le [--work DIR]
#
# Build stock Linux 7.2 (Debian's linux-source-7.2, no series) with clang
# and lld (LLVM=1), for the clang cases of scripts/e2e.sh: kvm.ko (and
# irqbypass.ko on x86_64) built by clang against a kernel built by clang.
#
#   x86_64   tinyconfig plus what the kernel e2e relies on
#            (scripts/kernel-e2e/config.sh): modules, dynamic ftrace, IBT
#            (FTRACE_MCOUNT_MAX_OFFSET 4, the ENDBR adjust), KVM=m with
#            KVM_INTEL and KVM_AMD; and what the guest needs: 64-bit, SMP,
#            serial console, initramfs, devtmpfs, ELF and #! binaries, ACPI
#            (for poweroff).  config.sh's defconfig is about 1600 objects,
#            over an hour with clang on the shared 2-core machine; this is
#            about a third of that
#   ppc64le  scripts/kernel-e2e/config-ppc64le.sh: pseries guest, KVM=m;
#            cross-built (ARCH=powerpc; clang is a cross compiler already)
#
# stdout: the build folder (OBJ: .config, vmlinux, arch/*/boot/bzImage and
# the modules).  OBJ/build-seconds holds the time of the last make.
#
# Debian bookworm's clang is 14, older than the 17.0.1 that 7.2 accepts
# (scripts/min-tool-version.sh); the newest clang-N (>= 17) on PATH is used,
# as LLVM=-N, and clang-19 lld-19 llvm-19 (bookworm's newest) are installed
# when there is none.  ZWM_LLVM overrides (e.g. ZWM_LLVM=1
# for plain clang).  Environment: ZWM_CACHE, ZWM_JOBS (default nproc+1),
# ZWM_NICE (default 10).  Builds are incremental.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=build-clang-kernel DIE_STATUS=2
. "$REPO/scripts/lib.sh"

arch= work=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/clang-kernel
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch=$2; shift 2;;
        --work) work=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
case "$arch" in
    x86_64) karch=x86_64 targets=(bzImage modules) config=;;
    ppc64le) karch=powerpc targets=(vmlinux modules) config=config-ppc64le.sh;;
    *) die "--arch x86_64|ppc64le";;
esac
mkdir -p "$work"; work=$(cd "$work" && pwd)
jobs=${ZWM_JOBS:-$(( $(nproc) + 1 ))}

newest_llvm() {
    local v
    for v in 22 21 20 19 18 17; do
        if command -v "clang-$v" >/dev/null && command -v "ld.lld-$v" >/dev/null &&
           command -v "llvm-objcopy-$v" >/dev/null; then
            echo "-$v"; return 0
        fi
    done
    return 1
}
llvm=${ZWM_LLVM:-$(newest_llvm || true)}
if [ -z "$llvm" ]; then
    install_packages clang-19 lld-19 llvm-19
    llvm=-19
fi
needs=("make make" "gcc gcc" "flex flex" "bison bison" "bc bc" "xz xz-utils"
    "/usr/include/gelf.h libelf-dev" "/usr/include/openssl/evp.h libssl-dev")
missing_packages "${needs[@]}"
install_packages "${MISSING[@]}"

root=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64 linux-source-7.2) || die "fetching linux-source-7.2 failed"
tarball=$root/usr/src/linux-source-7.2.tar.xz
[ -f "$tarball" ] || die "no $tarball"
src=$work/src obj=$work/obj-$arch
stamp=$(stat -c '%s %Y' "$tarball")
if [ ! -f "$src/.zwm-stamp" ] || [ "$(cat "$src/.zwm-stamp")" != "$stamp" ]; then
    log "unpacking $(basename "$tarball") (stock, no series)"
    rm -rf "$src"; mkdir -p "$src"
    tar -xJf "$tarball" -C "$src" --strip-components=1
    echo "$stamp" > "$src/.zwm-stamp"
fi
mkdir -p "$obj"
tiny_x86() { # SRC OBJ
    local o=$2
    mkdir -p "$o"
    make -s -C "$1" O="$o" ARCH=x86_64 LLVM="$llvm" tinyconfig >/dev/null
    "$1/scripts/config" --file "$o/.config" \
        --enable 64BIT --enable SMP --enable PRINTK --enable PRINTK_TIME --enable EARLY_PRINTK \
        --enable TTY --enable SERIAL_8250 --enable SERIAL_8250_CONSOLE \
        --enable BLK_DEV_INITRD --enable DEVTMPFS --enable PROC_FS --enable SYSFS \
        --enable TMPFS --enable SHMEM --enable BINFMT_ELF --enable BINFMT_SCRIPT \
        --enable MULTIUSER --enable FUTEX --enable POSIX_TIMERS --enable EPOLL \
        --enable SIGNALFD --enable TIMERFD --enable EVENTFD --enable AIO --enable FILE_LOCKING \
        --enable ACPI --enable PCI --enable CPU_SUP_INTEL --enable CPU_SUP_AMD \
        --enable IA32_FEAT_CTL --enable X86_LOCAL_APIC --enable HIGH_RES_TIMERS \
        --enable MODULES --enable MODULE_UNLOAD \
        --enable FTRACE --enable FUNCTION_TRACER --enable DYNAMIC_FTRACE \
        --enable X86_KERNEL_IBT \
        --enable VIRTUALIZATION --module KVM --module KVM_INTEL --module KVM_AMD \
        --enable DEBUG_INFO_NONE --disable WERROR \
        --set-str LOCALVERSION "" --disable LOCALVERSION_AUTO
    make -s -C "$1" O="$o" ARCH=x86_64 LLVM="$llvm" olddefconfig >/dev/null
    local n
    for n in CONFIG_MODULES=y CONFIG_MODULE_UNLOAD=y CONFIG_FUNCTION_TRACER=y \
             CONFIG_DYNAMIC_FTRACE=y CONFIG_X86_KERNEL_IBT=y CONFIG_KVM=m CONFIG_KVM_INTEL=m \
             CONFIG_SERIAL_8250_CONSOLE=y CONFIG_BLK_DEV_INITRD=y CONFIG_DEVTMPFS=y \
             CONFIG_BINFMT_SCRIPT=y CONFIG_ACPI=y CONFIG_IRQ_BYPASS_MANAGER=m; do
        has_line "$n" cat "$o/.config" || die "the tiny x86_64 config lacks $n"
    done
}
if [ "$arch" = x86_64 ]; then
    tiny_x86 "$src" "$obj.config-new"
else
    "$REPO/scripts/kernel-e2e/$config" "$src" "$obj.config-new" LLVM="$llvm"
fi
if ! cmp -s "$obj.config-new/.config" "$obj/.config"; then
    cp "$obj.config-new/.config" "$obj/.config"
fi
rm -rf "$obj.config-new"
has_line CONFIG_CC_IS_CLANG=y cat "$obj/.config" || die "$obj/.config is not a clang config"
log "building $arch with LLVM=$llvm (nice make -j$jobs, log in $obj.log)"
start=$(date +%s)
nice -n "${ZWM_NICE:-10}" make -C "$src" O="$obj" ARCH=$karch LLVM="$llvm" -j"$jobs" "${targets[@]}" \
        >"$obj.log" 2>&1 || { tail -n 30 "$obj.log" >&2; die "the clang $arch kernel did not build"; }
echo $(( $(date +%s) - start )) > "$obj/build-seconds"
log "built in $(cat "$obj/build-seconds") s ($(clang"$llvm" --version | head -n 1))"
printf '%s\n' "$obj"
