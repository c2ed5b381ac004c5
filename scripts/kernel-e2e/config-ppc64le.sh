#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# config-ppc64le.sh SRC OBJ [MAKE-VAR...] — write the trimmed ppc64le
# (pseries, little endian) configuration of the ppc64le kernel e2e into
# OBJ/.config, and fail unless every option the proof relies on came out as
# asked.  MAKE-VAR... (e.g. CROSS_COMPILE=powerpc64le-linux-gnu- or LLVM=-19)
# must be the ones the build uses: Kconfig asks the compiler whether it can
# do -mprofile-kernel or -fpatchable-function-entry, and that decides
# FTRACE_MCOUNT_MAX_OFFSET and so BUILDTIME_MCOUNT_ZERO.
#
# ppc64le_guest_defconfig (what pseries_le_defconfig names: a QEMU/KVM
# pseries guest with hvc console), plus: modules, the function tracer with
# dynamic ftrace, KVM_BOOK3S_64=m (kvm.ko) with KVM_BOOK3S_64_PR=m.  Minus:
# debug info, BTF, Rust, signing and modversions (and lockdown, IMA and
# secure boot, which select module signing), and everything a console-only
# guest with an initramfs never uses: the other platforms (POWERNV, and with
# it KVM_BOOK3S_64_HV, whose kvm-hv.ko is not what is measured), networking,
# block devices, DRM, sound, input, the file systems, security modules,
# kexec and dump, KUnit and the test modules, and NO_HZ_FULL (its user context tracking rules
# out KVM_BOOK3S_64_PR).  On a 2-core machine shared with other builds that is
# what keeps a cross build well under an hour.
set -euo pipefail
SRC=$(cd "$1" && pwd) OBJ=$2; shift 2
mkdir -p "$OBJ"
OBJ=$(cd "$OBJ" && pwd)
mk=(make -s -C "$SRC" O="$OBJ" ARCH=powerpc "$@")
"${mk[@]}" ppc64le_guest_defconfig >/dev/null
c() { "$SRC/scripts/config" --file "$OBJ/.config" "$@"; }
c --enable MODULES --enable MODULE_UNLOAD \
  --enable FTRACE --enable FUNCTION_TRACER --enable DYNAMIC_FTRACE \
  --enable VIRTUALIZATION --module KVM_BOOK3S_64 --module KVM_BOOK3S_64_PR \
  --enable HVC_CONSOLE --enable BLK_DEV_INITRD --enable DEVTMPFS --enable PRINTK_TIME \
  --enable DEBUG_INFO_NONE --disable DEBUG_INFO --disable DEBUG_INFO_DWARF5 \
  --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT --disable DEBUG_INFO_DWARF4 \
  --disable DEBUG_INFO_BTF --disable RUST --disable WERROR --disable PPC_DISABLE_WERROR \
  --disable SECURITY_LOCKDOWN_LSM --disable PPC_SECURE_BOOT --disable IMA \
  --disable MODULE_SIG --disable MODVERSIONS \
  --disable PPC_POWERNV --disable KVM_BOOK3S_64_HV --disable PPC_PS3 --disable PPC_CELL \
  --disable PPC_IBM_CELL_BLADE --disable PPC_MAPLE --disable PPC_PASEMI --disable PPC_PMAC \
  --disable PPC_MICROWATT \
  --disable DRM --disable SOUND --disable CFG80211 --disable MAC80211 \
  --disable WLAN --disable NETFILTER --disable NET --disable BLOCK \
  --disable SCSI --disable ATA --disable USB_SUPPORT --disable INFINIBAND \
  --disable MD --disable FB --disable INPUT --disable VT --disable HID \
  --disable EXT2_FS --disable EXT3_FS --disable EXT4_FS --disable XFS_FS --disable FAT_FS \
  --disable MSDOS_FS --disable ISO9660_FS --disable NFS_FS --disable SQUASHFS \
  --disable MEDIA_SUPPORT --disable VFIO --disable VHOST_MENU --disable MTD \
  --disable HWMON --disable THERMAL --disable WATCHDOG --disable I2C --disable SPI \
  --disable GPIOLIB --disable NEW_LEDS --disable PTP_1588_CLOCK --disable POWER_SUPPLY \
  --disable RTC_CLASS --disable STAGING --disable DMADEVICES \
  --disable MISC_FILESYSTEMS --disable NETWORK_FILESYSTEMS --disable FUSE_FS \
  --disable OVERLAY_FS --disable QUOTA --disable AUTOFS_FS \
  --disable SECURITY --disable AUDIT --disable BPF_SYSCALL --disable CGROUPS \
  --disable NAMESPACES --disable KEXEC --disable KEXEC_FILE --disable CRASH_DUMP \
  --disable FA_DUMP --disable PRESERVE_FA_DUMP --disable HIBERNATION --disable SUSPEND \
  --disable XMON --disable KPROBES --disable UPROBES --disable PROFILING \
  --disable KUNIT --disable NO_HZ_FULL --disable VIRT_CPU_ACCOUNTING_GEN \
  --enable TICK_CPU_ACCOUNTING --disable CRYPTO_HW --disable ZRAM --disable BTRFS_FS \
  --disable NILFS2_FS --disable UDF_FS --disable VFAT_FS --disable UIO --disable BINFMT_MISC \
  --disable RUNTIME_TESTING_MENU --disable LKDTM --disable NVME_CORE --disable CRYPTO_BENCHMARK \
  --set-str LOCALVERSION "" --disable LOCALVERSION_AUTO
"${mk[@]}" olddefconfig >/dev/null
need() {
    grep -qx "$1" "$OBJ/.config" || { echo "config-ppc64le.sh: $OBJ/.config lacks $1" >&2; exit 1; }
}
for o in CONFIG_PPC64=y CONFIG_CPU_LITTLE_ENDIAN=y CONFIG_PPC_PSERIES=y \
         CONFIG_MODULES=y CONFIG_MODULE_UNLOAD=y CONFIG_FUNCTION_TRACER=y \
         CONFIG_DYNAMIC_FTRACE=y CONFIG_KVM_BOOK3S_64=m CONFIG_KVM_BOOK3S_64_PR=m \
         CONFIG_DEBUG_INFO_NONE=y CONFIG_PRINTK_TIME=y \
         CONFIG_HVC_CONSOLE=y CONFIG_BLK_DEV_INITRD=y CONFIG_DEVTMPFS=y; do
    need "$o"
done
! bad=$(grep -E '^CONFIG_(DEBUG_INFO_BTF|RUST|MODULE_SIG|MODVERSIONS|NET|DRM)=y$' "$OBJ/.config") ||
    { echo "config-ppc64le.sh: $OBJ/.config has $bad" >&2; exit 1; }
