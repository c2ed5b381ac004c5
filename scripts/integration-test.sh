#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# integration-test.sh: the real integration tests of zero-weak-mcount's build
# hooks (Kbuild, DKMS, rpm, deb), against Debian's installed kernel headers.
#
# Usage: scripts/integration-test.sh [--kver KVER] [--tool PATH] [--only LIST]
#                                    [--keep] [--no-install]
#
#   --kver KVER   Debian kernel release whose linux-headers to build against.
#                 Default: testdata/zwm_test.kver (a bookworm 6.1 amd64 kernel).
#   --tool PATH   the zero-weak-mcount binary.  Default: target/release/
#                 zero-weak-mcount, built with `cargo build --release` first.
#   --only LIST   comma-separated subset of: kbuild,kbuild72,dkms,rpm,deb
#                 (default: all; dkms needs kbuild's hooked headers and runs
#                 it first if it is not selected).
#   --keep        keep the scratch folder (printed at the end).
#   --no-install  do not apt-get install missing packages; fail instead.
#
# Installs what it needs with apt-get (make, gcc-12, linux-headers-KVER,
# dkms, rpm, debhelper, ...), runs as root.  Never modifies the host's kernel
# headers: the hook goes into a private copy of them.  DKMS runs with private
# --dkmstree/--sourcetree/--installtree, rpmbuild with a private _topdir.
# kbuild72 also fetches Debian sid's 7.2 kbuild/headers packages through
# scripts/fetch-debian-kernel.sh (private apt state, no host apt change).
# Every missing prerequisite is a failure with its reason, never a skip.
#
# Output: each suite prints "ok N - ..." lines with the evidence and the
# final line is "integration: N passed, M failed".  Exit 0 only if all passed.
set -euo pipefail
# Run from `make check`, the outer make exports MAKEFLAGS and MAKELEVEL; the
# Kbuild runs under test must see what a user's top-level make sees (no
# "make[1]: Entering directory" lines, no inherited -j or -s).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
PROG=integration REPO=$repo
. "$here/lib.sh"
kver=""
tool=""
only="kbuild,kbuild72,dkms,rpm,deb"
keep=0
install=1
while [ $# -gt 0 ]; do
	case "$1" in
	--kver) kver=${2:?--kver needs a value}; shift ;;
	--kver=*) kver=${1#--kver=} ;;
	--tool) tool=${2:?--tool needs a value}; shift ;;
	--tool=*) tool=${1#--tool=} ;;
	--only) only=${2:?--only needs a value}; shift ;;
	--only=*) only=${1#--only=} ;;
	--keep) keep=1 ;;
	--no-install) install=0 ;;
	-h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
	shift
done
for s in ${only//,/ }; do
	case "$s" in kbuild|kbuild72|dkms|rpm|deb) ;; *) die "--only: unknown suite '$s'" ;; esac
done
want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
start=$(date +%s)

[ "$(id -u)" = 0 ] || die "must run as root (apt-get, dkms, headers copies owned by root)"
[ -n "$kver" ] || kver=$(cat "$repo/testdata/zwm_test.kver" 2>/dev/null) || die "no --kver and no testdata/zwm_test.kver"
[[ "$kver" =~ ^[0-9][A-Za-z0-9.+_-]*$ ]] || die "bad KVER '$kver'"

# --- prerequisites ---------------------------------------------------------------
needs=()
need() { needs+=("$1 $2"); } # need CMD-OR-PATH PACKAGE
need make make
need gcc-12 gcc-12
need readelf binutils
need xz xz-utils
need cpio cpio
need file file
need openssl openssl
need modinfo kmod
need "/usr/src/linux-headers-$kver/Makefile" "linux-headers-$kver"
if want dkms; then need dkms dkms; fi
if want rpm; then need rpmbuild rpm; need rpm2cpio rpm2cpio; fi
if want deb; then need dpkg-buildpackage dpkg-dev; need dh debhelper; need fakeroot fakeroot; fi
if want kbuild72; then need flock util-linux; need /usr/share/keyrings/debian-archive-keyring.gpg debian-archive-keyring; fi
missing_packages "${needs[@]}"
if [ ${#MISSING[@]} -gt 0 ] && [ "$install" != 1 ]; then
	die "missing packages: ${MISSING[*]} (rerun without --no-install, or apt-get install them)"
fi
install_packages "${MISSING[@]}"

tool=$(find_tool "$tool") || exit 1
"$tool" --version >/dev/null 2>&1 || die "$tool --version fails"
log "tool: $tool ($("$tool" --version))"

# --- scratch, headers copy ------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/zwm-integration.XXXXXX")
cleanup() {
	local rc=$?
	if [ "$keep" = 1 ] || { [ "$rc" != 0 ] && [ -n "${ZWM_KEEP_ON_FAILURE:-}" ]; }; then
		log "scratch kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
export ZWM_REPO=$repo ZWM_TOOL=$tool ZWM_KVER=$kver ZWM_WORK=$work
log "KVER $kver, scratch $work"
hdr=$(
	suite=setup
	. "$here/integration/lib.sh"
	make_headers_copy "$work/root"
) || die "copying the headers of $kver failed"
export ZWM_HDR=$hdr
log "headers copy: $hdr -> $(readlink -f "$hdr/scripts/Makefile.modfinal")"

# --- suites ------------------------------------------------------------------------
passed=0
failed=0
failed_names=()
declare -A secs=()
run_suite() {
	local s=$1 t0 rc=0
	t0=$(date +%s)
	log "=== $s ==="
	bash "$here/integration/$s.sh" || rc=$?
	secs[$s]=$(($(date +%s) - t0))
	if [ "$rc" = 0 ]; then
		passed=$((passed + 1))
		log "=== $s: PASS (${secs[$s]} s)"
	else
		failed=$((failed + 1))
		failed_names+=("$s")
		log "=== $s: FAIL (exit $rc, ${secs[$s]} s)"
	fi
}
kbuild_ok=0
if want kbuild || want dkms; then
	run_suite kbuild
	[ "${#failed_names[@]}" = 0 ] && kbuild_ok=1
fi
if want kbuild72; then run_suite kbuild72; fi
if want dkms; then
	if [ "$kbuild_ok" = 1 ]; then
		run_suite dkms
	else
		log "=== dkms: FAIL (it needs the hooked headers from the kbuild suite, which failed)"
		failed=$((failed + 1)); failed_names+=(dkms)
	fi
fi
if want rpm; then run_suite rpm; fi
if want deb; then run_suite deb; fi

log "total $(($(date +%s) - start)) s"
[ "$failed" = 0 ] || log "failed: ${failed_names[*]}"
echo "integration: $passed passed, $failed failed"
[ "$failed" = 0 ]
