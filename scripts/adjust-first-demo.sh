#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# adjust-first-demo.sh — show why the tool never zeroes an entry on a kernel
# that adjusts a callsite word before testing it for zero (docs/rules.md,
# "The zero-first gate").
#
# Boots Debian bookworm's arm64 kernel (6.1: adjust first, +4 with
# DYNAMIC_FTRACE_WITH_REGS) under QEMU twice: with crc32_generic.ko as
# shipped (signature stripped), which must load cleanly with its smoke test
# passing, and with its first callsite entry neutralised as the tool would
# do it, which must make the kernel fault on a record at ip 4 and turn
# ftrace off.  Exit 0 only when both happen.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=adjust-first-demo
. "$REPO/scripts/lib.sh"

missing_packages "qemu-system-aarch64 qemu-system-arm" "cpio cpio" "python3 python3"
install_packages "${MISSING[@]}"
root=$("$REPO/scripts/fetch-debian-kernel.sh" bookworm arm64 busybox-static) || die "fetch failed"
kver=$(cat "$root/../kver")
module=$root/lib/modules/$kver/kernel/crypto/crc32_generic.ko
[ -f "$module" ] || die "no $module"
work=$(mktemp -d /tmp/zwm-adjust-first.XXXXXX)
log "work folder: $work"
(cd "$REPO" && cargo build --release -q --example hostile-edit) || die "cannot build examples/hostile-edit.rs"
edit=$REPO/target/release/examples/hostile-edit
"$edit" strip "$module" "$work/orig.ko"
"$edit" neutralise "$module" "$work/zeroed.ko" 0
# The e2e's boot: the guest runner with its ftrace-report payload, judged
# as the e2e judges it (0: loaded, listed and powered off cleanly).
boot() {
    python3 "$REPO/scripts/e2e/zwm_e2e.py" boot aarch64 "$root/boot/vmlinuz-$kver" "$root/bin/busybox" \
        "$work/$1" "$work/$1.ko" >&2
}
boot orig || die "the module as shipped does not boot cleanly (see $work/orig/console.log)"
grep -qF -- "@@ZWM SMOKE crc32_generic ok" "$work/orig/console.log" ||
    die "the module as shipped fails the smoke test"
grep -qF -- "ftrace bug" "$work/orig/console.log" && die "ftrace bug with the module as shipped"
boot zeroed || true
console=$work/zeroed/console.log
grep -qF -- "ftrace bug" "$console" || die "no ftrace bug with a zeroed entry: is this kernel adjust-first?"
grep -qF -- "[<0000000000000004>]" "$console" || die "the ftrace bug is not at ip 4"
grep -qF -- "set_ftrace_filter: No such device" "$console" || die "ftrace was not turned off"
log "as expected: a zeroed entry became a record at ip 4, and ftrace_bug() turned ftrace off"
