#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# integration-test.sh: the real integration tests of zero-weak-mcount's build
# hooks (Kbuild, DKMS, rpm, deb), against Debian's installed kernel headers,
# run with the tool as its own packages install it.
#
# Usage: scripts/integration-test.sh [--kver KVER] [--only LIST]
#                                    [--keep] [--no-install]
#
# First the tool's own packages: a copy of the tree (as a tarball would
# hold it: no .git) goes through `dpkg-buildpackage -us -uc -b` and
# `rpmbuild -bb`; the .deb is installed with `dpkg --root` into a scratch
# root and the .rpm with `rpm --root` into another, and `make install
# DESTDIR=` lays out the same files.  Every suite then uses the INSTALLED
# files: the binary, install-kbuild-hook and its snippet, dh_zero_weak_mcount
# with its sequence add-on (deb), brp-zero-weak-mcount and the macros (rpm).
# The package builds happen in target/pkg-build, with cargo's target
# directories in target/pkg-deb and target/pkg-rpm, so that a rerun only
# recompiles what changed.
#
#   --kver KVER   Debian kernel release whose linux-headers to build against.
#                 Default: testdata/zwm_test.kver (a bookworm 6.1 amd64 kernel).
#   --only LIST   comma-separated subset of the suites: kbuild,kbuild72,kbuild612,divert,dkms,rpm,deb
#                 (default: all; dkms needs kbuild's hooked headers and runs
#                 it first if it is not selected).
#   --keep        keep the scratch folder (printed at the end).
#   --no-install  do not apt-get install missing packages; fail instead.
#
# Installs what it needs with apt-get (make, gcc-12, linux-headers-KVER,
# dkms, rpm, debhelper, ...), runs as root.  Never modifies the host's kernel
# headers: the hook goes into a private copy of them.  DKMS runs with private
# --dkmstree/--sourcetree/--installtree, rpmbuild with a private _topdir.
# kbuild72 and kbuild612 also fetch Debian sid's 7.2 and trixie's 6.12
# kbuild/headers packages through scripts/fetch-debian-kernel.sh (private
# apt state, no host apt change).
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
# The suites, in the order they run: scripts/integration/NAME.sh, but
# kbuild* are kbuild.sh RELEASE.
SUITES="kbuild:6.1 kbuild72:7.2 kbuild612:6.12 divert dkms rpm deb"
kver=""
only=all
keep=0
install=1
while [ $# -gt 0 ]; do
	case "$1" in
	--kver) kver=${2:?--kver needs a value}; shift ;;
	--kver=*) kver=${1#--kver=} ;;
	--only) only=${2:?--only needs a value}; shift ;;
	--only=*) only=${1#--only=} ;;
	--keep) keep=1 ;;
	--no-install) install=0 ;;
	*) arg_error "$1" ;;
	esac
	shift
done
names=" "
for s in $SUITES; do names+="${s%%:*} "; done
[ "$only" != all ] || only=$(tr ' ' , <<<"${names:1:-1}")
for s in ${only//,/ }; do
	case "$names" in *" $s "*) ;; *) die "--only: unknown suite '$s'" ;; esac
done
want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
start=$(date +%s)

[ "$(id -u)" = 0 ] || die "must run as root (apt-get, dkms, headers copies owned by root)"
[ -n "$kver" ] || kver=$(cat "$repo/testdata/zwm_test.kver" 2>/dev/null) || die "no --kver and no testdata/zwm_test.kver"
[[ "$kver" =~ ^[0-9][A-Za-z0-9.+_-]*$ ]] || die "bad KVER '$kver'"

# --- prerequisites ---------------------------------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust >= 1.85 (README, Building)"
# CMD-OR-PATH PACKAGE: the suites', then the tool's own packages'
needs=("make make" "gcc-12 gcc-12" "ld binutils" "xz xz-utils" "cpio cpio" "file file" "openssl openssl"
	"modinfo kmod" "/usr/src/linux-headers-$kver/Makefile linux-headers-$kver" "dpkg-buildpackage dpkg-dev"
	"dh debhelper" "fakeroot fakeroot" "pod2man perl" "rpmbuild rpm" "rpm2cpio rpm2cpio" "git git" "man man-db"
	"/usr/lib/python3/dist-packages/elftools python3-pyelftools")
if want dkms; then needs+=("dkms dkms"); fi
if want kbuild72 || want kbuild612; then
	needs+=("flock util-linux" "/usr/share/keyrings/debian-archive-keyring.gpg debian-archive-keyring" "pahole dwarves")
fi
missing_packages "${needs[@]}"
if [ ${#MISSING[@]} -gt 0 ] && [ "$install" != 1 ]; then
	die "missing packages: ${MISSING[*]} (rerun without --no-install, or apt-get install them)"
fi
install_packages "${MISSING[@]}"
need_elftools

# --- scratch --------------------------------------------------------------------------
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

# --- the tool's packages, built and installed ---------------------------------------------
tool_tree
version=$VERSION pkgdir=$PKGDIR src=$SRC
rm -rf "$pkgdir/rpmtop/RPMS" "$pkgdir/rpmtop/SOURCES"
mkdir -p "$pkgdir/rpmtop/SOURCES"
tar -C "$pkgdir" -czf "$pkgdir/rpmtop/SOURCES/zero-weak-mcount-$version.tar.gz" "zero-weak-mcount-$version"
# Bookworm has no Rust 1.85 nor the crates: the build profile takes cargo
# from rustup and the crates from crates.io (debian/rules). The archive
# build is make deb-chroot's; cargo test ran in make test already.
build_tool_deb
deb=$DEB
t0=$(date +%s)
CARGO_TARGET_DIR=$repo/target/pkg-rpm rpmbuild -bb --nodeps --define "_topdir $pkgdir/rpmtop" \
	"$src/zero-weak-mcount.spec" >"$pkgdir/rpm.log" 2>&1 ||
	{ tail -n 30 "$pkgdir/rpm.log" >&2; die "rpmbuild -bb zero-weak-mcount.spec failed (log: $pkgdir/rpm.log)"; }
rpmfile=$(find "$pkgdir/rpmtop/RPMS" -name "zero-weak-mcount-$version-*.rpm" -print -quit)
[ -n "$rpmfile" ] || die "rpmbuild made no zero-weak-mcount-$version-*.rpm"
log "package: rpmbuild -bb: $(basename "$rpmfile") in $(($(date +%s) - t0)) s"

# Installed for real, each into its own scratch root with its own package
# database (the host's is not touched). --force-depends: the scratch root
# has no libc6 package; the binary runs with the host's.
# --force-script-chrootless: the root has no shell, so the maintainer
# scripts run outside it, with DPKG_ROOT naming it (they work inside it).
droot=$work/deb-root
mkdir -p "$droot/var/lib/dpkg/info" "$droot/var/lib/dpkg/updates" "$droot/var/log"
touch "$droot/var/lib/dpkg/status" "$droot/var/lib/dpkg/available"
dpkg --root="$droot" --force-depends --force-script-chrootless -i "$deb" >"$pkgdir/dpkg-i.log" 2>&1 ||
	{ cat "$pkgdir/dpkg-i.log" >&2; die "dpkg --root -i $(basename "$deb") failed"; }
dpkg --root="$droot" --verify zero-weak-mcount >"$pkgdir/verify.log" 2>&1 && [ ! -s "$pkgdir/verify.log" ] ||
	{ cat "$pkgdir/verify.log" >&2; die "dpkg --verify of the installed package is not clean"; }
rroot=$work/rpm-root
mkdir -p "$rroot"
rpm --root "$rroot" --initdb || die "rpm --initdb in $rroot failed"
# --noscripts: rpm runs scriptlets chrooted, and the root has no shell
# (%post would hook the root's kernel-devel trees: it has none).
rpm --root "$rroot" --nodeps --noscripts -i "$rpmfile" >"$pkgdir/rpm-i.log" 2>&1 ||
	{ cat "$pkgdir/rpm-i.log" >&2; die "rpm --root -i $(basename "$rpmfile") failed"; }
rpm --root "$rroot" -V --nodeps zero-weak-mcount >"$pkgdir/rpm-V.log" 2>&1 ||
	{ cat "$pkgdir/rpm-V.log" >&2; die "rpm -V of the installed package is not clean"; }

# make install DESTDIR=, from the tree the .deb was built in, with no cargo
# (CARGO=false: it installs what the build made), and the man
# pages render.
mi=$work/make-install
make -C "$src" install CARGO=false DESTDIR="$mi" PREFIX=/usr CARGO_TARGET_DIR="$repo/target/pkg-deb" >"$pkgdir/make-install.log" 2>&1 ||
	{ cat "$pkgdir/make-install.log" >&2; die "make install DESTDIR=$mi PREFIX=/usr failed"; }
for f in usr/bin/zero-weak-mcount usr/sbin/install-kbuild-hook usr/share/zero-weak-mcount/Makefile.snippet \
	usr/lib/rpm/brp-zero-weak-mcount usr/lib/rpm/macros.d/macros.zero-weak-mcount usr/bin/dh_zero_weak_mcount \
	usr/share/perl5/Debian/Debhelper/Sequence/zero_weak_mcount.pm usr/share/man/man1/zero-weak-mcount.1 \
	usr/share/man/man1/dh_zero_weak_mcount.1 usr/share/man/man8/install-kbuild-hook.8 \
	usr/share/{bash-completion/completions/,zsh/site-functions/_}{zero-weak-mcount,install-kbuild-hook,dh_zero_weak_mcount} \
	usr/share/fish/vendor_completions.d/{zero-weak-mcount,install-kbuild-hook,dh_zero_weak_mcount}.fish usr/share/doc/zero-weak-mcount/report-format.md; do
	[ -f "$mi/$f" ] || die "make install did not install /$f"
	# every file of make install is in both packages (man pages compressed in the .deb)
	[ -e "$droot/$f" ] || [ -e "$droot/$f.gz" ] || [ "${f#usr/share/zsh/}" != "$f" ] ||
		[ "$f" = usr/share/perl5/Debian/Debhelper/Sequence/zero_weak_mcount.pm ] || die "the .deb lacks /$f"
done
for page in "$mi"/usr/share/man/man*/*; do
	MANWIDTH=80 man -l "$page" >"$pkgdir/man.out" 2>"$pkgdir/man.err" || die "man -l $page failed"
	[ ! -s "$pkgdir/man.err" ] || { cat "$pkgdir/man.err" >&2; die "man -l $page: warnings"; }
	grep -q 'NAME' "$pkgdir/man.out" && [ -z "$(awk 'length > 80' "$pkgdir/man.out")" ] || die "man -l $page: no NAME section, or lines over 80 columns"
done
for n in zero-weak-mcount install-kbuild-hook dh_zero_weak_mcount; do [ -e "$droot/usr/share/zsh/vendor-completions/_$n" ] || die "the .deb lacks the zsh completion of $n"; done
[ -e "$droot/usr/share/perl5/Debian/Debhelper/Sequence/zero_weak_mcount.pm" ] || die "the .deb lacks the dh add-on"

tool=$droot/usr/bin/zero-weak-mcount
"$tool" --version >/dev/null 2>&1 || die "$tool --version fails"
[ "$("$tool" --version)" = "$("$rroot/usr/bin/zero-weak-mcount" --version)" ] ||
	die "the .deb and the .rpm report different builds: $("$tool" --version) / $("$rroot/usr/bin/zero-weak-mcount" --version)"
log "package: installed .deb (dpkg --verify clean) and .rpm (rpm -V clean), make install: 20 files (man -l renders every page in 80 columns)"
log "tool: $tool ($("$tool" --version))"

export ZWM_REPO=$repo ZWM_TOOL=$tool ZWM_KVER=$kver ZWM_WORK=$work ZWM_ROOT=$droot ZWM_RPM_ROOT=$rroot ZWM_DEB=$deb ZWM_HOOKED=$work/hooked
log "KVER $kver, scratch $work"
hdr=$(make_headers_copy "$work/root") || die "copying the headers of $kver failed"
export ZWM_HDR=$hdr
log "headers copy: $hdr -> $(readlink -f "$hdr/scripts/Makefile.modfinal")"

# --- suites ------------------------------------------------------------------------
passed=0
failed=0
failed_names=()
declare -A secs=()
run_suite() { # NAME[:RELEASE]
	local s=${1%%:*} t0 rc=0
	t0=$(date +%s)
	log "=== $s ==="
	case "$1" in
	*:*) bash "$here/integration/kbuild.sh" "${1#*:}" || rc=$? ;;
	*) bash "$here/integration/$s.sh" || rc=$? ;;
	esac
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
for s in $SUITES; do
	if [ "$s" = dkms ] && want dkms && [ "${failed_names[0]:-}" = kbuild ]; then
		log "=== dkms: FAIL (it needs the hooked headers from the kbuild suite, which failed)"
		failed=$((failed + 1)); failed_names+=(dkms)
	elif want "${s%%:*}" || { [ "$s" = kbuild:6.1 ] && want dkms; }; then
		run_suite "$s"
	fi
done

log "total $(($(date +%s) - start)) s"
[ "$failed" = 0 ] || log "failed: ${failed_names[*]}"
echo "integration: $passed passed, $failed failed"
[ "$failed" = 0 ]
