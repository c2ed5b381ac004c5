#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# build-clang-kernel.sh --arch x86_64|ppc64le [--work DIR]
#
# Build stock Linux 7.2 (Debian's linux-source-7.2, no series) with clang
# and lld (LLVM=1), for the clang cases of scripts/e2e/zwm_e2e.py: kvm.ko (and
# irqbypass.ko on x86_64) built by clang against a kernel built by clang.
#
#   x86_64   scripts/kernel-e2e/config.sh, kernel-e2e's own config:
#            tinyconfig, plus what the guest, kvm.ko (KVM_INTEL, KVM_AMD),
#            dynamic ftrace with IBT (FTRACE_MCOUNT_MAX_OFFSET 4, the ENDBR
#            adjust) and the kernel's selftests need
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

arch='' work=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/clang-kernel
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
missing_packages "${KBUILD_NEEDS[@]}"
install_packages "${MISSING[@]}"

series_source 7.2
src=$work/src obj=$work/obj-$arch
unpack_tree "$src" 0
kernel_config "${config:-config.sh}" "$src" "$obj" LLVM="$llvm"
has_line CONFIG_CC_IS_CLANG=y cat "$obj/.config" || die "$obj/.config is not a clang config"
log "building $arch with LLVM=$llvm (nice make -j$JOBS, log in $obj.log)"
ZWM_NICE=${ZWM_NICE:-10} build_kernel "the clang $arch kernel" "$obj.log" -C "$src" O="$obj" ARCH=$karch LLVM="$llvm" "${targets[@]}"
echo "$BUILD_SECS" > "$obj/build-seconds"
log "built in $(cat "$obj/build-seconds") s ($(clang"$llvm" --version | head -n 1))"
printf '%s\n' "$obj"
