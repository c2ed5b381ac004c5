#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Build the zwm_test kernel module (testdata/zwm_test/) against Debian
# bookworm's linux-headers-KVER and copy zwm_test.ko to an output folder.
#
# Usage: scripts/build-testdata.sh [--kver KVER] [--out DIR]
#
#   --kver KVER  kernel release to build for, e.g. 6.1.0-57-amd64.
#                Default: the newest linux-headers-6.1.*-amd64 that apt offers
#                (the dependency of the linux-headers-amd64 metapackage, after
#                `apt-get update`).
#   --out DIR    where to put zwm_test.ko (created if missing).
#                Default: testdata/ of this checkout, where zwm_test.kver
#                (the KVER built for) is written too.
#
# Installs linux-headers-KVER, make and gcc-12 with apt-get when missing
# (needs root then). Builds in a temporary copy of testdata/zwm_test, so no
# build products land in the checkout. Safe to run again: same KVER, same
# headers and compiler give a byte-identical zwm_test.ko.
set -euo pipefail

PROG=build-testdata
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
. "$REPO/scripts/lib.sh"
src="$REPO/testdata/zwm_test"
testdata="$REPO/testdata"

kver=""
out="$testdata"
while [ $# -gt 0 ]; do
	case "$1" in
	--kver|--out) [ $# -ge 2 ] || die "$1 needs a value"; printf -v "${1#--}" %s "$2"; shift 2 ;;
	--kver=*|--out=*) o=${1#--}; printf -v "${o%%=*}" %s "${o#*=}"; shift ;;
	*) arg_error "$1" ;;
	esac
done
[ -n "$out" ] || die "--out must not be empty"
[ -f "$src/Kbuild" ] || die "module sources not found: $src/Kbuild"

export DEBIAN_FRONTEND=noninteractive
# The default KVER and the installable ones come from apt's lists, so they
# are brought up to date first; installing uses lib.sh's install_packages.
apt_update() {
	[ "$(id -u)" = 0 ] || die "need root to run apt-get update"
	log "apt-get update"
	apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 || log "warning: apt-get update failed; using the package lists as they are"
}

# Prints the candidate version of package $1, or nothing if apt has none.
apt_candidate() { apt-cache policy "$1" 2>/dev/null | sed -n '/Candidate: *(none)/d; s/^ *Candidate: *//p'; }

# --- KVER -----------------------------------------------------------------
if [ -z "$kver" ]; then
	apt_update
	[ -n "$(apt_candidate linux-headers-amd64)" ] ||
		die "apt offers no linux-headers-amd64; is a Debian bookworm (+ bookworm-security) source configured?"
	dep=$(apt-cache show --no-all-versions linux-headers-amd64 |
		sed -n 's/^Depends: *//p' | tr ',' '\n' |
		sed -n 's/^ *linux-headers-\([^ ]*\).*/\1/p' | head -n1)
	[ -n "$dep" ] || die "cannot read the dependency of linux-headers-amd64"
	kver=$dep
	log "default KVER (from linux-headers-amd64 $(apt_candidate linux-headers-amd64)): $kver"
	case "$kver" in
	6.1.*-amd64) ;;
	*) die "linux-headers-amd64 points at $kver, not a 6.1.*-amd64 (bookworm) kernel; pass --kver" ;;
	esac
fi
[[ "$kver" =~ ^[0-9][A-Za-z0-9.+_-]*$ ]] || die "invalid --kver: '$kver'"
case "$kver" in
6.1.*-amd64) ;;
*) log "warning: KVER $kver is not a 6.1.*-amd64 kernel; trying anyway" ;;
esac

# --- toolchain and headers -------------------------------------------------
kdir="/usr/src/linux-headers-$kver"
pkg="linux-headers-$kver"
if [ ! -f "$kdir/Makefile" ] && [ -z "$(apt_candidate "$pkg")" ]; then
	apt_update
	if [ -z "$(apt_candidate "$pkg")" ]; then
		avail=$(apt-cache pkgnames linux-headers-6.1. 2>/dev/null |
			grep -E '^linux-headers-6\.1\.[0-9]+-[0-9]+-amd64$' | sort -V |
			sed 's/^linux-headers-//' | tr '\n' ' ' || true)
		die "$pkg is not installable from the configured apt sources (bookworm, bookworm-security). Installable 6.1 amd64 KVERs: ${avail:-none}"
	fi
fi
missing_packages "make make" "gcc-12 gcc-12" "$kdir/Makefile $pkg"
install_packages "${MISSING[@]}"
[ -f "$kdir/Makefile" ] || die "$kdir/Makefile missing after installing linux-headers-$kver"

# --- build in a scratch copy ----------------------------------------------
scratch=$(mktemp -d "${TMPDIR:-/tmp}/zwm_test-build.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
zwm_test_src "$scratch"
log "building zwm_test.ko for $kver in $scratch"
# The prefix map keeps the scratch path out of the debug info, so rebuilds
# are byte-identical.
if ! make -C "$kdir" M="$scratch" -j"$(nproc)" \
	KCFLAGS="-ffile-prefix-map=$scratch/=testdata/zwm_test/" modules >"$scratch/build.log" 2>&1; then
	cat "$scratch/build.log" >&2
	die "module build failed (make -C $kdir M=<copy of testdata/zwm_test>)"
fi
ko="$scratch/zwm_test.ko"
[ -f "$ko" ] || { cat "$scratch/build.log" >&2; die "build produced no zwm_test.ko"; }
readelf -S "$ko" 2>/dev/null | grep ' __mcount_loc ' >/dev/null ||
	die "built zwm_test.ko has no __mcount_loc section (headers without CONFIG_FTRACE_MCOUNT_RECORD?)"

# --- install the result ------------------------------------------------------
mkdir -p -- "$out"
cp -- "$ko" "$out/.zwm_test.ko.tmp.$$"
mv -f -- "$out/.zwm_test.ko.tmp.$$" "$out/zwm_test.ko"
if [ "$(cd "$out" && pwd -P)" = "$(cd "$testdata" && pwd -P)" ]; then
	printf '%s\n' "$kver" >"$out/.zwm_test.kver.tmp.$$"
	mv -f -- "$out/.zwm_test.kver.tmp.$$" "$out/zwm_test.kver"
	log "wrote $out/zwm_test.ko and $out/zwm_test.kver ($kver)"
else
	log "wrote $out/zwm_test.ko ($kver)"
fi
