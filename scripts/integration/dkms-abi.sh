#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Two kernel ABIs, real DKMS packages and the tool's .deb in a clean trixie root (mmdebstrap,
# trixie and trixie-backports): since trixie each ABI has its own linux-kbuild-ABI, so each
# headers package must be hooked as it comes and unhooked as it goes. Steps 0-7 and their
# controls are docs/kbuild.md's table ("Every ABI hooked, every removal clean").
#
# Usage: scripts/integration/dkms-abi.sh [--deb FILE] [--keep]
#   --deb FILE  the tool's .deb to test (default: built as scripts/integration-test.sh builds
#               it, in the same target/pkg-build and target/pkg-deb: never run both at once)
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
	"unshare util-linux" "dpkg-buildpackage dpkg-dev" "dh debhelper" "fakeroot fakeroot" "pod2man perl" "cpio cpio" "jq jq"
install_packages "${MISSING[@]}"

start=$SECONDS
cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/dkms-abi
APT_CACHE=$cache/archives
work=$(mktemp -d "${TMPDIR:-/tmp}/dkms-abi.XXXXXX")
R=$work/root
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ "$keep" = 1 ]; then log "kept: $work"; else rm -rf --one-file-system "$work"; fi
}
trap cleanup EXIT

# --- the tool's .deb ------------------------------------------------------------
if [ -z "$deb" ]; then
	# The same paths as scripts/integration-test.sh, so that each reuses
	# what the other compiled; so never both at once.
	tool_tree
	build_tool_deb
	deb=$DEB
fi
[ -f "$deb" ] || die "no such .deb: $deb"

# --- the root ---------------------------------------------------------------------
t=$SECONDS
debian_root "$APT_CACHE" --variant=apt --include=dkms,ca-certificates,xz-utils,binutils \
	trixie "$R" "deb http://deb.debian.org/debian trixie main" \
	"deb http://deb.debian.org/debian trixie-backports main" >"$work/mmdebstrap.log" 2>&1 ||
	{ tail -n 30 "$work/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
cp /etc/resolv.conf "$R/etc/resolv.conf"
log "trixie root in $((SECONDS - t)) s"

# rstep NAME CMD: the shell command line CMD in the root, its output in $work/NAME.log
rstep() { step "$1" "$work/$1.log" in_root "$R" "$2"; }
APT='apt-get -y -q -o Dpkg::Use-Pty=0 --no-install-recommends'
divlist() { in_root "$R" "dpkg-divert --list" | { grep 'by zero-weak-mcount$' || true; }; }

rstep apt-update "apt-get update -q"
# Not under test, and minutes of compression each: the kernel image's
# initramfs. update-initramfs is found through PATH, /usr/local/sbin first.
in_root "$R" "ln -s /bin/true /usr/local/sbin/update-initramfs"
# A: trixie's linux-headers-amd64; B: trixie-backports' (the newest 7.x).
abi_of() { # abi_of RELEASE: the ABI package linux-headers-amd64 of RELEASE depends on
	in_root "$R" "apt-cache show linux-headers-amd64/$1" 2>/dev/null |
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
rstep install-tool "$APT install /tmp/$(basename "$deb")"
in_root "$R" "dpkg-query -W -f '\${Conffiles}' zero-weak-mcount" >"$work/conffiles" 2>&1
for d in header_postinst.d postinst.d; do
	grep -q "/etc/kernel/$d/50-zero-weak-mcount " "$work/conffiles" ||
		fail "the .deb has no conffile /etc/kernel/$d/50-zero-weak-mcount: $(cat "$work/conffiles")"
	in_root "$R" "run-parts --test /etc/kernel/$d" >"$work/run-parts" 2>&1
	[ "$(head -n 2 "$work/run-parts")" = "$(printf '%s\n' "/etc/kernel/$d/50-zero-weak-mcount" "/etc/kernel/$d/dkms")" ] ||
		fail "run-parts order in /etc/kernel/$d is not ours, then dkms: $(cat "$work/run-parts")"
done
in_root "$R" "install-kbuild-hook --status" >"$work/status0" 2>&1 || fail "--status with no headers: $(cat "$work/status0")"
ok "the .deb installs; its hooks in /etc/kernel/{header_,}postinst.d are conffiles and run before dkms's; $(in_root "$R" "install-kbuild-hook --version"); --status: $(cat "$work/status0")"

# --- 1. the DKMS source of zwm_test ----------------------------------------------------
zwm_test_src "$R/usr/src/zwm-test-1.0"
cat >"$R/usr/src/zwm-test-1.0/dkms.conf" <<'EOF'
PACKAGE_NAME="zwm-test"
PACKAGE_VERSION="1.0"
BUILT_MODULE_NAME[0]="zwm_test"
DEST_MODULE_LOCATION[0]="/updates/dkms"
AUTOINSTALL="yes"
EOF
rstep dkms-add "dkms add zwm-test/1.0"

# The tool as the .deb ships it, kept outside the package for the control.
mkdir -p "$R/opt/zwm"
dpkg-deb -x "$deb" "$R/opt/zwm"
CHECK=/opt/zwm/usr/bin/zero-weak-mcount
# check_module M KVER WANT: --check on the installed module M.ko* of KVER
# (decompressed first), exit status WANT; its JSON report in
# $work/check-M-KVER (report_line says it in one line). DKMS signs the
# modules: --signed=strip makes --check say what it would zero rather than
# refuse the signed module (under --check nothing is written).
check_module() {
	local m=$1 k=$2 want=$3 f out=$work/check-$1-$2 rc=0
	f=$(in_root "$R" "find /lib/modules/$k/updates -name '$m.ko*' -type f" | head -n 1)
	[ -n "$f" ] || fail "no installed $m.ko* for $k"
	case "$f" in
	*.xz) in_root "$R" "xz -dc $f >/tmp/$m.ko" ;;
	*.zst) in_root "$R" "zstd -qdc $f >/tmp/$m.ko" ;;
	*) in_root "$R" "cp $f /tmp/$m.ko" ;;
	esac
	in_root "$R" "$CHECK --check --format=json --signed=strip --kconfig /lib/modules/$k/build/.config /tmp/$m.ko" \
		>"$out" 2>"$out.err" || rc=$?
	[ "$rc" = "$want" ] || { show "$out"; show "$out.err"; fail "--check on $f (of $k) exited $rc, not $want"; }
	printf '%s\n' "$f"
}
# zwm_lines M KVER: the "ZWM [M]" lines of DKMS's make.log of M for KVER.
zwm_lines() {
	local l
	l=$(in_root "$R" "ls /var/lib/dkms/$1/*/$2/x86_64/log/make.log" 2>/dev/null | head -n 1)
	[ -n "$l" ] || fail "no DKMS make.log of $1 for $2"
	in_root "$R" "grep -c 'ZWM \\[M\\]' $l" || true
}
hooked() { # hooked ABI KVER: the kbuild of ABI is diverted and hooked, by KVER
	grep -q "^diversion of /usr/lib/linux-kbuild-$1/scripts/Makefile.modfinal to .* by zero-weak-mcount$" <<<"$(divlist)" ||
		fail "no diversion of linux-kbuild-$1's Makefile.modfinal: $(divlist)"
	in_root "$R" "install-kbuild-hook --status --kver $2" >"$work/status-$2" 2>&1 || fail "--status --kver $2: $(cat "$work/status-$2")"
	in_root "$R" "dpkg --verify linux-kbuild-$1" >"$work/verify-$1" 2>&1 && [ ! -s "$work/verify-$1" ] ||
		fail "dpkg --verify linux-kbuild-$1: $(cat "$work/verify-$1")"
}

# --- 2. headers A -------------------------------------------------------------------------
rstep headers-A "$APT install linux-headers-$KA"
grep -n "zero-weak-mcount: hooked the Kbuild of $KA\|zwm-test\|^dkms: \|Autoinstall" "$work/headers-A.log" >"$work/headers-A.lines" || true
h=$(grep -n "zero-weak-mcount: hooked the Kbuild of $KA" "$work/headers-A.log" | head -n 1 | cut -d: -f1)
d=$(grep -n "zwm-test" "$work/headers-A.log" | head -n 1 | cut -d: -f1)
[ -n "$h" ] && [ "$(grep -c "hooked the Kbuild of $KA" "$work/headers-A.log")" = 1 ] || { show "$work/headers-A.lines"; fail "the headers' postinst did not run our hook for $KA, or it said so twice"; }
[ -n "$d" ] && [ "$h" -lt "$d" ] || { show "$work/headers-A.lines"; fail "DKMS built zwm-test for $KA before (or without) our hook"; }
hooked "$A" "$KA"
n=$(zwm_lines zwm-test "$KA")
[ "$n" -ge 1 ] || fail "DKMS's autoinstall of zwm-test for $KA has no ZWM [M] line"
f=$(check_module zwm_test "$KA" 0)
ok "headers A ($KA): hooked by our /etc/kernel hook (log line $h) before DKMS's autoinstall (line $d); linux-kbuild-$A diverted, dpkg --verify clean; zwm-test built with $n ZWM [M] line; --check on $f: exit 0, $(report_line "$work/check-zwm_test-$KA")"

# --- 3. a real DKMS package -------------------------------------------------------------
rstep acpi-call "$APT install acpi-call-dkms"
n=$(zwm_lines acpi-call "$KA")
[ "$n" -ge 1 ] || fail "acpi-call's DKMS build for $KA has no ZWM [M] line"
f=$(check_module acpi_call "$KA" 0)
ok "acpi-call-dkms ($(in_root "$R" "dpkg-query -W -f '\${Version}' acpi-call-dkms")) for A: $n ZWM [M] line; --check on $f: exit 0, $(report_line "$work/check-acpi_call-$KA")"

# --- 4. headers B -------------------------------------------------------------------------
rstep headers-B "$APT install -t trixie-backports linux-headers-$KB"
grep -q "zero-weak-mcount: hooked the Kbuild of $KB" "$work/headers-B.log" || fail "the headers' postinst did not run our hook for $KB"
hooked "$B" "$KB"
for m in zwm-test acpi-call; do
	n=$(zwm_lines $m "$KB")
	[ "$n" -ge 1 ] || fail "DKMS's autoinstall of $m for $KB has no ZWM [M] line"
done
f=$(check_module zwm_test "$KB" 0)
check_module acpi_call "$KB" 0 >/dev/null
ok "headers B ($KB): hooked; DKMS's autoinstall built zwm-test and acpi-call with ZWM [M] lines; --check on $f: exit 0, $(report_line "$work/check-zwm_test-$KB")"
in_root "$R" "install-kbuild-hook --status" >"$work/status-AB" 2>&1 || fail "--status: $(cat "$work/status-AB")"
show "$work/status-AB"

# --- 5. A removed four ways -------------------------------------------------------------
# 1, 2: apt-get purge, remove: the .deb's apt hook (--apt-hook) unhooks first, dpkg warns of
# no "not empty". 3: dpkg -P, no apt: dpkg warns, the trigger's sweep cleans up. 4, control:
# apt-get purge, the apt hook moved aside: dpkg warns. None leaves a file of the hook.
APTHOOK=/etc/apt/apt.conf.d/50zero-weak-mcount n=0
for how in "$APT purge" "$APT remove" "dpkg -P" "mv $APTHOOK /tmp/; $APT purge"; do
	n=$((n + 1)) && [ $n = 1 ] || { rstep "headers-A-$n" "$APT install linux-headers-$KA"; hooked "$A" "$KA"; }
	rstep "rm-A-$n" "$how linux-headers-$KA linux-headers-$A-common linux-kbuild-$A linux-image-$KA"
	! grep -q "linux-kbuild-$A/" <<<"$(divlist)" || fail "$how: a diversion for linux-kbuild-$A is left: $(divlist)"
	left=$(in_root "$R" "find /usr/lib /usr/src /lib/modules -path '*$A*' \\( -name 'Makefile.zero-weak-mcount' -o -name 'Makefile.modfinal*' -o -name zero-weak-mcount \\)")
	[ -z "$left" ] && [ ! -e "$R/usr/lib/linux-kbuild-$A" ] || fail "$how: left for A: $left $(find "$R/usr/lib/linux-kbuild-$A")"
	hooked "$B" "$KB"
	warn=$(grep -c "linux-kbuild-$A.*not empty so not removed" "$work/rm-A-$n.log" || true)
	said=$(grep -c "^install-kbuild-hook: .*linux-kbuild-$A/.*hook removed" "$work/rm-A-$n.log" || true)
	case "$n:$warn:$said" in
	[12]:0:1 | 3:*:0 | 4:[1-9]*:0) ;;
	*) fail "$how: $warn 'not empty' warnings, $said lines of the apt hook: $(grep -n 'not empty\|install-kbuild-hook' "$work/rm-A-$n.log")" ;;
	esac
	ok "${how/mv*;/CONTROL, the apt hook moved aside:}: nothing of the hook left for A, B hooked; 'not empty' warnings: $warn; apt hook lines: $said"
done
in_root "$R" "mv /tmp/50zero-weak-mcount $APTHOOK"

# --- 6. negative control: the tool removed ------------------------------------------------
rstep remove-tool "$APT remove zero-weak-mcount"
[ -z "$(divlist)" ] || fail "diversions left after removing the tool: $(divlist)"
in_root "$R" "dpkg --verify linux-kbuild-$B" >"$work/verify-B2" 2>&1 && [ ! -s "$work/verify-B2" ] || fail "dpkg --verify linux-kbuild-$B: $(cat "$work/verify-B2")"
! in_root "$R" "grep -q zero-weak-mcount /usr/lib/linux-kbuild-$B/scripts/Makefile.modfinal" || fail "B's Makefile.modfinal still has the hook"
[ ! -e "$R/usr/lib/linux-kbuild-$B/scripts/Makefile.zero-weak-mcount" ] || fail "B's snippet copy is left"
[ -f "$R/etc/kernel/header_postinst.d/50-zero-weak-mcount" ] || fail "the conffile went with remove (it should stay until purge)"
[ ! -e "$R/usr/sbin/install-kbuild-hook" ] && [ ! -L "$R$APTHOOK" ] || fail "remove left /usr/sbin/install-kbuild-hook or $APTHOOK"
ok "tool removed: B unhooked (no diversion, dpkg --verify clean, no snippet), no apt hook; the conffile stays"
rstep headers-A-again "$APT install linux-headers-$KA"
! grep -q "zero-weak-mcount" "$work/headers-A-again.log" || fail "the leftover conffile said something: $(grep zero-weak-mcount "$work/headers-A-again.log")"
for m in zwm-test acpi-call; do
	n=$(zwm_lines $m "$KA")
	[ "$n" = 0 ] || fail "control: $m for $KA has $n ZWM [M] lines without the tool"
done
f=$(check_module zwm_test "$KA" 1)
[ "$(jq -r '"\(.status) \(.weak)"' "$work/check-zwm_test-$KA")" = "would_change 2" ] ||
	{ show "$work/check-zwm_test-$KA"; fail "control: --check's report does not say it would change 2 weak entries"; }
ok "CONTROL: headers A again without the tool: DKMS built zwm-test and acpi-call with no ZWM line; --check on $f: exit 1, $(report_line "$work/check-zwm_test-$KA")"

# --- 7. purge ---------------------------------------------------------------------------------
rstep purge-tool "$APT purge zero-weak-mcount"
[ ! -e "$R/etc/kernel/header_postinst.d/50-zero-weak-mcount" ] && [ ! -e "$R/etc/kernel/postinst.d/50-zero-weak-mcount" ] ||
	fail "purge left a conffile"
[ -z "$(divlist)" ] || fail "diversions left after purge: $(divlist)"
ok "tool purged: conffile gone, no diversion"

log "$N_OK checks in $((SECONDS - start)) s"
echo "dkms-abi: PASS ($N_OK checks, A=$KA, B=$KB)"
exit 0
}
