#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# rpm: dist/brp-zero-weak-mcount + dist/macros.zero-weak-mcount.
#   1. the brp conventions, on a fake buildroot;
#   2. a real rpmbuild of zwm-test-kmod.spec (Fedora kernel.spec shape: the
#      brp at the head of %__modsign_install_post, then sign-file, then xz);
#      the modules inside the built .rpm must be processed, signed over the
#      processed bytes, and xz (CRC32) compressed;
#   3. the same spec with the brp placed after signing must fail the build;
#   4. NO_BRP_ZERO_WEAK_MCOUNT=true builds, unprocessed.
#
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_RPM_ROOT (see scripts/lib.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
suite_init rpm
need_cmd rpmbuild rpm2cpio cpio xz openssl make gcc-12

# As the tool's .rpm installed them.
brp=$ZWM_RPM_ROOT/usr/lib/rpm/brp-zero-weak-mcount
macros=$ZWM_RPM_ROOT/usr/lib/rpm/macros.d/macros.zero-weak-mcount
rpmtool=$ZWM_RPM_ROOT/usr/bin/zero-weak-mcount
[ -x "$brp" ] && [ -f "$macros" ] && [ -x "$rpmtool" ] || fail "the tool's .rpm did not install brp, macros and binary under $ZWM_RPM_ROOT"
ksrc=/usr/src/linux-headers-$ZWM_KVER
[ -f "$ksrc/Makefile" ] || fail "$ksrc missing"
sign_file=$(readlink -f "$ksrc/scripts/sign-file")
[ -x "$sign_file" ] || fail "no scripts/sign-file in $ksrc (linux-kbuild package)"

# an unprocessed module (built against the host's headers, hook off)
zwm_test_src "$W/mod"
make -C "$ksrc" M="$W/mod" ZERO_WEAK_MCOUNT= modules >"$W/mod.log" 2>&1 || { show "$W/mod.log"; fail "module build failed"; }
raw=$W/mod/zwm_test.ko
expect_unprocessed "$raw" "freshly built zwm_test.ko (input of the rpm tests)"

# --- 1. brp conventions ----------------------------------------------------------
br=$W/fakeroot
mkbr() {
	rm -rf "$br"
	mkdir -p "$br/lib/modules/$ZWM_KVER/extra" "$br/usr/lib/modules/$ZWM_KVER/extra"
	cp -- "$raw" "$br/lib/modules/$ZWM_KVER/extra/a.ko"
	cp -- "$raw" "$br/usr/lib/modules/$ZWM_KVER/extra/b.ko"
	ln "$br/usr/lib/modules/$ZWM_KVER/extra/b.ko" "$br/usr/lib/modules/$ZWM_KVER/extra/b-link.ko"
}
out=$(env -u RPM_BUILD_ROOT "$brp" "$rpmtool" 2>&1) && [ -z "$out" ] || fail "RPM_BUILD_ROOT unset: expected silent exit 0, got: $out"
out=$(RPM_BUILD_ROOT=/ "$brp" /bin/false 2>&1) && [ -z "$out" ] || fail "RPM_BUILD_ROOT=/: expected silent exit 0, got: $out"
ok "RPM_BUILD_ROOT unset or '/': exits 0 at once, silently (the tool is not even looked at)"

mkbr
s=$(sha "$raw")
out=$(RPM_BUILD_ROOT=$br NO_BRP_ZERO_WEAK_MCOUNT=true "$brp" "$rpmtool" 2>&1) || fail "opt-out failed: $out"
[ "$(sha "$br/lib/modules/$ZWM_KVER/extra/a.ko")" = "$s" ] || fail "opt-out still changed a module"
ok "NO_BRP_ZERO_WEAK_MCOUNT=true: exit 0, modules untouched, says: $out"

mkdir -p "$W/empty"
out=$(RPM_BUILD_ROOT=$W/empty "$brp" "$rpmtool" 2>&1) && [ -z "$out" ] || fail "buildroot without modules: $out"
ok "a buildroot without lib/modules: exit 0, silent"

RPM_BUILD_ROOT=$br RPM_BUILD_NCPUS=2 "$brp" "$rpmtool" --kconfig "$ksrc/include/config/auto.conf" 2>"$W/brp1.err" ||
	{ show "$W/brp1.err"; fail "brp on a fake buildroot failed"; }
for f in lib/modules/$ZWM_KVER/extra/a.ko usr/lib/modules/$ZWM_KVER/extra/b.ko; do
	expect_processed "$br/$f" "brp (RPM_BUILD_NCPUS=2): $f"
done
[ "$(stat -c %h "$br/usr/lib/modules/$ZWM_KVER/extra/b-link.ko")" = 2 ] || fail "the hard link was broken"
cmp -s "$br/lib/modules/$ZWM_KVER/extra/a.ko" "$br/usr/lib/modules/$ZWM_KVER/extra/b.ko" || fail "same input, different output"
cp -- "$br/lib/modules/$ZWM_KVER/extra/a.ko" "$W/ncpus2.ko"
mkbr
RPM_BUILD_ROOT=$br RPM_BUILD_NCPUS=1 "$brp" "$rpmtool" --kconfig "$ksrc/include/config/auto.conf" 2>/dev/null || fail "brp with RPM_BUILD_NCPUS=1 failed"
cmp -s "$br/lib/modules/$ZWM_KVER/extra/a.ko" "$W/ncpus2.ko" || fail "the result depends on RPM_BUILD_NCPUS"
ok "walks lib/modules and usr/lib/modules; hard-linked module kept linked; RPM_BUILD_NCPUS=1 and =2 give identical bytes"

mkbr
xz --check=crc32 -k "$br/lib/modules/$ZWM_KVER/extra/a.ko"
rc=0; RPM_BUILD_ROOT=$br "$brp" /bin/false 2>"$W/brp-fail.err" || rc=$?
[ "$rc" != 0 ] || fail "a failing tool did not make the brp fail"
grep -q 'compressed module left unchanged' "$W/brp-fail.err" || fail "no warning about the .ko.xz"
show "$W/brp-fail.err" "stderr: "
ok "a failing tool makes the brp exit $rc; a .ko.xz in the buildroot is reported as not processed"

# With the real tool the .ko.xz gets one warning, the brp's: the tool is
# given the .ko files by name and never sees it.
rm -f "$br/lib/modules/$ZWM_KVER/extra/a.ko"
RPM_BUILD_ROOT=$br "$brp" "$rpmtool" 2>"$W/brp-xz.err" || { show "$W/brp-xz.err"; fail "brp with a .ko.xz failed"; }
show "$W/brp-xz.err" "stderr: "
[ "$(grep -c 'compressed' "$W/brp-xz.err")" = 1 ] &&
	grep -q "brp-zero-weak-mcount: warning: compressed module left unchanged: run brp-zero-weak-mcount before compression: lib/modules/$ZWM_KVER/extra/a.ko.xz" "$W/brp-xz.err" ||
	fail "expected one warning, the brp's, naming a.ko.xz"
out=$(env -u RPM_BUILD_ROOT "$brp" --help 2>&1) || fail "brp --help failed"
grep -q '^Usage' <<<"$out" || fail "brp --help printed no usage: $out"
ok "a .ko.xz gets one warning (process before compression); brp --help prints its usage"

# --- 2. rpmbuild -----------------------------------------------------------------
# A private _rpmconfigdir (rpm's own files + our brp), as if the brp were
# installed in /usr/lib/rpm; the macro file is loaded with the brp's
# path moved there.
confdir=$(rpm --eval '%{_rpmconfigdir}')
mkdir -p "$W/rpmconfig"
for f in "$confdir"/*; do ln -s "$f" "$W/rpmconfig/"; done
cp -- "$brp" "$W/rpmconfig/brp-zero-weak-mcount"
# The installed macro names the brp where the package put it
# (/usr/lib/rpm, inside ZWM_RPM_ROOT here): point it at the private copy.
grep -q "^%__brp_zero_weak_mcount $confdir/brp-zero-weak-mcount " "$macros" ||
	fail "$macros does not name $confdir/brp-zero-weak-mcount: $(grep __brp_zero_weak_mcount "$macros")"
sed "s|^%__brp_zero_weak_mcount $confdir/|%__brp_zero_weak_mcount $W/rpmconfig/|" "$macros" >"$W/macros"
macros=$W/macros
openssl req -new -x509 -nodes -days 36500 -subj "/CN=zwm rpm test signing key" -newkey rsa:2048 \
	-keyout "$W/signing_key.pem" -outform PEM -out "$W/signing_cert.pem" >/dev/null 2>&1 || fail "openssl req failed"

# rpmb NAME [rpmbuild args]: build the spec in a private _topdir
rpmb() {
	local n=$1
	shift
	rm -rf "$W/top-$n"
	mkdir -p "$W/top-$n"
	rpmbuild -bb --nodeps --load "$macros" \
		--define "_topdir $W/top-$n" \
		--define "_rpmconfigdir $W/rpmconfig" \
		--define "__zero_weak_mcount $rpmtool" \
		--define "_zero_weak_mcount_opts --kconfig $ksrc/include/config/auto.conf" \
		--define "kver $ZWM_KVER" --define "ksrc $ksrc" \
		--define "zwm_src $ZWM_REPO/testdata/zwm_test" \
		--define "sign_file $sign_file" --define "signkey $W/signing_key.pem" \
		--define "signcert $W/signing_cert.pem" \
		"$@" "$(dirname "${BASH_SOURCE[0]}")/zwm-test-kmod.spec" >"$W/$n.log" 2>&1
}
rpmb good || { show "$W/good.log"; fail "rpmbuild failed"; }
grep -m3 -E 'brp-zero-weak-mcount' "$W/good.log" >"$W/good.brp" || true
[ -s "$W/good.brp" ] || fail "the build log does not show the brp running"
show "$W/good.brp" "rpmbuild log: "
rpmfile=$(find "$W/top-good/RPMS" -name '*.rpm' -print -quit)
[ -n "$rpmfile" ] || fail "no .rpm produced"
mkdir -p "$W/x-good"
(cd "$W/x-good" && rpm2cpio "$rpmfile" | cpio -idm --quiet) || fail "rpm2cpio | cpio failed"
n=0
while IFS= read -r f; do
	expect_processed "$f" "module in $(basename "$rpmfile"): ${f#"$W/x-good"}"
	# the signature must cover the processed bytes
	openssl cms -verify -binary -inform DER -in "$ELF.p7s" -content "$ELF" -certfile "$W/signing_cert.pem" \
		-noverify -out /dev/null 2>"$W/verify.err" || { show "$W/verify.err"; fail "signature of ${f#"$W/x-good"} does not verify over its (processed) ELF image"; }
	n=$((n + 1))
done < <(find "$W/x-good" -name '*.ko*' -type f | LC_ALL=C sort)
[ "$n" = 2 ] || fail "expected 2 modules in the .rpm, found $n"
ok "rpmbuild: both modules in the .rpm (lib/modules, usr/lib/modules) are processed, xz CRC32, signed; 'openssl cms -verify' of the signature over the processed ELF image succeeds"

# --- 3. misplaced after signing: the build must fail --------------------------------
rc=0; rpmb late --define "zwm_late 1" || rc=$?
[ "$rc" != 0 ] || fail "rpmbuild with the brp after signing succeeded"
grep -i 'signed' "$W/late.log" | grep -m2 -i 'zero-weak-mcount' >"$W/late.why" || true
[ -s "$W/late.why" ] || { tail -n 20 "$W/late.log" | show /dev/stdin; fail "the failed build does not say the module was signed"; }
show "$W/late.why" "rpmbuild log: "
grep -q 'error: Bad exit status' "$W/late.log" || fail "rpmbuild did not report the failed scriptlet"
ok "brp after sign-file: the tool refuses the signed modules and rpmbuild fails (exit $rc, 'Bad exit status from ... %install')"

# --- 4. opt-out -----------------------------------------------------------------------
rc=0; NO_BRP_ZERO_WEAK_MCOUNT=true rpmb optout || rc=$?
[ "$rc" = 0 ] || { tail -n 20 "$W/optout.log" | show /dev/stdin; fail "opt-out build failed"; }
grep -q 'NO_BRP_ZERO_WEAK_MCOUNT is set' "$W/optout.log" || fail "opt-out not reported in the build log"
rpmfile=$(find "$W/top-optout/RPMS" -name '*.rpm' -print -quit)
mkdir -p "$W/x-optout"
(cd "$W/x-optout" && rpm2cpio "$rpmfile" | cpio -idm --quiet)
expect_unprocessed "$W/x-optout/lib/modules/$ZWM_KVER/extra/zwm_test.ko.xz" "NO_BRP_ZERO_WEAK_MCOUNT=true build"
ok "NO_BRP_ZERO_WEAK_MCOUNT=true: the build succeeds, says it skipped, module unprocessed"

finish
