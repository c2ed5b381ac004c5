#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# deb: dh_zero_weak_mcount in a real dpkg-buildpackage run, as the tool's
# .deb installed it (ZWM_ROOT: the step on PATH, its sequence add-on on
# PERL5LIB).  The package (scripts/integration/deb/debian) builds
# testdata/zwm_test against the host's (unhooked) headers, installs it into
# debian/zwm-test-modules/lib/modules/KVER/updates, and gets the step from
# "Build-Depends: dh-sequence-zero-weak-mcount" alone.  The module inside the
# built .deb (dpkg-deb -x) must be processed, and DEBIAN/md5sums must match
# the processed file.  A missing tool must fail the build.
#
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_ROOT (see scripts/lib.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
suite_init deb
need_cmd dpkg-buildpackage dh dpkg-deb make gcc-12

pkgsrc=$(dirname "${BASH_SOURCE[0]}")/deb
dhstep=$ZWM_ROOT/usr/bin/dh_zero_weak_mcount
addon=$ZWM_ROOT/usr/share/perl5/Debian/Debhelper/Sequence/zero_weak_mcount.pm
[ -x "$dhstep" ] || fail "$dhstep is not executable"
[ -f "$addon" ] || fail "the .deb did not install the sequence add-on $addon"

# the step's own documentation renders (debhelper tools are POD-documented)
perl -c "$dhstep" >/dev/null 2>"$W/perlc.err" || { show "$W/perlc.err"; fail "perl -c $dhstep failed"; }

# mkpkg DIR: a fresh source tree
mkpkg() {
	rm -rf "$1"
	zwm_test_src "$1/src"
	cp -a "$pkgsrc/debian" "$1/"
}
# build NAME [VAR=VALUE...]: dpkg-buildpackage -b in $W/NAME/zwm-test-modules-1.0.
# -d: the build dependency dh-sequence-zero-weak-mcount is provided by the
# tool's .deb in the scratch root, which the host's dpkg does not know.
build() {
	local n=$1
	shift
	mkpkg "$W/$n/zwm-test-modules-1.0"
	(cd "$W/$n/zwm-test-modules-1.0" &&
		env KVER="$ZWM_KVER" ZERO_WEAK_MCOUNT="$ZWM_TOOL" DH_VERBOSE=1 \
			PATH="$ZWM_ROOT/usr/bin:$PATH" PERL5LIB="$ZWM_ROOT/usr/share/perl5" "$@" \
			dpkg-buildpackage -us -uc -b -d) >"$W/$n.log" 2>&1
}

build good || { tail -n 40 "$W/good.log" | show /dev/stdin; fail "dpkg-buildpackage failed"; }
grep -E '^\s*(dh_strip|dh_zero_weak_mcount|.*/dh_zero_weak_mcount|dh_md5sums|dh_builddeb)( |$)|zero-weak-mcount .*(zwm_test\.ko|--tree -- .*lib.modules)' "$W/good.log" >"$W/good.seq" || true
show "$W/good.seq" "build log: "
# order: dh_strip < our step (running the tool on the module) < dh_md5sums < dh_builddeb
awk '/^[ \t]*dh_strip( |$)/ && !s { s = NR } /zero-weak-mcount .*(zwm_test\.ko|--tree -- .*lib.modules)/ && !t { t = NR }
	/^[ \t]*dh_md5sums( |$)/ && !m { m = NR } /^[ \t]*dh_builddeb( |$)/ && !b { b = NR }
	END { exit !(s && t > s && m > t && b > m) }' "$W/good.log" ||
	fail "expected dh_strip, then the tool on zwm_test.ko, then dh_md5sums, then dh_builddeb in the build log"
ok "dpkg-buildpackage runs dh_strip, then dh_zero_weak_mcount (the tool on the module), then dh_md5sums, dh_builddeb"

deb=$(find "$W/good" -maxdepth 1 -name 'zwm-test-modules_*.deb' -print -quit)
[ -n "$deb" ] || fail "no .deb produced"
dpkg-deb -x "$deb" "$W/x-good"
dpkg-deb -e "$deb" "$W/x-good-control"
dpkg-deb -c "$deb" >"$W/contents.all"
grep '\.ko' "$W/contents.all" >"$W/contents" || fail "no .ko in $(basename "$deb")"
show "$W/contents" "dpkg-deb -c: "
ko=$W/x-good/lib/modules/$ZWM_KVER/updates/zwm_test.ko
expect_processed "$ko" "module in $(basename "$deb")"
want=$(md5sum "$ko" | cut -d' ' -f1)
got=$(awk -v f="lib/modules/$ZWM_KVER/updates/zwm_test.ko" '$2 == f { print $1 }' "$W/x-good-control/md5sums")
[ "$want" = "$got" ] || fail "DEBIAN/md5sums has $got for the module, the file is $want"
ok "DEBIAN/md5sums matches the processed module ($got): dh_md5sums ran after the step"
expect_unprocessed "$W/good/zwm-test-modules-1.0/src/zwm_test.ko" "the build tree's zwm_test.ko (before the step)"

rc=0; build missing ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc=$?
[ "$rc" != 0 ] || fail "dpkg-buildpackage succeeded with a missing tool"
grep -q 'nonexistent/zero-weak-mcount not found' "$W/missing.log" || { tail -n 20 "$W/missing.log" | show /dev/stdin; fail "no clear error for the missing tool"; }
grep -m1 'not found' "$W/missing.log" >"$W/missing.why"
show "$W/missing.why" "build log: "
[ -z "$(find "$W/missing" -maxdepth 1 -name '*.deb')" ] || fail "a .deb was produced despite the failure"
ok "a missing tool fails dpkg-buildpackage (exit $rc), no .deb produced"

finish
