#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Two kernel ABIs, real DKMS packages and the tool's .deb in a clean Debian
# trixie root (mmdebstrap, trixie and trixie-backports): since trixie each
# ABI has its own linux-kbuild-ABI package, so every new headers package
# must be hooked as it is installed, and its hook removed with it.
#
#   0. the tool's .deb installed with apt: /etc/kernel/header_postinst.d/
#      50-zero-weak-mcount is a conffile; --status finds no headers tree;
#   1. a DKMS source of testdata/zwm_test (AUTOINSTALL=yes: a module with
#      two overridden __weak functions, so "processed" is measurable) is
#      added before any kernel;
#   2. headers A (trixie's linux-headers-amd64, 6.12): the headers' own
#      postinst hooks them (before DKMS's hook in the same directory), the
#      dpkg diversion exists, and DKMS's autoinstall for A builds zwm_test
#      with a "ZWM [M]" line; `zero-weak-mcount --check` on the installed
#      module finds nothing to do;
#   3. acpi-call-dkms (Debian's package; trixie's v4l2loopback-dkms 0.15.0
#      does not compile against 7.3) builds for A with a "ZWM [M]"
#      line (it has no overridden weak function, so --check has nothing to
#      do on it with or without the hook: the log line is the evidence);
#   4. headers B (trixie-backports' linux-headers-amd64, the newest 7.x):
#      hooked, and DKMS's autoinstall for B builds both modules, processed;
#   5. A purged (headers, -common, kbuild, image): no diversion, no file of
#      the hook left for A (the dpkg trigger's --sweep); B still hooked;
#   6. NEGATIVE CONTROL: the tool's package removed (not purged, so the
#      header_postinst.d conffile stays): B is unhooked, dpkg --verify
#      clean; headers A installed again: DKMS builds both modules for A
#      without a "ZWM" line and --check (the tool from the .deb, run from a
#      scratch copy) says zwm_test.ko would change: exit 1, "would zero 2 of N";
#   7. the tool purged: its conffile gone, no diversion left.
#
# Usage: scripts/integration/dkms-abi.sh [--deb FILE] [--keep]
#   --deb FILE  the tool's .deb to test (default: built here, as
#               scripts/integration-test.sh builds it, in the same
#               target/pkg-build and target/pkg-deb: dpkg-buildpackage -b
#               with the pkg.zero-weak-mcount.upstream-cargo profile; so do
#               not run both at once)
#   --keep      keep the root (printed at the end)
# Needs root and the network; the .debs are cached under
# ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/dkms-abi.
set -euo pipefail
# One compound command, read whole before it runs: editing this file during
# a run does not change the run.
{
PROG=dkms-abi
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib.sh
. "$REPO/scripts/lib.sh"

deb=""
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--deb) [ $# -ge 2 ] || die "--deb needs a FILE"; deb=$(readlink -f "$2"); shift 2 ;;
	--keep) keep=1; shift ;;
	*) arg_error "$1" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, chroot, mounts)"
missing_packages "mmdebstrap mmdebstrap" "/usr/share/keyrings/debian-archive-keyring.gpg debian-archive-keyring" \
	"unshare util-linux" "dpkg-buildpackage dpkg-dev" "dh debhelper" "fakeroot fakeroot" "pod2man perl" "cpio cpio"
install_packages "${MISSING[@]}"

start=$SECONDS
n_ok=0
ok() { n_ok=$((n_ok + 1)); log "ok $n_ok - $*"; }
fail() { log "FAIL: $*"; exit 1; }
cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/dkms-abi
mkdir -p "$cache/archives"
work=$(mktemp -d "${TMPDIR:-/tmp}/dkms-abi.XXXXXX")
R=$work/root
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ "$keep" = 1 ]; then log "kept: $work"; else rm -rf --one-file-system "$work"; fi
}
trap cleanup EXIT

# --- the tool's .deb ------------------------------------------------------------
if [ -z "$deb" ]; then
	version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$REPO/Cargo.toml" | head -n 1)
	# The same paths as scripts/integration-test.sh, so that each reuses
	# what the other compiled (cargo's fingerprints and the C flags hold
	# the source path); so never both at once.
	pkgdir=$REPO/target/pkg-build
	src=$pkgdir/zero-weak-mcount-$version
	rm -rf "$src" "$pkgdir"/zero-weak-mcount[_-]*
	mkdir -p "$src"
	(cd "$REPO" && git ls-files -z -co --exclude-standard | cpio -0 -pdm --quiet "$src") || die "copying the tree failed"
	t=$SECONDS
	(cd "$src" && CARGO_TARGET_DIR=$REPO/target/pkg-deb DEB_BUILD_OPTIONS=nocheck \
		dpkg-buildpackage -us -uc -b --build-profiles=pkg.zero-weak-mcount.upstream-cargo) >"$pkgdir/deb.log" 2>&1 ||
		{ tail -n 30 "$pkgdir/deb.log" >&2; die "dpkg-buildpackage failed (log: $pkgdir/deb.log)"; }
	deb=$(find "$pkgdir" -maxdepth 1 -name 'zero-weak-mcount_*.deb' -print -quit)
	[ -n "$deb" ] || die "dpkg-buildpackage made no .deb"
	log "built $(basename "$deb") in $((SECONDS - t)) s"
fi
[ -f "$deb" ] || die "no such .deb: $deb"

# --- the root ---------------------------------------------------------------------
t=$SECONDS
mmdebstrap --variant=apt --include=dkms,ca-certificates,xz-utils,binutils --skip=essential/unlink \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
	--setup-hook="sync-in $cache/archives /var/cache/apt/archives" \
	--customize-hook="sync-out /var/cache/apt/archives $cache/archives" \
	trixie "$R" "deb http://deb.debian.org/debian trixie main" \
	"deb http://deb.debian.org/debian trixie-backports main" >"$work/mmdebstrap.log" 2>&1 ||
	{ tail -n 30 "$work/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
cp /etc/resolv.conf "$R/etc/resolv.conf"
log "trixie root in $((SECONDS - t)) s"

# in_root CMD: run the shell command line CMD in the root, with /dev, /proc
# and the .deb cache mounted in a private mount namespace.
in_root() {
	unshare --mount --propagation private bash -c '
		set -e
		R=$1 cache=$2; shift 2
		mount --bind /dev "$R/dev"
		mount --bind /dev/pts "$R/dev/pts"
		mount --bind /proc "$R/proc"
		mount --bind "$cache" "$R/var/cache/apt/archives"
		exec env -i HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			chroot "$R" /bin/sh -c "$*"' in_root "$R" "$cache/archives" "$@"
}
# step NAME CMD: in_root CMD, its output in $work/NAME.log; fails loudly.
step() {
	local name=$1 t=$SECONDS
	shift
	in_root "$@" >"$work/$name.log" 2>&1 || { tail -n 40 "$work/$name.log" >&2; fail "$name failed (log: $work/$name.log)"; }
	log "$name: $((SECONDS - t)) s"
}
APT='apt-get -y -q -o Dpkg::Use-Pty=0 --no-install-recommends'
divlist() { in_root "dpkg-divert --list" | { grep 'by zero-weak-mcount$' || true; }; }

step apt-update "apt-get update -q"
# Not under test, and minutes of compression each: the kernel image's
# initramfs. update-initramfs is found through PATH, /usr/local/sbin first.
in_root "ln -s /bin/true /usr/local/sbin/update-initramfs"
# A: trixie's linux-headers-amd64; B: trixie-backports' (the newest 7.x).
abi_of() { # abi_of RELEASE: the ABI package linux-headers-amd64 of RELEASE depends on
	in_root "apt-cache show linux-headers-amd64/$1" 2>/dev/null |
		sed -n 's/^Depends: .*linux-headers-\([0-9][^ ,]*\)-amd64.*/\1/p' | head -n 1
}
A=$(abi_of trixie)
B=$(abi_of trixie-backports)
[ -n "$A" ] && [ -n "$B" ] || die "cannot tell the ABIs (trixie: '$A', trixie-backports: '$B')"
[ "${B%%.*}" -ge 7 ] || die "trixie-backports' headers are $B, not 7.x"
KA=$A-amd64 KB=$B-amd64
log "A: linux-headers-$KA (linux-kbuild-$A); B: linux-headers-$KB (linux-kbuild-$B)"

# --- 0. the tool's package --------------------------------------------------------------
cp "$deb" "$R/tmp/"
step install-tool "$APT install /tmp/$(basename "$deb")"
in_root "dpkg-query -W -f '\${Conffiles}' zero-weak-mcount" >"$work/conffiles" 2>&1
for d in header_postinst.d postinst.d; do
	grep -q "/etc/kernel/$d/50-zero-weak-mcount " "$work/conffiles" ||
		fail "the .deb has no conffile /etc/kernel/$d/50-zero-weak-mcount: $(cat "$work/conffiles")"
	in_root "run-parts --test /etc/kernel/$d" >"$work/run-parts" 2>&1
	[ "$(head -n 2 "$work/run-parts")" = "$(printf '%s\n' "/etc/kernel/$d/50-zero-weak-mcount" "/etc/kernel/$d/dkms")" ] ||
		fail "run-parts order in /etc/kernel/$d is not ours, then dkms: $(cat "$work/run-parts")"
done
in_root "install-kbuild-hook --status" >"$work/status0" 2>&1 || fail "--status with no headers: $(cat "$work/status0")"
ok "the .deb installs; its hooks in /etc/kernel/{header_,}postinst.d are conffiles and run before dkms's; $(in_root 'install-kbuild-hook --version'); --status: $(cat "$work/status0")"

# --- 1. the DKMS source of zwm_test ----------------------------------------------------
mkdir -p "$R/usr/src/zwm-test-1.0"
cp "$REPO"/testdata/zwm_test/Kbuild "$REPO"/testdata/zwm_test/*.[ch] "$R/usr/src/zwm-test-1.0/"
cat >"$R/usr/src/zwm-test-1.0/dkms.conf" <<'EOF'
PACKAGE_NAME="zwm-test"
PACKAGE_VERSION="1.0"
BUILT_MODULE_NAME[0]="zwm_test"
DEST_MODULE_LOCATION[0]="/updates/dkms"
AUTOINSTALL="yes"
EOF
step dkms-add "dkms add zwm-test/1.0"

# The tool as the .deb ships it, kept outside the package for the control.
mkdir -p "$R/opt/zwm"
dpkg-deb -x "$deb" "$R/opt/zwm"
CHECK=/opt/zwm/usr/bin/zero-weak-mcount
# check_module M KVER WANT: --check on the installed module M.ko* of KVER
# (decompressed first), exit status WANT; its output in $work/check-M-KVER.
# DKMS signs the modules: --signed=strip makes --check say what it would
# zero rather than refuse the signed module (under --check nothing is
# written).
check_module() {
	local m=$1 k=$2 want=$3 f out=$work/check-$1-$2 rc=0
	f=$(in_root "find /lib/modules/$k/updates -name '$m.ko*' -type f" | head -n 1)
	[ -n "$f" ] || fail "no installed $m.ko* for $k"
	case "$f" in
	*.xz) in_root "xz -dc $f >/tmp/$m.ko" ;;
	*.zst) in_root "zstd -qdc $f >/tmp/$m.ko" ;;
	*) in_root "cp $f /tmp/$m.ko" ;;
	esac
	in_root "$CHECK --check -v --signed=strip --kconfig /lib/modules/$k/build/.config /tmp/$m.ko" >"$out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || { sed 's/^/  | /' "$out" >&2; fail "--check on $f (of $k) exited $rc, not $want"; }
	printf '%s\n' "$f"
}
# zwm_lines M KVER: the "ZWM [M]" lines of DKMS's make.log of M for KVER.
zwm_lines() {
	local l
	l=$(in_root "ls /var/lib/dkms/$1/*/$2/x86_64/log/make.log" 2>/dev/null | head -n 1)
	[ -n "$l" ] || fail "no DKMS make.log of $1 for $2"
	in_root "grep -c 'ZWM \\[M\\]' $l" || true
}
hooked() { # hooked ABI KVER: the kbuild of ABI is diverted and hooked, by KVER
	grep -q "^diversion of /usr/lib/linux-kbuild-$1/scripts/Makefile.modfinal to .* by zero-weak-mcount$" <<<"$(divlist)" ||
		fail "no diversion of linux-kbuild-$1's Makefile.modfinal: $(divlist)"
	in_root "install-kbuild-hook --status --kver $2" >"$work/status-$2" 2>&1 || fail "--status --kver $2: $(cat "$work/status-$2")"
	in_root "dpkg --verify linux-kbuild-$1" >"$work/verify-$1" 2>&1 && [ ! -s "$work/verify-$1" ] ||
		fail "dpkg --verify linux-kbuild-$1: $(cat "$work/verify-$1")"
}

# --- 2. headers A -------------------------------------------------------------------------
step headers-A "$APT install linux-headers-$KA"
grep -n "zero-weak-mcount: hooked the Kbuild of $KA\|zwm-test\|^dkms: \|Autoinstall" "$work/headers-A.log" >"$work/headers-A.lines" || true
h=$(grep -n "zero-weak-mcount: hooked the Kbuild of $KA" "$work/headers-A.log" | head -n 1 | cut -d: -f1)
d=$(grep -n "zwm-test" "$work/headers-A.log" | head -n 1 | cut -d: -f1)
[ -n "$h" ] || { sed 's/^/  | /' "$work/headers-A.lines" >&2; fail "the headers' postinst did not run our hook for $KA"; }
[ -n "$d" ] && [ "$h" -lt "$d" ] || { sed 's/^/  | /' "$work/headers-A.lines" >&2; fail "DKMS built zwm-test for $KA before (or without) our hook"; }
hooked "$A" "$KA"
n=$(zwm_lines zwm-test "$KA")
[ "$n" -ge 1 ] || fail "DKMS's autoinstall of zwm-test for $KA has no ZWM [M] line"
f=$(check_module zwm_test "$KA" 0)
ok "headers A ($KA): hooked by our /etc/kernel hook (log line $h) before DKMS's autoinstall (line $d); linux-kbuild-$A diverted, dpkg --verify clean; zwm-test built with $n ZWM [M] line; --check on $f: exit 0, $(tail -n 1 "$work/check-zwm_test-$KA")"

# --- 3. a real DKMS package -------------------------------------------------------------
step acpi-call "$APT install acpi-call-dkms"
n=$(zwm_lines acpi-call "$KA")
[ "$n" -ge 1 ] || fail "acpi-call's DKMS build for $KA has no ZWM [M] line"
f=$(check_module acpi_call "$KA" 0)
ok "acpi-call-dkms ($(in_root "dpkg-query -W -f '\${Version}' acpi-call-dkms")) for A: $n ZWM [M] line; --check on $f: exit 0, $(tail -n 1 "$work/check-acpi_call-$KA")"

# --- 4. headers B -------------------------------------------------------------------------
step headers-B "$APT install -t trixie-backports linux-headers-$KB"
grep -q "zero-weak-mcount: hooked the Kbuild of $KB" "$work/headers-B.log" || fail "the headers' postinst did not run our hook for $KB"
hooked "$B" "$KB"
for m in zwm-test acpi-call; do
	n=$(zwm_lines $m "$KB")
	[ "$n" -ge 1 ] || fail "DKMS's autoinstall of $m for $KB has no ZWM [M] line"
done
f=$(check_module zwm_test "$KB" 0)
check_module acpi_call "$KB" 0 >/dev/null
ok "headers B ($KB): hooked; DKMS's autoinstall built zwm-test and acpi-call with ZWM [M] lines; --check on $f: exit 0, $(tail -n 1 "$work/check-zwm_test-$KB")"
in_root "install-kbuild-hook --status" >"$work/status-AB" 2>&1 || fail "--status: $(cat "$work/status-AB")"
sed 's/^/  | /' "$work/status-AB" >&2

# --- 5. purge A -----------------------------------------------------------------------------
step purge-A "$APT purge linux-headers-$KA linux-headers-$A-common linux-kbuild-$A linux-image-$KA"
! grep -q "linux-kbuild-$A/" <<<"$(divlist)" || fail "a diversion for linux-kbuild-$A is left: $(divlist)"
left=$(in_root "find /usr/lib /usr/src /lib/modules -path '*$A*' \\( -name 'Makefile.zero-weak-mcount' -o -name 'Makefile.modfinal*' -o -name zero-weak-mcount \\)")
[ -z "$left" ] || fail "files of the hook left for A: $left"
[ ! -e "$R/usr/lib/linux-kbuild-$A" ] || fail "/usr/lib/linux-kbuild-$A is left: $(find "$R/usr/lib/linux-kbuild-$A")"
in_root "install-kbuild-hook --status" >"$work/status-B" 2>&1 || fail "--status after the purge: $(cat "$work/status-B")"
! grep -q "$A" "$work/status-B" || fail "--status still names A: $(cat "$work/status-B")"
hooked "$B" "$KB"
warn=$(grep -c "linux-kbuild-$A.*not empty so not removed" "$work/purge-A.log" || true)
ok "A purged: no diversion, no /usr/lib/linux-kbuild-$A, no hook file for A (dpkg's 'not empty' warnings during the removal: $warn; the trigger's sweep removed the rest); B still hooked; diversions now: $(divlist | wc -l)"

# --- 6. negative control: the tool removed ------------------------------------------------
step remove-tool "$APT remove zero-weak-mcount"
[ -z "$(divlist)" ] || fail "diversions left after removing the tool: $(divlist)"
in_root "dpkg --verify linux-kbuild-$B" >"$work/verify-B2" 2>&1 && [ ! -s "$work/verify-B2" ] || fail "dpkg --verify linux-kbuild-$B: $(cat "$work/verify-B2")"
! in_root "grep -q zero-weak-mcount /usr/lib/linux-kbuild-$B/scripts/Makefile.modfinal" || fail "B's Makefile.modfinal still has the hook"
[ ! -e "$R/usr/lib/linux-kbuild-$B/scripts/Makefile.zero-weak-mcount" ] || fail "B's snippet copy is left"
[ -f "$R/etc/kernel/header_postinst.d/50-zero-weak-mcount" ] || fail "the conffile went with remove (it should stay until purge)"
[ ! -e "$R/usr/sbin/install-kbuild-hook" ] || fail "remove left /usr/sbin/install-kbuild-hook"
ok "tool removed: B unhooked (no diversion, dpkg --verify clean, no snippet); the conffile stays"
step headers-A-again "$APT install linux-headers-$KA"
! grep -q "zero-weak-mcount" "$work/headers-A-again.log" || fail "the leftover conffile said something: $(grep zero-weak-mcount "$work/headers-A-again.log")"
for m in zwm-test acpi-call; do
	n=$(zwm_lines $m "$KA")
	[ "$n" = 0 ] || fail "control: $m for $KA has $n ZWM [M] lines without the tool"
done
f=$(check_module zwm_test "$KA" 1)
grep -Eq "would zero 2 of [0-9]+ entries" "$work/check-zwm_test-$KA" || { sed 's/^/  | /' "$work/check-zwm_test-$KA" >&2; fail "control: --check does not say it would zero 2 entries"; }
ok "CONTROL: headers A again without the tool: DKMS built zwm-test and acpi-call with no ZWM line; --check on $f: exit 1, $(tail -n 1 "$work/check-zwm_test-$KA")"

# --- 7. purge ---------------------------------------------------------------------------------
step purge-tool "$APT purge zero-weak-mcount"
[ ! -e "$R/etc/kernel/header_postinst.d/50-zero-weak-mcount" ] && [ ! -e "$R/etc/kernel/postinst.d/50-zero-weak-mcount" ] ||
	fail "purge left a conffile"
[ -z "$(divlist)" ] || fail "diversions left after purge: $(divlist)"
ok "tool purged: conffile gone, no diversion"

log "$n_ok checks in $((SECONDS - start)) s"
echo "dkms-abi: PASS ($n_ok checks, A=$KA, B=$KB)"
exit 0
}
