#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# config.sh SRC OBJ [MAKE-VAR...] — write the trimmed configuration the
# kernel e2e builds (x86_64 unless ARCH= says otherwise) into OBJ/.config,
# and fail unless every option the proof relies on came out as asked.
# MAKE-VAR... (e.g. LLVM=-19) must be the build's: Kconfig asks the compiler
# what it can do.  Stock and series share it: the series adds no option.
#
# tinyconfig, plus what a serial-console QEMU guest with an initramfs needs
# (ACPI for poweroff, the local APIC and high resolution timers KVM wants,
# -O2 rather than tinyconfig's -Os), modules, dynamic ftrace, IBT (so
# FTRACE_MCOUNT_MAX_OFFSET is 4 and the ENDBR adjust applies) and KVM=m; and
# what the kernel's ftrace and livepatch selftests ask for (the config files
# of tools/testing/selftests/{ftrace,livepatch}), so that one pair of builds
# serves kernel-e2e and kernel-selftests: among it the ORC unwinder (x86 has
# HAVE_RELIABLE_STACKTRACE only with it, and without a reliable stack check
# no livepatch transition completes), IPv4 for the tests that ping, and the
# sample modules the ftrace tests load with modprobe.  Not: debug info, BTF
# and BPF (debug info is the biggest part of a build's time): the tests that
# need them end UNSUPPORTED, and docs/kernel-e2e.md says which.  From
# tinyconfig a build takes a third of what x86_64_defconfig's does.
#
# ARCH=arm64 among the MAKE-VARs gives the same for QEMU's virt machine
# (PL011 console, PSCI poweroff), for patch 5's selftest there: no KVM
# (arm64 builds it in), livepatch or ORC.  ARCH=riscv: the virt machine's
# 8250 and PLIC, the ISA from "riscv,isa" (QEMU 7.2's device tree), KVM=m,
# call ops as Debian's, and no RISCV_ISA_C (nor EFI, which forces it): with
# it dynamic ftrace needs gcc 14's -fmin-function-alignment; gcc 12's 4,2
# full NOPs give the 8+8 bytes of Debian's 8,4 compressed ones.  ARCH=s390:
# the SCLP consoles, KVM=m and Debian's z10.
set -euo pipefail
SRC=$1 OBJ=$2; shift 2
arch=x86_64
for v in "$@"; do case "$v" in ARCH=*) arch=${v#ARCH=};; esac; done
case "$arch" in
    x86_64) opts=(--enable SERIAL_8250 --enable SERIAL_8250_CONSOLE
        --enable ACPI --enable PCI --enable CPU_SUP_INTEL --enable CPU_SUP_AMD
        --enable IA32_FEAT_CTL --enable X86_LOCAL_APIC
        --enable X86_KERNEL_IBT --enable UNWINDER_ORC --disable UNWINDER_GUESS --disable UNWINDER_FRAME_POINTER
        --enable VIRTUALIZATION --module KVM --module KVM_INTEL --module KVM_AMD --enable LIVEPATCH)
        needs=(CONFIG_X86_KERNEL_IBT=y CONFIG_UNWINDER_ORC=y CONFIG_HAVE_RELIABLE_STACKTRACE=y CONFIG_KVM=m
            CONFIG_IRQ_BYPASS_MANAGER=m CONFIG_SERIAL_8250_CONSOLE=y CONFIG_ACPI=y CONFIG_LIVEPATCH=y);;
    arm64) opts=(--enable SERIAL_AMBA_PL011 --enable SERIAL_AMBA_PL011_CONSOLE)
        needs=(CONFIG_SERIAL_AMBA_PL011_CONSOLE=y CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y);;
    riscv) opts=(--enable MMU --enable FPU --enable RISCV_ISA_FALLBACK --enable NONPORTABLE --disable EFI
        --disable RISCV_ISA_C --enable SIFIVE_PLIC --enable SERIAL_8250 --enable SERIAL_8250_CONSOLE
        --enable SERIAL_OF_PLATFORM --enable VIRTUALIZATION --module KVM)
        needs=(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y CONFIG_SERIAL_8250_CONSOLE=y CONFIG_KVM=m);;
    s390) opts=(--enable MARCH_Z10 --disable MARCH_Z196 --enable SCLP_TTY --enable SCLP_CONSOLE
        --enable SCLP_VT220_TTY --enable SCLP_VT220_CONSOLE --enable VIRTUALIZATION --module KVM)
        needs=(CONFIG_MARCH_Z10=y CONFIG_FTRACE_MCOUNT_USE_CC=y CONFIG_SCLP_VT220_CONSOLE=y CONFIG_KVM=m);;
    *) echo "config.sh: no configuration for ARCH=$arch" >&2; exit 1;;
esac
mkdir -p "$OBJ"
make -s -C "$SRC" O="$OBJ" ARCH="$arch" "$@" tinyconfig >/dev/null
c() { "$SRC/scripts/config" --file "$OBJ/.config" "$@"; }
c "${opts[@]}"
c --enable 64BIT --enable SMP --enable PRINTK --enable PRINTK_TIME --enable EARLY_PRINTK \
  --enable BUG --enable TTY \
  --enable BLK_DEV_INITRD --enable DEVTMPFS --enable PROC_FS --enable PROC_SYSCTL --enable SYSCTL --enable SYSFS \
  --enable TMPFS --enable SHMEM --enable BINFMT_ELF --enable BINFMT_SCRIPT \
  --enable MULTIUSER --enable FUTEX --enable POSIX_TIMERS --enable EPOLL \
  --enable SIGNALFD --enable TIMERFD --enable EVENTFD --enable AIO --enable FILE_LOCKING \
  --enable HIGH_RES_TIMERS \
  --disable CC_OPTIMIZE_FOR_SIZE --enable CC_OPTIMIZE_FOR_PERFORMANCE \
  --enable NET --enable INET --enable UNIX --enable PACKET \
  --enable MODULES --enable MODULE_UNLOAD \
  --enable FTRACE --enable FUNCTION_TRACER --enable DYNAMIC_FTRACE \
  --enable DEBUG_INFO_NONE --disable WERROR --disable RUST \
  --set-str LOCALVERSION "" --disable LOCALVERSION_AUTO \
  --enable KALLSYMS --enable KALLSYMS_ALL --enable PERF_EVENTS --enable DEBUG_FS \
  --enable KPROBES --enable KPROBE_EVENTS --enable UPROBES \
  --enable UPROBE_EVENTS --enable EPROBE_EVENTS --enable FPROBE --enable FPROBE_EVENTS \
  --enable FUNCTION_GRAPH_TRACER --enable FUNCTION_GRAPH_RETVAL --enable DYNAMIC_EVENTS \
  --enable HIST_TRIGGERS --enable SYNTHETIC_EVENTS --enable FTRACE_SYSCALLS \
  --enable STACK_TRACER --enable FUNCTION_PROFILER --enable TRACER_SNAPSHOT \
  --enable SCHED_TRACER --enable IRQSOFF_TRACER --module PREEMPTIRQ_DELAY_TEST \
  --enable DYNAMIC_DEBUG --module TRACE_REMOTE_TEST \
  --enable SAMPLES --module SAMPLE_TRACE_EVENTS --module SAMPLE_TRACE_PRINTK \
  --module SAMPLE_FTRACE_DIRECT --module SAMPLE_FTRACE_DIRECT_MULTI
if [ -n "${ZWM_KCONFIG_EXTRA:-}" ]; then
    # shellcheck disable=SC2086
    c $ZWM_KCONFIG_EXTRA
fi
make -s -C "$SRC" O="$OBJ" ARCH="$arch" "$@" olddefconfig >/dev/null
need() {
    grep -qx "$1" "$OBJ/.config" || { echo "config.sh: $OBJ/.config lacks $1" >&2; exit 1; }
}
for o in CONFIG_MODULES=y CONFIG_MODULE_UNLOAD=y CONFIG_FUNCTION_TRACER=y \
         CONFIG_DYNAMIC_FTRACE=y "${needs[@]}" CONFIG_DEBUG_INFO_NONE=y \
         CONFIG_BLK_DEV_INITRD=y CONFIG_DEVTMPFS=y CONFIG_BINFMT_SCRIPT=y \
         CONFIG_KPROBE_EVENTS=y CONFIG_FPROBE_EVENTS=y CONFIG_FUNCTION_GRAPH_TRACER=y \
         CONFIG_UPROBE_EVENTS=y CONFIG_HIST_TRIGGERS=y CONFIG_DEBUG_FS=y \
         CONFIG_SAMPLE_TRACE_PRINTK=m CONFIG_SAMPLE_TRACE_EVENTS=m CONFIG_SAMPLE_FTRACE_DIRECT=m; do
    need "$o"
done
# /proc/sys: PROC_SYSCTL up to 7.2, SYSCTL (fs/proc/Kconfig) from 7.3.
if grep -qx 'config PROC_SYSCTL' "$SRC/fs/proc/Kconfig"; then need CONFIG_PROC_SYSCTL=y; else need CONFIG_SYSCTL=y; fi
! bad=$(grep -E '^CONFIG_(DEBUG_INFO_BTF|RUST|MODULE_SIG|MODVERSIONS)=y$' "$OBJ/.config") ||
    { echo "config.sh: $OBJ/.config has $bad" >&2; exit 1; }
