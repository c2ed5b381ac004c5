#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# DKMS: Debian's dkms adds, builds and installs testdata/zwm_test as a DKMS
# package against the hooked headers copy (from kbuild.sh).  DKMS then
# strips (strip -g), signs (sign-file with a MOK key) and installs it; the
# installed module must be processed and its signature must cover the
# processed bytes.  Second package: the documented fallback for unhooked
# headers (MAKE[0]="make ... && zero-weak-mcount ... *.ko") against the
# host's own, unhooked headers.  Everything runs in private trees
# (--dkmstree/--sourcetree/--installtree, --no-depmod, MOK key in scratch)
# and is removed with `dkms remove` at the end.
#
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_HDR (hooked, see kbuild.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
suite_init dkms
: "${ZWM_HDR:?}"
need_cmd dkms make gcc-12 openssl

mkdir -p "$W/src" "$W/tree" "$W/modules/$ZWM_KVER"
"$ZWM_ROOT/usr/sbin/install-kbuild-hook" --status "$ZWM_HDR" >/dev/null 2>&1 ||
	fail "the headers copy $ZWM_HDR is not hooked (run the kbuild suite first)"

# private trees; signing key in scratch (dkms reads these from the
# environment when framework.conf does not set them)
D=(--dkmstree "$W/tree" --sourcetree "$W/src" --installtree "$W/modules")
export mok_signing_key=$W/mok.key mok_certificate=$W/mok.der
added=()
cleanup_dkms() {
	local v
	for v in "${added[@]}"; do
		dkms remove "${D[@]}" -m zwm-test -v "$v" --all --no-depmod >>"$W/remove.log" 2>&1 || true
	done
}
trap cleanup_dkms EXIT

# mkpkg VERSION TEMPLATE: a DKMS source tree in the private sourcetree
mkpkg() {
	local v=$1 tpl=$2 d=$W/src/zwm-test-$1
	zwm_test_src "$d"
	sed -e "s|@VERSION@|$v|" -e "s|@TOOL@|$ZWM_TOOL|" "$tpl" >"$d/dkms.conf"
}
# dk NAME ACTION VERSION [args]: run dkms, log to $W/NAME.log
dk() {
	local n=$1 a=$2 v=$3
	shift 3
	dkms "$a" "${D[@]}" -m zwm-test -v "$v" "$@" >"$W/$n.log" 2>&1
}

# --- 1. hooked headers --------------------------------------------------------------
v=1.0
mkpkg "$v" "$(dirname "${BASH_SOURCE[0]}")/dkms.conf.in"
dk add1 add "$v" || { show "$W/add1.log"; fail "dkms add failed"; }
added+=("$v")
# shellcheck disable=SC2002 # a missing make.log shows nothing, quietly
dk build1 build "$v" -k "$ZWM_KVER" --kernelsourcedir "$ZWM_HDR" || { show "$W/build1.log"; cat "$W/tree/zwm-test/$v/build/make.log" 2>/dev/null | show /dev/stdin; fail "dkms build failed"; }
show "$W/build1.log" "dkms build: "
grep -q 'Signing module' "$W/build1.log" || fail "dkms did not sign the module (no 'Signing module' line)"
mlog=$W/tree/zwm-test/$v/$ZWM_KVER/x86_64/log/make.log
[ -f "$mlog" ] || fail "no DKMS make.log at $mlog"
grep -q "ZWM \[M\] .*zwm_test.ko" "$mlog" || { show "$mlog"; fail "the DKMS build log has no 'ZWM [M]' line: the hook did not run"; }
grep 'ZWM \[M\]\|LD \[M\]' "$mlog" >"$W/make.lines"
show "$W/make.lines" "DKMS make.log: "
ok "dkms build against the hooked headers: Kbuild's 'ZWM [M]' step ran inside DKMS's make; DKMS then stripped and signed"

dk install1 install "$v" -k "$ZWM_KVER" --no-depmod || { show "$W/install1.log"; fail "dkms install failed"; }
inst=$(find "$W/modules/$ZWM_KVER" -name 'zwm_test.ko*' -type f -print -quit)
[ -n "$inst" ] || { show "$W/install1.log"; fail "no installed zwm_test.ko* under $W/modules/$ZWM_KVER"; }
dk status1 status "$v" || true
show "$W/status1.log" "dkms status: "
expect_processed "$inst" "DKMS-installed ${inst#"$W/modules/"}"
[ -s "$ELF.p7s" ] || fail "the installed module is not signed"
openssl x509 -inform DER -in "$mok_certificate" -out "$W/mok.pem" || fail "cannot read the MOK certificate"
openssl cms -verify -binary -inform DER -in "$ELF.p7s" -content "$ELF" -certfile "$W/mok.pem" -noverify -out /dev/null 2>"$W/verify.err" ||
	{ show "$W/verify.err"; fail "the DKMS signature does not verify over the processed ELF image"; }
[ "$(python3 "$GUEST/guest.py" secsize "$ELF" .debug_info)" = 0 ] || fail "DKMS did not strip -g the module"
ok "installed module: processed, stripped (no .debug_info), DKMS signature verifies over the processed bytes (openssl cms -verify)"

dk remove1 remove 1.0 --all --no-depmod || { show "$W/remove1.log"; fail "dkms remove 1.0 failed"; }
added=()
[ -z "$(find "$W/modules" -name 'zwm_test.ko*')" ] || fail "dkms remove 1.0 left the module installed"
ok "dkms remove 1.0 --all: module uninstalled"

# --- 2. fallback for unhooked headers: MAKE[0] chain ----------------------------------------
hostk=/usr/src/linux-headers-$ZWM_KVER
if "$ZWM_ROOT/usr/sbin/install-kbuild-hook" --status "$hostk" >/dev/null 2>&1; then
	fail "the host's $hostk is hooked; the fallback test needs unhooked headers"
fi
v=1.1
mkpkg "$v" "$(dirname "${BASH_SOURCE[0]}")/dkms-fallback.conf.in"
dk add2 add "$v" || { show "$W/add2.log"; fail "dkms add (fallback) failed"; }
added+=("$v")
dk build2 build "$v" -k "$ZWM_KVER" --kernelsourcedir "$hostk" || { show "$W/build2.log"; fail "dkms build (fallback) failed"; }
mlog=$W/tree/zwm-test/$v/$ZWM_KVER/x86_64/log/make.log
! grep -q 'ZWM \[M\]' "$mlog" || fail "the host headers ran the hook; they should be unhooked"
dk install2 install "$v" -k "$ZWM_KVER" --no-depmod || { show "$W/install2.log"; fail "dkms install (fallback) failed"; }
inst=$(find "$W/modules/$ZWM_KVER" -name 'zwm_test.ko*' -type f -print -quit)
[ -n "$inst" ] || { show "$W/install2.log"; fail "no installed zwm_test.ko* (fallback)"; }
grep 'MAKE\[0\]\|zero-weak-mcount' "$W/src/zwm-test-$v/dkms.conf" >"$W/fallback.conf.lines" || true
show "$W/fallback.conf.lines" "dkms.conf: "
expect_processed "$inst" "DKMS fallback (MAKE[0] chain, unhooked headers) ${inst#"$W/modules/"}"
ok "fallback: MAKE[0]=\"make ... && zero-weak-mcount ... *.ko\" processes the module before DKMS strips and signs it"

# --- 3. clean up --------------------------------------------------------------------------
for v in "${added[@]}"; do
	dk "remove-$v" remove "$v" --all --no-depmod || { show "$W/remove-$v.log"; fail "dkms remove $v failed"; }
done
added=()
[ -z "$(find "$W/modules" -name 'zwm_test.ko*')" ] || fail "dkms remove left the module installed"
[ ! -d "$W/tree/zwm-test" ] || [ -z "$(ls -A "$W/tree/zwm-test")" ] || fail "dkms remove left $W/tree/zwm-test"
ok "dkms remove --all: module uninstalled, DKMS tree empty"

finish
