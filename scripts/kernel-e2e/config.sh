#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# config.sh SRC OBJ [MAKE-VAR...] — write the trimmed x86_64 configuration
# the kernel e2e builds, into OBJ/.config, and fail unless every option the
# proof relies on came out as asked.  MAKE-VAR... (e.g. LLVM=-19) must be the
# ones the build uses, since Kconfig asks the compiler what it can do.  Both
# kernels (stock and series) get this same file; the
# series kernel differs only in CONFIG_BUILDTIME_MCOUNT_ZERO, which its Kconfig
# turns on by default.
#
# defconfig, plus: modules, the function tracer with dynamic ftrace, IBT
# (so FTRACE_MCOUNT_MAX_OFFSET is 4 and the ENDBR adjust applies), KVM=m,
# and what the kernel's own ftrace and livepatch selftests need
# (tools/testing/selftests/{ftrace,livepatch}/config), so that one pair of
# builds serves kernel-e2e and kernel-selftests: kprobes, fprobes, uprobes
# and eprobes as dynamic events, the function graph tracer, histograms and
# synthetic events, the latency tracers, the stack tracer and profiler,
# livepatch, dynamic debug, and the sample modules the ftrace tests load
# with modprobe (trace-printk, trace-events-sample, ftrace-direct*,
# remote_test).  Not: BTF and BPF (they need debug info, the biggest part of
# a build's time): the tests that need them end UNSUPPORTED, and
# docs/kernel-e2e.md says which.
# Minus: debug info, BTF and Rust (time), DRM/sound/wireless/netfilter (the
# biggest parts of defconfig that a serial-console QEMU guest never uses).
set -euo pipefail
SRC=$1 OBJ=$2; shift 2
mkdir -p "$OBJ"
make -s -C "$SRC" O="$OBJ" ARCH=x86_64 "$@" x86_64_defconfig >/dev/null
c() { "$SRC/scripts/config" --file "$OBJ/.config" "$@"; }
c --enable MODULES --enable MODULE_UNLOAD \
  --enable FTRACE --enable FUNCTION_TRACER --enable DYNAMIC_FTRACE \
  --enable X86_KERNEL_IBT \
  --enable VIRTUALIZATION --module KVM --module KVM_INTEL --module KVM_AMD \
  --enable DEBUG_INFO_NONE --disable DEBUG_INFO --disable DEBUG_INFO_DWARF5 \
  --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT --disable DEBUG_INFO_BTF \
  --disable RUST --disable WERROR \
  --disable DRM --disable SOUND --disable CFG80211 --disable MAC80211 \
  --disable WLAN --disable NETFILTER \
  --set-str LOCALVERSION "" --disable LOCALVERSION_AUTO \
  --enable KALLSYMS_ALL --enable KPROBES --enable KPROBE_EVENTS --enable UPROBES \
  --enable UPROBE_EVENTS --enable EPROBE_EVENTS --enable FPROBE --enable FPROBE_EVENTS \
  --enable FUNCTION_GRAPH_TRACER --enable FUNCTION_GRAPH_RETVAL --enable DYNAMIC_EVENTS \
  --enable HIST_TRIGGERS --enable SYNTHETIC_EVENTS --enable FTRACE_SYSCALLS \
  --enable STACK_TRACER --enable FUNCTION_PROFILER --enable TRACER_SNAPSHOT \
  --enable SCHED_TRACER --enable IRQSOFF_TRACER --module PREEMPTIRQ_DELAY_TEST \
  --enable LIVEPATCH --enable DYNAMIC_DEBUG --module TRACE_REMOTE_TEST \
  --enable SAMPLES --module SAMPLE_TRACE_EVENTS --module SAMPLE_TRACE_PRINTK \
  --module SAMPLE_FTRACE_DIRECT --module SAMPLE_FTRACE_DIRECT_MULTI
if [ -n "${ZWM_KCONFIG_EXTRA:-}" ]; then
    # shellcheck disable=SC2086
    c $ZWM_KCONFIG_EXTRA
fi
make -s -C "$SRC" O="$OBJ" ARCH=x86_64 "$@" olddefconfig >/dev/null
need() {
    grep -qx "$1" "$OBJ/.config" || { echo "config.sh: $OBJ/.config lacks $1" >&2; exit 1; }
}
for o in CONFIG_MODULES=y CONFIG_MODULE_UNLOAD=y CONFIG_FUNCTION_TRACER=y \
         CONFIG_DYNAMIC_FTRACE=y CONFIG_X86_KERNEL_IBT=y CONFIG_KVM=m \
         CONFIG_DEBUG_INFO_NONE=y CONFIG_SERIAL_8250_CONSOLE=y \
         CONFIG_BLK_DEV_INITRD=y CONFIG_DEVTMPFS=y \
         CONFIG_KPROBE_EVENTS=y CONFIG_FPROBE_EVENTS=y CONFIG_FUNCTION_GRAPH_TRACER=y \
         CONFIG_HIST_TRIGGERS=y CONFIG_LIVEPATCH=y CONFIG_SAMPLE_TRACE_PRINTK=m \
         CONFIG_SAMPLE_TRACE_EVENTS=m CONFIG_SAMPLE_FTRACE_DIRECT=m; do
    need "$o"
done
for o in CONFIG_DEBUG_INFO_BTF CONFIG_RUST CONFIG_MODULE_SIG CONFIG_MODVERSIONS; do
    if grep -q "^$o=y" "$OBJ/.config"; then
        echo "config.sh: $OBJ/.config has $o=y" >&2; exit 1
    fi
done
